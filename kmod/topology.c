// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: compact node ids and the shape of a counter set.
 */
#include <linux/log2.h>
#include <linux/nodemask.h>
#include <uapi/linux/refcnt.h>

#include "core.h"

/* refcnt(5): more than 16 nodes always have 19-bit counters. */
#define REFCNT_STANDARD_MAX_NODES	16
#define REFCNT_STANDARD_BITS		11
#define REFCNT_PREMIUM_BITS		19

/**
 * refcnt_topology_init() - number the online nodes and size counter sets
 * @topo:	filled in
 * @premium:	emulate premium directory SIMMs (19-bit counters)
 */
void refcnt_topology_init(struct refcnt_topology *topo, bool premium)
{
	unsigned int cnode = 0;
	int nid;

	for (nid = 0; nid < MAX_NUMNODES; nid++)
		topo->nid_to_cnode[nid] = -1;
	for_each_online_node(nid) {
		topo->nid_to_cnode[nid] = cnode;
		topo->cnode_to_nid[cnode++] = nid;
	}
	topo->nr_cnodes = cnode;

	if (cnode <= RCB_MAX_COUNTERS) {
		topo->nodes_per_counter = 1;
		topo->counter_shift = 0;
		topo->counters_per_set = cnode;
	} else {
		topo->nodes_per_counter = RCB_NODES_PER_GROUP;
		topo->counter_shift = ilog2(RCB_NODES_PER_GROUP);
		topo->counters_per_set = DIV_ROUND_UP(cnode, RCB_NODES_PER_GROUP);
	}

	if (cnode > REFCNT_STANDARD_MAX_NODES || premium)
		topo->hw_bits = REFCNT_PREMIUM_BITS;
	else
		topo->hw_bits = REFCNT_STANDARD_BITS;
	topo->hw_max = (1U << topo->hw_bits) - 1;
}
