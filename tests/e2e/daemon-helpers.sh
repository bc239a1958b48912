# Helpers of the test-daemon-*.sh e2e tests, sourced after lib.sh: a private vcpuplaced
# (its own socket, ledger and configuration under the test's temporary directory) and the
# real hook installed in libvirt's qemu.d through a two-line wrapper that points it at
# that configuration (libvirt gives hooks no environment of ours).
#
# The daemon started here is stopped on exit, before lib.sh removes guests and hooks.

vpd_build=${VP_BUILDDIR:-$e2e_top/build}
vpd_daemon=$vpd_build/plugin/daemon/vcpuplaced
vpd_hook=$vpd_build/plugin/hook/vcpuplace-hook
vpd_cli=$vpd_build/plugin/cli/vcpuplace
vpd_sockclient=$vpd_build/tests/integration/vp-sockclient
vpd_conf=$e2e_tmp/vcpuplaced.conf
vpd_sock=$e2e_tmp/vcpuplaced.sock
vpd_log=$e2e_tmp/vcpuplaced.log
vpd_pid=
vpd_libvirt_log=$("$e2e_env" log)

for b in "$vpd_daemon" "$vpd_hook" "$vpd_cli" "$vpd_sockclient"; do
    [ -x "$b" ] || e2e_fail "$b not built (VP_BUILDDIR=$vpd_build)"
done

vpd_exit() {
    local rc=$?
    set +e
    vpd_stop_quiet
    if [ $rc -ne 0 ] && [ -s "$vpd_log" ]; then
        echo "--- vcpuplaced log (last 30 lines)"
        tail -n 30 "$vpd_log"
    fi
    (exit $rc)
    e2e_cleanup
}
trap vpd_exit EXIT

# vpd_config [KEY=VALUE]...: writes the configuration; extra [daemon] keys as given.
# The host's own CPUs, no housekeeping: this machine may have only two. Only this suite's
# guests (vpe2e-d-*) are managed: other tests on the same libvirtd keep libvirt's defaults.
vpd_config() {
    {
        echo "[daemon]"
        echo "mode=enforce"
        echo "adopt_running=yes"
        echo "uri=qemu:///system"
        echo "topology=host"
        echo "housekeeping_cpus=none"
        echo "socket=$vpd_sock"
        echo "state=$e2e_tmp/state/ledger.json"
        echo "domains=vpe2e-d-*"
        local kv
        for kv in "$@"; do echo "$kv"; done
    } >"$vpd_conf"
}

# The start of a daemon test on a small host: $online (the online CPUs, comma separated)
# and $ncpus (at least 2, or the test skips), vcpuplaced on all of them, the hook installed.
vpd_small_host() {
    online=$(e2e_cpus "$(cat /sys/devices/system/cpu/online)")
    ncpus=$(echo "$online" | tr ',' '\n' | grep -c .)
    [ "$ncpus" -ge 2 ] || e2e_skip "needs 2 online CPUs, this host has $ncpus"
    vpd_config "host_cpus=$(cat /sys/devices/system/cpu/online)"
    vpd_start
    vpd_install_hook
}

# vpd_start_confined [WRAPPER...]: vcpuplaced in the background with the systemd unit's
# privileges (its capability bounding set, no new privileges) and nice value, under
# WRAPPER (strace...) when given; vpd_pid is the daemon's own pid, wrapper_pid the
# wrapper's.
vpd_start_confined() {
    local unit=$vpd_build/plugin/daemon/vcpuplaced.service bounding=-all c nice
    [ -f "$unit" ] || e2e_fail "$unit not built"
    for c in $(sed -n 's/^CapabilityBoundingSet=//p' "$unit"); do
        c=${c#CAP_}
        bounding+=",+${c,,}"
    done
    nice=$(sed -n 's/^Nice=//p' "$unit")
    nice -n "${nice:-0}" setpriv --bounding-set="$bounding" --inh-caps=-all --no-new-privs \
        "$@" "$vpd_daemon" --config "$vpd_conf" >>"$vpd_log" 2>&1 &
    vpd_pid=$!
    if [ $# -gt 0 ]; then
        wrapper_pid=$vpd_pid
        vp_wait_until 10 pgrep -P "$wrapper_pid" >/dev/null || e2e_fail "$1 started no vcpuplaced"
        vpd_pid=$(pgrep -P "$wrapper_pid")
    fi
}

vpd_connected() {
    "$vpd_cli" status --config "$vpd_conf" 2>/dev/null | grep -q '(connected)'
}

vpd_start() {
    [ -f "$vpd_conf" ] || vpd_config
    "$vpd_daemon" --config "$vpd_conf" >>"$vpd_log" 2>&1 &
    vpd_pid=$!
    vp_wait_until 20 vpd_connected || e2e_fail "vcpuplaced did not come up connected; see $vpd_log"
}

vpd_stop_quiet() {
    [ -n "$vpd_pid" ] || return 0
    kill -TERM "$vpd_pid" 2>/dev/null || true
    wait "$vpd_pid" 2>/dev/null || true
    vpd_pid=
}

vpd_kill9() {
    kill -KILL "$vpd_pid"
    wait "$vpd_pid" 2>/dev/null || true
    vpd_pid=
}

vpd_install_hook() {
    printf '#!/bin/sh\nVCPUPLACE_CONFIG=%s exec %s "$@"\n' "$vpd_conf" "$vpd_hook" >"$e2e_tmp/hook"
    chmod 0755 "$e2e_tmp/hook"
    e2e_install_hook "$e2e_tmp/hook" vcpuplace >/dev/null
}

vpd_status() {
    "$vpd_cli" status --config "$vpd_conf" "$@"
}

# "STATE, HOW" of a guest as vcpuplaced reports it, or "none".
vpd_state() {
    vpd_status 2>/dev/null | sed -n "s/^$1: //p" | head -n 1 | grep . || echo none
}

# For vp_wait_until, which re-runs a command: a $(...) in its arguments is expanded once.
vpd_gone() { # guest: vcpuplaced no longer records it
    [ "$(vpd_state "$1")" = none ]
}
vpd_count_is() { # prefix count: vcpuplaced records exactly count guests named prefix*
    [ "$(vpd_status | grep -c "^$1")" = "$2" ]
}

# Planned CPU per vCPU, comma separated in vCPU order ("3,1").
vpd_planned() {
    vpd_status "$1" | awk '/^  vCPU/ { on = 1; next } /^  emulator/ { on = 0 } on { print $2 }' |
        paste -sd,
}

# Waits until the guest's state matches the regex.
vpd_wait_state() { # guest regex
    local i
    for ((i = 0; i < 100; i++)); do
        vpd_state "$1" | grep -qE -- "$2" && return 0
        sleep 0.1
    done
    e2e_fail "$1: state '$(vpd_state "$1")' never matched /$2/"
}

# Checks one running guest: libvirt (virsh vcpupin) and the kernel (/proc, by the
# vCPU thread's name) both show the plan vcpuplaced reports. Prints the planned CPUs.
vpd_check_applied() { # guest
    local guest=$1 pid planned vcpu tid proc pin cpu
    vpd_wait_state "$guest" '^applied'
    planned=$(vpd_planned "$guest")
    pid=$(e2e_qemu_pid "$guest")
    local reported
    reported=$(vpd_status "$guest" | awk '/^  vCPU/ { on = 1; next } /^  emulator/ { on = 0 } on { print $1, $6 }')
    [ "$reported" = "$(e2e_vcpu_threads "$pid")" ] ||
        e2e_fail "$guest: vCPU threads reported by vcpuplaced ($reported) are not QEMU's ($(e2e_vcpu_threads "$pid"))"
    while read -r vcpu tid; do
        cpu=$(echo "$planned" | cut -d, -f$((vcpu + 1)))
        pin=$(virsh -q vcpupin "$guest" "$vcpu" | awk '{print $2}')
        proc=$(e2e_allowed_list "$pid" "$tid")
        [ "$pin" = "$cpu" ] || e2e_fail "$guest vCPU $vcpu: virsh vcpupin says $pin, plan $cpu"
        [ "$proc" = "$cpu" ] ||
            e2e_fail "$guest vCPU $vcpu (TID $tid): /proc says $proc, plan $cpu"
    done < <(e2e_vcpu_threads "$pid")
    e2e_pass "$guest: vcpupin and /proc show the plan ($planned), thread ids as reported"
    vpd_planned_cpus=$planned
}

# No CPU is planned for two guests' vCPUs.
vpd_check_disjoint() {
    local all
    all=$(vpd_status | awk '/^  vCPU/ { on = 1; next } /^  emulator/ { on = 0 } on { print $2 }' | sort)
    [ "$(echo "$all" | sort -u | grep -c .)" = "$(echo "$all" | grep -c .)" ] ||
        e2e_fail "a CPU is planned twice: $(echo "$all" | paste -sd' ')"
    e2e_pass "no CPU planned for two vCPUs ($(echo "$all" | paste -sd' '))"
}

# Lines libvirtd logged since a mark (line count taken by vpd_log_mark).
vpd_log_mark() {
    wc -l <"$vpd_libvirt_log"
}
vpd_log_since() { # mark
    tail -n +"$(($1 + 1))" "$vpd_libvirt_log"
}
