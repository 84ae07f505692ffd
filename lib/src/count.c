// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librefcnt: counting one process (RCB_COUNT_START, RCB_COUNT_STATS).
 * The session is a file descriptor of its own: the node device opened
 * for the call is closed again, and counting lasts until the session's
 * descriptor is closed.
 */
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "internal.h"

static int refcnt_count_fd(int fd, pid_t pid, unsigned int flags,
			   unsigned int fault_period, unsigned int pebs_period,
			   const struct rcb_count_range *ranges,
			   size_t nr_ranges)
{
	struct rcb_count c;
	int ret;

	if (nr_ranges > UINT32_MAX || (nr_ranges && !ranges))
		return refcnt__err(EINVAL);
	memset(&c, 0, sizeof(c));
	c.pid = pid;
	c.flags = flags;
	c.fault_period = fault_period;
	c.pebs_period = pebs_period;
	c.ranges = (uintptr_t)ranges;
	c.nr_ranges = (uint32_t)nr_ranges;
	ret = ioctl(fd, RCB_COUNT_START, &c);
	return ret < 0 ? -1 : ret;
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
