/* SPDX-License-Identifier: MIT */
/*
 * volume.h — online volume management: device add/remove, the rotational
 * flag, balance (restripe and profile conversion), and the resync of a
 * device whose superblock missed commits.
 *
 * Design: logical addresses never change, so nothing here touches the
 * B-trees beyond the chunk and device trees (and, to split a chunk, its
 * block group and free-space items).  A chunk moves at
 * the chunk level (chunk.h, "relocation"): new stripes are picked (the
 * target profile, off the device being removed), every write to the chunk
 * goes to old and new stripes meanwhile, its bytes are copied segment by
 * segment (each behind the copy fence, fs/store/copy_fence.h: a write of
 * the segment waits, so none slips between the read and the copy), then one transaction switches the
 * chunk item and device extents and commits; the old stripes stay
 * reserved until that commit is durable.  A crash at any point leaves the
 * old chunk item, whose stripes are intact.  A chunk whose new stripes
 * find no hole big enough is first split in two where it fits, at a cut
 * no extent crosses (volume_reloc.c's split_to_fit: a MiB boundary when
 * one is free, else any row; chunk_split: chunk, device extent,
 * block group and free-space items, one transaction), as btrfs shrinks a
 * new chunk to the space there is; a conversion that needs more device
 * space than there is unallocated is refused before anything moves.
 *
 * One volume operation runs at a time (add, remove, set-rotational and
 * balance exclude each other: -EBUSY).  Errors come back as -errno with a
 * one-line reason in msg (also logged).
 */
#ifndef GLASSFS_VOLUME_H
#define GLASSFS_VOLUME_H

#include <stddef.h>
#include <stdint.h>

struct core;

int volume_dev_add(struct core *c, const char *path, char *msg, size_t msglen);
/* Moves every stripe on the device elsewhere first; fails cleanly (the
 * device stays) when the others lack room or a profile needs it.
 * path "missing" (a degraded mount): the copies the missing devices had
 * are rebuilt on the present ones from the surviving copies, then the
 * missing devices are dropped; msg gets the summary on success too. */
int volume_dev_remove(struct core *c, const char *path, char *msg, size_t msglen);
int volume_set_rotational(struct core *c, const char *path, int rotational,
			  char *msg, size_t msglen);

/*
 * Balance in a thread: every chunk is rewritten to new stripes, with the
 * data / metadata (and system) profile converted where *_convert >= 0
 * (a CORE_PROFILE_* value); new chunks take the converted profiles.  A
 * conversion skips the chunks of that type already in the target profile,
 * and keeps one old stripe where it can (chunk_reloc_begin), so
 * single -> raid1 writes one new copy and raid1 -> single copies nothing;
 * a kept stripe is read and verified all the same, its bad blocks
 * rewritten from a good copy before the others are dropped.  A block no
 * copy verifies moves as it was: the balance moves every chunk, logs
 * each such block and ends with -EIO naming the first (msg).
 */
int volume_balance_start(struct core *c, int64_t data_convert, int64_t meta_convert,
			 char *msg, size_t msglen);
struct volume_balance_status {
	int running;
	int result;			/* last balance: 0, -ECANCELED, -errno */
	unsigned started;		/* balances started since open */
	uint64_t chunks_total, chunks_done;
	uint64_t bytes_total, bytes_done;	/* logical bytes of chunks, done by 1 MiB segment */
	int op;				/* what the counters measure: VOL_OP_* (0: nothing yet) */
	int op_running;			/* 1 while that operation runs */
	char msg[256];			/* why the last one stopped, if it failed */
};
/* The last operation that moved chunks, whose progress the status carries
 * (a device remove runs in the ioctl's thread: glassctl polls the status
 * from another to draw its progress). */
enum { VOL_OP_BALANCE = 1, VOL_OP_REMOVE = 2 };
void volume_balance_status(struct core *c, struct volume_balance_status *s);
/* -ENOENT when none runs. */
int volume_balance_cancel(struct core *c);

/* The ioctls 20-29 that call these are decoded in fs/fuse/fuse_volume.c. */

/*
 * mount_open: devices whose superblock missed commits (or whose last
 * resync did not finish) are read last and get the allocated parts of
 * their copies rewritten from fresh ones: on writable opens, in a thread
 * once the open is done (the device item is flagged in the transaction
 * the caller commits), or at once, everything, when an fsync log awaits
 * replay (then no transaction: the replay comes first).  Returns how many
 * devices are being resynced in the background (the caller commits, so
 * their flag and current superblocks are written together).  Progress: volume_resync_progress (bytes of stale
 * chunks to go through and gone through, and whether the thread still
 * runs — waiting to start, copying, or committing the cleared flag;
 * glassctl stats).
 */
int volume_open_check(struct core *c);
void volume_resync_progress(struct core *c, uint64_t *total, uint64_t *done, uint64_t *running);
/* Tests: wait until no resync thread runs. */
void volume_resync_wait(struct core *c);
/* mount_close/core_free: stop a running balance, free the state. */
void volume_close(struct core *c);

#endif
