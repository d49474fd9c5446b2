// overview.js — the fleet at a glance: one row per host with its off-CPU
// time per second, the share of it under B-tree locks, commit p99 and trim
// stalls over the range; the outlier ranking (/outliers) marks the hosts
// whose share of the chosen frame pattern is far above the fleet median.
// The table sorts by any column and is navigable with the keyboard:
// arrows/Home/End move between rows, Enter opens the host's flame graph.

import * as api from './api.js';
import * as state from './state.js';
import {dropIncomplete, parseTime} from './timeseries.js';
import {el, svg, clear, fmtNs, fmtPct, fmtAgo, notice, errorNotice, quoteValue, PALETTE, fmtWhen, rowNav} from './util.js';

const COLS = [
	{key: 'host', label: 'Host', num: false},
	{key: 'offcpu', label: 'Off-CPU', unit: 'per second', num: true},
	{key: 'lock', label: 'Under B-tree locks', unit: 'share of off-CPU', num: true},
	{key: 'p99', label: 'Commit p99', num: true},
	{key: 'trim', label: 'Trim stalls', num: true},
	{key: 'ratio', label: 'Pattern share', unit: 'vs fleet median', num: true},
	{key: 'trend', label: 'Off-CPU over range', wallLabel: 'Wall-clock over range', num: false, nosort: true},
	{key: 'seen', label: 'Last seen', num: true},
];

// The share of off-CPU time spent waiting for B-tree node and root locks.
// First the demo's finding, computed from the stored off-CPU stacks: of
// the time inside filesystem operations (fsops_*), the part under a B-tree
// lock -- the same stacks, threads and windows, so idle service threads do
// not dilute it.  Else the agents' lock detail over all off-CPU time, else
// -- agents that send only per-class summaries -- any glassfs lock.
export function btreeShare(r) {
	if (r.ops_btree_lock_share !== null && r.ops_btree_lock_share !== undefined) return r.ops_btree_lock_share;
	return r.btree_lock_share !== null && r.btree_lock_share !== undefined ? r.btree_lock_share : r.lock_share;
}

function sortValue(r, key) {
	switch (key) {
	case 'host': return r.host;
	case 'offcpu': return r.offcpu_ns_per_s;
	case 'lock': return btreeShare(r);
	case 'p99': return r.commit_p99_ns;
	case 'trim': return r.trim_stall_ns;
	case 'ratio': return r.out ? r.out.ratio : -1;
	case 'seen': return r.last_seen;
	}
	return 0;
}

export function sortRows(rows, key, dir) {
	const m = dir === 'asc' ? 1 : -1;
	return [...rows].sort((a, b) => {
		const x = sortValue(a, key), y = sortValue(b, key);
		if (typeof x === 'string' || typeof y === 'string')
			return m * String(x).localeCompare(String(y));
		const xv = x ?? -Infinity, yv = y ?? -Infinity;
		return xv === yv ? a.host.localeCompare(b.host) : m * (xv - yv);
	});
}

let view = null;	// {root, rows, hostsErr, ...}

export function render(root, s) {
	view = {root, s, rows: null};
	root.append(
		el('div', {class: 'view-head'},
			el('h1', {}, 'Fleet overview'),
			el('p', {class: 'sub'}, 'Where each host spends its time off-CPU, and which hosts ' +
				'stand out from the fleet. Click a host (or press Enter on its row) to see its flame graph.')),
		el('div', {id: 'ov-cards', class: 'cards'}),
		el('div', {id: 'ov-callout'}),
		patternForm(s),
		el('div', {id: 'ov-table', class: 'panel'}, notice('loading', 'Loading hosts…')));
	load(s);
	return () => { view = null; };
}

export function update(s, changes) {
	if (!view || !view.rows) return false;
	const keys = Object.keys(changes);
	if (keys.every((k) => k === 'sort' || k === 'dir')) {
		view.s = s;
		drawTable(view.rows, s, true);
		return true;
	}
	return false;
}

function patternForm(s) {
	const input = el('input', {id: 'ov-pattern', value: s.pattern, size: 28, spellcheck: 'false',
		'aria-describedby': 'ov-pattern-help'});
	return el('form', {class: 'inline-form', onsubmit: (ev) => {
		ev.preventDefault();
		state.set({pattern: input.value.trim() || state.DEFAULTS.pattern});
	}},
		el('label', {for: 'ov-pattern'}, 'Outlier frame pattern'), input,
		el('button', {type: 'submit', class: 'btn'}, 'Rank'),
		el('span', {id: 'ov-pattern-help', class: 'hint'},
			'regex over frame names; hosts are ranked by the share of off-CPU time under matching frames'));
}

async function load(s) {
	const my = view;
	// The overview is always the whole fleet: a selection carried over from
	// a host's flame graph would make every host its own median.
	const [hr, or, tr] = await Promise.allSettled([
		api.hosts(s.from, s.until),
		api.outliers(state.query('offcpu', ''), s.pattern, s.from, s.until),
		// a fine step: points come only for buckets with data, so a host
		// with four 5-s windows still draws a line (the default 60 s
		// put them in one bucket, and the sparkline showed "—").  With
		// the wall-clock type chosen, the trend is the wall profiles'
		// totals (wall_ns).
		s.type === 'wall'
			? api.timeseries('wall_ns', state.query('wall', ''), s.from, s.until, sparkStep(s))
			: api.timeseries('offcpu_ns', state.query('offcpu', ''), s.from, s.until, sparkStep(s)),
	]);
	if (view !== my) return;
	const table = document.getElementById('ov-table');
	if (hr.status === 'rejected') {
		clear(table).append(errorNotice(hr.reason, 'hosts'));
		return;
	}
	const hosts = Array.isArray(hr.value) ? hr.value : (hr.value.hosts || []);
	if (!hosts.length) {
		clear(table).append(notice('empty', 'No hosts reported in this range',
			'glass-aggd has no windows between ' + fmtWhen(s.from) + ' and ' + fmtWhen(s.until) +
			'. Agents may be down, or the range is too short.',
			el('a', {class: 'btn', href: state.href({from: 'now-24h', until: 'now'})}, 'Try the last 24 hours'),
			el('a', {class: 'btn', href: state.href({from: 'now-7d', until: 'now'})}, 'Last 7 days')));
		return;
	}
	const outs = new Map();
	let outErr = null, fleetMedian = null;
	if (or.status === 'fulfilled') {
		const list = Array.isArray(or.value) ? or.value : (or.value.hosts || or.value.outliers || []);
		for (const o of list) {
			outs.set(o.host, o);
			if (o.fleet_median !== undefined) fleetMedian = o.fleet_median;
		}
	} else {
		outErr = or.reason;
	}
	const trends = new Map();
	if (tr.status === 'fulfilled' && tr.value && Array.isArray(tr.value.series))
		for (const se of tr.value.series)
			if (se.labels && se.labels.host) trends.set(se.labels.host, se.points || []);
	for (const [h, pts] of trends) trends.set(h, dropIncomplete([{points: pts}], tr.value.step, s.until)[0].points);
	const rows = hosts.map((h) => ({...h, out: outs.get(h.host) || null, trend: trends.get(h.host) || null}));
	view.rows = rows;
	view.outErr = outErr;
	view.fleetMedian = fleetMedian;
	drawCards(rows, s);
	drawCallout(rows, s, outErr);
	drawTable(rows, s, false);
	window.glassStatus && window.glassStatus(rows.length + ' hosts · ' + fmtWhen(s.from) + ' → ' + fmtWhen(s.until));
}

function median(xs) {
	const v = xs.filter((x) => x !== null && x !== undefined && !Number.isNaN(x)).sort((a, b) => a - b);
	if (!v.length) return null;
	const m = v.length >> 1;
	return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

function drawCards(rows, s) {
	const n = rows.length, nout = rows.filter((r) => r.out && r.out.outlier).length;
	const offSum = rows.reduce((a, r) => a + (r.offcpu_ns_per_s || 0), 0);
	const worst = rows.reduce((w, r) => (!w || (r.commit_p99_ns || 0) > (w.commit_p99_ns || 0) ? r : w), null);
	const trim = rows.reduce((a, r) => a + (r.trim_stall_ns || 0), 0);
	const card = (label, value, note, cls) => el('div', {class: 'card ' + (cls || '')},
		el('div', {class: 'card-label'}, label), el('div', {class: 'card-value'}, value),
		note ? el('div', {class: 'card-note'}, note) : null);
	clear(document.getElementById('ov-cards')).append(
		card('Hosts', String(n), nout ? nout + ' outlier' + (nout > 1 ? 's' : '') : 'no outliers', nout ? 'warn' : 'ok'),
		card('Fleet off-CPU', fmtNs(offSum) + '/s', 'summed over hosts'),
		card('Median B-tree lock share', fmtPct(median(rows.map(btreeShare))), 'of off-CPU time'),
		card('Worst commit p99', fmtNs(worst && worst.commit_p99_ns), worst ? worst.host : ''),
		card('Trim stalls', fmtNs(trim), 'fleet total in range'));
}

function drawCallout(rows, s, outErr) {
	const box = clear(document.getElementById('ov-callout'));
	if (outErr) {
		box.append(notice('error', 'Outlier ranking unavailable', outErr.detail || outErr.message));
		return;
	}
	const outs = rows.filter((r) => r.out && r.out.outlier).sort((a, b) => b.out.ratio - a.out.ratio);
	if (!outs.length) {
		box.append(el('p', {class: 'callout ok', role: 'status'},
			'No outliers: every host\'s share of ', el('code', {}, s.pattern),
			' is close to the fleet median.'));
		return;
	}
	for (const r of outs) {
		const o = r.out;
		box.append(el('div', {class: 'callout warn', role: 'note'},
			el('span', {class: 'badge outlier'}, 'outlier'), ' ',
			el('b', {}, r.host), ' spends ', el('b', {}, fmtPct(o.share)), ' of its off-CPU time under ',
			el('code', {}, s.pattern), ' — ', el('b', {}, ratioText(o.ratio)), ' the fleet median (',
			fmtPct(o.fleet_median), '). ',
			el('a', {href: state.href({view: 'flame', type: 'offcpu', sel: 'host=' + quoteValue(r.host),
				search: s.pattern, zoom: ''})}, 'Flame graph'), ' · ',
			el('a', {href: state.href({view: 'diff', type: 'offcpu', left: '',
				right: 'host=' + quoteValue(r.host), search: s.pattern, zoom: ''})}, 'Diff against the fleet'),
			' · ',
			el('a', {href: state.href({view: 'timeseries', sel: ''})}, 'Time series')));
	}
}

function ratioText(x) {
	if (x === null || x === undefined || !isFinite(x)) return '∞×';
	return x.toFixed(x >= 10 ? 0 : 1) + '×';
}

// About 600 buckets over the range (6 s in an hour), at least 1 s.
export function sparkStep(s) {
	const now = Math.floor(Date.now() / 1000);
	const f = parseTime(s.from, now), u = parseTime(s.until, now);
	if (f === null || u === null || u <= f) return undefined;
	return Math.max(1, Math.floor((u - f) / 600));
}

function sparkline(points, color, ymax) {
	const W = 120, H = 26;
	if (!points || points.length < 2)
		return el('span', {class: 'muted'}, '—');
	const xs = points.map((p) => p[0]), ys = points.map((p) => p[1]);
	const x0 = Math.min(...xs), x1 = Math.max(...xs), y1 = ymax || Math.max(...ys) || 1;
	const sx = (x) => x1 === x0 ? 0 : (x - x0) / (x1 - x0) * (W - 2) + 1;
	const sy = (y) => H - 2 - y / y1 * (H - 4);
	const d = points.map((p, i) => (i ? 'L' : 'M') + sx(p[0]).toFixed(1) + ',' + sy(p[1]).toFixed(1)).join('');
	return svg('svg', {class: 'spark', width: W, height: H, viewBox: `0 0 ${W} ${H}`, 'aria-hidden': 'true'},
		svg('path', {d: d + `L${sx(x1).toFixed(1)},${H}L${sx(x0).toFixed(1)},${H}Z`, fill: color, 'fill-opacity': 0.15}),
		svg('path', {d, fill: 'none', stroke: color, 'stroke-width': 1.5}));
}

function bar(frac, cls) {
	const f = Math.max(0, Math.min(1, frac || 0));
	return el('span', {class: 'bar ' + (cls || ''), 'aria-hidden': 'true'},
		el('span', {style: `width:${(f * 100).toFixed(1)}%`}));
}

function drawTable(rows, s, keepFocus) {
	const box = document.getElementById('ov-table');
	const focused = keepFocus && document.activeElement && document.activeElement.dataset
		? document.activeElement.dataset.host : null;
	const sorted = sortRows(rows, COLS.some((c) => c.key === s.sort) ? s.sort : 'ratio', s.dir);
	const maxOff = Math.max(...rows.map((r) => r.offcpu_ns_per_s || 0), 1);
	const maxP99 = Math.max(...rows.map((r) => r.commit_p99_ns || 0), 1);
	const maxTrim = Math.max(...rows.map((r) => r.trim_stall_ns || 0), 1);
	const maxTrend = Math.max(...rows.flatMap((r) => (r.trend || []).map((p) => p[1])), 1);
	const head = el('tr', {}, COLS.map((c) => {
		const active = s.sort === c.key;
		const aria = active ? (s.dir === 'asc' ? 'ascending' : 'descending') : 'none';
		const th = el('th', {scope: 'col', class: c.num ? 'num' : '', 'aria-sort': c.nosort ? null : aria});
		const label = s.type === 'wall' && c.wallLabel ? c.wallLabel : c.label;
		if (c.nosort) {
			th.append(label);
		} else {
			th.append(el('button', {type: 'button', class: 'sort' + (active ? ' active' : ''),
				'data-sort': c.key,
				onclick: () => state.set({sort: c.key,
					dir: active ? (s.dir === 'asc' ? 'desc' : 'asc') : (c.num ? 'desc' : 'asc')}, false)},
			label, el('span', {class: 'arrow', 'aria-hidden': 'true'},
				active ? (s.dir === 'asc' ? '▲' : '▼') : '↕')));
		}
		if (c.unit) th.append(el('span', {class: 'th-unit'}, c.unit));
		return th;
	}));
	const body = el('tbody', {});
	sorted.forEach((r, i) => {
		const outlier = r.out && r.out.outlier;
		const link = state.href({view: 'flame', sel: 'host=' + quoteValue(r.host), zoom: ''});
		const labels = Object.entries(r.labels || {}).filter(([k]) => k !== 'host');
		const tr = el('tr', {class: 'host-row' + (outlier ? ' outlier' : ''), tabindex: i === 0 ? '0' : '-1',
			'data-host': r.host, 'aria-label': r.host + (outlier ? ', outlier' : '')},
		el('th', {scope: 'row', class: 'host'},
			el('a', {href: link, tabindex: '-1'}, r.host),
			outlier ? el('span', {class: 'badge outlier'}, 'outlier') : null,
			labels.length ? el('div', {class: 'chips'}, labels.slice(0, 4).map(([k, v]) =>
				el('a', {class: 'chip', tabindex: '-1', title: 'Flame graph of every host with ' + k + '=' + v,
					href: state.href({view: 'flame', sel: k + '=' + quoteValue(v), zoom: ''})}, k + '=' + v))) : null),
		el('td', {class: 'num'}, fmtNs(r.offcpu_ns_per_s) + '/s', bar(r.offcpu_ns_per_s / maxOff)),
		el('td', {class: 'num', title: r.ops_btree_lock_share !== null && r.ops_btree_lock_share !== undefined
			? 'of off-CPU time inside filesystem operations, under B-tree locks (as the demo\'s finding)'
			: r.btree_lock_share !== null && r.btree_lock_share !== undefined
			? 'B-tree node and root locks; all glassfs locks: ' + fmtPct(r.lock_share)
			: 'all glassfs locks (this host sends no per-lock detail)'},
		fmtPct(btreeShare(r)), bar(btreeShare(r), btreeShare(r) > 0.25 ? 'hot' : '')),
		el('td', {class: 'num'}, fmtNs(r.commit_p99_ns), bar((r.commit_p99_ns || 0) / maxP99)),
		el('td', {class: 'num'}, fmtNs(r.trim_stall_ns), bar((r.trim_stall_ns || 0) / maxTrim)),
		el('td', {class: 'num'}, r.out ? [fmtPct(r.out.share), ' ',
			el('span', {class: 'ratio' + (outlier ? ' hot' : '')}, ratioText(r.out.ratio))] : '—'),
		el('td', {class: 'trend'}, sparkline(r.trend, outlier ? '#d55e00' : PALETTE[0], maxTrend)),
		el('td', {class: 'num', title: r.last_seen ? new Date(r.last_seen * 1000).toISOString() : ''},
			r.last_seen ? fmtAgo(r.last_seen) : '—',
			el('span', {class: 'th-unit'}, (r.windows ?? '?') + ' windows')));
		body.append(tr);
	});
	const table = el('table', {class: 'hosts', id: 'hosts-table',
		'aria-label': 'Hosts, ' + rows.length + ' rows; arrow keys move between rows, Enter opens the flame graph'},
	el('caption', {class: 'sr-only'}, 'Hosts sorted by ' + s.sort + ' ' + s.dir + 'ending'),
	el('thead', {}, head), body);
	const focusRow = rowNav(table, 'tr.host-row', (tr) => openHost(tr.dataset.host));
	table.addEventListener('click', (ev) => {
		const tr = ev.target.closest('tr.host-row');
		if (!tr || ev.target.closest('a')) return;
		openHost(tr.dataset.host);
	});
	clear(box).append(el('div', {class: 'table-scroll'}, table));
	if (focused) {
		const tr = table.querySelector(`tr[data-host="${CSS.escape(focused)}"]`);
		if (tr) focusRow(tr);
	}
}

function openHost(host) {
	state.set({view: 'flame', sel: 'host=' + quoteValue(host), zoom: ''});
}

