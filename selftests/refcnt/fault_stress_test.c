// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt selftests: conservation under page-fault load.
 *
 * With fault_period=1 (set and restored here), one thread per CPU, pinned,
 * faults pages in mmap/touch/munmap loops while other threads inject
 * references, run range queries, read events, and reset, change
 * thresholds, sync and mmap/munmap the tables, for a bounded time
 * ($REFCNT_STRESS_SECONDS, default 5). Then, with the feed off, its queued
 * samples resolved and RCB_SYNC run on every node, for every node:
 *
 *   stats references == sum(ext) + sum(hw) + sum(lost) + discarded
 *
 * over every set (RCB_SETS_READ), exactly, and refs_dropped did not move
 * (nothing here runs in NMI: every counter page can be allocated).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "refcnt_counters.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

#define MAX_DEVS	128
#define MAX_CPUS	64
#define U64(x)		((unsigned long long)(x))

static struct rc_dev devs[MAX_DEVS];
static uint64_t dropped0[MAX_DEVS];	/* refs_dropped before the run */
static int ndev;
static volatile int stop;
static atomic_ullong faults, injected, queries, records, chaos;
static atomic_int errors;
static char first_err[160];

static void err(const char *what, int e)
{
	if (atomic_fetch_add(&errors, 1) == 0)
		snprintf(first_err, sizeof(first_err), "%s: %s", what,
			 strerror(e));
}

static int write_param(const char *name, unsigned long v)
{
	char path[128], buf[32];
	int fd, n, ret = 0;

	snprintf(path, sizeof(path), RC_PARAMDIR "/%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%lu\n", v);
	if (write(fd, buf, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

static void *faulter(void *arg)
{
	long cpu = (long)arg;
	cpu_set_t set;
	size_t i, len = 16 * 4096;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	while (!stop) {
		volatile uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			err("mmap", errno);
			break;
		}
		for (i = 0; i < len; i += 4096)
			p[i] = (uint8_t)i;
		munmap((void *)p, len);
		atomic_fetch_add(&faults, len / 4096);
	}
	return NULL;
}

static void *injector(void *arg)
{
	uint64_t r = 0x1234567 ^ (uintptr_t)arg;
	struct rcb_ref refs[32];
	int i;

	while (!stop) {
		struct rc_dev *d = &devs[rc_rand(&r) % ndev];

		for (i = 0; i < 32; i++) {
			refs[i].paddr = rcd_set_paddr(d, rcd_mid_set(d,
						rc_rand(&r) % 256));
			refs[i].src_cnodeid = rc_rand(&r) % d->info.rcb_num_cnodes;
			refs[i].count = 1 + rc_rand(&r) % 1000;
		}
		if (rc_inject(d->fd, refs, 32, rc_rand(&r) & 1 ? RCB_INJECT_SYNC : 0))
			err("RCB_INJECT", errno);
		atomic_fetch_add(&injected, 32);
	}
	return NULL;
}

static void *querier(void *arg)
{
	static struct rcb_page_counters e[64];
	size_t len = 64 * 4096;
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct rcb_range_query q = { 0 };
	uint64_t r = 99;

	if (p == MAP_FAILED)
		return NULL;
	while (!stop) {
		p[(rc_rand(&r) % 64) * 4096] = 1;
		q = (struct rcb_range_query){
			.vaddr = (uintptr_t)p, .len = len, .buf = (uintptr_t)e,
			.buf_entries = 64, .flags = rc_rand(&r) & 3,
		};
		if (ioctl(devs[rc_rand(&r) % ndev].fd, RCB_RANGE_QUERY, &q))
			err("RCB_RANGE_QUERY", errno);
		if (rc_rand(&r) % 8 == 0)
			madvise(p, len, MADV_DONTNEED);
		atomic_fetch_add(&queries, 1);
	}
	munmap(p, len);
	return NULL;
}

static void *reader(void *arg)
{
	struct rcb_event ev[64];
	int i;
	ssize_t n;

	while (!stop) {
		for (i = 0; i < ndev; i++) {
			n = read(devs[i].fd, ev, sizeof(ev));
			if (n > 0)
				atomic_fetch_add(&records, n / sizeof(ev[0]));
			else if (n < 0 && errno != EAGAIN)
				err("read", errno);
		}
		usleep(1000);
	}
	return NULL;
}

static void *chaos_thread(void *arg)
{
	uint64_t r = 4242;
	int k = 0;

	while (!stop) {
		struct rc_dev *d = &devs[rc_rand(&r) % ndev];
		uint32_t max = d->info.rcb_hw_counter_max;
		void *m;

		switch (rc_rand(&r) % 5) {
		case 0:
			if (rc_reset(d->fd))
				err("RCB_RESET", errno);
			break;
		case 1:
			if (rc_thresholds(d->fd, 1 + rc_rand(&r) % max,
					  rc_rand(&r) % (max + 1)))
				err("RCB_THRESHOLDS_SET", errno);
			break;
		case 2:
			if (rcd_restore_thresholds(d))
				err("RCB_THRESHOLDS_SET", errno);
			break;
		case 3:
			m = mmap(NULL, d->info.rcb_len, PROT_READ, MAP_SHARED,
				 d->fd, 0);
			if (m == MAP_FAILED) {
				err("mmap table", errno);
				break;
			}
			k += ((volatile uint32_t *)m)[rc_rand(&r) %
					(d->info.rcb_len / 4)];
			munmap(m, d->info.rcb_len);
			break;
		default:
			if (rc_sync(d->fd))
				err("RCB_SYNC", errno);
			break;
		}
		atomic_fetch_add(&chaos, 1);
		usleep(2000);
	}
	return (void *)(long)k;
}

/* Sum of ext + hw + lost over every set of d. */
static int sum_tables(struct rc_dev *d, uint64_t *sum)
{
	const uint64_t chunk = 4096;
	size_t n = chunk * d->cps;
	uint32_t *hw = malloc(n * 4), *ext = malloc(n * 4), *lost = malloc(n * 4);
	uint64_t first, nr, i, s = 0;
	int ret = 0;

	if (!hw || !ext || !lost)
		ret = -ENOMEM;
	for (first = 0; !ret && first < d->info.rcb_sw_sets; first += nr) {
		nr = d->info.rcb_sw_sets - first;
		if (nr > chunk)
			nr = chunk;
		ret = rc_read_sets(d->fd, first, nr, hw, ext, lost);
		for (i = 0; !ret && i < nr * d->cps; i++)
			s += (uint64_t)hw[i] + ext[i] + lost[i];
	}
	free(hw);
	free(ext);
	free(lost);
	*sum = s;
	return ret;
}

FIXTURE(fstress) {
	int unused;
};

FIXTURE_SETUP(fstress)
{
}

FIXTURE_TEARDOWN(fstress)
{
}

TEST_F_TIMEOUT(fstress, faults_conserve_references, 300)
{
	pthread_t th[MAX_CPUS + 8];
	unsigned long period0 = 0;
	struct rc_nodes mem;
	uint64_t t0, secs, total = 0, s0, d0;
	const char *env = getenv("REFCNT_STRESS_SECONDS");
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN), c;
	int i, nth = 0;
	double took;

	ASSERT_EQ(0, rc_mem_nodes(&mem));
	ndev = mem.n < MAX_DEVS ? mem.n : MAX_DEVS;
	for (i = 0; i < ndev; i++) {
		struct rc_stats st;

		ASSERT_EQ(0, rcd_open(&devs[i], mem.id[i]));
		/* Earlier tests may have dropped some on purpose (in NMI). */
		ASSERT_EQ(0, rc_stats_read(devs[i].nid, &st));
		dropped0[i] = st.refs_dropped;
	}
	if (ncpu > MAX_CPUS)
		ncpu = MAX_CPUS;
	secs = env && *env ? strtoull(env, NULL, 0) : 5;
	ASSERT_EQ(0, rc_read_ulong_param("fault_period", &period0));
	ASSERT_EQ(0, write_param("fault_period", 1));
	s0 = rc_feed_stat("fault_samples");
	d0 = rc_feed_stat("fault_delivered");

	t0 = rc_now_ns();
	for (c = 0; c < ncpu; c++)
		ASSERT_EQ(0, pthread_create(&th[nth++], NULL, faulter, (void *)c));
	ASSERT_EQ(0, pthread_create(&th[nth++], NULL, injector, (void *)1));
	ASSERT_EQ(0, pthread_create(&th[nth++], NULL, injector, (void *)2));
	ASSERT_EQ(0, pthread_create(&th[nth++], NULL, querier, NULL));
	ASSERT_EQ(0, pthread_create(&th[nth++], NULL, reader, NULL));
	ASSERT_EQ(0, pthread_create(&th[nth++], NULL, chaos_thread, NULL));
	while (rc_now_ns() - t0 < secs * 1000000000ULL)
		usleep(100000);
	stop = 1;
	for (i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	took = (rc_now_ns() - t0) / 1e9;
	EXPECT_EQ(0, write_param("fault_period", period0));

	/*
	 * Samples are resolved in the fault itself: with the feed off, every
	 * one taken is already delivered or unresolved.
	 */
	if (!period0)
		EXPECT_EQ(rc_feed_stat("fault_samples"),
			  rc_feed_stat("fault_delivered") +
			  rc_feed_stat("fault_unresolved"));

	for (i = 0; i < ndev; i++) {
		struct rc_dev *d = &devs[i];
		struct rc_stats st;
		uint64_t sum = 0;

		EXPECT_EQ(0, rc_sync(d->fd));
		ASSERT_EQ(0, rc_stats_read(d->nid, &st));
		ASSERT_EQ(0, sum_tables(d, &sum));
		/* Lost counts that hit 2^32-1 (e.g. earlier fuzzing) overflowed. */
		EXPECT_EQ(st.references, sum + st.discarded + st.overflowed) {
			TH_LOG("node %d: references %llu, ext+hw+lost %llu, "
			       "discarded %llu, overflowed %llu", d->nid,
			       U64(st.references), U64(sum), U64(st.discarded),
			       U64(st.overflowed));
		}
		EXPECT_EQ(U64(dropped0[i]), U64(st.refs_dropped)) {
			TH_LOG("node %d: refs_dropped %llu, %llu before", d->nid,
			       U64(st.refs_dropped), U64(dropped0[i]));
		}
		total += st.references;
		EXPECT_EQ(0, rcd_restore_thresholds(d));
		rc_drain(d->fd);
	}
	EXPECT_EQ(0, atomic_load(&errors)) {
		TH_LOG("%d errors, first %s", atomic_load(&errors), first_err);
	}
	EXPECT_LT(0ULL, U64(rc_feed_stat("fault_delivered") - d0));
	ksft_print_msg("fault stress: %.1f s, %ld faulting CPUs, %llu pages "
		       "faulted, %llu fault samples (%llu delivered), %llu refs "
		       "injected in batches, %llu queries, %llu events read, "
		       "%llu resets/thresholds/maps/syncs; %llu references "
		       "conserved on %d nodes\n", took, ncpu,
		       U64(faults), U64(rc_feed_stat("fault_samples") - s0),
		       U64(rc_feed_stat("fault_delivered") - d0), U64(injected),
		       U64(queries), U64(records), U64(chaos), U64(total), ndev);
	for (i = 0; i < ndev; i++)
		rcd_close(&devs[i]);
}

TEST_HARNESS_MAIN
