#!/bin/bash
# Benchmark, not a test: issue 16's cost of core scheduling. Tenants (tests/guest/costload.c)
# run in the guest tier's SCHED_CORE kernel under QEMU TCG, 4 cores x 2 threads, in the
# configurations a (no cookies, floating), b (a cookie per tenant, floating), c and c-pack
# (a cookie per tenant, pinned by vcpuplace's own placer with smt=spread / smt=pack), d (SMT
# off) and e (two tenants one trust group, one cookie, placed by vcpuplace), alternated.
# The pins come from `vcpuplace plan` on the guest's topology, one domain XML per tenant,
# in turn against a ledger (tests/bench/coresched_cost.py plan); the guest checks that its
# sibling sets are the ones planned for.
#
# Two boots: with -icount shift=auto,sleep=off (the lead figures) and plain multi-threaded
# TCG (the distorted ones, beside them). Writes JSON to --out (default $VP_BENCH_OUT) and,
# beside it with the same name, .png (the chart) and .md (the report section); the console
# logs stay in --workdir (default: a temporary directory, removed). 6 to 11 minutes here,
# with the host's load.
#
#   tests/bench/coresched-cost.sh [--out FILE.json] [--runs N] [--seconds S]
#                                 [--tenants 4,2,1,1] [--chunk N] [--workdir DIR]
#   tests/bench/coresched-cost.sh --check [--workdir DIR]
# --check: the guest tier's short version (ctest guest-coresched-cost): tenants 4,2,2 (whole
# cores, so that the placer can keep every core inside one cookie), b and c only, 2 runs of
# 2 s, and guest-costload fails unless c forced less idle than b. Writes nothing but the
# work directory.
#
# Boots QEMU: on a shared machine run it under the guest tier's lock
# (flock /tmp/vp-guest.lock). Environment: VP_BUILDDIR (default ./build).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${VP_BUILDDIR:-$top/build}
command="tests/bench/coresched-cost.sh${*:+ $*}"
out=${VP_BENCH_OUT:-}
runs=5
seconds=3
tenants=4,2,1,1
workdir=
check=0
topology="synthetic:pack:1 core:4 pu:2"
cores=4
threads=2
chunk=10000

die() {
    echo "coresched-cost: $*" >&2
    exit 1
}

while [ $# -gt 0 ]; do
    case $1 in
    --out) out=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --tenants) tenants=$2; shift 2 ;;
    --chunk) chunk=$2; shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    --check) check=1; shift ;;
    *) die "unknown argument '$1'" ;;
    esac
done
for n in "$runs" "$seconds" "$chunk"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || die "'$n' is not a positive number"
done
[[ $tenants =~ ^[1-9][0-9]*(,[1-9][0-9]*)+$ ]] || die "--tenants '$tenants': N,N,... (two or more)"
if ! command -v qemu-system-x86_64 >/dev/null; then
    echo "SKIP: qemu-system-x86_64 not found (qemu-system-x86)"
    exit 77
fi
if [ $check -eq 1 ]; then
    if [ -z "${VP_COST_TRY:-}" ]; then tenants=4,2,2; runs=2; seconds=2; fi
    out=
elif [ -z "$out" ]; then
    die "--out FILE.json is needed (or VP_BENCH_OUT)"
fi

if [ -z "$workdir" ]; then
    workdir=$(mktemp -d)
    trap 'rm -rf "$workdir"' EXIT
fi
mkdir -p "$workdir"
start=$(date +%s)
# The ctest runs after the build; the benchmark builds what it needs.
[ $check -eq 1 ] || ninja -C "$build" vcpuplace guest-costload >/dev/null
for bin in "$build/plugin/cli/vcpuplace" "$build/tests/guest/guest-costload"; do
    [ -x "$bin" ] || die "$bin is not built"
done
export PYTHONDONTWRITEBYTECODE=1
words=$(/usr/bin/python3 "$top/tests/bench/coresched_cost.py" plan \
    --vcpuplace "$build/plugin/cli/vcpuplace" --topology "$topology" --tenants "$tenants" \
    --work "$workdir/plan")
siblings=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["siblings"])' \
    "$workdir/plan/plan.json")

append="vp.cost=--tenants=$tenants vp.cost=--seconds=$seconds vp.cost=--runs=$runs"
append+=" vp.cost=--chunk=$chunk vp.cost=--siblings=$siblings"
if [ $check -eq 1 ]; then
    append+=" vp.cost=--fewer-forceidle=b,c"
    words=$(grep -E '^(b|c):' <<<"$words")
fi
for w in $words; do append+=" vp.cost=$w"; done
nconfigs=$(wc -w <<<"$words")
# Boot and kernel start about 30 s here; each configuration's run its span, the warm-up
# and the tenants' start; four times that for a loaded host (icount's guest slows down
# with the host: a 5 x 6 x 3 s boot took 187 s at a load of 5 and over 360 s at 7).
limit=$((120 + 4 * runs * nconfigs * (seconds + 2)))

boot() { # MODE [--icount auto]
    local mode=$1
    shift
    echo "coresched-cost: $mode: $nconfigs configurations x $runs runs x $seconds s" >&2
    "$top/scripts/guest-run" --mode cost --cores $cores --threads $threads --timeout $limit \
        --workdir "$workdir/$mode" --append "$append" "$@" "$build/tests/guest/guest-costload" \
        >"$workdir/$mode.txt"
}

if [ $check -eq 1 ]; then
    boot icount --icount auto
    cat "$workdir/icount.txt"
    exit 0
fi
rc=0
boot icount --icount auto || rc=$?
boot plain || rc=$?
[ $rc -eq 0 ] || echo "coresched-cost: a guest check failed (its lines are in the JSON's logs)" >&2
cat >"$workdir/meta.json" <<EOF
{"smp": "-smp $((cores * threads)),sockets=1,cores=$cores,threads=$threads", "runs": $runs,
 "seconds": $seconds, "chunk": $chunk, "wall_s": $(($(date +%s) - start)),
 "guest_checks_passed": $([ $rc -eq 0 ] && echo true || echo false)}
EOF
stem=${out%.json}
mkdir -p "$(dirname "$out")"
/usr/bin/python3 "$top/tests/bench/coresched_cost.py" report --plan "$workdir/plan/plan.json" \
    --log "icount=$workdir/icount/console.log" --log "plain=$workdir/plain/console.log" \
    --lead icount --meta "$workdir/meta.json" --out "$out" --chart "$stem.png" \
    --section "$stem.md" --command "$command"
cat "$stem.md"
exit $rc
