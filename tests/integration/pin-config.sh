#!/bin/bash
# vcpuplace pin-config --json against vcpuplaced on libvirt's test driver (whose domains the
# daemon places at start): a dry run prints the held plan as JSON, one entry per vCPU on
# distinct CPUs, the same CPUs `vcpuplace status --json` reports, written false. (The test
# driver cannot pin the persistent definition, VIR_DOMAIN_AFFECT_CONFIG, so the write
# itself is the e2e tier's.)
set -euo pipefail
build=${VP_BUILDDIR:?}
top=${VP_TOPDIR:?}
cli=$build/plugin/cli/vcpuplace
daemon=$build/plugin/daemon/vcpuplaced
tmp=$(mktemp -d /tmp/vp-pinconfig.XXXXXX)
pid=
cleanup() {
    [ -z "$pid" ] || { kill "$pid"; wait "$pid"; } 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cat >"$tmp/vcpuplaced.conf" <<CONF
[daemon]
mode=enforce
adopt_running=yes
uri=test://$top/tests/integration/data/testnode-policy.xml
topology=synthetic:pack:1 core:8 pu:2
socket=$tmp/vcpuplaced.sock
state=$tmp/ledger.json
[rebalance]
mode=off
CONF
"$daemon" --config "$tmp/vcpuplaced.conf" >"$tmp/daemon.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
    "$cli" status --config "$tmp/vcpuplaced.conf" 2>/dev/null | grep -q '^db1: applied' && break
    sleep 0.1
done
"$cli" pin-config --config "$tmp/vcpuplaced.conf" db1 --dry-run --json >"$tmp/pins.json" ||
    fail "pin-config --json: $(cat "$tmp/daemon.log")"
"$cli" status --config "$tmp/vcpuplaced.conf" db1 --json >"$tmp/status.json"
python3 - "$tmp/pins.json" "$tmp/status.json" <<'PY' || fail "pin-config --json: $(cat "$tmp/pins.json")"
import json, sys
pins = json.load(open(sys.argv[1]))
assert pins["domain"] == "db1" and pins["written"] is False and pins["own_pins"] is False, pins
cpus = [v["cpu"] for v in pins["vcpus"]]
assert [v["vcpu"] for v in pins["vcpus"]] == [0, 1, 2, 3], pins
assert len(set(cpus)) == 4, pins
plan = json.load(open(sys.argv[2]))["domains"][0]["plan"]
assert cpus == [v["cpu"] for v in sorted(plan["vcpus"], key=lambda v: v["vcpu"])], (pins, plan)
assert pins["emulator"] == (plan["emulator"] or None), (pins, plan)
PY
echo "pin-config: all checks passed"
