// SPDX-License-Identifier: MIT
/*
 * node.c — node buffers: initialisation, checksums, validation, search.
 * The layout is documented in node.h; nothing here knows about caching or
 * locking.
 */
#include "fs/btree/node.h"
#include "fs/base/crc32c.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

uint32_t node_leaf_data_start(const uint8_t *b, uint32_t nodesize)
{
	uint32_t n = nb_nritems(b);

	return n ? nb_item_off(b, (int)n - 1) : nodesize;
}

/* A valid leaf's data is packed against its end (node_check: each item's
 * data ends where the one before it begins), so the data bytes are the
 * distance from the lowest item's data to the end: no walk over the items,
 * which every deletion's underfull check paid (issue 22: ~6% of a 4 KiB
 * overwrite's CPU with its commit). */
uint32_t node_leaf_used(const uint8_t *b, uint32_t nodesize)
{
	return nb_nritems(b) * NODE_ITEM_SIZE + (nodesize - node_leaf_data_start(b, nodesize));
}

uint32_t node_leaf_free(const uint8_t *b, uint32_t nodesize)
{
	uint32_t n = nb_nritems(b);
	uint32_t hdr_end = NODE_HDR_SIZE + n * NODE_ITEM_SIZE;
	uint32_t start = node_leaf_data_start(b, nodesize);

	return start > hdr_end ? start - hdr_end : 0;
}

void node_init(uint8_t *b, uint32_t nodesize, uint64_t bytenr, uint64_t owner,
	       int level, uint64_t generation)
{
	memset(b, 0, nodesize);
	nb_set_bytenr(b, bytenr);
	nb_set_owner(b, owner);
	nb_set_level(b, level);
	nb_set_generation(b, generation);
}

uint32_t node_csum(const uint8_t *b, uint32_t nodesize)
{
	return crc32c(0, b + NODE_CSUM_SIZE, nodesize - NODE_CSUM_SIZE);
}

void node_finalize(uint8_t *b, uint32_t nodesize, const uint8_t *fsid)
{
	if (fsid)
		memcpy(b + NH_FSID, fsid, 16);
	memset(b + NH_CSUM, 0, NODE_CSUM_SIZE);
	put_le32(b + NH_CSUM, node_csum(b, nodesize));
}

#define WHY(...) do { if (why) snprintf(why, whylen, __VA_ARGS__); } while (0)

static void key_str(const struct key *k, char *s, size_t n)
{
	snprintf(s, n, "(%" PRIu64 " %u %" PRIu64 ")", k->objectid, k->type, k->offset);
}

int node_check(const uint8_t *b, uint32_t nodesize, char *why, size_t whylen)
{
	uint32_t n = nb_nritems(b);
	int level = nb_level(b);
	char s1[64], s2[64];
	struct key prev, k;

	if (level >= 8) {
		WHY("level %d out of range", level);
		return -EUCLEAN;
	}
	if (level == 0) {
		uint32_t end = nodesize;	/* item i's data must end here */

		if (n > node_item_cap(nodesize)) {
			WHY("leaf nritems %u exceeds capacity %u", n, node_item_cap(nodesize));
			return -EUCLEAN;
		}
		for (uint32_t i = 0; i < n; i++) {
			uint32_t off = nb_item_off(b, (int)i), size = nb_item_size(b, (int)i);

			nb_item_key(b, (int)i, &k);
			if (i > 0 && key_cmp(&prev, &k) >= 0) {
				key_str(&prev, s1, sizeof(s1));
				key_str(&k, s2, sizeof(s2));
				WHY("item %u: key %s not above item %u's key %s", i, s2, i - 1, s1);
				return -EUCLEAN;
			}
			if ((uint64_t)off + size != end) {
				WHY("item %u: data [%u, %" PRIu64 ") does not end at %u where "
				    "item %d's begins (overlap or gap)", i, off, (uint64_t)off + size,
				    end, (int)i - 1);
				return -EUCLEAN;
			}
			if (off < NODE_HDR_SIZE + n * NODE_ITEM_SIZE || off > nodesize) {
				WHY("item %u: data offset %u overlaps the item headers (end %u)",
				    i, off, NODE_HDR_SIZE + n * NODE_ITEM_SIZE);
				return -EUCLEAN;
			}
			end = off;
			prev = k;
		}
		return 0;
	}
	if (n == 0 || n > node_ptr_cap(nodesize)) {
		WHY("interior node (level %d) nritems %u outside [1, %u]", level, n,
		    node_ptr_cap(nodesize));
		return -EUCLEAN;
	}
	for (uint32_t i = 0; i < n; i++) {
		nb_ptr_key(b, (int)i, &k);
		if (i > 1 && key_cmp(&prev, &k) >= 0) {
			key_str(&prev, s1, sizeof(s1));
			key_str(&k, s2, sizeof(s2));
			WHY("pointer %u: key %s not above pointer %u's key %s", i, s2, i - 1, s1);
			return -EUCLEAN;
		}
		if (nb_ptr_blockptr(b, (int)i) == 0) {
			WHY("pointer %u: child address 0", i);
			return -EUCLEAN;
		}
		if (nb_ptr_gen(b, (int)i) > nb_generation(b)) {
			WHY("pointer %u: child generation %" PRIu64 " above the node's %" PRIu64,
			    i, nb_ptr_gen(b, (int)i), nb_generation(b));
			return -EUCLEAN;
		}
		prev = k;
	}
	return 0;
}

int node_verify_quiet(const void *b, uint64_t bytenr, void *e)
{
	char why[160];

	(void)bytenr;
	return node_verify(b, e, why, sizeof(why));
}

int node_verify(const uint8_t *b, const struct node_expect *e, char *why, size_t whylen)
{
	uint32_t found = get_le32(b + NH_CSUM), want = node_csum(b, e->nodesize);
	char sub[200];

	if (found != want) {
		WHY("checksum mismatch: stored %08x, computed %08x", found, want);
		return -EIO;
	}
	if (nb_bytenr(b) != e->bytenr) {
		WHY("header bytenr %" PRIu64 " (misplaced or stale block)", nb_bytenr(b));
		return -EIO;
	}
	if (e->fsid && memcmp(b + NH_FSID, e->fsid, 16)) {
		WHY("fsid belongs to another volume");
		return -EIO;
	}
	if (e->owner && nb_owner(b) != e->owner) {
		WHY("owner tree %" PRIu64 ", expected %" PRIu64, nb_owner(b), e->owner);
		return -EIO;
	}
	if (e->level >= 0 && nb_level(b) != e->level) {
		WHY("level %d, expected %d", nb_level(b), e->level);
		return -EIO;
	}
	if (e->generation && nb_generation(b) != e->generation) {
		WHY("generation %" PRIu64 ", parent expects %" PRIu64, nb_generation(b),
		    e->generation);
		return -EIO;
	}
	if (e->max_generation && nb_generation(b) > e->max_generation) {
		WHY("generation %" PRIu64 " newer than its root's %" PRIu64, nb_generation(b),
		    e->max_generation);
		return -EIO;
	}
	if (node_check(b, e->nodesize, sub, sizeof(sub))) {
		WHY("%s", sub);
		return -EIO;
	}
	return 0;
}

int node_search_slots(const uint8_t *b, int level, int lo, int hi, const struct key *k, int *exact)
{
	struct key mk;

	if (exact)
		*exact = 0;
	if (level == 0) {
		while (lo < hi) {
			int mid = (lo + hi) / 2, c;

			nb_item_key(b, mid, &mk);
			c = key_cmp(&mk, k);
			if (c < 0) {
				lo = mid + 1;
			} else if (c > 0) {
				hi = mid;
			} else {
				if (exact)
					*exact = 1;
				return mid;
			}
		}
		return lo;
	}
	/* largest i in [lo, hi) with key i <= k; lo - 1 otherwise */
	while (lo < hi) {
		int mid = (lo + hi) / 2;

		nb_ptr_key(b, mid, &mk);
		if (key_cmp(&mk, k) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (exact && lo - 1 >= 1) {
		nb_ptr_key(b, lo - 1, &mk);
		*exact = key_cmp(&mk, k) == 0;
	}
	return lo - 1;
}

int node_search(const uint8_t *b, uint32_t nodesize, const struct key *k, int *exact)
{
	uint32_t n = nb_nritems(b);
	int level = nb_level(b), slot;

	/* level read once: the clamp and the search agree on the slot size */
	if (level == 0) {
		if (n > node_item_cap(nodesize))
			n = node_item_cap(nodesize);
		return node_search_slots(b, 0, 0, (int)n, k, exact);
	}
	if (n > node_ptr_cap(nodesize))
		n = node_ptr_cap(nodesize);
	slot = node_search_slots(b, level, 1, (int)n, k, exact);
	return slot >= 0 ? slot : 0;
}
