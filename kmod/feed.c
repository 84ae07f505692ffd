// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the feeds' registry.
 *
 * A feed registers its struct refcnt_feed (feed.h); the registry knows no
 * feed by name: what a feed is, it says in its descriptor. The registry
 * keeps every feed's statistics per CPU and shows them in
 * /sys/kernel/refcnt (feed_sysfs.c), runs the perf events of a feed that
 * has operations (feed_events.c) on every online CPU as CPUs come and go
 * (feed_hotplug.c), lets counting sessions hold the device feeds, and
 * describes the feeds to user space (RCB_FEEDS_GET, feed_info.c). This
 * file is the list of feeds and their registration.
 */
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/string.h>

#include "compat.h"
#include "refcnt.h"
#include "feed.h"
#include "feed_registry.h"
#include "session.h"

/* Serialises registration and turning feeds on and off. */
DEFINE_MUTEX(refcnt_feed_lock);
/* The registered feeds, under refcnt_feed_lock. */
LIST_HEAD(refcnt_feeds);
/* Feeds may register: between refcnt_feeds_init() and _exit(). */
static bool refcnt_feeds_up;

/**
 * refcnt_feed_get_emulated_pmu() - a registered feed emulating a PMU
 *
 * Context: process; for a counting session's pebs_period on a machine
 * without a precise memory-sampling PMU.
 * Return: the feed a module registered with emulates_pmu (the test rig's
 * hub device), its module held, to give back with refcnt_feed_put(); or
 * NULL.
 */
struct refcnt_feed *refcnt_feed_get_emulated_pmu(void)
{
	struct refcnt_feed *feed, *found = NULL;

	mutex_lock(&refcnt_feed_lock);
	list_for_each_entry(feed, &refcnt_feeds, list)
		if (feed->emulates_pmu && feed->registered &&
		    try_module_get(feed->owner)) {
			found = feed;
			break;
		}
	mutex_unlock(&refcnt_feed_lock);
	return found;
}

/**
 * refcnt_feed_put() - give back refcnt_feed_get_emulated_pmu()'s feed
 * @feed:	the feed
 */
void refcnt_feed_put(struct refcnt_feed *feed)
{
	module_put(feed->owner);
}

/* A registered feed of that name, under refcnt_feed_lock. */
static bool refcnt_feed_name_taken(const char *name)
{
	struct refcnt_feed *feed;

	list_for_each_entry(feed, &refcnt_feeds, list)
		if (!strcmp(feed->name, name))
			return true;
	return false;
}

/*
 * What the descriptor must fill in for what it says the feed is. Only a
 * feed of perf events of refcnt.ko's own (no module's, no emulated PMU)
 * may say RCB_FEED_SESSION: struct rcb_count names those by its periods.
 */
static bool refcnt_feed_valid(const struct refcnt_feed *feed)
{
	const struct refcnt_device_ops *dev = feed->device;
	const struct refcnt_feed_ops *ops = feed->ops;

	if (!feed->name || !*feed->name ||
	    strlen(feed->name) > REFCNT_FEED_NAME_MAX)
		return false;
	if (ops && (!ops->attr || !ops->sample || !ops->describe ||
		    !feed->nr_events ||
		    feed->nr_task_events > REFCNT_FEED_TASK_EVENTS))
		return false;
	if (dev && (ops || !feed->owner || !dev->position || !dev->hold ||
		    !dev->sync || !dev->period))
		return false;
	if (feed->emulates_pmu && (!ops || !feed->owner))
		return false;
	return !(feed->caps & RCB_FEED_SESSION) ||
	       (ops && !feed->owner && !feed->emulates_pmu);
}

/* The registry's part of a feed: its statistics, a device feed's spans. */
static int refcnt_feed_alloc(struct refcnt_feed *feed)
{
	feed->present = -1;
	feed->holds = 0;
	feed->stats = alloc_percpu(struct refcnt_feed_stats);
	if (!feed->stats)
		return -ENOMEM;
	if (feed->device && refcnt_feed_spans_alloc(feed)) {
		free_percpu(feed->stats);
		feed->stats = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void refcnt_feed_free(struct refcnt_feed *feed)
{
	refcnt_feed_spans_free(feed);
	free_percpu(feed->stats);
	feed->stats = NULL;
}

/*
 * The feed is registered from now on, and a feed of perf events given a
 * period before starts.
 */
static void refcnt_feed_go(struct refcnt_feed *feed)
{
	unsigned int period;
	int err = 0;

	mutex_lock(&refcnt_feed_lock);
	feed->registered = true;
	period = feed->period;
	feed->period = 0;
	if (feed->ops && period)
		err = refcnt_feed_start(feed, period);
	mutex_unlock(&refcnt_feed_lock);
	if (err)
		refcnt_feed_refused(feed, err);
}

/**
 * refcnt_feed_register() - add a feed: its statistics, files and events
 * @feed:	the feed, with @name, and @ops and @nr_events for a feed of
 *		perf events, filled in; the rest zero
 *
 * Its statistics and files appear in /sys/kernel/refcnt. A feed of perf
 * events given a period before (its module parameter, at load) starts;
 * if the machine cannot run it, it stays off, with one line in dmesg, and
 * registration still succeeds. Process context.
 *
 * Return: 0, or -EINVAL for a feed without a name or one too long, or
 * whose descriptor lacks what its kind needs or says RCB_FEED_SESSION
 * for a module's feed, -EEXIST when a feed of that name is registered,
 * -ENODEV when refcnt.ko is not up, -ENOMEM.
 */
int refcnt_feed_register(struct refcnt_feed *feed)
{
	int err;

	if (!refcnt_feed_valid(feed))
		return -EINVAL;
	err = refcnt_feed_alloc(feed);
	if (err)
		return err;
	refcnt_feed_attrs_init(feed);
	mutex_lock(&refcnt_feed_lock);
	if (!refcnt_feeds_up)
		err = -ENODEV;
	else if (refcnt_feed_name_taken(feed->name))
		err = -EEXIST;
	else
		list_add_tail(&feed->list, &refcnt_feeds);
	mutex_unlock(&refcnt_feed_lock);
	if (!err) {
		err = refcnt_feed_files(feed);
		if (err) {
			mutex_lock(&refcnt_feed_lock);
			list_del(&feed->list);
			mutex_unlock(&refcnt_feed_lock);
		}
	}
	if (err) {
		refcnt_feed_free(feed);
		return err;
	}
	refcnt_feed_go(feed);
	return 0;
}
EXPORT_SYMBOL_NS_GPL(refcnt_feed_register, REFCNT_NS);

/**
 * refcnt_feed_unregister() - remove a feed
 * @feed:	a registered feed
 *
 * Its files go (waiting for readers), its events are released, and
 * samples still being delivered on other CPUs are waited for, so that
 * the feed's module may go once this returns. Process context.
 */
void refcnt_feed_unregister(struct refcnt_feed *feed)
{
	refcnt_feed_files_remove(feed);
	mutex_lock(&refcnt_feed_lock);
	feed->registered = false;
	list_del(&feed->list);
	if (feed->ops)
		refcnt_feed_stop(feed);
	mutex_unlock(&refcnt_feed_lock);
	/*
	 * A software event's handler runs with preemption off, and so does
	 * a caller of the delivery functions in NMI or with interrupts off:
	 * wait for those still running on another CPU.
	 */
	synchronize_rcu();
	refcnt_feed_free(feed);
}
EXPORT_SYMBOL_NS_GPL(refcnt_feed_unregister, REFCNT_NS);

/* Let go of a device feed a session held. Under refcnt_feed_lock. */
static void refcnt_feed_unhold(struct refcnt_feed *feed)
{
	if (!--feed->holds)
		feed->device->hold(feed, false);
	module_put(feed->owner);
}

/**
 * refcnt_feeds_hold() - a session holds every device feed there is
 * @held:	filled in with the feeds held
 * @max:	room in @held
 *
 * Each feed held delivers records from now on, and its module stays.
 * Feeds without a device now are left out. Process context.
 *
 * Return: the feeds held, or a negative errno (none held then).
 */
int refcnt_feeds_hold(struct refcnt_feed **held, unsigned int max)
{
	struct refcnt_feed *feed;
	unsigned int n = 0;
	int err = 0;

	mutex_lock(&refcnt_feed_lock);
	list_for_each_entry(feed, &refcnt_feeds, list) {
		if (!feed->device || n == max || !try_module_get(feed->owner))
			continue;
		if (!feed->holds)
			err = feed->device->hold(feed, true);
		if (err) {
			module_put(feed->owner);
			if (err == -ENODEV) {
				err = 0;
				continue;
			}
			break;
		}
		feed->holds++;
		held[n++] = feed;
	}
	if (err)
		while (n)
			refcnt_feed_unhold(held[--n]);
	mutex_unlock(&refcnt_feed_lock);
	return err ?: n;
}

/**
 * refcnt_feeds_release() - a session lets go of the device feeds it held
 * @held:	the feeds, from refcnt_feeds_hold()
 * @n:		how many
 */
void refcnt_feeds_release(struct refcnt_feed **held, unsigned int n)
{
	mutex_lock(&refcnt_feed_lock);
	while (n)
		refcnt_feed_unhold(held[--n]);
	mutex_unlock(&refcnt_feed_lock);
}

/**
 * refcnt_feeds_init() - the registry: /sys/kernel/refcnt, CPU hotplug
 * @group:	files of /sys/kernel/refcnt besides the feeds'
 *
 * Context: module load. From here on feeds may register, and those of
 * perf events follow CPUs coming online and going offline.
 * Return: 0 or a negative errno.
 */
int refcnt_feeds_init(const struct attribute_group *group)
{
	int err;

	err = refcnt_feed_sysfs_init(group);
	if (err)
		return err;
	err = refcnt_feed_hotplug_init();
	if (err) {
		refcnt_feed_sysfs_exit();
		return err;
	}
	mutex_lock(&refcnt_feed_lock);
	refcnt_feeds_up = true;
	mutex_unlock(&refcnt_feed_lock);
	return 0;
}

/**
 * refcnt_feeds_exit() - take the registry down, every feed unregistered
 */
void refcnt_feeds_exit(void)
{
	refcnt_feed_hotplug_exit();
	mutex_lock(&refcnt_feed_lock);
	WARN_ON(!list_empty(&refcnt_feeds));
	refcnt_feeds_up = false;
	mutex_unlock(&refcnt_feed_lock);
	refcnt_feed_sysfs_exit();
}
