#!/bin/bash
# `cmake --install` into a scratch DESTDIR: binaries, the hook in libvirt's qemu.d, the
# configuration (never over an existing one) and its example, the systemd unit, the
# schema, the man pages, the bash completion. Every path follows the build's prefix the
# GNUInstallDirs way (/usr: /etc and /var; /opt/X: /etc/opt/X and /var/opt/X; any other P:
# P/etc and P/var), in the installed files and in the programs' compiled-in defaults: the
# unit starts the installed daemon and names the state directory the daemon, its --help
# and the example configuration name. The installed daemon accepts the installed
# configuration, and the installed hook tolerates being run by hand.
set -euo pipefail
build=${VP_BUILDDIR:?}
dest=$(mktemp -d /tmp/vp-install.XXXXXX)
trap 'rm -rf "$dest"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

DESTDIR=$dest cmake --install "$build" >"$dest.log" 2>&1 || { cat "$dest.log"; fail "cmake --install"; }
rm -f "$dest.log"
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
case $prefix in
    /usr) etc=/etc var=/var ;;
    /opt/*) etc=/etc$prefix var=/var$prefix ;;
    *) etc=$prefix/etc var=$prefix/var ;;
esac
hookdir=$(sed -n 's/^VP_LIBVIRT_HOOKDIR:PATH=//p' "$build/CMakeCache.txt")
[ "$hookdir" = "$etc/libvirt/hooks/qemu.d" ] || echo "note: VP_LIBVIRT_HOOKDIR set to $hookdir"
unitdir=$(sed -n 's/^VP_SYSTEMD_UNITDIR:PATH=//p' "$build/CMakeCache.txt")

for f in "$prefix/sbin/vcpuplaced" "$prefix/bin/vcpuplace" "$hookdir/vcpuplace"; do
    [ -x "$dest$f" ] || fail "$f not installed executable"
done
# Where the daemon and the hook look for the configuration (GNUInstallDirs: /etc for the
# /usr prefix, PREFIX/etc otherwise).
conf=$("$dest$prefix/sbin/vcpuplaced" --help | sed -n 's/.*configuration file (default \(.*\))$/\1/p')
[ -n "$conf" ] || fail "vcpuplaced --help names no default configuration"
[ "$conf" = "$etc/vcpuplace/vcpuplaced.conf" ] || fail "vcpuplaced reads $conf, not $etc/vcpuplace/vcpuplaced.conf"
sysconf=$etc
for f in "$sysconf/vcpuplace/vcpuplaced.conf" "$prefix/share/doc/vcpuplace/vcpuplaced.conf.example" \
    "$unitdir/vcpuplaced.service" "$prefix/share/vcpuplace/schemas/vcpuplace.rng" \
    "$prefix/share/vcpuplace/schemas/vcpuplace.schema.json" \
    "$prefix/share/man/man1/vcpuplace.1" "$prefix/share/man/man8/vcpuplaced.8" \
    "$prefix/share/man/man5/vcpuplaced.conf.5" "$prefix/share/man/man8/vcpuplace-hook.8" "$prefix/share/man/man7/vcpuplace-json.7" \
    "$prefix/share/bash-completion/completions/vcpuplace"; do
    [ -f "$dest$f" ] || fail "$f not installed"
done
unit=$dest$unitdir/vcpuplaced.service
grep -q "^ExecStart=$prefix/sbin/vcpuplaced$" "$unit" ||
    fail "the unit does not start $prefix/sbin/vcpuplaced"

# One state path: the daemon's default, the example configuration's, the man page's, the
# directory installed, and the one the unit makes writable.
state=$("$dest$prefix/sbin/vcpuplaced" --help | sed -n 's/^ *ledger (default \(.*\))$/\1/p')
[ "$state" = "$var/lib/vcpuplace/ledger.json" ] || fail "vcpuplaced's ledger is '$state', not under $var/lib/vcpuplace"
grep -qx "#state=$state" "$dest$sysconf/vcpuplace/vcpuplaced.conf" || fail "the configuration names another state path"
grep -qx "#state=$state" "$dest$prefix/share/doc/vcpuplace/vcpuplaced.conf.example" || fail "the example names another state path"
MANWIDTH=200 man -l "$dest$prefix/share/man/man5/vcpuplaced.conf.5" 2>/dev/null | grep -qF "$state" ||
    fail "vcpuplaced.conf(5) names another state path"
[ -d "$dest$var/lib/vcpuplace" ] || fail "$var/lib/vcpuplace not installed"
if [ "$var" = /var ]; then
    grep -qx 'StateDirectory=vcpuplace' "$unit" || fail "the unit has no StateDirectory=vcpuplace"
else
    grep -qx "ReadWritePaths=$var/lib/vcpuplace" "$unit" || fail "the unit does not make $var/lib/vcpuplace writable"
fi

"$dest$prefix/sbin/vcpuplaced" --check-config --config "$dest$sysconf/vcpuplace/vcpuplaced.conf" ||
    fail "the installed daemon refuses the installed configuration"
out=$("$dest$hookdir/vcpuplace" 2>&1 </dev/null) || fail "the installed hook failed without arguments"
echo "$out" | grep -q 'expected 4' || fail "the installed hook said: $out"

# An operator's configuration survives a reinstall.
echo "# mine" >>"$dest$sysconf/vcpuplace/vcpuplaced.conf"
DESTDIR=$dest cmake --install "$build" >/dev/null
grep -q '^# mine$' "$dest$sysconf/vcpuplace/vcpuplaced.conf" || fail "reinstall replaced the configuration"
echo "install: all checks passed"
