#!/bin/bash
# `make bench-report`: run the seven experiment benches of the talk with
# BENCH_OUT=$OUT/report (each writes NAME.json there), then build one page
# from them with glass-report --experiments, and print where it is and the
# key finding.
#
# A bench that is not in this build, or that exits 77 (a facility or
# feature missing), is shown in the report as "not run: REASON" (its
# SKIPPED line, kept in NAME.notrun); a bench that fails is shown the same
# way with its log, and makes this script exit 1 after the report is
# written.
#
# Environment: OUT (build), REPORT_DIR ($OUT/report), REPORT_BENCHES (a
# subset of the names below, e.g. "lockschemes fstsize"; the others are
# "not selected"), BENCH_QUICK=1 (every bench with tiny parameters).
set -u
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-build}
export OUT GLASSFS_ROOT=$PWD
DIR=${REPORT_DIR:-$OUT/report}
LOGDIR=$OUT/bench-logs
# experiment order: 1 lock schemes, 2 I/O per file, 3 discard, 4 free-space
# tree, 5 metadata on the fast device, 6 fsync, 7 fleet
ALL="lockschemes io-per-file discard fstsize metafast fsync fleet"
SEL=${REPORT_BENCHES:-$ALL}
for b in $SEL; do
	case " $ALL " in *" $b "*) ;; *) echo "bench-report: unknown experiment bench '$b' (one of: $ALL)" >&2; exit 2;; esac
done

# Only our own files are removed: the directory may hold the user's.
mkdir -p "$DIR" "$LOGDIR" || exit 1
for b in $ALL; do rm -f "$DIR/$b.json" "$DIR/$b.notrun" "$DIR/$b"-*.folded; done
rm -f "$DIR/report.html"

stop=0
trap 'stop=1' INT TERM
nfail=0 summary=()
t_all=$(date +%s)
for b in $ALL; do
	f=tests/bench/$b.bench log=$LOGDIR/$b.log
	case " $SEL " in *" $b "*) ;; *)
		echo "not selected (REPORT_BENCHES=$SEL)" >"$DIR/$b.notrun"; continue;;
	esac
	if [ $stop = 1 ]; then
		echo "interrupted before it ran" >"$DIR/$b.notrun"; continue
	fi
	if [ ! -x "$f" ]; then
		echo "$f is not in this build" >"$DIR/$b.notrun"
		summary+=("n/a   $b: not in this build"); continue
	fi
	echo "=== $b ($f${BENCH_QUICK:+, BENCH_QUICK=1})"
	t0=$(date +%s)
	BENCH_OUT=$DIR "$f" 2>&1 </dev/null | (trap '' INT TERM; exec tee "$log")
	rc=${PIPESTATUS[0]}
	dt=$(($(date +%s) - t0))
	case $rc in
	0)	if [ -s "$DIR/$b.json" ]; then summary+=("ok    $b (${dt}s)")
		else
			echo "$b.bench ran but wrote no $b.json (log: $log)" >"$DIR/$b.notrun"
			summary+=("FAIL  $b: no JSON written (${dt}s)"); nfail=$((nfail + 1))
		fi;;
	77)	r=$(grep -m1 '^SKIPPED' "$log" | sed 's/^SKIPPED:* *//')
		echo "${r:-$b.bench skipped itself (log: $log)}" >"$DIR/$b.notrun"
		summary+=("SKIP  $b: ${r:-see $log}");;
	*)	if [ -s "$DIR/$b.json" ]; then
			summary+=("FAIL  $b (rc=$rc, ${dt}s): some runs failed, the figures it has are in the report; log: $log")
		else
			echo "$b.bench failed (rc=$rc); log: $log" >"$DIR/$b.notrun"
			summary+=("FAIL  $b (rc=$rc, ${dt}s) — log: $log")
		fi
		nfail=$((nfail + 1));;
	esac
	echo
done

echo "=== bench-report ($(($(date +%s) - t_all))s)"
printf '%s\n' "${summary[@]}"
"$OUT/bin/glass-report" --experiments "$DIR" -o "$DIR/report.html" ||
	{ echo "bench-report: glass-report --experiments $DIR failed" >&2; exit 1; }
echo "report: $DIR/report.html"
# The key finding: experiment 1's, else the first one that ran.
for b in $ALL; do
	[ -s "$DIR/$b.json" ] || continue
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print("finding (experiment %d): %s" % (d["experiment"], d["finding"]))' "$DIR/$b.json"
	break
done
[ $stop = 0 ] || exit 130
[ $nfail = 0 ]
