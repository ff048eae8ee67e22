"""libaiter_torch.so: the CPU and CUDA kernels of ``torch.ops.aiter`` in C++.

A ``torch.ops.aiter`` call whose kernel is in Python pays the dispatcher's
boxed call into Python and the Python body (about 5-10 us a call on an H100
host, benchmarks/bench_overhead.py); libaiter_torch.so, built against
PyTorch's stable ABI, registers C++ kernels for the same schemas instead.
Each overload's *plan* (libaiter/torch/plan.hpp), written here from the op
table, tells the C++ kernel which schema argument goes to which C parameter
and how to allocate the outputs, so the table stays the one description.
An overload whose plan cannot be written (an output size the library
computes, such as moe_sorting's) keeps its Python kernel.

Where the library comes from, first match wins:
  1. $AITER_TORCH_LIBRARY, a path to libaiter_torch.so (``0`` or empty: none);
  2. beside the libaiter.so.0 that aiter loaded (wheels, system installs in
     libdir), or in libaiter/torch/ below it (a meson build tree).
It is built where torch's headers (>= 2.10) were at hand at build time (the
wheel unpacks them from torch's wheel) and loads on torch >= 2.10; when it is
absent or fails to load, this says so once at debug level.
"""
import ctypes
import logging
import os

import torch

from .._lib import library_path
from ..spec import table
from ..spec import moe as _moe
from ..spec.types import MUTATED

_NAME = "libaiter_torch.so"
_log = logging.getLogger("aiter.torch")

# c10::ScalarType codes (libaiter/torch/call.cpp has the same table).
SCALAR_TYPE_CODES = {"uint8": 0, "int8": 1, "int32": 3, "int64": 4, "float16": 5, "float32": 6, "float64": 7,
                     "bfloat16": 15, "float8_e5m2": 23, "float8_e4m3fn": 24, "float8_e4m3fnuz": 26}
_KINDS = {"float": "f", "int": "i", "bool": "b", "str": "s"}


def _candidates():
    env = os.environ.get("AITER_TORCH_LIBRARY")
    if env is not None:
        return [env] if env not in ("", "0") else []
    if os.sep not in library_path:
        return [_NAME]
    folder = os.path.dirname(os.path.abspath(library_path))
    return [os.path.join(folder, _NAME), os.path.join(folder, "libaiter", "torch", _NAME)]


# libaiter/torch/meson.build's TORCH_TARGET_VERSION: the library calls the
# stable ABI of torch 2.10 (torch_call_dispatcher, string arguments).
MINIMUM_TORCH = (2, 10)


def _torch_version():
    return tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])


def _load():
    """The loaded library, or None (said once at debug level)."""
    if _torch_version() < MINIMUM_TORCH:
        _log.debug("aiter.torch: torch %s predates the stable ABI libaiter_torch.so calls (%s); "
                   "torch.ops.aiter uses its Python kernels", torch.__version__, MINIMUM_TORCH)
        return None
    errors = []
    for candidate in _candidates():
        if os.sep in candidate and not os.path.exists(candidate):
            errors.append(f"{candidate}: no such file")
            continue
        try:
            native = ctypes.CDLL(candidate)
            native.aiter_torch_register.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_int]
            native.aiter_torch_last_error.restype = ctypes.c_char_p
        except (OSError, AttributeError) as e:  # AttributeError: not the library this package expects
            errors.append(f"{candidate}: {e}")
            continue
        return native
    _log.debug("aiter.torch: libaiter_torch.so not loaded (%s); torch.ops.aiter uses its Python kernels",
               "; ".join(errors) or "AITER_TORCH_LIBRARY is empty")
    return None


# --- plans --------------------------------------------------------------------------


class _Probe:
    """A stand-in argument for evaluating the table's dtype rules."""
    def __init__(self, name):
        self.name = name


def _closure(fn):
    """A function's free variables by name (empty for a builtin such as int)."""
    code, cells = getattr(fn, "__code__", None), getattr(fn, "__closure__", None) or ()
    return dict(zip(code.co_freevars, (c.cell_contents for c in cells))) if code else {}


_SAME_CODE = table._same("x").__code__
_SHAPE_RULES = {table._half.__code__: ("half", "x"), table._rows.__code__: ("rows", "x"),
                table._gemm.__code__: ("gemm", "a", "w"), table._batched_gemm.__code__: ("bgemm", "a", "w"),
                _moe._topk_shape.__code__: ("topk", "gating", "k")}


def _shape_rule(op, out, index):
    """The plan's shape rule for one of the table's shape functions, or None."""
    if out.like is not None:
        return f"like:{index[out.like]}"
    code = getattr(out.shape, "__code__", None)
    if code is _SAME_CODE:
        return f"like:{index[_closure(out.shape)['name']]}"
    if code in _SHAPE_RULES:
        name, *refs = _SHAPE_RULES[code]
        return f"{name}:{','.join(str(index[r]) for r in refs)}"
    return _probed_dims(op, out, index)


class _Shaped:
    def __init__(self, shape):
        self.shape, self.dtype = shape, None


def _probe(op, rank, base):
    """Arguments whose every size is a distinct number: tensor i's dim d is
    base + 100 i + d, int argument i is base + 100 i + 99."""
    values = {}
    for i, arg in enumerate(op.args):
        if arg.is_tensor:
            values[arg.name] = _Shaped(tuple(base + 100 * i + d for d in range(rank)))
        elif arg.kind == "int":
            values[arg.name] = base + 100 * i + 99
        else:
            values[arg.name] = None if arg.optional else arg.default
    return values


def _decode(op, value, rank, base):
    i, d = divmod(value - base, 100)
    if value >= base and i < len(op.args) and op.args[i].is_tensor and d < rank:
        return ("dim", i, d)
    if value >= base and i < len(op.args) and op.args[i].kind == "int" and d == 99:
        return ("int", i)
    return ("const", value)


def _dim_token(op, first, second, ranks, index):
    if first[0] == second[0] == "const" and first == second and first[1] > 0:
        return f"c{first[1]}"  # the same in both probes: a constant
    if first[0] == second[0] == "int" and first == second:
        return f"i{index[op.args[first[1]].name]}"
    if first[0] == second[0] == "dim" and first[1] == second[1]:
        entry = index[op.args[first[1]].name]
        if first[2] == second[2]:
            return f"{entry}.{first[2]}"  # counted from the start
        if first[2] - ranks[0] == second[2] - ranks[1]:
            return f"{entry}.{first[2] - ranks[0]}"  # counted from the end
    return None


def _probed_dims(op, out, index):
    """A dims rule read off the shape function by evaluating it on two probes
    (ranks 3 and 4, distinct sizes): each output size must be one input size
    (at a fixed position from the start or the end), an int argument, or a
    constant; anything else (arithmetic, a library query) gives None."""
    probes = ((3, 1000), (4, 5000))
    try:
        shapes = [tuple(out.shape(_probe(op, rank, base))) for rank, base in probes]
    except (KeyError, TypeError, AttributeError, IndexError, ValueError):
        return None
    if len(shapes[0]) != len(shapes[1]) or not all(isinstance(v, int) for v in shapes[0] + shapes[1]):
        return None
    tokens = [_dim_token(op, _decode(op, a, *probes[0]), _decode(op, b, *probes[1]), (3, 4), index)
              for a, b in zip(*shapes)]
    return None if None in tokens else "dims:" + ",".join(tokens)


def _fixed_or_of(value, index):
    if isinstance(value, _Probe) and value.name in index:
        return f"of:{index[value.name]}"
    if isinstance(value, str) and value in SCALAR_TYPE_CODES:
        return f"code:{SCALAR_TYPE_CODES[value]}"
    return None


def _dtype_rule(op, out, index):
    """The plan's dtype rule, found by evaluating the table's rule on probes."""
    probes = {a.name: (None if a.kind == "dtype" else _Probe(a.name)) for a in op.args}
    try:
        base = _fixed_or_of(out.dtype(probes), index)
        for arg in (a for a in op.args if a.kind == "dtype"):
            marker = _Probe(arg.name)
            if out.dtype({**probes, arg.name: marker}) is marker and base is not None:
                return f"arg:{index[arg.name]}:{base}"
    except (KeyError, TypeError, AttributeError):
        return None
    return base


def _source(op, name, index, functional):
    """The plan's source of one C parameter or params field, or None."""
    out_names = [o.name for o in op.outs]
    if name in out_names:
        k = out_names.index(name)
        return f"@{k}" if functional else str(len(op.args) + k)
    arg = next(a for a in op.args if a.name == name)
    if arg.same_as:
        return f"{index[name]}?{index[arg.same_as]}"
    if arg.kind != "str":
        return str(index[name])
    enum = _closure(arg.to_c).get("table") if arg.to_c else None
    if not isinstance(enum, dict):
        return None
    return f"{index[name]}=" + ",".join(f"{k}:{int(v)}" for k, v in enum.items())


def _params_struct(op, index, functional):
    """The params-struct token: each argument and output the C order leaves out
    is a field of the same name (dtype arguments only choose output dtypes)."""
    named = [a.name for a in op.args if not a.is_tensor and a.kind != "dtype" and a.name not in op.c_order]
    named += [o.name for o in op.outs if o.name not in op.c_order]
    fields = [(n, _source(op, n, index, functional)) for n in named]
    if any(src is None for _, src in fields):
        return None
    return "P:" + ";".join(f"{n}~{src}" for n, src in fields)


def _param(op, name, index, functional):
    """The plan token of one C parameter, or None where the plan cannot say it."""
    if name == "@params":
        return _params_struct(op, index, functional)
    return _source(op, name, index, functional)


def _stack(op, functional):
    """The names and kind letters of the schema's arguments, or None."""
    names, kinds = [], ""
    for arg in op.args:
        if arg.same_as and not (arg.is_tensor and arg.optional):
            return None
        if arg.is_tensor:
            kinds += "T" if arg.optional else "t"
        elif arg.kind == "dtype":
            if not arg.optional:
                return None
            kinds += "d"
        elif arg.optional:
            if arg.kind != "float":
                return None
            kinds += "F"
        else:
            kinds += _KINDS[arg.kind]
        names.append(arg.name)
    if not functional:
        names += [o.name for o in op.outs]
        kinds += "t" * len(op.outs)
    return names, kinds


def plan(op, functional):
    """The plan text of one overload (libaiter/torch/plan.hpp), or None when the
    op needs something the C++ kernels lack (then its Python kernel serves)."""
    stack = _stack(op, functional)
    if stack is None:
        return None
    names, kinds = stack
    index = {n: i for i, n in enumerate(names)}
    outputs = []
    if functional:
        for out in op.outs:
            shape, dtype = _shape_rule(op, out, index), _dtype_rule(op, out, index)
            if shape is None or dtype is None:
                return None
            outputs.append(f"{shape}/{dtype}")
    params = [_param(op, name, index, functional) for name in op.c_order]
    if any(p is None for p in params):
        return None
    return "|".join([" ".join(names), kinds, " ".join(params), " ".join(outputs)])


# --- registration ------------------------------------------------------------------------

_native = None
_cuda = False
native_overloads = set()  # the qualnames ("rmsnorm", "rmsnorm.out") served by C++ kernels


def kernel_of(qualname, device_type):
    """"C++" or "Python": which kernel serves overload ``qualname`` on ``device_type`` ("cpu", "cuda")."""
    native = qualname in native_overloads and (device_type == "cpu" or _cuda)
    return "C++" if native else "Python"


def serves_every_device(op):
    """Whether C++ kernels serve every overload of ``op`` on the CPU and, in a
    GPU build of torch, on the GPU."""
    names = {op.name} | ({f"{op.name}.out"} if op.outs else set())
    gpu_torch = bool(torch.version.cuda or torch.version.hip)
    return names <= native_overloads and (_cuda or not gpu_torch)


def load(library):
    """Loads libaiter_torch.so (once) and defines the helper op its kernels call;
    ``library`` is aiter.torch's torch.library.Library.  Returns whether loaded."""
    global _native, _cuda
    if _native is None:
        _native = _load() or False
        if _native:
            _cuda = bool(_native.aiter_torch_init(1 if torch.version.hip else 0))
            # The stable ABI has no requires_grad getter: the C++ kernels ask this op
            # when grad mode is on (never under no_grad / inference_mode).
            library.define("_requires_grad(Tensor t) -> bool")
            library.impl("_requires_grad", lambda t: t.requires_grad, "CompositeExplicitAutograd")
    return bool(_native)


def register(op, qualname, functional):
    """Registers the C++ kernel of one overload for CPU (and CUDA where torch has
    it); returns the keys still needing a kernel from the caller."""
    text = plan(op, functional) if _native else None
    if text is None:
        return ("CPU", "CUDA")
    status = _native.aiter_torch_register(qualname.encode(), op.symbol.encode(), text.encode(), int(_cuda))
    if status < 0:
        _log.debug("aiter.torch: %s: C++ kernel not registered: %s", qualname,
                   _native.aiter_torch_last_error().decode(errors="replace"))
    if status != 0:
        return ("CPU", "CUDA")
    native_overloads.add(qualname)
    return () if _cuda else ("CUDA",)
