// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt selftests: counting one process through the library
 * (refcnt_count_start(), refcnt_node_count_start(), refcnt_count_stats(),
 * refcnt_count_stop()). The fault feed of the session counts every fault
 * (period 1), the machine-wide feed is off, and each page is touched once:
 * refcnt_data_range() must then see exactly one reference per counted
 * page, and none once the session is stopped or outside its ranges.
 */
#include "lib_helpers.h"

#define LC_PAGES	32

/* Zero counters, no NUMA hinting faults (the knob restored after). */
FIXTURE(lc) {
	char numa_balancing[32];
	int saved;
};

static void lc_knob(const char *val)
{
	int fd = open("/proc/sys/kernel/numa_balancing", O_WRONLY);

	if (fd >= 0) {
		if (write(fd, val, strlen(val)) < 0)
			perror("numa_balancing");
		close(fd);
	}
}

FIXTURE_SETUP(lc)
{
	struct rc_nodes mem;
	uint64_t period = 1;
	int i;

	ASSERT_EQ(0, rc_read_u64(RC_PARAMDIR "/fault_period", &period));
	ASSERT_EQ(0ULL, period);
	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	for (i = 0; i < mem.n; i++)
		ASSERT_EQ(0, rc_reset_node(mem.id[i]));
	self->saved = rc_read_file("/proc/sys/kernel/numa_balancing",
				   self->numa_balancing,
				   sizeof(self->numa_balancing)) >= 0;
	if (self->saved)
		lc_knob("0");
}

FIXTURE_TEARDOWN(lc)
{
	if (self->saved)
		lc_knob(self->numa_balancing);
}

static uint64_t lc_total(char *p, size_t len)
{
	struct refcnt_data_range r;

	if (refcnt_data_range(0, (uintptr_t)p, (uintptr_t)p + len,
			      REFCNT_DATA_TOTAL, &r))
		return UINT64_MAX;
	return r.total;
}

static void lc_touch(char *p, size_t len)
{
	size_t pg = rc_page_size(), i;

	for (i = 0; i < len; i += pg)
		((volatile char *)p)[i] = 1;
}

/* Start, statistics, stop: counted while on, not after. */
TEST_F(lc, count_start_stats_stop)
{
	size_t len = LC_PAGES * rc_page_size();
	char *a = lh_alloc(len, false), *b = lh_alloc(len, false);
	struct rcb_count_stats st;
	int fd;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	fd = refcnt_count_start(0, 0, 1, 0, NULL, 0);
	ASSERT_LE(0, fd) TH_LOG("refcnt_count_start: %s", strerror(errno));
	lc_touch(a, len);
	ASSERT_EQ(0, refcnt_count_stats(fd, &st));
	EXPECT_EQ(st.samples, st.delivered + st.unresolved + st.outside);
	EXPECT_LE((uint64_t)LC_PAGES, st.delivered);
	EXPECT_EQ(0ULL, st.outside);
	EXPECT_EQ(0ULL, st.dropped);
	EXPECT_EQ(0ULL, st.throttled);
	ASSERT_EQ(0, refcnt_count_stop(fd));
	lc_touch(b, len);
	EXPECT_EQ((uint64_t)LC_PAGES, lc_total(a, len));
	EXPECT_EQ(0ULL, lc_total(b, len));
	/* The session is gone with its descriptor. */
	EXPECT_EQ(-1, refcnt_count_stats(fd, &st));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, refcnt_count_stop(fd));
	EXPECT_EQ(EBADF, errno);
}

/* On an open node, restricted to the second half of the pages. */
TEST_F(lc, node_count_start_ranges)
{
	size_t len = LC_PAGES * rc_page_size();
	char *p = lh_alloc(len, false);
	struct rcb_count_range r;
	struct rcb_count_stats st;
	struct refcnt_node *node;
	struct rc_nodes mem;
	int fd;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	node = refcnt_node_open(mem.id[0], 0);
	ASSERT_NE(NULL, node);
	r.start = (uintptr_t)p + len / 2;
	r.len = len / 2;
	fd = refcnt_node_count_start(node, 0, 0, 1, 0, &r, 1);
	ASSERT_LE(0, fd) TH_LOG("refcnt_node_count_start: %s", strerror(errno));
	lc_touch(p, len);
	ASSERT_EQ(0, refcnt_count_stats(fd, &st));
	ASSERT_EQ(0, refcnt_count_stop(fd));
	EXPECT_EQ(0ULL, lc_total(p, len / 2));
	EXPECT_EQ((uint64_t)LC_PAGES / 2, lc_total(p + len / 2, len / 2));
	EXPECT_EQ((uint64_t)LC_PAGES / 2, st.delivered);
	EXPECT_LE((uint64_t)LC_PAGES / 2, st.outside);
	refcnt_node_close(node);
}

/* What the library refuses itself, and the kernel's errors passed on. */
TEST_F(lc, count_errors)
{
	struct refcnt_node *node;
	struct rcb_count_stats st;
	struct rc_nodes mem;

	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	node = refcnt_node_open(mem.id[0], 0);
	ASSERT_NE(NULL, node);
	errno = 0;
	EXPECT_EQ(-1, refcnt_node_count_start(NULL, 0, 0, 1, 0, NULL, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, refcnt_count_start(0, 0, 1, 0, NULL, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, refcnt_count_start(0, 0, 0, 0, NULL, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, refcnt_count_start(0, RCB_COUNT_FLAGS + 1, 1, 0,
					 NULL, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, refcnt_node_count_start(node, INT32_MAX, 0, 1, 0,
					      NULL, 0));
	EXPECT_EQ(ESRCH, errno);
	EXPECT_EQ(-1, refcnt_count_stats(refcnt_node_fd(node), &st));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, refcnt_count_stats(-1, &st));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, refcnt_count_stats(refcnt_node_fd(node), NULL));
	EXPECT_EQ(EFAULT, errno);
	refcnt_node_close(node);
}

TEST_HARNESS_MAIN
