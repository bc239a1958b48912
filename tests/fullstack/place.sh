#!/bin/bash
# Placement on real SMT siblings (2 sockets x 2 cores x 2 threads), per policy, checked
# through virsh vcpupin, /proc's Cpus_allowed_list and vcpuplace status (which must agree,
# vpd_check_applied) and the kernel's own sibling lists: isolate holds its vCPU's sibling
# idle, pack puts the guest's thread pair on one core's two siblings, spread puts each
# vCPU on a core of its own while whole cores remain, share fills what is left, and a
# start that cannot be met is refused with vcpuplace's reason in virsh's error.
. "$VP_TOPDIR/tests/e2e/lib.sh"
e2e_require_env
. "$VP_TOPDIR/tests/e2e/daemon-helpers.sh"
. "$VP_TOPDIR/tests/fullstack/lib.sh"

fs_daemon
vpd_install_hook

e2e_define vpe2e-f-iso --policy smt=isolate
e2e_define vpe2e-f-pack --vcpus 2 --threads 2 --policy smt=pack
e2e_define vpe2e-f-spread --vcpus 2 --policy smt=spread
e2e_define vpe2e-f-share --policy smt=share --policy unmet=degrade
e2e_define vpe2e-f-big --vcpus 4 --threads 2 --policy smt=pack --policy unmet=refuse

virsh -q start vpe2e-f-iso >/dev/null
vpd_check_applied vpe2e-f-iso
iso=$vpd_planned_cpus
virsh -q start vpe2e-f-pack >/dev/null
vpd_check_applied vpe2e-f-pack
pack=$vpd_planned_cpus
virsh -q start vpe2e-f-spread >/dev/null
vpd_check_applied vpe2e-f-spread
spread=$vpd_planned_cpus
vpd_check_disjoint

e2e_expect_eq "pack: the guest's two threads on one host core's two siblings" \
    "$(fs_siblings "${pack%%,*}")" "$(echo "$pack" | tr ',' '\n' | sort -n | paste -sd,)"
s0=${spread%%,*} s1=${spread##*,}
[ "$(fs_core "$s0")" != "$(fs_core "$s1")" ] ||
    e2e_fail "spread: vCPUs on CPUs $s0 and $s1, siblings of one core"
e2e_pass "spread: vCPUs on CPUs $s0 and $s1, two different cores"
# Isolate: no other guest's vCPU is planned on the isolated vCPU's sibling.
sib=$(fs_siblings "$iso" | tr ',' '\n' | grep -vx "$iso")
others=$(vpd_status | awk '/^  vCPU/ { on = 1; next } /^  emulator/ { on = 0 } on { print $2 }' |
    grep -vx "$iso" | paste -sd,)
case ",$others," in
*",$sib,"*) e2e_fail "isolate: its sibling CPU $sib is planned for another vCPU ($others)" ;;
esac
e2e_pass "isolate: vCPU on CPU $iso, its sibling $sib held idle (others on $others)"
e2e_expect_eq "isolate: the sibling runs no QEMU vCPU thread" "" \
    "$(for p in /run/libvirt/qemu/*.pid; do q=$(cat "$p"); e2e_vcpu_threads "$q" |
        while read -r _ t; do [ "$(e2e_allowed_list "$q" "$t")" != "$sib" ] || echo "$t"; done; done)"

# 4 of 8 CPUs hold guests, two whole cores are gone: a 2-core pack guest that refuses
# anything less cannot start.
if out=$(virsh -q start vpe2e-f-big 2>&1); then
    e2e_fail "vpe2e-f-big started; expected a refusal"
fi
e2e_expect_match "virsh start vpe2e-f-big refused with vcpuplace's reason" \
    "vcpuplace: refusing to start vpe2e-f-big" "$out"
e2e_expect_eq "vpe2e-f-big not running" "shut off" "$(virsh domstate vpe2e-f-big)"

virsh -q start vpe2e-f-share >/dev/null
vpd_check_applied vpe2e-f-share
share=$vpd_planned_cpus
vpd_check_disjoint
echo "figure: planned iso=$iso pack=$pack spread=$spread, after share: spread=$(vpd_planned vpe2e-f-spread) share=$share"
