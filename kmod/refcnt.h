/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt: the user interface and the module's glue, beside the core.
 *
 * /dev/refcnt/nodeN (dev.c: open, read, poll; dev_mmap.c: the mapping of
 * the extended counters), its ioctls (ioctl.c, query.c, bench.c, and the
 * feeds' feed_inject.c and feed_samples.c), its statistics in sysfs
 * (sysfs.c), the feeds (feed.c) and main.c. Everything here reaches the
 * counters through the core's functions (core.h).
 */
#ifndef _REFCNT_H
#define _REFCNT_H

#include <linux/types.h>

#include "core.h"

struct device;
struct file;
struct inode;

/* query.c */
struct rcb_range_query;
int refcnt_range_query(struct rcb_range_query *q);

/* feed.c */
int refcnt_feeds_init(void);
void refcnt_feeds_exit(void);

/* bench.c */
int refcnt_bench(struct refcnt_node *node, u64 nr_refs, u64 *entry_ns,
		 u64 *atomic_ns);

/* dev_mmap.c */
int refcnt_fs_init(void);
void refcnt_fs_exit(void);
struct inode *refcnt_fs_inode(void);
int refcnt_mmap(struct file *file, struct vm_area_struct *vma);

/* dev.c, ioctl.c, sysfs.c */
struct refcnt_dev;
struct refcnt_dev *refcnt_dev_add(struct refcnt_node *node);
void refcnt_dev_remove(struct refcnt_dev *dev);
void refcnt_dev_set_node(struct refcnt_dev *dev, struct refcnt_node *node);
long refcnt_ioctl(struct file *file, unsigned int cmd, unsigned long arg);
extern const struct attribute_group *refcnt_dev_groups[];
struct refcnt_node *refcnt_dev_node_get(struct device *d);

/* memhp.c: the nodes, their devices, and memory hotplug */
int refcnt_layout_init(void);
void refcnt_layout_exit(void);

/**
 * struct refcnt_file - one open file of a node device
 * @node:		the node's layout when the file was opened; the
 *			file holds a reference to it
 * @dev:		the device, whose address space the file uses
 * @reported_slots:	rcb_num_slots as last told to this file by
 *			RCB_INFO_GET, or -1: RCB_SLOT_GET never writes more
 */
struct refcnt_file {
	struct refcnt_node *node;
	struct refcnt_dev *dev;
	int reported_slots;
};

#endif /* _REFCNT_H */
