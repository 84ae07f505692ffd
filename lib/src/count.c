// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librefcnt: counting one process (RCB_COUNT_START, RCB_COUNT_STATS,
 * RCB_COUNT_READ) and what the feeds can count (RCB_FEEDS_GET).
 * The session is a file descriptor of its own: the node device opened
 * for the call is closed again, and counting lasts until the session's
 * descriptor is closed.
 */
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "internal.h"

/* RCB_COUNT_START on fd; the counts are the kernel's to check. */
static int refcnt_count_ioctl(int fd, const struct refcnt_count_attr *a)
{
	struct rcb_count c;
	unsigned int i;
	int ret;

	if (a->nr_data_ranges > UINT32_MAX || a->nr_instr_ranges > UINT32_MAX ||
	    (a->nr_data_ranges && !a->data_ranges) ||
	    (a->nr_instr_ranges && !a->instr_ranges))
		return refcnt__err(EINVAL);
	for (i = 0; i < sizeof(a->reserved) / sizeof(a->reserved[0]); i++)
		if (a->reserved[i])
			return refcnt__err(EINVAL);
	memset(&c, 0, sizeof(c));
	c.pid = a->pid;
	c.flags = a->flags;
	c.fault_period = a->fault_period;
	c.pebs_period = a->pebs_period;
	c.ranges = (uintptr_t)a->data_ranges;
	c.nr_ranges = (uint32_t)a->nr_data_ranges;
	c.iranges = (uintptr_t)a->instr_ranges;
	c.nr_iranges = (uint32_t)a->nr_instr_ranges;
	ret = ioctl(fd, RCB_COUNT_START, &c);
	return ret < 0 ? -1 : ret;
}

static int refcnt_count_fd(int fd, pid_t pid, unsigned int flags,
			   unsigned int fault_period, unsigned int pebs_period,
			   const struct rcb_count_range *ranges,
			   size_t nr_ranges)
{
	struct refcnt_count_attr a = {
		.pid = pid, .flags = flags, .fault_period = fault_period,
		.pebs_period = pebs_period, .data_ranges = ranges,
		.nr_data_ranges = nr_ranges,
	};

	return refcnt_count_ioctl(fd, &a);
}

REFCNT_API int refcnt_node_count_start(struct refcnt_node *node, pid_t pid,
				       unsigned int flags,
				       unsigned int fault_period,
				       unsigned int pebs_period,
				       const struct rcb_count_range *ranges,
				       size_t nr_ranges)
{
	if (!node)
		return refcnt__err(EINVAL);
	return refcnt_count_fd(node->fd, pid, flags, fault_period,
			       pebs_period, ranges, nr_ranges);
}

REFCNT_API int refcnt_count_start(pid_t pid, unsigned int flags,
				  unsigned int fault_period,
				  unsigned int pebs_period,
				  const struct rcb_count_range *ranges,
				  size_t nr_ranges)
{
	int fd, ret, err;

	fd = refcnt__open_any();
	if (fd < 0)
		return -1;
	ret = refcnt_count_fd(fd, pid, flags, fault_period, pebs_period,
			      ranges, nr_ranges);
	err = errno;
	close(fd);
	errno = err;
	return ret;
}

REFCNT_API int refcnt_count_stats(int fd, struct rcb_count_stats *stats)
{
	if (!stats)
		return refcnt__err(EFAULT);
	memset(stats, 0, sizeof(*stats));
	return ioctl(fd, RCB_COUNT_STATS, stats) ? -1 : 0;
}

REFCNT_API int refcnt_count_stop(int fd)
{
	return close(fd);
}

REFCNT_API int refcnt_node_count_open(struct refcnt_node *node,
				      const struct refcnt_count_attr *attr)
{
	if (!node)
		return refcnt__err(EINVAL);
	if (!attr)
		return refcnt__err(EFAULT);
	return refcnt_count_ioctl(node->fd, attr);
}

REFCNT_API int refcnt_count_open(const struct refcnt_count_attr *attr)
{
	int fd, ret, err;

	if (!attr)
		return refcnt__err(EFAULT);
	fd = refcnt__open_any();
	if (fd < 0)
		return -1;
	ret = refcnt_count_ioctl(fd, attr);
	err = errno;
	close(fd);
	errno = err;
	return ret;
}

REFCNT_API int refcnt_count_read(int fd, struct rcb_count_totals *totals,
				 size_t cap)
{
	struct rcb_count_read r;

	if (cap && !totals)
		return refcnt__err(EFAULT);
	memset(&r, 0, sizeof(r));
	r.totals = (uintptr_t)totals;
	r.nr_totals = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
	if (ioctl(fd, RCB_COUNT_READ, &r))
		return -1;
	return (int)r.nr_totals;
}

REFCNT_API int refcnt_feeds(struct rcb_feed_info *feeds, size_t cap)
{
	struct rcb_feeds_query q;
	int fd, ret, err;

	if (cap && !feeds)
		return refcnt__err(EFAULT);
	fd = refcnt__open_any();
	if (fd < 0)
		return -1;
	memset(&q, 0, sizeof(q));
	q.feeds = (uintptr_t)feeds;
	q.nr_feeds = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
	ret = ioctl(fd, RCB_FEEDS_GET, &q);
	err = errno;
	close(fd);
	if (ret) {
		errno = err;
		return -1;
	}
	return (int)q.nr_feeds;
}
