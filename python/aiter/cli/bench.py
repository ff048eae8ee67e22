"""python -m aiter bench --gemm OP: times each shape with the kernel variant
the library selects now (forced > tuned table row > heuristic)."""
from typing import NamedTuple

from ..errors import AiterError
from ..tuning import last_variant
from .arrays import arrays_for, resolve_device
from .gemm_cases import make_case, op_function
from .gemm_problems import SHORT, parse_ops, problems_for


class Measurement(NamedTuple):
    variant: str  # None when the call failed
    how: str  # heuristic, tuned or forced
    us: float
    note: str = ""  # why it failed


def tflops(problem, us):
    return problem.flops() / (us * 1e-6) / 1e12 if us else 0.0


def measure_selection(case, arrays, iters):
    """Times the op as the library selects its variant, and says which one ran."""
    try:
        us = arrays.time_us(case.run_cold, iters)
    except AiterError as e:
        return Measurement(None, "", None, str(e))
    last = last_variant()
    return Measurement(last.variant, last.how.name, us)


def bench_problems(problems, arrays, iters, log=None):
    """A Measurement per problem; each also written to `log` (a file) when given."""
    results = []
    for p in problems:
        m = measure_selection(make_case(p, arrays), arrays, iters)
        results.append(m)
        if log is not None:
            what = f"{m.variant} ({m.how}) {m.us:.2f} us {tflops(p, m.us):.4g} TFLOP/s" if m.variant else \
                f"failed: {m.note}"
            log.write(f"{p.label()}: {what}\n")
            log.flush()
    return results


def format_table(header, rows):
    """Rows of strings as aligned columns."""
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)


def _us(value):
    return f"{value:.2f}" if value is not None else "-"


def print_bench(op, problems, measurements):
    rows = [(p.label(), f"{m.variant} ({m.how})" if m.variant else f"failed: {m.note}", _us(m.us),
             f"{tflops(p, m.us):.4g}" if m.us else "-") for p, m in zip(problems, measurements)]
    print(f"{SHORT[op]}:")
    print(format_table(("shape", "variant (how chosen)", "us", "TFLOP/s"), rows))


def default_iters(device):
    return 10 if device == "cpu" else 100


def run(args):
    device = resolve_device(args.device)
    arrays = arrays_for(device)
    iters = args.iters or default_iters(device)
    for op in parse_ops(args.gemm):
        if op_function(op) is None:
            print(f"{SHORT[op]}: skipped (this aiter has no {op})")
            continue
        problems = problems_for(op, args)
        if not problems:
            print(f"{SHORT[op]}: no shapes to run")
            continue
        print_bench(op, problems, bench_problems(problems, arrays, iters))
    return 0
