// grafana-sums.js — run the ClickHouse dashboard's own SQL (from the
// generated dashboards/grafana/glassfs-fleet-clickhouse.json, macros
// expanded by grafana-check.js's expandMacros) against a ClickHouse server
// and print, as one canonical JSON line, the sums its panels show over the
// range:
//   offcpu_by_host      "Off-CPU time"          sum of offcpu per host
//   offcpu_stacks       "Top off-CPU stacks"    offcpu_ns per stack text
//   lock_wait_by_class  "Lock wait by class"    sum of wait per class
//   trim                "Discard (trim) stalls" sum of stalls
// tests/aggregator/downsample.test compares them with a never-downsampled
// reference while a downsampling pass is left unfinished.
//
// usage: node grafana-sums.js CLICKHOUSE_HTTP_URL DATABASE FROM UNTIL HOST[,HOST...]
//        (FROM, UNTIL: Unix seconds).  Exit 0 and the JSON on stdout, or 1
//        and why on stderr.
'use strict';

const fs = require('fs');
const path = require('path');
const http = require('http');
const {expandMacros, allPanels} = require('./grafana-check');

const FILE = path.resolve(__dirname, '..', '..', '..', 'dashboards', 'grafana', 'glassfs-fleet-clickhouse.json');

function post(url, body) {
	return new Promise((resolve, reject) => {
		const req = http.request(url, {method: 'POST', timeout: 60000}, (res) => {
			let data = '';
			res.setEncoding('utf8');
			res.on('data', (c) => { data += c; });
			res.on('end', () => resolve({status: res.statusCode, body: data}));
		});
		req.on('error', reject);
		req.on('timeout', () => req.destroy(new Error('timed out')));
		req.end(body);
	});
}

// PANEL's rows: [{column: value}], 64-bit integers as numbers.
async function rows(url, board, title, rig) {
	const p = allPanels(board).find((x) => x.title === title);
	if (!p) throw new Error(path.basename(FILE) + ' has no panel "' + title + '"');
	const sql = expandMacros(p.targets[0].rawSql, rig) + '\nFORMAT JSON';
	const r = await post(url, sql);
	if (r.status !== 200) throw new Error('panel "' + title + '": HTTP ' + r.status + ': ' + r.body.split('\n')[0].slice(0, 300));
	return JSON.parse(r.body).data;
}

function sumBy(data, key, val) {
	const out = {};
	for (const r of data) out[r[key]] = (out[r[key]] || 0) + Number(r[val]);
	return out;
}

// Keys sorted, so equal sums print equal lines.
function canon(o) {
	if (o === null || typeof o !== 'object') return o;
	const c = {};
	for (const k of Object.keys(o).sort()) c[k] = canon(o[k]);
	return c;
}

async function main(argv) {
	if (argv.length !== 5 || !/^https?:\/\//.test(argv[0]) || !/^\d+$/.test(argv[2]) || !/^\d+$/.test(argv[3]))
		throw new Error('usage: node grafana-sums.js CLICKHOUSE_HTTP_URL DATABASE FROM UNTIL HOST[,HOST...]');
	const [url, database, from, until, hosts] = argv;
	const board = JSON.parse(fs.readFileSync(FILE, 'utf8'));
	const rig = {database, from: Number(from), until: Number(until), hosts: hosts.split(',').filter(Boolean)};
	const out = {};
	out.offcpu_by_host = sumBy(await rows(url, board, 'Off-CPU time', rig), 'host', 'offcpu');
	out.offcpu_stacks = sumBy(await rows(url, board, 'Top off-CPU stacks', rig), 'stack', 'offcpu_ns');
	out.lock_wait_by_class = sumBy(await rows(url, board, 'Lock wait by class', rig), 'class', 'wait');
	out.trim = (await rows(url, board, 'Discard (trim) stalls', rig)).reduce((a, r) => a + Number(r.stalls), 0);
	return JSON.stringify(canon(out));
}

main(process.argv.slice(2)).then((line) => { console.log(line); },
	(e) => { console.error('grafana-sums.js: ' + (e && e.message || e)); process.exit(1); });
