// SPDX-License-Identifier: MIT
/*
 * memfs — the FUSE ceiling.
 *
 * A minimal in-memory filesystem on the libfuse3 low-level API, run with
 * the session options glassfs uses (multithreaded loop, entry and
 * attribute timeouts, cached negative lookups).  It does no I/O, keeps no
 * log and persists nothing: names live in one hash table per directory,
 * file bytes in 1 MiB chunks allocated on first write (holes read as
 * zeroes; a growing file never copies what it holds; chunks are mapped
 * populated, so storing into one takes no page fault, which costs as much
 * as the copy on a paravirtualized guest) and read replies
 * point at the chunks (fuse_reply_iov, no copy in the daemon).  It is the
 * data ceiling too: the fastest a FUSE filesystem moves bytes here.  Whatever rate it reaches for a
 * workload is the fastest any FUSE filesystem can go on this kernel, so
 * benchmarks print glassfs's rate as a fraction of it.
 *
 * Operations: lookup, forget, getattr, setattr, mknod, mkdir, unlink,
 * rmdir, create, open, read, write, fsync, release, readdir, statfs —
 * what fs_mark and the bench scripts need.  No flush (the kernel stops
 * sending it after the first ENOSYS, as it would for any filesystem that
 * leaves it out), no rename, links or xattrs.
 *
 * Usage: memfs MOUNTPOINT [-f] [-s] [-o entry_timeout=S,attr_timeout=S,
 *        negative_timeout=S,threads=N,writeback,...]
 *
 * Defaults are glassfs's (fs/cmd/main.c): timeouts of 10 s for entries,
 * attributes and negative entries; at most 16 worker threads, 10 idle; no
 * clone_fd; default_permissions; parallel dirops on; writeback cache as
 * -o writeback says (glassfs's default is in fs/fuse/fuse_ops.c gl_init;
 * the bench passes the same choice to both); the read-ahead window
 * glassfs has (-o readahead_kb=N, glassfs's readahead_kb=, fs/fuse/fuse_readahead.h).
 *
 * Inode numbers handed to the kernel are node pointers (root is 1), as in
 * libfuse's passthrough_ll; st_ino is a separate sequence number.
 *
 * Locking: one mutex per node.  A directory's mutex guards its entry table;
 * every node's mutex guards its attributes, data and lookup count.  Order:
 * parent directory before child, never two siblings.  A node is freed when
 * its link count and its kernel lookup count are both zero, decided under
 * its own mutex.
 */
#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include "fs/fuse/fuse_readahead.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MEMFS_NAME_MAX 255
#define MEMFS_BLOCK 4096
#define MEMFS_CHUNK_SHIFT 20
#define MEMFS_CHUNK ((size_t)1 << MEMFS_CHUNK_SHIFT)	/* 1 MiB: the largest FUSE request */

/* What a hole reads as. */
static char memfs_zero[MEMFS_CHUNK];

struct mdentry {
	struct mdentry *hnext;		/* hash chain */
	struct mnode *node;
	size_t slot;			/* index in dir->order (readdir cookie - 3) */
	uint32_t hash;
	uint16_t namelen;
	char name[];
};

struct mdir {
	struct mdentry **buckets;	/* nbuckets, a power of two */
	size_t nbuckets, count;
	struct mdentry **order;		/* creation order; NULL where unlinked */
	size_t norder, order_cap;
	struct mnode *parent;		/* ".." (root: itself) */
};

struct mnode {
	pthread_mutex_t lock;
	uint64_t nlookup;		/* references held by the kernel */
	uint64_t ino;			/* st_ino */
	mode_t mode;
	nlink_t nlink;
	uid_t uid;
	gid_t gid;
	dev_t rdev;
	off_t size;
	struct timespec atime, mtime, ctime;
	char **chunks;			/* regular files: chunk i holds bytes from i MiB;
					 * NULL = a hole (zeroes) */
	size_t nchunks;			/* slots in chunks[] */
	struct mdir *dir;		/* directories */
};

struct memfs {
	struct mnode root;
	double entry_timeout, attr_timeout, negative_timeout;
	int writeback;
	struct fuse_readahead ra;	/* readahead_kb=, set at the first open */
	pthread_mutex_t seq_lock;	/* guards next_ino */
	uint64_t next_ino;
	pthread_mutex_t count_lock;	/* guards nnodes, nbytes */
	uint64_t nnodes, nbytes;
};

static struct memfs *memfs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct mnode *node_of(struct memfs *fs, fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? &fs->root : (struct mnode *)(uintptr_t)ino;
}

static fuse_ino_t ino_of(struct memfs *fs, struct mnode *n)
{
	return n == &fs->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

/* FNV-1a: names are short and random, nothing fancier pays off. */
static uint32_t name_hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static void now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

static struct mdir *dir_new(struct mnode *parent)
{
	struct mdir *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->nbuckets = 64;
	d->buckets = calloc(d->nbuckets, sizeof(*d->buckets));
	if (!d->buckets) {
		free(d);
		return NULL;
	}
	d->parent = parent;
	return d;
}

static void dir_free(struct mdir *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->norder; i++)
		free(d->order[i]);
	free(d->order);
	free(d->buckets);
	free(d);
}

/* Caller holds the directory's lock. */
static struct mdentry *dir_find(struct mdir *d, const char *name, size_t len,
				uint32_t h)
{
	for (struct mdentry *e = d->buckets[h & (d->nbuckets - 1)]; e; e = e->hnext)
		if (e->hash == h && e->namelen == len && !memcmp(e->name, name, len))
			return e;
	return NULL;
}

/* Double the bucket array when the load passes 1; 0 or -ENOMEM. */
static int dir_grow(struct mdir *d)
{
	size_t nb = d->nbuckets * 2;
	struct mdentry **b = calloc(nb, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < d->nbuckets; i++) {
		struct mdentry *e = d->buckets[i], *next;

		for (; e; e = next) {
			next = e->hnext;
			e->hnext = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	}
	free(d->buckets);
	d->buckets = b;
	d->nbuckets = nb;
	return 0;
}

/* Insert a name known to be absent.  0 or -ENOMEM.  Caller holds the lock. */
static int dir_insert(struct mdir *d, const char *name, size_t len, uint32_t h,
		      struct mnode *n)
{
	struct mdentry *e;

	if (d->count >= d->nbuckets && dir_grow(d))
		return -ENOMEM;
	if (d->norder == d->order_cap) {
		size_t cap = d->order_cap ? d->order_cap * 2 : 64;
		struct mdentry **o = realloc(d->order, cap * sizeof(*o));

		if (!o)
			return -ENOMEM;
		d->order = o;
		d->order_cap = cap;
	}
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return -ENOMEM;
	e->node = n;
	e->hash = h;
	e->namelen = (uint16_t)len;
	memcpy(e->name, name, len);
	e->name[len] = '\0';
	e->slot = d->norder;
	d->order[d->norder++] = e;
	e->hnext = d->buckets[h & (d->nbuckets - 1)];
	d->buckets[h & (d->nbuckets - 1)] = e;
	d->count++;
	return 0;
}

/* Unhook and free an entry.  Its readdir slot stays as a hole. */
static void dir_remove(struct mdir *d, struct mdentry *e)
{
	struct mdentry **p = &d->buckets[e->hash & (d->nbuckets - 1)];

	while (*p != e)
		p = &(*p)->hnext;
	*p = e->hnext;
	d->order[e->slot] = NULL;
	d->count--;
	free(e);
}

static struct mnode *node_new(struct memfs *fs, mode_t mode, uid_t uid,
			      gid_t gid, dev_t rdev)
{
	struct mnode *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	pthread_mutex_init(&n->lock, NULL);
	n->mode = mode;
	n->nlink = S_ISDIR(mode) ? 2 : 1;
	n->uid = uid;
	n->gid = gid;
	n->rdev = rdev;
	now(&n->mtime);
	n->atime = n->ctime = n->mtime;
	pthread_mutex_lock(&fs->seq_lock);
	n->ino = fs->next_ino++;
	pthread_mutex_unlock(&fs->seq_lock);
	pthread_mutex_lock(&fs->count_lock);
	fs->nnodes++;
	pthread_mutex_unlock(&fs->count_lock);
	return n;
}

static void node_free(struct memfs *fs, struct mnode *n)
{
	uint64_t bytes = 0;

	for (size_t i = 0; i < n->nchunks; i++)
		if (n->chunks[i]) {
			munmap(n->chunks[i], MEMFS_CHUNK);
			bytes += MEMFS_CHUNK;
		}
	free(n->chunks);
	pthread_mutex_lock(&fs->count_lock);
	fs->nnodes--;
	fs->nbytes -= bytes;
	pthread_mutex_unlock(&fs->count_lock);
	dir_free(n->dir);
	pthread_mutex_destroy(&n->lock);
	free(n);
}

/* Caller holds n->lock. */
static void node_stat(const struct mnode *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_mode = n->mode;
	st->st_nlink = n->nlink;
	st->st_uid = n->uid;
	st->st_gid = n->gid;
	st->st_rdev = n->rdev;
	st->st_size = n->size;
	st->st_blksize = MEMFS_BLOCK;
	st->st_blocks = (n->size + 511) / 512;
	st->st_atim = n->atime;
	st->st_mtim = n->mtime;
	st->st_ctim = n->ctime;
}

/* Caller holds n->lock; takes one kernel reference. */
static void node_entry(struct memfs *fs, struct mnode *n,
		       struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	n->nlookup++;
	e->ino = ino_of(fs, n);
	e->generation = 1;
	e->entry_timeout = fs->entry_timeout;
	e->attr_timeout = fs->attr_timeout;
	node_stat(n, &e->attr);
}

static void count_bytes(struct memfs *fs, int64_t delta)
{
	pthread_mutex_lock(&fs->count_lock);
	fs->nbytes += (uint64_t)delta;
	pthread_mutex_unlock(&fs->count_lock);
}

/* Make chunks[] cover len bytes (slots only: chunks come with writes).
 * 0 or -ENOMEM.  n->lock held. */
static int node_reserve(struct mnode *n, uint64_t len)
{
	size_t want = (size_t)((len + MEMFS_CHUNK - 1) >> MEMFS_CHUNK_SHIFT), cap;
	char **c;

	if (want <= n->nchunks)
		return 0;
	cap = n->nchunks ? n->nchunks : 16;
	while (cap < want)
		cap *= 2;
	c = realloc(n->chunks, cap * sizeof(*c));
	if (!c)
		return -ENOMEM;
	memset(c + n->nchunks, 0, (cap - n->nchunks) * sizeof(*c));
	n->chunks = c;
	n->nchunks = cap;
	return 0;
}

/* Copy size bytes at off into the file, allocating chunks.  n->lock held,
 * slots reserved. */
static int node_put(struct memfs *fs, struct mnode *n, const char *buf,
		    size_t size, uint64_t off)
{
	while (size) {
		size_t i = (size_t)(off >> MEMFS_CHUNK_SHIFT);
		size_t in = (size_t)(off & (MEMFS_CHUNK - 1));
		size_t k = MEMFS_CHUNK - in < size ? MEMFS_CHUNK - in : size;

		if (!n->chunks[i]) {
			void *c = mmap(NULL, MEMFS_CHUNK, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

			if (c == MAP_FAILED)
				return -ENOMEM;
			n->chunks[i] = c;
			count_bytes(fs, (int64_t)MEMFS_CHUNK);
		}
		memcpy(n->chunks[i] + in, buf, k);
		buf += k;
		off += k;
		size -= k;
	}
	return 0;
}

static int node_truncate(struct memfs *fs, struct mnode *n, off_t size)
{
	int err;

	if (size < 0)
		return -EINVAL;
	if (!S_ISREG(n->mode))
		return S_ISDIR(n->mode) ? -EISDIR : -EINVAL;
	if (size > n->size) {
		err = node_reserve(n, (uint64_t)size);
		if (err)
			return err;
	} else {
		/* drop whole chunks past the end, zero the tail of the last */
		size_t keep = (size_t)(((uint64_t)size + MEMFS_CHUNK - 1) >> MEMFS_CHUNK_SHIFT);
		size_t in = (size_t)((uint64_t)size & (MEMFS_CHUNK - 1));

		for (size_t i = keep; i < n->nchunks; i++)
			if (n->chunks[i]) {
				munmap(n->chunks[i], MEMFS_CHUNK);
				n->chunks[i] = NULL;
				count_bytes(fs, -(int64_t)MEMFS_CHUNK);
			}
		if (in && n->chunks && n->chunks[keep - 1])
			memset(n->chunks[keep - 1] + in, 0, MEMFS_CHUNK - in);
	}
	n->size = size;
	return 0;
}

static void memfs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct memfs *fs = userdata;

	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (fs->writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
}

static void memfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct memfs *fs = memfs_of(req);
	struct mnode *p = node_of(fs, parent);
	size_t len = strlen(name);
	struct fuse_entry_param e;
	struct mdentry *d;

	if (len > MEMFS_NAME_MAX) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	pthread_mutex_lock(&p->lock);
	if (!p->dir) {
		pthread_mutex_unlock(&p->lock);
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	d = dir_find(p->dir, name, len, name_hash(name, len));
	if (!d) {
		pthread_mutex_unlock(&p->lock);
		if (fs->negative_timeout > 0) {
			/* ino 0: the kernel caches "no such name" this long. */
			memset(&e, 0, sizeof(e));
			e.entry_timeout = fs->negative_timeout;
			fuse_reply_entry(req, &e);
		} else {
			fuse_reply_err(req, ENOENT);
		}
		return;
	}
	pthread_mutex_lock(&d->node->lock);
	node_entry(fs, d->node, &e);
	pthread_mutex_unlock(&d->node->lock);
	pthread_mutex_unlock(&p->lock);
	fuse_reply_entry(req, &e);
}

static void forget_one(struct memfs *fs, fuse_ino_t ino, uint64_t nlookup)
{
	struct mnode *n = node_of(fs, ino);
	int dead;

	if (n == &fs->root)
		return;
	pthread_mutex_lock(&n->lock);
	n->nlookup = nlookup > n->nlookup ? 0 : n->nlookup - nlookup;
	dead = !n->nlookup && !n->nlink;
	pthread_mutex_unlock(&n->lock);
	if (dead)
		node_free(fs, n);
}

static void memfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget_one(memfs_of(req), ino, nlookup);
	fuse_reply_none(req);
}

static void memfs_forget_multi(fuse_req_t req, size_t count,
			       struct fuse_forget_data *forgets)
{
	struct memfs *fs = memfs_of(req);

	for (size_t i = 0; i < count; i++)
		forget_one(fs, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void memfs_getattr(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct memfs *fs = memfs_of(req);
	struct mnode *n = node_of(fs, ino);
	struct stat st;

	(void)fi;
	pthread_mutex_lock(&n->lock);
	node_stat(n, &st);
	pthread_mutex_unlock(&n->lock);
	fuse_reply_attr(req, &st, fs->attr_timeout);
}

static void memfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			  int to_set, struct fuse_file_info *fi)
{
	struct memfs *fs = memfs_of(req);
	struct mnode *n = node_of(fs, ino);
	struct timespec t;
	struct stat st;
	int err = 0;

	(void)fi;
	now(&t);
	pthread_mutex_lock(&n->lock);
	if (to_set & FUSE_SET_ATTR_SIZE) {
		err = node_truncate(fs, n, attr->st_size);
		if (err)
			goto out;
		n->mtime = t;
	}
	if (to_set & FUSE_SET_ATTR_MODE)
		n->mode = (n->mode & S_IFMT) | (attr->st_mode & 07777);
	if (to_set & FUSE_SET_ATTR_UID)
		n->uid = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		n->gid = attr->st_gid;
	if (to_set & FUSE_SET_ATTR_ATIME)
		n->atime = attr->st_atim;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		n->atime = t;
	if (to_set & FUSE_SET_ATTR_MTIME)
		n->mtime = attr->st_mtim;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		n->mtime = t;
	n->ctime = (to_set & FUSE_SET_ATTR_CTIME) ? attr->st_ctim : t;
	node_stat(n, &st);
out:
	pthread_mutex_unlock(&n->lock);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_attr(req, &st, fs->attr_timeout);
}

/*
 * Make a new node called name in parent and take one kernel reference to
 * it.  0 with *e filled, or -errno.
 */
static int make_node(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev, struct fuse_entry_param *e)
{
	struct memfs *fs = memfs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct mnode *p = node_of(fs, parent), *n;
	size_t len = strlen(name);
	uint32_t h = name_hash(name, len);
	int err;

	if (len > MEMFS_NAME_MAX)
		return -ENAMETOOLONG;
	n = node_new(fs, mode, ctx->uid, ctx->gid, rdev);
	if (!n)
		return -ENOMEM;
	if (S_ISDIR(mode) && !(n->dir = dir_new(p))) {
		node_free(fs, n);
		return -ENOMEM;
	}
	pthread_mutex_lock(&p->lock);
	if (!p->dir) {
		err = -ENOTDIR;
	} else if (!p->nlink) {
		err = -ENOENT;		/* parent was removed */
	} else if (dir_find(p->dir, name, len, h)) {
		err = -EEXIST;
	} else {
		err = dir_insert(p->dir, name, len, h, n);
	}
	if (err) {
		pthread_mutex_unlock(&p->lock);
		node_free(fs, n);
		return err;
	}
	if (S_ISDIR(mode))
		p->nlink++;
	p->mtime = p->ctime = n->mtime;
	pthread_mutex_lock(&n->lock);
	node_entry(fs, n, e);
	pthread_mutex_unlock(&n->lock);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static void memfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
			mode_t mode, dev_t rdev)
{
	struct fuse_entry_param e;
	int err;

	if (S_ISDIR(mode) || S_ISLNK(mode)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	err = make_node(req, parent, name, mode, rdev, &e);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_entry(req, &e);
}

static void memfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
			mode_t mode)
{
	struct fuse_entry_param e;
	int err = make_node(req, parent, name, S_IFDIR | (mode & 07777), 0, &e);

	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_entry(req, &e);
}

static void memfs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
			 mode_t mode, struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	int err = make_node(req, parent, name, S_IFREG | (mode & 07777), 0, &e);

	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	fi->fh = 0;
	fi->noflush = 1;	/* as glassfs: close() needs no FLUSH round trip */
	fuse_readahead_apply(&memfs_of(req)->ra);
	if (fuse_reply_create(req, &e, fi) == -ENOENT)
		forget_one(memfs_of(req), e.ino, 1);	/* the caller went away */
}

/* unlink and rmdir: drop name from parent. */
static int remove_name(fuse_req_t req, fuse_ino_t parent, const char *name,
		       int want_dir)
{
	struct memfs *fs = memfs_of(req);
	struct mnode *p = node_of(fs, parent), *n;
	size_t len = strlen(name);
	struct mdentry *d;
	struct timespec t;
	int dead, err = 0;

	if (len > MEMFS_NAME_MAX)
		return -ENAMETOOLONG;
	now(&t);
	pthread_mutex_lock(&p->lock);
	if (!p->dir) {
		err = -ENOTDIR;
		goto out;
	}
	d = dir_find(p->dir, name, len, name_hash(name, len));
	if (!d) {
		err = -ENOENT;
		goto out;
	}
	n = d->node;
	pthread_mutex_lock(&n->lock);
	if (want_dir && !S_ISDIR(n->mode))
		err = -ENOTDIR;
	else if (!want_dir && S_ISDIR(n->mode))
		err = -EISDIR;
	else if (want_dir && n->dir->count)
		err = -ENOTEMPTY;
	if (err) {
		pthread_mutex_unlock(&n->lock);
		goto out;
	}
	dir_remove(p->dir, d);
	if (want_dir) {
		n->nlink = 0;
		p->nlink--;
	} else {
		n->nlink--;
	}
	n->ctime = t;
	dead = !n->nlink && !n->nlookup;
	pthread_mutex_unlock(&n->lock);
	p->mtime = p->ctime = t;
	pthread_mutex_unlock(&p->lock);
	if (dead)
		node_free(fs, n);
	return 0;
out:
	pthread_mutex_unlock(&p->lock);
	return err;
}

static void memfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, -remove_name(req, parent, name, 0));
}

static void memfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, -remove_name(req, parent, name, 1));
}

static void memfs_open(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct memfs *fs = memfs_of(req);
	struct mnode *n = node_of(fs, ino);
	int err = 0;

	pthread_mutex_lock(&n->lock);
	if (S_ISDIR(n->mode) && (fi->flags & O_ACCMODE) != O_RDONLY)
		err = EISDIR;
	else if ((fi->flags & O_TRUNC) && (fi->flags & O_ACCMODE) != O_RDONLY)
		err = -node_truncate(fs, n, 0);
	pthread_mutex_unlock(&n->lock);
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	fi->fh = 0;
	fi->noflush = 1;
	fuse_readahead_apply(&fs->ra);	/* as glassfs's gl_open */
	fuse_reply_open(req, fi);
}

static void memfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct memfs *fs = memfs_of(req);
	struct mnode *n = node_of(fs, ino);
	struct iovec iov[(1u << 24 >> MEMFS_CHUNK_SHIFT) + 2];	/* 16 MiB of request */
	int cnt = 0;

	(void)fi;
	pthread_mutex_lock(&n->lock);
	if (off >= n->size)
		size = 0;
	else if ((off_t)size > n->size - off)
		size = (size_t)(n->size - off);
	/* iovecs point into the chunks: reply under the lock, a truncate
	 * may free them the moment it is dropped */
	for (uint64_t o = (uint64_t)off, left = size; left && cnt < (int)(sizeof(iov) / sizeof(iov[0]));) {
		size_t i = (size_t)(o >> MEMFS_CHUNK_SHIFT);
		size_t in = (size_t)(o & (MEMFS_CHUNK - 1));
		size_t k = MEMFS_CHUNK - in < left ? MEMFS_CHUNK - in : (size_t)left;

		iov[cnt].iov_base = n->chunks[i] ? n->chunks[i] + in : memfs_zero;
		iov[cnt++].iov_len = k;
		o += k;
		left -= k;
	}
	fuse_reply_iov(req, iov, cnt);
	pthread_mutex_unlock(&n->lock);
}

static void memfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
			size_t size, off_t off, struct fuse_file_info *fi)
{
	struct memfs *fs = memfs_of(req);
	struct mnode *n = node_of(fs, ino);
	int err = 0;

	(void)fi;
	if (off < 0 || (uint64_t)off + size > (uint64_t)LLONG_MAX / 2) {
		fuse_reply_err(req, EFBIG);
		return;
	}
	pthread_mutex_lock(&n->lock);
	err = node_reserve(n, (uint64_t)off + size);
	if (!err)
		err = node_put(fs, n, buf, size, (uint64_t)off);
	if (!err) {
		if (off + (off_t)size > n->size)
			n->size = off + (off_t)size;
		now(&n->mtime);
		n->ctime = n->mtime;
	}
	pthread_mutex_unlock(&n->lock);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_write(req, size);
}

/* Nothing to make durable; the round trip is the cost being measured. */
static void memfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	(void)ino; (void)datasync; (void)fi;
	fuse_reply_err(req, 0);
}

static void memfs_release(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	(void)ino; (void)fi;
	fuse_reply_err(req, 0);
}

static void memfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			  off_t off, struct fuse_file_info *fi)
{
	struct memfs *fs = memfs_of(req);
	struct mnode *n = node_of(fs, ino);
	char *buf = malloc(size);
	size_t used = 0;
	struct stat st;

	(void)fi;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memset(&st, 0, sizeof(st));
	pthread_mutex_lock(&n->lock);
	if (!n->dir) {
		pthread_mutex_unlock(&n->lock);
		free(buf);
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	/* Cookies: 1 after ".", 2 after "..", slot + 3 after order[slot]. */
	for (off_t o = off; ; o++) {
		const char *name;
		size_t want;

		if (o == 0) {
			name = ".";
			st.st_ino = n->ino;
			st.st_mode = S_IFDIR;
		} else if (o == 1) {
			name = "..";
			st.st_ino = n->dir->parent->ino;
			st.st_mode = S_IFDIR;
		} else if ((size_t)(o - 2) < n->dir->norder) {
			struct mdentry *d = n->dir->order[o - 2];

			if (!d)
				continue;
			name = d->name;
			st.st_ino = d->node->ino;	/* fixed at creation */
			st.st_mode = d->node->mode & S_IFMT;
		} else {
			break;
		}
		want = fuse_add_direntry(req, buf + used, size - used, name,
					 &st, o + 1);
		if (want > size - used)
			break;
		used += want;
	}
	pthread_mutex_unlock(&n->lock);
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void memfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct memfs *fs = memfs_of(req);
	const uint64_t blocks = 1ull << 28, files = 1ull << 32;	/* 1 TiB */
	struct statvfs sv;
	uint64_t nodes, used;

	(void)ino;
	pthread_mutex_lock(&fs->count_lock);
	nodes = fs->nnodes;
	used = (fs->nbytes + MEMFS_BLOCK - 1) / MEMFS_BLOCK;
	pthread_mutex_unlock(&fs->count_lock);
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = MEMFS_BLOCK;
	sv.f_blocks = blocks;
	sv.f_bfree = sv.f_bavail = used < blocks ? blocks - used : 0;
	sv.f_files = files;
	sv.f_ffree = sv.f_favail = files - nodes;
	sv.f_namemax = MEMFS_NAME_MAX;
	fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops memfs_ops = {
	.init		= memfs_init,
	.lookup		= memfs_lookup,
	.forget		= memfs_forget,
	.forget_multi	= memfs_forget_multi,
	.getattr	= memfs_getattr,
	.setattr	= memfs_setattr,
	.mknod		= memfs_mknod,
	.mkdir		= memfs_mkdir,
	.unlink		= memfs_unlink,
	.rmdir		= memfs_rmdir,
	.create		= memfs_create,
	.open		= memfs_open,
	.read		= memfs_read,
	.write		= memfs_write,
	.fsync		= memfs_fsync,
	.release	= memfs_release,
	.readdir	= memfs_readdir,
	.statfs		= memfs_statfs,
};

struct memfs_opts {
	char *entry_timeout, *attr_timeout, *negative_timeout;
	int writeback;
	unsigned threads;
	unsigned readahead_kb;
};

#define MEMFS_OPT(t, p) { t, offsetof(struct memfs_opts, p), 0 }
static const struct fuse_opt memfs_optspec[] = {
	MEMFS_OPT("entry_timeout=%s", entry_timeout),
	MEMFS_OPT("attr_timeout=%s", attr_timeout),
	MEMFS_OPT("negative_timeout=%s", negative_timeout),
	{ "writeback", offsetof(struct memfs_opts, writeback), 1 },
	MEMFS_OPT("threads=%u", threads),
	MEMFS_OPT("readahead_kb=%u", readahead_kb),
	FUSE_OPT_END
};

/* A timeout option: a non-negative number of seconds, or exit with a message. */
static int parse_seconds(const char *opt, const char *s, double def, double *out)
{
	char *end;

	if (!s) {
		*out = def;
		return 0;
	}
	*out = strtod(s, &end);
	if (end == s || *end || *out < 0) {
		fprintf(stderr, "memfs: bad %s '%s': want seconds >= 0\n", opt, s);
		return -1;
	}
	return 0;
}

static void usage(const char *prog)
{
	printf("usage: %s MOUNTPOINT [options]\n"
	       "memfs: in-memory FUSE filesystem, the ceiling for benchmarks.\n"
	       "    -o entry_timeout=S     dentry cache time (default 10)\n"
	       "    -o attr_timeout=S      attribute cache time (default 10)\n"
	       "    -o negative_timeout=S  cache ENOENT this long (default 10, 0 = off)\n"
	       "    -o threads=N           maximum worker threads (default 16)\n"
	       "    -o writeback           enable the kernel writeback cache\n"
	       "    -o readahead_kb=N      the mount's read-ahead window (default 0: the kernel's)\n",
	       prog);
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts copts;
	struct memfs_opts mopts = { 0 };
	struct fuse_loop_config *lc = NULL;
	struct fuse_session *se = NULL;
	struct memfs *fs = NULL;
	int ret = 1;

	if (fuse_parse_cmdline(&args, &copts) != 0)
		return 1;
	if (copts.show_help) {
		usage(argv[0]);
		ret = 0;
		goto out_args;
	}
	if (copts.show_version) {
		printf("FUSE library version %s\n", fuse_pkgversion());
		fuse_lowlevel_version();
		ret = 0;
		goto out_args;
	}
	if (!copts.mountpoint) {
		fprintf(stderr, "usage: %s MOUNTPOINT [options] (--help for more)\n",
			argv[0]);
		goto out_args;
	}
	mopts.threads = 16;
	mopts.readahead_kb = 0;		/* glassfs's default: the kernel's window */
	if (fuse_opt_parse(&args, &mopts, memfs_optspec, NULL) == -1)
		goto out_args;
	if (mopts.threads < 1) {
		fprintf(stderr, "memfs: threads must be >= 1\n");
		goto out_args;
	}

	fs = calloc(1, sizeof(*fs));
	if (!fs) {
		fprintf(stderr, "memfs: out of memory\n");
		goto out_args;
	}
	if (parse_seconds("entry_timeout", mopts.entry_timeout, 10.0, &fs->entry_timeout) ||
	    parse_seconds("attr_timeout", mopts.attr_timeout, 10.0, &fs->attr_timeout) ||
	    parse_seconds("negative_timeout", mopts.negative_timeout, 10.0,
			  &fs->negative_timeout))
		goto out_fs;
	fs->writeback = mopts.writeback;
	fs->ra.mountpoint = copts.mountpoint;
	fs->ra.kb = mopts.readahead_kb;
	pthread_mutex_init(&fs->seq_lock, NULL);
	pthread_mutex_init(&fs->count_lock, NULL);
	fs->next_ino = 2;
	pthread_mutex_init(&fs->root.lock, NULL);
	fs->root.ino = 1;
	fs->root.nlookup = 1;		/* never forgotten */
	fs->root.mode = S_IFDIR | 0755;
	fs->root.nlink = 2;
	fs->root.uid = getuid();
	fs->root.gid = getgid();
	now(&fs->root.mtime);
	fs->root.atime = fs->root.ctime = fs->root.mtime;
	fs->root.dir = dir_new(&fs->root);
	if (!fs->root.dir) {
		fprintf(stderr, "memfs: out of memory\n");
		goto out_fs;
	}

	/* glassfs mounts with default_permissions: the kernel checks access */
	if (fuse_opt_add_arg(&args, "-odefault_permissions") != 0)
		goto out_fs;
	se = fuse_session_new(&args, &memfs_ops, sizeof(memfs_ops), fs);
	if (!se)
		goto out_fs;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, copts.mountpoint) != 0)
		goto out_signals;
	fuse_daemonize(copts.foreground);

	if (copts.singlethread) {
		ret = fuse_session_loop(se);
	} else {
		lc = fuse_loop_cfg_create();
		if (!lc) {
			ret = 1;
			goto out_unmount;
		}
		/* glassfs's loop: threads=N workers at most, up to 10 idle */
		fuse_loop_cfg_set_clone_fd(lc, copts.clone_fd);
		fuse_loop_cfg_set_max_threads(lc, mopts.threads);
		fuse_loop_cfg_set_idle_threads(lc, mopts.threads < 10 ? mopts.threads : 10);
		ret = fuse_session_loop_mt(se, lc);
		fuse_loop_cfg_destroy(lc);
	}
	ret = ret ? 1 : 0;
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_fs:
	if (fs)
		dir_free(fs->root.dir);	/* nodes below are leaked on exit: fine */
	free(fs);
	free(mopts.entry_timeout);
	free(mopts.attr_timeout);
	free(mopts.negative_timeout);
out_args:
	free(copts.mountpoint);
	fuse_opt_free_args(&args);
	return ret;
}
