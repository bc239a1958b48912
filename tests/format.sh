#!/bin/bash
# Every C file in plugin/ and tests/ as the root .clang-format writes it: one style, checked
# in CI rather than by review. Prints the files that differ and fails.
# Usage: format.sh SRCDIR
set -u
cd "$1" || exit 1
if ! command -v clang-format >/dev/null; then
    echo "clang-format not found: install the Debian package clang-format" >&2
    exit 1
fi
bad=0
while IFS= read -r f; do
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "not formatted: $f (clang-format -i $f)"
        bad=1
    fi
done < <(git ls-files -- 'plugin/*.[ch]' 'tests/*.[ch]' 2>/dev/null ||
         find plugin tests -name '*.[ch]')
[ $bad -eq 0 ] && echo "all C files formatted"
exit $bad
