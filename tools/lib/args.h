/* SPDX-License-Identifier: MIT */
/*
 * args.h — numbers on the tools' command lines.  One parser, so every tool
 * rejects the same bad input ("", "12x", "-1" where a count is wanted, out
 * of range) with the same message: "TOOL: invalid WHAT: ARG", exit 2.
 */
#ifndef GLASS_ARGS_H
#define GLASS_ARGS_H

/* The decimal integer s, lo <= s <= hi; otherwise the message above and
 * exit(2) (a command-line error ends the run before anything is set up). */
long args__num(const char *tool, const char *s, const char *what, long lo,
	       long hi);

#endif
