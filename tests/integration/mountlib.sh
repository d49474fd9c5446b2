# Helpers for the mounted tests: source after tests/lib.sh.
#
#   fs_setup [SIZE] [MOUNT-OPTS]  mkfs an image in a temp dir and mount it on $MNT
#   fs_mount [OPTS] / fs_umount / fs_remount [OPTS]
#   fs_fsck NAME                  unmount, fsck.glassfs -n must be clean, remount
#   t NAME EXPECT OP ARGS...      one gfsop call: PASS/FAIL with file:line
#
# NODESIZE=4096 formats with that node size.
# GLASSFS_TEST_OPTS=opt[,opt] is added to every mount's options, e.g.
# writeback_cache=on to run the mounted tests with the writeback cache.
# GLASSFS_TEST_DIR=/some/dir runs the same tests on any directory (tmpfs,
# ext4, ...) to validate the tests themselves: no mkfs, remounts are
# no-ops and fsck is skipped.  Everything is unmounted and removed by an
# EXIT trap, also when a test fails.
GFSOP=$OUT/itest/gfsop
MNT= IMG= TMPD= DPID= REAL=1
MOUNT_OPTS=${MOUNT_OPTS:-allow_other}

fs_cleanup() {
	if [ -n "$MNT" ] && mountpoint -q "$MNT" 2>/dev/null; then
		fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
	fi
	if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$DPID" 2>/dev/null || break; sleep 0.2; done
		kill -9 "$DPID" 2>/dev/null
	fi
	[ -n "$TMPD" ] && rm -rf "$TMPD"
	return 0
}

# Wait for the daemon to have mounted $MNT (or to have died).
_wait_mounted() {
	local i
	for i in $(seq 1 100); do
		mountpoint -q "$MNT" && return 0
		kill -0 "$DPID" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

fs_mount() {
	[ $REAL = 1 ] || return 0
	local o=${1:-$MOUNT_OPTS}
	[ -n "${1:-}" ] && o=$o${GLASSFS_TEST_OPTS:+${o:+,}$GLASSFS_TEST_OPTS}
	"$BIN/glassfs" "$IMG" "$MNT" -f ${o:+-o "$o"} 2>>"$TMPD/daemon.log" &
	DPID=$!
	if ! _wait_mounted; then
		echo "mount failed; daemon log:" >&2
		tail -5 "$TMPD/daemon.log" >&2
		return 1
	fi
}

fs_umount() {
	[ $REAL = 1 ] || return 0
	# a file closed a moment ago may still be open: the last fput of a
	# process that just exited runs after it (EBUSY), so try for 5 s
	local i
	for i in $(seq 1 50); do
		fusermount3 -u "$MNT" 2>"$TMPD/umount.err" && break
		grep -q busy "$TMPD/umount.err" || { cat "$TMPD/umount.err" >&2; return 1; }
		[ "$i" = 50 ] && { cat "$TMPD/umount.err" >&2; return 1; }
		sleep 0.1
	done
	wait "$DPID"
	local rc=$?
	DPID=
	[ $rc = 0 ] || { echo "daemon exited $rc; log:" >&2; tail -5 "$TMPD/daemon.log" >&2; }
	return $rc
}

fs_remount() { fs_umount && fs_mount "$@"; }

# Is the volume mounted with the kernel's writeback cache?  The last
# writeback_cache= in the mount options, else glassfs's default (glassfs
# --help, docs/mount-options.md).
fs_writeback() {
	local w
	w=$(echo ",${1:-$MOUNT_OPTS}," | grep -o ',writeback_cache=o[nf]*,' | tail -1)
	case $w in
	*=on,) return 0;;
	*=off,) return 1;;
	*) return 0;;	# the default: on
	esac
}

fs_setup() {
	local size=${1:-256M}
	[ -n "${2:-}" ] && MOUNT_OPTS=$2
	MOUNT_OPTS=$MOUNT_OPTS${GLASSFS_TEST_OPTS:+${MOUNT_OPTS:+,}$GLASSFS_TEST_OPTS}
	trap fs_cleanup EXIT
	if [ -n "${GLASSFS_TEST_DIR:-}" ]; then
		REAL=0
		TMPD=$(mktemp -d "$GLASSFS_TEST_DIR/itest.XXXXXX")
		chmod 755 "$TMPD"
		MNT=$TMPD/mnt
		mkdir -p "$MNT"
		return 0
	fi
	need_root
	need_fuse
	[ -x "$BIN/glassfs" ] && [ -x "$BIN/mkfs.glassfs" ] || skip_all "glassfs or mkfs.glassfs not built in $BIN"
	TMPD=$(mktemp -d /tmp/glassfs-it.XXXXXX)
	chmod 755 "$TMPD"	# non-root cases must reach the mount point
	IMG=$TMPD/img
	MNT=$TMPD/mnt
	mkdir -p "$MNT"
	"$BIN/mkfs.glassfs" -s "$size" ${NODESIZE:+-n "$NODESIZE"} "$IMG" >"$TMPD/mkfs.log" 2>&1 || { cat "$TMPD/mkfs.log" >&2; echo "FAIL: mkfs"; exit 1; }
	fs_mount || { echo "FAIL: mount"; exit 1; }
}

# fsck must be clean: a case of its own.
fs_fsck() {
	local n=$1 o
	[ $REAL = 1 ] || { skip "$n" "not glassfs"; return 0; }
	if ! fs_umount; then fail "$n" "unmount failed"; fs_mount; return 1; fi
	if o=$("$BIN/fsck.glassfs" -n "$IMG" 2>&1); then pass "$n"; else
		fail "$n" "${BASH_SOURCE[1]##*/}:${BASH_LINENO[0]}: $(echo "$o" | grep -v '^$' | tail -4 | tr '\n' ' ')"
	fi
	fs_mount
}

t() {
	local n=$1 o
	shift
	if o=$("$GFSOP" "$@" 2>&1); then pass "$n"; else
		fail "$n" "${BASH_SOURCE[1]##*/}:${BASH_LINENO[0]}: $(echo "$o" | tail -2 | tr '\n' ' ')"
	fi
}

# Output of one gfsop call (expected to succeed), for comparisons.
g() { "$GFSOP" ok "$@"; }

# eq NAME GOT WANT
eq() {
	if [ "$2" = "$3" ]; then pass "$1"; else
		fail "$1" "${BASH_SOURCE[1]##*/}:${BASH_LINENO[0]}: got '$2', want '$3'"
	fi
}

# A field of `gfsop stat`: field PATH NAME
field() { g stat "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
lfield() { g lstat "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
