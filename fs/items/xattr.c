// SPDX-License-Identifier: MIT
/*
 * xattr.c — extended attributes, keyed by name hash with collisions
 * sharing one item.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "fs/items/xattr.h"

/* The xattr item at k (fsctx_read_item), as bytes. */
static int read_item(struct fsctx *fs, const struct key *k, char **out)
{
	void *v;
	int ret = fsctx_read_item(fs, k, 1024, &v);

	if (ret >= 0)
		*out = v;
	return ret;
}

static size_t entry_size(const struct xattr_entry *e)
{
	return sizeof(*e) + e->name_len + e->value_len;
}

/* Offset of name in a run, or -1. */
static long find(const char *buf, size_t size, const char *name, size_t len)
{
	size_t off = 0;

	while (off + sizeof(struct xattr_entry) <= size) {
		const struct xattr_entry *e = (const void *)(buf + off);
		if (off + entry_size(e) > size)
			break;
		if (e->name_len == len && memcmp(e->name, name, len) == 0)
			return (long)off;
		off += entry_size(e);
	}
	return -1;
}

/* The item holding name's hash (*k: its key), for get and remove: its
 * size, -ENODATA when there is none, or -errno. */
static int name_item(struct fsctx *fs, uint64_t ino, const char *name, struct key *k,
		     char **item)
{
	int ret;

	*k = mkkey(ino, KEY_XATTR_ITEM, name_hash(name, strlen(name)));
	ret = read_item(fs, k, item);
	return ret == -ENOENT ? -ENODATA : ret;
}

int xattr_get(struct fsctx *fs, uint64_t ino, const char *name, void *buf, size_t size)
{
	size_t len = strlen(name);
	struct key k;
	char *item;
	int ret = name_item(fs, ino, name, &k, &item);

	if (ret < 0)
		return ret;
	long off = find(item, (size_t)ret, name, len);
	if (off < 0) {
		ret = -ENODATA;
	} else {
		const struct xattr_entry *e = (const void *)(item + off);
		ret = (int)e->value_len;
		if (size) {
			if (size < e->value_len)
				ret = -ERANGE;
			else
				memcpy(buf, e->name + e->name_len, e->value_len);
		}
	}
	free(item);
	return ret;
}

int xattr_set(struct txn *t, struct fsctx *fs, uint64_t ino, const char *name,
	      const void *value, size_t size, int flags)
{
	size_t len = strlen(name);
	struct key k = mkkey(ino, KEY_XATTR_ITEM, name_hash(name, len));
	char *item = NULL, *nb;
	size_t isz = 0, esz = sizeof(struct xattr_entry) + len + size;
	int ret;

	if (len == 0)
		return -EINVAL;
	if (len > XATTR_NAME_MAX_LEN)
		return -ERANGE;
	ret = read_item(fs, &k, &item);
	if (ret < 0 && ret != -ENOENT)
		return ret;
	if (ret >= 0)
		isz = (size_t)ret;
	long off = item ? find(item, isz, name, len) : -1;
	if (off >= 0 && (flags & XATTR_CREATE)) {
		free(item);
		return -EEXIST;
	}
	if (off < 0 && (flags & XATTR_REPLACE)) {
		free(item);
		return -ENODATA;
	}
	if (off >= 0) {		/* drop the old entry, append the new one */
		struct xattr_entry *e = (void *)(item + off);
		size_t old = entry_size(e);
		memmove(item + off, item + off + old, isz - off - old);
		isz -= old;
	}
	if (isz + esz > btree_max_item_size(fs->root)) {
		free(item);
		return -E2BIG;
	}
	nb = realloc(item, isz + esz);
	if (!nb) {
		free(item);
		return -ENOMEM;
	}
	struct xattr_entry *e = (void *)(nb + isz);
	e->name_len = (uint16_t)len;
	e->value_len = (uint32_t)size;
	memcpy(e->name, name, len);
	if (size)
		memcpy(e->name + len, value, size);
	ret = btree_update(t, fs->root, &k, nb, (uint32_t)(isz + esz));
	free(nb);
	return ret;
}

int xattr_remove(struct txn *t, struct fsctx *fs, uint64_t ino, const char *name)
{
	size_t len = strlen(name);
	struct key k;
	char *item;
	int ret = name_item(fs, ino, name, &k, &item);

	if (ret < 0)
		return ret;
	size_t isz = (size_t)ret;
	long off = find(item, isz, name, len);
	if (off < 0) {
		ret = -ENODATA;
	} else {
		struct xattr_entry *e = (void *)(item + off);
		size_t old = entry_size(e);
		if (old == isz) {
			ret = btree_delete(t, fs->root, &k);
		} else {
			memmove(item + off, item + off + old, isz - off - old);
			ret = btree_update(t, fs->root, &k, item, (uint32_t)(isz - old));
		}
	}
	free(item);
	return ret;
}

int xattr_list(struct fsctx *fs, uint64_t ino, char *buf, size_t size)
{
	struct path p;
	struct key k = mkkey(ino, KEY_XATTR_ITEM, 0), ik;
	size_t total = 0;
	int ret;

	btree_path_init(&p);
	ret = fsctx_search_ge(fs, &k, &p);
	while (ret == 0) {
		uint32_t isz;
		btree_item_key(&p, p.slots[0], &ik);
		if (ik.objectid != ino || ik.type != KEY_XATTR_ITEM)
			break;
		const char *item = btree_item_ptr(&p, p.slots[0], &isz);
		size_t off = 0;
		while (off + sizeof(struct xattr_entry) <= isz) {
			const struct xattr_entry *e = (const void *)(item + off);
			if (off + entry_size(e) > isz)
				break;
			if (size) {
				if (total + e->name_len + 1 > size) {
					btree_path_release(&p);
					return -ERANGE;
				}
				memcpy(buf + total, e->name, e->name_len);
				buf[total + e->name_len] = 0;
			}
			total += e->name_len + 1;
			off += entry_size(e);
		}
		ret = btree_next(&p);
	}
	btree_path_release(&p);
	if (ret < 0)
		return ret;
	return (int)total;
}
