/*
 * regex.h — every user-supplied pattern of glass-aggd goes through RE2
 * (Debian libre2-dev) behind this C API (regex.cc is the C++ shim).
 * RE2 runs in time linear in the text and never backtracks; its memory
 * is bounded per compiled pattern by max_mem (the program, and the DFA
 * caches of matching, come out of it), and a pattern over max_len bytes
 * is refused before it is parsed.  Syntax: RE2's, as Prometheus, Loki and
 * Pyroscope label matchers use.
 */
#ifndef GLASS_AGG_REGEX_H
#define GLASS_AGG_REGEX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct agg_re;

#define AGG_RE_MAX_LEN_DEFAULT	1024		/* bytes of pattern */
#define AGG_RE_MAX_MEM_DEFAULT	(1 << 20)	/* bytes per compiled pattern */

/* Compile PAT; anchored = it must match the whole text (selectors),
 * else anywhere in it (outliers' pattern=).  0, or -EINVAL with msg
 * naming the limit (length, memory) or the syntax error, or -ENOMEM. */
int agg_re_compile(const char *pat, int anchored, size_t max_len, int64_t max_mem,
		   struct agg_re **out, char *msg, size_t msglen);
/* 1 if TEXT matches, 0 if not. */
int agg_re_match(const struct agg_re *re, const char *text, size_t len);
void agg_re_free(struct agg_re *re);

#ifdef __cplusplus
}
#endif

#endif /* GLASS_AGG_REGEX_H */
