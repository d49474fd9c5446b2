#!/bin/sh
# Check (default) or rewrite (--write) the probe table in docs/probes.md
# between <!-- probes:begin --> and <!-- probes:end -->, from fs/probes.d.
set -e
cd "$(dirname "$0")/.."
DOC=docs/probes.md
grep -q '<!-- probes:begin -->' "$DOC" || { echo "$DOC has no <!-- probes:begin --> marker" >&2; exit 1; }
new=$(mktemp); trap 'rm -f "$new"' EXIT
awk -v table="$(tools/probes-doc.sh)" '
	/<!-- probes:begin -->/ { print; print table; skip = 1; next }
	/<!-- probes:end -->/ { skip = 0 }
	!skip' "$DOC" > "$new"
if [ "${1:-}" = --write ]; then cp "$new" "$DOC"; exit 0; fi
if ! cmp -s "$new" "$DOC"; then
	echo "$DOC probe table is stale: run 'make docs-probes'" >&2
	diff -u "$DOC" "$new" | head -20 >&2
	exit 1
fi
