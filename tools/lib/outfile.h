/*
 * outfile.h — put a finished document where the user asked, whole or not
 * at all.
 *
 * The report tools build their output in memory first; this writes it to
 * PATH (or standard output when PATH is NULL or "-").  A file is written
 * beside PATH under a temporary name and renamed over it only when every
 * byte made it, so a full disk or a killed tool leaves the previous report
 * intact instead of a truncated one.
 */
#ifndef GLASS_OUTFILE_H
#define GLASS_OUTFILE_H

#include <stddef.h>

/* 0 on success; otherwise prints "PROG: PATH: reason" and returns -1. */
int out_write_whole(const char *prog, const char *path, const void *buf, size_t len);

#endif /* GLASS_OUTFILE_H */
