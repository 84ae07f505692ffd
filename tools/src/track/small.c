// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt-track.so: the small allocations' fast path. Each thread keeps
 * the site of its last return address and the calls and bytes not yet
 * added to it: an allocation from the same place as the last one costs a
 * compare and two adds in thread-local memory, and marks the page map only
 * when it lands on another page. The counts reach the shared table every
 * 64 calls, when the return address changes, when the thread ends
 * (pthread key destructor) and at exit(): a thread killed with its process
 * by a signal loses up to 63 calls of one site.
 */
#include <pthread.h>
#include <stdlib.h>

#include "track.h"

#define FLUSH_EVERY	64

struct tcache {
	uintptr_t ra;
	int site;
	uint32_t calls;
	uint64_t bytes;
	uint64_t last_page;	/* last page marked for this site, +1 */
	int keyed;
};

static __thread struct tcache tc __attribute__((tls_model("initial-exec")));
static pthread_key_t key;
static int have_key;

__attribute__((noinline)) void track_small_flush(void)
{
	struct track_site *s;

	if (!tc.calls || tc.site < 0 || !T.h)
		return;
	s = &T.sites[tc.site];
	__atomic_fetch_add(&s->calls, tc.calls, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->bytes, tc.bytes, __ATOMIC_RELAXED);
	tc.calls = 0;
	tc.bytes = 0;
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
	if (!tc.keyed && have_key) {
		/* Only for the destructor: any non-NULL value will do. */
		tc.keyed = 1;
		track_busy++;
		pthread_setspecific(key, &tc);
		track_busy--;
	}
	tc.ra = ra;
	tc.site = track_site_small(ra, kind);
	tc.last_page = 0;
}

void track_small(void *p, size_t size, enum track_kind kind, uintptr_t ra)
{
	uint64_t page = (uintptr_t)p >> TRACK_PAGE_SHIFT;
	uint64_t last = ((uintptr_t)p + (size ? size - 1 : 0)) >> TRACK_PAGE_SHIFT;

	if (unlikely(tc.ra != ra))
		switch_site(ra, kind);
	if (unlikely(tc.site < 0))
		return;
	tc.bytes += size;
	if (unlikely(++tc.calls >= FLUSH_EVERY))
		track_small_flush();
	if (page == last && page + 1 == tc.last_page)
		return;
	tc.last_page = last + 1;
	/* One page of the thread's last leaf: no call. */
	if (page == last && track_last_leaf &&
	    (page >> (TRACK_LEAF_SHIFT - TRACK_PAGE_SHIFT)) + 1 == track_last_key) {
		uint32_t *e = &track_last_leaf[page & (TRACK_LEAF_PAGES - 1)];

		if (*e != (uint32_t)tc.site + 1)
			__atomic_store_n(e, (uint32_t)tc.site + 1, __ATOMIC_RELAXED);
		return;
	}
	track_pages_mark(p, size, tc.site);
}
