/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Checks shared by info_test, slots_test and lifecycle_test: they ASSERT
 * and EXPECT with the caller's _metadata, so they are compiled into the
 * test program (the harness cannot be linked in twice), not into
 * refcnt_helpers.c.
 */
#ifndef REFCNT_CHECKS_H
#define REFCNT_CHECKS_H

#include "refcnt_helpers.h"

/*
 * Slot invariants for node: ascending, disjoint, non-empty, multiples of
 * the granularity, and inside the node's memory blocks (their union
 * rounded outward to the granularity).
 */
static inline void rc_check_slots(struct __test_metadata *_metadata, int node,
				  const struct rcb_slot *s, unsigned int n,
				  uint64_t gran)
{
	static struct rc_range r[RC_MAX_RANGES];
	unsigned int i;
	int nr, j;

	nr = rc_node_block_ranges(node, r, RC_MAX_RANGES);
	ASSERT_LT(0, nr) TH_LOG("node%d: no memory blocks (%d)", node, nr);
	ASSERT_LT(0U, n) TH_LOG("node%d: no slots", node);

	for (i = 0; i < n; i++) {
		bool inside = false;

		EXPECT_LT(0ULL, s[i].size)
			TH_LOG("node%d slot %u is empty", node, i);
		EXPECT_EQ(0ULL, s[i].base % gran)
			TH_LOG("node%d slot %u base 0x%llx not a multiple of %llu",
			       node, i, (unsigned long long)s[i].base,
			       (unsigned long long)gran);
		EXPECT_EQ(0ULL, s[i].size % gran)
			TH_LOG("node%d slot %u size 0x%llx not a multiple of %llu",
			       node, i, (unsigned long long)s[i].size,
			       (unsigned long long)gran);
		EXPECT_LT(s[i].base, s[i].base + s[i].size)
			TH_LOG("node%d slot %u wraps", node, i);
		if (i) {
			EXPECT_LE(s[i - 1].base + s[i - 1].size, s[i].base)
				TH_LOG("node%d slots %u and %u not ascending/disjoint",
				       node, i - 1, i);
		}
		for (j = 0; j < nr; j++) {
			uint64_t lo = rc_round_down(r[j].start, gran);
			uint64_t hi = rc_round_up(r[j].end, gran);

			if (lo <= s[i].base && s[i].base + s[i].size <= hi)
				inside = true;
		}
		EXPECT_TRUE(inside)
			TH_LOG("node%d slot %u [0x%llx, 0x%llx) outside the node's memory blocks",
			       node, i, (unsigned long long)s[i].base,
			       (unsigned long long)(s[i].base + s[i].size));
	}
}

/*
 * Every field of the node's rcb_info against sysfs, procfs and the rules,
 * for the module parameters p. Also checks the slots. Fills *out.
 */
static inline void rc_check_info(struct __test_metadata *_metadata, int node,
				 int fd, const struct rc_params *p,
				 struct rcb_info *out)
{
	static struct rcb_slot s[RC_MAX_SLOTS + 1];
	static struct rc_nodes cnodes;
	unsigned long long pages, sum = 0;
	struct rcb_info e, got;
	unsigned int i;

	ASSERT_EQ(0, rc_cnode_list(&cnodes));
	rc_expected_info(&cnodes, node, p, &e);

	memset(&got, 0xff, sizeof(got));
	ASSERT_EQ(0, ioctl(fd, RCB_INFO_GET, &got))
		TH_LOG("node%d: RCB_INFO_GET: %s", node, strerror(errno));

	EXPECT_EQ(e.rcb_nodeid, got.rcb_nodeid) TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_num_cnodes, got.rcb_num_cnodes) TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_cnodeid, got.rcb_cnodeid) TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_sw_counters_per_set, got.rcb_sw_counters_per_set)
		TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_nodes_per_counter, got.rcb_nodes_per_counter)
		TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_sw_counter_size, got.rcb_sw_counter_size)
		TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_base_page_size, got.rcb_base_page_size)
		TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_granularity, got.rcb_granularity) TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_hw_counter_bits, got.rcb_hw_counter_bits)
		TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_hw_counter_max, got.rcb_hw_counter_max)
		TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_abs_threshold, got.rcb_abs_threshold)
		TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_diff_threshold, got.rcb_diff_threshold)
		TH_LOG("node%d", node);
	EXPECT_EQ(0U, got.rcb_flags) TH_LOG("node%d", node);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(0ULL, got.rcb_reserved[i])
			TH_LOG("node%d rcb_reserved[%u]", node, i);
	}

	ASSERT_EQ(0, rc_node_present_pages(node, &pages))
		TH_LOG("node%d: not in /proc/zoneinfo", node);
	EXPECT_EQ(pages, got.rcb_base_pages)
		TH_LOG("node%d: rcb_base_pages vs sum of zone present pages",
		       node);

	/* Slot-derived fields. */
	ASSERT_LT(0U, got.rcb_num_slots) TH_LOG("node%d", node);
	ASSERT_GE((unsigned int)RC_MAX_SLOTS, got.rcb_num_slots) TH_LOG("node%d", node);
	rc_fill_canary(s, got.rcb_num_slots + 1);
	ASSERT_EQ(0, ioctl(fd, RCB_SLOT_GET, s))
		TH_LOG("node%d: RCB_SLOT_GET: %s", node, strerror(errno));
	EXPECT_TRUE(rc_is_canary(&s[got.rcb_num_slots]))
		TH_LOG("node%d: RCB_SLOT_GET wrote past rcb_num_slots", node);
	rc_check_slots(_metadata, node, s, got.rcb_num_slots, got.rcb_granularity);
	for (i = 0; i < got.rcb_num_slots; i++)
		sum += s[i].size;
	EXPECT_EQ(s[0].base, got.rcb_base_paddr) TH_LOG("node%d", node);
	EXPECT_EQ(sum, (unsigned long long)got.rcb_sw_sets * got.rcb_granularity)
		TH_LOG("node%d: sets x granularity vs sum of slot sizes", node);
	EXPECT_EQ((unsigned long long)got.rcb_sw_sets *
		  got.rcb_sw_counters_per_set * 4, got.rcb_len)
		TH_LOG("node%d: rcb_len", node);
	EXPECT_EQ((int)got.rcb_num_slots,
		  rc_query_slots(fd, NULL, 0)) TH_LOG("node%d", node);
	if (out)
		*out = got;
}

#endif /* REFCNT_CHECKS_H */
