// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: small helpers its parts share (progress messages, memory,
 * percentages).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "run.h"

void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char *fmt, ...)
{
	va_list ap;

	if (opt.quiet)
		return;
	va_start(ap, fmt);
	rt_verr(fmt, ap);
	va_end(ap);
}

void *xcalloc(size_t n, size_t s)
{
	void *p = calloc(n ? n : 1, s ? s : 1);

	if (!p) {
		rt_err("out of memory");
		exit(RT_EXIT_RUN_FAIL);
	}
	return p;
}

double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}
