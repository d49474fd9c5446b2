// diff.js — two selections compared (host vs fleet, before vs after a
// mount-option change): a differential flame graph whose widths are the
// comparison (right) and whose colour is the change in each frame's share
// of the total — red grew, blue shrank — plus the frames that moved most.

import * as api from './api.js';
import * as state from './state.js';
import {el, clear, fmtValue, fmtPct, notice, errorNotice, debounce, fmtWhen} from './util.js';
import {buildTree, blameFrame} from './flame.js';
import {TYPE_INFO, typeSwitch, selectionEditor, showFlame} from './flameview.js';

// Accept the shapes a diff reply may take and return
// {leftTotal, rightTotal, stacks: [{stack, left, right}]}.
export function normalizeDiff(d) {
	if (!d || typeof d !== 'object') throw new Error('diff reply is not an object');
	const pick = (o, ...ks) => { for (const k of ks) if (o[k] !== undefined) return Number(o[k]); return undefined; };
	const list = d.stacks || d.diff || [];
	const stacks = list.map((x) => ({
		stack: x.stack,
		left: pick(x, 'left', 'left_count', 'a', 'before', 'baseline') || 0,
		right: pick(x, 'right', 'right_count', 'b', 'after', 'count') || 0,
	}));
	let leftTotal = pick(d, 'left_total', 'total_left');
	let rightTotal = pick(d, 'right_total', 'total_right');
	if (leftTotal === undefined && d.left && typeof d.left === 'object') leftTotal = pick(d.left, 'total');
	if (rightTotal === undefined && d.right && typeof d.right === 'object') rightTotal = pick(d.right, 'total');
	if (leftTotal === undefined) leftTotal = stacks.reduce((a, s) => a + s.left, 0);
	if (rightTotal === undefined) rightTotal = stacks.reduce((a, s) => a + s.right, 0);
	return {leftTotal, rightTotal, stacks};
}

// The half of a wall-clock stack (glass-profile --wall): 'on-CPU' under
// an "[oncpu]" frame, 'off-CPU' under "[offcpu]" or "[runqueue]", else null.
export function stackHalf(stack) {
	const f = String(stack).split(';');
	return f.includes('[oncpu]') ? 'on-CPU' :
		f.includes('[offcpu]') || f.includes('[runqueue]') ? 'off-CPU' : null;
}

// Frames whose share moved the most, each stack blamed on its deepest
// non-kernel frame (see flame.js blameFrame).  In a wall-clock diff a
// frame is counted per half: a function that went from spinning to
// blocking moved, although its whole share stayed the same.
export function movers(stacks, L, R) {
	const m = new Map();
	for (const s of stacks) {
		const half = stackHalf(s.stack);
		const leaf = blameFrame(s.stack) + (half ? ' (' + half + ')' : '');
		const e = m.get(leaf) || {name: leaf, left: 0, right: 0};
		e.left += s.left; e.right += s.right;
		m.set(leaf, e);
	}
	for (const e of m.values()) e.delta = e.right / (R || 1) - e.left / (L || 1);
	return [...m.values()].sort((a, b) => Math.abs(b.delta) - Math.abs(a.delta));
}

let view = null;

// A side's own time range (before vs after a change); empty = shared.
function rangeEditor(id, caption, from, until, onApply) {
	const f = el('input', {id: id + '-from', value: from, size: 11, spellcheck: 'false',
		placeholder: 'shared', 'aria-label': caption + ': from'});
	const u = el('input', {id: id + '-until', value: until, size: 11, spellcheck: 'false',
		placeholder: 'shared', 'aria-label': caption + ': until'});
	return el('form', {class: 'sel-editor range-editor', onsubmit: (ev) => {
		ev.preventDefault();
		onApply(f.value.trim(), u.value.trim());
	}}, el('span', {class: 'hint'}, 'range'), f, el('span', {class: 'hint'}, '→'), u,
	el('button', {type: 'submit', class: 'btn'}, 'Set'));
}

function sideRange(s, side) {
	const f = side === 'l' ? s.lfrom : s.rfrom, u = side === 'l' ? s.luntil : s.runtil;
	return {from: f || s.from, until: u || s.until, own: !!(f || u)};
}

export function render(root, s) {
	const labels = api.labels();
	labels.catch(() => {});
	const info = TYPE_INFO[s.type];
	const search = el('input', {id: 'diff-search', type: 'search', value: s.search, size: 24,
		spellcheck: 'false', placeholder: 'regex', 'aria-label': 'Search frames'});
	search.addEventListener('input', debounce(() => state.set({search: search.value}, false), 200));
	const name = (sel) => sel ? '{' + sel + '}' : 'fleet';
	root.append(
		el('div', {class: 'view-head'},
			el('h1', {}, 'Diff ', el('span', {class: 'muted'}, '· ' + name(s.left) + ' → ' + name(s.right))),
			el('p', {class: 'sub'}, info.label + ' stacks. Widths are the comparison; colour is the change in a frame\'s ' +
				'share of the total against the baseline: ',
			el('span', {class: 'swatch grew'}), ' grew, ', el('span', {class: 'swatch shrank'}), ' shrank.')),
		el('div', {class: 'toolbar'}, typeSwitch(s, 'diff-type'),
			el('button', {type: 'button', class: 'btn', id: 'diff-swap',
				onclick: () => state.set({left: s.right, right: s.left, lfrom: s.rfrom, luntil: s.runtil,
					rfrom: s.lfrom, runtil: s.luntil, zoom: ''})}, '⇄ Swap sides')),
		el('div', {class: 'toolbar'}, selectionEditor('diff-left', s.left, labels,
			(v) => state.set({left: v, zoom: ''}), 'Baseline'),
		rangeEditor('diff-lrange', 'Baseline', s.lfrom, s.luntil, (f, u) => state.set({lfrom: f, luntil: u, zoom: ''}))),
		el('div', {class: 'toolbar'}, selectionEditor('diff-right', s.right, labels,
			(v) => state.set({right: v, zoom: ''}), 'Comparison'),
		rangeEditor('diff-rrange', 'Comparison', s.rfrom, s.runtil, (f, u) => state.set({rfrom: f, runtil: u, zoom: ''}))),
		el('div', {class: 'toolbar'},
			el('label', {for: 'diff-search', class: 'search-label'}, 'Search'), search,
			el('span', {class: 'spacer'}),
			el('button', {type: 'button', class: 'btn', onclick: () => state.set({zoom: ''})}, 'Reset zoom')),
		el('div', {id: 'diff-summary', class: 'cards'}),
		el('div', {class: 'flame-layout'},
			el('section', {class: 'panel flame-panel', 'aria-label': 'Differential flame graph'},
				el('div', {id: 'diff-box'}, notice('loading', 'Comparing…'))),
			el('aside', {class: 'panel side', 'aria-label': 'Biggest changes'},
				el('h2', {}, 'Biggest changes'), el('div', {id: 'diff-movers'}))));
	view = {s, fg: null};
	load(s);
	return () => { if (view && view.fg) view.fg.destroy(); view = null; };
}

export function update(s, changes) {
	if (!view || !view.fg) return false;
	if (!Object.keys(changes).every((k) => k === 'search' || k === 'zoom')) return false;
	view.fg.setSearch(s.search);
	view.fg.setZoom(s.zoom ? s.zoom.split(';') : []);
	view.fg.render();
	return true;
}

async function load(s) {
	const my = view;
	const info = TYPE_INFO[s.type];
	const lq = state.query(s.type, s.left), rq = state.query(s.type, s.right);
	const box = document.getElementById('diff-box');
	let d;
	try {
		const sides = {left_from: s.lfrom, left_until: s.luntil, right_from: s.rfrom, right_until: s.runtil};
		d = normalizeDiff(await api.diff(lq, rq, s.from, s.until, sides));
	} catch (e) {
		if (view !== my) return;
		clear(box).append(e.title ? errorNotice(e, 'the diff') :
			notice('error', 'glass-aggd\'s diff reply was not understood', String(e.message)));
		return;
	}
	if (view !== my) return;
	const card = (label, value, note, cls) => el('div', {class: 'card ' + (cls || '')},
		el('div', {class: 'card-label'}, label), el('div', {class: 'card-value'}, value),
		note ? el('div', {class: 'card-note'}, note) : null);
	const ratio = d.leftTotal ? d.rightTotal / d.leftTotal : null;
	const rangeNote = (st, side) => {
		const r = sideRange(st, side);
		return r.own ? ' · ' + fmtWhen(r.from) + ' → ' + fmtWhen(r.until) : '';
	};
	// a wall-clock diff's headline: how the on-CPU share of each side moved
	const onShare = (side, total) => d.stacks.reduce((a, x) =>
		a + (stackHalf(x.stack) === 'on-CPU' ? x[side] : 0), 0) / (total || 1);
	clear(document.getElementById('diff-summary')).append(
		card('Baseline', fmtValue(d.leftTotal, info.units), lq + rangeNote(s, 'l')),
		card('Comparison', fmtValue(d.rightTotal, info.units), rq + rangeNote(s, 'r')),
		card('Stacks compared', String(d.stacks.length),
			ratio !== null ? 'comparison is ' + fmtPct(ratio, 0) + ' of baseline' : ''),
		...(s.type === 'wall' ? [card('On-CPU share', fmtPct(onShare('left', d.leftTotal)) + ' → ' +
			fmtPct(onShare('right', d.rightTotal)), 'of wall-clock time, baseline → comparison', 'wall-share')] : []));
	if (!d.leftTotal || !d.rightTotal) {
		const missing = !d.leftTotal && !d.rightTotal ? 'either selection' :
			!d.leftTotal ? 'the baseline ' + lq : 'the comparison ' + rq;
		clear(box).append(notice('empty', 'No ' + info.label.toLowerCase() + ' stacks for ' + missing + ' in this range',
			'A diff needs data on both sides (baseline ' + fmtWhen(sideRange(s, 'l').from) + ' → ' + fmtWhen(sideRange(s, 'l').until) +
			', comparison ' + fmtWhen(sideRange(s, 'r').from) + ' → ' + fmtWhen(sideRange(s, 'r').until) + ').',
			el('a', {class: 'btn', href: state.href({from: 'now-24h', until: 'now'})}, 'Last 24 hours')));
		clear(document.getElementById('diff-movers'));
		return;
	}
	clear(box);
	const tree = buildTree(d.stacks, {diff: true});
	view.fg = showFlame(box, tree, s, {units: info.units, diff: true,
		label: 'Differential flame graph, ' + lq + ' to ' + rq});
	// changes that print as 0.0 points are no changes: leave them out, and
	// say so when nothing is left (fleet against fleet, or the same host)
	const mv = movers(d.stacks, d.leftTotal, d.rightTotal).filter((m) => Math.abs(m.delta) >= 0.0005).slice(0, 14);
	if (!mv.length) {
		const l = sideRange(s, 'l'), r = sideRange(s, 'r');
		const same = lq === rq && l.from === r.from && l.until === r.until;
		clear(document.getElementById('diff-movers')).append(same
			? notice('empty', 'The two sides are the same',
				'Baseline and comparison are ' + lq + ' over ' + fmtWhen(l.from) + ' → ' + fmtWhen(l.until) +
				': nothing can differ. Pick a host or label set for one side, or give each side its own range.')
			: notice('empty', 'No frame\'s share changed by 0.1 point or more',
				'The two selections spend their ' + info.label.toLowerCase() + ' time in the same places.'));
		window.glassStatus && window.glassStatus('diff ' + lq + ' → ' + rq);
		return;
	}
	const maxd = Math.max(...mv.map((m) => Math.abs(m.delta)), 1e-9);
	clear(document.getElementById('diff-movers')).append(el('table', {class: 'toplist', 'aria-label': 'Biggest changes'},
		el('thead', {}, el('tr', {}, el('th', {scope: 'col'}, 'Frame'),
			el('th', {scope: 'col', class: 'num'}, 'Baseline'), el('th', {scope: 'col', class: 'num'}, 'Change'))),
		el('tbody', {}, mv.map((m) => el('tr', {},
			el('td', {class: 'fname'}, m.name),
			el('td', {class: 'num'}, fmtPct(m.left / d.leftTotal)),
			el('td', {class: 'num ' + (m.delta > 0 ? 'grew' : 'shrank')},
				(m.delta > 0 ? '+' : '') + (m.delta * 100).toFixed(1) + ' pts',
				el('span', {class: 'dbar ' + (m.delta > 0 ? 'grew' : 'shrank'), 'aria-hidden': 'true',
					style: `width:${(Math.abs(m.delta) / maxd * 48).toFixed(0)}px`})))))));
	window.glassStatus && window.glassStatus('diff ' + lq + ' → ' + rq);
}
