// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: turning the feeds' samples into references, and what of the
 * feed interface (feed.h) is not the registry (feed.c).
 *
 * Everything here may run in NMI: no locks and no sleeping; a page is
 * looked up with get_user_page_fast_only(), as perf_virt_to_phys() does
 * in NMI, and the reference path allocates nothing in NMI (counter.c).
 */
#include <linux/mm.h>
#include <linux/nodemask.h>
#include <linux/perf_event.h>
#include <linux/sched.h>

#include "compat.h"
#include "refcnt.h"
#include "feed.h"

/**
 * refcnt_nid_cnode() - the cnodeid of a Linux node
 * @nid:	node id
 *
 * Any context, NMI included.
 *
 * Return: its cnodeid, or -1 for a node that was not online when refcnt.ko
 * was loaded (it has no counter) or no node at all.
 */
int refcnt_nid_cnode(int nid)
{
	if (nid < 0 || nid >= MAX_NUMNODES)
		return -1;
	return refcnt_topo.nid_to_cnode[nid];
}
EXPORT_SYMBOL_NS_GPL(refcnt_nid_cnode, REFCNT_NS);

/**
 * refcnt_nr_cnodes() - how many cnodeids there are
 *
 * Return: the number of nodes online at load: cnodeids are 0 to this - 1.
 */
unsigned int refcnt_nr_cnodes(void)
{
	return refcnt_topo.nr_cnodes;
}
EXPORT_SYMBOL_NS_GPL(refcnt_nr_cnodes, REFCNT_NS);

/**
 * refcnt_granularity_shift() - log2 of the bytes of a hardware page
 *
 * Context: any; for feeds that add up their references per hardware page
 * before they deliver them.
 *
 * Return: the granularity's shift, fixed while refcnt.ko is loaded.
 */
unsigned int refcnt_granularity_shift(void)
{
	return refcnt_cfg.granularity_shift;
}
EXPORT_SYMBOL_NS_GPL(refcnt_granularity_shift, REFCNT_NS);

/**
 * refcnt_feed_user() - deliver references to a user address of this task
 * @addr:	user address referenced
 * @cnode:	cnodeid the references come from
 * @weight:	references
 * @out:	what became of them, or NULL
 *
 * Return: true if a counter counted them.
 */
bool refcnt_feed_user(u64 addr, unsigned int cnode, u64 weight,
		      struct refcnt_outcome *out)
{
	struct refcnt_ctx ctx = { .pid = task_tgid_nr(current), .vaddr = addr };
	struct page *page;
	bool counted;

	if (!addr || addr >= TASK_SIZE ||
	    !get_user_page_fast_only(addr & PAGE_MASK, 0, &page)) {
		if (out)
			*out = (struct refcnt_outcome){ -1, weight };
		return false;
	}
	counted = refcnt_reference_outcome(PFN_PHYS(page_to_pfn(page)) +
					   (addr & ~PAGE_MASK), cnode,
					   min_t(u64, weight, U32_MAX), &ctx,
					   out);
	put_page(page);
	return counted;
}

/*
 * The fields of a sample its PMU gave: perf_sample_data_init() sets only
 * period and sample_flags (and addr, when given one) at 6.1 and 6.12;
 * the others hold whatever the stack did unless sample_flags says.
 */
static u64 refcnt_sample_addr(const struct perf_sample_data *data)
{
	return data->sample_flags & PERF_SAMPLE_ADDR ? data->addr : 0;
}

static u64 refcnt_sample_phys(const struct perf_sample_data *data)
{
	return data->sample_flags & PERF_SAMPLE_PHYS_ADDR ? data->phys_addr : 0;
}

static u64 refcnt_sample_data_src(const struct perf_sample_data *data)
{
	return data->sample_flags & PERF_SAMPLE_DATA_SRC ?
	       data->data_src.val : 0;
}

/*
 * Whether @regs are the sampled instruction's, not the NMI's: x86's PMU
 * drivers say so in PERF_EFLAGS_EXACT (refcnt_pmu_regs() too, for a
 * record); no other architecture has a PMU refcnt plans for.
 */
static bool refcnt_sample_exact(const struct pt_regs *regs)
{
#ifdef PERF_EFLAGS_EXACT
	return regs->flags & PERF_EFLAGS_EXACT;
#else
	return true;
#endif
}

/* The sample's page, and the references it stands for, to the counters. */
static bool refcnt_pmu_deliver(struct perf_sample_data *data,
			       unsigned int cnode, u64 weight,
			       struct refcnt_outcome *out)
{
	u64 flags = data->sample_flags, phys = refcnt_sample_phys(data);
	struct refcnt_ctx ctx = {};

	weight = min_t(u64, weight, U32_MAX);
	if (out)
		*out = (struct refcnt_outcome){ -1, weight };
	if (phys) {
		/*
		 * Whose: the task the overflow interrupted, unless the feed
		 * says (one that emulates a PMU delivers from a work item).
		 */
		if (flags & PERF_SAMPLE_TID)
			ctx.pid = data->tid_entry.pid;
		else if (current->mm)
			ctx.pid = task_tgid_nr(current);
		ctx.vaddr = refcnt_sample_addr(data);
		return refcnt_reference_outcome(phys, cnode, weight, &ctx, out);
	}
	if (!(flags & PERF_SAMPLE_ADDR) || !current->mm)
		return false;
	return refcnt_feed_user(data->addr, cnode, weight, out);
}

/**
 * refcnt_pmu_sample() - one precise memory sample, from a PMU or a record
 * @s:		its stream: what its event samples, in which mode
 * @ranges:	a counting session's address ranges, or NULL
 * @nr_ranges:	entries of @ranges; 0 counts every address
 * @data:	the sample: addr, phys_addr, data_src and tid_entry as
 *		sample_flags says
 * @regs:	its registers: user_mode() says where it was taken
 * @src_cnode:	cnodeid of the CPU that took it
 * @weight:	the references it stands for (the period, scaled when the
 *		PMU multiplexed the event)
 * @out:	what became of it (the page's home, the references lost),
 *		or NULL
 *
 * The one path of precise samples: the overflow handlers of the PEBS/IBS
 * feed and of counting sessions, and feed modules that emulate a PMU
 * (refcnt_feed_pmu_sample()). It reads only the fields sample_flags
 * says the PMU gave. It drops IBS ops whose registers are the NMI's
 * (no PERF_EFLAGS_EXACT: an invalid RIP), kernel-mode samples, ops
 * without a data address, samples outside @ranges and, in memory-side
 * mode, those a cache satisfied, then delivers @weight references to the
 * sample's page: the physical address when the sample has one, else the
 * data address looked up in the current task's page tables with
 * get_user_page_fast_only(), as perf_virt_to_phys() does in NMI.
 * NMI-safe; allocates nothing but what the reference path may
 * (GFP_ATOMIC, never in NMI).
 *
 * Return: what became of the sample.
 */
enum refcnt_sample_outcome
refcnt_pmu_sample(const struct refcnt_pmu_stream *s,
		  const struct rcb_count_range *ranges, unsigned int nr_ranges,
		  struct perf_sample_data *data, struct pt_regs *regs,
		  unsigned int src_cnode, u64 weight, struct refcnt_outcome *out)
{
	enum refcnt_sample_outcome o;

	o = refcnt_pmu_classify(s, user_mode(regs), refcnt_sample_exact(regs),
				data->sample_flags, refcnt_sample_addr(data),
				refcnt_sample_data_src(data), ranges,
				nr_ranges);
	if (o != REFCNT_SAMPLE_COUNTED)
		return o;
	return refcnt_pmu_deliver(data, src_cnode, weight, out) ?
	       REFCNT_SAMPLE_COUNTED : REFCNT_SAMPLE_UNRESOLVED;
}
EXPORT_SYMBOL_NS_GPL(refcnt_pmu_sample, REFCNT_NS);

/**
 * refcnt_pmu_sample_describe() - what a session filters a PMU sample on
 * @st:		its stream: loads, stores, or ops whose data source tells
 * @data:	the sample: addr, ip and data_src as sample_flags says
 * @regs:	the registers it was taken with, or NULL: without
 *		PERF_SAMPLE_IP their instruction pointer is the sample's (a
 *		PMU's overflow handler gets the sampled instruction there)
 * @s:		filled in: data address, instruction address, and load or
 *		store when the stream or the data source tells
 *
 * Without PERF_SAMPLE_ADDR the data address is 0, not known. An IBS op
 * without PERF_EFLAGS_EXACT has the NMI's registers: no instruction
 * address then either. PEBS at precise_ip 1 is never exact: its IP is
 * the record's, that of the instruction after the load or store.
 * Any context, NMI included.
 */
void refcnt_pmu_sample_describe(const struct refcnt_pmu_stream *st,
				struct perf_sample_data *data,
				struct pt_regs *regs, struct refcnt_sample *s)
{
	u64 flags = data->sample_flags;
	u64 op = flags & PERF_SAMPLE_DATA_SRC ? data->data_src.mem_op : 0;
	bool nmi_regs = regs && st && st->op == REFCNT_PMU_OPS &&
			!refcnt_sample_exact(regs);

	s->vaddr = refcnt_sample_addr(data);
	s->ip = flags & PERF_SAMPLE_IP ? data->ip :
		regs && !nmi_regs ? instruction_pointer(regs) : 0;
	s->weight = min_t(u64, data->period, U32_MAX);
	s->kind = 0;
	if (st && st->op == REFCNT_PMU_LOADS)
		s->kind = REFCNT_SAMPLE_LOAD;
	else if (st && st->op == REFCNT_PMU_STORES)
		s->kind = REFCNT_SAMPLE_STORE;
	else if (op & PERF_MEM_OP_LOAD)
		s->kind = REFCNT_SAMPLE_LOAD;
	else if (op & PERF_MEM_OP_STORE)
		s->kind = REFCNT_SAMPLE_STORE;
}
EXPORT_SYMBOL_NS_GPL(refcnt_pmu_sample_describe, REFCNT_NS);

/**
 * refcnt_feed_account() - count one sample's outcome in a feed's statistics
 * @feed:	the feed
 * @o:		what became of the sample; one outside a session's ranges
 *		is the session's to count, not the feed's
 *
 * Any context, NMI included.
 */
void refcnt_feed_account(struct refcnt_feed *feed,
			 enum refcnt_sample_outcome o)
{
	struct refcnt_feed_stats __percpu *st = feed->stats;

	if (o == REFCNT_SAMPLE_OUTSIDE)
		return;
	this_cpu_inc(st->samples);
	switch (o) {
	case REFCNT_SAMPLE_COUNTED:
		this_cpu_inc(st->delivered);
		break;
	case REFCNT_SAMPLE_KERNEL:
		this_cpu_inc(st->kernel);
		break;
	case REFCNT_SAMPLE_NOADDR:
		this_cpu_inc(st->noaddr);
		break;
	case REFCNT_SAMPLE_CACHED:
		this_cpu_inc(st->cached);
		break;
	case REFCNT_SAMPLE_INEXACT:
		this_cpu_inc(st->inexact);
		break;
	default:
		this_cpu_inc(st->unresolved);
		break;
	}
}

/* @n samples of @feed, counted or not, in its statistics. */
static bool refcnt_feed_count_n(struct refcnt_feed *feed, bool counted, u32 n)
{
	this_cpu_add(feed->stats->samples, n);
	if (counted)
		this_cpu_add(feed->stats->delivered, n);
	else
		this_cpu_add(feed->stats->unresolved, n);
	return counted;
}

/* One sample of @feed, counted or not, in its statistics. */
bool refcnt_feed_count(struct refcnt_feed *feed, bool counted)
{
	return refcnt_feed_count_n(feed, counted, 1);
}

/**
 * refcnt_feed_reference() - a feed delivers references by physical address
 * @feed:	the feed, registered; one sample in its statistics
 * @paddr:	physical address referenced
 * @src_cnode:	cnodeid the references come from
 * @weight:	references the sample stands for
 * @ctx:	pid and virtual address if the feed knows them, or NULL
 *
 * Any context, NMI included.
 *
 * Return: true if a counter counted them.
 */
bool refcnt_feed_reference(struct refcnt_feed *feed, u64 paddr,
			   unsigned int src_cnode, u32 weight,
			   const struct refcnt_ctx *ctx)
{
	return refcnt_feed_count(feed, refcnt_reference(paddr, src_cnode,
							 weight, ctx));
}
EXPORT_SYMBOL_NS_GPL(refcnt_feed_reference, REFCNT_NS);

/**
 * refcnt_feed_references() - a feed delivers several samples of one page
 * @feed:	the feed, registered; @samples samples in its statistics
 * @paddr:	physical address referenced
 * @src_cnode:	cnodeid the references come from
 * @count:	references the samples stand for, in all
 * @samples:	samples added up, all to the hardware page of @paddr
 * @ctx:	pid and virtual address of one of them, or NULL
 *
 * For a feed that collects over time what it delivers in a burst (a
 * device's records): one delivery folds as it crosses the threshold
 * instead of pegging, as the references one by one would have. Any
 * context, NMI included.
 *
 * Return: true if a counter counted them.
 */
bool refcnt_feed_references(struct refcnt_feed *feed, u64 paddr,
			    unsigned int src_cnode, u64 count, u32 samples,
			    const struct refcnt_ctx *ctx)
{
	bool counted = true;

	while (count && counted) {
		u32 n = min_t(u64, count, U32_MAX);

		counted = refcnt_reference(paddr, src_cnode, n, ctx);
		count -= n;
	}
	return refcnt_feed_count_n(feed, counted, samples);
}
EXPORT_SYMBOL_NS_GPL(refcnt_feed_references, REFCNT_NS);

/**
 * refcnt_feed_pmu_sample() - a feed delivers a PMU-shaped sample
 * @feed:	the feed, registered; the sample's outcome in its statistics
 * @s:		its stream (refcnt_pmu_stream() gives the feed's settings)
 * @data:	the sample, as for refcnt_pmu_sample()
 * @regs:	its registers (refcnt_pmu_regs() makes them from a record)
 * @src_cnode:	cnodeid of the CPU that took it
 * @weight:	the references it stands for
 *
 * For feeds that emulate a PMU: the sample goes through
 * refcnt_pmu_sample(), the code a real PMU's overflow handler runs. Such
 * a feed delivers from a context of its own, not the sampled task's: it
 * says whose the sample was in @data->tid_entry.pid with
 * PERF_SAMPLE_TID, as the handler would have known from current.
 *
 * Return: what became of the sample.
 */
enum refcnt_sample_outcome
refcnt_feed_pmu_sample(struct refcnt_feed *feed,
		       const struct refcnt_pmu_stream *s,
		       struct perf_sample_data *data, struct pt_regs *regs,
		       unsigned int src_cnode, u64 weight)
{
	enum refcnt_sample_outcome o;

	o = refcnt_pmu_sample(s, NULL, 0, data, regs, src_cnode, weight,
			      NULL);
	refcnt_feed_account(feed, o);
	return o;
}
EXPORT_SYMBOL_NS_GPL(refcnt_feed_pmu_sample, REFCNT_NS);

/**
 * refcnt_feed_sample() - a sample of one of a feed's perf events
 * @t:		the event's target: its feed, stream, and a session's ranges
 * @event:	the event that overflowed
 * @data:	its sample
 * @regs:	its registers
 * @out:	what became of it, for a session's event; NULL otherwise
 *
 * The machine-wide events (feed_events.c) and those of a counted process
 * (session.c) both end here, in the overflow handler's context; the
 * feed's statistics count the outcome.
 *
 * Return: what became of the sample.
 */
enum refcnt_sample_outcome
refcnt_feed_sample(struct refcnt_feed_target *t, struct perf_event *event,
		   struct perf_sample_data *data, struct pt_regs *regs,
		   struct refcnt_outcome *out)
{
	enum refcnt_sample_outcome o;

	o = t->feed->ops->sample(t, event, data, regs, out);
	refcnt_feed_account(t->feed, o);
	return o;
}
