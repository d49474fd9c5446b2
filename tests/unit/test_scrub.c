// SPDX-License-Identifier: MIT
/*
 * test_scrub.c — scrub_run beside a running workload (no false
 * positives, ASan-clean), cancel, rate limit, progress read while it
 * runs, report-only mode, and damage with no good copy left
 * (uncorrectable, reads give EIO).
 */
#include "core_test.h"
#include "fs/store/chunk.h"
#include "fs/services/scrub.h"

#include <pthread.h>

#define EXTLEN (32u << 10)

static int put_extent(struct core *c, unsigned seed, uint64_t *logical)
{
	uint8_t b[EXTLEN];
	struct txn *t;
	int ret = txn_join(c, 4, 0, &t);

	if (ret)
		return ret;
	for (unsigned i = 0; i < EXTLEN; i++)
		b[i] = (uint8_t)(i * 17 + seed);
	ret = data_alloc(t, EXTLEN, logical);
	if (!ret)
		ret = data_write(t, *logical, b, EXTLEN);
	if (!ret) {
		struct key k = t_key(seed);
		uint8_t v[64];
		memset(v, (int)seed, sizeof(v));
		ret = btree_insert(t, subvol_root(c, FS_TREE_OBJECTID), &k, v, sizeof(v));
	}
	int e = txn_end(t);
	return ret ? ret : e;
}

struct worker {
	struct core *c;
	int stop, err;
	unsigned n;
};

/* Writes extents and items, frees some, commits now and then. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t l[64];
	unsigned seed = 1000;

	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED) && !w->err) {
		int i = (int)(w->n % 64);
		if (w->n >= 64) {	/* drop an old one: its space gets reused */
			struct txn *t;
			w->err = txn_join(w->c, 4, TXN_USE_RESERVE, &t);
			if (w->err)
				break;
			w->err = data_ref(t, l[i], EXTLEN, -1);
			int e = txn_end(t);
			w->err = w->err ? w->err : e;
		}
		if (!w->err)
			w->err = put_extent(w->c, seed++, &l[i]);
		w->n++;
		if (!w->err && w->n % 16 == 0)
			w->err = txn_commit(w->c, COMMIT_SYNC);
	}
	return NULL;
}

struct bg_scrub {
	struct core *c;
	struct scrub_opts o;
	struct scrub_progress p;
	int ret;
};

static void *scrub_main(void *arg)
{
	struct bg_scrub *s = arg;
	s->ret = scrub_run(s->c, &s->o, &s->p);
	return NULL;
}

static int open2(const char *const *devs, struct core **c)
{
	struct core_opts o;
	core_opts_default(&o);
	o.commit_interval_s = 1;	/* the periodic commit runs too */
	return mount_open(devs, 2, &o, c);
}

int main(void)
{
	char a[256], b[256];
	const char *devs[2] = { a, b };
	struct core *c = NULL;
	struct scrub_opts so = { 0 };
	struct scrub_progress sp;
	uint64_t ext[16];
	pthread_t th;

	t_seed_init();
	a[0] = b[0] = 0;
	MUST(t_image(a, sizeof(a), 64ull << 20));
	MUST(t_image(b, sizeof(b), 64ull << 20));
	struct format_opts fo = { .label = "scrub", .nodesize = 4096, .force = true,
				  .data_profile = CORE_PROFILE_RAID1,
				  .meta_profile = CORE_PROFILE_RAID1 };
	MUST(mount_format(devs, 2, &fo));
	MUST(open2(devs, &c));
	for (unsigned i = 0; i < 16; i++)
		MUST(put_extent(c, i + 1, &ext[i]));
	MUST(txn_commit(c, COMMIT_SYNC));

	/* 1. online: a workload runs while scrub loops; nothing is reported bad */
	{
		struct worker w = { c, 0, 0, 0 };
		uint64_t errs = 0, rounds = 0, checked = 0;
		uint64_t t0 = glock_now_ns();
		MUST(-pthread_create(&th, NULL, worker_main, &w));
		while (glock_now_ns() - t0 < 1500000000ull) {
			int r = scrub_run(c, &so, &sp);
			if (r) {
				printf("FAIL: online scrub returned %d (%s)\n", r, strerror(-r));
				fails++;
				break;
			}
			errs += sp.meta_errors + sp.data_errors + sp.read_errors + sp.uncorrectable_bytes;
			checked += sp.checked_bytes;
			rounds++;
		}
		__atomic_store_n(&w.stop, 1, __ATOMIC_RELAXED);
		pthread_join(th, NULL);
		printf("online: %llu scrubs, %llu bytes checked, workload did %u extents\n",
		       (unsigned long long)rounds, (unsigned long long)checked, w.n);
		CHECK("online scrub beside a writing workload: workload ran clean", w.err == 0 && w.n > 16);
		CHECK("online scrub beside a writing workload: no false errors", errs == 0 && rounds >= 2);
	}
	MUST(txn_commit(c, COMMIT_SYNC));

	/* 2. rate limit: bytes read / elapsed stays near the limit */
	{
		so.rate_bytes_per_s = 8ull << 20;
		uint64_t t0 = glock_now_ns();
		MUST(scrub_run(c, &so, &sp));
		double el = (double)(glock_now_ns() - t0) / 1e9;
		double want = (double)sp.checked_bytes / (double)so.rate_bytes_per_s;
		printf("rate: %llu bytes in %.3f s at %llu B/s (floor %.3f s)\n",
		       (unsigned long long)sp.checked_bytes, el,
		       (unsigned long long)so.rate_bytes_per_s, want);
		CHECK("rate limit: a scrub takes at least bytes/rate (minus one batch)",
		      want > 0.05 && el >= want * 0.7);
		so.rate_bytes_per_s = 0;
	}

	/* 3. cancel, with progress read while it runs */
	{
		struct bg_scrub s = { c, { .rate_bytes_per_s = 256u << 10 }, { 0 }, 0 };
		struct scrub_progress mid;
		MUST(-pthread_create(&th, NULL, scrub_main, &s));
		usleep(300000);
		scrub_progress_read(&s.p, &mid);
		uint64_t t0 = glock_now_ns();
		scrub_cancel(&s.o);
		pthread_join(th, NULL);
		double el = (double)(glock_now_ns() - t0) / 1e9;
		CHECK("progress readable while scrub runs", mid.running == 1 && mid.checked_bytes > 0 &&
		      mid.total_bytes > mid.done_bytes);
		CHECK("cancel: scrub stops with ECANCELED within 0.5 s", s.ret == -ECANCELED && el < 0.5);
		CHECK("cancel: progress says finished, result ECANCELED",
		      s.p.running == 0 && s.p.result == -ECANCELED);
	}

	/* 4. report only, then repair, then damage with no good copy */
	{
		struct chunk_copy cp[CHUNK_MAX_STRIPES];
		uint8_t buf[EXTLEN];
		char p0[256], p1[256];
		uint64_t ph0, ph1;
		int n = chunk_map_lookup(c, ext[3], EXTLEN, cp, NULL);
		if (n != 2) {
			printf("FAIL: raid1 extent has %d copies\n", n);
			fails++;
			goto out;
		}
		snprintf(p0, sizeof(p0), "%s", cp[0].dev->path);
		snprintf(p1, sizeof(p1), "%s", cp[1].dev->path);
		ph0 = cp[0].physical;
		ph1 = cp[1].physical;
		MUST(mount_close(c));
		c = NULL;
		MUST(t_poke(p0, ph0 + 5, 0x10));		/* sector 0: copy 1 bad */
		MUST(t_poke(p0, ph0 + 4096 + 9, 0x10));	/* sector 1: both bad */
		MUST(t_poke(p1, ph1 + 4096 + 9, 0x20));
		MUST(open2(devs, &c));
		so.readonly = true;
		MUST(scrub_run(c, &so, &sp));
		CHECK("report-only scrub finds the bad copies and rewrites nothing",
		      sp.data_errors == 3 && sp.corrected_bytes == 0 && sp.uncorrectable_bytes == 4096);
		so.readonly = false;
		MUST(scrub_run(c, &so, &sp));
		CHECK("scrub repairs what has a good copy, counts the rest uncorrectable",
		      sp.data_errors == 3 && sp.corrected_bytes == 4096 && sp.uncorrectable_bytes == 4096);
		MUST(scrub_run(c, &so, &sp));
		CHECK("second scrub: only the uncorrectable sector is left",
		      sp.data_errors == 2 && sp.corrected_bytes == 0 && sp.uncorrectable_bytes == 4096);
		CHECK("the uncorrectable extent reads EIO", data_read(c, ext[3], buf, EXTLEN) == -EIO);
		CHECK("its first sector (repaired) reads", data_read(c, ext[3], buf, 4096) == 0 &&
		      buf[0] == (uint8_t)4 && buf[5] == (uint8_t)(5 * 17 + 4));
		CHECK("other extents read", data_read(c, ext[4], buf, EXTLEN) == 0);
	}
out:
	if (c)
		mount_close(c);
	if (a[0])
		unlink(a);
	if (b[0])
		unlink(b);
	return fails ? 1 : 0;
}
