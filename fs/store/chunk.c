// SPDX-License-Identifier: MIT
/*
 * chunk.c — the chunk map and chunk creation (see chunk.h).
 */
#include "fs/core/core_types.h"
#include "fs/store/alloc.h"
#include "fs/store/chunk.h"
#include "fs/store/dev.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1ull << 20)
#define GiB (1ull << 30)

void chunk_map_init(struct chunk_map *m)
{
	memset(m, 0, sizeof(*m));
	glock_init(&m->lock, GLOCK_RWLOCK, GLOCK_CLASS_CHUNK, 0, -1, -1);
}

void chunk_map_free(struct chunk_map *m)
{
	for (int i = 0; i < m->n; i++)
		free(m->v[i]);
	free(m->v);
	m->v = NULL;
	m->n = m->cap = 0;
}

static struct dev *dev_by_id(struct core *c, uint64_t devid)
{
	for (int i = 0; i < c->ndevs; i++)
		if (c->devs[i]->devid == devid)
			return c->devs[i];
	return NULL;
}

/* Elements per row: raid10 pairs, raid5/6 data columns, else 1. */
static uint64_t row_width(uint64_t type, int num_stripes)
{
	return (type & BG_RAID10) ? (uint64_t)num_stripes / 2 :
	       (type & BG_PARITY) ? (uint64_t)(num_stripes - chunk_parity_count(type)) : 1;
}

void chunk_profile_ratio(struct core *c, uint64_t prof, uint64_t *num, uint64_t *den)
{
	int n = 0;

	for (int i = 0; i < c->ndevs; i++)
		n += !c->devs[i]->removing;
	if (n > CHUNK_MAX_STRIPES)
		n = CHUNK_MAX_STRIPES;
	if ((prof & BG_PARITY) && n < profile_min_devs(prof))
		prof = n >= 2 ? BG_RAID1 : 0;	/* chunk_map_create's degraded choice */
	if ((prof & BG_MIRROR) && n < profile_min_devs(prof))
		prof = profile_mirror_of(n);	/* so is a mirror of fewer copies */
	if (prof & BG_PARITY) {
		*num = (uint64_t)n;
		*den = (uint64_t)(n - chunk_parity_count(prof));
	} else {
		*num = (uint64_t)profile_copies(prof);
		*den = 1;
	}
}

int chunk_parity_count(uint64_t type)
{
	return (type & BG_RAID6) ? 2 : (type & BG_RAID5) ? 1 : 0;
}

/* The element: raid10's 64 KiB, a raid5/6 sector. */
static uint64_t elem_len(uint64_t type)
{
	return (type & BG_PARITY) ? CORE_SECTORSIZE : CHUNK_STRIPE_LEN;
}

uint64_t chunk_stripe_span(uint64_t type, int num_stripes, uint64_t length)
{
	return length / row_width(type, num_stripes);
}

/*
 * Where [off, off + len) of a chunk of this type lives: the indexes of
 * the stripes holding it (idx, returned count) and the offset inside
 * each (*devoff).  -1 when the range crosses a raid10 element.
 */
int chunk_stripe_map(uint64_t type, int num_stripes, uint64_t off, uint64_t len, int *idx,
		     uint64_t *devoff)
{
	if (type & BG_PARITY)
		return -1;	/* fs/store/parity.c reads and writes them */
	if (type & BG_RAID10) {
		uint64_t p = row_width(type, num_stripes), u = off / CHUNK_STRIPE_LEN;
		if (len && (off + len - 1) / CHUNK_STRIPE_LEN != u)
			return -1;
		idx[0] = (int)(2 * (u % p));
		idx[1] = idx[0] + 1;
		*devoff = (u / p) * CHUNK_STRIPE_LEN + off % CHUNK_STRIPE_LEN;
		return 2;
	}
	for (int i = 0; i < num_stripes; i++)
		idx[i] = i;
	*devoff = off;
	return num_stripes;
}

/* Every stripe holding device space: current, being filled, retired. */
static int all_stripes(const struct chunk *ch)
{
	return ch->num_stripes + ch->num_new + ch->num_retired;
}

/* Device bytes stripe k of all_stripes() spans. */
static uint64_t span_at(const struct chunk *ch, int k)
{
	if (k < ch->num_stripes)
		return chunk_stripe_span(ch->type, ch->num_stripes, ch->length);
	if (k < ch->num_stripes + ch->num_new)
		return chunk_stripe_span(ch->new_type, ch->num_new, ch->length);
	return chunk_stripe_span(ch->retired_type, ch->num_retired, ch->length);
}

static const struct chunk_stripe *stripe_at(const struct chunk *ch, int k)
{
	if (k < ch->num_stripes)
		return &ch->stripes[k];
	k -= ch->num_stripes;
	if (k < ch->num_new)
		return &ch->new_stripes[k];
	return &ch->retired_stripes[k - ch->num_new];
}

/* Index of the chunk containing logical, or -1.  Caller holds the lock. */
static int find_locked(const struct chunk_map *m, uint64_t logical)
{
	int lo = 0, hi = m->n - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		const struct chunk *ch = m->v[mid];
		if (logical < ch->logical)
			hi = mid - 1;
		else if (logical >= ch->logical + ch->length)
			lo = mid + 1;
		else
			return mid;
	}
	return -1;
}

static int insert_locked(struct chunk_map *m, struct chunk *ch)
{
	int pos = 0;

	while (pos < m->n && m->v[pos]->logical < ch->logical)
		pos++;
	if ((pos < m->n && m->v[pos]->logical < ch->logical + ch->length) ||
	    (pos > 0 && m->v[pos - 1]->logical + m->v[pos - 1]->length > ch->logical))
		return -EEXIST;
	if (m->n == m->cap) {
		int cap = m->cap ? m->cap * 2 : 16;
		struct chunk **v = realloc(m->v, (size_t)cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	memmove(&m->v[pos + 1], &m->v[pos], (size_t)(m->n - pos) * sizeof(*m->v));
	m->v[pos] = ch;
	m->n++;
	return 0;
}

static int add_chunk(struct core *c, struct chunk *ch)
{
	int ret;

	glock_write(&c->chunks.lock);
	ret = insert_locked(&c->chunks, ch);
	glock_write_unlock(&c->chunks.lock);
	return ret;
}

int chunk_map_insert(struct core *c, uint64_t logical, const struct chunk_item *ci,
		     uint32_t size)
{
	struct chunk *ch;
	int ret;

	if (size < sizeof(*ci) || ci->num_stripes == 0 ||
	    ci->num_stripes > CHUNK_MAX_STRIPES || size < CHUNK_ITEM_SIZE(ci->num_stripes) ||
	    ci->length == 0 || (ci->length & (CORE_SECTORSIZE - 1)) ||
	    (logical & (CORE_SECTORSIZE - 1)) || !(ci->type & BG_TYPE_MASK)) {
		core_log(c, "chunk item at logical %llu is malformed",
			 (unsigned long long)logical);
		return -EUCLEAN;
	}
	if (ci->type & BG_RAID0) {
		core_log(c, "chunk at logical %llu: profile %llx not supported",
			 (unsigned long long)logical,
			 (unsigned long long)(ci->type & BG_PROFILE_MASK));
		return -EOPNOTSUPP;
	}
	if ((ci->type & BG_RAID10) &&
	    (ci->num_stripes < 4 || ci->num_stripes % 2 || ci->sub_stripes != 2 ||
	     ci->stripe_len != CHUNK_STRIPE_LEN ||
	     ci->length % (row_width(ci->type, ci->num_stripes) * CHUNK_STRIPE_LEN))) {
		core_log(c, "raid10 chunk item at logical %llu is malformed (%u stripes, %u sub stripes, "
			 "element %llu, length %llu)", (unsigned long long)logical, ci->num_stripes,
			 ci->sub_stripes, (unsigned long long)ci->stripe_len,
			 (unsigned long long)ci->length);
		return -EUCLEAN;
	}
	if ((ci->type & BG_MIRROR) &&
	    (__builtin_popcountll(ci->type & BG_PROFILE_MASK) != 1 ||
	     ci->num_stripes != profile_copies(ci->type))) {
		core_log(c, "%s chunk item at logical %llu is malformed (%u stripes)",
			 core_profile_name(ci->type), (unsigned long long)logical, ci->num_stripes);
		return -EUCLEAN;
	}
	if ((ci->type & BG_PARITY) &&
	    (ci->num_stripes < 2 + chunk_parity_count(ci->type) || ci->sub_stripes != 1 ||
	     ci->stripe_len != CORE_SECTORSIZE || __builtin_popcountll(ci->type & BG_PROFILE_MASK) != 1 ||
	     ci->length % (row_width(ci->type, ci->num_stripes) * CORE_SECTORSIZE))) {
		core_log(c, "%s chunk item at logical %llu is malformed (%u stripes, element %llu, "
			 "length %llu)", core_profile_name(ci->type), (unsigned long long)logical,
			 ci->num_stripes, (unsigned long long)ci->stripe_len,
			 (unsigned long long)ci->length);
		return -EUCLEAN;
	}
	uint64_t span = chunk_stripe_span(ci->type, ci->num_stripes, ci->length);
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ch->logical = logical;
	ch->length = ci->length;
	ch->type = ci->type;
	ch->num_stripes = ci->num_stripes;
	for (int i = 0; i < ci->num_stripes; i++) {
		ch->stripes[i].devid = ci->stripes[i].devid;
		ch->stripes[i].physical = ci->stripes[i].offset;
		ch->stripes[i].dev = dev_by_id(c, ci->stripes[i].devid);
		memcpy(ch->stripes[i].uuid, ci->stripes[i].dev_uuid, 16);
		if (!ch->stripes[i].dev) {
			if (c->opts.degraded)
				continue;	/* served by the other copies */
			core_log(c, "chunk at logical %llu needs device id %llu, which is missing",
				 (unsigned long long)logical,
				 (unsigned long long)ci->stripes[i].devid);
			free(ch);
			return -ENODEV;
		}
		if (ch->stripes[i].physical + span > ch->stripes[i].dev->size) {
			core_log(c, "chunk at logical %llu runs past the end of device %s",
				 (unsigned long long)logical, ch->stripes[i].dev->path);
			free(ch);
			return -EUCLEAN;
		}
	}
	/* every mirror set (raid10: each pair; else all stripes) keeps a
	 * copy; raid5/6 lack at most one / two stripes */
	int present = 1, group = (ch->type & BG_RAID10) ? 2 : ch->num_stripes;
	for (int g = 0; g < ch->num_stripes; g += group) {
		int here = 0;
		for (int i = g; i < g + group; i++)
			here += ch->stripes[i].dev != NULL;
		present &= here > 0;
		if (ch->type & BG_PARITY)
			present = here >= ch->num_stripes - chunk_parity_count(ch->type);
	}
	if (!present) {
		core_log(c, "chunk at logical %llu (%s) has no copy on the devices given",
			 (unsigned long long)logical, core_profile_name(ch->type));
		free(ch);
		return -ENODEV;
	}
	ret = add_chunk(c, ch);
	if (ret == -EEXIST) {
		/* The sys_chunk_array and the chunk tree both name system chunks. */
		free(ch);
		return 0;
	}
	if (ret)
		free(ch);
	return ret;
}

/* Caller holds chunks.lock: the chunk holding all of [logical, +len), or NULL. */
static const struct chunk *covering_locked(struct core *c, uint64_t logical, uint64_t len)
{
	int i = find_locked(&c->chunks, logical);

	if (i < 0 || logical + len > c->chunks.v[i]->logical + c->chunks.v[i]->length)
		return NULL;
	return c->chunks.v[i];
}

int chunk_map_lookup(struct core *c, uint64_t logical, uint64_t len,
		     struct chunk_copy *copies, uint64_t *type)
{
	const struct chunk *ch;
	int n = 0;

	glock_read(&c->chunks.lock);
	ch = covering_locked(c, logical, len);
	if (!ch) {
		glock_read_unlock(&c->chunks.lock);
		return -EIO;
	}
	int idx[CHUNK_MAX_STRIPES], ns;
	uint64_t devoff;
	ns = chunk_stripe_map(ch->type, ch->num_stripes, logical - ch->logical, len, idx, &devoff);
	if (ns < 0) {
		glock_read_unlock(&c->chunks.lock);
		return -EIO;	/* crosses an element: chunk_map_piece first */
	}
	/* fresh devices first, then those whose superblock missed commits */
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < ns; k++) {
			const struct chunk_stripe *st = &ch->stripes[idx[k]];
			if (!st->dev || st->dev->stale != (pass == 1))
				continue;	/* missing device, or not this pass */
			copies[n].dev = st->dev;
			copies[n++].physical = st->physical + devoff;
		}
	if (type)
		*type = ch->type;
	glock_read_unlock(&c->chunks.lock);
	return n ? n : -EIO;
}

int chunk_map_lookup_write(struct core *c, uint64_t logical, uint64_t len,
			   struct chunk_copy *copies)
{
	const struct chunk *ch;
	int n = 0;

	glock_read(&c->chunks.lock);
	ch = covering_locked(c, logical, len);
	if (!ch) {
		glock_read_unlock(&c->chunks.lock);
		return -EIO;
	}
	for (int set = 0; set < (ch->num_new ? 2 : 1); set++) {
		const struct chunk_stripe *sv = set ? ch->new_stripes : ch->stripes;
		int idx[CHUNK_MAX_STRIPES], ns;
		uint64_t devoff;

		ns = set ? chunk_stripe_map(ch->new_type, ch->num_new, logical - ch->logical, len, idx, &devoff)
			 : chunk_stripe_map(ch->type, ch->num_stripes, logical - ch->logical, len, idx, &devoff);
		if (ns < 0) {
			n = 0;	/* crosses an element: chunk_map_piece first */
			break;
		}
		for (int s = 0; s < ns; s++) {
			const struct chunk_stripe *st = &sv[idx[s]];
			bool dup = false;
			for (int k = 0; k < n && set; k++)
				dup |= copies[k].dev == st->dev && copies[k].physical == st->physical + devoff;
			if (!st->dev || dup)
				continue;	/* missing, or a kept stripe written once */
			copies[n].dev = st->dev;
			copies[n++].physical = st->physical + devoff;
		}
	}
	glock_read_unlock(&c->chunks.lock);
	return n ? n : -EIO;
}

uint64_t chunk_map_piece(struct core *c, uint64_t logical, uint64_t len)
{
	const struct chunk *ch;
	uint64_t n = len;

	glock_read(&c->chunks.lock);
	ch = covering_locked(c, logical, 1);
	if (ch && (ch->type & BG_RAID10)) {
		uint64_t left = CHUNK_STRIPE_LEN - (logical - ch->logical) % CHUNK_STRIPE_LEN;
		n = left < len ? left : len;
	} else if (ch) {
		/* every profile ends at the chunk's end (parity_read takes
		 * any range inside it): a file read joins extents that lie
		 * back to back on disk into one range (fs/items/file.c
		 * read_run), and two such extents may sit in two chunks
		 * whose logical ranges touch — a chunk split to fit between
		 * two extents, or a file that filled one chunk to its end
		 * and went on at the next one's start.  Cutting only raid10
		 * elements, a 1 MiB read piece straddled that boundary and
		 * the read failed -EIO ("not inside one chunk"). */
		uint64_t left = ch->logical + ch->length - logical;
		n = left < len ? left : len;
	}
	glock_read_unlock(&c->chunks.lock);
	return n;
}

int chunk_map_geometry(struct core *c, uint64_t logical, struct chunk_geom *g)
{
	const struct chunk *ch;
	int ret = -EIO;

	glock_read(&c->chunks.lock);
	ch = covering_locked(c, logical, 1);
	if (ch) {
		g->logical = ch->logical;
		g->length = ch->length;
		g->type = ch->type;
		g->num_stripes = ch->num_stripes;
		g->nparity = chunk_parity_count(ch->type);
		g->ndata = (int)row_width(ch->type, ch->num_stripes);
		for (int i = 0; i < ch->num_stripes; i++)
			g->stripes[i] = (struct chunk_copy){ ch->stripes[i].dev, ch->stripes[i].physical };
		ret = 0;
	}
	glock_read_unlock(&c->chunks.lock);
	return ret;
}

bool chunk_map_is_parity(struct core *c, uint64_t logical)
{
	const struct chunk *ch;
	bool p;

	glock_read(&c->chunks.lock);
	ch = covering_locked(c, logical, 1);
	p = ch && (ch->type & BG_PARITY);
	glock_read_unlock(&c->chunks.lock);
	return p;
}

/* chunk_cut_unit: a cut leaves every stripe's piece whole elements. */
static uint64_t cut_unit(const struct chunk *ch)
{
	return (ch->type & (BG_RAID10 | BG_PARITY)) ?
	       row_width(ch->type, ch->num_stripes) * elem_len(ch->type) : CORE_SECTORSIZE;
}

uint64_t chunk_cut_unit(struct core *c, uint64_t logical)
{
	const struct chunk *ch;
	uint64_t u = 0;

	glock_read(&c->chunks.lock);
	ch = covering_locked(c, logical, 1);
	if (ch)
		u = cut_unit(ch);
	glock_read_unlock(&c->chunks.lock);
	return u;
}

uint64_t chunk_row_bytes(struct core *c, uint64_t logical)
{
	const struct chunk *ch;
	uint64_t r = CORE_SECTORSIZE;

	glock_read(&c->chunks.lock);
	ch = covering_locked(c, logical, 1);
	if (ch && (ch->type & BG_PARITY))
		r = row_width(ch->type, ch->num_stripes) * CORE_SECTORSIZE;
	glock_read_unlock(&c->chunks.lock);
	return r;
}

int chunk_map_stripes(struct core *c, uint64_t logical, struct chunk_copy *out)
{
	const struct chunk *ch;
	int n = -ENOENT;

	glock_read(&c->chunks.lock);
	ch = covering_locked(c, logical, 1);
	if (ch && ch->logical == logical) {
		n = ch->num_stripes;
		for (int i = 0; i < n; i++)
			out[i] = (struct chunk_copy){ ch->stripes[i].dev, ch->stripes[i].physical };
	}
	glock_read_unlock(&c->chunks.lock);
	return n;
}

int chunk_for_each(struct core *c, int (*fn)(const struct chunk *ch, void *arg), void *arg)
{
	int ret = 0;

	glock_read(&c->chunks.lock);
	for (int i = 0; i < c->chunks.n && !ret; i++)
		ret = fn(c->chunks.v[i], arg);
	glock_read_unlock(&c->chunks.lock);
	return ret;
}

/* ---- superblock bootstrap -------------------------------------------- */

int chunk_load_sys_array(struct core *c, const struct super_block *sb)
{
	uint32_t off = 0, size = sb->sys_chunk_array_size;

	if (size > SYS_CHUNK_ARRAY_SIZE)
		return -EUCLEAN;
	while (off < size) {
		struct disk_key k;
		const struct chunk_item *ci;
		uint32_t isz;
		int ret;

		if (size - off < sizeof(k) + sizeof(*ci))
			return -EUCLEAN;
		memcpy(&k, sb->sys_chunk_array + off, sizeof(k));
		off += sizeof(k);
		ci = (const struct chunk_item *)(sb->sys_chunk_array + off);
		if (ci->num_stripes == 0 || ci->num_stripes > CHUNK_MAX_STRIPES)
			return -EUCLEAN;
		isz = (uint32_t)CHUNK_ITEM_SIZE(ci->num_stripes);
		if (size - off < isz || k.type != KEY_CHUNK_ITEM)
			return -EUCLEAN;
		ret = chunk_map_insert(c, k.offset, ci, isz);
		if (ret)
			return ret;
		off += isz;
	}
	return 0;
}

void chunk_fill_item(const struct chunk *ch, struct chunk_item *ci)
{
	ci->length = ch->length;
	ci->owner = EXTENT_TREE_OBJECTID;
	ci->stripe_len = elem_len(ch->type);
	ci->type = ch->type;
	ci->io_align = ci->io_width = ci->sector_size = CORE_SECTORSIZE;
	ci->num_stripes = (uint16_t)ch->num_stripes;
	ci->sub_stripes = (ch->type & BG_RAID10) ? 2 : 1;
	for (int i = 0; i < ch->num_stripes; i++) {
		ci->stripes[i].devid = ch->stripes[i].devid;
		ci->stripes[i].offset = ch->stripes[i].physical;
		memcpy(ci->stripes[i].dev_uuid, ch->stripes[i].uuid, 16);
	}
}

int chunk_build_sys_array(struct core *c, struct super_block *sb)
{
	uint32_t off = 0;
	int ret = 0;

	memset(sb->sys_chunk_array, 0, sizeof(sb->sys_chunk_array));
	glock_read(&c->chunks.lock);
	for (int i = 0; i < c->chunks.n; i++) {
		const struct chunk *ch = c->chunks.v[i];
		struct disk_key k = { FIRST_CHUNK_OBJECTID, KEY_CHUNK_ITEM, ch->logical };
		uint32_t isz = (uint32_t)CHUNK_ITEM_SIZE(ch->num_stripes);

		if (!(ch->type & BG_SYSTEM))
			continue;
		if (off + sizeof(k) + isz > SYS_CHUNK_ARRAY_SIZE) {
			ret = -EFBIG;
			break;
		}
		memcpy(sb->sys_chunk_array + off, &k, sizeof(k));
		off += sizeof(k);
		chunk_fill_item(ch, (struct chunk_item *)(sb->sys_chunk_array + off));
		off += isz;
	}
	glock_read_unlock(&c->chunks.lock);
	sb->sys_chunk_array_size = off;
	return ret;
}

/* ---- creating chunks -------------------------------------------------- */

uint64_t chunk_default_size(const struct core *c, uint64_t type)
{
	uint64_t total = 0, sz;

	for (int i = 0; i < c->ndevs; i++)
		total += c->devs[i]->size;
	if (type & BG_SYSTEM)
		return total >= 4 * GiB ? 8 * MiB : (total >= GiB ? 4 * MiB : 2 * MiB);
	if (type & BG_METADATA) {
		sz = total / 16;
		if (sz < 8 * MiB)
			sz = 8 * MiB;
		if (sz > 256 * MiB)
			sz = 256 * MiB;
	} else {
		sz = total / 8;
		if (sz < 8 * MiB)
			sz = 8 * MiB;
		if (sz > GiB)
			sz = GiB;
	}
	return sz & ~(MiB - 1);
}

/* Ranges of d that chunks never use: the superblock copies' megabytes. */
static bool reserved_at(const struct dev *d, uint64_t off, uint64_t *end)
{
	static const uint64_t copies[SUPER_COPIES] = { 0, SUPER_MIRROR1, SUPER_MIRROR2 };

	for (int i = 0; i < SUPER_COPIES; i++) {
		uint64_t s = copies[i] & ~(SUPER_RESERVED - 1), e = s + SUPER_RESERVED;
		if (off >= s && off < e && s < d->size) {
			*end = e;
			return true;
		}
	}
	return false;
}

/* Caller holds chunks.lock.  Largest free gap of d (or the first one of
 * at least want bytes); returns its length, start in *start. */
static uint64_t dev_gap(const struct core *c, const struct dev *d, uint64_t want,
			uint64_t *start, uint64_t *total_free)
{
	uint64_t pos = 0, best = 0, best_start = 0, free_sum = 0;

	while (pos < d->size) {
		uint64_t next_used = d->size, used_end = 0, rend;

		if (reserved_at(d, pos, &rend)) {
			pos = rend;
			continue;
		}
		/* the nearest chunk stripe or reserved range at or after pos */
		for (int i = 0; i < c->chunks.n; i++) {
			const struct chunk *ch = c->chunks.v[i];
			for (int s = 0; s < all_stripes(ch); s++) {
				uint64_t ps = stripe_at(ch, s)->physical, pe = ps + span_at(ch, s);
				if (stripe_at(ch, s)->dev != d)
					continue;
				if (ps <= pos && pe > pos) {
					next_used = pos;
					used_end = pe;
				} else if (ps > pos && ps < next_used) {
					next_used = ps;
					used_end = pe;
				}
			}
		}
		for (uint64_t r = (pos + SUPER_RESERVED - 1) & ~(SUPER_RESERVED - 1);
		     r < next_used; r += SUPER_RESERVED) {
			if (reserved_at(d, r, &rend)) {
				next_used = r;
				used_end = rend;
				break;
			}
		}
		if (next_used > pos) {
			uint64_t gap = next_used - pos;
			free_sum += gap;
			if (gap > best && best < want) {
				best = gap;
				best_start = pos;
			}
		}
		if (next_used >= d->size)
			break;
		pos = used_end > next_used ? used_end : next_used + 1;
	}
	*start = best_start;
	if (total_free)
		*total_free = free_sum;
	return best;
}

static int cmp_range(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

int chunk_unallocated_ranges(struct core *c, const struct dev *d, uint64_t (*out)[2], int max)
{
	static const uint64_t sup[SUPER_COPIES] = { 0, SUPER_MIRROR1, SUPER_MIRROR2 };
	uint64_t (*used)[2];
	int nu = 0, n = 0, cap = SUPER_COPIES;
	uint64_t pos = 0;

	glock_read(&c->chunks.lock);
	for (int i = 0; i < c->chunks.n; i++)
		cap += all_stripes(c->chunks.v[i]);
	used = calloc((size_t)cap, sizeof(*used));
	if (!used) {
		glock_read_unlock(&c->chunks.lock);
		return -ENOMEM;
	}
	for (int i = 0; i < c->chunks.n; i++) {
		const struct chunk *ch = c->chunks.v[i];
		for (int s = 0; s < all_stripes(ch); s++)
			if (stripe_at(ch, s)->dev == d) {
				used[nu][0] = stripe_at(ch, s)->physical;
				used[nu++][1] = stripe_at(ch, s)->physical + span_at(ch, s);
			}
	}
	glock_read_unlock(&c->chunks.lock);
	for (int k = 0; k < SUPER_COPIES; k++) {
		uint64_t st = sup[k] & ~(SUPER_RESERVED - 1);
		if (st < d->size) {
			used[nu][0] = st;
			used[nu++][1] = st + SUPER_RESERVED;
		}
	}
	qsort(used, (size_t)nu, sizeof(*used), cmp_range);
	for (int i = 0; i <= nu && n < max; i++) {
		uint64_t next = i < nu ? used[i][0] : d->size;
		if (next > d->size)
			next = d->size;
		if (next > pos) {
			out[n][0] = pos;
			out[n++][1] = next - pos;
		}
		if (i < nu && used[i][1] > pos)
			pos = used[i][1];
	}
	free(used);
	return n;
}

uint64_t chunk_unallocated(struct core *c)
{
	uint64_t sum = 0;

	glock_read(&c->chunks.lock);
	for (int i = 0; i < c->ndevs; i++) {
		uint64_t st, f = 0;
		dev_gap(c, c->devs[i], ~0ull, &st, &f);
		sum += f;
	}
	glock_read_unlock(&c->chunks.lock);
	return sum;
}

/* A device's room for a new chunk (chunk_create). */
struct cand {
	struct dev *d;
	uint64_t len;		/* usable chunk length on it (dup: half its gap) */
	uint64_t start;		/* gap start */
	uint64_t free;		/* unallocated bytes on it */
};

/*
 * Pick the stripes of a chunk of profile prof among devices of one class
 * (pass 0: metadata/system on non-rotational, data on rotational devices;
 * pass 1: any device).  Caller holds chunks.lock for writing.  Returns
 * the chunk length (0 = no room) and fills ch's stripes.  whole (a
 * relocation, whose length is fixed): raid5/6 take fewer stripes when
 * size is not whole rows of them (a 4 MiB chunk is no whole number of
 * 3-sector raid5 rows; of 2-sector ones it is).
 */
static uint64_t pick_stripes(struct core *c, uint64_t type, uint64_t prof, uint64_t size,
			     int pass, const struct dev *exclude, const struct chunk_stripe *const *also,
			     int nalso, bool whole, struct chunk *ch)
{
	struct cand cv[CORE_MAX_DEVS], *a = NULL;
	int n = 0;
	bool want_rot = (type & BG_DATA) != 0;

	for (int i = 0; i < c->ndevs; i++) {
		struct dev *d = c->devs[i];
		uint64_t st, f, gap;

		bool kept = false;
		for (int k = 0; k < nalso; k++)
			kept |= also[k]->dev == d;
		if (d == exclude || kept || d->removing)
			continue;
		if (pass == 0 && d->rotational != want_rot)
			continue;
		gap = dev_gap(c, d, (prof & BG_DUP) ? 2 * size : size, &st, &f);
		cv[n] = (struct cand){ d, (prof & BG_DUP) ? (gap / 2) & ~(MiB - 1) : gap, st, f };
		n++;
	}
	for (int i = 0; i < n; i++) {
		/* the device with the most free space first (ties: longest gap) */
		struct cand *x = &cv[i];
		if (!x->len)
			continue;
		if (!a || x->free > a->free || (x->free == a->free && x->len > a->len))
			a = x;
	}
	if (!a)
		return 0;
	if (prof & (BG_RAID10 | BG_PARITY | BG_MIRROR)) {
		/* the roomiest devices: raid10 an even number (4 at least),
		 * raid5 3 at least, raid6 4 at least, a mirror one per copy */
		struct cand *pick[CHUNK_MAX_STRIPES];
		int k = 0;
		uint64_t per;

		for (; k < CHUNK_MAX_STRIPES; k++) {
			struct cand *best = NULL;
			for (int i = 0; i < n; i++) {
				bool taken = false;
				for (int j = 0; j < k; j++)
					taken |= pick[j] == &cv[i];
				if (taken || cv[i].len < MiB)
					continue;
				if (!best || cv[i].free > best->free ||
				    (cv[i].free == best->free && cv[i].len > best->len))
					best = &cv[i];
			}
			if (!best)
				break;
			pick[k] = best;
		}
		if (prof & BG_RAID10)
			k &= ~1;
		if ((prof & BG_MIRROR) && k > profile_copies(prof))
			k = profile_copies(prof);
		if (k < profile_min_devs(prof))
			return 0;
		while (whole && (prof & BG_PARITY) && k > profile_min_devs(prof) &&
		       size % (row_width(prof, k) * elem_len(prof)))
			k--;	/* pick[] is roomiest first: the last goes */
		uint64_t w = row_width(prof, k);
		per = size / w;
		for (int j = 0; j < k; j++)
			if (pick[j]->len < per)
				per = pick[j]->len;
		/* whole elements on each device (a new chunk then rounds to
		 * MiB; a relocated 1 MiB chunk takes 512 KiB on each of 2 pairs);
		 * a mirror's copy is the whole chunk */
		if (!(prof & BG_MIRROR))
			per -= per % elem_len(prof);
		else if (per > size)
			per = size;
		ch->num_stripes = k;
		for (int j = 0; j < k; j++) {
			ch->stripes[j].dev = pick[j]->d;
			ch->stripes[j].physical = pick[j]->start;
		}
		return per * w;
	}
	if (!(prof & BG_DUP)) {
		/* single: keep the longest gap among the roomiest devices */
		for (int i = 0; i < n; i++)
			if (cv[i].len > a->len && cv[i].len >= size)
				a = &cv[i];
	}
	uint64_t len = a->len > size ? size : a->len;
	ch->num_stripes = 1;
	ch->stripes[0].dev = a->d;
	ch->stripes[0].physical = a->start;
	if (prof & BG_DUP) {
		ch->num_stripes = 2;
		ch->stripes[1].dev = a->d;
		ch->stripes[1].physical = a->start + len;
	}
	return len;
}

int chunk_map_create(struct core *c, uint64_t type, const struct chunk **out)
{
	uint64_t prof = c->profile[core_type_index(type)] & BG_PROFILE_MASK;
	int copies = profile_copies(prof);
	uint64_t size = chunk_default_size(c, type), min = MiB;
	uint64_t meta_keep = (type & BG_DATA) ?
		chunk_default_size(c, BG_METADATA) *
		(uint64_t)profile_copies(c->profile[core_type_index(BG_METADATA)]) : 0;
	uint64_t len = 0, unalloc = 0, log_end = LOGICAL_START;
	struct chunk *ch;
	int ret;

	if ((prof & BG_PARITY) && c->ndevs < profile_min_devs(prof) &&
	    c->sb.num_devices > (uint64_t)c->ndevs) {
		/* degraded mount: mirrors (or a single copy) on what is there */
		uint64_t was = prof;
		prof = c->ndevs >= 2 ? BG_RAID1 : (type & BG_DATA) ? 0 : BG_DUP;
		copies = profile_copies(prof);
		core_log(c, "degraded: new %s chunk is %s, not %s", (type & BG_DATA) ? "data" : "metadata",
			 core_profile_name(prof), core_profile_name(was));
	}
	if ((prof & BG_RAID10) && c->ndevs < 4 && c->ndevs >= 2 &&
	    c->sb.num_devices > (uint64_t)c->ndevs) {
		/* degraded mount: mirrors on the devices there are */
		prof = BG_RAID1;
		copies = profile_copies(prof);
		core_log(c, "degraded: new %s chunk is raid1, not raid10; convert it back with "
			 "glassctl balance start -%cconvert=raid10 once every device is back",
			 (type & BG_DATA) ? "data" : "metadata", (type & BG_DATA) ? 'd' : 'm');
	}
	if ((prof & (BG_MIRROR | BG_RAID10)) && c->ndevs < profile_min_devs(prof) &&
	    c->sb.num_devices > (uint64_t)c->ndevs) {
		/* degraded mount: like btrfs, keep writing with what is there
		 * (raid1c3/raid1c4: as many copies as devices, one at least) */
		uint64_t was = prof;
		prof = c->ndevs >= 2 ? profile_mirror_of(c->ndevs) : (type & BG_DATA) ? 0 : BG_DUP;
		copies = profile_copies(prof);
		core_log(c, "degraded: new %s chunk is %s, not %s; convert it back with "
			 "glassctl balance start -%cconvert=%s once every device is back",
			 (type & BG_DATA) ? "data" : "metadata", core_profile_name(prof),
			 core_profile_name(was), (type & BG_DATA) ? 'd' : 'm', core_profile_name(was));
	}
	if (c->ndevs < profile_min_devs(prof)) {
		core_log(c, "%s %s chunks need at least %d devices, the volume has %d",
			 core_profile_name(prof), (type & BG_DATA) ? "data" : "metadata",
			 profile_min_devs(prof), c->ndevs);
		return -EINVAL;
	}
	if ((prof & BG_PARITY) && size < 6 * MiB)
		size = 6 * MiB;	/* whole MiB on 2 or 3 data stripes (a small system chunk) */
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	glock_write(&c->chunks.lock);
	for (int i = 0; i < c->ndevs; i++) {
		uint64_t st, f;
		dev_gap(c, c->devs[i], ~0ull, &st, &f);
		unalloc += f;
	}
	for (int pass = 0; pass < 2; pass++) {
		len = pick_stripes(c, type, prof, size, pass, NULL, NULL, 0, false, ch);
		if (type & BG_DATA) {
			/* leave room for one more metadata chunk, so a filesystem
			 * full of data can still grow its metadata (unlink needs it) */
			uint64_t room = unalloc > meta_keep ? unalloc - meta_keep : 0;
			if (len * (uint64_t)copies > room)
				len = room / (uint64_t)copies;
		}
		/* whole MiB on each device (raid10: whole rows too) */
		len = ch->num_stripes ? len - len % (row_width(prof, ch->num_stripes) * MiB) : 0;
		if (len >= min)
			break;
	}
	if (len < min) {
		glock_write_unlock(&c->chunks.lock);
		free(ch);
		return -ENOSPC;
	}
	for (int i = 0; i < c->chunks.n; i++) {
		uint64_t e = c->chunks.v[i]->logical + c->chunks.v[i]->length;
		if (e > log_end)
			log_end = e;
	}
	ch->logical = (log_end + MiB - 1) & ~(MiB - 1);
	ch->length = len;
	ch->type = type | prof;
	for (int i = 0; i < ch->num_stripes; i++) {
		ch->stripes[i].devid = ch->stripes[i].dev->devid;
		memcpy(ch->stripes[i].uuid, ch->stripes[i].dev->uuid, 16);
	}
	ret = insert_locked(&c->chunks, ch);
	glock_write_unlock(&c->chunks.lock);
	if (ret) {
		free(ch);
		return ret;
	}
	ret = alloc_add_bg(c, ch->logical, ch->length, type, true);
	if (ret)
		return ret;
	*out = ch;
	return 0;
}

/* Profiles of new chunks: those of the newest chunk of each type. */
static int note_profile(const struct chunk *ch, void *arg)
{
	struct core *c = arg;
	c->profile[core_type_index(ch->type)] = ch->type & BG_PROFILE_MASK;
	return 0;
}

void chunk_load_profiles(struct core *c)
{
	chunk_for_each(c, note_profile, c);
}

/* ---- relocation (driven by fs/services/volume_reloc.c) ------------------------ */

static struct chunk *find_chunk_locked(struct core *c, uint64_t logical)
{
	int i = find_locked(&c->chunks, logical);

	return i >= 0 && c->chunks.v[i]->logical == logical ? c->chunks.v[i] : NULL;
}

int chunk_reloc_begin(struct core *c, uint64_t logical, uint64_t prof, const struct dev *exclude,
		      struct chunk_stripe *out, int *nout, int *nkeep, uint64_t *length,
		      uint64_t *fit)
{
	struct chunk *ch, tmp;
	uint64_t len = 0;
	int usable = 0, ret = 0;

	prof &= BG_PROFILE_MASK;
	*fit = 0;
	glock_write(&c->chunks.lock);
	ch = find_chunk_locked(c, logical);
	if (!ch || ch->num_new || ch->num_retired) {
		ret = ch ? -EBUSY : -ENOENT;
		goto out;
	}
	for (int i = 0; i < c->ndevs; i++)
		usable += c->devs[i] != exclude && !c->devs[i]->removing;
	if (usable < profile_min_devs(prof)) {
		ret = -EINVAL;
		goto out;
	}
	/*
	 * A conversion keeps the stripes that can stay: to single, one copy
	 * of the old ones (nothing to copy); to raid1, raid1c3 or raid1c4,
	 * up to as many old copies as it has, on devices of their own, plus
	 * new stripes on other devices for the rest (raid1 -> raid1c3 copies
	 * one, raid1c3 -> raid1 none).  So does a mirrored chunk that lost a
	 * copy with a missing device (device remove missing).  Everything
	 * else gets all new stripes (a raid10 stripe holds half the chunk, a
	 * raid5/6 stripe a column of each row: never kept; a raid5/6 target
	 * is written whole rows at a time, volume_reloc.c).
	 */
	const struct chunk_stripe *keep[CHUNK_MAX_STRIPES];
	int nk = 0, want = (prof & BG_MIRROR) ? profile_copies(prof) : 1;
	uint64_t cur = ch->type & BG_PROFILE_MASK;
	bool missing = false;	/* rebuilding a copy a missing device had */
	for (int i = 0; i < ch->num_stripes; i++)
		missing |= !ch->stripes[i].dev;
	if ((prof != cur || missing) && (prof == 0 || (prof & BG_MIRROR)) &&
	    !(cur & (BG_RAID10 | BG_PARITY)))
		for (int i = 0; i < ch->num_stripes && nk < want; i++) {
			const struct dev *d = ch->stripes[i].dev;
			bool twice = false;	/* dup: both stripes on one device */
			for (int k = 0; k < nk; k++)
				twice |= keep[k]->dev == d;
			if (d && d != exclude && !d->removing && !d->stale && !twice)
				keep[nk++] = &ch->stripes[i];
		}
	memset(&tmp, 0, sizeof(tmp));
	if (nk == want) {
		len = ch->length;	/* every copy kept: nothing to pick */
	} else {
		for (int pass = 0; pass < 2; pass++) {
			memset(&tmp, 0, sizeof(tmp));
			len = pick_stripes(c, ch->type, nk ? profile_mirror_of(want - nk) : prof,
					   ch->length, pass, exclude, keep, nk, true, &tmp);
			if (len >= ch->length)
				break;
		}
	}
	*length = ch->length;
	if (len < ch->length) {
		*fit = len & ~(MiB - 1);
		ret = -ENOSPC;
		goto out;
	}
	int n = 0;
	for (; n < nk; n++)
		ch->new_stripes[n] = *keep[n];
	*nkeep = n;
	for (int i = 0; i < tmp.num_stripes; i++, n++) {
		ch->new_stripes[n] = tmp.stripes[i];
		ch->new_stripes[n].devid = tmp.stripes[i].dev->devid;
		memcpy(ch->new_stripes[n].uuid, tmp.stripes[i].dev->uuid, 16);
	}
	memcpy(out, ch->new_stripes, (size_t)n * sizeof(*out));
	ch->new_type = (ch->type & ~BG_PROFILE_MASK) | prof;
	ch->num_new = n;	/* reserved from here on (dev_gap) */
	*nout = n;
out:
	glock_write_unlock(&c->chunks.lock);
	return ret;
}

/* Forget the chunk's new (abort) or retired (done) stripes. */
static void reloc_forget(struct core *c, uint64_t logical, bool retired)
{
	struct chunk *ch;

	glock_write(&c->chunks.lock);
	ch = find_chunk_locked(c, logical);
	if (ch && retired)
		ch->num_retired = 0;
	else if (ch)
		ch->num_new = 0;
	glock_write_unlock(&c->chunks.lock);
}

void chunk_reloc_abort(struct core *c, uint64_t logical)
{
	reloc_forget(c, logical, false);
}

int chunk_reloc_switch_map(struct core *c, uint64_t logical, struct chunk **out)
{
	struct chunk *ch;

	glock_write(&c->chunks.lock);
	ch = find_chunk_locked(c, logical);
	if (!ch || !ch->num_new) {
		glock_write_unlock(&c->chunks.lock);
		return -ENOENT;
	}
	memcpy(ch->retired_stripes, ch->stripes, sizeof(ch->stripes));
	ch->num_retired = ch->num_stripes;
	ch->retired_type = ch->type;
	memcpy(ch->stripes, ch->new_stripes, sizeof(ch->stripes));
	ch->num_stripes = ch->num_new;
	ch->num_new = 0;
	ch->type = ch->new_type;
	glock_write_unlock(&c->chunks.lock);
	*out = ch;
	return 0;
}

void chunk_reloc_done(struct core *c, uint64_t logical)
{
	reloc_forget(c, logical, true);
}

/*
 * The in-memory half of chunk_split (fs/trees/chunk_tree.c): the
 * allocator's block group first, then the map.  *first and *rest are the
 * two halves in the map; a failure after the block group split aborts t.
 */
int chunk_split_map(struct txn *t, uint64_t logical, uint64_t at, struct chunk **first,
		    struct chunk **restp)
{
	struct core *c = txn_core(t);
	struct chunk *ch, *rest = calloc(1, sizeof(*rest));
	uint64_t len = 0;
	int ret = 0;

	if (!rest)
		return -ENOMEM;
	glock_read(&c->chunks.lock);
	ch = find_chunk_locked(c, logical);
	if (!ch || ch->num_new || ch->num_retired)
		ret = ch ? -EBUSY : -ENOENT;
	else if ((ch->type & BG_SYSTEM) || !at || at >= ch->length || at % cut_unit(ch))
		ret = -EINVAL;	/* system chunks stay whole: the superblock lists them */
	else
		len = ch->length;
	glock_read_unlock(&c->chunks.lock);
	if (!ret)
		ret = alloc_split_bg(c, logical, at);
	if (ret) {
		free(rest);
		return ret;
	}
	/* relocations run one at a time and nothing else changes a chunk's
	 * range: ch is still the one checked above */
	glock_write(&c->chunks.lock);
	ch = find_chunk_locked(c, logical);
	*rest = *ch;
	rest->logical = logical + at;
	rest->length = len - at;
	/*
	 * A raid5/6 row r keeps column j on stripe (r + j) % n (parity.c's
	 * stripe_of): the rest's rows count from 0 again, so its stripes
	 * turn by the rows cut off, or each row's columns would be read
	 * from the wrong devices (a cut after R rows, R no multiple of n:
	 * a three-device raid5 cut at most MiB boundaries).
	 */
	uint64_t w = row_width(ch->type, ch->num_stripes), n = (uint64_t)ch->num_stripes;
	uint64_t turn = (ch->type & BG_PARITY) ? at / (w * CORE_SECTORSIZE) % n : 0;
	for (int i = 0; i < rest->num_stripes; i++) {
		rest->stripes[i] = ch->stripes[(i + turn) % n];
		rest->stripes[i].physical += at / w;
	}
	ch->length = at;
	ret = insert_locked(&c->chunks, rest);	/* room: it was ch's */
	if (ret)
		ch->length = len;
	glock_write_unlock(&c->chunks.lock);
	if (ret) {
		free(rest);
		txn_abort(t, ret, "chunk split: the chunk map");	/* the allocator is split */
		return ret;
	}
	*first = ch;
	*restp = rest;
	return 0;
}

/* ---- flushing with redundancy (chunk.h) ------------------------------------ */

struct flush_cover {
	const struct dev *failed[CORE_MAX_DEVS];
	int nfailed;
	uint64_t lost, lost_logical;	/* chunks with no copy that flushed */
};

static int flush_covered(const struct chunk *ch, void *arg)
{
	struct flush_cover *fc = arg;
	int group = (ch->type & BG_RAID10) ? 2 : ch->num_stripes, lost = 0;

	/* every mirror set (raid10: each pair) keeps a copy that flushed;
	 * raid5/6 all but one / two stripes */
	for (int g = 0; g < ch->num_stripes; g += group) {
		int good = 0;
		for (int i = g; i < g + group; i++) {
			const struct dev *d = ch->stripes[i].dev;
			bool bad = !d;
			for (int k = 0; k < fc->nfailed && !bad; k++)
				bad = fc->failed[k] == d;
			good += !bad;
		}
		lost |= (ch->type & BG_PARITY) ?
			good < ch->num_stripes - chunk_parity_count(ch->type) : !good;
	}
	if (lost && !fc->lost++)
		fc->lost_logical = ch->logical;
	return 0;
}

int chunk_flush_devs(struct core *c, const char *what)
{
	struct flush_cover fc = { .nfailed = 0 };
	int err[CORE_MAX_DEVS], res[CORE_MAX_DEVS], first = 0;
	int n = __atomic_load_n(&c->ndevs, __ATOMIC_ACQUIRE);

	_Static_assert(CORE_MAX_DEVS <= DEV_FLUSH_ALL_MAX, "dev_flush_all takes every device");
	/* at the same time: a mirror waits for its slowest device, not the sum */
	dev_flush_all(c->devs, n, res);
	for (int i = 0; i < n; i++) {
		int r = res[i];
		if (!r)
			continue;
		if (!first)
			first = r;
		err[fc.nfailed] = r;
		fc.failed[fc.nfailed++] = c->devs[i];
	}
	if (!fc.nfailed)
		return 0;
	if (n == 1)
		return first;	/* nothing to fall back on: the caller says it */
	chunk_for_each(c, flush_covered, &fc);
	if (fc.lost) {
		core_log(c, "%s: flush failed on %s (%s), and %llu chunk%s (the first at logical %llu) "
			 "had no copy on a device that flushed", what, fc.failed[0]->path,
			 strerror(-first), (unsigned long long)fc.lost, fc.lost > 1 ? "s" : "",
			 (unsigned long long)fc.lost_logical);
		return first;
	}
	glock_write(&c->chunks.lock);
	for (int k = 0; k < fc.nfailed; k++)
		((struct dev *)fc.failed[k])->stale = true;	/* read its copies last */
	glock_write_unlock(&c->chunks.lock);
	for (int k = 0; k < fc.nfailed; k++) {
		struct dev *d = (struct dev *)fc.failed[k];
		__atomic_fetch_add(&c->degraded, 1, __ATOMIC_RELAXED);
		if (!__atomic_exchange_n(&d->flush_failed, 1, __ATOMIC_RELAXED))
			core_log(c, "%s: flush failed on %s: %s; degraded: going on with the copies on "
				 "the other devices (%s is read last and resynced at the next full mount)",
				 what, d->path, strerror(-err[k]), d->path);
	}
	return 0;
}
