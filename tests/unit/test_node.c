// SPDX-License-Identifier: MIT
/*
 * test_node.c — fs/btree/node.c: the node layout, little-endian accessors,
 * checksums and validation.  Each kind of damage must be caught and named
 * (checksum, bytenr, fsid, owner, level, generation, key order, item
 * bounds/overlap, nritems, child pointers), at node sizes 4096 and 16384.
 * SEED=n replays the random item sizes.
 */
#include "fs/btree/node.h"
#include "fs/base/crc32c.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static const uint8_t fsid[16] = "0123456789abcdef";

/* A valid leaf with n items of random sizes, packed as node.h says. */
static void make_leaf(uint8_t *b, uint32_t ns, int n, unsigned *rs)
{
	uint32_t end = ns;

	node_init(b, ns, 1 << 20, 5, 0, 7);
	for (int i = 0; i < n; i++) {
		struct key k = { 100 + (uint64_t)i, 1, 0 };
		uint32_t size = (uint32_t)(rand_r(rs) % 40);

		end -= size;
		nb_set_item_key(b, i, &k);
		nb_set_item_off(b, i, end);
		nb_set_item_size(b, i, size);
		memset(b + end, i, size);
	}
	nb_set_nritems(b, (uint32_t)n);
	node_finalize(b, ns, fsid);
}

static void make_interior(uint8_t *b, uint32_t ns, int n)
{
	node_init(b, ns, 2 << 20, 5, 1, 9);
	for (int i = 0; i < n; i++) {
		struct key k = { 100 + (uint64_t)i * 10, 1, 0 };

		nb_set_ptr_key(b, i, &k);
		nb_set_ptr(b, i, (3 + (uint64_t)i) << 20, 8);
	}
	nb_set_nritems(b, (uint32_t)n);
	node_finalize(b, ns, fsid);
}

/* verify after a change (checksum recomputed unless keep_csum) */
static int verify_after(uint8_t *b, uint32_t ns, uint64_t bytenr, int level, int keep_csum,
			char *why, size_t n)
{
	struct node_expect e = { .nodesize = ns, .bytenr = bytenr, .fsid = fsid, .owner = 5,
				 .level = level, .generation = 0, .max_generation = 0 };

	if (!keep_csum)
		node_finalize(b, ns, fsid);
	return node_verify(b, &e, why, n);
}

static void run(uint32_t ns, unsigned seed)
{
	uint8_t *b = malloc(ns), *orig = malloc(ns);
	char why[256], name[96];
	unsigned rs = seed;
	struct node_expect e = { .nodesize = ns, .bytenr = 1 << 20, .fsid = fsid, .owner = 5,
				 .level = 0, .generation = 7 };
	struct key k;
	int exact, n = 30;

#define T(label) (snprintf(name, sizeof(name), "%u-%s", ns, label), name)
	make_leaf(b, ns, n, &rs);
	memcpy(orig, b, ns);
	CHECK(T("valid-leaf"), node_verify(b, &e, why, sizeof(why)) == 0);
	CHECK(T("le-layout"), b[NH_NRITEMS] == n && b[NH_NRITEMS + 1] == 0 && b[NH_LEVEL] == 0 &&
	      get_le64(b + NH_BYTENR) == (1u << 20));
	CHECK(T("leaf-free"), node_leaf_free(b, ns) + node_leaf_used(b, ns) == node_leaf_space(ns));

	/* search */
	k = (struct key){ 110, 1, 0 };
	CHECK(T("search-exact"), node_search(b, ns, &k, &exact) == 10 && exact);
	k.offset = 1;
	CHECK(T("search-between"), node_search(b, ns, &k, &exact) == 11 && !exact);
	k = (struct key){ 1, 0, 0 };
	CHECK(T("search-before"), node_search(b, ns, &k, &exact) == 0 && !exact);
	k = (struct key){ 1000, 0, 0 };
	CHECK(T("search-after"), node_search(b, ns, &k, &exact) == n && !exact);

	/* checksum: one flipped bit anywhere past the csum field */
	b[ns - 1] ^= 1;
	CHECK(T("csum-detected"), node_verify(b, &e, why, sizeof(why)) == -EIO &&
	      strstr(why, "checksum"));
	memcpy(b, orig, ns);
	b[40] ^= 1;	/* inside fsid */
	CHECK(T("csum-covers-header"), node_verify(b, &e, why, sizeof(why)) == -EIO &&
	      strstr(why, "checksum"));
	memcpy(b, orig, ns);

	e.bytenr = 2 << 20;
	CHECK(T("bytenr-mismatch"), node_verify(b, &e, why, sizeof(why)) == -EIO &&
	      strstr(why, "bytenr"));
	e.bytenr = 1 << 20;
	e.owner = 7;
	CHECK(T("owner-mismatch"), node_verify(b, &e, why, sizeof(why)) == -EIO && strstr(why, "owner"));
	e.owner = 5;
	e.level = 1;
	CHECK(T("level-mismatch"), node_verify(b, &e, why, sizeof(why)) == -EIO && strstr(why, "level"));
	e.level = 0;
	e.generation = 8;
	CHECK(T("generation-mismatch"), node_verify(b, &e, why, sizeof(why)) == -EIO &&
	      strstr(why, "generation"));
	e.generation = 7;
	{
		uint8_t other[16] = "fedcba9876543210";
		e.fsid = other;
		CHECK(T("fsid-mismatch"), node_verify(b, &e, why, sizeof(why)) == -EIO &&
		      strstr(why, "fsid"));
		e.fsid = fsid;
	}

	/* structure, with a valid checksum */
	k = (struct key){ 50, 1, 0 };
	nb_set_item_key(b, 5, &k);
	CHECK(T("key-order"), verify_after(b, ns, 1 << 20, 0, 0, why, sizeof(why)) == -EIO &&
	      strstr(why, "item 5") && strstr(why, "not above"));
	memcpy(b, orig, ns);
	nb_set_item_key(b, 5, &(struct key){ 104, 1, 0 });	/* equal to item 4 */
	CHECK(T("key-duplicate"), verify_after(b, ns, 1 << 20, 0, 0, why, sizeof(why)) == -EIO);
	memcpy(b, orig, ns);
	nb_set_item_size(b, 3, nb_item_size(b, 3) + 4);
	CHECK(T("item-overlap"), verify_after(b, ns, 1 << 20, 0, 0, why, sizeof(why)) == -EIO &&
	      strstr(why, "item 3"));
	memcpy(b, orig, ns);
	nb_set_item_off(b, n - 1, NODE_HDR_SIZE);
	CHECK(T("item-into-headers"), verify_after(b, ns, 1 << 20, 0, 0, why, sizeof(why)) == -EIO);
	memcpy(b, orig, ns);
	nb_set_item_off(b, 0, ns - 2);
	nb_set_item_size(b, 0, 4);	/* ends past the node */
	CHECK(T("item-past-end"), verify_after(b, ns, 1 << 20, 0, 0, why, sizeof(why)) == -EIO);
	memcpy(b, orig, ns);
	nb_set_nritems(b, node_item_cap(ns) + 1);
	CHECK(T("nritems-over-capacity"), verify_after(b, ns, 1 << 20, 0, 0, why, sizeof(why)) == -EIO &&
	      strstr(why, "capacity"));
	/* racy probe safety: node_search clamps a garbage nritems */
	(void)node_search(b, ns, &k, NULL);
	memcpy(b, orig, ns);

	/* interior nodes */
	make_interior(b, ns, 20);
	memcpy(orig, b, ns);
	CHECK(T("valid-interior"), verify_after(b, ns, 2 << 20, 1, 1, why, sizeof(why)) == 0);
	k = (struct key){ 5, 0, 0 };
	CHECK(T("interior-search-below-all"), node_search(b, ns, &k, NULL) == 0);
	k = (struct key){ 125, 1, 0 };
	CHECK(T("interior-search-mid"), node_search(b, ns, &k, NULL) == 2);
	k = (struct key){ 130, 1, 0 };
	CHECK(T("interior-search-equal"), node_search(b, ns, &k, &exact) == 3 && exact);
	k = (struct key){ 100000, 1, 0 };
	CHECK(T("interior-search-above-all"), node_search(b, ns, &k, NULL) == 19);
	nb_set_ptr(b, 4, 0, 8);
	CHECK(T("child-address-zero"), verify_after(b, ns, 2 << 20, 1, 0, why, sizeof(why)) == -EIO &&
	      strstr(why, "pointer 4"));
	memcpy(b, orig, ns);
	nb_set_ptr(b, 4, 7 << 20, 10);	/* child newer than the node */
	CHECK(T("child-generation"), verify_after(b, ns, 2 << 20, 1, 0, why, sizeof(why)) == -EIO);
	memcpy(b, orig, ns);
	nb_set_ptr_key(b, 7, &(struct key){ 1, 1, 1 });
	CHECK(T("separator-order"), verify_after(b, ns, 2 << 20, 1, 0, why, sizeof(why)) == -EIO);
	memcpy(b, orig, ns);
	nb_set_ptr_key(b, 0, &(struct key){ 999999, 1, 1 });	/* key 0 is not compared */
	CHECK(T("key0-free"), verify_after(b, ns, 2 << 20, 1, 0, why, sizeof(why)) == 0);
	nb_set_nritems(b, 0);
	CHECK(T("interior-empty"), verify_after(b, ns, 2 << 20, 1, 0, why, sizeof(why)) == -EIO);
	memcpy(b, orig, ns);
	b[NH_LEVEL] = 9;
	CHECK(T("level-range"), verify_after(b, ns, 2 << 20, -1, 0, why, sizeof(why)) == -EIO);

	/* checksum value: crc32c of [32, nodesize) stored little endian */
	make_leaf(b, ns, 3, &rs);
	CHECK(T("csum-value"), get_le32(b) == crc32c(0, b + 32, ns - 32));
	free(b);
	free(orig);
#undef T
}

int main(void)
{
	const char *s = getenv("SEED");
	unsigned seed = s ? (unsigned)strtoul(s, NULL, 0) : (unsigned)time(NULL) ^ (unsigned)getpid();

	printf("seed: %u (SEED=%u to replay)\n", seed, seed);
	run(4096, seed);
	run(16384, seed);
	return fails ? 1 : 0;
}
