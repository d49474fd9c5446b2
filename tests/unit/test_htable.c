// SPDX-License-Identifier: MIT
/*
 * test_htable.c — the engine's one hash table (fs/base/htable.h) against a
 * plain array as the oracle: random inserts, finds and removes through
 * several doublings, then pop empties it; the set of bare keys likewise.
 */
#include "fs/base/htable.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define N 20000

struct ent {
	struct hnode h;
	int in;			/* the oracle: hashed or not */
};

int main(void)
{
	const char *e = getenv("SEED");
	unsigned seed = e ? (unsigned)strtoul(e, NULL, 0) : (unsigned)(time(NULL) ^ getpid());
	static struct ent ents[N];
	struct htable t;
	size_t in = 0, bad = 0, seen = 0, popped = 0;
	struct hnode *n;

	printf("seed: %u (SEED=%u to replay)\n", seed, seed);
	srand(seed);
	CHECK("init rounds up to a power of two", htable_init(&t, 3) == 0 && t.nbuckets == 4);
	for (int i = 0; i < N; i++)
		ents[i].h.key = (uint64_t)i * 4096 + (i & 1);	/* node-address-like keys */
	for (int step = 0; step < 4 * N; step++) {
		struct ent *x = &ents[rand() % N];

		if (!x->in) {
			htable_insert(&t, &x->h);
			x->in = 1;
			in++;
		} else if (rand() % 3 == 0) {
			bad += !htable_remove(&t, &x->h);
			x->in = 0;
			in--;
		}
	}
	for (int i = 0; i < N; i++) {
		n = htable_find(&t, ents[i].h.key);
		bad += ents[i].in ? n != &ents[i].h : n != NULL;
	}
	CHECK("find agrees with the oracle after random inserts and removes", bad == 0);
	CHECK("count agrees", t.count == in);
	CHECK("doubled at two entries per bucket", t.count <= 2 * t.nbuckets && t.nbuckets >= in / 2);
	{
		struct ent y = { .h.key = 12345 };
		CHECK("remove of an entry not hashed is false", !htable_remove(&t, &y.h));
	}
	htable_for_each(&t, i, m)
		seen += htable_entry(m, struct ent, h)->in;
	CHECK("for_each visits every entry once", seen == in);
	while ((n = htable_pop(&t)))
		popped++;
	CHECK("pop empties the table", popped == in && t.count == 0);
	{
		/* duplicate keys: every entry of a key through find and find_next,
		 * each once, none of another key, through doublings */
		enum { K = 8, PER = 5 };
		static struct ent dup[K * PER];
		int seen_k[K * PER] = { 0 }, other = 0, missed = 0;

		htable_destroy(&t);
		CHECK("a table of one bucket", htable_init(&t, 1) == 0 && t.nbuckets == 1);
		for (int i = 0; i < K * PER; i++) {
			dup[i].h.key = (uint64_t)(i % K) * 16384;
			htable_insert(&t, &dup[i].h);
		}
		for (int k = 0; k < K; k++)
			for (n = htable_find(&t, (uint64_t)k * 16384); n; n = htable_find_next(n)) {
				struct ent *x = htable_entry(n, struct ent, h);
				if (x < dup || x >= dup + K * PER || (int)(x - dup) % K != k)
					other++;
				else
					seen_k[x - dup]++;
			}
		for (int i = 0; i < K * PER; i++)
			missed += seen_k[i] != 1;
		CHECK("find and find_next give every entry of a key once, and no other", !other && !missed);
		for (int i = 0; i < K * PER; i += 2)
			htable_remove(&t, &dup[i].h);
		missed = 0;
		for (int k = 0; k < K; k++) {
			int cnt = 0;
			for (n = htable_find(&t, (uint64_t)k * 16384); n; n = htable_find_next(n))
				cnt++;
			missed += cnt != (k % 2 ? PER : 0);	/* even i removed: all of even k */
		}
		CHECK("find_next after removes", missed == 0);
		while ((n = htable_pop(&t)))
			;
	}
	{
		/* pop after inserts that land below where the last pop found an
		 * entry: still every entry, each once */
		enum { M = 64 };
		static struct ent few[M];
		int got[M] = { 0 }, wrong = 0;

		htable_destroy(&t);
		CHECK("a table of 1024 buckets", htable_init(&t, 1024) == 0);
		for (int i = 0; i < M; i++)
			few[i].h.key = (uint64_t)i * 4096;
		for (int i = 0; i < M / 2; i++)
			htable_insert(&t, &few[i].h);
		for (int i = 0; i < M / 4; i++)
			if ((n = htable_pop(&t)))
				got[htable_entry(n, struct ent, h) - few]++;
		for (int i = M / 2; i < M; i++)
			htable_insert(&t, &few[i].h);
		while ((n = htable_pop(&t)))
			got[htable_entry(n, struct ent, h) - few]++;
		for (int i = 0; i < M; i++)
			wrong += got[i] != 1;
		CHECK("pops between inserts give every entry once", wrong == 0 && t.count == 0);
	}
	{
		/* emptying by pop is O(entries + buckets): 4096 entries in 2^21
		 * buckets take ~2M bucket reads, not one scan from bucket 0 per
		 * pop (~4096 x 1M reads: seconds) */
		enum { P = 4096 };
		static struct ent many[P];
		clock_t t0;
		size_t got = 0;

		htable_destroy(&t);
		CHECK("a table of 2^21 buckets", htable_init(&t, (size_t)1 << 21) == 0);
		for (int i = 0; i < P; i++) {
			many[i].h.key = (uint64_t)i * 16384;
			htable_insert(&t, &many[i].h);
		}
		t0 = clock();
		while ((n = htable_pop(&t)))
			got++;
		double s = (double)(clock() - t0) / CLOCKS_PER_SEC;
		printf("pop of %d entries in 2^21 buckets: %.3f s CPU\n", P, s);
		CHECK("pop empties a sparse table in one pass over the buckets", got == P && s < 0.5);
	}
	{
		/* the set of bare keys against a byte array as the oracle */
		enum { S = 5000 };
		static unsigned char in_set[S];
		struct htable_set hs = { 0 };
		size_t nin = 0, wrong = 0, spare = 0;

		CHECK("a zeroed set is empty", !htable_set_has(&hs, 7) && !htable_set_take(&hs, 7));
		for (int step = 0; step < 4 * S; step++) {
			int k = rand() % S;
			uint64_t key = (uint64_t)k * 16384 + 65536;

			switch (rand() % 3) {
			case 0:
			case 1:
				wrong += htable_set_add(&hs, key) != 0;
				nin += !in_set[k];
				in_set[k] = 1;
				break;
			default:
				wrong += htable_set_take(&hs, key) != in_set[k];
				nin -= in_set[k];
				in_set[k] = 0;
			}
		}
		for (int k = 0; k < S; k++)
			wrong += htable_set_has(&hs, (uint64_t)k * 16384 + 65536) != in_set[k];
		CHECK("set add, take and has agree with the oracle (adding twice keeps one)",
		      wrong == 0 && hs.t.count == nin);
		htable_set_clear(&hs);
		for (struct hnode *p = hs.spare; p; p = p->next)
			spare++;
		CHECK("clear empties the set and keeps its hnodes", hs.t.count == 0 &&
		      !htable_set_has(&hs, 65536) && spare >= nin);
		for (size_t k = 0; k < spare; k++)
			htable_set_add(&hs, k + 1);
		CHECK("adds after a clear take the kept hnodes", hs.spare == NULL && hs.t.count == spare);
		htable_set_destroy(&hs);
		htable_set_destroy(&hs);
		CHECK("set destroy twice is safe", hs.t.b == NULL && hs.spare == NULL &&
		      hs.chunks == NULL);
	}
	htable_destroy(&t);
	htable_destroy(&t);
	CHECK("destroy twice is safe", t.b == NULL);
	return fails ? 1 : 0;
}
