// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt selftests: nodes, handles, rcb_info and slots, node facts.
 *
 * refcnt_nodes() lists the nodes with memory; a handle reports the same
 * rcb_info and slots as the raw ioctls, and maps rcb_len bytes; cnodeids
 * are the dense index of the online nodes and match every node's
 * rcb_cnodeid; CPUs and distances match sysfs; bad arguments fail with
 * their errno and nothing is ever printed (libnuma included).
 */
#include "lib_helpers.h"

TEST(nodes_are_the_memory_nodes)
{
	static struct rc_nodes mem;
	static int ids[RC_MAX_NODES];
	int n, i;

	ASSERT_TRUE(rc_module_loaded());
	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	n = refcnt_nodes(NULL, 0);
	ASSERT_EQ(mem.n, n);
	memset(ids, 0xff, sizeof(ids));
	ASSERT_EQ(n, refcnt_nodes(ids, RC_MAX_NODES));
	for (i = 0; i < n; i++)
		EXPECT_EQ(mem.id[i], ids[i]) TH_LOG("entry %d", i);
	EXPECT_EQ(-1, ids[n]);
	memset(ids, 0xff, sizeof(ids));
	ASSERT_EQ(n, refcnt_nodes(ids, 1));
	EXPECT_EQ(mem.id[0], ids[0]);
	EXPECT_EQ(-1, ids[1]);
	errno = 0;
	EXPECT_EQ(-1, refcnt_nodes(NULL, 1));
	EXPECT_EQ(EFAULT, errno);
}

TEST(handles_match_the_ioctls)
{
	static struct rcb_slot raw[RC_MAX_SLOTS], got[RC_MAX_SLOTS];
	static struct rc_nodes mem;
	struct rcb_info info, ri;
	int i, fd;

	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	for (i = 0; i < mem.n; i++) {
		int nid = mem.id[i], ns;
		struct refcnt_node *node;
		const uint32_t *map;
		size_t len = 0;

		node = refcnt_node_open(nid, 0);
		ASSERT_NE(NULL, node) TH_LOG("node%d: %s", nid, strerror(errno));
		fd = rc_open_node(nid, O_RDONLY);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, ioctl(fd, RCB_INFO_GET, &ri));
		ASSERT_EQ(0, refcnt_node_info(node, &info));
		EXPECT_EQ(0, memcmp(&ri, &info, sizeof(info))) TH_LOG("node%d", nid);
		EXPECT_EQ(nid, refcnt_node_nid(node));
		EXPECT_EQ((int)ri.rcb_cnodeid, refcnt_node_cnodeid(node));
		EXPECT_LE(0, refcnt_node_fd(node));
		EXPECT_NE(fd, refcnt_node_fd(node));

		ns = rc_query_slots(fd, raw, RC_MAX_SLOTS);
		ASSERT_LT(0, ns);
		ASSERT_EQ(ns, refcnt_node_slots(node, NULL, 0));
		memset(got, 0, sizeof(got));
		ASSERT_EQ(ns, refcnt_node_slots(node, got, RC_MAX_SLOTS));
		EXPECT_EQ(0, memcmp(raw, got, ns * sizeof(*raw))) TH_LOG("node%d", nid);
		EXPECT_EQ(ns, (int)ri.rcb_num_slots);
		if (ns > 1) {
			memset(got, 0, sizeof(got));
			EXPECT_EQ(ns, refcnt_node_slots(node, got, 1));
			EXPECT_EQ(0ULL, got[1].size);
		}

		map = refcnt_node_map(node, &len);
		ASSERT_NE(NULL, map) TH_LOG("node%d: %s", nid, strerror(errno));
		EXPECT_EQ(ri.rcb_len, len);
		EXPECT_EQ(map, refcnt_node_map(node, NULL));
		/* The first and the last counter can be read. */
		(void)*(volatile const uint32_t *)map;
		(void)*(volatile const uint32_t *)(map + len / 4 - 1);
		EXPECT_EQ(0, refcnt_node_sync(node));
		close(fd);
		refcnt_node_close(node);
	}
	refcnt_node_close(NULL);
}

TEST(open_errors)
{
	static struct rc_nodes online, mem;
	int i, nid = -1;

	ASSERT_EQ(0, rc_node_list("online", &online));
	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	errno = 0;
	EXPECT_EQ(NULL, refcnt_node_open(-1, 0));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(NULL, refcnt_node_open(mem.id[0], 1));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(NULL, refcnt_node_open(online.id[online.n - 1] + 1, 0));
	EXPECT_EQ(ENOENT, errno);
	/* An online node without memory has no device. */
	for (i = 0; i < online.n; i++)
		if (!rc_list_has(&mem, online.id[i]))
			nid = online.id[i];
	if (nid >= 0) {
		errno = 0;
		EXPECT_EQ(NULL, refcnt_node_open(nid, 0));
		EXPECT_EQ(ENOENT, errno);
	}
	errno = 0;
	EXPECT_EQ(-1, refcnt_node_info(NULL, NULL));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_node_fd(NULL));
	EXPECT_EQ(EINVAL, errno);
}

/*
 * cnodeids are the module's numbering (/sys/kernel/refcnt/cnodes), the
 * nodes online at its load; a node online since has none (hotplug_test
 * makes one).
 */
TEST(cnodeids)
{
	static struct rc_nodes cnodes, online, mem;
	int i;

	ASSERT_EQ(0, rc_cnode_list(&cnodes));
	ASSERT_EQ(0, rc_node_list("online", &online));
	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	ASSERT_EQ(cnodes.n, refcnt_num_cnodes());
	for (i = 0; i < cnodes.n; i++) {
		EXPECT_TRUE(rc_list_has(&online, cnodes.id[i]));
		EXPECT_EQ(cnodes.id[i], refcnt_cnode_to_nid(i));
		EXPECT_EQ(i, refcnt_nid_to_cnode(cnodes.id[i]));
	}
	for (i = 0; i < online.n; i++) {
		if (rc_list_has(&cnodes, online.id[i]))
			continue;
		errno = 0;
		EXPECT_EQ(-1, refcnt_nid_to_cnode(online.id[i]));
		EXPECT_EQ(ENOENT, errno);
	}
	for (i = 0; i < mem.n; i++) {
		struct refcnt_node *node = refcnt_node_open(mem.id[i], 0);
		struct rcb_info info;

		ASSERT_NE(NULL, node);
		ASSERT_EQ(0, refcnt_node_info(node, &info));
		EXPECT_EQ((int)info.rcb_num_cnodes, refcnt_num_cnodes());
		if (info.rcb_cnodeid != RCB_NO_CNODE) {
			EXPECT_EQ((int)info.rcb_cnodeid,
				  refcnt_nid_to_cnode(mem.id[i]));
			EXPECT_EQ(mem.id[i],
				  refcnt_cnode_to_nid(info.rcb_cnodeid));
		}
		refcnt_node_close(node);
	}
	errno = 0;
	EXPECT_EQ(-1, refcnt_cnode_to_nid(cnodes.n));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_cnode_to_nid(-1));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_nid_to_cnode(online.id[online.n - 1] + 1));
	EXPECT_EQ(ENOENT, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_nid_to_cnode(-3));
	EXPECT_EQ(EINVAL, errno);
}

TEST(cpus_match_sysfs)
{
	static struct rc_nodes online, want;
	static int got[RC_MAX_NODES];
	char path[128], buf[16384];
	int i, j, n;

	ASSERT_EQ(0, rc_node_list("online", &online));
	for (i = 0; i < online.n; i++) {
		int nid = online.id[i];

		snprintf(path, sizeof(path), RC_SYSNODE "/node%d/cpulist", nid);
		ASSERT_LE(0, rc_read_file(path, buf, sizeof(buf)));
		ASSERT_EQ(0, rc_parse_list(buf, &want));
		n = refcnt_nid_cpus(nid, got, RC_MAX_NODES);
		ASSERT_EQ(want.n, n) TH_LOG("node%d: %s", nid, strerror(errno));
		for (j = 0; j < n; j++)
			EXPECT_EQ(want.id[j], got[j]) TH_LOG("node%d cpu %d", nid, j);
		EXPECT_EQ(n, refcnt_nid_cpus(nid, NULL, 0));
	}
	errno = 0;
	EXPECT_EQ(-1, refcnt_nid_cpus(online.id[online.n - 1] + 1, got, 1));
	EXPECT_EQ(ENOENT, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_nid_cpus(online.id[0], NULL, 1));
	EXPECT_EQ(EFAULT, errno);
}

TEST(distances_match_sysfs)
{
	static struct rc_nodes online;
	char path[128], buf[16384], *s;
	int i, j;

	ASSERT_EQ(0, rc_node_list("online", &online));
	for (i = 0; i < online.n; i++) {
		snprintf(path, sizeof(path), RC_SYSNODE "/node%d/distance",
			 online.id[i]);
		ASSERT_LE(0, rc_read_file(path, buf, sizeof(buf)));
		s = buf;
		for (j = 0; j < online.n; j++) {
			long d = strtol(s, &s, 10);

			EXPECT_EQ(d, refcnt_nid_distance(online.id[i], online.id[j]))
				TH_LOG("node%d -> node%d", online.id[i], online.id[j]);
		}
	}
	errno = 0;
	EXPECT_EQ(-1, refcnt_nid_distance(online.id[0], online.id[online.n - 1] + 1));
	EXPECT_EQ(ENOENT, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_nid_distance(-1, online.id[0]));
	EXPECT_EQ(EINVAL, errno);
}

/* Error paths of every kind, with stderr captured: nothing may appear. */
TEST(nothing_printed)
{
	static struct rc_nodes online;
	struct refcnt_data_range dr;
	struct rcb_page_counters e;
	struct lh_stderr cap;
	int cpus[4], last, big;
	size_t nr;
	long n;

	ASSERT_EQ(0, rc_node_list("online", &online));
	last = online.id[online.n - 1];
	big = last + 1000;
	ASSERT_EQ(0, lh_stderr_begin(&cap));
	refcnt_nid_cpus(last + 1, cpus, 4);
	refcnt_nid_cpus(big, cpus, 4);
	refcnt_nid_cpus(-1, cpus, 4);
	refcnt_nid_distance(last, big);
	refcnt_nid_distance(big, last);
	refcnt_nid_distance(last + 1, 0);
	refcnt_nid_to_cnode(big);
	refcnt_cnode_to_nid(big);
	refcnt_node_open(big, 0);
	refcnt_node_open(-1, 0);
	refcnt_range_query(0, 0, 0, 0, &e, 1, &nr);
	refcnt_range_query(0, UINT64_MAX, 2, 0, &e, 1, &nr);
	refcnt_range_query(-5, 4096, 1, 0, &e, 1, &nr);
	refcnt_data_range(0, 10, 5, 0, &dr);
	refcnt_data_range(0, 4096, 8192, 0xff, &dr);
	refcnt_range_entries(0, 0, &nr);
	n = lh_stderr_end(&cap);
	EXPECT_EQ(0, n) TH_LOG("%ld bytes on stderr", n);
}

TEST_HARNESS_MAIN
