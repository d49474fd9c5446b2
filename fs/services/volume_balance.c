// SPDX-License-Identifier: MIT
/*
 * volume_balance.c — balance: every chunk rewritten to new stripes in a
 * thread, converting the data or metadata profile on the way; its status
 * and cancel (volume.h).
 */
#include "fs/store/chunk.h"
#include "fs/base/probe.h"
#include "fs/services/volume.h"
#include "fs/services/volume_int.h"

#include <stdio.h>
#include <string.h>

/*
 * A conversion that adds copies needs that much more device space in all
 * (where it lies is volume_relocate's business: it splits chunks to fit holes).
 * -ENOSPC, said, when the devices do not have it.
 */
static int convert_fits(struct core *c, const struct volume *v, const struct chunk_list *l,
			char *msg, size_t mlen)
{
	uint64_t need = 0, have = chunk_unallocated(c);

	for (int i = 0; i < l->n; i++) {
		uint64_t type = l->v[i].type, cur = type & BG_PROFILE_MASK, nn, nd, cn, cd;
		int64_t conv = (type & BG_DATA) ? v->dconv : v->mconv;

		if (conv < 0)
			continue;
		/* device bytes per logical byte, new and now (raid5/6: n / (n - p)) */
		chunk_profile_ratio(c, (uint64_t)conv, &nn, &nd);
		chunk_profile_ratio(c, cur, &cn, &cd);
		if (nn * cd > cn * nd)
			need += l->v[i].length * (nn * cd - cn * nd) / (nd * cd);
	}
	if (need <= have)
		return 0;
	return volume_say(c, -ENOSPC, msg, mlen, "not enough space to convert: the new copies need %llu MiB, "
		   "the devices have %llu MiB unallocated (nothing was moved)",
		   (unsigned long long)(need >> 20), (unsigned long long)(have >> 20));
}

static void *balance_thread(void *arg)
{
	struct core *c = arg;
	struct volume *v = c->vol;
	struct chunk_list l = { 0 };
	char msg[256] = "";
	int ret;

	uint64_t base = 0;

	ret = chunk_for_each(c, volume_collect, &l);
	if (!ret) {
		volume_op_plan(v, VOL_OP_BALANCE, l.v, l.n);
		ret = convert_fits(c, v, &l, msg, sizeof(msg));
	}
	for (int i = 0; !ret && i < l.n; i++) {
		uint64_t type = l.v[i].type;
		int64_t conv = (type & BG_DATA) ? v->dconv : v->mconv;
		uint64_t prof = conv >= 0 ? (uint64_t)conv : (type & BG_PROFILE_MASK);

		if (__atomic_load_n(&v->cancel, __ATOMIC_RELAXED)) {
			ret = -ECANCELED;
			snprintf(msg, sizeof(msg), "cancelled");
			break;
		}
		/* a conversion touches only the types it names, and leaves
		 * chunks that have the profile already (btrfs's "soft"); a
		 * plain balance rewrites every chunk */
		bool filtered = v->dconv >= 0 || v->mconv >= 0;
		if (filtered && (conv < 0 || prof == (type & BG_PROFILE_MASK)))
			ret = 0;
		else
			ret = volume_relocate(c, l.v[i].logical, type, prof, NULL, &v->cancel, msg, sizeof(msg));
		if (!ret)
			volume_op_done(v, &base, l.v[i].length);
		if (PROBE_ON(BALANCE_PROGRESS))
			GLASSFS_BALANCE_PROGRESS(__atomic_load_n(&v->chunks_done, __ATOMIC_RELAXED),
						 (uint64_t)l.n,
						 __atomic_load_n(&v->bytes_done, __ATOMIC_RELAXED));
	}
	free(l.v);
	/* every chunk moved, but blocks no copy verified: an error all the same */
	bool lost = !ret && __atomic_load_n(&v->lost_blocks, __ATOMIC_RELAXED);
	ret = volume_lost_say(c, v, ret, "every chunk moved", msg, sizeof(msg));
	glock_write(&v->lock);
	v->result = ret;
	snprintf(v->msg, sizeof(v->msg), "%s", ret ? msg : "");
	v->busy = false;
	glock_write_unlock(&v->lock);
	core_log(c, "balance %s: %llu of %llu chunks done%s%s",
		 ret == -ECANCELED ? "cancelled" : lost ? "finished with unreadable blocks" :
		 ret ? "stopped" : "finished",
		 (unsigned long long)v->chunks_done, (unsigned long long)v->chunks_total,
		 ret && ret != -ECANCELED ? ": " : "", ret && ret != -ECANCELED ? msg : "");
	__atomic_store_n(&v->running, 0, __ATOMIC_RELEASE);
	return NULL;
}

int volume_balance_start(struct core *c, int64_t dconv, int64_t mconv, char *msg, size_t mlen)
{
	struct volume *v;
	int ret;

	for (int i = 0; i < 2; i++) {
		int64_t p = i ? mconv : dconv;
		if (p >= 0 && ((uint64_t)p & ~(BG_MIRROR | BG_DUP | BG_RAID10 | BG_PARITY)))
			return volume_say(c, -EINVAL, msg, mlen, "unsupported profile %lld", (long long)p);
		if (p >= 0 && volume_usable_devs(c, NULL) < profile_min_devs((uint64_t)p))
			return volume_say(c, -EINVAL, msg, mlen,
				   "cannot convert %s to %s: it needs %d devices, the volume has %d",
				   i ? "metadata" : "data", core_profile_name((uint64_t)p),
				   profile_min_devs((uint64_t)p), volume_usable_devs(c, NULL));
	}
	ret = volume_claim(c, &v, msg, mlen);
	if (ret)
		return ret;
	glock_write(&v->lock);
	if (v->joinable) {
		glock_write_unlock(&v->lock);
		pthread_join(v->thread, NULL);	/* finished: busy was clear */
		glock_write(&v->lock);
		v->joinable = false;
	}
	v->dconv = dconv;
	v->mconv = mconv;
	v->cancel = 0;
	v->result = 0;
	v->msg[0] = 0;
	v->chunks_total = v->chunks_done = v->bytes_total = v->bytes_done = 0;
	/* new chunks take the converted profiles from now on */
	if (dconv >= 0)
		c->profile[core_type_index(BG_DATA)] = (uint64_t)dconv;
	if (mconv >= 0) {
		c->profile[core_type_index(BG_METADATA)] = (uint64_t)mconv;
		c->profile[core_type_index(BG_SYSTEM)] = (uint64_t)mconv;
	}
	v->running = 1;
	ret = -pthread_create(&v->thread, NULL, balance_thread, c);
	if (ret) {
		v->running = 0;
		v->busy = false;
	} else {
		v->joinable = true;
		v->started++;
	}
	glock_write_unlock(&v->lock);
	if (!ret)
		core_log(c, "balance started (data %s, metadata %s)",
			 dconv >= 0 ? core_profile_name((uint64_t)dconv) : "keep",
			 mconv >= 0 ? core_profile_name((uint64_t)mconv) : "keep");
	return ret;
}

void volume_balance_status(struct core *c, struct volume_balance_status *s)
{
	struct volume *v = volume_get(c);

	memset(s, 0, sizeof(*s));
	if (!v)
		return;
	glock_write(&v->lock);
	s->running = __atomic_load_n(&v->running, __ATOMIC_ACQUIRE);
	s->result = v->result;
	s->started = v->started;
	s->chunks_total = __atomic_load_n(&v->chunks_total, __ATOMIC_RELAXED);
	s->chunks_done = __atomic_load_n(&v->chunks_done, __ATOMIC_RELAXED);
	s->bytes_total = __atomic_load_n(&v->bytes_total, __ATOMIC_RELAXED);
	s->bytes_done = __atomic_load_n(&v->bytes_done, __ATOMIC_RELAXED);
	if (s->bytes_done > s->bytes_total)	/* a split's pieces, counted twice meanwhile */
		s->bytes_done = s->bytes_total;
	s->op = __atomic_load_n(&v->op, __ATOMIC_RELAXED);
	s->op_running = __atomic_load_n(&v->op_running, __ATOMIC_ACQUIRE) || s->running;
	snprintf(s->msg, sizeof(s->msg), "%s", v->msg);
	glock_write_unlock(&v->lock);
}

int volume_balance_cancel(struct core *c)
{
	struct volume *v = volume_get(c);

	if (!v || !__atomic_load_n(&v->running, __ATOMIC_ACQUIRE))
		return -ENOENT;
	__atomic_store_n(&v->cancel, 1, __ATOMIC_RELAXED);
	return 0;
}
