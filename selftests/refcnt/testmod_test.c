// SPDX-License-Identifier: GPL-2.0
/*
 * The test module's interface (tools/testing/kmod/refcnt_test.c,
 * <linux/refcnt_test.h>), which the benchmarks and the sample tests use:
 * every bad argument with its exact errno, root only, and what
 * REFCNT_TEST_BENCH leaves in the counters, and that a counting session
 * gets a device feed's records of its thread alone. Skips where there is
 * no test module (REFCNT_TEST_KO unset: not the rig).
 */
#include <grp.h>

#include <linux/refcnt_test.h>

#include "refcnt_counters.h"

#define U64(x)	((unsigned long long)(x))
#define NOBODY	65534

FIXTURE(testmod) {
	struct rc_dev d;
	int tfd;
	unsigned int big;	/* the node's largest slot */
};

FIXTURE_SETUP(testmod)
{
	struct rc_nodes mem;
	unsigned int i;

	self->d.fd = -1;
	self->tfd = rc_test_open();
	if (self->tfd == -ENOENT)
		RC_SETUP_SKIP("no test module (REFCNT_TEST_KO)");
	ASSERT_LE(0, self->tfd) TH_LOG("%s: %s", RC_TEST_DEV,
				       strerror(-self->tfd));
	ASSERT_EQ(0, rc_mem_nodes(&mem));
	ASSERT_EQ(0, rcd_open_clean(&self->d, mem.id[0]));
	self->big = 0;
	for (i = 1; i < self->d.nslots; i++)
		if (self->d.slots[i].size > self->d.slots[self->big].size)
			self->big = i;
}

FIXTURE_TEARDOWN(testmod)
{
	if (self->d.fd >= 0)
		EXPECT_EQ(0, rcd_close_clean(&self->d));
	if (self->tfd >= 0)
		close(self->tfd);
}

/* A valid benchmark of @nr references over the node's largest slot. */
static void bench_arg(const struct rc_dev *d, unsigned int big, uint64_t nr,
		      struct refcnt_test_bench *b)
{
	memset(b, 0, sizeof(*b));
	b->paddr = d->slots[big].base;
	b->nr_sets = d->slots[big].size / d->info.rcb_granularity;
	b->table_sets = d->info.rcb_sw_sets;
	b->nr_refs = nr;
	b->granularity = d->info.rcb_granularity;
	b->counters_per_set = d->cps;
}

/* @b with one field changed is refused with EINVAL. */
#define BENCH_EINVAL(field, value)					\
	do {								\
		struct refcnt_test_bench bad = b;			\
									\
		bad.field = (value);					\
		errno = 0;						\
		EXPECT_EQ(-1, ioctl(self->tfd, REFCNT_TEST_BENCH, &bad)) \
			TH_LOG("%s = %llu", #field, U64(value));	\
		EXPECT_EQ(EINVAL, errno);				\
	} while (0)

TEST_F(testmod, bench_bad_arguments)
{
	struct refcnt_test_bench b;

	bench_arg(&self->d, self->big, 10, &b);
	BENCH_EINVAL(nr_refs, 0);
	BENCH_EINVAL(nr_refs, REFCNT_TEST_BENCH_MAX + 1);
	BENCH_EINVAL(nr_sets, 0);
	BENCH_EINVAL(table_sets, b.nr_sets - 1);
	BENCH_EINVAL(granularity, 0);
	BENCH_EINVAL(granularity, 3000);
	BENCH_EINVAL(counters_per_set, 0);
	BENCH_EINVAL(counters_per_set, RCB_MAX_COUNTERS + 1);
	BENCH_EINVAL(paddr, b.paddr + 1);
	BENCH_EINVAL(flags, 1);
	BENCH_EINVAL(pad, 1);
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->tfd, REFCNT_TEST_BENCH, NULL));
	EXPECT_EQ(EFAULT, errno);
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->tfd, _IOWR('Y', 0x82, struct refcnt_test_bench), &b));
	EXPECT_EQ(ENOTTY, errno);
}

/* The cnodeid of the node of a CPU, from sysfs; -1 if unknown. */
static int cpu_cnode(int cpu)
{
	struct rc_nodes cnodes;
	char path[128];
	int nid;

	if (rc_cnode_list(&cnodes))
		return -1;
	for (nid = 0; nid < RC_MAX_NODES; nid++) {
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu%d/node%d", cpu, nid);
		if (rc_exists(path))
			return rc_list_index(&cnodes, nid);
	}
	return -1;
}

/*
 * The references REFCNT_TEST_BENCH times stay in the counters (nr_refs,
 * plus as many again, at most one per set, to warm up), all from the
 * calling CPU's node, all in the range it was given.
 */
TEST_F(testmod, bench_references_stay)
{
	const struct rc_dev *d = &self->d;
	uint64_t nr = 1000, words = d->info.rcb_sw_sets * d->cps, i;
	uint64_t sum = 0, other = 0, warm;
	uint32_t *hw, *ext, *lost;
	struct refcnt_test_bench b;
	struct rc_stats s0, s;
	cpu_set_t cpus;
	int cnode;
	unsigned int c;

	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(cpus), &cpus));
	cnode = cpu_cnode(0);
	ASSERT_LE(0, cnode);
	c = rcd_counter(d, cnode);
	ASSERT_EQ(0, rc_stats_read(d->nid, &s0));
	bench_arg(d, self->big, nr, &b);
	ASSERT_EQ(0, ioctl(self->tfd, REFCNT_TEST_BENCH, &b));
	EXPECT_LT(0ULL, U64(b.entry_ns));
	EXPECT_LT(0ULL, U64(b.atomic_ns));
	EXPECT_EQ(nr, b.nr_refs);

	ASSERT_EQ(0, rc_sync(d->fd));
	hw = malloc(words * 4);
	ext = malloc(words * 4);
	lost = malloc(words * 4);
	ASSERT_TRUE(hw && ext && lost);
	ASSERT_EQ(0, rc_read_sets(d->fd, 0, d->info.rcb_sw_sets, hw, ext, lost));
	for (i = 0; i < words; i++) {
		uint64_t v = (uint64_t)hw[i] + ext[i] + lost[i];

		sum += v;
		if (i % d->cps != c)
			other += v;
	}
	free(hw);
	free(ext);
	free(lost);
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	warm = s.references - s0.references - nr;
	TH_LOG("CPU 0 (cnode %d): %llu references timed, %llu to warm up, entry %llu ns, atomic %llu ns",
	       cnode, U64(nr), U64(warm), U64(b.entry_ns), U64(b.atomic_ns));
	EXPECT_GE(nr, warm);
	EXPECT_EQ(s.references - s0.references, sum);
	EXPECT_EQ(0ULL, other) TH_LOG("references from another node's counter");
}

/* REFCNT_TEST_SAMPLES of @f refused with @err; nothing counted. */
static int samples_errno(int tfd, struct refcnt_test_samples *f)
{
	uint64_t samples = rc_feed_stat("test_samples");
	int err = ioctl(tfd, REFCNT_TEST_SAMPLES, f) ? errno : 0;

	return rc_feed_stat("test_samples") == samples ? err : -1;
}

TEST_F(testmod, samples_bad_arguments)
{
	struct refcnt_test_sample smp = { .src_cnodeid = 0, .weight = 1 };
	struct refcnt_test_samples ok = { .samples = (uintptr_t)&smp,
					  .nr_samples = 1 }, f;

	f = ok;
	f.nr_samples = 0;
	EXPECT_EQ(EINVAL, samples_errno(self->tfd, &f));
	f.nr_samples = REFCNT_TEST_SAMPLES_MAX + 1;
	EXPECT_EQ(EINVAL, samples_errno(self->tfd, &f));
	f = ok;
	f.flags = ~REFCNT_TEST_SAMPLES_FLAGS;	/* every unknown flag */
	EXPECT_EQ(EINVAL, samples_errno(self->tfd, &f));
	f.flags = REFCNT_TEST_SAMPLES_IRQS_OFF;	/* only around NMIs */
	EXPECT_EQ(EINVAL, samples_errno(self->tfd, &f));
	f.flags = REFCNT_TEST_SAMPLES_FLAGS;
	f.nr_samples = REFCNT_TEST_SAMPLES_IRQS_OFF_MAX + 1;
	EXPECT_EQ(EINVAL, samples_errno(self->tfd, &f));
	f = ok;
	f.pad = 1;
	EXPECT_EQ(EINVAL, samples_errno(self->tfd, &f));
	f = ok;
	smp.src_cnodeid = self->d.info.rcb_num_cnodes;
	EXPECT_EQ(EINVAL, samples_errno(self->tfd, &f)) TH_LOG("bad cnodeid");
	smp.src_cnodeid = 0;
	f.samples = 8;
	EXPECT_EQ(EFAULT, samples_errno(self->tfd, &f));
	EXPECT_EQ(EFAULT, samples_errno(self->tfd, NULL));
}

/* Root only: a file opened as root, used as nobody, is refused. */
TEST_F(testmod, root_only)
{
	struct refcnt_test_samples f = { 0 };
	struct refcnt_test_bench b;
	pid_t pid = rc_fork();

	ASSERT_LE(0, pid);
	if (!pid) {
		if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(10);
		bench_arg(&self->d, self->big, 1, &b);
		if (ioctl(self->tfd, REFCNT_TEST_BENCH, &b) != -1 || errno != EPERM)
			_exit(1);
		if (ioctl(self->tfd, REFCNT_TEST_SAMPLES, &f) != -1 ||
		    errno != EPERM)
			_exit(2);
		_exit(open(RC_TEST_DEV, O_RDWR) == -1 && errno == EACCES ? 0 : 3);
	}
	EXPECT_EQ(0, rc_wait(pid));
}

/* Rounds of the span test, and records per round. */
#define DR_ROUNDS	64
#define DR_BATCH	256

/* Pin the caller to @cpu, then make @n synthetic records of the test feed. */
static int make_records(int tfd, int cpu, struct refcnt_test_record *t,
			unsigned int n)
{
	struct refcnt_test_records f = { .records = (uintptr_t)t,
					 .nr_records = n };
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -errno;
	if (ioctl(tfd, REFCNT_TEST_RECORDS, &f))
		return -errno;
	sched_yield();
	return f.counted == n ? 0 : -ERANGE;
}

/*
 * A session of one thread with RCB_COUNT_DEVICES gets the test feed's
 * records that thread makes on every CPU it moves to, and none of those
 * another process makes on the same CPUs meanwhile (at the same addresses
 * of its own copy of the buffer): the session takes the spans of its
 * thread's time on each CPU (session_device.c), nothing else.
 */
TEST_F_TIMEOUT(testmod, device_records_follow_the_thread, 300)
{
	static struct refcnt_test_record t[DR_BATCH];
	int ncpu = sysconf(_SC_NPROCESSORS_ONLN), sfd, round, i;
	size_t len = 4 * 4096;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	struct rcb_count_range r = { (uintptr_t)buf, len };
	struct rcb_count c = {
		.flags = RCB_COUNT_THREAD | RCB_COUNT_DEVICES,
		.ranges = (uintptr_t)&r, .nr_ranges = 1,
	};
	struct rcb_count_stats st = { 0 };
	pid_t other;

	ASSERT_NE(MAP_FAILED, buf);
	memset(buf, 1, len);
	for (i = 0; i < DR_BATCH; i++)
		t[i] = (struct refcnt_test_record){
			.vaddr = (uintptr_t)buf + (i * 64) % len,
			.ip = 0x401000, .weight = 1,
			.flags = REFCNT_TEST_REC_LOAD,
		};
	sfd = ioctl(self->d.fd, RCB_COUNT_START, &c);
	ASSERT_LE(0, sfd) TH_LOG("RCB_COUNT_START: %s", strerror(errno));
	other = rc_fork();
	ASSERT_LE(0, other);
	if (!other) {
		for (round = 0; round < DR_ROUNDS; round++)
			if (make_records(self->tfd, round % ncpu, t, DR_BATCH))
				_exit(1);
		_exit(0);
	}
	for (round = 0; round < DR_ROUNDS; round++)
		ASSERT_EQ(0, make_records(self->tfd, round % ncpu, t, DR_BATCH))
			TH_LOG("round %d", round);
	EXPECT_EQ(0, rc_wait(other));
	ASSERT_EQ(0, ioctl(sfd, RCB_COUNT_STATS, &st));
	close(sfd);
	EXPECT_EQ((uint64_t)DR_ROUNDS * DR_BATCH, st.samples);
	EXPECT_EQ(0U, st.outside);
	EXPECT_EQ(st.samples, st.delivered + st.unresolved);
	munmap(buf, len);
}

/* A session of the calling thread with RCB_COUNT_DEVICES over @buf. */
static int device_session(int fd, char *buf, size_t len)
{
	struct rcb_count_range r = { (uintptr_t)buf, len };
	struct rcb_count c = {
		.flags = RCB_COUNT_THREAD | RCB_COUNT_DEVICES,
		.ranges = (uintptr_t)&r, .nr_ranges = 1,
	};

	return ioctl(fd, RCB_COUNT_START, &c);
}

/* @n records of the test feed at @buf, made (or lost: @flags) on CPU 0. */
static int records_on_cpu0(int tfd, char *buf, unsigned int n,
			   unsigned int flags)
{
	static struct refcnt_test_record t[DR_BATCH];
	struct refcnt_test_records f = { .records = (uintptr_t)t,
					 .nr_records = n, .flags = flags };
	cpu_set_t set;
	unsigned int i;

	for (i = 0; i < n && i < DR_BATCH; i++)
		t[i] = (struct refcnt_test_record){
			.vaddr = (uintptr_t)buf + i * 64, .ip = 0x401000,
			.weight = 1, .flags = REFCNT_TEST_REC_LOAD,
		};
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set) ||
	    ioctl(tfd, REFCNT_TEST_RECORDS, &f))
		return -errno;
	return 0;
}

/*
 * Take the calling thread (on CPU 0) off its CPU @rounds times for sure:
 * a child on CPU 0 echoes a byte back each round, which it can only do
 * while the caller is off. A sleep is no such thing: under TCG its timer
 * may have expired before the task blocks, and then it never leaves.
 */
static int off_cpu0(int rounds)
{
	int to[2], from[2], i, err = 0;
	cpu_set_t set;
	pid_t pid;
	char c = 0;

	if (pipe(to) || pipe(from))
		return -errno;
	pid = rc_fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		close(to[1]);
		close(from[0]);
		CPU_ZERO(&set);
		CPU_SET(0, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			_exit(1);
		while (read(to[0], &c, 1) == 1)
			if (write(from[1], &c, 1) != 1)
				_exit(2);
		_exit(0);
	}
	close(to[0]);
	close(from[1]);
	for (i = 0; i < rounds && !err; i++)
		if (write(to[1], &c, 1) != 1 || read(from[0], &c, 1) != 1)
			err = -EPIPE;
	close(to[1]);
	close(from[0]);
	return rc_wait(pid) ? -ECHILD : err;
}

/*
 * Records the device could not make while the thread ran (its buffer was
 * full) are the session's dropped ones, not silently missing: counted as
 * the thread goes off the CPU.
 */
TEST_F(testmod, device_records_lost_count_as_dropped)
{
	char *buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	struct rcb_count_stats st = { 0 };
	int sfd;

	ASSERT_NE(MAP_FAILED, buf);
	sfd = device_session(self->d.fd, buf, 4096);
	ASSERT_LE(0, sfd) TH_LOG("RCB_COUNT_START: %s", strerror(errno));
	ASSERT_EQ(0, records_on_cpu0(self->tfd, buf, 10, 0));
	ASSERT_EQ(0, records_on_cpu0(self->tfd, buf, 7,
				     REFCNT_TEST_RECORDS_LOST));
	ASSERT_EQ(0, off_cpu0(1));
	ASSERT_EQ(0, ioctl(sfd, RCB_COUNT_STATS, &st));
	close(sfd);
	EXPECT_EQ(10U, st.samples);
	EXPECT_EQ(7U, st.dropped);
	munmap(buf, 4096);
}

/* Times the thread comes on CPU 0 with no record: past the span ring. */
#define DR_SWITCHES	1200

/*
 * A thread that came on a CPU more often than the feed drained there
 * (1024 spans) makes records no span holds: the session counts them as
 * dropped when the thread goes off, instead of losing them unsaid.
 */
TEST_F_TIMEOUT(testmod, device_span_ring_full_counts_as_dropped, 120)
{
	char *buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	struct rcb_count_stats st = { 0 };
	int sfd;

	ASSERT_NE(MAP_FAILED, buf);
	sfd = device_session(self->d.fd, buf, 4096);
	ASSERT_LE(0, sfd) TH_LOG("RCB_COUNT_START: %s", strerror(errno));
	ASSERT_EQ(0, records_on_cpu0(self->tfd, buf, 3, 0));
	/* Each time off the CPU and back: a span each, none retired. */
	ASSERT_EQ(0, off_cpu0(DR_SWITCHES));
	ASSERT_EQ(0, records_on_cpu0(self->tfd, buf, 5, 0));
	ASSERT_EQ(0, off_cpu0(1));
	ASSERT_EQ(0, ioctl(sfd, RCB_COUNT_STATS, &st));
	close(sfd);
	EXPECT_EQ(3U, st.samples);
	EXPECT_EQ(5U, st.dropped);
	munmap(buf, 4096);
}

TEST_HARNESS_MAIN
