/* SPDX-License-Identifier: MIT */
/*
 * dir.h — directory entries: DIR_ITEM (lookup by name hash), DIR_INDEX
 * (readdir order) and the back references of the inodes they name
 * (INODE_REF, INODE_EXTREF: iref.h; items_format.h).
 *
 * Callers hold the directory's inode lock (write for changes, read for
 * lookups that must not race a change; lookups are also safe unlocked
 * since each B-tree item is read atomically).
 */
#ifndef GLASSFS_DIR_H
#define GLASSFS_DIR_H

#include <stdbool.h>
#include <stdint.h>
#include "fs/items/inode.h"

#define DIR_NAME_MAX 255

struct dir_hit {
	uint64_t ino;
	uint64_t index;		/* DIR_INDEX seq */
	uint8_t type;		/* DT_* */
};

/*
 * The DIR_ITEM key offset of a name: name_hash() (items_format.h), or the
 * function a unit test passed to dir_set_name_hash() to force collisions
 * (NULL: back to name_hash).  Set it before any volume is mounted; nothing
 * but tests calls it.
 */
uint64_t dir_name_hash(const char *name, size_t len);
void dir_set_name_hash(uint64_t (*fn)(const char *name, size_t len));

/* Can name be added to dir?  0, or -EOVERFLOW when the names that share
 * its hash already fill their item (checked before any change). */
int dir_room(struct fsctx *fs, uint64_t dir, const char *name, size_t len);

/*
 * Can ino take one more name of len bytes in parent?  Names go to the
 * INODE_REF item of (ino, parent) and, once it is full, to INODE_EXTREF
 * items (iref.h), so this says no only when the extended ref of the
 * name's (parent, name) hash is full too: -EMLINK (what link(2) says of
 * "too many links"), checked before any change.  The link count's limit
 * (LINK_MAX_COUNT) is the caller's.  gone: a name of ino in parent that
 * the same operation removes (a rename within one directory), or NULL.
 */
int dir_ref_room(struct fsctx *fs, uint64_t ino, uint64_t parent, const char *name,
		 size_t len, const char *gone, size_t gone_len);

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

/*
 * Creating a name in one B-tree read instead of three (lookup, room
 * check, add): dir_prepare reads the DIR_ITEM run of the name's hash into
 * s, dir_add_prepared appends to it.  The caller holds dir's lock from
 * dir_prepare to dir_add_prepared, so the run cannot change in between.
 *   dir_prepare: 0 (name absent), -EEXIST (*hit filled), -ENAMETOOLONG,
 *     -errno; s is filled only on 0 and then owned by the caller until
 *     dir_add_prepared or dir_slot_free.
 *   dir_slot_room: 0, or -EOVERFLOW as dir_room.
 *   dir_add_prepared: dir_add with s (consumed, also on error).
 *     linked: NULL, or the index a new inode's INODE_REF already holds
 *     (inode_new wrote it with the INODE_ITEM, in one descent: see
 *     dir_new_ref), so no INODE_REF is written here.
 *   dir_new_ref: take dir's next index for name and build the INODE_REF
 *     entry a new inode's link carries (buf: DIR_REF_MAX bytes); returns
 *     its size.  The caller holds dir's lock.
 */
struct dir_slot {
	void *buf;		/* the run, or NULL when no item has this hash */
	size_t size;
};
int dir_prepare(struct fsctx *fs, uint64_t dir, const char *name, size_t len,
		struct dir_hit *hit, struct dir_slot *s);
int dir_slot_room(struct fsctx *fs, const struct dir_slot *s, size_t len);
void dir_slot_free(struct dir_slot *s);
int dir_add_prepared(struct txn *t, struct fsctx *fs, struct inode *dir, const char *name,
		     size_t len, uint64_t ino, uint8_t type, struct dir_slot *s,
		     const uint64_t *linked);
#define DIR_REF_MAX (sizeof(struct inode_ref) + DIR_NAME_MAX)
uint32_t dir_new_ref(struct inode *dir, const char *name, size_t len, void *buf,
		     uint64_t *index);
/* Remove name (which must map to hit) from dir; updates dir as dir_add. */
int dir_remove(struct txn *t, struct fsctx *fs, struct inode *dir, const char *name,
	       size_t len, const struct dir_hit *hit);

/* Lookups the fs tree's name cache (dcache.h) answered, and those it sent
 * to the tree (both 0 before its first lookup). */
void dir_cache_counts(struct fsctx *fs, uint64_t *hits, uint64_t *misses);

/* 1 if dir has no entries, 0 if it has, -errno. */
int dir_is_empty(struct fsctx *fs, uint64_t dir);
/* The parent of directory ino (from its INODE_REF: a directory has one
 * name, always a plain ref); the root is its own. */
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
