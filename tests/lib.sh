# Shared helpers for tests/*/*.test shell scripts: source it.
# Every case reports one line: PASS:/FAIL:/SKIP: (see tests/run.sh).
ROOT=${GLASSFS_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
OUT=${OUT:-build}
case $OUT in /*) ;; *) OUT=$ROOT/$OUT;; esac
BIN=$OUT/bin
_fails=0

pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1${2:+: $2}"; _fails=$((_fails + 1)); }
skip() { echo "SKIP: $1${2:+: $2}"; }
# check NAME CMD...: run CMD, PASS if it succeeds, FAIL (with its output) if not.
check() {
	local n=$1; shift
	local o
	if o=$("$@" 2>&1); then pass "$n"; else fail "$n" "$(echo "$o" | tail -3 | tr '\n' ' ')"; fi
}
# Skip the whole file, loudly, when a facility is truly absent.
skip_all() { echo "SKIPPED (facility absent): $*" >&2; echo "SKIPPED: $*"; exit 77; }
need_root() { [ "$(id -u)" = 0 ] || skip_all "needs root"; }
need_fuse() { [ -c /dev/fuse ] || skip_all "no /dev/fuse"; }
finish() { [ $_fails = 0 ]; exit $?; }
# A random seed printed so a failure can be re-run: SEED=n to replay.
seed() { SEED=${SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; echo "seed: $SEED"; }
