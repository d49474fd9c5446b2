/* SPDX-License-Identifier: MIT */
/*
 * copy_fence.h — the logical range a resync or a relocation is copying.
 *
 * A device copy (fs/services/volume_resync.c, volume_reloc.c) reads a
 * segment from one place and writes it to another; a write of the same
 * logical bytes between the two would be lost from the new copy.  The
 * copier used to hold c->reloc_lock exclusively across each segment's
 * device I/O, so every write of the volume — and the fsync or commit
 * behind it — waited for the segment however far from it the write went,
 * and, the lock preferring its writer, so did every write arriving while
 * the copier waited for the writes in flight.
 *
 * Now a writer (meta_io.c: every block written to a chunk) enters the
 * fence with its logical range before its device writes and leaves after
 * them; it sleeps only when its range overlaps the segment being copied.
 * The copier publishes the segment and then waits for the writes that
 * may not have seen it — the ones in flight, counted — to finish; writes
 * that enter later see it.  Both sides store then load with sequential
 * consistency (the writer: its count, then the range; the copier: the
 * range, then the count), so at least one sees the other.
 *
 * Two counts so that the copier's wait ends under a steady stream of
 * writes: a writer joins the count `epoch` names; the copier waits for
 * the count nobody joins now to empty (stragglers that read the epoch
 * before the last flip), flips, and waits for the other.  A writer that
 * finds a segment published takes the fence lock to compare ranges (the
 * range's two words change together only under it).  Nothing copied, a
 * write costs two atomic additions and two loads.
 *
 * One segment at a time: a second copier's begin waits for the first's
 * end.  A copier must not write through meta_write_copies inside its own
 * segment (it would wait for itself); the copiers write devices directly.
 * c->reloc_lock remains for the rare moments that change where writes go
 * (a relocation's start and switch) and for the spliced reads' barrier.
 */
#ifndef GLASSFS_COPY_FENCE_H
#define GLASSFS_COPY_FENCE_H

#include <stdint.h>
#include "fs/store/copy_fence_types.h"

struct core;

void copy_fence_init(struct copy_fence *f);
/* Publish [logical, +len) as being copied and wait for the writes that
 * may not have seen it.  The caller holds no lock a writer may hold. */
void copy_fence_begin(struct core *c, uint64_t logical, uint64_t len);
/* The segment's copy is done: its writers go on. */
void copy_fence_end(struct core *c);
/* A write of [logical, +len) starts: waits while a segment being copied
 * overlaps it.  Returns the ticket copy_fence_exit takes. */
int copy_fence_enter(struct core *c, uint64_t logical, uint64_t len);
void copy_fence_exit(struct core *c, int ticket);
/* Writes that waited for a segment, and writes that went on while a
 * segment elsewhere was copied, since the mount (glassctl stats). */
void copy_fence_counts(struct core *c, uint64_t *waits, uint64_t *passed);

#endif
