// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: who may have a counting session's perf events. The session
 * makes them as kernel counters, which skip the checks perf_event_open()
 * makes of its caller; refcnt_perf_access() asks the kernel instead
 * (refcnt_perf_allow_kernel(), compat.h), never a file that the caller's
 * mount namespace resolves.
 */
#include <linux/perf_event.h>

#include "compat.h"
#include "refcnt.h"

/**
 * refcnt_perf_access() - may the caller have this perf event of a task
 * @attr:	the event, as the session would make it
 *
 * An event that counts the kernel or samples physical addresses
 * (PERF_SAMPLE_PHYS_ADDR, the PEBS/IBS feed's) needs what
 * perf_allow_kernel() asks: refcnt_perf_allow_kernel(). The fault feed's
 * user-space software events of the caller's own threads need nothing
 * more than the device: the paranoid level they would depend on (Debian's
 * 3) is visible to no module.
 *
 * Context: process context, may sleep.
 * Return: 0, or -EACCES (or the LSM's errno) as perf_event_open() gives it.
 */
int refcnt_perf_access(struct perf_event_attr *attr)
{
	if (attr->exclude_kernel &&
	    !(attr->sample_type & PERF_SAMPLE_PHYS_ADDR))
		return 0;
	return refcnt_perf_allow_kernel(attr);
}
