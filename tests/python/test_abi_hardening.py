"""Regression cases of the C ABI's promises (issue 30): each defect a fuzzer found
against a sanitized build, and each crash the project's own fuzzer (tests/fuzz)
has found since, called through DLTensors written field by field.  Outside a
sanitized build a wild write or read here may still crash the process, which
fails the run too; tools/sanitized_checks.sh runs this file under
AddressSanitizer + UndefinedBehaviorSanitizer."""
import json
import os
import sys

import numpy as np
import pytest

import aiter

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fuzz"))
import fuzz_abi  # noqa: E402
import harness  # noqa: E402
from raw_tensors import INT64_MAX  # noqa: E402

GPU = fuzz_abi.gpu_driver_present()
ONE_BYTE_OUTPUTS = ["quant_per_tensor_dynamic", "quant_per_tensor_static", "quant_per_token_dynamic",
                    "rmsnorm_quant", "add_rmsnorm_quant", "silu_and_mul_quant"]


def prepared(op, seed=0, **want):
    """A valid call of `op` whose arrays match `want` (name -> predicate on the
    array), searched over seeds so that the case is the same on every run."""
    for s in range(seed, seed + 500):
        prep = fuzz_abi.Prepared(fuzz_abi.BUILDERS[op](np.random.default_rng([7, s])), GPU)
        arrays = {t.name: t.array for t in prep.tensors}
        if all(arrays.get(k) is not None and ok(arrays[k]) for k, ok in want.items()):
            return prep
    raise AssertionError(f"no valid {op} call with {list(want)}")


def tensor(prep, name):
    return next(t for t in prep.tensors if t.name == name)


def refused(prep, op):
    """The call fails cleanly: a status, the op's name first, no byte written."""
    status = fuzz_abi.call_and_check(prep, op, "reject")
    return status, fuzz_abi.ffi.string(fuzz_abi.lib.aiter_last_error()).decode()


def non_empty(a):
    return a.size > 0


# ---- 1. a byte span of exactly 2^63 ---------------------------------------------------------

def reach_int64_max(raw):
    """Makes the tensor's last element INT64_MAX elements past its first through
    dim 0's stride (shape[0] is 2): for a one-byte dtype, a span of 2^63 bytes."""
    rest = sum((e - 1) * s for e, s in zip(raw.shape[1:raw.ndim], raw.strides[1:raw.ndim]))
    raw.shape[0], raw.strides[0], raw.null_strides = 2, INT64_MAX - rest, False


@pytest.mark.parametrize("op", ONE_BYTE_OUTPUTS)
def test_one_byte_output_spanning_2_63_bytes_is_refused(op):
    prep = prepared(op, out=lambda a: a.size > 0 and a.shape[0] >= 2)
    for t in prep.tensors:  # every tensor with x's rows keeps two of them
        if t.raw is not None and t.array.ndim > 1 and t.array.shape[0] >= 2:
            t.raw.shape[0] = 2
    reach_int64_max(tensor(prep, "out").raw)
    status, message = refused(prep, op)
    assert "overflow" in message


def test_gemm_a8w8_input_spanning_2_63_bytes_is_refused():
    prep = prepared("gemm_a8w8", a=lambda a: a.shape[0] >= 2 and a.shape[1] > 0 and a.dtype.itemsize == 1)
    for name in ("a", "out"):
        tensor(prep, name).raw.shape[0] = 2
    if tensor(prep, "a_scale").array.shape[0] >= 2:
        tensor(prep, "a_scale").raw.shape[0] = 2
    reach_int64_max(tensor(prep, "a").raw)
    status, message = refused(prep, "gemm_a8w8")
    assert "overflow" in message


# ---- 2. index tensors inside outputs ----------------------------------------------------------

@pytest.mark.parametrize("op, index, output", [
    ("rope", "positions", "q"),
    ("paged_decode_attention", "block_table", "out"),
    ("paged_decode_attention", "context_lens", "out"),
    ("prefill_attention", "cu_seqlens_q", "out"),
    ("prefill_attention", "cu_seqlens_k", "out"),
    ("reshape_and_cache", "slot_mapping", "k_cache"),
    ("reshape_and_cache", "slot_mapping", "v_cache"),
])
def test_index_tensor_inside_an_output_is_refused(op, index, output):
    prep = prepared(op, **{index: non_empty, output: lambda a: a.size > 0})
    idx, out = tensor(prep, index), tensor(prep, output)
    if idx.array.nbytes > out.array.nbytes:
        pytest.skip("this case's output is smaller than its index tensor")
    payload = out.buffer.payload()
    payload[:idx.array.nbytes] = np.frombuffer(idx.array.tobytes(), np.uint8)
    idx.raw.address, idx.raw.buffer = out.buffer.address, out.buffer
    status, message = refused(prep, op)
    assert f"{index}: overlaps the memory of {output}" in message


def test_prefill_lse_output_over_cu_seqlens_is_refused():
    """params.lse is an output too: the index tensors may not lie inside it."""
    from raw_tensors import RawTensor
    prep = prepared("prefill_attention", q=lambda a: 0 < a.shape[0] * a.shape[1] <= 8)
    cu_q, q = tensor(prep, "cu_seqlens_q"), tensor(prep, "q")
    lse = RawTensor(np.zeros(q.array.shape[:2], np.float32), cu_q.buffer)  # over cu_seqlens_q's bytes
    keep = prep.keep = []
    prep.params.fields = dict(prep.params.fields, lse=lse.to_c(keep))
    status, message = refused(prep, "prefill_attention")
    assert "cu_seqlens_q: overlaps the memory of params.lse" in message


# ---- 3. a hidden size of 0 still writes the scales ------------------------------------------

@pytest.mark.parametrize("add", [False, True])
def test_quantizing_norm_of_empty_rows_writes_scale_one(add):
    x = np.zeros((3, 0), np.float32)
    w = np.zeros((0,), np.float32)
    scale = np.full((3, 1), np.nan, np.float32)
    if add:
        aiter.add_rmsnorm_quant(x, x.copy(), w, dtype="int8", scale=scale)
    else:
        aiter.rmsnorm_quant(x, w, dtype="int8", scale=scale)
    assert (scale == 1.0).all()


# ---- 4. topk_softmax's 1-D empty ids ------------------------------------------------------------

def test_topk_softmax_one_dimensional_empty_ids_is_refused():
    prep = prepared("topk_softmax", topk_ids=non_empty)
    ids = tensor(prep, "topk_ids").raw
    ids.ndim, ids.shape, ids.strides = 1, [0], [1]
    refused(prep, "topk_softmax")


# ---- 5. enums holding no enumerator -----------------------------------------------------------

@pytest.mark.parametrize("device_type", [100, -1, 2 ** 31 - 1, -2 ** 31, 20])
@pytest.mark.parametrize("op", sorted(fuzz_abi.BUILDERS))
def test_unknown_device_type_is_refused(op, device_type):
    prep = prepared(op)
    tensor(prep, next(t.name for t in prep.tensors if t.raw is not None)).raw.device = (device_type, 0)
    status, message = refused(prep, op)
    assert f"device type {device_type} is not supported" in message


@pytest.mark.parametrize("device_type", [100, -1, 3])
def test_synchronize_refuses_unknown_device_types(device_type):
    status = fuzz_abi.lib.aiter_synchronize(fuzz_abi.device_value(device_type, 0), fuzz_abi.ffi.NULL)
    assert status == 1
    assert fuzz_abi.ffi.string(fuzz_abi.lib.aiter_last_error()).startswith(b"aiter_synchronize: device")


@pytest.mark.parametrize("approx", [2, 7, -1, 2 ** 31 - 1])
def test_gelu_approx_outside_the_enum_is_refused(approx):
    prep = prepared("gelu_and_mul")
    next(s for s in prep.scalars if s.name == "approx").value = approx
    status, message = refused(prep, "gelu_and_mul")
    assert f"got {approx}" in message


@pytest.mark.parametrize("value", [-1, 9, 2 ** 31 - 1, -2 ** 31])
def test_status_string_of_any_int(value):
    assert fuzz_abi.ffi.string(fuzz_abi.lib.aiter_status_string(fuzz_abi.enum_bits(value))) == b"unknown status"


# ---- 6. empty tensors of huge extents -------------------------------------------------------------

@pytest.mark.parametrize("op, name, shape", [
    ("rope", "q", [0, 2 ** 40, 2 ** 40]),
    ("reshape_and_cache", "key", [0, 2 ** 57, 128]),
    ("prefill_attention", "q", [0, 2 ** 40, 2 ** 40]),
    ("gemm_a16w16", "a", [INT64_MAX, 0]),
    ("gemm_a8w8_blockscale", "a", [0, INT64_MAX]),
    ("batched_gemm_a16w16", "a", [2, 0, INT64_MAX]),
])
def test_empty_tensor_of_huge_extents_is_no_undefined_behaviour(op, name, shape):
    """Compact strides of such a tensor overflow int64; nothing may compute them
    unchecked.  Whatever status comes back, it comes back cleanly."""
    prep = prepared(op)
    raw = tensor(prep, name).raw
    raw.ndim, raw.shape, raw.null_strides = len(shape), list(shape), True
    fuzz_abi.call_and_check(prep, op, "any")


@pytest.mark.parametrize("op, shape", [
    ("mla_decode_workspace_size", [0, 2 ** 40, INT64_MAX, 576]),
    ("mla_decode", [0, 4, INT64_MAX, 576]),
])
def test_empty_q_of_huge_extents_and_given_strides_plans_no_split(op, shape):
    """Found by tests/fuzz in CI: an empty q passes the layout check whatever its
    strides, and the split plans multiplied its extents (signed overflow)."""
    prep = prepared(op)
    raw = tensor(prep, "q").raw
    raw.ndim, raw.shape, raw.strides, raw.null_strides = len(shape), list(shape), [1] * len(shape), False
    for scalar in prep.scalars:  # automatic splits: the plan is computed
        if scalar.name == "num_splits":
            scalar.value = 0
    if prep.params is not None:
        prep.params.fields = dict(prep.params.fields, num_splits=0)
    fuzz_abi.call_and_check(prep, op, "any")


def test_empty_a_with_wild_row_stride():
    """Found by tests/fuzz: the CPU GEMM multiplied an empty A's row stride
    (INT64_MAX) by the element size."""
    prep = prepared("batched_gemm_a16w16", out=lambda a: a.size == 0)
    a = tensor(prep, "a").raw
    a.strides[1] = INT64_MAX
    fuzz_abi.call_and_check(prep, "batched_gemm_a16w16", "any")


# ---- 7. misaligned host data ---------------------------------------------------------------------

@pytest.mark.parametrize("offset", [1, 2, 3])
def test_misaligned_float32_data_is_refused(offset):
    prep = prepared("rmsnorm", x=lambda a: a.size > 0 and a.dtype == np.float32)
    tensor(prep, "x").raw.byte_offset = offset
    status, message = refused(prep, "rmsnorm")
    assert "must be aligned to the 4 bytes" in message


# ---- 8. messages -------------------------------------------------------------------------------------

@pytest.mark.skipif(GPU, reason="a GPU driver is present")
def test_no_driver_message_names_the_op():
    prep = prepared("rmsnorm", x=non_empty)
    for t in prep.tensors:
        if t.raw is not None:
            t.raw.device = (2, 0)
    status, message = refused(prep, "rmsnorm")
    assert status == 4 and message.startswith("aiter_rmsnorm: ")


def test_allowed_dtypes_are_named_once():
    x = np.zeros((2, 8), np.float32)
    with pytest.raises(aiter.AiterError) as e:
        aiter.rmsnorm(x, np.zeros(8, np.float16))
    assert "float32, float32" not in str(e.value)


def test_the_fuzzer_covers_every_exported_function():
    import importlib
    import re
    _lib = importlib.import_module("aiter._lib")  # the module (aiter._lib is the library there)
    declared = set(re.findall(r"\b(aiter_\w+)\s*\(", _lib._read_cdef(_lib.library_path)))
    covered = fuzz_abi.PLAIN_FUNCTIONS | {"aiter_" + op for op in fuzz_abi.BUILDERS}
    if harness.ml_dtypes is None:  # fp8-only ops have no NumPy builder there
        covered |= {"aiter_fused_moe_fp8"}
    assert declared - covered == set(), "add a builder to tests/fuzz/valid_calls.py"


# ---- crashes the fuzzer found, by seed and case (tests/fuzz/regressions.json) ----------------------

with open(os.path.join(os.path.dirname(__file__), "..", "fuzz", "regressions.json")) as f:
    REGRESSIONS = json.load(f)


@pytest.mark.parametrize("case", REGRESSIONS, ids=[c["note"][:40] for c in REGRESSIONS])
def test_fuzzer_regression(case):
    fuzz_abi.run_case(case["seed"], case["index"], GPU, op=case["op"], mutation_names=case.get("mutations"))


def test_short_fuzz_run():
    """A few hundred fresh cases on every run of the suite (the sanitized CI step
    runs a longer one)."""
    summary = fuzz_abi.fuzz(int.from_bytes(os.urandom(4), "little"), cases=400, quiet=True)
    assert summary.get("ok", 0) > 0 and summary.get("refused", 0) > 0
