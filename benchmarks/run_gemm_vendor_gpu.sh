#!/bin/bash
# The vendor-BLAS GEMM measurements of docs/performance_gemm.md ("cuBLASLt
# block scales and outer-vector fp8", the 2026-11-27 runs) in one GPU call, from
# the repository root: build the CPU library with the cheap GEMM code objects
# ($GEMM_FAMILIES; never gemm_wgmma / gemm_wgmma_ws: their compile alone takes
# about 5 min), time cuBLASLt forced against its peers (block-scaled DeepSeek-V3
# shapes with a_scale row- and column-major against F.scaled_mm; the untuned fp8
# shapes at M = $FP8_M against torch._scaled_mm rowwise), then run the vendor
# tests and the block-scaled tests of the built kernels (both a_scale layouts).
# libaiter's own tiles are not built here: their numbers come from earlier runs.
# Logs go to $OUT (or ./out).  Every step has its own time limit, so that one
# failing or slow step leaves the later ones their turn.
set -o pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
log=$OUT/main.log
step() {  # step SECONDS NAME command...: runs it, logs its time and status
  local limit=$1 name=$2 start=$SECONDS
  shift 2
  echo "=== $name ($(date -u +%H:%M:%S))" | tee -a "$log"
  timeout "$limit" "$@"
  echo "=== $name: status $?, $((SECONDS - start)) s" | tee -a "$log"
}
step 120 build bash -c "meson setup build -Dgpu_targets=sm_90a -Djax=disabled -Dtests=false \
  -Dgpu_kernels=${GEMM_FAMILIES:-gemm_generic,gemm_skinny,gemm_tiled,quant} >/dev/null && ninja -C build >/dev/null" \
  2>&1 | tail -20 | tee -a "$log"
. tools/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee -a "$log"
python3 -c 'import torch, ctypes; v = ctypes.CDLL("libcublasLt.so.13").cublasLtGetVersion(); print("torch", torch.__version__, "cuBLASLt", v)' | tee -a "$log"
untuned="python3 benchmarks/bench_gemm_untuned.py --no-small-llama --reps 5"
step 60 bench-blockscale $untuned --kinds blockscale --models deepseek-v3 --m 256,512,1024,2048,4096,8192 \
  --sides vendor,vendor-col --json "$OUT/bench_bs.json" 2>&1 | tee "$OUT/bench_bs.log" | tail -8 | tee -a "$log"
pytest="python3 -m pytest -q -m gpu --no-header -p no:cacheprovider"
step 60 tests-vendor $pytest tests/python/test_gemm_vendor.py ${VENDOR_TESTS:+-k "$VENDOR_TESTS"} 2>&1 | tee "$OUT/tests.log" | tail -15 | tee -a "$log"
step 100 fp8-vendor $untuned --kinds fp8 --m ${FP8_M:-16,64,256,1024,4096} --sides vendor --json "$OUT/fp8_vendor.json" \
  2>&1 | tee "$OUT/fp8_vendor.log" | tail -6 | tee -a "$log"
step 60 tests-blockscale $pytest tests/python/test_gemm_gpu.py -k "blockscale_variant and (generic or skinny or tiled)" \
  2>&1 | tee -a "$OUT/tests.log" | tail -8 | tee -a "$log"
