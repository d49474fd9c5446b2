// SPDX-License-Identifier: MIT
/*
 * core.c — the floor every layer stands on: logging, the one corruption
 * helper, option parsing, the trees the core knows by id, accessors.
 * Calls nothing above fs/core (tests/unit/layers.test).
 */
#include "fs/core/core_types.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint64_t tree_ids[CT_NR] = {
	[CT_ROOT] = ROOT_TREE_OBJECTID, [CT_CHUNK] = CHUNK_TREE_OBJECTID,
	[CT_EXTENT] = EXTENT_TREE_OBJECTID, [CT_DEV] = DEV_TREE_OBJECTID,
	[CT_CSUM] = CSUM_TREE_OBJECTID, [CT_FST] = FREE_SPACE_TREE_OBJECTID,
	[CT_FS] = FS_TREE_OBJECTID,
};

uint64_t core_tree_id(enum core_tree t) { return tree_ids[t]; }
struct root *core_tree(struct core *c, enum core_tree t) { return &c->roots[t].r; }

/* Set by every message: mount_open() and mount_format() clear it first
 * (core_report_reset), so after a failure it tells whether the reason was
 * printed. */
static __thread bool reported;

bool core_failure_reported(void)
{
	return reported;
}

void core_report_reset(void)
{
	reported = false;
}

void core_log(struct core *c, const char *fmt, ...)
{
	va_list ap;
	char buf[512];

	reported = true;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "glassfs%s%s: %s\n", c && c->ndevs ? " " : "",
		c && c->ndevs ? c->devs[0]->path : "", buf);
}

void core_corrupt(struct core *c, const char *where, const char *fmt, ...)
{
	va_list ap;
	char buf[400];
	int zero = 0;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	core_log(c, "corruption in %s: %s", where, buf);
	__atomic_compare_exchange_n(&c->aborted, &zero, -EUCLEAN, false, __ATOMIC_SEQ_CST,
				    __ATOMIC_SEQ_CST);
}

_Static_assert(CORE_PROFILE_RAID1 == BG_RAID1 && CORE_PROFILE_DUP == BG_DUP &&
	       CORE_PROFILE_RAID10 == BG_RAID10 && CORE_PROFILE_RAID5 == BG_RAID5 &&
	       CORE_PROFILE_RAID6 == BG_RAID6 && CORE_PROFILE_RAID1C3 == BG_RAID1C3 &&
	       CORE_PROFILE_RAID1C4 == BG_RAID1C4,
	       "core.h profiles are the BG_* bits");

int core_profile_parse(const char *s, uint64_t *out)
{
	if (!s)
		return -EINVAL;
	if (strcmp(s, "single") == 0)
		*out = CORE_PROFILE_SINGLE;
	else if (strcmp(s, "dup") == 0)
		*out = CORE_PROFILE_DUP;
	else if (strcmp(s, "raid1") == 0)
		*out = CORE_PROFILE_RAID1;
	else if (strcmp(s, "raid1c3") == 0)
		*out = CORE_PROFILE_RAID1C3;
	else if (strcmp(s, "raid1c4") == 0)
		*out = CORE_PROFILE_RAID1C4;
	else if (strcmp(s, "raid10") == 0)
		*out = CORE_PROFILE_RAID10;
	else if (strcmp(s, "raid5") == 0)
		*out = CORE_PROFILE_RAID5;
	else if (strcmp(s, "raid6") == 0)
		*out = CORE_PROFILE_RAID6;
	else
		return -EINVAL;
	return 0;
}

const char *core_profile_name(uint64_t p)
{
	p &= BG_PROFILE_MASK;
	return p == BG_RAID1 ? "raid1" : p == BG_RAID1C3 ? "raid1c3" : p == BG_RAID1C4 ? "raid1c4" :
	       p == BG_DUP ? "dup" : p == BG_RAID10 ? "raid10" :
	       p == BG_RAID5 ? "raid5" : p == BG_RAID6 ? "raid6" : p == 0 ? "single" : "unknown";
}

int core_discard_parse(const char *s)
{
	if (!s)
		return -EINVAL;
	if (strcmp(s, "off") == 0 || strcmp(s, "nodiscard") == 0)
		return CORE_DISCARD_OFF;
	if (strcmp(s, "sync") == 0)
		return CORE_DISCARD_SYNC;
	if (strcmp(s, "async") == 0)
		return CORE_DISCARD_ASYNC;
	return -EINVAL;
}

void core_opts_default(struct core_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->commit_interval_s = 30;
	o->locktype = GLOCK_RWLOCK;
	o->lock_groups = 0;
	o->cache_bytes = 256ull << 20;
	o->dirty_thresh_bytes = 64ull << 20;
}

/* ---- accessors ------------------------------------------------------------ */

uint32_t core_nodesize(const struct core *c) { return c->nodesize; }
const char *core_label(const struct core *c) { return c->sb.label; }
const uint8_t *core_fsid(const struct core *c) { return c->sb.fsid; }
bool core_readonly(const struct core *c) { return c->readonly || c->aborted; }
struct node_cache *core_cache(struct core *c) { return c->cache; }
const struct meta_ops *core_meta_ops(const struct core *c) { return c->meta_ops; }
uint64_t core_generation(const struct core *c) { return c->generation; }

void core_lock_scheme(const struct core *c, enum glock_type *type, unsigned *groups)
{
	*type = c->opts.locktype;
	*groups = c->opts.lock_groups;
}

bool core_cow_lock_path(const struct core *c)
{
	return c->opts.cow_lock_path;
}
