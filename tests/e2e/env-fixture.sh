#!/bin/bash
# ctest fixture e2e_libvirt: "start" before the e2e tests, "stop" after them. Stops at the
# end only a libvirtd that its own "start" started: one that answered before the run (a
# developer's, the demo's) is left alone.
# Environment: VP_E2E_STATE, a directory of this build for the marker.
set -euo pipefail
top=${VP_TOPDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
env=$top/scripts/libvirt-env
state=${VP_E2E_STATE:?VP_E2E_STATE must name a directory}
marker=$state/libvirt-started-by-fixture

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (libvirtd for qemu:///system)"; exit 77; }
mkdir -p "$state"
case ${1:-} in
start)
    if "$env" status >/dev/null; then
        echo "qemu:///system answers already: used as it is, left running afterwards"
        rm -f "$marker"
        exit 0
    fi
    t0=$(date +%s%N)
    "$env" start
    touch "$marker"
    echo "libvirt environment up in $((($(date +%s%N) - t0) / 1000000)) ms"
    ;;
stop)
    if [ -e "$marker" ]; then
        rm -f "$marker"
        "$env" stop
    else
        echo "libvirtd not started by this run: left running"
    fi
    ;;
*)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
