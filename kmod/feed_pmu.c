// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the PEBS/IBS feed, precise memory samples with data addresses.
 *
 * The PMUs themselves are in pmu_intel.c and pmu_amd.c, as plans of
 * attributes (pmu.h); here the plans become the feed's operations
 * (feed.h): the registry makes their events per online CPU for the
 * machine-wide feed, counting sessions per thread (session.c), and the
 * samples of both go through refcnt_pmu_sample() (sample.c), the one
 * sample path, which a module emulating a PMU uses too.
 *
 * A CPU's core PMU is the one perf itself picks for a cycles event on
 * that CPU (pmu_x86.c; on hybrid parts "cpu_core" or "cpu_atom"). A CPU
 * whose PMU has no such events is left out (pebs_skipped), and a
 * session's threads get one set of events per core PMU, since a task's
 * event counts only on CPUs of its PMU.
 *
 * The machine-wide feed and counting sessions never share the PMU: IBS
 * has one op unit per CPU (a session's task event and the feed's CPU
 * event could not both be scheduled: perf_ibs_add() -ENOSPC, and the CPU
 * event, scheduled first, would starve the session), and PEBS events
 * would multiplex, every sample counting twice. The second gets EBUSY,
 * but for one case: root's machine-wide feed starts while only sessions
 * of callers without CAP_SYS_ADMIN hold the PMU, so that no user can keep
 * the machine's feed off. Those sessions yield: their PMU samples are
 * dropped while the feed runs (refcnt_pmu_yielded(), session.c), and
 * IBS's CPU events, scheduled first, starve their task events.
 *
 * Physical addresses: perf fills PERF_SAMPLE_PHYS_ADDR in
 * perf_prepare_sample(), on the output path, which an overflow handler of
 * our own replaces; only IBS reads one from the hardware (IbsDcPhysAd),
 * in its NMI handler. So a PEBS sample, and an IBS sample without a
 * valid physical address, is looked up in the sampled task's page tables.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/errno.h>
#include <linux/irq_work.h>
#include <linux/jiffies.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/perf_event.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "compat.h"
#include "refcnt.h"
#include "feed.h"

/* Most distinct core PMUs refcnt plans for (hybrid parts have two). */
#define REFCNT_PMU_MAX_PMUS	4
static_assert(REFCNT_PMU_MAX_PMUS * REFCNT_PMU_MAX_EVENTS <=
	      REFCNT_FEED_TASK_EVENTS);

/* refcnt.pebs_ldlat: Intel's load-latency threshold, 0 for every load. */
static unsigned int pebs_ldlat;
/* refcnt.pebs_memside: count only references beyond the caches. */
static bool pebs_memside;
/*
 * Why the machine-wide feed's last start failed, for its one line in the
 * log; taken (and cleared) by its start_error().
 */
static const char *refcnt_pmu_why;

/*
 * The events point at their stream here (struct refcnt_feed_event): the
 * streams outlive every event.
 */
static const struct refcnt_pmu_stream refcnt_pmu_streams[3][2] = {
	{ { REFCNT_PMU_LOADS, 0 }, { REFCNT_PMU_LOADS, REFCNT_PMU_MEMSIDE } },
	{ { REFCNT_PMU_STORES, 0 }, { REFCNT_PMU_STORES, REFCNT_PMU_MEMSIDE } },
	{ { REFCNT_PMU_OPS, 0 }, { REFCNT_PMU_OPS, REFCNT_PMU_MEMSIDE } },
};

static const struct refcnt_pmu_stream *
refcnt_pmu_stream_of(const struct refcnt_pmu_stream *s)
{
	return &refcnt_pmu_streams[s->op][!!(s->flags & REFCNT_PMU_MEMSIDE)];
}

/**
 * refcnt_pmu_stream() - how samples of a kind are read with the settings
 * @op:		REFCNT_PMU_LOADS, _STORES or _OPS
 *
 * For a module emulating a PMU: memory-side when pebs_memside is on.
 *
 * Return: the stream, for refcnt_pmu_sample().
 */
const struct refcnt_pmu_stream *refcnt_pmu_stream(enum refcnt_pmu_op op)
{
	if (op > REFCNT_PMU_OPS)
		op = REFCNT_PMU_OPS;
	return &refcnt_pmu_streams[op][READ_ONCE(pebs_memside)];
}
EXPORT_SYMBOL_NS_GPL(refcnt_pmu_stream, REFCNT_NS);

/* The settings the module parameters ask for, with @period. */
static struct refcnt_pmu_params refcnt_pmu_params(u32 period)
{
	return (struct refcnt_pmu_params){
		.period = period,
		.ldlat = READ_ONCE(pebs_ldlat),
		.memside = READ_ONCE(pebs_memside),
	};
}

/*
 * The plans for every distinct core PMU of the online CPUs (one on most
 * machines, two on hybrid parts), into @plans (room for @max). Return:
 * how many, or an errno: -EINVAL when a PMU refuses @p, -EOPNOTSUPP when
 * no CPU has the events (*@why says why), perf's own when it has no core
 * PMU at all (a guest: -ENOENT; *@why NULL).
 */
static int refcnt_pmu_plans(const struct refcnt_pmu_params *p,
			    struct refcnt_pmu_plan *plans, unsigned int max,
			    const char **why)
{
	int err, derr = 0, perr = -EOPNOTSUPP;
	u32 types[REFCNT_PMU_MAX_PMUS];
	struct refcnt_pmu_cpu d;
	unsigned int cpu, i, n = 0;
	char name[32];

	*why = NULL;
	for_each_online_cpu(cpu) {
		err = refcnt_pmu_describe(cpu, &d, name, sizeof(name));
		if (err) {
			derr = err;
			continue;
		}
		for (i = 0; i < n && types[i] != d.pmu_type; i++)
			;
		if (i < n || n == max)
			continue;
		perr = refcnt_pmu_plan(&d, p, &plans[n], why);
		if (perr == -EINVAL)
			return perr;
		if (!perr)
			types[n++] = d.pmu_type;
	}
	if (n)
		return n;
	return *why || !derr ? perr : derr;
}

/**
 * struct refcnt_pmu_setup - what one start of the feed's events uses
 * @p:		the settings, as they were at the start
 * @task:	for a counting session's events
 * @yields:	task: its caller lacks CAP_SYS_ADMIN, the machine-wide
 *		feed may take the PMU over
 * @nr_plans:	task: plans in @plans, one per core PMU
 * @plans:	task: the events of every core PMU
 * @cpu:	machine: the CPU @cpu_plan is for, -1 for none yet
 * @cpu_plan:	machine: the plan of CPU @cpu
 *
 * CPUs that come online later get the events of the same settings.
 */
struct refcnt_pmu_setup {
	struct refcnt_pmu_params p;
	bool task;
	bool yields;
	unsigned int nr_plans;
	struct refcnt_pmu_plan plans[REFCNT_PMU_MAX_PMUS];
	int cpu;
	struct refcnt_pmu_plan cpu_plan;
};

/*
 * Throttling: perf core stops an event that took more than
 * max_samples_per_tick samples in a tick (perf_event_max_sample_rate / HZ)
 * until the next tick; what the PMU would have sampled meanwhile is lost,
 * and its time still counts as running. The sample that throttles comes
 * to the overflow handler with hw.interrupts set to MAX_INTERRUPTS: each
 * is a tick the event lost the rest of. Counted per CPU, shown in
 * pebs_throttled, said once in dmesg per start of the feed; the
 * references lost, estimated from the event's rate in the tick and the
 * time it was stopped (refcnt_pmu_tick_lost()), in pebs_throttle_lost.
 */
static DEFINE_PER_CPU(u64, refcnt_pmu_throttles);
static DEFINE_PER_CPU(u64, refcnt_pmu_throttle_lost);
static atomic_t refcnt_pmu_throttle_said;

static void refcnt_pmu_throttle_say(struct irq_work *work)
{
	pr_info_ratelimited("pebs feed: perf throttled its events (kernel.perf_event_max_sample_rate): samples were lost, see pebs_throttled; a longer pebs_period loses fewer\n");
}

static DEFINE_IRQ_WORK(refcnt_pmu_throttle_work, refcnt_pmu_throttle_say);

/* In NMI: count a throttled tick, and say it once (from irq_work). */
static void refcnt_pmu_throttled(void)
{
	this_cpu_inc(refcnt_pmu_throttles);
	if (!atomic_xchg(&refcnt_pmu_throttle_said, 1))
		irq_work_queue(&refcnt_pmu_throttle_work);
}

/* A per-CPU count summed over the CPUs, as a sysfs file shows it. */
static ssize_t refcnt_pmu_sum_show(u64 __percpu *count, char *buf)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(*per_cpu_ptr(count, cpu));
	return sysfs_emit(buf, "%llu\n", sum);
}

static ssize_t pebs_throttled_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	return refcnt_pmu_sum_show(&refcnt_pmu_throttles, buf);
}

static struct kobj_attribute refcnt_pmu_throttled_attr =
	__ATTR_RO(pebs_throttled);

static ssize_t pebs_throttle_lost_show(struct kobject *kobj,
				       struct kobj_attribute *attr, char *buf)
{
	return refcnt_pmu_sum_show(&refcnt_pmu_throttle_lost, buf);
}

static struct kobj_attribute refcnt_pmu_throttle_lost_attr =
	__ATTR_RO(pebs_throttle_lost);

/*
 * The kernel's HZ, which user space cannot read elsewhere: perf's limit
 * is DIV_ROUND_UP(perf_event_max_sample_rate, HZ) samples an event a
 * tick, and a throttled event loses at most the rest of one.
 */
static ssize_t pebs_hz_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%d\n", HZ);
}

static struct kobj_attribute refcnt_pmu_hz_attr = __ATTR_RO(pebs_hz);

static struct attribute *refcnt_pmu_attrs[] = {
	&refcnt_pmu_throttled_attr.attr,
	&refcnt_pmu_throttle_lost_attr.attr,
	&refcnt_pmu_hz_attr.attr,
	NULL
};

static const struct attribute_group refcnt_pmu_group = {
	.attrs = refcnt_pmu_attrs,
};

/*
 * Who has the PMU: the machine-wide feed or counting sessions, never
 * both (the file's comment says why), but that the feed takes it over
 * from sessions that yield (of callers without CAP_SYS_ADMIN).
 */
static DEFINE_MUTEX(refcnt_pmu_owner_lock);
static unsigned int refcnt_pmu_sessions;
static unsigned int refcnt_pmu_yielding;
static bool refcnt_pmu_machine;

/**
 * refcnt_pmu_yielded() - whether yielding sessions' samples are dropped
 *
 * Context: any, NMI included.
 * Return: true while the machine-wide feed has the PMU.
 */
bool refcnt_pmu_yielded(void)
{
	return READ_ONCE(refcnt_pmu_machine);
}

/*
 * Take the PMU for the feed or one more session (@yields: of a caller
 * without CAP_SYS_ADMIN): 0 or -EBUSY.
 */
static int refcnt_pmu_claim(bool task, bool yields)
{
	int err = 0;

	mutex_lock(&refcnt_pmu_owner_lock);
	if (task ? refcnt_pmu_machine : refcnt_pmu_sessions > 0)
		err = -EBUSY;
	else if (task && yields)
		refcnt_pmu_yielding++;
	else if (task)
		refcnt_pmu_sessions++;
	else
		WRITE_ONCE(refcnt_pmu_machine, true);
	mutex_unlock(&refcnt_pmu_owner_lock);
	return err;
}

static void refcnt_pmu_unclaim(bool task, bool yields)
{
	mutex_lock(&refcnt_pmu_owner_lock);
	if (task && yields)
		refcnt_pmu_yielding--;
	else if (task)
		refcnt_pmu_sessions--;
	else
		WRITE_ONCE(refcnt_pmu_machine, false);
	mutex_unlock(&refcnt_pmu_owner_lock);
}

/**
 * refcnt_pmu_map_err() - what perf's refusal of a PMU event means to users
 * @err:	perf's errno
 * @why:	set to the reason, for a line in the kernel log
 *
 * The one place that reads perf's "no such PMU": a guest has none
 * (-ENOENT), a CPU without PEBS refuses precise_ip (-EOPNOTSUPP), an
 * MSR the hypervisor hides is -ENXIO, a PMU that refuses the attributes
 * is -EINVAL (6.1's IBS has no task context, for instance).
 *
 * Return: -EOPNOTSUPP for those, else @err.
 */
static int refcnt_pmu_map_err(int err, const char **why)
{
	*why = NULL;
	if (err == -ENOENT || err == -ENODEV || err == -EINVAL ||
	    err == -EOPNOTSUPP || err == -ENXIO) {
		*why = "no precise memory-sampling PMU (PEBS/IBS) on this machine";
		err = -EOPNOTSUPP;
	}
	return err;
}

/* A session's plans, every core PMU's. */
static int refcnt_pmu_prepare_task(struct refcnt_pmu_setup *su)
{
	const char *why;
	int n;

	n = refcnt_pmu_plans(&su->p, su->plans, REFCNT_PMU_MAX_PMUS, &why);
	/* Without a reason the planners did not refuse: perf did. */
	if (n < 0 && !why)
		return refcnt_pmu_map_err(n, &why);
	if (n < 0)
		return n;
	su->nr_plans = n;
	su->p.period = su->plans[0].period;
	return 0;
}

/*
 * The machine-wide feed's settings, checked against every core PMU; a
 * rounded period or a data source the kernel cannot give said once.
 */
static int refcnt_pmu_prepare_machine(struct refcnt_feed *feed,
				      struct refcnt_pmu_setup *su)
{
	struct refcnt_pmu_plan *plans;
	int n;

	plans = kcalloc(REFCNT_PMU_MAX_PMUS, sizeof(*plans), GFP_KERNEL);
	if (!plans)
		return -ENOMEM;
	n = refcnt_pmu_plans(&su->p, plans, REFCNT_PMU_MAX_PMUS,
			     &refcnt_pmu_why);
	if (n > 0) {
		if (plans[0].note)
			pr_info("%s feed: %s (period %u)\n", feed->name,
				plans[0].note, plans[0].period);
		su->p.period = plans[0].period;
	}
	kfree(plans);
	return n < 0 ? n : 0;
}

/**
 * refcnt_pmu_prepare() - the feed's prepare(): settings, plans, the PMU
 * @feed:	refcnt_pebs_feed
 * @task:	for a counting session
 * @period:	asked; set to the period the PMU takes
 * @setup:	set to a struct refcnt_pmu_setup
 *
 * Return: 0; -EINVAL for a setting or period a PMU refuses, -EOPNOTSUPP
 * without such a PMU, -EBUSY when the other of the machine-wide feed and
 * sessions has the PMU (but the feed starts over sessions that yield),
 * -ENOMEM.
 */
static int refcnt_pmu_prepare(struct refcnt_feed *feed, bool task,
			      unsigned int *period, void **setup)
{
	/* A session's is its caller's memory. */
	struct refcnt_pmu_setup *su = kzalloc(sizeof(*su), task ?
					      GFP_KERNEL_ACCOUNT : GFP_KERNEL);
	int err;

	if (!task) {
		refcnt_pmu_why = NULL;
		atomic_set(&refcnt_pmu_throttle_said, 0);
	}
	if (!su)
		return -ENOMEM;
	su->p = refcnt_pmu_params(*period);
	su->task = task;
	su->yields = task && !refcnt_session_privileged();
	su->cpu = -1;
	err = task ? refcnt_pmu_prepare_task(su) :
		     refcnt_pmu_prepare_machine(feed, su);
	if (!err) {
		err = refcnt_pmu_claim(task, su->yields);
		if (err && !task)
			refcnt_pmu_why = "root's counting sessions use the PMU: close them first";
	}
	if (err) {
		kfree(su);
		return err;
	}
	*period = su->p.period;
	*setup = su;
	return 0;
}

/**
 * refcnt_pmu_finish() - the feed's finish(): give the PMU back
 * @feed:	refcnt_pebs_feed
 * @task:	as prepared
 * @setup:	what refcnt_pmu_prepare() made
 */
static void refcnt_pmu_finish(struct refcnt_feed *feed, bool task,
			      void *setup)
{
	const struct refcnt_pmu_setup *su = setup;

	refcnt_pmu_unclaim(task, su->yields);
	kfree(setup);
	/* The events are gone: no NMI queues it again. */
	irq_work_sync(&refcnt_pmu_throttle_work);
}

static void refcnt_pmu_event(const struct refcnt_pmu_event *e,
			     struct refcnt_feed_event *ev)
{
	ev->attr = e->attr;
	ev->fallback = e->fallback;
	ev->has_fallback = e->has_fallback;
	ev->stream = refcnt_pmu_stream_of(&e->stream);
}

/* Event @k of a session's plans, one PMU's after another's. */
static int refcnt_pmu_task_attr(const struct refcnt_pmu_setup *su,
				unsigned int k, struct refcnt_feed_event *ev)
{
	unsigned int i;

	for (i = 0; i < su->nr_plans; k -= su->plans[i++].nr)
		if (k < su->plans[i].nr) {
			refcnt_pmu_event(&su->plans[i].ev[k], ev);
			return 0;
		}
	return REFCNT_FEED_NO_EVENT;
}

/*
 * What perf_event_open() would ask of a session's caller, the same on
 * every machine, with such events or without (refcnt_perf_access()): the
 * strictest of the plans, IBS's at 6.1 and 6.12, which counts the kernel
 * (its fallback: no exclude flag) and gives physical addresses. Whatever
 * the PMU gives, the feed counts by physical address: its user learns
 * what PERF_SAMPLE_PHYS_ADDR would tell.
 */
static int refcnt_pmu_access_attr(unsigned int k, struct refcnt_feed_event *ev)
{
	if (k)
		return REFCNT_FEED_NO_EVENT;
	memset(ev, 0, sizeof(*ev));
	ev->attr.size = sizeof(ev->attr);
	ev->attr.precise_ip = 1;
	ev->attr.exclude_kernel = 0;
	ev->attr.sample_type = PERF_SAMPLE_ADDR | PERF_SAMPLE_PHYS_ADDR |
			       PERF_SAMPLE_DATA_SRC;
	return 0;
}

/**
 * refcnt_pmu_attr() - the feed's attr(): event @k of a CPU or a task
 * @feed:	refcnt_pebs_feed
 * @setup:	what refcnt_pmu_prepare() made; NULL: for
 *		refcnt_perf_access(), refcnt_pmu_access_attr()
 * @cpu:	the CPU, or -1 for a session's task
 * @k:		the event
 * @ev:		filled in
 *
 * A CPU's plan is made at its first event, with the settings of the
 * start (under the registry's lock: the machine-wide events are made
 * one CPU at a time).
 *
 * Return: 0, REFCNT_FEED_NO_EVENT (none @k; with @k 0 a CPU whose core
 * PMU has no such events), or an errno.
 */
static int refcnt_pmu_attr(struct refcnt_feed *feed, void *setup, int cpu,
			   unsigned int k, struct refcnt_feed_event *ev)
{
	struct refcnt_pmu_setup *su = setup;
	struct refcnt_pmu_cpu d;
	const char *why = NULL;
	char name[32];
	int err;

	if (!su)
		return refcnt_pmu_access_attr(k, ev);
	if (su->task)
		return refcnt_pmu_task_attr(su, k, ev);
	if (!k || su->cpu != cpu) {
		su->cpu = -1;
		err = refcnt_pmu_describe(cpu, &d, name, sizeof(name)) ?:
		      refcnt_pmu_plan(&d, &su->p, &su->cpu_plan, &why);
		if (err == -EOPNOTSUPP && why)
			return REFCNT_FEED_NO_EVENT;
		if (err) {
			refcnt_pmu_why = why;
			return err;
		}
		su->cpu = cpu;
	}
	if (k >= su->cpu_plan.nr)
		return REFCNT_FEED_NO_EVENT;
	refcnt_pmu_event(&su->cpu_plan.ev[k], ev);
	return 0;
}

/**
 * refcnt_pmu_event_weight() - the references a real event's sample stands for
 * @event:	the event that took it
 * @data:	the sample; its period is the event's
 * @m:		the event's multiplexing state (its target's), updated
 * @capped:	set when the factor hit REFCNT_PMU_SCALE_MAX
 *
 * The period, scaled by the event's time enabled over time running in
 * its last round of scheduling when the PMU multiplexes it with other
 * events (refcnt_pmu_scale()). The times are read without locks: an NMI
 * may see one updated and not the other, off by one slice.
 *
 * Return: the weight.
 */
static u64 refcnt_pmu_event_weight(struct perf_event *event,
				   struct perf_sample_data *data,
				   struct refcnt_pmu_mux *m, bool *capped)
{
	return refcnt_pmu_scale(data->period, m,
				READ_ONCE(event->total_time_enabled),
				READ_ONCE(event->total_time_running), capped);
}

/*
 * The feed's sample(): in NMI, on the CPU that took it. A sample whose
 * factor hit the cap counts apart, if its weight went anywhere.
 */
static enum refcnt_sample_outcome
refcnt_pmu_feed_sample(struct refcnt_feed_target *t,
		       struct perf_event *event, struct perf_sample_data *data,
		       struct pt_regs *regs, struct refcnt_outcome *out)
{
	bool throttled = refcnt_perf_throttling(event);
	enum refcnt_sample_outcome o;
	bool capped;
	u64 weight, lost;

	if (unlikely(throttled))
		refcnt_pmu_throttled();
	weight = refcnt_pmu_event_weight(event, data, &t->mux, &capped);
	lost = refcnt_pmu_tick_lost(&t->tick,
				    READ_ONCE(event->hw.interrupts_seq),
				    local_clock(), throttled, TICK_NSEC);
	if (unlikely(lost))
		this_cpu_add(refcnt_pmu_throttle_lost, lost * weight);
	o = refcnt_pmu_sample(t->stream, t->ranges, t->nr_ranges, data, regs,
			      refcnt_this_cnode(), weight, out);
	if (capped && (o == REFCNT_SAMPLE_COUNTED ||
		       o == REFCNT_SAMPLE_UNRESOLVED))
		this_cpu_inc(t->feed->stats->capped);
	return o;
}

/*
 * The feed's describe(): the sampled data and instruction (the PMU's
 * overflow handler gets the sampled IP in @regs), loads or stores as the
 * event or the data source says, and the weight the sample will count
 * (from a copy of the event's state: sample() updates it).
 */
static void refcnt_pmu_feed_describe(const struct refcnt_feed_target *t,
				     struct perf_event *event,
				     struct perf_sample_data *data,
				     struct pt_regs *regs,
				     struct refcnt_sample *s)
{
	struct refcnt_pmu_mux m = t->mux;
	bool capped;
	u64 weight;

	refcnt_pmu_sample_describe(t->stream, data, regs, s);
	weight = refcnt_pmu_event_weight(event, data, &m, &capped);
	s->weight = min_t(u64, weight, U32_MAX);
}

/*
 * The feed's start_error(): the planners' reason when they refused (the
 * errno is theirs: -EINVAL for what was asked, -EOPNOTSUPP for no such
 * events, -EBUSY for sessions holding the PMU), else what perf's errno
 * means.
 */
static int refcnt_pmu_start_error(struct refcnt_feed *feed, int err,
				  const char **why)
{
	*why = xchg(&refcnt_pmu_why, NULL);
	if (*why)
		return err;
	return refcnt_pmu_map_err(err, why);
}

static const struct refcnt_feed_ops refcnt_pmu_ops = {
	.prepare = refcnt_pmu_prepare,
	.finish = refcnt_pmu_finish,
	.attr = refcnt_pmu_attr,
	.sample = refcnt_pmu_feed_sample,
	.describe = refcnt_pmu_feed_describe,
	.start_error = refcnt_pmu_start_error,
};

/* The precise memory-sampling feed; main.c registers it. */
struct refcnt_feed refcnt_pebs_feed = {
	.name = "pebs",
	.ops = &refcnt_pmu_ops,
	/* and loads and stores as the vendor's samples tell: main.c */
	.caps = RCB_FEED_DATA_ADDR | RCB_FEED_INSTR_ADDR |
		RCB_FEED_SESSION,
	.nr_events = REFCNT_PMU_MAX_EVENTS,
	.nr_task_events = REFCNT_PMU_MAX_PMUS * REFCNT_PMU_MAX_EVENTS,
	.precise = true,
	.unsupported = "no precise memory-sampling PMU (PEBS/IBS) on this machine",
	.group = &refcnt_pmu_group,
};

module_param_cb(pebs_period, &refcnt_feed_period_ops, &refcnt_pebs_feed,
		0644);
MODULE_PARM_DESC(pebs_period,
		 "PEBS/IBS feed: one precise sample every N loads and stores (PEBS) or ops (IBS, rounded down to 16s), weighted N (default 0: off)");

/*
 * pebs_ldlat and pebs_memside: while the feed runs, checked against every
 * core PMU before they are taken, so that it restarts with them or keeps
 * running as it was; while it is off (and at load), checked when it
 * starts.
 */
static int refcnt_pmu_setting_set(const char *val,
				  const struct kernel_param *kp)
{
	struct refcnt_pmu_params p = refcnt_pmu_params(0);
	struct refcnt_pmu_plan *plans;
	unsigned int ldlat = 0;
	bool memside = false;
	const char *why;
	int err;

	if (kp->arg == &pebs_ldlat) {
		err = kstrtouint(val, 0, &ldlat) ?:
		      refcnt_pmu_ldlat_check(ldlat);
		if (err)
			pr_warn("pebs feed: pebs_ldlat must be 0 (every load) or 3 to 65535 cycles\n");
		p.ldlat = ldlat;
	} else {
		err = kstrtobool(val, &memside);
		p.memside = memside;
	}
	if (err)
		return -EINVAL;
	/* A feed that is off checks its settings when it starts. */
	p.period = READ_ONCE(refcnt_pebs_feed.period);
	if (p.period) {
		plans = kcalloc(REFCNT_PMU_MAX_PMUS, sizeof(*plans),
				GFP_KERNEL);
		if (!plans)
			return -ENOMEM;
		err = refcnt_pmu_plans(&p, plans, REFCNT_PMU_MAX_PMUS, &why);
		kfree(plans);
		if (err == -EINVAL) {
			pr_warn("pebs feed: %s\n", why);
			return err;
		}
	}
	if (kp->arg == &pebs_ldlat)
		WRITE_ONCE(pebs_ldlat, ldlat);
	else
		WRITE_ONCE(pebs_memside, memside);
	return refcnt_feed_restart(&refcnt_pebs_feed);
}

static const struct kernel_param_ops refcnt_pmu_ldlat_ops = {
	.set = refcnt_pmu_setting_set,
	.get = param_get_uint,
};

static const struct kernel_param_ops refcnt_pmu_memside_ops = {
	.set = refcnt_pmu_setting_set,
	.get = param_get_bool,
};

module_param_cb(pebs_ldlat, &refcnt_pmu_ldlat_ops, &pebs_ldlat, 0644);
MODULE_PARM_DESC(pebs_ldlat,
		 "PEBS feed: load-latency threshold in core cycles, 3 to 65535; 0 samples every load (default 0)");
module_param_cb(pebs_memside, &refcnt_pmu_memside_ops, &pebs_memside,
		0644);
MODULE_PARM_DESC(pebs_memside,
		 "PEBS/IBS feed: count only loads the data source puts beyond the caches (default N)");
