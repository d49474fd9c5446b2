/*
 * flamegraph.h — render a folded set as an interactive SVG flame graph.
 *
 * The picture follows flamegraph.pl: one rectangle per frame, width
 * proportional to its inclusive count, the root "all" at the bottom
 * (at the top with inverted = icicle), children sorted by name so that
 * equal prefixes merge, or kept in input order with flamechart.  The SVG
 * embeds its own script (click to zoom, "Reset Zoom", search by regular
 * expression with the matched percentage, details on hover) and fetches
 * nothing.  ("ic" next to Search makes the search case-insensitive.)
 *
 * Promises:
 *   - deterministic: the same set and options give byte-identical output
 *     (colours come from a fixed-seed generator, or from the name's hash
 *     with opts.hash);
 *   - well-formed XML whatever the frame names hold (tools/lib/xmlesc.h);
 *   - reentrant: no global state, so threads may render concurrently
 *     (sets must not change while they are rendered);
 *   - bounded: frames narrower than minwidth are left out (their time
 *     stays in their parent's width), and at most max_frames frames are
 *     drawn (the widest ones), so a 1M-line input still gives a viewable
 *     file; work is O(stacks log stacks + total frame bytes).
 *
 * Embedding: as a file or an <object>/<iframe> the SVG starts itself
 * (onload).  Inlined into HTML (innerHTML, or a server-built page), call
 * fginit(svgElement) once it is in the document: all state hangs off that
 * element, so several graphs can share a page; svgElement.fgSearch(re),
 * .fgZoom(i), .fgUnzoom() drive it from outside (tools/lib/flamegraph.js).
 *
 * Differential graphs (fg_render_diff): widths come from AFTER; each
 * frame is coloured by delta = after - before (before scaled by
 * total(after)/total(before) when opts.normalize): red grew, blue shrank,
 * white unchanged, intensity proportional to |delta| / max |delta|.  The
 * tooltip shows both counts and the delta.  Frames absent from AFTER
 * have no width and are not drawn (as with flamegraph.pl).
 */
#ifndef GLASS_FLAMEGRAPH_H
#define GLASS_FLAMEGRAPH_H

#include <stddef.h>
#include <stdio.h>

#include "tools/lib/folded.h"

enum fg_palette {
	FG_PALETTE_HOT,		/* red-yellow, CPU */
	FG_PALETTE_MEM,		/* green */
	FG_PALETTE_IO,		/* blue-grey */
	FG_PALETTE_WAKEUP,	/* aqua */
	FG_PALETTE_OFFCPU,	/* blue-purple, time spent blocked */
};

struct fg_options {
	const char *title;	/* NULL: "Flame Graph", "Icicle Graph", ... */
	const char *subtitle;	/* NULL: none */
	const char *countname;	/* unit of counts: "samples", "us", "ns" */
	const char *nametype;	/* details prefix: "Function:" */
	const char *notes;	/* free text kept in <desc id="notes"> */
	unsigned width;		/* image width, px (default 1200) */
	unsigned frame_height;	/* px (default 16) */
	unsigned font_size;	/* px (default 12) */
	double minwidth;	/* leave out frames narrower than this (px) */
	int minwidth_pct;	/* minwidth is a percentage of the total */
	size_t max_frames;	/* draw at most this many frames (default 30000) */
	enum fg_palette palette;
	int hash;		/* colour by name hash: same name, same colour */
	int reverse;		/* merge stacks from the leaf */
	int inverted;		/* icicle: root at the top */
	int flamechart;		/* keep first-seen order, no sorting (the set
				 * sums a repeated stack into its first place) */
	int normalize;		/* diff: scale BEFORE to AFTER's total */
};

/* Fill *o with the defaults above. */
void fg_options_init(struct fg_options *o);
/* "hot", "mem", "io", "wakeup", "offcpu" (also "off-cpu", "blue").
 * Returns 0, or -EINVAL for an unknown name. */
int fg_palette_parse(const char *name, enum fg_palette *out);

/* Render SET into OUT.  Returns 0, or
 *   -ENODATA  the set is empty or sums to zero
 *   -EINVAL   an option is out of range (width < 50, frame_height 0 ...)
 *   -ENOMEM, -EIO (OUT reported an error). */
int fg_render(FILE *out, const struct folded_set *set,
	      const struct fg_options *o);
/* Differential: returns -ENODATA when BEFORE or AFTER is empty or sums to
 * zero (an empty baseline is an error, not a blank picture). */
int fg_render_diff(FILE *out, const struct folded_set *before,
		   const struct folded_set *after, const struct fg_options *o);
/* Either of the above into a malloc'd buffer (*buf NUL-terminated, the
 * caller frees it); before NULL means a plain render. */
int fg_render_mem(char **buf, size_t *len, const struct folded_set *before,
		  const struct folded_set *after, const struct fg_options *o);

/* A short message for the negative errno the renderers return. */
const char *fg_strerror(int err);

#endif /* GLASS_FLAMEGRAPH_H */
