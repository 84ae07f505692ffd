// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt selftests: the refcnt(5) workflow.
 *
 * For pages of our own memory: the range query gives the physical address
 * (root) and home cnodeid; the cnodeid's node is opened and its table
 * mapped; the set is located from the physical address through the slots;
 * known references are injected there first (RCB_INJECT_SYNC, from two
 * cnodeids, enough to fold), so that the mapped extended counters and the
 * range query's RCB_RANGE_EXTENDED counters are non-trivially equal. The
 * hardware counters of the range query equal RCB_SETS_READ's.
 *
 * Needs root. A module without RCB_RANGE_QUERY (ENOTTY) fails.
 */
#include "lib_helpers.h"

#define NPAGES	8

TEST(mapped_counters_equal_the_range_query)
{
	struct rcb_page_counters e[NPAGES * 16], hwq[NPAGES * 16];
	size_t pg = rc_page_size(), nr = 0, nr_hw = 0, i;
	uint32_t hw[RCB_MAX_COUNTERS];
	char *mem;

	LH_ASSERT_RANGE_QUERY();
	if (geteuid())
		SKIP(return, "physical addresses and RCB_INJECT need root");
	mem = lh_alloc(NPAGES * pg, true);
	ASSERT_NE(NULL, mem);

	/* Where the pages are. */
	ASSERT_EQ(0, refcnt_range_query(0, (uintptr_t)mem, NPAGES * pg,
					RCB_RANGE_EXTENDED, e, NPAGES * 16, &nr));
	ASSERT_LT(0U, nr);
	ASSERT_GE((size_t)NPAGES * 16, nr);

	/* Known references into every page's set. */
	for (i = 0; i < nr; i++) {
		struct refcnt_node *node;
		struct rcb_info info;
		unsigned int src_a, src_b;
		int nid;

		ASSERT_TRUE(!!(e[i].flags & RCB_PAGE_PRESENT)) TH_LOG("entry %zu", i);
		ASSERT_NE(0ULL, e[i].paddr);
		ASSERT_LE(0, e[i].cnodeid);
		nid = refcnt_cnode_to_nid(e[i].cnodeid);
		ASSERT_LE(0, nid);
		node = refcnt_node_open(nid, 0);
		ASSERT_NE(NULL, node) TH_LOG("node%d: %s", nid, strerror(errno));
		ASSERT_EQ(0, refcnt_node_info(node, &info));
		ASSERT_LE(0, refcnt_node_locate(node, e[i].paddr));
		src_a = i % info.rcb_num_cnodes;
		src_b = info.rcb_num_cnodes - 1 - src_a;
		ASSERT_EQ(0, lh_inject(refcnt_node_fd(node), e[i].paddr, src_a,
				       info.rcb_abs_threshold + (uint32_t)i));
		ASSERT_EQ(0, lh_inject(refcnt_node_fd(node), e[i].paddr, src_b,
				       (uint32_t)i + 1));
		refcnt_node_close(node);
	}

	/* The refcnt(5) path, page by page, against the range query. */
	ASSERT_EQ(0, refcnt_range_query(0, (uintptr_t)mem, NPAGES * pg,
					RCB_RANGE_EXTENDED, e, NPAGES * 16, &nr));
	ASSERT_EQ(0, refcnt_range_query(0, (uintptr_t)mem, NPAGES * pg, 0, hwq,
					NPAGES * 16, &nr_hw));
	ASSERT_EQ(nr, nr_hw);
	for (i = 0; i < nr; i++) {
		struct refcnt_node *node;
		const uint32_t *map, *c;
		struct rcb_info info;
		unsigned int k;
		uint64_t sum = 0;
		int64_t set;

		ASSERT_EQ(e[i].paddr, hwq[i].paddr) TH_LOG("page moved");
		node = refcnt_node_open(refcnt_cnode_to_nid(e[i].cnodeid), 0);
		ASSERT_NE(NULL, node);
		ASSERT_EQ(0, refcnt_node_info(node, &info));
		EXPECT_EQ((uint32_t)e[i].cnodeid, info.rcb_cnodeid);
		map = refcnt_node_map(node, NULL);
		ASSERT_NE(NULL, map);
		set = refcnt_node_locate(node, e[i].paddr);
		ASSERT_LE(0, set);
		c = refcnt_node_set_counters(node, set);
		ASSERT_EQ(map + set * info.rcb_sw_counters_per_set, c);
		for (k = 0; k < info.rcb_sw_counters_per_set; k++) {
			EXPECT_EQ(c[k], e[i].refcnt[k])
				TH_LOG("page %zu set %lld counter %u", i,
				       (long long)set, k);
			sum += c[k];
		}
		for (k = info.rcb_sw_counters_per_set; k < RCB_MAX_COUNTERS; k++)
			EXPECT_EQ(0U, e[i].refcnt[k]);
		EXPECT_LE(info.rcb_abs_threshold, sum) TH_LOG("the injection folded");

		ASSERT_EQ(0, refcnt_node_read_sets(node, set, 1, hw, NULL, NULL));
		for (k = 0; k < info.rcb_sw_counters_per_set; k++)
			EXPECT_EQ(hw[k], hwq[i].refcnt[k]) TH_LOG("page %zu hw %u", i, k);
		refcnt_node_close(node);
	}
	munmap(mem, NPAGES * pg);
}

TEST_HARNESS_MAIN
