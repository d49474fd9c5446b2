// SPDX-License-Identifier: MIT
/*
 * fsck_items.c — offline checks of one fs tree (fsck.h): every item well
 * formed, directory entries vs directory index, link counts vs entries
 * and back references, directory sizes and subdirectory counts, orphan
 * items, file-extent layout and sizes; each data-extent reference is
 * reported to fsck.c (fsck_data_ref) to be compared with the extent tree.
 *
 * One pass in key order: all items of an object are adjacent (keys sort
 * by objectid first), so per-object checks run when the objectid changes;
 * counts that span objects (links) are settled at the end.  Beside each
 * error it knows a repair for, it queues one (fsck_fix, fsck.h).  Back
 * references are matched to the entries by name in a second walk
 * (names_check: every name, in batches); entries naming missing inodes
 * and entry types take a walk of their own, run only when the first
 * found such errors.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/items/subvol.h"
#include "fs/items/dir.h"
#include "fs/items/iref.h"
#include "fs/cmd/fsck.h"
#include "fs/core/core_types.h"
#include "fs/btree/btree.h"
#include "fs/format/items_format.h"
#include "fs/format/format.h"

#define BS CORE_SECTORSIZE

struct ino_info {
	struct hnode h;			/* key = the inode number; first (fsck_map) */
	uint32_t mode, nlink;
	uint32_t refs;			/* names in INODE_REF and INODE_EXTREF items */
	uint32_t entries;		/* DIR_INDEX entries naming it */
	uint32_t unindexed;		/* DIR_ITEM entries naming it that have no DIR_INDEX */
	uint32_t subdirs;		/* DIR_INDEX entries of type DT_DIR in it */
	uint32_t name_errs;		/* its back references and entries unmatched by name */
	uint8_t seen_type;		/* DT_* of the last entry naming it */
	bool has_item, orphan;
	bool badtype;			/* an entry naming it may have the wrong type */
};

_Static_assert(offsetof(struct ino_info, h) == 0, "fsck_map entries start with their hnode");

/* The inode's entry (fsck_map: inode number -> what the walk learnt of
 * it), made zeroed at the first call; NULL when memory runs out, and for
 * inode 0, which names no inode (the empty slot of the open-addressing
 * table this map replaced: never counted). */
static struct ino_info *imap_get(struct fsck_map *m, uint64_t ino)
{
	return ino ? fsck_map_get(m, ino, sizeof(struct ino_info)) : NULL;
}

struct dent {			/* one DIR_ITEM entry of the current directory */
	uint64_t index, ino, hash;
	uint8_t type;
	bool matched;
};

struct obj {			/* per-object state while walking its items */
	uint64_t ino;
	bool has_item;
	struct inode_item it;
	struct dent *dents;
	size_t ndents, capdents;
	uint64_t name_bytes;
	uint64_t ext_end, ext_bytes;
	int nexts;
	bool inline_seen;
	bool dents_sorted;
	bool entry_fix;			/* a repair of its entries is queued: its size follows */
};

static struct root *cur_tree;	/* the fs tree being checked */
static uint64_t cur_tree_id;
/* Entries disagree with each other or with the inodes they name: the link
 * counts, back references and sizes derived from them wait for the pass
 * that repairs the entries (the check after it queues them). */
static bool names_unsure;

static void fix(struct fsck *f, enum fsck_fix_kind kind, uint64_t a, uint64_t v,
		const struct key *k)
{
	struct fsck_fix x = { kind, cur_tree_id, a, 0, v, 0, { 0, 0, 0 } };

	if (k)
		x.k = *k;
	fsck_fix(f, &x);
}

/* Item k is malformed or of a type no fs tree holds: it goes (-y), and
 * what depended on it is rebuilt (a DIR_INDEX from its DIR_ITEM entry and
 * back references from the names in the same pass; link counts after it:
 * names, when the item held names). */
static void bad_item(struct fsck *f, const struct key *k, bool names)
{
	fix(f, FIX_DEL_BAD_ITEM, 0, 0, k);
	names_unsure |= names;
}

static int cmp_dent(const void *a, const void *b)
{
	const struct dent *x = a, *y = b;
	return key_cmp_u64(x->index, y->index);
}

static void obj_finish(struct fsck *f, struct obj *o, struct fsck_map *m)
{
	if (!o->ino)
		return;
	for (size_t i = 0; i < o->ndents; i++)
		if (!o->dents[i].matched) {
			fsck_error(f, "dir %llu: entry (index %llu -> %llu) has no DIR_INDEX item",
				   (unsigned long long)o->ino, (unsigned long long)o->dents[i].index,
				   (unsigned long long)o->dents[i].ino);
			struct key k = { o->ino, KEY_DIR_ITEM, o->dents[i].hash };
			fix(f, FIX_ADD_INDEX, o->ino, o->dents[i].index, &k);
			if (o->dents[i].type != DT_SUBVOL) {
				struct ino_info *t = imap_get(m, o->dents[i].ino);
				if (t)
					t->unindexed++;
			}
			if (o->dents[i].type == DT_DIR || o->dents[i].type == DT_SUBVOL) {
				struct ino_info *p = imap_get(m, o->ino);
				if (p)
					p->subdirs++;
			}
		}
	if (o->has_item) {
		if (S_ISDIR(o->it.mode) && o->it.size != o->name_bytes) {
			fsck_error(f, "dir %llu: size %llu, its names account for %llu",
				   (unsigned long long)o->ino, (unsigned long long)o->it.size,
				   (unsigned long long)o->name_bytes);
			if (o->entry_fix)
				fsck_covered(f, 1);	/* the entry repaired brings it back */
			else
				fix(f, FIX_INODE_SIZE, o->ino, o->name_bytes, NULL);
		}
		if (o->ext_bytes != o->it.nbytes) {
			fsck_error(f, "inode %llu: nbytes %llu, its extents hold %llu",
				   (unsigned long long)o->ino, (unsigned long long)o->it.nbytes,
				   (unsigned long long)o->ext_bytes);
			fix(f, FIX_INODE_NBYTES, o->ino, o->ext_bytes, NULL);
		}
		if (o->nexts && !S_ISREG(o->it.mode) && !S_ISLNK(o->it.mode))
			fsck_error(f, "inode %llu: mode %o has file extents",
				   (unsigned long long)o->ino, o->it.mode);
	}
	o->ndents = 0;
}

static void check_dir_item(struct fsck *f, struct obj *o, const struct key *k,
			   const char *buf, uint32_t size)
{
	uint32_t off = 0;
	bool refile = false;

	if (size == 0) {
		fsck_error(f, "dir %llu: empty DIR_ITEM %llu", (unsigned long long)k->objectid,
			   (unsigned long long)k->offset);
		bad_item(f, k, false);
	}
	while (off < size) {
		const struct dir_entry *de = (const void *)(buf + off);
		if (off + sizeof(*de) > size || off + sizeof(*de) + de->name_len > size ||
		    de->name_len == 0 || de->name_len > 255) {
			fsck_error(f, "dir %llu: DIR_ITEM %llu: entry overruns the item",
				   (unsigned long long)k->objectid, (unsigned long long)k->offset);
			/* its names come back from their DIR_INDEX items */
			bad_item(f, k, true);
			o->entry_fix = true;
			return;
		}
		uint64_t h = name_hash(de->name, de->name_len);
		if (h != k->offset) {
			fsck_error(f, "dir %llu: DIR_ITEM %llu holds a name hashing to %llu",
				   (unsigned long long)k->objectid, (unsigned long long)k->offset,
				   (unsigned long long)h);
			/* lookups miss it: moved to its slot (one repair per item) */
			if (!refile)
				fix(f, FIX_REFILE, 0, 0, k);
			else
				fsck_covered(f, 1);
			refile = true;
		}
		if (o->ndents == o->capdents) {
			size_t nc = o->capdents ? o->capdents * 2 : 256;
			struct dent *nd = realloc(o->dents, nc * sizeof(*nd));
			if (!nd)
				return;
			o->dents = nd;
			o->capdents = nc;
		}
		o->dents[o->ndents++] = (struct dent){ de->index, de->ino, h, de->type, false };
		o->name_bytes += 2ULL * de->name_len;
		off += (uint32_t)sizeof(*de) + de->name_len;
	}
}

static void check_dir_index(struct fsck *f, struct obj *o, struct fsck_map *m,
			    const struct key *k, const char *buf, uint32_t size)
{
	const struct dir_entry *de = (const void *)buf;

	if (size < sizeof(*de) || sizeof(*de) + de->name_len != size || de->name_len == 0) {
		fsck_error(f, "dir %llu: DIR_INDEX %llu malformed", (unsigned long long)k->objectid,
			   (unsigned long long)k->offset);
		/* rebuilt from its DIR_ITEM entry, if it has one, by the next pass */
		bad_item(f, k, true);
		o->entry_fix = true;
		return;
	}
	if (o->has_item && k->offset >= o->it.dir_seq)
		fsck_error(f, "dir %llu: DIR_INDEX %llu beyond dir_seq %llu",
			   (unsigned long long)k->objectid, (unsigned long long)k->offset,
			   (unsigned long long)o->it.dir_seq);
	struct dent key = { .index = k->offset };
	struct dent *d = o->ndents ? bsearch(&key, o->dents, o->ndents, sizeof(key), cmp_dent) : NULL;
	uint64_t h = name_hash(de->name, de->name_len);
	bool badtype = false;
	if (d && d->hash == h && d->ino == de->ino && d->type != de->type) {
		/* the same name and inode, two types: the inode's mode says
		 * which (a second walk, below) */
		fsck_error(f, "dir %llu: DIR_INDEX %llu (-> %llu) and its DIR_ITEM entry disagree on the type (%u, %u)",
			   (unsigned long long)k->objectid, (unsigned long long)k->offset,
			   (unsigned long long)de->ino, de->type, d->type);
		d->matched = true;
		badtype = names_unsure = true;
	} else if (d && (d->hash != h || d->ino != de->ino)) {
		/* an entry of the same index that names another name or inode:
		 * the back reference of the inode each names tells which is
		 * right (at repair; neither or both: no repair) */
		fsck_error(f, "dir %llu: DIR_INDEX %llu (-> %llu) and the DIR_ITEM entry of the same index (-> %llu) disagree",
			   (unsigned long long)k->objectid, (unsigned long long)k->offset,
			   (unsigned long long)de->ino, (unsigned long long)d->ino);
		struct fsck_fix x = { FIX_INDEX_CONFLICT, cur_tree_id, 0, d->hash, 0, 0, *k };
		fsck_fix(f, &x);
		d->matched = true;
		o->entry_fix = names_unsure = true;
	} else if (!d) {
		fsck_error(f, "dir %llu: DIR_INDEX %llu (-> %llu) has no matching DIR_ITEM entry",
			   (unsigned long long)k->objectid, (unsigned long long)k->offset,
			   (unsigned long long)de->ino);
		fix(f, FIX_ADD_DENTRY, k->objectid, 0, k);
		o->entry_fix = true;
	} else
		d->matched = true;
	/* a subvolume's root lives in its own tree (checked as that tree);
	 * it counts as a subdirectory here */
	struct ino_info *t = de->type == DT_SUBVOL ? NULL : imap_get(m, de->ino);
	if (t) {
		/* two names of one inode with two types: one is wrong */
		t->badtype |= badtype || (t->entries && t->seen_type != de->type);
		t->entries++;
		t->seen_type = de->type;
	}
	if (de->type == DT_SUBVOL && (de->ino < FIRST_SUBVOL_OBJECTID || de->ino > 0xffff))
		fsck_error(f, "dir %llu: DIR_INDEX %llu names subvolume %llu, not a subvolume id",
			   (unsigned long long)k->objectid, (unsigned long long)k->offset,
			   (unsigned long long)de->ino);
	else if (de->type == DT_SUBVOL && cur_tree) {
		/* the subvolume's ROOT_REF says the same name, directory and index */
		char rb[sizeof(struct root_ref) + 256];
		const struct root_ref *rr = (const void *)rb;
		struct key rk = { btree_root_id(cur_tree), KEY_ROOT_REF, de->ino };
		int n = btree_lookup(subvol_root(cur_tree->core, ROOT_TREE_OBJECTID), &rk, rb, sizeof(rb));

		if (n < (int)sizeof(*rr) || rr->dirid != k->objectid || rr->index != k->offset ||
		    rr->name_len != de->name_len || memcmp(rr->name, de->name, de->name_len))
			fsck_error(f, "dir %llu: entry '%.*s' names subvolume %llu, whose ROOT_REF does not match",
				   (unsigned long long)k->objectid, (int)de->name_len, de->name,
				   (unsigned long long)de->ino);
	}
	if (de->type == DT_DIR || de->type == DT_SUBVOL) {
		struct ino_info *p = imap_get(m, k->objectid);
		if (p)
			p->subdirs++;
	}
}

static void check_extent(struct fsck *f, struct obj *o, const struct key *k,
			 const char *buf, uint32_t size)
{
	const struct file_extent *fe = (const void *)buf;
	unsigned long long ino = k->objectid, off = k->offset;

	o->nexts++;
	if (size < FE_INLINE_HDR) {
		fsck_error(f, "inode %llu: EXTENT_DATA %llu too small (%u)", ino, off, size);
		bad_item(f, k, false);
		return;
	}
	if (off < o->ext_end)
		fsck_error(f, "inode %llu: extent at %llu overlaps the previous one (ends %llu)",
			   ino, off, (unsigned long long)o->ext_end);
	if (fe->type == FE_INLINE) {
		if (off != 0 || o->nexts != 1)
			fsck_error(f, "inode %llu: inline extent at %llu is not the only one at 0", ino, off);
		if (fe->ram_bytes != size - FE_INLINE_HDR)
			fsck_error(f, "inode %llu: inline extent says %llu bytes, holds %u", ino,
				   (unsigned long long)fe->ram_bytes, size - (uint32_t)FE_INLINE_HDR);
		if (o->has_item && fe->ram_bytes > o->it.size)
			fsck_error(f, "inode %llu: inline data (%llu) beyond i_size %llu", ino,
				   (unsigned long long)fe->ram_bytes, (unsigned long long)o->it.size);
		o->ext_bytes += fe->ram_bytes;
		o->ext_end = fe->ram_bytes;
		o->inline_seen = true;
		return;
	}
	if (o->inline_seen)
		fsck_error(f, "inode %llu: extent at %llu after an inline extent", ino, off);
	if (size != sizeof(*fe) || (fe->type != FE_REG && fe->type != FE_PREALLOC)) {
		fsck_error(f, "inode %llu: EXTENT_DATA %llu: bad type %u or size %u", ino, off,
			   fe->type, size);
		bad_item(f, k, false);
		return;
	}
	if (off % BS || fe->offset % BS || fe->num_bytes % BS || fe->disk_len % BS ||
	    fe->disk_logical % BS || fe->num_bytes == 0)
		fsck_error(f, "inode %llu: extent at %llu not block aligned", ino, off);
	if (fe->offset + fe->num_bytes > fe->disk_len)
		fsck_error(f, "inode %llu: extent at %llu reaches past its data extent", ino, off);
	if (fe->type == FE_REG && o->has_item &&
	    off + fe->num_bytes > ((o->it.size + BS - 1) & ~(uint64_t)(BS - 1)))
		fsck_error(f, "inode %llu: extent at %llu ends past i_size %llu", ino, off,
			   (unsigned long long)o->it.size);
	o->ext_bytes += fe->num_bytes;
	o->ext_end = off + fe->num_bytes;
	fsck_data_ref(f, fe->disk_logical, fe->disk_len);
}

/*
 * An INODE_EXTREF item: entries well formed, each in the slot its (parent,
 * name) hashes to, on a volume whose superblock says it may hold them.
 * Its names count as back references of the inode (against its entries
 * and link count, below).  A malformed or misfiled item goes (-y); the
 * back references it held are made again from the names in the pass
 * after (FIX_ADD_REF: into the INODE_REF if it has room, else extended).
 */
/* Is back-reference item k (buf, size) a whole run of records, each
 * name of 1..255 bytes, and, for an INODE_EXTREF, each in its hash slot? */
static bool run_sound(const struct key *k, const char *buf, uint32_t size)
{
	bool ext = k->type == KEY_INODE_EXTREF;
	struct iref_ent e;

	for (uint32_t off = 0; off < size; off += e.size)
		if (!iref_entry((const uint8_t *)buf, size, off, ext, &e) || e.len == 0 ||
		    e.len > 255 || (ext && extref_hash(e.parent, e.name, e.len) != k->offset))
			return false;
	return size != 0;
}

static bool extref_feat_queued;	/* FIX_EXTREF_FEATURE queued for this tree */

static void check_extref(struct fsck *f, struct fsck_map *m, const struct key *k,
			 const char *buf, uint32_t size)
{
	struct ino_info *ii = imap_get(m, k->objectid);
	uint32_t off = 0, n = 0;

	if (cur_tree && !(cur_tree->core->sb.features & SUPER_FEAT_EXTREF)) {
		fsck_error(f, "inode %llu: INODE_EXTREF on a volume without SUPER_FEAT_EXTREF",
			   (unsigned long long)k->objectid);
		/* a sound one is kept and the volume says it holds them (one
		 * repair per tree); an unsound one goes (below), and with it
		 * the need for the bit */
		if (!run_sound(k, buf, size) || extref_feat_queued)
			fsck_covered(f, 1);
		else {
			fix(f, FIX_EXTREF_FEATURE, 0, 0, NULL);
			extref_feat_queued = true;
		}
	}
	if (size == 0) {
		fsck_error(f, "inode %llu: empty INODE_EXTREF %llu", (unsigned long long)k->objectid,
			   (unsigned long long)k->offset);
		bad_item(f, k, false);
		return;
	}
	while (off < size) {
		const struct inode_extref *x = (const void *)(buf + off);
		if (off + sizeof(*x) > size || off + sizeof(*x) + x->name_len > size ||
		    x->name_len == 0 || x->name_len > 255) {
			fsck_error(f, "inode %llu: INODE_EXTREF %llu: entry overruns the item",
				   (unsigned long long)k->objectid, (unsigned long long)k->offset);
			bad_item(f, k, false);
			break;
		}
		if (extref_hash(x->parent, x->name, x->name_len) != k->offset) {
			fsck_error(f, "inode %llu: INODE_EXTREF %llu holds '%.*s' of dir %llu, which "
				   "hashes elsewhere", (unsigned long long)k->objectid,
				   (unsigned long long)k->offset, (int)x->name_len, x->name,
				   (unsigned long long)x->parent);
			bad_item(f, k, false);
			break;
		}
		n++;
		off += (uint32_t)sizeof(*x) + x->name_len;
	}
	if (ii && off == size)
		ii->refs += n;
}

/*
 * The second walks over the directory entries (fsck_walk): every entry of
 * every DIR_ITEM and DIR_INDEX item to fn, with the item's key.
 */
struct dent_walk {
	struct fsck *f;
	struct fsck_map *m;
	void (*fn)(struct dent_walk *w, const struct key *k, const struct dir_entry *de);
};

static int dent_item(void *arg, const struct key *k, const void *d, uint32_t size)
{
	struct dent_walk *w = arg;
	const char *buf = d;
	uint32_t off = 0;

	while ((k->type == KEY_DIR_ITEM || k->type == KEY_DIR_INDEX) &&
	       off + sizeof(struct dir_entry) <= size) {
		const struct dir_entry *de = (const void *)(buf + off);
		if (off + sizeof(*de) + de->name_len > size)
			break;
		w->fn(w, k, de);
		if (k->type == KEY_DIR_INDEX)
			break;
		off += (uint32_t)sizeof(*de) + de->name_len;
	}
	return 0;
}

static void walk_dents(struct fsck *f, struct root *fsroot, struct fsck_map *m,
		       void (*fn)(struct dent_walk *w, const struct key *k, const struct dir_entry *de))
{
	struct dent_walk w = { f, m, fn };

	fsck_walk(fsroot, &(struct key){ 0, 0, 0 }, dent_item, &w);
}

/* Each entry whose type disagrees with the mode of the inode it names
 * (inodes marked badtype): run only when such were found; the mode
 * decides, as e2fsck's "setting filetype". */
static void queue_type(struct dent_walk *w, const struct key *k, const struct dir_entry *de)
{
	struct ino_info *t = de->type == DT_SUBVOL ? NULL : imap_get(w->m, de->ino);

	if (t && t->has_item && t->badtype && de->type != dir_type_of(t->mode)) {
		struct fsck_fix x = { FIX_DENTRY_TYPE, cur_tree_id, de->ino, 0, de->index,
				      dir_type_of(t->mode), *k };
		fsck_fix(w->f, &x);
	}
}

/* The entries naming inodes that are missing: each entry's removal
 * (DIR_INDEX item, DIR_ITEM entry) queued.  Run only when such entries
 * were found. */
static void queue_dangling(struct dent_walk *w, const struct key *k, const struct dir_entry *de)
{
	struct ino_info *t = de->type == DT_SUBVOL ? NULL : imap_get(w->m, de->ino);

	if (t && !t->has_item && (t->entries || t->unindexed)) {
		if (k->type == KEY_DIR_INDEX)
			fix(w->f, FIX_DEL_ITEM, 0, 0, k);
		else
			fix(w->f, FIX_DEL_DENTRY, k->objectid, de->index, k);
		fsck_covered(w->f, (uint64_t)-1);	/* one error, counted once above */
	}
}

/*
 * Back references against directory entries, name by name: each back
 * reference (INODE_REF or INODE_EXTREF record: ino, parent, name, index)
 * must have its entry (the DIR_INDEX (parent, index), or the DIR_ITEM
 * entry of the name when that index is missing, naming ino by that name),
 * and each DIR_INDEX entry (dir, index -> ino, name) must have its back
 * reference (ino, dir, name, index).  Counts alone miss a stale reference
 * beside a missing one on the same inode.
 *
 * Why point lookups and not a sort/merge of two lists: an inode's back
 * references sit under its own objectid but the entries naming it sit
 * under each directory's, and a directory's entries sit together but the
 * back references naming it sit under each child; whichever way the two
 * lists are cut, one side is spread over the whole tree, so merging them
 * needs every name of the volume in memory (1 M names: 32 MB of (ino,
 * dir, index, name hash) tuples per side, 64 MB for both) or an external
 * sort.  Looked up from the side at hand, each name is found by one
 * B-tree search of its key, so memory is one batch of names whatever the
 * volume holds: NAMES_BATCH of 312 bytes (312 KiB), the array doubling
 * past it by at most one item's records (at 64 KiB nodes some 5,400 names
 * of 2 bytes: 8,192 slots, 2.5 MiB at worst).  The price is a search or
 * two per name.
 * The walk gathers a batch and releases its path before the lookups (no
 * lookup runs under the walk's leaf lock), then goes on from the next key.
 *
 * Items the first walk found malformed go in this pass (FIX_DEL_BAD_ITEM),
 * so a lookup trusts only sound ones: the names a malformed back
 * reference held are missing here and made again (FIX_ADD_REF, queued
 * after the deletion), in the same pass.
 */
#define NAMES_BATCH 1024

struct name {			/* one name seen, to be found on the other side */
	struct key k;		/* its item: INODE_REF, INODE_EXTREF or DIR_INDEX */
	uint64_t ino, dir, index;
	uint32_t off;		/* a back reference's offset in its item */
	uint16_t len;
	char name[255];
};

_Static_assert(sizeof(struct name) == 312, "the batch's size in the comment above");

struct names {
	struct fsck *f;
	struct fsck_map *m;
	struct root *r;
	struct name *v;
	size_t n, cap;
	struct key next;	/* where the walk goes on, when it stopped */
	bool stopped, oom;
	uint8_t *buf;		/* one item (btree_max_item_size) */
	struct fsck_fix *adds;	/* FIX_ADD_REF repairs, queued after the removals */
	size_t nadds, capadds;
};

static void name_add(struct names *w, const struct key *k, uint64_t ino, uint64_t dir,
		     uint64_t index, uint32_t off, const char *name, uint16_t len)
{
	if (!fsck_vec_room(w->f, (void **)&w->v, w->n, &w->cap, sizeof(*w->v))) {
		w->oom = true;
		return;
	}
	struct name *x = &w->v[w->n++];
	*x = (struct name){ *k, ino, dir, index, off, len, { 0 } };
	memcpy(x->name, name, len);
}

/* fsck_walk: the names of one item into the batch; > 0 (stop) past
 * NAMES_BATCH, with w->next the key after this item. */
static int names_item(void *arg, const struct key *k, const void *d, uint32_t size)
{
	struct names *w = arg;
	const char *buf = d;

	if (k->type == KEY_DIR_INDEX) {
		const struct dir_entry *de = (const void *)buf;
		if (size >= sizeof(*de) && sizeof(*de) + de->name_len == size && de->name_len &&
		    de->name_len <= 255 && de->type != DT_SUBVOL)
			name_add(w, k, de->ino, k->objectid, k->offset, 0, de->name, de->name_len);
	} else if ((k->type == KEY_INODE_REF || k->type == KEY_INODE_EXTREF) &&
		   run_sound(k, buf, size)) {
		bool ext = k->type == KEY_INODE_EXTREF;
		struct iref_ent e;
		for (uint32_t off = 0; iref_entry(d, size, off, ext, &e); off += e.size)
			name_add(w, k, k->objectid, ext ? e.parent : k->offset, e.index, off, e.name,
				 e.len);
	}
	if (w->oom)
		return -ENOMEM;
	if (w->n < NAMES_BATCH)
		return 0;
	/* the key after k (none after the last key there is) */
	w->next = *k;
	if (++w->next.offset == 0 && ++w->next.type == 0 && ++w->next.objectid == 0)
		return 0;
	w->stopped = true;
	return 1;
}

/* Does the entry (dir, index) name ino as x->name: its DIR_INDEX, or the
 * DIR_ITEM entry of the name when the DIR_INDEX is not there (the first
 * walk rebuilds that index)? */
static bool entry_of(struct names *w, const struct name *x)
{
	const struct dir_entry *de = (const void *)w->buf;
	uint32_t max = btree_max_item_size(w->r);
	struct key k = { x->dir, KEY_DIR_INDEX, x->index };
	int n = btree_lookup(w->r, &k, w->buf, max);

	if (n >= (int)sizeof(*de))
		return de->ino == x->ino && de->name_len == x->len &&
		       sizeof(*de) + de->name_len == (uint32_t)n && !memcmp(de->name, x->name, x->len);
	k = (struct key){ x->dir, KEY_DIR_ITEM, name_hash(x->name, x->len) };
	n = btree_lookup(w->r, &k, w->buf, max);
	for (uint32_t off = 0; n > 0 && off + sizeof(*de) <= (uint32_t)n;) {
		de = (const void *)(w->buf + off);
		if (off + sizeof(*de) + de->name_len > (uint32_t)n)
			break;
		if (de->ino == x->ino && de->index == x->index && de->name_len == x->len &&
		    !memcmp(de->name, x->name, x->len))
			return true;
		off += (uint32_t)sizeof(*de) + de->name_len;
	}
	return false;
}

/* Does the run of back references (INODE_REF, or INODE_EXTREF with ext)
 * in buf (n bytes, sound) hold x's (dir, name, index) before offset end? */
static bool run_has(const uint8_t *buf, uint32_t n, bool ext, const struct name *x, uint32_t end)
{
	struct iref_ent e;

	for (uint32_t off = 0; off < end && iref_entry(buf, n, off, ext, &e); off += e.size)
		if ((!ext || e.parent == x->dir) && e.index == x->index && e.len == x->len &&
		    !memcmp(e.name, x->name, x->len))
			return true;
	return false;
}

/* Does ino have a back reference (dir, name, index) in a sound item: its
 * INODE_REF (before offset ref_end), or its INODE_EXTREF (before
 * ext_end)? */
static bool backref_has(struct names *w, const struct name *x, uint32_t ref_end, uint32_t ext_end)
{
	uint32_t max = btree_max_item_size(w->r);
	struct key k = { x->ino, KEY_INODE_REF, x->dir };
	int n = ref_end ? btree_lookup(w->r, &k, w->buf, max) : 0;

	if (n > 0 && run_sound(&k, (const char *)w->buf, (uint32_t)n) &&
	    run_has(w->buf, (uint32_t)n, false, x, ref_end))
		return true;
	k = (struct key){ x->ino, KEY_INODE_EXTREF, extref_hash(x->dir, x->name, x->len) };
	n = ext_end ? btree_lookup(w->r, &k, w->buf, max) : 0;
	return n > 0 && run_sound(&k, (const char *)w->buf, (uint32_t)n) &&
	       run_has(w->buf, (uint32_t)n, true, x, ext_end);
}

/* Is back reference x there twice, this the second: an equal record
 * before it in its item, or (an extended one) in the INODE_REF? */
static bool backref_twice(struct names *w, const struct name *x)
{
	if (x->k.type == KEY_INODE_REF)
		return backref_has(w, x, x->off, 0);
	return backref_has(w, x, UINT32_MAX, x->off);
}

/* The names of the batch, each looked up on the other side; each one
 * unmatched reported by name, counted on its inode (name_errs) and, when
 * the names are sure, its repair queued. */
static void names_settle(struct names *w)
{
	for (size_t i = 0; i < w->n; i++) {
		const struct name *x = &w->v[i];
		struct ino_info *ii = imap_get(w->m, x->ino);
		bool ref = x->k.type != KEY_DIR_INDEX;

		/* an object with no INODE_ITEM goes whole, and the entries
		 * naming it with it; an inode named nowhere goes to
		 * lost+found, its back references replaced (the links pass) */
		if (!ii || !ii->has_item || (ref && ii->entries + ii->unindexed == 0))
			continue;
		/* more back references than names: one may be there twice
		 * (its name matches, so only this finds it) */
		bool twice = ref && ii->refs > ii->entries + ii->unindexed && backref_twice(w, x);
		if (!twice && (ref ? entry_of(w, x) : backref_has(w, x, UINT32_MAX, UINT32_MAX)))
			continue;
		ii->name_errs++;
		if (twice)
			fsck_error(w->f, "inode %llu: back reference '%.*s' in dir %llu (index %llu%s) "
				   "is there twice", (unsigned long long)x->ino, (int)x->len, x->name,
				   (unsigned long long)x->dir, (unsigned long long)x->index,
				   x->k.type == KEY_INODE_EXTREF ? ", extended" : "");
		else if (ref)
			fsck_error(w->f, "inode %llu: back reference '%.*s' in dir %llu (index %llu%s) "
				   "has no directory entry", (unsigned long long)x->ino, (int)x->len,
				   x->name, (unsigned long long)x->dir, (unsigned long long)x->index,
				   x->k.type == KEY_INODE_EXTREF ? ", extended" : "");
		else
			fsck_error(w->f, "dir %llu: entry '%.*s' (index %llu -> %llu) has no back "
				   "reference", (unsigned long long)x->dir, (int)x->len, x->name,
				   (unsigned long long)x->index, (unsigned long long)x->ino);
		if (names_unsure) {
			/* the entries are repaired first; the next pass decides */
			fsck_covered(w->f, 1);
			continue;
		}
		struct fsck_fix fx = { FIX_DEL_REF, cur_tree_id, x->ino, 0, x->index, 0, x->k };
		if (!ref) {
			fx = (struct fsck_fix){ FIX_ADD_REF, cur_tree_id, x->ino, 0, 0, 0,
						{ x->dir, KEY_DIR_INDEX, x->index } };
			if (fsck_vec_room(w->f, (void **)&w->adds, w->nadds, &w->capadds, sizeof(fx)))
				w->adds[w->nadds++] = fx;
			else
				w->oom = true;
			continue;
		}
		if (x->k.type == KEY_INODE_EXTREF)
			fx.b = x->dir;
		else
			fx.w = name_hash(x->name, x->len);	/* the record of this name only */
		fsck_fix(w->f, &fx);
	}
	w->n = 0;
}

/* Every back reference and every DIR_INDEX entry of fsroot matched by
 * (parent, name, index), in batches.  0, or -errno. */
static int names_check(struct fsck *f, struct root *fsroot, struct fsck_map *m)
{
	struct names w = { .f = f, .m = m, .r = fsroot };
	struct key from = { 0, 0, 0 };
	int ret = 0;

	w.buf = malloc(btree_max_item_size(fsroot));
	if (!w.buf)
		return -ENOMEM;
	for (;;) {
		w.stopped = false;
		ret = fsck_walk(fsroot, &from, names_item, &w);
		if (ret)
			break;
		names_settle(&w);
		if (w.oom) {
			ret = -ENOMEM;
			break;
		}
		if (!w.stopped)
			break;
		from = w.next;
	}
	/* the removals first: a back reference replaced under the same
	 * index goes before its successor is added */
	for (size_t i = 0; !ret && i < w.nadds; i++)
		fsck_fix(f, &w.adds[i]);
	free(w.adds);
	free(w.v);
	free(w.buf);
	return ret;
}

int fsck_items_check(struct fsck *f, struct root *fsroot)
{
	cur_tree = fsroot;
	cur_tree_id = btree_root_id(fsroot);
	names_unsure = false;
	extref_feat_queued = false;
	uint64_t max_ino = ROOT_DIR_INO, del_obj = 0;
	struct fsck_map m = { 0 };
	struct obj o;
	struct path p;
	struct key k = { 0, 0, 0 };
	int ret;

	memset(&o, 0, sizeof(o));
	btree_path_init(&p);
	ret = btree_search_ge(fsroot, &k, &p);
	while (ret == 0) {
		uint32_t size;
		btree_item_key(&p, p.slots[0], &k);
		const char *buf = btree_item_ptr(&p, p.slots[0], &size);

		if (k.objectid != o.ino) {
			obj_finish(f, &o, &m);
			o.ino = k.objectid;
			o.has_item = false;
			o.name_bytes = o.ext_end = o.ext_bytes = 0;
			o.nexts = 0;
			o.inline_seen = false;
			o.dents_sorted = false;
			o.entry_fix = false;
		}
		if (k.objectid < (1ull << 62) && k.objectid > max_ino)
			max_ino = k.objectid;
		if (k.objectid == ORPHAN_OBJECTID) {
			if (k.type != KEY_ORPHAN_ITEM || (size != 0 && size != 8)) {
				fsck_error(f, "bad item (type %u, %u bytes) in the orphan list", k.type, size);
				fix(f, FIX_DEL_ITEM, 0, 0, &k);
			}
			else {
				struct ino_info *ii = imap_get(&m, k.offset);
				if (ii)
					ii->orphan = true;
			}
		} else if (k.type == KEY_INODE_ITEM) {
			if (size != sizeof(struct inode_item) || k.offset != 0) {
				fsck_error(f, "inode %llu: INODE_ITEM of %u bytes", (unsigned long long)k.objectid, size);
				/* no inode to keep: its names and items go with it
				 * (the next pass), as e2fsck clears a bad inode */
				bad_item(f, &k, false);
			} else {
				memcpy(&o.it, buf, sizeof(o.it));
				o.has_item = true;
				struct ino_info *ii = imap_get(&m, k.objectid);
				if (ii) {
					ii->has_item = true;
					ii->mode = o.it.mode;
					ii->nlink = o.it.nlink;
				}
				if (dir_type_of(o.it.mode) == DT_UNKNOWN)
					fsck_error(f, "inode %llu: bad mode %o", (unsigned long long)k.objectid, o.it.mode);
			}
		} else {
			if (!o.has_item) {
				fsck_error(f, "object %llu: item type %u without an INODE_ITEM",
					   (unsigned long long)k.objectid, k.type);
				/* what is left of an inode: it goes (its data references with it) */
				if (del_obj != k.objectid)
					fix(f, FIX_DEL_OBJECT, k.objectid, 0, NULL);
				else
					fsck_covered(f, 1);
				del_obj = k.objectid;
			}
			switch (k.type) {
			case KEY_INODE_REF: {
				uint32_t off = 0;
				struct ino_info *ii = imap_get(&m, k.objectid);
				while (off < size) {
					const struct inode_ref *r = (const void *)(buf + off);
					if (off + sizeof(*r) > size || off + sizeof(*r) + r->name_len > size) {
						fsck_error(f, "inode %llu: INODE_REF overruns its item",
							   (unsigned long long)k.objectid);
						bad_item(f, &k, false);	/* rebuilt from the names, this pass */
						break;
					}
					if (ii)
						ii->refs++;
					off += (uint32_t)sizeof(*r) + r->name_len;
				}
				break;
			}
			case KEY_INODE_EXTREF:
				check_extref(f, &m, &k, buf, size);
				break;
			case KEY_XATTR_ITEM: {
				uint32_t off = 0;
				bool refile = false;
				while (off < size) {
					const struct xattr_entry *x = (const void *)(buf + off);
					if (off + sizeof(*x) > size ||
					    off + sizeof(*x) + x->name_len + (uint64_t)x->value_len > size) {
						fsck_error(f, "inode %llu: XATTR_ITEM overruns its item",
							   (unsigned long long)k.objectid);
						bad_item(f, &k, false);
						break;
					}
					if (name_hash(x->name, x->name_len) != k.offset) {
						fsck_error(f, "inode %llu: xattr name in the wrong hash slot",
							   (unsigned long long)k.objectid);
						if (!refile)
							fix(f, FIX_REFILE, 0, 0, &k);
						else
							fsck_covered(f, 1);
						refile = true;
					}
					off += (uint32_t)sizeof(*x) + x->name_len + x->value_len;
				}
				break;
			}
			case KEY_DIR_ITEM:
				check_dir_item(f, &o, &k, buf, size);
				break;
			case KEY_DIR_INDEX:
				if (!o.dents_sorted) {
					qsort(o.dents, o.ndents, sizeof(*o.dents), cmp_dent);
					o.dents_sorted = true;
				}
				check_dir_index(f, &o, &m, &k, buf, size);
				break;
			case KEY_EXTENT_DATA:
				check_extent(f, &o, &k, buf, size);
				break;
			default:
				fsck_error(f, "object %llu: unknown item type %u",
					   (unsigned long long)k.objectid, k.type);
				bad_item(f, &k, false);
			}
		}
		ret = btree_next(&p);
	}
	btree_path_release(&p);
	obj_finish(f, &o, &m);
	free(o.dents);
	if (ret < 0) {
		/* an unreadable node: reported by the core's walk too; the
		 * cross-object counts below would only echo it */
		fsck_error(f, "fs tree %llu: items unreadable after (%llu, %u, %llu): %s",
			   (unsigned long long)btree_root_id(fsroot), (unsigned long long)k.objectid,
			   k.type, (unsigned long long)k.offset, strerror(-ret));
		fsck_map_free(&m);
		return 0;
	}

	/* types first: a wrong one makes the subdirectory counts (link
	 * counts of directories) wrong too */
	bool types = false;
	htable_for_each(&m.t, i, h) {
		struct ino_info *ii = htable_entry(h, struct ino_info, h);
		if (ii->has_item && ii->entries &&
		    (ii->badtype || ii->seen_type != dir_type_of(ii->mode)))
			ii->badtype = types = names_unsure = true;
	}
	/* each name against its back reference, both ways: before the link
	 * counts, which leave to it what it reported */
	if ((ret = names_check(f, fsroot, &m))) {
		fsck_map_free(&m);
		return ret;
	}
	/* links, types, orphans */
	bool root_ok = false, missing = false;
	htable_for_each(&m.t, i, h) {
		struct ino_info *ii = htable_entry(h, struct ino_info, h);
		unsigned long long ino = h->key;
		struct key ok = { ORPHAN_OBJECTID, KEY_ORPHAN_ITEM, ino };
		if (!ii->has_item) {
			if (ii->entries + ii->unindexed) {
				fsck_error(f, "inode %llu: named by %u directory entries but missing",
					   ino, ii->entries + ii->unindexed);
				missing = true;		/* the names go: second walk below */
				fsck_covered(f, 1);
			}
			if (ii->orphan) {
				fsck_error(f, "orphan item for missing inode %llu", ino);
				fix(f, FIX_DEL_ITEM, 0, 0, &ok);
			}
			continue;
		}
		uint64_t before = fsck_errors(f);
		/* a name whose DIR_INDEX is missing still names it (the index
		 * is added back); the checks below count it */
		uint32_t ent = ii->entries + ii->unindexed;
		/* named nowhere: on the orphan list with no back reference left
		 * it was unlinked while open (the mount frees it); a back
		 * reference says it had a name, lost since */
		bool unnamed = ino != ROOT_DIR_INO && ent == 0 && (!ii->orphan || ii->refs);
		if (ino == ROOT_DIR_INO) {
			root_ok = S_ISDIR(ii->mode);
			if (ent)
				fsck_error(f, "root directory is named by %u entries", ent);
		}
		if (ii->badtype)
			fsck_error(f, "inode %llu: an entry naming it has type %u, its mode is %o", ino,
				   ii->seen_type, ii->mode);
		/* counts that disagree with no name to show for it: a name
		 * whose DIR_INDEX is rebuilt first, a back reference twice */
		if (ii->refs != ent && !ii->name_errs)
			fsck_error(f, "inode %llu: %u back references, %u directory entries", ino,
				   ii->refs, ent);
		uint32_t want = ii->nlink;
		if (S_ISDIR(ii->mode)) {
			want = ii->nlink == 0 ? 0 : 2 + ii->subdirs;
			if (ii->nlink != want)
				fsck_error(f, "dir %llu: nlink %u, expected %u", ino, ii->nlink, want);
			if (ino != ROOT_DIR_INO && ii->nlink && ent != 1)
				fsck_error(f, "dir %llu: named by %u entries", ino, ent);
		} else if (ii->nlink != ent) {
			want = ent;
			fsck_error(f, "inode %llu: nlink %u, %u directory entries", ino, ii->nlink,
				   ent);
		}
		if (ii->nlink == 0 && !ii->orphan)
			fsck_error(f, "inode %llu: nlink 0 but no orphan item", ino);
		if (ii->nlink != 0 && ii->orphan)
			fsck_error(f, "inode %llu: orphan item but nlink %u", ino, ii->nlink);
		uint64_t n = fsck_errors(f) - before;
		if (!n)
			continue;
		if (names_unsure) {
			/* repaired by the next pass, from the names this pass makes right */
			fsck_covered(f, n);
			continue;
		}
		if (unnamed) {
			/* named nowhere, on no orphan list: as e2fsck, into lost+found
			 * (its back references, link count and orphan state with it) */
			struct fsck_fix x = { FIX_LOST_FOUND, cur_tree_id, ino, 0, 0, max_ino + 1,
					      { 0, 0, 0 } };
			fsck_fix(f, &x);
			fsck_covered(f, n - 1);
			continue;
		}
		if (ent == 0 && ii->orphan && !ii->refs) {
			/* unlinked but still open at the crash: the orphan item is
			 * right, the mount frees it; only nlink is off */
			fix(f, FIX_INODE_NLINK, ino, 0, NULL);
			fsck_covered(f, n - 1);
			continue;
		}
		/* named: the link count follows the names; a stale orphan item goes */
		/* back references that disagree with the names were each
		 * reported and queued by name (names_check) */
		bool fixed_all = (ii->refs == ent || ii->name_errs) &&
			!ii->badtype &&
			(ino == ROOT_DIR_INO ? !ent : !S_ISDIR(ii->mode) || ent == 1);
		if (S_ISDIR(ii->mode) && ii->nlink == 0)
			want = 2 + ii->subdirs;
		if (want != ii->nlink)
			fix(f, FIX_INODE_NLINK, ino, want, NULL);
		if (ii->orphan)
			fix(f, FIX_DEL_ITEM, 0, 0, &ok);
		if (fixed_all) {
			uint64_t queued = (want != ii->nlink) + ii->orphan;
			if (n > queued)
				fsck_covered(f, n - queued);
		}
	}
	if (!root_ok && m.t.count)	/* an empty tree: the root is made at first mount */
		fsck_error(f, "root directory %llu missing or not a directory",
			   (unsigned long long)ROOT_DIR_INO);
	if (types)
		walk_dents(f, fsroot, &m, queue_type);
	if (missing && !names_unsure)
		walk_dents(f, fsroot, &m, queue_dangling);
	fsck_map_free(&m);
	return 0;
}
