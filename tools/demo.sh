#!/bin/bash
# make demo — the talk's central experiment, end to end, on one machine:
# mkfs a glassfs image, mount it, start glass-aggd (SQLite) and a
# glass-agent, run fs_mark zero-length creates with many threads (one
# directory each) for the whole profile window while glass-offcputime (with
# wakeup stacks), glass-lockstat, glass-commitlat and glass-profile --wall
# watch the daemon, then draw the flame graph of the daemon's filesystem
# operations and its wall-clock graph, write an HTML report and print the
# one-line finding.  Everything it starts is stopped
# and unmounted on exit, also on Ctrl-C; a second run starts from scratch.
#
# It runs from any checkout path: the mount point is a short temporary
# directory (/tmp/glassfs-demo.XXXXXX), because fs_mark refuses directory
# names of 40 bytes or more; the image, logs and results go to DEMO_DIR.
#
# Environment: DEMO_DIR (default build/demo), THREADS (16), FILES (files per
# thread and fs_mark round, 500), LOCKING (node), COWLOCK (path: every
# change write-locks its path from the root, as the talk's Btrfs did, so
# the root contends; leaf: glassfs's default, write locks only where a
# change may modify), COMMIT (commit interval of the demo mount, 2 s, so
# commits fall in the window), SECONDS_PROFILE (profile window, 10: fs_mark
# rounds run until it is over), DEMO_SERVE=1 (keep glass-aggd serving the
# dashboards at the end until Ctrl-C).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-build}
case $OUT in /*) ;; *) OUT=$ROOT/$OUT;; esac
BIN=$OUT/bin
DIR=${DEMO_DIR:-$ROOT/build/demo}
case $DIR in /*) ;; *) DIR=$PWD/$DIR;; esac
THREADS=${THREADS:-16}
FILES=${FILES:-500}
LOCKING=${LOCKING:-node}
COWLOCK=${COWLOCK:-path}
COMMIT=${COMMIT:-2}
OPTS="locking=$LOCKING,cowlock=$COWLOCK,commit=$COMMIT"
PROF_S=${SECONDS_PROFILE:-10}

die() { echo "demo: $*" >&2; exit 1; }
# What a failed step said: the lines before a usage text (fs_mark prints
# its reason, then its whole usage), else the last lines.
why() {
	local w
	w=$(awk '/^Usage:|^usage:/ {exit} {print}' "$1" 2>/dev/null | grep -v '^libbpf' | tail -8)
	[ -n "$w" ] || w=$(tail -5 "$1" 2>/dev/null)
	echo "$w" >&2
}
[ "$(id -u)" = 0 ] || die "run as root (FUSE mount and BPF need it)"
[ -c /dev/fuse ] || die "no /dev/fuse on this machine"
[ -e /sys/kernel/btf/vmlinux ] || die "kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v fs_mark >/dev/null || die "fs_mark is not installed (Debian: apt-get install fsmark)"
for b in mkfs.glassfs glassfs glass-aggd glass-agent glass-offcputime glass-lockstat \
	 glass-commitlat glass-profile glass-flamegraph glass-report; do
	[ -x "$BIN/$b" ] || die "$BIN/$b is missing: run make first"
done

IMG=$DIR/glassfs.img RUN=$DIR/run
pids=()
# Is $1 mounted?  /proc/mounts, not mountpoint(1): a FUSE mount whose
# daemon died fails stat() and looks unmounted to mountpoint.
mounted() { grep -qs " $1 fuse" /proc/mounts; }
unmount() { fusermount3 -u "$1" 2>/dev/null || umount -l "$1" 2>/dev/null; }
# Stop pid $1 with signal $2 and wait up to $3 tenths of a second for it.
stop() {
	kill "-$2" "$1" 2>/dev/null || return 0
	for _ in $(seq "$3"); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	wait "$1" 2>/dev/null
}
cleanup() {
	trap - EXIT INT TERM
	# The agent first, while glass-aggd still runs: it ships the window it
	# is in and whatever it spooled before it exits.
	[ -n "${AGENT:-}" ] && stop "$AGENT" TERM 100
	# Unmount next: the daemon makes its final commit and exits by
	# itself.  Killing it first (and kill -9 after 0.3 s) could cut that
	# commit short and leave a dead mount behind.
	if [ -n "${MNT:-}" ] && mounted "$MNT"; then unmount "$MNT"; fi
	[ -n "${FSPID:-}" ] && for _ in $(seq 300); do kill -0 "$FSPID" 2>/dev/null || break; sleep 0.1; done
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	sleep 0.3
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	if [ -n "${MNT:-}" ]; then
		mounted "$MNT" && umount -l "$MNT" 2>/dev/null
		rmdir "$MNT" 2>/dev/null
		rm -f "$DIR/mountpoint"
	fi
	return 0
}
trap cleanup EXIT
trap 'echo "demo: interrupted" >&2; exit 130' INT TERM

step() { printf '\n==> %s\n' "$*"; }

# A previous run may have been killed hard: unmount what it left.
if [ -s "$DIR/mountpoint" ]; then
	old=$(cat "$DIR/mountpoint")
	mounted "$old" && unmount "$old"
	rmdir "$old" 2>/dev/null
fi
rm -rf "$DIR"; mkdir -p "$RUN" "$DIR/spool" || die "cannot create $DIR"
MNT=$(mktemp -d /tmp/glassfs-demo.XXXXXX) || die "cannot create a mount point in /tmp"
echo "$MNT" >"$DIR/mountpoint"

step "mkfs.glassfs (2 GiB image) and mount on $MNT with $OPTS"
"$BIN/mkfs.glassfs" -f -L demo -s 2G "$IMG" >"$DIR/mkfs.log" 2>&1 || { why "$DIR/mkfs.log"; die "mkfs.glassfs failed"; }
"$BIN/glassfs" "$IMG" "$MNT" -f -o "$OPTS" 2>"$DIR/glassfs.log" &
FSPID=$!; pids+=("$FSPID")
for _ in $(seq 100); do mounted "$MNT" && break; kill -0 "$FSPID" 2>/dev/null || break; sleep 0.1; done
mounted "$MNT" || { why "$DIR/glassfs.log"; die "glassfs did not mount"; }

step "glass-aggd (SQLite) and a glass-agent shipping the daemon's off-CPU stacks, lock waits and commit latency"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$DIR/token"
"$BIN/glass-aggd" --listen 127.0.0.1:0 --port-file "$DIR/port" \
	--store "sqlite:$DIR/agg.db" --tokens "$DIR/token" --ui "$ROOT/dashboards/web" \
	2>"$DIR/aggd.log" &
AGGD=$!; pids+=("$AGGD")
for _ in $(seq 50); do [ -s "$DIR/port" ] && break; sleep 0.1; done
[ -s "$DIR/port" ] || { why "$DIR/aggd.log"; die "glass-aggd did not start"; }
PORT=$(cat "$DIR/port")
PATH=$BIN:$PATH "$BIN/glass-agent" --server "http://127.0.0.1:$PORT" --token-file "$DIR/token" \
	--interval 5 --spool "$DIR/spool" --label demo=fsmark --label "locking=$LOCKING" --label "cowlock=$COWLOCK" \
	--mount "$MNT" 2>"$DIR/agent.log" &
AGENT=$!; pids+=("$AGENT")

step "fs_mark: $THREADS threads, a directory each, zero-length files in rounds of $FILES per thread for ${PROF_S}s, profiled"
# The tracers run until the workload ends (SIGINT makes them print), so
# the profile window is the workload, not idle time after it.
"$BIN/glass-offcputime" -p "$FSPID" -f --no-idle >"$RUN/offcpu-all.folded" 2>"$DIR/offcpu.err" &
OFF=$!
"$BIN/glass-offcputime" -p "$FSPID" -f --no-idle --wakeup >"$RUN/wakeup.folded" 2>"$DIR/wakeup.err" &
WAK=$!
"$BIN/glass-lockstat" -p "$FSPID" -j >"$RUN/lockstat.json" 2>"$DIR/lockstat.err" &
LCK=$!
"$BIN/glass-commitlat" -p "$FSPID" -j >"$RUN/commitlat.json" 2>"$DIR/commitlat.err" &
CML=$!
# Where every thread's wall-clock time goes: on-CPU samples and off-CPU
# blocks in one profile (wall.svg; glass-report tables it per thread group).
"$BIN/glass-profile" -p "$FSPID" --wall -f >"$RUN/wall.folded" 2>"$DIR/wall.err" &
WALL=$!
pids+=("$OFF" "$WAK" "$LCK" "$CML" "$WALL")
# Wait until every tracer has attached (each announces "Tracing ..." on
# stderr once its programs are live): loading four BPF objects can take
# seconds on a loaded machine, and a tracer that attaches late misses the
# workload.
for err in offcpu wakeup lockstat commitlat wall; do
	for _ in $(seq 600); do grep -q '^Tracing' "$DIR/$err.err" 2>/dev/null && break; sleep 0.1; done
	grep -q '^Tracing' "$DIR/$err.err" 2>/dev/null ||
		{ why "$DIR/$err.err"; die "the $err tracer did not attach in 60 s"; }
done
# One directory per thread, as in the talk: creates in one directory are
# serialised by the kernel's lock on that directory before they reach any
# filesystem, so only separate directories show the B-tree's own locks.
dirs=(); for t in $(seq "$THREADS"); do mkdir -p "$MNT/t$t" || die "mkdir $MNT/t$t failed"; dirs+=(-d "$MNT/t$t"); done
t0=$(date +%s.%N); end=$(awk -v a="$t0" -v s="$PROF_S" 'BEGIN {printf "%d", a + s}')
rounds=0
: >"$DIR/fsmark.log"
# fs_mark writes fs_log.txt into its working directory: keep it in $DIR.
while :; do
	(cd "$DIR" && fs_mark "${dirs[@]}" -s 0 -n "$FILES" -S 0 -L 1 -k) >"$DIR/fsmark.round" 2>&1 ||
		{ why "$DIR/fsmark.round"; die "fs_mark failed (round $((rounds + 1)); its output: $DIR/fsmark.round)"; }
	cat "$DIR/fsmark.round" >>"$DIR/fsmark.log"
	rounds=$((rounds + 1))
	[ "$(date +%s)" -lt "$end" ] || break
done
t1=$(date +%s.%N)
for p in "$OFF" "$WAK" "$LCK" "$CML" "$WALL"; do stop "$p" INT 300; done
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')
nfiles=$((rounds * THREADS * FILES))
rate=$(awk -v n="$nfiles" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f", n / (b - a)}')

step "flame graphs and the report"
# The graph of the finding: the daemon's off-CPU time inside filesystem
# operations (stacks through fsops_*).  The service threads (commit,
# cleaner, discard, FUSE main loop) sleep for most of the window and would
# fill most of a whole-daemon graph; they are drawn apart.
grep ';fsops_' "$RUN/offcpu-all.folded" >"$RUN/offcpu.folded"
grep -v ';fsops_' "$RUN/offcpu-all.folded" >"$RUN/offcpu-service.folded"
[ -s "$RUN/offcpu.folded" ] || { why "$DIR/offcpu.err"; die "no off-CPU time inside filesystem operations was captured"; }
"$BIN/glass-flamegraph" --title "glassfs filesystem operations, off-CPU: fs_mark creates, $THREADS threads, $OPTS" \
	--colors offcpu --countname us "$RUN/offcpu.folded" >"$DIR/offcpu.svg" 2>"$DIR/flamegraph.err" ||
	{ why "$DIR/flamegraph.err"; die "glass-flamegraph failed"; }
if [ -s "$RUN/offcpu-service.folded" ]; then
	"$BIN/glass-flamegraph" --title "glassfs service threads and idle waits, off-CPU (same run)" \
		--colors offcpu --countname us "$RUN/offcpu-service.folded" >"$DIR/offcpu-service.svg" 2>"$DIR/flamegraph.err" ||
		{ why "$DIR/flamegraph.err"; die "glass-flamegraph failed"; }
fi

# The daemon's wall-clock graph: each thread's window split into [oncpu]
# (warm) and [offcpu] (blue) -- the README tour's picture (make demo-picture).
if [ -s "$RUN/wall.folded" ]; then
	"$BIN/glass-flamegraph" --countname us --title "glassfs daemon: wall-clock time, fs_mark creates, $THREADS threads, $OPTS" \
		"$RUN/wall.folded" >"$DIR/wall.svg" 2>"$DIR/flamegraph.err" ||
		{ why "$DIR/flamegraph.err"; die "glass-flamegraph failed on the wall-clock profile"; }
fi

# The finding: of the daemon's off-CPU time inside filesystem operations,
# the share spent waiting for B-tree locks (glock_lock under btree_*), and
# the root locks' share of all B-tree lock wait time (root, node and group
# classes) from glass-lockstat; absolute times beside the shares.
read -r total locks < <(awk '{ t += $NF } /;btree_[a-z_]*;.*glock_lock/ { l += $NF } END { print t + 0, l + 0 }' "$RUN/offcpu.folded")
read -r rootw btw < <(python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
cl=d.get("classes",[])
bt=sum(c.get("wait_ns",0) for c in cl if c.get("class") in ("root","node","group"))
rt=sum(c.get("wait_ns",0) for c in cl if c.get("class")=="root")
print(rt, bt)' "$RUN/lockstat.json" 2>/dev/null || echo "0 0")
finding=$(awk -v l="$locks" -v t="$total" -v r="$rootw" -v b="$btw" -v s="$secs" -v th="$THREADS" 'BEGIN {
	printf "%.0f%% of the daemon'"'"'s off-CPU time inside filesystem operations waits on B-tree locks (%.2f s of %.2f s, %d threads, %s s)", 100 * l / t, l / 1e6, t / 1e6, th, s;
	if (b > 0) printf "; %.0f%% of B-tree lock wait time is on tree root locks (%.2f s of %.2f s, glass-lockstat)", 100 * r / b, r / 1e9, b / 1e9;
	else printf "; glass-lockstat saw no B-tree lock wait";
}')
cat >"$RUN/meta.json" <<JSON
{"title": "glassfs: fs_mark zero-length creates, off-CPU",
 "finding": "$finding",
 "host": "$(hostname)", "kernel": "$(uname -r)",
 "mount_options": "$OPTS", "workload": "fs_mark -s 0 -S 0 -n $FILES, $THREADS directories (one thread each), $rounds round(s)",
 "duration_s": $secs, "files_per_s": $rate,
 "flame_graph": "off-CPU stacks through the engine's filesystem operations (fsops_*); service threads and idle waits are drawn apart in offcpu-service.svg"}
JSON
"$BIN/glass-report" "$RUN" -o "$DIR/report.html" 2>"$DIR/report.err" || { why "$DIR/report.err"; die "glass-report failed"; }

# The agent's last window, then the count glass-aggd holds.
stop "$AGENT" TERM 100; AGENT=
windows=$(curl -s "http://127.0.0.1:$PORT/api/v1/hosts" | python3 -c 'import json,sys; print(sum(h.get("windows",0) for h in json.load(sys.stdin)))' 2>/dev/null || echo 0)

step "result"
echo "fs_mark: $rate files/s ($nfiles files in ${secs}s, $THREADS threads, a directory each, $OPTS)"
echo "finding: $finding"
echo "flame graph: $DIR/offcpu.svg (filesystem operations; service threads: $DIR/offcpu-service.svg; wall-clock: $DIR/wall.svg)"
echo "report:      $DIR/report.html"
echo "aggregator: $windows window(s) stored from the agent in $DIR/agg.db"
reopen="$BIN/glass-aggd --listen 127.0.0.1:7470 --store sqlite:$DIR/agg.db --tokens $DIR/token --ui $ROOT/dashboards/web"
if [ "${DEMO_SERVE:-0}" = 1 ]; then
	echo "dashboards: http://127.0.0.1:$PORT/ (serving until Ctrl-C)"
	# Everything else stops now; glass-aggd serves on.
	unmount "$MNT"
	trap 'echo; exit 0' INT TERM
	wait "$AGGD"
else
	echo "dashboards: to browse the stored windows, run"
	echo "  $reopen"
	echo "and open http://127.0.0.1:7470/ (or DEMO_SERVE=1 make demo keeps this run's glass-aggd serving until Ctrl-C)"
fi
