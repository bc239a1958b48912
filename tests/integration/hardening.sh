#!/bin/bash
# vcpuplaced's edges as an attacker or a careless host would meet them, with the real
# binaries and libvirt's test driver (no libvirtd):
#  - files: under umask 0000 the socket is root's 0600 in a 0700 directory, the state
#    directory 0700, the ledger 0600, and an unreadable ledger moved aside stays 0600;
#  - a non-root client (the CLI run as nobody) is refused with a clear message, by the
#    file mode and, on a socket opened up by mistake, by the daemon's own peer check;
#  - domain XML: DOCTYPE, external entities, XInclude and entity expansion never reach
#    the network or a file (a TCP listener on 127.0.0.1 must see no connection), through
#    the socket and through the hook;
#  - sizes: a line of exactly the protocol's bound is refused whole, one byte less is
#    read; the hook's stdin bound (half the protocol's) holds;
#  - the daemon works with only the capabilities the systemd unit leaves it
#    (CapabilityBoundingSet, NoNewPrivileges), and the unit passes `systemd-analyze
#    verify`; its exposure score is printed.
# Needs root (uid checks, setpriv); exits 77 otherwise.
set -euo pipefail
build=${VP_BUILDDIR:?VP_BUILDDIR must name the build directory}
top=${VP_TOPDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
daemon=$build/plugin/daemon/vcpuplaced
hook=$build/plugin/hook/vcpuplace-hook
cli=$build/plugin/cli/vcpuplace
client=$build/tests/integration/vp-sockclient
unit=$build/plugin/daemon/vcpuplaced.service
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (peer uid checks, setpriv)"; exit 77; }
for b in "$daemon" "$hook" "$cli" "$client" "$unit"; do
    [ -e "$b" ] || { echo "FAIL: $b not built" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/vp-hardening.XXXXXX)
chmod 0711 "$tmp"
pid=
listener=
checks=0
cleanup() {
    local rc=$?
    set +e
    [ -z "$pid" ] || { kill "$pid"; wait "$pid"; } 2>/dev/null
    [ -z "$listener" ] || { kill "$listener"; wait "$listener"; } 2>/dev/null
    if [ $rc -ne 0 ] && [ -f "$tmp/daemon.log" ]; then
        echo "--- vcpuplaced log"
        tail -n 20 "$tmp/daemon.log"
    fi
    rm -rf "$tmp"
    [ $rc -ne 0 ] || echo "hardening: $checks checks passed"
    exit $rc
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { checks=$((checks + 1)); echo "ok $checks - $*"; }
expect_eq() { [ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"; pass "$1: $3"; }
expect_match() { grep -qE -- "$2" <<<"$3" || fail "$1: /$2/ not in: $3"; pass "$1"; }

conf=$tmp/vcpuplaced.conf
sock=$tmp/run/vcpuplaced.sock
state=$tmp/state/ledger.json
cat >"$conf" <<EOF
[daemon]
mode=enforce
adopt_running=yes
uri=test:///default
topology=synthetic:pack:1 core:4 pu:2
socket=$sock
state=$state
hook_timeout_ms=5000
[rebalance]
mode=off
EOF
chmod 0644 "$conf"

# The capabilities and the no-new-privileges flag of the unit, applied with setpriv.
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit")
[ -n "$caps" ] || fail "the unit sets no CapabilityBoundingSet"
bounding=-all
for c in $caps; do
    c=${c#CAP_}
    bounding+=",+${c,,}"
done
grep -qx 'NoNewPrivileges=yes' "$unit" || fail "the unit does not set NoNewPrivileges=yes"

start_daemon() {
    (umask 0000 && exec setpriv --bounding-set="$bounding" --inh-caps=-all --no-new-privs \
        "$daemon" --config "$conf") >>"$tmp/daemon.log" 2>&1 &
    pid=$!
    local i
    for ((i = 0; i < 100; i++)); do
        "$cli" status --config "$conf" >/dev/null 2>&1 && return 0
        kill -0 "$pid" 2>/dev/null || fail "vcpuplaced exited; see its log"
        sleep 0.1
    done
    fail "vcpuplaced did not answer"
}
stop_daemon() {
    kill "$pid"
    wait "$pid" || true
    pid=
}

start_daemon
expect_eq "vcpuplaced runs with the unit's capabilities only ($caps)" \
    "$(echo "$caps" | tr 'A-Z ' 'a-z\n' | sort | paste -sd,)" \
    "$(capsh --decode="$(sed -n 's/^CapEff:\t//p' "/proc/$pid/status")" | sed 's/^0x[0-9a-f]*=//' |
        tr , '\n' | sort | paste -sd,)"
expect_eq "NoNewPrivs set" 1 "$(sed -n 's/^NoNewPrivs:\t//p' "/proc/$pid/status")"

domain() { # name [extra XML inside <domain>]
    printf "<domain type='test'><name>%s</name><memory>65536</memory><vcpu>1</vcpu><os><type>hvm</type></os>%s</domain>" "$1" "${2:-}"
}
# A reserve request on one line: JSON from python, which escapes the XML.
reserve() { # name xml
    python3 -c 'import json,sys; print(json.dumps({"op":"reserve","name":sys.argv[1],"xml":sys.argv[2]}))' "$1" "$2"
}

# --- files --------------------------------------------------------------------------------
out=$(reserve vm-a "$(domain vm-a)" | "$client" "$sock")
expect_match "reserve accepted" '^\{"ok":true' "$out"
for ((i = 0; i < 50; i++)); do [ -f "$state" ] && break; sleep 0.1; done
expect_eq "socket: root's, 0600" "600 root" "$(stat -c '%a %U' "$sock")"
expect_eq "socket directory: root's, 0700 (created under umask 0000)" "700 root" \
    "$(stat -c '%a %U' "$(dirname "$sock")")"
expect_eq "state directory: root's, 0700" "700 root" "$(stat -c '%a %U' "$(dirname "$state")")"
expect_eq "ledger: root's, 0600" "600 root" "$(stat -c '%a %U' "$state")"
stop_daemon
echo '{"broken' >"$state"
chmod 0600 "$state"
start_daemon
aside=$(find "$(dirname "$state")" -name 'ledger.json.unreadable-*' | head -n 1)
[ -n "$aside" ] || fail "the unreadable ledger was not moved aside"
expect_eq "unreadable ledger moved aside, still 0600" "600 root" "$(stat -c '%a %U' "$aside")"

# --- non-root clients ---------------------------------------------------------------------
as_nobody() {
    setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}
install -m 0755 "$cli" "$tmp/vcpuplace"
out=$(as_nobody "$tmp/vcpuplace" status --config "$conf" 2>&1) && fail "nobody got a status: $out"
expect_match "CLI as nobody, socket 0600: refused by the file mode, saying so" \
    "cannot connect to vcpuplaced at $sock: .*Permission denied" "$out"
chmod 0755 "$(dirname "$sock")"
chmod 0666 "$sock"
out=$(as_nobody "$tmp/vcpuplace" status --config "$conf" 2>&1) && fail "nobody got a status: $out"
expect_match "CLI as nobody, socket opened up by mistake: refused by vcpuplaced's peer check" \
    "permission denied: peer uid 65534 is not root; vcpuplaced answers root only" "$out"
chmod 0600 "$sock"
chmod 0700 "$(dirname "$sock")"

# --- XML never reaches a file or the network ----------------------------------------------
port_file=$tmp/port
hits=$tmp/hits
python3 - "$port_file" "$hits" <<'EOF' &
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
while True:
    c, _ = s.accept()
    with open(sys.argv[2], "a") as f:
        f.write("connection\n")
    c.close()
EOF
listener=$!
for ((i = 0; i < 50; i++)); do [ -s "$port_file" ] && break; sleep 0.1; done
port=$(cat "$port_file")
url=http://127.0.0.1:$port/x
: >"$hits"
secret=$tmp/secret
echo "secret-$RANDOM" >"$secret"
declare -A hostile=(
    [external-entity]="<!DOCTYPE domain [<!ENTITY x SYSTEM \"$url\">]><domain type='test'><name>&x;</name><vcpu>1</vcpu></domain>"
    [file-entity]="<!DOCTYPE domain [<!ENTITY x SYSTEM \"file://$secret\">]><domain type='test'><name>&x;</name><vcpu>1</vcpu></domain>"
    [external-dtd]="<!DOCTYPE domain SYSTEM \"$url\"><domain type='test'><name>h</name><vcpu>1</vcpu></domain>"
    [parameter-entity]="<!DOCTYPE domain [<!ENTITY % p SYSTEM \"$url\"> %p;]><domain type='test'><name>h</name><vcpu>1</vcpu></domain>"
    [laughs]="<!DOCTYPE d [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">]><domain type='test'><name>&c;</name><vcpu>1</vcpu></domain>"
)
for k in "${!hostile[@]}"; do
    out=$(reserve h "${hostile[$k]}" | "$client" "$sock")
    expect_match "socket, $k: refused, DOCTYPE named" '"ok":false,"error":"domain XML: DOCTYPE is not accepted"' "$out"
    set +e
    out=$(printf '%s' "${hostile[$k]}" | VCPUPLACE_CONFIG=$conf "$hook" h prepare begin - 2>&1)
    rc=$?
    set -e
    expect_eq "hook, $k: start refused" 1 "$rc"
    expect_match "hook, $k: says why" 'refusing to start h: domain XML: DOCTYPE is not accepted' "$out"
done
# XInclude is a namespace, not a DOCTYPE: parsed as an unknown element, never processed.
out=$(reserve xi "$(domain xi "<xi:include xmlns:xi='http://www.w3.org/2001/XInclude' href='$url'/><xi:include xmlns:xi='http://www.w3.org/2001/XInclude' href='file://$secret' parse='text'/>")" | "$client" "$sock")
expect_match "socket, XInclude: read as an unknown element" '^\{"ok":true' "$out"
grep -q "$(cat "$secret")" <<<"$("$cli" status --json --config "$conf")" &&
    fail "the secret file's content reached vcpuplaced's state"
expect_eq "no connection reached the listener at $url" "" "$(cat "$hits")"
kill "$listener"
wait "$listener" 2>/dev/null || true
listener=

# --- sizes ----------------------------------------------------------------------------------
max=$(sed -n 's/^#define VP_PROTO_MAX_MESSAGE (\(.*\))$/\1/p' "$top/plugin/proto/proto.h")
max=$((max))
[ "$max" -gt 0 ] || fail "VP_PROTO_MAX_MESSAGE not found in proto.h"
# Lines of a given length (newline included), padded with spaces inside the JSON object.
line_of() { # total-length
    python3 -c 'import sys; n=int(sys.argv[1]); s="{\"op\":\"status\"}"; sys.stdout.write(s[:-1] + " "*(n-len(s)-1) + "}\n")' "$1"
}
# From files: the daemon closes on the oversized line, and a writer in a pipe would die
# of SIGPIPE.
line_of "$max" >"$tmp/max.jsonl"
out=$("$client" "$sock" <"$tmp/max.jsonl")
expect_match "a line of $max bytes (the bound, newline included) is read" '^\{"ok":true' "$out"
(line_of $((max + 1)) && echo '{"op":"status"}') >"$tmp/over.jsonl"
out=$("$client" "$sock" <"$tmp/over.jsonl")
expect_match "a line of $((max + 1)) bytes is refused and the connection closed" \
    "message exceeds $max bytes without a newline; closing" "$out"
[ "$(grep -c . <<<"$out")" = 1 ] || fail "requests after an oversized line were answered: $out"
pass "nothing after the oversized line is answered"
big=$(python3 -c 'import sys; print("<domain type=\"test\"><name>big</name><vcpu>1</vcpu><description>" + "x"*(int(sys.argv[1])//2) + "</description></domain>")' "$max")
printf '%s' "$big" >"$tmp/big.xml"
set +e
out=$(VCPUPLACE_CONFIG=$conf "$hook" big prepare begin - 2>&1 <"$tmp/big.xml")
rc=$?
set -e
expect_eq "hook: XML over its stdin bound refuses the managed domain's start" 1 "$rc"
expect_match "hook: says the XML is too big" "refusing to start big: its domain XML of [0-9]* bytes exceeds the 4194304 bytes vcpuplace reads" "$out"
kill -0 "$pid" || fail "vcpuplaced died"
pass "vcpuplaced alive after hostile XML and oversized lines"

# --- the unit -------------------------------------------------------------------------------
if command -v systemd-analyze >/dev/null; then
    # verify wants the ExecStart binaries where the unit names them: the built ones here.
    sed -e "s|^\(ExecStart[A-Za-z]*=\)[^ ]*/vcpuplaced|\1$daemon|" "$unit" >"$tmp/vcpuplaced.service"
    # --man=no: the Documentation= pages are installed, not here (tests/integration/unit.sh).
    out=$(systemd-analyze verify --man=no "$tmp/vcpuplaced.service" 2>&1) || fail "systemd-analyze verify: $out"
    pass "systemd-analyze verify accepts the unit"
    echo "systemd-analyze security: $(systemd-analyze security --offline=true "$tmp/vcpuplaced.service" 2>&1 |
        sed -n 's/^→ Overall exposure level for vcpuplaced.service: //p')"
else
    echo "systemd-analyze not installed: unit not verified"
fi
