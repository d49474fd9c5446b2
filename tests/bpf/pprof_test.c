// SPDX-License-Identifier: MIT
/*
 * pprof_test — tools/lib/pprof.c under ASan/UBSan: random stacks written,
 * the file gunzipped and unpacked with protoc-c's own decoder, and every
 * stack's values compared with what was added (equal stacks merged).
 * Prints its seed; SEED=n replays a run.
 */
#include "tools/lib/pprof.h"
#include "aggregator/profile.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static int failed;
#define CHECK(c, ...) do { if (!(c)) { failed = 1; printf("FAIL: %s:%d: ", __FILE__, __LINE__); \
	printf(__VA_ARGS__); printf("\n"); } } while (0)

#define NSTACKS 300
#define MAXD 12

struct want {
	int n;
	int f[MAXD];
	int64_t v[2];
};

static const char *fname(int i)
{
	static char names[64][32];

	snprintf(names[i], sizeof(names[i]), i % 7 ? "func_%d" : "func_%d_[k]", i);
	return names[i];
}

int main(void)
{
	const char *const types[] = { "blocks", "off_cpu" };
	const char *const units[] = { "count", "nanoseconds" };
	unsigned seed = getenv("SEED") ? (unsigned)atoi(getenv("SEED")) : (unsigned)time(NULL);
	static struct want w[NSTACKS];
	char path[] = "/tmp/pprof_test.XXXXXX";
	struct pprof *p;
	int fd, nw = 0;

	printf("seed %u\n", seed);
	srand(seed);
	p = pprof__new(2, types, units, "off_cpu");
	CHECK(p, "pprof__new");
	if (!p)
		return 1;
	for (int i = 0; i < NSTACKS; i++) {
		const char *fr[MAXD];
		struct want x = { .n = 1 + rand() % MAXD };

		for (int j = 0; j < x.n; j++)
			x.f[j] = rand() % 8 + (j ? 8 * (rand() % 4) : 0);	/* repeats */
		for (int j = 0; j < x.n; j++)
			fr[j] = fname(x.f[j]);
		x.v[0] = 1 + rand() % 5;
		x.v[1] = rand();
		CHECK(!pprof__add(p, fr, x.n, x.v), "add");
		int k;
		for (k = 0; k < nw; k++)
			if (w[k].n == x.n && !memcmp(w[k].f, x.f, x.n * sizeof(int)))
				break;
		if (k == nw)
			w[nw++] = x;
		else
			w[k].v[0] += x.v[0], w[k].v[1] += x.v[1];
	}
	pprof__set_time(p, 1000, 2000);
	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	close(fd);
	CHECK(!pprof__write(p, path, "pprof_test"), "write");
	CHECK(pprof__write(p, "/nonexistent/dir/x", "pprof_test (expected error)") < 0, "write to a bad path fails");
	pprof__free(p);

	/* read back: gunzip, unpack with protoc-c */
	gzFile gz = gzopen(path, "rb");
	static unsigned char buf[1 << 20];
	int len = gz ? gzread(gz, buf, sizeof(buf)) : -1;

	if (gz)
		gzclose(gz);
	unlink(path);
	CHECK(len > 0, "gzread %d", len);
	Perftools__Profiles__Profile *pr = perftools__profiles__profile__unpack(NULL, len > 0 ? len : 0, buf);
	CHECK(pr, "unpack");
	if (!pr)
		return 1;
	CHECK(pr->n_sample_type == 2 && !strcmp(pr->string_table[pr->sample_type[1]->type], "off_cpu") &&
	      !strcmp(pr->string_table[pr->sample_type[1]->unit], "nanoseconds"), "sample types");
	CHECK(!strcmp(pr->string_table[pr->default_sample_type], "off_cpu"), "default type");
	CHECK(pr->string_table[0][0] == 0, "string 0 is empty");
	CHECK(pr->time_nanos == 1000 && pr->duration_nanos == 2000, "times");
	CHECK((int)pr->n_sample == nw, "%zu samples, want %d (equal stacks merged)", pr->n_sample, nw);
	for (size_t i = 0; i < pr->n_sample; i++) {
		Perftools__Profiles__Sample *s = pr->sample[i];
		int k, found = 0;

		for (k = 0; k < nw && !found; k++) {
			if ((size_t)w[k].n != s->n_location_id)
				continue;
			found = 1;
			for (int j = 0; j < w[k].n && found; j++) {
				const char *nm = NULL;

				for (size_t l = 0; l < pr->n_location; l++)
					if (pr->location[l]->id == s->location_id[j] && pr->location[l]->n_line == 1)
						for (size_t f = 0; f < pr->n_function; f++)
							if (pr->function[f]->id == pr->location[l]->line[0]->function_id)
								nm = pr->string_table[pr->function[f]->name];
				found = nm && !strcmp(nm, fname(w[k].f[j]));
			}
			if (found)
				CHECK(s->n_value == 2 && s->value[0] == w[k].v[0] && s->value[1] == w[k].v[1],
				      "sample %zu values", i);
		}
		CHECK(found, "sample %zu matches no stack added", i);
	}
	perftools__profiles__profile__free_unpacked(pr, NULL);
	if (!failed)
		printf("PASS: pprof writer round trip (%d stacks, seed %u)\n", nw, seed);
	return failed;
}
