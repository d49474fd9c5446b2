// SPDX-License-Identifier: MIT
/*
 * test_crash.c — kill -9 in the middle of concurrent work, many times.
 *
 * A child process opens the volume and runs threads that insert and
 * delete items and write data extents, committing after each batch and
 * publishing (in shared memory) the last batch whose commit returned.
 * The parent kills it at a random moment, reopens, and checks: the volume
 * opens, every published batch is complete, published data reads back,
 * and fsck.glassfs finds nothing wrong.  ROUNDS=n (default 12), SEED=n.
 */
#include "core_test.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

#define THREADS 3
#define PER_BATCH 8
#define MAX_BATCH 100000

struct shared {
	volatile int64_t committed[THREADS];	/* last batch whose commit returned */
	volatile uint64_t data[THREADS][64];	/* logical of batch b's extent (b < 64) */
};

struct child_arg { struct core *c; struct shared *sh; int tid, round; };

/* Keys are unique per round and thread: rounds pile up on one volume. */
static uint64_t item_id(int round, int tid, int64_t batch, int i)
{
	return ((uint64_t)(round * THREADS + tid) << 40) | ((uint64_t)batch << 8) | (uint64_t)i;
}

static void *child_thread(void *arg)
{
	struct child_arg *a = arg;
	uint8_t val[48], blk[CORE_SECTORSIZE];

	for (int64_t b = 0; b < MAX_BATCH; b++) {
		struct txn *t;
		uint64_t logical = 0;
		if (txn_join(a->c, PER_BATCH + 4, 0, &t))
			_exit(10);
		for (int i = 0; i < PER_BATCH; i++) {
			struct key k = t_key(item_id(a->round, a->tid, b, i));
			memset(val, (int)(b + i), sizeof(val));
			if (btree_insert(t, subvol_root(a->c, FS_TREE_OBJECTID), &k, val, sizeof(val)))
				_exit(11);
		}
		if (b >= 2) {	/* the last item of batch b-2 goes away */
			struct key k = t_key(item_id(a->round, a->tid, b - 2, PER_BATCH - 1));
			if (btree_delete(t, subvol_root(a->c, FS_TREE_OBJECTID), &k))
				_exit(12);
		}
		if (b < 64) {
			memset(blk, (int)(a->tid * 64 + b), sizeof(blk));
			if (data_alloc(t, sizeof(blk), &logical) ||
			    data_write(t, logical, blk, sizeof(blk)))
				_exit(13);
		}
		if (txn_end(t))
			_exit(14);
		if (txn_commit(a->c, COMMIT_FSYNC))
			_exit(15);
		if (b < 64)
			a->sh->data[a->tid][b] = logical;
		a->sh->committed[a->tid] = b;
	}
	return NULL;
}

static void child(const char *img, struct shared *sh, int round)
{
	struct core *c;
	pthread_t th[THREADS];
	struct child_arg a[THREADS];

	if (t_open(img, false, &c))
		_exit(2);
	for (int i = 0; i < THREADS; i++) {
		a[i] = (struct child_arg){ c, sh, i, round };
		pthread_create(&th[i], NULL, child_thread, &a[i]);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	_exit(0);
}

int main(void)
{
	char img[256], name[96];
	const char *r = getenv("ROUNDS");
	int rounds = r ? atoi(r) : 12;
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct core *c = NULL;

	t_seed_init();
	img[0] = 0;
	MUST(sh != MAP_FAILED ? 0 : -ENOMEM);
	MUST(t_image(img, sizeof(img), 128ull << 20));
	MUST(t_format(img, (t_rand() & 1) ? 4096 : 16384));
	for (int round = 0; round < rounds; round++) {
		memset((void *)sh, 0xff, sizeof(*sh));	/* committed = -1 */
		for (int i = 0; i < THREADS; i++)
			for (int b = 0; b < 64; b++)
				sh->data[i][b] = 0;
		/* each round continues on the previous round's volume */
		pid_t pid = fork();
		if (pid == 0) {
			child(img, sh, round);
			_exit(1);
		}
		usleep(20000 + t_rand() % 200000);
		kill(pid, SIGKILL);
		int st;
		waitpid(pid, &st, 0);
		snprintf(name, sizeof(name), "round %d: child was killed, not failed", round);
		CHECK(name, WIFSIGNALED(st));

		snprintf(name, sizeof(name), "round %d: volume opens", round);
		int ret = t_open(img, true, &c);
		CHECK(name, ret == 0);
		if (ret)
			break;
		int missing = 0, bad_data = 0;
		int64_t total = 0;
		for (int tid = 0; tid < THREADS; tid++) {
			for (int64_t b = 0; b <= sh->committed[tid]; b++) {
				for (int i = 0; i < PER_BATCH - 1; i++) {
					struct key k = t_key(item_id(round, tid, b, i));
					uint8_t v[48];
					if (btree_lookup(subvol_root(c, FS_TREE_OBJECTID), &k, v, sizeof(v)) !=
						    (int)sizeof(v) || v[0] != (uint8_t)(b + i))
						missing++;
				}
				if (b < 64 && sh->data[tid][b]) {
					uint8_t blk[CORE_SECTORSIZE];
					if (data_read(c, sh->data[tid][b], blk, sizeof(blk)) ||
					    blk[100] != (uint8_t)(tid * 64 + b))
						bad_data++;
				}
				total++;
			}
		}
		printf("round %d: %lld batches committed before the kill\n", round, (long long)total);
		snprintf(name, sizeof(name), "round %d: every committed batch is there", round);
		CHECK(name, missing == 0);
		snprintf(name, sizeof(name), "round %d: committed data reads back", round);
		CHECK(name, bad_data == 0);
		mount_close(c);
		c = NULL;
		snprintf(name, sizeof(name), "round %d: fsck clean", round);
		CHECK_FSCK(name, img);
	}
out:
	if (c)
		mount_close(c);
	if (img[0])
		unlink(img);
	return fails ? 1 : 0;
}
