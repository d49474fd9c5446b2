/*
 * outfile.c — write a finished document whole, or leave the old one.
 * See outfile.h.
 */
#include "tools/lib/outfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int to_stream(const char *prog, const char *name, FILE *f,
		     const void *buf, size_t len)
{
	if (fwrite(buf, 1, len, f) != len || fflush(f)) {
		fprintf(stderr, "%s: %s: write error: %s\n", prog, name, strerror(errno));
		return -1;
	}
	return 0;
}

/* A device, FIFO or socket (/dev/stdout, /dev/null, a pipe made with
 * mkfifo) is written in place: renaming over it would replace it. */
static int to_special(const char *prog, const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	int r;

	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return -1;
	}
	r = to_stream(prog, path, f, buf, len);
	if (fclose(f) && !r) {
		fprintf(stderr, "%s: %s: write error: %s\n", prog, path, strerror(errno));
		r = -1;
	}
	return r;
}

int out_write_whole(const char *prog, const char *path, const void *buf, size_t len)
{
	char *tmp = NULL;
	FILE *f = NULL;
	struct stat st;
	int fd, err;

	if (!path || !strcmp(path, "-"))
		return to_stream(prog, "<stdout>", stdout, buf, len);
	if (!stat(path, &st) && !S_ISREG(st.st_mode))
		return to_special(prog, path, buf, len);
	if (asprintf(&tmp, "%s.XXXXXX", path) < 0) {
		fprintf(stderr, "%s: %s: out of memory\n", prog, path);
		return -1;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		/* Say why in terms of the name the user gave. */
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		free(tmp);
		return -1;
	}
	/* mkstemp makes 0600; a report is an ordinary file (0666 & ~umask). */
	mode_t um = umask(0);
	umask(um);
	if (fchmod(fd, 0666 & ~um))
		goto fail;
	f = fdopen(fd, "wb");
	if (!f) {
		close(fd);
		goto fail;
	}
	if (fwrite(buf, 1, len, f) != len || fflush(f))
		goto fail;
	if (fclose(f)) {
		f = NULL;
		goto fail;
	}
	f = NULL;
	if (rename(tmp, path))
		goto fail;
	free(tmp);
	return 0;
fail:
	err = errno;
	if (f)
		fclose(f);
	unlink(tmp);
	free(tmp);
	fprintf(stderr, "%s: %s: write error: %s\n", prog, path, strerror(err));
	return -1;
}
