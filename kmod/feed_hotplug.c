// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the feeds' perf events follow CPU hotplug. perf detaches the
 * events of a CPU going offline; a resync (a work item, since the hotplug
 * callbacks run with the CPU hotplug lock held for write, which making
 * and releasing software events takes) releases them, and gives a CPU
 * that came online the events of every feed that runs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/workqueue.h>

#include "refcnt.h"
#include "feed.h"
#include "feed_registry.h"

/* The CPU hotplug state our callbacks hold (dynamic: > 0). */
static int refcnt_feed_cpuhp;
/* CPUs that went offline since the last resync: their events are dead. */
static cpumask_t refcnt_feed_gone;
/*
 * CPUs between their offline callback and the next online one: still
 * online for a while, but perf is about to detach their events, so the
 * resync must not give them new ones (they would be dead once the CPU
 * is back, and it would look covered).
 */
static cpumask_t refcnt_feed_dying;

/*
 * After CPUs came online or went offline: release the events of those
 * that went offline (perf detached them) and give the online ones that
 * have none theirs. A CPU the feed cannot sample (no memory, no PMU on
 * it) is left out, as the feed's <name>_cpus file shows, and dmesg says
 * why.
 */
static void refcnt_feed_resync(struct work_struct *work)
{
	struct refcnt_feed *feed;
	unsigned int cpu;
	int err;

	mutex_lock(&refcnt_feed_lock);
	for_each_possible_cpu(cpu) {
		bool gone = cpumask_test_and_clear_cpu(cpu, &refcnt_feed_gone);

		list_for_each_entry(feed, &refcnt_feeds, list)
			if (feed->events && (gone || !cpu_online(cpu)))
				refcnt_feed_cpu_stop(feed, cpu);
	}
	list_for_each_entry(feed, &refcnt_feeds, list) {
		if (!feed->events || !feed->period)
			continue;
		err = refcnt_feed_cover(feed, feed->period);
		if (err)
			pr_warn("%s feed: cannot sample every online CPU (%d)\n",
				feed->name, err);
	}
	mutex_unlock(&refcnt_feed_lock);
}

static DECLARE_WORK(refcnt_feed_resync_work, refcnt_feed_resync);

/*
 * The hotplug callbacks run with the CPU hotplug lock held for write, so
 * they only queue the resync, which runs once the CPU is on- or offline.
 * Between the two an offline CPU's events are detached by perf and take
 * no samples.
 */
static int refcnt_feed_cpu_online(unsigned int cpu)
{
	refcnt_pmu_cpu_changed(cpu);
	cpumask_clear_cpu(cpu, &refcnt_feed_dying);
	queue_work(system_unbound_wq, &refcnt_feed_resync_work);
	return 0;
}

static int refcnt_feed_cpu_offline(unsigned int cpu)
{
	refcnt_pmu_cpu_changed(cpu);
	/* Marked before queued: the resync that follows releases them. */
	cpumask_set_cpu(cpu, &refcnt_feed_dying);
	cpumask_set_cpu(cpu, &refcnt_feed_gone);
	queue_work(system_unbound_wq, &refcnt_feed_resync_work);
	return 0;
}

/**
 * refcnt_feed_cpu_dying() - whether @cpu is going offline
 * @cpu:	an online CPU
 *
 * Return: true between its offline callback and its next online one: a
 * feed must not give it events now.
 */
bool refcnt_feed_cpu_dying(unsigned int cpu)
{
	return cpumask_test_cpu(cpu, &refcnt_feed_dying);
}

/**
 * refcnt_feed_hotplug_flush() - wait for the resync queued, if any
 *
 * For a reader of the CPU lists, who then sees the CPUs as they are.
 */
void refcnt_feed_hotplug_flush(void)
{
	flush_work(&refcnt_feed_resync_work);
}

/**
 * refcnt_feed_hotplug_init() - follow CPU hotplug, at load
 *
 * Context: no feed is on yet: nothing to call for the CPUs online now.
 * Return: 0 or a negative errno.
 */
int refcnt_feed_hotplug_init(void)
{
	int err;

	err = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "refcnt/feed:online",
					refcnt_feed_cpu_online,
					refcnt_feed_cpu_offline);
	if (err < 0)
		return err;
	refcnt_feed_cpuhp = err;
	return 0;
}

/**
 * refcnt_feed_hotplug_exit() - stop following CPU hotplug, at unload
 */
void refcnt_feed_hotplug_exit(void)
{
	/* Waits for a CPU going on- or offline; none follows. */
	cpuhp_remove_state_nocalls(refcnt_feed_cpuhp);
	flush_work(&refcnt_feed_resync_work);
}
