/* SPDX-License-Identifier: MIT */
/*
 * pprof.h — THE pprof writer of the tools: stacks of frame names with one
 * or more values each, written as a gzip'ed profile.proto (the format
 * `go tool pprof`, pprof.me, Pyroscope and glass-aggd's
 * POST /ingest?format=pprof read).  The message definitions are
 * aggregator/profile.proto, compiled by protoc-c; the reader of the same
 * format is aggregator/pprof.c.
 *
 * Frames are names only (what the folded format carries): one Function and
 * one Location per distinct name, no mappings or addresses.  Not
 * thread-safe.
 */
#ifndef GLASS_PPROF_H
#define GLASS_PPROF_H

#include <stddef.h>
#include <stdint.h>

struct pprof;

/* A profile with ntypes sample values per stack: types[i]/units[i], e.g.
 * {"blocks", "off_cpu"} / {"count", "nanoseconds"}.  default_type names
 * the one viewers show first (may be NULL).  NULL on ENOMEM. */
struct pprof *pprof__new(size_t ntypes, const char *const *types,
			 const char *const *units, const char *default_type);
void pprof__free(struct pprof *p);			/* NULL-safe */
/* Add a stack (frames[0] is the leaf) with ntypes values; stacks already
 * seen get their values added.  0 or -ENOMEM. */
int pprof__add(struct pprof *p, const char *const *frames, size_t n,
	       const int64_t *values);
/* Duration of the profile (shown by viewers); optional. */
void pprof__set_time(struct pprof *p, int64_t time_nanos, int64_t duration_nanos);
/* Write the gzip'ed profile to path.  0 or -errno (message printed with
 * the prefix `who`). */
int pprof__write(struct pprof *p, const char *path, const char *who);

#endif
