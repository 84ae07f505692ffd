// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: sparse arrays of 32-bit counters.
 *
 * A table of counters for every hardware page would cost 0.4% of RAM and
 * more; most of it would stay zero. So counters live in pages allocated
 * from the node on first use, and a missing page reads as zeros.
 */
#include <linux/bitmap.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>

#include "sparse.h"

/**
 * refcnt_sparse_init() - set up an all-zero sparse array
 * @sp:		the array
 * @nid:	node whose memory backs it
 * @nr_words:	entries
 *
 * Return: 0 or -ENOMEM.
 */
int refcnt_sparse_init(struct refcnt_sparse *sp, int nid, u64 nr_words)
{
	sp->nid = nid;
	sp->nr_words = nr_words;
	sp->nr_pages = DIV_ROUND_UP_ULL(nr_words, REFCNT_WORDS_PER_PAGE);
	atomic_long_set(&sp->nr_allocated, 0);
	sp->pages = kvzalloc_node(array_size(sp->nr_pages, sizeof(*sp->pages)),
				  REFCNT_LOAD_GFP, nid);
	return sp->pages ? 0 : -ENOMEM;
}

/**
 * refcnt_sparse_get() - find an entry, allocating its page if needed
 * @sp:		the array
 * @idx:	entry index, below @sp->nr_words
 * @gfp:	allocation flags for a missing page (never from NMI)
 *
 * Callers that may race with refcnt_sparse_detach() use the entry only
 * inside an rcu_read_lock() section, or with the lock held that the
 * detaching caller holds. One that allocates with a sleeping @gfp outside
 * both (refcnt_node_prepare()) takes the result for success only, and
 * looks the entry up again where it reads it: once we sleep, a reset may
 * take the page away and free it.
 *
 * Return: the entry, or NULL if its page could not be allocated.
 */
u32 *refcnt_sparse_get(struct refcnt_sparse *sp, u64 idx, gfp_t gfp)
{
	u32 *word = refcnt_sparse_word(sp, idx);
	struct page *page, *old;
	unsigned long i;

	if (likely(word))
		return word;

	/*
	 * The node's own memory first, as the hardware had it, but with no
	 * reclaim retries there: once the node is full, every page would
	 * otherwise pay a long failing slow path before another node is
	 * asked (minutes for a prealloc=1 load that does not fit).
	 */
	page = alloc_pages_node(sp->nid, (gfp & ~__GFP_RETRY_MAYFAIL) |
				__GFP_NORETRY | __GFP_ZERO | __GFP_THISNODE |
				__GFP_NOWARN, 0);
	if (!page)
		page = alloc_pages_node(sp->nid, gfp | __GFP_ZERO | __GFP_NOWARN,
					0);
	if (!page)
		return NULL;
	i = idx / REFCNT_WORDS_PER_PAGE;
	old = cmpxchg(&sp->pages[i], NULL, page);
	if (old) {
		__free_page(page);	/* another CPU installed one first */
		page = old;
	} else {
		atomic_long_inc(&sp->nr_allocated);
	}
	/*
	 * Not read back from the array: a reset may have taken the page out
	 * already. It frees it after a grace period, so a caller inside
	 * rcu_read_lock() may still use the entry, and the reset counts what
	 * it adds as discarded.
	 */
	return (u32 *)page_address(page) + idx % REFCNT_WORDS_PER_PAGE;
}

/**
 * refcnt_sparse_populate_but() - allocate every page of the array now,
 * but some
 * @sp:		the array
 * @skip:	pages to leave out (a bitmap of @sp->nr_pages), or NULL
 *
 * For prealloc=1: no allocation later on the reference path, so NMI
 * feeds never drop a reference for want of a page. Fails rather than
 * calling the OOM killer. A new layout leaves out the pages it takes
 * over from the one it replaces (refcnt_node_retire()).
 *
 * Return: 0 or -ENOMEM (pages already made stay, freed with the array).
 */
int refcnt_sparse_populate_but(struct refcnt_sparse *sp,
			       const unsigned long *skip)
{
	unsigned long i;

	for (i = 0; i < sp->nr_pages; i++) {
		if (skip && test_bit(i, skip))
			continue;
		if (!refcnt_sparse_get(sp, (u64)i * REFCNT_WORDS_PER_PAGE,
				       GFP_KERNEL | __GFP_RETRY_MAYFAIL))
			return -ENOMEM;
		cond_resched();
	}
	return 0;
}

/**
 * refcnt_sparse_populate() - allocate every page of the array now
 * @sp:		the array
 *
 * Return: 0 or -ENOMEM, as refcnt_sparse_populate_but().
 */
int refcnt_sparse_populate(struct refcnt_sparse *sp)
{
	return refcnt_sparse_populate_but(sp, NULL);
}

/**
 * refcnt_sparse_read() - read an entry, 0 when its page does not exist
 * @sp:		the array
 * @idx:	entry index
 *
 * Return: the entry's value.
 */
u32 refcnt_sparse_read(struct refcnt_sparse *sp, u64 idx)
{
	u32 *word = refcnt_sparse_word(sp, idx);

	return word ? READ_ONCE(*word) : 0;
}

static u64 refcnt_page_sum(struct page *page)
{
	const u32 *word = page_address(page);
	u64 sum = 0;
	unsigned int i;

	for (i = 0; i < REFCNT_WORDS_PER_PAGE; i++)
		sum += word[i];
	return sum;
}

/**
 * refcnt_sparse_detach() - take every page out of the array
 * @sp:		the array; it reads all zeros afterwards
 * @scratch:	room for @sp->nr_pages page pointers, filled with the pages
 *
 * Writers may still be using an entry of a page taken out, inside
 * rcu_read_lock(): the caller waits for a grace period (with no lock
 * held that a fault or the interrupt service needs) before
 * refcnt_sparse_release().
 *
 * Return: the number of pages taken out.
 */
unsigned long refcnt_sparse_detach(struct refcnt_sparse *sp,
				   struct page **scratch)
{
	unsigned long i, n = 0;

	for (i = 0; i < sp->nr_pages; i++) {
		struct page *page = xchg(&sp->pages[i], NULL);

		if (page)
			scratch[n++] = page;
	}
	atomic_long_sub(n, &sp->nr_allocated);
	return n;
}

/**
 * refcnt_sparse_release() - sum and free pages taken out of arrays
 * @pages:	pages refcnt_sparse_detach() took out, a grace period ago
 * @n:		how many
 *
 * Return: the sum of their entries.
 */
u64 refcnt_sparse_release(struct page **pages, unsigned long n)
{
	unsigned long i;
	u64 sum = 0;

	for (i = 0; i < n; i++) {
		sum += refcnt_page_sum(pages[i]);
		/* Mapped pages (extended counters) live on until unmapped. */
		put_page(pages[i]);
		if (!(i % 64))
			cond_resched();
	}
	return sum;
}

/**
 * refcnt_sparse_destroy() - free an array nobody uses any more
 * @sp:		the array
 */
void refcnt_sparse_destroy(struct refcnt_sparse *sp)
{
	unsigned long i;

	if (!sp->pages)
		return;
	for (i = 0; i < sp->nr_pages; i++)
		if (sp->pages[i])
			put_page(sp->pages[i]);
	kvfree(sp->pages);
	sp->pages = NULL;
}
