// SPDX-License-Identifier: MIT
/*
 * txn_handle.c — what a transaction handle answers below fs/txn
 * (txn_handle.h): its transid, its volume, and abort.
 */
#include "fs/core/core_types.h"

#include <errno.h>
#include <string.h>

uint64_t txn_transid(const struct txn *t) { return t->transid; }
struct core *txn_core(const struct txn *t) { return t->c; }

void txn_abort(struct txn *t, int err, const char *where)
{
	struct core *c = t->c;
	int zero = 0;

	if (err >= 0)
		err = -EIO;
	if (__atomic_compare_exchange_n(&c->aborted, &zero, err, false, __ATOMIC_SEQ_CST,
					__ATOMIC_SEQ_CST))
		core_log(c, "transaction %llu aborted in %s: %s; the volume is now read-only",
			 (unsigned long long)t->transid, where, strerror(-err));
}
