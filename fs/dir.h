/* SPDX-License-Identifier: MIT */
/*
 * dir.h — directory entries: DIR_ITEM (lookup by name hash), DIR_INDEX
 * (readdir order) and the INODE_REF back references (items_format.h).
 *
 * Callers hold the directory's inode lock (write for changes, read for
 * lookups that must not race a change; lookups are also safe unlocked
 * since each B-tree item is read atomically).
 */
#ifndef GLASSFS_DIR_H
#define GLASSFS_DIR_H

#include <stdint.h>
#include "fs/inode.h"

#define DIR_NAME_MAX 255

struct dir_hit {
	uint64_t ino;
	uint64_t index;		/* DIR_INDEX seq */
	uint8_t type;		/* DT_* */
};

/*
 * The DIR_ITEM key offset of a name: name_hash() (items_format.h).  A
 * weak symbol, so a unit test can force collisions by defining its own;
 * nothing else overrides it.
 */
uint64_t dir_name_hash(const char *name, size_t len);

/* Can name be added to dir?  0, or -EOVERFLOW when the names that share
 * its hash already fill their item (checked before any change). */
int dir_room(struct fsctx *fs, uint64_t dir, const char *name, size_t len);

/* Find name in dir: 0 and *hit, -ENOENT, -errno. */
int dir_lookup(struct fsctx *fs, uint64_t dir, const char *name, size_t len,
	       struct dir_hit *hit);

/*
 * Add name -> ino (type DT_*) to dir: DIR_ITEM, DIR_INDEX and the target's
 * INODE_REF.  Updates dir's size, dir_seq, mtime and ctime in the cached
 * item and writes it.  -EEXIST if the name exists.  Caller holds dir's
 * lock (and the target's).
 */
int dir_add(struct txn *t, struct fsctx *fs, struct inode *dir, const char *name,
	    size_t len, uint64_t ino, uint8_t type);
/* Remove name (which must map to hit) from dir; updates dir as dir_add. */
int dir_remove(struct txn *t, struct fsctx *fs, struct inode *dir, const char *name,
	       size_t len, const struct dir_hit *hit);

/* 1 if dir has no entries, 0 if it has, -errno. */
int dir_is_empty(struct fsctx *fs, uint64_t dir);
/* The parent of directory ino (from its INODE_REF); the root is its own. */
int dir_parent(struct fsctx *fs, uint64_t ino, uint64_t *parent);

/*
 * readdir: call fn for each entry with seq >= from, in seq order, until it
 * returns nonzero.  fn gets the name (not NUL-terminated), the target and
 * the seq.  At most max entries are visited per call.  0 or -errno.
 */
typedef int (*dir_iter_fn)(void *arg, const char *name, size_t len,
			   uint64_t ino, uint8_t type, uint64_t seq);
int dir_iterate(struct fsctx *fs, uint64_t dir, uint64_t from, dir_iter_fn fn,
		void *arg);

/* DT_* type for a mode. */
uint8_t dir_type_of(uint32_t mode);

#endif
