// flameview.js — the flame graph of any selection: profile type (off-CPU,
// wakeup, lock-wait, on-CPU, wall-clock), label matchers (hosts, labels), the shared
// time range; search highlights frames, click zooms.  Everything is in the
// URL.  Renders in the browser from /merge?format=json, or embeds the
// server's SVG renderer (/merge?format=svg) when renderer=svg.

import * as api from './api.js';
import * as state from './state.js';
import {el, clear, fmtValue, fmtPct, notice, errorNotice, parseSelector, quoteValue, debounce, fmtWhen, parseLock, lockName} from './util.js';
import {FlameGraph, buildTree, findPath, searchRegex, searchTotal, blameFrame} from './flame.js';

export const TYPE_INFO = {
	offcpu: {label: 'Off-CPU', units: 'ns', what: 'time threads spent blocked, by the stack that blocked'},
	wakeup: {label: 'Wakeup', units: 'ns', what: 'blocked time, by the stack of the thread that woke the sleeper'},
	lockwait: {label: 'Lock wait', units: 'ns', what: 'time spent waiting for glassfs locks, by the waiter\'s stack'},
	oncpu: {label: 'On-CPU', units: 'samples', what: 'CPU samples, by stack'},
	wall: {label: 'Wall-clock', units: 'ns', what: 'where the traced threads\' time went: on-CPU under [oncpu] (red-yellow, kernel aqua), blocked under [offcpu] (blue, kernel violet)'},
};

let view = null;

export function typeSwitch(s, id) {
	const g = el('div', {class: 'seg', role: 'radiogroup', 'aria-label': 'Profile type', id});
	const types = Object.keys(TYPE_INFO);
	types.forEach((t) => {
		const on = s.type === t;
		const b = el('button', {type: 'button', role: 'radio', 'aria-checked': on ? 'true' : 'false',
			tabindex: on ? '0' : '-1', class: on ? 'on' : '', 'data-type': t, title: TYPE_INFO[t].what,
			onclick: () => state.set({type: t, zoom: ''})}, TYPE_INFO[t].label);
		g.append(b);
	});
	g.addEventListener('keydown', (ev) => {
		const i = types.indexOf(state.get().type);
		let j = -1;
		if (ev.key === 'ArrowRight' || ev.key === 'ArrowDown') j = (i + 1) % types.length;
		if (ev.key === 'ArrowLeft' || ev.key === 'ArrowUp') j = (i + types.length - 1) % types.length;
		if (j < 0) return;
		ev.preventDefault();
		state.set({type: types[j], zoom: ''});
		requestAnimationFrame(() => {
			const b = document.querySelector(`#${id} [data-type="${types[j]}"]`);
			if (b) b.focus();
		});
	});
	return g;
}

// Values of one label across the fleet, from /labels
// ({"names": […], "values": {"host": ["a", …]}, "types": […]}).
/* Draw TREE into BOX as an interactive flame graph (OPTS as for
 * FlameGraph) with the URL state's search and zoom, and keep zooming in the
 * URL so back/forward and shared links restore it.  Returns the graph. */
export function showFlame(box, tree, s, opts) {
	const fg = new FlameGraph(box, {...opts, onZoom: (p) => state.set({zoom: p.join(';')})});
	fg.setData(tree);
	fg.setSearch(s.search);
	fg.setZoom(s.zoom ? s.zoom.split(';') : []);
	fg.render();
	return fg;
}

export function labelValues(labels, name) {
	if (!labels) return [];
	if (Array.isArray(labels)) {
		const e = labels.find((x) => x.name === name || x.key === name);
		return e ? e.values || [] : [];
	}
	if (labels.values && typeof labels.values === 'object') return labels.values[name] || [];
	if (labels.labels) return labelValues(labels.labels, name);
	return Array.isArray(labels[name]) ? labels[name] : [];
}

export function withHost(sel, host) {
	const ms = parseSelector(sel).filter((m) => m.k !== 'host');
	if (host) ms.unshift({k: 'host', op: '=', v: host});
	return ms.map((m) => m.k + m.op + quoteValue(m.v)).join(',');
}

export function hostOf(sel) {
	const m = parseSelector(sel).find((x) => x.k === 'host' && x.op === '=');
	return m ? m.v : '';
}

// A selection editor: host picker + free-form matchers.
export function selectionEditor(id, value, labelsPromise, onApply, caption) {
	const hostSel = el('select', {id: id + '-host', 'aria-label': caption + ': host'},
		el('option', {value: ''}, 'All hosts (fleet)'));
	const cur = hostOf(value);
	if (cur) hostSel.append(el('option', {value: cur, selected: true}, cur));
	labelsPromise.then((l) => {
		for (const h of labelValues(l, 'host'))
			if (h !== cur) hostSel.append(el('option', {value: h}, h));
	}).catch(() => {});
	const input = el('input', {id: id + '-sel', value: value, size: 36, spellcheck: 'false',
		placeholder: 'label matchers, e.g. host="h1",locking="node"', 'aria-label': caption + ': label matchers'});
	hostSel.addEventListener('change', () => {
		input.value = withHost(input.value, hostSel.value);
		onApply(input.value);
	});
	const form = el('form', {class: 'sel-editor', onsubmit: (ev) => { ev.preventDefault(); onApply(input.value.trim()); }},
		el('span', {class: 'sel-caption'}, caption), hostSel,
		el('code', {class: 'brace', 'aria-hidden': 'true'}, '{'), input,
		el('code', {class: 'brace', 'aria-hidden': 'true'}, '}'),
		el('button', {type: 'submit', class: 'btn'}, 'Apply'));
	return form;
}

export function render(root, s) {
	const labels = api.labels();
	labels.catch(() => {});
	const info = TYPE_INFO[s.type];
	const svgMode = s.renderer === 'svg';
	const search = el('input', {id: 'flame-search', type: 'search', value: s.search, size: 24,
		spellcheck: 'false', placeholder: 'regex, e.g. glock_|btree_search', 'aria-label': 'Search frames',
		disabled: svgMode, title: svgMode ? 'The server-rendered graph has its own search (top right of the drawing)' : null});
	search.addEventListener('input', debounce(() => state.set({search: search.value}, false), 200));
	const selText = s.sel ? s.sel : 'all hosts';
	const lk = lockFilter(s);
	root.append(
		el('div', {class: 'view-head'},
			el('h1', {}, info.label + ' flame graph ', el('span', {class: 'muted'}, '· ' + selText),
				lk ? el('span', {class: 'muted', id: 'flame-lock'}, ' · waiters of ' + lockName(lk.cls, lk.level)) : null),
			lk ? el('p', {class: 'sub'}, 'Only the stacks of threads that waited for ',
				el('code', {}, lockName(lk.cls, lk.level)), ' locks (the agents\' lock detail). ',
				el('a', {href: state.href({lock: '', zoom: ''}), id: 'flame-lock-clear'}, 'All lock-wait stacks')) : null,
			el('p', {class: 'sub'}, 'Width is ' + info.what + '. Click a frame to zoom, Escape to zoom out; ' +
				'frames are focusable with Tab and zoom with Enter.')),
		el('div', {class: 'toolbar'},
			typeSwitch(s, 'flame-type'),
			s.type === 'lockwait' ? lockPicker(s) : null,
			selectionEditor('flame', s.sel, labels, (v) => state.set({sel: v, zoom: ''}), 'Selection')),
		el('div', {class: 'toolbar'},
			el('label', {for: 'flame-search', class: 'search-label'}, 'Search'), search,
			el('span', {id: 'flame-match', class: 'match-info', role: 'status', 'aria-live': 'polite'}),
			el('span', {class: 'spacer'}),
			svgMode ? el('span', {class: 'hint'}, 'server-rendered: search and zoom inside the drawing') : null,
			el('button', {type: 'button', class: 'btn', id: 'flame-reset', disabled: svgMode,
				onclick: () => state.set({zoom: ''})}, 'Reset zoom'),
			el('label', {class: 'toggle'}, el('input', {type: 'checkbox', id: 'flame-svg',
				checked: s.renderer === 'svg',
				onchange: (ev) => state.set({renderer: ev.target.checked ? 'svg' : 'js'})}),
			' server-rendered SVG')),
		el('nav', {id: 'flame-crumbs', class: 'crumbs', 'aria-label': 'Zoom path'}),
		el('div', {class: 'flame-layout'},
			el('section', {class: 'panel flame-panel', 'aria-label': 'Flame graph'},
				el('div', {id: 'flame-box'}, notice('loading', 'Merging stacks…'))),
			el('aside', {class: 'panel side', 'aria-label': 'Top frames'},
				el('h2', {id: 'flame-top-h'}, s.type === 'offcpu' || s.type === 'wakeup' ? 'Where threads blocked' : 'Top frames by self time'), el('p', {class: 'hint'}, s.type === 'offcpu' ? 'deepest non-kernel frame of each stack' : s.type === 'wakeup' ? 'deepest non-kernel frame of the waker' : 'leaf frame of each stack'), el('div', {id: 'flame-top'}))));
	view = {s, fg: null, tree: null};
	const onEsc = (ev) => {
		if (ev.key === 'Escape' && view && state.get().zoom && document.activeElement !== search) {
			const z = state.get().zoom.split(';');
			z.pop();
			state.set({zoom: z.join(';')});
		}
	};
	document.addEventListener('keydown', onEsc);
	load(s);
	return () => {
		document.removeEventListener('keydown', onEsc);
		if (view && view.fg) view.fg.destroy();
		view = null;
	};
}

export function update(s, changes) {
	if (!view || !view.tree || s.renderer === 'svg') return false;
	const keys = Object.keys(changes);
	if (!keys.every((k) => k === 'search' || k === 'zoom')) return false;
	view.s = s;
	view.fg.setSearch(s.search);
	view.fg.setZoom(s.zoom ? s.zoom.split(';') : []);
	view.fg.render();
	drawCrumbs(s);
	drawMatch(s);
	const inp = document.getElementById('flame-search');
	if (inp && document.activeElement !== inp) inp.value = s.search;
	return true;
}

// With lock-wait stacks: narrow them to the waiters of one lock class and
// B-tree level (the classes of /locks for this selection and range).
function lockPicker(s) {
	const pick = el('select', {id: 'flame-lock-pick', 'aria-label': 'Waiters of which lock',
		title: 'Only the stacks of threads that waited for this lock (the agents\' lock detail)'},
	el('option', {value: ''}, 'Every lock'));
	const cur = parseLock(s.lock);
	if (cur) pick.append(el('option', {value: s.lock, selected: true}, lockName(cur.cls, cur.level)));
	api.locks(s.sel ? state.query('lockwait', s.sel) : undefined, s.from, s.until, 1).then((d) => {
		for (const c of (d && d.classes) || []) {
			const v = c.class + '@' + c.level;
			if (v !== s.lock) pick.append(el('option', {value: v}, lockName(c.class, c.level) + ' — ' + fmtValue(c.wait_ns, 'ns')));
		}
	}).catch(() => {});
	pick.addEventListener('change', () => state.set({lock: pick.value, zoom: ''}));
	return el('label', {class: 'lock-pick'}, 'Lock ', pick);
}

// Lock-wait stacks narrowed to one lock class (and B-tree level):
// lock=CLASS@LEVEL in the URL, only with type=lockwait.
export function lockFilter(s) {
	return s.type === 'lockwait' ? parseLock(s.lock) : null;
}

async function load(s) {
	const my = view;
	const q = state.query(s.type, s.sel);
	const box = document.getElementById('flame-box');
	const info = TYPE_INFO[s.type];
	const lk = lockFilter(s);
	if (s.renderer === 'svg') {
		// The server's renderer: an <object> keeps its own script (search,
		// zoom) working; the JSON is still fetched for the side table.
		const w = Math.max(400, Math.floor(box.clientWidth || 1000));
		const url = lk ? api.lockstacksSvgUrl(lk.cls, lk.level, q, s.from, s.until, w)
			: api.mergeSvgUrl(q, s.from, s.until, w);
		const obj = el('object', {class: 'server-svg', type: 'image/svg+xml', data: url,
			'aria-label': info.label + ' flame graph (server-rendered)'},
		notice('error', 'The server could not render this flame graph', 'GET ' + url));
		// Fit the frame to the drawing once it has loaded.
		obj.addEventListener('load', () => {
			const root = obj.contentDocument && obj.contentDocument.documentElement;
			const h = root && Number(root.getAttribute('height'));
			if (h) obj.style.height = h + 'px';
		});
		clear(box).append(obj);
	}
	let data;
	try {
		data = lk ? await api.lockstacks(lk.cls, lk.level, q, s.from, s.until) : await api.merge(q, s.from, s.until);
	} catch (e) {
		if (view !== my) return;
		clear(box).append(errorNotice(e, 'the flame graph'));
		clear(document.getElementById('flame-top'));
		return;
	}
	if (view !== my) return;
	const stacks = data.stacks || [];
	if (!stacks.length || !data.total) {
		clear(box).append(notice('empty', 'No ' + info.label.toLowerCase() + ' stacks for ' + (s.sel ? '{' + s.sel + '}' : 'the fleet') +
			(lk ? ' waiting for ' + lockName(lk.cls, lk.level) : '') + ' in this range',
			'Nothing matched ' + q + (lk ? ' (lock ' + s.lock + ')' : '') + ' between ' + fmtWhen(s.from) + ' and ' + fmtWhen(s.until) + '. ' +
			(s.type === 'lockwait' ? 'Lock-wait stacks come only from hosts running glassfs with the lock profiler. ' :
				s.type === 'wakeup' ? 'Wakeup stacks are collected only when agents run with wakeup profiling on. ' :
				s.type === 'oncpu' ? 'On-CPU stacks come from agents run with --oncpu-cmd (glass-profile) or a perf capture. ' :
				s.type === 'wall' ? 'Wall-clock stacks come from agents run with --wall-cmd (glass-profile --wall). ' : '') +
			'Widen the range or drop a label matcher.',
			el('a', {class: 'btn', href: state.href({from: 'now-24h', until: 'now'})}, 'Last 24 hours'),
			s.sel ? el('a', {class: 'btn', href: state.href({sel: '', zoom: ''})}, 'Whole fleet') : null,
			lk ? el('a', {class: 'btn', href: state.href({lock: '', zoom: ''})}, 'Every lock') : null,
			s.type !== 'offcpu' ? el('a', {class: 'btn', href: state.href({type: 'offcpu', zoom: ''})}, 'Off-CPU stacks') : null));
		clear(document.getElementById('flame-top'));
		document.getElementById('flame-match').textContent = '';
		return;
	}
	const tree = buildTree(stacks);
	// Stacks left out by the limit still count in the total: keep the root
	// at the true total so every share stays right.
	tree.value = Math.max(tree.value, Number(data.total) || 0);
	view.tree = tree;
	if (data.nstacks > stacks.length)
		document.getElementById('flame-crumbs').after(el('p', {class: 'hint'},
			'Showing the ' + stacks.length + ' heaviest of ' + data.nstacks + ' stacks; the rest are narrower than a pixel.'));
	if (s.renderer !== 'svg') {
		clear(box);
		view.fg = showFlame(box, tree, s, {units: info.units, label: info.label + ' flame graph of ' + selTextOf(s)});
	}
	drawCrumbs(s);
	drawMatch(s);
	drawTop(stacks, data.total, info.units, s);
	window.glassStatus && window.glassStatus(stacks.length + ' stacks · ' + fmtValue(data.total, info.units) + ' · ' + q);
}

function selTextOf(s) {
	return s.sel ? '{' + s.sel + '}' : 'the fleet';
}

function drawCrumbs(s) {
	const nav = clear(document.getElementById('flame-crumbs'));
	const path = s.zoom ? s.zoom.split(';') : [];
	const ol = el('ol', {});
	ol.append(el('li', {}, path.length ? el('a', {href: state.href({zoom: ''})}, 'all') : el('span', {'aria-current': 'true'}, 'all')));
	path.forEach((f, i) => {
		const last = i === path.length - 1;
		ol.append(el('li', {}, last ? el('span', {'aria-current': 'true'}, f)
			: el('a', {href: state.href({zoom: path.slice(0, i + 1).join(';')})}, f)));
	});
	nav.append(ol);
	if (view && view.tree && path.length && !findPath(view.tree, path))
		nav.append(el('span', {class: 'hint'}, ' (this frame is not in the current data; showing all)'));
}

function drawMatch(s) {
	const out = document.getElementById('flame-match');
	if (!out) return;
	const re = searchRegex(s.search);
	if (!re || !view || !view.tree) { out.textContent = ''; return; }
	const z = findPath(view.tree, s.zoom ? s.zoom.split(';') : []) || view.tree;
	const m = searchTotal(z, re);
	const units = TYPE_INFO[s.type].units;
	out.textContent = m.frames
		? `${m.frames} frames match · ${fmtValue(m.total, units)} · ${fmtPct(m.total / (z.value || 1))} of ${z === view.tree ? 'total' : 'zoom'}`
		: 'no frame matches /' + s.search + '/';
	out.className = 'match-info' + (m.frames ? ' found' : ' none');
}

// Where the time went, per function: for off-CPU and wakeup stacks the
// deepest non-kernel frame (every off-CPU stack ends in __schedule, so
// plain self time would name only the scheduler); for the rest the leaf.
export function blameTotals(stacks, type) {
	const m = new Map();
	const kernelBlind = type === 'offcpu' || type === 'wakeup';
	for (const st of stacks) {
		const f = String(st.stack).split(';');
		const name = kernelBlind ? blameFrame(st.stack) : f[f.length - 1];
		m.set(name, (m.get(name) || 0) + Number(st.count));
	}
	return [...m.entries()].sort((a, b) => b[1] - a[1]);
}

function drawTop(stacks, total, units, s) {
	const box = clear(document.getElementById('flame-top'));
	const rows = blameTotals(stacks, s.type).slice(0, 15);
	const esc = (x) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
	const t = el('table', {class: 'toplist', 'aria-label': 'Top frames'},
		el('thead', {}, el('tr', {}, el('th', {scope: 'col'}, 'Frame'), el('th', {scope: 'col', class: 'num'}, 'Time'))),
		el('tbody', {}, rows.map(([name, v]) => el('tr', {},
			el('td', {class: 'fname'}, el('a', {href: state.href({search: '^' + esc(name) + '$'}),
				title: 'Highlight ' + name}, name)),
			el('td', {class: 'num'}, fmtValue(v, units), el('span', {class: 'th-unit'}, fmtPct(v / (total || 1))))))));
	box.append(t);
}
