#!/bin/bash
# The layers of plugin/ (README.md, "Layout"), checked on the sources and the binaries:
#   core     includes only core and libraries; no system-call headers, no I/O calls linked
#   host, libvirt, proto, conf   never include daemon, cli or hook
#   cli      never includes or links daemon code; its binary has no daemon symbols
#   hook     includes only hook, proto, conf, libc and jansson; its binary has no GLib
# Usage: layers.sh SRCDIR CLI-BINARY HOOK-BINARY LIBVPCORE.a
set -u

src=$1 cli=$2 hook=$3 core=$4
failed=0

fail() {
    echo "FAIL: $*"
    failed=1
}

# includes DIR: "file:line:header" for every #include in plugin/DIR and its folders, quoted
# headers as written ("core/model/plan.h"; a bare "plan.h" is its own folder's), angle ones
# as <name>.
includes() {
    [ -d "$src/plugin/$1" ] || return 0
    (cd "$src" && grep -rHnE --include='*.[ch]' '^[[:space:]]*#[[:space:]]*include' plugin/"$1") |
        sed -E 's|:[[:space:]]*#[[:space:]]*include[[:space:]]*|:|; s|[[:space:]]*(/[*/].*)?$||' |
        sed -E 's|^plugin/(.+)/([^/:]+:[0-9]+):"([^/"]+)"$|plugin/\1/\2:"\1/\3"|'
}

# forbid DIR WHY ERE: fails for each include of DIR whose header matches ERE.
forbid() {
    local dir=$1 why=$2 ere=$3 hits
    hits=$(includes "$dir" | grep -E ":[0-9]+:($ere)" || true)
    [ -z "$hits" ] || while IFS= read -r h; do fail "$h: $why"; done <<<"$hits"
}

# only DIR WHY ERE: fails for each include of DIR whose header does not match ERE.
only() {
    local dir=$1 why=$2 ere=$3 hits
    hits=$(includes "$dir" | grep -vE ":[0-9]+:($ere)$" || true)
    [ -z "$hits" ] || while IFS= read -r h; do fail "$h: $why"; done <<<"$hits"
}

# Headers of system calls and file I/O: a core that includes none makes none.
syscall_h='<(unistd|fcntl|dirent|poll|signal|sched|pthread|stdio|syslog|spawn|termios|glib-unix)\.h>|<(sys|linux|arpa|netinet|net|gio|glib)/[^>]*>'
forbid core "core is pure logic (no host, libvirt, daemon, cli, hook, proto, conf)" \
    '"(host|libvirt|daemon|cli|hook|proto|conf)/'
forbid core "core makes no system calls" "$syscall_h"
for d in host libvirt proto conf; do
    forbid "$d" "$d is an adapter: it never includes daemon, cli or hook" '"(daemon|cli|hook)/'
done

forbid daemon "the daemon never includes cli or hook" '"(cli|hook)/'

# The CLI may use the libvirt and host adapters, like virsh; never the daemon's code.
hits=$(includes cli | grep -E ':[0-9]+:"daemon/' || true)
links=$(grep -nwE 'vpdaemon' "$src/plugin/cli/CMakeLists.txt" | sed 's|^|plugin/cli/CMakeLists.txt:|' || true)
[ -z "$hits" ] || while IFS= read -r h; do fail "$h: the CLI never includes daemon code"; done <<<"$hits"
[ -z "$links" ] || while IFS= read -r h; do fail "$h: the CLI never links vpdaemon"; done <<<"$links"

# libc (C and POSIX headers) and jansson; the hook's own, the protocol and the configuration.
hook_ok='"(hook|proto|conf)/[^"]*"|<(sys|arpa|netinet|net|bits)/[a-z0-9_/]*\.h>|<(assert|ctype|errno|fcntl|getopt|inttypes|limits|locale|poll|pwd|signal|stdarg|stdbool|stddef|stdint|stdio|stdlib|string|strings|syslog|time|unistd|jansson)\.h>'
only hook "the hook includes only hook, proto, conf, libc and jansson" "$hook_ok"

# Binaries. core's archive: no I/O or process calls referenced (GLib's and libc's).
io_sym='g_file_[a-z_]*|g_(l?stat|open|fopen|freopen|creat|rename|unlink|remove|rmdir|mkdir[a-z_]*|chdir|access)|g_dir_[a-z_]*|g_mapped_file_[a-z_]*|g_spawn_[a-z_]*|g_subprocess_[a-z_]*|g_socket_[a-z_]*|(open|open64|openat|read|write|pread|pwrite|close|stat|stat64|fstat|lstat|fopen|fopen64|opendir|readdir|readdir64|mkdir|rename|unlink|syscall|prctl|ioctl|fork|execve?|getpid)'
hits=$(nm -u "$core" 2>/dev/null | awk '{print $NF}' | sed 's/@.*//' | grep -xE "$io_sym" | sort -u)
[ -z "$hits" ] || fail "libvpcore.a calls $(echo $hits): core makes no system calls"

# The CLI: no daemon symbols.
daemon_sym='vp(Daemon|Manager|Server|Balance|Cookies|Hotplug|Metrics|Log)[A-Za-z0-9_]*'
hits=$(nm "$cli" | awk '{print $NF}' | grep -xE "$daemon_sym" | sort -u)
[ -z "$hits" ] || fail "vcpuplace carries daemon code: $(echo $hits)"

# The hook: no GLib at all (it runs three times per domain start).
hits=$(nm "$hook" | awk '{print $NF}' | sed 's/@.*//' | grep -E '^g_' | sort -u | wc -l)
[ "$hits" -eq 0 ] || fail "vcpuplace-hook references $hits g_* symbols: the hook must not load GLib"
# Nor any shared library but libc (and a sanitizer's runtime, with the libm gcc links for
# it): each costs the dynamic loader about 0.1 ms a run, so jansson and libinih are linked
# from their archives.
needed=$(readelf -d "$hook" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
runtime='lib(asan|ubsan|gcc_s)\.so\.[0-9]+'
grep -qE '^libasan\.so\.' <<<"$needed" && runtime='(lib(asan|ubsan|gcc_s)\.so\.[0-9]+|libm\.so\.6)'
hits=$(grep -vE "^(libc\.so\.6|$runtime)\$" <<<"$needed" || true)
[ -z "$hits" ] || fail "vcpuplace-hook loads $(echo $hits): only libc is loaded at each run"

[ "$failed" = 0 ] && echo "layers hold"
exit "$failed"
