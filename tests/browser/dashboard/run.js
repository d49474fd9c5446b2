// run.js — browser tests of the dashboards (dashboards/web) in Debian's
// headless Chromium against a real glass-aggd loaded with the recorded
// fleet (fleet.js: four hosts, stor-03 the outlier).  Prints one line per
// case (PASS:/FAIL:/SKIP:), saves a screenshot of each view to
// $OUT/test-logs/screenshots/ (beside the logs CI keeps; SCREENSHOTS=dir
// overrides), exits 0, 1 (a case failed) or 77 (cannot run at all).
//
//   SEED=n        replay: the seed orders the ingest (any order must give
//                 the same views) and picks which host row the keyboard
//                 test opens
//   DASH_URL=url  debug against an already running glass-aggd that holds
//                 the recorded fleet (nothing is started or ingested)
'use strict';

const fs = require('fs');
const path = require('path');
const fleet = require('./fleet');
const aggd = require('./aggd');
const {launch} = require('../launch');	// shared with the flame-graph tests (H1)

const ROOT = path.resolve(__dirname, '..', '..', '..');
let OUT = process.env.OUT || 'build';
if (!path.isAbsolute(OUT)) OUT = path.join(ROOT, OUT);
const ART = process.env.SCREENSHOTS || path.join(OUT, 'test-logs', 'screenshots');
const SEED = Number(process.env.SEED) || (Math.random() * 2 ** 31) >>> 0;
console.log('seed: ' + SEED + ' (SEED=' + SEED + ' replays)');

let fails = 0;
let ingestNow = 0;	// the `now` the recorded fleet was anchored to
const results = [];
function pass(name) { console.log('PASS: ' + name); results.push([name, 'pass']); }
function fail(name, why) { fails++; console.log('FAIL: ' + name + ': ' + why); results.push([name, 'fail']); }
function skip(name, why) { console.log('SKIP: ' + name + ': ' + why); }

// Where in this file an assertion failed: "run.js:123".
function where(err) {
	const line = String(err && err.stack || '').split('\n')
		.find((l) => l.includes('/dashboard/run.js:') && !/at (ok|tcase|where) /.test(l));
	const m = line && /(run\.js:\d+)/.exec(line);
	return m ? m[1] : 'run.js';
}

class Check extends Error {}
function ok(cond, msg) { if (!cond) throw new Check(msg); }

async function tcase(name, f) {
	try {
		await f();
		pass(name);
	} catch (e) {
		fail(name, where(e) + ': ' + (e instanceof Check ? e.message : String(e && e.stack || e).split('\n').slice(0, 3).join(' | ')));
	}
}

function shuffle(a, rnd) {
	for (let i = a.length - 1; i > 0; i--) {
		const j = Math.floor(rnd() * (i + 1));
		[a[i], a[j]] = [a[j], a[i]];
	}
	return a;
}

async function main() {
	fs.mkdirSync(ART, {recursive: true});
	let server = null, base = process.env.DASH_URL;
	let browser = null;
	const cleanup = async () => {
		if (browser) await browser.close();
		if (server) await server.cleanup();
	};
	process.on('SIGTERM', () => { cleanup().finally(() => process.exit(1)); });
	try {
		if (!base) {
			try {
				server = await aggd.start();
			} catch (e) {
				if (e.notBuilt) {
					console.log('SKIPPED: glass-aggd not built: ' + e.message);
					console.error('SKIPPED (facility absent): glass-aggd not built — ' + e.message);
					return 77;
				}
				fail('glass-aggd starts', e.message);
				return 1;
			}
			base = server.url;
			const rnd = fleet.mulberry32(SEED);
			ingestNow = Math.floor(Date.now() / 1000);
			const wins = shuffle(fleet.windows(ingestNow), rnd);
			const t0 = Date.now();
			try {
				await server.ingest(wins);
			} catch (e) {
				fail('ingest recorded fleet', e.message + '\n' + server.log());
				return 1;
			}
			pass('ingest recorded fleet (' + wins.length + ' windows, ' + (Date.now() - t0) + ' ms)');
		}
		try {
			browser = await launch({viewport: {width: 1440, height: 900}});
		} catch (e) {
			console.log('SKIPPED: chromium cannot start: ' + e.message.split('\n')[0]);
			console.error('SKIPPED (facility absent): headless chromium cannot start — ' + e.message);
			return 77;
		}
		await runCases(browser.context, base, server);
	} finally {
		await cleanup();
	}
	return fails ? 1 : 0;
}

async function runCases(ctx, base, server) {
	ctx.setDefaultTimeout(10000);
	const page = await ctx.newPage();
	const errors = [];
	page.on('pageerror', (e) => errors.push('pageerror: ' + e.message));
	page.on('console', (m) => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
	// Only the same origin: the dashboards must never fetch elsewhere.
	const foreign = [];
	await ctx.route('**/*', (route) => {
		const u = route.request().url();
		if (!u.startsWith(base) && !u.startsWith('data:')) { foreign.push(u); return route.abort(); }
		return route.continue();
	});
	const shot = async (name, p = page) => {
		await p.waitForTimeout(150);
		await p.screenshot({path: path.join(ART, 'dashboard-' + name + '.png'), fullPage: true});
	};
	const go = async (q, p = page) => {
		await p.goto(base + '/' + q, {waitUntil: 'load'});
	};
	const rows = () => page.$$eval('#hosts-table tbody tr.host-row', (rs) => rs.map((r) => ({
		host: r.dataset.host, outlier: r.classList.contains('outlier'),
		badge: !!r.querySelector('.badge.outlier')})));

	// ---- the JS flame renderer's arithmetic, in the page's own modules ----
	await go('?view=overview');
	await tcase('flame.js tree arithmetic', async () => {
		const r = await page.evaluate(async () => {
			const f = await import('/js/flame.js');
			const t = f.buildTree([{stack: 'a;b;c', count: 5}, {stack: 'a;b', count: 3}, {stack: 'a;d;b', count: 2},
				{stack: 'x', count: 0}]);
			const ab = f.findPath(t, ['a', 'b']);
			const re = f.searchRegex('b');
			return {total: t.value, a: t.children.get('a').value, abSelf: ab.self, abVal: ab.value,
				depth: f.maxDepth(t), kids: t.children.size, match: f.searchTotal(t, re),
				bad: f.searchRegex('glock_(').test('glock_('), blame: f.blameFrame('app;glock_wait;syscall;entry_SYSCALL_64;do_syscall_64;schedule'),
				diff: f.buildTree([{stack: 'a;b', left: 4, right: 1}], {diff: true}).children.get('a').left};
		});
		ok(r.total === 10 && r.a === 10, 'totals ' + JSON.stringify(r));
		ok(r.abSelf === 3 && r.abVal === 8, 'a;b self/total ' + r.abSelf + '/' + r.abVal);
		ok(r.depth === 3 && r.kids === 1, 'depth/kids ' + r.depth + '/' + r.kids + ' (zero-count stack must be dropped)');
		ok(r.match.total === 10 && r.match.frames === 2, 'nested matches counted once: ' + JSON.stringify(r.match));
		ok(r.bad === true, 'an invalid regex searches literally');
		ok(r.blame === 'glock_wait', 'blame frame ' + r.blame);
		ok(r.diff === 4, 'diff left values kept');
	});

	// ---- overview ----
	await tcase('overview lists the hosts', async () => {
		await go('?view=overview');
		await page.waitForSelector('#hosts-table tbody tr.host-row', {timeout: 10000});
		const rs = await rows();
		const names = rs.map((r) => r.host).sort();
		ok(JSON.stringify(names) === JSON.stringify(fleet.HOSTS.map((h) => h.host).sort()),
			'hosts listed: ' + names.join(','));
		const cells = await page.$eval('#hosts-table tbody tr[data-host="stor-01"]', (r) => r.innerText);
		ok(/\d/.test(cells) && /\/s/.test(cells), 'host row shows figures: ' + cells.replace(/\s+/g, ' '));
	});
	await tcase('overview highlights the outlier', async () => {
		const rs = await rows();
		const out = rs.filter((r) => r.outlier).map((r) => r.host);
		ok(out.length === 1 && out[0] === 'stor-03', 'outlier rows: [' + out.join(',') + '] (want stor-03)');
		ok(rs.find((r) => r.host === 'stor-03').badge, 'stor-03 has an outlier badge');
		const callout = await page.textContent('#ov-callout');
		ok(/stor-03/.test(callout) && /×/.test(callout), 'callout names stor-03: ' + callout);
		const card = await page.textContent('#ov-cards');
		ok(/1 outlier/.test(card), 'hosts card counts one outlier: ' + card);
	});
	await shot('overview');
	await tcase('overview table sorts by a column', async () => {
		await page.click('button.sort[data-sort="host"]');
		await page.waitForFunction(() => /sort=host/.test(location.search));
		let names = (await rows()).map((r) => r.host);
		ok(names.join() === [...names].sort().join(), 'ascending by host: ' + names.join());
		ok(await page.$eval('button.sort[data-sort="host"]', (b) => b.closest('th').getAttribute('aria-sort')) === 'ascending',
			'aria-sort=ascending on the Host column');
		await page.click('button.sort[data-sort="host"]');
		await page.waitForFunction(() => /dir=desc/.test(location.search) || !/dir=asc/.test(location.search));
		names = (await rows()).map((r) => r.host);
		ok(names.join() === [...names].sort().reverse().join(), 'descending by host: ' + names.join());
		await page.click('button.sort[data-sort="lock"]');
		await page.waitForFunction(() => /sort=lock/.test(location.search));
		names = (await rows()).map((r) => r.host);
		ok(names[0] === 'stor-03', 'largest B-tree lock share first: ' + names.join());
	});
	await tcase('overview table keyboard navigation', async () => {
		await go('?view=overview&sort=host&dir=asc');
		await page.waitForSelector('#hosts-table tbody tr.host-row');
		// Tab into the table: the first row is the one tab stop.
		const tabStops = await page.$$eval('#hosts-table tbody tr.host-row', (rs) => rs.map((r) => r.tabIndex));
		ok(tabStops.filter((t) => t === 0).length === 1, 'one row in the tab order: ' + tabStops);
		await page.focus('#hosts-table tbody tr.host-row[tabindex="0"]');
		const focused = () => page.evaluate(() => document.activeElement && document.activeElement.dataset.host);
		ok(await focused() === 'stor-01', 'first row focused: ' + await focused());
		await page.keyboard.press('ArrowDown');
		ok(await focused() === 'stor-02', 'ArrowDown moves to stor-02: ' + await focused());
		await page.keyboard.press('End');
		ok(await focused() === 'stor-04', 'End moves to the last row: ' + await focused());
		await page.keyboard.press('ArrowUp');
		ok(await focused() === 'stor-03', 'ArrowUp moves to stor-03: ' + await focused());
		await page.keyboard.press('Home');
		ok(await focused() === 'stor-01', 'Home moves to the first row');
		const k = SEED % fleet.HOSTS.length;
		for (let i = 0; i < k; i++) await page.keyboard.press('ArrowDown');
		const want = fleet.HOSTS.map((h) => h.host).sort()[k];
		await page.keyboard.press('Enter');
		await page.waitForFunction(() => /view=flame/.test(location.search));
		const sel = await page.evaluate(() => new URLSearchParams(location.search).get('sel'));
		ok(sel === 'host="' + want + '"', 'Enter opened the flame graph of ' + want + ': sel=' + sel);
	});
	await tcase('accessibility: every control has a name, the page has landmarks', async () => {
		for (const v of ['overview', 'flame', 'diff', 'timeseries', 'locks']) {
			await go('?view=' + v);
			await page.waitForTimeout(600);
			const bad = await page.evaluate(() => {
				const name = (e) => (e.getAttribute('aria-label') || '').trim() ||
					(e.id && document.querySelector(`label[for="${e.id}"]`) ? 'label' : '') ||
					(e.closest('label') ? 'label' : '') || (e.textContent || '').trim() || (e.getAttribute('title') || '');
				return [...document.querySelectorAll('button, input, select, a[href], [role="button"], [tabindex="0"]')]
					.filter((e) => e.offsetParent !== null || e.closest('svg'))
					.filter((e) => !name(e)).map((e) => e.outerHTML.slice(0, 80));
			});
			ok(bad.length === 0, v + ': unnamed controls: ' + bad.slice(0, 3).join(' ; '));
			const lm = await page.evaluate(() => ['header', 'nav', 'main'].every((s) => document.querySelector(s)) &&
				!!document.querySelector('h1'));
			ok(lm, v + ': header/nav/main/h1 present');
			const cur = await page.$eval('.tabs a[aria-current="page"]', (a) => a.dataset.view);
			ok(cur === v, v + ': current tab marked (aria-current): ' + cur);
		}
	});

	await tcase('accessibility: tables named, headers scoped, one tab stop per interactive table, charts described', async () => {
		for (const v of ['overview', 'locks', 'timeseries', 'diff&right=host%3D%22stor-03%22', 'flame']) {
			await go('?view=' + v);
			await page.waitForFunction(() => !document.querySelector('.notice-loading'), null, {timeout: 10000});
			await page.waitForTimeout(300);
			const r = await page.evaluate(() => {
				const named = (e) => !!((e.getAttribute('aria-label') || '').trim() || e.querySelector('caption') ||
					e.getAttribute('aria-labelledby'));
				const tables = [...document.querySelectorAll('main table')];
				return {
					n: tables.length,
					unnamed: tables.filter((t) => !named(t)).map((t) => t.id || t.className),
					unscoped: tables.flatMap((t) => [...t.querySelectorAll('thead th')].filter((th) => th.getAttribute('scope') !== 'col'))
						.map((th) => th.textContent.trim()).slice(0, 3),
					stops: ['#hosts-table tr.host-row', '#locks-table tr.lock-row', '#lockinst-table tr.inst-row']
						.map((q) => [q, document.querySelectorAll(q).length, [...document.querySelectorAll(q)].filter((x) => x.tabIndex === 0).length,
							[...document.querySelectorAll(q)].filter((x) => !(x.getAttribute('aria-label') || '').trim()).length])
						.filter((x) => x[1] > 0),
					charts: [...document.querySelectorAll('svg.ts, svg.flame')].filter((g) => g.getAttribute('role') !== 'img' && !g.getAttribute('aria-label'))
						.length,
				};
			});
			ok(r.unnamed.length === 0, v + ': tables without a name: ' + r.unnamed.join(','));
			ok(r.unscoped.length === 0, v + ': column headers without scope=col: ' + r.unscoped.join(','));
			for (const [q, n, stops, noname] of r.stops) {
				ok(stops === 1, v + ': ' + q + ': ' + stops + ' of ' + n + ' rows in the tab order (want 1)');
				ok(noname === 0, v + ': ' + q + ': ' + noname + ' rows without an accessible name');
			}
			ok(r.charts === 0, v + ': ' + r.charts + ' charts without a description');
			if (v === 'locks') ok(r.stops.length === 2, 'locks: both lock tables are keyboard-navigable');
		}
	});
	await tcase('overview: the B-tree lock share comes from the lock detail', async () => {
		const hosts = JSON.parse(await server_get(base, '/api/v1/hosts'));
		const by = Object.fromEntries(hosts.map((h) => [h.host, h]));
		ok(hosts.every((h) => h.btree_lock_share > 0 && h.btree_lock_share <= h.lock_share),
			'B-tree share within the all-locks share: ' + hosts.map((h) => h.host + ' ' + h.btree_lock_share.toFixed(3) + '/' + h.lock_share.toFixed(3)).join(' '));
		ok(by['stor-03'].btree_lock_share > 2 * by['stor-01'].btree_lock_share, 'stor-03 spends far more under B-tree locks');
		await go('?view=overview&sort=lock');
		await page.waitForSelector('#hosts-table tbody tr.host-row');
		const cell = await page.$eval('#hosts-table tbody tr[data-host="stor-03"] td:nth-of-type(2)', (td) => ({t: td.innerText, title: td.title}));
		// the column is the demo's finding from the stacks: inside filesystem operations
		ok(hosts.every((h) => h.ops_btree_lock_share > 0 && h.ops_btree_lock_share < 1), 'a share per host: ' +
			hosts.map((h) => h.host + ' ' + h.ops_btree_lock_share).join(' '));
		ok(by['stor-03'].ops_btree_lock_share > by['stor-01'].ops_btree_lock_share, 'stor-03 above stor-01 inside operations too');
		const pct = (by['stor-03'].ops_btree_lock_share * 100).toFixed(1) + '%';
		ok(cell.t.includes(pct) && /inside filesystem operations/.test(cell.title), 'stor-03 shows ' + pct + ': ' + JSON.stringify(cell));
	});

	// ---- flame graph ----
	await tcase('clicking a host opens its flame graph', async () => {
		await go('?view=overview');
		await page.waitForSelector('#hosts-table tbody tr[data-host="stor-03"]');
		await page.click('#hosts-table tbody tr[data-host="stor-03"] td.num');
		await page.waitForFunction(() => /view=flame/.test(location.search));
		await page.waitForSelector('svg.flame g.frame', {timeout: 10000});
		const sel = await page.evaluate(() => new URLSearchParams(location.search).get('sel'));
		ok(sel === 'host="stor-03"', 'selection in the URL: ' + sel);
		const h1 = await page.textContent('h1');
		ok(/Off-CPU/.test(h1) && /stor-03/.test(h1), 'heading names the view and host: ' + h1);
		const n = await page.$$eval('svg.flame g.frame', (g) => g.length);
		ok(n > 20, 'flame graph drew ' + n + ' frames');
		const names = await page.$$eval('svg.flame g.frame', (g) => g.map((x) => x.dataset.name));
		ok(names.includes('btree_search') && names.includes('glock_wait'), 'engine frames drawn');
		const back = await page.evaluate(() => history.length);
		ok(back >= 2, 'navigation made a history entry');
	});
	await shot('flame');
	await tcase('search highlights frames', async () => {
		await page.fill('#flame-search', 'glock_');
		await page.waitForFunction(() => new URLSearchParams(location.search).get('search') === 'glock_');
		await page.waitForSelector('svg.flame g.frame.match');
		const m = await page.$$eval('svg.flame g.frame.match', (g) => g.map((x) => x.dataset.name));
		ok(m.length >= 4 && m.every((x) => /glock_/i.test(x)), 'matched frames: ' + m.join(','));
		const others = await page.$$eval('svg.flame g.frame:not(.match):not(.ancestor)', (g) => g.filter((x) => x.dataset.name && /glock_/i.test(x.dataset.name)).length);
		ok(others === 0, others + ' glock_ frames not highlighted');
		const fill = await page.$eval('svg.flame g.frame.match rect', (r) => getComputedStyle(r).fill);
		ok(/rgb\(180, 95, 240\)/.test(fill), 'highlight colour ' + fill);
		const info = await page.textContent('#flame-match');
		const pct = /([\d.]+)% of total/.exec(info);
		ok(pct && Number(pct[1]) > 15 && Number(pct[1]) < 60, 'match share shown: ' + info);
		await page.fill('#flame-search', 'no_such_frame_zz');
		await page.waitForFunction(() => /no frame matches/.test(document.getElementById('flame-match').textContent));
		ok(await page.$$eval('svg.flame g.frame.match', (g) => g.length) === 0, 'no highlight for a miss');
		await page.fill('#flame-search', 'glock_');
		await page.waitForSelector('svg.flame g.frame.match');
	});
	await shot('flame-search');
	await tcase('click zooms into a frame; Escape zooms out', async () => {
		await page.click('svg.flame g.frame[data-name="btree_search"]');
		await page.waitForFunction(() => /btree_search/.test(new URLSearchParams(location.search).get('zoom') || ''));
		const zoom = await page.evaluate(() => new URLSearchParams(location.search).get('zoom'));
		ok(zoom.split(';').pop() === 'btree_search', 'zoom path ' + zoom);
		const w = await page.$eval('svg.flame g.frame.zoomed rect', (r) => Number(r.getAttribute('width')));
		const sw = await page.$eval('svg.flame', (s) => Number(s.getAttribute('width')));
		ok(Math.abs(w - sw) < 2, 'zoomed frame spans the width: ' + w + '/' + sw);
		const crumbs = await page.textContent('#flame-crumbs');
		ok(/btree_search/.test(crumbs), 'breadcrumbs show the path: ' + crumbs);
		const anc = await page.$$eval('svg.flame g.frame.ancestor', (g) => g.length);
		ok(anc === zoom.split(';').length, 'ancestors drawn greyed: ' + anc);
		await shot('flame-zoom');
		await page.click('h1');
		await page.keyboard.press('Escape');
		await page.waitForFunction((z) => (new URLSearchParams(location.search).get('zoom') || '') !== z, zoom);
		const z2 = await page.evaluate(() => new URLSearchParams(location.search).get('zoom') || '');
		ok(z2 === zoom.split(';').slice(0, -1).join(';'), 'Escape zoomed out one level: ' + z2);
		await page.focus('svg.flame g.frame[data-name="btree_search"][tabindex="0"]');
		await page.keyboard.press('Enter');
		await page.waitForFunction(() => /btree_search$/.test(new URLSearchParams(location.search).get('zoom') || ''));
	});
	await tcase('URL round-trips the view', async () => {
		const url = page.url();
		const before = await viewState(page);
		const p2 = await ctx.newPage();
		await p2.goto(url);
		await p2.waitForSelector('svg.flame g.frame.match');
		const after = await viewState(p2);
		ok(JSON.stringify(before) === JSON.stringify(after), 'same view from the URL:\n  ' +
			JSON.stringify(before) + '\n  ' + JSON.stringify(after));
		await p2.close();
		// Back restores the previous state (before the keyboard zoom).
		await page.goBack();
		await page.waitForFunction(() => !/btree_search$/.test(new URLSearchParams(location.search).get('zoom') || ''));
		await page.goForward();
		await page.waitForFunction(() => /btree_search$/.test(new URLSearchParams(location.search).get('zoom') || ''));
		await page.waitForSelector('svg.flame g.frame.zoomed[data-name="btree_search"]');
		// The time range is shared: changing it keeps the view's other keys.
		await page.selectOption('#range-preset', 'now-6h');
		await page.waitForFunction(() => /from=now-6h/.test(location.search));
		const q = await page.evaluate(() => Object.fromEntries(new URLSearchParams(location.search)));
		ok(q.view === 'flame' && q.sel === 'host="stor-03"' && q.search === 'glock_', 'range change kept the view: ' + JSON.stringify(q));
	});
	await tcase('the Overview tab from a host\'s flame graph still ranks the whole fleet', async () => {
		await go('?view=flame&sel=host%3D%22stor-02%22');
		await page.waitForSelector('svg.flame g.frame');
		await page.click('.tabs a[data-view="overview"]');
		await page.waitForSelector('#hosts-table tbody tr.host-row');
		const rs = await rows();
		ok(rs.length === 4, 'all hosts listed: ' + rs.length);
		ok(rs.filter((r) => r.outlier).map((r) => r.host).join() === 'stor-03', 'stor-03 still the outlier');
	});
	await tcase('profile type switch: lock-wait and wakeup stacks', async () => {
		await go('?view=flame&type=lockwait&sel=host%3D%22stor-03%22');
		await page.waitForSelector('svg.flame g.frame');
		let names = await page.$$eval('svg.flame g.frame', (g) => g.map((x) => x.dataset.name));
		ok(names.includes('lock:root'), 'lock-wait stacks end in lock classes: ' + names.filter((n) => /^lock:/.test(n)));
		ok(await page.$eval('#flame-type [aria-checked="true"]', (b) => b.dataset.type) === 'lockwait', 'radio state');
		await page.focus('#flame-type [aria-checked="true"]');
		await page.keyboard.press('ArrowLeft');
		await page.waitForFunction(() => /type=wakeup/.test(location.search));
		await page.waitForSelector('svg.flame g.frame[data-name="try_to_wake_up"]');
		names = await page.$$eval('svg.flame g.frame', (g) => g.map((x) => x.dataset.name));
		ok(names.includes('glock_wake'), 'wakeup stacks drawn');
		await shot('flame-lockwait-switch');
	});

	await tcase('server-rendered SVG flame graph embeds', async () => {
		await go('?view=flame&sel=host%3D%22stor-03%22&renderer=svg');
		await page.waitForSelector('object.server-svg');
		await page.waitForFunction(() => {
			const o = document.querySelector('object.server-svg');
			return o && o.contentDocument && o.contentDocument.querySelectorAll('rect').length > 10;
		}, null, {timeout: 10000});
		const r = await page.$eval('object.server-svg', (o) => ({
			n: o.contentDocument.querySelectorAll('rect').length,
			text: o.contentDocument.documentElement.textContent,
			h: o.getBoundingClientRect().height,
		}));
		ok(/glock_wait/.test(r.text) && /btree_search/.test(r.text), 'server SVG names the engine frames');
		ok(r.h > 150, 'object sized to the drawing: ' + r.h);
		ok(await page.$eval('#flame-search', (i) => i.disabled), 'browser search disabled in server mode');
		await shot('flame-server-svg');
	});

	// ---- diff ----
	await tcase('diff view renders (fleet vs the outlier)', async () => {
		await go('?view=diff&right=host%3D%22stor-03%22');
		await page.waitForSelector('#diff-box svg.flame g.frame', {timeout: 10000});
		const n = await page.$$eval('#diff-box svg.flame g.frame', (g) => g.length);
		ok(n > 20, 'diff flame frames: ' + n);
		const fills = await page.$$eval('#diff-box svg.flame g.frame', (g) => g.map((x) => [x.dataset.name, x.querySelector('rect').getAttribute('fill')]));
		const colour = Object.fromEntries(fills);
		ok(/^hsl\(0 /.test(colour.glock_wait), 'glock_wait grew (red): ' + colour.glock_wait);
		ok(/^hsl\(214 /.test(colour.fuse_session_receive_buf), 'idle reads shrank (blue): ' + colour.fuse_session_receive_buf);
		const top = await page.$$eval('#diff-movers tbody tr', (r) => r.map((x) => x.innerText.replace(/\s+/g, ' ')));
		ok(top.length > 3 && top.slice(0, 3).some((t) => /glock_wait|dev_discard|fuse_session_receive_buf/.test(t)), 'movers: ' + top.slice(0, 3).join(' | '));
		const cards = await page.textContent('#diff-summary');
		ok(/stor-03/.test(cards), 'summary names both sides: ' + cards);
	});
	await shot('diff');
	await tcase('diff swap sides round-trips through the URL', async () => {
		await page.click('#diff-swap');
		await page.waitForFunction(() => new URLSearchParams(location.search).get('left') === 'host="stor-03"');
		await page.waitForSelector('#diff-box svg.flame g.frame');
		const c = await page.$eval('#diff-box svg.flame g.frame[data-name="glock_wait"] rect', (r) => r.getAttribute('fill'));
		ok(/^hsl\(214 /.test(c), 'after swapping, glock_wait shrank (blue): ' + c);
	});

	await tcase('diff of the fleet against itself says the sides are the same', async () => {
		await go('?view=diff');
		await page.waitForSelector('#diff-movers .notice-empty', {timeout: 10000});
		const t = await page.$eval('#diff-movers', (m) => m.innerText);
		ok(/two sides are the same/.test(t) && !/0\.0 pts/.test(t), 'movers: ' + t.replace(/\s+/g, ' '));
		await shot('diff-same');
	});
	if (ingestNow) {
		await tcase('diff before vs after: one host, two time ranges', async () => {
			// fleet.js: stor-03's trouble starts with its 7th window.
			const end = Math.floor(ingestNow / 10) * 10 - 10, first = end - fleet.WINDOWS * 10;
			const cut = first + 60;
			const sel = encodeURIComponent('host="stor-03"');
			await go(`?view=diff&left=${sel}&right=${sel}&lfrom=${first}&luntil=${cut}&rfrom=${cut}&runtil=${end}`);
			await page.waitForSelector('#diff-box svg.flame g.frame[data-name="glock_wait"]');
			const c = await page.$eval('#diff-box svg.flame g.frame[data-name="glock_wait"] rect', (r) => r.getAttribute('fill'));
			ok(/^hsl\(0 /.test(c), 'glock_wait grew after the change (red): ' + c);
			const cards = await page.textContent('#diff-summary');
			ok(/→/.test(cards), 'cards show each side\'s own range: ' + cards.replace(/\s+/g, ' '));
			ok(await page.$eval('#diff-lrange-from', (i) => i.value) === String(first), 'range editor shows the baseline range');
			await shot('diff-before-after');
		});
	} else {
		skip('diff before vs after', 'DASH_URL given: the recorded fleet\'s timestamps are unknown');
	}

	// ---- time series ----
	await tcase('time series panels plot every metric', async () => {
		await go('?view=timeseries');
		await page.waitForFunction(() => document.querySelectorAll('.ts-panel .notice-loading').length === 0, null, {timeout: 10000});
		const panels = await page.$$eval('.ts-panel', (ps) => ps.map((p) => ({id: p.id,
			lines: p.querySelectorAll('svg.ts path.line').length, err: (p.querySelector('.notice') || {}).innerText || ''})));
		for (const p of panels)
			ok(p.lines > 0, p.id + ' has no lines: ' + p.err.replace(/\s+/g, ' '));
		const commit = panels.find((p) => p.id === 'ts-commit_p99_ns');
		ok(commit && commit.lines === 4, 'commit p99 has one line per host: ' + (commit && commit.lines));
		const lab = await page.$eval('#ts-commit_p99_ns svg.ts', (s) => s.getAttribute('aria-label'));
		ok(/stor-03/.test(lab), 'the panel\'s label names the worst series: ' + lab);
	});
	await tcase('time series: every panel has the same x-range, and no tick label twice', async () => {
		const ax = await page.$$eval('.ts-panel svg.ts', (gs) => gs.map((g) => ({id: g.closest('.ts-panel').id,
			t0: Number(g.dataset.t0), t1: Number(g.dataset.t1), labels: [...g.querySelectorAll('text.xlab')].map((t) => t.textContent)})));
		ok(ax.length >= 5, 'panels drawn: ' + ax.length);
		const t0s = ax.map((a) => a.t0), t1s = ax.map((a) => a.t1);
		ok(Math.max(...t0s) - Math.min(...t0s) < 2 && Math.max(...t1s) - Math.min(...t1s) < 2,
			'one x-range: ' + ax.map((a) => a.id + ' ' + a.t0.toFixed(0) + '-' + a.t1.toFixed(0)).join(', '));
		for (const a of ax)
			ok(a.labels.length >= 2 && new Set(a.labels).size === a.labels.length, a.id + ' tick labels: ' + a.labels.join(' '));
		// a two-minute range (where HH:MM repeated "02:51" six times): seconds shown, each once
		const tt = await page.evaluate(async () => {
			const m = await import('/js/timeseries.js');
			return [m.timeTicks(1000000000, 1000000120, 6), m.timeTicks(1000000000, 1000003600, 6)].map((x) => x.map((k) => k.label));
		});
		ok(tt[0].length >= 3 && new Set(tt[0]).size === tt[0].length && /:\d\d:\d\d$/.test(tt[0][0]), 'two minutes: ' + tt[0].join(' '));
		ok(tt[1].length >= 3 && new Set(tt[1]).size === tt[1].length && /^\d\d:\d\d$/.test(tt[1][0]), 'an hour: ' + tt[1].join(' '));
	});
	await tcase('time series: hover crosshair on every panel, drag narrows the shared range', async () => {
		const box = await page.$eval('#ts-commit_p99_ns svg.ts rect.hit', (r) => { const b = r.getBoundingClientRect(); return {x: b.x, y: b.y, w: b.width, h: b.height}; });
		await page.mouse.move(box.x + box.w * 0.6, box.y + box.h / 2);
		const xs = await page.$$eval('svg.ts line.cross', (ls) => ls.map((l) => Number(l.getAttribute('x1'))));
		ok(xs.length >= 5 && xs.every((x) => x > 0), 'crosshair on all panels: ' + xs);
		await shot('timeseries');
		await page.mouse.move(box.x + box.w * 0.3, box.y + box.h / 2);
		await page.mouse.down();
		await page.mouse.move(box.x + box.w * 0.7, box.y + box.h / 2, {steps: 4});
		await page.mouse.up();
		await page.waitForFunction(() => /from=\d+/.test(location.search));
		const q = await page.evaluate(() => Object.fromEntries(new URLSearchParams(location.search)));
		ok(Number(q.until) > Number(q.from) && Number(q.until) - Number(q.from) < 3600, 'absolute range in URL: ' + JSON.stringify(q));
		await page.waitForFunction(() => document.querySelectorAll('.ts-panel svg.ts').length >= 1);
		ok(await page.$eval('#range-preset', (s) => s.value) === 'custom', 'header shows a custom range');
	});

	// ---- locks ----
	await tcase('lock table: classes by B-tree level with their waiters\' stacks', async () => {
		await go('?view=locks');
		await page.waitForSelector('#locks-table tbody tr.lock-row', {timeout: 10000});
		const rowsL = await page.$$eval('#locks-table tbody tr.lock-row', (t) => t.map((x) => ({lock: x.dataset.lock,
			cls: x.querySelector('th').innerText.replace(/[▸▾\s]/g, ''), level: x.querySelectorAll('td')[0].innerText})));
		ok(rowsL[0].lock === 'root@2' && rowsL[0].cls === 'root' && rowsL[0].level === '2', 'root (level 2) most contended: ' + JSON.stringify(rowsL[0]));
		ok(rowsL.some((r) => r.lock === 'group@0' && /leaf/.test(r.level)) && rowsL.some((r) => r.lock === 'alloc@-1' && r.level === '—'),
			'levels shown (leaf, not a node lock): ' + rowsL.map((r) => r.lock).join(','));
		const top = await page.$eval('#locks-table tr.lock-row[data-lock="root@2"]', (r) => r.innerText);
		ok(/stor-03\s+\d+%/.test(top), 'top hosts of the root lock name stor-03 first: ' + top.replace(/\s+/g, ' '));
		// keyboard: one tab stop, arrows move, Enter expands
		const stops = await page.$$eval('#locks-table tr.lock-row', (r) => r.filter((x) => x.tabIndex === 0).length);
		ok(stops === 1, 'one class row in the tab order: ' + stops);
		await page.focus('#locks-table tr.lock-row[tabindex="0"]');
		await page.keyboard.press('ArrowDown');
		ok(await page.evaluate(() => document.activeElement.dataset.lock) === 'node@1', 'ArrowDown moves to node@1');
		await page.keyboard.press('Home');
		await page.keyboard.press('Enter');
		await page.waitForSelector('#locks-table tr.detail ol.stacks li');
		ok(/lock=root%402|lock=root@2/.test(page.url()), 'expanded class kept in the URL: ' + page.url());
		ok(await page.$eval('#locks-table tr.lock-row[data-lock="root@2"] button.expand', (b) => b.getAttribute('aria-expanded')) === 'true', 'aria-expanded');
		ok(await page.evaluate(() => document.activeElement && document.activeElement.dataset.lock) === 'root@2', 'focus stays on the row after expanding');
		const st = await page.$$eval('#locks-table tr.detail ol.stacks li', (l) => l.map((x) => x.innerText));
		ok(st.length === 3 && st.every((x) => /btree_search/.test(x) && /glock_lock/.test(x)), 'the root lock\'s three waiter stacks: ' + st.length);
	});
	await shot('locks');
	await tcase('lock class -> flame graph of exactly its waiters', async () => {
		const want = JSON.parse((await server_get(base, '/api/v1/lockstacks?class=root&level=2&format=json')));
		await page.click('#lock-flame');
		await page.waitForFunction(() => /view=flame/.test(location.search) && /type=lockwait/.test(location.search));
		await page.waitForSelector('svg.flame g.frame');
		const names = await page.$$eval('svg.flame g.frame', (g) => g.map((x) => x.dataset.name));
		ok(names.includes('btree_search') && names.includes('glock_lock_read'), 'root waiters drawn');
		ok(!names.includes('space_alloc_extent') && !names.includes('glock_lock_group'), 'other classes\' waiters left out');
		const h1 = await page.textContent('h1');
		ok(/Lock wait/.test(h1) && /waiters of root · level 2/.test(h1), 'heading names the lock: ' + h1);
		ok(want.total > 0 && want.nstacks === 3, 'API: three root stacks, total ' + want.total);
		const status = await page.textContent('#status');
		ok(status.startsWith('3 stacks'), 'the view drew the API\'s three stacks: ' + status);
		await shot('flame-lock-waiters');
		// The picker lists the lock classes and switches between them.
		const opts = await page.$$eval('#flame-lock-pick option', (o) => o.map((x) => x.value));
		ok(opts[0] === '' && opts[1] === 'root@2' && opts.includes('group@0') && opts.includes('alloc@-1'), 'lock picker: ' + opts.join(','));
		await page.selectOption('#flame-lock-pick', 'group@0');
		await page.waitForFunction(() => new URLSearchParams(location.search).get('lock') === 'group@0');
		await page.waitForSelector('svg.flame g.frame[data-name="glock_lock_group"]');
		ok(!(await page.$('svg.flame g.frame[data-name="glock_lock_read"]')), 'group waiters only');
		await page.selectOption('#flame-lock-pick', '');
		await page.waitForFunction(() => !new URLSearchParams(location.search).get('lock'));
		await page.waitForSelector('svg.flame g.frame[data-name="lock:root"]');
		// the profile-type switch leaves the lock filter behind
		await page.click('#flame-type [data-type="offcpu"]');
		await page.waitForFunction(() => !/type=/.test(location.search));
		await page.waitForSelector('svg.flame g.frame[data-name="fuse_session_receive_buf"]');
		ok(!(await page.$('#flame-lock')), 'off-CPU graph is not filtered by the lock');
	});
	await tcase('lock instances: keyboard Enter opens the host\'s waiters of that lock', async () => {
		await go('?view=locks');
		await page.waitForSelector('#lockinst-table tbody tr.inst-row');
		const first = await page.$eval('#lockinst-table tbody tr.inst-row', (r) => ({host: r.dataset.host, lock: r.dataset.lock,
			addr: r.dataset.addr, text: r.innerText}));
		ok(first.host === 'stor-03' && first.lock === 'root@2' && /^0x[0-9a-f]+$/.test(first.addr),
			'most contended instance: stor-03\'s root lock: ' + JSON.stringify(first));
		ok(/\b5\b/.test(first.text), 'tree id shown: ' + first.text.replace(/\s+/g, ' '));
		await page.focus('#lockinst-table tr.inst-row[tabindex="0"]');
		await page.keyboard.press('End');
		const last = await page.evaluate(() => document.activeElement.dataset.addr);
		const n = await page.$$eval('#lockinst-table tr.inst-row', (r) => r.length);
		ok(n >= 5 && last === await page.$eval('#lockinst-table tr.inst-row:last-child', (r) => r.dataset.addr), 'End: last of ' + n + ' rows');
		await page.keyboard.press('Home');
		await page.keyboard.press('Enter');
		await page.waitForFunction(() => /view=flame/.test(location.search));
		const q = await page.evaluate(() => Object.fromEntries(new URLSearchParams(location.search)));
		ok(q.type === 'lockwait' && q.lock === 'root@2' && q.sel === 'host="stor-03"', 'flame of stor-03\'s root waiters: ' + JSON.stringify(q));
		await page.waitForSelector('svg.flame g.frame[data-name="btree_search"]');
		// The Locks tab keeps the selection: one host's locks only.
		await page.click('.tabs a[data-view="locks"]');
		await page.waitForSelector('#lockinst-table tbody tr.inst-row');
		const hs = await page.$$eval('#lockinst-table tbody tr.inst-row', (r) => [...new Set(r.map((x) => x.dataset.host))]);
		ok(hs.join() === 'stor-03', 'the lock table of {host="stor-03"} lists only its locks: ' + hs.join());
	});
	await tcase('time series: lock wait by B-tree level', async () => {
		await go('?view=timeseries');
		await page.waitForSelector('#ts-lock_wait_level svg.ts path.line', {timeout: 10000});
		const legend = await page.$$eval('#ts-lock_wait_level .legend li', (l) => l.map((x) => x.innerText.trim()));
		ok(legend.join() === 'level 0 (leaf),level 1,level 2', 'one line per level, non-node locks left out: ' + legend.join());
		const cls = await page.$$eval('#ts-lock_wait_ns .legend li', (l) => l.map((x) => x.innerText.trim()));
		ok(cls.length >= 6 && cls.some((x) => /root/.test(x)), 'lock wait by class: ' + cls.join());
		const lab = await page.$eval('#ts-lock_wait_level svg.ts', (s) => s.getAttribute('aria-label'));
		ok(/level 2/.test(lab), 'worst level named: ' + lab);
		const nt = await page.evaluate(async () => {
			const m = await import('/js/timeseries.js');
			return [m.niceTicks(200e9, 4, 'ns'), m.niceTicks(7e6, 4, 'ns'), m.niceTicks(200, 4)];
		});
		ok(JSON.stringify(nt) === JSON.stringify([[0, 60e9, 120e9, 180e9, 240e9], [0, 2e6, 4e6, 6e6, 8e6], [0, 50, 100, 150, 200]]),
			'time axes step in whole minutes/ms, counts in 1-2-5: ' + JSON.stringify(nt));
		await page.evaluate(() => window.scrollTo(0, 0));
		await page.screenshot({path: path.join(ART, 'dashboard-timeseries-locks.png'), fullPage: true});
	});

	if (server) {
		await tcase('overview sparkline: a host with four 5-s windows draws a line', async () => {
			// the demo's agent: --interval 5, four windows in the last minute
			const now = Math.floor(Date.now() / 1000), wins = [];
			for (let w = 0; w < 4; w++) {
				const st = now - 25 + w * 5;
				wins.push({window_id: 'spark-' + st, host: 'demo-5s', start_ns: st + '000000000', end_ns: (st + 5) + '000000000',
					labels: {demo: 'fsmark'}, profiles: [{type: 'offcpu', units: 'ns',
						folded: 'glassfs;fuse_worker;fsops_create;btree_search;glock_lock;glock_wait ' + (1e9 + w * 1e8) + '\n'}]});
			}
			await server.ingest(wins);
			await go('?view=overview');
			await page.waitForSelector('#hosts-table tbody tr[data-host="demo-5s"]');
			const cell = await page.$eval('#hosts-table tbody tr[data-host="demo-5s"] td.trend', (td) => ({svg: !!td.querySelector('svg.spark'), t: td.innerText}));
			ok(cell.svg, 'sparkline drawn, not "' + cell.t + '"');
		});
	}

	// ---- empty and error states: never a blank page ----
	await tcase('empty range says what is missing', async () => {
		for (const v of ['overview', 'flame', 'diff', 'timeseries', 'locks']) {
			await go('?view=' + v + '&from=1000000000&until=1000000600');
			await page.waitForSelector('.notice-empty', {timeout: 10000});
			const t = await page.$eval('.notice-empty', (n) => n.innerText);
			ok(/^No /m.test(t) && /range|1000000000/.test(t), v + ': empty state text: ' + t.replace(/\s+/g, ' '));
			if (v === 'overview') await shot('empty');
		}
	});
	await tcase('bad query is reported, not blank', async () => {
		await go('?view=flame&sel=host%3D%22unterminated');
		await page.waitForSelector('#flame-box .notice', {timeout: 10000});
		const t = await page.$eval('#flame-box .notice', (n) => n.innerText);
		ok(t.trim().length > 10, 'notice: ' + t);
	});
	await tcase('store down (a 503 injected on /hosts): the page says the store is down', async () => {
		// Fault injection on one endpoint: the rest is the real service.
		const p3 = await ctx.newPage();
		await p3.route('**/api/v1/hosts?**', (route) => route.fulfill({status: 503,
			contentType: 'application/json', body: '{"error":"store: database disk image is malformed","status":503}'}));
		await go('?view=overview', p3);
		await p3.waitForSelector('#ov-table .notice-error');
		const t = await p3.$eval('#ov-table .notice-error', (n) => n.innerText);
		ok(/store is down/i.test(t) && /malformed/.test(t) && /503/.test(t), 'error text: ' + t.replace(/\s+/g, ' '));
		ok(await p3.$eval('#ov-table .notice-error', (n) => n.getAttribute('role')) === 'alert', 'announced as an alert');
		await shot('store-down', p3);
		await p3.close();
	});
	if (server) {
		await tcase('flame view: the type switch shows wall-clock, its two halves coloured apart', async () => {
			// One wall window (what glass-agent --wall-cmd ships): "main" is in
			// both halves, so only the half tells its colours apart.
			const t = ingestNow - 120;
			await server.ingest([{window_id: 'stor-01-wall', host: 'stor-01', start_ns: t + '000000000',
				end_ns: (t + 10) + '000000000', labels: {kernel: '6.18.0-glass', ...fleet.HOSTS[0].labels},
				profiles: [{type: 'wall', units: 'ns', folded:
					'glassfs;[oncpu];main;btree_search 3000000000\n' +
					'glassfs;[offcpu];main;nanosleep;schedule_[k] 7000000000\n'}]}]);
			await go('?view=flame');
			await page.waitForSelector('#flame-type [data-type="wall"]');
			ok(/Wall-clock/.test(await page.textContent('#flame-type [data-type="wall"]')), 'switch labelled Wall-clock');
			await page.click('#flame-type [data-type="wall"]');
			await page.waitForFunction(() => new URLSearchParams(location.search).get('type') === 'wall');
			await page.waitForSelector('svg.flame g.frame[data-name="[offcpu]"]');
			const f = await page.$$eval('svg.flame g.frame', (gs) => gs.map((g) => {
				const path = [];
				for (let n = g.__node; n && n.parent; n = n.parent) path.unshift(n.name);
				return {path: path.join(';'), fill: g.querySelector('rect').getAttribute('fill')};
			}));
			const hue = (p) => {
				const x = f.find((y) => y.path === p);
				ok(x, 'frame ' + p + ' drawn: ' + f.map((y) => y.path).join(' | '));
				return Number(/hsl\(([\d.]+)/.exec(x.fill)[1]);
			};
			const warm = (h) => h < 60 || h >= 330, blue = (h) => h >= 210 && h <= 270;
			const onMain = hue('glassfs;[oncpu];main'), offMain = hue('glassfs;[offcpu];main');
			const onLeaf = hue('glassfs;[oncpu];main;btree_search'), offLeaf = hue('glassfs;[offcpu];main;nanosleep');
			ok(warm(onMain) && warm(onLeaf), 'on-CPU half warm (hues main ' + onMain + ', btree_search ' + onLeaf + ')');
			ok(blue(offMain) && blue(offLeaf), 'off-CPU half blue (hues main ' + offMain + ', nanosleep ' + offLeaf + ')');
			ok(warm(hue('glassfs;[oncpu]')) && blue(hue('glassfs;[offcpu]')), 'the [oncpu]/[offcpu] frames take their half\'s colour');
			// the off-CPU half's kernel frames violet: neither its blue nor the
			// on-CPU half's red-yellow (where orange, other graphs' kernel, falls)
			const offK = hue('glassfs;[offcpu];main;nanosleep;schedule_[k]');
			ok(offK >= 275 && offK <= 305, 'off-CPU kernel frame violet (hue ' + offK + ')');
			const h1 = await page.textContent('h1');
			ok(/Wall-clock/.test(h1), 'heading names the type: ' + h1);
			const status = await page.textContent('#status');
			ok(status.startsWith('2 stacks'), 'the view drew the two stacks: ' + status);
			await shot('flame-wall');
		});
		// Two hosts shipping wall-clock windows (glass-agent --wall-cmd): on
		// wall-b, foo spends two thirds of its time blocked instead of on
		// CPU -- the same share of wall-clock time, moved between the halves.
		const wallWins = [];
		for (const [host, folded] of [
			['wall-a', 'glassfs;[oncpu];main;foo 3000000000\nglassfs;[offcpu];main;nanosleep;schedule_[k] 7000000000\n'],
			['wall-b', 'glassfs;[oncpu];main;foo 1000000000\nglassfs;[offcpu];main;foo;futex_wait_[k] 2000000000\n' +
				'glassfs;[offcpu];main;nanosleep;schedule_[k] 7000000000\n']])
			for (const t of [ingestNow - 110, ingestNow - 90])
				wallWins.push({window_id: host + '-' + t, host, start_ns: t + '000000000', end_ns: (t + 10) + '000000000',
					labels: {demo: 'wall'}, profiles: [{type: 'wall', units: 'ns', folded}]});
		await server.ingest(wallWins);
		await tcase('diff view, wall-clock: a frame that moved from on-CPU to off-CPU is a mover, the on-CPU shares are shown', async () => {
			await go('?view=diff&type=wall&left=' + encodeURIComponent('host="wall-a"') + '&right=' + encodeURIComponent('host="wall-b"'));
			await page.waitForSelector('#diff-box svg.flame g.frame[data-name="[offcpu]"]');
			await page.waitForSelector('#diff-movers tbody tr');
			const mv = await page.$$eval('#diff-movers tbody tr', (r) => r.map((x) => [...x.cells].map((c) => c.innerText.trim())));
			const row = (n) => mv.find((r) => r[0] === n);
			ok(row('foo (on-CPU)') && /^-20\.0 pts/.test(row('foo (on-CPU)')[2]), 'foo on-CPU -20 points: ' + JSON.stringify(mv));
			ok(row('foo (off-CPU)') && /^\+20\.0 pts/.test(row('foo (off-CPU)')[2]), 'foo off-CPU +20 points: ' + JSON.stringify(mv));
			ok(!row('nanosleep (off-CPU)'), 'the unchanged sleep is not a mover: ' + JSON.stringify(mv));
			const card = await page.$eval('#diff-summary .wall-share', (c) => c.innerText.replace(/\s+/g, ' '));
			ok(/On-CPU share/i.test(card) && /30(\.0)? ?% → 10(\.0)? ?%/.test(card), 'on-CPU share card: ' + card);
			await shot('diff-wall');
		});
		await tcase('overview and time series, wall-clock: the trend and the profile panel are wall_ns', async () => {
			await go('?view=timeseries&type=wall');
			await page.waitForSelector('#ts-wall_ns .legend li');
			const legend = await page.$$eval('#ts-wall_ns .legend li', (l) => l.map((x) => x.innerText.trim()));
			ok(legend.includes('wall-a') && legend.includes('wall-b'), 'wall-clock panel per host: ' + legend.join());
			ok(/Wall-clock time/.test(await page.textContent('#ts-h-wall_ns')), 'panel titled Wall-clock time');
			ok(!(await page.$('#ts-offcpu_ns')), 'the off-CPU panel gives way to it');
			await shot('timeseries-wall');
			await go('?view=overview&type=wall');
			await page.waitForSelector('#hosts-table tbody tr[data-host="wall-a"]');
			const head = await page.$eval('#hosts-table thead', (h) => h.innerText);
			ok(/Wall-clock over range/.test(head), 'trend column names wall-clock: ' + head.replace(/\s+/g, ' '));
			const spark = await page.$eval('#hosts-table tbody tr[data-host="wall-a"] td.trend', (td) => ({svg: !!td.querySelector('svg.spark'), t: td.innerText}));
			ok(spark.svg, 'wall-a\'s wall-clock trend drawn, not "' + spark.t + '"');
			const none = await page.$eval('#hosts-table tbody tr[data-host="stor-02"] td.trend', (td) => !!td.querySelector('svg.spark'));
			ok(!none, 'stor-02 shipped no wall-clock windows: no trend');
		});
		await tcase('store down / service gone: an error that says so', async () => {
			await go('?view=overview');
			await page.waitForSelector('#hosts-table');
			await server.stop();
			await page.click('#refresh');
			await page.waitForSelector('.notice-error', {timeout: 10000});
			const t = await page.$eval('.notice-error', (n) => n.innerText);
			ok(/unreachable|store|down/i.test(t), 'error text: ' + t.replace(/\s+/g, ' '));
			await shot('unreachable');
		});
	} else {
		skip('store down / service gone', 'DASH_URL given: not stopping someone else\'s glass-aggd');
	}
	await tcase('no script errors, no foreign fetches', async () => {
		const real = errors.filter((e) => !/Failed to load resource|ERR_CONNECTION_REFUSED|net::ERR_/.test(e));
		ok(real.length === 0, real.slice(0, 5).join(' ; '));
		ok(foreign.length === 0, 'fetched outside the origin: ' + foreign.slice(0, 3).join(', '));
	});
	console.log('screenshots: ' + ART + '/dashboard-*.png');
}

// GET a path of the service under test (Node side, not the page).
function server_get(base, p) {
	return new Promise((resolve, reject) => {
		require('http').get(base + p, (res) => {
			let b = '';
			res.on('data', (c) => { b += c; });
			res.on('end', () => resolve(b));
		}).on('error', reject);
	});
}

async function viewState(p) {
	return p.evaluate(() => ({
		h1: document.querySelector('h1').innerText,
		search: document.getElementById('flame-search').value,
		crumbs: document.getElementById('flame-crumbs').innerText,
		matches: document.querySelectorAll('svg.flame g.frame.match').length,
		zoomed: (document.querySelector('svg.flame g.frame.zoomed') || {dataset: {}}).dataset.name,
		type: document.querySelector('#flame-type [aria-checked="true"]').dataset.type,
		range: document.getElementById('range-preset').value,
	}));
}

main().then((rc) => process.exit(rc), (e) => {
	console.log('FAIL: harness: ' + where(e) + ': ' + String(e && e.stack || e));
	process.exit(1);
});
