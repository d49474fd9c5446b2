/*
 * folded.h — the folded-stack format: the one parser and the one writer.
 *
 * The format (Brendan Gregg's, as flamegraph.pl reads it), one stack a line:
 *
 *     root;caller;callee COUNT\n
 *
 *   - frames are separated by ';', root first, leaf last;
 *   - COUNT is the last whitespace-separated token: decimal digits only,
 *     an unsigned 64-bit integer (0 allowed); between the stack and the
 *     count one or more spaces or tabs;
 *   - frames may contain spaces and any byte except NUL, ';', '\n' and
 *     other C0 control characters (tab is allowed inside a frame); bytes
 *     >= 0x80 are kept as they are (invalid UTF-8 included — the renderer
 *     escapes, the parser does not judge encodings);
 *   - a trailing '\r' (CRLF files) and a UTF-8 byte-order mark at the
 *     start of a line (of a file, or of concatenated files) are ignored;
 *     blank lines are skipped;
 *   - an empty frame (";;", a leading or trailing ';') is an error;
 *   - a frame ending in "_[k]" is a kernel frame, and the frames under a
 *     "[oncpu]" frame are the on-CPU half of a wall-clock profile
 *     (glass-profile --wall), those under "[offcpu]" (blocked) or
 *     "[runqueue]" (runnable, waiting for a CPU) its off-CPU half
 *     (rendering conventions only: the parser treats them as any other
 *     name).
 *
 * Parsing aggregates: the same stack seen twice has its counts summed; the
 * set remembers the order in which distinct stacks were first seen (a
 * flame *chart* keeps it).  An input with no stack at all is an error, as
 * is every malformed line: the error names the line (1-based) and why.
 *
 * Ownership: a folded_set owns copies of every stack string; pointers
 * returned by folded_set_get() stay valid until folded_set_free().
 * Nothing here is thread-safe; one set per thread, or lock outside.
 */
#ifndef GLASS_FOLDED_H
#define GLASS_FOLDED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Why a parse failed.  line is 1-based; 0 when the error is not about one
 * line (empty input, I/O error, out of memory).  msg is a full sentence
 * without the line number, e.g. "count is not a number". */
struct folded_error {
	unsigned long line;
	int code;		/* the -errno also returned: -EINVAL, -E2BIG, ... */
	char msg[160];
};

/* Optional bounds, each 0 = unlimited.  Exceeding one is an error (-E2BIG)
 * naming the line, never a silent truncation. */
struct folded_limits {
	size_t max_lines;	/* lines read, blank ones included */
	size_t max_line_len;	/* bytes in one line, without '\n' */
	size_t max_frames;	/* frames in one stack */
	size_t max_frame_len;	/* bytes in one frame name */
	size_t max_stacks;	/* distinct stacks in the set */
};

/* One distinct stack of a set.  stack is NUL-terminated, len excludes the
 * NUL; hash is folded_hash(stack, len). */
struct folded_stack {
	const char *stack;
	size_t len;
	uint64_t count;
	uint64_t hash;
};

struct folded_set;

struct folded_set *folded_set_new(void);
void folded_set_free(struct folded_set *set);		/* NULL-safe */

/* Add COUNT to STACK (len bytes, not necessarily NUL-terminated), creating
 * it at the end of the first-seen order if new.  The stack is taken as it
 * is (no validation: use the parser for untrusted text).
 * Returns 0, -ENOMEM, or -EOVERFLOW if a count or the total would wrap. */
int folded_set_add(struct folded_set *set, const char *stack, size_t len,
		   uint64_t count);

/* Parse folded text and add every line to SET (several inputs may be
 * parsed into one set: they are summed).  Returns 0, or a negative errno
 * with *err filled in (err may be NULL; limits may be NULL).  On error the
 * set keeps the lines added before the bad one.
 *   -EINVAL  malformed line or empty input
 *   -E2BIG   a limit was exceeded
 *   -EOVERFLOW  count or sum wraps 64 bits
 *   -ENOMEM, -EIO (folded_parse_file only)  */
int folded_parse_buf(struct folded_set *set, const char *buf, size_t len,
		     const struct folded_limits *limits,
		     struct folded_error *err);
int folded_parse_file(struct folded_set *set, FILE *f,
		      const struct folded_limits *limits,
		      struct folded_error *err);

/* `perf script` output (with callchains, -g), collapsed as
 * stackcollapse-perf.pl does: one count per sample under
 * "COMM;root;...;leaf", kernel frames (DSO [kernel.kallsyms]) suffixed
 * "_[k]", an unresolved symbol as "[DSO basename]" or "[unknown]",
 * "+0xOFF" dropped.  The same errors as folded_parse_buf(). */
int folded_parse_perf_buf(struct folded_set *set, const char *buf, size_t len,
			  const struct folded_limits *limits,
			  struct folded_error *err);
/* Does buf look like `perf script` output (a header line, then an
 * indented "HEXADDR ..." callchain line)?  Folded text never does. */
int folded_is_perf_script(const char *buf, size_t len);
/* Either format: perf script when folded_is_perf_script(), else folded
 * (folded stacks derived from perf.data, `perf script report
 * stackcollapse`, are folded text).  _file reads the whole stream. */
int folded_parse_any_buf(struct folded_set *set, const char *buf, size_t len,
			 const struct folded_limits *limits,
			 struct folded_error *err);
int folded_parse_any_file(struct folded_set *set, FILE *f,
			  const struct folded_limits *limits,
			  struct folded_error *err);

size_t folded_set_size(const struct folded_set *set);	/* distinct stacks */
uint64_t folded_set_total(const struct folded_set *set);	/* sum of counts */
/* The i-th distinct stack in first-seen order, i < folded_set_size(). */
const struct folded_stack *folded_set_get(const struct folded_set *set,
					  size_t i);
/* Look a stack up; NULL if absent. */
const struct folded_stack *folded_set_find(const struct folded_set *set,
					   const char *stack, size_t len);

/* Walk the frames of a stack, root first:
 *     struct folded_iter it; const char *f; size_t n;
 *     folded_iter_init(&it, s->stack, s->len);
 *     while (folded_iter_next(&it, &f, &n)) ...      (f is not NUL-terminated) */
struct folded_iter {
	const char *p, *end;
	int done;
};
void folded_iter_init(struct folded_iter *it, const char *stack, size_t len);
int folded_iter_next(struct folded_iter *it, const char **frame, size_t *len);

/* The stack hash: 64-bit, stable across runs, hosts and versions (it may
 * be stored), endian-independent.  Not cryptographic: it de-duplicates,
 * callers still compare the strings on a hash match. */
uint64_t folded_hash(const void *data, size_t len);

/* Writers.  folded_write_stack() prints one line "f0;f1;...;fn COUNT\n"
 * with every frame sanitised so the line parses back to the same frames:
 * ';' becomes ':', '\n', '\r' and other control characters become ' '
 * (tab kept), trailing spaces and tabs of the last frame are trimmed, and
 * an empty or NULL name becomes "[unknown]", a byte-order mark opening
 * the line is dropped.  With FOLDED_LEAF_FIRST the
 * array is leaf first (as kernels and unwinders give it) and is printed
 * reversed.  A stack of zero frames prints "[unknown] COUNT".
 * Returns 0 or -EIO (from ferror). */
#define FOLDED_LEAF_FIRST	0x1
int folded_write_stack(FILE *f, const char *const *frames, size_t nframes,
		       uint64_t count, unsigned flags);
/* Sanitise one frame name into dst (dstlen > 0, always NUL-terminated,
 * truncated if needed).  Returns the length written. */
size_t folded_sanitize_frame(char *dst, size_t dstlen, const char *name);
/* Print a whole set in first-seen order.  Returns 0 or -EIO. */
int folded_set_write(FILE *f, const struct folded_set *set);

#endif /* GLASS_FOLDED_H */
