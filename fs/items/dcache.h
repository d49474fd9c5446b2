/* SPDX-License-Identifier: MIT */
/*
 * dcache.h — a small cache of positive name lookups, in front of the
 * DIR_ITEM runs (dir.c).
 *
 * The kernel keeps its own dentry cache, but FUSE still asks the daemon
 * again for names it already knows: a mkdir or an exclusive create
 * revalidates the parent's dentry (LOOKUP_EXCL), an expired entry timeout
 * revalidates any.  fs_mark asks for its "0/" directory once per created
 * file.  A hit answers such a lookup without a B-tree descent.
 *
 * Only positive answers are cached, and only names of up to
 * DCACHE_NAME_MAX bytes.  An entry is dropped after its name leaves the
 * tree (dir_remove, which every unlink, rmdir, rename and subvolume
 * removal goes through); adding a name needs nothing, since a cached name
 * cannot be added again without being removed first.
 *
 * The race to close: a lookup reads the tree, a removal deletes the name
 * and drops the (still empty) slot, then the lookup fills the slot with
 * the name just removed.  So a removal bumps a sequence number before it
 * drops, and a fill is ignored unless the sequence is the one the lookup
 * read before its search (dcache_seq).  A fill that loses is only a miss.
 */
#ifndef GLASSFS_DCACHE_H
#define GLASSFS_DCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DCACHE_NAME_MAX 39

struct dir_hit;
struct dcache;

struct dcache *dcache_new(uint64_t tree);
void dcache_free(struct dcache *dc);
/* Read before the tree search whose answer dcache_put may store. */
uint64_t dcache_seq(struct dcache *dc);
/* true and *hit when (dir, name) is cached. */
bool dcache_get(struct dcache *dc, uint64_t dir, const char *name, size_t len,
		struct dir_hit *hit);
/* Cache a positive answer read from the tree after dcache_seq() gave seq. */
void dcache_put(struct dcache *dc, uint64_t seq, uint64_t dir, const char *name,
		size_t len, const struct dir_hit *hit);
/* The name has just left the tree: forget it. */
void dcache_drop(struct dcache *dc, uint64_t dir, const char *name, size_t len);
/* Hits and misses so far (tests, stats). */
void dcache_counts(struct dcache *dc, uint64_t *hits, uint64_t *misses);

#endif
