// SPDX-License-Identifier: GPL-2.0
/*
 * The feeds: sampled page faults counted exactly against
 * getrusage, page sizes of THP and hugetlb in the range query, synthetic
 * PEBS/IBS samples through the overflow handler's code (the test module's
 * REFCNT_TEST_SAMPLES), in the caller's context and from real NMIs over
 * cold memory (nothing dropped), the PEBS feed refused
 * without a PMU (one line in the log) and its settings' bad values, and
 * NUMA-balancing hinting faults that keep references
 * flowing without migrating pages (MPOL_BIND | MPOL_F_NUMA_BALANCING),
 * and the range query sees the pages NUMA balancing made PROT_NONE;
 * RCB_FEEDS_GET's probe of a feed that is off.
 */
#include <sched.h>
#include <sys/resource.h>
#include <time.h>

#include <linux/refcnt_test.h>

#include "refcnt_helpers.h"

#ifndef MPOL_BIND
#define MPOL_BIND		2
#endif
#define RC_MPOL_F_NUMA_BALANCING	(1 << 13)
#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE		14
#endif
#ifndef MADV_NOHUGEPAGE
#define MADV_NOHUGEPAGE		15
#endif

#define RC_PAGES		256
#define RC_HPAGE		(2UL << 20)

/* First CPU of a node, -1 if it has none. */
static int rc_node_cpu(int node)
{
	char path[128], buf[256];

	snprintf(path, sizeof(path), RC_SYSNODE "/node%d/cpulist", node);
	if (rc_read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	return atoi(buf);
}

static int rc_mbind(void *addr, size_t len, int mode, int node)
{
	unsigned long mask[16] = { 0 };

	mask[node / 64] = 1UL << (node % 64);
	return syscall(SYS_mbind, addr, len, mode, mask, 1024, 0);
}

/*
 * The node of the page at @addr.  move_pages(2) reports a page whose PTE
 * NUMA balancing has just made PROT_NONE as absent (-ENOENT), so the page
 * is touched first, and the query retried if the scanner got in between.
 */
static int rc_page_node(void *addr)
{
	int status = -1, tries;
	void *pages[1] = { addr };

	for (tries = 0; tries < 100; tries++) {
		(void)*(volatile char *)addr;
		if (syscall(SYS_move_pages, 0, 1, pages, NULL, &status, 0))
			return -errno;
		if (status != -ENOENT)
			break;
	}
	return status;
}

/* Sum of one counter (extended + hardware) over a virtual range. */
static uint64_t rc_range_refs(int fd, void *addr, size_t len, unsigned int ctr,
			      struct rcb_page_counters *e, size_t cap)
{
	uint64_t sum = 0;
	unsigned int pass;
	size_t i;

	for (pass = 0; pass < 2; pass++) {
		struct rcb_range_query q = {
			.vaddr = (uintptr_t)addr, .len = len,
			.buf = (uintptr_t)e, .buf_entries = cap,
			.flags = pass ? RCB_RANGE_EXTENDED : 0,
		};

		if (ioctl(fd, RCB_RANGE_QUERY, &q))
			return UINT64_MAX;
		for (i = 0; i < q.nr_entries; i++)
			sum += e[i].refcnt[ctr];
	}
	return sum;
}

FIXTURE(feeds) {
	struct rc_nodes cnodes, memory;
	struct rc_knob fault_period, numa_balancing, scan_delay, scan_period;
	struct rcb_info info;
	struct rcb_page_counters *e;
	int fd;
	int cpu_node, mem_node;
};

FIXTURE_SETUP(feeds)
{
	int i;

	ASSERT_EQ(0, rc_cnode_list(&self->cnodes));
	ASSERT_EQ(0, rc_node_list("has_memory", &self->memory));
	self->fd = rc_open_node(self->memory.id[0], O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, RCB_INFO_GET, &self->info));
	self->e = calloc(2 * RC_HPAGE / 256, sizeof(*self->e));
	ASSERT_NE(NULL, self->e);

	/*
	 * Counters belong to physical pages, not to us: pages we get may
	 * carry counts of their earlier users. Start from zero everywhere.
	 */
	for (i = 0; i < self->memory.n; i++) {
		int fd = rc_open_node(self->memory.id[i], O_RDONLY);

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, ioctl(fd, RCB_RESET));
		close(fd);
	}

	/*
	 * A node with CPUs, and preferably another node's memory, both with
	 * cnodeids (a node hot-added since the load has none).
	 */
	self->cpu_node = -1;
	for (i = 0; i < self->cnodes.n && self->cpu_node < 0; i++)
		if (rc_node_cpu(self->cnodes.id[i]) >= 0)
			self->cpu_node = self->cnodes.id[i];
	ASSERT_LE(0, self->cpu_node);
	self->mem_node = self->memory.id[0];
	for (i = 0; i < self->memory.n; i++)
		if (self->memory.id[i] != self->cpu_node &&
		    rc_list_has(&self->cnodes, self->memory.id[i]))
			self->mem_node = self->memory.id[i];
}

FIXTURE_TEARDOWN(feeds)
{
	rc_knob_restore(&self->fault_period);
	rc_knob_restore(&self->numa_balancing);
	rc_knob_restore(&self->scan_delay);
	rc_knob_restore(&self->scan_period);
	free(self->e);
	close(self->fd);
}

static void rc_pin(struct __test_metadata *_metadata, int node)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(rc_node_cpu(node), &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));
}

/*
 * Fault feed, every fault (N=1): as many references from the CPU's node to
 * pages homed on the memory node as the process took minor faults.
 */
TEST_F(feeds, fault_feed_counts_every_minor_fault)
{
	unsigned int ctr, cnode_a, cnode_b;
	struct rusage before, after;
	size_t len = RC_PAGES * rc_page_size(), i;
	long faults;
	char *p;

	cnode_a = rc_list_index(&self->cnodes, self->cpu_node);
	cnode_b = rc_list_index(&self->cnodes, self->mem_node);
	ctr = cnode_a / self->info.rcb_nodes_per_counter;
	rc_knob_set(&self->numa_balancing, "/proc/sys/kernel/numa_balancing", "0");
	ASSERT_EQ(0, rc_knob_set(&self->fault_period,
				 RC_PARAMDIR "/fault_period", "1"));
	rc_pin(_metadata, self->cpu_node);

	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	madvise(p, len, MADV_NOHUGEPAGE);
	ASSERT_EQ(0, rc_mbind(p, len, MPOL_BIND, self->mem_node));

	ASSERT_EQ(0, getrusage(RUSAGE_SELF, &before));
	for (i = 0; i < len; i += rc_page_size())
		p[i] = 1;
	ASSERT_EQ(0, getrusage(RUSAGE_SELF, &after));
	faults = after.ru_minflt - before.ru_minflt;
	TH_LOG("node %d CPU touched %zu pages of node %d: %ld minor faults",
	       self->cpu_node, len / rc_page_size(), self->mem_node, faults);

	ASSERT_EQ((uint64_t)faults,
		  rc_range_refs(self->fd, p, len, ctr, self->e, RC_PAGES));
	for (i = 0; i < RC_PAGES; i++) {
		ASSERT_EQ((int)cnode_b, self->e[i].cnodeid);
		ASSERT_EQ(self->mem_node, rc_page_node(p + i * rc_page_size()));
	}
	munmap(p, len);
}

/* fault_period=N: only whole multiples of N, about one N-th of the faults. */
TEST_F(feeds, fault_period_weights_samples)
{
	unsigned int ctr = rc_list_index(&self->cnodes, self->cpu_node) /
			   self->info.rcb_nodes_per_counter;
	size_t len = RC_PAGES * rc_page_size(), i;
	uint64_t refs;
	char *p;

	rc_knob_set(&self->numa_balancing, "/proc/sys/kernel/numa_balancing", "0");
	ASSERT_EQ(0, rc_knob_set(&self->fault_period,
				 RC_PARAMDIR "/fault_period", "4"));
	rc_pin(_metadata, self->cpu_node);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	madvise(p, len, MADV_NOHUGEPAGE);
	for (i = 0; i < len; i += rc_page_size())
		p[i] = 1;
	refs = rc_range_refs(self->fd, p, len, ctr, self->e, RC_PAGES);
	TH_LOG("%d faults sampled every 4th: %llu references", RC_PAGES,
	       (unsigned long long)refs);
	ASSERT_EQ(0ULL, refs % 4);
	ASSERT_LE((uint64_t)RC_PAGES - 8 * 4, refs);
	ASSERT_GE((uint64_t)RC_PAGES + 8 * 4, refs);
	munmap(p, len);
}

/* A transparent huge page is reported with its size and flag. */
TEST_F(feeds, thp_page_size)
{
	char mode[128];
	size_t i;
	char *raw, *p;

	if (rc_read_file("/sys/kernel/mm/transparent_hugepage/enabled", mode,
			 sizeof(mode)) < 0 || strstr(mode, "[never]"))
		SKIP(return, "THP disabled");
	raw = mmap(NULL, 2 * RC_HPAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, raw);
	p = (char *)rc_round_up((uintptr_t)raw, RC_HPAGE);
	ASSERT_EQ(0, madvise(p, RC_HPAGE, MADV_HUGEPAGE));
	memset(p, 1, RC_HPAGE);

	struct rcb_range_query q = {
		.vaddr = (uintptr_t)p, .len = RC_HPAGE, .buf = (uintptr_t)self->e,
		.buf_entries = RC_HPAGE / self->info.rcb_granularity,
	};
	ASSERT_EQ(0, ioctl(self->fd, RCB_RANGE_QUERY, &q));
	if (!(self->e[0].flags & RCB_PAGE_THP)) {
		munmap(raw, 2 * RC_HPAGE);
		SKIP(return, "no huge page could be had");
	}
	for (i = 0; i < q.nr_entries; i++) {
		ASSERT_EQ(RCB_PAGE_PRESENT | RCB_PAGE_THP, self->e[i].flags);
		ASSERT_EQ((uint64_t)RC_HPAGE, self->e[i].page_size);
	}
	munmap(raw, 2 * RC_HPAGE);
}

/* A hugetlbfs page is reported with its size and flag. */
TEST_F(feeds, hugetlb_page_size)
{
	struct rc_knob nr = { 0 };
	size_t i;
	char *p;

	if (rc_knob_set(&nr, "/proc/sys/vm/nr_hugepages", "2"))
		SKIP(return, "no hugetlb");
	p = mmap(NULL, RC_HPAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (p == MAP_FAILED) {
		rc_knob_restore(&nr);
		SKIP(return, "no huge page could be had");
	}
	memset(p, 1, RC_HPAGE);

	struct rcb_range_query q = {
		.vaddr = (uintptr_t)p, .len = RC_HPAGE, .buf = (uintptr_t)self->e,
		.buf_entries = RC_HPAGE / self->info.rcb_granularity,
	};
	EXPECT_EQ(0, ioctl(self->fd, RCB_RANGE_QUERY, &q));
	for (i = 0; i < q.nr_entries; i++) {
		EXPECT_EQ(RCB_PAGE_PRESENT | RCB_PAGE_HUGETLB, self->e[i].flags);
		EXPECT_EQ((uint64_t)RC_HPAGE, self->e[i].page_size);
	}
	munmap(p, RC_HPAGE);
	rc_knob_restore(&nr);
}

/* Counter of one set of a node through RCB_SETS_READ, after a sync. */
static uint32_t rc_set_counter(int fd, uint64_t set, unsigned int cps,
			       unsigned int ctr, bool ext)
{
	uint32_t v[RCB_MAX_COUNTERS] = { 0 };
	struct rcb_sets_read r = { .first_set = set, .nr_sets = 1 };

	if (ext)
		r.ext = (uintptr_t)v;
	else
		r.hw = (uintptr_t)v;
	ioctl(fd, RCB_SYNC);
	if (ioctl(fd, RCB_SETS_READ, &r))
		return UINT32_MAX;
	return cps ? v[ctr] : 0;
}

/* A node statistic, UINT64_MAX if it cannot be read. */
static uint64_t rc_node_stat(int nid, const char *name)
{
	char path[128], buf[64];

	snprintf(path, sizeof(path), "/sys/class/misc/refcnt-node%d/stats/%s",
		 nid, name);
	if (rc_read_file(path, buf, sizeof(buf)) <= 0)
		return UINT64_MAX;
	return strtoull(buf, NULL, 10);
}

/*
 * Synthetic PEBS/IBS samples go through the overflow handler's code
 * (refcnt_pmu_sample(), from the test module): a sample with a physical
 * address counts its weight there; one with only a virtual address is
 * resolved in the caller's page tables; an unmapped one is not
 * delivered; a bad cnodeid anywhere delivers nothing. The test module's
 * feed counts them all.
 */
TEST_F(feeds, synthetic_pebs_samples)
{
	unsigned int cps = self->info.rcb_sw_counters_per_set;
	unsigned int src = self->cnodes.n - 1, ctr;
	struct rcb_slot slot;
	struct rcb_slot_query sq = { .slots = (uintptr_t)&slot, .num_slots = 1 };
	uint64_t set, before, samples, delivered, unresolved;
	int tfd = rc_test_open();
	char *p;

	if (tfd == -ENOENT)
		SKIP(return, "no test module (REFCNT_TEST_KO)");
	ASSERT_LE(0, tfd) TH_LOG("%s: %s", RC_TEST_DEV, strerror(-tfd));
	samples = rc_feed_stat("test_samples");
	delivered = rc_feed_stat("test_delivered");
	ctr = src / self->info.rcb_nodes_per_counter;
	ASSERT_EQ(0, ioctl(self->fd, RCB_RESET));
	ASSERT_EQ(0, ioctl(self->fd, RCB_SLOT_QUERY, &sq));
	set = 3;
	struct refcnt_test_sample s[3] = {
		{ .paddr = slot.base + 3 * self->info.rcb_granularity,
		  .src_cnodeid = src, .weight = 100 },
		{ .vaddr = 0x1000, .src_cnodeid = src, .weight = 7 },
		{ .paddr = slot.base + 3 * self->info.rcb_granularity + 1,
		  .src_cnodeid = src, .weight = 20 },
	};
	struct refcnt_test_samples f = { .samples = (uintptr_t)s, .nr_samples = 3 };

	unresolved = rc_feed_stat("test_unresolved");
	ASSERT_EQ(0, ioctl(tfd, REFCNT_TEST_SAMPLES, &f));
	EXPECT_EQ(2U, f.delivered);
	EXPECT_EQ(120U, rc_set_counter(self->fd, set, cps, ctr, false) +
		       rc_set_counter(self->fd, set, cps, ctr, true));
	/* The feed's statistics count them: two delivered, one unmapped. */
	EXPECT_EQ(samples + 3, rc_feed_stat("test_samples"));
	EXPECT_EQ(delivered + 2, rc_feed_stat("test_delivered"));
	EXPECT_EQ(unresolved + 1, rc_feed_stat("test_unresolved"));

	/* Virtual address only: found in our own page tables. */
	p = mmap(NULL, rc_page_size(), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;
	before = rc_range_refs(self->fd, p, rc_page_size(), ctr, self->e, 16);
	s[0] = (struct refcnt_test_sample){ .vaddr = (uintptr_t)p,
					    .src_cnodeid = src, .weight = 33 };
	f.nr_samples = 1;
	ASSERT_EQ(0, ioctl(tfd, REFCNT_TEST_SAMPLES, &f));
	EXPECT_EQ(1U, f.delivered);
	EXPECT_EQ(before + 33,
		  rc_range_refs(self->fd, p, rc_page_size(), ctr, self->e, 16));

	/* A bad cnodeid anywhere: EINVAL, nothing delivered. */
	s[1] = s[0];
	s[1].src_cnodeid = self->cnodes.n;
	f.nr_samples = 2;
	errno = 0;
	EXPECT_EQ(-1, ioctl(tfd, REFCNT_TEST_SAMPLES, &f));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(before + 33,
		  rc_range_refs(self->fd, p, rc_page_size(), ctr, self->e, 16));
	f.flags = ~REFCNT_TEST_SAMPLES_FLAGS;
	f.nr_samples = 1;
	EXPECT_EQ(-1, ioctl(tfd, REFCNT_TEST_SAMPLES, &f));
	EXPECT_EQ(EINVAL, errno);
	munmap(p, rc_page_size());
	ioctl(self->fd, RCB_RESET);
	close(tfd);
}

/*
 * A sample reads only the fields its PMU gave: without PERF_SAMPLE_ADDR
 * the data address a session filters on is 0 (none), whatever the
 * stack left in perf_sample_data.addr; the sample counts by its physical
 * address, as before.
 */
TEST_F(feeds, synthetic_sample_without_addr_flag)
{
	unsigned int src = self->cnodes.n - 1;
	struct rcb_slot slot;
	struct rcb_slot_query sq = { .slots = (uintptr_t)&slot, .num_slots = 1 };
	struct refcnt_test_sample s = { .vaddr = 0x7f0000123000ULL,
					.src_cnodeid = src, .weight = 5 };
	struct refcnt_test_samples f = { .samples = (uintptr_t)&s, .nr_samples = 1,
					 .flags = REFCNT_TEST_SAMPLES_STALE_ADDR };
	int tfd = rc_test_open();

	if (tfd == -ENOENT)
		SKIP(return, "no test module (REFCNT_TEST_KO)");
	ASSERT_LE(0, tfd) TH_LOG("%s: %s", RC_TEST_DEV, strerror(-tfd));
	ASSERT_EQ(0, ioctl(self->fd, RCB_SLOT_QUERY, &sq));
	s.paddr = slot.base;
	ASSERT_EQ(0, ioctl(tfd, REFCNT_TEST_SAMPLES, &f));
	EXPECT_EQ(1U, f.delivered);
	EXPECT_EQ(0ULL, (unsigned long long)s.vaddr);
	ioctl(self->fd, RCB_RESET);
	close(tfd);
}

/*
 * An IBS op whose RIP is invalid has the NMI's registers: its mode is
 * not the op's, so it is not counted, whatever the NMI's CS says, and
 * test_inexact counts it. A PEBS load without PERF_EFLAGS_EXACT (every
 * one at precise_ip 1) has the record's mode and counts.
 */
TEST_F(feeds, synthetic_inexact_samples)
{
	unsigned int src = self->cnodes.n - 1;
	struct rcb_slot slot;
	struct rcb_slot_query sq = { .slots = (uintptr_t)&slot, .num_slots = 1 };
	struct refcnt_test_sample s = { .src_cnodeid = src, .weight = 5 };
	struct refcnt_test_samples f = { .samples = (uintptr_t)&s, .nr_samples = 1 };
	uint64_t inexact, kernel, delivered, samples;
	int tfd = rc_test_open(), rc;

	if (tfd == -ENOENT)
		SKIP(return, "no test module (REFCNT_TEST_KO)");
	ASSERT_LE(0, tfd) TH_LOG("%s: %s", RC_TEST_DEV, strerror(-tfd));
	ASSERT_EQ(0, ioctl(self->fd, RCB_SLOT_QUERY, &sq));
	s.paddr = slot.base;
	s.vaddr = 0x10000;
	inexact = rc_feed_stat("test_inexact");
	kernel = rc_feed_stat("test_kernel");
	delivered = rc_feed_stat("test_delivered");
	samples = rc_feed_stat("test_samples");

	/* The NMI came in user mode, the op's mode is unknown. */
	f.flags = REFCNT_TEST_SAMPLES_OPS | REFCNT_TEST_SAMPLES_INEXACT;
	rc = ioctl(tfd, REFCNT_TEST_SAMPLES, &f);
	if (rc && errno == EOPNOTSUPP)
		SKIP(close(tfd); return,
		     "no inexact sample (PERF_EFLAGS_EXACT is x86's)");
	ASSERT_EQ(0, rc);
	EXPECT_EQ(0U, f.delivered);
	/* In kernel mode: still unknown, not a kernel-mode op. */
	f.flags |= REFCNT_TEST_SAMPLES_KERNEL;
	ASSERT_EQ(0, ioctl(tfd, REFCNT_TEST_SAMPLES, &f));
	EXPECT_EQ(0U, f.delivered);
	EXPECT_EQ(inexact + 2, rc_feed_stat("test_inexact"));
	EXPECT_EQ(kernel, rc_feed_stat("test_kernel"));
	/* An exact op and an inexact PEBS load count. */
	f.flags = REFCNT_TEST_SAMPLES_OPS;
	ASSERT_EQ(0, ioctl(tfd, REFCNT_TEST_SAMPLES, &f));
	EXPECT_EQ(1U, f.delivered);
	f.flags = REFCNT_TEST_SAMPLES_INEXACT;
	ASSERT_EQ(0, ioctl(tfd, REFCNT_TEST_SAMPLES, &f));
	EXPECT_EQ(1U, f.delivered);
	EXPECT_EQ(delivered + 2, rc_feed_stat("test_delivered"));
	EXPECT_EQ(samples + 4, rc_feed_stat("test_samples"));
	ioctl(self->fd, RCB_RESET);
	close(tfd);
}

/*
 * Starting the PMU feed, twice, and setting pebs_ldlat make no perf
 * event to learn a CPU's core PMU: none on a CPU that is not hybrid,
 * and a hybrid CPU's is cached from its first use (the test module's
 * pmu_probes counts refcnt.ko's probes).
 */
TEST_F(feeds, pebs_start_makes_no_probe)
{
	const char *probes = "/sys/module/refcnt_test/parameters/pmu_probes";
	struct rc_knob pebs = { 0 }, ldlat = { 0 };
	char val[32];
	uint64_t before;
	int i;

	if (rc_read_file(probes, val, sizeof(val)) <= 0)
		SKIP(return, "no test module (REFCNT_TEST_KO)");
	/* The first use after load may probe a hybrid part's CPUs. */
	if (!rc_knob_set(&pebs, RC_PARAMDIR "/pebs_period", "10007"))
		rc_knob_restore(&pebs);
	ASSERT_LT(0, rc_read_file(probes, val, sizeof(val)));
	before = strtoull(val, NULL, 10);
	for (i = 0; i < 2; i++)
		if (!rc_knob_set(&pebs, RC_PARAMDIR "/pebs_period", "10007"))
			rc_knob_restore(&pebs);
	if (!rc_knob_set(&ldlat, RC_PARAMDIR "/pebs_ldlat", "0"))
		rc_knob_restore(&ldlat);
	ASSERT_LT(0, rc_read_file(probes, val, sizeof(val)));
	EXPECT_EQ(before, strtoull(val, NULL, 10));
}

/*
 * A PEBS stream of weight 10,007 (each sample stands for 10,007 loads,
 * five times what an 11-bit counter holds) loses nothing: each sample
 * folds as it crosses the threshold, through the overflow handler's code
 * (the test module's REFCNT_TEST_SAMPLES). The NMI flavour of the same
 * path, where no page may be made, follows.
 */
TEST_F(feeds, synthetic_pebs_weight_folds)
{
	unsigned int cps = self->info.rcb_sw_counters_per_set;
	unsigned int src = self->cnodes.n - 1, ctr, i;
	int nid = self->memory.id[0];
	struct rcb_slot slot;
	struct rcb_slot_query sq = { .slots = (uintptr_t)&slot, .num_slots = 1 };
	struct refcnt_test_sample s[51];
	struct refcnt_test_samples f = { .samples = (uintptr_t)s,
					 .nr_samples = 51 };
	uint64_t dropped, pegged, set = 9, want = 51 * 10007ULL;
	int tfd = rc_test_open();

	if (tfd == -ENOENT)
		SKIP(return, "no test module (REFCNT_TEST_KO)");
	ASSERT_LE(0, tfd) TH_LOG("%s: %s", RC_TEST_DEV, strerror(-tfd));
	ctr = src / self->info.rcb_nodes_per_counter;
	ASSERT_EQ(0, ioctl(self->fd, RCB_SLOT_QUERY, &sq));
	ASSERT_EQ(0, ioctl(self->fd, RCB_RESET));
	dropped = rc_node_stat(nid, "refs_dropped");
	pegged = rc_node_stat(nid, "pegged");
	for (i = 0; i < 51; i++)
		s[i] = (struct refcnt_test_sample){
			.paddr = slot.base + set * self->info.rcb_granularity +
				 64 * i % self->info.rcb_granularity,
			.src_cnodeid = src, .weight = 10007 };
	ASSERT_EQ(0, ioctl(tfd, REFCNT_TEST_SAMPLES, &f));
	EXPECT_EQ(51U, f.delivered);
	EXPECT_EQ(want, (uint64_t)rc_set_counter(self->fd, set, cps, ctr, false) +
			rc_set_counter(self->fd, set, cps, ctr, true));
	EXPECT_EQ(dropped, rc_node_stat(nid, "refs_dropped"));
	EXPECT_EQ(pegged, rc_node_stat(nid, "pegged"));
	ioctl(self->fd, RCB_RESET);
	close(tfd);
}

/* Of a node's slots, the largest, and the number of its first set. */
static int rc_big_slot(int fd, uint64_t gran, struct rcb_slot *big,
		       uint64_t *first_set)
{
	struct rcb_slot slot[16];
	struct rcb_slot_query sq = { .slots = (uintptr_t)slot,
				     .num_slots = 16 };
	uint64_t sets = 0;
	unsigned int i;

	if (ioctl(fd, RCB_SLOT_QUERY, &sq))
		return -errno;
	big->size = 0;
	for (i = 0; i < sq.num_slots && i < 16; i++) {
		if (slot[i].size > big->size) {
			*big = slot[i];
			*first_set = sets;
		}
		sets += slot[i].size / gran;
	}
	return 0;
}

#define RC_NMI_PAIRS	40

/*
 * A PEBS/IBS stream as it comes, each sample in an NMI (the test module
 * sends the CPU an NMI per sample: REFCNT_TEST_SAMPLES_NMI), over cold
 * memory (reset: no counter page; no prealloc): in each of 40 pages of
 * counters, a sample of weight 100, then one of 10,007 to the next set,
 * whose hardware page the first made but whose extended page is
 * missing where it must fold. NMI context allocates nothing; no
 * reference may be dropped (refs_dropped unmoved), and every set holds
 * exactly its weight, counted late (refs_deferred).
 */
TEST_F(feeds, synthetic_pebs_in_nmi_over_cold_memory)
{
	unsigned int cps = self->info.rcb_sw_counters_per_set;
	unsigned int src = self->cnodes.n - 1, ctr, k;
	uint64_t gran = self->info.rcb_granularity, stride, first = 0;
	uint64_t dropped, refs, deferred, thr = self->info.rcb_abs_threshold;
	int nid = self->memory.id[0], tfd = rc_test_open();
	struct refcnt_test_sample s[2 * RC_NMI_PAIRS];
	struct refcnt_test_samples f = { .samples = (uintptr_t)s,
					 .nr_samples = 2 * RC_NMI_PAIRS,
					 .flags = REFCNT_TEST_SAMPLES_NMI };
	struct rcb_slot slot;

	if (tfd == -ENOENT)
		SKIP(return, "no test module (REFCNT_TEST_KO)");
	ASSERT_LE(0, tfd) TH_LOG("%s: %s", RC_TEST_DEV, strerror(-tfd));
	ctr = src / self->info.rcb_nodes_per_counter;
	/* Sets whose counters lie in a page of counters of their own. */
	stride = 4096 / sizeof(uint32_t) / cps + 1;
	ASSERT_EQ(0, rc_big_slot(self->fd, gran, &slot, &first));
	ASSERT_LE(RC_NMI_PAIRS * stride * gran, slot.size);
	for (k = 0; k < RC_NMI_PAIRS; k++) {
		uint64_t paddr = slot.base + k * stride * gran;

		s[2 * k] = (struct refcnt_test_sample){
			.paddr = paddr, .src_cnodeid = src, .weight = 100 };
		s[2 * k + 1] = (struct refcnt_test_sample){
			.paddr = paddr + gran, .src_cnodeid = src,
			.weight = 10007 };
	}
	ASSERT_EQ(0, ioctl(self->fd, RCB_RESET));
	dropped = rc_node_stat(nid, "refs_dropped");
	refs = rc_node_stat(nid, "references");
	deferred = rc_node_stat(nid, "refs_deferred");
	if (ioctl(tfd, REFCNT_TEST_SAMPLES, &f) && errno == EOPNOTSUPP)
		SKIP(return, "no NMI to send (not x86)");
	ASSERT_EQ(2U * RC_NMI_PAIRS, f.delivered) TH_LOG("%s", strerror(errno));
	ioctl(self->fd, RCB_SYNC);
	EXPECT_EQ(dropped, rc_node_stat(nid, "refs_dropped"));
	for (k = 0; k < RC_NMI_PAIRS; k++) {
		uint64_t set = first + k * stride;

		EXPECT_EQ(100U, rc_set_counter(self->fd, set, cps, ctr, false) +
				rc_set_counter(self->fd, set, cps, ctr, true));
		EXPECT_EQ(10007U,
			  rc_set_counter(self->fd, set + 1, cps, ctr, false) +
			  rc_set_counter(self->fd, set + 1, cps, ctr, true));
	}
	EXPECT_EQ(refs + RC_NMI_PAIRS * 10107ULL,
		  rc_node_stat(nid, "references"));
	/*
	 * Each first sample whole, the second's excess over the threshold
	 * (none with 19-bit counters, whose threshold is above 10,007).
	 */
	EXPECT_EQ(deferred + RC_NMI_PAIRS * (100 + (10007 > thr ? 10007 - thr : 0)),
		  rc_node_stat(nid, "refs_deferred"));
	EXPECT_EQ(0ULL, rc_node_stat(nid, "defer_full"));
	ioctl(self->fd, RCB_RESET);
	close(tfd);
}

/* Deliveries a CPU's deferral ring holds per node (admin-guide.rst). */
#define RC_DEFER_LEN	32

/*
 * More NMIs to cold pages than the deferral ring holds before the CPU
 * takes an interrupt (the test module sends them with interrupts off):
 * the first RC_DEFER_LEN wait and are counted, each one after is
 * dropped, and refs_dropped and defer_full say so, exactly.
 */
TEST_F(feeds, synthetic_pebs_in_nmi_ring_full_counts_the_loss)
{
	unsigned int cps = self->info.rcb_sw_counters_per_set;
	unsigned int src = self->cnodes.n - 1, ctr, k, n = RC_DEFER_LEN + 8;
	uint64_t gran = self->info.rcb_granularity, stride, first = 0;
	uint64_t kept = 0, lost = 0, dropped, full, refs;
	int nid = self->memory.id[0], tfd = rc_test_open();
	struct refcnt_test_sample s[RC_DEFER_LEN + 8];
	struct refcnt_test_samples f = { .samples = (uintptr_t)s,
					 .nr_samples = n,
					 .flags = REFCNT_TEST_SAMPLES_NMI |
						  REFCNT_TEST_SAMPLES_IRQS_OFF };
	struct rcb_slot slot;

	if (tfd == -ENOENT)
		SKIP(return, "no test module (REFCNT_TEST_KO)");
	ASSERT_LE(0, tfd) TH_LOG("%s: %s", RC_TEST_DEV, strerror(-tfd));
	ctr = src / self->info.rcb_nodes_per_counter;
	stride = 4096 / sizeof(uint32_t) / cps + 1;
	ASSERT_EQ(0, rc_big_slot(self->fd, gran, &slot, &first));
	ASSERT_LE(n * stride * gran, slot.size);
	for (k = 0; k < n; k++) {
		s[k] = (struct refcnt_test_sample){
			.paddr = slot.base + k * stride * gran,
			.src_cnodeid = src, .weight = 1000 + k };
		*(k < RC_DEFER_LEN ? &kept : &lost) += 1000 + k;
	}
	ASSERT_EQ(0, ioctl(self->fd, RCB_RESET));
	dropped = rc_node_stat(nid, "refs_dropped");
	full = rc_node_stat(nid, "defer_full");
	refs = rc_node_stat(nid, "references");
	if (ioctl(tfd, REFCNT_TEST_SAMPLES, &f) && errno == EOPNOTSUPP)
		SKIP(return, "no NMI to send (not x86)");
	ASSERT_EQ(n, f.delivered) TH_LOG("%s", strerror(errno));
	ioctl(self->fd, RCB_SYNC);
	EXPECT_EQ(dropped + lost, rc_node_stat(nid, "refs_dropped"));
	EXPECT_EQ(full + lost, rc_node_stat(nid, "defer_full"));
	EXPECT_EQ(refs + kept, rc_node_stat(nid, "references"));
	for (k = 0; k < n; k++)
		EXPECT_EQ(k < RC_DEFER_LEN ? 1000 + k : 0,
			  rc_set_counter(self->fd, first + k * stride, cps,
					 ctr, false)) TH_LOG("sample %u", k);
	ioctl(self->fd, RCB_RESET);
	close(tfd);
}

/*
 * Without a PMU, turning the PEBS feed on fails with EOPNOTSUPP and one
 * line in the kernel log; the feed's statistics are there, all zero
 * but for the synthetic samples, and no CPU is sampled or skipped.
 */
TEST_F(feeds, pebs_without_pmu_is_refused)
{
	struct rc_knob pebs = { 0 };
	char val[32];
	int err, lines;

	lines = rc_dmesg_count("refcnt: pebs feed: ");
	err = rc_knob_set(&pebs, RC_PARAMDIR "/pebs_period", "10007");
	if (!err) {
		rc_knob_restore(&pebs);
		SKIP(return, "this machine has a precise-sampling PMU");
	}
	EXPECT_EQ(-EOPNOTSUPP, err);
	EXPECT_EQ(lines + 1, rc_dmesg_count("refcnt: pebs feed: "));
	ASSERT_LT(0, rc_read_file(RC_PARAMDIR "/pebs_period", val, sizeof(val)));
	EXPECT_STREQ("0", val);
	EXPECT_EQ(0, rc_read_file(RC_FEEDDIR "/pebs_cpus", val, sizeof(val)));
	EXPECT_EQ(0, rc_read_file(RC_FEEDDIR "/pebs_skipped", val, sizeof(val)));
	EXPECT_EQ(0U, rc_feed_stat("pebs_kernel"));
	EXPECT_EQ(0U, rc_feed_stat("pebs_noaddr"));
	EXPECT_EQ(0U, rc_feed_stat("pebs_cached"));
	EXPECT_TRUE(rc_exists(RC_FEEDDIR "/pebs_cached"));
	EXPECT_EQ(0U, rc_feed_stat("pebs_throttled"));
	EXPECT_TRUE(rc_exists(RC_FEEDDIR "/pebs_throttled"));
	/* Everything else keeps working. */
	EXPECT_EQ(0, ioctl(self->fd, RCB_INFO_GET, &self->info));
}

/* @name's entry of RCB_FEEDS_GET on @fd, zeroed if it has none. */
static int rc_feed_info(int fd, const char *name, struct rcb_feed_info *out)
{
	struct rcb_feed_info fi[16];
	struct rcb_feeds_query q = { .feeds = (uintptr_t)fi, .nr_feeds = 16 };
	unsigned int i;

	memset(out, 0, sizeof(*out));
	if (ioctl(fd, RCB_FEEDS_GET, &q))
		return -errno;
	for (i = 0; i < q.nr_feeds && i < 16; i++)
		if (!strcmp(fi[i].name, name))
			*out = fi[i];
	return 0;
}

/*
 * RCB_FEEDS_GET says whether the machine can run a feed that is off: it
 * makes a disabled event (the fault feed's software one), or the PMU
 * feed's planners refuse it as pebs_period does. Asked twice: the
 * answer is remembered.
 */
TEST_F(feeds, feeds_get_probes_what_is_off)
{
	struct rc_knob pebs = { 0 };
	struct rcb_feed_info fi;
	bool pmu;
	int pass, err;

	ASSERT_EQ(0, rc_knob_set(&self->fault_period,
				 RC_PARAMDIR "/fault_period", "0"));
	err = rc_knob_set(&pebs, RC_PARAMDIR "/pebs_period", "10007");
	pmu = !err;
	rc_knob_restore(&pebs);
	if (!pmu)
		ASSERT_EQ(-EOPNOTSUPP, err);
	for (pass = 0; pass < 2; pass++) {
		ASSERT_EQ(0, rc_feed_info(self->fd, "fault", &fi));
		EXPECT_STREQ("fault", fi.name);
		EXPECT_EQ(RCB_FEED_PRESENT, fi.state) TH_LOG("pass %d", pass);
		EXPECT_EQ(0U, fi.period);
		ASSERT_EQ(0, rc_feed_info(self->fd, "pebs", &fi));
		EXPECT_STREQ("pebs", fi.name);
		EXPECT_EQ(pmu ? RCB_FEED_PRESENT : 0U, fi.state)
			TH_LOG("pass %d, PMU %d", pass, pmu);
	}
	/* On: present, on, at its period. */
	ASSERT_EQ(0, rc_knob_set(&self->fault_period,
				 RC_PARAMDIR "/fault_period", "3"));
	ASSERT_EQ(0, rc_feed_info(self->fd, "fault", &fi));
	EXPECT_EQ(RCB_FEED_PRESENT | RCB_FEED_ON, fi.state);
	EXPECT_EQ(3U, fi.period);
}

/*
 * The PMU feed's settings: a load-latency threshold the SDM refuses
 * (1, 2, above 65535) or a word that is not a number is EINVAL, one
 * line in the log, and changes nothing; valid ones are taken, with or
 * without a PMU.
 */
TEST_F(feeds, pebs_settings_bad_input)
{
	static const char *const bad_ldlat[] = { "1", "2", "65536", "x", "-3" };
	struct rc_knob ldlat = { 0 }, memside = { 0 };
	char val[32];
	unsigned int i;
	int lines;

	for (i = 0; i < sizeof(bad_ldlat) / sizeof(bad_ldlat[0]); i++) {
		lines = rc_dmesg_count("refcnt: pebs feed: pebs_ldlat must be");
		EXPECT_EQ(-EINVAL, rc_knob_set(&ldlat, RC_PARAMDIR "/pebs_ldlat",
					       bad_ldlat[i]));
		EXPECT_EQ(lines + 1,
			  rc_dmesg_count("refcnt: pebs feed: pebs_ldlat must be"));
		ASSERT_LT(0, rc_read_file(RC_PARAMDIR "/pebs_ldlat", val,
					  sizeof(val)));
		EXPECT_STREQ(ldlat.old, val);
	}
	EXPECT_EQ(-EINVAL, rc_knob_set(&memside, RC_PARAMDIR "/pebs_memside",
				       "maybe"));
	ASSERT_LT(0, rc_read_file(RC_PARAMDIR "/pebs_memside", val, sizeof(val)));
	EXPECT_STREQ(memside.old, val);
	/* Memory-side needs a threshold on Intel: set it first. */
	EXPECT_EQ(0, rc_knob_set(&ldlat, RC_PARAMDIR "/pebs_ldlat", "3"));
	EXPECT_EQ(0, rc_knob_set(&ldlat, RC_PARAMDIR "/pebs_ldlat", "65535"));
	EXPECT_EQ(0, rc_knob_set(&ldlat, RC_PARAMDIR "/pebs_ldlat", "128"));
	ASSERT_LT(0, rc_read_file(RC_PARAMDIR "/pebs_ldlat", val, sizeof(val)));
	EXPECT_STREQ("128", val);
	EXPECT_EQ(0, rc_knob_set(&memside, RC_PARAMDIR "/pebs_memside", "1"));
	ASSERT_LT(0, rc_read_file(RC_PARAMDIR "/pebs_memside", val, sizeof(val)));
	EXPECT_STREQ("Y", val);
	rc_knob_restore(&memside);
	rc_knob_restore(&ldlat);
}

static double rc_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/*
 * NUMA balancing on, scanning soon and often, and @len bytes bound to the
 * memory node with MPOL_BIND | MPOL_F_NUMA_BALANCING, so that nothing
 * migrates: the memory, or MAP_FAILED with *@skip saying why the test
 * cannot run (NULL: mmap itself failed).
 */
static char *rc_numab_memory(FIXTURE_DATA(feeds) *self, size_t len,
			     const char **skip)
{
	char *p;

	*skip = "NUMA balancing needs two nodes with memory";
	if (self->memory.n < 2)
		return MAP_FAILED;
	*skip = "no NUMA balancing in this kernel";
	if (rc_knob_set(&self->numa_balancing, "/proc/sys/kernel/numa_balancing",
			"1"))
		return MAP_FAILED;
	/* Debugfs knobs of 5.x/6.x; the defaults only take longer. */
	rc_knob_set(&self->scan_delay,
		    "/sys/kernel/debug/sched/numa_balancing/scan_delay_ms", "0");
	rc_knob_set(&self->scan_period,
		    "/sys/kernel/debug/sched/numa_balancing/scan_period_min_ms",
		    "100");
	*skip = NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return MAP_FAILED;
	madvise(p, len, MADV_NOHUGEPAGE);
	if (rc_mbind(p, len, MPOL_BIND | RC_MPOL_F_NUMA_BALANCING,
		     self->mem_node)) {
		munmap(p, len);
		*skip = "MPOL_F_NUMA_BALANCING needs Linux 5.12";
		return MAP_FAILED;
	}
	return p;
}

/*
 * Continuous sampling: with NUMA balancing on and the memory bound with
 * MPOL_BIND | MPOL_F_NUMA_BALANCING, hinting faults keep sampling a
 * program's references after its first touch, and no page moves.
 */
TEST_F(feeds, hinting_faults_keep_sampling_without_migration)
{
	size_t len = 64 * rc_page_size(), i;
	uint64_t first, now = 0;
	const char *skip;
	unsigned int ctr;
	double t0;
	char *p;

	p = rc_numab_memory(self, len, &skip);
	if (p == MAP_FAILED && skip)
		SKIP(return, "%s", skip);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, rc_knob_set(&self->fault_period,
				 RC_PARAMDIR "/fault_period", "1"));
	rc_pin(_metadata, self->cpu_node);
	ctr = rc_list_index(&self->cnodes, self->cpu_node) /
	      self->info.rcb_nodes_per_counter;

	for (i = 0; i < len; i += rc_page_size())
		p[i] = 1;
	first = rc_range_refs(self->fd, p, len, ctr, self->e, 64);
	t0 = rc_now();
	while (rc_now() - t0 < 20) {
		for (i = 0; i < len; i += rc_page_size())
			p[i]++;
		now = rc_range_refs(self->fd, p, len, ctr, self->e, 64);
		if (now > first)
			break;
		usleep(1000);
	}
	TH_LOG("first touch %llu references, %llu after %.1f s",
	       (unsigned long long)first, (unsigned long long)now,
	       rc_now() - t0);
	rc_knob_restore(&self->scan_delay);
	rc_knob_restore(&self->scan_period);
	EXPECT_LT(first, now);
	for (i = 0; i < len; i += rc_page_size())
		EXPECT_EQ(self->mem_node, rc_page_node(p + i));
	munmap(p, len);
}

/* Burn about @secs of CPU without touching memory: NUMA scans run on ticks. */
static void rc_spin(double secs)
{
	volatile unsigned long x = 0;
	double t0 = rc_now();

	while (rc_now() - t0 < secs)
		for (int i = 0; i < 100000; i++)
			x += i;
}

/*
 * Pages NUMA balancing made PROT_NONE are still mapped: the range query
 * reports them present, on their node, and faults none of them in. A
 * round counts when the touches after the query took one hinting fault
 * per page (each page was PROT_NONE then, and nothing touched it since
 * the scan before the query).
 */
TEST_F(feeds, query_sees_pages_numa_balancing_protected)
{
	size_t pg = rc_page_size(), n = 64, len = n * pg, i;
	int rounds = 0, counted = 0;
	struct rusage before, after;
	const char *skip;
	double t0;
	char *p;

	p = rc_numab_memory(self, len, &skip);
	if (p == MAP_FAILED && skip)
		SKIP(return, "%s", skip);
	ASSERT_NE(MAP_FAILED, p);
	rc_pin(_metadata, self->cpu_node);
	for (i = 0; i < len; i += pg)
		p[i] = 1;

	t0 = rc_now();
	/* Well inside the harness's 30 s: a busy host must not time it out. */
	while (rc_now() - t0 < 20 && counted < 3) {
		struct rcb_range_query q = {
			.vaddr = (uintptr_t)p, .len = len,
			.buf = (uintptr_t)self->e, .buf_entries = n,
			.flags = RCB_RANGE_EXTENDED,
		};

		rc_spin(0.3);
		ASSERT_EQ(0, ioctl(self->fd, RCB_RANGE_QUERY, &q));
		ASSERT_EQ(n, q.nr_entries);
		for (i = 0; i < n; i++) {
			ASSERT_EQ(RCB_PAGE_PRESENT, self->e[i].flags)
				TH_LOG("round %d, page %zu", rounds, i);
			ASSERT_EQ(rc_list_index(&self->cnodes, self->mem_node),
				  self->e[i].cnodeid);
		}
		rounds++;
		ASSERT_EQ(0, getrusage(RUSAGE_SELF, &before));
		for (i = 0; i < len; i += pg)
			p[i]++;
		ASSERT_EQ(0, getrusage(RUSAGE_SELF, &after));
		if (after.ru_minflt - before.ru_minflt >= (long)n)
			counted++;
	}
	rc_knob_restore(&self->scan_delay);
	rc_knob_restore(&self->scan_period);
	TH_LOG("%d rounds, %d with every page PROT_NONE at the query", rounds,
	       counted);
	for (i = 0; i < len; i += pg)
		EXPECT_EQ(self->mem_node, rc_page_node(p + i));
	munmap(p, len);
	if (!counted)
		SKIP(return, "NUMA balancing never made the pages PROT_NONE");
}

TEST_HARNESS_MAIN
