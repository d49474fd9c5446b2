/*
 * aggd.h — glass-aggd's service context and the seams between its
 * modules: configuration (aggd.c), HTTP (http.c), queries (query.c),
 * metrics (metrics.c).  The context is passed down, never global.
 */
#ifndef GLASS_AGGD_H
#define GLASS_AGGD_H

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdint.h>
#include "aggregator/agg.h"
#include "aggregator/store.h"

struct aggd_config {
	char *listen;		/* "127.0.0.1:7470" */
	char *store;		/* "sqlite:PATH" */
	char *tokens;		/* token file, NULL = no auth (refused unless --no-auth) */
	char *ui;		/* static files directory */
	int no_auth;
	int threads;
	int64_t retain_s;	/* 0 = forever */
	int64_t coarse_after_s;	/* downsample windows older than this */
	int64_t coarse_bucket_s;
	int64_t coarse2_after_s;	/* second tier: coarse windows older than this */
	int64_t coarse2_bucket_s;	/* ... become windows this long */
	int64_t retention_every_s;
	uint64_t max_query_rows;	/* rows a query may scan (0 = no bound) */
	int64_t max_query_ns;		/* time a query may take */
	struct agg_limits lim;
};

/* Rejection reasons counted by /metrics. */
enum rej_reason {
	REJ_UNAUTHORIZED, REJ_BAD_JSON, REJ_BAD_FOLDED, REJ_INVALID, REJ_TOO_LARGE,
	REJ_BAD_ENCODING, REJ_BAD_METHOD, REJ_STORE, REJ_NREASONS
};

#define LAT_NBUCKETS 12
struct lat_hist {
	_Atomic uint64_t b[LAT_NBUCKETS + 1];	/* last = +Inf */
	_Atomic uint64_t count, sum_us;
};

struct aggd_metrics {
	_Atomic uint64_t ingest_requests[2];	/* agent, pyroscope */
	_Atomic uint64_t ingest_windows, ingest_stacks, ingest_samples, ingest_duplicates;
	_Atomic uint64_t rejected[REJ_NREASONS];
	_Atomic uint64_t queries;
	_Atomic int64_t inflight, write_waiters;
	struct lat_hist store_write, store_query;
	int64_t start_ns;
};

/* Per-host series of /metrics (fleetmetrics.c), from the windows stored
 * since start: counters reset when glass-aggd restarts. */
struct fleetm_host;
struct fleetm {
	pthread_mutex_t lock;		/* guards everything below */
	struct fleetm_host *v;
	size_t n, cap;
	uint64_t dropped;		/* series refused by the bounds */
};

struct aggd {
	struct aggd_config cfg;
	struct store *store;
	struct aggd_metrics m;
	struct fleetm fm;
	pthread_rwlock_t tok_lock;
	char **tokens;		/* guarded by tok_lock */
	size_t ntokens;
};

/* aggd.c */
int aggd_tokens_load(struct aggd *d, char *msg, size_t msglen);
int aggd_token_ok(struct aggd *d, const char *tok);

/* http.c */
struct MHD_Daemon;
struct MHD_Daemon *http_start(struct aggd *d, char *msg, size_t msglen);

/* query.c: one handler per GET endpoint.  get() returns a query
 * parameter or NULL.  The result body is malloc'ed. */
typedef const char *(*query_get_fn)(void *ctx, const char *key);
struct qresult {
	int status;
	const char *ctype;
	char *body;
	size_t len;
};
int query_dispatch(struct aggd *d, const char *path, query_get_fn get, void *ctx,
		   struct qresult *r);

/* metrics.c */
void metrics_observe(struct lat_hist *h, int64_t ns);
const char *metrics_reason_name(int r);
char *metrics_render(struct aggd *d, size_t *len);

/* fleetmetrics.c: count a stored window; print the per-host series. */
void fleetm_observe(struct fleetm *fm, const struct agg_window *w);
void fleetm_render(struct fleetm *fm, FILE *f);
void fleetm_free(struct fleetm *fm);

#endif /* GLASS_AGGD_H */
