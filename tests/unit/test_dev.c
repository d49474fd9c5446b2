// SPDX-License-Identifier: MIT
/*
 * test_dev.c — fs/store/dev.c on image files: positional I/O round trips, range
 * checks, reads past the end, discard punches holes, flush, counters, the
 * read-only mode, the latency model and the error model; checksums over
 * the device's mapping (dev_map.c), a page that cannot be read giving
 * -EIO instead of killing the process with SIGBUS, threads meeting a fresh
 * mapping all reading through it.  SEED=n replays.
 */
#include "fs/store/dev.h"
#include "fs/store/dev_map.h"
#include "fs/base/crc32c.h"
#include "fs/base/lock.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "tmp_image.h"

struct slow_discard { struct dev *d; int done; };

static void *discard_bg(void *arg)
{
	struct slow_discard *sd = arg;

	dev_discard(sd->d, 2 << 20, 1 << 20);
	__atomic_store_n(&sd->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Threads reading through a fresh device's mapping at once: the first
 * makes it, the rest must wait for it rather than be refused (a refused
 * read goes the ordinary way — splice.test saw one 256 KiB READ of four
 * arriving together after a remount copied instead of spliced). */
enum { MAP_RACERS = 8 };
struct map_race { struct dev *d; pthread_barrier_t *bar; int refused; };

static void *map_racer(void *arg)
{
	struct map_race *r = arg;
	uint32_t got[4];

	pthread_barrier_wait(r->bar);
	r->refused = dev_map_crc(r->d, 1 << 20, 4, got) != 0;
	return NULL;
}

int main(void)
{
	const char *e = getenv("SEED");
	unsigned seed = e ? (unsigned)strtoul(e, NULL, 0) : (unsigned)(time(NULL) ^ getpid());
	static char img[256];
	const uint64_t size = 8 << 20;
	struct dev *d = NULL, *ro = NULL;
	struct dev_counters cnt;
	uint8_t *a = malloc(1 << 20), *b = malloc(1 << 20);
	int fd, ok = 1;

	printf("seed: %u\n", seed);
	srand(seed);
	fd = t_image(img, sizeof(img), size);
	if (fd < 0 || !a || !b) {
		printf("FAIL: setup: %s\n", strerror(fd < 0 ? -fd : errno));
		return 1;
	}
	CHECK("open image", dev_open(img, 0, &d) == 0 && d->size == size && !d->blockdev);
	if (!d)
		goto out;
	for (int r = 0; r < 50; r++) {
		uint64_t len = 1 + (uint64_t)(rand() % (1 << 20));
		uint64_t off = (uint64_t)rand() % (size - len);
		for (uint64_t i = 0; i < len; i++)
			a[i] = (uint8_t)rand();
		if (dev_write(d, off, a, len) || dev_read(d, off, b, len) || memcmp(a, b, len))
			ok = 0;
	}
	CHECK("random write/read round trips", ok);
	CHECK("write past the end refused", dev_write(d, size - 10, a, 20) == -EINVAL);
	CHECK("read past the end refused", dev_read(d, size, b, 1) == -EINVAL);
	CHECK("flush", dev_flush(d) == 0);

	memset(a, 0xab, 1 << 20);
	dev_write(d, 1 << 20, a, 1 << 20);
	dev_flush(d);
	struct stat st0, st1;
	stat(img, &st0);
	int dr = dev_discard(d, 1 << 20, 1 << 20);
	stat(img, &st1);
	if (dr == -EOPNOTSUPP) {
		printf("SKIP: discard punches a hole: filesystem under /tmp cannot punch holes\n");
	} else {
		CHECK("discard punches a hole", dr == 0 && st1.st_blocks < st0.st_blocks);
		CHECK("discarded range reads as zeros",
		      dev_read(d, 1 << 20, b, 4096) == 0 && b[0] == 0 && b[4095] == 0);
		CHECK("discard keeps the size", (uint64_t)st1.st_size == size);
		/* dev_allocated against the punched hole: stat's block
		 * count above is the outside witness that it is one */
		CHECK("allocated: a discarded range is not",
		      !dev_allocated(d, 1 << 20, 1 << 20) && !dev_allocated(d, (1 << 20) + 4096, 4096));
		CHECK("allocated: a range reaching into a hole is not",
		      !dev_allocated(d, (1 << 20) - 4096, 8192));
		dev_write(d, (1 << 20) + 8192, a, 4096);
		CHECK("allocated: a block written into the hole is",
		      dev_allocated(d, (1 << 20) + 8192, 4096) &&
		      !dev_allocated(d, (1 << 20) + 8192, 8192));
		CHECK("allocated: past the end of the file is not", !dev_allocated(d, size, 4096));
	}
	dev_counters(d, &cnt);
	CHECK("counters", cnt.write_ios >= 51 && cnt.read_ios >= 51 && cnt.flushes == 2 &&
	      cnt.discards == 1 && cnt.discard_bytes == (1 << 20));

	dev_set_latency(d, DEV_READ, 3 * 1000000ull);
	uint64_t t0 = glock_now_ns();
	dev_read(d, 0, b, 4096);
	CHECK("latency model delays reads", glock_now_ns() - t0 >= 3 * 1000000ull);
	dev_set_latency(d, DEV_READ, 0);

	/* a flush orders writes, it does not wait for a discard in flight
	 * (the async discard thread must never delay a commit's flush) */
	{
		struct slow_discard sd = { d, 0 };
		pthread_t th;
		dev_set_latency(d, DEV_DISCARD, 1000 * 1000000ull);
		if (pthread_create(&th, NULL, discard_bg, &sd) == 0) {
			/* counted when issued: then it sleeps its 1 s */
			while (__atomic_load_n(&d->cnt.discards, __ATOMIC_ACQUIRE) < 2)
				usleep(1000);
			CHECK("flush and write while a discard is in flight",
			      dev_write(d, 1 << 20, a, 4096) == 0 && dev_flush(d) == 0);
			CHECK("... do not wait for it", !__atomic_load_n(&sd.done, __ATOMIC_ACQUIRE));
			pthread_join(th, NULL);
		}
		dev_set_latency(d, DEV_DISCARD, 0);
	}

	dev_close(d);	/* d holds img: a second open waits for that (test_dev_claim) */
	d = NULL;
	CHECK("open read-only", dev_open(img, DEV_RDONLY, &ro) == 0);
	if (ro) {
		CHECK("read-only device refuses writes", dev_write(ro, 0, a, 16) == -EROFS);
		dev_close(ro);
	}
	setenv("GLASSFS_DEV_LATENCY", "write=2000,flush=1000", 1);
	CHECK("latency from the environment",
	      dev_open(img, 0, &ro) == 0 && ro->lat_ns[DEV_WRITE] == 2000000 &&
	      ro->lat_ns[DEV_FLUSH] == 1000000 && ro->lat_ns[DEV_READ] == 0);
	if (ro)
		dev_close(ro);
	unsetenv("GLASSFS_DEV_LATENCY");
	/* error model: a disk that starts failing after 3 writes, one that
	 * cannot discard; other paths are untouched */
	char spec[256];
	snprintf(spec, sizeof(spec), "%s:write@3,nodiscard", strrchr(img, '/') + 1);
	setenv("GLASSFS_DEV_FAIL", spec, 1);
	ro = NULL;
	if (dev_open(img, 0, &ro) == 0) {
		int w[5];
		for (int i = 0; i < 5; i++)
			w[i] = dev_write(ro, 4096 * (uint64_t)i, a, 4096);
		CHECK("write@3: three writes succeed, then -EIO",
		      !w[0] && !w[1] && !w[2] && w[3] == -EIO && w[4] == -EIO && ro->errors == 2);
		CHECK("write@3: reads still work", dev_read(ro, 0, b, 4096) == 0);
		CHECK("nodiscard: discard is -EOPNOTSUPP", dev_discard(ro, 0, 4096) == -EOPNOTSUPP);
		/* device stats: failed writes and reads counted by op, a
		 * discard the device cannot do is no error; reset zeroes */
		uint64_t e[DEV_ERR_NR], z[DEV_ERR_NR];
		dev_set_fail(ro, DEV_READ, true);
		dev_read(ro, 0, b, 4096);
		dev_set_fail(ro, DEV_READ, false);
		dev_note_error(ro, DEV_ERR_CORRUPTION);
		dev_errors(ro, e, true);
		dev_errors(ro, z, false);
		CHECK("error counters by op, reset",
		      e[DEV_ERR_WRITE] == 2 && e[DEV_ERR_READ] == 1 && e[DEV_ERR_FLUSH] == 0 &&
		      e[DEV_ERR_CORRUPTION] == 1 && e[DEV_ERR_GENERATION] == 0 &&
		      !z[DEV_ERR_WRITE] && !z[DEV_ERR_READ] && !z[DEV_ERR_CORRUPTION]);
		dev_close(ro);
	} else {
		CHECK("open with GLASSFS_DEV_FAIL", 0);
	}
	setenv("GLASSFS_DEV_FAIL", "/elsewhere.img:write", 1);
	ro = NULL;
	CHECK("GLASSFS_DEV_FAIL leaves other paths alone",
	      dev_open(img, 0, &ro) == 0 && dev_write(ro, 0, a, 4096) == 0);
	if (ro)
		dev_close(ro);
	unsetenv("GLASSFS_DEV_FAIL");
	/* dev_map_crc: the bytes dev_write put there, then a truncated image
	 * (a fault SIGBUS) as -EIO, twice (the handler stays), then the
	 * latency model refused (the caller's dev_read applies it) */
	{
		struct dev *m = NULL;
		uint32_t got[4] = { 0 }, want[4];
		uint64_t n0, n1;
		for (int i = 0; i < 4 * 4096; i++)
			a[i] = (uint8_t)rand();
		for (int i = 0; i < 4; i++)
			want[i] = crc32c(0, a + i * 4096, 4096);
		CHECK("map: open", dev_open(img, 0, &m) == 0 && dev_write(m, 1 << 20, a, 4 * 4096) == 0);
		if (m) {
			dev_counters(m, &cnt);
			n0 = cnt.read_bytes;
			CHECK("map: checksums of the written sectors",
			      dev_map_crc(m, 1 << 20, 4, got) == 0 && !memcmp(got, want, sizeof(want)));
			dev_counters(m, &cnt);
			n1 = cnt.read_bytes;
			CHECK("map: counted as a read", n1 - n0 == 4 * 4096);
			CHECK("map: outside the device", dev_map_crc(m, size - 4096, 2, got) == -EINVAL);
			CHECK("map: truncated image", truncate(img, 1 << 20) == 0);
			CHECK("map: pages out of the page cache go to dev_read",
			      dev_map_crc(m, 1 << 20, 4, got) == -EOPNOTSUPP);
			dev_map_set_cold(m, true);
			CHECK("map: a page past the file's end: -EIO, no SIGBUS",
			      dev_map_crc(m, 1 << 20, 4, got) == -EIO &&
			      dev_map_crc(m, (1 << 20) + 8192, 1, got) == -EIO);
			CHECK("map: pages before it still sum", dev_map_crc(m, 0, 1, got) == 0);
			CHECK("map: image size back", truncate(img, (off_t)size) == 0);
			dev_set_latency(m, DEV_READ, 1000);
			CHECK("map: the latency model goes to dev_read",
			      dev_map_crc(m, 0, 1, got) == -EOPNOTSUPP);
			dev_close(m);
		}
	}
	{
		int refused = 0, rounds = 0;
		for (; rounds < 200; rounds++) {
			struct dev *m = NULL;
			pthread_barrier_t bar;
			pthread_t t[MAP_RACERS];
			struct map_race r[MAP_RACERS];
			if (dev_open(img, 0, &m) || dev_write(m, 1 << 20, a, 4 * 4096))
				break;
			pthread_barrier_init(&bar, NULL, MAP_RACERS);
			for (int i = 0; i < MAP_RACERS; i++) {
				r[i] = (struct map_race){ m, &bar, 0 };
				pthread_create(&t[i], NULL, map_racer, &r[i]);
			}
			for (int i = 0; i < MAP_RACERS; i++) {
				pthread_join(t[i], NULL);
				refused += r[i].refused;
			}
			pthread_barrier_destroy(&bar);
			dev_close(m);
		}
		printf("map race: %d of %d reads refused in %d rounds\n", refused,
		       rounds * MAP_RACERS, rounds);
		CHECK("map: threads meeting a fresh mapping all read through it",
		      rounds == 200 && refused == 0);
	}
	struct dev *x = NULL;
	CHECK("a directory is not a device", dev_open("/tmp", 0, &x) == -EINVAL);
	CHECK("a missing file", dev_open("/nonexistent/glassfs.img", 0, &x) == -ENOENT);
out:
	dev_close(d);
	unlink(img);
	free(a);
	free(b);
	return fails ? 1 : 0;
}
