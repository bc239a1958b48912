#!/usr/bin/env bash
# Runs one libFuzzer target for SECONDS over its committed corpus; new inputs go to a
# scratch directory, crashes to tests/fuzz/crashes/ (commit them into the corpus once fixed).
#   run.sh BINARY CORPUS_DIR SECONDS
set -eu
bin=$1 corpus=$2 secs=$3
# GLib 2.74's slice allocator hides its blocks from LeakSanitizer: a leaked JsonArray went
# unseen until this was set.
export G_SLICE=always-malloc
export LSAN_OPTIONS=suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}
# GLib has no frame pointers: the fast unwinder stops in g_malloc, and the suppression
# above could never match.
export ASAN_OPTIONS=fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
crashes=$(dirname "$corpus")/../crashes
mkdir -p "$crashes"
exec "$bin" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$crashes/$(basename "$bin")-" "$scratch" "$corpus"
