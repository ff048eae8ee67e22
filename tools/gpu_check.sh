#!/usr/bin/env bash
# Runs libaiter's GPU tests and benchmarks on a machine with an NVIDIA GPU, from
# a build tree made elsewhere (meson setup build && ninja -C build).
#   tools/gpu_check.sh [tests|bench|all]     results also go to $OUT (default ./gpu-results)
# Needs python3 with torch (the peers and the test arrays), numpy and ml_dtypes;
# cffi and pycparser come from wheels in .wheels/ when python3 lacks them.
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
out=${OUT:-$PWD/gpu-results}
mkdir -p "$out"
. tools/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
python3 -m aiter info | tee -a "$out/gpu.txt"
status=0
if [ "$what" != bench ]; then
  python3 -m pytest -q -m gpu -p no:cacheprovider tests/python 2>&1 | tee "$out/pytest_gpu.log" | tail -40
  status=${PIPESTATUS[0]}
fi
if [ "$what" != tests ]; then
  python3 benchmarks/bench_memory_ops.py --json "$out/bench_memory_ops.json" --markdown "$out/bench_memory_ops.md" ${BENCH_ARGS:-} 2>&1 | tee "$out/bench_memory_ops.txt"
fi
exit $status
