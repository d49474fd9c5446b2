// SPDX-License-Identifier: MIT
/*
 * fsck.glassfs — offline check and repair of a glassfs volume.
 *
 *   fsck.glassfs [-n|-y|-p] [-v] [-c] [-r] DEV...
 *
 * -v lists every node (logical and physical address); -c checks only the
 * storage core (no items-layer checks, data reference counts not compared:
 * for volumes written by the core's own tests, whose fs trees hold no
 * files).
 *
 * Checks, in order: every superblock copy; every node of every tree
 * (checksum, bytenr, owner, key order, item bounds: btree_walk); the
 * extent tree's reference counts against the nodes found and the data
 * references the items layer reports (fsck_data_ref); the free-space tree
 * against the allocations; checksum items against data extents, and every
 * sector of regular file data having one; then the items layer's own
 * checks (fsck_items_check) of each fs tree.
 *
 * Repair (-y: every repair there is; -p: the safe ones, fsck.h): the
 * checks queue a repair beside each error they know one for; a pass makes
 * them in one transaction (fsck_repair.c) and the volume is checked again,
 * until it is clean (exit 1), or a pass repairs nothing more (exit 4: the
 * errors left are printed with why they have no safe repair).  A pending
 * fsync log is never repaired around: mount once to replay it.
 *
 * Exit codes (fsck's): 0 clean, 1 errors corrected, 4 errors left
 * uncorrected, 8 operational error (cannot open, out of memory), 16
 * usage.  A volume a mount holds (dev.h) is refused with exit 8, as
 * e2fsck refuses a mounted filesystem; with -n it is checked anyway,
 * read-only and unclaimed.
 */
#include "fs/ops/mount.h"
#include "fs/core/core_types.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/store/parity.h"
#include "fs/txn/txn.h"
#include "fs/btree/btree.h"
#include "fs/base/crc32c.h"
#include "fs/base/htable.h"
#include "fs/cmd/fsck.h"
#include "fs/cmd/progress.h"
#include "fs/items/log.h"
#include "fs/btree/node.h"
#include "fs/services/scrub.h"
#include "fs/format/items_format.h"
#include "fs/trees/data.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#define MAX_REPORTED 50

#define MAP_BLOCK (64 * 1024)

void *fsck_map_find(const struct fsck_map *m, uint64_t key)
{
	return m->t.b ? htable_find(&m->t, key) : NULL;	/* the hnode starts the entry */
}

void *fsck_map_get(struct fsck_map *m, uint64_t key, size_t esize)
{
	struct hnode *n = fsck_map_find(m, key);

	if (n)
		return n;
	esize = (esize + 15) & ~(size_t)15;
	if (!m->t.b && htable_init(&m->t, 256))
		return NULL;
	if (!m->block || m->used + esize > MAP_BLOCK) {
		void **b = malloc(MAP_BLOCK);

		if (!b)
			return NULL;
		b[0] = m->block;
		m->block = b;
		m->used = 16;
	}
	n = (struct hnode *)((char *)m->block + m->used);
	m->used += esize;
	memset(n, 0, esize);
	n->key = key;
	htable_insert(&m->t, n);
	return n;
}

void fsck_map_free(struct fsck_map *m)
{
	while (m->block) {
		void *prev = *(void **)m->block;

		free(m->block);
		m->block = prev;
	}
	htable_destroy(&m->t);
	m->used = 0;
}

/* The entries of the maps of this file: u64 -> (count, aux). */
struct uent {
	struct hnode h;		/* key; first, as fsck_map wants */
	uint64_t count, aux;
};
_Static_assert(offsetof(struct uent, h) == 0, "fsck_map entries start with their hnode");

/* The entry of key, or NULL: none (and !create), or no memory. */
static struct uent *umap_get(struct fsck_map *m, uint64_t key, bool create)
{
	return create ? fsck_map_get(m, key, sizeof(struct uent)) : fsck_map_find(m, key);
}

/* The entry of hnode h of a umap. */
static struct uent *uent_of(struct hnode *h)
{
	return htable_entry(h, struct uent, h);
}

struct fsck {
	struct core *c;
	int verbose;
	uint64_t errors;
	bool oom;
	const char *tree;	/* tree being checked, for messages */
	uint64_t tree_id;
	struct fsck_map nodes;	/* node bytenr -> times referenced; aux = owner */
	struct fsck_map data_refs;	/* data extent start -> references; aux = length */
	bool items_checked;	/* fsck_items_check ran: data refs are complete */
	uint64_t nodes_seen, items_seen, data_bytes;
	struct progress prog;	/* the line on a terminal: node bytes walked of meta_total */
	uint64_t meta_total;
	bool quiet;		/* preening at boot: no progress line */
	/* repair (fsck.h): queued when repair is asked; fixable counts the
	 * errors that queued one.  fst_bad: the free-space tree disagrees
	 * with the extents in use (rebuilt whole). */
	bool repair;
	struct fsck_fix *fixes;
	size_t nfixes, capfixes;
	uint64_t fixable;
	bool fst_bad;
	uint64_t unreadable;	/* nodes no copy of which could be read */
	struct fsck_map node_level;	/* node bytenr -> level + 1; aux = its generation */
	/* FE_REG ranges of data extents (checksum coverage): extent, start, len */
	struct reg_range { uint64_t ext, start, len; } *regs;
	size_t nregs, capregs;
};

uint64_t fsck_errors(const struct fsck *f)
{
	return f->errors;
}

void fsck_covered(struct fsck *f, uint64_t n)
{
	f->fixable += n;
}

bool fsck_vec_room(struct fsck *f, void **v, size_t n, size_t *cap, size_t elem)
{
	if (n < *cap)
		return true;
	size_t nc = *cap ? *cap * 2 : 64;
	void *nv = realloc(*v, nc * elem);
	if (!nv) {
		f->oom = true;
		return false;
	}
	*v = nv;
	*cap = nc;
	return true;
}

void fsck_fix(struct fsck *f, const struct fsck_fix *x)
{
	f->fixable++;
	if (f->repair && fsck_vec_room(f, (void **)&f->fixes, f->nfixes, &f->capfixes, sizeof(*x)))
		f->fixes[f->nfixes++] = *x;
}

void fsck_error(struct fsck *f, const char *fmt, ...)
{
	va_list ap;

	f->errors++;
	progress_end(&f->prog);	/* the message starts on a clean line */
	if (f->errors > MAX_REPORTED) {
		if (f->errors == MAX_REPORTED + 1)
			printf("ERROR: (further errors counted, not printed)\n");
		return;
	}
	printf("ERROR: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/*
 * Data references are counted per leaf during the node walk (count_leaf):
 * a leaf shared by snapshots holds one reference per file-extent item,
 * however many trees reach it.  The items layer's per-tree reports would
 * count a shared leaf once per tree, so they are not added up.
 */
void fsck_data_ref(struct fsck *f, uint64_t logical, uint64_t extent_len)
{
	(void)f;
	(void)logical;
	(void)extent_len;
}

static void count_data_ref(struct fsck *f, uint64_t logical, uint64_t extent_len)
{
	struct uent *e = umap_get(&f->data_refs, logical, true);

	if (!e) {
		f->oom = true;
		return;
	}
	e->count++;
	if (e->aux && e->aux != extent_len)
		fsck_error(f, "data extent %llu referenced with lengths %llu and %llu",
			   (unsigned long long)logical, (unsigned long long)e->aux,
			   (unsigned long long)extent_len);
	e->aux = extent_len;
}

/* ---- superblock copies -------------------------------------------------- */

/* Is the superblock copy read from offset off whole (magic, checksum,
 * place)?  *want, *crc: the checksum it holds and the one computed. */
static bool super_copy_ok(const struct super_block *sb, uint64_t off, uint32_t *want,
			  uint32_t *crc)
{
	*crc = crc32c(0, (const uint8_t *)sb + 32, SUPER_SIZE - 32);
	memcpy(want, sb->csum, 4);
	return sb->magic == GLASSFS_MAGIC && *crc == *want && sb->bytenr == off;
}

/* A damaged or stale copy: every commit writes every copy of every device
 * from the superblock the volume opened with (the newest valid one), so
 * the repair pass's commit is the repair; one is queued for them all. */
static void superfix(struct fsck *f)
{
	struct fsck_fix x = { FIX_SUPER, 0, 0, 0, 0, 0, { 0, 0, 0 } };

	for (size_t i = 0; i < f->nfixes; i++)
		if (f->fixes[i].kind == FIX_SUPER) {
			f->fixable++;
			return;
		}
	fsck_fix(f, &x);
}

static void check_supers(struct fsck *f)
{
	static const uint64_t offs[SUPER_COPIES] = { SUPER_OFFSET, SUPER_MIRROR1, SUPER_MIRROR2 };
	struct core *c = f->c;
	struct super_block *sb = aligned_alloc(4096, sizeof(*sb));

	if (!sb) {
		f->oom = true;
		return;
	}
	for (int i = 0; i < c->ndevs; i++) {
		struct dev *d = c->devs[i];
		for (int k = 0; k < SUPER_COPIES; k++) {
			uint32_t want, crc;
			if (offs[k] + SUPER_SIZE > d->size)
				continue;
			uint64_t before = f->errors;
			if (dev_read(d, offs[k], sb, SUPER_SIZE)) {
				fsck_error(f, "%s: superblock copy at %llu: read error", d->path,
					   (unsigned long long)offs[k]);
				superfix(f);
				continue;
			}
			if (!super_copy_ok(sb, offs[k], &want, &crc))
				fsck_error(f, "%s: superblock copy at %llu is damaged (magic %s, crc32c expected %08x found %08x)",
					   d->path, (unsigned long long)offs[k],
					   sb->magic == GLASSFS_MAGIC ? "ok" : "bad", want, crc);
			else if (sb->generation + 1 == c->generation)
				/* a crash between the copies of the last commit's
				 * superblock write: the next commit rewrites it */
				printf("note: %s: superblock copy at %llu is one commit behind (generation %llu)\n",
				       d->path, (unsigned long long)offs[k],
				       (unsigned long long)sb->generation);
			else if (sb->generation != c->generation)
				fsck_error(f, "%s: superblock copy at %llu has generation %llu, volume is at %llu",
					   d->path, (unsigned long long)offs[k],
					   (unsigned long long)sb->generation,
					   (unsigned long long)c->generation);
			else if (memcmp(sb->fsid, c->sb.fsid, 16))
				fsck_error(f, "%s: superblock copy at %llu has another fsid", d->path,
					   (unsigned long long)offs[k]);
			if (f->errors > before)
				superfix(f);
		}
	}
	free(sb);
}

/* ---- nodes ---------------------------------------------------------------- */

/* raid5/6: the node verifies as read (no column rebuilt but a missing
 * device's) and its rows' parity matches their data. */
static void check_parity_node(struct fsck *f, uint64_t bytenr, struct node_expect *e)
{
	struct core *c = f->c;
	struct parity_scrub_stats st = { 0 };
	uint8_t *buf = aligned_alloc(4096, c->nodesize);
	int ret;

	if (!buf) {
		f->oom = true;
		return;
	}
	ret = parity_read_verified(c, bytenr, c->nodesize, buf, node_verify_quiet, e);
	if (!ret)
		ret = parity_check_block(c, bytenr, c->nodesize, buf, true, &st);
	if (ret || st.data_errors || st.parity_errors || st.read_errors)
		fsck_error(f, "node %llu (raid5/6): %llu column(s) fail the node's bytes, %llu parity "
			   "sector(s) do not match their row, %llu read error(s)%s",
			   (unsigned long long)bytenr, (unsigned long long)st.data_errors,
			   (unsigned long long)st.parity_errors, (unsigned long long)st.read_errors,
			   ret ? ": cannot be rebuilt" : "");
	free(buf);
}

/* The walk read one good copy; every other copy must verify too. */
/* Every copy of the node at bytenr, held to gen: the generation of the
 * copy the tree read accepted (held to its parent's pointer) — a sound
 * copy of another generation is a lost write, which a read of the
 * other copies would hide. */
static void check_node_copies(struct fsck *f, uint64_t bytenr, uint64_t gen)
{
	struct core *c = f->c;
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	struct node_expect e = { c->nodesize, bytenr, c->sb.fsid, 0, -1, gen, 0 };
	/* a device whose superblock missed commits (a degraded mount wrote
	 * without it) holds earlier generations by design until its resync */
	struct node_expect any = { c->nodesize, bytenr, c->sb.fsid, 0, -1, 0, 0 };
	int n = chunk_map_lookup(c, bytenr, c->nodesize, cp, NULL);
	uint8_t *buf;
	char why[160];

	if (chunk_map_is_parity(c, bytenr)) {
		check_parity_node(f, bytenr, &e);
		return;
	}
	if (n < 2)
		return;
	buf = malloc(c->nodesize);
	if (!buf) {
		f->oom = true;
		return;
	}
	for (int m = 0; m < n; m++) {
		if (dev_read(cp[m].dev, cp[m].physical, buf, c->nodesize))
			fsck_error(f, "node %llu: copy %d on %s at %llu: read error",
				   (unsigned long long)bytenr, m + 1, cp[m].dev->path,
				   (unsigned long long)cp[m].physical);
		else if (node_verify(buf, cp[m].dev->stale ? &any : &e, why, sizeof(why)))
			fsck_error(f, "node %llu: copy %d on %s at %llu is bad: %s",
				   (unsigned long long)bytenr, m + 1, cp[m].dev->path,
				   (unsigned long long)cp[m].physical, why);
	}
	free(buf);
}

static bool is_fs_tree(uint64_t id)
{
	return id == FS_TREE_OBJECTID || id >= FIRST_SUBVOL_OBJECTID;
}

/* The data references of an fs tree leaf (file-extent items). */
static void count_leaf(struct fsck *f, const uint8_t *b)
{
	uint32_t n = nb_nritems(b);

	for (uint32_t i = 0; i < n; i++) {
		struct key k;
		struct file_extent fe;

		nb_item_key(b, (int)i, &k);
		if (k.type != KEY_EXTENT_DATA || nb_item_size(b, (int)i) < sizeof(fe))
			continue;
		memcpy(&fe, b + nb_item_off(b, (int)i), sizeof(fe));
		if ((fe.type == FE_REG || fe.type == FE_PREALLOC) && fe.disk_logical)
			count_data_ref(f, fe.disk_logical, fe.disk_len);
		if (fe.type == FE_REG && fe.disk_logical && fe.num_bytes &&
		    fe.offset + fe.num_bytes <= fe.disk_len) {
			if (!fsck_vec_room(f, (void **)&f->regs, f->nregs, &f->capregs, sizeof(*f->regs)))
				return;
			f->regs[f->nregs++] = (struct reg_range){ fe.disk_logical,
				fe.disk_logical + fe.offset, fe.num_bytes };
		}
	}
}

/* The free-space tree disagrees with the extents: one rebuild repairs
 * every such error (its FIX_USED ranges are queued after the scan). */
static void fst_bad(struct fsck *f)
{
	f->fst_bad = true;
	f->fixable++;
}

static int visit_node(const struct node_info *ni, void *arg)
{
	struct fsck *f = arg;
	struct uent *e = umap_get(&f->nodes, ni->bytenr, true);

	if (!e) {
		f->oom = true;
		return -ENOMEM;
	}
	f->nodes_seen++;
	progress_update(&f->prog, f->nodes_seen * f->c->nodesize, f->meta_total);
	struct uent *lv = umap_get(&f->node_level, ni->bytenr, true);
	if (lv) {
		lv->count = (uint64_t)ni->level + 1;
		lv->aux = ni->generation;
	}
	check_node_copies(f, ni->bytenr, ni->generation);
	if (f->verbose) {
		struct chunk_copy cp[CHUNK_MAX_STRIPES];
		int n = chunk_map_lookup(f->c, ni->bytenr, f->c->nodesize, cp, NULL);
		printf("node %llu level %d tree %s items %u physical %s:%llu\n",
		       (unsigned long long)ni->bytenr, ni->level, f->tree, ni->nritems,
		       n > 0 ? cp[0].dev->path : "?", n > 0 ? (unsigned long long)cp[0].physical : 0ull);
	}
	if (e->count) {
		/* snapshots share nodes between fs trees: each tree reaching
		 * it is one reference; its subtree was counted the first time */
		if (!is_fs_tree(f->tree_id) || e->aux == f->tree_id)
			fsck_error(f, "%s tree: node %llu is referenced twice", f->tree,
				   (unsigned long long)ni->bytenr);
		e->count++;
		return 1;
	}
	e->count++;
	e->aux = f->tree_id;
	if (is_fs_tree(f->tree_id) ? !is_fs_tree(ni->owner) : ni->owner != f->tree_id)
		fsck_error(f, "%s tree: node %llu says it belongs to tree %llu", f->tree,
			   (unsigned long long)ni->bytenr, (unsigned long long)ni->owner);
	if (is_fs_tree(f->tree_id) && ni->level == 0)
		count_leaf(f, ni->block);
	if (ni->generation > f->c->generation)
		fsck_error(f, "%s tree: node %llu has generation %llu, newer than the volume's %llu",
			   f->tree, (unsigned long long)ni->bytenr,
			   (unsigned long long)ni->generation, (unsigned long long)f->c->generation);
	if (!alloc_is_used(f->c, ni->bytenr, f->c->nodesize)) {
		fsck_error(f, "%s tree: node %llu (level %d) lies in space the free-space tree calls free",
			   f->tree, (unsigned long long)ni->bytenr, ni->level);
		fst_bad(f);
	}
	return 0;
}

static void bad_node(uint64_t bytenr, int level, int err, void *arg)
{
	struct fsck *f = arg;

	fsck_error(f, "%s tree: node %llu (level %d) is unreadable or invalid: %s", f->tree,
		   (unsigned long long)bytenr, level, strerror(-err));
	f->unreadable++;
}

static const char *tree_name(enum core_tree t)
{
	static const char *const n[CT_NR] = { "root", "chunk", "extent", "dev", "csum",
					      "free-space", "fs" };
	return n[t];
}

/* ---- extent tree ---------------------------------------------------------- */

struct ext_scan {
	struct fsck_map meta_items;	/* bytenr -> refs (from METADATA_ITEMs) */
	struct fsck_map data_items;	/* logical -> refs; aux = len */
	struct fsck_map meta_level;	/* bytenr -> its METADATA_ITEM's key offset + 1;
					 * aux = the item's generation */
};

static uint64_t s_meta_level(struct ext_scan *s, uint64_t bytenr)
{
	struct uent *e = umap_get(&s->meta_level, bytenr, false);

	return e && e->count ? e->count - 1 : 0;
}

/* ---- the one item walker ------------------------------------------------ */

int fsck_walk(struct root *r, const struct key *from,
	      int (*fn)(void *arg, const struct key *k, const void *d, uint32_t size), void *arg)
{
	struct key k = *from, ik;
	struct path p;
	int ret;

	btree_path_init(&p);
	ret = btree_search_ge(r, &k, &p);
	while (ret == 0) {
		uint32_t size;
		const void *d;

		btree_item_key(&p, p.slots[0], &ik);
		d = btree_item_ptr(&p, p.slots[0], &size);
		ret = fn(arg, &ik, d, size);
		if (ret)
			break;
		ret = btree_next(&p);	/* 1: the end */
	}
	btree_path_release(&p);
	return ret < 0 ? ret : 0;
}

/* ---- extent tree ---------------------------------------------------------- */

struct ext_walk { struct fsck *f; struct ext_scan *s; };

/* One item of the extent tree: METADATA_ITEM, EXTENT_ITEM (BG items are
 * checked against the chunks). */
static int ext_item_seen(void *arg, const struct key *ik, const void *ptr, uint32_t size)
{
	struct ext_walk *w = arg;
	struct fsck *f = w->f;
	struct ext_scan *s = w->s;

	f->items_seen++;
	if (ik->type != KEY_METADATA_ITEM && ik->type != KEY_EXTENT_ITEM)
		return 0;
	struct extent_item ei;
	bool data = ik->type == KEY_EXTENT_ITEM;
	if (size != sizeof(ei)) {
		fsck_error(f, "extent tree: item (%llu %u %llu) has size %u",
			   (unsigned long long)ik->objectid, ik->type,
			   (unsigned long long)ik->offset, size);
		/* removed; the counts below make it again */
		struct fsck_fix x = { FIX_DEL_BAD_ITEM, EXTENT_TREE_OBJECTID, 0, 0, 0, 0, *ik };
		fsck_fix(f, &x);
		return 0;
	}
	memcpy(&ei, ptr, sizeof(ei));
	struct uent *e = umap_get(data ? &s->data_items : &s->meta_items, ik->objectid, true);
	if (!e)
		return -ENOMEM;
	if (e->count)
		fsck_error(f, "extent tree: two items for %s %llu", data ? "data extent" : "node",
			   (unsigned long long)ik->objectid);
	e->count = ei.refs ? ei.refs : ~0ull;
	if (!data) {
		struct uent *lv = umap_get(&s->meta_level, ik->objectid, true);
		if (lv) {
			lv->count = ik->offset + 1;
			lv->aux = ei.generation;
		}
	}
	e->aux = data ? ik->offset : ei.owner;
	if (!ei.refs)
		fsck_error(f, "extent tree: %llu has a zero reference count",
			   (unsigned long long)ik->objectid);
	uint64_t len = data ? ik->offset : f->c->nodesize;
	if (!alloc_is_used(f->c, ik->objectid, len)) {
		fsck_error(f, "free space: extent %llu+%llu is allocated but the free-space tree calls it free",
			   (unsigned long long)ik->objectid, (unsigned long long)len);
		fst_bad(f);
	}
	return 0;
}

static int scan_extent_tree(struct fsck *f, struct ext_scan *s)
{
	struct ext_walk w = { f, s };

	return fsck_walk(core_tree(f->c, CT_EXTENT), &(struct key){ 0, 0, 0 }, ext_item_seen, &w);
}

static void compare_refs(struct fsck *f, struct ext_scan *s)
{
	htable_for_each(&f->nodes.t, i, h) {
		struct uent *n = uent_of(h);
		struct uent *e = umap_get(&s->meta_items, n->h.key, false);
		struct uent *lv = umap_get(&f->node_level, n->h.key, false);
		struct fsck_fix x = { FIX_META_REFS, 0, n->h.key, 0, n->count, n->aux,
				      { 0, 0, lv && lv->count ? lv->count - 1 : 0 } };
		if (!e)
			fsck_error(f, "extent tree: node %llu (tree %llu) has no reference item",
				   (unsigned long long)n->h.key, (unsigned long long)n->aux);
		else if (e->count != n->count)
			fsck_error(f, "extent tree: node %llu has %llu references recorded, %llu found",
				   (unsigned long long)n->h.key, (unsigned long long)e->count,
				   (unsigned long long)n->count);
		/* the generation that allocated it is the one that wrote
		 * it (scrub and balance hold every copy to the item's) */
		struct uent *ml = e ? umap_get(&s->meta_level, n->h.key, false) : NULL;
		bool gen_bad = ml && lv && lv->aux && ml->aux != lv->aux;
		if (gen_bad)
			fsck_error(f, "extent tree: node %llu has generation %llu, its reference item "
				   "records %llu", (unsigned long long)n->h.key,
				   (unsigned long long)lv->aux, (unsigned long long)ml->aux);
		if (!e || e->count != n->count || gen_bad)
			fsck_fix(f, &x);
	}
	htable_for_each(&s->meta_items.t, i, h) {
		struct uent *e = uent_of(h);
		if (!umap_get(&f->nodes, e->h.key, false)) {
			fsck_error(f, "extent tree: reference item for node %llu, which no tree uses (leaked)",
				   (unsigned long long)e->h.key);
			/* its level is the item's key offset: found again at repair */
			struct fsck_fix x = { FIX_META_REFS, 0, e->h.key, 0, 0, 0,
					      { 0, 0, s_meta_level(s, e->h.key) } };
			fsck_fix(f, &x);
		}
	}
	if (!f->items_checked)
		return;
	htable_for_each(&s->data_items.t, i, h) {
		struct uent *e = uent_of(h);
		struct uent *r = umap_get(&f->data_refs, e->h.key, false);
		uint64_t found = r ? r->count : 0;
		if (found != e->count) {
			fsck_error(f, "extent tree: data extent %llu+%llu has %llu references recorded, %llu found",
				   (unsigned long long)e->h.key, (unsigned long long)e->aux,
				   (unsigned long long)e->count, (unsigned long long)found);
			struct fsck_fix x = { FIX_DATA_REFS, 0, e->h.key, e->aux, found, e->count, { 0, 0, 0 } };
			fsck_fix(f, &x);
		}
	}
	htable_for_each(&f->data_refs.t, i, h) {
		struct uent *r = uent_of(h);
		if (!umap_get(&s->data_items, r->h.key, false)) {
			fsck_error(f, "extent tree: file data at %llu (+%llu) has no extent item",
				   (unsigned long long)r->h.key, (unsigned long long)r->aux);
			struct fsck_fix x = { FIX_DATA_REFS, 0, r->h.key, r->aux, r->count, 0, { 0, 0, 0 } };
			fsck_fix(f, &x);
		}
	}
}

/* Every sector the free-space tree calls used must belong to a node or a
 * data extent (leaks); the converse was checked while scanning. */
struct leak_ctx { struct fsck *f; struct ext_scan *s; };

static int check_bg_leaks(const struct bgroup *bg, void *arg)
{
	struct leak_ctx *lc = arg;
	struct fsck *f = lc->f;
	uint64_t ns = f->c->nodesize / CORE_SECTORSIZE;
	uint64_t leaked = 0, first = 0;

	for (uint64_t i = 0; i < bg->nbits;) {
		uint64_t logical = bg->start + i * CORE_SECTORSIZE;
		if (!((bg->used[i >> 6] >> (i & 63)) & 1)) {
			i++;
			continue;
		}
		if (bg->flags & BG_DATA) {
			/* data extents are found by their start */
			struct uent *e = umap_get(&lc->s->data_items, logical, false);
			if (e) {
				i += e->aux / CORE_SECTORSIZE;
				continue;
			}
		} else if (umap_get(&f->nodes, logical, false)) {
			i += ns;
			continue;
		}
		if (!leaked)
			first = logical;
		leaked += CORE_SECTORSIZE;
		i++;
	}
	if (leaked) {
		fsck_error(f, "free space: block group %llu: %llu bytes marked used that nothing references (first at %llu)",
			   (unsigned long long)bg->start, (unsigned long long)leaked,
			   (unsigned long long)first);
		fst_bad(f);
	}
	return 0;
}

/* Read the sectors an EXTENT_CSUM item covers, on every copy, and compare
 * them with their checksums: damaged data is reported, never repaired. */
static void verify_data_piece(struct fsck *f, uint64_t logical, const uint8_t *csums, uint32_t n)
{
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	uint64_t len = (uint64_t)n * CORE_SECTORSIZE;
	uint8_t *buf;
	int ncp = chunk_map_lookup(f->c, logical, len, cp, NULL);

	if (ncp < 0) {
		fsck_error(f, "csum tree: checksums for %llu+%llu map to no chunk",
			   (unsigned long long)logical, (unsigned long long)len);
		return;
	}
	buf = malloc(len);
	if (!buf) {
		f->oom = true;
		return;
	}
	f->data_bytes += len;
	for (int m = 0; m < ncp; m++) {
		if (dev_read(cp[m].dev, cp[m].physical, buf, len)) {
			fsck_error(f, "data %llu+%llu: read error on %s", (unsigned long long)logical,
				   (unsigned long long)len, cp[m].dev->path);
			continue;
		}
		for (uint32_t i = 0; i < n; i++) {
			uint32_t want, got = crc32c(0, buf + (uint64_t)i * CORE_SECTORSIZE,
						    CORE_SECTORSIZE);
			memcpy(&want, csums + (size_t)i * CSUM_SIZE, CSUM_SIZE);
			if (got != want)
				fsck_error(f, "data checksum mismatch: logical %llu on %s physical %llu: expected crc32c %08x, found %08x",
					   (unsigned long long)(logical + (uint64_t)i * CORE_SECTORSIZE),
					   cp[m].dev->path,
					   (unsigned long long)(cp[m].physical + (uint64_t)i * CORE_SECTORSIZE),
					   want, got);
		}
	}
	free(buf);
}

/* raid5/6: every data sector against its checksum, every parity sector
 * against its row (parity_scrub without repairs). */
static void verify_parity(struct fsck *f, uint64_t logical, const uint8_t *csums, uint32_t n)
{
	struct parity_scrub_stats st = { 0 };
	uint32_t *exp = malloc((size_t)n * sizeof(*exp));
	uint8_t *have = malloc(n);
	int ret;

	if (!exp || !have) {
		f->oom = true;
		free(exp);
		free(have);
		return;
	}
	memcpy(exp, csums, (size_t)n * CSUM_SIZE);
	memset(have, 1, n);
	f->data_bytes += (uint64_t)n * CORE_SECTORSIZE;
	ret = parity_scrub(f->c, logical, (uint64_t)n * CORE_SECTORSIZE, exp, have, true, &st);
	if (ret || st.data_errors || st.parity_errors || st.read_errors || st.uncorrectable_bytes)
		fsck_error(f, "data %llu+%llu (raid5/6): %llu data sectors fail their checksum, %llu parity "
			   "sectors disagree with their row, %llu read errors, %llu bytes beyond repair%s",
			   (unsigned long long)logical, (unsigned long long)n * CORE_SECTORSIZE,
			   (unsigned long long)st.data_errors, (unsigned long long)st.parity_errors,
			   (unsigned long long)st.read_errors, (unsigned long long)st.uncorrectable_bytes,
			   ret ? " (the check failed)" : "");
	free(exp);
	free(have);
}

/* verify_data_piece over each raid10 element (the whole range else). */
static void verify_data(struct fsck *f, uint64_t logical, const uint8_t *csums, uint32_t n)
{
	if (chunk_map_is_parity(f->c, logical)) {
		verify_parity(f, logical, csums, n);
		return;
	}
	for (uint32_t i = 0; i < n;) {
		uint64_t at = logical + (uint64_t)i * CORE_SECTORSIZE;
		uint32_t k = (uint32_t)(chunk_map_piece(f->c, at, (uint64_t)(n - i) * CORE_SECTORSIZE) /
					CORE_SECTORSIZE);
		verify_data_piece(f, at, csums + (size_t)i * CSUM_SIZE, k);
		i += k;
	}
}

/* Checksum items must lie inside data extents, and the data must match. */
struct csum_walk { struct fsck *f; struct ext_scan *s; uint64_t ext_start, ext_end; };

static int csum_item_seen(void *arg, const struct key *ik, const void *d, uint32_t size)
{
	struct csum_walk *w = arg;
	struct fsck *f = w->f;

	if (ik->objectid != CSUM_OBJECTID || ik->type != KEY_EXTENT_CSUM)
		return 0;
	uint64_t end = ik->offset + (uint64_t)(size / CSUM_SIZE) * CORE_SECTORSIZE;
	if (!(ik->offset >= w->ext_start && end <= w->ext_end)) {
		/* find the extent containing ik->offset: data extents start at
		 * or before it; probe sector by sector back */
		bool ok = false;
		for (uint64_t b = ik->offset; b + (1ull << 30) > ik->offset && b; b -= CORE_SECTORSIZE) {
			struct uent *e = umap_get(&w->s->data_items, b, false);
			if (e) {
				w->ext_start = b;
				w->ext_end = b + e->aux;
				ok = end <= w->ext_end;
				break;
			}
		}
		if (!ok)
			fsck_error(f, "csum tree: checksums for %llu+%llu lie outside any data extent",
				   (unsigned long long)ik->offset, (unsigned long long)(end - ik->offset));
	}
	if (size % CSUM_SIZE || !size)
		fsck_error(f, "csum tree: item at %llu has size %u", (unsigned long long)ik->offset, size);
	else
		verify_data(f, ik->offset, d, size / CSUM_SIZE);
	return 0;
}

static int check_csums(struct fsck *f, struct ext_scan *s)
{
	struct csum_walk w = { f, s, 0, 0 };

	return fsck_walk(core_tree(f->c, CT_CSUM),
			 &(struct key){ CSUM_OBJECTID, KEY_EXTENT_CSUM, 0 }, csum_item_seen, &w);
}

/* Every item of tree r to fn(f, key, data, size) (fsck_walk). */
struct each_walk { void (*fn)(struct fsck *f, const struct key *k, const void *d, uint32_t size);
		   struct fsck *f; };

static int each_item(void *arg, const struct key *k, const void *d, uint32_t size)
{
	struct each_walk *w = arg;

	w->fn(w->f, k, d, size);
	return 0;
}

static int for_each_item(struct root *r, void (*fn)(struct fsck *f, const struct key *k,
						     const void *d, uint32_t size),
			 struct fsck *f)
{
	struct each_walk w = { fn, f };

	return fsck_walk(r, &(struct key){ 0, 0, 0 }, each_item, &w);
}

/* Chunks, device extents, device items and block groups agree.  Runs
 * under the chunk map's read lock and reads trees: fine offline, where
 * nothing takes the map for writing. */
static int chunk_has_dev_extent(const struct chunk *ch, void *arg)
{
	struct fsck *f = arg;
	struct core *c = f->c;

	for (int i = 0; i < ch->num_stripes; i++) {
		struct dev_extent de;
		struct key k = { ch->stripes[i].devid, KEY_DEV_EXTENT, ch->stripes[i].physical };
		int r = btree_lookup(core_tree(c, CT_DEV), &k, &de, sizeof(de));
		if (r != (int)sizeof(de) || de.chunk_offset != ch->logical ||
		    de.length != chunk_stripe_span(ch->type, ch->num_stripes, ch->length))
			fsck_error(f, "dev tree: chunk %llu stripe %d (device %llu at %llu) has no matching device extent",
				   (unsigned long long)ch->logical, i,
				   (unsigned long long)ch->stripes[i].devid,
				   (unsigned long long)ch->stripes[i].physical);
	}
	struct block_group_item bgi;
	struct key bk = { ch->logical, KEY_BLOCK_GROUP_ITEM, ch->length };
	int r = btree_lookup(core_tree(c, CT_EXTENT), &bk, &bgi, sizeof(bgi));
	if (r != (int)sizeof(bgi) || (bgi.flags & BG_TYPE_MASK) != (ch->type & BG_TYPE_MASK))
		fsck_error(f, "extent tree: chunk %llu+%llu has no matching block group item",
			   (unsigned long long)ch->logical, (unsigned long long)ch->length);
	return 0;
}

/* ---- subvolume names (ROOT_REF / ROOT_BACKREF in the root tree) ---------- */

static struct core_subvol *live_subvol(struct fsck *f, uint64_t id)
{
	for (int i = 0; i < f->c->subvols.n; i++) {
		struct core_subvol *sv = f->c->subvols.v[i];
		if (sv->cr.r.id == id)
			return sv->gone || (sv->flags & ROOT_F_DEAD) ? NULL : sv;
	}
	return NULL;
}

/* Each ROOT_REF has its ROOT_BACKREF (same bytes) and names a live
 * subvolume held by a live one; each BACKREF has its REF.  Collected
 * first, checked after the walk (one path per tree at a time). */
struct rref { struct key k; uint32_t size; uint8_t d[sizeof(struct root_ref) + 256]; };
static struct rref *rrefs;
static size_t nrrefs;

static void root_ref_collect(struct fsck *f, const struct key *k, const void *d, uint32_t size)
{
	struct rref *v;

	if (k->type != KEY_ROOT_REF && k->type != KEY_ROOT_BACKREF)
		return;
	v = realloc(rrefs, (nrrefs + 1) * sizeof(*v));
	if (!v) {
		f->oom = true;
		return;
	}
	rrefs = v;
	v += nrrefs++;
	v->k = *k;
	v->size = size < sizeof(v->d) ? size : (uint32_t)sizeof(v->d);
	memcpy(v->d, d, v->size);
	if (size > sizeof(v->d))
		v->size = size;		/* malformed: reported below */
}

static void root_ref_seen(struct fsck *f, const struct key *k, const void *d, uint32_t size)
{
	const struct root_ref *rr = d;
	bool fwd = k->type == KEY_ROOT_REF;
	uint64_t parent = fwd ? k->objectid : k->offset, child = fwd ? k->offset : k->objectid;
	struct key other = { fwd ? child : parent, fwd ? KEY_ROOT_BACKREF : KEY_ROOT_REF,
			     fwd ? parent : child };
	char buf[sizeof(struct root_ref) + 256];
	int n;

	if (size < sizeof(*rr) || size > sizeof(struct root_ref) + 256 ||
	    sizeof(*rr) + rr->name_len != size || !rr->name_len) {
		fsck_error(f, "root tree: %s (%llu %u %llu) malformed", fwd ? "ROOT_REF" : "ROOT_BACKREF",
			   (unsigned long long)k->objectid, k->type, (unsigned long long)k->offset);
		return;
	}
	if (!live_subvol(f, child))
		fsck_error(f, "root tree: subvolume %llu is named ('%.*s' in %llu) but does not exist",
			   (unsigned long long)child, (int)rr->name_len, rr->name,
			   (unsigned long long)parent);
	if (parent != FS_TREE_OBJECTID && !live_subvol(f, parent))
		fsck_error(f, "root tree: subvolume %llu is named in subvolume %llu, which does not exist",
			   (unsigned long long)child, (unsigned long long)parent);
	n = btree_lookup(core_tree(f->c, CT_ROOT), &other, buf, sizeof(buf));
	if (n != (int)size || memcmp(buf, d, size)) {
		fsck_error(f, "root tree: %s of subvolume %llu in %llu has no matching %s",
			   fwd ? "ROOT_REF" : "ROOT_BACKREF", (unsigned long long)child,
			   (unsigned long long)parent, fwd ? "ROOT_BACKREF" : "ROOT_REF");
		/* a missing twin of a name whose both ends exist: made from the
		 * one there (the same bytes); a twin that says otherwise cannot
		 * be told right from wrong */
		if (n == -ENOENT && live_subvol(f, child) &&
		    (parent == FS_TREE_OBJECTID || live_subvol(f, parent))) {
			struct fsck_fix x = { FIX_COPY_ITEM, ROOT_TREE_OBJECTID, other.objectid, 0,
					      other.offset, other.type, *k };
			fsck_fix(f, &x);
			if (fwd)
				fsck_covered(f, 1);	/* its "has no name" with it */
		}
	}
}

static void check_subvol_names(struct fsck *f)
{
	for (int i = 0; i < f->c->subvols.n; i++) {
		struct core_subvol *sv = f->c->subvols.v[i];
		struct key k = { sv->cr.r.id, KEY_ROOT_BACKREF, 0 }, ik;
		struct path p;
		int ret, named = 0;

		if (sv->gone)
			continue;
		btree_path_init(&p);
		ret = btree_search(NULL, core_tree(f->c, CT_ROOT), &k, &p, 0, 0);
		while (ret >= 0) {
			if (p.slots[0] >= (int)btree_nritems(&p) && btree_next(&p))
				break;
			btree_item_key(&p, p.slots[0], &ik);
			if (ik.objectid != k.objectid || ik.type != KEY_ROOT_BACKREF)
				break;
			named++;
			if (btree_next(&p))
				break;
		}
		btree_path_release(&p);
		if (sv->flags & ROOT_F_DEAD) {
			if (named)
				fsck_error(f, "subvolume %llu is deleted but still named",
					   (unsigned long long)k.objectid);
		} else if (named != 1) {
			fsck_error(f, "subvolume %llu has %d names (ROOT_BACKREF items), expected 1",
				   (unsigned long long)k.objectid, named);
		}
	}
}

static void dev_item_seen(struct fsck *f, const struct key *k, const void *d, uint32_t size)
{
	if (k->type == KEY_DEV_ITEM) {
		const struct dev_item *di = d;
		bool found = false;
		for (int i = 0; i < f->c->ndevs; i++)
			if (size == sizeof(*di) && f->c->devs[i]->devid == di->devid &&
			    !memcmp(f->c->devs[i]->uuid, di->uuid, 16))
				found = true;
		if (!found)
			fsck_error(f, "chunk tree: device item %llu matches no opened device",
				   (unsigned long long)k->offset);
	} else if (k->type != KEY_CHUNK_ITEM) {
		fsck_error(f, "chunk tree: unexpected item type %u", k->type);
	}
}

static void dev_extent_seen(struct fsck *f, const struct key *k, const void *d, uint32_t size)
{
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	const struct dev_extent *de = d;
	bool ok = false;

	if (k->type != KEY_DEV_EXTENT || size != sizeof(*de)) {
		fsck_error(f, "dev tree: unexpected item (%llu %u %llu)",
			   (unsigned long long)k->objectid, k->type, (unsigned long long)k->offset);
		return;
	}
	int n = chunk_map_stripes(f->c, de->chunk_offset, cp);
	for (int i = 0; i < n; i++)
		if (cp[i].dev && cp[i].dev->devid == k->objectid && cp[i].physical == k->offset)
			ok = true;
	if (!ok)
		fsck_error(f, "dev tree: device extent %llu:%llu points at no chunk stripe",
			   (unsigned long long)k->objectid, (unsigned long long)k->offset);
}

/* Block group items' "used" against the free-space tree's bitmaps. */
static int bg_used_matches(const struct bgroup *bg, void *arg)
{
	struct fsck *f = arg;
	struct block_group_item bgi;
	struct key k = { bg->start, KEY_BLOCK_GROUP_ITEM, bg->len };

	if (btree_lookup(core_tree(f->c, CT_EXTENT), &k, &bgi, sizeof(bgi)) == (int)sizeof(bgi) &&
	    bgi.used != bg->used_bytes) {
		fsck_error(f, "block group %llu: item says %llu bytes used, free-space tree %llu",
			   (unsigned long long)bg->start, (unsigned long long)bgi.used,
			   (unsigned long long)bg->used_bytes);
		fst_bad(f);	/* the rebuild rewrites every block group item */
	}
	return 0;
}

/* ---- checksum coverage ------------------------------------------------------ */

static int cmp_reg(const void *a, const void *b)
{
	const struct reg_range *x = a, *y = b;

	int c = key_cmp_u64(x->ext, y->ext);

	return c ? c : key_cmp_u64(x->start, y->start);
}

/* Every sector a regular file extent covers has a checksum (prealloc
 * ranges have none until written: only FE_REG ranges count). */
static void check_csum_coverage(struct fsck *f)
{
	qsort(f->regs, f->nregs, sizeof(*f->regs), cmp_reg);
	for (size_t i = 0; i < f->nregs;) {
		uint64_t ext = f->regs[i].ext, start = f->regs[i].start;
		uint64_t end = start + f->regs[i].len;
		size_t j = i + 1;

		while (j < f->nregs && f->regs[j].ext == ext && f->regs[j].start <= end) {
			if (f->regs[j].start + f->regs[j].len > end)
				end = f->regs[j].start + f->regs[j].len;
			j++;
		}
		i = j;
		uint32_t n = (uint32_t)((end - start) / CORE_SECTORSIZE);
		uint32_t *exp = malloc((size_t)n * sizeof(*exp) + 1);
		uint8_t *have = malloc((size_t)n + 1);
		if (!exp || !have) {
			free(exp);
			free(have);
			f->oom = true;
			return;
		}
		if (data_load_csums(f->c, start, n, exp, have) == 0) {
			for (uint32_t a = 0; a < n;) {
				if (have[a]) {
					a++;
					continue;
				}
				uint32_t b = a;
				while (b < n && !have[b])
					b++;
				uint64_t lo = start + (uint64_t)a * CORE_SECTORSIZE;
				uint64_t len = (uint64_t)(b - a) * CORE_SECTORSIZE;
				fsck_error(f, "csum tree: file data %llu+%llu (extent %llu) has no checksums",
					   (unsigned long long)lo, (unsigned long long)len,
					   (unsigned long long)ext);
				struct fsck_fix x = { FIX_CSUM, 0, lo, len, 0, 0, { 0, 0, 0 } };
				fsck_fix(f, &x);
				a = b;
			}
		}
		free(exp);
		free(have);
	}
}

/* The free-space tree is rebuilt from every node and data extent in use. */
static void queue_fst_rebuild(struct fsck *f, struct ext_scan *s)
{
	htable_for_each(&f->nodes.t, i, h) {
		struct fsck_fix x = { FIX_USED, 0, h->key, f->c->nodesize, 0, 0, { 0, 0, 0 } };

		fsck_fix(f, &x);
		f->fixable--;
	}
	htable_for_each(&s->data_items.t, i, h) {
		struct fsck_fix x = { FIX_USED, 0, h->key, uent_of(h)->aux, 0, 0, { 0, 0, 0 } };

		fsck_fix(f, &x);
		f->fixable--;
	}
	htable_for_each(&f->data_refs.t, i, h) {
		struct uent *r = uent_of(h);
		if (!umap_get(&s->data_items, r->h.key, false)) {
			struct fsck_fix x = { FIX_USED, 0, r->h.key, r->aux, 0, 0, { 0, 0, 0 } };
			fsck_fix(f, &x);
			f->fixable--;
		}
	}
}

static void fsck_free(struct fsck *f, struct ext_scan *s)
{
	fsck_map_free(&f->nodes);
	fsck_map_free(&f->data_refs);
	fsck_map_free(&f->node_level);
	free(f->regs);
	free(f->fixes);
	fsck_map_free(&s->meta_items);
	fsck_map_free(&s->data_items);
	fsck_map_free(&s->meta_level);
	free(rrefs);
	rrefs = NULL;
	nrrefs = 0;
	memset(s, 0, sizeof(*s));
}

/*
 * One check of the volume, read-only.  0 when it ran (f->errors, and
 * f->fixes when f->repair), else the exit code to give (4: the volume
 * cannot even be opened for damage, 8: operational).  f->c is closed.
 */
static int check_volume(struct fsck *f, const char *const *devs, int ndevs, bool core_only,
			bool nflag, bool *pending)
{
	struct core_opts o;
	struct ext_scan s;
	int ret;

	memset(&s, 0, sizeof(s));
	core_opts_default(&o);
	o.readonly = true;
	ret = mount_open(devs, ndevs, &o, &f->c);
	if (ret == -EBUSY && nflag) {
		/* as e2fsck -n on a mounted filesystem: look, change nothing */
		fprintf(stderr, "fsck.glassfs: checking it anyway, read-only (-n): what the mount "
			"has not committed is not seen, and its commits during the check may show "
			"as errors\n");
		o.noclaim = true;
		ret = mount_open(devs, ndevs, &o, &f->c);
	} else if (ret == -EBUSY) {
		fprintf(stderr, "fsck.glassfs: not checked: the volume is in use (mounted?); "
			"fsck.glassfs -n checks it read-only anyway\n");
		return 8;
	}
	if (ret) {
		if (!core_failure_reported())
			fprintf(stderr, "fsck.glassfs: cannot open the volume: %s\n", strerror(-ret));
		/* damaged superblocks or trees needed to open are errors found,
		 * not failures to check (a device with no glassfs magic is 8) */
		if (ret == -EIO || ret == -EUCLEAN) {
			printf("ERROR: the volume's superblocks or core trees are damaged (%s)\n",
			       strerror(-ret));
			return 4;
		}
		return 8;
	}
	*pending = log_pending(f->c);
	printf("fsck.glassfs: checking %s (generation %llu, nodesize %u)\n", devs[0],
	       (unsigned long long)f->c->generation, f->c->nodesize);

	/* progress by bytes: the metadata the walk reads (quiet when preening at boot) */
	progress_init(&f->prog, "fsck", f->quiet);
	for (uint64_t ty = BG_SYSTEM; ty <= BG_METADATA; ty <<= 1) {
		uint64_t tot, fr;
		alloc_space(f->c, ty, &tot, &fr);
		f->meta_total += tot - fr;
	}
	check_supers(f);
	for (int t = 0; t < CT_NR; t++) {
		if (!f->c->roots[t].present)
			continue;
		f->tree = tree_name((enum core_tree)t);
		f->tree_id = core_tree_id((enum core_tree)t);
		ret = btree_walk(&f->c->roots[t].r, visit_node, bad_node, f);
		if (ret < 0 && ret != -EIO && ret != -EUCLEAN)
			goto operational;
	}
	/* subvolumes and snapshots (a deleted one: what its cleaner has left) */
	for (int i = 0; i < f->c->subvols.n; i++) {
		struct core_subvol *sv = f->c->subvols.v[i];

		if (sv->gone)
			continue;
		f->tree = "subvolume";
		f->tree_id = sv->cr.r.id;
		ret = btree_walk_dropped(&sv->cr.r, (sv->flags & ROOT_F_DEAD) ? &sv->drop.progress : NULL,
					 visit_node, bad_node, f);
		if (ret < 0 && ret != -EIO && ret != -EUCLEAN)
			goto operational;
	}
	f->tree = "fs";
	if (core_only) {
		printf("note: core checks only (-c); data reference counts not compared\n");
	} else {
		ret = fsck_items_check(f, core_tree(f->c, CT_FS));
		for (int i = 0; i < f->c->subvols.n && ret >= 0; i++) {
			struct core_subvol *sv = f->c->subvols.v[i];

			if (sv->gone || (sv->flags & ROOT_F_DEAD))
				continue;
			printf("fsck.glassfs: subvolume %llu\n", (unsigned long long)sv->cr.r.id);
			ret = fsck_items_check(f, &sv->cr.r);
		}
		if (ret < 0)
			goto operational;
		f->items_checked = true;
	}
	ret = scan_extent_tree(f, &s);
	if (ret == -ENOMEM)
		goto operational;
	if (ret)
		fsck_error(f, "extent tree: cannot iterate: %s", strerror(-ret));
	compare_refs(f, &s);
	struct leak_ctx lc = { f, &s };
	alloc_for_each_bg(f->c, check_bg_leaks, &lc);
	chunk_for_each(f->c, chunk_has_dev_extent, f);
	check_subvol_names(f);
	ret = for_each_item(core_tree(f->c, CT_ROOT), root_ref_collect, f);
	if (ret == -ENOMEM)
		goto operational;
	for (size_t i = 0; i < nrrefs; i++)
		root_ref_seen(f, &rrefs[i].k, rrefs[i].d, rrefs[i].size);
	ret = for_each_item(core_tree(f->c, CT_CHUNK), dev_item_seen, f);
	if (!ret)
		ret = for_each_item(core_tree(f->c, CT_DEV), dev_extent_seen, f);
	if (ret == -ENOMEM)
		goto operational;
	alloc_for_each_bg(f->c, bg_used_matches, f);
	ret = check_csums(f, &s);
	if (ret == -ENOMEM)
		goto operational;
	if (f->items_checked)
		check_csum_coverage(f);
	if (f->fst_bad)
		queue_fst_rebuild(f, &s);
	/*
	 * A pending fsync log (a crash after fsyncs, before the next commit)
	 * is checked, not replayed: the trees above are the last commit's,
	 * consistent on their own; the log must read back whole (headers,
	 * checksums, records), sit in space the last commit left free, and
	 * the data it makes reachable must match the checksums it logged.
	 * The next read-write mount replays it.
	 */
	ret = log_check(f->c, stdout);
	if (ret == -ENOMEM)
		goto operational;
	if (ret < 0)
		fsck_error(f, "fsync log: damaged, or references data that is not on the "
			   "device (%s; lines above); the last commit is intact", strerror(-ret));
	else if (ret > 0)
		printf("fsck.glassfs: fsync log pending: %d record(s), valid; the next read-write "
		       "mount replays it\n", ret);
	if (f->oom) {
		ret = -ENOMEM;
		goto operational;
	}
	progress_end(&f->prog);
	printf("fsck.glassfs: %llu nodes, %llu extent items, %llu data bytes verified, %llu errors\n",
	       (unsigned long long)f->nodes_seen, (unsigned long long)f->items_seen,
	       (unsigned long long)f->data_bytes, (unsigned long long)f->errors);
	mount_close(f->c);
	f->c = NULL;
	fsck_map_free(&s.meta_items);
	fsck_map_free(&s.data_items);
	fsck_map_free(&s.meta_level);
	return 0;
operational:
	progress_end(&f->prog);
	fprintf(stderr, "fsck.glassfs: operational error: %s\n", strerror(-ret));
	mount_close(f->c);
	f->c = NULL;
	return 8;
}

/*
 * Tests only (test_fsck_repair), as glass-aggd's --test-crash-at: with
 * --test-crash-after N the process ends at once (exit 99, nothing flushed
 * or closed) after the Nth device write of a repair pass, so a test sees
 * what a crash there leaves; every pass prints how many writes it made (0
 * only counts).  --test-bad-repair adds to each pass repairs that make the
 * volume worse, which the pass's check must undo.
 */
static unsigned long crash_after, pass_writes;
static bool crash_hook, bad_repair;

static void crash_recorder(void *arg, const struct dev *d, int op, uint64_t off,
			   const void *buf, uint64_t len)
{
	(void)arg, (void)d, (void)off, (void)buf, (void)len;
	if (op == DEV_WRITE &&
	    __atomic_add_fetch(&pass_writes, 1, __ATOMIC_RELAXED) == crash_after)
		_exit(99);
}

/*
 * A pass that leaves more errors than it found is undone: the superblock
 * copies from before it are written back, which makes the volume the one
 * before the pass again.  Sound because a pass only writes metadata, into
 * space free in the volume before it (the free-space tree is rebuilt
 * before anything is allocated when it was wrong), and frees nothing that
 * is written again before fsck ends; data blocks are never written.
 */
struct saved_supers {
	int n;
	struct { char path[4096]; uint64_t off; uint8_t b[SUPER_SIZE]; } *v;
};

static int supers_save(const char *const *devs, int ndevs, struct saved_supers *ss)
{
	static const uint64_t offs[SUPER_COPIES] = { SUPER_OFFSET, SUPER_MIRROR1, SUPER_MIRROR2 };

	ss->n = 0;
	ss->v = calloc((size_t)ndevs * SUPER_COPIES, sizeof(*ss->v));
	if (!ss->v)
		return -ENOMEM;
	for (int i = 0; i < ndevs; i++) {
		int fd = open(devs[i], O_RDONLY);
		if (fd < 0)
			return -errno;
		for (int k = 0; k < SUPER_COPIES; k++) {
			if (pread(fd, ss->v[ss->n].b, SUPER_SIZE, (off_t)offs[k]) != SUPER_SIZE)
				continue;	/* past the end: no copy there */
			snprintf(ss->v[ss->n].path, sizeof(ss->v[ss->n].path), "%s", devs[i]);
			ss->v[ss->n++].off = offs[k];
		}
		close(fd);
	}
	return 0;
}

static int supers_restore(const struct saved_supers *ss)
{
	int ret = 0;

	for (int i = 0; i < ss->n; i++) {
		int fd = open(ss->v[i].path, O_WRONLY);
		if (fd < 0 || pwrite(fd, ss->v[i].b, SUPER_SIZE, (off_t)ss->v[i].off) != SUPER_SIZE ||
		    fsync(fd))
			ret = -errno;
		if (fd >= 0)
			close(fd);
	}
	return ret;
}

/* One repair pass: the queued repairs in one transaction (fsck.h).  The
 * repairs made, or -errno. */
static int repair_pass(const char *const *devs, int ndevs, const struct fsck_fix *v, size_t n)
{
	struct core_opts o;
	struct core *c;
	int ret, r2;

	core_opts_default(&o);
	o.commit_interval_s = 3600;
	/* what the pass frees must stay on the device until fsck ends: an
	 * undone pass (supers_restore) points at it again */
	o.discard = CORE_DISCARD_OFF;
	if (crash_hook) {
		pass_writes = 0;
		o.dev_recorder = crash_recorder;
	}
	ret = mount_open(devs, ndevs, &o, &c);
	if (ret) {
		fprintf(stderr, "fsck.glassfs: cannot open the volume read-write to repair it: %s\n",
			strerror(-ret));
		return ret;
	}
	/* --test-bad-repair: a pass that makes the volume worse */
	struct fsck_fix *w = NULL;
	if (bad_repair && (w = malloc((n + 3) * sizeof(*w)))) {
		memcpy(w, v, n * sizeof(*w));
		w[n] = (struct fsck_fix){ FIX_INODE_NLINK, FS_TREE_OBJECTID, ROOT_DIR_INO, 0, 99, 0, { 0, 0, 0 } };
		w[n + 1] = (struct fsck_fix){ FIX_INODE_SIZE, FS_TREE_OBJECTID, ROOT_DIR_INO, 0, 12345, 0, { 0, 0, 0 } };
		w[n + 2] = (struct fsck_fix){ FIX_INODE_NBYTES, FS_TREE_OBJECTID, ROOT_DIR_INO, 0, 4096, 0, { 0, 0, 0 } };
		v = w;
		n += 3;
	}
	ret = fsck_repair_apply(c, v, n);
	free(w);
	r2 = mount_close(c);
	if (crash_hook)
		printf("fsck.glassfs: repair pass: %lu device writes\n", pass_writes);
	return ret < 0 ? ret : r2 ? r2 : ret;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("fsck.glassfs %s\n", GLASSFS_VERSION);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "--help"))
		argv[1] = "-h";
	struct fsck f;
	struct core_opts o;
	int opt, ret;
	bool core_only = false, scrub = false, preen = false, nflag = false, yflag = false;
	bool verbose = false;
	uint64_t corrected = 0;

	/* Exit status as fsck(8): 0 clean, 1 errors corrected, 4 errors left
	 * uncorrected, 8 operational error, 16 usage error. */
	static const struct option longopts[] = {
		{ "test-crash-after", required_argument, NULL, 1 },
		{ "test-bad-repair", no_argument, NULL, 2 },
		{ NULL, 0, NULL, 0 },
	};
	while ((opt = getopt_long(argc, argv, "nvycrhap", longopts, NULL)) != -1) {
		switch (opt) {
		case 1:
			crash_hook = true;
			crash_after = strtoul(optarg, NULL, 0);
			break;
		case 2:
			bad_repair = true;
			break;
		case 'r':
			scrub = true;
			break;
		case 'a':
		case 'p':	/* preen (boot, fstab): the safe repairs, no questions */
			scrub = preen = true;
			break;
		case 'n':
			nflag = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'c':
			core_only = true;
			break;
		case 'y':
			yflag = true;
			break;
		case 'h':
			printf("usage: fsck.glassfs [-n|-y|-p] [-v] [-c] [-r] DEV...\n"
			       "  -n  check only, change nothing (the default); also checks a\n"
			       "      volume that a mount holds, which is refused (exit 8) otherwise\n"
			       "  -y  repair every error that has a repair (fsck.h lists them):\n"
			       "      free-space tree, reference counts, link counts, orphan items,\n"
			       "      directory index vs entries, entries naming missing inodes\n"
			       "      (removed), inodes nobody names (to /lost+found), missing\n"
			       "      checksums (from agreeing dup/raid1 copies), entry types (from\n"
			       "      the mode), an index and entry that disagree (the side the back\n"
			       "      reference confirms), malformed or unknown items (removed),\n"
			       "      damaged superblock copies, missing subvolume name twins, names\n"
			       "      filed under another hash; each\n"
			       "      pass is one transaction, checked again after it; nothing while\n"
			       "      a node is unreadable on every copy\n"
			       "  -p, -a  preen, as boot does from fstab: -r, then the repairs that\n"
			       "      are always safe (bookkeeping only: no name or data changes);\n"
			       "      skipped while an fsync log awaits its replay at mount\n"
			       "  -r  first rewrite bad copies of dup/raid1 blocks from good ones\n"
			       "      (an offline scrub), then check\n"
			       "exit: 0 clean, 1 errors corrected, 4 errors left, 8 operational\n"
			       "      error, 16 usage error (fsck(8))\n"
			       "  -v  list every node with its physical address\n"
			       "  -c  storage core only: skip the items layer's checks\n"
			       "  --test-crash-after N  tests only: exit 99 after a repair pass's Nth\n"
			       "      device write (0: count them)\n"
			       "  --test-bad-repair  tests only: each repair pass also breaks the root\n"
			       "      directory (the pass must be undone)\n");
			return 0;
		default:
			fprintf(stderr, "usage: fsck.glassfs [-n|-y|-p] [-v] [-c] [-r] DEV...\n");
			return 16;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "fsck.glassfs: no device given\n");
		return 16;
	}
	if (nflag + yflag + preen > 1) {
		fprintf(stderr, "fsck.glassfs: -n, -y and -p exclude each other\n");
		return 16;
	}
	const char *const *devs = (const char *const *)&argv[optind];
	int ndevs = argc - optind;

	core_opts_default(&o);
	if (scrub) {
		struct scrub_opts so = { 0 };
		struct scrub_progress sp;
		o.commit_interval_s = 3600;
		/* the read-write open's commit rewrites every superblock copy:
		 * damaged ones, counted first, are corrected by it */
		struct saved_supers pre = { 0, NULL };
		int bad_supers = 0;
		if (!supers_save(devs, ndevs, &pre))
			for (int i = 0; i < pre.n; i++) {
				uint32_t want, crc;
				bad_supers += !super_copy_ok((const void *)pre.v[i].b, pre.v[i].off,
							     &want, &crc);
			}
		free(pre.v);
		ret = mount_open(devs, ndevs, &o, &f.c);
		if (ret) {
			fprintf(stderr, "fsck.glassfs: -r: cannot open the volume read-write: %s\n",
				strerror(-ret));
			return 8;
		}
		if (log_pending(f.c) && preen) {
			printf("fsck.glassfs: an fsync log is pending (the next mount replays it): "
			       "no rewrite, checking only\n");
			mount_close(f.c);
			f.c = NULL;
			preen = false;
			goto check;
		}
		if (log_pending(f.c)) {
			fprintf(stderr, "fsck.glassfs: -r: an fsync log is pending: mount the volume once "
				"(it replays the log), unmount, then repair\n");
			mount_close(f.c);
			return 8;
		}
		ret = scrub_run(f.c, &so, &sp);
		int r2 = mount_close(f.c);
		f.c = NULL;
		printf("fsck.glassfs: scrub: %llu bytes checked, %llu corrected, %llu uncorrectable\n",
		       (unsigned long long)sp.checked_bytes, (unsigned long long)sp.corrected_bytes,
		       (unsigned long long)sp.uncorrectable_bytes);
		if (ret || r2) {
			fprintf(stderr, "fsck.glassfs: scrub failed: %s\n", strerror(-(ret ? ret : r2)));
			return 8;
		}
		corrected = sp.corrected_bytes;
		if (bad_supers) {
			printf("fsck.glassfs: %d damaged superblock copies rewritten from the good one\n",
			       bad_supers);
			corrected += (uint64_t)bad_supers;
		}
	}
check:;
	bool repair = (yflag || preen) && !core_only;
	if ((yflag || preen) && core_only)
		printf("fsck.glassfs: -c: the repairs need the items checks; checking only\n");
	uint64_t last_errors = UINT64_MAX;
	struct saved_supers ss = { 0, NULL };

	for (int pass = 0;; pass++) {
		bool pending_log = false;

		memset(&f, 0, sizeof(f));
		f.verbose = verbose && pass == 0;
		f.repair = repair;
		f.quiet = preen;
		ret = check_volume(&f, devs, ndevs, core_only, nflag, &pending_log);
		if (!ret && pass && f.errors > last_errors) {
			printf("fsck.glassfs: repair pass %d left %llu errors where it found %llu: undone, "
			       "the volume is as it was before the pass\n", pass,
			       (unsigned long long)f.errors, (unsigned long long)last_errors);
			ret = supers_restore(&ss);
			if (ret)
				fprintf(stderr, "fsck.glassfs: undoing the pass failed: %s\n",
					strerror(-ret));
			ret = ret ? 8 : 4;
		}
		free(ss.v);
		ss.v = NULL;
		if (ret) {
			fsck_free(&f, &(struct ext_scan){ 0 });
			return ret;
		}
		if (!f.errors) {
			if (pass)
				printf("fsck.glassfs: clean after %d repair pass(es)\n", pass);
			fsck_free(&f, &(struct ext_scan){ 0 });
			return corrected ? 1 : 0;
		}
		if (!repair) {
			if (f.fixable && !nflag)
				printf("fsck.glassfs: %llu of %llu errors have a repair: run fsck.glassfs -y\n",
				       (unsigned long long)(f.fixable < f.errors ? f.fixable : f.errors),
				       (unsigned long long)f.errors);
			fsck_free(&f, &(struct ext_scan){ 0 });
			return 4;
		}
		if (f.unreadable) {
			/* what an unreadable node held, and every node and extent
			 * only it references, would look leaked or missing: a
			 * repair derived from that view would free live data */
			printf("fsck.glassfs: not repaired: %llu node(s) cannot be read from any copy; "
			       "what they reference cannot be told from leaked space, so no repair is "
			       "safe (the volume is left as found; copy off what reads, or restore)\n",
			       (unsigned long long)f.unreadable);
			fsck_free(&f, &(struct ext_scan){ 0 });
			return 4;
		}
		if (pending_log) {
			printf("fsck.glassfs: not repaired: an fsync log is pending; mount the volume "
			       "once (it replays the log), unmount, then repair\n");
			fsck_free(&f, &(struct ext_scan){ 0 });
			return 4;
		}
		if (f.errors >= last_errors) {
			printf("fsck.glassfs: the last pass left %llu errors (before it: %llu): stopping; "
			       "the errors left cannot be repaired safely\n",
			       (unsigned long long)f.errors, (unsigned long long)last_errors);
			fsck_free(&f, &(struct ext_scan){ 0 });
			return 4;
		}
		last_errors = f.errors;
		/* preen: the safe repairs only */
		size_t kept = 0, unsafe = 0;
		for (size_t i = 0; i < f.nfixes; i++) {
			if (preen && !fsck_fix_safe(f.fixes[i].kind))
				unsafe++;
			else
				f.fixes[kept++] = f.fixes[i];
		}
		if (unsafe)
			printf("fsck.glassfs: %zu repair(s) change names or data: not made when "
			       "preening (-p); run fsck.glassfs -y\n", unsafe);
		uint64_t nofix = f.errors > f.fixable ? f.errors - f.fixable : 0;
		if (nofix)
			printf("fsck.glassfs: %llu error(s) have no safe repair (the lines above); "
			       "they are left as found\n", (unsigned long long)nofix);
		if (!kept || pass >= FSCK_MAX_PASSES) {
			printf("fsck.glassfs: nothing more can be repaired safely\n");
			fsck_free(&f, &(struct ext_scan){ 0 });
			return 4;
		}
		printf("fsck.glassfs: repair pass %d: %zu repair(s), one transaction\n", pass + 1,
		       kept);
		ret = supers_save(devs, ndevs, &ss);
		if (!ret)
			ret = repair_pass(devs, ndevs, f.fixes, kept);
		fsck_free(&f, &(struct ext_scan){ 0 });
		if (ret < 0)
			return ret == -ENOMEM ? 8 : 4;
		corrected += (uint64_t)ret;
	}
}
