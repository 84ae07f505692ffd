/* SPDX-License-Identifier: GPL-2.0 */
/*
 * machine.h: boot refcnt's core on a fake machine, in user space.
 *
 * What kmod/main.c does at load, minus devices and feeds: number the
 * online nodes, check the parameters, build each node with memory and
 * the slot index. Node memory is described range by range, so tests can
 * make holes, interleaved nodes and memory-less nodes.
 */
#ifndef _CORE_MACHINE_H
#define _CORE_MACHINE_H

#include "core.h"

/**
 * struct core_spec - a fake machine and the module parameters
 * @nr_online:	online nodes 0..nr_online-1 (CPU-only ones have no range)
 * @nr_ranges:	entries in @ram
 * @ram:	RAM ranges, bytes, [start, end) of node nid
 * @granularity: bytes of a hardware page (0: 4096)
 * @premium:	19-bit counters on 16 nodes or fewer
 * @abs_threshold: 0: 7/8 of the counter range, as the module
 * @diff_threshold: 0: off
 * @event_queue_len: 0: 1024
 * @prealloc:	allocate every counter page at boot
 */
struct core_spec {
	unsigned int nr_online;
	unsigned int nr_ranges;
	struct { u64 start, end; int nid; } ram[SHIM_MAX_RANGES];
	u32 granularity;
	bool premium;
	u32 abs_threshold;
	u32 diff_threshold;
	u32 event_queue_len;
	bool prealloc;
};

extern struct refcnt_node *core_nodes[MAX_NUMNODES];

int core_boot(const struct core_spec *spec);
void core_halt(void);
/* Sum of a node's counts by kind, and its statistics; under fold_lock. */
struct core_totals {
	u64 hw, ext, lost;
	struct refcnt_stats st;
};
void core_totals(struct refcnt_node *node, struct core_totals *t);
struct rcb_event;
unsigned int core_events_read(struct refcnt_node *node, struct rcb_event *out,
			      unsigned int max);

#endif /* _CORE_MACHINE_H */
