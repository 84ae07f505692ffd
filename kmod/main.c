// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: emulated SGI Origin 2000 per-page memory reference counters.
 *
 * Load-time parameters, and the lifetime of every node's counters and
 * device. See Documentation/admin-guide.rst.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/err.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/nodemask.h>
#include <linux/sizes.h>
#include <uapi/linux/refcnt.h>

#include "refcnt.h"
#include "feed.h"
#include "session.h"

static unsigned int granularity = SZ_4K;
module_param(granularity, uint, 0444);
MODULE_PARM_DESC(granularity,
		 "Bytes of a hardware page, counted by one set: a power of two from 256 to 2097152 (default 4096)");

static bool premium;
module_param(premium, bool, 0444);
MODULE_PARM_DESC(premium,
		 "Emulate premium directory SIMMs: 19-bit counters on 16 nodes or fewer (default: 11-bit)");

static unsigned int abs_threshold;
module_param(abs_threshold, uint, 0444);
MODULE_PARM_DESC(abs_threshold,
		 "Hardware count that raises the fold interrupt, 1 to the counter maximum (default 0: 7/8 of the maximum + 1)");

static unsigned int diff_threshold;
module_param(diff_threshold, uint, 0444);
MODULE_PARM_DESC(diff_threshold,
		 "Remote-over-home count that raises a migration event, up to the counter maximum (default 0: off)");

static unsigned int event_queue_len = 4096;
module_param(event_queue_len, uint, 0444);
MODULE_PARM_DESC(event_queue_len,
		 "Event records queued per node before new ones are dropped: a power of two from 16 to 1048576 (default 4096)");

static bool prealloc;
module_param(prealloc, bool, 0444);
MODULE_PARM_DESC(prealloc,
		 "Allocate every hardware and extended counter page at load, so no reference ever waits for memory, e.g. PEBS in NMI (default N: on first use)");

#define REFCNT_MIN_GRANULARITY	256
#define REFCNT_MAX_GRANULARITY	SZ_2M

struct refcnt_topology refcnt_topo;
struct refcnt_config refcnt_cfg;

/* Check the parameters against the hardware; one clear line if wrong. */
static int __init refcnt_config_init(void)
{
	u32 max = refcnt_topo.hw_max;

	if (refcnt_topo.counters_per_set > RCB_MAX_COUNTERS) {
		pr_err("%u online nodes: more than %u, a set would need more than %u counters\n",
		       refcnt_topo.nr_cnodes,
		       RCB_MAX_COUNTERS * RCB_NODES_PER_GROUP, RCB_MAX_COUNTERS);
		return -EINVAL;
	}

	if (!is_power_of_2(granularity) ||
	    granularity < REFCNT_MIN_GRANULARITY ||
	    granularity > REFCNT_MAX_GRANULARITY) {
		pr_err("granularity=%u is not a power of two from %u to %u\n",
		       granularity, REFCNT_MIN_GRANULARITY,
		       REFCNT_MAX_GRANULARITY);
		return -EINVAL;
	}
	if (abs_threshold > max || diff_threshold > max) {
		pr_err("abs_threshold=%u, diff_threshold=%u: the %u-bit counters count to %u\n",
		       abs_threshold, diff_threshold, refcnt_topo.hw_bits, max);
		return -EINVAL;
	}

	if (!is_power_of_2(event_queue_len) || event_queue_len < 16 ||
	    event_queue_len > SZ_1M) {
		pr_err("event_queue_len=%u is not a power of two from 16 to %u\n",
		       event_queue_len, SZ_1M);
		return -EINVAL;
	}

	refcnt_cfg.granularity = granularity;
	refcnt_cfg.event_queue_len = event_queue_len;
	refcnt_cfg.prealloc = prealloc;
	refcnt_cfg.granularity_shift = ilog2(granularity);
	refcnt_cfg.abs_threshold = abs_threshold ?: (max + 1) - (max + 1) / 8;
	refcnt_cfg.diff_threshold = diff_threshold;
	return 0;
}

/* The feeds of refcnt.ko itself; feed modules register theirs. */
static struct refcnt_feed *const refcnt_own_feeds[] = {
	&refcnt_fault_feed,
	&refcnt_pebs_feed,
};

static void refcnt_own_feeds_unregister(unsigned int n)
{
	while (n)
		refcnt_feed_unregister(refcnt_own_feeds[--n]);
}

/*
 * A feed given a period at load that cannot start (the PEBS feed on a
 * machine without the PMU) stays off with one line in dmesg, and the
 * module loads.
 */
static int __init refcnt_own_feeds_register(void)
{
	unsigned int i;
	int err;

	refcnt_pebs_feed.caps |= refcnt_pmu_caps();
	for (i = 0; i < ARRAY_SIZE(refcnt_own_feeds); i++) {
		err = refcnt_feed_register(refcnt_own_feeds[i]);
		if (err) {
			refcnt_own_feeds_unregister(i);
			return err;
		}
	}
	return 0;
}

/*
 * Nothing a user can reach comes before what it reaches: the devices,
 * through which sessions run the feeds, are the last step, and one that
 * leaves no file open if it fails (refcnt_layout_devices_init()). The
 * sysfs files of /sys/kernel/refcnt come with the registry and the feeds
 * they show.
 */
static int __init refcnt_init(void)
{
	int err;

	refcnt_topology_init(&refcnt_topo, premium);
	err = refcnt_config_init();
	if (err)
		return err;
	refcnt_sysfs_init();
	err = refcnt_fs_init();
	if (err)
		return err;
	/* The scheduling events' PMU: before any session can start. */
	err = refcnt_session_devices_init();
	if (err)
		goto fs;
	/* Every node's layout, before any feed can deliver to it. */
	err = refcnt_layout_init();
	if (err)
		goto sessions;
	err = refcnt_feeds_init(&refcnt_module_group);
	if (err)
		goto layout;
	err = refcnt_own_feeds_register();
	if (err)
		goto feeds;
	err = refcnt_layout_devices_init();
	if (err)
		goto own_feeds;
	return 0;

own_feeds:
	refcnt_own_feeds_unregister(ARRAY_SIZE(refcnt_own_feeds));
feeds:
	refcnt_feeds_exit();
layout:
	refcnt_layout_exit();
sessions:
	refcnt_session_devices_exit();
fs:
	refcnt_fs_exit();
	return err;
}

/*
 * The load's steps undone in reverse, devices first. No file is open:
 * each holds the module. Feed modules are gone already: each holds
 * refcnt.ko while loaded.
 */
static void __exit refcnt_exit(void)
{
	refcnt_layout_devices_exit();
	refcnt_own_feeds_unregister(ARRAY_SIZE(refcnt_own_feeds));
	refcnt_session_exit();
	refcnt_feeds_exit();
	refcnt_layout_exit();
	refcnt_session_devices_exit();
	refcnt_fs_exit();
}

module_init(refcnt_init);
module_exit(refcnt_exit);

MODULE_DESCRIPTION("Emulated SGI Origin 2000 per-page memory reference counters");
MODULE_AUTHOR("refcnt developers");
MODULE_LICENSE("GPL");
