// SPDX-License-Identifier: MIT
/*
 * fakeframes — a process whose user stack, seen by a frame-pointer unwinder,
 * holds a run of unresolvable return addresses: sleep_under_fake_frames()
 * points %rbp at a hand-made chain of frames whose return addresses are
 * garbage (unmapped, like a walk through frameless code yields), the last
 * one returning into fake_root(), then blocks in nanosleep.  The off-CPU
 * user stack is therefore exactly
 *     sleep_under_fake_frames, NFAKE x garbage, fake_root
 * and a tool that collapses runs of [unknown] must print one [unknown]
 * between the two names.  x86-64 only.
 *
 * usage: fakeframes SECONDS [DISTINCT]   (prints "pid N" first)
 * With DISTINCT > 0 the first garbage address cycles through DISTINCT
 * values and the sleeps are 20 us: that many distinct user stacks, fast,
 * to fill a stack table on purpose.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NFAKE 6

struct frame {
	uint64_t next;		/* saved %rbp of the caller */
	uint64_t ret;		/* return address */
};

/* Built with -mno-red-zone (tests/bpf/bpf.mk): the push below must not
 * clobber anything the compiler keeps under %rsp. */
static void __attribute__((noinline)) sleep_under_fake_frames(struct frame *chain,
							      const struct timespec *ts)
{
#if defined(__x86_64__)
	long ret;

	__asm__ __volatile__("push %%rbp\n\t"
			     "mov %[fp], %%rbp\n\t"
			     "syscall\n\t"
			     "pop %%rbp"
			     : "=a"(ret)
			     : "0"((long)SYS_nanosleep), "D"(ts), "S"(0L), [fp] "r"(chain)
			     : "rcx", "r11", "memory");
	(void)ret;
#else
	(void)chain;
	nanosleep(ts, NULL);
#endif
}

void __attribute__((noinline)) fake_root(unsigned secs, unsigned distinct)
{
	struct frame chain[NFAKE + 1];
	struct timespec ts = { 0, distinct ? 20 * 1000 : 2 * 1000 * 1000 };
	time_t end = time(NULL) + secs;
	unsigned long i = 0;

	for (int i = 0; i < NFAKE; i++) {
		chain[i].next = (uint64_t)(uintptr_t)&chain[i + 1];
		chain[i].ret = 0x10 + 0x100 * i;	/* page 0: never mapped */
	}
	chain[NFAKE].next = 0;			/* the walk ends here */
	chain[NFAKE].ret = (uint64_t)(uintptr_t)fake_root + 1;
	while (time(NULL) < end) {
		if (distinct)	/* below vm.mmap_min_addr: never mapped */
			chain[0].ret = 0x1000 + 8 * (i++ % distinct);
		sleep_under_fake_frames(chain, &ts);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: fakeframes SECONDS [DISTINCT]\n");
		return 2;
	}
	printf("pid %d\n", getpid());
	fflush(stdout);
	fake_root(atoi(argv[1]), argc == 3 ? atoi(argv[2]) : 0);
	return 0;
}
