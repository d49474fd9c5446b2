/*
 * window.h — a window: one validated ingest request (its profiles, summaries and
 * lock detail), the profile types and units, and the validation bounds.
 * An agg_window owns every string and folded_set it points to;
 * agg_window_free() (labels.c) releases them.
 */
#ifndef GLASS_AGG_WINDOW_H
#define GLASS_AGG_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "aggregator/labels.h"
#include "tools/lib/folded.h"

/* ---- profile types and units ---------------------------------------- */

/* PT_WALL: glass-profile --wall's wall-clock view, on-CPU time,
 * runnable waits and blocks under "[oncpu]"/"[runqueue]"/"[offcpu]"
 * frames; counts ns, as every time type (the agent converts the tool's
 * microseconds). */
enum agg_ptype { PT_OFFCPU, PT_WAKEUP, PT_LOCKWAIT, PT_ONCPU, PT_WALL, PT_NTYPES };
enum agg_units { UNITS_NS, UNITS_SAMPLES };

const char *agg_ptype_name(int t);
int agg_ptype_parse(const char *s);		/* -1 if unknown */
const char *agg_units_name(int u);
int agg_units_parse(const char *s);		/* -1 if unknown */

/* ---- limits (validation bounds, from the configuration) --------------- */

/* The largest count glass-aggd accepts: one stack's count, and the sum
 * of one profile's counts (10^18, 31 years of nanoseconds).  A window
 * above it is a 400; sums over windows saturate at INT64_MAX. */
#define AGG_MAX_COUNT 1000000000000000000ULL

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

#endif /* GLASS_AGG_WINDOW_H */
