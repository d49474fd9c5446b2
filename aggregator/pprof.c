/*
 * pprof.c — pprof protobuf (gzip'ed or not) to folded text, so a pprof
 * upload goes through the same folded validation and storage as every
 * other input.  Uses the protoc-c code generated from profile.proto.
 *
 * The value column: the sample type named by sampleType= if given, else
 * the profile's default_sample_type, else the first one whose unit is
 * "nanoseconds", else column 0.  Locations are leaf first; a location's
 * lines are inlined callee first, caller last.
 *
 * The column's own type decides what the profile is: a time in
 * nanoseconds (cpu, wall, delay) is stored in ns, a count of samples in
 * samples; a memory type (bytes, or alloc_/inuse_ objects and space, as
 * heap profilers write them) is refused, never summed with time.  A stack
 * deeper than --max-depth and a function name that is not UTF-8 are 400s,
 * as in folded input.
 */
#include "aggregator/ingest.h"
#include "aggregator/hmap.h"
#include "aggregator/profile.pb-c.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *str(const Perftools__Profiles__Profile *p, int64_t i)
{
	return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : NULL;
}

/* A memory sample type: heap profilers' objects and bytes. */
static int memory_type(const char *t, const char *u)
{
	static const char *const names[] = { "alloc_objects", "alloc_space", "inuse_objects",
					     "inuse_space", "objects", "space", "alloc_in_new_tlab_objects",
					     "alloc_in_new_tlab_bytes", "alloc_outside_tlab_objects",
					     "alloc_outside_tlab_bytes" };

	if (u && (!strcasecmp(u, "bytes") || !strcasecmp(u, "kilobytes") || !strcasecmp(u, "megabytes")))
		return 1;
	for (size_t i = 0; t && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(t, names[i]))
			return 1;
	return 0;
}

int pprof_to_folded(const void *body, size_t len, const char *sample_type,
		    const struct agg_limits *lim, char **out, size_t *outlen,
		    int *units, char *msg, size_t msglen)
{
	const char **frames = NULL;
	Perftools__Profiles__Profile *p;
	char *plain = NULL, *buf = NULL;
	size_t blen = 0;
	struct hmap locs = { 0 }, funcs = { 0 };	/* id + 1 -> index + 1 */
	int rc = 0;
	int64_t col = -1;
	FILE *f;

	*out = NULL;
	if (len >= 2 && ((const unsigned char *)body)[0] == 0x1f && ((const unsigned char *)body)[1] == 0x8b) {
		if ((rc = ingest_gunzip(body, len, lim->max_decoded, &plain, &len, msg, msglen)))
			return rc;
		body = plain;
	}
	p = perftools__profiles__profile__unpack(NULL, len, body);
	free(plain);
	if (!p)
		return agg_einval(msg, msglen, "pprof: not a valid profile protobuf");
	if (!p->n_sample_type) {
		rc = agg_einval(msg, msglen, "pprof: profile has no sample_type");
		goto out;
	}
	for (size_t i = 0; i < p->n_sample_type && col < 0; i++) {
		const char *t = str(p, p->sample_type[i]->type);

		if (sample_type && t && !strcmp(t, sample_type))
			col = i;
	}
	if (sample_type && col < 0) {
		rc = agg_einval(msg, msglen, "pprof: no sample type \"%.64s\"", sample_type);
		goto out;
	}
	if (col < 0 && p->default_sample_type)
		for (size_t i = 0; i < p->n_sample_type && col < 0; i++)
			if (p->sample_type[i]->type == p->default_sample_type)
				col = i;
	for (size_t i = 0; i < p->n_sample_type && col < 0; i++) {
		const char *u = str(p, p->sample_type[i]->unit);

		if (u && !strcmp(u, "nanoseconds"))
			col = i;
	}
	if (col < 0)
		col = 0;
	{
		const char *t = str(p, p->sample_type[col]->type), *u = str(p, p->sample_type[col]->unit);

		if (memory_type(t, u)) {
			rc = agg_einval(msg, msglen, "pprof: sample type %.40s/%.40s is a memory profile: glass-aggd "
				  "stores time profiles only (offcpu, wakeup, lockwait, oncpu, wall), never summed "
				  "with memory; send it elsewhere or pick a time column with sampleType=",
				  t ? t : "?", u ? u : "?");
			goto out;
		}
		if (u && !strcmp(u, "nanoseconds"))
			*units = UNITS_NS;
		else if (u && (!strcmp(u, "count") || !strcmp(u, "samples")))
			*units = UNITS_SAMPLES;
		else {
			rc = agg_einval(msg, msglen, "pprof: sample type %.40s/%.40s: want a unit of nanoseconds "
				  "or count (samples)", t ? t : "?", u ? u : "?");
			goto out;
		}
	}
	/* Function names become frames: UTF-8, as every frame is. */
	for (size_t i = 0; i < p->n_function; i++) {
		const char *nm = str(p, p->function[i]->name);
		size_t bad;

		if (nm && !agg_utf8_valid(nm, strlen(nm), &bad)) {
			rc = agg_einval(msg, msglen, "pprof: function %llu: name (string_table[%lld]) is not valid "
				  "UTF-8 at byte %zu", (unsigned long long)p->function[i]->id,
				  (long long)p->function[i]->name, bad + 1);
			goto out;
		}
	}
	if (!(frames = malloc((lim->max_depth + 1) * sizeof(*frames)))) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < p->n_location; i++) {
		uint64_t *s = hmap_slot(&locs, p->location[i]->id + 1);

		if (!s) { rc = -ENOMEM; goto out; }
		*s = i + 1;
	}
	for (size_t i = 0; i < p->n_function; i++) {
		uint64_t *s = hmap_slot(&funcs, p->function[i]->id + 1);

		if (!s) { rc = -ENOMEM; goto out; }
		*s = i + 1;
	}
	if (!(f = open_memstream(&buf, &blen))) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t si = 0; si < p->n_sample && !rc; si++) {
		const Perftools__Profiles__Sample *s = p->sample[si];
		size_t nf = 0;
		int64_t v;

		if ((size_t)col >= s->n_value) {
			rc = agg_einval(msg, msglen, "pprof: sample %zu has %zu values, wanted column %lld",
				  si, s->n_value, (long long)col);
			break;
		}
		v = s->value[col];
		if (v < 0) {
			rc = agg_einval(msg, msglen, "pprof: sample %zu has a negative value", si);
			break;
		}
		if (!v)
			continue;
		for (size_t li = 0; li < s->n_location_id; li++) {
			uint64_t *x = hmap_get(&locs, s->location_id[li] + 1);

			if (!x) {
				rc = agg_einval(msg, msglen, "pprof: sample %zu names unknown location %llu", si,
					  (unsigned long long)s->location_id[li]);
				break;
			}
			const Perftools__Profiles__Location *l = p->location[*x - 1];

			/* Every frame counts, inlined ones too: past --max-depth
			 * the sample is refused, never cut. */
			for (size_t k = 0; k < (l->n_line ? l->n_line : 1); k++, nf++) {
				uint64_t *fx = l->n_line ? hmap_get(&funcs, l->line[k]->function_id + 1) : NULL;

				if (nf < lim->max_depth)
					frames[nf] = fx ? str(p, p->function[*fx - 1]->name) : NULL;
			}
		}
		if (rc)
			break;
		if (nf > lim->max_depth) {
			rc = agg_einval(msg, msglen, "pprof: sample %zu is %zu frames deep, at most %zu allowed "
				  "(--max-depth)", si, nf, lim->max_depth);
			break;
		}
		if (folded_write_stack(f, frames, nf, (uint64_t)v, FOLDED_LEAF_FIRST))
			rc = -EIO;
	}
	if (fclose(f) && !rc)
		rc = -ENOMEM;
	if (!rc && !blen)
		rc = agg_einval(msg, msglen, "pprof: no samples with a non-zero value");
	if (rc) {
		free(buf);
		goto out;
	}
	*out = buf;
	*outlen = blen;
out:
	free(frames);
	hmap_free(&locs);
	hmap_free(&funcs);
	perftools__profiles__profile__free_unpacked(p, NULL);
	return rc;
}
