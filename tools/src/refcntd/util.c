// SPDX-License-Identifier: GPL-2.0
/*
 * refcntd: what the engine's files share that is none of theirs: the
 * clock, a small cache of recent answers (/proc reads cost per event),
 * and which lines of /proc/pid/maps are memory refcntd may move.
 */
#include <stdio.h>
#include <time.h>

#include "internal.h"

uint64_t rd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The cached answer for key, or -1. */
int rd_cached(struct rd_cached *c, int key)
{
	struct rd_cached *s = &c[(unsigned int)key % RD_CACHE_SLOTS];

	if (s->time_ns && s->key == key && rd_now_ns() - s->time_ns < RD_CACHE_NS)
		return s->val;
	return -1;
}

int rd_cache(struct rd_cached *c, int key, int val)
{
	c[(unsigned int)key % RD_CACHE_SLOTS] =
		(struct rd_cached){ .key = key, .val = val, .time_ns = rd_now_ns() };
	return val;
}

/*
 * A /proc/pid/maps line of private writable anonymous memory (no file;
 * [heap], [stack] and the like count): 1 and its range, else 0.
 */
int rd_maps_private_anon(const char *line, uint64_t *start, uint64_t *end)
{
	unsigned long long s, e;
	char perms[8], name[256] = "";

	if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %255s", &s, &e, perms,
		   name) < 3 || perms[1] != 'w' || perms[3] != 'p' ||
	    (name[0] && name[0] != '['))
		return 0;
	*start = s;
	*end = e;
	return 1;
}
