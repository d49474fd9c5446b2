#!/bin/sh
# probes-doc.sh — print the probe table of docs/probes.md (markdown) from fs/probes.d.
# Each probe is documented by the "/* @ when it fires */" comment above it.
# Usage: tools/probes-doc.sh [fs/probes.d]
set -eu
f=${1:-$(dirname "$0")/../fs/probes.d}
[ -r "$f" ] || { echo "probes-doc.sh: cannot read $f" >&2; exit 1; }
echo "| probe | arguments | fires when |"
echo "| --- | --- | --- |"
awk '
/\/\* @ / { c = $0; sub(/.*\/\* @ /, "", c); sub(/ *\*\/.*/, "", c); next }
/^[ \t]*probe[ \t]/ {
	line = $0
	sub(/^[ \t]*probe[ \t]+/, "", line)
	name = line; sub(/\(.*/, "", name)
	args = line; sub(/^[^(]*\(/, "", args); sub(/\);.*/, "", args)
	gsub(/uint64_t /, "u64 ", args); gsub(/int /, "int ", args)
	if (c == "") { printf "probes-doc.sh: probe %s has no \"/* @ ... */\" comment\n", name > "/dev/stderr"; bad = 1 }
	gsub(/\|/, "\\|", c)
	printf "| `glassfs:%s` | %s | %s |\n", name, args, c
	c = ""
}
END { exit bad }' "$f"
