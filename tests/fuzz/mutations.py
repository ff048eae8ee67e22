"""Ways to make a valid call invalid, or strange but still valid.

Each mutation changes a Prepared call in place and returns (what, expect):
`what` says what it did, `expect` is "reject" when the library must refuse the
call (a status other than AITER_OK) or "any" when the call may be valid.
"""
import numpy as np

from raw_tensors import INT64_MAX, KDLCPU, KDLCUDA, KDLROCM

HUGE = [2 ** 31, 2 ** 32 + 1, 2 ** 40, 2 ** 57, 2 ** 62, INT64_MAX]
BAD_DTYPES = [(1, 16, 1), (2, 32, 4), (3, 64, 1), (99, 8, 1), (2, 0, 1), (2, 12, 1),
              (5, 64, 1), (0, 8, 0), (2, 16, 2)]
ANY_DTYPES = [(2, 32, 1), (2, 16, 1), (4, 16, 1), (0, 8, 1), (0, 32, 1), (0, 64, 1), (1, 8, 1), (10, 8, 1),
              (11, 8, 1), (12, 8, 1), (2, 64, 1)]
BAD_FLOATS = [float("nan"), float("inf"), float("-inf"), -1.0]
ODD_FLOATS = BAD_FLOATS + [0.0, 1e-45, 1e30, 3.0]


def tensors(prep, role=None):
    """The call's non-NULL tensors, of one role if given."""
    found = [t for t in prep.tensors if t.raw is not None and (role is None or t.role == role)]
    for t in found:  # an earlier lie about ndim may have outgrown the lists (to_c pads them so too)
        t.raw.shape += [1] * (8 - len(t.raw.shape))
        t.raw.strides += [1] * (8 - len(t.raw.strides))
    return found


def shaped(prep, min_ndim=1):
    """Tensors whose dims can be indexed: min_ndim <= ndim <= 8."""
    return [t for t in tensors(prep) if min_ndim <= t.raw.ndim <= 8]


def pick_dim(rng, prep, candidates=None):
    """A tensor with indexable dims (of `candidates`, else any) and one of its dims."""
    t = pick(rng, shaped(prep) if candidates is None else candidates)
    return (None, None) if t is None else (t, int(rng.integers(t.raw.ndim)))


def pick(rng, items):
    return items[int(rng.integers(len(items)))] if items else None


def null_tensor(rng, prep):
    t = pick(rng, tensors(prep))
    if t is None:
        return None
    t.make_null()
    return f"{t.name} = NULL", "any" if t.optional else "reject"


def null_data(rng, prep):
    t = pick(rng, [t for t in tensors(prep) if t.raw.span_bytes()])
    if t is None:
        return None
    t.raw.address = None
    return f"{t.name}.data = NULL", "reject"


def bad_ndim(rng, prep):
    t = pick(rng, tensors(prep))
    if t is None:
        return None
    t.raw.ndim = int(pick(rng, [-1, -100, 9, 64, 2 ** 31 - 1]))
    return f"{t.name}.ndim = {t.raw.ndim}", "reject"


def other_ndim(rng, prep):
    t = pick(rng, tensors(prep))
    if t is None:
        return None
    t.raw.ndim = max(0, min(8, t.raw.ndim + int(pick(rng, [-2, -1, 1, 2]))))
    return f"{t.name}.ndim = {t.raw.ndim}", "any"


def null_shape(rng, prep):
    t = pick(rng, shaped(prep))
    if t is None:
        return None
    t.raw.null_shape = True
    return f"{t.name}.shape = NULL", "reject"


def null_strides(rng, prep):
    t = pick(rng, tensors(prep))
    if t is None:
        return None
    t.raw.null_strides = True
    return f"{t.name}.strides = NULL (compact)", "any"


def bad_extent(rng, prep):
    t, d = pick_dim(rng, prep)
    if t is None:
        return None
    t.raw.shape[d] = int(pick(rng, [-1, -2 ** 40, -INT64_MAX - 1] + HUGE))
    return f"{t.name}.shape[{d}] = {t.raw.shape[d]}", "any" if t.raw.shape[d] >= 0 else "reject"


def other_extent(rng, prep):
    t, d = pick_dim(rng, prep)
    if t is None:
        return None
    t.raw.shape[d] = max(0, t.raw.shape[d] + int(pick(rng, [-1, 1, 2, -5])))
    return f"{t.name}.shape[{d}] = {t.raw.shape[d]}", "any"


def empty_with_huge_extents(rng, prep):
    """[0, 2^40, 2^40] and the like: no elements, strides that overflow."""
    t = pick(rng, shaped(prep, 2))
    if t is None:
        return None
    zero = int(rng.integers(t.raw.ndim))
    for d in range(t.raw.ndim):
        t.raw.shape[d] = 0 if d == zero else int(pick(rng, HUGE))
    t.raw.null_strides = rng.random() < 0.7
    return f"{t.name}.shape = {t.raw.shape[:t.raw.ndim]}", "any"


def explicit_strides(raw):
    """Strides written out, so that one of them can be changed."""
    raw.strides = raw.compact() if raw.null_strides else raw.strides
    raw.null_strides = False


def bad_stride(rng, prep):
    t, d = pick_dim(rng, prep)
    if t is None:
        return None
    explicit_strides(t.raw)
    t.raw.strides[d] = int(pick(rng, [-1, -INT64_MAX - 1] + HUGE))
    if t.raw.shape[d] < 2 and rng.random() < 0.7:
        t.raw.shape[d] = 2
    return f"{t.name}.strides[{d}] = {t.raw.strides[d]}", "any"


def span_of_2_63(rng, prep):
    """Strides whose reach is INT64_MAX elements: 2^63 bytes for a 1-byte dtype."""
    t, d = pick_dim(rng, prep, [t for t in shaped(prep) if t.raw.span_bytes()])
    if t is None:
        return None
    explicit_strides(t.raw)
    for i in range(t.raw.ndim):
        if i != d:
            t.raw.shape[i] = 1
    t.raw.shape[d], t.raw.strides[d] = 2, INT64_MAX
    return f"{t.name}: shape[{d}] 2, stride {INT64_MAX}", "reject"


def zero_stride(rng, prep):
    t, d = pick_dim(rng, prep)
    if t is None:
        return None
    explicit_strides(t.raw)
    t.raw.strides[d] = 0
    return f"{t.name}.strides[{d}] = 0", "any"


def bad_dtype(rng, prep):
    t = pick(rng, tensors(prep))
    if t is None:
        return None
    t.raw.dtype = pick(rng, BAD_DTYPES)
    return f"{t.name}.dtype = {t.raw.dtype}", "reject"


def other_dtype(rng, prep):
    t = pick(rng, tensors(prep))
    if t is None:
        return None
    t.raw.dtype = pick(rng, ANY_DTYPES)
    return f"{t.name}.dtype = {t.raw.dtype}", "any"


def bad_device(rng, prep):
    t = pick(rng, tensors(prep))
    if t is None:
        return None
    choices = [100, -1, 3, 7, 2 ** 31 - 1, -2 ** 31]
    if not prep.gpu_present:  # host memory called a GPU's: the library must say "no device"
        choices += [KDLCUDA, KDLROCM]
    t.raw.device = (int(pick(rng, choices)), int(pick(rng, [0, 1, -1])))
    return f"{t.name}.device = {t.raw.device}", "reject"


def every_device(rng, prep):
    if prep.gpu_present:
        return None
    dev = (int(pick(rng, [KDLCUDA, KDLROCM])), 0)
    for t in tensors(prep):
        t.raw.device = dev
    work = all(t.raw.span_bytes() for t in tensors(prep))  # with an empty tensor there may be nothing to do
    return f"every tensor on {dev}", "reject" if work else "any"


def device_id(rng, prep):
    t = pick(rng, tensors(prep))
    if t is None:
        return None
    t.raw.device = (KDLCPU, int(pick(rng, [1, -1, 999])))
    return f"{t.name}.device_id = {t.raw.device[1]}", "any"


def misaligned(rng, prep):
    t = pick(rng, [t for t in tensors(prep) if t.raw.dtype[1] > 8 and t.raw.span_bytes()])
    if t is None:
        return None
    t.raw.byte_offset = int(rng.integers(1, t.raw.dtype[1] // 8))
    return f"{t.name}.byte_offset = {t.raw.byte_offset}", "reject"


def huge_offset(rng, prep):
    t = pick(rng, [t for t in tensors(prep) if t.raw.span_bytes()])
    if t is None:
        return None
    t.raw.byte_offset = int(pick(rng, [2 ** 63, 2 ** 64 - 64, 2 ** 62, INT64_MAX - 7]))
    return f"{t.name}.byte_offset = {t.raw.byte_offset}", "reject"


def bad_scalar(rng, prep):
    s = pick(rng, [s for s in prep.scalars if s.kind in ("float", "int", "enum")])
    if s is None:
        return None
    if s.kind == "float":
        s.value = float(pick(rng, ODD_FLOATS))
    elif s.kind == "enum":
        s.value = int(pick(rng, [2, 7, -1, 2 ** 31 - 1, -2 ** 31]))
        return f"{s.name} = {s.value}", "reject"
    else:
        s.value = int(pick(rng, [2, -1, 2 ** 31 - 1, -2 ** 31]))
    return f"{s.name} = {s.value}", "any"


def null_result_pointer(rng, prep):
    s = pick(rng, [s for s in prep.scalars if s.kind == "size_out"])
    if s is None:
        return None
    s.value = "null"
    return f"{s.name} = NULL", "reject"


def bad_params(rng, prep):
    if prep.params is None:
        return None
    field = pick(rng, ["struct_size", "softmax_scale", "window_left", "k_scale", "v_scale", "causal", "null"])
    if field == "null":
        prep.params.fields = None
        return "params = NULL", "any"
    value = {"struct_size": pick(rng, [0, 1, 7, 12, 2 ** 20]),
             "softmax_scale": pick(rng, ODD_FLOATS),
             "window_left": pick(rng, [-5, 0, 1, 2 ** 31 - 1, -2 ** 31]),
             "k_scale": pick(rng, ODD_FLOATS), "v_scale": pick(rng, ODD_FLOATS),
             "causal": pick(rng, [0, 1, -1, 7])}[field]
    prep.params.fields = dict(prep.params.fields or {}, **{field: value})
    return f"params.{field} = {value}", "any"


def bad_index(rng, prep):
    t = pick(rng, tensors(prep, "index"))
    if t is None or t.raw.span_bytes() == 0:
        return None
    values = t.buffer.view(t.array).reshape(-1)
    if values.size == 0:  # an earlier lie grew an empty index tensor
        return None
    i = int(rng.integers(values.size))
    limits = np.iinfo(values.dtype)
    value = pick(rng, [-1, -2 ** 31, 2 ** 31 - 1, 10 ** 6, int(values.max()) + 1])
    values[i] = min(max(value, int(limits.min)), int(limits.max))
    return f"{t.name}[{i}] = {values[i]}", "any"


def index_inside_output(rng, prep):
    """An index tensor whose bytes lie inside an output's buffer."""
    index = pick(rng, tensors(prep, "index"))
    out = pick(rng, [t for t in tensors(prep, "out") if t.raw.span_bytes()])
    if index is None or out is None or index.raw.span_bytes() == 0:
        return None
    nbytes = index.array.nbytes
    room = out.array.nbytes - nbytes
    if room < 0:
        return None
    align = index.array.itemsize
    offset = int(rng.integers(room // align + 1)) * align
    payload = out.buffer.payload()
    payload[offset:offset + nbytes] = np.frombuffer(np.ascontiguousarray(index.array).tobytes(), np.uint8)
    index.raw.address, index.raw.buffer = out.buffer.address + offset, out.buffer
    return f"{index.name} inside {out.name} at byte {offset}", "reject"


def output_is_input(rng, prep):
    """One output given the memory of one input (allowed for some ops, e.g. out == x)."""
    out, src = pick(rng, tensors(prep, "out")), pick(rng, tensors(prep, "in"))
    if out is None or src is None:
        return None
    out.raw.address, out.raw.buffer = src.raw.address, src.buffer
    return f"{out.name} in the memory of {src.name}", "any"


MUTATIONS = [null_tensor, null_data, bad_ndim, other_ndim, null_shape, null_strides, bad_extent, other_extent,
             empty_with_huge_extents, bad_stride, span_of_2_63, zero_stride, bad_dtype, other_dtype, bad_device,
             every_device, device_id, misaligned, huge_offset, bad_scalar, null_result_pointer, bad_params, bad_index,
             index_inside_output, output_is_input]
BY_NAME = {m.__name__: m for m in MUTATIONS}
