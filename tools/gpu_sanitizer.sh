#!/usr/bin/env bash
# The GPU suite under NVIDIA's compute-sanitizer, on a machine with an NVIDIA GPU
# and a build tree (meson setup build -Dgpu_targets=sm_90a && ninja -C build):
#   tools/gpu_sanitizer.sh TOOL [PYTEST ARGS...]
# TOOL is memcheck, racecheck, initcheck or synccheck; the pytest arguments pick
# the tests (default: every GPU test); any report fails the run.  The log goes to
# $OUT/sanitizer_TOOL.log (default ./gpu-results).
# SANITIZER_SHARDS=N (default 1) runs N sanitizer processes side by side, each
# over every N-th test (AITER_TEST_SHARD in tests/python/conftest.py): each pytest
# is the sanitizer's own direct child, so every test is surely instrumented.
# SANITIZER_TIMEOUT=S (default none) stops each shard after S seconds and still
# collects what the shards reported up to then.
set -uo pipefail
cd "$(dirname "$0")/.."
tool=${1:?usage: tools/gpu_sanitizer.sh memcheck|racecheck|initcheck|synccheck [pytest args]}
shift
out=${OUT:-$PWD/gpu-results}
mkdir -p "$out"
. tools/gpu_env.sh
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(tests/python)
shards=${SANITIZER_SHARDS:-1}
logs=$(mktemp -d /tmp/aiter-sanitizer.XXXXXX)  # one sanitizer log and one pytest log a shard
extra=()
[ "$tool" = racecheck ] && extra=(--racecheck-report all)
# Without PyTorch's caching allocator every tensor is its own allocation, so the
# sanitizer sees the exact bounds of each (and shards do not hoard GPU memory).
export PYTORCH_NO_CUDA_MEMORY_CACHING=1
pids=()
for ((i = 0; i < shards; i++)); do
  AITER_TEST_SHARD=$i/$shards timeout "${SANITIZER_TIMEOUT:-0}" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 86 \
    --print-limit 50 --log-file "$logs/sanitizer.$i.log" \
    python3 -m pytest -q -p no:cacheprovider -m gpu "${tests[@]}" >"$logs/pytest.$i.log" 2>&1 &
  pids+=($!)
done
status=0
for ((i = 0; i < shards; i++)); do
  wait "${pids[$i]}" || status=$?
  { echo "== shard $i/$shards: pytest"; grep -E "^(FAILED|ERROR) |^E  " "$logs/pytest.$i.log" | head -60
    tail -3 "$logs/pytest.$i.log"
    echo "== shard $i/$shards: $tool"; cat "$logs/sanitizer.$i.log"; } >> "$out/sanitizer_${tool}.log"
done
# One summary line per shard: "ERROR SUMMARY: N errors" (racecheck: "RACECHECK SUMMARY").
echo "== $tool: shards by their summary line" | tee -a "$out/sanitizer_${tool}.log"
grep -h "SUMMARY" "$logs"/sanitizer.*.log | sort | uniq -c | tee -a "$out/sanitizer_${tool}.log"
grep -h -E "^[0-9]+ (passed|failed)|passed|failed" "$logs"/pytest.*.log | tail -n "$shards" | tee -a "$out/sanitizer_${tool}.log"
exit "$status"
