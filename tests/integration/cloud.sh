#!/bin/bash
# Trust groups from the cloud's own tenancy, for domains whose policy names no group:
# [policy] tenant_groups = off (default) | nova | kubevirt | auto, on a Nova-style domain
# (data/nova-domain.xml: <nova:instance> with <nova:owner><nova:project uuid>) and a
# KubeVirt-style one (data/kubevirt-domain.xml: NAMESPACE_NAME, <kubevirt> metadata). A group
# the policy names wins; a bad setting is an error naming it; a domain cannot set it.
set -euo pipefail
build=${VP_BUILDDIR:?}
top=${VP_TOPDIR:?}
cli=$build/plugin/cli/vcpuplace
data=$top/tests/integration/data
topo='synthetic:core:4 pu:2'
tmp=$(mktemp -d /tmp/vp-cloud.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
project=6f7c3b1a2d4e4f5a8b9c0d1e2f3a4b5c

# group SETTING DOMAIN.xml: the plan's trust group ("null" for none).
group() {
    if [ -n "$1" ]; then printf '[policy]\ntenant_groups=%s\n' "$1" >"$tmp/conf"; else : >"$tmp/conf"; fi
    "$cli" plan -t "$topo" --config "$tmp/conf" --json "$2" |
        python3 -c 'import json,sys; g=json.load(sys.stdin)["group"]; print("null" if g is None else g)'
}
check() { # check SETTING DOMAIN.xml WANT
    local got
    got=$(group "$1" "$2")
    [ "$got" = "$3" ] || fail "tenant_groups=${1:-(unset)} on $(basename "$2"): group '$got', want '$3'"
}

check "" "$data/nova-domain.xml" null
check off "$data/nova-domain.xml" null
check nova "$data/nova-domain.xml" "$project"
check auto "$data/nova-domain.xml" "$project"
check kubevirt "$data/nova-domain.xml" null
check off "$data/kubevirt-domain.xml" null
check kubevirt "$data/kubevirt-domain.xml" team-blue
check auto "$data/kubevirt-domain.xml" team-blue
check nova "$data/kubevirt-domain.xml" null
# KubeVirt reads a name without '_' as the default namespace.
sed 's|<name>team-blue_vmi-fedora</name>|<name>vmi-plain</name>|' "$data/kubevirt-domain.xml" >"$tmp/plain.xml"
check kubevirt "$tmp/plain.xml" default

# The policy's own group wins.
sed "s|<metadata>|<metadata><vcpuplace:policy xmlns:vcpuplace='http://vcpuplace.org/xmlns/policy/1.0' group='mine'/>|" \
    "$data/nova-domain.xml" >"$tmp/own.xml"
check auto "$tmp/own.xml" mine

printf '[policy]\ntenant_groups=openstack\n' >"$tmp/bad.conf"
rc=0
"$cli" plan -t "$topo" --config "$tmp/bad.conf" "$data/nova-domain.xml" >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "tenant_groups='openstack' is not one of off, nova, kubevirt, auto" "$tmp/err" ||
    fail "a bad tenant_groups was not refused by name: $(cat "$tmp/err")"
sed "s|<metadata>|<metadata><vcpuplace:policy xmlns:vcpuplace='http://vcpuplace.org/xmlns/policy/1.0' tenant_groups='nova'/>|" \
    "$data/nova-domain.xml" >"$tmp/self.xml"
rc=0
"$cli" plan -t "$topo" "$tmp/self.xml" >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "unknown policy attribute 'tenant_groups'" "$tmp/err" ||
    fail "a domain set its own tenant_groups: $(cat "$tmp/err")"
echo "cloud: all checks passed"
