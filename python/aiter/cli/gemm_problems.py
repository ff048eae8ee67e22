"""Which GEMM (and fused MoE) problems a tuning or benchmark run covers: the
shapes of an untuned CSV (written by libaiter with AITER_LOG_UNTUNED=1), or
model presets crossed with a list of M (MoE: tokens) and dtypes."""
import csv

from ..dtypes import canonical
from ..errors import InvalidArgumentError
from ..tuning import m_bucket
from . import moe_cases
from .gemm_cases import SPECS, Problem

# Short names (the CLI's) -> the library's op names.
OPS = {
    "a16w16": "gemm_a16w16",
    "a8w8": "gemm_a8w8",
    "a8w8_blockscale": "gemm_a8w8_blockscale",
    "batched_a16w16": "batched_gemm_a16w16",
    "batched_a8w8": "batched_gemm_a8w8",
    **{op: op for op in moe_cases.OPS},  # fused_moe, fused_moe_fp8, fused_moe_fp8_blockscale
}
SHORT = {v: k for k, v in OPS.items()}

# (N, K) of the linear layers of each model.
MODELS = {
    "llama3-8b": [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)],
    "llama3-70b": [(10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)],
    "deepseek-v3": [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)],
}
DEFAULT_MODEL = {"gemm_a8w8_blockscale": "deepseek-v3"}  # others: llama3-8b
DEFAULT_M = [1 << i for i in range(14)]  # 1, 2, 4, ..., 8192

_DTYPE_ALIASES = {"fp8": "float8_e4m3fn", "fp8_fnuz": "float8_e4m3fnuz", "e4m3": "float8_e4m3fn",
                  "e5m2": "float8_e5m2"}


def parse_ops(values):
    """--op values ("a16w16", "gemm_a16w16", "all", comma lists) -> library op names, in order."""
    names = []
    for value in values or ["all"]:
        for item in value.split(","):
            item = item.strip()
            if item == "all":
                names += [n for n in OPS.values() if n not in names]
            elif item in OPS or item in SHORT:
                name = OPS.get(item, item)
                names += [] if name in names else [name]
            elif item:
                raise InvalidArgumentError(f"--op: unknown op {item!r} (expected {', '.join(OPS)} or all)")
    return names


def parse_ints(text, what):
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InvalidArgumentError(f"{what}: expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise InvalidArgumentError(f"{what}: expected positive integers, got {text!r}")
    return values


def parse_dtypes(values):
    """--dtype values (bf16, fp16, fp32, fp8, int8 or full names; comma lists) -> names."""
    names = []
    for value in values or []:
        for item in value.split(","):
            if item.strip():
                names.append(canonical(_DTYPE_ALIASES.get(item.strip(), item.strip())))
    return names


def _default_dtype(op):
    return "bfloat16" if "a16w16" in op else "float8_e4m3fn"


def preset_problems(op, models, ms, dtypes, out_dtype=None, batch=1):
    """Every (N, K) of `models` x every M x the dtypes `op` takes (its default if
    none is given); an op that takes none of the given dtypes gets no problems."""
    a_dtypes = [d for d in dtypes if d in SPECS[op].a_dtypes] if dtypes else [_default_dtype(op)]
    problems = []
    for model in models or [DEFAULT_MODEL.get(op, "llama3-8b")]:
        if model not in MODELS:
            raise InvalidArgumentError(f"--model: unknown model {model!r} (expected {', '.join(MODELS)})")
        for a_dtype in a_dtypes:
            out = out_dtype or (a_dtype if "a16w16" in op else "bfloat16")
            b = batch if op.startswith("batched") else 1
            problems += [Problem(op, b, m, n, k, a_dtype, out) for n, k in MODELS[model] for m in ms]
    return problems


def _data_lines(f):
    """(line number, text) of the lines that are not comments or blank."""
    for number, line in enumerate(f, 1):
        if line.strip() and not line.lstrip().startswith("#"):
            yield number, line


def untuned_problems(path, ops):
    """The problems of `ops` listed in an untuned CSV, one per table key: when
    several rows fall in one M bucket, the largest M stands for it."""
    with open(path, encoding="utf-8") as f:
        lines = list(_data_lines(f))
    if not lines:
        return []
    rows = csv.DictReader([text for _, text in lines])
    needed = {"op", "batch", "m", "n", "k", "a_dtype", "out_dtype"}
    missing = needed - set(rows.fieldnames or [])
    if missing:
        raise InvalidArgumentError(f"{path}:{lines[0][0]}: the header lacks {', '.join(sorted(missing))}")
    by_key = {}
    for (number, _), row in zip(lines[1:], rows):
        if row["op"] not in ops:
            continue
        try:
            if moe_cases.is_moe(row["op"]):
                p = moe_cases.problem_from_row(dict(row, a_dtype=canonical(row["a_dtype"]),
                                                    out_dtype=canonical(row["out_dtype"])))
            else:
                p = Problem(row["op"], int(row["batch"]), int(row["m"]), int(row["n"]), int(row["k"]),
                            canonical(row["a_dtype"]), canonical(row["out_dtype"]))
        except (TypeError, ValueError, InvalidArgumentError) as e:
            raise InvalidArgumentError(f"{path}:{number}: {e}") from None
        key = (p.op, p.batch, m_bucket(p.m), p.n, p.k, p.a_dtype, p.out_dtype, getattr(p, "topk", 0))
        if key not in by_key or by_key[key].m < p.m:
            by_key[key] = p
    return list(by_key.values())


def add_problem_options(parser):
    """The shape options shared by `tune` and `bench`."""
    parser.add_argument("--untuned", metavar="FILE",
                        help="the shapes of an untuned CSV (AITER_LOG_UNTUNED=1 writes one)")
    parser.add_argument("--model", action="append", metavar="NAME[,NAME]",
                        help=f"shape presets: {', '.join(MODELS)} (default: deepseek-v3 for a8w8_blockscale, "
                             f"llama3-8b for the others); fused MoE: {', '.join(moe_cases.MODELS)} (default "
                             "qwen3-30b-a3b, deepseek-v3 for fused_moe_fp8_blockscale)")
    parser.add_argument("--m", default=None, metavar="M[,M]",
                        help="M values (fused MoE: tokens) for --model (default 1,2,4,...,8192)")
    parser.add_argument("--dtype", action="append", metavar="DTYPE[,DTYPE]",
                        help="input dtypes for --model: bf16, fp16, fp32 (16-bit ops), fp8, int8 or full names "
                             "such as float8_e4m3fnuz (8-bit ops); default bf16 and fp8")
    parser.add_argument("--out-dtype", default=None, help="output dtype for --model (default: the input's, "
                                                          "bfloat16 for 8-bit inputs)")
    parser.add_argument("--batch", type=int, default=1, help="batch count of the batched ops for --model")
    parser.add_argument("--device", default="auto", help="cpu, cuda or cuda:N (default: cuda when usable)")
    parser.add_argument("--iters", type=int, default=None, help="timed calls per measurement "
                                                                 "(default 100 on a GPU, 10 on the CPU)")


def problems_for(op, args):
    """The problems of `op` that the command-line options name."""
    if args.untuned:
        if args.model or args.m or args.dtype:
            raise InvalidArgumentError("--untuned takes its shapes from the file: leave out --model, --m, --dtype")
        return untuned_problems(args.untuned, [op])
    models = [m.strip() for value in args.model or [] for m in value.split(",") if m.strip()]
    ms = parse_ints(args.m, "--m") if args.m else DEFAULT_M
    out_dtype = canonical(args.out_dtype) if args.out_dtype else None
    if moe_cases.is_moe(op):
        return moe_cases.preset_problems(op, models, ms, parse_dtypes(args.dtype), out_dtype)
    return preset_problems(op, models, ms, parse_dtypes(args.dtype), out_dtype, args.batch)
