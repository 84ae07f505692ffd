// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the sampled page-fault feed.
 *
 * Software perf events per CPU count the user page faults the kernel
 * accounts as minor or major (PERF_COUNT_SW_PAGE_FAULTS_MIN and _MAJ, the
 * faults getrusage() counts) and overflow every fault_period-th one. Those
 * events fire at the end of handle_mm_fault(), with the page mapped, so
 * the overflow handler itself looks the page up and delivers fault_period
 * references from the faulting CPU's node to it (NUMA hinting faults,
 * migrations and THP count where the page really is). Nothing is queued
 * or allocated per sample.
 *
 * For a counting session a sample has the faulting address and the
 * faulting instruction (the user registers of the fault); not whether it
 * was a load or a store: the software event carries no fault flags, and
 * x86 hands the error code to no hook a module may use.
 */
#include <linux/ptrace.h>
#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <linux/perf_event.h>
#include <linux/sched.h>

#include "refcnt.h"
#include "feed.h"

/*
 * The faults getrusage() counts, accounted once handled (never failed or
 * retried ones): one event per kind, each overflowing every Nth fault.
 */
static const u64 refcnt_fault_configs[REFCNT_FAULT_EVENTS] = {
	PERF_COUNT_SW_PAGE_FAULTS_MIN,
	PERF_COUNT_SW_PAGE_FAULTS_MAJ,
};

/* Minor (0) or major (1) faults, on a CPU or of a task: any machine. */
static int refcnt_fault_attr(struct refcnt_feed *feed, void *setup, int cpu,
			     unsigned int k, struct refcnt_feed_event *ev)
{
	struct perf_event_attr *attr = &ev->attr;

	if (k >= REFCNT_FAULT_EVENTS)
		return REFCNT_FEED_NO_EVENT;
	memset(ev, 0, sizeof(*ev));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = refcnt_fault_configs[k];
	attr->exclude_kernel = 1;
	return 0;
}

/*
 * A handled fault: the page is mapped, and we are still in
 * handle_mm_fault(), preemption off, so only lockless lookups. The
 * event's period is the weight.
 */
static enum refcnt_sample_outcome
refcnt_fault_sample(struct refcnt_feed_target *t,
		    struct perf_event *event, struct perf_sample_data *data,
		    struct pt_regs *regs, struct refcnt_outcome *out)
{
	u64 weight = event->attr.sample_period;

	if (!refcnt_ranges_inside(data->addr, t->ranges, t->nr_ranges))
		return REFCNT_SAMPLE_OUTSIDE;
	if (!current->mm || (current->flags & PF_KTHREAD)) {
		if (out)
			*out = (struct refcnt_outcome){ -1,
							min_t(u64, weight, U32_MAX) };
		return REFCNT_SAMPLE_UNRESOLVED;
	}
	if (!refcnt_feed_user(data->addr, refcnt_this_cnode(), weight, out))
		return REFCNT_SAMPLE_UNRESOLVED;
	return REFCNT_SAMPLE_COUNTED;
}

/* The faulting address and instruction; loads and stores are not told. */
static void refcnt_fault_describe(const struct refcnt_feed_target *t,
				  struct perf_event *event,
				  struct perf_sample_data *data,
				  struct pt_regs *regs, struct refcnt_sample *s)
{
	s->vaddr = data->addr;
	s->ip = regs && user_mode(regs) ? instruction_pointer(regs) : 0;
	s->weight = min_t(u64, event->attr.sample_period, U32_MAX);
	s->kind = 0;
}

static const struct refcnt_feed_ops refcnt_fault_ops = {
	.attr = refcnt_fault_attr,
	.sample = refcnt_fault_sample,
	.describe = refcnt_fault_describe,
};

/* The sampled page-fault feed; main.c registers it. */
struct refcnt_feed refcnt_fault_feed = {
	.name = "fault",
	.ops = &refcnt_fault_ops,
	.caps = RCB_FEED_DATA_ADDR | RCB_FEED_INSTR_ADDR |
		RCB_FEED_SESSION,
	.nr_events = REFCNT_FAULT_EVENTS,
};

module_param_cb(fault_period, &refcnt_feed_period_ops, &refcnt_fault_feed,
		0644);
MODULE_PARM_DESC(fault_period,
		 "Page-fault feed: deliver every Nth user page fault, weighted N (default 0: off)");
