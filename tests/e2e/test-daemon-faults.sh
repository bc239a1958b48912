#!/bin/bash
# Faults around vcpuplaced with real libvirtd and QEMU TCG guests:
#  - vcpuplaced killed with SIGKILL while guests run; meanwhile one guest stops and one
#    starts (the hook fails open and says why in libvirtd's log); restarted, the daemon
#    reconciles: the stopped one released, the new one placed, the others untouched.
#  - libvirtd restarted while guests run: the daemon reconnects and resynchronises, and
#    later starts and stops are handled as before (skipped when libvirtd was not started
#    by scripts/libvirt-env, which must then not be restarted).
#  - hook_failure=closed with the daemon down: `virsh start` refused with a clear message.
. "$(dirname "$0")/lib.sh"
e2e_require_env
. "$(dirname "$0")/daemon-helpers.sh"

vpd_small_host
e2e_define vpe2e-d-a --policy smt=spread
e2e_define vpe2e-d-b --policy smt=share
e2e_define vpe2e-d-c --policy smt=spread

virsh -q start vpe2e-d-a >/dev/null
vpd_check_applied vpe2e-d-a
a=$vpd_planned_cpus
virsh -q start vpe2e-d-b >/dev/null
vpd_check_applied vpe2e-d-b
b=$vpd_planned_cpus

# --- SIGKILL ---------------------------------------------------------------------------
vpd_kill9
e2e_pass "vcpuplaced killed with SIGKILL"
virsh -q destroy vpe2e-d-b >/dev/null
mark=$(vpd_log_mark)
virsh -q start vpe2e-d-c >/dev/null || e2e_fail "virsh start vpe2e-d-c failed with the daemon down"
e2e_pass "daemon down: virsh start vpe2e-d-c still works (fail open)"
e2e_expect_match "the hook says why in libvirtd's log" \
    "vcpuplace: vpe2e-d-c: cannot connect to vcpuplaced at $vpd_sock.*starting it without vcpuplace placement \(hook_failure=open\)" \
    "$(vpd_log_since "$mark")"

vpd_start
vpd_check_applied vpe2e-d-a
e2e_expect_eq "vpe2e-d-a untouched by the restart" "$a" "$vpd_planned_cpus"
e2e_expect_eq "vpe2e-d-b, stopped while the daemon was down, released" none "$(vpd_state vpe2e-d-b)"
vpd_check_applied vpe2e-d-c
e2e_expect_eq "vpe2e-d-c, started while the daemon was down, gets the CPU vpe2e-d-b freed" "$b" \
    "$vpd_planned_cpus"
vpd_check_disjoint
e2e_expect_match "restart logged as a reconciliation" \
    'domain vpe2e-d-b: not running; released' "$(cat "$vpd_log")"

# --- libvirtd restart ------------------------------------------------------------------
if e2e_env_owns_libvirtd; then
    pid=$(cat /run/libvirtd.pid)
    lost_before=$(grep -c 'libvirt connection qemu:///system lost' "$vpd_log" || true)
    kill -TERM "$pid"
    vp_wait_until 30 vp_pid_gone "$pid" || e2e_fail "libvirtd (pid $pid) did not stop"
    "$e2e_env" start >/dev/null 2>&1 || e2e_fail "libvirtd did not come back"
    vp_wait_until 20 vpd_connected || e2e_fail "vcpuplaced did not reconnect; see $vpd_log"
    lost_after=$(grep -c 'libvirt connection qemu:///system lost' "$vpd_log" || true)
    e2e_expect_eq "the daemon saw libvirtd go" "$((lost_before + 1))" "$lost_after"
    e2e_pass "vcpuplaced reconnected to the new libvirtd"
    vpd_check_applied vpe2e-d-a
    e2e_expect_eq "vpe2e-d-a after the libvirtd restart" "$a" "$vpd_planned_cpus"
    vpd_check_applied vpe2e-d-c
    # Business as usual on the new connection: a stop releases, a start places.
    virsh -q destroy vpe2e-d-a >/dev/null
    vp_wait_until 10 vpd_gone vpe2e-d-a || e2e_fail "vpe2e-d-a still recorded"
    e2e_pass "after the libvirtd restart: destroy releases"
    virsh -q start vpe2e-d-b >/dev/null
    vpd_check_applied vpe2e-d-b
    e2e_expect_eq "after the libvirtd restart: start places on the free CPU" "$a" "$vpd_planned_cpus"
    vpd_check_disjoint
else
    echo "libvirtd restart: skipped, libvirtd was not started by scripts/libvirt-env"
fi

# --- fail closed -----------------------------------------------------------------------
virsh -q destroy vpe2e-d-b >/dev/null 2>&1 || true
vpd_stop_quiet
vpd_config "host_cpus=$(cat /sys/devices/system/cpu/online)" "hook_failure=closed"
if out=$(virsh -q start vpe2e-d-b 2>&1); then
    e2e_fail "vpe2e-d-b started with the daemon down and hook_failure=closed"
fi
e2e_expect_match "hook_failure=closed: virsh start refused, saying why" \
    "vcpuplace: refusing to start vpe2e-d-b: cannot connect to vcpuplaced at $vpd_sock.*hook_failure=closed" \
    "$out"
e2e_expect_eq "vpe2e-d-b not running" "shut off" "$(virsh domstate vpe2e-d-b)"
vpd_start
virsh -q start vpe2e-d-b >/dev/null
vpd_check_applied vpe2e-d-b
e2e_pass "hook_failure=closed with the daemon up: starts as usual"
