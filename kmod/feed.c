// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the feeds, what makes counters move on a real machine.
 *
 * Page faults: a software perf event per CPU counts user page faults and
 * overflows every fault_period-th one. The overflow comes at the start of
 * the fault, before the page is mapped, so it only queues a task_work;
 * that runs when the task returns to user space, the fault handled, and
 * delivers fault_period references from the faulting CPU's node to the
 * page now mapped (so NUMA hinting faults, migrations and THP count where
 * the page really is).
 *
 * PEBS/IBS: precise memory samples with data addresses, in NMI context,
 * delivered through refcnt_reference() with the sampling period as the
 * weight. refcnt_pebs_sample() is the whole sample-processing half; the
 * overflow handler and RCB_FEED_SAMPLES both call it, so machines without
 * a PMU still test it. Only the PMU programming is untested there.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/cpu.h>
#include <linux/hardirq.h>
#include <linux/kobject.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/task_work.h>
#include <linux/topology.h>
#include <linux/wait.h>
#include <asm/processor.h>
#include <uapi/linux/refcnt.h>

#include "refcnt.h"

/**
 * struct refcnt_feed - one feed: its per-CPU events and statistics
 * @name:	"fault" or "pebs"
 * @period:	events per delivered sample, 0 when off
 * @events:	per-CPU perf events while on
 * @samples:	samples taken
 * @delivered:	samples that reached a counter
 * @unresolved:	samples whose page could not be found or is counted by
 *		no node
 * @dropped:	samples lost before they could be handled (no memory)
 */
struct refcnt_feed {
	const char *name;
	unsigned int period;
	struct perf_event **events;
	atomic64_t samples;
	atomic64_t delivered;
	atomic64_t unresolved;
	atomic64_t dropped;
};

static struct refcnt_feed refcnt_fault_feed = { .name = "fault" };
static struct refcnt_feed refcnt_pebs_feed = { .name = "pebs" };

static unsigned int fault_period;
static unsigned int pebs_period;
/* Set once the nodes exist: parameters given at load start feeds then. */
static bool refcnt_feeds_ready;

/* Serialises turning feeds on and off. */
static DEFINE_MUTEX(refcnt_feed_lock);
/* Fault task_works queued and not yet run; unload waits for none. */
static atomic_t refcnt_fault_inflight = ATOMIC_INIT(0);
static DECLARE_WAIT_QUEUE_HEAD(refcnt_fault_wait);

static unsigned int refcnt_this_cnode(void)
{
	return refcnt_topo.nid_to_cnode[numa_node_id()];
}

/**
 * struct refcnt_fault_sample - a sampled fault waiting for its page
 * @work:	runs on return to user space
 * @addr:	faulting address
 * @cnode:	cnodeid of the CPU that took the fault
 * @weight:	references it stands for
 */
struct refcnt_fault_sample {
	struct callback_head work;
	u64 addr;
	unsigned int cnode;
	u32 weight;
};

static void refcnt_fault_resolve(struct callback_head *work)
{
	struct refcnt_fault_sample *s =
		container_of(work, struct refcnt_fault_sample, work);
	struct refcnt_ctx ctx = { .pid = task_tgid_nr(current), .vaddr = s->addr };
	struct page *page;

	if (get_user_page_fast_only(s->addr & PAGE_MASK, 0, &page)) {
		u64 paddr = PFN_PHYS(page_to_pfn(page)) + (s->addr & ~PAGE_MASK);

		if (refcnt_reference(paddr, s->cnode, s->weight, &ctx))
			atomic64_inc(&refcnt_fault_feed.delivered);
		else
			atomic64_inc(&refcnt_fault_feed.unresolved);
		put_page(page);
	} else {
		atomic64_inc(&refcnt_fault_feed.unresolved);
	}
	kfree(s);
	/* Last: unload waits for this count, then for an RCU grace period. */
	preempt_disable();
	/* Only an unload waits: no wait-queue lock per sample otherwise. */
	if (atomic_dec_and_test(&refcnt_fault_inflight) &&
	    wq_has_sleeper(&refcnt_fault_wait))
		wake_up(&refcnt_fault_wait);
	preempt_enable();
}

static void refcnt_fault_overflow(struct perf_event *event,
				  struct perf_sample_data *data,
				  struct pt_regs *regs)
{
	struct refcnt_fault_sample *s;

	atomic64_inc(&refcnt_fault_feed.samples);
	if (!current->mm || (current->flags & PF_KTHREAD))
		return;
	s = kmalloc(sizeof(*s), GFP_ATOMIC | __GFP_NOWARN);
	if (!s) {
		atomic64_inc(&refcnt_fault_feed.dropped);
		return;
	}
	s->addr = data->addr;
	s->cnode = refcnt_this_cnode();
	s->weight = event->attr.sample_period;
	init_task_work(&s->work, refcnt_fault_resolve);
	atomic_inc(&refcnt_fault_inflight);
	if (task_work_add(current, &s->work, TWA_RESUME)) {
		atomic_dec(&refcnt_fault_inflight);
		atomic64_inc(&refcnt_fault_feed.dropped);
		kfree(s);
	}
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
	u64 paddr = 0;

	atomic64_inc(&refcnt_pebs_feed.samples);
	if (current->mm)
		ctx.pid = task_tgid_nr(current);
	if (data->sample_flags & PERF_SAMPLE_PHYS_ADDR) {
		paddr = data->phys_addr;
	} else if (data->addr && data->addr < TASK_SIZE && current->mm) {
		struct page *page;

		if (get_user_page_fast_only(data->addr & PAGE_MASK, 0, &page)) {
			paddr = PFN_PHYS(page_to_pfn(page)) +
				(data->addr & ~PAGE_MASK);
			put_page(page);
		}
	}
	if (paddr && refcnt_reference(paddr, cnode,
				      min_t(u64, data->period, U32_MAX), &ctx)) {
		atomic64_inc(&refcnt_pebs_feed.delivered);
		return true;
	}
	atomic64_inc(&refcnt_pebs_feed.unresolved);
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
	unsigned int cpu;

	if (!feed->events)
		return;
	for (cpu = 0; cpu < nr_cpu_ids; cpu++)
		if (feed->events[cpu])
			perf_event_release_kernel(feed->events[cpu]);
	kfree(feed->events);
	feed->events = NULL;
	feed->period = 0;
}

static int refcnt_feed_start(struct refcnt_feed *feed, unsigned int period)
{
	perf_overflow_handler_t handler = refcnt_fault_overflow;
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_PAGE_FAULTS,
		.size = sizeof(attr),
		.sample_period = period,
		.exclude_kernel = 1,
	};
	unsigned int cpu;
	int err = 0;

	if (feed == &refcnt_pebs_feed) {
		handler = refcnt_pebs_overflow;
		err = refcnt_pebs_attr(&attr, period);
		if (err)
			return err;
	}
	feed->events = kcalloc(nr_cpu_ids, sizeof(*feed->events), GFP_KERNEL);
	if (!feed->events)
		return -ENOMEM;

	cpus_read_lock();
	for_each_online_cpu(cpu) {
		struct perf_event *ev;

		ev = perf_event_create_kernel_counter(&attr, cpu, NULL,
						      handler, NULL);
		if (IS_ERR(ev)) {
			err = PTR_ERR(ev);
			break;
		}
		feed->events[cpu] = ev;
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

#define REFCNT_FEED_STAT(feed, stat)					\
static ssize_t feed##_##stat##_show(struct kobject *kobj,		\
				    struct kobj_attribute *attr, char *buf) \
{									\
	return sysfs_emit(buf, "%lld\n",				\
			  atomic64_read(&refcnt_##feed##_feed.stat));	\
}									\
static struct kobj_attribute feed##_##stat##_attr = __ATTR_RO(feed##_##stat)

REFCNT_FEED_STAT(fault, samples);
REFCNT_FEED_STAT(fault, delivered);
REFCNT_FEED_STAT(fault, unresolved);
REFCNT_FEED_STAT(fault, dropped);
REFCNT_FEED_STAT(pebs, samples);
REFCNT_FEED_STAT(pebs, delivered);
REFCNT_FEED_STAT(pebs, unresolved);
REFCNT_FEED_STAT(pebs, dropped);

static struct attribute *refcnt_feed_attrs[] = {
	&fault_samples_attr.attr,
	&fault_delivered_attr.attr,
	&fault_unresolved_attr.attr,
	&fault_dropped_attr.attr,
	&pebs_samples_attr.attr,
	&pebs_delivered_attr.attr,
	&pebs_unresolved_attr.attr,
	&pebs_dropped_attr.attr,
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
	/* Queued task_works run at their tasks' next return to user space. */
	wait_event(refcnt_fault_wait, !atomic_read(&refcnt_fault_inflight));
	/* ... and leave refcnt_fault_resolve()'s preempt-disabled tail. */
	synchronize_rcu();
	sysfs_remove_group(refcnt_kobj, &refcnt_feed_group);
	kobject_put(refcnt_kobj);
}
