// SPDX-License-Identifier: MIT
/*
 * dir.c — directory entries; the inode back references they keep in
 * step are iref.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/core/core_types.h"
#include "fs/items/dir.h"
#include "fs/items/dcache.h"
#include "fs/items/iref.h"

/* An item that must exist does not: the one corruption helper
 * (core_corrupt: logs where, forces the volume read-only), then -EIO. */
static int corrupt(struct fsctx *fs, const char *what, uint64_t a, uint64_t b)
{
	core_corrupt(fs->core, "fs tree items", "%s (%llu, %llu)", what,
		     (unsigned long long)a, (unsigned long long)b);
	return -EIO;
}

uint8_t dir_type_of(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:  return DT_REG;
	case S_IFDIR:  return DT_DIR;
	case S_IFLNK:  return DT_LNK;
	case S_IFCHR:  return DT_CHR;
	case S_IFBLK:  return DT_BLK;
	case S_IFIFO:  return DT_FIFO;
	case S_IFSOCK: return DT_SOCK;
	}
	return DT_UNKNOWN;
}

static uint64_t (*name_hash_fn)(const char *name, size_t len) = name_hash;

void dir_set_name_hash(uint64_t (*fn)(const char *name, size_t len))
{
	name_hash_fn = fn ? fn : name_hash;
}

uint64_t dir_name_hash(const char *name, size_t len)
{
	return name_hash_fn(name, len);
}

/* Find name in a packed run of dir_entry; returns its offset or -1. */
static long find_entry(const char *buf, size_t size, const char *name, size_t len)
{
	size_t off = 0;

	while (off + sizeof(struct dir_entry) <= size) {
		const struct dir_entry *de = (const void *)(buf + off);
		size_t esz = sizeof(*de) + de->name_len;
		if (off + esz > size)
			break;
		if (de->name_len == len && memcmp(de->name, name, len) == 0)
			return (long)off;
		off += esz;
	}
	return -1;
}

/* Would an entry of a len-byte name still fit in a run of size bytes? */
static int run_room(struct fsctx *fs, size_t size, size_t len)
{
	if (size + sizeof(struct dir_entry) + len > btree_max_item_size(fs->root))
		return -EOVERFLOW;
	return 0;
}

int dir_room(struct fsctx *fs, uint64_t dir, const char *name, size_t len)
{
	struct key k = mkkey(dir, KEY_DIR_ITEM, dir_name_hash(name, len));
	void *buf;
	int ret = fsctx_read_item(fs, &k, 512, &buf);

	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	free(buf);
	return run_room(fs, (size_t)ret, len);
}

int dir_ref_room(struct fsctx *fs, uint64_t ino, uint64_t parent, const char *name,
		 size_t len, const char *gone, size_t gone_len)
{
	return iref_room(fs->root, ino, parent, name, len, gone, gone_len);
}

/* The entry for name in a run, copied to hit: 0, or -ENOENT. */
static int run_find(const char *buf, size_t size, const char *name, size_t len,
		    struct dir_hit *hit)
{
	long off = find_entry(buf, size, name, len);

	if (off < 0)
		return -ENOENT;
	const struct dir_entry *de = (const void *)(buf + off);
	hit->ino = de->ino;
	hit->index = de->index;
	hit->type = de->type;
	return 0;
}

/* The fs tree's lookup cache (dcache.h), made at first use; NULL (no
 * caching) if memory is short. */
static struct dcache *dcache_of(struct fsctx *fs)
{
	struct dcache *dc = __atomic_load_n(&fs->dcache, __ATOMIC_ACQUIRE), *none = NULL;

	if (dc)
		return dc;
	dc = dcache_new(btree_root_id(fs->root));
	if (dc && !__atomic_compare_exchange_n(&fs->dcache, &none, dc, false,
					       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		dcache_free(dc);	/* another thread's is in place */
		dc = none;
	}
	return dc;
}

void dir_cache_counts(struct fsctx *fs, uint64_t *hits, uint64_t *misses)
{
	struct dcache *dc = __atomic_load_n(&fs->dcache, __ATOMIC_ACQUIRE);

	*hits = *misses = 0;
	if (dc)
		dcache_counts(dc, hits, misses);
}

/*
 * Look name up: in the name cache, else in its DIR_ITEM run, in place
 * under the leaf's read lock (the run is not copied).  0 and *hit when
 * present, -ENOENT when not, -errno.  With copy, a run that exists but
 * lacks the name is copied there (what dir_add_prepared appends to); else
 * copy->buf stays NULL.
 */
static int run_lookup(struct fsctx *fs, uint64_t dir, const char *name, size_t len,
		      struct dir_hit *hit, struct dir_slot *copy)
{
	struct key k = mkkey(dir, KEY_DIR_ITEM, dir_name_hash(name, len));
	struct dcache *dc = dcache_of(fs);
	struct path p;
	uint64_t seq = 0;
	int ret;

	if (len > DIR_NAME_MAX)
		return -ENAMETOOLONG;
	if (dc) {
		if (dcache_get(dc, dir, name, len, hit))
			return 0;
		seq = dcache_seq(dc);
	}
	btree_path_init(&p);
	ret = btree_search(NULL, fs->root, &k, &p, 0, 0);
	if (ret == 0) {
		uint32_t size;
		const char *run = btree_item_ptr(&p, p.slots[0], &size);

		ret = run_find(run, size, name, len, hit);
		if (ret == -ENOENT && copy) {
			copy->buf = malloc(size ? size : 1);
			if (copy->buf) {
				memcpy(copy->buf, run, size);
				copy->size = size;
			} else {
				ret = -ENOMEM;
			}
		}
	} else if (ret == 1) {
		ret = -ENOENT;
	}
	btree_path_release(&p);
	if (ret == 0 && dc)	/* outside the leaf's lock: none is nested */
		dcache_put(dc, seq, dir, name, len, hit);
	return ret;
}

int dir_lookup(struct fsctx *fs, uint64_t dir, const char *name, size_t len,
	       struct dir_hit *hit)
{
	return run_lookup(fs, dir, name, len, hit, NULL);
}

int dir_prepare(struct fsctx *fs, uint64_t dir, const char *name, size_t len,
		struct dir_hit *hit, struct dir_slot *s)
{
	int ret;

	s->buf = NULL;
	s->size = 0;
	ret = run_lookup(fs, dir, name, len, hit, s);
	if (ret == 0)
		return -EEXIST;
	return ret == -ENOENT ? 0 : ret;
}

int dir_slot_room(struct fsctx *fs, const struct dir_slot *s, size_t len)
{
	return s->buf ? run_room(fs, s->size, len) : 0;
}

void dir_slot_free(struct dir_slot *s)
{
	free(s->buf);
	s->buf = NULL;
	s->size = 0;
}

/* Append an entry to a run item whose current contents are buf (size
 * bytes, taken over and freed), or create the item when buf is NULL. */
static int run_append_to(struct txn *t, struct fsctx *fs, const struct key *k,
			 void *buf, size_t size, const void *entry, size_t esz)
{
	int ret;

	if (!buf)
		return btree_insert(t, fs->root, k, entry, (uint32_t)esz);
	char *nb = realloc(buf, size + esz);
	if (!nb) {
		free(buf);
		return -ENOMEM;
	}
	memcpy(nb + size, entry, esz);
	ret = btree_update(t, fs->root, k, nb, (uint32_t)(size + esz));
	free(nb);
	return ret;
}

/* Remove the bytes [off, off+esz) from a run item, deleting it when empty. */
static int run_cut(struct txn *t, struct fsctx *fs, const struct key *k,
		   char *buf, size_t size, size_t off, size_t esz)
{
	if (size == esz)
		return btree_delete(t, fs->root, k);
	memmove(buf + off, buf + off + esz, size - off - esz);
	return btree_update(t, fs->root, k, buf, (uint32_t)(size - esz));
}

/* One INODE_REF entry (index, name) in buf; its size. */
static uint32_t ref_entry(void *buf, const char *name, size_t len, uint64_t index)
{
	struct inode_ref *r = buf;

	r->index = index;
	r->name_len = (uint16_t)len;
	memcpy(r->name, name, len);
	return (uint32_t)(sizeof(*r) + len);
}

uint32_t dir_new_ref(struct inode *dir, const char *name, size_t len, void *buf,
		     uint64_t *index)
{
	*index = dir->item.dir_seq++;
	return ref_entry(buf, name, len, *index);
}

/* Remove name in parent from ino's back references: one must be there. */
static int ref_del(struct txn *t, struct fsctx *fs, uint64_t ino, uint64_t parent,
		   const char *name, size_t len)
{
	int ret = iref_del(t, fs->root, ino, parent, name, len, NULL);

	if (ret == -ENOENT) {
		fprintf(stderr, "  no back reference '%.*s' of inode %llu in dir %llu\n", (int)len,
			name, (unsigned long long)ino, (unsigned long long)parent);
		ret = corrupt(fs, "name missing in the back references of", ino, parent);
	}
	return ret;
}

int dir_add_prepared(struct txn *t, struct fsctx *fs, struct inode *dir, const char *name,
		     size_t len, uint64_t ino, uint8_t type, struct dir_slot *s,
		     const uint64_t *linked)
{
	char ebuf[sizeof(struct dir_entry) + DIR_NAME_MAX];
	struct dir_entry *de = (void *)ebuf;
	struct key k = mkkey(dir->ino, KEY_DIR_ITEM, dir_name_hash(name, len));
	size_t esz = sizeof(*de) + len;
	uint64_t seq;
	int ret;

	if (len == 0 || len > DIR_NAME_MAX) {
		dir_slot_free(s);
		return len ? -ENAMETOOLONG : -ENOENT;
	}
	seq = linked ? *linked : dir->item.dir_seq++;
	de->ino = ino;
	de->index = seq;
	de->type = type;
	de->name_len = (uint16_t)len;
	memcpy(de->name, name, len);
	ret = run_append_to(t, fs, &k, s->buf, s->size, ebuf, esz);	/* takes s->buf */
	s->buf = NULL;
	s->size = 0;
	if (ret < 0)
		return ret;
	k = mkkey(dir->ino, KEY_DIR_INDEX, seq);
	ret = btree_insert(t, fs->root, &k, ebuf, (uint32_t)esz);
	if (ret < 0)
		return ret;
	if (type == DT_SUBVOL)		/* a subvolume's name is its ROOT_REF */
		;
	else if (linked)		/* written with the new inode's INODE_ITEM */
		;
	else
		ret = iref_add(t, fs->root, ino, dir->ino, name, len, seq);
	if (ret < 0)
		return ret;
	dir->item.size += 2 * len;
	inode_touch(dir, T_MTIME | T_CTIME);
	return inode_update(t, fs, dir);
}

int dir_add(struct txn *t, struct fsctx *fs, struct inode *dir, const char *name,
	    size_t len, uint64_t ino, uint8_t type)
{
	struct dir_hit hit;
	struct dir_slot s;
	int ret;

	if (len == 0)
		return -ENOENT;
	ret = dir_prepare(fs, dir->ino, name, len, &hit, &s);
	if (ret < 0)
		return ret;
	return dir_add_prepared(t, fs, dir, name, len, ino, type, &s, NULL);
}

int dir_remove(struct txn *t, struct fsctx *fs, struct inode *dir, const char *name,
	       size_t len, const struct dir_hit *hit)
{
	struct key k = mkkey(dir->ino, KEY_DIR_ITEM, dir_name_hash(name, len));
	void *buf;
	long off;
	int ret = fsctx_read_item(fs, &k, 512, &buf);

	if (ret < 0)
		return ret;
	off = find_entry(buf, (size_t)ret, name, len);
	if (off < 0) {
		free(buf);
		return -ENOENT;
	}
	ret = run_cut(t, fs, &k, buf, (size_t)ret, (size_t)off, sizeof(struct dir_entry) + len);
	free(buf);
	/* after the tree change, also when it failed half way (dcache.h) */
	struct dcache *dc = __atomic_load_n(&fs->dcache, __ATOMIC_ACQUIRE);
	if (dc)
		dcache_drop(dc, dir->ino, name, len);
	if (ret < 0)
		return ret;
	k = mkkey(dir->ino, KEY_DIR_INDEX, hit->index);
	ret = btree_delete(t, fs->root, &k);
	if (ret < 0)
		return ret == -ENOENT ? corrupt(fs, "no DIR_INDEX item", dir->ino, hit->index) : ret;
	if (hit->type != DT_SUBVOL)
		ret = ref_del(t, fs, hit->ino, dir->ino, name, len);
	if (ret < 0)
		return ret;
	dir->item.size = dir->item.size >= 2 * len ? dir->item.size - 2 * len : 0;
	inode_touch(dir, T_MTIME | T_CTIME);
	return inode_update(t, fs, dir);
}

int dir_is_empty(struct fsctx *fs, uint64_t dir)
{
	struct path p;
	struct key k = mkkey(dir, KEY_DIR_INDEX, 0), ik;
	int ret;

	btree_path_init(&p);
	ret = fsctx_search_ge(fs, &k, &p);
	if (ret == 0) {
		btree_item_key(&p, p.slots[0], &ik);
		ret = !(ik.objectid == dir && ik.type == KEY_DIR_INDEX);
	} else if (ret > 0) {
		ret = 1;
	}
	btree_path_release(&p);
	return ret;
}

int dir_parent(struct fsctx *fs, uint64_t ino, uint64_t *parent)
{
	struct path p;
	struct key k = mkkey(ino, KEY_INODE_REF, 0), ik;
	int ret;

	*parent = ROOT_DIR_INO;
	if (ino == ROOT_DIR_INO)
		return 0;
	btree_path_init(&p);
	ret = fsctx_search_ge(fs, &k, &p);
	if (ret == 0) {
		btree_item_key(&p, p.slots[0], &ik);
		if (ik.objectid == ino && ik.type == KEY_INODE_REF)
			*parent = ik.offset;
	}
	btree_path_release(&p);
	return ret < 0 ? ret : 0;
}

#define ITER_BATCH 64

struct ent_copy {
	uint64_t ino, seq;
	uint8_t type;
	uint16_t len;
	char name[DIR_NAME_MAX];
};

int dir_iterate(struct fsctx *fs, uint64_t dir, uint64_t from, dir_iter_fn fn, void *arg)
{
	struct ent_copy *ents = malloc(ITER_BATCH * sizeof(*ents));
	int ret = 0;

	if (!ents)
		return -ENOMEM;
	for (;;) {
		struct path p;
		struct key k = mkkey(dir, KEY_DIR_INDEX, from), ik;
		int n = 0;

		btree_path_init(&p);
		ret = fsctx_search_ge(fs, &k, &p);
		while (ret == 0 && n < ITER_BATCH) {
			uint32_t size;
			btree_item_key(&p, p.slots[0], &ik);
			if (ik.objectid != dir || ik.type != KEY_DIR_INDEX) {
				ret = 1;
				break;
			}
			const struct dir_entry *de = btree_item_ptr(&p, p.slots[0], &size);
			if (size >= sizeof(*de) && de->name_len <= DIR_NAME_MAX &&
			    sizeof(*de) + de->name_len <= size) {
				ents[n].ino = de->ino;
				ents[n].seq = ik.offset;
				ents[n].type = de->type;
				ents[n].len = de->name_len;
				memcpy(ents[n].name, de->name, de->name_len);
				n++;
			}
			ret = btree_next(&p);
		}
		btree_path_release(&p);
		if (ret < 0)
			break;
		int more = ret == 0;	/* batch full, the walk is not over */
		for (int i = 0; i < n; i++) {
			int r = fn(arg, ents[i].name, ents[i].len, ents[i].ino,
				   ents[i].type, ents[i].seq);
			if (r) {
				more = 0;
				break;
			}
			from = ents[i].seq + 1;
		}
		ret = 0;
		if (!more)
			break;
	}
	free(ents);
	return ret;
}
