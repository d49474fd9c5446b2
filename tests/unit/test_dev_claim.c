// SPDX-License-Identifier: MIT
/*
 * test_dev_claim.c — the exclusive claim on a device (fs/store/dev_claim.h) on
 * an image file: a held image is refused (also to a second open in the
 * same process, and to a forked child's open while the parent holds it),
 * read-only opens share and keep writers out, DEV_NOCLAIM looks without
 * claiming, an opener waits for a holder that is closing, dev_unclaim
 * frees the image at once, and dev_holder names the holding process.
 */
#include "fs/store/dev.h"
#include "fs/store/dev_claim.h"
#include "fs/base/lock.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "tmp_image.h"

static uint64_t ms_since(uint64_t t0)
{
	return (glock_now_ns() - t0) / 1000000ull;
}

struct later { struct dev *d; unsigned ms; };

static void *close_later(void *arg)
{
	struct later *l = arg;

	usleep(l->ms * 1000);
	dev_close(l->d);
	return NULL;
}

int main(void)
{
	static char img[256];
	struct dev *d = NULL, *x = NULL, *y = NULL;
	char who[512];
	uint64_t t0;
	int ret = t_image(img, sizeof(img), 4 << 20);

	if (ret < 0) {
		printf("FAIL: setup: %s\n", strerror(-ret));
		return 1;
	}

	CHECK("claim", dev_open(img, 0, &d) == 0);
	t0 = glock_now_ns();
	CHECK("a held image is refused, also to its own process", dev_open(img, 0, &x) == -EBUSY);
	CHECK("... after the grace only", ms_since(t0) >= DEV_CLAIM_GRACE_MS - 50);
	CHECK("read-only is refused too", dev_open(img, DEV_RDONLY, &x) == -EBUSY);
	CHECK("DEV_NOCLAIM looks anyway", dev_open(img, DEV_RDONLY | DEV_NOCLAIM, &x) == 0);
	dev_close(x);
	x = NULL;
	dev_holder(img, who, sizeof(who));
	char want[64];
	snprintf(want, sizeof(want), "pid %d (", (int)getpid());
	CHECK("dev_holder names the holder", strncmp(who, want, strlen(want)) == 0);

	/* a child (the daemon forks before it opens; this is the converse:
	 * the claim does not pass to a process that opens on its own) */
	pid_t pid = fork();
	if (pid == 0) {
		struct dev *c = NULL;
		_exit(dev_open(img, 0, &c) == -EBUSY ? 0 : 1);
	}
	int st = 1;
	waitpid(pid, &st, 0);
	CHECK("another process is refused", WIFEXITED(st) && WEXITSTATUS(st) == 0);

	/* a holder that is closing: the opener waits for it */
	dev_closing(d);
	struct later l = { d, 300 };
	pthread_t th;
	pthread_create(&th, NULL, close_later, &l);
	t0 = glock_now_ns();
	CHECK("an opener waits for a closing holder", dev_open(img, 0, &x) == 0);
	CHECK("... until it closed", ms_since(t0) >= 250 && ms_since(t0) < DEV_CLAIM_GRACE_MS);
	pthread_join(th, NULL);
	d = NULL;

	/* unclaimed: free at once, though still open */
	dev_unclaim(x);
	t0 = glock_now_ns();
	CHECK("dev_unclaim frees the image", dev_open(img, 0, &y) == 0 && ms_since(t0) < 500);
	dev_close(x);
	dev_close(y);
	x = y = NULL;

	/* readers share, and keep a writer out */
	CHECK("read-only opens share",
	      dev_open(img, DEV_RDONLY, &x) == 0 && dev_open(img, DEV_RDONLY, &y) == 0);
	struct dev *w = NULL;
	CHECK("readers keep a writer out", dev_open(img, 0, &w) == -EBUSY);
	dev_close(x);
	dev_close(y);
	CHECK("the last reader gone, a writer gets it", dev_open(img, 0, &w) == 0);
	dev_close(w);
	unlink(img);
	return fails ? 1 : 0;
}
