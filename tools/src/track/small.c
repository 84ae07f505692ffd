// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt-track.so: the small allocations. Each thread keeps the site
 * of its last return address and the calls and bytes not yet added to it
 * (struct track_tcache): an allocation from the same place as the last one
 * is counted there before the real call (track_small_fast(), track.h), and
 * only one every TRACK_SAMPLE_BYTES is looked at in full here, after the
 * real call: the thread's counts added to the site and the pages it lies
 * on marked in the page map. So are an allocation from a new return
 * address (a hash probe, and the call stack the first time it is seen)
 * and any small mmap() or numa_alloc_*(). The counts reach the shared
 * table at least every TRACK_SAMPLE_BYTES calls, when the return address
 * changes, when the thread ends (pthread key destructor) and at exit(): a
 * thread killed with its process by a signal loses what it counted since.
 */
#include <pthread.h>
#include <stdlib.h>

#include "track.h"

__thread struct track_tcache track_tc __attribute__((tls_model("initial-exec")));
static pthread_key_t key;
static int have_key;

__attribute__((noinline)) void track_small_flush(void)
{
	struct track_site *s;

	if (!track_tc.calls)
		return;
	if (track_tc.site < 0 || !T.h) {
		/* Nowhere to add them. */
		track_tc.calls = 0;
		track_tc.bytes = 0;
		return;
	}
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
	track_tc.page = 0;
}

/* Bytes to the next allocation looked at in full: never more than the threshold. */
static inline int64_t next_left(void)
{
	return T.threshold < TRACK_SAMPLE_BYTES ? (int64_t)T.threshold : TRACK_SAMPLE_BYTES;
}

void track_small(void *p, size_t size, enum track_kind kind, uintptr_t ra)
{
	uint64_t page = (uintptr_t)p >> TRACK_PAGE_SHIFT;
	uint64_t last = ((uintptr_t)p + (size ? size - 1 : 0)) >> TRACK_PAGE_SHIFT;

	if (unlikely(track_tc.ra != ra))
		switch_site(ra, kind);
	track_tc.left = next_left();
	if (unlikely(track_tc.site < 0))
		return;
	track_tc.bytes += size;
	track_tc.calls++;
	track_small_flush();
	if (page == last && page << TRACK_PAGE_SHIFT == track_tc.page)
		return;
	track_tc.page = last << TRACK_PAGE_SHIFT;
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
