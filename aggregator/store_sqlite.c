/*
 * store_sqlite.c — the SQLite engine: one file, WAL, one writer.
 *
 * Schema (created on first open; see store.h for the model):
 *
 *   stacks(id INTEGER PRIMARY KEY, hash INTEGER, text TEXT)  + index on hash
 *   labelsets(id INTEGER PRIMARY KEY, canon TEXT UNIQUE, host TEXT)
 *   windows(id INTEGER PRIMARY KEY, wkey TEXT UNIQUE, host, ls, start_ns,
 *           end_ns, recv_ns, commit_p99_ns, commit_count, trim_stall_ns,
 *           lock_wait_ns, tot0..tot3, units, coarse, tot4) + index on start_ns
 *           tot4 (the wall type) is last: a schema-2 file gains it on open
 *           (ALTER TABLE ADD COLUMN appends; meta schema becomes 3)
 *           coarse = the downsampling level: 0 a window as ingested, k one
 *           folded by tier k (wkey "coarse:LS:B" for 1, "coarseK:LS:B" above)
 *   locks(win, cls, ns)                       PRIMARY KEY (win, cls)
 *   lockclasses(win, cls, level, mode, acquired, contended, wait_ns,
 *           wait_max_ns, hold_ns, holds, hold_max_ns)      + index on win
 *   lockinst(win, addr, cls, tree, level, grp, acquired, contended,
 *           wait_ns, wait_max_ns)                          + index on win
 *   lockstacks(win, cls, level, stack, wait_ns, count)     + index on win
 *           the lock detail of aggregator/locks.c; plain row tables
 *           (queries sum), stack = stacks.id
 *   samples(type, ls, t, win, data)           PRIMARY KEY (type, ls, t, win),
 *           WITHOUT ROWID: the table is its own covering index, so a merge
 *           is one range scan per matching label set.  DATA packs the
 *           window's (stack id, count) pairs of one profile type:
 *
 *             pairs sorted by stack id; each pair = varint(id - previous id)
 *             varint(count), LEB128 unsigned, counts full 64-bit.
 *
 *           One row per (window, type) instead of one per stack: a fleet
 *           merge over 3.6M (window, stack) samples decodes 360k blobs
 *           (~10x less SQLite work than stepping 3.6M rows; measured).
 *
 * All sums are done in C.
 *
 * Retention and downsampling (sq_retain) run as one transaction: a crash
 * or kill -9 anywhere in a pass leaves the database as it was before the
 * pass (tests/aggregator/downsample.test kills it there and checks).
 *
 * Locking: s->wlock serialises writers on s->w (the one write connection)
 * and guards the stack cache.  Readers use one read-only connection per
 * thread (s->readers, guarded by s->rlock for registration only).
 */
#include "aggregator/store.h"
#include "aggregator/hmap.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sqlite3.h>

struct stack_ent { int64_t id; char *text; };

struct sq_reader {
	sqlite3 *db;
	pthread_t tid;
	struct sq_reader *next;
};

struct sq_store {
	struct store base;
	char *path;
	pthread_mutex_t wlock;
	sqlite3 *w;
	sqlite3_stmt *st_win_exists, *st_win_ins, *st_ls_get, *st_ls_ins,
		     *st_stack_get, *st_stack_ins, *st_sample_ins, *st_lock_ins,
		     *st_lkc_ins, *st_lki_ins, *st_lks_ins;
	struct hmap stack_cache;	/* hash -> index+1 into ents */
	struct stack_ent *ents;
	size_t nents, capents;
	pthread_mutex_t rlock;
	struct sq_reader *readers;
	pthread_key_t rkey;
};

static const char schema[] =
	"PRAGMA journal_mode=WAL;"
	"PRAGMA synchronous=NORMAL;"
	"CREATE TABLE IF NOT EXISTS stacks(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL, text TEXT NOT NULL);"
	"CREATE INDEX IF NOT EXISTS stacks_hash ON stacks(hash);"
	"CREATE TABLE IF NOT EXISTS labelsets(id INTEGER PRIMARY KEY, canon TEXT NOT NULL UNIQUE, host TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS windows(id INTEGER PRIMARY KEY, wkey TEXT NOT NULL UNIQUE,"
	" host TEXT NOT NULL, ls INTEGER NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
	" recv_ns INTEGER NOT NULL, commit_p99_ns INTEGER, commit_count INTEGER, trim_stall_ns INTEGER,"
	" lock_wait_ns INTEGER, tot0 INTEGER NOT NULL DEFAULT 0, tot1 INTEGER NOT NULL DEFAULT 0,"
	" tot2 INTEGER NOT NULL DEFAULT 0, tot3 INTEGER NOT NULL DEFAULT 0, units INTEGER NOT NULL DEFAULT 0,"
	" coarse INTEGER NOT NULL DEFAULT 0, tot4 INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX IF NOT EXISTS windows_start ON windows(start_ns);"
	"CREATE TABLE IF NOT EXISTS locks(win INTEGER NOT NULL, cls TEXT NOT NULL, ns INTEGER NOT NULL,"
	" PRIMARY KEY(win, cls)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS samples(type INTEGER NOT NULL, ls INTEGER NOT NULL, t INTEGER NOT NULL,"
	" win INTEGER NOT NULL, data BLOB NOT NULL,"
	" PRIMARY KEY(type, ls, t, win)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS lockclasses(win INTEGER NOT NULL, cls TEXT NOT NULL, level INTEGER NOT NULL,"
	" mode INTEGER NOT NULL, acquired INTEGER NOT NULL, contended INTEGER NOT NULL, wait_ns INTEGER NOT NULL,"
	" wait_max_ns INTEGER NOT NULL, hold_ns INTEGER NOT NULL, holds INTEGER NOT NULL, hold_max_ns INTEGER NOT NULL);"
	"CREATE INDEX IF NOT EXISTS lockclasses_win ON lockclasses(win);"
	"CREATE TABLE IF NOT EXISTS lockinst(win INTEGER NOT NULL, addr INTEGER NOT NULL, cls TEXT NOT NULL,"
	" tree INTEGER NOT NULL, level INTEGER NOT NULL, grp INTEGER NOT NULL, acquired INTEGER NOT NULL,"
	" contended INTEGER NOT NULL, wait_ns INTEGER NOT NULL, wait_max_ns INTEGER NOT NULL);"
	"CREATE INDEX IF NOT EXISTS lockinst_win ON lockinst(win);"
	"CREATE TABLE IF NOT EXISTS lockstacks(win INTEGER NOT NULL, cls TEXT NOT NULL, level INTEGER NOT NULL,"
	" stack INTEGER NOT NULL, wait_ns INTEGER NOT NULL, count INTEGER NOT NULL);"
	"CREATE INDEX IF NOT EXISTS lockstacks_win ON lockstacks(win);"
	"CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT);"
	"INSERT OR IGNORE INTO meta VALUES('schema', '3');";

/* ---- packed samples ------------------------------------------------------- */

struct pair { int64_t id; uint64_t count; };

static int by_id(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static size_t put_varint(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (unsigned char)v;
	return n;
}

static int get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	uint64_t x = 0;
	int shift = 0;

	while (*p < end && shift < 64) {
		unsigned char b = *(*p)++;

		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
		shift += 7;
	}
	return -EIO;
}

/* Sort PAIRS by id and pack them into a malloc'ed blob. */
static unsigned char *pack(struct pair *v, size_t n, size_t *len)
{
	unsigned char *buf = malloc(n * 20 + 1), *p = buf;
	int64_t prev = 0;

	if (!buf)
		return NULL;
	qsort(v, n, sizeof(*v), by_id);
	for (size_t i = 0; i < n; i++) {
		p += put_varint(p, (uint64_t)(v[i].id - prev));
		p += put_varint(p, v[i].count);
		prev = v[i].id;
	}
	*len = p - buf;
	return buf;
}

typedef int (*pair_cb)(void *arg, int64_t id, uint64_t count);

static int unpack(const void *blob, size_t len, pair_cb cb, void *arg)
{
	const unsigned char *p = blob, *end = p + len;
	int64_t id = 0;

	while (p < end) {
		uint64_t d, c;
		int rc;

		if (get_varint(&p, end, &d) || get_varint(&p, end, &c))
			return -EIO;	/* corrupt blob: report, never guess */
		id += (int64_t)d;
		if ((rc = cb(arg, id, c)))
			return rc;
	}
	return 0;
}

static int sqerr(sqlite3 *db, char *msg, size_t msglen, const char *what)
{
	snprintf(msg, msglen, "sqlite: %s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
	return -EIO;
}

static int prep(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
	return sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) == SQLITE_OK
		? 0 : -EIO;
}

/* Reset ST, bind the arguments TYPES names -- 'i' int64, 'n' int64 or NULL
 * when negative (an absent summary), 'd' int, 't' text (NUL-terminated,
 * static for the statement's life) -- and step once.  Returns 0 on
 * SQLITE_DONE, 1 on SQLITE_ROW (the row stays readable until the next
 * reset), -EIO on error.  The one bind-and-step loop of this file. */
static int sq_step(sqlite3_stmt *st, const char *types, ...)
{
	va_list ap;
	int i = 1, rc;

	sqlite3_reset(st);
	va_start(ap, types);
	for (const char *t = types; *t; t++, i++) {
		switch (*t) {
		case 'i': sqlite3_bind_int64(st, i, va_arg(ap, int64_t)); break;
		case 'd': sqlite3_bind_int(st, i, va_arg(ap, int)); break;
		case 't': sqlite3_bind_text(st, i, va_arg(ap, const char *), -1, SQLITE_STATIC); break;
		case 'n': {
			int64_t v = va_arg(ap, int64_t);

			if (v < 0)
				sqlite3_bind_null(st, i);
			else
				sqlite3_bind_int64(st, i, v);
			break;
		}
		}
	}
	va_end(ap);
	rc = sqlite3_step(st);
	return rc == SQLITE_DONE ? 0 : rc == SQLITE_ROW ? 1 : -EIO;
}

/* Prepare SQL on DB, bind FROM and UNTIL to ?1 and ?2, and hand every row
 * to ROW; stops at the first non-zero return.  0, ROW's code or -EIO. */
typedef int (*sq_row_fn)(sqlite3_stmt *st, void *arg);
static int sq_scan(sqlite3 *db, const char *sql, int64_t from, int64_t until, sq_row_fn row, void *arg)
{
	sqlite3_stmt *st;
	int rc;

	if (!db || sqlite3_prepare_v2(db, sql, -1, &st, NULL))
		return -EIO;
	if (sqlite3_bind_parameter_count(st) >= 2) {
		sqlite3_bind_int64(st, 1, from);
		sqlite3_bind_int64(st, 2, until);
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if ((rc = row(st, arg)))
			break;
	if (rc == SQLITE_DONE)
		rc = 0;
	else if (rc > 0)
		rc = -EIO;
	sqlite3_finalize(st);
	return rc;
}

/* ---- readers ------------------------------------------------------------ */

static sqlite3 *reader(struct sq_store *s)
{
	struct sq_reader *r = pthread_getspecific(s->rkey);

	if (r)
		return r->db;
	if (!(r = calloc(1, sizeof(*r))))
		return NULL;
	if (sqlite3_open_v2(s->path, &r->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		sqlite3_close(r->db);
		free(r);
		return NULL;
	}
	sqlite3_busy_timeout(r->db, 5000);
	sqlite3_exec(r->db, "PRAGMA cache_size=-65536;", NULL, NULL, NULL);
	pthread_mutex_lock(&s->rlock);
	r->next = s->readers;
	s->readers = r;
	pthread_mutex_unlock(&s->rlock);
	pthread_setspecific(s->rkey, r);
	return r->db;
}

/* ---- writer ------------------------------------------------------------- */

static int stack_id(struct sq_store *s, const struct folded_stack *fs, int64_t *id,
		    int *cacheable)
{
	uint64_t key = fs->hash ? fs->hash : 1;
	uint64_t *slot = hmap_get(&s->stack_cache, key);
	int rc;

	*cacheable = 0;
	if (slot) {
		struct stack_ent *e = &s->ents[*slot - 1];

		if (!strcmp(e->text, fs->stack)) {
			*id = e->id;
			return 0;
		}
	}
	/* fs->stack is NUL-terminated at fs->len (folded.h) */
	rc = sq_step(s->st_stack_get, "it", (int64_t)fs->hash, fs->stack);
	if (rc == 1) {
		*id = sqlite3_column_int64(s->st_stack_get, 0);
		*cacheable = !slot;
		sqlite3_reset(s->st_stack_get);	/* an open SELECT would pin the WAL */
		return 0;
	}
	if (rc || sq_step(s->st_stack_ins, "it", (int64_t)fs->hash, fs->stack))
		return -EIO;
	*id = sqlite3_last_insert_rowid(s->w);
	*cacheable = !slot;
	return 0;
}

struct pending { const struct folded_stack *fs; int64_t id; };

static int pend_add(struct pending **pend, size_t *n, size_t *cap,
		    const struct folded_stack *fs, int64_t id)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct pending *np = realloc(*pend, nc * sizeof(*np));

		if (!np)
			return -ENOMEM;
		*pend = np;
		*cap = nc;
	}
	(*pend)[*n].fs = fs;
	(*pend)[(*n)++].id = id;
	return 0;
}

/* The lock detail of window WIN (inside the put transaction). */
static int put_lockdetail(struct sq_store *s, int64_t win, const struct agg_lockdetail *lk,
			  struct pending **pend, size_t *npend, size_t *cappend)
{
	for (size_t i = 0; i < lk->ncls; i++) {
		const struct agg_lockclass *c = &lk->cls[i];

		if (sq_step(s->st_lkc_ins, "itddiiiiiii", win, c->cls, c->level, c->mode,
			    (int64_t)c->acquired, (int64_t)c->contended, (int64_t)c->wait_ns,
			    (int64_t)c->wait_max_ns, (int64_t)c->hold_ns, (int64_t)c->holds,
			    (int64_t)c->hold_max_ns))
			return -EIO;
	}
	for (size_t i = 0; i < lk->ninst; i++) {
		const struct agg_lockinst *in = &lk->inst[i];

		if (sq_step(s->st_lki_ins, "iitiddiiii", win, (int64_t)in->addr, in->cls,
			    (int64_t)in->tree, in->level, in->group, (int64_t)in->acquired,
			    (int64_t)in->contended, (int64_t)in->wait_ns, (int64_t)in->wait_max_ns))
			return -EIO;
	}
	for (size_t i = 0; i < lk->nstk; i++) {
		const struct agg_lockstack *k = &lk->stk[i];
		int64_t sid;
		int cacheable;

		if (stack_id(s, &k->fs, &sid, &cacheable))
			return -EIO;
		if (cacheable && pend_add(pend, npend, cappend, &k->fs, sid))
			return -ENOMEM;
		if (sq_step(s->st_lks_ins, "itdiii", win, k->cls, k->level, sid,
			    (int64_t)k->wait_ns, (int64_t)k->count))
			return -EIO;
	}
	return 0;
}

static int labelset_id(struct sq_store *s, const char *canon, const char *host, int64_t *id)
{
	int rc;

	rc = sq_step(s->st_ls_get, "t", canon);
	if (rc == 1) {
		*id = sqlite3_column_int64(s->st_ls_get, 0);
		sqlite3_reset(s->st_ls_get);
		return 0;
	}
	if (rc || sq_step(s->st_ls_ins, "tt", canon, host))
		return -EIO;
	*id = sqlite3_last_insert_rowid(s->w);
	return 0;
}

static int sq_put(struct store *base, const struct agg_window *w, int *duplicate)
{
	struct sq_store *s = (struct sq_store *)base;
	char *canon = agg_labels_canon(&w->labels);
	struct pending *pend = NULL;
	size_t npend = 0, cappend = 0;
	int64_t ls, win, locksum, tot[PT_NTYPES];
	int units, rc = -EIO;

	*duplicate = 0;
	if (!canon)
		return -ENOMEM;
	store_window_sums(w, tot, &units, &locksum);
	pthread_mutex_lock(&s->wlock);
	if (sqlite3_exec(s->w, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		goto unlock;
	rc = sq_step(s->st_win_exists, "t", w->window_id);
	sqlite3_reset(s->st_win_exists);
	if (rc == 1) {
		*duplicate = 1;
		rc = 0;
		goto rollback;
	}
	rc = -EIO;
	if (labelset_id(s, canon, w->host, &ls))
		goto rollback;
	_Static_assert(PT_NTYPES == 5, "windows has tot0..tot4: one column per profile type");
	if (sq_step(s->st_win_ins, "ttiiiinnnniiiiid", w->window_id, w->host, ls, (int64_t)w->start_ns,
		    (int64_t)w->end_ns, agg_now_ns(), (int64_t)w->commit_p99_ns,
		    (int64_t)w->commit_count, (int64_t)w->trim_stall_ns, locksum,
		    tot[0], tot[1], tot[2], tot[3], tot[4], units))
		goto rollback;
	win = sqlite3_last_insert_rowid(s->w);
	for (size_t i = 0; i < w->nlocks; i++)
		if (sq_step(s->st_lock_ins, "iti", win, w->locks[i].cls, (int64_t)w->locks[i].ns))
			goto rollback;
	if ((rc = put_lockdetail(s, win, &w->lk, &pend, &npend, &cappend)))
		goto rollback;
	rc = -EIO;
	for (size_t p = 0; p < w->nprof; p++) {
		const struct folded_set *set = w->prof[p].set;
		size_t n = folded_set_size(set), bloblen;
		struct pair *pairs = malloc((n + 1) * sizeof(*pairs));
		unsigned char *blob;

		if (!pairs) {
			rc = -ENOMEM;
			goto rollback;
		}
		for (size_t i = 0; i < n; i++) {
			const struct folded_stack *fs = folded_set_get(set, i);
			int64_t sid;
			int cacheable;

			if (stack_id(s, fs, &sid, &cacheable)) {
				free(pairs);
				goto rollback;
			}
			if (cacheable && pend_add(&pend, &npend, &cappend, fs, sid)) {
				free(pairs);
				rc = -ENOMEM;
				goto rollback;
			}
			pairs[i].id = sid;
			pairs[i].count = fs->count;
		}
		blob = pack(pairs, n, &bloblen);
		free(pairs);
		if (!blob) {
			rc = -ENOMEM;
			goto rollback;
		}
		sqlite3_reset(s->st_sample_ins);
		sqlite3_bind_int(s->st_sample_ins, 1, w->prof[p].type);
		sqlite3_bind_int64(s->st_sample_ins, 2, ls);
		sqlite3_bind_int64(s->st_sample_ins, 3, w->start_ns);
		sqlite3_bind_int64(s->st_sample_ins, 4, win);
		sqlite3_bind_blob(s->st_sample_ins, 5, blob, (int)bloblen, free);
		if (sqlite3_step(s->st_sample_ins) != SQLITE_DONE)
			goto rollback;
	}
	if (sqlite3_exec(s->w, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto rollback;
	/* Committed: only now may the cache learn the new ids. */
	for (size_t i = 0; i < npend; i++) {
		uint64_t key = pend[i].fs->hash ? pend[i].fs->hash : 1, *slot;
		char *t;

		if (hmap_get(&s->stack_cache, key))
			continue;
		if (s->nents == s->capents) {
			size_t nc = s->capents ? s->capents * 2 : 4096;
			struct stack_ent *ne = realloc(s->ents, nc * sizeof(*ne));

			if (!ne)
				break;
			s->ents = ne;
			s->capents = nc;
		}
		if (!(t = strdup(pend[i].fs->stack)))
			break;
		if (!(slot = hmap_slot(&s->stack_cache, key))) {
			free(t);
			break;
		}
		s->ents[s->nents].id = pend[i].id;
		s->ents[s->nents].text = t;
		*slot = ++s->nents;
	}
	rc = 0;
	goto unlock;
rollback:
	sqlite3_exec(s->w, "ROLLBACK", NULL, NULL, NULL);
unlock:
	pthread_mutex_unlock(&s->wlock);
	free(pend);
	free(canon);
	return rc;
}

/* ---- reads -------------------------------------------------------------- */

struct ls_scan { store_labelset_cb cb; void *arg; };
static int ls_row(sqlite3_stmt *st, void *arg)
{
	struct ls_scan *l = arg;

	return l->cb(l->arg, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1));
}

static int sq_labelsets(struct store *base, store_labelset_cb cb, void *arg)
{
	struct ls_scan l = { cb, arg };

	return sq_scan(reader((struct sq_store *)base), "SELECT id, canon FROM labelsets", 0, 0, ls_row, &l);
}

struct scan_arg {
	store_sample_cb cb;
	void *arg;
	int64_t ls;
};

static int scan_pair(void *arg, int64_t id, uint64_t count)
{
	struct scan_arg *sa = arg;

	return sa->cb(sa->arg, sa->ls, id, count);
}

static int sq_samples(struct store *base, int type, const int64_t *lss, size_t n,
		      int64_t from, int64_t until, store_sample_cb cb, void *arg)
{
	struct sq_store *s = (struct sq_store *)base;
	sqlite3 *db = reader(s);
	sqlite3_stmt *st;
	int rc = 0;

	struct scan_arg sa = { .cb = cb, .arg = arg };

	if (!db || sqlite3_prepare_v2(db, "SELECT data FROM samples WHERE type=? AND ls=?"
				      " AND t>=? AND t<?", -1, &st, NULL))
		return -EIO;
	/* One read transaction: a consistent snapshot across label sets. */
	sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
	for (size_t i = 0; i < n && !rc; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int(st, 1, type);
		sqlite3_bind_int64(st, 2, lss[i]);
		sqlite3_bind_int64(st, 3, from);
		sqlite3_bind_int64(st, 4, until);
		sa.ls = lss[i];
		while ((rc = sqlite3_step(st)) == SQLITE_ROW)
			if ((rc = unpack(sqlite3_column_blob(st, 0), sqlite3_column_bytes(st, 0),
					 scan_pair, &sa)))
				break;
		if (rc == SQLITE_DONE)
			rc = 0;
		else if (rc > 0)
			rc = -EIO;
	}
	sqlite3_finalize(st);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	return rc;
}

static int sq_stack_text(struct store *base, int64_t id, char **text)
{
	struct sq_store *s = (struct sq_store *)base;
	sqlite3 *db = reader(s);
	sqlite3_stmt *st;
	int rc;

	if (!db || sqlite3_prepare_v2(db, "SELECT text FROM stacks WHERE id=?", -1, &st, NULL))
		return -EIO;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*text = strdup((const char *)sqlite3_column_text(st, 0));
		rc = *text ? 0 : -ENOMEM;
	} else
		rc = rc == SQLITE_DONE ? -ENOENT : -EIO;
	sqlite3_finalize(st);
	return rc;
}

static int64_t col_opt(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

struct win_scan { store_window_cb cb; void *arg; };
static int win_row(sqlite3_stmt *st, void *arg)
{
	struct win_scan *ws = arg;
	struct store_window_row r = {
		.id = sqlite3_column_int64(st, 0),
		.labelset = sqlite3_column_int64(st, 1),
		.start_ns = sqlite3_column_int64(st, 2),
		.end_ns = sqlite3_column_int64(st, 3),
		.host = (const char *)sqlite3_column_text(st, 4),
		.commit_p99_ns = col_opt(st, 5),
		.commit_count = col_opt(st, 6),
		.trim_stall_ns = col_opt(st, 7),
		.lock_wait_ns = col_opt(st, 8),
	};
	int units = sqlite3_column_int(st, 14);

	for (int t = 0; t < PT_NTYPES; t++) {
		r.total[t] = sqlite3_column_int64(st, 9 + t);
		r.units[t] = units & (1 << t) ? UNITS_SAMPLES : UNITS_NS;
	}
	return ws->cb(ws->arg, &r);
}

static int sq_windows(struct store *base, int64_t from, int64_t until,
		      store_window_cb cb, void *arg)
{
	struct win_scan ws = { cb, arg };

	return sq_scan(reader((struct sq_store *)base),
		       "SELECT id, ls, start_ns, end_ns, host, commit_p99_ns,"
		       " commit_count, trim_stall_ns, lock_wait_ns, tot0, tot1, tot2, tot3, tot4, units"
		       " FROM windows WHERE start_ns>=?1 AND start_ns<?2 ORDER BY start_ns", from, until,
		       win_row, &ws);
}

struct lock_scan { store_lock_cb cb; void *arg; };
static int lock_row(sqlite3_stmt *st, void *arg)
{
	struct lock_scan *l = arg;

	return l->cb(l->arg, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
		     sqlite3_column_int64(st, 2), (const char *)sqlite3_column_text(st, 3),
		     sqlite3_column_int64(st, 4));
}

static int sq_locks(struct store *base, int64_t from, int64_t until,
		    store_lock_cb cb, void *arg)
{
	struct lock_scan l = { cb, arg };

	return sq_scan(reader((struct sq_store *)base),
		       "SELECT w.ls, w.host, w.start_ns, l.cls, l.ns FROM windows w"
		       " JOIN locks l ON l.win = w.id WHERE w.start_ns>=?1 AND w.start_ns<?2"
		       " ORDER BY w.start_ns", from, until, lock_row, &l);
}

struct lockrow_scan { store_lockrow_cb cb; void *arg; int kind; };
static int lockrow_row(sqlite3_stmt *st, void *arg)
{
	struct lockrow_scan *l = arg;
	struct store_lockrow r = {
		.kind = l->kind,
		.labelset = sqlite3_column_int64(st, 0),
		.host = (const char *)sqlite3_column_text(st, 1),
		.start_ns = sqlite3_column_int64(st, 2),
		.cls = (const char *)sqlite3_column_text(st, 3),
		.level = sqlite3_column_int(st, 4),
	};

	switch (l->kind) {
	case LK_CLASS:
		r.mode = sqlite3_column_int(st, 5);
		r.acquired = sqlite3_column_int64(st, 6);
		r.contended = sqlite3_column_int64(st, 7);
		r.wait_ns = sqlite3_column_int64(st, 8);
		r.wait_max_ns = sqlite3_column_int64(st, 9);
		r.hold_ns = sqlite3_column_int64(st, 10);
		r.holds = sqlite3_column_int64(st, 11);
		r.hold_max_ns = sqlite3_column_int64(st, 12);
		break;
	case LK_INST:
		r.addr = (uint64_t)sqlite3_column_int64(st, 5);
		r.tree = (uint64_t)sqlite3_column_int64(st, 6);
		r.group = sqlite3_column_int(st, 7);
		r.acquired = sqlite3_column_int64(st, 8);
		r.contended = sqlite3_column_int64(st, 9);
		r.wait_ns = sqlite3_column_int64(st, 10);
		r.wait_max_ns = sqlite3_column_int64(st, 11);
		break;
	default:
		r.stack = sqlite3_column_int64(st, 5);
		r.wait_ns = sqlite3_column_int64(st, 6);
		r.count = sqlite3_column_int64(st, 7);
		break;
	}
	if (!r.host || !r.cls)
		return 0;
	return l->cb(l->arg, &r);
}

static int sq_lockrows(struct store *base, int kind, int64_t from, int64_t until,
		       store_lockrow_cb cb, void *arg)
{
	static const char *const sql[] = {
		[LK_CLASS] = "SELECT w.ls, w.host, w.start_ns, c.cls, c.level, c.mode, c.acquired, c.contended,"
			     " c.wait_ns, c.wait_max_ns, c.hold_ns, c.holds, c.hold_max_ns"
			     " FROM windows w JOIN lockclasses c ON c.win = w.id"
			     " WHERE w.start_ns>=?1 AND w.start_ns<?2 ORDER BY w.start_ns",
		[LK_INST] = "SELECT w.ls, w.host, w.start_ns, i.cls, i.level, i.addr, i.tree, i.grp, i.acquired,"
			    " i.contended, i.wait_ns, i.wait_max_ns"
			    " FROM windows w JOIN lockinst i ON i.win = w.id"
			    " WHERE w.start_ns>=?1 AND w.start_ns<?2 ORDER BY w.start_ns",
		[LK_STACK] = "SELECT w.ls, w.host, w.start_ns, k.cls, k.level, k.stack, k.wait_ns, k.count"
			     " FROM windows w JOIN lockstacks k ON k.win = w.id"
			     " WHERE w.start_ns>=?1 AND w.start_ns<?2 ORDER BY w.start_ns",
	};
	struct lockrow_scan l = { cb, arg, kind };

	if (kind < LK_CLASS || kind > LK_STACK)
		return -EINVAL;
	return sq_scan(reader((struct sq_store *)base), sql[kind], from, until, lockrow_row, &l);
}

static int sq_stats(struct store *base, struct store_stats *out)
{
	struct sq_store *s = (struct sq_store *)base;
	sqlite3 *db = reader(s);
	sqlite3_stmt *st;
	struct stat sb;

	memset(out, 0, sizeof(*out));
	if (!db || sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM windows), (SELECT max(id) FROM stacks),"
				      " (SELECT count(*) FROM labelsets)", -1, &st, NULL))
		return -EIO;
	if (sqlite3_step(st) == SQLITE_ROW) {
		out->windows = sqlite3_column_int64(st, 0);
		out->stacks = sqlite3_column_int64(st, 1);
		out->labelsets = sqlite3_column_int64(st, 2);
	}
	sqlite3_finalize(st);
	if (!stat(s->path, &sb))
		out->bytes = sb.st_size;
	return 0;
}

/* ---- retention ---------------------------------------------------------- */

static int exec1(sqlite3 *db, const char *sql, int64_t a)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL))
		return -EIO;
	sqlite3_bind_int64(st, 1, a);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(st);
	return rc;
}

static void clear_stack_cache(struct sq_store *s)
{
	for (size_t i = 0; i < s->nents; i++)
		free(s->ents[i].text);
	s->nents = 0;
	hmap_free(&s->stack_cache);
}

/* Downsampling sums saturate at INT64_MAX, as queries do (query.c), and
 * never fail: SQLite's sum() raises "integer overflow" and one such bucket
 * stopped every pass.  satsum(x) is sum() for non-negative integers,
 * satadd(a, b) is a + b; NULLs are skipped (satsum of none is NULL). */
static int64_t sat64(int64_t a, int64_t b)
{
	if (a < 0)
		a = 0;
	if (b < 0)
		b = 0;
	return a > INT64_MAX - b ? INT64_MAX : a + b;
}

struct satsum_ctx { int64_t v; int any; };

static void satsum_step(sqlite3_context *c, int n, sqlite3_value **v)
{
	struct satsum_ctx *x = sqlite3_aggregate_context(c, sizeof(*x));

	(void)n;
	if (!x || sqlite3_value_type(v[0]) == SQLITE_NULL)
		return;
	x->v = sat64(x->v, sqlite3_value_int64(v[0]));
	x->any = 1;
}

static void satsum_final(sqlite3_context *c)
{
	struct satsum_ctx *x = sqlite3_aggregate_context(c, 0);

	if (x && x->any)
		sqlite3_result_int64(c, x->v);
	else
		sqlite3_result_null(c);
}

static void satadd_fn(sqlite3_context *c, int n, sqlite3_value **v)
{
	(void)n;
	if (sqlite3_value_type(v[0]) == SQLITE_NULL || sqlite3_value_type(v[1]) == SQLITE_NULL)
		sqlite3_result_null(c);
	else
		sqlite3_result_int64(c, sat64(sqlite3_value_int64(v[0]), sqlite3_value_int64(v[1])));
}

/* Merge the fine windows of one (labelset, bucket) into one coarse window. */
struct acc { struct hmap m; };

static int acc_pair(void *arg, int64_t id, uint64_t count)
{
	uint64_t *v = hmap_slot(&((struct acc *)arg)->m, (uint64_t)id + 1);

	if (!v)
		return -ENOMEM;
	*v = (uint64_t)sat64((int64_t)*v, count > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)count);
	return 0;
}

/* Write the accumulated pairs as the coarse window's row for TYPE. */
static int flush_acc(sqlite3 *db, struct acc *a, int type, int64_t ls, int64_t t, int64_t cw)
{
	struct pair *v = malloc((a->m.n + 1) * sizeof(*v));
	sqlite3_stmt *st = NULL;
	unsigned char *blob;
	size_t n = 0, len;
	int rc = -EIO;

	if (!v)
		return -ENOMEM;
	/* the coarse window may already hold a row from an earlier pass */
	if (sqlite3_prepare_v2(db, "SELECT data FROM samples WHERE type=? AND ls=? AND t=? AND win=?",
			       -1, &st, NULL))
		goto out;
	sqlite3_bind_int(st, 1, type);
	sqlite3_bind_int64(st, 2, ls);
	sqlite3_bind_int64(st, 3, t);
	sqlite3_bind_int64(st, 4, cw);
	if (sqlite3_step(st) == SQLITE_ROW &&
	    unpack(sqlite3_column_blob(st, 0), sqlite3_column_bytes(st, 0), acc_pair, a))
		goto out;
	sqlite3_finalize(st);
	st = NULL;
	free(v);
	if (!(v = malloc((a->m.n + 1) * sizeof(*v))))
		return -ENOMEM;
	for (size_t i = 0; i < a->m.cap; i++)
		if (a->m.keys[i]) {
			v[n].id = (int64_t)a->m.keys[i] - 1;
			v[n++].count = a->m.vals[i];
		}
	if (!(blob = pack(v, n, &len))) {
		rc = -ENOMEM;
		goto out;
	}
	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO samples(type, ls, t, win, data) VALUES(?,?,?,?,?)",
			       -1, &st, NULL)) {
		free(blob);
		goto out;
	}
	sqlite3_bind_int(st, 1, type);
	sqlite3_bind_int64(st, 2, ls);
	sqlite3_bind_int64(st, 3, t);
	sqlite3_bind_int64(st, 4, cw);
	sqlite3_bind_blob(st, 5, blob, (int)len, free);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
out:
	sqlite3_finalize(st);
	free(v);
	hmap_free(&a->m);
	return rc;
}

/* Sum the packed samples of every fine window in ds into its coarse window. */
static int coarsen_samples(sqlite3 *db)
{
	sqlite3_stmt *st;
	struct acc a = { 0 };
	int64_t cur_cw = -1, cur_ls = 0, cur_t = 0;
	int cur_type = -1, rc = 0;

	if (sqlite3_prepare_v2(db,
		"SELECT ds.cw, cw.ls, cw.start_ns, s.type, s.data FROM ds"
		" JOIN windows fw ON fw.id = ds.win JOIN windows cw ON cw.id = ds.cw"
		" JOIN samples s ON s.type IN (0,1,2,3) AND s.ls = ds.ls AND s.t = fw.start_ns AND s.win = ds.win"
		" ORDER BY ds.cw, s.type", -1, &st, NULL))
		return -EIO;
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		int64_t cw = sqlite3_column_int64(st, 0);
		int type = sqlite3_column_int(st, 3);

		if ((cw != cur_cw || type != cur_type) && cur_cw >= 0)
			rc = flush_acc(db, &a, cur_type, cur_ls, cur_t, cur_cw);
		cur_cw = cw;
		cur_type = type;
		cur_ls = sqlite3_column_int64(st, 1);
		cur_t = sqlite3_column_int64(st, 2);
		if (!rc)
			rc = unpack(sqlite3_column_blob(st, 4), sqlite3_column_bytes(st, 4), acc_pair, &a);
	}
	sqlite3_finalize(st);
	if (!rc && cur_cw >= 0)
		rc = flush_acc(db, &a, cur_type, cur_ls, cur_t, cur_cw);
	hmap_free(&a.m);
	return rc;
}

/* Drop stacks no sample references any more (after retention deleted some). */
static int gc_stacks(sqlite3 *db)
{
	struct acc a = { 0 };
	sqlite3_stmt *st, *del;
	int rc = 0;

	if (sqlite3_prepare_v2(db, "SELECT data FROM samples", -1, &st, NULL))
		return -EIO;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = unpack(sqlite3_column_blob(st, 0), sqlite3_column_bytes(st, 0), acc_pair, &a);
	sqlite3_finalize(st);
	/* the lock detail's waiter stacks are references too */
	if (!rc && sqlite3_prepare_v2(db, "SELECT DISTINCT stack FROM lockstacks", -1, &st, NULL) == SQLITE_OK) {
		while (!rc && sqlite3_step(st) == SQLITE_ROW)
			rc = acc_pair(&a, sqlite3_column_int64(st, 0), 1);
		sqlite3_finalize(st);
	}
	if (rc || sqlite3_prepare_v2(db, "SELECT id FROM stacks", -1, &st, NULL)) {
		hmap_free(&a.m);
		return rc ? rc : -EIO;
	}
	if (sqlite3_prepare_v2(db, "DELETE FROM stacks WHERE id=?", -1, &del, NULL)) {
		sqlite3_finalize(st);
		hmap_free(&a.m);
		return -EIO;
	}
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		if (hmap_get(&a.m, (uint64_t)id + 1))
			continue;
		sqlite3_reset(del);
		sqlite3_bind_int64(del, 1, id);
		if (sqlite3_step(del) != SQLITE_DONE)
			rc = -EIO;
	}
	sqlite3_finalize(del);
	sqlite3_finalize(st);
	hmap_free(&a.m);
	return rc;
}

/* Fold the windows below level TIER that start before coarse_ns into one
 * level-TIER window per (labelset, bucket): wkey "coarse:LS:B" for tier 1
 * (the name earlier releases used), "coarseN:LS:B" above.  Runs inside
 * sq_retain's transaction, so a crash anywhere leaves the fine windows. */
static int coarsen(struct sq_store *s, int64_t coarse_ns, int64_t bucket_ns, int tier)
{
	sqlite3 *db = s->w;
	char sql[2048], prefix[16];
	int rc = 0;

	if (tier == 1)
		snprintf(prefix, sizeof(prefix), "coarse:");
	else
		snprintf(prefix, sizeof(prefix), "coarse%d:", tier);

	/* ds: every fine window to fold, with its target bucket. */
	if (sqlite3_exec(db, "CREATE TEMP TABLE IF NOT EXISTS ds(win INTEGER PRIMARY KEY, ls INTEGER,"
			 " b INTEGER, cw INTEGER); DELETE FROM ds;", NULL, NULL, NULL))
		return -EIO;
	snprintf(sql, sizeof(sql),
		 "INSERT INTO ds(win, ls, b) SELECT id, ls, start_ns / %lld FROM windows"
		 " WHERE coarse < %d AND start_ns < ?", (long long)bucket_ns, tier);
	if ((rc = exec1(db, sql, coarse_ns)))
		return rc;
	snprintf(sql, sizeof(sql),
		 "INSERT OR IGNORE INTO windows(wkey, host, ls, start_ns, end_ns, recv_ns, coarse)"
		 " SELECT '%s' || ds.ls || ':' || ds.b, min(w.host), ds.ls, ds.b * %lld,"
		 " (ds.b + 1) * %lld, ?, %d FROM ds JOIN windows w ON w.id = ds.win GROUP BY ds.ls, ds.b",
		 prefix, (long long)bucket_ns, (long long)bucket_ns, tier);
	if ((rc = exec1(db, sql, agg_now_ns())))
		return rc;
	snprintf(sql, sizeof(sql),
		 "UPDATE ds SET cw = (SELECT id FROM windows WHERE wkey = '%s' || ds.ls || ':' || ds.b)", prefix);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL))
		return -EIO;
	if (sqlite3_exec(db,
		"UPDATE windows SET"
		" commit_p99_ns = max(coalesce(windows.commit_p99_ns,-1), (SELECT max(coalesce(w.commit_p99_ns,-1))"
		"   FROM ds JOIN windows w ON w.id = ds.win WHERE ds.cw = windows.id)),"
		" commit_count = satadd(coalesce(windows.commit_count,0), (SELECT coalesce(satsum(w.commit_count),0) FROM ds JOIN windows w ON w.id = ds.win WHERE ds.cw = windows.id)),"
		" trim_stall_ns = satadd(coalesce(windows.trim_stall_ns,0), (SELECT coalesce(satsum(w.trim_stall_ns),0) FROM ds JOIN windows w ON w.id = ds.win WHERE ds.cw = windows.id)),"
		" lock_wait_ns = satadd(coalesce(windows.lock_wait_ns,0), (SELECT coalesce(satsum(w.lock_wait_ns),0) FROM ds JOIN windows w ON w.id = ds.win WHERE ds.cw = windows.id)),"
		" tot0 = satadd(tot0, (SELECT satsum(w.tot0) FROM ds JOIN windows w ON w.id = ds.win WHERE ds.cw = windows.id)),"
		" tot1 = satadd(tot1, (SELECT satsum(w.tot1) FROM ds JOIN windows w ON w.id = ds.win WHERE ds.cw = windows.id)),"
		" tot2 = satadd(tot2, (SELECT satsum(w.tot2) FROM ds JOIN windows w ON w.id = ds.win WHERE ds.cw = windows.id)),"
		" tot3 = satadd(tot3, (SELECT satsum(w.tot3) FROM ds JOIN windows w ON w.id = ds.win WHERE ds.cw = windows.id)),"
		" tot4 = satadd(tot4, (SELECT satsum(w.tot4) FROM ds JOIN windows w ON w.id = ds.win WHERE ds.cw = windows.id)),"
		" units = units | (SELECT max(w.units) FROM ds JOIN windows w ON w.id = ds.win WHERE ds.cw = windows.id)"
		" WHERE id IN (SELECT cw FROM ds);"
		"UPDATE windows SET commit_p99_ns = NULL WHERE commit_p99_ns = -1 AND id IN (SELECT cw FROM ds);"
		"INSERT INTO locks(win, cls, ns) SELECT ds.cw, l.cls, satsum(l.ns) FROM ds JOIN locks l ON l.win = ds.win"
		" WHERE true GROUP BY ds.cw, l.cls ON CONFLICT(win, cls) DO UPDATE SET ns = satadd(ns, excluded.ns);"
		, NULL, NULL, NULL))
		return -EIO;
	if ((rc = coarsen_samples(db)))
		return rc;
	if (sqlite3_exec(db,
		"DELETE FROM samples WHERE (type, ls, t, win) IN (SELECT s.type, s.ls, s.t, s.win FROM ds"
		" JOIN windows fw ON fw.id = ds.win JOIN samples s ON s.ls = ds.ls AND s.t = fw.start_ns"
		" AND s.win = ds.win AND s.type IN (0,1,2,3,4));"
		"DELETE FROM locks WHERE win IN (SELECT win FROM ds);"
		"UPDATE lockclasses SET win = (SELECT cw FROM ds WHERE ds.win = lockclasses.win) WHERE win IN (SELECT win FROM ds);"
		"UPDATE lockinst SET win = (SELECT cw FROM ds WHERE ds.win = lockinst.win) WHERE win IN (SELECT win FROM ds);"
		"UPDATE lockstacks SET win = (SELECT cw FROM ds WHERE ds.win = lockstacks.win) WHERE win IN (SELECT win FROM ds);"
		"DELETE FROM windows WHERE id IN (SELECT win FROM ds);",
		NULL, NULL, NULL))
		return -EIO;
	return 0;
}

static int sq_retain(struct store *base, int64_t drop_ns, const struct store_tier *tiers, int ntiers)
{
	struct sq_store *s = (struct sq_store *)base;
	int rc = -EIO;
	sqlite3_stmt *st = NULL;

	pthread_mutex_lock(&s->wlock);
	if (sqlite3_exec(s->w, "BEGIN IMMEDIATE", NULL, NULL, NULL))
		goto out;
	if (drop_ns > 0) {
		/* samples: one range delete per (type, labelset) prefix. */
		if (sqlite3_prepare_v2(s->w, "DELETE FROM samples WHERE type=?1 AND ls=?2 AND t<?3", -1, &st, NULL))
			goto rollback;
		sqlite3_stmt *ls;
		if (sqlite3_prepare_v2(s->w, "SELECT id FROM labelsets", -1, &ls, NULL))
			goto rollback;
		while (sqlite3_step(ls) == SQLITE_ROW) {
			for (int t = 0; t < PT_NTYPES; t++) {
				sqlite3_reset(st);
				sqlite3_bind_int(st, 1, t);
				sqlite3_bind_int64(st, 2, sqlite3_column_int64(ls, 0));
				sqlite3_bind_int64(st, 3, drop_ns);
				if (sqlite3_step(st) != SQLITE_DONE) {
					sqlite3_finalize(ls);
					goto rollback;
				}
			}
		}
		sqlite3_finalize(ls);
		if (exec1(s->w, "DELETE FROM locks WHERE win IN (SELECT id FROM windows WHERE start_ns < ?)", drop_ns) ||
		    exec1(s->w, "DELETE FROM lockclasses WHERE win IN (SELECT id FROM windows WHERE start_ns < ?)", drop_ns) ||
		    exec1(s->w, "DELETE FROM lockinst WHERE win IN (SELECT id FROM windows WHERE start_ns < ?)", drop_ns) ||
		    exec1(s->w, "DELETE FROM lockstacks WHERE win IN (SELECT id FROM windows WHERE start_ns < ?)", drop_ns) ||
		    exec1(s->w, "DELETE FROM windows WHERE start_ns < ?", drop_ns))
			goto rollback;
		if (sqlite3_changes(s->w) > 0) {
			if (gc_stacks(s->w))
				goto rollback;
			clear_stack_cache(s);
		}
	}
	/* Coarsest tier first: what it folds, the finer tiers need not fold
	 * only for it to be folded again. */
	for (int k = ntiers; k >= 1; k--) {
		int64_t b = tiers[k - 1].bucket_s * 1000000000LL, cut = tiers[k - 1].before_ns;

		if (cut <= 0 || b <= 0)
			continue;
		if (coarsen(s, cut / b * b, b, k))
			goto rollback;
		store_crashpoint(k == 1 ? "sqlite-tier1" : "sqlite-tier2");
	}
	if (sqlite3_exec(s->w, "COMMIT", NULL, NULL, NULL))
		goto rollback;
	rc = 0;
	goto out;
rollback:
	fprintf(stderr, "glass-aggd: retention: %s\n", sqlite3_errmsg(s->w));
	sqlite3_exec(s->w, "ROLLBACK", NULL, NULL, NULL);
	clear_stack_cache(s);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->wlock);
	return rc;
}

static void sq_close(struct store *base)
{
	struct sq_store *s = (struct sq_store *)base;
	sqlite3_stmt **sts[] = { &s->st_win_exists, &s->st_win_ins, &s->st_ls_get, &s->st_ls_ins,
				 &s->st_stack_get, &s->st_stack_ins, &s->st_sample_ins, &s->st_lock_ins,
				 &s->st_lkc_ins, &s->st_lki_ins, &s->st_lks_ins };

	if (!s)
		return;
	for (size_t i = 0; i < sizeof(sts) / sizeof(sts[0]); i++)
		sqlite3_finalize(*sts[i]);
	while (s->readers) {
		struct sq_reader *r = s->readers;

		s->readers = r->next;
		sqlite3_close(r->db);
		free(r);
	}
	if (s->w)
		sqlite3_exec(s->w, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
	sqlite3_close(s->w);
	clear_stack_cache(s);
	free(s->ents);
	pthread_key_delete(s->rkey);
	pthread_mutex_destroy(&s->wlock);
	pthread_mutex_destroy(&s->rlock);
	free(s->path);
	free(s);
}

static const struct store_ops sqlite_ops = {
	.name = "sqlite",
	.put = sq_put,
	.labelsets = sq_labelsets,
	.samples = sq_samples,
	.stack_text = sq_stack_text,
	.windows = sq_windows,
	.locks = sq_locks,
	.lockrows = sq_lockrows,
	.retain = sq_retain,
	.stats = sq_stats,
	.close = sq_close,
};

/* A file of schema 2 (four profile types) has no tot4: add it, in place,
 * before anything reads or writes windows.  Its existing windows get 0
 * there -- no wall profile was ever stored in them. */
static int sq_upgrade(sqlite3 *db, char *msg, size_t msglen, const char *path)
{
	sqlite3_stmt *st = NULL;
	char *em = NULL;
	int has = 0;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info('windows') WHERE name = 'tot4'",
			       -1, &st, NULL) != SQLITE_OK) {
		snprintf(msg, msglen, "sqlite: %s: schema: %s", path, sqlite3_errmsg(db));
		return -1;
	}
	has = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	if (!has && sqlite3_exec(db, "BEGIN IMMEDIATE;"
				 "ALTER TABLE windows ADD COLUMN tot4 INTEGER NOT NULL DEFAULT 0;"
				 "COMMIT;", NULL, NULL, &em) != SQLITE_OK) {
		snprintf(msg, msglen, "sqlite: %s: upgrading to schema 3: %s", path, em ? em : "?");
		sqlite3_free(em);
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	if (sqlite3_exec(db, "UPDATE meta SET v = '3' WHERE k = 'schema' AND v <> '3'", NULL, NULL, &em)
	    != SQLITE_OK) {
		snprintf(msg, msglen, "sqlite: %s: schema: %s", path, em ? em : "?");
		sqlite3_free(em);
		return -1;
	}
	return 0;
}

int store_sqlite_open(const char *path, struct store **out, char *msg, size_t msglen)
{
	struct sq_store *s = calloc(1, sizeof(*s));
	char *em = NULL;

	if (!s || !(s->path = strdup(path))) {
		free(s);
		return -ENOMEM;
	}
	s->base.ops = &sqlite_ops;
	pthread_mutex_init(&s->wlock, NULL);
	pthread_mutex_init(&s->rlock, NULL);
	pthread_key_create(&s->rkey, NULL);
	if (sqlite3_open_v2(path, &s->w, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		int rc = sqerr(s->w, msg, msglen, path);

		sq_close(&s->base);
		return rc;
	}
	sqlite3_busy_timeout(s->w, 5000);
	sqlite3_create_function(s->w, "satsum", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, NULL,
				satsum_step, satsum_final);
	sqlite3_create_function(s->w, "satadd", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, satadd_fn,
				NULL, NULL);
	if (sqlite3_exec(s->w, schema, NULL, NULL, &em) != SQLITE_OK) {
		snprintf(msg, msglen, "sqlite: %s: schema: %s", path, em ? em : "?");
		sqlite3_free(em);
		sq_close(&s->base);
		return -EIO;
	}
	if (sq_upgrade(s->w, msg, msglen, path)) {
		sq_close(&s->base);
		return -EIO;
	}
	sqlite3_exec(s->w, "PRAGMA cache_size=-65536;", NULL, NULL, NULL);
	if (prep(s->w, "SELECT 1 FROM windows WHERE wkey=?", &s->st_win_exists) ||
	    prep(s->w, "INSERT INTO windows(wkey, host, ls, start_ns, end_ns, recv_ns, commit_p99_ns,"
		 " commit_count, trim_stall_ns, lock_wait_ns, tot0, tot1, tot2, tot3, tot4, units)"
		 " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &s->st_win_ins) ||
	    prep(s->w, "SELECT id FROM labelsets WHERE canon=?", &s->st_ls_get) ||
	    prep(s->w, "INSERT INTO labelsets(canon, host) VALUES(?,?)", &s->st_ls_ins) ||
	    prep(s->w, "SELECT id FROM stacks WHERE hash=? AND text=?", &s->st_stack_get) ||
	    prep(s->w, "INSERT INTO stacks(hash, text) VALUES(?,?)", &s->st_stack_ins) ||
	    prep(s->w, "INSERT INTO samples(type, ls, t, win, data) VALUES(?,?,?,?,?)",
		 &s->st_sample_ins) ||
	    prep(s->w, "INSERT INTO locks(win, cls, ns) VALUES(?,?,?)", &s->st_lock_ins) ||
	    prep(s->w, "INSERT INTO lockclasses(win, cls, level, mode, acquired, contended, wait_ns,"
		 " wait_max_ns, hold_ns, holds, hold_max_ns) VALUES(?,?,?,?,?,?,?,?,?,?,?)", &s->st_lkc_ins) ||
	    prep(s->w, "INSERT INTO lockinst(win, addr, cls, tree, level, grp, acquired, contended,"
		 " wait_ns, wait_max_ns) VALUES(?,?,?,?,?,?,?,?,?,?)", &s->st_lki_ins) ||
	    prep(s->w, "INSERT INTO lockstacks(win, cls, level, stack, wait_ns, count) VALUES(?,?,?,?,?,?)",
		 &s->st_lks_ins)) {
		int rc = sqerr(s->w, msg, msglen, "prepare");

		sq_close(&s->base);
		return rc;
	}
	*out = &s->base;
	return 0;
}
