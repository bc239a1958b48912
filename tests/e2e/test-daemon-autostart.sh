#!/bin/bash
# Why the unit starts before libvirtd: libvirtd starts the guests marked autostart as it
# comes up, and each passes the hook's admission, which needs vcpuplaced's socket. With
# hook_failure=closed:
#  - libvirtd restarted while vcpuplaced is down: the autostart guest is refused (libvirtd
#    logs the hook's reason) and stays shut off;
#  - libvirtd restarted with vcpuplaced up (the unit's order, Before=libvirtd.service):
#    the guest is autostarted, and vcpuplaced, which reconnects to the new libvirtd on its
#    own, places and pins it.
# libvirt autostarts once per host boot (it leaves an "autostarted" marker in its QEMU state
# directory); the test removes the marker before each restart, as a reboot would.
# Needs a libvirtd that scripts/libvirt-env started (it is restarted); skips otherwise.
. "$(dirname "$0")/lib.sh"
e2e_require_env
. "$(dirname "$0")/daemon-helpers.sh"
e2e_env_owns_libvirtd || e2e_skip "libvirtd was not started by scripts/libvirt-env: not restarting it"

online=$(e2e_cpus "$(cat /sys/devices/system/cpu/online)")
vpd_config "host_cpus=$(cat /sys/devices/system/cpu/online)" "hook_failure=closed"
vpd_install_hook
guest=vpe2e-d-autostart
e2e_define $guest --policy smt=spread
virsh -q autostart $guest >/dev/null
marker=/run/libvirt/qemu/autostarted

restart_libvirtd() {
    rm -f "$marker"
    "$e2e_env" restart-libvirtd >/dev/null
}
running() { [ "$(virsh domstate $guest 2>/dev/null | sed '/^$/d')" = running ]; }

# vcpuplaced down: admission fails closed.
restart_libvirtd
vp_wait_until 20 test -e "$marker" || e2e_fail "libvirtd did not run its autostart"
sleep 2
e2e_expect_eq "vcpuplaced down, hook_failure=closed: the autostart guest is refused" "shut off" \
    "$(virsh domstate $guest | sed '/^$/d')"

# vcpuplaced up first, as the unit orders it.
vpd_start
restart_libvirtd
vp_wait_until 60 running || e2e_fail "$guest was not autostarted with vcpuplaced up"
e2e_pass "vcpuplaced up: libvirtd autostarted $guest"
vpd_wait_state $guest '^applied, placed'
vpd_check_applied $guest >/dev/null
e2e_pass "$guest placed and pinned as planned (CPUs $vpd_planned_cpus of $online)"
virsh -q autostart --disable $guest >/dev/null
