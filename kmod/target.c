// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the process a range query or a counting session names, by one
 * rule for both (Documentation/security.rst): pid 0, or the caller's own
 * process id, is the caller; any other pid needs CAP_SYS_PTRACE and names
 * a process by its thread group id in the caller's pid namespace (a
 * thread id that is not a process's names none).
 */
#include <linux/capability.h>
#include <linux/err.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>

#include "refcnt.h"

/*
 * A thread of @leader's process with its address space, referenced, and
 * that address space: the leader itself unless it has exited alone
 * (pthread_exit(), a zombie until its last thread exits) while its other
 * threads run on in the same memory.
 */
static struct task_struct *refcnt_group_mm(struct task_struct *leader,
					   struct mm_struct **mm)
{
	struct task_struct *t, *found = NULL;

	*mm = get_task_mm(leader);
	if (*mm)
		return get_task_struct(leader);
	rcu_read_lock();
	for_each_thread(leader, t) {
		*mm = get_task_mm(t);
		if (*mm) {
			found = get_task_struct(t);
			break;
		}
	}
	rcu_read_unlock();
	return found;
}

/**
 * refcnt_target_get() - the process a pid names, with its memory
 * @pid:	0 for the caller, else a thread group id
 * @mm:		set to a reference on its address space (mmput() it), or
 *		NULL when the caller only needs to know it has one
 *
 * A process whose main thread has exited alone is still named by its
 * thread group id while another of its threads lives: the task returned
 * is then that thread.
 *
 * Return: a reference on a task of the process (put_task_struct() it), or
 * ERR_PTR(-EINVAL) for a negative @pid, -EPERM for another process
 * without CAP_SYS_PTRACE, -ESRCH for no such process or one without
 * memory (a kernel thread, a process whose threads have all exited).
 */
struct task_struct *refcnt_target_get(pid_t pid, struct mm_struct **mm)
{
	struct task_struct *task, *with_mm;
	struct mm_struct *task_mm;
	struct pid *tgid;

	if (pid < 0)
		return ERR_PTR(-EINVAL);
	if (!pid || pid == task_tgid_vnr(current)) {
		task = get_task_struct(current);
	} else {
		if (!capable(CAP_SYS_PTRACE))
			return ERR_PTR(-EPERM);
		tgid = find_get_pid(pid);
		task = get_pid_task(tgid, PIDTYPE_TGID);
		put_pid(tgid);
		if (!task)
			return ERR_PTR(-ESRCH);
	}
	with_mm = refcnt_group_mm(task, &task_mm);
	put_task_struct(task);
	if (!with_mm)
		return ERR_PTR(-ESRCH);
	if (mm)
		*mm = task_mm;
	else
		mmput(task_mm);
	return with_mm;
}

/**
 * refcnt_target_thread_get() - the thread a counting session names
 * @tid:	0 for the calling thread, else a thread id in the caller's
 *		pid namespace
 *
 * A thread of the caller's own process needs nothing; any other needs
 * CAP_SYS_PTRACE, and without it the answer is -EPERM whether the thread
 * exists or not.
 *
 * Return: a reference on the thread (put_task_struct() it), or
 * ERR_PTR(-EINVAL) for a negative @tid, -EPERM, -ESRCH for no such
 * thread or one without memory.
 */
struct task_struct *refcnt_target_thread_get(pid_t tid)
{
	struct task_struct *task;
	struct mm_struct *mm;

	if (tid < 0)
		return ERR_PTR(-EINVAL);
	if (!tid) {
		task = get_task_struct(current);
	} else {
		struct pid *p = find_get_pid(tid);

		task = get_pid_task(p, PIDTYPE_PID);
		put_pid(p);
		if (!task || !same_thread_group(task, current)) {
			if (!capable(CAP_SYS_PTRACE)) {
				if (task)
					put_task_struct(task);
				return ERR_PTR(-EPERM);
			}
			if (!task)
				return ERR_PTR(-ESRCH);
		}
	}
	mm = get_task_mm(task);
	if (!mm) {
		put_task_struct(task);
		return ERR_PTR(-ESRCH);
	}
	mmput(mm);
	return task;
}
