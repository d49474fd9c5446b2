# Helpers for tests/aggregator/*.test: a real glass-aggd on 127.0.0.1 with
# a kernel-chosen free port and a real SQLite file in a temp dir.
. "$(dirname "$0")/../lib.sh"

AGGD=$BIN/glass-aggd
AGENT=$BIN/glass-agent
[ -x "$AGGD" ] || { echo "no $AGGD: run make first" >&2; exit 1; }
command -v curl >/dev/null || skip_all "curl is not installed"
command -v sqlite3 >/dev/null || skip_all "sqlite3 CLI is not installed"

T=$(mktemp -d /tmp/glass-aggtest.XXXXXX)
AGGD_PID=
cleanup() {
	[ -n "$AGGD_PID" ] && kill "$AGGD_PID" 2>/dev/null && wait "$AGGD_PID" 2>/dev/null
	for p in $EXTRA_PIDS; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	[ -n "${KEEP:-}" ] && echo "kept $T" >&2 || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
echo tok-$RANDOM$RANDOM > "$T/tokens"
TOKEN=$(cat "$T/tokens")
DB=$T/agg.db

# start_aggd [extra flags]: start and wait until /healthz answers.
start_aggd() {
	rm -f "$T/port"
	"$AGGD" --listen 127.0.0.1:${PORT:-0} --port-file "$T/port" --store "sqlite:$DB" \
		--tokens "$T/tokens" --ui "$T/ui" "$@" 2>>"$T/aggd.log" &
	AGGD_PID=$!
	for _ in $(seq 100); do
		[ -s "$T/port" ] && PORT=$(cat "$T/port") &&
			curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && { URL=http://127.0.0.1:$PORT; return 0; }
		kill -0 $AGGD_PID 2>/dev/null || break
		sleep 0.05
	done
	echo "glass-aggd did not start:" >&2; tail -5 "$T/aggd.log" >&2
	return 1
}
stop_aggd() {
	[ -n "$AGGD_PID" ] && kill "$AGGD_PID" && wait "$AGGD_PID"
	local rc=$?
	AGGD_PID=
	return $rc
}

# post BODYFILE [curl args...]: POST to /api/v1/ingest; prints "CODE BODY".
post() {
	local f=$1 r=${RESP:-$T/resp}; shift
	curl -s -o "$r" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
		-H 'Content-Type: application/json' --data-binary @"$f" "$@" "$URL/api/v1/ingest"
	echo " $(cat "$r")"
}
# get PATH: GET, prints the body; exit status 22 on HTTP errors.
get() { curl -sf "$URL$1"; }
jq_() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
nwin() { sqlite3 "$DB" 'select count(*) from windows'; }

# window ID HOST START_S FOLDED [LABELS_JSON] [SUMMARIES_JSON]: agent-format body on stdout.
window() {
	python3 - "$@" <<'PY'
import json, sys
a = sys.argv[1:] + [None] * 6
w = {"window_id": a[0], "host": a[1], "start_ns": int(a[2]) * 10**9,
     "end_ns": (int(a[2]) + 10) * 10**9,
     "profiles": [{"type": "offcpu", "units": "ns", "folded": a[3].replace("\\n", "\n")}]}
if a[4]: w["labels"] = json.loads(a[4])
if a[5]: w["summaries"] = json.loads(a[5])
print(json.dumps(w))
PY
}
