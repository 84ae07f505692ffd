// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt selftests: refcnt_data_range(), PAPI_DATA_ADDRESS semantics.
 *
 * For an array that starts and ends inside hardware pages, the call says
 * what was really measured: covered_start/covered_end rounded out to
 * hardware pages, start_off = start - covered_start, end_off = covered_end
 * - end (zero when exact), and the pages present or not. References
 * injected into the array's pages (root) appear in the per-cnodeid totals:
 * extended totals grow by what was folded, extended + hardware totals (the
 * default, flags 0) by exactly what was injected; hardware totals alone by
 * what was not folded. References lost to pegging are reported exactly
 * (root), and so are the feeds that were on.
 *
 * A module without RCB_RANGE_QUERY (ENOTTY) fails: it is built from the
 * same tree.
 */
#include "lib_helpers.h"
#include "refcnt_counters.h"

#define NPAGES	10

FIXTURE(dr) {
	size_t pg;
	uint64_t gran;
	struct rcb_info info;
	char *mem;
};

FIXTURE_SETUP(dr)
{
	struct refcnt_node *node;
	int nid;

	LH_ASSERT_RANGE_QUERY();
	self->pg = rc_page_size();
	ASSERT_LT(0, refcnt_nodes(&nid, 1));
	node = refcnt_node_open(nid, 0);
	ASSERT_NE(NULL, node);
	ASSERT_EQ(0, refcnt_node_info(node, &self->info));
	refcnt_node_close(node);
	self->gran = self->info.rcb_granularity;
	self->mem = lh_alloc(NPAGES * self->pg, true);
	ASSERT_NE(NULL, self->mem);
}

FIXTURE_TEARDOWN(dr)
{
	if (self->mem)
		munmap(self->mem, NPAGES * self->pg);
}

TEST_F(dr, covered_range_and_offsets)
{
	uint64_t base = (uintptr_t)self->mem, start, end;
	struct refcnt_data_range r;
	unsigned int i;

	start = base + 100;
	end = base + (NPAGES - 1) * self->pg + 50;
	memset(&r, 0xff, sizeof(r));
	ASSERT_EQ(0, refcnt_data_range(0, start, end, 0, &r)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(start, r.start);
	EXPECT_EQ(end, r.end);
	EXPECT_EQ(self->gran, r.granularity);
	EXPECT_EQ(rc_round_down(start, self->gran), r.covered_start);
	EXPECT_EQ(rc_round_up(end, self->gran), r.covered_end);
	EXPECT_EQ(start - r.covered_start, r.start_off);
	EXPECT_EQ(r.covered_end - end, r.end_off);
	/* PAPI: actual.start = start - start_off, actual.end = end + end_off */
	EXPECT_EQ(r.covered_start, start - r.start_off);
	EXPECT_EQ(r.covered_end, end + r.end_off);
	EXPECT_EQ((r.covered_end - r.covered_start) / self->gran, r.pages);
	EXPECT_EQ(r.pages, r.pages_present);
	EXPECT_EQ(0ULL, r.pages_not_present);
	EXPECT_EQ(r.pages, r.pages_counted);
	EXPECT_EQ(0ULL, r.pages_denied);
	EXPECT_EQ(0ULL, r.pages_uncounted);
	EXPECT_EQ(self->info.rcb_sw_counters_per_set, r.nr_counters);
	EXPECT_EQ(self->info.rcb_nodes_per_counter, r.nodes_per_counter);
	for (i = r.nr_counters; i < RCB_MAX_COUNTERS; i++)
		EXPECT_EQ(0ULL, r.totals[i]);
	EXPECT_EQ(0U, r.reserved32);
	for (i = 0; i < 6; i++)
		EXPECT_EQ(0ULL, r.reserved[i]);
	/* The guest loads the module without feeds; root sees paddrs. */
	EXPECT_EQ(geteuid() ? 0U : REFCNT_DATA_LOST_COUNTED, r.status);

	/* Exactly aligned: nothing added. */
	ASSERT_EQ(0, refcnt_data_range(0, base, base + 2 * self->gran, 0, &r));
	EXPECT_EQ(0ULL, r.start_off);
	EXPECT_EQ(0ULL, r.end_off);
	EXPECT_EQ(2ULL, r.pages);

	/* One byte. */
	ASSERT_EQ(0, refcnt_data_range(0, base + 7, base + 8, 0, &r));
	EXPECT_EQ(7ULL, r.start_off);
	EXPECT_EQ(self->gran - 8, r.end_off);
	EXPECT_EQ(1ULL, r.pages);
}

TEST_F(dr, pages_not_present)
{
	uint64_t base;
	struct refcnt_data_range r;
	char *m;

	m = lh_alloc(8 * self->pg, false);
	ASSERT_NE(NULL, m);
	memset(m, 1, 3 * self->pg);
	base = (uintptr_t)m;
	ASSERT_EQ(0, refcnt_data_range(0, base, base + 8 * self->pg,
				       REFCNT_DATA_EXTENDED, &r));
	EXPECT_EQ(8 * self->pg / self->gran, r.pages);
	EXPECT_EQ(3 * self->pg / self->gran, r.pages_present);
	EXPECT_EQ(5 * self->pg / self->gran, r.pages_not_present);
	EXPECT_EQ(r.pages_present, r.pages_counted);
	munmap(m, 8 * self->pg);
}

/* RCB_RESET every node (root): counters belong to physical pages. */
static int reset_all(void)
{
	int ids[RC_MAX_NODES], n, i;

	n = refcnt_nodes(ids, RC_MAX_NODES);
	if (n <= 0)
		return -1;
	for (i = 0; i < n; i++) {
		struct refcnt_node *node = refcnt_node_open(ids[i], 0);
		int ret;

		if (!node)
			return -1;
		ret = ioctl(refcnt_node_fd(node), RCB_RESET);
		refcnt_node_close(node);
		if (ret)
			return -1;
	}
	return 0;
}

/*
 * From zero: per page, a fold-sized count from cnodeid a (folded into the
 * extended counters), then a small count from cnodeid b (left in the
 * hardware counters).
 */
TEST_F(dr, totals_follow_injected_references)
{
	uint64_t base = (uintptr_t)self->mem, start = base + 1;
	uint64_t end = base + NPAGES * self->pg - 1;
	uint64_t big = self->info.rcb_abs_threshold, small = 3, n;
	struct rcb_page_counters e[NPAGES * 16];
	struct refcnt_data_range h, x, t, d;
	unsigned int a, b, ca, cb, c;
	size_t nr, i;

	if (geteuid())
		SKIP(return, "RCB_RESET, RCB_INJECT and physical addresses need root");
	a = 0;
	b = self->info.rcb_num_cnodes - 1;
	ca = lh_counter(&self->info, a);
	cb = lh_counter(&self->info, b);

	ASSERT_EQ(0, reset_all()) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, refcnt_data_range(0, start, end, REFCNT_DATA_TOTAL, &t));
	n = t.pages;
	EXPECT_EQ(n, t.pages_counted);
	EXPECT_EQ(0ULL, t.total);

	ASSERT_EQ(0, refcnt_range_query(0, t.covered_start,
					t.covered_end - t.covered_start, 0,
					e, NPAGES * 16, &nr));
	ASSERT_EQ(n, nr);
	for (i = 0; i < nr; i++) {
		struct refcnt_node *node;

		node = refcnt_node_open(refcnt_cnode_to_nid(e[i].cnodeid), 0);
		ASSERT_NE(NULL, node);
		ASSERT_EQ(0, lh_inject(refcnt_node_fd(node), e[i].paddr, a, big));
		if (cb != ca)
			ASSERT_EQ(0, lh_inject(refcnt_node_fd(node), e[i].paddr, b,
					       small));
		refcnt_node_close(node);
	}

	ASSERT_EQ(0, refcnt_data_range(0, start, end, REFCNT_DATA_HARDWARE, &h));
	ASSERT_EQ(0, refcnt_data_range(0, start, end, REFCNT_DATA_EXTENDED, &x));
	ASSERT_EQ(0, refcnt_data_range(0, start, end, REFCNT_DATA_TOTAL, &t));
	ASSERT_EQ(0, refcnt_data_range(0, start, end, 0, &d));
	for (c = 0; c < t.nr_counters; c++) {
		uint64_t want_x = c == ca ? n * big : 0;
		uint64_t want_h = c == cb && cb != ca ? n * small : 0;

		EXPECT_EQ(want_x, x.totals[c]) TH_LOG("extended, counter %u", c);
		EXPECT_EQ(want_h, h.totals[c]) TH_LOG("hardware, counter %u", c);
		EXPECT_EQ(want_x + want_h, t.totals[c]) TH_LOG("total, counter %u", c);
		EXPECT_EQ(want_x + want_h, d.totals[c]) TH_LOG("default, counter %u", c);
	}
	EXPECT_EQ(n * (big + (cb != ca ? small : 0)), t.total);
	EXPECT_EQ(t.total, h.total + x.total);
	EXPECT_EQ(t.total, d.total);
	/* Nothing pegged: none lost, and the library could tell. */
	EXPECT_EQ(REFCNT_DATA_LOST_COUNTED, d.status);
	EXPECT_EQ(0ULL, d.lost);
	ASSERT_EQ(0, reset_all());
}

/* Inject count references from cnodeid src into every page of e. */
/*
 * With each page's node's threshold at the maximum, max references to
 * each page and @lost more singly in the same batch: they are lost.
 */
static int inject_pages_pegging(const struct rcb_page_counters *e, size_t nr,
				unsigned int src, uint32_t lost)
{
	size_t i;

	for (i = 0; i < nr; i++) {
		struct refcnt_node *node;
		int ret;

		node = refcnt_node_open(refcnt_cnode_to_nid(e[i].cnodeid), 0);
		if (!node)
			return -errno;
		ret = rc_inject_pegging(refcnt_node_fd(node), e[i].paddr, src,
					lost);
		refcnt_node_close(node);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * max + 7 references in one batch, 7 of them singly once the counter is
 * at its maximum: it pegs (then folds, so the extended counter gets max)
 * and 7 are lost, per page.
 */
TEST_F(dr, lost_to_pegging)
{
	uint64_t base = (uintptr_t)self->mem, end = base + NPAGES * self->pg;
	uint64_t max = self->info.rcb_hw_counter_max;
	struct rcb_page_counters e[NPAGES * 16];
	struct refcnt_data_range r;
	unsigned int src = self->info.rcb_num_cnodes - 1, c;
	size_t nr;

	if (geteuid())
		SKIP(return, "RCB_RESET, RCB_INJECT and physical addresses need root");
	ASSERT_EQ(0, reset_all()) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, refcnt_range_query(0, base, end - base, 0, e,
					NPAGES * 16, &nr));
	ASSERT_EQ(0, inject_pages_pegging(e, nr, src, 7));

	ASSERT_EQ(0, refcnt_data_range(0, base, end, 0, &r));
	EXPECT_EQ(nr, r.pages_counted);
	EXPECT_EQ(REFCNT_DATA_LOST_COUNTED, r.status);
	EXPECT_EQ(nr * 7, r.lost);
	for (c = 0; c < r.nr_counters; c++)
		EXPECT_EQ(c == lh_counter(&self->info, src) ? nr * max : 0,
			  r.totals[c]) TH_LOG("counter %u", c);
	ASSERT_EQ(0, refcnt_data_range(0, base, end, REFCNT_DATA_HARDWARE, &r));
	EXPECT_EQ(0ULL, r.total);
	EXPECT_EQ(nr * 7, r.lost);
	ASSERT_EQ(0, reset_all());
	ASSERT_EQ(0, refcnt_data_range(0, base, end, 0, &r));
	EXPECT_EQ(0ULL, r.lost);
	EXPECT_EQ(0ULL, r.total);
}

/* Write a module parameter (root). 0 or -errno. */
static int set_param(const char *name, const char *val)
{
	char path[128];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "/sys/module/refcnt/parameters/%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * The status names the page-fault feed while it is on. (The PEBS feed
 * needs a PMU the test guests do not have; feeds_test covers it.)
 */
TEST_F(dr, feeds_reported)
{
	uint64_t base = (uintptr_t)self->mem;
	struct refcnt_data_range r;
	int ret;

	if (geteuid())
		SKIP(return, "module parameters need root");
	ASSERT_EQ(0, refcnt_data_range(0, base, base + 1, 0, &r));
	EXPECT_EQ(0U, r.status & (REFCNT_DATA_FEED_FAULT | REFCNT_DATA_FEED_PEBS |
				  REFCNT_DATA_FEEDS_UNKNOWN));
	ret = set_param("fault_period", "64");
	ASSERT_EQ(0, ret) TH_LOG("fault_period=64: %s", strerror(-ret));
	ret = refcnt_data_range(0, base, base + 1, 0, &r);
	EXPECT_EQ(0, set_param("fault_period", "0"));
	ASSERT_EQ(0, ret);
	EXPECT_EQ(REFCNT_DATA_FEED_FAULT,
		  r.status & (REFCNT_DATA_FEED_FAULT | REFCNT_DATA_FEED_PEBS |
			      REFCNT_DATA_FEEDS_UNKNOWN));
	ASSERT_EQ(0, refcnt_data_range(0, base, base + 1, 0, &r));
	EXPECT_EQ(0U, r.status & REFCNT_DATA_FEED_FAULT);
}

TEST_F(dr, bad_arguments)
{
	uint64_t base = (uintptr_t)self->mem;
	struct refcnt_data_range r;

	errno = 0;
	EXPECT_EQ(-1, refcnt_data_range(0, base, base, 0, &r));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_data_range(0, base + 10, base, 0, &r));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_data_range(0, base, base + 10, 0x2, &r));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_data_range(0, base, base + 10,
					REFCNT_DATA_EXTENDED | REFCNT_DATA_TOTAL, &r));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_data_range(0, base, base + 10,
					REFCNT_DATA_HARDWARE | REFCNT_DATA_TOTAL, &r));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_data_range(0, base, base + 10, 0, NULL));
	EXPECT_EQ(EFAULT, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_data_range(-3, base, base + 10, 0, &r));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_data_range(0, UINT64_MAX - 10, UINT64_MAX, 0, &r));
	EXPECT_EQ(EINVAL, errno);
}

TEST_HARNESS_MAIN
