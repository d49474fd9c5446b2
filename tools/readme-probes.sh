#!/bin/sh
# Check (default) or rewrite (--write) the probe table in README.md between
# <!-- probes:begin --> and <!-- probes:end -->, from fs/base/probes.d.
set -e
cd "$(dirname "$0")/.."
new=$(mktemp); trap 'rm -f "$new"' EXIT
awk -v table="$(tools/probes-doc.sh)" '
	/<!-- probes:begin -->/ { print; print table; skip = 1; next }
	/<!-- probes:end -->/ { skip = 0 }
	!skip' README.md > "$new"
if [ "${1:-}" = --write ]; then cp "$new" README.md; exit 0; fi
if ! cmp -s "$new" README.md; then
	echo "README.md probe table is stale: run 'make readme-probes'" >&2
	diff -u README.md "$new" | head -20 >&2
	exit 1
fi
