// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the feeds' files in /sys/kernel/refcnt: each feed's statistics
 * (<feed>_<statistic>, summed over the CPUs), the CPU lists of a feed of
 * perf events, and the feed's own files beside them.
 */
#include <linux/kobject.h>
#include <linux/math64.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/sysfs.h>

#include "refcnt.h"
#include "feed.h"
#include "feed_registry.h"

/* /sys/kernel/refcnt, while the registry is up. */
static struct kobject *refcnt_kobj;

/*
 * The statistics files, in the order of struct refcnt_feed_stats (the
 * precise samples' five last), then the CPU lists of perf events and
 * their running share.
 */
#define REFCNT_FEED_PRECISE	3
#define REFCNT_FEED_CPUS	8
#define REFCNT_FEED_RUNNING	10
static const char *const refcnt_feed_file_names[] = {
	"samples", "delivered", "unresolved", "kernel", "noaddr", "cached",
	"inexact", "capped", "cpus", "skipped", "running",
};

/* A feed's statistics summed over the CPUs: exact once the feed is quiet. */
static ssize_t refcnt_feed_stat_show(struct kobject *kobj,
				     struct kobj_attribute *kattr, char *buf)
{
	const struct refcnt_feed_attr *a =
		container_of(kattr, struct refcnt_feed_attr, kattr);
	const struct refcnt_feed *feed = a->feed;
	unsigned int stat = a - feed->attrs;
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu) {
		const u64 *s = (const u64 *)per_cpu_ptr(feed->stats, cpu);

		sum += READ_ONCE(s[stat]);
	}
	return sysfs_emit(buf, "%llu\n", sum);
}

/*
 * The CPUs a feed samples now, or leaves out (no such events there), as
 * a CPU list ("0-1,3"), empty when off.
 */
static ssize_t refcnt_feed_cpus_show(struct kobject *kobj,
				     struct kobj_attribute *kattr, char *buf)
{
	const struct refcnt_feed_attr *a =
		container_of(kattr, struct refcnt_feed_attr, kattr);
	const struct refcnt_feed *feed = a->feed;
	ssize_t len;

	refcnt_feed_hotplug_flush();
	mutex_lock(&refcnt_feed_lock);
	len = sysfs_emit(buf, "%*pbl\n",
			 cpumask_pr_args(a - feed->attrs == REFCNT_FEED_CPUS ?
					 &feed->cpus : &feed->skipped));
	mutex_unlock(&refcnt_feed_lock);
	return len;
}

/*
 * The share of the time a feed's events were enabled that they ran on
 * the PMU (less when perf multiplexes them with other users' events),
 * in percent, over their lives (the feed's start, or a CPU's coming
 * online); empty when off. perf_event_read_value() reads an event of
 * another CPU there, by IPI.
 */
static ssize_t refcnt_feed_running_show(struct kobject *kobj,
					struct kobj_attribute *kattr,
					char *buf)
{
	const struct refcnt_feed_attr *a =
		container_of(kattr, struct refcnt_feed_attr, kattr);
	const struct refcnt_feed *feed = a->feed;
	u64 enabled = 0, running = 0, e, r;
	unsigned int i;
	int cpu;

	refcnt_feed_hotplug_flush();
	mutex_lock(&refcnt_feed_lock);
	for_each_possible_cpu(cpu) {
		for (i = 0; feed->events && i < feed->nr_events; i++) {
			struct perf_event *ev =
				feed->events[cpu * feed->nr_events + i];

			if (!ev)
				continue;
			perf_event_read_value(ev, &e, &r);
			enabled += e;
			running += r;
		}
	}
	mutex_unlock(&refcnt_feed_lock);
	if (!enabled)
		return sysfs_emit(buf, "\n");
	return sysfs_emit(buf, "%llu\n", div64_u64(running * 100, enabled));
}

/*
 * <name>_samples, _delivered, _unresolved; _kernel, _noaddr, _cached,
 * _inexact and _capped for precise samples; _cpus, _skipped and _running
 * for perf events.
 */
void refcnt_feed_attrs_init(struct refcnt_feed *feed)
{
	unsigned int i, n = 0;

	BUILD_BUG_ON(sizeof(struct refcnt_feed_stats) !=
		     REFCNT_FEED_CPUS * sizeof(u64));
	BUILD_BUG_ON(ARRAY_SIZE(refcnt_feed_file_names) !=
		     ARRAY_SIZE(feed->attrs));
	for (i = 0; i < ARRAY_SIZE(feed->attrs); i++) {
		struct refcnt_feed_attr *a = &feed->attrs[i];

		if ((i >= REFCNT_FEED_PRECISE && i < REFCNT_FEED_CPUS &&
		     !feed->precise) || (i >= REFCNT_FEED_CPUS && !feed->ops))
			continue;
		snprintf(a->name, sizeof(a->name), "%s_%s", feed->name,
			 refcnt_feed_file_names[i]);
		sysfs_attr_init(&a->kattr.attr);
		a->kattr.attr.name = a->name;
		a->kattr.attr.mode = 0444;
		a->kattr.show = i == REFCNT_FEED_RUNNING ?
				refcnt_feed_running_show :
				i >= REFCNT_FEED_CPUS ? refcnt_feed_cpus_show :
				refcnt_feed_stat_show;
		a->feed = feed;
		feed->attr_ptrs[n++] = &a->kattr.attr;
	}
	feed->attr_ptrs[n] = NULL;
	feed->stats_group.attrs = feed->attr_ptrs;
}

/* The files of a registered feed, made outside refcnt_feed_lock. */
int refcnt_feed_files(struct refcnt_feed *feed)
{
	int err;

	err = sysfs_create_group(refcnt_kobj, &feed->stats_group);
	if (err || !feed->group)
		return err;
	err = sysfs_create_group(refcnt_kobj, feed->group);
	if (err)
		sysfs_remove_group(refcnt_kobj, &feed->stats_group);
	return err;
}

void refcnt_feed_files_remove(struct refcnt_feed *feed)
{
	if (feed->group)
		sysfs_remove_group(refcnt_kobj, feed->group);
	sysfs_remove_group(refcnt_kobj, &feed->stats_group);
}

/**
 * refcnt_feed_sysfs_init() - /sys/kernel/refcnt, at load
 * @group:	its files besides the feeds'
 *
 * Return: 0 or a negative errno.
 */
int refcnt_feed_sysfs_init(const struct attribute_group *group)
{
	struct kobject *kobj;
	int err;

	kobj = kobject_create_and_add("refcnt", kernel_kobj);
	if (!kobj)
		return -ENOMEM;
	err = sysfs_create_group(kobj, group);
	if (err) {
		kobject_put(kobj);
		return err;
	}
	refcnt_kobj = kobj;
	return 0;
}

/**
 * refcnt_feed_sysfs_exit() - remove /sys/kernel/refcnt, every feed gone
 */
void refcnt_feed_sysfs_exit(void)
{
	kobject_put(refcnt_kobj);
	refcnt_kobj = NULL;
}
