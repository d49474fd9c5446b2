// timeseries.js — SVG line panels over /timeseries, all sharing the time
// range in the URL: hovering one panel shows the same instant on every
// panel; dragging across a panel narrows the range for all of them (and
// the URL), so the view can be linked.

import * as api from './api.js';
import * as state from './state.js';
import {el, svg, clear, fmtNs, fmtCount, fmtTime, notice, errorNotice, PALETTE, fmtWhen} from './util.js';

export const PANELS = [
	{metric: 'commit_p99_ns', title: 'Commit latency p99', units: 'ns', what: 'per host, p99 of transaction commit time'},
	{metric: 'lock_wait_ns', by: 'class', title: 'Lock wait by class', units: 'ns', what: 'time spent waiting for glassfs locks, summed over hosts'},
	{id: 'lock_wait_level', metric: 'lock_wait_ns', by: 'level', title: 'Lock wait by B-tree level', units: 'ns',
		what: 'B-tree node and root locks, summed over classes and hosts (from the agents\' lock detail)',
		keep: (l) => Number(l.level) >= 0, name: (l) => 'level ' + l.level + (l.level === '0' ? ' (leaf)' : '')},
	{metric: 'trim_stall_ns', title: 'Discard (trim) stalls', units: 'ns', what: 'commit time spent waiting for discards'},
	{metric: 'offcpu_ns', title: 'Off-CPU time', units: 'ns', what: 'per host, blocked time of profiled threads'},
	{metric: 'ingest_windows', title: 'Ingest health', units: 'windows', what: 'profile windows received per step'},
];

// With the wall-clock type chosen (type=wall, e.g. from the flame view's
// switch) the profile panel shows the wall profiles' totals (wall_ns)
// instead of the off-CPU time: what the agents' --wall-cmd shipped.
const WALL_PANEL = {metric: 'wall_ns', type: 'wall', title: 'Wall-clock time', units: 'ns',
	what: 'per host, on- and off-CPU time of the threads traced by glass-profile --wall'};
export function panels(type) {
	return type === 'wall' ? PANELS.map((p) => p.metric === 'offcpu_ns' ? WALL_PANEL : p) : PANELS;
}

// Seconds for `now-1h`, `now`, unix seconds; null when not understood.
export function parseTime(t, nowSec) {
	if (t === undefined || t === null || t === '') return null;
	const s = String(t).trim();
	if (/^\d+$/.test(s)) {
		const n = Number(s);
		return n > 1e15 ? n / 1e9 : n > 1e12 ? n / 1e3 : n;	// ns, ms or s
	}
	const m = /^now(?:-(\d+)(s|m|h|d|w|y)?)?$/.exec(s);
	if (!m) return null;
	if (!m[1]) return nowSec;
	const mul = {s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000}[m[2] || 's'];
	return nowSec - Number(m[1]) * mul;
}

export function autoStep(from, until) {
	const now = Math.floor(Date.now() / 1000);
	const f = parseTime(from, now), u = parseTime(until, now);
	if (f === null || u === null || u <= f) return undefined;
	const raw = (u - f) / 90;
	const steps = [10, 20, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400];
	return steps.find((x) => x >= raw) || 86400;
}

// Steps a nanosecond axis reads well in: 1-2-5 below a second, then
// whole seconds, minutes and hours (not 50 s, 1.7 min, 2.5 min).
const NS_STEPS = (() => {
	const out = [];
	for (let e = 0; e < 9; e++) for (const m of [1, 2, 5]) out.push(m * 10 ** e);
	for (const s of [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400])
		out.push(s * 1e9);
	return out;
})();

// "Nice" ticks for [0, max]; units 'ns' picks time-like steps.
export function niceTicks(max, n = 4, units) {
	if (!(max > 0)) return [0];
	const raw = max / n, p = Math.pow(10, Math.floor(Math.log10(raw)));
	const f = raw / p;
	let step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * p;
	if (units === 'ns') step = NS_STEPS.find((x) => x >= raw) || step;
	const out = [];
	for (let v = 0; v <= max * 1.0001 + step * 0.999; v += step) {
		out.push(v);
		if (v >= max) break;
	}
	return out;
}

// Time-axis ticks for [t0, t1] (seconds): at most maxN, on a round step
// (1 s … 1 week) aligned to local time, each with a label no other tick
// shares -- seconds shown when the step is under a minute, the date when
// it is a day or more or the range spans days.
const T_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
	43200, 86400, 172800, 604800];
export function timeTicks(t0, t1, maxN) {
	const span = Math.max(t1 - t0, 1e-9);
	const step = T_STEPS.find((x) => span / x <= Math.max(1, maxN)) || T_STEPS[T_STEPS.length - 1];
	const tz = new Date(t0 * 1000).getTimezoneOffset() * 60;	// local alignment
	const out = [];
	for (let t = Math.ceil((t0 - tz) / step) * step + tz; t <= t1 + 1e-6; t += step) {
		const d = new Date(t * 1000), p = (x) => String(x).padStart(2, '0');
		const hm = p(d.getHours()) + ':' + p(d.getMinutes());
		const date = p(d.getMonth() + 1) + '-' + p(d.getDate());
		const label = step < 60 ? hm + ':' + p(d.getSeconds()) : step >= 86400 ? date :
			span > 86400 ? date + ' ' + hm : hm;
		out.push({t, label});
	}
	return out;
}

function seriesNames(series) {
	const keys = new Set();
	for (const s of series) for (const k of Object.keys(s.labels || {})) keys.add(k);
	const varying = [...keys].filter((k) => new Set(series.map((s) => (s.labels || {})[k])).size > 1);
	return series.map((s) => {
		const l = s.labels || {};
		const parts = (varying.length ? varying : Object.keys(l)).map((k) => (l[k] !== undefined ? (varying.length > 1 || k !== 'host' ? k + '=' : '') + l[k] : null)).filter(Boolean);
		return parts.join(' ') || 'all';
	});
}

const pid = (p) => p.id || p.metric;
const charts = new Set();
let view = null;
// The time span with data over every panel drawn so far: each panel's
// x-axis is the URL's range clamped to it, so all panels share one range.
let extent = {dmin: Infinity, dmax: -Infinity};

export function render(root, s) {
	root.append(
		el('div', {class: 'view-head'},
			el('h1', {}, 'Time series', s.sel ? el('span', {class: 'muted'}, ' · {' + s.sel + '}') : null),
			el('p', {class: 'sub'}, 'Every panel shares the range ', el('code', {}, fmtWhen(s.from) + ' → ' + fmtWhen(s.until)),
				'. Hover to compare the same instant across panels; drag across a panel to zoom the range.',
				s.sel ? [' ', el('a', {href: state.href({sel: ''})}, 'Show the whole fleet')] : null)),
		el('div', {class: 'ts-grid', id: 'ts-grid'}, panels(s.type).map((p) =>
			el('section', {class: 'panel ts-panel', id: 'ts-' + pid(p), 'aria-labelledby': 'ts-h-' + pid(p)},
				el('h2', {id: 'ts-h-' + pid(p)}, p.title, el('span', {class: 'th-unit'}, p.what)),
				el('div', {class: 'ts-body'}, notice('loading', 'Loading…'))))));
	view = {s};
	extent = {dmin: Infinity, dmax: -Infinity};
	const step = autoStep(s.from, s.until);
	for (const p of panels(s.type)) {
		const my = view;
		api.timeseries(p.metric, state.query(p.type || 'offcpu', s.sel), s.from, s.until, step, p.by).then((d) => {
			if (view !== my) return;
			drawPanel(p, d, s);
		}, (e) => {
			if (view !== my) return;
			const body = document.querySelector('#ts-' + pid(p) + ' .ts-body');
			clear(body).append(errorNotice(e, p.title.toLowerCase()));
		});
	}
	return () => { charts.clear(); view = null; };
}

// With until=now the newest bucket is still filling: a sum over half a
// bucket reads as a drop that did not happen.  Leave it out.
export function dropIncomplete(series, step, until) {
	if (until !== 'now' || !(step > 0)) return series;
	const now = Date.now() / 1000;
	return series.map((x) => ({...x, points: (x.points || []).filter((q) => q[0] + step <= now)}));
}

function drawPanel(p, d, s) {
	const body = clear(document.querySelector('#ts-' + pid(p) + ' .ts-body'));
	let series = (d && d.series || []).filter((x) => x.points && x.points.length && (!p.keep || p.keep(x.labels || {})));
	if (p.metric !== 'commit_p99_ns') series = dropIncomplete(series, d.step, s.until);
	series = series.filter((x) => x.points.length);
	if (!series.length) {
		body.append(notice('empty', 'No ' + p.title.toLowerCase() + ' in this range',
			p.id === 'lock_wait_level'
				? 'Lock wait by B-tree level comes from agents that ship glass-lockstat\'s lock detail (glass-agent --lock-cmd); none did between ' + fmtWhen(s.from) + ' and ' + fmtWhen(s.until) + '.'
				: p.metric === 'wall_ns'
				? 'Wall-clock time comes from agents run with --wall-cmd (glass-profile --wall); none reported between ' + fmtWhen(s.from) + ' and ' + fmtWhen(s.until) + '.'
				: p.metric === 'commit_p99_ns' || p.metric === 'lock_wait_ns' || p.metric === 'trim_stall_ns'
				? 'These come from agents on hosts running a glassfs daemon; none reported between ' + fmtWhen(s.from) + ' and ' + fmtWhen(s.until) + '.'
				: 'No windows between ' + fmtWhen(s.from) + ' and ' + fmtWhen(s.until) + '.'));
		return;
	}
	const names = p.name ? series.map((x) => p.name(x.labels || {})) : seriesNames(series);
	const ts = series.flatMap((x) => x.points.map((q) => q[0]));
	const wider = Math.min(...ts) < extent.dmin || Math.max(...ts) > extent.dmax;
	extent = {dmin: Math.min(extent.dmin, ...ts), dmax: Math.max(extent.dmax, ...ts)};
	const chart = new Chart(body, p, series, names, s);
	charts.add(chart);
	// a panel whose data reaches further widens every panel's axis
	if (wider) for (const c of charts) c.draw(); else chart.draw();
}

class Chart {
	constructor(host, p, series, names, s) {
		this.host = host; this.p = p; this.series = series; this.names = names; this.s = s;
		this.box = el('div', {class: 'chart'});
		this.tip = el('div', {class: 'ts-tip', hidden: true, 'aria-hidden': 'true'});
		host.append(this.box, this.tip, this.legend(), this.table());
		new ResizeObserver(() => { if (this.box.clientWidth !== this.w) this.draw(); }).observe(this.box);
	}

	fmt(v) {
		return this.p.units === 'ns' ? fmtNs(v) : fmtCount(v);
	}

	legend() {
		return el('ul', {class: 'legend', 'aria-label': this.p.title + ' series'}, this.series.map((x, i) =>
			el('li', {}, el('span', {class: 'key', style: 'background:' + PALETTE[i % PALETTE.length]}), this.names[i])));
	}

	// The numbers behind the picture, for screen readers and for copying.
	table() {
		const stat = (pts) => {
			const v = pts.map((q) => q[1]);
			return {max: Math.max(...v), avg: v.reduce((a, b) => a + b, 0) / v.length, last: v[v.length - 1]};
		};
		return el('details', {class: 'ts-table'}, el('summary', {}, 'Values'),
			el('table', {class: 'toplist', 'aria-label': this.p.title + ': average, maximum and last value per series'},
				el('thead', {}, el('tr', {}, el('th', {scope: 'col'}, 'Series'), el('th', {scope: 'col', class: 'num'}, 'Average'),
					el('th', {scope: 'col', class: 'num'}, 'Max'), el('th', {scope: 'col', class: 'num'}, 'Last'))),
				el('tbody', {}, this.series.map((x, i) => {
					const st = stat(x.points);
					return el('tr', {}, el('td', {}, this.names[i]), el('td', {class: 'num'}, this.fmt(st.avg)),
						el('td', {class: 'num'}, this.fmt(st.max)), el('td', {class: 'num'}, this.fmt(st.last)));
				}))));
	}

	draw() {
		const W = Math.max(260, this.box.clientWidth || 500), H = 190;
		this.w = this.box.clientWidth;
		const M = {l: 62, r: 10, t: 8, b: 24};
		const all = this.series.flatMap((x) => x.points);
		const now = Date.now() / 1000;
		let t0 = parseTime(this.s.from, now), t1 = parseTime(this.s.until, now);
		const ts = all.map((q) => q[0]);
		if (t0 === null) t0 = Math.min(...ts);
		if (t1 === null) t1 = Math.max(...ts);
		// Don't stretch an hour of axis over two minutes of data: clamp the
		// empty lead-in so the lines are readable, but keep the range's end.
		const dmin = Math.min(extent.dmin, ...ts), dmax = Math.max(extent.dmax, ...ts);
		if (dmin > t0 && (dmax - dmin) < (t1 - t0) / 4) t0 = dmin - (dmax - dmin) * 0.05;
		if (dmax < t1 && this.s.until !== 'now') t1 = Math.max(dmax, t0 + 1);
		if (t1 <= t0) t1 = t0 + 1;
		const ymax = Math.max(...all.map((q) => q[1]), 0) * 1.08 || 1;
		const ticks = niceTicks(ymax, 4, this.p.units);
		const yTop = ticks[ticks.length - 1] || 1;
		const sx = (t) => M.l + (t - t0) / (t1 - t0) * (W - M.l - M.r);
		const sy = (v) => H - M.b - v / yTop * (H - M.t - M.b);
		this.sx = sx; this.t0 = t0; this.t1 = t1; this.M = M; this.W = W;
		const peak = this.series.map((x, i) => ({i, v: Math.max(...x.points.map((q) => q[1]))})).sort((a, b) => b.v - a.v)[0];
		const g = svg('svg', {class: 'ts', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img',
			'data-t0': t0.toFixed(3), 'data-t1': t1.toFixed(3),
			'aria-label': `${this.p.title}: ${this.series.length} series; highest ${this.fmt(peak.v)} (${this.names[peak.i]})`});
		for (const v of ticks) {
			g.append(svg('line', {class: 'grid', x1: M.l, x2: W - M.r, y1: sy(v), y2: sy(v)}),
				svg('text', {class: 'ylab', x: M.l - 6, y: sy(v) + 4, 'text-anchor': 'end'}, this.fmt(v)));
		}
		const nx = Math.max(2, Math.floor((W - M.l - M.r) / 80));
		for (const {t, label} of timeTicks(t0, t1, nx)) {
			const x = sx(t);
			g.append(svg('text', {class: 'xlab', x, y: H - 6,
				'text-anchor': x < M.l + 20 ? 'start' : x > W - M.r - 20 ? 'end' : 'middle'}, label));
		}
		this.series.forEach((x, i) => {
			const col = PALETTE[i % PALETTE.length];
			const pts = [...x.points].sort((a, b) => a[0] - b[0]);
			const d = pts.map((q, k) => (k ? 'L' : 'M') + sx(q[0]).toFixed(1) + ',' + sy(q[1]).toFixed(1)).join('');
			g.append(svg('path', {class: 'line', d, stroke: col, fill: 'none'}));
			if (pts.length < 40)
				for (const q of pts) g.append(svg('circle', {cx: sx(q[0]), cy: sy(q[1]), r: 2.2, fill: col}));
		});
		this.cross = svg('line', {class: 'cross', y1: M.t, y2: H - M.b, x1: -10, x2: -10});
		this.sel = svg('rect', {class: 'brush', y: M.t, height: H - M.t - M.b, x: 0, width: 0, visibility: 'hidden'});
		const hit = svg('rect', {class: 'hit', x: M.l, y: M.t, width: W - M.l - M.r, height: H - M.t - M.b});
		g.append(this.cross, this.sel, hit);
		clear(this.box).append(g);
		const tAt = (ev) => {
			const r = g.getBoundingClientRect();
			return t0 + (ev.clientX - r.left - M.l) / (W - M.l - M.r) * (t1 - t0);
		};
		let drag = null;
		hit.addEventListener('mousemove', (ev) => {
			const t = tAt(ev);
			for (const c of charts) c.hover(t, c === this ? ev : null);
			if (drag !== null) {
				const a = Math.min(sx(drag), sx(t)), b = Math.max(sx(drag), sx(t));
				this.sel.setAttribute('x', a); this.sel.setAttribute('width', b - a);
				this.sel.setAttribute('visibility', 'visible');
			}
		});
		hit.addEventListener('mouseleave', () => { for (const c of charts) c.hover(null); });
		hit.addEventListener('mousedown', (ev) => { drag = tAt(ev); ev.preventDefault(); });
		hit.addEventListener('mouseup', (ev) => {
			if (drag === null) return;
			const a = Math.min(drag, tAt(ev)), b = Math.max(drag, tAt(ev));
			drag = null;
			this.sel.setAttribute('visibility', 'hidden');
			if (sx(b) - sx(a) > 6) state.set({from: String(Math.floor(a)), until: String(Math.ceil(b))});
		});
	}

	// Crosshair at time t; the panel under the mouse also shows values.
	hover(t, ev) {
		if (t === null || t < this.t0 || t > this.t1) {
			this.cross.setAttribute('x1', -10); this.cross.setAttribute('x2', -10);
			this.tip.hidden = true;
			return;
		}
		const x = this.sx(t);
		this.cross.setAttribute('x1', x); this.cross.setAttribute('x2', x);
		if (!ev) { this.tip.hidden = true; return; }
		clear(this.tip).append(el('div', {class: 'tip-name'}, fmtTime(t, false)));
		const rows = this.series.map((se, i) => {
			let best = null;
			for (const q of se.points) if (!best || Math.abs(q[0] - t) < Math.abs(best[0] - t)) best = q;
			return {i, v: best ? best[1] : null};
		}).sort((a, b) => (b.v || 0) - (a.v || 0)).slice(0, 8);
		for (const r of rows)
			this.tip.append(el('div', {}, el('span', {class: 'key', style: 'background:' + PALETTE[r.i % PALETTE.length]}),
				this.names[r.i] + ': ', el('b', {}, this.fmt(r.v))));
		this.tip.hidden = false;
		const br = this.box.getBoundingClientRect();
		const left = x + 16 + this.tip.offsetWidth > br.width ? x - this.tip.offsetWidth - 12 : x + 16;
		this.tip.style.left = left + 'px';
		this.tip.style.top = '12px';
	}
}
