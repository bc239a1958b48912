#!/bin/bash
# Admission with room made, on the real libvirtd with QEMU TCG guests: an isolate guest that
# finds no whole core is admitted after vcpuplaced moves a running smt=share guest's vCPU
# onto a share-held core, pinned through libvirt before the hook's reserve is answered
# (virsh vcpupin and /proc agree with the ledger); and when libvirt refuses that move, it
# is rolled back and `virsh start` fails with the reason naming the move.
#
# This host has two CPUs and no SMT, and libvirt refuses pins to CPUs it lacks. So the
# daemon sees a synthetic host of two cores with two threads, numbered as Intel does
# (core 0: CPUs 0 and 2, core 1: CPUs 1 and 3): only CPUs 0 and 1 exist. A spread guest
# squeezed onto its own siblings would need a third real CPU (its other vCPU's core holds
# one real CPU, which it runs on), so that squeeze stays in the integration tier
# (tests/integration/test_admission.c); a share guest can move between the two real CPUs
# when the other core is held by a share reservation on its missing CPU. Reservations the
# hook makes for guests that never start (placeholders: the real hook binary, run here as
# libvirt would run it at "prepare begin") hold the missing CPUs.
. "$(dirname "$0")/lib.sh"
e2e_require_env
. "$(dirname "$0")/daemon-helpers.sh"

online=$(e2e_cpus "$(cat /sys/devices/system/cpu/online)")
case ",$online," in *,0,*1,*) ;; *) e2e_skip "needs online CPUs 0 and 1, this host has $online" ;; esac
# The reserve waits half the hook's timeout for its moves; the guests' QEMUs load this
# host, so the wait is generous here (its default is 250 ms).
vpd_config "topology=synthetic:pack:1 core:2 pu:2(indexes=0,2,1,3)" hook_timeout_ms=5000 \
    node_memory_reserve_mib=0 vcpu_poll_ms=0 "[rebalance]" mode=off "[admission]" max_moves=2
vpd_start
vpd_install_hook

# A placeholder reservation: the hook's prepare begin for a guest that is never defined.
placeholder() { # name cpuset policy...
    local name=$1 cpuset=$2 args=() p
    shift 2
    for p in "$@"; do args+=(--policy "$p"); done
    "$e2e_top/scripts/guest-xml" "$name" "${args[@]}" --policy emulator=vcpus |
        sed "s|<vcpu placement='static'>|<vcpu placement='static' cpuset='$cpuset'>|" \
            >"$e2e_tmp/$name.xml"
    VCPUPLACE_CONFIG=$vpd_conf "$vpd_hook" "$name" prepare begin - <"$e2e_tmp/$name.xml" ||
        e2e_fail "placeholder $name not reserved"
}
unplace() { # name
    VCPUPLACE_CONFIG=$vpd_conf "$vpd_hook" "$1" release end - <"$e2e_tmp/$1.xml"
}

e2e_define vpe2e-d-sq-share --policy smt=share --policy emulator=vcpus --policy unmet=refuse
# An isolate guest's emulator floats over its core, reserved sibling included: here that
# sibling is a missing CPU, so the guest's <vcpu cpuset='1'> keeps vCPU and emulator on the
# CPU it will get (the reservation's CPU 3 is only held).
e2e_define vpe2e-d-sq-iso --policy smt=isolate --policy unmet=refuse --policy emulator=vcpus
sed -i "s|<vcpu placement='static'>|<vcpu placement='static' cpuset='1'>|" \
    "$e2e_tmp/vpe2e-d-sq-iso.xml"
virsh -q undefine vpe2e-d-sq-iso >/dev/null
virsh -q define "$e2e_tmp/vpe2e-d-sq-iso.xml" >/dev/null

# The share guest on CPU 1, core 0's missing CPU 2 held by a share placeholder that may not
# move (rebalance=off), CPU 0 free: no whole core is left for an isolate guest.
setup() { # the CPU the placeholder holds on core 0
    placeholder vpe2e-d-sq-hold-iso 0,2 smt=isolate
    virsh -q start vpe2e-d-sq-share >/dev/null
    vpd_check_applied vpe2e-d-sq-share
    e2e_expect_eq "vpe2e-d-sq-share on CPU 1 (core 0 held)" 1 "$vpd_planned_cpus"
    unplace vpe2e-d-sq-hold-iso
    placeholder vpe2e-d-sq-hold "$1" smt=share rebalance=off
    e2e_expect_eq "placeholder on CPU $1" "$1" "$(vpd_planned vpe2e-d-sq-hold)"
}

# ---- room made -------------------------------------------------------------------------
setup 2
t0=$(vp_now_ms)
virsh -q start vpe2e-d-sq-iso >/dev/null || e2e_fail "vpe2e-d-sq-iso refused: $(tail -n 5 "$vpd_log")"
echo "virsh start with an admission move: $(($(vp_now_ms) - t0)) ms"
vpd_check_applied vpe2e-d-sq-share
e2e_expect_eq "vpe2e-d-sq-share moved to CPU 0" 0 "$vpd_planned_cpus"
vpd_check_applied vpe2e-d-sq-iso
e2e_expect_eq "vpe2e-d-sq-iso on the vacated core's CPU 1" 1 "$vpd_planned_cpus"
e2e_expect_match "vpe2e-d-sq-iso holds core 1's sibling 3" 'reserved idle: 3' \
    "$(vpd_status vpe2e-d-sq-iso)"
e2e_expect_eq "vpe2e-d-sq-iso emulator on CPU 1" 1 \
    "$(virsh emulatorpin vpe2e-d-sq-iso | sed -n 's/^ *\*: *//p')"
e2e_expect_eq "vpe2e-d-sq-share emulator followed its vCPU" 0 \
    "$(virsh emulatorpin vpe2e-d-sq-share | sed -n 's/^ *\*: *//p')"
vpd_check_disjoint
e2e_expect_match "vcpuplace status shows the move" \
    'for vpe2e-d-sq-iso: vpe2e-d-sq-share vCPU 0 CPU 1 -> 0 moved' "$(vpd_status)"
e2e_expect_match "metrics count it" '^vcpuplace_moves_total\{reason="admission"\} 1$' \
    "$("$vpd_cli" metrics --config "$vpd_conf")"
e2e_expect_match "the move is logged with its start and reason" \
    "domain vpe2e-d-sq-share: vCPU 0 moved from CPU 1 to CPU 0 for the start of 'vpe2e-d-sq-iso': makes room" \
    "$(cat "$vpd_log")"

virsh -q destroy vpe2e-d-sq-iso >/dev/null
virsh -q destroy vpe2e-d-sq-share >/dev/null
unplace vpe2e-d-sq-hold
vp_wait_until 10 vpd_count_is vpe2e-d- 0 || e2e_fail "still recorded: $(vpd_status)"

# ---- the move libvirt refuses ------------------------------------------------------------
# The placeholder takes CPU 0: the share guest's only destination is core 0's CPU 2, which
# this host lacks.
setup 0
if refusal=$(virsh -q start vpe2e-d-sq-iso 2>&1); then
    e2e_fail "vpe2e-d-sq-iso started; expected a refusal"
fi
e2e_expect_match "virsh start refused with vcpuplace's reason" \
    "refusing to start vpe2e-d-sq-iso: domain 'vpe2e-d-sq-iso': " "$refusal"
e2e_expect_match "the reason names the failed move, rolled back" \
    "the moves to make room \(vCPU 0 of 'vpe2e-d-sq-share' from CPU 1 to CPU 2\) failed and were rolled back" \
    "$refusal"
e2e_expect_eq "vpe2e-d-sq-iso not running" "shut off" "$(virsh domstate vpe2e-d-sq-iso)"
e2e_expect_eq "vpe2e-d-sq-iso holds nothing" none "$(vpd_state vpe2e-d-sq-iso)"
vpd_check_applied vpe2e-d-sq-share
e2e_expect_eq "vpe2e-d-sq-share back on CPU 1" 1 "$vpd_planned_cpus"
e2e_expect_match "metrics count the failure" '^vcpuplace_move_failures_total\{reason="admission"\} 1$' \
    "$("$vpd_cli" metrics --config "$vpd_conf")"

virsh -q destroy vpe2e-d-sq-share >/dev/null
unplace vpe2e-d-sq-hold
vp_wait_until 10 vpd_count_is vpe2e-d- 0 || e2e_fail "still recorded: $(vpd_status)"
e2e_pass "all guests destroyed: nothing held"
