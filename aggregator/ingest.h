/*
 * ingest.h — validating ingest bodies into windows: the agent format and
 * Pyroscope's /ingest (ingest.c), pprof (pprof.c), gzip (gunzip.c), the
 * lock detail (locks.c).
 */
#ifndef GLASS_AGG_INGEST_H
#define GLASS_AGG_INGEST_H

#include <stddef.h>

#include "aggregator/window.h"

/* ---- ingest (ingest.c) ------------------------------------------------ */

/* Validate an agent-format JSON body completely into *w.  Returns 0, or
 * -EINVAL with a message in msg (naming the field, profile and line). */
int ingest_agent_json(const char *body, size_t len,
		      const struct agg_limits *lim, struct agg_window *w,
		      char *msg, size_t msglen);

struct pyro_params {
	const char *name, *from, *until, *format, *units,
		   *aggregation, *sample_rate, *spy, *sample_type;
	const char *content_type;	/* multipart/form-data => pprof parts */
};
/* Validate a Pyroscope /ingest request (folded body, raw pprof, or
 * multipart/form-data with a "profile" part, as Pyroscope's SDKs send)
 * into *w. */
int ingest_pyroscope(const struct pyro_params *p, const char *body,
		     size_t len, const struct agg_limits *lim,
		     struct agg_window *w, char *msg, size_t msglen);

/* pprof protobuf (optionally gzip'ed) -> folded text (malloc'ed); the
 * value column is SAMPLE_TYPE (or the default, or the first nanoseconds
 * one) and *units says what it counts (a memory column is refused).
 * 0, or -EINVAL with msg, or -E2BIG (gunzip past max_decoded: a 413, as
 * with Content-Encoding: gzip) / -ENOMEM.  (pprof.c) */
int pprof_to_folded(const void *body, size_t len, const char *sample_type,
		    const struct agg_limits *lim, char **out, size_t *outlen,
		    int *units, char *msg, size_t msglen);

/* One part of a multipart/form-data body (points into the body). */
struct mp_part {
	char name[64];
	const char *data;
	size_t len;
};
#define MP_MAX_PARTS 8
/* Split a multipart/form-data body (RFC 7578; CONTENT_TYPE carries the
 * boundary) into at most MP_MAX_PARTS named parts.  The whole body is
 * checked: every part has a form-data name, names are unique, the closing
 * delimiter is present.  Returns the number of parts, or -EINVAL with msg. */
int ingest_multipart(const char *content_type, const char *body, size_t len,
		     struct mp_part *parts, char *msg, size_t msglen);

/* gunzip src into a malloc'ed buffer of at most max bytes.  Returns 0,
 * -EINVAL (corrupt or truncated: msg says which), -E2BIG (over max). */
int ingest_gunzip(const void *src, size_t len, size_t max, char **out,
		  size_t *outlen, char *msg, size_t msglen);

/* ---- lock detail (locks.c) -------------------------------------------- */

#define AGG_MAX_LOCK_ROWS 1024	/* classes, instances, stacks: each */

/* Validate the "locks" object of an agent window into w->lk (all or
 * nothing).  0, or -EINVAL with msg naming the field, or -ENOMEM. */
struct json_t;
int locks_parse(struct agg_window *w, struct json_t *v, const struct agg_limits *lim,
		char *msg, size_t msglen);
void locks_free(struct agg_lockdetail *lk);
const char *locks_mode_name(int mode);

#endif /* GLASS_AGG_INGEST_H */
