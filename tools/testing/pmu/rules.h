/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rules.h: the acceptance rules of the kernels refcnt supports, for the
 * perf events refcnt's PMU feed makes, written from their sources (each
 * rule names its file and function) so that pmu_test.c can check the
 * attributes kmod/pmu_*.c build without the hardware.
 *
 * A machine is a CPU model and its core PMUs as a given kernel sets them
 * up; kernel_create() is what perf_event_create_kernel_counter() would do
 * with an attribute on one CPU (or for a task) of that machine.
 */
#ifndef _PMU_RULES_H
#define _PMU_RULES_H

#include <linux/perf_event.h>

/* The kernels whose rules are written here. */
enum krn {
	K6_1,		/* Debian 6.1.192 (linux-source-6.1) */
	K6_12,		/* Debian 6.12.95 (linux-source-6.12, bookworm-backports) */
	KNEWEST,	/* mainline as read last (ibs.c with swfilt, arch-PEBS core.c) */
	NR_KRN
};

extern const char *const krn_name[NR_KRN];
extern const u32 krn_version[NR_KRN];

/* What a kernel does with PEBS records of an event (ds.c constraints). */
enum pebs_kind {
	PEBS_NONE,	/* no PEBS constraint: never scheduled as PEBS */
	PEBS_ANY,	/* PMU_FL_PEBS_ALL, no flags: adaptive PEBS */
	PEBS_LDLAT,	/* PERF_X86_EVENT_PEBS_LDLAT: load latency, data source */
	PEBS_ST,	/* PERF_X86_EVENT_PEBS_ST: SNB precise stores */
	PEBS_LD_HSW,	/* PERF_X86_EVENT_PEBS_LD_HSW: DataLA loads */
	PEBS_ST_HSW,	/* PERF_X86_EVENT_PEBS_ST_HSW: DataLA stores */
	PEBS_STLAT,	/* PERF_X86_EVENT_PEBS_STLAT: store latency (GLC+) */
	PEBS_LAT_HYBRID,	/* PERF_X86_EVENT_PEBS_LAT_HYBRID: atom load/store latency */
	PEBS_UNTAGGED,	/* event-only constraint, no DataLA flags (SNB 0xd0) */
};

/**
 * struct intel_pmu - one core PMU as a kernel sets it up (intel_pmu_init())
 * @name:	"cpu", "cpu_core", "cpu_atom"
 * @type:	its perf type (PERF_TYPE_RAW, or a dynamic one)
 * @max_precise: x86_pmu_max_precise()
 * @pebs_format: intel_cap.pebs_format
 * @baseline:	adaptive PEBS (intel_cap.pebs_baseline): PMU_FL_PEBS_ALL
 * @mem_loads_aux: require_mem_loads_aux_event() is true for it
 * @min_period:	what its limit_period() raises any period to
 * @pebs:	its PEBS constraints for the configs refcnt may use
 * @ldlat:	configs with an LDLAT extra register (config1:0-15)
 */
struct intel_pmu {
	const char *name;
	u32 type;
	int max_precise;
	int pebs_format;
	bool baseline;
	bool mem_loads_aux;
	u32 min_period;
	const struct pebs_c { u16 config; bool event_only; enum pebs_kind kind; } *pebs;
	const u16 *ldlat;
};

#define MAX_PMUS	2
#define MAX_CPUS	16

/**
 * struct machine - a CPU model as one kernel sees it
 * @name:	what the tests call it
 * @vendor:	REFCNT_PMU_INTEL or REFCNT_PMU_AMD (kmod/pmu.h)
 * @family:	x86 family
 * @model:	x86 model
 * @nr_pmus:	core PMUs (Intel; 0 when the kernel has no PMU driver)
 * @pmu:	them
 * @nr_cpus:	CPUs
 * @cpu_pmu:	index in @pmu of each CPU's PMU
 * @ibs_caps:	AMD: what get_ibs_caps() returns
 */
struct machine {
	const char *name;
	u8 vendor, family, model;
	int nr_pmus;
	struct intel_pmu pmu[MAX_PMUS];
	int nr_cpus;
	int cpu_pmu[MAX_CPUS];
	u32 ibs_caps;
};

/**
 * struct verdict - what the kernel does with one attribute
 * @err:	what perf_event_create_kernel_counter() returns, 0 or -errno
 * @rule:	the rule that refused it, as "file: function(): what"
 * @pmu:	the PMU that took it ("cpu", "cpu_atom", "ibs_op")
 * @large_pebs:	PERF_X86_EVENT_LARGE_PEBS: records drained in bulk, all
 *		but the last to perf_event_output()
 * @auto_reload: PERF_X86_EVENT_AUTO_RELOAD
 * @scheduled:	a counter can take it as a PEBS event (a constraint)
 * @data_addr:	its samples carry the sampled data's address
 * @data_src:	its samples carry a data source with a memory level
 * @counts:	IBS: what the period counts, "ops" or "cycles"
 */
struct verdict {
	int err;
	const char *rule;
	const char *pmu;
	bool large_pebs, auto_reload, scheduled, data_addr, data_src;
	const char *counts;
};

void machine_intel(struct machine *m, enum krn k, u8 model);
void machine_amd(struct machine *m, const char *name, u8 family, u8 model,
		 u32 ibs_caps);
struct verdict kernel_create(enum krn k, const struct machine *m,
			     const struct perf_event_attr *attr, int cpu,
			     bool task);

#endif /* _PMU_RULES_H */
