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
 * usage: fakeframes SECONDS [DISTINCT [tail]]   (prints "pid N" first)
 * With DISTINCT > 0 the first garbage address cycles through DISTINCT
 * values and the sleeps are 20 us: that many distinct user stacks, fast,
 * to fill a stack table on purpose.  With "tail" the garbage comes last,
 * as under libfuse (code without frame pointers keeps data in %rbp):
 *     sleep_under_fake_frames, fake_root, 0x647a
 * where a tool must end the stack at fake_root, with no [unknown] root.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

void fake_root(unsigned secs, unsigned distinct, int tail);

/* The tail case: one real return address (into fake_root), then a small
 * integer where the next return address would be -- what a walk reads
 * past a libfuse frame -- and a chain that ends. */
static void tail_chain(struct frame *chain)
{
	chain[0].next = (uint64_t)(uintptr_t)&chain[1];
	chain[0].ret = (uint64_t)(uintptr_t)fake_root + 1;
	chain[1].next = 0;
	chain[1].ret = 0x647a;
}

void __attribute__((noinline)) fake_root(unsigned secs, unsigned distinct, int tail)
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
	if (tail)
		tail_chain(chain);
	while (time(NULL) < end) {
		if (distinct)	/* below vm.mmap_min_addr: never mapped */
			chain[0].ret = 0x1000 + 8 * (i++ % distinct);
		sleep_under_fake_frames(chain, &ts);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: fakeframes SECONDS [DISTINCT [tail]]\n");
		return 2;
	}
	printf("pid %d\n", getpid());
	fflush(stdout);
	fake_root(atoi(argv[1]), argc >= 3 ? atoi(argv[2]) : 0, argc == 4 && !strcmp(argv[3], "tail"));
	return 0;
}
