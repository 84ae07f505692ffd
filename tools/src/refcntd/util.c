// SPDX-License-Identifier: GPL-2.0
/*
 * refcntd: what the engine's files share that is none of theirs: the
 * clock, and a small cache of recent answers (/proc reads cost per event).
 */
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
