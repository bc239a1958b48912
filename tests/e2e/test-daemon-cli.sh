#!/bin/bash
# The live commands of the vcpuplace CLI against real libvirtd and vcpuplaced:
# `policy` writes the domain's metadata through libvirt (persistent, and live when it
# runs) and the daemon places by it; `pin-config` writes the placement into the
# persistent <cputune>, which libvirt then applies itself at the next start; `status`
# reports text and JSON.
. "$(dirname "$0")/lib.sh"
e2e_require_env
. "$(dirname "$0")/daemon-helpers.sh"

ns=http://vcpuplace.org/xmlns/policy/1.0
vpd_config "host_cpus=$(cat /sys/devices/system/cpu/online)"
vpd_start
vpd_install_hook
cli() { "$vpd_cli" "$@" --config "$vpd_conf"; }

e2e_define vpe2e-d-cli
e2e_expect_match "policy without metadata: the defaults, said so" \
    'vpe2e-d-cli: smt=spread .*\(no vcpuplace metadata' "$(cli policy vpe2e-d-cli)"

out=$(cli policy vpe2e-d-cli --smt=isolate --group=blue)
e2e_expect_match "policy --smt=isolate --group=blue on a stopped guest: persistent only" \
    'written to the persistent definition' "$out"
e2e_expect_match "virsh metadata shows what the CLI wrote" "smt=.isolate.*group=.blue.|group=.blue.*smt=.isolate." \
    "$(virsh metadata vpe2e-d-cli --uri $ns --config)"
set +e
out=$(cli policy vpe2e-d-cli --smt=sideways 2>&1)
rc=$?
set -e
e2e_expect_eq "policy --smt=sideways: exit 1" 1 "$rc"
e2e_expect_match "policy --smt=sideways: names attribute and value" "smt='sideways'" "$out"
e2e_expect_match "policy --json" '"smt" : "isolate"' "$(cli policy vpe2e-d-cli --json)"

virsh -q start vpe2e-d-cli >/dev/null
vpd_check_applied vpe2e-d-cli
first=$vpd_planned_cpus
e2e_expect_match "the daemon placed by the written policy" 'smt=isolate group=blue' \
    "$(vpd_status vpe2e-d-cli)"

out=$(cli policy vpe2e-d-cli --smt=share)
e2e_expect_match "policy on a running guest: live and persistent" \
    'written to the running and persistent definition; the placement changes at the next start' "$out"
e2e_expect_match "live metadata updated" "smt=.share." "$(virsh metadata vpe2e-d-cli --uri $ns --live)"

e2e_expect_match "status --json" '"state" : "applied"' "$(cli status --json vpe2e-d-cli)"
set +e
out=$(cli status vpe2e-d-nosuch 2>&1)
rc=$?
set -e
e2e_expect_eq "status of an unknown domain: exit 1" 1 "$rc"
e2e_expect_match "status of an unknown domain: says so" "'vpe2e-d-nosuch' is not managed" "$out"

# pin-config of a running guest: its current placement into the persistent <cputune>.
out=$(cli pin-config vpe2e-d-cli)
e2e_expect_match "pin-config reports the pins it wrote" "<vcpupin vcpu='0' cpuset='$first'/>" "$out"
e2e_expect_match "persistent XML carries the pin" "<vcpupin vcpu='0' cpuset='$first'/>" \
    "$(virsh dumpxml --inactive vpe2e-d-cli)"
virsh -q destroy vpe2e-d-cli >/dev/null
virsh -q start vpe2e-d-cli >/dev/null
vpd_wait_state vpe2e-d-cli '(pinned|unplaced), pinned'
e2e_pass "next start: the domain's own <cputune>, respected (how=pinned)"
pid=$(e2e_qemu_pid vpe2e-d-cli)
tid=$(e2e_vcpu_threads "$pid" | awk '$1 == 0 {print $2}')
e2e_expect_eq "libvirt applied the written pin itself (/proc)" "$first" "$(e2e_allowed_list "$pid" "$tid")"
e2e_expect_match "pin-config again: nothing to write" 'already carries its own <cputune> pins' \
    "$(cli pin-config vpe2e-d-cli)"

# pin-config of a stopped guest: where the daemon would place it now.
e2e_define vpe2e-d-cli2 --policy smt=spread
out=$(cli pin-config vpe2e-d-cli2 --dry-run)
e2e_expect_match "pin-config --dry-run shows, writes nothing" "would write" "$out"
virsh dumpxml --inactive vpe2e-d-cli2 | grep -q '<vcpupin' && e2e_fail "--dry-run wrote pins"
cli pin-config vpe2e-d-cli2 >/dev/null
e2e_expect_match "pin-config of a stopped guest writes the proposed plan" "<vcpupin vcpu='0' cpuset='[0-9]+'/>" \
    "$(virsh dumpxml --inactive vpe2e-d-cli2)"
