// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: RCB_BENCH, the reference entry point against bare atomics.
 *
 * Both loops visit the same sequence of hardware pages of the node's
 * largest slot, one reference each, on the calling CPU; the bare loop does an
 * atomic increment in a table as large as the node's hardware counters.
 * The ratio of the two is the figure (Documentation/testing.rst).
 */
#include <linux/atomic.h>
#include <linux/ktime.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/topology.h>

#include "refcnt.h"

/* An odd stride spreads the references over the slot's pages. */
#define REFCNT_BENCH_STRIDE	4099
#define REFCNT_BENCH_CHUNK	65536

/* Between chunks: let others run, and let a killed caller go. */
static bool refcnt_bench_pause(u64 i)
{
	if (i % REFCNT_BENCH_CHUNK)
		return false;
	cond_resched();
	return fatal_signal_pending(current);
}

static u64 refcnt_bench_entry(const struct refcnt_slot *slot, u64 sets,
			      unsigned int src, u64 nr)
{
	unsigned int shift = refcnt_cfg.granularity_shift;
	u64 idx = 0, i, t0 = ktime_get_ns();

	for (i = 0; i < nr; i++) {
		refcnt_reference(slot->base + (idx << shift), src, 1, NULL);
		idx += REFCNT_BENCH_STRIDE;
		if (idx >= sets)
			idx %= sets;
		if (refcnt_bench_pause(i))
			break;
	}
	return ktime_get_ns() - t0;
}

static u64 refcnt_bench_atomic(atomic_t *table, u64 sets, unsigned int src,
			       u64 nr)
{
	unsigned int cps = refcnt_topo.counters_per_set;
	unsigned int counter = src >> refcnt_topo.counter_shift;
	u64 idx = 0, i, t0 = ktime_get_ns();

	for (i = 0; i < nr; i++) {
		atomic_inc(&table[idx * cps + counter]);
		idx += REFCNT_BENCH_STRIDE;
		if (idx >= sets)
			idx %= sets;
		if (refcnt_bench_pause(i))
			break;
	}
	return ktime_get_ns() - t0;
}

/**
 * refcnt_bench() - time @nr_refs references through the entry point
 * @node:	node whose largest slot is referenced
 * @nr_refs:	references to deliver
 * @entry_ns:	ns through refcnt_reference()
 * @atomic_ns:	ns of the bare atomic loop
 *
 * The references stay in the counters, like any others.
 *
 * Return: 0, -ENOMEM, or -EINTR when the caller was killed.
 */
int refcnt_bench(struct refcnt_node *node, u64 nr_refs, u64 *entry_ns,
		 u64 *atomic_ns)
{
	const struct refcnt_slot *slot = &node->slots[0];
	unsigned int src = refcnt_topo.nid_to_cnode[numa_node_id()];
	atomic_t *table;
	size_t bytes;
	unsigned int i;
	u64 sets;

	for (i = 1; i < node->nr_slots; i++)
		if (node->slots[i].size > slot->size)
			slot = &node->slots[i];
	sets = slot->size >> refcnt_cfg.granularity_shift;
	/* A CPU of a node onlined after the load has no counter to time. */
	if (src >= refcnt_topo.nr_cnodes)
		return -ENODEV;

	if (check_mul_overflow((size_t)node->nr_sets,
			       refcnt_topo.counters_per_set * sizeof(atomic_t),
			       &bytes))
		return -ENOMEM;
	table = kvzalloc_node(bytes, GFP_KERNEL, node->nid);
	if (!table)
		return -ENOMEM;

	/* Warm both: counter pages exist, the bare table is faulted in. */
	refcnt_bench_entry(slot, sets, src, min(nr_refs, sets));
	refcnt_bench_atomic(table, sets, src, min(nr_refs, sets));

	*entry_ns = refcnt_bench_entry(slot, sets, src, nr_refs);
	*atomic_ns = refcnt_bench_atomic(table, sets, src, nr_refs);
	kvfree(table);
	return fatal_signal_pending(current) ? -EINTR : 0;
}
