/* SPDX-License-Identifier: MIT */
/*
 * volume_int.h — private to fs/services/volume_*.c: the state behind
 * volume.h (struct volume, hung off struct core at first use) and the
 * helpers its files share.  Nothing outside this folder includes it
 * (tests/unit/layers.test).
 *
 * The files, one idea each:
 *   volume_state.c    the state, the one operation slot, a volume
 *                     operation's transaction and reasons, progress
 *                     counters, volume_close
 *   volume_reloc.c    moving one chunk to new stripes (copy, mend, split
 *                     to fit) and picking the chunks an operation moves
 *   volume_dev.c      device add, remove (and remove missing),
 *                     set-rotational
 *   volume_balance.c  balance and profile conversion, in a thread
 *   volume_resync.c   rewriting a stale device's copies
 */
#ifndef GLASSFS_VOLUME_INT_H
#define GLASSFS_VOLUME_INT_H

#include "fs/core/core_types.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct chunk;
struct dev;
struct txn;

#define VOLUME_SEG (1ull << 20)	/* relocation copy unit */

struct volume {
	struct glock lock;		/* GLOCK_CLASS_MISC mutex: one operation at a time (busy) */
	bool busy;			/* an add/remove/rotational/balance runs */
	/* balance (fields below guarded by lock, progress counters atomic) */
	pthread_t thread;
	bool joinable;
	int running;			/* atomic */
	int cancel;			/* atomic: stop after the current segment */
	int result;
	unsigned started;
	int64_t dconv, mconv;
	uint64_t chunks_total, chunks_done, bytes_total, bytes_done;	/* atomic */
	/* what the counters above measure (VOL_OP_*, set by volume_op_plan) and
	 * whether it runs; bytes_done grows by segment (reloc_copy) */
	int op, op_running;		/* atomic */
	/* blocks of the operation's chunks no copy verified (volume_reloc.c
	 * moves them as they were), the first one's logical address */
	uint64_t lost_blocks, lost_first;	/* atomic */
	char msg[256];
	/* background resync of stale devices (volume_open_check) */
	pthread_t resync_thread;
	bool resync_joinable;
	int resync_cancel;		/* atomic: unmount */
	int resync_running;		/* atomic */
	uint64_t resync_ids[CORE_MAX_DEVS];	/* the devices stale at open */
	int nresync;
	uint64_t resync_total, resync_done;	/* atomic: bytes to copy / copied */
	/* removed devices stay open until unmount: a read or discard that
	 * looked a stripe up before the switch may still be using one */
	struct dev *gone[CORE_MAX_DEVS];
	int ngone;
};

/* A chunk an operation moves (volume_collect). */
struct chunk_ref { uint64_t logical, length, type; bool on_dev; };

/* The chunks volume_collect gathers: all, those on dev, or those on a
 * missing device. */
struct chunk_list {
	struct chunk_ref *v;
	int n, cap;
	const struct dev *dev;	/* only chunks with a stripe on dev */
	bool missing;		/* only chunks with a stripe on a missing device */
	int lost;		/* (missing) chunks with no present stripe at all */
	uint64_t lost_logical, lost_type;	/* the first of them */
	uint64_t missing_ids[CORE_MAX_DEVS];	/* (missing) device ids seen */
	int nmissing;
};

/* Room for element n of the array *v (capacity *cap, elements of sz
 * bytes), doubling it when full.  0 or -ENOMEM. */
static inline int volume_grow(void **v, int *cap, int n, size_t sz)
{
	if (n < *cap)
		return 0;
	int ncap = *cap ? *cap * 2 : 32;
	void *nv = realloc(*v, (size_t)ncap * sz);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

/* ---- volume_state.c ---- */

/* c's volume state, made at first use; NULL only when out of memory. */
struct volume *volume_get(struct core *c);
/* The reason, to msg and the daemon log; returns err. */
int volume_say(struct core *c, int err, char *msg, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Claim the one volume operation slot.  -EBUSY if taken. */
int volume_claim(struct core *c, struct volume **out, char *msg, size_t len);
void volume_release(struct volume *v);
/* The chunks of ch are what the operation op moves: the progress counters
 * start over with their bytes (glassctl's progress line, by bytes). */
void volume_op_plan(struct volume *v, int op, const struct chunk_ref *ch, int n);
/* A chunk is finished (or skipped): done becomes exactly the bytes of the
 * chunks finished so far, whatever its segments added. */
void volume_op_done(struct volume *v, uint64_t *base, uint64_t length);
/* An operation that did its work (ret 0; done says what, "every chunk
 * moved") but met blocks no copy verified: -EIO, said with the first
 * and the count; else ret. */
int volume_lost_say(struct core *c, struct volume *v, int ret, const char *done, char *msg,
		    size_t mlen);
/* A handle for a volume operation; says why when there is none. */
int volume_join(struct core *c, unsigned items, struct txn **t, char *msg, size_t mlen);
/* End handle t and commit if all went well; says why not (see the .c). */
int volume_commit(struct core *c, struct txn *t, int ret, char *msg, size_t mlen,
		  const char *what, const char *ok);

/* ---- volume_reloc.c ---- */

/* Relocate the chunk at logical to profile prof, off exclude (NULL: none),
 * split into pieces that fit when needed; *cancel (NULL: none) stops it. */
int volume_relocate(struct core *c, uint64_t logical, uint64_t old_type, uint64_t prof,
		    const struct dev *exclude, const int *cancel, char *msg, size_t mlen);
/* chunk_for_each callback filling a struct chunk_list. */
int volume_collect(const struct chunk *ch, void *arg);
/* Present devices that can take new stripes (not being removed, not excluded). */
int volume_usable_devs(struct core *c, const struct dev *exclude);

#endif
