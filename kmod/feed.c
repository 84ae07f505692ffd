// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the feeds, what makes counters move on a real machine.
 *
 * Page faults: software perf events per CPU count the user page faults
 * the kernel accounts as minor or major (PERF_COUNT_SW_PAGE_FAULTS_MIN and
 * _MAJ, the faults getrusage() counts) and overflow every fault_period-th
 * one. Those events fire at the end of handle_mm_fault(), with the page
 * mapped, so the overflow handler itself looks the page up and delivers
 * fault_period references from the faulting CPU's node to it (NUMA
 * hinting faults, migrations and THP count where the page really is).
 * Nothing is queued or allocated per sample.
 *
 * PEBS/IBS: precise memory samples with data addresses, in NMI context,
 * delivered through refcnt_reference() with the sampling period as the
 * weight. refcnt_pebs_sample() is the whole sample-processing half; the
 * overflow handler and RCB_FEED_SAMPLES both call it, so machines without
 * a PMU still test it. Only the PMU programming is untested there.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/hardirq.h>
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
#include <asm/processor.h>
#include <uapi/linux/refcnt.h>

#include "refcnt.h"

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

static DEFINE_PER_CPU(struct refcnt_feed_stats, refcnt_fault_stats);
static DEFINE_PER_CPU(struct refcnt_feed_stats, refcnt_pebs_stats);

/**
 * struct refcnt_feed - one feed: its per-CPU events and statistics
 * @name:	"fault" or "pebs"
 * @period:	events per delivered sample, 0 when off
 * @configs:	the perf event configs the feed counts (software events)
 * @nr_configs:	events per CPU: entries of @configs, or 1 for PEBS/IBS
 * @events:	@nr_configs perf events per CPU while on, CPU-major
 * @stats:	its statistics, per CPU: the fault and NMI paths only add to
 *		their own CPU's (one instruction on x86, NMI-safe)
 */
struct refcnt_feed {
	const char *name;
	unsigned int period;
	const u64 *configs;
	unsigned int nr_configs;
	struct perf_event **events;
	struct refcnt_feed_stats __percpu *stats;
};

/*
 * The faults getrusage() counts, accounted once handled (never failed or
 * retried ones): one event per kind, each overflowing every Nth fault.
 */
static const u64 refcnt_fault_configs[] = {
	PERF_COUNT_SW_PAGE_FAULTS_MIN,
	PERF_COUNT_SW_PAGE_FAULTS_MAJ,
};

static struct refcnt_feed refcnt_fault_feed = {
	.name = "fault",
	.configs = refcnt_fault_configs,
	.nr_configs = ARRAY_SIZE(refcnt_fault_configs),
	.stats = &refcnt_fault_stats,
};

static struct refcnt_feed refcnt_pebs_feed = {
	.name = "pebs",
	.nr_configs = 1,
	.stats = &refcnt_pebs_stats,
};

static unsigned int fault_period;
static unsigned int pebs_period;
/* Set once the nodes exist: parameters given at load start feeds then. */
static bool refcnt_feeds_ready;

/* Serialises turning feeds on and off. */
static DEFINE_MUTEX(refcnt_feed_lock);

static unsigned int refcnt_this_cnode(void)
{
	return refcnt_topo.nid_to_cnode[numa_node_id()];
}

/*
 * Deliver @weight references from @cnode to the page mapped at user
 * address @addr of the current task. NMI-safe: the page is looked up with
 * get_user_page_fast_only(), as perf_virt_to_phys() does in NMI.
 */
static bool refcnt_sample_user(struct refcnt_feed *feed, u64 addr,
			       unsigned int cnode, u64 weight)
{
	struct refcnt_ctx ctx = { .pid = task_tgid_nr(current), .vaddr = addr };
	struct page *page;
	bool counted;

	if (!addr || addr >= TASK_SIZE ||
	    !get_user_page_fast_only(addr & PAGE_MASK, 0, &page)) {
		this_cpu_inc(feed->stats->unresolved);
		return false;
	}
	counted = refcnt_reference(PFN_PHYS(page_to_pfn(page)) +
				   (addr & ~PAGE_MASK), cnode,
				   min_t(u64, weight, U32_MAX), &ctx);
	put_page(page);
	if (counted)
		this_cpu_inc(feed->stats->delivered);
	else
		this_cpu_inc(feed->stats->unresolved);
	return counted;
}

/*
 * A minor or major fault has been handled: the page is mapped, and we are
 * still in handle_mm_fault(), preemption off, so only lockless lookups.
 */
static void refcnt_fault_overflow(struct perf_event *event,
				  struct perf_sample_data *data,
				  struct pt_regs *regs)
{
	this_cpu_inc(refcnt_fault_feed.stats->samples);
	if (!current->mm || (current->flags & PF_KTHREAD)) {
		this_cpu_inc(refcnt_fault_feed.stats->unresolved);
		return;
	}
	refcnt_sample_user(&refcnt_fault_feed, data->addr,
			   refcnt_this_cnode(), event->attr.sample_period);
}

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
			return refcnt_sample_user(&refcnt_pebs_feed, data->addr,
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

static void refcnt_pebs_overflow(struct perf_event *event,
				 struct perf_sample_data *data,
				 struct pt_regs *regs)
{
	refcnt_pebs_sample(data, refcnt_this_cnode());
}

/* The precise load-sampling event of this CPU vendor, if we know one. */
static int refcnt_pebs_attr(struct perf_event_attr *attr, unsigned int period)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->sample_period = period;
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

static void refcnt_feed_stop(struct refcnt_feed *feed)
{
	unsigned int i;

	if (!feed->events)
		return;
	for (i = 0; i < nr_cpu_ids * feed->nr_configs; i++)
		if (feed->events[i])
			perf_event_release_kernel(feed->events[i]);
	kfree(feed->events);
	feed->events = NULL;
	feed->period = 0;
}

static int refcnt_feed_start(struct refcnt_feed *feed, unsigned int period)
{
	perf_overflow_handler_t handler = refcnt_fault_overflow;
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.sample_period = period,
		.exclude_kernel = 1,
	};
	unsigned int cpu, k;
	int err = 0;

	if (feed == &refcnt_pebs_feed) {
		handler = refcnt_pebs_overflow;
		err = refcnt_pebs_attr(&attr, period);
		if (err)
			return err;
	}
	feed->events = kcalloc(nr_cpu_ids * feed->nr_configs,
			       sizeof(*feed->events), GFP_KERNEL);
	if (!feed->events)
		return -ENOMEM;

	cpus_read_lock();
	for_each_online_cpu(cpu) {
		for (k = 0; k < feed->nr_configs && !err; k++) {
			struct perf_event *ev;

			if (feed->configs)
				attr.config = feed->configs[k];
			ev = perf_event_create_kernel_counter(&attr, cpu, NULL,
							      handler, NULL);
			if (IS_ERR(ev))
				err = PTR_ERR(ev);
			else
				feed->events[cpu * feed->nr_configs + k] = ev;
		}
		if (err)
			break;
	}
	cpus_read_unlock();
	if (err) {
		refcnt_feed_stop(feed);
		return err;
	}
	feed->period = period;
	return 0;
}

static int refcnt_feed_set(struct refcnt_feed *feed, unsigned int period)
{
	int err = 0;

	mutex_lock(&refcnt_feed_lock);
	/* Before the nodes exist, or once unloading, only the value counts. */
	if (refcnt_feeds_ready) {
		refcnt_feed_stop(feed);
		if (period)
			err = refcnt_feed_start(feed, period);
	}
	mutex_unlock(&refcnt_feed_lock);
	if (!err)
		return 0;
	/* perf says "no such PMU" several ways; a guest has none. */
	if (feed == &refcnt_pebs_feed &&
	    (err == -ENOENT || err == -ENODEV || err == -EINVAL ||
	     err == -EOPNOTSUPP)) {
		pr_warn("pebs feed: no precise memory-sampling PMU (PEBS/IBS) on this machine\n");
		return -EOPNOTSUPP;
	}
	pr_warn("%s feed: cannot start (%d)\n", feed->name, err);
	return err;
}

static int refcnt_period_set(const char *val, const struct kernel_param *kp)
{
	struct refcnt_feed *feed = kp->arg == &fault_period ?
				   &refcnt_fault_feed : &refcnt_pebs_feed;
	unsigned int period;
	int err;

	err = kstrtouint(val, 0, &period);
	if (err)
		return err;
	err = refcnt_feed_set(feed, period);
	/* A failed start leaves the feed off: say so in the parameter too. */
	*(unsigned int *)kp->arg = err ? 0 : period;
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
		 "PEBS/IBS feed: one precise load sample every N loads, weighted N (default 0: off)");

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

REFCNT_FEED_STAT(fault, samples);
REFCNT_FEED_STAT(fault, delivered);
REFCNT_FEED_STAT(fault, unresolved);
REFCNT_FEED_STAT(pebs, samples);
REFCNT_FEED_STAT(pebs, delivered);
REFCNT_FEED_STAT(pebs, unresolved);

static struct attribute *refcnt_feed_attrs[] = {
	&fault_samples_attr.attr,
	&fault_delivered_attr.attr,
	&fault_unresolved_attr.attr,
	&pebs_samples_attr.attr,
	&pebs_delivered_attr.attr,
	&pebs_unresolved_attr.attr,
	NULL,
};

static const struct attribute_group refcnt_feed_group = {
	.attrs = refcnt_feed_attrs,
};

/**
 * refcnt_feeds_init() - publish feed statistics, start feeds asked at load
 *
 * A PEBS feed asked for on a machine without the PMU is refused with one
 * line in dmesg; the module loads and everything else works.
 *
 * Return: 0 or a negative errno.
 */
int refcnt_feeds_init(void)
{
	int err;

	refcnt_kobj = kobject_create_and_add("refcnt", kernel_kobj);
	if (!refcnt_kobj)
		return -ENOMEM;
	err = sysfs_create_group(refcnt_kobj, &refcnt_feed_group);
	if (err) {
		kobject_put(refcnt_kobj);
		return err;
	}
	mutex_lock(&refcnt_feed_lock);
	refcnt_feeds_ready = true;
	mutex_unlock(&refcnt_feed_lock);
	if (fault_period && refcnt_feed_set(&refcnt_fault_feed, fault_period))
		fault_period = 0;
	if (pebs_period && refcnt_feed_set(&refcnt_pebs_feed, pebs_period))
		pebs_period = 0;
	return 0;
}

/**
 * refcnt_feeds_exit() - stop every feed and wait for its samples in flight
 */
void refcnt_feeds_exit(void)
{
	mutex_lock(&refcnt_feed_lock);
	refcnt_feeds_ready = false;
	refcnt_feed_stop(&refcnt_fault_feed);
	refcnt_feed_stop(&refcnt_pebs_feed);
	mutex_unlock(&refcnt_feed_lock);
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
