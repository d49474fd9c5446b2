/*
 * labels.c — label sets, profile type names and windows: the vocabulary
 * every other module of glass-aggd speaks.
 */
#include "aggregator/ingest.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

static const char *const ptype_names[PT_NTYPES] = {
	"offcpu", "wakeup", "lockwait", "oncpu", "wall",
};

const char *agg_ptype_name(int t)
{
	return t >= 0 && t < PT_NTYPES ? ptype_names[t] : "?";
}

int agg_ptype_parse(const char *s)
{
	for (int i = 0; i < PT_NTYPES; i++)
		if (!strcmp(s, ptype_names[i]))
			return i;
	return -1;
}

const char *agg_units_name(int u)
{
	return u == UNITS_SAMPLES ? "samples" : "ns";
}

int agg_units_parse(const char *s)
{
	if (!strcmp(s, "ns") || !strcmp(s, "nanoseconds"))
		return UNITS_NS;
	if (!strcmp(s, "samples"))
		return UNITS_SAMPLES;
	return -1;
}

int agg_utf8_valid(const char *str, size_t len, size_t *bad)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i], n, cp, min;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) { n = 1; cp = c & 0x1f; min = 0x80; }
		else if (c >= 0xe0 && c <= 0xef) { n = 2; cp = c & 0x0f; min = 0x800; }
		else if (c >= 0xf0 && c <= 0xf4) { n = 3; cp = c & 0x07; min = 0x10000; }
		else goto no;
		if (len - i <= n)
			goto no;
		for (unsigned k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				goto no;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			goto no;
		i += n + 1;
	}
	return 1;
no:
	if (bad)
		*bad = i;
	return 0;
}

int agg_einval(char *msg, size_t msglen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int64_t agg_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int agg_labels_set(struct agg_labels *l, const char *k, const char *v)
{
	size_t lo = 0, hi = l->n;
	char *nv;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(l->kv[mid].k, k);

		if (c == 0) {
			if (!(nv = strdup(v)))
				return -ENOMEM;
			free(l->kv[mid].v);
			l->kv[mid].v = nv;
			return 0;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	struct agg_label *kv = realloc(l->kv, (l->n + 1) * sizeof(*kv));
	if (!kv)
		return -ENOMEM;
	l->kv = kv;
	char *nk = strdup(k);
	nv = strdup(v);
	if (!nk || !nv) {
		free(nk);
		free(nv);
		return -ENOMEM;
	}
	memmove(&kv[lo + 1], &kv[lo], (l->n - lo) * sizeof(*kv));
	kv[lo].k = nk;
	kv[lo].v = nv;
	l->n++;
	return 0;
}

const char *agg_labels_get(const struct agg_labels *l, const char *k)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(l->kv[mid].k, k);

		if (c == 0)
			return l->kv[mid].v;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void agg_labels_free(struct agg_labels *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->kv[i].k);
		free(l->kv[i].v);
	}
	free(l->kv);
	l->kv = NULL;
	l->n = 0;
}

char *agg_labels_canon(const struct agg_labels *l)
{
	json_t *o = json_object();
	char *s;

	if (!o)
		return NULL;
	for (size_t i = 0; i < l->n; i++)
		json_object_set_new(o, l->kv[i].k, json_string(l->kv[i].v));
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

int agg_labels_from_json(struct agg_labels *l, const char *json)
{
	json_t *o = json_loads(json, 0, NULL), *v;
	const char *k;
	int rc = 0;

	if (!o || !json_is_object(o)) {
		json_decref(o);
		return -EINVAL;
	}
	json_object_foreach(o, k, v) {
		if (!json_is_string(v) || (rc = agg_labels_set(l, k, json_string_value(v))))
			break;
	}
	json_decref(o);
	return rc ? rc : 0;
}

void agg_window_free(struct agg_window *w)
{
	free(w->window_id);
	free(w->host);
	agg_labels_free(&w->labels);
	for (size_t i = 0; i < w->nprof; i++)
		folded_set_free(w->prof[i].set);
	for (size_t i = 0; i < w->nlocks; i++)
		free(w->locks[i].cls);
	free(w->locks);
	locks_free(&w->lk);
	memset(w, 0, sizeof(*w));
}
