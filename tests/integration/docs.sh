#!/bin/bash
# The operator documentation as built: every man page renders without a mandoc warning
# (mandoc -T lint -W warning) and without a groff warning (man --warnings, as lintian runs
# it); vcpuplace(1) has a section for every subcommand `vcpuplace help` lists and names every
# long option each subcommand's --help-all shows; vcpuplaced.conf(5) names every key of the
# example configuration; vcpuplace-json(7) names every top-level member of the JSON
# Schemas' documents; `--version` on the daemon, the CLI and the hook prints the tree's
# version.
set -euo pipefail
build=${VP_BUILDDIR:?}
version=${VP_VERSION:?}
top=$(cd "$(dirname "$0")/../.." && pwd)
cli=$build/plugin/cli/vcpuplace
daemon=$build/plugin/daemon/vcpuplaced
fail() { echo "FAIL: $*" >&2; exit 1; }

for page in vcpuplace.1 vcpuplaced.8 vcpuplaced.conf.5 vcpuplace-hook.8 vcpuplace-json.7; do
    f=$build/doc/$page
    [ -s "$f" ] || fail "$page not built"
    out=$(mandoc -T lint -W warning "$f" 2>&1) || fail "mandoc -T lint $page: $out"
    [ -z "$out" ] || fail "mandoc -T lint $page: $out"
    out=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$f" 2>&1 >/dev/null)
    [ -z "$out" ] || fail "groff warnings in $page: $out"
done

man1=$(MANWIDTH=200 man -l "$build/doc/vcpuplace.1" 2>/dev/null)
cmds=$("$cli" help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
[ "$(echo "$cmds" | wc -l)" -ge 10 ] || fail "vcpuplace help lists too few commands: $cmds"
for c in $cmds; do
    grep -Eq "^   $c( |$)" <<<"$man1" || fail "vcpuplace(1) has no section for '$c'"
    for o in $("$cli" "$c" --help-all | grep -Eo -- '--[a-z][a-z-]+' | grep -v '^--help' | sort -u); do
        grep -q -- "$o" <<<"$man1" || fail "vcpuplace(1) does not name $c's option $o"
    done
done

man5=$(MANWIDTH=200 man -l "$build/doc/vcpuplaced.conf.5" 2>/dev/null)
for k in $(sed -n 's/^#\([a-z_]*\)=.*/\1/p' "$build/plugin/daemon/vcpuplaced.conf"); do
    grep -q "$k" <<<"$man5" || fail "vcpuplaced.conf(5) does not name the key $k"
done

# vcpuplace-json(7) names every member the schemas give a document at its top level.
man7=$(MANWIDTH=200 man -l "$build/doc/vcpuplace-json.7" 2>/dev/null)
missing=$(python3 - "$top/tests/e2e/schema/vcpuplace.schema.json" <<'PY'
import json, sys
defs = json.load(open(sys.argv[1]))["$defs"]
for name, d in defs.items():
    for alt in [d] + d.get("oneOf", []):
        for member in alt.get("properties", {}) if "description" in d else ():
            print(member)
PY
)
for m in $(sort -u <<<"$missing"); do
    grep -qw -- "$m" <<<"$man7" || fail "vcpuplace-json(7) does not name the member $m"
done

[ "$("$cli" --version)" = "vcpuplace $version" ] || fail "vcpuplace --version: $("$cli" --version)"
[ "$("$daemon" --version)" = "vcpuplaced $version" ] || fail "vcpuplaced --version: $("$daemon" --version)"
hook=$build/plugin/hook/vcpuplace-hook
[ "$("$hook" --version)" = "vcpuplace-hook $version" ] || fail "vcpuplace-hook --version: $("$hook" --version)"
echo "docs: all checks passed"
