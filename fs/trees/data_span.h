/* SPDX-License-Identifier: MIT */
/*
 * data_span.h — a read served without copying its bytes: the reply as a
 * list of spans, each either memory of the caller's (holes, inline data)
 * or a verified range of a device file that the FUSE layer splices to
 * the reader (fuse_reply_data with FUSE_BUF_IS_FD buffers).
 *
 * Two steps, so that no B-tree lock is ever taken under c->reloc_lock
 * (a writer holding a node may wait for it shared behind a relocation):
 *   1. data_spans_add* collect the pieces in order; a disk piece's
 *      checksums are loaded (B-tree) then.
 *   2. data_spans_map takes c->reloc_lock shared (by trylock: a
 *      relocation starting or switching a chunk sends the read the
 *      ordinary way, which never waits for it), maps each disk piece to
 *      its first copy and checks every sector it touches against its
 *      checksum, over a mapping of the device (fs/store/dev_map.h), with
 *      no copy.  On success the lock stays held until data_spans_done:
 *      the caller sends the reply in between.
 *
 * Why the bytes cannot change between the check and the splice: a data
 * extent is never written in place once it holds data (copy-on-write;
 * preallocated ranges are filled in place but read as zeros, never
 * through here); the caller holds the inode's read lock, so no write,
 * truncate or hole punch of this file can drop its reference and let the
 * extent be freed and reused; and a relocation retires a chunk's old
 * stripes only after taking c->reloc_lock exclusively
 * (fs/services/volume_reloc.c), i.e. after every reader that may have
 * mapped a piece to them has replied.
 *
 * Anything the zero-copy way does not serve — raid5/6, a sector that
 * fails its checksum or has none, a device that cannot be mapped or
 * plays the latency/error model, more pieces than fit — makes
 * data_spans_map answer -EAGAIN with the lock released: the caller then
 * reads what was collected the ordinary way (data_spans_read: data_read,
 * which retries other copies, logs and answers -EIO, never bad bytes),
 * without walking the file's extent items or loading the checksums
 * again.
 */
#ifndef GLASSFS_DATA_SPAN_H
#define GLASSFS_DATA_SPAN_H

#include <stdbool.h>
#include <stdint.h>
#include "fs/core/core.h"

#define DATA_SPANS_MAX		64	/* pieces of one reply */
#define DATA_SPANS_SECTS	320	/* checksums of one reply: 1 MiB and the ends */
#define DATA_SPANS_BYTES	(1u << 20)	/* the largest read worth trying (FUSE's) */

struct data_span {
	uint64_t len;
	int fd;			/* >= 0: len bytes of fd at pos; -1: mem */
	uint64_t pos;
	const void *mem;
};

struct data_spans {
	int n;				/* the reply, once data_spans_map succeeded */
	struct data_span v[DATA_SPANS_MAX];
	/* data_span.c's: the pieces collected, each a disk one's logical
	 * address and where its sectors' checksums start in exp/have */
	int nin;
	struct data_span in[DATA_SPANS_MAX];
	uint64_t logical[DATA_SPANS_MAX];
	uint32_t sect0[DATA_SPANS_MAX];
	uint32_t nsect;
	uint32_t exp[DATA_SPANS_SECTS];
	uint8_t have[DATA_SPANS_SECTS];
	bool held;			/* c->reloc_lock held shared */
	bool copied;			/* the reply is v[0], memory: nothing to map */
};

void data_spans_init(struct data_spans *sp);
/* Append len bytes of memory; -EAGAIN when the list is full. */
int data_spans_add_mem(struct data_spans *sp, const void *mem, uint64_t len);
/* Append len bytes of data at logical, loading their checksums; -EAGAIN
 * when the list is full or the zero-copy way cannot serve them,
 * other -errno from the checksum tree. */
int data_spans_add(struct core *c, struct data_spans *sp, uint64_t logical, uint64_t len);
/* Step 2 (above): 0 with c->reloc_lock held, or -EAGAIN without it. */
int data_spans_map(struct core *c, struct data_spans *sp);
/*
 * The ordinary read of what was collected: every disk piece read and
 * verified into its place in buf (data_read_csums: the checksums the
 * add loaded, other copies, -EIO), where the memory pieces already are (buf: the reply's first byte; the pieces lie in it back to
 * back).  Then the reply is buf, one span of memory (sp->copied).  0 or
 * data_read's -errno (-EIO).  Not counted: data_spans_map counts its
 * own failures, data_spans_fallback the rest.
 */
int data_spans_read(struct core *c, struct data_spans *sp, void *buf);
/* Count a read the spans could not even collect (-EAGAIN from an add). */
void data_spans_fallback(struct core *c);
/* The reply is len bytes of buf, read the ordinary way (sp->copied). */
void data_spans_set_mem(struct data_spans *sp, const void *buf, uint64_t len);
/* Release what data_spans_map holds (nothing held: nothing done). */
void data_spans_done(struct core *c, struct data_spans *sp);

#endif
