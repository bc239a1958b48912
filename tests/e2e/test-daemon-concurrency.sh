#!/bin/bash
# Twenty guests started at once through virsh (xargs -P 20), with the hook installed and
# vcpuplaced running with the systemd unit's capabilities and no-new-privs.
#
# This host may have two CPUs, so twenty one-vCPU guests cannot each own one. Two runs:
#  A. smt=share unmet=degrade: every guest consents to time-sharing. All twenty start and
#     are placed and pinned (each vCPU thread's Cpus_allowed_list in /proc is its plan),
#     the CPUs are shared evenly (least shared first: counts differ by one at most), and
#     no CPU is held by a guest that did not consent (tests/e2e/chaos-invariants.py).
#  B. smt=spread unmet=refuse: one CPU each or nothing. Exactly as many guests start as
#     there are CPUs, each on its own; every other start is refused by `virsh start` with
#     vcpuplace's reason, and nothing is held for them.
# Destroying all twenty at once releases everything. The hook's latency (time libvirtd
# spends in each `prepare begin` call, from its debug log) is printed, with the daemon's
# descriptors and RSS. Last, the daemon runs under strace with guests and its monitor
# about: every system call it made must be one the unit's SystemCallFilter allows
# (skipped without strace or systemd-analyze).
#
# The hook keeps its default timeout (500 ms): vcpuplaced answers it from its socket
# thread while its main loop waits on libvirt, so no start may go on unplaced.
. "$(dirname "$0")/lib.sh"
e2e_require_env
. "$(dirname "$0")/daemon-helpers.sh"

n=${VP_CONCURRENCY_GUESTS:-20}
unit=$vpd_build/plugin/daemon/vcpuplaced.service
check=$(dirname "$0")/chaos-invariants.py
[ -f "$unit" ] || e2e_fail "$unit not built"
online=$(cat /sys/devices/system/cpu/online)
ncpus=$(e2e_cpus "$online" | tr ',' '\n' | grep -c .)

cat >"$vpd_conf" <<EOF
[daemon]
mode=enforce
adopt_running=yes
uri=qemu:///system
topology=host
host_cpus=$online
housekeeping_cpus=none
socket=$vpd_sock
state=$e2e_tmp/state/ledger.json
domains=vpe2e-c-*
EOF
conc_start() { # [wrapper command...]
    vpd_start_confined "$@"
    vp_wait_until 30 vpd_connected || e2e_fail "vcpuplaced did not come up connected; see $vpd_log"
}
conc_start
hookname=vcpuplace-concurrency
printf '#!/bin/sh\nVCPUPLACE_CONFIG=%s exec %s "$@"\n' "$vpd_conf" "$vpd_hook" >"$e2e_tmp/hook"
e2e_install_hook "$e2e_tmp/hook" $hookname >/dev/null

names=$(seq -f 'vpe2e-c-%02g' 0 $((n - 1)))
define_all() { # policy...
    local g args=()
    for p in "$@"; do args+=(--policy "$p"); done
    for g in $names; do e2e_define "$g" "${args[@]}"; done
}
start_all() { # out-dir: starts every guest at once; rc and output per guest
    mkdir -p "$1"
    # shellcheck disable=SC2016
    xargs -P "$n" -I{} sh -c 'virsh -q start "$1" >"$2/$1.out" 2>&1; echo $? >"$2/$1.rc"' sh {} "$1" <<<"$names"
}
destroy_all() {
    xargs -P "$n" -I{} virsh -q destroy {} <<<"$(virsh -q list --name | grep '^vpe2e-c-')" >/dev/null 2>&1 || true
    vp_wait_until 60 test "$(vpd_status | grep -c '^vpe2e-c-')" = 0 ||
        e2e_fail "still recorded after every guest was destroyed: $(vpd_status)"
}
settled() {
    out=$(python3 "$check" --cli "$vpd_cli" --config "$vpd_conf" --prefix vpe2e-c- 2>&1)
}
# Milliseconds of each `prepare begin` hook call of ours since a log mark, one per line:
# libvirtd's debug log pairs "About to run ... HOOK NAME prepare begin" with the same
# thread's next "Result status".
hook_ms() { # mark
    vpd_log_since "$1" | awk -v hook="/etc/libvirt/hooks/qemu.d/$hookname " '
        function ms(ts) { split(ts, t, ":"); return (t[1] * 3600 + t[2] * 60 + t[3]) * 1000 }
        index($0, "About to run") && index($0, hook) && index($0, " prepare begin ") { start[$3] = ms(substr($2, 1, 12)) }
        index($0, "Result status") && ($3 in start) { printf "%.0f\n", ms(substr($2, 1, 12)) - start[$3]; delete start[$3] }'
}
stats() { # figures on stdin -> "median M, p95 P, max X (N calls)"
    sort -n | awk '{ v[NR] = $1 } END { if (!NR) { print "no calls"; exit }
        p = int(NR * 0.95 + 0.999); if (p > NR) p = NR
        printf "median %s ms, p95 %s ms, max %s ms (%d calls)\n", v[int((NR + 1) / 2)], v[p], v[NR], NR }'
}
daemon_figures() {
    echo "$(find "/proc/$vpd_pid/fd" -mindepth 1 | wc -l) fds, RSS $(sed -n 's/^VmRSS:[[:space:]]*//p' "/proc/$vpd_pid/status")"
}

# --- A: share + degrade ----------------------------------------------------------------
define_all smt=share unmet=degrade
mark=$(vpd_log_mark)
t0=$(vp_now_ms)
start_all "$e2e_tmp/a"
echo "A: $n starts at once returned after $(($(vp_now_ms) - t0)) ms"
failed=$(grep -LFx 0 "$e2e_tmp"/a/*.rc || true)
[ -z "$failed" ] || e2e_fail "A: starts failed: $(for f in $failed; do cat "${f%.rc}.out"; done)"
e2e_pass "A: all $n guests started"
vp_wait_until 60 settled || e2e_fail "A: invariants still violated after 60 s: $out"
e2e_pass "A: no CPU held by a guest that did not consent; every vCPU pinned as planned in /proc"
states=$(vpd_status --json | python3 -c 'import json,sys; d=json.load(sys.stdin)["domains"]; print(" ".join(sorted({x["state"] for x in d})), len(d))')
e2e_expect_eq "A: all $n recorded, all applied" "applied $n" "$states"
spread=$(vpd_status --json | python3 -c '
import collections, json, sys
c = collections.Counter(v["cpu"] for d in json.load(sys.stdin)["domains"] for v in d["vcpus"])
print(max(c.values()) - min(c.values()), len(c), " ".join(f"{k}:{c[k]}" for k in sorted(c)))')
read -r diff used per <<<"$spread"
e2e_expect_eq "A: every CPU used" "$ncpus" "$used"
[ "$diff" -le 1 ] || e2e_fail "A: CPUs shared unevenly: $per"
e2e_pass "A: CPUs shared evenly (CPU:guests $per)"
echo "A: hook prepare begin: $(hook_ms "$mark" | stats)"
fo=$(vpd_log_since "$mark" | grep -c 'starting it without vcpuplace placement' || true)
e2e_expect_eq "A: no start went on unplaced (hook failing open)" 0 "$fo"
echo "A: vcpuplaced with $n guests running: $(daemon_figures)"
destroy_all
e2e_pass "A: all destroyed at once: nothing recorded"

# --- B: spread + refuse ----------------------------------------------------------------
define_all smt=spread unmet=refuse
mark=$(vpd_log_mark)
start_all "$e2e_tmp/b"
ok=$(grep -lFx 0 "$e2e_tmp"/b/*.rc | wc -l)
e2e_expect_eq "B: as many guests started as there are CPUs" "$ncpus" "$ok"
for f in $(grep -LFx 0 "$e2e_tmp"/b/*.rc); do
    g=$(basename "$f" .rc)
    grep -q "vcpuplace: refusing to start $g: " "${f%.rc}.out" ||
        e2e_fail "B: $g failed without vcpuplace's reason: $(cat "${f%.rc}.out")"
    [ "$(virsh domstate "$g")" = "shut off" ] || e2e_fail "B: $g refused but running"
done
e2e_pass "B: the other $((n - ncpus)) refused by virsh start with vcpuplace's reason"
vp_wait_until 60 settled || e2e_fail "B: invariants still violated after 60 s: $out"
e2e_expect_eq "B: only the running guests recorded" "$ncpus" "$(vpd_status | grep -c '^vpe2e-c-')"
e2e_pass "B: the running ones each on a CPU of their own, pinned as planned"
echo "B: hook prepare begin: $(hook_ms "$mark" | stats)"
destroy_all
e2e_pass "B: all destroyed: nothing recorded"

# --- system calls against the unit's filter ----------------------------------------------
if command -v strace >/dev/null && command -v systemd-analyze >/dev/null; then
    vpd_stop_quiet
    trace=$e2e_tmp/strace
    conc_start strace -f -qq -o "$trace"
    define_all smt=share unmet=degrade
    for g in vpe2e-c-00 vpe2e-c-01 vpe2e-c-02; do virsh -q start "$g" >/dev/null; done
    vp_wait_until 60 settled || e2e_fail "under strace: invariants still violated: $out"
    sleep 3 # a few monitor intervals
    vpd_status >/dev/null
    virsh -q destroy vpe2e-c-02 >/dev/null
    vp_wait_until 30 test "$(vpd_status | grep -c '^vpe2e-c-')" = 2 || e2e_fail "under strace: not released"
    kill -TERM "$vpd_pid"
    wait "$wrapper_pid" || true
    vpd_pid=
    used=$(sed -nE 's/^[0-9]+ +([a-z0-9_]+)\(.*/\1/p' "$trace" | sort -u)
    filters=$(sed -n 's/^SystemCallFilter=//p' "$unit")
    allow=$(head -n 1 <<<"$filters")
    deny=$(sed -n '2,$s/^~//p' <<<"$filters")
    expand() { # filter words -> syscall names, groups within groups too
        local w
        for w in "$@"; do
            case $w in
            @*) # shellcheck disable=SC2046 # one name per word
                expand $(systemd-analyze syscall-filter "$w" | sed -n 's/^ \{4\}\([@a-z0-9_-]*\)$/\1/p') ;;
            *) echo "$w" ;;
            esac
        done | sort -u
    }
    allowed=$(comm -23 <(expand $allow) <(expand $deny))
    outside=$(comm -23 <(echo "$used") <(echo "$allowed") | paste -sd' ')
    e2e_expect_eq "every system call vcpuplaced made ($(echo "$used" | wc -l) distinct) is in the unit's SystemCallFilter" "" "$outside"
else
    echo "system call audit skipped: strace or systemd-analyze missing"
fi
