// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt-track.so: the small allocations. Each thread keeps the site
 * of its last return address and the calls and bytes not yet added to it
 * (struct track_tcache): an allocation from the same place as the last one,
 * on the same page, costs a few compares and two adds in thread-local
 * memory, inlined into the wrapper (track_small(), track.h); the rest is
 * here: a new return address (a hash probe, and the call stack the first
 * time it is seen), a flush, and a mark in the page map when an allocation
 * lands on another page. The counts reach the shared table every
 * 64 calls, when the return address changes, when the thread ends
 * (pthread key destructor) and at exit(): a thread killed with its process
 * by a signal loses up to 63 calls of one site.
 */
#include <pthread.h>
#include <stdlib.h>

#include "track.h"

#define FLUSH_EVERY	TRACK_FLUSH_EVERY

__thread struct track_tcache track_tc __attribute__((tls_model("initial-exec")));
static pthread_key_t key;
static int have_key;

__attribute__((noinline)) void track_small_flush(void)
{
	struct track_site *s;

	if (!track_tc.calls || track_tc.site < 0 || !T.h)
		return;
	s = &T.sites[track_tc.site];
	__atomic_fetch_add(&s->calls, track_tc.calls, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->bytes, track_tc.bytes, __ATOMIC_RELAXED);
	track_tc.calls = 0;
	track_tc.bytes = 0;
}

static void thread_end(void *arg)
{
	(void)arg;
	track_small_flush();
}

static void at_exit(void)
{
	track_small_flush();
}

void track_small_init(void)
{
	have_key = !pthread_key_create(&key, thread_end);
	atexit(at_exit);
}

/* A new return address: the old one's counts flushed, the new site found. */
__attribute__((noinline, cold)) static void switch_site(uintptr_t ra, enum track_kind kind)
{
	track_small_flush();
	if (!track_tc.keyed && have_key) {
		/* Only for the destructor: any non-NULL value will do. */
		track_tc.keyed = 1;
		track_busy++;
		pthread_setspecific(key, &track_tc);
		track_busy--;
	}
	track_tc.ra = ra;
	track_tc.site = track_site_small(ra, kind);
	track_tc.last_page = 0;
}

/* track_small() past its fast path: the same steps, all of them. */
__attribute__((noinline)) void track_small_slow(void *p, size_t size,
						enum track_kind kind, uintptr_t ra)
{
	uint64_t page = (uintptr_t)p >> TRACK_PAGE_SHIFT;
	uint64_t last = ((uintptr_t)p + (size ? size - 1 : 0)) >> TRACK_PAGE_SHIFT;

	if (unlikely(track_tc.ra != ra))
		switch_site(ra, kind);
	if (unlikely(track_tc.site < 0))
		return;
	track_tc.bytes += size;
	if (unlikely(++track_tc.calls >= FLUSH_EVERY))
		track_small_flush();
	if (page == last && page + 1 == track_tc.last_page)
		return;
	track_tc.last_page = last + 1;
	/* One page of the thread's last leaf: no call. */
	if (page == last && track_last_leaf &&
	    (page >> (TRACK_LEAF_SHIFT - TRACK_PAGE_SHIFT)) + 1 == track_last_key) {
		uint32_t *e = &track_last_leaf[page & (TRACK_LEAF_PAGES - 1)];

		if (*e != (uint32_t)track_tc.site + 1)
			__atomic_store_n(e, (uint32_t)track_tc.site + 1, __ATOMIC_RELAXED);
		return;
	}
	track_pages_mark(p, size, track_tc.site);
}
