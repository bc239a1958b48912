#!/bin/bash
# Benchmark, not a test: what the vcpuplace hook adds to `virsh start`. A one-vCPU TCG
# guest is started and destroyed ROUNDS times (default 20) in each of three set-ups, in
# turn by blocks of five: no hook; /bin/true as the hook (what libvirt's hook machinery costs by itself:
# libvirt runs a hook three times per start); the vcpuplace hook with vcpuplaced
# running. Besides the whole `virsh start` (noisy on a busy host), the time libvirtd spends
# in the hook calls is read from its debug log (to the millisecond: noisy too on a loaded
# host), and the hook is timed alone, its three runs of a start interleaved with /bin/true
# (below). Prints the figures and writes JSON to $VP_BENCH_OUT (default:
# hook-latency.json here).
#
# Needs root and libvirtd (scripts/libvirt-env start). The hook binary is installed as it
# is when it can find this run's daemon without a configuration file, i.e. when nothing
# else uses the default socket and no configuration exists at the default path; otherwise
# through the e2e tests' two-line sh wrapper (one more exec per call, said in the output).
# VP_BENCH_HOOK names another hook binary to measure against this build's daemon (an
# older build's, for a before/after comparison); the protocol is the same.
. "$(dirname "$0")/../e2e/lib.sh"
e2e_require_env
. "$(dirname "$0")/../e2e/daemon-helpers.sh"
vpd_hook=${VP_BENCH_HOOK:-$vpd_hook}

rounds=${ROUNDS:-20}
out=${VP_BENCH_OUT:-$PWD/hook-latency.json}
guest=vpe2e-d-bench
hookpath=/etc/libvirt/hooks/qemu.d/vcpuplace

default_sock=$("$vpd_daemon" --help | sed -n 's/.*socket (default \(.*\))$/\1/p')
default_conf=$("$vpd_daemon" --help | sed -n 's/.*configuration file (default \(.*\))$/\1/p')
if [ -n "$default_sock" ] && [ ! -e "$default_conf" ] && [ ! -S "$default_sock" ]; then
    vpd_sock=$default_sock
    wrapper=no
else
    wrapper=yes
fi

median() {
    sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Milliseconds libvirtd spent in hook calls for the guest since a log line mark: from its
# debug log (scripts/libvirt-env logs util.command), "About to run HOOK GUEST ..." to the
# same thread's next "Result status". Far less noisy than timing the whole start.
hook_ms_since() { # mark
    vpd_log_since "$1" | awk -v hook="$hookpath $guest " '
        function ms(ts) { split(ts, t, ":"); return (t[1] * 3600 + t[2] * 60 + t[3]) * 1000 }
        index($0, "About to run") && index($0, hook) { start[$3] = ms(substr($2, 1, 12)) }
        index($0, "Result status") && ($3 in start) { sum += ms(substr($2, 1, 12)) - start[$3]; delete start[$3] }
        END { printf "%.0f\n", sum }'
}

# Prints "START_US HOOK_MS" of one start (and destroys the guest again).
start_us() {
    local t0 mark
    mark=$(vpd_log_mark)
    t0=$(date +%s%N)
    virsh -q start $guest >/dev/null
    echo "$((($(date +%s%N) - t0) / 1000)) $(hook_ms_since "$mark")"
    virsh -q destroy $guest >/dev/null
}

use_hook() { # none | true | vcpuplace
    "$e2e_env" uninstall-hook vcpuplace >/dev/null
    case $1 in
    true) "$e2e_env" install-hook /bin/true vcpuplace >/dev/null ;;
    vcpuplace)
        if [ $wrapper = no ]; then
            "$e2e_env" install-hook "$vpd_hook" vcpuplace >/dev/null
        else
            vpd_install_hook
        fi
        ;;
    esac
}

vpd_config "host_cpus=$(cat /sys/devices/system/cpu/online)"
vpd_start
e2e_define $guest
e2e_hooks+=(vcpuplace)

declare -A us hookms
for setup in none true vcpuplace; do
    use_hook $setup
    start_us >/dev/null # warm-up: QEMU's and libvirt's caches
done
# Alternating in blocks of 5: each hook change costs a SIGHUP and a wait for libvirtd.
for ((i = 0; i < rounds; i += 5)); do
    for setup in none true vcpuplace; do
        use_hook $setup
        for ((j = i; j < rounds && j < i + 5; j++)); do
            start_us >"$e2e_tmp/one"
            read -r u h <"$e2e_tmp/one"
            us[$setup]+="$u "
            hookms[$setup]+="$h "
        done
    done
done

use_hook vcpuplace
# The hook alone, as libvirt runs it at a start, interleaved with /bin/true so that the
# host's load weighs on all alike, timed with bash's $EPOCHREALTIME (no fork of its own, as
# $(date) would add): prepare begin (the reserve: XML to the daemon and its answer), start
# begin (not handled: exits before reading anything), and release end standing in for
# started begin (each a name-only round trip that the daemon answers at once; started
# would have it pin a domain that is not running). Added per start: the three minus three
# runs of /bin/true.
# stdin from a file, not a pipe: the hook does not read it at release, and exits before
# an echo into a pipe would have written (SIGPIPE, which pipefail made fatal).
virsh dumpxml $guest >"$e2e_tmp/domain.xml"
alone="" a_true="" a_start="" a_release="" a_added=""
for ((i = 0; i < 100; i++)); do
    t0=${EPOCHREALTIME/./}
    /bin/true $guest prepare begin - <"$e2e_tmp/domain.xml" >/dev/null
    t1=${EPOCHREALTIME/./}
    "$hookpath" $guest prepare begin - <"$e2e_tmp/domain.xml" >/dev/null
    t2=${EPOCHREALTIME/./}
    "$hookpath" $guest start begin - <"$e2e_tmp/domain.xml" >/dev/null
    t3=${EPOCHREALTIME/./}
    "$hookpath" $guest release end - <"$e2e_tmp/domain.xml" >/dev/null
    t4=${EPOCHREALTIME/./}
    a_true+="$((t1 - t0)) "
    alone+="$((t2 - t1)) "
    a_start+="$((t3 - t2)) "
    a_release+="$((t4 - t3)) "
    a_added+="$((t4 - t1 - 3 * (t1 - t0))) "
done

med() { echo $1 | tr ' ' '\n' | grep . | median; }
m_none=$(med "${us[none]}")
m_true=$(med "${us[true]}")
m_vp=$(med "${us[vcpuplace]}")
m_alone=$(med "$alone")
m_atrue=$(med "$a_true")
m_astart=$(med "$a_start")
m_arelease=$(med "$a_release")
m_aadded=$(med "$a_added")
h_true=$(med "${hookms[true]}")
h_vp=$(med "${hookms[vcpuplace]}")
ms() { awk -v v="$1" 'BEGIN { printf "%.1f", v / 1000 }'; }
diffms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (a - b) / 1000 }'; }
# Medians of an even count end in .5: bash arithmetic cannot take them.
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); hook through the sh wrapper: $wrapper"
echo "virsh start, median of $rounds: $(ms "$m_none") ms without a hook," \
    "$(ms "$m_true") ms with /bin/true, $(ms "$m_vp") ms with vcpuplace"
echo "added by vcpuplace: $(diffms "$m_vp" "$m_none") ms over no hook," \
    "$(diffms "$m_vp" "$m_true") ms over libvirt's own hook cost"
echo "inside libvirtd, the three hook calls of a start (median): $h_true ms for /bin/true," \
    "$h_vp ms for vcpuplace: $(minus "$h_vp" "$h_true") ms added by vcpuplace's hook and daemon"
echo "hook alone, median of 100 interleaved: /bin/true $(ms "$m_atrue") ms, prepare (reserve)" \
    "$(ms "$m_alone") ms, start (ignored) $(ms "$m_astart") ms, release $(ms "$m_arelease") ms;" \
    "added per start (prepare + start + release - 3 x /bin/true): $(ms "$m_aadded") ms"
{
    printf '{"rounds": %d, "wrapper": "%s", "loadavg": "%s", "hook": "%s",\n' "$rounds" \
        "$wrapper" "$(cut -d' ' -f1-3 /proc/loadavg)" "$vpd_hook"
    for setup in none true vcpuplace; do
        printf ' "start_us_%s": [%s],\n' $setup "$(echo ${us[$setup]} | tr ' ' ',')"
    done
    printf ' "median_start_us": {"none": %s, "true": %s, "vcpuplace": %s},\n' \
        "$m_none" "$m_true" "$m_vp"
    printf ' "median_added_ms_over_none": %s, "median_added_ms_over_true": %s,\n' \
        "$(diffms "$m_vp" "$m_none")" "$(diffms "$m_vp" "$m_true")"
    printf ' "hook_calls_ms_true": [%s], "hook_calls_ms_vcpuplace": [%s],\n' \
        "$(echo ${hookms[true]} | tr ' ' ',')" "$(echo ${hookms[vcpuplace]} | tr ' ' ',')"
    printf ' "median_hook_calls_ms": {"true": %s, "vcpuplace": %s},\n' "$h_true" "$h_vp"
    printf ' "median_hook_added_ms": %s,\n' "$(minus "$h_vp" "$h_true")"
    printf ' "hook_prepare_alone_median_us": %s, "alone_true_median_us": %s,\n' "$m_alone" "$m_atrue"
    printf ' "alone_start_ignored_median_us": %s, "alone_release_median_us": %s,\n' \
        "$m_astart" "$m_arelease"
    printf ' "alone_added_per_start_median_us": %s}\n' "$m_aadded"
} >"$out"
echo "written: $out"
