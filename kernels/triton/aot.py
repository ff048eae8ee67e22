"""What build.py compiles: the targets, and one AotKernel per code object.
Each Triton family has its kernel source (gemm.py) and a list of what is built
from it (gemm_aot.py: `kernels(target)`), which imports no triton, so tests
and meson can read it on machines without triton.  Only for build time:
nothing here runs when libaiter does.
"""
from dataclasses import dataclass, field

TARGETS = {  # target: (backend, arch, warp size)
    "gfx90a": ("hip", "gfx90a", 64), "gfx942": ("hip", "gfx942", 64), "gfx950": ("hip", "gfx950", 64),
    "gfx1100": ("hip", "gfx1100", 32), "gfx1201": ("hip", "gfx1201", 32), "sm_90a": ("cuda", 90, 32),
}
# Shared memory (LDS) a block may have, bytes: a kernel needing more would only
# fail at its first launch, so build.py refuses it.
MAX_SHARED = {"gfx90a": 65536, "gfx942": 65536, "gfx950": 163840, "gfx1100": 65536, "gfx1201": 65536,
              "sm_90a": 232448}
# The fp8 format of each target's matrix cores: MI300's FNUZ encoding on gfx942,
# OCP e4m3fn on gfx950, RDNA 4 and Hopper; none on gfx90a and RDNA 3.
FP8 = {"gfx942": "e4m3fnuz", "gfx950": "e4m3fn", "gfx1201": "e4m3fn", "sm_90a": "e4m3fn"}
TRITON_DTYPE = {"bf16": "bf16", "f16": "fp16", "i8": "i8", "e4m3fn": "fp8e4nv", "e4m3fnuz": "fp8e4b8"}


@dataclass
class AotKernel:
    op: str          # the manifest's op column (the C op that launches it)
    variant: str     # the manifest's variant column
    stem: str        # the code object's file name before ".<target>.<cubin|hsaco>"
    source: str      # the Triton source module in this folder ("gemm" for gemm.py)
    fn: str          # its @triton.jit function
    arguments: tuple  # (name, Triton type) of the run-time arguments, in order
    constants: dict  # constexpr name: value
    warps: int
    stages: int
    aligned: tuple = field(default_factory=tuple)  # arguments promised 16-divisible (pointers: 16-byte aligned)


def is_nvidia(target):
    return TARGETS[target][0] == "cuda"
