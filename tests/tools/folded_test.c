/*
 * folded_test.c — unit tests of tools/lib/folded.{c,h}: golden files
 * (tests/tools/folded/NAME.in -> NAME.out, each parsed both from a buffer
 * and from a FILE*, which must agree; perf*.in are `perf script` output,
 * read through folded_parse_any_buf/_file), pinned hash values, the writer's
 * sanitising round trip, limits, and a seeded random round trip.  The fuzz
 * corpus (tests/tools/corpus/) is replayed: parsing must not crash.
 *
 * Usage: folded_test [SEED]    REGOLDEN=1 re-records the .out files.
 */
#include "tools/lib/folded.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fails;
#define CHECK(name, cond) do { \
	if (cond) printf("PASS: %s\n", name); \
	else { printf("FAIL: %s: %s:%d: %s\n", name, __FILE__, __LINE__, #cond); fails++; } \
} while (0)

static const char *root(void)
{
	const char *r = getenv("GLASSFS_ROOT");
	return r && *r ? r : ".";
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, r;

	if (!f)
		return NULL;
	do {
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			buf = realloc(buf, cap + 1);
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
	} while (r);
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* The canonical dump of a parse: the set, or the error. */
static char *dump(int rc, struct folded_set *s, struct folded_error *e, size_t *len)
{
	char *out = NULL;
	FILE *m = open_memstream(&out, len);

	if (rc)
		fprintf(m, "error: line %lu: %s (%d)\n", e->line, e->msg, rc);
	else {
		folded_set_write(m, s);
		fprintf(m, "# %zu stacks, total %llu\n", folded_set_size(s),
			(unsigned long long)folded_set_total(s));
	}
	fclose(m);
	return out;
}

static void golden(void)
{
	char dir[4096], path[4400];
	struct dirent **names;
	int n, i, regolden = getenv("REGOLDEN") != NULL;
	struct folded_limits lim = { .max_lines = 100, .max_line_len = 4000,
		.max_frames = 64, .max_frame_len = 256, .max_stacks = 1000 };

	snprintf(dir, sizeof(dir), "%s/tests/tools/folded", root());
	n = scandir(dir, &names, NULL, alphasort);
	CHECK("golden dir readable", n > 0);
	for (i = 0; i < n; i++) {
		const char *nm = names[i]->d_name;
		size_t l = strlen(nm), inlen, outlen1, outlen2, explen;
		struct folded_set *s1, *s2;
		struct folded_error e1 = {0}, e2 = {0};
		char *in, *o1, *o2, *exp, cname[512];
		int r1, r2;
		FILE *f;

		if (l < 4 || strcmp(nm + l - 3, ".in")) {
			free(names[i]);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, nm);
		in = slurp(path, &inlen);
		s1 = folded_set_new();
		s2 = folded_set_new();
		/* perf*.in: `perf script` output, through the sniffing entry points */
		if (!strncmp(nm, "perf", 4)) {
			r1 = folded_parse_any_buf(s1, in, inlen, &lim, &e1);
			f = fopen(path, "rb");
			r2 = folded_parse_any_file(s2, f, &lim, &e2);
		} else {
			r1 = folded_parse_buf(s1, in, inlen, &lim, &e1);
			f = fopen(path, "rb");
			r2 = folded_parse_file(s2, f, &lim, &e2);
		}
		fclose(f);
		o1 = dump(r1, s1, &e1, &outlen1);
		o2 = dump(r2, s2, &e2, &outlen2);
		snprintf(cname, sizeof(cname), "golden %.*s: buffer and FILE agree",
			 (int)(l - 3), nm);
		CHECK(cname, outlen1 == outlen2 && !memcmp(o1, o2, outlen1));
		path[strlen(path) - 3] = '\0';
		strcat(path, ".out");
		snprintf(cname, sizeof(cname), "golden %.*s", (int)(l - 3), nm);
		if (regolden) {
			f = fopen(path, "wb");
			fwrite(o1, 1, outlen1, f);
			fclose(f);
			printf("PASS: %s (re-recorded)\n", cname);
		} else {
			exp = slurp(path, &explen);
			if (!exp) {
				printf("FAIL: %s: %s missing (make regolden-tools)\n", cname, path);
				fails++;
			} else if (explen != outlen1 || memcmp(exp, o1, explen)) {
				printf("FAIL: %s: output differs from %s; got:\n%s", cname, path, o1);
				fails++;
			} else
				printf("PASS: %s\n", cname);
			free(exp);
		}
		free(in); free(o1); free(o2);
		folded_set_free(s1);
		folded_set_free(s2);
		free(names[i]);
	}
	free(names);
}

static void corpus(void)
{
	char dir[4096], path[4400];
	struct dirent **names;
	int n, i, done = 0;

	snprintf(dir, sizeof(dir), "%s/tests/tools/corpus", root());
	n = scandir(dir, &names, NULL, alphasort);
	for (i = 0; i < n; i++) {
		size_t len;
		char *buf;
		struct folded_set *s;
		struct folded_error e;

		if (names[i]->d_name[0] == '.') {
			free(names[i]);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		buf = slurp(path, &len);
		if (buf) {
			s = folded_set_new();
			folded_parse_buf(s, buf, len, NULL, &e);
			folded_set_free(s);
			free(buf);
			done++;
		}
		free(names[i]);
	}
	if (n > 0)
		free(names);
	printf("PASS: corpus replay (%d inputs, no crash)\n", done);
}

static void hash(void)
{
	/* Pinned: the aggregator may store these. */
	CHECK("hash empty", folded_hash("", 0) == 0x9ca066f1a4ab2eeaULL || (printf("# hash('')=%#llx\n", (unsigned long long)folded_hash("", 0)), 0));
	CHECK("hash main;foo", folded_hash("main;foo", 8) == 0x0d3abc77ca90d5f2ULL || (printf("# hash(main;foo)=%#llx\n", (unsigned long long)folded_hash("main;foo", 8)), 0));
	CHECK("hash differs by one byte", folded_hash("main;fop", 8) != folded_hash("main;foo", 8));
	CHECK("hash differs by length", folded_hash("a\0", 2) != folded_hash("a", 1));
}

static void writer(void)
{
	const char *frames[] = { "leaf;x\ny", "", "mid\tdle", NULL, "root" };
	const char *frames2[] = { "a", "b  \t" };
	char *out = NULL, buf[16];
	size_t len;
	FILE *m = open_memstream(&out, &len);

	folded_write_stack(m, frames, 5, 7, FOLDED_LEAF_FIRST);
	folded_write_stack(m, frames2, 2, 3, 0);
	folded_write_stack(m, NULL, 0, 1, 0);
	fclose(m);
	CHECK("writer sanitises", !strcmp(out,
		"root;[unknown];mid\tdle;[unknown];leaf:x y 7\na;b 3\n[unknown] 1\n"));
	{
		struct folded_set *s = folded_set_new();
		struct folded_error e;
		int r = folded_parse_buf(s, out, len, NULL, &e);
		CHECK("writer output parses back", r == 0 && folded_set_size(s) == 3 &&
		      folded_set_total(s) == 11);
		folded_set_free(s);
	}
	free(out);
	CHECK("sanitize truncates", folded_sanitize_frame(buf, sizeof(buf), "a;b;cdefghijklmnopqrstuvwxyz") == 15 &&
	      !strcmp(buf, "a:b:cdefghijklm"));
	{
		const char *bf[] = { "\xef\xbb\xbf\xef\xbb\xbfmain", "x" };
		char *o2 = NULL;
		size_t l2;
		FILE *m2 = open_memstream(&o2, &l2);

		folded_write_stack(m2, bf, 2, 1, 0);
		fclose(m2);
		CHECK("writer drops a byte-order mark opening the line", !strcmp(o2, "main;x 1\n"));
		free(o2);
	}
	CHECK("sanitize null", folded_sanitize_frame(buf, sizeof(buf), NULL) == 9 && !strcmp(buf, "[unknown]"));
}

static void api(void)
{
	struct folded_set *s = folded_set_new();
	struct folded_iter it;
	const char *f;
	size_t n, k = 0;
	char got[64] = "";

	CHECK("add", folded_set_add(s, "a;b", 3, 5) == 0);
	CHECK("add again sums", folded_set_add(s, "a;b", 3, 6) == 0 && folded_set_get(s, 0)->count == 11);
	CHECK("add overflow", folded_set_add(s, "c", 1, UINT64_MAX) == -EOVERFLOW);
	CHECK("find", folded_set_find(s, "a;b", 3) && !folded_set_find(s, "a", 1));
	folded_iter_init(&it, "x;yy;zzz", 8);
	while (folded_iter_next(&it, &f, &n)) {
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "[%.*s]", (int)n, f);
		k++;
	}
	CHECK("iterate frames", k == 3 && !strcmp(got, "[x][yy][zzz]"));
	folded_iter_init(&it, "", 0);
	CHECK("iterate empty", !folded_iter_next(&it, &f, &n));
	folded_set_free(s);
	folded_set_free(NULL);
}

/* Random stacks through the writer and the parser: same set back. */
static void roundtrip(unsigned seed)
{
	struct folded_set *ref = folded_set_new(), *back = folded_set_new();
	char *out = NULL;
	size_t len, i, ok = 1;
	FILE *m = open_memstream(&out, &len);
	struct folded_error e;
	char names[50][16];
	int r;

	srand(seed);
	for (i = 0; i < 50; i++)
		snprintf(names[i], sizeof(names[i]), "fn_%d%s", rand() % 1000,
			 i % 7 ? "" : "_[k]");
	for (i = 0; i < 5000; i++) {
		const char *fr[12];
		char line[256] = "";
		size_t d = 1 + (size_t)rand() % 12, j;
		uint64_t c = 1 + (uint64_t)rand() % 1000;

		for (j = 0; j < d; j++) {
			fr[j] = names[rand() % 50];
			if (j)
				strcat(line, ";");
			strcat(line, fr[j]);
		}
		folded_write_stack(m, fr, d, c, 0);
		folded_set_add(ref, line, strlen(line), c);
	}
	fclose(m);
	r = folded_parse_buf(back, out, len, NULL, &e);
	ok = r == 0 && folded_set_size(ref) == folded_set_size(back) &&
	     folded_set_total(ref) == folded_set_total(back);
	for (i = 0; ok && i < folded_set_size(ref); i++) {
		const struct folded_stack *a = folded_set_get(ref, i), *b = folded_set_get(back, i);
		ok = a->len == b->len && !memcmp(a->stack, b->stack, a->len) &&
		     a->count == b->count && a->hash == b->hash;
	}
	CHECK("random round trip", ok);
	free(out);
	folded_set_free(ref);
	folded_set_free(back);
}

int main(int argc, char **argv)
{
	unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) :
		getenv("SEED") ? (unsigned)strtoul(getenv("SEED"), NULL, 0) :
		(unsigned)time(NULL);

	printf("seed: %u\n", seed);
	setvbuf(stdout, NULL, _IOLBF, 0);
	api();
	hash();
	writer();
	roundtrip(seed);
	golden();
	corpus();
	return fails ? 1 : 0;
}
