/*
 * flamegraph_test.c — the renderer's library API (what glass-aggd calls):
 * option defaults and validation, -ENODATA for empty sets and baselines,
 * rendering into memory, and a seeded property check on random sets: the
 * root spans the full width, every drawn frame lies inside its parent's
 * x-range, frame counts are bounded by max_frames, output deterministic.
 *   flamegraph_test [SEED]   (or SEED=n)
 */
#include "tools/lib/flamegraph.h"
#include "tools/lib/folded.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fails;
#define CHECK(name, cond) do { \
	if (cond) printf("PASS: %s\n", name); \
	else { printf("FAIL: %s: %s:%d: %s\n", name, __FILE__, __LINE__, #cond); fails++; } \
} while (0)

static struct folded_set *set_of(const char *text)
{
	struct folded_set *s = folded_set_new();
	struct folded_error e;

	if (folded_parse_buf(s, text, strlen(text), NULL, &e)) {
		printf("# parse: line %lu: %s\n", e.line, e.msg);
		folded_set_free(s);
		return NULL;
	}
	return s;
}

static void api(void)
{
	struct fg_options o;
	struct folded_set *s = set_of("a;b 3\na;c 1\n"), *z = set_of("a 0\n");
	struct folded_set *empty = folded_set_new();
	enum fg_palette p;
	char *buf = NULL;
	size_t len = 0;

	fg_options_init(&o);
	CHECK("defaults", o.width == 1200 && o.frame_height == 16 &&
	      !strcmp(o.countname, "samples") && o.minwidth == 0.1 && o.max_frames == 30000);
	CHECK("palette names", !fg_palette_parse("offcpu", &p) && p == FG_PALETTE_OFFCPU &&
	      !fg_palette_parse("wakeup", &p) && p == FG_PALETTE_WAKEUP &&
	      fg_palette_parse("pink", &p) == -EINVAL);
	CHECK("render to memory", fg_render_mem(&buf, &len, NULL, s, &o) == 0 && len > 1000 &&
	      strlen(buf) == len && strstr(buf, "<title>b (3 samples, 75.00%)</title>") &&
	      !strcmp(buf + len - 7, "</svg>\n"));
	free(buf);
	CHECK("empty set is ENODATA", fg_render_mem(&buf, &len, NULL, empty, &o) == -ENODATA && !buf);
	CHECK("all-zero set is ENODATA", fg_render_mem(&buf, &len, NULL, z, &o) == -ENODATA);
	CHECK("empty baseline is ENODATA", fg_render_mem(&buf, &len, empty, s, &o) == -ENODATA);
	CHECK("zero baseline is ENODATA", fg_render_diff(stdout, z, s, &o) == -ENODATA);
	CHECK("diff renders", fg_render_mem(&buf, &len, s, s, &o) == 0 &&
	      strstr(buf, "before 3, delta +0, +0.00%"));
	free(buf);
	o.width = 10;
	CHECK("width too small is EINVAL", fg_render_mem(&buf, &len, NULL, s, &o) == -EINVAL);
	fg_options_init(&o);
	o.minwidth = 150;
	o.minwidth_pct = 1;
	CHECK("minwidth over 100% is EINVAL", fg_render_mem(&buf, &len, NULL, s, &o) == -EINVAL);
	CHECK("strerror", strstr(fg_strerror(-ENODATA), "no samples") != NULL);
	folded_set_free(s);
	folded_set_free(z);
	folded_set_free(empty);
}

struct fr { double x, w, y; };

/* Every drawn frame inside the x-range of a frame one level below it. */
static void property(unsigned seed)
{
	struct folded_set *s = folded_set_new();
	struct fg_options o;
	char *buf = NULL, *buf2 = NULL, *p, line[512];
	size_t len, len2, n = 0, i, j, bad = 0;
	struct fr *fr = malloc(40000 * sizeof(*fr));
	double rootw = 0;

	srand(seed);
	for (i = 0; i < 3000; i++) {
		size_t d = 1 + (size_t)rand() % 10, k, off = 0;

		for (k = 0; k < d; k++)
			off += (size_t)snprintf(line + off, sizeof(line) - off, "%sf%d",
						k ? ";" : "", rand() % 5);
		folded_set_add(s, line, off, 1 + (uint64_t)(rand() % 100));
	}
	fg_options_init(&o);
	o.max_frames = 500;
	CHECK("random render", fg_render_mem(&buf, &len, NULL, s, &o) == 0);
	CHECK("deterministic", fg_render_mem(&buf2, &len2, NULL, s, &o) == 0 &&
	      len == len2 && !memcmp(buf, buf2, len));
	for (p = strstr(buf, "<g><title>"); p && n < 40000; p = strstr(p + 1, "<g><title>")) {
		char *r = strstr(p, "<rect x=\"");

		if (sscanf(r, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\"", &fr[n].x, &fr[n].y, &fr[n].w) == 3)
			n++;
	}
	CHECK("max_frames bounds the frames drawn", n > 100 && n <= 500);
	for (i = 0; i < n; i++)
		if (fr[i].w > rootw)
			rootw = fr[i].w;
	CHECK("root spans the full width", fabs(rootw - 1180.0) < 0.001);
	for (i = 0; i < n; i++) {
		int found = fr[i].w == rootw;

		for (j = 0; j < n && !found; j++)
			found = fabs(fr[j].y - (fr[i].y + 16)) < 0.001 &&
				fr[j].x <= fr[i].x + 0.011 &&
				fr[j].x + fr[j].w + 0.011 >= fr[i].x + fr[i].w;
		bad += !found;
	}
	CHECK("every frame sits on its parent", bad == 0);
	if (bad)
		printf("# seed %u: %zu orphan frames\n", seed, bad);
	free(buf);
	free(buf2);
	free(fr);
	folded_set_free(s);
}

int main(int argc, char **argv)
{
	unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) :
		getenv("SEED") ? (unsigned)strtoul(getenv("SEED"), NULL, 0) :
		(unsigned)time(NULL);

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("seed: %u\n", seed);
	api();
	property(seed);
	return fails ? 1 : 0;
}
