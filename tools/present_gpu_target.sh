#!/usr/bin/env bash
# Prints the one GPU code-object target this machine's GPU runs (-Dgpu_targets=...),
# or "none" where there is no GPU (or none that libaiter builds for), so that the
# demo's install compiles only what can run here: a full build of every target
# takes tens of minutes on a small machine.
#   NVIDIA: compute capability 9.0 -> sm_90a, 8.x -> sm_80 (cubins run within
#   their major version only); AMD: the gfx name rocminfo reports, where built.
set -uo pipefail
if command -v nvidia-smi >/dev/null 2>&1; then
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' ')
  case "$cap" in
    9.0) echo sm_90a; exit 0 ;;
    8.*) echo sm_80; exit 0 ;;
  esac
fi
if command -v rocminfo >/dev/null 2>&1; then
  gfx=$(rocminfo 2>/dev/null | grep -o -m1 -E 'gfx[0-9a-f]+')
  case "$gfx" in
    gfx90a | gfx942 | gfx950 | gfx1100 | gfx1201) echo "$gfx"; exit 0 ;;
  esac
fi
echo none
