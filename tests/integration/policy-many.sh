#!/bin/bash
# vcpuplace policy on several domains at once, through libvirt's test driver (a node file
# with web1, web2, db1; each CLI run is a fresh test driver, so a run checks what libvirt
# holds after its own writes, which the command reads back):
#  - a glob and names, each domain once, in order; --json: one object, its "domains" an array;
#  - --dry-run prints the new policy and writes nothing (written: false, the next read in
#    the same run, a plain show, is still the old one);
#  - a glob matching nothing, or a missing name, is an error; a bad value is refused
#    before anything is written.
set -euo pipefail
build=${VP_BUILDDIR:?}
top=${VP_TOPDIR:?}
cli=$build/plugin/cli/vcpuplace
uri=test://$top/tests/integration/data/testnode-policy.xml
tmp=$(mktemp -d /tmp/vp-policy.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
summary() { # domain:smt:written per element of a JSON array on stdin
    python3 -c 'import json,sys; print(" ".join("%s:%s:%s" % (d["domain"], d["policy"]["smt"], d["written"]) for d in json.load(sys.stdin)["domains"]))'
}

got=$("$cli" policy -c "$uri" 'web*' db1 web1 --smt=isolate --json | summary)
[ "$got" = "web1:isolate:True web2:isolate:True db1:isolate:True" ] || fail "glob and names: $got"
got=$("$cli" policy -c "$uri" 'web?' --smt=pack --dry-run --json | summary)
[ "$got" = "web1:pack:False web2:pack:False" ] || fail "dry run: $got"
"$cli" policy -c "$uri" 'web*' --smt=pack -n >"$tmp/text"
[ "$(grep -c 'dry run: would write' "$tmp/text")" = 2 ] || fail "dry-run text: $(cat "$tmp/text")"
got=$("$cli" policy -c "$uri" '[wd]*' --json | summary)
[ "$got" = "db1:spread:False web1:spread:False web2:spread:False" ] || fail "a show of '[wd]*': $got"
# One plain name keeps the single JSON object.
"$cli" policy -c "$uri" db1 --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["domain"]=="db1"' ||
    fail "one name did not print one object"

rc=0
"$cli" policy -c "$uri" 'mail*' --smt=pack 2>"$tmp/err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "no domain matches 'mail\*'" "$tmp/err" || fail "an empty glob: rc $rc, $(cat "$tmp/err")"
rc=0
"$cli" policy -c "$uri" web1 nosuch --smt=pack >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "nosuch" "$tmp/err" && [ ! -s "$tmp/out" ] ||
    fail "a missing name: rc $rc, $(cat "$tmp/err"), wrote: $(cat "$tmp/out")"
rc=0
"$cli" policy -c "$uri" 'web*' --smt=isolat >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "smt='isolat'" "$tmp/err" && ! grep -q written "$tmp/out" ||
    fail "a bad value: rc $rc, $(cat "$tmp/err")"
echo "policy-many: all checks passed"
