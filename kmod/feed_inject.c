// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: RCB_INJECT, the exact feed: references given by the caller,
 * to replay a trace of references into the counters (refcnt-replay) or
 * to know exactly what the counters must show (the tests).
 *
 * Every entry is checked before any counts, so a bad one fails the whole
 * batch. The counter pages a reference needs are made first, where we
 * may sleep, so injected references are never dropped.
 */
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <uapi/linux/refcnt.h>

#include "refcnt.h"

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

static int refcnt_inject_refs(const struct rcb_ref *refs,
			      const struct refcnt_slot **slots, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		const struct refcnt_slot *s = slots[i];
		u64 set = refcnt_slot_set(s, refs[i].paddr);

		if (!refs[i].count)
			continue;
		if (!refcnt_node_prepare(s->node, set, refs[i].src_cnodeid))
			return -ENOMEM;
		refcnt_node_reference(s->node, set, refs[i].src_cnodeid,
				      refs[i].count, NULL);
		if (!(i % 1024))
			cond_resched();
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
	struct rcb_inject in;
	struct rcb_ref *refs;
	long err = -ENOMEM;
	u32 i;

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
	err = refcnt_inject_check(refs, slots, in.nr_refs) ?:
	      refcnt_inject_refs(refs, slots, in.nr_refs);
	if (err || !(in.flags & RCB_INJECT_SYNC))
		goto out;
	for (i = 0; i < in.nr_refs; i++)
		if (i == 0 || slots[i]->node != slots[i - 1]->node)
			refcnt_node_sync(slots[i]->node);
out:
	kvfree(slots);
	kvfree(refs);
	return err;
}
