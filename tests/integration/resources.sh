#!/bin/bash
# vcpuplaced with 500 managed vCPU threads: libvirt's test driver runs ten 50-vCPU domains,
# and ten vp-vcputhreads processes stand in for their QEMUs with 500 real threads (the
# test driver has no processes; the monitor, cookies and status need real thread ids).
# The daemon finds them as it finds QEMU's: pidfiles in qemu_run_dir, -name on the command
# line, "CPU N/KVM" thread names.
#
#  1. With a generous RLIMIT_NOFILE (the unit's LimitNOFILE=65536, or the hard limit when
#     lower): all ten domains placed
#     and pinned, all 500 threads measured; the daemon's descriptors and memory after ten
#     sampling intervals are printed and held to the budget below.
#  2. With RLIMIT_NOFILE=256, far too few for 500 threads: monitoring degrades (counters
#     left out or read the slow way, the reason logged) and placement does not: the ten
#     domains are reconciled, a new domain is placed through the hook and written to the
#     ledger, and the socket keeps answering.
#
# Budget: 8 descriptors per thread (the monitor's most: schedstat, sched, 4 perf software,
# 2 hardware) plus 64 for the rest; 64 MiB resident.
# Needs root (the daemon answers root peers only); exits 77 otherwise.
set -euo pipefail
build=${VP_BUILDDIR:?VP_BUILDDIR must name the build directory}
daemon=$build/plugin/daemon/vcpuplaced
hook=$build/plugin/hook/vcpuplace-hook
cli=$build/plugin/cli/vcpuplace
threads=$build/tests/integration/vp-vcputhreads
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (vcpuplaced answers root peers only)"; exit 77; }
for b in "$daemon" "$hook" "$cli" "$threads"; do
    [ -x "$b" ] || { echo "FAIL: $b not built" >&2; exit 1; }
done

ndom=10 per=50
nthreads=$((ndom * per))
fd_budget=$((8 * nthreads + 64))
rss_budget_kb=$((64 * 1024))

tmp=$(mktemp -d /tmp/vp-resources.XXXXXX)
pid=
helpers=()
checks=0
cleanup() {
    local rc=$? p
    set +e
    [ -z "$pid" ] || { kill "$pid"; wait "$pid"; } 2>/dev/null
    for p in "${helpers[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    if [ $rc -ne 0 ] && [ -f "$tmp/daemon.log" ]; then
        echo "--- vcpuplaced log"
        grep -v 'measuring' "$tmp/daemon.log" | tail -n 20
    fi
    rm -rf "$tmp"
    [ $rc -ne 0 ] || echo "resources: $checks checks passed"
    exit $rc
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { checks=$((checks + 1)); echo "ok $checks - $*"; }
wait_for() { # seconds command...
    local end=$((SECONDS + $1))
    shift
    until "$@"; do
        [ $SECONDS -lt $end ] || return 1
        sleep 0.2
    done
}

# The test driver's node: 512 PUs, ten running domains.
policy="<metadata><vcpuplace:policy xmlns:vcpuplace='http://vcpuplace.org/xmlns/policy/1.0' smt='spread'/></metadata>"
{
    echo "<node><cpu><mhz>2450</mhz><model>x86_64</model><nodes>8</nodes><sockets>1</sockets>"
    echo "<cores>32</cores><threads>2</threads><active>512</active></cpu><memory>1073741824</memory>"
    for ((i = 0; i < ndom; i++)); do
        echo "<domain type='test'><name>vm-$i</name><memory>65536</memory><vcpu>$per</vcpu>"
        echo "<os><type>hvm</type></os>$policy</domain>"
    done
    echo "</node>"
} >"$tmp/node.xml"
mkdir "$tmp/run"
for ((i = 0; i < ndom; i++)); do
    "$threads" "$tmp/run/vm-$i.pid" "$per" -name "guest=vm-$i,debug-threads=on" &
    helpers+=($!)
done
pidfiles() { test "$(find "$tmp/run" -name '*.pid' | wc -l)" = "$ndom"; }
wait_for 20 pidfiles || fail "thread helpers did not start"

conf=$tmp/vcpuplaced.conf
cat >"$conf" <<EOF
[daemon]
mode=enforce
adopt_running=yes
uri=test://$tmp/node.xml
topology=synthetic:pack:2 group:4 [numa] l3:2 core:16 pu:2
qemu_run_dir=$tmp/run
socket=$tmp/sock
state=$tmp/state/ledger.json
hook_timeout_ms=5000
[rebalance]
mode=advise
interval=0.5
EOF

start_daemon() { # nofile
    prlimit --nofile="$1:$1" "$daemon" --config "$conf" >>"$tmp/daemon.log" 2>&1 &
    pid=$!
    wait_for 20 "$cli" status --config "$conf" >/dev/null 2>&1 || fail "vcpuplaced did not answer"
}
stop_daemon() {
    kill "$pid"
    wait "$pid" || true
    pid=
}
metric() { # name
    "$cli" metrics --config "$conf" | sed -n "s/^$1 //p"
}
applied() {
    "$cli" status --json --config "$conf" |
        python3 -c 'import json,sys; print(sum(d["state"] == "applied" for d in json.load(sys.stdin)["domains"]))'
}
samples() { metric vcpuplace_intervals_total; }
monitored_all() { test "$(metric vcpuplace_monitored_threads)" = "$nthreads"; }
all_applied() { test "$(applied)" = "$ndom"; }

# --- 1. room enough -------------------------------------------------------------------------
# The unit's 65536, or the most this process may set.
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] || [ "$hard" -ge 65536 ] && hard=65536
start_daemon "$hard"
wait_for 30 all_applied || fail "not all $ndom domains applied: $(applied)"
pass "$ndom domains of $per vCPUs placed and pinned"
wait_for 30 monitored_all || fail "monitored threads: $(metric vcpuplace_monitored_threads), not $nthreads"
pass "all $nthreads threads measured"
first=$(samples)
ten_more() { test "$(($(samples) - ${first:-0}))" -ge 10; }
wait_for 60 ten_more || fail "the monitor does not sample"
fds=$(find "/proc/$pid/fd" -mindepth 1 | wc -l)
rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status")
hwm=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status")
echo "figures: $nthreads vCPU threads: $fds descriptors ($(awk -v f="$fds" -v n="$nthreads" 'BEGIN { printf "%.2f", f / n }') per thread), RSS $rss kB, peak $hwm kB"
[ "$fds" -le "$fd_budget" ] || fail "$fds descriptors, over the budget of $fd_budget"
pass "descriptors within budget ($fds <= $fd_budget)"
# AddressSanitizer's shadow memory and quarantine multiply RSS: the budget is the plain
# build's, and a sanitized daemon only reports its figure.
if ldd "$daemon" | grep -q libasan; then
    echo "memory budget not checked: $daemon is built with AddressSanitizer (peak $hwm kB)"
else
    [ "$hwm" -le "$rss_budget_kb" ] || fail "peak RSS $hwm kB, over the budget of $rss_budget_kb kB"
    pass "memory within budget (peak $hwm kB <= $rss_budget_kb kB)"
fi
stop_daemon

# --- 2. out of descriptors ------------------------------------------------------------------
mark=$(wc -l <"$tmp/daemon.log")
start_daemon 256
wait_for 30 all_applied || fail "RLIMIT_NOFILE=256: $(applied) of $ndom domains applied"
pass "RLIMIT_NOFILE=256: the $ndom domains reconciled and pinned"
fd_limit_logged() { tail -n +"$((mark + 1))" "$tmp/daemon.log" | grep -q 'fd limit reached'; }
wait_for 30 fd_limit_logged ||
    fail "RLIMIT_NOFILE=256: no fd limit reported"
pass "the monitor says it ran out of descriptors"
monitored=$(metric vcpuplace_monitored_threads)
echo "figures: RLIMIT_NOFILE=256: $(find "/proc/$pid/fd" -mindepth 1 | wc -l) descriptors open, $monitored threads monitored"
xml="<domain type='test'><name>vm-new</name><memory>65536</memory><vcpu>4</vcpu><os><type>hvm</type></os>$policy</domain>"
out=$(VCPUPLACE_CONFIG=$conf "$hook" vm-new prepare begin - <<<"$xml" 2>&1) ||
    fail "RLIMIT_NOFILE=256: the hook's reserve failed: $out"
[ -z "$out" ] || fail "RLIMIT_NOFILE=256: the hook said: $out"
"$cli" status --config "$conf" vm-new | grep -q '^vm-new: reserved, placed' ||
    fail "RLIMIT_NOFILE=256: vm-new not reserved: $("$cli" status --config "$conf" vm-new 2>&1)"
pass "RLIMIT_NOFILE=256: a new domain placed through the hook"
wait_for 10 grep -q '"vm-new"' "$tmp/state/ledger.json" || fail "RLIMIT_NOFILE=256: vm-new never reached the ledger file"
pass "RLIMIT_NOFILE=256: the ledger is still written"
for ((i = 0; i < 50; i++)); do
    "$cli" status --config "$conf" >/dev/null || fail "RLIMIT_NOFILE=256: status $i refused"
done
pass "RLIMIT_NOFILE=256: 50 more connections answered"
broken=$(tail -n +"$((mark + 1))" "$tmp/daemon.log" | grep -m1 'Error accepting\|cannot save the ledger' || true)
[ -z "$broken" ] || fail "RLIMIT_NOFILE=256: the rest of the daemon ran out of descriptors: $broken"
pass "RLIMIT_NOFILE=256: no failed accept, no failed ledger write"
