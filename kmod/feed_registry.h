/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt: what the files of the feeds' registry share, one concern each:
 * feed.c the registry itself (the list, registration, device feeds held
 * by sessions), feed_events.c the perf events of feeds that have them,
 * feed_hotplug.c their CPUs coming and going, feed_sysfs.c the files in
 * /sys/kernel/refcnt, feed_info.c RCB_FEEDS_GET. None names a feed.
 */
#ifndef _REFCNT_FEED_REGISTRY_H
#define _REFCNT_FEED_REGISTRY_H

#include <linux/list.h>
#include <linux/mutex.h>

struct attribute_group;
struct refcnt_feed;

/* feed.c: serialises registration and turning feeds on and off. */
extern struct mutex refcnt_feed_lock;
/* feed.c: the registered feeds, under refcnt_feed_lock. */
extern struct list_head refcnt_feeds;

/* feed_events.c: a feed's perf events, under refcnt_feed_lock */
int refcnt_feed_start(struct refcnt_feed *feed, unsigned int period);
void refcnt_feed_stop(struct refcnt_feed *feed);
int refcnt_feed_cover(struct refcnt_feed *feed, unsigned int period);
void refcnt_feed_cpu_stop(struct refcnt_feed *feed, unsigned int cpu);
int refcnt_feed_refused(struct refcnt_feed *feed, int err);
bool refcnt_feed_present(struct refcnt_feed *feed);

/* feed_hotplug.c */
int refcnt_feed_hotplug_init(void);
void refcnt_feed_hotplug_exit(void);
void refcnt_feed_hotplug_flush(void);
bool refcnt_feed_cpu_dying(unsigned int cpu);

/* feed_sysfs.c */
int refcnt_feed_sysfs_init(const struct attribute_group *group);
void refcnt_feed_sysfs_exit(void);
void refcnt_feed_attrs_init(struct refcnt_feed *feed);
int refcnt_feed_files(struct refcnt_feed *feed);
void refcnt_feed_files_remove(struct refcnt_feed *feed);

#endif /* _REFCNT_FEED_REGISTRY_H */
