#!/bin/bash
# The benchmark runner (`make bench`).  Runs every executable
# tests/bench/*.bench in name order, or only those whose name contains one
# of the arguments, lets each print its own tables, and closes with one
# line per benchmark and a summary.
#
# A .bench exits 0 when every run it could make succeeded, 77 when a
# facility it needs is absent (it says which), anything else on failure.
# Benchmarks are never pass/fail on speed: targets are printed, not judged
# by the exit code.
#
# Usage: tests/bench/run.sh [FILTER...]      (OUT=build by default)
set -u
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-build}
export OUT GLASSFS_ROOT=$PWD
LOGDIR=$OUT/bench-logs
mkdir -p "$LOGDIR"

benches=()
for f in tests/bench/*.bench; do
	[ -x "$f" ] || continue
	if [ $# -gt 0 ]; then
		m=0; for p in "$@"; do case $f in *"$p"*) m=1;; esac; done
		[ $m = 1 ] || continue
	fi
	benches+=("$f")
done
if [ ${#benches[@]} = 0 ]; then
	echo "bench: no benchmark matches: $*" >&2
	exit 1
fi

# Ctrl-C: let the running bench clean up (it traps INT), then stop.
stop=0
trap 'stop=1' INT TERM

summary=()
nfail=0 nskip=0 nok=0
t_all=$(date +%s)
for f in "${benches[@]}"; do
	name=$(basename "$f" .bench)
	log=$LOGDIR/$name.log
	echo "=== $name ($f)"
	t0=$(date +%s)
	# tee keeps a copy (and ignores Ctrl-C, so the bench can still print
	# while it cleans up); PIPESTATUS gives the bench's own status.
	"$f" 2>&1 </dev/null | (trap '' INT TERM; exec tee "$log")
	rc=${PIPESTATUS[0]}
	dt=$(($(date +%s) - t0))
	case $rc in
	0)	nok=$((nok + 1)); summary+=("ok    $name (${dt}s)");;
	77)	nskip=$((nskip + 1))
		summary+=("SKIP  $name (${dt}s): $(grep -m1 '^SKIPPED' "$log" || tail -1 "$log")");;
	*)	nfail=$((nfail + 1)); summary+=("FAIL  $name (rc=$rc, ${dt}s) — log: $log");;
	esac
	echo
	[ $stop = 1 ] && { summary+=("stopped by signal after $name"); break; }
done

echo "=== bench summary ($(($(date +%s) - t_all))s)"
printf '%s\n' "${summary[@]}"
echo "$nok ok, $nfail failed, $nskip skipped; logs in $LOGDIR, tables in $OUT/bench-results/"
[ $nfail = 0 ] && [ $stop = 0 ]
