#!/bin/bash
# Chaos under churn, with real libvirtd and QEMU TCG guests, the hook installed and
# vcpuplaced running with the systemd unit's privileges (its CapabilityBoundingSet and
# NoNewPrivileges, through setpriv). Each round, at once:
#   - up to 3 stopped guests are started with `virsh start` in parallel, and up to 2
#     running ones destroyed;
#   - vcpuplaced is killed with SIGKILL at a random moment (half the rounds) and started
#     again after a random pause, while the starts and stops are under way;
#   - a running guest's QEMU is killed behind libvirt's back (a quarter of the rounds);
#   - libvirtd is restarted (one round in eight; only a libvirtd that scripts/libvirt-env
#     started, and only while no other test's guests or hooks are about);
#   - a second vCPU is hot-plugged (`virsh setvcpus G 2 --live`) into a running guest that
#     starts with one of two (half the rounds): on a full host it finds no CPU of its own
#     and must float over its domain's CPUs, never a stranger's.
# Then, once the daemon has had up to 60 s to settle, the invariants are checked against
# libvirt's and /proc's truth (tests/e2e/chaos-invariants.py): no CPU held by two domains that
# did not both consent to time-sharing (smt=share, unmet=degrade), neither in vcpuplaced's
# plans nor in the vCPU threads' Cpus_allowed_list; no record of a domain libvirt does not
# run; every running guest pinned as planned in /proc (vCPUs and emulator), or reported
# unplaced or failed with a reason.
#
# Usage: tests/e2e/chaos.sh [ROUNDS [SEED]]   (default 3 rounds, seed from $RANDOM)
# Prints every violation, a summary, and writes it as JSON to $VP_CHAOS_OUT when set.
# Exits 1 when any round ended with a violation. Guests: vpe2e-x-*; its hook:
# qemu.d/vcpuplace-chaos (other tests' daemons and hooks leave these guests alone).
. "$(dirname "$0")/lib.sh"
e2e_require_env
. "$(dirname "$0")/daemon-helpers.sh"

rounds=${1:-3}
seed=${2:-$((RANDOM + 1))}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || e2e_fail "ROUNDS '$rounds' is not a positive number"
[[ $seed =~ ^[0-9]+$ ]] || e2e_fail "SEED '$seed' is not a number"
# Decisions from the C library's LCG, high bits only: bash's $RANDOM taken at a fixed
# stride repeats its low bits (seed 7: no SIGKILL in the first nine rounds).
rng=$seed
rnd() { # N: R = 0..N-1
    rng=$(((rng * 1103515245 + 12345) & 0x7fffffff))
    R=$(((rng >> 8) % $1))
}
settle_s=${VP_CHAOS_SETTLE:-60}
check=$(dirname "$0")/chaos-invariants.py

# The daemon's configuration: this script's guests only, every online CPU, no
# housekeeping (this host may have two CPUs).
cat >"$vpd_conf" <<EOF
[daemon]
mode=enforce
adopt_running=yes
uri=qemu:///system
topology=host
host_cpus=$(cat /sys/devices/system/cpu/online)
housekeeping_cpus=none
socket=$vpd_sock
state=$e2e_tmp/state/ledger.json
domains=vpe2e-x-*
EOF

chaos_connected() {
    kill -0 "$vpd_pid" 2>/dev/null && vpd_connected
}

printf '#!/bin/sh\nVCPUPLACE_CONFIG=%s exec %s "$@"\n' "$vpd_conf" "$vpd_hook" >"$e2e_tmp/hook"
e2e_install_hook "$e2e_tmp/hook" vcpuplace-chaos >/dev/null

# Eight one- or two-vCPU guests: six may time-share CPUs, two want CPUs of their own
# (refused, or unplaced with a reason, when the host is full).
guests=()
policies=(
    "smt=share unmet=degrade" "smt=share unmet=degrade" "smt=share unmet=degrade"
    "smt=share unmet=degrade" "smt=spread unmet=refuse" "smt=isolate unmet=degrade"
    "smt=share unmet=degrade vcpus=2" "smt=share unmet=degrade group=g1"
    "smt=isolate unmet=degrade hotplug" "smt=spread unmet=degrade hotplug"
)
hotpluggable=()
for i in "${!policies[@]}"; do
    g=vpe2e-x-$i
    args=()
    for kv in ${policies[$i]}; do
        case $kv in
        vcpus=*) args+=(--vcpus "${kv#vcpus=}") ;;
        hotplug) args+=(--vcpus 2) ;;
        *) args+=(--policy "$kv") ;;
        esac
    done
    e2e_define "$g" "${args[@]}"
    guests+=("$g")
    if [[ ${policies[$i]} == *hotplug* ]]; then
        virsh -q dumpxml "$g" | sed -e "s|<vcpu placement='static'>2</vcpu>|<vcpu placement='static' current='1'>2</vcpu>|" \
            >"$e2e_tmp/$g.xml"
        virsh -q define "$e2e_tmp/$g.xml" >/dev/null
        hotpluggable+=("$g")
    fi
done

vpd_start_confined
vp_wait_until 20 chaos_connected || e2e_fail "vcpuplaced did not come up connected; see $vpd_log"

n_start=0 n_started=0 n_refused=0 n_startfail=0 n_stop=0 n_kill9=0 n_qemukill=0
n_libvirtd=0 n_libvirtd_skipped=0 n_violations=0 bad_rounds=0 n_hotplug=0
settle_ms_max=0

running() {
    virsh -q list --name 2>/dev/null | grep '^vpe2e-x-' || true
}
stopped() {
    local g
    for g in "${guests[@]}"; do
        grep -qx "$g" <<<"$1" || echo "$g"
    done
}
pick() { # count seed, from lines on stdin: up to count at random (runs in a subshell)
    local -a all
    mapfile -t all
    local n=$1 i j t
    rng=$2
    for ((i = ${#all[@]} - 1; i > 0; i--)); do
        rnd $((i + 1))
        j=$R
        t=${all[i]} all[i]=${all[j]} all[j]=$t
    done
    for ((i = 0; i < n && i < ${#all[@]}; i++)); do echo "${all[i]}"; done
}
# Another test's guests or hooks on the shared libvirtd: not ours to restart then.
libvirtd_ours_now() {
    e2e_env_owns_libvirtd || return 1
    [ -z "$(virsh -q list --name 2>/dev/null | grep -v '^vpe2e-x-' | grep .)" ] || return 1
    [ -z "$(find /etc/libvirt/hooks/qemu.d -mindepth 1 -maxdepth 1 ! -name vcpuplace-chaos 2>/dev/null)" ]
}
sleep_ms() {
    sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"
}

for ((round = 1; round <= rounds; round++)); do
    now=$(running)
    rnd 3 && nstart=$((1 + R))
    rnd 3 && nstop=$R
    rnd 2 && do_kill9=$R
    rnd 1500 && kill9_at=$R
    rnd 2000 && down_ms=$R
    rnd 4 && do_qemu=$((R == 0))
    rnd 8 && do_libvirtd=$((R == 0))
    rnd 1000000 && seed1=$((R + 1))
    rnd 1000000 && seed2=$((R + 1))
    rnd 1000000 && seed3=$((R + 1))
    rnd 2 && do_hotplug=$R
    rnd 1000000 && seed4=$((R + 1))
    starts=$(stopped "$now" | pick "$nstart" "$seed1")
    stops=$(grep . <<<"$now" | pick "$nstop" "$seed2" || true)
    actions="start [$(paste -sd" " <<<"$starts")] stop [$(paste -sd" " <<<"$stops")]"
    jobs_dir=$e2e_tmp/round$round
    mkdir -p "$jobs_dir"
    pids=()
    for g in $starts; do
        (virsh -q start "$g" >"$jobs_dir/$g.start" 2>&1; echo $? >"$jobs_dir/$g.rc") &
        pids+=($!)
        n_start=$((n_start + 1))
    done
    for g in $stops; do
        virsh -q destroy "$g" >/dev/null 2>&1 &
        pids+=($!)
        n_stop=$((n_stop + 1))
    done
    if [ "$do_qemu" = 1 ]; then
        victim=$(grep . <<<"$now" | grep -vxF -f <(echo "$stops") | pick 1 "$seed3" || true)
        if [ -n "$victim" ] && qpid=$(cat "/run/libvirt/qemu/$victim.pid" 2>/dev/null); then
            kill -KILL "$qpid" 2>/dev/null && n_qemukill=$((n_qemukill + 1))
            actions+=" qemu-kill [$victim]"
        fi
    fi
    if [ "$do_hotplug" = 1 ]; then
        grown=$(grep -xF -f <(printf '%s\n' "${hotpluggable[@]}") <<<"$now" |
            grep -vxF -f <(echo "$stops") | pick 1 "$seed4" || true)
        if [ -n "$grown" ] && virsh -q setvcpus "$grown" 2 --live >/dev/null 2>&1; then
            n_hotplug=$((n_hotplug + 1))
            actions+=" hotplug [$grown]"
        fi
    fi
    if [ "$do_kill9" = 1 ]; then
        sleep_ms "$kill9_at"
        kill -0 "$vpd_pid" 2>/dev/null || e2e_fail "round $round: vcpuplaced died before its SIGKILL; see $vpd_log"
        vpd_kill9
        n_kill9=$((n_kill9 + 1))
        actions+=" vcpuplaced SIGKILL at ${kill9_at} ms, down ${down_ms} ms"
        sleep_ms "$down_ms"
        vpd_start_confined
    fi
    if [ "$do_libvirtd" = 1 ]; then
        if libvirtd_ours_now; then
            "$e2e_env" restart-libvirtd >/dev/null 2>&1 || e2e_fail "libvirtd did not come back"
            n_libvirtd=$((n_libvirtd + 1))
            actions+=" libvirtd restarted"
        else
            n_libvirtd_skipped=$((n_libvirtd_skipped + 1))
        fi
    fi
    wait "${pids[@]}" 2>/dev/null || true
    for g in $starts; do
        rc=$(cat "$jobs_dir/$g.rc" 2>/dev/null || echo 1)
        if [ "$rc" = 0 ]; then
            n_started=$((n_started + 1))
        elif grep -q 'vcpuplace: refusing to start' "$jobs_dir/$g.start"; then
            n_refused=$((n_refused + 1))
        else
            n_startfail=$((n_startfail + 1))
            actions+=" start-failed [$g: $(tail -n 1 "$jobs_dir/$g.start" | tail -c 160)]"
        fi
    done

    # Settled: the invariants hold, or the time is up and what still fails is reported.
    t0=$(vp_now_ms)
    until out=$(python3 "$check" --cli "$vpd_cli" --config "$vpd_conf" --prefix vpe2e-x- 2>&1); do
        kill -0 "$vpd_pid" 2>/dev/null || e2e_fail "round $round: vcpuplaced died; see $vpd_log"
        [ $(($(vp_now_ms) - t0)) -lt $((settle_s * 1000)) ] || break
        sleep 0.5
    done
    settled=$(($(vp_now_ms) - t0))
    [ "$settled" -le "$settle_ms_max" ] || settle_ms_max=$settled
    if [ -n "$out" ]; then
        n=$(grep -c . <<<"$out")
        n_violations=$((n_violations + n))
        bad_rounds=$((bad_rounds + 1))
        echo "round $round: $actions"
        sed "s/^/  VIOLATION: /" <<<"$out"
    else
        echo "round $round: $actions; running [$(running | paste -sd" ")]; invariants hold after ${settled} ms"
    fi
done

summary="rounds=$rounds seed=$seed bad_rounds=$bad_rounds violations=$n_violations"
summary+=" starts=$n_start started=$n_started refused=$n_refused start_failed=$n_startfail"
summary+=" destroys=$n_stop vcpuplaced_sigkill=$n_kill9 qemu_killed=$n_qemukill"
summary+=" libvirtd_restarts=$n_libvirtd libvirtd_restarts_skipped=$n_libvirtd_skipped"
summary+=" hotplugs=$n_hotplug longest_settle_ms=$settle_ms_max"
echo "chaos: $summary"
if [ -n "${VP_CHAOS_OUT:-}" ]; then
    python3 -c 'import json,sys; print(json.dumps({k: int(v) for k, v in (a.split("=") for a in sys.argv[1:])}, indent=1))' \
        $summary >"$VP_CHAOS_OUT"
fi
[ "$bad_rounds" = 0 ] || e2e_fail "$bad_rounds of $rounds rounds ended with invariant violations"
e2e_pass "$rounds rounds of churn, no invariant violated"
