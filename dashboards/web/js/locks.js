// locks.js — the lock table: the most contended glassfs lock classes (by
// B-tree level) and lock instances across the fleet, with their waiters'
// stacks (/locks: the agents' glass-lockstat detail).  A class row expands
// to its waiters' stacks; "flame graph" (or Enter on an instance) opens the
// flame-graph view of exactly those waiters (view=flame&type=lockwait&
// lock=CLASS@LEVEL, drawn from /lockstacks).  Agents that send only
// per-class summaries still get a table (from /timeseries lock_wait_ns)
// with the waiter stacks of the lock-wait profiles that name the class.

import * as api from './api.js';
import * as state from './state.js';
import {el, clear, fmtNs, fmtPct, fmtCount, notice, errorNotice, quoteValue, fmtWhen,
	rowNav, parseLock, lockName} from './util.js';

// Sum lock-wait series into classes: {cls, total, hosts: Map(host -> ns)}.
export function classTotals(series) {
	const m = new Map();
	for (const s of series || []) {
		const l = s.labels || {};
		const cls = l.class || l.lock || l.lock_class || (l.level !== undefined ? 'level ' + l.level : 'all');
		const sum = (s.points || []).reduce((a, p) => a + (Number(p[1]) || 0), 0);
		const e = m.get(cls) || {cls, total: 0, hosts: new Map()};
		e.total += sum;
		if (l.host) e.hosts.set(l.host, (e.hosts.get(l.host) || 0) + sum);
		m.set(cls, e);
	}
	return [...m.values()].filter((e) => e.total > 0).sort((a, b) => b.total - a.total);
}

// Waiter stacks that name a lock class: a frame equal to it, or containing
// it as a word (lock:root, [root], glock_wait_root, …).
export function stacksFor(stacks, cls) {
	const re = new RegExp('(^|[^a-z0-9_])' + cls.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '($|[^a-z0-9_])', 'i');
	return stacks.filter((s) => String(s.stack).split(';').some((f) => re.test(f)));
}

const lockKey = (cls, level) => cls + '@' + level;
const levelText = (l) => (l < 0 ? '—' : l === 0 ? '0 (leaf)' : String(l));

// A flame graph of the waiters of CLS at LEVEL (on HOST, if given).
function flameHref(cls, level, host) {
	const ch = {view: 'flame', type: 'lockwait', lock: lockKey(cls, level), zoom: '', search: ''};
	if (host) ch.sel = 'host=' + quoteValue(host);
	return state.href(ch);
}

let view = null;

export function render(root, s) {
	root.append(
		el('div', {class: 'view-head'},
			el('h1', {}, 'Locks', s.sel ? el('span', {class: 'muted'}, ' · {' + s.sel + '}') : null),
			el('p', {class: 'sub'}, 'Top contended glassfs lock classes and lock instances over ', el('code', {}, fmtWhen(s.from) + ' → ' + fmtWhen(s.until)),
				', with the stacks of the threads that waited for them. Expand a class to see its waiters; open them as a flame graph.')),
		el('section', {class: 'panel', id: 'locks-box', 'aria-label': 'Lock classes'}, notice('loading', 'Loading lock waits…')),
		el('section', {class: 'panel', id: 'lockinst-box', 'aria-label': 'Lock instances'}));
	view = {s};
	load(s);
	return () => { view = null; };
}

export function update(s, changes) {
	if (!view || !view.loaded) return false;
	if (!Object.keys(changes).every((k) => k === 'lock')) return false;
	view.s = s;
	draw(s, true);
	return true;
}

async function load(s) {
	const my = view;
	const q = s.sel ? state.query('lockwait', s.sel) : undefined;
	let detail = null, detailErr = null;
	try {
		detail = await api.locks(q, s.from, s.until, 20);
	} catch (e) {
		detailErr = e;
	}
	if (view !== my) return;
	view.detail = detail && detail.classes && detail.classes.length ? detail : null;
	view.detailErr = detailErr;
	if (!view.detail) {
		// No lock detail: the agents' per-class summaries and lock-wait profiles.
		const [ts, mg] = await Promise.allSettled([
			api.timeseries('lock_wait_ns', state.query('offcpu', s.sel), s.from, s.until, undefined),
			api.merge(state.query('lockwait', s.sel), s.from, s.until),
		]);
		if (view !== my) return;
		if (ts.status === 'rejected' && mg.status === 'rejected') {
			clear(document.getElementById('locks-box')).append(errorNotice(detailErr || ts.reason, 'lock waits'));
			return;
		}
		view.classes = ts.status === 'fulfilled' ? classTotals(ts.value.series) : [];
		view.tsErr = ts.status === 'rejected' ? ts.reason : null;
		view.stacks = mg.status === 'fulfilled' ? (mg.value.stacks || []).slice().sort((a, b) => b.count - a.count) : [];
		view.stackTotal = mg.status === 'fulfilled' ? mg.value.total || 0 : 0;
		view.mgErr = mg.status === 'rejected' ? mg.reason : null;
	}
	view.loaded = true;
	draw(s, false);
}

function stackList(stacks, total, n, what) {
	return el('ol', {class: 'stacks'}, stacks.slice(0, n).map((st) => {
		const f = String(st.stack).split(';');
		const v = st.wait_ns !== undefined ? st.wait_ns : st.count;
		return el('li', {},
			el('div', {class: 'stack-head'}, el('b', {}, fmtNs(v)), ' ',
				el('span', {class: 'muted'}, fmtPct(v / (total || 1)) + ' of ' + what +
					(st.count !== undefined && st.wait_ns !== undefined ? ' · ' + fmtCount(st.count) + ' waits' : '') +
					(st.hosts ? ' · ' + st.hosts + (st.hosts === 1 ? ' host' : ' hosts') : ''))),
			el('div', {class: 'frames'}, f.slice(-7).map((x, i) =>
				el('span', {class: 'fr' + (i === Math.min(6, f.length - 1) ? ' leaf' : '')}, x)),
			f.length > 7 ? el('span', {class: 'muted'}, ' (' + (f.length - 7) + (f.length === 8 ? ' caller' : ' callers') + ' above)') : null));
	}));
}

function draw(s, keepFocus) {
	const focused = keepFocus && document.activeElement && document.activeElement.dataset
		? document.activeElement.dataset.lock : null;
	if (view.detail) drawDetail(s);
	else drawSummaries(s);
	if (focused) {
		const tr = document.querySelector(`#locks-table tr.lock-row[data-lock="${CSS.escape(focused)}"]`);
		if (tr && view.focusClass) view.focusClass(tr);
	}
}

// ---- from the lock detail (/locks) -------------------------------------

function drawDetail(s) {
	const d = view.detail, box = clear(document.getElementById('locks-box'));
	const total = d.wait_ns || d.classes.reduce((a, c) => a + c.wait_ns, 0);
	const maxc = d.classes[0].wait_ns || 1;
	const open = parseLock(s.lock);
	const tbody = el('tbody', {});
	for (const c of d.classes) {
		const key = lockKey(c.class, c.level);
		const isOpen = !!open && open.cls === c.class && (open.level === null || open.level === c.level);
		const id = 'lock-' + key.replace(/[^a-z0-9]/gi, '_');
		const toggle = () => state.set({lock: isOpen ? '' : key}, false);
		tbody.append(el('tr', {class: 'lock-row' + (isOpen ? ' open' : ''), tabindex: '-1', 'data-lock': key,
			'aria-label': lockName(c.class, c.level) + ', waited ' + fmtNs(c.wait_ns)},
		el('th', {scope: 'row'}, el('button', {type: 'button', class: 'expand', tabindex: '-1',
			'aria-expanded': isOpen ? 'true' : 'false', 'aria-controls': id, onclick: toggle},
		el('span', {class: 'chev', 'aria-hidden': 'true'}, isOpen ? '▾' : '▸'), ' ', c.class)),
		el('td', {class: 'num'}, levelText(c.level)),
		el('td', {class: 'num'}, fmtNs(c.wait_ns), el('span', {class: 'bar hot', 'aria-hidden': 'true'},
			el('span', {style: `width:${(c.wait_ns / maxc * 100).toFixed(1)}%`}))),
		el('td', {class: 'num'}, fmtPct(c.wait_ns / (total || 1))),
		el('td', {class: 'num'}, fmtCount(c.contended), c.acquired ? el('span', {class: 'th-unit'},
			fmtPct(c.contended / c.acquired) + ' of ' + fmtCount(c.acquired)) : null),
		el('td', {class: 'num'}, fmtNs(c.wait_max_ns)),
		el('td', {}, (c.top_hosts || []).map((h) => el('span', {class: 'chip'},
			el('a', {href: flameHref(c.class, c.level, h.host), tabindex: '-1',
				title: 'Flame graph of ' + h.host + '\'s waiters for ' + lockName(c.class, c.level)}, h.host),
			' ' + fmtPct(h.wait_ns / (c.wait_ns || 1), 0))))));
		if (isOpen) {
			const st = d.stacks.filter((x) => x.class === c.class && x.level === c.level);
			tbody.append(el('tr', {class: 'detail', id}, el('td', {colspan: 7},
				el('p', {}, 'Waiters\' stacks for ', el('code', {}, lockName(c.class, c.level)), ' (leaf last): ',
					el('a', {class: 'btn', id: 'lock-flame', href: flameHref(c.class, c.level)}, 'Flame graph of these waiters')),
				st.length ? stackList(st, c.wait_ns, 6, 'this class\'s wait')
					: notice('empty', 'No waiter stacks recorded for ' + lockName(c.class, c.level),
						'The agents\' lock profiler keeps the top waiter stacks of each window; none of them waited on this lock.'))));
		}
	}
	const table = el('table', {class: 'locks', id: 'locks-table',
		'aria-label': 'Lock classes by total wait time, ' + d.classes.length + ' rows; arrow keys move between rows, Enter expands a class'},
	el('thead', {}, el('tr', {}, el('th', {scope: 'col'}, 'Class'), el('th', {scope: 'col', class: 'num'}, 'B-tree level'),
		el('th', {scope: 'col', class: 'num'}, 'Wait'), el('th', {scope: 'col', class: 'num'}, 'Share'),
		el('th', {scope: 'col', class: 'num'}, 'Contended'), el('th', {scope: 'col', class: 'num'}, 'Max wait'),
		el('th', {scope: 'col'}, 'Top hosts'))),
	tbody);
	view.focusClass = rowNav(table, 'tr.lock-row', (tr) => {
		const k = tr.dataset.lock;
		state.set({lock: s.lock === k ? '' : k}, false);
	});
	table.addEventListener('click', (ev) => {
		const tr = ev.target.closest('tr.lock-row');
		if (!tr || ev.target.closest('a, button')) return;
		view.focusClass(tr);
		state.set({lock: s.lock === tr.dataset.lock ? '' : tr.dataset.lock}, false);
	});
	box.append(el('h2', {}, 'Lock classes by total wait ', el('span', {class: 'th-unit'}, fmtNs(total) + ' in all')),
		el('div', {class: 'table-scroll'}, table));
	box.append(el('h2', {}, 'Top waiters\' stacks (all classes)'),
		d.stacks.length ? stackList(d.stacks, total, 6, 'all lock wait')
			: notice('empty', 'No waiter stacks in this range', 'The agents sent lock classes but no waiter stacks (glass-lockstat without -s).'));
	drawInstances(s, d);
}

function drawInstances(s, d) {
	const box = clear(document.getElementById('lockinst-box'));
	box.append(el('h2', {}, 'Most contended lock instances'));
	if (!d.instances.length) {
		box.append(notice('empty', 'No contended lock instances in this range',
			'No single lock was waited for between ' + fmtWhen(s.from) + ' and ' + fmtWhen(s.until) + '.'));
		return;
	}
	const maxw = d.instances[0].wait_ns || 1;
	const tbody = el('tbody', {}, d.instances.map((x) => el('tr', {class: 'inst-row', tabindex: '-1',
		'data-host': x.host, 'data-lock': lockKey(x.class, x.level), 'data-addr': x.addr,
		'aria-label': x.class + ' lock ' + x.addr + ' on ' + x.host + ', waited ' + fmtNs(x.wait_ns)},
	el('th', {scope: 'row'}, el('a', {href: flameHref(x.class, x.level, x.host), tabindex: '-1'}, x.host)),
	el('td', {}, el('code', {}, x.addr)),
	el('td', {}, x.class),
	el('td', {class: 'num'}, String(x.tree)),
	el('td', {class: 'num'}, levelText(x.level)),
	el('td', {class: 'num'}, x.group < 0 ? '—' : String(x.group)),
	el('td', {class: 'num'}, fmtNs(x.wait_ns), el('span', {class: 'bar hot', 'aria-hidden': 'true'},
		el('span', {style: `width:${(x.wait_ns / maxw * 100).toFixed(1)}%`}))),
	el('td', {class: 'num'}, fmtCount(x.contended), x.acquired ? el('span', {class: 'th-unit'}, 'of ' + fmtCount(x.acquired)) : null),
	el('td', {class: 'num'}, fmtNs(x.wait_max_ns)))));
	const table = el('table', {class: 'locks', id: 'lockinst-table',
		'aria-label': 'Lock instances by wait time, ' + d.instances.length + ' rows; arrow keys move between rows, Enter opens the waiters\' flame graph'},
	el('thead', {}, el('tr', {}, ['Host', 'Address', 'Class', 'Tree', 'B-tree level', 'Group', 'Wait', 'Contended', 'Max wait']
		.map((h, i) => el('th', {scope: 'col', class: i >= 3 ? 'num' : ''}, h)))),
	tbody);
	const open = (tr) => state.set({view: 'flame', type: 'lockwait', lock: tr.dataset.lock,
		sel: 'host=' + quoteValue(tr.dataset.host), zoom: '', search: ''});
	rowNav(table, 'tr.inst-row', open);
	table.addEventListener('click', (ev) => {
		const tr = ev.target.closest('tr.inst-row');
		if (!tr || ev.target.closest('a')) return;
		open(tr);
	});
	box.append(el('p', {class: 'hint'}, 'One row per lock (host, address); the waiters of its class and level open as a flame graph.'),
		el('div', {class: 'table-scroll'}, table));
}

// ---- from the per-class summaries (agents without lock detail) -----------

function drawSummaries(s) {
	const box = clear(document.getElementById('locks-box'));
	clear(document.getElementById('lockinst-box')).hidden = true;
	const cl = view.classes, total = cl.reduce((a, c) => a + c.total, 0);
	if (view.tsErr) box.append(notice('error', 'Lock-wait summaries unavailable', view.tsErr.detail || view.tsErr.message));
	if (!cl.length && !view.stacks.length) {
		box.append(notice('empty', 'No lock waits in this range',
			'No host running glassfs reported lock-wait time between ' + fmtWhen(s.from) + ' and ' + fmtWhen(s.until) +
			'. Lock waits come from agents on hosts with a mounted glassfs and the lock profiler enabled.',
			el('a', {class: 'btn', href: state.href({from: 'now-24h', until: 'now'})}, 'Last 24 hours')));
		return;
	}
	box.append(notice('empty', 'No per-lock detail from the agents',
		'These classes come from the agents\' per-class summaries; B-tree levels and lock instances need agents that ship glass-lockstat\'s detail (glass-agent --lock-cmd).'));
	if (cl.length) {
		const maxc = cl[0].total || 1;
		const tbody = el('tbody', {});
		const lk = parseLock(s.lock);
		for (const c of cl) {
			const open = !!lk && lk.cls === c.cls;
			const hosts = [...c.hosts.entries()].sort((a, b) => b[1] - a[1]);
			const id = 'lock-' + c.cls.replace(/[^a-z0-9]/gi, '_');
			tbody.append(el('tr', {class: 'lock-row' + (open ? ' open' : ''), tabindex: '-1', 'data-lock': c.cls},
				el('th', {scope: 'row'}, el('button', {type: 'button', class: 'expand', tabindex: '-1', 'aria-expanded': open ? 'true' : 'false',
					'aria-controls': id, onclick: () => state.set({lock: open ? '' : c.cls}, false)},
				el('span', {class: 'chev', 'aria-hidden': 'true'}, open ? '▾' : '▸'), ' ', c.cls)),
				el('td', {class: 'num'}, fmtNs(c.total), el('span', {class: 'bar hot', 'aria-hidden': 'true'},
					el('span', {style: `width:${(c.total / maxc * 100).toFixed(1)}%`}))),
				el('td', {class: 'num'}, fmtPct(c.total / (total || 1))),
				el('td', {}, hosts.slice(0, 3).map(([h, v]) => el('span', {class: 'chip'},
					el('a', {href: state.href({view: 'flame', type: 'lockwait', sel: 'host=' + quoteValue(h), search: c.cls, zoom: ''}), tabindex: '-1'}, h),
					' ' + fmtPct(v / (c.total || 1), 0))))));
			if (open) {
				const st = stacksFor(view.stacks, c.cls);
				tbody.append(el('tr', {class: 'detail', id}, el('td', {colspan: 4},
					st.length ? [el('p', {}, 'Waiters\' stacks naming ', el('code', {}, c.cls), ' (leaf last): ',
						el('a', {href: state.href({view: 'flame', type: 'lockwait', search: c.cls, zoom: ''})}, 'open as a flame graph')),
					stackList(st, view.stackTotal, 6, 'lock wait')]
						: notice('empty', 'No waiter stacks name ' + c.cls,
							view.mgErr ? 'Lock-wait stacks could not be loaded: ' + (view.mgErr.detail || view.mgErr.message)
								: 'The lock-wait profiles in this range do not mention this class; see all waiters below.'))));
			}
		}
		const table = el('table', {class: 'locks', id: 'locks-table', 'aria-label': 'Lock classes by total wait time; arrow keys move between rows, Enter expands a class'},
			el('thead', {}, el('tr', {}, el('th', {scope: 'col'}, 'Class'), el('th', {scope: 'col', class: 'num'}, 'Wait'),
				el('th', {scope: 'col', class: 'num'}, 'Share'), el('th', {scope: 'col'}, 'Top hosts'))),
			tbody);
		view.focusClass = rowNav(table, 'tr.lock-row', (tr) => state.set({lock: s.lock === tr.dataset.lock ? '' : tr.dataset.lock}, false));
		box.append(el('h2', {}, 'Lock classes by total wait'), table);
	}
	box.append(el('h2', {}, 'Top waiters\' stacks (all classes)'));
	if (view.stacks.length)
		box.append(stackList(view.stacks, view.stackTotal, 8, 'lock wait'));
	else
		box.append(notice(view.mgErr ? 'error' : 'empty', view.mgErr ? 'Lock-wait stacks unavailable' : 'No lock-wait stacks in this range',
			view.mgErr ? view.mgErr.detail || view.mgErr.message : 'Agents sent lock-wait summaries but no lock-wait stacks.'));
}
