// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: deliveries an NMI cannot count yet, counted a moment later.
 *
 * NMI context allocates nothing, so a delivery in NMI whose hardware
 * counter page does not exist yet, or the part of a weight that must fold
 * into an extended counter whose page does not exist yet, cannot be
 * counted there. It goes into a ring of the node, one per CPU, and the
 * node's irq_work, raised from the NMI, delivers it again outside NMI,
 * where the pages are made (GFP_ATOMIC). Only a full ring drops, and
 * counts what it drops: 'refs_dropped' and 'defer_full'.
 *
 * Each ring has one producer, the NMIs of its CPU (they do not nest), and
 * one consumer at a time, whoever holds its busy bit: the irq_work on any
 * CPU (it is the node's, not the CPU's) or refcnt_node_sync(). Nobody
 * waits: a consumer that finds the ring busy leaves it to the holder,
 * which looks again after it lets go.
 */
#include <linux/bitops.h>
#include <linux/irq_work.h>
#include <linux/percpu.h>

#include "core.h"

/**
 * refcnt_defer_bytes() - the memory of a node's deferral rings
 *
 * Return: bytes: a fixed cost per possible CPU, whatever the node's size;
 * part of table_bytes.
 */
size_t refcnt_defer_bytes(void)
{
	return num_possible_cpus() * sizeof(struct refcnt_defer_ring);
}

/**
 * refcnt_defer() - keep a delivery an NMI cannot count, for the irq_work
 * @node:	the node
 * @set:	the set
 * @src_cnode:	cnodeid the references come from
 * @count:	references
 * @ctx:	pid and virtual address if the feed knows them, or NULL
 *
 * NMI context only: one producer per CPU ring. A full ring keeps nothing
 * and counts @count in 'defer_full'; the caller counts them dropped.
 *
 * Return: true when kept: the irq_work is raised to count them.
 */
bool refcnt_defer(struct refcnt_node *node, u64 set, unsigned int src_cnode,
		  u32 count, const struct refcnt_ctx *ctx)
{
	struct refcnt_defer_ring *ring = this_cpu_ptr(node->defer);
	u32 head = ring->head;
	struct refcnt_deferred *e;

	/* The entry the consumer read last is free once it says so. */
	if (head - smp_load_acquire(&ring->tail) >= REFCNT_DEFER_LEN) {
		this_cpu_add(node->stats->defer_full, count);
		return false;
	}
	e = &ring->entry[head % REFCNT_DEFER_LEN];
	e->set = set;
	e->src_cnode = src_cnode;
	e->count = count;
	e->has_ctx = ctx;
	e->pid = ctx ? ctx->pid : 0;
	e->vaddr = ctx ? ctx->vaddr : 0;
	/* The entry before the head that publishes it. */
	smp_store_release(&ring->head, head + 1);
	/* The head before the flag that sends a consumer to it. */
	smp_mb__before_atomic();
	set_bit(0, &node->defer_pending);
	irq_work_queue(&node->irq_work);
	return true;
}

/* Deliver one deferred delivery again, where pages can be made. */
static void refcnt_defer_count(struct refcnt_node *node,
			       const struct refcnt_deferred *e)
{
	struct refcnt_ctx ctx = { .pid = e->pid, .vaddr = e->vaddr };

	this_cpu_add(node->stats->refs_deferred, e->count);
	refcnt_node_reference(node, e->set, e->src_cnode, e->count,
			      e->has_ctx ? &ctx : NULL);
}

/* Are there entries past @tail? */
static bool refcnt_defer_more(struct refcnt_defer_ring *ring, u32 tail)
{
	/* The head, then the entries it publishes (refcnt_defer()). */
	return tail != smp_load_acquire(&ring->head);
}

/*
 * Replay one CPU's ring. Another consumer in it: leave it to that one,
 * which looks again once it lets go, and so sees what we came for
 * (test_and_set_bit() is fully ordered, even when the bit was set).
 */
static void refcnt_defer_drain(struct refcnt_node *node,
			       struct refcnt_defer_ring *ring)
{
	struct refcnt_deferred e;
	u32 tail;

	do {
		if (test_and_set_bit(0, &ring->busy))
			return;
		for (tail = ring->tail; refcnt_defer_more(ring, tail); tail++) {
			e = ring->entry[tail % REFCNT_DEFER_LEN];
			/* Read before the slot is handed back to the NMI. */
			smp_store_release(&ring->tail, tail + 1);
			refcnt_defer_count(node, &e);
		}
		clear_bit_unlock(0, &ring->busy);
		/* Let go before looking again: pairs with the failed test. */
		smp_mb__after_atomic();
	} while (refcnt_defer_more(ring, tail));
}

/**
 * refcnt_defer_replay() - count the deliveries NMIs deferred
 * @node:	the node
 *
 * Any context but NMI: from the irq_work, and refcnt_node_sync(). Each
 * CPU's ring in the order its NMIs filled it.
 */
void refcnt_defer_replay(struct refcnt_node *node)
{
	int cpu;

	if (!test_and_clear_bit(0, &node->defer_pending))
		return;
	for_each_possible_cpu(cpu)
		refcnt_defer_drain(node, per_cpu_ptr(node->defer, cpu));
}
