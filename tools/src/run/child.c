// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: starting the command: fork, PTRACE_SEIZE, then in the child
 * its NUMA placement (as numactl), its own counting session, and exec
 * once the parent has seized it. The command starts the session for
 * itself, which needs no privilege over another process, and hands it to
 * refcnt-run over a socket (SCM_RIGHTS) before exec closes its copy:
 * counting lasts until refcnt-run closes it at the end of the run.
 */
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

#ifndef MPOL_F_NUMA_BALANCING
#define MPOL_F_NUMA_BALANCING	(1 << 13)
#endif

static int set_policy_child(void)
{
	if (opt.cpunodes && numa_run_on_node_mask(opt.cpunodes))
		return -1;
	if (hinting_binds()) {
		struct bitmask *m = opt.membind ? opt.membind : numa_get_mems_allowed();

		if (set_mempolicy(MPOL_BIND | MPOL_F_NUMA_BALANCING, m->maskp,
				  m->size + 1))
			return -1;
		return 0;
	}
	if (opt.membind) {
		errno = 0;
		numa_set_membind(opt.membind);
		if (errno == EINVAL)
			return -1;
	}
	if (opt.interleave)
		numa_set_interleave_mask(opt.interleave);
	if (opt.preferred >= 0)
		numa_set_preferred(opt.preferred);
	return 0;
}

/* Send the session's fd over sock: 0, or -1 with errno. */
static int send_fd(int sock, int fd)
{
	char data = 's', ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl, .msg_controllen = sizeof(ctl),
	};
	struct cmsghdr *cm;

	memset(ctl, 0, sizeof(ctl));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* The fd the command sent, or -1 if it sent none (it closed the socket). */
static int recv_fd(int sock)
{
	char data, ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl, .msg_controllen = sizeof(ctl),
	};
	struct cmsghdr *cm;
	ssize_t n;
	int fd;

	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	cm = n == 1 ? CMSG_FIRSTHDR(&msg) : NULL;
	if (!cm || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* In the command: start its own session and send it: 0, or -1/errno. */
static int hand_over_session(int sock)
{
	int fd, err;

	if (opt.machine_wide || (new_period <= 0 && !new_pebs))
		return 0;
	fd = count_self();
	if (fd < 0)
		return -1;
	err = send_fd(sock, fd) ? errno : 0;
	close(fd);
	errno = err;
	return err ? -1 : 0;
}

static void child(char **argv, int sync_fd, int err_fd, int sock)
{
	struct child_err ce = { 0 };
	char c;

	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	/* Wait until the parent has seized us. */
	if (read(sync_fd, &c, 1) != 1)
		_exit(RT_EXIT_RUN_FAIL);
	close(sync_fd);
	if (set_policy_child()) {
		ce.stage = 1;
		ce.err = errno;
		if (write(err_fd, &ce, sizeof(ce)) < 0)
			_exit(RT_EXIT_RUN_FAIL);
		_exit(RT_EXIT_RUN_FAIL);
	}
	if (hand_over_session(sock)) {
		ce.stage = 3;
		ce.err = errno;
		if (write(err_fd, &ce, sizeof(ce)) < 0)
			_exit(RT_EXIT_RUN_FAIL);
		_exit(RT_EXIT_RUN_FAIL);
	}
	track_child_env();
	execvp(argv[0], argv);
	ce.stage = 2;
	ce.err = errno;
	if (write(err_fd, &ce, sizeof(ce)) < 0)
		_exit(RT_EXIT_RUN_FAIL);
	_exit(errno == ENOENT ? RT_EXIT_RUN_NOTFOUND : RT_EXIT_RUN_NOEXEC);
}

/* Stop the command that could not be traced: it never ran. */
static int seize_failed(int err)
{
	kill(main_pid, SIGKILL);
	waitpid(main_pid, NULL, 0);
	rt_err("cannot trace the command (PTRACE_SEIZE): %s%s", strerror(err),
	       err == EPERM ? ": ptrace is not allowed here (CAP_SYS_PTRACE, /proc/sys/kernel/yama/ptrace_scope, seccomp)" : "");
	return err == EPERM ? -EACCES : -EIO;
}

/*
 * Fork the command, seize it, let it place itself and exec. *ce says
 * whether it got that far (stage 0) once it has exec'ed or failed.
 */
int start_command(char **argv, struct child_err *ce)
{
	int sync_pipe[2], err_pipe[2], sock[2];
	ssize_t n;

	if (pipe2(sync_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock)) {
		rt_err("pipe: %s", strerror(errno));
		return -EIO;
	}
	trace_signals();
	clock_gettime(CLOCK_MONOTONIC, &t_start);
	main_pid = fork();
	if (main_pid < 0) {
		rt_err("fork: %s", strerror(errno));
		return -EIO;
	}
	if (main_pid == 0) {
		close(sync_pipe[1]);
		close(err_pipe[0]);
		close(sock[0]);
		child(argv, sync_pipe[0], err_pipe[1], sock[1]);
	}
	close(sync_pipe[0]);
	close(err_pipe[1]);
	close(sock[1]);
	if (ptrace(PTRACE_SEIZE, main_pid, 0, (void *)ptrace_options()))
		return seize_failed(errno);
	trace_command(argv[0]);
	if (write(sync_pipe[1], "g", 1) != 1) {
		rt_err("cannot start the command: %s", strerror(errno));
		kill(main_pid, SIGKILL);
	}
	close(sync_pipe[1]);
	/* Sent before exec, or the socket closes at exec or exit. */
	count_fd = recv_fd(sock[0]);
	close(sock[0]);
	n = read(err_pipe[0], ce, sizeof(*ce));
	close(err_pipe[0]);
	if (n != (ssize_t)sizeof(*ce))
		ce->stage = 0;	/* exec worked */
	else
		opt.quiet = 1;	/* nothing to report: no progress noise */
	if (!ce->stage)
		say("running %s (pid %d)", argv[0], (int)main_pid);
	return 0;
}
