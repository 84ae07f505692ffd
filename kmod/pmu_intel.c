// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: Intel PEBS, programmed as `perf mem` programs it.
 *
 * perf mem samples "mem-loads" (the load-latency event, with a latency
 * threshold in config1, "ldlat") and "mem-stores", the events each core
 * PMU publishes in /sys/bus/event_source/devices/<pmu>/events/, which the
 * kernel defines per microarchitecture in arch/x86/events/intel/core.c
 * (mem_ld_*, mem_st_*). The table below is those definitions, by model,
 * with the kernel release that first knows the model: an older kernel
 * treats the CPU as generic and would program neither the threshold nor
 * the data source, so refcnt refuses rather than sample wrong.
 *
 * Every event is programmed so that the kernel calls the overflow
 * handler once per sample: wakeup_events = 1 keeps intel_pmu_hw_config()
 * from setting PERF_X86_EVENT_AUTO_RELOAD and PERF_X86_EVENT_LARGE_PEBS,
 * whose drain hands all but the last record of a buffer to
 * perf_event_output(), which a kernel counter has no buffer for.
 */
#include <linux/errno.h>
#include <linux/perf_event.h>
#include <linux/string.h>
#include <linux/version.h>

#include "pmu.h"

/*
 * The periods the core counters take: the kernel's max_period without
 * full-width counter writes. Beyond it the kernel arms the counter for
 * part of the period, and PEBS writes a record each time it overflows.
 */
#define REFCNT_INTEL_MAX_PERIOD	0x7fffffffU

/**
 * struct refcnt_intel_core - one core microarchitecture's memory events
 * @name:	what the log calls it
 * @loads:	mem-loads: the load-latency event (umask << 8 | event)
 * @all_loads:	every retired load, with its data address in the record
 *		(the DataLA events from Haswell on, PEBS_ALL on the atoms);
 *		0 when the core has none
 * @stores:	mem-stores; 0 when the core has none
 * @min_period:	the smallest period the kernel's limit_period() for these
 *		events lets through (x86_pmu_hw_config() refuses a smaller
 *		one with -EINVAL); 0 for none
 * @aux:	PMU_FL_MEM_LOADS_AUX: the kernel gives mem-loads a data source
 *		only behind a mem-loads-aux group leader
 * @l3_miss:	MEM_LOAD_RETIRED.L3_MISS (MEM_LOAD_UOPS_RETIRED.L3_MISS on
 *		Haswell and Broadwell): every retired load that missed the
 *		L3, a PEBS DataLA event (ds.c's 0xd1 constraints); 0 where
 *		the core has none with a data address
 */
struct refcnt_intel_core {
	const char *name;
	u16 loads;
	u16 all_loads;
	u16 stores;
	u8 min_period;
	bool aux;
	u16 l3_miss;
};

/* nhm_limit_period(): 32, for every event (6.1, 6.12). */
static const struct refcnt_intel_core refcnt_intel_nhm = {
	"nehalem", 0x100b, 0, 0, 32, false
};

static const struct refcnt_intel_core refcnt_intel_wsm = {
	"westmere", 0x100b, 0, 0, 0, false
};

/* mem-stores is PEBS_ST, MEM_TRANS_RETIRED.PRECISE_STORES. */
static const struct refcnt_intel_core refcnt_intel_snb = {
	"sandybridge", 0x01cd, 0, 0x02cd, 0, false
};

/* hsw_limit_period(): 32, for every event but INST_RETIRED.ALL. */
static const struct refcnt_intel_core refcnt_intel_hsw = {
	"haswell", 0x01cd, 0x81d0, 0x82d0, 32, false, 0x20d1
};

/* Broadwell to Rocket Lake: MEM_{UOPS,INST}_RETIRED.ALL_{LOADS,STORES}. */
static const struct refcnt_intel_core refcnt_intel_skl = {
	"broadwell-icelake", 0x01cd, 0x81d0, 0x82d0, 0, false, 0x20d1
};

/* Sapphire and Emerald Rapids, Alder and Raptor Lake's P-cores. */
static const struct refcnt_intel_core refcnt_intel_glc_aux = {
	"golden cove", 0x01cd, 0x81d0, 0x02cd, 0, true, 0x20d1
};

/* Granite Rapids; Meteor, Lunar and Arrow Lake's P-cores. */
static const struct refcnt_intel_core refcnt_intel_glc = {
	"golden cove+", 0x01cd, 0x81d0, 0x02cd, 0, false, 0x20d1
};

/* Gracemont, Crestmont, Skymont: MEM_UOPS_RETIRED.LOAD_LATENCY, STORE_LATENCY. */
static const struct refcnt_intel_core refcnt_intel_grt = {
	"gracemont+", 0x05d0, 0x81d0, 0x06d0, 0, false
};

/**
 * struct refcnt_intel_model - the core PMUs of one family 6 model
 * @model:	x86 model
 * @since:	first kernel whose intel_pmu_init() knows it, of those read
 * @cpu:	its PMU "cpu" (one core type), or NULL
 * @core:	a hybrid part's "cpu_core", or NULL
 * @atom:	a hybrid part's "cpu_atom", or NULL
 */
struct refcnt_intel_model {
	u8 model;
	u32 since;
	const struct refcnt_intel_core *cpu, *core, *atom;
};

#define V6_1	KERNEL_VERSION(6, 1, 0)
#define V6_12	KERNEL_VERSION(6, 12, 0)

static const struct refcnt_intel_model refcnt_intel_models[] = {
	{ 0x1a, V6_1, &refcnt_intel_nhm }, /* Nehalem EP */
	{ 0x1e, V6_1, &refcnt_intel_nhm },
	{ 0x2e, V6_1, &refcnt_intel_nhm }, /* Nehalem EX */
	{ 0x25, V6_1, &refcnt_intel_wsm },
	{ 0x2c, V6_1, &refcnt_intel_wsm }, /* Westmere EP */
	{ 0x2f, V6_1, &refcnt_intel_wsm }, /* Westmere EX */
	{ 0x2a, V6_1, &refcnt_intel_snb },
	{ 0x2d, V6_1, &refcnt_intel_snb }, /* Sandy Bridge X */
	{ 0x3a, V6_1, &refcnt_intel_snb },
	{ 0x3e, V6_1, &refcnt_intel_snb }, /* Ivy Bridge X */
	{ 0x3c, V6_1, &refcnt_intel_hsw },
	{ 0x3f, V6_1, &refcnt_intel_hsw }, /* Haswell X */
	{ 0x45, V6_1, &refcnt_intel_hsw },
	{ 0x46, V6_1, &refcnt_intel_hsw },
	{ 0x3d, V6_1, &refcnt_intel_skl }, /* Broadwell */
	{ 0x47, V6_1, &refcnt_intel_skl },
	{ 0x4f, V6_1, &refcnt_intel_skl }, /* Broadwell X */
	{ 0x56, V6_1, &refcnt_intel_skl }, /* Broadwell D */
	{ 0x4e, V6_1, &refcnt_intel_skl }, /* Skylake */
	{ 0x5e, V6_1, &refcnt_intel_skl },
	{ 0x55, V6_1, &refcnt_intel_skl }, /* Skylake X, Cascade/Cooper Lake */
	{ 0x8e, V6_1, &refcnt_intel_skl }, /* Kaby Lake */
	{ 0x9e, V6_1, &refcnt_intel_skl },
	{ 0xa5, V6_1, &refcnt_intel_skl }, /* Comet Lake */
	{ 0xa6, V6_1, &refcnt_intel_skl },
	{ 0x6a, V6_1, &refcnt_intel_skl }, /* Ice Lake X */
	{ 0x6c, V6_1, &refcnt_intel_skl }, /* Ice Lake D */
	{ 0x7d, V6_1, &refcnt_intel_skl },
	{ 0x7e, V6_1, &refcnt_intel_skl },
	{ 0x8c, V6_1, &refcnt_intel_skl }, /* Tiger Lake */
	{ 0x8d, V6_1, &refcnt_intel_skl },
	{ 0xa7, V6_1, &refcnt_intel_skl }, /* Rocket Lake */
	{ 0x8f, V6_1, &refcnt_intel_glc_aux }, /* Sapphire Rapids X */
	{ 0xcf, V6_1, &refcnt_intel_glc_aux }, /* Emerald Rapids X */
	{ 0xad, V6_12, &refcnt_intel_glc }, /* Granite Rapids X */
	{ 0xae, V6_12, &refcnt_intel_glc }, /* Granite Rapids D */
	{ 0xbe, V6_1, &refcnt_intel_grt }, /* Alder Lake N */
	{ 0xaf, V6_12, &refcnt_intel_grt }, /* Sierra Forest */
	{ 0xb6, V6_12, &refcnt_intel_grt }, /* Grand Ridge */
	{ 0x97, V6_1, NULL, &refcnt_intel_glc_aux, &refcnt_intel_grt }, /* ADL */
	{ 0x9a, V6_1, NULL, &refcnt_intel_glc_aux, &refcnt_intel_grt },
	{ 0xb7, V6_1, NULL, &refcnt_intel_glc_aux, &refcnt_intel_grt }, /* RPL */
	{ 0xba, V6_1, NULL, &refcnt_intel_glc_aux, &refcnt_intel_grt },
	{ 0xbf, V6_1, NULL, &refcnt_intel_glc_aux, &refcnt_intel_grt },
	{ 0xaa, V6_12, NULL, &refcnt_intel_glc, &refcnt_intel_grt }, /* MTL */
	{ 0xac, V6_12, NULL, &refcnt_intel_glc, &refcnt_intel_grt },
	{ 0xb5, V6_12, NULL, &refcnt_intel_glc, &refcnt_intel_grt }, /* ARL U */
	{ 0xbd, V6_12, NULL, &refcnt_intel_glc, &refcnt_intel_grt }, /* LNL */
	{ 0xc6, V6_12, NULL, &refcnt_intel_glc, &refcnt_intel_grt }, /* ARL */
};

static const struct refcnt_intel_model *refcnt_intel_model(u8 family, u8 model)
{
	unsigned int i;

	if (family != 6)
		return NULL;
	for (i = 0; i < ARRAY_SIZE(refcnt_intel_models); i++)
		if (refcnt_intel_models[i].model == model)
			return &refcnt_intel_models[i];
	return NULL;
}

/* The core type a CPU's PMU serves, by the name perf registered it with. */
static const struct refcnt_intel_core *
refcnt_intel_core(const struct refcnt_intel_model *m, const char *pmu)
{
	if (!pmu)
		return NULL;
	if (!strcmp(pmu, "cpu"))
		return m->cpu;
	if (!strcmp(pmu, "cpu_core"))
		return m->core;
	if (!strcmp(pmu, "cpu_atom"))
		return m->atom;
	return NULL;
}

/* What the user asked, against what this core takes. */
static int refcnt_intel_check(const struct refcnt_intel_core *c,
			      const struct refcnt_pmu_params *p,
			      const char **why)
{
	if (refcnt_pmu_ldlat_check(p->ldlat)) {
		*why = "pebs_ldlat must be 0 (every load) or 3 to 65535 cycles";
		return -EINVAL;
	}
	if (p->period < c->min_period) {
		*why = "period below 32, the smallest this PMU takes";
		return -EINVAL;
	}
	if (p->period > REFCNT_INTEL_MAX_PERIOD) {
		*why = "period above 2^31-1, the largest the counters take";
		return -EINVAL;
	}
	if (!p->ldlat && !c->all_loads) {
		*why = "only the load-latency event has data addresses here: set pebs_ldlat";
		return -EINVAL;
	}
	if (p->memside && !p->ldlat && !c->l3_miss) {
		*why = "memory-side mode needs a load-latency threshold (pebs_ldlat) on this core";
		return -EINVAL;
	}
	return 0;
}

/* One precise user-space event of @type sampling @config every @period. */
static void refcnt_intel_attr(struct perf_event_attr *attr, u32 type,
			      u64 config, u32 period)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = type;
	attr->config = config;
	attr->sample_period = period;
	attr->sample_type = PERF_SAMPLE_ADDR;
	/* Constant skid is enough: we want the data address, not the IP. */
	attr->precise_ip = 1;
	attr->exclude_kernel = 1;
	/* As perf's :p: in a guest PEBS would write guest addresses. */
	attr->exclude_guest = 1;
	/* One overflow call per sample: no auto-reload, no large PEBS. */
	attr->wakeup_events = 1;
}

/*
 * Memory-side mode where the core has MEM_LOAD_RETIRED.L3_MISS: every
 * retired load that missed the L3 counts, so a sample stands for the
 * period's loads, each gone beyond the caches. The load-latency event
 * tags loads at random and wants an aux leader for its data source on
 * some cores; this one needs neither a threshold nor a data source (its
 * record has no level to test), and no store can miss the L3 as a load.
 */
static void refcnt_intel_plan_l3_miss(const struct refcnt_intel_core *c,
				      const struct refcnt_pmu_cpu *cpu,
				      const struct refcnt_pmu_params *p,
				      struct refcnt_pmu_plan *plan)
{
	struct refcnt_pmu_event *ev = &plan->ev[plan->nr++];

	refcnt_intel_attr(&ev->attr, cpu->pmu_type, c->l3_miss, p->period);
	ev->stream.op = REFCNT_PMU_LOADS;
	if (p->ldlat)
		plan->note = "memory-side on MEM_LOAD_RETIRED.L3_MISS: pebs_ldlat not used";
}

/**
 * refcnt_intel_plan() - the PEBS events for one Intel CPU
 * @cpu:	the CPU; @cpu->pmu and @cpu->pmu_type name its core PMU
 * @p:		what the user asked
 * @plan:	filled in
 * @why:	on error (and for @plan->note), the reason
 *
 * In memory-side mode, every load that missed the L3 where the core has
 * the event (refcnt_intel_plan_l3_miss()). Else mem-loads, with the
 * threshold @p->ldlat, or with none every retired
 * load; mem-stores beside it, except in memory-side mode, where a store
 * could never count (its record has no data source beyond L1). The data
 * source is asked for with the threshold, except where the kernel wants
 * the mem-loads-aux group leader for it (require_mem_loads_aux_event():
 * -ENODATA without one), since perf_event_create_kernel_counter() makes
 * no groups: there the threshold alone selects memory-side loads.
 *
 * Return: 0, -EOPNOTSUPP (no such events on this CPU or kernel) or
 * -EINVAL (the PMU refuses what was asked).
 */
int refcnt_intel_plan(const struct refcnt_pmu_cpu *cpu,
		      const struct refcnt_pmu_params *p,
		      struct refcnt_pmu_plan *plan, const char **why)
{
	const struct refcnt_intel_model *m;
	const struct refcnt_intel_core *c;
	struct refcnt_pmu_event *ev;
	bool src;
	int err;

	m = refcnt_intel_model(cpu->family, cpu->model);
	if (!m) {
		*why = "no PEBS memory events known for this Intel CPU model";
		return -EOPNOTSUPP;
	}
	if (cpu->kver < m->since) {
		*why = "this kernel does not know this CPU's PEBS memory events (needs 6.12)";
		return -EOPNOTSUPP;
	}
	c = refcnt_intel_core(m, cpu->pmu);
	if (!c) {
		*why = "this CPU's core PMU has no PEBS memory events";
		return -EOPNOTSUPP;
	}
	err = refcnt_intel_check(c, p, why);
	if (err)
		return err;
	if (p->memside && c->l3_miss) {
		refcnt_intel_plan_l3_miss(c, cpu, p, plan);
		return 0;
	}

	src = p->ldlat && !c->aux;
	ev = &plan->ev[plan->nr++];
	refcnt_intel_attr(&ev->attr, cpu->pmu_type,
			  p->ldlat ? c->loads : c->all_loads, p->period);
	ev->attr.config1 = p->ldlat;
	if (src)
		ev->attr.sample_type |= PERF_SAMPLE_DATA_SRC;
	ev->stream.op = REFCNT_PMU_LOADS;
	if (p->memside && src)
		ev->stream.flags = REFCNT_PMU_MEMSIDE;
	/* The kernel wants a group for it: memory-side by latency alone. */
	if (p->memside && !src)
		plan->note = "no data source without mem-loads-aux: memory-side by threshold";

	if (p->memside || !c->stores)
		return 0;
	ev = &plan->ev[plan->nr++];
	refcnt_intel_attr(&ev->attr, cpu->pmu_type, c->stores, p->period);
	ev->stream.op = REFCNT_PMU_STORES;
	return 0;
}
