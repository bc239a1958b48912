#!/bin/bash
# vcpuplaced with the hook installed, real libvirtd, real QEMU TCG guests started by virsh:
# guests with different policies are placed and pinned (virsh vcpupin and /proc agree with
# the plan), a destroyed guest frees its CPUs for the next, a guest whose refuse-policy
# cannot be met is refused by `virsh start` with vcpuplace's reason, a guest without
# metadata gets the daemon's defaults, and a guest with its own <cputune> keeps its pins.
#
# Sized for a small host: one-vCPU guests, every online CPU handed out, no housekeeping.
. "$(dirname "$0")/lib.sh"
e2e_require_env
. "$(dirname "$0")/daemon-helpers.sh"

vpd_small_host

e2e_define vpe2e-d-iso --policy smt=isolate
e2e_define vpe2e-d-share --policy smt=share --policy emulator=vcpus --policy unmet=degrade
e2e_define vpe2e-d-spread --policy smt=spread
e2e_define vpe2e-d-nometa
# More vCPUs than the host has CPUs, each wanting a whole core: never placeable.
e2e_define vpe2e-d-toobig --vcpus $((ncpus + 1)) --policy smt=isolate --policy unmet=refuse
e2e_define vpe2e-d-pinned --vcpus 2 --pin 0=1 --pin 1=0 --emulatorpin 0-1

# Fill the host with one-vCPU guests of different policies, so the next one cannot fit.
t0=$(vp_now_ms)
virsh -q start vpe2e-d-iso >/dev/null
echo "virsh start with the hook: $(($(vp_now_ms) - t0)) ms"
vpd_check_applied vpe2e-d-iso
iso=$vpd_planned_cpus
e2e_expect_match "vpe2e-d-iso placed by the placer" '^applied, placed' "$(vpd_state vpe2e-d-iso)"
e2e_expect_match "vpe2e-d-iso policy isolate" 'smt=isolate' "$(vpd_status vpe2e-d-iso)"

virsh -q start vpe2e-d-share >/dev/null
vpd_check_applied vpe2e-d-share
share=$vpd_planned_cpus
e2e_expect_match "vpe2e-d-share policy share, emulator on its vCPU" 'smt=share .*emulator=vcpus' \
    "$(vpd_status vpe2e-d-share)"
e2e_expect_eq "vpe2e-d-share emulator on its own vCPU's CPU" "$share" \
    "$(virsh emulatorpin vpe2e-d-share | sed -n 's/^ *\*: *//p')"
vpd_check_disjoint

n=2
while [ $n -lt "$ncpus" ]; do
    e2e_define vpe2e-d-fill$n
    virsh -q start vpe2e-d-fill$n >/dev/null
    vpd_check_applied vpe2e-d-fill$n
    n=$((n + 1))
done

# Refused: the hook's exit status stops the start, its stderr is in virsh's error.
if out=$(virsh -q start vpe2e-d-toobig 2>&1); then
    e2e_fail "vpe2e-d-toobig started; expected a refusal"
fi
e2e_expect_match "virsh start vpe2e-d-toobig refused with vcpuplace's reason" \
    "vcpuplace: refusing to start vpe2e-d-toobig: domain 'vpe2e-d-toobig': " "$out"
e2e_expect_eq "vpe2e-d-toobig not running" "shut off" "$(virsh domstate vpe2e-d-toobig)"
e2e_expect_eq "vpe2e-d-toobig holds nothing" none "$(vpd_state vpe2e-d-toobig)"
# The host is full: even a one-vCPU guest is refused now.
out=$(virsh -q start vpe2e-d-spread 2>&1) && e2e_fail "vpe2e-d-spread started on a full host"
e2e_expect_match "full host: vpe2e-d-spread refused" "refusing to start vpe2e-d-spread" "$out"

# Destroy frees: the next guest gets the CPU the destroyed one held.
virsh -q destroy vpe2e-d-iso >/dev/null
vp_wait_until 10 vpd_gone vpe2e-d-iso || e2e_fail "vpe2e-d-iso still recorded"
e2e_pass "virsh destroy vpe2e-d-iso: released"
virsh -q start vpe2e-d-spread >/dev/null
vpd_check_applied vpe2e-d-spread
spread=$vpd_planned_cpus
e2e_expect_eq "vpe2e-d-spread takes the CPU vpe2e-d-iso freed" "$iso" "$spread"
e2e_expect_match "vpe2e-d-spread policy spread" 'smt=spread' "$(vpd_status vpe2e-d-spread)"
vpd_check_disjoint

# No metadata: the daemon's defaults (spread).
virsh -q destroy vpe2e-d-spread >/dev/null
vp_wait_until 10 vpd_gone vpe2e-d-spread || e2e_fail "vpe2e-d-spread still recorded"
virsh -q start vpe2e-d-nometa >/dev/null
vpd_check_applied vpe2e-d-nometa
e2e_expect_match "vpe2e-d-nometa gets the default policy" 'smt=spread group=- coresched=vm' \
    "$(vpd_status vpe2e-d-nometa)"

# Own <cputune>: started on a busy host, its pins stay exactly as defined.
virsh -q start vpe2e-d-pinned >/dev/null
vpd_wait_state vpe2e-d-pinned '(pinned|unplaced), pinned'
pid=$(e2e_qemu_pid vpe2e-d-pinned)
while read -r vcpu tid; do
    want=$((1 - vcpu))
    e2e_expect_eq "vpe2e-d-pinned vCPU $vcpu: virsh vcpupin keeps <cputune>" "$want" \
        "$(virsh -q vcpupin vpe2e-d-pinned "$vcpu" | awk '{print $2}')"
    e2e_expect_eq "vpe2e-d-pinned vCPU $vcpu: /proc keeps <cputune>" "$want" \
        "$(e2e_allowed_list "$pid" "$tid")"
done < <(e2e_vcpu_threads "$pid")
e2e_expect_eq "vpe2e-d-pinned emulatorpin kept" "0-1" \
    "$(virsh emulatorpin vpe2e-d-pinned | sed -n 's/^ *\*: *//p')"

# Everything stopped: nothing held.
for g in vpe2e-d-share vpe2e-d-nometa vpe2e-d-pinned $(seq -f 'vpe2e-d-fill%g' 2 $((ncpus - 1))); do
    virsh -q destroy "$g" >/dev/null 2>&1 || true
done
vp_wait_until 10 vpd_count_is vpe2e-d- 0 ||
    e2e_fail "still recorded after every guest stopped: $(vpd_status)"
e2e_pass "all guests destroyed: nothing held"
