// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: what a counting session counts: its samples filtered by data
 * and instruction range, and its totals (RCB_COUNT_READ).
 *
 * A sample counts when its data address lies in one of the data ranges
 * (or there are none) and its instruction in one of the instruction
 * ranges (or there are none). It adds to the session's totals, and to
 * those of every range that holds it: references (its weight), loads or
 * stores (when the feed tells), local, remote or lost (what the counters
 * made of it), and the references by accessing node. The totals are per
 * CPU, added to with one instruction each (NMI-safe on x86) and summed
 * when read.
 */
#include <linux/bitops.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "refcnt.h"
#include "session.h"

/* Entries of the totals: the session's, then each range's. */
static unsigned int refcnt_session_entries(const struct refcnt_session *s)
{
	return 1 + s->nr_data + s->nr_instr;
}

/**
 * refcnt_session_totals_alloc() - the session's per-CPU totals, zeroed
 * @s:		the session, its ranges set
 *
 * Return: 0 or -ENOMEM.
 */
int refcnt_session_totals_alloc(struct refcnt_session *s)
{
	s->words = REFCNT_T_NODES + refcnt_topo.counters_per_set;
	/* Charged to the caller: it is its memory on every CPU. */
	s->totals = __alloc_percpu_gfp(refcnt_session_entries(s) * s->words *
				       sizeof(u64), sizeof(u64),
				       GFP_KERNEL_ACCOUNT);
	return s->totals ? 0 : -ENOMEM;
}

void refcnt_session_totals_free(struct refcnt_session *s)
{
	free_percpu(s->totals);
	s->totals = NULL;
}

/* The ranges of @r holding @addr, as a mask (at most 64 of them). */
static u64 refcnt_ranges_holding(const struct rcb_count_range *r,
				 unsigned int n, u64 addr)
{
	u64 mask = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		if (addr - r[i].start < r[i].len)
			mask |= BIT_ULL(i);
	return mask;
}

/**
 * refcnt_session_match() - whether a sample passes the session's ranges
 * @s:		the session
 * @x:		the sample
 * @data:	set to the data ranges holding it
 * @instr:	set to the instruction ranges holding it
 *
 * Any context, NMI included.
 *
 * Return: true if it counts.
 */
bool refcnt_session_match(const struct refcnt_session *s,
			  const struct refcnt_sample *x, u64 *data,
			  u64 *instr)
{
	*data = refcnt_ranges_holding(s->ranges, s->nr_data, x->vaddr);
	*instr = refcnt_ranges_holding(s->ranges + s->nr_data, s->nr_instr,
				       x->ip);
	return (!s->nr_data || *data) && (!s->nr_instr || *instr);
}

/* Add a sample to entry @e of the totals, on this CPU. */
static void refcnt_session_add(struct refcnt_session *s, unsigned int e,
			       const struct refcnt_sample *x, u32 lost,
			       int home)
{
	u64 __percpu *t = s->totals + (size_t)e * s->words;
	u32 counted = x->weight - lost;

	this_cpu_add(t[REFCNT_T_REFERENCES], x->weight);
	this_cpu_inc(t[REFCNT_T_SAMPLES]);
	if (x->kind == REFCNT_SAMPLE_LOAD)
		this_cpu_add(t[REFCNT_T_LOADS], x->weight);
	else if (x->kind == REFCNT_SAMPLE_STORE)
		this_cpu_add(t[REFCNT_T_STORES], x->weight);
	if (lost)
		this_cpu_add(t[REFCNT_T_LOST], lost);
	if (counted)
		this_cpu_add(t[home == x->src_cnode ? REFCNT_T_LOCAL :
			       REFCNT_T_REMOTE], counted);
	if (x->src_cnode < refcnt_topo.nr_cnodes)
		this_cpu_add(t[REFCNT_T_NODES + (x->src_cnode >>
						  refcnt_topo.counter_shift)],
			     x->weight);
}

/**
 * refcnt_session_account() - count a sample that passed the ranges
 * @s:		the session
 * @x:		the sample
 * @data:	the data ranges holding it (refcnt_session_match())
 * @instr:	the instruction ranges holding it
 * @counted:	whether a counter counted it
 * @out:	what became of it: its page's home cnodeid and the
 *		references lost (all of them when not counted)
 *
 * Any context, NMI included.
 */
void refcnt_session_account(struct refcnt_session *s,
			    const struct refcnt_sample *x, u64 data, u64 instr,
			    bool counted, const struct refcnt_outcome *out)
{
	u32 lost = counted ? min(out->lost, x->weight) : x->weight;
	int home = counted ? out->home_cnode : -1;
	unsigned int i;

	atomic64_inc(counted ? &s->delivered : &s->unresolved);
	refcnt_session_add(s, 0, x, lost, home);
	for (i = 0; i < s->nr_data; i++)
		if (data & BIT_ULL(i))
			refcnt_session_add(s, 1 + i, x, lost, home);
	for (i = 0; i < s->nr_instr; i++)
		if (instr & BIT_ULL(i))
			refcnt_session_add(s, 1 + s->nr_data + i, x, lost,
					   home);
}

/*
 * Entry @e summed over the CPUs into @t, in the layout of the uapi:
 * straight into @t, which the caller keeps off the stack (600 bytes).
 */
static void refcnt_session_sum(const struct refcnt_session *s,
			       unsigned int e, struct rcb_count_totals *t)
{
	unsigned int c, nodes = s->words - REFCNT_T_NODES;
	int cpu;

	memset(t, 0, sizeof(*t));
	for_each_possible_cpu(cpu) {
		const u64 *p = per_cpu_ptr(s->totals, cpu) +
			       (size_t)e * s->words;

		t->references += READ_ONCE(p[REFCNT_T_REFERENCES]);
		t->loads += READ_ONCE(p[REFCNT_T_LOADS]);
		t->stores += READ_ONCE(p[REFCNT_T_STORES]);
		t->local += READ_ONCE(p[REFCNT_T_LOCAL]);
		t->remote += READ_ONCE(p[REFCNT_T_REMOTE]);
		t->lost += READ_ONCE(p[REFCNT_T_LOST]);
		t->samples += READ_ONCE(p[REFCNT_T_SAMPLES]);
		for (c = 0; c < nodes; c++)
			t->nodes[c] += READ_ONCE(p[REFCNT_T_NODES + c]);
	}
}

/* The first @n entries of the totals to @ut, through @t. */
static int refcnt_session_put_totals(struct refcnt_session *s,
				     struct rcb_count_totals __user *ut,
				     unsigned int n,
				     struct rcb_count_totals *t)
{
	unsigned int e;

	for (e = 0; e < n; e++) {
		refcnt_session_sum(s, e, t);
		if (copy_to_user(&ut[e], t, sizeof(*t)))
			return -EFAULT;
	}
	return 0;
}

/**
 * refcnt_session_read() - RCB_COUNT_READ: the session's totals, per range
 * @s:		the session
 * @argp:	user pointer to struct rcb_count_read
 *
 * Device feeds deliver what they have first, so that the totals hold every
 * reference made before the call.
 *
 * Return: 0 or a negative errno.
 */
long refcnt_session_read(struct refcnt_session *s, void __user *argp)
{
	struct rcb_count_totals *t;
	struct rcb_count_read r;
	int err;

	if (copy_from_user(&r, argp, sizeof(r)))
		return -EFAULT;
	if (r.flags || r.reserved[0] || r.reserved[1])
		return -EINVAL;
	t = kmalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	refcnt_session_sync(s);
	err = refcnt_session_put_totals(s, u64_to_user_ptr(r.totals),
					min(r.nr_totals,
					    refcnt_session_entries(s)), t);
	kfree(t);
	if (err)
		return err;
	r.nr_totals = refcnt_session_entries(s);
	return copy_to_user(argp, &r, sizeof(r)) ? -EFAULT : 0;
}
