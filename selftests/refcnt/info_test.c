// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt selftests: the ABI and RCB_INFO_GET.
 *
 * Built twice: 64-bit and, when the compiler can, -m32 (info_test32), so
 * that the same assertions also go through the kernel's compat_ioctl path.
 */
#include "refcnt_checks.h"

/* The layout is part of the ABI: identical for 32- and 64-bit callers. */
_Static_assert(sizeof(struct rcb_info) == 120, "rcb_info size");
_Static_assert(offsetof(struct rcb_info, rcb_base_paddr) == 24, "rcb_base_paddr");
_Static_assert(offsetof(struct rcb_info, rcb_sw_counters_per_set) == 32, "cps");
_Static_assert(offsetof(struct rcb_info, rcb_num_slots) == 64, "rcb_num_slots");
_Static_assert(offsetof(struct rcb_info, rcb_flags) == 84, "rcb_flags");
_Static_assert(offsetof(struct rcb_info, rcb_generation) == 88, "rcb_generation");
_Static_assert(offsetof(struct rcb_info, rcb_reserved) == 96, "rcb_reserved");
_Static_assert(sizeof(struct rcb_slot) == 16, "rcb_slot size");
_Static_assert(sizeof(struct rcb_slot_query) == 16, "rcb_slot_query size");
_Static_assert(offsetof(struct rcb_slot_query, num_slots) == 8, "num_slots");
_Static_assert(offsetof(struct rcb_slot_query, flags) == 12, "flags");
_Static_assert(sizeof(struct rcb_range_query) == 64, "rcb_range_query size");
_Static_assert(offsetof(struct rcb_range_query, reserved) ==
	       RCB_RANGE_QUERY_SIZE_VER0, "the first struct ends at reserved");
_Static_assert(sizeof(struct rcb_event) == 72, "rcb_event size");
_Static_assert(sizeof(struct rcb_event_record) ==
	       RCB_EVENT_RECORD_SIZE_VER1, "rcb_event_record size");
_Static_assert(offsetof(struct rcb_event_record, set) == 16, "set");
_Static_assert(offsetof(struct rcb_event_record, count) == 32, "count");
_Static_assert(offsetof(struct rcb_event_record, home_cnodeid) == 48, "home");
_Static_assert(offsetof(struct rcb_event_record, vaddr) == 64, "vaddr");
_Static_assert(offsetof(struct rcb_event_record, reserved) == 88, "reserved");
_Static_assert(sizeof(struct rcb_event_format) == 16, "rcb_event_format size");

/* Command numbers and struct sizes are the same in every build. */
/* No module needed: compile-time facts checked at run time in each build. */
FIXTURE(abi) {
	int unused;
};

FIXTURE_SETUP(abi)
{
}

FIXTURE_TEARDOWN(abi)
{
}

TEST_F(abi, layout)
{
	TH_LOG("%zu-bit build", sizeof(long) * 8);
	EXPECT_EQ(0x80785901U, (unsigned int)RCB_INFO_GET);
	EXPECT_EQ(0x80105902U, (unsigned int)RCB_SLOT_GET);
	EXPECT_EQ(0xc0105903U, (unsigned int)RCB_SLOT_QUERY);
	EXPECT_EQ(0xc0405906U, (unsigned int)RCB_RANGE_QUERY);
	EXPECT_EQ(0xc0105908U, (unsigned int)RCB_EVENT_FORMAT);
	EXPECT_EQ((size_t)64, sizeof(struct rcb_range_query));
	EXPECT_EQ((size_t)104, sizeof(struct rcb_event_record));
	EXPECT_EQ((size_t)120, sizeof(struct rcb_info));
	EXPECT_EQ((size_t)16, sizeof(struct rcb_slot));
	EXPECT_EQ((size_t)16, sizeof(struct rcb_slot_query));
	EXPECT_EQ(64, RCB_MAX_COUNTERS);
	EXPECT_EQ(8, RCB_NODES_PER_GROUP);
}

FIXTURE(info) {
	struct rc_nodes cnodes;	/* the module's numbering, fixed at load */
	struct rc_nodes mem;
	struct rc_params params;
};

FIXTURE_SETUP(info)
{
	ASSERT_TRUE(rc_module_loaded()) TH_LOG("refcnt.ko is not loaded");
	ASSERT_EQ(0, rc_cnode_list(&self->cnodes));
	ASSERT_EQ(0, rc_node_list("has_memory", &self->mem));
	ASSERT_LT(0, self->mem.n);
	ASSERT_EQ(0, rc_read_params(&self->params));
}

FIXTURE_TEARDOWN(info)
{
}

/* Every field of every node's rcb_info is exactly what the rules say. */
TEST_F(info, all_fields_exact)
{
	int i;

	for (i = 0; i < self->mem.n; i++) {
		int fd = rc_open_node(self->mem.id[i], O_RDONLY);

		ASSERT_LE(0, fd) TH_LOG("node%d: %s", self->mem.id[i], strerror(errno));
		rc_check_info(_metadata, self->mem.id[i], fd, &self->params, NULL);
		close(fd);
	}
}

/*
 * The topology rules, spelled out: counters per set, nodes per counter
 * and counter width for the number of nodes the module numbered at load.
 */
TEST_F(info, topology_rules)
{
	unsigned int cn = self->cnodes.n;
	struct rcb_info info;
	int fd;

	fd = rc_open_node(self->mem.id[0], O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, RCB_INFO_GET, &info));
	close(fd);

	TH_LOG("%u cnodes, %d nodes with memory", cn, self->mem.n);
	ASSERT_EQ(cn, info.rcb_num_cnodes);
	if (cn <= 64) {
		EXPECT_EQ(cn, info.rcb_sw_counters_per_set);
		EXPECT_EQ(1U, info.rcb_nodes_per_counter);
	} else {
		EXPECT_EQ((cn + 7) / 8, info.rcb_sw_counters_per_set);
		EXPECT_EQ(8U, info.rcb_nodes_per_counter);
	}
	if (cn == 72) {
		EXPECT_EQ(9U, info.rcb_sw_counters_per_set);
	}
	if (cn > 16 || self->params.premium) {
		EXPECT_EQ(19U, info.rcb_hw_counter_bits);
		EXPECT_EQ(0x7ffffU, info.rcb_hw_counter_max);
	} else {
		EXPECT_EQ(11U, info.rcb_hw_counter_bits);
		EXPECT_EQ(0x7ffU, info.rcb_hw_counter_max);
	}
	if (!self->params.abs_threshold) {
		EXPECT_EQ(info.rcb_hw_counter_bits == 19 ? 458752U : 1792U,
			  info.rcb_abs_threshold);
	}
	EXPECT_EQ(self->params.diff_threshold, info.rcb_diff_threshold);
}

/*
 * cnodeids of the devices are their nodes' dense index in the module's
 * numbering; a node added since the load has none.
 */
TEST_F(info, cnodeids_dense_distinct)
{
	unsigned int used[RC_MAX_NODES] = { 0 };
	int i;

	for (i = 0; i < self->mem.n; i++) {
		struct rcb_info info;
		int fd = rc_open_node(self->mem.id[i], O_RDONLY);

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, ioctl(fd, RCB_INFO_GET, &info));
		close(fd);
		EXPECT_EQ((unsigned int)self->cnodes.n, info.rcb_num_cnodes);
		if (!rc_list_has(&self->cnodes, self->mem.id[i])) {
			EXPECT_EQ(RCB_NO_CNODE, info.rcb_cnodeid);
			continue;
		}
		ASSERT_GT(self->cnodes.n, (int)info.rcb_cnodeid);
		EXPECT_EQ(self->cnodes.id[info.rcb_cnodeid], self->mem.id[i]);
		EXPECT_EQ(0U, used[info.rcb_cnodeid]++)
			TH_LOG("cnodeid %u reported twice", info.rcb_cnodeid);
	}
}

/* Repeated calls, on one fd and on several, return identical bytes. */
TEST_F(info, repeatable)
{
	int i;

	for (i = 0; i < self->mem.n; i++) {
		struct rcb_info a, b, c;
		int fd1, fd2;

		fd1 = rc_open_node(self->mem.id[i], O_RDONLY);
		ASSERT_LE(0, fd1);
		fd2 = rc_open_node(self->mem.id[i], O_RDONLY);
		ASSERT_LE(0, fd2);
		memset(&a, 0x11, sizeof(a));
		memset(&b, 0x22, sizeof(b));
		memset(&c, 0x33, sizeof(c));
		ASSERT_EQ(0, ioctl(fd1, RCB_INFO_GET, &a));
		ASSERT_EQ(0, ioctl(fd1, RCB_INFO_GET, &b));
		ASSERT_EQ(0, ioctl(fd2, RCB_INFO_GET, &c));
		EXPECT_EQ(0, memcmp(&a, &b, sizeof(a))) TH_LOG("node%d", self->mem.id[i]);
		EXPECT_EQ(0, memcmp(&a, &c, sizeof(a))) TH_LOG("node%d", self->mem.id[i]);
		close(fd2);
		close(fd1);
	}
}

/* Only the struct is written: bytes around it are untouched. */
TEST_F(info, writes_only_the_struct)
{
	unsigned char buf[sizeof(struct rcb_info) + 64];
	size_t k;
	int fd;

	fd = rc_open_node(self->mem.id[0], O_RDONLY);
	ASSERT_LE(0, fd);
	memset(buf, 0x5a, sizeof(buf));
	ASSERT_EQ(0, ioctl(fd, RCB_INFO_GET, buf + 32));
	close(fd);
	for (k = 0; k < 32; k++) {
		ASSERT_EQ(0x5a, buf[k]) TH_LOG("byte %zu before the struct", k);
	}
	for (k = 32 + sizeof(struct rcb_info); k < sizeof(buf); k++) {
		ASSERT_EQ(0x5a, buf[k]) TH_LOG("byte %zu after the struct", k);
	}
}

/*
 * At a granularity of one base page the slots hold exactly the node's RAM
 * pages: sum of slot sizes = rcb_base_pages * rcb_base_page_size.
 */
TEST_F(info, slots_cover_base_pages)
{
	static struct rcb_slot s[RC_MAX_SLOTS];
	int i;

	if (self->params.granularity != rc_page_size())
		SKIP(return, "granularity %lu is not the page size",
		     self->params.granularity);
	for (i = 0; i < self->mem.n; i++) {
		unsigned long long sum = 0;
		struct rcb_info info;
		int fd, n, k;

		fd = rc_open_node(self->mem.id[i], O_RDONLY);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, ioctl(fd, RCB_INFO_GET, &info));
		n = rc_query_slots(fd, s, RC_MAX_SLOTS);
		close(fd);
		ASSERT_EQ((int)info.rcb_num_slots, n);
		for (k = 0; k < n; k++)
			sum += s[k].size;
		EXPECT_EQ((unsigned long long)info.rcb_base_pages *
			  info.rcb_base_page_size, sum)
			TH_LOG("node%d", self->mem.id[i]);
	}
}

TEST_HARNESS_MAIN
