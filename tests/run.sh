#!/bin/bash
# The test runner.  Runs every test program, in area order, and closes with
# one line: "N passed, N failed, N skipped".
#
# A test program is either a compiled unit test under $OUT/test/ or an
# executable tests/AREA/*.test script.  Its protocol (automake-like):
#   - print "PASS: name", "FAIL: name: why" or "SKIP: name: why" per case;
#   - exit 0 when nothing failed, 77 when the whole file is skipped (say why
#     on stderr), anything else on failure.
# A file that prints no case lines counts as one case, judged by exit code.
#
# Usage: tests/run.sh [FILTER...]   run only tests whose path contains FILTER
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-build}
LOGDIR=$OUT/test-logs
mkdir -p "$LOGDIR"
export OUT GLASSFS_ROOT=$PWD
# every fsync that reuses an inode's kept capture is checked against a
# capture reading every item (fs/items/log.c, check_reuse): a missed
# log_note_extent aborts the engine where it happens
export GLASSFS_LOG_VERIFY=1

AREAS="unit tools aggregator integration bpf browser"
files=()
for a in $AREAS; do
	for f in $(ls "$OUT/test/$a"/* 2>/dev/null | sort) \
		 $(ls tests/"$a"/*.test 2>/dev/null | sort); do
		[ -x "$f" ] || continue
		if [ $# -gt 0 ]; then
			m=0; for p in "$@"; do case $f in *"$p"*) m=1;; esac; done
			[ $m = 1 ] || continue
		fi
		files+=("$f")
	done
done

pass=0 fail=0 skip=0
failed_names=()
start_all=$(date +%s)
for f in "${files[@]}"; do
	name=${f#"$OUT"/test/}; name=${name#tests/}
	log=$LOGDIR/$(echo "$name" | tr '/' '_').log
	t0=$(date +%s)
	timeout -k 10 ${TEST_TIMEOUT:-900} "$f" >"$log" 2>&1 </dev/null
	rc=$?
	t1=$(date +%s)
	p=$(grep -c '^PASS: ' "$log"); fl=$(grep -c '^FAIL: ' "$log"); s=$(grep -c '^SKIP: ' "$log")
	if [ $rc = 77 ]; then
		[ $((p + fl + s)) = 0 ] && s=1
		echo "SKIP  $name ($(grep -v '^\(PASS\|FAIL\|SKIP\): ' "$log" | tail -1))"
	elif [ $rc != 0 ] && [ "$fl" = 0 ]; then
		fl=1
	elif [ $rc = 0 ] && [ $((p + fl + s)) = 0 ]; then
		p=1
	fi
	pass=$((pass + p)); fail=$((fail + fl)); skip=$((skip + s))
	if [ "$fl" != 0 ]; then
		failed_names+=("$name")
		echo "FAIL  $name (rc=$rc, $((t1 - t0))s) — log: $log"
		grep '^FAIL: ' "$log" | head -20 | sed 's/^/      /'
		tail -15 "$log" | sed 's/^/    | /'
	elif [ $rc != 77 ]; then
		if [ "$s" != 0 ]; then sk=", $s skipped"; else sk=; fi
		echo "ok    $name ($p passed$sk, $((t1 - t0))s)"
	fi
	grep '^SKIP: ' "$log" | sed 's/^/      /'
done
echo "total time $(( $(date +%s) - start_all ))s"
[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail = 0 ] && [ $((pass + skip)) -gt 0 ]
