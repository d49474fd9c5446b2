/*
 * folded.c — folded-stack parser, aggregated set, writer and stack hash.
 * The format and the contracts are in folded.h.
 *
 * The set is an append-only array of entries (first-seen order) indexed by
 * an open-addressing hash table of entry numbers; stack strings live in an
 * arena of large blocks so pointers handed out never move.  Work per line
 * is linear in its length: one pass to validate bytes, one to split frames,
 * one hash.
 */
#include "tools/lib/folded.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK	(1u << 20)

struct arena_block {
	struct arena_block *next;
	size_t used, size;
	char data[];
};

struct folded_set {
	struct folded_stack *ents;	/* first-seen order */
	size_t nents, cap;
	uint32_t *slots;		/* entry index + 1, 0 = empty */
	size_t nslots;			/* power of two */
	uint64_t total;
	struct arena_block *arena;
};

/* ---- hash ------------------------------------------------------------ */

static inline uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t load_le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static inline uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return k;
}

/* One 64-bit lane of MurmurHash3's mixing, eight bytes a step, little-endian
 * loads so the value is the same on every host.  Golden values are pinned
 * in tests/tools/folded_test.c: changing this breaks stored hashes. */
uint64_t folded_hash(const void *data, size_t len)
{
	const uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;
	const unsigned char *p = data;
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ ((uint64_t)len * c2);
	uint64_t k;
	size_t i;

	for (; len >= 8; p += 8, len -= 8) {
		k = load_le64(p) * c1;
		k = rotl64(k, 31) * c2;
		h ^= k;
		h = rotl64(h, 27) * 5 + 0x52dce729;
	}
	k = 0;
	for (i = 0; i < len; i++)
		k |= (uint64_t)p[i] << (8 * i);
	k *= c1;
	k = rotl64(k, 31) * c2;
	h ^= k;
	return fmix64(h);
}

/* ---- set --------------------------------------------------------------- */

struct folded_set *folded_set_new(void)
{
	struct folded_set *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->nslots = 1024;
	s->slots = calloc(s->nslots, sizeof(*s->slots));
	if (!s->slots) {
		free(s);
		return NULL;
	}
	return s;
}

void folded_set_free(struct folded_set *s)
{
	struct arena_block *b, *n;

	if (!s)
		return;
	for (b = s->arena; b; b = n) {
		n = b->next;
		free(b);
	}
	free(s->ents);
	free(s->slots);
	free(s);
}

static char *arena_copy(struct folded_set *s, const char *str, size_t len)
{
	struct arena_block *b = s->arena;
	char *p;

	if (!b || b->size - b->used < len + 1) {
		size_t sz = len + 1 > ARENA_BLOCK ? len + 1 : ARENA_BLOCK;

		b = malloc(sizeof(*b) + sz);
		if (!b)
			return NULL;
		b->size = sz;
		b->used = 0;
		/* Keep the partly used block first only if the new one is a
		 * one-off for a huge string; otherwise the new one is current. */
		if (s->arena && sz > ARENA_BLOCK) {
			b->next = s->arena->next;
			s->arena->next = b;
		} else {
			b->next = s->arena;
			s->arena = b;
		}
	}
	p = b->data + b->used;
	memcpy(p, str, len);
	p[len] = '\0';
	b->used += len + 1;
	return p;
}

static int set_grow_slots(struct folded_set *s)
{
	size_t n = s->nslots * 2, i, j;
	uint32_t *ns = calloc(n, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (i = 0; i < s->nents; i++) {
		j = s->ents[i].hash & (n - 1);
		while (ns[j])
			j = (j + 1) & (n - 1);
		ns[j] = (uint32_t)(i + 1);
	}
	free(s->slots);
	s->slots = ns;
	s->nslots = n;
	return 0;
}

/* Slot where STACK is, or the empty slot where it would go. */
static size_t set_lookup(const struct folded_set *s, const char *stack,
			 size_t len, uint64_t h)
{
	size_t j = h & (s->nslots - 1);

	for (;;) {
		uint32_t e = s->slots[j];
		const struct folded_stack *fs;

		if (!e)
			return j;
		fs = &s->ents[e - 1];
		if (fs->hash == h && fs->len == len &&
		    memcmp(fs->stack, stack, len) == 0)
			return j;
		j = (j + 1) & (s->nslots - 1);
	}
}

static int set_add_hashed(struct folded_set *s, const char *stack,
			  size_t len, uint64_t count, uint64_t h)
{
	struct folded_stack *fs;
	size_t j;
	char *copy;

	if (s->total + count < s->total)
		return -EOVERFLOW;
	j = set_lookup(s, stack, len, h);
	if (s->slots[j]) {
		fs = &s->ents[s->slots[j] - 1];
		if (fs->count + count < fs->count)
			return -EOVERFLOW;
		fs->count += count;
		s->total += count;
		return 0;
	}
	if (s->nents >= UINT32_MAX - 1)
		return -E2BIG;
	if (s->nents == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 256;
		struct folded_stack *ne = realloc(s->ents, nc * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		s->ents = ne;
		s->cap = nc;
	}
	copy = arena_copy(s, stack, len);
	if (!copy)
		return -ENOMEM;
	fs = &s->ents[s->nents];
	fs->stack = copy;
	fs->len = len;
	fs->count = count;
	fs->hash = h;
	s->slots[j] = (uint32_t)(++s->nents);
	s->total += count;
	if (s->nents * 2 > s->nslots)
		return set_grow_slots(s);
	return 0;
}

int folded_set_add(struct folded_set *s, const char *stack, size_t len,
		   uint64_t count)
{
	return set_add_hashed(s, stack, len, count, folded_hash(stack, len));
}

size_t folded_set_size(const struct folded_set *s)
{
	return s->nents;
}

uint64_t folded_set_total(const struct folded_set *s)
{
	return s->total;
}

const struct folded_stack *folded_set_get(const struct folded_set *s,
					  size_t i)
{
	return i < s->nents ? &s->ents[i] : NULL;
}

const struct folded_stack *folded_set_find(const struct folded_set *s,
					   const char *stack, size_t len)
{
	size_t j = set_lookup(s, stack, len, folded_hash(stack, len));

	return s->slots[j] ? &s->ents[s->slots[j] - 1] : NULL;
}

/* ---- frames ------------------------------------------------------------ */

void folded_iter_init(struct folded_iter *it, const char *stack, size_t len)
{
	it->p = stack;
	it->end = stack + len;
	it->done = len == 0;
}

int folded_iter_next(struct folded_iter *it, const char **frame, size_t *len)
{
	const char *semi;

	if (it->done)
		return 0;
	semi = memchr(it->p, ';', (size_t)(it->end - it->p));
	*frame = it->p;
	if (!semi) {
		*len = (size_t)(it->end - it->p);
		it->done = 1;
	} else {
		*len = (size_t)(semi - it->p);
		it->p = semi + 1;
	}
	return 1;
}

/* ---- parser ------------------------------------------------------------ */

static int perr(struct folded_error *err, unsigned long line, int code,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int perr(struct folded_error *err, unsigned long line, int code,
		const char *fmt, ...)
{
	va_list ap;

	if (err) {
		err->line = line;
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}

/* A short printable quote of untrusted bytes for an error message. */
static const char *quote(char *buf, size_t bufsz, const char *s, size_t len)
{
	size_t i, n = 0, max = bufsz - 4;

	for (i = 0; i < len && n < max; i++) {
		unsigned char c = (unsigned char)s[i];

		buf[n++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	if (i < len) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

static int is_digits(const char *s, size_t len)
{
	size_t i;

	if (!len)
		return 0;
	for (i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

static int parse_count(const char *t, size_t len, unsigned long ln,
		       uint64_t *out, struct folded_error *err)
{
	char q[32];
	uint64_t v = 0;
	size_t i;

	if (is_digits(t, len)) {
		for (i = 0; i < len; i++) {
			unsigned d = (unsigned)(t[i] - '0');

			if (v > (UINT64_MAX - d) / 10)
				return perr(err, ln, -EOVERFLOW,
					    "count '%s' does not fit in 64 bits",
					    quote(q, sizeof(q), t, len));
			v = v * 10 + d;
		}
		*out = v;
		return 0;
	}
	if (len > 1 && t[0] == '-' && is_digits(t + 1, len - 1))
		return perr(err, ln, -EINVAL, "count '%s' is negative",
			    quote(q, sizeof(q), t, len));
	if (len > 1 && memchr(t, '.', len)) {
		const char *dot = memchr(t, '.', len);
		size_t a = (size_t)(dot - t), b = len - a - 1;

		if ((a == 0 || is_digits(t, a)) && (b == 0 || is_digits(dot + 1, b)))
			return perr(err, ln, -EINVAL,
				    "count '%s' is not an integer",
				    quote(q, sizeof(q), t, len));
	}
	return perr(err, ln, -EINVAL, "count '%s' is not a number",
		    quote(q, sizeof(q), t, len));
}

/* The next line of the buffer [*p, end), for the two buffer parsers:
 * *line and *len (without the '\n'); *p moves past it, *ln counts it.  1
 * with a line, 0 at the end, or the error of a line past lim->max_lines. */
static int next_line(const char **p, const char *end, const char **line, size_t *len,
		     unsigned long *ln, const struct folded_limits *lim,
		     struct folded_error *err)
{
	const char *nl;

	if (*p >= end)
		return 0;
	nl = memchr(*p, '\n', (size_t)(end - *p));
	*line = *p;
	*len = (size_t)((nl ? nl : end) - *p);
	*p = nl ? nl + 1 : end;
	(*ln)++;
	if (lim && lim->max_lines && *ln > lim->max_lines)
		return perr(err, *ln, -E2BIG, "more than %zu lines", lim->max_lines);
	return 1;
}

/* Parse one line (without its '\n').  Returns 1 for a stack added, 0 for a
 * blank line, <0 on error. */
static int parse_line(struct folded_set *s, const char *line, size_t len,
		      unsigned long ln, const struct folded_limits *lim,
		      struct folded_error *err)
{
	const char *p, *tok, *stack_end;
	size_t i, nframes, flen, slen;
	uint64_t count = 0;
	int r;

	if (len && line[len - 1] == '\r')
		len--;
	while (len >= 3 && !memcmp(line, "\xef\xbb\xbf", 3)) {
		line += 3;	/* a UTF-8 byte-order mark (of a file, or of */
		len -= 3;	/* one of several concatenated files) */
	}
	if (lim && lim->max_line_len && len > lim->max_line_len)
		return perr(err, ln, -E2BIG,
			    "line is %zu bytes long, the limit is %zu",
			    len, lim->max_line_len);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)line[i];

		if (c >= 0x20 && c != 0x7f)
			continue;
		if (c == '\t')
			continue;
		if (c == 0)
			return perr(err, ln, -EINVAL,
				    "NUL byte at column %zu (binary input?)",
				    i + 1);
		return perr(err, ln, -EINVAL,
			    "control character 0x%02x at column %zu (binary input?)",
			    c, i + 1);
	}
	while (len && (line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	if (!len)
		return 0;

	/* The count is the last token. */
	p = line + len;
	while (p > line && p[-1] != ' ' && p[-1] != '\t')
		p--;
	tok = p;
	stack_end = p;
	while (stack_end > line &&
	       (stack_end[-1] == ' ' || stack_end[-1] == '\t'))
		stack_end--;
	if (stack_end == line) {
		char q[32];

		if (is_digits(tok, (size_t)(line + len - tok)))
			return perr(err, ln, -EINVAL,
				    "line has a count but no stack");
		return perr(err, ln, -EINVAL,
			    "no count at the end of the line '%s' (expected 'frame;frame COUNT')",
			    quote(q, sizeof(q), line, len));
	}
	r = parse_count(tok, (size_t)(line + len - tok), ln, &count, err);
	if (r)
		return r;
	slen = (size_t)(stack_end - line);

	/* Frames: none empty, bounded in number and length. */
	nframes = 0;
	for (p = line; ; ) {
		const char *semi = memchr(p, ';', (size_t)(stack_end - p));
		const char *fend = semi ? semi : stack_end;

		flen = (size_t)(fend - p);
		nframes++;
		if (!flen)
			return perr(err, ln, -EINVAL, "frame %zu is empty", nframes);
		if (lim && lim->max_frame_len && flen > lim->max_frame_len)
			return perr(err, ln, -E2BIG,
				    "frame %zu is %zu bytes long, the limit is %zu",
				    nframes, flen, lim->max_frame_len);
		if (lim && lim->max_frames && nframes > lim->max_frames)
			return perr(err, ln, -E2BIG,
				    "stack has more than %zu frames", lim->max_frames);
		if (!semi)
			break;
		p = semi + 1;
	}

	if (lim && lim->max_stacks && s->nents >= lim->max_stacks &&
	    !folded_set_find(s, line, slen))
		return perr(err, ln, -E2BIG,
			    "more than %zu distinct stacks", lim->max_stacks);
	r = folded_set_add(s, line, slen, count);
	if (r == -EOVERFLOW)
		return perr(err, ln, -EOVERFLOW,
			    "sum of counts does not fit in 64 bits");
	if (r == -E2BIG)
		return perr(err, ln, r, "too many distinct stacks");
	if (r)
		return perr(err, ln, r, "out of memory");
	return 1;
}

int folded_parse_buf(struct folded_set *s, const char *buf, size_t len,
		     const struct folded_limits *lim, struct folded_error *err)
{
	const char *p = buf, *end = buf + len;
	unsigned long ln = 0;
	const char *line;
	size_t stacks = 0, l;
	int r;

	while ((r = next_line(&p, end, &line, &l, &ln, lim, err)) > 0) {
		r = parse_line(s, line, l, ln, lim, err);
		if (r < 0)
			return r;
		stacks += (size_t)r;
	}
	if (r < 0)
		return r;
	if (!stacks)
		return perr(err, 0, -EINVAL, "empty input: no stacks");
	return 0;
}

int folded_parse_file(struct folded_set *s, FILE *f,
		      const struct folded_limits *lim, struct folded_error *err)
{
	char *line = NULL;
	size_t cap = 0, stacks = 0;
	unsigned long ln = 0;
	ssize_t n;
	int r = 0;

	while ((n = getline(&line, &cap, f)) >= 0) {
		size_t len = (size_t)n;

		ln++;
		if (lim && lim->max_lines && ln > lim->max_lines) {
			r = perr(err, ln, -E2BIG, "more than %zu lines",
				 lim->max_lines);
			goto out;
		}
		if (len && line[len - 1] == '\n')
			len--;
		r = parse_line(s, line, len, ln, lim, err);
		if (r < 0)
			goto out;
		stacks += (size_t)r;
	}
	r = 0;
	if (ferror(f))
		r = perr(err, 0, -EIO, "read error: %s", strerror(errno));
	else if (!stacks)
		r = perr(err, 0, -EINVAL, "empty input: no stacks");
out:
	free(line);
	return r;
}

/* ---- perf script -------------------------------------------------------- */

/*
 * `perf script` output collapsed as stackcollapse-perf.pl does: a sample
 * is a header line (not indented: "COMM PID/TID [CPU] TIME: PERIOD EVENT:",
 * or just "COMM" with -F comm,ip,sym) followed by its callchain, one
 * indented line a frame, leaf first ("ADDR SYM+OFF (DSO)"), and ends at a
 * blank line or the next header.  Each sample counts 1, under
 * "COMM;root..;leaf"; kernel frames (DSO "[kernel.kallsyms]", or any
 * "[kernel...]"/"[guest.kernel...]") get "_[k]"; an unresolved symbol is
 * "[DSO basename]" as the tools' symbolizer names it, else "[unknown]".
 * Lines starting with '#' (perf's header) are skipped.
 */

#define PERF_MAX_FRAMES	1024

struct perf_sample {
	char comm[256];
	size_t ncomm;
	char *frames[PERF_MAX_FRAMES];	/* leaf first, malloc'd */
	size_t n;
	int open;
	unsigned long line;
};

static void perf_sample_reset(struct perf_sample *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		free(ps->frames[i]);
	ps->n = 0;
	ps->open = 0;
}

static int perf_flush(struct folded_set *s, struct perf_sample *ps,
		      const struct folded_limits *lim, struct folded_error *err,
		      size_t *stacks)
{
	size_t len = ps->ncomm, o;
	char *buf;
	int r;

	if (!ps->open)
		return 0;
	if (lim && lim->max_frames && ps->n + 1 > lim->max_frames) {
		perf_sample_reset(ps);
		return perr(err, ps->line, -E2BIG, "more than %zu frames",
			    lim->max_frames);
	}
	for (size_t i = 0; i < ps->n; i++)
		len += 1 + strlen(ps->frames[i]);
	buf = malloc(len + 1);
	if (!buf) {
		perf_sample_reset(ps);
		return perr(err, ps->line, -ENOMEM, "out of memory");
	}
	memcpy(buf, ps->comm, ps->ncomm);
	o = ps->ncomm;
	for (size_t i = ps->n; i-- > 0;) {
		size_t fl = strlen(ps->frames[i]);

		buf[o++] = ';';
		memcpy(buf + o, ps->frames[i], fl);
		o += fl;
	}
	buf[o] = 0;
	perf_sample_reset(ps);
	if (lim && lim->max_stacks && folded_set_size(s) >= lim->max_stacks &&
	    !folded_set_find(s, buf, o)) {
		free(buf);
		return perr(err, ps->line, -E2BIG, "too many distinct stacks");
	}
	r = folded_set_add(s, buf, o, 1);
	free(buf);
	if (r == -EOVERFLOW)
		return perr(err, ps->line, r, "sum of counts does not fit in 64 bits");
	if (r)
		return perr(err, ps->line, r, "out of memory");
	(*stacks)++;
	return 0;
}

/* A name for a collapsed perf frame or comm: sanitised as the writer
 * does, trailing blanks trimmed (the parser would take them as the
 * separator before the count), "[unknown]" when nothing is left, so the
 * collapsed stack always parses back as folded text. */
static size_t perf_name(char *dst, size_t dstlen, const char *raw)
{
	size_t n = folded_sanitize_frame(dst, dstlen, raw);

	while (n && (dst[n - 1] == ' ' || dst[n - 1] == '\t'))
		dst[--n] = 0;
	if (!n)
		n = (size_t)snprintf(dst, dstlen, "[unknown]");
	return n;
}

/* A header: the comm is what precedes the first PID or PID/TID token
 * (comms may hold spaces), else the whole line up to a ':'. */
static void perf_header(struct perf_sample *ps, const char *l, size_t len)
{
	const char *p = l, *end = l + len, *cend = NULL;
	char tmp[256];
	size_t n;

	while (p < end) {
		const char *t = p, *te;

		while (t < end && (*t == ' ' || *t == '\t'))
			t++;
		te = t;
		while (te < end && *te != ' ' && *te != '\t')
			te++;
		if (t > l && te > t) {
			const char *q = t;
			int digits = 0, slash = 0;

			while (q < te && ((*q >= '0' && *q <= '9') || (*q == '/' && !slash && digits))) {
				slash |= *q == '/';
				digits++;
				q++;
			}
			if (q == te && digits) {
				cend = t;
				break;
			}
		}
		p = te;
	}
	if (!cend) {
		cend = memchr(l, ':', len);
		if (!cend)
			cend = end;
	}
	while (cend > l && (cend[-1] == ' ' || cend[-1] == '\t'))
		cend--;
	n = (size_t)(cend - l) < sizeof(tmp) - 1 ? (size_t)(cend - l) : sizeof(tmp) - 1;
	memcpy(tmp, l, n);
	tmp[n] = 0;
	ps->ncomm = perf_name(ps->comm, sizeof(ps->comm), tmp);
}

/* A callchain line: "ADDR SYM[+OFF] (DSO)"; 0 or -ENOMEM. */
static int perf_frame(struct perf_sample *ps, const char *l, size_t len)
{
	const char *p = l, *end = l + len, *sym, *send, *dso = NULL, *dend = NULL;
	char raw[512], name[520];
	size_t n;
	int kernel = 0;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (p < end && *p != ' ' && *p != '\t')	/* the address */
		p++;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	sym = p;
	send = end;
	while (send > sym && (send[-1] == ' ' || send[-1] == '\t'))
		send--;
	if (send > sym && send[-1] == ')') {
		const char *q = send - 1;

		while (q > sym && *q != '(')
			q--;
		if (*q == '(') {
			dso = q + 1;
			dend = send - 1;
			send = q;
			while (send > sym && send[-1] == ' ')
				send--;
		}
	}
	/* Drop "+0xOFF" */
	for (const char *q = send; q > sym; q--)
		if (q[-1] == '+' && q + 1 < send && q[0] == '0' && q[1] == 'x') {
			send = q - 1;
			break;
		}
	if (dso && ((dend - dso >= 7 && !memcmp(dso, "[kernel", 7)) ||
		    (dend - dso >= 13 && !memcmp(dso, "[guest.kernel", 13))))
		kernel = 1;
	n = (size_t)(send - sym);
	if (!n || (n == 9 && !memcmp(sym, "[unknown]", 9))) {
		if (dso && dend > dso && !kernel && *dso != '[') {
			const char *b = dend;

			while (b > dso && b[-1] != '/')
				b--;
			snprintf(raw, sizeof(raw), "[%.*s]", (int)(dend - b), b);
		} else {
			snprintf(raw, sizeof(raw), "[unknown]");
		}
	} else {
		snprintf(raw, sizeof(raw), "%.*s", (int)(n < sizeof(raw) - 1 ? n : sizeof(raw) - 1), sym);
	}
	perf_name(name, sizeof(name) - 4, raw);
	if (kernel)
		strcat(name, "_[k]");
	if (ps->n >= PERF_MAX_FRAMES)
		return 0;	/* deeper than perf's own limit: keep the leaf side */
	ps->frames[ps->n] = strdup(name);
	if (!ps->frames[ps->n])
		return -ENOMEM;
	ps->n++;
	return 0;
}

int folded_parse_perf_buf(struct folded_set *s, const char *buf, size_t len,
			  const struct folded_limits *lim, struct folded_error *err)
{
	const char *p = buf, *end = buf + len, *line;
	unsigned long ln = 0;
	size_t stacks = 0, l;
	struct perf_sample *ps = calloc(1, sizeof(*ps));
	int r = 0;

	if (!ps)
		return perr(err, 0, -ENOMEM, "out of memory");
	while ((r = next_line(&p, end, &line, &l, &ln, lim, err)) > 0) {
		if (l && line[l - 1] == '\r')
			l--;
		if (lim && lim->max_line_len && l > lim->max_line_len) {
			r = perr(err, ln, -E2BIG, "line is %zu bytes long, the limit is %zu",
				 l, lim->max_line_len);
			goto out;
		}
		size_t i = 0;

		while (i < l && (line[i] == ' ' || line[i] == '\t'))
			i++;
		if (i == l) {				/* blank: the sample ends */
			if ((r = perf_flush(s, ps, lim, err, &stacks)))
				goto out;
		} else if (!i && line[0] == '#') {
			;				/* perf's header */
		} else if (!i) {			/* a new sample */
			if ((r = perf_flush(s, ps, lim, err, &stacks)))
				goto out;
			perf_header(ps, line, l);
			ps->open = 1;
			ps->line = ln;
		} else if (ps->open) {
			if (perf_frame(ps, line, l)) {
				r = perr(err, ln, -ENOMEM, "out of memory");
				goto out;
			}
		} else {
			r = perr(err, ln, -EINVAL, "a callchain line before any sample header");
			goto out;
		}
	}
	if (r < 0 || (r = perf_flush(s, ps, lim, err, &stacks)))
		goto out;
	if (!stacks)
		r = perr(err, 0, -EINVAL, "empty input: no samples");
out:
	perf_sample_reset(ps);
	free(ps);
	return r;
}

int folded_is_perf_script(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	int header = 0;

	/* The first sample header is followed by an indented "HEXADDR ..." */
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = (size_t)((nl ? nl : end) - p);

		if (!l || *p == '#') {
			p = nl ? nl + 1 : end;
			continue;
		}
		if (!header) {
			if (*p == ' ' || *p == '\t')
				return 0;
			header = 1;
		} else {
			size_t i = 0, h = 0;

			while (i < l && (p[i] == ' ' || p[i] == '\t'))
				i++;
			if (!i)
				return 0;
			while (i + h < l && isxdigit((unsigned char)p[i + h]))
				h++;
			return h > 0 && i + h < l && (p[i + h] == ' ' || p[i + h] == '\t');
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

int folded_parse_any_buf(struct folded_set *s, const char *buf, size_t len,
			 const struct folded_limits *lim, struct folded_error *err)
{
	return folded_is_perf_script(buf, len) ?
	       folded_parse_perf_buf(s, buf, len, lim, err) :
	       folded_parse_buf(s, buf, len, lim, err);
}

int folded_parse_any_file(struct folded_set *s, FILE *f,
			  const struct folded_limits *lim, struct folded_error *err)
{
	size_t cap = 1 << 16, len = 0, n;
	char *buf = malloc(cap);
	int r;

	if (!buf)
		return perr(err, 0, -ENOMEM, "out of memory");
	while ((n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap) {
			char *nb = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);

			if (!nb) {
				free(buf);
				return perr(err, 0, -ENOMEM, "out of memory");
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (ferror(f)) {
		free(buf);
		return perr(err, 0, -EIO, "read error: %s", strerror(errno));
	}
	r = folded_parse_any_buf(s, buf, len, lim, err);
	free(buf);
	return r;
}

/* ---- writer ------------------------------------------------------------ */

size_t folded_sanitize_frame(char *dst, size_t dstlen, const char *name)
{
	size_t n = 0;

	if (!name || !*name)
		name = "[unknown]";
	for (; *name && n + 1 < dstlen; name++) {
		unsigned char c = (unsigned char)*name;

		if (c == ';')
			c = ':';
		else if ((c < 0x20 && c != '\t') || c == 0x7f)
			c = ' ';
		dst[n++] = (char)c;
	}
	dst[n] = '\0';
	return n;
}

/* Print one frame sanitised; LAST trims trailing blanks.  Returns bytes
 * that would be printed (0 means the frame was empty after trimming). */
static size_t frame_len(const char *name, int last)
{
	size_t n;

	if (!name)
		return 0;
	n = strlen(name);
	if (last)
		while (n) {
			unsigned char c = (unsigned char)name[n - 1];

			if (c == ' ' || c == '\t' || c < 0x20 || c == 0x7f)
				n--;
			else
				break;
		}
	return n;
}

static void put_frame(FILE *f, const char *name, int last)
{
	size_t i, n = frame_len(name, last);

	if (!n) {
		fputs("[unknown]", f);
		return;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c == ';')
			c = ':';
		else if ((c < 0x20 && c != '\t') || c == 0x7f)
			c = ' ';
		putc(c, f);
	}
}

int folded_write_stack(FILE *f, const char *const *frames, size_t nframes,
		       uint64_t count, unsigned flags)
{
	size_t i;

	if (!nframes)
		fputs("[unknown]", f);
	for (i = 0; i < nframes; i++) {
		size_t k = (flags & FOLDED_LEAF_FIRST) ? nframes - 1 - i : i;
		const char *name = frames[k];

		/* A line never starts with a byte-order mark: the parser
		 * would drop it. */
		while (!i && name && !strncmp(name, "\xef\xbb\xbf", 3))
			name += 3;
		if (i)
			putc(';', f);
		put_frame(f, name, i == nframes - 1);
	}
	fprintf(f, " %llu\n", (unsigned long long)count);
	return ferror(f) ? -EIO : 0;
}

int folded_set_write(FILE *f, const struct folded_set *s)
{
	size_t i;

	for (i = 0; i < s->nents; i++)
		fprintf(f, "%s %llu\n", s->ents[i].stack,
			(unsigned long long)s->ents[i].count);
	return ferror(f) ? -EIO : 0;
}
