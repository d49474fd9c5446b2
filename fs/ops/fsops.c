// SPDX-License-Identifier: MIT
/*
 * fsops.c — POSIX operations over the items layer (see fsops.h).
 *
 * Shape of a modifying operation: join the transaction, get the inodes,
 * lock them in ino order, check everything that can fail without side
 * effects, then change items.  A failure after the first change aborts
 * the transaction (the volume turns read-only) rather than leave half an
 * operation behind.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/ops/mount.h"
#include "fs/ops/fsops.h"
#include "fs/items/dir.h"
#include "fs/items/file.h"
#include "fs/items/acl.h"
#include "fs/items/xattr.h"
#include "fs/base/probe.h"
#include "fs/btree/meta.h"	/* core_generation() */
#include "fs/items/log.h"
#include "fs/items/subvol.h"
#include "fs/format/format.h"	/* BG_DATA, BG_METADATA */
#include "fs/store/alloc.h"	/* alloc_given_back: commit_for_space */

static void fill_stat(const struct fsctx *fs, const struct inode *ip, struct stat *st)
{
	const struct inode_item *it = &ip->item;

	memset(st, 0, sizeof(*st));
	st->st_ino = fs->ino_base | ip->ino;	/* the FUSE nodeid (subvol.h) */
	st->st_mode = it->mode;
	st->st_nlink = it->nlink;
	st->st_uid = it->uid;
	st->st_gid = it->gid;
	st->st_rdev = it->rdev;
	st->st_size = (off_t)it->size;
	st->st_blksize = CORE_SECTORSIZE;
	st->st_blocks = (blkcnt_t)((it->nbytes + 511) / 512);
	st->st_atim.tv_sec = it->atime.sec;
	st->st_atim.tv_nsec = it->atime.nsec;
	st->st_mtim.tv_sec = it->mtime.sec;
	st->st_mtim.tv_nsec = it->mtime.nsec;
	st->st_ctim.tv_sec = it->ctime.sec;
	st->st_ctim.tv_nsec = it->ctime.nsec;
}

static void stat_of(const struct fsctx *fs, struct inode *ip, struct stat *st)
{
	inode_rlock(ip);
	fill_stat(fs, ip, st);
	inode_runlock(ip);
}

/* End a handle; an error after changes began aborts the transaction. */
static int finish(struct txn *t, int ret, bool changed, const char *where)
{
	if (ret < 0 && changed)
		txn_abort(t, ret, where);
	int e = txn_end(t);
	return ret < 0 ? ret : e;
}

/* Join the running transaction, unless this mount turned read-only. */
static int join(struct fsctx *fs, unsigned nr_items, unsigned flags, struct txn **t)
{
	if (fs->readonly)
		return -EROFS;
	return txn_join(fs->core, nr_items, flags, t);
}

/*
 * Space a commit gives back.  Blocks freed in the running transaction (a
 * file overwritten, truncated or deleted, B-tree nodes copied) stay
 * pinned until it commits (alloc.h), so a volume can say ENOSPC with
 * much of its space one commit away: overwriting a 600 MiB file on a
 * 1 GiB volume did, and with the writeback cache the kernel then drops
 * the pages it could not write back.  Kernel btrfs commits before it
 * gives up; so do we, with no handle held (a commit waits for every
 * handle) and no inode lock (only the caller's reference).  True when the
 * commit freed space: the caller tries again, up to SPACE_COMMITS times
 * (space_retry).  On a volume that is really full every failing
 * operation costs a commit of what is dirty, as in btrfs.
 */
static bool commit_for_space(struct fsctx *fs)
{
	struct core *c = fs->core;
	uint64_t g0;

	if (fs->readonly || core_readonly(c))
		return false;
	/* what the commit unpinned, not the free space after it: writers
	 * that run beside the commit (commits are pipelined) may take more
	 * than it gave back, and the free space then said "nothing" (a
	 * writer of fullload.test stopped at 96 MiB live of 128) */
	g0 = alloc_given_back(c);
	if (txn_commit(c, COMMIT_ENOSPC) < 0)
		return false;
	return alloc_given_back(c) > g0;
}

/*
 * Commits one operation may make for space, each of which gave space
 * back.  More than one: operations that run at once (the writeback
 * cache's WRITEs, up to the kernel's max_background in flight) each
 * commit and race for what it freed, and a writer that lost the race
 * to the others once said ENOSPC on a volume with the space for it
 * (fulldisk.test's overwrite at load 5: 2 runs in 4).  Bounded: a
 * volume that is really full stops at the first commit that frees
 * nothing.
 */
#define SPACE_COMMITS	8

/* After ret: another try?  A commit that gave space back, while *n of
 * this operation's commits are left. */
static bool space_retry(struct fsctx *fs, int ret, int *n)
{
	return ret == -ENOSPC && (*n)-- > 0 && commit_for_space(fs);
}

/* join, and on ENOSPC again after each commit that gave space back */
static int join_space(struct fsctx *fs, unsigned nr_items, unsigned flags, struct txn **t)
{
	int n = SPACE_COMMITS, ret = join(fs, nr_items, flags, t);

	while (space_retry(fs, ret, &n))
		ret = join(fs, nr_items, flags, t);
	return ret;
}

static int check_name(const char *name)
{
	size_t len = strlen(name);

	if (len == 0)
		return -ENOENT;
	if (len > DIR_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/* ---- mount ------------------------------------------------------------ */

int fsops_mount(struct core *c, const struct core_opts *o, struct fsctx **out)
{
	int ret = fsctx_mount_tree(c, o, FS_TREE_OBJECTID, false, out);

	if (ret == 0) {
		ret = subvol_table_init(*out, o);
		if (ret < 0) {
			fsops_unmount(*out);
			*out = NULL;
		}
	}
	return ret;
}

void fsops_unmount(struct fsctx *fs)
{
	if (!fs)
		return;
	if (fs->subvol == FS_TREE_OBJECTID)
		subvol_table_destroy(fs);
	inode_cache_destroy(fs);
	free(fs);
}

/* ---- lookups and attributes -------------------------------------------- */

int fsops_lookup(struct fsctx *fs, uint64_t parent, const char *name, struct stat *st)
{
	struct dir_hit hit;
	struct inode *ip;
	int ret = check_name(name);

	if (ret < 0)
		return ret;
	ret = dir_lookup(fs, parent, name, strlen(name), &hit);
	if (ret < 0)
		return ret;
	if (hit.type == DT_SUBVOL) {	/* the root directory of a subvolume */
		if (!subvol_linked(fs, parent, hit.ino))
			return -ENOENT;	/* a snapshot's stub */
		fs = subvol_fs(fs, hit.ino);
		hit.ino = ROOT_DIR_INO;
	}
	ret = inode_get(fs, hit.ino, &ip);
	if (ret < 0)
		return ret == -ENOENT ? -EIO : ret;	/* dangling entry */
	stat_of(fs, ip, st);
	inode_lookup_inc(fs, ip);
	inode_put(fs, ip);
	return 0;
}

void fsops_forget(struct fsctx *fs, uint64_t ino, uint64_t nlookup)
{
	inode_forget(fs, ino, nlookup);
}

int fsops_getattr(struct fsctx *fs, uint64_t ino, struct stat *st)
{
	struct inode *ip;
	int ret = inode_get(fs, ino, &ip);

	if (ret < 0)
		return ret;
	stat_of(fs, ip, st);
	inode_put(fs, ip);
	return 0;
}

static void set_time(struct item_time *it, const struct timespec *ts)
{
	it->sec = ts->tv_sec;
	it->nsec = (uint32_t)ts->tv_nsec;
}

static void drop_privs(struct inode *ip, const struct fsops_cred *cr);

int fsops_setattr(struct fsctx *fs, uint64_t ino, const struct stat *in, int valid,
		  struct stat *out)
{
	return fsops_setattr_as(fs, ino, in, valid, out, NULL);
}

/*
 * A chown's setuid/setgid, by the kernel's rule (chown_common with
 * setattr_should_drop_sgid), when the kernel leaves it to us
 * (fsops_cred.chown_kills_privs): setuid always goes; setgid when the
 * file is group-executable, or the caller is not root (CAP_FSETID, which
 * a daemon cannot see) and not in the file's group.
 */
static void chown_drop_privs(struct inode *ip, const struct fsops_cred *cr)
{
	uint32_t m = ip->item.mode & ~(uint32_t)S_ISUID;

	if ((m & S_ISGID) && ((m & S_IXGRP) ||
			      (cr->uid != 0 && cr->gid != ip->item.gid &&
			       !(cr->in_group && cr->in_group(cr, ip->item.gid)))))
		m &= ~(uint32_t)S_ISGID;
	ip->item.mode = m;
}

static int setattr_once(struct fsctx *fs, uint64_t ino, const struct stat *in, int valid,
			struct stat *out, const struct fsops_cred *cr)
{
	struct inode *ip;
	struct txn *t;
	bool shrink = false, changed = false;
	int touch = 0;		/* the times set to now: one now for all of them */
	int ret = inode_get(fs, ino, &ip);

	if (ret < 0)
		return ret;
	if ((valid & FSOPS_SET_SIZE) && (uint64_t)in->st_size < ip->item.size)
		shrink = true;
	ret = join_space(fs, 8, shrink ? TXN_USE_RESERVE : 0, &t);
	if (ret < 0) {
		inode_put(fs, ip);
		return ret;
	}
	inode_lock(ip);
	/* the kernel's times (writeback cache): only what it sends is set */
	bool ktimes = cr && cr->kernel_times && S_ISREG(ip->item.mode);
	if (valid == FSOPS_KILL_PRIVS) {
		if (S_ISREG(ip->item.mode))
			drop_privs(ip, cr);
		changed = true;
		if (!ktimes)
			inode_touch(ip, T_CTIME);
		ret = inode_update(t, fs, ip);
		if (ret == 0 && out)
			fill_stat(fs, ip, out);
		goto out;
	}
	if (valid & FSOPS_SET_SIZE) {
		if (S_ISDIR(ip->item.mode)) {
			ret = -EISDIR;
			goto out;
		}
		if (!S_ISREG(ip->item.mode)) {
			ret = -EINVAL;
			goto out;
		}
		if (in->st_size < 0) {
			ret = -EINVAL;
			goto out;
		}
		ret = file_truncate(t, fs, ip, (uint64_t)in->st_size);
		/* -ENOSPC and -EFBIG changed nothing (file.h): no cause to
		 * abort the transaction and turn the volume read-only */
		changed = ret != -ENOSPC && ret != -EFBIG;
		if (ret < 0)
			goto out;
		/* a kernel filesystem moves them when the size changes (the
		 * FUSE kernel sends them itself then, with the cache) */
		if (!ktimes)
			touch |= T_MTIME | T_CTIME;
		/* the kernel leaves it to us (FUSE_CAP_HANDLE_KILLPRIV) */
		if (!(valid & FSOPS_SET_MODE))
			drop_privs(ip, cr);
	}
	changed = true;
	if (valid & FSOPS_SET_MODE) {
		ip->item.mode = (ip->item.mode & S_IFMT) | (in->st_mode & 07777);
		ret = acl_chmod(t, fs, ip);
		if (ret < 0)
			goto out;
	}
	/* also over a mode sent with the chown: without KILLPRIV_V2 the
	 * kernel sends one when its partial rule (setuid, group-executable
	 * setgid) found a bit to drop, keeping a setgid that the caller's
	 * group would drop (setuid.test, glassfs-nowb, on the old code) */
	if ((valid & (FSOPS_SET_UID | FSOPS_SET_GID)) && cr && cr->chown_kills_privs &&
	    !S_ISDIR(ip->item.mode))
		chown_drop_privs(ip, cr);	/* before the group changes: the old one counts */
	if (valid & FSOPS_SET_UID)
		ip->item.uid = in->st_uid;
	if (valid & FSOPS_SET_GID)
		ip->item.gid = in->st_gid;
	if (valid & FSOPS_SET_ATIME_NOW)
		touch |= T_ATIME;
	else if (valid & FSOPS_SET_ATIME)
		set_time(&ip->item.atime, &in->st_atim);
	if (valid & FSOPS_SET_MTIME_NOW)
		touch |= T_MTIME;
	else if (valid & FSOPS_SET_MTIME) {
		set_time(&ip->item.mtime, &in->st_mtim);
		touch &= ~T_MTIME;
	}
	if (valid & FSOPS_SET_CTIME) {
		set_time(&ip->item.ctime, &in->st_ctim);
		touch &= ~T_CTIME;
	} else if (!ktimes) {
		touch |= T_CTIME;
	}
	/* one clock reading: a kernel filesystem gives ftruncate's mtime
	 * and ctime (utimensat's "now"s and ctime) one instant, and a
	 * reading each made mtime < ctime */
	inode_touch(ip, touch);
	ret = inode_update(t, fs, ip);
	if (ret == 0 && out)
		fill_stat(fs, ip, out);
out:
	inode_unlock(ip);
	ret = finish(t, ret, changed, "setattr");
	inode_put(fs, ip);
	return ret;
}

int fsops_setattr_as(struct fsctx *fs, uint64_t ino, const struct stat *in, int valid,
		     struct stat *out, const struct fsops_cred *cr)
{
	int n = SPACE_COMMITS, ret = setattr_once(fs, ino, in, valid, out, cr);

	/* a truncate into a block copies it first: an ENOSPC there changed
	 * nothing (file.h), and the size comes before every other change */
	while ((valid & FSOPS_SET_SIZE) && space_retry(fs, ret, &n))
		ret = setattr_once(fs, ino, in, valid, out, cr);
	return ret;
}

/* ---- creating names ---------------------------------------------------- */

static int make_node(struct fsctx *fs, uint64_t parent, const char *name, mode_t mode,
		     dev_t rdev, const struct fsops_cred *cr, const char *symtarget,
		     struct stat *st)
{
	struct inode *dp, *ip = NULL;
	struct dir_hit hit;
	struct dir_slot slot = { NULL, 0 };
	struct txn *t;
	size_t len = strlen(name);
	bool changed = false;
	uint32_t gid = cr->gid;
	void *acl = NULL;
	size_t acl_size = 0;
	int ret = check_name(name);

	if (ret < 0)
		return ret;
	if (symtarget && strlen(symtarget) >= 4096)
		return -ENAMETOOLONG;
	ret = inode_get(fs, parent, &dp);
	if (ret < 0)
		return ret;
	ret = join_space(fs, 8, 0, &t);
	if (ret < 0) {
		inode_put(fs, dp);
		return ret;
	}
	inode_lock(dp);
	if (!S_ISDIR(dp->item.mode)) {
		ret = -ENOTDIR;
		goto out;
	}
	if (dp->item.nlink == 0) {
		ret = -ENOENT;
		goto out;
	}
	ret = dir_prepare(fs, parent, name, len, &hit, &slot);	/* the one read of the name's run */
	if (ret < 0)
		goto out;
	if (S_ISDIR(mode) && dp->item.nlink >= LINK_MAX_COUNT) {
		ret = -EMLINK;
		goto out;
	}
	if (dp->item.mode & S_ISGID) {
		gid = dp->item.gid;
		if (S_ISDIR(mode))
			mode |= S_ISGID;
	}
	uint32_t nmode = (uint32_t)mode;
	ret = inode_ino_room(fs, dp, nmode);
	if (ret == 0)
		ret = dir_slot_room(fs, &slot, len);
	if (ret == 0)
		ret = acl_create(fs, dp, &nmode, cr->umask, &acl, &acl_size);
	if (ret < 0)
		goto out;
	changed = true;
	char ref[DIR_REF_MAX];
	uint64_t index;
	struct inode_link link = { parent, ref, dir_new_ref(dp, name, len, ref, &index) };
	ret = inode_new(t, fs, dp, nmode, cr->uid, gid, rdev, &link, &ip);
	if (ret == 0 && acl) {
		ret = acl_create_finish(t, fs, ip, acl, acl_size);
		acl = NULL;
	}
	if (ret < 0)
		goto out;
	if (symtarget) {
		ret = file_set_symlink(t, fs, ip, symtarget, strlen(symtarget));
		if (ret == 0)
			ret = inode_update(t, fs, ip);
		if (ret < 0)
			goto out;
	}
	if (S_ISDIR(mode))
		dp->item.nlink++;
	ret = dir_add_prepared(t, fs, dp, name, len, ip->ino, dir_type_of((uint32_t)mode),
			       &slot, &index);
	if (ret == 0)
		stat_of(fs, ip, st);
out:
	dir_slot_free(&slot);
	free(acl);
	inode_unlock(dp);
	ret = finish(t, ret, changed, "create");
	if (ret == 0)
		inode_lookup_inc(fs, ip);
	inode_put(fs, ip);
	inode_put(fs, dp);
	return ret;
}

int fsops_mknod(struct fsctx *fs, uint64_t parent, const char *name, mode_t mode,
		dev_t rdev, const struct fsops_cred *cr, struct stat *st)
{
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFCHR: case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		break;
	case 0:
		mode |= S_IFREG;
		break;
	default:
		return -EINVAL;
	}
	if (!S_ISCHR(mode) && !S_ISBLK(mode))
		rdev = 0;
	return make_node(fs, parent, name, mode, rdev, cr, NULL, st);
}

int fsops_mkdir(struct fsctx *fs, uint64_t parent, const char *name, mode_t mode,
		const struct fsops_cred *cr, struct stat *st)
{
	return make_node(fs, parent, name, S_IFDIR | (mode & 07777), 0, cr, NULL, st);
}

int fsops_symlink(struct fsctx *fs, uint64_t parent, const char *name,
		  const char *target, const struct fsops_cred *cr, struct stat *st)
{
	if (!target[0])
		return -ENOENT;
	return make_node(fs, parent, name, S_IFLNK | 0777, 0, cr, target, st);
}

int fsops_link(struct fsctx *fs, uint64_t ino, uint64_t newparent, const char *newname,
	       struct stat *st)
{
	struct inode *ip, *dp;
	struct dir_hit hit;
	struct txn *t;
	bool changed = false;
	int ret = check_name(newname);

	if (ret < 0)
		return ret;
	ret = inode_get(fs, ino, &ip);
	if (ret < 0)
		return ret;
	ret = inode_get(fs, newparent, &dp);
	if (ret < 0) {
		inode_put(fs, ip);
		return ret;
	}
	ret = join_space(fs, 8, 0, &t);
	if (ret < 0)
		goto put;
	struct inode *lk[2] = { ip, dp };
	inode_lock_many(lk, 2);
	if (S_ISDIR(ip->item.mode)) {
		ret = -EPERM;
		goto out;
	}
	if (!S_ISDIR(dp->item.mode)) {
		ret = -ENOTDIR;
		goto out;
	}
	if (dp->item.nlink == 0 || ip->item.nlink == 0) {
		ret = -ENOENT;
		goto out;
	}
	if (ip->item.nlink >= LINK_MAX_COUNT) {
		ret = -EMLINK;
		goto out;
	}
	ret = dir_lookup(fs, newparent, newname, strlen(newname), &hit);
	if (ret == 0)
		ret = -EEXIST;
	if (ret == -ENOENT)
		ret = dir_room(fs, newparent, newname, strlen(newname));
	if (ret == 0)
		ret = dir_ref_room(fs, ip->ino, newparent, newname, strlen(newname), NULL, 0);
	if (ret < 0)
		goto out;
	changed = true;
	log_note_names(t, ip->ino);
	ip->item.nlink++;
	inode_touch(ip, T_CTIME);
	ret = inode_update(t, fs, ip);
	if (ret == 0)
		ret = dir_add(t, fs, dp, newname, strlen(newname), ip->ino,
			      dir_type_of(ip->item.mode));
	if (ret == 0)
		fill_stat(fs, ip, st);
out:
	inode_unlock_many(lk, 2);
	ret = finish(t, ret, changed, "link");
	if (ret == 0)
		inode_lookup_inc(fs, ip);
put:
	inode_put(fs, dp);
	inode_put(fs, ip);
	return ret;
}

/*
 * Find name in the locked-to-be directory dp and lock dp with its target:
 * returns 0 with *ipp referenced and both locked, or -errno with nothing
 * locked.  Retries when the name changed between lookup and locking.
 */
static int lock_dir_and_child(struct fsctx *fs, struct inode *dp, const char *name,
			      struct dir_hit *hit, struct inode **ipp)
{
	size_t len = strlen(name);

	for (;;) {
		struct dir_hit again;
		struct inode *ip;
		int ret = dir_lookup(fs, dp->ino, name, len, hit);
		if (ret < 0)
			return ret;
		if (hit->type == DT_SUBVOL)	/* glassctl subvolume delete */
			return -EPERM;
		ret = inode_get(fs, hit->ino, &ip);
		if (ret < 0)
			return ret == -ENOENT ? -EIO : ret;
		struct inode *lk[2] = { dp, ip };
		inode_lock_many(lk, 2);
		ret = dir_lookup(fs, dp->ino, name, len, &again);
		if (ret == 0 && again.ino == hit->ino && again.index == hit->index) {
			*ipp = ip;
			return 0;
		}
		inode_unlock_many(lk, 2);
		inode_put(fs, ip);
		if (ret < 0)
			return ret;
	}
}

/*
 * name in dp is a subvolume entry: a linked one is glassctl's to delete
 * (EPERM), a snapshot's stub (subvol_linked) goes like an empty
 * directory.  1 when name is no subvolume entry (nothing done).
 */
static int remove_stub(struct txn *t, struct fsctx *fs, struct inode *dp, const char *name,
		       bool isdir)
{
	struct dir_hit hit;
	size_t len = strlen(name);
	int ret;

	inode_lock(dp);
	ret = dir_lookup(fs, dp->ino, name, len, &hit);
	if (ret < 0 || hit.type != DT_SUBVOL)
		ret = ret < 0 ? ret : 1;
	else if (subvol_linked(fs, dp->ino, hit.ino))
		ret = -EPERM;
	else if (!isdir)
		ret = -EISDIR;
	else if ((ret = dir_remove(t, fs, dp, name, len, &hit)) == 0) {
		if (dp->item.nlink > 2)
			dp->item.nlink--;
		ret = inode_update(t, fs, dp);
	}
	inode_unlock(dp);
	return ret;
}

static int remove_name(struct fsctx *fs, uint64_t parent, const char *name, bool isdir)
{
	struct inode *dp, *ip = NULL;
	struct dir_hit hit;
	struct txn *t;
	bool changed = false;
	int ret = check_name(name);

	if (ret < 0)
		return ret;
	ret = inode_get(fs, parent, &dp);
	if (ret < 0)
		return ret;
	if (!S_ISDIR(dp->item.mode)) {
		inode_put(fs, dp);
		return -ENOTDIR;
	}
	ret = join_space(fs, 8, TXN_USE_RESERVE, &t);
	if (ret < 0) {
		inode_put(fs, dp);
		return ret;
	}
	ret = remove_stub(t, fs, dp, name, isdir);
	if (ret != 1) {
		ret = finish(t, ret, ret == 0, "rmdir");
		inode_put(fs, dp);
		return ret;
	}
	ret = lock_dir_and_child(fs, dp, name, &hit, &ip);
	if (ret < 0) {
		ret = finish(t, ret, false, "unlink");
		inode_put(fs, dp);
		return ret;
	}
	if (isdir && !S_ISDIR(ip->item.mode)) {
		ret = -ENOTDIR;
		goto out;
	}
	if (!isdir && S_ISDIR(ip->item.mode)) {
		ret = -EISDIR;
		goto out;
	}
	if (isdir) {
		ret = dir_is_empty(fs, ip->ino);
		if (ret == 0)
			ret = -ENOTEMPTY;
		if (ret < 0)
			goto out;
	}
	changed = true;
	log_note_names(t, ip->ino);
	log_note_dir_removal(t, dp->ino);
	ret = dir_remove(t, fs, dp, name, strlen(name), &hit);
	if (ret == 0)
		ret = inode_drop_link(t, fs, ip);
	if (ret == 0 && isdir) {
		if (dp->item.nlink > 2)
			dp->item.nlink--;
		ret = inode_update(t, fs, dp);
	}
out:
	{
		struct inode *lk[2] = { dp, ip };
		inode_unlock_many(lk, 2);
	}
	ret = finish(t, ret, changed, isdir ? "rmdir" : "unlink");
	inode_put(fs, ip);
	inode_put(fs, dp);
	return ret;
}

int fsops_unlink(struct fsctx *fs, uint64_t parent, const char *name)
{
	return remove_name(fs, parent, name, false);
}

int fsops_rmdir(struct fsctx *fs, uint64_t parent, const char *name)
{
	return remove_name(fs, parent, name, true);
}

int fsops_rename(struct fsctx *fs, uint64_t parent, const char *name,
		 uint64_t newparent, const char *newname, unsigned flags)
{
	struct inode *sp = NULL, *dp = NULL, *si = NULL, *di = NULL;
	struct dir_hit sh, dh, s2, d2;
	struct txn *t = NULL;
	bool changed = false, locked = false;
	size_t slen = strlen(name), dlen = strlen(newname);
	int ret;

	if (flags & ~(unsigned)(FSOPS_RENAME_NOREPLACE | FSOPS_RENAME_EXCHANGE))
		return -EINVAL;
	if ((flags & FSOPS_RENAME_NOREPLACE) && (flags & FSOPS_RENAME_EXCHANGE))
		return -EINVAL;
	if ((ret = check_name(name)) < 0 || (ret = check_name(newname)) < 0)
		return ret;
	if ((ret = inode_get(fs, parent, &sp)) < 0)
		return ret;
	if ((ret = inode_get(fs, newparent, &dp)) < 0)
		goto put;
	if (!S_ISDIR(sp->item.mode) || !S_ISDIR(dp->item.mode)) {
		ret = -ENOTDIR;
		goto put;
	}
	ret = join_space(fs, 16, 0, &t);
	if (ret < 0) {
		t = NULL;
		goto put;
	}
	for (;;) {
		bool have_dst;
		ret = dir_lookup(fs, parent, name, slen, &sh);
		if (ret < 0)
			goto out;
		ret = dir_lookup(fs, newparent, newname, dlen, &dh);
		if (ret < 0 && ret != -ENOENT)
			goto out;
		have_dst = ret == 0;
		if (sh.type == DT_SUBVOL || (have_dst && dh.type == DT_SUBVOL)) {
			ret = -EPERM;	/* subvolumes keep their names */
			goto out;
		}
		if ((ret = inode_get(fs, sh.ino, &si)) < 0)
			goto out;
		if (have_dst && (ret = inode_get(fs, dh.ino, &di)) < 0)
			goto out;
		struct inode *lk[4] = { sp, dp, si, di };
		inode_lock_many(lk, 4);
		locked = true;
		int r1 = dir_lookup(fs, parent, name, slen, &s2);
		int r2 = dir_lookup(fs, newparent, newname, dlen, &d2);
		if (r1 == 0 && s2.ino == sh.ino && s2.index == sh.index &&
		    ((have_dst && r2 == 0 && d2.ino == dh.ino && d2.index == dh.index) ||
		     (!have_dst && r2 == -ENOENT)))
			break;
		inode_unlock_many(lk, 4);
		locked = false;
		inode_put(fs, si);
		inode_put(fs, di);
		si = di = NULL;
	}
	if (sp->item.nlink == 0 || dp->item.nlink == 0) {
		ret = -ENOENT;
		goto out;
	}
	if (flags & FSOPS_RENAME_EXCHANGE) {
		if (!di) {
			ret = -ENOENT;
			goto out;
		}
		if (si == di) {
			ret = 0;
			goto out;
		}
		/* each takes the other's name: its back references in the
		 * other's directory grow (within one directory: its own name
		 * goes first) */
		ret = dir_ref_room(fs, si->ino, dp->ino, newname, dlen, sp == dp ? name : NULL, slen);
		if (ret == 0)
			ret = dir_ref_room(fs, di->ino, sp->ino, name, slen,
					   sp == dp ? newname : NULL, dlen);
		/* a directory that changes parent raises its new parent's
		 * link count: LINK_MAX_COUNT holds there too, as in mkdir */
		bool sd = S_ISDIR(si->item.mode), dd = S_ISDIR(di->item.mode);
		if (ret == 0 && sp != dp && sd != dd &&
		    (sd ? dp : sp)->item.nlink >= LINK_MAX_COUNT)
			ret = -EMLINK;
		if (ret < 0)
			goto out;
		changed = true;
		log_note_names(t, si->ino);
		log_note_names(t, di->ino);
		log_note_dir_removal(t, sp->ino);
		log_note_dir_removal(t, dp->ino);
		bool sdir = S_ISDIR(si->item.mode), ddir = S_ISDIR(di->item.mode);
		ret = dir_remove(t, fs, sp, name, slen, &sh);
		if (!ret) ret = dir_remove(t, fs, dp, newname, dlen, &dh);
		if (sp != dp && sdir != ddir) {
			if (sdir) { sp->item.nlink--; dp->item.nlink++; }
			else      { dp->item.nlink--; sp->item.nlink++; }
		}
		if (!ret) ret = dir_add(t, fs, sp, name, slen, di->ino, dir_type_of(di->item.mode));
		if (!ret) ret = dir_add(t, fs, dp, newname, dlen, si->ino, dir_type_of(si->item.mode));
		inode_touch(si, T_CTIME);
		inode_touch(di, T_CTIME);
		if (!ret) ret = inode_update(t, fs, si);
		if (!ret) ret = inode_update(t, fs, di);
		goto out;
	}
	if (di) {
		if (flags & FSOPS_RENAME_NOREPLACE) {
			ret = -EEXIST;
			goto out;
		}
		if (si == di) {		/* two links to one inode: nothing to do */
			ret = 0;
			goto out;
		}
		if (S_ISDIR(si->item.mode)) {
			if (!S_ISDIR(di->item.mode)) {
				ret = -ENOTDIR;
				goto out;
			}
			ret = dir_is_empty(fs, di->ino);
			if (ret == 0)
				ret = -ENOTEMPTY;
			if (ret < 0)
				goto out;
		} else if (S_ISDIR(di->item.mode)) {
			ret = -EISDIR;
			goto out;
		}
	} else {
		ret = dir_room(fs, newparent, newname, dlen);
		if (ret < 0)
			goto out;
	}
	ret = dir_ref_room(fs, si->ino, dp->ino, newname, dlen, sp == dp ? name : NULL, slen);
	if (ret == 0 && S_ISDIR(si->item.mode) && sp != dp && !di &&
	    dp->item.nlink >= LINK_MAX_COUNT)
		ret = -EMLINK;	/* dp would gain a subdirectory past the limit */
	if (ret < 0)
		goto out;
	changed = true;
	ret = 0;
	log_note_names(t, si->ino);
	log_note_dir_removal(t, sp->ino);
	if (di) {
		log_note_names(t, di->ino);
		log_note_dir_removal(t, dp->ino);
		ret = dir_remove(t, fs, dp, newname, dlen, &dh);
		if (!ret) ret = inode_drop_link(t, fs, di);
		if (!ret && S_ISDIR(di->item.mode) && dp->item.nlink > 2)
			dp->item.nlink--;
	}
	if (!ret) ret = dir_remove(t, fs, sp, name, slen, &sh);
	if (!ret) ret = dir_add(t, fs, dp, newname, dlen, si->ino, dir_type_of(si->item.mode));
	if (!ret && S_ISDIR(si->item.mode) && sp != dp) {
		if (sp->item.nlink > 2)
			sp->item.nlink--;
		dp->item.nlink++;
		ret = inode_update(t, fs, sp);
		if (!ret) ret = inode_update(t, fs, dp);
	}
	inode_touch(si, T_CTIME);
	if (!ret) ret = inode_update(t, fs, si);
out:
	if (locked) {
		struct inode *lk[4] = { sp, dp, si, di };
		inode_unlock_many(lk, 4);
	}
	ret = finish(t, ret, changed, "rename");
	t = NULL;
put:
	if (t)
		txn_end(t);
	inode_put(fs, di);
	inode_put(fs, si);
	inode_put(fs, dp);
	inode_put(fs, sp);
	return ret;
}

ssize_t fsops_readlink(struct fsctx *fs, uint64_t ino, char *buf, size_t size)
{
	struct inode *ip;
	ssize_t ret = inode_get(fs, ino, &ip);

	if (ret < 0)
		return ret;
	inode_rlock(ip);
	if (!S_ISLNK(ip->item.mode))
		ret = -EINVAL;
	else
		ret = file_read(fs, ip, buf, size, 0);
	inode_runlock(ip);
	inode_put(fs, ip);
	if (ret >= 0 && (size_t)ret < size)
		buf[ret] = 0;
	return ret;
}

/* ---- file data --------------------------------------------------------- */

/*
 * What a write or a truncate by cr leaves of setuid and setgid, by the
 * kernel's rule (setattr_should_drop_suidgid): FUSE_CAP_HANDLE_KILLPRIV
 * makes it the daemon's to apply.  Root stands for CAP_FSETID, which a
 * daemon cannot see, and keeps both; anyone else loses setuid, and setgid
 * when the file is group-executable or the caller is not in its group.
 * cr NULL: a caller with no privilege and no group.
 */
static void drop_privs(struct inode *ip, const struct fsops_cred *cr)
{
	uint32_t m = ip->item.mode;

	if (!(m & (S_ISUID | S_ISGID)) || (cr && (cr->uid == 0 || cr->kernel_kills_privs)))
		return;
	m &= ~(uint32_t)S_ISUID;
	if ((m & S_ISGID) && ((m & S_IXGRP) || !cr ||
			      (cr->gid != ip->item.gid &&
			       !(cr->in_group && cr->in_group(cr, ip->item.gid)))))
		m &= ~(uint32_t)S_ISGID;
	if (m != ip->item.mode && cr && cr->dropped_privs)
		*cr->dropped_privs = true;
	ip->item.mode = m;
}

/*
 * open(O_TRUNC) of an existing regular file.  The INIT reply takes FUSE's
 * atomic O_TRUNC (libfuse's default), so no SETATTR follows the OPEN: the
 * open itself truncates.  mtime and ctime move even when the file is
 * already empty, as the kernel's do_truncate(ATTR_MTIME|ATTR_CTIME) does
 * for every filesystem; O_RDONLY|O_TRUNC truncates too (the kernel asked
 * for write permission before it sent the OPEN).  setuid, and setgid on a
 * group-executable file, go (FUSE_CAP_HANDLE_KILLPRIV makes that ours)
 * unless root truncates: the kernel keeps them for a caller with
 * CAP_FSETID, which a daemon cannot see, and root stands for it.
 */
static int open_truncate(struct fsctx *fs, struct inode *ip, const struct fsops_cred *cr)
{
	struct txn *t;
	int ret = join_space(fs, 8, TXN_USE_RESERVE, &t);

	if (ret < 0)
		return ret;
	inode_lock(ip);
	ret = file_truncate(t, fs, ip, 0);
	if (ret == 0) {
		drop_privs(ip, cr);
		inode_touch(ip, T_MTIME | T_CTIME);
		ret = inode_update(t, fs, ip);
	}
	inode_unlock(ip);
	return finish(t, ret, true, "open O_TRUNC");
}

int fsops_open(struct fsctx *fs, uint64_t ino, int flags, const struct fsops_cred *cr)
{
	struct inode *ip;
	int ret = inode_get(fs, ino, &ip);

	if (ret < 0)
		return ret;
	if (S_ISDIR(ip->item.mode) && (flags & O_ACCMODE) != O_RDONLY)
		ret = -EISDIR;
	else if ((flags & O_ACCMODE) != O_RDONLY && fs->readonly)
		ret = -EROFS;
	else if ((flags & O_TRUNC) && S_ISREG(ip->item.mode))
		ret = open_truncate(fs, ip, cr);
	inode_put(fs, ip);
	return ret;
}

int fsops_writers(struct fsctx *fs, uint64_t ino, int delta)
{
	struct inode *ip;
	int ret = inode_get(fs, ino, &ip);

	if (ret < 0)
		return ret;
	ret = (int)__atomic_add_fetch(&ip->writers, (uint32_t)delta, __ATOMIC_SEQ_CST);
	inode_put(fs, ip);
	return ret;
}

/*
 * The atime of a read or a readdir, which the caller found stale for the
 * mount's mode (inode_atime_stale: relatime, strictatime, noatime) under
 * ip's read lock; checked again under the write lock.  Best effort: a read
 * does not fail for want of an atime.
 */
static void atime_touch(struct fsctx *fs, struct inode *ip)
{
	struct txn *t;

	if (join(fs, 1, 0, &t) < 0)
		return;
	inode_lock(ip);
	if (inode_atime_stale(ip, fs->atime)) {
		inode_touch(ip, T_ATIME);
		int r = inode_update(t, fs, ip);
		if (r < 0)
			txn_abort(t, r, "atime");
	}
	inode_unlock(ip);
	txn_end(t);
}

/*
 * A READ, with or without spans (fsops.h): one walk of the file's extent
 * items either way.  Spans that cannot be served zero-copy (data_spans_map:
 * a page not cached, a checksum mismatch, a resync's segment) are read the
 * ordinary way into buf from what was collected.
 */
static ssize_t read_op(struct fsctx *fs, uint64_t ino, void *buf, size_t size, uint64_t off,
		       struct data_spans *sp, fsops_reply_fn reply, void *arg)
{
	struct inode *ip;
	bool stale = false;
	ssize_t ret = inode_get(fs, ino, &ip);

	if (ret < 0)
		return ret;
	inode_rlock(ip);
	if (S_ISDIR(ip->item.mode))
		ret = -EISDIR;
	else if (!sp)
		ret = file_read(fs, ip, buf, size, off);
	else
		ret = file_read_spans(fs, ip, buf, size, off, sp);
	if (ret >= 0 && sp && data_spans_map(fs->core, sp) < 0) {
		int r = data_spans_read(fs->core, sp, buf);
		if (r < 0)
			ret = r;
	}
	if (ret >= 0 && !fs->readonly)
		stale = inode_atime_stale(ip, fs->atime);
	if (ret >= 0 && reply)
		ret = reply(arg, sp, (size_t)ret);
	if (sp)
		data_spans_done(fs->core, sp);
	inode_runlock(ip);
	if (stale)
		atime_touch(fs, ip);
	inode_put(fs, ip);
	return ret;
}

ssize_t fsops_read(struct fsctx *fs, uint64_t ino, void *buf, size_t size, uint64_t off)
{
	return read_op(fs, ino, buf, size, off, NULL, NULL, NULL);
}

ssize_t fsops_read_spans(struct fsctx *fs, uint64_t ino, void *buf, size_t size, uint64_t off,
			 struct data_spans *sp, fsops_reply_fn reply, void *arg)
{
	return read_op(fs, ino, buf, size, off, sp, reply, arg);
}

ssize_t fsops_write(struct fsctx *fs, uint64_t ino, const void *buf, size_t size,
		    uint64_t off)
{
	return fsops_write_as(fs, ino, buf, size, off, NULL);
}

/* One try of a write: bytes written (short only when space ran out), or -errno. */
static ssize_t write_once(struct fsctx *fs, struct inode *ip, const void *buf, size_t size,
			  uint64_t off, const struct fsops_cred *cr)
{
	struct txn *t;
	ssize_t ret = join(fs, 8 + (unsigned)(size / (256 * 1024)) * 4, 0, &t);

	if (ret < 0)
		return ret;
	inode_lock(ip);
	if (!S_ISREG(ip->item.mode)) {
		ret = -EINVAL;
	} else {
		uint64_t nbytes0 = ip->item.nbytes;
		ret = file_write(t, fs, ip, buf, size, off);
		/* ENOSPC after an inline file's data moved to a block (the
		 * move is done, the write's own space was not there): the
		 * extents changed, so the inode item must say so too, or the
		 * commit stores nbytes that no longer match them */
		if (ret == -ENOSPC && ip->item.nbytes != nbytes0) {
			int r = inode_update(t, fs, ip);
			if (r < 0)
				txn_abort(t, r, "write");
		}
		if (ret > 0) {
			drop_privs(ip, cr);
			if (!cr || !cr->kernel_times)
				inode_touch(ip, T_MTIME | T_CTIME);
			int r = inode_update(t, fs, ip);
			if (r < 0) {
				txn_abort(t, r, "write");
				ret = r;
			}
		}
	}
	inode_unlock(ip);
	int e = txn_end(t);
	if (ret >= 0 && e < 0)
		ret = e;
	return ret;
}

ssize_t fsops_write_as(struct fsctx *fs, uint64_t ino, const void *buf, size_t size,
		       uint64_t off, const struct fsops_cred *cr)
{
	struct inode *ip;
	ssize_t ret = inode_get(fs, ino, &ip);
	size_t done = 0;
	int n = SPACE_COMMITS;

	if (ret < 0)
		return ret;
	/* a write the space ran out in (ENOSPC, or short) goes on after
	 * each commit that gave space back (space_retry); the bytes it
	 * placed stay, and a try that placed some earns the commits back */
	for (;;) {
		ret = write_once(fs, ip, (const char *)buf + done, size - done, off + done, cr);
		if (ret > 0) {
			done += (size_t)ret;
			n = SPACE_COMMITS;
		}
		if (done == size || ret == 0 || !space_retry(fs, ret > 0 ? -ENOSPC : (int)ret, &n))
			break;
	}
	inode_put(fs, ip);
	return done ? (ssize_t)done : ret;
}

int fsops_fsync(struct fsctx *fs, uint64_t ino, int datasync)
{
	uint64_t t0 = 0;
	int ret;

	if (PROBE_ON(FSYNC_START) || PROBE_ON(FSYNC_END))
		t0 = glock_now_ns();
	GLASSFS_FSYNC_START(ino, datasync);
	ret = 0;
	if (!fs->readonly) {
		/* every change to an inode, its data or its names stamps the
		 * inode item with the running transid: nothing to wait for
		 * when that transaction is already on disk */
		struct inode *ip = NULL;
		uint64_t stamp = UINT64_MAX;
		if (inode_get(fs, ino, &ip) == 0) {
			inode_rlock(ip);
			stamp = ip->item.transid;
			inode_runlock(ip);
		} else {
			ip = NULL;
		}
		if (stamp > core_generation(fs->core)) {
			/* the fsync log when it covers the case (log.h), else
			 * (or when writing the log failed) a full commit; the
			 * file's extents stop growing meanwhile (file.h) */
			if (ip)
				file_fsync_begin(ip);
			ret = log_fsync(fs, ino);
			if (ip)
				file_fsync_end(fs, ip);
			if (ret != 0 && ret != -EROFS && ret != -ENOENT)
				ret = txn_commit(fs->core, COMMIT_FSYNC);
		}
		if (ip)
			inode_put(fs, ip);
	}
	if (PROBE_ON(FSYNC_END))
		GLASSFS_FSYNC_END(ino, ret, t0 ? glock_now_ns() - t0 : 0);
	return ret;
}

int fsops_sync(struct fsctx *fs)
{
	return fs->readonly ? 0 : txn_commit(fs->core, COMMIT_SYNC);
}

int fsops_fallocate(struct fsctx *fs, uint64_t ino, int mode, uint64_t off, uint64_t len)
{
	return fsops_fallocate_as(fs, ino, mode, off, len, NULL);
}

static int fallocate_once(struct fsctx *fs, struct inode *ip, int mode, uint64_t off,
			  uint64_t len, const struct fsops_cred *cr)
{
	struct txn *t;
	int ret = join(fs, 16, (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_COLLAPSE_RANGE)) ?
		       TXN_USE_RESERVE : 0, &t);

	if (ret < 0)
		return ret;
	inode_lock(ip);
	if (S_ISDIR(ip->item.mode))
		ret = -EISDIR;
	else if (!S_ISREG(ip->item.mode))
		ret = -ENODEV;
	else {
		ret = file_fallocate(t, fs, ip, mode, off, len);
		if (ret == 0) {
			/* every fallocate that succeeds modifies the file, as
			 * tmpfs, ext4 and xfs count it (file_modified), even one
			 * that keeps the size over blocks already there; with
			 * the writeback cache the kernel stamped them itself */
			if (!cr || !cr->kernel_times)
				inode_touch(ip, T_MTIME | T_CTIME);
			ret = inode_update(t, fs, ip);
			if (ret < 0)
				txn_abort(t, ret, "fallocate");
		} else if (ret == -ENOSPC) {
			/* earlier pieces stay allocated; record them */
			int r = inode_update(t, fs, ip);
			if (r < 0)
				txn_abort(t, r, "fallocate");
		}
	}
	inode_unlock(ip);
	int e = txn_end(t);
	return ret < 0 ? ret : e;
}

int fsops_fallocate_as(struct fsctx *fs, uint64_t ino, int mode, uint64_t off, uint64_t len,
		       const struct fsops_cred *cr)
{
	struct inode *ip;
	int n = SPACE_COMMITS, ret = inode_get(fs, ino, &ip);

	if (ret < 0)
		return ret;
	ret = fallocate_once(fs, ip, mode, off, len, cr);
	/* the pieces already placed stay: a later try fills the rest (not a
	 * collapse or insert: those move the file's tail, twice) */
	while (!(mode & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE)) &&
	       space_retry(fs, ret, &n))
		ret = fallocate_once(fs, ip, mode, off, len, cr);
	inode_put(fs, ip);
	return ret;
}

int64_t fsops_lseek(struct fsctx *fs, uint64_t ino, uint64_t off, int whence)
{
	struct inode *ip;
	int64_t ret = inode_get(fs, ino, &ip);

	if (ret < 0)
		return ret;
	inode_rlock(ip);
	if (whence == SEEK_DATA || whence == SEEK_HOLE)
		ret = file_seek(fs, ip, off, whence);
	else
		ret = -EINVAL;
	inode_runlock(ip);
	inode_put(fs, ip);
	return ret;
}

/* ---- directories ------------------------------------------------------- */

int fsops_opendir(struct fsctx *fs, uint64_t ino)
{
	struct inode *ip;
	int ret = inode_get(fs, ino, &ip);

	if (ret < 0)
		return ret;
	if (!S_ISDIR(ip->item.mode))
		ret = -ENOTDIR;
	inode_put(fs, ip);
	return ret;
}

struct rd_state {
	struct fsctx *fs;
	uint64_t dir;
	int plus;
	fsops_emit_fn emit;
	void *arg;
	int err;
};

static int rd_one(void *arg, const char *name, size_t len, uint64_t ino, uint8_t type,
		  uint64_t seq)
{
	struct rd_state *s = arg;
	char nm[DIR_NAME_MAX + 1];
	struct stat st;
	struct inode *ip = NULL;

	memcpy(nm, name, len);
	nm[len] = 0;
	struct fsctx *fs = s->fs;

	memset(&st, 0, sizeof(st));
	if (type == DT_SUBVOL) {	/* another subvolume's root directory */
		if (!subvol_linked(s->fs, s->dir, ino))
			return 0;	/* a snapshot's stub: not listed */
		fs = subvol_fs(s->fs, ino);
		ino = ROOT_DIR_INO;
		type = DT_DIR;
	}
	st.st_ino = fs->ino_base | ino;
	st.st_mode = (mode_t)type << 12;
	if (s->plus) {
		int ret = inode_get(fs, ino, &ip);
		if (ret < 0) {
			s->err = ret == -ENOENT ? -EIO : ret;
			return 1;
		}
		stat_of(fs, ip, &st);
		inode_lookup_inc(fs, ip);
	}
	int full = s->emit(s->arg, nm, &st, seq + 1);
	if (ip) {
		if (full)
			inode_forget(fs, ino, 1);
		inode_put(fs, ip);
	}
	return full;
}

int fsops_readdir(struct fsctx *fs, uint64_t ino, uint64_t off, int plus,
		  fsops_emit_fn emit, void *arg)
{
	struct rd_state s = { fs, ino, plus, emit, arg, 0 };
	struct inode *ip;
	struct stat st;
	int ret = inode_get(fs, ino, &ip);

	if (ret < 0)
		return ret;
	if (!S_ISDIR(ip->item.mode)) {
		inode_put(fs, ip);
		return -ENOTDIR;
	}
	memset(&st, 0, sizeof(st));
	st.st_mode = S_IFDIR;
	if (off == 0) {
		st.st_ino = fs->ino_base | ino;
		if (emit(arg, ".", &st, 1))
			goto done;
	}
	if (off <= 1) {
		uint64_t parent;
		ret = dir_parent(fs, ino, &parent);
		if (ret < 0)
			goto done;
		st.st_ino = fs->ino_base | parent;
		if (emit(arg, "..", &st, 2))
			goto done;
	}
	if (ip->item.nlink == 0)	/* removed while open: empty */
		goto done;
	ret = dir_iterate(fs, ino, off < DIR_SEQ_FIRST ? DIR_SEQ_FIRST : off, rd_one, &s);
	if (ret == 0)
		ret = s.err;
done:
	/* every getdents is an access, as the kernel's iterate_dir counts it */
	if (ret >= 0 && !fs->readonly) {
		bool stale;

		inode_rlock(ip);
		stale = inode_atime_stale(ip, fs->atime);
		inode_runlock(ip);
		if (stale)
			atime_touch(fs, ip);
	}
	inode_put(fs, ip);
	return ret;
}

int fsops_statfs(struct fsctx *fs, struct statvfs *sv)
{
	struct core_space sp;

	mount_space(fs->core, &sp);
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = CORE_SECTORSIZE;
	sv->f_frsize = CORE_SECTORSIZE;
	sv->f_blocks = sp.total_bytes / CORE_SECTORSIZE;
	sv->f_bfree = sp.free_bytes / CORE_SECTORSIZE;
	sv->f_bavail = sp.avail_bytes / CORE_SECTORSIZE;
	/* inodes are items: as many as there is room for, about one per 1 KiB */
	sv->f_files = sp.total_bytes / 1024 + 1024;
	sv->f_ffree = sp.avail_bytes / 1024;
	sv->f_favail = sv->f_ffree;
	sv->f_namemax = DIR_NAME_MAX;
	if (fs->readonly)
		sv->f_flag |= ST_RDONLY;
	return 0;
}

/* ---- xattrs ------------------------------------------------------------ */

static int xattr_change(struct fsctx *fs, uint64_t ino, const char *name,
			const void *value, size_t size, int flags, bool remove)
{
	struct inode *ip;
	struct txn *t;
	int ret = inode_get(fs, ino, &ip);

	if (ret < 0)
		return ret;
	ret = join_space(fs, 4, remove ? TXN_USE_RESERVE : 0, &t);
	if (ret < 0) {
		inode_put(fs, ip);
		return ret;
	}
	inode_lock(ip);
	uint32_t mode;
	ret = acl_set_check(ip, name, value, remove ? 0 : size, &mode);
	if (ret == 0 && remove)
		ret = xattr_remove(t, fs, ino, name);
	else if (ret == 0)
		ret = xattr_set(t, fs, ino, name, value, size, flags);
	if (ret == 0) {
		ip->item.mode = mode;
		inode_touch(ip, T_CTIME);
		ret = inode_update(t, fs, ip);
		if (ret < 0)
			txn_abort(t, ret, "xattr");
	}
	inode_unlock(ip);
	int e = txn_end(t);
	inode_put(fs, ip);
	return ret < 0 ? ret : e;
}

int fsops_setxattr(struct fsctx *fs, uint64_t ino, const char *name, const void *value,
		   size_t size, int flags)
{
	return xattr_change(fs, ino, name, value, size, flags, false);
}

int fsops_removexattr(struct fsctx *fs, uint64_t ino, const char *name)
{
	return xattr_change(fs, ino, name, NULL, 0, 0, true);
}

int fsops_getxattr(struct fsctx *fs, uint64_t ino, const char *name, void *buf, size_t size)
{
	struct inode *ip;
	int ret = inode_get(fs, ino, &ip);

	if (ret < 0)
		return ret;
	inode_rlock(ip);
	ret = xattr_get(fs, ino, name, buf, size);
	inode_runlock(ip);
	inode_put(fs, ip);
	return ret;
}

int fsops_listxattr(struct fsctx *fs, uint64_t ino, char *buf, size_t size)
{
	struct inode *ip;
	int ret = inode_get(fs, ino, &ip);

	if (ret < 0)
		return ret;
	inode_rlock(ip);
	ret = xattr_list(fs, ino, buf, size);
	inode_runlock(ip);
	inode_put(fs, ip);
	return ret;
}
