// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt selftests: locating a physical address's set, the mapped
 * extended counters of a set, RCB_SETS_READ through the library.
 *
 * refcnt_node_locate() follows the refcnt(5) rule (size of the earlier
 * slots + offset in the slot) / granularity at both ends of every slot and
 * gives ENOENT in the holes, below, above and in other nodes' slots;
 * refcnt_node_set_counters() points at set * counters_per_set in the map.
 * Injected references (root) then show up where the library says: ext +
 * hw + lost of the injecting cnodeid's counter grows by exactly the count,
 * and the mapped counters equal RCB_SETS_READ's extended ones.
 */
#include "lib_helpers.h"

/* The set of paddr by the refcnt(5) rule, or -1. */
static int64_t rule_set(const struct rcb_slot *s, int n, uint64_t gran,
			uint64_t paddr)
{
	uint64_t before = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (paddr >= s[i].base && paddr - s[i].base < s[i].size)
			return (int64_t)((before + paddr - s[i].base) / gran);
		before += s[i].size;
	}
	return -1;
}

static void check_locate(struct __test_metadata *_metadata,
			 struct refcnt_node *node, const struct rcb_slot *s,
			 int n, uint64_t gran, uint64_t paddr)
{
	int64_t want = rule_set(s, n, gran, paddr), got;

	errno = 0;
	got = refcnt_node_locate(node, paddr);
	EXPECT_EQ(want, got) TH_LOG("node%d paddr 0x%llx",
				    refcnt_node_nid(node), LH_U64(paddr));
	if (want < 0)
		EXPECT_EQ(ENOENT, errno);
}

TEST(locate_follows_the_slots)
{
	static struct rcb_slot s[RC_MAX_SLOTS], other[RC_MAX_SLOTS];
	static struct rc_nodes mem;
	int i, j, k, n;

	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	for (i = 0; i < mem.n; i++) {
		struct refcnt_node *node = refcnt_node_open(mem.id[i], 0);
		struct rcb_info info;
		uint64_t gran, sets = 0;

		ASSERT_NE(NULL, node) TH_LOG("node%d: %s", mem.id[i], strerror(errno));
		ASSERT_EQ(0, refcnt_node_info(node, &info));
		gran = info.rcb_granularity;
		n = refcnt_node_slots(node, s, RC_MAX_SLOTS);
		ASSERT_LT(0, n);
		for (j = 0; j < n; j++) {
			uint64_t b = s[j].base, e = s[j].base + s[j].size;

			EXPECT_EQ((int64_t)sets, refcnt_node_locate(node, b));
			check_locate(_metadata, node, s, n, gran, b);
			check_locate(_metadata, node, s, n, gran, b + gran - 1);
			check_locate(_metadata, node, s, n, gran, b + gran);
			check_locate(_metadata, node, s, n, gran, e - 1);
			check_locate(_metadata, node, s, n, gran, e);
			check_locate(_metadata, node, s, n, gran, b + s[j].size / 2);
			if (b)
				check_locate(_metadata, node, s, n, gran, b - 1);
			sets += s[j].size / gran;
			EXPECT_EQ((int64_t)sets - 1, refcnt_node_locate(node, e - 1));
		}
		EXPECT_EQ(info.rcb_sw_sets, sets);
		errno = 0;
		EXPECT_EQ(-1, refcnt_node_locate(node, UINT64_MAX));
		EXPECT_EQ(ENOENT, errno);

		/* Other nodes' memory is not this node's. */
		for (k = 0; k < mem.n; k++) {
			struct refcnt_node *o;
			int m, l;

			if (k == i)
				continue;
			o = refcnt_node_open(mem.id[k], 0);
			ASSERT_NE(NULL, o);
			m = refcnt_node_slots(o, other, RC_MAX_SLOTS);
			for (l = 0; l < m; l++) {
				errno = 0;
				EXPECT_EQ(-1, refcnt_node_locate(node, other[l].base));
				EXPECT_EQ(ENOENT, errno);
			}
			refcnt_node_close(o);
		}
		refcnt_node_close(node);
	}
	errno = 0;
	EXPECT_EQ(-1, refcnt_node_locate(NULL, 0));
	EXPECT_EQ(EINVAL, errno);
}

TEST(set_counters_point_into_the_map)
{
	static struct rc_nodes mem;
	int i;

	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	for (i = 0; i < mem.n; i++) {
		struct refcnt_node *node = refcnt_node_open(mem.id[i], 0);
		const uint32_t *map, *c;
		struct rcb_info info;
		uint64_t set;

		ASSERT_NE(NULL, node);
		ASSERT_EQ(0, refcnt_node_info(node, &info));
		map = refcnt_node_map(node, NULL);
		ASSERT_NE(NULL, map);
		for (set = 0; set < info.rcb_sw_sets;
		     set += info.rcb_sw_sets / 7 + 1) {
			c = refcnt_node_set_counters(node, set);
			EXPECT_EQ(map + set * info.rcb_sw_counters_per_set, c);
		}
		c = refcnt_node_set_counters(node, info.rcb_sw_sets - 1);
		EXPECT_EQ(map + (info.rcb_sw_sets - 1) * info.rcb_sw_counters_per_set, c);
		errno = 0;
		EXPECT_EQ(NULL, refcnt_node_set_counters(node, info.rcb_sw_sets));
		EXPECT_EQ(EINVAL, errno);
		refcnt_node_close(node);
	}
}

/* Without a map yet, refcnt_node_set_counters() maps the table. */
TEST(set_counters_map_on_demand)
{
	static struct rc_nodes mem;
	struct refcnt_node *node;
	const uint32_t *c;

	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	node = refcnt_node_open(mem.id[0], 0);
	ASSERT_NE(NULL, node);
	c = refcnt_node_set_counters(node, 0);
	ASSERT_NE(NULL, c);
	EXPECT_EQ(refcnt_node_map(node, NULL), c);
	refcnt_node_close(node);
}

/* Sum of ext + hw + lost of a counter of a set. */
static uint64_t delivered(struct __test_metadata *_metadata,
			  struct refcnt_node *node, uint64_t set,
			  unsigned int counter, uint32_t *ext_out)
{
	uint32_t hw[RCB_MAX_COUNTERS], ext[RCB_MAX_COUNTERS], lost[RCB_MAX_COUNTERS];

	EXPECT_EQ(0, refcnt_node_read_sets(node, set, 1, hw, ext, lost))
		TH_LOG("RCB_SETS_READ: %s", strerror(errno));
	if (ext_out)
		memcpy(ext_out, ext, sizeof(ext));
	return (uint64_t)hw[counter] + ext[counter] + lost[counter];
}

TEST(injected_references_land_in_the_located_set)
{
	static struct rcb_slot s[RC_MAX_SLOTS];
	static struct rc_nodes mem;
	int i, n;

	if (geteuid())
		SKIP(return, "RCB_INJECT needs root");
	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	for (i = 0; i < mem.n; i++) {
		struct refcnt_node *node = refcnt_node_open(mem.id[i], 0);
		uint32_t ext[RCB_MAX_COUNTERS];
		const uint32_t *mapped;
		struct rcb_info info;
		uint64_t paddr, before, after;
		unsigned int src, counter, c;
		uint32_t count;
		int64_t set;

		ASSERT_NE(NULL, node);
		ASSERT_EQ(0, refcnt_node_info(node, &info));
		n = refcnt_node_slots(node, s, RC_MAX_SLOTS);
		ASSERT_LT(0, n);
		/* The last hardware page of the last slot; no feed runs. */
		paddr = s[n - 1].base + s[n - 1].size - info.rcb_granularity + 8;
		set = refcnt_node_locate(node, paddr);
		ASSERT_EQ((int64_t)info.rcb_sw_sets - 1, set);
		src = info.rcb_num_cnodes - 1;
		counter = lh_counter(&info, src);
		count = info.rcb_abs_threshold;	/* enough to fold */

		before = delivered(_metadata, node, set, counter, NULL);
		ASSERT_EQ(0, lh_inject(refcnt_node_fd(node), paddr, src, count));
		after = delivered(_metadata, node, set, counter, ext);
		EXPECT_EQ(before + count, after) TH_LOG("node%d set %lld counter %u",
							mem.id[i], (long long)set,
							counter);
		EXPECT_LE(count, ext[counter]) TH_LOG("the threshold folded the set");

		ASSERT_EQ(0, refcnt_node_sync(node));
		mapped = refcnt_node_set_counters(node, set);
		ASSERT_NE(NULL, mapped);
		for (c = 0; c < info.rcb_sw_counters_per_set; c++)
			EXPECT_EQ(ext[c], mapped[c]) TH_LOG("counter %u", c);
		refcnt_node_close(node);
	}
}

TEST(read_sets_errors)
{
	static struct rc_nodes mem;
	struct refcnt_node *node;
	struct rcb_info info;
	uint32_t hw[RCB_MAX_COUNTERS];

	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	node = refcnt_node_open(mem.id[0], 0);
	ASSERT_NE(NULL, node);
	ASSERT_EQ(0, refcnt_node_info(node, &info));
	EXPECT_EQ(0, refcnt_node_read_sets(node, info.rcb_sw_sets - 1, 1, hw,
					   NULL, NULL));
	errno = 0;
	EXPECT_EQ(-1, refcnt_node_read_sets(node, info.rcb_sw_sets, 1, hw,
					    NULL, NULL));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_node_read_sets(node, 0, 1, (uint32_t *)8, NULL, NULL));
	EXPECT_EQ(EFAULT, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_node_read_sets(NULL, 0, 1, hw, NULL, NULL));
	EXPECT_EQ(EINVAL, errno);
	refcnt_node_close(node);
}

TEST_HARNESS_MAIN
