"""python -m aiter info"""
import aiter


def run():
    info = aiter.library_info()
    print(f"libaiter {info['version']}")
    print(f"  library:      {info['library_path']}")
    print(f"  build:        {info['build_config']}")
    print(f"  backends:     {', '.join(info['backends'])}")
    print(f"  CPU threads:  {info['cpu_threads']} (AITER_NUM_THREADS)")
    targets = info["gpu_targets"]
    print(f"  GPU targets:  {', '.join(targets) if targets else 'none built'}")
    print(f"  code objects: {'see GPU targets' if targets else 'none (CPU-only build)'}")
    gpu = [b for b in info["backends"] if b != "cpu"]
    print(f"  devices:      cpu{'' if gpu else ' (no GPU backend in this build)'}")
    return 0
