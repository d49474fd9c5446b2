// SPDX-License-Identifier: MIT
/*
 * fsctx.c — open one fs tree as a struct fsctx (inode.h): create its root
 * directory on first mount, replay the fsync log, free orphans, find the
 * next inode number.  The default tree is opened by fsops_mount (fs/ops),
 * a subvolume's on first use by subvol_fs (subvol.c), so it lives here,
 * below both.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/items/inode.h"
#include "fs/items/log.h"
#include "fs/items/subvol.h"
#include "fs/btree/btree.h"
#include "fs/txn/txn.h"

static int create_root(struct fsctx *fs)
{
	struct txn *t;
	struct inode_item it;
	struct key k = mkkey(ROOT_DIR_INO, KEY_INODE_ITEM, 0);
	int ret = fs->readonly ? -EROFS : txn_join(fs->core, 2, 0, &t);

	if (ret < 0)
		return ret;
	memset(&it, 0, sizeof(it));
	it.generation = it.transid = txn_transid(t);
	it.mode = S_IFDIR | 0755;
	it.nlink = 2;
	it.dir_seq = DIR_SEQ_FIRST;
	inode_time_now(&it.otime);
	it.atime = it.mtime = it.ctime = it.otime;
	ret = btree_insert(t, fs->root, &k, &it, sizeof(it));
	if (ret < 0)
		txn_abort(t, ret, "create_root");
	int e = txn_end(t);
	ret = ret < 0 ? ret : e;
	if (ret == 0)
		ret = txn_commit(fs->core, COMMIT_OTHER);
	return ret;
}

int fsctx_mount_tree(struct core *c, const struct core_opts *o, uint64_t tree_id,
		     bool rdonly, struct fsctx **out)
{
	struct fsctx *fs = calloc(1, sizeof(*fs));
	struct key k = mkkey(ROOT_DIR_INO, KEY_INODE_ITEM, 0);
	int ret;

	if (!fs)
		return -ENOMEM;
	fs->core = c;
	fs->subvol = tree_id;
	fs->ino_base = subvol_nodeid(tree_id, 0);
	fs->root = subvol_root(c, tree_id);
	if (!fs->root) {
		fprintf(stderr, "glassfs: the volume has no fs tree (id %llu)\n",
			(unsigned long long)tree_id);
		free(fs);
		return tree_id == FS_TREE_OBJECTID ? -EUCLEAN : -ENOENT;
	}
	fs->locktype = o->locktype;
	fs->atime = o->atime;
	fs->ino_block = o->inode_spread ? INODE_SPREAD_BLOCK : 0;
	fs->readonly = o->readonly || core_readonly(c) || rdonly;
	uint32_t maxitem = btree_max_item_size(fs->root);
	fs->inline_max = 2048;
	if (maxitem < FE_INLINE_HDR + 2048 + 256)
		fs->inline_max = maxitem > FE_INLINE_HDR + 256 ? maxitem - FE_INLINE_HDR - 256 : 0;
	ret = inode_cache_init(fs);
	if (ret < 0)
		goto fail;

	ret = btree_lookup(fs->root, &k, &(char){0}, 0);
	if (ret == -ENOENT) {
		if (fs->readonly) {
			fprintf(stderr, "glassfs: no root directory, and mounted read-only\n");
			ret = -EROFS;
			goto fail;
		}
		ret = create_root(fs);
	}
	if (ret < 0) {
		fprintf(stderr, "glassfs: reading the root directory: %s\n", strerror(-ret));
		goto fail;
	}
	if (fs->readonly && log_pending(c))
		fprintf(stderr, "glassfs: an fsync log from a crash is pending; mounted read-only it is "
			"not replayed: files fsync'd after the last commit show their committed state\n");
	if (!fs->readonly) {
		/* files fsync'd after the last commit before a crash: their
		 * log must be replayed before anything else changes the tree */
		ret = log_replay(fs);
		if (ret < 0) {
			fprintf(stderr, "glassfs: the fsync log cannot be replayed (%s): not mounting; "
				"fsck.glassfs shows the damage, `-o ro` mounts the last commit\n",
				strerror(-ret));
			goto fail;
		}
		/* damage here must not keep the rest of the volume unreachable */
		ret = inode_orphan_cleanup(fs);
		if (ret < 0)
			fprintf(stderr, "glassfs: orphan cleanup failed (%s); orphans stay until the next mount\n",
				strerror(-ret));
		else if (ret > 0)
			fprintf(stderr, "glassfs: freed %d orphan inode(s) (unlinked while open, then crash or unmount)\n", ret);
	}
	ret = inode_init_next(fs);
	if (ret < 0) {
		if (fs->readonly)
			goto fail;
		fprintf(stderr, "glassfs: cannot find the next free inode number (%s): mounting read-only\n",
			strerror(-ret));
		fs->readonly = true;
	}
	*out = fs;
	return 0;
fail:
	inode_cache_destroy(fs);
	free(fs);
	return ret;
}

int fsctx_search_ge(struct fsctx *fs, const struct key *k, struct path *p)
{
	return btree_search_ge(fs->root, k, p);
}

int fsctx_read_item(struct fsctx *fs, const struct key *k, uint32_t guess, void **out)
{
	uint32_t cap = guess;

	for (;;) {
		void *buf = malloc(cap);
		if (!buf)
			return -ENOMEM;
		int ret = btree_lookup(fs->root, k, buf, cap);
		if (ret < 0 || (uint32_t)ret <= cap) {
			if (ret < 0)
				free(buf);
			else
				*out = buf;
			return ret;
		}
		free(buf);
		cap = (uint32_t)ret;
	}
}
