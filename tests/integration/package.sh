#!/bin/bash
# The Debian package, built from this tree as an operator would (dpkg-buildpackage -us -uc
# -b, in a scratch copy since it writes beside the source), checked with lintian, then
# installed on this machine, checked, and purged:
#  - the programs run and print the tree's version (debian/changelog's too);
#  - the files are where Debian puts them (/usr/sbin, /usr/bin, libvirt's hook directory,
#    /etc/vcpuplace, the unit, man pages, completion) and the configuration is a conffile;
#  - the installed daemon accepts the installed configuration; the unit is enabled;
#  - purge removes the programs, the hook, the configuration and the state directory.
# Installing puts a hook into /etc/libvirt/hooks/qemu.d, which every libvirtd here would
# run: the test runs in a mount namespace of its own with an empty tmpfs there, so no
# libvirtd sees the hook (dpkg then warns that it cannot remove that mount point). Needs
# root; skips (77) where an install of vcpuplace exists.
set -euo pipefail
hookdir=/etc/libvirt/hooks/qemu.d
if [ -z "${VP_PACKAGE_NS:-}" ] && [ "$(id -u)" -eq 0 ] && [ -d "$hookdir" ]; then
    export VP_PACKAGE_NS=1
    exec unshare --mount --propagation private \
        bash -c 'mount -t tmpfs vp-package "$1" && exec "$2"' bash "$hookdir" "$0"
fi
top=${VP_TOPDIR:?}
version=${VP_VERSION:?}
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (dpkg -i)"
for t in dpkg-buildpackage dh lintian; do command -v $t >/dev/null || skip "$t not installed"; done
if dpkg-query -W -f '${Status}' vcpuplace 2>/dev/null | grep -q installed; then
    skip "the vcpuplace package is installed on this machine; not touching it"
fi
for f in /usr/sbin/vcpuplaced /etc/libvirt/hooks/qemu.d/vcpuplace /etc/vcpuplace; do
    [ ! -e "$f" ] || skip "$f exists (another install, or an e2e test's hook)"
done

tmp=$(mktemp -d /tmp/vp-package.XXXXXX)
installed=
cleanup() {
    [ -z "$installed" ] || dpkg --purge vcpuplace >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT

changelog_version=$(cd "$top" && dpkg-parsechangelog -S Version)
[ "$changelog_version" = "$version" ] ||
    fail "debian/changelog says $changelog_version, the tree (CMakeLists.txt) $version"

mkdir "$tmp/src"
(cd "$top" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$tmp/src")
(cd "$tmp/src" && nice dpkg-buildpackage -us -uc -b >"$tmp/build.log" 2>&1) ||
    { tail -40 "$tmp/build.log"; fail "dpkg-buildpackage"; }
deb=$(ls "$tmp"/vcpuplace_"$version"_*.deb)
echo "built $(basename "$deb")"

# Every lintian finding is fixed or explained in debian/source/lintian-overrides or
# debian/vcpuplace.lintian-overrides; what remains (info level included) is an error.
out=$(lintian --fail-on error,warning --info "$tmp"/vcpuplace_"$version"_*.changes 2>&1) ||
    fail "lintian: $out"
[ -z "$out" ] || echo "lintian (info, pedantic): $out"

dpkg -i "$deb" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "dpkg -i"; }
installed=1
[ "$(vcpuplace --version)" = "vcpuplace $version" ] || fail "installed vcpuplace --version: $(vcpuplace --version)"
[ "$(/usr/sbin/vcpuplaced --version)" = "vcpuplaced $version" ] || fail "installed vcpuplaced --version"
[ "$(/etc/libvirt/hooks/qemu.d/vcpuplace --version)" = "vcpuplace-hook $version" ] ||
    fail "installed hook --version"
for f in /usr/sbin/vcpuplaced /usr/bin/vcpuplace /etc/libvirt/hooks/qemu.d/vcpuplace; do
    [ -x "$f" ] || fail "$f not installed executable"
done
for f in /etc/vcpuplace/vcpuplaced.conf /lib/systemd/system/vcpuplaced.service \
    /usr/share/man/man1/vcpuplace.1.gz /usr/share/man/man8/vcpuplaced.8.gz \
    /usr/share/man/man5/vcpuplaced.conf.5.gz /usr/share/man/man8/vcpuplace-hook.8.gz /usr/share/man/man7/vcpuplace-json.7.gz \
    /usr/share/bash-completion/completions/vcpuplace /usr/share/vcpuplace/schemas/vcpuplace.rng \
    /usr/share/vcpuplace/schemas/vcpuplace.schema.json \
    /usr/share/doc/vcpuplace/copyright; do
    [ -f "$f" ] || fail "$f not installed"
done
[ -d /var/lib/vcpuplace ] || fail "/var/lib/vcpuplace not installed"
grep -qx 'StateDirectory=vcpuplace' /lib/systemd/system/vcpuplaced.service || fail "unit: no StateDirectory="
grep -qx 'ExecStart=/usr/sbin/vcpuplaced' /lib/systemd/system/vcpuplaced.service || fail "unit: ExecStart"
dpkg-query -W -f '${Conffiles}\n' vcpuplace | grep -q '^ /etc/vcpuplace/vcpuplaced.conf ' ||
    fail "/etc/vcpuplace/vcpuplaced.conf is not a conffile"
[ -L /etc/systemd/system/multi-user.target.wants/vcpuplaced.service ] || fail "the unit is not enabled"
/usr/sbin/vcpuplaced --check-config >/dev/null || fail "the installed daemon refuses the installed configuration"
/usr/sbin/vcpuplaced --help | grep -q '(default /var/lib/vcpuplace/ledger.json)' || fail "the daemon's ledger is not in /var/lib/vcpuplace"
out=$(/etc/libvirt/hooks/qemu.d/vcpuplace 2>&1 </dev/null) || fail "the installed hook failed without arguments"
grep -q 'expected 4' <<<"$out" || fail "the installed hook said: $out"
man -w vcpuplaced >/dev/null || fail "man vcpuplaced finds no page"
echo "ok: installed"

touch /var/lib/vcpuplace/ledger.json
dpkg --remove vcpuplace >/dev/null || fail "dpkg --remove"
[ ! -e /usr/sbin/vcpuplaced ] && [ ! -e /etc/libvirt/hooks/qemu.d/vcpuplace ] || fail "remove left programs or the hook"
[ -f /etc/vcpuplace/vcpuplaced.conf ] || fail "remove took the conffile (only purge should)"
dpkg --purge vcpuplace >/dev/null || fail "dpkg --purge"
installed=
[ ! -e /etc/vcpuplace/vcpuplaced.conf ] || fail "purge left the configuration"
[ ! -e /var/lib/vcpuplace ] || fail "purge left /var/lib/vcpuplace"
[ ! -e /etc/systemd/system/multi-user.target.wants/vcpuplaced.service ] || fail "purge left the unit enabled"
echo "package: all checks passed"
