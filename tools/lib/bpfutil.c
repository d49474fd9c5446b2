// SPDX-License-Identifier: MIT
/* bpfutil.c — shared loader plumbing.  See bpfutil.h. */
#include "tools/lib/bpfutil.h"
#include "tools/lib/mmapwatch.h"

#include <linux/types.h>
#include "bpf/stacktab.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <sched.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

static const char *tool_name = "glass";
static bool verbose_print;
static volatile sig_atomic_t exiting;
static struct timespec deadline;
static bool have_deadline;

const char *bpfutil__tool(void) { return tool_name; }

static struct btf *vmlinux_btf(void)
{
	static struct btf *btf;
	static bool tried;

	if (!tried) {
		tried = true;
		btf = btf__load_vmlinux_btf();
		if (libbpf_get_error(btf))
			btf = NULL;
	}
	return btf;
}

bool bpfutil__kernel_has_tp(const char *tp)
{
	struct btf *btf = vmlinux_btf();
	char name[128];

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	return btf && btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF) > 0;
}

bool bpfutil__kernel_has_member(const char *strct, const char *member)
{
	struct btf *btf = vmlinux_btf();
	const struct btf_type *t;
	const struct btf_member *m;
	int id;

	if (!btf || (id = btf__find_by_name_kind(btf, strct, BTF_KIND_STRUCT)) <= 0)
		return false;
	t = btf__type_by_id(btf, id);
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(btf, m->name_off);

		if (n && !strcmp(n, member))
			return true;
	}
	return false;
}

static int print_fn(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !verbose_print)
		return 0;
	if (level == LIBBPF_INFO && !verbose_print)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void bpfutil__init(const char *tool, bool verbose)
{
	tool_name = tool;
	verbose_print = verbose;
	libbpf_set_print(print_fn);
}

int bpfutil__check_env(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "%s: must run as root (loading BPF programs needs CAP_BPF and CAP_PERFMON)\n",
			tool_name);
		return -EPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		fprintf(stderr, "%s: no kernel BTF at /sys/kernel/btf/vmlinux: this kernel was built without CONFIG_DEBUG_INFO_BTF, CO-RE tools cannot run\n",
			tool_name);
		return -ENOENT;
	}
	return 0;
}

int bpfutil__check_pid(pid_t pid, bool tid)
{
	char path[64];

	if (pid <= 0) {
		fprintf(stderr, "%s: invalid %s %d\n", tool_name, tid ? "TID" : "PID", pid);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (access(path, F_OK)) {
		fprintf(stderr, "%s: no such %s: %d (gone?)\n", tool_name,
			tid ? "thread" : "process", pid);
		return -ESRCH;
	}
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	exiting = 1;
}

int bpfutil__start(pid_t pid, pid_t tid)
{
	int err = bpfutil__check_env();

	if (err)
		return err;
	bpfutil__run_for(0);
	if (pid && (err = bpfutil__check_pid(pid, false)))
		return err;
	if (tid && (err = bpfutil__check_pid(tid, true)))
		return err;
	return 0;
}

void bpfutil__run_for(unsigned seconds)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	have_deadline = seconds > 0;
	if (have_deadline) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += seconds;
	}
}

int bpfutil__wait_ms(void)
{
	struct timespec now;
	long long ms;

	if (!have_deadline)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (deadline.tv_sec - now.tv_sec) * 1000LL +
	     (deadline.tv_nsec - now.tv_nsec + 999999) / 1000000;
	return ms < 0 ? 0 : ms > INT_MAX ? INT_MAX : (int)ms;
}

bool bpfutil__exiting(void)
{
	struct timespec now;

	if (exiting)
		return true;
	if (!have_deadline)
		return false;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > deadline.tv_sec ||
	       (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec);
}

int bpfutil__usdt_binary(pid_t pid, const char *path, char *out, size_t len)
{
	ssize_t n;
	char exe[64];

	if (path) {
		if (access(path, R_OK)) {
			fprintf(stderr, "%s: cannot read %s: %s\n", tool_name,
				path, strerror(errno));
			return -errno;
		}
		snprintf(out, len, "%s", path);
		return 0;
	}
	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	n = readlink(exe, out, len - 1);
	if (n < 0) {
		fprintf(stderr, "%s: no such process: %d (gone?)\n", tool_name, pid);
		return -ESRCH;
	}
	out[n] = 0;
	/* Read through /proc/PID/exe: right in other mount namespaces too. */
	snprintf(out, len, "/proc/%d/exe", pid);
	return 0;
}

int bpfutil__usdt_count(const char *binary, const char *provider)
{
	int fd, count = 0;
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(binary, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: cannot open %s: %s\n", tool_name, binary,
			strerror(errno));
		return -errno;
	}
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getshdrstrndx(e, &shstrndx)) {
		fprintf(stderr, "%s: %s is not an ELF file\n", tool_name, binary);
		if (e)
			elf_end(e);
		close(fd);
		return -ENOEXEC;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;
		const char *sn;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		sn = elf_strptr(e, shstrndx, sh.sh_name);
		if (!sn || strcmp(sn, ".note.stapsdt"))
			continue;
		d = elf_getdata(scn, NULL);
		while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			const char *desc = (const char *)d->d_buf + doff;
			size_t skip = 3 * 8;	/* pc, base, semaphore */

			if (nh.n_type != 3 || nh.n_descsz <= skip)
				continue;
			if (!strncmp(desc + skip, provider, nh.n_descsz - skip) &&
			    strlen(provider) < nh.n_descsz - skip &&
			    desc[skip + strlen(provider)] == 0)
				count++;
		}
	}
	elf_end(e);
	close(fd);
	if (!count)
		fprintf(stderr, "%s: %s has no USDT probes of provider \"%s\" (not a glassfs binary, or built without probes)\n",
			tool_name, binary, provider);
	return count;
}

struct bpf_link *bpfutil__usdt_attach(struct bpf_program *prog, pid_t pid,
				      const char *binary, const char *provider,
				      const char *name)
{
	struct bpf_link *l;

	l = bpf_program__attach_usdt(prog, pid, binary, provider, name, NULL);
	if (!l)
		fprintf(stderr, "%s: cannot attach to USDT %s:%s in %s: %s\n",
			tool_name, provider, name, binary, strerror(errno));
	return l;
}

size_t bpfutil__map_read(int fd, size_t key_size, size_t val_off, size_t elem_size,
			 bool (*keep)(const void *elem), void **out)
{
	char *v = NULL, *prev = malloc(key_size);
	bool have_prev = false;
	size_t n = 0, cap = 0;

	*out = NULL;
	if (!prev)
		return 0;
	for (;;) {
		if (n == cap) {
			char *nv;

			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * elem_size);
			if (!nv)
				break;
			v = nv;
		}
		char *e = v + n * elem_size;

		if (bpf_map_get_next_key(fd, have_prev ? prev : NULL, e))
			break;
		memcpy(prev, e, key_size);
		have_prev = true;
		if (!bpf_map_lookup_elem(fd, e, e + val_off) && (!keep || keep(e)))
			n++;
	}
	free(prev);
	if (!n) {
		free(v);
		v = NULL;
	}
	*out = v;
	return n;
}

static int u64_desc(const void *a, const void *b, void *off)
{
	__u64 x, y;

	memcpy(&x, (const char *)a + (size_t)off, sizeof(x));
	memcpy(&y, (const char *)b + (size_t)off, sizeof(y));
	return x < y ? 1 : x > y ? -1 : 0;
}

void bpfutil__sort_desc(void *v, size_t n, size_t size, size_t off)
{
	if (n > 1)
		qsort_r(v, n, size, u64_desc, (void *)off);
}

size_t bpfutil__map_top(int fd, size_t key_size, size_t val_off, size_t elem_size,
			bool (*keep)(const void *elem), size_t sort_off, void **out)
{
	size_t n = bpfutil__map_read(fd, key_size, val_off, elem_size, keep, out);

	bpfutil__sort_desc(*out, n, elem_size, sort_off);
	return n;
}

int bpfutil__percpu_sum(int fd, unsigned key, unsigned long long *sum)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals;
	__u32 k = key;
	int err = 0;

	*sum = 0;
	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &k, vals))
		err = -errno;
	else
		for (int i = 0; i < ncpu; i++)
			*sum += vals[i];
	free(vals);
	return err;
}

/* Entries primed per CPU: enough for one program run's new stacks and
 * aggregation entries (the kernel keeps up to 12 of a 2 KiB unit cached). */
#define PRIME_PER_CPU	8

int bpfutil__prime_map(int fd)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);
	int ncpu = libbpf_num_possible_cpus(), err = 0;
	cpu_set_t old, one;
	char *key = NULL, *val = NULL;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (sched_getaffinity(0, sizeof(old), &old))
		return -errno;
	key = calloc(1, info.key_size);
	val = calloc(1, info.value_size);
	if (!key || !val) {
		err = -ENOMEM;
		goto out;
	}
	/* Every CPU the programs may run on, not only the ones we may: a
	 * CPU we cannot move to (offline, outside our cpuset) is skipped. */
	for (int cpu = 0; cpu < ncpu && cpu < CPU_SETSIZE && !err; cpu++) {
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			continue;
		/* Keys 0xff..ff, 0xff..fe, ...: deleted before any program runs. */
		for (unsigned i = 0; i < PRIME_PER_CPU && !err; i++) {
			memset(key, 0xff, info.key_size);
			key[0] = (char)(0xff - i);
			if (bpf_map_update_elem(fd, key, val, BPF_NOEXIST))
				err = -errno;
		}
		for (unsigned i = 0; i < PRIME_PER_CPU; i++) {
			memset(key, 0xff, info.key_size);
			key[0] = (char)(0xff - i);
			bpf_map_delete_elem(fd, key);
		}
	}
	if (sched_setaffinity(0, sizeof(old), &old) && !err)
		err = -errno;
out:
	free(key);
	free(val);
	if (err)
		fprintf(stderr, "%s: cannot prime map %s: %s\n", tool_name, info.name, strerror(-err));
	return err;
}

bool bpfutil__read_stack(int fd, unsigned long long hash, void *ips)
{
	__u64 h = hash;

	memset(ips, 0, sizeof(struct stack_ips));
	return h && !bpf_map_lookup_elem(fd, &h, ips);
}

int bpfutil__run_iter(struct bpf_link *link)
{
	char buf[64];
	int fd;

	if (!link)
		return -ENOENT;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0)
		return fd;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	return 0;
}

unsigned long long bpfutil__mmap_min_addr(void)
{
	unsigned long long v = 4096;
	FILE *f = fopen("/proc/sys/vm/mmap_min_addr", "r");

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 4096;
		fclose(f);
	}
	return v;
}

int bpfutil__wait_events(struct ring_buffer *rb, struct mmapwatch *mw,
			 struct syms_cache *sc)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), err = 0;

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, ring_buffer__epoll_fd(rb),
				&(struct epoll_event){ .events = EPOLLIN }) ||
	    (mw && mmapwatch__add_to_epoll(mw, ep))) {
		err = -errno;
		fprintf(stderr, "%s: epoll: %s\n", tool_name, strerror(errno));
		if (ep >= 0)
			close(ep);
		return err;
	}
	while (!bpfutil__exiting()) {
		struct epoll_event evs[8];

		/* EINTR: our signals end the loop through bpfutil__exiting();
		 * any other (SIGCONT after a stop) only wakes us. */
		if (epoll_wait(ep, evs, 8, bpfutil__wait_ms()) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		if (mw && (err = mmapwatch__drain(mw, sc)) < 0)
			break;
		err = ring_buffer__consume(rb);
		if (err < 0)
			break;
	}
	close(ep);
	if (err < 0) {
		fprintf(stderr, "%s: waiting for events: %s\n", tool_name, strerror(-err));
		return err;
	}
	return 0;
}
