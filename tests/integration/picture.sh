#!/bin/bash
# vcpuplace topology --output draws the host with lstopo, coloured by owner. On a host
# lstopo lays out as one row of cores (one package, two NUMA nodes side by side, two cores
# each, two PUs per core: PU boxes in columns of two, in CPU order), a ledger from
# `vcpuplace simulate` (web: 1 vCPU isolate, so its sibling is reserved; db: 2 vCPUs pack)
# and housekeeping CPU 7, the PNG must show each PU box in its owner's colour as the ledger
# says (read back with `vcpuplace topology --json`), the reserved sibling and the
# housekeeping CPU in their marks, free PUs in the free colour; SVG and PDF are written too,
# and another extension is refused.
set -euo pipefail
build=${VP_BUILDDIR:?}
cli=$build/plugin/cli/vcpuplace
topo='synthetic:pack:1 numa:2 core:2 pu:2'
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v lstopo >/dev/null || { echo "SKIP: lstopo (Debian package hwloc) is not installed"; exit 77; }
# Debian's python3, where python3-pil is (a python3 earlier on PATH may lack it).
py=/usr/bin/python3
"$py" -c 'import PIL' 2>/dev/null || { echo "SKIP: python3-pil is not installed"; exit 77; }
tmp=$(mktemp -d /tmp/vp-picture.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

printf '%s\n' '{"op":"start","name":"web","vcpus":1,"smt":"isolate"}' \
    '{"op":"start","name":"db","vcpus":2,"smt":"pack"}' >"$tmp/trace.jsonl"
"$cli" simulate -t "$topo" --housekeeping 7 -q --save-ledger "$tmp/ledger.json" "$tmp/trace.jsonl" >/dev/null
"$cli" topology -t "$topo" --housekeeping 7 --ledger "$tmp/ledger.json" --json >"$tmp/topology.json"
"$cli" topology -t "$topo" --housekeeping 7 --ledger "$tmp/ledger.json" --output "$tmp/host.png"
for f in svg pdf; do
    "$cli" topology -t "$topo" --housekeeping 7 --ledger "$tmp/ledger.json" --output "$tmp/host.$f"
    [ -s "$tmp/host.$f" ] || fail "no $f written"
done
head -c 5 "$tmp/host.pdf" | grep -q '%PDF-' || fail "host.pdf is not a PDF"
grep -q '<svg' "$tmp/host.svg" || fail "host.svg is not SVG"
rc=0
"$cli" topology -t "$topo" --output "$tmp/host.gif" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 1 ] && grep -q 'must end in .png, .svg or .pdf' "$tmp/err" || fail "a .gif output was not refused"

"$py" - "$tmp/host.png" "$tmp/topology.json" <<'PY'
import json, sys
from PIL import Image

img = Image.open(sys.argv[1]).convert("RGB")
doc = json.load(open(sys.argv[2]))
W, H = img.size
px = img.load()

def rgb(h):
    return tuple(int(h[i:i + 2], 16) for i in (1, 3, 5))

# The colours picture.c gives: domains in name order from its palette, then the marks.
palette = ["#1f77b4", "#d62728", "#2ca02c"]
RESERVED, HOUSEKEEPING, FREE = "#404040", "#ffe066", "#f0fff0"
names = sorted({p["domain"] for p in doc["cpus"] if p["domain"]})
colour = {n: rgb(palette[i]) for i, n in enumerate(names)}
housekeeping = {int(c) for c in doc["housekeeping"].split(",") if c}

def expected(p):
    if p["domain"] and p["kind"] == "reserved":
        return rgb(RESERVED), "reserved for " + p["domain"]
    if p["domain"]:
        return colour[p["domain"]], p["domain"]
    if p["cpu"] in housekeeping:
        return rgb(HOUSEKEEPING), "housekeeping"
    return rgb(FREE), "free"

# PU boxes: connected areas of one PU colour, large enough to be a box (the glyphs of a
# reserved PU's text, in its VM's colour, are far smaller).
wanted = {rgb(h) for h in palette + [RESERVED, HOUSEKEEPING, FREE]}
seen = bytearray(W * H)
boxes = []
for y0 in range(H):
    for x0 in range(W):
        c = px[x0, y0]
        if seen[y0 * W + x0] or c not in wanted:
            continue
        stack, n, sx, sy = [(x0, y0)], 0, 0, 0
        seen[y0 * W + x0] = 1
        while stack:
            x, y = stack.pop()
            n += 1; sx += x; sy += y
            for nx, ny in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
                if 0 <= nx < W and 0 <= ny < H and not seen[ny * W + nx] and px[nx, ny] == c:
                    seen[ny * W + nx] = 1
                    stack.append((nx, ny))
        if n >= 300:
            boxes.append((sx / n, sy / n, c))
pus = sorted(doc["cpus"], key=lambda p: p["cpu"])
assert len(boxes) == len(pus), "%d PU boxes in the picture, %d PUs" % (len(boxes), len(pus))
# Columns of two (a core each), left to right; top to bottom inside a column.
boxes.sort(key=lambda b: b[0])
cols = [sorted(boxes[i:i + 2], key=lambda b: b[1]) for i in range(0, len(boxes), 2)]
for col in cols:
    assert abs(col[0][0] - col[1][0]) < 3, "PU boxes not in columns of two: %s" % cols
for p, box in zip(pus, [b for col in cols for b in col]):
    want, who = expected(p)
    assert box[2] == want, "CPU %d is drawn %s, want %s (%s)" % (p["cpu"], box[2], want, who)
print("ok: %d PU boxes in their owners' colours (%s)" % (len(pus), ", ".join(names)))
PY
echo "picture: all checks passed"
