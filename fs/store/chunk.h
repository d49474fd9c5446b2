/* SPDX-License-Identifier: MIT */
/*
 * chunk.h — the chunk map: logical ranges -> stripes on devices.
 *
 * Loaded at open from the superblock's sys_chunk_array (SYSTEM chunks,
 * enough to read the chunk tree) and then the chunk tree.  A chunk has a
 * profile (format.h BG_*): single is one stripe; dup, raid1, raid1c3 and
 * raid1c4 keep one full copy per stripe (the last three each on a device
 * of its own) (reads try each copy, writes go to all); raid10
 * lays 64 KiB elements round-robin over pairs of stripes, each element
 * mirrored on its pair, so a lookup maps one element at a time
 * (chunk_map_piece); raid5/6 rows are read and written by parity.c
 * (chunk_map_lookup answers -EIO for them).  raid0 is refused at open.
 *
 * New chunks are created lazily (chunk_alloc) when a block group type runs
 * out of space: data chunks of up to 1 GiB, metadata up to 256 MiB, both
 * smaller on small filesystems.  A new chunk gets its type's profile
 * (core->profile[]; at open, the profile of the newest chunk of the type):
 * single takes the device with the most unallocated space, dup two
 * stripes on that device, raid1 (raid1c3, raid1c4) one stripe on each of
 * the two (three, four) devices with the most unallocated space, raid10 one on each of the four (the
 * first two a pair, the last two the other).  Metadata and system chunks prefer
 * non-rotational devices, data chunks rotational ones; when that class
 * has no room (or too few devices for raid1) any device is used.
 */
#ifndef GLASSFS_CHUNK_H
#define GLASSFS_CHUNK_H

#include <stdint.h>
#include <stdbool.h>
#include "fs/base/lock.h"
#include "fs/format/format.h"
#include "fs/store/chunk_types.h"

struct core;
struct txn;
struct dev;


void chunk_map_init(struct chunk_map *m);
void chunk_map_free(struct chunk_map *m);

/* Add a chunk from its item (validated: -EUCLEAN when malformed). */
int chunk_map_insert(struct core *c, uint64_t logical, const struct chunk_item *ci,
		     uint32_t size);
/*
 * Map [logical, logical + len), which must lie inside one chunk (and one
 * raid10 element: chunk_map_piece), to its copies (1 for single) on
 * devices that are present (a degraded open leaves some out).  Returns
 * the number of copies, or -EIO when no chunk (or no present copy) maps
 * it.  *type gets the chunk's BG_* flags when type != NULL.
 */
int chunk_map_lookup(struct core *c, uint64_t logical, uint64_t len,
		     struct chunk_copy *copies, uint64_t *type);

/*
 * Like chunk_map_lookup, for writes: also the stripes a relocation is
 * filling.  Callers hold c->reloc_lock shared across lookup and writes.
 */
int chunk_map_lookup_write(struct core *c, uint64_t logical, uint64_t len,
			   struct chunk_copy *copies);

/*
 * Relocation (fs/services/volume_reloc.c drives it, one at a time).  begin
 * picks new stripes of profile prof for the whole chunk at logical, on
 * devices other than `exclude` (NULL: any) and not marked removing:
 * -ENOSPC when they do not fit (*fit: the longest MiB multiple that
 * would), -EINVAL when the profile lacks devices.  A raid5/6 target takes
 * as many stripes (up to 4) as leave the chunk whole rows (fewer when its
 * length is not).  A conversion to single or raid1 from a mirrored
 * profile keeps one old stripe where it can (out[0..*nkeep), already
 * holding the bytes): single then copies nothing, raid1 one new stripe
 * (raid1c3 two, raid1c4 three).
 * switch (inside a transaction handle) makes them the chunk's stripes and
 * rewrites its chunk item and device extents; done (after the commit)
 * frees the retired stripes; abort forgets the new stripes.
 */
int chunk_reloc_begin(struct core *c, uint64_t logical, uint64_t prof, const struct dev *exclude,
		      struct chunk_stripe *out, int *nout, int *nkeep, uint64_t *length,
		      uint64_t *fit);
/*
 * Split the chunk at logical in two at offset at (a multiple of
 * chunk_cut_unit): what a relocation does when the new stripes do not
 * fit whole (-ENOSPC from begin, *fit = the longest length they would
 * take).  The halves keep the chunk's stripes (the second at physical +
 * at / row width), profile and contents; its chunk item, device extents,
 * block group item and free-space items are replaced by both halves'
 * (inside a transaction handle t).  The cut must be one no extent
 * crosses: stop the group's allocations (alloc_set_readonly, or
 * alloc_fence for MiB cuts), commit, then chunk_split_point() finds the
 * largest multiple of a unit at most upto and below `below` that no
 * extent item holds inside (0: none).  -EBUSY when a discard holds a run
 * across the cut or the chunk is being relocated, -EINVAL for a system
 * chunk (the superblock's list of them stays short) or a cut outside it
 * or off the unit.
 */
/* Where a chunk can be cut: a raid5/6 chunk between rows, a raid10 chunk
 * between rows of 64 KiB elements, any other at any sector.  0: no chunk
 * there. */
uint64_t chunk_cut_unit(struct core *c, uint64_t logical);
/* The in-memory halves of chunk_reloc_switch and chunk_split
 * (fs/trees/chunk_tree.h), which then rewrite the items. */
int chunk_reloc_switch_map(struct core *c, uint64_t logical, struct chunk **out);
int chunk_split_map(struct txn *t, uint64_t logical, uint64_t at, struct chunk **first,
		    struct chunk **rest);
void chunk_reloc_done(struct core *c, uint64_t logical);
void chunk_reloc_abort(struct core *c, uint64_t logical);

int chunk_load_sys_array(struct core *c, const struct super_block *sb);
int chunk_build_sys_array(struct core *c, struct super_block *sb);


/* The in-memory half of chunk_create (fs/trees/chunk_tree.h): device
 * space, chunk map entry and block group in memory.  -ENOSPC when no
 * device has room. */
int chunk_map_create(struct core *c, uint64_t type, const struct chunk **out);
/* A chunk's chunk item (the chunk tree and the superblock's sys array). */
void chunk_fill_item(const struct chunk *ch, struct chunk_item *ci);

/* Set c->profile[] from the chunks loaded (open). */
void chunk_load_profiles(struct core *c);

uint64_t chunk_default_size(const struct core *c, uint64_t type);
/*
 * Ranges of d in no chunk and outside the superblock megabytes, as
 * (physical, length) pairs in out (at most max).  The caller holds
 * c->chunk_alloc_lock so no chunk appears in them meanwhile.  Returns
 * how many, or -ENOMEM.
 */
int chunk_unallocated_ranges(struct core *c, const struct dev *d, uint64_t (*out)[2], int max);
/* Device bytes not in any chunk (for statfs). */
uint64_t chunk_unallocated(struct core *c);
/*
 * Flush every device (a commit after writing its nodes, an fsync after
 * its log segment; what names it in messages), all at the same time
 * (dev_flush_all: the caller waits for the slowest).  A device whose flush
 * fails does not fail the caller while every chunk keeps a copy on a
 * device that flushed (raid1/dup on others: redundancy lost, not data):
 * it is marked stale (read last; its superblock misses the commit, so the
 * next full mount resyncs it), c->degraded counts it, and the first
 * failure per device is logged.  Otherwise the first error.
 */
int chunk_flush_devs(struct core *c, const char *what);
/*
 * The bytes of [logical, +len) from logical that chunk_map_lookup maps
 * in one go: up to the end of the raid10 element (a 64 KiB boundary) or,
 * for every other profile, of the chunk: callers that cross them loop
 * over pieces.  A range may span chunks (a read of extents back to back
 * on disk across two touching chunks); len when no chunk holds logical.
 */
uint64_t chunk_map_piece(struct core *c, uint64_t logical, uint64_t len);
/* The layout of the chunk holding logical: 0, or -EIO. */
int chunk_map_geometry(struct core *c, uint64_t logical, struct chunk_geom *g);
/* Is logical inside a raid5/6 chunk (read and written by fs/store/parity.c)? */
bool chunk_map_is_parity(struct core *c, uint64_t logical);
/* Bytes of a full stripe (row) of the chunk at logical: raid5/6 k
 * sectors, every other profile one sector (the allocator's unit). */
uint64_t chunk_row_bytes(struct core *c, uint64_t logical);
/*
 * Device bytes a new chunk of profile prof spends per logical byte, as
 * *num / *den: raid5/6 n / (n - p), n the stripes a new chunk gets on the
 * devices there are (at most 4; too few: the mirrors a degraded mount
 * makes instead), raid1/raid10/dup 2 / 1, single 1 / 1.  Free space and
 * a conversion's room are counted with it.
 */
void chunk_profile_ratio(struct core *c, uint64_t prof, uint64_t *num, uint64_t *den);
/* Parity columns a profile keeps: raid5 1, raid6 2, else 0. */
int chunk_parity_count(uint64_t type);
/* Every stripe of the chunk at logical, where it starts (dev NULL: a
 * missing device); returns how many, or -ENOENT. */
int chunk_map_stripes(struct core *c, uint64_t logical, struct chunk_copy *out);
/*
 * Where [off, off + len) of a chunk of this type and stripe count lives:
 * the stripe indexes (idx, returned count) and the offset inside each
 * (*devoff); -1 when it crosses a raid10 element (or is raid5/6, which
 * parity.c maps).  Relocation maps onto the new stripes with it.
 */
int chunk_stripe_map(uint64_t type, int num_stripes, uint64_t off, uint64_t len, int *idx,
		     uint64_t *devoff);
/* Device bytes each stripe of a chunk spans (format.h's profile table). */
uint64_t chunk_stripe_span(uint64_t type, int num_stripes, uint64_t length);
/* Visit every chunk (under the map's read lock; fn must not take it). */
int chunk_for_each(struct core *c, int (*fn)(const struct chunk *ch, void *arg), void *arg);

#endif
