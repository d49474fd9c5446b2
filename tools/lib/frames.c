// SPDX-License-Identifier: MIT
/* frames.c — stacks as frame names (see frames.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/lib/frames.h"
#include "tools/lib/syms.h"

void frames__push(struct frames *fr, const char *name, char *owned)
{
	if (fr->n < FRAMES_MAX) {
		fr->owned[fr->n] = owned;
		fr->f[fr->n++] = name;
	} else {
		free(owned);
	}
}

void frames__reset(struct frames *fr)
{
	for (size_t i = 0; i < fr->n; i++)
		free(fr->owned[i]);
	fr->n = 0;
}

/* Frames of the tracer itself (stacks taken inside our programs). */
static bool is_tracer_frame(const char *n)
{
	return !strncmp(n, "bpf_prog_", 9) || !strncmp(n, "bpf_trace_run", 13) ||
	       !strncmp(n, "__bpf_trace_", 12) || !strncmp(n, "__traceiter_", 12) ||
	       !strncmp(n, "bpf_overflow_handler", 20);
}

void frames__kernel(struct frames *fr, const struct ksyms *ks,
		    const uint64_t *ips, bool folded)
{
	for (int i = 0; i < FRAMES_MAX_DEPTH && ips[i]; i++) {
		const char *n = ksyms__name(ks, ips[i], NULL);
		char *s;

		if (n && is_tracer_frame(n))
			continue;
		if (asprintf(&s, "%s%s", n ? n : "[unknown]", folded ? "_[k]" : "") < 0)
			continue;
		frames__push(fr, s, s);
	}
}

void frames__user(struct frames *fr, struct syms_cache *sc, int tgid,
		  const uint64_t *ips)
{
	bool prev_unknown = false;
	/* where the last run's [unknown] went; SIZE_MAX: at the stack's
	 * first address (nothing resolved before it) */
	size_t unknown_at = SIZE_MAX;

	for (int i = 0; i < FRAMES_MAX_DEPTH && ips[i]; i++) {
		const char *mod, *n;
		char *s = NULL;

		/* Return addresses: look up the call site. */
		n = syms_cache__name(sc, tgid, ips[i] - (i ? 1 : 0), &mod);
		if (n)
			frames__push(fr, n, NULL);
		else if (mod && asprintf(&s, "[%s]", mod) >= 0)
			frames__push(fr, s, s);
		else if (!prev_unknown) {
			unknown_at = i ? fr->n : SIZE_MAX;
			frames__push(fr, "[unknown]", NULL);
		}
		/* A frame-pointer walk through frameless code yields runs of
		 * garbage addresses (up to the depth limit): one [unknown]
		 * stands for the whole run, or flame graphs grow absurdly tall. */
		prev_unknown = !n && !s;
	}
	/* A run that ends the stack, after a frame that resolved, is no frame
	 * at all: every address in it lies outside the process's executable
	 * mappings, and a thread's outermost frames are in libc or the
	 * program.  Code built without frame pointers (Debian's libfuse and
	 * glibc) keeps data in %rbp, so the walk past its frame reads a field
	 * of some struct as the return address (0x56d0..0xd332 under
	 * libfuse's request dispatch: docs/bpf-tools.md).  The stack ends at
	 * the last real frame instead of under one wide [unknown] at the
	 * root of every FUSE request.  Inside a stack a run stays (frames go
	 * on after it), and so does a stack with no frame resolved at all
	 * (the process's mappings are unknown). */
	if (prev_unknown && unknown_at != SIZE_MAX && fr->n == unknown_at + 1)
		fr->n--;		/* a literal: nothing to free */
}
