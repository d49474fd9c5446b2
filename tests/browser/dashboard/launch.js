// launch.js — start Debian's headless Chromium under playwright-core with a
// fresh profile, no network side traffic, and the sandbox off (tests run
// as root).  Returns {context, close()} — close() also removes the profile.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
	'--disable-background-networking', '--disable-component-update', '--disable-sync',
	'--disable-dev-shm-usage', '--font-render-hinting=none'];

function playwright() {
	// node_modules lives next to tests/browser/package.json (tools/deps.sh).
	return require(path.join(__dirname, '..', 'node_modules', 'playwright-core'));
}

async function launch(opts = {}) {
	if (!fs.existsSync(CHROMIUM))
		throw new Error(CHROMIUM + ' not found (tools/deps.apt lists chromium; run make deps)');
	const {chromium} = playwright();
	const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'glassfs-chromium-'));
	let context;
	try {
		context = await chromium.launchPersistentContext(profile, {
			executablePath: CHROMIUM,
			headless: true,
			args: ARGS,
			viewport: opts.viewport || {width: 1440, height: 900},
			deviceScaleFactor: 1,
			timeout: 30000,
		});
	} catch (e) {
		fs.rmSync(profile, {recursive: true, force: true});
		throw e;
	}
	return {
		context,
		async close() {
			try { await context.close(); } catch (e) { /* already gone */ }
			fs.rmSync(profile, {recursive: true, force: true});
		},
	};
}

module.exports = {launch, CHROMIUM, ARGS};
