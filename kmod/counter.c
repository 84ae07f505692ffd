// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the reference entry point, the emulated counter hardware itself.
 *
 * "N references to physical address P from node S": the hardware counter
 * of S in P's set counts them. Reaching the absolute threshold raises the
 * fold interrupt; a remote counter ahead of the home counter by more than
 * the differential threshold raises a migration event. Interrupts are
 * deferred (fold.c), exactly as on the Origin, so references that come
 * faster than the fold peg the counter at its maximum (the excess is
 * lost, and counted as lost).
 *
 * A delivery of N references stands for N references that came one by
 * one (a sample's weight, a burst a device collected over time): the
 * first meets the counter as it is, and the interrupt keeps up with the
 * rest. So a delivery that crosses the threshold with references to spare
 * fills the counter to the threshold, folds the set there and then
 * (fold.c, refcnt_fold_inline()), and goes on counting: a weight never
 * loses references by itself (Documentation/design.rst, "Weighted
 * references").
 *
 * Callable from any context, NMI included: no locks, no sleeping, and no
 * allocation in NMI: references whose counter page does not exist yet
 * are then deferred to the irq_work, which counts them outside NMI
 * (defer.c).
 */
#include <linux/hardirq.h>
#include <linux/minmax.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>

#include "compat.h"
#include "core.h"

/*
 * A missing counter page is allocated with GFP_ATOMIC where the feeds
 * call in, perf overflow handlers with preemption disabled: PREEMPT_RT
 * allows no allocation there. Kconfig says so; this, outside the tree.
 */
#ifdef CONFIG_PREEMPT_RT
#error "refcnt does not support PREEMPT_RT kernels (see kmod/Kconfig)"
#endif

/* No allocation in NMI: the caller defers what needs the page. */
static noinline u32 *refcnt_counter_alloc(struct refcnt_sparse *sp, u64 idx)
{
	return in_nmi() ? NULL : refcnt_sparse_get(sp, idx, GFP_ATOMIC);
}

/*
 * References no counter page can be had for here: in NMI, deferred to
 * the irq_work; else (out of memory), or with the CPU's deferral ring
 * full, dropped. Returns the references dropped.
 */
static noinline u32 refcnt_count_missing(struct refcnt_node *node, u64 set,
					 unsigned int src_cnode, u32 count,
					 const struct refcnt_ctx *ctx)
{
	if (in_nmi() && refcnt_defer(node, set, src_cnode, count, ctx))
		return 0;
	this_cpu_add(node->stats->refs_dropped, count);
	return count;
}

/* The hot path finds the page; making one is out of line. */
static __always_inline u32 *
refcnt_counter_get(struct refcnt_node *node, struct refcnt_sparse *sp, u64 idx)
{
	u32 *word = refcnt_sparse_word(sp, idx);

	return likely(word) ? word : refcnt_counter_alloc(sp, idx);
}

/**
 * refcnt_counter_word() - a hardware or lost count, made if allowed here
 * @node:	the node
 * @sp:		its hardware counters or lost counts
 * @idx:	counter index
 *
 * Any context: in NMI a missing page is not made.
 *
 * Return: the count, or NULL.
 */
u32 *refcnt_counter_word(struct refcnt_node *node, struct refcnt_sparse *sp,
			 u64 idx)
{
	return refcnt_counter_get(node, sp, idx);
}

/* Remember who referenced @set, for the event its interrupt may queue. */
static void refcnt_ctx_note(struct refcnt_node *node, u64 set,
			    const struct refcnt_ctx *ctx)
{
	struct refcnt_ctx_slot *slot = &node->ctx[set & node->ctx_mask];

	WRITE_ONCE(slot->set, U64_MAX);
	/* Invalidate before the fields change; pairs with refcnt_event_init() */
	smp_wmb();
	WRITE_ONCE(slot->pid, ctx->pid);
	WRITE_ONCE(slot->vaddr, ctx->vaddr);
	/* Fields before the set that validates them */
	smp_wmb();
	WRITE_ONCE(slot->set, set);
}

/* Remember the context of a reference that raises something. */
static void refcnt_ctx_keep(struct refcnt_node *node, u64 set,
			    const struct refcnt_ctx *ctx)
{
	/*
	 * Say who referenced the set first. The fold work runs on any CPU,
	 * and may find the set pending (another set of its word raised it)
	 * before this CPU is done here.
	 */
	if (ctx)
		refcnt_ctx_note(node, set, ctx);
	else if (READ_ONCE(node->ctx[set & node->ctx_mask].set) == set)
		/* This reference came without one: forget the old. */
		WRITE_ONCE(node->ctx[set & node->ctx_mask].set, U64_MAX);
}

/* Does a remote counter at @now raise a migration event? */
static bool refcnt_migrating(struct refcnt_node *node, u64 first,
			     unsigned int counter, u32 now)
{
	u32 diff = READ_ONCE(node->diff_threshold), home;

	if (!diff || counter == node->home_counter)
		return false;
	home = refcnt_home_count(node, first);
	return now > home && now - home > diff;
}

static void refcnt_peg(struct refcnt_node *node, u64 set, u64 idx, u32 lost)
{
	refcnt_lost_add(node, refcnt_counter_get(node, &node->lost, idx), lost);
	this_cpu_add(node->stats->pegged, lost);
	if (!test_and_set_bit(set, node->pegged))
		refcnt_raise(node, node->peg_pending, set);
}

static void refcnt_migrate(struct refcnt_node *node, u64 set)
{
	if (!test_and_set_bit(set, node->migrated))
		refcnt_raise(node, node->migrate_pending, set);
}

/*
 * The rare part of a reference: an interrupt may be raised. Out of line,
 * so that the common path stays short and spills few registers.
 */
static noinline void refcnt_counter_raise(struct refcnt_node *node, u64 set,
					  u64 idx, u32 lost, bool fold,
					  bool migrate,
					  const struct refcnt_ctx *ctx)
{
	refcnt_ctx_keep(node, set, ctx);
	if (lost)
		refcnt_peg(node, set, idx, lost);
	if (fold && !test_and_set_bit(set, node->fold_pending))
		refcnt_raise(node, NULL, set);
	if (migrate)
		refcnt_migrate(node, set);
}

/*
 * Add up to @left references below the threshold @thr: the counter takes
 * what fits (nothing at or above @thr). Returns what it took; *@now is
 * its new count.
 */
static u32 refcnt_counter_fill(u32 *hw, u32 left, u32 thr, u32 *now)
{
	u32 old = READ_ONCE(*hw), take;

	do {
		take = old < thr ? min(left, thr - old) : 0;
		if (!take)
			break;
	} while (!try_cmpxchg(hw, &old, old + take));
	*now = old + take;
	return take;
}

/*
 * A delivery of @count > 1 references that the counter cannot take below
 * the absolute threshold: the first meets the counter as it is (pegs if
 * it is at the maximum), the rest fill it to the threshold, fold the set
 * and go on, as if the interrupt had kept up with each. Only in NMI, when
 * the counter's extended page does not exist yet, what cannot fold is
 * deferred to the irq_work, like a reference without a hardware page.
 * Returns the references no counter holds: pegged, or dropped.
 */
static noinline u32 refcnt_count_fold(struct refcnt_node *node, u64 set,
				      unsigned int counter, u32 *hw,
				      u32 count, const struct refcnt_ctx *ctx)
{
	u64 first = refcnt_set_first(set), idx = first + counter;
	u32 thr = READ_ONCE(node->abs_threshold), old = READ_ONCE(*hw);
	u32 max = refcnt_topo.hw_max, now, take, left = count, *ext, pegged;
	bool folded = false;

	refcnt_ctx_keep(node, set, ctx);
	/* The first reference pegs a counter at its maximum; then fill. */
	do {
		take = old < thr ? min(left, thr - old) : 1;
		now = min(old + take, max);
	} while (!try_cmpxchg(hw, &old, now));
	left -= take;
	pegged = take - (now - old);
	if (pegged)
		refcnt_peg(node, set, idx, pegged);
	if (refcnt_migrating(node, first, counter, now))
		refcnt_migrate(node, set);

	while (left) {
		/* Another CPU's fold may have emptied it: then just fill. */
		if (READ_ONCE(*hw) >= thr) {
			ext = refcnt_fold_inline(node, set, idx, hw);
			if (!ext)
				break;
			folded = true;
			if (left > thr) {
				u32 nr = (left - 1) / thr;

				refcnt_fold_more(node, set, idx, ext, nr, thr);
				left -= nr * thr;
			}
		}
		left -= refcnt_counter_fill(hw, left, thr, &now);
		if (refcnt_migrating(node, first, counter, now))
			refcnt_migrate(node, set);
	}
	this_cpu_add(node->stats->references, count - left);
	if (now >= thr && !test_and_set_bit(set, node->fold_pending))
		refcnt_raise(node, NULL, set);
	else if (folded)
		/* The service queues the fold log's events. */
		irq_work_queue(&node->irq_work);
	if (left)
		left = refcnt_count_missing(node, set,
					    counter << refcnt_topo.counter_shift,
					    left, ctx);
	return pegged + left;
}

/*
 * The counter itself; inlined in both entry points (no call per
 * reference). The caller holds rcu_read_lock(): a reset frees counter
 * pages after a grace period. Returns the references no counter holds:
 * pegged, or dropped.
 */
static __always_inline u32 refcnt_count(struct refcnt_node *node, u64 set,
					unsigned int src_cnode, u32 count,
					const struct refcnt_ctx *ctx)
{
	unsigned int counter = src_cnode >> refcnt_topo.counter_shift;
	u64 first = refcnt_set_first(set);
	u32 *hw, old, now, lost = count, thr;
	bool fold, migrate;

	if (unlikely(!count))
		return 0;

	hw = refcnt_counter_get(node, &node->hw, first + counter);
	if (unlikely(!hw))
		return refcnt_count_missing(node, set, src_cnode, count, ctx);
	thr = READ_ONCE(node->abs_threshold);
	old = READ_ONCE(*hw);
	do {
		/* Past the threshold with references to spare: it folds. */
		if (unlikely(count > 1 && (u64)old + count > thr))
			return refcnt_count_fold(node, set, counter, hw, count,
						 ctx);
		now = min_t(u64, (u64)old + count, refcnt_topo.hw_max);
	} while (!try_cmpxchg(hw, &old, now));
	lost = count - (now - old);
	this_cpu_add(node->stats->references, count);

	fold = now >= thr;
	migrate = refcnt_migrating(node, first, counter, now);
	if (unlikely(lost || fold || migrate))
		refcnt_counter_raise(node, set, first + counter, lost, fold,
				     migrate, ctx);
	return lost;
}

/**
 * refcnt_node_reference() - deliver references to a set of a node
 * @node:	the node
 * @set:	set index, below @node->nr_sets
 * @src_cnode:	cnodeid the references come from, below nr_cnodes
 * @count:	references
 * @ctx:	pid and virtual address if the feed knows them, or NULL
 */
void refcnt_node_reference(struct refcnt_node *node, u64 set,
			   unsigned int src_cnode, u32 count,
			   const struct refcnt_ctx *ctx)
{
	rcu_read_lock();
	refcnt_count(node, set, src_cnode, count, ctx);
	rcu_read_unlock();
}

/**
 * refcnt_reference() - deliver references to the counter of a physical page
 * @paddr:	physical address referenced
 * @src_cnode:	cnodeid the references come from
 * @count:	references
 * @ctx:	pid and virtual address if the feed knows them, or NULL
 *
 * The entry point of every feed, exported to feed modules (feed.h). Any
 * context, NMI included.
 *
 * Return: false if @paddr is in no node's slots or @src_cnode is invalid.
 */
bool refcnt_reference(u64 paddr, unsigned int src_cnode, u32 count,
		      const struct refcnt_ctx *ctx)
{
	return refcnt_reference_outcome(paddr, src_cnode, count, ctx, NULL);
}
EXPORT_SYMBOL_NS_GPL(refcnt_reference, REFCNT_NS);

/**
 * refcnt_reference_outcome() - refcnt_reference(), saying what became of them
 * @paddr:	physical address referenced
 * @src_cnode:	cnodeid the references come from
 * @count:	references
 * @ctx:	pid and virtual address if the feed knows them, or NULL
 * @out:	the page's home cnodeid and the references lost, or NULL
 *
 * For counting sessions, which count local, remote and lost references.
 *
 * Return: false if @paddr is in no node's slots or @src_cnode is invalid.
 */
bool refcnt_reference_outcome(u64 paddr, unsigned int src_cnode, u32 count,
			      const struct refcnt_ctx *ctx,
			      struct refcnt_outcome *out)
{
	const struct refcnt_slot *slot;
	bool counted = false;
	u32 lost = count;
	int home = -1;

	/*
	 * One read-side section for the slot, its node and the counter: a
	 * layout change frees the node, and a reset counter pages, only
	 * after a grace period (synchronize_rcu()). rcu_read_lock() is
	 * allowed in NMI.
	 */
	rcu_read_lock();
	slot = refcnt_slot_lookup(paddr);
	if (likely(slot && src_cnode < refcnt_topo.nr_cnodes)) {
		home = slot->node->cnodeid;
		lost = refcnt_count(slot->node, refcnt_slot_set(slot, paddr),
				    src_cnode, count, ctx);
		counted = true;
	}
	rcu_read_unlock();
	if (out) {
		out->home_cnode = home;
		out->lost = lost;
	}
	return counted;
}

/**
 * refcnt_node_prepare() - make the counter pages a delivery will need
 * @node:	the node
 * @set:	set index
 * @src_cnode:	cnodeid the references will come from
 * @count:	references the delivery will bring
 *
 * Process context; lets exact feeds (injection) count without dropping:
 * the hardware counter and the home counter (the differential threshold
 * reads it), and the extended counter when the delivery may fold inline.
 * A reset may take the pages away again before the delivery; it then
 * makes them where it stands (GFP_ATOMIC).
 *
 * Return: false when memory could not be had.
 */
bool refcnt_node_prepare(struct refcnt_node *node, u64 set,
			 unsigned int src_cnode, u32 count)
{
	u64 first = refcnt_set_first(set);
	u64 idx = first + (src_cnode >> refcnt_topo.counter_shift);
	u32 *hw, now;

	/*
	 * Made, not kept: we may sleep here, outside RCU, and a reset frees
	 * a page it took out after a grace period that does not wait for us.
	 */
	if (!refcnt_sparse_get(&node->hw, idx, GFP_KERNEL) ||
	    (node->home_counter < refcnt_topo.counters_per_set &&
	     !refcnt_sparse_get(&node->hw, first + node->home_counter,
				GFP_KERNEL)))
		return false;
	if (count < 2)
		return true;
	/* Looked up again to be read: a reset may have freed it (then 0). */
	rcu_read_lock();
	hw = refcnt_sparse_word(&node->hw, idx);
	now = hw ? READ_ONCE(*hw) : 0;
	rcu_read_unlock();
	if ((u64)now + count <= READ_ONCE(node->abs_threshold))
		return true;
	mutex_lock(&node->fold_lock);
	hw = refcnt_table_counter(&node->table, idx);
	mutex_unlock(&node->fold_lock);
	return hw;
}
