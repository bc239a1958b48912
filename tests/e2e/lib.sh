# shellcheck shell=bash
# e2e harness: sourced by each test script. The libvirtd comes from the ctest fixture
# e2e_libvirt (env-fixture.sh); a script run by hand needs `scripts/libvirt-env start` first.
#
# A test names its guests vpe2e-*, defines them with e2e_define (which removes a leftover of
# an earlier run first) and leaves nothing behind: guests and hooks it added are removed on
# exit, whatever the outcome. Exit 77 means skipped, with the reason on stdout.

set -euo pipefail

e2e_top=${VP_TOPDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
vp_prog=$(basename "$0" .sh)
# shellcheck source-path=SCRIPTDIR source=../../scripts/lib.sh
. "$e2e_top/scripts/lib.sh"

export LIBVIRT_DEFAULT_URI=qemu:///system
e2e_env=$e2e_top/scripts/libvirt-env
e2e_tmp=$(mktemp -d "/tmp/$vp_prog.XXXXXX")
e2e_guests=()
e2e_hooks=()
e2e_atexit=()
e2e_checks=0

e2e_skip() {
    echo "SKIP: $*"
    exit 77
}

e2e_fail() {
    echo "FAIL: $*" >&2
    exit 1
}

e2e_pass() {
    e2e_checks=$((e2e_checks + 1))
    echo "ok $e2e_checks - $*"
}

# e2e_expect_eq WHAT EXPECTED ACTUAL
e2e_expect_eq() {
    [ "$2" = "$3" ] || e2e_fail "$1: expected '$2', got '$3'"
    e2e_pass "$1: $3"
}

# e2e_expect_match WHAT EXTENDED-REGEX TEXT
e2e_expect_match() {
    printf '%s' "$3" | grep -qE -- "$2" || e2e_fail "$1: /$2/ not found in: $3"
    e2e_pass "$1"
}

e2e_cleanup() {
    local rc=$? g h
    set +e
    for g in "${e2e_guests[@]}"; do
        virsh -q destroy "$g" >/dev/null 2>&1
        virsh -q undefine "$g" >/dev/null 2>&1
    done
    for h in "${e2e_hooks[@]}"; do
        "$e2e_env" uninstall-hook "$h" 2>&1 | sed 's/^/cleanup: /'
    done
    for h in "${e2e_atexit[@]}"; do
        eval "$h"
    done
    rm -rf "$e2e_tmp"
    [ $rc -ne 0 ] || echo "passed: $e2e_checks checks"
    exit $rc
}
trap e2e_cleanup EXIT

# e2e_at_exit COMMAND: run COMMAND (eval) at exit, after guests and hooks are removed.
e2e_at_exit() {
    e2e_atexit+=("$1")
}

e2e_require_env() {
    [ "$(id -u)" -eq 0 ] || e2e_skip "needs root: libvirtd for qemu:///system, hooks in /etc/libvirt"
    "$e2e_env" status >/dev/null ||
        e2e_fail "qemu:///system does not answer: run 'scripts/libvirt-env start' (ctest's e2e_libvirt fixture does)"
}

# For tests of libvirt and QEMU alone: another QEMU hook (vcpuplace's, or one a test left)
# may refuse or re-pin their guests.
e2e_require_no_hooks() {
    local hooks
    hooks=$(find /etc/libvirt/hooks/qemu.d -mindepth 1 -maxdepth 1 -printf '%f ' 2>/dev/null || true)
    [ -z "$hooks" ] || e2e_skip "needs libvirt without QEMU hooks; /etc/libvirt/hooks/qemu.d holds: $hooks"
}

# True when the libvirtd that runs was started by scripts/libvirt-env, so it may be restarted.
e2e_env_owns_libvirtd() {
    local status
    status=$("$e2e_env" status 2>/dev/null) || return 1
    grep -q '^libvirtd: .*started by libvirt-env$' <<<"$status"
}

e2e_undefine() {
    virsh -q destroy "$1" >/dev/null 2>&1 || true
    virsh -q undefine "$1" >/dev/null 2>&1 || true
}

# e2e_define NAME [scripts/guest-xml options]: defines a small TCG guest, removed at exit.
e2e_define() {
    local name=$1
    case $name in vpe2e-*) ;; *) e2e_fail "guest name '$name' must start with vpe2e-" ;; esac
    e2e_undefine "$name"
    e2e_guests+=("$name")
    "$e2e_top/scripts/guest-xml" "$@" >"$e2e_tmp/$name.xml"
    virsh -q define "$e2e_tmp/$name.xml" >/dev/null
}

# e2e_install_hook FILE NAME: installed in qemu.d with libvirtd told, removed at exit.
e2e_install_hook() {
    e2e_hooks+=("$2")
    "$e2e_env" install-hook "$1" "$2"
}

# The QEMU process of a running guest, from libvirt's pidfile, checked against its command
# line so that a stale file cannot send a test to another process.
e2e_qemu_pid() {
    local pid
    pid=$(cat "/run/libvirt/qemu/$1.pid") || e2e_fail "no pidfile for guest $1"
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "-name guest=$1," ||
        e2e_fail "pid $pid from /run/libvirt/qemu/$1.pid is not the QEMU of $1"
    echo "$pid"
}

# "VCPU TID" lines of a QEMU process, from thread names: QEMU names each TCG vCPU thread
# "CPU N/TCG" (libvirt passes debug-threads=on).
e2e_vcpu_threads() {
    local t comm
    for t in /proc/"$1"/task/*; do
        comm=$(cat "$t/comm" 2>/dev/null) || continue
        if [[ $comm =~ ^CPU\ ([0-9]+)/TCG$ ]]; then
            echo "${BASH_REMATCH[1]} ${t##*/}"
        fi
    done | sort -n
}

# "VCPU TID" lines as QEMU itself reports them (HMP info cpus).
e2e_vcpu_threads_qemu() {
    virsh qemu-monitor-command "$1" --hmp 'info cpus' |
        sed -nE 's/^[ *]*CPU #([0-9]+):.*thread_id=([0-9]+).*/\1 \2/p' | sort -n
}

e2e_allowed_list() { # pid tid
    sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$1/task/$2/status"
}

# A CPU list ("0-2,5") as every CPU, comma separated ("0,1,2,5").
e2e_cpus() {
    local part out=() i
    local IFS=,
    for part in $1; do
        if [[ $part =~ ^([0-9]+)-([0-9]+)$ ]]; then
            for ((i = BASH_REMATCH[1]; i <= BASH_REMATCH[2]; i++)); do out+=("$i"); done
        else
            out+=("$part")
        fi
    done
    echo "${out[*]}"
}

# A virsh affinity map ("y-y-") as every CPU it holds ("0,2").
e2e_map_cpus() {
    local map=$1 i out=()
    for ((i = 0; i < ${#map}; i++)); do
        [ "${map:i:1}" != y ] || out+=("$i")
    done
    local IFS=,
    echo "${out[*]}"
}
