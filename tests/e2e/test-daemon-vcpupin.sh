#!/bin/bash
# An operator's `virsh vcpupin` on a guest vcpuplace placed: libvirt's tunable event makes
# vcpuplaced read the live pins again. A move onto a free CPU is adopted (the ledger holds
# the new CPU and frees the old, so the next guest is placed on the old one); a move onto
# a CPU another guest holds is put back, since two guests' vCPUs on one CPU is what
# vcpuplace is there to prevent.
. "$(dirname "$0")/lib.sh"
e2e_require_env
. "$(dirname "$0")/daemon-helpers.sh"

vpd_small_host

e2e_define vpe2e-d-vp-moved --policy smt=spread --policy unmet=refuse
e2e_define vpe2e-d-vp-next --policy smt=spread --policy unmet=refuse
virsh -q start vpe2e-d-vp-moved >/dev/null
vpd_check_applied vpe2e-d-vp-moved
was=$vpd_planned_cpus
to=$(echo "$online" | tr ',' '\n' | grep -vx "$was" | head -n 1)

virsh -q vcpupin vpe2e-d-vp-moved 0 "$to" >/dev/null
planned_is() { [ "$(vpd_planned "$1")" = "$2" ]; }
vp_wait_until 30 planned_is vpe2e-d-vp-moved "$to" ||
    e2e_fail "vcpuplaced still plans CPU $(vpd_planned vpe2e-d-vp-moved) after virsh vcpupin to $to"
vpd_check_applied vpe2e-d-vp-moved
grep -q "domain vpe2e-d-vp-moved: adopted libvirt's live pins" "$vpd_log" ||
    e2e_fail "vcpuplaced did not say it adopted the move"
e2e_pass "virsh vcpupin to free CPU $to: adopted"

virsh -q start vpe2e-d-vp-next >/dev/null
vpd_check_applied vpe2e-d-vp-next
e2e_expect_eq "the next guest gets the CPU the move freed" "$was" "$vpd_planned_cpus"

# Onto the other guest's CPU: put back.
virsh -q vcpupin vpe2e-d-vp-moved 0 "$was" >/dev/null
pinned_is() { [ "$(virsh -q vcpupin "$1" 0 | awk '{print $2}')" = "$2" ]; }
vp_wait_until 30 pinned_is vpe2e-d-vp-moved "$to" ||
    e2e_fail "vpe2e-d-vp-moved left on CPU $was, which vpe2e-d-vp-next holds"
vpd_check_applied vpe2e-d-vp-moved
vpd_check_disjoint
e2e_pass "virsh vcpupin onto another guest's CPU: put back on CPU $to"
