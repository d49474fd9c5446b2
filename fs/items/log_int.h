// SPDX-License-Identifier: MIT
/*
 * log_int.h — what the fsync log's files share (log.c: state, notes,
 * writing and fsync; log_capture.c: building a record; log_replay.c:
 * reading, checking and replaying a log): the on-disk layout, the state
 * and the functions one file calls in another.  Nothing outside them
 * includes it; the rest of the engine uses log.h.
 */
#ifndef GLASSFS_ITEMS_LOG_INT_H
#define GLASSFS_ITEMS_LOG_INT_H

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
/* A segment holding a delta record (LOG_REC_DELTA): code that knows only
 * LOG_MAGIC refuses it instead of replaying a delta as a whole record. */
#define LOG_MAGIC_V2	0x32474c5361616c47ull	/* "GlaaSLG2" */
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
#define LOG_ARENA	(1u << 20)	/* the log's space is reserved up to this much */
#define LOG_ARENA_MIN	(64u << 10)	/* at once, from this for a transaction's first */

enum { LOG_FS_ITEM = 1, LOG_CSUM_RESET = 2, LOG_CSUM_ITEM = 3, LOG_EXT_KEEP = 4,
       LOG_EXT_RUNS = 5, LOG_EXT_DELTA = 6 };

/* Unchanged committed extents with offsets in [start, end): count of them,
 * each starting where the one before ends (LOG_EXT_RUNS). */
struct log_keep_run {
	uint64_t start, end, count;
};
#define LOG_REC_NEW 1u		/* the inode was created after the last commit */
#define LOG_REC_DELTA 2u	/* changes since the inode's record before (log.c) */

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

/* A flat run of entries: what a reading of the B-tree makes. */
struct cvec {
	struct centry *e;
	size_t n, cap;		/* cap in bytes (log_bytes_reserve) */
};

/* A kept capture's entries in chunks (log_cseq.c): a change moves one
 * chunk's entries, not every entry after it. */
#define CSEQ_CHUNK	64
struct cchunk {
	uint32_t n;
	struct centry e[CSEQ_CHUNK];
};
struct cseq {
	struct cchunk **c;	/* in order, none empty */
	/* last[k]: the end of chunk k's last entry, beside the pointers so
	 * a search finds its chunk in one array, not a cache miss on
	 * every chunk it looks at */
	uint64_t *last;
	size_t nc, ccap;	/* of c and of last */
	size_t n;		/* entries */
	size_t bytes;		/* memory held: chunks, items, checksums */
};
struct cpos {
	size_t c, i;		/* chunk, entry in it; c == nc: the end */
};
void log_cseq_free(struct cseq *s);
/* The first entry whose end is past off (the end when none). */
struct cpos log_cseq_find(const struct cseq *s, uint64_t off);
struct centry *log_cseq_at(const struct cseq *s, struct cpos p);	/* NULL: the end */
void log_cseq_next(const struct cseq *s, struct cpos *p);
/* The count entries from `from` freed and the n of nv put in their
 * place (taken; on -ENOMEM nothing changed and nv is the caller's). */
int log_cseq_replace(struct cseq *s, struct cpos from, size_t count, struct centry *nv, size_t n);
/* v's entries appended (taken, also on failure: then freed). */
int log_cseq_from_vec(struct cseq *s, struct cvec *v);
/* x's checksums were just read and kept with it: count them. */
void log_cseq_account_csums(struct cseq *s, const struct centry *x);

#define LOG_ICACHE_N	8	/* inodes whose last capture is kept */
#define LOG_ICACHE_NOTES 1024	/* noted offsets kept; past it all are read */
/*
 * A kept capture holding this much memory (cseq.bytes) asks for a commit,
 * and so do the kept captures of a volume together holding
 * LOG_ICACHE_VOL_BYTES.  fio's 4 KiB random writes with an fsync each
 * keep ~350 bytes a write: a capture of 16 MiB is ~48,000 fsyncs, past
 * the log's own LOG_COMMIT_BYTES (64 MiB of segments, ~16,000 such
 * fsyncs), which then asks first.
 */
#define LOG_ICACHE_BYTES	(16u << 20)
#define LOG_ICACHE_VOL_BYTES	(48u << 20)

struct capcache {
	uint64_t ino, gen, transid;	/* ino 0: a free slot */
	uint64_t *notes;		/* offsets noted since the capture */
	size_t nnotes, notecap;
	struct cseq e;
	uint64_t used;			/* ls->ic_clock at the last capture */
	bool logged;			/* the last capture went into the log as a
					 * record: the next may be a delta of it */
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
	uint64_t arena, arena_end;	/* the rest of the transaction's arena (reserve) */
	uint64_t arena_len;		/* the next arena's size, 0: LOG_ARENA_MIN */
	uint64_t txn_bytes;		/* segment bytes of this transaction */
	uint64_t rec_transid;		/* transaction of the newest record queued
					 * (atomic: log_record_transid reads it
					 * without the lock) */
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
	/* records of transactions >= delta_from may be deltas (0: none): their
	 * log hangs from a superblock with SUPER_FEAT_LOG_DELTA (atomic) */
	uint64_t delta_from;
	bool verify;			/* GLASSFS_LOG_VERIFY: check_reuse */
};


struct buf {
	char *p;
	size_t len, cap;
	int err;
	bool unbounded;		/* GLASSFS_LOG_VERIFY's whole captures: no
				 * LOG_MAX_RECORD limit */
};

/* log.c: the state, the notes */
void log_sync_transid(struct log_state *ls, uint64_t transid);
void log_centries_free(struct centry *e, size_t n);
void log_capcache_free(struct capcache *ic);
struct log_seg_hdr *log_slot_seg(struct core *c);
/* log_capture.c: building a record */
int log_bytes_reserve(char **p, size_t *cap, size_t need, size_t first);
void *log_buf_grow(struct buf *b, size_t n);
int log_capture_inode(struct fsctx *fs, struct inode *ip, uint64_t transid, struct buf *b,
		      uint32_t *nitems, uint64_t *parents, int *nparents, int maxparents,
		      uint64_t *walked, bool *reused, bool *delta, bool *parity);
/* log.c: writing a batch */
int log_add_seg(struct log_state *ls, uint64_t logical, uint64_t len);
void log_adopt_slot(struct core *c, struct log_state *ls);
/* log_replay.c: reading a log */
int log_read_seg(struct core *c, uint64_t at, struct log_seg_hdr **out);

#endif
