/* SPDX-License-Identifier: MIT */
/*
 * parity.h — raid5 and raid6 chunks: full-stripe writes, reads that
 * reconstruct from parity, and the scrub of a range of rows (parity.c
 * has the design).
 */
#ifndef GLASSFS_PARITY_H
#define GLASSFS_PARITY_H

#include <stdbool.h>
#include <stdint.h>

struct core;

/*
 * Write [logical, +len) of a raid5/6 chunk as whole rows: logical starts
 * a row (the allocator hands out whole rows), the last row is padded
 * with zeros, parity is computed from these bytes alone.  A missing or
 * failing device degrades the write while at most nparity stripes miss
 * it; beyond that -EIO (or the device's error).  Callers hold
 * c->reloc_lock shared (meta_write_copies).
 */
int parity_write(struct core *c, uint64_t logical, const void *buf, uint64_t len);

/*
 * parity_write onto the stripes g names rather than the map's: bytes
 * [off, +len) of the chunk (off starts a row).  Relocation writes a
 * chunk's new stripes with it before they are in the map
 * (fs/services/volume_reloc.c): every row fresh, none live.
 */
struct chunk_geom;
int parity_write_geom(struct core *c, const struct chunk_geom *g, uint64_t off, const void *buf,
		      uint64_t len);

/*
 * Read the sectors [logical, +len) of a raid5/6 chunk into buf.  exp[i]
 * is the crc32c of sector i where have[i] (others are returned as read).
 * Sectors on a missing or failing device, or failing their checksum,
 * are rebuilt from the rest of their row (at most nparity per row) and
 * verified again; a sector that cannot be is -EIO, never wrong bytes.
 */
int parity_read(struct core *c, uint64_t logical, uint64_t len, void *buf, const uint32_t *exp,
		const uint8_t *have);

/*
 * Read a block of a raid5/6 chunk that carries its own checksum (a node,
 * an fsync log segment; at most 128 rows) into buf: as read, with the
 * columns of missing, failing or stale devices rebuilt, and while
 * verify(buf, logical, arg) fails, again with each further set of
 * stripes rebuilt that parity covers (a column that reads but holds
 * wrong bytes).  0 with verified bytes, or -EIO and buf zeroed.
 */
int parity_read_verified(struct core *c, uint64_t logical, uint64_t len, void *buf,
			 int (*verify)(const void *buf, uint64_t logical, void *arg), void *arg);

/*
 * Rewrite stripe `stripe` of the raid5/6 chunk at chunk_logical, rows
 * [row0, row0 + nrows), from the other stripes (a device that came back
 * stale: fs/services/volume_resync.c).  With exp (the crc32c of each
 * sector of those rows, where have[i]; as parity_read) every rebuilt row
 * is verified first: a row no rebuild makes verify keeps the stripe's
 * own bytes and counts in *mismatch.  have[i] == PARITY_UNVERIFIED marks
 * a sector in use with nothing to check it by (a node that verified no
 * way): its row is rebuilt only where the rebuild agrees with the
 * stripe's own bytes, else they stay (counted).  -EIO when a row cannot
 * be rebuilt.
 */
#define PARITY_UNVERIFIED 2
int parity_rebuild(struct core *c, uint64_t chunk_logical, int stripe, uint64_t row0,
		   uint64_t nrows, const uint32_t *exp, const uint8_t *have, uint64_t *mismatch);

/* What parity_scrub found and did. */
struct parity_scrub_stats {
	uint64_t checked_bytes;		/* device bytes read and verified */
	uint64_t read_errors;		/* device ranges that failed to read */
	uint64_t data_errors;		/* data sectors failing their checksum */
	uint64_t parity_errors;		/* parity sectors disagreeing with their row */
	uint64_t corrected_bytes;	/* sectors rewritten */
	uint64_t uncorrectable_bytes;	/* data sectors with no way back */
};

/*
 * Check every row [logical, +len) touches: each data sector against its
 * checksum (exp/have, as parity_read), each parity sector against the
 * row's data; rewrite what is wrong from the rest (unless readonly).
 */
int parity_scrub(struct core *c, uint64_t logical, uint64_t len, const uint32_t *exp,
		 const uint8_t *have, bool readonly, struct parity_scrub_stats *st);

/*
 * Read [logical, +len) of a raid5/6 chunk into buf for data that has no
 * checksums (fsck's repair of missing ones): each row is checked against
 * its parity instead.  A row that disagrees is mended only when parity
 * to spare blames exactly one column (raid6 with every device there):
 * that column is rebuilt from the rest (and rewritten unless readonly;
 * *fixed counts them).  -EILSEQ when a row disagrees and which column is
 * wrong cannot be told (raid5, or no parity left over to check with),
 * -EIO when it cannot be read; *where is the row's first logical byte.
 */
int parity_read_unsummed(struct core *c, uint64_t logical, uint64_t len, void *buf, bool readonly,
			 uint64_t *fixed, uint64_t *where);

/*
 * parity_scrub of the block [logical, +len) (at most 64 sectors) whose
 * verified bytes are good (parity_read_verified): its sectors are
 * checked against good's, the parity of its rows against their data.
 */
int parity_check_block(struct core *c, uint64_t logical, uint64_t len, const void *good,
		       bool readonly, struct parity_scrub_stats *st);

#endif
