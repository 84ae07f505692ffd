/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt: sparse arrays of 32-bit counters (sparse.c), whose pages exist
 * only once used. A part of the core (core.h) that knows nothing else.
 */
#ifndef _REFCNT_SPARSE_H
#define _REFCNT_SPARSE_H

#include <linux/atomic.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/types.h>

/*
 * Allocations made while loading: fail rather than call the OOM killer, so
 * a load that cannot get its memory fails cleanly (-ENOMEM).
 */
#define REFCNT_LOAD_GFP		(GFP_KERNEL | __GFP_RETRY_MAYFAIL)

/* Counters in one page of a sparse array (and of the mapped table). */
#define REFCNT_WORDS_PER_PAGE	(PAGE_SIZE / sizeof(u32))

/**
 * struct refcnt_sparse - an array of u32 whose pages exist only once used
 * @pages:	one pointer per page of the array; NULL: all zeros
 * @nr_words:	u32 entries in the array
 * @nr_pages:	entries in @pages
 * @nr_allocated: pages allocated now
 * @nid:	node the pages come from
 *
 * Pages are installed with cmpxchg, so any context but NMI may allocate.
 * Users that may race with refcnt_sparse_detach() hold rcu_read_lock(),
 * or the lock its caller holds, while they use an entry.
 */
struct refcnt_sparse {
	struct page **pages;
	u64 nr_words;
	unsigned long nr_pages;
	atomic_long_t nr_allocated;
	int nid;
};

int refcnt_sparse_init(struct refcnt_sparse *sp, int nid, u64 nr_words);
void refcnt_sparse_destroy(struct refcnt_sparse *sp);
u32 *refcnt_sparse_get(struct refcnt_sparse *sp, u64 idx, gfp_t gfp);
unsigned long refcnt_sparse_detach(struct refcnt_sparse *sp,
				   struct page **scratch);
u64 refcnt_sparse_release(struct page **pages, unsigned long n);
int refcnt_sparse_populate(struct refcnt_sparse *sp);
int refcnt_sparse_populate_but(struct refcnt_sparse *sp,
			       const unsigned long *skip);
u32 refcnt_sparse_read(struct refcnt_sparse *sp, u64 idx);

/**
 * refcnt_sparse_word() - find an entry of a sparse array
 * @sp:		the array
 * @idx:	entry index, below @sp->nr_words
 *
 * Return: the entry, or NULL when its page does not exist (it reads 0).
 */
static inline u32 *refcnt_sparse_word(struct refcnt_sparse *sp, u64 idx)
{
	struct page *page = READ_ONCE(sp->pages[idx / REFCNT_WORDS_PER_PAGE]);

	if (!page)
		return NULL;
	return (u32 *)page_address(page) + idx % REFCNT_WORDS_PER_PAGE;
}

#endif /* _REFCNT_SPARSE_H */
