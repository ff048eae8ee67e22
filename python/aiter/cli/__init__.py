"""python -m aiter COMMAND: info, demo."""
import argparse


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m aiter", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("info", help="version, backends, devices, GPU targets and code objects")
    demo = commands.add_parser("demo", help="a Llama-style decoder layer, verified against NumPy float64")
    demo.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default=None,
                      help="activation/weight dtype (default: bfloat16 if ml_dtypes is installed, else float32)")
    demo.add_argument("--decode-steps", type=int, default=4)
    demo.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "info":
        from .info import run
        return run()
    from .demo import run
    return run(dtype=args.dtype, decode_steps=args.decode_steps, seed=args.seed)
