// SPDX-License-Identifier: MIT
/*
 * fsck_repair.c — fsck.glassfs's repairs (fsck.h): the repairs the checks
 * queued, made in one transaction of the engine and committed once.
 *
 * Each repair re-reads what it changes (the checks ran on an earlier open)
 * and skips itself, saying why, when the volume no longer looks as the
 * check saw it.  Items are written raw, in the layouts of
 * fs/format/items_format.h: the items layer's functions work on a mounted
 * fs tree (inode cache, locks, a transaction per operation), and a repair
 * pass must stay one transaction.
 */
#include "fs/cmd/fsck.h"
#include "fs/core/core_types.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/store/parity.h"
#include "fs/txn/txn.h"
#include "fs/btree/btree.h"
#include "fs/btree/node.h"
#include "fs/store/meta_io.h"
#include "fs/trees/data.h"
#include "fs/base/crc32c.h"
#include "fs/format/items_format.h"
#include "fs/format/format.h"
#include "fs/items/dir.h"
#include "fs/items/iref.h"
#include "fs/items/subvol.h"
#include "fs/ops/mount.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define SECT CORE_SECTORSIZE
#define CSUM_PER_ITEM 256u	/* as data.c: 1 KiB items fit every node size */

bool fsck_fix_safe(enum fsck_fix_kind kind)
{
	switch (kind) {
	case FIX_DEL_OBJECT:
	case FIX_DEL_DENTRY:
	case FIX_LOST_FOUND:
	case FIX_CSUM:
	case FIX_INDEX_CONFLICT:
	case FIX_DEL_BAD_ITEM:
		return false;
	default:
		return true;
	}
}

static int get_inode(struct root *r, uint64_t ino, struct inode_item *it)
{
	struct key k = { ino, KEY_INODE_ITEM, 0 };
	int n = btree_lookup(r, &k, it, sizeof(*it));

	return n == (int)sizeof(*it) ? 0 : n < 0 ? n : -EUCLEAN;
}

static int put_inode(struct txn *t, struct root *r, uint64_t ino, const struct inode_item *it)
{
	struct key k = { ino, KEY_INODE_ITEM, 0 };

	return btree_update(t, r, &k, it, sizeof(*it));
}

/* Append bytes to the item at k (creating it). */
static int item_append(struct txn *t, struct root *r, const struct key *k, const void *d,
		       uint32_t len)
{
	uint32_t max = btree_max_item_size(r);
	uint8_t *buf = malloc(max);
	int n, ret;

	if (!buf)
		return -ENOMEM;
	n = btree_lookup(r, k, buf, max);
	if (n == -ENOENT)
		n = 0;
	if (n < 0 || (uint32_t)n + len > max) {
		free(buf);
		return n < 0 ? n : -EOVERFLOW;
	}
	memcpy(buf + n, d, len);
	ret = btree_update(t, r, k, buf, (uint32_t)n + len);
	free(buf);
	return ret;
}

static void now(struct item_time *it)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	it->sec = ts.tv_sec;
	it->nsec = (uint32_t)ts.tv_nsec;
}

/* Name ino (type) in dir: DIR_ITEM, DIR_INDEX, back reference; dir's size,
 * dir_seq (and nlink for a subdirectory) follow. */
static int link_name(struct txn *t, struct root *r, uint64_t dir, uint64_t ino, uint8_t type,
		     const char *name, uint16_t len)
{
	struct inode_item d;
	uint8_t eb[sizeof(struct dir_entry) + 256];
	struct dir_entry *de = (void *)eb;
	int ret = get_inode(r, dir, &d);

	if (ret)
		return ret;
	*de = (struct dir_entry){ ino, d.dir_seq, type, len };
	memcpy(de->name, name, len);
	struct key ki = { dir, KEY_DIR_ITEM, name_hash(name, len) };
	struct key kx = { dir, KEY_DIR_INDEX, d.dir_seq };
	ret = item_append(t, r, &ki, de, (uint32_t)(sizeof(*de) + len));
	if (!ret)
		ret = btree_insert(t, r, &kx, de, (uint32_t)(sizeof(*de) + len));
	if (!ret)
		ret = iref_add(t, r, ino, dir, name, len, d.dir_seq);
	if (ret)
		return ret;
	d.dir_seq++;
	d.size += 2ull * len;
	if (type == DT_DIR)
		d.nlink++;
	d.transid = txn_transid(t);
	now(&d.mtime);
	d.ctime = d.mtime;
	return put_inode(t, r, dir, &d);
}

/* The directory /lost+found of tree r: found, or made with inode number
 * next_ino (a number no item uses). */
static int lost_found(struct txn *t, struct root *r, uint64_t next_ino, uint64_t *out)
{
	static const char name[] = "lost+found";
	uint16_t len = sizeof(name) - 1;
	struct key k = { ROOT_DIR_INO, KEY_DIR_ITEM, name_hash(name, len) };
	uint32_t max = btree_max_item_size(r);
	uint8_t *buf = malloc(max);
	int n, ret;

	if (!buf)
		return -ENOMEM;
	n = btree_lookup(r, &k, buf, max);
	for (int off = 0; n > 0 && off + (int)sizeof(struct dir_entry) <= n;) {
		struct dir_entry *de = (void *)(buf + off);
		if (de->name_len == len && !memcmp(de->name, name, len)) {
			uint64_t ino = de->ino;
			uint8_t type = de->type;
			struct inode_item it;
			free(buf);
			if (type != DT_DIR || get_inode(r, ino, &it) || !S_ISDIR(it.mode)) {
				printf("fsck.glassfs: /lost+found exists and is not a directory: "
				       "cannot reconnect inodes\n");
				return -ENOTDIR;
			}
			*out = ino;
			return 0;
		}
		off += (int)sizeof(*de) + de->name_len;
	}
	free(buf);
	struct inode_item it = { 0 };
	it.generation = it.transid = txn_transid(t);
	it.nlink = 2;
	it.mode = S_IFDIR | 0700;
	it.dir_seq = DIR_SEQ_FIRST;
	now(&it.atime);
	it.ctime = it.mtime = it.otime = it.atime;
	ret = put_inode(t, r, next_ino, &it);
	if (!ret)
		ret = link_name(t, r, ROOT_DIR_INO, next_ino, DT_DIR, name, len);
	if (!ret) {
		printf("fsck.glassfs: made /lost+found (inode %llu)\n", (unsigned long long)next_ino);
		*out = next_ino;
	}
	return ret;
}

/* Delete every item with objectid obj and type (type 0: every type). */
static int del_items(struct txn *t, struct root *r, uint64_t obj, uint8_t type)
{
	for (;;) {
		struct key k = { obj, type, 0 }, ik;
		struct path p;
		int ret;

		btree_path_init(&p);
		ret = btree_search_ge(r, &k, &p);
		if (ret == 0) {
			btree_item_key(&p, p.slots[0], &ik);
			if (ik.objectid != obj || (type && ik.type != type))
				ret = 1;
		}
		btree_path_release(&p);
		if (ret)
			return ret < 0 ? ret : 0;
		if (type == KEY_EXTENT_DATA || (!type && ik.type == KEY_EXTENT_DATA)) {
			/* the file's data references go with the item */
			struct file_extent fe;
			if (btree_lookup(r, &ik, &fe, sizeof(fe)) == (int)sizeof(fe) &&
			    (fe.type == FE_REG || fe.type == FE_PREALLOC) && fe.disk_logical &&
			    (ret = data_ref(t, fe.disk_logical, fe.disk_len, -1)))
				return ret;
		}
		ret = btree_delete(t, r, &ik);
		if (ret)
			return ret;
	}
}

static int fix_lost_found(struct txn *t, struct root *r, const struct fsck_fix *x)
{
	struct inode_item it;
	uint64_t lf;
	char name[32];
	int ret = get_inode(r, x->a, &it);

	if (ret)
		return ret;
	ret = lost_found(t, r, x->w, &lf);
	if (ret)
		return ret;
	if (lf == x->a)
		return 0;
	/* the names it had are gone: its back references with them */
	ret = del_items(t, r, x->a, KEY_INODE_REF);
	if (!ret)
		ret = del_items(t, r, x->a, KEY_INODE_EXTREF);
	if (!ret) {
		struct key ok = { ORPHAN_OBJECTID, KEY_ORPHAN_ITEM, x->a };
		ret = btree_delete(t, r, &ok);
		if (ret == -ENOENT)
			ret = 0;
	}
	int len = snprintf(name, sizeof(name), "#%llu", (unsigned long long)x->a);
	uint8_t type = dir_type_of(it.mode);
	if (!ret)
		ret = link_name(t, r, lf, x->a, type, name, (uint16_t)len);
	if (!ret && (ret = get_inode(r, x->a, &it)) == 0) {
		if (!S_ISDIR(it.mode))
			it.nlink = 1;
		else if (it.nlink < 2)
			it.nlink = 2;
		ret = put_inode(t, r, x->a, &it);
	}
	if (!ret)
		printf("fsck.glassfs: inode %llu reconnected as /lost+found/%s\n",
		       (unsigned long long)x->a, name);
	return ret;
}

/*
 * The records of an item that holds a list of them, each a fixed header
 * and a name: DIR_ITEM (struct dir_entry) and INODE_REF (struct
 * inode_ref).  Their index and size, or false past the item's end.
 */
static bool record_at(const uint8_t *buf, uint32_t n, uint32_t off, bool dirent,
		      uint64_t *index, uint32_t *sz)
{
	if (dirent) {
		const struct dir_entry *de = (const void *)(buf + off);
		if (off + sizeof(*de) > n || off + sizeof(*de) + de->name_len > n)
			return false;
		*index = de->index;
		*sz = (uint32_t)sizeof(*de) + de->name_len;
	} else {
		const struct inode_ref *ir = (const void *)(buf + off);
		if (off + sizeof(*ir) > n || off + sizeof(*ir) + ir->name_len > n)
			return false;
		*index = ir->index;
		*sz = (uint32_t)sizeof(*ir) + ir->name_len;
	}
	return true;
}

/*
 * Change the record of index `index` in item k: edit(buf, &n, off, sz,
 * arg) gets the item's bytes (n of them) and the record at off (sz
 * bytes), and returns 0 when it changed them (the item is written back,
 * or deleted when n is 0), 1 when the record is not the one (the search
 * goes on), or -errno.  No such record (or item) is not an error.
 */
static int edit_record(struct txn *t, struct root *r, const struct key *k, uint64_t index,
		       bool dirent,
		       int (*edit)(uint8_t *buf, uint32_t *n, uint32_t off, uint32_t sz,
				   const void *arg), const void *arg)
{
	uint32_t max = btree_max_item_size(r), n, off = 0, sz;
	uint8_t *buf = malloc(max);
	uint64_t idx;
	int got, ret = 0;

	if (!buf)
		return -ENOMEM;
	got = btree_lookup(r, k, buf, max);
	if (got < 0) {
		free(buf);
		return got == -ENOENT ? 0 : got;
	}
	n = (uint32_t)got;
	while (record_at(buf, n, off, dirent, &idx, &sz)) {
		if (idx == index && (ret = edit(buf, &n, off, sz, arg)) <= 0) {
			if (!ret)
				ret = n ? btree_update(t, r, k, buf, n) : btree_delete(t, r, k);
			break;
		}
		ret = 0;
		off += sz;
	}
	free(buf);
	return ret;
}

static int cut_record(uint8_t *buf, uint32_t *n, uint32_t off, uint32_t sz, const void *arg)
{
	(void)arg;
	memmove(buf + off, buf + off + sz, (size_t)*n - off - sz);
	*n -= sz;
	return 0;
}

/* Remove the record of index `index` from item k (the item goes with its
 * last record). */
static int remove_record(struct txn *t, struct root *r, const struct key *k, uint64_t index,
			 bool dirent)
{
	return edit_record(t, r, k, index, dirent, cut_record, NULL);
}

/* cut_record for the INODE_REF record whose name hashes to *arg (0: any):
 * a stale reference may share its index with the one that stays. */
static int cut_ref_named(uint8_t *buf, uint32_t *n, uint32_t off, uint32_t sz, const void *arg)
{
	const struct inode_ref *ir = (const void *)(buf + off);
	uint64_t h = *(const uint64_t *)arg;

	if (h && name_hash(ir->name, ir->name_len) != h)
		return 1;
	return cut_record(buf, n, off, sz, NULL);
}

/* DIR_ITEM entry (dir k.objectid, hash k.offset, index v) -> DIR_INDEX. */
static int fix_add_index(struct txn *t, struct root *r, const struct fsck_fix *x)
{
	uint32_t max = btree_max_item_size(r);
	uint8_t *buf = malloc(max);
	int n, ret = -ENOENT;
	uint32_t off = 0;

	if (!buf)
		return -ENOMEM;
	n = btree_lookup(r, &x->k, buf, max);
	while (n > 0 && off + sizeof(struct dir_entry) <= (uint32_t)n) {
		struct dir_entry *de = (void *)(buf + off);
		uint32_t sz = (uint32_t)sizeof(*de) + de->name_len;
		if (de->index == x->v) {
			struct key kx = { x->k.objectid, KEY_DIR_INDEX, x->v };
			struct inode_item it;
			if (de->type != DT_SUBVOL && get_inode(r, de->ino, &it)) {
				ret = -EAGAIN;	/* names a missing inode: removed instead */
				break;
			}
			ret = btree_insert(t, r, &kx, de, sz);
			break;
		}
		off += sz;
	}
	free(buf);
	return ret;
}

/* DIR_INDEX k -> its entry in the DIR_ITEM of its name's hash. */
static int fix_add_dentry(struct txn *t, struct root *r, const struct fsck_fix *x)
{
	uint8_t eb[sizeof(struct dir_entry) + 256];
	struct dir_entry *de = (void *)eb;
	int n = btree_lookup(r, &x->k, eb, sizeof(eb));

	if (n < (int)sizeof(*de))
		return n < 0 ? n : -EUCLEAN;
	struct key ki = { x->k.objectid, KEY_DIR_ITEM, name_hash(de->name, de->name_len) };
	return item_append(t, r, &ki, eb, (uint32_t)n);
}

/* DIR_INDEX x->k names inode x->a: its back reference, from the entry
 * (in an INODE_EXTREF when the INODE_REF is full, as link does). */
static int fix_add_ref(struct txn *t, struct root *r, const struct fsck_fix *x)
{
	uint8_t eb[sizeof(struct dir_entry) + 256];
	struct dir_entry *de = (void *)eb;
	int n = btree_lookup(r, &x->k, eb, sizeof(eb));

	if (n < (int)sizeof(*de) || de->ino != x->a)
		return n < 0 ? n : -EUCLEAN;
	return iref_add(t, r, x->a, x->k.objectid, de->name, de->name_len, x->k.offset);
}

static int set_type(uint8_t *buf, uint32_t *n, uint32_t off, uint32_t sz, const void *arg)
{
	const struct fsck_fix *x = arg;
	struct dir_entry *de = (void *)(buf + off);

	(void)n, (void)sz;
	if (de->ino != x->a)
		return 1;
	printf("fsck.glassfs: dir %llu: entry '%.*s' (inode %llu): type %u -> %u, as its mode "
	       "says\n", (unsigned long long)x->k.objectid, (int)de->name_len, de->name,
	       (unsigned long long)x->a, de->type, (unsigned)x->w);
	de->type = (uint8_t)x->w;
	return 0;
}

/* The entry of index x->v naming x->a in item x->k (DIR_ITEM or
 * DIR_INDEX): its type = x->w. */
static int fix_dentry_type(struct txn *t, struct root *r, const struct fsck_fix *x)
{
	return edit_record(t, r, &x->k, x->v, true, set_type, x);
}

/* Does inode ino exist and have a back reference (ino, dir) of this index
 * and name (plain or extended)? */
static bool backref_says(struct root *r, uint64_t ino, uint64_t dir, uint64_t index,
			 const char *name, uint16_t len)
{
	struct inode_item it;
	uint64_t idx;

	return !get_inode(r, ino, &it) && !iref_find(r, ino, dir, name, len, &idx) && idx == index;
}

/*
 * DIR_INDEX x->k and the entry of the same index in DIR_ITEM (dir, hash
 * x->b) name different names or inodes.  The side whose inode's back
 * reference names it with this index is kept and the other side made from
 * it; when both or neither are confirmed, which is right cannot be told
 * and both are left.  The inode of the side dropped loses that name (the
 * next pass reconnects it if it has no other).
 */
static int fix_index_conflict(struct txn *t, struct root *r, const struct fsck_fix *x)
{
	uint32_t max = btree_max_item_size(r), off = 0, sz = 0;
	uint8_t ib[sizeof(struct dir_entry) + 256], *buf = malloc(max);
	struct dir_entry *xi = (void *)ib, *de = NULL;
	struct key ki = { x->k.objectid, KEY_DIR_ITEM, x->b };
	uint64_t idx;
	int n, ni, ret;

	if (!buf)
		return -ENOMEM;
	ni = btree_lookup(r, &x->k, ib, sizeof(ib));
	n = btree_lookup(r, &ki, buf, max);
	while (n > 0 && record_at(buf, (uint32_t)n, off, true, &idx, &sz)) {
		if (idx == x->k.offset) {
			de = (void *)(buf + off);
			break;
		}
		off += sz;
	}
	if (ni < (int)sizeof(*xi) || !de) {
		free(buf);
		return ni < 0 ? ni : n < 0 ? n : -EUCLEAN;
	}
	bool index_ok = xi->type != DT_SUBVOL &&
		backref_says(r, xi->ino, x->k.objectid, x->k.offset, xi->name, xi->name_len);
	bool item_ok = de->type != DT_SUBVOL &&
		backref_says(r, de->ino, x->k.objectid, x->k.offset, de->name, de->name_len);
	if (index_ok == item_ok) {
		printf("fsck.glassfs: dir %llu: index %llu names '%.*s' (inode %llu) in DIR_INDEX and "
		       "'%.*s' (inode %llu) in DIR_ITEM, and %s back references confirm it: which is "
		       "right cannot be told, left as found\n", (unsigned long long)x->k.objectid,
		       (unsigned long long)x->k.offset, (int)xi->name_len, xi->name,
		       (unsigned long long)xi->ino, (int)de->name_len, de->name,
		       (unsigned long long)de->ino, index_ok ? "both" : "neither");
		free(buf);
		return -EAGAIN;
	}
	printf("fsck.glassfs: dir %llu: index %llu: kept '%.*s' (inode %llu, its back reference "
	       "agrees), dropped '%.*s' (inode %llu)\n", (unsigned long long)x->k.objectid,
	       (unsigned long long)x->k.offset,
	       index_ok ? (int)xi->name_len : (int)de->name_len, index_ok ? xi->name : de->name,
	       (unsigned long long)(index_ok ? xi->ino : de->ino),
	       index_ok ? (int)de->name_len : (int)xi->name_len, index_ok ? de->name : xi->name,
	       (unsigned long long)(index_ok ? de->ino : xi->ino));
	if (index_ok) {
		/* the DIR_ITEM entry goes; the index's name gets its own */
		ret = remove_record(t, r, &ki, x->k.offset, true);
		struct key kn = { x->k.objectid, KEY_DIR_ITEM, name_hash(xi->name, xi->name_len) };
		if (!ret)
			ret = item_append(t, r, &kn, ib, (uint32_t)ni);
	} else {
		ret = btree_update(t, r, &x->k, de, sz);
	}
	free(buf);
	return ret;
}

/* The item x->k (tree x->tree) copied to (a, w, v): a ROOT_REF's missing
 * ROOT_BACKREF, or the converse (the same bytes, by format). */
static int fix_copy_item(struct txn *t, struct root *r, const struct fsck_fix *x)
{
	uint32_t max = btree_max_item_size(r);
	uint8_t *buf = malloc(max);
	struct key to = { x->a, (uint8_t)x->w, x->v };
	int n, ret;

	if (!buf)
		return -ENOMEM;
	n = btree_lookup(r, &x->k, buf, max);
	ret = n < 0 ? n : btree_insert(t, r, &to, buf, (uint32_t)n);
	free(buf);
	if (!ret)
		printf("fsck.glassfs: item (%llu %u %llu) made from its twin (%llu %u %llu)\n",
		       (unsigned long long)to.objectid, to.type, (unsigned long long)to.offset,
		       (unsigned long long)x->k.objectid, x->k.type,
		       (unsigned long long)x->k.offset);
	return ret;
}

/*
 * The names of DIR_ITEM or XATTR_ITEM x->k that hash to another slot, each
 * appended to the item of its own slot; the item keeps the rest (or goes).
 */
static int fix_refile(struct txn *t, struct root *r, const struct fsck_fix *x)
{
	uint32_t max = btree_max_item_size(r), off = 0, kept = 0, moved = 0;
	uint8_t *buf = malloc(max), *keep = malloc(max);
	bool dir = x->k.type == KEY_DIR_ITEM;
	int n, ret = 0;

	if (!buf || !keep) {
		free(buf);
		free(keep);
		return -ENOMEM;
	}
	n = btree_lookup(r, &x->k, buf, max);
	while (n > 0 && !ret) {
		const char *name;
		uint32_t len, sz;
		if (dir) {
			const struct dir_entry *de = (const void *)(buf + off);
			if (off + sizeof(*de) > (uint32_t)n)
				break;
			name = de->name, len = de->name_len;
			sz = (uint32_t)sizeof(*de) + len;
		} else {
			const struct xattr_entry *xe = (const void *)(buf + off);
			if (off + sizeof(*xe) > (uint32_t)n)
				break;
			name = xe->name, len = xe->name_len;
			sz = (uint32_t)sizeof(*xe) + len + xe->value_len;
		}
		if (off + sz > (uint32_t)n)
			break;
		struct key to = { x->k.objectid, x->k.type, name_hash(name, len) };
		if (to.offset == x->k.offset) {
			memcpy(keep + kept, buf + off, sz);
			kept += sz;
		} else {
			printf("fsck.glassfs: %s '%.*s' of %llu moved from hash slot %llu to %llu\n",
			       dir ? "entry" : "xattr", (int)len, name,
			       (unsigned long long)x->k.objectid, (unsigned long long)x->k.offset,
			       (unsigned long long)to.offset);
			ret = item_append(t, r, &to, buf + off, sz);
			moved++;
		}
		off += sz;
	}
	if (!ret && moved)
		ret = kept ? btree_update(t, r, &x->k, keep, kept) : btree_delete(t, r, &x->k);
	free(buf);
	free(keep);
	return n < 0 && n != -ENOENT ? n : ret;
}

/* The generation in the header of the node at bytenr (what its extent
 * item records: scrub holds the node to it); dflt when it cannot be read. */
static uint64_t node_gen(struct core *c, uint64_t bytenr, uint64_t dflt)
{
	struct node_expect e = { c->nodesize, bytenr, c->sb.fsid, 0, -1, 0, 0 };
	uint8_t *b = malloc(c->nodesize);
	uint64_t g = dflt;

	if (b && meta_read(c, bytenr, b, node_verify_quiet, &e) == 0)
		g = nb_generation(b);
	free(b);
	return g;
}

/* rebuilt: the free-space tree was rebuilt in this pass (a leaked node is
 * free already, and may hold a node this pass wrote) */
static int fix_meta_refs(struct txn *t, struct core *c, const struct fsck_fix *x, bool rebuilt)
{
	struct root *ext = core_tree(c, CT_EXTENT);
	struct key k = { x->a, KEY_METADATA_ITEM, x->k.offset };
	struct extent_item ei;
	int n = btree_lookup(ext, &k, &ei, sizeof(ei));

	if (x->v == 0) {
		if (n == -ENOENT)
			return 0;
		int ret = btree_delete(t, ext, &k);
		/* without a rebuild its space is marked used (nothing in this
		 * pass can have taken it): free it after the commit */
		if (!ret && !rebuilt && alloc_is_used(c, x->a, c->nodesize))
			alloc_pin(c, x->a, c->nodesize);
		return ret;
	}
	if (n != (int)sizeof(ei))
		ei = (struct extent_item){ 0, txn_transid(t), EXTENT_FLAG_TREE_BLOCK, x->w };
	/* the generation that wrote it, as allocation records (and an item
	 * that says another is put right) */
	ei.generation = node_gen(c, x->a, ei.generation);
	ei.refs = x->v;
	return btree_update(t, ext, &k, &ei, sizeof(ei));
}

static int fix_data_refs(struct txn *t, struct core *c, const struct fsck_fix *x)
{
	struct key k = { x->a, KEY_EXTENT_ITEM, x->b };
	struct extent_item ei;
	int n = btree_lookup(core_tree(c, CT_EXTENT), &k, &ei, sizeof(ei));

	if (n == (int)sizeof(ei)) {
		/* through the engine's delayed references: at 0 the extent and
		 * its checksums are freed as an unlink frees them */
		if (ei.refs == x->v)
			return 0;
		return data_ref(t, x->a, x->b, (int64_t)x->v - (int64_t)ei.refs);
	}
	if (n != -ENOENT)
		return n < 0 ? n : -EUCLEAN;
	if (!alloc_is_used(c, x->a, x->b)) {
		printf("fsck.glassfs: data extent %llu+%llu: its space is free (rebuilt in the "
		       "next pass)\n", (unsigned long long)x->a, (unsigned long long)x->b);
		return -EAGAIN;
	}
	ei = (struct extent_item){ x->v, txn_transid(t), EXTENT_FLAG_DATA, 0 };
	return btree_insert(t, core_tree(c, CT_EXTENT), &k, &ei, sizeof(ei));
}

/*
 * The bytes of mirrored data [logical, +len) (one chunk element: dup,
 * raid1, raid1c3/4, a raid10 element) into out, read from every copy.
 * A sector whose copies differ is taken from a strict majority of them
 * (raid1c3: two of three), the others rewritten with it; with no
 * majority (two copies that differ) which is right cannot be told:
 * -EAGAIN.  One copy: nothing to verify against, -EAGAIN too.
 */
static int csum_piece_mirror(struct core *c, const struct fsck_fix *x, uint64_t logical,
			     uint64_t len, uint8_t *out)
{
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	uint8_t *buf[CHUNK_MAX_STRIPES] = { 0 };
	int ncp = chunk_map_lookup(c, logical, len, cp, NULL), ret = 0;

	if (ncp < 0)
		return ncp;
	if (ncp < 2) {
		printf("fsck.glassfs: data %llu+%llu has no checksums and one copy: "
		       "nothing to verify it against, left as found\n",
		       (unsigned long long)x->a, (unsigned long long)x->b);
		return -EAGAIN;
	}
	for (int m = 0; m < ncp && !ret; m++) {
		buf[m] = malloc(len);
		if (!buf[m])
			ret = -ENOMEM;
		else
			ret = dev_read(cp[m].dev, cp[m].physical, buf[m], len);
	}
	for (uint64_t off = 0; off < len && !ret; off += SECT) {
		int best = 0, votes = 0;
		for (int m = 0; m < ncp; m++) {
			int v = 0;
			for (int o = 0; o < ncp; o++)
				v += !memcmp(buf[m] + off, buf[o] + off, SECT);
			if (v > votes) {
				votes = v;
				best = m;
			}
		}
		if (votes == ncp) {
			memcpy(out + off, buf[best] + off, SECT);
			continue;
		}
		if (2 * votes <= ncp) {
			printf("fsck.glassfs: data %llu+%llu has no checksums and its copies "
			       "differ at %llu: which is right cannot be told, left as found\n",
			       (unsigned long long)x->a, (unsigned long long)x->b,
			       (unsigned long long)(logical + off));
			ret = -EAGAIN;
			break;
		}
		for (int m = 0; m < ncp && !ret; m++) {
			if (!memcmp(buf[m] + off, buf[best] + off, SECT))
				continue;
			ret = dev_write(cp[m].dev, cp[m].physical + off, buf[best] + off, SECT);
			printf("fsck.glassfs: data %llu: the copy on %s differs from the %d that agree: "
			       "%s\n", (unsigned long long)(logical + off), cp[m].dev->path, votes,
			       ret ? strerror(-ret) : "rewritten from them");
		}
		memcpy(out + off, buf[best] + off, SECT);
	}
	for (int m = 0; m < ncp; m++)
		free(buf[m]);
	return ret;
}

/*
 * Checksums for data a+b that has none, from bytes that can be trusted
 * without them: the copies of a mirrored chunk must agree sector by
 * sector (or a majority of three or four copies outvotes the odd one,
 * which is rewritten); each raid10 element is checked on its own pair;
 * a raid5/6 row must agree with its parity (raid6 blames and rebuilds a
 * single bad column, parity.c's parity_read_unsummed).  What cannot be
 * told right from wrong (one copy, two copies that differ, a raid5 row
 * that disagrees) is left without a checksum (the check keeps reporting it).
 */
static int fix_csum(struct txn *t, struct core *c, const struct fsck_fix *x)
{
	uint64_t nsect = x->b / SECT;
	uint32_t *cs = NULL;
	uint8_t *data = malloc(x->b ? x->b : 1);
	int ret = 0;

	cs = malloc(nsect * sizeof(*cs) + 1);
	if (!cs || !data) {
		ret = -ENOMEM;
		goto out;
	}
	if (chunk_map_is_parity(c, x->a)) {
		uint64_t fixed = 0, where = x->a;
		ret = parity_read_unsummed(c, x->a, x->b, data, false, &fixed, &where);
		if (ret == -EILSEQ) {
			printf("fsck.glassfs: data %llu+%llu has no checksums and the row at %llu "
			       "disagrees with its parity: which column is wrong cannot be told, left "
			       "as found\n", (unsigned long long)x->a, (unsigned long long)x->b,
			       (unsigned long long)where);
			ret = -EAGAIN;
		} else if (!ret && fixed) {
			printf("fsck.glassfs: data %llu+%llu: %llu sector(s) that disagreed with their "
			       "row's parity rebuilt from the rest of the row\n",
			       (unsigned long long)x->a, (unsigned long long)x->b,
			       (unsigned long long)fixed);
		}
	} else {
		for (uint64_t off = 0; off < x->b && !ret;) {
			uint64_t n = chunk_map_piece(c, x->a + off, x->b - off);
			ret = csum_piece_mirror(c, x, x->a + off, n, data + off);
			off += n;
		}
	}
	for (uint64_t i = 0; i < nsect && !ret; i++)
		cs[i] = crc32c(0, data + i * SECT, SECT);
	for (uint64_t i = 0; i < nsect && !ret; i += CSUM_PER_ITEM) {
		uint64_t n = nsect - i < CSUM_PER_ITEM ? nsect - i : CSUM_PER_ITEM;
		struct key k = { CSUM_OBJECTID, KEY_EXTENT_CSUM, x->a + i * SECT };
		ret = btree_insert(t, core_tree(c, CT_CSUM), &k, cs + i, (uint32_t)(n * CSUM_SIZE));
	}
out:
	free(data);
	free(cs);
	return ret;
}

/* Free-space tree rebuild: every block group empty, then each range in use
 * claimed, before the transaction allocates anything; the commit rewrites
 * the bitmaps and block group items. */
struct bgr { uint64_t start, len; };
struct bgv { struct bgr *v; int n; };

static int collect_bg(const struct bgroup *bg, void *arg)
{
	struct bgv *b = arg;
	struct bgr *nv = realloc(b->v, (size_t)(b->n + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	b->v = nv;
	b->v[b->n++] = (struct bgr){ bg->start, bg->len };
	return 0;
}

static int rebuild_free_space(struct core *c, const struct fsck_fix *v, size_t n)
{
	struct bgv b = { NULL, 0 };
	int ret = alloc_for_each_bg(c, collect_bg, &b);

	if (ret) {
		free(b.v);
		return ret;
	}
	for (int i = 0; i < b.n; i++)
		alloc_free_now(c, b.v[i].start, b.v[i].len);
	free(b.v);
	for (size_t i = 0; i < n; i++) {
		if (v[i].kind != FIX_USED)
			continue;
		ret = alloc_claim(c, v[i].a, v[i].b);
		if (ret) {
			printf("fsck.glassfs: free-space rebuild: %llu+%llu cannot be claimed (%s): "
			       "two extents overlap\n", (unsigned long long)v[i].a,
			       (unsigned long long)v[i].b, strerror(-ret));
			return -EUCLEAN;
		}
	}
	printf("fsck.glassfs: free-space tree rebuilt from the extents in use\n");
	return 0;
}

int fsck_repair_apply(struct core *c, const struct fsck_fix *v, size_t n)
{
	struct txn *t;
	bool fst = false;
	int made = 0, ret;

	for (size_t i = 0; i < n; i++)
		fst |= v[i].kind == FIX_USED;
	if (fst && (ret = rebuild_free_space(c, v, n)))
		return ret;
	made += fst;
	ret = txn_join(c, (unsigned)(n * 4 + 16), TXN_USE_RESERVE, &t);
	if (ret)
		return ret;
	for (size_t i = 0; i < n && !ret; i++) {
		const struct fsck_fix *x = &v[i];
		struct root *r = subvol_root(c, x->tree ? x->tree : FS_TREE_OBJECTID);
		struct inode_item it;

		if (!r) {
			ret = -ENOENT;
			break;
		}
		switch (x->kind) {
		case FIX_INODE_NLINK:
		case FIX_INODE_SIZE:
		case FIX_INODE_NBYTES:
			ret = get_inode(r, x->a, &it);
			if (ret)
				break;
			if (x->kind == FIX_INODE_NLINK)
				it.nlink = (uint32_t)x->v;
			else if (x->kind == FIX_INODE_SIZE)
				it.size = x->v;
			else
				it.nbytes = x->v;
			ret = put_inode(t, r, x->a, &it);
			break;
		case FIX_DEL_ITEM:
			ret = btree_delete(t, r, &x->k);
			if (ret == -ENOENT)
				ret = 0;
			break;
		case FIX_DEL_OBJECT:
			ret = del_items(t, r, x->a, 0);
			break;
		case FIX_DEL_DENTRY:
			ret = remove_record(t, r, &x->k, x->v, true);
			break;
		case FIX_ADD_INDEX:
			ret = fix_add_index(t, r, x);
			break;
		case FIX_ADD_DENTRY:
			ret = fix_add_dentry(t, r, x);
			break;
		case FIX_ADD_REF:
			ret = fix_add_ref(t, r, x);
			break;
		case FIX_DEL_REF:
			if (x->k.type == KEY_INODE_EXTREF) {
				ret = iref_ext_del_index(t, r, x->a, x->k.offset, x->b, x->v);
				if (ret == -ENOENT)	/* gone since the check: as remove_record */
					ret = 0;
			} else {
				ret = edit_record(t, r, &x->k, x->v, false, cut_ref_named, &x->w);
			}
			break;
		case FIX_LOST_FOUND:
			ret = fix_lost_found(t, r, x);
			break;
		case FIX_META_REFS:
			ret = fix_meta_refs(t, c, x, fst);
			break;
		case FIX_DATA_REFS:
			ret = fix_data_refs(t, c, x);
			break;
		case FIX_USED:
			continue;
		case FIX_CSUM:
			ret = fix_csum(t, c, x);
			break;
		case FIX_SUPER:
			printf("fsck.glassfs: superblock copies: rewritten by this pass's commit\n");
			break;
		case FIX_DENTRY_TYPE:
			ret = fix_dentry_type(t, r, x);
			break;
		case FIX_INDEX_CONFLICT:
			ret = fix_index_conflict(t, r, x);
			break;
		case FIX_DEL_BAD_ITEM:
			ret = btree_delete(t, r, &x->k);
			if (ret == -ENOENT)
				ret = 0;
			else if (!ret)
				printf("fsck.glassfs: removed malformed or unknown item (%llu %u %llu) "
				       "of tree %llu\n", (unsigned long long)x->k.objectid, x->k.type,
				       (unsigned long long)x->k.offset, (unsigned long long)x->tree);
			break;
		case FIX_COPY_ITEM:
			ret = fix_copy_item(t, r, x);
			break;
		case FIX_REFILE:
			ret = fix_refile(t, r, x);
			break;
		case FIX_EXTREF_FEATURE:
			iref_feature_extref(c);
			printf("fsck.glassfs: extended refs kept: the superblock takes "
			       "SUPER_FEAT_EXTREF at this pass's commit\n");
			break;
		}
		if (ret == -EAGAIN) {	/* said why; left for the next pass or for good */
			ret = 0;
			continue;
		}
		if (!ret)
			made++;
	}
	if (ret) {
		printf("fsck.glassfs: repair failed (%s): the pass is abandoned, the volume is "
		       "left at its last commit\n", strerror(-ret));
		txn_abort(t, ret, "fsck repair");
		txn_end(t);
		return ret;
	}
	ret = txn_end(t);
	if (!ret)
		ret = txn_commit(c, COMMIT_OTHER);
	return ret ? ret : made;
}
