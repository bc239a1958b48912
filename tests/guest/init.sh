#!/bin/busybox sh
# shellcheck shell=dash
# /init of the guest tier's initramfs: runs the project's programs against the guest
# kernel and reports over the serial console in lines scripts/guest-run reads:
#   VPGUEST boot ...        kernel and command line
#   VPGUEST exit PROG RC    one per program; RC must be 0
#   VPGUEST done            all programs ran; its absence means a crash or a hang
# The kernel command line carries vp.mode (smt | nosmt | cost), vp.cores and vp.threads;
# with cost, vp.cost=ARG once per argument of guest-costload (issue 16's benchmark).
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
export HOME=/tmp TMPDIR=/tmp

mode=
cores=
threads=
costargs=
read -r cmdline </proc/cmdline
for arg in $cmdline; do
    case $arg in
    vp.mode=*) mode=${arg#vp.mode=} ;;
    vp.cores=*) cores=${arg#vp.cores=} ;;
    vp.threads=*) threads=${arg#vp.threads=} ;;
    vp.cost=*) costargs="$costargs ${arg#vp.cost=}" ;;
    esac
done

run() {
    name=$1
    shift
    echo "VPGUEST begin $name"
    "$@"
    echo "VPGUEST exit $name $?"
}

echo "VPGUEST boot $(uname -r) cpus=$(cat /sys/devices/system/cpu/online) mode=$mode uptime=$(cut -d' ' -f1 /proc/uptime)"
case $mode in
smt)
    run topology guest-topology "$cores" "$threads"
    # First: it shows cookies being set before the random pool is ready, and readies it.
    run cookies guest-cookies
    run daemoncookies guest-daemoncookies
    run test_coresched test_coresched
    run forceidle guest-forceidle 2
    # Last: it switches SMT off and on again.
    run cases guest-cases
    ;;
nosmt)
    run topology guest-topology "$cores" "$threads"
    run cookies guest-cookies nosmt
    run daemoncookies guest-daemoncookies nosmt
    run test_coresched test_coresched
    ;;
cost)
    # shellcheck disable=SC2086 # one word per argument, none with spaces or globs
    run costload guest-costload $costargs
    ;;
*)
    echo "VPGUEST fail init.mode unknown vp.mode '$mode'"
    ;;
esac
echo "VPGUEST done uptime=$(cut -d' ' -f1 /proc/uptime)"
poweroff -f
# Without a working ACPI power-off, a reboot ends QEMU (-no-reboot).
reboot -f
