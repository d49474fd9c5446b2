/*
 * spool.h — glass-agent's bounded on-disk queue of finished windows.
 *
 * One file per window, named "START_NS-SEQ.json.gz" so the directory's
 * sorted order is the order windows were taken, across agent restarts.
 * A file is written to a temporary name, fsync'ed and renamed: a crash
 * leaves either the whole window or nothing.  When adding a window would
 * exceed max_bytes, the oldest windows are dropped (counted, logged):
 * the bound wins over completeness, by design.  Windows the aggregator
 * refuses as invalid are moved to DIR/rejected/ for a human to read.
 *
 * Not thread-safe: the agent serialises calls with its own mutex.
 */
#ifndef GLASS_SPOOL_H
#define GLASS_SPOOL_H

#include <stddef.h>
#include <stdint.h>

struct spool {
	char *dir;
	uint64_t max_bytes, bytes, dropped;
	size_t files;
};

int spool_open(struct spool *sp, const char *dir, uint64_t max_bytes);
void spool_close(struct spool *sp);
/* Add a window.  Returns 0 or -errno; -E2BIG if it alone exceeds the bound. */
int spool_put(struct spool *sp, int64_t start_ns, uint64_t seq, const void *data,
	      size_t len);
/* Path of the oldest window into buf; 0, or -ENOENT when empty. */
int spool_oldest(struct spool *sp, char *buf, size_t buflen);
/* Remove a delivered window; move a refused one to rejected/. */
int spool_remove(struct spool *sp, const char *path);
int spool_reject(struct spool *sp, const char *path);

#endif /* GLASS_SPOOL_H */
