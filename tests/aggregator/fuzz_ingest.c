/*
 * fuzz_ingest.c — libFuzzer target for glass-aggd's ingest validation:
 * the agent JSON format, the Pyroscope path (name selector + folded body),
 * multipart/form-data pprof uploads, pprof and gunzip, with tight limits so deep paths are reached quickly.
 *
 *   make fuzz-aggregator   clang -DFUZZING: libFuzzer drives it for
 *                          FUZZ_TIME seconds from tests/aggregator/corpus/
 *                          (seeds: one input of each kind); crashers land
 *                          there too — commit them;
 *   make test              gcc ASan/UBSan with a main() that replays every
 *                          file of tests/aggregator/corpus/, so a crasher
 *                          once found stays fixed.
 * The first byte picks the path: 'G' gzip + agent JSON, 'B' pprof, 'M'
 * multipart (boundary, newline, body), 'P' Pyroscope (name, newline,
 * folded body), 'S' a query's selector and time arguments (selector,
 * newline, from, newline, until: sel_parse with RE2 under tight bounds,
 * sel_match against a label set, sel_time); anything else is agent JSON.
 */
#include "aggregator/agg.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct agg_limits lim = {
	.max_body = 1 << 16, .max_decoded = 1 << 16, .max_depth = 16, .max_frame_len = 64,
	.max_labels = 8, .max_stacks = 256, .max_profiles = 4,
	.max_regex_len = 256, .max_regex_mem = 256 << 10,
};

/* 'S': SELECTOR \n FROM \n UNTIL, as a query's parameters. */
static void fuzz_query_args(const unsigned char *data, size_t size)
{
	char *buf = malloc(size + 1), *args[3] = { 0 }, *p;
	struct selector sel;
	struct agg_labels l = { 0 };
	char msg[256];
	int64_t t;

	if (!buf)
		return;
	memcpy(buf, data, size);
	buf[size] = 0;
	p = buf;
	for (int i = 0; i < 3 && p; i++) {
		args[i] = p;
		if ((p = strchr(p, '\n')))
			*p++ = 0;
	}
	if (!sel_parse_lim(args[0], &lim, &sel, msg, sizeof(msg))) {
		agg_labels_set(&l, "host", "h1");
		agg_labels_set(&l, "kernel", "6.18.0-\xc3\xa9");
		sel_match(&sel, &l);
		agg_labels_free(&l);
		sel_free(&sel);
	}
	for (int i = 1; i < 3; i++)
		if (args[i])
			sel_time(args[i], 1764756000000000000LL, &t);
	free(buf);
}

static int fuzz_one(const unsigned char *data, size_t size)
{
	struct agg_window w;
	char msg[512], *out = NULL;
	size_t outlen;

	if (size && data[0] == 'G') {		/* gzip path */
		if (!ingest_gunzip(data + 1, size - 1, 1 << 16, &out, &outlen, msg, sizeof(msg))) {
			if (!ingest_agent_json(out, outlen, &lim, &w, msg, sizeof(msg)))
				agg_window_free(&w);
			free(out);
		}
		return 0;
	}
	if (size && data[0] == 'B') {		/* pprof protobuf */
		int units;

		if (!pprof_to_folded(data + 1, size - 1, NULL, &lim, &out, &outlen, &units, msg, sizeof(msg)))
			free(out);
		return 0;
	}
	if (size && data[0] == 'M') {		/* multipart/form-data: boundary \n body */
		const unsigned char *nl = memchr(data, '\n', size);
		char ct[160];
		size_t n = nl ? (size_t)(nl - data - 1) : size - 1;

		if (n > 100)
			n = 100;
		snprintf(ct, sizeof(ct), "multipart/form-data; boundary=%.*s", (int)n, (const char *)data + 1);
		struct pyro_params p = { .name = "app.offcpu{}", .from = "1700000000",
					 .until = "1700000010", .content_type = ct };
		const char *body = nl ? (const char *)nl + 1 : "";
		size_t blen = nl ? size - (nl + 1 - data) : 0;

		if (!ingest_pyroscope(&p, body, blen, &lim, &w, msg, sizeof(msg)))
			agg_window_free(&w);
		return 0;
	}
	if (size && data[0] == 'S') {		/* selector \n from \n until */
		fuzz_query_args(data + 1, size - 1);
		return 0;
	}
	if (size && data[0] == 'P') {		/* Pyroscope: name \n body */
		const unsigned char *nl = memchr(data, '\n', size);
		char name[256];
		size_t n = nl ? (size_t)(nl - data - 1) : size - 1;

		if (n >= sizeof(name))
			n = sizeof(name) - 1;
		memcpy(name, data + 1, n);
		name[n] = 0;
		struct pyro_params p = { .name = name, .from = "1700000000", .until = "1700000010" };
		const char *body = nl ? (const char *)nl + 1 : "";
		size_t blen = nl ? size - (nl + 1 - data) : 0;

		if (!ingest_pyroscope(&p, body, blen, &lim, &w, msg, sizeof(msg)))
			agg_window_free(&w);
		return 0;
	}
	if (!ingest_agent_json((const char *)data, size, &lim, &w, msg, sizeof(msg)))
		agg_window_free(&w);
	return 0;
}

#ifdef FUZZING
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	return fuzz_one(data, size);
}
#else
/* Replay: every corpus file through the same paths under ASan/UBSan; a
 * sanitizer report aborts the program, which the runner sees as a failure. */
int main(void)
{
	const char *root = getenv("GLASSFS_ROOT") ? getenv("GLASSFS_ROOT") : ".";
	char dir[4096];
	struct dirent **names;
	int n, i, done = 0, unread = 0;

	snprintf(dir, sizeof(dir), "%s/tests/aggregator/corpus", root);
	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0) {
		printf("FAIL: replay ingest fuzz corpus: %s: cannot list\n", dir);
		return 1;
	}
	for (i = 0; i < n; i++) {
		char path[4352];
		unsigned char *buf;
		size_t len;
		FILE *f;

		if (names[i]->d_name[0] == '.') {
			free(names[i]);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		free(names[i]);
		buf = malloc(1 << 20);
		f = buf ? fopen(path, "rb") : NULL;
		if (!f) {
			printf("FAIL: replay %s: cannot read\n", path);
			unread++;
			free(buf);
			continue;
		}
		len = fread(buf, 1, 1 << 20, f);
		fclose(f);
		fuzz_one(buf, len);
		free(buf);
		done++;
	}
	free(names);
	/* The seeds alone are six inputs: fewer means the corpus is gone. */
	printf("%s: replay ingest fuzz corpus (%d inputs)\n",
	       unread || done < 6 ? "FAIL" : "PASS", done);
	return unread || done < 6 ? 1 : 0;
}
#endif
