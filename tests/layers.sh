#!/bin/bash
# The layers of plugin/ (README.md, "Layout"), checked on the sources and the binaries:
#   core     includes only core and libraries; no system-call headers, no I/O calls linked
#            inside it, four seams, each including and calling only itself and those below:
#              model    (topology, policy, request, plan, ledger, trust): only model
#              codec    (JSON in and out of the model): model
#              place    (placer, compaction, grow, capacity, scorer, cookie plan): model
#              balance  (pressure, rebalancer): model and codec (the pressure input's JSON)
#            and no files of libvpcore.a call each other in a circle
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
# The seams of core: a seam includes itself and the seams below it, never one above or beside.
only core/model "model is core's ground: it includes only model" '"core/model/[^"]*"|<[^>]+>'
only core/codec "codec includes only codec and model" '"core/(model|codec)/[^"]*"|<[^>]+>'
only core/place "place includes only place and model" '"core/(model|place)/[^"]*"|<[^>]+>'
only core/balance "balance includes only balance, codec and model" \
    '"core/(model|codec|balance)/[^"]*"|<[^>]+>'
for seam in "$src"/plugin/core/*/; do
    case $(basename "$seam") in model | codec | place | balance) ;;
    *) fail "plugin/core/$(basename "$seam"): a folder of core that tests/layers.sh does not know" ;;
    esac
done

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

# core's calls, file to file, from the archive's symbols (a call needs no include when the
# private header of a seam declares it): each follows the seams' order, and no circle of
# files remains, the mark of a function that lives in the wrong file.
seam_of=$(cd "$src/plugin/core" && for f in */*.c; do echo "${f#*/}.o ${f%%/*}"; done)
calls=$({
    echo "$seam_of" | sed 's/^/S /'
    nm -A -g --defined-only "$core" | awk -F: '{split($3, f, " "); print "D", $2, f[3]}'
    nm -A -u "$core" | awk -F: '{split($3, f, " "); print "U", $2, f[2]}'
} | awk '
    $1 == "S" { seam[$2] = $3; next }
    $1 == "D" { def[$3] = $2; next }
    $1 == "U" && ($3 in def) && def[$3] != $2 { print $2, def[$3], seam[$2], seam[def[$3]], $3 }')
declare -A below=([model]="" [codec]="model" [place]="model" [balance]="model codec")
while read -r from to sfrom sto sym; do
    [ -n "$from" ] && [ "$sfrom" != "$sto" ] || continue
    case " ${below[$sfrom]} " in
    *" $sto "*) ;;
    *) fail "core/$sfrom/${from%.o} calls $sym of core/$sto/${to%.o}: $sfrom may not call $sto" ;;
    esac
done <<<"$calls"
circles=$(awk '{ e[$1] = e[$1] " " $2; n[$1]; n[$2] }
    END {
        for (a in n) { r[a, a] = 0; split(e[a], s, " "); for (i in s) r[a, s[i]] = 1 }
        for (k in n) for (a in n) if (r[a, k]) for (b in n) if (r[k, b]) r[a, b] = 1
        for (a in n) for (b in n) if (a < b && r[a, b] && r[b, a]) print a, b
    }' <<<"$calls" | sort)
[ -z "$circles" ] || while read -r a b; do
    fail "libvpcore.a: ${a%.o} and ${b%.o} call each other (through a circle): move the function that lives in the wrong file"
done <<<"$circles"

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
