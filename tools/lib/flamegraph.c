/*
 * flamegraph.c — folded set -> frame tree -> SVG.  Contracts in
 * flamegraph.h.
 *
 * Tree building without a hash table: the stacks are sorted frame-wise
 * (';' orders before every byte, so all stacks sharing a frame prefix are
 * contiguous), then each stack is merged with the path of the previous
 * one.  New nodes are therefore appended in pre-order: a node's subtree
 * is the run of nodes after it with a greater depth, and one linear pass
 * lays the whole picture out.  --flamechart skips the sort (input order,
 * adjacent equal frames merge, as flamegraph.pl does).  Node names point
 * into the set's strings (or a reversed copy), never copied.
 */
#include "tools/lib/flamegraph.h"
#include "tools/lib/xmlesc.h"
#include "flamegraph_js.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define XPAD	10

struct node {
	const char *name;
	uint32_t len;
	uint32_t depth;
	uint64_t count;		/* inclusive, AFTER in a diff */
};

struct tree {
	struct node *nodes;
	double *before;		/* diff only: inclusive BEFORE, scaled */
	size_t n, cap;
	uint32_t maxdepth;
};

struct sref {
	const char *s;
	size_t len;
	uint64_t a, b;		/* count (AFTER), BEFORE */
};

void fg_options_init(struct fg_options *o)
{
	memset(o, 0, sizeof(*o));
	o->countname = "samples";
	o->nametype = "Function:";
	o->width = 1200;
	o->frame_height = 16;
	o->font_size = 12;
	o->minwidth = 0.1;
	o->max_frames = 30000;
	o->palette = FG_PALETTE_HOT;
}

int fg_palette_parse(const char *name, enum fg_palette *out)
{
	static const struct { const char *n; enum fg_palette p; } t[] = {
		{ "hot", FG_PALETTE_HOT }, { "mem", FG_PALETTE_MEM },
		{ "io", FG_PALETTE_IO }, { "wakeup", FG_PALETTE_WAKEUP },
		{ "offcpu", FG_PALETTE_OFFCPU }, { "off-cpu", FG_PALETTE_OFFCPU },
		{ "blue", FG_PALETTE_OFFCPU },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(name, t[i].n)) {
			*out = t[i].p;
			return 0;
		}
	return -EINVAL;
}

const char *fg_strerror(int err)
{
	switch (err) {
	case 0: return "success";
	case -ENODATA: return "no samples: the input is empty or all counts are zero";
	case -EINVAL: return "invalid option value";
	case -ENOMEM: return "out of memory";
	case -EIO: return "write error";
	default: return strerror(err < 0 ? -err : err);
	}
}

/* ---- ordering ---------------------------------------------------------- */

/* Frame-wise lexicographic order: end of string < ';' < any other byte. */
static int stack_cmp(const void *pa, const void *pb)
{
	const struct sref *a = pa, *b = pb;
	size_t n = a->len < b->len ? a->len : b->len, i = 0;
	unsigned char ca, cb;

	while (i + 8 <= n) {
		uint64_t x, y;

		memcpy(&x, a->s + i, 8);
		memcpy(&y, b->s + i, 8);
		if (x != y)
			break;
		i += 8;
	}
	while (i < n && a->s[i] == b->s[i])
		i++;
	if (i == n)
		return (a->len > b->len) - (a->len < b->len);
	ca = (unsigned char)a->s[i];
	cb = (unsigned char)b->s[i];
	if (ca == ';')
		return -1;
	if (cb == ';')
		return 1;
	return ca < cb ? -1 : 1;
}

/* ---- tree -------------------------------------------------------------- */

static int tree_push(struct tree *t, const char *name, size_t len,
		     uint32_t depth, int diff)
{
	struct node *nd;

	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 4096;
		struct node *nn = realloc(t->nodes, nc * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		t->nodes = nn;
		if (diff) {
			double *nb = realloc(t->before, nc * sizeof(*nb));

			if (!nb)
				return -ENOMEM;
			t->before = nb;
		}
		t->cap = nc;
	}
	nd = &t->nodes[t->n];
	nd->name = name;
	nd->len = (uint32_t)len;
	nd->depth = depth;
	nd->count = 0;
	if (diff)
		t->before[t->n] = 0;
	if (depth > t->maxdepth)
		t->maxdepth = depth;
	t->n++;
	return 0;
}

/* Nodes path[from..len-1] are complete (the path moved on).  Deepest
 * first, a node too narrow to draw loses its subtree (the nodes after it
 * in the array) and becomes a placeholder (name NULL) that keeps only its
 * count, so the x of later siblings stays right; adjacent placeholder
 * siblings merge.  Memory thus stays proportional to what is drawn, not
 * to the input. */
static void tree_finish(struct tree *t, const size_t *path, size_t from,
			size_t len, double scale, double minpx)
{
	while (len > from) {
		size_t ni = path[--len];
		struct node *nd = &t->nodes[ni];

		if (nd->count && (double)nd->count * scale >= minpx)
			continue;
		t->n = ni + 1;
		nd->name = NULL;
		nd->len = 0;
		if (ni > 0 && !t->nodes[ni - 1].name &&
		    t->nodes[ni - 1].depth == nd->depth) {
			t->nodes[ni - 1].count += nd->count;
			if (t->before)
				t->before[ni - 1] += t->before[ni];
			t->n = ni;
		}
	}
}

/* Merge the stacks, in the given order, into pre-order nodes, dropping
 * the subtrees of nodes narrower than MINPX as they complete. */
static int tree_build(struct tree *t, const struct sref *refs, size_t nrefs,
		      int diff, double bscale, double scale, double minpx)
{
	size_t *path = NULL, pathcap = 0, pathlen = 0, i;
	int r;

	if ((r = tree_push(t, "all", 3, 0, diff)))
		return r;
	for (i = 0; i < nrefs; i++) {
		const struct sref *s = &refs[i];
		struct folded_iter it;
		const char *f;
		size_t flen, d = 0;

		t->nodes[0].count += s->a;
		if (diff)
			t->before[0] += (double)s->b * bscale;
		folded_iter_init(&it, s->s, s->len);
		while (folded_iter_next(&it, &f, &flen)) {
			size_t ni;

			if (d >= pathcap) {
				size_t nc = pathcap ? pathcap * 2 : 64;
				size_t *np = realloc(path, nc * sizeof(*np));

				if (!np) {
					free(path);
					return -ENOMEM;
				}
				path = np;
				pathcap = nc;
			}
			if (d < pathlen && t->nodes[path[d]].len == flen &&
			    !memcmp(t->nodes[path[d]].name, f, flen)) {
				ni = path[d];
			} else {
				tree_finish(t, path, d, pathlen, scale, minpx);
				if (d >= UINT32_MAX - 1 ||
				    (r = tree_push(t, f, flen, (uint32_t)d + 1, diff))) {
					free(path);
					return r ? r : -E2BIG;
				}
				ni = t->n - 1;
				path[d] = ni;
				pathlen = d + 1;
			}
			t->nodes[ni].count += s->a;
			if (diff)
				t->before[ni] += (double)s->b * bscale;
			d++;
		}
		/* A shorter stack ends the path: later stacks must not merge
		 * below its leaf with what came before (flamechart order). */
		if (d < pathlen) {
			tree_finish(t, path, d, pathlen, scale, minpx);
			pathlen = d;
		}
	}
	tree_finish(t, path, 0, pathlen, scale, minpx);
	free(path);
	return 0;
}

/* ---- references -------------------------------------------------------- */

/* Copy of s with its frames in the opposite order. */
static void reverse_frames(char *dst, const char *s, size_t len)
{
	size_t end = len, o = 0;

	while (end > 0) {
		size_t st = end;

		while (st > 0 && s[st - 1] != ';')
			st--;
		memcpy(dst + o, s + st, end - st);
		o += end - st;
		if (st > 0)
			dst[o++] = ';';
		end = st ? st - 1 : 0;
	}
}

static int add_refs(struct sref *refs, size_t *n, const struct folded_set *set,
		    int is_before, int reverse, char **rbuf, size_t *rused)
{
	size_t i, cnt = folded_set_size(set);

	for (i = 0; i < cnt; i++) {
		const struct folded_stack *fs = folded_set_get(set, i);
		struct sref *r = &refs[(*n)++];

		r->s = fs->stack;
		r->len = fs->len;
		r->a = is_before ? 0 : fs->count;
		r->b = is_before ? fs->count : 0;
		if (reverse) {
			reverse_frames(*rbuf + *rused, fs->stack, fs->len);
			r->s = *rbuf + *rused;
			*rused += fs->len;
		}
	}
	return 0;
}

/* ---- colours ----------------------------------------------------------- */

struct rgb { int r, g, b; };

static int is_kernel(const struct node *nd)
{
	return nd->len >= 4 && !memcmp(nd->name + nd->len - 4, "_[k]", 4);
}

static struct rgb palette_colour(enum fg_palette p, int kernel, double v1,
				 double v2, double v3)
{
	struct rgb c;

	if (kernel) {
		if (p == FG_PALETTE_HOT) {	/* aqua apart from red-yellow */
			c.r = 50 + (int)(60 * v1);
			c.g = 165 + (int)(55 * v2);
			c.b = 165 + (int)(55 * v2);
		} else {			/* orange apart from the cool ones */
			c.r = 230 + (int)(25 * v1);
			c.g = 120 + (int)(60 * v2);
			c.b = (int)(40 * v3);
		}
		return c;
	}
	switch (p) {
	case FG_PALETTE_MEM:
		c.r = 0;
		c.g = 190 + (int)(50 * v2);
		c.b = (int)(210 * v1);
		break;
	case FG_PALETTE_IO:
		c.r = 80 + (int)(60 * v1);
		c.g = c.r;
		c.b = 190 + (int)(55 * v2);
		break;
	case FG_PALETTE_WAKEUP:
		c.r = 90 + (int)(50 * v1);
		c.g = 200 + (int)(40 * v2);
		c.b = 200 + (int)(40 * v2);
		break;
	case FG_PALETTE_OFFCPU:
		c.r = 30 + (int)(50 * v1);
		c.g = 90 + (int)(70 * v2);
		c.b = 190 + (int)(65 * v3);
		break;
	case FG_PALETTE_HOT:
	default:
		c.r = 205 + (int)(50 * v3);
		c.g = (int)(230 * v1);
		c.b = (int)(55 * v2);
		break;
	}
	return c;
}

/* ---- output ------------------------------------------------------------ */

struct layout {
	const struct fg_options *o;
	double scale;		/* px per count */
	uint64_t total;
	unsigned height, ypad1, ypad2;
	uint64_t rng;
	int diff;
	double maxdelta;
	/* Wall-clock profiles (glass-profile --wall): the subtree under an
	 * "[oncpu]" frame takes the hot palette, the one under "[offcpu]" or
	 * "[runqueue]" (runnable, waiting for a CPU: off it too) the off-CPU
	 * palette, whatever o->palette says, so the halves read apart. */
	int half;		/* 0 none, 1 on-CPU, 2 off-CPU */
	uint32_t half_depth;
};

static double next_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return (double)(x >> 11) / 9007199254740992.0;
}

static double frame_y(const struct layout *L, uint32_t depth)
{
	unsigned fh = L->o->frame_height;

	if (L->o->inverted)
		return (double)L->ypad1 + (double)depth * fh;
	return (double)L->height - L->ypad2 - (double)(depth + 1) * fh + 1;
}

static enum fg_palette frame_palette(const struct layout *L)
{
	return L->half == 1 ? FG_PALETTE_HOT : L->half == 2 ? FG_PALETTE_OFFCPU :
	       L->o->palette;
}

/* A frame's fill from three random (or hashed) numbers in [0, 1).  In a
 * wall-clock profile four kinds of frame read apart: on-CPU user
 * red-yellow and kernel aqua (as in an on-CPU graph), off-CPU user blue
 * and kernel violet.  An off-CPU graph's orange kernel frames would fall
 * inside the on-CPU half's red-yellow there, so the off-CPU half's kernel
 * frames take violet instead (dashboards/web/js/flame.js draws the same). */
static struct rgb frame_colour(const struct layout *L, const struct node *nd,
			       double v1, double v2, double v3)
{
	if (L->half == 2 && is_kernel(nd))
		return (struct rgb){ 150 + (int)(50 * v1), 60 + (int)(40 * v2),
				     220 + (int)(35 * v3) };
	return palette_colour(frame_palette(L), is_kernel(nd), v1, v2, v3);
}

/* Pre-order walk: enter or leave an "[oncpu]"/"[offcpu]"/"[runqueue]"
 * subtree. */
static void track_half(struct layout *L, const struct node *nd)
{
	if (L->half && nd->depth <= L->half_depth)
		L->half = 0;
	if (!L->half && nd->len == 7 && !memcmp(nd->name, "[oncpu]", 7))
		L->half = 1;
	else if (!L->half && ((nd->len == 8 && !memcmp(nd->name, "[offcpu]", 8)) ||
			      (nd->len == 10 && !memcmp(nd->name, "[runqueue]", 10))))
		L->half = 2;
	else
		return;
	L->half_depth = nd->depth;
}

static void put_frame(FILE *f, struct layout *L, const struct tree *t,
		      size_t i, uint64_t xcount)
{
	const struct node *nd = &t->nodes[i];
	const struct fg_options *o = L->o;
	double x = XPAD + (double)xcount * L->scale;
	double w = (double)nd->count * L->scale;
	double y = frame_y(L, nd->depth);
	double pct = 100.0 * (double)nd->count / (double)L->total;
	double chars = floor((w - 6) / (0.59 * o->font_size));
	size_t ncp;
	struct rgb c;

	if (L->diff) {
		double delta = (double)nd->count - t->before[i];
		int k = L->maxdelta > 0 ?
			(int)(210.0 * fabs(delta) / L->maxdelta) : 0;

		if (delta > 0)
			c = (struct rgb){ 255, 255 - k, 255 - k };
		else
			c = (struct rgb){ 255 - k, 255 - k, 255 };
	} else if (o->hash) {
		uint64_t h = folded_hash(nd->name, nd->len);

		c = frame_colour(L, nd, (double)(h & 0xffff) / 65536.0,
				 (double)((h >> 16) & 0xffff) / 65536.0,
				 (double)((h >> 32) & 0xffff) / 65536.0);
	} else {
		double v1 = next_rand(&L->rng), v2 = next_rand(&L->rng),
		       v3 = next_rand(&L->rng);

		c = frame_colour(L, nd, v1, v2, v3);
	}

	fputs("<g><title>", f);
	xml_escape(f, nd->name, nd->len, SIZE_MAX);
	fprintf(f, " (%llu ", (unsigned long long)nd->count);
	xml_puts(f, o->countname);
	fprintf(f, ", %.2f%%", pct);
	if (L->diff) {
		double delta = (double)nd->count - t->before[i];

		fprintf(f, "; before %.0f, delta %+.0f, %+.2f%%", t->before[i],
			delta, 100.0 * delta / (double)L->total);
	}
	fprintf(f, ")</title><rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
		"height=\"%u\" fill=\"rgb(%d,%d,%d)\" rx=\"2\" ry=\"2\"/>",
		x, y, w, o->frame_height - 1, c.r, c.g, c.b);
	fprintf(f, "<text x=\"%.2f\" y=\"%.2f\">", x + 3,
		y + (o->frame_height - 1) / 2.0 + o->font_size * 0.35);
	if (chars >= 3) {
		ncp = utf8_count(nd->name, nd->len);
		if (ncp <= (size_t)chars) {
			xml_escape(f, nd->name, nd->len, SIZE_MAX);
		} else {
			xml_escape(f, nd->name, nd->len, (size_t)chars - 2);
			fputs("..", f);
		}
	}
	fputs("</text></g>\n", f);
}

static void put_header(FILE *f, const struct layout *L, const char *deftitle)
{
	const struct fg_options *o = L->o;
	unsigned W = o->width, H = L->height, fs = o->font_size;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%u\" height=\"%u\" "
		"viewBox=\"0 0 %u %u\" xmlns=\"http://www.w3.org/2000/svg\" "
		"class=\"flamegraph\" onload=\"fginit(evt)\" "
		"data-width=\"%u\" data-xpad=\"%d\" data-fh=\"%u\" data-font=\"%u\" "
		"data-base=\"%.2f\" data-inverted=\"%d\" data-total=\"%llu\" "
		"data-nametype=\"",
		W, H, W, H, W, XPAD, o->frame_height, fs, frame_y(L, 0),
		o->inverted ? 1 : 0, (unsigned long long)L->total);
	xml_puts(f, o->nametype);
	fputs("\">\n", f);
	if (o->notes) {
		fputs("<desc id=\"notes\">", f);
		xml_puts(f, o->notes);
		fputs("</desc>\n", f);
	}
	fprintf(f, "<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" "
		"x1=\"0\" x2=\"0\"><stop stop-color=\"%s\" offset=\"5%%\"/>"
		"<stop stop-color=\"%s\" offset=\"95%%\"/></linearGradient></defs>\n",
		L->diff ? "#f8f8f8" : "#eeeeee", L->diff ? "#e8e8e8" : "#eeeeb0");
	fprintf(f, "<style type=\"text/css\">\n"
		"text { font-family: Verdana, sans-serif; font-size: %upx; fill: rgb(0,0,0); }\n"
		"#title { text-anchor: middle; font-size: %upx; }\n"
		"#subtitle { text-anchor: middle; fill: rgb(110,110,110); }\n"
		"#search, #unzoom, #ignorecase { cursor: pointer; }\n"
		"#search, #ignorecase { opacity: 0.6; } #search:hover, #ignorecase:hover { opacity: 1; }\n"
		"#ignorecase.on { opacity: 1; font-weight: bold; }\n"
		"#frames > g { cursor: pointer; }\n"
		"#frames > g:hover > rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
		"#frames text { pointer-events: none; }\n"
		".hide { display: none; }\n"
		".parent { opacity: 0.5; }\n"
		"</style>\n", fs, fs + 5);
	fputs("<script type=\"text/ecmascript\"><![CDATA[\n", f);
	fputs(flamegraph_js, f);
	fputs("]]></script>\n", f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" "
		"fill=\"url(#background)\"/>\n", W, H);
	fprintf(f, "<text id=\"title\" x=\"%.2f\" y=\"%u\">", W / 2.0, fs * 2);
	xml_puts(f, o->title ? o->title : deftitle);
	fputs("</text>\n", f);
	if (o->subtitle) {
		fprintf(f, "<text id=\"subtitle\" x=\"%.2f\" y=\"%u\">",
			W / 2.0, fs * 4);
		xml_puts(f, o->subtitle);
		fputs("</text>\n", f);
	}
	fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%.2f\"> </text>\n",
		XPAD, H - L->ypad2 / 2.0);
	fprintf(f, "<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"%u\">"
		"Reset Zoom</text>\n", XPAD, fs * 2);
	fprintf(f, "<text id=\"search\" x=\"%d\" y=\"%u\">Search</text>\n",
		W - XPAD - 100, fs * 2);
	fprintf(f, "<text id=\"ignorecase\" x=\"%d\" y=\"%u\">ic</text>\n",
		W - XPAD - 16, fs * 2);
	fprintf(f, "<text id=\"matched\" x=\"%d\" y=\"%.2f\"> </text>\n",
		W - XPAD - 100, H - L->ypad2 / 2.0);
}

static int cmp_u64_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x < y) - (x > y);
}

/* Decide which nodes are drawn: wide enough, and among the max_frames
 * widest.  vis[i] = 1 if drawn.  Returns the deepest drawn depth, or <0. */
static long choose_visible(const struct tree *t, const struct layout *L,
			   double minpx, unsigned char *vis)
{
	size_t i, ncand = 0, budget, max = L->o->max_frames;
	uint64_t thresh = 0, *counts;
	long maxd = 0;

	for (i = 0; i < t->n; i++)
		ncand += (double)t->nodes[i].count * L->scale >= minpx &&
			 t->nodes[i].count > 0 && t->nodes[i].name;
	if (max && ncand > max) {
		size_t k = 0;

		counts = malloc(ncand * sizeof(*counts));
		if (!counts)
			return -ENOMEM;
		for (i = 0; i < t->n; i++)
			if ((double)t->nodes[i].count * L->scale >= minpx &&
			    t->nodes[i].count > 0 && t->nodes[i].name)
				counts[k++] = t->nodes[i].count;
		qsort(counts, k, sizeof(*counts), cmp_u64_desc);
		thresh = counts[max - 1];
		budget = max;
		for (k = 0; k < max && counts[k] > thresh; k++)
			budget--;	/* budget left for ties at thresh */
		free(counts);
	} else {
		budget = SIZE_MAX;
	}
	/* Pre-order walk; a hidden node hides its subtree. */
	for (i = 0; i < t->n; ) {
		const struct node *nd = &t->nodes[i];
		int ok = nd->count > 0 && nd->name &&
			 (double)nd->count * L->scale >= minpx &&
			 nd->count >= thresh;

		if (ok && thresh && nd->count == thresh) {
			if (budget)
				budget--;
			else
				ok = 0;
		}
		if (ok) {
			vis[i++] = 1;
			if ((long)nd->depth > maxd)
				maxd = nd->depth;
			continue;
		}
		vis[i++] = 0;
		while (i < t->n && t->nodes[i].depth > nd->depth)
			vis[i++] = 0;
	}
	return maxd;
}

static int render(FILE *f, const struct folded_set *before,
		  const struct folded_set *after, const struct fg_options *o)
{
	struct tree t = { 0 };
	struct sref *refs = NULL;
	char *rbuf = NULL;
	unsigned char *vis = NULL;
	uint64_t *nextx = NULL;
	size_t nrefs = 0, rused = 0, i, total_len = 0;
	double bscale = 1.0, minpx;
	struct layout L = { .o = o, .rng = 0x9e3779b97f4a7c15ULL };
	const char *deftitle;
	long maxd;
	int diff = before != NULL, r;

	if (!o->width || o->width < 50 || o->width > 100000 ||
	    !o->frame_height || o->frame_height > 1000 ||
	    !o->font_size || o->font_size > 200 ||
	    !(o->minwidth >= 0) || (o->minwidth_pct && o->minwidth > 100))
		return -EINVAL;
	if (!folded_set_total(after) || (diff && !folded_set_total(before)))
		return -ENODATA;
	if (diff && o->normalize)
		bscale = (double)folded_set_total(after) /
			 (double)folded_set_total(before);

	nrefs = folded_set_size(after) + (diff ? folded_set_size(before) : 0);
	refs = malloc(nrefs * sizeof(*refs));
	if (!refs)
		return -ENOMEM;
	if (o->reverse) {
		for (i = 0; i < folded_set_size(after); i++)
			total_len += folded_set_get(after, i)->len;
		for (i = 0; diff && i < folded_set_size(before); i++)
			total_len += folded_set_get(before, i)->len;
		rbuf = malloc(total_len + 1);
		if (!rbuf) {
			r = -ENOMEM;
			goto out;
		}
	}
	nrefs = 0;
	add_refs(refs, &nrefs, after, 0, o->reverse, &rbuf, &rused);
	if (diff)
		add_refs(refs, &nrefs, before, 1, o->reverse, &rbuf, &rused);
	if (!o->flamechart)
		qsort(refs, nrefs, sizeof(*refs), stack_cmp);
	L.total = folded_set_total(after);
	L.diff = diff;
	L.scale = (double)(o->width - 2 * XPAD) / (double)L.total;
	minpx = o->minwidth_pct ? o->minwidth / 100.0 * (o->width - 2 * XPAD)
				: o->minwidth;
	r = tree_build(&t, refs, nrefs, diff, bscale, L.scale, minpx);
	free(refs);
	refs = NULL;
	if (r)
		goto out;
	vis = malloc(t.n);
	nextx = calloc((size_t)t.maxdepth + 2, sizeof(*nextx));
	if (!vis || !nextx) {
		r = -ENOMEM;
		goto out;
	}
	maxd = choose_visible(&t, &L, minpx, vis);
	if (maxd < 0) {
		r = (int)maxd;
		goto out;
	}
	if (diff)
		for (i = 0; i < t.n; i++)
			if (vis[i] && fabs((double)t.nodes[i].count - t.before[i]) > L.maxdelta)
				L.maxdelta = fabs((double)t.nodes[i].count - t.before[i]);

	L.ypad1 = o->font_size * 3 + (o->subtitle ? o->font_size * 2 : 0);
	L.ypad2 = o->font_size * 2 + 10;
	L.height = L.ypad1 + L.ypad2 + (unsigned)(maxd + 1) * o->frame_height;
	deftitle = diff ? "Differential Flame Graph" :
		   o->flamechart ? "Flame Chart" :
		   o->inverted ? "Icicle Graph" : "Flame Graph";
	put_header(f, &L, deftitle);
	fputs("<g id=\"frames\">\n", f);
	/* Pre-order: x of a node = where its parent's next child starts. */
	for (i = 0; i < t.n; i++) {
		const struct node *nd = &t.nodes[i];
		uint64_t x = nextx[nd->depth];

		nextx[nd->depth] += nd->count;
		nextx[nd->depth + 1] = x;
		track_half(&L, nd);
		if (vis[i])
			put_frame(f, &L, &t, i, x);
	}
	fputs("</g>\n</svg>\n", f);
	r = ferror(f) ? -EIO : 0;
out:
	free(refs);
	free(rbuf);
	free(vis);
	free(nextx);
	free(t.nodes);
	free(t.before);
	return r;
}

int fg_render(FILE *out, const struct folded_set *set,
	      const struct fg_options *o)
{
	return render(out, NULL, set, o);
}

int fg_render_diff(FILE *out, const struct folded_set *before,
		   const struct folded_set *after, const struct fg_options *o)
{
	if (!before)
		return -ENODATA;
	return render(out, before, after, o);
}

int fg_render_mem(char **buf, size_t *len, const struct folded_set *before,
		  const struct folded_set *after, const struct fg_options *o)
{
	FILE *m = open_memstream(buf, len);
	int r;

	if (!m)
		return -ENOMEM;
	r = render(m, before, after, o);
	if (fclose(m) && !r)
		r = -ENOMEM;
	if (r) {
		free(*buf);
		*buf = NULL;
		*len = 0;
	}
	return r;
}
