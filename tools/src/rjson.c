// SPDX-License-Identifier: GPL-2.0
/*
 * JSON strings through jansson (rjson.h): the byte strings the tools
 * name things with, made valid UTF-8, then quoted and escaped by the
 * library. jansson's json_stringn() refuses invalid UTF-8, so nothing
 * unchecked reaches the output.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rjson.h"

static int cont(unsigned char c, unsigned char lo, unsigned char hi)
{
	return c >= lo && c <= hi;
}

/* Length of the valid UTF-8 sequence at p (RFC 3629), 0 if none. */
static size_t utf8_seq(const unsigned char *p)
{
	unsigned char c = p[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return cont(p[1], 0x80, 0xbf) ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		/* No overlong forms (E0), no surrogates (ED). */
		unsigned char lo = c == 0xe0 ? 0xa0 : 0x80;
		unsigned char hi = c == 0xed ? 0x9f : 0xbf;

		return cont(p[1], lo, hi) && cont(p[2], 0x80, 0xbf) ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		/* No overlong forms (F0), nothing above U+10FFFF (F4). */
		unsigned char lo = c == 0xf0 ? 0x90 : 0x80;
		unsigned char hi = c == 0xf4 ? 0x8f : 0xbf;

		return cont(p[1], lo, hi) && cont(p[2], 0x80, 0xbf) &&
		       cont(p[3], 0x80, 0xbf) ? 4 : 0;
	}
	return 0;
}

char *rt_utf8_clean(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t len = strlen((const char *)p), n, o = 0;
	char *out = malloc(len * 3 + 1);	/* a byte becomes at most 3 */

	if (!out)
		return NULL;
	while (*p) {
		n = utf8_seq(p);
		if (n) {
			memcpy(out + o, p, n);
			o += n;
			p += n;
		} else {
			memcpy(out + o, "\xef\xbf\xbd", 3);	/* U+FFFD */
			o += 3;
			p++;
		}
	}
	out[o] = '\0';
	return out;
}

void rt_json_str(FILE *f, const char *s)
{
	char *clean = rt_utf8_clean(s);
	json_t *j = clean ? json_string(clean) : NULL;

	/* Only out of memory gets here without a string: say so in it. */
	if (!j || json_dumpf(j, f, JSON_ENCODE_ANY))
		fputs("\"(out of memory)\"", f);
	json_decref(j);
	free(clean);
}
