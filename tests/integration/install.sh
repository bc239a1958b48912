#!/bin/bash
# `cmake --install` into a scratch DESTDIR: binaries, the hook in libvirt's qemu.d, the
# configuration (never over an existing one) and its example, the systemd unit, the
# schema. The installed daemon accepts the installed configuration, and the installed
# hook tolerates being run by hand.
set -euo pipefail
build=${VP_BUILDDIR:?}
dest=$(mktemp -d /tmp/vp-install.XXXXXX)
trap 'rm -rf "$dest"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

DESTDIR=$dest cmake --install "$build" >"$dest.log" 2>&1 || { cat "$dest.log"; fail "cmake --install"; }
rm -f "$dest.log"
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
hookdir=$(sed -n 's/^VP_LIBVIRT_HOOKDIR:PATH=//p' "$build/CMakeCache.txt")
unitdir=$(sed -n 's/^VP_SYSTEMD_UNITDIR:PATH=//p' "$build/CMakeCache.txt")

for f in "$prefix/sbin/vcpuplaced" "$prefix/bin/vcpuplace" "$hookdir/vcpuplace"; do
    [ -x "$dest$f" ] || fail "$f not installed executable"
done
# Where the daemon and the hook look for the configuration (GNUInstallDirs: /etc for the
# /usr prefix, PREFIX/etc otherwise).
conf=$("$dest$prefix/sbin/vcpuplaced" --help | sed -n 's/.*configuration file (default \(.*\))$/\1/p')
[ -n "$conf" ] || fail "vcpuplaced --help names no default configuration"
sysconf=${conf%/vcpuplace/vcpuplaced.conf}
for f in "$sysconf/vcpuplace/vcpuplaced.conf" "$prefix/share/doc/vcpuplace/vcpuplaced.conf.example" \
    "$unitdir/vcpuplaced.service" "$prefix/share/vcpuplace/schemas/vcpuplace.rng"; do
    [ -f "$dest$f" ] || fail "$f not installed"
done
grep -q "^ExecStart=$prefix/sbin/vcpuplaced$" "$dest$unitdir/vcpuplaced.service" ||
    fail "the unit does not start $prefix/sbin/vcpuplaced"
grep -q '^After=libvirtd.service' "$dest$unitdir/vcpuplaced.service" ||
    fail "the unit is not ordered after libvirtd"

"$dest$prefix/sbin/vcpuplaced" --check-config --config "$dest$sysconf/vcpuplace/vcpuplaced.conf" ||
    fail "the installed daemon refuses the installed configuration"
out=$("$dest$hookdir/vcpuplace" 2>&1 </dev/null) || fail "the installed hook failed without arguments"
echo "$out" | grep -q 'expected 4' || fail "the installed hook said: $out"

# An operator's configuration survives a reinstall.
echo "# mine" >>"$dest$sysconf/vcpuplace/vcpuplaced.conf"
DESTDIR=$dest cmake --install "$build" >/dev/null
grep -q '^# mine$' "$dest$sysconf/vcpuplace/vcpuplaced.conf" || fail "reinstall replaced the configuration"
echo "install: all checks passed"
