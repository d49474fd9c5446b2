// push.js URL TOKEN APP SECONDS — the real Pyroscope Node SDK
// (@pyroscope/nodejs, which profiles with @datadog/pprof) profiles this
// process burning CPU and pushes its wall and heap profiles to glass-aggd
// as it does to a Pyroscope server: one name, no type suffix.
'use strict';
const Pyroscope = require('@pyroscope/nodejs');
const [url, token, app, secs] = process.argv.slice(2);

Pyroscope.init({ serverAddress: url, authToken: token, appName: app, flushIntervalMs: 1000,
  wall: { samplingDurationMs: 1000 }, tags: { env: 'test' } });
Pyroscope.start();
function burnBetaHeavy(ms) { const t = Date.now(); let x = 0; while (Date.now() - t < ms) x += Math.sqrt(x + 1); return x; }
const keep = [];
const end = Date.now() + (+secs || 3) * 1000;
(function loop() {
  burnBetaHeavy(50);
  keep.push(new Array(1000).fill(keep.length));
  if (keep.length > 200) keep.splice(0, 100);
  if (Date.now() < end) setTimeout(loop, 1);
  else Pyroscope.stop().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
})();
