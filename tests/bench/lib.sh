# Shared helpers for tests/bench/*.bench: source it, then call bench_init.
#
# Everything a bench mounts, attaches or starts is registered here and undone
# by bench_cleanup, which runs on exit, failure, Ctrl-C and SIGTERM: FUSE
# mounts are unmounted (aborting a hung connection if they must), kernel
# mounts unmounted, loop devices detached, daemons we started stopped, the
# scratch directory removed.  Nothing is matched by name: only the mount
# points, loop devices and process ids recorded here are touched.
#
# Results go to stdout as tables; a tab-separated copy goes to
# $OUT/bench-results/NAME.tsv for report tools.

BENCH_ROOT=${GLASSFS_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
OUT=${OUT:-build}
case $OUT in /*) ;; *) OUT=$BENCH_ROOT/$OUT;; esac
BIN=$OUT/bin
MEMFS=$OUT/bench/memfs
BENCH_TMP=${BENCH_TMP:-/tmp}
FSMARK_TIMEOUT=${FSMARK_TIMEOUT:-300}	# seconds, per fs_mark run

_b_mounts=()	# "kind<TAB>mountpoint", kind = kernel|fuse
_b_loops=()	# /dev/loopN
_b_pids=()	# daemons we started
_b_fsmark=	# pid (= process group) of a running `timeout fs_mark`
BENCH_WORK=

bench_say() { printf '%s\n' "$*" >&2; }
bench_die() { printf '%s: error: %s\n' "${BENCH_NAME:-bench}" "$*" >&2; exit 1; }

# bench_init NAME: scratch directory, traps, results file.
bench_init() {
	BENCH_NAME=$1
	_b_main=$BASHPID
	[ "$(id -u)" = 0 ] || { echo "SKIPPED: $BENCH_NAME needs root (loop devices, mounts)" >&2; exit 77; }
	[ -c /dev/fuse ] || { echo "SKIPPED: $BENCH_NAME needs /dev/fuse" >&2; exit 77; }
	BENCH_WORK=$(mktemp -d "$BENCH_TMP/glassfs-bench.$BENCH_NAME.XXXXXX") ||
		bench_die "cannot make a scratch directory in $BENCH_TMP"
	trap bench_cleanup EXIT
	trap 'bench_say "$BENCH_NAME: interrupted, cleaning up"; exit 130' INT
	trap 'bench_say "$BENCH_NAME: terminated, cleaning up"; exit 143' TERM
	BENCH_RESULTS=$OUT/bench-results/$BENCH_NAME.tsv
	mkdir -p "$(dirname "$BENCH_RESULTS")"
	: >"$BENCH_RESULTS"
}

# bench_need CMD...: exit 77 (skipped, loudly) if a command is missing.
bench_need() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 ||
			{ echo "SKIPPED: $BENCH_NAME needs '$c' (tools/deps.sh installs it)" >&2; exit 77; }
	done
}

# Mount tests read /proc/self/mountinfo and never stat the mount point:
# a stat on a hung FUSE mount would hang the cleanup too.
_is_mounted() {
	awk -v m="$1" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo
}

# The FUSE connection id of a mount (its minor device number), or "".
_fuse_conn() {
	awk -v m="$1" '$5 == m { split($3, d, ":"); c = d[2] } END { print c }' /proc/self/mountinfo
}

# Unmount one FUSE mount; if the daemon is hung, abort its connection.
_fuse_umount() {
	local m=$1 c
	_is_mounted "$m" || return 0
	fusermount3 -u "$m" 2>/dev/null && return 0
	sleep 0.5
	fusermount3 -u "$m" 2>/dev/null && return 0
	c=$(_fuse_conn "$m")
	bench_say "cleanup: $m busy or hung, aborting FUSE connection ${c:-?}"
	[ -n "$c" ] && [ -w "/sys/fs/fuse/connections/$c/abort" ] &&
		echo 1 >"/sys/fs/fuse/connections/$c/abort"
	fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
}

_kernel_umount() {
	local m=$1
	_is_mounted "$m" || return 0
	umount "$m" 2>/dev/null && return 0
	sleep 0.5
	umount "$m" 2>/dev/null || { bench_say "cleanup: lazy unmount of $m"; umount -l "$m"; }
}

# Wait up to $2 seconds (default 10) for pid $1 to exit; SIGKILL it after.
_reap() {
	local p=$1 t=${2:-10} i
	for ((i = 0; i < t * 10; i++)); do
		kill -0 "$p" 2>/dev/null || { wait "$p" 2>/dev/null; return 0; }
		sleep 0.1
	done
	bench_say "cleanup: pid $p did not exit, killing it"
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	return 0
}

bench_cleanup() {
	local rc=$? i kind m p
	# only the bench's own shell cleans up, never a subshell that inherited the trap
	[ "$BASHPID" = "${_b_main:-}" ] || exit $rc
	trap - EXIT INT TERM
	# a running fs_mark first: timeout leads its process group
	if [ -n "${_b_fsmark:-}" ]; then
		kill -TERM -- "-$_b_fsmark" 2>/dev/null
		sleep 0.2
		kill -KILL -- "-$_b_fsmark" 2>/dev/null
	fi
	for ((i = ${#_b_mounts[@]} - 1; i >= 0; i--)); do
		kind=${_b_mounts[i]%%$'\t'*}; m=${_b_mounts[i]#*$'\t'}
		if [ "$kind" = fuse ]; then _fuse_umount "$m"; else _kernel_umount "$m"; fi
	done
	_b_mounts=()
	for p in "${_b_pids[@]}"; do
		kill -TERM "$p" 2>/dev/null && _reap "$p" 5
	done
	_b_pids=()
	for m in "${_b_loops[@]}"; do
		losetup -d "$m" 2>/dev/null || bench_say "cleanup: cannot detach $m"
	done
	_b_loops=()
	if [ -n "$BENCH_WORK" ] && [ -d "$BENCH_WORK" ]; then
		rm -rf --one-file-system "$BENCH_WORK"
	fi
	exit $rc
}

# Forget one registered mount (after unmounting it by hand).
_unregister_mount() {
	local i
	for i in "${!_b_mounts[@]}"; do
		[ "${_b_mounts[i]#*$'\t'}" = "$1" ] && unset '_b_mounts[i]'
	done
	_b_mounts=("${_b_mounts[@]}")
}

# bench_umount MNT: unmount one mount made by the helpers below and undo
# what it needed (daemon, loop device).  Safe to call twice.
bench_umount() {
	local m=$1 i kind
	for i in "${!_b_mounts[@]}"; do
		[ "${_b_mounts[i]#*$'\t'}" = "$m" ] || continue
		kind=${_b_mounts[i]%%$'\t'*}
		if [ "$kind" = fuse ]; then _fuse_umount "$m"; else _kernel_umount "$m"; fi
	done
	_unregister_mount "$m"
	local var=_b_owner_${m//[^A-Za-z0-9]/_} owner
	# daemons first (they exit once unmounted), then their devices
	for owner in ${!var-}; do
		case $owner in
		pid:*)	_reap "${owner#pid:}" 30	# glassfs commits before it exits
			local q keepp=()
			for q in "${_b_pids[@]}"; do [ "$q" = "${owner#pid:}" ] || keepp+=("$q"); done
			_b_pids=("${keepp[@]}");;
		loop:*)	losetup -d "${owner#loop:}" 2>/dev/null ||
				bench_say "cannot detach ${owner#loop:}"
			local l keep=()
			for l in "${_b_loops[@]}"; do [ "$l" = "${owner#loop:}" ] || keep+=("$l"); done
			_b_loops=("${keep[@]}");;
		esac
	done
	unset "$var"
}

# _set_owner MNT "pid:N [loop:/dev/loopN]": what bench_umount MNT undoes.
_set_owner() { printf -v "_b_owner_${1//[^A-Za-z0-9]/_}" '%s' "$2"; }

# bench_image PATH SIZE: a sparse image file.
bench_image() {
	rm -f "$1"
	truncate -s "$2" "$1" || { bench_say "$BENCH_NAME: cannot create image $1"; return 1; }
}

# bench_loop IMG: attach IMG to a free loop device; sets LOOPDEV.
bench_loop() {
	LOOPDEV=$(losetup -f --show "$1") || { bench_say "$BENCH_NAME: losetup -f --show $1 failed"; return 1; }
	_b_loops+=("$LOOPDEV")
}

# bench_mount_kernel FSTYPE MNT [MKFS-OPTION...]: a fresh SIZE (default
# 2G, $BENCH_IMG_SIZE) loop image formatted with mkfs.FSTYPE and mounted
# on MNT.  Sets LOOPDEV.  FSTYPE: btrfs or xfs (any mkfs.X that takes -f).
bench_mount_kernel() {
	local type=$1 mnt=$2; shift 2
	local img=$BENCH_WORK/$type.$RANDOM.img
	bench_image "$img" "${BENCH_IMG_SIZE:-2G}" || return 1
	bench_loop "$img" || return 1
	mkfs."$type" -f -q "$@" "$LOOPDEV" >"$BENCH_WORK/mkfs.log" 2>&1 ||
		{ bench_say "$BENCH_NAME: mkfs.$type $* $LOOPDEV failed: $(tail -3 "$BENCH_WORK/mkfs.log")"; return 1; }
	mkdir -p "$mnt"
	mount -t "$type" "$LOOPDEV" "$mnt" || { bench_say "$BENCH_NAME: mount -t $type $LOOPDEV $mnt failed"; return 1; }
	_b_mounts+=("kernel"$'\t'"$mnt")
	_set_owner "$mnt" "loop:$LOOPDEV"
	# the image is only reachable through the loop device from now on
	rm -f "$img"
}

# Wait until MNT is a mount point served by pid PID; 1 if PID died first.
_wait_mounted() {
	local mnt=$1 pid=$2 i
	for ((i = 0; i < 200; i++)); do
		_is_mounted "$mnt" && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# bench_mount_memfs MNT [-o OPTS]: the FUSE ceiling, served by a memfs we
# start in the foreground (so we own its pid).  $MEMFS_OPTS are added, e.g.
# to match glassfs's timeouts: MEMFS_OPTS="-o entry_timeout=5,attr_timeout=5".
bench_mount_memfs() {
	local mnt=$1; shift
	[ -x "$MEMFS" ] || { bench_say "$BENCH_NAME: $MEMFS not built (run: make bench)"; return 1; }
	mkdir -p "$mnt"
	# shellcheck disable=SC2086
	"$MEMFS" "$mnt" -f ${MEMFS_OPTS:-} "$@" >"$BENCH_WORK/memfs.log" 2>&1 &
	local pid=$!
	_b_pids+=("$pid")
	_b_mounts+=("fuse"$'\t'"$mnt")
	_set_owner "$mnt" "pid:$pid"
	_wait_mounted "$mnt" "$pid" ||
		{ bench_say "$BENCH_NAME: memfs did not mount on $mnt: $(tail -3 "$BENCH_WORK/memfs.log")"; return 1; }
}

# glassfs is measured only when its daemon and mkfs are built.
bench_have_glassfs() {
	[ -x "$BIN/glassfs" ] && [ -x "$BIN/mkfs.glassfs" ]
}

# Why glassfs rows are skipped, for the loud SKIP line.
bench_glassfs_missing() {
	local m=()
	[ -x "$BIN/glassfs" ] || m+=("$BIN/glassfs")
	[ -x "$BIN/mkfs.glassfs" ] || m+=("$BIN/mkfs.glassfs")
	echo "not built: ${m[*]}"
}

# bench_mount_glassfs MNT [DEV] [-o OPTS]: a fresh glassfs.  Without DEV it
# formats a new image file (GLASSFS_IMG set to it); with DEV (a block
# device, e.g. a loop device) it formats that.  The daemon runs in the
# foreground under our pid (BENCH_PID, e.g. for tracers); `fusermount3 -u`
# makes it commit and exit.
bench_mount_glassfs() {
	local mnt=$1; shift
	local dev
	if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
		dev=$1; shift
		"$BIN/mkfs.glassfs" -f "$dev" >"$BENCH_WORK/mkfs.log" 2>&1 ||
			{ bench_say "$BENCH_NAME: mkfs.glassfs -f $dev failed: $(tail -3 "$BENCH_WORK/mkfs.log")"; return 1; }
	else
		dev=$BENCH_WORK/glassfs.$RANDOM.img
		rm -f "$dev"
		"$BIN/mkfs.glassfs" -s "${BENCH_IMG_SIZE:-2G}" -f "$dev" >"$BENCH_WORK/mkfs.log" 2>&1 ||
			{ bench_say "$BENCH_NAME: mkfs.glassfs -s ${BENCH_IMG_SIZE:-2G} -f $dev failed: $(tail -3 "$BENCH_WORK/mkfs.log")"; return 1; }
	fi
	GLASSFS_IMG=$dev
	mkdir -p "$mnt"
	# shellcheck disable=SC2086 # GLASSFS_OPTS is a list of words
	"$BIN/glassfs" "$dev" "$mnt" -f ${GLASSFS_OPTS:-} "$@" >"$BENCH_WORK/glassfs.log" 2>&1 &
	local pid=$!
	BENCH_PID=$pid
	_b_pids+=("$pid")
	_b_mounts+=("fuse"$'\t'"$mnt")
	_set_owner "$mnt" "pid:$pid"
	_wait_mounted "$mnt" "$pid" ||
		{ bench_say "$BENCH_NAME: glassfs did not mount $dev on $mnt: $(tail -3 "$BENCH_WORK/glassfs.log")"; return 1; }
}

# bench_mount KIND MNT: one of btrfs, xfs, xfs-agN, memfs, glassfs.
# Each mount helper returns 1 (having said why) when it cannot mount.
bench_mount() {
	case $1 in
	btrfs)		bench_mount_kernel btrfs "$2";;
	xfs)		bench_mount_kernel xfs "$2";;
	xfs-ag*)	bench_mount_kernel xfs "$2" -d agcount="${1#xfs-ag}";;
	memfs)		bench_mount_memfs "$2";;
	glassfs)	bench_mount_glassfs "$2";;
	*)		bench_say "$BENCH_NAME: unknown filesystem kind '$1'"; return 1;;
	esac
}

# bench_devstat DEV: "WRITE_IOS WRITE_BYTES" of a block device, from
# /sys/block/NAME/stat (fields 5 and 7: write I/Os, sectors of 512 bytes).
bench_devstat() {
	local name=${1##*/} f
	read -r -a f <"/sys/block/$name/stat" || bench_die "no /sys/block/$name/stat"
	echo "${f[4]} $((f[6] * 512))"
}

# bench_glassfs_stat MNT: "WRITE_IOS WRITE_BYTES" from `glassctl stats MNT`
# (lines "dev_write_ios N", "dev_write_bytes N", also with ':' or '=');
# returns 1 when glassctl or those lines are missing.
bench_glassfs_stat() {
	[ -x "$BIN/glassctl" ] || return 1
	"$BIN/glassctl" stats "$1" 2>/dev/null | awk '
		{ gsub(/[:=]/, " ") }
		$1 == "dev_write_ios"   { ios = $2; n++ }
		$1 == "dev_write_bytes" { bytes = $2; n++ }
		END { if (n < 2) exit 1; print ios, bytes }'
}

# bench_fsmark N_THREADS N_PER_THREAD DIR FS_MARK-ARGS...: fs_mark with one
# directory per thread under DIR; sets FSMARK_RATE (files/sec).  Returns 1
# (and says why) when fs_mark fails, times out or counts a different number
# of files.  Call it in the bench's own shell, not in $(...): fs_mark runs
# in the background under `timeout` (its own process group, which also
# holds fs_mark's worker processes) and we `wait` for it, so Ctrl-C runs
# the cleanup trap at once and the cleanup kills that group by its id.
bench_fsmark() {
	local t=$1 n=$2 dir=$3; shift 3
	local args=() i rc log=$BENCH_WORK/fs_mark.out
	FSMARK_RATE=
	# Relative directory names: fs_mark rejects -d paths of 39+ characters.
	for ((i = 0; i < t; i++)); do
		mkdir -p "$dir/$i" || { bench_say "fs_mark: cannot mkdir $dir/$i"; return 1; }
		args+=(-d "$i")
	done
	(cd "$dir" && exec timeout -k 10 "$FSMARK_TIMEOUT" fs_mark "${args[@]}" \
		-t "$t" -n "$n" -L 1 -l "$BENCH_WORK/fs_mark.log" "$@") >"$log" 2>&1 </dev/null &
	_b_fsmark=$!
	wait "$_b_fsmark"
	rc=$?
	_b_fsmark=
	if [ $rc != 0 ]; then
		bench_say "fs_mark ${*} -t $t -n $n in $dir: $([ $rc = 124 ] && echo "timed out after ${FSMARK_TIMEOUT}s" || echo "failed (rc=$rc)"): $(tail -2 "$log" | tr '\n\t' '  ')"
		return 1
	fi
	FSMARK_RATE=$(awk -v want=$((t * n)) '
		/^FSUse%/ { hdr = 1; next }
		hdr && NF >= 5 { count = $2; rate = $4; hdr = 0 }
		END {
			if (rate == "") { print "fs_mark: no result line" > "/dev/stderr"; exit 1 }
			if (count != want) { printf "fs_mark: counted %s files, expected %s\n", count, want > "/dev/stderr"; exit 1 }
			print rate
		}' "$log") || return 1
	# The files must really be there: a filesystem that drops creates
	# must not post a rate.
	i=$(find "$dir" -mindepth 2 -maxdepth 2 -type f | wc -l)
	if [ "$i" != $((t * n)) ]; then
		bench_say "fs_mark in $dir: found $i files after the run, expected $((t * n))"
		FSMARK_RATE=
		return 1
	fi
}

# Formatting: ratio A/B with two decimals, "-" when either is missing.
bench_ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		num = "^[0-9]+([.][0-9]*)?$"
		if (a !~ num || b !~ num || b + 0 == 0) { print "-"; exit }
		r = a / b; printf (r < 0.1 ? "%.3f\n" : "%.2f\n"), r }'
}

bench_tsv() { local IFS=$'\t'; echo "$*" >>"$BENCH_RESULTS"; }

# ---- the report's JSON (BENCH_OUT; the contract of glass-report --experiments)
#
# A bench records its experiment as it goes and calls bench_json_write at
# the end; when BENCH_OUT is set that writes $BENCH_OUT/$BENCH_NAME.json
# (atomically), otherwise nothing.  Cells and points that look like numbers
# become JSON numbers; "" and "-" become null.
#   bench_json_init EXPERIMENT TITLE WHAT
#   bench_json_cmd "exact command line"          (repeat)
#   bench_json_columns COL...
#   bench_json_row CELL...                       (repeat)
#   bench_json_finding "one line"
#   bench_json_chart bar|line TITLE UNIT XLABEL   (then its points:)
#   bench_json_point SERIES X Y                   (into the last chart)
#   bench_json_flamegraph TITLE FOLDED-FILE [UNIT] (copied into BENCH_OUT)
#   bench_json_write
_bj_rec() {
	[ -n "${_bj_file:-}" ] || bench_die "bench_json_init first"
	local IFS=$'\x1f' a=("$@")
	a=("${a[@]//$'\n'/ }")
	printf '%s\n' "${a[*]}" >>"$_bj_file"
}
bench_json_init() {
	_bj_file=$BENCH_WORK/report.rec
	_bj_nfg=0
	: >"$_bj_file"
	_bj_rec experiment "$1"; _bj_rec title "$2"; _bj_rec what "$3"
}
bench_json_cmd() { _bj_rec cmd "$1"; }
bench_json_columns() { _bj_rec columns "$@"; }
bench_json_row() { _bj_rec row "$@"; }
bench_json_finding() { _bj_rec finding "$1"; }
bench_json_chart() { _bj_rec chart "$1" "$2" "$3" "$4"; }
bench_json_point() { _bj_rec point "$1" "$2" "$3"; }
bench_json_flamegraph() {
	[ -n "${BENCH_OUT:-}" ] || return 0
	local name=$BENCH_NAME-$_bj_nfg.folded
	_bj_nfg=$((_bj_nfg + 1))
	mkdir -p "$BENCH_OUT" && cp "$2" "$BENCH_OUT/$name" ||
		{ bench_say "cannot copy $2 to $BENCH_OUT"; return 1; }
	_bj_rec flamegraph "$1" "$name" "${3:-us}"
}
bench_json_write() {
	[ -n "${BENCH_OUT:-}" ] || return 0
	mkdir -p "$BENCH_OUT" || bench_die "cannot create BENCH_OUT=$BENCH_OUT"
	python3 - "$_bj_file" "$BENCH_OUT/$BENCH_NAME.json" <<'PY' || bench_die "cannot write $BENCH_OUT/$BENCH_NAME.json"
import json, os, re, sys
num = re.compile(r'^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$')
def val(s):
    if s in ("", "-"):
        return None
    if num.match(s):
        f = float(s)
        return int(s) if re.match(r'^-?[0-9]+$', s) else f
    return s
d = {"commands": [], "table": {"columns": [], "rows": []}, "charts": [], "flamegraphs": []}
for line in open(sys.argv[1], encoding="utf-8"):
    f = line.rstrip("\n").split("\x1f")
    k, a = f[0], f[1:]
    if k == "experiment": d["experiment"] = int(a[0])
    elif k in ("title", "what", "finding"): d[k] = a[0]
    elif k == "cmd": d["commands"].append(a[0])
    elif k == "columns": d["table"]["columns"] = a
    elif k == "row": d["table"]["rows"].append([val(c) for c in a])
    elif k == "chart":
        d["charts"].append({"title": a[1], "kind": a[0], "unit": a[2], "xlabel": a[3], "series": []})
    elif k == "point":
        ss = d["charts"][-1]["series"]
        s = next((s for s in ss if s["name"] == a[0]), None)
        if s is None:
            s = {"name": a[0], "points": []}
            ss.append(s)
        x = val(a[1])
        s["points"].append([x if x is not None else a[1], val(a[2]) if isinstance(val(a[2]), (int, float)) else None])
    elif k == "flamegraph": d["flamegraphs"].append({"title": a[0], "folded": a[1], "unit": a[2]})
d["charts"] = [c for c in d["charts"] if c["series"]]
tmp = sys.argv[2] + ".tmp"
with open(tmp, "w", encoding="utf-8") as o:
    json.dump(d, o, indent=1)
    o.write("\n")
os.rename(tmp, sys.argv[2])
PY
	echo "report JSON: $BENCH_OUT/$BENCH_NAME.json"
}

# bench_tracer_start OUT CMD...: run a tracer (glass-offcputime,
# glass-lockstat, glass-commitlat ...) with stdout to OUT and stderr to
# OUT.err, registered for cleanup; wait until it says it is tracing.  Sets
# TRACER_PID; returns 1 (having said why) if it died or never attached.
bench_tracer_start() {
	local out=$1 i; shift
	"$@" >"$out" 2>"$out.err" </dev/null &
	TRACER_PID=$!
	_b_pids+=("$TRACER_PID")
	for ((i = 0; i < 150; i++)); do
		grep -q '^Tracing' "$out.err" 2>/dev/null && return 0
		kill -0 "$TRACER_PID" 2>/dev/null || break
		sleep 0.1
	done
	bench_say "$BENCH_NAME: $1 did not attach: $(tail -2 "$out.err" | tr '\n' ' ')"
	bench_tracer_stop "$TRACER_PID"
	return 1
}

# bench_tracer_stop PID: Ctrl-C it (it prints its results) and wait.
bench_tracer_stop() {
	local p=$1 q keep=()
	kill -INT "$p" 2>/dev/null && _reap "$p" 20
	wait "$p" 2>/dev/null
	for q in "${_b_pids[@]}"; do [ "$q" = "$p" ] || keep+=("$q"); done
	_b_pids=("${keep[@]}")
}
