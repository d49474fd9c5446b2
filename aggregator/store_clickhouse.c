/*
 * store_clickhouse.c — the ClickHouse engine, over HTTP (:8123) with
 * libcurl.  Written for Debian's clickhouse-server 18.16 and current
 * ClickHouse alike: no query parameters (values are escaped here), no
 * TTL, no LowCardinality; retention by ALTER TABLE ... DELETE.
 *
 * Tables (created on first open, in database DB of clickhouse://H:P/DB):
 *   stacks(id UInt64, text String)                  ReplacingMergeTree, ORDER BY id
 *   labelsets(id UInt64, canon String, host String)  ReplacingMergeTree, ORDER BY id
 *   windows(id UInt64, wkey, host, ls, start_ns, end_ns, recv_ns, summaries
 *           (-1 = absent), tot0..tot4, units)        MergeTree ORDER BY (start_ns, id)
 *   locks(win UInt64, ls, host, start_ns, cls, ns)   MergeTree ORDER BY (start_ns, win)
 *   samples(type, ls, t, win, stack, count)          MergeTree ORDER BY (type, ls, t)
 *   lockclasses, lockinst, lockstacks                MergeTree ORDER BY (start_ns, win)
 *           the lock detail (aggregator/locks.c), each row with the
 *           window's win, ls, host, start_ns like locks
 * The same names and columns as the SQLite engine (samples unpacked: one
 * row per stack), so SQL dashboards read either.  Stack, label-set and
 * window ids are 64-bit hashes (folded_hash of the stack, the canonical
 * labels, the window id), so every aggd and every shard agrees on them
 * without coordination.
 *
 * Atomicity: ClickHouse has no multi-table transaction.  One window is
 * written as one INSERT per table (each INSERT block is atomic), window row
 * last; a window id already present is a duplicate (checked under this
 * process's write lock — one aggd per store).  A crash (or a failed INSERT)
 * between the samples and the window INSERT leaves samples and lock-wait
 * rows of a window that is not stored; before the next batch is written
 * (and at open, before any ingest) such rows of ingested windows are
 * deleted and the delete waited for (ch_drop_orphans), so the client's
 * retry stores the window once.  Lock detail rows cannot be told from
 * those downsampling left behind that way, so a batch first deletes any
 * lock detail stored under the ids of its new windows
 * (ch_drop_lock_leftovers; tests/aggregator/killingest.test).
 *
 * Cluster: clickhouse://HOST:PORT/DB?cluster=NAME (NAME in the server's
 * remote_servers).  Each table above is then X_local (the same engine) in
 * every shard replica's database (its default_database, else DB), created
 * through that replica's HTTP interface (host_address from system.clusters,
 * the same HTTP port as HOST), and X in DB is a Distributed table over them
 * sharded by label set (stacks and labelsets by id): one host's data stays
 * on one shard.  Reads and writes go through the Distributed tables
 * (inserts with insert_distributed_sync=1, so a stored window is readable
 * at once); retention's ALTER ... DELETE runs on every replica's local
 * tables.
 *
 * Downsampling (retain, per tier): the windows below the tier's level that
 * start before its cut are summed server-side (INSERT ... SELECT ... GROUP
 * BY) into one window per (label set, bucket) -- wkey "coarse:PASS:LS:B"
 * (tier 1) or "coarse2:PASS:LS:B", the same summary rules as the SQLite
 * engine -- checked against their sources, then the sources are deleted
 * with ALTER ... DELETE.  A pass is journaled (table passes) and every row
 * it writes carries its id (column pass), so queries never count a sample
 * twice or lose one, and a pass killed at any point is undone or finished
 * on the next start: see "downsampling passes" below.
 */
#include "aggregator/store.h"
#include "aggregator/hmap.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <curl/curl.h>

struct ch_store {
	struct store base;
	char *url;		/* http://host:port/?database=DB[&insert_distributed_sync=1] */
	char *db, *cluster;	/* cluster: NULL = plain MergeTree tables in DB */
	char **shard_url;	/* clustered: every shard replica's HTTP endpoint */
	char **shard_db;	/* ... and the database holding its *_local tables */
	size_t nshards;
	pthread_mutex_t wlock;
	pthread_key_t ckey;	/* per-thread CURL handle */
	struct hmap known;	/* stack/labelset ids this process stored (klock) */
	pthread_mutex_t klock;
	/* put's group commit: queued windows, and whether a put is writing */
	pthread_mutex_t qlock;	/* guards qhead, qtail, leader, each job's done */
	pthread_cond_t qcond;
	struct ch_job *qhead, **qtail;
	int leader;
	int orphans;		/* a batch may have left rows of unstored windows (wlock) */
	unsigned long long nput;	/* batches written: their INSERTs' query_id (wlock) */
	/* Downsampling passes not finished (running, or left by a crash):
	 * queries leave out what such a pass must hide.  Changed under wlock
	 * and hlock, read under hlock. */
	pthread_mutex_t hlock;
	struct ch_pass { uint64_t pass; int tier, state; int64_t cut, recv, bucket; } open[8];
	int nopen;
};

/* A pass's states, as rows of the passes table (the highest counts). */
enum { PASS_STAGING = 1, PASS_WRITTEN = 2, PASS_DONE = 3, PASS_UNDONE = 4 };

struct buf { char *p; size_t n, cap; };

static int buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 4096;
		char *np;

		while (nc < b->n + n + 1)
			nc *= 2;
		if (!(np = realloc(b->p, nc)))
			return -ENOMEM;
		b->p = np;
		b->cap = nc;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
	return 0;
}

static int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int buf_printf(struct buf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -EINVAL;
	return buf_add(b, tmp, n);
}

/* TabSeparated field escaping (also valid inside a quoted SQL literal
 * once ' is escaped too). */
static int buf_tsv(struct buf *b, const char *s, int sql)
{
	for (; *s; s++) {
		const char *e = NULL;
		char c[2] = { *s, 0 };

		switch (*s) {
		case '\\': e = "\\\\"; break;
		case '\t': e = "\\t"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\'': e = sql ? "\\'" : "'"; break;
		default: e = c; break;
		}
		if (buf_add(b, e, strlen(e)))
			return -ENOMEM;
	}
	return 0;
}

/* Undo TabSeparated escaping in place; returns the new length. */
static size_t tsv_unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (*r != '\\' || !r[1]) {
			*w++ = *r;
			continue;
		}
		r++;
		switch (*r) {
		case 't': *w++ = '\t'; break;
		case 'n': *w++ = '\n'; break;
		case 'r': *w++ = '\r'; break;
		case '0': *w++ = 0; break;
		default: *w++ = *r; break;
		}
	}
	*w = 0;
	return w - s;
}

static size_t sink(char *p, size_t sz, size_t n, void *arg)
{
	return buf_add(arg, p, sz * n) ? 0 : sz * n;
}

static CURL *handle(struct ch_store *s)
{
	CURL *c = pthread_getspecific(s->ckey);

	if (!c && (c = curl_easy_init()))
		pthread_setspecific(s->ckey, c);
	return c;
}

/* POST BODY (a query, or "INSERT ... FORMAT TabSeparated\n" + rows) and
 * collect the answer.  Returns 0 or -EIO (message on stderr). */
static int ch_post_url(struct ch_store *s, const char *url, const char *body, size_t len,
		       struct buf *out)
{
	CURL *c = handle(s);
	struct buf tmp = { 0 };
	int64_t dl = store_deadline(), left = 0;
	char *durl = NULL;
	long code = 0;
	CURLcode cr;

	if (!c)
		return -ENOMEM;
	if (!out)
		out = &tmp;
	if (dl > 0) {	/* a query's time budget holds inside one ClickHouse query too */
		if ((left = (dl - agg_now_ns() + 999999999) / 1000000000) <= 0)
			return -ETIMEDOUT;
		if (asprintf(&durl, "%s&max_execution_time=%lld&timeout_overflow_mode=throw", url,
			     (long long)left) < 0)
			return -ENOMEM;
		url = durl;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	/* past the budget, a server that does not stop is cut here (+2 s for
	 * ClickHouse's own answer to arrive first) */
	curl_easy_setopt(c, CURLOPT_TIMEOUT, dl > 0 && left + 2 < 60 ? (long)left + 2 : 60L);
	cr = curl_easy_perform(c);
	free(durl);
	if (cr == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (cr != CURLE_OK || code != 200) {
		/* ClickHouse's TIMEOUT_EXCEEDED is error code 159 */
		int cut = dl > 0 && (cr == CURLE_OPERATION_TIMEDOUT ||
				     (out->p && strstr(out->p, "Code: 159")));

		fprintf(stderr, "glass-aggd: clickhouse: %s: %.300s\n",
			cr != CURLE_OK ? curl_easy_strerror(cr) : "HTTP error", out->p ? out->p : "");
		free(tmp.p);
		return cut ? -ETIMEDOUT : -EIO;
	}
	free(tmp.p);
	return 0;
}

static int ch_post(struct ch_store *s, const char *body, size_t len, struct buf *out)
{
	return ch_post_url(s, s->url, body, len, out);
}

static int ch_exec(struct ch_store *s, const char *sql)
{
	return ch_post(s, sql, strlen(sql), NULL);
}

/* Run a SELECT and hand each TSV line's fields (unescaped) to CB. */
typedef int (*row_cb)(void *arg, char **f, int nf);
static int ch_select(struct ch_store *s, const char *sql, row_cb cb, void *arg)
{
	struct buf out = { 0 };
	int rc = ch_post(s, sql, strlen(sql), &out);
	char *line, *save = NULL;

	if (rc || !out.p) {
		free(out.p);
		return rc;
	}
	for (line = strtok_r(out.p, "\n", &save); line && !rc; line = strtok_r(NULL, "\n", &save)) {
		char *f[16];
		int nf = 0;

		for (char *p = line; nf < 16;) {
			char *t = strchr(p, '\t');

			f[nf++] = p;
			if (!t)
				break;
			*t = 0;
			p = t + 1;
		}
		for (int i = 0; i < nf; i++)
			tsv_unescape(f[i]);
		rc = cb(arg, f, nf);
	}
	free(out.p);
	return rc;
}

/* ---- put ---------------------------------------------------------------- */

/* Ingest names its columns: pass (the downsampling pass that wrote a row)
 * takes its default, 0 = as ingested. */
#define SAMPLES_INS "INSERT INTO samples (type, ls, t, win, stack, count) FORMAT TabSeparated\n"
#define LOCKS_INS "INSERT INTO locks (win, ls, host, start_ns, cls, ns) FORMAT TabSeparated\n"
#define WINDOWS_INS "INSERT INTO windows (id, wkey, host, ls, start_ns, end_ns, recv_ns, commit_p99_ns," \
	" commit_count, trim_stall_ns, lock_wait_ns, tot0, tot1, tot2, tot3, tot4, units) FORMAT TabSeparated\n"

static int count_cb(void *arg, char **f, int nf)
{
	*(long long *)arg = nf ? atoll(f[0]) : 0;
	return 0;
}

/* Wait up to SECONDS for the server to run no query whose query_id starts
 * with PREFIX ([A-Za-z0-9_-] only).  A client that dies (or gives up)
 * after sending a query does not stop it: ClickHouse finishes an INSERT
 * whose body it has, so what a dead write leaves is known only once its
 * queries have ended.  -EBUSY if they still run. */
static int ch_wait_queries(struct ch_store *s, const char *prefix, int seconds)
{
	char q[300];
	long long n = 1;
	int rc = 0;

	snprintf(q, sizeof(q), "SELECT count() FROM system.processes WHERE query_id LIKE '%s%%'"
		 " FORMAT TabSeparated", prefix);
	for (int i = 0; i < seconds * 10 && n && !rc; i++)
		if (!(rc = ch_select(s, q, count_cb, &n)) && n)
			usleep(100000);
	if (!rc && n)
		fprintf(stderr, "glass-aggd: clickhouse: queries %s* still running after %d s\n", prefix, seconds);
	return rc ? rc : n ? -EBUSY : 0;
}

/* The query_id prefix of ingest's INSERTs into this store's database:
 * glass-put-DB-, then PID-BATCH-TABLE. */
static void put_prefix(const struct ch_store *s, char *b, size_t n)
{
	snprintf(b, n, "glass-put-%s-", s->db);
}

/* ---- put: group commit ---------------------------------------------------
 *
 * Each put formats its window's rows (one buffer per table) on its own
 * thread and queues them; the first queued put becomes the leader, takes
 * every queued window (up to CH_BATCH_BYTES), and writes them all with one
 * duplicate check and one INSERT per table -- windows rows last -- while
 * later puts queue behind it.  Every put returns only once its own window
 * is written (or refused): nothing is acknowledged early, and a lone agent
 * waits for no timer.  ClickHouse makes a part per INSERT, so fewer,
 * larger INSERTs are what it wants (tests/bench/aggregator.bench).
 */
enum { T_STACKS, T_SAMPLES, T_LOCKS, T_LOCKCLASSES, T_LOCKINST, T_LOCKSTACKS, T_LABELSETS,
       T_WINDOWS, T_NPUT };
static const char *const put_head[T_NPUT] = {
	[T_STACKS] = "INSERT INTO stacks FORMAT TabSeparated\n",
	[T_SAMPLES] = SAMPLES_INS,
	[T_LOCKS] = LOCKS_INS,
	[T_LOCKCLASSES] = "INSERT INTO lockclasses FORMAT TabSeparated\n",
	[T_LOCKINST] = "INSERT INTO lockinst FORMAT TabSeparated\n",
	[T_LOCKSTACKS] = "INSERT INTO lockstacks FORMAT TabSeparated\n",
	[T_LABELSETS] = "INSERT INTO labelsets FORMAT TabSeparated\n",
	[T_WINDOWS] = WINDOWS_INS,
};
#define CH_BATCH_BYTES (32u << 20)

struct ch_job {
	struct buf rows[T_NPUT];	/* TSV rows, no INSERT line */
	char *wkey;
	uint64_t wid, ls, *hashes;	/* hashes: stacks sent, known once written */
	size_t nhashes;
	int rc, duplicate, done;
	struct ch_job *next;
};

static void job_free(struct ch_job *j)
{
	for (int t = 0; t < T_NPUT; t++)
		free(j->rows[t].p);
	free(j->wkey);
	free(j->hashes);
	free(j);
}

/* A stack row, unless this process already stored it. */
static int job_stack(struct ch_store *s, struct ch_job *j, const struct folded_stack *fs)
{
	int known;

	pthread_mutex_lock(&s->klock);
	known = hmap_get(&s->known, fs->hash | 1) != NULL;
	pthread_mutex_unlock(&s->klock);
	if (known)
		return 0;
	j->hashes[j->nhashes++] = fs->hash;
	if (buf_printf(&j->rows[T_STACKS], "%llu\t", (unsigned long long)fs->hash) ||
	    buf_tsv(&j->rows[T_STACKS], fs->stack, 0) || buf_add(&j->rows[T_STACKS], "\n", 1))
		return -ENOMEM;
	return 0;
}

/* The lock detail's rows (aggregator/locks.c). */
static int job_lockdetail(struct ch_job *j, const struct agg_window *w, uint64_t wid, uint64_t ls)
{
	const struct agg_lockdetail *lk = &w->lk;
	struct buf *b;
	char pre[128];
	int n = snprintf(pre, sizeof(pre), "%llu\t%llu\t", (unsigned long long)wid, (unsigned long long)ls);

	b = &j->rows[T_LOCKCLASSES];
	for (size_t i = 0; i < lk->ncls; i++) {
		const struct agg_lockclass *c = &lk->cls[i];

		if (buf_add(b, pre, n) || buf_tsv(b, w->host, 0) ||
		    buf_printf(b, "\t%lld\t", (long long)w->start_ns) || buf_tsv(b, c->cls, 0) ||
		    buf_printf(b, "\t%d\t%d\t%lld\t%lld\t%lld", c->level, c->mode, (long long)c->acquired,
			       (long long)c->contended, (long long)c->wait_ns) ||
		    buf_printf(b, "\t%lld\t%lld\t%lld\t%lld\n", (long long)c->wait_max_ns,
			       (long long)c->hold_ns, (long long)c->holds, (long long)c->hold_max_ns))
			return -ENOMEM;
	}
	b = &j->rows[T_LOCKINST];
	for (size_t i = 0; i < lk->ninst; i++) {
		const struct agg_lockinst *in = &lk->inst[i];

		if (buf_add(b, pre, n) || buf_tsv(b, w->host, 0) ||
		    buf_printf(b, "\t%lld\t%llu\t", (long long)w->start_ns, (unsigned long long)in->addr) ||
		    buf_tsv(b, in->cls, 0) ||
		    buf_printf(b, "\t%llu\t%d\t%d\t%lld", (unsigned long long)in->tree, in->level, in->group,
			       (long long)in->acquired) ||
		    buf_printf(b, "\t%lld\t%lld\t%lld\n", (long long)in->contended, (long long)in->wait_ns,
			       (long long)in->wait_max_ns))
			return -ENOMEM;
	}
	b = &j->rows[T_LOCKSTACKS];
	for (size_t i = 0; i < lk->nstk; i++) {
		const struct agg_lockstack *k = &lk->stk[i];

		if (buf_add(b, pre, n) || buf_tsv(b, w->host, 0) ||
		    buf_printf(b, "\t%lld\t", (long long)w->start_ns) || buf_tsv(b, k->cls, 0) ||
		    buf_printf(b, "\t%d\t%llu\t%lld\t%lld\n", k->level, (unsigned long long)k->fs.hash,
			       (long long)k->wait_ns, (long long)k->count))
			return -ENOMEM;
	}
	return 0;
}

/* Format window W's rows into a new job.  0 or -ENOMEM. */
static int job_make(struct ch_store *s, const struct agg_window *w, struct ch_job **out)
{
	struct ch_job *j = calloc(1, sizeof(*j));
	char *canon = agg_labels_canon(&w->labels);
	size_t nst = w->lk.nstk;
	int64_t locksum, tot[PT_NTYPES];
	uint64_t wid;
	_Static_assert(PT_NTYPES == 5, "windows has tot0..tot4: one column per profile type");
	int units, known, rc = -ENOMEM;

	if (!j || !canon || !(j->wkey = strdup(w->window_id)))
		goto fail;
	for (size_t p = 0; p < w->nprof; p++)
		nst += folded_set_size(w->prof[p].set);
	if (!(j->hashes = malloc((nst + 1) * sizeof(*j->hashes))))
		goto fail;
	j->ls = folded_hash(canon, strlen(canon));
	wid = j->wid = folded_hash(w->window_id, strlen(w->window_id));
	store_window_sums(w, tot, &units, &locksum);
	for (size_t p = 0; p < w->nprof; p++)
		for (size_t i = 0; i < folded_set_size(w->prof[p].set); i++) {
			const struct folded_stack *fs = folded_set_get(w->prof[p].set, i);

			if (job_stack(s, j, fs) ||
			    buf_printf(&j->rows[T_SAMPLES], "%d\t%llu\t%lld\t%llu\t%llu\t%llu\n", w->prof[p].type,
				       (unsigned long long)j->ls, (long long)w->start_ns,
				       (unsigned long long)wid, (unsigned long long)fs->hash,
				       (unsigned long long)fs->count))
				goto fail;
		}
	for (size_t i = 0; i < w->nlocks; i++) {
		struct buf *b = &j->rows[T_LOCKS];

		if (buf_printf(b, "%llu\t%llu\t", (unsigned long long)wid, (unsigned long long)j->ls) ||
		    buf_tsv(b, w->host, 0) || buf_printf(b, "\t%lld\t", (long long)w->start_ns) ||
		    buf_tsv(b, w->locks[i].cls, 0) || buf_printf(b, "\t%lld\n", (long long)w->locks[i].ns))
			goto fail;
	}
	/* the waiters' stacks go to stacks too */
	for (size_t i = 0; i < w->lk.nstk; i++)
		if (job_stack(s, j, &w->lk.stk[i].fs))
			goto fail;
	if (job_lockdetail(j, w, wid, j->ls))
		goto fail;
	pthread_mutex_lock(&s->klock);
	known = hmap_get(&s->known, j->ls | 1) != NULL;
	pthread_mutex_unlock(&s->klock);
	if (!known && (buf_printf(&j->rows[T_LABELSETS], "%llu\t", (unsigned long long)j->ls) ||
		       buf_tsv(&j->rows[T_LABELSETS], canon, 0) || buf_add(&j->rows[T_LABELSETS], "\t", 1) ||
		       buf_tsv(&j->rows[T_LABELSETS], w->host, 0) || buf_add(&j->rows[T_LABELSETS], "\n", 1)))
		goto fail;
	struct buf *b = &j->rows[T_WINDOWS];
	if (buf_printf(b, "%llu\t", (unsigned long long)wid) ||
	    buf_tsv(b, w->window_id, 0) || buf_add(b, "\t", 1) || buf_tsv(b, w->host, 0) ||
	    buf_printf(b, "\t%llu\t%lld\t%lld\t%lld\t%lld\t%lld\t%lld\t%lld", (unsigned long long)j->ls,
		       (long long)w->start_ns, (long long)w->end_ns, (long long)agg_now_ns(),
		       (long long)w->commit_p99_ns, (long long)w->commit_count,
		       (long long)w->trim_stall_ns, (long long)locksum) ||
	    buf_printf(b, "\t%lld\t%lld\t%lld\t%lld\t%lld\t%d\n", (long long)tot[0], (long long)tot[1],
		       (long long)tot[2], (long long)tot[3], (long long)tot[4], units))
		goto fail;
	free(canon);
	*out = j;
	return 0;
fail:
	free(canon);
	if (j)
		job_free(j);
	return rc;
}

struct dupscan { char **keys; size_t n; int err; };
static int dup_row(void *arg, char **f, int nf)
{
	struct dupscan *d = arg;
	char **nk;

	if (nf < 1)
		return 0;
	if (!(nk = realloc(d->keys, (d->n + 1) * sizeof(*nk))) || !(nk[d->n] = strdup(f[0]))) {
		if (nk)
			d->keys = nk;
		return -ENOMEM;
	}
	d->keys = nk;
	d->n++;
	return 0;
}

/* Write the jobs of one batch (wlock held): one duplicate check, then one
 * INSERT per table, windows last.  Sets each job's rc and duplicate. */
static int ch_wait_mutations(struct ch_store *s, int seconds);

/* Delete the samples and lock-wait rows of ingested windows (pass 0) that
 * windows does not hold: what a batch killed or failed between its
 * INSERTs left.  Sharded by label set, so each replica's rows belong to
 * windows in its own windows_local.  Called with wlock held and no batch
 * in flight, so no window being written is taken for an orphan. */
static int ch_drop_orphans(struct ch_store *s)
{
	static const char *const tabs[] = { "samples", "locks" };
	const char *loc = s->cluster ? "_local" : "";
	char prefix[192];
	int rc = 0, any = 0;

	/* an INSERT of a killed process (or one this process gave up on) may
	 * still be running: rows it adds after the delete below would stay
	 * as orphans, and the retried window would count twice
	 * (killingest.test, KILLS=40: 2 runs in 3 doubled before this wait) */
	put_prefix(s, prefix, sizeof(prefix));
	if ((rc = ch_wait_queries(s, prefix, 120)))
		return rc;
	for (size_t t = 0; t < 2 && !rc; t++)
		for (size_t i = 0; i < (s->cluster ? s->nshards : 1) && !rc; i++) {
			const char *url = s->cluster ? s->shard_url[i] : s->url;
			struct buf out = { 0 };
			char q[400];

			snprintf(q, sizeof(q), "SELECT count() FROM %s%s WHERE pass = 0 AND win NOT IN"
				 " (SELECT id FROM windows%s) FORMAT TabSeparated", tabs[t], loc, loc);
			rc = ch_post_url(s, url, q, strlen(q), &out);
			if (!rc && out.p && atoll(out.p) > 0) {
				fprintf(stderr, "glass-aggd: clickhouse: deleting %lld %s rows of windows never "
					"stored (a write cut short); their retry stores them once\n",
					atoll(out.p), tabs[t]);
				snprintf(q, sizeof(q), "ALTER TABLE %s%s DELETE WHERE pass = 0 AND win NOT IN"
					 " (SELECT id FROM windows%s)", tabs[t], loc, loc);
				rc = ch_post_url(s, url, q, strlen(q), NULL);
				any = 1;
			}
			free(out.p);
		}
	if (!rc && any)
		rc = ch_wait_mutations(s, 120);
	if (!rc)
		s->orphans = 0;
	return rc;
}

static int ch_alter_all(struct ch_store *s, const char *table, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
struct winlist { struct buf b; int n; };
static int leftover_row(void *arg, char **f, int nf)
{
	struct winlist *l = arg;

	if (nf < 1)
		return 0;
	l->n++;
	return buf_printf(&l->b, "%s%s", l->b.n ? "," : "", f[0]) ? -ENOMEM : 0;
}

/* Delete the lock detail rows (lockclasses, lockinst, lockstacks) already
 * stored under the ids of the batch's new windows.  ch_drop_orphans cannot
 * find these: downsampling leaves lock detail rows under the ids of windows
 * it deleted, so "win not in windows" is no orphan test for them.  But a
 * window the duplicate check found new has no stored lock detail unless a
 * write of it was cut short (a crash or a failed INSERT between its lock
 * rows and its window row) -- those rows go, and its retry stores them
 * once.  One SELECT per batch that carries lock detail; the delete (and
 * its wait) only when there is something to delete.  wlock held. */
static int ch_drop_lock_leftovers(struct ch_store *s, struct ch_job *batch)
{
	static const char *const tabs[] = { "lockclasses", "lockinst", "lockstacks" };
	struct buf ids = { 0 }, q = { 0 };
	struct winlist found = { { 0 }, 0 };
	int rc = 0;

	for (struct ch_job *j = batch; j && !rc; j = j->next)
		if (!j->duplicate && (j->rows[T_LOCKCLASSES].n || j->rows[T_LOCKINST].n ||
				      j->rows[T_LOCKSTACKS].n))
			rc = buf_printf(&ids, "%s%llu", ids.n ? "," : "", (unsigned long long)j->wid);
	if (rc || !ids.n)
		goto out;
	rc = buf_add(&q, "SELECT DISTINCT win FROM (", 26);
	for (size_t t = 0; t < 3 && !rc; t++)
		rc = buf_printf(&q, "%sSELECT win FROM %s WHERE win IN (", t ? " UNION ALL " : "", tabs[t]) ||
		     buf_add(&q, ids.p, ids.n) || buf_add(&q, ")", 1);
	if (!rc)
		rc = buf_add(&q, ") FORMAT TabSeparated", 21);
	if (rc) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = ch_select(s, q.p, leftover_row, &found)) || !found.n)
		goto out;
	fprintf(stderr, "glass-aggd: clickhouse: deleting the lock detail rows of %d windows never stored"
		" (a write cut short); their retry stores them once\n", found.n);
	/* ids found are few (the windows of batches a crash cut short); the
	 * WHERE of ch_alter_all holds ~40 of them */
	for (char *p = found.b.p; p && *p && !rc;) {
		char *e = p;

		for (int k = 0; k < 40 && (e = strchr(e, ',')); k++)
			e++;
		if (e)
			e[-1] = 0;
		for (size_t t = 0; t < 3 && !rc; t++)
			rc = ch_alter_all(s, tabs[t], "win IN (%s)", p);
		p = e ? e : p + strlen(p);
	}
	if (!rc)
		rc = ch_wait_mutations(s, 120);
out:
	free(ids.p);
	free(q.p);
	free(found.b.p);
	return rc;
}

static void ch_write_batch(struct ch_store *s, struct ch_job *batch)
{
	struct buf q = { 0 }, body[T_NPUT] = { { 0 } };
	struct dupscan ds = { 0 };
	int rc;

	if (s->orphans && (rc = ch_drop_orphans(s))) {
		for (struct ch_job *j = batch; j; j = j->next)
			j->rc = rc;
		return;
	}
	rc = buf_add(&q, "SELECT wkey FROM windows WHERE wkey IN (", 40);
	for (struct ch_job *j = batch; j && !rc; j = j->next)
		rc = buf_add(&q, j == batch ? "'" : ",'", j == batch ? 1 : 2) || buf_tsv(&q, j->wkey, 1) ||
		     buf_add(&q, "'", 1);
	if (!rc)
		rc = buf_add(&q, ") FORMAT TabSeparated", 21);
	if (!rc)
		rc = ch_select(s, q.p, dup_row, &ds);
	/* a duplicate: stored before, or earlier in this batch */
	for (struct ch_job *j = batch; j && !rc; j = j->next) {
		for (size_t i = 0; i < ds.n && !j->duplicate; i++)
			j->duplicate = !strcmp(ds.keys[i], j->wkey);
		for (struct ch_job *k = batch; k != j && !j->duplicate; k = k->next)
			j->duplicate = !k->duplicate && !strcmp(k->wkey, j->wkey);
	}
	if (!rc)
		rc = ch_drop_lock_leftovers(s, batch);
	for (int t = 0; t < T_NPUT && !rc; t++) {
		for (struct ch_job *j = batch; j && !rc; j = j->next)
			if (!j->duplicate && j->rows[t].n)
				rc = (!body[t].n && buf_add(&body[t], put_head[t], strlen(put_head[t]))) ||
				     buf_add(&body[t], j->rows[t].p, j->rows[t].n);
		if (rc)
			rc = -ENOMEM;
	}
	/* everything but windows, then windows: what makes a window stored.
	 * Each INSERT is named (put_prefix) so ch_drop_orphans can wait for
	 * one a crash or a timeout left running on the server. */
	s->nput++;
	for (int t = 0; t < T_NPUT && !rc; t++) {
		char prefix[192], *url;

		if (!body[t].n)
			continue;
		put_prefix(s, prefix, sizeof(prefix));
		if (asprintf(&url, "%s&query_id=%s%ld-%llu-%d", s->url, prefix, (long)getpid(), s->nput, t) < 0) {
			rc = -ENOMEM;
			break;
		}
		rc = ch_post_url(s, url, body[t].p, body[t].n, NULL);
		free(url);
		if (rc)	/* even the first: it may still run on the server */
			s->orphans = 1;
	}
	if (!rc) {	/* later windows need not send these stacks and labels again */
		pthread_mutex_lock(&s->klock);
		for (struct ch_job *j = batch; j; j = j->next) {
			uint64_t *k;

			if (j->duplicate)
				continue;
			for (size_t i = 0; i < j->nhashes; i++)
				if ((k = hmap_slot(&s->known, j->hashes[i] | 1)))
					*k = 1;
			if ((k = hmap_slot(&s->known, j->ls | 1)))
				*k = 1;
		}
		pthread_mutex_unlock(&s->klock);
	}
	for (struct ch_job *j = batch; j; j = j->next)
		j->rc = j->duplicate ? 0 : rc;
	for (int t = 0; t < T_NPUT; t++)
		free(body[t].p);
	free(q.p);
	for (size_t i = 0; i < ds.n; i++)
		free(ds.keys[i]);
	free(ds.keys);
}

static int ch_put(struct store *base, const struct agg_window *w, int *duplicate)
{
	struct ch_store *s = (struct ch_store *)base;
	struct ch_job *j;
	int rc;

	*duplicate = 0;
	if ((rc = job_make(s, w, &j)))
		return rc;
	pthread_mutex_lock(&s->qlock);
	*s->qtail = j;
	s->qtail = &j->next;
	while (!j->done) {
		if (s->leader) {
			pthread_cond_wait(&s->qcond, &s->qlock);
			continue;
		}
		/* lead: take the queue (bounded), write it, wake its owners */
		struct ch_job *batch = s->qhead, **end = &s->qhead;
		size_t bytes = 0;

		while (*end && (end == &s->qhead || bytes + (*end)->rows[T_SAMPLES].n < CH_BATCH_BYTES)) {
			bytes += (*end)->rows[T_SAMPLES].n + (*end)->rows[T_STACKS].n;
			end = &(*end)->next;
		}
		s->qhead = *end;
		if (!s->qhead)
			s->qtail = &s->qhead;
		*end = NULL;
		s->leader = 1;
		pthread_mutex_unlock(&s->qlock);
		pthread_mutex_lock(&s->wlock);
		ch_write_batch(s, batch);
		pthread_mutex_unlock(&s->wlock);
		pthread_mutex_lock(&s->qlock);
		for (struct ch_job *k = batch; k; k = k->next)
			k->done = 1;
		s->leader = 0;
		pthread_cond_broadcast(&s->qcond);
	}
	pthread_mutex_unlock(&s->qlock);
	rc = j->rc;
	*duplicate = j->duplicate;
	job_free(j);
	return rc;
}

/* ---- reads -------------------------------------------------------------- */

/* Append the conditions that leave out what unfinished downsampling passes
 * hide, for a table (samples, locks, windows) whose time column is TCOL:
 * a staging pass's own rows (not all written yet), or a written pass's
 * sources (their coarse copies are in; the deletes may still run). */
static int ch_hide(struct ch_store *s, struct buf *q, const char *tcol)
{
	int rc = 0;

	pthread_mutex_lock(&s->hlock);
	for (int i = 0; i < s->nopen && !rc; i++) {
		const struct ch_pass *p = &s->open[i];

		if (p->state == PASS_STAGING)
			rc = buf_printf(q, " AND pass != %llu", (unsigned long long)p->pass);
		else
			rc = buf_printf(q, " AND NOT (%s < %lld AND pass %% 4 < %d AND pass != %llu)", tcol,
					(long long)p->cut, p->tier, (unsigned long long)p->pass);
	}
	pthread_mutex_unlock(&s->hlock);
	return rc;
}

struct lscb { store_labelset_cb cb; void *arg; };
static int ls_row(void *arg, char **f, int nf)
{
	struct lscb *l = arg;

	return nf < 2 ? -EIO : l->cb(l->arg, (int64_t)strtoull(f[0], NULL, 10), f[1]);
}

static int ch_labelsets(struct store *base, store_labelset_cb cb, void *arg)
{
	struct lscb l = { cb, arg };

	return ch_select((struct ch_store *)base,
			 "SELECT DISTINCT id, canon, toInt64(id) AS sid FROM labelsets ORDER BY sid FORMAT TabSeparated",
			 ls_row, &l);
}

struct smcb { store_sample_cb cb; void *arg; };
static int sm_row(void *arg, char **f, int nf)
{
	struct smcb *c = arg;

	if (nf < 4)
		return -EIO;
	/* sum(count) is UInt64 and wraps past 2^64; the Float64 sum beside it
	 * says when it did (queries then saturate, as on SQLite). */
	return c->cb(c->arg, (int64_t)strtoull(f[0], NULL, 10), (int64_t)strtoull(f[1], NULL, 10),
		     strtod(f[3], NULL) >= 1.8e19 ? UINT64_MAX : strtoull(f[2], NULL, 10));
}

static int ch_samples(struct store *base, int type, const int64_t *lss, size_t n,
		      int64_t from, int64_t until, store_sample_cb cb, void *arg)
{
	struct buf q = { 0 };
	struct smcb c = { cb, arg };
	int rc;

	if (!n)
		return 0;
	if (buf_printf(&q, "SELECT ls, stack, sum(count), sum(toFloat64(count)) FROM samples WHERE type = %d AND t >= %lld"
		       " AND t < %lld AND ls IN (", type, (long long)from, (long long)until))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (buf_printf(&q, "%s%llu", i ? "," : "", (unsigned long long)lss[i])) {
			free(q.p);
			return -ENOMEM;
		}
	if (buf_add(&q, ")", 1) || ch_hide((struct ch_store *)base, &q, "t") ||
	    buf_add(&q, " GROUP BY ls, stack FORMAT TabSeparated", 39)) {
		free(q.p);
		return -ENOMEM;
	}
	rc = ch_select((struct ch_store *)base, q.p, sm_row, &c);
	free(q.p);
	return rc;
}

static int text_row(void *arg, char **f, int nf)
{
	char **t = arg;

	if (nf < 1 || *t)
		return 0;
	return (*t = strdup(f[0])) ? 0 : -ENOMEM;
}

static int ch_stack_text(struct store *base, int64_t id, char **text)
{
	char q[160];
	int rc;

	*text = NULL;
	snprintf(q, sizeof(q), "SELECT text FROM stacks WHERE id = %llu LIMIT 1 FORMAT TabSeparated",
		 (unsigned long long)id);
	rc = ch_select((struct ch_store *)base, q, text_row, text);
	return rc ? rc : *text ? 0 : -ENOENT;
}

struct txcb {
	const int64_t *ids;
	size_t n;
	struct hmap idx;	/* id + 1 -> index + 1 */
	int (*cb)(void *arg, size_t i, const char *text);
	void *arg;
};

static int texts_row(void *arg, char **f, int nf)
{
	struct txcb *t = arg;
	uint64_t *i;

	if (nf < 2)
		return -EIO;
	i = hmap_get(&t->idx, strtoull(f[0], NULL, 10) + 1);
	return i ? t->cb(t->arg, *i - 1, f[1]) : 0;
}

/* One query for many stacks, in chunks of 5000 ids. */
static int ch_stack_texts(struct store *base, const int64_t *ids, size_t n,
			  int (*cb)(void *arg, size_t i, const char *text), void *arg)
{
	struct txcb t = { .ids = ids, .n = n, .cb = cb, .arg = arg };
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t *v = hmap_slot(&t.idx, (uint64_t)ids[i] + 1);

		if (!v) {
			hmap_free(&t.idx);
			return -ENOMEM;
		}
		if (!*v)
			*v = i + 1;
	}
	for (size_t off = 0; off < n && !rc; off += 5000) {
		struct buf q = { 0 };

		rc = buf_add(&q, "SELECT id, any(text) FROM stacks WHERE id IN (", 46);
		for (size_t i = off; !rc && i < n && i < off + 5000; i++)
			rc = buf_printf(&q, "%s%llu", i > off ? "," : "", (unsigned long long)ids[i]);
		if (!rc)
			rc = buf_add(&q, ") GROUP BY id FORMAT TabSeparated", 33);
		if (!rc)
			rc = ch_select((struct ch_store *)base, q.p, texts_row, &t);
		free(q.p);
	}
	hmap_free(&t.idx);
	return rc;
}

/* HEAD ("SELECT ... FROM T") over the rows of T that start in [from,
 * until), less what unfinished passes hide, by start time. */
static int ch_select_range(struct ch_store *s, const char *head, int64_t from, int64_t until,
			   row_cb cb, void *arg)
{
	struct buf q = { 0 };
	int rc;

	if (!(rc = buf_printf(&q, "%s WHERE start_ns >= %lld AND start_ns < %lld", head,
			      (long long)from, (long long)until)) &&
	    !(rc = ch_hide(s, &q, "start_ns")) &&
	    !(rc = buf_printf(&q, " ORDER BY start_ns FORMAT TabSeparated")))
		rc = ch_select(s, q.p, cb, arg);
	free(q.p);
	return rc;
}

struct wcb { store_window_cb cb; void *arg; };
static int64_t opt(const char *s)
{
	long long v = atoll(s);

	return v < 0 ? -1 : v;
}

static int win_row(void *arg, char **f, int nf)
{
	struct wcb *c = arg;
	struct store_window_row r = { 0 };
	int units;

	if (nf < 15)
		return -EIO;
	r.id = (int64_t)strtoull(f[0], NULL, 10);
	r.labelset = (int64_t)strtoull(f[1], NULL, 10);
	r.start_ns = atoll(f[2]);
	r.end_ns = atoll(f[3]);
	r.host = f[4];
	r.commit_p99_ns = opt(f[5]);
	r.commit_count = opt(f[6]);
	r.trim_stall_ns = opt(f[7]);
	r.lock_wait_ns = opt(f[8]);
	units = atoi(f[14]);
	for (int t = 0; t < PT_NTYPES; t++) {
		r.total[t] = atoll(f[9 + t]);
		r.units[t] = units & (1 << t) ? UNITS_SAMPLES : UNITS_NS;
	}
	return c->cb(c->arg, &r);
}

static int ch_windows(struct store *base, int64_t from, int64_t until, store_window_cb cb, void *arg)
{
	struct wcb c = { cb, arg };

	return ch_select_range((struct ch_store *)base, "SELECT id, ls, start_ns, end_ns, host, commit_p99_ns,"
			       " commit_count, trim_stall_ns, lock_wait_ns, tot0, tot1, tot2, tot3, tot4, units FROM windows",
			       from, until, win_row, &c);
}

struct lkcb { store_lock_cb cb; void *arg; };
static int lock_row(void *arg, char **f, int nf)
{
	struct lkcb *c = arg;

	if (nf < 5)
		return -EIO;
	return c->cb(c->arg, (int64_t)strtoull(f[0], NULL, 10), f[1], atoll(f[2]), f[3], atoll(f[4]));
}

static int ch_locks(struct store *base, int64_t from, int64_t until, store_lock_cb cb, void *arg)
{
	struct lkcb c = { cb, arg };

	return ch_select_range((struct ch_store *)base, "SELECT ls, host, start_ns, cls, ns FROM locks",
			       from, until, lock_row, &c);
}

struct lrcb { store_lockrow_cb cb; void *arg; int kind; };
static int lockrow_row(void *arg, char **f, int nf)
{
	struct lrcb *c = arg;
	struct store_lockrow r = { .kind = c->kind };

	if (nf < 8)
		return -EIO;
	r.labelset = (int64_t)strtoull(f[0], NULL, 10);
	r.host = f[1];
	r.start_ns = atoll(f[2]);
	r.cls = f[3];
	r.level = atoi(f[4]);
	switch (c->kind) {
	case LK_CLASS:
		if (nf < 13)
			return -EIO;
		r.mode = atoi(f[5]);
		r.acquired = atoll(f[6]);
		r.contended = atoll(f[7]);
		r.wait_ns = atoll(f[8]);
		r.wait_max_ns = atoll(f[9]);
		r.hold_ns = atoll(f[10]);
		r.holds = atoll(f[11]);
		r.hold_max_ns = atoll(f[12]);
		break;
	case LK_INST:
		if (nf < 12)
			return -EIO;
		r.addr = strtoull(f[5], NULL, 10);
		r.tree = strtoull(f[6], NULL, 10);
		r.group = atoi(f[7]);
		r.acquired = atoll(f[8]);
		r.contended = atoll(f[9]);
		r.wait_ns = atoll(f[10]);
		r.wait_max_ns = atoll(f[11]);
		break;
	default:
		r.stack = (int64_t)strtoull(f[5], NULL, 10);
		r.wait_ns = atoll(f[6]);
		r.count = atoll(f[7]);
		break;
	}
	return c->cb(c->arg, &r);
}

static int ch_lockrows(struct store *base, int kind, int64_t from, int64_t until,
		       store_lockrow_cb cb, void *arg)
{
	static const char *const cols[] = {
		[LK_CLASS] = "mode, acquired, contended, wait_ns, wait_max_ns, hold_ns, holds, hold_max_ns FROM lockclasses",
		[LK_INST] = "addr, tree, grp, acquired, contended, wait_ns, wait_max_ns FROM lockinst",
		[LK_STACK] = "stack, wait_ns, count FROM lockstacks",
	};
	struct lrcb c = { cb, arg, kind };
	char q[512];

	if (kind < LK_CLASS || kind > LK_STACK)
		return -EINVAL;
	snprintf(q, sizeof(q), "SELECT ls, host, start_ns, cls, level, %s WHERE start_ns >= %lld"
		 " AND start_ns < %lld ORDER BY start_ns FORMAT TabSeparated", cols[kind],
		 (long long)from, (long long)until);
	return ch_select((struct ch_store *)base, q, lockrow_row, &c);
}

/* The tables retention must ALTER: the plain tables, or every replica's
 * *_local tables.  Runs SQL (with "%T" = the table) on each target. */
static int ch_alter_all(struct ch_store *s, const char *table, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int ch_alter_all(struct ch_store *s, const char *table, const char *fmt, ...)
{
	char where[1024], q[1400];
	va_list ap;
	int rc = 0;

	va_start(ap, fmt);
	vsnprintf(where, sizeof(where), fmt, ap);
	va_end(ap);
	if (!s->cluster) {
		snprintf(q, sizeof(q), "ALTER TABLE %s DELETE WHERE %s", table, where);
		return ch_exec(s, q);
	}
	for (size_t i = 0; i < s->nshards && !rc; i++) {
		snprintf(q, sizeof(q), "ALTER TABLE %s_local DELETE WHERE %s", table, where);
		rc = ch_post_url(s, s->shard_url[i], q, strlen(q), NULL);
	}
	return rc;
}

/* Mutations still running on the tables (every replica when clustered). */
static int ch_pending(struct ch_store *s, long long *n)
{
	char q[300];
	long long k = 0;
	int rc = 0;

	*n = 0;
	for (size_t i = 0; i < (s->cluster ? s->nshards : 1) && !rc; i++) {
		struct buf out = { 0 };

		snprintf(q, sizeof(q), "SELECT count() FROM system.mutations WHERE database = '%s'"
			 " AND is_done = 0 FORMAT TabSeparated", s->cluster ? s->shard_db[i] : s->db);
		rc = ch_post_url(s, s->cluster ? s->shard_url[i] : s->url, q, strlen(q), &out);
		k = rc || !out.p ? 0 : atoll(out.p);
		*n += k;
		free(out.p);
	}
	return rc;
}

static int ch_wait_mutations(struct ch_store *s, int seconds)
{
	long long n = 0;

	for (int i = 0; i < seconds * 10; i++) {
		if (ch_pending(s, &n))
			return -EIO;
		if (!n)
			return 0;
		usleep(100000);
	}
	fprintf(stderr, "glass-aggd: clickhouse: %lld mutations still running after %d s\n", n, seconds);
	return -EBUSY;
}

/* ---- downsampling passes ----------------------------------------------------
 *
 * ClickHouse 18.16 has no transactions and deletes are asynchronous
 * mutations, so a pass is a small journal (table passes, one row per state
 * reached) plus rows that say which pass wrote them (column pass):
 *
 *   pass id P   = time of the pass with the tier in its low two bits, so
 *                 "pass % 4" is a row's level (0 = as ingested).
 *   sources     = windows of a level below the tier, starting before the
 *                 cut (rounded to the bucket) and received before P began
 *                 (recv_ns < R): later arrivals wait for the next pass.
 *   STAGING     : coarse samples, locks and windows are INSERTed with pass
 *                 = P (wkey "coarse:P:LS:B", "coarse2:P:LS:B" for tier 2);
 *                 queries leave out pass P.  Then the coarse rows are
 *                 checked against their sources (counts and sums).
 *   WRITTEN     : queries leave out the sources instead; the sources are
 *                 deleted (samples and locks, then windows) and the pass
 *                 waits for those mutations.
 *   DONE        : nothing hidden any more.
 *
 * A pass found unfinished (after a crash, or a mutation that outlived its
 * wait) is finished before any new one: STAGING is undone (its rows deleted
 * once no query of the dead pass still runs), WRITTEN is rolled forward
 * (the deletes are repeated; they are idempotent).  At every instant a
 * query counts each sample exactly once.
 */
#define SRC_W "start_ns < %lld AND pass %% 4 < %d AND recv_ns < %lld"

static void open_set(struct ch_store *s, const struct ch_pass *p)
{
	int i;

	pthread_mutex_lock(&s->hlock);
	for (i = 0; i < s->nopen && s->open[i].pass != p->pass; i++)
		;
	if (i < (int)(sizeof(s->open) / sizeof(s->open[0]))) {
		s->open[i] = *p;
		if (i == s->nopen)
			s->nopen++;
	}
	pthread_mutex_unlock(&s->hlock);
}

static void open_drop(struct ch_store *s, uint64_t pass)
{
	pthread_mutex_lock(&s->hlock);
	for (int i = 0; i < s->nopen; i++)
		if (s->open[i].pass == pass) {
			s->open[i] = s->open[--s->nopen];
			break;
		}
	pthread_mutex_unlock(&s->hlock);
}

/* Run one statement of pass P, named by query_id glass-pass-P-STEP so a
 * later recovery can wait for it to end on the server. */
static int pass_exec(struct ch_store *s, const struct ch_pass *p, const char *step, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int pass_exec(struct ch_store *s, const struct ch_pass *p, const char *step, const char *fmt, ...)
{
	char *q = NULL, *url = NULL;
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = vasprintf(&q, fmt, ap);
	va_end(ap);
	if (n < 0 || asprintf(&url, "%s&query_id=glass-pass-%llu-%s", s->url,
			      (unsigned long long)p->pass, step) < 0) {
		free(q);
		return -ENOMEM;
	}
	rc = ch_post_url(s, url, q, n, NULL);
	free(url);
	free(q);
	return rc;
}

static int pass_state(struct ch_store *s, struct ch_pass *p, int state)
{
	char q[400];
	int rc;

	snprintf(q, sizeof(q), "INSERT INTO passes VALUES (%llu, %d, %lld, %lld, %lld, %d, %lld)",
		 (unsigned long long)p->pass, p->tier, (long long)p->cut, (long long)p->recv,
		 (long long)p->bucket, state, (long long)agg_now_ns());
	if ((rc = ch_exec(s, q)))
		return rc;
	p->state = state;
	if (state >= PASS_DONE)
		open_drop(s, p->pass);
	else
		open_set(s, p);
	return 0;
}

/* Delete pass P's sources: samples and locks first (their WHERE reads the
 * windows), then the windows.  All three are sharded by label set, so a
 * replica's samples belong to windows in its own windows_local. */
static int pass_delete_sources(struct ch_store *s, const struct ch_pass *p)
{
	const char *wt = s->cluster ? "windows_local" : "windows";
	long long c = p->cut, r = p->recv;
	int rc;

	if ((rc = ch_alter_all(s, "samples", "t < %lld AND pass %% 4 < %d AND win IN (SELECT id FROM %s WHERE "
			       SRC_W ")", c, p->tier, wt, c, p->tier, r)) ||
	    (rc = ch_alter_all(s, "locks", "start_ns < %lld AND pass %% 4 < %d AND win IN (SELECT id FROM %s"
			       " WHERE " SRC_W ")", c, p->tier, wt, c, p->tier, r)))
		return rc;
	store_crashpoint("ch-deleting");
	if ((rc = ch_wait_mutations(s, 120)) ||
	    (rc = ch_alter_all(s, "windows", SRC_W, c, p->tier, r)))
		return rc;
	return ch_wait_mutations(s, 120);
}

/* Undo a STAGING pass: once none of its INSERTs still runs, delete its rows. */
static int pass_undo(struct ch_store *s, struct ch_pass *p)
{
	char prefix[64];
	int rc;

	snprintf(prefix, sizeof(prefix), "glass-pass-%llu-", (unsigned long long)p->pass);
	if ((rc = ch_wait_queries(s, prefix, 60)))
		return rc;
	if ((rc = ch_alter_all(s, "samples", "pass = %llu", (unsigned long long)p->pass)) ||
	    (rc = ch_alter_all(s, "locks", "pass = %llu", (unsigned long long)p->pass)) ||
	    (rc = ch_alter_all(s, "windows", "pass = %llu", (unsigned long long)p->pass)) ||
	    (rc = ch_wait_mutations(s, 120)))
		return rc;
	return pass_state(s, p, PASS_UNDONE);
}

/* Finish what earlier passes left (wlock held). */
static int ch_recover(struct ch_store *s)
{
	int rc = 0;

	for (;;) {
		struct ch_pass p;

		pthread_mutex_lock(&s->hlock);
		if (!s->nopen) {
			pthread_mutex_unlock(&s->hlock);
			return 0;
		}
		p = s->open[0];
		pthread_mutex_unlock(&s->hlock);
		fprintf(stderr, "glass-aggd: clickhouse: downsampling pass %llu left %s: %s it\n",
			(unsigned long long)p.pass, p.state == PASS_STAGING ? "staging" : "written",
			p.state == PASS_STAGING ? "undoing" : "finishing");
		if (p.state == PASS_STAGING)
			rc = pass_undo(s, &p);
		else if (!(rc = pass_delete_sources(s, &p)))
			rc = pass_state(s, &p, PASS_DONE);
		if (rc)
			return rc;
	}
}

struct verify { unsigned long long v[8]; int n; };
static int verify_row(void *arg, char **f, int nf)
{
	struct verify *vf = arg;

	for (vf->n = 0; vf->n < nf && vf->n < 8; vf->n++)
		vf->v[vf->n] = strtoull(f[vf->n], NULL, 10);
	return 0;
}

/* Downsampling sums saturate at INT64_MAX, as the SQLite engine's satsum
 * and the queries (query.c) do: ClickHouse's sum() of Int64 wraps (11
 * windows of 9e17 gave a negative coarse total), of UInt64 wraps past
 * 2^64.  SATSUM(x) is exact below 1.8e19 (sum of UInt64 cannot wrap
 * there) and INT64_MAX at or above it (the Float64 sum tells which side of
 * 1.8e19 a sum lies on, within far less than the 4e17 to 2^64); x is a
 * non-negative column.  SATSUMIF(x, cond) likewise for sumIf. */
#define SATSUM(x) "least(if(sum(toFloat64(" x ")) > 1.8e19, 9223372036854775807, sum(toUInt64(" x "))), " \
	"9223372036854775807)"
#define SATSUMIF(x, c) "least(if(sumIf(toFloat64(" x "), " c ") > 1.8e19, 9223372036854775807, " \
	"sumIf(toUInt64(" x "), " c ")), 9223372036854775807)"

/* Fold tier TIER's sources older than CUT (bucket-aligned) into BUCKET_NS
 * windows, as the comment above describes.  wlock held. */
static int ch_coarsen(struct ch_store *s, int tier, int64_t cut, int64_t bucket_ns)
{
	struct ch_pass p = { .tier = tier, .cut = cut, .bucket = bucket_ns };
	const char *in = s->cluster ? "GLOBAL IN" : "IN";	/* no double-distributed IN */
	char key[128], pre[16], src[256], ssrc[512], lsrc[512], q[8192];
	long long n = 0, pending = 0;
	struct verify vf = { .n = 0 };
	int rc;

	if (ch_pending(s, &pending) || pending)
		return pending ? 0 : -EIO;	/* an earlier delete still running: next time */
	p.recv = agg_now_ns();
	p.pass = ((uint64_t)p.recv & ~3ULL) | (uint64_t)tier;
	snprintf(src, sizeof(src), SRC_W, (long long)cut, tier, (long long)p.recv);
	snprintf(q, sizeof(q), "SELECT count() FROM windows WHERE %s FORMAT TabSeparated", src);
	if ((rc = ch_select(s, q, count_cb, &n)) || !n)
		return rc;
	snprintf(ssrc, sizeof(ssrc), "t < %lld AND pass %% 4 < %d AND win %s (SELECT id FROM windows WHERE %s)",
		 (long long)cut, tier, in, src);
	snprintf(lsrc, sizeof(lsrc), "start_ns < %lld AND pass %% 4 < %d AND win %s (SELECT id FROM windows WHERE %s)",
		 (long long)cut, tier, in, src);
	/* wkey of the coarse window of (ls, bucket b); its id is the hash of that */
	if (tier == 1)
		snprintf(pre, sizeof(pre), "coarse");
	else
		snprintf(pre, sizeof(pre), "coarse%d", tier);
	snprintf(key, sizeof(key), "concat('%s:%llu:', toString(ls), ':', toString(b))", pre,
		 (unsigned long long)p.pass);
	if ((rc = pass_state(s, &p, PASS_STAGING)))
		return rc;
	store_crashpoint("ch-staging");
	if ((rc = pass_exec(s, &p, "samples",
			    "INSERT INTO samples (type, ls, t, win, stack, count, pass) SELECT type, ls, b * %lld,"
			    " sipHash64(%s), stack, " SATSUM("count") ", %llu FROM samples WHERE %s"
			    " GROUP BY type, ls, intDiv(t, %lld) AS b, stack",
			    (long long)bucket_ns, key, (unsigned long long)p.pass, ssrc, (long long)bucket_ns)))
		goto undo;
	store_crashpoint("ch-samples");
	if ((rc = pass_exec(s, &p, "locks",
			    "INSERT INTO locks (win, ls, host, start_ns, cls, ns, pass) SELECT sipHash64(%s), ls,"
			    " any(host), b * %lld, cls, " SATSUM("ns") ", %llu FROM locks WHERE %s"
			    " GROUP BY ls, intDiv(start_ns, %lld) AS b, cls",
			    key, (long long)bucket_ns, (unsigned long long)p.pass, lsrc, (long long)bucket_ns)) ||
	    (rc = pass_exec(s, &p, "windows",
			    "INSERT INTO windows (id, wkey, host, ls, start_ns, end_ns, recv_ns, commit_p99_ns,"
			    " commit_count, trim_stall_ns, lock_wait_ns, tot0, tot1, tot2, tot3, tot4, units, pass)"
			    " SELECT sipHash64(%s), %s, min(host), ls, b * %lld, (b + 1) * %lld, %lld,"
			    " max(commit_p99_ns), " SATSUMIF("commit_count", "commit_count >= 0") ","
			    " " SATSUMIF("trim_stall_ns", "trim_stall_ns >= 0") ","
			    " " SATSUMIF("lock_wait_ns", "lock_wait_ns >= 0") ","
			    " " SATSUM("tot0") ", " SATSUM("tot1") ", " SATSUM("tot2") ", " SATSUM("tot3") ","
			    " " SATSUM("tot4") ", groupBitOr(units), %llu"
			    " FROM windows WHERE %s GROUP BY ls, intDiv(start_ns, %lld) AS b",
			    key, key, (long long)bucket_ns, (long long)bucket_ns, (long long)p.recv,
			    (unsigned long long)p.pass, src, (long long)bucket_ns)))
		goto undo;
	store_crashpoint("ch-windows");
	/* Verify before anything is deleted: one coarse window per (ls,
	 * bucket), and the same sums of window totals, samples and locks --
	 * each coarse row against its sources' saturated sum, the rows added
	 * up modulo 2^64 (sumWithOverflow) on both sides. */
	snprintf(q, sizeof(q), "SELECT (SELECT count() FROM windows WHERE pass = %llu),"
		 " (SELECT uniqExact(ls, intDiv(start_ns, %lld)) FROM windows WHERE %s),"
		 " (SELECT sumWithOverflow(toUInt64(tot0) + toUInt64(tot1) + toUInt64(tot2) + toUInt64(tot3) + toUInt64(tot4))"
		 "  FROM windows WHERE pass = %llu),"
		 " (SELECT sumWithOverflow(g) FROM (SELECT toUInt64(" SATSUM("tot0") ") + toUInt64(" SATSUM("tot1")
		 ") + toUInt64(" SATSUM("tot2") ") + toUInt64(" SATSUM("tot3") ")"
		 " + toUInt64(" SATSUM("tot4") ") AS g"
		 "  FROM windows WHERE %s GROUP BY ls, intDiv(start_ns, %lld))),"
		 " (SELECT sumWithOverflow(count) FROM samples WHERE pass = %llu),"
		 " (SELECT sumWithOverflow(g) FROM (SELECT toUInt64(" SATSUM("count") ") AS g FROM samples WHERE %s"
		 "  GROUP BY type, ls, intDiv(t, %lld), stack)),"
		 " (SELECT sumWithOverflow(toUInt64(ns)) FROM locks WHERE pass = %llu),"
		 " (SELECT sumWithOverflow(g) FROM (SELECT toUInt64(" SATSUM("ns") ") AS g FROM locks WHERE %s"
		 "  GROUP BY ls, intDiv(start_ns, %lld), cls))"
		 " FORMAT TabSeparated",
		 (unsigned long long)p.pass, (long long)bucket_ns, src, (unsigned long long)p.pass, src,
		 (long long)bucket_ns, (unsigned long long)p.pass, ssrc, (long long)bucket_ns,
		 (unsigned long long)p.pass, lsrc, (long long)bucket_ns);
	if ((rc = ch_select(s, q, verify_row, &vf)))
		goto undo;
	if (vf.n != 8 || vf.v[0] != vf.v[1] || vf.v[2] != vf.v[3] || vf.v[4] != vf.v[5] || vf.v[6] != vf.v[7]) {
		fprintf(stderr, "glass-aggd: clickhouse: downsampling pass %llu does not add up (windows %llu/%llu,"
			" totals %llu/%llu, samples %llu/%llu, locks %llu/%llu): undone\n",
			(unsigned long long)p.pass, vf.v[0], vf.v[1], vf.v[2], vf.v[3], vf.v[4], vf.v[5],
			vf.v[6], vf.v[7]);
		rc = -EIO;
		goto undo;
	}
	if ((rc = pass_state(s, &p, PASS_WRITTEN)))
		goto undo;
	store_crashpoint("ch-written");
	if ((rc = pass_delete_sources(s, &p)))
		return rc;	/* stays WRITTEN: finished by the next pass */
	store_crashpoint("ch-deleted");
	return pass_state(s, &p, PASS_DONE);
undo:
	if (pass_undo(s, &p))
		fprintf(stderr, "glass-aggd: clickhouse: pass %llu: undo failed; retried next time\n",
			(unsigned long long)p.pass);
	return rc;
}

static int ch_retain(struct store *base, int64_t drop_ns, const struct store_tier *tiers, int ntiers)
{
	struct ch_store *s = (struct ch_store *)base;
	int rc;

	pthread_mutex_lock(&s->wlock);
	rc = ch_recover(s);
	if (!rc && drop_ns > 0) {
		rc |= ch_alter_all(s, "samples", "t < %lld", (long long)drop_ns);
		rc |= ch_alter_all(s, "locks", "start_ns < %lld", (long long)drop_ns);
		rc |= ch_alter_all(s, "lockclasses", "start_ns < %lld", (long long)drop_ns);
		rc |= ch_alter_all(s, "lockinst", "start_ns < %lld", (long long)drop_ns);
		rc |= ch_alter_all(s, "lockstacks", "start_ns < %lld", (long long)drop_ns);
		rc |= ch_alter_all(s, "windows", "start_ns < %lld", (long long)drop_ns);
		if (!rc)
			rc = ch_wait_mutations(s, 120);
	}
	/* coarsest tier first, as the SQLite engine */
	for (int k = ntiers; k >= 1 && !rc; k--) {
		int64_t b = tiers[k - 1].bucket_s * 1000000000LL, cut = tiers[k - 1].before_ns;

		if (cut > 0 && b > 0)
			rc = ch_coarsen(s, k, cut / b * b, b);
	}
	pthread_mutex_unlock(&s->wlock);
	if (rc)
		fprintf(stderr, "glass-aggd: clickhouse: retention pass failed\n");
	return rc ? -EIO : 0;
}

struct stcb { struct store_stats *st; };
static int stats_row(void *arg, char **f, int nf)
{
	struct store_stats *st = arg;

	if (nf >= 3) {
		st->windows = atoll(f[0]);
		st->stacks = atoll(f[1]);
		st->labelsets = atoll(f[2]);
	}
	return 0;
}

static int ch_stats(struct store *base, struct store_stats *st)
{
	memset(st, 0, sizeof(*st));
	return ch_select((struct ch_store *)base,
			 "SELECT (SELECT count() FROM windows), (SELECT uniqExact(id) FROM stacks),"
			 " (SELECT uniqExact(id) FROM labelsets) FORMAT TabSeparated", stats_row, st);
}

static void free_handle(void *c)
{
	curl_easy_cleanup(c);
}

static void ch_close(struct store *base)
{
	struct ch_store *s = (struct ch_store *)base;
	CURL *c = pthread_getspecific(s->ckey);

	if (c) {
		pthread_setspecific(s->ckey, NULL);
		curl_easy_cleanup(c);
	}
	pthread_key_delete(s->ckey);
	pthread_mutex_destroy(&s->wlock);
	pthread_mutex_destroy(&s->hlock);
	pthread_mutex_destroy(&s->klock);
	pthread_mutex_destroy(&s->qlock);
	pthread_cond_destroy(&s->qcond);
	hmap_free(&s->known);
	for (size_t i = 0; i < s->nshards; i++) {
		free(s->shard_url[i]);
		free(s->shard_db[i]);
	}
	free(s->shard_url);
	free(s->shard_db);
	free(s->url);
	free(s->db);
	free(s->cluster);
	free(s);
}

static const struct store_ops ch_ops = {
	.name = "clickhouse",
	.put = ch_put,
	.labelsets = ch_labelsets,
	.samples = ch_samples,
	.stack_text = ch_stack_text,
	.stack_texts = ch_stack_texts,
	.windows = ch_windows,
	.locks = ch_locks,
	.lockrows = ch_lockrows,
	.retain = ch_retain,
	.stats = ch_stats,
	.close = ch_close,
};

/* The downsampling pass that wrote a row (0 = ingested); windows, locks
 * and samples have it.  Added to tables of earlier releases on open. */
#define PASS_COL "pass UInt64 DEFAULT 0"
/* The wall profile type's total (tot4, PT_WALL): last, after pass, so a
 * table created now and one upgraded on open (ADD COLUMN appends) have
 * the same columns in the same order. */
#define TOT4_COL "tot4 Int64 DEFAULT 0"
static const char passes_ddl[] =
	"CREATE TABLE IF NOT EXISTS passes (pass UInt64, tier UInt8, cut Int64, recv Int64, bucket Int64,"
	" state UInt8, at Int64) ENGINE = MergeTree() ORDER BY pass";

static const struct ch_table {
	const char *name, *cols, *engine, *shard_key;
} tables[] = {
	{ "stacks", "id UInt64, text String", "ReplacingMergeTree() ORDER BY id", "id" },
	{ "labelsets", "id UInt64, canon String, host String", "ReplacingMergeTree() ORDER BY id", "id" },
	{ "windows", "id UInt64, wkey String, host String, ls UInt64, start_ns Int64,"
	  " end_ns Int64, recv_ns Int64, commit_p99_ns Int64, commit_count Int64, trim_stall_ns Int64,"
	  " lock_wait_ns Int64, tot0 Int64, tot1 Int64, tot2 Int64, tot3 Int64, units UInt8, " PASS_COL ", " TOT4_COL,
	  "MergeTree() ORDER BY (start_ns, id)", "ls" },
	{ "locks", "win UInt64, ls UInt64, host String, start_ns Int64, cls String, ns Int64, " PASS_COL,
	  "MergeTree() ORDER BY (start_ns, win)", "ls" },
	/* the lock detail (aggregator/locks.c); downsampling leaves these rows
	 * at their own window times (sums unchanged), retention drops them */
	{ "lockclasses", "win UInt64, ls UInt64, host String, start_ns Int64, cls String, level Int32,"
	  " mode UInt8, acquired Int64, contended Int64, wait_ns Int64, wait_max_ns Int64, hold_ns Int64,"
	  " holds Int64, hold_max_ns Int64", "MergeTree() ORDER BY (start_ns, win)", "ls" },
	{ "lockinst", "win UInt64, ls UInt64, host String, start_ns Int64, addr UInt64, cls String,"
	  " tree UInt64, level Int32, grp Int32, acquired Int64, contended Int64, wait_ns Int64,"
	  " wait_max_ns Int64", "MergeTree() ORDER BY (start_ns, win)", "ls" },
	{ "lockstacks", "win UInt64, ls UInt64, host String, start_ns Int64, cls String, level Int32,"
	  " stack UInt64, wait_ns Int64, count Int64", "MergeTree() ORDER BY (start_ns, win)", "ls" },
	{ "samples", "type UInt8, ls UInt64, t Int64, win UInt64, stack UInt64, count UInt64, " PASS_COL,
	  "MergeTree() ORDER BY (type, ls, t)", "ls" },
};
#define NTABLES (sizeof(tables) / sizeof(tables[0]))

static int ident_ok(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9')))
			return 0;
	return 1;
}

struct shard_scan { struct ch_store *s; const char *port, *db; int err; };
static int shard_row(void *arg, char **f, int nf)
{
	struct shard_scan *sc = arg;
	struct ch_store *s = sc->s;
	const char *sdb = nf >= 2 && *f[1] ? f[1] : sc->db;
	char **nu, **nd;
	int v6 = strchr(f[0], ':') != NULL;

	if (nf < 1 || !ident_ok(sdb)) {
		sc->err = 1;
		return 0;
	}
	if (!(nu = realloc(s->shard_url, (s->nshards + 1) * sizeof(*nu))))
		return -ENOMEM;
	s->shard_url = nu;
	if (!(nd = realloc(s->shard_db, (s->nshards + 1) * sizeof(*nd))))
		return -ENOMEM;
	s->shard_db = nd;
	if (asprintf(&nu[s->nshards], "http://%s%s%s:%s/?database=%s", v6 ? "[" : "", f[0],
		     v6 ? "]" : "", sc->port, sdb) < 0)
		return -ENOMEM;
	if (!(nd[s->nshards] = strdup(sdb))) {
		free(nu[s->nshards]);
		return -ENOMEM;
	}
	s->nshards++;
	return 0;
}

struct eng_scan { char bad[128]; };
static int engine_row(void *arg, char **f, int nf)
{
	struct eng_scan *e = arg;

	if (nf >= 2 && strcmp(f[1], "Distributed") && !e->bad[0])
		snprintf(e->bad, sizeof(e->bad), "%s (%s)", f[0], f[1]);
	return 0;
}

/* Local tables on every shard replica, Distributed tables in DB. */
static int ch_open_cluster(struct ch_store *s, const char *hostport, char *msg, size_t msglen)
{
	const char *port = strrchr(hostport, ':');
	struct shard_scan sc = { .s = s, .port = port ? port + 1 : "8123", .db = s->db };
	struct eng_scan es = { "" };
	char q[1024];
	int rc;

	snprintf(q, sizeof(q), "SELECT host_address, default_database FROM system.clusters WHERE"
		 " cluster = '%s' ORDER BY shard_num, replica_num FORMAT TabSeparated", s->cluster);
	if ((rc = ch_select(s, q, shard_row, &sc)) || !s->nshards || sc.err) {
		snprintf(msg, msglen, rc ? "cluster %s: cannot read system.clusters (see log)" :
			 sc.err ? "cluster %s: a shard's default_database is not [A-Za-z0-9_]" :
			 "cluster %s: not in the server's remote_servers (system.clusters)", s->cluster);
		return rc ? rc : -EINVAL;
	}
	/* A database that already holds plain tables is not silently reused. */
	snprintf(q, sizeof(q), "SELECT name, engine FROM system.tables WHERE database = '%s' AND name IN"
		 " ('stacks','labelsets','windows','locks','samples','lockclasses','lockinst','lockstacks')"
		 " FORMAT TabSeparated", s->db);
	if ((rc = ch_select(s, q, engine_row, &es)))
		return rc;
	if (es.bad[0]) {
		snprintf(msg, msglen, "cluster %s: database %s already has a non-Distributed table %s;"
			 " use another database", s->cluster, s->db, es.bad);
		return -EINVAL;
	}
	for (size_t i = 0; i < s->nshards; i++) {
		char *u;

		/* CREATE DATABASE through the replica's default database */
		if (asprintf(&u, "%.*sdefault", (int)(strstr(s->shard_url[i], "database=") + 9 -
						     s->shard_url[i]), s->shard_url[i]) < 0)
			return -ENOMEM;
		snprintf(q, sizeof(q), "CREATE DATABASE IF NOT EXISTS %s", s->shard_db[i]);
		rc = ch_post_url(s, u, q, strlen(q), NULL);
		free(u);
		for (size_t t = 0; t < NTABLES && !rc; t++) {
			snprintf(q, sizeof(q), "CREATE TABLE IF NOT EXISTS %s_local (%s) ENGINE = %s",
				 tables[t].name, tables[t].cols, tables[t].engine);
			rc = ch_post_url(s, s->shard_url[i], q, strlen(q), NULL);
		}
		if (rc) {
			snprintf(msg, msglen, "cluster %s: cannot create tables on shard replica %s (see log)",
				 s->cluster, s->shard_url[i]);
			return rc;
		}
	}
	/* '' = each replica's default_database; if any replica has none, all use DB. */
	int same = 1;
	for (size_t i = 0; i < s->nshards; i++)
		same &= !strcmp(s->shard_db[i], s->db);
	for (size_t t = 0; t < NTABLES; t++) {
		snprintf(q, sizeof(q), "CREATE TABLE IF NOT EXISTS %s (%s) ENGINE = Distributed(%s, '%s', %s_local, %s)",
			 tables[t].name, tables[t].cols, s->cluster, same ? s->db : "", tables[t].name,
			 tables[t].shard_key);
		if ((rc = ch_exec(s, q))) {
			snprintf(msg, msglen, "cluster %s: cannot create the Distributed tables (see log)", s->cluster);
			return rc;
		}
	}
	return 0;
}

/* Give TABLE in DB (at URL) column NAME (declared DEF) if it predates it. */
static int add_col(struct ch_store *s, const char *url, const char *db, const char *table,
		   const char *name, const char *def)
{
	char q[400];
	long long n = 0;
	int rc;

	snprintf(q, sizeof(q), "SELECT count() FROM system.columns WHERE database = '%s' AND table = '%s'"
		 " AND name = '%s' FORMAT TabSeparated", db, table, name);
	{
		struct buf out = { 0 };

		if ((rc = ch_post_url(s, url, q, strlen(q), &out)))
			return rc;
		n = out.p ? atoll(out.p) : 0;
		free(out.p);
	}
	if (n)
		return 0;
	snprintf(q, sizeof(q), "ALTER TABLE %s.%s ADD COLUMN %s", db, table, def);
	return ch_post_url(s, url, q, strlen(q), NULL);
}

static int pass_row(void *arg, char **f, int nf)
{
	struct ch_store *s = arg;
	struct ch_pass p;

	if (nf < 6)
		return -EIO;
	p.pass = strtoull(f[0], NULL, 10);
	p.state = atoi(f[1]);
	p.tier = atoi(f[2]);
	p.cut = atoll(f[3]);
	p.recv = atoll(f[4]);
	p.bucket = atoll(f[5]);
	open_set(s, &p);
	return 0;
}

/* The journal: its table, the columns tables of earlier releases lack
 * (pass; tot4), and the passes a crash left unfinished (hidden from
 * queries at once; finished by the next retain). */
static int ch_open_passes(struct ch_store *s)
{
	static const struct { const char *table, *name, *def; } t[] = {
		{ "windows", "pass", PASS_COL }, { "locks", "pass", PASS_COL },
		{ "samples", "pass", PASS_COL }, { "windows", "tot4", TOT4_COL },
	};
	int rc = ch_exec(s, passes_ddl);

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]) && !rc; i++) {
		for (size_t k = 0; s->cluster && k < s->nshards && !rc; k++) {
			char lt[32];

			snprintf(lt, sizeof(lt), "%s_local", t[i].table);
			rc = add_col(s, s->shard_url[k], s->shard_db[k], lt, t[i].name, t[i].def);
		}
		if (!rc)
			rc = add_col(s, s->url, s->db, t[i].table, t[i].name, t[i].def);
	}
	if (!rc)
		rc = ch_select(s, "SELECT pass, max(state), any(tier), any(cut), any(recv), any(bucket)"
			       " FROM passes GROUP BY pass HAVING max(state) < 3 ORDER BY pass"
			       " FORMAT TabSeparated", pass_row, s);
	return rc;
}

/* clickhouse://HOST:PORT/DB[?cluster=NAME] */
int store_clickhouse_open(const char *uri, struct store **out, char *msg, size_t msglen)
{
	struct ch_store *s = calloc(1, sizeof(*s));
	char hostport[256], db[128] = "default", q[256];
	const char *p = uri + strlen("clickhouse://"), *slash = strchr(p, '/');
	const char *qs = strchr(p, '?');
	size_t hl = slash ? (size_t)(slash - p) : qs ? (size_t)(qs - p) : strlen(p);

	if (!s)
		return -ENOMEM;
	if (!hl || hl >= sizeof(hostport)) {
		free(s);
		snprintf(msg, msglen, "store %s: want clickhouse://HOST:PORT/DB[?cluster=NAME]", uri);
		return -EINVAL;
	}
	memcpy(hostport, p, hl);
	hostport[hl] = 0;
	if (slash && slash[1] && slash[1] != '?') {
		size_t dl = qs ? (size_t)(qs - slash - 1) : strlen(slash + 1);

		snprintf(db, sizeof(db), "%.*s", (int)dl, slash + 1);
		if (!ident_ok(db)) {
			free(s);
			snprintf(msg, msglen, "store %s: database name must be [A-Za-z0-9_]", uri);
			return -EINVAL;
		}
	}
	if (qs) {
		if (strncmp(qs, "?cluster=", 9) || !ident_ok(qs + 9)) {
			free(s);
			snprintf(msg, msglen, "store %s: the only option is ?cluster=NAME ([A-Za-z0-9_])", uri);
			return -EINVAL;
		}
		if (!(s->cluster = strdup(qs + 9))) {
			free(s);
			return -ENOMEM;
		}
	}
	s->base.ops = &ch_ops;
	pthread_mutex_init(&s->wlock, NULL);
	pthread_mutex_init(&s->hlock, NULL);
	pthread_mutex_init(&s->klock, NULL);
	pthread_mutex_init(&s->qlock, NULL);
	pthread_cond_init(&s->qcond, NULL);
	s->qtail = &s->qhead;
	pthread_key_create(&s->ckey, free_handle);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (!(s->db = strdup(db)) || asprintf(&s->url, "http://%s/?database=default", hostport) < 0) {
		ch_close(&s->base);
		return -ENOMEM;
	}
	snprintf(q, sizeof(q), "CREATE DATABASE IF NOT EXISTS %s", db);
	if (ch_exec(s, q)) {
		snprintf(msg, msglen, "store %s: cannot reach ClickHouse (see log)", uri);
		ch_close(&s->base);
		return -EIO;
	}
	free(s->url);
	if (asprintf(&s->url, "http://%s/?database=%s%s", hostport, db,
		     s->cluster ? "&insert_distributed_sync=1" : "") < 0) {
		s->url = NULL;
		ch_close(&s->base);
		return -ENOMEM;
	}
	if (s->cluster) {
		int rc = ch_open_cluster(s, hostport, msg, msglen);

		if (rc) {
			ch_close(&s->base);
			return rc;
		}
	}
	for (size_t t = 0; t < NTABLES && !s->cluster; t++) {
		char ddl[1024];

		snprintf(ddl, sizeof(ddl), "CREATE TABLE IF NOT EXISTS %s (%s) ENGINE = %s",
			 tables[t].name, tables[t].cols, tables[t].engine);
		if (ch_exec(s, ddl)) {
			snprintf(msg, msglen, "store %s: cannot create tables (see log)", uri);
			ch_close(&s->base);
			return -EIO;
		}
	}
	if (ch_open_passes(s)) {
		snprintf(msg, msglen, "store %s: cannot set up the downsampling journal (see log)", uri);
		ch_close(&s->base);
		return -EIO;
	}
	/* Rows an earlier process left of unstored windows are dropped before
	 * any ingest, so a retried window is stored once.  (A downsampling
	 * pass's rows carry its id, not 0: retain's recovery owns them.) */
	s->orphans = 1;
	if (ch_drop_orphans(s)) {
		snprintf(msg, msglen, "store %s: cannot clean up after an interrupted write (see log)", uri);
		ch_close(&s->base);
		return -EIO;
	}
	*out = &s->base;
	return 0;
}
