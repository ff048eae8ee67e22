"""python -m aiter info"""
import aiter


def run(kernels=False):
    info = aiter.library_info()
    if kernels:
        from .kernels import run as list_kernels
        return list_kernels(info["kernel_dir"])
    print(f"libaiter {info['version']}")
    print(f"  library:      {info['library_path']}")
    print(f"  build:        {info['build_config']}")
    print(f"  backends:     {', '.join(info['backends'])}")
    print(f"  CPU threads:  {info['cpu_threads']} (AITER_NUM_THREADS)")
    print(f"  CPU kernels:  {info['cpu_isa']} (AITER_CPU_ISA caps the level)")
    print(f"  CPU libs:     {', '.join(info['cpu_libraries']) or 'none found (OpenBLAS: libopenblas.so.0, oneDNN 2.x: libdnnl.so.2)'}")
    targets = info["gpu_targets"]
    print(f"  GPU targets:  {', '.join(targets) if targets else 'none built'}")
    print(f"  code objects: {info['kernel_dir'] + '/manifest.tsv' if targets else 'none (CPU-only build)'}")
    for line in _manifest_summary(info["kernel_dir"]):
        print(f"                {line}")
    sources = aiter.tuning.config_sources()
    print(f"  tuned tables: {sources[0] if sources else 'none'}")
    for line in sources[1:]:
        print(f"                {line}")
    print(f"  devices:      {', '.join(_devices())}")
    return 0


def _manifest_summary(folder):
    """One line per target: how many kernels of which ops."""
    import collections
    import os
    path = os.path.join(folder, "manifest.tsv")
    if not folder or not os.path.exists(path):
        return []
    ops = collections.defaultdict(set)
    count = collections.Counter()
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#"):
                target, op = line.split("\t")[:2]
                ops[target].add(op)
                count[target] += 1
    return [f"{t}: {count[t]} kernels ({', '.join(sorted(ops[t]))})" for t in sorted(ops)]


def _devices():
    """The CPU, and the GPUs PyTorch sees, if it is installed (aiter does not need it).
    PyTorch on ROCm calls AMD GPUs "cuda" devices too."""
    found = ["cpu"]
    try:
        import torch
        if torch.cuda.is_available():
            for i in range(torch.cuda.device_count()):
                p = torch.cuda.get_device_properties(i)
                if torch.version.hip:
                    arch, units = getattr(p, "gcnArchName", "AMD"), "CUs"
                else:
                    arch, units = f"sm_{p.major}{p.minor}", "SMs"
                found.append(f"cuda:{i} {p.name} ({arch}, {p.multi_processor_count} {units})")
            return found
    except ImportError:
        pass
    return found + ["(no CUDA GPU seen through PyTorch)"]
