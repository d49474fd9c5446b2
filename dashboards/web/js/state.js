// state.js — the whole view lives in the URL's query string, so a view can be
// linked, bookmarked and restored by reload or Back.  Keys:
//   view    overview | flame | diff | timeseries | locks
//   from, until   Pyroscope time syntax (now-1h, now, unix seconds); shared
//   type    offcpu | wakeup | lockwait | oncpu | wall   (profile type)
//   sel     label matchers without braces: host="a",locking="node"
//   search  regex highlighted in the flame graph
//   zoom    frame path (a;b;c) the flame graph is zoomed into
//   left, right   the diff's two selections (label matchers)
//   lfrom, luntil, rfrom, runtil   per-side ranges of the diff (before vs
//                 after); empty = the shared range
//   sort, dir     overview table sort column and direction (asc|desc)
//   pattern frame regex the outlier ranking uses
//   lock    the lock in focus, CLASS@LEVEL (or CLASS): expanded in the lock
//           table; with type=lockwait the flame graph shows only its waiters
//   renderer js | svg  (browser or server-rendered flame graphs)

export const VIEWS = ['overview', 'flame', 'diff', 'timeseries', 'locks'];
export const TYPES = ['offcpu', 'wakeup', 'lockwait', 'oncpu', 'wall'];

export const DEFAULTS = {
	view: 'overview',
	from: 'now-1h',
	until: 'now',
	type: 'offcpu',
	sel: '',
	search: '',
	zoom: '',
	left: '',
	right: '',
	lfrom: '',
	luntil: '',
	rfrom: '',
	runtil: '',
	sort: 'ratio',
	dir: 'desc',
	pattern: 'glock_|btree_.*lock',
	lock: '',
	renderer: 'js',
};

// The order keys appear in a URL: stable, so equal views give equal URLs.
const ORDER = Object.keys(DEFAULTS);

export function parse(search) {
	const p = new URLSearchParams(search);
	const s = {...DEFAULTS};
	for (const k of ORDER)
		if (p.has(k)) s[k] = p.get(k);
	if (!VIEWS.includes(s.view)) s.view = DEFAULTS.view;
	if (!TYPES.includes(s.type)) s.type = DEFAULTS.type;
	if (s.dir !== 'asc') s.dir = 'desc';
	if (s.renderer !== 'svg') s.renderer = 'js';
	return s;
}

// Only non-default keys go into the URL (view always does, for clarity).
export function serialize(s) {
	const p = new URLSearchParams();
	for (const k of ORDER) {
		const v = s[k];
		if (v === undefined || v === null) continue;
		if (k !== 'view' && String(v) === String(DEFAULTS[k])) continue;
		p.set(k, v);
	}
	return '?' + p.toString();
}

let cur = parse(location.search);
const listeners = [];

export function get() {
	return cur;
}

// Change the view.  push=true adds a history entry (navigation); false
// replaces it (typing in a search box should not flood Back).
export function set(changes, push = true) {
	const next = {...cur, ...changes};
	const url = serialize(next);
	if (url === location.search && next.view === cur.view) {
		cur = next;
		return;
	}
	cur = next;
	if (push) history.pushState(null, '', url);
	else history.replaceState(null, '', url);
	for (const f of listeners) f(cur, changes);
}

export function onChange(f) {
	listeners.push(f);
}

window.addEventListener('popstate', () => {
	cur = parse(location.search);
	for (const f of listeners) f(cur, null);
});

// A link (href) to a view: used for real <a> elements so middle-click and
// copy-link work, with the click intercepted for in-page navigation.
export function href(changes) {
	return location.pathname + serialize({...cur, ...changes});
}

// Build the query selector NAME{matchers} the API takes.
export function query(type, sel) {
	return type + '{' + (sel || '') + '}';
}
