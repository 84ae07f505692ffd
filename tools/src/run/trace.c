// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: tracing the command with ptrace until every traced task is
 * gone, and taking each process's snapshot at its exit.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

struct proc *procs;
static struct task *tasks;
pid_t main_pid;
struct timespec t_start, t_end;

static struct task *find_task(pid_t tid)
{
	struct task *t;

	for (t = tasks; t; t = t->next)
		if (t->tid == tid)
			return t;
	return NULL;
}

struct proc *find_proc(pid_t tgid)
{
	struct proc *p;

	for (p = procs; p; p = p->next)
		if (p->tgid == tgid)
			return p;
	return NULL;
}

static void proc_cmdline(pid_t pid, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, size - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		snprintf(buf, size, "?");
		return;
	}
	buf[n] = '\0';
	for (i = 0; i < n - 1; i++)
		if (!buf[i])
			buf[i] = ' ';
}

static struct proc *add_proc(pid_t tgid, int is_main)
{
	struct proc *p = xcalloc(1, sizeof(*p)), **pp;

	p->tgid = tgid;
	p->is_main = is_main;
	for (pp = &procs; *pp; pp = &(*pp)->next)
		;
	*pp = p;
	return p;
}

static struct task *add_task(pid_t tid, pid_t tgid)
{
	struct task *t = xcalloc(1, sizeof(*t));

	t->tid = tid;
	t->tgid = tgid;
	t->next = tasks;
	tasks = t;
	return t;
}

static void del_task(pid_t tid)
{
	struct task **tp, *t;

	for (tp = &tasks; *tp; tp = &(*tp)->next)
		if ((*tp)->tid == tid) {
			t = *tp;
			*tp = t->next;
			free(t);
			return;
		}
}

static pid_t tgid_of(pid_t tid)
{
	char path[64], line[256];
	pid_t tgid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

/* PF_EXITING in /proc/TGID/task/TID/stat's flags: in do_exit(). */
#define PF_EXITING_FLAG	0x00000004

static int task_exiting(pid_t tgid, pid_t tid)
{
	char path[96], buf[1024], *p;
	unsigned int flags = 0;
	struct task *t = find_task(tid);
	FILE *f;

	if (t && t->exiting)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)tgid, (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 1;	/* gone */
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	p = p ? strrchr(buf, ')') : NULL;
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %u", &flags) != 1)
		return 0;
	return !!(flags & PF_EXITING_FLAG);
}

/*
 * Is tid stopped at its exit, that stop not yet taken by waitpid()? After
 * exit_group() the other threads stop there with their SIGKILL taken and
 * before do_exit() marks them exiting: only the stop itself says so.
 */
static int exit_stop_pending(pid_t tid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, tid, &si, WSTOPPED | WNOHANG | WNOWAIT | __WALL))
		return 0;
	return si.si_pid == tid && si.si_code == CLD_TRAPPED &&
	       si.si_status == (SIGTRAP | (PTRACE_EVENT_EXIT << 8));
}

/*
 * Does tid's exit end its process? Not when another thread lives on: one
 * that is neither dead, nor exiting (stopped at its own exit, or in
 * do_exit()), nor has a SIGKILL pending (exit_group and fatal signals give
 * every other thread one). That is one thread leaving, pthread_exit().
 * A thread between taking its SIGKILL and its exit stop looks alive: then
 * the snapshot waits for the last thread's stop.
 */
static int exit_ends_process(pid_t tid, pid_t tgid)
{
	char path[96], line[256];
	struct dirent *de;
	int ends = 1;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)tid);
	d = opendir(path);
	if (!d)
		return 1;
	while ((de = readdir(d)) && ends) {
		pid_t other = atoi(de->d_name);
		unsigned long long pnd = 0;
		char state = '?';
		FILE *f;

		if (other <= 0 || other == tid)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status",
			 (int)tgid, (int)other);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			sscanf(line, "State: %c", &state);
			sscanf(line, "SigPnd: %llx", &pnd);
		}
		fclose(f);
		if (state == 'Z' || state == 'X' || (pnd & (1ULL << (SIGKILL - 1))) ||
		    task_exiting(tgid, other) ||
		    (state == 't' && exit_stop_pending(other)))
			continue;
		ends = 0;
	}
	closedir(d);
	return ends;
}

/*
 * Will the leader of tgid still stop at its exit, its memory there? Not
 * when tid is the leader, nor when its exit stop was seen already (its
 * exit taken for one thread's), nor when the leader is dead (a zombie
 * after pthread_exit(), or gone).
 */
static int leader_stop_to_come(pid_t tgid, pid_t tid)
{
	char path[96], line[256], state = '?';
	struct task *leader = find_task(tgid);
	FILE *f;

	if (tid == tgid || (leader && leader->exiting))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)tgid, (int)tgid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		sscanf(line, "State: %c", &state);
	fclose(f);
	return state != 'Z' && state != 'X' && state != '?';
}

/* A thread's name and the CPU (and node) it last ran on. */
static void thread_of(pid_t tgid, pid_t tid, struct thread_info *th)
{
	char path[96], buf[1024], *p;
	FILE *f;
	int cpu = -1;

	memset(th, 0, sizeof(*th));
	th->tid = tid;
	th->cpu = th->node = -1;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)tgid, (int)tid);
	if (rt_read_line(path, th->comm, sizeof(th->comm)))
		snprintf(th->comm, sizeof(th->comm), "?");
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)tgid, (int)tid);
	f = fopen(path, "r");
	p = f ? fgets(buf, sizeof(buf), f) : NULL;
	if (f)
		fclose(f);
	p = p ? strrchr(buf, ')') : NULL;
	/* Field 39, processor: the 37th after the state. */
	if (p && sscanf(p + 2, "%*c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %d",
			    &cpu) == 1 && cpu >= 0) {
		th->cpu = cpu;
		th->node = numa_node_of_cpu(cpu);
	}
}

/*
 * A stopped thread's stack pointer, or 0. x86-64 keeps PTRACE_GETREGS,
 * which gives the 64-bit layout for a 32-bit tracee too; arm64 has only
 * the regset.
 */
static unsigned long stopped_sp(pid_t tid)
{
#if defined(__x86_64__)
	struct user_regs_struct regs;

	if (!ptrace(PTRACE_GETREGS, tid, 0, &regs))
		return regs.rsp;
#elif defined(__aarch64__)
	struct user_regs_struct regs;
	struct iovec iov = { .iov_base = &regs, .iov_len = sizeof(regs) };

	if (!ptrace(PTRACE_GETREGSET, tid, NT_PRSTATUS, &iov))
		return regs.sp;
#endif
	return 0;
}

/* A thread stopped at its exit: its stack pointer too. */
static void thread_stopped(pid_t tgid, pid_t tid, struct thread_info *th)
{
	unsigned long sp;

	thread_of(tgid, tid, th);
	sp = stopped_sp(tid);
	if (sp)
		th->sp = sp;
}

/* A thread leaving before its process: remember it for the report. */
static void thread_gone(struct proc *p, pid_t tid)
{
	if (p->nr_gone == p->cap_gone) {
		p->cap_gone = p->cap_gone ? 2 * p->cap_gone : 16;
		p->gone = realloc(p->gone, p->cap_gone * sizeof(*p->gone));
		if (!p->gone) {
			rt_err("out of memory");
			exit(RT_EXIT_RUN_FAIL);
		}
	}
	thread_stopped(p->tgid, tid, &p->gone[p->nr_gone++]);
}

/* Every thread of p: the live ones, tid (exiting) and those gone. */
static struct thread_info *all_threads(struct proc *p, pid_t tid, int *n)
{
	struct thread_info *th;
	struct dirent *de;
	char path[64];
	int cap = p->nr_gone + 64, i;
	DIR *d;

	th = xcalloc(cap, sizeof(*th));
	*n = 0;
	thread_stopped(p->tgid, tid, &th[(*n)++]);
	snprintf(path, sizeof(path), "/proc/%d/task", (int)tid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		pid_t other = atoi(de->d_name);

		if (other <= 0 || other == tid)
			continue;
		if (*n == cap - p->nr_gone) {
			cap *= 2;
			th = realloc(th, cap * sizeof(*th));
			if (!th) {
				rt_err("out of memory");
				exit(RT_EXIT_RUN_FAIL);
			}
		}
		thread_of(p->tgid, other, &th[(*n)++]);
	}
	if (d)
		closedir(d);
	for (i = 0; i < p->nr_gone; i++)
		th[(*n)++] = p->gone[i];
	return th;
}

static void on_exit_stop(pid_t tid)
{
	struct task *t = find_task(tid);
	pid_t tgid = t ? t->tgid : tgid_of(tid);
	struct proc *p = find_proc(tgid);
	struct thread_info *th;
	struct snapshot *s;
	int n;

	if (t)
		t->exiting = 1;
	if (!p)
		return;
	if (!exit_ends_process(tid, tgid)) {
		thread_gone(p, tid);
		return;
	}
	/*
	 * exit_group(): every thread's exit ends the process, and the first
	 * stop of the leader (which RCB_RANGE_QUERY names: a thread group id)
	 * has the snapshot. Other threads' stops may come first (a server's
	 * idle threads, as redis-server's): while the leader lives, its own
	 * stop, before it lets go of the memory, is waited for. Taken at
	 * another thread's stop, the snapshot still names the process by
	 * its thread group id: the module reaches the memory through a
	 * thread that has it.
	 */
	if (p->snap || leader_stop_to_come(tgid, tid))
		return;
	proc_cmdline(tid, p->cmd, sizeof(p->cmd));
	load_labels();	/* written by the command while it ran */
	th = all_threads(p, tid, &n);
	s = take_snapshot(tid, tgid, th, n);	/* th is the snapshot's now */
	if (s)
		p->snap = s;
}

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

/* SIGTERM and SIGHUP go on to the command; waitpid() sees EINTR. */
void trace_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: waitpid sees EINTR */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* The terminal sends these to COMMAND too; we wait for its exit. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
}

/* The command, just seized: the first task and process traced. */
void trace_command(const char *cmd)
{
	add_task(main_pid, main_pid)->seen_stop = 1;
	snprintf(add_proc(main_pid, 1)->cmd, sizeof(procs->cmd), "%s", cmd);
}

long ptrace_options(void)
{
	long o = PTRACE_O_TRACEEXIT | PTRACE_O_TRACECLONE |
		 PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL;

	if (opt.follow)
		o |= PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK;
	return o;
}

/* A traced task is gone; a process when its leader is. */
static void on_task_gone(struct task *t, pid_t tid, int st)
{
	struct proc *p = t ? find_proc(t->tgid) : NULL;

	if (p && tid == p->tgid) {
		p->exited = 1;
		p->status = st;
		if (p->is_main)
			clock_gettime(CLOCK_MONOTONIC, &t_end);
	}
	del_task(tid);
}

/* A new task whose first stop came before its parent's event. */
static struct task *on_new_task(pid_t tid)
{
	pid_t tgid = tgid_of(tid);
	struct task *t = add_task(tid, tgid);

	if (tgid != tid || find_proc(tgid)) {
		if (!find_proc(tgid))
			add_proc(tgid, 0);
	} else if (opt.follow) {
		add_proc(tgid, 0);
	}
	return t;
}

/* PTRACE_EVENT_CLONE, _FORK, _VFORK: trace the new thread or process. */
static void on_new_child(struct task *t, pid_t tid, int ev)
{
	unsigned long msg;
	pid_t child;

	if (!ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) &&
	    !find_task((pid_t)msg)) {
		child = (pid_t)msg;
		if (ev == PTRACE_EVENT_CLONE && tgid_of(child) == t->tgid) {
			add_task(child, t->tgid);
		} else {
			add_task(child, child);
			if (!find_proc(child))
				add_proc(child, 0);
		}
	}
	ptrace(PTRACE_CONT, tid, 0, 0);
}

/* PTRACE_EVENT_STOP: an auto-attached task's first stop, or a group-stop. */
static void on_event_stop(struct task *t, pid_t tid, int sig)
{
	if (!t->seen_stop) {
		/* The first stop of an auto-attached task. */
		t->seen_stop = 1;
		if (!find_proc(t->tgid)) {
			ptrace(PTRACE_DETACH, tid, 0, 0);
			del_task(tid);
			return;
		}
		ptrace(PTRACE_CONT, tid, 0, 0);
	} else if (sig == SIGSTOP || sig == SIGTSTP ||
		   sig == SIGTTIN || sig == SIGTTOU) {
		ptrace(PTRACE_LISTEN, tid, 0, 0);	/* group-stop */
	} else {
		ptrace(PTRACE_CONT, tid, 0, 0);
	}
}

/* A ptrace stop of task t (tid), wait status st: handle it, resume. */
static void on_stop(struct task *t, pid_t tid, int st)
{
	int ev = (unsigned int)st >> 16, sig = WSTOPSIG(st);
	unsigned long msg;

	switch (ev) {
	case PTRACE_EVENT_EXIT:
		on_exit_stop(tid);
		ptrace(PTRACE_CONT, tid, 0, 0);
		break;
	case PTRACE_EVENT_CLONE:
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		on_new_child(t, tid, ev);
		break;
	case PTRACE_EVENT_EXEC:
		/* A thread other than the leader exec'ed: it is the leader now. */
		if (!ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) &&
		    (pid_t)msg != tid)
			del_task((pid_t)msg);
		ptrace(PTRACE_CONT, tid, 0, 0);
		break;
	case PTRACE_EVENT_STOP:
		on_event_stop(t, tid, sig);
		break;
	default:
		t->seen_stop = 1;
		/* Signal-delivery-stop: deliver it. */
		ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig);
		break;
	}
}

/* Run the ptrace loop until every traced task is gone. */
void trace_loop(void)
{
	struct task *t;
	pid_t tid;
	int st;

	for (;;) {
		tid = waitpid(-1, &st, __WALL);
		if (tid < 0) {
			if (errno != EINTR)
				break;	/* ECHILD: all gone */
			if (got_signal)
				kill(main_pid, got_signal);
			got_signal = 0;
			continue;
		}
		t = find_task(tid);
		if (WIFEXITED(st) || WIFSIGNALED(st))
			on_task_gone(t, tid, st);
		else if (WIFSTOPPED(st))
			on_stop(t ? t : on_new_task(tid), tid, st);
	}
}
