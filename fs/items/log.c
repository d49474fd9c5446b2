// SPDX-License-Identifier: MIT
/*
 * log.c — the fsync log (see log.h for what it covers).
 *
 * ## On disk
 *
 * A log is a chain of segments, newest first from the superblock's
 * log_root.  A segment is a run of 4 KiB blocks in a METADATA chunk,
 * allocated in the running transaction (free in the last commit's
 * free-space tree, so a crash leaves them unreferenced by the trees):
 *
 *   struct log_seg_hdr   (72 bytes; csum = crc32c of bytes [4, len))
 *   records, `used` bytes in all, each:
 *     struct log_rec_hdr   (len: bytes of the record incl. header)
 *     nitems x (struct log_item_hdr, size bytes of item data)
 *
 * Item kinds: LOG_FS_ITEM (an item of the inode in its fs tree),
 * LOG_CSUM_RESET (key.offset = logical, data = le64 len: the checksums of
 * that data extent are replaced by the LOG_CSUM_ITEMs that follow),
 * LOG_CSUM_ITEM (an EXTENT_CSUM item of the csum tree), LOG_EXT_KEEP
 * (key (ino, EXTENT_DATA, 0), data = ascending le64 file offsets; replay
 * still reads it, logs written before LOG_EXT_RUNS) and LOG_EXT_RUNS (the
 * same key, data = ascending struct log_keep_run).
 *
 * File extents: every EXTENT_DATA item written in a transaction carries
 * that transaction's id as its generation (file.c), so an item of an
 * older generation is exactly as the last commit wrote it.  A record
 * holds the items of the running transaction in full and of the older
 * ones only runs (LOG_EXT_RUNS): [start, end) and a count, for unchanged
 * items that follow each other with no gap (each starts where the one
 * before ends).  Committed extents never overlap, so the committed items
 * whose offsets lie in such a range are exactly the run's: replay keeps
 * them (and checks their count), deletes the inode's other committed
 * extents and inserts the logged ones.  A leaf the last commit wrote
 * (its generation older than the running transaction) is a run of its
 * own without a gap check: it holds exactly the committed items with
 * offsets between its first and its last, so capture reads only its
 * first and last item.  An fsync's record costs what changed, not the
 * file's length or how many extents it has: a file of a million extents
 * with one 4 KiB write logs one item and two runs; its capture reads the
 * leaves this transaction copied.  Checksums are logged for the data
 * written since the last commit only: not for the committed pieces a
 * write leaves on either side of it (csums_committed).
 *
 * ## Capture
 *
 * A record holds the inode's whole state, so capture reading the inode's
 * items afresh at every fsync costs what the transaction changed so far
 * plus a search per committed leaf: after fio's random writes into a
 * 512 MiB file, ~1,300 leaf searches and ~14,500 items per fsync, 1-2 ms
 * of CPU, more than its flush.  So the last capture of a few inodes
 * (LOG_ICACHE_N, the least recently fsync'd goes) is kept for the
 * running transaction as entries — items of this transaction and runs
 * of committed ones, ascending by file offset, no run wider than one
 * leaf — and file.c notes, under the inode's lock, the offset of every
 * extent item it writes or deletes (log_note_extent).  The next fsync
 * reads again only each noted offset and the entries whose ranges hold
 * it (update_extents): an entry no note falls in describes items that
 * did not change.  The record written is the same kind as before (the
 * runs joined where one ends where the next starts); replay is unchanged.
 * Each item's checksum items are read once and kept with it (checksums
 * of data written in this transaction do not change: a sector is written
 * once, and a write in place changes the item reading it).  A commit, a
 * new transaction, a failed capture or too many notes (LOG_ICACHE_NOTES)
 * forget the kept capture; the inode's generation must match too.
 *
 * A segment is valid for superblock generation G only when its
 * parent_gen is G: the commit after G clears log_root in the same
 * superblock write, so a log never outlives its transaction.  The chain
 * starts at log_root when the superblock names a segment, else at the
 * superblock's log_slot (the blocks commit G reserved for its next
 * transaction's first segment, log_commit_slot; free in G's free-space
 * tree) when a segment there has parent_gen G, seq 1 and no prev.
 *
 * ## Ordering
 *
 * fsync: join the running transaction (so it cannot commit under us),
 * read the inode's items under its lock, queue the record, then either
 * wait for the leader writing the log or become it.  The leader writes a
 * segment of every queued record (the files' data went to their extents
 * at write time) and makes it count as log.h says: in a reserved slot
 * (the commit's log_slot for the first segment of a transaction, the
 * slot the segment before named for the others), segment, flush (data
 * and segment: one flush; replay verifies the data of the last segment
 * against the checksums its records carry and drops a record it does
 * not match, verify_last_seg); with no slot, segment, flush,
 * superblocks with log_root = the segment, flush.  A batch with
 * data in raid5/6 chunks flushes its data before a slot's segment too
 * (parity has no checksum), unless no device was written since the
 * leader's last flush began.  Then each waiter ends its handle.
 */
#include "fs/items/log.h"
#include "fs/core/core_types.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/store/meta_io.h"
#include "fs/store/parity.h"
#include "fs/trees/extent.h"
#include "fs/txn/txn.h"
#include "fs/btree/btree.h"
#include "fs/base/crc32c.h"
#include "fs/base/htable.h"
#include "fs/trees/data.h"
#include "fs/items/dir.h"
#include "fs/items/inode.h"
#include "fs/base/probe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#define LOG_MAGIC	0x474f4c5361616c47ull	/* "GlaaSLOG" */
/*
 * A record past this size commits instead: it holds every extent the file
 * changed since the last commit, so a file appended to and fsync'd again
 * and again would log more and more; after the commit it logs only keys
 * for those.
 */
#define LOG_RECORD_COMMIT (32u << 10)
#define LOG_MAX_RECORD	(LOG_RECORD_COMMIT + 4096)	/* capture stops here */
#define LOG_MAX_SEGS	65536			/* chain length read at replay */
#define LOG_BLOCK	4096u			/* segments are multiples of this */
#define LOG_COMMIT_BYTES (64ull << 20)		/* a log this big asks for a commit */
#define LOG_SLOT_MIN	(16u << 10)		/* slot reserved for the next segment */
#define LOG_SLOT_MAX	(1u << 20)
#define LOG_INPLACE_SHIFT 20		/* in-place writes noted per MiB of data */

enum { LOG_FS_ITEM = 1, LOG_CSUM_RESET = 2, LOG_CSUM_ITEM = 3, LOG_EXT_KEEP = 4,
       LOG_EXT_RUNS = 5 };

/* Unchanged committed extents with offsets in [start, end): count of them,
 * each starting where the one before ends (LOG_EXT_RUNS). */
struct log_keep_run {
	uint64_t start, end, count;
};
#define LOG_REC_NEW 1u		/* the inode was created after the last commit */

struct log_seg_hdr {
	uint32_t csum;
	uint32_t nrecords;
	uint64_t magic;
	uint8_t  fsid[16];
	uint64_t parent_gen;	/* superblock generation this log extends */
	uint64_t log_id;	/* random, the same in every segment of one log */
	uint64_t seq;		/* 1, 2, ... along the chain */
	uint64_t bytenr;	/* where this segment sits */
	uint64_t len;		/* segment bytes (LOG_BLOCK multiple) */
	uint64_t used;		/* header + records */
	uint64_t prev;		/* older segment, 0 for the first */
	uint64_t next;		/* slot reserved for the next segment, 0 none */
	uint64_t next_len;	/* its size: the next segment is at most this long */
} __attribute__((packed));
_Static_assert(sizeof(struct log_seg_hdr) == 104, "log segment header layout");

struct log_rec_hdr {
	uint32_t len;		/* record bytes including this header */
	uint32_t nitems;
	uint64_t tree;		/* fs tree id */
	uint64_t ino;
	uint32_t flags;		/* LOG_REC_* */
	uint32_t pad;
} __attribute__((packed));

struct log_item_hdr {
	uint8_t kind;
	struct disk_key key;
	uint32_t size;
} __attribute__((packed));

struct seg_ref {
	uint64_t logical, len;
};

/*
 * One piece of an inode's EXTENT_DATA key space as a capture saw it:
 * an item of the running transaction, logged in full (count 0), or a run
 * of committed items (LOG_EXT_RUNS).  Entries are ascending and disjoint.
 */
struct centry {
	uint64_t start, end;	/* item keys (file offsets) [start, end) */
	uint64_t count;		/* run: committed items in it; 0: an item */
	const void *leaf;	/* run: the leaf read (runs join inside one) */
	void *item;		/* item: its bytes */
	uint32_t size;
	int8_t ext_old;		/* item: its data extent is in the last commit
				 * (1), is not (0), not looked up yet (-1) */
	bool jf, jb;		/* run: may join the run before / after it */
	char *csums;		/* item: its checksum items as logged, once read */
	uint32_t csum_len, csum_items;
};

#define LOG_ICACHE_N	8	/* inodes whose last capture is kept */
#define LOG_ICACHE_NOTES 1024	/* noted offsets kept; past it all are read */

struct capcache {
	uint64_t ino, gen, transid;	/* ino 0: a free slot */
	uint64_t *notes;		/* offsets noted since the capture */
	size_t nnotes, notecap;
	struct centry *e;
	size_t ne, ecap;
	uint64_t used;			/* ls->ic_clock at the last capture */
};

struct log_state {
	struct glock lock;	/* GLOCK_CLASS_MISC, mutex */
	struct gcond cond;	/* a batch was written */
	uint64_t transid;	/* transaction these sets/segments belong to */
	/* queued records (the next batch) */
	char *pend;
	size_t pend_len, pend_cap;
	uint32_t pend_nrec;
	bool pend_flush;		/* a queued record's data needs its own flush */
	uint64_t enq_seq, done_seq;	/* records queued / made durable */
	bool writing;			/* a leader is writing a batch */
	int failed;			/* a batch failed in this transaction */
	/* segments of this transaction (pinned at commit) */
	struct seg_ref *segs;
	size_t nsegs, segcap;
	uint64_t head;			/* newest segment on disk, 0 none */
	uint64_t head_seq, log_id;
	uint64_t next_slot, next_len;	/* reserved for the next segment */
	uint64_t txn_bytes;		/* segment bytes of this transaction */
	uint64_t durable_writes;	/* dev_writes() before the leader's last flush */
	struct htable_set names;	/* inodes whose names changed */
	struct htable_set dirs;		/* directories that lost a name */
	struct htable_set inplace;	/* MiB of data written in place (prealloc):
					 * logical >> LOG_INPLACE_SHIFT */
	struct log_stats st;
	bool names_oom;			/* a set insert failed: cover nothing */
	bool inplace_oom;		/* an inplace insert failed: all may be */
	/* the last capture of a few inodes in this transaction ("Capture");
	 * cap_lock: one capture at a time uses them (lock order: inode,
	 * cap_lock, B-tree, ls->lock); notes change them under ls->lock */
	struct glock cap_lock;		/* GLOCK_CLASS_MISC, mutex */
	struct capcache ic[LOG_ICACHE_N];
	uint64_t ic_clock;
	bool verify;			/* GLASSFS_LOG_VERIFY: check_reuse */
};

static void centries_free(struct centry *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(e[i].item);
		free(e[i].csums);
	}
}

/* Forget an inode's capture (the slot becomes free). */
static void capcache_free(struct capcache *ic)
{
	centries_free(ic->e, ic->ne);
	free(ic->e);
	free(ic->notes);
	ic->e = NULL;
	ic->notes = NULL;
	ic->ne = ic->ecap = ic->nnotes = ic->notecap = 0;
	ic->gen = ic->transid = ic->used = 0;
	/* ino is read without ls->lock (log_note_extent) */
	__atomic_store_n(&ic->ino, 0, __ATOMIC_RELEASE);
}

static void capcache_clear_all(struct log_state *ls)
{
	for (int i = 0; i < LOG_ICACHE_N; i++)
		if (ls->ic[i].ino)
			capcache_free(&ls->ic[i]);
}

int log_init(struct core *c)
{
	struct log_state *ls = calloc(1, sizeof(*ls));

	if (!ls)
		return -ENOMEM;
	glock_init(&ls->lock, GLOCK_MUTEX, GLOCK_CLASS_MISC, LOG_TREE_OBJECTID, -1, -1);
	glock_init(&ls->cap_lock, GLOCK_MUTEX, GLOCK_CLASS_MISC, LOG_TREE_OBJECTID, -1, -1);
	gcond_init(&ls->cond);
	ls->verify = getenv("GLASSFS_LOG_VERIFY") != NULL;
	c->log = ls;
	return 0;
}

void log_destroy(struct core *c)
{
	struct log_state *ls = c->log;

	if (!ls)
		return;
	free(ls->pend);
	free(ls->segs);
	htable_set_destroy(&ls->names);
	htable_set_destroy(&ls->dirs);
	htable_set_destroy(&ls->inplace);
	for (int i = 0; i < LOG_ICACHE_N; i++)
		capcache_free(&ls->ic[i]);
	free(ls);
	c->log = NULL;
}

static int read_seg(struct core *c, uint64_t at, struct log_seg_hdr **out);

/*
 * The segment in the slot the last commit named (sb.log_slot), when it
 * starts this generation's log: whole, of this generation, the first of
 * its chain, no longer than the slot.  Anything else there (nothing yet,
 * an older generation's segment, a torn write, a read error) is no log.
 */
static struct log_seg_hdr *slot_seg(struct core *c)
{
	struct log_seg_hdr *h;

	if (c->sb.log_root || !c->sb.log_slot || read_seg(c, c->sb.log_slot, &h))
		return NULL;
	if (h->parent_gen == c->generation && h->seq == 1 && !h->prev &&
	    h->bytenr == c->sb.log_slot && h->len <= c->sb.log_slot_len)
		return h;
	free(h);
	return NULL;
}

bool log_pending(struct core *c)
{
	struct log_seg_hdr *h;

	if (c->sb.log_root)
		return true;
	h = slot_seg(c);
	free(h);
	return h != NULL;
}

void log_stats(struct core *c, struct log_stats *s)
{
	memset(s, 0, sizeof(*s));
	if (!c->log)
		return;
	glock_write(&c->log->lock);
	*s = c->log->st;
	glock_write_unlock(&c->log->lock);
}

/* Caller holds ls->lock: the sets and segments belong to transid. */
static void sync_transid(struct log_state *ls, uint64_t transid)
{
	if (ls->transid == transid)
		return;
	/* a commit cleared everything; a new transaction starts empty */
	ls->transid = transid;
	capcache_clear_all(ls);
	htable_set_clear(&ls->names);
	htable_set_clear(&ls->dirs);
	htable_set_clear(&ls->inplace);
	ls->names_oom = false;
	ls->inplace_oom = false;
	ls->failed = 0;
}

static void note(struct txn *t, uint64_t ino, bool dir)
{
	struct log_state *ls = txn_core(t)->log;

	if (!ls)
		return;
	glock_write(&ls->lock);
	sync_transid(ls, txn_transid(t));
	if (htable_set_add(dir ? &ls->dirs : &ls->names, ino))
		ls->names_oom = true;
	glock_write_unlock(&ls->lock);
}

void log_note_names(struct txn *t, uint64_t ino) { note(t, ino, false); }
void log_note_dir_removal(struct txn *t, uint64_t dir) { note(t, dir, true); }

void log_note_inplace(struct txn *t, uint64_t logical, uint64_t len)
{
	struct log_state *ls = txn_core(t)->log;

	if (!ls || !len)
		return;
	glock_write(&ls->lock);
	sync_transid(ls, txn_transid(t));
	for (uint64_t m = logical >> LOG_INPLACE_SHIFT; m <= (logical + len - 1) >> LOG_INPLACE_SHIFT;
	     m++)
		if (htable_set_add(&ls->inplace, m))
			ls->inplace_oom = true;
	glock_write_unlock(&ls->lock);
}

static int bytes_reserve(char **p, size_t *cap, size_t need, size_t first);

void log_note_extent(struct txn *t, uint64_t ino, uint64_t off)
{
	struct log_state *ls = txn_core(t)->log;

	if (!ls)
		return;
	/*
	 * Most writes are to files with no kept capture: leave ls->lock
	 * alone then.  A capture of ino cannot start or end meanwhile (the
	 * writer holds the inode's lock); one that gives up ino's slot to
	 * another inode is seen again under the lock.
	 */
	bool kept = false;
	for (int i = 0; i < LOG_ICACHE_N && !kept; i++)
		kept = __atomic_load_n(&ls->ic[i].ino, __ATOMIC_ACQUIRE) == ino;
	if (!kept)
		return;
	glock_write(&ls->lock);
	sync_transid(ls, txn_transid(t));
	for (int i = 0; i < LOG_ICACHE_N; i++) {
		struct capcache *ic = &ls->ic[i];
		if (ic->ino != ino)
			continue;
		if (off == UINT64_MAX || ic->nnotes == LOG_ICACHE_NOTES ||
		    bytes_reserve((char **)&ic->notes, &ic->notecap,
				  (ic->nnotes + 1) * sizeof(*ic->notes), 64 * sizeof(*ic->notes))) {
			/* the next fsync reads everything; until then the
			 * file's writes skip the lock above */
			capcache_free(ic);
			continue;
		}
		ic->notes[ic->nnotes++] = off;
	}
	glock_write_unlock(&ls->lock);
}

void log_commit_clear(struct core *c)
{
	struct log_state *ls = c->log;

	if (!ls)
		return;
	glock_write(&ls->lock);
	__atomic_store_n(&c->log_pins_frees, ls->nsegs > 0, __ATOMIC_RELAXED);
	for (size_t i = 0; i < ls->nsegs; i++)
		alloc_pin(c, ls->segs[i].logical, ls->segs[i].len);
	ls->nsegs = 0;
	ls->head = 0;
	ls->head_seq = 0;
	ls->log_id = 0;
	ls->next_slot = ls->next_len = 0;
	ls->txn_bytes = 0;
	ls->transid = 0;
	capcache_clear_all(ls);
	htable_set_clear(&ls->names);
	htable_set_clear(&ls->dirs);
	htable_set_clear(&ls->inplace);
	ls->names_oom = false;
	ls->inplace_oom = false;
	ls->failed = 0;
	c->sb.log_root = 0;
	c->sb.log_root_level = 0;
	glock_write_unlock(&ls->lock);
}

/* ---- building a record ----------------------------------------------------- */

struct buf {
	char *p;
	size_t len, cap;
	int err;
};

/* Room for need bytes in the buffer *p of capacity *cap: doubled (from
 * first when empty) until need fits.  0 or -ENOMEM (*p unchanged). */
static int bytes_reserve(char **p, size_t *cap, size_t need, size_t first)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : first;
	while (nc < need)
		nc *= 2;
	char *np = realloc(*p, nc);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = nc;
	return 0;
}

static void *buf_grow(struct buf *b, size_t n)
{
	if (b->err)
		return NULL;
	if (b->len + n > LOG_MAX_RECORD) {
		b->err = -E2BIG;
		return NULL;
	}
	if (bytes_reserve(&b->p, &b->cap, b->len + n, 4096)) {
		b->err = -ENOMEM;
		return NULL;
	}
	void *r = b->p + b->len;
	b->len += n;
	return r;
}

static void put_item(struct buf *b, uint32_t *nitems, int kind, const struct key *k,
		     const void *data, uint32_t size)
{
	struct log_item_hdr *h = buf_grow(b, sizeof(*h) + size);

	if (!h)
		return;
	h->kind = (uint8_t)kind;
	h->key = (struct disk_key){ k->objectid, k->type, k->offset };
	h->size = size;
	memcpy(h + 1, data, size);
	(*nitems)++;
}

struct ext_ref {
	uint64_t logical, len;
	uint64_t extent;	/* the data extent's start (disk_logical) */
};

/* Add [start, end) of COUNT committed items to the runs: the last run
 * grows when GROW (it ends where this starts, nothing logged since),
 * else a new run is appended.  -ENOMEM when the array cannot grow. */
static int keep_run_add(struct log_keep_run **keep, size_t *nkeep, size_t *cap, bool grow,
			uint64_t start, uint64_t end, uint64_t count)
{
	if (grow) {
		(*keep)[*nkeep - 1].end = end;
		(*keep)[*nkeep - 1].count += count;
		return 0;
	}
	if (*nkeep == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct log_keep_run *nk = realloc(*keep, nc * sizeof(*nk));

		if (!nk)
			return -ENOMEM;
		*keep = nk;
		*cap = nc;
	}
	(*keep)[(*nkeep)++] = (struct log_keep_run){ start, end, count };
	return 0;
}

/* The items of ino before its extents (inode item, names, xattrs), in
 * full; its names' parents to parents. */
static int capture_head(struct fsctx *fs, uint64_t ino, struct buf *b, uint32_t *nitems,
			uint64_t *parents, int *nparents, int maxparents, uint64_t *walked)
{
	struct path p;
	struct key k = mkkey(ino, 0, 0), ik;
	int ret;

	btree_path_init(&p);
	ret = fsctx_search_ge(fs, &k, &p);
	while (ret == 0) {
		uint32_t size;

		btree_item_key(&p, p.slots[0], &ik);
		if (ik.objectid != ino || ik.type >= KEY_EXTENT_DATA)
			break;
		(*walked)++;
		const void *ptr = btree_item_ptr(&p, p.slots[0], &size);
		put_item(b, nitems, LOG_FS_ITEM, &ik, ptr, size);
		if (ik.type == KEY_INODE_REF) {
			if (*nparents < maxparents)
				parents[(*nparents)++] = ik.offset;
			else
				b->err = -E2BIG;
		}
		if (b->err)
			break;
		ret = btree_next(&p);
	}
	btree_path_release(&p);
	if (ret < 0)
		return ret;
	return b->err;
}

struct cvec {
	struct centry *e;
	size_t n, cap;
};

static int cvec_push(struct cvec *v, const struct centry *x)
{
	if (v->n == v->cap) {
		size_t nc = v->cap ? v->cap * 2 : 64;
		struct centry *ne = realloc(v->e, nc * sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		v->e = ne;
		v->cap = nc;
	}
	v->e[v->n++] = *x;
	return 0;
}

/*
 * Entries for the EXTENT_DATA items of ino with offsets in [lo, hi) (hi
 * UINT64_MAX: to its last), appended to v.  With `leaves`, a leaf the
 * last commit wrote (older than this transaction: a change copies it
 * first) whose items from here on are all this file's extents holds
 * exactly the committed items with offsets from here to its last one:
 * one run for all of them, without reading each (a fragmented file's
 * fsync walked every item: 60,000 per fsync after fio's random writes).
 * Committed items read one by one join the run before them in the same
 * leaf when it ends where they start; an item of this transaction is
 * kept whole.
 */
static int scan_extents(struct fsctx *fs, uint64_t ino, uint64_t transid, uint64_t lo,
			uint64_t hi, bool leaves, struct cvec *v, uint64_t *walked)
{
	struct path p;
	struct key k = mkkey(ino, KEY_EXTENT_DATA, lo), ik;
	int ret;

	btree_path_init(&p);
	ret = fsctx_search_ge(fs, &k, &p);
	while (ret == 0) {
		uint32_t size;
		void *ptr;

		btree_item_key(&p, p.slots[0], &ik);
		if (ik.objectid != ino || ik.type != KEY_EXTENT_DATA ||
		    (hi != UINT64_MAX && ik.offset >= hi))
			break;
		if (ik.offset == UINT64_MAX) {	/* no room for a key range: commit */
			ret = -E2BIG;
			break;
		}
		uint32_t nr = btree_nritems(&p);
		struct key lk;
		if (leaves && btree_leaf_generation(&p) < transid &&
		    nr > (uint32_t)p.slots[0] + 1 &&
		    (btree_item_key(&p, (int)nr - 1, &lk), lk.objectid == ino) &&
		    lk.type == KEY_EXTENT_DATA && lk.offset != UINT64_MAX) {
			const struct file_extent *fe = btree_item_ptr(&p, (int)nr - 1, &size);
			uint64_t end = lk.offset + 1;
			if (size >= sizeof(*fe) && fe->type != FE_INLINE && fe->num_bytes)
				end = lk.offset + fe->num_bytes;
			struct centry x = { .start = ik.offset, .end = end,
					    .count = nr - (uint32_t)p.slots[0], .leaf = p.nodes[0],
					    .ext_old = -1, .jf = true, .jb = end > lk.offset + 1 };
			if ((ret = cvec_push(v, &x)))
				break;
			k = mkkey(ino, KEY_EXTENT_DATA, lk.offset + 1);
			btree_path_release(&p);
			btree_path_init(&p);
			ret = fsctx_search_ge(fs, &k, &p);
			continue;
		}
		(*walked)++;
		ptr = btree_item_ptr(&p, p.slots[0], &size);
		if (size >= FE_INLINE_HDR &&
		    ((const struct file_extent *)ptr)->generation != transid) {
			/* as committed: a place in a run is enough */
			const struct file_extent *fe = ptr;
			uint64_t end = ik.offset + 1;	/* inline, or empty: its key alone */
			if (size >= sizeof(*fe) && fe->type != FE_INLINE && fe->num_bytes)
				end = ik.offset + fe->num_bytes;
			/* a run ends at an inline or empty item: its end is not
			 * where its bytes end */
			bool real = end > ik.offset + 1;
			struct centry *last = v->n ? &v->e[v->n - 1] : NULL;
			if (last && last->count && last->leaf == p.nodes[0] && last->jb && real &&
			    last->end == ik.offset) {
				last->end = end;
				last->count++;
			} else {
				struct centry x = { .start = ik.offset, .end = end, .count = 1,
						    .leaf = p.nodes[0], .ext_old = -1, .jf = real,
						    .jb = real };
				if ((ret = cvec_push(v, &x)))
					break;
			}
		} else {
			struct centry x = { .start = ik.offset, .end = ik.offset + 1, .size = size,
					    .ext_old = -1 };
			x.item = malloc(size ? size : 1);
			if (!x.item) {
				ret = -ENOMEM;
				break;
			}
			memcpy(x.item, ptr, size);
			if ((ret = cvec_push(v, &x))) {
				free(x.item);
				break;
			}
		}
		ret = btree_next(&p);
	}
	btree_path_release(&p);
	return ret < 0 ? ret : 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The entries of the last capture brought up to date: each noted offset
 * (an item written or deleted there since) and the entries whose key
 * ranges hold it are read again, from the lowest start to the highest
 * end among them; the entries elsewhere stand (nothing with a key in
 * them changed).  Takes v's entries.
 */
static int update_extents(struct fsctx *fs, uint64_t ino, uint64_t transid, struct cvec *v,
			  uint64_t *notes, size_t nnotes, uint64_t *walked)
{
	struct cvec nv = { 0 };
	size_t i = 0;
	int ret = 0;

	qsort(notes, nnotes, sizeof(*notes), cmp_u64);
	for (size_t j = 0; j < nnotes && !ret; j++) {
		uint64_t lo = notes[j], hi = lo + 1;
		if (lo == UINT64_MAX) {
			ret = -E2BIG;
			break;
		}
		/* what the last interval's reading made past its end */
		while (nv.n && nv.e[nv.n - 1].end > lo) {
			struct centry *x = &nv.e[--nv.n];
			if (x->start < lo)
				lo = x->start;
			centries_free(x, 1);
		}
		while (i < v->n && v->e[i].end <= lo)
			if ((ret = cvec_push(&nv, &v->e[i])))
				break;
			else
				v->e[i++] = (struct centry){ 0 };
		if (ret)
			break;
		while (i < v->n && v->e[i].start < hi) {
			if (v->e[i].start < lo)
				lo = v->e[i].start;
			if (v->e[i].end > hi)
				hi = v->e[i].end;
			centries_free(&v->e[i], 1);
			v->e[i++] = (struct centry){ 0 };
		}
		while (j + 1 < nnotes && notes[j + 1] < hi)
			j++;
		ret = scan_extents(fs, ino, transid, lo, hi, false, &nv, walked);
	}
	for (; i < v->n && !ret; i++) {
		if ((ret = cvec_push(&nv, &v->e[i])))
			break;
		v->e[i] = (struct centry){ 0 };
	}
	centries_free(v->e, v->n);
	free(v->e);
	if (ret) {
		centries_free(nv.e, nv.n);
		free(nv.e);
		nv = (struct cvec){ 0 };
	}
	*v = nv;
	return ret;
}

static bool inplace_in(struct log_state *ls, uint64_t transid, uint64_t from, uint64_t to)
{
	bool inplace;

	glock_write(&ls->lock);
	sync_transid(ls, transid);
	inplace = ls->inplace_oom;
	for (uint64_t m = from >> LOG_INPLACE_SHIFT; !inplace && m <= (to - 1) >> LOG_INPLACE_SHIFT;
	     m++)
		inplace = htable_set_has(&ls->inplace, m);
	glock_write_unlock(&ls->lock);
	return inplace;
}

static int capture_csums(struct core *c, const struct ext_ref *e, struct buf *b,
			 uint32_t *nitems);

/*
 * The record's part for ino's extents, from the entries: the items of
 * this transaction in full, the runs (joined where one ends where the
 * next starts) in one LOG_EXT_RUNS item, then the checksums of the data
 * those items read, each entry's read once and kept with it.
 * Checksums are logged for the data written since the last commit only:
 * not for the committed pieces a write leaves on either side of it (the
 * extent is in the last commit and nothing went in place there since).
 */
static int emit_extents(struct core *c, struct log_state *ls, uint64_t ino, uint64_t transid,
			struct cvec *v, struct buf *b, uint32_t *nitems, bool *parity)
{
	struct log_keep_run *keep = NULL;
	size_t nkeep = 0, keepcap = 0, *ix = NULL, nix = 0;
	struct ext_ref *exts = NULL;
	bool extend = false;	/* the last run may grow: nothing logged since it */
	int ret = 0;

	if (v->n) {
		ix = malloc(v->n * sizeof(*ix));
		exts = malloc(v->n * sizeof(*exts));
		if (!ix || !exts) {
			free(ix);
			free(exts);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < v->n && !ret && !b->err; i++) {
		struct centry *x = &v->e[i];
		if (x->count) {
			ret = keep_run_add(&keep, &nkeep, &keepcap,
					   extend && x->jf && keep[nkeep - 1].end == x->start,
					   x->start, x->end, x->count);
			extend = x->jb;
			continue;
		}
		extend = false;
		struct key ik = mkkey(ino, KEY_EXTENT_DATA, x->start);
		put_item(b, nitems, LOG_FS_ITEM, &ik, x->item, x->size);
		const struct file_extent *fe = x->item;
		if (x->size < sizeof(*fe) || fe->type == FE_INLINE || fe->generation != transid ||
		    !fe->disk_logical)
			continue;
		/* in a chunk created since the last commit: replay could not
		 * claim it, so commit instead */
		if (alloc_bg_is_new(c, fe->disk_logical)) {
			b->err = -E2BIG;
			break;
		}
		/* the sectors the item reads, not its whole disk extent: a
		 * piece of a 64 MiB extent filled in 1 MiB at a time logged
		 * 64 KiB of checksums and never fit a record */
		uint64_t rs = (fe->disk_logical + fe->offset) & ~(uint64_t)(CORE_SECTORSIZE - 1);
		uint64_t re = (fe->disk_logical + fe->offset + fe->num_bytes + CORE_SECTORSIZE - 1) &
			      ~(uint64_t)(CORE_SECTORSIZE - 1);
		bool dup = false;
		for (size_t k = 0; k < nix && !dup; k++)
			dup = exts[k].logical == rs && exts[k].len == re - rs;
		if (!dup) {
			exts[nix] = (struct ext_ref){ rs, re - rs, fe->disk_logical };
			ix[nix++] = i;
			*parity |= chunk_map_is_parity(c, rs);
		}
	}
	if (!ret && nkeep && !b->err) {
		struct key k = mkkey(ino, KEY_EXTENT_DATA, 0);
		if (nkeep * sizeof(*keep) > LOG_MAX_RECORD)
			b->err = -E2BIG;
		else
			put_item(b, nitems, LOG_EXT_RUNS, &k, keep, (uint32_t)(nkeep * sizeof(*keep)));
	}
	for (size_t k = 0; k < nix && !ret && !b->err; k++) {
		struct centry *x = &v->e[ix[k]];
		if (x->ext_old < 0) {
			struct extent_item ei;
			uint64_t len;
			x->ext_old = !extent_lookup(c, exts[k].extent, true, &ei, &len) &&
				     ei.generation < transid;
		}
		if (x->ext_old && exts[k].len && !inplace_in(ls, transid, exts[k].logical,
							     exts[k].logical + exts[k].len))
			continue;	/* replay keeps the committed checksums */
		if (!x->csums) {
			struct buf cb = { 0 };
			uint32_t cn = 0;
			ret = capture_csums(c, &exts[k], &cb, &cn);
			if (ret) {
				free(cb.p);
				break;
			}
			x->csums = cb.p;
			x->csum_len = (uint32_t)cb.len;
			x->csum_items = cn;
		}
		void *to = buf_grow(b, x->csum_len);
		if (to) {
			memcpy(to, x->csums, x->csum_len);
			*nitems += x->csum_items;
		}
	}
	free(keep);
	free(exts);
	free(ix);
	return ret ? ret : b->err;
}

/*
 * The record's items for ino: its head, then its extents from the
 * inode's last capture in this transaction when there is one (only what
 * was noted since is read), else from a reading of them all; the
 * capture is kept for the next fsync.  Caller holds the inode's lock
 * (shared: no writer) and ls->cap_lock.
 */
static int check_reuse(struct fsctx *fs, struct log_state *ls, uint64_t ino, uint64_t transid,
		       const struct buf *b, size_t from, uint32_t nitems);

static int capture_inode(struct fsctx *fs, struct inode *ip, uint64_t transid, struct buf *b,
			 uint32_t *nitems, uint64_t *parents, int *nparents, int maxparents,
			 uint64_t *walked, bool *reused, bool *parity)
{
	struct core *c = fs->core;
	struct log_state *ls = c->log;
	uint64_t ino = ip->ino, gen = ip->item.generation, *notes = NULL;
	size_t nnotes = 0;
	struct capcache *ic = NULL, *victim = NULL;
	bool full;
	int ret;

	ret = capture_head(fs, ino, b, nitems, parents, nparents, maxparents, walked);
	if (ret)
		return ret;
	glock_write(&ls->lock);
	sync_transid(ls, transid);
	for (int i = 0; i < LOG_ICACHE_N && !ic; i++) {
		struct capcache *x = &ls->ic[i];
		if (x->ino == ino)
			ic = x;
		else if (!victim || !x->ino || (victim->ino && x->used < victim->used))
			victim = x;
	}
	full = !ic || ic->gen != gen || ic->transid != transid;
	if (!ic) {
		ic = victim;
		capcache_free(ic);
		__atomic_store_n(&ic->ino, ino, __ATOMIC_RELEASE);
	}
	if (full) {
		centries_free(ic->e, ic->ne);
		ic->ne = 0;
	}
	ic->gen = gen;
	ic->transid = transid;
	notes = ic->notes;
	nnotes = ic->nnotes;
	ic->notes = NULL;
	ic->nnotes = ic->notecap = 0;
	ic->used = ++ls->ic_clock;
	glock_write_unlock(&ls->lock);

	/* no note can come while we read: writers hold the inode's lock */
	struct cvec v = { ic->e, ic->ne, ic->ecap };
	if (full)
		ret = scan_extents(fs, ino, transid, 0, UINT64_MAX, true, &v, walked);
	else if (nnotes)
		ret = update_extents(fs, ino, transid, &v, notes, nnotes, walked);
	free(notes);
	*reused = !full;
	size_t from = b->len;
	uint32_t n0 = *nitems;
	if (!ret)
		ret = emit_extents(c, ls, ino, transid, &v, b, nitems, parity);
	if (!ret && !full && ls->verify && !b->err)
		ret = check_reuse(fs, ls, ino, transid, b, from, *nitems - n0);
	glock_write(&ls->lock);
	ic->e = v.e;
	ic->ne = v.n;
	ic->ecap = v.cap;
	if (ret)
		capcache_free(ic);	/* a commit follows, or the next reads all */
	glock_write_unlock(&ls->lock);
	return ret;
}

/*
 * GLASSFS_LOG_VERIFY (the tests set it): a capture that started from the
 * kept one must log exactly what a capture reading every item logs — the
 * part for ino's extents, [from, b->len) of b, from nitems items.  A
 * difference is an extent change file.c did not note (log_note_extent),
 * which would replay a stale file: abort, so the test that made it fails
 * where it happened.
 */
static int check_reuse(struct fsctx *fs, struct log_state *ls, uint64_t ino, uint64_t transid,
		       const struct buf *b, size_t from, uint32_t nitems)
{
	struct cvec v = { 0 };
	struct buf full = { 0 };
	uint32_t n = 0;
	uint64_t walked = 0;
	bool parity = false;
	int ret;

	ret = scan_extents(fs, ino, transid, 0, UINT64_MAX, true, &v, &walked);
	if (!ret)
		ret = emit_extents(fs->core, ls, ino, transid, &v, &full, &n, &parity);
	if (!ret && (n != nitems || full.len != b->len - from ||
		     memcmp(full.p, b->p + from, full.len))) {
		fprintf(stderr, "glassfs: fsync log: the reused capture of inode %llu logs %u items "
			"in %zu bytes, a full capture %u in %zu%s\n", (unsigned long long)ino,
			nitems, b->len - from, n, full.len,
			n == nitems && full.len == b->len - from ? " (other bytes)" : "");
		abort();
	}
	centries_free(v.e, v.n);
	free(v.e);
	free(full.p);
	return ret;
}

/*
 * The csum items of the data range [logical, +len), and a LOG_CSUM_RESET
 * before them for the range they start in: from the start of an item
 * that begins before logical and covers it (so replay, which deletes the
 * items starting in the reset range, deletes exactly the items logged).
 */
static int capture_csums(struct core *c, const struct ext_ref *e, struct buf *b,
			 uint32_t *nitems)
{
	struct root *r = core_tree(c, CT_CSUM);
	struct key k = { CSUM_OBJECTID, KEY_EXTENT_CSUM, e->logical }, ik;
	uint64_t from = e->logical, len;
	struct path p;
	int ret;

	btree_path_init(&p);
	ret = btree_search(NULL, r, &k, &p, 0, 0);
	if (ret == 1 && btree_prev(&p) == 0) {
		uint32_t size;
		btree_item_key(&p, p.slots[0], &ik);
		btree_item_ptr(&p, p.slots[0], &size);
		if (ik.objectid == CSUM_OBJECTID && ik.type == KEY_EXTENT_CSUM &&
		    ik.offset + (uint64_t)(size / CSUM_SIZE) * CORE_SECTORSIZE > e->logical)
			from = ik.offset;
	}
	btree_path_release(&p);
	if (ret < 0)
		return ret;
	k.offset = from;
	len = e->logical + e->len - from;
	put_item(b, nitems, LOG_CSUM_RESET, &k, &len, sizeof(len));
	btree_path_init(&p);
	ret = btree_search_ge(r, &k, &p);
	while (ret == 0) {
		uint32_t size;
		void *ptr;

		btree_item_key(&p, p.slots[0], &ik);
		if (ik.objectid != CSUM_OBJECTID || ik.type != KEY_EXTENT_CSUM ||
		    ik.offset >= e->logical + e->len)
			break;
		ptr = btree_item_ptr(&p, p.slots[0], &size);
		put_item(b, nitems, LOG_CSUM_ITEM, &ik, ptr, size);
		if (b->err)
			break;
		ret = btree_next(&p);
	}
	btree_path_release(&p);
	if (ret < 0)
		return ret;
	return b->err;
}

/* ---- writing a batch ----------------------------------------------------- */

/* Remember a reserved range so the commit pins it.  Caller holds ls->lock. */
static int add_seg(struct log_state *ls, uint64_t logical, uint64_t len)
{
	if (ls->nsegs == ls->segcap) {
		size_t nc = ls->segcap ? ls->segcap * 2 : 16;
		struct seg_ref *ns = realloc(ls->segs, nc * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		ls->segs = ns;
		ls->segcap = nc;
	}
	ls->segs[ls->nsegs++] = (struct seg_ref){ logical, len };
	ls->txn_bytes += len;
	return 0;
}

/* Reserve len bytes of metadata space for the log. */
static int reserve(struct core *c, struct log_state *ls, uint64_t len, uint64_t *logical)
{
	int ret = alloc_reserve(c, BG_METADATA, len, LOG_BLOCK, logical);

	if (ret)
		return ret;
	glock_write(&ls->lock);
	ret = add_seg(ls, *logical, len);
	glock_write_unlock(&ls->lock);
	if (ret)
		alloc_free_now(c, *logical, len);
	return ret;
}

/* Reserve [*at, +len) for the next transaction's first segment: pinned
 * at the commit after, like every segment.  0, or nothing to reserve. */
static int reserve_slot(struct core *c, struct log_state *ls, uint64_t *at, uint64_t len)
{
	int ret = alloc_reserve(c, BG_METADATA, len, LOG_BLOCK, at);

	if (ret)
		return ret;
	glock_write(&ls->lock);
	ret = add_seg(ls, *at, len);
	if (!ret) {
		ls->next_slot = *at;
		ls->next_len = len;
	}
	glock_write_unlock(&ls->lock);
	if (ret)
		alloc_free_now(c, *at, len);
	return ret;
}

void log_commit_slot(struct core *c, struct super_block *sb)
{
	struct log_state *ls = c->log;
	uint64_t at = 0;

	sb->log_slot = sb->log_slot_len = 0;
	if (!ls || c->opts.fsync_mode == CORE_FSYNC_COMMIT)
		return;
	/* a chunk this commit creates is in its chunk tree, but the check
	 * is the one every slot takes (write_batch): cheap to skip */
	if (reserve_slot(c, ls, &at, LOG_SLOT_MIN))
		return;
	if (alloc_bg_is_new(c, at)) {
		glock_write(&ls->lock);
		ls->nsegs--;	/* the one reserve_slot added */
		ls->txn_bytes -= LOG_SLOT_MIN;
		ls->next_slot = ls->next_len = 0;
		glock_write_unlock(&ls->lock);
		alloc_free_now(c, at, LOG_SLOT_MIN);
		return;
	}
	sb->log_slot = at;
	sb->log_slot_len = LOG_SLOT_MIN;
	sb->features |= SUPER_FEAT_LOG_SLOT;
}

/*
 * Mount with no log to replay: the slot the last commit named is free in
 * its free-space tree and nothing else took it yet; claim it, so the
 * first fsync of this mount goes there (one flush) and nothing else is
 * written where the superblock says a segment may be.
 */
static void adopt_slot(struct core *c, struct log_state *ls)
{
	uint64_t at = c->sb.log_slot, len = c->sb.log_slot_len;

	if (!at || c->sb.log_root || c->opts.fsync_mode == CORE_FSYNC_COMMIT ||
	    len < LOG_BLOCK || len > LOG_SLOT_MAX || alloc_claim(c, at, len))
		return;
	glock_write(&ls->lock);
	if (add_seg(ls, at, len)) {
		glock_write_unlock(&ls->lock);
		alloc_free_now(c, at, len);
		return;
	}
	ls->next_slot = at;
	ls->next_len = len;
	glock_write_unlock(&ls->lock);
}

/*
 * Device writes issued so far (every device): equal to a value read
 * before a flush began means nothing was written since, so that flush
 * made everything written so far durable.
 */
static uint64_t dev_writes(struct core *c)
{
	int n = __atomic_load_n(&c->ndevs, __ATOMIC_ACQUIRE);
	uint64_t w = 0;

	for (int i = 0; i < n; i++)
		w += __atomic_load_n(&c->devs[i]->cnt.write_ios, __ATOMIC_RELAXED);
	return w;
}

/*
 * Write one segment.  Each segment names a slot reserved for the next
 * one, so a batch that fits its slot needs no superblock write: the
 * segment is found at replay by following `next` from the segment the
 * superblock names, as long as segments there are valid and continue the
 * chain (log_id, seq, prev).  Being there is what makes it count, and it
 * goes out with the data its records reference in one flush: power loss
 * may keep the segment and lose some of that data, and replay then finds
 * a record whose logged checksums the data does not match and drops it
 * (verify_last_seg) — none of the batch's fsyncs had returned, since
 * each waits for this flush.  A batch whose data lies in raid5/6 chunks
 * (flush_data) still flushes the data first: a data column there can
 * match its checksum while the parity written with it was lost, which
 * no checksum shows until a degraded read.  The first segment of a
 * transaction goes to the slot the commit named in its superblock
 * (log_commit_slot, or the one adopt_slot claimed at mount): it starts
 * the chain replay reads from there.  A segment with no slot (the commit
 * named none) or one that does not fit its slot is written elsewhere
 * and the superblock then points at it: flush (data and segment),
 * superblocks, flush — a superblock cannot name a segment that is not
 * whole, since a log the superblock names must read back.
 */
static int write_batch(struct core *c, struct log_state *ls, const char *recs, size_t len,
		       uint32_t nrec, bool flush_data, uint64_t *seg_bytes)
{
	size_t used = sizeof(struct log_seg_hdr) + len;
	uint64_t seglen = (used + LOG_BLOCK - 1) / LOG_BLOCK * LOG_BLOCK, logical, nslot = 0, nlen;
	struct log_seg_hdr *h;
	bool need_super;
	int ret;

	glock_write(&ls->lock);
	uint64_t slot = ls->next_slot, slot_len = ls->next_len, prev = ls->head;
	uint64_t seq = ls->head_seq + 1;
	while (!ls->log_id)
		if (getrandom(&ls->log_id, sizeof(ls->log_id), 0) != sizeof(ls->log_id))
			ls->log_id = glock_now_ns();
	uint64_t log_id = ls->log_id;
	glock_write_unlock(&ls->lock);

	need_super = !slot || seglen > slot_len;
	if (need_super) {
		ret = reserve(c, ls, seglen, &logical);
		if (ret)
			return ret;
		/* a chunk the last commit does not map cannot be read at
		 * replay: commit instead (the chunk is then committed) */
		if (alloc_bg_is_new(c, logical))
			return -EAGAIN;
	} else {
		logical = slot;
	}
	/* the next segment's slot: room for twice this batch */
	nlen = seglen * 2 < LOG_SLOT_MIN ? LOG_SLOT_MIN : seglen * 2 > LOG_SLOT_MAX ? LOG_SLOT_MAX :
	       seglen * 2;
	if (reserve(c, ls, nlen, &nslot) || alloc_bg_is_new(c, nslot))
		nslot = nlen = 0;	/* the next batch rewrites the superblock */

	h = aligned_alloc(4096, seglen);
	if (!h)
		return -ENOMEM;
	memset(h, 0, seglen);
	h->nrecords = nrec;
	h->magic = LOG_MAGIC;
	memcpy(h->fsid, c->sb.fsid, 16);
	h->parent_gen = c->generation;
	h->log_id = log_id;
	h->seq = seq;
	h->bytenr = logical;
	h->len = seglen;
	h->used = used;
	h->prev = prev;
	h->next = nslot;
	h->next_len = nlen;
	memcpy(h + 1, recs, len);
	h->csum = crc32c(0, (uint8_t *)h + 4, seglen - 4);
	/*
	 * A segment in the slot counts as soon as it is on the device whole
	 * and the data its records reference matches their checksums (replay
	 * follows `next` to it and verifies that data): one flush makes both
	 * durable.  raid5/6 data is flushed before (above).  A segment the
	 * superblock names counts only at that write, after the flush below.
	 */
	if (!need_super && flush_data && dev_writes(c) != ls->durable_writes) {
		ret = chunk_flush_devs(c, "fsync log data");
		if (ret) {
			free(h);
			return ret;
		}
	}
	ret = meta_write_copies(c, logical, h, seglen, "fsync log segment");
	free(h);
	uint64_t seen = dev_writes(c);
	if (!ret)
		ret = chunk_flush_devs(c, "fsync log");
	if (ret)
		return ret;
	if (need_super) {
		/* no commit can run: every fsync of this batch holds a handle */
		c->sb.log_root = logical;
		ret = txn_write_super_log(c);
		if (ret)
			return ret;
	}
	/* read before the flush above began; only the leader (ls->writing)
	 * touches it.  The superblock writes since count as not flushed. */
	ls->durable_writes = seen;
	glock_write(&ls->lock);
	ls->head = logical;
	ls->head_seq = seq;
	ls->next_slot = nslot;
	ls->next_len = nlen;
	ls->st.batches++;
	ls->st.bytes += seglen;
	if (need_super)
		ls->st.supers++;
	bool big = ls->txn_bytes > LOG_COMMIT_BYTES;
	glock_write_unlock(&ls->lock);
	if (big) {
		/* the log's space comes back only at a commit: ask for one */
		glock_write(&c->ts.lock);
		if (!c->ts.want_commit) {
			c->ts.want_commit = COMMIT_DIRTY;
			gcond_broadcast(&c->ts.cond);
		}
		glock_write_unlock(&c->ts.lock);
	}
	*seg_bytes = seglen;
	return 0;
}

/* Queue a record and wait until a batch holding it is durable;
 * flush_data: its data must be flushed before the segment (write_batch). */
static int log_write_record(struct core *c, struct log_state *ls, uint64_t transid,
			    const char *rec, size_t len, bool flush_data)
{
	uint64_t my;
	int ret = 0;

	glock_write(&ls->lock);
	sync_transid(ls, transid);
	if (ls->failed) {
		ret = ls->failed;
		glock_write_unlock(&ls->lock);
		return ret;
	}
	if (bytes_reserve(&ls->pend, &ls->pend_cap, ls->pend_len + len, 65536)) {
		glock_write_unlock(&ls->lock);
		return -ENOMEM;
	}
	memcpy(ls->pend + ls->pend_len, rec, len);
	ls->pend_len += len;
	ls->pend_nrec++;
	ls->pend_flush |= flush_data;
	my = ++ls->enq_seq;
	while (ls->done_seq < my) {
		if (ls->writing) {
			gcond_wait(&ls->cond, &ls->lock);
			continue;
		}
		/* lead: take every queued record */
		char *recs = ls->pend;
		size_t rlen = ls->pend_len;
		uint32_t nrec = ls->pend_nrec;
		uint64_t upto = ls->enq_seq, segb = 0;
		bool flush_data = ls->pend_flush;
		ls->pend = NULL;
		ls->pend_len = ls->pend_cap = 0;
		ls->pend_nrec = 0;
		ls->pend_flush = false;
		ls->writing = true;
		glock_write_unlock(&ls->lock);
		int r = write_batch(c, ls, recs, rlen, nrec, flush_data, &segb);
		free(recs);
		glock_write(&ls->lock);
		if (r && !ls->failed) {
			ls->failed = r;
			if (r != -EAGAIN)	/* -EAGAIN: space in a new chunk, not an error */
				core_log(c, "fsync log: writing a segment failed (%s); fsync commits "
					 "instead until the next commit", strerror(-r));
		}
		ls->done_seq = upto;
		ls->writing = false;
		gcond_broadcast(&ls->cond);
	}
	ret = ls->failed;
	glock_write_unlock(&ls->lock);
	return ret;
}

/* ---- fsync ----------------------------------------------------------------- */

int log_fsync(struct fsctx *fs, uint64_t ino)
{
	struct core *c = fs->core;
	struct log_state *ls = c->log;
	struct buf b = { 0 };
	bool reused = false, flush_data = false;	/* raid5/6 data: see write_batch */
	uint64_t parents[8];
	int nparents = 0;
	uint32_t nitems = 0;
	struct inode *ip;
	struct txn *t;
	uint64_t transid, t0 = 0, walked = 0;
	bool isnew;
	int ret;

	if (!ls || c->opts.fsync_mode == CORE_FSYNC_COMMIT || btree_root_id(fs->root) != FS_TREE_OBJECTID)
		return 1;
	if (PROBE_ON(LOG_SYNC_START) || PROBE_ON(LOG_SYNC_END))
		t0 = glock_now_ns();
	ret = txn_join(c, 1, 0, &t);
	if (ret)
		return ret == -EROFS ? ret : 1;
	transid = txn_transid(t);
	/* the log extends the last durable commit: wait for a commit still
	 * in its write phase (commits are pipelined, txn.c); holding the
	 * handle, no other can start writing until we are done */
	if (__atomic_load_n(&c->generation, __ATOMIC_ACQUIRE) + 1 != transid)
		txn_wait_written(c);
	if (__atomic_load_n(&c->generation, __ATOMIC_ACQUIRE) + 1 != transid) {
		txn_end(t);
		return c->aborted ? c->aborted : 1;
	}
	ret = inode_get(fs, ino, &ip);
	if (ret) {
		txn_end(t);
		return ret;
	}
	if (PROBE_ON(LOG_SYNC_START))
		GLASSFS_LOG_SYNC_START(ino, transid);
	inode_rlock(ip);
	if (ip->item.transid < transid) {	/* nothing since the last commit */
		ret = 0;
		goto unlock;
	}
	ret = 1;
	if (!S_ISREG(ip->item.mode) || ip->item.nlink == 0)
		goto unlock;
	isnew = ip->item.generation == transid;
	glock_write(&ls->lock);
	sync_transid(ls, transid);
	bool names_changed = ls->names_oom || htable_set_has(&ls->names, ino) || ls->failed;
	glock_write_unlock(&ls->lock);
	if (names_changed)
		goto unlock;

	struct log_rec_hdr *rh = buf_grow(&b, sizeof(*rh));
	if (!rh) {
		ret = b.err;
		goto unlock;
	}
	glock_write(&ls->cap_lock);
	ret = capture_inode(fs, ip, transid, &b, &nitems, parents, &nparents,
			    (int)(sizeof(parents) / sizeof(parents[0])), &walked, &reused, &flush_data);
	glock_write_unlock(&ls->cap_lock);
	if (ret == -E2BIG || (!ret && b.len > LOG_RECORD_COMMIT)) {
		ret = 1;
		goto unlock;
	}
	if (ret)
		goto unlock;
	if (isnew) {
		/* its names go in at replay: each parent must be in the last
		 * commit and must not have lost a name since (a name removed
		 * there may be the one this file now has) */
		for (int i = 0; i < nparents && ret == 0; i++) {
			struct inode_item pi;
			struct key pk = mkkey(parents[i], KEY_INODE_ITEM, 0);
			int r = btree_lookup(fs->root, &pk, &pi, sizeof(pi));
			if (r != (int)sizeof(pi) || pi.generation >= transid || !S_ISDIR(pi.mode))
				ret = 1;
			glock_write(&ls->lock);
			if (htable_set_has(&ls->dirs, parents[i]) || ls->names_oom)
				ret = 1;
			glock_write_unlock(&ls->lock);
		}
		if (nparents == 0)
			ret = 1;
		if (ret)
			goto unlock;
	}
	inode_runlock(ip);
	rh = (struct log_rec_hdr *)b.p;
	*rh = (struct log_rec_hdr){ (uint32_t)b.len, nitems, btree_root_id(fs->root), ino,
				    isnew ? LOG_REC_NEW : 0, 0 };
	ret = log_write_record(c, ls, transid, b.p, b.len, flush_data);
	glock_write(&ls->lock);
	if (ret == 0)
		ls->st.syncs++;
	ls->st.walked += walked;
	ls->st.reused += reused;
	glock_write_unlock(&ls->lock);
	goto out;
unlock:
	inode_runlock(ip);
out:
	inode_put(fs, ip);
	txn_end(t);
	if (ret == 1) {
		glock_write(&ls->lock);
		ls->st.fallbacks++;
		glock_write_unlock(&ls->lock);
	}
	if (PROBE_ON(LOG_SYNC_END))
		GLASSFS_LOG_SYNC_END(ino, ret, nitems, (uint64_t)b.len,
				     t0 ? glock_now_ns() - t0 : 0);
	free(b.p);
	return ret;
}

/* ---- reading a log ----------------------------------------------------------- */

struct seg {
	struct log_seg_hdr *h;	/* whole segment */
};

/* Read copy m of [logical, +len), piece by piece (a raid10 element
 * each): 1 when there is no copy m, 0, -EUCLEAN, -EIO. */
static int read_copy(struct core *c, uint64_t logical, void *buf, uint64_t len, int m)
{
	for (uint64_t off = 0; off < len;) {
		struct chunk_copy cp[CHUNK_MAX_STRIPES];
		uint64_t type = 0, n = chunk_map_piece(c, logical + off, len - off);
		int ncp = chunk_map_lookup(c, logical + off, n, cp, &type);

		if (ncp < 0 || !(type & BG_METADATA))
			return -EUCLEAN;
		if (m >= ncp)
			return 1;
		if (dev_read(cp[m].dev, cp[m].physical, (uint8_t *)buf + off, n))
			return -EIO;
		off += n;
	}
	return 0;
}

/* read_verified's verify as parity_read_verified calls it. */
struct seg_verify {
	struct core *c;
	uint64_t len;
	int (*fn)(struct core *c, const void *buf, uint64_t logical, uint64_t len);
};

static int seg_verify_cb(const void *buf, uint64_t logical, void *arg)
{
	const struct seg_verify *v = arg;

	return v->fn(v->c, buf, logical, v->len);
}

/* Read [logical, +len) from the first copy that passes verify (raid5/6:
 * rebuilt from parity until it does). */
static int read_verified(struct core *c, uint64_t logical, void *buf, uint64_t len,
			 int (*verify)(struct core *c, const void *buf, uint64_t logical, uint64_t len))
{
	int last = -EIO;

	if (chunk_map_is_parity(c, logical)) {
		struct seg_verify v = { c, len, verify };
		int r = parity_read_verified(c, logical, len, buf, seg_verify_cb, &v);
		return r == -EIO ? -EUCLEAN : r;
	}

	for (int i = 0; i < CHUNK_MAX_STRIPES; i++) {
		int r = read_copy(c, logical, buf, len, i);
		if (r == -EUCLEAN)
			return r;
		if (r > 0)
			break;
		if (r)
			continue;
		last = verify(c, buf, logical, len);
		if (!last)
			return 0;
	}
	return last;
}

static int verify_hdr(struct core *c, const void *buf, uint64_t logical, uint64_t len)
{
	const struct log_seg_hdr *h = buf;

	(void)len;
	if (h->magic != LOG_MAGIC || memcmp(h->fsid, c->sb.fsid, 16) || h->bytenr != logical ||
	    !h->len || h->len % LOG_BLOCK || h->len > (64u << 20) || h->used > h->len ||
	    h->used < sizeof(*h))
		return -EUCLEAN;
	return 0;
}

static int verify_seg(struct core *c, const void *buf, uint64_t logical, uint64_t len)
{
	const struct log_seg_hdr *h = buf;

	if (verify_hdr(c, buf, logical, len) || h->len != len)
		return -EUCLEAN;
	if (crc32c(0, (const uint8_t *)buf + 4, len - 4) != h->csum)
		return -EUCLEAN;
	return 0;
}

/* Check one record's structure; returns its item count or -EUCLEAN. */
static int check_record(const char *p, size_t avail)
{
	const struct log_rec_hdr *rh = (const void *)p;
	size_t off = sizeof(*rh);

	if (avail < sizeof(*rh) || rh->len < sizeof(*rh) || rh->len > avail)
		return -EUCLEAN;
	for (uint32_t i = 0; i < rh->nitems; i++) {
		const struct log_item_hdr *ih = (const void *)(p + off);
		if (off + sizeof(*ih) > rh->len || off + sizeof(*ih) + ih->size > rh->len)
			return -EUCLEAN;
		if (ih->kind < LOG_FS_ITEM || ih->kind > LOG_EXT_RUNS)
			return -EUCLEAN;
		if (ih->kind == LOG_EXT_KEEP && (ih->key.objectid != rh->ino || ih->size % 8))
			return -EUCLEAN;
		if (ih->kind == LOG_EXT_RUNS &&
		    (ih->key.objectid != rh->ino || ih->size % sizeof(struct log_keep_run)))
			return -EUCLEAN;
		if (ih->kind == LOG_FS_ITEM && ih->key.objectid != rh->ino)
			return -EUCLEAN;
		if (ih->kind == LOG_CSUM_RESET && ih->size != 8)
			return -EUCLEAN;
		off += sizeof(*ih) + ih->size;
	}
	return off == rh->len ? (int)rh->nitems : -EUCLEAN;
}

/* Read and verify the segment at `at`: 0 with *out, -errno. */
static int read_seg(struct core *c, uint64_t at, struct log_seg_hdr **out)
{
	struct log_seg_hdr *h = aligned_alloc(4096, LOG_BLOCK);
	int ret;

	if (!h)
		return -ENOMEM;
	ret = read_verified(c, at, h, LOG_BLOCK, verify_hdr);
	if (!ret) {
		uint64_t len = h->len;
		if (len > LOG_BLOCK) {
			free(h);
			h = aligned_alloc(4096, len);
			ret = h ? read_verified(c, at, h, len, verify_seg) : -ENOMEM;
		} else {
			ret = verify_seg(c, h, at, len);
		}
	}
	if (ret) {
		free(h);
		return ret;
	}
	*out = h;
	return 0;
}

static int push_seg(struct seg **v, int *n, struct log_seg_hdr *h)
{
	struct seg *nv = realloc(*v, (size_t)(*n + 1) * sizeof(*nv));

	if (!nv) {
		free(h);
		return -ENOMEM;
	}
	*v = nv;
	nv[(*n)++].h = h;
	return 0;
}

/*
 * The chain, oldest first in *out: back from the superblock's log_root
 * along `prev` (every segment must be valid: the superblock was written
 * after they were flushed), then forward along `next` for as long as
 * valid segments continue it (those were written without a superblock
 * write: one that is there whole counts; the first one that is not ends
 * the log).  *unflushed: the last segment came by `next`, so its flush
 * may not have completed — the data its records reference may be lost
 * (verify_last_seg).  Every segment before it was flushed whole with
 * its data: the leader writes a segment only after the flush of the one
 * before returned.
 */
static int read_chain(struct core *c, struct seg **out, int *nout, bool *unflushed, FILE *msg)
{
	struct seg *v = NULL;
	int n = 0, ret = 0, nsuper;
	uint64_t at = c->sb.log_root;
	struct log_seg_hdr *first = slot_seg(c);

	/* no segment named by the superblock: the chain starts in the slot
	 * the last commit named, if a segment there starts it */
	if (first && push_seg(&v, &n, first))
		return -ENOMEM;

	while (at) {
		struct log_seg_hdr *h;
		ret = read_seg(c, at, &h);
		if (!ret && (h->parent_gen != c->generation ||
			     (n && (h->log_id != v[n - 1].h->log_id || h->seq + 1 != v[n - 1].h->seq)))) {
			if (msg)
				fprintf(msg, "fsync log segment %llu (generation %llu, seq %llu) does not continue the log of superblock generation %llu\n",
					(unsigned long long)at, (unsigned long long)h->parent_gen,
					(unsigned long long)h->seq, (unsigned long long)c->generation);
			free(h);
			ret = -EUCLEAN;
		}
		if (ret) {
			if (msg && ret == -EUCLEAN)
				fprintf(msg, "fsync log segment at %llu is damaged (header or checksum)\n",
					(unsigned long long)at);
			break;
		}
		if (n == LOG_MAX_SEGS) {
			free(h);
			ret = -EUCLEAN;
			if (msg)
				fprintf(msg, "fsync log: more than %d segments\n", LOG_MAX_SEGS);
			break;
		}
		ret = push_seg(&v, &n, h);
		if (ret)
			break;
		at = h->prev;
		if (!at && h->seq != 1) {
			if (msg)
				fprintf(msg, "fsync log: the first segment has seq %llu\n",
					(unsigned long long)h->seq);
			ret = -EUCLEAN;
		}
	}
	/* reverse: oldest first */
	for (int i = 0; i < n / 2; i++) {
		struct seg tmp = v[i];
		v[i] = v[n - 1 - i];
		v[n - 1 - i] = tmp;
	}
	/* forward from the newest the superblock knows (none: the slot's) */
	nsuper = first ? 0 : n;
	while (!ret && n > 0 && n < LOG_MAX_SEGS && v[n - 1].h->next) {
		const struct log_seg_hdr *last = v[n - 1].h;
		struct log_seg_hdr *h;
		if (read_seg(c, last->next, &h))
			break;
		if (h->parent_gen != last->parent_gen || h->log_id != last->log_id ||
		    h->seq != last->seq + 1 || h->prev != last->bytenr || h->len > last->next_len) {
			free(h);
			break;
		}
		ret = push_seg(&v, &n, h);
	}
	/* every record must parse */
	for (int i = 0; i < n && !ret; i++) {
		const char *p = (const char *)(v[i].h + 1);
		size_t avail = v[i].h->used - sizeof(struct log_seg_hdr), off = 0;
		for (uint32_t r = 0; r < v[i].h->nrecords && !ret; r++) {
			int k = check_record(p + off, avail - off);
			if (k < 0) {
				if (msg)
					fprintf(msg, "fsync log segment %llu: record %u is malformed\n",
						(unsigned long long)v[i].h->bytenr, r);
				ret = k;
				break;
			}
			off += ((const struct log_rec_hdr *)(p + off))->len;
		}
	}
	*out = v;
	*nout = n;
	*unflushed = n > nsuper;
	return ret;
}

static void free_chain(struct seg *v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i].h);
	free(v);
}

/*
 * The data sectors one LOG_CSUM_ITEM covers, [logical, +n sectors), on
 * every copy: 0 when each matches its logged checksum, -EUCLEAN (a line
 * on out for the first bad sector) when one does not, -EIO when none
 * does not but a copy could not be read, -errno.  Replay makes them
 * reachable as they are, and fsck holds every copy of reachable data to
 * its checksum (a copy a flush missed included).
 */
static int check_logged_piece(struct core *c, uint64_t ino, uint64_t logical, const void *csums,
			      uint32_t n, FILE *out)
{
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	uint64_t type = 0, len = (uint64_t)n * CORE_SECTORSIZE;
	uint8_t *buf;
	int ncp = chunk_map_lookup(c, logical, len, cp, &type), ret = 0;

	if (ncp <= 0 || !(type & BG_DATA)) {
		if (out)
			fprintf(out, "fsync log: inode %llu: data %llu+%llu is not inside one data chunk\n",
				(unsigned long long)ino, (unsigned long long)logical,
				(unsigned long long)len);
		return -EUCLEAN;
	}
	buf = aligned_alloc(4096, len);
	if (!buf)
		return -ENOMEM;
	for (int m = 0; m < ncp && ret != -EUCLEAN; m++) {
		if (dev_read(cp[m].dev, cp[m].physical, buf, len)) {
			if (out)
				fprintf(out, "fsync log: inode %llu: data %llu+%llu: read error on %s\n",
					(unsigned long long)ino, (unsigned long long)logical,
					(unsigned long long)len, cp[m].dev->path);
			ret = -EIO;	/* the other copies still decide a mismatch */
			continue;
		}
		for (uint32_t i = 0; i < n; i++) {
			uint32_t want;
			memcpy(&want, (const uint8_t *)csums + (size_t)i * CSUM_SIZE, CSUM_SIZE);
			if (crc32c(0, buf + (size_t)i * CORE_SECTORSIZE, CORE_SECTORSIZE) == want)
				continue;
			if (out)
				fprintf(out, "fsync log: inode %llu: data logical %llu on %s physical %llu "
					"does not match its logged checksum: the log references data "
					"that did not reach the device\n", (unsigned long long)ino,
					(unsigned long long)(logical + (uint64_t)i * CORE_SECTORSIZE),
					cp[m].dev->path,
					(unsigned long long)(cp[m].physical + (uint64_t)i * CORE_SECTORSIZE));
			ret = -EUCLEAN;
			break;
		}
	}
	free(buf);
	return ret;
}

/* check_logged_piece over each raid10 element (the whole range else);
 * raid5/6: the data as read (rebuilt from parity where it must be). */
static int check_logged_data(struct core *c, uint64_t ino, uint64_t logical, const void *csums,
			     uint32_t n, FILE *out)
{
	if (chunk_map_is_parity(c, logical)) {
		uint64_t len = (uint64_t)n * CORE_SECTORSIZE;
		uint8_t *buf = malloc(len), *have = malloc(n);
		uint32_t *exp = malloc((size_t)n * sizeof(*exp));
		int ret = buf && have && exp ? 0 : -ENOMEM;

		if (!ret) {
			memcpy(exp, csums, (size_t)n * CSUM_SIZE);
			memset(have, 1, n);
			ret = parity_read(c, logical, len, buf, exp, have) ? -EUCLEAN : 0;
		}
		if (ret == -EUCLEAN && out)
			fprintf(out, "fsync log: inode %llu: data %llu+%llu (raid5/6) does not match its "
				"logged checksums: the log references data that did not reach the devices\n",
				(unsigned long long)ino, (unsigned long long)logical, (unsigned long long)len);
		free(buf);
		free(have);
		free(exp);
		return ret;
	}
	bool eio = false;

	for (uint32_t i = 0; i < n;) {
		uint64_t at = logical + (uint64_t)i * CORE_SECTORSIZE;
		uint32_t k = (uint32_t)(chunk_map_piece(c, at, (uint64_t)(n - i) * CORE_SECTORSIZE) /
					CORE_SECTORSIZE);
		int ret = check_logged_piece(c, ino, at, (const uint8_t *)csums + (size_t)i * CSUM_SIZE,
					     k, out);
		if (ret == -EIO)
			eio = true;	/* the pieces after it may still not match */
		else if (ret)
			return ret;
		i += k;
	}
	return eio ? -EIO : 0;
}

/*
 * The last segment of a chain that came by `next` went out with its data
 * in one flush (write_batch): power loss may have kept it and lost some
 * of that data.  drop[r] is set for each of its records whose logged
 * checksums (every LOG_CSUM_ITEM: the data the inode wrote since the last
 * commit, and any sector an item reaching into it covers) some copy of
 * the data does not match: replay skips such a record, and the inode
 * gets its record before it, or stays as the last commit left it.  None
 * of that segment's fsyncs had returned (each waits for the flush that
 * would have made the data durable), so nothing acknowledged is lost, and
 * nothing replay makes reachable reads other than as it was written.
 * Returns the records dropped, or -errno (a read error: not a lost write).
 */
static int verify_last_seg(struct core *c, const struct log_seg_hdr *h, bool *drop, FILE *msg)
{
	const char *p = (const char *)(h + 1);
	int ndrop = 0;

	for (uint32_t r = 0; r < h->nrecords; r++) {
		const struct log_rec_hdr *rh = (const void *)p;
		const char *q = (const char *)(rh + 1);
		int ret = 0;
		bool eio = false;

		p += rh->len;
		drop[r] = false;
		for (uint32_t k = 0; k < rh->nitems && !ret; k++) {
			const struct log_item_hdr *ih = (const void *)q;
			q += sizeof(*ih) + ih->size;
			if (ih->kind == LOG_CSUM_ITEM)
				ret = check_logged_data(c, rh->ino, ih->key.offset, ih + 1,
							ih->size / CSUM_SIZE, NULL);
			if (ret == -EIO) {
				eio = true;
				ret = 0;
			}
		}
		if (!ret && eio)
			ret = -EIO;
		if (ret == -EIO && msg)
			fprintf(msg, "fsync log: segment %llu record %u (inode %llu): a copy of its "
				"data cannot be read; the copies that read match, the record is "
				"replayed\n", (unsigned long long)h->bytenr, r,
				(unsigned long long)rh->ino);
		if (ret == -EIO)
			ret = 0;	/* not a lost write: as before the check */
		if (ret && ret != -EUCLEAN)
			return ret;
		if (ret) {
			drop[r] = true;
			ndrop++;
			if (msg)
				fprintf(msg, "fsync log: segment %llu record %u (inode %llu): its data did "
					"not all reach the device; replay drops the record (its fsync "
					"never returned)\n", (unsigned long long)h->bytenr, r,
					(unsigned long long)rh->ino);
		}
	}
	return ndrop;
}

int log_check(struct core *c, FILE *out)
{
	struct seg *v;
	int n, ret, recs = 0;
	bool unflushed = false, *drop = NULL;

	if (!log_pending(c))
		return 0;
	if (out) {
		/* where the superblock's segment lies: tests damage it there.
		 * A log that starts in the slot has no segment the superblock
		 * vouches for: damage there reads as a torn first segment */
		struct chunk_copy cp[CHUNK_MAX_STRIPES];
		uint64_t at = c->sb.log_root ? c->sb.log_root : c->sb.log_slot;
		if (chunk_map_lookup(c, at, LOG_BLOCK, cp, NULL) > 0)
			fprintf(out, c->sb.log_root ?
				"fsync log: superblock names segment %llu (%s physical %llu)\n" :
				"fsync log: starts in the slot the last commit named, segment %llu "
				"(%s physical %llu)\n",
				(unsigned long long)at, cp[0].dev->path,
				(unsigned long long)cp[0].physical);
	}
	ret = read_chain(c, &v, &n, &unflushed, out);
	if (!ret && unflushed) {
		drop = calloc(v[n - 1].h->nrecords + 1, sizeof(*drop));
		ret = drop ? verify_last_seg(c, v[n - 1].h, drop, out) : -ENOMEM;
		if (ret > 0)
			recs -= ret;
		if (ret > 0)
			ret = 0;
	}
	for (int i = 0; i < n && !ret; i++) {
		recs += (int)v[i].h->nrecords;
		/* the log's blocks were allocated after the last commit */
		if (alloc_any_used(c, v[i].h->bytenr, v[i].h->len)) {
			if (out)
				fprintf(out, "fsync log segment %llu overlaps space the last commit uses\n",
					(unsigned long long)v[i].h->bytenr);
			ret = -EUCLEAN;
		}
		/* so were the data extents its records reference that the
		 * last commit does not know */
		const char *p = (const char *)(v[i].h + 1);
		for (uint32_t r = 0; r < v[i].h->nrecords && !ret; r++) {
			const struct log_rec_hdr *rh = (const void *)p;
			const char *q = (const char *)(rh + 1);
			p += rh->len;
			if (drop && i == n - 1 && drop[r])
				continue;	/* replay drops it: said above */
			for (uint32_t k = 0; k < rh->nitems && !ret; k++) {
				const struct log_item_hdr *ih = (const void *)q;
				const struct file_extent *fe = (const void *)(ih + 1);
				struct extent_item ei;
				uint64_t l;
				q += sizeof(*ih) + ih->size;
				/* the data written since the last commit: what
				 * replay makes reachable must be on the device */
				if (ih->kind == LOG_CSUM_ITEM) {
					ret = check_logged_data(c, rh->ino, ih->key.offset, ih + 1,
								ih->size / CSUM_SIZE, out);
					continue;
				}
				if (ih->kind != LOG_FS_ITEM || ih->key.type != KEY_EXTENT_DATA ||
				    ih->size < sizeof(*fe) || fe->type == FE_INLINE || !fe->disk_logical)
					continue;
				if (extent_lookup(c, fe->disk_logical, true, &ei, &l) != -ENOENT)
					continue;
				if (alloc_bg_is_new(c, fe->disk_logical) ||
				    alloc_any_used(c, fe->disk_logical, fe->disk_len)) {
					if (out)
						fprintf(out, "fsync log: inode %llu references data %llu+%llu, "
							"which the last commit uses or does not map\n",
							(unsigned long long)rh->ino,
							(unsigned long long)fe->disk_logical,
							(unsigned long long)fe->disk_len);
					ret = -EUCLEAN;
				}
			}
		}
	}
	free_chain(v, n);
	free(drop);
	return ret ? ret : (recs ? recs : 1);
}

/* ---- replay ---------------------------------------------------------------------- */

struct rec_ref {
	uint64_t ino;
	const struct log_rec_hdr *rh;
};

static int cmp_rec(const void *a, const void *b)
{
	const struct rec_ref *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The run holding offset off (runs ascending and disjoint), or -1. */
static ssize_t kept(const struct log_keep_run *keep, size_t n, uint64_t off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (off < keep[mid].start)
			hi = mid;
		else if (off >= keep[mid].end)
			lo = mid + 1;
		else
			return (ssize_t)mid;
	}
	return -1;
}

/*
 * Delete every item of ino except its INODE_REFs and the EXTENT_DATA items
 * inside the keep runs (each run's count of them must be there), dropping
 * data refs.
 */
static int drop_inode_items(struct txn *t, struct fsctx *fs, uint64_t ino,
			    const struct log_keep_run *keep, size_t nkeep)
{
	struct key from = mkkey(ino, 0, 0);
	uint64_t *seen = calloc(nkeep ? nkeep : 1, sizeof(*seen));

	if (!seen)
		return -ENOMEM;
	for (;;) {
		struct key ik;
		struct path p;
		uint64_t dl = 0, dlen = 0;
		ssize_t r;
		int ret;

		btree_path_init(&p);
		ret = fsctx_search_ge(fs, &from, &p);
		while (ret == 0) {
			btree_item_key(&p, p.slots[0], &ik);
			if (ik.objectid != ino) {
				ret = 1;
				break;
			}
			if (ik.type == KEY_EXTENT_DATA && (r = kept(keep, nkeep, ik.offset)) >= 0) {
				seen[r]++;
			} else if (ik.type != KEY_INODE_REF) {
				break;
			}
			ret = btree_next(&p);
		}
		if (ret == 0 && ik.type == KEY_EXTENT_DATA) {
			uint32_t size;
			const struct file_extent *fe = btree_item_ptr(&p, p.slots[0], &size);
			if (size >= sizeof(*fe) && fe->type != FE_INLINE && fe->disk_logical) {
				dl = fe->disk_logical;
				dlen = fe->disk_len;
			}
		}
		btree_path_release(&p);
		if (ret < 0) {
			free(seen);
			return ret;
		}
		if (ret > 0) {		/* past the inode's items: check the runs */
			ret = 0;
			for (size_t i = 0; i < nkeep && !ret; i++) {
				if (seen[i] == keep[i].count)
					continue;
				fprintf(stderr, "glassfs: fsync log: inode %llu: the last commit holds "
					"%llu extents at offsets [%llu, %llu), the log kept %llu\n",
					(unsigned long long)ino, (unsigned long long)seen[i],
					(unsigned long long)keep[i].start, (unsigned long long)keep[i].end,
					(unsigned long long)keep[i].count);
				ret = -EUCLEAN;
			}
			free(seen);
			return ret;
		}
		ret = btree_delete(t, fs->root, &ik);
		if (!ret && dl)
			ret = data_ref(t, dl, dlen, -1);
		if (ret) {
			free(seen);
			return ret;
		}
		from = ik;	/* deleted: the next search lands after it */
	}
}

static int replay_record(struct txn *t, struct fsctx *fs, const struct log_rec_hdr *rh,
			 struct htable_set *claimed, unsigned *items)
{
	struct core *c = fs->core;
	const char *p = (const char *)(rh + 1);
	struct log_keep_run *keep = NULL;	/* aligned copy: item data is packed */
	size_t nkeep = 0;
	int ret = 0;

	for (uint32_t i = 0; i < rh->nitems && !keep; i++) {
		const struct log_item_hdr *ih = (const void *)p;
		if (ih->kind == LOG_EXT_RUNS && ih->size) {
			nkeep = ih->size / sizeof(*keep);
			keep = malloc(ih->size);
			if (!keep)
				return -ENOMEM;
			memcpy(keep, ih + 1, ih->size);
		} else if (ih->kind == LOG_EXT_KEEP && ih->size) {
			/* a log written before runs: one offset, one item */
			nkeep = ih->size / 8;
			keep = malloc(nkeep * sizeof(*keep));
			if (!keep)
				return -ENOMEM;
			for (size_t k = 0; k < nkeep; k++) {
				uint64_t off;
				memcpy(&off, (const char *)(ih + 1) + k * 8, 8);
				keep[k] = (struct log_keep_run){ off, off + 1, 1 };
			}
		}
		p += sizeof(*ih) + ih->size;
	}
	p = (const char *)(rh + 1);
	ret = drop_inode_items(t, fs, rh->ino, keep, nkeep);
	free(keep);

	for (uint32_t i = 0; i < rh->nitems && !ret; i++) {
		const struct log_item_hdr *ih = (const void *)p;
		const void *data = ih + 1;
		struct key k = { ih->key.objectid, ih->key.type, ih->key.offset };

		p += sizeof(*ih) + ih->size;
		(*items)++;
		switch (ih->kind) {
		case LOG_FS_ITEM:
			if (k.type == KEY_INODE_REF)
				break;	/* names: kept, or added by dir_add below */
			if (k.type == KEY_EXTENT_DATA && ih->size >= sizeof(struct file_extent)) {
				const struct file_extent *fe = data;
				if (fe->type != FE_INLINE && fe->disk_logical) {
					struct extent_item ei;
					uint64_t l;
					int r = extent_lookup(c, fe->disk_logical, true, &ei, &l);
					if (r == -ENOENT) {
						/* written after the last commit: claim it once */
						r = 0;
						if (!htable_set_has(claimed, fe->disk_logical)) {
							r = alloc_claim(c, fe->disk_logical, fe->disk_len);
							if (r == -EEXIST)
								fprintf(stderr, "glassfs: fsync log: data extent %llu+%llu of inode %llu overlaps allocated space\n",
									(unsigned long long)fe->disk_logical,
									(unsigned long long)fe->disk_len,
									(unsigned long long)rh->ino);
							if (r)
								r = -EUCLEAN;
							else
								r = htable_set_add(claimed, fe->disk_logical);
						}
						if (!r) {
							struct dref d = { fe->disk_logical, fe->disk_len, 0,
									  -1, +1, true, true };
							r = extent_ref_add(c, &d);
						}
					} else if (r == 0) {
						r = data_ref(t, fe->disk_logical, fe->disk_len, +1);
					}
					if (r) {
						ret = r;
						break;
					}
				}
			}
			ret = btree_insert(t, fs->root, &k, data, ih->size);
			break;
		case LOG_CSUM_RESET: {
			uint64_t len;
			memcpy(&len, data, 8);
			ret = data_csum_delete(t, k.offset, len);
			break;
		}
		case LOG_CSUM_ITEM:
			ret = btree_insert(t, core_tree(c, CT_CSUM), &k, data, ih->size);
			break;
		}
	}
	return ret;
}

/* A new inode's names: DIR_ITEM/DIR_INDEX/INODE_REF through dir_add. */
static int replay_names(struct txn *t, struct fsctx *fs, const struct log_rec_hdr *rh)
{
	const char *p = (const char *)(rh + 1);
	uint32_t mode = 0;
	int ret = 0;

	for (uint32_t i = 0; i < rh->nitems; i++) {
		const struct log_item_hdr *ih = (const void *)p;
		if (ih->kind == LOG_FS_ITEM && ih->key.type == KEY_INODE_ITEM &&
		    ih->size >= sizeof(struct inode_item))
			mode = ((const struct inode_item *)(ih + 1))->mode;
		p += sizeof(*ih) + ih->size;
	}
	p = (const char *)(rh + 1);
	for (uint32_t i = 0; i < rh->nitems && !ret; i++) {
		const struct log_item_hdr *ih = (const void *)p;
		p += sizeof(*ih) + ih->size;
		if (ih->kind != LOG_FS_ITEM || ih->key.type != KEY_INODE_REF)
			continue;
		const char *e = (const char *)(ih + 1), *end = e + ih->size;
		struct inode *dp;
		ret = inode_get(fs, ih->key.offset, &dp);
		if (ret) {
			fprintf(stderr, "glassfs: fsync log: directory %llu of inode %llu: %s\n",
				(unsigned long long)ih->key.offset, (unsigned long long)rh->ino,
				strerror(-ret));
			break;
		}
		inode_lock(dp);
		while (!ret && e + sizeof(struct inode_ref) <= end) {
			const struct inode_ref *r = (const void *)e;
			e += sizeof(*r) + r->name_len;
			if (e > end) {
				ret = -EUCLEAN;
				break;
			}
			ret = dir_add(t, fs, dp, r->name, r->name_len, rh->ino, dir_type_of(mode));
			if (ret == -EEXIST)
				fprintf(stderr, "glassfs: fsync log: name '%.*s' of inode %llu is taken in directory %llu\n",
					(int)r->name_len, r->name, (unsigned long long)rh->ino,
					(unsigned long long)dp->ino);
		}
		inode_unlock(dp);
		inode_put(fs, dp);
	}
	return ret;
}

int log_replay(struct fsctx *fs)
{
	struct core *c = fs->core;
	struct log_state *ls = c->log;
	struct seg *v = NULL;
	struct rec_ref *recs = NULL;
	int n = 0, nrec = 0, ret;
	unsigned items = 0;
	uint64_t t0 = glock_now_ns();
	struct txn *t = NULL;
	struct htable_set claimed = { 0 };
	bool unflushed = false, *drop = NULL;
	int ndrop = 0;

	if (!ls || c->readonly)
		return 0;
	if (!log_pending(c)) {
		adopt_slot(c, ls);
		return 0;
	}
	ret = read_chain(c, &v, &n, &unflushed, stderr);
	if (!ret && unflushed) {
		drop = calloc(v[n - 1].h->nrecords + 1, sizeof(*drop));
		ret = drop ? verify_last_seg(c, v[n - 1].h, drop, stderr) : -ENOMEM;
		ndrop = ret > 0 ? ret : 0;
		if (ret > 0)
			ret = 0;
	}
	if (ret)
		goto out;
	/* the log's blocks stay out of reach until the replay is committed */
	for (int i = 0; i < n && !ret; i++) {
		ret = alloc_claim(c, v[i].h->bytenr, v[i].h->len);
		if (ret) {
			fprintf(stderr, "glassfs: fsync log segment %llu overlaps allocated space\n",
				(unsigned long long)v[i].h->bytenr);
			ret = -EUCLEAN;
			break;
		}
		glock_write(&ls->lock);
		ret = add_seg(ls, v[i].h->bytenr, v[i].h->len);
		glock_write_unlock(&ls->lock);
	}
	if (ret)
		goto out;
	/* newest record per inode (later ones replace earlier ones) */
	for (int i = 0; i < n; i++) {
		const char *p = (const char *)(v[i].h + 1);
		for (uint32_t r = 0; r < v[i].h->nrecords; r++) {
			const struct log_rec_hdr *rh = (const void *)p;
			p += rh->len;
			if (drop && i == n - 1 && drop[r])
				continue;	/* its data was lost: the record before counts */
			if (rh->tree != btree_root_id(fs->root)) {
				fprintf(stderr, "glassfs: fsync log record for tree %llu, not the fs tree\n",
					(unsigned long long)rh->tree);
				ret = -EUCLEAN;
				goto out;
			}
			int k;
			for (k = 0; k < nrec && recs[k].ino != rh->ino; k++)
				;
			if (k == nrec) {
				struct rec_ref *nr = realloc(recs, (size_t)(nrec + 1) * sizeof(*nr));
				if (!nr) {
					ret = -ENOMEM;
					goto out;
				}
				recs = nr;
				nrec++;
			}
			recs[k] = (struct rec_ref){ rh->ino, rh };
		}
	}
	if (nrec)	/* none: every record of a lone slot segment dropped */
		qsort(recs, (size_t)nrec, sizeof(*recs), cmp_rec);
	ret = txn_join(c, 16, TXN_USE_RESERVE, &t);
	if (ret)
		goto out;
	for (int i = 0; i < nrec && !ret; i++)
		ret = replay_record(t, fs, recs[i].rh, &claimed, &items);
	for (int i = 0; i < nrec && !ret; i++)
		if (recs[i].rh->flags & LOG_REC_NEW)
			ret = replay_names(t, fs, recs[i].rh);
	if (ret)
		txn_abort(t, ret, "fsync log replay");
	int e = txn_end(t);
	if (!ret)
		ret = e;
	if (!ret)
		ret = txn_commit(c, COMMIT_OTHER);
out:
	if (PROBE_ON(LOG_REPLAY))
		GLASSFS_LOG_REPLAY((uint64_t)nrec, items, ret, glock_now_ns() - t0);
	if (ret)
		fprintf(stderr, "glassfs: replaying the fsync log failed: %s\n", strerror(-ret));
	else
		fprintf(stderr, "glassfs: replayed the fsync log: %d inode(s), %u item(s), %d segment(s) "
			"on generation %llu, %d record(s) dropped (data not on the device)\n", nrec,
			items, n, (unsigned long long)c->generation - 1, ndrop);
	for (int i = 0; i < nrec && getenv("GLASSFS_LOG_DEBUG"); i++)
		fprintf(stderr, "glassfs: fsync log: inode %llu%s, %u items\n",
			(unsigned long long)recs[i].ino, recs[i].rh->flags & LOG_REC_NEW ? " (new)" : "",
			recs[i].rh->nitems);
	for (int i = 0; i < n && getenv("GLASSFS_LOG_DEBUG"); i++)
		fprintf(stderr, "glassfs: fsync log: segment %llu seq %llu len %llu prev %llu next %llu\n",
			(unsigned long long)v[i].h->bytenr, (unsigned long long)v[i].h->seq,
			(unsigned long long)v[i].h->len, (unsigned long long)v[i].h->prev,
			(unsigned long long)v[i].h->next);
	glock_write(&ls->lock);
	ls->st.rejected += (uint64_t)ndrop;
	glock_write_unlock(&ls->lock);
	free(recs);
	free(drop);
	htable_set_destroy(&claimed);
	free_chain(v, n);
	return ret ? ret : nrec;
}
