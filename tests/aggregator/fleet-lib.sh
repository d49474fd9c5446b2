# fleet-lib.sh — a fleet of "hosts" on one machine, for tests/aggregator/
# fleet.test and tests/bench/fleet.bench.  Source it (after setting BIN,
# the directory of the built programs), then:
#
#   fleet_init DIR           network: a bridge in the root namespace with
#                            FLEET_GW (10.x.y.1/24); records what to undo
#   fleet_host NAME [OPTS]   a host: network namespace NAME-<id> joined to
#                            the bridge by a veth pair (10.x.y.N), its own
#                            glassfs image (mkfs.glassfs) mounted with -o OPTS
#                            by a daemon running inside the namespace
#   fleet_aggd [FLAGS]       glass-aggd in the root namespace on FLEET_GW,
#                            SQLite store FLEET_DIR/agg.db (FLEET_STORE
#                            overrides); FLEET_URL; a restart keeps the port
#   fleet_aggd_stop          SIGTERM, wait
#   fleet_agent NAME [FLAGS] glass-agent inside NAME's namespace, pushing to
#                            FLEET_URL: off-CPU stacks of NAME's glassfs
#                            daemon (glass-offcputime -p {pid}) and, with
#                            FLEET_SUMMARY=1, its commit latency p99
#                            (glass-commitlat) as the window's summaries
#   fleet_agent_stop NAME    SIGTERM (flushes the current window), wait
#   fleet_load NAME SECONDS THREADS
#                            fs_mark zero-length creates in NAME's mount,
#                            run inside its namespace, in the background
#   fleet_load_wait          wait for every fleet_load
#   fleet_load_stop          stop every fleet_load (SIGINT), wait
#   fleet_exec NAME CMD...   run CMD in NAME's network namespace
#   fleet_cleanup            agents, loads, aggd, unmount, namespaces,
#                            links, files: everything recorded, nothing
#                            matched by name; safe to call twice
#
# Per host H: FLEET_MNT[H], FLEET_PID[H] (glassfs), FLEET_AGENT[H] (pid),
# FLEET_IP[H], FLEET_LOG dir FLEET_DIR/H/.  Processes run in a namespace
# through `nsenter --net` (network only): mounts stay in the root mount
# namespace, so the cleanup can see and unmount them.  Needs root, ip(8),
# nsenter, /dev/fuse, fs_mark (for fleet_load).
#
# The caller installs the trap: trap fleet_cleanup EXIT (or calls
# fleet_cleanup from its own cleanup).

declare -A FLEET_NS FLEET_MNT FLEET_PID FLEET_AGENT FLEET_IP FLEET_IMG
FLEET_HOSTS=() FLEET_LOADS=() FLEET_DIR= FLEET_BR= FLEET_ID= FLEET_NET=
FLEET_GW= FLEET_PORT= FLEET_URL= FLEET_AGGD= FLEET_TOKEN=
FLEET_IMG_SIZE=${FLEET_IMG_SIZE:-512M}

fleet_say() { printf 'fleet: %s\n' "$*" >&2; }

# fleet_need: exit 77 (loudly) when a facility is missing.
fleet_need() {
	local c
	[ "$(id -u)" = 0 ] || { echo "SKIPPED: fleet needs root (namespaces, mounts)"; exit 77; }
	[ -c /dev/fuse ] || { echo "SKIPPED: fleet needs /dev/fuse"; exit 77; }
	for c in ip nsenter fs_mark curl python3 fusermount3; do
		command -v $c >/dev/null 2>&1 || { echo "SKIPPED: fleet needs $c"; exit 77; }
	done
	for c in glassfs mkfs.glassfs glass-aggd glass-agent glass-offcputime; do
		[ -x "$BIN/$c" ] || { echo "SKIPPED: $BIN/$c not built (make)"; exit 77; }
	done
	# The hosts' stacks come from the BPF off-CPU profiler: it must load here.
	if ! timeout 60 "$BIN/glass-offcputime" -p $$ -d 1 -f >/dev/null 2>"${TMPDIR:-/tmp}/fleet-bpf.$$"; then
		echo "SKIPPED: glass-offcputime does not run here (BPF): $(tail -1 "${TMPDIR:-/tmp}/fleet-bpf.$$")"
		rm -f "${TMPDIR:-/tmp}/fleet-bpf.$$"
		exit 77
	fi
	rm -f "${TMPDIR:-/tmp}/fleet-bpf.$$"
}

# fleet_init DIR: DIR should be on tmpfs (/dev/shm) so that the images'
# own device I/O is nearly free and only a modelled slow device shows.
fleet_init() {
	FLEET_DIR=$1
	mkdir -p "$FLEET_DIR"
	chmod 755 "$FLEET_DIR"
	# A short id for interface names (15 bytes max) and a /24 no route uses.
	FLEET_ID=$(printf '%04x' $(( $$ % 65536 )))
	local a b i
	for i in $(seq 20); do
		a=$(( 100 + RANDOM % 150 )) b=$(( RANDOM % 256 ))
		ip -4 route show | grep -q "^10\.$a\.$b\." || ip -4 addr show | grep -q " 10\.$a\.$b\." || break
	done
	FLEET_NET=10.$a.$b
	FLEET_GW=$FLEET_NET.1
	FLEET_BR=gf${FLEET_ID}br
	ip link add "$FLEET_BR" type bridge || { fleet_say "cannot create bridge $FLEET_BR"; return 1; }
	ip addr add "$FLEET_GW/24" dev "$FLEET_BR" && ip link set "$FLEET_BR" up || return 1
	FLEET_TOKEN=tok-$RANDOM$RANDOM$RANDOM
	echo "$FLEET_TOKEN" > "$FLEET_DIR/tokens"
	fleet_say "network $FLEET_NET.0/24 on bridge $FLEET_BR (root namespace $FLEET_GW)"
}

fleet_exec() {
	local h=$1; shift
	nsenter --net="/run/netns/${FLEET_NS[$h]}" -- "$@"
}

# fleet_host NAME [GLASSFS-OPTS]
fleet_host() {
	local h=$1 opts=${2:-} n=$(( ${#FLEET_HOSTS[@]} + 1 ))
	local ns=glassfleet-$FLEET_ID-$h d=$FLEET_DIR/$h
	local vh=gf${FLEET_ID}h$n vn=gf${FLEET_ID}n$n
	mkdir -p "$d/mnt" "$d/work"
	FLEET_HOSTS+=("$h")
	FLEET_NS[$h]=$ns
	FLEET_IP[$h]=$FLEET_NET.$(( 10 + n ))
	ip netns add "$ns" || { fleet_say "ip netns add $ns failed"; return 1; }
	ip link add "$vh" type veth peer name "$vn" || return 1
	ip link set "$vh" master "$FLEET_BR" up || return 1
	ip link set "$vn" netns "$ns" || return 1
	ip -n "$ns" link set lo up
	ip -n "$ns" link set "$vn" name eth0
	ip -n "$ns" addr add "${FLEET_IP[$h]}/24" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" route add default via "$FLEET_GW"
	FLEET_IMG[$h]=$d/img
	"$BIN/mkfs.glassfs" -s "$FLEET_IMG_SIZE" -L "$h" "$d/img" >"$d/mkfs.log" 2>&1 ||
		{ fleet_say "$h: mkfs.glassfs failed: $(tail -2 "$d/mkfs.log")"; return 1; }
	# -f: the daemon stays our child (its pid is the mount's owner).
	nsenter --net="/run/netns/$ns" -- "$BIN/glassfs" "$d/img" "$d/mnt" -f ${opts:+-o "$opts"} \
		2>"$d/glassfs.log" &
	FLEET_PID[$h]=$!
	FLEET_MNT[$h]=$d/mnt
	local i
	for i in $(seq 100); do
		mountpoint -q "$d/mnt" && break
		kill -0 "${FLEET_PID[$h]}" 2>/dev/null || break
		sleep 0.05
	done
	mountpoint -q "$d/mnt" || { fleet_say "$h: glassfs did not mount: $(tail -2 "$d/glassfs.log")"; return 1; }
	fleet_say "$h: ${FLEET_IP[$h]} in netns $ns, glassfs pid ${FLEET_PID[$h]} ${opts:+-o $opts}"
}

# fleet_aggd [FLAGS]: start (or restart, on the same port) the aggregator.
fleet_aggd() {
	local i
	rm -f "$FLEET_DIR/aggd.port"
	"$BIN/glass-aggd" --listen "$FLEET_GW:${FLEET_PORT:-0}" --port-file "$FLEET_DIR/aggd.port" \
		--store "${FLEET_STORE:-sqlite:$FLEET_DIR/agg.db}" --tokens "$FLEET_DIR/tokens" \
		--ui "$FLEET_DIR/ui" "$@" 2>>"$FLEET_DIR/aggd.log" &
	FLEET_AGGD=$!
	for i in $(seq 200); do
		if [ -s "$FLEET_DIR/aggd.port" ]; then
			FLEET_PORT=$(cat "$FLEET_DIR/aggd.port")
			FLEET_URL=http://$FLEET_GW:$FLEET_PORT
			curl -sf "$FLEET_URL/healthz" >/dev/null && return 0
		fi
		kill -0 "$FLEET_AGGD" 2>/dev/null || break
		sleep 0.05
	done
	fleet_say "glass-aggd did not start: $(tail -3 "$FLEET_DIR/aggd.log")"
	return 1
}

fleet_aggd_stop() {
	[ -n "$FLEET_AGGD" ] || return 0
	kill "$FLEET_AGGD" 2>/dev/null
	wait "$FLEET_AGGD" 2>/dev/null
	local rc=$?
	FLEET_AGGD=
	return $rc
}

# The per-window profiler of a host: off-CPU stacks of its glassfs daemon
# on stdout; with FLEET_SUMMARY=1 also its commit latencies, turned into
# the window's summaries (commit_p99_ns, commit_count) for --summary-cmd.
_fleet_profiler() {
	local d=$1
	cat >"$d/profile.sh" <<SH
#!/bin/sh
# profile.sh PID SECONDS (written by fleet-lib.sh)
pid=\$1 s=\$2
rm -f "$d/commitlat.json"
if [ "${FLEET_SUMMARY:-0}" = 1 ] && [ -x "$BIN/glass-commitlat" ]; then
	"$BIN/glass-commitlat" -p "\$pid" -d "\$s" -j >"$d/commitlat.json" 2>>"$d/commitlat.err" &
fi
"$BIN/glass-offcputime" -f --no-idle -p "\$pid" -d "\$s" 2>>"$d/offcpu.err"
wait
SH
	cat >"$d/summary.sh" <<SH
#!/bin/sh
# summary.sh: commit latency of the last window as agent summaries
exec python3 - "$d/commitlat.json" <<'PY'
import json, sys
try:
    c = json.load(open(sys.argv[1]))
except Exception:
    print("{}"); sys.exit(0)
lat = c.get("latency_ns", {})
n = sum(b["count"] for b in lat.get("hist", []))
out = {"commit_count": int(c.get("commits", 0))}
if n:
    # p99 from the log2 histogram: the upper bound of the bucket holding
    # the 99th percentile, never above the largest commit seen.
    acc, p99 = 0, 0
    for b in sorted(lat["hist"], key=lambda b: b["lo"]):
        acc += b["count"]
        if acc >= 0.99 * n:
            p99 = min(b["hi"], lat.get("max", b["hi"])); break
    out["commit_p99_ns"] = int(p99)
print(json.dumps(out))
PY
SH
	chmod +x "$d/profile.sh" "$d/summary.sh"
}

# fleet_agent NAME [glass-agent flags]: interval FLEET_INTERVAL (default 2).
fleet_agent() {
	local h=$1 d=$FLEET_DIR/$1; shift
	local sum=()
	_fleet_profiler "$d"
	[ "${FLEET_SUMMARY:-0}" = 1 ] && sum=(--summary-cmd "$d/summary.sh")
	# nsenter execs the agent: $! is the agent's pid.
	nsenter --net="/run/netns/${FLEET_NS[$h]}" -- "$BIN/glass-agent" --server "http://$FLEET_GW:$FLEET_PORT" \
		--token-file "$FLEET_DIR/tokens" --host "$h" --interval "${FLEET_INTERVAL:-2}" \
		--mount "${FLEET_MNT[$h]}" --profiler-cmd "$d/profile.sh {pid} {interval}" --units us \
		"${sum[@]}" --spool "$d/spool" --max-backoff 2 --flush-timeout 20 "$@" \
		2>>"$d/agent.log" &
	FLEET_AGENT[$h]=$!
}

fleet_agent_stop() {
	local h=$1 p=${FLEET_AGENT[$1]:-}
	[ -n "$p" ] || return 0
	kill -TERM "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	local rc=$?
	FLEET_AGENT[$h]=
	return $rc
}

# fleet_load NAME SECONDS THREADS: fs_mark zero-length creates (no fsync),
# one directory per thread, looping until SECONDS pass.  fs_mark writes
# fs_log.txt into its working directory: that is NAME's work dir.
fleet_load() {
	local h=$1 secs=$2 thr=$3 d=$FLEET_DIR/$1 t dirs=()
	# fs_mark wants directory names under 40 bytes: a short relative
	# path through a symlink in the work directory.
	ln -sfn "${FLEET_MNT[$h]}" "$d/work/m"
	for t in $(seq "$thr"); do
		mkdir -p "${FLEET_MNT[$h]}/load/t$t"
		dirs+=(-d "m/load/t$t")
	done
	(cd "$d/work" && exec nsenter --net="/run/netns/${FLEET_NS[$h]}" -- \
		timeout -s INT "$secs" fs_mark "${dirs[@]}" -s 0 -n 1000 -S 0 -L 100000 >"$d/fsmark.log" 2>&1) &
	FLEET_LOADS+=($!)
}

fleet_load_wait() {
	local p
	for p in "${FLEET_LOADS[@]}"; do wait "$p" 2>/dev/null; done
	FLEET_LOADS=()
}

fleet_load_stop() {
	local p
	for p in "${FLEET_LOADS[@]}"; do kill -INT "$p" 2>/dev/null; done
	fleet_load_wait
}

# files/s of a host's fs_mark run (the mean of its loops' rates).
fleet_load_rate() {
	awk '/^ *[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+/ {s += $4; n++} END {printf "%.0f", n ? s / n : 0}' \
		"$FLEET_DIR/$1/fsmark.log"
}

fleet_cleanup() {
	local h p i
	for h in "${FLEET_HOSTS[@]}"; do
		p=${FLEET_AGENT[$h]:-}
		[ -n "$p" ] && kill -TERM "$p" 2>/dev/null
	done
	for p in "${FLEET_LOADS[@]}"; do kill -INT "$p" 2>/dev/null; done
	for h in "${FLEET_HOSTS[@]}"; do
		p=${FLEET_AGENT[$h]:-}
		[ -n "$p" ] || continue
		for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
		FLEET_AGENT[$h]=
	done
	for p in "${FLEET_LOADS[@]}"; do wait "$p" 2>/dev/null; done
	FLEET_LOADS=()
	fleet_aggd_stop
	for h in "${FLEET_HOSTS[@]}"; do
		local m=${FLEET_MNT[$h]:-} dp=${FLEET_PID[$h]:-}
		if [ -n "$m" ] && awk -v m="$m" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo; then
			fusermount3 -u "$m" 2>/dev/null || { sleep 0.5; fusermount3 -u "$m" 2>/dev/null; } ||
				umount -l "$m" 2>/dev/null
		fi
		if [ -n "$dp" ]; then
			for i in $(seq 50); do kill -0 "$dp" 2>/dev/null || break; sleep 0.1; done
			kill -KILL "$dp" 2>/dev/null
			wait "$dp" 2>/dev/null
		fi
		FLEET_PID[$h]=
		[ -n "${FLEET_NS[$h]:-}" ] && ip netns del "${FLEET_NS[$h]}" 2>/dev/null
		FLEET_NS[$h]=
	done
	FLEET_HOSTS=()
	[ -n "$FLEET_BR" ] && ip link del "$FLEET_BR" 2>/dev/null
	FLEET_BR=
	if [ -n "$FLEET_DIR" ] && [ -z "${FLEET_KEEP:-}" ]; then
		rm -rf "$FLEET_DIR"
	elif [ -n "$FLEET_DIR" ]; then
		fleet_say "kept $FLEET_DIR"
	fi
	FLEET_DIR=
	return 0
}
