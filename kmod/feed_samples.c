// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: RCB_FEED_SAMPLES, synthetic precise samples through the PMU
 * feed's own sample path, refcnt_pmu_sample(), so that machines without
 * a PMU test it; RCB_FEED_SAMPLES_NMI runs it as in NMI (in_nmi() true,
 * interrupts off), so the reference path's no-allocation branch is
 * tested too. A test hook: it leaves refcnt.ko for a test module.
 */
#include <linux/hardirq.h>
#include <linux/irqflags.h>
#include <linux/perf_event.h>
#include <linux/preempt.h>
#include <linux/ptrace.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <uapi/linux/refcnt.h>

#include "refcnt.h"
#include "feed.h"

/* Check every sample before any counts: a bad one delivers nothing. */
static int refcnt_samples_check(const struct rcb_sample *s, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (s[i].src_cnodeid >= refcnt_topo.nr_cnodes)
			return -EINVAL;
	return 0;
}

/* A user-mode load, as a PEBS record of all loads would give it. */
static bool refcnt_feed_sample_run(const struct rcb_sample *s)
{
	static const struct refcnt_pmu_stream loads = { REFCNT_PMU_LOADS, 0 };
	struct perf_sample_data data;
	enum refcnt_pmu_outcome o;
	struct pt_regs regs;

	perf_sample_data_init(&data, s->vaddr, s->weight);
	if (s->paddr) {
		data.phys_addr = s->paddr;
		data.sample_flags |= PERF_SAMPLE_PHYS_ADDR;
	}
	refcnt_pmu_regs(&regs, 0, true);
	o = refcnt_pmu_sample(&loads, NULL, 0, &data, &regs, s->src_cnodeid,
			      s->weight);
	refcnt_pmu_account(refcnt_pebs_feed.stats, o);
	return o == REFCNT_PMU_COUNTED;
}

/*
 * Deliver one synthetic sample. With @nmi, as the overflow handler runs:
 * interrupts off and the NMI count raised, as nmi_enter() does (its RCU,
 * lockdep and tracing parts serve an NMI's entry from any state, which
 * this is not), so that in_nmi() is true and the reference path must not
 * allocate. The irq_work it may raise runs when interrupts come back on.
 */
static bool refcnt_feed_sample(const struct rcb_sample *s, bool nmi)
{
	unsigned long flags;
	bool counted;

	if (!nmi)
		return refcnt_feed_sample_run(s);
	local_irq_save(flags);
	__preempt_count_add(NMI_OFFSET + HARDIRQ_OFFSET);
	counted = refcnt_feed_sample_run(s);
	__preempt_count_sub(NMI_OFFSET + HARDIRQ_OFFSET);
	local_irq_restore(flags);
	return counted;
}

/**
 * refcnt_feed_samples() - RCB_FEED_SAMPLES: synthetic PEBS/IBS samples
 * @argp:	user pointer to struct rcb_feed_samples
 *
 * The samples go through refcnt_pmu_sample(), the NMI handler's own
 * code, and count in the pebs feed's statistics. Checked whole first,
 * like RCB_INJECT.
 *
 * Return: 0 or a negative errno (see uapi/linux/refcnt.h).
 */
long refcnt_feed_samples(void __user *argp)
{
	struct rcb_feed_samples f;
	struct rcb_sample *s;
	long err;
	u32 i;

	if (copy_from_user(&f, argp, sizeof(f)))
		return -EFAULT;
	if (f.flags & ~RCB_FEED_SAMPLES_FLAGS || f.pad || !f.nr_samples ||
	    f.nr_samples > RCB_INJECT_MAX)
		return -EINVAL;
	s = kvmalloc_array(f.nr_samples, sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	err = -EFAULT;
	if (copy_from_user(s, u64_to_user_ptr(f.samples),
			   array_size(f.nr_samples, sizeof(*s))))
		goto out;
	err = refcnt_samples_check(s, f.nr_samples);
	if (err)
		goto out;
	f.delivered = 0;
	for (i = 0; i < f.nr_samples; i++)
		f.delivered += refcnt_feed_sample(&s[i],
						  f.flags & RCB_FEED_SAMPLES_NMI);
	if (copy_to_user(argp, &f, sizeof(f)))
		err = -EFAULT;
out:
	kvfree(s);
	return err;
}
