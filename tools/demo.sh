#!/bin/bash
# make demo — the talk's central experiment, end to end, on one machine:
# mkfs a glassfs image, mount it, start glass-aggd (SQLite) and a
# glass-agent, run fs_mark zero-length creates with many threads (one
# directory each) while glass-offcputime (with wakeup stacks) and glass-lockstat
# watch the daemon, then write a flame graph and an HTML report and print
# the one-line finding.  Everything it starts is stopped and unmounted on
# exit, also on Ctrl-C; a second run starts from scratch.
#
# Environment: DEMO_DIR (default build/demo), THREADS (16), FILES (files per
# thread, 2000), LOCKING (node), COWLOCK (path: every change write-locks
# its path from the root, as the talk's Btrfs did, so the root contends;
# leaf: glassfs's default, write locks only where a change may modify),
# SECONDS_PROFILE (profile window, 12).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$ROOT/build/bin
DIR=${DEMO_DIR:-$ROOT/build/demo}
THREADS=${THREADS:-16}
FILES=${FILES:-2000}
LOCKING=${LOCKING:-node}
COWLOCK=${COWLOCK:-path}
OPTS="locking=$LOCKING,cowlock=$COWLOCK"
PROF_S=${SECONDS_PROFILE:-12}

die() { echo "demo: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (FUSE mount and BPF need it)"
[ -c /dev/fuse ] || die "no /dev/fuse on this machine"
[ -e /sys/kernel/btf/vmlinux ] || die "kernel has no BTF (/sys/kernel/btf/vmlinux)"

MNT=$DIR/mnt IMG=$DIR/glassfs.img RUN=$DIR/run
pids=()
# Is $1 mounted?  /proc/mounts, not mountpoint(1): a FUSE mount whose
# daemon died fails stat() and looks unmounted to mountpoint.
mounted() { grep -qs " $1 fuse" /proc/mounts; }
cleanup() {
	trap - EXIT INT TERM
	# Unmount first: the daemon makes its final commit and exits by
	# itself.  Killing it first (and kill -9 after 0.3 s) could cut that
	# commit short and leave a dead mount behind.
	if mounted "$MNT"; then
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
	fi
	[ -n "${FSPID:-}" ] && for _ in $(seq 300); do kill -0 "$FSPID" 2>/dev/null || break; sleep 0.1; done
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	sleep 0.3
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	mounted "$MNT" && umount -l "$MNT" 2>/dev/null
	return 0
}
trap cleanup EXIT
trap 'echo "demo: interrupted" >&2; exit 130' INT TERM

step() { printf '\n==> %s\n' "$*"; }

# A previous run may have been killed hard: unmount what it left.
mounted "$MNT" && { fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"; }
rm -rf "$DIR"; mkdir -p "$MNT" "$RUN" "$DIR/spool"

step "mkfs.glassfs (2 GiB image) and mount with $OPTS"
"$BIN/mkfs.glassfs" -f -L demo -s 2G "$IMG" || die "mkfs.glassfs failed"
"$BIN/glassfs" "$IMG" "$MNT" -f -o "$OPTS" 2>"$DIR/glassfs.log" &
FSPID=$!; pids+=("$FSPID")
for _ in $(seq 100); do mountpoint -q "$MNT" && break; sleep 0.1; done
mountpoint -q "$MNT" || { cat "$DIR/glassfs.log" >&2; die "glassfs did not mount"; }

step "glass-aggd (SQLite) and a glass-agent shipping the daemon's off-CPU stacks"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$DIR/token"
"$BIN/glass-aggd" --listen 127.0.0.1:0 --port-file "$DIR/port" \
	--store "sqlite:$DIR/agg.db" --tokens "$DIR/token" --ui "$ROOT/dashboards/web" \
	2>"$DIR/aggd.log" &
pids+=($!)
for _ in $(seq 50); do [ -s "$DIR/port" ] && break; sleep 0.1; done
[ -s "$DIR/port" ] || die "glass-aggd did not start: $(tail -3 "$DIR/aggd.log")"
PORT=$(cat "$DIR/port")
PATH=$BIN:$PATH "$BIN/glass-agent" --server "http://127.0.0.1:$PORT" --token-file "$DIR/token" \
	--interval 5 --spool "$DIR/spool" --label demo=fsmark --label "locking=$LOCKING" --label "cowlock=$COWLOCK" \
	--units us --profiler-cmd "$BIN/glass-offcputime -f --no-idle -p $FSPID -d {interval}" \
	2>"$DIR/agent.log" &
pids+=($!)

step "fs_mark: $THREADS threads x $FILES zero-length files in per-thread directories, profiled for ${PROF_S}s"
"$BIN/glass-offcputime" -p "$FSPID" -f --no-idle -d "$PROF_S" >"$RUN/offcpu.folded" 2>"$DIR/offcpu.err" &
OFF=$!
"$BIN/glass-offcputime" -p "$FSPID" -f --no-idle --wakeup -d "$PROF_S" >"$RUN/wakeup.folded" 2>"$DIR/wakeup.err" &
WAK=$!
"$BIN/glass-lockstat" -p "$FSPID" -d "$PROF_S" -j >"$RUN/lockstat.json" 2>"$DIR/lockstat.err" &
LCK=$!
"$BIN/glass-commitlat" -p "$FSPID" -d "$PROF_S" -j >"$RUN/commitlat.json" 2>"$DIR/commitlat.err" &
CML=$!
pids+=("$OFF" "$WAK" "$LCK" "$CML")
# Wait until every tracer has attached (each announces "Tracing ..." on
# stderr once its programs are live): loading four BPF objects can take
# seconds on a loaded machine, and a tracer that attaches late misses the
# workload.
for err in offcpu wakeup lockstat commitlat; do
	for _ in $(seq 600); do grep -q '^Tracing' "$DIR/$err.err" 2>/dev/null && break; sleep 0.1; done
	grep -q '^Tracing' "$DIR/$err.err" 2>/dev/null ||
		die "the $err tracer did not attach in 60 s: $(grep -v '^libbpf' "$DIR/$err.err" | tail -3)"
done
# One directory per thread, as in the talk: creates in one directory are
# serialised by the kernel's lock on that directory before they reach any
# filesystem, so only separate directories show the B-tree's own locks.
dirs=(); for t in $(seq "$THREADS"); do mkdir -p "$MNT/bench/t$t"; dirs+=(-d "$MNT/bench/t$t"); done
t0=$(date +%s.%N)
# fs_mark writes fs_log.txt into its working directory: keep it in $DIR.
(cd "$DIR" && fs_mark "${dirs[@]}" -s 0 -n "$FILES" -S 0 -L 1 -k) >"$DIR/fsmark.log" 2>&1 ||
	{ tail -5 "$DIR/fsmark.log" >&2; die "fs_mark failed"; }
t1=$(date +%s.%N)
rate=$(awk '/^ *[0-9]+ +[0-9]+ +[0-9]+/ {r=$4} END {print r}' "$DIR/fsmark.log")
wait "$OFF" "$WAK" "$LCK" "$CML"
sleep 6	# one more agent window

step "flame graphs and the report"
"$BIN/glass-flamegraph" --title "glassfs daemon off-CPU: fs_mark creates, $THREADS threads, $OPTS" \
	--colors offcpu --countname us "$RUN/offcpu.folded" >"$DIR/offcpu.svg" || die "glass-flamegraph failed"
cat >"$RUN/meta.json" <<JSON
{"title": "glassfs: fs_mark zero-length creates, off-CPU",
 "host": "$(hostname)", "kernel": "$(uname -r)",
 "mount_options": "$OPTS", "workload": "fs_mark -s 0 -S 0 -t $THREADS -n $FILES (one directory per thread)",
 "duration_s": $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}'), "files_per_s": "${rate:-?}"}
JSON
"$BIN/glass-report" "$RUN" -o "$DIR/report.html" || die "glass-report failed"

# The finding: of the daemon's off-CPU time inside filesystem operations
# (stacks through fsops_*), the share spent waiting for B-tree locks
# (glock_lock under btree_*), and the root locks' share of all B-tree lock
# wait time (root, node and group classes) from glass-lockstat.
total=$(awk '/;fsops_/ {s += $NF} END {print s + 0}' "$RUN/offcpu.folded")
locks=$(awk '/;fsops_/ && /;btree_[a-z_]*;.*glock_lock/ {s += $NF} END {print s + 0}' "$RUN/offcpu.folded")
rootw=$(python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
cl=d.get("classes",[])
bt=sum(c.get("wait_ns",0) for c in cl if c.get("class") in ("root","node","group"))
rt=sum(c.get("wait_ns",0) for c in cl if c.get("class")=="root")
print(round(100.0*rt/bt) if bt else -1)' "$RUN/lockstat.json" 2>/dev/null || echo -1)
windows=$(curl -s "http://127.0.0.1:$PORT/api/v1/hosts" | python3 -c 'import json,sys; print(sum(h.get("windows",0) for h in json.load(sys.stdin)))' 2>/dev/null || echo 0)

step "result"
echo "fs_mark: ${rate:-?} files/s ($THREADS threads, a directory each, $OPTS)"
if [ "$total" -gt 0 ]; then
	awk -v l="$locks" -v t="$total" -v r="$rootw" 'BEGIN {
		printf "finding: %.0f%% of the daemon'"'"'s off-CPU time inside filesystem operations waits on B-tree locks", 100 * l / t;
		if (r >= 0) printf "; %d%% of B-tree lock wait time is on tree root locks (glass-lockstat)", r;
		printf "\n" }'
else
	echo "finding: no off-CPU time inside filesystem operations was captured (see $DIR/offcpu.err)"
fi
echo "aggregator: $windows window(s) stored from the agent (dashboards: http://127.0.0.1:$PORT/ while it runs)"
echo "flame graph: $DIR/offcpu.svg"
echo "report:      $DIR/report.html"
