/* SPDX-License-Identifier: MIT */
/*
 * mmapwatch.h — the kernel's own log of executable mappings, fed into a
 * symbolizer cache, so that a process's maps are known even when it exits
 * before anyone could read /proc/PID/maps.
 *
 * A snapshot of /proc/PID/maps (syms_cache__snapshot()) taken at a
 * process's first sight can come too early (during its dynamic loading,
 * before libc is mapped) or too late (the process is gone), and a tool
 * only learns of a process asynchronously.  The kernel writes a record of
 * every executable mmap and every exec into a perf ring buffer at the
 * moment it happens (PERF_RECORD_MMAP2 / PERF_RECORD_COMM with
 * COMM_EXEC, the side band `perf record` keeps): nothing to race.
 *
 * One dummy software event per CPU, system-wide (needs CAP_PERFMON or
 * root).  Not thread-safe.
 */
#ifndef GLASS_MMAPWATCH_H
#define GLASS_MMAPWATCH_H

#include <stdint.h>

struct mmapwatch;
struct syms_cache;

/* Start logging.  NULL with errno set: the caller goes on with snapshots
 * only (and should say so). */
struct mmapwatch *mmapwatch__new(void);
void mmapwatch__free(struct mmapwatch *mw);		/* NULL-safe */
/* Add the descriptors to wake on (EPOLLIN: a buffer is a quarter full)
 * to epoll instance ep.  0 or -errno. */
int mmapwatch__add_to_epoll(struct mmapwatch *mw, int ep);
/* Apply every record logged so far to sc, in time order.  0 or -ENOMEM. */
int mmapwatch__drain(struct mmapwatch *mw, struct syms_cache *sc);
/* A tracer sees process tgid for the first time (or it exec'd or exits):
 * with the log (mw not NULL) and the process in it already (born during
 * the run: the log stays current through its execs), only pin its files
 * (a deleted binary stays readable); else snapshot its maps while it
 * lives.  Only the maps: symbols are read when the stacks are printed. */
void mmapwatch__first_sight(struct mmapwatch *mw, struct syms_cache *sc, int tgid);
/* What the log did, for the report and -v. */
struct mmapwatch_stats {
	uint64_t records;	/* mmap/exec/fork records applied */
	uint64_t lost;		/* records the kernel dropped (a ring was full) */
	uint64_t drain_ns;	/* time in mmapwatch__drain() */
};
void mmapwatch__stats(const struct mmapwatch *mw, struct mmapwatch_stats *st);

#endif
