// SPDX-License-Identifier: MIT
/*
 * volume_state.c — the state of volume management (struct volume, made at
 * first use, freed by volume_close), its one operation slot, the
 * transaction and the one-line reasons every volume operation shares, and
 * the progress counters glassctl polls (volume.h, volume_int.h).
 */
#include "fs/txn/txn.h"
#include "fs/store/dev.h"
#include "fs/services/volume.h"
#include "fs/services/volume_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* c's volume state, made at first use (a race: the first one in wins). */
struct volume *volume_get(struct core *c)
{
	struct volume *v = __atomic_load_n(&c->vol, __ATOMIC_ACQUIRE);

	if (v)
		return v;
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	glock_init(&v->lock, GLOCK_MUTEX, GLOCK_CLASS_MISC, 0, -1, -1);
	struct volume *none = NULL;
	if (!__atomic_compare_exchange_n(&c->vol, &none, v, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		free(v);
		return none;
	}
	return v;
}

/* The reason, to msg and the daemon log; returns err. */
int volume_say(struct core *c, int err, char *msg, size_t len, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (msg && len)
		snprintf(msg, len, "%s", buf);
	core_log(c, "%s", buf);
	return err;
}

/* Claim the one volume operation slot.  -EBUSY if taken. */
int volume_claim(struct core *c, struct volume **out, char *msg, size_t len)
{
	struct volume *v = volume_get(c);
	int ret = 0;

	if (!v)
		return -ENOMEM;
	if (core_readonly(c))
		return volume_say(c, -EROFS, msg, len, "the volume is read-only");
	glock_write(&v->lock);
	if (v->busy && __atomic_load_n(&v->resync_running, __ATOMIC_ACQUIRE))
		ret = volume_say(c, -EBUSY, msg, len, "a stale device's resync is running; try again when it "
			  "ends (glassctl resync status -B waits for it)");
	else if (v->busy)
		ret = volume_say(c, -EBUSY, msg, len, "another device or balance operation is running");
	else
		v->busy = true;
	glock_write_unlock(&v->lock);
	*out = v;
	return ret;
}

/* The chunks of l are what the operation op moves: the progress counters
 * start over with their bytes (glassctl's progress line, by bytes). */
void volume_op_plan(struct volume *v, int op, const struct chunk_ref *ch, int n)
{
	uint64_t bytes = 0;

	for (int i = 0; i < n; i++)
		bytes += ch[i].length;
	__atomic_store_n(&v->chunks_done, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&v->bytes_done, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&v->chunks_total, (uint64_t)n, __ATOMIC_RELAXED);
	__atomic_store_n(&v->bytes_total, bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&v->op, op, __ATOMIC_RELAXED);
	__atomic_store_n(&v->lost_blocks, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&v->lost_first, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&v->op_running, 1, __ATOMIC_RELEASE);
}

/*
 * Every operation that moves chunks ends so (balance, device remove,
 * device remove missing), its work done: done says what was done.
 * Why an error and not a stop at the first such block: every copy of it
 * failed its checksum before the move, so a read of it failed before as
 * after, and stopping would keep every conversion and device removal
 * from finishing until the file holding it is found; why not success:
 * the user asked for the chunks to be moved safely, and must learn that
 * some bytes were gone already (the log names each block).
 * A device removal so ended has removed the device (running it again
 * would find nothing to do): the error says the removal happened.
 */
int volume_lost_say(struct core *c, struct volume *v, int ret, const char *done, char *msg,
		    size_t mlen)
{
	uint64_t n = __atomic_load_n(&v->lost_blocks, __ATOMIC_RELAXED);

	if (ret || !n)
		return ret;
	return volume_say(c, -EIO, msg, mlen, "%s, but %llu block(s) had no copy that "
			  "verifies, the first at logical %llu (the log names them): unreadable before "
			  "the move as after, moved as they were; delete or rewrite the files holding them",
			  done, (unsigned long long)n,
			  (unsigned long long)__atomic_load_n(&v->lost_first, __ATOMIC_RELAXED));
}

/* A chunk is finished (or skipped): done becomes exactly the bytes of the
 * chunks finished so far, whatever its segments added. */
void volume_op_done(struct volume *v, uint64_t *base, uint64_t length)
{
	*base += length;
	__atomic_fetch_add(&v->chunks_done, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&v->bytes_done, *base, __ATOMIC_RELAXED);
}

void volume_release(struct volume *v)
{
	__atomic_store_n(&v->op_running, 0, __ATOMIC_RELEASE);
	glock_write(&v->lock);
	v->busy = false;
	glock_write_unlock(&v->lock);
}

/* A handle for a volume operation; says why when there is none. */
int volume_join(struct core *c, unsigned items, struct txn **t, char *msg, size_t mlen)
{
	int ret = txn_join(c, items, TXN_USE_RESERVE, t);

	if (ret)
		volume_say(c, ret, msg, mlen, "cannot start a transaction: %s", strerror(-ret));
	return ret;
}

/*
 * The end of every volume operation's transaction: end handle t (ret is
 * the operation's own result so far), commit if all went well, then say
 * why it failed ("WHAT failed: reason", to msg and the log; what NULL:
 * nothing said) or log ok (NULL: nothing).  Returns 0 or -errno.
 */
int volume_commit(struct core *c, struct txn *t, int ret, char *msg, size_t mlen,
		  const char *what, const char *ok)
{
	int r = txn_end(t);

	if (!ret)
		ret = r;
	if (!ret)
		ret = txn_commit(c, COMMIT_OTHER);
	if (ret && what)
		volume_say(c, ret, msg, mlen, "%s failed: %s", what, strerror(-ret));
	else if (!ret && ok)
		core_log(c, "%s", ok);
	return ret;
}

void volume_close(struct core *c)
{
	struct volume *v = c->vol;

	if (!v)
		return;
	if (v->resync_joinable) {
		/* the device stays flagged: the next full mount resyncs it */
		__atomic_store_n(&v->resync_cancel, 1, __ATOMIC_RELAXED);
		pthread_join(v->resync_thread, NULL);
		v->resync_joinable = false;
	}
	if (v->joinable) {
		__atomic_store_n(&v->cancel, 1, __ATOMIC_RELAXED);
		pthread_join(v->thread, NULL);
		v->joinable = false;
	}
	for (int i = 0; i < v->ngone; i++)
		dev_close(v->gone[i]);
	c->vol = NULL;
	free(v);
}
