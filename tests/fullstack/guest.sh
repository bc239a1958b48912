#!/bin/bash
# Runs inside the fullstack guest (tests/fullstack/init.sh hands over to it), as PID 1 on
# this machine's root: mounts what the daemons need, starts the real virtlogd and libvirtd
# with scripts/libvirt-env, runs each scenario (vp.scenarios, comma separated) and turns
# its lines into the guest tier's result lines (scripts/guest-run reads them):
#   ok N - TEXT     -> VPGUEST ok SCENARIO TEXT
#   FAIL: TEXT      -> VPGUEST fail SCENARIO TEXT
#   SKIP: TEXT      -> VPGUEST skip SCENARIO TEXT (exit 77 counts as a pass, reason shown)
#   figure: TEXT    -> VPGUEST figure SCENARIO TEXT
set -uo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8

top= build= out= scenarios=
read -r cmdline </proc/cmdline
for arg in $cmdline; do
    case $arg in
    vp.top=*) top=${arg#vp.top=} ;;
    vp.build=*) build=${arg#vp.build=} ;;
    vp.out=*) out=${arg#vp.out=} ;;
    vp.scenarios=*) scenarios=${arg#vp.scenarios=} ;;
    esac
done
export VP_TOPDIR=$top VP_BUILDDIR=$build
# Nested TCG: libvirtd's first capability probe is slow (see tests/fullstack/README.md).
export VP_LIBVIRTD_TIMEOUT=900

finish() {
    echo "VPGUEST done uptime=$(cut -d' ' -f1 /proc/uptime)"
    sync
    /bin/busybox poweroff -f
}

mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts -o mode=0620,ptmxmode=0666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
ln -sf /proc/self/fd /dev/fd
hostname vpfullstack
# The guest starts with none of this machine's libvirt guests, networks or pools: libvirt's
# own state is in the overlay on /etc (the rest is on the tmpfs mounts).
rm -rf /etc/libvirt/qemu/*.xml /etc/libvirt/qemu/autostart /etc/libvirt/qemu/networks \
    /etc/libvirt/storage /etc/libvirt/hooks
# The guest kernel has no seccomp and the guest no private /dev to build per QEMU.
cat >/etc/libvirt/qemu.conf <<'CONF'
# Written by tests/fullstack/guest.sh.
seccomp_sandbox = 0
namespaces = [ ]
CONF

echo "VPGUEST boot $(uname -r) cpus=$(cat /sys/devices/system/cpu/online) nodes=$(cat /sys/devices/system/node/online) siblings0=$(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list) uptime=$(cut -d' ' -f1 /proc/uptime)"

mkdir -p /var/cache/libvirt/qemu/capabilities
if compgen -G "$out/qemucaps.in/*.xml" >/dev/null; then
    cp "$out"/qemucaps.in/*.xml /var/cache/libvirt/qemu/capabilities/
fi
t0=$(date +%s%N)
if ! "$top/scripts/libvirt-env" start >/tmp/libvirt-env.log 2>&1; then
    sed 's/^/VPGUEST fail fullstack.libvirtd /' /tmp/libvirt-env.log
    cp /run/vcpuplace-libvirt-env/*.log "$out/" 2>/dev/null
    finish
fi
echo "VPGUEST figure fullstack.libvirtd-start $((($(date +%s%N) - t0) / 1000000)) ms (cached capabilities: $(compgen -G "$out/qemucaps.in/*.xml" >/dev/null && echo yes || echo no))"
cp /var/cache/libvirt/qemu/capabilities/*.xml "$out/qemucaps.out/" 2>/dev/null

IFS=, read -r -a list <<<"$scenarios"
for s in "${list[@]}"; do
    echo "VPGUEST begin $s"
    t0=$(date +%s%N)
    bash "$top/tests/fullstack/$s.sh" 2>&1 | while IFS= read -r line; do
        case $line in
        ok\ *\ -\ *) echo "VPGUEST ok $s ${line#ok * - }" ;;
        FAIL:*) echo "VPGUEST fail $s ${line#FAIL: }" ;;
        SKIP:*) echo "VPGUEST skip $s ${line#SKIP: }" ;;
        figure:*) echo "VPGUEST figure $s ${line#figure: }" ;;
        *) echo "  $line" ;;
        esac
    done
    rc=${PIPESTATUS[0]}
    echo "VPGUEST figure $s.wall $((($(date +%s%N) - t0) / 1000000)) ms"
    [ "$rc" -ne 77 ] || rc=0
    echo "VPGUEST exit $s $rc"
done
cp /run/vcpuplace-libvirt-env/*.log "$out/" 2>/dev/null
"$top/scripts/libvirt-env" stop >/dev/null 2>&1
finish
