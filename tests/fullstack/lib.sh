# shellcheck shell=bash
# Helpers of the fullstack scenarios, sourced after tests/e2e/lib.sh and daemon-helpers.sh:
# they run inside the fullstack guest (tests/fullstack/guest.sh), where the host is a
# two-node SMT machine, so "siblings" and "nodes" below are real to the kernel.

# The daemon on every CPU of the guest host (or fs_host_cpus), managing this tier's guests
# (vpe2e-f-*). Extra [daemon] keys (and sections) as given.
fs_daemon() {
    vpd_config "host_cpus=${fs_host_cpus:-$(cat /sys/devices/system/cpu/online)}" "$@"
    sed -i 's/^domains=.*/domains=vpe2e-f-*/' "$vpd_conf"
    vpd_start
}

# The SMT siblings of a CPU, as the kernel lists them ("2,3" or "2-3").
fs_siblings() {
    e2e_cpus "$(cat "/sys/devices/system/cpu/cpu$1/topology/thread_siblings_list")"
}

fs_core() { # cpu: its core, as the first of its siblings
    fs_siblings "$1" | cut -d, -f1
}
