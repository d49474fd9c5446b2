#!/bin/sh
# Install the Debian packages glassfs needs.  Usage: tools/deps.sh [demo|test]
#   demo  what `make` and `make demo` need (tools/deps-demo.apt)
#   test  that and what the tests and benchmarks need (tools/deps.apt), and
#         the npm packages of the browser tests (the default)
# Idempotent and quick when everything is present: only missing packages
# are passed to apt-get.  Set GLASSFS_NO_DEPS=1 to skip (offline builds).
set -e
[ "${GLASSFS_NO_DEPS:-0}" = 1 ] && exit 0
cd "$(dirname "$0")/.."
set=${1:-test}
case $set in
demo) lists=tools/deps-demo.apt ;;
test) lists="tools/deps-demo.apt tools/deps.apt" ;;
*) echo "usage: tools/deps.sh [demo|test]" >&2; exit 2 ;;
esac
want=$(cat $lists | sed -e 's/#.*//' | tr -s ' \n' '\n' | sed '/^$/d')
missing=
for p in $want; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing packages:$missing (run as root or install them)" >&2
	exit 1
fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q --no-install-recommends $missing >/tmp/glassfs-apt.log 2>&1 || {
	apt-get update -q >/dev/null 2>&1 || true
	apt-get install -y -q --no-install-recommends $missing >/tmp/glassfs-apt.log 2>&1 || {
		echo "deps: apt-get failed, see /tmp/glassfs-apt.log" >&2
		tail -20 /tmp/glassfs-apt.log >&2
		exit 1
	}
}
fi

[ "$set" = demo ] && exit 0
# Browser tests: playwright-core (drives Debian's /usr/bin/chromium; it never
# downloads a browser of its own).
if [ -f tests/browser/package.json ] && [ ! -d tests/browser/node_modules/playwright-core ]; then
	echo "deps: npm install (tests/browser)"
	(cd tests/browser && npm install --no-audit --no-fund --silent) || {
		echo "deps: npm install failed in tests/browser" >&2; exit 1; }
fi

# Aggregator tests: real third-party clients (the Pyroscope Node SDK,
# pprof-format) in tests/aggregator/sdk (tests/aggregator/hostile.test).
if [ -f tests/aggregator/sdk/package.json ] && [ ! -d tests/aggregator/sdk/node_modules/@pyroscope/nodejs ]; then
	echo "deps: npm install (tests/aggregator/sdk)"
	(cd tests/aggregator/sdk && npm install --no-audit --no-fund --silent) || {
		echo "deps: npm install failed in tests/aggregator/sdk" >&2; exit 1; }
fi
