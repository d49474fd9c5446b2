// launch.js — the shared way browser tests start Chromium: Debian's
// /usr/bin/chromium (CHROMIUM=path overrides) driven by playwright-core,
// headless, sandbox off (tests run as root), no background network, a
// fresh --user-data-dir removed on close.
//   const {launch} = require('./launch');
//   const b = await launch(); const page = await b.context.newPage(); ...
//   await b.close();
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
	'--no-first-run', '--disable-background-networking',
	'--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];

async function launch(opts = {}) {
	if (!fs.existsSync(CHROMIUM))
		throw new Error(`${CHROMIUM} not found (tools/deps.apt lists chromium: make deps)`);
	const {chromium} = require(path.join(__dirname, 'node_modules', 'playwright-core'));
	const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'glassfs-chromium-'));
	let context;
	try {
		// A persistent context is how playwright takes a user-data-dir.
		context = await chromium.launchPersistentContext(profile, {
			executablePath: CHROMIUM,
			headless: true,
			args: ARGS,
			viewport: opts.viewport || {width: 1300, height: 900},
			timeout: 30000,
		});
	} catch (e) {
		fs.rmSync(profile, {recursive: true, force: true});
		throw e;
	}
	return {
		context,
		async close() {
			try { await context.close(); } catch (e) { /* already closed */ }
			fs.rmSync(profile, {recursive: true, force: true});
		},
	};
}

module.exports = {launch, CHROMIUM, ARGS};
