#!/bin/bash
# Pictures of a `make bench-report` run (docs/img/, for docs/benchmarks.md): the key table
# (the summary of every experiment and experiment 1's table) and one flame
# graph (experiment 1's worst configuration), cut out of the report page
# and rendered by headless Chromium.
#
# Usage: tests/bench/pictures.sh [REPORT_DIR [IMG_DIR]]
#        (defaults build/report and docs/img; `make bench-report-pictures`)
set -u
cd "$(dirname "$0")/../.." || exit 1
DIR=${1:-${OUT:-build}/report}
IMG=${2:-docs/img}
PAGE=$DIR/report.html
[ -s "$PAGE" ] || { echo "pictures: no $PAGE (run make bench-report first)" >&2; exit 1; }
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome) ||
	{ echo "pictures: chromium not installed (apt-get install chromium)" >&2; exit 1; }
mkdir -p "$IMG" || exit 1
T=$(mktemp -d /tmp/glass-pictures.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT

# Cut the pieces out of the page (it is well-formed XML); each piece becomes
# a small page with the report's own style.  Prints "WIDTH HEIGHT" guesses.
python3 - "$PAGE" "$T" <<'PY' || exit 1
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
out = sys.argv[2]
style = re.search(r"<style>.*?</style>", page, re.S).group(0)
def write(name, body, w, h):
    open("%s/%s.html" % (out, name), "w", encoding="utf-8").write(
        '<!DOCTYPE html><html><head><meta charset="utf-8"/>%s'
        '<style>body { margin: 12px; background: white; }</style></head><body>%s</body></html>' % (style, body))
    open("%s/%s.size" % (out, name), "w").write("%d %d\n" % (w, h))
summary = re.search(r'<table class="summary">.*?</table>', page, re.S)
exp1 = re.search(r'<section class="exp" id="exp1">(.*?)</section>', page, re.S)
body = ""
rows = 0
if summary:
    body += "<h2>The talk's experiments, re-run on glassfs</h2>" + summary.group(0)
    rows += 2 * summary.group(0).count("<tr>") + 3
if exp1:
    sec = exp1.group(1)
    h2 = re.search(r"<h2>.*?</h2>", sec, re.S).group(0)
    finding = re.search(r'<p class="finding">.*?</p>', sec, re.S)
    table = re.search(r'<table class="exp">.*?</table>', sec, re.S)
    if table:
        body += h2 + (finding.group(0) if finding else "") + table.group(0)
        rows += table.group(0).count("<tr>") + 8
if not body:
    sys.exit("pictures: the page has no summary and no experiment 1 table")
write("table", body, 1100, 80 + 30 * rows)
fg = re.search(r'<section id="exp1-fg0">.*?(<svg .*?</svg>)', page, re.S)
if fg:
    svg = fg.group(1)
    h = re.search(r'height="([0-9.]+)"', svg)
    w = re.search(r'width="([0-9.]+)"', svg)
    write("flamegraph", svg, int(float(w.group(1))) + 30 if w else 1230,
          int(float(h.group(1))) + 30 if h else 800)
PY

shot() {	# NAME OUTPUT.png
	local w h
	read -r w h <"$T/$1.size"
	timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars \
		--force-device-scale-factor=1 --window-size="$w,$h" \
		--screenshot="$2" "file://$T/$1.html" >"$T/chrome.log" 2>&1 ||
		{ echo "pictures: chromium failed: $(tail -2 "$T/chrome.log")" >&2; return 1; }
	# the heights are generous guesses: cut the blank rows at the bottom
	python3 - "$2" <<'TRIM' || { echo "pictures: cannot trim $2" >&2; return 1; }
import struct, sys, zlib
path = sys.argv[1]
data = open(path, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, chunks = 8, []
while pos < len(data):
    n, t = struct.unpack(">I4s", data[pos:pos + 8])
    chunks.append((t, data[pos + 8:pos + 8 + n]))
    pos += 12 + n
w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
bpp = {2: 3, 6: 4}.get(ctype)
if depth != 8 or not bpp or interlace:
    sys.exit(0)			# not what Chromium writes: leave it
raw = zlib.decompress(b"".join(c for t, c in chunks if t == b"IDAT"))
stride, rows, prev = w * bpp, [], bytearray(w * bpp)
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(bytes(line))
    prev = line
bottom = h
while bottom > 1 and rows[bottom - 1] == rows[-1]:
    bottom -= 1
bottom = min(h, bottom + 12)
if bottom == h:
    sys.exit(0)
def chunk(t, c):
    return struct.pack(">I", len(c)) + t + c + struct.pack(">I", zlib.crc32(t + c) & 0xffffffff)
ihdr = struct.pack(">IIBBBBB", w, bottom, 8, ctype, 0, 0, 0)
body = zlib.compress(b"".join(b"\x00" + r for r in rows[:bottom]), 9)
open(path, "wb").write(data[:8] + chunk(b"IHDR", ihdr) + chunk(b"IDAT", body) + chunk(b"IEND", b""))
TRIM
	echo "picture: $2"
}
shot table "$IMG/bench-report-table.png" || exit 1
if [ -s "$T/flamegraph.html" ]; then
	shot flamegraph "$IMG/bench-report-flamegraph.png" || exit 1
else
	echo "pictures: experiment 1 has no flame graph in $PAGE (BPF tools not built?)" >&2
fi
