#!/bin/bash
# The systemd unit as built, and the readiness it promises:
#  - systemd-analyze verify accepts it, Documentation= included (the man pages as built,
#    through MANPATH);
#  - it is ordered before libvirtd and virqemud (autostarted guests meet a listening
#    socket), Type=notify, with StateDirectory= (or ReadWritePaths= off /var) for the
#    daemon's state, RuntimeDirectory= for the socket, and node_exporter's textfile
#    directory writable;
#  - Type=notify is kept: vcpuplaced, given a NOTIFY_SOCKET, sends READY=1, and by then its
#    socket answers (checked with `vcpuplace status`, libvirt's test driver behind it).
set -euo pipefail
build=$(cd "${VP_BUILDDIR:?}" && pwd)
daemon=$build/plugin/daemon/vcpuplaced
cli=$build/plugin/cli/vcpuplace
unit=$build/plugin/daemon/vcpuplaced.service
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d /tmp/vp-unit.XXXXXX)
pid=
listener=
cleanup() {
    [ -z "$pid" ] || { kill "$pid"; wait "$pid"; } 2>/dev/null || true
    [ -z "$listener" ] || { kill "$listener"; wait "$listener"; } 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

grep -qx 'Type=notify' "$unit" || fail "the unit is not Type=notify"
grep -Eq '^Before=.*libvirtd\.service' "$unit" || fail "the unit is not ordered before libvirtd"
grep -Eq '^After=.*libvirtd' "$unit" && fail "the unit is still ordered after libvirtd"
grep -qx 'RuntimeDirectory=vcpuplace' "$unit" || fail "no RuntimeDirectory="
grep -Eqx 'StateDirectory=vcpuplace|ReadWritePaths=/.*/lib/vcpuplace' "$unit" || fail "no state directory"
grep -qx 'ReadWritePaths=-/var/lib/prometheus/node-exporter' "$unit" || fail "the textfile directory is not writable"

if command -v systemd-analyze >/dev/null; then
    mkdir -p "$tmp/man/man1" "$tmp/man/man5" "$tmp/man/man8"
    for p in "$build"/doc/*.[158]; do ln -s "$p" "$tmp/man/man${p##*.}/"; done
    sed -e "s|^\(ExecStart[A-Za-z]*=\)[^ ]*/vcpuplaced|\1$daemon|" "$unit" >"$tmp/vcpuplaced.service"
    out=$(MANPATH=$tmp/man systemd-analyze verify "$tmp/vcpuplaced.service" 2>&1) ||
        fail "systemd-analyze verify: $out"
    echo "ok: systemd-analyze verify (Documentation= pages found)"
else
    echo "systemd-analyze not installed: unit not verified"
fi

# A notify socket of our own, as systemd would hold it: one datagram is expected.
cat >"$tmp/vcpuplaced.conf" <<CONF
[daemon]
mode=enforce
adopt_running=yes
uri=test:///default
topology=synthetic:core:2 pu:2
socket=$tmp/vcpuplaced.sock
state=$tmp/ledger.json
[rebalance]
mode=off
CONF
python3 - "$tmp/notify.sock" "$tmp/notified" "$cli" "$tmp/vcpuplaced.conf" <<'PY' &
import socket, subprocess, sys
path, out, cli, conf = sys.argv[1:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
open(path + ".bound", "w").close()
s.settimeout(30)
msg = s.recv(4096).decode()
# Ask the daemon the moment it says it is ready: a Type=notify unit's dependants start now.
st = subprocess.run([cli, "status", "--config", conf], capture_output=True, text=True)
open(out, "w").write(msg + "\n--status rc=%d--\n" % st.returncode + st.stdout + st.stderr)
PY
listener=$!
for _ in $(seq 100); do [ -e "$tmp/notify.sock.bound" ] && break; sleep 0.1; done
[ -e "$tmp/notify.sock.bound" ] || fail "the notify listener did not start"
NOTIFY_SOCKET=$tmp/notify.sock "$daemon" --config "$tmp/vcpuplaced.conf" >"$tmp/daemon.log" 2>&1 &
pid=$!
wait "$listener" || fail "no notification within 30 s; daemon log: $(cat "$tmp/daemon.log")"
listener=
notified=$(cat "$tmp/notified")
grep -qx 'READY=1' <<<"$notified" || fail "vcpuplaced sent no READY=1: $notified"
grep -q "^STATUS=listening on $tmp/vcpuplaced.sock" <<<"$notified" || fail "no STATUS= naming the socket: $notified"
grep -q -- '--status rc=0--' <<<"$notified" || fail "the socket did not answer at READY=1: $notified"
echo "ok: READY=1 once the socket answers"

kill "$pid"; wait "$pid" 2>/dev/null || true
pid=
echo "unit: all checks passed"
