#!/bin/bash
# Benchmark, not a test: issue 11's memory fitting, vcpuplace against Nova on the same seeded
# trace (tests/bench/memory_fit.py), on two synthetic hosts of 2 nodes x 16 cores x 2
# threads: 64 GB per node (about the trace's 2 GiB per vCPU: CPUs bind first) and 32 GB per
# node (memory binds first). Prints the figures; writes JSON to --out (default
# $VP_BENCH_OUT). About 4 minutes here (the Nova baseline is most of it).
#
#   tests/bench/memory-fit.sh [--out FILE.json] [--seed N] [--churn N]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${VP_BUILDDIR:-$top/build}
out=${VP_BENCH_OUT:-}
seed=7451
churn=3000
while [ $# -gt 0 ]; do
  case $1 in
  --out) out=$2; shift 2 ;;
  --seed) seed=$2; shift 2 ;;
  --churn) churn=$2; shift 2 ;;
  *) echo "usage: $0 [--out FILE.json] [--seed N] [--churn N]" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { echo "memory-fit.sh: --out or VP_BENCH_OUT is needed" >&2; exit 2; }
[ -x "$build/plugin/cli/vcpuplace" ] || { echo "SKIP: $build/plugin/cli/vcpuplace not built"; exit 77; }
/usr/bin/python3 -c 'import nova' 2>/dev/null ||
  { echo "SKIP: Debian's python3-nova is not installed (the Nova baseline)"; exit 77; }
work=$(mktemp -d /tmp/memory-fit.XXXXXX)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$top/tests/bench/memory_fit.py" --vcpuplace "$build/plugin/cli/vcpuplace" \
  --work "$work" --out "$out" --seed "$seed" --churn "$churn" \
  "synthetic:pack:2 [numa(memory=64GB)] l3:2 core:8 pu:2" \
  "synthetic:pack:2 [numa(memory=32GB)] l3:2 core:8 pu:2"
