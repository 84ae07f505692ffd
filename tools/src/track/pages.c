// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt-track.so: the page map of small allocations. Each 4 KiB base
 * page a small allocation lies on gets the allocation's site (last writer
 * wins: a page shared by allocations of several sites goes to the site
 * that allocated on it last). refcnt-run gives each heap page's counts to
 * that site. Leaves of 1024 pages (4 MiB of address space) are found
 * through an open-addressing table of their keys; each thread remembers
 * the last leaf it used.
 */
#include "track.h"

__thread uint64_t track_last_key __attribute__((tls_model("initial-exec")));
__thread uint32_t *track_last_leaf __attribute__((tls_model("initial-exec")));
#define last_key track_last_key
#define last_leaf track_last_leaf

static inline uint32_t hash64(uint64_t k)
{
	k ^= k >> 29;
	k *= 0xbf58476d1ce4e5b9ULL;
	k ^= k >> 32;
	return (uint32_t)k;
}

/* The leaf of key (address >> TRACK_LEAF_SHIFT, + 1), or NULL if full. */
static uint32_t *leaf_of(uint64_t key)
{
	uint32_t mask = T.h->leaves_cap - 1, i = hash64(key) & mask, p;

	if (key == last_key && last_leaf)
		return last_leaf;
	for (p = 0; p < 64; p++, i = (i + 1) & mask) {
		uint64_t k = __atomic_load_n(&T.keys[i], __ATOMIC_ACQUIRE), zero = 0;

		if (!k) {
			if (__atomic_compare_exchange_n(&T.keys[i], &zero, key, 0,
							__ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE))
				__atomic_fetch_add(&T.h->leaves_nr, 1,
						   __ATOMIC_RELAXED);
			else
				k = zero;
		}
		if (!k || k == key) {
			last_key = key;
			last_leaf = T.leaves + (size_t)i * TRACK_LEAF_PAGES;
			return last_leaf;
		}
	}
	__atomic_fetch_add(&T.h->dropped_pages, 1, __ATOMIC_RELAXED);
	return NULL;
}

void track_pages_mark(const void *p, size_t size, int site)
{
	uint64_t page = (uintptr_t)p >> TRACK_PAGE_SHIFT;
	uint64_t last = ((uintptr_t)p + (size ? size - 1 : 0)) >> TRACK_PAGE_SHIFT;

	for (; page <= last; page++) {
		uint32_t *leaf = leaf_of((page >> (TRACK_LEAF_SHIFT - TRACK_PAGE_SHIFT)) + 1);

		uint32_t *e;

		if (!leaf)
			return;
		e = &leaf[page & (TRACK_LEAF_PAGES - 1)];
		/* Not dirtying the line again for the same site is cheaper. */
		if (__atomic_load_n(e, __ATOMIC_RELAXED) != (uint32_t)site + 1)
			__atomic_store_n(e, (uint32_t)site + 1, __ATOMIC_RELAXED);
	}
}
