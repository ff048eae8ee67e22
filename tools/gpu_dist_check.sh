#!/bin/bash
# The multi-GPU checks of aiter.dist (issue 36) in one call on a machine of 4
# GPUs: benchmarks/bench_allreduce.py for 2 ranks (a failure there ends the call
# early, sparing the device time of the rest), then for 4 ranks (with the fused
# op's kernels forced as well: its two-shot kernel is for 4 ranks and more), then
# the multi-GPU tests with 2 and 4 ranks; logs under $OUT.  NVLink multicast
# stays off (KINDS.md).
#
# usage, from the repository root on the GPU machine: tools/gpu_dist_check.sh
# It uses a build carried in build-dist-gpu/ (build/: libaiter.so.0, _cdef.h and
# the code objects; src/: the sources it was built from) where there is one, so
# that the call spends no minutes compiling and runs the committed sources even
# where the working tree holds others' unfinished work; else it builds here with
# the allreduce and norm kernel families only.  To make it (here, with nvcc):
#   meson setup B -Dgpu_targets=sm_90a -Dgpu_kernels=allreduce,norm -Djax=disabled -Dtests=false
#   ninja -C B; mkdir -p build-dist-gpu/build/kernels build-dist-gpu/src
#   cp -a B/libaiter.so* B/_cdef.h B/configs build-dist-gpu/build/
#   cp B/kernels/*.cubin B/kernels/manifest.tsv build-dist-gpu/build/kernels/
#   git ls-files python tests/python pyproject.toml tools/gpu_dist_check.sh \
#     benchmarks/bench_allreduce.py | tar -cf - -T - | tar -xf - -C build-dist-gpu/src
# and pass carry ["build-dist-gpu", ".wheels"].  Measured on 4 H100s
# (2026-11-27): the tests' checks took about 100 s for each world size, the
# benchmark about 35 s; give the call about 8 minutes with the machine's start.
set -o pipefail
OUT=${OUT:-/tmp/gpu-dist-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
ROOT=$PWD

# A step in its own process group, killed whole (spawned ranks included) after $1 seconds.
step() {
  local limit=$1
  shift
  setsid "$@" &
  local pid=$!
  # (no output to the step's pipe: a sleeper holding it open would hold the pipeline)
  (sleep "$limit" && kill -KILL -"$pid" 2>/dev/null && echo "KILLED after ${limit}s: $*" >>"$OUT/killed.log") \
    </dev/null >/dev/null 2>&1 &
  local watch=$!
  wait "$pid"
  local rc=$?
  kill "$watch" 2>/dev/null
  return $rc
}

{ nvidia-smi; nvidia-smi topo -m; date -u; } >"$OUT/machine.log" 2>&1
if [ -f build-dist-gpu/build/libaiter.so.0 ]; then
  SRC=$ROOT/build-dist-gpu/src BUILD=$ROOT/build-dist-gpu/build
else
  SRC=$ROOT BUILD=$ROOT/build
  { meson setup build -Dgpu_targets=sm_90a -Dgpu_kernels=allreduce,norm -Djax=disabled -Dtests=false &&
    ninja -C build; } >"$OUT/build.log" 2>&1 || { echo "build failed"; tail -30 "$OUT/build.log"; exit 1; }
fi
if ! python3 -c 'import cffi' 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/aiter-site "$ROOT"/.wheels/*.whl || exit 1
  export PYTHONPATH=/tmp/aiter-site
fi
export PYTHONPATH=$SRC/python${PYTHONPATH:+:$PYTHONPATH} AITER_LIBRARY=$BUILD/libaiter.so.0
cd "$SRC" || exit 1
python3 -c 'import torch, aiter; print(aiter.library_path, torch.__version__, torch.cuda.device_count(), "GPUs, NCCL", torch.cuda.nccl.version())' 2>&1 | tee -a "$OUT/machine.log"

step 90 python3 benchmarks/bench_allreduce.py --world 2 --json "$OUT/bench2.json" 2>&1 |
  tee "$OUT/bench.log"
grep -q "^## 2 x" "$OUT/bench.log" || { echo "the 2-rank benchmark failed: no more steps"; exit 1; }
step 120 python3 benchmarks/bench_allreduce.py --world 4 --fused-forced --json "$OUT/bench4.json" 2>&1 |
  tee -a "$OUT/bench.log"
step 280 python3 -m pytest -q -m gpu -s -rA tests/python/test_dist.py 2>&1 | tee "$OUT/test.log"
exit 0
