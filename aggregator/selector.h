/*
 * selector.h — label selectors and Pyroscope time arguments (selector.c).
 */
#ifndef GLASS_AGG_SELECTOR_H
#define GLASS_AGG_SELECTOR_H

#include <stdint.h>

#include "aggregator/labels.h"
#include "aggregator/window.h"

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

#endif /* GLASS_AGG_SELECTOR_H */
