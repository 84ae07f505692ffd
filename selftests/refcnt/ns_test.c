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

#include <linux/refcnt_test.h>

#include "refcnt_counters.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

#define NOBODY		65534
#define NS_PARANOID	"/proc/sys/kernel/perf_event_paranoid"
/* Debian's switch for unprivileged user namespaces, where it exists. */
#define NS_USERNS_CLONE	"/proc/sys/kernel/unprivileged_userns_clone"

/*
 * Fork a child that stays root and, when this test process exits, whatever
 * way (it sees the end of a pipe only the test process holds open), runs
 * @undo(@path, @arg): what the test changes for its own run is put back
 * though the test drops its privileges meanwhile. 0, or -errno.
 */
static int ns_undo_at_exit(void (*undo)(const char *path, const void *arg),
			   const char *path, const void *arg)
{
	int p[2], i;
	pid_t pid;
	char c;

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
		undo(path, arg);
		_exit(0);
	}
	close(p[0]);
	return 0;
}

static void ns_undo_write(const char *path, const void *old)
{
	rc_write_file(path, old);
}

/*
 * Write @val to @path for the rest of this test process. 0, or -errno
 * (-ENOENT: no such knob on this kernel).
 */
static int ns_knob_for_test(const char *path, const char *val)
{
	static char old[32];
	int err;

	err = rc_read_file(path, old, sizeof(old));
	if (err < 0)
		return err;
	err = ns_undo_at_exit(ns_undo_write, path, old);
	return err ? err : rc_write_file(path, val);
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

static void ns_undo_chmod(const char *path, const void *mode)
{
	chmod(path, *(const mode_t *)mode);
}

/* @path's mode @mode for the rest of this test process. */
static int ns_mode_for_test(const char *path, mode_t mode)
{
	static mode_t old;
	struct stat st;
	int err;

	if (stat(path, &st))
		return -errno;
	old = st.st_mode & 07777;
	err = ns_undo_at_exit(ns_undo_chmod, path, &old);
	return err ? err : (chmod(path, mode) ? -errno : 0);
}

/* Node @nid's device opened as nobody, with no capability: fd or -errno. */
static int ns_open_as_nobody(int nid)
{
	char path[64];
	int fd, err = 0;

	rc_dev_path(path, sizeof(path), nid);
	if (setgroups(0, NULL) || setegid(NOBODY) || seteuid(NOBODY))
		return -errno;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		err = -errno;
	/* The saved uid is root's: the capabilities come back. */
	if (seteuid(0) || setegid(0))
		return -errno;
	return fd < 0 ? err : fd;
}

/* One FOLD record of set @set of @d's node, read from @fd, into @ev. */
static int ns_fold_read(const struct rc_dev *d, int fd, uint64_t set,
			struct rcb_event *ev)
{
	int n;

	n = rc_inject1(d->fd, rcd_set_paddr(d, set), 0,
		       d->info.rcb_abs_threshold, RCB_INJECT_SYNC);
	if (n)
		return n;
	n = rc_events(fd, ev, 1);
	return n == 1 && ev->type == RCB_EVENT_FOLD && ev->set == set ?
	       0 : -EIO;
}

/*
 * Physical addresses only for a file whose opener had CAP_SYS_ADMIN, as
 * pagemap decides at open: nobody opens the device (the test makes it
 * readable to all) and the FOLD record it reads has paddr 0, while root's
 * file gets the set's physical address, whoever reads.
 */
TEST(nobody_reader_sees_no_physical_address)
{
	struct rc_nodes mem;
	struct rc_dev d = { .fd = -1 };
	struct rcb_event ev;
	char path[64];
	uint64_t set;
	int nfd;

	ASSERT_EQ(0, rc_mem_nodes(&mem));
	ASSERT_EQ(0, rcd_open_clean(&d, mem.id[0]));
	rc_dev_path(path, sizeof(path), d.nid);
	ASSERT_EQ(0, ns_mode_for_test(path, 0444));
	nfd = ns_open_as_nobody(d.nid);
	ASSERT_LE(0, nfd);

	set = rcd_mid_set(&d, 7);
	ASSERT_EQ(0, ns_fold_read(&d, nfd, set, &ev));
	EXPECT_EQ(0ULL, ev.paddr);
	EXPECT_EQ(0U, ev.flags);
	set = rcd_mid_set(&d, 9);
	ASSERT_EQ(0, ns_fold_read(&d, d.fd, set, &ev));
	EXPECT_EQ(rcd_set_paddr(&d, set), ev.paddr);
	close(nfd);
	EXPECT_EQ(0, rcd_close_clean(&d));
}

/* A FOLD record with context of set @set, by the caller's sample. */
static int ns_sample_fold(const struct rc_dev *d, uint64_t set, uint64_t va)
{
	struct refcnt_test_sample smp = {
		.vaddr = va,
		.paddr = rcd_set_paddr(d, set) + 0x40,
		.src_cnodeid = 0,
		.weight = d->info.rcb_abs_threshold,
	};
	struct refcnt_test_samples f = {
		.samples = (uintptr_t)&smp,
		.nr_samples = 1,
	};
	int tfd = rc_test_open(), err = 0;

	if (tfd < 0)
		return tfd;
	if (ioctl(tfd, REFCNT_TEST_SAMPLES, &f))
		err = -errno;
	close(tfd);
	if (!err && f.delivered != 1)
		err = -EIO;
	return err ?: rc_sync(d->fd);
}

#define NS_VA1	0x7f1234560000ULL
#define NS_VA2	0x7f7654320000ULL

/*
 * ns_sample_fold() in a child that stays alive until *@hold is closed:
 * its pid, or -errno.
 */
static pid_t ns_sample_fold_child(const struct rc_dev *d, uint64_t set,
				  uint64_t va, int *hold)
{
	int p[2], q[2];
	pid_t pid;
	char c = 0;

	if (pipe(p) || pipe(q))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		close(p[0]);
		close(q[1]);
		c = !ns_sample_fold(d, set, va);
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		while (read(q[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(p[1]);
	close(q[0]);
	*hold = q[1];
	if (read(p[0], &c, 1) != 1 || !c)
		pid = -EIO;
	close(p[0]);
	return pid;
}

/*
 * Nor another process's virtual address: another root process's sample
 * raises a FOLD record that nobody's file reads with that process's pid
 * (the same namespace) and vaddr 0; the opener's own sample keeps its
 * address there; root's file reads another process's with both.
 */
TEST(nobody_reader_sees_no_other_vaddr)
{
	struct rc_nodes mem;
	struct rc_dev d = { .fd = -1 };
	struct rcb_event ev;
	char path[64];
	int nfd, tfd, hold;
	pid_t other;

	tfd = rc_test_open();
	if (tfd == -ENOENT)
		SKIP(return, "no test module (REFCNT_TEST_KO)");
	ASSERT_LE(0, tfd);
	close(tfd);
	ASSERT_EQ(0, rc_mem_nodes(&mem));
	ASSERT_EQ(0, rcd_open_clean(&d, mem.id[0]));
	rc_dev_path(path, sizeof(path), d.nid);
	ASSERT_EQ(0, ns_mode_for_test(path, 0444));
	nfd = ns_open_as_nobody(d.nid);
	ASSERT_LE(0, nfd);

	other = ns_sample_fold_child(&d, rcd_mid_set(&d, 15), NS_VA1, &hold);
	ASSERT_LT(0, other);
	ASSERT_EQ(1, rc_events(nfd, &ev, 1));
	EXPECT_EQ(other, ev.pid);
	EXPECT_EQ(0ULL, ev.vaddr);
	EXPECT_EQ(0ULL, ev.paddr);
	EXPECT_EQ((uint32_t)RCB_EVENT_F_CONTEXT, ev.flags);
	ASSERT_EQ(0, ns_sample_fold(&d, rcd_mid_set(&d, 16), NS_VA2));
	ASSERT_EQ(1, rc_events(nfd, &ev, 1));
	EXPECT_EQ(getpid(), ev.pid);
	EXPECT_EQ(NS_VA2, ev.vaddr);
	EXPECT_EQ(0ULL, ev.paddr);
	close(hold);
	EXPECT_EQ(other, waitpid(other, NULL, 0));
	other = ns_sample_fold_child(&d, rcd_mid_set(&d, 17), NS_VA1, &hold);
	ASSERT_LT(0, other);
	ASSERT_EQ(1, rc_events(d.fd, &ev, 1));
	EXPECT_EQ(other, ev.pid);
	EXPECT_EQ(NS_VA1, ev.vaddr);
	EXPECT_EQ(rcd_set_paddr(&d, rcd_mid_set(&d, 17)), ev.paddr);
	close(hold);
	EXPECT_EQ(other, waitpid(other, NULL, 0));
	close(nfd);
	EXPECT_EQ(0, rcd_close_clean(&d));
}

/*
 * Pids in the reader's pid namespace: a process of a new pid namespace
 * (its pid there 1) reads, on a file it opened, the FOLD record its own
 * sample raised with pid 1, and one raised by a process outside its
 * namespace (its parent) with pid 0. Root reads: the addresses stay.
 */
TEST(pid_namespace_reader_sees_its_pids)
{
	struct rc_nodes mem;
	struct rc_dev d = { .fd = -1 };
	struct rcb_event ev[2] = { { 0 } };
	int p[2], tfd, status, err;
	pid_t child;

	tfd = rc_test_open();
	if (tfd == -ENOENT)
		SKIP(return, "no test module (REFCNT_TEST_KO)");
	ASSERT_LE(0, tfd);
	close(tfd);
	ASSERT_EQ(0, rc_mem_nodes(&mem));
	ASSERT_EQ(0, rcd_open_clean(&d, mem.id[0]));
	/* Queued before the child exists: the parent's record. */
	ASSERT_EQ(0, ns_sample_fold(&d, rcd_mid_set(&d, 11), NS_VA1));
	err = unshare(CLONE_NEWPID) ? -errno : 0;
	if (err == -EINVAL) {
		EXPECT_EQ(0, rcd_close_clean(&d));
		SKIP(return, "no pid namespaces (CONFIG_PID_NS) here");
	}
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, pipe(p));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		int fd = rc_open_node(d.nid, O_RDONLY | O_NONBLOCK);
		int ok = getpid() == 1 && fd >= 0 &&
			 rc_events(fd, &ev[0], 1) == 1 &&
			 !ns_sample_fold(&d, rcd_mid_set(&d, 13), NS_VA2) &&
			 rc_events(fd, &ev[1], 1) == 1;

		if (!ok || write(p[1], ev, sizeof(ev)) != sizeof(ev))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	ASSERT_EQ((ssize_t)sizeof(ev), read(p[0], ev, sizeof(ev)));
	ASSERT_EQ(child, waitpid(child, &status, 0));
	ASSERT_EQ(0, status);

	EXPECT_EQ(rcd_mid_set(&d, 11), ev[0].set);
	EXPECT_EQ(0, ev[0].pid);
	EXPECT_EQ(NS_VA1, ev[0].vaddr);
	EXPECT_EQ((uint32_t)RCB_EVENT_F_CONTEXT, ev[0].flags);
	EXPECT_EQ(rcd_mid_set(&d, 13), ev[1].set);
	EXPECT_EQ(1, ev[1].pid);
	EXPECT_EQ(NS_VA2, ev[1].vaddr);
	EXPECT_EQ((uint32_t)RCB_EVENT_F_CONTEXT, ev[1].flags);
	EXPECT_EQ(0, rcd_close_clean(&d));
}

#define NS_PAGES	8

/* The flags of the first entry of nobody's query of its page @p. */
static uint64_t ns_page_flags(int fd, void *p, size_t pg,
			      struct rcb_page_counters *e)
{
	struct rcb_range_query q = {
		.vaddr = (uintptr_t)p,
		.len = pg,
		.buf = (uintptr_t)e,
		.buf_entries = 1,
		.flags = RCB_RANGE_EXTENDED,
	};

	memset(e, 0xee, sizeof(*e));
	if (ioctl(fd, RCB_RANGE_QUERY, &q) || q.nr_entries < 1)
		return ~0ULL;
	return e->flags & ~(uint64_t)RCB_PAGE_THP;
}

/*
 * Private anonymous pages shared with a child since fork() hold the
 * child's references too: nobody's range query denies them (zero
 * counters, cnodeid -1) until a write copies them, or the child is gone.
 */
TEST(nobody_query_denies_pages_shared_since_fork)
{
	size_t pg = rc_page_size(), i;
	struct rcb_page_counters e;
	uint64_t want;
	uint8_t *p;
	pid_t child;
	int fd;

	fd = ns_first_node_fd(_metadata);
	ASSERT_LE(0, fd);
	ns_drop_to_nobody(_metadata);
	p = mmap(NULL, NS_PAGES * pg, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 1, NS_PAGES * pg);
	for (i = 0; i < NS_PAGES; i++)
		ASSERT_EQ((uint64_t)RCB_PAGE_PRESENT,
			  ns_page_flags(fd, p + i * pg, pg, &e));

	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		pause();
		_exit(0);
	}
	/* The first half copied by our writes, the rest still shared. */
	memset(p, 2, NS_PAGES / 2 * pg);
	for (i = 0; i < NS_PAGES; i++) {
		want = i < NS_PAGES / 2 ? RCB_PAGE_PRESENT :
		       RCB_PAGE_PRESENT | RCB_PAGE_DENIED;
		EXPECT_EQ(want, ns_page_flags(fd, p + i * pg, pg, &e))
			TH_LOG("page %zu", i);
		if (want & RCB_PAGE_DENIED) {
			EXPECT_EQ(-1, e.cnodeid);
			EXPECT_EQ(0U, e.refcnt[0]);
		}
	}
	EXPECT_EQ(0, kill(child, SIGKILL));
	EXPECT_EQ(child, waitpid(child, NULL, 0));
	for (i = 0; i < NS_PAGES; i++)
		EXPECT_EQ((uint64_t)RCB_PAGE_PRESENT,
			  ns_page_flags(fd, p + i * pg, pg, &e))
			TH_LOG("page %zu after the child", i);
	close(fd);
}

/*
 * A node's statistics (references, folds...) follow what every process
 * does: root's like the device (0440; udev hands them to the device's
 * readers), so nobody's open() of each is EACCES.
 */
TEST(node_stats_not_world_readable)
{
	static const char *const names[] = {
		"references", "pegged", "saturated", "folds", "migrations",
		"events_dropped", "refs_dropped", "refs_deferred",
		"defer_full", "discarded", "overflowed", "offlined",
		"table_bytes",
	};
	struct rc_nodes mem;
	char path[128];
	struct stat st;
	size_t i;

	ASSERT_EQ(0, rc_mem_nodes(&mem));
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path),
			 "/sys/class/misc/refcnt-node%d/stats/%s", mem.id[0],
			 names[i]);
		ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s", path);
		EXPECT_EQ(0440U, st.st_mode & 07777) TH_LOG("%s", path);
	}
	ns_drop_to_nobody(_metadata);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path),
			 "/sys/class/misc/refcnt-node%d/stats/%s", mem.id[0],
			 names[i]);
		EXPECT_EQ(-1, open(path, O_RDONLY)) TH_LOG("%s", path);
		EXPECT_EQ(EACCES, errno) TH_LOG("%s", path);
	}
}

TEST_HARNESS_MAIN
