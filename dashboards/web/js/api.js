// api.js — the only module that talks to glass-aggd (same origin, /api/v1).
// Every failure becomes an ApiError whose title says what is missing:
// the service unreachable, its store down, or the request refused.

export class ApiError extends Error {
	constructor(kind, title, detail, status) {
		super(title + (detail ? ': ' + detail : ''));
		this.kind = kind;	// 'network' | 'store' | 'request' | 'server' | 'format'
		this.title = title;
		this.detail = detail;
		this.status = status;
	}
}

const BASE = '/api/v1/';

function qs(params) {
	const p = new URLSearchParams();
	for (const [k, v] of Object.entries(params))
		if (v !== undefined && v !== null && v !== '') p.set(k, v);
	return p.toString();
}

// Pull a message out of an error body: JSON {"error": "..."} or plain text.
async function bodyMessage(res) {
	let text = '';
	try { text = await res.text(); } catch (e) { return ''; }
	try {
		const j = JSON.parse(text);
		if (j && typeof j === 'object')
			return j.error || j.message || j.detail || text;
	} catch (e) { /* plain text */ }
	return text.trim().slice(0, 400);
}

let inflight = new Map();

export async function get(path, params, as = 'json') {
	const url = BASE + path + (params ? '?' + qs(params) : '');
	const key = as + ' ' + url;
	if (inflight.has(key)) return inflight.get(key);
	const pr = fetchOne(url, as).finally(() => inflight.delete(key));
	inflight.set(key, pr);
	return pr;
}

async function fetchOne(url, as) {
	let res;
	try {
		res = await fetch(url, {headers: {Accept: as === 'json' ? 'application/json' : '*/*'}});
	} catch (e) {
		throw new ApiError('network', 'glass-aggd is unreachable',
			'No answer from ' + location.origin + ' (' + e.message +
			'). Is glass-aggd running?', 0);
	}
	if (!res.ok) {
		const msg = await bodyMessage(res);
		if (res.status === 503 || /store|database|sqlite|clickhouse/i.test(msg) && res.status >= 500)
			throw new ApiError('store', 'The aggregator\'s store is down',
				(msg || res.statusText) + ' (HTTP ' + res.status + ')', res.status);
		if (res.status >= 500)
			throw new ApiError('server', 'glass-aggd failed to answer',
				(msg || res.statusText) + ' (HTTP ' + res.status + ')', res.status);
		if (res.status === 404 && !msg)
			throw new ApiError('request', 'This glass-aggd does not serve ' + url.split('?')[0],
				'HTTP 404: an older aggregator, or a path typo.', 404);
		throw new ApiError('request', 'glass-aggd refused the query',
			(msg || res.statusText) + ' (HTTP ' + res.status + ')', res.status);
	}
	if (as === 'text') return res.text();
	const text = await res.text();
	try {
		return JSON.parse(text);
	} catch (e) {
		throw new ApiError('format', 'glass-aggd sent a reply that is not JSON',
			url.split('?')[0] + ': ' + text.slice(0, 120), res.status);
	}
}

// The endpoints, one function each (see aggregator/API.md).
export const hosts = (from, until) => get('hosts', {from, until});
export const labels = () => get('labels');
// The heaviest MERGE_LIMIT stacks are plenty for a picture (the rest are
// narrower than a pixel); the total still counts every stack.
export const MERGE_LIMIT = 20000;
export const merge = (query, from, until, limit = MERGE_LIMIT) =>
	get('merge', {query, from, until, format: 'json', limit});
export const mergeSvgUrl = (query, from, until, width) =>
	BASE + 'merge?' + qs({query, from, until, format: 'svg', width});
export const top = (query, from, until, by = 'self', n = 20) =>
	get('top', {query, from, until, by, n});
// sides: optional {left_from, left_until, right_from, right_until}.
export const diff = (left, right, from, until, sides) =>
	get('diff', {left, right, from, until, format: 'json', ...(sides || {})});
export const diffSvgUrl = (left, right, from, until, width) =>
	BASE + 'diff?' + qs({left, right, from, until, format: 'svg', width});
export const outliers = (query, pattern, from, until) =>
	get('outliers', {query, pattern, from, until});
// by: label names to group series by (glass-aggd's default: host; for
// lock_wait_ns host,class); '' = one fleet-wide series.
export const timeseries = (metric, query, from, until, step, by) =>
	get('timeseries', {metric, query, from, until, step, by});
// The fleet's lock table from the agents' lock detail (classes by B-tree
// level, contended instances, waiters' stacks).
export const locks = (query, from, until, n = 20) => get('locks', {query, from, until, n});
// The waiters' stacks of one lock class (and level), shaped like merge.
export const lockstacks = (cls, level, query, from, until, limit = MERGE_LIMIT) =>
	get('lockstacks', {class: cls, level: level === null ? undefined : level, query, from, until, format: 'json', limit});
export const lockstacksSvgUrl = (cls, level, query, from, until, width) =>
	BASE + 'lockstacks?' + qs({class: cls, level: level === null ? undefined : level, query, from, until, format: 'svg', width});
