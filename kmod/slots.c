// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: a node's slots, the contiguous physical ranges its sets count.
 *
 * Node memory has holes (refcnt(5) "slots"). We take the System RAM ranges
 * of the resource tree inside the node's span, keep the pages that really
 * belong to the node (spans of different nodes may interleave), and round
 * each range outward to the granularity so that every set counts exactly
 * one hardware page of one slot.
 */
#include <linux/ioport.h>
#include <linux/math.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include "core.h"

/* Node boundaries are checked per 2 MiB block, per page only inside one. */
#define REFCNT_SCAN_PAGES	(SZ_2M >> PAGE_SHIFT)

/**
 * struct refcnt_slot_walk - state of a walk over a node's RAM
 * @node:	node whose slots are collected
 * @gran:	granularity to round slots to
 * @cap:	entries allocated in @node->slots
 * @err:	first error met
 */
struct refcnt_slot_walk {
	struct refcnt_node *node;
	u64 gran;
	unsigned int cap;
	int err;
};

/* Add [start, end) of the node, merged into the last slot when they touch. */
static int refcnt_slot_add(struct refcnt_slot_walk *w, u64 start, u64 end)
{
	struct refcnt_node *node = w->node;
	struct refcnt_slot *last;

	node->base_pages += (end - start) >> PAGE_SHIFT;
	start = round_down(start, w->gran);
	end = round_up(end, w->gran);

	last = node->nr_slots ? &node->slots[node->nr_slots - 1] : NULL;
	if (last && start <= last->base + last->size) {
		last->size = max(last->size, end - last->base);
		return 0;
	}
	if (node->nr_slots == w->cap) {
		unsigned int cap = w->cap ? 2 * w->cap : 8;
		struct refcnt_slot *slots;

		slots = krealloc_array(node->slots, cap, sizeof(*slots),
				       GFP_KERNEL);
		if (!slots)
			return -ENOMEM;
		node->slots = slots;
		w->cap = cap;
	}
	node->slots[node->nr_slots].base = start;
	node->slots[node->nr_slots].size = end - start;
	node->slots[node->nr_slots].node = node;
	node->nr_slots++;
	return 0;
}

/* One System RAM resource, clipped to the node's span. */
static int refcnt_slot_ram_range(struct resource *res, void *arg)
{
	struct refcnt_slot_walk *w = arg;
	unsigned long start_pfn = PFN_UP(res->start);
	unsigned long end_pfn = PFN_DOWN(res->end + 1);
	unsigned long pfn, next, run = 0;
	bool in_run = false;

	for (pfn = start_pfn; pfn < end_pfn; pfn = next) {
		int nid = pfn_to_nid(pfn);

		next = min(ALIGN(pfn + 1, REFCNT_SCAN_PAGES), end_pfn);
		if (pfn_to_nid(next - 1) != nid)
			next = pfn + 1;
		if (nid == w->node->nid) {
			if (!in_run)
				run = pfn;
			in_run = true;
			continue;
		}
		if (in_run) {
			w->err = refcnt_slot_add(w, PFN_PHYS(run), PFN_PHYS(pfn));
			if (w->err)
				return w->err;
		}
		in_run = false;
	}
	if (in_run)
		w->err = refcnt_slot_add(w, PFN_PHYS(run), PFN_PHYS(end_pfn));
	return w->err;
}

/**
 * refcnt_slots_discover() - find a node's slots and count its sets
 * @node:	node with ->nid set; ->slots, ->nr_slots, ->nr_sets and
 *		->base_pages are filled in
 * @granularity: bytes of a hardware page
 *
 * Return: 0, -ENOMEM, or -ENODEV when the node has no RAM.
 */
int refcnt_slots_discover(struct refcnt_node *node, u32 granularity)
{
	struct refcnt_slot_walk w = { .node = node, .gran = granularity };
	unsigned int i;
	u64 sets = 0;

	/* walk_system_ram_range() is not exported; this is its core. */
	walk_iomem_res_desc(IORES_DESC_NONE,
			    IORESOURCE_SYSTEM_RAM | IORESOURCE_BUSY,
			    PFN_PHYS(node_start_pfn(node->nid)),
			    PFN_PHYS(node_end_pfn(node->nid)) - 1, &w,
			    refcnt_slot_ram_range);
	if (w.err)
		return w.err;
	if (!node->nr_slots)
		return -ENODEV;

	for (i = 0; i < node->nr_slots; i++) {
		node->slots[i].first_set = sets;
		sets += node->slots[i].size >> ilog2(granularity);
	}
	node->nr_sets = sets;
	return 0;
}

/* Every slot of every node, by base address, for the reference path. */
static struct refcnt_slot *refcnt_slot_index;
static unsigned int refcnt_slot_index_len;

static int refcnt_slot_cmp(const void *a, const void *b)
{
	const struct refcnt_slot *x = a, *y = b;

	if (x->base != y->base)
		return x->base < y->base ? -1 : 1;
	return 0;
}

/**
 * refcnt_slots_index() - build the lookup from physical address to set
 * @nodes:	every node, NULL entries skipped
 * @nr_nodes:	entries in @nodes
 *
 * Return: 0 or -ENOMEM.
 */
int refcnt_slots_index(struct refcnt_node **nodes, unsigned int nr_nodes)
{
	unsigned int i, n = 0;

	for (i = 0; i < nr_nodes; i++)
		if (nodes[i])
			n += nodes[i]->nr_slots;
	refcnt_slot_index = kcalloc(n, sizeof(*refcnt_slot_index), GFP_KERNEL);
	if (!refcnt_slot_index)
		return -ENOMEM;
	for (i = 0, n = 0; i < nr_nodes; i++) {
		if (!nodes[i])
			continue;
		memcpy(&refcnt_slot_index[n], nodes[i]->slots,
		       nodes[i]->nr_slots * sizeof(*refcnt_slot_index));
		n += nodes[i]->nr_slots;
	}
	sort(refcnt_slot_index, n, sizeof(*refcnt_slot_index),
	     refcnt_slot_cmp, NULL);
	refcnt_slot_index_len = n;
	return 0;
}

/**
 * refcnt_slots_index_free() - drop the slot index
 *
 * At unload, or when a load fails: no feed or query may look up a slot
 * any more.
 */
void refcnt_slots_index_free(void)
{
	kfree(refcnt_slot_index);
	refcnt_slot_index = NULL;
	refcnt_slot_index_len = 0;
}

/* Slots whose base is at most @paddr: one past the candidate. */
static unsigned int refcnt_slot_search(u64 paddr)
{
	unsigned int lo = 0, hi = refcnt_slot_index_len;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (refcnt_slot_index[mid].base <= paddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct refcnt_slot *refcnt_slot_holding(unsigned int i,
						     u64 paddr)
{
	const struct refcnt_slot *slot = &refcnt_slot_index[i];

	return paddr - slot->base < slot->size ? slot : NULL;
}

/**
 * refcnt_slot_lookup() - the slot that counts a physical address
 * @paddr:	physical address
 *
 * A binary search over a few dozen slots: cheap, lock-free, NMI-safe.
 * Where rounding to the granularity made slots of two nodes overlap, the
 * one with the higher base counts the shared hardware page.
 *
 * Return: the slot, or NULL when no node's slot holds @paddr.
 */
const struct refcnt_slot *refcnt_slot_lookup(u64 paddr)
{
	unsigned int lo = refcnt_slot_search(paddr);

	return lo ? refcnt_slot_holding(lo - 1, paddr) : NULL;
}

/**
 * refcnt_slot_lookup_run() - refcnt_slot_lookup() for addresses in runs
 * @paddr:	physical address
 * @hint:	index of the slot of a previous lookup, updated; any value
 *		to start with
 * @end:	set to where the slot found stops counting: its end, or the
 *		base of the next slot where rounding made them overlap
 *
 * The pages of a virtual range mostly lie in few slots, and often run
 * in physical order: the slot found last is tried before searching, and
 * the caller can skip the lookups of the addresses below @end. Same
 * answer as refcnt_slot_lookup().
 *
 * Return: the slot, or NULL when no node's slot holds @paddr (@end is
 * then not set).
 */
const struct refcnt_slot *refcnt_slot_lookup_run(u64 paddr, unsigned int *hint,
						 u64 *end)
{
	const struct refcnt_slot *slot;
	unsigned int i = *hint;

	if (i >= refcnt_slot_index_len || refcnt_slot_index[i].base > paddr ||
	    (i + 1 < refcnt_slot_index_len &&
	     refcnt_slot_index[i + 1].base <= paddr)) {
		i = refcnt_slot_search(paddr);
		if (!i)
			return NULL;
		*hint = --i;
	}
	slot = refcnt_slot_holding(i, paddr);
	if (slot) {
		*end = slot->base + slot->size;
		if (i + 1 < refcnt_slot_index_len)
			*end = min(*end, refcnt_slot_index[i + 1].base);
	}
	return slot;
}
