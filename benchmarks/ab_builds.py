#!/usr/bin/env python3
"""Two or more builds of libaiter timed by one benchmark, in turns.

usage: python3 benchmarks/ab_builds.py --build main=build-main --build try=build-try
           [--rounds 2] [--metric ours_ms] -- python3 benchmarks/bench_attention.py --prefill 4,32,32,4096,128

Runs the benchmark command once per build per round (main, try, main, try,
...), each run with AITER_LIBRARY set to that build's libaiter.so.0 (its
kernels/ beside it) and `--json FILE` appended, then prints each case's metric
per run and every build's median over the first build's.  Alternating on one
machine is what makes a few-percent difference readable: clocks, power and the
peers drift between calls more than that.  The benchmark must write a JSON list
of rows, or an object with "rows", each with "case" (and "op" where present).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def build_arg(text):
    name, sep, path = text.partition("=")
    lib = os.path.join(path, "libaiter.so.0")
    if not sep or not name or not os.path.isfile(lib):
        raise argparse.ArgumentTypeError(f"expected NAME=BUILD_DIR with BUILD_DIR/libaiter.so.0, got {text!r}")
    return name, os.path.abspath(lib)


def run_once(command, lib):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        env = dict(os.environ, AITER_LIBRARY=lib)
        subprocess.run(command + ["--json", out], env=env, check=True)
        with open(out) as f:
            data = json.load(f)
    return data["rows"] if isinstance(data, dict) else data


def by_case(rows, metric):
    """{case label: metric} for the rows that have the metric."""
    return {f"{r.get('op', '')} {r['case']}".strip(): r[metric] for r in rows if r.get(metric) is not None}


def report(names, times):
    """times[name] is a list of {case: value}, one a round."""
    first = names[0]
    cases = [c for c in times[first][0] if all(c in t for n in names for t in times[n])]
    width = max(len(c) for c in cases) if cases else 4
    print(f"\n{'case':{width}}  " + "  ".join(f"{n} (each round)".ljust(24) for n in names) +
          "  " + "  ".join(f"{n}/{first}" for n in names[1:]))
    for c in cases:
        cols = ["/".join(f"{t[c]:.4g}" for t in times[n]).ljust(24) for n in names]
        base = statistics.median(t[c] for t in times[first])
        ratios = [f"{statistics.median(t[c] for t in times[n]) / base:.3f}".ljust(len(n) + len(first) + 1)
                  for n in names[1:]]
        print(f"{c:{width}}  " + "  ".join(cols) + "  " + "  ".join(ratios))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", action="append", type=build_arg, required=True, metavar="NAME=BUILD_DIR")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--metric", default="ours_ms", help="the row field compared (default ours_ms)")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    names = [n for n, _ in args.build]
    if not command or len(names) < 2 or len(set(names)) != len(names) or args.rounds < 1:
        ap.error("give two or more builds with distinct names, rounds >= 1, and a command after --")
    times = {n: [] for n in names}
    for r in range(args.rounds):
        for name, lib in args.build:
            print(f"== round {r + 1}, {name} ({lib})", flush=True)
            times[name].append(by_case(run_once(command, lib), args.metric))
    report(names, times)


if __name__ == "__main__":
    sys.exit(main())
