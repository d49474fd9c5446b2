/* SPDX-License-Identifier: MIT */
/*
 * extent.h — the extent tree: delayed reference changes queued by the
 * B-tree (through extent_meta_ops) and by data extents, run at commit.
 */
#ifndef GLASSFS_EXTENT_H
#define GLASSFS_EXTENT_H

#include <stdbool.h>
#include <stdint.h>
#include "fs/format/format.h"
#include "fs/trees/trees_types.h"

struct core;
struct txn;
struct meta_ops;

/* extent.c: the B-tree's block ops of a volume (meta.h). */
extern const struct meta_ops extent_meta_ops;
/* extent.c: delayed references, run at commit. */
int extent_ref_add(struct core *c, const struct dref *d);
/*
 * Make the data extents [a, a + alen) and [b, b + blen), b = a + alen,
 * one extent [a, a + alen + blen): both allocated in the running
 * transaction, each with its one reference (delta +1) still queued.
 * 1 merged, 0 not (left as they were).
 */
int extent_ref_merge(struct core *c, uint64_t a, uint64_t alen, uint64_t b, uint64_t blen);
/*
 * Was the data extent [bytenr, +len) allocated in the running transaction,
 * with one reference queued, and never two (one file-extent item maps it
 * and only ever one did: no split of it, no other file's item)?
 */
bool extent_ref_sole_new(struct core *c, uint64_t bytenr, uint64_t len);
/* Run every queued ref (one round).  Returns how many ran, or -errno. */
int extent_run_refs(struct txn *t);
bool extent_refs_pending(struct core *c);
void extent_refs_free(struct core *c);
/* The extent item of a node or data extent. 0, -ENOENT. */
int extent_lookup(struct core *c, uint64_t bytenr, bool is_data, struct extent_item *ei,
		  uint64_t *len_or_level);

#endif
