/*
 * svgchart.c — histogram bar charts as SVG; contracts in svgchart.h.
 */
#include "tools/lib/svgchart.h"
#include "tools/lib/xmlesc.h"

#include <errno.h>
#include <math.h>
#include <string.h>

const char *svgchart_fmt(char *buf, size_t len, double v, const char *unit)
{
	static const char *units[] = { "ns", "us", "ms", "s" };
	int i, u = -1;

	for (i = 0; i < 4; i++)
		if (unit && !strcmp(unit, units[i]))
			u = i;
	if (u < 0) {
		/* whole numbers in full ("12000 files/s", not "1.2e+04") */
		snprintf(buf, len, fabs(v) < 1e15 && (fabs(v) >= 1e4 ||
			 v == floor(v)) ? "%.0f%s%s" : "%.4g%s%s", v,
			 unit && *unit ? " " : "", unit ? unit : "");
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

double svgchart_quantile(const struct hist_bucket *b, size_t n, double q,
			 double max)
{
	uint64_t total = 0, acc = 0;
	double v;
	size_t i;

	for (i = 0; i < n; i++)
		total += b[i].count;
	if (!total)
		return 0;
	for (i = 0; i < n - 1; i++) {
		acc += b[i].count;
		if ((double)acc >= q * (double)total)
			break;
	}
	v = b[i].hi;
	return max > 0 && v > max ? max : v;
}

/* The frame every chart starts with: the <svg> element (namespaced unless
 * it is inlined in HTML), a light background and the centred title. */
static void chart_open(FILE *f, unsigned width, unsigned height,
		       const char *title, int inline_html)
{
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
	chart_open(f, width, height, title, inline_html);
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

/* A round step (1, 2 or 5 times a power of ten) giving about 4 ticks. */
static double nice_step(double max)
{
	double raw = max / 4, p = 1;

	while (p * 10 <= raw)
		p *= 10;
	while (p > raw)
		p /= 10;
	if (raw / p > 5)
		return 10 * p;
	if (raw / p > 2)
		return 5 * p;
	if (raw / p > 1)
		return 2 * p;
	return p;
}

static const char *const series_color[] = {
	"rgb(70,130,180)", "rgb(220,120,40)", "rgb(60,160,90)",
	"rgb(190,60,70)", "rgb(130,100,180)", "rgb(140,110,80)",
	"rgb(200,110,170)", "rgb(110,110,110)",
};
#define NCOLOR (sizeof(series_color) / sizeof(series_color[0]))

int svgchart_series(FILE *f, enum svgchart_kind kind, const char *title,
		    const char *unit, const char *xlabel,
		    const char *const *xlabels, size_t nx,
		    const struct svgchart_series *s, size_t ns,
		    unsigned width, unsigned height, int inline_html)
{
	const double left = 70, right = 10;
	double top = ns > 1 ? 28 + 16 * (double)((ns + 2) / 3) : 28;
	const double bottom = xlabel && *xlabel ? 62 : 46;
	double pw, ph, cw, max = 0, step, v, lx;
	size_t i, j;
	char buf[48];

	if (height < top + bottom + 40)
		height = (unsigned)(top + bottom + 40);
	pw = width - left - right;
	ph = height - top - bottom;
	for (j = 0; j < ns; j++)
		for (i = 0; i < nx; i++)
			if (!isnan(s[j].y[i]) && s[j].y[i] > max)
				max = s[j].y[i];
	chart_open(f, width, height, title, inline_html);
	fputs("<g font-family=\"Verdana, sans-serif\" font-size=\"10\" "
	      "fill=\"rgb(80,80,80)\">\n", f);
	/* legend: three entries a row under the title */
	for (j = 0; ns > 1 && j < ns; j++) {
		lx = left + (double)(j % 3) * (pw / 3);
		v = 34 + 16 * (double)(j / 3);
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" "
			"fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">", lx, v - 9,
			series_color[j % NCOLOR], lx + 14, v);
		xml_puts(f, s[j].name);
		fputs("</text>\n", f);
	}
	if (!nx || !ns || !(max > 0)) {
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" "
			"text-anchor=\"middle\" fill=\"rgb(120,120,120)\">no values"
			"</text>\n</g>\n</svg>\n", width / 2.0, top + ph / 2);
		return ferror(f) ? -EIO : 0;
	}
	/* y axis: ticks at round values from 0 */
	step = nice_step(max);
	if (step * 4 < max)
		step = nice_step(max * 1.25);
	max = step * ceil(max / step);
	for (v = 0; v <= max + step / 2; v += step) {
		double y = top + ph - ph * v / max;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" "
			"stroke=\"rgb(%s)\"/>\n<text x=\"%.1f\" y=\"%.2f\" "
			"text-anchor=\"end\">", left, y, left + pw, y,
			v == 0 ? "160,160,160" : "230,230,230", left - 4, y + 3);
		xml_puts(f, svgchart_fmt(buf, sizeof(buf), v, unit));
		fputs("</text>\n", f);
	}
	cw = pw / (double)nx;
	for (i = 0; i < nx; i++) {
		double cx = left + cw * ((double)i + 0.5);

		fprintf(f, "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">",
			cx, top + ph + 14);
		xml_puts(f, xlabels[i]);
		fputs("</text>\n", f);
	}
	if (xlabel && *xlabel) {
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
			"font-size=\"11\">", left + pw / 2, top + ph + 34);
		xml_puts(f, xlabel);
		fputs("</text>\n", f);
	}
	for (j = 0; j < ns; j++) {
		const char *c = series_color[j % NCOLOR];
		double bw = cw * 0.8 / (double)ns;
		int open = 0;

		for (i = 0; kind == SVGCHART_LINE && i < nx; i++) {
			double y = s[j].y[i];

			if (isnan(y)) {
				if (open)
					fputs("\"/>\n", f);
				open = 0;
				continue;
			}
			if (!open)
				fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" "
					"stroke-width=\"2\" points=\"", c);
			fprintf(f, "%s%.2f,%.2f", open ? " " : "",
				left + cw * ((double)i + 0.5), top + ph - ph * y / max);
			open = 1;
		}
		if (open)
			fputs("\"/>\n", f);
		for (i = 0; i < nx; i++) {
			double y = s[j].y[i], h, x;

			if (isnan(y))
				continue;
			h = ph * y / max;
			fputs("<g><title>", f);
			xml_puts(f, s[j].name);
			fputs(", ", f);
			xml_puts(f, xlabels[i]);
			fputs(": ", f);
			xml_puts(f, svgchart_fmt(buf, sizeof(buf), y, unit));
			fputs("</title>", f);
			if (kind == SVGCHART_LINE) {
				fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3.5\" "
					"fill=\"%s\"/>", left + cw * ((double)i + 0.5),
					top + ph - h, c);
			} else {
				x = left + cw * (double)i + cw * 0.1 + bw * (double)j;
				fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
					"height=\"%.2f\" fill=\"%s\"/>", x, top + ph - h,
					bw > 1.5 ? bw - 1 : bw, h, c);
			}
			fputs("</g>\n", f);
		}
	}
	fputs("</g>\n</svg>\n", f);
	return ferror(f) ? -EIO : 0;
}
