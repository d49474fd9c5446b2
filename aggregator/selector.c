/*
 * selector.c — Pyroscope/Prometheus label selectors and time syntax.
 *
 *   selector := [NAME] [ '{' [matcher (',' matcher)* [',']] '}' ]
 *   matcher  := LABEL ('=' | '!=' | '=~' | '!~') VALUE
 *   VALUE    := '"' chars with \" \\ \n escapes '"'  |  bare chars up to , or }
 *
 * Regular expressions are RE2 (regex.h: bounded in length and memory) and
 * anchored at both ends, as in Prometheus: k=~"h1|h2" matches exactly h1
 * or h2.  A label that is absent
 * matches as the empty string.
 */
#include "aggregator/selector.h"
#include "aggregator/regex.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_name_start(int c) { return isalpha(c) || c == '_'; }
static int is_name_char(int c) { return isalnum(c) || c == '_' || c == '.' || c == '-' || c == ':'; }

void sel_free(struct selector *sel)
{
	for (size_t i = 0; i < sel->n; i++) {
		free(sel->m[i].name);
		free(sel->m[i].value);
		agg_re_free(sel->m[i].re);
	}
	free(sel->m);
	free(sel->metric);
	memset(sel, 0, sizeof(*sel));
}

static void skip_ws(const char **p)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
}

/* Read a quoted or bare value at *p into a malloc'ed string. */
static int read_value(const char **p, char **out, char *msg, size_t msglen)
{
	const char *s = *p;
	size_t cap = strlen(s) + 1, n = 0;
	char *v = malloc(cap);

	if (!v)
		return -ENOMEM;
	if (*s == '"') {
		s++;
		for (;;) {
			if (!*s) {
				free(v);
				return agg_einval(msg, msglen, "unterminated quoted value");
			}
			if (*s == '"')
				break;
			if (*s == '\\') {
				s++;
				switch (*s) {
				case '"': case '\\': v[n++] = *s; break;
				case 'n': v[n++] = '\n'; break;
				case 't': v[n++] = '\t'; break;
				default:
					free(v);
					return agg_einval(msg, msglen, "bad escape \\%c in value", *s ? *s : '0');
				}
				s++;
				continue;
			}
			v[n++] = *s++;
		}
		s++;
	} else {
		while (*s && *s != ',' && *s != '}')
			v[n++] = *s++;
		while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
			n--;
	}
	v[n] = 0;
	*out = v;
	*p = s;
	return 0;
}

int sel_parse(const char *str, struct selector *sel, char *msg, size_t msglen)
{
	return sel_parse_lim(str, NULL, sel, msg, msglen);
}

int sel_parse_lim(const char *str, const struct agg_limits *lim, struct selector *sel,
		  char *msg, size_t msglen)
{
	size_t re_len = lim && lim->max_regex_len ? lim->max_regex_len : AGG_RE_MAX_LEN_DEFAULT;
	int64_t re_mem = lim && lim->max_regex_mem ? lim->max_regex_mem : AGG_RE_MAX_MEM_DEFAULT;
	const char *p = str, *q;
	int rc;

	memset(sel, 0, sizeof(*sel));
	skip_ws(&p);
	if (is_name_start((unsigned char)*p)) {
		for (q = p; is_name_char((unsigned char)*q); q++)
			;
		sel->metric = strndup(p, q - p);
		if (!sel->metric)
			return -ENOMEM;
		p = q;
	}
	skip_ws(&p);
	if (!*p)
		return 0;
	if (*p != '{') {
		sel_free(sel);
		return agg_einval(msg, msglen, "selector: expected '{' at offset %zu", (size_t)(p - str));
	}
	p++;
	for (;;) {
		struct sel_matcher m = { 0 };

		skip_ws(&p);
		if (*p == '}') {
			p++;
			break;
		}
		if (!is_name_start((unsigned char)*p)) {
			sel_free(sel);
			return agg_einval(msg, msglen, "selector: expected a label name at offset %zu",
				    (size_t)(p - str));
		}
		for (q = p; isalnum((unsigned char)*q) || *q == '_' || *q == '.'; q++)
			;
		m.name = strndup(p, q - p);
		if (!m.name) {
			sel_free(sel);
			return -ENOMEM;
		}
		p = q;
		skip_ws(&p);
		if (p[0] == '=' && p[1] == '~') { m.op = SEL_RE; p += 2; }
		else if (p[0] == '!' && p[1] == '~') { m.op = SEL_NRE; p += 2; }
		else if (p[0] == '!' && p[1] == '=') { m.op = SEL_NE; p += 2; }
		else if (p[0] == '=') { m.op = SEL_EQ; p += 1; }
		else {
			free(m.name);
			sel_free(sel);
			return agg_einval(msg, msglen, "selector: expected =, !=, =~ or !~ after label at offset %zu",
				    (size_t)(p - str));
		}
		skip_ws(&p);
		if ((rc = read_value(&p, &m.value, msg, msglen))) {
			free(m.name);
			sel_free(sel);
			return rc;
		}
		if (m.op == SEL_RE || m.op == SEL_NRE) {
			char eb[160];

			if ((rc = agg_re_compile(m.value, 1, re_len, re_mem, &m.re, eb, sizeof(eb)))) {
				if (rc == -EINVAL)
					agg_einval(msg, msglen, "selector: regular expression for %.64s: %s", m.name, eb);
				free(m.name); free(m.value); sel_free(sel);
				return rc;
			}
		}
		struct sel_matcher *nm = realloc(sel->m, (sel->n + 1) * sizeof(*nm));
		if (!nm || !m.name) {
			free(m.name); free(m.value);
			agg_re_free(m.re);
			if (nm)
				sel->m = nm;
			sel_free(sel);
			return -ENOMEM;
		}
		sel->m = nm;
		sel->m[sel->n++] = m;
		skip_ws(&p);
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p == '}') {
			p++;
			break;
		}
		sel_free(sel);
		return agg_einval(msg, msglen, "selector: expected ',' or '}' at offset %zu", (size_t)(p - str));
	}
	skip_ws(&p);
	if (*p) {
		sel_free(sel);
		return agg_einval(msg, msglen, "selector: trailing characters at offset %zu", (size_t)(p - str));
	}
	return 0;
}

int sel_match(const struct selector *sel, const struct agg_labels *l)
{
	for (size_t i = 0; i < sel->n; i++) {
		const struct sel_matcher *m = &sel->m[i];
		const char *v = agg_labels_get(l, m->name);
		int ok;

		if (!v)
			v = "";
		switch (m->op) {
		case SEL_EQ: ok = !strcmp(v, m->value); break;
		case SEL_NE: ok = !!strcmp(v, m->value); break;
		case SEL_RE: ok = agg_re_match(m->re, v, strlen(v)); break;
		default: ok = !agg_re_match(m->re, v, strlen(v)); break;
		}
		if (!ok)
			return 0;
	}
	return 1;
}

/* Parse an unsigned decimal prefix; returns chars consumed, 0 if none or
 * overflow. */
static size_t parse_u64(const char *s, uint64_t *v)
{
	size_t i = 0;
	uint64_t x = 0;

	while (isdigit((unsigned char)s[i])) {
		unsigned d = s[i] - '0';

		if (x > (UINT64_MAX - d) / 10)
			return 0;
		x = x * 10 + d;
		i++;
	}
	*v = x;
	return i;
}

int sel_time(const char *s, int64_t now_ns, int64_t *out)
{
	uint64_t v;
	size_t n;

	if (!s || !*s)
		return -EINVAL;
	if (!strncmp(s, "now", 3)) {
		const char *p = s + 3;
		int sign;
		int64_t mult;

		if (!*p) {
			*out = now_ns;
			return 0;
		}
		if (*p != '-' && *p != '+')
			return -EINVAL;
		sign = *p == '-' ? -1 : 1;
		p++;
		if (!(n = parse_u64(p, &v)))
			return -EINVAL;
		p += n;
		if (!strcmp(p, "s") || !*p) mult = 1;
		else if (!strcmp(p, "m")) mult = 60;
		else if (!strcmp(p, "h")) mult = 3600;
		else if (!strcmp(p, "d")) mult = 86400;
		else if (!strcmp(p, "w")) mult = 7 * 86400;
		else if (!strcmp(p, "ms")) { mult = 0; }
		else return -EINVAL;
		if (mult == 0) {
			if (v > (uint64_t)INT64_MAX / 1000000)
				return -EINVAL;
			*out = now_ns + sign * (int64_t)v * 1000000;
			return 0;
		}
		if (v > (uint64_t)INT64_MAX / 1000000000 / mult)
			return -EINVAL;
		*out = now_ns + sign * (int64_t)v * mult * 1000000000LL;
		return 0;
	}
	n = parse_u64(s, &v);
	if (!n || s[n])
		return -EINVAL;
	if (v >= 100000000000000000ULL)		/* ns */
		;
	else if (v >= 100000000000000ULL)	/* us */
		v *= 1000;
	else if (v >= 100000000000ULL)		/* ms */
		v *= 1000000;
	else
		v *= 1000000000ULL;
	if (v > (uint64_t)INT64_MAX)
		return -EINVAL;
	*out = (int64_t)v;
	return 0;
}
