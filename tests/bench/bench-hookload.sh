#!/bin/bash
# Benchmark, not a test: the hook and vcpuplaced under load, through real libvirt (issue 15).
# A private vcpuplaced (the systemd unit's privileges, hook_failure=closed so that a hook
# left without an answer shows as a refusal) and the real hook installed in qemu.d.
#   A. HOOKS (200) hooks at once, run as libvirt runs them (`vcpuplace NAME prepare begin -`,
#      the domain XML on stdin), each for a domain of its own (vpe2e-d-hb-*, not defined:
#      the reserve is what a start waits for), then as many `release end` at once. Each
#      hook's answer time (its whole run, exec included), exit status and message.
#   B. Under load: IDLE (1000) connections held open that never speak (each one the daemon
#      closes is opened again), and a sender of hostile reserves in a loop (a 4 MB domain
#      XML, and one of just under the 1 MiB message bound full of attributes, which the
#      daemon must parse); meanwhile GUESTS (20) real TCG guests (vpe2e-d-hl-*, smt=share
#      unmet=degrade) started at once with `virsh start`, each checked placed and pinned as
#      planned (tests/e2e/chaos-invariants.py), then burst A again under the same load.
# Figures: placed, refused by vcpuplaced or left without an answer (the hook's own deadline
# of hook_timeout_ms from its connect), p50/p99/max of each hook's whole run, the time
# libvirtd spent in each `prepare begin` of the real starts (its debug log), what the idle
# holder and the hostile sender saw, the daemon's refusal counters, RSS and descriptors.
# Prints them and writes JSON to the path given (argument, else $VP_BENCH_OUT), refusing
# to overwrite an existing file unless VP_BENCH_OVERWRITE=1 (scripts/bench sets it: it
# rewrites its whole results directory). Nothing passes or fails on time.
#
#   tests/bench/bench-hookload.sh [OUT.json]
# Environment: HOOKS, IDLE, GUESTS; HOOK_TIMEOUT_MS (500, the configuration's default);
# REOPEN_MS (1000): how long the idle holder waits before it opens again a connection the
# daemon closed; 0 makes it a connect flood (tens of thousands a minute here).
# Needs root and libvirtd (scripts/libvirt-env start); run it under flock /tmp/vp-e2e.lock.
. "$(dirname "$0")/../e2e/lib.sh"
e2e_require_env
. "$(dirname "$0")/../e2e/daemon-helpers.sh"

out=${1:-${VP_BENCH_OUT:-}}
[ -n "$out" ] || e2e_fail "no output path: give OUT.json or set VP_BENCH_OUT"
if [ -e "$out" ] && [ "${VP_BENCH_OVERWRITE:-0}" != 1 ]; then
    e2e_fail "$out exists: not overwritten (VP_BENCH_OVERWRITE=1 to replace it)"
fi
hooks=${HOOKS:-200}
idle=${IDLE:-1000}
nguests=${GUESTS:-20}
timeout_ms=${HOOK_TIMEOUT_MS:-500}
reopen_ms=${REOPEN_MS:-1000}
for v in hooks idle nguests timeout_ms; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || e2e_fail "$v '${!v}' is not a positive number"
done
[[ $reopen_ms =~ ^[0-9]+$ ]] || e2e_fail "REOPEN_MS '$reopen_ms' is not a number"
check=$(dirname "$0")/../e2e/chaos-invariants.py
hookpath=/etc/libvirt/hooks/qemu.d/vcpuplace

vpd_config "host_cpus=$(cat /sys/devices/system/cpu/online)" hook_failure=closed \
    "hook_timeout_ms=$timeout_ms"
vpd_start_confined
vp_wait_until 30 vpd_connected || e2e_fail "vcpuplaced did not come up connected; see $vpd_log"
vpd_install_hook

# 16 MiB each: 200 of them fit this host's memory, which vcpuplaced admits per node.
"$e2e_top/scripts/guest-xml" vpe2e-d-hb-template --memory 16 --policy smt=share --policy unmet=degrade \
    >"$e2e_tmp/template.xml"

cat >"$e2e_tmp/burst.py" <<'EOF'
# burst.py HOOK TEMPLATE PREFIX COUNT OP SUBOP OUTDIR: COUNT hooks released at one moment
# (forked children blocked on one pipe), each timed around its whole run.
import json, os, subprocess, sys, time
hook, template, prefix, count, op, subop, outdir = sys.argv[1:8]
xml = open(template).read()
r, w = os.pipe()
kids = []
for i in range(int(count)):
    pid = os.fork()
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        name = "%s%03d" % (prefix, i)
        doc = xml.replace("vpe2e-d-hb-template", name).encode()
        t0 = time.monotonic_ns()
        p = subprocess.run([hook, name, op, subop, "-"], input=doc, capture_output=True)
        ms = (time.monotonic_ns() - t0) / 1e6
        with open(os.path.join(outdir, name), "w") as f:
            json.dump({"name": name, "ms": ms, "rc": p.returncode,
                       "stderr": p.stderr.decode(errors="replace")[:300]}, f)
        os._exit(0)
    kids.append(pid)
os.close(r)
time.sleep(0.2)
t0 = time.monotonic_ns()
os.close(w)
for pid in kids:
    os.waitpid(pid, 0)
print("%.1f" % ((time.monotonic_ns() - t0) / 1e6))
EOF

cat >"$e2e_tmp/idle.py" <<'EOF'
# idle.py SOCKET COUNT REOPEN_MS STATS: holds COUNT connections that never speak until SIGTERM;
# one the daemon closes (or refuses) is opened again REOPEN_MS later. Counts to STATS as JSON.
import errno, json, os, resource, selectors, signal, socket, sys, time
path, count, reopen_s, stats_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) / 1000, sys.argv[4]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = count + 64
resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), max(hard, want)))
st = {"wanted": count, "connects": 0, "connect_eagain": 0, "connect_errors": 0,
      "closed_by_daemon": 0, "refusal_messages": 0, "held_samples": [], "first_refusal": ""}
sel = selectors.DefaultSelector()
held = set()
closed_at = []
stop = False
def term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, term)
last_sample = 0
while not stop:
    now = time.monotonic()
    closed_at = [t for t in closed_at if now - t < reopen_s]
    for _ in range(min(count - len(held) - len(closed_at), 200)):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(path)
        except OSError as e:
            s.close()
            st["connect_eagain" if e.errno == errno.EAGAIN else "connect_errors"] += 1
            break
        st["connects"] += 1
        held.add(s)
        sel.register(s, selectors.EVENT_READ)
    for key, _ in sel.select(timeout=0.05):
        s = key.fileobj
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if data:
            st["refusal_messages"] += 1
            if not st["first_refusal"]:
                st["first_refusal"] = data.decode(errors="replace").strip()[:200]
            continue
        sel.unregister(s)
        held.discard(s)
        s.close()
        st["closed_by_daemon"] += 1
        closed_at.append(time.monotonic())
    now = time.monotonic()
    if now - last_sample >= 0.5:
        st["held_samples"].append(len(held))
        last_sample = now
h = st.pop("held_samples") or [0]
st["held_min"], st["held_max"] = min(h), max(h)
st["held_mean"] = round(sum(h) / len(h), 1)
json.dump(st, open(stats_path, "w"))
EOF

cat >"$e2e_tmp/hostile.py" <<'EOF'
# hostile.py SOCKET NAME STATS: until SIGTERM, reserves NAME with hostile domain XMLs in turn,
# a 4 MB one and one of just under the 1 MiB message bound, both attributes in metadata.
import json, signal, socket, sys, time
path, name, stats_path = sys.argv[1:4]
def doc(limit):
    head = "<domain type='kvm'><name>%s</name><memory>65536</memory><vcpu>1</vcpu>" \
           "<os><type>hvm</type></os><metadata><t:x xmlns:t='urn:t'" % name
    parts, size, a = [head], len(head), 0
    while size < limit - 64:
        p = " a%d='%d'" % (a, a)
        parts.append(p)
        size += len(p)
        a += 1
    parts.append("/></metadata></domain>")
    return "".join(parts)
lines = {"4MB": json.dumps({"op": "reserve", "name": name, "xml": doc(4 * 1000 * 1000)}),
         "1MiB": json.dumps({"op": "reserve", "name": name, "xml": doc(1024 * 1024 - 4096)})}
st = {k: {"sent": 0, "ms": [], "replies": {}} for k in lines}
stop = False
def term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, term)
while not stop:
    for kind, line in lines.items():
        if stop:
            break
        t0 = time.monotonic()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        reply = b""
        try:
            s.connect(path)
            s.sendall(line.encode() + b"\n")
            while not reply.endswith(b"\n"):
                d = s.recv(65536)
                if not d:
                    break
                reply += d
        except OSError as e:
            # Refused mid-send (the 1 MiB bound): what the daemon said before closing.
            try:
                s.settimeout(1)
                reply += s.recv(65536)
            except OSError:
                pass
            reply = reply or ("%s, nothing read" % e.strerror).encode()
        s.close()
        st[kind]["sent"] += 1
        st[kind]["ms"].append(round((time.monotonic() - t0) * 1000, 1))
        try:
            o = json.loads(reply)
            what = "ok" if o.get("ok") else "refused: %s" % str(o.get("error", ""))[:120]
        except ValueError:
            what = reply.decode(errors="replace").strip()[:120] or "closed without a reply"
        st[kind]["replies"][what] = st[kind]["replies"].get(what, 0) + 1
for k in st:
    ms = sorted(st[k].pop("ms")) or [0]
    st[k]["median_ms"] = ms[len(ms) // 2]
    st[k]["max_ms"] = ms[-1]
json.dump(st, open(stats_path, "w"))
EOF

# burst NAME-PREFIX OUTDIR: A's two bursts; prints the reserve burst's wall ms.
burst() {
    mkdir -p "$2/reserve" "$2/release"
    python3 "$e2e_tmp/burst.py" "$hookpath" "$e2e_tmp/template.xml" "$1" "$hooks" prepare begin "$2/reserve"
    python3 "$e2e_tmp/burst.py" "$hookpath" "$e2e_tmp/template.xml" "$1" "$hooks" release end "$2/release" >/dev/null
}
# summary DIR: one JSON object of a burst's results. An answer is vcpuplaced's: placed (exit
# 0, silent) or refused with its reason; no answer is the hook's own verdict (its deadline,
# a full socket), which names hook_failure. Messages are counted with the domain as NAME.
summary() {
    python3 - "$1" <<'EOF'
import json, os, sys
d = sys.argv[1]
rs = [json.load(open(os.path.join(d, f))) for f in sorted(os.listdir(d))]
ms = sorted(r["ms"] for r in rs)
def pct(p):
    return round(ms[min(len(ms) - 1, max(0, int(len(ms) * p + 0.999) - 1))], 1) if ms else None
ok = [r for r in rs if r["rc"] == 0 and not r["stderr"]]
lost = [r for r in rs if "hook_failure=" in r["stderr"]]
msgs = {}
for r in rs:
    if r not in ok:
        k = r["stderr"].strip().splitlines()[0] if r["stderr"].strip() else "rc %d" % r["rc"]
        k = k.replace(r["name"], "NAME")[:200]
        msgs[k] = msgs.get(k, 0) + 1
print(json.dumps({"hooks": len(rs), "placed": len(ok), "answered": len(rs) - len(lost),
                  "refused_by_vcpuplaced": len(rs) - len(lost) - len(ok),
                  "no_answer": len(lost),
                  "wall_p50_ms": pct(0.5), "wall_p99_ms": pct(0.99), "wall_max_ms": pct(1.0),
                  "messages": msgs}))
EOF
}
# Milliseconds of each `prepare begin` of ours since a log mark (libvirtd's debug log).
hook_ms() { # mark
    vpd_log_since "$1" | awk -v hook="$hookpath " '
        function ms(ts) { split(ts, t, ":"); return (t[1] * 3600 + t[2] * 60 + t[3]) * 1000 }
        index($0, "About to run") && index($0, hook) && index($0, " prepare begin ") { start[$3] = ms(substr($2, 1, 12)) }
        index($0, "Result status") && ($3 in start) { printf "%.0f\n", ms(substr($2, 1, 12)) - start[$3]; delete start[$3] }'
}
recorded() { # prefix
    vpd_status 2>/dev/null | grep -c "^$1" || true
}
daemon_figures() {
    printf '{"fds": %d, "rss_kb": %d}' "$(find "/proc/$vpd_pid/fd" -mindepth 1 | wc -l)" \
        "$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$vpd_pid/status")"
}
# The daemon's socket counters (refusals, idle closes) from its Prometheus metrics.
counters() {
    "$vpd_cli" metrics --config "$vpd_conf" 2>/dev/null | python3 -c '
import json, sys
out = {}
for line in sys.stdin:
    if line.startswith("vcpuplace_socket_"):
        k, _, v = line.rstrip().rpartition(" ")
        out[k] = float(v)
print(json.dumps(out))' 2>/dev/null || echo '{}'
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; hook timeout ${timeout_ms} ms"

# --- A: HOOKS hooks at once, no other load -------------------------------------------------
wall_a=$(burst vpe2e-d-hb- "$e2e_tmp/a")
vp_wait_until 30 test "$(recorded vpe2e-d-hb-)" = 0 ||
    e2e_fail "A: still recorded after every release: $(vpd_status)"
a=$(summary "$e2e_tmp/a/reserve")
a_rel=$(summary "$e2e_tmp/a/release")
echo "A: $hooks hooks at once (prepare begin), all returned after $wall_a ms: $a"
echo "A: $hooks releases at once: $a_rel"

# --- B: the same under idle connections and hostile XML, with real starts ------------------
names=$(seq -f 'vpe2e-d-hl-%02g' 0 $((nguests - 1)))
for g in $names; do e2e_define "$g" --policy smt=share --policy unmet=degrade; done
before=$(counters)
python3 "$e2e_tmp/idle.py" "$vpd_sock" "$idle" "$reopen_ms" "$e2e_tmp/idle.json" &
idle_pid=$!
python3 "$e2e_tmp/hostile.py" "$vpd_sock" vpe2e-d-hl-hostile "$e2e_tmp/hostile.json" &
hostile_pid=$!
# Waited for: their statistics must be written before the temporary directory goes.
e2e_at_exit "kill $idle_pid $hostile_pid 2>/dev/null; wait $idle_pid $hostile_pid 2>/dev/null"
sleep 3
mark=$(vpd_log_mark)
t0=$(vp_now_ms)
mkdir -p "$e2e_tmp/starts"
# shellcheck disable=SC2016
xargs -P "$nguests" -I{} sh -c 'virsh -q start "$1" >"$2/$1.out" 2>&1; echo $? >"$2/$1.rc"' \
    sh {} "$e2e_tmp/starts" <<<"$names"
wall_b=$(($(vp_now_ms) - t0))
started=$(grep -lFx 0 "$e2e_tmp"/starts/*.rc | wc -l)
start_failures=$(for f in $(grep -LFx 0 "$e2e_tmp"/starts/*.rc); do
    g=$(basename "$f" .rc)
    grep . "${f%.rc}.out" | tail -n 1 | sed "s/$g/NAME/g; s/\"/'/g" | cut -c1-300
done | sort | uniq -c | sed 's/^ *//' | paste -sd';')
settled() {
    inv=$(python3 "$check" --cli "$vpd_cli" --config "$vpd_conf" --prefix vpe2e-d-hl- 2>&1)
}
placed_ms=-1
if vp_wait_until 60 settled; then placed_ms=$(($(vp_now_ms) - t0)); fi
# The CLI may be told "too many connections; try again" under the load: it is, 10 times.
for _ in $(seq 10); do
    applied=$(vpd_status --json 2>/dev/null | python3 -c '
import json, sys
print(sum(1 for d in json.load(sys.stdin)["domains"]
          if d["domain"].startswith("vpe2e-d-hl-") and d["state"] == "applied"))' 2>/dev/null) && break
    applied=-1
    sleep 0.2
done
fig_loaded=$(daemon_figures)
real_ms=$(hook_ms "$mark" | sort -n | paste -sd,)
wall_bb=$(burst vpe2e-d-hb- "$e2e_tmp/b")
b=$(summary "$e2e_tmp/b/reserve")
b_rel=$(summary "$e2e_tmp/b/release")
fig_after=$(daemon_figures)
kill -TERM "$idle_pid" "$hostile_pid"
wait "$idle_pid" "$hostile_pid" || true
after=$(counters)
xargs -P "$nguests" -I{} virsh -q destroy {} <<<"$names" >/dev/null 2>&1 || true

echo "B: load: $idle idle connections held (each reopened ${reopen_ms} ms after the daemon closed it), hostile reserves in a loop"
echo "B: $nguests real starts at once returned after $wall_b ms: $started started" \
    "${start_failures:+(failures: $start_failures)}"
echo "B: placed and pinned as planned (chaos invariants): $([ "$placed_ms" -ge 0 ] &&
    echo "yes, $placed_ms ms after the starts began" || echo "NO: $inv")"
echo "B: recorded as applied by vcpuplaced: $applied of $nguests"
echo "B: libvirtd's prepare begin hook calls of the real starts (ms): [$real_ms]"
echo "B: $hooks hooks at once under that load, all returned after $wall_bb ms: $b"
echo "B: $hooks releases at once under that load: $b_rel"
echo "B: idle holder: $(cat "$e2e_tmp/idle.json")"
echo "B: hostile sender: $(cat "$e2e_tmp/hostile.json")"
echo "B: vcpuplaced with the guests and the load: $fig_loaded; after the second burst: $fig_after"
echo "B: vcpuplaced's counters before: $before; after: $after"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$out" <<EOF
import json, sys
def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(len(xs) * 0.99 + 0.999) - 1))] if xs else None
real = [$real_ms]
json.dump({
    "cpus": $(nproc), "hook_timeout_ms": $timeout_ms, "hooks": $hooks, "idle": $idle,
    "guests": $nguests, "hook_failure": "closed", "reopen_ms": $reopen_ms,
    "a_unloaded": {"reserve": $a, "release": $a_rel, "burst_wall_ms": $wall_a},
    "b_loaded": {
        "starts_wall_ms": $wall_b, "started": $started, "applied": $applied,
        "start_failures": "$start_failures",
        "placed_and_pinned_ms": $placed_ms,
        "libvirt_prepare_begin_ms": real, "libvirt_prepare_begin_p99_ms": p99(real),
        "reserve": $b, "release": $b_rel, "burst_wall_ms": $wall_bb,
        "idle_holder": json.load(open("$e2e_tmp/idle.json")),
        "hostile_sender": json.load(open("$e2e_tmp/hostile.json")),
        "daemon_loaded": $fig_loaded, "daemon_after": $fig_after,
        "counters_before": $before, "counters_after": $after},
    "loadavg_after": "$(cut -d' ' -f1-3 /proc/loadavg)",
}, open(sys.argv[1], "w"), indent=1)
EOF
echo "written: $out"
