// locks.js — the lock table: the most contended glassfs lock classes across
// the fleet (from the agents' lock-wait summaries, /timeseries
// metric=lock_wait_ns) and, for each, the waiters' stacks (lock-wait
// profiles, /merge query=lockwait{…}) that name it.

import * as api from './api.js';
import * as state from './state.js';
import {el, clear, fmtNs, fmtPct, notice, errorNotice, quoteValue, fmtWhen} from './util.js';

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

let view = null;

export function render(root, s) {
	root.append(
		el('div', {class: 'view-head'},
			el('h1', {}, 'Locks', s.sel ? el('span', {class: 'muted'}, ' · {' + s.sel + '}') : null),
			el('p', {class: 'sub'}, 'Top contended glassfs lock classes over ', el('code', {}, fmtWhen(s.from) + ' → ' + fmtWhen(s.until)),
				', with the stacks of the threads that waited for them. Expand a class to see its waiters.')),
		el('section', {class: 'panel', id: 'locks-box', 'aria-label': 'Lock classes'}, notice('loading', 'Loading lock waits…')));
	view = {s};
	load(s);
	return () => { view = null; };
}

export function update(s, changes) {
	if (!view || !view.classes) return false;
	if (!Object.keys(changes).every((k) => k === 'lock')) return false;
	view.s = s;
	draw(s);
	return true;
}

async function load(s) {
	const my = view;
	const [ts, mg] = await Promise.allSettled([
		api.timeseries('lock_wait_ns', state.query('offcpu', s.sel), s.from, s.until, undefined),
		api.merge(state.query('lockwait', s.sel), s.from, s.until),
	]);
	if (view !== my) return;
	const box = document.getElementById('locks-box');
	if (ts.status === 'rejected' && mg.status === 'rejected') {
		clear(box).append(errorNotice(ts.reason, 'lock waits'));
		return;
	}
	view.classes = ts.status === 'fulfilled' ? classTotals(ts.value.series) : [];
	view.tsErr = ts.status === 'rejected' ? ts.reason : null;
	view.stacks = mg.status === 'fulfilled' ? (mg.value.stacks || []).slice().sort((a, b) => b.count - a.count) : [];
	view.stackTotal = mg.status === 'fulfilled' ? mg.value.total || 0 : 0;
	view.mgErr = mg.status === 'rejected' ? mg.reason : null;
	draw(s);
}

function stackList(stacks, total, n) {
	return el('ol', {class: 'stacks'}, stacks.slice(0, n).map((st) => {
		const f = String(st.stack).split(';');
		return el('li', {},
			el('div', {class: 'stack-head'}, el('b', {}, fmtNs(st.count)), ' ',
				el('span', {class: 'muted'}, fmtPct(st.count / (total || 1)) + ' of lock wait')),
			el('div', {class: 'frames'}, f.slice(-7).map((x, i) =>
				el('span', {class: 'fr' + (i === Math.min(6, f.length - 1) ? ' leaf' : '')}, x)),
			f.length > 7 ? el('span', {class: 'muted'}, ' (' + (f.length - 7) + (f.length === 8 ? ' caller' : ' callers') + ' above)') : null));
	}));
}

function draw(s) {
	const box = clear(document.getElementById('locks-box'));
	const cl = view.classes, total = cl.reduce((a, c) => a + c.total, 0);
	if (view.tsErr) box.append(notice('error', 'Lock-wait summaries unavailable', view.tsErr.detail || view.tsErr.message));
	if (!cl.length && !view.stacks.length) {
		box.append(notice('empty', 'No lock waits in this range',
			'No host running glassfs reported lock-wait time between ' + fmtWhen(s.from) + ' and ' + fmtWhen(s.until) +
			'. Lock waits come from agents on hosts with a mounted glassfs and the lock profiler enabled.',
			el('a', {class: 'btn', href: state.href({from: 'now-24h', until: 'now'})}, 'Last 24 hours')));
		return;
	}
	if (cl.length) {
		const maxc = cl[0].total || 1;
		const tbody = el('tbody', {});
		for (const c of cl) {
			const open = s.lock === c.cls;
			const hosts = [...c.hosts.entries()].sort((a, b) => b[1] - a[1]);
			const id = 'lock-' + c.cls.replace(/[^a-z0-9]/gi, '_');
			tbody.append(el('tr', {class: open ? 'open' : ''},
				el('th', {scope: 'row'}, el('button', {type: 'button', class: 'expand', 'aria-expanded': open ? 'true' : 'false',
					'aria-controls': id, onclick: () => state.set({lock: open ? '' : c.cls}, false)},
				el('span', {class: 'chev', 'aria-hidden': 'true'}, open ? '▾' : '▸'), ' ', c.cls)),
				el('td', {class: 'num'}, fmtNs(c.total), el('span', {class: 'bar hot', 'aria-hidden': 'true'},
					el('span', {style: `width:${(c.total / maxc * 100).toFixed(1)}%`}))),
				el('td', {class: 'num'}, fmtPct(c.total / (total || 1))),
				el('td', {}, hosts.slice(0, 3).map(([h, v]) => el('span', {class: 'chip'},
					el('a', {href: state.href({view: 'flame', type: 'lockwait', sel: 'host=' + quoteValue(h), search: c.cls, zoom: ''})}, h),
					' ' + fmtPct(v / (c.total || 1), 0))))));
			if (open) {
				const st = stacksFor(view.stacks, c.cls);
				tbody.append(el('tr', {class: 'detail', id}, el('td', {colspan: 4},
					st.length ? [el('p', {}, 'Waiters\' stacks naming ', el('code', {}, c.cls), ' (leaf last): ',
						el('a', {href: state.href({view: 'flame', type: 'lockwait', search: c.cls, zoom: ''})}, 'open as a flame graph')),
					stackList(st, view.stackTotal, 6)]
						: notice('empty', 'No waiter stacks name ' + c.cls,
							view.mgErr ? 'Lock-wait stacks could not be loaded: ' + (view.mgErr.detail || view.mgErr.message)
								: 'The lock-wait profiles in this range do not mention this class; see all waiters below.'))));
			}
		}
		box.append(el('h2', {}, 'Lock classes by total wait'),
			el('table', {class: 'locks', id: 'locks-table', 'aria-label': 'Lock classes by total wait time'},
				el('thead', {}, el('tr', {}, el('th', {scope: 'col'}, 'Class'), el('th', {scope: 'col', class: 'num'}, 'Wait'),
					el('th', {scope: 'col', class: 'num'}, 'Share'), el('th', {scope: 'col'}, 'Top hosts'))),
				tbody));
	}
	box.append(el('h2', {}, 'Top waiters\' stacks (all classes)'));
	if (view.stacks.length)
		box.append(stackList(view.stacks, view.stackTotal, 8));
	else
		box.append(notice(view.mgErr ? 'error' : 'empty', view.mgErr ? 'Lock-wait stacks unavailable' : 'No lock-wait stacks in this range',
			view.mgErr ? view.mgErr.detail || view.mgErr.message : 'Agents sent lock-wait summaries but no lock-wait stacks.'));
}
