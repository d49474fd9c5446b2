// SPDX-License-Identifier: MIT
/*
 * iref.c — back references of inodes: INODE_REF and INODE_EXTREF items
 * (iref.h; layouts in items_format.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fs/core/core_types.h"
#include "fs/btree/btree.h"
#include "fs/format/format.h"
#include "fs/format/items_format.h"
#include "fs/items/iref.h"

bool iref_entry(const uint8_t *b, uint32_t n, uint32_t off, bool ext, struct iref_ent *e)
{
	if (ext) {
		const struct inode_extref *x = (const void *)(b + off);
		if ((uint64_t)off + sizeof(*x) > n || (uint64_t)off + sizeof(*x) + x->name_len > n)
			return false;
		*e = (struct iref_ent){ x->parent, x->index, x->name, x->name_len,
					(uint32_t)sizeof(*x) + x->name_len };
	} else {
		const struct inode_ref *r = (const void *)(b + off);
		if ((uint64_t)off + sizeof(*r) > n || (uint64_t)off + sizeof(*r) + r->name_len > n)
			return false;
		*e = (struct iref_ent){ 0, r->index, r->name, r->name_len,
					(uint32_t)sizeof(*r) + r->name_len };
	}
	return true;
}

/* The offset of (parent, name) in run b (n bytes), or -1; *e the entry. */
static long run_find(const uint8_t *b, uint32_t n, bool ext, uint64_t parent, const char *name,
		     size_t len, struct iref_ent *e)
{
	for (uint32_t off = 0; iref_entry(b, n, off, ext, e); off += e->size)
		if ((!ext || e->parent == parent) && e->len == len && !memcmp(e->name, name, len))
			return off;
	return -1;
}

static struct key ref_key(uint64_t ino, uint64_t parent)
{
	return (struct key){ ino, KEY_INODE_REF, parent };
}

static struct key ext_key(uint64_t ino, uint64_t parent, const char *name, size_t len)
{
	return (struct key){ ino, KEY_INODE_EXTREF, extref_hash(parent, name, len) };
}

/* Item k into buf (btree_max_item_size bytes): its size, 0 when absent. */
static int get(struct root *r, const struct key *k, uint8_t *buf)
{
	int n = btree_lookup(r, k, buf, btree_max_item_size(r));

	return n == -ENOENT ? 0 : n;
}

/* Bytes item k would hold after losing (parent, gone): its size, less
 * that entry's when it holds it. */
static int size_without(struct root *r, const struct key *k, bool ext, uint64_t parent,
			const char *gone, size_t gone_len, uint8_t *buf)
{
	struct iref_ent e;
	int n = get(r, k, buf);

	if (n > 0 && gone && run_find(buf, (uint32_t)n, ext, parent, gone, gone_len, &e) >= 0)
		n -= (int)e.size;
	return n;
}

int iref_room(struct root *r, uint64_t ino, uint64_t parent, const char *name, size_t len,
	      const char *gone, size_t gone_len)
{
	uint32_t max = btree_max_item_size(r);
	uint8_t *buf = malloc(max);
	struct key k = ref_key(ino, parent);
	int n, ret = -EMLINK;

	if (!buf)
		return -ENOMEM;
	n = size_without(r, &k, false, parent, gone, gone_len, buf);
	if (n >= 0 && (uint64_t)n + sizeof(struct inode_ref) + len <= max)
		ret = 0;
	if (n >= 0 && ret) {
		k = ext_key(ino, parent, name, len);
		n = size_without(r, &k, true, parent, gone, gone_len, buf);
		if (n >= 0 && (uint64_t)n + sizeof(struct inode_extref) + len <= max)
			ret = 0;
	}
	free(buf);
	return n < 0 ? n : ret;
}

int iref_add(struct txn *t, struct root *r, uint64_t ino, uint64_t parent, const char *name,
	     size_t len, uint64_t index)
{
	uint32_t max = btree_max_item_size(r);
	uint8_t *buf = malloc(max);
	struct key k = ref_key(ino, parent);
	int n, ret;

	if (!buf)
		return -ENOMEM;
	n = get(r, &k, buf);
	if (n >= 0 && (uint64_t)n + sizeof(struct inode_ref) + len <= max) {
		struct inode_ref *e = (void *)(buf + n);
		e->index = index;
		e->name_len = (uint16_t)len;
		memcpy(e->name, name, len);
		n += (int)(sizeof(*e) + len);
	} else if (n >= 0) {
		k = ext_key(ino, parent, name, len);
		n = get(r, &k, buf);
		if (n >= 0 && (uint64_t)n + sizeof(struct inode_extref) + len > max)
			n = -EMLINK;
		if (n >= 0) {
			struct inode_extref *e = (void *)(buf + n);
			e->parent = parent;
			e->index = index;
			e->name_len = (uint16_t)len;
			memcpy(e->name, name, len);
			n += (int)(sizeof(*e) + len);
			/* before the handle ends: the commit of this
			 * transaction reads it after every handle ended */
			iref_feature_extref(r->core);
		}
	}
	ret = n < 0 ? n : btree_update(t, r, &k, buf, (uint32_t)n);
	free(buf);
	return ret;
}

/* Cut the entry at off (size bytes) from item k of n bytes in buf: the
 * item goes with its last entry. */
static int cut_at(struct txn *t, struct root *r, const struct key *k, uint8_t *buf, uint32_t n,
		  uint32_t off, uint32_t size)
{
	if (n == size)
		return btree_delete(t, r, k);
	memmove(buf + off, buf + off + size, (size_t)(n - off - size));
	return btree_update(t, r, k, buf, n - size);
}

/* Cut the entry of (parent, name) from item k.  0, -ENOENT (no item, or
 * not in it), -errno. */
static int cut(struct txn *t, struct root *r, const struct key *k, bool ext, uint64_t parent,
	       const char *name, size_t len, uint64_t *index, uint8_t *buf)
{
	struct iref_ent e;
	int n = get(r, k, buf);
	long off;

	if (n <= 0)
		return n < 0 ? n : -ENOENT;
	off = run_find(buf, (uint32_t)n, ext, parent, name, len, &e);
	if (off < 0)
		return -ENOENT;
	if (index)
		*index = e.index;
	return cut_at(t, r, k, buf, (uint32_t)n, (uint32_t)off, e.size);
}

int iref_del(struct txn *t, struct root *r, uint64_t ino, uint64_t parent, const char *name,
	     size_t len, uint64_t *index)
{
	uint8_t *buf = malloc(btree_max_item_size(r));
	struct key k = ref_key(ino, parent);
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = cut(t, r, &k, false, parent, name, len, index, buf);
	if (ret == -ENOENT) {
		k = ext_key(ino, parent, name, len);
		ret = cut(t, r, &k, true, parent, name, len, index, buf);
	}
	free(buf);
	return ret;
}

int iref_find(struct root *r, uint64_t ino, uint64_t parent, const char *name, size_t len,
	      uint64_t *index)
{
	uint8_t *buf = malloc(btree_max_item_size(r));
	struct key k = ref_key(ino, parent);
	struct iref_ent e;
	int n, ret = -ENOENT;

	if (!buf)
		return -ENOMEM;
	for (int ext = 0; ext < 2 && ret == -ENOENT; ext++) {
		if (ext)
			k = ext_key(ino, parent, name, len);
		n = get(r, &k, buf);
		if (n < 0)
			ret = n;
		else if (run_find(buf, (uint32_t)n, ext, parent, name, len, &e) >= 0) {
			*index = e.index;
			ret = 0;
		}
	}
	free(buf);
	return ret;
}

int iref_ext_del_index(struct txn *t, struct root *r, uint64_t ino, uint64_t hash,
		       uint64_t parent, uint64_t index)
{
	uint8_t *buf = malloc(btree_max_item_size(r));
	struct key k = { ino, KEY_INODE_EXTREF, hash };
	struct iref_ent e;
	int n, ret = -ENOENT;

	if (!buf)
		return -ENOMEM;
	n = get(r, &k, buf);
	for (uint32_t off = 0; n > 0 && iref_entry(buf, (uint32_t)n, off, true, &e); off += e.size) {
		if (e.parent == parent && e.index == index) {
			ret = cut_at(t, r, &k, buf, (uint32_t)n, off, e.size);
			break;
		}
	}
	free(buf);
	return n < 0 ? n : ret;
}

void iref_feature_extref(struct core *c)
{
	__atomic_or_fetch(&c->iref_features, SUPER_FEAT_EXTREF, __ATOMIC_RELEASE);
}

void iref_commit_super(struct core *c, struct super_block *sb)
{
	sb->features |= __atomic_load_n(&c->iref_features, __ATOMIC_ACQUIRE);
}
