#!/bin/bash
# The vendor-BLAS GEMM measurements of docs/performance_gemm.md (issue 35 items
# 4-5) in one GPU call, from the repository root.  Logs go to $OUT (or ./out);
# every step has its own time limit, so one failing or slow step leaves the
# later ones their turn.
#
#   CUBINS=DIR     code objects built beforehand (kernels/ of a build with
#                  -Dgpu_targets=sm_90a; carried along): only the CPU library is
#                  built here.  Without it the $GEMM_FAMILIES are compiled here
#                  (gemm_wgmma_ws alone takes about 5 min of one core).
#   STEPS=...      which steps, in this order (default: all but blockscale):
#                  fp8         the untuned fp8 sweep, sides $FP8_SIDES (ours,own,vendor)
#                              at M = $FP8_M (all 14), against torch._scaled_mm rowwise
#                  tests       test_gemm_vendor.py and test_gemm_gpu.py -k "$GEMM_GPU_K" (heuristic)
#                  bf16        the untuned bf16 sweep, side ours, against F.linear
#                  blockscale  DeepSeek-V3 block-scaled, cuBLASLt forced (both a_scale
#                              layouts), against F.scaled_mm
set -o pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
STEPS=" ${STEPS:-fp8 tests bf16} "
log=$OUT/main.log
step() {  # step SECONDS NAME command...: runs it, logs its time and status
  local limit=$1 name=$2 start=$SECONDS
  shift 2
  echo "=== $name ($(date -u +%H:%M:%S))" | tee -a "$log"
  timeout "$limit" "$@"
  echo "=== $name: status $?, $((SECONDS - start)) s" | tee -a "$log"
}
wants() { [[ $STEPS == *" $1 "* ]]; }

if [ -n "$CUBINS" ]; then
  targets="-Dgpu_targets=none"
  export AITER_KERNEL_PATH=$PWD/$CUBINS
else
  targets="-Dgpu_targets=sm_90a -Dgpu_kernels=${GEMM_FAMILIES:-gemm_generic,gemm_skinny,gemm_tiled,quant}"
fi
step "${BUILD_LIMIT:-480}" build bash -c "meson setup build $targets -Djax=disabled -Dtests=false >/dev/null \
  && ninja -C build >/dev/null" 2>&1 | tail -20 | tee -a "$log"
. tools/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee -a "$log"
python3 -c 'import torch, ctypes; v = ctypes.CDLL("libcublasLt.so.13").cublasLtGetVersion(); print("torch", torch.__version__, "cuBLASLt", v)' | tee -a "$log"

untuned="python3 benchmarks/bench_gemm_untuned.py --reps ${REPS:-9}"
pytest="python3 -m pytest -q -m gpu --no-header -p no:cacheprovider -rf"
if wants fp8; then
  step "${FP8_LIMIT:-200}" fp8 $untuned --kinds fp8 --sides "${FP8_SIDES:-ours,own,vendor}" \
    ${FP8_M:+--m $FP8_M} --json "$OUT/fp8.json" 2>&1 | tee "$OUT/fp8.log" | tail -8 | tee -a "$log"
fi
if wants tests; then
  step 120 tests-vendor $pytest tests/python/test_gemm_vendor.py 2>&1 | tee "$OUT/tests.log" | tail -15 | tee -a "$log"
  step 120 tests-heuristic $pytest tests/python/test_gemm_gpu.py -k "${GEMM_GPU_K:-heuristic}" 2>&1 | tee -a "$OUT/tests.log" \
    | tail -10 | tee -a "$log"
fi
if wants bf16; then
  step "${BF16_LIMIT:-120}" bf16 $untuned --kinds bf16 --sides ours --json "$OUT/bf16.json" 2>&1 \
    | tee "$OUT/bf16.log" | tail -6 | tee -a "$log"
fi
if wants blockscale; then
  step 60 blockscale $untuned --no-small-llama --kinds blockscale --models deepseek-v3 \
    --m 256,512,1024,2048,4096,8192 --sides vendor,vendor-col --json "$OUT/bs.json" 2>&1 | tee "$OUT/bs.log" \
    | tail -8 | tee -a "$log"
fi
