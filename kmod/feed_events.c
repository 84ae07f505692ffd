// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the perf events of a feed that has operations (struct
 * refcnt_feed_ops): made on every online CPU at a period through
 * refcnt_feed_set() (behind the feed's module parameter,
 * refcnt_feed_period_ops) and released, their samples sent to the feed's
 * sample operation. The same operations make a counting session's events
 * per task (refcnt_feed_event_create()). CPUs coming and going are
 * feed_hotplug.c's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/perf_event.h>
#include <linux/slab.h>

#include "refcnt.h"
#include "feed.h"
#include "feed_registry.h"

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
 * @ev:		the event, as attr() just filled it in; its attributes take
 *		@period and @inherit here, not in a copy on the stack under
 *		perf's own deep calls
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
struct perf_event *refcnt_feed_event_create(struct refcnt_feed_event *ev,
					    unsigned int period, int cpu,
					    struct task_struct *task,
					    unsigned int inherit,
					    perf_overflow_handler_t overflow,
					    void *context)
{
	struct perf_event *event;

	refcnt_feed_inherit(&ev->attr, period, task, inherit);
	event = perf_event_create_kernel_counter(&ev->attr, cpu, task,
						 overflow, context);
	if (!IS_ERR(event) || PTR_ERR(event) != -EINVAL || !ev->has_fallback)
		return event;
	refcnt_feed_inherit(&ev->fallback, period, task, inherit);
	return perf_event_create_kernel_counter(&ev->fallback, cpu, task,
						overflow, context);
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

/* Release @feed's events on @cpu, if it has any. */
void refcnt_feed_cpu_stop(struct refcnt_feed *feed, unsigned int cpu)
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
 * Make @feed's events on the online @cpu, sampling every @period, each
 * described in @ev. On failure the caller releases those made with
 * refcnt_feed_cpu_stop().
 * Return: 0, REFCNT_FEED_NO_EVENT (the CPU has none: it is skipped) or
 * a negative errno.
 */
static int refcnt_feed_cpu_start(struct refcnt_feed *feed, unsigned int cpu,
				 unsigned int period,
				 struct refcnt_feed_event *ev)
{
	unsigned int k, i = cpu * feed->nr_events;
	int err;

	for (k = 0; k < feed->nr_events; k++, i++) {
		struct perf_event *event;

		err = feed->ops->attr(feed, feed->setup, cpu, k, ev);
		if (err == REFCNT_FEED_NO_EVENT && !k) {
			cpumask_set_cpu(cpu, &feed->skipped);
			return err;
		}
		if (err == REFCNT_FEED_NO_EVENT)
			break;
		if (err)
			return err;
		feed->targets[i] = (struct refcnt_feed_target){
			.feed = feed, .stream = ev->stream,
		};
		event = refcnt_feed_event_create(ev, period, cpu, NULL, 0,
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
void refcnt_feed_stop(struct refcnt_feed *feed)
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
int refcnt_feed_cover(struct refcnt_feed *feed, unsigned int period)
{
	struct refcnt_feed_event *ev;
	unsigned int cpu;
	int err = 0;

	/* Off the stack: two perf_event_attr, under perf's own deep calls. */
	ev = kmalloc(sizeof(*ev), GFP_KERNEL);
	if (!ev)
		return -ENOMEM;
	for_each_online_cpu(cpu) {
		if (cpumask_test_cpu(cpu, &feed->cpus) ||
		    cpumask_test_cpu(cpu, &feed->skipped) ||
		    refcnt_feed_cpu_dying(cpu))
			continue;
		err = refcnt_feed_cpu_start(feed, cpu, period, ev);
		if (err == REFCNT_FEED_NO_EVENT) {
			err = 0;
			continue;
		}
		if (err)
			refcnt_feed_cpu_stop(feed, cpu);
		/* -ENODEV may also mean no such PMU: only skip a gone CPU. */
		if (err && (err != -ENODEV || cpu_online(cpu)))
			break;
		err = 0;
	}
	kfree(ev);
	return err;
}

/*
 * Called with refcnt_feed_lock held, never the CPU hotplug lock: making
 * and releasing software events takes it (their static keys).
 */
int refcnt_feed_start(struct refcnt_feed *feed, unsigned int period)
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
int refcnt_feed_refused(struct refcnt_feed *feed, int err)
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
 * Whether the machine can make a feed's perf events: what a session's
 * prepare() says (the PMU feed's planners), then a disabled event on the
 * first CPU, once. Under refcnt_feed_lock.
 */
bool refcnt_feed_present(struct refcnt_feed *feed)
{
	int cpu = cpumask_first(cpu_online_mask);
	unsigned int period = 1000003;
	struct refcnt_feed_event *fe;
	struct perf_event *ev = NULL;
	void *setup;
	int err;

	if (feed->present >= 0)
		return feed->present;
	/* Running machine-wide, or holding the PMU against sessions. */
	if (feed->period)
		return true;
	/* Off the stack, as refcnt_feed_cover()'s; asked again next time. */
	fe = kmalloc(sizeof(*fe), GFP_KERNEL);
	if (!fe)
		return false;
	err = refcnt_feed_prepare(feed, true, &period, &setup);
	if (err == -EBUSY) {
		kfree(fe);
		return true;
	}
	feed->present = 0;
	if (!err) {
		err = feed->ops->attr(feed, setup, cpu, 0, fe);
		fe->attr.disabled = 1;
		ev = err ? NULL : refcnt_feed_event_create(fe, period, cpu,
							   NULL, 0, NULL,
							   NULL);
		refcnt_feed_finish(feed, true, setup);
	}
	kfree(fe);
	if (IS_ERR_OR_NULL(ev))
		return false;
	perf_event_release_kernel(ev);
	feed->present = 1;
	return true;
}
