/* SPDX-License-Identifier: MIT */
/*
 * check.h — the unit tests' one CHECK: a case prints `PASS: name`, or
 * `FAIL: name: FILE:LINE: condition` and counts in `fails` (a test's
 * main returns non-zero when fails > 0; tests/run.sh protocol).
 */
#ifndef UNIT_CHECK_H
#define UNIT_CHECK_H

#include <stdio.h>

static int fails;

#define CHECK(name, cond) do { \
	if (cond) printf("PASS: %s\n", name); \
	else { printf("FAIL: %s: %s:%d: %s\n", name, __FILE__, __LINE__, #cond); fails++; } \
} while (0)

#endif
