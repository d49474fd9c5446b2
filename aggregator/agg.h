/*
 * agg.h — types shared by glass-aggd's modules: label sets, windows (one
 * validated ingest request), selectors, and the small helpers every module
 * uses.  Storage lives behind store.h; HTTP behind http.c.
 *
 * Ownership: an agg_window owns every string and folded_set it points to;
 * agg_window_free() releases them.  Label sets are kept sorted by key so
 * their canonical JSON (agg_labels_canon) is stable across agents.
 */
#ifndef GLASS_AGG_H
#define GLASS_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "tools/lib/folded.h"

/* ---- profile types and units ---------------------------------------- */

enum agg_ptype { PT_OFFCPU, PT_WAKEUP, PT_LOCKWAIT, PT_ONCPU, PT_NTYPES };
enum agg_units { UNITS_NS, UNITS_SAMPLES };

const char *agg_ptype_name(int t);
int agg_ptype_parse(const char *s);		/* -1 if unknown */
const char *agg_units_name(int u);
int agg_units_parse(const char *s);		/* -1 if unknown */

/* ---- labels ----------------------------------------------------------- */

struct agg_label { char *k, *v; };
struct agg_labels {
	struct agg_label *kv;	/* sorted by k, keys unique */
	size_t n;
};

/* Set k=v (replacing an existing value).  Returns 0 or -ENOMEM. */
int agg_labels_set(struct agg_labels *l, const char *k, const char *v);
const char *agg_labels_get(const struct agg_labels *l, const char *k);
void agg_labels_free(struct agg_labels *l);
/* Canonical compact JSON object, keys sorted; malloc'ed, NULL on ENOMEM. */
char *agg_labels_canon(const struct agg_labels *l);
/* Parse a canonical JSON object back; 0 or -EINVAL/-ENOMEM. */
int agg_labels_from_json(struct agg_labels *l, const char *json);

/* ---- limits (validation bounds, from the configuration) --------------- */

/* The largest count glass-aggd accepts: one stack's count, and the sum
 * of one profile's counts (10^18, 31 years of nanoseconds).  A window
 * above it is a 400; sums over windows saturate at INT64_MAX. */
#define AGG_MAX_COUNT 1000000000000000000ULL

/* 1 if S[0..len) is well-formed UTF-8 (no overlongs, surrogates or
 * code points past U+10FFFF); else 0 with *bad = offset of the first
 * bad byte (bad may be NULL). */
int agg_utf8_valid(const char *s, size_t len, size_t *bad);

struct agg_limits {
	size_t max_body;	/* bytes on the wire */
	size_t max_decoded;	/* bytes after gunzip */
	size_t max_depth;	/* frames per stack */
	size_t max_frame_len;	/* bytes per frame */
	size_t max_labels;	/* labels per request */
	size_t max_stacks;	/* distinct stacks per profile */
	size_t max_profiles;	/* profiles per request */
	size_t max_regex_len;	/* bytes per user-supplied pattern */
	int64_t max_regex_mem;	/* RE2 memory per compiled pattern */
};

/* ---- a window: one validated ingest request --------------------------- */

struct agg_profile {
	int type;		/* enum agg_ptype */
	int units;		/* enum agg_units */
	struct folded_set *set;
};

struct agg_lockwait { char *cls; int64_t ns; };

/* Lock detail of one window: glass-lockstat -j's classes (per class, B-tree
 * level and mode), its most contended instances, and its waiters' stacks
 * (aggregator/locks.c validates them; level -1 = not a B-tree node lock). */
struct agg_lockclass {
	char *cls;
	int level, mode;			/* mode 0 read, 1 write */
	int64_t acquired, contended, wait_ns, wait_max_ns, hold_ns, holds, hold_max_ns;
};
struct agg_lockinst {
	char *cls;
	uint64_t addr, tree;
	int level, group;
	int64_t acquired, contended, wait_ns, wait_max_ns;
};
struct agg_lockstack {
	char *cls;
	int level;
	struct folded_stack fs;		/* root first; fs.count = wait_ns */
	int64_t wait_ns, count;		/* time waited, waits */
};
struct agg_lockdetail {
	struct agg_lockclass *cls;
	struct agg_lockinst *inst;
	struct agg_lockstack *stk;
	size_t ncls, ninst, nstk;
};

struct agg_window {
	char *window_id;
	char *host;
	int64_t start_ns, end_ns;
	struct agg_labels labels;	/* includes host=HOST */
	struct agg_profile prof[PT_NTYPES];
	size_t nprof;
	int has_summary;
	int64_t commit_p99_ns, commit_count, trim_stall_ns;	/* -1 = absent */
	struct agg_lockwait *locks;
	size_t nlocks;
	int has_lk;			/* "locks" present */
	struct agg_lockdetail lk;
};

void agg_window_free(struct agg_window *w);

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

/* ---- selectors (selector.c) ------------------------------------------- */

enum sel_op { SEL_EQ, SEL_NE, SEL_RE, SEL_NRE };

struct sel_matcher {
	char *name, *value;
	int op;
	struct agg_re *re;	/* SEL_RE / SEL_NRE, anchored (regex.h) */
};

struct selector {
	char *metric;		/* NULL when absent */
	struct sel_matcher *m;
	size_t n;
};

/* Parse NAME{k="v",k!="v",k=~"re",k!~"re"}; NAME and the braces are each
 * optional; values may be unquoted (Pyroscope's name=APP{k=v}).  Regexes
 * are RE2, bounded by lim's max_regex_len and max_regex_mem (sel_parse:
 * the defaults of regex.h).  Returns 0 or -EINVAL with msg filled in
 * (naming the limit a pattern exceeds), or -ENOMEM. */
int sel_parse(const char *s, struct selector *sel, char *msg, size_t msglen);
int sel_parse_lim(const char *s, const struct agg_limits *lim, struct selector *sel,
		  char *msg, size_t msglen);
void sel_free(struct selector *sel);
/* Does the label set satisfy every matcher?  A missing label is "". */
int sel_match(const struct selector *sel, const struct agg_labels *l);

/* Pyroscope time syntax: "now", "now-1h", "now+5m", unix seconds (or
 * milli/micro/nanoseconds, told apart by magnitude).  Result in ns.
 * Returns 0 or -EINVAL. */
int sel_time(const char *s, int64_t now_ns, int64_t *out_ns);

int64_t agg_now_ns(void);

#endif /* GLASS_AGG_H */
