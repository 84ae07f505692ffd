// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the precise load-sampling event of an x86 CPU, for the PEBS/IBS
 * feed (feed_pebs.c). Other architectures have none (refcnt.h).
 */
#include <linux/perf_event.h>
#include <linux/string.h>
#include <asm/processor.h>
#include <uapi/linux/refcnt.h>

#include "refcnt.h"

/**
 * refcnt_pmu_caps() - what this CPU vendor's samples tell beyond addresses
 *
 * Return: RCB_FEED_LOADS where the event samples loads only (PEBS), 0
 * where it samples every op and the sample does not say (IBS here).
 */
u32 refcnt_pmu_caps(void)
{
	return boot_cpu_data.x86_vendor == X86_VENDOR_INTEL ? RCB_FEED_LOADS : 0;
}

/**
 * refcnt_pmu_attr() - the precise load-sampling event of this CPU vendor
 * @cpu:	the CPU, or -1 for a task's event
 * @k:		the event of the CPU; the feed has one
 * @attr:	filled in, sample period aside
 *
 * Return: 0, or -EOPNOTSUPP when we know no such event for the vendor.
 */
int refcnt_pmu_attr(int cpu, unsigned int k, struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->precise_ip = 2;
	attr->exclude_kernel = 1;
	attr->sample_type = PERF_SAMPLE_ADDR | PERF_SAMPLE_PHYS_ADDR;
	switch (boot_cpu_data.x86_vendor) {
	case X86_VENDOR_INTEL:
		/* MEM_INST_RETIRED.ALL_LOADS: PEBS load samples. */
		attr->type = PERF_TYPE_RAW;
		attr->config = 0x81d0;
		return 0;
	case X86_VENDOR_AMD:
		/* Precise cycles are forwarded to IBS op sampling. */
		attr->type = PERF_TYPE_HARDWARE;
		attr->config = PERF_COUNT_HW_CPU_CYCLES;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}
