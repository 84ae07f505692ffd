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
/*
 * CPUs between their offline callback and the next online one: still
 * online for a while, but perf is about to detach their events, so the
 * resync must not give them new ones (they would be dead once the CPU
 * is back, and it would look covered).
 */
static cpumask_t refcnt_feed_dying;

/* The perf events' overflow handler: the event's target is its context. */
static void refcnt_feed_overflow(struct perf_event *event,
				 struct perf_sample_data *data,
				 struct pt_regs *regs)
{
	refcnt_feed_sample(event->overflow_handler_context, event, data, regs,
			   NULL);
}

/* perf's inheritance of a task's event: REFCNT_FEED_INHERIT* */
static void refcnt_feed_inherit(struct perf_event_attr *attr,
				unsigned int period, bool task,
				unsigned int inherit)
{
	attr->sample_period = period;
	if (task) {
		attr->inherit = !!inherit;
		attr->inherit_thread = inherit == REFCNT_FEED_INHERIT;
	}
}

/**
 * refcnt_feed_event_create() - make one event a feed's attr() described
 * @ev:		the event
 * @period:	its sample period
 * @cpu:	its CPU, or -1 with @task
 * @task:	its task, or NULL for a CPU's event
 * @inherit:	for a task: 0 (not inherited), REFCNT_FEED_INHERIT (by
 *		the threads it creates) or with REFCNT_FEED_INHERIT_CHILDREN
 *		(by its child processes too)
 * @overflow:	its overflow handler
 * @context:	the handler's context
 *
 * With @ev's fallback if perf refuses its attributes with -EINVAL.
 *
 * Return: the event, or an ERR_PTR().
 */
struct perf_event *refcnt_feed_event_create(const struct refcnt_feed_event *ev,
					    unsigned int period, int cpu,
					    struct task_struct *task,
					    unsigned int inherit,
					    perf_overflow_handler_t overflow,
					    void *context)
{
	struct perf_event_attr attr = ev->attr;
	struct perf_event *event;

	refcnt_feed_inherit(&attr, period, task, inherit);
	event = perf_event_create_kernel_counter(&attr, cpu, task, overflow,
						 context);
	if (!IS_ERR(event) || PTR_ERR(event) != -EINVAL || !ev->has_fallback)
		return event;
	attr = ev->fallback;
	refcnt_feed_inherit(&attr, period, task, inherit);
	return perf_event_create_kernel_counter(&attr, cpu, task, overflow,
						context);
}

/**
 * refcnt_feed_prepare() - a feed's prepare(), if it has one
 * @feed:	a feed of perf events
 * @task:	for a counting session's events, not the machine's
 * @period:	the period asked; may be rounded to what the events take
 * @setup:	set to what the events need, for attr() and finish()
 *
 * Return: 0 or the negative errno that refuses the start.
 */
int refcnt_feed_prepare(struct refcnt_feed *feed, bool task,
			unsigned int *period, void **setup)
{
	*setup = NULL;
	return feed->ops->prepare ? feed->ops->prepare(feed, task, period,
							setup) : 0;
}

/**
 * refcnt_feed_finish() - a feed's finish(), if it has one
 * @feed:	a feed of perf events
 * @task:	as given to refcnt_feed_prepare()
 * @setup:	what it made
 */
void refcnt_feed_finish(struct refcnt_feed *feed, bool task, void *setup)
{
	if (feed->ops->finish)
		feed->ops->finish(feed, task, setup);
}

/**
 * refcnt_feed_get_emulated_pmu() - a registered feed emulating a PMU
 *
 * Context: process; for a counting session's pebs_period on a machine
 * without a precise memory-sampling PMU.
 * Return: the feed a module registered with emulates_pmu (the test rig's
 * hub device), its module held, to give back with refcnt_feed_put(); or
 * NULL.
 */
struct refcnt_feed *refcnt_feed_get_emulated_pmu(void)
{
	struct refcnt_feed *feed, *found = NULL;

	mutex_lock(&refcnt_feed_lock);
	list_for_each_entry(feed, &refcnt_feeds, list)
		if (feed->emulates_pmu && feed->registered &&
		    try_module_get(feed->owner)) {
			found = feed;
			break;
		}
	mutex_unlock(&refcnt_feed_lock);
	return found;
}

/**
 * refcnt_feed_put() - give back refcnt_feed_get_emulated_pmu()'s feed
 * @feed:	the feed
 */
void refcnt_feed_put(struct refcnt_feed *feed)
{
	module_put(feed->owner);
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
 * Return: 0, REFCNT_FEED_NO_EVENT (the CPU has none: it is skipped) or
 * a negative errno.
 */
static int refcnt_feed_cpu_start(struct refcnt_feed *feed, unsigned int cpu,
				 unsigned int period)
{
	unsigned int k, i = cpu * feed->nr_events;
	struct refcnt_feed_event ev;
	int err;

	for (k = 0; k < feed->nr_events; k++, i++) {
		struct perf_event *event;

		err = feed->ops->attr(feed, feed->setup, cpu, k, &ev);
		if (err == REFCNT_FEED_NO_EVENT && !k) {
			cpumask_set_cpu(cpu, &feed->skipped);
			return err;
		}
		if (err == REFCNT_FEED_NO_EVENT)
			break;
		if (err)
			return err;
		feed->targets[i] = (struct refcnt_feed_target){
			.feed = feed, .stream = ev.stream,
		};
		event = refcnt_feed_event_create(&ev, period, cpu, NULL, 0,
						 refcnt_feed_overflow,
						 &feed->targets[i]);
		if (IS_ERR(event))
			return PTR_ERR(event);
		feed->events[i] = event;
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
	kfree(feed->targets);
	feed->events = NULL;
	feed->targets = NULL;
	feed->period = 0;
	refcnt_feed_finish(feed, false, feed->setup);
	feed->setup = NULL;
}

/*
 * Give every online CPU that has none its events. A CPU going offline
 * meanwhile refuses them (-ENODEV) and is left to the resync its offline
 * callback queues; one without such events is left out, in @feed->skipped.
 * Called with refcnt_feed_lock held.
 */
static int refcnt_feed_cover(struct refcnt_feed *feed, unsigned int period)
{
	unsigned int cpu;
	int err;

	for_each_online_cpu(cpu) {
		if (cpumask_test_cpu(cpu, &feed->cpus) ||
		    cpumask_test_cpu(cpu, &feed->skipped) ||
		    cpumask_test_cpu(cpu, &refcnt_feed_dying))
			continue;
		err = refcnt_feed_cpu_start(feed, cpu, period);
		if (err == REFCNT_FEED_NO_EVENT)
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
	size_t n = nr_cpu_ids * feed->nr_events;
	int err;

	err = refcnt_feed_prepare(feed, false, &period, &feed->setup);
	if (err)
		return err;
	feed->events = kcalloc(n, sizeof(*feed->events), GFP_KERNEL);
	feed->targets = kcalloc(n, sizeof(*feed->targets), GFP_KERNEL);
	if (!feed->events || !feed->targets) {
		kfree(feed->events);
		kfree(feed->targets);
		feed->events = NULL;
		feed->targets = NULL;
		refcnt_feed_finish(feed, false, feed->setup);
		feed->setup = NULL;
		return -ENOMEM;
	}
	err = refcnt_feed_cover(feed, period);
	/* Every CPU left out: the machine has no such events. */
	if (!err && cpumask_empty(&feed->cpus))
		err = -EOPNOTSUPP;
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
	cpumask_clear_cpu(cpu, &refcnt_feed_dying);
	queue_work(system_unbound_wq, &refcnt_feed_resync_work);
	return 0;
}

static int refcnt_feed_cpu_offline(unsigned int cpu)
{
	/* Marked before queued: the resync that follows releases them. */
	cpumask_set_cpu(cpu, &refcnt_feed_dying);
	cpumask_set_cpu(cpu, &refcnt_feed_gone);
	queue_work(system_unbound_wq, &refcnt_feed_resync_work);
	return 0;
}

/**
 * refcnt_feed_start_error() - the errno a feed gives for a failed start
 * @feed:	a feed of perf events
 * @err:	what perf, attr() or prepare() said when its events were made
 * @why:	if not NULL, set to the reason for dmesg, or NULL for none
 *
 * Return: the errno for the caller of the feed, as its start_error
 * operation maps it (-EOPNOTSUPP: the machine cannot run the feed).
 */
int refcnt_feed_start_error(struct refcnt_feed *feed, int err,
			    const char **why)
{
	const char *w = NULL;

	if (feed->ops->start_error)
		err = feed->ops->start_error(feed, err, &w);
	if (why)
		*why = w;
	return err;
}

/* @feed could not start: one line in dmesg; the errno to give. */
static int refcnt_feed_refused(struct refcnt_feed *feed, int err)
{
	const char *why;
	int mapped = refcnt_feed_start_error(feed, err, &why);

	if (!why && mapped == -EOPNOTSUPP)
		why = feed->unsupported;
	pr_warn("%s feed: %s (%d)\n", feed->name, why ?: "cannot start", err);
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

/**
 * refcnt_feed_restart() - start a running feed again, with new settings
 * @feed:	a feed of perf events
 *
 * For a feed's own settings beside its period: its prepare() takes them
 * at each start. A feed that is off stays off.
 *
 * Return: 0, or the errno of a failed restart (the feed then runs as
 * before, as refcnt_feed_set() leaves it).
 */
int refcnt_feed_restart(struct refcnt_feed *feed)
{
	unsigned int period = READ_ONCE(feed->period);

	return period ? refcnt_feed_set(feed, period) : 0;
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

/*
 * The statistics files, in the order of struct refcnt_feed_stats (the
 * precise samples' three last), then the CPU lists of perf events.
 */
#define REFCNT_FEED_PRECISE	3
#define REFCNT_FEED_CPUS	6
static const char *const refcnt_feed_file_names[] = {
	"samples", "delivered", "unresolved", "kernel", "noaddr", "cached",
	"cpus", "skipped",
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

/*
 * The CPUs a feed samples now, or leaves out (no such events there), as
 * a CPU list ("0-1,3"), empty when off.
 */
static ssize_t refcnt_feed_cpus_show(struct kobject *kobj,
				     struct kobj_attribute *kattr, char *buf)
{
	const struct refcnt_feed_attr *a =
		container_of(kattr, struct refcnt_feed_attr, kattr);
	const struct refcnt_feed *feed = a->feed;
	ssize_t len;

	flush_work(&refcnt_feed_resync_work);
	mutex_lock(&refcnt_feed_lock);
	len = sysfs_emit(buf, "%*pbl\n",
			 cpumask_pr_args(a - feed->attrs == REFCNT_FEED_CPUS ?
					 &feed->cpus : &feed->skipped));
	mutex_unlock(&refcnt_feed_lock);
	return len;
}

/*
 * <name>_samples, _delivered, _unresolved; _kernel, _noaddr and _cached
 * for precise samples; _cpus and _skipped for perf events.
 */
static void refcnt_feed_attrs_init(struct refcnt_feed *feed)
{
	unsigned int i, n = 0;

	BUILD_BUG_ON(sizeof(struct refcnt_feed_stats) !=
		     REFCNT_FEED_CPUS * sizeof(u64));
	BUILD_BUG_ON(ARRAY_SIZE(refcnt_feed_file_names) !=
		     ARRAY_SIZE(feed->attrs));
	for (i = 0; i < ARRAY_SIZE(feed->attrs); i++) {
		struct refcnt_feed_attr *a = &feed->attrs[i];

		if ((i >= REFCNT_FEED_PRECISE && i < REFCNT_FEED_CPUS &&
		     !feed->precise) || (i >= REFCNT_FEED_CPUS && !feed->ops))
			continue;
		snprintf(a->name, sizeof(a->name), "%s_%s", feed->name,
			 refcnt_feed_file_names[i]);
		sysfs_attr_init(&a->kattr.attr);
		a->kattr.attr.name = a->name;
		a->kattr.attr.mode = 0444;
		a->kattr.show = i >= REFCNT_FEED_CPUS ? refcnt_feed_cpus_show :
							 refcnt_feed_stat_show;
		a->feed = feed;
		feed->attr_ptrs[n++] = &a->kattr.attr;
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
			   !feed->ops->describe || !feed->nr_events ||
			   feed->nr_task_events > REFCNT_FEED_TASK_EVENTS)) ||
	    (feed->device && (feed->ops || !feed->owner ||
			      !feed->device->position || !feed->device->hold ||
			      !feed->device->sync || !feed->device->period)) ||
	    (feed->emulates_pmu && (!feed->ops || !feed->owner)))
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
 * Whether the machine can make a feed's perf events: what a session's
 * prepare() says (the PMU feed's planners), then a disabled event on the
 * first CPU, once. Under refcnt_feed_lock.
 */
static bool refcnt_feed_present(struct refcnt_feed *feed)
{
	int cpu = cpumask_first(cpu_online_mask);
	unsigned int period = 1000003;
	struct refcnt_feed_event fe;
	struct perf_event *ev;
	void *setup;
	int err;

	if (feed->present >= 0)
		return feed->present;
	/* Running machine-wide, or holding the PMU against sessions. */
	if (feed->period)
		return true;
	err = refcnt_feed_prepare(feed, true, &period, &setup);
	if (err == -EBUSY)
		return true;
	feed->present = 0;
	if (err)
		return false;
	err = feed->ops->attr(feed, setup, cpu, 0, &fe);
	fe.attr.disabled = 1;
	ev = err ? NULL : refcnt_feed_event_create(&fe, period, cpu, NULL, 0,
						   NULL, NULL);
	refcnt_feed_finish(feed, true, setup);
	if (IS_ERR_OR_NULL(ev))
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
	} else if (feed->ops && !feed->emulates_pmu) {
		fi->period = feed->period;
		on = feed->period;
		/* The feeds a session names by a period of struct rcb_count. */
		if (feed == &refcnt_fault_feed || feed == &refcnt_pebs_feed)
			fi->caps |= RCB_FEED_SESSION;
		if (refcnt_feed_present(feed))
			fi->state |= RCB_FEED_PRESENT;
	} else {
		/* Delivers by itself (an emulated PMU's drain too). */
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
 * @group:	files of /sys/kernel/refcnt besides the feeds'
 *
 * Context: module load. From here on feeds may register, and those of
 * perf events follow CPUs coming online and going offline.
 * Return: 0 or a negative errno.
 */
int refcnt_feeds_init(const struct attribute_group *group)
{
	struct kobject *kobj;
	int err;

	kobj = kobject_create_and_add("refcnt", kernel_kobj);
	if (!kobj)
		return -ENOMEM;
	err = sysfs_create_group(kobj, group);
	if (err) {
		kobject_put(kobj);
		return err;
	}
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
