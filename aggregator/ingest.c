/*
 * ingest.c — validation of everything an agent or a Pyroscope client may
 * send.  Nothing here touches storage: a request becomes a complete
 * agg_window or an error message naming the field (and, for folded text,
 * the profile and the line).  The caller stores the window whole or not
 * at all.
 */
#include "aggregator/ingest.h"
#include "aggregator/selector.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <jansson.h>

#define MAX_ID_LEN	128
#define MAX_HOST_LEN	253
#define MAX_KEY_LEN	128
#define MAX_VAL_LEN	1024
#define MAX_WINDOW_NS	(86400LL * 1000000000LL)
#define MAX_LOCK_CLASSES 256

/* ---- multipart/form-data ------------------------------------------------ */

static const char *memmem_s(const char *h, size_t hl, const char *n, size_t nl)
{
	return memmem(h, hl, n, nl);
}

/* The boundary parameter of a multipart/form-data content type. */
static int mp_boundary(const char *ct, char *b, size_t cap, char *msg, size_t msglen)
{
	const char *p;
	size_t n = 0;

	if (strncasecmp(ct, "multipart/form-data", 19))
		return agg_einval(msg, msglen, "Content-Type: want multipart/form-data");
	for (p = ct + 19; (p = strchr(p, ';'));) {
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncasecmp(p, "boundary=", 9))
			continue;
		p += 9;
		if (*p == '"') {
			for (p++; *p && *p != '"' && n + 1 < cap; p++)
				b[n++] = *p;
			if (*p != '"')
				return agg_einval(msg, msglen, "Content-Type: unterminated or too long boundary");
		} else
			for (; *p && *p != ';' && *p != ' ' && n + 1 < cap; p++)
				b[n++] = *p;
		b[n] = 0;
		/* RFC 2046: 1 to 70 characters */
		if (!n || n > 70)
			return agg_einval(msg, msglen, "Content-Type: boundary must be 1-70 characters");
		return 0;
	}
	return agg_einval(msg, msglen, "Content-Type: multipart/form-data without a boundary");
}

/* name="..." from a Content-Disposition: form-data header value. */
static int mp_disposition(const char *v, size_t vl, char *name, size_t cap)
{
	const char *e = v + vl, *p;

	while (v < e && (*v == ' ' || *v == '\t'))
		v++;
	if ((size_t)(e - v) < 9 || strncasecmp(v, "form-data", 9))
		return -1;
	for (p = v + 9; p < e; p++) {
		if (*p != ';')
			continue;
		p++;
		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
		if (e - p > 6 && !strncasecmp(p, "name=\"", 6)) {
			const char *q = p + 6, *z = memchr(q, '"', e - q);

			if (!z || (size_t)(z - q) >= cap || z == q)
				return -1;
			memcpy(name, q, z - q);
			name[z - q] = 0;
			return 0;
		}
	}
	return -1;
}

int ingest_multipart(const char *ct, const char *body, size_t len, struct mp_part *parts,
		     char *msg, size_t msglen)
{
	char b[80], delim[84];
	size_t dl, np = 0;
	const char *p, *e = body + len;
	int rc;

	if ((rc = mp_boundary(ct, b, sizeof(b), msg, msglen)))
		return rc;
	dl = (size_t)snprintf(delim, sizeof(delim), "--%s", b);
	/* The first delimiter starts the body or a line (a preamble is allowed). */
	if (len >= dl && !memcmp(body, delim, dl))
		p = body;
	else {
		char crdelim[88];
		size_t cl = (size_t)snprintf(crdelim, sizeof(crdelim), "\r\n%s", delim);

		if (!(p = memmem_s(body, len, crdelim, cl)))
			return agg_einval(msg, msglen, "multipart: no \"--%.70s\" delimiter in the body", b);
		p += 2;
	}
	for (;;) {
		const char *hdr, *hend, *data, *next;
		struct mp_part *pt;

		p += dl;
		if (e - p >= 2 && p[0] == '-' && p[1] == '-')
			break;	/* close delimiter; the epilogue is ignored */
		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
		if (e - p < 2 || p[0] != '\r' || p[1] != '\n')
			return agg_einval(msg, msglen, "multipart: part %zu: delimiter not followed by CRLF", np + 1);
		hdr = p + 2;
		if (!(hend = memmem_s(hdr, e - hdr, "\r\n\r\n", 4))) {
			/* a part without headers starts right after the delimiter line */
			return agg_einval(msg, msglen, "multipart: part %zu: headers not terminated", np + 1);
		}
		if (np == MP_MAX_PARTS)
			return agg_einval(msg, msglen, "multipart: more than %d parts", MP_MAX_PARTS);
		pt = &parts[np];
		pt->name[0] = 0;
		for (const char *l = hdr; l < hend + 2;) {
			const char *le = memmem_s(l, hend + 2 - l, "\r\n", 2), *colon;

			if (!le)
				break;
			colon = memchr(l, ':', le - l);
			if (!colon)
				return agg_einval(msg, msglen, "multipart: part %zu: bad header line", np + 1);
			if (colon - l == 19 && !strncasecmp(l, "Content-Disposition", 19) &&
			    mp_disposition(colon + 1, le - colon - 1, pt->name, sizeof(pt->name)))
				return agg_einval(msg, msglen, "multipart: part %zu: Content-Disposition must be form-data with a name", np + 1);
			l = le + 2;
		}
		if (!pt->name[0])
			return agg_einval(msg, msglen, "multipart: part %zu: no Content-Disposition name", np + 1);
		for (size_t i = 0; i < np; i++)
			if (!strcmp(parts[i].name, pt->name))
				return agg_einval(msg, msglen, "multipart: part \"%s\" given twice", pt->name);
		data = hend + 4;
		{
			char crdelim[88];
			size_t cl = (size_t)snprintf(crdelim, sizeof(crdelim), "\r\n%s", delim);

			if (!(next = memmem_s(data, e - data, crdelim, cl)))
				return agg_einval(msg, msglen, "multipart: part \"%s\" is not closed (truncated body?)", pt->name);
		}
		pt->data = data;
		pt->len = next - data;
		np++;
		p = next + 2;
	}
	if (!np)
		return agg_einval(msg, msglen, "multipart: no parts");
	return (int)np;
}

/* Pyroscope's SDKs: "profile" (pprof), optional "prev_profile" (empty:
 * they send deltas) and "sample_type_config" (a JSON object). */
static int pyro_multipart(const struct pyro_params *p, const char *body, size_t len,
			  const char **prof, size_t *proflen, char *msg, size_t msglen)
{
	struct mp_part parts[MP_MAX_PARTS];
	int n = ingest_multipart(p->content_type, body, len, parts, msg, msglen);

	if (n < 0)
		return n;
	*prof = NULL;
	for (int i = 0; i < n; i++) {
		if (!strcmp(parts[i].name, "profile")) {
			*prof = parts[i].data;
			*proflen = parts[i].len;
		} else if (!strcmp(parts[i].name, "prev_profile")) {
			if (parts[i].len)
				return agg_einval(msg, msglen, "multipart: prev_profile: cumulative profiles are not "
					    "supported (send deltas, as current Pyroscope SDKs do)");
		} else if (!strcmp(parts[i].name, "sample_type_config")) {
			json_error_t je;
			json_t *j = json_loadb(parts[i].data, parts[i].len, 0, &je);
			int ok = json_is_object(j);

			json_decref(j);
			if (!ok)
				return agg_einval(msg, msglen, "multipart: sample_type_config: must be a JSON object");
		} else
			return agg_einval(msg, msglen, "multipart: unknown part \"%.64s\" (want profile, "
				    "prev_profile, sample_type_config)", parts[i].name);
	}
	if (!*prof)
		return agg_einval(msg, msglen, "multipart: no \"profile\" part");
	if (!*proflen)
		return agg_einval(msg, msglen, "multipart: \"profile\" part is empty");
	return 0;
}

/* A label name: [A-Za-z_][A-Za-z0-9_.]* */
static int valid_key(const char *k)
{
	size_t n = strlen(k);

	if (!n || n > MAX_KEY_LEN || !(isalpha((unsigned char)k[0]) || k[0] == '_'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)k[i]) || k[i] == '_' || k[i] == '.'))
			return 0;
	return 1;
}

/* A value: no control characters, bounded. */
static int valid_text(const char *v, size_t max)
{
	size_t n = strlen(v);

	if (n > max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			return 0;
	return 1;
}

static int valid_id(const char *v)
{
	size_t n = strlen(v);

	if (!n || n > MAX_ID_LEN)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(isalnum((unsigned char)v[i]) || strchr("-_.:", v[i])))
			return 0;
	return 1;
}

static int parse_folded(struct agg_window *w, int type, int units,
			const char *text, size_t len, const struct agg_limits *lim,
			const char *what, char *msg, size_t msglen)
{
	struct folded_limits fl = {
		.max_frames = lim->max_depth,
		.max_frame_len = lim->max_frame_len,
		.max_stacks = lim->max_stacks,
	};
	struct folded_error fe = { 0 };
	struct folded_set *set;
	size_t bad;
	int rc;

	/* Frames are UTF-8 (answers are JSON and SVG): say which line is not. */
	if (!agg_utf8_valid(text, len, &bad)) {
		unsigned long ln = 1;
		size_t col = 0;

		for (size_t i = 0; i < bad; i++, col++)
			if (text[i] == '\n') {
				ln++;
				col = 0;
			}
		return agg_einval(msg, msglen, "%s: line %lu: not valid UTF-8 at column %zu", what, ln, col + 1);
	}
	if (!(set = folded_set_new()))
		return -ENOMEM;
	rc = folded_parse_buf(set, text, len, &fl, &fe);
	if (rc == -ENOMEM) {
		folded_set_free(set);
		return rc;
	}
	if (rc) {
		folded_set_free(set);
		if (fe.line)
			return agg_einval(msg, msglen, "%s: line %lu: %s", what, fe.line, fe.msg);
		return agg_einval(msg, msglen, "%s: %s", what, fe.msg);
	}
	/* Counts are bounded so that no sum of one window wraps, and sums over
	 * windows only saturate (query.c). */
	if (folded_set_total(set) > AGG_MAX_COUNT) {
		for (size_t i = 0; i < folded_set_size(set); i++) {
			const struct folded_stack *fs = folded_set_get(set, i);

			if (fs->count > AGG_MAX_COUNT) {
				rc = agg_einval(msg, msglen, "%s: stack \"%.80s\": count %llu is over the bound %llu",
					  what, fs->stack, (unsigned long long)fs->count, AGG_MAX_COUNT);
				folded_set_free(set);
				return rc;
			}
		}
		rc = agg_einval(msg, msglen, "%s: the counts sum to %llu, over the bound %llu", what,
			  (unsigned long long)folded_set_total(set), AGG_MAX_COUNT);
		folded_set_free(set);
		return rc;
	}
	w->prof[w->nprof].type = type;
	w->prof[w->nprof].units = units;
	w->prof[w->nprof].set = set;
	w->nprof++;
	return 0;
}

/* A non-negative JSON integer, at most AGG_MAX_COUNT. */
static int get_nonneg(json_t *v, int64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > AGG_MAX_COUNT)
		return 0;
	*out = json_integer_value(v);
	return 1;
}

static int parse_summaries(struct agg_window *w, json_t *s, char *msg, size_t msglen)
{
	const char *k;
	json_t *v;

	if (!json_is_object(s))
		return agg_einval(msg, msglen, "summaries: must be an object");
	w->has_summary = 1;
	json_object_foreach(s, k, v) {
		int64_t *dst = NULL;

		if (!strcmp(k, "commit_p99_ns"))
			dst = &w->commit_p99_ns;
		else if (!strcmp(k, "commit_count"))
			dst = &w->commit_count;
		else if (!strcmp(k, "trim_stall_ns"))
			dst = &w->trim_stall_ns;
		else if (!strcmp(k, "lock_wait_ns")) {
			const char *ck;
			json_t *cv;

			if (!json_is_object(v))
				return agg_einval(msg, msglen, "summaries.lock_wait_ns: must be an object of class: ns");
			if (json_object_size(v) > MAX_LOCK_CLASSES)
				return agg_einval(msg, msglen, "summaries.lock_wait_ns: more than %d classes",
					    MAX_LOCK_CLASSES);
			w->locks = calloc(json_object_size(v) + 1, sizeof(*w->locks));
			if (!w->locks)
				return -ENOMEM;
			json_object_foreach(v, ck, cv) {
				int64_t ns;

				if (!valid_key(ck))
					return agg_einval(msg, msglen, "summaries.lock_wait_ns: bad class name \"%.64s\"", ck);
				if (!get_nonneg(cv, &ns))
					return agg_einval(msg, msglen, "summaries.lock_wait_ns.%s: must be an integer in 0..%llu",
						    ck, AGG_MAX_COUNT);
				if (!(w->locks[w->nlocks].cls = strdup(ck)))
					return -ENOMEM;
				w->locks[w->nlocks++].ns = ns;
			}
			continue;
		} else
			return agg_einval(msg, msglen, "summaries: unknown key \"%.64s\"", k);
		if (!get_nonneg(v, dst))
			return agg_einval(msg, msglen, "summaries.%s: must be an integer in 0..%llu", k, AGG_MAX_COUNT);
	}
	return 0;
}

static int agent_json(json_t *root, const struct agg_limits *lim,
		      struct agg_window *w, char *msg, size_t msglen)
{
	json_t *v, *labels = NULL, *profiles = NULL, *summ = NULL, *locks = NULL;
	const char *k;
	int have_start = 0, have_end = 0, rc;

	if (!json_is_object(root))
		return agg_einval(msg, msglen, "body must be a JSON object");
	json_object_foreach(root, k, v) {
		if (!strcmp(k, "window_id")) {
			if (!json_is_string(v) || !valid_id(json_string_value(v)))
				return agg_einval(msg, msglen, "window_id: must be 1-%d characters of [A-Za-z0-9-_.:]", MAX_ID_LEN);
			if (!(w->window_id = strdup(json_string_value(v))))
				return -ENOMEM;
		} else if (!strcmp(k, "host")) {
			if (!json_is_string(v) || !*json_string_value(v) ||
			    !valid_text(json_string_value(v), MAX_HOST_LEN))
				return agg_einval(msg, msglen, "host: must be a non-empty string of at most %d printable characters", MAX_HOST_LEN);
			if (!(w->host = strdup(json_string_value(v))))
				return -ENOMEM;
		} else if (!strcmp(k, "start_ns")) {
			if (!json_is_integer(v) || (w->start_ns = json_integer_value(v)) < 0)
				return agg_einval(msg, msglen, "start_ns: must be a non-negative integer");
			have_start = 1;
		} else if (!strcmp(k, "end_ns")) {
			if (!json_is_integer(v) || (w->end_ns = json_integer_value(v)) < 0)
				return agg_einval(msg, msglen, "end_ns: must be a non-negative integer");
			have_end = 1;
		} else if (!strcmp(k, "labels"))
			labels = v;
		else if (!strcmp(k, "profiles"))
			profiles = v;
		else if (!strcmp(k, "summaries"))
			summ = v;
		else if (!strcmp(k, "locks"))
			locks = v;
		else
			return agg_einval(msg, msglen, "unknown key \"%.64s\"", k);
	}
	if (!w->window_id)
		return agg_einval(msg, msglen, "window_id: missing");
	if (!w->host)
		return agg_einval(msg, msglen, "host: missing");
	if (!have_start || !have_end)
		return agg_einval(msg, msglen, "%s: missing", have_start ? "end_ns" : "start_ns");
	if (w->end_ns < w->start_ns)
		return agg_einval(msg, msglen, "end_ns: before start_ns");
	if (w->end_ns - w->start_ns > MAX_WINDOW_NS)
		return agg_einval(msg, msglen, "end_ns: window longer than one day");
	if (labels) {
		if (!json_is_object(labels))
			return agg_einval(msg, msglen, "labels: must be an object of strings");
		if (json_object_size(labels) > lim->max_labels)
			return agg_einval(msg, msglen, "labels: %zu labels, at most %zu allowed",
				    json_object_size(labels), lim->max_labels);
		json_object_foreach(labels, k, v) {
			if (!valid_key(k))
				return agg_einval(msg, msglen, "labels: bad label name \"%.64s\" (want [A-Za-z_][A-Za-z0-9_.]*, at most %d bytes)", k, MAX_KEY_LEN);
			if (!json_is_string(v) || !valid_text(json_string_value(v), MAX_VAL_LEN))
				return agg_einval(msg, msglen, "labels.%s: must be a string of at most %d printable characters", k, MAX_VAL_LEN);
			if (!strcmp(k, "host") && strcmp(json_string_value(v), w->host))
				return agg_einval(msg, msglen, "labels.host: differs from host");
			if ((rc = agg_labels_set(&w->labels, k, json_string_value(v))))
				return rc;
		}
	}
	if ((rc = agg_labels_set(&w->labels, "host", w->host)))
		return rc;
	if (w->labels.n > lim->max_labels + 1)
		return agg_einval(msg, msglen, "labels: too many");
	if (profiles) {
		size_t i;

		if (!json_is_array(profiles))
			return agg_einval(msg, msglen, "profiles: must be an array");
		if (json_array_size(profiles) > lim->max_profiles || json_array_size(profiles) > PT_NTYPES)
			return agg_einval(msg, msglen, "profiles: %zu profiles, at most %d allowed (one per type)",
				    json_array_size(profiles), PT_NTYPES);
		json_array_foreach(profiles, i, v) {
			json_t *t = json_object_get(v, "type"), *u = json_object_get(v, "units"),
			       *f = json_object_get(v, "folded");
			int type, units;
			char what[64];

			if (!json_is_object(v))
				return agg_einval(msg, msglen, "profiles[%zu]: must be an object", i);
			json_object_foreach(v, k, t) {
				if (strcmp(k, "type") && strcmp(k, "units") && strcmp(k, "folded"))
					return agg_einval(msg, msglen, "profiles[%zu]: unknown key \"%.64s\"", i, k);
			}
			t = json_object_get(v, "type");
			if (!json_is_string(t) || (type = agg_ptype_parse(json_string_value(t))) < 0)
				return agg_einval(msg, msglen, "profiles[%zu].type: must be offcpu, wakeup, lockwait, oncpu or wall", i);
			if (!u)
				units = type == PT_ONCPU ? UNITS_SAMPLES : UNITS_NS;
			else if (!json_is_string(u) || (units = agg_units_parse(json_string_value(u))) < 0)
				return agg_einval(msg, msglen, "profiles[%zu].units: must be ns or samples", i);
			if (!json_is_string(f))
				return agg_einval(msg, msglen, "profiles[%zu].folded: must be a string", i);
			for (size_t j = 0; j < w->nprof; j++)
				if (w->prof[j].type == type)
					return agg_einval(msg, msglen, "profiles[%zu]: second %s profile", i, agg_ptype_name(type));
			snprintf(what, sizeof(what), "profiles[%zu] (%s)", i, agg_ptype_name(type));
			if ((rc = parse_folded(w, type, units, json_string_value(f),
					       json_string_length(f), lim, what, msg, msglen)))
				return rc;
		}
	}
	if (summ && (rc = parse_summaries(w, summ, msg, msglen)))
		return rc;
	if (locks && (rc = locks_parse(w, locks, lim, msg, msglen)))
		return rc;
	if (!w->nprof && !w->has_summary && !w->has_lk)
		return agg_einval(msg, msglen, "window has neither profiles nor summaries nor locks");
	return 0;
}

int ingest_agent_json(const char *body, size_t len, const struct agg_limits *lim,
		      struct agg_window *w, char *msg, size_t msglen)
{
	json_error_t je;
	json_t *root;
	int rc;

	memset(w, 0, sizeof(*w));
	w->commit_p99_ns = w->commit_count = w->trim_stall_ns = -1;
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return agg_einval(msg, msglen, "malformed JSON at line %d column %d: %s",
			    je.line, je.column, je.text);
	rc = agent_json(root, lim, w, msg, msglen);
	json_decref(root);
	if (rc)
		agg_window_free(w);
	return rc;
}

int ingest_pyroscope(const struct pyro_params *p, const char *body, size_t len,
		     const struct agg_limits *lim, struct agg_window *w,
		     char *msg, size_t msglen)
{
	struct selector sel;
	char smsg[160];
	int64_t now = agg_now_ns(), from, until;
	int type = PT_ONCPU, units = UNITS_SAMPLES, rc;
	char *app = NULL, *dot;

	memset(w, 0, sizeof(*w));
	w->commit_p99_ns = w->commit_count = w->trim_stall_ns = -1;
	if (!p->name || !*p->name)
		return agg_einval(msg, msglen, "name: missing (want name=APP{k=v,...})");
	int multipart = p->content_type && !strncasecmp(p->content_type, "multipart/form-data", 19);
	int is_pprof = multipart || (p->format && !strcmp(p->format, "pprof"));

	if (p->format && strcmp(p->format, "folded") && strcmp(p->format, "lines") &&
	    strcmp(p->format, "pprof"))
		return agg_einval(msg, msglen, "format: folded or pprof, not \"%.32s\"", p->format);
	if (multipart && p->format && strcmp(p->format, "pprof"))
		return agg_einval(msg, msglen, "format: a multipart/form-data body carries pprof, not \"%.32s\"",
			    p->format);
	if (p->aggregation && strcmp(p->aggregation, "sum") && strcmp(p->aggregation, "average"))
		return agg_einval(msg, msglen, "aggregationType: must be sum or average");
	if (p->sample_rate) {
		char *e;
		unsigned long r = strtoul(p->sample_rate, &e, 10);

		if (*e || !r)
			return agg_einval(msg, msglen, "sampleRate: must be a positive integer");
	}
	if ((rc = sel_parse_lim(p->name, lim, &sel, smsg, sizeof(smsg))))
		return rc == -ENOMEM ? rc : agg_einval(msg, msglen, "name: %s", smsg);
	if (!sel.metric) {
		sel_free(&sel);
		return agg_einval(msg, msglen, "name: missing application name before '{'");
	}
	/* APP.TYPE names the profile type when TYPE is one of ours (cpu = oncpu). */
	app = sel.metric;
	if ((dot = strrchr(app, '.'))) {
		int t = agg_ptype_parse(dot + 1);

		if (t >= 0 || !strcmp(dot + 1, "cpu")) {
			type = t >= 0 ? t : PT_ONCPU;
			*dot = 0;
		}
	}
	units = type == PT_ONCPU ? UNITS_SAMPLES : UNITS_NS;
	if (p->units) {
		if (!strcmp(p->units, "samples"))
			units = UNITS_SAMPLES;
		else if (!strcmp(p->units, "nanoseconds") || !strcmp(p->units, "ns"))
			units = UNITS_NS;
		else {
			sel_free(&sel);
			return agg_einval(msg, msglen, "units: must be samples or nanoseconds");
		}
	}
	if (sel.n > lim->max_labels) {
		size_t n = sel.n;

		sel_free(&sel);
		return agg_einval(msg, msglen, "name: %zu labels, at most %zu allowed", n, lim->max_labels);
	}
	rc = 0;
	for (size_t i = 0; i < sel.n && !rc; i++) {
		if (sel.m[i].op != SEL_EQ)
			rc = agg_einval(msg, msglen, "name: label %s must use '='", sel.m[i].name);
		else if (!valid_key(sel.m[i].name))
			rc = agg_einval(msg, msglen, "name: bad label name \"%.64s\"", sel.m[i].name);
		else if (!valid_text(sel.m[i].value, MAX_VAL_LEN))
			rc = agg_einval(msg, msglen, "name: label %s: value too long or not printable", sel.m[i].name);
		else if (!agg_utf8_valid(sel.m[i].value, strlen(sel.m[i].value), NULL))
			rc = agg_einval(msg, msglen, "name: label %s: value is not valid UTF-8", sel.m[i].name);
		else
			rc = agg_labels_set(&w->labels, sel.m[i].name, sel.m[i].value);
	}
	if (!rc && (!valid_text(app, MAX_VAL_LEN) || !*app))
		rc = agg_einval(msg, msglen, "name: bad application name");
	if (!rc && !agg_utf8_valid(app, strlen(app), NULL))
		rc = agg_einval(msg, msglen, "name: application name is not valid UTF-8");
	if (!rc)
		rc = agg_labels_set(&w->labels, "service_name", app);
	sel_free(&sel);
	if (rc)
		goto fail;
	const char *h = agg_labels_get(&w->labels, "host");
	if (!h)
		h = agg_labels_get(&w->labels, "hostname");
	if (!h)
		h = "pyroscope";
	if (!(w->host = strdup(h)) || (rc = agg_labels_set(&w->labels, "host", w->host))) {
		rc = -ENOMEM;
		goto fail;
	}
	from = now - 10000000000LL;
	until = now;
	if (p->from && sel_time(p->from, now, &from)) {
		rc = agg_einval(msg, msglen, "from: not a time (unix seconds or now-1h)");
		goto fail;
	}
	if (p->until && sel_time(p->until, now, &until)) {
		rc = agg_einval(msg, msglen, "until: not a time (unix seconds or now-1h)");
		goto fail;
	}
	if (until < from || until - from > MAX_WINDOW_NS || from < 0) {
		rc = agg_einval(msg, msglen, "until: must follow from, within one day");
		goto fail;
	}
	w->start_ns = from;
	w->end_ns = until;
	if (multipart && (rc = pyro_multipart(p, body, len, &body, &len, msg, msglen)))
		goto fail;	/* from here on, body is the profile part */
	if (is_pprof) {
		char *text;
		size_t tlen;

		/* The pprof's own sample type says what it counts, whatever the
		 * name or units= say (an SDK may push wall time and heap under
		 * one name with no type suffix). */
		if ((rc = pprof_to_folded(body, len, p->sample_type, lim, &text, &tlen, &units,
					  msg, msglen)))
			goto fail;
		rc = parse_folded(w, type, units, text, tlen, lim, "pprof", msg, msglen);
		free(text);
	} else
		rc = parse_folded(w, type, units, body, len, lim, "body", msg, msglen);
	if (rc)
		goto fail;
	/* Idempotent id: the same push twice is the same window. */
	{
		char *canon = agg_labels_canon(&w->labels);
		uint64_t hsh;
		char id[80];

		if (!canon) {
			rc = -ENOMEM;
			goto fail;
		}
		hsh = folded_hash(canon, strlen(canon)) ^ folded_hash(body, len) * 31 ^
		      (uint64_t)from * 0x9e3779b97f4a7c15ULL ^ (uint64_t)until ^ (uint64_t)type << 56;
		free(canon);
		snprintf(id, sizeof(id), "pyro-%016llx", (unsigned long long)hsh);
		if (!(w->window_id = strdup(id))) {
			rc = -ENOMEM;
			goto fail;
		}
	}
	return 0;
fail:
	agg_window_free(w);
	return rc;
}
