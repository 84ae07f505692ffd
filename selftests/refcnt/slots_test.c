// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt selftests: RCB_SLOT_GET (refcnt(5) form) and RCB_SLOT_QUERY.
 *
 * The kernel never writes more entries than it reported: every array
 * below is followed by canary entries that must survive. Built 64-bit and,
 * when possible, -m32 (slots_test32) for the compat_ioctl path.
 */
#include "refcnt_checks.h"

#define SPARE	8	/* canary entries after each array */

FIXTURE(slots) {
	struct rc_nodes mem;
	struct rc_params params;
	struct rcb_slot s[RC_MAX_SLOTS + SPARE];
	struct rcb_slot q[RC_MAX_SLOTS + SPARE];
};

FIXTURE_SETUP(slots)
{
	ASSERT_TRUE(rc_module_loaded()) TH_LOG("refcnt.ko is not loaded");
	ASSERT_EQ(0, rc_node_list("has_memory", &self->mem));
	ASSERT_LT(0, self->mem.n);
	ASSERT_EQ(0, rc_read_params(&self->params));
}

FIXTURE_TEARDOWN(slots)
{
}

/* Open node i and return its rcb_info; the fd has done RCB_INFO_GET. */
static int open_info(struct __test_metadata *_metadata, int node,
		     struct rcb_info *info)
{
	int fd = rc_open_node(node, O_RDONLY);

	ASSERT_LE(0, fd) TH_LOG("node%d: %s", node, strerror(errno));
	ASSERT_EQ(0, ioctl(fd, RCB_INFO_GET, info))
		TH_LOG("node%d: %s", node, strerror(errno));
	ASSERT_LT(0U, info->rcb_num_slots);
	ASSERT_GE((unsigned int)RC_MAX_SLOTS, info->rcb_num_slots);
	return fd;
}

/*
 * refcnt(5) usage: RCB_INFO_GET, then RCB_SLOT_GET into an array of
 * rcb_num_slots entries. Exactly that many entries are written.
 */
TEST_F(slots, slot_get_writes_exactly_num_slots)
{
	int i;

	for (i = 0; i < self->mem.n; i++) {
		int node = self->mem.id[i];
		struct rcb_info info;
		unsigned int k, n;
		int fd;

		fd = open_info(_metadata, node, &info);
		n = info.rcb_num_slots;
		rc_fill_canary(self->s, n + SPARE);
		ASSERT_EQ(0, ioctl(fd, RCB_SLOT_GET, self->s))
			TH_LOG("node%d: %s", node, strerror(errno));
		for (k = 0; k < n; k++) {
			EXPECT_FALSE(rc_is_canary(&self->s[k]))
				TH_LOG("node%d: slot %u not written", node, k);
		}
		for (k = n; k < n + SPARE; k++) {
			EXPECT_TRUE(rc_is_canary(&self->s[k]))
				TH_LOG("node%d: entry %u past rcb_num_slots written",
				       node, k);
		}
		close(fd);
	}
}

/* Slots are ascending, disjoint, aligned, non-empty and inside the node. */
TEST_F(slots, sorted_disjoint_inside_node)
{
	int i;

	for (i = 0; i < self->mem.n; i++) {
		int node = self->mem.id[i];
		struct rcb_info info;
		int fd;

		fd = open_info(_metadata, node, &info);
		ASSERT_EQ(0, ioctl(fd, RCB_SLOT_GET, self->s));
		close(fd);
		rc_check_slots(_metadata, node, self->s, info.rcb_num_slots,
			       self->params.granularity);
	}
}

/* The slot-derived rcb_info fields agree with the slots. */
TEST_F(slots, info_matches_slots)
{
	int i;

	for (i = 0; i < self->mem.n; i++) {
		int node = self->mem.id[i];
		unsigned long long sum = 0;
		struct rcb_info info;
		unsigned int k;
		int fd;

		fd = open_info(_metadata, node, &info);
		ASSERT_EQ(0, ioctl(fd, RCB_SLOT_GET, self->s));
		close(fd);
		for (k = 0; k < info.rcb_num_slots; k++)
			sum += self->s[k].size;
		EXPECT_EQ(self->s[0].base, info.rcb_base_paddr) TH_LOG("node%d", node);
		EXPECT_EQ(sum, (unsigned long long)info.rcb_sw_sets *
			  info.rcb_granularity) TH_LOG("node%d", node);
		EXPECT_EQ((unsigned long long)info.rcb_sw_sets *
			  info.rcb_sw_counters_per_set * 4, info.rcb_len)
			TH_LOG("node%d", node);
	}
}

/* No physical range is counted by two nodes. */
TEST_F(slots, nodes_disjoint)
{
	static struct rcb_slot all[RC_MAX_SLOTS];
	static int owner[RC_MAX_SLOTS];
	int i, total = 0, a, b;

	for (i = 0; i < self->mem.n; i++) {
		int fd, n, k;

		fd = rc_open_node(self->mem.id[i], O_RDONLY);
		ASSERT_LE(0, fd);
		n = rc_query_slots(fd, self->q, RC_MAX_SLOTS);
		close(fd);
		ASSERT_LT(0, n);
		ASSERT_GE(RC_MAX_SLOTS - total, n);
		for (k = 0; k < n; k++) {
			owner[total] = self->mem.id[i];
			all[total++] = self->q[k];
		}
	}
	for (a = 0; a < total; a++)
		for (b = a + 1; b < total; b++) {
			bool overlap = all[a].base < all[b].base + all[b].size &&
				       all[b].base < all[a].base + all[a].size;

			EXPECT_FALSE(overlap)
				TH_LOG("node%d [0x%llx,+0x%llx) overlaps node%d [0x%llx,+0x%llx)",
				       owner[a], (unsigned long long)all[a].base,
				       (unsigned long long)all[a].size, owner[b],
				       (unsigned long long)all[b].base,
				       (unsigned long long)all[b].size);
		}
}

/* RCB_SLOT_GET on an fd that never did RCB_INFO_GET: EINVAL, nothing written. */
TEST_F(slots, slot_get_without_info_einval)
{
	int i;

	for (i = 0; i < self->mem.n; i++) {
		int node = self->mem.id[i];
		struct rcb_info info;
		int fd, fd2;

		fd = rc_open_node(node, O_RDONLY);
		ASSERT_LE(0, fd);
		rc_fill_canary(self->s, SPARE);
		errno = 0;
		EXPECT_EQ(-1, ioctl(fd, RCB_SLOT_GET, self->s));
		EXPECT_EQ(EINVAL, errno) TH_LOG("node%d", node);
		EXPECT_TRUE(rc_is_canary(&self->s[0])) TH_LOG("node%d", node);

		/* RCB_INFO_GET on another open file does not count. */
		fd2 = open_info(_metadata, node, &info);
		errno = 0;
		EXPECT_EQ(-1, ioctl(fd, RCB_SLOT_GET, self->s));
		EXPECT_EQ(EINVAL, errno) TH_LOG("node%d", node);
		EXPECT_TRUE(rc_is_canary(&self->s[0])) TH_LOG("node%d", node);

		/* ... but once this file did it, it works. */
		ASSERT_EQ(0, ioctl(fd, RCB_INFO_GET, &info));
		EXPECT_EQ(0, ioctl(fd, RCB_SLOT_GET, self->s))
			TH_LOG("node%d: %s", node, strerror(errno));
		ASSERT_EQ(0, ioctl(fd2, RCB_SLOT_GET, self->q));
		EXPECT_EQ(0, memcmp(self->s, self->q,
				    info.rcb_num_slots * sizeof(self->s[0])));
		close(fd2);
		close(fd);
	}
}

/* A forked child shares the open file, and with it the RCB_INFO_GET. */
TEST_F(slots, slot_get_shared_open_file)
{
	struct rcb_info info;
	int fd, status;
	pid_t pid;

	fd = open_info(_metadata, self->mem.id[0], &info);
	pid = rc_fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		rc_fill_canary(self->s, info.rcb_num_slots + 1);
		if (ioctl(fd, RCB_SLOT_GET, self->s))
			_exit(1);
		_exit(rc_is_canary(&self->s[info.rcb_num_slots]) ? 0 : 2);
	}
	status = rc_wait(pid);
	close(fd);
	ASSERT_EQ(0, status);
}

/* RCB_SLOT_QUERY with room for all: the same slots as RCB_SLOT_GET. */
TEST_F(slots, query_matches_slot_get)
{
	int i;

	for (i = 0; i < self->mem.n; i++) {
		int node = self->mem.id[i];
		struct rcb_slot_query q;
		struct rcb_info info;
		unsigned int k, n;
		int fd;

		fd = open_info(_metadata, node, &info);
		n = info.rcb_num_slots;
		ASSERT_EQ(0, ioctl(fd, RCB_SLOT_GET, self->s));

		/* Exactly the right capacity. */
		rc_fill_canary(self->q, n + SPARE);
		q.slots = (uintptr_t)self->q;
		q.num_slots = n;
		q.flags = 0;
		ASSERT_EQ(0, ioctl(fd, RCB_SLOT_QUERY, &q))
			TH_LOG("node%d: %s", node, strerror(errno));
		EXPECT_EQ(n, q.num_slots) TH_LOG("node%d", node);
		EXPECT_EQ((uintptr_t)self->q, q.slots);
		EXPECT_EQ(0U, q.flags);
		EXPECT_EQ(0, memcmp(self->s, self->q, n * sizeof(self->s[0])))
			TH_LOG("node%d", node);
		for (k = n; k < n + SPARE; k++) {
			EXPECT_TRUE(rc_is_canary(&self->q[k])) TH_LOG("node%d", node);
		}

		/* More room than needed: only the real slots are written. */
		rc_fill_canary(self->q, n + SPARE);
		q.slots = (uintptr_t)self->q;
		q.num_slots = n + SPARE - 1;
		q.flags = 0;
		ASSERT_EQ(0, ioctl(fd, RCB_SLOT_QUERY, &q));
		EXPECT_EQ(n, q.num_slots) TH_LOG("node%d", node);
		EXPECT_EQ(0, memcmp(self->s, self->q, n * sizeof(self->s[0])));
		for (k = n; k < n + SPARE; k++) {
			EXPECT_TRUE(rc_is_canary(&self->q[k])) TH_LOG("node%d", node);
		}
		close(fd);
	}
}

/* RCB_SLOT_QUERY needs no RCB_INFO_GET first. */
TEST_F(slots, query_on_fresh_fd)
{
	int fd, n;

	fd = rc_open_node(self->mem.id[0], O_RDONLY);
	ASSERT_LE(0, fd);
	n = rc_query_slots(fd, self->q, RC_MAX_SLOTS);
	EXPECT_LT(0, n) TH_LOG("%s", strerror(-n));
	close(fd);
}

/* Capacity 0 writes nothing and returns the total, with or without a pointer. */
TEST_F(slots, query_capacity_zero)
{
	int i;

	for (i = 0; i < self->mem.n; i++) {
		int node = self->mem.id[i];
		struct rcb_slot_query q;
		struct rcb_info info;
		int fd;

		fd = open_info(_metadata, node, &info);
		rc_fill_canary(self->q, SPARE);
		q.slots = (uintptr_t)self->q;
		q.num_slots = 0;
		q.flags = 0;
		ASSERT_EQ(0, ioctl(fd, RCB_SLOT_QUERY, &q))
			TH_LOG("node%d: %s", node, strerror(errno));
		EXPECT_EQ(info.rcb_num_slots, q.num_slots) TH_LOG("node%d", node);
		EXPECT_TRUE(rc_is_canary(&self->q[0])) TH_LOG("node%d", node);

		q.slots = 0;
		q.num_slots = 0;
		q.flags = 0;
		ASSERT_EQ(0, ioctl(fd, RCB_SLOT_QUERY, &q))
			TH_LOG("node%d: %s", node, strerror(errno));
		EXPECT_EQ(info.rcb_num_slots, q.num_slots) TH_LOG("node%d", node);
		close(fd);
	}
}

/* Capacity 1 on a node with several slots: only slot 0 is written. */
TEST_F(slots, query_capacity_one_multislot)
{
	int i, tested = 0;

	for (i = 0; i < self->mem.n; i++) {
		int node = self->mem.id[i];
		struct rcb_slot_query q;
		struct rcb_info info;
		unsigned int k;
		int fd;

		fd = open_info(_metadata, node, &info);
		if (info.rcb_num_slots < 2) {
			close(fd);
			continue;
		}
		tested++;
		ASSERT_EQ(0, ioctl(fd, RCB_SLOT_GET, self->s));
		rc_fill_canary(self->q, SPARE);
		q.slots = (uintptr_t)self->q;
		q.num_slots = 1;
		q.flags = 0;
		ASSERT_EQ(0, ioctl(fd, RCB_SLOT_QUERY, &q))
			TH_LOG("node%d: %s", node, strerror(errno));
		EXPECT_EQ(info.rcb_num_slots, q.num_slots) TH_LOG("node%d", node);
		EXPECT_EQ(self->s[0].base, self->q[0].base) TH_LOG("node%d", node);
		EXPECT_EQ(self->s[0].size, self->q[0].size) TH_LOG("node%d", node);
		for (k = 1; k < SPARE; k++) {
			EXPECT_TRUE(rc_is_canary(&self->q[k]))
				TH_LOG("node%d: entry %u written with capacity 1",
				       node, k);
		}

		/* Capacity n-1: the first n-1 slots, not the last. */
		rc_fill_canary(self->q, info.rcb_num_slots + SPARE);
		q.slots = (uintptr_t)self->q;
		q.num_slots = info.rcb_num_slots - 1;
		q.flags = 0;
		ASSERT_EQ(0, ioctl(fd, RCB_SLOT_QUERY, &q));
		EXPECT_EQ(info.rcb_num_slots, q.num_slots);
		EXPECT_EQ(0, memcmp(self->s, self->q, (info.rcb_num_slots - 1) *
				    sizeof(self->s[0])));
		EXPECT_TRUE(rc_is_canary(&self->q[info.rcb_num_slots - 1]))
			TH_LOG("node%d: entry past capacity written", node);
		close(fd);
	}
	if (!tested)
		SKIP(return, "every node has a single slot");
}

/* flags != 0 is EINVAL and writes nothing. */
TEST_F(slots, query_flags_einval)
{
	static const __u32 bad[] = { 1, 2, 0x80000000U, 0xffffffffU };
	struct rcb_slot_query q;
	unsigned int k;
	int fd;

	fd = rc_open_node(self->mem.id[0], O_RDONLY);
	ASSERT_LE(0, fd);
	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		rc_fill_canary(self->q, SPARE);
		q.slots = (uintptr_t)self->q;
		q.num_slots = SPARE;
		q.flags = bad[k];
		errno = 0;
		EXPECT_EQ(-1, ioctl(fd, RCB_SLOT_QUERY, &q)) TH_LOG("flags 0x%x", bad[k]);
		EXPECT_EQ(EINVAL, errno) TH_LOG("flags 0x%x", bad[k]);
		EXPECT_TRUE(rc_is_canary(&self->q[0])) TH_LOG("flags 0x%x", bad[k]);
	}
	close(fd);
}

TEST_HARNESS_MAIN
