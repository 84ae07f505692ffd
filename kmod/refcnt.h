/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt: emulated Origin 2000 memory reference counters, internal interfaces.
 *
 * Layering (after mm/damon): the core (topology.c, slots.c, table.c) models
 * the counter hardware of each node and knows nothing of its users; dev.c is
 * the user interface (/dev/refcnt/nodeN); main.c ties them together.
 */
#ifndef _REFCNT_H
#define _REFCNT_H

#include <linux/mm_types.h>
#include <linux/nodemask.h>
#include <linux/rwsem.h>
#include <linux/types.h>

struct inode;
struct rcb_info;

/**
 * struct refcnt_topology - the machine as the counters see it
 * @nr_cnodes:		online nodes; cnodeids are 0..nr_cnodes-1
 * @counters_per_set:	counters in one set (one per cnodeid, or per group)
 * @nodes_per_counter:	cnodeids counted by one counter (1, or 8 above 64)
 * @hw_bits:		width of a hardware counter, 11 or 19
 * @hw_max:		maximum count of a hardware counter, 2^hw_bits - 1
 * @nid_to_cnode:	cnodeid of each online Linux node id, -1 otherwise
 * @cnode_to_nid:	Linux node id of each cnodeid
 *
 * cnodeids number the online nodes densely in node-id order (SPEC §1), so
 * sparse node ids and CPU-less or memory-less nodes all have a place. The
 * topology is fixed at load time: node hotplug is not followed.
 */
struct refcnt_topology {
	unsigned int nr_cnodes;
	unsigned int counters_per_set;
	unsigned int nodes_per_counter;
	unsigned int hw_bits;
	u32 hw_max;
	int nid_to_cnode[MAX_NUMNODES];
	int cnode_to_nid[MAX_NUMNODES];
};

/**
 * struct refcnt_slot - a contiguous physical range of a node's memory
 * @base:	physical address, a multiple of the granularity
 * @size:	bytes, a multiple of the granularity
 * @first_set:	index of the set that counts @base
 */
struct refcnt_slot {
	u64 base;
	u64 size;
	u64 first_set;
};

/**
 * struct refcnt_table - a node's extended counters, allocated sparsely
 * @len:	bytes of the counter buffer (sets * counters_per_set * 4)
 * @nr_pages:	pages that hold the buffer
 * @pages:	the buffer's pages; NULL where no counter was ever non-zero
 * @zero_page:	read-only page of zeros mapped where @pages has no page
 * @map_lock:	orders mmap faults against page installation, so that no
 *		mapping keeps @zero_page where a real page now exists
 * @mapping:	address space of every open file of the node, to zap
 *		@zero_page mappings when a page is installed
 * @nid:	node the table's memory comes from
 *
 * A never-referenced region costs nothing and reads as zeros through mmap.
 */
struct refcnt_table {
	size_t len;
	unsigned long nr_pages;
	struct page **pages;
	struct page *zero_page;
	struct rw_semaphore map_lock;
	struct address_space *mapping;
	int nid;
};

/**
 * struct refcnt_node - the counter hardware of one node with memory
 * @nid:		Linux node id
 * @cnodeid:		compact node id
 * @slots:		the node's physical ranges, ascending and disjoint
 * @nr_slots:		entries in @slots
 * @nr_sets:		counter sets, one per hardware page of the slots
 * @base_pages:		PAGE_SIZE pages of RAM in the node
 * @table:		extended counters
 * @inode:		anonymous inode whose mapping all open files share
 */
struct refcnt_node {
	int nid;
	int cnodeid;
	struct refcnt_slot *slots;
	unsigned int nr_slots;
	u64 nr_sets;
	u64 base_pages;
	struct refcnt_table table;
	struct inode *inode;
};

/**
 * struct refcnt_config - load-time settings of the emulated hardware
 * @granularity:	bytes of a hardware page
 * @granularity_shift:	log2(@granularity)
 * @abs_threshold:	count at which a hardware counter raises a fold
 * @diff_threshold:	remote-over-home excess that raises a migration
 *			event, 0 when off
 */
struct refcnt_config {
	u32 granularity;
	unsigned int granularity_shift;
	u32 abs_threshold;
	u32 diff_threshold;
};

extern struct refcnt_topology refcnt_topo;
extern struct refcnt_config refcnt_cfg;

/* topology.c */
void refcnt_topology_init(struct refcnt_topology *topo, bool premium);

/* slots.c */
int refcnt_slots_discover(struct refcnt_node *node, u32 granularity);

/* table.c */
int refcnt_table_init(struct refcnt_table *table, int nid, size_t len);
void refcnt_table_destroy(struct refcnt_table *table);
vm_fault_t refcnt_table_fault(struct refcnt_table *table, struct vm_fault *vmf);

/* node.c */
struct refcnt_node *refcnt_node_create(int nid);
void refcnt_node_destroy(struct refcnt_node *node);
void refcnt_node_info(const struct refcnt_node *node, struct rcb_info *info);
int refcnt_fs_init(void);
void refcnt_fs_exit(void);

/* dev.c */
struct refcnt_dev;
struct refcnt_dev *refcnt_dev_add(struct refcnt_node *node);
void refcnt_dev_remove(struct refcnt_dev *dev);

#endif /* _REFCNT_H */
