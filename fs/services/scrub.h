/* SPDX-License-Identifier: MIT */
/*
 * scrub.h — read every copy of every metadata node and data block of a
 * volume, verify it, and rewrite a bad copy from a good one.
 *
 * Online: scrub_run runs in the caller's thread beside the workload.  It
 * walks the extent tree in batches of keys, and reads, checks and repairs
 * each node, and each piece of a data extent (256 KiB), under a
 * transaction handle of its own: no commit can free that block and hand
 * it out again meanwhile (a repair never writes old bytes over a block
 * reused since it was read), and a commit waits for one piece, not for a
 * batch.  Under the handle a unit is checked again against the extent
 * tree first: one freed since the batch was listed is skipped (counted
 * in skipped_bytes).  The rate limit sleeps after each node and each
 * piece, with no handle (a batch's extents may be many MiB: one sleep
 * per batch let a whole batch go at full speed).  A node copy is held to
 * the generation its extent item records: a sound copy of another
 * generation (a lost write) is bad, and never a source for a repair.
 * Only committed extents are scrubbed: blocks written by the
 * running transaction have no extent item yet.  A relocation moving the
 * chunk meanwhile frees its old stripes only after a commit (so after
 * the repair); a repair of an old stripe the copy has already passed is
 * lost to the new stripes, which the copy mended from the good copy
 * itself (volume_reloc.c).
 *
 * A copy is bad when it cannot be read, or (node) fails node_verify, or
 * (data sector) does not match its checksum.  A bad copy is rewritten
 * from a good copy of the same block; with no good copy the block's bytes
 * count as uncorrectable and a log line names it.  Sectors without a
 * checksum (preallocated, never written) are only read.
 *
 * Progress counters are updated atomically while scrub runs (totals grow
 * when the walk meets extents written since it started, so done <= total
 * and checked <= total_check always hold): another
 * thread may read them (scrub_progress_read) and cancel (scrub_cancel).
 * Probes: scrub__progress after each batch and at the end, scrub__error
 * per bad copy.
 */
#ifndef GLASSFS_SCRUB_H
#define GLASSFS_SCRUB_H

#include <stdbool.h>
#include <stdint.h>

struct core;

struct scrub_opts {
	uint64_t rate_bytes_per_s;	/* bytes read per second, 0 = unlimited */
	bool readonly;			/* report only (offline check, ro mount) */
	int cancel;			/* scrub_cancel() sets it: -ECANCELED */
};

struct scrub_progress {
	uint64_t total_bytes;		/* bytes of committed extents (logical, at start) */
	uint64_t done_bytes;		/* logical bytes of extents finished */
	uint64_t total_check_bytes;	/* what the walk reads of them: every copy, every
					 * raid5/6 column of their rows (checked_bytes' unit) */
	uint64_t checked_bytes;		/* bytes read and verified, every copy */
	uint64_t corrected_bytes;	/* bytes of bad copies rewritten from a good one */
	uint64_t uncorrectable_bytes;	/* logical bytes with no good copy left */
	uint64_t meta_errors;		/* bad node copies found */
	uint64_t data_errors;		/* bad data sector copies found */
	uint64_t read_errors;		/* copies that could not be read */
	uint64_t parity_errors;		/* raid5/6 parity sectors disagreeing with their row */
	uint64_t nodes, extents;	/* visited */
	uint64_t skipped_bytes;		/* nodes and extent pieces freed between the
					 * walk listing them and their turn: not read */
	int running;			/* 1 while scrub_run runs */
	int result;			/* its return value once finished */
};

/*
 * Scrub the whole volume.  0 when every copy was checked (even if some
 * were uncorrectable: see the counters), -ECANCELED, or -errno when the
 * walk itself failed.  p is zeroed at start.
 */
int scrub_run(struct core *c, struct scrub_opts *o, struct scrub_progress *p);
void scrub_cancel(struct scrub_opts *o);
/* A consistent-enough copy of p while another thread scrubs. */
void scrub_progress_read(const struct scrub_progress *p, struct scrub_progress *out);

/*
 * The scrub service of a mounted volume: one scrub at a time in a thread
 * of its own, started, watched and cancelled by ioctl (fs/fuse), joined at
 * the next start or when the service is freed (unmount, before the core
 * closes).  Its lock (GLOCK_CLASS_MISC) guards the fields of one service
 * and is taken with no other lock held.
 */
struct scrub_service;
struct glassfs_ioc_scrub;
/* NULL when out of memory. */
struct scrub_service *scrub_service_new(struct core *c);
/* Cancel and join a running scrub, then free.  NULL is a no-op. */
void scrub_service_free(struct scrub_service *s);
/* 0, -EROFS on a read-only volume, -EBUSY while one runs, -errno. */
int scrub_service_start(struct scrub_service *s, uint64_t rate_bytes_per_s);
/* The last (or running) scrub's progress, as the ioctl returns it. */
void scrub_service_status(struct scrub_service *s, struct glassfs_ioc_scrub *o);
/* Ask the running scrub to stop: 0, or -ENOENT if none runs. */
int scrub_service_cancel(struct scrub_service *s);

#endif
