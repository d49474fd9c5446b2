/*
 * glass-flamegraph — folded stacks in, interactive SVG flame graph out.
 *
 *   glass-flamegraph [OPTIONS] [FILE...] > out.svg      (stdin if no FILE)
 *   glass-flamegraph --diff BEFORE AFTER [OPTIONS] > diff.svg
 *
 * Several inputs are summed.  An input may also be `perf script` output
 * (with callchains), collapsed by the shared parser
 * (folded_parse_any_file); --folded writes the summed stacks as folded
 * text instead of a picture.  Bad input is reported as FILE:LINE: why and
 * exits 1 with nothing written; usage errors exit 2.
 */
#include "tools/lib/flamegraph.h"
#include "tools/lib/folded.h"
#include "tools/lib/outfile.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *prog = "glass-flamegraph";

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s [OPTIONS] [FILE...]\n"
"       %s --diff BEFORE AFTER [OPTIONS]\n"
"Render folded stacks (frame;frame;frame COUNT) as an interactive SVG.\n"
"An input may be `perf script` output (callchains): it is collapsed first.\n"
"\n"
"  --title TEXT       title (default: Flame Graph)\n"
"  --subtitle TEXT    second line under the title\n"
"  --width PX         image width (default 1200)\n"
"  --height PX        frame height (default 16)\n"
"  --fontsize PX      font size (default 12)\n"
"  --minwidth N[%%]    omit frames narrower than N px, or N%% (default 0.1)\n"
"  --maxframes N      draw at most N frames, the widest (default 30000, 0=all)\n"
"  --countname NAME   unit of the counts (default samples)\n"
"  --colors PALETTE   hot, mem, io, wakeup, offcpu (default hot)\n"
"  --hash             colour by name hash (same name, same colour)\n"
"  --reverse          merge stacks from the leaf\n"
"  --inverted         icicle graph (root at the top)\n"
"  --flamechart       keep input order (x is time) instead of sorting\n"
"  --nametype TEXT    label of the details line (default Function:)\n"
"  --notes TEXT       notes kept in the SVG\n"
"  --diff BEFORE      differential graph of BEFORE against one AFTER file\n"
"  --normalize        diff: scale BEFORE to AFTER's total\n"
"  --folded           write the summed stacks as folded text, no picture\n"
"                     (perf script input: collapse it)\n"
"  -o, --output FILE  write there instead of standard output\n"
"  -h, --help         this text\n", prog, prog);
}

/* Parse PATH ("-" = stdin) into SET; prints FILE:LINE: why on error. */
static int load(struct folded_set *set, const char *path)
{
	struct folded_error e = { 0 };
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	int r;

	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return -1;
	}
	r = folded_parse_any_file(set, f, NULL, &e);
	if (f != stdin)
		fclose(f);
	if (r) {
		const char *name = strcmp(path, "-") ? path : "<stdin>";

		if (e.line)
			fprintf(stderr, "%s: %s:%lu: %s\n", prog, name, e.line, e.msg);
		else
			fprintf(stderr, "%s: %s: %s\n", prog, name, e.msg);
		return -1;
	}
	return 0;
}

static int parse_uint(const char *opt, const char *s, unsigned long max,
		      unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v > max) {
		fprintf(stderr, "%s: %s: '%s' is not a number in 0..%lu\n",
			prog, opt, s, max);
		return -1;
	}
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("glass-flamegraph %s\n", GLASSFS_VERSION);
		return 0;
	}
	enum { O_TITLE = 256, O_SUBTITLE, O_WIDTH, O_HEIGHT, O_FONTSIZE,
	       O_MINWIDTH, O_MAXFRAMES, O_COUNTNAME, O_COLORS, O_HASH,
	       O_REVERSE, O_INVERTED, O_FLAMECHART, O_NAMETYPE, O_NOTES,
	       O_DIFF, O_NORMALIZE, O_FOLDED };
	static const struct option lopts[] = {
		{ "title", required_argument, 0, O_TITLE },
		{ "subtitle", required_argument, 0, O_SUBTITLE },
		{ "width", required_argument, 0, O_WIDTH },
		{ "height", required_argument, 0, O_HEIGHT },
		{ "fontsize", required_argument, 0, O_FONTSIZE },
		{ "minwidth", required_argument, 0, O_MINWIDTH },
		{ "maxframes", required_argument, 0, O_MAXFRAMES },
		{ "countname", required_argument, 0, O_COUNTNAME },
		{ "colors", required_argument, 0, O_COLORS },
		{ "hash", no_argument, 0, O_HASH },
		{ "reverse", no_argument, 0, O_REVERSE },
		{ "inverted", no_argument, 0, O_INVERTED },
		{ "flamechart", no_argument, 0, O_FLAMECHART },
		{ "nametype", required_argument, 0, O_NAMETYPE },
		{ "notes", required_argument, 0, O_NOTES },
		{ "diff", required_argument, 0, O_DIFF },
		{ "normalize", no_argument, 0, O_NORMALIZE },
		{ "folded", no_argument, 0, O_FOLDED },
		{ "output", required_argument, 0, 'o' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 }
	};
	struct fg_options o;
	struct folded_set *after = NULL, *before = NULL;
	const char *diff_before = NULL, *output = NULL;
	char *buf = NULL, *end;
	size_t len = 0;
	unsigned long v;
	int c, i, r, rc = 1, folded_out = 0;

	fg_options_init(&o);
	while ((c = getopt_long(argc, argv, "ho:", lopts, NULL)) != -1) {
		switch (c) {
		case O_TITLE: o.title = optarg; break;
		case O_SUBTITLE: o.subtitle = optarg; break;
		case O_WIDTH:
			if (parse_uint("--width", optarg, 100000, &v))
				return 2;
			if (v < 50) {
				fprintf(stderr, "%s: --width must be at least 50\n", prog);
				return 2;
			}
			o.width = (unsigned)v;
			break;
		case O_HEIGHT:
			if (parse_uint("--height", optarg, 1000, &v))
				return 2;
			if (!v) {
				fprintf(stderr, "%s: --height must be 1..1000\n", prog);
				return 2;
			}
			o.frame_height = (unsigned)v;
			break;
		case O_FONTSIZE:
			if (parse_uint("--fontsize", optarg, 200, &v))
				return 2;
			if (!v) {
				fprintf(stderr, "%s: --fontsize must be 1..200\n", prog);
				return 2;
			}
			o.font_size = (unsigned)v;
			break;
		case O_MINWIDTH:
			errno = 0;
			o.minwidth = strtod(optarg, &end);
			o.minwidth_pct = *end == '%';
			if (errno || end == optarg || (*end && strcmp(end, "%")) ||
			    !(o.minwidth >= 0) || (o.minwidth_pct && o.minwidth > 100)) {
				fprintf(stderr, "%s: --minwidth: '%s' is not a width "
					"(pixels, or a percentage like 0.5%%)\n", prog, optarg);
				return 2;
			}
			break;
		case O_MAXFRAMES:
			if (parse_uint("--maxframes", optarg, 100000000, &v))
				return 2;
			o.max_frames = v;
			break;
		case O_COUNTNAME: o.countname = optarg; break;
		case O_COLORS:
			if (fg_palette_parse(optarg, &o.palette)) {
				fprintf(stderr, "%s: --colors: unknown palette '%s' "
					"(hot, mem, io, wakeup, offcpu)\n", prog, optarg);
				return 2;
			}
			break;
		case O_HASH: o.hash = 1; break;
		case O_REVERSE: o.reverse = 1; break;
		case O_INVERTED: o.inverted = 1; break;
		case O_FLAMECHART: o.flamechart = 1; break;
		case O_NAMETYPE: o.nametype = optarg; break;
		case O_NOTES: o.notes = optarg; break;
		case O_DIFF: diff_before = optarg; break;
		case O_NORMALIZE: o.normalize = 1; break;
		case O_FOLDED: folded_out = 1; break;
		case 'o': output = optarg; break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "Try '%s --help'.\n", prog);
			return 2;
		}
	}
	if (diff_before && argc - optind != 1) {
		fprintf(stderr, "%s: --diff BEFORE needs exactly one AFTER file\n", prog);
		return 2;
	}
	if (o.normalize && !diff_before) {
		fprintf(stderr, "%s: --normalize only applies to --diff\n", prog);
		return 2;
	}

	after = folded_set_new();
	if (diff_before)
		before = folded_set_new();
	if (!after || (diff_before && !before)) {
		fprintf(stderr, "%s: out of memory\n", prog);
		goto out;
	}
	if (diff_before && load(before, diff_before))
		goto out;
	if (optind == argc) {
		if (load(after, "-"))
			goto out;
	}
	for (i = optind; i < argc; i++)
		if (load(after, argv[i]))
			goto out;

	if (folded_out) {
		FILE *mf = open_memstream(&buf, &len);

		if (diff_before) {
			fprintf(stderr, "%s: --folded does not combine with --diff\n", prog);
			goto out;
		}
		if (!mf || folded_set_write(mf, after) || fclose(mf)) {
			fprintf(stderr, "%s: out of memory\n", prog);
			goto out;
		}
		if (out_write_whole(prog, output, buf, len))
			goto out;
		rc = 0;
		goto out;
	}
	r = fg_render_mem(&buf, &len, before, after, &o);
	if (r) {
		if (r == -ENODATA && diff_before)
			fprintf(stderr, "%s: %s\n", prog,
				!folded_set_total(before) ?
				"the --diff baseline has no samples (all counts are zero)" :
				"the AFTER input has no samples (all counts are zero)");
		else
			fprintf(stderr, "%s: %s\n", prog, fg_strerror(r));
		goto out;
	}
	if (out_write_whole(prog, output, buf, len))
		goto out;
	rc = 0;
out:
	free(buf);
	folded_set_free(after);
	folded_set_free(before);
	return rc;
}
