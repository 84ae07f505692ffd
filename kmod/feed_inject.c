// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: RCB_INJECT, the exact feed: references given by the caller,
 * to replay a trace of references into the counters (refcnt-replay) or
 * to know exactly what the counters must show (the tests).
 *
 * Every entry is checked before any counts, so a bad one fails the whole
 * batch. The counter pages a reference needs are made first, where we
 * may sleep, so injected references are never dropped. A batch is one
 * instant: the deferred interrupt service of the nodes it reaches is held
 * off until its last entry is in, so each entry is a delivery that the
 * threshold interrupt keeps up with (its references fold as they cross
 * the threshold) while entries that find a counter raised and at its
 * maximum peg, the same way every time.
 *
 * A batch may make thousands of sleeping allocations: it is delivered in
 * rounds, each with the layout fixed, so that memory hotplug waits for
 * one round at most and a fatal signal stops the batch between rounds.
 */
#include <linux/minmax.h>
#include <linux/overflow.h>
#include <linux/rwsem.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <uapi/linux/refcnt.h>

#include "refcnt.h"

/* Entries per round of a batch, delivered with the layout rwsem held. */
#define REFCNT_INJECT_ROUND	256

/* The slot of every entry, or -EINVAL if one is counted by no node. */
static int refcnt_inject_check(const struct rcb_ref *refs,
			       const struct refcnt_slot **slots, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		slots[i] = refcnt_slot_lookup(refs[i].paddr);
		if (!slots[i] || refs[i].src_cnodeid >= refcnt_topo.nr_cnodes)
			return -EINVAL;
	}
	return 0;
}

/* The distinct nodes of a batch, at most @max; returns how many. */
static u32 refcnt_inject_nodes(const struct refcnt_slot **slots, u32 n,
			       struct refcnt_node **nodes, u32 max)
{
	u32 i, k, nr = 0;

	for (i = 0; i < n; i++) {
		for (k = 0; k < nr && nodes[k] != slots[i]->node; k++)
			;
		if (k == nr && nr < max)
			nodes[nr++] = slots[i]->node;
	}
	return nr;
}

static int refcnt_inject_refs(const struct rcb_ref *refs,
			      const struct refcnt_slot **slots, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		const struct refcnt_slot *s = slots[i];
		u64 set = refcnt_slot_set(s, refs[i].paddr);

		if (!refs[i].count)
			continue;
		if (!refcnt_node_prepare(s->node, set, refs[i].src_cnodeid,
					 refs[i].count))
			return -ENOMEM;
		refcnt_node_reference(s->node, set, refs[i].src_cnodeid,
				      refs[i].count, NULL);
	}
	return 0;
}

/*
 * Deliver the batch round by round, each with the layout fixed and its
 * slots looked up again: memory hotplug may come between two rounds, and
 * the later entries then count in the layout of now.
 */
static int refcnt_inject_rounds(const struct rcb_ref *refs,
				const struct refcnt_slot **slots, u32 nr)
{
	u32 done, n;
	int err;

	for (done = 0; done < nr; done += n) {
		n = min_t(u32, nr - done, REFCNT_INJECT_ROUND);
		if (done) {
			if (fatal_signal_pending(current))
				return -EINTR;
			cond_resched();
		}
		down_read(&refcnt_layout_rwsem);
		err = refcnt_inject_check(refs + done, slots + done, n) ?:
		      refcnt_inject_refs(refs + done, slots + done, n);
		up_read(&refcnt_layout_rwsem);
		if (err)
			return err;
	}
	return 0;
}

/**
 * refcnt_inject() - RCB_INJECT
 * @argp:	user pointer to struct rcb_inject
 *
 * With RCB_INJECT_SYNC, every node referenced has its pending interrupts
 * serviced before the call returns.
 *
 * Return: 0 or a negative errno (see uapi/linux/refcnt.h).
 */
long refcnt_inject(void __user *argp)
{
	const struct refcnt_slot **slots;
	struct refcnt_node *few[8], **nodes = NULL;
	struct rcb_inject in;
	struct rcb_ref *refs;
	long err = -ENOMEM;
	u32 i, nr_nodes = 0;

	if (copy_from_user(&in, argp, sizeof(in)))
		return -EFAULT;
	if (in.flags & ~RCB_INJECT_FLAGS || !in.nr_refs ||
	    in.nr_refs > RCB_INJECT_MAX)
		return -EINVAL;

	refs = kvmalloc_array(in.nr_refs, sizeof(*refs), GFP_KERNEL);
	slots = kvmalloc_array(in.nr_refs, sizeof(*slots), GFP_KERNEL);
	if (!refs || !slots)
		goto out;
	err = -EFAULT;
	if (copy_from_user(refs, u64_to_user_ptr(in.refs),
			   array_size(in.nr_refs, sizeof(*refs))))
		goto out;
	/* Every entry checked at once: a bad one, and nothing counts. */
	down_read(&refcnt_layout_rwsem);
	err = refcnt_inject_check(refs, slots, in.nr_refs);
	if (err)
		goto unlock;
	/* Most batches reach a node or two; room for every one otherwise. */
	nr_nodes = refcnt_inject_nodes(slots, in.nr_refs, few, ARRAY_SIZE(few));
	nodes = few;
	if (nr_nodes == ARRAY_SIZE(few)) {
		err = -ENOMEM;
		nodes = kvmalloc_array(nr_node_ids, sizeof(*nodes), GFP_KERNEL);
		if (!nodes)
			goto unlock;
		err = 0;
		nr_nodes = refcnt_inject_nodes(slots, in.nr_refs, nodes,
					       nr_node_ids);
	}
	/* Held across the rounds, beyond the layout rwsem: a reference. */
	for (i = 0; i < nr_nodes; i++)
		refcnt_node_get(nodes[i]);
unlock:
	up_read(&refcnt_layout_rwsem);
	if (err)
		goto out;
	for (i = 0; i < nr_nodes; i++)
		refcnt_node_hold(nodes[i]);
	err = refcnt_inject_rounds(refs, slots, in.nr_refs);
	for (i = 0; i < nr_nodes; i++) {
		if (!err && in.flags & RCB_INJECT_SYNC)
			refcnt_node_sync(nodes[i]);
		refcnt_node_unhold(nodes[i]);
		refcnt_node_put(nodes[i]);
	}
out:
	if (nodes != few)
		kvfree(nodes);
	kvfree(slots);
	kvfree(refs);
	return err;
}
