#!/bin/bash
# The bash completion of vcpuplace, driven the way bash drives it (COMP_WORDS, COMP_CWORD,
# the _vcpuplace function) with the real bash-completion library and the built CLI on PATH.
set -euo pipefail
build=${VP_BUILDDIR:?}
top=${VP_TOPDIR:?}
comp=$top/doc/vcpuplace.bash-completion
lib=/usr/share/bash-completion/bash_completion
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -r "$lib" ] || { echo "SKIP: bash-completion is not installed ($lib)"; exit 77; }
bash -n "$comp" || fail "bash -n $comp"

# complete WORD...: what <Tab> offers after the words (the last is the one completed).
# compopt works only inside a completion bash itself runs, so it is a no-op here.
complete_words() {
    PATH=$build/plugin/cli:$PATH bash -c '
        source "$1" && source "$2" && shift 2
        compopt() { :; }
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        _vcpuplace vcpuplace "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf "%s\n" "${COMPREPLY[@]}" | sort' bash "$lib" "$comp" "$@"
}
check() {
    local want=$1; shift
    local got
    got=$(complete_words "$@" | tr '\n' ' ' | sed 's/ $//')
    [ "$got" = "$want" ] || fail "vcpuplace ${*:2} <Tab>: got '$got', want '$want'"
}

check "plan" vcpuplace pl
check "pin-config plan policy provider-config" vcpuplace p
check "--version" vcpuplace --ver
check "--ledger=" vcpuplace plan --le
check "--dry-run" vcpuplace pin-config --dr
check "isolate pack share spread" vcpuplace policy web --smt ""
check "isolate" vcpuplace policy web --smt=is
check "housekeeping" vcpuplace policy --emulator h
check "auto host l3 numa package" vcpuplace policy web --locality ""
# Domain names from virsh, on the URI given with -c (the test driver has one, "test").
check "test" vcpuplace status -c test:///default t
echo "completion: all checks passed"
