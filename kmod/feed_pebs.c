// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the PEBS/IBS feed, precise memory samples with data addresses.
 *
 * One precise load-sampling event per CPU (pmu_x86.c says which, for the
 * CPU's vendor); its overflow handler runs in NMI and delivers each sample
 * through refcnt_pmu_sample(), with the sampling period as the weight.
 * Feed modules that emulate a PMU deliver through the same function
 * (refcnt_feed_pmu_sample()), so machines without a PMU test it too.
 */
#include <linux/errno.h>
#include <linux/moduleparam.h>
#include <linux/perf_event.h>

#include "refcnt.h"
#include "feed.h"

static int refcnt_pebs_attr(struct refcnt_feed *feed, int cpu,
			    unsigned int k, struct perf_event_attr *attr)
{
	return refcnt_pmu_attr(cpu, k, attr);
}

/* In NMI, on the CPU that took the sample. */
static bool refcnt_pebs_sample(struct refcnt_feed *feed,
			       struct perf_event *event,
			       struct perf_sample_data *data,
			       struct pt_regs *regs, struct refcnt_outcome *out)
{
	return refcnt_pmu_sample(data, regs, refcnt_this_cnode(), out);
}

/* The sampled instruction and data; its events sample loads. */
static void refcnt_pebs_describe(struct refcnt_feed *feed,
				 struct perf_event *event,
				 struct perf_sample_data *data,
				 struct pt_regs *regs, struct refcnt_sample *s)
{
	refcnt_pmu_describe(data, regs, s);
	if (!s->kind && (feed->caps & RCB_FEED_LOADS))
		s->kind = REFCNT_SAMPLE_LOAD;
}

/* perf says "no such PMU" several ways; a guest has none. */
static int refcnt_pebs_start_error(struct refcnt_feed *feed, int err)
{
	if (err == -ENOENT || err == -ENODEV || err == -EINVAL ||
	    err == -EOPNOTSUPP)
		return -EOPNOTSUPP;
	return err;
}

static const struct refcnt_feed_ops refcnt_pebs_ops = {
	.attr = refcnt_pebs_attr,
	.sample = refcnt_pebs_sample,
	.describe = refcnt_pebs_describe,
	.start_error = refcnt_pebs_start_error,
};

/* The precise memory-sampling feed; main.c registers it. */
struct refcnt_feed refcnt_pebs_feed = {
	.name = "pebs",
	.ops = &refcnt_pebs_ops,
	/* and RCB_FEED_LOADS where they sample loads only: main.c */
	.caps = RCB_FEED_DATA_ADDR | RCB_FEED_INSTR_ADDR,
	.nr_events = 1,
	.unsupported = "no precise memory-sampling PMU (PEBS/IBS) on this machine",
};

module_param_cb(pebs_period, &refcnt_feed_period_ops, &refcnt_pebs_feed,
		0644);
MODULE_PARM_DESC(pebs_period,
		 "PEBS/IBS feed: one precise load sample every N loads, weighted N (default 0: off)");
