#!/usr/bin/env bash
# The GPU suite under NVIDIA's compute-sanitizer, on a machine with an NVIDIA GPU
# and a build tree (meson setup build -Dgpu_targets=sm_90a && ninja -C build):
#   tools/gpu_sanitizer.sh TOOL [PYTEST ARGS...]
# TOOL is memcheck, racecheck, initcheck or synccheck; the pytest arguments pick
# the tests (default: every GPU test); any report fails the run.  The log goes to
# $OUT/sanitizer_TOOL.log (default ./gpu-results).
set -uo pipefail
cd "$(dirname "$0")/.."
tool=${1:?usage: tools/gpu_sanitizer.sh memcheck|racecheck|initcheck|synccheck [pytest args]}
shift
out=${OUT:-$PWD/gpu-results}
mkdir -p "$out"
. tools/gpu_env.sh
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(tests/python)
# SANITIZER_WORKERS=N runs the tests in N pytest-xdist workers.  Off by default:
# in the one such run made (H100, 2026-11-26) the sanitizer wrote a summary for one
# process only, so whether it followed the workers is unproven.
workers=()
[ "${SANITIZER_WORKERS:-0}" -gt 0 ] && workers=(-n "$SANITIZER_WORKERS")
logs=$(mktemp -d /tmp/aiter-sanitizer.XXXXXX)  # one log a process
extra=()
[ "$tool" = racecheck ] && extra=(--racecheck-report all)
compute-sanitizer --tool "$tool" "${extra[@]}" --target-processes all --error-exitcode 86 \
  --print-limit 50 --log-file "$logs/%p.log" \
  python3 -m pytest -q -p no:cacheprovider -m gpu "${workers[@]}" "${tests[@]}" 2>&1 | tee "$out/sanitizer_${tool}.log"
status=${PIPESTATUS[0]}
cat "$logs"/*.log >> "$out/sanitizer_${tool}.log"
# One summary line per process: "ERROR SUMMARY: N errors".
echo "== $tool: processes by their summary line"
grep -h "ERROR SUMMARY" "$logs"/*.log | sort | uniq -c
exit "$status"
