#!/bin/bash
# The vcpuplace policy element in a real libvirtd: set and read back with `virsh metadata`
# on a running guest (live and persistent apart), the exact form libvirt gives back, that
# form valid against xml/vcpuplace.rng, and what libvirt keeps of hand-written variants.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_require_env

ns=http://vcpuplace.org/xmlns/policy/1.0
rng=$e2e_top/xml/vcpuplace.rng
guest=vpe2e-metadata

# The policy element of a domain's XML as libvirt writes it, one line, indentation dropped.
policy_line() { # virsh dumpxml options...
    virsh dumpxml "$@" | sed -n '/<metadata>/,/<\/metadata>/p' | grep -v 'metadata>' | sed 's/^ *//'
}

e2e_define $guest --vcpus 1
virsh -q start $guest >/dev/null

virsh -q metadata $guest --uri $ns --key vcpuplace --live --config \
    --set '<policy smt="isolate" group="g-1" unmet="degrade"/>' >/dev/null
e2e_expect_eq "virsh metadata (live) answers without namespace" \
    '<policy smt="isolate" group="g-1" unmet="degrade"/>' "$(virsh metadata $guest --uri $ns | sed '/^$/d')"
e2e_expect_eq "virsh metadata --config: the same" \
    '<policy smt="isolate" group="g-1" unmet="degrade"/>' "$(virsh metadata $guest --uri $ns --config | sed '/^$/d')"
line="<vcpuplace:policy xmlns:vcpuplace=\"$ns\" smt=\"isolate\" group=\"g-1\" unmet=\"degrade\"/>"
e2e_expect_eq "dumpxml (live): prefix = key, namespace declared on the element" "$line" "$(policy_line $guest)"
e2e_expect_eq "dumpxml --inactive: the same" "$line" "$(policy_line $guest --inactive)"

virsh dumpxml $guest |
    xmllint --xpath "/domain/metadata/*[namespace-uri()='$ns']" - >"$e2e_tmp/policy.xml"
xmllint --noout --relaxng "$rng" "$e2e_tmp/policy.xml" 2>"$e2e_tmp/rng.err" ||
    e2e_fail "the element libvirt gives back does not validate: $(cat "$e2e_tmp/rng.err")"
e2e_pass "the element libvirt gives back validates against xml/vcpuplace.rng on its own"

virsh -q metadata $guest --uri $ns --key vcpuplace --live --set '<policy smt="pack"/>' >/dev/null
e2e_expect_eq "--live only: live changed" '<policy smt="pack"/>' "$(virsh metadata $guest --uri $ns | sed '/^$/d')"
e2e_expect_eq "--live only: persistent unchanged" \
    '<policy smt="isolate" group="g-1" unmet="degrade"/>' "$(virsh metadata $guest --uri $ns --config | sed '/^$/d')"
virsh -q destroy $guest >/dev/null
virsh -q start $guest >/dev/null
e2e_expect_eq "--live only: gone after a restart of the guest" \
    '<policy smt="isolate" group="g-1" unmet="degrade"/>' "$(virsh metadata $guest --uri $ns | sed '/^$/d')"

virsh -q metadata $guest --uri $ns --live --config --remove >/dev/null
if virsh metadata $guest --uri $ns >/dev/null 2>&1; then
    e2e_fail "metadata still present after --remove"
fi
e2e_pass "--remove: virsh metadata fails (not found)"
virsh -q destroy $guest >/dev/null

# Hand-written XML: libvirt keeps a namespaced element as written, drops one without a
# namespace, and keeps only the first of two elements in one namespace.
defined_policy() { # metadata-content
    local x=$e2e_tmp/form.xml
    "$e2e_top/scripts/guest-xml" vpe2e-metadata-form >"$x"
    sed -i "s|  </os>|  </os>\n  <metadata>$1</metadata>|" "$x"
    e2e_guests+=(vpe2e-metadata-form)
    virsh -q define "$x" >/dev/null
    policy_line vpe2e-metadata-form --inactive | paste -sd' '
    virsh -q undefine vpe2e-metadata-form >/dev/null
}
e2e_expect_eq "another prefix is kept" "<vp:policy xmlns:vp=\"$ns\" smt=\"share\"/>" \
    "$(defined_policy "<vp:policy xmlns:vp='$ns' smt='share'/>")"
e2e_expect_eq "a default namespace is kept" "<policy xmlns=\"$ns\" smt=\"share\"/>" \
    "$(defined_policy "<policy xmlns='$ns' smt='share'/>")"
e2e_expect_eq "an element without namespace is dropped" "" "$(defined_policy "<policy smt='share'/>")"
e2e_expect_eq "of two elements in the namespace only the first is kept" \
    "<vcpuplace:policy xmlns:vcpuplace=\"$ns\" smt=\"pack\"/>" \
    "$(defined_policy "<vcpuplace:policy xmlns:vcpuplace='$ns' smt='pack'/><vcpuplace:policy xmlns:vcpuplace='$ns' smt='share'/>")"
