// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: what every precise memory-sampling PMU shares, as pure
 * functions (pmu.h): choosing the vendor's planner, and reading one
 * sample: whether it counts, and with what weight. feed_pmu.c calls them
 * from the overflow handler; tools/testing/pmu from user space.
 */
#include <linux/errno.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/perf_event.h>

#include "compat.h"
#include "pmu.h"

/**
 * refcnt_pmu_plan() - the events to program on one CPU
 * @cpu:	the CPU, as the planners know it
 * @p:		what the user asked
 * @plan:	filled in
 * @why:	on error, set to the reason, for one line in the kernel log
 *
 * Return: 0; -EOPNOTSUPP when this CPU's PMU has no such events (the
 * feed skips the CPU, or fails when no CPU has them); -EINVAL when the
 * PMU refuses what was asked (a period, a threshold).
 */
int refcnt_pmu_plan(const struct refcnt_pmu_cpu *cpu,
		    const struct refcnt_pmu_params *p,
		    struct refcnt_pmu_plan *plan, const char **why)
{
	*plan = (struct refcnt_pmu_plan){ .period = p->period };
	*why = NULL;
	switch (cpu->vendor) {
	case REFCNT_PMU_INTEL:
		return refcnt_intel_plan(cpu, p, plan, why);
	case REFCNT_PMU_AMD:
		return refcnt_amd_plan(cpu, p, plan, why);
	case REFCNT_PMU_TEST:
		return refcnt_test_plan(cpu, p, plan, why);
	default:
		*why = "no precise memory-sampling PMU known for this CPU vendor";
		return -EOPNOTSUPP;
	}
}

/**
 * refcnt_pmu_ldlat_check() - whether a load-latency threshold is valid
 * @ldlat:	threshold in core cycles, 0 for every load
 *
 * The SDM's load-latency facility takes 3 to 65535 cycles
 * (MSR_PEBS_LD_LAT_THRESHOLD; "the minimum value that may be programmed
 * in this register is 3"); the kernel refuses config1 bits above 15 in
 * x86_pmu_extra_regs() and would program 1 or 2 unchecked.
 *
 * Return: 0 or -EINVAL.
 */
int refcnt_pmu_ldlat_check(u32 ldlat)
{
	if (ldlat && (ldlat < REFCNT_PMU_LDLAT_MIN ||
		      ldlat > REFCNT_PMU_LDLAT_MAX))
		return -EINVAL;
	return 0;
}

/**
 * refcnt_pmu_memside() - whether a data source is beyond the CPU's caches
 * @data_src:	union perf_mem_data_src, as perf fills it
 *
 * Memory-side is what the Origin's hub saw: a reference that missed the
 * requesting CPU's own caches, its last level included, and was answered
 * by memory (local or remote DRAM, PMEM, CXL, a memory-side cache) or by
 * another socket's or core complex's cache. Both vendors' encodings, as
 * the 6.1 and 6.12 kernels write them (ds.c pebs_data_source[],
 * ibs.c perf_ibs_get_mem_lvl()): 6.1's IBS fills only mem_lvl.
 *
 * Return: true for memory-side.
 */
bool refcnt_pmu_memside(u64 data_src)
{
	union perf_mem_data_src s = { .val = data_src };
	u64 lvl = s.mem_lvl;

	switch (s.mem_lvl_num) {
	case PERF_MEM_LVLNUM_RAM:
	case PERF_MEM_LVLNUM_PMEM:
	case PERF_MEM_LVLNUM_CXL:
	case PERF_MEM_LVLNUM_L4:
	case REFCNT_PERF_MEM_LVLNUM_MSC:
		return true;
	case PERF_MEM_LVLNUM_L1:
	case PERF_MEM_LVLNUM_L2:
	case PERF_MEM_LVLNUM_LFB:
	case PERF_MEM_LVLNUM_IO:
	case REFCNT_PERF_MEM_LVLNUM_L2_MHB:
	case REFCNT_PERF_MEM_LVLNUM_UNC:
		return false;
	}
	/* L3, any cache, or no level number: the older flags decide. */
	if (lvl & (PERF_MEM_LVL_LOC_RAM | PERF_MEM_LVL_REM_RAM1 |
		   PERF_MEM_LVL_REM_RAM2))
		return true;
	/* Another core complex's or socket's cache. */
	if (s.mem_remote)
		return true;
	/* 6.1's IBS: a peer cache beyond this L3 (with L3: this one's). */
	if ((lvl & (PERF_MEM_LVL_REM_CCE1 | PERF_MEM_LVL_REM_CCE2)) &&
	    !(lvl & PERF_MEM_LVL_L3))
		return true;
	/* An L3 miss the PMU could not place. */
	return (lvl & PERF_MEM_LVL_MISS) &&
	       ((lvl & PERF_MEM_LVL_L3) || s.mem_lvl_num == PERF_MEM_LVLNUM_L3);
}

/**
 * refcnt_ranges_inside() - whether an address is in a session's ranges
 * @addr:	a user address
 * @r:		the ranges
 * @nr:		entries of @r; 0 means every address
 *
 * NMI-safe, as every feed's sample path that uses it.
 *
 * Return: true if @addr lies in one of them.
 */
bool refcnt_ranges_inside(u64 addr, const struct rcb_count_range *r,
			  unsigned int nr)
{
	unsigned int i;

	if (!nr)
		return true;
	for (i = 0; i < nr; i++)
		if (addr - r[i].start < r[i].len)
			return true;
	return false;
}

/**
 * refcnt_pmu_classify() - whether a sample counts, before its page is found
 * @s:		its stream
 * @user:	taken in user mode (user_mode() of the sample's registers)
 * @sample_flags: perf_sample_data.sample_flags: PERF_SAMPLE_ADDR and
 *		PERF_SAMPLE_PHYS_ADDR say which addresses the PMU gave
 * @addr:	the data address, if PERF_SAMPLE_ADDR
 * @data_src:	the data source, if PERF_SAMPLE_DATA_SRC
 * @ranges:	a counting session's ranges, NULL for the whole machine
 * @nr_ranges:	entries of @ranges, 0 for all addresses
 *
 * Kernel-mode samples never count: the kernel refuses exclude_kernel for
 * IBS (PERF_PMU_CAP_NO_EXCLUDE at 6.1 and 6.12), so they arrive and are
 * dropped here, from the registers. An op without a data address is an
 * op that touched no memory (IBS samples every kind). In memory-side
 * mode a sample counts only with a data source beyond the caches; stores
 * never have one (neither PMU says where a store's line came from).
 *
 * Return: REFCNT_SAMPLE_COUNTED when the sample goes on to its page, or why
 * it does not.
 */
enum refcnt_sample_outcome
refcnt_pmu_classify(const struct refcnt_pmu_stream *s, bool user,
		    u64 sample_flags, u64 addr, u64 data_src,
		    const struct rcb_count_range *ranges,
		    unsigned int nr_ranges)
{
	bool has_addr = (sample_flags & PERF_SAMPLE_ADDR) && addr;

	if (!user)
		return REFCNT_SAMPLE_KERNEL;
	if (!has_addr && !(sample_flags & PERF_SAMPLE_PHYS_ADDR))
		return REFCNT_SAMPLE_NOADDR;
	if (s->flags & REFCNT_PMU_MEMSIDE &&
	    (!(sample_flags & PERF_SAMPLE_DATA_SRC) ||
	     !refcnt_pmu_memside(data_src)))
		return REFCNT_SAMPLE_CACHED;
	/* Ranges are of virtual addresses: without one, no range holds it. */
	if (nr_ranges &&
	    (!has_addr || !refcnt_ranges_inside(addr, ranges, nr_ranges)))
		return REFCNT_SAMPLE_OUTSIDE;
	return REFCNT_SAMPLE_COUNTED;
}

/**
 * refcnt_pmu_scale() - the references one sample stands for
 * @period:	the sample period (perf_sample_data.period)
 * @enabled:	the event's time enabled
 * @running:	the event's time running, less when the PMU multiplexes
 *
 * An event that ran a fraction of the time it was enabled saw that
 * fraction of the events: each of its samples stands for @period times
 * @enabled / @running of them, as perf scales counts. Times of an event
 * never rescheduled may both be 0: no scaling then.
 *
 * Return: the weight, at most U32_MAX (the reference path's width).
 */
u64 refcnt_pmu_scale(u64 period, u64 enabled, u64 running)
{
	if (period >= U32_MAX)
		return U32_MAX;
	if (!running || enabled <= running)
		return period;
	/* So that the quotient below fits 64 bits: divq faults otherwise. */
	if (div64_u64(enabled, running) >= U32_MAX)
		return U32_MAX;
	return min_t(u64, mul_u64_u64_div_u64(period, enabled, running),
		     U32_MAX);
}
