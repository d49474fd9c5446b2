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
 *   - processes that exit: a snapshot taken while the process lived stays
 *     usable (take one when a process is first seen and again at its exit,
 *     syms_cache__snapshot()); an address of a pid never snapshotted is
 *     snapshotted on first use if the process still lives.
 * ELF files are loaded once per (device, inode) and shared by processes.
 * Not thread-safe.
 */
#ifndef GLASS_SYMS_H
#define GLASS_SYMS_H

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
/* (Re)read /proc/TGID/maps and load the mapped ELF files.  A failed
 * re-read (process gone) keeps the previous snapshot.  0 or -errno. */
int syms_cache__snapshot(struct syms_cache *sc, int tgid);
/* The function containing addr in tgid, or NULL.  *module (may be NULL)
 * gets the mapped file's base name when the address is in a mapping. */
const char *syms_cache__name(struct syms_cache *sc, int tgid, uint64_t addr,
			     const char **module);

#endif
