// SPDX-License-Identifier: GPL-2.0
/*
 * Counting one process (RCB_COUNT_START): the fault feed runs for the
 * counted process alone, every fault (period 1), with the machine-wide
 * feed off. Each test touches fresh pages once, so each page must hold
 * exactly one reference when counted, and none otherwise: another
 * process faulting at the same time adds nothing, ranges count only
 * themselves, threads are counted, children only with
 * RCB_COUNT_CHILDREN, closing the session stops counting, the module
 * cannot be unloaded meanwhile, and the privilege rules hold as nobody,
 * perf_event_paranoid's included, each refusal with its errno.
 */
#include <grp.h>
#include <pthread.h>

#include "refcnt_helpers.h"
#include "harness_filter.h"

#ifndef MADV_NOHUGEPAGE
#define MADV_NOHUGEPAGE		15
#endif

#define RC_PAGES	64
#define NOBODY		65534

FIXTURE(count) {
	struct rcb_info info;
	struct rc_nodes memory;
	size_t pg;
	int fd;
	char numa_balancing[32];
	bool nb_saved;
	/* MAP_SHARED: what children report */
	volatile uint64_t *shared;
};

static void rc_set_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);

	if (fd >= 0) {
		if (write(fd, val, strlen(val)) < 0)
			perror(path);
		close(fd);
	}
}

FIXTURE_SETUP(count)
{
	uint64_t period = 1;
	int i;

	self->pg = rc_page_size();
	ASSERT_EQ(0, rc_node_list("has_memory", &self->memory));
	self->fd = rc_open_node(self->memory.id[0], O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, RCB_INFO_GET, &self->info));
	/* Only the sessions count here. */
	ASSERT_EQ(0, rc_read_u64(RC_PARAMDIR "/fault_period", &period));
	ASSERT_EQ(0ULL, period);
	/* Pages we get may carry counts of earlier users. */
	for (i = 0; i < self->memory.n; i++)
		ASSERT_EQ(0, rc_reset_node(self->memory.id[i]));
	/* NUMA hinting faults would be faults of ours too. */
	if (rc_read_file("/proc/sys/kernel/numa_balancing",
			 self->numa_balancing,
			 sizeof(self->numa_balancing)) >= 0) {
		self->nb_saved = true;
		rc_set_file("/proc/sys/kernel/numa_balancing", "0");
	}
	self->shared = mmap(NULL, self->pg, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->shared);
}

FIXTURE_TEARDOWN(count)
{
	if (self->nb_saved)
		rc_set_file("/proc/sys/kernel/numa_balancing",
			    self->numa_balancing);
	munmap((void *)self->shared, self->pg);
	close(self->fd);
}

/*
 * Zero every counter: pages freed by an earlier part of a test (a child
 * that exited) come back with the counts it left.
 */
static int rc_reset_all(FIXTURE_DATA(count) *self)
{
	int i, err = 0;

	for (i = 0; i < self->memory.n && !err; i++)
		err = rc_reset_node(self->memory.id[i]);
	return err;
}

/* Fresh private anonymous pages, never a huge page. */
static char *rc_pages(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_NOHUGEPAGE);
	return p;
}

/* One write fault per page. */
static void rc_touch(char *p, size_t len, size_t pg)
{
	size_t i;

	for (i = 0; i < len; i += pg)
		((volatile char *)p)[i] = 1;
}

/*
 * References to [p, p + len) of process pid, all counters, extended and
 * hardware; UINT64_MAX if the query fails.
 */
static uint64_t rc_total(int fd, pid_t pid, void *p, size_t len)
{
	size_t cap = len / 256 + 2, i;
	struct rcb_page_counters *e = calloc(cap, sizeof(*e));
	uint64_t sum = 0;
	unsigned int pass, k;

	if (!e)
		return UINT64_MAX;
	for (pass = 0; pass < 2; pass++) {
		struct rcb_range_query q = {
			.vaddr = (uintptr_t)p, .len = len, .buf = (uintptr_t)e,
			.buf_entries = cap, .pid = pid,
			.flags = pass ? RCB_RANGE_EXTENDED : 0,
		};

		if (ioctl(fd, RCB_RANGE_QUERY, &q)) {
			sum = UINT64_MAX;
			break;
		}
		for (i = 0; i < q.nr_entries; i++)
			for (k = 0; k < RCB_MAX_COUNTERS; k++)
				sum += e[i].refcnt[k];
	}
	free(e);
	return sum;
}

/* RCB_COUNT_START: the session's fd, or -errno. */
static int rc_count(int fd, pid_t pid, uint32_t flags, uint32_t fault_period,
		    const struct rcb_count_range *r, uint32_t nr)
{
	struct rcb_count c = {
		.pid = pid, .flags = flags, .fault_period = fault_period,
		.ranges = (uintptr_t)r, .nr_ranges = nr,
	};
	int ret = ioctl(fd, RCB_COUNT_START, &c);

	return ret < 0 ? -errno : ret;
}

static int rc_count_stats(int sfd, struct rcb_count_stats *st)
{
	memset(st, 0, sizeof(*st));
	return ioctl(sfd, RCB_COUNT_STATS, st) ? -errno : 0;
}

/* The session's samples add up. */
#define ASSERT_STATS_SUM(st) \
	ASSERT_EQ((st).samples, (st).delivered + (st).unresolved + (st).outside)

/*
 * The caller counts itself while another process faults as many pages
 * at the same time: each of its pages has one reference, the other
 * process's none.
 */
TEST_F(count, counts_only_this_process)
{
	size_t len = RC_PAGES * self->pg;
	struct rcb_count_stats st;
	int go[2], sfd;
	char *p, c = 0;
	pid_t other;

	ASSERT_EQ(0, pipe(go));
	other = rc_fork();
	ASSERT_LE(0, other);
	if (!other) {
		char *q = rc_pages(len);

		if (!q || read(go[0], &c, 1) != 1)
			_exit(1);
		rc_touch(q, len, self->pg);
		self->shared[0] = rc_total(self->fd, 0, q, len);
		_exit(0);
	}
	p = rc_pages(len);
	ASSERT_NE(NULL, p);
	sfd = rc_count(self->fd, 0, 0, 1, NULL, 0);
	ASSERT_LE(0, sfd);
	ASSERT_EQ(1, write(go[1], &c, 1));
	rc_touch(p, len, self->pg);
	ASSERT_EQ(0, rc_wait(other));
	EXPECT_EQ((uint64_t)RC_PAGES, rc_total(self->fd, 0, p, len));
	EXPECT_EQ(0ULL, self->shared[0]);
	ASSERT_EQ(0, rc_count_stats(sfd, &st));
	ASSERT_STATS_SUM(st);
	EXPECT_LE((uint64_t)RC_PAGES, st.delivered);
	EXPECT_EQ(0ULL, st.outside);
	close(sfd);
	munmap(p, len);
}

/* Two ranges of four quarters: only they count, one reference a page. */
TEST_F(count, ranges_count_only_the_ranges)
{
	size_t q = RC_PAGES / 4 * self->pg, len = 4 * q;
	struct rcb_count_range r[2];
	struct rcb_count_stats st;
	char *p = rc_pages(len);
	int sfd;

	ASSERT_NE(NULL, p);
	r[0].start = (uintptr_t)p + q;
	r[0].len = q;
	r[1].start = (uintptr_t)p + 3 * q;
	r[1].len = q;
	sfd = rc_count(self->fd, 0, 0, 1, r, 2);
	ASSERT_LE(0, sfd);
	rc_touch(p, len, self->pg);
	ASSERT_EQ(0, rc_count_stats(sfd, &st));
	close(sfd);
	EXPECT_EQ(0ULL, rc_total(self->fd, 0, p, q));
	EXPECT_EQ((uint64_t)RC_PAGES / 4, rc_total(self->fd, 0, p + q, q));
	EXPECT_EQ(0ULL, rc_total(self->fd, 0, p + 2 * q, q));
	EXPECT_EQ((uint64_t)RC_PAGES / 4, rc_total(self->fd, 0, p + 3 * q, q));
	ASSERT_STATS_SUM(st);
	EXPECT_EQ((uint64_t)RC_PAGES / 2, st.delivered);
	EXPECT_LE((uint64_t)RC_PAGES / 2, st.outside);
	munmap(p, len);
}

struct rc_thread {
	pthread_barrier_t *start;
	char *p;
	size_t len, pg;
};

static void *rc_thread_touch(void *arg)
{
	struct rc_thread *t = arg;

	if (t->start)
		pthread_barrier_wait(t->start);
	rc_touch(t->p, t->len, t->pg);
	return NULL;
}

/* A thread that was there before the start and one created after count. */
TEST_F(count, threads_are_counted)
{
	size_t len = RC_PAGES * self->pg;
	pthread_barrier_t start;
	struct rc_thread before = { &start, rc_pages(len), len, self->pg };
	struct rc_thread after = { NULL, rc_pages(len), len, self->pg };
	pthread_t tb, ta;
	int sfd;

	ASSERT_NE(NULL, before.p);
	ASSERT_NE(NULL, after.p);
	ASSERT_EQ(0, pthread_barrier_init(&start, NULL, 2));
	ASSERT_EQ(0, pthread_create(&tb, NULL, rc_thread_touch, &before));
	sfd = rc_count(self->fd, 0, 0, 1, NULL, 0);
	ASSERT_LE(0, sfd);
	pthread_barrier_wait(&start);
	ASSERT_EQ(0, pthread_join(tb, NULL));
	ASSERT_EQ(0, pthread_create(&ta, NULL, rc_thread_touch, &after));
	ASSERT_EQ(0, pthread_join(ta, NULL));
	close(sfd);
	EXPECT_EQ((uint64_t)RC_PAGES, rc_total(self->fd, 0, before.p, len));
	EXPECT_EQ((uint64_t)RC_PAGES, rc_total(self->fd, 0, after.p, len));
	pthread_barrier_destroy(&start);
}

/* A child created while counting: what it reports of its own pages. */
static uint64_t rc_child_refs(struct __test_metadata *_metadata,
			      FIXTURE_DATA(count) *self, uint32_t flags)
{
	size_t len = RC_PAGES * self->pg;
	pid_t child;
	int sfd;

	EXPECT_EQ(0, rc_reset_all(self));
	sfd = rc_count(self->fd, 0, flags, 1, NULL, 0);
	EXPECT_LE(0, sfd);
	self->shared[0] = UINT64_MAX - 1;
	child = rc_fork();
	if (!child) {
		char *q = rc_pages(len);

		if (!q)
			_exit(1);
		rc_touch(q, len, self->pg);
		self->shared[0] = rc_total(self->fd, 0, q, len);
		_exit(0);
	}
	EXPECT_EQ(0, rc_wait(child));
	close(sfd);
	return self->shared[0];
}

TEST_F(count, children_only_when_asked)
{
	EXPECT_EQ(0ULL, rc_child_refs(_metadata, self, 0));
	EXPECT_EQ((uint64_t)RC_PAGES,
		  rc_child_refs(_metadata, self, RCB_COUNT_CHILDREN));
}

/*
 * A tool counts another process (root: CAP_SYS_PTRACE): the target's
 * pages count, the tool's own do not; the session outlives the target.
 */
TEST_F(count, tool_counts_another_process)
{
	size_t len = RC_PAGES * self->pg;
	struct rcb_count_stats st;
	int go[2], sfd;
	char *p = rc_pages(len), c = 0;
	pid_t target;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, pipe(go));
	target = rc_fork();
	ASSERT_LE(0, target);
	if (!target) {
		char *q = rc_pages(len);

		if (!q || read(go[0], &c, 1) != 1)
			_exit(1);
		rc_touch(q, len, self->pg);
		self->shared[0] = rc_total(self->fd, 0, q, len);
		_exit(0);
	}
	sfd = rc_count(self->fd, target, 0, 1, NULL, 0);
	ASSERT_LE(0, sfd);
	/*
	 * The tool's pages before the target's: a target done before the
	 * tool touched its pages would free pages it had counted, and the
	 * tool's pages could be those (counters are per physical page).
	 */
	rc_touch(p, len, self->pg);
	ASSERT_EQ(1, write(go[1], &c, 1));
	ASSERT_EQ(0, rc_wait(target));
	EXPECT_EQ((uint64_t)RC_PAGES, self->shared[0]);
	EXPECT_EQ(0ULL, rc_total(self->fd, 0, p, len));
	/* The target is gone; its session still reports. */
	ASSERT_EQ(0, rc_count_stats(sfd, &st));
	ASSERT_STATS_SUM(st);
	EXPECT_LE((uint64_t)RC_PAGES, st.delivered);
	EXPECT_EQ(0, close(sfd));
	munmap(p, len);
}

/* Counting lasts until the last close of the session. */
TEST_F(count, close_stops_counting)
{
	size_t len = RC_PAGES * self->pg;
	char *a = rc_pages(len), *b = rc_pages(len), *c = rc_pages(len);
	int sfd, dup_fd;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, c);
	sfd = rc_count(self->fd, 0, 0, 1, NULL, 0);
	ASSERT_LE(0, sfd);
	EXPECT_EQ(FD_CLOEXEC, fcntl(sfd, F_GETFD));
	dup_fd = dup(sfd);
	ASSERT_LE(0, dup_fd);
	rc_touch(a, len, self->pg);
	ASSERT_EQ(0, close(sfd));
	rc_touch(b, len, self->pg);	/* the copy still counts */
	ASSERT_EQ(0, close(dup_fd));
	rc_touch(c, len, self->pg);
	EXPECT_EQ((uint64_t)RC_PAGES, rc_total(self->fd, 0, a, len));
	EXPECT_EQ((uint64_t)RC_PAGES, rc_total(self->fd, 0, b, len));
	EXPECT_EQ(0ULL, rc_total(self->fd, 0, c, len));
}

/*
 * The last close may come from a counted process as it exits: a child
 * holding the only copy of a session that counts it and its parent, and
 * a process counting itself that never closes its session. Both count
 * until then, and the module unloads after (the rig checks rmmod).
 */
TEST_F(count, last_close_at_exit)
{
	size_t len = RC_PAGES * self->pg;
	int sfd, go[2];
	pid_t child;
	char c = 0;

	ASSERT_EQ(0, pipe(go));
	sfd = rc_count(self->fd, 0, RCB_COUNT_CHILDREN, 1, NULL, 0);
	ASSERT_LE(0, sfd);
	self->shared[0] = UINT64_MAX - 1;
	child = rc_fork();
	ASSERT_LE(0, child);
	if (!child) {
		char *q = rc_pages(len);

		if (!q || read(go[0], &c, 1) != 1)
			_exit(1);
		rc_touch(q, len, self->pg);
		self->shared[0] = rc_total(self->fd, 0, q, len);
		_exit(0);	/* its copy of sfd is the last */
	}
	ASSERT_EQ(0, close(sfd));
	ASSERT_EQ(1, write(go[1], &c, 1));
	ASSERT_EQ(0, rc_wait(child));
	EXPECT_EQ((uint64_t)RC_PAGES, self->shared[0]);

	ASSERT_EQ(0, rc_reset_all(self));
	self->shared[0] = UINT64_MAX - 1;
	child = rc_fork();
	ASSERT_LE(0, child);
	if (!child) {
		char *q = rc_pages(len);

		if (!q || rc_count(self->fd, 0, 0, 1, NULL, 0) < 0)
			_exit(1);
		rc_touch(q, len, self->pg);
		self->shared[0] = rc_total(self->fd, 0, q, len);
		_exit(0);	/* never closed */
	}
	ASSERT_EQ(0, rc_wait(child));
	EXPECT_EQ((uint64_t)RC_PAGES, self->shared[0]);
}

/* An open session pins the module: unloading is refused, then works. */
TEST_F(count, unload_refused_while_counting)
{
	int sfd = rc_count(self->fd, 0, 0, 1, NULL, 0);

	ASSERT_LE(0, sfd);
	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(-EWOULDBLOCK, rc_unload());
	EXPECT_TRUE(rc_module_loaded());
	self->fd = rc_open_node(self->memory.id[0], O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, close(sfd));
}

/* Arguments and files the ABI refuses, each with its errno. */
TEST_F(count, bad_arguments)
{
	struct rcb_count_range r[RCB_COUNT_MAX_RANGES + 1];
	struct rcb_count c = { .fault_period = 1 };
	struct rcb_count_stats st;
	char *none;
	int sfd;
	size_t i;

	for (i = 0; i <= RCB_COUNT_MAX_RANGES; i++) {
		r[i].start = 4096 * (i + 1);
		r[i].len = 4096;
	}
	/* The flags are bits 0 up: the next bit is the first unknown one. */
	EXPECT_EQ(-EINVAL, rc_count(self->fd, 0, RCB_COUNT_FLAGS + 1, 1, NULL, 0));
	EXPECT_EQ(-EINVAL, rc_count(self->fd, 0, 0, 0, NULL, 0));
	EXPECT_EQ(-EINVAL, rc_count(self->fd, -1, 0, 1, NULL, 0));
	EXPECT_EQ(-EINVAL, rc_count(self->fd, 0, 0, 1, r,
				    RCB_COUNT_MAX_RANGES + 1));
	r[0].len = 0;
	EXPECT_EQ(-EINVAL, rc_count(self->fd, 0, 0, 1, r, 1));
	r[0].start = UINT64_MAX - 4095;
	r[0].len = 8192;
	EXPECT_EQ(-EINVAL, rc_count(self->fd, 0, 0, 1, r, 1));
	EXPECT_EQ(-EFAULT, rc_count(self->fd, 0, 0, 1, NULL, 1));
	c.nr_iranges = RCB_COUNT_MAX_RANGES + 1;
	EXPECT_EQ(-1, ioctl(self->fd, RCB_COUNT_START, &c));
	EXPECT_EQ(EINVAL, errno);
	c.nr_iranges = 0;
	c.reserved[0] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, RCB_COUNT_START, &c));
	EXPECT_EQ(EINVAL, errno);
	none = mmap(NULL, self->pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	ASSERT_NE(MAP_FAILED, none);
	EXPECT_EQ(-1, ioctl(self->fd, RCB_COUNT_START, none));
	EXPECT_EQ(EFAULT, errno);
	/* Kernel thread kthreadd (pid 2) has no memory; 1 is no tgid here. */
	EXPECT_EQ(-ESRCH, rc_count(self->fd, 2, 0, 1, NULL, 0));
	EXPECT_EQ(-ESRCH, rc_count(self->fd, INT32_MAX, 0, 1, NULL, 0));

	/* STATS belongs to a session, START to a node device. */
	EXPECT_EQ(-1, ioctl(self->fd, RCB_COUNT_STATS, &st));
	EXPECT_EQ(ENOTTY, errno);
	sfd = rc_count(self->fd, 0, 0, 1, r + 1, 1);
	ASSERT_LE(0, sfd);
	c.reserved[0] = 0;
	EXPECT_EQ(-1, ioctl(sfd, RCB_COUNT_START, &c));
	EXPECT_EQ(ENOTTY, errno);
	memset(&st, 0, sizeof(st));
	st.flags = 1;
	EXPECT_EQ(-1, ioctl(sfd, RCB_COUNT_STATS, &st));
	EXPECT_EQ(EINVAL, errno);
	st.flags = 0;
	st.dropped = 1;
	EXPECT_EQ(-1, ioctl(sfd, RCB_COUNT_STATS, &st));
	EXPECT_EQ(EINVAL, errno);
	st.dropped = 0;
	st.throttled = 1;
	EXPECT_EQ(-1, ioctl(sfd, RCB_COUNT_STATS, &st));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(sfd, RCB_COUNT_STATS, none));
	EXPECT_EQ(EFAULT, errno);
	close(sfd);
	munmap(none, self->pg);
}

/*
 * A process whose main thread has exited alone while another thread runs
 * on is counted through that thread (kmod/target.c); with no thread left,
 * no process.
 */
TEST_F(count, main_thread_exited)
{
	char *mem = mmap(NULL, self->pg, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pid_t child;
	int release, sfd;
	char c = 0;

	if (geteuid())
		SKIP(return, "needs root (CAP_SYS_PTRACE)");
	ASSERT_NE(MAP_FAILED, mem);
	child = rc_fork_main_exited(mem, self->pg, &release);
	ASSERT_LT(0, child);
	sfd = rc_count(self->fd, child, 0, 1, NULL, 0);
	EXPECT_LE(0, sfd) TH_LOG("%s", strerror(-sfd));
	if (sfd >= 0)
		close(sfd);
	ASSERT_EQ(1, write(release, &c, 1));
	close(release);
	ASSERT_EQ(0, rc_wait(child));
	EXPECT_EQ(-ESRCH, rc_count(self->fd, child, 0, 1, NULL, 0));
	munmap(mem, self->pg);
}

/* A thread id that is not a process's is refused. */
TEST_F(count, thread_id_is_not_a_process)
{
	pid_t tid = rc_park_thread();

	ASSERT_LT(0, tid);
	EXPECT_EQ(-ESRCH, rc_count(self->fd, tid, 0, 1, NULL, 0));
}

/*
 * PEBS/IBS for one process needs the PMU, as the machine-wide feed does:
 * without it (a guest) EOPNOTSUPP, with it a session.
 */
TEST_F(count, pebs_needs_the_pmu)
{
	struct rcb_count c = { .pebs_period = 10007 };
	int sfd = ioctl(self->fd, RCB_COUNT_START, &c);

	if (sfd >= 0) {
		TH_LOG("this machine has a precise memory-sampling PMU");
		close(sfd);
		return;
	}
	EXPECT_EQ(EOPNOTSUPP, errno);
}

struct rc_churn {
	volatile int stop;
	size_t pg;
};

/* Fault, unmap, fork children that fault and exit, until told. */
static void *rc_churn(void *arg)
{
	struct rc_churn *c = arg;
	size_t len = 16 * c->pg;
	unsigned int n = 0;

	while (!c->stop) {
		char *p = rc_pages(len);

		if (p) {
			rc_touch(p, len, c->pg);
			munmap(p, len);
		}
		if (!(++n % 8)) {
			pid_t pid = fork();

			if (!pid) {
				p = rc_pages(len);
				if (p)
					rc_touch(p, len, c->pg);
				_exit(0);
			}
			if (pid > 0)
				waitpid(pid, NULL, 0);
		}
	}
	return NULL;
}

/*
 * Sessions started and closed 50 times while two threads fault, unmap
 * and fork: every start works, and the kernel stays quiet (the rig fails
 * the run on any warning). Ends with the module unloadable again.
 */
TEST_F_TIMEOUT(count, sessions_come_and_go_under_load, 180)
{
	struct rc_churn c = { .pg = self->pg };
	struct rcb_count_range r = { .start = 0x10000, .len = 1ULL << 46 };
	pthread_t t[2];
	int i, sfd;

	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, rc_churn, &c));
	for (i = 0; i < 50; i++) {
		sfd = rc_count(self->fd, 0, i & 1 ? RCB_COUNT_CHILDREN : 0, 1,
			       i & 2 ? &r : NULL, i & 2 ? 1 : 0);
		EXPECT_LE(0, sfd);
		if (sfd < 0)
			break;
		usleep(2000);
		EXPECT_EQ(0, close(sfd));
	}
	c.stop = 1;
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_join(t[i], NULL));
}

static void rc_drop_to_nobody(struct __test_metadata *_metadata)
{
	ASSERT_EQ(0, setgroups(0, NULL));
	ASSERT_EQ(0, setresgid(NOBODY, NOBODY, NOBODY));
	ASSERT_EQ(0, setresuid(NOBODY, NOBODY, NOBODY));
}

#define RC_PARANOID	"/proc/sys/kernel/perf_event_paranoid"

/*
 * Set kernel.perf_event_paranoid to @level for the rest of this test
 * process, which may drop its privileges meanwhile: a child that stays
 * root puts the old level back when the test process exits, whatever
 * way (it sees the end of a pipe only the test process holds open).
 */
static void rc_paranoid_for_test(struct __test_metadata *_metadata,
				 const char *level)
{
	char old[16] = "";
	int fd, p[2], i;
	ssize_t n;
	pid_t pid;

	fd = open(RC_PARANOID, O_RDONLY);
	ASSERT_LE(0, fd);
	n = read(fd, old, sizeof(old) - 1);
	close(fd);
	ASSERT_LT(0, n);
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* Nothing of the test's (a device file) kept open here. */
		for (i = 3; i < 1024; i++)
			if (i != p[0])
				close(i);
		while (read(p[0], &n, 1) > 0)
			;
		rc_set_file(RC_PARANOID, old);
		_exit(0);
	}
	close(p[0]);
	rc_set_file(RC_PARANOID, level);
}

/* RCB_COUNT_START with these periods: the session's fd, or -errno. */
static int rc_count_feeds(int fd, pid_t pid, uint32_t fault_period,
			  uint32_t pebs_period)
{
	struct rcb_count c = {
		.pid = pid, .fault_period = fault_period,
		.pebs_period = pebs_period,
	};
	int ret = ioctl(fd, RCB_COUNT_START, &c);

	return ret < 0 ? -errno : ret;
}

/*
 * A session's events are checked as perf_event_open() checks its
 * caller's: as nobody with perf_event_paranoid at 2, the fault feed
 * (user-space software events) is allowed, the PEBS/IBS feed (precise
 * samples with PERF_SAMPLE_PHYS_ADDR, perf_allow_kernel()) is EACCES
 * whether or not the machine has it, and so is a session with both.
 */
TEST_F(count, paranoid_2_denies_nobody_physical_samples)
{
	int sfd;

	rc_paranoid_for_test(_metadata, "2");
	rc_drop_to_nobody(_metadata);
	sfd = rc_count_feeds(self->fd, 0, 1, 0);
	EXPECT_LE(0, sfd);
	if (sfd >= 0)
		close(sfd);
	EXPECT_EQ(-EACCES, rc_count_feeds(self->fd, 0, 0, 10007));
	EXPECT_EQ(-EACCES, rc_count_feeds(self->fd, 0, 1, 10007));
}

/*
 * With perf_event_paranoid at 3 (Debian's default: perf_event_open()
 * for CAP_SYS_ADMIN only), nobody may have no session with the PEBS/IBS
 * feed, and is told so before the pid is looked at, as perf does. The
 * level itself is visible to no module (Documentation/security.rst): the
 * fault feed of itself stays nobody's, as at 2.
 */
TEST_F(count, paranoid_3_denies_nobody_pmu_sessions)
{
	int sfd;

	rc_paranoid_for_test(_metadata, "3");
	rc_drop_to_nobody(_metadata);
	EXPECT_EQ(-EACCES, rc_count_feeds(self->fd, 0, 0, 10007));
	EXPECT_EQ(-EACCES, rc_count_feeds(self->fd, 0, 1, 10007));
	EXPECT_EQ(-EACCES, rc_count_feeds(self->fd, getpid(), 0, 10007));
	EXPECT_EQ(-EACCES, rc_count_feeds(self->fd, INT32_MAX, 1, 10007));
	sfd = rc_count_feeds(self->fd, 0, 1, 0);
	EXPECT_LE(0, sfd);
	if (sfd >= 0)
		close(sfd);
}

/*
 * Root (CAP_SYS_ADMIN, so perfmon_capable()) at 3 starts the fault feed;
 * the PEBS/IBS feed then needs the PMU alone (pebs_needs_the_pmu).
 */
TEST_F(count, paranoid_3_lets_root_count)
{
	int sfd;

	rc_paranoid_for_test(_metadata, "3");
	sfd = rc_count_feeds(self->fd, 0, 1, 0);
	ASSERT_LE(0, sfd);
	close(sfd);
	sfd = rc_count_feeds(self->fd, 0, 0, 10007);
	if (sfd >= 0)
		close(sfd);
	else
		EXPECT_EQ(-EOPNOTSUPP, sfd);
}

/*
 * As nobody, on a device file opened as root, with perf_event_paranoid
 * at 2 (perf lets it sample its own user space): counting itself works
 * and counts; another process, root's or nobody's own, or one that does
 * not exist, is EPERM (before the pid is looked up).
 */
TEST_F(count, unprivileged_counts_only_itself)
{
	size_t len = RC_PAGES * self->pg;
	char *p = rc_pages(len), c = 0;
	int sfd, ready[2];
	pid_t peer;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, pipe(ready));
	peer = rc_fork();
	ASSERT_LE(0, peer);
	if (!peer) {
		if (setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY) ||
		    write(ready[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	/* The peer is nobody's before we are: nobody may kill it after. */
	ASSERT_EQ(1, read(ready[0], &c, 1));
	rc_paranoid_for_test(_metadata, "2");
	rc_drop_to_nobody(_metadata);
	/* The harness that forked us runs as root. */
	EXPECT_EQ(-EPERM, rc_count(self->fd, getppid(), 0, 1, NULL, 0));
	EXPECT_EQ(-EPERM, rc_count(self->fd, peer, 0, 1, NULL, 0));
	EXPECT_EQ(-EPERM, rc_count(self->fd, INT32_MAX, 0, 1, NULL, 0));
	EXPECT_EQ(0, kill(peer, SIGKILL));
	EXPECT_EQ(RC_KILLED(SIGKILL), rc_wait(peer));

	sfd = rc_count(self->fd, getpid(), 0, 1, NULL, 0);
	ASSERT_LE(0, sfd);
	rc_touch(p, len, self->pg);
	close(sfd);
	EXPECT_EQ((uint64_t)RC_PAGES, rc_total(self->fd, 0, p, len));
}

/*
 * refcnt.max_user_sessions, the sessions one user without CAP_SYS_ADMIN
 * may hold; its documented default on a module without the parameter
 * (one from before the limit, which the flood below must fail on).
 */
#define RC_USER_SESSIONS_DEFAULT	16

static unsigned int rc_user_sessions(void)
{
	uint64_t v;

	if (rc_read_u64(RC_PARAMDIR "/max_user_sessions", &v))
		return RC_USER_SESSIONS_DEFAULT;
	return v;
}

/* What the flooding child saw: sessions started, then the errno after. */
struct rc_flood {
	int started;
	int err;
	int again;
};

/*
 * As nobody: start sessions on itself until one fails, up to @max + 1;
 * then, told to go on, close one and start one again.
 */
static void rc_flood_child(int fd, unsigned int max, int report, int go)
{
	struct rc_flood r = {};
	int sfd = 0, last = -1;
	char c;

	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY))
		_exit(2);
	while (r.started <= (int)max) {
		sfd = rc_count(fd, 0, 0, 1, NULL, 0);
		if (sfd < 0)
			break;
		last = sfd;
		r.started++;
	}
	r.err = sfd < 0 ? -sfd : 0;
	if (write(report, &r, sizeof(r)) != sizeof(r) ||
	    read(go, &c, 1) != 1)
		_exit(3);
	if (last >= 0)
		close(last);
	sfd = rc_count(fd, 0, 0, 1, NULL, 0);
	r.again = sfd < 0 ? -sfd : 0;
	if (write(report, &r, sizeof(r)) != sizeof(r))
		_exit(3);
	_exit(0);
}

/*
 * A session flood by one unprivileged user stops at its limit: exactly
 * max_user_sessions sessions start, the next is EMFILE, and closing one
 * makes room for one more. Root, meanwhile, still starts its sessions,
 * more than that limit: CAP_SYS_ADMIN is not limited.
 */
TEST_F(count, session_flood_stops_at_the_user_limit)
{
	unsigned int max = rc_user_sessions(), i;
	int report[2], go[2], fds[RC_USER_SESSIONS_DEFAULT * 4 + 1];
	struct rc_flood r;
	pid_t pid;
	char c = 0;

	ASSERT_GT(max, 0U);
	ASSERT_GE(ARRAY_SIZE(fds), max + 1);
	rc_paranoid_for_test(_metadata, "2");
	ASSERT_EQ(0, pipe(report));
	ASSERT_EQ(0, pipe(go));
	pid = rc_fork();
	ASSERT_LE(0, pid);
	if (!pid)
		rc_flood_child(self->fd, max, report[1], go[0]);
	ASSERT_EQ((ssize_t)sizeof(r), read(report[0], &r, sizeof(r)));
	EXPECT_EQ((int)max, r.started);
	EXPECT_EQ(EMFILE, r.err) {
		TH_LOG("session %d of nobody: %s", r.started + 1,
		       r.err ? strerror(r.err) : "started");
	}
	/* nobody at its limit: root is not held back by it, nor by one. */
	for (i = 0; i <= max; i++) {
		fds[i] = rc_count(self->fd, 0, 0, 1, NULL, 0);
		EXPECT_LE(0, fds[i]) {
			TH_LOG("root's session %u: %s", i + 1,
			       strerror(-fds[i]));
		}
	}
	for (i = 0; i <= max; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	ASSERT_EQ(1, write(go[1], &c, 1));
	ASSERT_EQ((ssize_t)sizeof(r), read(report[0], &r, sizeof(r)));
	EXPECT_EQ(0, r.again) {
		TH_LOG("after a close: %s", strerror(r.again));
	}
	EXPECT_EQ(0, rc_wait(pid));
}

/*
 * Root's machine-wide PEBS/IBS feed starts while a session of a user
 * without CAP_SYS_ADMIN holds the PMU: the feed takes precedence (that
 * session's PMU samples are dropped meanwhile), where a root session
 * would make the start EBUSY. Needs the PMU (not in a guest).
 */
TEST_F(count, root_feed_starts_over_unprivileged_session)
{
	const char *p = RC_PARAMDIR "/pebs_period";
	int sfd, ready[2], err;
	pid_t pid;

	sfd = rc_count_feeds(self->fd, 0, 0, 10007);
	if (sfd == -EOPNOTSUPP)
		SKIP(return, "no precise memory-sampling PMU here");
	ASSERT_LE(0, sfd);
	close(sfd);
	/* Physical-address samples for nobody: perf's level 1. */
	rc_paranoid_for_test(_metadata, "1");
	ASSERT_EQ(0, pipe(ready));
	pid = rc_fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(2);
		err = rc_count_feeds(self->fd, 0, 0, 10007);
		if (write(ready[1], &err, sizeof(err)) != sizeof(err))
			_exit(3);
		pause();
		_exit(0);
	}
	ASSERT_EQ((ssize_t)sizeof(err), read(ready[0], &err, sizeof(err)));
	ASSERT_LE(0, err) TH_LOG("nobody's PEBS session: %s", strerror(-err));
	sfd = open(p, O_WRONLY);
	ASSERT_LE(0, sfd);
	err = write(sfd, "10007", 5) == 5 ? 0 : errno;
	close(sfd);
	EXPECT_EQ(0, err) TH_LOG("root's feed start: %s", strerror(err));
	rc_set_file(p, "0");
	EXPECT_EQ(0, kill(pid, SIGKILL));
	EXPECT_EQ(RC_KILLED(SIGKILL), rc_wait(pid));
}

RC_HARNESS_MAIN
