/* SPDX-License-Identifier: GPL-2.0 */
/*
 * JSON strings for the tools' --json output, written by jansson. Names
 * come from the system (programs, paths, symbols, trace variables) and
 * may hold any byte: every byte that is not part of a valid UTF-8
 * sequence becomes U+FFFD, and jansson escapes quotes, backslashes and
 * control characters, so the output is always valid JSON.
 */
#ifndef REFCNT_RJSON_H
#define REFCNT_RJSON_H

#include <stddef.h>
#include <stdio.h>

/* JSON string literal of s (quoted, escaped; NULL is ""). */
void rt_json_str(FILE *f, const char *s);

/*
 * s as valid UTF-8 in a malloc'd string, each invalid byte replaced by
 * U+FFFD; NULL when out of memory.
 */
char *rt_utf8_clean(const char *s);

#endif
