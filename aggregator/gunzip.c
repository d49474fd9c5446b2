/*
 * gunzip.c — ingest_gunzip(): a gzip body (Content-Encoding: gzip, or a
 * gzip'ed pprof) inflated into memory, bounded by --max-decoded so a gzip
 * bomb costs at most that much; past it the caller answers 413.
 */
#include "aggregator/ingest.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int ingest_gunzip(const void *src, size_t len, size_t max, char **out,
		  size_t *outlen, char *msg, size_t msglen)
{
	z_stream zs;
	size_t cap = len * 4 + 1024, n = 0;
	char *buf;
	int zr;

	if (cap > max + 1)
		cap = max + 1;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return -ENOMEM;
	if (!(buf = malloc(cap + 1))) {
		inflateEnd(&zs);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)src;
	zs.avail_in = len;
	for (;;) {
		if (n == cap) {
			size_t ncap = cap * 2;
			char *nb;

			if (cap > max) {
				free(buf);
				inflateEnd(&zs);
				snprintf(msg, msglen, "decompressed body exceeds %zu bytes", max);
				return -E2BIG;
			}
			if (ncap > max + 1)
				ncap = max + 1;
			if (!(nb = realloc(buf, ncap + 1))) {
				free(buf);
				inflateEnd(&zs);
				return -ENOMEM;
			}
			buf = nb;
			cap = ncap;
		}
		zs.next_out = (Bytef *)buf + n;
		zs.avail_out = cap - n;
		zr = inflate(&zs, Z_NO_FLUSH);
		n = cap - zs.avail_out;
		if (zr == Z_STREAM_END)
			break;
		if (zr == Z_OK)
			continue;
		if (zr == Z_BUF_ERROR && zs.avail_out == 0)
			continue;
		free(buf);
		inflateEnd(&zs);
		if (zr == Z_BUF_ERROR)
			return agg_einval(msg, msglen, "gzip body is truncated");
		return agg_einval(msg, msglen, "gzip body is corrupt: %s", zs.msg ? zs.msg : "inflate failed");
	}
	if (n > max) {
		free(buf);
		inflateEnd(&zs);
		snprintf(msg, msglen, "decompressed body exceeds %zu bytes", max);
		return -E2BIG;
	}
	if (zs.avail_in) {
		free(buf);
		inflateEnd(&zs);
		return agg_einval(msg, msglen, "trailing bytes after gzip stream");
	}
	inflateEnd(&zs);
	buf[n] = 0;
	*out = buf;
	*outlen = n;
	return 0;
}
