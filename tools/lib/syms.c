// SPDX-License-Identifier: MIT
/*
 * syms.c — kernel and user symbolization.  See syms.h for what it promises.
 */
#include "tools/lib/syms.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

struct sym {
	uint64_t addr;
	uint64_t size;
	const char *name;	/* into the owner's string pool */
};

static int sym__cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The last symbol starting at or below addr. */
static const struct sym *sym__find(const struct sym *s, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &s[lo - 1] : NULL;
}

/* ---- kernel ---------------------------------------------------------- */

struct ksyms {
	struct sym *syms;
	size_t n;
	char *pool;
};

struct ksyms *ksyms__load(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	struct ksyms *ks;
	char line[512], name[256], type;
	unsigned long long addr;
	size_t cap = 0, poolcap = 1 << 20, poollen = 0, nonzero = 0;

	if (!f)
		return NULL;
	ks = calloc(1, sizeof(*ks));
	if (!ks || !(ks->pool = malloc(poolcap)))
		goto nomem;
	while (fgets(line, sizeof(line), f)) {
		size_t len;

		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (addr)
			nonzero++;
		if (ks->n == cap) {
			struct sym *ns;

			cap = cap ? cap * 2 : 65536;
			ns = realloc(ks->syms, cap * sizeof(*ns));
			if (!ns)
				goto nomem;
			ks->syms = ns;
		}
		len = strlen(name) + 1;
		if (poollen + len > poolcap) {
			/* Pool grows: store offsets now, pointers after. */
			char *np;

			poolcap *= 2;
			np = realloc(ks->pool, poolcap);
			if (!np)
				goto nomem;
			ks->pool = np;
		}
		memcpy(ks->pool + poollen, name, len);
		ks->syms[ks->n].addr = addr;
		ks->syms[ks->n].size = 0;
		ks->syms[ks->n].name = (const char *)(uintptr_t)poollen;
		ks->n++;
		poollen += len;
	}
	fclose(f);
	f = NULL;
	if (!nonzero) {
		ksyms__free(ks);
		errno = EPERM;
		return NULL;
	}
	for (size_t i = 0; i < ks->n; i++)
		ks->syms[i].name = ks->pool + (uintptr_t)ks->syms[i].name;
	qsort(ks->syms, ks->n, sizeof(*ks->syms), sym__cmp);
	return ks;
nomem:
	if (f)
		fclose(f);
	ksyms__free(ks);
	errno = ENOMEM;
	return NULL;
}

void ksyms__free(struct ksyms *ks)
{
	if (!ks)
		return;
	free(ks->syms);
	free(ks->pool);
	free(ks);
}

const char *ksyms__name(const struct ksyms *ks, uint64_t addr, uint64_t *off)
{
	const struct sym *s = sym__find(ks->syms, ks->n, addr);

	if (!s)
		return NULL;
	if (off)
		*off = addr - s->addr;
	return s->name;
}

uint64_t ksyms__addr(const struct ksyms *ks, const char *name)
{
	for (size_t i = 0; i < ks->n; i++)
		if (!strcmp(ks->syms[i].name, name))
			return ks->syms[i].addr;
	return 0;
}

/* ---- ELF files ----------------------------------------------------------- */

struct seg {
	uint64_t off, vaddr, filesz;
};

/*
 * A mapped file, keyed by the (device, inode) that /proc/PID/maps shows, so
 * every process mapping the same binary shares one entry (and one table).
 * Created when a snapshot first meets the file, cheaply: the path and, while
 * the mapping process still lives, an open descriptor (through
 * /proc/PID/map_files, else /proc/PID/root/PATH) that keeps the file
 * readable after the process exits, the file is deleted or its mount
 * namespace goes away.  The symbol table is read on the first lookup
 * (elf_file__load()), and the descriptor closed then.
 */
struct elf_file {
	dev_t dev;
	ino_t ino;
	char *path;		/* as mapped, " (deleted)" cut off */
	const char *base;	/* base name, into path */
	int tgid;		/* a process that mapped it: its root for paths */
	int fd;			/* until loaded; -1: none, load opens the path */
	bool loaded;		/* table read (or found unreadable) */
	struct sym *syms;
	size_t n;
	char *pool;
	struct seg *segs;
	size_t nsegs;
	struct elf_file *next;	/* hash chain */
};

/* Append the function symbols of section type `type` (SHT_SYMTAB/DYNSYM). */
static int elf__read_syms(Elf *e, Elf32_Word type, struct elf_file *ef,
			  size_t *cap, size_t *poolcap, size_t *poollen)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int found = 0;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		size_t cnt;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		cnt = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < cnt; i++) {
			GElf_Sym s;
			const char *name;
			size_t len;

			if (!gelf_getsym(d, i, &s))
				continue;
			if (GELF_ST_TYPE(s.st_info) != STT_FUNC &&
			    GELF_ST_TYPE(s.st_info) != STT_GNU_IFUNC)
				continue;
			if (!s.st_value || s.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (!name || !*name)
				continue;
			if (ef->n == *cap) {
				struct sym *ns;

				*cap = *cap ? *cap * 2 : 1024;
				ns = realloc(ef->syms, *cap * sizeof(*ns));
				if (!ns)
					return -ENOMEM;
				ef->syms = ns;
			}
			len = strlen(name) + 1;
			while (*poollen + len > *poolcap) {
				char *np;

				*poolcap = *poolcap ? *poolcap * 2 : 65536;
				np = realloc(ef->pool, *poolcap);
				if (!np)
					return -ENOMEM;
				ef->pool = np;
			}
			memcpy(ef->pool + *poollen, name, len);
			ef->syms[ef->n].addr = s.st_value;
			ef->syms[ef->n].size = s.st_size;
			ef->syms[ef->n].name = (const char *)(uintptr_t)*poollen;
			ef->n++;
			*poollen += len;
			found = 1;
		}
	}
	return found;
}

static int elf__build_id(Elf *e, char *hex, size_t len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			const unsigned char *p = (const unsigned char *)d->d_buf + doff;

			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((char *)d->d_buf + noff, "GNU", 4))
				continue;
			if (nh.n_descsz * 2 + 1 > len || nh.n_descsz < 2)
				return -1;
			for (size_t i = 0; i < nh.n_descsz; i++)
				sprintf(hex + 2 * i, "%02x", p[i]);
			return 0;
		}
	}
	return -1;
}

static int elf__debuglink(Elf *e, char *name, size_t len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx))
		return -1;
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		const char *sn;

		if (!gelf_getshdr(scn, &sh))
			continue;
		sn = elf_strptr(e, shstrndx, sh.sh_name);
		if (!sn || strcmp(sn, ".gnu_debuglink"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_size || strnlen(d->d_buf, d->d_size) >= d->d_size)
			return -1;
		snprintf(name, len, "%s", (char *)d->d_buf);
		return 0;
	}
	return -1;
}

/* An ELF handle on fd, which it then owns: on failure fd is closed. */
static int elf__begin(int fd, Elf **e)
{
	*e = elf_begin(fd, ELF_C_READ, NULL);
	if (!*e || elf_kind(*e) != ELF_K_ELF) {
		if (*e)
			elf_end(*e);
		close(fd);
		return -ENOEXEC;
	}
	return 0;
}

static int elf__open(const char *path, int *fd, Elf **e)
{
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	return elf__begin(*fd, e);
}

/*
 * debuginfod (elfutils' client library), only where the user configured it
 * (DEBUGINFOD_URLS non-empty, as every debuginfod client does): loaded with
 * dlopen so the tools neither need its headers to build nor the library to
 * run.  The library caches what it fetches (DEBUGINFOD_CACHE_PATH, else
 * ~/.cache/debuginfod_client).  Returns an open fd of the debug file or <0.
 */
typedef struct debuginfod_client debuginfod_client;
static struct {
	bool tried;
	void *lib;
	debuginfod_client *client;
	int (*find)(debuginfod_client *, const unsigned char *, int, char **);
} dinfod;

static int debuginfod_fetch(const char *build_id_hex)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	debuginfod_client *(*begin)(void);
	char *path = NULL;
	int fd;

	if (!urls || !*urls)
		return -ENOENT;
	if (!dinfod.tried) {
		dinfod.tried = true;
		dinfod.lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
		if (!dinfod.lib) {
			fprintf(stderr, "syms: DEBUGINFOD_URLS is set but libdebuginfod.so.1 cannot be loaded (apt-get install libdebuginfod1): %s\n",
				dlerror());
			return -ENOENT;
		}
		begin = (debuginfod_client *(*)(void))dlsym(dinfod.lib, "debuginfod_begin");
		dinfod.find = (int (*)(debuginfod_client *, const unsigned char *, int, char **))
			dlsym(dinfod.lib, "debuginfod_find_debuginfo");
		dinfod.client = begin && dinfod.find ? begin() : NULL;
	}
	if (!dinfod.client)
		return -ENOENT;
	/* build-id length 0: the id is given as a hex string */
	fd = dinfod.find(dinfod.client, (const unsigned char *)build_id_hex, 0, &path);
	free(path);
	return fd;
}

/* A separate debug file for a stripped binary: by build-id under
 * /usr/lib/debug, then by .gnu_debuglink, then from debuginfod. */
static int elf__debug_file(Elf *e, const char *path, int *dfd, Elf **de)
{
	char id[128], link[256], dir[PATH_MAX], cand[PATH_MAX + 300];
	const char *slash;
	bool have_id = !elf__build_id(e, id, sizeof(id));

	if (have_id) {
		snprintf(cand, sizeof(cand), "/usr/lib/debug/.build-id/%.2s/%s.debug",
			 id, id + 2);
		if (!elf__open(cand, dfd, de))
			return 0;
	}
	if (elf__debuglink(e, link, sizeof(link)))
		goto remote;
	slash = strrchr(path, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1,
		 slash ? path : ".");
	const char *fmts[] = { "/usr/lib/debug%s/%s", "%s/.debug/%s", "%s/%s" };
	for (size_t i = 0; i < 3; i++) {
		snprintf(cand, sizeof(cand), fmts[i], dir, link);
		if (strcmp(cand, path) && !elf__open(cand, dfd, de))
			return 0;
	}
remote:
	if (have_id && (*dfd = debuginfod_fetch(id)) >= 0 && !elf__begin(*dfd, de))
		return 0;
	return -ENOENT;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * The path to reach ef by name from here: through its process's root while
 * that process lives (right in other mount namespaces), else as mapped.
 */
static void elf_file__local_path(const struct elf_file *ef, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/%d/root%s", ef->tgid, ef->path);
	if (access(buf, F_OK))
		snprintf(buf, len, "%s", ef->path);
}

/*
 * Read ef's load segments and function symbols: .symtab, else the separate
 * debug file's, else .dynsym.  Runs once per file, on its first lookup; a
 * file that cannot be read stays an empty table (its frames print as
 * [file]).  Returns the time it took.
 */
static uint64_t elf_file__load(struct elf_file *ef)
{
	size_t cap = 0, poolcap = 0, poollen = 0, nph;
	char local[PATH_MAX + 64];
	uint64_t t0 = now_ns();
	int fd = ef->fd, dfd, r;
	Elf *e, *de;

	ef->loaded = true;
	ef->fd = -1;
	elf_file__local_path(ef, local, sizeof(local));
	if (fd >= 0 ? elf__begin(fd, &e) : elf__open(local, &fd, &e))
		return now_ns() - t0;
	if (!elf_getphdrnum(e, &nph)) {
		ef->segs = calloc(nph ? nph : 1, sizeof(*ef->segs));
		for (size_t i = 0; ef->segs && i < nph; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, i, &ph) || ph.p_type != PT_LOAD)
				continue;
			ef->segs[ef->nsegs++] = (struct seg){ ph.p_offset,
				ph.p_vaddr, ph.p_filesz };
		}
	}
	r = elf__read_syms(e, SHT_SYMTAB, ef, &cap, &poolcap, &poollen);
	if (r == 0 && !elf__debug_file(e, local, &dfd, &de)) {
		r = elf__read_syms(de, SHT_SYMTAB, ef, &cap, &poolcap, &poollen);
		elf_end(de);
		close(dfd);
	}
	if (r == 0)
		elf__read_syms(e, SHT_DYNSYM, ef, &cap, &poolcap, &poollen);
	elf_end(e);
	close(fd);
	for (size_t i = 0; i < ef->n; i++)
		ef->syms[i].name = ef->pool + (uintptr_t)ef->syms[i].name;
	if (ef->n)
		qsort(ef->syms, ef->n, sizeof(*ef->syms), sym__cmp);
	return now_ns() - t0;
}

static void elf_file__free(struct elf_file *ef)
{
	if (ef->fd >= 0)
		close(ef->fd);
	free(ef->path);
	free(ef->syms);
	free(ef->pool);
	free(ef->segs);
	free(ef);
}

static const char *elf_file__name(const struct elf_file *ef, uint64_t fileoff)
{
	const struct sym *s;

	for (size_t i = 0; i < ef->nsegs; i++) {
		const struct seg *g = &ef->segs[i];
		uint64_t va;

		if (fileoff < g->off || fileoff >= g->off + g->filesz)
			continue;
		va = fileoff - g->off + g->vaddr;
		s = sym__find(ef->syms, ef->n, va);
		if (!s || (s->size && va >= s->addr + s->size))
			return NULL;
		return s->name;
	}
	return NULL;
}

/* ---- processes ---------------------------------------------------------- */

/* An executable mapping of a snapshot. */
struct map {
	uint64_t start, end, off;
	struct elf_file *ef;	/* NULL: anonymous or special */
	const char *base;	/* base name of the file, "vdso" or NULL */
};

struct proc {
	int tgid;
	struct map *maps;	/* the last snapshot + mappings added since */
	size_t n;
	bool whole;		/* maps hold the whole image: snapshotted, or
				 * every mapping added since its exec */
	struct proc *next;
};

#define PROC_BUCKETS 256
#define FILE_BUCKETS 256

struct syms_cache {
	struct proc *procs[PROC_BUCKETS];
	struct elf_file *files[FILE_BUCKETS];	/* the one file cache */
	struct syms_stats st;
};

struct syms_cache *syms_cache__new(void)
{
	static int elf_ready;

	if (!elf_ready) {
		if (elf_version(EV_CURRENT) == EV_NONE)
			return NULL;
		elf_ready = 1;
	}
	return calloc(1, sizeof(struct syms_cache));
}

static void proc__free_maps(struct proc *p)
{
	free(p->maps);
	p->maps = NULL;
	p->n = 0;
}

void syms_cache__free(struct syms_cache *sc)
{
	if (!sc)
		return;
	for (int i = 0; i < PROC_BUCKETS; i++) {
		struct proc *p = sc->procs[i], *n;

		for (; p; p = n) {
			n = p->next;
			proc__free_maps(p);
			free(p);
		}
	}
	for (int i = 0; i < FILE_BUCKETS; i++) {
		for (struct elf_file *ef = sc->files[i], *n; ef; ef = n) {
			n = ef->next;
			elf_file__free(ef);
		}
	}
	free(sc);
}

/*
 * Open ef through tgid, which maps it at [start, end), unless it is open or
 * loaded already (1 if opened now): map_files names the mapped file itself, wherever it lives
 * (deleted, another mount namespace), but needs CAP_SYS_ADMIN (or
 * CAP_CHECKPOINT_RESTORE); else the path through tgid's root.  Failing
 * both (tgid gone, out of descriptors) the load opens the path.
 */
static int elf_file__pin(struct elf_file *ef, int tgid, uint64_t start,
			 uint64_t end)
{
	char via[PATH_MAX + 64];

	if (ef->fd >= 0 || ef->loaded)
		return 0;
	snprintf(via, sizeof(via), "/proc/%d/map_files/%llx-%llx", tgid,
		 (unsigned long long)start, (unsigned long long)end);
	ef->fd = open(via, O_RDONLY | O_CLOEXEC);
	if (ef->fd < 0) {
		snprintf(via, sizeof(via), "/proc/%d/root%s", tgid, ef->path);
		ef->fd = open(via, O_RDONLY | O_CLOEXEC);
	}
	if (ef->fd < 0)
		return 0;
	ef->tgid = tgid;
	return 1;
}

/*
 * The entry of the file mapped at [start, end) in tgid, created on first
 * sight, and opened (pinned) now when pin is set.  NULL only without
 * memory.
 */
static struct elf_file *syms_cache__file(struct syms_cache *sc, int tgid,
					 uint64_t start, uint64_t end,
					 dev_t dev, ino_t ino, const char *path,
					 bool pin)
{
	struct elf_file **b = &sc->files[(unsigned)(dev * 31 + ino) % FILE_BUCKETS];
	struct elf_file *ef;
	const char *sl;

	for (ef = *b; ef; ef = ef->next)
		if (ef->dev == dev && ef->ino == ino)
			break;
	if (!ef) {
		ef = calloc(1, sizeof(*ef));
		if (!ef || !(ef->path = strdup(path))) {
			free(ef);
			return NULL;
		}
		ef->dev = dev;
		ef->ino = ino;
		ef->tgid = tgid;
		ef->fd = -1;
		sl = strrchr(ef->path, '/');
		ef->base = sl ? sl + 1 : ef->path;
		ef->next = *b;
		*b = ef;
		sc->st.files++;
	}
	if (pin)
		sc->st.pinned += elf_file__pin(ef, tgid, start, end);
	return ef;
}

static struct proc *syms_cache__proc(struct syms_cache *sc, int tgid, int create)
{
	struct proc **b = &sc->procs[(unsigned)tgid % PROC_BUCKETS], *p;

	for (p = *b; p; p = p->next)
		if (p->tgid == tgid)
			return p;
	if (!create || !(p = calloc(1, sizeof(*p))))
		return NULL;
	p->tgid = tgid;
	p->next = *b;
	*b = p;
	sc->st.procs++;
	return p;
}

/* *m for the file mapped at [start, end); 0 or -ENOMEM. */
static int map__set(struct syms_cache *sc, int tgid, struct map *m,
		    uint64_t start, uint64_t end, uint64_t off, dev_t dev,
		    ino_t ino, const char *path, bool pin)
{
	char file[PATH_MAX];
	size_t len;

	*m = (struct map){ start, end, off, NULL, NULL };
	if (!strcmp(path, "[vdso]"))
		m->base = "vdso";
	if (path[0] != '/' || !ino)
		return 0;
	snprintf(file, sizeof(file), "%s", path);
	len = strlen(file);
	if (len > 10 && !strcmp(file + len - 10, " (deleted)"))
		file[len - 10] = 0;
	m->ef = syms_cache__file(sc, tgid, start, end, dev, ino, file, pin);
	if (!m->ef)
		return -ENOMEM;
	m->base = m->ef->base;
	return 0;
}

/* One executable mapping of a /proc/PID/maps line into *m; 0 if the line
 * is not one (not executable, or unparsable). */
static int parse_map(struct syms_cache *sc, int tgid, const char *line,
		     struct map *m, int *nomem)
{
	unsigned long long s, e, off, ino;
	unsigned maj, min;
	char perm[8], file[PATH_MAX];
	int pos = 0;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu%n", &s, &e, perm, &off,
		   &maj, &min, &ino, &pos) < 7 || perm[2] != 'x')
		return 0;
	file[0] = 0;
	sscanf(line + pos, " %4095[^\n]", file);
	if (map__set(sc, tgid, m, s, e, off, makedev(maj, min), ino, file, true))
		*nomem = 1;
	return 1;
}

int syms_cache__snapshot(struct syms_cache *sc, int tgid)
{
	char path[64], line[PATH_MAX + 128];
	struct map *maps = NULL;
	size_t n = 0, cap = 0;
	uint64_t t0 = now_ns();
	int nomem = 0, err = 0;
	struct proc *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", tgid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (!nomem && fgets(line, sizeof(line), f)) {
		if (n == cap) {
			struct map *nm;

			cap = cap ? cap * 2 : 64;
			nm = realloc(maps, cap * sizeof(*nm));
			if (!nm) {
				nomem = 1;
				break;
			}
			maps = nm;
		}
		n += parse_map(sc, tgid, line, &maps[n], &nomem);
	}
	fclose(f);
	p = NULL;
	if (nomem)
		err = -ENOMEM;
	else if (!n)		/* a zombie: keep what we had */
		err = -ESRCH;
	else if (!(p = syms_cache__proc(sc, tgid, 1)))
		err = -ENOMEM;
	if (err) {
		free(maps);
		return err;
	}
	proc__free_maps(p);
	p->maps = maps;
	p->n = n;
	p->whole = true;
	sc->st.snapshots++;
	sc->st.snapshot_ns += now_ns() - t0;
	return 0;
}

int syms_cache__add_map(struct syms_cache *sc, int tgid, uint64_t start,
			uint64_t end, uint64_t off, unsigned maj, unsigned min,
			uint64_t ino, const char *path)
{
	struct proc *p = syms_cache__proc(sc, tgid, 1);
	struct map *nm;

	if (!p)
		return -ENOMEM;
	/* Grown one at a time: a process maps a handful of files. */
	nm = realloc(p->maps, (p->n + 1) * sizeof(*nm));
	if (!nm)
		return -ENOMEM;
	p->maps = nm;
	if (map__set(sc, tgid, &nm[p->n], start, end, off, makedev(maj, min),
		     ino, path, false))
		return -ENOMEM;
	p->n++;
	sc->st.added++;
	return 0;
}

void syms_cache__exec(struct syms_cache *sc, int tgid)
{
	struct proc *p = syms_cache__proc(sc, tgid, 1);

	if (p) {
		proc__free_maps(p);
		p->whole = true;
	}
}

int syms_cache__fork(struct syms_cache *sc, int parent, int child)
{
	struct proc *pp = syms_cache__proc(sc, parent, 0), *cp;
	struct map *maps;

	if (!pp || !pp->n)
		return 0;
	maps = malloc(pp->n * sizeof(*maps));
	cp = maps ? syms_cache__proc(sc, child, 1) : NULL;
	if (!cp) {
		free(maps);
		return -ENOMEM;
	}
	memcpy(maps, pp->maps, pp->n * sizeof(*maps));
	proc__free_maps(cp);
	cp->maps = maps;
	cp->n = pp->n;
	cp->whole = pp->whole;
	return 0;
}

void syms_cache__pin(struct syms_cache *sc, int tgid)
{
	struct proc *p = syms_cache__proc(sc, tgid, 0);

	for (size_t i = 0; p && i < p->n; i++)
		if (p->maps[i].ef)
			sc->st.pinned += elf_file__pin(p->maps[i].ef, tgid,
						       p->maps[i].start,
						       p->maps[i].end);
}

bool syms_cache__has(struct syms_cache *sc, int tgid)
{
	struct proc *p = syms_cache__proc(sc, tgid, 0);

	return p && p->whole;
}

const char *syms_cache__name(struct syms_cache *sc, int tgid, uint64_t addr,
			     const char **module)
{
	struct proc *p = syms_cache__proc(sc, tgid, 0);

	if (module)
		*module = NULL;
	/* Never snapshotted (or only some mappings added): while the
	 * process lives, its maps are one read away. */
	if (!p || !p->whole) {
		syms_cache__snapshot(sc, tgid);
		p = syms_cache__proc(sc, tgid, 0);
		if (!p)
			return NULL;
		p->whole = true;	/* gone: what we have is all there is */
	}
	/* Newest first: a mapping added later replaces what it overlaps. */
	for (size_t i = p->n; i-- > 0;) {
		const struct map *m = &p->maps[i];

		if (addr < m->start || addr >= m->end)
			continue;
		if (module)
			*module = m->base;
		if (!m->ef)
			return NULL;
		if (!m->ef->loaded) {
			sc->st.load_ns += elf_file__load(m->ef);
			sc->st.files_loaded++;
		}
		return elf_file__name(m->ef, addr - m->start + m->off);
	}
	return NULL;
}

void syms_cache__stats(const struct syms_cache *sc, struct syms_stats *st)
{
	*st = sc->st;
}
