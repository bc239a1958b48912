#!/bin/bash
# vcpuplace provider-config read by Nova's own loader (nova.compute.provider_config, Debian's
# python3-nova), as nova-compute reads [compute] provider_config_location: an SMT host with a
# housekeeping CPU (the core it sits on is no whole core) whose domains default to isolate, a
# host without SMT, and one without a whole core (no inventory, no isolate or pack trait). The loader's schema and its checks
# (CUSTOM_ names, the $COMPUTE_NODE identity) must accept each file and give back the figures.
set -euo pipefail
build=${VP_BUILDDIR:?}
cli=$build/plugin/cli/vcpuplace
tmp=$(mktemp -d /tmp/vp-novaprov.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Debian's interpreter, where python3-nova lives (a python3 earlier in PATH may not see it).
py=/usr/bin/python3
"$py" -c 'import nova.compute.provider_config' 2>/dev/null ||
    fail "python3-nova missing (scripts/packages.txt)"

# case NAME CORES THREADS DEFAULT TOPOLOGY [CLI OPTIONS]: CORES whole cores, THREADS per core,
# DEFAULT the smt policy of a domain without metadata ([policy] smt).
case_() {
    local name=$1 cores=$2 threads=$3 fallback=$4 topo=$5
    shift 5
    mkdir "$tmp/$name"
    "$cli" provider-config -t "$topo" "$@" >"$tmp/$name/vcpuplace.yaml" ||
        fail "$name: provider-config exited $?"
    "$py" - "$tmp/$name" "$cores" "$threads" "$fallback" <<'PY' || fail "$name: $(cat "$tmp/$name/vcpuplace.yaml")"
import sys
from nova.compute import provider_config

path, cores, threads, fallback = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
providers = provider_config.get_provider_configs(path)
assert list(providers) == ["$COMPUTE_NODE"], providers
p = providers["$COMPUTE_NODE"]
inv = {}
for entry in p["inventories"]["additional"] if "inventories" in p else []:
    inv.update(entry)
traits = set(p["traits"]["additional"])
want = {"CUSTOM_VCPUPLACE", "CUSTOM_VCPUPLACE_SMT_SPREAD", "CUSTOM_VCPUPLACE_SMT_SHARE",
        "CUSTOM_VCPUPLACE_THREADS_%d" % threads, "CUSTOM_VCPUPLACE_DEFAULT_SMT_" + fallback}
if cores:
    want |= {"CUSTOM_VCPUPLACE_SMT_ISOLATE", "CUSTOM_VCPUPLACE_SMT_PACK"}
    core = inv["CUSTOM_VCPUPLACE_CORE"]
    assert core["total"] == cores and core["max_unit"] == cores, core
    assert core["reserved"] == 0 and core["allocation_ratio"] == 1.0, core
else:
    assert inv == {}, inv
assert traits == want, (traits, want)
print("%s: Nova's loader accepts %d cores, traits %s" % (path, cores, sorted(traits)))
PY
}

printf '[policy]\nsmt=isolate\n' >"$tmp/isolate.conf"
printf '[policy]\nsmt=share\n' >"$tmp/share.conf"
case_ smt 15 2 ISOLATE 'synthetic:pack:2 numa:1 core:8 pu:2' --housekeeping 0 --config "$tmp/isolate.conf"
case_ nosmt 6 1 SPREAD 'synthetic:pack:1 numa:2 core:4 pu:1' --host-cpus 0-5
case_ none 0 2 SHARE 'synthetic:pack:1 core:2 pu:2' --housekeeping 0,2 --config "$tmp/share.conf"

# The loader refuses what the schema forbids: the check above could not pass on a file Nova
# would not read (a lower-case class breaks the CUSTOM_ pattern).
mkdir "$tmp/bad"
sed 's/CUSTOM_VCPUPLACE_CORE/CUSTOM_vcpuplace_core/' "$tmp/smt/vcpuplace.yaml" >"$tmp/bad/x.yaml"
"$py" - "$tmp/bad" <<'PY' || fail "Nova's loader accepted a lower-case resource class"
import sys
from nova import exception
from nova.compute import provider_config
try:
    provider_config.get_provider_configs(sys.argv[1])
except exception.ProviderConfigException as e:
    print("refused as expected:", str(e).splitlines()[0])
    sys.exit(0)
sys.exit(1)
PY
echo "nova-provider: all checks passed"
