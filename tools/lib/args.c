// SPDX-License-Identifier: MIT
/* args.c — see args.h. */
#include "tools/lib/args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

long args__num(const char *tool, const char *s, const char *what, long lo,
	       long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi) {
		fprintf(stderr, "%s: invalid %s: %s\n", tool, what, s);
		exit(2);
	}
	return v;
}
