// SPDX-License-Identifier: MIT
/*
 * pprof.c — the pprof writer (see pprof.h).  Strings, functions and
 * samples are de-duplicated in open-addressing hash tables; the profile is
 * assembled with protoc-c's generated structs at write time.
 */
#include "tools/lib/pprof.h"
#include "aggregator/profile.pb-c.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* string -> index in strs (string_table; 0 is "") */
struct pprof {
	size_t ntypes;
	char **strs;
	size_t nstrs, capstrs;
	uint32_t *shash;		/* index + 1, 0 empty */
	size_t shcap;
	/* samples: location ids (= string index of the function name) */
	struct psample {
		uint64_t *locs;
		size_t n;
		int64_t *vals;
		uint64_t h;
	} *samples;
	size_t nsamples, capsamples;
	uint32_t *sahash;		/* index + 1 */
	size_t sacap;
	int64_t *types;		/* string indexes: type, unit, type, unit... */
	int64_t default_type;
	int64_t time_nanos, duration_nanos;
};

static uint64_t hash_bytes(const void *d, size_t n, uint64_t h)
{
	const unsigned char *p = d;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
	void *nv;
	size_t nc;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap * 2 : 64;
	while (nc < need)
		nc *= 2;
	nv = realloc(*v, nc * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = nc;
	return 0;
}

/* Rebuild an index table of `n` entries into a table of cap slots. */
static int rehash(uint32_t **tab, size_t *cap, size_t n,
		  uint64_t (*h)(struct pprof *, size_t), struct pprof *p)
{
	size_t nc = *cap ? *cap * 2 : 256;
	uint32_t *t = calloc(nc, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t j = h(p, i) & (nc - 1);

		while (t[j])
			j = (j + 1) & (nc - 1);
		t[j] = i + 1;
	}
	free(*tab);
	*tab = t;
	*cap = nc;
	return 0;
}

static uint64_t str_hash(struct pprof *p, size_t i)
{
	return hash_bytes(p->strs[i], strlen(p->strs[i]), 0xcbf29ce484222325ULL);
}

/* The string table index of s, added if new; -1 on ENOMEM. */
static int64_t intern(struct pprof *p, const char *s)
{
	uint64_t h = hash_bytes(s, strlen(s), 0xcbf29ce484222325ULL);
	size_t j;

	if ((p->nstrs + 1) * 2 > p->shcap &&
	    rehash(&p->shash, &p->shcap, p->nstrs, str_hash, p))
		return -1;
	for (j = h & (p->shcap - 1); p->shash[j]; j = (j + 1) & (p->shcap - 1))
		if (!strcmp(p->strs[p->shash[j] - 1], s))
			return p->shash[j] - 1;
	if (grow((void **)&p->strs, &p->capstrs, p->nstrs + 1, sizeof(*p->strs)))
		return -1;
	if (!(p->strs[p->nstrs] = strdup(s)))
		return -1;
	p->shash[j] = ++p->nstrs;
	return p->nstrs - 1;
}

struct pprof *pprof__new(size_t ntypes, const char *const *types,
			 const char *const *units, const char *default_type)
{
	struct pprof *p = calloc(1, sizeof(*p));

	if (!p || !(p->types = calloc(2 * ntypes, sizeof(*p->types))))
		goto nomem;
	p->ntypes = ntypes;
	if (intern(p, "") != 0)
		goto nomem;
	for (size_t i = 0; i < ntypes; i++) {
		if ((p->types[2 * i] = intern(p, types[i])) < 0 ||
		    (p->types[2 * i + 1] = intern(p, units[i])) < 0)
			goto nomem;
	}
	if (default_type && (p->default_type = intern(p, default_type)) < 0)
		goto nomem;
	return p;
nomem:
	pprof__free(p);
	errno = ENOMEM;
	return NULL;
}

void pprof__free(struct pprof *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nstrs; i++)
		free(p->strs[i]);
	for (size_t i = 0; i < p->nsamples; i++) {
		free(p->samples[i].locs);
		free(p->samples[i].vals);
	}
	free(p->strs);
	free(p->shash);
	free(p->samples);
	free(p->sahash);
	free(p->types);
	free(p);
}

void pprof__set_time(struct pprof *p, int64_t time_nanos, int64_t duration_nanos)
{
	p->time_nanos = time_nanos;
	p->duration_nanos = duration_nanos;
}

static uint64_t sample_hash(struct pprof *p, size_t i)
{
	return p->samples[i].h;
}

int pprof__add(struct pprof *p, const char *const *frames, size_t n,
	       const int64_t *values)
{
	uint64_t *locs = malloc((n ? n : 1) * sizeof(*locs)), h;
	struct psample *s;
	size_t j;

	if (!locs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int64_t id = intern(p, frames[i]);

		if (id < 0) {
			free(locs);
			return -ENOMEM;
		}
		locs[i] = id;	/* function id = location id = name index */
	}
	h = hash_bytes(locs, n * sizeof(*locs), 0xcbf29ce484222325ULL);
	if ((p->nsamples + 1) * 2 > p->sacap &&
	    rehash(&p->sahash, &p->sacap, p->nsamples, sample_hash, p)) {
		free(locs);
		return -ENOMEM;
	}
	for (j = h & (p->sacap - 1); p->sahash[j]; j = (j + 1) & (p->sacap - 1)) {
		s = &p->samples[p->sahash[j] - 1];
		if (s->h == h && s->n == n && !memcmp(s->locs, locs, n * sizeof(*locs))) {
			for (size_t k = 0; k < p->ntypes; k++)
				s->vals[k] += values[k];
			free(locs);
			return 0;
		}
	}
	if (grow((void **)&p->samples, &p->capsamples, p->nsamples + 1, sizeof(*p->samples))) {
		free(locs);
		return -ENOMEM;
	}
	s = &p->samples[p->nsamples];
	s->vals = malloc(p->ntypes * sizeof(*s->vals));
	if (!s->vals) {
		free(locs);
		return -ENOMEM;
	}
	memcpy(s->vals, values, p->ntypes * sizeof(*s->vals));
	s->locs = locs;
	s->n = n;
	s->h = h;
	p->sahash[j] = ++p->nsamples;
	return 0;
}

int pprof__write(struct pprof *p, const char *path, const char *who)
{
	Perftools__Profiles__Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType *vt = calloc(p->ntypes, sizeof(*vt));
	Perftools__Profiles__ValueType **vtp = calloc(p->ntypes, sizeof(*vtp));
	Perftools__Profiles__Sample *sa = calloc(p->nsamples + 1, sizeof(*sa));
	Perftools__Profiles__Sample **sap = calloc(p->nsamples + 1, sizeof(*sap));
	/* functions and locations: one per string that some sample uses */
	bool *used = calloc(p->nstrs, sizeof(*used));
	Perftools__Profiles__Function *fn = calloc(p->nstrs, sizeof(*fn));
	Perftools__Profiles__Function **fnp = calloc(p->nstrs, sizeof(*fnp));
	Perftools__Profiles__Location *lo = calloc(p->nstrs, sizeof(*lo));
	Perftools__Profiles__Location **lop = calloc(p->nstrs, sizeof(*lop));
	Perftools__Profiles__Line *li = calloc(p->nstrs, sizeof(*li));
	Perftools__Profiles__Line **lip = calloc(p->nstrs, sizeof(*lip));
	uint8_t *buf = NULL;
	size_t len, nf = 0;
	gzFile gz = NULL;
	int err = -ENOMEM;

	if (!vt || !vtp || !sa || !sap || !used || !fn || !fnp || !lo || !lop || !li || !lip)
		goto out;
	for (size_t i = 0; i < p->ntypes; i++) {
		perftools__profiles__value_type__init(&vt[i]);
		vt[i].type = p->types[2 * i];
		vt[i].unit = p->types[2 * i + 1];
		vtp[i] = &vt[i];
	}
	for (size_t i = 0; i < p->nsamples; i++) {
		perftools__profiles__sample__init(&sa[i]);
		sa[i].n_location_id = p->samples[i].n;
		sa[i].location_id = p->samples[i].locs;
		sa[i].n_value = p->ntypes;
		sa[i].value = p->samples[i].vals;
		sap[i] = &sa[i];
		for (size_t k = 0; k < p->samples[i].n; k++)
			used[p->samples[i].locs[k]] = true;
	}
	for (size_t i = 1; i < p->nstrs; i++) {
		if (!used[i])
			continue;
		perftools__profiles__function__init(&fn[nf]);
		fn[nf].id = i;
		fn[nf].name = i;
		fn[nf].system_name = i;
		fnp[nf] = &fn[nf];
		perftools__profiles__line__init(&li[nf]);
		li[nf].function_id = i;
		lip[nf] = &li[nf];
		perftools__profiles__location__init(&lo[nf]);
		lo[nf].id = i;
		lo[nf].n_line = 1;
		lo[nf].line = &lip[nf];
		lop[nf] = &lo[nf];
		nf++;
	}
	prof.n_sample_type = p->ntypes;
	prof.sample_type = vtp;
	prof.n_sample = p->nsamples;
	prof.sample = sap;
	prof.n_function = nf;
	prof.function = fnp;
	prof.n_location = nf;
	prof.location = lop;
	prof.n_string_table = p->nstrs;
	prof.string_table = p->strs;
	prof.default_sample_type = p->default_type;
	prof.time_nanos = p->time_nanos;
	prof.duration_nanos = p->duration_nanos;
	if (p->ntypes) {
		prof.period_type = &vt[p->ntypes - 1];
		prof.period = 1;
	}
	len = perftools__profiles__profile__get_packed_size(&prof);
	if (!(buf = malloc(len ? len : 1)))
		goto out;
	perftools__profiles__profile__pack(&prof, buf);
	gz = gzopen(path, "wb");
	if (!gz) {
		err = errno ? -errno : -EIO;
		fprintf(stderr, "%s: cannot write %s: %s\n", who, path, strerror(-err));
		goto out;
	}
	if (len && gzwrite(gz, buf, len) != (int)len) {
		err = -EIO;
		fprintf(stderr, "%s: cannot write %s\n", who, path);
		gzclose(gz);
		goto out;
	}
	if (gzclose(gz) != Z_OK) {
		err = -EIO;
		fprintf(stderr, "%s: cannot write %s\n", who, path);
		goto out;
	}
	err = 0;
out:
	if (err == -ENOMEM)
		fprintf(stderr, "%s: out of memory writing %s\n", who, path);
	free(buf);
	free(vt);
	free(vtp);
	free(sa);
	free(sap);
	free(used);
	free(fn);
	free(fnp);
	free(lo);
	free(lop);
	free(li);
	free(lip);
	return err;
}
