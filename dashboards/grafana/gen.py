#!/usr/bin/env python3
# gen.py — writes the Grafana dashboards in this folder (the JSON is what
# Grafana imports and what tests/browser/dashboard-grafana.test checks;
# edit here and re-run: python3 dashboards/grafana/gen.py).
import json, os
OUT=os.path.dirname(os.path.abspath(__file__))+'/'
def dump(name, board):
    with open(OUT+name,'w') as f:
        json.dump(board,f,indent=1); f.write('\n')
def grid(i, w=12, h=8, per_row=2, y0=0):
    return {"h":h,"w":w,"x":(i%per_row)*w,"y":y0+(i//per_row)*h}
PROM={"type":"prometheus","uid":"${datasource}"}
def ts(pid, title, desc, targets, unit, gp, stack=False, legend=True):
    return {"id":pid,"type":"timeseries","title":title,"description":desc,"datasource":PROM,"gridPos":gp,
      "fieldConfig":{"defaults":{"unit":unit,"custom":{"lineWidth":2,"fillOpacity":10,"stacking":{"mode":"normal" if stack else "none"}}},"overrides":[]},
      "options":{"legend":{"displayMode":"table","placement":"bottom","calcs":["mean","max","lastNotNull"]} if legend else {"showLegend":False},"tooltip":{"mode":"multi"}},
      "targets":[{"refId":chr(65+i),"datasource":PROM,"expr":e,"legendFormat":l,"range":True} for i,(e,l) in enumerate(targets)]}
def stat(pid, title, desc, expr, unit, gp):
    return {"id":pid,"type":"stat","title":title,"description":desc,"datasource":PROM,"gridPos":gp,
      "fieldConfig":{"defaults":{"unit":unit},"overrides":[]},"options":{"reduceOptions":{"calcs":["lastNotNull"]},"colorMode":"value","graphMode":"area"},
      "targets":[{"refId":"A","datasource":PROM,"expr":expr,"instant":False,"range":True}]}
sel='instance=~"$instance"'
R='[$__rate_interval]'
panels=[]
panels.append(stat(1,"Windows stored","Windows in glass-aggd's store.",f'sum(glass_aggd_store_windows{{{sel}}})',"short",{"h":4,"w":4,"x":0,"y":0}))
panels.append(stat(2,"Distinct stacks","Stacks stored once (deduplicated by hash).",f'sum(glass_aggd_store_stacks{{{sel}}})',"short",{"h":4,"w":4,"x":4,"y":0}))
panels.append(stat(3,"Label sets","Distinct label sets (host + labels).",f'sum(glass_aggd_store_labelsets{{{sel}}})',"short",{"h":4,"w":4,"x":8,"y":0}))
panels.append(stat(4,"Store size","Size of the store's main file.",f'sum(glass_aggd_store_bytes{{{sel}}})',"bytes",{"h":4,"w":4,"x":12,"y":0}))
panels.append(stat(5,"Ingest queue depth","Ingest requests waiting for or holding the store writer (now).",f'max(glass_aggd_queue_depth{{{sel}}})',"short",{"h":4,"w":4,"x":16,"y":0}))
panels.append(stat(6,"Uptime","Time since glass-aggd started.",f'time() - max(glass_aggd_start_time_seconds{{{sel}}})',"s",{"h":4,"w":4,"x":20,"y":0}))
y=4
panels.append(ts(7,"Ingest rate","Accepted ingest requests per second, by wire format (agent JSON or Pyroscope).",
  [(f'sum by (format) (rate(glass_aggd_ingest_requests_total{{{sel}}}{R}))',"{{format}}")],"reqps",grid(0,y0=y)))
panels.append(ts(8,"Windows and stacks ingested","Windows stored per second and distinct stacks per window stored per second; duplicates are windows re-sent by agents (idempotent ids) and not stored twice.",
  [(f'sum(rate(glass_aggd_ingest_windows_total{{{sel}}}{R}))',"windows/s"),
   (f'sum(rate(glass_aggd_ingest_stacks_total{{{sel}}}{R}))',"stacks/s"),
   (f'sum(rate(glass_aggd_ingest_duplicates_total{{{sel}}}{R}))',"duplicates/s")],"ops",grid(1,y0=y)))
panels.append(ts(9,"Rejected requests by reason","Requests refused before anything was written: bad tokens, malformed JSON or folded lines, oversized bodies, store errors.",
  [(f'sum by (reason) (rate(glass_aggd_rejected_requests_total{{{sel}}}{R})) > 0',"{{reason}}")],"reqps",grid(2,y0=y),stack=True))
panels.append(ts(10,"Store latency p50 / p99","Time spent in the store per operation (write = one window in one transaction, query = one merge or scan).",
  [(f'histogram_quantile(0.99, sum by (op, le) (rate(glass_aggd_store_seconds_bucket{{{sel}}}{R})))',"p99 {{op}}"),
   (f'histogram_quantile(0.5, sum by (op, le) (rate(glass_aggd_store_seconds_bucket{{{sel}}}{R})))',"p50 {{op}}"),
   (f'sum by (op) (rate(glass_aggd_store_seconds_sum{{{sel}}}{R})) / sum by (op) (rate(glass_aggd_store_seconds_count{{{sel}}}{R}))',"mean {{op}}")],"s",grid(3,y0=y)))
panels.append(ts(11,"Queue depth and requests in flight","Ingest requests queued on the store writer, and all requests being handled.",
  [(f'max(glass_aggd_queue_depth{{{sel}}})',"queue depth"),(f'sum(glass_aggd_inflight_requests{{{sel}}})',"in flight")],"short",grid(4,y0=y)))
panels.append(ts(12,"Query API rate","Query API requests per second (merge, top, diff, outliers, hosts, timeseries).",
  [(f'sum(rate(glass_aggd_queries_total{{{sel}}}{R}))',"queries/s")],"reqps",grid(5,y0=y)))
panels.append(ts(13,"Store growth","Windows, distinct stacks and label sets held by the store.",
  [(f'sum(glass_aggd_store_windows{{{sel}}})',"windows"),(f'sum(glass_aggd_store_stacks{{{sel}}})',"stacks"),(f'sum(glass_aggd_store_labelsets{{{sel}}})',"label sets")],"short",grid(6,y0=y)))
panels.append(ts(14,"Store size","Bytes in the store's main file.",[(f'sum by (instance) (glass_aggd_store_bytes{{{sel}}})',"{{instance}}")],"bytes",grid(7,y0=y)))
prom={"title":"glassfs · glass-aggd service","uid":"glassfs-aggd","description":"Health of the fleet aggregator glass-aggd, from its /metrics (Prometheus text format): ingest, rejections, store latency, queue depth, store size. The fleet's contention itself is on the 'glassfs · fleet contention (ClickHouse)' dashboard and in glass-aggd's own web UI.",
  "tags":["glassfs","glass-aggd","prometheus"],"timezone":"browser","schemaVersion":39,"version":1,"editable":True,"graphTooltip":1,
  "time":{"from":"now-1h","to":"now"},"refresh":"30s",
  "links":[{"title":"glass-aggd web UI","type":"link","url":"http://127.0.0.1:7470/","targetBlank":True}],
  "templating":{"list":[
    {"name":"datasource","label":"Prometheus","type":"datasource","query":"prometheus","current":{}},
    {"name":"instance","label":"glass-aggd","type":"query","datasource":PROM,"query":{"query":"label_values(glass_aggd_start_time_seconds, instance)","refId":"instance"},"definition":"label_values(glass_aggd_start_time_seconds, instance)","includeAll":True,"multi":True,"allValue":".*","current":{"text":"All","value":"$__all"},"refresh":2}]},
  "annotations":{"list":[]},"panels":panels}
dump('glass-aggd.json',prom)

CH={"type":"grafana-clickhouse-datasource","uid":"${datasource}"}
DB='${database}'
T='intDiv(w.start_ns, 1000000000)'
TF=f"w.start_ns >= toUnixTimestamp($__fromTime) * 1000000000 AND w.start_ns < toUnixTimestamp($__toTime) * 1000000000"
HOSTF="w.host IN (${host:singlequote})"
# Bucket start without toStartOfInterval (absent from Debian's ClickHouse
# 18.16); the same SQL runs on current ClickHouse.  Output aliases never
# reuse a column's name: ClickHouse resolves aliases everywhere, so
# max(x) AS x would turn a WHERE on x into an aggregate.
BUCKET=f"toDateTime(intDiv({T}, $__interval_s) * $__interval_s)"
# Downsampling passes (aggregator/store_clickhouse.c, "downsampling
# passes") that are not finished -- running, or left by a crash until
# glass-aggd's next start -- must be hidden as glass-aggd's own queries
# hide them (ch_hide()), or a panel counts a window twice (coarse rows and
# their sources) or counts rows that will be undone.  A pass is unfinished
# while max(state) < 3 in the passes table (1 STAGING, 2 WRITTEN, 3 DONE,
# 4 UNDONE); only samples, locks and windows have the pass column (the lock
# detail tables, lockclasses, lockinst and lockstacks, are never
# downsampled).
#   - STAGING hides the pass's own rows.  Written the other way round: a
#     coarse row (pass != 0) counts once its pass is WRITTEN or DONE, so a
#     query that read passes just before a pass began cannot count the
#     pass's first coarse rows either, and an undone pass's rows never count.
#   - WRITTEN hides its sources: rows of a level (pass % 4) below its tier
#     older than its cut.  So a row of level L is hidden when its time is
#     below the largest cut of the written passes whose tier exceeds L (a
#     pass's own rows are of level = tier and never hidden).
# ClickHouse 18.16 has no correlated subqueries and does not see a column
# used only inside a lambda in WHERE ("Unknown identifier"), so: an IN
# subquery, and a scalar array of cuts indexed by the row's level.  On a
# cluster (glass-aggd --store ...?cluster=) the tables are Distributed and
# passes exists only where glass-aggd writes: GLOBAL IN evaluates the set
# there and ships it to the shards (the scalar subquery is a constant by
# then), as it must for labelsets, itself Distributed (a plain IN over it is
# refused: "Double-distributed IN/JOIN subqueries is denied").
def passes_where(having):
    return (f"SELECT p.pass AS pass_id, max(p.state) AS pass_state, any(p.tier) AS pass_tier, any(p.cut) AS pass_cut "
            f"FROM {DB}.passes AS p GROUP BY pass_id HAVING {having}")
def hide(a, tcol):
    """The condition keeping the rows of table alias A (time column TCOL)
    that no unfinished downsampling pass hides."""
    return (f"({a}.pass = 0 OR {a}.pass GLOBAL IN (SELECT pass_id FROM ({passes_where('pass_state IN (2, 3)')})))\n"
            f"    AND {a}.{tcol} >= (SELECT [maxIf(pass_cut, pass_tier > 0), maxIf(pass_cut, pass_tier > 1), "
            f"maxIf(pass_cut, pass_tier > 2), 0] FROM ({passes_where('pass_state = 2')}))[{a}.pass % 4 + 1]")
def chp(pid,title,desc,ptype,sql,fmt,unit,gp,extra=None):
    p={"id":pid,"type":ptype,"title":title,"description":desc,"datasource":CH,"gridPos":gp,
       "fieldConfig":{"defaults":{"unit":unit},"overrides":[]},
       "targets":[{"refId":"A","datasource":CH,"editorType":"sql","queryType":"timeseries" if fmt==0 else "table","format":fmt,"rawSql":sql}]}
    if ptype=="timeseries": p["options"]={"legend":{"displayMode":"table","placement":"bottom","calcs":["mean","max"]},"tooltip":{"mode":"multi"}}
    if extra: p.update(extra)
    return p
def top_stacks(stype, col):
    """The 25 heaviest stacks of sample type STYPE (0 off-CPU, 2 lock wait) over
    the selected hosts and range, their text joined from the stacks table."""
    return f"""SELECT text AS stack, ns AS {col}
FROM (
  SELECT s.stack AS id, sum(s.count) AS ns
  FROM {DB}.samples AS s
  WHERE s.type = {stype} AND s.t >= toUnixTimestamp($__fromTime) * 1000000000 AND s.t < toUnixTimestamp($__toTime) * 1000000000
    AND s.ls GLOBAL IN (SELECT l.id FROM {DB}.labelsets AS l WHERE l.host IN (${{host:singlequote}}))
    AND {hide('s', 't')}
  GROUP BY id
)
ANY INNER JOIN (SELECT st.id AS id, any(st.text) AS text FROM {DB}.stacks AS st GROUP BY id) USING id
ORDER BY {col} DESC
LIMIT 25"""
def ns_columns(*cols):
    """Table defaults in plain numbers, the named columns in nanoseconds."""
    return {"fieldConfig":{"defaults":{"unit":"short"},"overrides":[
        {"matcher":{"id":"byName","options":c},"properties":[{"id":"unit","value":"ns"}]} for c in cols]}}
STACKED_NS={"fieldConfig":{"defaults":{"unit":"ns","custom":{"stacking":{"mode":"normal"},"fillOpacity":30}},"overrides":[]}}
cp=[]
cp.append(chp(1,"Hosts","Per host over the range (summaries a window did not report, stored as -1, are left out): off-CPU time per second (of the windows that carry an off-CPU profile), the share of it spent waiting for glassfs locks, commit p99 (worst window), trim stalls. Sort by a column; a host far above the others is the one slowing the cluster.","table",
f"""SELECT w.host AS host,
  count() AS nwindows,
  sum(w.tot0) / greatest(sumIf(w.end_ns - w.start_ns, w.tot0 > 0) / 1e9, 1e-9) AS offcpu_ns_per_s,
  sumIf(w.lock_wait_ns, w.lock_wait_ns >= 0) / greatest(sum(w.tot0), 1) AS lock_share,
  maxIf(w.commit_p99_ns, w.commit_p99_ns >= 0) AS p99_ns,
  sumIf(w.trim_stall_ns, w.trim_stall_ns >= 0) AS trim_ns,
  max(w.end_ns) AS last_seen_ns
FROM {DB}.windows AS w
WHERE {TF} AND {HOSTF}
  AND {hide('w', 'start_ns')}
GROUP BY host
ORDER BY lock_share DESC""",1,"short",{"h":9,"w":24,"x":0,"y":0},
 {"fieldConfig":{"defaults":{"unit":"short"},"overrides":[
   {"matcher":{"id":"byName","options":"offcpu_ns_per_s"},"properties":[{"id":"unit","value":"ns"},{"id":"displayName","value":"Off-CPU per second"}]},
   {"matcher":{"id":"byName","options":"lock_share"},"properties":[{"id":"unit","value":"percentunit"},{"id":"displayName","value":"Lock-wait share"},{"id":"custom.cellOptions","value":{"type":"gauge","mode":"basic"}},{"id":"max","value":1}]},
   {"matcher":{"id":"byName","options":"p99_ns"},"properties":[{"id":"unit","value":"ns"},{"id":"displayName","value":"Commit p99"}]},
   {"matcher":{"id":"byName","options":"trim_ns"},"properties":[{"id":"unit","value":"ns"},{"id":"displayName","value":"Trim stalls"}]},
   {"matcher":{"id":"byName","options":"last_seen_ns"},"properties":[{"id":"custom.hidden","value":True}]},
   {"matcher":{"id":"byName","options":"nwindows"},"properties":[{"id":"displayName","value":"Windows"}]}]},
  "options":{"sortBy":[{"displayName":"Lock-wait share","desc":True}]}}))
cp.append(chp(2,"Commit latency p99","Per host, the worst window's p99 commit time in each interval.","timeseries",
f"""SELECT {BUCKET} AS time, w.host AS host, max(w.commit_p99_ns) AS p99
FROM {DB}.windows AS w
WHERE {TF} AND {HOSTF}
  AND {hide('w', 'start_ns')} AND w.commit_p99_ns >= 0
GROUP BY time, host
ORDER BY time""",0,"ns",grid(0,y0=9)))
cp.append(chp(3,"Lock wait by class","Time spent waiting for glassfs locks, by lock class (root, node, group, alloc, txn, dev, …), summed over the selected hosts.","timeseries",
f"""SELECT {BUCKET.replace('w.start_ns', 'l.start_ns')} AS time, l.cls AS class, sum(l.ns) AS wait
FROM {DB}.locks AS l
WHERE {TF.replace('w.start_ns', 'l.start_ns')} AND {HOSTF.replace('w.host', 'l.host')}
  AND {hide('l', 'start_ns')}
GROUP BY time, class
ORDER BY time""",0,"ns",grid(1,y0=9),STACKED_NS))
cp.append(chp(4,"Discard (trim) stalls","Commit time spent waiting for discards, per host.","timeseries",
f"""SELECT {BUCKET} AS time, w.host AS host, sum(w.trim_stall_ns) AS stalls
FROM {DB}.windows AS w
WHERE {TF} AND {HOSTF}
  AND {hide('w', 'start_ns')} AND w.trim_stall_ns >= 0
GROUP BY time, host
ORDER BY time""",0,"ns",grid(2,y0=9)))
cp.append(chp(5,"Off-CPU time","Blocked time of profiled threads per host (sum of the off-CPU profile in each window; a window without one, e.g. wall-clock only, is no point at 0).","timeseries",
f"""SELECT {BUCKET} AS time, w.host AS host, sum(w.tot0) AS offcpu
FROM {DB}.windows AS w
WHERE {TF} AND {HOSTF}
  AND {hide('w', 'start_ns')} AND w.tot0 > 0
GROUP BY time, host
ORDER BY time""",0,"ns",grid(3,y0=9)))
cp.append(chp(6,"Ingest health","Windows received per interval, per host: a gap is an agent that stopped reporting (its spool will fill and drain when it returns).","timeseries",
f"""SELECT {BUCKET} AS time, w.host AS host, count() AS received
FROM {DB}.windows AS w
WHERE {TF} AND {HOSTF}
  AND {hide('w', 'start_ns')}
GROUP BY time, host
ORDER BY time""",0,"short",grid(4,y0=9),{"fieldConfig":{"defaults":{"unit":"short","custom":{"drawStyle":"bars","fillOpacity":60}},"overrides":[]}}))
cp.append(chp(7,"Top off-CPU stacks","The heaviest off-CPU stacks (folded, root first) across the selected hosts. The same selection as a flame graph: glass-aggd's /api/v1/merge?format=svg.","table",
top_stacks(0, "offcpu_ns"),1,"ns",grid(5,y0=9)))
cp.append(chp(8,"Top lock-wait stacks","Waiters' stacks from the lock-wait profiles (the leaf names the lock class).","table",
top_stacks(2, "lock_wait_ns"),1,"ns",{"h":9,"w":24,"x":0,"y":33}))
LTF=TF.replace('w.start_ns', 'c.start_ns')
LHOSTF=HOSTF.replace('w.host', 'c.host')
cp.append(chp(9,"Lock wait by B-tree level","Time waited for B-tree node and root locks by the level of the node (0 = leaves), summed over classes and the selected hosts: which level of the tree the threads queue on. From the agents' lock detail (glass-lockstat).","timeseries",
f"""SELECT {BUCKET.replace('w.start_ns', 'c.start_ns')} AS time, concat('level ', toString(c.level)) AS level_name, sum(c.wait_ns) AS wait
FROM {DB}.lockclasses AS c
WHERE {LTF} AND {LHOSTF} AND c.level >= 0
GROUP BY time, level_name
ORDER BY time""",0,"ns",{"h":8,"w":12,"x":0,"y":42},STACKED_NS))
cp.append(chp(10,"Lock classes by level","Lock classes across the selected hosts by total wait: contended acquisitions, worst single wait, hosts that waited.","table",
f"""SELECT c.cls AS lock_class, c.level AS btree_level, sum(c.wait_ns) AS wait_ns, sum(c.contended) AS contended,
  sum(c.acquired) AS acquired, max(c.wait_max_ns) AS worst_wait_ns, uniqExact(c.host) AS hosts
FROM {DB}.lockclasses AS c
WHERE {LTF} AND {LHOSTF}
GROUP BY lock_class, btree_level
ORDER BY wait_ns DESC
LIMIT 50""",1,"short",{"h":8,"w":12,"x":12,"y":42},
 ns_columns("wait_ns", "worst_wait_ns")))
cp.append(chp(11,"Most contended lock instances","One row per lock (host, address) across the fleet: its class, tree, B-tree level and lock group, time waited for it and contended acquisitions.","table",
f"""SELECT c.host AS lock_host, concat('0x', lower(hex(c.addr))) AS address, c.cls AS lock_class, c.tree AS tree_id,
  c.level AS btree_level, c.grp AS lock_group, sum(c.wait_ns) AS wait_ns, sum(c.contended) AS contended, max(c.wait_max_ns) AS worst_wait_ns
FROM {DB}.lockinst AS c
WHERE {LTF} AND {LHOSTF}
GROUP BY lock_host, address, lock_class, tree_id, btree_level, lock_group
ORDER BY wait_ns DESC
LIMIT 25""",1,"short",{"h":9,"w":24,"x":0,"y":50},
 ns_columns("wait_ns", "worst_wait_ns")))
cp.append(chp(12,"Waiters' stacks by lock","The stacks of the threads that waited, per lock class and B-tree level (folded, root first), from the agents' lock detail. The same as a flame graph: glass-aggd's /api/v1/lockstacks?class=CLASS&level=N&format=svg.","table",
f"""SELECT lock_class, btree_level, text AS stack, ns AS wait_ns, waits
FROM (
  SELECT c.stack AS id, c.cls AS lock_class, c.level AS btree_level, sum(c.wait_ns) AS ns, sum(c.count) AS waits
  FROM {DB}.lockstacks AS c
  WHERE {LTF} AND {LHOSTF}
  GROUP BY id, lock_class, btree_level
)
ANY INNER JOIN (SELECT st.id AS id, any(st.text) AS text FROM {DB}.stacks AS st GROUP BY id) USING id
ORDER BY wait_ns DESC
LIMIT 25""",1,"short",{"h":9,"w":24,"x":0,"y":59},
 ns_columns("wait_ns")))
HOSTQ=f"SELECT DISTINCT w.host FROM {DB}.windows AS w WHERE {hide('w', 'start_ns')} ORDER BY w.host"
ch={"title":"glassfs · fleet contention (ClickHouse)","uid":"glassfs-fleet-ch","description":"The glass-aggd web UI's panels over the ClickHouse store (glass-aggd --store clickhouse://HOST:8123/DB): hosts ranked by lock-wait share, commit p99, lock wait by class, trim stalls, off-CPU time, ingest health, top stacks. Needs the grafana-clickhouse-datasource plugin.",
  "tags":["glassfs","clickhouse","fleet"],"timezone":"browser","schemaVersion":39,"version":1,"editable":True,"graphTooltip":1,
  "time":{"from":"now-1h","to":"now"},"refresh":"1m",
  "templating":{"list":[
    {"name":"datasource","label":"ClickHouse","type":"datasource","query":"grafana-clickhouse-datasource","current":{}},
    {"name":"database","label":"Database","type":"custom","query":"glassfs","current":{"text":"glassfs","value":"glassfs"},"options":[{"text":"glassfs","value":"glassfs","selected":True}]},
    {"name":"host","label":"Host","type":"query","datasource":CH,"query":HOSTQ,"definition":HOSTQ,"includeAll":True,"multi":True,"current":{"text":"All","value":"$__all"},"refresh":2}]},
  "annotations":{"list":[]},"panels":cp}
dump('glassfs-fleet-clickhouse.json',ch)

# The fleet over glass-aggd's per-host series (/metrics, label host=...).
hsel='instance=~"$instance", host=~"$host"'
fp=[]
fp.append(ts(1,"Off-CPU time per host","Blocked time of profiled threads per second of wall time, per host (glass_host_offcpu_seconds_total): a host far above the others is blocked more.",
  [(f'sum by (host) (rate(glass_host_offcpu_seconds_total{{{hsel}}}{R}))',"{{host}}")],"s",grid(0)))
fp.append(ts(2,"Share of off-CPU time under glassfs locks","Lock wait over off-CPU time per host (the overview's 'share under B-tree locks'): the outlier of a contended lock scheme stands out.",
  [(f'sum by (host) (rate(glass_host_lock_wait_seconds_total{{{hsel}}}{R})) / sum by (host) (rate(glass_host_offcpu_seconds_total{{{hsel}}}{R}))',"{{host}}")],"percentunit",grid(1)))
fp.append(ts(3,"Commit latency p99","Per host, the p99 commit time of its newest window (glass_host_commit_p99_seconds).",
  [(f'max by (host) (glass_host_commit_p99_seconds{{{hsel}}})',"{{host}}")],"s",grid(2)))
fp.append(ts(4,"Discard (trim) stalls","Commit time spent waiting for discards, per second, per host.",
  [(f'sum by (host) (rate(glass_host_trim_stall_seconds_total{{{hsel}}}{R}))',"{{host}}")],"s",grid(3)))
fp.append(ts(5,"Lock wait by class","Time waited for glassfs locks per second by lock class (root, node, group, alloc, txn, dev …), summed over the selected hosts.",
  [(f'sum by (class) (rate(glass_host_lock_wait_seconds_total{{{hsel}}}{R}))',"{{class}}")],"s",grid(4),stack=True))
fp.append(ts(6,"Lock wait by B-tree level","Time waited for B-tree node and root locks per second by the node's level (0 = leaves), from the agents' lock detail; level -1 (not a node lock) left out.",
  [(f'sum by (level) (rate(glass_host_lock_level_wait_seconds_total{{{hsel}, level!="-1"}}{R}))',"level {{level}}")],"s",grid(5),stack=True))
fp.append(ts(7,"Contended lock acquisitions by class and level","Acquisitions that had to wait, per second, by lock class and B-tree level.",
  [(f'sum by (class, level) (rate(glass_host_lock_contended_total{{{hsel}}}{R}))',"{{class}} L{{level}}")],"ops",grid(6)))
fp.append(ts(8,"Ingest health","Windows stored per host per second, and seconds since each host's newest window: a host that stops reporting shows as a gap and a growing age.",
  [(f'sum by (host) (rate(glass_host_windows_total{{{hsel}}}{R}))',"{{host}} windows/s"),
   (f'time() - max by (host) (glass_host_last_window_timestamp_seconds{{{hsel}}})',"{{host}} age (s)")],"short",grid(7)))
fleet={"title":"glassfs · fleet contention (Prometheus)","uid":"glassfs-fleet-prom","description":"The glass-aggd web UI's fleet panels over glass-aggd's per-host series on /metrics (glass_host_*{host=...}): off-CPU time, the share of it under glassfs locks, commit p99, trim stalls, lock wait by class and by B-tree level, contended acquisitions, ingest health. The counters restart with glass-aggd (rate() handles that). Stacks and the lock table are in the web UI and on the ClickHouse dashboard.",
  "tags":["glassfs","fleet","prometheus"],"timezone":"browser","schemaVersion":39,"version":1,"editable":True,"graphTooltip":1,
  "time":{"from":"now-1h","to":"now"},"refresh":"30s",
  "links":[{"title":"glass-aggd web UI","type":"link","url":"http://127.0.0.1:7470/?view=locks","targetBlank":True}],
  "templating":{"list":[
    {"name":"datasource","label":"Prometheus","type":"datasource","query":"prometheus","current":{}},
    {"name":"instance","label":"glass-aggd","type":"query","datasource":PROM,"query":{"query":"label_values(glass_aggd_start_time_seconds, instance)","refId":"instance"},"definition":"label_values(glass_aggd_start_time_seconds, instance)","includeAll":True,"multi":True,"allValue":".*","current":{"text":"All","value":"$__all"},"refresh":2},
    {"name":"host","label":"Host","type":"query","datasource":PROM,"query":{"query":"label_values(glass_host_windows_total, host)","refId":"host"},"definition":"label_values(glass_host_windows_total, host)","includeAll":True,"multi":True,"allValue":".*","current":{"text":"All","value":"$__all"},"refresh":2}]},
  "annotations":{"list":[]},"panels":fp}
dump('glassfs-fleet-prometheus.json',fleet)
