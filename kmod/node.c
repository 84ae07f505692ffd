// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the counter hardware of one node: building it, tearing it down,
 * and what it costs and counted.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/mm.h>
#include <linux/percpu.h>
#include <linux/slab.h>

#include "core.h"

static unsigned long *refcnt_bitmap(u64 bits, int nid, size_t *bytes)
{
	size_t len = BITS_TO_LONGS(bits) * sizeof(unsigned long);

	*bytes += len;
	return kvzalloc_node(len, REFCNT_LOAD_GFP, nid);
}

/*
 * prealloc=1: would this node's counter pages leave the machine less
 * than 1/16 of its memory available? Then fail before taking them, not
 * after driving everyone else to the OOM killer.
 */
static bool refcnt_node_prealloc_fits(struct refcnt_node *node)
{
	unsigned long need = node->hw.nr_pages + node->table.counters.nr_pages;

	if (need + totalram_pages() / 16 <= si_mem_available())
		return true;
	pr_err("node %d: prealloc=1 needs %lu MiB of counters, which would leave less than 1/16 of memory available\n",
	       node->nid, need >> (20 - PAGE_SHIFT));
	return false;
}

/* Everything but the slots; safe on a half-built node. */
static void refcnt_node_free(struct refcnt_node *node)
{
	refcnt_events_destroy(&node->events);
	refcnt_table_destroy(&node->table);
	refcnt_sparse_destroy(&node->lost);
	refcnt_sparse_destroy(&node->hw);
	kvfree(node->ctx);
	kvfree(node->attention);
	kvfree(node->migrate_owed);
	kvfree(node->migrated);
	kvfree(node->pegged);
	kvfree(node->migrate_pending);
	kvfree(node->peg_pending);
	kvfree(node->fold_pending);
	free_percpu(node->defer);
	free_percpu(node->stats);
}

/* One context slot per 64 sets, a power of two, REFCNT_CTX_MIN to _MAX. */
static u32 refcnt_ctx_slots(u64 nr_sets)
{
	u32 n = REFCNT_CTX_MIN;

	while (n < REFCNT_CTX_MAX && (u64)n * 64 < nr_sets)
		n <<= 1;
	return n;
}

static void refcnt_page_planned(unsigned long p, unsigned long q, void *arg)
{
	unsigned long *planned = arg;

	__set_bit(q, planned);
}

/*
 * prealloc=1: every counter page, but those @prev is to hand over when
 * it is retired (refcnt_node_retire()); refcnt_node_populate() makes
 * any it did not, right after. So a block coming or going allocates for
 * that block, not for the node.
 */
static int refcnt_node_prealloc(struct refcnt_node *node,
				const struct refcnt_node *prev)
{
	unsigned long *skip = NULL;
	int err;

	if (!refcnt_node_prealloc_fits(node))
		return -ENOMEM;
	if (prev) {
		skip = bitmap_zalloc(node->hw.nr_pages, GFP_KERNEL);
		if (!skip)
			return -ENOMEM;
		refcnt_pages_kept(prev, node, refcnt_page_planned, skip);
	}
	err = refcnt_sparse_populate_but(&node->hw, skip) ?:
	      refcnt_table_populate_but(&node->table, skip);
	bitmap_free(skip);
	return err;
}

/**
 * refcnt_node_populate() - prealloc=1: make every counter page missing
 * @node:	a new layout, once the one it replaced is retired
 *
 * Return: 0 or -ENOMEM.
 */
int refcnt_node_populate(struct refcnt_node *node)
{
	return refcnt_sparse_populate(&node->hw) ?:
	       refcnt_table_populate(&node->table);
}

static int refcnt_node_alloc(struct refcnt_node *node,
			     const struct refcnt_node *prev)
{
	u64 words = refcnt_set_first(node->nr_sets);
	size_t *fixed = &node->fixed_bytes;
	int nid = node->nid, err;
	unsigned int i;

	refcnt_events_init(&node->events, nid, refcnt_cfg.event_queue_len);
	node->stats = alloc_percpu(struct refcnt_stats);
	node->defer = alloc_percpu(struct refcnt_defer_ring);
	*fixed += refcnt_defer_bytes();
	node->fold_pending = refcnt_bitmap(node->nr_sets, nid, fixed);
	node->peg_pending = refcnt_bitmap(node->nr_sets, nid, fixed);
	node->migrate_pending = refcnt_bitmap(node->nr_sets, nid, fixed);
	node->pegged = refcnt_bitmap(node->nr_sets, nid, fixed);
	node->migrated = refcnt_bitmap(node->nr_sets, nid, fixed);
	node->migrate_owed = refcnt_bitmap(node->nr_sets, nid, fixed);
	node->nr_attention = DIV_ROUND_UP_ULL(node->nr_sets, BITS_PER_LONG);
	node->attention = refcnt_bitmap(node->nr_attention, nid, fixed);
	node->ctx_mask = refcnt_ctx_slots(node->nr_sets) - 1;
	node->ctx = kvzalloc_node((node->ctx_mask + 1) * sizeof(*node->ctx),
				  REFCNT_LOAD_GFP, nid);
	*fixed += (node->ctx_mask + 1) * sizeof(*node->ctx);
	if (!node->stats || !node->defer || !node->fold_pending ||
	    !node->peg_pending || !node->migrate_pending || !node->pegged ||
	    !node->migrated || !node->migrate_owed || !node->attention ||
	    !node->ctx)
		return -ENOMEM;
	for (i = 0; i <= node->ctx_mask; i++)
		node->ctx[i].set = U64_MAX;	/* no set: no context */

	err = refcnt_sparse_init(&node->hw, nid, words);
	if (!err)
		err = refcnt_sparse_init(&node->lost, nid, words);
	if (!err)
		err = refcnt_table_init(&node->table, nid, words * sizeof(u32));
	/* Hardware and extended counters; lost ones only come with pegs. */
	if (!err && refcnt_cfg.prealloc)
		err = refcnt_node_prealloc(node, prev);
	if (err)
		return err;
	/* Page pointers of three sparse arrays, the zero page. */
	*fixed += 3 * node->hw.nr_pages * sizeof(struct page *) + PAGE_SIZE +
		  sizeof(*node) + node->nr_slots * sizeof(*node->slots);
	return 0;
}

/**
 * refcnt_node_create() - build the counter hardware of a node with memory
 * @nid:	Linux node id
 * @generation:	layout generation of @nid this node is
 * @inherited:	statistics of the earlier layouts of @nid, or NULL
 * @prev:	the layout of @nid this one is to replace, or NULL: with
 *		prealloc=1, the counter pages it hands over are not made
 *
 * The slots are the node's memory online now. The caller holds the only
 * reference (refcnt_node_put()).
 *
 * Return: the node, or an ERR_PTR (-ENODEV: no memory online).
 */
struct refcnt_node *refcnt_node_create(int nid, u64 generation,
				       const struct refcnt_stats *inherited,
				       const struct refcnt_node *prev)
{
	struct refcnt_node *node;
	size_t len;
	int err;

	node = kzalloc_node(sizeof(*node), GFP_KERNEL, nid);
	if (!node)
		return ERR_PTR(-ENOMEM);
	node->nid = nid;
	kref_init(&node->ref);
	node->generation = generation;
	if (inherited)
		node->inherited = *inherited;
	/* -1 for a node that came online after the load: no home counter. */
	node->cnodeid = refcnt_topo.nid_to_cnode[nid];
	node->home_counter = node->cnodeid < 0 ? U32_MAX :
			     node->cnodeid >> refcnt_topo.counter_shift;
	node->abs_threshold = refcnt_cfg.abs_threshold;
	node->diff_threshold = refcnt_cfg.diff_threshold;
	mutex_init(&node->fold_lock);
	init_irq_work(&node->irq_work, refcnt_irq_work);
	INIT_DELAYED_WORK(&node->fold_work, refcnt_fold_work);

	err = refcnt_slots_discover(node, refcnt_cfg.granularity);
	if (err)
		goto free_node;

	err = -EOVERFLOW;
	if (check_mul_overflow((size_t)node->nr_sets,
			       refcnt_topo.counters_per_set * sizeof(u32), &len))
		goto free_node;
	err = refcnt_node_alloc(node, prev);
	if (err)
		goto free_node;
	return node;

free_node:
	refcnt_node_free(node);
	kfree(node->slots);
	kfree(node);
	return ERR_PTR(err);
}

/* The last reference is gone: no file, mapping or layout can reach it. */
static void refcnt_node_release(struct kref *ref)
{
	struct refcnt_node *node = container_of(ref, struct refcnt_node, ref);

	refcnt_node_stop(node);
	refcnt_node_free(node);
	kfree(node->slots);
	kfree(node);
}

/**
 * refcnt_node_get() - take a reference to a node
 * @node:	the node
 */
void refcnt_node_get(struct refcnt_node *node)
{
	kref_get(&node->ref);
}

/**
 * refcnt_node_put() - drop a reference; the last frees the node
 * @node:	the node, or NULL
 *
 * Process context: freeing waits for the node's interrupt service. The
 * last reference goes only once no feed can reach the node (it is in no
 * slot index, after a grace period) and nothing maps its table.
 */
void refcnt_node_put(struct refcnt_node *node)
{
	if (node)
		kref_put(&node->ref, refcnt_node_release);
}

/**
 * refcnt_node_table_bytes() - memory the node's counters use now
 * @node:	the node
 *
 * Return: bytes: the fixed part plus every counter page allocated.
 */
size_t refcnt_node_table_bytes(const struct refcnt_node *node)
{
	return node->fixed_bytes +
	       (atomic_long_read(&node->hw.nr_allocated) +
		atomic_long_read(&node->lost.nr_allocated) +
		atomic_long_read(&node->table.counters.nr_allocated)) *
	       PAGE_SIZE;
}

/**
 * refcnt_stats_add() - add statistics to others
 * @to:		the sum
 * @s:		what to add; read once each, so a live per-CPU copy will do
 */
void refcnt_stats_add(struct refcnt_stats *to, const struct refcnt_stats *s)
{
	const u64 *from = (const u64 *)s;
	u64 *sum = (u64 *)to;
	unsigned int i;

	for (i = 0; i < REFCNT_NR_STATS; i++)
		sum[i] += READ_ONCE(from[i]);
}

/**
 * refcnt_node_stats() - sum a node's statistics
 * @node:	the node
 * @sum:	filled in: those of the node's earlier layouts, plus its own
 *		per-CPU ones
 */
void refcnt_node_stats(const struct refcnt_node *node, struct refcnt_stats *sum)
{
	int cpu;

	*sum = node->inherited;
	for_each_possible_cpu(cpu)
		refcnt_stats_add(sum, per_cpu_ptr(node->stats, cpu));
}

/**
 * refcnt_node_counters() - a node's hardware or extended counters
 * @node:	the node
 * @extended:	the extended counters rather than the hardware ones
 *
 * For lockless readers (refcnt_sparse_word(), refcnt_sparse_read()),
 * under rcu_read_lock(): a reset frees the pages after a grace
 * period.
 *
 * Return: the sparse array, set-major.
 */
struct refcnt_sparse *refcnt_node_counters(struct refcnt_node *node,
					   bool extended)
{
	return extended ? &node->table.counters : &node->hw;
}
