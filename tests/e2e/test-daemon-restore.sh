#!/bin/bash
# Save and restore, as libvirt-guests does around a host reboot. A transient guest (no
# persistent definition to fall back on, as after a plain `virsh migrate`) that vcpuplace
# placed is saved; while it is away another guest takes its CPU; then it is restored. The
# saved image holds its live XML, whose <cputune> has the pins vcpuplace applied: the
# hook's `restore begin` takes them out (vcpuplace's record in the live metadata says
# which they were), so the restored guest is placed anew on a free CPU and recorded as
# placed, not kept on the other guest's CPU as pins of its own.
. "$(dirname "$0")/lib.sh"
e2e_require_env
. "$(dirname "$0")/daemon-helpers.sh"

vpd_small_host

e2e_guests+=(vpe2e-d-rs-saved)
"$e2e_top/scripts/guest-xml" vpe2e-d-rs-saved --policy smt=spread --policy unmet=refuse \
    >"$e2e_tmp/saved.xml"
e2e_define vpe2e-d-rs-taker --policy smt=spread --policy unmet=refuse
virsh -q create "$e2e_tmp/saved.xml" >/dev/null
vpd_check_applied vpe2e-d-rs-saved
was=$vpd_planned_cpus
record=$(virsh metadata vpe2e-d-rs-saved --uri http://vcpuplace.org/xmlns/applied/1.0 2>&1)
e2e_expect_match "the live metadata records the pins vcpuplace applied" "vcpus=\"$was\"" "$record"

# Every other CPU taken, so that the saved guest's CPU is the only free one after the save.
fill=()
for ((n = 1; n < ncpus; n++)); do
    e2e_define vpe2e-d-rs-fill$n
    virsh -q start vpe2e-d-rs-fill$n >/dev/null
    vpd_check_applied vpe2e-d-rs-fill$n
    fill+=("vpe2e-d-rs-fill$n")
done

virsh -q save vpe2e-d-rs-saved "$e2e_tmp/saved.img" >/dev/null
vp_wait_until 30 vpd_gone vpe2e-d-rs-saved || e2e_fail "the saved guest is still recorded"
grep -q "vcpupin vcpu='0' cpuset='$was'" <(virsh save-image-dumpxml "$e2e_tmp/saved.img") ||
    e2e_fail "the saved image does not hold the applied pin (vCPU 0 on CPU $was)"
e2e_pass "saved: released, the image holds the pin vcpuplace applied"

virsh -q start vpe2e-d-rs-taker >/dev/null
vpd_check_applied vpe2e-d-rs-taker
e2e_expect_eq "another guest took the saved guest's CPU" "$was" "$vpd_planned_cpus"
freed=$(vpd_planned "${fill[0]}")
virsh -q destroy "${fill[0]}" >/dev/null
vp_wait_until 30 vpd_gone "${fill[0]}" || e2e_fail "${fill[0]} still recorded"

virsh -q restore "$e2e_tmp/saved.img" >/dev/null
vpd_check_applied vpe2e-d-rs-saved
e2e_expect_eq "restored onto the CPU that is free now" "$freed" "$vpd_planned_cpus"
e2e_expect_match "restored and placed by the placer, not pinned by itself" '^applied, placed' \
    "$(vpd_state vpe2e-d-rs-saved)"
vpd_check_disjoint
grep -q "domain vpe2e-d-rs-saved: the pins vcpuplace applied where it ran before are taken out" \
    "$vpd_log" || e2e_fail "vcpuplaced did not rewrite the restored guest's XML"
e2e_pass "the hook's restore begin had vcpuplaced take the old pins out"

# --- a record the tenant forged ----------------------------------------------------------
# A guest with its own pins (Nova's) and, in its metadata, an <applied> record naming just
# those pins, written by hand: vcpuplace's key did not sign it, so the restore keeps them.
for g in "${fill[@]:1}" vpe2e-d-rs-taker vpe2e-d-rs-saved; do virsh -q destroy "$g" >/dev/null; done
own=${online%%,*}
e2e_guests+=(vpe2e-d-rs-forged)
"$e2e_top/scripts/guest-xml" vpe2e-d-rs-forged --pin "0=$own" --emulatorpin "$own" |
    sed "s|</domain>|<metadata><a:applied xmlns:a='http://vcpuplace.org/xmlns/applied/1.0' vcpus='$own' emulator='$own'/></metadata></domain>|" \
        >"$e2e_tmp/forged.xml"
virsh -q create "$e2e_tmp/forged.xml" >/dev/null
virsh -q save vpe2e-d-rs-forged "$e2e_tmp/forged.img" >/dev/null
virsh -q restore "$e2e_tmp/forged.img" >/dev/null
e2e_expect_match "forged record: the restored guest keeps its own vCPU pin" \
    "vcpupin vcpu='0' cpuset='$own'" "$(virsh dumpxml vpe2e-d-rs-forged)"
e2e_expect_match "forged record: and its own emulator pin" \
    "emulatorpin cpuset='$own'" "$(virsh dumpxml vpe2e-d-rs-forged)"
if grep -q "domain vpe2e-d-rs-forged: the pins vcpuplace applied where it ran before are taken out" "$vpd_log"; then
    e2e_fail "vcpuplaced took out pins on a record it did not write"
fi
e2e_pass "a forged applied record strips no pins"
