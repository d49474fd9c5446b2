// flamegraph.js — glass-flamegraph's SVG and glass-report's HTML in real
// headless Chromium: click a frame and it zooms (rect x/width change),
// reset zoom restores, search highlights and prints the matched
// percentage, hover fills the details line; the report runs both flame
// graphs inline and fetches nothing.  Called by flamegraph.test with
// DIR holding basic.svg, big.svg and report.html.
'use strict';

const path = require('path');
const {launch} = require('./launch');

const dir = process.argv[2];
let fails = 0;
function pass(n) { console.log(`PASS: ${n}`); }
function fail(n, why) { console.log(`FAIL: ${n}: ${why}`); fails++; }
function check(n, cond, why) { if (cond) pass(n); else fail(n, why); }

// Geometry of the frame whose title starts with NAME, in SVG ROOT (a selector).
async function frame(page, name, root = 'svg') {
	return page.evaluate(([name, root]) => {
		const svg = document.querySelector(root);
		for (const g of svg.querySelectorAll("[id='frames'] > g")) {
			if (g.querySelector('title').textContent.startsWith(name + ' (')) {
				const r = g.querySelector('rect');
				return {x: r.getAttribute('x'), w: r.getAttribute('width'),
					fill: r.getAttribute('fill'), cls: g.getAttribute('class') || '',
					hidden: getComputedStyle(g).display === 'none',
					label: g.querySelector('text').textContent};
			}
		}
		return null;
	}, [name, root]);
}

async function clickFrame(page, name, root = 'svg') {
	const h = await page.evaluateHandle(([name, root]) => {
		const svg = document.querySelector(root);
		for (const g of svg.querySelectorAll("[id='frames'] > g"))
			if (g.querySelector('title').textContent.startsWith(name + ' ('))
				return g.querySelector('rect');
		return null;
	}, [name, root]);
	await h.asElement().click();
}

async function main() {
	const b = await launch();
	const requests = [];
	try {
		const page = await b.context.newPage();
		const errors = [];
		page.on('pageerror', e => errors.push(String(e)));
		page.on('request', r => requests.push(r.url()));

		// ---- standalone SVG ------------------------------------------------
		await page.goto('file://' + path.join(dir, 'basic.svg'));
		await page.waitForFunction(() => document.documentElement.fgState !== undefined);
		pass('svg loads and its script starts');
		const b0 = await frame(page, 'b'), a0 = await frame(page, 'a');
		check('initial geometry', b0 && b0.x === '10.00' && b0.w === '354.00' && a0.w === '472.00',
			JSON.stringify({a0, b0}));
		await clickFrame(page, 'a');
		const a1 = await frame(page, 'a'), b1 = await frame(page, 'b'), c1 = await frame(page, 'c');
		const other = await frame(page, 'other'), main_ = await frame(page, 'main');
		check('click zooms the frame to full width', a1.x === '10.00' && a1.w === '1180.00', JSON.stringify(a1));
		check('children rescaled (b: 354 -> 885 px)', b1.w === '885.00' && c1.x === '895.00' && c1.w === '295.00',
			JSON.stringify({b1, c1}));
		check('frames outside the zoom hidden', other.hidden, JSON.stringify(other));
		check('ancestors shown full width, faded', !main_.hidden && main_.w === '1180.00' && /parent/.test(main_.cls),
			JSON.stringify(main_));
		const unzoomShown = await page.evaluate(() => !document.getElementById('unzoom').classList.contains('hide'));
		check('Reset Zoom appears', unzoomShown, 'still hidden');
		await page.click('#unzoom');
		const b2 = await frame(page, 'b'), o2 = await frame(page, 'other');
		check('Reset Zoom restores the geometry', b2.w === '354.00' && b2.x === '10.00' && !o2.hidden,
			JSON.stringify({b2, o2}));

		// search through the real button and prompt
		page.once('dialog', d => d.accept('^[bc]$'));
		await page.click('#search');
		await page.waitForFunction(() => /Matched/.test(document.getElementById('matched').textContent));
		const m = await page.evaluate(() => document.getElementById('matched').textContent);
		check('search prints the matched percentage (b+c = 40%)', m === 'Matched: 40.0%', m);
		const bs = await frame(page, 'b'), ds = await frame(page, 'd');
		check('search highlights matches only', bs.fill === 'rgb(230,0,230)' && ds.fill !== 'rgb(230,0,230)',
			JSON.stringify({bs, ds}));
		await page.click('#search');	// "Reset Search"
		const br = await frame(page, 'b');
		check('reset search restores colours', br.fill === b0.fill, JSON.stringify(br));
		// nested matches count once: main (60) contains a,b,c,d
		const pct = await page.evaluate(() => document.documentElement.fgSearch('^(main|a|b)$'));
		check('nested matches counted once (main = 60%)', Math.abs(pct - 60) < 0.05, String(pct));

		const pcs = await page.evaluate(() => document.documentElement.fgSearch('^B$'));
		await page.click('#ignorecase');
		const pic = await page.evaluate(() => document.getElementById('matched').textContent);
		check('search is case-sensitive until "ic" is clicked', pcs === 0 && pic === 'Matched: 30.0%', `${pcs} / ${pic}`);
		await page.click('#ignorecase');
		await page.click('#search');	// reset

		await page.hover("[id='frames'] > g:nth-child(3) rect");
		const det = await page.evaluate(() => document.getElementById('details').textContent);
		check('hover shows name, count and percentage', /^Function: \S+ \(\d+ samples, [\d.]+%\)$/.test(det), det);

		// ?s= searches on load
		await page.goto('file://' + path.join(dir, 'basic.svg') + '?s=other');
		await page.waitForFunction(() => /Matched/.test(document.getElementById('matched').textContent));
		const m2 = await page.evaluate(() => document.getElementById('matched').textContent);
		check('?s=REGEX searches on load', m2 === 'Matched: 40.0%', m2);

		// a large graph stays usable: zoom into a deep frame, labels refit
		await page.goto('file://' + path.join(dir, 'big.svg'));
		await page.waitForFunction(() => document.documentElement.fgState !== undefined);
		const t0 = Date.now();
		const res = await page.evaluate(() => {
			const root = document.documentElement, items = root.fgState.items;
			let k = 0;
			for (let i = 0; i < items.length; i++) if (items[i].d === 3 && items[i].w > items[k].w * (items[k].d === 3)) k = i;
			const before = items[k].r.getAttribute('width');
			root.fgZoom(k);
			return {n: items.length, before, after: items[k].r.getAttribute('width'),
				shown: items.filter(it => !it.g.classList.contains('hide')).length};
		});
		check(`big graph (${res.n} frames) zooms a deep frame in ${Date.now() - t0} ms`,
			res.after === '1180.00' && res.before !== res.after && res.shown < res.n, JSON.stringify(res));
		check('no script errors in the SVG', errors.length === 0, errors.join('; '));

		// ---- glass-report ----------------------------------------------------
		requests.length = 0;
		await page.goto('file://' + path.join(dir, 'report.html'));
		await page.waitForFunction(() => Array.from(document.querySelectorAll('svg.flamegraph')).every(s => s.fgState));
		const n = await page.evaluate(() => document.querySelectorAll('svg.flamegraph').length);
		check('report: both flame graphs start inline', n === 2, `${n} graphs`);
		const root = '#offcpu svg.flamegraph';
		const t1 = await frame(page, 'txn_commit', root);
		await clickFrame(page, 'txn_commit', root);
		const t2 = await frame(page, 'txn_commit', root);
		const w2 = await frame(page, 'fs_mark', '#wakeup svg.flamegraph');
		check('report: click zooms in the off-CPU graph only', t1.w !== t2.w && t2.w === '1180.00' && w2 && !w2.hidden,
			JSON.stringify({t1, t2, w2}));
		const pct2 = await page.evaluate(() => document.querySelector('#offcpu svg.flamegraph').fgSearch('_\\[k\\]$'));
		const mt = await page.evaluate(() => document.querySelector("#offcpu svg.flamegraph [id='matched']").textContent);
		check('report: search in a graph prints its match', /^Matched: 90\.9%$/.test(mt) && pct2 > 90, mt);
		const ext = requests.filter(u => !u.startsWith('file:') && !u.startsWith('data:'));
		check('report: fetches nothing', ext.length === 0, ext.join(' '));
		check('no script errors in the report', errors.length === 0, errors.join('; '));
	} catch (e) {
		fail('browser run', e.stack || String(e));
	} finally {
		await b.close();
	}
	process.exit(fails ? 1 : 0);
}
main();
