#!/bin/bash
# Bad input at vcpuplaced's edges, on the real host: a non-root peer on the socket,
# garbage and oversized messages, the installed hook run with arguments libvirt never
# sends, and domain XML without vcpuplace metadata. The daemon answers each with an error
# (or its defaults) and keeps serving.
. "$(dirname "$0")/lib.sh"
e2e_require_env
. "$(dirname "$0")/daemon-helpers.sh"

vpd_config "host_cpus=$(cat /sys/devices/system/cpu/online)"
vpd_start
vpd_install_hook
hook=/etc/libvirt/hooks/qemu.d/vcpuplace

# --- the socket ------------------------------------------------------------------------
e2e_expect_eq "socket mode and owner" "600 root" "$(stat -c '%a %U' "$vpd_sock")"

# Run as nobody from a copy nobody may execute, wherever the build tree is.
chmod 0711 "$e2e_tmp"
install -m 0755 "$vpd_sockclient" "$e2e_tmp/vp-sockclient"
as_nobody() {
    setpriv --reuid=65534 --regid=65534 --clear-groups "$e2e_tmp/vp-sockclient" "$vpd_sock"
}
if out=$(echo '{"op":"status"}' | as_nobody 2>&1); then
    e2e_fail "nobody connected to the 0600 socket: $out"
fi
e2e_expect_match "nobody: the 0600 socket refuses the connection" "Permission denied" "$out"
# Opened up by mistake, the daemon's own peer check (SO_PEERCRED) still refuses.
chmod 0666 "$vpd_sock"
out=$(echo '{"op":"status"}' | as_nobody 2>&1)
e2e_expect_match "nobody on an open socket: refused by the daemon, saying why" \
    '"ok":false,"error":"permission denied: peer uid 65534 is not root' "$out"
chmod 0600 "$vpd_sock"

out=$(printf 'garbage\n{"op":"frobnicate"}\n{"op":"reserve","name":"vpe2e-d-x","xml":"<domain>"}\n{"op":"status"}\n' |
    "$vpd_sockclient" "$vpd_sock")
e2e_expect_match "garbage: invalid JSON" '^\{"ok":false,"error":"invalid JSON' "$(echo "$out" | sed -n 1p)"
e2e_expect_match "unknown operation named" "unknown operation 'frobnicate'" "$(echo "$out" | sed -n 2p)"
e2e_expect_match "broken domain XML refused, saying where" '"ok":false,.*"refused":true' \
    "$(echo "$out" | sed -n 3p)"
e2e_expect_match "same connection still served" '^\{"ok":true' "$(echo "$out" | sed -n 4p)"

head -c 10000000 /dev/zero | tr '\0' x >"$e2e_tmp/huge"
out=$("$vpd_sockclient" "$vpd_sock" <"$e2e_tmp/huge")
e2e_expect_match "10 MB without a newline: error reply, connection closed" \
    'message exceeds 8454144 bytes without a newline; closing' "$out"
kill -0 "$vpd_pid" || e2e_fail "vcpuplaced died"
vpd_connected || e2e_fail "vcpuplaced stopped answering"
e2e_pass "vcpuplaced alive and answering after bad peers and messages"

# --- the hook, run by hand as libvirt never would ----------------------------------------
e2e_define vpe2e-d-x
xml=$(virsh dumpxml vpe2e-d-x)
set +e
out=$("$hook" vpe2e-d-x prepare 2>&1 </dev/null)
rc=$?
set -e
e2e_expect_eq "hook with 2 arguments: exit 0" 0 "$rc"
e2e_expect_match "hook with 2 arguments: says so" 'called with 2 arguments, expected 4' "$out"
out=$("$hook" vpe2e-d-x frobnicate begin - 2>&1 </dev/null)
e2e_expect_eq "hook with an unknown operation: exit 0, silent" "" "$out"
out=$("$hook" vpe2e-d-x prepare begin - 2>&1 </dev/null)
e2e_expect_match "prepare without XML on stdin: lets the start go on, saying why" \
    'no usable domain XML on stdin.*hook_failure=open' "$out"
set +e
out=$(echo '<domain><name>vpe2e-d-x</name>' | "$hook" vpe2e-d-x prepare begin - 2>&1)
rc=$?
set -e
e2e_expect_eq "prepare with truncated XML: refused" 1 "$rc"
e2e_expect_match "prepare with truncated XML: the parser's reason" 'refusing to start vpe2e-d-x: .*line' "$out"
e2e_expect_eq "nothing reserved for it" none "$(vpd_state vpe2e-d-x)"

# --- metadata padded by the tenant ------------------------------------------------------
# Neither unplaced (floating over everyone's CPUs) nor taken for an absent daemon.
pad() { # BYTES: the domain's XML with that much padding in a metadata element of its own
    python3 -c 'import sys; x=sys.stdin.read(); p="<pad:p xmlns:pad=\"urn:t\">"+"A"*int(sys.argv[1])+"</pad:p>"
sys.stdout.write(x.replace("</domain>","<metadata>"+p+"</metadata></domain>") if "<metadata>" not in x else x.replace("<metadata>","<metadata>"+p))' "$1" <<<"$xml"
}
pad 614400 >"$e2e_tmp/pad600k.xml"
"$hook" vpe2e-d-x prepare begin - <"$e2e_tmp/pad600k.xml" || e2e_fail "prepare with 600 KiB of metadata failed"
e2e_expect_match "600 KiB of metadata: reserved and placed" '^reserved, placed' "$(vpd_state vpe2e-d-x)"
"$hook" vpe2e-d-x release end - </dev/null
pad 6291456 >"$e2e_tmp/pad6m.xml"
set +e
out=$("$hook" vpe2e-d-x prepare begin - <"$e2e_tmp/pad6m.xml" 2>&1)
rc=$?
set -e
e2e_expect_eq "6 MiB of metadata: refused" 1 "$rc"
e2e_expect_match "6 MiB of metadata: the refusal names the size" \
    "domain XML of $(stat -c %s "$e2e_tmp/pad6m.xml") bytes exceeds the 4194304" "$out"
e2e_expect_eq "nothing reserved for it" none "$(vpd_state vpe2e-d-x)"

# --- XML without metadata ----------------------------------------------------------------
echo "$xml" | grep -q vcpuplace && e2e_fail "vpe2e-d-x unexpectedly has vcpuplace metadata"
echo "$xml" | "$hook" vpe2e-d-x prepare begin - || e2e_fail "prepare of a guest without metadata failed"
e2e_expect_match "no metadata: reserved with the daemon's defaults" '^reserved, placed' \
    "$(vpd_state vpe2e-d-x)"
e2e_expect_match "no metadata: default policy" 'smt=spread' "$(vpd_status vpe2e-d-x)"
echo "$xml" | "$hook" vpe2e-d-x release end -
# The record goes once the release's work after the reply is done, as after a real stop.
vp_wait_until 10 vpd_gone vpe2e-d-x || e2e_fail "release did not free it: $(vpd_state vpe2e-d-x)"
e2e_pass "release frees it"
