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
 */
#include <linux/kernel.h>
#include <linux/perf_event.h>
#include <linux/sched.h>

#include "feed.h"

/*
 * The faults getrusage() counts, accounted once handled (never failed or
 * retried ones): one event per kind, each overflowing every Nth fault.
 */
static const u64 refcnt_fault_configs[REFCNT_FAULT_EVENTS] = {
	PERF_COUNT_SW_PAGE_FAULTS_MIN,
	PERF_COUNT_SW_PAGE_FAULTS_MAJ,
};

/**
 * refcnt_fault_attr() - the attributes of one of a CPU's fault events
 * @attr:	filled in, sample period aside
 * @k:		which event: minor (0) or major (1) faults, below
 *		REFCNT_FAULT_EVENTS
 *
 * Return: 0.
 */
int refcnt_fault_attr(struct perf_event_attr *attr, unsigned int k)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = refcnt_fault_configs[k];
	attr->exclude_kernel = 1;
	return 0;
}

/**
 * refcnt_fault_sample() - deliver the sample of a handled fault
 * @event:	the fault event that overflowed: its period is the weight
 * @data:	its sample: addr is the faulting address
 *
 * The page is mapped, and we are still in handle_mm_fault(), preemption
 * off, so only lockless lookups. The machine-wide events and those of a
 * counted process (count.c) both end here.
 *
 * Return: true if a counter counted it.
 */
bool refcnt_fault_sample(struct perf_event *event,
			 struct perf_sample_data *data)
{
	this_cpu_inc(refcnt_fault_feed.stats->samples);
	if (!current->mm || (current->flags & PF_KTHREAD)) {
		this_cpu_inc(refcnt_fault_feed.stats->unresolved);
		return false;
	}
	return refcnt_feed_user(&refcnt_fault_feed, data->addr,
				refcnt_feed_cnode(), event->attr.sample_period);
}

/**
 * refcnt_fault_overflow() - a minor or major fault has been handled
 * @event:	the fault event that overflowed
 * @data:	its sample
 * @regs:	unused
 */
void refcnt_fault_overflow(struct perf_event *event,
			   struct perf_sample_data *data, struct pt_regs *regs)
{
	refcnt_fault_sample(event, data);
}
