// app.js — the shell: tabs, the shared time range, and routing the URL's
// `view` to a view module.  Each view module exports
//   render(root, state, changes) -> optional cleanup function
// and re-renders itself from the URL state alone (so the URL round-trips).

import * as state from './state.js';
import {el, clear, notice} from './util.js';
import * as overview from './overview.js';
import * as flameview from './flameview.js';
import * as diffview from './diff.js';
import * as tsview from './timeseries.js';
import * as locks from './locks.js';

const VIEWS = {overview, flame: flameview, diff: diffview, timeseries: tsview, locks};
const TITLES = {overview: 'Fleet overview', flame: 'Flame graph', diff: 'Diff',
	timeseries: 'Time series', locks: 'Locks'};

const root = document.getElementById('view');
let current = {view: null, cleanup: null};

function syncHeader(s) {
	for (const a of document.querySelectorAll('.tabs a')) {
		const v = a.dataset.view;
		a.href = state.href({view: v});
		if (v === s.view) a.setAttribute('aria-current', 'page');
		else a.removeAttribute('aria-current');
	}
	const preset = document.getElementById('range-preset');
	const known = [...preset.options].some((o) => o.value === s.from) && s.until === 'now';
	preset.value = known ? s.from : 'custom';
	document.querySelector('.range .custom').hidden = known;
	document.getElementById('range-from').value = s.from;
	document.getElementById('range-until').value = s.until;
	document.title = TITLES[s.view] + ' · glassfs fleet';
}

function route(s, changes) {
	syncHeader(s);
	// A view re-renders in place when only its own keys changed; switching
	// views (or the time range) rebuilds from scratch.
	const mod = VIEWS[s.view];
	if (current.view === s.view && changes && mod.update && !('from' in changes) &&
	    !('until' in changes) && !changes.refresh) {
		if (mod.update(s, changes) !== false) return;
	}
	if (current.cleanup) current.cleanup();
	status('');
	clear(root);
	current = {view: s.view, cleanup: null};
	try {
		current.cleanup = mod.render(root, s, changes) || null;
	} catch (e) {
		console.error(e);
		root.append(notice('error', 'This view failed to draw', String(e && e.stack || e)));
	}
}

// Header controls.
document.getElementById('range-preset').addEventListener('change', (ev) => {
	const v = ev.target.value;
	if (v === 'custom') {
		document.querySelector('.range .custom').hidden = false;
		document.getElementById('range-from').focus();
		return;
	}
	state.set({from: v, until: 'now', zoom: ''});
});
document.getElementById('range').addEventListener('submit', (ev) => {
	ev.preventDefault();
	const f = document.getElementById('range-from').value.trim() || 'now-1h';
	const u = document.getElementById('range-until').value.trim() || 'now';
	state.set({from: f, until: u});
});
document.getElementById('refresh').addEventListener('click', () => {
	route(state.get(), {refresh: true});
});

// In-page navigation for every same-page link (tabs, host links, …):
// keeps history without reloading, while the href stays a real link.
document.addEventListener('click', (ev) => {
	const a = ev.target.closest && ev.target.closest('a[href^="?"], a[href^="' + location.pathname + '?"]');
	if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey) return;
	ev.preventDefault();
	const next = state.parse(new URL(a.href).search), cur = state.get(), ch = {};
	for (const k of Object.keys(next)) if (next[k] !== cur[k]) ch[k] = next[k];
	state.set(ch);
	document.getElementById('main').focus({preventScroll: true});
});

state.onChange(route);
route(state.get(), null);

export function status(text) {
	document.getElementById('status').textContent = text;
}
window.glassStatus = status;
