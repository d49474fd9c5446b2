/*
 * xmlesc.h — text into XML/HTML without ever breaking the document.
 *
 * Untrusted bytes (frame names, titles, JSON strings) go through here on
 * their way into SVG or HTML.  Escaping: & < > " ' become entities.
 * Repair: bytes that are not well-formed UTF-8 (stray continuation bytes,
 * overlong forms, surrogates, > U+10FFFF, truncated sequences), C0 control
 * characters other than tab/newline, DEL, and U+FFFE/U+FFFF each become
 * U+FFFD, so the output is always well-formed XML 1.0 in UTF-8.
 */
#ifndef GLASS_XMLESC_H
#define GLASS_XMLESC_H

#include <stddef.h>
#include <stdio.h>

/* Write at most max_cp code points of s[0..len) escaped; SIZE_MAX = all.
 * Returns the number of code points written. */
size_t xml_escape(FILE *f, const char *s, size_t len, size_t max_cp);
/* xml_escape() of a NUL-terminated string, all of it; NULL-safe. */
void xml_puts(FILE *f, const char *s);
/* Code points in s[0..len) as xml_escape() decodes them (an invalid byte
 * counts as one). */
size_t utf8_count(const char *s, size_t len);

#endif /* GLASS_XMLESC_H */
