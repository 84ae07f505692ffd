// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: RCB_FEEDS_GET, the registered feeds as user space sees them:
 * what their samples carry, their period, whether the machine can run
 * them and whether they run.
 */
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <uapi/linux/refcnt.h>

#include "refcnt.h"
#include "feed.h"
#include "feed_registry.h"

/* Most feeds RCB_FEEDS_GET describes in one call. */
#define REFCNT_FEEDS_MAX	64

/* One feed as RCB_FEEDS_GET describes it. Under refcnt_feed_lock. */
static void refcnt_feed_info(struct refcnt_feed *feed,
			     struct rcb_feed_info *fi)
{
	bool on = false;

	memset(fi, 0, sizeof(*fi));
	strscpy(fi->name, feed->name, sizeof(fi->name));
	/* RCB_FEED_SESSION: a feed of perf events that sessions run. */
	fi->caps = feed->caps & (RCB_FEED_DATA_ADDR | RCB_FEED_INSTR_ADDR |
				 RCB_FEED_LOADS | RCB_FEED_STORES |
				 RCB_FEED_SESSION);
	if (feed->device) {
		fi->period = feed->device->period(feed, &on);
		fi->caps |= RCB_FEED_SESSION | RCB_FEED_DEVICE;
		if (fi->period)
			fi->state |= RCB_FEED_PRESENT;
	} else if (feed->ops && !feed->emulates_pmu) {
		fi->period = feed->period;
		on = feed->period;
		if (refcnt_feed_present(feed))
			fi->state |= RCB_FEED_PRESENT;
	} else {
		/* Delivers by itself (an emulated PMU's drain too). */
		fi->state |= RCB_FEED_PRESENT;
	}
	if (on)
		fi->state |= RCB_FEED_ON;
}

/**
 * refcnt_feeds_get() - RCB_FEEDS_GET: the feeds and what they carry
 * @argp:	user pointer to struct rcb_feeds_query
 *
 * Return: 0 or a negative errno.
 */
long refcnt_feeds_get(void __user *argp)
{
	struct rcb_feeds_query q;
	struct rcb_feed_info *fi;
	struct refcnt_feed *feed;
	u32 n = 0, cap;
	int err = 0;

	if (copy_from_user(&q, argp, sizeof(q)))
		return -EFAULT;
	if (q.flags || q.reserved)
		return -EINVAL;
	/* Filled under the lock, copied out after it: feeds are few. */
	cap = min_t(u32, q.nr_feeds, REFCNT_FEEDS_MAX);
	fi = kcalloc(max(cap, 1U), sizeof(*fi), GFP_KERNEL);
	if (!fi)
		return -ENOMEM;
	mutex_lock(&refcnt_feed_lock);
	list_for_each_entry(feed, &refcnt_feeds, list) {
		if (n < cap)
			refcnt_feed_info(feed, &fi[n]);
		n++;
	}
	mutex_unlock(&refcnt_feed_lock);
	if (copy_to_user(u64_to_user_ptr(q.feeds), fi,
			 min(n, cap) * sizeof(*fi)))
		err = -EFAULT;
	kfree(fi);
	if (err)
		return err;
	q.nr_feeds = n;
	return copy_to_user(argp, &q, sizeof(q)) ? -EFAULT : 0;
}
