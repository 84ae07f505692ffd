// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: a node's slots, the contiguous physical ranges its sets count.
 *
 * Node memory has holes (refcnt(5) "slots"). We take the System RAM ranges
 * of the resource tree inside the node's span, keep the pages that are
 * online and really belong to the node (spans of different nodes may
 * interleave), and round each range outward to the granularity so that
 * every set counts exactly one hardware page of one slot.
 *
 * Slots follow memory hotplug: a node's layout is replaced as a whole
 * (layout.c), and so is the index from address to slot, under RCU for
 * lookups that do not sleep and refcnt_layout_rwsem for those that do.
 */
#include <linux/ioport.h>
#include <linux/math.h>
#include <linux/memory_hotplug.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/rcupdate.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include "core.h"

/* Node boundaries are checked per 2 MiB block, per page only inside one. */
#define REFCNT_SCAN_PAGES	(SZ_2M >> PAGE_SHIFT)

/**
 * struct refcnt_slot_walk - state of a walk over a node's RAM
 * @nid:	node whose slots are collected
 * @gran:	granularity to round slots to
 * @slots:	the slots found
 * @nr_slots:	entries used in @slots
 * @base_pages:	PAGE_SIZE pages found
 * @cap:	entries allocated in @slots
 * @err:	first error met
 */
struct refcnt_slot_walk {
	int nid;
	u64 gran;
	struct refcnt_slot *slots;
	unsigned int nr_slots;
	u64 base_pages;
	unsigned int cap;
	int err;
};

/* Add [start, end) of the node, merged into the last slot when they touch. */
static int refcnt_slot_add(struct refcnt_slot_walk *w, u64 start, u64 end)
{
	struct refcnt_slot *last;

	w->base_pages += (end - start) >> PAGE_SHIFT;
	start = round_down(start, w->gran);
	end = round_up(end, w->gran);

	last = w->nr_slots ? &w->slots[w->nr_slots - 1] : NULL;
	if (last && start <= last->base + last->size) {
		last->size = max(last->size, end - last->base);
		return 0;
	}
	if (w->nr_slots == w->cap) {
		unsigned int cap = w->cap ? 2 * w->cap : 8;
		struct refcnt_slot *slots;

		slots = krealloc_array(w->slots, cap, sizeof(*slots),
				       GFP_KERNEL);
		if (!slots)
			return -ENOMEM;
		w->slots = slots;
		w->cap = cap;
	}
	w->slots[w->nr_slots].base = start;
	w->slots[w->nr_slots].size = end - start;
	w->nr_slots++;
	return 0;
}

/*
 * The node of an online page frame, -1 for an offline one (whose memory
 * map must not be read). Online state changes per memory block, which is
 * a multiple of the 2 MiB the walk steps by.
 */
static int refcnt_pfn_nid(unsigned long pfn)
{
	return pfn_to_online_page(pfn) ? pfn_to_nid(pfn) : NUMA_NO_NODE;
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
		int nid = refcnt_pfn_nid(pfn);

		next = min(ALIGN(pfn + 1, REFCNT_SCAN_PAGES), end_pfn);
		if (refcnt_pfn_nid(next - 1) != nid)
			next = pfn + 1;
		if (nid == w->nid) {
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

/* The online RAM of @w->nid now; the caller frees @w->slots. */
static int refcnt_slots_walk(struct refcnt_slot_walk *w)
{
	unsigned long start, end;

	/* A node never online has no pgdat to read its span from. */
	if (!node_online(w->nid) || !NODE_DATA(w->nid))
		return 0;
	start = node_start_pfn(w->nid);
	end = node_end_pfn(w->nid);
	if (start >= end)
		return 0;
	/* walk_system_ram_range() is not exported; this is its core. */
	walk_iomem_res_desc(IORES_DESC_NONE,
			    IORESOURCE_SYSTEM_RAM | IORESOURCE_BUSY,
			    PFN_PHYS(start), PFN_PHYS(end) - 1, w,
			    refcnt_slot_ram_range);
	return w->err;
}

/**
 * refcnt_slots_discover() - find a node's slots and count its sets
 * @node:	node with ->nid set; ->slots, ->nr_slots, ->nr_sets and
 *		->base_pages are filled in
 * @granularity: bytes of a hardware page
 *
 * Return: 0, -ENOMEM, or -ENODEV when the node has no RAM online.
 */
int refcnt_slots_discover(struct refcnt_node *node, u32 granularity)
{
	struct refcnt_slot_walk w = { .nid = node->nid, .gran = granularity };
	unsigned int i;
	u64 sets = 0;
	int err;

	err = refcnt_slots_walk(&w);
	node->slots = w.slots;
	node->nr_slots = w.nr_slots;
	node->base_pages = w.base_pages;
	if (err)
		return err;
	if (!node->nr_slots)
		return -ENODEV;

	for (i = 0; i < node->nr_slots; i++) {
		node->slots[i].node = node;
		node->slots[i].first_set = sets;
		sets += node->slots[i].size >> ilog2(granularity);
	}
	node->nr_sets = sets;
	return 0;
}

/**
 * refcnt_slots_changed() - do a node's slots differ from its online RAM?
 * @nid:	Linux node id
 * @node:	its current layout, or NULL when it has none
 * @granularity: bytes of a hardware page
 *
 * Return: 1 when they differ (memory came or went), 0 when not, or
 * -ENOMEM.
 */
int refcnt_slots_changed(int nid, const struct refcnt_node *node,
			 u32 granularity)
{
	struct refcnt_slot_walk w = { .nid = nid, .gran = granularity };
	unsigned int i;
	int ret;

	ret = refcnt_slots_walk(&w);
	if (!ret && node && node->nr_slots == w.nr_slots) {
		for (i = 0; i < w.nr_slots; i++)
			if (node->slots[i].base != w.slots[i].base ||
			    node->slots[i].size != w.slots[i].size)
				break;
		ret = i < w.nr_slots;
	} else if (!ret) {
		ret = node || w.nr_slots;
	}
	kfree(w.slots);
	return ret;
}

/**
 * struct refcnt_slot_index - every slot of every node, by base address
 * @rcu:	frees it after the readers of a replaced index are gone
 * @len:	entries in @slots
 * @slots:	copies of the nodes' slots, sorted by base
 */
struct refcnt_slot_index {
	struct rcu_head rcu;
	unsigned int len;
	struct refcnt_slot slots[];
};

/*
 * The index of the reference path. Readers hold rcu_read_lock() (the
 * feeds, the range query) or refcnt_layout_rwsem (injection, which
 * sleeps); it is replaced with the rwsem held for writing.
 */
static struct refcnt_slot_index __rcu *refcnt_slot_index;
static const struct refcnt_slot_index refcnt_no_slots;

/*
 * refcnt_layout_rwsem: held for writing while the layout changes. The
 * interface holds it for reading only around what keeps slots or nodes
 * found through the index while it may sleep (injection), or changes a
 * file's layout, which must not be retired meanwhile (reset, thresholds).
 */
DECLARE_RWSEM(refcnt_layout_rwsem);

static const struct refcnt_slot_index *refcnt_index(void)
{
	const struct refcnt_slot_index *idx;

	idx = rcu_dereference_check(refcnt_slot_index,
				    rcu_read_lock_held() ||
				    lockdep_is_held(&refcnt_layout_rwsem));
	return idx ?: &refcnt_no_slots;
}

static int refcnt_slot_cmp(const void *a, const void *b)
{
	const struct refcnt_slot *x = a, *y = b;

	if (x->base != y->base)
		return x->base < y->base ? -1 : 1;
	return 0;
}

/* Replace the index; the old one is freed once no reader can hold it. */
static void refcnt_slots_publish(struct refcnt_slot_index *idx)
{
	struct refcnt_slot_index *old;

	old = rcu_replace_pointer(refcnt_slot_index, idx,
				  lockdep_is_held(&refcnt_layout_rwsem));
	/* Readers of the old one may still use its nodes: wait for them. */
	synchronize_rcu();
	kfree(old);
}

/**
 * refcnt_slots_index() - build and publish the lookup from address to set
 * @nodes:	every node, NULL entries skipped
 * @nr_nodes:	entries in @nodes
 *
 * With refcnt_layout_rwsem held for writing. Returns after a grace
 * period: no feed still uses the index it replaced, or its nodes.
 *
 * Return: 0 or -ENOMEM (the old index stays).
 */
int refcnt_slots_index(struct refcnt_node **nodes, unsigned int nr_nodes)
{
	struct refcnt_slot_index *idx;
	unsigned int i, n = 0;

	for (i = 0; i < nr_nodes; i++)
		if (nodes[i])
			n += nodes[i]->nr_slots;
	idx = kzalloc(struct_size(idx, slots, n), GFP_KERNEL);
	if (!idx)
		return -ENOMEM;
	for (i = 0, n = 0; i < nr_nodes; i++) {
		if (!nodes[i])
			continue;
		memcpy(&idx->slots[n], nodes[i]->slots,
		       nodes[i]->nr_slots * sizeof(*idx->slots));
		n += nodes[i]->nr_slots;
	}
	sort(idx->slots, n, sizeof(*idx->slots), refcnt_slot_cmp, NULL);
	idx->len = n;
	refcnt_slots_publish(idx);
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
	refcnt_slots_publish(NULL);
}

/* Slots whose base is at most @paddr: one past the candidate. */
static unsigned int refcnt_slot_search(const struct refcnt_slot_index *idx,
				       u64 paddr)
{
	unsigned int lo = 0, hi = idx->len;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (idx->slots[mid].base <= paddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct refcnt_slot *
refcnt_slot_holding(const struct refcnt_slot_index *idx, unsigned int i,
		    u64 paddr)
{
	const struct refcnt_slot *slot = &idx->slots[i];

	return paddr - slot->base < slot->size ? slot : NULL;
}

/**
 * refcnt_set_paddr() - the physical address of a set of a node
 * @node:	the node
 * @set:	the set, below @node->nr_sets
 *
 * Return: the first byte of the hardware page the set counts.
 */
u64 refcnt_set_paddr(const struct refcnt_node *node, u64 set)
{
	unsigned int i = node->nr_slots - 1;

	while (i && node->slots[i].first_set > set)
		i--;
	return node->slots[i].base +
	       ((set - node->slots[i].first_set) << refcnt_cfg.granularity_shift);
}

/**
 * refcnt_paddr_set() - the set of a node that counts a physical address
 * @node:	the node
 * @paddr:	physical address
 *
 * Return: the set, or U64_MAX when no slot of @node holds @paddr.
 */
u64 refcnt_paddr_set(const struct refcnt_node *node, u64 paddr)
{
	unsigned int i;

	for (i = 0; i < node->nr_slots; i++)
		if (paddr - node->slots[i].base < node->slots[i].size)
			return refcnt_slot_set(&node->slots[i], paddr);
	return U64_MAX;
}

/**
 * refcnt_slot_lookup() - the slot that counts a physical address
 * @paddr:	physical address
 *
 * A binary search over a few dozen slots: cheap, lock-free, NMI-safe.
 * Where rounding to the granularity made slots of two nodes overlap, the
 * one with the higher base counts the shared hardware page. The caller
 * holds rcu_read_lock() or refcnt_layout_rwsem while it uses the
 * slot and its node.
 *
 * Return: the slot, or NULL when no node's slot holds @paddr.
 */
const struct refcnt_slot *refcnt_slot_lookup(u64 paddr)
{
	const struct refcnt_slot_index *idx = refcnt_index();
	unsigned int lo = refcnt_slot_search(idx, paddr);

	return lo ? refcnt_slot_holding(idx, lo - 1, paddr) : NULL;
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
 * answer as refcnt_slot_lookup(), and the same locking.
 *
 * Return: the slot, or NULL when no node's slot holds @paddr (@end is
 * then not set).
 */
const struct refcnt_slot *refcnt_slot_lookup_run(u64 paddr, unsigned int *hint,
						 u64 *end)
{
	const struct refcnt_slot_index *idx = refcnt_index();
	const struct refcnt_slot *slot;
	unsigned int i = *hint;

	if (i >= idx->len || idx->slots[i].base > paddr ||
	    (i + 1 < idx->len && idx->slots[i + 1].base <= paddr)) {
		i = refcnt_slot_search(idx, paddr);
		if (!i)
			return NULL;
		*hint = --i;
	}
	slot = refcnt_slot_holding(idx, i, paddr);
	if (slot) {
		*end = slot->base + slot->size;
		if (i + 1 < idx->len)
			*end = min(*end, idx->slots[i + 1].base);
	}
	return slot;
}
