#!/bin/busybox sh
# shellcheck shell=dash
# /init of the fullstack tier's initramfs: makes this machine's root, shared read-only over
# virtio-9p, the guest's root, with what must be the guest's own in memory (overlays on
# /etc and /var, empty /run and /tmp) and the work directory (vp.out) shared read-write,
# then hands over to tests/fullstack/guest.sh there. Reports as the guest tier does
# (VPGUEST lines on the serial console).
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

top=
out=
read -r cmdline </proc/cmdline
for arg in $cmdline; do
    case $arg in
    vp.top=*) top=${arg#vp.top=} ;;
    vp.out=*) out=${arg#vp.out=} ;;
    esac
done

fail() {
    echo "VPGUEST fail init.$1 $2"
    echo "VPGUEST done"
    poweroff -f
}

mkdir -p /newroot /mem
# msize: 9p's default (8 KiB per message) makes loading libvirtd's libraries take minutes.
mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=262144,cache=loose hostroot /newroot ||
    fail mount-root "virtio-9p share 'hostroot' did not mount"
mount -t tmpfs -o mode=0755 tmpfs /mem
for d in etc var; do
    mkdir -p "/mem/$d" "/mem/$d.work"
    mount -t overlay overlay -o "lowerdir=/newroot/$d,upperdir=/mem/$d,workdir=/mem/$d.work" \
        "/newroot/$d" || fail overlay "overlay on /$d did not mount"
done
for d in run tmp var/tmp var/log var/lib/libvirt var/cache/libvirt; do
    mkdir -p "/newroot/$d" 2>/dev/null
    mount -t tmpfs -o mode=0755 tmpfs "/newroot/$d" || fail tmpfs "tmpfs on /$d did not mount"
done
chmod 1777 /newroot/tmp /newroot/var/tmp
# Under a tmpfs above (/var/tmp, /tmp) the work directory exists only once made.
mkdir -p "/newroot$out" 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 out "/newroot$out" ||
    fail mount-out "virtio-9p share 'out' did not mount on $out (tags: $(cat /sys/bus/virtio/drivers/9pnet_virtio/*/mount_tag 2>&1 | tr '\0\n' '  '); $(ls -ld "/newroot$out" 2>&1))"
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mount --move /dev /newroot/dev
exec switch_root /newroot /bin/bash "$top/tests/fullstack/guest.sh"
