// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: counting one process (RCB_COUNT_START), refcnt(5)'s counting
 * enabled for one application instead of the whole machine.
 *
 * A counting session is a file of its own (an anonymous inode). The fault
 * and PEBS/IBS feeds run as perf events of each thread the process has
 * (cpu -1: they follow the thread), inherited by the threads it creates
 * and, with RCB_COUNT_CHILDREN, by its child processes: perf gives an
 * inherited event the overflow handler and context of its parent. The
 * handler runs the samples through the machine-wide feed's own sample
 * code, with the session's ranges. A feed prepares each session's events
 * as it does its machine-wide ones (the PEBS/IBS feed: one set per core
 * PMU, and the PMU held against the machine-wide feed). Without a PMU, a
 * PMU a module emulates (the test rig's hub device) takes pebs_period.
 *
 * The last close of the file releases the events, inherited ones too,
 * then waits out handlers still running before the session is freed:
 * software events are found under RCU, and NMIs are RCU read-side
 * sections. The file holds a reference on the module, so the module
 * cannot be unloaded while a session is open.
 *
 * perf switches a static key of the page-fault path on when the first
 * fault event of the machine is made and off when the last one goes,
 * rewriting kernel text each time, while other CPUs fault through it.
 * Sessions come and go often, so the first one pins those keys on with
 * a disabled event of each kind, kept until the module is unloaded.
 */
#include <linux/anon_inodes.h>
#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/fcntl.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/perf_event.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <uapi/linux/refcnt.h>

#include "refcnt.h"
#include "feed.h"

/* The feeds a session can run, in the order of struct rcb_count's periods. */
#define REFCNT_SESSION_FEEDS	2

/**
 * struct refcnt_session_target - the context of a session's event
 * @t:		its feed, stream and the session's ranges
 * @session:	the session
 */
struct refcnt_session_target {
	struct refcnt_feed_target t;
	struct refcnt_session *session;
};

/**
 * struct refcnt_session_feed - one feed a session runs
 * @feed:	the feed, whose operations make the events and take their
 *		samples
 * @period:	events per sample, 0 when the session does not run it; as
 *		the feed's prepare() took it
 * @prepared:	the feed's prepare() succeeded: finish() is owed
 * @held:	@feed is a module's emulated PMU, held: refcnt_feed_put()
 *		is owed
 * @setup:	what it made
 * @targets:	the contexts of event k of every thread
 */
struct refcnt_session_feed {
	struct refcnt_feed *feed;
	unsigned int period;
	bool prepared;
	bool held;
	void *setup;
	struct refcnt_session_target targets[REFCNT_FEED_TASK_EVENTS];
};

/**
 * struct refcnt_session - one counting session, the file's data
 * @samples:	samples its events took
 * @delivered:	of them, counted
 * @unresolved:	of them, whose page was not found or is counted by no node
 * @outside:	of them, outside @ranges: dropped
 * @feeds:	the feeds it may run
 * @events:	@nr_events perf events, those of the process's threads;
 *		perf owns the ones inherited from them
 * @nr_events:	entries of @events in use
 * @nr_ranges:	entries of @ranges, 0 for the whole address space
 * @ranges:	the address ranges that count
 */
struct refcnt_session {
	atomic64_t samples;
	atomic64_t delivered;
	atomic64_t unresolved;
	atomic64_t outside;
	struct refcnt_session_feed feeds[REFCNT_SESSION_FEEDS];
	struct perf_event **events;
	unsigned int nr_events;
	unsigned int nr_ranges;
	struct rcb_count_range ranges[];
};

/* Serialises pinning; the pins are released at unload only. */
static DEFINE_MUTEX(refcnt_session_pin_lock);
static struct perf_event *refcnt_session_pins[REFCNT_FAULT_EVENTS];

/*
 * Keep the fault events' static keys on from the first session to
 * unload: a disabled CPU event of each kind, which never counts. Best
 * effort: without a pin, sessions still work.
 */
static void refcnt_session_pin(struct refcnt_feed *feed)
{
	int cpu = cpumask_first(cpu_online_mask);
	struct refcnt_feed_event fe;
	struct perf_event *ev;
	unsigned int k;

	mutex_lock(&refcnt_session_pin_lock);
	for (k = 0; k < ARRAY_SIZE(refcnt_session_pins); k++) {
		if (refcnt_session_pins[k] ||
		    feed->ops->attr(feed, NULL, cpu, k, &fe))
			continue;
		fe.attr.disabled = 1;
		fe.attr.sample_period = 1;
		ev = perf_event_create_kernel_counter(&fe.attr, cpu, NULL, NULL,
						      NULL);
		if (!IS_ERR(ev))
			refcnt_session_pins[k] = ev;
	}
	mutex_unlock(&refcnt_session_pin_lock);
}

/**
 * refcnt_session_exit() - release the pins, at unload
 *
 * No session is open then: each holds a reference on the module.
 */
void refcnt_session_exit(void)
{
	unsigned int k;

	mutex_lock(&refcnt_session_pin_lock);
	for (k = 0; k < ARRAY_SIZE(refcnt_session_pins); k++) {
		if (refcnt_session_pins[k])
			perf_event_release_kernel(refcnt_session_pins[k]);
		refcnt_session_pins[k] = NULL;
	}
	mutex_unlock(&refcnt_session_pin_lock);
}

/*
 * The feed's own sample code, with the session's ranges, then the
 * session's statistics. Samples the feed filters (a PMU's kernel-mode
 * ones, ops without an address, a cache's in memory-side mode) count
 * only in @samples, and in the feed's statistics.
 */
static void refcnt_session_overflow(struct perf_event *event,
				    struct perf_sample_data *data,
				    struct pt_regs *regs)
{
	struct refcnt_session_target *st = event->overflow_handler_context;
	struct refcnt_session *s = st->session;

	atomic64_inc(&s->samples);
	switch (refcnt_feed_sample(&st->t, event, data, regs)) {
	case REFCNT_SAMPLE_COUNTED:
		atomic64_inc(&s->delivered);
		break;
	case REFCNT_SAMPLE_UNRESOLVED:
		atomic64_inc(&s->unresolved);
		break;
	case REFCNT_SAMPLE_OUTSIDE:
		atomic64_inc(&s->outside);
		break;
	default:
		break;
	}
}

/* Release the events, wait for their handlers, free the session. */
static void refcnt_session_free(struct refcnt_session *s)
{
	unsigned int i;

	for (i = 0; i < s->nr_events; i++)
		perf_event_release_kernel(s->events[i]);
	if (s->nr_events)
		synchronize_rcu();
	for (i = 0; i < REFCNT_SESSION_FEEDS; i++) {
		if (s->feeds[i].prepared)
			refcnt_feed_finish(s->feeds[i].feed, true,
					   s->feeds[i].setup);
		if (s->feeds[i].held)
			refcnt_feed_put(s->feeds[i].feed);
	}
	kvfree(s->events);
	kfree(s);
}

static int refcnt_session_release(struct inode *inode, struct file *file)
{
	refcnt_session_free(file->private_data);
	return 0;
}

static long refcnt_session_stats(struct refcnt_session *s, void __user *argp)
{
	struct rcb_count_stats st;

	if (copy_from_user(&st, argp, sizeof(st)))
		return -EFAULT;
	if (st.flags || st.pad || st.reserved[0] || st.reserved[1])
		return -EINVAL;
	st.samples = atomic64_read(&s->samples);
	st.delivered = atomic64_read(&s->delivered);
	st.unresolved = atomic64_read(&s->unresolved);
	st.outside = atomic64_read(&s->outside);
	if (copy_to_user(argp, &st, sizeof(st)))
		return -EFAULT;
	return 0;
}

static long refcnt_session_ioctl(struct file *file, unsigned int cmd,
				 unsigned long arg)
{
	if (cmd != RCB_COUNT_STATS)
		return -ENOTTY;
	return refcnt_session_stats(file->private_data, (void __user *)arg);
}

static const struct file_operations refcnt_session_fops = {
	.owner = THIS_MODULE,
	.release = refcnt_session_release,
	.unlocked_ioctl = refcnt_session_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/*
 * References on the threads of @task's process now, in @tasks (room for
 * @max). Return: how many, or -ENOSPC when they do not fit.
 */
static int refcnt_session_threads(struct task_struct *task,
				  struct task_struct **tasks, unsigned int max)
{
	struct task_struct *t;
	unsigned int n = 0;

	rcu_read_lock();
	for_each_thread(task, t) {
		if (n == max)
			break;
		tasks[n++] = get_task_struct(t);
	}
	rcu_read_unlock();
	if (n < max || n == get_nr_threads(task))
		return n;
	while (n)
		put_task_struct(tasks[--n]);
	return -ENOSPC;
}

/* Events a feed may give one task. */
static unsigned int refcnt_session_task_events(const struct refcnt_feed *feed)
{
	return feed->nr_task_events ?: feed->nr_events;
}

/*
 * Give @task the events of the session's feed @sf, inherited by the
 * threads it creates (and by its children with @children). On failure,
 * the errno the feed gives (-EOPNOTSUPP: the machine cannot run it).
 */
static int refcnt_session_attach(struct refcnt_session *s,
				 struct task_struct *task,
				 struct refcnt_session_feed *sf, bool children)
{
	struct refcnt_feed *feed = sf->feed;
	struct refcnt_feed_event fe;
	struct perf_event *ev;
	unsigned int k;
	int err;

	for (k = 0; sf->period && k < refcnt_session_task_events(feed); k++) {
		err = feed->ops->attr(feed, sf->setup, -1, k, &fe);
		if (err == REFCNT_FEED_NO_EVENT)
			break;
		if (err)
			return refcnt_feed_start_error(feed, err, NULL);
		sf->targets[k] = (struct refcnt_session_target){
			.t = { .feed = feed, .stream = fe.stream,
			       .ranges = s->ranges, .nr_ranges = s->nr_ranges },
			.session = s,
		};
		ev = refcnt_feed_event_create(&fe, sf->period, -1, task,
					      !children,
					      refcnt_session_overflow,
					      &sf->targets[k]);
		if (IS_ERR(ev))
			return PTR_ERR(ev) == -ESRCH ? -ESRCH :
			       refcnt_feed_start_error(feed, PTR_ERR(ev), NULL);
		s->events[s->nr_events++] = ev;
	}
	return 0;
}

/* Every feed of the session on @task; -ESRCH if it exited meanwhile. */
static int refcnt_session_attach_task(struct refcnt_session *s,
				      struct task_struct *task, bool children)
{
	unsigned int i;
	int err = 0;

	for (i = 0; i < REFCNT_SESSION_FEEDS && !err; i++)
		err = refcnt_session_attach(s, task, &s->feeds[i], children);
	return err;
}

/*
 * Every thread of @task's process gets the session's events. A thread
 * that exits meanwhile is skipped (-ESRCH); the process must keep one.
 */
static int refcnt_session_attach_all(struct refcnt_session *s,
				     struct task_struct *task, bool children)
{
	struct task_struct **tasks;
	unsigned int max, per_task = 0;
	int n, i, err = 0, attached = 0;

	for (i = 0; i < REFCNT_SESSION_FEEDS; i++)
		if (s->feeds[i].period)
			per_task += refcnt_session_task_events(s->feeds[i].feed);
	do {
		max = get_nr_threads(task) + 8;
		tasks = kvcalloc(max, sizeof(*tasks), GFP_KERNEL);
		if (!tasks)
			return -ENOMEM;
		n = refcnt_session_threads(task, tasks, max);
		if (n < 0)
			kvfree(tasks);
	} while (n == -ENOSPC);
	s->events = kvcalloc((size_t)n * per_task, sizeof(*s->events),
			     GFP_KERNEL);
	if (!s->events)
		err = -ENOMEM;
	for (i = 0; i < n && !err; i++) {
		err = refcnt_session_attach_task(s, tasks[i], children);
		if (!err)
			attached++;
		/* Exited meanwhile: what it got, it keeps till release. */
		if (err == -ESRCH)
			err = 0;
	}
	for (i = 0; i < n; i++)
		put_task_struct(tasks[i]);
	kvfree(tasks);
	return err ?: attached ? 0 : -ESRCH;
}

/* The argument of RCB_COUNT_START, checked; its ranges into @ranges. */
static int refcnt_session_args(void __user *argp, struct rcb_count *c,
			       struct rcb_count_range *ranges)
{
	unsigned int i;
	u64 end;

	if (copy_from_user(c, argp, sizeof(*c)))
		return -EFAULT;
	if (c->flags & ~RCB_COUNT_FLAGS || c->pad || c->reserved[0] ||
	    c->reserved[1] || (!c->fault_period && !c->pebs_period) ||
	    c->nr_ranges > RCB_COUNT_MAX_RANGES || c->pid < 0)
		return -EINVAL;
	if (copy_from_user(ranges, u64_to_user_ptr(c->ranges),
			   c->nr_ranges * sizeof(*ranges)))
		return -EFAULT;
	for (i = 0; i < c->nr_ranges; i++)
		if (!ranges[i].len ||
		    check_add_overflow(ranges[i].start, ranges[i].len, &end) ||
		    end > TASK_SIZE_MAX)
			return -EINVAL;
	return 0;
}

/* The session's feeds: which feed each period of struct rcb_count runs. */
static void refcnt_session_feeds(struct refcnt_session *s,
				 const struct rcb_count *c)
{
	struct refcnt_feed *const feeds[REFCNT_SESSION_FEEDS] = {
		&refcnt_fault_feed, &refcnt_pebs_feed,
	};
	const unsigned int periods[REFCNT_SESSION_FEEDS] = {
		c->fault_period, c->pebs_period,
	};
	unsigned int i;

	for (i = 0; i < REFCNT_SESSION_FEEDS; i++) {
		s->feeds[i].feed = feeds[i];
		s->feeds[i].period = periods[i];
	}
}

/*
 * The caller may have the events of every feed the session runs, as
 * perf_event_open() would decide (refcnt_perf_access()). Checked before
 * the target is looked up and the feeds are prepared, so that the answer
 * does not depend on the machine: attr() without a setup describes the
 * events as every machine would have them, even one without such a PMU
 * (refcnt_pmu_attr()), as perf checks before its PMU lookup.
 */
static int refcnt_session_access(const struct refcnt_session *s)
{
	const struct refcnt_session_feed *sf;
	struct refcnt_feed_event fe;
	unsigned int i, k;
	int err;

	for (i = 0; i < REFCNT_SESSION_FEEDS; i++) {
		sf = &s->feeds[i];
		for (k = 0; sf->period; k++) {
			if (sf->feed->ops->attr(sf->feed, NULL, -1, k, &fe))
				break;
			err = refcnt_perf_access(&fe.attr);
			if (err)
				return err;
		}
	}
	return 0;
}

/*
 * No precise memory-sampling PMU here: the one a module emulates, if one
 * registered (the test rig's hub device, refcnt_hub.ko), runs the
 * session's pebs_period instead, as perf events of its own PMU on the
 * session's threads; else -EOPNOTSUPP. The access check was made with
 * the PEBS/IBS feed's events (refcnt_session_access()), as on every
 * machine.
 */
static int refcnt_session_emulated(struct refcnt_session_feed *sf)
{
	struct refcnt_feed *feed = refcnt_feed_get_emulated_pmu();
	int err;

	if (!feed)
		return -EOPNOTSUPP;
	err = refcnt_feed_prepare(feed, true, &sf->period, &sf->setup);
	if (err) {
		refcnt_feed_put(feed);
		return err;
	}
	sf->feed = feed;
	sf->held = true;
	return 0;
}

/*
 * Each feed prepared for the session. Return: 0, or the errno of a feed
 * that refuses (the PEBS/IBS feed: EINVAL for a period its PMU refuses,
 * EOPNOTSUPP without one nor an emulated one, EBUSY while its
 * machine-wide feed runs).
 */
static int refcnt_session_prepare(struct refcnt_session *s)
{
	unsigned int i;
	int err;

	for (i = 0; i < REFCNT_SESSION_FEEDS; i++) {
		struct refcnt_session_feed *sf = &s->feeds[i];

		if (!sf->period)
			continue;
		err = refcnt_feed_prepare(sf->feed, true, &sf->period,
					  &sf->setup);
		if (err == -EOPNOTSUPP && sf->feed == &refcnt_pebs_feed)
			err = refcnt_session_emulated(sf);
		if (err)
			return err;
		sf->prepared = true;
	}
	return 0;
}

/**
 * refcnt_session_start() - RCB_COUNT_START: start counting one process
 * @argp:	user pointer to struct rcb_count
 *
 * Return: the session's new file descriptor, or a negative errno (see
 * uapi/linux/refcnt.h).
 */
long refcnt_session_start(void __user *argp)
{
	struct refcnt_session *s;
	struct task_struct *task;
	struct rcb_count c;
	int err, fd;

	s = kzalloc(struct_size(s, ranges, RCB_COUNT_MAX_RANGES), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	err = refcnt_session_args(argp, &c, s->ranges);
	if (err)
		goto free;
	s->nr_ranges = c.nr_ranges;
	refcnt_session_feeds(s, &c);
	err = refcnt_session_access(s);
	if (err)
		goto free;
	task = refcnt_target_get(c.pid, NULL);
	if (IS_ERR(task)) {
		err = PTR_ERR(task);
		goto free;
	}
	err = refcnt_session_prepare(s);
	if (err) {
		put_task_struct(task);
		goto free;
	}
	if (c.fault_period)
		refcnt_session_pin(&refcnt_fault_feed);
	err = refcnt_session_attach_all(s, task, c.flags & RCB_COUNT_CHILDREN);
	put_task_struct(task);
	if (err)
		goto free;
	fd = anon_inode_getfd("[refcnt-count]", &refcnt_session_fops, s,
			      O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	err = fd;
free:
	refcnt_session_free(s);
	return err;
}
