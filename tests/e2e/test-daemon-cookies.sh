#!/bin/bash
# Core-scheduling cookies in vcpuplaced with real libvirtd and QEMU TCG guests. This host's
# kernel has no SCHED_CORE: the daemon must say so once in its log, with the kernel's
# answer, keep placing and pinning, and report every QEMU thread's cookie as 'unsupported'
# in `vcpuplace status` (text and JSON), the expected cookie beside it. On a kernel that
# has core scheduling the same guests must carry cookies: the VM its own, checked per
# thread, distinct from the other's. Guests: vpe2e-k-* (the daemon manages those only).
. "$(dirname "$0")/lib.sh"
e2e_require_env
. "$(dirname "$0")/daemon-helpers.sh"

# The daemon no longer records the guest (evaluated at each try).
released() { [ "$(vpd_state "$1")" = none ]; }

online=$(e2e_cpus "$(cat /sys/devices/system/cpu/online)")
ncpus=$(echo "$online" | tr ',' '\n' | grep -c .)
[ "$ncpus" -ge 2 ] || e2e_skip "needs 2 online CPUs, this host has $ncpus"

vpd_config "host_cpus=$(cat /sys/devices/system/cpu/online)" "qemu_conf=$e2e_tmp/qemu.conf"
sed -i 's/^domains=.*/domains=vpe2e-k-*/' "$vpd_conf"
printf '# as libvirt ships it\n#sched_core = "vcpus"\n' >"$e2e_tmp/qemu.conf"
vpd_start

# jget JSON PYTHON-EXPRESSION: a value out of `vcpuplace status --json` (j is the reply).
jget() {
    python3 -c 'import json, sys; j = json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}

e2e_define vpe2e-k-own --policy coresched=vm --policy group=blue
e2e_define vpe2e-k-off --policy coresched=off --policy group=blue
virsh -q start vpe2e-k-own >/dev/null
virsh -q start vpe2e-k-off >/dev/null
vpd_check_applied vpe2e-k-own
vpd_check_applied vpe2e-k-off
vpd_check_disjoint

json=$("$vpd_cli" status --json --config "$vpd_conf")
kernel=$(jget "$json" 'j["coresched"]["kernel"]')
e2e_expect_eq "libvirt's sched_core read from the configured qemu.conf" none \
    "$(jget "$json" 'j["coresched"]["libvirt_sched_core"]')"

# The QEMU threads of each guest are listed (the main thread among them), the vCPU
# threads marked; QEMU may start or end helper threads after the daemon looked.
for g in vpe2e-k-own vpe2e-k-off; do
    pid=$(e2e_qemu_pid "$g")
    listed=$(jget "$json" "' '.join(str(t['tid']) for d in j['domains'] if d['domain'] == '$g' for t in d['coresched']['threads'])")
    e2e_expect_match "$g: status lists the main thread" "(^| )$pid( |$)" "$listed"
    vcpu_tid=$(e2e_vcpu_threads "$pid" | awk '$1 == 0 { print $2 }')
    e2e_expect_eq "$g: vCPU 0's thread listed and marked as such" "$vcpu_tid" \
        "$(jget "$json" "[t['tid'] for d in j['domains'] if d['domain'] == '$g' for t in d['coresched']['threads'] if t['vcpu'] == 0][0]")"
done
e2e_expect_eq "vpe2e-k-own expects its own cookie on its vCPU thread" "vm:vpe2e-k-own" \
    "$(jget "$json" "[t['expected'] for d in j['domains'] if d['domain'] == 'vpe2e-k-own' for t in d['coresched']['threads'] if t['vcpu'] == 0][0]")"
e2e_expect_eq "vpe2e-k-off (coresched=off, no cookie from libvirt) expects none" None \
    "$(jget "$json" "[d['coresched']['set'] for d in j['domains'] if d['domain'] == 'vpe2e-k-off'][0]")"

case $kernel in
unsupported | no-smt)
    reason=$(jget "$json" 'j["coresched"]["kernel_reason"]')
    e2e_expect_match "the kernel's answer is in the status" \
        'no core scheduling \(built without CONFIG_SCHED_CORE\) \(EINVAL|no CPU core has two SMT siblings online \(ENODEV' \
        "$reason"
    e2e_expect_eq "every thread of both guests reads '$kernel'" "$kernel" \
        "$(jget "$json" "' '.join(sorted(set(t['state'] for d in j['domains'] for t in d['coresched']['threads'])))")"
    e2e_expect_eq "each guest's reason is the kernel's" "$reason" \
        "$(jget "$json" "[d['coresched']['reason'] for d in j['domains'] if d['domain'] == 'vpe2e-k-own'][0]")"
    text=$(vpd_status vpe2e-k-own)
    e2e_expect_match "status text: per thread expected and state" \
        "CPU 0/TCG +vm:vpe2e-k-own +- +$kernel" "$text"
    e2e_expect_match "status text: the kernel's reason" "cookies: core scheduling: cannot read" "$text"

    # Said once, clearly, however many guests come and go.
    virsh -q destroy vpe2e-k-own >/dev/null
    vp_wait_until 30 released vpe2e-k-own || e2e_fail "vpe2e-k-own still recorded"
    virsh -q start vpe2e-k-own >/dev/null
    vpd_check_applied vpe2e-k-own
    e2e_expect_eq "the daemon's log says it once" 1 \
        "$(grep -c 'core scheduling is not available, so no VM gets a cookie' "$vpd_log")"
    e2e_expect_match "... with the kernel's answer" \
        'core scheduling is not available, so no VM gets a cookie: .*(EINVAL|ENODEV)' "$(cat "$vpd_log")"
    ;;
ok)
    e2e_expect_eq "vpe2e-k-own carries its own cookie" ok \
        "$(jget "$json" "[d['coresched']['state'] for d in j['domains'] if d['domain'] == 'vpe2e-k-own'][0]")"
    e2e_expect_eq "its vCPU thread carries the cookie the status names" \
        "$(jget "$json" "[d['coresched']['cookie'] for d in j['domains'] if d['domain'] == 'vpe2e-k-own'][0]")" \
        "$(jget "$json" "[t['actual'] for d in j['domains'] if d['domain'] == 'vpe2e-k-own' for t in d['coresched']['threads'] if t['vcpu'] == 0][0]")"
    ;;
*)
    e2e_fail "unexpected kernel state '$kernel'"
    ;;
esac
