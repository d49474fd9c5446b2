// util.js — DOM building, number formatting and notices shared by every view.
// No framework: views build their DOM with el() and replace a region's
// children when their data arrives.

export const SVGNS = 'http://www.w3.org/2000/svg';

// el('div', {class: 'x', onclick: f}, child, 'text', ...)
export function el(tag, attrs, ...kids) {
	const n = document.createElement(tag);
	setAttrs(n, attrs);
	append(n, kids);
	return n;
}

export function svg(tag, attrs, ...kids) {
	const n = document.createElementNS(SVGNS, tag);
	setAttrs(n, attrs);
	append(n, kids);
	return n;
}

function setAttrs(n, attrs) {
	if (!attrs) return;
	for (const [k, v] of Object.entries(attrs)) {
		if (v === undefined || v === null || v === false) continue;
		if (k.startsWith('on') && typeof v === 'function')
			n.addEventListener(k.slice(2), v);
		else if (k === 'text')
			n.textContent = v;
		else
			n.setAttribute(k, v === true ? '' : String(v));
	}
}

function append(n, kids) {
	for (const k of kids.flat(Infinity)) {
		if (k === undefined || k === null || k === false) continue;
		n.append(k instanceof Node ? k : document.createTextNode(String(k)));
	}
}

export function clear(n) {
	while (n.firstChild) n.removeChild(n.firstChild);
	return n;
}

// Nanoseconds to a short human duration: 1.2 s, 35 ms, 800 µs.
export function fmtNs(ns) {
	if (ns === null || ns === undefined || Number.isNaN(ns)) return '—';
	const a = Math.abs(ns);
	if (a >= 3600e9) return (ns / 3600e9).toFixed(1) + ' h';
	if (a >= 60e9) return (ns / 60e9).toFixed(1) + ' min';
	if (a >= 1e9) return (ns / 1e9).toFixed(a >= 10e9 ? 1 : 2) + ' s';
	if (a >= 1e6) return (ns / 1e6).toFixed(a >= 10e6 ? 1 : 2) + ' ms';
	if (a >= 1e3) return (ns / 1e3).toFixed(a >= 10e3 ? 0 : 1) + ' µs';
	if (a === 0) return '0';
	return Math.round(ns) + ' ns';
}

export function fmtPct(x, digits = 1) {
	if (x === null || x === undefined || Number.isNaN(x)) return '—';
	return (x * 100).toFixed(digits) + '%';
}

export function fmtCount(n) {
	if (n === null || n === undefined || Number.isNaN(n)) return '—';
	const a = Math.abs(n);
	if (a >= 1e9) return (n / 1e9).toFixed(1) + 'G';
	if (a >= 1e6) return (n / 1e6).toFixed(1) + 'M';
	if (a >= 1e4) return (n / 1e3).toFixed(1) + 'k';
	return String(Math.round(n));
}

// Format a profile value in the profile's units.
export function fmtValue(v, units) {
	return units === 'ns' ? fmtNs(v) : fmtCount(v) + (units ? ' ' + units : '');
}

export function fmtTime(tSec, withDate) {
	const d = new Date(tSec * 1000);
	const p = (x) => String(x).padStart(2, '0');
	const hm = p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());
	if (!withDate) return hm;
	return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + ' ' + hm;
}

// A range bound as written in the URL: relative ones (now-1h) as they are,
// absolute unix seconds as a local date and time.
export function fmtWhen(t) {
	const s = String(t);
	if (!/^\d+$/.test(s)) return s;
	let n = Number(s);
	if (n > 1e15) n /= 1e9; else if (n > 1e12) n /= 1e3;
	return fmtTime(n, true);
}

export function fmtAgo(tSec) {
	const s = Math.max(0, Date.now() / 1000 - tSec);
	if (s < 90) return Math.round(s) + ' s ago';
	if (s < 5400) return Math.round(s / 60) + ' min ago';
	if (s < 129600) return Math.round(s / 3600) + ' h ago';
	return Math.round(s / 86400) + ' d ago';
}

// A notice stands in for a region whose data could not be shown: it says
// what is missing and, when it can, what to do about it.  Never a blank page.
//   kind: 'empty' | 'error' | 'loading'
export function notice(kind, title, detail, ...actions) {
	const role = kind === 'error' ? 'alert' : 'status';
	return el('div', {class: 'notice notice-' + kind, role},
		el('div', {class: 'notice-icon', 'aria-hidden': 'true'},
			kind === 'error' ? '!' : kind === 'loading' ? '' : '∅'),
		el('div', {class: 'notice-body'},
			el('p', {class: 'notice-title'}, title),
			detail ? el('p', {class: 'notice-detail'}, detail) : null,
			actions.length ? el('p', {class: 'notice-actions'}, actions) : null));
}

// The notice for a failed API call (see api.js ApiError).
export function errorNotice(err, what) {
	const title = err && err.title ? err.title : 'Could not load ' + what;
	if (window.glassStatus) window.glassStatus(title);
	const detail = err && err.detail ? err.detail : String(err && err.message || err);
	return notice('error', title, detail,
		el('button', {type: 'button', class: 'btn', onclick: () => location.reload()}, 'Retry'));
}

// Stable colour for a string: a small FNV-1a hash.
export function hash32(s) {
	let h = 0x811c9dc5;
	for (let i = 0; i < s.length; i++) {
		h ^= s.charCodeAt(i);
		h = Math.imul(h, 0x01000193);
	}
	return h >>> 0;
}

// The series palette: distinguishable, colour-blind-aware (Okabe-Ito + extras).
export const PALETTE = ['#0072b2', '#e69f00', '#009e73', '#cc79a7', '#56b4e9',
	'#d55e00', '#7f7f7f', '#b8a000', '#6a3d9a', '#1b9e77'];

// Parse matchers `host="a",locking="node"` into [{k, op, v}].  Tolerates
// braces and a metric name in front (`offcpu{host="a"}`).
export function parseSelector(s) {
	let t = (s || '').trim();
	const b = t.indexOf('{');
	if (b >= 0) t = t.slice(b + 1, t.lastIndexOf('}') >= 0 ? t.lastIndexOf('}') : undefined);
	const out = [];
	const re = /\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?/g;
	let m;
	while ((m = re.exec(t)) !== null)
		out.push({k: m[1], op: m[2], v: m[3].replace(/\\(.)/g, '$1')});
	return out;
}

export function quoteValue(v) {
	return '"' + String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"';
}

export function debounce(f, ms) {
	let t = 0;
	return (...a) => { clearTimeout(t); t = setTimeout(() => f(...a), ms); };
}

// Keyboard navigation of a table's rows (one tab stop, roving tabindex):
// ↑/↓/Home/End move between rows matching `rowSel`, Enter or Space calls
// open(row).  Returns focus(row) for restoring focus after a redraw.
export function rowNav(table, rowSel, open) {
	const focus = (tr) => {
		for (const r of table.querySelectorAll(rowSel)) r.tabIndex = -1;
		tr.tabIndex = 0;
		tr.focus();
	};
	const first = table.querySelector(rowSel);
	if (first && !table.querySelector(rowSel + '[tabindex="0"]')) first.tabIndex = 0;
	table.addEventListener('keydown', (ev) => {
		const tr = ev.target.closest && ev.target.closest(rowSel);
		if (!tr || ev.target !== tr) return;
		const rows = [...table.querySelectorAll(rowSel)];
		const i = rows.indexOf(tr);
		let j = -1;
		switch (ev.key) {
		case 'ArrowDown': j = Math.min(rows.length - 1, i + 1); break;
		case 'ArrowUp': j = Math.max(0, i - 1); break;
		case 'Home': j = 0; break;
		case 'End': j = rows.length - 1; break;
		case 'Enter': case ' ':
			ev.preventDefault();
			open(tr);
			return;
		default: return;
		}
		ev.preventDefault();
		focus(rows[j]);
	});
	return focus;
}

// The lock in focus, `lock=CLASS@LEVEL` in the URL (level -1 = not a
// B-tree node lock; no @ = every level).
export function parseLock(v) {
	const m = /^([A-Za-z_][A-Za-z0-9_.]*)(?:@(-?\d+))?$/.exec(v || '');
	return m ? {cls: m[1], level: m[2] === undefined ? null : Number(m[2])} : null;
}

export function lockName(cls, level) {
	return level === null || level === undefined ? cls
		: level < 0 ? cls : cls + ' · level ' + level + (level === 0 ? ' (leaf)' : '');
}
