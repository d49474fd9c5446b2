/*
 * svgchart.h — histograms as small self-contained SVG bar charts.
 *
 * One bar per bucket [lo, hi] (in UNIT: "ns", "us", "ms", "s" are shown
 * scaled, e.g. "4.1 ms"; any other unit is printed as it is), height
 * proportional to its count, a <title> tooltip per bar.  Deterministic,
 * well-formed XML (labels go through xmlesc), no script, no fetches: fit
 * for inlining in HTML.
 */
#ifndef GLASS_SVGCHART_H
#define GLASS_SVGCHART_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct hist_bucket {
	double lo, hi;		/* value range, in the chart's unit */
	uint64_t count;
};

/* Write an <svg> bar chart of N buckets (N may be 0: an empty chart that
 * says so).  inline_html drops the XML namespace attribute (HTML needs
 * none).  Returns 0 or -EIO. */
int svgchart_hist(FILE *f, const char *title, const char *unit,
		  const struct hist_bucket *b, size_t n, unsigned width,
		  unsigned height, int inline_html);

/* "950 us", "4.1 ms", "12 s": VALUE in UNIT, scaled for people; into buf. */
const char *svgchart_fmt(char *buf, size_t len, double value, const char *unit);

/* Value at quantile Q (0..1) of the buckets: the upper bound of the bucket
 * holding it, capped at MAX (the largest value observed; MAX <= 0: not
 * known), so a quantile is never shown above the maximum.  0 when the
 * buckets are empty. */
double svgchart_quantile(const struct hist_bucket *b, size_t n, double q,
			 double max);

/* One series of a bar or line chart: y[i] is its value at the i-th x
 * category; NAN where it has none (no bar, a gap in the line). */
struct svgchart_series {
	const char *name;
	const double *y;
};

enum svgchart_kind { SVGCHART_BAR, SVGCHART_LINE };

/* Write an <svg> chart of NS series over NX categories XLABELS (evenly
 * spaced, in order): grouped bars or one polyline per series, a y axis
 * from 0 in UNIT, XLABEL under the axis, a legend when there is more
 * than one series, a <title> tooltip per value.  Returns 0 or -EIO. */
int svgchart_series(FILE *f, enum svgchart_kind kind, const char *title,
		    const char *unit, const char *xlabel,
		    const char *const *xlabels, size_t nx,
		    const struct svgchart_series *s, size_t ns,
		    unsigned width, unsigned height, int inline_html);

#endif /* GLASS_SVGCHART_H */
