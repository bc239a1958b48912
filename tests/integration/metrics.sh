#!/bin/bash
# vcpuplaced's Prometheus text against libvirt's test driver with placed domains:
# `promtool check metrics` finds nothing to say; no series carries what changes (no "cpu"
# label on a vCPU's series: its CPU is the value of vcpuplace_vcpu_cpu); run delay is a
# _seconds_total counter; refusals count by reason (a malformed domain XML: invalid; a
# domain no host could hold: policy); vcpuplace_build_info carries the version; and the
# capacity gauges are the figures `vcpuplace capacity --live --json` gives, host and per
# NUMA node, for each shape.
set -euo pipefail
build=${VP_BUILDDIR:?}
top=${VP_TOPDIR:?}
version=${VP_VERSION:?}
cli=$build/plugin/cli/vcpuplace
daemon=$build/plugin/daemon/vcpuplaced
sock=${VP_SOCKCLIENT:?}
tmp=$(mktemp -d /tmp/vp-metrics.XXXXXX)
pid=
cleanup() {
    [ -z "$pid" ] || { kill "$pid"; wait "$pid"; } 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v promtool >/dev/null || fail "promtool missing (Debian package prometheus, scripts/packages.txt)"

cat >"$tmp/vcpuplaced.conf" <<CONF
[daemon]
mode=enforce
adopt_running=yes
uri=test://$top/tests/integration/data/testnode-policy.xml
topology=synthetic:pack:1 numa:2 core:4 pu:2
housekeeping_cpus=0
socket=$tmp/vcpuplaced.sock
state=$tmp/ledger.json
capacity_vcpus=3, 6
capacity_flavors=iso.2:vcpus=2,memory=1GiB,smt=isolate; big:vcpus=6,memory=2GiB
[rebalance]
mode=advise
CONF
conf=(--config "$tmp/vcpuplaced.conf")
"$daemon" "${conf[@]}" >"$tmp/daemon.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
    "$cli" status "${conf[@]}" 2>/dev/null | grep -q '^db1: applied' && break
    sleep 0.1
done
echo '{"op":"reserve","name":"bad","xml":"<domain"}' | "$sock" "$tmp/vcpuplaced.sock" >/dev/null
cat >"$tmp/huge.xml" <<'XML'
<domain type='qemu'><name>huge</name><memory unit='MiB'>64</memory><vcpu>64</vcpu>
<os><type arch='x86_64'>hvm</type></os></domain>
XML
python3 -c 'import json,sys; print(json.dumps({"op":"reserve","name":"huge","xml":open(sys.argv[1]).read()}))' \
    "$tmp/huge.xml" | "$sock" "$tmp/vcpuplaced.sock" >"$tmp/huge.reply"
grep -q '"refused":true' "$tmp/huge.reply" || fail "a 64-vCPU domain on 16 CPUs was not refused: $(cat "$tmp/huge.reply")"

"$cli" metrics "${conf[@]}" >"$tmp/metrics.prom" || fail "metrics: $(cat "$tmp/daemon.log")"
out=$(promtool check metrics <"$tmp/metrics.prom" 2>&1) || fail "promtool check metrics: $out"
[ -z "$out" ] || fail "promtool check metrics: $out"
! grep -E '^vcpuplace_vcpu_[a-z_]+\{([^}]*,)?cpu=' "$tmp/metrics.prom" ||
    fail "a vCPU's series is labelled with its CPU"
grep -Eq '^vcpuplace_vcpu_cpu\{domain="db1",vcpu="0"\} [0-9]+$' "$tmp/metrics.prom" ||
    fail "no vcpuplace_vcpu_cpu for db1"
grep -q '^# TYPE vcpuplace_vcpu_wait_seconds_total counter$' "$tmp/metrics.prom" ||
    fail "run delay is no _seconds_total counter"
grep -q '^vcpuplace_refusals_total{reason="invalid"} 1$' "$tmp/metrics.prom" ||
    fail "the malformed XML's refusal is not counted: $(grep refusals "$tmp/metrics.prom")"
grep -q '^vcpuplace_refusals_total{reason="policy"} 1$' "$tmp/metrics.prom" ||
    fail "the policy refusal is not counted: $(grep refusals "$tmp/metrics.prom")"
grep -q "^vcpuplace_build_info{version=\"$version\"} 1\$" "$tmp/metrics.prom" ||
    fail "no vcpuplace_build_info for $version"
grep -q '^vcpuplace_moves_total{reason="rebalance"} 0$' "$tmp/metrics.prom" ||
    fail "moves are not counted by reason"

# Both take their shapes from capacity_vcpus and capacity_flavors: the CLI through --config,
# without --vcpus or --flavor.
"$cli" capacity "${conf[@]}" --live --socket "$tmp/vcpuplaced.sock" --json >"$tmp/capacity.json"
python3 - "$tmp/capacity.json" "$tmp/metrics.prom" <<'PY' || fail "capacity gauges differ from vcpuplace capacity"
import json, re, sys
cap = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
def gauge(name, **labels):
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    m = re.search(r"^%s\{%s\} (\d+)$" % (name, re.escape(want)), text, re.M)
    assert m, f"no {name}{{{want}}}"
    return int(m.group(1))
flavors = [s for s in cap["shapes"] if s["flavor"]]
assert [s["flavor"] for s in flavors] == ["iso.2", "big"], cap["shapes"]
for s in flavors:
    assert gauge("vcpuplace_capacity_flavor_vms", flavor=s["flavor"]) == s["host"], s
    assert gauge("vcpuplace_capacity_flavor_spanning_vms", flavor=s["flavor"]) == s["spanning"], s
    for n in s["nodes"]:
        assert gauge("vcpuplace_capacity_flavor_node_vms", flavor=s["flavor"], numa=n["numa"]) == n["fit"], (s, n)
assert any(s["host"] for s in flavors), "no flavor fits: the comparison shows nothing"
shapes = [s for s in cap["shapes"] if not s["flavor"]]
assert sorted({s["vcpus"] for s in shapes}) == [3, 6], cap["shapes"]
assert not re.search(r'^vcpuplace_capacity_vms\{vcpus="(1|2|4|8)"', text, re.M), "default shapes in the gauges"
checked = 0
for s in shapes:
    assert gauge("vcpuplace_capacity_vms", vcpus=s["vcpus"], smt=s["smt"]) == s["host"], s
    assert gauge("vcpuplace_capacity_spanning_vms", vcpus=s["vcpus"], smt=s["smt"]) == s["spanning"], s
    for n in s["nodes"]:
        assert gauge("vcpuplace_capacity_node_vms", vcpus=s["vcpus"], smt=s["smt"], numa=n["numa"]) == n["fit"], (s, n)
        checked += 1
assert checked == 2 * 8, checked
assert any(s["host"] for s in shapes), "nothing fits: the comparison shows nothing"
PY
echo "metrics: all checks passed"
