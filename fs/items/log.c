// SPDX-License-Identifier: MIT
/*
 * log.c — the fsync log (see log.h for what it covers): its state, the
 * notes the other items files send it, writing a batch and fsync.  Building
 * a record is log_capture.c, reading and replaying a log log_replay.c;
 * log_int.h is what they share.
 *
 * ## On disk
 *
 * A log is a chain of segments, newest first from the superblock's
 * log_root.  A segment is a run of 4 KiB blocks in a METADATA chunk,
 * allocated in the running transaction (free in the last commit's
 * free-space tree, so a crash leaves them unreferenced by the trees):
 *
 *   struct log_seg_hdr   (104 bytes; csum = crc32c of bytes [4, len);
 *                         magic LOG_MAGIC, or LOG_MAGIC_V2 when a record
 *                         in it is a delta: code that knows no deltas
 *                         takes the segment for no segment instead of
 *                         misreading it; and deltas are written only in
 *                         a log that hangs from a superblock with
 *                         SUPER_FEAT_LOG_DELTA, which such code refuses
 *                         to mount, so it never drops their fsyncs)
 *   records, `used` bytes in all, each:
 *     struct log_rec_hdr   (len: bytes of the record incl. header;
 *                           flags LOG_REC_NEW, LOG_REC_DELTA)
 *     nitems x (struct log_item_hdr, size bytes of item data)
 *
 * The log reserves its space an arena at a time (the first of a
 * transaction LOG_ARENA_MIN, each next one twice the last, up to
 * LOG_ARENA) and carves slots and segments from it in order (a slot's bytes past the segment
 * written there go back to it); a new arena is written with zeros when
 * it is reserved over a hole of an image file (not block devices, not
 * raid5/6 chunks, not space the image already has blocks for).  On a volume in a sparse image file a segment then lands
 * where the host file already has blocks: the host allocates once per
 * arena, not at every fsync's flush (a journal commit of ext4 each, when
 * segments walked forward through space the volume never wrote).  An
 * arena is pinned at commit and freed after it, like a segment; what
 * lies in it beside the segments (zeros, segments of older logs with
 * another parent_gen) never continues a chain.
 *
 * Item kinds: LOG_FS_ITEM (an item of the inode in its fs tree),
 * LOG_CSUM_RESET (key.offset = logical, data = le64 len: the checksums of
 * that data extent are replaced by the LOG_CSUM_ITEMs that follow),
 * LOG_CSUM_ITEM (an EXTENT_CSUM item of the csum tree), LOG_EXT_KEEP
 * (key (ino, EXTENT_DATA, 0), data = ascending le64 file offsets; replay
 * still reads it, logs written before LOG_EXT_RUNS), LOG_EXT_RUNS (the
 * same key, data = ascending struct log_keep_run) and LOG_EXT_DELTA (the
 * same key, data = ascending le64 file offsets; in a delta record only,
 * exactly one).
 *
 * Whole records and deltas.  A whole record holds the inode's state
 * against the last commit (below).  A delta (LOG_REC_DELTA) holds the
 * change since the record of the inode before it in the log: its items
 * before the extents in full (inode item, names, xattrs), LOG_EXT_DELTA
 * with every file offset where an extent item was written or deleted
 * since (log_note_extent: file.c notes each), the extent items now at
 * those offsets and the checksums of the data they read that the last
 * commit does not hold.  Replay deletes the inode's items except its
 * back references and the extent items at offsets not in LOG_EXT_DELTA, then
 * inserts the logged ones: what the record before left, changed exactly
 * where the file changed.  An fsync writes a delta when the inode's
 * last capture in this transaction is in the log (capture and queueing
 * under cap_lock: records are in the log in capture order) and every
 * noted offset is an item of this transaction or no item; otherwise a
 * whole record.  So fio's 4 KiB random writes with an fsync each log
 * ~370 bytes per fsync (one 4 KiB block), where whole records held
 * every change since the commit (16.5 KB on average) and one passed
 * LOG_RECORD_COMMIT, so that fsync committed, every ~190-300 fsyncs.
 * The transaction then goes on until the commit interval, a log of
 * LOG_COMMIT_BYTES (~16,000 such fsyncs), or kept captures holding
 * LOG_ICACHE_BYTES of memory for one file or LOG_ICACHE_VOL_BYTES for
 * the volume ask the commit thread for a commit.  (A capture of 4,096
 * entries asked for one while a capture was one sorted array, moved
 * after each change: every ~1,300-1,500 fsyncs; log_cseq.c.)
 * Replay applies per inode its last whole record and the deltas after
 * it, in log order; a delta with no record of its inode before it is
 * corruption (fsck says so, log_check).
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
 * not match, verify_last_seg, and every later record of that inode in
 * the segment: it may be a delta of the dropped one); with no slot, segment, flush,
 * superblocks with log_root = the segment, flush.  A batch with
 * data in raid5/6 chunks flushes its data before a slot's segment too
 * (parity has no checksum), unless no device was written since the
 * leader's last flush began.  Then each waiter ends its handle.  After
 * a batch fails no later batch of the transaction is written (a record
 * queued after may be a delta of one the failed batch held): their
 * fsyncs commit instead.
 */
#include "fs/items/log_int.h"

void log_centries_free(struct centry *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(e[i].item);
		free(e[i].csums);
	}
}

/* Forget an inode's capture (the slot becomes free). */
void log_capcache_free(struct capcache *ic)
{
	log_cseq_free(&ic->e);
	free(ic->notes);
	ic->notes = NULL;
	ic->nnotes = ic->notecap = 0;
	ic->gen = ic->transid = ic->used = 0;
	ic->logged = false;
	/* ino is read without ls->lock (log_note_extent) */
	__atomic_store_n(&ic->ino, 0, __ATOMIC_RELEASE);
}

static void capcache_clear_all(struct log_state *ls)
{
	for (int i = 0; i < LOG_ICACHE_N; i++)
		if (ls->ic[i].ino)
			log_capcache_free(&ls->ic[i]);
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
	/* a volume last committed by code without deltas: whole records
	 * until this mount's first commit says deltas may follow */
	if (c->sb.features & SUPER_FEAT_LOG_DELTA)
		ls->delta_from = c->sb.generation + 1;
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
		log_capcache_free(&ls->ic[i]);
	free(ls);
	c->log = NULL;
}


/*
 * The segment in the slot the last commit named (sb.log_slot), when it
 * starts this generation's log: whole, of this generation, the first of
 * its chain, no longer than the slot.  Anything else there (nothing yet,
 * an older generation's segment, a torn write, a read error) is no log.
 */
struct log_seg_hdr *log_slot_seg(struct core *c)
{
	struct log_seg_hdr *h;

	if (c->sb.log_root || !c->sb.log_slot || log_read_seg(c, c->sb.log_slot, &h))
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
	h = log_slot_seg(c);
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

/* Caller holds ls->lock: what the log knows of one transaction's changes
 * (kept captures, name and in-place sets, records, a failure) is gone. */
static void forget_txn(struct log_state *ls)
{
	capcache_clear_all(ls);
	htable_set_clear(&ls->names);
	htable_set_clear(&ls->dirs);
	htable_set_clear(&ls->inplace);
	ls->names_oom = false;
	ls->inplace_oom = false;
	ls->failed = 0;
}

/* Caller holds ls->lock: the sets and segments belong to transid. */
void log_sync_transid(struct log_state *ls, uint64_t transid)
{
	if (ls->transid == transid)
		return;
	/* a commit cleared everything; a new transaction starts empty */
	ls->transid = transid;
	forget_txn(ls);
}

uint64_t log_record_transid(struct core *c)
{
	/* no lock: every inode load asks.  A value from an older
	 * transaction than the running one is as good as 0 to the caller */
	return c->log ? __atomic_load_n(&c->log->rec_transid, __ATOMIC_ACQUIRE) : 0;
}

static void note(struct txn *t, uint64_t ino, bool dir)
{
	struct log_state *ls = txn_core(t)->log;

	if (!ls)
		return;
	glock_write(&ls->lock);
	log_sync_transid(ls, txn_transid(t));
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
	log_sync_transid(ls, txn_transid(t));
	for (uint64_t m = logical >> LOG_INPLACE_SHIFT; m <= (logical + len - 1) >> LOG_INPLACE_SHIFT;
	     m++)
		if (htable_set_add(&ls->inplace, m))
			ls->inplace_oom = true;
	glock_write_unlock(&ls->lock);
}


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
	log_sync_transid(ls, txn_transid(t));
	for (int i = 0; i < LOG_ICACHE_N; i++) {
		struct capcache *ic = &ls->ic[i];
		if (ic->ino != ino)
			continue;
		if (off == UINT64_MAX || ic->nnotes == LOG_ICACHE_NOTES ||
		    log_bytes_reserve((char **)&ic->notes, &ic->notecap,
				  (ic->nnotes + 1) * sizeof(*ic->notes), 64 * sizeof(*ic->notes))) {
			/* the next fsync reads everything; until then the
			 * file's writes skip the lock above */
			log_capcache_free(ic);
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
	ls->arena = ls->arena_end = ls->arena_len = 0;
	ls->head = 0;
	ls->head_seq = 0;
	ls->log_id = 0;
	ls->next_slot = ls->next_len = 0;
	ls->txn_bytes = 0;
	ls->transid = 0;
	forget_txn(ls);
	c->sb.log_root = 0;
	c->sb.log_root_level = 0;
	glock_write_unlock(&ls->lock);
}

/* ---- writing a batch ----------------------------------------------------- */

/* Remember a reserved range so the commit pins it.  Caller holds ls->lock. */
int log_add_seg(struct log_state *ls, uint64_t logical, uint64_t len)
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

/*
 * Write zeros over a new arena where the host has no blocks yet: on a
 * volume in image files (sparse: the space a volume never wrote is a
 * hole of the host's file) the host allocates the arena's blocks at the
 * next flush, once, instead of one segment's blocks at every fsync's
 * flush (a journal commit each on ext4).  An arena over space every copy
 * already has blocks for (written before: an earlier arena, nodes, data
 * since freed) is not written: the zeros would allocate nothing and cost
 * a third of the bytes an fsync writes (meta_allocated, SEEK_HOLE on each
 * device).  Not on block devices (nothing to allocate) or raid5/6 chunks
 * (their rows are written whole, with parity, by the segments).  Best
 * effort: a failure only leaves the holes.  True when it wrote.
 */
static bool arena_fill(struct core *c, uint64_t at, uint64_t len)
{
	if (chunk_map_is_parity(c, at) || len > LOG_ARENA || meta_allocated(c, at, len))
		return false;
	/* never written: its pages stay the kernel's shared zero page, so
	 * an arena costs no allocation or memset on the fsync's path */
	static uint8_t zeros[LOG_ARENA] __attribute__((aligned(4096)));
	return !meta_write_copies(c, at, zeros, len, "fsync log arena");
}

/*
 * Reserve len bytes of metadata space for the log: carved from the
 * transaction's arena (up to LOG_ARENA bytes reserved at once, pinned at commit
 * like every segment, log_add_seg), a new arena when it is used up, the
 * allocator alone when no arena can be had.
 */
static int reserve(struct core *c, struct log_state *ls, uint64_t len, uint64_t *logical)
{
	uint64_t at;
	int ret;

	glock_write(&ls->lock);
	if (ls->arena && ls->arena + len <= ls->arena_end) {
		*logical = ls->arena;
		ls->arena += len;
		glock_write_unlock(&ls->lock);
		return 0;
	}
	/* the first arena of a transaction is small, each next one twice
	 * the last, up to LOG_ARENA: a transaction of a few fsyncs (a
	 * commit after each, say) writes few zeros */
	uint64_t alen = ls->arena_len ? ls->arena_len : LOG_ARENA_MIN;
	glock_write_unlock(&ls->lock);
	while (alen < len * 4 && alen < LOG_ARENA)
		alen *= 2;
	if (len * 4 <= alen && !alloc_reserve(c, BG_METADATA, alen, LOG_BLOCK, &at)) {
		/* a new block group: write_batch commits instead */
		bool filled = !alloc_bg_is_new(c, at) && arena_fill(c, at, alen);
		glock_write(&ls->lock);
		ret = log_add_seg(ls, at, alen);
		if (!ret) {
			ls->arena = at + len;
			ls->arena_end = at + alen;
			ls->arena_len = alen < LOG_ARENA ? alen * 2 : LOG_ARENA;
			ls->st.arenas++;
			ls->st.fills += filled;
		}
		glock_write_unlock(&ls->lock);
		if (!ret) {
			*logical = at;
			return 0;
		}
		alloc_free_now(c, at, alen);
	}
	ret = alloc_reserve(c, BG_METADATA, len, LOG_BLOCK, logical);
	if (ret)
		return ret;
	glock_write(&ls->lock);
	ret = log_add_seg(ls, *logical, len);
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
	ret = log_add_seg(ls, *at, len);
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
	/* the next transaction's log hangs from sb: code that knows no
	 * delta records refuses the volume from here on rather than stop
	 * at the first one and lose the fsyncs after it */
	sb->features |= SUPER_FEAT_LOG_DELTA;
	__atomic_store_n(&ls->delta_from, sb->generation + 1, __ATOMIC_RELEASE);
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
void log_adopt_slot(struct core *c, struct log_state *ls)
{
	uint64_t at = c->sb.log_slot, len = c->sb.log_slot_len;

	if (!at || c->sb.log_root || c->opts.fsync_mode == CORE_FSYNC_COMMIT ||
	    len < LOG_BLOCK || len > LOG_SLOT_MAX || alloc_claim(c, at, len))
		return;
	glock_write(&ls->lock);
	if (log_add_seg(ls, at, len)) {
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

/* Ask the commit thread for a commit (it runs beside the fsyncs). */
static void ask_commit(struct core *c)
{
	glock_write(&c->ts.lock);
	if (!c->ts.want_commit) {
		c->ts.want_commit = COMMIT_DIRTY;
		gcond_broadcast(&c->ts.cond);
	}
	glock_write_unlock(&c->ts.lock);
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
 * (log_commit_slot, or the one log_adopt_slot claimed at mount): it starts
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
		/* the slot's bytes past this segment go back to the arena
		 * when nothing was carved after it: the next slot follows
		 * the segment, and the arena's zeros last 4x as long */
		glock_write(&ls->lock);
		if (ls->arena && ls->arena == slot + slot_len)
			ls->arena = slot + seglen;
		glock_write_unlock(&ls->lock);
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
	for (size_t off = 0; off < len;) {
		const struct log_rec_hdr *rh = (const void *)(recs + off);
		if (rh->flags & LOG_REC_DELTA)
			h->magic = LOG_MAGIC_V2;
		off += rh->len;
	}
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
	if (big)	/* the log's space comes back only at a commit */
		ask_commit(c);
	*seg_bytes = seglen;
	return 0;
}

/* Queue a record (ls->lock held): its place in the log, or 0 with
 * *ret set.  flush_data: its data must be flushed before the segment
 * (write_batch). */
static uint64_t log_enqueue(struct log_state *ls, uint64_t transid, const char *rec, size_t len,
			    bool flush_data, int *ret)
{
	log_sync_transid(ls, transid);
	*ret = ls->failed;
	if (*ret)
		return 0;
	if (log_bytes_reserve(&ls->pend, &ls->pend_cap, ls->pend_len + len, 65536)) {
		*ret = -ENOMEM;
		return 0;
	}
	memcpy(ls->pend + ls->pend_len, rec, len);
	ls->pend_len += len;
	ls->pend_nrec++;
	__atomic_store_n(&ls->rec_transid, transid, __ATOMIC_RELEASE);
	ls->pend_flush |= flush_data;
	ls->st.rec_bytes += len;
	return ++ls->enq_seq;
}

/*
 * Wait until a batch holding queued record `my` is durable, writing
 * batches as the leader meanwhile.  After a failed batch none is written
 * in this transaction: a later record may be a delta of one the failed
 * batch held (each fsync of them then commits).
 */
static int log_wait_record(struct core *c, struct log_state *ls, uint64_t my)
{
	int ret;

	glock_write(&ls->lock);
	while (ls->done_seq < my) {
		if (ls->writing) {
			gcond_wait(&ls->cond, &ls->lock);
			continue;
		}
		if (ls->failed) {
			ls->pend_len = 0;
			ls->pend_nrec = 0;
			ls->pend_flush = false;
			ls->done_seq = ls->enq_seq;
			gcond_broadcast(&ls->cond);
			break;
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

/* An fsync the caller commits for instead (fsops_fsync): counted in
 * log_fallbacks.  Returns 1, log_fsync's "not covered". */
static int count_fallback(struct log_state *ls)
{
	glock_write(&ls->lock);
	ls->st.fallbacks++;
	glock_write_unlock(&ls->lock);
	return 1;
}

int log_fsync(struct fsctx *fs, uint64_t ino)
{
	struct core *c = fs->core;
	struct log_state *ls = c->log;
	struct buf b = { 0 };
	bool reused = false, delta = false, flush_data = false;	/* raid5/6 data: see write_batch */
	uint64_t parents[8];
	int nparents = 0;
	uint32_t nitems = 0;
	struct inode *ip;
	struct txn *t;
	uint64_t transid, t0 = 0, walked = 0, my = 0;
	bool isnew;
	int ret;

	if (!ls || c->opts.fsync_mode == CORE_FSYNC_COMMIT || btree_root_id(fs->root) != FS_TREE_OBJECTID)
		return 1;
	if (PROBE_ON(LOG_SYNC_START) || PROBE_ON(LOG_SYNC_END))
		t0 = glock_now_ns();
	ret = txn_join(c, 1, 0, &t);
	if (ret)
		return ret == -EROFS ? ret : count_fallback(ls);
	transid = txn_transid(t);
	/* the log extends the last durable commit: wait for a commit still
	 * in its write phase (commits are pipelined, txn.c); holding the
	 * handle, no other can start writing until we are done */
	if (__atomic_load_n(&c->generation, __ATOMIC_ACQUIRE) + 1 != transid)
		txn_wait_written(c);
	if (__atomic_load_n(&c->generation, __ATOMIC_ACQUIRE) + 1 != transid) {
		txn_end(t);
		return c->aborted ? c->aborted : count_fallback(ls);
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
	log_sync_transid(ls, transid);
	bool names_changed = ls->names_oom || htable_set_has(&ls->names, ino) || ls->failed;
	glock_write_unlock(&ls->lock);
	if (names_changed)
		goto unlock;

	struct log_rec_hdr *rh = log_buf_grow(&b, sizeof(*rh));
	if (!rh) {
		ret = b.err;
		goto unlock;
	}
	/* cap_lock until the record is queued: the log holds records in the
	 * order of their captures, so a delta follows the record it extends */
	glock_write(&ls->cap_lock);
	ret = log_capture_inode(fs, ip, transid, &b, &nitems, parents, &nparents,
			    (int)(sizeof(parents) / sizeof(parents[0])), &walked, &reused, &delta,
			    &flush_data);
	if (ret == -E2BIG || (!ret && b.len > LOG_RECORD_COMMIT))
		ret = 1;
	if (!ret && isnew) {
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
	}
	if (ret) {
		glock_write_unlock(&ls->cap_lock);
		goto unlock;
	}
	inode_runlock(ip);
	rh = (struct log_rec_hdr *)b.p;
	*rh = (struct log_rec_hdr){ (uint32_t)b.len, nitems, btree_root_id(fs->root), ino,
				    (isnew ? LOG_REC_NEW : 0) | (delta ? LOG_REC_DELTA : 0), 0 };
	glock_write(&ls->lock);
	my = log_enqueue(ls, transid, b.p, b.len, flush_data, &ret);
	size_t kept = 0, mine = 0;
	for (int i = 0; i < LOG_ICACHE_N && my; i++) {
		if (ls->ic[i].ino == ino && ls->ic[i].transid == transid) {
			ls->ic[i].logged = true;
			mine = ls->ic[i].e.bytes;
		}
		kept += ls->ic[i].e.bytes;
	}
	glock_write_unlock(&ls->lock);
	glock_write_unlock(&ls->cap_lock);
	/* deltas keep the transaction going where whole records grew past
	 * LOG_RECORD_COMMIT and committed; its kept capture grows by a few
	 * hundred bytes a write: bounded per file and per volume (log_int.h) */
	if (mine > LOG_ICACHE_BYTES || kept > LOG_ICACHE_VOL_BYTES)
		ask_commit(c);
	if (my)
		ret = log_wait_record(c, ls, my);
	glock_write(&ls->lock);
	if (ret == 0)
		ls->st.syncs++;
	ls->st.walked += walked;
	ls->st.reused += reused;
	if (ret == 0)
		ls->st.deltas += delta;
	glock_write_unlock(&ls->lock);
	goto out;
unlock:
	inode_runlock(ip);
out:
	inode_put(fs, ip);
	txn_end(t);
	/* the caller commits for each of these (fsops_fsync): a failed
	 * batch (-errno, the waiters' too) is as much a fallback as 1 */
	if (ret == 1 || (ret < 0 && ret != -EROFS && ret != -ENOENT)) {
		count_fallback(ls);
	}
	if (PROBE_ON(LOG_SYNC_END))
		GLASSFS_LOG_SYNC_END(ino, ret, nitems, (uint64_t)b.len,
				     t0 ? glock_now_ns() - t0 : 0);
	free(b.p);
	return ret;
}
