// grafana-check.js — every Grafana dashboard in dashboards/grafana/ loads,
// is well formed, and queries only what exists:
//   - PromQL names metrics (and labels) that a real glass-aggd exposes at
//     /metrics — scraped from one started here and fed the recorded fleet,
//     so labelled series exist;
//   - ClickHouse SQL names tables and columns of glass-aggd's ClickHouse
//     schema (the CREATE TABLE statements in aggregator/), hides unfinished
//     downsampling passes where a table has a pass column, runs on a real
//     clickhouse-server filled by glass-aggd, and answers the same there on
//     a two-shard cluster (?cluster=) as on plain tables.
// Prints PASS:/FAIL:/SKIP: lines; exit 0, 1, or 77 when nothing could run.
'use strict';

const fs = require('fs');
const path = require('path');
const aggd = require('./aggd');
const fleet = require('./fleet');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const DIR = path.join(ROOT, 'dashboards', 'grafana');

let fails = 0, passes = 0;
const pass = (n) => { passes++; console.log('PASS: ' + n); };
const fail = (n, w) => { fails++; console.log('FAIL: ' + n + ': grafana-check.js: ' + w); };
const skip = (n, w) => console.log('SKIP: ' + n + ': ' + w);

// ---- dashboards --------------------------------------------------------

function allPanels(d) {
	const out = [];
	(function walk(ps) {
		for (const p of ps || []) {
			out.push(p);
			if (p.panels) walk(p.panels);
		}
	})(d.panels);
	return out;
}

function dsType(ds, dash) {
	if (!ds) return null;
	if (typeof ds === 'string') return ds;
	if (ds.type) return ds.type;
	return null;
}

// Every query of a dashboard: {where, kind: 'prom'|'ch', text}.
function queriesOf(d, file) {
	const qs = [];
	for (const p of allPanels(d)) {
		if (p.type === 'row') continue;
		for (const t of p.targets || []) {
			const ty = dsType(t.datasource) || dsType(p.datasource);
			const where = file + ' panel ' + p.id + ' "' + p.title + '" ' + (t.refId || '');
			if (t.expr !== undefined) qs.push({where, kind: 'prom', text: t.expr});
			else if (t.rawSql !== undefined) qs.push({where, kind: 'ch', text: t.rawSql});
			else qs.push({where, kind: 'unknown:' + ty, text: JSON.stringify(t)});
		}
	}
	for (const v of (d.templating && d.templating.list) || []) {
		if (v.type !== 'query') continue;
		const text = typeof v.query === 'string' ? v.query : v.query && v.query.query;
		const ty = dsType(v.datasource);
		qs.push({where: file + ' variable $' + v.name, kind: /clickhouse/.test(ty) ? 'ch' : 'prom', text});
	}
	return qs;
}

function checkStructure(file, d) {
	const errs = [];
	for (const k of ['title', 'uid', 'panels', 'schemaVersion'])
		if (d[k] === undefined) errs.push('missing ' + k);
	const ids = new Set();
	for (const p of allPanels(d)) {
		if (ids.has(p.id)) errs.push('duplicate panel id ' + p.id);
		ids.add(p.id);
		if (!p.title) errs.push('panel ' + p.id + ' has no title');
		if (!p.gridPos || [p.gridPos.x, p.gridPos.y, p.gridPos.w, p.gridPos.h].some((x) => typeof x !== 'number'))
			errs.push('panel ' + p.id + ' has no gridPos');
		else if (p.gridPos.x + p.gridPos.w > 24) errs.push('panel ' + p.id + ' wider than the grid');
		if (p.type !== 'row' && !(p.targets && p.targets.length)) errs.push('panel ' + p.id + ' has no query');
		if (p.type !== 'row' && !p.description) errs.push('panel ' + p.id + ' has no description');
		for (const t of p.targets || [])
			if (!String(t.expr || t.rawSql || '').trim()) errs.push('panel ' + p.id + ' has an empty query');
	}
	const vars = new Set(((d.templating && d.templating.list) || []).map((v) => v.name));
	const used = JSON.stringify(d.panels).match(/\$\{?([A-Za-z_]\w*)/g) || [];
	for (const u of used) {
		const n = u.replace(/^\$\{?/, '');
		if (n.startsWith('__')) continue;	// Grafana's own ($__rate_interval, …)
		if (!vars.has(n)) errs.push('uses undefined variable $' + n);
	}
	return errs;
}

// ---- PromQL ------------------------------------------------------------

const PROM_WORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool',
	'and', 'or', 'unless', 'offset', 'sum', 'min', 'max', 'avg', 'count', 'stddev', 'stdvar', 'topk',
	'bottomk', 'quantile', 'count_values', 'group', 'inf', 'nan', 'atan2']);
// Labels Prometheus itself attaches at scrape time.
const TARGET_LABELS = new Set(['instance', 'job']);

// {metrics: [names], labels: [{label, metric|null}]}
function parsePromQL(q) {
	const labels = [], metrics = [];
	let s = q.replace(/"(?:[^"\\]|\\.)*"/g, '""');
	// label_values(metric, label) in variables
	s = s.replace(/label_values\(\s*([A-Za-z_:][\w:]*)?\s*(?:\{[^}]*\})?\s*,\s*(\w+)\s*\)/g, (m, metric, label) => {
		if (metric) metrics.push(metric);
		labels.push({label, metric: metric || null});
		return ' ';
	});
	s = s.replace(/\[[^\]]*\]/g, ' ');
	s = s.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (m, kw, ls) => {
		for (const l of ls.split(',').map((x) => x.trim()).filter(Boolean)) labels.push({label: l, metric: null});
		return ' ';
	});
	// metric{matchers}: matcher labels belong to that metric
	s = s.replace(/([A-Za-z_:][\w:]*)?\s*\{([^}]*)\}/g, (m, metric, body) => {
		for (const mm of body.matchAll(/([A-Za-z_]\w*)\s*(=~|!~|!=|=)/g))
			labels.push({label: mm[1], metric: metric || null});
		return metric ? ' ' + metric + ' ' : ' ';
	});
	s = s.replace(/\$\{?\w+(:\w+)?\}?/g, ' ');
	for (const m of s.matchAll(/([A-Za-z_:][\w:]*)(\s*\()?/g)) {
		if (m[2]) continue;	// a function call
		if (PROM_WORDS.has(m[1].toLowerCase())) continue;
		if (/^\d/.test(m[1])) continue;
		if (/^(e|E)\d*$/.test(m[1])) continue;
		metrics.push(m[1]);
	}
	return {metrics: [...new Set(metrics)], labels};
}

// Exposition text -> Map(sample name -> Set(label names)), plus families.
function parseExposition(text) {
	const samples = new Map(), families = new Map();
	for (const line of text.split('\n')) {
		if (!line.trim()) continue;
		let m = /^# TYPE (\S+) (\S+)/.exec(line);
		if (m) { families.set(m[1], m[2]); continue; }
		if (line.startsWith('#')) continue;
		m = /^([A-Za-z_:][\w:]*)(\{([^}]*)\})?\s+\S+/.exec(line);
		if (!m) throw new Error('bad exposition line: ' + line);
		const set = samples.get(m[1]) || new Set();
		for (const l of (m[3] || '').matchAll(/([A-Za-z_]\w*)="/g)) set.add(l[1]);
		samples.set(m[1], set);
	}
	return {samples, families};
}

function labelsOfMetric(expo, metric) {
	return expo.samples.get(metric) || null;
}

function checkProm(q, expo, legend) {
	const errs = [];
	const p = parsePromQL(q);
	if (!p.metrics.length) errs.push('names no metric');
	for (const m of p.metrics)
		if (!expo.samples.has(m)) errs.push('metric ' + m + ' is not exposed by glass-aggd');
	const known = new Set(TARGET_LABELS);
	for (const m of p.metrics) for (const l of labelsOfMetric(expo, m) || []) known.add(l);
	for (const {label, metric} of p.labels) {
		const set = metric ? new Set([...(labelsOfMetric(expo, metric) || []), ...TARGET_LABELS]) : known;
		if (!set.has(label)) errs.push('label ' + label + (metric ? ' of ' + metric : '') + ' does not exist');
	}
	for (const l of (legend || '').matchAll(/\{\{\s*(\w+)\s*\}\}/g))
		if (!known.has(l[1])) errs.push('legend label ' + l[1] + ' does not exist');
	return errs;
}

// ---- ClickHouse SQL ----------------------------------------------------

// Columns of a column list "a UInt64, b String, c Array(Int64)".
function columnsOf(list) {
	const cols = new Set();
	let depth = 0, cur = '';
	for (const ch of list + ',') {
		if (ch === '(') depth++;
		if (ch === ')') depth--;
		if (ch === ',' && depth === 0) {
			const w = /^\s*`?(\w+)`?/.exec(cur);
			if (w && !/^(INDEX|PRIMARY|CONSTRAINT|PROJECTION)$/i.test(w[1])) cols.add(w[1]);
			cur = '';
		} else cur += ch;
	}
	return cols;
}

// Tables and columns of glass-aggd's ClickHouse schema in aggregator/
// sources: CREATE TABLE statements with an ENGINE clause, or a table of
// { "name", "columns", "…MergeTree…", … } rows the DDL is built from.
function clickhouseSchema() {
	const dir = path.join(ROOT, 'aggregator');
	if (!fs.existsSync(dir)) return null;
	const tables = new Map(), used = new Set();
	const files = fs.readdirSync(dir).filter((f) => /\.(c|h|sql)$/.test(f));
	for (const f of files) {
		let t = fs.readFileSync(path.join(dir, f), 'utf8');
		// String macros (#define NAME "text") spelled out where they are
		// used, so a column list built as "a, " NAME reads as one literal.
		for (const m of [...t.matchAll(/^#define\s+(\w+)\s+("(?:[^"\\\n]|\\.)*")\s*$/gm)])
			t = t.replace(new RegExp('(?<!#define\\s+)\\b' + m[1] + '\\b', 'g'), m[2]);
		// C string literals joined: "a" "b" -> ab, escapes dropped.
		t = t.replace(/"\s*\n\s*"/g, '').replace(/\\n|\\t/g, ' ').replace(/\\"/g, '"');
		// The body may not run into another CREATE TABLE: SQLite's DDL (no
		// ENGINE clause) must not be read as ClickHouse's.
		for (const m of t.matchAll(/CREATE TABLE\s+(?:IF NOT EXISTS\s+)?(?:[^\s(.]+\.)?(\w+)\s*(?:ON CLUSTER\s+\S+\s*)?\(((?:(?!CREATE TABLE)[\s\S])*?)\)\s*ENGINE/gi)) {
			used.add(f);
			tables.set(m[1], new Set([...(tables.get(m[1]) || []), ...columnsOf(m[2])]));
		}
		// { "name", "col Type, ...", "XMergeTree() ORDER BY ...", ... }
		const lit = t.replace(/"\s+"/g, '');	// literals split on one line
		for (const m of lit.matchAll(/\{\s*"(\w+)",\s*"([^"]*)",\s*"[^"]*MergeTree\(/g)) {
			used.add(f);
			tables.set(m[1], new Set([...(tables.get(m[1]) || []), ...columnsOf(m[2])]));
		}
	}
	return tables.size ? {tables, files: [...used]} : null;
}

const SQL_WORDS = new Set(('select from where and or not in as inner left right full outer join on using group by ' +
	'order desc asc limit interval second minute hour day distinct having with case when then else end ' +
	'is null between like ilike any all union settings final prewhere array global true false offset').split(' '));

function checkSQL(q, schema) {
	const errs = [];
	let s = q.replace(/'(?:[^'\\]|\\.)*'/g, "''");
	const alias = new Map();	// alias or table name -> table
	for (const m of s.matchAll(/\b(?:FROM|JOIN)\s+(?:(?:\$\{\w+\}|\w+)\.)?(\w+)(?:\s+(?:AS\s+)?(?!(?:WHERE|INNER|LEFT|RIGHT|JOIN|ON|GROUP|ORDER|LIMIT|FINAL|PREWHERE)\b)(\w+))?/gi)) {
		if (!schema.tables.has(m[1])) { errs.push('table ' + m[1] + ' does not exist'); continue; }
		alias.set(m[1], m[1]);
		if (m[2]) alias.set(m[2], m[1]);
	}
	if (!alias.size && !errs.length) errs.push('names no table');
	s = s.replace(/\$\{[^}]*\}|\$__\w+/g, ' ');
	const outAlias = new Set([...s.matchAll(/\bAS\s+(\w+)/gi)].map((m) => m[1]));
	for (const m of s.matchAll(/\b(\w+)\.(\w+)\b/g)) {
		const t = alias.get(m[1]);
		if (!t) {
			if (!schema.tables.has(m[2]) && !/^\d+$/.test(m[1])) errs.push('unknown table alias ' + m[1]);
			continue;
		}
		if (!schema.tables.get(t).has(m[2])) errs.push('column ' + m[1] + '.' + m[2] + ' does not exist in ' + t);
	}
	const bare = s.replace(/\b\w+\.\w+\b/g, ' ').replace(/\.\w+/g, ' ');
	const cols = new Set([...alias.values()].flatMap((t) => [...schema.tables.get(t)]));
	for (const m of bare.matchAll(/\b([A-Za-z_]\w*)\b(\s*\()?/g)) {
		const w = m[1];
		if (m[2] || SQL_WORDS.has(w.toLowerCase()) || outAlias.has(w) || alias.has(w)) continue;
		if (!cols.has(w)) errs.push('column ' + w + ' does not exist in ' + [...new Set(alias.values())].join(','));
	}
	return errs;
}

// Tables with a pass column (samples, locks, windows) hold, while a
// downsampling pass is unfinished, rows glass-aggd's own queries leave out
// (store_clickhouse.c, ch_hide()): a query over one of them must leave them
// out too -- gen.py's hide(): a coarse row only if its pass is in the
// passes table as written or done, and a time at or above the written
// passes' cut for the row's level.  Returns what is missing.
function checkHide(q, schema) {
	const errs = [];
	for (const m of q.matchAll(/\b(?:FROM|JOIN)\s+(?:(?:\$\{\w+\}|\w+)\.)?(\w+)(?:\s+(?:AS\s+)?(?!(?:WHERE|INNER|LEFT|RIGHT|JOIN|ON|GROUP|ORDER|LIMIT|FINAL|PREWHERE)\b)(\w+))?/gi)) {
		const cols = schema.tables.get(m[1]);
		if (m[1] === 'passes' || !cols || !cols.has('pass')) continue;
		const a = m[2] || m[1];
		if (!new RegExp('\\(' + a + '\\.pass = 0 OR ' + a + '\\.pass (?:GLOBAL )?IN \\(SELECT pass_id FROM \\(SELECT .*\\.passes .*HAVING pass_state IN \\(2, 3\\)\\)\\)\\)').test(q) ||
		    !new RegExp('\\b' + a + '\\.\\w+ >= \\(SELECT \\[maxIf\\(.*\\.passes .*HAVING pass_state = 2\\)\\)\\[' + a + '\\.pass % 4 \\+ 1\\]').test(q))
			errs.push(m[1] + ' AS ' + a + ' does not hide unfinished downsampling passes (gen.py hide())');
	}
	return errs;
}

// ---- ClickHouse, for real -----------------------------------------------

// Start Debian's clickhouse-server on free loopback ports with a private
// data dir, and glass-aggd on it; ingest the recorded fleet.  Returns
// {query(sql) -> {status, body}, from, until, hosts, cleanup()} or throws.
async function clickhouseRig() {
	const {spawn} = require('child_process');
	const os = require('os');
	const chs = ['/usr/sbin/clickhouse-server', '/usr/bin/clickhouse-server'].find((f) => fs.existsSync(f));
	if (!chs) { const e = new Error('clickhouse-server not installed'); e.absent = true; throw e; }
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'glassfs-dash-ch-'));
	const hp = await aggd.freePort(), tp = await aggd.freePort();
	fs.writeFileSync(path.join(dir, 'config.xml'), `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>${dir}/server.log</log><errorlog>${dir}/err.log</errorlog></logger>
  <http_port>${hp}</http_port><tcp_port>${tp}</tcp_port><listen_host>127.0.0.1</listen_host>
  <path>${dir}/data/</path><tmp_path>${dir}/tmp/</tmp_path><user_files_path>${dir}/uf/</user_files_path>
  <users_config>/etc/clickhouse-server/users.xml</users_config>
  <default_profile>default</default_profile><default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
  <remote_servers>
    <two>
      <shard><replica><host>127.0.0.1</host><port>${tp}</port><default_database>glassfs_s1</default_database></replica></shard>
      <shard><replica><host>127.0.0.1</host><port>${tp}</port><default_database>glassfs_s2</default_database></replica></shard>
    </two>
  </remote_servers>
</yandex>
`);
	const log = fs.openSync(path.join(dir, 'stdout'), 'a');
	const ch = spawn(chs, ['--config-file=' + path.join(dir, 'config.xml')], {stdio: ['ignore', log, log]});
	fs.closeSync(log);
	const kill = () => { try { ch.kill('SIGKILL'); } catch (e) { /* gone */ } };
	process.on('exit', kill);
	let server = null, cluster = null;
	const cleanup = async () => {
		if (server) await server.cleanup();
		if (cluster) await cluster.cleanup();
		if (ch.exitCode === null && ch.signalCode === null) {
			const gone = new Promise((r) => ch.once('exit', r));
			ch.kill('SIGTERM');
			const t = setTimeout(kill, 5000);
			await gone;
			clearTimeout(t);
		}
		process.removeListener('exit', kill);
		fs.rmSync(dir, {recursive: true, force: true});
	};
	const query = (sql) => aggd.request(hp, 'POST', '/', sql);
	try {
		let up = false;
		for (let i = 0; i < 150 && !up && ch.exitCode === null; i++) {
			try { up = (await query('SELECT 1')).status === 200; } catch (e) { /* starting */ }
			if (!up) await new Promise((r) => setTimeout(r, 100));
		}
		if (!up) {
			let why = '';
			try { why = fs.readFileSync(path.join(dir, 'err.log'), 'utf8').split('\n').slice(-3).join(' '); } catch (e) { /* none */ }
			throw new Error('clickhouse-server did not start on 127.0.0.1:' + hp + ': ' + why);
		}
		server = await aggd.start({store: 'clickhouse://127.0.0.1:' + hp + '/glassfs'});
		// Every third window of the recorded fleet: each host, the outlier's
		// before and after, and a third of ClickHouse's per-INSERT cost.
		const now = Math.floor(Date.now() / 1000), t0 = Date.now();
		const windows = fleet.windows(now).filter((w, i) => i % 3 === 0);
		await server.ingest(windows);
		const ms = Date.now() - t0;
		// The same windows in a two-shard cluster (Distributed tables in
		// glassfs_c over glassfs_s1 and glassfs_s2 on this one server).
		cluster = await aggd.start({store: 'clickhouse://127.0.0.1:' + hp + '/glassfs_c?cluster=two'});
		await cluster.ingest(windows);
		const version = (await query('SELECT version()')).body.trim();
		return {query, version, ms, windows, from: now - 3600, until: now + 60, hosts: fleet.HOSTS.map((h) => h.host), cleanup, server, now, port: hp};
	} catch (e) {
		await cleanup();
		throw e;
	}
}

// The Grafana macros and variables this repo's dashboards use, expanded
// the way grafana-clickhouse-datasource and Grafana expand them.  RIG:
// {from, until (Unix seconds), hosts: [names], database (default glassfs)};
// also used by grafana-sums.js (tests/aggregator/downsample.test).
function expandMacros(sql, rig) {
	return sql
		.replace(/\$\{database\}/g, rig.database || 'glassfs')
		.replace(/\$__fromTime/g, 'toDateTime(' + rig.from + ')')
		.replace(/\$__toTime/g, 'toDateTime(' + rig.until + ')')
		.replace(/\$__interval_s/g, '60')
		.replace(/\$\{host:singlequote\}/g, rig.hosts.map((h) => "'" + h + "'").join(','));
}

// Rows in a canonical order, floats to 9 digits (sums in another order
// may differ in the last bits).
function canonRows(data) {
	return JSON.stringify(data.map((r) => JSON.stringify(Object.keys(r).sort().map((k) =>
		[k, typeof r[k] === 'number' ? Number(r[k].toPrecision(9)) : r[k]]))).sort());
}

// Unfinished downsampling passes are hidden on the cluster too (through
// Distributed tables: the passes set is built where the query runs).  A
// fake pass P of tier 1 copies every window of glassfs_c at level 1 (as
// its coarse rows); the "Off-CPU time" panel must show the sums it showed
// before while P is STAGING (its copies hidden) and once it is WRITTEN
// (its sources hidden instead), and twice them when passes is ignored.
// Run last: it changes glassfs_c.  (downsample.test kills a real pass at
// every step on plain tables.)
async function clusterPasses(rig, board) {
	const name = 'hides an unfinished downsampling pass on a two-shard cluster';
	const panel = allPanels(board).find((p) => p.title === 'Off-CPU time');
	if (!panel) { fail(name, 'no "Off-CPU time" panel'); return; }
	const crig = {...rig, database: 'glassfs_c'};
	const exec = async (sql) => {
		const r = await aggd.request(rig.port, 'POST', '/?insert_distributed_sync=1', sql);
		if (r.status !== 200) throw new Error('HTTP ' + r.status + ': ' + r.body.split('\n')[0].slice(0, 300) + ' — in: ' + sql.slice(0, 200));
		return r.body;
	};
	const sums = async (sql) => {
		const out = {};
		for (const r of JSON.parse(await exec(sql + '\nFORMAT JSON')).data)
			out[r.host] = (out[r.host] || 0) + Number(r.offcpu);
		return JSON.stringify(Object.keys(out).sort().map((h) => [h, out[h]]));
	};
	const dash = () => sums(expandMacros(panel.targets[0].rawSql, crig));
	try {
		const before = await dash();
		const P = 4 * rig.now + 1, cut = (rig.until + 1) + '000000000';	// level 1; ns past 2^53 as text
		await exec(`INSERT INTO glassfs_c.windows (id, wkey, host, ls, start_ns, end_ns, recv_ns, commit_p99_ns,
 commit_count, trim_stall_ns, lock_wait_ns, tot0, tot1, tot2, tot3, units, pass)
SELECT id + 1, concat('fake:', wkey), host, ls, start_ns, end_ns, recv_ns, commit_p99_ns, commit_count,
 trim_stall_ns, lock_wait_ns, tot0, tot1, tot2, tot3, units, ${P} FROM glassfs_c.windows WHERE pass = 0`);
		const pass_row = (state) => exec(`INSERT INTO glassfs_c.passes VALUES (${P}, 1, ${cut}, ${rig.now}000000000, 60000000000, ${state}, 0)`);
		await pass_row(1);
		const staging = await dash();
		await pass_row(2);
		const written = await dash();
		const raw = await sums(`SELECT w.host AS host, w.tot0 AS offcpu FROM glassfs_c.windows AS w WHERE w.start_ns >= ${rig.from}000000000 AND w.start_ns < ${rig.until}000000000`);
		const twice = JSON.stringify(JSON.parse(before).map(([h, n]) => [h, 2 * n]));
		if (before.length > 4 && staging === before && written === before && raw === twice)
			pass(name + ' (off-CPU per host the same while it is staging and written, twice that without the passes table)');
		else fail(name, 'off-CPU per host before ' + before + ', staging ' + staging + ', written ' + written +
			', ignoring passes ' + raw + ' (want twice before)');
	} catch (e) {
		fail(name, e.message);
	}
}

// The lock detail read back from ClickHouse equals SQLite's for the same
// windows: /locks, /lockstacks and lock_wait_ns by level.
async function compareLocks(rig) {
	let lite = null;
	try {
		lite = await aggd.start();
		await lite.ingest(rig.windows);
		const r = `from=${rig.from}&until=${rig.until}`;
		const paths = [`/api/v1/locks?${r}&n=50`, `/api/v1/lockstacks?class=root&level=2&format=folded&${r}`,
			`/api/v1/lockstacks?class=node&${r}&query=${encodeURIComponent('lockwait{host="stor-03"}')}`,
			`/api/v1/timeseries?metric=lock_wait_ns&by=class,level&step=60&${r}`];
		for (const p of paths) {
			const [a, b] = await Promise.all([lite.request('GET', p), rig.server.request('GET', p)]);
			const canon = (x) => {
				try {
					const j = JSON.parse(x);
					// equal sums may list equal-wait rows in either order
					for (const k of ['classes', 'instances', 'stacks'])
						if (Array.isArray(j[k])) j[k].sort((u, v) => JSON.stringify(u) < JSON.stringify(v) ? -1 : 1);
					return JSON.stringify(j);
				} catch (e) { return x.split('\n').sort().join('\n'); }
			};
			if (a.status === 200 && b.status === 200 && canon(a.body) === canon(b.body) && a.body.length > 40)
				pass('ClickHouse and SQLite agree: ' + p.split('?')[0] + ' ' + p.split('&')[0].split('?')[1]);
			else fail('ClickHouse and SQLite agree: ' + p, 'HTTP ' + a.status + '/' + b.status + '\n  sqlite: ' +
				a.body.slice(0, 200) + '\n  clickhouse: ' + b.body.slice(0, 200));
		}
	} catch (e) {
		fail('ClickHouse vs SQLite lock detail', e.message);
	} finally {
		if (lite) await lite.cleanup();
	}
}

// ---- main --------------------------------------------------------------

async function main() {
	const files = fs.readdirSync(DIR).filter((f) => f.endsWith('.json')).sort();
	if (!files.length) { fail('dashboards present', 'no JSON in ' + DIR); return 1; }
	const dashes = [];
	const uids = new Set();
	for (const f of files) {
		let d;
		try {
			d = JSON.parse(fs.readFileSync(path.join(DIR, f), 'utf8'));
		} catch (e) {
			fail(f + ' loads', e.message);
			continue;
		}
		const errs = checkStructure(f, d);
		if (uids.has(d.uid)) errs.push('uid ' + d.uid + ' used twice');
		uids.add(d.uid);
		if (errs.length) fail(f + ' is well formed', errs.join('; '));
		else pass(f + ' loads and is well formed (' + allPanels(d).length + ' panels)');
		dashes.push({f, d, qs: queriesOf(d, f)});
	}
	const all = dashes.flatMap((x) => x.qs.map((q) => ({...q, d: x.d})));
	const unknown = all.filter((q) => q.kind.startsWith('unknown'));
	if (unknown.length) fail('every query is PromQL or ClickHouse SQL', unknown.map((q) => q.where).join('; '));

	// PromQL against a real glass-aggd's /metrics.
	const prom = all.filter((q) => q.kind === 'prom');
	if (prom.length) {
		let server = null;
		try {
			server = await aggd.start();
		} catch (e) {
			if (e.notBuilt) skip('PromQL names metrics glass-aggd exposes', 'glass-aggd not built: ' + e.message);
			else fail('glass-aggd starts', e.message);
		}
		if (server) {
			try {
				// Feed it a few windows, one duplicate and one bad request so
				// labelled counters have series.
				const w = fleet.windows(Math.floor(Date.now() / 1000)).slice(0, 3);
				await server.ingest(w);
				await server.ingest(w.slice(0, 1));
				await server.request('POST', '/api/v1/ingest', '{', {Authorization: 'Bearer ' + server.token, 'Content-Type': 'application/json'});
				await server.request('GET', '/api/v1/hosts?from=now-1h&until=now');
				const r = await server.request('GET', '/metrics');
				if (r.status !== 200) throw new Error('/metrics: HTTP ' + r.status);
				const expo = parseExposition(r.body);
				console.log('glass-aggd /metrics exposes ' + expo.samples.size + ' series names');
				for (const q of prom) {
					const legend = (allPanels(q.d).flatMap((p) => p.targets || []).find((t) => t.expr === q.text) || {}).legendFormat;
					const errs = checkProm(q.text, expo, legend);
					if (errs.length) fail(q.where, errs.join('; ') + ' — in: ' + q.text);
					else pass(q.where + ': ' + parsePromQL(q.text).metrics.join(', '));
				}
				// Per-host series: stored windows counted, the duplicate not.
				const hw = /^glass_host_windows_total\{host="stor-01"\} (\d+)$/m.exec(r.body);
				const lv = /^glass_host_lock_level_wait_seconds_total\{host="stor-01",class="root",level="2"\} ([\d.]+)$/m.exec(r.body);
				const want = w.reduce((a, x) => a + x.locks.classes.filter((c) => c.class === 'root' && c.level === 2)
					.reduce((b, c) => b + c.wait_ns, 0), 0) / 1e9;
				if (hw && hw[1] === '3' && lv && Math.abs(Number(lv[1]) - want) < 1e-6)
					pass('per-host /metrics: windows stored (not the duplicate), lock wait by class and level');
				else fail('per-host /metrics', 'windows ' + (hw && hw[1]) + ' (want 3), root level 2 wait ' + (lv && lv[1]) + ' (want ' + want + ')');
				// The checker itself must be able to fail.
				const neg = checkProm('rate(glass_aggd_no_such_metric_total[5m])', expo).length &&
					checkProm('sum by (nosuchlabel) (glass_aggd_queries_total)', expo).length;
				if (neg) pass('the PromQL check rejects an unknown metric and label');
				else fail('the PromQL check rejects an unknown metric and label', 'it accepted them');
			} catch (e) {
				fail('scrape glass-aggd /metrics', e.message);
			} finally {
				await server.cleanup();
			}
		}
	}

	// ClickHouse SQL against the schema in aggregator/.
	const ch = all.filter((q) => q.kind === 'ch');
	if (ch.length) {
		const schema = clickhouseSchema();
		if (!schema) {
			skip('ClickHouse queries name existing columns',
				'no ClickHouse CREATE TABLE … ENGINE in aggregator/ yet (glass-aggd\'s ClickHouse store not merged) — ' + ch.length + ' queries unchecked');
		} else {
			console.log('ClickHouse schema from aggregator/' + schema.files.join(',') + ': ' +
				[...schema.tables.keys()].join(', '));
			for (const q of ch) {
				const errs = checkSQL(q.text, schema).concat(checkHide(q.text, schema));
				if (errs.length) fail(q.where, [...new Set(errs)].join('; '));
				else pass(q.where);
			}
			const neg = checkSQL('SELECT w.nosuchcol FROM x.windows AS w', schema).length;
			if (neg) pass('the SQL check rejects an unknown column');
			else fail('the SQL check rejects an unknown column', 'it accepted it');
			const hid = ch.filter((q) => /\.(samples|locks|windows) AS/.test(q.text));
			const negh = checkHide('SELECT sum(w.tot0) FROM x.windows AS w WHERE w.host = \'a\'', schema).length &&
				hid.length && hid.every((q) => checkHide(q.text.replace(/\.pass = 0 OR/g, '.pass >= 0 OR'), schema).length);
			if (negh) pass('the SQL check rejects a query over samples, locks or windows that does not hide unfinished passes (' + hid.length + ' queries)');
			else fail('the SQL check rejects a query that does not hide unfinished passes', 'it accepted one');
		}
		// Then run every query on a real ClickHouse that glass-aggd filled.
		let rig = null;
		try {
			rig = await clickhouseRig();
		} catch (e) {
			if (e.absent || e.notBuilt) skip('ClickHouse queries run on glass-aggd\'s ClickHouse store', e.message);
			else fail('ClickHouse rig (clickhouse-server + glass-aggd --store clickhouse://)', e.message);
		}
		if (rig) {
			try {
				console.log('clickhouse-server ' + rig.version + ' filled by glass-aggd with the recorded fleet (' + rig.ms + ' ms)');
				for (const q of ch) {
					const r = await rig.query(expandMacros(q.text, rig) + '\nFORMAT JSON');
					let rows = -1, data = [];
					try { ({rows, data} = JSON.parse(r.body)); } catch (e) { /* not JSON: an error */ }
					// The hosts table must rank the recorded outlier first.
					if (rows > 0 && / "Hosts" /.test(q.where) && data[0].host !== 'stor-03') {
						fail(q.where + ' ranks the outlier first', 'first row: ' + JSON.stringify(data[0]));
						continue;
					}
					if (r.status !== 200) fail(q.where + ' runs', 'HTTP ' + r.status + ': ' + r.body.split('\n')[0].slice(0, 300));
					else if (!(rows > 0)) fail(q.where + ' runs', 'no rows from the recorded fleet');
					else pass(q.where + ' runs on ClickHouse (' + rows + ' rows)');
					// The same answer from the two-shard cluster (Distributed
					// tables: an IN over another Distributed table, or one
					// the shards lack -- passes -- must be GLOBAL IN).
					const rc = await rig.query(expandMacros(q.text, {...rig, database: 'glassfs_c'}) + '\nFORMAT JSON');
					let cdata = null;
					try { cdata = JSON.parse(rc.body).data; } catch (e) { /* not JSON: an error */ }
					if (rc.status !== 200 || !cdata) fail(q.where + ' runs on a two-shard cluster', 'HTTP ' + rc.status + ': ' + rc.body.split('\n')[0].slice(0, 300));
					else if (canonRows(cdata) !== canonRows(data)) fail(q.where + ' answers the same on a two-shard cluster',
						'cluster ' + canonRows(cdata).slice(0, 300) + '\n  plain ' + canonRows(data).slice(0, 300));
					else pass(q.where + ' answers the same on a two-shard cluster');
				}
				await compareLocks(rig);
				await clusterPasses(rig, dashes.find((x) => x.f === 'glassfs-fleet-clickhouse.json').d);
			} finally {
				await rig.cleanup();
			}
		}
	}
	if (!passes && !fails) return 77;
	return fails ? 1 : 0;
}

module.exports = {parsePromQL, parseExposition, checkProm, checkSQL, checkHide, clickhouseSchema, expandMacros, queriesOf, allPanels};

if (require.main === module)
	main().then((rc) => process.exit(rc), (e) => { console.log('FAIL: harness: ' + (e && e.stack || e)); process.exit(1); });
