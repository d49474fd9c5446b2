// SPDX-License-Identifier: MIT
/*
 * test_scrub.c — scrub_run beside a running workload (no false
 * positives, ASan-clean), cancel, rate limit, progress read while it
 * runs, report-only mode, and damage with no good copy left
 * (uncorrectable, reads give EIO); a repair racing the free and reuse
 * of the block it repairs; a commit beside scrub waits for one piece; a
 * repair beside a balance moving its chunk; a node copy of another
 * generation than its extent item's.  SCRUB_CASE=race, commit, balance
 * or generation runs that case alone; the rate limit within one extent
 * (SCRUB_CASE=rate); a node freed and reused under its repair (nreuse).
 */
#include "core_test.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"
#include "fs/services/scrub.h"
#include "fs/services/volume.h"
#include "fs/btree/node.h"
#include "fs/trees/extent.h"

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
		if (w->n >= 64)	/* drop an old one: its space gets reused */
			w->err = t_free_extent(w->c, l[i], EXTLEN);
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

static int t_open2(const char *const *devs, unsigned commit_s, struct core **c)
{
	struct core_opts o;
	core_opts_default(&o);
	o.commit_interval_s = commit_s;
	return mount_open(devs, 2, &o, c);
}

/* the periodic commit runs too */
static int open2(const char *const *devs, struct core **c)
{
	return t_open2(devs, 1, c);
}

/*
 * Every case's volume: two images of size bytes (names in a and b, for
 * close_pair), formatted with data profile dprof and raid1 metadata,
 * labelled label, and opened with a periodic commit every commit_s
 * seconds (3600: the case commits itself) into *c.
 */
static int pair_volume(char a[256], char b[256], uint64_t size, const char *label,
		       uint64_t dprof, unsigned commit_s, struct core **c)
{
	const char *devs[2] = { a, b };
	struct format_opts fo = { .label = label, .nodesize = 4096, .force = true,
				  .data_profile = dprof, .meta_profile = CORE_PROFILE_RAID1 };
	int ret = t_image(a, 256, size);

	if (!ret)
		ret = t_image(b, 256, size);
	if (!ret)
		ret = mount_format(devs, 2, &fo);
	return ret ? ret : t_open2(devs, commit_s, c);
}

/* n put_extents (seeds 1..n; their addresses in ext[], unless NULL),
 * committed. */
static int put_extents(struct core *c, unsigned n, uint64_t *ext)
{
	uint64_t l;
	int ret = 0;

	for (unsigned i = 0; i < n && !ret; i++)
		ret = put_extent(c, i + 1, ext ? &ext[i] : &l);
	return ret ? ret : txn_commit(c, COMMIT_SYNC);
}

/* A case's end: the volume closed (c may be NULL), its images gone. */
static void close_pair(struct core *c, const char *a, const char *b)
{
	t_done(c, a);
	if (b[0])
		unlink(b);
}


/* fsck.glassfs -n -c over both devices, as CHECK_FSCK (core_test.h). */
#define CHECK_FSCK2(name, a, b) do { \
	char _d[600]; \
	snprintf(_d, sizeof(_d), "%s %s", a, b); \
	CHECK_FSCK_DEVS(name, _d, a); \
} while (0)

/* Does every copy of the EXTLEN bytes at logical hold put_extent's
 * bytes of seed (and so match the checksums written with them)? */
static bool copies_hold(struct core *c, uint64_t logical, unsigned seed)
{
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	static uint8_t got[EXTLEN];
	int n = chunk_map_lookup(c, logical, EXTLEN, cp, NULL);
	bool ok = n == 2;

	for (int m = 0; m < n && ok; m++) {
		ok = dev_read(cp[m].dev, cp[m].physical, got, EXTLEN) == 0;
		for (unsigned i = 0; ok && i < EXTLEN; i++)
			ok = got[i] == (uint8_t)(i * 17 + seed);
		if (!ok)
			printf("copy %d of %llu on %s does not hold the newest bytes\n", m,
			       (unsigned long long)logical, cp[m].dev->path);
	}
	return ok;
}

/*
 * Cases 5 and 7's volume: two devices of size bytes (data profile dprof,
 * raid1 metadata) holding one committed put_extent (seed 1) whose copy
 * `copy` has its first sector damaged, opened again so that no cache
 * holds it: *c, *e, and cp[] its copies as the reopened volume maps
 * them.  0, or -1 with a FAIL said (the caller cleans up).
 */
static int bad_copy_volume(char a[256], char b[256], uint64_t size, const char *tag,
			   uint64_t dprof, int copy, struct core **c, uint64_t *e,
			   struct chunk_copy *cp)
{
	const char *devs[2] = { a, b };
	char bad[256];
	uint64_t ph;

	if (pair_volume(a, b, size, tag, dprof, 3600, c) || put_extents(*c, 1, e))
		return -1;
	if (chunk_map_lookup(*c, *e, EXTLEN, cp, NULL) != 2) {
		printf("FAIL: %s: an extent without two copies\n", tag);
		fails++;
		return -1;
	}
	snprintf(bad, sizeof(bad), "%s", cp[copy].dev->path);
	ph = cp[copy].physical;
	mount_close(*c);
	*c = NULL;
	if (t_poke(bad, ph + 5, 0x10) || t_open2(devs, 3600, c) ||
	    chunk_map_lookup(*c, *e, EXTLEN, cp, NULL) != 2) {
		printf("FAIL: %s: reopening the volume with copy %d bad\n", tag, copy);
		fails++;
		return -1;
	}
	return 0;
}

#define RACE_READ_MS 300	/* each read of the bad copy's device */

/*
 * 5. A repair racing the free and reuse of the block it repairs.  Copy 1
 * of the only data extent is bad and its device reads slowly, so scrub
 * sits between reading the good copy (old bytes) and rewriting the bad
 * one for RACE_READ_MS.  Meanwhile the test frees the extent, commits
 * (its space is allocatable once that commit is durable), writes new
 * bytes at the same address and commits again.  Scrub must not write
 * the old bytes over the new ones: its batch holds a transaction handle,
 * so the first commit, and with it the reuse, waits until the repair is
 * done (scrub.h).  Afterwards every copy holds the newest bytes, a second
 * scrub finds nothing and fsck is clean.
 */
static void race_reuse(void)
{
	char a[256] = "", b[256] = "";
	struct core *c = NULL;
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	struct bg_scrub s = { 0 };
	struct scrub_opts so = { .readonly = true };
	struct scrub_progress sp;
	uint64_t e, e2 = 0, tmp, t0, wait_ns;
	bool started = false;
	pthread_t th;

	if (bad_copy_volume(a, b, 64ull << 20, "race", CORE_PROFILE_RAID1, 1, &c, &e, cp))
		goto out;
	/* the trees a free and commit touch, read now: only scrub meets
	 * the slow device below */
	MUST(put_extent(c, 2, &tmp));
	MUST(t_free_extent(c, tmp, EXTLEN));
	MUST(txn_commit(c, COMMIT_SYNC));
	MUST(chunk_map_lookup(c, e, EXTLEN, cp, NULL));
	dev_set_latency(cp[1].dev, DEV_READ, RACE_READ_MS * 1000000ull);

	s.c = c;
	MUST(-pthread_create(&th, NULL, scrub_main, &s));
	started = true;
	/* scrub is at the extent (the only one): reading its copies */
	for (int i = 0; i < 30000 && !__atomic_load_n(&s.p.extents, __ATOMIC_RELAXED); i++)
		usleep(1000);
	t0 = glock_now_ns();
	MUST(t_free_extent(c, e, EXTLEN));
	MUST(txn_commit(c, COMMIT_SYNC));
	wait_ns = glock_now_ns() - t0;
	uint8_t nb[EXTLEN];
	for (unsigned i = 0; i < EXTLEN; i++)
		nb[i] = (uint8_t)(i * 17 + 3);
	MUST(t_write_extent(c, nb, EXTLEN, e, &e2));
	MUST(txn_commit(c, COMMIT_SYNC));
	pthread_join(th, NULL);
	started = false;
	dev_set_latency(cp[1].dev, DEV_READ, 0);
	printf("race: the free's commit took %.0f ms beside the repair (a read of the bad copy: %d ms); "
	       "scrub corrected %llu bytes\n", (double)wait_ns / 1e6, RACE_READ_MS,
	       (unsigned long long)s.p.corrected_bytes);
	CHECK("race: scrub ran and repaired the bad copy it read", s.ret == 0 &&
	      s.p.extents >= 1 && s.p.corrected_bytes == 4096);
	CHECK("race: the new extent took the freed address", e2 == e);
	CHECK("race: every copy of the reused block holds the newest bytes", copies_hold(c, e2, 3));
	MUST(scrub_run(c, &so, &sp));
	CHECK("race: a second scrub finds every copy good",
	      sp.data_errors == 0 && sp.meta_errors == 0 && sp.read_errors == 0);
	MUST(mount_close(c));
	c = NULL;
	CHECK_FSCK2("race: fsck clean", a, b);
out:
	if (started)
		pthread_join(th, NULL);
	close_pair(c, a, b);
}


#define STALL_EXT (1u << 20)
#define STALL_N 64
#define STALL_READ_MS 4
#define STALL_BATCH 32	/* scrub.c's BATCH_ITEMS: keys walked per batch */

/*
 * 6. A commit asked for while scrub reads waits for the extent scrub is
 * at, not for its whole batch: scrub holds a transaction handle only
 * across one piece of an extent (or a node) — what it reads, checks and
 * repairs under it — so a commit (and every handle that would join
 * behind it) waits for one piece's reads.  Both devices read slowly
 * (STALL_READ_MS a read, one read per copy of a 256 KiB piece), the
 * volume holds STALL_N extents of 1 MiB (two batches' worth); the commit
 * is asked for as scrub begins the first extent of a batch (the walk
 * counts every key it visits, as a node or an extent), and the test
 * counts the extents scrub began while the commit waited: the rest of
 * the batch (31) when a handle spans the batch.
 */
static void commit_beside(void)
{
	char a[256] = "", b[256] = "";
	struct core *c = NULL;
	struct bg_scrub s = { 0 };
	bool started = false;
	uint64_t t0, ex[STALL_N];
	pthread_t th;
	struct txn *t;
	static uint8_t buf[STALL_EXT];

	MUST(pair_volume(a, b, 256ull << 20, "stall", CORE_PROFILE_RAID1, 3600, &c));
	for (unsigned i = 0; i < STALL_N; i++) {
		memset(buf, (int)i, sizeof(buf));
		MUST(t_write_extent(c, buf, STALL_EXT, 0, &ex[i]));
	}
	MUST(txn_commit(c, COMMIT_SYNC));
	for (int d = 0; d < c->ndevs; d++)
		dev_set_latency(c->devs[d], DEV_READ, STALL_READ_MS * 1000000ull);
	s.c = c;
	MUST(-pthread_create(&th, NULL, scrub_main, &s));
	started = true;
	for (int i = 0; i < 60000; i++) {
		uint64_t x = __atomic_load_n(&s.p.extents, __ATOMIC_RELAXED);
		uint64_t n = __atomic_load_n(&s.p.nodes, __ATOMIC_RELAXED);
		if (x > 1 && (x + n) % STALL_BATCH == 1)
			break;
		usleep(500);
	}
	/* something to commit: an item, and two extents freed a few ahead
	 * of scrub — listed in the batch it walks (its first key), not
	 * reached yet: skipped there, not read */
	uint64_t x0 = __atomic_load_n(&s.p.extents, __ATOMIC_RELAXED);
	MUST(txn_join(c, 4, 0, &t));
	struct key k = t_key(7);
	uint8_t v[32] = { 7 };
	int r = btree_insert(t, subvol_root(c, FS_TREE_OBJECTID), &k, v, sizeof(v));
	for (uint64_t i = x0 + 3; i < x0 + 5 && i < STALL_N && !r; i++)
		r = data_ref(t, ex[i], STALL_EXT, -1);
	MUST(txn_end(t));
	MUST(r);
	t0 = glock_now_ns();
	MUST(txn_commit(c, COMMIT_SYNC));
	uint64_t waited = glock_now_ns() - t0;
	uint64_t x1 = __atomic_load_n(&s.p.extents, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	started = false;
	for (int d = 0; d < c->ndevs; d++)
		dev_set_latency(c->devs[d], DEV_READ, 0);
	printf("commit beside scrub: asked at extent %llu, waited %.0f ms, scrub began %llu extents "
	       "meanwhile (%d of 1 MiB, %d ms a read, one extent's reads %d ms)\n",
	       (unsigned long long)x0, (double)waited / 1e6,
	       (unsigned long long)(x1 - x0), STALL_N, STALL_READ_MS,
	       STALL_READ_MS * 2 * (int)(STALL_EXT / (256u << 10)));
	CHECK("commit beside scrub: scrub ran clean", s.ret == 0 && s.p.data_errors == 0 &&
	      s.p.meta_errors == 0 && s.p.extents >= STALL_N);
	CHECK("commit beside scrub: the commit waited for the piece scrub was at, not its batch",
	      x1 - x0 <= 1);
	CHECK("commit beside scrub: the two extents freed meanwhile are skipped, not read",
	      s.p.skipped_bytes == 2 * STALL_EXT);
out:
	if (started)
		pthread_join(th, NULL);
	close_pair(c, a, b);
}


/*
 * 7. A repair beside a balance that moves the chunk being repaired.  The
 * data is dup (both copies on one device), copy 0 of the extent is bad;
 * scrub reads it (the device slow for that one read, BALANCE_READ_MS),
 * then copy 1, then rewrites copy 0.  Meanwhile a balance converts the
 * data chunks to raid1 (only them: a move of another chunk first would
 * commit, and so wait for scrub's handle): it keeps stripe 0 where it is
 * (it holds the bytes already) and copies the chunk from copy 0 to one
 * new stripe on the other device, mending the bad sector from copy 1
 * (counted in c->repaired, as scrub's repair is); it switches the chunk
 * while scrub still holds the old stripes, and frees the one it retires
 * only after the switch's commit, which waits for scrub's handle
 * (scrub.h).  Scrub's repair lands on the kept stripe: every copy holds
 * the right bytes, a second scrub finds every copy good, fsck is clean.
 */
#define BALANCE_READ_MS 1500

static void repair_beside_balance(void)
{
	char a[256] = "", b[256] = "", msg[256];
	struct core *c = NULL;
	struct chunk_copy cp[CHUNK_MAX_STRIPES], cq[CHUNK_MAX_STRIPES];
	struct bg_scrub s = { 0 };
	struct scrub_opts so = { .readonly = true };
	struct scrub_progress sp;
	struct volume_balance_status st = { 0 };
	uint64_t e;
	bool started = false;
	pthread_t th;

	if (bad_copy_volume(a, b, 256ull << 20, "balance", CORE_PROFILE_DUP, 0, &c, &e, cp))
		goto out;
	/* the tree nodes scrub and the copy look up, cached now (a report
	 * only scrub): the slow read below is scrub's read of copy 0 */
	MUST(scrub_run(c, &so, &sp));
	uint64_t rep0 = __atomic_load_n(&c->repaired, __ATOMIC_RELAXED);
	dev_set_latency(cp[0].dev, DEV_READ, BALANCE_READ_MS * 1000000ull);
	s.c = c;
	MUST(-pthread_create(&th, NULL, scrub_main, &s));
	started = true;
	for (int i = 0; i < 30000 && !__atomic_load_n(&s.p.extents, __ATOMIC_RELAXED); i++)
		usleep(1000);
	usleep(20000);	/* into the slow read of copy 0; the rest are fast */
	dev_set_latency(cp[0].dev, DEV_READ, 0);
	MUST(volume_balance_start(c, (int64_t)CORE_PROFILE_RAID1, -1, msg, sizeof(msg)));
	for (int i = 0; i < 6000; i++) {
		volume_balance_status(c, &st);
		if (!st.running)
			break;
		usleep(5000);
	}
	pthread_join(th, NULL);
	started = false;
	int moved = chunk_map_lookup(c, e, EXTLEN, cq, NULL) == 2 && cq[0].dev != cq[1].dev;
	uint64_t rep = __atomic_load_n(&c->repaired, __ATOMIC_RELAXED) - rep0;
	printf("balance: scrub corrected %llu bytes, blocks mended or repaired %llu, the extent %s\n",
	       (unsigned long long)s.p.corrected_bytes, (unsigned long long)rep,
	       moved ? "is raid1 now" : "stayed dup");
	CHECK("balance: the balance and the scrub beside it both finished clean",
	      !st.running && st.result == 0 && s.ret == 0 && s.p.corrected_bytes == 4096);
	CHECK("balance: the extent's chunk moved while scrub repaired it: the copy met the bad "
	      "sector before the repair and mended it", moved && rep == 2);
	CHECK("balance: every copy of the moved extent holds its bytes", copies_hold(c, e, 1));
	MUST(scrub_run(c, &so, &sp));
	CHECK("balance: a second scrub finds every copy good",
	      sp.data_errors == 0 && sp.meta_errors == 0 && sp.read_errors == 0 &&
	      sp.uncorrectable_bytes == 0);
	MUST(mount_close(c));
	c = NULL;
	CHECK_FSCK2("balance: fsck clean", a, b);
out:
	if (started)
		pthread_join(th, NULL);
	close_pair(c, a, b);
}

/*
 * 8. A node copy whose checksum holds but whose header names another
 * generation than its extent item records (a lost write: the block's
 * bytes from before it was freed and reused).  Copy 0 of the fs tree's
 * root forged so: with copy 1 good, scrub reports it (a node error, the
 * device's generation counter) and rewrites it from copy 1; with copy 1
 * damaged too, nothing verifies: uncorrectable, and copy 1 is not
 * "repaired" with copy 0's stale bytes.  Failed on the old code: scrub
 * saw copy 0 as good (no error; copy 1 rewritten from it).
 */
static void stale_generation(bool other_bad)
{
	const char *tag = other_bad ? "generation, other copy bad" : "generation";
	char a[256] = "", b[256] = "", p0[256], p1[256], name[160];
	const char *devs[2] = { a, b };
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	struct scrub_opts so = { 0 };
	struct scrub_progress sp;
	struct core *c = NULL;
	uint64_t root, ph0, ph1, gen, gerr0 = 0, gerr1 = 0, errs[DEV_ERR_NR];
	uint8_t *before = NULL, *after = NULL;
#define N(x) (snprintf(name, sizeof(name), "%s: %s", tag, x), name)

	MUST(pair_volume(a, b, 64ull << 20, "gen", CORE_PROFILE_RAID1, 1, &c));
	MUST(put_extents(c, 4, NULL));
	root = subvol_root(c, FS_TREE_OBJECTID)->bytenr;
	MUST(chunk_map_lookup(c, root, c->nodesize, cp, NULL) == 2 ? 0 : -ENOENT);
	snprintf(p0, sizeof(p0), "%s", cp[0].dev->path);
	snprintf(p1, sizeof(p1), "%s", cp[1].dev->path);
	ph0 = cp[0].physical;
	ph1 = cp[1].physical;
	{
		struct extent_item ei;
		uint64_t l;
		MUST(extent_lookup(c, root, false, &ei, &l));
		gen = ei.generation;
	}
	MUST(mount_close(c));
	c = NULL;
	MUST(gen > 1 ? 0 : -EINVAL);
	MUST(t_forge_node_gen(p0, ph0, 4096, gen - 1));
	if (other_bad)
		MUST(t_poke(p1, ph1 + 200, 0x10));
	before = malloc(4096);
	after = malloc(4096);
	MUST(before && after ? 0 : -ENOMEM);
	{
		int fd = open(p1, O_RDONLY);
		MUST(fd >= 0 && pread(fd, before, 4096, (off_t)ph1) == 4096 ? 0 : -EIO);
		close(fd);
	}
	MUST(open2(devs, &c));
	for (int i = 0; i < c->ndevs; i++) {
		dev_errors(c->devs[i], errs, false);
		if (!strcmp(c->devs[i]->path, p0))
			gerr0 = errs[DEV_ERR_GENERATION];
	}
	MUST(scrub_run(c, &so, &sp));
	for (int i = 0; i < c->ndevs; i++) {
		dev_errors(c->devs[i], errs, false);
		if (!strcmp(c->devs[i]->path, p0))
			gerr1 = errs[DEV_ERR_GENERATION];
	}
	printf("# %s: scrub: %llu node errors, %llu corrected, %llu uncorrectable, generation "
	       "errors on copy 0's device +%llu\n", tag, (unsigned long long)sp.meta_errors,
	       (unsigned long long)sp.corrected_bytes, (unsigned long long)sp.uncorrectable_bytes,
	       (unsigned long long)(gerr1 - gerr0));
	if (!other_bad) {
		CHECK(N("the stale copy is a node error, counted as a generation error"),
		      sp.meta_errors == 1 && gerr1 == gerr0 + 1);
		CHECK(N("rewritten from the good copy"),
		      sp.corrected_bytes == 4096 && sp.uncorrectable_bytes == 0);
		MUST(scrub_run(c, &so, &sp));
		CHECK(N("a second scrub finds nothing"),
		      sp.meta_errors == 0 && sp.corrected_bytes == 0 && sp.uncorrectable_bytes == 0);
		MUST(mount_close(c));
		c = NULL;
		CHECK_FSCK2(N("fsck clean"), a, b);
	} else {
		int fd = open(p1, O_RDONLY);
		MUST(fd >= 0 && pread(fd, after, 4096, (off_t)ph1) == 4096 ? 0 : -EIO);
		close(fd);
		CHECK(N("no copy verifies: both node errors, uncorrectable"),
		      sp.meta_errors == 2 && sp.uncorrectable_bytes == 4096);
		CHECK(N("the damaged copy is not rewritten with the stale one's bytes"),
		      sp.corrected_bytes == 0 && !memcmp(before, after, 4096));
	}
out:
	close_pair(c, a, b);
	free(before);
	free(after);
#undef N
}

#define RATE_EXT (8u << 20)
#define RATE_BPS (4ull << 20)

/*
 * 9. The rate limit within one extent: a volume of one 8 MiB raid1
 * extent (16 MiB to read, both copies) scrubbed at 4 MiB/s.  Read 300 ms
 * in, the bytes scrub has checked stay within what the rate allows
 * since it started, plus two pieces per copy (it sleeps after each node and
 * piece).  A slow machine only checks fewer.  Failed on the old code,
 * which slept only after a batch: the whole extent went at full speed.
 */
static void rate_per_piece(void)
{
	char a[256] = "", b[256] = "";
	struct bg_scrub s = { 0 };
	struct scrub_progress mid;
	struct core *c = NULL;
	uint8_t *buf = malloc(RATE_EXT);
	uint64_t l, t0;
	bool started = false;
	pthread_t th;

	MUST(buf ? 0 : -ENOMEM);
	MUST(pair_volume(a, b, 64ull << 20, "rate", CORE_PROFILE_RAID1, 1, &c));
	for (unsigned i = 0; i < RATE_EXT; i++)
		buf[i] = (uint8_t)(i * 7 + (i >> 12));
	MUST(t_write_extent(c, buf, RATE_EXT, 0, &l));
	MUST(txn_commit(c, COMMIT_SYNC));
	s.c = c;
	s.o.rate_bytes_per_s = RATE_BPS;
	t0 = glock_now_ns();
	MUST(-pthread_create(&th, NULL, scrub_main, &s));
	started = true;
	usleep(300000);
	scrub_progress_read(&s.p, &mid);
	double el = (double)(glock_now_ns() - t0) / 1e9;
	scrub_cancel(&s.o);
	pthread_join(th, NULL);
	started = false;
	uint64_t allow = (uint64_t)(el * (double)RATE_BPS) + 4 * (256u << 10) + (64u << 10);
	printf("rate per piece: %llu bytes checked %.3f s in at %llu B/s (allowed %llu)\n",
	       (unsigned long long)mid.checked_bytes, el, (unsigned long long)RATE_BPS,
	       (unsigned long long)allow);
	CHECK("rate per piece: within one extent, bytes checked keep to the rate",
	      mid.checked_bytes > 0 && mid.checked_bytes <= allow && mid.running == 1);
	CHECK("rate per piece: cancelled", s.ret == -ECANCELED);
out:
	if (started)
		pthread_join(th, NULL);
	close_pair(c, a, b);
	free(buf);
}

/* How many committed nodes lie below address at (the nodes scrub's walk,
 * in address order, meets before it), and at's generation. */
static int nodes_below(struct core *c, uint64_t at, uint64_t *below, uint64_t *gen)
{
	struct key k = { 0, 0, 0 };
	struct path p;
	int ret;

	*below = 0;
	btree_path_init(&p);
	for (ret = btree_search_ge(core_tree(c, CT_EXTENT), &k, &p); !ret; ret = btree_next(&p)) {
		struct extent_item ei;
		uint32_t sz = 0;
		const void *v;

		btree_item_key(&p, p.slots[0], &k);
		if (k.type != KEY_METADATA_ITEM)
			continue;
		if (k.objectid >= at) {
			v = btree_item_ptr(&p, p.slots[0], &sz);
			if (k.objectid != at || sz < sizeof(ei))
				ret = -ENOENT;
			else
				memcpy(&ei, v, sizeof(ei)), *gen = ei.generation;
			break;
		}
		(*below)++;
	}
	btree_path_release(&p);
	return ret < 0 ? ret : ret > 0 ? -ENOENT : 0;
}

/*
 * 10. A node freed and reused while scrub repairs it (case 5 for a
 * node).  Copy 1 of the fs tree's root (a leaf) is bad and its device
 * reads slowly, so scrub sits between reading the good copy and
 * rewriting the bad one.  Meanwhile the test commits a change to the
 * fs tree (the node is copied and freed), then fills new nodes until
 * one takes the freed address.  Scrub must not write the old node over
 * the new one: the free's commit waits for scrub's handle.  After, every
 * copy of the node now there verifies (a second scrub finds nothing),
 * fsck clean.  Fails when scrub holds no handle (hold() returning none):
 * the old bytes land on the new node's copy 1.
 */
#define NREUSE_READ_MS 150	/* each read of the bad copy's device */

static void node_reuse(void)
{
	char a[256] = "", b[256] = "", bad[256];
	const char *devs[2] = { a, b };
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	struct bg_scrub s = { 0 };
	struct scrub_opts so = { .readonly = true };
	struct scrub_progress sp;
	struct core *c = NULL;
	struct dev *slow = NULL;
	uint64_t f, gen = 0, below, ext, ph, t0, wait_ns = 0, gen2 = 0, n = 0;
	bool started = false, reused = false;
	pthread_t th;

	MUST(pair_volume(a, b, 64ull << 20, "nreuse", CORE_PROFILE_RAID1, 1, &c));
	MUST(put_extents(c, 8, NULL));
	f = subvol_root(c, FS_TREE_OBJECTID)->bytenr;
	MUST(nodes_below(c, f, &below, &gen));
	MUST(chunk_map_lookup(c, f, c->nodesize, cp, NULL) == 2 ? 0 : -ENOENT);
	snprintf(bad, sizeof(bad), "%s", cp[1].dev->path);
	ph = cp[1].physical;
	MUST(mount_close(c));
	c = NULL;
	MUST(t_poke(bad, ph + 300, 0x10));
	MUST(open2(devs, &c));
	for (int i = 0; i < c->ndevs; i++)
		if (!strcmp(c->devs[i]->path, bad))
			slow = c->devs[i];
	MUST(slow ? 0 : -ENOENT);
	printf("node reuse: the fs root %llu (generation %llu), %llu nodes before it in the walk\n",
	       (unsigned long long)f, (unsigned long long)gen, (unsigned long long)below);
	dev_set_latency(slow, DEV_READ, NREUSE_READ_MS * 1000000ull);
	s.c = c;
	MUST(-pthread_create(&th, NULL, scrub_main, &s));
	started = true;
	for (int i = 0; i < 30000 && __atomic_load_n(&s.p.nodes, __ATOMIC_RELAXED) <= below; i++)
		usleep(1000);
	/* scrub is at node f: a change to the fs tree copies it */
	t0 = glock_now_ns();
	MUST(put_extent(c, 100, &ext));
	MUST(txn_commit(c, COMMIT_SYNC));
	wait_ns = glock_now_ns() - t0;
	/* new nodes until one takes f's address (the free is durable now) */
	for (unsigned i = 0; i < 40 && !reused; i++) {
		struct extent_item ei;
		uint64_t l;
		MUST(t_insert_items(c, 1000 + n, 60, 100));
		n += 60;
		MUST(txn_commit(c, COMMIT_SYNC));
		reused = extent_lookup(c, f, false, &ei, &l) == 0 && ei.generation > gen;
		gen2 = reused ? ei.generation : 0;
	}
	pthread_join(th, NULL);
	started = false;
	dev_set_latency(slow, DEV_READ, 0);
	printf("node reuse: the free's commit took %.0f ms beside the repair; scrub corrected %llu "
	       "bytes; address %llu taken again by generation %llu\n", (double)wait_ns / 1e6,
	       (unsigned long long)s.p.corrected_bytes, (unsigned long long)f,
	       (unsigned long long)gen2);
	CHECK("node reuse: scrub ran and repaired the bad copy it read",
	      s.ret == 0 && s.p.corrected_bytes == 4096);
	CHECK("node reuse: a new node took the freed address", reused);
	MUST(scrub_run(c, &so, &sp));
	CHECK("node reuse: a second scrub finds every copy good",
	      sp.meta_errors == 0 && sp.data_errors == 0 && sp.read_errors == 0 && sp.nodes > 0);
	MUST(mount_close(c));
	c = NULL;
	CHECK_FSCK2("node reuse: fsck clean", a, b);
out:
	if (started)
		pthread_join(th, NULL);
	close_pair(c, a, b);
}

static void stale_generations(void)
{
	stale_generation(false);
	stale_generation(true);
}

/* The cases after main's, in the order they run; SCRUB_CASE=NAME runs
 * one alone. */
static const struct { const char *name; void (*run)(void); } cases[] = {
	{ "race", race_reuse },
	{ "commit", commit_beside },
	{ "balance", repair_beside_balance },
	{ "generation", stale_generations },
	{ "rate", rate_per_piece },
	{ "nreuse", node_reuse },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

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
	if (getenv("SCRUB_CASE")) {
		for (size_t i = 0; i < NCASES; i++)
			if (!strcmp(getenv("SCRUB_CASE"), cases[i].name))
				cases[i].run();
		return fails ? 1 : 0;
	}
	MUST(pair_volume(a, b, 64ull << 20, "scrub", CORE_PROFILE_RAID1, 1, &c));
	MUST(put_extents(c, 16, ext));

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
	close_pair(c, a, b);
	for (size_t i = 0; i < NCASES; i++)
		cases[i].run();
	return fails ? 1 : 0;
}
