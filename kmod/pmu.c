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
 * refcnt_pmu_core_default() - an Intel CPU's core PMU, without a probe
 * @hybrid:	the part has CPUs of two kinds (X86_FEATURE_HYBRID_CPU)
 * @d:		its @pmu and @pmu_type set, when known
 *
 * perf registers one core PMU, "cpu" of type PERF_TYPE_RAW, unless the
 * part is hybrid (init_hw_perf_events() at 6.1 and 6.12): then each CPU
 * has "cpu_core" or "cpu_atom", of dynamic types, which only the PMU of
 * an event made on it tells (a probe: refcnt_pmu_describe()).
 *
 * Return: true when known; false when only a probe can tell.
 */
bool refcnt_pmu_core_default(bool hybrid, struct refcnt_pmu_cpu *d)
{
	if (hybrid)
		return false;
	d->pmu = "cpu";
	d->pmu_type = PERF_TYPE_RAW;
	return true;
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
 * @exact:	the registers are the sampled instruction's
 *		(PERF_EFLAGS_EXACT in their flags)
 * @sample_flags: perf_sample_data.sample_flags: PERF_SAMPLE_ADDR and
 *		PERF_SAMPLE_PHYS_ADDR say which addresses the PMU gave
 * @addr:	the data address, if PERF_SAMPLE_ADDR
 * @data_src:	the data source, if PERF_SAMPLE_DATA_SRC
 * @ranges:	a counting session's ranges, NULL for the whole machine
 * @nr_ranges:	entries of @ranges, 0 for all addresses
 *
 * Kernel-mode samples never count: the kernel refuses exclude_kernel for
 * IBS (PERF_PMU_CAP_NO_EXCLUDE at 6.1 and 6.12), so they arrive and are
 * dropped here, from the registers. Those registers are the op's only
 * when IBS recorded its RIP: with IbsRipInvalid set, amd/ibs.c (6.1 and
 * 6.12) leaves the NMI's own, clears PERF_EFLAGS_EXACT, and the mode is
 * unknown; such an op is not counted (REFCNT_SAMPLE_INEXACT). PEBS at
 * precise_ip 1 is never exact, but its registers are the record's (the
 * next instruction's IP, and the mode set_linear_ip() derives from it),
 * so a load or store stream's mode holds without PERF_EFLAGS_EXACT. An
 * op without a data address is an op that touched no memory (IBS
 * samples every kind). In memory-side mode a sample counts only with a
 * data source beyond the caches; stores never have one (neither PMU says
 * where a store's line came from).
 *
 * Return: REFCNT_SAMPLE_COUNTED when the sample goes on to its page, or why
 * it does not.
 */
enum refcnt_sample_outcome
refcnt_pmu_classify(const struct refcnt_pmu_stream *s, bool user,
		    bool exact, u64 sample_flags, u64 addr, u64 data_src,
		    const struct rcb_count_range *ranges,
		    unsigned int nr_ranges)
{
	bool has_addr = (sample_flags & PERF_SAMPLE_ADDR) && addr;

	if (!exact && s->op == REFCNT_PMU_OPS)
		return REFCNT_SAMPLE_INEXACT;
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
 * @m:		the event's multiplexing state, zeroed at its creation;
 *		updated when the times moved since its last sample
 * @enabled:	the event's total_time_enabled now
 * @running:	its total_time_running now, less when the PMU multiplexes
 * @capped:	set when the factor was capped at REFCNT_PMU_SCALE_MAX
 *
 * An event that ran a fraction of the time it was enabled saw that
 * fraction of the events: each of its samples stands for @period times
 * enabled over running. Over the event's last round of scheduling, not
 * its life: contention that starts after an hour alone must scale by 2,
 * not by the lifetime's 1.08. perf updates the times only as it
 * schedules the event (in NMI they stay put while it runs), so the
 * first sample that sees them moved measures the round that just ended,
 * on and off, and that factor holds for every sample until they move
 * again. Times of an event never rescheduled stay put: no scaling.
 *
 * The factor is capped at REFCNT_PMU_SCALE_MAX (see there); a capped
 * sample's weight is @period times the cap.
 *
 * Return: the weight, at most U32_MAX (the reference path's width).
 */
u64 refcnt_pmu_scale(u64 period, struct refcnt_pmu_mux *m, u64 enabled,
		     u64 running, bool *capped)
{
	u64 de, dr;

	*capped = false;
	if (running != m->running || enabled != m->enabled) {
		/* Wrapped or reset times: no round to measure. */
		de = enabled >= m->enabled ? enabled - m->enabled : 0;
		dr = running >= m->running ? running - m->running : 0;
		m->enabled = enabled;
		m->running = running;
		m->d_enabled = de;
		m->d_running = dr;
	}
	de = m->d_enabled;
	dr = m->d_running;
	if (period >= U32_MAX)
		return U32_MAX;
	if (de <= dr)
		return period;
	/* Not run at all in the round: as far from its share as can be. */
	if (!dr || div64_u64(de, dr) >= REFCNT_PMU_SCALE_MAX) {
		*capped = true;
		return min_t(u64, period * REFCNT_PMU_SCALE_MAX, U32_MAX);
	}
	return min_t(u64, mul_u64_u64_div_u64(period, de, dr), U32_MAX);
}

/**
 * refcnt_pmu_tick_lost() - the samples a throttle lost, estimated
 * @t:		the event's samples in its current tick, updated
 * @seq:	perf's tick sequence for this sample (hw.interrupts_seq)
 * @now_ns:	its time (local_clock())
 * @throttled:	perf throttled the event at this sample
 * @tick_ns:	a tick's length (TICK_NSEC)
 *
 * perf stops a throttled event until the next tick: what it would have
 * sampled meanwhile is lost, and nothing counts it. The event's samples
 * so far in the tick give its rate: n samples over the time from the
 * first to the throttling one, (n - 1) intervals. The loss is that rate
 * over the time the event was stopped, known at its next sample: from
 * the throttle to it, less one interval (the restart came before it),
 * but no more than the rest of a tick of @tick_ns (the next sample may
 * come after the CPU idled, with nothing to sample). A rate that holds
 * is assumed; a single sample a tick (perf_event_max_sample_rate at HZ
 * or below) gives no rate, and no estimate; nor does a throttle with no
 * sample after it.
 *
 * Return: the samples the last throttle lost, estimated, at the first
 * sample after it; else 0.
 */
u64 refcnt_pmu_tick_lost(struct refcnt_pmu_tick *t, u64 seq, u64 now_ns,
			 bool throttled, u64 tick_ns)
{
	u64 lost = 0;

	if (t->stopped_ns && now_ns > t->stopped_ns) {
		u64 gap = mul_u64_u64_div_u64(t->rate_n, now_ns - t->stopped_ns,
					      t->rate_ns);

		lost = min_t(u64, gap > 1 ? gap - 1 : 0, t->bound);
	}
	t->stopped_ns = 0;
	if (seq != t->seq || !t->n || now_ns < t->first_ns) {
		t->seq = seq;
		t->first_ns = now_ns;
		t->n = 0;
	}
	t->n++;
	if (throttled && t->n >= 2 && now_ns > t->first_ns) {
		u64 whole = mul_u64_u64_div_u64(t->n - 1, tick_ns,
						now_ns - t->first_ns);

		t->stopped_ns = now_ns;
		t->rate_n = t->n - 1;
		t->rate_ns = now_ns - t->first_ns;
		t->bound = whole > t->n ? whole - t->n : 0;
	}
	return lost;
}
