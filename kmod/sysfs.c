// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: statistics of a node, /sys/class/misc/refcnt-nodeN/stats/.
 */
#include <linux/device.h>
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

/* Every field of struct refcnt_stats, by its name. */
static struct refcnt_stat_attr refcnt_stat_attrs[] = {
	{ __ATTR(references, 0444, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(references) },
	{ __ATTR(pegged, 0444, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(pegged) },
	{ __ATTR(saturated, 0444, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(saturated) },
	{ __ATTR(folds, 0444, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(folds) },
	{ __ATTR(migrations, 0444, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(migrations) },
	{ __ATTR(events_dropped, 0444, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(events_dropped) },
	{ __ATTR(refs_dropped, 0444, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(refs_dropped) },
	{ __ATTR(discarded, 0444, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(discarded) },
	{ __ATTR(overflowed, 0444, refcnt_stat_show, NULL),
	  REFCNT_STAT_OFF(overflowed) },
	{ __ATTR(offlined, 0444, refcnt_stat_show, NULL),
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
static DEVICE_ATTR_RO(table_bytes);

/* The statistics, then table_bytes; filled in by refcnt_sysfs_init(). */
static struct attribute *refcnt_stats_attrs[REFCNT_NR_STATS + 2];

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
	refcnt_stats_attrs[i] = &dev_attr_table_bytes.attr;
}
