// SPDX-License-Identifier: MIT
/*
 * subvol.c — subvolumes and snapshots (see subvol.h for the design): the
 * subvolume table (an fsctx per open subvolume), linking names in parent
 * directories, the permission checks and the create, snapshot, delete,
 * info and list operations.  The roots, root items and the cleaner are
 * subvol_root.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "fs/core/core_types.h"
#include "fs/btree/meta.h"
#include "fs/trees/extent.h"
#include "fs/txn/txn.h"
#include "fs/items/subvol.h"
#include "fs/items/inode.h"
#include "fs/items/dir.h"
#include "fs/base/probe.h"

/*
 * Open fs trees by id: a two-level table read without a lock (pointers are
 * published with release stores and never change or go away before
 * unmount), so operations in different subvolumes share nothing on their
 * way to their own tree.  The lock serialises opening.
 */
#define SV_CHUNK 256
#define SV_CHUNKS ((int)((SUBVOL_MAX_ID + 1) / SV_CHUNK))

struct subvols {
	struct glock lock;		/* GLOCK_CLASS_MISC: opening a tree */
	struct core_opts opts;
	struct fsctx *deflt;
	struct fsctx **chunk[SV_CHUNKS];
};

/*
 * Open every live subvolume now (at mount, and a new one as it is made):
 * opening frees orphans in a transaction of its own, which must not happen
 * under a lookup or readdir that holds the parent tree's locks.
 */
static void open_all(struct fsctx *deflt)
{
	struct core_subvols *s = &deflt->core->subvols;
	uint64_t *ids;
	int n = 0;

	glock_write(&s->lock);
	ids = calloc((size_t)s->n + 1, sizeof(*ids));
	for (int i = 0; ids && i < s->n; i++)
		if (!s->v[i]->gone && !(s->v[i]->flags & ROOT_F_DEAD))
			ids[n++] = s->v[i]->cr.r.id;
	glock_write_unlock(&s->lock);
	for (int i = 0; i < n; i++)
		subvol_fs(deflt, ids[i]);
	free(ids);
}

int subvol_table_init(struct fsctx *deflt, const struct core_opts *o)
{
	struct subvols *svs = calloc(1, sizeof(*svs));

	if (!svs)
		return -ENOMEM;
	glock_init(&svs->lock, GLOCK_MUTEX, GLOCK_CLASS_MISC, 0, -1, -1);
	svs->opts = *o;
	svs->deflt = deflt;
	deflt->svs = svs;
	open_all(deflt);
	return 0;
}

void subvol_table_destroy(struct fsctx *deflt)
{
	struct subvols *svs = deflt->svs;

	if (!svs)
		return;
	for (int c = 0; c < SV_CHUNKS; c++) {
		for (int i = 0; svs->chunk[c] && i < SV_CHUNK; i++) {
			struct fsctx *fs = svs->chunk[c][i];
			if (fs) {
				inode_cache_destroy(fs);
				free(fs);
			}
		}
		free(svs->chunk[c]);
	}
	free(svs);
	deflt->svs = NULL;
}

/* A context for a subvolume that is gone: every inode_get is ENOENT. */
static struct fsctx *dead_fs(struct fsctx *any, uint64_t id)
{
	struct fsctx *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return NULL;
	fs->core = any->core;
	fs->root = any->svs->deflt->root;	/* labels only: never searched */
	fs->locktype = any->locktype;
	fs->readonly = true;
	fs->dead = true;
	fs->subvol = id;
	fs->ino_base = subvol_nodeid(id, 0);
	fs->svs = any->svs;
	if (inode_cache_init(fs) < 0) {
		free(fs);
		return NULL;
	}
	return fs;
}

struct fsctx *subvol_fs(struct fsctx *any, uint64_t id)
{
	struct subvols *svs = any->svs;
	struct fsctx **ch, *fs;

	if (id == FS_TREE_OBJECTID || !svs)
		return svs ? svs->deflt : any;
	if (id > SUBVOL_MAX_ID)
		id = 0;		/* no such subvolume: slot 0 holds a dead context */
	ch = __atomic_load_n(&svs->chunk[id / SV_CHUNK], __ATOMIC_ACQUIRE);
	fs = ch ? __atomic_load_n(&ch[id % SV_CHUNK], __ATOMIC_ACQUIRE) : NULL;
	if (fs)
		return fs;
	glock_write(&svs->lock);
	ch = svs->chunk[id / SV_CHUNK];
	if (!ch) {
		ch = calloc(SV_CHUNK, sizeof(*ch));
		if (!ch)
			goto out;
		__atomic_store_n(&svs->chunk[id / SV_CHUNK], ch, __ATOMIC_RELEASE);
	}
	fs = ch[id % SV_CHUNK];
	if (fs)
		goto out;
	if (id < FIRST_SUBVOL_OBJECTID ||
	    fsctx_mount_tree(any->core, &svs->opts, id,
			     (subvol_flags(any->core, id) & ROOT_F_RDONLY) != 0, &fs) < 0)
		fs = dead_fs(any, id);
	if (fs) {
		fs->svs = svs;
		__atomic_store_n(&ch[id % SV_CHUNK], fs, __ATOMIC_RELEASE);
	}
out:
	glock_write_unlock(&svs->lock);
	/* out of memory: a context nobody can use rather than NULL */
	return fs ? fs : svs->deflt;
}

/* ---- helpers ------------------------------------------------------------- */

/* What the kernel asks before creating or removing in dir: write and
 * search permission (root passes). */
static int may_change(const struct inode *dp, const struct fsops_cred *cr)
{
	uint32_t mode = dp->item.mode, bits;

	if (cr->uid == 0)
		return 0;
	bits = cr->uid == dp->item.uid ? mode >> 6 : cr->gid == dp->item.gid ? mode >> 3 : mode;
	return (bits & 3) == 3 ? 0 : -EACCES;
}

static int check_subvol_name(const char *name, size_t *len)
{
	*len = strnlen(name, GLASSFS_SUBVOL_NAME_MAX + 1);
	if (*len == 0 || strchr(name, '/'))
		return -EINVAL;
	if (*len > GLASSFS_SUBVOL_NAME_MAX)
		return -ENAMETOOLONG;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return -EEXIST;
	return 0;
}

static int alloc_id(struct core *c, uint64_t *id)
{
	struct core_subvols *s = &c->subvols;
	int ret = 0;

	glock_write(&s->lock);
	if (s->next_id > SUBVOL_MAX_ID)
		ret = -ENOSPC;
	else
		*id = s->next_id++;
	glock_write_unlock(&s->lock);
	return ret;
}

static int root_refs_add(struct txn *t, uint64_t parent, uint64_t id, uint64_t dirid,
			 uint64_t index, const char *name, size_t len)
{
	struct core *c = txn_core(t);
	char buf[sizeof(struct root_ref) + GLASSFS_SUBVOL_NAME_MAX];
	struct root_ref *rr = (void *)buf;
	struct key k = { parent, KEY_ROOT_REF, id };
	int ret;

	rr->dirid = dirid;
	rr->index = index;
	rr->name_len = (uint16_t)len;
	memcpy(rr->name, name, len);
	ret = btree_insert(t, core_tree(c, CT_ROOT), &k, buf, (uint32_t)(sizeof(*rr) + len));
	if (ret)
		return ret;
	k = (struct key){ id, KEY_ROOT_BACKREF, parent };
	return btree_insert(t, core_tree(c, CT_ROOT), &k, buf, (uint32_t)(sizeof(*rr) + len));
}

static int root_refs_del(struct txn *t, uint64_t parent, uint64_t id)
{
	struct core *c = txn_core(t);
	struct key k = { parent, KEY_ROOT_REF, id };
	int ret = btree_delete(t, core_tree(c, CT_ROOT), &k);

	if (ret && ret != -ENOENT)
		return ret;
	k = (struct key){ id, KEY_ROOT_BACKREF, parent };
	ret = btree_delete(t, core_tree(c, CT_ROOT), &k);
	return ret == -ENOENT ? 0 : ret;
}

bool subvol_extent_exclusive(struct fsctx *fs, uint64_t disk_logical)
{
	uint64_t ls = __atomic_load_n(&fs->root->last_snapshot, __ATOMIC_RELAXED), len;
	struct extent_item ei;
	int ret;

	if (!ls)
		return true;
	ret = extent_lookup(fs->core, disk_logical, true, &ei, &len);
	if (ret == -ENOENT)
		return true;	/* allocated in the running transaction */
	return ret == 0 && ei.generation > ls;
}

bool subvol_linked(struct fsctx *fs, uint64_t dir, uint64_t id)
{
	char buf[sizeof(struct root_ref) + GLASSFS_SUBVOL_NAME_MAX];
	struct key k = { fs->subvol, KEY_ROOT_REF, id };
	int ret = btree_lookup(core_tree(fs->core, CT_ROOT), &k, buf, sizeof(buf));

	return ret >= (int)sizeof(struct root_ref) && ((struct root_ref *)buf)->dirid == dir;
}

/* Does subvolume id hold other subvolumes (a ROOT_REF from it)? */
static int has_children(struct core *c, uint64_t id)
{
	struct key k = { id, KEY_ROOT_REF, 0 }, ik;
	struct path p;
	int ret;

	btree_path_init(&p);
	ret = btree_search(NULL, core_tree(c, CT_ROOT), &k, &p, 0, 0);
	if (ret >= 0 && p.slots[0] >= (int)btree_nritems(&p))
		ret = btree_next(&p) ? 1 : 0;
	if (ret >= 0 && p.nodes[0] && p.slots[0] < (int)btree_nritems(&p)) {
		btree_item_key(&p, p.slots[0], &ik);
		ret = ik.objectid == id && ik.type == KEY_ROOT_REF;
	} else if (ret > 0) {
		ret = 0;
	}
	btree_path_release(&p);
	return ret;
}

/* Link subvolume id as name in dp (locked, in t): entry, nlink, refs. */
static int link_subvol(struct txn *t, struct fsctx *pfs, struct inode *dp, const char *name,
		       size_t len, uint64_t id)
{
	uint64_t index = dp->item.dir_seq;
	int ret = dir_add(t, pfs, dp, name, len, id, DT_SUBVOL);

	if (ret)
		return ret;
	dp->item.nlink++;
	ret = inode_update(t, pfs, dp);
	if (ret)
		return ret;
	return root_refs_add(t, pfs->subvol, id, dp->ino, index, name, len);
}

static int end_txn(struct txn *t, int ret, bool changed, const char *where)
{
	int e;

	if (ret < 0 && changed)
		txn_abort(t, ret, where);
	e = txn_end(t);
	return ret < 0 ? ret : e;
}

/* The parent directory, referenced, checked for a change by cr. */
static int get_parent(struct fsctx *pfs, uint64_t dir, const struct fsops_cred *cr,
		      struct inode **out)
{
	struct inode *dp;
	int ret;

	if (pfs->readonly)
		return -EROFS;
	ret = inode_get(pfs, dir, &dp);
	if (ret < 0)
		return ret;
	if (!S_ISDIR(dp->item.mode))
		ret = -ENOTDIR;
	else if (dp->item.nlink == 0)
		ret = -ENOENT;
	else
		ret = may_change(dp, cr);
	if (ret < 0) {
		inode_put(pfs, dp);
		return ret;
	}
	*out = dp;
	return 0;
}

/* ---- create ---------------------------------------------------------------- */

int subvol_create(struct fsctx *pfs, uint64_t dir, const char *name,
		  const struct fsops_cred *cr, uint64_t *idp)
{
	struct core *c = pfs->core;
	struct inode *dp;
	struct dir_hit hit;
	struct txn *t;
	struct core_subvol *sv;
	struct inode_item it;
	uint64_t id = 0;
	size_t len;
	bool changed = false;
	int ret = check_subvol_name(name, &len);

	if (ret < 0)
		return ret;
	ret = get_parent(pfs, dir, cr, &dp);
	if (ret < 0)
		return ret;
	ret = txn_join(c, 16, 0, &t);
	if (ret < 0) {
		inode_put(pfs, dp);
		return ret;
	}
	inode_lock(dp);
	ret = dir_lookup(pfs, dir, name, len, &hit);
	if (ret == 0)
		ret = -EEXIST;
	if (ret != -ENOENT)
		goto out;
	ret = alloc_id(c, &id);
	if (ret < 0)
		goto out;
	glock_write(&c->subvols.lock);
	sv = subvol_entry_add(c, id);
	if (sv) {
		sv->otime = (uint64_t)time(NULL);
		sv->item_dirty = true;
	}
	glock_write_unlock(&c->subvols.lock);
	if (!sv) {
		ret = -ENOMEM;
		goto out;
	}
	changed = true;
	ret = btree_root_create_empty(t, &sv->cr.r);
	if (ret < 0)
		goto out;
	memset(&it, 0, sizeof(it));
	it.generation = it.transid = txn_transid(t);
	it.mode = S_IFDIR | 0755;
	it.nlink = 2;
	it.uid = cr->uid;
	it.gid = cr->gid;
	it.dir_seq = DIR_SEQ_FIRST;
	inode_time_now(&it.otime);
	it.atime = it.mtime = it.ctime = it.otime;
	struct key k = mkkey(ROOT_DIR_INO, KEY_INODE_ITEM, 0);
	ret = btree_insert(t, &sv->cr.r, &k, &it, sizeof(it));
	if (ret < 0)
		goto out;
	ret = link_subvol(t, pfs, dp, name, len, id);
	if (ret == 0)
		*idp = id;
out:
	inode_unlock(dp);
	ret = end_txn(t, ret, changed, "subvolume create");
	if (ret == 0)	/* durable when the ioctl returns */
		ret = txn_commit(c, COMMIT_OTHER);
	if (ret == 0 && id)
		subvol_fs(pfs, id);	/* opened here, not under a lookup */
	inode_put(pfs, dp);
	return ret;
}

/* ---- snapshot -------------------------------------------------------------- */

/* A nested subvolume's name in the source, copied into the snapshot as an
 * entry with no ROOT_REF: removed from the snapshot before it is linked. */
struct nested {
	uint64_t id, dirid, index;
	uint16_t len;
	char name[GLASSFS_SUBVOL_NAME_MAX + 1];
};

struct snap_arg {
	struct root *src;
	uint64_t src_id;
	uint64_t id;
	bool rdonly;
	struct core_subvol *sv;
	struct nested *nested;
	int nnested;
};

/* The ROOT_REFs of subvolume id (its nested subvolumes), into a->nested. */
static int collect_nested(struct core *c, struct snap_arg *a)
{
	struct key k = { a->src_id, KEY_ROOT_REF, 0 }, ik;
	struct path p;
	int ret;

	btree_path_init(&p);
	ret = btree_search(NULL, core_tree(c, CT_ROOT), &k, &p, 0, 0);
	while (ret >= 0) {
		uint32_t size;
		struct root_ref *rr;

		if (p.slots[0] >= (int)btree_nritems(&p) && (ret = btree_next(&p)))
			break;
		btree_item_key(&p, p.slots[0], &ik);
		if (ik.objectid != a->src_id || ik.type != KEY_ROOT_REF)
			break;
		rr = btree_item_ptr(&p, p.slots[0], &size);
		if (size >= sizeof(*rr) && sizeof(*rr) + rr->name_len <= size &&
		    rr->name_len <= GLASSFS_SUBVOL_NAME_MAX) {
			struct nested *v = realloc(a->nested, (size_t)(a->nnested + 1) * sizeof(*v));
			if (!v) {
				ret = -ENOMEM;
				break;
			}
			a->nested = v;
			v += a->nnested++;
			v->id = ik.offset;
			v->dirid = rr->dirid;
			v->index = rr->index;
			v->len = rr->name_len;
			memcpy(v->name, rr->name, rr->name_len);
			v->name[rr->name_len] = 0;
		}
		ret = btree_next(&p);	/* by the lock: the next slot may be another group's */
		if (ret)
			break;
	}
	btree_path_release(&p);
	return ret < 0 ? ret : 0;
}

/* Remove the copied entries of nested subvolumes from the new snapshot
 * (not linked yet, so nobody else sees its tree). */
static int drop_nested(struct txn *t, struct fsctx *pfs, struct snap_arg *a)
{
	struct fsctx *tmp;
	int ret = 0;

	if (!a->nnested)
		return 0;
	tmp = calloc(1, sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	tmp->core = pfs->core;
	tmp->root = &a->sv->cr.r;
	tmp->locktype = pfs->locktype;
	tmp->subvol = a->id;
	if ((ret = inode_cache_init(tmp)) < 0) {
		free(tmp);
		return ret;
	}
	for (int i = 0; i < a->nnested && !ret; i++) {
		struct nested *n = &a->nested[i];
		struct dir_hit hit;
		struct inode *dp;

		ret = inode_get(tmp, n->dirid, &dp);
		if (ret == -ENOENT) {
			ret = 0;
			continue;
		}
		if (ret < 0)
			break;
		inode_lock(dp);
		ret = dir_lookup(tmp, n->dirid, n->name, n->len, &hit);
		if (ret == 0 && hit.type == DT_SUBVOL && hit.ino == n->id) {
			ret = dir_remove(t, tmp, dp, n->name, n->len, &hit);
			if (ret == 0 && dp->item.nlink > 2)
				dp->item.nlink--;
			if (ret == 0)
				ret = inode_update(t, tmp, dp);
		} else if (ret == -ENOENT) {
			ret = 0;
		}
		inode_unlock(dp);
		inode_put(tmp, dp);
	}
	inode_cache_destroy(tmp);
	free(tmp);
	return ret;
}

/* Inside the commit: no handle is open, the source is a consistent tree. */
static int snap_in_commit(struct txn *t, void *arg)
{
	struct snap_arg *a = arg;
	struct core *c = txn_core(t);
	struct core_subvol *sv;
	uint64_t t0 = glock_now_ns();
	int ret;

	glock_write(&c->subvols.lock);
	sv = subvol_entry_add(c, a->id);
	if (sv) {
		/* dead until a transaction links its name */
		sv->flags = ROOT_F_DEAD | (a->rdonly ? ROOT_F_RDONLY : 0);
		sv->linking = true;
		sv->otime = (uint64_t)time(NULL);
		sv->item_dirty = true;
	}
	glock_write_unlock(&c->subvols.lock);
	if (!sv)
		return -ENOMEM;
	a->sv = sv;
	ret = collect_nested(c, a);
	if (ret == 0)
		ret = btree_snapshot_root(t, a->src, &sv->cr.r);
	if (ret < 0) {
		glock_write(&c->subvols.lock);
		sv->linking = false;
		if (!sv->cr.r.bytenr)
			sv->drop.all = 1;	/* nothing was made */
		glock_write_unlock(&c->subvols.lock);
		if (sv->cr.r.bytenr)
			txn_abort(t, ret, "snapshot");
		return ret;
	}
	if (PROBE_ON(SUBVOL_SNAPSHOT))
		GLASSFS_SUBVOL_SNAPSHOT(a->src->id, a->id, sv->cr.r.level, glock_now_ns() - t0);
	return 0;
}

int subvol_snapshot(struct fsctx *src, struct fsctx *pfs, uint64_t dir, const char *name,
		    bool rdonly, const struct fsops_cred *cr, uint64_t *idp)
{
	struct core *c = pfs->core;
	struct snap_arg a = { src->root, src->subvol, 0, rdonly, NULL, NULL, 0 };
	struct inode *dp, *sroot;
	struct dir_hit hit;
	struct txn *t;
	size_t len;
	int ret = check_subvol_name(name, &len);

	if (ret < 0)
		return ret;
	if (src->dead)
		return -ENOENT;
	ret = inode_get(src, ROOT_DIR_INO, &sroot);
	if (ret < 0)
		return ret;
	/* as btrfs: the source's owner (or root) may snapshot it */
	ret = cr->uid == 0 || cr->uid == sroot->item.uid ? 0 : -EPERM;
	inode_put(src, sroot);
	if (ret < 0)
		return ret;
	ret = get_parent(pfs, dir, cr, &dp);
	if (ret < 0)
		return ret;
	ret = dir_lookup(pfs, dir, name, len, &hit);
	if (ret == 0)
		ret = -EEXIST;
	if (ret != -ENOENT)
		goto put;
	ret = alloc_id(c, &a.id);
	if (ret < 0)
		goto put;
	ret = txn_commit_with(c, snap_in_commit, &a);
	if (ret < 0)
		goto put;

	/* link the name; until then (and after a crash) the tree is dead */
	ret = txn_join(c, 16, 0, &t);
	if (ret == 0) {
		inode_lock(dp);
		ret = dir_lookup(pfs, dir, name, len, &hit);
		if (ret == 0)
			ret = -EEXIST;	/* lost a race for the name */
		else if (ret == -ENOENT)
			ret = drop_nested(t, pfs, &a);
		if (ret == 0)
			ret = link_subvol(t, pfs, dp, name, len, a.id);
		if (ret == 0) {
			glock_write(&c->subvols.lock);
			a.sv->flags &= ~ROOT_F_DEAD;
			a.sv->item_dirty = true;
			glock_write_unlock(&c->subvols.lock);
		}
		inode_unlock(dp);
		ret = end_txn(t, ret, ret != -EEXIST, "snapshot link");
		if (ret == 0)
			ret = txn_commit(c, COMMIT_OTHER);
	}
	glock_write(&c->subvols.lock);
	a.sv->linking = false;	/* still dead on failure: the cleaner frees it */
	glock_write_unlock(&c->subvols.lock);
	if (ret < 0)
		subvol_cleaner_kick(c);
	else {
		subvol_fs(pfs, a.id);	/* frees copied orphans now, not under a lookup */
		*idp = a.id;
	}
put:
	free(a.nested);
	inode_put(pfs, dp);
	return ret;
}

/* ---- delete ---------------------------------------------------------------- */

/* Does any engine reference (an operation in flight) hold an inode of fs? */
static bool fs_in_use(struct fsctx *fs)
{
	bool busy = false;

	for (int s = 0; s < ICACHE_SHARDS && !busy; s++) {
		struct icache *ic = &fs->icache[s];

		glock_write(&ic->lock);
		htable_for_each(&ic->t, i, n)
			busy |= htable_entry(n, struct inode, hnode)->refs > 0;
		glock_write_unlock(&ic->lock);
	}
	return busy;
}

int subvol_delete(struct fsctx *pfs, uint64_t dir, const char *name,
		  const struct fsops_cred *cr, uint64_t *idp)
{
	struct core *c = pfs->core;
	struct fsctx *cfs;
	struct inode *dp, *croot;
	struct dir_hit hit, again;
	struct core_subvol *sv;
	struct txn *t;
	size_t len;
	bool changed = false;
	int ret = check_subvol_name(name, &len);

	if (ret < 0)
		return ret == -EEXIST ? -EINVAL : ret;
	ret = get_parent(pfs, dir, cr, &dp);
	if (ret < 0)
		return ret;
	ret = dir_lookup(pfs, dir, name, len, &hit);
	if (ret < 0)
		goto put;
	if (hit.type != DT_SUBVOL) {
		ret = -EINVAL;		/* not a subvolume */
		goto put;
	}
	cfs = subvol_fs(pfs, hit.ino);
	ret = inode_get(cfs, ROOT_DIR_INO, &croot);
	if (ret < 0)
		goto put;
	/* as btrfs: root, or the subvolume's owner (user_subvol_rm_allowed) */
	ret = cr->uid == 0 || cr->uid == croot->item.uid ? 0 : -EPERM;
	inode_put(cfs, croot);
	if (ret < 0)
		goto put;
	ret = has_children(c, hit.ino);
	if (ret > 0)
		ret = -ENOTEMPTY;
	if (ret < 0)
		goto put;
	/* the kernel sends RELEASE after close() returns: give a file or
	 * directory closed a moment ago (glassctl's own look at it) time */
	for (int i = 0; i < 50 && __atomic_load_n(&cfs->open_files, __ATOMIC_SEQ_CST); i++)
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	if (__atomic_load_n(&cfs->open_files, __ATOMIC_SEQ_CST)) {
		ret = -EBUSY;
		goto put;
	}
	/* from here on nobody gets a new inode of it; one in use now wins */
	__atomic_store_n(&cfs->dead, true, __ATOMIC_SEQ_CST);
	if (fs_in_use(cfs) || __atomic_load_n(&cfs->open_files, __ATOMIC_SEQ_CST)) {
		__atomic_store_n(&cfs->dead, false, __ATOMIC_SEQ_CST);
		ret = -EBUSY;
		goto put;
	}
	ret = txn_join(c, 16, TXN_USE_RESERVE, &t);
	if (ret < 0) {
		__atomic_store_n(&cfs->dead, false, __ATOMIC_SEQ_CST);
		goto put;
	}
	inode_lock(dp);
	ret = dir_lookup(pfs, dir, name, len, &again);
	if (ret == 0 && (again.ino != hit.ino || again.type != DT_SUBVOL))
		ret = -ENOENT;
	if (ret == 0) {
		changed = true;
		ret = dir_remove(t, pfs, dp, name, len, &again);
	}
	if (ret == 0) {
		if (dp->item.nlink > 2)
			dp->item.nlink--;
		ret = inode_update(t, pfs, dp);
	}
	if (ret == 0)
		ret = root_refs_del(t, pfs->subvol, hit.ino);
	if (ret == 0) {
		glock_write(&c->subvols.lock);
		sv = subvol_entry_find(&c->subvols, hit.ino);
		if (sv) {
			sv->flags |= ROOT_F_DEAD;
			memset(&sv->drop, 0, sizeof(sv->drop));
			sv->item_dirty = true;
			gcond_broadcast(&c->subvols.cond);
		}
		glock_write_unlock(&c->subvols.lock);
	}
	inode_unlock(dp);
	ret = end_txn(t, ret, changed, "subvolume delete");
	if (ret == 0)
		ret = txn_commit(c, COMMIT_OTHER);
	if (ret < 0)
		__atomic_store_n(&cfs->dead, false, __ATOMIC_SEQ_CST);
	else
		*idp = hit.ino;
put:
	inode_put(pfs, dp);
	return ret;
}

/* ---- info and list ---------------------------------------------------------- */

int subvol_info(struct fsctx *fs, uint64_t ino, struct glassfs_ioc_subvol_info *out)
{
	memset(out, 0, sizeof(*out));
	if (fs->dead)
		return -ENOENT;
	out->id = fs->subvol;
	out->ino = ino;
	out->is_root = ino == ROOT_DIR_INO;
	out->flags = subvol_flags(fs->core, fs->subvol) & (ROOT_F_RDONLY | ROOT_F_DEAD);
	return 0;
}

/* Prepend s (len n) to the path being built backwards in buf[*pos..]. */
static void prepend(char *buf, size_t *pos, const char *s, size_t n)
{
	if (n + 1 > *pos) {		/* does not fit: mark the cut */
		*pos = 0;
		buf[0] = '.';
		return;
	}
	*pos -= n;
	memcpy(buf + *pos, s, n);
	buf[--*pos] = '/';
}

/* Names of dir and its ancestors up to the tree's root directory. */
static int dir_path(struct root *r, uint64_t dir, char *buf, size_t *pos)
{
	for (int depth = 0; dir != ROOT_DIR_INO && depth < 4096 && *pos; depth++) {
		struct key k = { dir, KEY_INODE_REF, 0 }, ik;
		struct path p;
		int ret;

		btree_path_init(&p);
		ret = btree_search(NULL, r, &k, &p, 0, 0);
		if (ret >= 0 && p.slots[0] >= (int)btree_nritems(&p))
			ret = btree_next(&p) ? -ENOENT : 0;
		if (ret >= 0) {
			uint32_t size;
			struct inode_ref *ir;

			btree_item_key(&p, p.slots[0], &ik);
			ir = btree_item_ptr(&p, p.slots[0], &size);
			if (ik.objectid != dir || ik.type != KEY_INODE_REF || size < sizeof(*ir) ||
			    sizeof(*ir) + ir->name_len > size) {
				ret = -ENOENT;
			} else {
				prepend(buf, pos, ir->name, ir->name_len);
				dir = ik.offset;
			}
		}
		btree_path_release(&p);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* The path of subvolume id from the top of the volume, built backwards. */
static int subvol_path(struct core *c, uint64_t id, char *buf, size_t *pos, uint64_t *parent,
		       uint64_t *dirid)
{
	for (int depth = 0; id != FS_TREE_OBJECTID && depth < 64; depth++) {
		struct key k = { id, KEY_ROOT_BACKREF, 0 }, ik;
		struct path p;
		struct root *pr;
		int ret;

		btree_path_init(&p);
		ret = btree_search(NULL, core_tree(c, CT_ROOT), &k, &p, 0, 0);
		if (ret >= 0 && p.slots[0] >= (int)btree_nritems(&p))
			ret = btree_next(&p) ? -ENOENT : 0;
		if (ret >= 0) {
			uint32_t size;
			struct root_ref *rr;

			btree_item_key(&p, p.slots[0], &ik);
			rr = btree_item_ptr(&p, p.slots[0], &size);
			if (ik.objectid != id || ik.type != KEY_ROOT_BACKREF || size < sizeof(*rr) ||
			    sizeof(*rr) + rr->name_len > size) {
				ret = -ENOENT;
			} else {
				prepend(buf, pos, rr->name, rr->name_len);
				if (depth == 0) {
					*parent = ik.offset;
					*dirid = rr->dirid;
				}
				id = ik.offset;
				k.objectid = rr->dirid;	/* reuse: the directory in the parent */
			}
		}
		btree_path_release(&p);
		if (ret < 0)
			return ret;
		pr = subvol_root(c, id);
		if (!pr)
			return -ENOENT;
		ret = dir_path(pr, k.objectid, buf, pos);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int subvol_dir_path(struct fsctx *fs, uint64_t dir, char *out, size_t size)
{
	char buf[4096];
	size_t pos = sizeof(buf) - 1;
	uint64_t parent, dirid;
	int ret;

	if (fs->dead)
		return -ENOENT;
	buf[pos] = 0;
	ret = dir_path(fs->root, dir, buf, &pos);
	if (ret == 0)
		ret = subvol_path(fs->core, fs->subvol, buf, &pos, &parent, &dirid);
	if (ret == 0 && pos == 0)
		ret = -ENAMETOOLONG;
	if (ret == 0 && (size_t)snprintf(out, size, "%s", buf + pos) >= size)
		ret = -ENAMETOOLONG;
	return ret;
}

int subvol_list(struct fsctx *any, struct glassfs_ioc_subvol_list *io)
{
	struct core *c = any->core;
	struct core_subvols *s = &c->subvols;
	uint64_t start = io->start_id;

	io->count = 0;
	io->more = 0;
	for (;;) {
		struct glassfs_subvol_entry *e;
		struct core_subvol *best = NULL;
		char buf[4096];
		size_t pos = sizeof(buf) - 1;

		glock_write(&s->lock);
		for (int i = 0; i < s->n; i++) {
			struct core_subvol *sv = s->v[i];
			if (!sv->gone && !sv->linking && sv->cr.r.id >= start &&
			    (!best || sv->cr.r.id < best->cr.r.id))
				best = sv;
		}
		if (best && io->count == GLASSFS_SUBVOL_LIST_MAX) {
			io->more = 1;
			best = NULL;
		}
		if (!best) {
			glock_write_unlock(&s->lock);
			return 0;
		}
		e = &io->e[io->count++];
		memset(e, 0, sizeof(*e));
		e->id = best->cr.r.id;
		e->generation = best->cr.r.generation;
		e->flags = best->flags & (ROOT_F_RDONLY | ROOT_F_DEAD);
		e->otime = best->otime;
		glock_write_unlock(&s->lock);
		start = e->id + 1;
		if (e->flags & ROOT_F_DEAD)
			continue;
		buf[pos] = 0;
		if (subvol_path(c, e->id, buf, &pos, &e->parent, &e->dirid) == 0) {
			const char *pth = buf + pos + (buf[pos] == '/');
			snprintf(e->path, sizeof(e->path), "%s", pth);
		}
	}
}
