// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt selftests: what a caller without CAP_SYS_ADMIN in the initial
 * user namespace gets from devices a group member could open, from
 * namespaces of its own (Documentation/security.rst). Each test runs in
 * its own process (the harness forks), opens the device as root (as a
 * member of the udev rule's group would) and drops to nobody.
 */
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>

#include "refcnt_helpers.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

#define NOBODY		65534
#define NS_PARANOID	"/proc/sys/kernel/perf_event_paranoid"
/* Debian's switch for unprivileged user namespaces, where it exists. */
#define NS_USERNS_CLONE	"/proc/sys/kernel/unprivileged_userns_clone"

/*
 * Write @val to @path for the rest of this test process, which may drop
 * its privileges meanwhile: a child that stays root puts the old value
 * back when the test process exits, whatever way (it sees the end of a
 * pipe only the test process holds open). 0, or -errno (-ENOENT: no such
 * knob on this kernel).
 */
static int ns_knob_for_test(const char *path, const char *val)
{
	char old[32] = "";
	int p[2], i, err;
	pid_t pid;
	char c;

	err = rc_read_file(path, old, sizeof(old));
	if (err < 0)
		return err;
	if (pipe(p))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		/* Nothing of the test's (a device file) kept open here. */
		for (i = 3; i < 1024; i++)
			if (i != p[0])
				close(i);
		while (read(p[0], &c, 1) > 0)
			;
		rc_write_file(path, old);
		_exit(0);
	}
	close(p[0]);
	return rc_write_file(path, val);
}

static void ns_drop_to_nobody(struct __test_metadata *_metadata)
{
	ASSERT_EQ(0, setgroups(0, NULL));
	ASSERT_EQ(0, setresgid(NOBODY, NOBODY, NOBODY));
	ASSERT_EQ(0, setresuid(NOBODY, NOBODY, NOBODY));
	ASSERT_EQ(NOBODY, (int)geteuid());
	/* The uid change made /proc/self root's: nobody writes its maps. */
	ASSERT_EQ(0, prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
}

/*
 * As nobody, a user namespace and a mount namespace of its own, root in
 * them (mapped to nobody): 0, or the -errno of unshare().
 */
static int ns_own_userns(struct __test_metadata *_metadata)
{
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS))
		return -errno;
	EXPECT_EQ(0, rc_write_file("/proc/self/setgroups", "deny"));
	EXPECT_EQ(0, rc_write_file("/proc/self/uid_map", "0 65534 1"));
	EXPECT_EQ(0, rc_write_file("/proc/self/gid_map", "0 65534 1"));
	EXPECT_EQ(0, mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	return 0;
}

/* RCB_COUNT_START of the caller with these periods: the fd, or -errno. */
static int ns_count(int fd, uint32_t fault_period, uint32_t pebs_period)
{
	struct rcb_count c = {
		.fault_period = fault_period, .pebs_period = pebs_period,
	};
	int ret = ioctl(fd, RCB_COUNT_START, &c);

	return ret < 0 ? -errno : ret;
}

static int ns_first_node_fd(struct __test_metadata *_metadata)
{
	struct rc_nodes mem;
	int fd;

	EXPECT_EQ(0, rc_node_list("has_memory", &mem));
	EXPECT_LT(0, mem.n);
	fd = rc_open_node(mem.n ? mem.id[0] : 0, O_RDONLY);
	EXPECT_LE(0, fd);
	return fd;
}

/*
 * The perf access decision is the kernel's, never a file the caller's
 * mount namespace resolves: nobody, with kernel.perf_event_paranoid at 2,
 * mounts a tmpfs over /proc/sys/kernel in a user namespace of its own and
 * writes -1 into its perf_event_paranoid; a session with the PEBS/IBS
 * feed (physical addresses, kernel samples) is still EACCES, alone or
 * with the fault feed, whether the machine has such a PMU or not. The
 * fault feed alone (user-space software events of itself) still works.
 */
TEST(userns_fake_paranoid_denies_pmu_session)
{
	char level[16] = "";
	int fd, sfd, wfd, err;

	fd = ns_first_node_fd(_metadata);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ns_knob_for_test(NS_PARANOID, "2"));
	err = ns_knob_for_test(NS_USERNS_CLONE, "1");
	ASSERT_TRUE(!err || err == -ENOENT);
	ns_drop_to_nobody(_metadata);
	err = ns_own_userns(_metadata);
	if (err == -EPERM || err == -ENOSPC || err == -EINVAL)
		SKIP(return, "no unprivileged user namespaces here (%d)", err);
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, mount("tmpfs", "/proc/sys/kernel", "tmpfs", 0,
			   "mode=0755")) TH_LOG("mount: %s", strerror(errno));
	wfd = open(NS_PARANOID, O_WRONLY | O_CREAT | O_EXCL, 0444);
	ASSERT_LE(0, wfd);
	ASSERT_EQ(3, write(wfd, "-1\n", 3));
	close(wfd);
	ASSERT_LT(0, rc_read_file(NS_PARANOID, level, sizeof(level)));
	ASSERT_EQ(-1, atoi(level));

	EXPECT_EQ(-EACCES, ns_count(fd, 0, 10007));
	EXPECT_EQ(-EACCES, ns_count(fd, 1, 10007));
	sfd = ns_count(fd, 1, 0);
	EXPECT_LE(0, sfd);
	if (sfd >= 0)
		close(sfd);
	close(fd);
}

TEST_HARNESS_MAIN
