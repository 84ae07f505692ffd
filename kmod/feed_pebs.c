// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the PEBS/IBS feed, precise memory samples with data addresses.
 *
 * The overflow handler runs in NMI and delivers each sample through
 * refcnt_reference() with the sampling period as the weight.
 * refcnt_pebs_sample() is the whole sample-processing half; the overflow
 * handler and RCB_FEED_SAMPLES both call it, so machines without a PMU
 * still test it, and RCB_FEED_SAMPLES_NMI runs it as in NMI (in_nmi()
 * true, interrupts off), so the reference path's no-allocation branch is
 * tested too. Only the PMU programming and a real NMI's entry are not
 * tested there.
 */
#include <linux/hardirq.h>
#include <linux/irqflags.h>
#include <linux/perf_event.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <asm/processor.h>
#include <uapi/linux/refcnt.h>

#include "refcnt.h"
#include "feed.h"

/**
 * refcnt_pebs_sample() - deliver one precise memory sample
 * @data:	the sample: addr, phys_addr if PERF_SAMPLE_PHYS_ADDR is in
 *		sample_flags, period
 * @cnode:	cnodeid of the CPU that took it
 *
 * NMI-safe: without a physical address the page is looked up with
 * get_user_page_fast_only(), as perf_virt_to_phys() does in NMI.
 *
 * Return: true if a counter counted it.
 */
bool refcnt_pebs_sample(struct perf_sample_data *data, unsigned int cnode)
{
	struct refcnt_ctx ctx = { .vaddr = data->addr };
	u64 weight = min_t(u64, data->period, U32_MAX);

	this_cpu_inc(refcnt_pebs_feed.stats->samples);
	if (!(data->sample_flags & PERF_SAMPLE_PHYS_ADDR)) {
		if (current->mm)
			return refcnt_feed_user(&refcnt_pebs_feed, data->addr,
						cnode, weight);
		this_cpu_inc(refcnt_pebs_feed.stats->unresolved);
		return false;
	}
	if (current->mm)
		ctx.pid = task_tgid_nr(current);
	if (data->phys_addr &&
	    refcnt_reference(data->phys_addr, cnode, weight, &ctx)) {
		this_cpu_inc(refcnt_pebs_feed.stats->delivered);
		return true;
	}
	this_cpu_inc(refcnt_pebs_feed.stats->unresolved);
	return false;
}

/**
 * refcnt_pebs_overflow() - the PMU's overflow handler, in NMI
 * @event:	the precise event of this CPU
 * @data:	the sample
 * @regs:	unused
 */
void refcnt_pebs_overflow(struct perf_event *event,
			  struct perf_sample_data *data, struct pt_regs *regs)
{
	refcnt_pebs_sample(data, refcnt_feed_cnode());
}

/**
 * refcnt_pebs_attr() - the precise load-sampling event of this CPU vendor
 * @attr:	filled in, sample period aside
 * @k:		the event of the CPU; the feed has one
 *
 * Return: 0, or -EOPNOTSUPP when we know no such event for the vendor.
 */
int refcnt_pebs_attr(struct perf_event_attr *attr, unsigned int k)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->precise_ip = 2;
	attr->exclude_kernel = 1;
	attr->sample_type = PERF_SAMPLE_ADDR | PERF_SAMPLE_PHYS_ADDR;
	switch (boot_cpu_data.x86_vendor) {
	case X86_VENDOR_INTEL:
		/* MEM_INST_RETIRED.ALL_LOADS: PEBS load samples. */
		attr->type = PERF_TYPE_RAW;
		attr->config = 0x81d0;
		return 0;
	case X86_VENDOR_AMD:
		/* Precise cycles are forwarded to IBS op sampling. */
		attr->type = PERF_TYPE_HARDWARE;
		attr->config = PERF_COUNT_HW_CPU_CYCLES;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

/* Check every sample before any counts: a bad one delivers nothing. */
static int refcnt_samples_check(const struct rcb_sample *s, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (s[i].src_cnodeid >= refcnt_topo.nr_cnodes)
			return -EINVAL;
	return 0;
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
	struct perf_sample_data data;
	unsigned long flags;
	bool counted;

	perf_sample_data_init(&data, s->vaddr, s->weight);
	if (s->paddr) {
		data.phys_addr = s->paddr;
		data.sample_flags |= PERF_SAMPLE_PHYS_ADDR;
	}
	if (!nmi)
		return refcnt_pebs_sample(&data, s->src_cnodeid);
	local_irq_save(flags);
	__preempt_count_add(NMI_OFFSET + HARDIRQ_OFFSET);
	counted = refcnt_pebs_sample(&data, s->src_cnodeid);
	__preempt_count_sub(NMI_OFFSET + HARDIRQ_OFFSET);
	local_irq_restore(flags);
	return counted;
}

/**
 * refcnt_feed_samples() - RCB_FEED_SAMPLES: synthetic PEBS/IBS samples
 * @argp:	user pointer to struct rcb_feed_samples
 *
 * The samples go through refcnt_pebs_sample(), the NMI handler's own
 * code. Checked whole first, like RCB_INJECT.
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
