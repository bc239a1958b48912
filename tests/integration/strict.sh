#!/bin/bash
# Where a typo would silently change placement, the CLI refuses and names the typo:
#  - an element of the policy namespace other than <policy> (vcpuplace:polcy);
#  - an unknown attribute on <policy>;
#  - a <policy> element in a near-miss namespace (policy/1.1, https, ...);
#  - --ledger naming a missing file (it would place as if nothing ran);
#  - a synthetic topology with a bad level (the token is named);
# and `plan -` reads the domain from standard input; an unreachable vcpuplaced is exit 3,
# not the 1 of bad input.
set -euo pipefail
build=${VP_BUILDDIR:?}
top=${VP_TOPDIR:?}
cli=$build/plugin/cli/vcpuplace
topo='synthetic:pack:1 core:4 pu:2'
tmp=$(mktemp -d /tmp/vp-strict.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
n=0

# expect STATUS PATTERN CMD...: CMD exits STATUS and its stderr matches PATTERN.
expect() {
    local want=$1 pattern=$2 rc=0
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    [ "$rc" -eq "$want" ] || fail "$* exited $rc, want $want: $(cat "$tmp/err")"
    grep -q -- "$pattern" "$tmp/err" || fail "$*: stderr lacks '$pattern': $(cat "$tmp/err")"
    n=$((n + 1))
}
domain() { # domain FILE METADATA-ELEMENT
    sed "s|<vcpuplace:policy [^>]*/>|$2|" "$top/xml/examples/vp-isolate.xml" >"$1"
}

domain "$tmp/polcy.xml" "<vcpuplace:polcy xmlns:vcpuplace='http://vcpuplace.org/xmlns/policy/1.0' smt='pack'/>"
expect 1 "unknown element <polcy> in namespace http://vcpuplace.org/xmlns/policy/1.0" \
    "$cli" plan -t "$topo" "$tmp/polcy.xml"
domain "$tmp/attr.xml" "<vcpuplace:policy xmlns:vcpuplace='http://vcpuplace.org/xmlns/policy/1.0' smtt='pack'/>"
expect 1 "smtt" "$cli" plan -t "$topo" "$tmp/attr.xml"
for ns in http://vcpuplace.org/xmlns/policy/1.1 https://vcpuplace.org/xmlns/policy/1.0 \
    http://VCPUplace.org/xmlns/policy/1.0/; do
    domain "$tmp/ns.xml" "<v:policy xmlns:v='$ns' smt='pack'/>"
    expect 1 "<policy> in namespace '$ns' is not vcpuplace's policy" "$cli" plan -t "$topo" "$tmp/ns.xml"
done
# Another application's <policy> is its own business.
domain "$tmp/other.xml" "<o:policy xmlns:o='http://example.org/other/1.0' x='y'/>"
"$cli" plan -t "$topo" "$tmp/other.xml" >/dev/null || fail "another namespace's <policy> was refused"

expect 1 "ledger $tmp/missing.json: no such file" "$cli" plan -t "$topo" --ledger "$tmp/missing.json" \
    "$top/xml/examples/vp-isolate.xml"
expect 1 "ledger $tmp/missing.json: no such file" "$cli" topology -t "$topo" --ledger "$tmp/missing.json"

expect 1 "'corx:2': unknown object type 'corx'" "$cli" topology -t 'synthetic:pack:2 corx:2 pu:2'
expect 1 "'core:x': count 'x' is not a number" "$cli" topology -t 'synthetic:pack:2 core:x pu:2'

"$cli" plan -t "$topo" --json "$top/xml/examples/vp-isolate.xml" >"$tmp/file.json"
"$cli" plan -t "$topo" --json - <"$top/xml/examples/vp-isolate.xml" >"$tmp/stdin.json" ||
    fail "plan - failed"
cmp -s "$tmp/file.json" "$tmp/stdin.json" || fail "plan - placed differently from plan FILE"
n=$((n + 1))

for c in status "top --once" metrics rebalance pin-config\ test; do
    # shellcheck disable=SC2086
    expect 3 "$tmp/nobody.sock" "$cli" $c --socket "$tmp/nobody.sock" --connect test:///default
done
expect 3 "$tmp/nobody.sock" "$cli" topology --live --socket "$tmp/nobody.sock"
echo "strict: $n checks passed"
