#!/bin/bash
# vCPU hotplug (`virsh setvcpus GUEST 2 --live`) with real libvirtd and QEMU TCG guests:
# vcpuplaced places the new vCPU, pins it through libvirt (virsh vcpupin and the new
# thread's Cpus_allowed_list agree with the plan) and lists its thread for cookies.
#
# Stock QEMU announces nothing and libvirt 9.0 emits no event for it, so the daemon finds
# the vCPU by re-reading vCPU counts (vcpu_poll_ms). QEMU built with qemu-patches/ sends
# VCPU_THREAD_CREATED, which libvirt passes on: with re-reading switched off, the daemon
# must place the vCPU from the event alone, and the event's thread id must be the new
# thread's. That part needs the patched binary from the cache scripts/build-qemu fills
# (the qemu tier builds it); without it, it is skipped and said so. Guests: vpe2e-k-*.
. "$(dirname "$0")/lib.sh"
e2e_require_env
. "$(dirname "$0")/daemon-helpers.sh"

# The daemon no longer records the guest (evaluated at each try).
released() { [ "$(vpd_state "$1")" = none ]; }

online=$(e2e_cpus "$(cat /sys/devices/system/cpu/online)")
ncpus=$(echo "$online" | tr ',' '\n' | grep -c .)
[ "$ncpus" -ge 2 ] || e2e_skip "needs 2 online CPUs, this host has $ncpus"

# define_hotpluggable NAME EMULATOR: one vCPU online of two.
define_hotpluggable() {
    local name=$1 emulator=$2
    e2e_define "$name" --policy smt=spread
    sed -e "s|<vcpu placement='static'>1</vcpu>|<vcpu placement='static' current='1'>2</vcpu>|" \
        -e "s|cores='1'|cores='2'|" -e "s|<emulator>.*</emulator>|<emulator>$emulator</emulator>|" \
        "$e2e_tmp/$name.xml" >"$e2e_tmp/$name.hp.xml"
    virsh -q undefine "$name" >/dev/null
    virsh -q define "$e2e_tmp/$name.hp.xml" >/dev/null
}

# tid of vCPU N's thread, or nothing yet.
vcpu_tid() { # pid vcpu
    e2e_vcpu_threads "$1" | awk -v v="$2" '$1 == v { print $2 }'
}

# vCPU 1's thread runs pinned to one CPU (libvirt starts it on all of them; the plan is
# checked against it afterwards).
vcpu1_single() { # pid
    local tid list
    tid=$(vcpu_tid "$1" 1)
    [ -n "$tid" ] && list=$(e2e_allowed_list "$1" "$tid") && [[ $list =~ ^[0-9]+$ ]]
}

# hotplug GUEST SECONDS: setvcpus 2 --live, then waits (reading /proc every 5 ms) until the
# new vCPU's thread is pinned to one CPU. Prints the milliseconds from setvcpus' return.
hotplug() {
    local guest=$1 pid t0 limit
    pid=$(e2e_qemu_pid "$guest")
    virsh -q setvcpus "$guest" 2 --live
    t0=$(vp_now_ms)
    limit=$((t0 + $2 * 1000))
    until vcpu1_single "$pid"; do
        [ "$(vp_now_ms)" -lt "$limit" ] ||
            e2e_fail "$guest: vCPU 1 not pinned within $2 s; status: $(vpd_status "$guest")"
        sleep 0.005
    done
    echo $(($(vp_now_ms) - t0))
}

# check_hotplugged GUEST: vCPU 1 placed beside vCPU 0 (spread: its own CPU), pinned as
# libvirt and the kernel say, and its thread listed with the domain's cookie expectation.
check_hotplugged() {
    local guest=$1 pid planned tid
    pid=$(e2e_qemu_pid "$guest")
    vpd_wait_state "$guest" '^applied'
    planned=$(vpd_planned "$guest")
    tid=$(vcpu_tid "$pid" 1)
    e2e_expect_match "$guest: two vCPUs planned, on different CPUs" '^([0-9]+),([0-9]+)$' "$planned"
    [ "${planned%,*}" != "${planned#*,}" ] || e2e_fail "$guest: both vCPUs planned on CPU ${planned%,*}"
    e2e_expect_eq "$guest: virsh vcpupin shows vCPU 1's plan" "${planned#*,}" \
        "$(virsh -q vcpupin "$guest" 1 | awk '{print $2}')"
    e2e_expect_eq "$guest: /proc Cpus_allowed_list of the new thread $tid" "${planned#*,}" \
        "$(e2e_allowed_list "$pid" "$tid")"
    e2e_expect_eq "$guest: vCPU 0 stayed" "${planned%,*}" "$(e2e_allowed_list "$pid" "$(vcpu_tid "$pid" 0)")"
    e2e_expect_match "$guest: status lists the new thread with the VM's cookie expected" \
        "$tid +CPU 1/TCG +vm:$guest" "$(vpd_status "$guest")"
}

# Stock QEMU: found by re-reading vCPU counts every 500 ms.
vpd_config "host_cpus=$(cat /sys/devices/system/cpu/online)" "vcpu_poll_ms=500"
sed -i 's/^domains=.*/domains=vpe2e-k-*/' "$vpd_conf"
vpd_start
define_hotpluggable vpe2e-k-stock /usr/bin/qemu-system-x86_64
virsh -q start vpe2e-k-stock >/dev/null
vpd_check_applied vpe2e-k-stock
e2e_expect_match "the daemon says how it finds hot-plugged vCPUs" \
    'hot-plugged vCPUs: placed when QEMU announces them' "$(cat "$vpd_log")"
ms=$(hotplug vpe2e-k-stock 10)
echo "stock QEMU: vCPU 1 pinned ${ms} ms after virsh setvcpus returned (re-read every 500 ms)"
check_hotplugged vpe2e-k-stock
e2e_expect_match "found by re-reading" 'vpe2e-k-stock: 2 vCPUs now \(re-read from libvirt\)' \
    "$(cat "$vpd_log")"
virsh -q destroy vpe2e-k-stock >/dev/null
vp_wait_until 30 released vpe2e-k-stock || e2e_fail "vpe2e-k-stock still recorded"
vpd_stop_quiet

# QEMU with qemu-patches/: from the event alone.
patched=$(ls -t "${VP_CACHE:-/var/cache/vcpuplace-build}"/qemu-*/bin/qemu-system-x86_64 2>/dev/null |
    head -n 1 || true)
if [ -z "$patched" ]; then
    echo "SKIPPED PART: no patched QEMU in ${VP_CACHE:-/var/cache/vcpuplace-build} (scripts/build-qemu; the qemu tier builds it)"
    exit 0
fi
vpd_config "host_cpus=$(cat /sys/devices/system/cpu/online)" "vcpu_poll_ms=0"
sed -i 's/^domains=.*/domains=vpe2e-k-*/' "$vpd_conf"
vpd_start
define_hotpluggable vpe2e-k-patched "$patched"
virsh -q start vpe2e-k-patched >/dev/null
vpd_check_applied vpe2e-k-patched
ms=$(hotplug vpe2e-k-patched 10)
echo "patched QEMU: vCPU 1 pinned ${ms} ms after virsh setvcpus returned (event only)"
check_hotplugged vpe2e-k-patched
pid=$(e2e_qemu_pid vpe2e-k-patched)
e2e_expect_match "the event came through libvirt with the new thread's id" \
    "vpe2e-k-patched: QEMU created vCPU 1 \\(/machine/peripheral/vcpu1\\), thread $(vcpu_tid "$pid" 1)\$" \
    "$(cat "$vpd_log")"
# From the daemon's own log: the event's arrival to libvirt's confirmation of the pin.
since_event=$(awk '/vpe2e-k-patched: QEMU created vCPU 1/ { t = $2 } t && /vpe2e-k-patched: pinned as planned/ { print t, $2; exit }' "$vpd_log" | tr -d '\n' | sed 's/: / /; s/:$//' |
    awk '{ split($1, a, ":"); split($2, b, ":"); printf "%d", ((b[1]*3600 + b[2]*60 + b[3]) - (a[1]*3600 + a[2]*60 + a[3])) * 1000 }')
echo "patched QEMU: the daemon had vCPU 1 pinned ${since_event} ms after the event reached it"
e2e_expect_eq "listening to QEMU events did not taint the guest" 0 \
    "$(grep -c 'tainted' "/var/log/libvirt/qemu/vpe2e-k-patched.log" || true)"
