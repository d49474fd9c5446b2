/*
 * svgchart.c — histogram bar charts as SVG; contracts in svgchart.h.
 */
#include "tools/lib/svgchart.h"
#include "tools/lib/xmlesc.h"

#include <errno.h>
#include <string.h>

const char *svgchart_fmt(char *buf, size_t len, double v, const char *unit)
{
	static const char *units[] = { "ns", "us", "ms", "s" };
	int i, u = -1;

	for (i = 0; i < 4; i++)
		if (unit && !strcmp(unit, units[i]))
			u = i;
	if (u < 0) {
		snprintf(buf, len, "%.4g%s%s", v, unit && *unit ? " " : "",
			 unit ? unit : "");
		return buf;
	}
	while (u < 3 && v >= 1000) {
		v /= 1000;
		u++;
	}
	snprintf(buf, len, v >= 100 || v == (double)(long long)v ? "%.0f %s" :
		 "%.3g %s", v, units[u]);
	return buf;
}

double svgchart_quantile(const struct hist_bucket *b, size_t n, double q)
{
	uint64_t total = 0, acc = 0;
	size_t i;

	for (i = 0; i < n; i++)
		total += b[i].count;
	if (!total)
		return 0;
	for (i = 0; i < n; i++) {
		acc += b[i].count;
		if ((double)acc >= q * (double)total)
			return b[i].hi;
	}
	return b[n - 1].hi;
}

int svgchart_hist(FILE *f, const char *title, const char *unit,
		  const struct hist_bucket *b, size_t n, unsigned width,
		  unsigned height, int inline_html)
{
	const double left = 60, right = 10, top = 28, bottom = 46;
	double pw = width - left - right, ph = height - top - bottom, bw;
	uint64_t max = 0;
	size_t i, step;
	char lo[32], hi[32];

	for (i = 0; i < n; i++)
		if (b[i].count > max)
			max = b[i].count;
	fprintf(f, "<svg class=\"chart\" width=\"%u\" height=\"%u\" "
		"viewBox=\"0 0 %u %u\"%s>\n", width, height, width, height,
		inline_html ? "" : " xmlns=\"http://www.w3.org/2000/svg\"");
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" "
		"fill=\"rgb(250,250,250)\" stroke=\"rgb(220,220,220)\"/>\n",
		width, height);
	fprintf(f, "<text x=\"%.1f\" y=\"18\" font-family=\"Verdana, sans-serif\" "
		"font-size=\"13\" text-anchor=\"middle\">", width / 2.0);
	xml_puts(f, title);
	fputs("</text>\n", f);
	if (!max) {
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-family=\"Verdana, "
			"sans-serif\" font-size=\"12\" text-anchor=\"middle\" "
			"fill=\"rgb(120,120,120)\">no samples</text>\n</svg>\n",
			width / 2.0, height / 2.0);
		return ferror(f) ? -EIO : 0;
	}
	/* y axis: 0 and max */
	fprintf(f, "<g font-family=\"Verdana, sans-serif\" font-size=\"10\" "
		"fill=\"rgb(80,80,80)\">\n");
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%llu</text>\n",
		left - 4, top + 4, (unsigned long long)max);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">0</text>\n",
		left - 4, top + ph);
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		"stroke=\"rgb(160,160,160)\"/>\n", left, top + ph, left + pw, top + ph);
	bw = pw / (double)n;
	step = n > 12 ? (n + 11) / 12 : 1;	/* at most ~12 x labels */
	for (i = 0; i < n; i++) {
		double h = ph * (double)b[i].count / (double)max;
		double x = left + bw * (double)i;

		fprintf(f, "<g><title>");
		xml_puts(f, svgchart_fmt(lo, sizeof(lo), b[i].lo, unit));
		fputs(" .. ", f);
		xml_puts(f, svgchart_fmt(hi, sizeof(hi), b[i].hi, unit));
		fprintf(f, ": %llu</title><rect x=\"%.2f\" y=\"%.2f\" "
			"width=\"%.2f\" height=\"%.2f\" fill=\"rgb(70,130,180)\"/></g>\n",
			(unsigned long long)b[i].count, x + 1, top + ph - h,
			bw > 2 ? bw - 2 : bw, h);
		if (i % step == 0) {
			fprintf(f, "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"end\" "
				"transform=\"rotate(-35 %.2f %.1f)\">",
				x + bw / 2, top + ph + 14, x + bw / 2, top + ph + 14);
			xml_puts(f, svgchart_fmt(lo, sizeof(lo), b[i].lo, unit));
			fputs("</text>\n", f);
		}
	}
	fputs("</g>\n</svg>\n", f);
	return ferror(f) ? -EIO : 0;
}
