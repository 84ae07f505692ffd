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
 * handler drops samples outside the session's ranges and runs the rest
 * through the machine-wide feed's own sample code.
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
#include <linux/capability.h>
#include <linux/cpumask.h>
#include <linux/fcntl.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/perf_event.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <uapi/linux/refcnt.h>

#include "refcnt.h"
#include "feed.h"

/**
 * struct refcnt_count_session - one counting session, the file's data
 * @samples:	samples its events took
 * @delivered:	of them, counted
 * @unresolved:	of them, whose page was not found or is counted by no node
 * @outside:	of them, outside @ranges: dropped
 * @events:	@nr_events perf events, those of the process's threads;
 *		perf owns the ones inherited from them
 * @nr_events:	entries of @events in use
 * @nr_ranges:	entries of @ranges, 0 for the whole address space
 * @ranges:	the address ranges that count
 */
struct refcnt_count_session {
	atomic64_t samples;
	atomic64_t delivered;
	atomic64_t unresolved;
	atomic64_t outside;
	struct perf_event **events;
	unsigned int nr_events;
	unsigned int nr_ranges;
	struct rcb_count_range ranges[];
};

/* Serialises pinning; the pins are released at unload only. */
static DEFINE_MUTEX(refcnt_count_pin_lock);
static struct perf_event *refcnt_count_pins[REFCNT_FAULT_EVENTS];

/*
 * Keep the fault events' static keys on from the first session to
 * unload: a disabled CPU event of each kind, which never counts. Best
 * effort: without a pin, sessions still work.
 */
static void refcnt_count_pin(void)
{
	struct perf_event_attr attr;
	struct perf_event *ev;
	unsigned int k;

	mutex_lock(&refcnt_count_pin_lock);
	for (k = 0; k < REFCNT_FAULT_EVENTS; k++) {
		if (refcnt_count_pins[k] || refcnt_fault_attr(&attr, k))
			continue;
		attr.disabled = 1;
		attr.sample_period = 1;
		ev = perf_event_create_kernel_counter(&attr,
						      cpumask_first(cpu_online_mask),
						      NULL, NULL, NULL);
		if (!IS_ERR(ev))
			refcnt_count_pins[k] = ev;
	}
	mutex_unlock(&refcnt_count_pin_lock);
}

/**
 * refcnt_count_exit() - release the pins, at unload
 *
 * No session is open then: each holds a reference on the module.
 */
void refcnt_count_exit(void)
{
	unsigned int k;

	mutex_lock(&refcnt_count_pin_lock);
	for (k = 0; k < REFCNT_FAULT_EVENTS; k++) {
		if (refcnt_count_pins[k])
			perf_event_release_kernel(refcnt_count_pins[k]);
		refcnt_count_pins[k] = NULL;
	}
	mutex_unlock(&refcnt_count_pin_lock);
}

/* Whether @addr lies in one of the session's ranges. NMI-safe. */
static bool refcnt_count_inside(const struct refcnt_count_session *s,
				u64 addr)
{
	unsigned int i;

	if (!s->nr_ranges)
		return true;
	for (i = 0; i < s->nr_ranges; i++)
		if (addr - s->ranges[i].start < s->ranges[i].len)
			return true;
	return false;
}

/* The session's statistics, then the feed's own sample code. */
static void refcnt_count_sample(struct perf_event *event,
				struct perf_sample_data *data, bool pebs)
{
	struct refcnt_count_session *s = event->overflow_handler_context;
	bool counted;

	atomic64_inc(&s->samples);
	if (!refcnt_count_inside(s, data->addr)) {
		atomic64_inc(&s->outside);
		return;
	}
	counted = pebs ? refcnt_pebs_sample(data, refcnt_feed_cnode()) :
			 refcnt_fault_sample(event, data);
	atomic64_inc(counted ? &s->delivered : &s->unresolved);
}

static void refcnt_count_fault_overflow(struct perf_event *event,
					struct perf_sample_data *data,
					struct pt_regs *regs)
{
	refcnt_count_sample(event, data, false);
}

static void refcnt_count_pebs_overflow(struct perf_event *event,
				       struct perf_sample_data *data,
				       struct pt_regs *regs)
{
	refcnt_count_sample(event, data, true);
}

/* Release the events, wait for their handlers, free the session. */
static void refcnt_count_free(struct refcnt_count_session *s)
{
	unsigned int i;

	for (i = 0; i < s->nr_events; i++)
		perf_event_release_kernel(s->events[i]);
	if (s->nr_events)
		synchronize_rcu();
	kvfree(s->events);
	kfree(s);
}

static int refcnt_count_release(struct inode *inode, struct file *file)
{
	refcnt_count_free(file->private_data);
	return 0;
}

static long refcnt_count_stats(struct refcnt_count_session *s,
			       void __user *argp)
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

static long refcnt_count_ioctl(struct file *file, unsigned int cmd,
			       unsigned long arg)
{
	if (cmd != RCB_COUNT_STATS)
		return -ENOTTY;
	return refcnt_count_stats(file->private_data, (void __user *)arg);
}

static const struct file_operations refcnt_count_fops = {
	.owner = THIS_MODULE,
	.release = refcnt_count_release,
	.unlocked_ioctl = refcnt_count_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/*
 * The process to count: the caller's, or with CAP_SYS_PTRACE the one
 * whose thread group id is @pid. A reference on its leader.
 */
static struct task_struct *refcnt_count_target(pid_t pid)
{
	struct task_struct *task;
	struct mm_struct *mm;
	struct pid *tgid;

	if (pid < 0)
		return ERR_PTR(-EINVAL);
	if (!pid || pid == task_tgid_vnr(current)) {
		task = get_task_struct(current->group_leader);
	} else {
		if (!capable(CAP_SYS_PTRACE))
			return ERR_PTR(-EPERM);
		tgid = find_get_pid(pid);
		task = get_pid_task(tgid, PIDTYPE_TGID);
		put_pid(tgid);
		if (!task)
			return ERR_PTR(-ESRCH);
	}
	/* A kernel thread, or a zombie: no memory to count. */
	mm = get_task_mm(task);
	if (!mm) {
		put_task_struct(task);
		return ERR_PTR(-ESRCH);
	}
	mmput(mm);
	return task;
}

/*
 * References on the threads @leader has now, in @tasks (room for @max).
 * Return: how many, or -ENOSPC when they do not fit.
 */
static int refcnt_count_threads(struct task_struct *leader,
				struct task_struct **tasks, unsigned int max)
{
	struct task_struct *t;
	unsigned int n = 0;

	rcu_read_lock();
	for_each_thread(leader, t) {
		if (n == max)
			break;
		tasks[n++] = get_task_struct(t);
	}
	rcu_read_unlock();
	if (n < max || n == get_nr_threads(leader))
		return n;
	while (n)
		put_task_struct(tasks[--n]);
	return -ENOSPC;
}

/*
 * Give @task the session's events: @nr of @feed, every @period, inherited
 * by the threads it creates (and by its children with @children).
 */
static int refcnt_count_attach(struct refcnt_count_session *s,
			       struct task_struct *task,
			       struct refcnt_feed *feed, unsigned int nr,
			       unsigned int period, bool children)
{
	perf_overflow_handler_t overflow = feed == &refcnt_pebs_feed ?
		refcnt_count_pebs_overflow : refcnt_count_fault_overflow;
	struct perf_event_attr attr;
	struct perf_event *ev;
	unsigned int k;
	int err;

	for (k = 0; period && k < nr; k++) {
		err = feed->attr(&attr, k);
		if (err)
			return err;
		attr.sample_period = period;
		attr.inherit = 1;
		attr.inherit_thread = !children;
		ev = perf_event_create_kernel_counter(&attr, -1, task, overflow,
						      s);
		if (IS_ERR(ev))
			return PTR_ERR(ev);
		s->events[s->nr_events++] = ev;
	}
	return 0;
}

/*
 * Every thread of @leader gets the events of @c. A thread that exits
 * meanwhile is skipped (-ESRCH); the process must keep one.
 */
static int refcnt_count_attach_all(struct refcnt_count_session *s,
				   struct task_struct *leader,
				   const struct rcb_count *c)
{
	bool children = c->flags & RCB_COUNT_CHILDREN;
	unsigned int per_task = (c->fault_period ? REFCNT_FAULT_EVENTS : 0) +
				(c->pebs_period ? 1 : 0);
	struct task_struct **tasks;
	int n, i, err = 0, attached = 0;
	unsigned int max;

	do {
		max = get_nr_threads(leader) + 8;
		tasks = kvcalloc(max, sizeof(*tasks), GFP_KERNEL);
		if (!tasks)
			return -ENOMEM;
		n = refcnt_count_threads(leader, tasks, max);
		if (n < 0)
			kvfree(tasks);
	} while (n == -ENOSPC);
	s->events = kvcalloc((size_t)n * per_task, sizeof(*s->events),
			     GFP_KERNEL);
	if (!s->events)
		err = -ENOMEM;
	for (i = 0; i < n && !err; i++) {
		err = refcnt_count_attach(s, tasks[i], &refcnt_fault_feed,
					  REFCNT_FAULT_EVENTS,
					  c->fault_period, children) ?:
		      refcnt_count_attach(s, tasks[i], &refcnt_pebs_feed, 1,
					  c->pebs_period, children);
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
static int refcnt_count_args(void __user *argp, struct rcb_count *c,
			     struct rcb_count_range *ranges)
{
	unsigned int i;
	u64 end;

	if (copy_from_user(c, argp, sizeof(*c)))
		return -EFAULT;
	/* Instruction ranges, threads and the hub: not yet. */
	if (c->flags & ~RCB_COUNT_CHILDREN || c->nr_iranges || c->iranges ||
	    c->reserved[0] || (!c->fault_period && !c->pebs_period) ||
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

/* perf says "no such PMU" several ways; a guest has none. */
static int refcnt_count_pebs_err(const struct rcb_count *c, int err)
{
	if (c->pebs_period && (err == -ENOENT || err == -ENODEV ||
			       err == -EINVAL || err == -EOPNOTSUPP))
		return -EOPNOTSUPP;
	return err;
}

/**
 * refcnt_count_start() - RCB_COUNT_START: start counting one process
 * @argp:	user pointer to struct rcb_count
 *
 * Return: the session's new file descriptor, or a negative errno (see
 * uapi/linux/refcnt.h).
 */
long refcnt_count_start(void __user *argp)
{
	struct refcnt_count_session *s;
	struct task_struct *leader;
	struct rcb_count c;
	int err, fd;

	s = kzalloc(struct_size(s, ranges, RCB_COUNT_MAX_RANGES), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	err = refcnt_count_args(argp, &c, s->ranges);
	if (err)
		goto free;
	s->nr_ranges = c.nr_ranges;
	leader = refcnt_count_target(c.pid);
	if (IS_ERR(leader)) {
		err = PTR_ERR(leader);
		goto free;
	}
	if (c.fault_period)
		refcnt_count_pin();
	err = refcnt_count_attach_all(s, leader, &c);
	put_task_struct(leader);
	if (err) {
		err = refcnt_count_pebs_err(&c, err);
		goto free;
	}
	fd = anon_inode_getfd("[refcnt-count]", &refcnt_count_fops, s,
			      O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	err = fd;
free:
	refcnt_count_free(s);
	return err;
}
