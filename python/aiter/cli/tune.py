"""python -m aiter tune: for each GEMM or fused MoE op, benchmark the current selection
(bench_before), time every kernel variant that computes the right result
(tuning), write the winners to the tuned CSV, benchmark again with that table
loaded (bench_after) and print the two side by side.

Logs: <log-dir>/<op>_{bench_before,tuning,bench_after}_<timestamp>.log."""
import contextlib
import os
import time
from typing import NamedTuple

from .. import tuning
from ..errors import AiterError, UnsupportedShapeError
from .arrays import arrays_for, resolve_device
from .bench import bench_problems, default_iters, format_table, tflops
from .gemm_cases import make_case, op_function
from .gemm_problems import SHORT, parse_ops, problems_for
from .tuned_csv import merge_rows


class Winner(NamedTuple):
    variant: str
    us: float
    error: float


def _time_variant(case, arrays, variant, reference, iters, log, best_us=None):
    """Microseconds of `variant` on `case`, or None (logged) when it cannot run
    the shape, fails, or computes a result outside the tolerance."""
    p = case.problem
    tolerance = case.tolerance
    with tuning.force_variant(p.op, variant):
        case.poison()
        try:
            case.run()
        except UnsupportedShapeError as e:
            log.write(f"  {variant}: skipped, cannot run this shape ({e})\n")
            return None, None
        except AiterError as e:
            log.write(f"  {variant}: skipped, failed ({e})\n")
            return None, None
        error = case.error(reference)
        if error > tolerance:
            log.write(f"  {variant}: REJECTED, error {error:.3g} > tolerance {tolerance:g} "
                      f"(never selected)\n")
            return None, error
        try:
            if best_us is not None:  # a candidate far slower than the best is not worth timing fully
                once = arrays.time_us(case.run_cold, 1, warmup=0)
                if once > 4 * best_us:
                    log.write(f"  {variant}: {once:.2f} us once, over 4x the best ({best_us:.2f} us); "
                              f"not timed further\n")
                    return None, error
            us = arrays.time_us(case.run_cold, iters)
        except AiterError as e:  # ran once, but not on the timing's inputs or inside its CUDA graph
            log.write(f"  {variant}: skipped, failed while timed ({e})\n")
            return None, None
    log.write(f"  {variant}: {us:.2f} us {tflops(p, us):.4g} TFLOP/s error {error:.3g}\n")
    return us, error


def tune_problem(problem, arrays, variants, iters, log):
    """The fastest variant whose result is within tolerance, or None."""
    log.write(f"{problem.label()}:\n")
    case = make_case(problem, arrays)
    reference = case.reference()
    best = None
    for variant in variants:
        us, error = _time_variant(case, arrays, variant, reference, iters, log, best.us if best else None)
        if us is not None and (best is None or us < best.us):
            best = Winner(variant, us, error)
    log.write(f"  selected: {best.variant}\n" if best else "  selected: none (no variant passed; no row)\n")
    log.flush()
    return best


def tuned_row(problem, winner, target, compute_units):
    return {"op": problem.op, "target": target, "compute_units": compute_units, "batch": problem.batch,
            "m": tuning.m_bucket(problem.m), "n": problem.n, "k": problem.k, "a_dtype": problem.a_dtype,
            "out_dtype": problem.out_dtype, "topk": getattr(problem, "topk", 0), "variant": winner.variant,
            "us": f"{winner.us:.3f}",
            "tflops": f"{tflops(problem, winner.us):.4g}", "error": f"{winner.error:.3g}"}


@contextlib.contextmanager
def tables_with(path):
    """The library's tables with `path` read last (its rows win), restored after."""
    old = os.environ.get("AITER_CONFIG_PATH")
    os.environ["AITER_CONFIG_PATH"] = (old + ":" if old else "") + os.path.abspath(path)
    tuning.reload()
    try:
        yield
    finally:
        if old is None:
            del os.environ["AITER_CONFIG_PATH"]
        else:
            os.environ["AITER_CONFIG_PATH"] = old
        tuning.reload()


def _speedup(before, after):
    return f"{before.us / after.us:.2f}x" if before.us and after.us else "-"


def _chosen(m):
    return f"{m.variant} ({m.how})" if m.variant else "failed"


def print_comparison(op, problems, before, after):
    rows = [(p.label(), _chosen(b), f"{b.us:.2f}" if b.us else "-", _chosen(a), f"{a.us:.2f}" if a.us else "-",
             _speedup(b, a)) for p, b, a in zip(problems, before, after)]
    print(f"{SHORT[op]}: before and after tuning")
    print(format_table(("shape", "before", "us", "after", "us", "speed-up"), rows))


def _log_path(log_dir, op, phase, stamp):
    return os.path.join(log_dir, f"{SHORT[op]}_{phase}_{stamp}.log")


def tune_op(op, problems, arrays, device, iters, args, stamp):
    out, log_dir = args.out, args.log_dir
    target, compute_units = tuning.device_key(device)
    variants = tuning.variants(op, device)
    header = f"# {op} on {device} (target {target}, {compute_units} compute units), variants: " \
             f"{', '.join(variants)}; {len(problems)} shapes, {iters} timed calls each\n"
    print(f"{SHORT[op]}: {len(problems)} shapes, {len(variants)} variants ({', '.join(variants)})", flush=True)
    with open(_log_path(log_dir, op, "bench_before", stamp), "w", encoding="utf-8") as log:
        log.write(header)
        before = bench_problems(problems, arrays, iters, log)
    with open(_log_path(log_dir, op, "tuning", stamp), "w", encoding="utf-8") as log:
        log.write(header)
        winners = [tune_problem(p, arrays, variants, iters, log) for p in problems]
    row_units = 0 if args.any_compute_units else compute_units
    rows = [tuned_row(p, w, target, row_units) for p, w in zip(problems, winners) if w is not None]
    merge_rows(out, rows)
    print(f"{SHORT[op]}: {len(rows)} rows written to {out}", flush=True)
    with tables_with(out), open(_log_path(log_dir, op, "bench_after", stamp), "w", encoding="utf-8") as log:
        log.write(header + f"# tables: {'; '.join(tuning.config_sources())}\n")
        after = bench_problems(problems, arrays, iters, log)
        for p, w, a in zip(problems, winners, after):
            if w is not None and (a.variant, a.how) != (w.variant, "tuned"):
                log.write(f"WARNING {p.label()}: the tuned row ({w.variant}) was not used; ran {_chosen(a)}\n")
    print_comparison(op, problems, before, after)


def run(args):
    device = resolve_device(args.device)
    arrays = arrays_for(device)
    iters = args.iters or default_iters(device)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    os.makedirs(args.log_dir, exist_ok=True)
    for op in parse_ops(args.op):
        if op_function(op) is None:
            print(f"{SHORT[op]}: skipped (this aiter has no {op})")
            continue
        if not tuning.variants(op, device):
            print(f"{SHORT[op]}: skipped (no {device} variants)")
            continue
        problems = problems_for(op, args)
        if not problems:
            print(f"{SHORT[op]}: no shapes to tune")
            continue
        tune_op(op, problems, arrays, device, iters, args, stamp)
    print(f"logs in {args.log_dir}/; to use the table: AITER_CONFIG_PATH={os.path.abspath(args.out)} "
          "(or copy it to ~/.config/aiter/configs/)")
    return 0
