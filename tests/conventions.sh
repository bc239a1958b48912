#!/bin/bash
# The tree's conventions that a script can check (README.md, "Conventions"):
#   includes      "folder/file.h" from plugin/, project includes before <system> ones
#   headers       private headers are NAMEpriv.h, included only from their own folder
#   domain logs   a log line about a domain goes through vpLogDomain() (VCPUPLACE_DOMAIN)
#   JSON          the daemon and the CLI build JSON with json-glib, never with printf
#   bool          core, conf and the hook use bool, never gboolean
# Usage: conventions.sh SRCDIR
set -u
cd "$1" || exit 1
failed=0
fail() {
    echo "FAIL: $*"
    failed=1
}
mapfile -t files < <(git ls-files -- 'plugin/*.[ch]' 2>/dev/null || find plugin -name '*.[ch]')
[ ${#files[@]} -gt 0 ] || { echo "FAIL: no C files under $PWD/plugin"; exit 1; }

# Includes: a path from plugin/ (a folder, then the file), and all of them before <...>.
for f in "${files[@]}"; do
    awk -v f="$f" '
        /^#include "/ {
            if ($2 !~ /^"[a-z]+(\/[a-z]+)?\/[a-z0-9]+\.h"$/) print f ":" FNR ": " $0 ": include a project header as \"folder/file.h\", the path from plugin/"
            if (sys) print f ":" FNR ": " $0 ": project includes come before <system> ones"
        }
        /^#include </ { sys = 1 }' "$f"
done | while IFS= read -r l; do echo "FAIL: $l"; done | grep . && failed=1

# Headers: NAME.h, and a private one NAMEpriv.h, included only inside its folder.
for f in "${files[@]}"; do
    case $f in
    *.h) [[ $(basename "$f") =~ ^[a-z0-9]+\.h$ ]] || fail "$f: a header is NAME.h (lower case, no separators)"
        [[ $(basename "$f") =~ (internal|private|int|_p)\.h$ ]] && fail "$f: a private header is NAMEpriv.h" ;;
    esac
done
for f in "${files[@]}"; do
    dir=$(basename "$(dirname "$f")")
    grep -nE '^#include "[a-z]+/[a-z0-9]+priv\.h"' "$f" | while IFS= read -r l; do
        inc=$(sed -E 's/.*"([a-z]+)\/.*/\1/' <<<"$l")
        [ "$inc" = "$dir" ] || echo "FAIL: $f:${l%%:*}: a private header is for its own folder"
    done
done | grep . && failed=1

# Domain logs: a line whose message names a domain ("domain %s") carries the name in
# VCPUPLACE_DOMAIN: vpLogDomain() in the daemon, g_log_structured() with the field in the
# adapters below it; errors (g_set_error and friends) are not log lines. The hook logs to
# stderr for libvirt, not to the journal.
for f in "${files[@]}"; do
    case $f in plugin/hook/* | plugin/daemon/log.c) continue ;; esac
    awk -v f="$f" '
        { prev[NR % 4] = $0 }
        /"domain (%s|\x27%s\x27)/ {
            ctx = prev[(NR + 1) % 4] " " prev[(NR + 2) % 4] " " prev[(NR + 3) % 4] " " $0
            n = split(ctx, w, /[^A-Za-z_0-9]+/)
            call = ""
            for (i = 1; i <= n; i++)
                if (w[i] ~ /^(g_log|g_log_structured|g_warning|g_message|g_info|g_debug|g_critical|vpDaemonLog|g_set_error|g_prefix_error|g_strdup_printf|vpVirSetError|g_string_append_printf|vpLogDomain|g_printerr|fprintf|printf)$/)
                    call = w[i]
            if (call ~ /^(g_log|g_log_structured|g_warning|g_message|g_info|g_debug|g_critical|vpDaemonLog)$/ &&
                ctx !~ /"VCPUPLACE_DOMAIN"/)
                print "FAIL: " f ":" NR ": " call " about a domain without VCPUPLACE_DOMAIN: use vpLogDomain() (the daemon) or g_log_structured() with the field (the adapters)"
        }' "$f"
done | grep . && failed=1

# JSON in the daemon and the CLI: JsonBuilder or JsonObject, not a format string.
hits=$(grep -nE '(printf|g_print|g_string_append)[a-z_]*\(.*\\"[A-Za-z_]+\\" *:' plugin/daemon/*.c plugin/cli/*.c || true)
[ -z "$hits" ] || while IFS= read -r h; do fail "$h: JSON built by hand: use json-glib's builder"; done <<<"$hits"

# bool where the rule is applied; gboolean only in a GLib callback's signature (its
# parameters are gpointer or gconstpointer).
hits=$(grep -nw -A1 gboolean plugin/core/*/*.[ch] plugin/conf/*.[ch] plugin/hook/*.[ch] |
    awk '/^[^ ]+:[0-9]+:/ { if (h) print h; h = $0; next }
         { if ($0 ~ /\((gconstpointer|gpointer)/) h = "" } END { if (h) print h }' || true)
[ -z "$hits" ] || while IFS= read -r h; do fail "$h: core, conf and the hook use bool"; done <<<"$hits"

[ $failed = 0 ] && echo "conventions: ${#files[@]} files checked"
exit $failed
