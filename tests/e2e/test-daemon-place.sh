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

online=$(e2e_cpus "$(cat /sys/devices/system/cpu/online)")
ncpus=$(echo "$online" | tr ',' '\n' | grep -c .)
[ "$ncpus" -ge 2 ] || e2e_skip "needs 2 online CPUs, this host has $ncpus"

vpd_config "host_cpus=$(cat /sys/devices/system/cpu/online)"
vpd_start
vpd_install_hook

e2e_define vpe2e-iso --policy smt=isolate
e2e_define vpe2e-share --policy smt=share --policy emulator=vcpus --policy unmet=degrade
e2e_define vpe2e-spread --policy smt=spread
e2e_define vpe2e-nometa
# More vCPUs than the host has CPUs, each wanting a whole core: never placeable.
e2e_define vpe2e-toobig --vcpus $((ncpus + 1)) --policy smt=isolate --policy unmet=refuse
e2e_define vpe2e-pinned --vcpus 2 --pin 0=1 --pin 1=0 --emulatorpin 0-1

# Fill the host with one-vCPU guests of different policies, so the next one cannot fit.
t0=$(vp_now_ms)
virsh -q start vpe2e-iso >/dev/null
echo "virsh start with the hook: $(($(vp_now_ms) - t0)) ms"
vpd_check_applied vpe2e-iso
iso=$vpd_planned_cpus
e2e_expect_match "vpe2e-iso placed by the placer" '^applied, placed' "$(vpd_state vpe2e-iso)"
e2e_expect_match "vpe2e-iso policy isolate" 'smt=isolate' "$(vpd_status vpe2e-iso)"

virsh -q start vpe2e-share >/dev/null
vpd_check_applied vpe2e-share
share=$vpd_planned_cpus
e2e_expect_match "vpe2e-share policy share, emulator on its vCPU" 'smt=share .*emulator=vcpus' \
    "$(vpd_status vpe2e-share)"
e2e_expect_eq "vpe2e-share emulator on its own vCPU's CPU" "$share" \
    "$(virsh emulatorpin vpe2e-share | sed -n 's/^ *\*: *//p')"
vpd_check_disjoint

n=2
while [ $n -lt "$ncpus" ]; do
    e2e_define vpe2e-fill$n
    virsh -q start vpe2e-fill$n >/dev/null
    vpd_check_applied vpe2e-fill$n
    n=$((n + 1))
done

# Refused: the hook's exit status stops the start, its stderr is in virsh's error.
if out=$(virsh -q start vpe2e-toobig 2>&1); then
    e2e_fail "vpe2e-toobig started; expected a refusal"
fi
e2e_expect_match "virsh start vpe2e-toobig refused with vcpuplace's reason" \
    "vcpuplace: refusing to start vpe2e-toobig: domain 'vpe2e-toobig': " "$out"
e2e_expect_eq "vpe2e-toobig not running" "shut off" "$(virsh domstate vpe2e-toobig)"
e2e_expect_eq "vpe2e-toobig holds nothing" none "$(vpd_state vpe2e-toobig)"
# The host is full: even a one-vCPU guest is refused now.
out=$(virsh -q start vpe2e-spread 2>&1) && e2e_fail "vpe2e-spread started on a full host"
e2e_expect_match "full host: vpe2e-spread refused" "refusing to start vpe2e-spread" "$out"

# Destroy frees: the next guest gets the CPU the destroyed one held.
virsh -q destroy vpe2e-iso >/dev/null
vp_wait_until 10 test "$(vpd_state vpe2e-iso)" = none || e2e_fail "vpe2e-iso still recorded"
e2e_pass "virsh destroy vpe2e-iso: released"
virsh -q start vpe2e-spread >/dev/null
vpd_check_applied vpe2e-spread
spread=$vpd_planned_cpus
e2e_expect_eq "vpe2e-spread takes the CPU vpe2e-iso freed" "$iso" "$spread"
e2e_expect_match "vpe2e-spread policy spread" 'smt=spread' "$(vpd_status vpe2e-spread)"
vpd_check_disjoint

# No metadata: the daemon's defaults (spread).
virsh -q destroy vpe2e-spread >/dev/null
vp_wait_until 10 test "$(vpd_state vpe2e-spread)" = none || e2e_fail "vpe2e-spread still recorded"
virsh -q start vpe2e-nometa >/dev/null
vpd_check_applied vpe2e-nometa
e2e_expect_match "vpe2e-nometa gets the default policy" 'smt=spread group=- coresched=vm' \
    "$(vpd_status vpe2e-nometa)"

# Own <cputune>: started on a busy host, its pins stay exactly as defined.
virsh -q start vpe2e-pinned >/dev/null
vpd_wait_state vpe2e-pinned '(pinned|unplaced), pinned'
pid=$(e2e_qemu_pid vpe2e-pinned)
while read -r vcpu tid; do
    want=$((1 - vcpu))
    e2e_expect_eq "vpe2e-pinned vCPU $vcpu: virsh vcpupin keeps <cputune>" "$want" \
        "$(virsh -q vcpupin vpe2e-pinned "$vcpu" | awk '{print $2}')"
    e2e_expect_eq "vpe2e-pinned vCPU $vcpu: /proc keeps <cputune>" "$want" \
        "$(e2e_allowed_list "$pid" "$tid")"
done < <(e2e_vcpu_threads "$pid")
e2e_expect_eq "vpe2e-pinned emulatorpin kept" "0-1" \
    "$(virsh emulatorpin vpe2e-pinned | sed -n 's/^ *\*: *//p')"

# Everything stopped: nothing held.
for g in vpe2e-share vpe2e-nometa vpe2e-pinned $(seq -f 'vpe2e-fill%g' 2 $((ncpus - 1))); do
    virsh -q destroy "$g" >/dev/null 2>&1 || true
done
vp_wait_until 10 test "$(vpd_status | grep -c '^vpe2e-')" = 0 ||
    e2e_fail "still recorded after every guest stopped: $(vpd_status)"
e2e_pass "all guests destroyed: nothing held"
