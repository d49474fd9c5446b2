/*
 * xmlesc.c — XML escaping with UTF-8 repair; contracts in xmlesc.h.
 */
#include "tools/lib/xmlesc.h"

#include <stdint.h>
#include <string.h>

/* Decode one code point at s (n bytes left).  Returns its length in bytes
 * (>= 1) and sets *cp, or -1 in *cp for an invalid byte (length 1). */
static size_t utf8_next(const unsigned char *s, size_t n, int32_t *cp)
{
	unsigned char c = s[0];
	size_t need, i;
	int32_t v, min;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		need = 1; v = c & 0x1f; min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 2; v = c & 0x0f; min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 3; v = c & 0x07; min = 0x10000;
	} else {
		*cp = -1;
		return 1;
	}
	if (n < need + 1) {
		*cp = -1;
		return 1;
	}
	for (i = 1; i <= need; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			*cp = -1;
			return 1;
		}
		v = (v << 6) | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) {
		*cp = -1;
		return 1;
	}
	*cp = v;
	return need + 1;
}

size_t utf8_count(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n = 0;
	int32_t cp;

	while (i < len) {
		i += utf8_next(p + i, len - i, &cp);
		n++;
	}
	return n;
}

size_t xml_escape(FILE *f, const char *s, size_t len, size_t max_cp)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n = 0, k;
	int32_t cp;

	while (i < len && n < max_cp) {
		k = utf8_next(p + i, len - i, &cp);
		switch (cp) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		case '\t': case '\n':
			putc(cp, f);
			break;
		default:
			if (cp < 0x20 || cp == 0x7f || cp == 0xfffe || cp == 0xffff)
				fputs("\xef\xbf\xbd", f);	/* U+FFFD */
			else
				fwrite(p + i, 1, k, f);
		}
		i += k;
		n++;
	}
	return n;
}

void xml_puts(FILE *f, const char *s)
{
	if (s)
		xml_escape(f, s, strlen(s), SIZE_MAX);
}
