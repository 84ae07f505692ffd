// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: who may have a counting session's perf events. The session
 * makes them as kernel counters, which skip the checks perf_event_open()
 * makes of its caller; refcnt_perf_access() makes them instead, as
 * kernel/events/core.c does at 6.1 and 6.12 for a task's event.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/perf_event.h>
#include <linux/string.h>

#include "refcnt.h"

/*
 * kernel.perf_event_paranoid: the variable is not exported to modules,
 * its sysctl file is the interface. Unreadable (no /proc in the
 * caller's mount namespace), it counts as the strictest level.
 */
static int refcnt_perf_paranoid(void)
{
	char buf[16] = "";
	struct file *f;
	loff_t pos = 0;
	ssize_t n;
	int level;

	f = filp_open("/proc/sys/kernel/perf_event_paranoid", O_RDONLY, 0);
	if (IS_ERR(f))
		return INT_MAX;
	n = kernel_read(f, buf, sizeof(buf) - 1, &pos);
	filp_close(f, NULL);
	if (n <= 0 || kstrtoint(strim(buf), 10, &level))
		return INT_MAX;
	return level;
}

/**
 * refcnt_perf_access() - may the caller have this perf event of a task
 * @attr:	the event, as the session would make it
 *
 * perf_event_open()'s rules: above 2 (Debian's level, perf_paranoid_any())
 * CAP_SYS_ADMIN only; an event that counts the kernel or samples
 * physical addresses (PERF_SAMPLE_PHYS_ADDR, the PEBS/IBS feed's), above
 * 1 perfmon_capable() only (perf_allow_kernel()). The LSM hook
 * security_perf_event_open() is not exported to modules: not consulted.
 *
 * Context: process context, may sleep.
 * Return: 0, or -EACCES as perf_event_open() gives it.
 */
int refcnt_perf_access(const struct perf_event_attr *attr)
{
	int paranoid = refcnt_perf_paranoid();

	if (paranoid > 2 && !capable(CAP_SYS_ADMIN))
		return -EACCES;
	if ((!attr->exclude_kernel ||
	     (attr->sample_type & PERF_SAMPLE_PHYS_ADDR)) &&
	    paranoid > 1 && !perfmon_capable())
		return -EACCES;
	return 0;
}
