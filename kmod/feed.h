/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt: what the feeds share. feed.c keeps the registry (each feed's
 * period parameter, perf events and statistics); each feed's own code is
 * in its file: feed_fault.c, feed_pebs.c (x86 only), feed_inject.c,
 * feed_hub.c (a PCI driver; its registry entry is refcnt_hub_init()).
 */
#ifndef _REFCNT_FEED_H
#define _REFCNT_FEED_H

#include <linux/compiler.h>
#include <linux/cpumask.h>
#include <linux/errno.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/types.h>

/**
 * struct refcnt_feed_stats - what a feed did with its samples, in samples
 * @samples:	samples taken
 * @delivered:	samples that reached a counter
 * @unresolved:	samples whose page could not be found or is counted by
 *		no node
 */
struct refcnt_feed_stats {
	u64 samples;
	u64 delivered;
	u64 unresolved;
};

/**
 * struct refcnt_feed - one feed: how to make its events, and their state
 * @name:	"fault" or "pebs"
 * @period:	events per delivered sample while on, 0 when off
 * @nr_events:	perf events per CPU
 * @attr:	fills in the attributes of event @k (0..@nr_events-1) of a
 *		CPU, sample period aside; -EOPNOTSUPP when the machine has
 *		no such event
 * @overflow:	the events' overflow handler
 * @events:	@nr_events perf events per CPU while on, CPU-major; a CPU
 *		coming online gets its events, one going offline loses them
 * @cpus:	the CPUs that have their events: the online ones while on
 * @stats:	its statistics, per CPU: the fault and NMI paths only add to
 *		their own CPU's (one instruction on x86, NMI-safe)
 */
struct refcnt_feed {
	const char *name;
	unsigned int period;
	unsigned int nr_events;
	int (*attr)(struct perf_event_attr *attr, unsigned int k);
	perf_overflow_handler_t overflow;
	struct perf_event **events;
	cpumask_t cpus;
	struct refcnt_feed_stats __percpu *stats;
};

extern struct refcnt_feed refcnt_fault_feed;
extern struct refcnt_feed refcnt_pebs_feed;

/* feed.c */
unsigned int refcnt_feed_cnode(void);
bool refcnt_feed_user(struct refcnt_feed *feed, u64 addr, unsigned int cnode,
		      u64 weight);

/* feed_fault.c: minor and major faults, one event each per CPU */
#define REFCNT_FAULT_EVENTS	2
int refcnt_fault_attr(struct perf_event_attr *attr, unsigned int k);
bool refcnt_fault_sample(struct perf_event *event,
			 struct perf_sample_data *data);
void refcnt_fault_overflow(struct perf_event *event,
			   struct perf_sample_data *data, struct pt_regs *regs);

/*
 * feed_pebs.c, built on x86 only: the PMU events it knows are x86's.
 * Elsewhere the feed cannot start and RCB_FEED_SAMPLES is not supported.
 */
#ifdef CONFIG_X86
int refcnt_pebs_attr(struct perf_event_attr *attr, unsigned int k);
void refcnt_pebs_overflow(struct perf_event *event,
			  struct perf_sample_data *data, struct pt_regs *regs);
bool refcnt_pebs_sample(struct perf_sample_data *data, unsigned int cnode);
long refcnt_feed_samples(void __user *argp);
#else
static inline int refcnt_pebs_attr(struct perf_event_attr *attr,
				   unsigned int k)
{
	return -EOPNOTSUPP;
}

static inline void refcnt_pebs_overflow(struct perf_event *event,
					struct perf_sample_data *data,
					struct pt_regs *regs)
{
}

static inline bool refcnt_pebs_sample(struct perf_sample_data *data,
				      unsigned int cnode)
{
	return false;
}

static inline long refcnt_feed_samples(void __user *argp)
{
	return -EOPNOTSUPP;
}
#endif

/* feed_inject.c */
long refcnt_inject(void __user *argp);

/* count.c: the feeds of one counted process (RCB_COUNT_START) */
long refcnt_session_start(void __user *argp);
void refcnt_session_exit(void);
/* feed_hub.c: the emulator's memory-side reference device (hub.h) */
struct kobject;
#ifdef CONFIG_X86
int refcnt_hub_init(struct kobject *kobj);
void refcnt_hub_exit(struct kobject *kobj);
#else
static inline int refcnt_hub_init(struct kobject *kobj)
{
	return 0;
}

static inline void refcnt_hub_exit(struct kobject *kobj)
{
}
#endif

#endif /* _REFCNT_FEED_H */
