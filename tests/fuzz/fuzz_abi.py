"""A fuzzer of libaiter's C ABI.

    python tests/fuzz/fuzz_abi.py [--seconds S] [--cases N] [--seed SEED] [--op OP]

Each case takes one valid call of one op (valid_calls.py), applies one or two
mutations (mutations.py) or none, and calls the C function through cffi with
DLTensors written field by field over guarded buffers (raw_tensors.py).  After
every call:
  - the guard bytes around every buffer are intact;
  - the status is one the header declares; a failed call names its op first in
    its message and changed no byte of any buffer;
  - a mutation the library must refuse was refused;
  - an unmutated call matches the float64 reference of the test suite.
A crash (a sanitizer's report, a signal) ends the process: the case being run is
in the journal file (--journal), and `--replay SEED:INDEX` runs it again.  Each
crash found becomes an entry of regressions.json, replayed by the test suite.

Run it against a sanitized build for full effect (see tools/sanitized_checks.sh):
the library is the one aiter loads (AITER_LIBRARY).  GPU device types are only
used as lies while no GPU driver is present.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aiter._lib import ffi, lib  # noqa: E402
import mutations  # noqa: E402
from dist_lies import FUNCTIONS as DIST_FUNCTIONS, fuzz_dist  # noqa: E402
from raw_tensors import Buffer, RawTensor  # noqa: E402
from valid_calls import BUILDERS, Params  # noqa: E402

STATUSES = range(0, 9)
OPTIONAL = {"bias", "k", "correction_bias", "expert_mask"}  # tensors an op takes as NULL (rope's k, the GEMMs' and layernorm's bias)


class Prepared:
    """A case's arguments as raw tensors over guarded buffers, ready to mutate and call."""

    def __init__(self, case, gpu_present):
        self.case, self.gpu_present = case, gpu_present
        self.tensors, self.scalars, self.params = [], [], None
        for arg in case.args:
            if isinstance(arg, Params):
                self.params = Params(dict(arg.fields), arg.struct)
            elif hasattr(arg, "role"):
                self.tensors.append(PreparedTensor(arg))
            else:
                self.scalars.append(type(arg)(arg.name, arg.value, arg.kind))

    def buffers(self):
        return [t.buffer for t in self.tensors if t.buffer is not None]

    def c_args(self, keep):
        by_name = {t.name: t for t in self.tensors}
        by_name.update({s.name: s for s in self.scalars})
        out = []
        for arg in self.case.args:
            if isinstance(arg, Params):
                out.append(params_pointer(self.params.fields, keep, self.params.struct))
            elif hasattr(arg, "role"):
                t = by_name[arg.name]
                out.append(ffi.NULL if t.raw is None else t.raw.to_c(keep))
            else:
                out.append(scalar_value(by_name[arg.name], keep))
        return out


def scalar_value(s, keep):
    if s.kind == "stream":
        return ffi.NULL
    if s.kind == "size_out":  # a size_t the call writes; value "null" passes NULL
        if s.value == "null":
            return ffi.NULL
        keep.append(ffi.new("size_t *"))
        return keep[-1]
    return enum_bits(s.value) if s.kind == "enum" else s.value


class PreparedTensor:
    def __init__(self, arg):
        self.name, self.role, self.array = arg.name, arg.role, arg.array
        self.optional = arg.name in OPTIONAL
        self.buffer = None if arg.array is None else Buffer(arg.array)
        self.raw = None if arg.array is None else RawTensor(arg.array, self.buffer)

    def make_null(self):
        self.raw = None


def params_pointer(fields, keep, struct="aiter_attention_params"):
    if fields is None:
        return ffi.NULL
    p = ffi.new(struct + " *")
    getattr(lib, struct + "_init")(p)
    known = dict(ffi.typeof(struct).fields)
    for name, value in fields.items():
        if name in known:  # a mutation may name a field another op's struct has
            setattr(p, name, value)
    keep.append(p)
    return p


class Finding(Exception):
    """A broken promise of the ABI."""


def gpu_driver_present():
    """Whether device types kDLCUDA / kDLROCM reach a GPU here (then host memory
    called GPU memory is a lie the library cannot see, and is never told)."""
    for device_type in (2, 10):
        if lib.aiter_synchronize(device_value(device_type, 0), ffi.NULL) != 4:  # 4: AITER_ERR_NO_DEVICE
            return True
    return False


def device_value(device_type, device_id):
    """A DLDevice holding any int32 as its type, as a C caller could pass (cffi
    itself refuses enum values outside the enumerators' range)."""
    device = ffi.new("DLDevice *")
    fields = ffi.cast("int32_t *", device)
    fields[0], fields[1] = device_type, device_id
    return device[0]


def enum_bits(value):
    """An int32 as cffi passes C enums of non-negative enumerators: its unsigned bits."""
    return value % 2 ** 32


def run_case(seed, index, gpu_present, op=None, mutation_names=None):
    """Builds, mutates, calls and checks one case; returns what it did (a dict),
    raising Finding when a promise is broken."""
    rng = np.random.default_rng([seed, index])
    ops = sorted(BUILDERS)
    op = op or ops[index % len(ops)]
    prep = Prepared(BUILDERS[op](rng), gpu_present)
    applied, expects = [], []
    names = mutation_names if mutation_names is not None else choose_mutations(rng)
    for name in names:
        result = mutations.BY_NAME[name](rng, prep)
        if result is not None:
            applied.append(result[0])
            expects.append(result[1])
    # A later mutation may undo an earlier one (a NULL data pointer replaced by
    # another buffer): a refusal is owed only when every mutation asks for one.
    expect = "valid" if not expects else "reject" if all(e == "reject" for e in expects) else "any"
    record = {"seed": seed, "index": index, "op": op, "mutations": applied, "expect": expect,
              "shapes": {t.name: list(t.array.shape) for t in prep.tensors if t.array is not None}}
    if not all(t.raw is None or t.raw.fits() for t in prep.tensors):
        record["skipped"] = "a lie past our buffers that no library can see"
        return record
    try:
        record["status"] = call_and_check(prep, op, expect)
    except Finding as e:
        raise Finding(f"{e}\n  case: {json.dumps(record)}") from None
    return record


def choose_mutations(rng):
    count = int(rng.choice([0, 1, 1, 1, 2]))
    return [mutations.MUTATIONS[int(rng.integers(len(mutations.MUTATIONS)))].__name__ for _ in range(count)]


def call_and_check(prep, op, expect):
    before = [b.raw.copy() for b in prep.buffers()]
    keep = []
    status = int(getattr(lib, "aiter_" + op)(*prep.c_args(keep)))
    message = ffi.string(lib.aiter_last_error()).decode("utf-8", "replace")
    for b in prep.buffers():
        if not b.guards_intact():
            raise Finding(f"aiter_{op}: wrote outside a tensor (guard bytes changed)")
    if status not in STATUSES:
        raise Finding(f"aiter_{op}: status {status} is not an aiter_status")
    if status != 0:
        if not message.startswith(f"aiter_{op}: "):
            raise Finding(f"aiter_{op}: message does not start with the op's name: {message!r}")
        for b, old in zip(prep.buffers(), before):
            if not np.array_equal(b.raw, old):
                raise Finding(f"aiter_{op}: failed with status {status} ({message}) but wrote to a buffer")
        return status
    if expect == "reject":
        raise Finding(f"aiter_{op}: accepted a call it must refuse")
    if expect == "valid":
        results = {t.name: t.buffer.view(t.array) for t in prep.tensors if t.buffer is not None}
        try:
            prep.case.check(results)
        except AssertionError as e:
            raise Finding(f"aiter_{op}: result differs from the reference: {e}") from None
    return status


# ---- the functions that take no tensors -------------------------------------------------

# Exported functions fuzzed by fuzz_plain_functions; every other one has a builder.
PLAIN_FUNCTIONS = {"aiter_status_string", "aiter_last_error", "aiter_version", "aiter_version_string",
                   "aiter_get_library_info", "aiter_synchronize", "aiter_attention_params_init",
                   "aiter_mla_params_init", "aiter_fused_moe_params_init", "aiter_fused_moe_workspace_size",
                   "aiter_moe_sorting_max_rows",
                   "aiter_kernel_variants", "aiter_force_kernel_variant", "aiter_last_kernel_variant",
                   "aiter_tuned_config_device", "aiter_reload_tuned_configs", "aiter_tuned_config_sources"} | DIST_FUNCTIONS


def fuzz_plain_functions(rng):
    """Every exported function without tensor arguments, with lies of its own."""
    for _ in range(20):
        value = int(rng.integers(-2 ** 31, 2 ** 31))
        if ffi.string(lib.aiter_status_string(enum_bits(value))) == b"":
            raise Finding("aiter_status_string: empty string")
        device = device_value(int(rng.choice([1, 2, 10, 3, 100, -1])), int(rng.choice([0, 1, -1])))
        check_status("aiter_synchronize", lib.aiter_synchronize(device, ffi.NULL))
        count = ffi.new("int *")
        names = ffi.new("const char *[4]")
        op = rng.choice([b"gemm_a16w16", b"gemm_a8w8", b"nope", b""])
        check_status("aiter_kernel_variants",
                     lib.aiter_kernel_variants(op, device, names if rng.random() < 0.8 else ffi.NULL,
                                               int(rng.choice([0, 4, -1])), count if rng.random() < 0.9 else ffi.NULL))
        check_status("aiter_force_kernel_variant",
                     lib.aiter_force_kernel_variant(op, rng.choice([b"x", b"", b"cpu_tiled", b"gpu_generic"])))
        lib.aiter_force_kernel_variant(op, ffi.NULL)
        target, units = ffi.new("const char **"), ffi.new("int *")
        check_status("aiter_tuned_config_device",
                     lib.aiter_tuned_config_device(device, target if rng.random() < 0.8 else ffi.NULL, units))
        check_status("aiter_last_kernel_variant", lib.aiter_last_kernel_variant(target, target, ffi.NULL))
    lib.aiter_version(ffi.NULL, ffi.NULL, ffi.NULL)
    ffi.string(lib.aiter_version_string())
    lib.aiter_attention_params_init(ffi.NULL)
    lib.aiter_mla_params_init(ffi.NULL)
    check_status("aiter_get_library_info", lib.aiter_get_library_info(ffi.NULL))
    size = ffi.sizeof("aiter_library_info")
    for claimed in (0, 1, 8, size - 1, size, size + 64):
        raw = np.full(size + 128, 0x5A, np.uint8)
        info = ffi.cast("aiter_library_info *", raw.ctypes.data)
        info.struct_size = claimed
        check_status("aiter_get_library_info", lib.aiter_get_library_info(info))
        if not (raw[size:] == 0x5A).all():
            raise Finding(f"aiter_get_library_info: struct_size {claimed}: wrote past the struct")
    check_status("aiter_reload_tuned_configs", lib.aiter_reload_tuned_configs())
    ffi.string(lib.aiter_tuned_config_sources())
    lib.aiter_force_kernel_variant(b"gemm_a16w16", ffi.NULL)
    fuzz_dist(rng, ffi, lib, check_status, device_value)


def check_status(name, status):
    status = int(status)
    if status not in STATUSES:
        raise Finding(f"{name}: status {status} is not an aiter_status")
    if status != 0:
        message = ffi.string(lib.aiter_last_error()).decode("utf-8", "replace")
        if not message.startswith(name + ":"):
            raise Finding(f"{name}: message does not start with the function's name: {message!r}")


# ---- driver ------------------------------------------------------------------------------

def fuzz(seed, seconds=None, cases=None, op=None, journal=None, quiet=False):
    """Runs cases until `seconds` or `cases` run out; returns a summary dict."""
    gpu_present = gpu_driver_present()
    fuzz_plain_functions(np.random.default_rng(seed))
    start, index, tally = time.monotonic(), 0, {}
    while (cases is None or index < cases) and (seconds is None or time.monotonic() - start < seconds):
        if journal:
            with open(journal, "w") as f:
                json.dump({"seed": seed, "index": index, "op": op}, f)
        record = run_case(seed, index, gpu_present, op=op)
        key = "skipped" if "skipped" in record else ("ok" if record["status"] == 0 else "refused")
        tally[key] = tally.get(key, 0) + 1
        index += 1
    summary = {"seed": seed, "cases": index, "seconds": round(time.monotonic() - start, 1), **tally}
    if not quiet:
        print(json.dumps(summary))
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--cases", type=int, default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--op", default=None, choices=sorted(BUILDERS))
    parser.add_argument("--journal", default="fuzz-journal.json", help="the case being run, for a crash")
    parser.add_argument("--replay", default=None, metavar="SEED:INDEX", help="run one case again and print it")
    args = parser.parse_args()
    if args.replay:
        seed, index = (int(v) for v in args.replay.split(":"))
        print(json.dumps(run_case(seed, index, gpu_driver_present(), op=args.op)))
        return 0
    if args.seconds is None and args.cases is None:
        args.seconds = 60
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    print(f"fuzzing with seed {seed}", flush=True)
    try:
        fuzz(seed, args.seconds, args.cases, args.op, args.journal)
    except Finding as e:
        print(f"FINDING: {e}\ncase: {open(args.journal).read()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
