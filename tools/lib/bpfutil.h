/* SPDX-License-Identifier: MIT */
/*
 * bpfutil.h — what every BPF loader does the same way: the libbpf print
 * callback (set once), the checks that turn "permission denied" into a
 * sentence (not root, no BTF, target gone), and USDT helpers (does this
 * binary carry glassfs probes; attach one program to one probe).
 *
 * Every function that can fail prints its own one-line error to stderr,
 * prefixed with the tool's name, and returns -errno.
 */
#ifndef GLASS_BPFUTIL_H
#define GLASS_BPFUTIL_H

#include <stdbool.h>
#include <sys/types.h>

struct bpf_program;
struct bpf_link;
struct ring_buffer;
struct mmapwatch;
struct syms_cache;

/* Install the libbpf print callback: warnings always, debug if verbose. */
void bpfutil__init(const char *tool, bool verbose);
/* Root and kernel BTF present; 0 or -EPERM / -ENOENT with a message. */
int bpfutil__check_env(void);
/* The process (or thread with tid=true) exists; 0 or -ESRCH. */
int bpfutil__check_pid(pid_t pid, bool tid);
/*
 * A tracer's start, once its arguments are parsed: root and BTF
 * (bpfutil__check_env), the signal handlers (bpfutil__run_for(0): a
 * signal that arrives while loading ends the run instead of being lost or
 * killing us unreported), then the target process pid and thread tid
 * exist (0: none given).  0, or -errno with the message printed.
 */
int bpfutil__start(pid_t pid, pid_t tid);
/* Run-until: seconds (0 = until Ctrl-C).  Installs SIGINT/SIGTERM handlers
 * (call it once early with 0 so no signal is lost while loading, again
 * with the duration once attached); bpfutil__exiting() turns true on a
 * signal or at the deadline. */
void bpfutil__run_for(unsigned seconds);
bool bpfutil__exiting(void);
/* Milliseconds left until the deadline (rounded up), -1 without one: the
 * timeout for a poll that should sleep until an event, a signal (EINTR:
 * the handlers are installed without SA_RESTART) or the deadline. */
int bpfutil__wait_ms(void);

/*
 * USDT.  The binary is PATH, or /proc/PID/exe when path is NULL.
 * bpfutil__usdt_count() returns how many notes of `provider` the binary
 * has (0 = none, with a clear message printed), or -errno.
 * bpfutil__usdt_attach() attaches prog to provider:name in the binary
 * (pid -1 = every process running it); NULL with a message on failure.
 */
int bpfutil__usdt_binary(pid_t pid, const char *path, char *out, size_t len);
int bpfutil__usdt_count(const char *binary, const char *provider);
struct bpf_link *bpfutil__usdt_attach(struct bpf_program *prog, pid_t pid,
				      const char *binary, const char *provider,
				      const char *name);

const char *bpfutil__tool(void);

/*
 * Does the running kernel's BTF have a tracepoint usable by tp_btf
 * (`btf_trace_NAME`), and, if member is not NULL, does `struct STRUCT`
 * have that member?  For a program that only some kernels can load (do
 * not autoload it elsewhere).  Quiet: false when the BTF cannot be read.
 */
bool bpfutil__kernel_has_tp(const char *tp);
bool bpfutil__kernel_has_member(const char *strct, const char *member);

/*
 * Read every entry of a BPF hash map into one malloc'd array of elements
 * of elem_size bytes each: the key at offset 0 (key_size bytes), the value
 * at val_off.  keep (NULL: keep all) drops elements it returns false for;
 * entries deleted between the key walk and the lookup are skipped.  Out of
 * memory ends the read early with what was read.  Returns the count; the
 * caller sorts and frees *out.
 */
size_t bpfutil__map_read(int fd, size_t key_size, size_t val_off, size_t elem_size,
			 bool (*keep)(const void *elem), void **out);

/* Sort n elements of size bytes by the 64-bit unsigned value at offset off
 * in each, largest first (map entries by count or time, for printing). */
void bpfutil__sort_desc(void *v, size_t n, size_t size, size_t off);
/* bpfutil__map_read(), then sorted largest first by the 64-bit value at
 * sort_off of each element: what the tools print. */
size_t bpfutil__map_top(int fd, size_t key_size, size_t val_off, size_t elem_size,
			bool (*keep)(const void *elem), size_t sort_off, void **out);

/*
 * A counter of a per-CPU array of __u64 (the tools' "lost"/"fired"
 * counters): *sum = the value at key summed over every possible CPU.
 * 0, or -errno (no such key, out of memory) with *sum = 0.
 */
int bpfutil__percpu_sum(int fd, unsigned key, unsigned long long *sum);

/*
 * Prime a hash map made with BPF_F_NO_PREALLOC before its programs run.
 * The kernel hands such a map's entries out of a per-CPU cache that it
 * fills with ONE entry per CPU at creation when an entry is over 256 bytes
 * (a stack is 1016), and refills only from irq_work, which cannot run
 * inside the program (perf event interrupt, sched_switch with interrupts
 * off): a program that stores two new stacks in its first run on a CPU
 * (a sample's kernel and user stack) loses the second to -ENOMEM, although
 * the table is empty.  Priming inserts a few entries on every online CPU
 * (pinned there) and deletes them, which leaves each CPU's cache holding
 * entries.  Dummy keys; the map is empty again afterwards.  0 or -errno
 * (a map with fewer than 8 entries cannot be primed fully: it says so).
 * A program that stores at most one new entry per run, with interrupts
 * on (glass-lockstat's uprobe: the refill runs between runs), needs none.
 */
int bpfutil__prime_map(int fd);

/*
 * Read the stack stored under hash in a stack table (bpf/stacktab.h) into
 * ips, STACK_MAX_DEPTH (127) __u64 addresses, zero-filled past its end.
 * false (ips all zero) for hash 0 ("no stack") or a hash not in the table.
 */
bool bpfutil__read_stack(int fd, unsigned long long hash, void *ips);

/* Run a BPF task iterator once (read it to its end).  0 or -errno. */
int bpfutil__run_iter(struct bpf_link *link);

/* vm.mmap_min_addr: nothing can be mapped below it, so a user-stack walk
 * need not read there.  4096 when it cannot be read (page 0 is never
 * mapped on this architecture's defaults). */
unsigned long long bpfutil__mmap_min_addr(void);

/*
 * The tracers' main wait: sleep until the ring buffer has events (a
 * process seen first, exec'ing or exiting), the mmap log mw (may be NULL)
 * is a quarter full, a signal, or the end of bpfutil__run_for()'s
 * duration; consume them (mmap records into sc) and wait again, until
 * bpfutil__exiting().  No polling while the programs do the work.
 * 0, or -errno with a message printed.
 */
int bpfutil__wait_events(struct ring_buffer *rb, struct mmapwatch *mw,
			 struct syms_cache *sc);

#endif
