#!/bin/bash
# Pack's last tier on the real libvirtd with QEMU TCG guests: once the host has no whole
# core left and no move makes one, an smt=pack guest (unmet=refuse) starts on the free
# sibling of a core another cookie's spread guest runs on, pinned through libvirt as
# planned (virsh vcpupin and /proc agree with the ledger), and the plan says so; once the
# spread guest is gone the same start takes the whole core instead.
#
# This host has two CPUs and no SMT, so the daemon sees a synthetic host of two cores with
# two threads (core 0: CPUs 0 and 1, core 1: CPUs 2 and 3): only core 0 exists. An isolate
# placeholder (the real hook binary, run as libvirt would at "prepare begin", for a guest
# that never starts) holds core 1, so core 0 is the only core the guests can run on.
. "$(dirname "$0")/lib.sh"
e2e_require_env
. "$(dirname "$0")/daemon-helpers.sh"

online=$(e2e_cpus "$(cat /sys/devices/system/cpu/online)")
case ",$online," in *,0,*1,*) ;; *) e2e_skip "needs online CPUs 0 and 1, this host has $online" ;; esac
vpd_config "topology=synthetic:pack:1 core:2 pu:2(indexes=0,1,2,3)" hook_timeout_ms=5000 \
    node_memory_reserve_mib=0 vcpu_poll_ms=0 "[rebalance]" mode=off "[admission]" max_moves=2
vpd_start
vpd_install_hook

hold=$e2e_tmp/vpe2e-d-pa-hold.xml
"$e2e_top/scripts/guest-xml" vpe2e-d-pa-hold --policy smt=isolate --policy emulator=vcpus |
    sed "s|<vcpu placement='static'>|<vcpu placement='static' cpuset='2,3'>|" >"$hold"
VCPUPLACE_CONFIG=$vpd_conf "$vpd_hook" vpe2e-d-pa-hold prepare begin - <"$hold" ||
    e2e_fail "placeholder vpe2e-d-pa-hold not reserved"
e2e_expect_eq "the placeholder holds core 1" 2 "$(vpd_planned vpe2e-d-pa-hold)"

e2e_define vpe2e-d-pa-spread --policy smt=spread --policy emulator=vcpus
e2e_define vpe2e-d-pa-pack --policy smt=pack --policy unmet=refuse --policy emulator=vcpus

# ---- beside another cookie: no whole core is left -----------------------------------------
virsh -q start vpe2e-d-pa-spread >/dev/null ||
    e2e_fail "vpe2e-d-pa-spread refused: $(tail -n 5 "$vpd_log")"
vpd_check_applied vpe2e-d-pa-spread
e2e_expect_eq "vpe2e-d-pa-spread on core 0's CPU 0" 0 "$vpd_planned_cpus"
virsh -q start vpe2e-d-pa-pack >/dev/null ||
    e2e_fail "vpe2e-d-pa-pack refused: $(tail -n 5 "$vpd_log")"
vpd_check_applied vpe2e-d-pa-pack
e2e_expect_eq "vpe2e-d-pa-pack on core 0's free sibling" 1 "$vpd_planned_cpus"
e2e_expect_match "status says it shares the core with another cookie" \
    'beside other cookies: 1 vCPU share a core with another cookie' \
    "$(vpd_status vpe2e-d-pa-pack)"
e2e_expect_match "the JSON status counts it" '"beside_others" *: *1' \
    "$(vpd_status --json vpe2e-d-pa-pack)"
e2e_expect_eq "no move was made: a lone spread vCPU has nowhere legal to go" "" \
    "$("$vpd_cli" metrics --config "$vpd_conf" | sed -n 's/^vcpuplace_moves_total{reason="admission"} //p' | grep -v '^0$')"
vpd_check_disjoint

# ---- a whole core again: the same start takes it whole --------------------------------------
virsh -q destroy vpe2e-d-pa-pack >/dev/null
virsh -q destroy vpe2e-d-pa-spread >/dev/null
vp_wait_until 10 vpd_count_is vpe2e-d-pa-[ps] 0 || e2e_fail "still recorded: $(vpd_status)"
virsh -q start vpe2e-d-pa-pack >/dev/null ||
    e2e_fail "vpe2e-d-pa-pack refused on a free core: $(tail -n 5 "$vpd_log")"
vpd_check_applied vpe2e-d-pa-pack
e2e_expect_match "a whole core: its sibling is held idle for it, no one beside it" \
    'reserved idle: [01]' "$(vpd_status vpe2e-d-pa-pack)"
if vpd_status vpe2e-d-pa-pack | grep -q 'beside other cookies'; then
    e2e_fail "vpe2e-d-pa-pack counted beside other cookies on a whole core"
fi

virsh -q destroy vpe2e-d-pa-pack >/dev/null
VCPUPLACE_CONFIG=$vpd_conf "$vpd_hook" vpe2e-d-pa-hold release end - <"$hold"
vp_wait_until 10 vpd_count_is vpe2e-d- 0 || e2e_fail "still recorded: $(vpd_status)"
e2e_pass "all guests destroyed: nothing held"
