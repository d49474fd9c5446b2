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

# ch_start: install (root) and start Debian's clickhouse-server on loopback
# with a private data dir and free ports; sets CHP (HTTP), CHT (TCP), ver,
# and a two-shard cluster two_$SEED (shard databases glass_s1_$SEED,
# glass_s2_$SEED on this one server).  skip_all if it cannot run.
chq() { curl -s "http://127.0.0.1:$CHP/" --data-binary "$1"; }
ch_start() {
	local chs
	chs=$(command -v clickhouse-server || ls /usr/sbin/clickhouse-server /usr/bin/clickhouse-server 2>/dev/null | head -1)
	if [ -z "$chs" ] && [ "$(id -u)" = 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends clickhouse-server \
			>"$T/apt.log" 2>&1
		chs=$(command -v clickhouse-server || ls /usr/sbin/clickhouse-server 2>/dev/null | head -1)
	fi
	[ -n "$chs" ] || skip_all "clickhouse-server is not installed and could not be installed (tools/deps.apt)"
	freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
	CHP=$(freeport); CHT=$(freeport)
	mkdir -p "$T/ch"
	cat > "$T/ch/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$T/ch/server.log</log><errorlog>$T/ch/err.log</errorlog></logger>
  <http_port>$CHP</http_port><tcp_port>$CHT</tcp_port><listen_host>127.0.0.1</listen_host>
  <path>$T/ch/data/</path><tmp_path>$T/ch/tmp/</tmp_path><user_files_path>$T/ch/uf/</user_files_path>
  <users_config>/etc/clickhouse-server/users.xml</users_config>
  <default_profile>default</default_profile><default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
  <remote_servers>
    <two_$SEED>
      <shard><replica><host>127.0.0.1</host><port>$CHT</port><default_database>glass_s1_$SEED</default_database></replica></shard>
      <shard><replica><host>127.0.0.1</host><port>$CHT</port><default_database>glass_s2_$SEED</default_database></replica></shard>
    </two_$SEED>
  </remote_servers>
</yandex>
XML
	"$chs" --config-file="$T/ch/config.xml" >"$T/ch/stdout" 2>&1 &
	CH_PID=$!
	EXTRA_PIDS="${EXTRA_PIDS:+$EXTRA_PIDS }$CH_PID"
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:$CHP/" --data-binary 'SELECT 1' >/dev/null 2>&1 && break
		kill -0 $CH_PID 2>/dev/null || break
		sleep 0.1
	done
	ver=$(curl -sf "http://127.0.0.1:$CHP/" --data-binary 'SELECT version()') ||
		skip_all "clickhouse-server did not start on 127.0.0.1:$CHP: $(tail -2 "$T/ch/err.log" "$T/ch/stdout" 2>/dev/null | tr '\n' ' ')"
}
