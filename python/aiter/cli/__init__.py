"""python -m aiter COMMAND: info, demo, bench, tune."""
import argparse

from ..errors import AiterError


def _parser():
    from .gemm_problems import OPS, add_problem_options
    parser = argparse.ArgumentParser(prog="python -m aiter", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    info = commands.add_parser("info", help="version, backends, devices, GPU targets, code objects and tuned tables")
    info.add_argument("--kernels", action="store_true",
                      help="every code object's kernels with their resources (AMD: VGPRs, AGPRs, SGPRs, spills, "
                           "LDS, wavefront, matrix instructions; NVIDIA: registers, shared memory)")
    demo = commands.add_parser("demo", help="a Llama-style decoder layer, verified against NumPy float64")
    demo.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default=None,
                      help="activation/weight dtype (default: bfloat16 if ml_dtypes is installed, else float32)")
    demo.add_argument("--decode-steps", type=int, default=4)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                      help="where the layer runs (default: cuda when torch sees a CUDA GPU, else cpu)")
    ops = ", ".join(OPS)
    bench = commands.add_parser("bench", help="time GEMM shapes with the kernel variants selected now")
    bench.add_argument("--gemm", action="append", required=True, metavar="OP[,OP]", help=f"{ops} or all")
    add_problem_options(bench)
    tune = commands.add_parser("tune", help="tune GEMM and fused MoE kernel selection: bench, try every variant, "
                                            "write a tuned CSV, bench again")
    tune.add_argument("--op", action="append", metavar="OP[,OP]", help=f"{ops} or all (default all)")
    add_problem_options(tune)
    tune.add_argument("--out", default="aiter_tuned_gemm.csv",
                      help="the tuned CSV to write; rows of other shapes already in it are kept")
    tune.add_argument("--any-compute-units", action="store_true",
                      help="write compute_units 0: the rows then apply to every GPU of the target, whatever its "
                           "multiprocessor count (for tables to ship)")
    tune.add_argument("--log-dir", default="tune_logs")
    return parser


def main(argv):
    from .build_flags import FLAGS, run as print_flags
    if argv and all(flag in FLAGS for flag in argv):  # python -m aiter --cflags --libs
        return print_flags(argv)
    args = _parser().parse_args(argv)
    if args.command == "info":
        from .info import run
        return run(kernels=args.kernels)
    if args.command == "demo":
        from .demo import run
        return run(dtype=args.dtype, decode_steps=args.decode_steps, seed=args.seed, device=args.device)
    from . import bench, tune
    try:
        return (bench if args.command == "bench" else tune).run(args)
    except (AiterError, OSError) as e:
        print(f"python -m aiter {args.command}: {e}")
        return 2
