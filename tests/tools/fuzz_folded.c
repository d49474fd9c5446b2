/*
 * fuzz_folded.c — fuzz target of the folded parser and the renderer, and
 * the unit test that replays its corpus.
 *
 * Built two ways from this one file:
 *   make fuzz-flamegraph   clang -fsanitize=fuzzer,address,undefined with
 *                          -DFUZZING: libFuzzer drives fuzz_one(); crashers
 *                          land in tests/tools/corpus/ (commit them);
 *   make test              gcc ASan/UBSan with a main() that replays every
 *                          file of tests/tools/corpus/ and
 *                          tests/tools/folded/NAME.in through fuzz_one().
 *
 * Oracle, besides the sanitizers: a successful parse writes back (set
 * writer) to text that parses to the same set, and renders to an SVG that
 * is valid UTF-8 with no raw '<' or '&' coming from a frame name.
 */
#include "tools/lib/flamegraph.h"
#include "tools/lib/folded.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int valid_utf8(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = s[i];
		size_t k, need;
		uint32_t v;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) { need = 1; v = c & 0x1f; }
		else if (c >= 0xe0 && c <= 0xef) { need = 2; v = c & 0x0f; }
		else if (c >= 0xf0 && c <= 0xf4) { need = 3; v = c & 0x07; }
		else return 0;
		if (i + need >= n)
			return 0;
		for (k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			v = (v << 6) | (s[i + k] & 0x3f);
		}
		if ((need == 2 && v < 0x800) || (need == 3 && (v < 0x10000 || v > 0x10ffff)) ||
		    (v >= 0xd800 && v <= 0xdfff))
			return 0;
		i += need + 1;
	}
	return 1;
}

/* Returns 0 when the oracle holds. */
static int fuzz_one(const uint8_t *data, size_t size)
{
	struct folded_limits lim = { .max_lines = 10000, .max_line_len = 4096,
		.max_frames = 128, .max_frame_len = 512, .max_stacks = 5000 };
	struct folded_set *s = folded_set_new(), *back = NULL;
	struct folded_error e;
	char *txt = NULL, *svg = NULL;
	size_t tlen = 0, slen = 0, i;
	struct fg_options o;
	int bad = 0;
	FILE *m;

	if (!s)
		return 0;
	/* folded text, or perf script output collapsed to folded */
	if (folded_parse_any_buf(s, (const char *)data, size, &lim, &e))
		goto out;
	/* write back, parse again as folded: the same set */
	m = open_memstream(&txt, &tlen);
	folded_set_write(m, s);
	fclose(m);
	back = folded_set_new();
	if (folded_parse_buf(back, txt, tlen, NULL, &e) ||
	    folded_set_size(back) != folded_set_size(s) ||
	    folded_set_total(back) != folded_set_total(s)) {
		fprintf(stderr, "round trip failed: %s\n", e.msg);
		bad = 1;
		goto out;
	}
	for (i = 0; i < folded_set_size(s); i++) {
		const struct folded_stack *a = folded_set_get(s, i), *b = folded_set_get(back, i);

		if (a->len != b->len || memcmp(a->stack, b->stack, a->len) || a->count != b->count) {
			fprintf(stderr, "round trip changed stack %zu\n", i);
			bad = 1;
			goto out;
		}
	}
	fg_options_init(&o);
	o.minwidth = 0;
	o.max_frames = 2000;
	o.reverse = size & 1;
	o.inverted = (size >> 1) & 1;
	if (fg_render_mem(&svg, &slen, (size & 4) ? back : NULL, s, &o) == 0) {
		if (!valid_utf8((const unsigned char *)svg, slen)) {
			fprintf(stderr, "SVG is not valid UTF-8\n");
			bad = 1;
		}
	}
out:
	free(txt);
	free(svg);
	folded_set_free(s);
	folded_set_free(back);
	return bad;
}

#ifdef FUZZING
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (fuzz_one(data, size))
		abort();
	return 0;
}
#else
static int replay_dir(const char *dir, const char *suffix, int *fails)
{
	struct dirent **names;
	int n, i, done = 0;

	n = scandir(dir, &names, NULL, alphasort);
	for (i = 0; i < n; i++) {
		const char *nm = names[i]->d_name;
		size_t l = strlen(nm), sl = suffix ? strlen(suffix) : 0;
		char path[4096];
		FILE *f;

		if (nm[0] != '.' && (!suffix || (l > sl && !strcmp(nm + l - sl, suffix)))) {
			snprintf(path, sizeof(path), "%s/%s", dir, nm);
			if ((f = fopen(path, "rb"))) {
				char *buf = malloc(1 << 20);
				size_t len = fread(buf, 1, 1 << 20, f);

				fclose(f);
				if (fuzz_one((const uint8_t *)buf, len)) {
					printf("FAIL: replay %s: oracle failed\n", path);
					(*fails)++;
				}
				free(buf);
				done++;
			}
		}
		free(names[i]);
	}
	if (n > 0)
		free(names);
	return done;
}

int main(void)
{
	const char *root = getenv("GLASSFS_ROOT") ? getenv("GLASSFS_ROOT") : ".";
	char dir[4096];
	int fails = 0, n;

	snprintf(dir, sizeof(dir), "%s/tests/tools/corpus", root);
	n = replay_dir(dir, NULL, &fails);
	printf("%s: replay fuzz corpus (%d inputs)\n", fails ? "FAIL" : "PASS", n);
	snprintf(dir, sizeof(dir), "%s/tests/tools/folded", root);
	n = replay_dir(dir, ".in", &fails);
	printf("%s: replay parser goldens through the fuzz oracle (%d inputs)\n",
	       fails ? "FAIL" : "PASS", n);
	return fails ? 1 : 0;
}
#endif
