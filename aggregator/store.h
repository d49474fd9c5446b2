/*
 * store.h — the storage interface of glass-aggd.  One engine per file
 * (store_sqlite.c; store_clickhouse.c later) fills in a store_ops table.
 *
 * The model:
 *   stack     — a folded stack string stored once: id + 64-bit hash.
 *   labelset  — a canonical label set (JSON, keys sorted, includes host).
 *   window    — one ingested window: key (idempotency), host, labelset,
 *               start/end, summaries, per-type totals.
 *   sample    — (type, labelset, time, window, stack) -> count.
 *
 * Threads: put() may be called from any thread (engines serialise
 * writers); the scan functions may run concurrently with put() and with
 * each other.  Callbacks run on the calling thread and must not call back
 * into the store.  All functions return 0 or -errno.
 */
#ifndef GLASS_STORE_H
#define GLASS_STORE_H

#include <stdint.h>
#include "aggregator/window.h"

struct store;

/* One window row, as scans report it.  Summary fields are -1 if absent. */
struct store_window_row {
	int64_t id, labelset, start_ns, end_ns;
	const char *host;
	int64_t commit_p99_ns, commit_count, trim_stall_ns, lock_wait_ns;
	int64_t total[PT_NTYPES];	/* sum of counts per profile type */
	int units[PT_NTYPES];
};

typedef int (*store_labelset_cb)(void *arg, int64_t id, const char *json);
typedef int (*store_sample_cb)(void *arg, int64_t labelset, int64_t stack,
			       uint64_t count);
typedef int (*store_window_cb)(void *arg, const struct store_window_row *w);
typedef int (*store_lock_cb)(void *arg, int64_t labelset, const char *host,
			     int64_t start_ns, const char *cls, int64_t ns);

/* Lock detail rows (aggregator/locks.c), as lockrows() reports them:
 * LK_CLASS fills cls, level, mode, acquired..hold_max_ns; LK_INST cls,
 * addr, tree, level, group, acquired..wait_max_ns; LK_STACK cls, level,
 * stack (an id for stack_text), wait_ns, count. */
enum store_lock_kind { LK_CLASS, LK_INST, LK_STACK };
struct store_lockrow {
	int kind;
	int64_t labelset, start_ns;
	const char *host, *cls;
	int level, mode, group;
	uint64_t addr, tree;
	int64_t stack;
	int64_t acquired, contended, wait_ns, wait_max_ns, hold_ns, holds, hold_max_ns, count;
};
typedef int (*store_lockrow_cb)(void *arg, const struct store_lockrow *r);

/* One downsampling tier: windows older than before_ns become bucket_s
 * windows (before_ns <= 0 or bucket_s <= 0: tier off). */
struct store_tier { int64_t before_ns, bucket_s; };
#define STORE_MAX_TIERS 3

struct store_stats {
	int64_t windows, stacks, samples, labelsets, bytes;
};

struct store_ops {
	const char *name;
	/* Store a validated window in one transaction.  *duplicate = 1 (and
	 * nothing written) if its window_id is already stored. */
	int (*put)(struct store *s, const struct agg_window *w, int *duplicate);
	/* Every label set. */
	int (*labelsets)(struct store *s, store_labelset_cb cb, void *arg);
	/* Samples of TYPE in the given label sets with from <= t < until (ns,
	 * window start).  Counts are per window: callers sum. */
	int (*samples)(struct store *s, int type, const int64_t *labelsets,
		       size_t n, int64_t from_ns, int64_t until_ns,
		       store_sample_cb cb, void *arg);
	/* The text of stack ID (malloc'ed). */
	int (*stack_text)(struct store *s, int64_t id, char **text);
	/* Optional: the texts of N stacks at once (engines where a round
	 * trip costs more than a lookup); cb(arg, index, text). */
	int (*stack_texts)(struct store *s, const int64_t *ids, size_t n,
			   int (*cb)(void *arg, size_t i, const char *text), void *arg);
	/* Windows that start in [from, until), by start time. */
	int (*windows)(struct store *s, int64_t from_ns, int64_t until_ns,
		       store_window_cb cb, void *arg);
	/* Lock-wait summaries of windows starting in [from, until). */
	int (*locks)(struct store *s, int64_t from_ns, int64_t until_ns,
		     store_lock_cb cb, void *arg);
	/* Lock detail rows of KIND of windows starting in [from, until). */
	int (*lockrows)(struct store *s, int kind, int64_t from_ns, int64_t until_ns,
			store_lockrow_cb cb, void *arg);
	/* Delete windows that start before drop_ns (0 = keep); then, for
	 * each downsampling tier k = 1..ntiers (tiers[k-1], finest first),
	 * fold the windows of a level below k that start before its
	 * before_ns (rounded down to its bucket) into one level-k window per
	 * (labelset, bucket_s).  Sums are kept exactly.  Safe against a
	 * crash at any point: after a restart every window is counted once
	 * (see each engine's header comment for how). */
	int (*retain)(struct store *s, int64_t drop_ns, const struct store_tier *tiers,
		      int ntiers);
	int (*stats)(struct store *s, struct store_stats *st);
	void (*close)(struct store *s);
};

struct store {
	const struct store_ops *ops;
};

/* store.c: what both engines share. */
/* Per-type totals, the samples-units bit mask and the lock-wait sum (-1 =
 * no lock summary) of window W. */
void store_window_sums(const struct agg_window *w, int64_t tot[PT_NTYPES], int *units,
		       int64_t *locksum);
/* The calling thread's query deadline (agg_now_ns clock; 0 = none), set by
 * query.c around a query's store calls: an engine whose one call may run
 * long on a server (ClickHouse) hands the server the time left and returns
 * -ETIMEDOUT when the server cut it.  Thread-local: ingest and retention
 * threads never set it. */
void store_set_deadline(int64_t deadline_ns);
int64_t store_deadline(void);
/* Test hook: once store_test_crash_at(POINT) was called (glass-aggd's
 * --test-crash-at POINT; tests/aggregator/downsample.test), reaching
 * store_crashpoint(POINT) dies at once (SIGKILL, no cleanup), as a power
 * cut or kill -9 would.  Unset, a crash point costs one comparison. */
void store_test_crash_at(const char *point);
void store_crashpoint(const char *point);

/* Open "sqlite:PATH" (or a bare path) or "clickhouse://HOST:PORT/DB".  0 or -errno with msg filled. */
int store_open(const char *uri, struct store **out, char *msg, size_t msglen);
int store_sqlite_open(const char *path, struct store **out, char *msg,
		      size_t msglen);
int store_clickhouse_open(const char *uri, struct store **out, char *msg,
			  size_t msglen);

#endif /* GLASS_STORE_H */
