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
 * handler drops samples outside the session's ranges (of data and of
 * instruction addresses, session_totals.c), runs the rest through the
 * machine-wide feed's own sample code, then adds them to the session's
 * totals. A feed prepares each session's events as it does its
 * machine-wide ones (the PEBS/IBS feed: one set per core PMU, and the PMU
 * held against the machine-wide feed). Without a PMU, a PMU a module
 * emulates (the test rig's hub device) takes pebs_period. With
 * RCB_COUNT_DEVICES, the device feeds' records of the threads count too
 * (session_device.c).
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
 * a disabled event of each kind, kept while any session with a fault
 * period is open: the last one's close lets them go, so that no session
 * leaves the machine's fault path slower after it.
 *
 * What a session allocates is charged to its caller's memory cgroup, and
 * a user holds at most refcnt.max_user_sessions of them
 * (session_limit.c).
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

#include "compat.h"
#include "refcnt.h"
#include "feed.h"
#include "session.h"

/* Serialises pinning; the pins go with the last session holding them. */
static DEFINE_MUTEX(refcnt_session_pin_lock);
static struct perf_event *refcnt_session_pins[REFCNT_FAULT_EVENTS];
static unsigned int refcnt_session_pinners;

/* Release the pins. Under refcnt_session_pin_lock. */
static void refcnt_session_unpin_all(void)
{
	unsigned int k;

	for (k = 0; k < ARRAY_SIZE(refcnt_session_pins); k++) {
		if (refcnt_session_pins[k])
			perf_event_release_kernel(refcnt_session_pins[k]);
		refcnt_session_pins[k] = NULL;
	}
}

/*
 * Keep the fault events' static keys on while @s is open: a disabled
 * CPU event of each kind, which never counts. Best effort: without a
 * pin, sessions still work.
 */
static void refcnt_session_pin(struct refcnt_session *s,
			       struct refcnt_feed *feed)
{
	int cpu = cpumask_first(cpu_online_mask);
	struct refcnt_feed_event fe;
	struct perf_event *ev;
	unsigned int k;

	mutex_lock(&refcnt_session_pin_lock);
	refcnt_session_pinners++;
	s->pinned = true;
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

/* @s is closing: the last session that pinned lets the pins go. */
static void refcnt_session_unpin(struct refcnt_session *s)
{
	if (!s->pinned)
		return;
	mutex_lock(&refcnt_session_pin_lock);
	if (!--refcnt_session_pinners)
		refcnt_session_unpin_all();
	mutex_unlock(&refcnt_session_pin_lock);
	s->pinned = false;
}

/**
 * refcnt_session_exit() - at unload, release what pins are left
 *
 * None: no session is open then (each holds a reference on the module),
 * and the last to close released them.
 */
void refcnt_session_exit(void)
{
	mutex_lock(&refcnt_session_pin_lock);
	WARN_ON_ONCE(refcnt_session_pinners);
	refcnt_session_unpin_all();
	mutex_unlock(&refcnt_session_pin_lock);
}

/*
 * The session's filters, the feed's own sample code, the session's
 * totals. In the overflow handler's context (NMI for a PMU). Samples the
 * feed filters (a PMU's kernel-mode ones, ops without an address, a
 * cache's in memory-side mode) count only in @samples, and in the feed's
 * statistics.
 */
static void refcnt_session_overflow(struct perf_event *event,
				    struct perf_sample_data *data,
				    struct pt_regs *regs)
{
	struct refcnt_session_target *st = event->overflow_handler_context;
	struct refcnt_session *s = st->session;
	struct refcnt_feed *feed = st->t.feed;
	struct refcnt_sample x = { .src_cnode = refcnt_this_cnode() };
	struct refcnt_outcome out;
	u64 in_data, in_instr;

	atomic64_inc(&s->samples);
	if (unlikely(refcnt_perf_throttling(event)))
		atomic64_inc(&s->throttled);
	/* Root's machine-wide feed has the PMU: its samples alone count. */
	if (st->yields && refcnt_pmu_yielded())
		return;
	feed->ops->describe(&st->t, event, data, regs, &x);
	if (!refcnt_session_match(s, &x, &in_data, &in_instr)) {
		atomic64_inc(&s->outside);
		return;
	}
	switch (refcnt_feed_sample(&st->t, event, data, regs, &out)) {
	case REFCNT_SAMPLE_COUNTED:
		refcnt_session_account(s, &x, in_data, in_instr, true, &out);
		break;
	case REFCNT_SAMPLE_UNRESOLVED:
		refcnt_session_account(s, &x, in_data, in_instr, false, &out);
		break;
	default:
		break;
	}
}

static void refcnt_session_free(struct kref *kref)
{
	struct refcnt_session *s = container_of(kref, struct refcnt_session,
						kref);

	refcnt_session_totals_free(s);
	kfree(s);
}

/**
 * refcnt_session_put() - drop a reference on a session
 * @s:		the session
 *
 * The last frees it. Not in NMI or the scheduler: its spans are put by
 * the device feeds' drains.
 */
void refcnt_session_put(struct refcnt_session *s)
{
	kref_put(&s->kref, refcnt_session_free);
}

/*
 * Release the events (after which no handler or span starts), wait for
 * the handlers running, let go of the device feeds, and drop the file's
 * reference: spans not yet retired keep the session a little longer.
 */
static void refcnt_session_close(struct refcnt_session *s)
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
	s->events = NULL;
	s->nr_events = 0;
	refcnt_feeds_release(s->devices, s->nr_devices);
	refcnt_session_unpin(s);
	refcnt_session_uncharge(s->charged);
	s->charged = INVALID_UID;
	refcnt_session_put(s);
}

static int refcnt_session_release(struct inode *inode, struct file *file)
{
	refcnt_session_close(file->private_data);
	return 0;
}

static long refcnt_session_stats(struct refcnt_session *s, void __user *argp)
{
	struct rcb_count_stats st;

	if (copy_from_user(&st, argp, sizeof(st)))
		return -EFAULT;
	if (st.flags || st.pad || st.dropped || st.throttled)
		return -EINVAL;
	refcnt_session_sync(s);
	st.samples = atomic64_read(&s->samples);
	st.delivered = atomic64_read(&s->delivered);
	st.unresolved = atomic64_read(&s->unresolved);
	st.outside = atomic64_read(&s->outside);
	st.dropped = atomic64_read(&s->dropped);
	st.throttled = atomic64_read(&s->throttled);
	if (copy_to_user(argp, &st, sizeof(st)))
		return -EFAULT;
	return 0;
}

static long refcnt_session_ioctl(struct file *file, unsigned int cmd,
				 unsigned long arg)
{
	switch (cmd) {
	case RCB_COUNT_STATS:
		return refcnt_session_stats(file->private_data,
					    (void __user *)arg);
	case RCB_COUNT_READ:
		return refcnt_session_read(file->private_data,
					   (void __user *)arg);
	default:
		return -ENOTTY;
	}
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

/* How the session's events are inherited: REFCNT_FEED_INHERIT*. */
static unsigned int refcnt_session_inherit(unsigned int flags)
{
	if (flags & RCB_COUNT_CHILDREN)
		return REFCNT_FEED_INHERIT | REFCNT_FEED_INHERIT_CHILDREN;
	/* A thread alone: not its new threads either. */
	return flags & RCB_COUNT_THREAD ? 0 : REFCNT_FEED_INHERIT;
}

/* @ev, just made on @task, is the session's. */
static void refcnt_session_add(struct refcnt_session *s,
			       struct task_struct *task, struct perf_event *ev)
{
	s->events[s->nr_events++] = ev;
	if (task == current && !s->mine)
		s->mine = ev;
}

/* The scheduling event of @task that gives it the device feeds' records. */
static int refcnt_session_sched_event(struct refcnt_session *s,
				      struct task_struct *task,
				      unsigned int flags)
{
	unsigned int inherit = refcnt_session_inherit(flags);
	struct perf_event_attr attr;
	struct perf_event *ev;

	refcnt_session_sched_attr(&attr);
	attr.inherit = !!inherit;
	attr.inherit_thread = inherit == REFCNT_FEED_INHERIT;
	ev = perf_event_create_kernel_counter(&attr, -1, task,
					      refcnt_session_sched_overflow, s);
	if (IS_ERR(ev))
		return PTR_ERR(ev);
	refcnt_session_add(s, task, ev);
	return 0;
}

/* Events a feed may give one task. */
static unsigned int refcnt_session_task_events(const struct refcnt_feed *feed)
{
	return feed->nr_task_events ?: feed->nr_events;
}

/*
 * perf schedules a task's first events in at its next context switch, not
 * when they are made: the calling thread, counted, sleeps one tick so
 * that counting has begun when the call returns.
 */
static void refcnt_session_settle(struct refcnt_session *s)
{
	if (s->mine && READ_ONCE(s->mine->state) != PERF_EVENT_STATE_ACTIVE)
		schedule_timeout_uninterruptible(1);
}

/*
 * Give @task the events of the session's feed @sf. On failure, the errno
 * the feed gives (-EOPNOTSUPP: the machine cannot run it).
 */
static int refcnt_session_attach(struct refcnt_session *s,
				 struct task_struct *task,
				 struct refcnt_session_feed *sf,
				 unsigned int flags)
{
	struct refcnt_feed *feed = sf->feed;
	struct refcnt_feed_event *fe;
	struct perf_event *ev;
	unsigned int k;
	int err = 0;

	if (!sf->period)
		return 0;
	/* Off the stack: two perf_event_attr, under perf's own deep calls. */
	fe = kmalloc(sizeof(*fe), GFP_KERNEL);
	if (!fe)
		return -ENOMEM;
	for (k = 0; !err && k < refcnt_session_task_events(feed); k++) {
		err = feed->ops->attr(feed, sf->setup, -1, k, fe);
		if (err == REFCNT_FEED_NO_EVENT) {
			err = 0;
			break;
		}
		if (err) {
			err = refcnt_feed_start_error(feed, err, NULL);
			break;
		}
		sf->targets[k] = (struct refcnt_session_target){
			.t = { .feed = feed, .stream = fe->stream },
			.session = s,
			.yields = sf->yields,
		};
		ev = refcnt_feed_event_create(fe, sf->period, -1, task,
					      refcnt_session_inherit(flags),
					      refcnt_session_overflow,
					      &sf->targets[k]);
		if (IS_ERR(ev))
			err = PTR_ERR(ev) == -ESRCH ? -ESRCH :
			      refcnt_feed_start_error(feed, PTR_ERR(ev), NULL);
		else
			refcnt_session_add(s, task, ev);
	}
	kfree(fe);
	return err;
}

/*
 * Every feed of the session on @task, and the scheduling event that
 * gives it the device feeds' records; -ESRCH if it exited meanwhile.
 */
static int refcnt_session_attach_task(struct refcnt_session *s,
				      struct task_struct *task,
				      unsigned int flags)
{
	unsigned int i;
	int err = 0;

	for (i = 0; i < REFCNT_SESSION_FEEDS && !err; i++)
		err = refcnt_session_attach(s, task, &s->feeds[i], flags);
	if (err || !s->nr_devices)
		return err;
	return refcnt_session_sched_event(s, task, flags);
}

/* Events per counted thread. */
static unsigned int refcnt_session_per_task(const struct refcnt_session *s)
{
	unsigned int i, n = s->nr_devices ? 1 : 0;

	for (i = 0; i < REFCNT_SESSION_FEEDS; i++)
		if (s->feeds[i].period)
			n += refcnt_session_task_events(s->feeds[i].feed);
	return n;
}

/*
 * Every thread of @task's process gets the session's events. A thread
 * that exits meanwhile is skipped (-ESRCH); the process must keep one.
 */
static int refcnt_session_attach_all(struct refcnt_session *s,
				     struct task_struct *task,
				     unsigned int flags)
{
	struct task_struct **tasks;
	unsigned int max;
	int n, i, err = 0, attached = 0;

	do {
		max = get_nr_threads(task) + 8;
		tasks = kvcalloc(max, sizeof(*tasks), GFP_KERNEL_ACCOUNT);
		if (!tasks)
			return -ENOMEM;
		n = refcnt_session_threads(task, tasks, max);
		if (n < 0)
			kvfree(tasks);
	} while (n == -ENOSPC);
	s->events = kvcalloc((size_t)n * refcnt_session_per_task(s),
			     sizeof(*s->events), GFP_KERNEL_ACCOUNT);
	if (!s->events)
		err = -ENOMEM;
	for (i = 0; i < n && !err; i++) {
		err = refcnt_session_attach_task(s, tasks[i], flags);
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

/* RCB_COUNT_THREAD: the one thread, as its own process would be. */
static int refcnt_session_attach_thread(struct refcnt_session *s,
					struct task_struct *task,
					unsigned int flags)
{
	s->events = kvcalloc(refcnt_session_per_task(s), sizeof(*s->events),
			     GFP_KERNEL_ACCOUNT);
	if (!s->events)
		return -ENOMEM;
	return refcnt_session_attach_task(s, task, flags);
}

/* @n ranges from user pointer @uptr into @r, each checked. */
static int refcnt_session_ranges(struct rcb_count_range *r, u64 uptr,
				 unsigned int n)
{
	unsigned int i;
	u64 end;

	if (copy_from_user(r, u64_to_user_ptr(uptr), n * sizeof(*r)))
		return -EFAULT;
	for (i = 0; i < n; i++)
		if (!r[i].len || check_add_overflow(r[i].start, r[i].len, &end) ||
		    end > TASK_SIZE_MAX)
			return -EINVAL;
	return 0;
}

/* The argument of RCB_COUNT_START, checked; its ranges into @s. */
static int refcnt_session_args(void __user *argp, struct rcb_count *c,
			       struct refcnt_session *s)
{
	int err;

	if (copy_from_user(c, argp, sizeof(*c)))
		return -EFAULT;
	if (c->flags & ~RCB_COUNT_FLAGS || c->reserved[0] ||
	    (!c->fault_period && !c->pebs_period &&
	     !(c->flags & RCB_COUNT_DEVICES)) ||
	    c->nr_ranges > RCB_COUNT_MAX_RANGES ||
	    c->nr_iranges > RCB_COUNT_MAX_RANGES || c->pid < 0)
		return -EINVAL;
	err = refcnt_session_ranges(s->ranges, c->ranges, c->nr_ranges);
	if (!err)
		err = refcnt_session_ranges(s->ranges + c->nr_ranges,
					    c->iranges, c->nr_iranges);
	s->nr_data = c->nr_ranges;
	s->nr_instr = c->nr_iranges;
	return err;
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
		/* As the PMU's claim was made (refcnt_pmu_claim()). */
		sf->yields = sf->feed == &refcnt_pebs_feed &&
			     !refcnt_session_privileged();
	}
	return 0;
}

/* Whether @caps carries what the session's ranges filter on. */
static bool refcnt_session_can(const struct refcnt_session *s, u32 caps)
{
	return (!s->nr_data || (caps & RCB_FEED_DATA_ADDR)) &&
	       (!s->nr_instr || (caps & RCB_FEED_INSTR_ADDR));
}

/*
 * The feeds the session runs: -EOPNOTSUPP for ranges of a kind a feed's
 * samples do not carry, or RCB_COUNT_DEVICES without a device feed.
 */
static int refcnt_session_feeds_check(struct refcnt_session *s,
				      const struct rcb_count *c)
{
	unsigned int i;
	int n;

	for (i = 0; i < REFCNT_SESSION_FEEDS; i++)
		if (s->feeds[i].period &&
		    !refcnt_session_can(s, s->feeds[i].feed->caps))
			return -EOPNOTSUPP;
	if (!(c->flags & RCB_COUNT_DEVICES))
		return 0;
	n = refcnt_feeds_hold(s->devices, ARRAY_SIZE(s->devices));
	if (n < 0)
		return n;
	s->nr_devices = n;
	for (i = 0; i < s->nr_devices; i++)
		if (!refcnt_session_can(s, s->devices[i]->caps))
			return -EOPNOTSUPP;
	return s->nr_devices ? 0 : -EOPNOTSUPP;
}

/* The thread or process @c names, referenced. */
static struct task_struct *refcnt_session_target(const struct rcb_count *c)
{
	if (c->flags & RCB_COUNT_THREAD)
		return refcnt_target_thread_get(c->pid);
	return refcnt_target_get(c->pid, NULL);
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

	s = kzalloc(struct_size(s, ranges, 2 * RCB_COUNT_MAX_RANGES),
		    GFP_KERNEL_ACCOUNT);
	if (!s)
		return -ENOMEM;
	kref_init(&s->kref);
	s->charged = INVALID_UID;
	err = refcnt_session_args(argp, &c, s);
	if (err)
		goto close;
	refcnt_session_feeds(s, &c);
	err = refcnt_session_access(s);
	if (!err)
		err = refcnt_session_charge(&s->charged);
	if (!err)
		err = refcnt_session_totals_alloc(s);
	if (err)
		goto close;
	task = refcnt_session_target(&c);
	if (IS_ERR(task)) {
		err = PTR_ERR(task);
		goto close;
	}
	err = refcnt_session_feeds_check(s, &c);
	if (!err)
		err = refcnt_session_prepare(s);
	if (!err && c.fault_period)
		refcnt_session_pin(s, &refcnt_fault_feed);
	/*
	 * What the device feeds hold from before is delivered first: the
	 * session's records then have the whole of each ring (a drain,
	 * under TCG, is slower than the references that fill a ring).
	 */
	if (!err)
		refcnt_session_sync(s);
	if (!err)
		err = c.flags & RCB_COUNT_THREAD ?
		      refcnt_session_attach_thread(s, task, c.flags) :
		      refcnt_session_attach_all(s, task, c.flags);
	put_task_struct(task);
	if (err)
		goto close;
	refcnt_session_settle(s);
	fd = anon_inode_getfd("[refcnt-count]", &refcnt_session_fops, s,
			      O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	err = fd;
close:
	refcnt_session_close(s);
	return err;
}
