#!/bin/bash
# Sizes that keep plugin/ readable (issue 13): no file over 700 lines, no function over 80.
# A function is measured from its opening brace at column 0 to the closing one, both counted;
# the tree is clang-formatted (ctest format), so braces at column 0 are exactly function bodies.
# tests/sizes-allow.txt lists the known offenders, one "path" or "path:function" per line
# followed by the reason; an entry that no longer exceeds its limit fails too, so the list
# only shrinks.
# Usage: sizes.sh SRCDIR [ALLOWLIST]
set -u
cd "$1" || exit 1
allow=${2:-tests/sizes-allow.txt}
max_file=700 max_func=80
failed=0

fail() {
    echo "FAIL: $*"
    failed=1
}

declare -A allowed=()
if [ -f "$allow" ]; then
    while read -r entry reason; do
        case $entry in '' | '#'*) continue ;; esac
        [ -n "$reason" ] || fail "$allow: $entry has no reason"
        allowed[$entry]=1
    done <"$allow"
fi

mapfile -t files < <(git ls-files -- 'plugin/*.[ch]' 2>/dev/null || find plugin -name '*.[ch]')
[ ${#files[@]} -gt 0 ] || { echo "FAIL: no C files under $PWD/plugin"; exit 1; }

# "path lines" for every file over the limit, "path:function lines" for every long function.
offenders=$(
    wc -l "${files[@]}" | awk -v max="$max_file" '$2 != "total" && $1 > max { print $2, $1 }'
    awk -v max="$max_func" '
        FNR == 1 { start = 0 }
        /^[A-Za-z_][A-Za-z0-9_]*\(/ { match($0, /^[A-Za-z_][A-Za-z0-9_]*/); name = substr($0, 1, RLENGTH) }
        /^\{/ { start = FNR; fn = name }
        /^\}/ && start { if (FNR - start + 1 > max) print FILENAME ":" fn, FNR - start + 1; start = 0 }
    ' "${files[@]}"
)

declare -A over=()
nallowed=0
while read -r what lines; do
    [ -n "$what" ] || continue
    over[$what]=1
    if [ -n "${allowed[$what]:-}" ]; then
        echo "allowed: $what $lines lines"
        nallowed=$((nallowed + 1))
    elif [[ $what == *:* ]]; then
        fail "$what is $lines lines (over $max_func): extract helpers that each do one thing"
    else
        fail "$what is $lines lines (over $max_file): split it along a seam"
    fi
done <<<"$offenders"

for entry in "${!allowed[@]}"; do
    [ -n "${over[$entry]:-}" ] || fail "$allow: $entry is within its limit now: remove the line"
done

if [ $failed -eq 0 ]; then
    echo -n "no file over $max_file lines, no function over $max_func"
    [ $nallowed -eq 0 ] && echo || echo " but the $nallowed listed in $allow"
fi
exit $failed
