/* SPDX-License-Identifier: MIT */
/*
 * syms.h — THE symbolizer of the tools: kernel addresses through
 * /proc/kallsyms, user addresses through a snapshot of /proc/PID/maps and
 * the ELF symbol tables of the mapped files.
 *
 * User side, what it handles:
 *   - PIE executables and shared objects: an address is turned into a file
 *     offset through its mapping, then into the ELF's virtual address
 *     through the PT_LOAD segment that holds that offset (the load bias);
 *   - .symtab, else .dynsym; stripped files through their separate debug
 *     file, by build-id (/usr/lib/debug/.build-id/xx/yyyy.debug), by
 *     .gnu_debuglink (/usr/lib/debug/DIR, DIR/.debug, DIR), else from a
 *     debuginfod server when DEBUGINFOD_URLS is set (libdebuginfod.so.1,
 *     loaded at run time);
 *   - other mount namespaces: files are opened as /proc/PID/root/PATH;
 *   - processes that exit: a process's maps come from a snapshot of
 *     /proc/PID/maps (syms_cache__snapshot(): tens of microseconds, no
 *     symbol read) and from the kernel's mmap log (syms_cache__add_map(),
 *     __exec(), __fork(), fed by tools/lib/mmapwatch.c), which knows the
 *     maps of a process that exited before anyone could read them; the
 *     symbol tables are read later, on the first lookup in each file, from
 *     a descriptor opened while a process mapping it lived (map_files,
 *     else /proc/PID/root/PATH) or by path — after the process exited,
 *     its binary was deleted or its mount namespace went away.  An
 *     address of a pid never seen is snapshotted on first use if the
 *     process still lives.
 * Files are keyed by the (device, inode) the maps show: processes of one
 * binary share one entry and one table.  A descriptor is held from a
 * file's first sight in a snapshot or syms_cache__pin() to its first
 * lookup (one per distinct file).
 * Not thread-safe.
 */
#ifndef GLASS_SYMS_H
#define GLASS_SYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ksyms;
struct syms_cache;

/* Load /proc/kallsyms.  NULL with errno set (EPERM when addresses are
 * hidden by kptr_restrict: run as root). */
struct ksyms *ksyms__load(void);
void ksyms__free(struct ksyms *ks);			/* NULL-safe */
/* The function containing addr, or NULL.  *off gets addr - start. */
const char *ksyms__name(const struct ksyms *ks, uint64_t addr, uint64_t *off);
/* The address of a kernel function by name (linear scan), 0 if absent. */
uint64_t ksyms__addr(const struct ksyms *ks, const char *name);

struct syms_cache *syms_cache__new(void);
void syms_cache__free(struct syms_cache *sc);		/* NULL-safe */
/* (Re)read /proc/TGID/maps: the executable mappings, and a descriptor of
 * each file not met before.  No symbol is read here.  A failed re-read
 * (process gone: -ENOENT, zombie: -ESRCH) keeps the previous snapshot.
 * 0 or -errno. */
int syms_cache__snapshot(struct syms_cache *sc, int tgid);
/* One executable mapping of tgid as the kernel logged it when it was made
 * (tools/lib/mmapwatch.c): added to tgid's maps, newer than what it
 * overlaps.  The file is not opened (the log covers every process of the
 * system): syms_cache__pin() does that for the processes that matter.
 * 0 or -ENOMEM. */
int syms_cache__add_map(struct syms_cache *sc, int tgid, uint64_t start,
			uint64_t end, uint64_t off, unsigned maj, unsigned min,
			uint64_t ino, const char *path);
/* tgid exec'ed: forget its maps (the new image's follow). */
void syms_cache__exec(struct syms_cache *sc, int tgid);
/* parent forked child: child starts with a copy of parent's maps (none if
 * parent is unknown).  0 or -ENOMEM. */
int syms_cache__fork(struct syms_cache *sc, int parent, int child);
/* Does sc hold tgid's whole image (snapshotted, or logged since its exec
 * or its fork from a process it held whole)?  Then, with the mmap log
 * running, a snapshot would add nothing. */
bool syms_cache__has(struct syms_cache *sc, int tgid);
/* Open, while tgid lives, the files it maps that are neither open nor
 * loaded yet, as a snapshot does: they then resolve after tgid exits, its
 * binary is deleted or its mount namespace goes. */
void syms_cache__pin(struct syms_cache *sc, int tgid);
/* The function containing addr in tgid, or NULL.  *module (may be NULL)
 * gets the mapped file's base name when the address is in a mapping. */
const char *syms_cache__name(struct syms_cache *sc, int tgid, uint64_t addr,
			     const char **module);

/* What the cache did, for -v and the tests. */
struct syms_stats {
	size_t procs;		/* processes with a snapshot */
	size_t snapshots;	/* successful reads of /proc/PID/maps */
	size_t added;		/* mappings added by syms_cache__add_map() */
	size_t files;		/* distinct mapped files met */
	size_t pinned;		/* files opened to be read later */
	size_t files_loaded;	/* of those, symbol tables read */
	uint64_t snapshot_ns;	/* time in snapshots (maps + opens) */
	uint64_t load_ns;	/* time reading symbol tables */
};
void syms_cache__stats(const struct syms_cache *sc, struct syms_stats *st);

#endif
