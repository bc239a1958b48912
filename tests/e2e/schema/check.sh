#!/bin/bash
# The policy schema against its users (label unit, no libvirtd needed):
# - every xml/examples/*.xml is a valid libvirt domain (virt-xml-validate) whose policy is
#   valid and stands where vcpuplace reads it (domain-policy.rng, built on the schema);
# - each policy element of an example also validates on its own against xml/vcpuplace.rng,
#   as `virsh dumpxml` hands it out;
# - valid/*.xml pass, invalid/*.xml (well-formed, each wrong in one way its comment names)
#   fail.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=${VP_TOPDIR:-$(cd "$here/../../.." && pwd)}
rng=$top/xml/vcpuplace.rng
domrng=$here/domain-policy.rng
ns=http://vcpuplace.org/xmlns/policy/1.0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 checks=0

for tool in xmllint virt-xml-validate; do
    command -v $tool >/dev/null || { echo "FAIL: '$tool' not found (scripts/packages.txt)"; exit 1; }
done

ok() {
    checks=$((checks + 1))
    echo "ok $checks - $*"
}

bad() {
    checks=$((checks + 1))
    failures=$((failures + 1))
    echo "not ok $checks - $*"
}

# Errors of xmllint, one line, for the report.
why() {
    grep -v -e 'validates$' -e 'fails to validate$' "$1" | head -n 3 | paste -sd' '
}

policies() { # file: how many elements of the vcpuplace namespace it holds
    xmllint --xpath "count(//*[namespace-uri()='$ns'])" "$1"
}

examples=("$top"/xml/examples/*.xml)
[ -e "${examples[0]}" ] || { echo "FAIL: no examples in $top/xml/examples"; exit 1; }
with_policy=0
for f in "${examples[@]}"; do
    name=examples/$(basename "$f")
    if virt-xml-validate "$f" domain >"$tmp/out" 2>&1; then
        ok "$name: libvirt domain schema"
    else
        bad "$name: libvirt domain schema: $(why "$tmp/out")"
    fi
    if xmllint --noout --relaxng "$domrng" "$f" >"$tmp/out" 2>&1; then
        ok "$name: policy valid and in /domain/metadata"
    else
        bad "$name: $(why "$tmp/out")"
    fi
    n=$(policies "$f")
    [ "$n" -eq 0 ] || with_policy=$((with_policy + 1))
    for ((i = 1; i <= n; i++)); do
        xmllint --xpath "(//*[namespace-uri()='$ns'])[$i]" "$f" >"$tmp/policy.xml"
        if xmllint --noout --relaxng "$rng" "$tmp/policy.xml" >"$tmp/out" 2>&1; then
            ok "$name: policy element $i valid on its own"
        else
            bad "$name: policy element $i on its own: $(why "$tmp/out")"
        fi
    done
done
if [ $with_policy -gt 0 ]; then
    ok "$with_policy of ${#examples[@]} examples carry a policy"
else
    bad "no example carries a policy"
fi

for f in "$here"/valid/*.xml; do
    name=valid/$(basename "$f")
    if xmllint --noout --relaxng "$domrng" "$f" >"$tmp/out" 2>&1; then
        ok "$name"
    else
        bad "$name: $(why "$tmp/out")"
    fi
done

for f in "$here"/invalid/*.xml; do
    name=invalid/$(basename "$f")
    if ! xmllint --noout "$f" 2>"$tmp/out"; then
        bad "$name is not well-formed, so it tests nothing: $(why "$tmp/out")"
    elif xmllint --noout --relaxng "$domrng" "$f" >/dev/null 2>&1; then
        bad "$name validates: $(xmllint --xpath 'string(/comment()[1])' "$f")"
    else
        # The standalone element gives the precise reason (the domain grammar's messages
        # are blurred by backtracking); some cases are wrong only where they stand.
        what=$(xmllint --xpath 'string(/comment()[1])' "$f" | sed 's/^ *//; s/ *$//')
        if [ "$(policies "$f")" -eq 0 ]; then
            reason="no element in the vcpuplace namespace"
        elif xmllint --xpath "(//*[namespace-uri()='$ns'])[1]" "$f" >"$tmp/policy.xml" &&
            xmllint --noout --relaxng "$rng" "$tmp/policy.xml" >"$tmp/out" 2>&1; then
            reason="element valid on its own, wrong where it stands"
        else
            reason=$(why "$tmp/out" | sed "s|$tmp/policy.xml:[0-9]*: ||g")
        fi
        ok "$name rejected [$what]: $reason"
    fi
done

echo "$checks checks, $failures failed"
[ $failures -eq 0 ]
