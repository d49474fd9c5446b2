/* SPDX-License-Identifier: MIT */
/*
 * inode.h — the items layer's context and its in-memory inodes.
 *
 * struct fsctx is the state of one mounted fs tree: the core, the tree
 * root, the inode cache and the inode-number allocator.  Everything above
 * (dir.c, xattr.c, file.c, fsops.c, the FUSE glue) reaches state through
 * it; there are no globals.
 *
 * An in-memory inode caches its INODE_ITEM and is written through on every
 * change (inode_update) in the caller's transaction.
 *
 * Lock order (see lock.h): join the transaction first, then lock inodes
 * (ascending ino when several), then B-tree nodes (inside btree.c).  The
 * icache lock is a leaf lock: nothing else is taken while holding it.
 */
#ifndef GLASSFS_INODE_H
#define GLASSFS_INODE_H

#include <stdint.h>
#include <stdbool.h>
#include "fs/base/htable.h"
#include "fs/base/lock.h"
#include "fs/core/core.h"
#include "fs/txn/txn.h"
#include "fs/btree/btree.h"
#include "fs/format/items_format.h"

struct inode {
	uint64_t ino;			/* fixed */
	struct glock lock;		/* GLOCK_CLASS_INODE; guards item, orphan and this inode's items */
	struct inode_item item;		/* cached INODE_ITEM; guarded by lock */
	bool orphan;			/* has an ORPHAN_ITEM; guarded by lock */
	/* does the directory have a default ACL (xattr.c); guarded by lock */
	enum { DEF_ACL_UNKNOWN = 0, DEF_ACL_NONE, DEF_ACL_PRESENT } def_acl;
	/* where the data last written ends: file offset and disk address
	 * (0: none since the inode was loaded); the next write's extent is
	 * asked for there, so pieces that arrive out of order still land in
	 * file order (file.c, data_goal); guarded by lock */
	uint64_t data_end_off, data_end_disk;
	/* fsyncs of the file running (file_fsync_begin, _end), and the
	 * newest transaction begun when the last one ended (when loaded:
	 * log_record_transid, the log's records may hold it): an extent
	 * grows on (file.c, merge_last) or is written again in place
	 * (write_again) only in a newer transaction and with none running,
	 * so that no fsync log record can hold it; guarded by lock */
	uint32_t fsyncing;
	uint64_t fsync_transid;
	/* the file has no inline extent item: a lookup found none and
	 * put_inline, the only writer of one, has not run since (file.c,
	 * get_inline); guarded by lock */
	bool no_inline;
	/* a directory's block of inode numbers for its new children
	 * (inode_new): the next one and the end, [ino_next, ino_end) empty
	 * when none is held; guarded by lock */
	uint64_t ino_next, ino_end;
	/* handles open for writing (fsops_writers; atomic): with the
	 * kernel's writeback cache the files that may have dirty pages the
	 * engine has not seen yet.  The kernel holds a lookup while a file
	 * is open, so the inode stays cached meanwhile */
	uint32_t writers;
	/* guarded by the icache lock: */
	uint64_t nlookup;		/* kernel lookup count (FUSE forget) */
	uint32_t refs;			/* engine references (inode_get/inode_put) */
	struct hnode hnode;		/* key = ino; in the shard's table */
};

/*
 * The inode cache is split into ICACHE_SHARDS independent hash tables, each
 * with its own leaf lock, chosen by ino: creates and lookups of different
 * inodes (e.g. one directory per thread) do not funnel through one lock on
 * their way to the B-tree.  A power of two.
 */
#define ICACHE_SHARDS 64

struct icache {
	struct glock lock;		/* GLOCK_CLASS_MISC; leaf lock of this shard */
	struct htable t;		/* inodes by ino (hnode); guarded by lock */
};

struct dcache;
struct fsctx {
	struct core *core;		/* fixed */
	struct root *root;		/* the fs tree; fixed */
	enum glock_type locktype;	/* for inode locks; fixed */
	bool readonly;			/* fixed at mount */
	struct icache icache[ICACHE_SHARDS];
	uint64_t next_ino;		/* atomic (fetch-add); set at mount */
	uint32_t ino_block;		/* numbers per directory block, 0: one counter; fixed */
	uint32_t inline_max;		/* largest inline file; fixed */
	int atime;			/* enum core_atime; fixed */
	/* subvolumes (subvol.h): */
	uint64_t subvol;		/* tree id of this fs tree; fixed */
	uint64_t ino_base;		/* FUSE nodeid = ino_base | ino; fixed */
	struct subvols *svs;		/* every open fs tree of the volume; fixed */
	bool dead;			/* deleted: inode_get says ENOENT */
	uint64_t open_files;		/* open files and dirs (atomic; FUSE glue) */
	struct dcache *dcache;		/* positive lookups (dir.c); made at first use */
};

/* The credentials an operation runs with (the FUSE request's). */
struct fsops_cred {
	uint32_t uid, gid;
	uint32_t umask;		/* applied here unless a default ACL rules */
	/* Is the caller in group gid by its supplementary groups?  Asked only
	 * when it matters (a write to a setgid file); NULL: it is not. */
	bool (*in_group)(const struct fsops_cred *cr, uint32_t gid);
	void *ctx;		/* in_group's */
	bool *dropped_privs;	/* set when a write cleared setuid/setgid, or NULL */
	/* The kernel clears setuid/setgid itself, by a SETATTR from the
	 * writer's context before the write (FUSE writeback cache: cached
	 * writes reach the daemon later with no writer's credentials, so the
	 * kernel's rule is the only one that can be applied): writes keep
	 * the mode. */
	bool kernel_kills_privs;
	/* A chown (uid or gid set, no mode) of a non-directory drops setuid,
	 * and setgid when group-executable or the caller is neither root nor
	 * in the file's group — the kernel's rule (chown_common,
	 * setattr_should_drop_sgid), which FUSE_HANDLE_KILLPRIV_V2 leaves to
	 * the daemon; without it FUSE sends a new mode only for setuid and
	 * group-executable setgid, never for a caller outside the group. */
	bool chown_kills_privs;
	/* The kernel owns a regular file's mtime and ctime (FUSE writeback
	 * cache): it stamps them when a process writes, truncates or
	 * changes the file, keeps its own over ours, and sends them by
	 * SETATTR — explicit values — when it writes the inode back or
	 * changes attributes.  So writes, SETATTRs and fallocates of a
	 * regular file stamp nothing here: a stamp of ours (at write-back time, or for a
	 * truncate(2) to the size the file has, which the kernel leaves
	 * unstamped) differs from the time the kernel shows and stands
	 * whenever no SETATTR follows (a second write in one clock tick
	 * leaves the kernel's time unchanged), so a remount or the kernel
	 * dropping its inode would show a time the file never had.
	 * Link, unlink, rename and xattr changes still stamp ctime here: the
	 * kernel stamps its own there too (fuse_update_ctime) and writes the
	 * inode back at once (fuse_flush_time_update: sync_inode_metadata),
	 * a SETATTR of mtime and ctime inside the same system call, even in
	 * the same clock tick — so ours never stands, and stays right for a
	 * kernel that would not send it.  Seen on 6.18 (glassfs -d: each
	 * LINK, SETXATTR, REMOVEXATTR, RENAME, UNLINK of a regular file is
	 * followed by a SETATTR of it, a replaced rename target too; same-tick
	 * ctimes stored as shown after a remount). */
	bool kernel_times;
};

/* Open the fs tree tree_id (fsctx.c): create the root directory on first
 * mount, replay the fsync log, free orphans left by a crash, find the next
 * inode number (rdonly: a read-only snapshot).  -ENOENT if the tree does
 * not exist (-EUCLEAN for the default tree). */
int fsctx_mount_tree(struct core *c, const struct core_opts *o, uint64_t tree_id,
		     bool rdonly, struct fsctx **out);

int inode_cache_init(struct fsctx *fs);
/* Between inode.c and inode_cache.c: a new in-memory inode of ino (one
 * reference, not cached), and caching it unless another thread cached
 * ino first (then ip is freed and that one returned, referenced). */
struct inode *inode_cache_alloc(struct fsctx *fs, uint64_t ino);
struct inode *inode_cache_insert(struct fsctx *fs, struct inode *ip);
void inode_cache_destroy(struct fsctx *fs);

/* The inode ino, referenced.  -ENOENT if it has no INODE_ITEM, -errno. */
int inode_get(struct fsctx *fs, uint64_t ino, struct inode **out);
/* Take one more engine reference on an inode already held. */
void inode_ref(struct fsctx *fs, struct inode *ip);
/*
 * Drop a reference.  When no reference and no kernel lookup remains the
 * inode leaves the cache; if its link count is 0 its items and data are
 * freed in a transaction of their own (it was an orphan).
 */
void inode_put(struct fsctx *fs, struct inode *ip);
/* FUSE lookup counting: +1 per successful entry reply, -n at forget. */
void inode_lookup_inc(struct fsctx *fs, struct inode *ip);
void inode_forget(struct fsctx *fs, uint64_t ino, uint64_t n);

/* Lock one inode, or up to four distinct/duplicate ones in ino order. */
void inode_lock(struct inode *ip);
void inode_unlock(struct inode *ip);
void inode_rlock(struct inode *ip);
void inode_runlock(struct inode *ip);
void inode_lock_many(struct inode **ips, int n);
void inode_unlock_many(struct inode **ips, int n);

/*
 * A new inode with nlink 1 (2 for directories), its INODE_ITEM written
 * in t.  Returned referenced and unlocked (nobody else can see it yet).
 * link, when given, is its first name's INODE_REF (parent and entry, as
 * dir_new_ref builds it): the two items are adjacent keys of a new
 * object, written in one B-tree descent.
 */
struct inode_link {
	uint64_t parent;
	const void *ref;
	uint32_t ref_size;
};
/*
 * Inode numbers are spread by directory (unless inode_spread=off): a new
 * directory takes a block of INODE_SPREAD_BLOCK numbers from the fs
 * tree's counter, is the block's first number, and hands the rest to the
 * children created in it; a directory whose block is used up (or which has
 * none: the root, or one read back from disk) takes a new block.  So the
 * items of a directory and of its children sit together in the key space,
 * and creates in different directories insert into different leaves
 * instead of all at the right edge of the tree (issue 20).  Numbers a
 * block leaves unused are skipped for good, as is the rest of a block
 * whose directory leaves the inode cache (the kernel holds a lookup of a
 * directory it creates in, so that is rare).  Unique across crashes:
 * blocks are taken in ascending order and a number is used only after its
 * block was taken, so every number used after a mount is above the
 * highest one the tree (with the fsync log replayed) holds, where the
 * counter restarts (inode_init_next).
 */
#define INODE_SPREAD_BLOCK 4096u
/* Is there a number left for a new inode in dp (locked by the caller)?
 * -ENOSPC when the space is used up: asked before a create changes
 * anything, since a failed inode_new aborts the transaction. */
int inode_ino_room(struct fsctx *fs, struct inode *dp, uint32_t mode);
/* dp: the parent directory, locked by the caller (its block is used), or
 * NULL (one number from the counter). */
int inode_new(struct txn *t, struct fsctx *fs, struct inode *dp, uint32_t mode,
	      uint32_t uid, uint32_t gid, uint64_t rdev, const struct inode_link *link,
	      struct inode **out);
/* Write the cached item back (stamps transid).  Caller holds ip->lock. */
int inode_update(struct txn *t, struct fsctx *fs, struct inode *ip);

enum { T_ATIME = 1, T_MTIME = 2, T_CTIME = 4 };
void inode_touch(struct inode *ip, int which);
void inode_time_now(struct item_time *t);
/* Does a read have to update ip's atime under mode (enum core_atime)?
 * relatime: when atime is not after mtime or ctime, or a day old.
 * Caller holds ip->lock (read is enough). */
bool inode_atime_stale(const struct inode *ip, int mode);

/*
 * Drop one link (caller holds ip->lock).  At nlink 0 an ORPHAN_ITEM is
 * written so a crash before the last forget frees it at the next mount.
 */
int inode_drop_link(struct txn *t, struct fsctx *fs, struct inode *ip);

/* Delete every item of ino and drop its data references; removes its
 * orphan item.  Joins its own transactions (may span several). */
int inode_free_items(struct fsctx *fs, uint64_t ino);

/* At mount: free every orphan left by a crash.  Returns the count or -errno. */
int inode_orphan_cleanup(struct fsctx *fs);
/* At mount: find the largest inode number in use. */
int inode_init_next(struct fsctx *fs);

/* Read-only search for the first item >= k: 0 positioned there, 1 when
 * no such item, -errno.  p must be released by the caller either way. */
int fsctx_search_ge(struct fsctx *fs, const struct key *k, struct path *p);
/* The whole item at k in a malloc'd *out (first tried at guess bytes, then
 * at its size): its size, -ENOENT, or -errno (then *out is untouched). */
int fsctx_read_item(struct fsctx *fs, const struct key *k, uint32_t guess, void **out);

static inline struct key mkkey(uint64_t oid, uint8_t type, uint64_t off)
{
	struct key k = { .objectid = oid, .type = type, .offset = off };
	return k;
}

#endif
