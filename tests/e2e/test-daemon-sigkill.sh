#!/bin/bash
# vcpuplaced killed with SIGKILL right after it acknowledged a reservation to the hook,
# with real libvirtd and QEMU TCG guests (issue 15, item 10).
#
# The daemon answers the hook's reserve, then writes the ledger 20 ms later: a temporary
# file beside it, renamed over it. strace, attached to the running daemon, delivers a real
# SIGKILL at the entry of its first rename(2), so the kill lands after the acknowledgement
# and after the temporary file is written, before it replaces the ledger: the worst moment,
# every time rather than by chance. The guest's start goes on without the daemon (the
# hook fails open). Restarted, the daemon must remove the temporary file and reconcile
# against libvirt: the guest the lost reservation was for is placed anew, the one already
# on disk keeps its CPU, and no CPU is booked twice, in `vcpuplace status --json`, in the
# ledger it saves and in every vCPU thread's affinity in /proc.
. "$(dirname "$0")/lib.sh"
e2e_require_env
. "$(dirname "$0")/daemon-helpers.sh"
command -v strace >/dev/null || e2e_skip "needs strace (scripts/packages.txt) to time the SIGKILL"

vpd_small_host
ledger=$e2e_tmp/state/ledger.json
temporaries() { find "$e2e_tmp/state" -maxdepth 1 -name 'ledger.json.??????' -type f; }
ledger_names() { # file: the domain names it records, sorted
    python3 -c 'import json,sys; print(" ".join(sorted(d["domain"] for d in json.load(open(sys.argv[1]))["domains"])))' "$1"
}
ledger_holds() { [ -f "$ledger" ] && ledger_names "$ledger" | grep -qw -- "$1"; }

e2e_define vpe2e-d-k-a --policy smt=spread
e2e_define vpe2e-d-k-b --policy smt=spread

virsh -q start vpe2e-d-k-a >/dev/null
vpd_check_applied vpe2e-d-k-a
a=$vpd_planned_cpus
vp_wait_until 10 ledger_holds vpe2e-d-k-a || e2e_fail "vpe2e-d-k-a never reached $ledger"

# Every thread of the daemon traced before the start (the reply comes from the socket
# thread, the save from the main loop).
strace -qq -f -o /dev/null -p "$vpd_pid" -e trace=rename,renameat,renameat2 \
    -e inject=rename,renameat,renameat2:signal=SIGKILL:when=1 &
tracer=$!
e2e_at_exit "kill $tracer 2>/dev/null; wait $tracer 2>/dev/null"
traced() {
    local t
    for t in /proc/"$vpd_pid"/task/*; do
        grep -q '^TracerPid:[[:space:]]*[1-9]' "$t/status" || return 1
    done
}
vp_wait_until 10 traced || e2e_fail "strace did not attach to vcpuplaced (pid $vpd_pid)"

mark=$(vpd_log_mark)
virsh -q start vpe2e-d-k-b >/dev/null || e2e_fail "virsh start vpe2e-d-k-b failed"
rc=0
wait "$vpd_pid" || rc=$?
vpd_pid=
e2e_expect_eq "vcpuplaced killed by SIGKILL (exit status 128+9)" 137 "$rc"
wait "$tracer" 2>/dev/null || true
e2e_expect_match "the reservation was acknowledged before the kill" \
    'domain vpe2e-d-k-b: reserved' "$(cat "$vpd_log")"
e2e_expect_match "the start went on without the daemon, failing open" \
    "vcpuplace: vpe2e-d-k-b: cannot connect to vcpuplaced at $vpd_sock" "$(vpd_log_since "$mark")"
e2e_expect_eq "vpe2e-d-k-b runs" running "$(virsh domstate vpe2e-d-k-b)"
stale=$(temporaries)
[ "$(echo "$stale" | grep -c .)" = 1 ] || e2e_fail "expected one temporary ledger file, found: $stale"
e2e_expect_eq "the temporary file left by the kill holds the reservation" \
    "vpe2e-d-k-a vpe2e-d-k-b" "$(ledger_names "$stale")"
e2e_expect_eq "the ledger on disk lacks it" vpe2e-d-k-a "$(ledger_names "$ledger")"

vpd_start
e2e_expect_match "restart: the stale temporary file removed, and said so" \
    "ledger $ledger: removed 1 temporary files" "$(cat "$vpd_log")"
e2e_expect_eq "no temporary ledger file left" "" "$(temporaries)"
vpd_check_applied vpe2e-d-k-a
e2e_expect_eq "vpe2e-d-k-a keeps its CPU" "$a" "$vpd_planned_cpus"
vpd_check_applied vpe2e-d-k-b
b=$vpd_planned_cpus
[ "$a" != "$b" ] || e2e_fail "vpe2e-d-k-a and vpe2e-d-k-b both on CPU $a"
e2e_pass "the lost reservation's guest placed anew on CPU $b, not on vpe2e-d-k-a's CPU $a"
vpd_check_disjoint
if ! out=$(python3 "$e2e_top/tests/e2e/chaos-invariants.py" --cli "$vpd_cli" \
    --config "$vpd_conf" --prefix vpe2e-d-k-); then
    e2e_fail "invariants after the restart: $out"
fi
e2e_pass "status --json and every vCPU thread's /proc affinity agree, no CPU booked twice"

# The saved ledger is the one a next restart would load: the same CPUs as reported.
ledger_pus() { # file: "domain:pu,pu" per domain, sorted
    python3 -c 'import json,sys
for d in sorted(json.load(open(sys.argv[1]))["domains"], key=lambda d: d["domain"]):
    print(d["domain"] + ":" + ",".join(str(v["cpu"]) for v in sorted(d["vcpus"], key=lambda v: v["vcpu"])))' "$1"
}
ledger_saved() { [ "$(ledger_pus "$ledger")" = "vpe2e-d-k-a:$a"$'\n'"vpe2e-d-k-b:$b" ]; }
vp_wait_until 10 ledger_saved || e2e_fail "the saved ledger says $(ledger_pus "$ledger" | paste -sd' '), expected vpe2e-d-k-a:$a vpe2e-d-k-b:$b"
e2e_pass "the saved ledger books vpe2e-d-k-a on $a and vpe2e-d-k-b on $b"
