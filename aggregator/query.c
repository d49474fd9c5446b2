/*
 * query.c — the read side of the API: merge, top, diff, outliers, hosts,
 * labels, timeseries.  Each handler parses its parameters completely,
 * asks the store for rows, aggregates in C (hash maps keyed by stack id)
 * and renders JSON, folded text or SVG.
 *
 * Work bounds: a merge touches each matching sample row once and fetches
 * the text of each distinct stack once; outliers keep one counter per
 * (host, stack) pair; timeseries one per (series, bucket).  Every query
 * has a budget (struct qbudget): at most --max-query-samples rows from
 * the store and --max-query-time seconds; past either it is cut and
 * answered 422 or 503 naming the limit.  Patterns are RE2 (regex.h).
 *
 * Sums saturate at INT64_MAX (answers say "saturated": true) instead of
 * wrapping; ties are ordered by stack text (labels by name) so both
 * engines answer byte for byte alike.
 */
#include "aggregator/aggd.h"
#include "aggregator/hmap.h"
#include "aggregator/regex.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#ifdef HAVE_FLAMEGRAPH
#include "tools/lib/flamegraph.h"
#endif

/* ---- results -------------------------------------------------------------- */

static int qerr(struct qresult *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int qerr(struct qresult *r, int status, const char *fmt, ...)
{
	char m[512];
	va_list ap;
	json_t *o;

	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	o = json_pack("{s:s, s:i}", "error", m, "status", status);
	r->status = status;
	r->ctype = "application/json";
	r->body = json_dumps(o, JSON_COMPACT);
	r->len = r->body ? strlen(r->body) : 0;
	json_decref(o);
	return 0;
}

static int qjson(struct qresult *r, json_t *o)
{
	if (!o)
		return qerr(r, 500, "out of memory");
	r->status = 200;
	r->ctype = "application/json";
	r->body = json_dumps(o, JSON_COMPACT);
	r->len = r->body ? strlen(r->body) : 0;
	json_decref(o);
	return r->body ? 0 : qerr(r, 500, "out of memory");
}

/* ---- label sets --------------------------------------------------------------- */

struct lsinfo {
	int64_t id;
	struct agg_labels l;
	const char *host;
};

struct lsdb {
	struct lsinfo *v;
	size_t n, cap;
};

static int lsdb_cb(void *arg, int64_t id, const char *json)
{
	struct lsdb *db = arg;

	if (db->n == db->cap) {
		size_t nc = db->cap ? db->cap * 2 : 64;
		struct lsinfo *nv = realloc(db->v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		db->v = nv;
		db->cap = nc;
	}
	memset(&db->v[db->n], 0, sizeof(db->v[0]));
	db->v[db->n].id = id;
	if (agg_labels_from_json(&db->v[db->n].l, json))
		return 0;	/* unreadable: skip rather than fail every query */
	db->v[db->n].host = agg_labels_get(&db->v[db->n].l, "host");
	if (!db->v[db->n].host)
		db->v[db->n].host = "";
	db->n++;
	return 0;
}

static void lsdb_free(struct lsdb *db)
{
	for (size_t i = 0; i < db->n; i++)
		agg_labels_free(&db->v[i].l);
	free(db->v);
	memset(db, 0, sizeof(*db));
}

static const struct lsinfo *lsdb_find(const struct lsdb *db, int64_t id)
{
	size_t lo = 0, hi = db->n;	/* ids arrive in rowid order */

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (db->v[mid].id == id)
			return &db->v[mid];
		if (db->v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = 0; i < db->n; i++)
		if (db->v[i].id == id)
			return &db->v[i];
	return NULL;
}

/* ---- budget ----------------------------------------------------------------- */

/* What one query may cost: rows the store hands back (sample rows, window
 * rows, lock rows) and wall time, checked every 256 rows and after each
 * store call. */
struct qbudget {
	uint64_t rows, max_rows;
	int64_t deadline_ns, max_ns;
};

static int budget_tick(struct qbudget *b)
{
	if (!b)
		return 0;
	if (++b->rows > b->max_rows)
		return -E2BIG;
	if (!(b->rows & 255) && agg_now_ns() > b->deadline_ns)
		return -ETIMEDOUT;
	return 0;
}

/* a + b, at most INT64_MAX; *sat set when it would have been more, or
 * when a stored count already is INT64_MAX (downsampling saturated it). */
static uint64_t sat_add(uint64_t a, uint64_t b, int *sat)
{
	uint64_t r = a + b;

	if (r < a || r >= (uint64_t)INT64_MAX) {
		*sat = 1;
		return (uint64_t)INT64_MAX;
	}
	return r;
}

/* *a += b for non-negative int64 sums, at most INT64_MAX. */
static void isat(int64_t *a, int64_t b)
{
	int sat = 0;

	*a = (int64_t)sat_add((uint64_t)(*a > 0 ? *a : 0), (uint64_t)(b > 0 ? b : 0), &sat);
}

/* ---- parameters ------------------------------------------------------------- */

struct qctx {
	struct aggd *d;
	query_get_fn get;
	void *ctx;
	struct qresult *r;
	int64_t now;
	struct qbudget b;
};

/* Answer a failed store scan: a cut budget names its limit. */
static int store_fail(struct qctx *q, int rc)
{
	if (rc == -E2BIG)
		return qerr(q->r, 422, "query cut: it would scan more than %llu rows "
			    "(--max-query-samples); narrow the selector or the time range",
			    (unsigned long long)q->b.max_rows);
	if (rc == -ETIMEDOUT || (rc && agg_now_ns() > q->b.deadline_ns))
		return qerr(q->r, 503, "query cut: it ran longer than %.3g s (--max-query-time); "
			    "narrow the selector or the time range", q->b.max_ns / 1e9);
	return qerr(q->r, rc == -ENOMEM ? 500 : 503, "store: %s", strerror(-rc));
}

static const char *P(struct qctx *q, const char *k)
{
	const char *v = q->get(q->ctx, k);

	return v && *v ? v : NULL;
}

/* from/until (with a prefix such as "left_"), defaults now-1h .. now. */
static int time_range(struct qctx *q, const char *prefix, int64_t *from, int64_t *until)
{
	char k1[32], k2[32];
	const char *f, *u;

	snprintf(k1, sizeof(k1), "%sfrom", prefix);
	snprintf(k2, sizeof(k2), "%suntil", prefix);
	f = P(q, k1);
	u = P(q, k2);
	if (!f && *prefix)
		f = P(q, "from");
	if (!u && *prefix)
		u = P(q, "until");
	*from = q->now - 3600LL * 1000000000LL;
	*until = q->now;
	if (f && sel_time(f, q->now, from))
		return qerr(q->r, 400, "%s: not a time (unix seconds, or now-1h)", k1), -1;
	if (u && sel_time(u, q->now, until))
		return qerr(q->r, 400, "%s: not a time (unix seconds, or now-1h)", k2), -1;
	if (*until < *from)
		return qerr(q->r, 400, "%s is before %s", k2, k1), -1;
	return 0;
}

/* Parse a selector; its metric names the profile type (default offcpu). */
static int parse_query(struct qctx *q, const char *key, struct selector *sel, int *type)
{
	const char *s = P(q, key);
	char msg[200];

	if (!s)
		s = "offcpu{}";
	int rc = sel_parse_lim(s, &q->d->cfg.lim, sel, msg, sizeof(msg));

	if (rc == -ENOMEM)
		return qerr(q->r, 500, "out of memory"), -1;
	if (rc)
		return qerr(q->r, 400, "%s: %s", key, msg), -1;
	*type = PT_OFFCPU;
	if (sel->metric && (*type = agg_ptype_parse(sel->metric)) < 0) {
		qerr(q->r, 400, "%s: unknown profile type \"%s\" (offcpu, wakeup, lockwait, oncpu, wall)",
		     key, sel->metric);
		sel_free(sel);
		return -1;
	}
	return 0;
}

/* ---- merge ------------------------------------------------------------------ */

struct mstack {
	int64_t id;
	uint64_t count;
	char *text;
};

struct merged {
	struct hmap m;		/* stack id + 1 -> count */
	uint64_t total;
	struct mstack *v;	/* materialised, sorted by count desc, then text */
	size_t n;
	size_t nrows;
	int saturated;		/* a sum reached INT64_MAX */
	int units_seen;		/* bit 0: windows counting ns, bit 1: samples */
	struct qbudget *b;
};

/* What the merged counts are: the units of the windows that hold them
 * (pprof nanoseconds pushed as oncpu are ns, not samples).  A merge never
 * holds both: do_merge refuses a selection whose windows count ns and
 * samples (units_seen 3). */
static const char *merged_units(const struct merged *mg, int type)
{
	switch (mg->units_seen) {
	case 1: return "ns";
	case 2: return "samples";
	default: return type == PT_ONCPU ? "samples" : "ns";
	}
}

struct units_scan { struct hmap ls; int type; struct merged *mg; };

static int units_cb(void *arg, const struct store_window_row *w)
{
	struct units_scan *u = arg;
	int rc = budget_tick(u->mg->b);

	if (rc)
		return rc;
	if (w->total[u->type] > 0 && hmap_get(&u->ls, (uint64_t)w->labelset + 1))
		u->mg->units_seen |= w->units[u->type] == UNITS_SAMPLES ? 2 : 1;
	return 0;
}

static int merge_cb(void *arg, int64_t ls, int64_t stack, uint64_t count)
{
	struct merged *mg = arg;
	uint64_t *slot = hmap_slot(&mg->m, (uint64_t)stack + 1);
	int rc = budget_tick(mg->b);

	(void)ls;
	if (rc)
		return rc;
	if (!slot)
		return -ENOMEM;
	*slot = sat_add(*slot, count, &mg->saturated);
	mg->total = sat_add(mg->total, count, &mg->saturated);
	mg->nrows++;
	return 0;
}

/* Count desc, then stack text: ids differ between engines, texts do not. */
static int by_count_desc(const void *a, const void *b)
{
	const struct mstack *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	if (x->text && y->text)
		return strcmp(x->text, y->text);
	return x->id < y->id ? -1 : x->id > y->id;
}

static void merged_free(struct merged *mg)
{
	for (size_t i = 0; i < mg->n; i++)
		free(mg->v[i].text);
	free(mg->v);
	hmap_free(&mg->m);
	memset(mg, 0, sizeof(*mg));
}

static int matching_labelsets(const struct lsdb *db, const struct selector *sel,
			      int64_t **ids, size_t *n)
{
	*ids = malloc((db->n + 1) * sizeof(**ids));
	*n = 0;
	if (!*ids)
		return -ENOMEM;
	for (size_t i = 0; i < db->n; i++)
		if (sel_match(sel, &db->v[i].l))
			(*ids)[(*n)++] = db->v[i].id;
	return 0;
}

static int set_text(void *arg, size_t i, const char *text)
{
	struct merged *mg = arg;

	if (i >= mg->n || mg->v[i].text)
		return 0;
	return (mg->v[i].text = strdup(text)) ? 0 : -ENOMEM;
}

static int materialise(struct store *st, struct merged *mg)
{
	size_t k = 0;

	mg->v = calloc(mg->m.n + 1, sizeof(*mg->v));
	if (!mg->v)
		return -ENOMEM;
	for (size_t i = 0; i < mg->m.cap; i++) {
		if (!mg->m.keys[i] || !mg->m.vals[i])
			continue;
		mg->v[k].id = (int64_t)mg->m.keys[i] - 1;
		mg->v[k].count = mg->m.vals[i];
		k++;
	}
	mg->n = k;
	qsort(mg->v, mg->n, sizeof(*mg->v), by_count_desc);
	if (st->ops->stack_texts && mg->n) {
		int64_t *ids = malloc(mg->n * sizeof(*ids));
		int rc;

		if (!ids)
			return -ENOMEM;
		for (size_t i = 0; i < mg->n; i++)
			ids[i] = mg->v[i].id;
		rc = st->ops->stack_texts(st, ids, mg->n, set_text, mg);
		free(ids);
		for (size_t i = 0; !rc && i < mg->n; i++)
			if (!mg->v[i].text)
				rc = -ENOENT;
		if (!rc)
			qsort(mg->v, mg->n, sizeof(*mg->v), by_count_desc);
		return rc;
	}
	for (size_t i = 0; i < mg->n; i++) {
		int rc = st->ops->stack_text(st, mg->v[i].id, &mg->v[i].text);

		if (rc)
			return rc;
	}
	qsort(mg->v, mg->n, sizeof(*mg->v), by_count_desc);
	return 0;
}

/* Merge one selection: the core of merge, top and diff. */
static int do_merge(struct qctx *q, const struct selector *sel, int type, int64_t from,
		    int64_t until, int texts, struct merged *mg)
{
	struct lsdb db = { 0 };
	struct store *st = q->d->store;
	int64_t *ids = NULL, t0 = agg_now_ns();
	size_t n;
	int rc;

	memset(mg, 0, sizeof(*mg));
	mg->b = &q->b;
	if ((rc = st->ops->labelsets(st, lsdb_cb, &db)) ||
	    (rc = matching_labelsets(&db, sel, &ids, &n)))
		goto out;
	rc = st->ops->samples(st, type, ids, n, from, until, merge_cb, mg);
	if (!rc && mg->total) {
		struct units_scan u = { .type = type, .mg = mg };

		for (size_t i = 0; i < n && !rc; i++) {
			uint64_t *sl = hmap_slot(&u.ls, (uint64_t)ids[i] + 1);

			if (!sl)
				rc = -ENOMEM;
			else
				*sl = 1;
		}
		if (!rc)
			rc = st->ops->windows(st, from, until, units_cb, &u);
		hmap_free(&u.ls);
	}
	if (!rc && agg_now_ns() > q->b.deadline_ns)
		rc = -ETIMEDOUT;
	/* Different units are never added, as pprof refuses to merge profiles
	 * of different sample types and Pyroscope keeps each unit a series of
	 * its own (API.md: "Units"): a 400 below. */
	if (!rc && mg->units_seen == 3)
		rc = -EDOM;
	if (!rc && texts)
		rc = materialise(st, mg);
out:
	metrics_observe(&q->d->m.store_query, agg_now_ns() - t0);
	free(ids);
	lsdb_free(&db);
	if (rc) {
		merged_free(mg);	/* a cut query has half a merge: the caller frees none */
		if (rc == -EDOM)
			qerr(q->r, 400, "the selection counts %s in ns in some windows and in samples in "
			     "others; units are never summed: narrow the selector (or the time range) to "
			     "windows of one unit", agg_ptype_name(type));
		else
			store_fail(q, rc);
	}
	return rc;
}

static int render_folded(struct qresult *r, const struct merged *mg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return qerr(r, 500, "out of memory");
	for (size_t i = 0; i < mg->n; i++)
		fprintf(f, "%s %llu\n", mg->v[i].text, (unsigned long long)mg->v[i].count);
	if (fclose(f)) {
		free(buf);
		return qerr(r, 500, "out of memory");
	}
	r->status = 200;
	r->ctype = "text/plain; charset=utf-8";
	r->body = buf;
	r->len = len;
	return 0;
}

#ifdef HAVE_FLAMEGRAPH
static struct folded_set *to_set(const struct merged *mg)
{
	struct folded_set *set = folded_set_new();

	for (size_t i = 0; set && i < mg->n; i++)
		if (folded_set_add(set, mg->v[i].text, strlen(mg->v[i].text), mg->v[i].count)) {
			folded_set_free(set);
			return NULL;
		}
	return set;
}

/* SVG through the project's renderer; right != NULL renders a diff with
 * left as the baseline. */
static int render_svg(struct qctx *q, const struct merged *left, const struct merged *right,
		      const char *title, int type)
{
	struct fg_options o;
	struct folded_set *a = to_set(left), *b = right ? to_set(right) : NULL;
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (!a || (right && !b)) {
		folded_set_free(a);
		folded_set_free(b);
		return qerr(q->r, 500, "out of memory");
	}
	fg_options_init(&o);
	o.title = title;
	o.countname = merged_units(right ? right : left, type);
	/* a wall profile: hot above its "[oncpu]"/"[offcpu]" frames, as
	 * glass-flamegraph draws it; the renderer colours the two halves */
	o.palette = type == PT_WAKEUP ? FG_PALETTE_WAKEUP
		  : type == PT_ONCPU || type == PT_WALL ? FG_PALETTE_HOT : FG_PALETTE_OFFCPU;
	o.hash = 1;
	o.normalize = 1;
	if (P(q, "width")) {
		long w = strtol(P(q, "width"), NULL, 10);

		if (w >= 50 && w <= 20000)
			o.width = (unsigned)w;
	}
	rc = right ? fg_render_mem(&buf, &len, a, b, &o) : fg_render_mem(&buf, &len, NULL, a, &o);
	folded_set_free(a);
	folded_set_free(b);
	if (rc == -ENODATA)
		return qerr(q->r, 404, "no samples for this selection and time range");
	if (rc)
		return qerr(q->r, 500, "flame graph: %s", fg_strerror(rc));
	q->r->status = 200;
	q->r->ctype = "image/svg+xml";
	q->r->body = buf;
	q->r->len = len;
	return 0;
}
#else
static int render_svg(struct qctx *q, const struct merged *left, const struct merged *right,
		      const char *title, int type)
{
	(void)left; (void)right; (void)title; (void)type;
	return qerr(q->r, 501, "format=svg: this build has no flame-graph renderer (tools/lib/flamegraph.h)");
}
#endif

/* format= and limit= of merge-shaped answers: "" = bad (answered). */
static const char *merge_format(struct qctx *q, long *limit)
{
	const char *fmt = P(q, "format");

	*limit = 0;
	if (!fmt)
		fmt = "json";
	if (strcmp(fmt, "json") && strcmp(fmt, "folded") && strcmp(fmt, "svg"))
		return qerr(q->r, 400, "format: must be folded, json or svg"), "";
	if (P(q, "limit")) {
		char *e;

		*limit = strtol(P(q, "limit"), &e, 10);
		if (*e || *limit < 0)
			return qerr(q->r, 400, "limit: must be a non-negative integer"), "";
	}
	return fmt;
}

static void reply_merged(struct qctx *q, const struct merged *mg, const char *fmt, long limit,
			 int type, int64_t from, int64_t until, const char *title);

static int q_merge(struct qctx *q)
{
	struct selector sel;
	struct merged mg;
	int64_t from, until;
	int type;
	long limit;
	const char *fmt = merge_format(q, &limit);

	if (!*fmt || time_range(q, "", &from, &until) || parse_query(q, "query", &sel, &type))
		return 0;
	if (do_merge(q, &sel, type, from, until, 1, &mg)) {
		sel_free(&sel);
		return 0;
	}
	sel_free(&sel);
	reply_merged(q, &mg, fmt, limit, type, from, until, P(q, "query") ? P(q, "query") : "offcpu{}");
	merged_free(&mg);
	return 0;
}

/* Answer a materialised merge as folded text, SVG or JSON. */
static void reply_merged(struct qctx *q, const struct merged *mg_, const char *fmt, long limit,
			 int type, int64_t from, int64_t until, const char *title)
{
	const struct merged mg = *mg_;

	if (!strcmp(fmt, "folded"))
		render_folded(q->r, &mg);
	else if (!strcmp(fmt, "svg"))
		render_svg(q, &mg, NULL, title, type);
	else {
		json_t *o = json_object(), *a = json_array();
		size_t n = limit && (size_t)limit < mg.n ? (size_t)limit : mg.n;

		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, json_pack("{s:s, s:I}", "stack", mg.v[i].text,
							   "count", (json_int_t)mg.v[i].count));
		json_object_set_new(o, "type", json_string(agg_ptype_name(type)));
		json_object_set_new(o, "units", json_string(merged_units(&mg, type)));
		json_object_set_new(o, "from", json_integer(from / 1000000000));
		json_object_set_new(o, "until", json_integer(until / 1000000000));
		json_object_set_new(o, "total", json_integer((json_int_t)mg.total));
		json_object_set_new(o, "nstacks", json_integer(mg.n));
		if (mg.saturated)
			json_object_set_new(o, "saturated", json_true());
		json_object_set_new(o, "stacks", a);
		qjson(q->r, o);
	}
}

/* ---- top -------------------------------------------------------------------- */

struct frow { const char *frame; size_t len; uint64_t self, total; };

/* A frame's count += COUNT, saturating: the folded set interns the name
 * (added with 0, so its own 64-bit total never overflows) and the count
 * is kept here — a frame in every stack of a 10^18 profile 20 frames deep
 * is 2*10^19, which folded_set_add refuses with -EOVERFLOW. */
static int frame_add(struct folded_set *set, const char *f, size_t fl, uint64_t count, int *sat)
{
	struct folded_stack *fs;
	int rc = folded_set_add(set, f, fl, 0);

	if (rc)
		return rc;
	if (!(fs = (struct folded_stack *)folded_set_find(set, f, fl)))
		return -ENOMEM;
	fs->count = sat_add(fs->count, count, sat);
	return 0;
}

static int by_frame(const void *a, const void *b, void *arg)
{
	const struct frow *x = a, *y = b;
	int sort_total = *(const int *)arg;
	uint64_t vx = sort_total ? x->total : x->self, vy = sort_total ? y->total : y->self;

	if (vx != vy)
		return vx < vy ? 1 : -1;
	return strcmp(x->frame, y->frame);
}

static int q_top(struct qctx *q)
{
	struct selector sel;
	struct merged mg;
	int64_t from, until;
	int type, by_total;
	const char *by = P(q, "by"), *ns = P(q, "n");
	long n = 20;
	struct folded_set *self = NULL, *total = NULL;
	struct frow *rows = NULL;

	if (!by)
		by = "self";
	if (strcmp(by, "self") && strcmp(by, "total"))
		return qerr(q->r, 400, "by: must be self or total");
	by_total = !strcmp(by, "total");
	if (ns) {
		char *e;

		n = strtol(ns, &e, 10);
		if (*e || n <= 0 || n > 100000)
			return qerr(q->r, 400, "n: must be an integer in 1..100000");
	}
	if (time_range(q, "", &from, &until) || parse_query(q, "query", &sel, &type))
		return 0;
	if (do_merge(q, &sel, type, from, until, 1, &mg)) {
		sel_free(&sel);
		return 0;
	}
	sel_free(&sel);
	self = folded_set_new();
	total = folded_set_new();
	if (!self || !total)
		goto oom;
	for (size_t i = 0; i < mg.n; i++) {
		struct folded_iter it;
		const char *f, *leaf = NULL, *seen[512];
		size_t fl, leaflen = 0, lens[512], nseen = 0;

		folded_iter_init(&it, mg.v[i].text, strlen(mg.v[i].text));
		while (folded_iter_next(&it, &f, &fl)) {
			int dup = 0;

			leaf = f;
			leaflen = fl;
			for (size_t j = 0; j < nseen && !dup; j++)
				dup = lens[j] == fl && !memcmp(seen[j], f, fl);
			if (dup)
				continue;	/* recursion: count a frame once per stack */
			if (nseen < 512) {
				seen[nseen] = f;
				lens[nseen++] = fl;
			}
			if (frame_add(total, f, fl, mg.v[i].count, &mg.saturated))
				goto oom;
		}
		if (leaf && frame_add(self, leaf, leaflen, mg.v[i].count, &mg.saturated))
			goto oom;
	}
	size_t nf = folded_set_size(total);
	rows = calloc(nf + 1, sizeof(*rows));
	if (!rows)
		goto oom;
	for (size_t i = 0; i < nf; i++) {
		const struct folded_stack *t = folded_set_get(total, i);
		const struct folded_stack *s = folded_set_find(self, t->stack, t->len);

		rows[i].frame = t->stack;
		rows[i].len = t->len;
		rows[i].total = t->count;
		rows[i].self = s ? s->count : 0;
	}
	qsort_r(rows, nf, sizeof(*rows), by_frame, &by_total);
	json_t *o = json_object(), *fa = json_array(), *sa = json_array();
	for (size_t i = 0; i < nf && i < (size_t)n; i++)
		json_array_append_new(fa, json_pack("{s:s, s:I, s:I}", "frame", rows[i].frame,
						    "self", (json_int_t)rows[i].self,
						    "total", (json_int_t)rows[i].total));
	for (size_t i = 0; i < mg.n && i < (size_t)n; i++)
		json_array_append_new(sa, json_pack("{s:s, s:I}", "stack", mg.v[i].text,
						    "count", (json_int_t)mg.v[i].count));
	json_object_set_new(o, "type", json_string(agg_ptype_name(type)));
	json_object_set_new(o, "by", json_string(by));
	json_object_set_new(o, "total", json_integer((json_int_t)mg.total));
	if (mg.saturated)
		json_object_set_new(o, "saturated", json_true());
	json_object_set_new(o, "frames", fa);
	json_object_set_new(o, "stacks", sa);
	qjson(q->r, o);
	goto out;
oom:
	qerr(q->r, 500, "out of memory");
out:
	free(rows);
	folded_set_free(self);
	folded_set_free(total);
	merged_free(&mg);
	return 0;
}

/* ---- diff ------------------------------------------------------------------- */

struct drow { const char *stack; uint64_t left, right; double delta; };

static int by_delta(const void *a, const void *b)
{
	const struct drow *x = a, *y = b;
	double dx = fabs(x->delta), dy = fabs(y->delta);

	if (dx != dy)
		return dx < dy ? 1 : -1;
	return strcmp(x->stack, y->stack);
}

static int q_diff(struct qctx *q)
{
	struct selector ls, rs;
	struct merged lm, rm;
	int64_t lf, lu, rf, ru;
	int lt, rt;
	const char *fmt = P(q, "format");
	struct hmap idx = { 0 };
	struct drow *rows = NULL;
	size_t nrows = 0;

	if (!fmt)
		fmt = "json";
	if (strcmp(fmt, "json") && strcmp(fmt, "svg"))
		return qerr(q->r, 400, "format: must be json or svg");
	if (!P(q, "left") || !P(q, "right"))
		return qerr(q->r, 400, "left and right selectors are both required");
	if (time_range(q, "left_", &lf, &lu) || time_range(q, "right_", &rf, &ru))
		return 0;
	if (parse_query(q, "left", &ls, &lt))
		return 0;
	if (parse_query(q, "right", &rs, &rt)) {
		sel_free(&ls);
		return 0;
	}
	if (lt != rt) {
		sel_free(&ls);
		sel_free(&rs);
		return qerr(q->r, 400, "left and right must name the same profile type");
	}
	int bad = do_merge(q, &ls, lt, lf, lu, 1, &lm);
	if (!bad && do_merge(q, &rs, rt, rf, ru, 1, &rm)) {
		merged_free(&lm);
		bad = 1;
	}
	sel_free(&ls);
	sel_free(&rs);
	if (bad)
		return 0;
	if (lm.units_seen && rm.units_seen && lm.units_seen != rm.units_seen) {
		qerr(q->r, 400, "left counts %s, right counts %s: units are never compared",
		     merged_units(&lm, lt), merged_units(&rm, rt));
		goto out;
	}
	if (!strcmp(fmt, "svg")) {
		render_svg(q, &lm, &rm, "diff: left -> right", lt);
		goto out;
	}
	rows = calloc(lm.n + rm.n + 1, sizeof(*rows));
	if (!rows)
		goto oom;
	for (size_t i = 0; i < lm.n; i++) {
		uint64_t *s = hmap_slot(&idx, (uint64_t)lm.v[i].id + 1);

		if (!s)
			goto oom;
		*s = nrows + 1;
		rows[nrows].stack = lm.v[i].text;
		rows[nrows++].left = lm.v[i].count;
	}
	for (size_t i = 0; i < rm.n; i++) {
		uint64_t *s = hmap_slot(&idx, (uint64_t)rm.v[i].id + 1);

		if (!s)
			goto oom;
		if (!*s) {
			*s = nrows + 1;
			rows[nrows++].stack = rm.v[i].text;
		}
		rows[*s - 1].right = rm.v[i].count;
	}
	for (size_t i = 0; i < nrows; i++) {
		double l = lm.total ? (double)rows[i].left / lm.total : 0;
		double r = rm.total ? (double)rows[i].right / rm.total : 0;

		rows[i].delta = r - l;
	}
	qsort(rows, nrows, sizeof(*rows), by_delta);
	json_t *o = json_object(), *a = json_array();
	for (size_t i = 0; i < nrows; i++) {
		double l = lm.total ? (double)rows[i].left / lm.total : 0;
		double r = rm.total ? (double)rows[i].right / rm.total : 0;

		json_array_append_new(a, json_pack("{s:s, s:I, s:I, s:f, s:f, s:f}",
			"stack", rows[i].stack, "left", (json_int_t)rows[i].left,
			"right", (json_int_t)rows[i].right, "left_share", l, "right_share", r,
			"delta", rows[i].delta));
	}
	json_object_set_new(o, "type", json_string(agg_ptype_name(lt)));
	json_object_set_new(o, "left_total", json_integer((json_int_t)lm.total));
	json_object_set_new(o, "right_total", json_integer((json_int_t)rm.total));
	json_object_set_new(o, "stacks", a);
	qjson(q->r, o);
	goto out;
oom:
	qerr(q->r, 500, "out of memory");
out:
	free(rows);
	hmap_free(&idx);
	merged_free(&lm);
	merged_free(&rm);
	return 0;
}

/* ---- outliers --------------------------------------------------------------- */

struct host_acc { const char *host; uint64_t total, match; double share, ratio; };

struct out_scan {
	const struct lsdb *db;
	struct qbudget *b;
	int saturated;
	struct hmap *per_host;	/* per host: stack id + 1 -> count */
	struct hmap hostidx;	/* labelset id + 1 -> host index + 1 */
	struct host_acc *hosts;
	size_t nhosts;
};

static int out_cb(void *arg, int64_t ls, int64_t stack, uint64_t count)
{
	struct out_scan *o = arg;
	uint64_t *h = hmap_get(&o->hostidx, (uint64_t)ls + 1), *p;
	int rc = budget_tick(o->b);

	if (rc)
		return rc;
	if (!h)
		return 0;
	o->hosts[*h - 1].total = sat_add(o->hosts[*h - 1].total, count, &o->saturated);
	if (!(p = hmap_slot(&o->per_host[*h - 1], (uint64_t)stack + 1)))
		return -ENOMEM;
	*p = sat_add(*p, count, &o->saturated);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int by_share(const void *a, const void *b)
{
	const struct host_acc *x = a, *y = b;

	if (x->share != y->share)
		return x->share < y->share ? 1 : -1;
	return strcmp(x->host, y->host);
}

/* fn(arg, i, text) for the text of each stack ids[i]: one bulk call where
 * the engine has it, else one lookup each.  0 or the first error. */
static int each_stack_text(struct store *st, const int64_t *ids, size_t n,
			   int (*fn)(void *arg, size_t i, const char *text), void *arg)
{
	int rc = 0;

	if (st->ops->stack_texts)
		return st->ops->stack_texts(st, ids, n, fn, arg);
	for (size_t i = 0; i < n && !rc; i++) {
		char *text;

		if (!(rc = st->ops->stack_text(st, ids[i], &text))) {
			rc = fn(arg, i, text);
			free(text);
		}
	}
	return rc;
}

struct match_arg { struct agg_re *re; struct hmap *match; const int64_t *ids; struct qbudget *b; };

/* Remember whether stack ids[i] matches the pattern: 1 no, 2 yes. */
static int match_text(void *arg, size_t i, const char *text)
{
	struct match_arg *ma = arg;
	uint64_t *m = hmap_get(ma->match, (uint64_t)ma->ids[i] + 1);

	if (m)
		*m = agg_re_match(ma->re, text, strlen(text)) ? 2 : 1;
	return budget_tick(ma->b);
}

static int q_outliers(struct qctx *q)
{
	struct selector sel;
	struct lsdb db = { 0 };
	struct out_scan o = { .db = &db, .b = &q->b };
	struct hmap match = { 0 };	/* stack id + 1 -> 1 no, 2 yes */
	struct store *st = q->d->store;
	int64_t from, until, *ids = NULL;
	size_t nids;
	int type, rc;
	struct agg_re *re = NULL;
	const char *pat = P(q, "pattern"), *thr = P(q, "threshold"), *ms = P(q, "min_share");
	double threshold = 2.0, min_share = 0.01, *shares = NULL, median = 0;

	if (!pat)
		return qerr(q->r, 400, "pattern: required (an RE2 regular expression matched against stacks)");
	if (thr) {
		char *e;

		threshold = strtod(thr, &e);
		if (*e || !(threshold > 1.0))
			return qerr(q->r, 400, "threshold: must be a number > 1");
	}
	if (ms) {
		char *e;

		min_share = strtod(ms, &e);
		if (*e || !(min_share >= 0 && min_share <= 1))
			return qerr(q->r, 400, "min_share: must be a number in [0, 1]");
	}
	{
		char eb[200];
		const struct agg_limits *lim = &q->d->cfg.lim;

		rc = agg_re_compile(pat, 0, lim->max_regex_len ? lim->max_regex_len : AGG_RE_MAX_LEN_DEFAULT,
				    lim->max_regex_mem ? lim->max_regex_mem : AGG_RE_MAX_MEM_DEFAULT,
				    &re, eb, sizeof(eb));
		if (rc == -ENOMEM)
			return qerr(q->r, 500, "out of memory");
		if (rc)
			return qerr(q->r, 400, "pattern: %s", eb);
	}
	if (time_range(q, "", &from, &until) || parse_query(q, "query", &sel, &type)) {
		agg_re_free(re);
		return 0;
	}
	int64_t t0 = agg_now_ns();
	if ((rc = st->ops->labelsets(st, lsdb_cb, &db)) ||
	    (rc = matching_labelsets(&db, &sel, &ids, &nids)))
		goto store_err;
	o.hosts = calloc(nids + 1, sizeof(*o.hosts));
	o.per_host = calloc(nids + 1, sizeof(*o.per_host));
	if (!o.hosts || !o.per_host)
		goto oom;
	for (size_t i = 0; i < nids; i++) {
		const struct lsinfo *li = lsdb_find(&db, ids[i]);
		size_t h;

		for (h = 0; h < o.nhosts; h++)
			if (!strcmp(o.hosts[h].host, li->host))
				break;
		if (h == o.nhosts)
			o.hosts[o.nhosts++].host = li->host;
		uint64_t *s = hmap_slot(&o.hostidx, (uint64_t)ids[i] + 1);
		if (!s)
			goto oom;
		*s = h + 1;
	}
	if ((rc = st->ops->samples(st, type, ids, nids, from, until, out_cb, &o)))
		goto store_err;
	/* Distinct stacks first, then their texts (one bulk call where the
	 * engine has it), then each host's matched share. */
	for (size_t hx = 0; hx < o.nhosts; hx++)
		for (size_t i = 0; i < o.per_host[hx].cap; i++)
			if (o.per_host[hx].keys[i] && !hmap_slot(&match, o.per_host[hx].keys[i]))
				goto oom;
	{
		size_t nd = 0;
		int64_t *ids = malloc((match.n + 1) * sizeof(*ids));
		struct match_arg ma = { .re = re, .match = &match, .ids = ids, .b = &q->b };

		if (!ids)
			goto oom;
		for (size_t i = 0; i < match.cap; i++)
			if (match.keys[i])
				ids[nd++] = (int64_t)(match.keys[i] - 1);
		rc = each_stack_text(st, ids, nd, match_text, &ma);
		free(ids);
		if (rc)
			goto store_err;
	}
	for (size_t hx = 0; hx < o.nhosts; hx++)
		for (size_t i = 0; i < o.per_host[hx].cap; i++) {
			uint64_t *m;

			if (!o.per_host[hx].keys[i])
				continue;
			m = hmap_get(&match, o.per_host[hx].keys[i]);
			if (m && *m == 2)
				o.hosts[hx].match += o.per_host[hx].vals[i];
		}
	metrics_observe(&q->d->m.store_query, agg_now_ns() - t0);
	size_t nh = 0;
	shares = calloc(o.nhosts + 1, sizeof(*shares));
	if (!shares)
		goto oom;
	for (size_t h = 0; h < o.nhosts; h++) {
		if (!o.hosts[h].total)
			continue;
		o.hosts[h].share = (double)o.hosts[h].match / o.hosts[h].total;
		shares[nh++] = o.hosts[h].share;
	}
	qsort(shares, nh, sizeof(*shares), cmp_double);
	if (nh)
		median = nh % 2 ? shares[nh / 2] : (shares[nh / 2 - 1] + shares[nh / 2]) / 2;
	qsort(o.hosts, o.nhosts, sizeof(*o.hosts), by_share);
	json_t *res = json_object(), *a = json_array();
	for (size_t h = 0; h < o.nhosts; h++) {
		struct host_acc *x = &o.hosts[h];
		int outlier;
		json_t *ratio;

		if (!x->total)
			continue;
		/* A ratio alone flags noise when the median is tiny (2e-5 is
		 * "twice" 1e-5): the share must also exceed the median by
		 * min_share (an absolute fraction, default 1 point). */
		if (median > 0) {
			ratio = json_real(x->share / median);
			outlier = x->share / median >= threshold;
		} else {
			ratio = json_null();
			outlier = x->share > 0 && nh > 1;
		}
		outlier = outlier && x->share - median >= min_share;
		json_array_append_new(a, json_pack("{s:s, s:f, s:I, s:I, s:f, s:o, s:b}",
			"host", x->host, "share", x->share, "total", (json_int_t)x->total,
			"matched", (json_int_t)x->match, "fleet_median", median, "ratio", ratio,
			"outlier", outlier));
	}
	json_object_set_new(res, "type", json_string(agg_ptype_name(type)));
	json_object_set_new(res, "pattern", json_string(pat));
	json_object_set_new(res, "threshold", json_real(threshold));
	json_object_set_new(res, "min_share", json_real(min_share));
	json_object_set_new(res, "fleet_median", json_real(median));
	json_object_set_new(res, "hosts", a);
	qjson(q->r, res);
	goto out;
store_err:
	store_fail(q, rc);
	goto out;
oom:
	qerr(q->r, 500, "out of memory");
out:
	free(shares);
	free(ids);
	for (size_t hx = 0; o.per_host && hx < o.nhosts; hx++)
		hmap_free(&o.per_host[hx]);
	free(o.per_host);
	free(o.hosts);
	hmap_free(&o.hostidx);
	hmap_free(&match);
	lsdb_free(&db);
	sel_free(&sel);
	agg_re_free(re);
	return 0;
}

/* ---- hosts ------------------------------------------------------------------ */

/* A time type's total in one window, or -1 when the window holds no
 * profile of that type: absent, not a 0 -- else a host that ships only
 * some types draws a flat line for the others (the wall_ns series of an
 * off-CPU-only host, the offcpu_ns series of a wall-only one) and its
 * off-CPU rate is diluted by the seconds of windows without one.  A window
 * stores no presence flag, only totals, so a total of 0 is read as absent:
 * a time profile that was shipped holds its threads' time (a wall profile
 * their wall-clock time), and one with nothing in it says nothing either. */
static int64_t win_type_ns(const struct store_window_row *w, int type)
{
	return w->units[type] == UNITS_NS && w->total[type] > 0 ? w->total[type] : -1;
}

struct hrow {
	const char *host;
	int64_t ls, last_seen, windows, offcpu_dur_ns, offcpu_ns, lock_ns, p99, trim, latest_start;
	int64_t btree_ns;	/* lock detail: wait for B-tree node locks (level >= 0) */
	/* off-CPU stacks (the same profile, threads and windows): inside the
	 * engine's filesystem operations, and of those under a B-tree
	 * function waiting in glock_lock -- the demo's finding, computed
	 * here the way tools/demo.sh computes it from its own profile */
	uint64_t ops_ns, ops_btree_ns;
};

struct hosts_scan {
	struct hrow *v;
	size_t n, cap;
	struct hmap byls;	/* labelset id + 1 -> host index + 1 */
	char **names;	/* owned copies of host strings */
	struct lsdb *db;
	const struct selector *sel;
	struct qbudget *b;
};

static int hosts_cb(void *arg, const struct store_window_row *w)
{
	struct hosts_scan *h = arg;
	size_t i;
	int rc = budget_tick(h->b);

	if (rc)
		return rc;

	if (h->sel) {
		const struct lsinfo *li = lsdb_find(h->db, w->labelset);

		if (!li || !sel_match(h->sel, &li->l))
			return 0;
	}
	uint64_t *c = hmap_get(&h->byls, (uint64_t)w->labelset + 1);

	if (c)
		i = *c - 1;
	else {
		for (i = 0; i < h->n; i++)
			if (!strcmp(h->v[i].host, w->host))
				break;
	}
	if (i == h->n) {
		if (h->n == h->cap) {
			size_t nc = h->cap ? h->cap * 2 : 64;
			struct hrow *nv = realloc(h->v, nc * sizeof(*nv));
			char **nn = realloc(h->names, nc * sizeof(*nn));

			if (nv)
				h->v = nv;
			if (nn)
				h->names = nn;
			if (!nv || !nn)
				return -ENOMEM;
			h->cap = nc;
		}
		memset(&h->v[i], 0, sizeof(h->v[i]));
		if (!(h->names[i] = strdup(w->host)))
			return -ENOMEM;
		h->v[i].host = h->names[i];
		h->v[i].p99 = -1;
		h->v[i].trim = -1;
		h->v[i].lock_ns = -1;
		h->v[i].btree_ns = -1;
		h->n++;
	}
	if (!c) {
		if (!(c = hmap_slot(&h->byls, (uint64_t)w->labelset + 1)))
			return -ENOMEM;
		*c = i + 1;
	}
	struct hrow *r = &h->v[i];
	r->windows++;
	if (w->end_ns > r->last_seen)
		r->last_seen = w->end_ns;
	if (w->start_ns >= r->latest_start) {
		r->latest_start = w->start_ns;
		r->ls = w->labelset;
	}
	if (win_type_ns(w, PT_OFFCPU) >= 0) {	/* the rate over the windows that have one */
		isat(&r->offcpu_dur_ns, w->end_ns - w->start_ns);
		isat(&r->offcpu_ns, w->total[PT_OFFCPU]);
	}
	if (w->lock_wait_ns >= 0)
		isat(&r->lock_ns, w->lock_wait_ns);	/* isat reads -1 (absent) as 0 */
	if (w->commit_p99_ns > r->p99)
		r->p99 = w->commit_p99_ns;
	if (w->trim_stall_ns >= 0)
		isat(&r->trim, w->trim_stall_ns);
	return 0;
}

/* ---- the finding's share: B-tree lock waits inside filesystem operations ---- */

enum { OPS_NONE = 1, OPS_IN = 2, OPS_BTREE_LOCK = 3 };

/* A folded stack (root first): inside a filesystem operation (a frame
 * fsops_*), and there waiting for a B-tree lock (a frame btree_* with
 * glock_lock below it) -- tools/demo.sh's two awk patterns. */
static int ops_class(const char *text)
{
	const char *f = strncmp(text, "fsops_", 6) ? strstr(text, ";fsops_") : text, *b;

	if (!f)
		return OPS_NONE;
	b = strstr(f, ";btree_");
	return b && strstr(b, "glock_lock") ? OPS_BTREE_LOCK : OPS_IN;
}

struct ops_scan {
	struct hosts_scan *h;
	struct hmap cls;	/* stack id + 1 -> 0 (seen), then OPS_* */
	int pass;
};

static int ops_sample_cb(void *arg, int64_t ls, int64_t stack, uint64_t count)
{
	struct ops_scan *o = arg;
	int rc = budget_tick(o->h->b);
	uint64_t *c, *v;

	if (rc)
		return rc;
	if (o->pass == 0)
		return hmap_slot(&o->cls, (uint64_t)stack + 1) ? 0 : -ENOMEM;
	if (!(c = hmap_get(&o->h->byls, (uint64_t)ls + 1)) || !(v = hmap_get(&o->cls, (uint64_t)stack + 1)))
		return 0;
	if (*v >= OPS_IN)
		o->h->v[*c - 1].ops_ns += count;
	if (*v == OPS_BTREE_LOCK)
		o->h->v[*c - 1].ops_btree_ns += count;
	return 0;
}

struct ops_text_arg { struct hmap *cls; const int64_t *ids; struct qbudget *b; };

static int ops_text_cb(void *arg, size_t i, const char *text)
{
	struct ops_text_arg *a = arg;
	uint64_t *v = hmap_get(a->cls, (uint64_t)a->ids[i] + 1);

	if (v)
		*v = (uint64_t)ops_class(text);
	return budget_tick(a->b);
}

/* Each host's off-CPU time inside filesystem operations and, of it, under
 * B-tree locks, from the stored off-CPU stacks of the windows that matched
 * (two passes over the samples: the distinct stacks, then the sums). */
static int hosts_ops_share(struct store *st, struct hosts_scan *h, int64_t from, int64_t until)
{
	struct ops_scan o = { .h = h };
	int64_t *ls = NULL, *ids = NULL;
	size_t nls = 0, nd = 0;
	int rc = -ENOMEM;

	if (!(ls = malloc((h->byls.n + 1) * sizeof(*ls))))
		goto out;
	for (size_t i = 0; i < h->byls.cap; i++)
		if (h->byls.keys[i])
			ls[nls++] = (int64_t)(h->byls.keys[i] - 1);
	if (!nls) {
		rc = 0;
		goto out;
	}
	if ((rc = st->ops->samples(st, PT_OFFCPU, ls, nls, from, until, ops_sample_cb, &o)))
		goto out;
	rc = -ENOMEM;
	if (!(ids = malloc((o.cls.n + 1) * sizeof(*ids))))
		goto out;
	for (size_t i = 0; i < o.cls.cap; i++)
		if (o.cls.keys[i])
			ids[nd++] = (int64_t)(o.cls.keys[i] - 1);
	struct ops_text_arg ta = { &o.cls, ids, h->b };
	if ((rc = each_stack_text(st, ids, nd, ops_text_cb, &ta)))
		goto out;
	o.pass = 1;
	rc = st->ops->samples(st, PT_OFFCPU, ls, nls, from, until, ops_sample_cb, &o);
out:
	free(ls);
	free(ids);
	hmap_free(&o.cls);
	return rc;
}

/* B-tree lock wait from the lock detail, for hosts whose windows matched. */
static int hosts_lock_cb(void *arg, const struct store_lockrow *lr)
{
	struct hosts_scan *h = arg;
	uint64_t *c = hmap_get(&h->byls, (uint64_t)lr->labelset + 1);
	struct hrow *r;

	if (!c)
		return 0;
	r = &h->v[*c - 1];
	if (r->btree_ns < 0)
		r->btree_ns = 0;
	if (lr->level >= 0)
		isat(&r->btree_ns, lr->wait_ns);
	return 0;
}

static int by_host(const void *a, const void *b)
{
	return strcmp(((const struct hrow *)a)->host, ((const struct hrow *)b)->host);
}

static json_t *labels_json(const struct agg_labels *l)
{
	json_t *o = json_object();

	for (size_t i = 0; l && i < l->n; i++)
		json_object_set_new(o, l->kv[i].k, json_string(l->kv[i].v));
	return o;
}

static json_t *opt_int(int64_t v)
{
	return v < 0 ? json_null() : json_integer(v);
}

static int q_hosts(struct qctx *q)
{
	struct lsdb db = { 0 };
	struct selector sel = { 0 };
	struct hosts_scan h = { .db = &db, .b = &q->b };
	struct store *st = q->d->store;
	int64_t from, until;
	int rc, type;

	if (time_range(q, "", &from, &until))
		return 0;
	if (P(q, "query")) {
		if (parse_query(q, "query", &sel, &type))
			return 0;
		h.sel = &sel;
	}
	int64_t t0 = agg_now_ns();
	if ((rc = st->ops->labelsets(st, lsdb_cb, &db)) ||
	    (rc = st->ops->windows(st, from, until, hosts_cb, &h)) ||
	    (st->ops->lockrows && (rc = st->ops->lockrows(st, LK_CLASS, from, until, hosts_lock_cb, &h))) ||
	    (rc = hosts_ops_share(st, &h, from, until))) {
		store_fail(q, rc);
		goto out;
	}
	metrics_observe(&q->d->m.store_query, agg_now_ns() - t0);
	qsort(h.v, h.n, sizeof(*h.v), by_host);
	json_t *a = json_array();
	for (size_t i = 0; i < h.n; i++) {
		struct hrow *r = &h.v[i];
		const struct lsinfo *li = lsdb_find(&db, r->ls);
		double per_s = r->offcpu_dur_ns ? (double)r->offcpu_ns * 1e9 / r->offcpu_dur_ns : 0;
		json_t *share = r->lock_ns >= 0 && r->offcpu_ns > 0
			? json_real((double)r->lock_ns / r->offcpu_ns) : json_null();
		json_t *o = json_object();

		json_object_set_new(o, "host", json_string(r->host));
		json_object_set_new(o, "labels", labels_json(li ? &li->l : NULL));
		json_object_set_new(o, "last_seen", json_integer(r->last_seen / 1000000000));
		json_object_set_new(o, "windows", json_integer(r->windows));
		json_object_set_new(o, "offcpu_ns", json_integer(r->offcpu_ns));
		json_object_set_new(o, "offcpu_ns_per_s", json_real(per_s));
		json_object_set_new(o, "lock_wait_ns", opt_int(r->lock_ns));
		json_object_set_new(o, "lock_share", share);
		json_object_set_new(o, "btree_lock_wait_ns", opt_int(r->btree_ns));
		json_object_set_new(o, "btree_lock_share", r->btree_ns >= 0 && r->offcpu_ns > 0
				    ? json_real((double)r->btree_ns / r->offcpu_ns) : json_null());
		/* the finding's share: same stacks, threads and windows */
		json_object_set_new(o, "ops_offcpu_ns", json_integer((json_int_t)r->ops_ns));
		json_object_set_new(o, "ops_btree_lock_share", r->ops_ns > 0
				    ? json_real((double)r->ops_btree_ns / (double)r->ops_ns) : json_null());
		json_object_set_new(o, "commit_p99_ns", opt_int(r->p99));
		json_object_set_new(o, "trim_stall_ns", opt_int(r->trim));
		json_array_append_new(a, o);
	}
	qjson(q->r, a);
out:
	for (size_t i = 0; i < h.n; i++)
		free(h.names[i]);
	free(h.names);
	free(h.v);
	hmap_free(&h.byls);
	lsdb_free(&db);
	sel_free(&sel);
	return 0;
}

/* ---- labels ----------------------------------------------------------------- */

static int by_pair(const void *a, const void *b)
{
	const char *const *x = a, *const *y = b;
	int c = strcmp(x[0], y[0]);

	return c ? c : strcmp(x[1], y[1]);
}

/* Names sorted, each name's values sorted: both engines answer alike. */
static int q_labels(struct qctx *q)
{
	struct lsdb db = { 0 };
	struct store *st = q->d->store;
	const char **kv = NULL;
	size_t n = 0, cap = 0;
	json_t *vals, *names, *types, *o, *arr = NULL;
	int rc;

	if ((rc = st->ops->labelsets(st, lsdb_cb, &db))) {
		lsdb_free(&db);
		return store_fail(q, rc);
	}
	for (size_t i = 0; i < db.n; i++)
		cap += db.v[i].l.n;
	if (!(kv = malloc((cap + 1) * 2 * sizeof(*kv)))) {
		lsdb_free(&db);
		return qerr(q->r, 500, "out of memory");
	}
	/* (name, value) pairs, sorted by name then value, duplicates dropped */
	for (size_t i = 0; i < db.n; i++)
		for (size_t j = 0; j < db.v[i].l.n; j++) {
			kv[2 * n] = db.v[i].l.kv[j].k;
			kv[2 * n + 1] = db.v[i].l.kv[j].v;
			n++;
		}
	qsort(kv, n, 2 * sizeof(*kv), by_pair);
	vals = json_object();
	names = json_array();
	types = json_array();
	for (size_t i = 0; i < n; i++) {
		if (!i || strcmp(kv[2 * i], kv[2 * i - 2])) {
			arr = json_array();
			json_object_set_new(vals, kv[2 * i], arr);
			json_array_append_new(names, json_string(kv[2 * i]));
		} else if (!strcmp(kv[2 * i + 1], kv[2 * i - 1]))
			continue;
		json_array_append_new(arr, json_string(kv[2 * i + 1]));
	}
	for (int t = 0; t < PT_NTYPES; t++)
		json_array_append_new(types, json_string(agg_ptype_name(t)));
	free(kv);
	lsdb_free(&db);
	o = json_object();
	json_object_set_new(o, "names", names);
	json_object_set_new(o, "values", vals);
	json_object_set_new(o, "types", types);
	return qjson(q->r, o);
}

/* ---- timeseries ----------------------------------------------------------- */

enum { TS_P99, TS_LOCK, TS_TRIM, TS_OFFCPU, TS_WINDOWS, TS_WALL };

struct ts_series {
	char *key;		/* canonical JSON of the series labels */
	struct agg_labels l;
	struct hmap pts;	/* bucket + 1 -> value */
};

struct ts_scan {
	int metric;
	int64_t step_ns;
	const struct selector *sel;
	const struct lsdb *db;
	char **by;
	size_t nby;
	struct ts_series *v;
	size_t n, cap;
	struct hmap bykey;	/* hash(key) | 1 -> series index + 1 */
	struct hmap byls;	/* labelset id + 1 -> series index + 1 (no class) */
	const char *lvl;	/* the B-tree level of the lock row being added */
	int err;
	struct qbudget *b;
};

static struct ts_series *ts_get(struct ts_scan *t, const struct lsinfo *li, const char *cls)
{
	struct agg_labels l = { 0 };
	char *key;

	for (size_t i = 0; i < t->nby; i++) {
		const char *v = !strcmp(t->by[i], "class") && cls ? cls
			      : !strcmp(t->by[i], "level") && t->lvl ? t->lvl
			      : agg_labels_get(&li->l, t->by[i]);

		if (v && agg_labels_set(&l, t->by[i], v))
			goto oom;
	}
	if (!(key = agg_labels_canon(&l)))
		goto oom;
	uint64_t kh = folded_hash(key, strlen(key)) | 1, *ks = hmap_get(&t->bykey, kh);

	if (ks && !strcmp(t->v[*ks - 1].key, key)) {
		free(key);
		agg_labels_free(&l);
		return &t->v[*ks - 1];
	}
	for (size_t i = 0; ks && i < t->n; i++)	/* hash collision: look properly */
		if (!strcmp(t->v[i].key, key)) {
			free(key);
			agg_labels_free(&l);
			return &t->v[i];
		}
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 16;
		struct ts_series *nv = realloc(t->v, nc * sizeof(*nv));

		if (!nv) {
			free(key);
			goto oom;
		}
		t->v = nv;
		t->cap = nc;
	}
	memset(&t->v[t->n], 0, sizeof(t->v[0]));
	t->v[t->n].key = key;
	t->v[t->n].l = l;
	if (!ks && (ks = hmap_slot(&t->bykey, kh)))
		*ks = t->n + 1;
	return &t->v[t->n++];
oom:
	agg_labels_free(&l);
	t->err = -ENOMEM;
	return NULL;
}

static int ts_add(struct ts_scan *t, int64_t ls, int64_t start_ns, const char *cls, int64_t val, int max)
{
	const struct lsinfo *li = lsdb_find(t->db, ls);
	struct ts_series *s;
	uint64_t *p;

	uint64_t *c = cls ? NULL : hmap_get(&t->byls, (uint64_t)ls + 1);
	int rc = budget_tick(t->b);

	if (rc)
		return rc;
	if (c && !*c)
		return 0;		/* label set known not to match */
	if (c)
		s = &t->v[*c - 1];
	else {
		if (!li || val < 0)
			return 0;
		if (t->sel && !sel_match(t->sel, &li->l)) {
			if (!cls && (c = hmap_slot(&t->byls, (uint64_t)ls + 1)))
				*c = 0;
			return 0;
		}
		if (!(s = ts_get(t, li, cls)))
			return -ENOMEM;
		if (!cls && (c = hmap_slot(&t->byls, (uint64_t)ls + 1)))
			*c = (uint64_t)(s - t->v) + 1;
	}
	if (val < 0)
		return 0;
	if (!(p = hmap_slot(&s->pts, (uint64_t)(start_ns / t->step_ns) + 1)))
		return -ENOMEM;
	/* stored value + 1 so "present with 0" differs from absent */
	if (max) {
		if (!*p || (uint64_t)val + 1 > *p)
			*p = (uint64_t)val + 1;
	} else {
		int sat = 0;

		*p = sat_add(*p ? *p : 1, (uint64_t)val, &sat);
	}
	return 0;
}

static int ts_win_cb(void *arg, const struct store_window_row *w)
{
	struct ts_scan *t = arg;

	switch (t->metric) {
	case TS_P99: return ts_add(t, w->labelset, w->start_ns, NULL, w->commit_p99_ns, 1);
	case TS_TRIM: return ts_add(t, w->labelset, w->start_ns, NULL, w->trim_stall_ns, 0);
	case TS_OFFCPU: return ts_add(t, w->labelset, w->start_ns, NULL, win_type_ns(w, PT_OFFCPU), 0);
	case TS_WINDOWS: return ts_add(t, w->labelset, w->start_ns, NULL, 1, 0);
	case TS_WALL: return ts_add(t, w->labelset, w->start_ns, NULL, win_type_ns(w, PT_WALL), 0);
	}
	return 0;
}

static int ts_lock_cb(void *arg, int64_t ls, const char *host, int64_t start_ns, const char *cls, int64_t ns)
{
	(void)host;
	return ts_add(arg, ls, start_ns, cls, ns, 0);
}

/* lock_wait_ns by level: from the lock detail's classes (per B-tree level). */
static int ts_lockrow_cb(void *arg, const struct store_lockrow *r)
{
	struct ts_scan *t = arg;
	char lvl[16];
	int rc;

	snprintf(lvl, sizeof(lvl), "%d", r->level);
	t->lvl = lvl;
	rc = ts_add(t, r->labelset, r->start_ns, r->cls, r->wait_ns, 0);
	t->lvl = NULL;
	return rc;
}

struct tpt { int64_t t, v; };

static int by_t(const void *a, const void *b)
{
	const struct tpt *x = a, *y = b;

	return x->t < y->t ? -1 : x->t > y->t;
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct ts_series *)a)->key, ((const struct ts_series *)b)->key);
}

static int q_timeseries(struct qctx *q)
{
	static const char *const names[] = { "commit_p99_ns", "lock_wait_ns", "trim_stall_ns",
					     "offcpu_ns", "ingest_windows", "wall_ns" };
	const char *metric = P(q, "metric"), *step = P(q, "step"), *by = q->get(q->ctx, "by");
	struct selector sel = { 0 };
	struct lsdb db = { 0 };
	struct ts_scan t = { .db = &db, .b = &q->b };
	struct store *st = q->d->store;
	char *bycopy = NULL;
	int64_t from, until;
	int type, rc;

	t.metric = -1;
	for (int i = 0; metric && i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (!strcmp(metric, names[i]))
			t.metric = i;
	if (t.metric < 0)
		return qerr(q->r, 400, "metric: must be commit_p99_ns, lock_wait_ns, trim_stall_ns, offcpu_ns, ingest_windows or wall_ns");
	t.step_ns = 60LL * 1000000000LL;
	if (step) {
		char *e;
		long s = strtol(step, &e, 10);

		if (*e || s <= 0 || s > 86400 * 7)
			return qerr(q->r, 400, "step: must be seconds in 1..604800");
		t.step_ns = s * 1000000000LL;
	}
	if (time_range(q, "", &from, &until))
		return 0;
	if ((until - from) / t.step_ns > 100000)
		return qerr(q->r, 400, "step: too many points (more than 100000)");
	if (P(q, "query")) {
		if (parse_query(q, "query", &sel, &type))
			return 0;
		t.sel = &sel;
	}
	if (!by)
		by = t.metric == TS_LOCK ? "host,class" : "host";
	else if (!strcmp(by, "none"))
		by = "";		/* one fleet-wide series (also by= empty) */
	if (!(bycopy = strdup(by)))
		goto oom;
	for (char *save = NULL, *tok = strtok_r(bycopy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char **nb = realloc(t.by, (t.nby + 1) * sizeof(*nb));

		if (!nb)
			goto oom;
		t.by = nb;
		t.by[t.nby++] = tok;
	}
	int64_t t0 = agg_now_ns();
	int by_level = 0;

	for (size_t i = 0; i < t.nby; i++)
		by_level |= !strcmp(t.by[i], "level");
	if (by_level && t.metric == TS_LOCK && !st->ops->lockrows) {
		qerr(q->r, 501, "by=level: this store keeps no lock detail");
		goto out;
	}
	if ((rc = st->ops->labelsets(st, lsdb_cb, &db)) ||
	    (rc = t.metric == TS_LOCK && by_level ? st->ops->lockrows(st, LK_CLASS, from, until, ts_lockrow_cb, &t)
	        : t.metric == TS_LOCK ? st->ops->locks(st, from, until, ts_lock_cb, &t)
				      : st->ops->windows(st, from, until, ts_win_cb, &t))) {
		store_fail(q, rc);
		goto out;
	}
	metrics_observe(&q->d->m.store_query, agg_now_ns() - t0);
	qsort(t.v, t.n, sizeof(*t.v), by_key);
	json_t *o = json_object(), *sa = json_array();
	for (size_t i = 0; i < t.n; i++) {
		struct ts_series *s = &t.v[i];
		struct tpt *pts = calloc(s->pts.n + 1, sizeof(*pts));
		size_t k = 0;
		json_t *so = json_object(), *pa = json_array();

		if (!pts) {
			json_decref(o);
			json_decref(sa);
			json_decref(so);
			json_decref(pa);
			goto oom;
		}
		for (size_t j = 0; j < s->pts.cap; j++)
			if (s->pts.keys[j]) {
				pts[k].t = (int64_t)(s->pts.keys[j] - 1) * (t.step_ns / 1000000000);
				pts[k++].v = (int64_t)s->pts.vals[j] - 1;
			}
		qsort(pts, k, sizeof(*pts), by_t);
		for (size_t j = 0; j < k; j++)
			json_array_append_new(pa, json_pack("[I, I]", (json_int_t)pts[j].t, (json_int_t)pts[j].v));
		free(pts);
		json_object_set_new(so, "labels", labels_json(&s->l));
		json_object_set_new(so, "points", pa);
		json_array_append_new(sa, so);
	}
	json_object_set_new(o, "metric", json_string(names[t.metric]));
	json_object_set_new(o, "step", json_integer(t.step_ns / 1000000000));
	json_object_set_new(o, "from", json_integer(from / 1000000000));
	json_object_set_new(o, "until", json_integer(until / 1000000000));
	json_object_set_new(o, "series", sa);
	qjson(q->r, o);
	goto out;
oom:
	qerr(q->r, 500, "out of memory");
out:
	for (size_t i = 0; i < t.n; i++) {
		free(t.v[i].key);
		agg_labels_free(&t.v[i].l);
		hmap_free(&t.v[i].pts);
	}
	free(t.v);
	hmap_free(&t.bykey);
	hmap_free(&t.byls);
	free(t.by);
	free(bycopy);
	lsdb_free(&db);
	sel_free(&sel);
	return 0;
}

/* ---- lock detail ------------------------------------------------------------ */

/* Rows of the lock detail (aggregator/locks.c) summed by a key:
 * classes by (class, level), instances by (host, addr, class, tree,
 * level, group), stacks by (class, level, stack), class x host for the
 * top hosts of each class.  One hash map from the key's hash to the row;
 * a collision is looked up properly. */
struct lkrow {
	char *key;
	char *host, *cls;
	int level, group;
	uint64_t addr, tree;
	int64_t stack;
	int64_t acquired, contended, wait_ns, wait_max_ns, hold_ns, holds, hold_max_ns, count;
	int64_t windows;
	struct hmap hosts;	/* hash(host) | 1 -> 1: distinct hosts */
	char *text;
};

struct lktab {
	struct lkrow *v;
	size_t n, cap;
	struct hmap idx;
};

static struct lkrow *lktab_get(struct lktab *t, const char *key, int *isnew)
{
	uint64_t h = folded_hash(key, strlen(key)) | 1, *ix = hmap_get(&t->idx, h);

	*isnew = 0;
	if (ix && !strcmp(t->v[*ix - 1].key, key))
		return &t->v[*ix - 1];
	for (size_t i = 0; ix && i < t->n; i++)
		if (!strcmp(t->v[i].key, key))
			return &t->v[i];
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 64;
		struct lkrow *nv = realloc(t->v, nc * sizeof(*nv));

		if (!nv)
			return NULL;
		t->v = nv;
		t->cap = nc;
	}
	memset(&t->v[t->n], 0, sizeof(t->v[0]));
	if (!(t->v[t->n].key = strdup(key)))
		return NULL;
	if (!ix && (ix = hmap_slot(&t->idx, h)))
		*ix = t->n + 1;
	*isnew = 1;
	return &t->v[t->n++];
}

static void lktab_free(struct lktab *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].key);
		free(t->v[i].host);
		free(t->v[i].cls);
		free(t->v[i].text);
		hmap_free(&t->v[i].hosts);
	}
	free(t->v);
	hmap_free(&t->idx);
	memset(t, 0, sizeof(*t));
}

struct lkscan {
	const struct lsdb *db;
	const struct selector *sel;
	struct hmap match;		/* labelset + 1 -> 1 match, 2 no match */
	const char *cls;		/* lockstacks: only this class (NULL = all) */
	int level, any_level;
	struct lktab classes, insts, stacks, chost;
	struct merged *mg;		/* lockstacks: stack id -> wait */
	int64_t total_wait;
	struct qbudget *b;
};

static int lk_match(struct lkscan *k, int64_t ls)
{
	uint64_t *m = hmap_slot(&k->match, (uint64_t)ls + 1);
	const struct lsinfo *li;

	if (!m)
		return -ENOMEM;
	if (!*m) {
		li = lsdb_find(k->db, ls);
		*m = li && (!k->sel || sel_match(k->sel, &li->l)) ? 1 : 2;
	}
	return *m == 1;
}

static int lk_add(struct lkrow *e, int isnew, const struct store_lockrow *r)
{
	uint64_t *hs = hmap_slot(&e->hosts, folded_hash(r->host, strlen(r->host)) | 1);

	if (!hs)
		return -ENOMEM;
	*hs = 1;
	if (isnew) {
		if (!(e->host = strdup(r->host)) || !(e->cls = strdup(r->cls)))
			return -ENOMEM;
		e->level = r->level;
		e->group = r->group;
		e->addr = r->addr;
		e->tree = r->tree;
		e->stack = r->stack;
	}
	isat(&e->acquired, r->acquired);
	isat(&e->contended, r->contended);
	isat(&e->wait_ns, r->wait_ns);
	isat(&e->hold_ns, r->hold_ns);
	isat(&e->holds, r->holds);
	isat(&e->count, r->count);
	e->windows++;
	if (r->wait_max_ns > e->wait_max_ns)
		e->wait_max_ns = r->wait_max_ns;
	if (r->hold_max_ns > e->hold_max_ns)
		e->hold_max_ns = r->hold_max_ns;
	return 0;
}

static int lk_cb(void *arg, const struct store_lockrow *r)
{
	struct lkscan *k = arg;
	char key[1400];
	struct lkrow *e;
	int m, isnew, rc = budget_tick(k->b);

	if (rc)
		return rc;
	m = lk_match(k, r->labelset);
	if (m <= 0)
		return m;
	switch (r->kind) {
	case LK_CLASS:
		snprintf(key, sizeof(key), "%s\x1f%d", r->cls, r->level);
		if (!(e = lktab_get(&k->classes, key, &isnew)) || (rc = lk_add(e, isnew, r)))
			return -ENOMEM;
		snprintf(key, sizeof(key), "%s\x1f%d\x1f%s", r->cls, r->level, r->host);
		if (!(e = lktab_get(&k->chost, key, &isnew)) || (rc = lk_add(e, isnew, r)))
			return -ENOMEM;
		isat(&k->total_wait, r->wait_ns);
		return 0;
	case LK_INST:
		snprintf(key, sizeof(key), "%s\x1f%llx\x1f%s\x1f%llu\x1f%d\x1f%d", r->host,
			 (unsigned long long)r->addr, r->cls, (unsigned long long)r->tree, r->level, r->group);
		if (!(e = lktab_get(&k->insts, key, &isnew)) || (rc = lk_add(e, isnew, r)))
			return -ENOMEM;
		return 0;
	default:
		if (k->cls && strcmp(k->cls, r->cls))
			return 0;
		if (!k->any_level && r->level != k->level)
			return 0;
		if (k->mg) {
			uint64_t *slot = hmap_slot(&k->mg->m, (uint64_t)r->stack + 1);

			if (!slot)
				return -ENOMEM;
			*slot = sat_add(*slot, (uint64_t)r->wait_ns, &k->mg->saturated);
			k->mg->total = sat_add(k->mg->total, (uint64_t)r->wait_ns, &k->mg->saturated);
			return 0;
		}
		snprintf(key, sizeof(key), "%s\x1f%d\x1f%lld", r->cls, r->level, (long long)r->stack);
		if (!(e = lktab_get(&k->stacks, key, &isnew)) || (rc = lk_add(e, isnew, r)))
			return -ENOMEM;
		return 0;
	}
}

static int by_wait_desc(const void *a, const void *b)
{
	const struct lkrow *x = a, *y = b;

	if (x->wait_ns != y->wait_ns)
		return x->wait_ns < y->wait_ns ? 1 : -1;
	return strcmp(x->key, y->key);
}

static void lkscan_free(struct lkscan *k)
{
	lktab_free(&k->classes);
	lktab_free(&k->insts);
	lktab_free(&k->stacks);
	lktab_free(&k->chost);
	hmap_free(&k->match);
}

/* class=NAME and level=N|all of lockstacks; 0 or -1 (answered). */
static int lk_params(struct qctx *q, struct lkscan *k)
{
	const char *c = P(q, "class"), *l = P(q, "level");

	k->any_level = 1;
	if (c) {
		for (const char *p = c; *p; p++)
			if (!(*p == '_' || *p == '.' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			      (*p >= '0' && *p <= '9')))
				return qerr(q->r, 400, "class: not a lock class name"), -1;
		k->cls = c;
	}
	if (l && strcmp(l, "all")) {
		char *e;
		long v = strtol(l, &e, 10);

		if (*e || v < -1 || v > 1024)
			return qerr(q->r, 400, "level: a B-tree level (-1 = not a node lock) or all"), -1;
		k->level = (int)v;
		k->any_level = 0;
	}
	return 0;
}

/* Scan KINDS (bit per enum store_lock_kind) for the query's selection. */
static int lk_scan(struct qctx *q, struct lkscan *k, unsigned kinds, int64_t from, int64_t until,
		   struct selector *sel, struct lsdb *db)
{
	struct store *st = q->d->store;
	int64_t t0 = agg_now_ns();
	int rc = 0, type;

	if (P(q, "query")) {
		if (parse_query(q, "query", sel, &type))
			return -1;
		k->sel = sel;
	}
	k->db = db;
	k->b = &q->b;
	if (!st->ops->lockrows) {
		qerr(q->r, 501, "this store keeps no lock detail");
		return -1;
	}
	if ((rc = st->ops->labelsets(st, lsdb_cb, db)))
		goto out;
	for (int kind = LK_CLASS; !rc && kind <= LK_STACK; kind++)
		if (kinds & (1u << kind))
			rc = st->ops->lockrows(st, kind, from, until, lk_cb, k);
out:
	metrics_observe(&q->d->m.store_query, agg_now_ns() - t0);
	if (rc) {
		store_fail(q, rc);
		return -1;
	}
	return 0;
}

static int lk_texts(struct store *st, struct lktab *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int rc = st->ops->stack_text(st, t->v[i].stack, &t->v[i].text);

		if (rc)
			return rc;
	}
	return 0;
}

/* GET /api/v1/locks: the fleet's lock table. */
static int q_locks(struct qctx *q)
{
	struct lkscan k = { 0 };
	struct selector sel = { 0 };
	struct lsdb db = { 0 };
	int64_t from, until;
	long n = 20;
	json_t *o, *ca, *ia, *sa;

	if (P(q, "n")) {
		char *e;

		n = strtol(P(q, "n"), &e, 10);
		if (*e || n < 1 || n > 1000)
			return qerr(q->r, 400, "n: must be 1..1000");
	}
	if (time_range(q, "", &from, &until))
		return 0;
	k.any_level = 1;
	if (lk_scan(q, &k, 7, from, until, &sel, &db))
		goto out;
	qsort(k.classes.v, k.classes.n, sizeof(struct lkrow), by_wait_desc);
	qsort(k.insts.v, k.insts.n, sizeof(struct lkrow), by_wait_desc);
	qsort(k.stacks.v, k.stacks.n, sizeof(struct lkrow), by_wait_desc);
	qsort(k.chost.v, k.chost.n, sizeof(struct lkrow), by_wait_desc);
	{
		int rc = lk_texts(q->d->store, &k.stacks, k.stacks.n < (size_t)n ? k.stacks.n : (size_t)n);

		if (rc) {
			qerr(q->r, 503, "store: %s", strerror(-rc));
			goto out;
		}
	}
	o = json_object();
	ca = json_array();
	ia = json_array();
	sa = json_array();
	for (size_t i = 0; i < k.classes.n; i++) {
		struct lkrow *c = &k.classes.v[i];
		json_t *th = json_array();

		/* chost is sorted by wait: the first three of this class */
		for (size_t j = 0; j < k.chost.n && json_array_size(th) < 3; j++)
			if (!strcmp(k.chost.v[j].cls, c->cls) && k.chost.v[j].level == c->level &&
			    k.chost.v[j].wait_ns > 0)
				json_array_append_new(th, json_pack("{s:s, s:I}", "host", k.chost.v[j].host,
						      "wait_ns", (json_int_t)k.chost.v[j].wait_ns));
		json_array_append_new(ca, json_pack("{s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
			"class", c->cls, "level", c->level, "acquired", (json_int_t)c->acquired,
			"contended", (json_int_t)c->contended, "wait_ns", (json_int_t)c->wait_ns,
			"wait_max_ns", (json_int_t)c->wait_max_ns, "hold_ns", (json_int_t)c->hold_ns,
			"holds", (json_int_t)c->holds, "hold_max_ns", (json_int_t)c->hold_max_ns,
			"hosts", (json_int_t)c->hosts.n, "top_hosts", th));
	}
	for (size_t i = 0; i < k.insts.n && i < (size_t)n; i++) {
		struct lkrow *in = &k.insts.v[i];
		char addr[24];

		snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)in->addr);
		json_array_append_new(ia, json_pack("{s:s, s:s, s:s, s:I, s:i, s:i, s:I, s:I, s:I, s:I, s:I}",
			"host", in->host, "addr", addr, "class", in->cls, "tree", (json_int_t)in->tree,
			"level", in->level, "group", in->group, "acquired", (json_int_t)in->acquired,
			"contended", (json_int_t)in->contended, "wait_ns", (json_int_t)in->wait_ns,
			"wait_max_ns", (json_int_t)in->wait_max_ns, "windows", (json_int_t)in->windows));
	}
	for (size_t i = 0; i < k.stacks.n && i < (size_t)n; i++) {
		struct lkrow *st = &k.stacks.v[i];

		json_array_append_new(sa, json_pack("{s:s, s:i, s:s, s:I, s:I, s:I}",
			"class", st->cls, "level", st->level, "stack", st->text ? st->text : "",
			"wait_ns", (json_int_t)st->wait_ns, "count", (json_int_t)st->count,
			"hosts", (json_int_t)st->hosts.n));
	}
	json_object_set_new(o, "from", json_integer(from / 1000000000));
	json_object_set_new(o, "until", json_integer(until / 1000000000));
	json_object_set_new(o, "wait_ns", json_integer(k.total_wait));
	json_object_set_new(o, "classes", ca);
	json_object_set_new(o, "instances", ia);
	json_object_set_new(o, "stacks", sa);
	qjson(q->r, o);
out:
	lkscan_free(&k);
	lsdb_free(&db);
	sel_free(&sel);
	return 0;
}

/* GET /api/v1/lockstacks: the waiters' stacks of one class (and level),
 * merge-shaped (json, folded, svg) so the flame-graph view draws them. */
static int q_lockstacks(struct qctx *q)
{
	struct lkscan k = { 0 };
	struct selector sel = { 0 };
	struct lsdb db = { 0 };
	struct merged mg = { 0 };
	int64_t from, until;
	long limit;
	const char *fmt = merge_format(q, &limit);
	char title[160];
	int rc;

	if (!*fmt || time_range(q, "", &from, &until) || lk_params(q, &k))
		return 0;
	k.mg = &mg;
	if (lk_scan(q, &k, 1u << LK_STACK, from, until, &sel, &db))
		goto out;
	if ((rc = materialise(q->d->store, &mg))) {
		qerr(q->r, 503, "store: %s", strerror(-rc));
		goto out;
	}
	if (k.any_level)
		snprintf(title, sizeof(title), "Waiters of %s locks", k.cls ? k.cls : "all");
	else
		snprintf(title, sizeof(title), "Waiters of %s locks at B-tree level %d", k.cls ? k.cls : "all", k.level);
	reply_merged(q, &mg, fmt, limit, PT_LOCKWAIT, from, until, title);
out:
	merged_free(&mg);
	lkscan_free(&k);
	lsdb_free(&db);
	sel_free(&sel);
	return 0;
}

/* ---- dispatch --------------------------------------------------------------- */

int query_dispatch(struct aggd *d, const char *path, query_get_fn get, void *ctx,
		   struct qresult *r)
{
	static const struct { const char *path; int (*fn)(struct qctx *); } routes[] = {
		{ "/api/v1/merge", q_merge },
		{ "/api/v1/render", q_merge },
		{ "/api/v1/top", q_top },
		{ "/api/v1/diff", q_diff },
		{ "/api/v1/outliers", q_outliers },
		{ "/api/v1/hosts", q_hosts },
		{ "/api/v1/labels", q_labels },
		{ "/api/v1/timeseries", q_timeseries },
		{ "/api/v1/locks", q_locks },
		{ "/api/v1/lockstacks", q_lockstacks },
	};
	struct qctx q = { .d = d, .get = get, .ctx = ctx, .r = r, .now = agg_now_ns() };

	q.b.max_rows = d->cfg.max_query_rows ? d->cfg.max_query_rows : UINT64_MAX;
	q.b.max_ns = d->cfg.max_query_ns > 0 ? d->cfg.max_query_ns : INT64_MAX / 2;
	q.b.deadline_ns = q.now + q.b.max_ns;

	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (!strcmp(path, routes[i].path)) {
			int rc;

			atomic_fetch_add(&d->m.queries, 1);
			store_set_deadline(d->cfg.max_query_ns > 0 ? q.b.deadline_ns : 0);
			rc = routes[i].fn(&q);
			store_set_deadline(0);
			return rc;
		}
	return -ENOENT;
}
