#!/bin/bash
# Every JSON document vcpuplace writes against its written format (vcpuplace-json(7), the
# JSON Schemas in tests/e2e/schema/vcpuplace.schema.json): the offline commands' --json
# (plan placed and refused, topology with and without owners and with a CPU-less node,
# capacity, simulate, score), the ledger file, and, from vcpuplaced on libvirt's test driver
# with placed domains, the live commands' --json (status, top, rebalance --dry-run,
# capacity, topology, pin-config, policy for one and for several domains), the daemon's
# ledger file and its socket replies to the hook's operations, a success and an error. A ledger in the spelling before
# format 1 still loads. VP_JSON_KEEP=DIR keeps the documents.
set -euo pipefail
build=${VP_BUILDDIR:?}
top=${VP_TOPDIR:?}
cli=$build/plugin/cli/vcpuplace
daemon=$build/plugin/daemon/vcpuplaced
sock=${VP_SOCKCLIENT:-$build/tests/integration/vp-sockclient}
check=$top/tests/e2e/schema/json-check.py
tmp=$(mktemp -d /tmp/vp-jsonfmt.XXXXXX)
pid=
cleanup() {
    [ -z "$pid" ] || { kill "$pid"; wait "$pid"; } 2>/dev/null || true
    [ -z "${VP_JSON_KEEP:-}" ] || cp "$tmp"/*.json "$VP_JSON_KEEP"/
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
python3 -c 'import jsonschema' 2>/dev/null || fail "python3-jsonschema missing (scripts/packages.txt)"
docs=()
doc() { # doc DEFINITION FILE: validated at the end, all together
    [ -s "$2" ] || fail "$2 is empty"
    docs+=("$1" "$2")
}

topo='synthetic:pack:1 numa:2 core:2 pu:2'
cat >"$tmp/trace.jsonl" <<'TRACE'
{"op":"start","name":"a","vcpus":2,"smt":"isolate"}
{"op":"start","name":"b","vcpus":2,"smt":"pack","group":"g"}
{"op":"start","name":"c","vcpus":8,"smt":"isolate"}
{"op":"stop","name":"b"}
TRACE
"$cli" simulate -t "$topo" --json --save-ledger "$tmp/ledger.json" "$tmp/trace.jsonl" >"$tmp/simulate.json"
doc simulate "$tmp/simulate.json"
doc ledger "$tmp/ledger.json"
"$cli" plan -t "$topo" --ledger "$tmp/ledger.json" --json "$top/xml/examples/vp-pack.xml" >"$tmp/plan.json"
doc plan "$tmp/plan.json"
rc=0
"$cli" plan -t 'synthetic:pack:1 core:1 pu:2' --json "$top/xml/examples/vp-isolate.xml" \
    >"$tmp/plan-refused.json" 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "refused plan exited $rc, want 2"
doc plan "$tmp/plan-refused.json"
"$cli" topology -t "$topo" --housekeeping 0 --json >"$tmp/topology.json"
doc topology "$tmp/topology.json"
"$cli" topology -t "$topo" --ledger "$tmp/ledger.json" --json >"$tmp/topology-owners.json"
doc topology "$tmp/topology-owners.json"
# a NUMA node without CPUs (CXL memory): empty cpus, its near nodes
"$cli" topology -t "$top/tests/topologies/cxl-2n1m.xml" --json >"$tmp/topology-cpuless.json"
doc topology "$tmp/topology-cpuless.json"
"$cli" capacity -t "$topo" --vcpus 1,2 --json >"$tmp/capacity.json"
doc capacity "$tmp/capacity.json"
"$cli" capacity -t "$topo" --node-memory 8GiB -f 'a:vcpus=2,memory=1GiB,pages=2MiB,smt=pack' \
    -f 'b:vcpus=1,cpus=shared,ratio=2.5' --json >"$tmp/capacity-flavors.json"
doc capacity "$tmp/capacity-flavors.json"
printf '%s\n' '{"op":"start","name":"vm1","vcpus":2,"smt":"spread","cpus":[0,2],"us":3}' \
    '{"op":"stop","name":"vm1"}' >"$tmp/outcomes.jsonl"
"$cli" score -t "$topo" --json "$tmp/outcomes.jsonl" >"$tmp/score.json"
doc score "$tmp/score.json"

# The ledger file as vcpuplaced wrote it before format 1 loads with the same owners.
python3 - "$tmp/ledger.json" "$tmp/ledger-v0.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
old = {"version": doc.pop("format"), "domains": doc["domains"]}
for d in old["domains"]:
    for v in d["vcpus"]:
        v["pu"] = v.pop("cpu")
        for k in ("pu", "core", "l3", "numa", "package"):
            v[k] = -1 if v[k] is None else v[k]
    if d["level_index"] is None:
        d["level_index"] = -1
    for c in d.get("guest_cells", []):
        c["node"] = c.pop("numa")
json.dump(old, open(sys.argv[2], "w"))
PY
"$cli" topology -t "$topo" --ledger "$tmp/ledger-v0.json" --json >"$tmp/topology-v0.json" ||
    fail "a ledger before format 1 does not load"
cmp -s "$tmp/topology-v0.json" "$tmp/topology-owners.json" ||
    fail "a ledger before format 1 loads otherwise: $(diff "$tmp/topology-owners.json" "$tmp/topology-v0.json")"

cat >"$tmp/vcpuplaced.conf" <<CONF
[daemon]
mode=enforce
adopt_running=yes
uri=test://$top/tests/integration/data/testnode-policy.xml
topology=synthetic:pack:1 numa:2 core:4 pu:2
housekeeping_cpus=0
socket=$tmp/vcpuplaced.sock
state=$tmp/daemon-ledger.json
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
"$cli" status "${conf[@]}" --json >"$tmp/status.json" || fail "status: $(cat "$tmp/daemon.log")"
doc status "$tmp/status.json"
"$cli" status "${conf[@]}" db1 --json >"$tmp/status-db1.json"
doc status "$tmp/status-db1.json"
"$cli" top "${conf[@]}" --once --json >"$tmp/top.json"
doc top "$tmp/top.json"
"$cli" rebalance "${conf[@]}" --dry-run --json >"$tmp/rebalance.json"
doc rebalance "$tmp/rebalance.json"
"$cli" capacity --live --socket "$tmp/vcpuplaced.sock" --vcpus 1,2 --json >"$tmp/capacity-live.json"
doc capacity "$tmp/capacity-live.json"
"$cli" topology --live --socket "$tmp/vcpuplaced.sock" --json >"$tmp/topology-live.json"
doc topology "$tmp/topology-live.json"
"$cli" pin-config "${conf[@]}" db1 --dry-run --json >"$tmp/pin-config.json"
doc pin-config "$tmp/pin-config.json"
"$cli" policy -c "test://$top/tests/integration/data/testnode-policy.xml" db1 --json >"$tmp/policy.json"
doc policy "$tmp/policy.json"
"$cli" policy -c "test://$top/tests/integration/data/testnode-policy.xml" '*' --smt=pack --dry-run \
    --json >"$tmp/policy-many.json"
doc policy-many "$tmp/policy-many.json"
for _ in $(seq 50); do [ -s "$tmp/daemon-ledger.json" ] && break; sleep 0.1; done
cp "$tmp/daemon-ledger.json" "$tmp/daemon-ledger-copy.json"
doc ledger "$tmp/daemon-ledger-copy.json"
# The hook's operations: a release of a domain nobody holds, and a request it refuses.
echo '{"op":"release","name":"nobody"}' | "$sock" "$tmp/vcpuplaced.sock" >"$tmp/reply-ok.json"
doc reply "$tmp/reply-ok.json"
echo '{"op":"reserve","name":"x","xml":"<domain"}' | "$sock" "$tmp/vcpuplaced.sock" >"$tmp/reply-error.json"
doc reply "$tmp/reply-error.json"

python3 "$check" "${docs[@]}" || fail "documents do not match their formats"
# The schema is no formality: the old spelling does not pass it.
if python3 "$check" ledger "$tmp/ledger-v0.json" >"$tmp/v0.out"; then
    fail "a ledger in the spelling before format 1 validates as format 1"
fi
grep -q "'version' was unexpected" "$tmp/v0.out" || fail "old ledger rejected for another reason: $(cat "$tmp/v0.out")"
echo "json-formats: $((${#docs[@]} / 2)) documents match their formats"
