#!/bin/bash
# The README's picture: the flame graph of the last `make demo` run
# (build/demo/offcpu.svg, or DEMO_DIR's), rendered by headless Chromium.
#
# Usage: tools/demo-picture.sh [SVG [PNG]]   (make demo-picture)
set -u
cd "$(dirname "$0")/.." || exit 1
SVG=${1:-${DEMO_DIR:-build/demo}/offcpu.svg}
PNG=${2:-docs/img/demo-flamegraph.png}
[ -s "$SVG" ] || { echo "demo-picture: no $SVG (run make demo first)" >&2; exit 1; }
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome) ||
	{ echo "demo-picture: chromium not installed (apt-get install chromium)" >&2; exit 1; }
read -r w h < <(sed -n 's/.*<svg [^>]*width="\([0-9.]*\)" height="\([0-9.]*\)".*/\1 \2/p' "$SVG" | head -1)
T=$(mktemp -d /tmp/glass-picture.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
cp "$SVG" "$T/g.svg"
timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars \
	--force-device-scale-factor=1 --window-size="${w%.*},${h%.*}" \
	--screenshot="$T/g.png" "file://$T/g.svg" >"$T/chrome.log" 2>&1 && [ -s "$T/g.png" ] ||
	{ echo "demo-picture: chromium failed: $(tail -2 "$T/chrome.log")" >&2; exit 1; }
mkdir -p "$(dirname "$PNG")" && cp "$T/g.png" "$PNG" && echo "$PNG"
