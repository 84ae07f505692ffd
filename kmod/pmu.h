/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt: the precise memory-sampling PMUs, as pure functions.
 *
 * What refcnt asks of each PMU (one file per PMU: pmu_intel.c for PEBS,
 * pmu_amd.c for IBS) and how it reads a sample (pmu.c), written without
 * any kernel state, so that tools/testing/pmu compiles these very files
 * in user space and checks the attributes against the acceptance rules
 * of every kernel refcnt supports. feed_pmu.c programs the PMU with them
 * and runs the samples (feed.h).
 */
#ifndef _REFCNT_PMU_H
#define _REFCNT_PMU_H

#include <linux/errno.h>
#include <linux/perf_event.h>
#include <linux/types.h>
#include <uapi/linux/refcnt.h>

/* Which PMU serves a CPU: the vendor's precise memory sampling. */
enum refcnt_pmu_vendor {
	REFCNT_PMU_UNKNOWN,
	REFCNT_PMU_INTEL,	/* PEBS, pmu_intel.c */
	REFCNT_PMU_AMD,		/* IBS op, pmu_amd.c (AMD and Hygon) */
	REFCNT_PMU_TEST,	/* the test rig's PMU, pmu_test.c */
};

/*
 * The test rig's PMU (pmu_test.c): its name, and the config of the raw
 * event it takes so that refcnt finds it (tools/testing/kmod/
 * refcnt_testpmu.c has the same).
 */
#define REFCNT_PMU_TEST_NAME	"refcnt_testpmu"
#define REFCNT_PMU_TEST_PROBE	0x7e57c0de00000000ULL

/* What the samples of one event are. */
enum refcnt_pmu_op {
	REFCNT_PMU_LOADS,	/* retired loads: PEBS mem-loads */
	REFCNT_PMU_STORES,	/* retired stores: PEBS mem-stores */
	REFCNT_PMU_OPS,		/* any op: IBS; loads, stores, others */
};

/* Count only references that went beyond the CPU's caches. */
#define REFCNT_PMU_MEMSIDE	0x1

/**
 * struct refcnt_pmu_stream - how the samples of one event are read
 * @op:		REFCNT_PMU_LOADS, _STORES or _OPS
 * @flags:	REFCNT_PMU_MEMSIDE: count a sample only when its data source
 *		(PERF_SAMPLE_DATA_SRC) puts it beyond the caches
 *
 * The real PMU's events and the emulated PMU's records (the hub) are
 * read the same way, by refcnt_pmu_sample() (feed.h).
 */
struct refcnt_pmu_stream {
	u8 op;
	u8 flags;
};

/*
 * What became of one sample of a feed (any feed: the PMU's reasons are
 * here, with the pure code that finds them, so that user space can test
 * it). The feeds' statistics count them (feed.h).
 */
enum refcnt_sample_outcome {
	REFCNT_SAMPLE_COUNTED,	/* a counter counted its weight */
	REFCNT_SAMPLE_UNRESOLVED, /* no page, or a page no node counts */
	REFCNT_SAMPLE_KERNEL,	/* taken in kernel mode: not counted */
	REFCNT_SAMPLE_NOADDR,	/* an op without a data address (IBS) */
	REFCNT_SAMPLE_CACHED,	/* memory-side mode: satisfied by a cache */
	REFCNT_SAMPLE_OUTSIDE,	/* outside the counting session's ranges */
	REFCNT_SAMPLE_INEXACT,	/* IBS op without its RIP: mode unknown */
	REFCNT_SAMPLE_OUTCOMES
};

/**
 * struct refcnt_pmu_cpu - what the planners know of one CPU
 * @vendor:	enum refcnt_pmu_vendor
 * @family:	x86 family
 * @model:	x86 model
 * @pmu_type:	Intel: perf type of the core PMU that serves the CPU (the
 *		one perf picks for a cycles event on it)
 * @pmu:	Intel: that PMU's name: "cpu", or on hybrid parts "cpu_core"
 *		or "cpu_atom"
 * @ibs_caps:	AMD: the IBS capabilities (get_ibs_caps(), IBS_CAPS_*)
 * @kver:	the running kernel, as LINUX_VERSION_CODE
 */
struct refcnt_pmu_cpu {
	u8 vendor;
	u8 family;
	u8 model;
	u32 pmu_type;
	const char *pmu;
	u32 ibs_caps;
	u32 kver;
};

/**
 * struct refcnt_pmu_params - what the user asked (module parameters)
 * @period:	sample period: one sample every @period events
 * @ldlat:	Intel: load-latency threshold in core cycles, 0 for every
 *		load (refcnt.pebs_ldlat)
 * @memside:	count only references the data source puts beyond the
 *		caches (refcnt.pebs_memside)
 */
struct refcnt_pmu_params {
	u32 period;
	u32 ldlat;
	bool memside;
};

/**
 * struct refcnt_pmu_mux - an event's multiplexing, for refcnt_pmu_scale()
 * @enabled:	its total_time_enabled as its last sample saw it
 * @running:	its total_time_running, likewise
 * @d_enabled:	time enabled over its last round of scheduling
 * @d_running:	time running over that round
 *
 * Zeroed when the event is made; one per event, updated by its samples
 * only (one at a time: an event overflows on one CPU at a time).
 */
struct refcnt_pmu_mux {
	u64 enabled;
	u64 running;
	u64 d_enabled;
	u64 d_running;
};

/**
 * struct refcnt_pmu_tick - an event's samples in the current tick, for
 *	refcnt_pmu_tick_lost()
 * @seq:	perf's tick sequence (hw.interrupts_seq) they were taken in
 * @first_ns:	local_clock() at the first of them
 * @n:		how many
 * @stopped_ns:	when perf throttled it, 0 if it did not since its last
 *		sample
 * @rate_n:	the throttle's tick: samples over @rate_ns, less one
 * @rate_ns:	from the first of them to the throttling one
 * @bound:	the most the throttle can have lost: the rest of the tick
 *
 * Zeroed when the event is made; one per event, updated by its samples.
 */
struct refcnt_pmu_tick {
	u64 seq;
	u64 first_ns;
	u64 n;
	u64 stopped_ns;
	u64 rate_n;
	u64 rate_ns;
	u64 bound;
};

/*
 * The largest multiplexing factor a sample is scaled by. refcnt programs
 * at most two events per CPU, and x86 core PMUs have four generic
 * counters or more: a fair share of them is rarely below 1/4, 1/16 only
 * with a dozen other users' events on the CPU. A larger factor is an
 * event starved (another user's pinned events, or one scheduled at last
 * after a long wait), not shared: the references of the time it did not
 * run were never sampled, and putting them all on the first sample after
 * (thousands of periods, up to U32_MAX, into one page) would make one
 * page hot from nothing. Such samples count 16 periods, and the feed
 * counts them apart (<feed>_capped).
 */
#define REFCNT_PMU_SCALE_MAX	16

/* Most events one CPU's plan programs: loads and stores. */
#define REFCNT_PMU_MAX_EVENTS	2

/**
 * struct refcnt_pmu_event - one event of a plan
 * @attr:	its attributes, as perf_event_create_kernel_counter() takes
 *		them
 * @fallback:	attributes to try when the kernel refuses @attr with
 *		-EINVAL (IBS: the kernel's privilege filter, which kernels
 *		before it refuse); unused when @has_fallback is false
 * @has_fallback: whether @fallback is set
 * @stream:	how its samples are read
 */
struct refcnt_pmu_event {
	struct perf_event_attr attr;
	struct perf_event_attr fallback;
	bool has_fallback;
	struct refcnt_pmu_stream stream;
};

/**
 * struct refcnt_pmu_plan - what to program on one CPU (or one core PMU)
 * @nr:		events in @ev
 * @ev:		the events
 * @period:	the period programmed, which the PMU may have rounded
 * @note:	when not NULL, what differs from what was asked, for one
 *		line in the kernel log (a rounded period, a data source the
 *		kernel cannot give)
 */
struct refcnt_pmu_plan {
	unsigned int nr;
	struct refcnt_pmu_event ev[REFCNT_PMU_MAX_EVENTS];
	u32 period;
	const char *note;
};

/* The smallest latency threshold the load-latency facility takes (SDM). */
#define REFCNT_PMU_LDLAT_MIN	3
/* The largest: MSR_PEBS_LD_LAT_THRESHOLD holds 16 bits (config1:0-15). */
#define REFCNT_PMU_LDLAT_MAX	0xffff

/* pmu.c */
int refcnt_pmu_plan(const struct refcnt_pmu_cpu *cpu,
		    const struct refcnt_pmu_params *p,
		    struct refcnt_pmu_plan *plan, const char **why);
bool refcnt_pmu_core_default(bool hybrid, struct refcnt_pmu_cpu *d);
int refcnt_pmu_ldlat_check(u32 ldlat);
bool refcnt_pmu_memside(u64 data_src);
bool refcnt_ranges_inside(u64 addr, const struct rcb_count_range *r,
			  unsigned int nr);
enum refcnt_sample_outcome
refcnt_pmu_classify(const struct refcnt_pmu_stream *s, bool user,
		    bool exact, u64 sample_flags, u64 addr, u64 data_src,
		    const struct rcb_count_range *ranges,
		    unsigned int nr_ranges);
u64 refcnt_pmu_scale(u64 period, struct refcnt_pmu_mux *m, u64 enabled,
		     u64 running, bool *capped);
u64 refcnt_pmu_tick_lost(struct refcnt_pmu_tick *t, u64 seq, u64 now_ns,
			 bool throttled, u64 tick_ns);

/*
 * pmu_intel.c, pmu_amd.c, pmu_test.c: the planners behind
 * refcnt_pmu_plan(), built on
 * x86 (Kbuild) and in user space (tools/testing/pmu). Elsewhere no CPU is
 * theirs: refcnt_pmu_describe() describes none.
 */
#if defined(CONFIG_X86) || !defined(__KERNEL__)
int refcnt_intel_plan(const struct refcnt_pmu_cpu *cpu,
		      const struct refcnt_pmu_params *p,
		      struct refcnt_pmu_plan *plan, const char **why);
int refcnt_amd_plan(const struct refcnt_pmu_cpu *cpu,
		    const struct refcnt_pmu_params *p,
		    struct refcnt_pmu_plan *plan, const char **why);
int refcnt_test_plan(const struct refcnt_pmu_cpu *cpu,
		     const struct refcnt_pmu_params *p,
		     struct refcnt_pmu_plan *plan, const char **why);
#else
static inline int refcnt_intel_plan(const struct refcnt_pmu_cpu *cpu,
				    const struct refcnt_pmu_params *p,
				    struct refcnt_pmu_plan *plan,
				    const char **why)
{
	*why = "PEBS is x86's";
	return -EOPNOTSUPP;
}

static inline int refcnt_amd_plan(const struct refcnt_pmu_cpu *cpu,
				  const struct refcnt_pmu_params *p,
				  struct refcnt_pmu_plan *plan,
				  const char **why)
{
	*why = "IBS is x86's";
	return -EOPNOTSUPP;
}

static inline int refcnt_test_plan(const struct refcnt_pmu_cpu *cpu,
				   const struct refcnt_pmu_params *p,
				   struct refcnt_pmu_plan *plan,
				   const char **why)
{
	*why = "the test PMU is x86's";
	return -EOPNOTSUPP;
}
#endif

#endif /* _REFCNT_PMU_H */
