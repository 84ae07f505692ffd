// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the threshold interrupt, and the other deferred work of a node.
 *
 * The reference path only sets per-set bits (fold, peg, migration) and
 * raises an irq_work, which is NMI-safe; the irq_work queues fold_work.
 * fold_work is the interrupt service: in process context, under the
 * node's fold_lock, it queues peg and migration events and folds whole
 * sets: every hardware counter of the set is added to its extended
 * counter (saturating at 2^32-1) and reset to 0.
 */
#include <linux/bitmap.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <uapi/linux/refcnt.h>

#include "core.h"

/**
 * refcnt_raise() - raise an interrupt for a set
 * @node:	the node
 * @pending:	bitmap to mark @set in, or NULL if the caller did
 * @set:	the set
 *
 * Any context, NMI included.
 */
void refcnt_raise(struct refcnt_node *node, unsigned long *pending, u64 set)
{
	if (pending)
		set_bit(set, pending);
	set_bit(set / BITS_PER_LONG, node->attention);
	irq_work_queue(&node->irq_work);
}

/**
 * refcnt_irq_work() - the first half of the threshold interrupt
 * @work:	the node's irq_work, raised from any context, NMI included
 *
 * Hard interrupt context, soon after the raise, on the raising CPU: makes
 * the hardware counter page an NMI found missing, if any, and queues the
 * interrupt service, refcnt_fold_work().
 */
void refcnt_irq_work(struct irq_work *work)
{
	struct refcnt_node *node = container_of(work, struct refcnt_node,
						irq_work);
	u64 want = atomic64_xchg(&node->want_hw, 0);

	/* Hard interrupt context: atomic allocation is allowed here. */
	if (want)
		refcnt_sparse_get(&node->hw, want - 1, GFP_ATOMIC);
	queue_work(system_unbound_wq, &node->fold_work);
}

static void refcnt_event_init(const struct refcnt_node *node, u64 set,
			      u32 type, struct rcb_event *ev)
{
	const struct refcnt_ctx_slot *slot = &node->ctx[set % REFCNT_CTX_SLOTS];

	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->set = set;
	ev->paddr = refcnt_set_paddr(node, set);
	ev->home_cnodeid = node->cnodeid;

	/* A lossy cache written locklessly: trust it only if stable. */
	if (READ_ONCE(slot->set) == set) {
		/* Fields after the set; pairs with refcnt_ctx_note() */
		smp_rmb();
		ev->pid = READ_ONCE(slot->pid);
		ev->vaddr = READ_ONCE(slot->vaddr);
		/* The set again after the fields: unchanged means consistent */
		smp_rmb();
		if (READ_ONCE(slot->set) == set) {
			ev->flags |= RCB_EVENT_F_CONTEXT;
		} else {
			ev->pid = 0;
			ev->vaddr = 0;
		}
	}
}

static void refcnt_event_counter(struct rcb_event *ev, unsigned int counter,
				 u32 count)
{
	ev->counter = counter;
	ev->src_cnodeid = counter << refcnt_topo.counter_shift;
	ev->count = count;
}

static void refcnt_queue(struct refcnt_node *node, struct rcb_event *ev)
{
	if (!refcnt_events_queue(&node->events, ev))
		this_cpu_inc(node->stats->events_dropped);
}

/* The first references of a set lost to a pegged counter since its fold. */
static void refcnt_peg_event(struct refcnt_node *node, u64 set)
{
	u64 first = set * refcnt_topo.counters_per_set;
	unsigned int c, top = 0;
	u32 most = 0;
	struct rcb_event ev;

	for (c = 0; c < refcnt_topo.counters_per_set; c++) {
		u32 lost = refcnt_sparse_read(&node->lost, first + c);

		if (lost > most) {
			most = lost;
			top = c;
		}
	}
	refcnt_event_init(node, set, RCB_EVENT_PEG, &ev);
	refcnt_event_counter(&ev, top, most);
	refcnt_queue(node, &ev);
}

/* A remote counter ahead of the home counter by the differential. */
static void refcnt_migrate_event(struct refcnt_node *node, u64 set)
{
	u64 first = set * refcnt_topo.counters_per_set;
	unsigned int c, top = 0;
	u32 most = 0;
	struct rcb_event ev;

	for (c = 0; c < refcnt_topo.counters_per_set; c++) {
		u32 v = refcnt_sparse_read(&node->hw, first + c);

		if (c != node->home_counter && v > most) {
			most = v;
			top = c;
		}
	}
	refcnt_event_init(node, set, RCB_EVENT_MIGRATE, &ev);
	refcnt_event_counter(&ev, top, most);
	ev.home_count = refcnt_home_count(node, first);
	this_cpu_inc(node->stats->migrations);
	refcnt_queue(node, &ev);
}

/* Add @v to an extended counter; what does not fit is lost. */
static void refcnt_extend(struct refcnt_node *node, u32 *ext, u64 idx, u32 v)
{
	u64 sum = (u64)READ_ONCE(*ext) + v;

	if (unlikely(sum > U32_MAX)) {
		u32 over = sum - U32_MAX;

		refcnt_lost_add(node, refcnt_sparse_get(&node->lost, idx,
							GFP_KERNEL), over);
		this_cpu_add(node->stats->saturated, over);
		sum = U32_MAX;
	}
	WRITE_ONCE(*ext, sum);
}

/* The threshold interrupt proper: fold the complete set. */
static void refcnt_fold_set(struct refcnt_node *node, u64 set)
{
	u64 first = set * refcnt_topo.counters_per_set;
	unsigned int c, top = 0;
	struct rcb_event ev;
	u32 most = 0;

	for (c = 0; c < refcnt_topo.counters_per_set; c++) {
		u32 *hw = refcnt_sparse_word(&node->hw, first + c);
		u32 *ext, v;

		if (!hw || !READ_ONCE(*hw))
			continue;
		ext = refcnt_table_counter(&node->table, first + c);
		if (!ext) {
			/* No memory: leave it in hardware, try again later. */
			refcnt_raise(node, node->fold_pending, set);
			continue;
		}
		v = xchg(hw, 0);
		refcnt_extend(node, ext, first + c, v);
		if (v > most) {
			most = v;
			top = c;
		}
	}
	clear_bit(set, node->pegged);
	clear_bit(set, node->migrated);
	/* Raised by a reference that raced a fold or a reset: nothing left. */
	if (!most)
		return;
	this_cpu_inc(node->stats->folds);

	refcnt_event_init(node, set, RCB_EVENT_FOLD, &ev);
	refcnt_event_counter(&ev, top, most);
	refcnt_queue(node, &ev);
}

/* Service every raised interrupt of the node. Called with fold_lock. */
static void refcnt_service(struct refcnt_node *node)
{
	unsigned long w;

	lockdep_assert_held(&node->fold_lock);
	for_each_set_bit(w, node->attention, node->nr_attention) {
		unsigned long peg, migrate, fold, b;
		u64 base = (u64)w * BITS_PER_LONG;

		clear_bit(w, node->attention);
		/* Events first: they report the counts before the fold. */
		peg = xchg(&node->peg_pending[w], 0);
		migrate = xchg(&node->migrate_pending[w], 0);
		for_each_set_bit(b, &peg, BITS_PER_LONG)
			refcnt_peg_event(node, base + b);
		for_each_set_bit(b, &migrate, BITS_PER_LONG)
			refcnt_migrate_event(node, base + b);

		/* Clear the pending bits first: a new crossing raises anew. */
		fold = xchg(&node->fold_pending[w], 0);
		for_each_set_bit(b, &fold, BITS_PER_LONG)
			refcnt_fold_set(node, base + b);
		cond_resched();
	}
}

/**
 * refcnt_node_sync() - run every pending interrupt of a node now
 * @node:	the node
 *
 * Process context, under the node's fold_lock: queues the peg and
 * migration events raised and folds the sets raised.
 */
void refcnt_node_sync(struct refcnt_node *node)
{
	mutex_lock(&node->fold_lock);
	refcnt_service(node);
	mutex_unlock(&node->fold_lock);
}

/**
 * refcnt_fold_work() - the interrupt service of a node, deferred
 * @work:	the node's fold_work
 */
void refcnt_fold_work(struct work_struct *work)
{
	refcnt_node_sync(container_of(work, struct refcnt_node, fold_work));
}

/**
 * refcnt_node_reset() - zero every counter of a node and free its pages
 * @node:	the node
 *
 * Pending interrupts are dropped with the counts. What was removed is
 * added to the node's "discarded" statistic, so that references delivered
 * = extended + hardware + lost + discarded holds across resets.
 *
 * Return: 0, or -ENOMEM (nothing was reset).
 */
int refcnt_node_reset(struct refcnt_node *node)
{
	struct page **scratch;
	unsigned int i;
	u64 sum;

	scratch = kvmalloc_array(node->hw.nr_pages, sizeof(*scratch),
				 GFP_KERNEL);
	if (!scratch)
		return -ENOMEM;

	mutex_lock(&node->fold_lock);
	/* attention first: a set raised meanwhile keeps a way to be seen. */
	bitmap_zero(node->attention, node->nr_attention);
	bitmap_zero(node->fold_pending, node->nr_sets);
	bitmap_zero(node->peg_pending, node->nr_sets);
	bitmap_zero(node->migrate_pending, node->nr_sets);
	bitmap_zero(node->pegged, node->nr_sets);
	bitmap_zero(node->migrated, node->nr_sets);
	for (i = 0; i < REFCNT_CTX_SLOTS; i++)
		WRITE_ONCE(node->ctx[i].set, U64_MAX);
	sum = refcnt_sparse_clear(&node->hw, scratch);
	sum += refcnt_sparse_clear(&node->lost, scratch);
	sum += refcnt_table_clear(&node->table, scratch);
	this_cpu_add(node->stats->discarded, sum);
	refcnt_events_trim(&node->events);
	/* prealloc: make them again (if memory fails, they come on use). */
	if (refcnt_cfg.prealloc &&
	    !refcnt_sparse_populate(&node->hw))
		refcnt_table_populate(&node->table);
	mutex_unlock(&node->fold_lock);

	kvfree(scratch);
	return 0;
}

/**
 * refcnt_node_set_thresholds() - change a node's thresholds
 * @node:	the node
 * @abs:	absolute threshold, 1..hw_max
 * @diff:	differential threshold, 0 (off)..hw_max
 *
 * Return: 0 or -EINVAL.
 */
int refcnt_node_set_thresholds(struct refcnt_node *node, u32 abs, u32 diff)
{
	if (!abs || abs > refcnt_topo.hw_max || diff > refcnt_topo.hw_max)
		return -EINVAL;
	WRITE_ONCE(node->abs_threshold, abs);
	WRITE_ONCE(node->diff_threshold, diff);
	return 0;
}

/**
 * refcnt_node_thresholds() - a node's thresholds as they are now
 * @node:	the node
 * @abs:	the absolute threshold
 * @diff:	the differential threshold, 0 when off
 */
void refcnt_node_thresholds(const struct refcnt_node *node, u32 *abs,
			    u32 *diff)
{
	*abs = READ_ONCE(node->abs_threshold);
	*diff = READ_ONCE(node->diff_threshold);
}

/**
 * refcnt_node_read_sets() - copy the counters of a range of sets
 * @node:	the node
 * @first:	first set
 * @nr:		sets; the caller checked the range
 * @hw:		room for nr * counters_per_set hardware counts, or NULL
 * @ext:	the same for extended counts, or NULL
 * @lost:	the same for lost references, or NULL
 */
void refcnt_node_read_sets(struct refcnt_node *node, u64 first, u64 nr,
			   u32 *hw, u32 *ext, u32 *lost)
{
	u64 i, idx = first * refcnt_topo.counters_per_set;
	u64 n = nr * refcnt_topo.counters_per_set;

	/* Under fold_lock: no counter is half-way through a fold. */
	mutex_lock(&node->fold_lock);
	for (i = 0; i < n; i++) {
		if (hw)
			hw[i] = refcnt_sparse_read(&node->hw, idx + i);
		if (ext)
			ext[i] = refcnt_sparse_read(&node->table.counters,
						    idx + i);
		if (lost)
			lost[i] = refcnt_sparse_read(&node->lost, idx + i);
	}
	mutex_unlock(&node->fold_lock);
}
