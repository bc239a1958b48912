#!/bin/bash
# NUMA and the domain's own statements with real libvirtd and QEMU TCG guests: a guest with
# <vcpu cpuset> is placed inside it; a guest with <numatune> strict and its own
# <emulatorpin> keeps that pin and its memory nodes (virsh emulatorpin, virsh numatune and
# /proc's Cpus_allowed_list / Mems_allowed_list against the plan), and what vcpuplace holds
# for its own pin is not given to the other guest.
#
# Sized for a small host (2 CPUs, one NUMA node, as here): nodeset 0 is the only node.
. "$(dirname "$0")/lib.sh"
e2e_require_env
. "$(dirname "$0")/daemon-helpers.sh"

vpd_small_host

# scripts/guest-xml writes no NUMA elements: they go in after <vcpu>.
define_with() { # name vcpu-line extra-xml [guest-xml options...]
    local name=$1 vcpu=$2 extra=$3
    shift 3
    e2e_define "$name" "$@"
    virsh -q dumpxml --inactive "$name" >"$e2e_tmp/$name.in.xml"
    awk -v vcpu="$vcpu" -v extra="$extra" \
        '/<vcpu / { print "  " vcpu; if (extra != "") print "  " extra; next } { print }' \
        "$e2e_tmp/$name.in.xml" >"$e2e_tmp/$name.numa.xml"
    virsh -q define "$e2e_tmp/$name.numa.xml" >/dev/null
}

define_with vpe2e-d-n-cpuset "<vcpu placement='static' cpuset='1'>1</vcpu>" ''
define_with vpe2e-d-n-strict "<vcpu placement='static'>1</vcpu>" \
    "<numatune><memory mode='strict' nodeset='0'/></numatune>" --emulatorpin 0

virsh -q start vpe2e-d-n-cpuset >/dev/null
vpd_check_applied vpe2e-d-n-cpuset
e2e_expect_eq "vpe2e-d-n-cpuset placed inside <vcpu cpuset='1'>" 1 "$vpd_planned_cpus"

virsh -q start vpe2e-d-n-strict >/dev/null
vpd_check_applied vpe2e-d-n-strict
e2e_expect_eq "vpe2e-d-n-strict gets the CPU the other guest does not hold" 0 "$vpd_planned_cpus"
e2e_expect_eq "vpe2e-d-n-strict keeps its own <emulatorpin>" 0 \
    "$(virsh emulatorpin vpe2e-d-n-strict | sed -n 's/^ *\*: *//p')"
e2e_expect_match "virsh numatune: strict on node 0" 'numa_mode *: strict' \
    "$(virsh numatune vpe2e-d-n-strict)"
e2e_expect_match "virsh numatune: nodeset 0" 'numa_nodeset *: 0$' "$(virsh numatune vpe2e-d-n-strict)"
pid=$(e2e_qemu_pid vpe2e-d-n-strict)
e2e_expect_eq "vpe2e-d-n-strict's QEMU may allocate only on node 0" 0 \
    "$(sed -n 's/^Mems_allowed_list:[[:space:]]*//p' "/proc/$pid/status")"
e2e_expect_match "the ledger holds its 64 MiB on node 0" \
    '"memory":\[\{"numa":0,"bytes":67108864\}\]' \
    "$(tr -d ' \n' <"$e2e_tmp/state/ledger.json")"
vpd_check_disjoint

virsh -q destroy vpe2e-d-n-strict >/dev/null
virsh -q destroy vpe2e-d-n-cpuset >/dev/null
vp_wait_until 10 vpd_count_is vpe2e-d-n- 0 || e2e_fail "still recorded after stop: $(vpd_status)"
e2e_pass "both guests destroyed: nothing held"
