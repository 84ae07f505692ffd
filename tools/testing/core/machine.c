// SPDX-License-Identifier: GPL-2.0
/*
 * machine.c: kmod/main.c's load and unload, for the user-space core.
 */
#include <uapi/linux/refcnt.h>

#include "machine.h"

struct refcnt_topology refcnt_topo;
struct refcnt_config refcnt_cfg;
struct refcnt_node *core_nodes[MAX_NUMNODES];

static bool core_has_memory(const struct core_spec *spec, int nid)
{
	unsigned int i;

	for (i = 0; i < spec->nr_ranges; i++)
		if (spec->ram[i].nid == nid)
			return true;
	return false;
}

/* The module's parameter checks (refcnt_config_init()). */
static int core_config(const struct core_spec *spec)
{
	u32 max = refcnt_topo.hw_max, gran = spec->granularity ?: 4096;
	u32 qlen = spec->event_queue_len ?: 1024;

	if (refcnt_topo.counters_per_set > RCB_MAX_COUNTERS ||
	    gran & (gran - 1) || gran < PAGE_SIZE ||
	    spec->abs_threshold > max || spec->diff_threshold > max ||
	    qlen & (qlen - 1) || qlen < 16)
		return -EINVAL;
	refcnt_cfg.granularity = gran;
	refcnt_cfg.granularity_shift = ilog2(gran);
	refcnt_cfg.event_queue_len = qlen;
	refcnt_cfg.prealloc = spec->prealloc;
	refcnt_cfg.abs_threshold = spec->abs_threshold ?: (max + 1) - (max + 1) / 8;
	refcnt_cfg.diff_threshold = spec->diff_threshold;
	return 0;
}

/**
 * core_boot() - build the counters of a fake machine
 * @spec:	the machine
 *
 * Return: 0 or a negative errno (nothing is left built).
 */
int core_boot(const struct core_spec *spec)
{
	unsigned int i;
	int nid, err;

	memset(&shim_machine, 0, sizeof(shim_machine));
	for (i = 0; i < spec->nr_online && i < MAX_NUMNODES; i++)
		shim_machine.online[i] = true;
	shim_machine.nr_ranges = spec->nr_ranges;
	for (i = 0; i < spec->nr_ranges; i++) {
		shim_machine.ram[i].start = spec->ram[i].start;
		shim_machine.ram[i].end = spec->ram[i].end;
		shim_machine.ram[i].nid = spec->ram[i].nid;
	}
	refcnt_topology_init(&refcnt_topo, spec->premium);
	err = core_config(spec);
	if (err)
		return err;
	for (nid = 0; nid < (int)spec->nr_online; nid++) {
		struct refcnt_node *node;

		if (!core_has_memory(spec, nid))
			continue;
		node = refcnt_node_create(nid, 0, NULL, NULL);
		if (IS_ERR(node)) {
			err = PTR_ERR(node);
			goto fail;
		}
		core_nodes[nid] = node;
	}
	err = refcnt_slots_index(core_nodes, MAX_NUMNODES);
	if (!err)
		return 0;
fail:
	core_halt();
	return err;
}

/**
 * core_halt() - free everything core_boot() built
 */
void core_halt(void)
{
	int nid;

	refcnt_slots_index_free();
	for (nid = 0; nid < MAX_NUMNODES; nid++) {
		if (core_nodes[nid])
			refcnt_node_put(core_nodes[nid]);
		core_nodes[nid] = NULL;
	}
}

/**
 * core_totals() - what a node holds, and its statistics
 * @node:	the node
 * @t:		filled in
 */
void core_totals(struct refcnt_node *node, struct core_totals *t)
{
	u64 n = node->nr_sets * refcnt_topo.counters_per_set, i;

	memset(t, 0, sizeof(*t));
	mutex_lock(&node->fold_lock);
	for (i = 0; i < n; i++) {
		t->hw += refcnt_sparse_read(&node->hw, i);
		t->ext += refcnt_sparse_read(&node->table.counters, i);
		t->lost += refcnt_sparse_read(&node->lost, i);
	}
	refcnt_node_stats(node, &t->st);
	mutex_unlock(&node->fold_lock);
}

/**
 * core_events_read() - take every queued record, up to @max
 * @node:	the node
 * @out:	room for @max records
 * @max:	records wanted
 *
 * Return: records taken (a LOST record first when some were dropped).
 */
unsigned int core_events_read(struct refcnt_node *node, struct rcb_event *out,
			      unsigned int max)
{
	unsigned int n = 0, k;

	while (n < max &&
	       (k = refcnt_events_take(&node->events, out + n, max - n)))
		n += k;
	return n;
}

