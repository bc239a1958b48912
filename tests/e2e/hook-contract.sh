#!/bin/bash
# How libvirt runs a QEMU hook from /etc/libvirt/hooks/qemu.d, observed with a probe hook
# (fixtures/probe-hook): the calls, their order and arguments, what stdin carries, how a
# refusal reaches `virsh start`, what a libvirtd restart and a SIGHUP do. vcpuplace-hook is
# built on these facts (README.md lists them); this test notices when a libvirt changes them.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_require_env

ns=http://vcpuplace.org/xmlns/policy/1.0
probe=$(dirname "$0")/fixtures/probe-hook
dir=/run/vcpuplace-e2e-probe
hookdir=/etc/libvirt/hooks/qemu.d
guest=vpe2e-hook
hook=vpe2e-probe

rm -rf "$dir"
mkdir -p "$dir"
e2e_at_exit "rm -rf '$dir'"

calls() {
    paste -sd, "$dir/$guest.calls" 2>/dev/null || true
}

reset_calls() {
    rm -f "$dir/$guest".*
}

e2e_define $guest --vcpus 1 --policy smt=share --policy unmet=degrade

# libvirt decides whether QEMU hooks exist when it starts and on SIGHUP, not per call. Seen
# only where libvirtd may be restarted with an empty qemu.d.
if ! e2e_env_owns_libvirtd; then
    echo "not checked: hook needs SIGHUP (libvirtd was not started by libvirt-env)"
elif [ -n "$(ls -A "$hookdir" 2>/dev/null)" ]; then
    echo "not checked: hook needs SIGHUP ($hookdir holds $(find "$hookdir" -mindepth 1 -maxdepth 1 -printf '%f '))"
else
    mkdir -p "$hookdir"
    "$e2e_env" restart-libvirtd
    e2e_hooks+=("$hook")
    install -m 0755 "$probe" "$hookdir/$hook"
    virsh -q start $guest >/dev/null
    virsh -q destroy $guest >/dev/null
    e2e_expect_eq "hook added after libvirtd started (empty qemu.d): not run" "" "$(calls)"
    "$e2e_env" sighup
    virsh -q start $guest >/dev/null
    virsh -q destroy $guest >/dev/null
    e2e_expect_match "after SIGHUP: run" "^4 $guest prepare begin -" "$(calls)"
    reset_calls
fi
[ -x "$hookdir/$hook" ] || e2e_install_hook "$probe" "$hook"

virsh -q start $guest >/dev/null
virsh -q destroy $guest >/dev/null
e2e_expect_eq "start + destroy: calls, 4 arguments each" \
    "4 $guest prepare begin -,4 $guest start begin -,4 $guest started begin -,4 $guest stopped end -,4 $guest release end -" \
    "$(calls)"

for call in prepare.begin start.begin started.begin stopped.end release.end; do
    xml=$dir/$guest.$call.xml
    e2e_expect_eq "$call stdin: the domain XML" "$guest" "$(xmllint --xpath 'string(/domain/name)' "$xml")"
    e2e_expect_eq "$call stdin: the policy element" 1 \
        "$(xmllint --xpath "count(/domain/metadata/*[local-name()='policy' and namespace-uri()='$ns'])" "$xml")"
done
e2e_expect_eq "prepare stdin: live XML (id set)" true \
    "$(xmllint --xpath 'boolean(/domain/@id)' "$dir/$guest.prepare.begin.xml")"
e2e_expect_eq "hook environment: only LC_ALL, PATH, HOME (and the shell's PWD)" "HOME,LC_ALL,PATH,PWD" \
    "$(cut -d= -f1 "$dir/$guest.prepare.begin.env" | paste -sd,)"
e2e_expect_eq "hook working directory" "PWD=/" "$(grep '^PWD=' "$dir/$guest.prepare.begin.env")"

reset_calls
touch "$dir/$guest.refuse"
if err=$(virsh -q start $guest 2>&1); then
    e2e_fail "virsh start succeeded although the prepare hook exited 1"
fi
rm -f "$dir/$guest.refuse"
e2e_expect_match "refusal: virsh names the hook failure" \
    "error: Hook script execution failed: internal error: Child process \(.*$hookdir/$hook $guest prepare begin -\) unexpected exit status 1: probe-hook: refusing $guest at prepare begin" \
    "$err"
e2e_expect_match "refusal: all of the hook's stderr reaches virsh" "probe-hook: second line of stderr" "$err"
if printf '%s' "$err" | grep -q "probe-hook: stdout"; then
    e2e_fail "refusal: the hook's stdout reached virsh: $err"
fi
e2e_pass "refusal: the hook's stdout does not reach virsh"
e2e_expect_eq "refusal: domain state" "shut off" "$(virsh domstate $guest | sed '/^$/d')"
e2e_expect_eq "refusal: calls (stopped and release follow a refused prepare)" \
    "4 $guest prepare begin -,4 $guest stopped end -,4 $guest release end -" "$(calls)"

if e2e_env_owns_libvirtd; then
    virsh -q start $guest >/dev/null
    pid=$(e2e_qemu_pid $guest)
    reset_calls
    "$e2e_env" restart-libvirtd
    # libvirtd reconnects to each running guest in a thread of its own, so the hook may run
    # after libvirtd answers.
    vp_wait_until 30 test -s "$dir/$guest.calls" || e2e_fail "no hook call within 30 s of the libvirtd restart"
    e2e_expect_eq "libvirtd restart, guest running: calls" "4 $guest reconnect begin -" "$(calls)"
    e2e_expect_eq "reconnect stdin: the domain XML" "$guest" \
        "$(xmllint --xpath 'string(/domain/name)' "$dir/$guest.reconnect.begin.xml")"
    e2e_expect_eq "guest survives the restart" "$pid" "$(e2e_qemu_pid $guest)"
    virsh -q destroy $guest >/dev/null
else
    echo "not checked: reconnect after a libvirtd restart (libvirtd was not started by libvirt-env)"
fi
