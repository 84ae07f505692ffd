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

/* One attribute per statistic, from the one list of them. */
#define REFCNT_STAT_ATTR(name)						\
static struct refcnt_stat_attr refcnt_stat_##name = {			\
	__ATTR(name, 0444, refcnt_stat_show, NULL),			\
	offsetof(struct refcnt_stats, name),				\
};
REFCNT_STATS(REFCNT_STAT_ATTR)
#undef REFCNT_STAT_ATTR

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

static struct attribute *refcnt_stats_attrs[] = {
#define REFCNT_STAT_PTR(name)	&refcnt_stat_##name.dattr.attr,
	REFCNT_STATS(REFCNT_STAT_PTR)
#undef REFCNT_STAT_PTR
	&dev_attr_table_bytes.attr,
	NULL,
};

static const struct attribute_group refcnt_stats_group = {
	.name = "stats",
	.attrs = refcnt_stats_attrs,
};

const struct attribute_group *refcnt_dev_groups[] = {
	&refcnt_stats_group,
	NULL,
};
