// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the extended counter buffer of a node and its read-only mapping.
 *
 * The buffer is kept as an array of pages from the node itself, allocated
 * only where a counter becomes non-zero. Mappings show a page of zeros
 * elsewhere; installing a real page zaps those so the next fault sees it.
 */
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>

#include "refcnt.h"

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
	table->nid = nid;
	table->len = len;
	table->nr_pages = DIV_ROUND_UP(len, PAGE_SIZE);
	init_rwsem(&table->map_lock);

	table->pages = kvzalloc_node(array_size(table->nr_pages,
						sizeof(*table->pages)),
				     GFP_KERNEL, nid);
	if (!table->pages)
		return -ENOMEM;
	table->zero_page = alloc_pages_node(nid, GFP_KERNEL | __GFP_ZERO, 0);
	if (!table->zero_page) {
		kvfree(table->pages);
		table->pages = NULL;
		return -ENOMEM;
	}
	return 0;
}

/**
 * refcnt_table_destroy() - free a table's memory
 * @table:	table no longer mapped by anyone
 *
 * Pages still referenced by a mapping stay alive until it goes: every
 * mapping holds its own page reference.
 */
void refcnt_table_destroy(struct refcnt_table *table)
{
	unsigned long i;

	if (!table->pages)
		return;
	for (i = 0; i < table->nr_pages; i++)
		if (table->pages[i])
			put_page(table->pages[i]);
	kvfree(table->pages);
	table->pages = NULL;
	put_page(table->zero_page);
	table->zero_page = NULL;
}

/**
 * refcnt_table_fault() - map one page of the buffer
 * @table:	table of the mapped node
 * @vmf:	the fault
 *
 * Return: VM_FAULT_NOPAGE with the page inserted, or an error code.
 */
vm_fault_t refcnt_table_fault(struct refcnt_table *table, struct vm_fault *vmf)
{
	struct page *page;
	vm_fault_t ret;

	if (vmf->pgoff >= table->nr_pages)
		return VM_FAULT_SIGBUS;

	down_read(&table->map_lock);
	page = READ_ONCE(table->pages[vmf->pgoff]) ?: table->zero_page;
	ret = vmf_insert_page(vmf->vma, vmf->address, page);
	up_read(&table->map_lock);
	return ret;
}
