#!/usr/bin/env bash
# vcpuplace's offline commands as an operator uses them: exit codes (0 placed, 2 refused,
# 1 bad input) and error messages that name the field and the value.
set -u
cli=${1:?usage: cli.sh PATH/TO/vcpuplace}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
topo="synthetic:pack:2 numa:1 l3:2 core:4 pu:2"
pass=0 fail=0

check() { # name, expected rc, expected stderr/stdout substring, command...
  local name=$1 want_rc=$2 want_text=$3; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want_rc" ] || ! grep -qF -- "$want_text" <<<"$out"; then
    echo "FAIL $name: rc=$rc (want $want_rc), output:"; echo "$out" | head -5
    fail=$((fail + 1))
  else
    echo "ok   $name"; pass=$((pass + 1))
  fi
}

domain() { # name vcpus policy-attrs [extra-before-domain]
  cat <<XML
${4:-}<domain type='qemu'>
  <name>$1</name>
  <memory unit='MiB'>64</memory>
  <vcpu>$2</vcpu>
  <metadata><vp:policy xmlns:vp="http://vcpuplace.org/xmlns/policy/1.0" $3/></metadata>
  <os><type arch='x86_64'>hvm</type></os>
</domain>
XML
}

domain ok 4 'smt="isolate"' > "$tmp/ok.xml"
domain big 20 'smt="isolate"' > "$tmp/big.xml"
domain bad 4 'smt="turbo"' > "$tmp/badpolicy.xml"
domain huge 40 'smt="share"' > "$tmp/huge.xml"
printf "<domain type='qemu'><name>x</name><vcpu>2</vcpu>" > "$tmp/malformed.xml"
echo "secret-$$" > "$tmp/secret"
domain xxe 2 'smt="spread"' "<!DOCTYPE domain [<!ENTITY x SYSTEM \"file://$tmp/secret\">]>
" | sed "s|<name>xxe</name>|<name>\&x;</name>|" > "$tmp/xxe.xml"

check "plan places" 0 "vcpu 3" "$cli" plan --topology "$topo" "$tmp/ok.xml"
check "plan --json" 0 '"how" : "placed"' "$cli" plan --json --topology "$topo" "$tmp/ok.xml"
check "plan refused exits 2" 2 "20 vCPUs with smt=isolate need 20 free whole cores" \
  "$cli" plan --topology "$topo" "$tmp/big.xml"
check "unknown policy value" 1 "smt='turbo'" "$cli" plan --topology "$topo" "$tmp/badpolicy.xml"
check "vCPUs above host PUs" 2 "40 vCPUs exceed the 32 PUs" \
  "$cli" plan --topology "$topo" "$tmp/huge.xml"
check "malformed XML" 1 "vcpuplace plan:" "$cli" plan --topology "$topo" "$tmp/malformed.xml"
check "DOCTYPE refused" 1 "DOCTYPE" "$cli" plan --topology "$topo" "$tmp/xxe.xml"
if "$cli" plan --topology "$topo" "$tmp/xxe.xml" 2>&1 | grep -q "secret-$$"; then
  echo "FAIL external entity was expanded"; fail=$((fail + 1))
else
  echo "ok   external entity never expanded"; pass=$((pass + 1))
fi
check "topology file missing" 1 "/nonexistent.xml': No such file or directory" \
  "$cli" plan --topology /nonexistent.xml "$tmp/ok.xml"
check "bad host cpu list" 1 "--host-cpus='0-x'" \
  "$cli" plan --topology "$topo" --host-cpus 0-x "$tmp/ok.xml"

sed "s/type='qemu'/type='xen'/" "$tmp/ok.xml" > "$tmp/xen.xml"
check "non-QEMU domain not placed" 1 "type='xen': vcpuplace places QEMU domains" \
  "$cli" plan --topology "$topo" "$tmp/xen.xml"
mem="synthetic:pack:2 numa:2(memory=16GB) core:4 pu:2"
check "topology shows node memory" 0 "numa 3, 15625000 KiB" "$cli" topology --topology "$mem"
check "topology: memory unknown said so" 0 "memory unknown (no limit" \
  "$cli" topology --topology "$topo"
check "topology --node-memory" 0 "numa 0, 64 GiB" "$cli" topology --topology "$topo" \
  --node-memory 64GiB
check "topology --node-memory bad" 1 "--node-memory='lots' is not a memory size" \
  "$cli" topology --topology "$topo" --node-memory lots
check "topology --json nodes" 0 '"memory" : 16000000000' "$cli" topology --json --topology "$mem"
check "plan shows memory per node" 0 "memory: 64 MiB on numa 0" \
  "$cli" plan --topology "$mem" "$tmp/ok.xml"
cxl=$(dirname "$0")/../topologies/cxl-2n1m.xml
check "topology lists a CPU-less node" 0 "numa 2: no CPUs, memory 4 GiB, near nodes 1" \
  "$cli" topology --topology "$cxl"
check "topology: a made-up L3 is no missing node" 0 "l3 - (these cores share no L3 cache)" \
  "$cli" topology --topology "$cxl"

printf '{"op":"start","name":"a","vcpus":4,"smt":"pack"}\n{"op":"start","name":"b","vcpus":2}\n' \
  > "$tmp/trace.jsonl"
check "simulate" 0 "admitted_before_first_refusal" "$cli" simulate --topology "$topo" \
  --save-ledger "$tmp/ledger.json" "$tmp/trace.jsonl"
check "plan with ledger avoids held PUs" 0 '"cpu" : 8' \
  "$cli" plan --json --topology "$topo" --ledger "$tmp/ledger.json" "$tmp/ok.xml"
check "topology shows owners" 0 "0:a/0" "$cli" topology --topology "$topo" --ledger "$tmp/ledger.json"
check "topology --json" 0 '"domain" : "a"' "$cli" topology --json --topology "$topo" \
  --ledger "$tmp/ledger.json"
check "ledger naming PUs the topology lacks" 1 "$tmp/ledger.json" \
  "$cli" plan --topology "synthetic:pack:1 core:1 pu:1" --ledger "$tmp/ledger.json" "$tmp/ok.xml"
head -c 40 "$tmp/ledger.json" > "$tmp/trunc.json"
check "truncated ledger" 1 "$tmp/trunc.json" \
  "$cli" plan --topology "$topo" --ledger "$tmp/trunc.json" "$tmp/ok.xml"
printf '{"op":"start","name":"a","vcpus":0}\n' > "$tmp/bad1.jsonl"
check "trace: vcpus out of range" 1 "bad1.jsonl:1: \"vcpus\": 0 is not within 1..4096" \
  "$cli" simulate --topology "$topo" "$tmp/bad1.jsonl"
printf '{"op":"start","name":"a","vcpus":2,"smtt":"pack"}\n' > "$tmp/bad2.jsonl"
check "trace: unknown key" 1 "bad2.jsonl:1: unknown key 'smtt' in start event" "$cli" simulate --topology "$topo" "$tmp/bad2.jsonl"
printf '{"op":"start","name":"a","vcpus":1}\n{"op":"stop","name":"a","vcpus":1}\n' > "$tmp/bad4.jsonl"
check "trace: stop with a start's key" 1 "bad4.jsonl:2: unknown key 'vcpus' in stop event" \
  "$cli" simulate --topology "$topo" "$tmp/bad4.jsonl"
printf 'not json\n' > "$tmp/bad3.jsonl"
check "trace: not JSON" 1 "bad3.jsonl:1:" "$cli" simulate --topology "$topo" "$tmp/bad3.jsonl"
# The domain is "domain" (format 1's name for it), or "name" as traces said before; not both.
printf '%s\n' '{"op":"start","domain":"d1","vcpus":2,"smt":"isolate"}' '{"op":"stop","domain":"d1"}' >"$tmp/dom.jsonl"
check "trace: domain" 0 '"domain" : "d1"' "$cli" simulate --topology "$topo" --json "$tmp/dom.jsonl"
echo '{"op":"start","domain":"d1","name":"d1","vcpus":2}' >"$tmp/both.jsonl"
check "trace: domain and name" 1 'both.jsonl:1: "domain" and "name" both given' \
  "$cli" simulate --topology "$topo" "$tmp/both.jsonl"
printf '%s\n' '{"op":"start","domain":"d1","vcpus":2,"smt":"spread","cpus":[0,2],"us":3}' \
  '{"op":"stop","domain":"d1"}' >"$tmp/dom-outcomes.jsonl"
check "outcomes: domain" 0 "placed" "$cli" score --topology "$topo" "$tmp/dom-outcomes.jsonl"
check "unknown command" 1 "unknown command 'frobnicate'" "$cli" frobnicate
# Argument counts, checked by every command the same way before anything is loaded or asked;
# the live commands' own steps first (--socket and --connect given: no configuration read).
live=(--socket "$tmp/no.sock" --connect test:///default)
check "plan: no argument" 1 "vcpuplace plan: expected one DOMAIN.xml argument" "$cli" plan
check "score: two arguments" 1 "vcpuplace score: expected one OUTCOMES.jsonl argument" \
  "$cli" score a b
check "pin-config: two domains" 1 "vcpuplace pin-config: expected one DOMAIN argument" \
  "$cli" pin-config "${live[@]}" a b
check "capacity: an argument" 1 "vcpuplace capacity: unexpected argument 'x'" \
  "$cli" capacity --topology "$topo" x
check "provider-config: --ledger" 1 "vcpuplace provider-config: --ledger: the provider config states totals" \
  "$cli" provider-config --topology "$topo" --ledger "$tmp/l.json"
check "capacity: flavor smt" 1 "vcpuplace capacity: --flavor 'm1': smt='turbo' is not one of" \
  "$cli" capacity --topology "$topo" -f 'm1:vcpus=2,smt=turbo'
check "capacity: flavor name" 1 "--flavor 'm 1': 'm 1' is not a flavor name" \
  "$cli" capacity --topology "$topo" -f 'm 1:vcpus=2'
check "capacity: flavor vcpus" 1 "--flavor 'm1': vcpus='0' is not a vCPU count (1 to 4096)" \
  "$cli" capacity --topology "$topo" -f 'm1:vcpus=0'
check "capacity: flavor key" 1 "--flavor 'm1': 'ram' is not KEY=VALUE" \
  "$cli" capacity --topology "$topo" -f 'm1:vcpus=2,ram'
check "capacity: flavor twice" 1 "--flavor 'm1': named twice" \
  "$cli" capacity --topology "$topo" -f 'm1:vcpus=2' -f 'm1:vcpus=4'
check "top: an argument" 1 "vcpuplace top: unexpected argument 'x'" "$cli" top "${live[@]}" x
check "metrics: bad option" 1 "vcpuplace metrics: Unknown option --frob" \
  "$cli" metrics "${live[@]}" --frob
check "status: configuration missing" 1 "vcpuplace status: cannot read configuration $tmp/none.conf" \
  "$cli" status --config "$tmp/none.conf"
check "topology: --live with --ledger" 1 "vcpuplace topology: --live takes the topology" \
  "$cli" topology --live --ledger "$tmp/l.json"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
