/*
 * labels.h — label sets (aggregator/labels.c): sorted key/value pairs with a
 * canonical JSON form (agg_labels_canon) stable across agents, and the
 * small helpers every module uses (UTF-8 check, the clock).
 */
#ifndef GLASS_AGG_LABELS_H
#define GLASS_AGG_LABELS_H

#include <stddef.h>
#include <stdint.h>

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

/* ---- helpers (labels.c) ------------------------------------------------ */

/* 1 if S[0..len) is well-formed UTF-8 (no overlongs, surrogates or
 * code points past U+10FFFF); else 0 with *bad = offset of the first
 * bad byte (bad may be NULL). */
int agg_utf8_valid(const char *s, size_t len, size_t *bad);

/* CLOCK_REALTIME in ns. */
int64_t agg_now_ns(void);

/* How the validators (ingest, locks, pprof, gunzip, selectors) refuse
 * input: the message into msg (msglen bytes), and -EINVAL returned. */
int agg_einval(char *msg, size_t msglen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* GLASS_AGG_LABELS_H */
