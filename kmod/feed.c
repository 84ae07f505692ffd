// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the feeds' registry: what makes counters move on a real machine.
 *
 * Each feed is a set of per-CPU kernel perf events whose overflow handler
 * delivers samples to refcnt_reference(): the sampled page faults
 * (feed_fault.c) and the PEBS/IBS precise memory samples (feed_pmu.c).
 * Here: their period parameters, turning them on and off, following CPUs
 * as they come online and go offline, and their statistics in
 * /sys/kernel/refcnt/.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/kobject.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/topology.h>
#include <linux/workqueue.h>

#include "refcnt.h"
#include "feed.h"

static DEFINE_PER_CPU(struct refcnt_feed_stats, refcnt_fault_stats);
static DEFINE_PER_CPU(struct refcnt_feed_stats, refcnt_pebs_stats);

struct refcnt_feed refcnt_fault_feed = {
	.name = "fault",
	.nr_events = REFCNT_FAULT_EVENTS,
	.attr = refcnt_fault_attr,
	.overflow = refcnt_fault_overflow,
	.stats = &refcnt_fault_stats,
};

struct refcnt_feed refcnt_pebs_feed = {
	.name = "pebs",
	.nr_events = REFCNT_PMU_MAX_EVENTS,
	.prepare = refcnt_pmu_prepare,
	.cpu_start = refcnt_pmu_cpu_start,
	.finish = refcnt_pmu_finish,
	.map_err = refcnt_pmu_start_err,
	.stats = &refcnt_pebs_stats,
};

static unsigned int fault_period;
static unsigned int pebs_period;
/* Set once the nodes exist: parameters given at load start feeds then. */
static bool refcnt_feeds_ready;

/* Serialises turning feeds on and off. */
static DEFINE_MUTEX(refcnt_feed_lock);

/**
 * refcnt_feed_cnode() - cnodeid of the CPU a sample is taken on
 *
 * Return: the cnodeid of this CPU's node.
 */
unsigned int refcnt_feed_cnode(void)
{
	return refcnt_topo.nid_to_cnode[numa_node_id()];
}

/**
 * refcnt_feed_user_ref() - deliver references at a user address of this task
 * @addr:	user address referenced
 * @cnode:	cnodeid the references come from
 * @weight:	references the sample stands for
 *
 * NMI-safe: the page is looked up with get_user_page_fast_only(), as
 * perf_virt_to_phys() does in NMI.
 *
 * Return: true if a counter counted them.
 */
bool refcnt_feed_user_ref(u64 addr, unsigned int cnode, u64 weight)
{
	struct refcnt_ctx ctx = { .pid = task_tgid_nr(current), .vaddr = addr };
	struct page *page;
	bool counted;

	if (!addr || addr >= TASK_SIZE ||
	    !get_user_page_fast_only(addr & PAGE_MASK, 0, &page))
		return false;
	counted = refcnt_reference(PFN_PHYS(page_to_pfn(page)) +
				   (addr & ~PAGE_MASK), cnode,
				   min_t(u64, weight, U32_MAX), &ctx);
	put_page(page);
	return counted;
}

/**
 * refcnt_feed_user() - refcnt_feed_user_ref(), counted in a feed's statistics
 * @feed:	the feed, whose statistics count the outcome
 * @addr:	user address referenced
 * @cnode:	cnodeid the references come from
 * @weight:	references the sample stands for
 *
 * Return: true if a counter counted it.
 */
bool refcnt_feed_user(struct refcnt_feed *feed, u64 addr, unsigned int cnode,
		      u64 weight)
{
	bool counted = refcnt_feed_user_ref(addr, cnode, weight);

	if (counted)
		this_cpu_inc(feed->stats->delivered);
	else
		this_cpu_inc(feed->stats->unresolved);
	return counted;
}

/* Release @feed's events on @cpu, if it has any. */
static void refcnt_feed_cpu_stop(struct refcnt_feed *feed, unsigned int cpu)
{
	struct perf_event **ev = &feed->events[cpu * feed->nr_events];
	unsigned int k;

	for (k = 0; k < feed->nr_events; k++) {
		if (ev[k])
			perf_event_release_kernel(ev[k]);
		ev[k] = NULL;
	}
	cpumask_clear_cpu(cpu, &feed->cpus);
	cpumask_clear_cpu(cpu, &feed->skipped);
}

/*
 * Make @feed's events on the online @cpu, sampling every @period. On
 * failure the caller releases those made with refcnt_feed_cpu_stop().
 * Return: 0, REFCNT_FEED_SKIP (the CPU has no such events) or an errno.
 */
static int refcnt_feed_cpu_start(struct refcnt_feed *feed, unsigned int cpu,
				 unsigned int period)
{
	struct perf_event_attr attr;
	unsigned int k;
	int err;

	if (feed->cpu_start) {
		err = feed->cpu_start(feed, cpu, period);
		if (!err)
			cpumask_set_cpu(cpu, &feed->cpus);
		else if (err == REFCNT_FEED_SKIP)
			cpumask_set_cpu(cpu, &feed->skipped);
		return err;
	}
	for (k = 0; k < feed->nr_events; k++) {
		struct perf_event *ev;

		err = feed->attr(&attr, k);
		if (err)
			return err;
		attr.sample_period = period;
		ev = perf_event_create_kernel_counter(&attr, cpu, NULL,
						      feed->overflow, NULL);
		if (IS_ERR(ev))
			return PTR_ERR(ev);
		feed->events[cpu * feed->nr_events + k] = ev;
	}
	cpumask_set_cpu(cpu, &feed->cpus);
	return 0;
}

/* Called with refcnt_feed_lock held. */
static void refcnt_feed_stop(struct refcnt_feed *feed)
{
	unsigned int cpu;

	if (!feed->events)
		return;
	for_each_possible_cpu(cpu)
		refcnt_feed_cpu_stop(feed, cpu);
	kfree(feed->events);
	feed->events = NULL;
	feed->period = 0;
	if (feed->finish)
		feed->finish(feed);
}

/*
 * Give every online CPU that has none its events. A CPU going offline
 * meanwhile refuses them (-ENODEV) and is left to the resync its offline
 * callback queues; one whose PMU has no such events is left out, in
 * @feed->skipped. Called with refcnt_feed_lock held.
 */
static int refcnt_feed_cover(struct refcnt_feed *feed, unsigned int period)
{
	unsigned int cpu;
	int err;

	for_each_online_cpu(cpu) {
		if (cpumask_test_cpu(cpu, &feed->cpus) ||
		    cpumask_test_cpu(cpu, &feed->skipped))
			continue;
		err = refcnt_feed_cpu_start(feed, cpu, period);
		if (err == REFCNT_FEED_SKIP)
			continue;
		if (err)
			refcnt_feed_cpu_stop(feed, cpu);
		/* -ENODEV may also mean no such PMU: only skip a gone CPU. */
		if (err && (err != -ENODEV || cpu_online(cpu)))
			return err;
	}
	return 0;
}

/*
 * Called with refcnt_feed_lock held, never the CPU hotplug lock: making
 * and releasing software events takes it (their static keys).
 */
static int refcnt_feed_start(struct refcnt_feed *feed, unsigned int period)
{
	int err;

	feed->events = kcalloc(nr_cpu_ids * feed->nr_events,
			       sizeof(*feed->events), GFP_KERNEL);
	if (!feed->events)
		return -ENOMEM;
	/* From here on refcnt_feed_stop() undoes it, finish() included. */
	err = feed->prepare ? feed->prepare(feed, &period) : 0;
	if (!err)
		err = refcnt_feed_cover(feed, period);
	/* Every CPU left out: the machine has no such PMU. */
	if (!err && cpumask_empty(&feed->cpus))
		err = -EOPNOTSUPP;
	if (err) {
		refcnt_feed_stop(feed);
		return err;
	}
	feed->period = period;
	return 0;
}

static struct refcnt_feed *const refcnt_feeds[] = {
	&refcnt_fault_feed,
	&refcnt_pebs_feed,
};

/* The CPU hotplug state our callbacks hold, once set up (dynamic: > 0). */
static int refcnt_feed_cpuhp;
/* CPUs that went offline since the last resync: their events are dead. */
static cpumask_t refcnt_feed_gone;

/*
 * After CPUs came online or went offline: release the events of those
 * that went offline (perf detached them) and give the online ones that
 * have none theirs. A CPU the feed cannot sample (no memory, no PMU on
 * it) is left out, as the feed's *_cpus file shows, and dmesg says why.
 */
static void refcnt_feed_resync(struct work_struct *work)
{
	unsigned int cpu, i;
	int err;

	mutex_lock(&refcnt_feed_lock);
	for_each_possible_cpu(cpu) {
		bool gone = cpumask_test_and_clear_cpu(cpu, &refcnt_feed_gone);

		for (i = 0; i < ARRAY_SIZE(refcnt_feeds); i++)
			if (refcnt_feeds[i]->events && (gone || !cpu_online(cpu)))
				refcnt_feed_cpu_stop(refcnt_feeds[i], cpu);
	}
	for (i = 0; i < ARRAY_SIZE(refcnt_feeds); i++) {
		struct refcnt_feed *feed = refcnt_feeds[i];

		if (!feed->events || !feed->period)
			continue;
		err = refcnt_feed_cover(feed, feed->period);
		if (err)
			pr_warn("%s feed: cannot sample every online CPU (%d)\n",
				feed->name, err);
	}
	mutex_unlock(&refcnt_feed_lock);
}

static DECLARE_WORK(refcnt_feed_resync_work, refcnt_feed_resync);

/*
 * The hotplug callbacks run with the CPU hotplug lock held for write, so
 * they only queue the resync, which runs once the CPU is on- or offline.
 * Between the two an offline CPU's events are detached by perf and take
 * no samples.
 */
static int refcnt_feed_cpu_online(unsigned int cpu)
{
	queue_work(system_unbound_wq, &refcnt_feed_resync_work);
	return 0;
}

static int refcnt_feed_cpu_offline(unsigned int cpu)
{
	/* Marked before queued: the resync that follows releases them. */
	cpumask_set_cpu(cpu, &refcnt_feed_gone);
	queue_work(system_unbound_wq, &refcnt_feed_resync_work);
	return 0;
}

/*
 * Restart @feed with @period; if that fails, with the period it had.
 * Return: 0, or the errno of the failure, which the kernel log explains
 * in one line. *@set is the period the feed runs with (the PMU may
 * round), or before the nodes exist the one it will be started with.
 */
static int refcnt_feed_set(struct refcnt_feed *feed, unsigned int period,
			   unsigned int *set)
{
	unsigned int old = feed->period;
	const char *why = NULL;
	int err = 0, ret;

	mutex_lock(&refcnt_feed_lock);
	*set = period;
	/* Before the nodes exist, or once unloading, only the value counts. */
	if (refcnt_feeds_ready) {
		refcnt_feed_stop(feed);
		if (period)
			err = refcnt_feed_start(feed, period);
		if (err && old)
			refcnt_feed_start(feed, old);
		*set = feed->period;
	}
	mutex_unlock(&refcnt_feed_lock);
	if (!err)
		return 0;
	ret = feed->map_err ? feed->map_err(err, &why) : err;
	pr_warn("%s feed: %s (%d)\n", feed->name, why ?: "cannot start", err);
	return ret;
}

/**
 * refcnt_feed_restart() - start a running feed again, after its settings
 * @feed:	the feed
 *
 * Return: 0, or the errno of a failed restart (the feed then runs as
 * before, as refcnt_feed_set() leaves it).
 */
int refcnt_feed_restart(struct refcnt_feed *feed)
{
	unsigned int set, period = READ_ONCE(feed->period);

	return period ? refcnt_feed_set(feed, period, &set) : 0;
}

static int refcnt_period_set(const char *val, const struct kernel_param *kp)
{
	struct refcnt_feed *feed = kp->arg == &fault_period ?
				   &refcnt_fault_feed : &refcnt_pebs_feed;
	unsigned int period, set;
	int err;

	err = kstrtouint(val, 0, &period);
	if (err)
		return err;
	/*
	 * A failed write changes nothing: the feed runs with its previous
	 * period, which the parameter keeps showing (0 in the rare case
	 * that the previous period could not be restarted either). A
	 * successful one shows the period as the PMU took it.
	 */
	err = refcnt_feed_set(feed, period, &set);
	*(unsigned int *)kp->arg = set;
	return err;
}

static const struct kernel_param_ops refcnt_period_ops = {
	.set = refcnt_period_set,
	.get = param_get_uint,
};

module_param_cb(fault_period, &refcnt_period_ops, &fault_period, 0644);
MODULE_PARM_DESC(fault_period,
		 "Page-fault feed: deliver every Nth user page fault, weighted N (default 0: off)");
module_param_cb(pebs_period, &refcnt_period_ops, &pebs_period, 0644);
MODULE_PARM_DESC(pebs_period,
		 "PEBS/IBS feed: one precise sample every N loads and stores (PEBS) or ops (IBS, rounded to 16s), weighted N (default 0: off)");

/* /sys/kernel/refcnt/<feed>_<stat> */
static struct kobject *refcnt_kobj;

/* A feed's statistics summed over the CPUs: exact once the feed is quiet. */
static struct refcnt_feed_stats
refcnt_feed_stats_sum(const struct refcnt_feed *feed)
{
	struct refcnt_feed_stats sum = {};
	int cpu;

	for_each_possible_cpu(cpu) {
		const struct refcnt_feed_stats *s = per_cpu_ptr(feed->stats, cpu);

		sum.samples += s->samples;
		sum.delivered += s->delivered;
		sum.unresolved += s->unresolved;
		sum.kernel += s->kernel;
		sum.noaddr += s->noaddr;
		sum.cached += s->cached;
	}
	return sum;
}

#define REFCNT_FEED_STAT(feed, stat)					\
static ssize_t feed##_##stat##_show(struct kobject *kobj,		\
				    struct kobj_attribute *attr, char *buf) \
{									\
	return sysfs_emit(buf, "%llu\n",				\
			  refcnt_feed_stats_sum(&refcnt_##feed##_feed).stat); \
}									\
static struct kobj_attribute feed##_##stat##_attr = __ATTR_RO(feed##_##stat)

/*
 * The CPUs a feed samples now (mask cpus), or leaves out because their
 * PMU has no such events (mask skipped), as a CPU list ("0-1,3").
 */
#define REFCNT_FEED_CPUS(feed, mask)					\
static ssize_t feed##_##mask##_show(struct kobject *kobj,		\
				    struct kobj_attribute *attr, char *buf) \
{									\
	ssize_t len;							\
									\
	flush_work(&refcnt_feed_resync_work);				\
	mutex_lock(&refcnt_feed_lock);					\
	len = sysfs_emit(buf, "%*pbl\n",				\
			 cpumask_pr_args(&refcnt_##feed##_feed.mask));	\
	mutex_unlock(&refcnt_feed_lock);				\
	return len;							\
}									\
static struct kobj_attribute feed##_##mask##_attr = __ATTR_RO(feed##_##mask)

REFCNT_FEED_STAT(fault, samples);
REFCNT_FEED_STAT(fault, delivered);
REFCNT_FEED_STAT(fault, unresolved);
REFCNT_FEED_STAT(pebs, samples);
REFCNT_FEED_STAT(pebs, delivered);
REFCNT_FEED_STAT(pebs, unresolved);
REFCNT_FEED_STAT(pebs, kernel);
REFCNT_FEED_STAT(pebs, noaddr);
REFCNT_FEED_STAT(pebs, cached);
REFCNT_FEED_CPUS(fault, cpus);
REFCNT_FEED_CPUS(pebs, cpus);
REFCNT_FEED_CPUS(pebs, skipped);

static struct attribute *refcnt_feed_attrs[] = {
	&fault_samples_attr.attr,
	&fault_delivered_attr.attr,
	&fault_unresolved_attr.attr,
	&pebs_samples_attr.attr,
	&pebs_delivered_attr.attr,
	&pebs_unresolved_attr.attr,
	&pebs_kernel_attr.attr,
	&pebs_noaddr_attr.attr,
	&pebs_cached_attr.attr,
	&fault_cpus_attr.attr,
	&pebs_cpus_attr.attr,
	&pebs_skipped_attr.attr,
	NULL,
};

static const struct attribute_group refcnt_feed_group = {
	.attrs = refcnt_feed_attrs,
};

/**
 * refcnt_feeds_init() - publish feed statistics, start feeds asked at load
 *
 * From here on the feeds follow CPUs coming online and going offline.
 * A feed given at load that cannot start (the PEBS feed on a machine
 * without the PMU) is refused with one line in dmesg and left off; the
 * module loads and everything else works.
 *
 * Return: 0, or a negative errno when the statistics cannot be published.
 */
int refcnt_feeds_init(void)
{
	int err;

	refcnt_kobj = kobject_create_and_add("refcnt", kernel_kobj);
	if (!refcnt_kobj)
		return -ENOMEM;
	err = sysfs_create_group(refcnt_kobj, &refcnt_feed_group);
	if (err)
		goto put;
	err = refcnt_hub_init(refcnt_kobj);
	if (err)
		goto remove;
	/* No feed is on yet: nothing to call for the CPUs online now. */
	err = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "refcnt/feed:online",
					refcnt_feed_cpu_online,
					refcnt_feed_cpu_offline);
	if (err < 0)
		goto hub;
	refcnt_feed_cpuhp = err;
	mutex_lock(&refcnt_feed_lock);
	refcnt_feeds_ready = true;
	mutex_unlock(&refcnt_feed_lock);
	if (fault_period)
		refcnt_feed_set(&refcnt_fault_feed, fault_period, &fault_period);
	if (pebs_period)
		refcnt_feed_set(&refcnt_pebs_feed, pebs_period, &pebs_period);
	return 0;

hub:
	refcnt_hub_exit(refcnt_kobj);
remove:
	sysfs_remove_group(refcnt_kobj, &refcnt_feed_group);
put:
	kobject_put(refcnt_kobj);
	return err;
}

/**
 * refcnt_feeds_exit() - stop every feed and wait for its samples in flight
 */
void refcnt_feeds_exit(void)
{
	refcnt_hub_exit(refcnt_kobj);
	/* Waits for a CPU going on- or offline; none follows. */
	cpuhp_remove_state_nocalls(refcnt_feed_cpuhp);
	flush_work(&refcnt_feed_resync_work);
	mutex_lock(&refcnt_feed_lock);
	refcnt_feeds_ready = false;
	refcnt_feed_stop(&refcnt_fault_feed);
	refcnt_feed_stop(&refcnt_pebs_feed);
	mutex_unlock(&refcnt_feed_lock);
	refcnt_count_exit();
	fault_period = 0;
	pebs_period = 0;
	/*
	 * A software event's handler runs with preemption off: wait for any
	 * still running on another CPU before the module text goes away.
	 */
	synchronize_rcu();
	sysfs_remove_group(refcnt_kobj, &refcnt_feed_group);
	kobject_put(refcnt_kobj);
}
