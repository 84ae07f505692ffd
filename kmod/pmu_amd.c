// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: AMD IBS op sampling (AMD and Hygon).
 *
 * `perf mem` on AMD samples "ibs_op//": every op the IBS unit tags, loads
 * and stores among them, with the data's linear and physical addresses
 * and, decoded by the kernel (ibs.c perf_ibs_parse_ld_st_data()), a data
 * source. refcnt asks for the same unit through the alias the kernel
 * keeps for it: a precise raw 0xC1 event, which forward_event_to_ibs()
 * hands to the ibs_op PMU (its own perf type) as IbsOpCntCtl, counting
 * ops rather than cycles, so that a period of N ops stands for N ops.
 *
 * The rules of ibs.c perf_ibs_init() and core.c perf_try_init_event()
 * at 6.1 and 6.12: the low four bits of the period must be 0 (the unit
 * counts in 16s), and no exclude flag at all (PERF_PMU_CAP_NO_EXCLUDE):
 * kernel-mode samples arrive and refcnt_pmu_classify() drops them from
 * the sample's registers. Later kernels take exclude_kernel with the
 * software filter bit (config2:0, "swfilt") and drop them before the
 * handler; the plan asks for that first and falls back.
 */
#include <linux/bits.h>
#include <linux/errno.h>
#include <linux/perf_event.h>
#include <linux/string.h>

#include "pmu.h"

/* get_ibs_caps() bits (arch/x86/include/asm/perf_event.h). */
#define REFCNT_IBS_CAPS_OPCNT	BIT(4)	/* IbsOpCntCtl: counts ops */

/* The raw event the kernel forwards to IBS op counting ops. */
#define REFCNT_IBS_OP_UOPS	0x00c1
/* attr.config2 bit 0: the IBS software privilege filter, where it exists. */
#define REFCNT_IBS_SWFILT	0x1
/* IbsOpMaxCnt holds the period in 16s. */
#define REFCNT_IBS_PERIOD_STEP	16

static void refcnt_amd_attr(struct perf_event_attr *attr, u32 period)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_RAW;
	attr->config = REFCNT_IBS_OP_UOPS;
	attr->sample_period = period;
	/* Data and physical address and the data source, read from MSRs. */
	attr->sample_type = PERF_SAMPLE_ADDR | PERF_SAMPLE_PHYS_ADDR |
			    PERF_SAMPLE_DATA_SRC;
	/* forward_event_to_ibs() takes 1 or 2. */
	attr->precise_ip = 1;
	attr->wakeup_events = 1;
}

/**
 * refcnt_amd_plan() - the IBS op event for one AMD CPU
 * @cpu:	the CPU; @cpu->ibs_caps says what its IBS unit does
 * @p:		what the user asked; @p->ldlat is Intel's and ignored
 * @plan:	filled in
 * @why:	on error (and for @plan->note), the reason
 *
 * The period is rounded down to a multiple of 16, at least 16, and
 * reported in @plan->period. Loads, stores and ops without a data
 * address all arrive: the sample code tells them apart.
 *
 * Return: 0, or -EOPNOTSUPP when the CPU has no IBS that counts ops.
 */
int refcnt_amd_plan(const struct refcnt_pmu_cpu *cpu,
		    const struct refcnt_pmu_params *p,
		    struct refcnt_pmu_plan *plan, const char **why)
{
	struct refcnt_pmu_event *ev;
	u32 period;

	if (!cpu->ibs_caps) {
		*why = "no IBS on this CPU";
		return -EOPNOTSUPP;
	}
	if (!(cpu->ibs_caps & REFCNT_IBS_CAPS_OPCNT)) {
		*why = "this CPU's IBS cannot count ops (no IbsOpCntCtl)";
		return -EOPNOTSUPP;
	}
	period = p->period & ~(REFCNT_IBS_PERIOD_STEP - 1);
	if (!period)
		period = REFCNT_IBS_PERIOD_STEP;
	if (period != p->period)
		plan->note = "IBS counts ops in 16s: period rounded";
	plan->period = period;

	ev = &plan->ev[plan->nr++];
	refcnt_amd_attr(&ev->attr, period);
	ev->attr.exclude_kernel = 1;
	ev->attr.config2 = REFCNT_IBS_SWFILT;
	refcnt_amd_attr(&ev->fallback, period);
	ev->has_fallback = true;
	ev->stream.op = REFCNT_PMU_OPS;
	if (p->memside)
		ev->stream.flags = REFCNT_PMU_MEMSIDE;
	return 0;
}
