/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt: what the feeds share. feed.c keeps the registry (each feed's
 * period parameter, perf events and statistics); each feed's own code is
 * in its file: feed_fault.c, feed_pmu.c (x86 only; the PMUs themselves in
 * pmu*.c), feed_inject.c, feed_samples.c (x86 only), feed_hub.c (a PCI
 * driver; its registry entry is refcnt_hub_init()).
 */
#ifndef _REFCNT_FEED_H
#define _REFCNT_FEED_H

#include <linux/compiler.h>
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/errno.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/types.h>

#include "pmu.h"

/**
 * struct refcnt_feed_stats - what a feed did with its samples, in samples
 * @samples:	samples taken
 * @delivered:	samples that reached a counter
 * @unresolved:	samples whose page could not be found or is counted by
 *		no node
 * @kernel:	PMU feed: samples taken in kernel mode, not counted
 * @noaddr:	PMU feed: samples of ops without a data address (IBS)
 * @cached:	PMU feed, memory-side mode: samples a cache satisfied
 */
struct refcnt_feed_stats {
	u64 samples;
	u64 delivered;
	u64 unresolved;
	u64 kernel;
	u64 noaddr;
	u64 cached;
};

/* cpu_start(): this CPU's PMU has no such events; the feed goes on. */
#define REFCNT_FEED_SKIP	1

/**
 * struct refcnt_feed - one feed: how to make its events, and their state
 * @name:	"fault" or "pebs"
 * @period:	events per delivered sample while on, 0 when off
 * @nr_events:	perf events per CPU, at most
 * @attr:	fills in the attributes of event @k (0..@nr_events-1) of a
 *		CPU, sample period aside; -EOPNOTSUPP when the machine has
 *		no such event; unused with @cpu_start
 * @overflow:	the events' overflow handler; unused with @cpu_start
 * @prepare:	optional: check what was asked before any event is made;
 *		may round *@period to what the PMU takes
 * @cpu_start:	optional: make one online CPU's events into its slots of
 *		@events, instead of @attr and @overflow; 0, REFCNT_FEED_SKIP
 *		or a negative errno
 * @finish:	optional: after the events are released
 * @map_err:	optional: the errno a failed start returns, and the reason
 *		the kernel log gives
 * @events:	@nr_events perf events per CPU while on, CPU-major; a CPU
 *		coming online gets its events, one going offline loses them
 * @cpus:	the CPUs that have their events: the online ones while on
 * @skipped:	online CPUs left out because their PMU has no such events
 * @stats:	its statistics, per CPU: the fault and NMI paths only add to
 *		their own CPU's (one instruction on x86, NMI-safe)
 */
struct refcnt_feed {
	const char *name;
	unsigned int period;
	unsigned int nr_events;
	int (*attr)(struct perf_event_attr *attr, unsigned int k);
	perf_overflow_handler_t overflow;
	int (*prepare)(struct refcnt_feed *feed, unsigned int *period);
	int (*cpu_start)(struct refcnt_feed *feed, unsigned int cpu,
			 unsigned int period);
	void (*finish)(struct refcnt_feed *feed);
	int (*map_err)(int err, const char **why);
	struct perf_event **events;
	cpumask_t cpus;
	cpumask_t skipped;
	struct refcnt_feed_stats __percpu *stats;
};

extern struct refcnt_feed refcnt_fault_feed;
extern struct refcnt_feed refcnt_pebs_feed;

/* feed.c */
unsigned int refcnt_feed_cnode(void);
bool refcnt_feed_user_ref(u64 addr, unsigned int cnode, u64 weight);
bool refcnt_feed_user(struct refcnt_feed *feed, u64 addr, unsigned int cnode,
		      u64 weight);
int refcnt_feed_restart(struct refcnt_feed *feed);

/* feed_fault.c: minor and major faults, one event each per CPU */
#define REFCNT_FAULT_EVENTS	2
int refcnt_fault_attr(struct perf_event_attr *attr, unsigned int k);
bool refcnt_fault_sample(struct perf_event *event,
			 struct perf_sample_data *data);
void refcnt_fault_overflow(struct perf_event *event,
			   struct perf_sample_data *data, struct pt_regs *regs);

/*
 * feed_pmu.c and feed_samples.c, built on x86 only: the PMUs they know
 * are x86's. Elsewhere the PEBS/IBS feed cannot start, sessions cannot
 * use it, and RCB_FEED_SAMPLES is not supported.
 */
struct pt_regs;
struct task_struct;
/* Most distinct core PMUs refcnt plans for (hybrid parts have two). */
#define REFCNT_PMU_MAX_PMUS	4
#ifdef CONFIG_X86
int refcnt_pmu_prepare(struct refcnt_feed *feed, unsigned int *period);
int refcnt_pmu_cpu_start(struct refcnt_feed *feed, unsigned int cpu,
			 unsigned int period);
void refcnt_pmu_finish(struct refcnt_feed *feed);
int refcnt_pmu_map_err(int err, const char **why);
int refcnt_pmu_start_err(int err, const char **why);
enum refcnt_pmu_outcome
refcnt_pmu_sample(const struct refcnt_pmu_stream *s,
		  const struct rcb_count_range *ranges, unsigned int nr_ranges,
		  struct perf_sample_data *data, struct pt_regs *regs,
		  unsigned int cnode, u64 weight);
void refcnt_pmu_regs(struct pt_regs *regs, u64 ip, bool user);
const struct refcnt_pmu_stream *refcnt_pmu_stream(enum refcnt_pmu_op op);
u64 refcnt_pmu_event_weight(struct perf_event *event,
			    struct perf_sample_data *data);
void refcnt_pmu_account(struct refcnt_feed_stats __percpu *stats,
			enum refcnt_pmu_outcome outcome);
int refcnt_pmu_task_plans(u32 period, struct refcnt_pmu_plan *plans,
			  unsigned int max);
struct perf_event *refcnt_pmu_create(const struct refcnt_pmu_event *e,
				     int cpu, struct task_struct *task,
				     bool inherit_thread,
				     perf_overflow_handler_t overflow,
				     void *context);
int refcnt_pmu_claim(bool session);
void refcnt_pmu_unclaim(bool session);
long refcnt_feed_samples(void __user *argp);
#else
static inline int refcnt_pmu_prepare(struct refcnt_feed *feed,
				     unsigned int *period)
{
	return -EOPNOTSUPP;
}

static inline int refcnt_pmu_cpu_start(struct refcnt_feed *feed,
				       unsigned int cpu, unsigned int period)
{
	return -EOPNOTSUPP;
}

static inline void refcnt_pmu_finish(struct refcnt_feed *feed)
{
}

static inline int refcnt_pmu_map_err(int err, const char **why)
{
	if (why)
		*why = "no precise memory-sampling PMU known on this architecture";
	return -EOPNOTSUPP;
}

static inline int refcnt_pmu_start_err(int err, const char **why)
{
	return refcnt_pmu_map_err(err, why);
}

static inline int refcnt_pmu_task_plans(u32 period,
					struct refcnt_pmu_plan *plans,
					unsigned int max)
{
	return -EOPNOTSUPP;
}

static inline struct perf_event *
refcnt_pmu_create(const struct refcnt_pmu_event *e, int cpu,
		  struct task_struct *task, bool inherit_thread,
		  perf_overflow_handler_t overflow, void *context)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static inline u64 refcnt_pmu_event_weight(struct perf_event *event,
					  struct perf_sample_data *data)
{
	return 0;
}

static inline void refcnt_pmu_account(struct refcnt_feed_stats __percpu *stats,
				      enum refcnt_pmu_outcome outcome)
{
}

static inline enum refcnt_pmu_outcome
refcnt_pmu_sample(const struct refcnt_pmu_stream *s,
		  const struct rcb_count_range *ranges, unsigned int nr_ranges,
		  struct perf_sample_data *data, struct pt_regs *regs,
		  unsigned int cnode, u64 weight)
{
	return REFCNT_PMU_UNRESOLVED;
}

static inline int refcnt_pmu_claim(bool session)
{
	return 0;
}

static inline void refcnt_pmu_unclaim(bool session)
{
}

static inline long refcnt_feed_samples(void __user *argp)
{
	return -EOPNOTSUPP;
}
#endif

/* feed_inject.c */
long refcnt_inject(void __user *argp);

/* count.c: the feeds of one counted process (RCB_COUNT_START) */
long refcnt_count_start(void __user *argp);
void refcnt_count_exit(void);
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
