// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the reference entry point, the emulated counter hardware itself.
 *
 * "N references to physical address P from node S": the hardware counter
 * of S in P's set counts them and pegs at its maximum (the excess is lost,
 * and counted as lost). Reaching the absolute threshold raises the fold
 * interrupt; a remote counter ahead of the home counter by more than the
 * differential threshold raises a migration event. Interrupts are deferred
 * (fold.c), exactly as on the Origin, so counters may peg before the fold.
 *
 * Callable from any context, NMI included: no locks, no sleeping, and no
 * allocation in NMI (a reference whose counter page does not exist yet is
 * then dropped and counted, and the irq_work makes the page for the next).
 */
#include <linux/hardirq.h>
#include <linux/minmax.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>

#include "compat.h"
#include "core.h"

static noinline u32 *refcnt_counter_alloc(struct refcnt_node *node,
					  struct refcnt_sparse *sp, u64 idx)
{
	if (!in_nmi())
		return refcnt_sparse_get(sp, idx, GFP_ATOMIC);
	/* No allocation in NMI: have the irq_work make it for the next one. */
	if (sp == &node->hw) {
		atomic64_set(&node->want_hw, idx + 1);
		irq_work_queue(&node->irq_work);
	}
	return NULL;
}

/* The hot path finds the page; making one is out of line. */
static __always_inline u32 *
refcnt_counter_get(struct refcnt_node *node, struct refcnt_sparse *sp, u64 idx)
{
	u32 *word = refcnt_sparse_word(sp, idx);

	return likely(word) ? word : refcnt_counter_alloc(node, sp, idx);
}

/* Remember who referenced @set, for the event its interrupt may queue. */
static void refcnt_ctx_note(struct refcnt_node *node, u64 set,
			    const struct refcnt_ctx *ctx)
{
	struct refcnt_ctx_slot *slot = &node->ctx[set % REFCNT_CTX_SLOTS];

	WRITE_ONCE(slot->set, U64_MAX);
	/* Invalidate before the fields change; pairs with refcnt_event_init() */
	smp_wmb();
	WRITE_ONCE(slot->pid, ctx->pid);
	WRITE_ONCE(slot->vaddr, ctx->vaddr);
	/* Fields before the set that validates them */
	smp_wmb();
	WRITE_ONCE(slot->set, set);
}

/* Add references to a hardware counter; it pegs. Returns the new count. */
static u32 refcnt_counter_add(u32 *hw, u32 count, u32 max, u32 *lost)
{
	u32 old = READ_ONCE(*hw), new;

	do {
		new = min_t(u64, (u64)old + count, max);
	} while (!try_cmpxchg(hw, &old, new));
	*lost = count - (new - old);
	return new;
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
	/*
	 * Say who referenced the set first. The fold work runs on any CPU,
	 * and may find the set pending (another set of its word raised it)
	 * before this CPU is done here.
	 */
	if (ctx)
		refcnt_ctx_note(node, set, ctx);
	else if (READ_ONCE(node->ctx[set % REFCNT_CTX_SLOTS].set) == set)
		/* This reference came without one: forget the old. */
		WRITE_ONCE(node->ctx[set % REFCNT_CTX_SLOTS].set, U64_MAX);

	if (lost) {
		refcnt_lost_add(node, refcnt_counter_get(node, &node->lost, idx),
				lost);
		this_cpu_add(node->stats->pegged, lost);
		if (!test_and_set_bit(set, node->pegged))
			refcnt_raise(node, node->peg_pending, set);
	}
	if (fold && !test_and_set_bit(set, node->fold_pending))
		refcnt_raise(node, NULL, set);
	if (migrate && !test_and_set_bit(set, node->migrated))
		refcnt_raise(node, node->migrate_pending, set);
}

/*
 * The counter itself; inlined in both entry points (no call per reference).
 * Returns the references no counter holds: pegged, or dropped.
 */
static __always_inline u32 refcnt_count(struct refcnt_node *node, u64 set,
					unsigned int src_cnode, u32 count,
					const struct refcnt_ctx *ctx)
{
	unsigned int counter = src_cnode >> refcnt_topo.counter_shift;
	u64 first = set * refcnt_topo.counters_per_set;
	bool fold, migrate = false;
	u32 *hw, now, lost = count, diff;

	if (unlikely(!count))
		return 0;

	/* A reset frees counter pages after a grace period; sched is cheapest. */
	rcu_read_lock_sched();
	hw = refcnt_counter_get(node, &node->hw, first + counter);
	if (unlikely(!hw)) {
		this_cpu_add(node->stats->refs_dropped, count);
		goto out;
	}
	now = refcnt_counter_add(hw, count, refcnt_topo.hw_max, &lost);
	this_cpu_add(node->stats->references, count);

	fold = now >= READ_ONCE(node->abs_threshold);
	diff = READ_ONCE(node->diff_threshold);
	if (diff && counter != node->home_counter) {
		u32 home = refcnt_home_count(node, first);

		migrate = now > home && now - home > diff;
	}
	if (unlikely(lost || fold || migrate))
		refcnt_counter_raise(node, set, first + counter, lost, fold,
				     migrate, ctx);
out:
	rcu_read_unlock_sched();
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
	refcnt_count(node, set, src_cnode, count, ctx);
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

	/* The layout may change: its node lives until a grace period ends. */
	rcu_read_lock_sched();
	slot = refcnt_slot_lookup(paddr);
	if (likely(slot && src_cnode < refcnt_topo.nr_cnodes)) {
		home = slot->node->cnodeid;
		lost = refcnt_count(slot->node, refcnt_slot_set(slot, paddr),
				    src_cnode, count, ctx);
		counted = true;
	}
	rcu_read_unlock_sched();
	if (out) {
		out->home_cnode = home;
		out->lost = lost;
	}
	return counted;
}

/**
 * refcnt_node_prepare() - make the counter pages a reference will need
 * @node:	the node
 * @set:	set index
 * @src_cnode:	cnodeid the references will come from
 *
 * Process context; lets exact feeds (injection) count without dropping.
 *
 * Return: false when memory could not be had.
 */
bool refcnt_node_prepare(struct refcnt_node *node, u64 set,
			 unsigned int src_cnode)
{
	u64 first = set * refcnt_topo.counters_per_set;

	return refcnt_sparse_get(&node->hw, first +
				 (src_cnode >> refcnt_topo.counter_shift),
				 GFP_KERNEL) &&
	       (node->home_counter >= refcnt_topo.counters_per_set ||
		refcnt_sparse_get(&node->hw, first + node->home_counter,
				  GFP_KERNEL));
}
