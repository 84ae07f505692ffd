// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the extended counter buffer of a node, and what its mappings
 * must show.
 *
 * The buffer is a sparse array (sparse.c) whose pages appear when a fold
 * first makes one of their counters non-zero. Mappings (made by the
 * interface, dev_mmap.c) show a page of zeros elsewhere; installing a
 * real page zaps those so the next fault maps it. map_lock orders the
 * two, so that no mapping keeps the zero page where a real page exists.
 */
#include <linux/gfp.h>
#include <linux/mm.h>

#include "core.h"

/**
 * refcnt_table_init() - set up an empty extended counter buffer
 * @table:	table to initialise
 * @nid:	node whose memory backs it
 * @len:	bytes of the buffer
 *
 * Return: 0 or -ENOMEM.
 */
int refcnt_table_init(struct refcnt_table *table, int nid, size_t len)
{
	int err;

	table->len = len;
	init_rwsem(&table->map_lock);
	err = refcnt_sparse_init(&table->counters, nid, len / sizeof(u32));
	if (err)
		return err;
	/* The node's own memory first, as for every counter page. */
	table->zero_page = alloc_pages_node(nid, GFP_KERNEL | __GFP_ZERO |
					    __GFP_THISNODE | __GFP_NOWARN, 0);
	if (!table->zero_page)
		table->zero_page = alloc_pages_node(nid, GFP_KERNEL | __GFP_ZERO,
						    0);
	if (!table->zero_page) {
		refcnt_sparse_destroy(&table->counters);
		return -ENOMEM;
	}
	return 0;
}

/**
 * refcnt_table_destroy() - free a table's memory
 * @table:	table no longer mapped by anyone
 */
void refcnt_table_destroy(struct refcnt_table *table)
{
	refcnt_sparse_destroy(&table->counters);
	if (table->zero_page)
		put_page(table->zero_page);
	table->zero_page = NULL;
}

/**
 * refcnt_table_counter() - an extended counter, its page made if need be
 * @table:	the table
 * @idx:	counter index (set * counters_per_set + counter)
 *
 * Called with the node's fold_lock held, in process context.
 *
 * Return: the counter, or NULL when no memory could be had.
 */
u32 *refcnt_table_counter(struct refcnt_table *table, u64 idx)
{
	u32 *word = refcnt_sparse_word(&table->counters, idx);
	pgoff_t pgoff = idx / REFCNT_WORDS_PER_PAGE;

	if (likely(word))
		return word;

	down_write(&table->map_lock);
	word = refcnt_sparse_get(&table->counters, idx, GFP_KERNEL);
	/* Mappings of the zero page here must fault again to see it. */
	if (word && table->mapping)
		unmap_mapping_range(table->mapping,
				    (loff_t)pgoff << PAGE_SHIFT, PAGE_SIZE, 1);
	up_write(&table->map_lock);
	return word;
}

/**
 * refcnt_table_counter_atomic() - an extended counter, made where we stand
 * @table:	the table
 * @idx:	counter index
 *
 * For folds on the reference path, where map_lock cannot be taken: a
 * missing page is made with GFP_ATOMIC and installed at once, and the
 * zero-page mappings it hides are zapped by the next interrupt service
 * (refcnt_table_zap()), which the caller raises. Until then a mapping may
 * show zeros where the counter has counts: mapped extended counters lag
 * the truth anyway. Not in NMI.
 *
 * Return: the counter, or NULL when no memory could be had.
 */
u32 *refcnt_table_counter_atomic(struct refcnt_table *table, u64 idx)
{
	u32 *word = refcnt_sparse_word(&table->counters, idx);

	if (likely(word))
		return word;
	word = refcnt_sparse_get(&table->counters, idx, GFP_ATOMIC);
	/* After the page is in: a zap that sees the bit comes after it. */
	if (word)
		set_bit(0, &table->zap);
	return word;
}

/**
 * refcnt_table_zap() - zap mappings of the zero page hiding a new page
 * @table:	the table
 *
 * Process context: the interrupt service calls it before anything else.
 * Zaps every mapping of the table when refcnt_table_counter_atomic()
 * installed a page since the last call; the next faults map what exists.
 */
void refcnt_table_zap(struct refcnt_table *table)
{
	if (!test_and_clear_bit(0, &table->zap))
		return;
	down_write(&table->map_lock);
	if (table->mapping)
		unmap_mapping_range(table->mapping, 0, 0, 1);
	up_write(&table->map_lock);
}

/**
 * refcnt_table_populate_but() - make every page of the table but some
 * @table:	the table
 * @skip:	pages to leave out, as refcnt_sparse_populate_but(), or NULL
 *
 * Return: 0 or -ENOMEM.
 */
int refcnt_table_populate_but(struct refcnt_table *table,
			      const unsigned long *skip)
{
	int err;

	down_write(&table->map_lock);
	err = refcnt_sparse_populate_but(&table->counters, skip);
	if (table->mapping)
		unmap_mapping_range(table->mapping, 0, 0, 1);
	up_write(&table->map_lock);
	return err;
}

/**
 * refcnt_table_populate() - make every page of the table (prealloc=1)
 * @table:	the table
 *
 * Return: 0 or -ENOMEM.
 */
int refcnt_table_populate(struct refcnt_table *table)
{
	return refcnt_table_populate_but(table, NULL);
}

/**
 * refcnt_table_detach() - take every extended counter page out of the table
 * @table:	the table; it reads all zeros afterwards
 * @scratch:	room for a page pointer per page of the table
 *
 * Under map_lock, and every mapping is zapped, so that no fault maps a
 * page taken out: the next faults map zeros. The grace period the caller
 * waits for before refcnt_sparse_release() comes after, without map_lock.
 *
 * Return: the number of pages taken out, into @scratch.
 */
unsigned long refcnt_table_detach(struct refcnt_table *table,
				  struct page **scratch)
{
	unsigned long n;

	down_write(&table->map_lock);
	n = refcnt_sparse_detach(&table->counters, scratch);
	if (table->mapping)
		unmap_mapping_range(table->mapping, 0, 0, 1);
	up_write(&table->map_lock);
	return n;
}

/**
 * refcnt_table_set_mapping() - say where the table's pages are mapped
 * @table:	the table
 * @mapping:	address space every mapping of the table goes through, or
 *		NULL when nothing can map it any more
 *
 * After it returns, installing a page zaps @mapping (and no longer the
 * old one).
 */
void refcnt_table_set_mapping(struct refcnt_table *table,
			      struct address_space *mapping)
{
	down_write(&table->map_lock);
	table->mapping = mapping;
	up_write(&table->map_lock);
}

/**
 * refcnt_table_pages() - pages of the table, mapped or not
 * @table:	the table
 *
 * Return: the number of pages a mapping of the whole table spans.
 */
unsigned long refcnt_table_pages(const struct refcnt_table *table)
{
	return table->counters.nr_pages;
}

/**
 * refcnt_table_map_begin() - the page to map at a page offset of the table
 * @table:	the table
 * @pgoff:	page offset, below refcnt_table_pages()
 *
 * Takes map_lock for reading: the caller maps the page, then calls
 * refcnt_table_map_end(). A page installed meanwhile waits, and then
 * zaps what the caller mapped.
 *
 * Return: the table's page, or the zero page where it has none.
 */
struct page *refcnt_table_map_begin(struct refcnt_table *table,
				    unsigned long pgoff)
{
	down_read(&table->map_lock);
	return READ_ONCE(table->counters.pages[pgoff]) ?: table->zero_page;
}

/**
 * refcnt_table_map_end() - end of the section refcnt_table_map_begin() began
 * @table:	the table
 */
void refcnt_table_map_end(struct refcnt_table *table)
{
	up_read(&table->map_lock);
}
