#!/bin/busybox sh
# shellcheck shell=dash
# /init of the qemu tier's guest: runs the patched QEMU (TCG inside the TCG guest) on the
# guest tier's SCHED_CORE kernel and reports in the lines tests/qemu/guest-coresched reads:
#   VPGUEST ok|fail CHECK ...   VPGUEST exit NAME RC   VPGUEST done
# vp.mode=smt: core-sched cookies on vCPU threads (qemu-guest-check);
# vp.mode=nosmt: the kernel's ENODEV becomes QEMU's "no SMT" error.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp

mode=
read -r cmdline </proc/cmdline
for arg in $cmdline; do
    case $arg in
    vp.mode=*) mode=${arg#vp.mode=} ;;
    esac
done

echo "VPGUEST boot $(uname -r) cpus=$(cat /sys/devices/system/cpu/online) mode=$mode"
# Firmware sits in /bin beside QEMU (-L /bin); -S: the guest never runs, only its threads.
qemu="qemu-system-x86_64 -L /bin -S -nodefaults -display none -machine pc -accel tcg -m 32
      -name g,debug-threads=on -cpu qemu64 -smp 1,maxcpus=2"
case $mode in
smt)
    # shellcheck disable=SC2086
    $qemu -object thread-context,id=tc0,cpu-affinity=0,core-sched=on \
        -object thread-context,id=tc1,cpu-affinity=1,core-sched-from=tc0 \
        -global qemu64-x86_64-cpu.thread-context=tc0 \
        -device qemu64-x86_64-cpu,socket-id=0,core-id=1,thread-id=0,thread-context=tc1 \
        2>/tmp/qemu.err &
    pid=$!
    qemu-guest-check "$pid"
    echo "VPGUEST exit qemu-guest-check $?"
    kill "$pid"
    wait "$pid"
    sed 's/^/VPGUEST log qemu: /' /tmp/qemu.err
    ;;
nosmt)
    # shellcheck disable=SC2086
    $qemu -object thread-context,id=tc0,core-sched=on 2>/tmp/qemu.err
    rc=$?
    if [ "$rc" -ne 0 ] && grep -q "Core scheduling not available: the host has no SMT" /tmp/qemu.err; then
        echo "VPGUEST ok nosmt.error $(cat /tmp/qemu.err)"
    else
        echo "VPGUEST fail nosmt.error exit $rc: $(cat /tmp/qemu.err)"
    fi
    ;;
*)
    echo "VPGUEST fail init.mode unknown vp.mode '$mode'"
    ;;
esac
echo "VPGUEST done"
poweroff -f
reboot -f
