/*
 * locks.c — the lock detail an agent ships with a window: what
 * glass-lockstat -j prints for that window (tools/glass-lockstat.c), less
 * its histograms:
 *
 *   "locks": {
 *     "classes":   [{"class":"root","level":1,"mode":"write","acquired":N,
 *                    "contended":N,"wait_ns":N,"wait_max_ns":N,"hold_ns":N,
 *                    "holds":N,"hold_max_ns":N}, ...],
 *     "instances": [{"addr":"0x7f..","class":"node","tree":5,"level":0,
 *                    "group":3,"acquired":N,"contended":N,"wait_ns":N,
 *                    "wait_max_ns":N}, ...],
 *     "stacks":    [{"class":"root","level":1,"wait_ns":N,"count":N,
 *                    "frames":["leaf", ..., "root"]}, ...]
 *   }
 *
 * glass-lockstat's own descriptors are accepted and checked, not stored:
 * "mode": "contended"|"all" (top level: without -a only contended
 * acquisitions are seen) and "acquired_counted": true|false (classes and
 * instances; false = "acquired" was not counted and must be 0).
 *
 * Validation is complete before anything is kept: every key known, every
 * number a non-negative integer (level and group may be -1), class names
 * label-like, at most AGG_MAX_LOCK_ROWS rows per array, stack depth and
 * frame length within the request limits.  Frames arrive leaf first (as
 * the unwinder gives them) and are stored as one folded stack, root
 * first, each frame sanitised the way tools/lib/folded.h writes frames.
 */
#include "aggregator/ingest.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

const char *locks_mode_name(int mode)
{
	return mode ? "write" : "read";
}

/* A lock class name: [A-Za-z_][A-Za-z0-9_.]*, at most 64 bytes. */
static int valid_class(const char *k)
{
	size_t n = strlen(k);

	if (!n || n > 64 || !(isalpha((unsigned char)k[0]) || k[0] == '_'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)k[i]) || k[i] == '_' || k[i] == '.'))
			return 0;
	return 1;
}

struct field {
	const char *name;
	int64_t *dst;
	int64_t min;		/* 0, or -1 for level/group */
	int64_t max;
	int seen;
};

/* Fill FIELDS from object O: every key of O must be a field or one of
 * the string keys handled by the caller (str_keys, NULL-terminated). */
static int fields(json_t *o, struct field *f, size_t nf, const char *const *str_keys,
		  const char *what, size_t idx, char *msg, size_t msglen)
{
	const char *k;
	json_t *v;

	if (!json_is_object(o))
		return agg_einval(msg, msglen, "locks.%s[%zu]: must be an object", what, idx);
	json_object_foreach(o, k, v) {
		size_t i;
		int known = 0;

		for (const char *const *s = str_keys; *s; s++)
			if (!strcmp(k, *s))
				known = 1;
		if (known)
			continue;
		for (i = 0; i < nf; i++)
			if (!strcmp(k, f[i].name))
				break;
		if (i == nf)
			return agg_einval(msg, msglen, "locks.%s[%zu]: unknown key \"%.64s\"", what, idx, k);
		if (!json_is_integer(v) || json_integer_value(v) < f[i].min ||
		    json_integer_value(v) > f[i].max)
			return agg_einval(msg, msglen, "locks.%s[%zu].%s: must be an integer in %lld..%lld",
				    what, idx, k, (long long)f[i].min, (long long)f[i].max);
		*f[i].dst = json_integer_value(v);
		f[i].seen = 1;
	}
	for (size_t i = 0; i < nf; i++)
		if (!f[i].seen && f[i].min >= 0)	/* level, group: optional (-1) */
			return agg_einval(msg, msglen, "locks.%s[%zu].%s: missing", what, idx, f[i].name);
	return 0;
}

/* "acquired_counted": optional boolean; false needs acquired == 0. */
static int check_counted(json_t *o, int64_t acquired, const char *what, size_t idx,
			 char *msg, size_t msglen)
{
	json_t *v = json_object_get(o, "acquired_counted");

	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return agg_einval(msg, msglen, "locks.%s[%zu].acquired_counted: must be true or false", what, idx);
	if (json_is_false(v) && acquired)
		return agg_einval(msg, msglen, "locks.%s[%zu].acquired: must be 0 when acquired_counted is false",
			    what, idx);
	return 0;
}

static int get_class(json_t *o, char **out, const char *what, size_t idx, char *msg, size_t msglen)
{
	json_t *c = json_object_get(o, "class");

	if (!json_is_string(c) || !valid_class(json_string_value(c)))
		return agg_einval(msg, msglen, "locks.%s[%zu].class: must be a name of [A-Za-z_][A-Za-z0-9_.]*",
			    what, idx);
	return (*out = strdup(json_string_value(c))) ? 0 : -ENOMEM;
}

#define I64MAX INT64_MAX

static int parse_class(struct agg_lockclass *c, json_t *o, size_t i, char *msg, size_t msglen)
{
	static const char *const str[] = { "class", "mode", "acquired_counted", NULL };
	int64_t level = -1;
	struct field f[] = {
		{ "level", &level, -1, 1024, 0 },
		{ "acquired", &c->acquired, 0, I64MAX, 0 },
		{ "contended", &c->contended, 0, I64MAX, 0 },
		{ "wait_ns", &c->wait_ns, 0, I64MAX, 0 },
		{ "wait_max_ns", &c->wait_max_ns, 0, I64MAX, 0 },
		{ "hold_ns", &c->hold_ns, 0, I64MAX, 0 },
		{ "holds", &c->holds, 0, I64MAX, 0 },
		{ "hold_max_ns", &c->hold_max_ns, 0, I64MAX, 0 },
	};
	json_t *m;
	int rc;

	if ((rc = fields(o, f, sizeof(f) / sizeof(f[0]), str, "classes", i, msg, msglen)))
		return rc;
	m = json_object_get(o, "mode");
	if (!json_is_string(m) || (strcmp(json_string_value(m), "read") &&
				   strcmp(json_string_value(m), "write")))
		return agg_einval(msg, msglen, "locks.classes[%zu].mode: must be \"read\" or \"write\"", i);
	c->mode = !strcmp(json_string_value(m), "write");
	c->level = (int)level;
	if ((rc = check_counted(o, c->acquired, "classes", i, msg, msglen)))
		return rc;
	return get_class(o, &c->cls, "classes", i, msg, msglen);
}

static int parse_inst(struct agg_lockinst *in, json_t *o, size_t i, char *msg, size_t msglen)
{
	static const char *const str[] = { "class", "addr", "acquired_counted", NULL };
	int64_t level = -1, group = -1, tree = 0;
	struct field f[] = {
		{ "level", &level, -1, 1024, 0 },
		{ "group", &group, -1, 1 << 20, 0 },
		{ "tree", &tree, 0, I64MAX, 0 },
		{ "acquired", &in->acquired, 0, I64MAX, 0 },
		{ "contended", &in->contended, 0, I64MAX, 0 },
		{ "wait_ns", &in->wait_ns, 0, I64MAX, 0 },
		{ "wait_max_ns", &in->wait_max_ns, 0, I64MAX, 0 },
	};
	json_t *a;
	const char *s;
	char *e;
	int rc;

	if ((rc = fields(o, f, sizeof(f) / sizeof(f[0]), str, "instances", i, msg, msglen)))
		return rc;
	a = json_object_get(o, "addr");
	s = json_is_string(a) ? json_string_value(a) : "";
	if (strncmp(s, "0x", 2) || !s[2] || strlen(s) > 18 ||
	    (errno = 0, in->addr = strtoull(s + 2, &e, 16), *e || errno))
		return agg_einval(msg, msglen, "locks.instances[%zu].addr: must be a hex string \"0x...\" (64 bits)", i);
	in->tree = (uint64_t)tree;
	in->level = (int)level;
	in->group = (int)group;
	if ((rc = check_counted(o, in->acquired, "instances", i, msg, msglen)))
		return rc;
	return get_class(o, &in->cls, "instances", i, msg, msglen);
}

/* frames (leaf first) -> "root;...;leaf" in a malloc'ed string. */
static int join_frames(json_t *fr, const struct agg_limits *lim, size_t i, char **out,
		       size_t *outlen, char *msg, size_t msglen)
{
	size_t n = json_array_size(fr), cap = 0, len = 0;
	char *buf = NULL, *tmp;

	if (!json_is_array(fr) || !n)
		return agg_einval(msg, msglen, "locks.stacks[%zu].frames: must be a non-empty array of strings", i);
	if (lim->max_depth && n > lim->max_depth)
		return agg_einval(msg, msglen, "locks.stacks[%zu].frames: %zu frames, at most %zu allowed",
			    i, n, lim->max_depth);
	for (size_t k = 0; k < n; k++) {
		json_t *f = json_array_get(fr, k);

		if (!json_is_string(f) || !json_string_length(f))
			return agg_einval(msg, msglen, "locks.stacks[%zu].frames[%zu]: must be a non-empty string", i, k);
		if (lim->max_frame_len && json_string_length(f) > lim->max_frame_len)
			return agg_einval(msg, msglen, "locks.stacks[%zu].frames[%zu]: longer than %zu bytes",
				    i, k, lim->max_frame_len);
		cap += json_string_length(f) + 1;
	}
	if (!(buf = malloc(cap + 1)) || !(tmp = malloc(cap + 16))) {
		free(buf);
		return -ENOMEM;
	}
	for (size_t k = n; k-- > 0;) {
		json_t *f = json_array_get(fr, k);
		size_t fl = folded_sanitize_frame(tmp, cap + 16, json_string_value(f));

		if (len)
			buf[len++] = ';';
		memcpy(buf + len, tmp, fl);
		len += fl;
	}
	buf[len] = 0;
	free(tmp);
	*out = buf;
	*outlen = len;
	return 0;
}

static int parse_stack(struct agg_lockstack *st, json_t *o, const struct agg_limits *lim,
		       size_t i, char *msg, size_t msglen)
{
	static const char *const str[] = { "class", "frames", NULL };
	int64_t level = -1;
	struct field f[] = {
		{ "level", &level, -1, 1024, 0 },
		{ "wait_ns", &st->wait_ns, 0, I64MAX, 0 },
		{ "count", &st->count, 0, I64MAX, 0 },
	};
	char *text = NULL;
	size_t len = 0;
	int rc;

	if ((rc = fields(o, f, sizeof(f) / sizeof(f[0]), str, "stacks", i, msg, msglen)))
		return rc;
	st->level = (int)level;
	if ((rc = get_class(o, &st->cls, "stacks", i, msg, msglen)))
		return rc;
	if ((rc = join_frames(json_object_get(o, "frames"), lim, i, &text, &len, msg, msglen)))
		return rc;
	st->fs.stack = text;
	st->fs.len = len;
	st->fs.hash = folded_hash(text, len);
	st->fs.count = (uint64_t)st->wait_ns;
	return 0;
}

static int array_of(json_t *a, const char *what, size_t *n, char *msg, size_t msglen)
{
	if (!a) {
		*n = 0;
		return 0;
	}
	if (!json_is_array(a))
		return agg_einval(msg, msglen, "locks.%s: must be an array", what);
	if (json_array_size(a) > AGG_MAX_LOCK_ROWS)
		return agg_einval(msg, msglen, "locks.%s: %zu rows, at most %d allowed", what,
			    json_array_size(a), AGG_MAX_LOCK_ROWS);
	*n = json_array_size(a);
	return 0;
}

int locks_parse(struct agg_window *w, json_t *v, const struct agg_limits *lim,
		char *msg, size_t msglen)
{
	struct agg_lockdetail *lk = &w->lk;
	json_t *ca = NULL, *ia = NULL, *sa = NULL, *x;
	const char *k;
	size_t nc, ni, ns;
	int rc;

	if (!json_is_object(v))
		return agg_einval(msg, msglen, "locks: must be an object with classes, instances, stacks");
	json_object_foreach(v, k, x) {
		if (!strcmp(k, "classes"))
			ca = x;
		else if (!strcmp(k, "instances"))
			ia = x;
		else if (!strcmp(k, "stacks"))
			sa = x;
		else if (!strcmp(k, "mode")) {
			if (!json_is_string(x) || (strcmp(json_string_value(x), "contended") &&
						   strcmp(json_string_value(x), "all")))
				return agg_einval(msg, msglen, "locks.mode: must be \"contended\" or \"all\"");
		} else
			return agg_einval(msg, msglen, "locks: unknown key \"%.64s\"", k);
	}
	if ((rc = array_of(ca, "classes", &nc, msg, msglen)) ||
	    (rc = array_of(ia, "instances", &ni, msg, msglen)) ||
	    (rc = array_of(sa, "stacks", &ns, msg, msglen)))
		return rc;
	w->has_lk = 1;
	if ((nc && !(lk->cls = calloc(nc, sizeof(*lk->cls)))) ||
	    (ni && !(lk->inst = calloc(ni, sizeof(*lk->inst)))) ||
	    (ns && !(lk->stk = calloc(ns, sizeof(*lk->stk)))))
		return -ENOMEM;
	for (size_t i = 0; i < nc; i++, lk->ncls++)
		if ((rc = parse_class(&lk->cls[i], json_array_get(ca, i), i, msg, msglen))) {
			lk->ncls++;	/* free what it holds */
			return rc;
		}
	for (size_t i = 0; i < ni; i++, lk->ninst++)
		if ((rc = parse_inst(&lk->inst[i], json_array_get(ia, i), i, msg, msglen))) {
			lk->ninst++;
			return rc;
		}
	for (size_t i = 0; i < ns; i++, lk->nstk++)
		if ((rc = parse_stack(&lk->stk[i], json_array_get(sa, i), lim, i, msg, msglen))) {
			lk->nstk++;
			return rc;
		}
	return 0;
}

void locks_free(struct agg_lockdetail *lk)
{
	for (size_t i = 0; i < lk->ncls; i++)
		free(lk->cls[i].cls);
	for (size_t i = 0; i < lk->ninst; i++)
		free(lk->inst[i].cls);
	for (size_t i = 0; i < lk->nstk; i++) {
		free(lk->stk[i].cls);
		free((char *)lk->stk[i].fs.stack);
	}
	free(lk->cls);
	free(lk->inst);
	free(lk->stk);
	memset(lk, 0, sizeof(*lk));
}
