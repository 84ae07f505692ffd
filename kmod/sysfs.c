// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: statistics of a node, /sys/class/misc/refcnt-nodeN/stats/, and
 * the numbering of the nodes, /sys/kernel/refcnt/cnodes.
 */
#include <linux/device.h>
#include <linux/kobject.h>
#include <linux/nodemask.h>
#include <linux/sysfs.h>

#include "refcnt.h"

/**
 * struct refcnt_stat_attr - a statistic shown in sysfs
 * @dattr:	the attribute
 * @offset:	offset of its u64 in struct refcnt_stats
 */
struct refcnt_stat_attr {
	struct device_attribute dattr;
	size_t offset;
};

static ssize_t refcnt_stat_show(struct device *d,
				struct device_attribute *attr, char *buf)
{
	const struct refcnt_stat_attr *sa =
		container_of(attr, struct refcnt_stat_attr, dattr);
	struct refcnt_node *node = refcnt_dev_node_get(d);
	struct refcnt_stats sum;

	if (!node)
		return -ENODEV;
	refcnt_node_stats(node, &sum);
	refcnt_node_put(node);
	return sysfs_emit(buf, "%llu\n", *(u64 *)((char *)&sum + sa->offset));
}

#define REFCNT_STAT_OFF(f)	offsetof(struct refcnt_stats, f)

/*
 * The statistics follow what every process references: root's, like the
 * device, whose udev rule hands them to the device's readers (chgrp).
 */
#define REFCNT_STAT_MODE	0440

/* Every field of struct refcnt_stats, by its name. */
static struct refcnt_stat_attr refcnt_stat_attrs[] = {
	{ __ATTR(references, REFCNT_STAT_MODE, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(references) },
	{ __ATTR(pegged, REFCNT_STAT_MODE, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(pegged) },
	{ __ATTR(saturated, REFCNT_STAT_MODE, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(saturated) },
	{ __ATTR(folds, REFCNT_STAT_MODE, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(folds) },
	{ __ATTR(migrations, REFCNT_STAT_MODE, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(migrations) },
	{ __ATTR(events_dropped, REFCNT_STAT_MODE, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(events_dropped) },
	{ __ATTR(refs_dropped, REFCNT_STAT_MODE, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(refs_dropped) },
	{ __ATTR(refs_deferred, REFCNT_STAT_MODE, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(refs_deferred) },
	{ __ATTR(defer_full, REFCNT_STAT_MODE, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(defer_full) },
	{ __ATTR(discarded, REFCNT_STAT_MODE, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(discarded) },
	{ __ATTR(overflowed, REFCNT_STAT_MODE, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(overflowed) },
	{ __ATTR(offlined, REFCNT_STAT_MODE, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(offlined) },
};

static ssize_t table_bytes_show(struct device *d,
				struct device_attribute *attr, char *buf)
{
	struct refcnt_node *node = refcnt_dev_node_get(d);
	size_t bytes;

	if (!node)
		return -ENODEV;
	bytes = refcnt_node_table_bytes(node);
	refcnt_node_put(node);
	return sysfs_emit(buf, "%zu\n", bytes);
}

static struct device_attribute dev_attr_table_bytes =
	__ATTR(table_bytes, REFCNT_STAT_MODE, table_bytes_show, NULL);

/* Of table_bytes, the NMI deferral rings': per CPU, not per page. */
static ssize_t defer_bytes_show(struct device *d,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%zu\n", refcnt_defer_bytes());
}

static struct device_attribute dev_attr_defer_bytes =
	__ATTR(defer_bytes, REFCNT_STAT_MODE, defer_bytes_show, NULL);

/*
 * The statistics, then table_bytes and defer_bytes; filled in by
 * refcnt_sysfs_init().
 */
static struct attribute *refcnt_stats_attrs[REFCNT_NR_STATS + 3];

static const struct attribute_group refcnt_stats_group = {
	.name = "stats",
	.attrs = refcnt_stats_attrs,
};

const struct attribute_group *refcnt_dev_groups[] = {
	&refcnt_stats_group,
	NULL,
};

/**
 * refcnt_sysfs_init() - list the statistics files, before any device
 */
void refcnt_sysfs_init(void)
{
	unsigned int i;

	BUILD_BUG_ON(ARRAY_SIZE(refcnt_stat_attrs) != REFCNT_NR_STATS);
	for (i = 0; i < REFCNT_NR_STATS; i++)
		refcnt_stats_attrs[i] = &refcnt_stat_attrs[i].dattr.attr;
	refcnt_stats_attrs[i++] = &dev_attr_table_bytes.attr;
	refcnt_stats_attrs[i] = &dev_attr_defer_bytes.attr;
}

/*
 * The nodes that have cnodeids, as a node list (0-3,5): the i-th is
 * cnodeid i. Fixed at load, while the online list follows hotplug.
 */
static ssize_t cnodes_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	nodemask_t nodes = NODE_MASK_NONE;
	unsigned int c;

	for (c = 0; c < refcnt_topo.nr_cnodes; c++)
		node_set(refcnt_topo.cnode_to_nid[c], nodes);
	return sysfs_emit(buf, "%*pbl\n", nodemask_pr_args(&nodes));
}

static struct kobj_attribute refcnt_cnodes_attr = __ATTR_RO(cnodes);

static struct attribute *refcnt_module_attrs[] = {
	&refcnt_cnodes_attr.attr,
	NULL,
};

/* The files of /sys/kernel/refcnt that are the module's, not a feed's. */
const struct attribute_group refcnt_module_group = {
	.attrs = refcnt_module_attrs,
};
