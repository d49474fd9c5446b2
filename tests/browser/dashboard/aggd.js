// aggd.js — run a real glass-aggd for a test: a random free port on
// 127.0.0.1, a temporary SQLite file and token file, the dashboards as its
// UI, and the recorded fleet (fleet.js) ingested through POST
// /api/v1/ingest.  stop() kills it and removes the temporary files.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const net = require('net');
const http = require('http');
const {spawn} = require('child_process');
const fleet = require('./fleet');

const ROOT = path.resolve(__dirname, '..', '..', '..');

function aggdPath() {
	let out = process.env.OUT || 'build';
	if (!path.isAbsolute(out)) out = path.join(ROOT, out);
	return process.env.GLASS_AGGD || path.join(out, 'bin', 'glass-aggd');
}

function freePort() {
	return new Promise((resolve, reject) => {
		const s = net.createServer();
		s.unref();
		s.on('error', reject);
		s.listen(0, '127.0.0.1', () => {
			const p = s.address().port;
			s.close(() => resolve(p));
		});
	});
}

function request(port, method, p, body, headers = {}) {
	return new Promise((resolve, reject) => {
		const req = http.request({host: '127.0.0.1', port, method, path: p, headers,
			timeout: 10000}, (res) => {
			const chunks = [];
			res.on('data', (c) => chunks.push(c));
			res.on('end', () => resolve({status: res.statusCode, headers: res.headers,
				body: Buffer.concat(chunks).toString('utf8')}));
		});
		req.on('timeout', () => req.destroy(new Error('timeout ' + method + ' ' + p)));
		req.on('error', reject);
		if (body) req.write(body);
		req.end();
	});
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Start glass-aggd; resolves once /healthz answers 200.
async function start(opts = {}) {
	const bin = aggdPath();
	if (!fs.existsSync(bin)) {
		const e = new Error('glass-aggd not built (' + bin + ' missing)');
		e.notBuilt = true;
		throw e;
	}
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'glassfs-dash-'));
	const token = 'dash-test-' + Math.random().toString(36).slice(2);
	fs.writeFileSync(path.join(dir, 'tokens'), token + '\n', {mode: 0o600});
	const ui = opts.ui || path.join(ROOT, 'dashboards', 'web');
	let lastErr = null;
	// Port 0: glass-aggd binds any free loopback port and writes it to
	// --port-file once listening (no race with other tests for a port).
	for (let attempt = 0; attempt < 2; attempt++) {
		const portFile = path.join(dir, 'port');
		fs.rmSync(portFile, {force: true});
		const args = ['--listen', '127.0.0.1:0', '--port-file', portFile,
			'--store', opts.store || 'sqlite:' + path.join(dir, 'agg.db'),
			'--tokens', path.join(dir, 'tokens'), '--ui', ui];
		const log = fs.openSync(path.join(dir, 'aggd.log'), 'a');
		const child = spawn(bin, args, {stdio: ['ignore', log, log]});
		fs.closeSync(log);
		let exited = null;
		child.on('exit', (code, sig) => { exited = {code, sig}; });
		const t0 = Date.now();
		let port = 0;
		while (Date.now() - t0 < 10000 && !exited) {
			if (!port) {
				try { port = Number(fs.readFileSync(portFile, 'utf8').trim()) || 0; } catch (e) { /* not yet */ }
			}
			if (port) {
				try {
					const r = await request(port, 'GET', '/healthz');
					if (r.status === 200)
						return makeHandle({child, port, dir, token, bin, args});
				} catch (e) { lastErr = e; }
			}
			await sleep(50);
		}
		if (!exited) child.kill('SIGKILL');
		lastErr = new Error('glass-aggd did not become healthy' + (port ? ' on port ' + port : '') +
			(exited ? ' (exited ' + JSON.stringify(exited) + ')' : '') + '; log:\n' +
			tail(path.join(dir, 'aggd.log')));
	}
	fs.rmSync(dir, {recursive: true, force: true});
	throw lastErr;
}

function tail(f) {
	try { return fs.readFileSync(f, 'utf8').split('\n').slice(-15).join('\n'); } catch (e) { return ''; }
}

function makeHandle({child, port, dir, token, bin, args}) {
	// Whatever happens to the test (an uncaught error, process.exit), the
	// daemon and its files do not outlive it.
	const onExit = () => {
		try { child.kill('SIGKILL'); } catch (e) { /* gone */ }
		try { fs.rmSync(dir, {recursive: true, force: true}); } catch (e) { /* gone */ }
	};
	process.on('exit', onExit);
	const h = {
		port, dir, token, bin, args, child,
		url: 'http://127.0.0.1:' + port,
		request: (m, p, b, hd) => request(port, m, p, b, hd),
		log: () => tail(path.join(dir, 'aggd.log')),
		// Ingest windows (in the given order) through the agent endpoint.
		async ingest(windows) {
			for (const w of windows) {
				const r = await request(port, 'POST', '/api/v1/ingest', fleet.toWire(w), {
					'Content-Type': 'application/json', Authorization: 'Bearer ' + token});
				if (r.status < 200 || r.status >= 300)
					throw new Error('ingest of ' + w.window_id + ' refused: HTTP ' + r.status + ' ' + r.body.slice(0, 300));
			}
		},
		async stop() {
			if (child.exitCode === null && child.signalCode === null) {
				const gone = new Promise((r) => child.once('exit', r));
				child.kill('SIGTERM');
				const t = setTimeout(() => child.kill('SIGKILL'), 3000);
				await gone;
				clearTimeout(t);
			}
		},
		async cleanup() {
			await h.stop();
			fs.rmSync(dir, {recursive: true, force: true});
			process.removeListener('exit', onExit);
		},
	};
	return h;
}

module.exports = {start, aggdPath, freePort, request};
