#!/bin/bash
# The README's pictures from the last `make demo` run (build/demo, or
# DEMO_DIR's), rendered by headless Chromium:
#   offcpu.svg -> docs/img/demo-flamegraph.png  (the demo's finding)
#   wall.svg   -> docs/img/demo-wall.png        (the tour's wall-clock graph
#                                                of the daemon)
#
# Usage: tools/demo-picture.sh [SVG PNG]   (make demo-picture: both)
set -u
cd "$(dirname "$0")/.." || exit 1
DIR=${DEMO_DIR:-build/demo}
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome) ||
	{ echo "demo-picture: chromium not installed (apt-get install chromium)" >&2; exit 1; }
T=$(mktemp -d /tmp/glass-picture.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT

# picture SVG PNG: the SVG at its own size, as PNG
picture() {
	local svg=$1 png=$2 w h
	[ -s "$svg" ] || { echo "demo-picture: no $svg (run make demo first)" >&2; return 1; }
	read -r w h < <(sed -n 's/.*<svg [^>]*width="\([0-9.]*\)" height="\([0-9.]*\)".*/\1 \2/p' "$svg" | head -1)
	cp "$svg" "$T/g.svg" && rm -f "$T/g.png"
	timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars \
		--force-device-scale-factor=1 --window-size="${w%.*},${h%.*}" \
		--screenshot="$T/g.png" "file://$T/g.svg" >"$T/chrome.log" 2>&1 && [ -s "$T/g.png" ] ||
		{ echo "demo-picture: chromium failed on $svg: $(tail -2 "$T/chrome.log")" >&2; return 1; }
	mkdir -p "$(dirname "$png")" && cp "$T/g.png" "$png" && echo "$png"
}

if [ $# -ge 1 ]; then
	picture "$1" "${2:-docs/img/demo-flamegraph.png}"
else
	picture "$DIR/offcpu.svg" docs/img/demo-flamegraph.png &&
	picture "$DIR/wall.svg" docs/img/demo-wall.png
fi
