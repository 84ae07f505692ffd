// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the feeds' registry.
 *
 * A feed registers its struct refcnt_feed (feed.h); the registry knows no
 * feed by name. It keeps every feed's statistics per CPU and shows them in
 * /sys/kernel/refcnt/<feed>_<statistic>, with the feed's own files beside
 * them. A feed of perf events (one with operations) is turned on and off
 * at a period through refcnt_feed_set() (behind the feed's module
 * parameter, refcnt_feed_period_ops): the registry makes its events on
 * every online CPU, follows CPUs as they come online and go offline, and
 * sends their samples to the feed's sample operation.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/kobject.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "refcnt.h"
#include "feed.h"
#include "session.h"

/* Serialises registration and turning feeds on and off. */
static DEFINE_MUTEX(refcnt_feed_lock);
/* The registered feeds, under refcnt_feed_lock. */
static LIST_HEAD(refcnt_feeds);
/* /sys/kernel/refcnt, while the registry is up. */
static struct kobject *refcnt_kobj;
/* The CPU hotplug state our callbacks hold (dynamic: > 0). */
static int refcnt_feed_cpuhp;
/* CPUs that went offline since the last resync: their events are dead. */
static cpumask_t refcnt_feed_gone;

/* The perf events' overflow handler: the feed is the handler's context. */
static void refcnt_feed_overflow(struct perf_event *event,
				 struct perf_sample_data *data,
				 struct pt_regs *regs)
{
	refcnt_feed_sample(event->overflow_handler_context, event, data, regs,
			   NULL);
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
}

/*
 * Make @feed's events on the online @cpu, sampling every @period. On
 * failure the caller releases those made with refcnt_feed_cpu_stop().
 */
static int refcnt_feed_cpu_start(struct refcnt_feed *feed, unsigned int cpu,
				 unsigned int period)
{
	struct perf_event_attr attr;
	unsigned int k;
	int err;

	for (k = 0; k < feed->nr_events; k++) {
		struct perf_event *ev;

		err = feed->ops->attr(feed, cpu, k, &attr);
		if (err)
			return err;
		attr.sample_period = period;
		ev = perf_event_create_kernel_counter(&attr, cpu, NULL,
						      refcnt_feed_overflow,
						      feed);
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
}

/*
 * Give every online CPU that has none its events. A CPU going offline
 * meanwhile refuses them (-ENODEV) and is left to the resync its offline
 * callback queues. Called with refcnt_feed_lock held.
 */
static int refcnt_feed_cover(struct refcnt_feed *feed, unsigned int period)
{
	unsigned int cpu;
	int err;

	for_each_online_cpu(cpu) {
		if (cpumask_test_cpu(cpu, &feed->cpus))
			continue;
		err = refcnt_feed_cpu_start(feed, cpu, period);
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
	err = refcnt_feed_cover(feed, period);
	if (err) {
		refcnt_feed_stop(feed);
		return err;
	}
	feed->period = period;
	return 0;
}

/*
 * After CPUs came online or went offline: release the events of those
 * that went offline (perf detached them) and give the online ones that
 * have none theirs. A CPU the feed cannot sample (no memory, no PMU on
 * it) is left out, as the feed's <name>_cpus file shows, and dmesg says
 * why.
 */
static void refcnt_feed_resync(struct work_struct *work)
{
	struct refcnt_feed *feed;
	unsigned int cpu;
	int err;

	mutex_lock(&refcnt_feed_lock);
	for_each_possible_cpu(cpu) {
		bool gone = cpumask_test_and_clear_cpu(cpu, &refcnt_feed_gone);

		list_for_each_entry(feed, &refcnt_feeds, list)
			if (feed->events && (gone || !cpu_online(cpu)))
				refcnt_feed_cpu_stop(feed, cpu);
	}
	list_for_each_entry(feed, &refcnt_feeds, list) {
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

/**
 * refcnt_feed_start_error() - the errno a feed gives for a failed event
 * @feed:	a feed of perf events
 * @err:	what perf said when one of its events was made
 *
 * Return: the errno for the caller of the feed, as its start_error
 * operation maps it (-EOPNOTSUPP: the machine cannot run the feed).
 */
int refcnt_feed_start_error(struct refcnt_feed *feed, int err)
{
	return feed->ops->start_error ? feed->ops->start_error(feed, err) :
					err;
}

/* @feed could not start: one line in dmesg; the errno to give. */
static int refcnt_feed_refused(struct refcnt_feed *feed, int err)
{
	int mapped = refcnt_feed_start_error(feed, err);

	if (mapped == -EOPNOTSUPP && feed->unsupported)
		pr_warn("%s feed: %s (%d)\n", feed->name, feed->unsupported,
			err);
	else
		pr_warn("%s feed: cannot start (%d)\n", feed->name, err);
	return mapped;
}

/**
 * refcnt_feed_set() - turn a feed of perf events on, off, or to a period
 * @feed:	the feed
 * @period:	events per sample, 0 for off
 *
 * Before the feed is registered, only the period is kept: registration
 * starts it. A failed change changes nothing: the feed runs at its
 * previous period (off, in the rare case that it could not be made
 * again either).
 *
 * Return: 0, or a negative errno (-EOPNOTSUPP: the machine has no such
 * events), with one line in dmesg; -EINVAL for a feed without events.
 */
int refcnt_feed_set(struct refcnt_feed *feed, unsigned int period)
{
	unsigned int old;
	int err = 0;

	if (!feed->ops)
		return -EINVAL;
	mutex_lock(&refcnt_feed_lock);
	if (!feed->registered) {
		feed->period = period;
		mutex_unlock(&refcnt_feed_lock);
		return 0;
	}
	old = feed->period;
	refcnt_feed_stop(feed);
	if (period)
		err = refcnt_feed_start(feed, period);
	if (err && old)
		refcnt_feed_start(feed, old);
	mutex_unlock(&refcnt_feed_lock);
	return err ? refcnt_feed_refused(feed, err) : 0;
}

static int refcnt_feed_period_set(const char *val,
				  const struct kernel_param *kp)
{
	unsigned int period;
	int err;

	err = kstrtouint(val, 0, &period);
	if (err)
		return err;
	return refcnt_feed_set(kp->arg, period);
}

static int refcnt_feed_period_get(char *buf, const struct kernel_param *kp)
{
	const struct refcnt_feed *feed = kp->arg;

	return scnprintf(buf, PAGE_SIZE, "%u\n", READ_ONCE(feed->period));
}

/*
 * The module parameter of a feed of perf events (its kernel_param's arg
 * is the feed): reads its period, writes refcnt_feed_set().
 */
const struct kernel_param_ops refcnt_feed_period_ops = {
	.set = refcnt_feed_period_set,
	.get = refcnt_feed_period_get,
};

/* The statistics files, in the order of struct refcnt_feed_stats. */
#define REFCNT_FEED_CPUS	3
static const char *const refcnt_feed_stat_names[] = {
	"samples", "delivered", "unresolved", "cpus",
};

/* A feed's statistics summed over the CPUs: exact once the feed is quiet. */
static ssize_t refcnt_feed_stat_show(struct kobject *kobj,
				     struct kobj_attribute *kattr, char *buf)
{
	const struct refcnt_feed_attr *a =
		container_of(kattr, struct refcnt_feed_attr, kattr);
	const struct refcnt_feed *feed = a->feed;
	unsigned int stat = a - feed->attrs;
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu) {
		const u64 *s = (const u64 *)per_cpu_ptr(feed->stats, cpu);

		sum += READ_ONCE(s[stat]);
	}
	return sysfs_emit(buf, "%llu\n", sum);
}

/* The CPUs a feed samples now, as a CPU list ("0-1,3"), empty when off. */
static ssize_t refcnt_feed_cpus_show(struct kobject *kobj,
				     struct kobj_attribute *kattr, char *buf)
{
	const struct refcnt_feed_attr *a =
		container_of(kattr, struct refcnt_feed_attr, kattr);
	ssize_t len;

	flush_work(&refcnt_feed_resync_work);
	mutex_lock(&refcnt_feed_lock);
	len = sysfs_emit(buf, "%*pbl\n", cpumask_pr_args(&a->feed->cpus));
	mutex_unlock(&refcnt_feed_lock);
	return len;
}

/* <name>_samples, _delivered, _unresolved, and _cpus for perf events. */
static void refcnt_feed_attrs_init(struct refcnt_feed *feed)
{
	unsigned int i, n = feed->ops ? REFCNT_FEED_CPUS + 1 : REFCNT_FEED_CPUS;

	BUILD_BUG_ON(sizeof(struct refcnt_feed_stats) !=
		     REFCNT_FEED_CPUS * sizeof(u64));
	BUILD_BUG_ON(ARRAY_SIZE(refcnt_feed_stat_names) !=
		     ARRAY_SIZE(feed->attrs));
	for (i = 0; i < n; i++) {
		struct refcnt_feed_attr *a = &feed->attrs[i];

		snprintf(a->name, sizeof(a->name), "%s_%s", feed->name,
			 refcnt_feed_stat_names[i]);
		sysfs_attr_init(&a->kattr.attr);
		a->kattr.attr.name = a->name;
		a->kattr.attr.mode = 0444;
		a->kattr.show = i == REFCNT_FEED_CPUS ? refcnt_feed_cpus_show :
							 refcnt_feed_stat_show;
		a->feed = feed;
		feed->attr_ptrs[i] = &a->kattr.attr;
	}
	feed->attr_ptrs[n] = NULL;
	feed->stats_group.attrs = feed->attr_ptrs;
}

/* A registered feed of that name, under refcnt_feed_lock. */
static bool refcnt_feed_name_taken(const char *name)
{
	struct refcnt_feed *feed;

	list_for_each_entry(feed, &refcnt_feeds, list)
		if (!strcmp(feed->name, name))
			return true;
	return false;
}

/* The files of a registered feed, made outside refcnt_feed_lock. */
static int refcnt_feed_files(struct refcnt_feed *feed)
{
	int err;

	err = sysfs_create_group(refcnt_kobj, &feed->stats_group);
	if (err || !feed->group)
		return err;
	err = sysfs_create_group(refcnt_kobj, feed->group);
	if (err)
		sysfs_remove_group(refcnt_kobj, &feed->stats_group);
	return err;
}

static void refcnt_feed_files_remove(struct refcnt_feed *feed)
{
	if (feed->group)
		sysfs_remove_group(refcnt_kobj, feed->group);
	sysfs_remove_group(refcnt_kobj, &feed->stats_group);
}

/*
 * The feed is registered from now on, and a feed of perf events given a
 * period before starts.
 */
static void refcnt_feed_go(struct refcnt_feed *feed)
{
	unsigned int period;
	int err = 0;

	mutex_lock(&refcnt_feed_lock);
	feed->registered = true;
	period = feed->period;
	feed->period = 0;
	if (feed->ops && period)
		err = refcnt_feed_start(feed, period);
	mutex_unlock(&refcnt_feed_lock);
	if (err)
		refcnt_feed_refused(feed, err);
}

/**
 * refcnt_feed_register() - add a feed: its statistics, files and events
 * @feed:	the feed, with @name, and @ops and @nr_events for a feed of
 *		perf events, filled in; the rest zero
 *
 * Its statistics and files appear in /sys/kernel/refcnt. A feed of perf
 * events given a period before (its module parameter, at load) starts;
 * if the machine cannot run it, it stays off, with one line in dmesg, and
 * registration still succeeds. Process context.
 *
 * Return: 0, or -EINVAL for a feed without a name or one too long,
 * -EEXIST when a feed of that name is registered, -ENODEV when refcnt.ko
 * is not up, -ENOMEM.
 */
int refcnt_feed_register(struct refcnt_feed *feed)
{
	int err = 0;

	if (!feed->name || !*feed->name ||
	    strlen(feed->name) > REFCNT_FEED_NAME_MAX ||
	    (feed->ops && (!feed->ops->attr || !feed->ops->sample ||
			   !feed->ops->describe || !feed->nr_events)) ||
	    (feed->device && (feed->ops || !feed->owner ||
			      !feed->device->position || !feed->device->hold ||
			      !feed->device->sync || !feed->device->period)))
		return -EINVAL;
	feed->present = -1;
	feed->holds = 0;
	feed->stats = alloc_percpu(struct refcnt_feed_stats);
	if (!feed->stats)
		return -ENOMEM;
	if (feed->device && refcnt_feed_spans_alloc(feed)) {
		free_percpu(feed->stats);
		feed->stats = NULL;
		return -ENOMEM;
	}
	refcnt_feed_attrs_init(feed);
	mutex_lock(&refcnt_feed_lock);
	if (!refcnt_kobj)
		err = -ENODEV;
	else if (refcnt_feed_name_taken(feed->name))
		err = -EEXIST;
	else
		list_add_tail(&feed->list, &refcnt_feeds);
	mutex_unlock(&refcnt_feed_lock);
	if (!err) {
		err = refcnt_feed_files(feed);
		if (err) {
			mutex_lock(&refcnt_feed_lock);
			list_del(&feed->list);
			mutex_unlock(&refcnt_feed_lock);
		}
	}
	if (err) {
		refcnt_feed_spans_free(feed);
		free_percpu(feed->stats);
		feed->stats = NULL;
		return err;
	}
	refcnt_feed_go(feed);
	return 0;
}
EXPORT_SYMBOL_NS_GPL(refcnt_feed_register, REFCNT_NS);

/**
 * refcnt_feed_unregister() - remove a feed
 * @feed:	a registered feed
 *
 * Its files go (waiting for readers), its events are released, and
 * samples still being delivered on other CPUs are waited for, so that
 * the feed's module may go once this returns. Process context.
 */
void refcnt_feed_unregister(struct refcnt_feed *feed)
{
	refcnt_feed_files_remove(feed);
	mutex_lock(&refcnt_feed_lock);
	feed->registered = false;
	list_del(&feed->list);
	if (feed->ops)
		refcnt_feed_stop(feed);
	mutex_unlock(&refcnt_feed_lock);
	/*
	 * A software event's handler runs with preemption off, and so does
	 * a caller of the delivery functions in NMI or with interrupts off:
	 * wait for those still running on another CPU.
	 */
	synchronize_rcu();
	refcnt_feed_spans_free(feed);
	free_percpu(feed->stats);
	feed->stats = NULL;
}
EXPORT_SYMBOL_NS_GPL(refcnt_feed_unregister, REFCNT_NS);

/* Most feeds RCB_FEEDS_GET describes in one call. */
#define REFCNT_FEEDS_MAX	64

/* Let go of a device feed a session held. Under refcnt_feed_lock. */
static void refcnt_feed_unhold(struct refcnt_feed *feed)
{
	if (!--feed->holds)
		feed->device->hold(feed, false);
	module_put(feed->owner);
}

/**
 * refcnt_feeds_hold() - a session holds every device feed there is
 * @held:	filled in with the feeds held
 * @max:	room in @held
 *
 * Each feed held delivers records from now on, and its module stays.
 * Feeds without a device now are left out. Process context.
 *
 * Return: the feeds held, or a negative errno (none held then).
 */
int refcnt_feeds_hold(struct refcnt_feed **held, unsigned int max)
{
	struct refcnt_feed *feed;
	unsigned int n = 0;
	int err = 0;

	mutex_lock(&refcnt_feed_lock);
	list_for_each_entry(feed, &refcnt_feeds, list) {
		if (!feed->device || n == max || !try_module_get(feed->owner))
			continue;
		if (!feed->holds)
			err = feed->device->hold(feed, true);
		if (err) {
			module_put(feed->owner);
			if (err == -ENODEV) {
				err = 0;
				continue;
			}
			break;
		}
		feed->holds++;
		held[n++] = feed;
	}
	if (err)
		while (n)
			refcnt_feed_unhold(held[--n]);
	mutex_unlock(&refcnt_feed_lock);
	return err ?: n;
}

/**
 * refcnt_feeds_release() - a session lets go of the device feeds it held
 * @held:	the feeds, from refcnt_feeds_hold()
 * @n:		how many
 */
void refcnt_feeds_release(struct refcnt_feed **held, unsigned int n)
{
	mutex_lock(&refcnt_feed_lock);
	while (n)
		refcnt_feed_unhold(held[--n]);
	mutex_unlock(&refcnt_feed_lock);
}

/*
 * Whether the machine can make a feed's perf events: a disabled one on
 * the first CPU, once. Under refcnt_feed_lock.
 */
static bool refcnt_feed_present(struct refcnt_feed *feed)
{
	int cpu = cpumask_first(cpu_online_mask);
	struct perf_event_attr attr;
	struct perf_event *ev;

	if (feed->present >= 0)
		return feed->present;
	feed->present = 0;
	if (feed->ops->attr(feed, cpu, 0, &attr))
		return false;
	attr.disabled = 1;
	attr.sample_period = 1000003;
	ev = perf_event_create_kernel_counter(&attr, cpu, NULL, NULL, NULL);
	if (IS_ERR(ev))
		return false;
	perf_event_release_kernel(ev);
	feed->present = 1;
	return true;
}

/* One feed as RCB_FEEDS_GET describes it. Under refcnt_feed_lock. */
static void refcnt_feed_info(struct refcnt_feed *feed,
			     struct rcb_feed_info *fi)
{
	bool on = false;

	memset(fi, 0, sizeof(*fi));
	strscpy(fi->name, feed->name, sizeof(fi->name));
	fi->caps = feed->caps & (RCB_FEED_DATA_ADDR | RCB_FEED_INSTR_ADDR |
				 RCB_FEED_LOADS | RCB_FEED_STORES);
	if (feed->device) {
		fi->period = feed->device->period(feed, &on);
		fi->caps |= RCB_FEED_SESSION | RCB_FEED_DEVICE;
		if (fi->period)
			fi->state |= RCB_FEED_PRESENT;
	} else if (feed->ops) {
		fi->period = feed->period;
		on = feed->period;
		/* The feeds a session names by a period of struct rcb_count. */
		if (feed == &refcnt_fault_feed || feed == &refcnt_pebs_feed)
			fi->caps |= RCB_FEED_SESSION;
		if (refcnt_feed_present(feed))
			fi->state |= RCB_FEED_PRESENT;
	} else {
		fi->state |= RCB_FEED_PRESENT;
	}
	if (on)
		fi->state |= RCB_FEED_ON;
}

/**
 * refcnt_feeds_get() - RCB_FEEDS_GET: the feeds and what they carry
 * @argp:	user pointer to struct rcb_feeds_query
 *
 * Return: 0 or a negative errno.
 */
long refcnt_feeds_get(void __user *argp)
{
	struct rcb_feeds_query q;
	struct rcb_feed_info *fi;
	struct refcnt_feed *feed;
	u32 n = 0, cap;
	int err = 0;

	if (copy_from_user(&q, argp, sizeof(q)))
		return -EFAULT;
	if (q.flags || q.reserved)
		return -EINVAL;
	/* Filled under the lock, copied out after it: feeds are few. */
	cap = min_t(u32, q.nr_feeds, REFCNT_FEEDS_MAX);
	fi = kcalloc(max(cap, 1U), sizeof(*fi), GFP_KERNEL);
	if (!fi)
		return -ENOMEM;
	mutex_lock(&refcnt_feed_lock);
	list_for_each_entry(feed, &refcnt_feeds, list) {
		if (n < cap)
			refcnt_feed_info(feed, &fi[n]);
		n++;
	}
	mutex_unlock(&refcnt_feed_lock);
	if (copy_to_user(u64_to_user_ptr(q.feeds), fi,
			 min(n, cap) * sizeof(*fi)))
		err = -EFAULT;
	kfree(fi);
	if (err)
		return err;
	q.nr_feeds = n;
	return copy_to_user(argp, &q, sizeof(q)) ? -EFAULT : 0;
}

/**
 * refcnt_feeds_init() - the registry: /sys/kernel/refcnt, CPU hotplug
 *
 * Context: module load. From here on feeds may register, and those of
 * perf events follow CPUs coming online and going offline.
 * Return: 0 or a negative errno.
 */
int refcnt_feeds_init(void)
{
	struct kobject *kobj;
	int err;

	kobj = kobject_create_and_add("refcnt", kernel_kobj);
	if (!kobj)
		return -ENOMEM;
	/* No feed is on yet: nothing to call for the CPUs online now. */
	err = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "refcnt/feed:online",
					refcnt_feed_cpu_online,
					refcnt_feed_cpu_offline);
	if (err < 0) {
		kobject_put(kobj);
		return err;
	}
	refcnt_feed_cpuhp = err;
	mutex_lock(&refcnt_feed_lock);
	refcnt_kobj = kobj;
	mutex_unlock(&refcnt_feed_lock);
	return 0;
}

/**
 * refcnt_feeds_exit() - take the registry down, every feed unregistered
 */
void refcnt_feeds_exit(void)
{
	struct kobject *kobj;

	/* Waits for a CPU going on- or offline; none follows. */
	cpuhp_remove_state_nocalls(refcnt_feed_cpuhp);
	flush_work(&refcnt_feed_resync_work);
	mutex_lock(&refcnt_feed_lock);
	WARN_ON(!list_empty(&refcnt_feeds));
	kobj = refcnt_kobj;
	refcnt_kobj = NULL;
	mutex_unlock(&refcnt_feed_lock);
	kobject_put(kobj);
}
