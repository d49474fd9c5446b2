/* SPDX-License-Identifier: MIT */
/*
 * log.h — the fsync log: fsync without a full commit.
 *
 * fsync of a regular file writes a *record* of the file's current items —
 * its inode item, xattrs, file extents (inline data included) and the
 * checksum items of data extents written since the last commit — to a
 * *log segment*: newly allocated metadata blocks, chained to the segment
 * before it.  When the log already holds a record of the file from this
 * transaction, the record is a *delta* of it: the file's items before
 * its extents, and its extent items (with their checksums) at the file
 * offsets where extent items changed since that record (log.c).  A record counts once its commit point is on the device, and
 * everything it makes reachable is durable before that point:
 *   - a segment goes to the slot reserved for it, where replay finds it
 *     with no superblock write: the first segment of a transaction to
 *     the slot the commit before named in its superblock (log_slot;
 *     at mount, the slot the last commit named, claimed when there is
 *     no log to replay), each later one to the slot the segment before
 *     it named (`next`), replay following the chain forward (log.c).
 *     Write the segment, flush every device (the data and the segment:
 *     one flush per fsync, the first after a commit included).  The commit point is
 *     the segment itself, whole on the device (its checksum covers every
 *     byte: a torn or unwritten segment ends the chain), with the data
 *     its records reference matching the checksums they carry.  Power
 *     loss before that flush completed may keep the segment and lose
 *     some of the data: replay reads the data of the last segment's
 *     records (the only one whose flush may not have completed: the
 *     leader writes a segment only after the one before was flushed) and
 *     drops each record that does not match; the inode gets its record
 *     before, or stays as the last commit left it.  None of that
 *     segment's fsyncs had returned.  (Issue 19: with one flush and no
 *     such check, power loss kept the segment and made lost data
 *     reachable — the acknowledged bytes of a rewritten last block with
 *     it; the fix then was a flush of the data before the segment, two
 *     per fsync.)  Data in raid5/6 chunks is still flushed before the
 *     segment: a data column can match its checksum while the parity
 *     written with it was lost.
 *   - a segment with no slot (the commit named none: no free metadata
 *     outside a new chunk; or a slot too small for it): flush every
 *     device (the file's data and the segment), write the superblocks
 *     with `log_root` naming the segment (everything else as the last
 *     commit wrote it), flush again.  The commit point is the superblock
 *     write.
 * So a crash at any instant leaves the previous log or the new one, and
 * replay never makes reachable data that did not reach the device.  Data
 * extents a record references are not reused before the commit after
 * the log is durable (extent.c), so an older record stays valid until a
 * newer one counts.  Concurrent fsyncs are batched: one leader writes
 * every record queued while the previous batch was in flight (group
 * commit of the log).
 *
 * A full commit makes the log obsolete: it pins the log's blocks (free
 * again once its superblock, with log_root 0, is durable) and forgets the
 * in-memory state.  At mount a log left by a crash is replayed into the fs
 * tree in one transaction that is then committed (log_replay): for each
 * inode its items are replaced by its newest whole record's, then changed
 * by the deltas after that record, in log order; data extents the
 * record references that the last commit did not know get their extent
 * items; a file created since the last commit gets its names (dir_add).
 *
 * What the log covers and what falls back to a full commit (log_fsync
 * returns 1 and the caller commits): covered — fsync/fdatasync of a
 * regular file whose names did not change since the last commit, or that
 * was created since then in a directory that existed at the last commit
 * and lost no name since.  Full commit — directories (fsyncdir), symlinks
 * and special files, a file that was renamed, linked or unlinked (or
 * replaced by a rename) since the last commit, a new file in a new
 * directory or in one where a name was removed since the last commit, a
 * record larger than LOG_RECORD_COMMIT (32 KiB: a file with many extents
 * changed since the last commit; a changed extent costs its item and the
 * checksums of the sectors it reads that were written since the last
 * commit, unchanged ones 24 bytes per run of adjacent ones, however
 * many), a subvolume other than the default fs
 * tree, any error writing the log, and fsync=commit.
 *
 * On disk: see struct log_seg_hdr / log_rec_hdr / log_item_hdr in log_int.h
 * (the format is described in log.c's header).
 */
#ifndef GLASSFS_LOG_H
#define GLASSFS_LOG_H

#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>

struct core;
struct fsctx;
struct super_block;
struct txn;

int log_init(struct core *c);
void log_destroy(struct core *c);

/*
 * Make inode ino durable through the log.  0 durable, 1 not covered (the
 * caller commits instead), -errno on failure (the caller may commit).
 */
int log_fsync(struct fsctx *fs, uint64_t ino);

/*
 * The transaction of the newest record the log queued (0: none yet); an
 * older one than the running transaction means none in it.  An inode
 * loaded into memory takes it as its fsync_transid (inode.h): the one it
 * had before the kernel forgot it is gone, and one of those records may
 * be its own.
 */
uint64_t log_record_transid(struct core *c);

/* Name changes since the last commit (called by link, unlink, rename):
 * ino gained or lost a name; dir lost a name. */
void log_note_names(struct txn *t, uint64_t ino);
void log_note_dir_removal(struct txn *t, uint64_t dir);
/* A write went in place into the data [logical, +len) of a preallocated
 * extent (file.c): those sectors no longer match the last commit's
 * checksums, so a record logs theirs. */
void log_note_inplace(struct txn *t, uint64_t logical, uint64_t len);
/* The EXTENT_DATA item of ino at file offset off was written or deleted
 * (file.c, under the inode's lock; off UINT64_MAX: any of its items):
 * the next fsync of ino captures again what its last capture in this
 * transaction saw there (log_capture.c keeps that capture). */
void log_note_extent(struct txn *t, uint64_t ino, uint64_t off);

/* Commit: called by the commit with no handle open, before the free-space
 * tree is written (the commit hook fs/ops/mount.c registers).  Pins the
 * log's blocks and clears log_root; sets core.log_pins_frees for the
 * commit. */
void log_commit_clear(struct core *c);
/* Commit, after the trees are final and the superblock sb captured (the
 * commit's super hook): reserve the next transaction's first segment and
 * name it in sb (log_slot, SUPER_FEAT_LOG_SLOT), so that segment needs
 * no superblock write. */
void log_commit_slot(struct core *c, struct super_block *sb);

/* A log left by a crash waits for replay (the superblock's log_root). */
bool log_pending(struct core *c);

/* Mount: replay a log left by a crash and commit.  Records replayed
 * (0 when there was no log), or -errno. */
int log_replay(struct fsctx *fs);

/*
 * fsck: read and verify a pending log (headers, checksums, records, and
 * the data written since the last commit that its records reference,
 * against the checksums they carry: what replay would make reachable).
 * 0 when there is none, the number of records when it is valid, -errno
 * (with lines on out) when it is damaged.
 */
int log_check(struct core *c, FILE *out);

/* Counters for stats. */
struct log_stats {
	uint64_t syncs;		/* fsyncs served by the log */
	uint64_t fallbacks;	/* fsyncs that committed instead */
	uint64_t batches;	/* segments written */
	uint64_t supers;	/* of which needed a superblock write */
	uint64_t bytes;		/* segment bytes written */
	uint64_t rejected;	/* replay: records dropped, their data not on the device */
	uint64_t walked;	/* items record capture read one by one (a committed
				 * leaf of extents is one run, unread) */
	uint64_t reused;	/* fsyncs whose capture started from the inode's last
				 * one in this transaction (only noted ranges read) */
	uint64_t deltas;	/* records holding only the change since the inode's
				 * record before (LOG_REC_DELTA) */
	uint64_t rec_bytes;	/* bytes of the records written (headers and items) */
	uint64_t arenas;	/* LOG_ARENA reservations the log carved segments from */
	uint64_t fills;		/* of which written with zeros first (a hole under them) */
};
void log_stats(struct core *c, struct log_stats *s);

#endif
