// flame.js — a small flame graph renderer (icicle layout: root on top).
// Input: merged stacks [{stack: "root;child;leaf", count}], as glass-aggd's
// /merge?format=json returns them (folded order: root first).
// Pure parts (buildTree, findPath, searchTotal, frameColor) are exported so
// the browser tests can check the arithmetic directly.

import {svg, el, clear, fmtValue, fmtPct, hash32} from './util.js';

// Build the call tree.  Each node: {name, value, self, children: Map,
// parent, depth}; value = total of its subtree.  With diff input each node
// also carries `left` (the baseline's total): value is the right side.
export function buildTree(stacks, opts = {}) {
	const root = mk('all', null, 0);
	for (const s of stacks) {
		const v = Number(opts.diff ? s.right : s.count) || 0;
		const l = opts.diff ? Number(s.left) || 0 : 0;
		if (v <= 0 && l <= 0) continue;
		const frames = String(s.stack).split(';').filter((f) => f !== '');
		let n = root;
		n.value += v; n.left += l;
		for (const f of frames) {
			let c = n.children.get(f);
			if (!c) { c = mk(f, n, n.depth + 1); n.children.set(f, c); }
			c.value += v; c.left += l;
			n = c;
		}
		n.self += v; n.selfLeft += l;
	}
	return root;
}

function mk(name, parent, depth) {
	return {name, value: 0, self: 0, left: 0, selfLeft: 0, children: new Map(), parent, depth};
}

export function maxDepth(n) {
	let d = n.depth;
	for (const c of n.children.values()) d = Math.max(d, maxDepth(c));
	return d;
}

// The node at a frame path (array of names below the root), or null.
export function findPath(root, path) {
	let n = root;
	for (const f of path) {
		n = n.children.get(f);
		if (!n) return null;
	}
	return n;
}

export function pathOf(n) {
	const p = [];
	for (; n && n.parent; n = n.parent) p.unshift(n.name);
	return p;
}

// A search box takes a regex; when it does not compile, the literal text.
export function searchRegex(q) {
	if (!q) return null;
	try {
		return new RegExp(q, 'i');
	} catch (e) {
		return new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i');
	}
}

// Total value under frames matching re within `under`, counting a subtree
// once even when matching frames nest (so the share never exceeds 100%).
export function searchTotal(under, re) {
	let total = 0, frames = 0;
	(function walk(n) {
		for (const c of n.children.values()) {
			if (re.test(c.name)) {
				total += c.value;
				frames += countMatches(c, re);
			} else {
				walk(c);
			}
		}
	})(under);
	return {total, frames};
}

function countMatches(n, re) {
	let k = re.test(n.name) ? 1 : 0;
	for (const c of n.children.values()) k += countMatches(c, re);
	return k;
}

// Frame families get their own hue range so a reader tells them apart at a
// glance: kernel orange, glassfs engine blue-green, everything else warm.
const KERNEL = /^(__|entry_|do_|ksys_|sys_|x64_|vfs_|schedule|io_schedule|futex|wait_|wake_up|try_to_wake|blk|submit_bio|ret_from_fork|kthread|worker_thread|finish_task|fuse_dev|fuse_simple|fuse_request|request_wait|page_|filemap|ext4|xfs_|mutex_lock|rwsem|down_|up_|\[k\])|_\[k\]$/;
const ENGINE = /^(glock_|btree_|txn_|commit_|discard_|dev_|alloc_|item_|items_|dir_|inode_|node_|chunk_|meta_|fsops_|gfs_|glassfs|path_|extent_|csum_|space_|ops_|trim_)/;

export function frameFamily(name) {
	if (KERNEL.test(name)) return 'kernel';
	if (ENGINE.test(name)) return 'engine';
	return 'user';
}

// The frame an off-CPU or wakeup stack "blames": the function that made
// the blocking system call (the caller of the libc wrapper just above the
// kernel's syscall entry), else the deepest frame that is not the kernel's.
export function blameFrame(stack) {
	const f = String(stack).split(';');
	const e = f.findIndex((x) => /^(entry_SYSCALL|entry_INT80|do_syscall_64$)/.test(x));
	if (e >= 2) return f[e - 2];
	if (e === 1) return f[0];
	for (let i = f.length - 1; i >= 0; i--)
		if (frameFamily(f[i]) !== 'kernel') return f[i];
	return f[f.length - 1];
}

// The half of a wall-clock profile (glass-profile --wall) node N is in:
// 'on' at or under an "[oncpu]" frame, 'off' at or under "[offcpu]" or
// "[runqueue]" (runnable, waiting for a CPU), else null.
export function wallHalf(n) {
	for (; n && n.parent; n = n.parent) {
		if (n.name === '[oncpu]') return 'on';
		if (n.name === '[offcpu]' || n.name === '[runqueue]') return 'off';
	}
	return null;
}

// A frame's fill.  HALF ('on' | 'off', wallHalf) colours the two halves of
// a wall-clock profile apart as glass-flamegraph does: on-CPU red-yellow
// (kernel frames aqua), off-CPU blue (kernel frames violet -- the orange of
// other graphs' kernel frames would read as the on-CPU half's red-yellow).
export function frameColor(name, half) {
	const h = hash32(name);
	const r = (h % 1000) / 1000, r2 = ((h >>> 10) % 1000) / 1000;
	const k = frameFamily(name) === 'kernel' && name !== '[oncpu]' && name !== '[offcpu]' &&
		name !== '[runqueue]';
	if (half === 'on')
		return k ? `hsl(${180 + 15 * r} ${50 + 20 * r2}% ${55 + 10 * r2}%)`
			: `hsl(${0 + 48 * r} ${72 + 15 * r2}% ${62 + 8 * r2}%)`;
	if (half === 'off')
		return k ? `hsl(${278 + 24 * r} ${55 + 20 * r2}% ${62 + 8 * r2}%)`
			: `hsl(${215 + 30 * r} ${55 + 20 * r2}% ${62 + 8 * r2}%)`;
	switch (frameFamily(name)) {
	case 'kernel': return `hsl(${22 + 16 * r} ${70 + 15 * r2}% ${60 + 8 * r2}%)`;
	case 'engine': return `hsl(${180 + 30 * r} ${45 + 20 * r2}% ${58 + 10 * r2}%)`;
	default: return `hsl(${0 + 48 * r} ${72 + 15 * r2}% ${62 + 8 * r2}%)`;
	}
}

// Change of a frame's share of the total, right minus left.
export function shareDelta(n, root) {
	return n.value / (root.value || 1) - n.left / (root.left || 1);
}

// The largest |shareDelta| below the root: the diff's colour scale.
export function maxDelta(root) {
	let m = 0;
	(function walk(n) {
		for (const c of n.children.values()) {
			m = Math.max(m, Math.abs(shareDelta(c, root)));
			walk(c);
		}
	})(root);
	return m;
}

// Diff colour: red where the right side grew its share, blue where it
// shrank; saturation relative to the largest change (at least 2 points).
export function diffColor(n, root, maxd) {
	const d = shareDelta(n, root);
	const t = Math.min(1, Math.abs(d) / Math.max(maxd || 0, 0.02));
	if (Math.abs(d) < 0.001) return 'hsl(0 0% 86%)';
	return d > 0 ? `hsl(0 ${55 + 30 * t}% ${88 - 30 * t}%)` : `hsl(214 ${55 + 30 * t}% ${88 - 30 * t}%)`;
}

const ROW = 20;
const CHAR = 7.0;	// px per character at the frame font (12px monospace)

// The interactive component: owns an SVG inside `host` and a tooltip.
export class FlameGraph {
	constructor(host, opts = {}) {
		this.host = host;
		this.opts = opts;	// {units, diff, onZoom(path), label}
		this.root = null;
		this.zoom = [];
		this.re = null;
		this.tip = el('div', {class: 'flame-tip', role: 'tooltip', hidden: true});
		this.wrap = el('div', {class: 'flame-wrap'});
		host.append(this.wrap, this.tip);
		this.onResize = () => this.render();
		this.ro = new ResizeObserver(() => {
			if (this.wrap.clientWidth !== this.lastWidth) this.render();
		});
		this.ro.observe(this.wrap);
	}

	destroy() {
		this.ro.disconnect();
	}

	setData(root) { this.root = root; }
	setZoom(path) { this.zoom = path || []; }
	setSearch(q) { this.re = searchRegex(q); }

	// The node zoomed into, falling back to the root when the path is gone
	// (another time range may not contain it).
	zoomNode() {
		if (!this.root) return null;
		return findPath(this.root, this.zoom) || this.root;
	}

	render() {
		const root = this.root;
		clear(this.wrap);
		if (!root) return;
		const W = Math.max(200, this.wrap.clientWidth || 800);
		this.lastWidth = this.wrap.clientWidth;
		const z = this.zoomNode();
		const depth = maxDepth(z) + 1;
		const H = depth * ROW + 4;
		const units = this.opts.units;
		const s = svg('svg', {
			class: 'flame', width: W, height: H, viewBox: `0 0 ${W} ${H}`,
			role: 'img',
			'aria-label': (this.opts.label || 'Flame graph') + ': ' +
				fmtValue(root.value, units) + ' total' +
				(z !== root ? ', zoomed into ' + z.name : ''),
		});
		const scale = W / (z.value || 1);
		const maxd = this.opts.diff ? maxDelta(root) : 0;
		let drawn = 0;
		const g = svg('g', {});
		const frame = (n, x, w, cls) => {
			const y = n.depth * ROW;
			const matched = this.re && n.parent && this.re.test(n.name);
			const fill = this.opts.diff ? diffColor(n, root, maxd) : n.parent ? frameColor(n.name, wallHalf(n)) : 'hsl(220 10% 80%)';
			const c = ['frame', cls, matched ? 'match' : '', this.re && !matched ? 'dim' : '']
				.filter(Boolean).join(' ');
			const gf = svg('g', {class: c, transform: `translate(${x.toFixed(2)},${y})`,
				'data-name': n.name});
			const rect = svg('rect', {width: Math.max(0, w - 0.5).toFixed(2), height: ROW - 1,
				rx: 2, fill});
			gf.append(rect);
			const maxc = Math.floor((w - 8) / CHAR);
			if (maxc >= 3) {
				const t = n.name.length > maxc ? n.name.slice(0, maxc - 1) + '…' : n.name;
				gf.append(svg('text', {x: 4, y: ROW - 6}, t));
			}
			if (w >= 24) {
				gf.setAttribute('tabindex', '0');
				gf.setAttribute('role', 'button');
				gf.setAttribute('aria-label', this.describe(n));
			}
			gf.__node = n;
			g.append(gf);
			drawn++;
		};
		// Ancestors of the zoomed node span the whole width, greyed.
		for (let a = z.parent; a; a = a.parent)
			frame(a, 0, W, 'ancestor');
		const walk = (n, x) => {
			const w = n.value * scale;
			if (w < 0.6) return;
			frame(n, x, w, n === z ? 'zoomed' : '');
			let cx = x;
			// Widest first: the eye finds the big children at the left.
			const kids = [...n.children.values()].sort((a, b) => b.value - a.value);
			for (const c of kids) {
				walk(c, cx);
				cx += c.value * scale;
			}
		};
		walk(z, 0);
		s.append(g);
		this.wrap.append(s);
		this.svg = s;
		this.drawn = drawn;

		const nodeOf = (ev) => {
			const t = ev.target.closest && ev.target.closest('g.frame');
			return t ? t.__node : null;
		};
		s.addEventListener('mousemove', (ev) => {
			const n = nodeOf(ev);
			if (!n) { this.tip.hidden = true; return; }
			this.showTip(n, ev.clientX, ev.clientY);
		});
		s.addEventListener('mouseleave', () => { this.tip.hidden = true; });
		s.addEventListener('click', (ev) => {
			const n = nodeOf(ev);
			if (n) this.zoomTo(n);
		});
		s.addEventListener('keydown', (ev) => {
			const n = nodeOf(ev);
			if (!n) return;
			if (ev.key === 'Enter' || ev.key === ' ') {
				ev.preventDefault();
				this.zoomTo(n);
			}
		});
		s.addEventListener('focusin', (ev) => {
			const n = nodeOf(ev);
			if (!n) return;
			const r = ev.target.getBoundingClientRect();
			this.showTip(n, r.left + 10, r.bottom);
		});
		s.addEventListener('focusout', () => { this.tip.hidden = true; });
	}

	zoomTo(n) {
		const p = n.parent ? pathOf(n) : [];
		if (this.opts.onZoom) this.opts.onZoom(p);
	}

	describe(n) {
		const root = this.root, units = this.opts.units;
		let s = n.name + ': ' + fmtValue(n.value, units) + ', ' + fmtPct(n.value / (root.value || 1)) + ' of total';
		if (this.opts.diff) {
			const d = n.value / (root.value || 1) - n.left / (root.left || 1);
			s += ', ' + (d >= 0 ? '+' : '') + (d * 100).toFixed(2) + ' points vs baseline';
		}
		return s;
	}

	showTip(n, x, y) {
		const root = this.root, units = this.opts.units;
		const z = this.zoomNode();
		clear(this.tip);
		this.tip.append(
			el('div', {class: 'tip-name'}, n.name),
			el('div', {}, 'total ', el('b', {}, fmtValue(n.value, units)), ' · ',
				fmtPct(n.value / (root.value || 1)), ' of all',
				z !== root ? ' · ' + fmtPct(n.value / (z.value || 1)) + ' of zoom' : ''),
			el('div', {}, 'self ', fmtValue(n.self, units)));
		if (this.opts.diff) {
			const d = n.value / (root.value || 1) - n.left / (root.left || 1);
			this.tip.append(el('div', {class: d > 0 ? 'grew' : 'shrank'},
				'baseline ', fmtValue(n.left, units), ' (', fmtPct(n.left / (root.left || 1)),
				') → ', fmtPct(n.value / (root.value || 1)), ': ',
				(d >= 0 ? '+' : '') + (d * 100).toFixed(2), ' pts'));
		}
		this.tip.hidden = false;
		const tw = this.tip.offsetWidth, th = this.tip.offsetHeight;
		const px = Math.min(x + 14, window.innerWidth - tw - 8);
		const py = y + 18 + th > window.innerHeight ? y - th - 10 : y + 18;
		this.tip.style.left = px + 'px';
		this.tip.style.top = py + 'px';
	}
}
