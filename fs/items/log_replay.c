// SPDX-License-Identifier: MIT
/*
 * log_replay.c — reading an fsync log from the device (the chain from
 * log_root or the commit's slot, every segment verified), checking it
 * for fsck (log_check) and replaying it at mount (log_replay); the
 * format is in log.c's header.
 */
#include "fs/items/log_int.h"

/* ---- reading a log ----------------------------------------------------------- */

struct seg {
	struct log_seg_hdr *h;	/* whole segment */
};

/* Read copy m of [logical, +len), piece by piece (a raid10 element
 * each): 1 when there is no copy m, 0, -EUCLEAN, -EIO. */
static int read_copy(struct core *c, uint64_t logical, void *buf, uint64_t len, int m)
{
	for (uint64_t off = 0; off < len;) {
		struct chunk_copy cp[CHUNK_MAX_STRIPES];
		uint64_t type = 0, n = chunk_map_piece(c, logical + off, len - off);
		int ncp = chunk_map_lookup(c, logical + off, n, cp, &type);

		if (ncp < 0 || !(type & BG_METADATA))
			return -EUCLEAN;
		if (m >= ncp)
			return 1;
		if (dev_read(cp[m].dev, cp[m].physical, (uint8_t *)buf + off, n))
			return -EIO;
		off += n;
	}
	return 0;
}

/* read_verified's verify as parity_read_verified calls it. */
struct seg_verify {
	struct core *c;
	uint64_t len;
	int (*fn)(struct core *c, const void *buf, uint64_t logical, uint64_t len);
};

static int seg_verify_cb(const void *buf, uint64_t logical, void *arg)
{
	const struct seg_verify *v = arg;

	return v->fn(v->c, buf, logical, v->len);
}

/* Read [logical, +len) from the first copy that passes verify (raid5/6:
 * rebuilt from parity until it does). */
static int read_verified(struct core *c, uint64_t logical, void *buf, uint64_t len,
			 int (*verify)(struct core *c, const void *buf, uint64_t logical, uint64_t len))
{
	int last = -EIO;

	if (chunk_map_is_parity(c, logical)) {
		struct seg_verify v = { c, len, verify };
		int r = parity_read_verified(c, logical, len, buf, seg_verify_cb, &v);
		return r == -EIO ? -EUCLEAN : r;
	}

	for (int i = 0; i < CHUNK_MAX_STRIPES; i++) {
		int r = read_copy(c, logical, buf, len, i);
		if (r == -EUCLEAN)
			return r;
		if (r > 0)
			break;
		if (r)
			continue;
		last = verify(c, buf, logical, len);
		if (!last)
			return 0;
	}
	return last;
}

static int verify_hdr(struct core *c, const void *buf, uint64_t logical, uint64_t len)
{
	const struct log_seg_hdr *h = buf;

	(void)len;
	if ((h->magic != LOG_MAGIC && h->magic != LOG_MAGIC_V2) || memcmp(h->fsid, c->sb.fsid, 16) ||
	    h->bytenr != logical ||
	    !h->len || h->len % LOG_BLOCK || h->len > (64u << 20) || h->used > h->len ||
	    h->used < sizeof(*h))
		return -EUCLEAN;
	return 0;
}

static int verify_seg(struct core *c, const void *buf, uint64_t logical, uint64_t len)
{
	const struct log_seg_hdr *h = buf;

	if (verify_hdr(c, buf, logical, len) || h->len != len)
		return -EUCLEAN;
	if (crc32c(0, (const uint8_t *)buf + 4, len - 4) != h->csum)
		return -EUCLEAN;
	return 0;
}

/* Check one record's structure (v2: in a LOG_MAGIC_V2 segment, where
 * delta records may be); returns its item count or -EUCLEAN. */
static int check_record(const char *p, size_t avail, bool v2)
{
	const struct log_rec_hdr *rh = (const void *)p;
	size_t off = sizeof(*rh);
	int ndelta = 0;

	if (avail < sizeof(*rh) || rh->len < sizeof(*rh) || rh->len > avail)
		return -EUCLEAN;
	if (rh->flags & ~(LOG_REC_NEW | (v2 ? LOG_REC_DELTA : 0)))
		return -EUCLEAN;
	for (uint32_t i = 0; i < rh->nitems; i++) {
		const struct log_item_hdr *ih = (const void *)(p + off);
		if (off + sizeof(*ih) > rh->len || off + sizeof(*ih) + ih->size > rh->len)
			return -EUCLEAN;
		if (ih->kind < LOG_FS_ITEM || ih->kind > LOG_EXT_DELTA)
			return -EUCLEAN;
		if (ih->kind == LOG_EXT_DELTA &&
		    (!(rh->flags & LOG_REC_DELTA) || ih->key.objectid != rh->ino || ih->size % 8 ||
		     ndelta++))
			return -EUCLEAN;
		if (ih->kind == LOG_EXT_KEEP && (ih->key.objectid != rh->ino || ih->size % 8))
			return -EUCLEAN;
		if (ih->kind == LOG_EXT_RUNS &&
		    (ih->key.objectid != rh->ino || ih->size % sizeof(struct log_keep_run)))
			return -EUCLEAN;
		if (ih->kind == LOG_FS_ITEM && ih->key.objectid != rh->ino)
			return -EUCLEAN;
		if (ih->kind == LOG_CSUM_RESET && ih->size != 8)
			return -EUCLEAN;
		off += sizeof(*ih) + ih->size;
	}
	if ((rh->flags & LOG_REC_DELTA) && !ndelta)
		return -EUCLEAN;
	return off == rh->len ? (int)rh->nitems : -EUCLEAN;
}

/* Read and verify the segment at `at`: 0 with *out, -errno. */
int log_read_seg(struct core *c, uint64_t at, struct log_seg_hdr **out)
{
	struct log_seg_hdr *h = aligned_alloc(4096, LOG_BLOCK);
	int ret;

	if (!h)
		return -ENOMEM;
	ret = read_verified(c, at, h, LOG_BLOCK, verify_hdr);
	if (!ret) {
		uint64_t len = h->len;
		if (len > LOG_BLOCK) {
			free(h);
			h = aligned_alloc(4096, len);
		}
		/* whole, from every copy in turn, a one-block segment too: a
		 * copy whose header holds and whose body does not (a bad
		 * sector past the header) must not end the search — the log
		 * would read as torn there, and every fsync after it lost */
		ret = h ? read_verified(c, at, h, len, verify_seg) : -ENOMEM;
	}
	if (ret) {
		free(h);
		return ret;
	}
	*out = h;
	return 0;
}

static int push_seg(struct seg **v, int *n, struct log_seg_hdr *h)
{
	struct seg *nv = realloc(*v, (size_t)(*n + 1) * sizeof(*nv));

	if (!nv) {
		free(h);
		return -ENOMEM;
	}
	*v = nv;
	nv[(*n)++].h = h;
	return 0;
}

/*
 * The chain, oldest first in *out: back from the superblock's log_root
 * along `prev` (every segment must be valid: the superblock was written
 * after they were flushed), then forward along `next` for as long as
 * valid segments continue it (those were written without a superblock
 * write: one that is there whole counts; the first one that is not ends
 * the log).  *unflushed: the last segment came by `next`, so its flush
 * may not have completed — the data its records reference may be lost
 * (verify_last_seg).  Every segment before it was flushed whole with
 * its data: the leader writes a segment only after the flush of the one
 * before returned.
 */
static int read_chain(struct core *c, struct seg **out, int *nout, bool *unflushed, FILE *msg)
{
	struct seg *v = NULL;
	int n = 0, ret = 0, nsuper;
	uint64_t at = c->sb.log_root;
	struct log_seg_hdr *first = log_slot_seg(c);

	/* no segment named by the superblock: the chain starts in the slot
	 * the last commit named, if a segment there starts it */
	if (first && push_seg(&v, &n, first))
		return -ENOMEM;

	while (at) {
		struct log_seg_hdr *h;
		ret = log_read_seg(c, at, &h);
		if (!ret && (h->parent_gen != c->generation ||
			     (n && (h->log_id != v[n - 1].h->log_id || h->seq + 1 != v[n - 1].h->seq)))) {
			if (msg)
				fprintf(msg, "fsync log segment %llu (generation %llu, seq %llu) does not continue the log of superblock generation %llu\n",
					(unsigned long long)at, (unsigned long long)h->parent_gen,
					(unsigned long long)h->seq, (unsigned long long)c->generation);
			free(h);
			ret = -EUCLEAN;
		}
		if (ret) {
			if (msg && ret == -EUCLEAN)
				fprintf(msg, "fsync log segment at %llu is damaged (header or checksum)\n",
					(unsigned long long)at);
			break;
		}
		if (n == LOG_MAX_SEGS) {
			free(h);
			ret = -EUCLEAN;
			if (msg)
				fprintf(msg, "fsync log: more than %d segments\n", LOG_MAX_SEGS);
			break;
		}
		ret = push_seg(&v, &n, h);
		if (ret)
			break;
		at = h->prev;
		if (!at && h->seq != 1) {
			if (msg)
				fprintf(msg, "fsync log: the first segment has seq %llu\n",
					(unsigned long long)h->seq);
			ret = -EUCLEAN;
		}
	}
	/* reverse: oldest first */
	for (int i = 0; i < n / 2; i++) {
		struct seg tmp = v[i];
		v[i] = v[n - 1 - i];
		v[n - 1 - i] = tmp;
	}
	/* forward from the newest the superblock knows (none: the slot's) */
	nsuper = first ? 0 : n;
	while (!ret && n > 0 && n < LOG_MAX_SEGS && v[n - 1].h->next) {
		const struct log_seg_hdr *last = v[n - 1].h;
		struct log_seg_hdr *h;
		if (log_read_seg(c, last->next, &h))
			break;
		if (h->parent_gen != last->parent_gen || h->log_id != last->log_id ||
		    h->seq != last->seq + 1 || h->prev != last->bytenr || h->len > last->next_len) {
			free(h);
			break;
		}
		ret = push_seg(&v, &n, h);
	}
	/* every record must parse */
	for (int i = 0; i < n && !ret; i++) {
		const char *p = (const char *)(v[i].h + 1);
		size_t avail = v[i].h->used - sizeof(struct log_seg_hdr), off = 0;
		for (uint32_t r = 0; r < v[i].h->nrecords && !ret; r++) {
			int k = check_record(p + off, avail - off, v[i].h->magic == LOG_MAGIC_V2);
			if (k < 0) {
				if (msg)
					fprintf(msg, "fsync log segment %llu: record %u is malformed\n",
						(unsigned long long)v[i].h->bytenr, r);
				ret = k;
				break;
			}
			off += ((const struct log_rec_hdr *)(p + off))->len;
		}
	}
	*out = v;
	*nout = n;
	*unflushed = n > nsuper;
	return ret;
}

static void free_chain(struct seg *v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i].h);
	free(v);
}

/*
 * The data sectors one LOG_CSUM_ITEM covers, [logical, +n sectors), on
 * every copy: 0 when each matches its logged checksum, -EUCLEAN (a line
 * on out for the first bad sector) when one does not, -EIO when none
 * does not but a copy could not be read, -errno.  Replay makes them
 * reachable as they are, and fsck holds every copy of reachable data to
 * its checksum (a copy a flush missed included).
 */
static int check_logged_piece(struct core *c, uint64_t ino, uint64_t logical, const void *csums,
			      uint32_t n, FILE *out)
{
	struct chunk_copy cp[CHUNK_MAX_STRIPES];
	uint64_t type = 0, len = (uint64_t)n * CORE_SECTORSIZE;
	uint8_t *buf;
	int ncp = chunk_map_lookup(c, logical, len, cp, &type), ret = 0;

	if (ncp <= 0 || !(type & BG_DATA)) {
		if (out)
			fprintf(out, "fsync log: inode %llu: data %llu+%llu is not inside one data chunk\n",
				(unsigned long long)ino, (unsigned long long)logical,
				(unsigned long long)len);
		return -EUCLEAN;
	}
	buf = aligned_alloc(4096, len);
	if (!buf)
		return -ENOMEM;
	for (int m = 0; m < ncp && ret != -EUCLEAN; m++) {
		if (dev_read(cp[m].dev, cp[m].physical, buf, len)) {
			if (out)
				fprintf(out, "fsync log: inode %llu: data %llu+%llu: read error on %s\n",
					(unsigned long long)ino, (unsigned long long)logical,
					(unsigned long long)len, cp[m].dev->path);
			ret = -EIO;	/* the other copies still decide a mismatch */
			continue;
		}
		for (uint32_t i = 0; i < n; i++) {
			uint32_t want;
			memcpy(&want, (const uint8_t *)csums + (size_t)i * CSUM_SIZE, CSUM_SIZE);
			if (crc32c(0, buf + (size_t)i * CORE_SECTORSIZE, CORE_SECTORSIZE) == want)
				continue;
			if (out)
				fprintf(out, "fsync log: inode %llu: data logical %llu on %s physical %llu "
					"does not match its logged checksum: the log references data "
					"that did not reach the device\n", (unsigned long long)ino,
					(unsigned long long)(logical + (uint64_t)i * CORE_SECTORSIZE),
					cp[m].dev->path,
					(unsigned long long)(cp[m].physical + (uint64_t)i * CORE_SECTORSIZE));
			ret = -EUCLEAN;
			break;
		}
	}
	free(buf);
	return ret;
}

/* check_logged_piece over each raid10 element (the whole range else);
 * raid5/6: the data as read (rebuilt from parity where it must be). */
static int check_logged_data(struct core *c, uint64_t ino, uint64_t logical, const void *csums,
			     uint32_t n, FILE *out)
{
	if (chunk_map_is_parity(c, logical)) {
		uint64_t len = (uint64_t)n * CORE_SECTORSIZE;
		uint8_t *buf = malloc(len), *have = malloc(n);
		uint32_t *exp = malloc((size_t)n * sizeof(*exp));
		int ret = buf && have && exp ? 0 : -ENOMEM;

		if (!ret) {
			memcpy(exp, csums, (size_t)n * CSUM_SIZE);
			memset(have, 1, n);
			ret = parity_read(c, logical, len, buf, exp, have) ? -EUCLEAN : 0;
		}
		if (ret == -EUCLEAN && out)
			fprintf(out, "fsync log: inode %llu: data %llu+%llu (raid5/6) does not match its "
				"logged checksums: the log references data that did not reach the devices\n",
				(unsigned long long)ino, (unsigned long long)logical, (unsigned long long)len);
		free(buf);
		free(have);
		free(exp);
		return ret;
	}
	bool eio = false;

	for (uint32_t i = 0; i < n;) {
		uint64_t at = logical + (uint64_t)i * CORE_SECTORSIZE;
		uint32_t k = (uint32_t)(chunk_map_piece(c, at, (uint64_t)(n - i) * CORE_SECTORSIZE) /
					CORE_SECTORSIZE);
		int ret = check_logged_piece(c, ino, at, (const uint8_t *)csums + (size_t)i * CSUM_SIZE,
					     k, out);
		if (ret == -EIO)
			eio = true;	/* the pieces after it may still not match */
		else if (ret)
			return ret;
		i += k;
	}
	return eio ? -EIO : 0;
}

/*
 * The last segment of a chain that came by `next` went out with its data
 * in one flush (write_batch): power loss may have kept it and lost some
 * of that data.  drop[r] is set for each of its records whose logged
 * checksums (every LOG_CSUM_ITEM: the data the inode wrote since the last
 * commit, and any sector an item reaching into it covers) some copy of
 * the data does not match: replay skips such a record, and the inode
 * gets its record before it, or stays as the last commit left it.  None
 * of that segment's fsyncs had returned (each waits for the flush that
 * would have made the data durable), so nothing acknowledged is lost, and
 * nothing replay makes reachable reads other than as it was written.
 * Returns the records dropped, or -errno (a read error: not a lost write).
 */
static int verify_last_seg(struct core *c, const struct log_seg_hdr *h, bool *drop, FILE *msg)
{
	const char *p = (const char *)(h + 1);
	int ndrop = 0;

	for (uint32_t r = 0; r < h->nrecords; r++) {
		const struct log_rec_hdr *rh = (const void *)p;
		const char *q = (const char *)(rh + 1);
		int ret = 0;
		bool eio = false;

		p += rh->len;
		drop[r] = false;
		for (uint32_t k = 0; k < rh->nitems && !ret; k++) {
			const struct log_item_hdr *ih = (const void *)q;
			q += sizeof(*ih) + ih->size;
			if (ih->kind == LOG_CSUM_ITEM)
				ret = check_logged_data(c, rh->ino, ih->key.offset, ih + 1,
							ih->size / CSUM_SIZE, NULL);
			if (ret == -EIO) {
				eio = true;
				ret = 0;
			}
		}
		if (!ret && eio)
			ret = -EIO;
		if (ret == -EIO && msg)
			fprintf(msg, "fsync log: segment %llu record %u (inode %llu): a copy of its "
				"data cannot be read; the copies that read match, the record is "
				"replayed\n", (unsigned long long)h->bytenr, r,
				(unsigned long long)rh->ino);
		if (ret == -EIO)
			ret = 0;	/* not a lost write: as before the check */
		if (ret && ret != -EUCLEAN)
			return ret;
		if (ret) {
			drop[r] = true;
			ndrop++;
			if (msg)
				fprintf(msg, "fsync log: segment %llu record %u (inode %llu): its data did "
					"not all reach the device; replay drops the record (its fsync "
					"never returned)\n", (unsigned long long)h->bytenr, r,
					(unsigned long long)rh->ino);
		}
	}
	/* a record after a dropped one of its inode may be a delta of it:
	 * dropped too (none of this segment's fsyncs had returned) */
	p = (const char *)(h + 1);
	for (uint32_t r = 0; r < h->nrecords; r++) {
		const struct log_rec_hdr *rh = (const void *)p;
		const char *q = p + rh->len;
		p = q;
		if (!drop[r])
			continue;
		for (uint32_t r2 = r + 1; r2 < h->nrecords; r2++) {
			const struct log_rec_hdr *rh2 = (const void *)q;
			q += rh2->len;
			if (rh2->ino == rh->ino && !drop[r2]) {
				drop[r2] = true;
				ndrop++;
				if (msg)
					fprintf(msg, "fsync log: segment %llu record %u (inode %llu): "
						"follows a dropped record of its inode; replay drops it "
						"too\n", (unsigned long long)h->bytenr, r2,
						(unsigned long long)rh2->ino);
			}
		}
	}
	return ndrop;
}

static bool spans_meet(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

/*
 * fsck only (log_check): a segment written over an earlier one of its
 * chain is invisible to the chain's walk, which ends the log at the first
 * segment that does not continue it as at a torn write (replay must: a
 * crash tears writes).  So the chain's geometry is checked: no segment
 * lies over an earlier one, no segment's `next` slot (where the segment
 * after it goes) over any segment up to it (the next fsync would write
 * over the log); and what stands where the walk ended — the slot itself
 * (*slot: the log starts there and nothing continues it) or the last
 * segment's `next` — is no later segment of the same log, which would
 * mean the one that belonged there was written over.  -EUCLEAN, said.
 */
static int chain_geometry(struct core *c, const struct seg *v, int n, FILE *out)
{
	struct log_seg_hdr *h;
	uint64_t at = 0, want = 1, log_id = 0, gen = c->generation;

	for (int i = 0; i < n; i++) {
		const struct log_seg_hdr *s = v[i].h;
		uint64_t nlen = s->next_len ? s->next_len : LOG_BLOCK;

		for (int j = 0; j <= i; j++) {
			const struct log_seg_hdr *e = v[j].h;
			if (j < i && spans_meet(s->bytenr, s->len, e->bytenr, e->len)) {
				if (out)
					fprintf(out, "fsync log: segment %llu (seq %llu) lies over segment "
						"%llu (seq %llu) of its chain\n",
						(unsigned long long)s->bytenr, (unsigned long long)s->seq,
						(unsigned long long)e->bytenr, (unsigned long long)e->seq);
				return -EUCLEAN;
			}
			if (s->next && spans_meet(s->next, nlen, e->bytenr, e->len)) {
				if (out)
					fprintf(out, "fsync log: segment %llu (seq %llu) reserves %llu+%llu "
						"for the next segment, over segment %llu (seq %llu) of its "
						"chain\n", (unsigned long long)s->bytenr,
						(unsigned long long)s->seq, (unsigned long long)s->next,
						(unsigned long long)nlen, (unsigned long long)e->bytenr,
						(unsigned long long)e->seq);
				return -EUCLEAN;
			}
		}
	}
	if (n) {
		at = v[n - 1].h->next;
		want = v[n - 1].h->seq + 1;
		log_id = v[n - 1].h->log_id;
		gen = v[n - 1].h->parent_gen;
	} else if (!c->sb.log_root) {
		at = c->sb.log_slot;
	}
	if (!at || log_read_seg(c, at, &h))
		return 0;
	bool over = h->parent_gen == gen && (!n || h->log_id == log_id) && h->seq > want;
	if (over && out)
		fprintf(out, "fsync log: segment seq %llu stands at %llu, where seq %llu belongs: "
			"a later segment was written over it (the log from there is lost)\n",
			(unsigned long long)h->seq, (unsigned long long)at, (unsigned long long)want);
	free(h);
	return over ? -EUCLEAN : 0;
}

int log_check(struct core *c, FILE *out)
{
	struct seg *v;
	int n, ret, recs = 0;
	bool unflushed = false, *drop = NULL;
	struct htable_set based = { 0 };	/* inodes with a whole record so far */

	if (!log_pending(c))
		return chain_geometry(c, NULL, 0, out);	/* the slot written over? */
	if (out) {
		/* where the superblock's segment lies: tests damage it there.
		 * A log that starts in the slot has no segment the superblock
		 * vouches for: damage there reads as a torn first segment */
		struct chunk_copy cp[CHUNK_MAX_STRIPES];
		uint64_t at = c->sb.log_root ? c->sb.log_root : c->sb.log_slot;
		if (chunk_map_lookup(c, at, LOG_BLOCK, cp, NULL) > 0)
			fprintf(out, c->sb.log_root ?
				"fsync log: superblock names segment %llu (%s physical %llu)\n" :
				"fsync log: starts in the slot the last commit named, segment %llu "
				"(%s physical %llu)\n",
				(unsigned long long)at, cp[0].dev->path,
				(unsigned long long)cp[0].physical);
	}
	ret = read_chain(c, &v, &n, &unflushed, out);
	if (!ret)
		ret = chain_geometry(c, v, n, out);
	if (!ret && unflushed) {
		drop = calloc(v[n - 1].h->nrecords + 1, sizeof(*drop));
		ret = drop ? verify_last_seg(c, v[n - 1].h, drop, out) : -ENOMEM;
		if (ret > 0)
			recs -= ret;
		if (ret > 0)
			ret = 0;
	}
	for (int i = 0; i < n && !ret; i++) {
		recs += (int)v[i].h->nrecords;
		/* the log's blocks were allocated after the last commit */
		if (alloc_any_used(c, v[i].h->bytenr, v[i].h->len)) {
			if (out)
				fprintf(out, "fsync log segment %llu overlaps space the last commit uses\n",
					(unsigned long long)v[i].h->bytenr);
			ret = -EUCLEAN;
		}
		/* so were the data extents its records reference that the
		 * last commit does not know */
		const char *p = (const char *)(v[i].h + 1);
		for (uint32_t r = 0; r < v[i].h->nrecords && !ret; r++) {
			const struct log_rec_hdr *rh = (const void *)p;
			const char *q = (const char *)(rh + 1);
			p += rh->len;
			if (drop && i == n - 1 && drop[r])
				continue;	/* replay drops it: said above */
			/* a delta extends the record of its inode before it */
			if ((rh->flags & LOG_REC_DELTA) && !htable_set_has(&based, rh->ino)) {
				if (out)
					fprintf(out, "fsync log: segment %llu record %u: a delta of inode "
						"%llu with no record of it before\n",
						(unsigned long long)v[i].h->bytenr, r,
						(unsigned long long)rh->ino);
				ret = -EUCLEAN;
				break;
			}
			if (!(rh->flags & LOG_REC_DELTA) && htable_set_add(&based, rh->ino)) {
				ret = -ENOMEM;
				break;
			}
			for (uint32_t k = 0; k < rh->nitems && !ret; k++) {
				const struct log_item_hdr *ih = (const void *)q;
				const struct file_extent *fe = (const void *)(ih + 1);
				struct extent_item ei;
				uint64_t l;
				q += sizeof(*ih) + ih->size;
				/* the data written since the last commit: what
				 * replay makes reachable must be on the device */
				if (ih->kind == LOG_CSUM_ITEM) {
					ret = check_logged_data(c, rh->ino, ih->key.offset, ih + 1,
								ih->size / CSUM_SIZE, out);
					continue;
				}
				if (ih->kind != LOG_FS_ITEM || ih->key.type != KEY_EXTENT_DATA ||
				    ih->size < sizeof(*fe) || fe->type == FE_INLINE || !fe->disk_logical)
					continue;
				if (extent_lookup(c, fe->disk_logical, true, &ei, &l) != -ENOENT)
					continue;
				if (alloc_bg_is_new(c, fe->disk_logical) ||
				    alloc_any_used(c, fe->disk_logical, fe->disk_len)) {
					if (out)
						fprintf(out, "fsync log: inode %llu references data %llu+%llu, "
							"which the last commit uses or does not map\n",
							(unsigned long long)rh->ino,
							(unsigned long long)fe->disk_logical,
							(unsigned long long)fe->disk_len);
					ret = -EUCLEAN;
				}
			}
		}
	}
	free_chain(v, n);
	free(drop);
	htable_set_destroy(&based);
	return ret ? ret : (recs ? recs : 1);
}

/* ---- replay ---------------------------------------------------------------------- */

struct rec_ref {
	uint64_t ino;
	size_t seq;		/* place in the log */
	const struct log_rec_hdr *rh;
};

static int cmp_rec(const void *a, const void *b)
{
	const struct rec_ref *x = a, *y = b;

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_off(const void *a, const void *b)
{
	uint64_t x, y;

	memcpy(&x, a, 8);
	memcpy(&y, b, 8);
	return x < y ? -1 : x > y;
}

/* The run holding offset off (runs ascending and disjoint), or -1. */
static ssize_t kept(const struct log_keep_run *keep, size_t n, uint64_t off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (off < keep[mid].start)
			hi = mid;
		else if (off >= keep[mid].end)
			lo = mid + 1;
		else
			return (ssize_t)mid;
	}
	return -1;
}

/*
 * Delete every item of ino except its back references (INODE_REF,
 * INODE_EXTREF: names the log does not change) and the EXTENT_DATA items
 * inside the keep runs (each run's count of them must be there), dropping
 * data refs.  A delta (del, ascending le64 offsets, ndel of them, packed)
 * keeps every EXTENT_DATA item but those with keys at del.
 */
static int drop_inode_items(struct txn *t, struct fsctx *fs, uint64_t ino,
			    const struct log_keep_run *keep, size_t nkeep, const void *del,
			    size_t ndel)
{
	struct key from = mkkey(ino, 0, 0);
	uint64_t *seen = calloc(nkeep ? nkeep : 1, sizeof(*seen));

	if (!seen)
		return -ENOMEM;
	for (;;) {
		struct key ik;
		struct path p;
		uint64_t dl = 0, dlen = 0;
		ssize_t r;
		int ret;

		btree_path_init(&p);
		ret = fsctx_search_ge(fs, &from, &p);
		while (ret == 0) {
			btree_item_key(&p, p.slots[0], &ik);
			if (ik.objectid != ino) {
				ret = 1;
				break;
			}
			if (ik.type == KEY_EXTENT_DATA && del) {
				if (ndel && bsearch(&ik.offset, del, ndel, 8, cmp_off))
					break;
			} else if (ik.type == KEY_EXTENT_DATA &&
				   (r = kept(keep, nkeep, ik.offset)) >= 0) {
				seen[r]++;
			} else if (ik.type != KEY_INODE_REF && ik.type != KEY_INODE_EXTREF) {
				break;
			}
			ret = btree_next(&p);
		}
		if (ret == 0 && ik.type == KEY_EXTENT_DATA) {
			uint32_t size;
			const struct file_extent *fe = btree_item_ptr(&p, p.slots[0], &size);
			if (size >= sizeof(*fe) && fe->type != FE_INLINE && fe->disk_logical) {
				dl = fe->disk_logical;
				dlen = fe->disk_len;
			}
		}
		btree_path_release(&p);
		if (ret < 0) {
			free(seen);
			return ret;
		}
		if (ret > 0) {		/* past the inode's items: check the runs */
			ret = 0;
			for (size_t i = 0; i < nkeep && !ret; i++) {
				if (seen[i] == keep[i].count)
					continue;
				fprintf(stderr, "glassfs: fsync log: inode %llu: the last commit holds "
					"%llu extents at offsets [%llu, %llu), the log kept %llu\n",
					(unsigned long long)ino, (unsigned long long)seen[i],
					(unsigned long long)keep[i].start, (unsigned long long)keep[i].end,
					(unsigned long long)keep[i].count);
				ret = -EUCLEAN;
			}
			free(seen);
			return ret;
		}
		ret = btree_delete(t, fs->root, &ik);
		if (!ret && dl)
			ret = data_ref(t, dl, dlen, -1);
		if (ret) {
			free(seen);
			return ret;
		}
		from = ik;	/* deleted: the next search lands after it */
	}
}

static int replay_record(struct txn *t, struct fsctx *fs, const struct log_rec_hdr *rh,
			 struct htable_set *claimed, unsigned *items)
{
	struct core *c = fs->core;
	const char *p = (const char *)(rh + 1);
	struct log_keep_run *keep = NULL;	/* aligned copy: item data is packed */
	size_t nkeep = 0, ndel = 0;
	const void *del = NULL;
	int ret = 0;

	for (uint32_t i = 0; i < rh->nitems && !keep && !del; i++) {
		const struct log_item_hdr *ih = (const void *)p;
		if (ih->kind == LOG_EXT_DELTA) {	/* check_record: in a delta only */
			del = ih + 1;
			ndel = ih->size / 8;
		} else if (ih->kind == LOG_EXT_RUNS && ih->size) {
			nkeep = ih->size / sizeof(*keep);
			keep = malloc(ih->size);
			if (!keep)
				return -ENOMEM;
			memcpy(keep, ih + 1, ih->size);
		} else if (ih->kind == LOG_EXT_KEEP && ih->size) {
			/* a log written before runs: one offset, one item */
			nkeep = ih->size / 8;
			keep = malloc(nkeep * sizeof(*keep));
			if (!keep)
				return -ENOMEM;
			for (size_t k = 0; k < nkeep; k++) {
				uint64_t off;
				memcpy(&off, (const char *)(ih + 1) + k * 8, 8);
				keep[k] = (struct log_keep_run){ off, off + 1, 1 };
			}
		}
		p += sizeof(*ih) + ih->size;
	}
	p = (const char *)(rh + 1);
	ret = drop_inode_items(t, fs, rh->ino, keep, nkeep, del, ndel);
	free(keep);

	for (uint32_t i = 0; i < rh->nitems && !ret; i++) {
		const struct log_item_hdr *ih = (const void *)p;
		const void *data = ih + 1;
		struct key k = { ih->key.objectid, ih->key.type, ih->key.offset };

		p += sizeof(*ih) + ih->size;
		(*items)++;
		switch (ih->kind) {
		case LOG_FS_ITEM:
			if (k.type == KEY_INODE_REF || k.type == KEY_INODE_EXTREF)
				break;	/* names: kept, or added by dir_add below */
			if (k.type == KEY_EXTENT_DATA && ih->size >= sizeof(struct file_extent)) {
				const struct file_extent *fe = data;
				if (fe->type != FE_INLINE && fe->disk_logical) {
					struct extent_item ei;
					uint64_t l;
					int r = extent_lookup(c, fe->disk_logical, true, &ei, &l);
					if (r == -ENOENT) {
						/* written after the last commit: claim it once */
						r = 0;
						if (!htable_set_has(claimed, fe->disk_logical)) {
							r = alloc_claim(c, fe->disk_logical, fe->disk_len);
							if (r == -EEXIST)
								fprintf(stderr, "glassfs: fsync log: data extent %llu+%llu of inode %llu overlaps allocated space\n",
									(unsigned long long)fe->disk_logical,
									(unsigned long long)fe->disk_len,
									(unsigned long long)rh->ino);
							if (r)
								r = -EUCLEAN;
							else
								r = htable_set_add(claimed, fe->disk_logical);
						}
						if (!r) {
							struct dref d = { fe->disk_logical, fe->disk_len, 0,
									  -1, +1, true, true };
							r = extent_ref_add(c, &d);
						}
					} else if (r == 0) {
						r = data_ref(t, fe->disk_logical, fe->disk_len, +1);
					}
					if (r) {
						ret = r;
						break;
					}
				}
			}
			ret = btree_insert(t, fs->root, &k, data, ih->size);
			break;
		case LOG_CSUM_RESET: {
			uint64_t len;
			memcpy(&len, data, 8);
			ret = data_csum_delete(t, k.offset, len);
			break;
		}
		case LOG_CSUM_ITEM:
			ret = btree_insert(t, core_tree(c, CT_CSUM), &k, data, ih->size);
			break;
		}
	}
	return ret;
}

/* A new inode's names: DIR_ITEM/DIR_INDEX/INODE_REF through dir_add. */
static int replay_names(struct txn *t, struct fsctx *fs, const struct log_rec_hdr *rh)
{
	const char *p = (const char *)(rh + 1);
	uint32_t mode = 0;
	int ret = 0;

	for (uint32_t i = 0; i < rh->nitems; i++) {
		const struct log_item_hdr *ih = (const void *)p;
		if (ih->kind == LOG_FS_ITEM && ih->key.type == KEY_INODE_ITEM &&
		    ih->size >= sizeof(struct inode_item))
			mode = ((const struct inode_item *)(ih + 1))->mode;
		p += sizeof(*ih) + ih->size;
	}
	p = (const char *)(rh + 1);
	for (uint32_t i = 0; i < rh->nitems && !ret; i++) {
		const struct log_item_hdr *ih = (const void *)p;
		p += sizeof(*ih) + ih->size;
		if (ih->kind != LOG_FS_ITEM || ih->key.type != KEY_INODE_REF)
			continue;
		const char *e = (const char *)(ih + 1), *end = e + ih->size;
		struct inode *dp;
		ret = inode_get(fs, ih->key.offset, &dp);
		if (ret) {
			fprintf(stderr, "glassfs: fsync log: directory %llu of inode %llu: %s\n",
				(unsigned long long)ih->key.offset, (unsigned long long)rh->ino,
				strerror(-ret));
			break;
		}
		inode_lock(dp);
		while (!ret && e + sizeof(struct inode_ref) <= end) {
			const struct inode_ref *r = (const void *)e;
			e += sizeof(*r) + r->name_len;
			if (e > end) {
				ret = -EUCLEAN;
				break;
			}
			ret = dir_add(t, fs, dp, r->name, r->name_len, rh->ino, dir_type_of(mode));
			if (ret == -EEXIST)
				fprintf(stderr, "glassfs: fsync log: name '%.*s' of inode %llu is taken in directory %llu\n",
					(int)r->name_len, r->name, (unsigned long long)rh->ino,
					(unsigned long long)dp->ino);
		}
		inode_unlock(dp);
		inode_put(fs, dp);
	}
	return ret;
}

int log_replay(struct fsctx *fs)
{
	struct core *c = fs->core;
	struct log_state *ls = c->log;
	struct seg *v = NULL;
	struct rec_ref *recs = NULL;
	int n = 0, nrec = 0, ninodes = 0, ret;
	unsigned items = 0;
	uint64_t t0 = glock_now_ns();
	struct txn *t = NULL;
	struct htable_set claimed = { 0 };
	bool unflushed = false, *drop = NULL;
	int ndrop = 0;

	if (!ls || c->readonly)
		return 0;
	if (!log_pending(c)) {
		log_adopt_slot(c, ls);
		return 0;
	}
	ret = read_chain(c, &v, &n, &unflushed, stderr);
	if (!ret && unflushed) {
		drop = calloc(v[n - 1].h->nrecords + 1, sizeof(*drop));
		ret = drop ? verify_last_seg(c, v[n - 1].h, drop, stderr) : -ENOMEM;
		ndrop = ret > 0 ? ret : 0;
		if (ret > 0)
			ret = 0;
	}
	if (ret)
		goto out;
	/* the log's blocks stay out of reach until the replay is committed */
	for (int i = 0; i < n && !ret; i++) {
		ret = alloc_claim(c, v[i].h->bytenr, v[i].h->len);
		if (ret) {
			fprintf(stderr, "glassfs: fsync log segment %llu overlaps allocated space\n",
				(unsigned long long)v[i].h->bytenr);
			ret = -EUCLEAN;
			break;
		}
		glock_write(&ls->lock);
		ret = log_add_seg(ls, v[i].h->bytenr, v[i].h->len);
		glock_write_unlock(&ls->lock);
	}
	if (ret)
		goto out;
	/*
	 * Per inode its last whole record and the deltas after it, in log
	 * order (a whole record holds every change since the last commit
	 * and replaces what came before it; a delta changes what the record
	 * before it left)
	 */
	size_t nall = 0, seq = 0;
	for (int i = 0; i < n; i++)
		nall += v[i].h->nrecords;
	recs = calloc(nall ? nall : 1, sizeof(*recs));
	if (!recs) {
		ret = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		const char *p = (const char *)(v[i].h + 1);
		for (uint32_t r = 0; r < v[i].h->nrecords; r++) {
			const struct log_rec_hdr *rh = (const void *)p;
			p += rh->len;
			if (drop && i == n - 1 && drop[r])
				continue;	/* its data was lost: the record before counts */
			if (rh->tree != btree_root_id(fs->root)) {
				fprintf(stderr, "glassfs: fsync log record for tree %llu, not the fs tree\n",
					(unsigned long long)rh->tree);
				ret = -EUCLEAN;
				goto out;
			}
			recs[nrec++] = (struct rec_ref){ rh->ino, seq++, rh };
		}
	}
	if (nrec)	/* none: every record of a lone slot segment dropped */
		qsort(recs, (size_t)nrec, sizeof(*recs), cmp_rec);
	ret = txn_join(c, 16, TXN_USE_RESERVE, &t);
	if (ret)
		goto out;
	for (int a = 0, b; a < nrec && !ret; a = b) {
		int from = -1;
		for (b = a; b < nrec && recs[b].ino == recs[a].ino; b++)
			if (!(recs[b].rh->flags & LOG_REC_DELTA))
				from = b;
		if (from < 0) {
			fprintf(stderr, "glassfs: fsync log: a delta of inode %llu with no record "
				"of it before\n", (unsigned long long)recs[a].ino);
			ret = -EUCLEAN;
			break;
		}
		for (int k = from; k < b && !ret; k++)
			ret = replay_record(t, fs, recs[k].rh, &claimed, &items);
		ninodes++;
	}
	/* names from each inode's newest record */
	for (int a = 0; a < nrec && !ret; a++)
		if ((a + 1 == nrec || recs[a + 1].ino != recs[a].ino) &&
		    (recs[a].rh->flags & LOG_REC_NEW))
			ret = replay_names(t, fs, recs[a].rh);
	if (ret)
		txn_abort(t, ret, "fsync log replay");
	int e = txn_end(t);
	if (!ret)
		ret = e;
	if (!ret)
		ret = txn_commit(c, COMMIT_OTHER);
out:
	if (PROBE_ON(LOG_REPLAY))
		GLASSFS_LOG_REPLAY((uint64_t)ninodes, items, ret, glock_now_ns() - t0);
	if (ret)
		fprintf(stderr, "glassfs: replaying the fsync log failed: %s\n", strerror(-ret));
	else
		fprintf(stderr, "glassfs: replayed the fsync log: %d inode(s), %d record(s), %u item(s), "
			"%d segment(s) on generation %llu, %d record(s) dropped (data not on the "
			"device)\n", ninodes, nrec, items, n, (unsigned long long)c->generation - 1, ndrop);
	for (int i = 0; i < nrec && getenv("GLASSFS_LOG_DEBUG"); i++)
		fprintf(stderr, "glassfs: fsync log: inode %llu%s%s, %u items\n",
			(unsigned long long)recs[i].ino, recs[i].rh->flags & LOG_REC_NEW ? " (new)" : "",
			recs[i].rh->flags & LOG_REC_DELTA ? " (delta)" : "", recs[i].rh->nitems);
	for (int i = 0; i < n && getenv("GLASSFS_LOG_DEBUG"); i++)
		fprintf(stderr, "glassfs: fsync log: segment %llu seq %llu len %llu prev %llu next %llu\n",
			(unsigned long long)v[i].h->bytenr, (unsigned long long)v[i].h->seq,
			(unsigned long long)v[i].h->len, (unsigned long long)v[i].h->prev,
			(unsigned long long)v[i].h->next);
	glock_write(&ls->lock);
	ls->st.rejected += (uint64_t)ndrop;
	glock_write_unlock(&ls->lock);
	free(recs);
	free(drop);
	htable_set_destroy(&claimed);
	free_chain(v, n);
	return ret ? ret : ninodes;
}
