# shellcheck shell=bash
# Shell helpers shared by the scripts and the e2e harness. Source it; it defines functions
# only. Messages go to stderr prefixed with $vp_prog (set it before sourcing, or it is the
# caller's file name).

vp_prog=${vp_prog:-$(basename "$0")}

vp_log() {
    echo "$vp_prog: $*" >&2
}

vp_die() {
    echo "$vp_prog: $*" >&2
    exit 1
}

# Milliseconds since the epoch, for the figures the scripts print.
vp_now_ms() {
    echo $(($(date +%s%N) / 1000000))
}

# Field 22 of /proc/PID/stat: the process's start time in clock ticks since boot. With the
# pid it names one process for good, where a pid alone may be reused by a later process.
# The comm field may hold spaces and parentheses, so fields are counted after its last ')'.
vp_pid_starttime() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    # After the comm: state is field 3, starttime field 22, so the 20th here.
    # shellcheck disable=SC2086 # split into fields on purpose
    set -- $stat
    echo "${20}"
}

# True when PID is alive and is the process recorded as "PID STARTTIME" earlier.
vp_pid_same() {
    local pid=$1 start=$2 now
    now=$(vp_pid_starttime "$pid") || return 1
    [ "$now" = "$start" ]
}

# vp_wait_until SECONDS COMMAND...: runs COMMAND every 50 ms until it succeeds (0) or
# SECONDS have passed (1).
vp_wait_until() {
    local limit=$(($(vp_now_ms) + $1 * 1000))
    shift
    until "$@"; do
        [ "$(vp_now_ms)" -lt "$limit" ] || return 1
        sleep 0.05
    done
}

vp_pid_gone() {
    ! kill -0 "$1" 2>/dev/null
}

# vp_stop_pid NAME PID STARTTIME SECONDS: SIGTERM one recorded process and wait for it to
# exit; SIGKILL after SECONDS. Does nothing when the pid now names another process.
vp_stop_pid() {
    local name=$1 pid=$2 start=$3 secs=$4
    if ! vp_pid_same "$pid" "$start"; then
        vp_log "$name pid $pid is gone already"
        return 0
    fi
    kill -TERM "$pid"
    if vp_wait_until "$secs" vp_pid_gone "$pid"; then
        vp_log "$name pid $pid stopped"
        return 0
    fi
    vp_log "$name pid $pid still alive ${secs}s after SIGTERM: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    vp_wait_until 5 vp_pid_gone "$pid"
}
