/* SPDX-License-Identifier: MIT */
/*
 * args.h — numbers and targets on the tools' command lines.  One parser,
 * so every tool rejects the same bad input ("", "12x", "-1" where a count
 * is wanted, out of range) with the same message: "TOOL: invalid WHAT:
 * ARG", exit 2.
 */
#ifndef GLASS_ARGS_H
#define GLASS_ARGS_H

#include <argp.h>

/* The decimal integer s, lo <= s <= hi; otherwise the message above and
 * exit(2) (a command-line error ends the run before anything is set up). */
long args__num(const char *tool, const char *s, const char *what, long lo,
	       long hi);

/* -p's argument: a PID, or a glassfs mount point, which names the daemon
 * serving it (the glassfs process whose command line names that mount
 * point), so `-p /mnt/g` works with several daemons running where
 * `-p $(pidof glassfs)` does not.  Says what is wrong and exits 2. */
long args__pid(const char *tool, const char *s);

/* A positional argument no tool takes: say which, and why it may have come
 * (`-p $(pidof glassfs)` with two daemons gives two PIDs); exits 64 as
 * argp's usage errors do. */
void args__unexpected(struct argp_state *state, const char *arg);

#endif
