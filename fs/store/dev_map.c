// SPDX-License-Identifier: MIT
/*
 * dev_map.c — sector checksums over a mapping of the device (dev_map.h).
 */
#include "fs/store/dev_map.h"
#include "fs/store/dev.h"
#include "fs/core/core.h"
#include "fs/base/crc32c.h"
#include "fs/base/lock.h"
#include "fs/base/probe.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

enum { MAP_NONE = 0, MAP_BUSY = 1, MAP_OK = 2, MAP_FAILED_ = 3 };

/* The thread's way out of a SIGBUS inside dev_map_crc (NULL: none). */
static __thread sigjmp_buf *map_escape;
static struct sigaction prev_bus;
static pthread_once_t bus_once = PTHREAD_ONCE_INIT;
static int bus_ok;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	if (map_escape)
		siglongjmp(*map_escape, 1);
	/* not a fault of ours: the faulting access runs again under the
	 * disposition there was before us */
	sigaction(SIGBUS, &prev_bus, NULL);
}

static void bus_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	/* NODEFER: the jump out leaves SIGBUS unblocked without a
	 * sigprocmask per call (sigsetjmp(.., 0)) */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	bus_ok = sigaction(SIGBUS, &sa, &prev_bus) == 0;
}

/* The mapping of the whole device, made by the first caller; NULL when it
 * cannot be had.  A caller arriving while another makes it waits for it
 * (one mmap, microseconds): refused, its read would go the ordinary way —
 * the READs a large request is split into arrive together, and the first
 * of them after a mount used to find the mapping busy. */
static const uint8_t *map_get(struct dev *d)
{
	int want = MAP_NONE;
	void *m;

	for (;;) {
		int st = __atomic_load_n(&d->map_state, __ATOMIC_ACQUIRE);
		if (st == MAP_OK)
			return d->map;
		if (st == MAP_FAILED_)
			return NULL;
		if (st == MAP_NONE &&
		    __atomic_compare_exchange_n(&d->map_state, &want, MAP_BUSY, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			break;
		want = MAP_NONE;
		sched_yield();
	}
	pthread_once(&bus_once, bus_install);
	m = bus_ok && d->size ? mmap(NULL, d->size, PROT_READ, MAP_SHARED, d->fd, 0) : MAP_FAILED;
	if (m == MAP_FAILED) {
		__atomic_store_n(&d->map_state, MAP_FAILED_, __ATOMIC_RELEASE);
		return NULL;
	}
	d->map = m;
	__atomic_store_n(&d->map_state, MAP_OK, __ATOMIC_RELEASE);
	return m;
}

/*
 * Are all pages of [off, +len) in the page cache (or being read into it)?
 * A sum over pages that are not would fault each one in, reading a window
 * around it synchronously (mmap read-around), a cold sequential read
 * measured 5-15% slower that way than pread's one request for the range
 * and the kernel's read-ahead behind it: such ranges are left to dev_read.
 */
static bool resident(const uint8_t *m, uint64_t off, uint64_t len)
{
	unsigned char vec[DEV_MAP_MAX_SECTS];
	uint64_t n = len / CORE_SECTORSIZE;

	if (n > DEV_MAP_MAX_SECTS || mincore((void *)(m + off), len, vec) < 0)
		return false;
	for (uint64_t i = 0; i < n; i++)
		if (!(vec[i] & 1))
			return false;
	return true;
}

/* Sum the sectors: 0, or -EIO when a page faulted with SIGBUS.  Nothing
 * is changed between sigsetjmp and the jump but out[] (memory). */
static int crc_sectors(const uint8_t *p, uint32_t n, uint32_t *out)
{
	sigjmp_buf jb;

	if (sigsetjmp(jb, 0)) {
		map_escape = NULL;
		return -EIO;
	}
	map_escape = &jb;
	for (uint32_t i = 0; i < n; i++)
		out[i] = crc32c(0, p + (uint64_t)i * CORE_SECTORSIZE, CORE_SECTORSIZE);
	map_escape = NULL;
	return 0;
}

int dev_map_crc(struct dev *d, uint64_t off, uint32_t n, uint32_t *out)
{
	uint64_t len = (uint64_t)n * CORE_SECTORSIZE;
	const uint8_t *m;
	uint64_t t0;
	int ret;

	if (n > DEV_MAP_MAX_SECTS || off % CORE_SECTORSIZE || off > d->size || len > d->size - off)
		return -EINVAL;
	/* the models act in dev_read: the caller takes that way */
	for (int op = 0; op < 4; op++)
		if (d->lat_ns[op] || __atomic_load_n(&d->fail[op], __ATOMIC_RELAXED) ||
		    d->fail_after[op])
			return -EOPNOTSUPP;
	m = map_get(d);
	if (!m || (!d->map_cold && !resident(m, off, len)))
		return -EOPNOTSUPP;
	if (PROBE_ON(DEV_IO_SUBMIT))
		GLASSFS_DEV_IO_SUBMIT(d->devid, (int)DEV_READ, off, len);
	t0 = PROBE_ON(DEV_IO_DONE) ? glock_now_ns() : 0;
	ret = crc_sectors(m + off, n, out);
	__atomic_fetch_add(&d->cnt.read_ios, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&d->cnt.read_bytes, len, __ATOMIC_RELAXED);
	if (PROBE_ON(DEV_IO_DONE))
		GLASSFS_DEV_IO_DONE(d->devid, (int)DEV_READ, off, len, ret,
				    t0 ? glock_now_ns() - t0 : 0);
	return ret;
}

void dev_map_set_cold(struct dev *d, bool on)
{
	d->map_cold = on;
}

void dev_map_release(struct dev *d)
{
	if (__atomic_load_n(&d->map_state, __ATOMIC_ACQUIRE) == MAP_OK)
		munmap(d->map, d->size);
	d->map = NULL;
	d->map_state = MAP_NONE;
}
