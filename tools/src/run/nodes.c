// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: the node devices and their counters: which counter counts
 * which node, which nodes have memory or CPUs, reset, query permission.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "run.h"

struct refcnt_node *qnode;
struct rcb_info info;
struct rt_counters ctr;
int *node_has_mem;
int *node_has_cpu;

int cnode_of_nid(int nid)
{
	int i;

	for (i = 0; i < ctr.nr_cnodes; i++)
		if (ctr.cnode_nid[i] == nid)
			return i;
	return -1;
}

/* The node a counter's references come from: one with CPUs in a group. */
int counter_nid(int c)
{
	int first = c * ctr.nodes_per_counter, i;

	for (i = first; i < first + ctr.nodes_per_counter && i < ctr.nr_cnodes; i++)
		if (node_has_cpu[i])
			return ctr.cnode_nid[i];
	return first < ctr.nr_cnodes ? ctr.cnode_nid[first] : -1;
}

/* The node with memory nearest to nid (nid itself if it has memory). */
int nearest_mem_nid(int nid)
{
	int best = -1, bestd = INT_MAX, i, c = cnode_of_nid(nid);

	if (c >= 0 && node_has_mem[c])
		return nid;
	for (i = 0; i < ctr.nr_cnodes; i++) {
		int d;

		if (!node_has_mem[i])
			continue;
		d = rt_distance(nid, ctr.cnode_nid[i]);
		if (d < 0)
			d = INT_MAX - 1;
		if (d < bestd) {
			bestd = d;
			best = ctr.cnode_nid[i];
		}
	}
	return best;
}

int setup_counters(void)
{
	int *nids, n, i, rc;

	n = rt_node_ids(&nids);
	if (n < 0)
		return n;
	rc = rt_node_open(nids[0], &qnode, &info);
	free(nids);
	if (rc)
		return rc;
	if (rt_counters_init(&ctr, &info))
		return -1;
	node_has_mem = xcalloc(ctr.nr_cnodes, sizeof(int));
	node_has_cpu = xcalloc(ctr.nr_cnodes, sizeof(int));
	for (i = 0; i < ctr.nr_cnodes; i++) {
		char path[64];

		snprintf(path, sizeof(path), REFCNT_DEV_DIR "/node%d",
			 ctr.cnode_nid[i]);
		node_has_mem[i] = access(path, F_OK) == 0;
		node_has_cpu[i] = refcnt_nid_cpus(ctr.cnode_nid[i], NULL, 0) > 0;
	}
	return 0;
}

/* May we read another process's counters? EPERM without CAP_SYS_PTRACE. */
int check_query_permission(void)
{
	struct rcb_page_counters e[2];
	size_t nr;

	if (!refcnt_node_range_query(qnode, 1, 0x10000, 1, 0, e, 2, &nr) ||
	    errno != EPERM)
		return 0;
	rt_err("reading another process's counters (RCB_RANGE_QUERY) needs CAP_SYS_PTRACE: run refcnt-run as root");
	return -EACCES;
}

int reset_counters(void)
{
	int *nids, n, i;

	n = rt_node_ids(&nids);
	for (i = 0; i < n; i++) {
		struct refcnt_node *nd = refcnt_node_open(nids[i], 0);

		if (!nd || ioctl(refcnt_node_fd(nd), RCB_RESET)) {
			int rc = rt_node_error(errno, "--reset: RCB_RESET on ",
					       nids[i]);

			refcnt_node_close(nd);
			free(nids);
			return rc;
		}
		refcnt_node_close(nd);
	}
	free(nids);
	return 0;
}
