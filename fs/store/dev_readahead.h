/* SPDX-License-Identifier: MIT */
/*
 * dev_readahead.h — read-ahead of sequential data streams (dev_readahead.c
 * has the why).
 *
 * A data read that continues a stream on a device queues a hint: ask the
 * OS to read the next bytes ahead (posix_fadvise WILLNEED).  The volume's
 * read-ahead thread asks it (probe readahead__issued); the READ that
 * queued the hint goes on at once.  The call can take tens of
 * microseconds — it looks up and allocates page-cache pages and submits
 * the device reads — and in a READ's thread it was 29 % of the daemon's
 * CPU in a cold sequential read (docs/benchmarks.md).  A full queue drops
 * the hint (counted: readahead_dropped in glassctl stats): the stream's
 * next step asks again.
 */
#ifndef GLASSFS_DEV_READAHEAD_H
#define GLASSFS_DEV_READAHEAD_H

#include <stdint.h>
#include "fs/store/dev_readahead_types.h"

struct core;
struct dev;

/* Start the volume's read-ahead thread.  0, or -errno. */
int dev_readahead_open(struct core *c);
/* Ask the OS for what is queued, then stop the thread.  Nothing when it
 * was not started. */
void dev_readahead_close(struct core *c);
/*
 * A data read of [off, off + len) on d was served: when it continues a
 * sequential stream, the next DEV_RA_WINDOW bytes ahead are asked of the
 * OS, in steps of half a window, by the read-ahead thread (in the caller's
 * thread when none runs: mkfs, tools).  Best effort; no error.
 */
void dev_readahead_note(struct core *c, struct dev *d, uint64_t off, uint64_t len);
/*
 * Write-behind: a data write of [off, off + len) on d went into the OS's
 * cache.  Once the large writes near each other (a sequential file's
 * pieces) reach DEV_WB_STEP bytes past what was asked for, plus a lag for
 * pieces out of order, the read-ahead thread asks the OS to start
 * writing them out (sync_file_range WRITE, no wait), so the
 * device works while the writer goes on and a later flush (fsync,
 * commit) finds most of them written.  Writes under DEV_WB_MIN are not
 * noted.  A step the full queue drops is asked again by the stream's
 * next one.  Best effort; no error.
 */
void dev_readahead_written(struct core *c, struct dev *d, uint64_t off, uint64_t len);
/* Wait until every hint queued so far was asked of the OS (tests). */
void dev_readahead_wait(struct core *c);

#endif
