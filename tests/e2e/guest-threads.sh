#!/bin/bash
# A real TCG guest through libvirt: each vCPU is a thread of its own in QEMU (MTTCG), found
# by its name, and libvirt's view of vCPU affinity (virsh vcpupin, vcpuinfo, emulatorpin)
# is what the kernel applies to those threads (/proc/PID/task/TID/status). Everything
# vcpuplace reads and writes on a live host rests on these facts.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_require_env
e2e_require_no_hooks

guest=vpe2e-threads
vcpus=4
e2e_define $guest --vcpus $vcpus --threads 2

t0=$(vp_now_ms)
virsh -q start $guest >/dev/null
echo "virsh start took $(($(vp_now_ms) - t0)) ms"
pid=$(e2e_qemu_pid $guest)

by_name=$(e2e_vcpu_threads "$pid")
e2e_expect_eq "vCPU threads named 'CPU N/TCG'" "$vcpus" "$(echo "$by_name" | grep -c .)"
e2e_expect_eq "one thread per vCPU" "$vcpus" "$(echo "$by_name" | awk '{print $2}' | sort -u | grep -c .)"
e2e_expect_eq "thread names agree with QEMU's info cpus (vCPU TID)" \
    "$(echo "$by_name" | paste -sd,)" "$(e2e_vcpu_threads_qemu $guest | paste -sd,)"

# The last online CPU: on a one-CPU host the pin is a no-op, still checked end to end.
online=$(e2e_cpus "$(cat /sys/devices/system/cpu/online)")
last=${online##*,}
virsh -q vcpupin $guest 1 "$last" --live >/dev/null
virsh -q emulatorpin $guest "$last" --live >/dev/null

while read -r vcpu tid; do
    proc=$(e2e_cpus "$(e2e_allowed_list "$pid" "$tid")")
    pin=$(virsh -q vcpupin $guest "$vcpu" | awk '{print $2}')
    info=$(virsh vcpuinfo $guest | awk -v v="$vcpu" '$1 == "VCPU:" { cur = $2 } cur == v && /^CPU Affinity:/ { print $3 }')
    if [ "$vcpu" = 1 ]; then
        e2e_expect_eq "vCPU 1 pinned to CPU $last in /proc" "$last" "$proc"
    else
        e2e_expect_eq "vCPU $vcpu unpinned: all online CPUs in /proc" "$online" "$proc"
    fi
    e2e_expect_eq "vCPU $vcpu: virsh vcpupin agrees with /proc" "$proc" "$(e2e_cpus "$pin")"
    e2e_expect_eq "vCPU $vcpu: virsh vcpuinfo agrees with /proc" "$proc" "$(e2e_map_cpus "$info")"
done <<<"$by_name"

# The emulator pin applies to QEMU's other threads, the main one (TID = PID) included.
e2e_expect_eq "emulatorpin on the main thread" "$last" "$(e2e_cpus "$(e2e_allowed_list "$pid" "$pid")")"
e2e_expect_eq "virsh emulatorpin" "$last" "$(virsh emulatorpin $guest | sed -n 's/^ *\*: *//p')"

t0=$(vp_now_ms)
virsh -q destroy $guest >/dev/null
echo "virsh destroy took $(($(vp_now_ms) - t0)) ms"
e2e_expect_eq "QEMU gone after destroy" gone "$(kill -0 "$pid" 2>/dev/null && echo alive || echo gone)"
e2e_expect_eq "state after destroy" "shut off" "$(virsh domstate $guest | sed '/^$/d')"
