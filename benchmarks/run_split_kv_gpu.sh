#!/bin/bash
# The split-KV decode measurements of docs/performance_attention.md and
# docs/performance_mla.md ("fused merge" sections) in one GPU call, from the
# repository root: build the decode and MLA code objects, run their GPU tests,
# compute-sanitizer memcheck and racecheck over the split-KV tests, the decode
# and MLA benchmarks (peers and copy in the same run), the split-KV sweep
# (benchmarks/sweep_split_kv.py: the three ways of merging paged decode's splits,
# MLA's split counts), and Nsight Compute over the B1 ctx 32768 cases.  Logs go to
# $OUT (or ./out).  Every step has its own time limit, so that one failing or
# slow step leaves the later ones their turn.
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
rm -rf build
step 150 build bash -c "meson setup build -Dgpu_targets=sm_90a -Djax=disabled -Dtests=false \
  -Dgpu_kernels=attention_decode,attention_decode_mma,mla,mla_mma,kv_cache >/dev/null && ninja -C build >/dev/null" \
  2>&1 | tail -20 | tee -a "$log"
. tools/gpu_env.sh
git log --oneline -1 2>/dev/null | tee -a "$log"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee -a "$log"
step 80 tests python3 -m pytest -q --no-header -p no:cacheprovider -m gpu -k decode \
  tests/python/test_attention.py tests/python/test_attention_split.py tests/python/test_mla.py 2>&1 \
  | tee "$OUT/tests.log" | tail -6 | tee -a "$log"
step 70 bench-decode python3 benchmarks/bench_attention.py --only decode --json "$OUT/bench_decode.json" 2>&1 \
  | tee -a "$log"
step 20 sweep-decode python3 benchmarks/sweep_split_kv.py decode 2>&1 | grep -v "^#" | tee -a "$log"
step 40 sweep-mla python3 benchmarks/sweep_split_kv.py mla --splits 0,32,64,96,128 2>&1 | tee -a "$log"
step 40 bench-mla python3 benchmarks/bench_mla.py --kinds split-KV --json "$OUT/bench_mla.json" 2>&1 \
  | tee -a "$log"
step 45 ncu ncu --kernel-name regex:aiter --metrics \
  gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size \
  python3 benchmarks/sweep_split_kv.py profile > "$OUT/ncu.log" 2>&1
grep -E "aiter_|gpu__time|dram__bytes|dram__thr|launch__grid" "$OUT/ncu.log" | sed 's/  */ /g' | tail -80 | tee -a "$log"
export SANITIZER_SHARDS=4 SANITIZER_TIMEOUT=60
step 70 memcheck tools/gpu_sanitizer.sh memcheck -k "split_decode or tensor_cores or graph_replay or split_counts" \
  tests/python/test_attention_split.py tests/python/test_mla.py 2>&1 | tail -14 | tee -a "$log"
SANITIZER_TIMEOUT=45 step 55 racecheck tools/gpu_sanitizer.sh racecheck -k "(split_decode and not fp8) or (tensor_cores and bfloat16 and same) or split_counts" \
  tests/python/test_attention_split.py tests/python/test_mla.py 2>&1 | tail -14 | tee -a "$log"
