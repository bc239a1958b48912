#!/bin/bash
# <vcpu placement='auto'> with real libvirtd, numad and a QEMU TCG guest. libvirt 9.0 asks
# numad for a nodeset after the last hook before the start has run, binds the memory to it
# (mode strict, added to the live XML without the nodeset) and refuses to change it live.
# No hook's XML carries that nodeset: vcpuplaced reads it with virDomainGetNumaParameters
# once the guest runs, and keeps the vCPUs inside it. Checked: virsh numatune, QEMU's
# Mems_allowed_list, the plan's CPUs inside the nodeset's CPUs (virsh vcpupin and /proc),
# the ledger's memory on it, and the daemon's log naming libvirt's nodeset, with no refused
# live change. A restrictive guest (`<numatune><memory mode='restrictive'
# placement='auto'/>`) is checked the same way.
#
# This host has one NUMA node, so numad's node and vcpuplace's are the same here; the case
# where they differ is integration_numa's (libvirt's test driver on 8 nodes).
. "$(dirname "$0")/lib.sh"
e2e_require_env
command -v numad >/dev/null ||
    e2e_skip "numad is not installed (Debian package numad): libvirt refuses placement='auto' without it"
. "$(dirname "$0")/daemon-helpers.sh"

vpd_small_host

define_auto() { # name extra-xml
    local name=$1 extra=$2
    e2e_define "$name"
    virsh -q dumpxml --inactive "$name" >"$e2e_tmp/$name.in.xml"
    awk -v extra="$extra" \
        '/<vcpu / { print "  <vcpu placement=\"auto\">1</vcpu>"; if (extra != "") print "  " extra; next } { print }' \
        "$e2e_tmp/$name.in.xml" >"$e2e_tmp/$name.auto.xml"
    virsh -q define "$e2e_tmp/$name.auto.xml" >/dev/null
}

# The CPUs of the NUMA nodes in a nodeset, comma separated.
node_cpus() {
    local n out=()
    for n in $(e2e_cpus "$1" | tr ',' ' '); do
        out+=("$(e2e_cpus "$(cat "/sys/devices/system/node/node$n/cpulist")")")
    done
    local IFS=,
    echo "${out[*]}"
}

check_auto() { # guest mode
    local guest=$1 mode=$2 numatune nodeset pid cpu
    if ! virsh -q start "$guest" >"$e2e_tmp/start.out" 2>&1; then
        grep -q 'Failed to query numad' "$e2e_tmp/start.out" &&
            e2e_skip "numad cannot advise here: $(cat "$e2e_tmp/start.out")"
        e2e_fail "$guest did not start: $(cat "$e2e_tmp/start.out")"
    fi
    vpd_check_applied "$guest"
    numatune=$(virsh numatune "$guest")
    e2e_expect_match "$guest: virsh numatune: $mode" "numa_mode *: $mode" "$numatune"
    nodeset=$(sed -n 's/^numa_nodeset *: *//p' <<<"$numatune")
    [ -n "$nodeset" ] || e2e_fail "$guest: libvirt names no nodeset: $numatune"
    e2e_pass "$guest: numad's nodeset, as libvirt binds it: $nodeset"
    virsh -q dumpxml "$guest" | grep -q "nodeset=" &&
        e2e_fail "$guest: the live XML names a nodeset; the test's premise is wrong"
    e2e_pass "$guest: the live XML names no nodeset (only virDomainGetNumaParameters does)"
    pid=$(e2e_qemu_pid "$guest")
    e2e_expect_eq "$guest's QEMU may allocate only on libvirt's nodeset" "$nodeset" \
        "$(sed -n 's/^Mems_allowed_list:[[:space:]]*//p' "/proc/$pid/status")"
    for cpu in $(tr ',' ' ' <<<"$vpd_planned_cpus"); do
        grep -qw "$cpu" <<<"$(node_cpus "$nodeset" | tr ',' ' ')" ||
            e2e_fail "$guest: vCPU on CPU $cpu, outside nodes $nodeset ($(node_cpus "$nodeset"))"
    done
    e2e_pass "$guest: vCPUs ($vpd_planned_cpus) inside nodes $nodeset"
    vp_wait_until 10 grep -qF "domain $guest: placement='auto': libvirt binds its memory to nodes $nodeset ($mode)" "$vpd_log" ||
        e2e_fail "$guest: the daemon did not log libvirt's nodeset: $(grep -F "$guest" "$vpd_log" | tail -5)"
    e2e_pass "$guest: vcpuplaced read libvirt's nodeset $nodeset ($mode)"
    if grep -F "domain $guest:" "$vpd_log" | grep -qE "not moved|away from their memory"; then
        e2e_fail "$guest: $(grep -F "domain $guest:" "$vpd_log" | grep -E "not moved|away from")"
    fi
    e2e_pass "$guest: no refused live change, vCPUs not away from their memory"
    e2e_expect_match "$guest: the ledger holds its 64 MiB on nodes $nodeset" \
        "\"domain\":\"$guest\".*\"memory\":\\[\\{\"numa\":$nodeset,\"bytes\":67108864\\}\\]" \
        "$(tr -d ' \n' <"$e2e_tmp/state/ledger.json")"
    virsh -q destroy "$guest" >/dev/null
}

define_auto vpe2e-d-na-strict ''
check_auto vpe2e-d-na-strict strict
define_auto vpe2e-d-na-restrictive "<numatune><memory mode='restrictive' placement='auto'/></numatune>"
check_auto vpe2e-d-na-restrictive restrictive

vp_wait_until 10 vpd_count_is vpe2e-d-na- 0 || e2e_fail "still recorded after stop: $(vpd_status)"
e2e_pass "both guests destroyed: nothing held"
