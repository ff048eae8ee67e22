#!/bin/bash
# The vendor-BLAS GEMM measurements of docs/performance_gemm.md ("cuBLASLt
# block scales and outer-vector fp8") in one GPU call, from the repository root:
# build the GEMM code objects, probe what cuBLASLt accepts, run the vendor and
# GPU GEMM tests, time block-scaled fp8 (DeepSeek-V3 shapes) with the tuned
# table, cuBLASLt forced and F.scaled_mm, tune those shapes at M >= 1024 with
# the cuBLASLt variants among the candidates, time the tuned result, and sweep
# the untuned fp8 shapes against torch._scaled_mm.  Logs go to $OUT (or ./out).
# Every step has its own time limit, so that one failing or slow step leaves the
# later ones their turn.  The build alone took over 200 s on the H100 machine's
# 16 cores (09:02 UTC, 2026-11-27: cut off there, so that run timed cuBLASLt
# only); the vendor variants need no code objects, the comparisons with
# libaiter's own kernels do.
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
step 480 build bash -c "meson setup build -Dgpu_targets=sm_90a -Djax=disabled -Dtests=false \
  -Dgpu_kernels=gemm_generic,gemm_skinny,gemm_tiled,gemm_wgmma,gemm_wgmma_ws >/dev/null && ninja -C build >/dev/null" \
  2>&1 | tail -20 | tee -a "$log"
. tools/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee -a "$log"
python3 -c 'import torch, ctypes; v = ctypes.CDLL("libcublasLt.so.13").cublasLtGetVersion(); print("torch", torch.__version__, "cuBLASLt", v)' | tee -a "$log"
step 40 probe env CUBLASLT_LOG_MASK=5 CUBLASLT_LOG_FILE=/tmp/cublaslt.log python3 benchmarks/bench_gemm_untuned.py \
  --probe-fp8 2>&1 | tee -a "$log"
echo "=== cuBLASLt's log of the probe, distinct lines without their time stamps" | tee -a "$log"
sed 's/^\[[^]]*\]//' /tmp/cublaslt.log 2>/dev/null | sort | uniq -c | sort -rn | head -40 | cut -c1-400 | tee -a "$log"
step 60 tests python3 -m pytest -q --no-header -p no:cacheprovider tests/python/test_gemm_vendor.py 2>&1 \
  | tee "$OUT/tests.log" | tail -15 | tee -a "$log"
step 50 bench-blockscale python3 benchmarks/bench_gemm_untuned.py --kinds blockscale --models deepseek-v3 \
  --no-small-llama --m 128,256,512,1024,2048,4096,8192 --sides ours,vendor --reps 5 --json "$OUT/bench_bs.json" \
  2>&1 | tail -8 | tee -a "$log"
step 70 tune python3 -m aiter tune --device cuda --op gemm_a8w8_blockscale --m 1024,2048,4096,8192 --out "$OUT/tuned_bs.csv" \
  --log-dir /tmp/tune_logs 2>&1 | tee -a "$log"
cat /tmp/tune_logs/*tuning* > "$OUT/tune_detail.log" 2>/dev/null
step 25 bench-blockscale-tuned env AITER_CONFIG_PATH="$OUT/tuned_bs.csv" python3 benchmarks/bench_gemm_untuned.py \
  --kinds blockscale --models deepseek-v3 --no-small-llama --m 1024,2048,4096,8192 --sides ours --reps 5 \
  --json "$OUT/bench_bs_tuned.json" 2>&1 | tail -6 | tee -a "$log"
step 60 tests-gpu python3 -m pytest -q -m gpu --no-header -p no:cacheprovider tests/python/test_gemm_gpu.py 2>&1 \
  | tee -a "$OUT/tests.log" | tail -8 | tee -a "$log"
step 150 untuned-fp8 python3 benchmarks/bench_gemm_untuned.py --kinds fp8 --sides ours,vendor --reps 5 \
  --json "$OUT/untuned_fp8.json" 2>&1 | tee "$OUT/untuned_fp8.log" | tail -12 | tee -a "$log"
