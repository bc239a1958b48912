#!/bin/bash
# vcpuplace capacity against a host small enough to count by hand: one package, two NUMA
# nodes, two cores per node, two SMT siblings per core (8 PUs, 4 cores).
#  empty host:            isolate 1 vCPU: 4 (a core each, 2 per node); 2 vCPUs: 2 (a node
#                         each); 4 vCPUs: 1 (every core, spanning both nodes); 8: 0.
#                         pack 2 vCPUs: 4 (a sibling pair each); 4 vCPUs: 2 (a node each);
#                         8: 1 (spanning). share 1 vCPU: 8 (a PU each).
#  after a 2-vCPU isolate VM (one node's two cores): isolate 1: 2, all on the other node;
#                         isolate 2: 1; isolate 4: 0; share 1: 4.
# The ledger file is only read. Live: the daemon (libvirt's test driver, managing no
# domain) answers the same as the offline command on an empty host, and an unreachable
# daemon is exit 3. Flavors (vCPUs, memory, huge pages, policy) are counted below.
set -euo pipefail
build=${VP_BUILDDIR:?}
cli=$build/plugin/cli/vcpuplace
daemon=$build/plugin/daemon/vcpuplaced
topo='synthetic:pack:1 numa:2 core:2 pu:2'
tmp=$(mktemp -d /tmp/vp-capacity.XXXXXX)
pid=
cleanup() {
    [ -z "$pid" ] || { kill "$pid"; wait "$pid"; } 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# fit FILE VCPUS SMT: "host node0 node1 spanning" from capacity --json.
fit() {
    python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
for s in doc["shapes"]:
    if s["vcpus"] == int(sys.argv[2]) and s["smt"] == sys.argv[3]:
        print(s["host"], *[n["fit"] for n in s["nodes"]], s["spanning"])
' "$@"
}
expect() { # expect FILE VCPUS SMT WANT
    local got
    got=$(fit "$1" "$2" "$3")
    [ "$got" = "$4" ] || fail "$2 vCPUs smt=$3: got '$got' (host node0 node1 spanning), want '$4'"
}

"$cli" capacity -t "$topo" --vcpus 1,2,4,8 --json >"$tmp/empty.json"
expect "$tmp/empty.json" 1 isolate "4 2 2 0"
expect "$tmp/empty.json" 2 isolate "2 1 1 0"
expect "$tmp/empty.json" 4 isolate "1 0 0 1"
expect "$tmp/empty.json" 8 isolate "0 0 0 0"
expect "$tmp/empty.json" 2 pack "4 2 2 0"
expect "$tmp/empty.json" 4 pack "2 1 1 0"
expect "$tmp/empty.json" 8 pack "1 0 0 1"
expect "$tmp/empty.json" 1 share "8 4 4 0"
python3 -c 'import json,sys; s=[x for x in json.load(open(sys.argv[1]))["shapes"] if x["vcpus"]==8 and x["smt"]=="isolate"][0]; assert "8 vCPUs" in s["stop"] or "8" in s["stop"], s' "$tmp/empty.json" ||
    fail "the 8-vCPU isolate shape does not say why it stopped"

echo '{"op":"start","name":"a","vcpus":2,"smt":"isolate"}' >"$tmp/trace.jsonl"
"$cli" simulate -t "$topo" -q --save-ledger "$tmp/ledger.json" "$tmp/trace.jsonl" >/dev/null
cp "$tmp/ledger.json" "$tmp/ledger.orig"
"$cli" capacity -t "$topo" --ledger "$tmp/ledger.json" --vcpus 1,2,4 --json >"$tmp/held.json"
got=$(fit "$tmp/held.json" 1 isolate)
case $got in
    "2 0 2 0") free="1 0 1 0" ;;
    "2 2 0 0") free="1 1 0 0" ;;
    *) fail "after a 2-vCPU isolate VM, 1 vCPU isolate: '$got', want 2 on the other node" ;;
esac
expect "$tmp/held.json" 2 isolate "$free"
[ "$(fit "$tmp/held.json" 4 isolate | cut -d' ' -f1)" = 0 ] || fail "after a 2-vCPU isolate VM, 4 vCPU isolate"
[ "$(fit "$tmp/held.json" 1 share | cut -d' ' -f1)" = 4 ] || fail "after a 2-vCPU isolate VM, 1 vCPU share"
cmp -s "$tmp/ledger.json" "$tmp/ledger.orig" || fail "capacity changed the ledger file"

# The text form has a row per shape and a column per node.
"$cli" capacity -t "$topo" --vcpus 2 >"$tmp/text"
grep -Eq '^flavor +vcpus +smt +memory +host +node0 +node1 +spanning$' "$tmp/text" || fail "text header: $(cat "$tmp/text")"
grep -Eq '^- +2 +isolate +- +2 +1 +1 +0$' "$tmp/text" || fail "text row: $(cat "$tmp/text")"

# Flavors, with 16 GiB a node (15.5 GiB once the 512 MiB reserve is kept):
#  iso: 2 vCPUs isolate 6 GiB: a node's two cores each, 1 per node (memory would take 2)
#  fat: 1 vCPU 10 GiB: memory allows one a node, though CPUs would take 4
#  pool: 1 GiB on 1 GiB huge pages: the synthetic host has no pool, none fit
#  flt: 1 vCPU shared at ratio 4: more than the 8 a dedicated one gets, at most 8 CPUs x 4
#  = 32, each within one node (where between is the shared placer's, its golden cases')
# flav FILE NAME: "host node0 node1 spanning" of flavor NAME.
flav() {
    python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
for s in doc["shapes"]:
    if s["flavor"] == sys.argv[2]:
        print(s["host"], *[n["fit"] for n in s["nodes"]], s["spanning"])
' "$@"
}
"$cli" capacity -t "$topo" --node-memory 16GiB --json -f 'iso:vcpus=2,memory=6GiB,smt=isolate' \
    -f 'fat:vcpus=1,memory=10GiB;pool:vcpus=1,memory=1GiB,pages=1GiB' \
    -f 'flt:vcpus=1,cpus=shared,ratio=4' >"$tmp/flavors.json"
for want in "iso 2 1 1 0" "fat 2 1 1 0" "pool 0 0 0 0"; do
    set -- $want
    got=$(flav "$tmp/flavors.json" "$1")
    [ "$got" = "$2 $3 $4 $5" ] || fail "flavor $1: got '$got' (host node0 node1 spanning), want '$2 $3 $4 $5'"
done
set -- $(flav "$tmp/flavors.json" flt)
[ "$1" -gt 8 ] && [ "$1" -le 32 ] && [ "$4" = 0 ] && [ $(($2 + $3)) = "$1" ] ||
    fail "shared flavor flt: $* (host node0 node1 spanning), want 9 to 32 within nodes"
grep -q '"page_size" : 1073741824' "$tmp/flavors.json" || fail "pool's page size not in the JSON"
# The configuration's flavors when no --flavor or --vcpus is given; a bad one names the key,
# the flavor and the value.
printf '[daemon]\ncapacity_flavors=fat:vcpus=1,memory=10GiB; iso:vcpus=2,smt=isolate\n' >"$tmp/fl.conf"
"$cli" capacity -t "$topo" --node-memory 16GiB --config "$tmp/fl.conf" --json >"$tmp/conf.json"
[ "$(flav "$tmp/conf.json" fat)" = "2 1 1 0" ] || fail "capacity_flavors not read: $(cat "$tmp/conf.json")"
[ "$(flav "$tmp/conf.json" iso)" = "2 1 1 0" ] || fail "capacity_flavors' second flavor"
printf '[daemon]\ncapacity_flavors=fat:vcpus=1,memory=ten\n' >"$tmp/bad.conf"
rc=0
out=$("$cli" capacity -t "$topo" --config "$tmp/bad.conf" 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -qF "capacity_flavors 'fat': memory='ten' is not a memory size" <<<"$out" ||
    fail "bad capacity_flavors: rc $rc, $out"
rc=0
out=$("$cli" capacity -t "$topo" -f 'a:vcpus=1' --vcpus 2 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -qF -- "--flavor and --vcpus" <<<"$out" || fail "--flavor with --vcpus: rc $rc, $out"

cat >"$tmp/vcpuplaced.conf" <<CONF
[daemon]
mode=enforce
adopt_running=yes
uri=test:///default
topology=$topo
socket=$tmp/vcpuplaced.sock
state=$tmp/daemon-ledger.json
domains=none-*
[rebalance]
mode=off
CONF
"$daemon" --config "$tmp/vcpuplaced.conf" >"$tmp/daemon.log" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -S "$tmp/vcpuplaced.sock" ] && break; sleep 0.1; done
"$cli" capacity --live --socket "$tmp/vcpuplaced.sock" --vcpus 1,2,4,8 --json >"$tmp/live.json" ||
    fail "capacity --live: $(cat "$tmp/daemon.log")"
cmp -s "$tmp/live.json" "$tmp/empty.json" || fail "live capacity differs from offline: $(diff "$tmp/empty.json" "$tmp/live.json")"
kill "$pid"; wait "$pid" 2>/dev/null || true
pid=
rc=0
"$cli" capacity --live --socket "$tmp/vcpuplaced.sock" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 3 ] || fail "capacity --live without a daemon exited $rc, want 3"
echo "capacity: all checks passed"
