// SPDX-License-Identifier: GPL-2.0
/*
 * rules.c: what the kernels do with refcnt's PMU events, from their
 * sources: Debian's linux-source-6.1 (6.1.192) and linux-source-6.12
 * (6.12.95), and the newest mainline read (arch/x86/events/amd/ibs.c with
 * the IBS software privilege filter, intel/core.c with arch-PEBS). Every
 * refusal names the file and function whose rule it is.
 *
 * Only the rules that can touch the attributes of a sampling, precise,
 * kernel-counter event are written; the machines only hold the facts
 * those rules read (x86_pmu fields per core PMU, get_ibs_caps()).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <linux/version.h>

#include "pmu.h"
#include "rules.h"

const char *const krn_name[NR_KRN] = { "6.1", "6.12", "newest" };
const u32 krn_version[NR_KRN] = {
	KERNEL_VERSION(6, 1, 192), KERNEL_VERSION(6, 12, 95),
	KERNEL_VERSION(6, 18, 0),
};

/* perf types: the core PMU ("cpu", "cpu_core") is PERF_TYPE_RAW. */
#define TYPE_ATOM	8	/* cpu_atom: perf_pmu_register(..., -1) */
#define TYPE_IBS_OP	11	/* ibs_op: perf_pmu_register(..., -1) */

/*
 * PEBS constraints (arch/x86/events/intel/ds.c intel_*_pebs_event_
 * constraints[]) for the configs refcnt may program.
 */
static const struct pebs_c nhm_pebs[] = {
	{ 0x100b, false, PEBS_LDLAT },		/* INTEL_PLD_CONSTRAINT */
	{ 0 }
};

static const struct pebs_c snb_pebs[] = {
	{ 0x01cd, false, PEBS_LDLAT },		/* INTEL_PLD_CONSTRAINT */
	{ 0x02cd, false, PEBS_ST },		/* INTEL_PST_CONSTRAINT */
	{ 0x00d0, true, PEBS_UNTAGGED },	/* INTEL_EXCLEVT_CONSTRAINT(0xd0) */
	{ 0 }
};

static const struct pebs_c hsw_pebs[] = {
	{ 0x01cd, false, PEBS_LDLAT },
	{ 0x81d0, false, PEBS_LD_HSW },		/* ..._DATALA_LD/_XLD */
	{ 0x82d0, false, PEBS_ST_HSW },		/* ..._DATALA_ST/_XST */
	/* MEM_LOAD_[UOPS_]RETIRED.L3_MISS: DATALA_XLD(0xd1) on Haswell,
	 * DATALA_LD(0xd1) to Skylake, DATALA_LD_RANGE(0xd1, 0xd4) on Ice Lake */
	{ 0x20d1, false, PEBS_LD_HSW },
	{ 0 }
};

static const struct pebs_c glc_pebs[] = {
	{ 0x01cd, false, PEBS_LDLAT },
	{ 0x02cd, false, PEBS_STLAT },		/* INTEL_PSD_CONSTRAINT */
	{ 0x81d0, false, PEBS_LD_HSW },
	{ 0x82d0, false, PEBS_ST_HSW },
	{ 0x20d1, false, PEBS_LD_HSW },		/* DATALA_LD_RANGE(0xd1, 0xd4) */
	{ 0 }
};

static const struct pebs_c lnc_pebs[] = {
	{ 0x01cd, false, PEBS_LAT_HYBRID },	/* INTEL_HYBRID_LDLAT_CONSTRAINT */
	{ 0x02cd, false, PEBS_LAT_HYBRID },	/* INTEL_HYBRID_STLAT_CONSTRAINT */
	{ 0x81d0, false, PEBS_LD_HSW },
	{ 0x82d0, false, PEBS_ST_HSW },
	{ 0x20d1, false, PEBS_LD_HSW },		/* DATALA_LD_RANGE(0xd1, 0xd4) */
	{ 0 }
};

static const struct pebs_c grt_pebs[] = {
	{ 0x05d0, false, PEBS_LAT_HYBRID },	/* INTEL_HYBRID_LAT_CONSTRAINT */
	{ 0x06d0, false, PEBS_LAT_HYBRID },
	{ 0 }
};

/* LDLAT extra registers (intel/core.c intel_*_extra_regs[]). */
static const u16 nhm_ldlat[] = { 0x100b, 0 };
static const u16 core_ldlat[] = { 0x01cd, 0 };
static const u16 grt_ldlat[] = { 0x05d0, 0 };

/* One core PMU of each kind, as intel_pmu_init() sets it up. */
static const struct intel_pmu nhm = { "cpu", PERF_TYPE_RAW, 2, 1, false, false, 32, nhm_pebs, nhm_ldlat };
static const struct intel_pmu wsm = { "cpu", PERF_TYPE_RAW, 2, 1, false, false, 0, nhm_pebs, nhm_ldlat };
static const struct intel_pmu snb = { "cpu", PERF_TYPE_RAW, 2, 1, false, false, 0, snb_pebs, core_ldlat };
static const struct intel_pmu ivb = { "cpu", PERF_TYPE_RAW, 3, 1, false, false, 0, snb_pebs, core_ldlat };
static const struct intel_pmu hsw = { "cpu", PERF_TYPE_RAW, 3, 2, false, false, 32, hsw_pebs, core_ldlat };
static const struct intel_pmu bdw = { "cpu", PERF_TYPE_RAW, 3, 2, false, false, 0, hsw_pebs, core_ldlat };
static const struct intel_pmu skl = { "cpu", PERF_TYPE_RAW, 3, 3, false, false, 0, hsw_pebs, core_ldlat };
static const struct intel_pmu icl = { "cpu", PERF_TYPE_RAW, 3, 4, true, false, 0, hsw_pebs, core_ldlat };
static const struct intel_pmu spr = { "cpu", PERF_TYPE_RAW, 3, 4, true, true, 0, glc_pebs, core_ldlat };
static const struct intel_pmu gnr = { "cpu", PERF_TYPE_RAW, 3, 5, true, false, 0, glc_pebs, core_ldlat };
static const struct intel_pmu grt = { "cpu", PERF_TYPE_RAW, 3, 4, true, false, 0, grt_pebs, grt_ldlat };
/* A model the kernel does not know: "generic_arch_v5+", no PEBS tables. */
static const struct intel_pmu generic = { "cpu", PERF_TYPE_RAW, 3, 4, true, false, 0, NULL, NULL };

struct intel_model {
	u8 model;
	const char *name;
	const struct intel_pmu *cpu;		/* one core type */
	const struct intel_pmu *core, *atom;	/* hybrid */
	bool core_aux;				/* hybrid: PMU_FL_MEM_LOADS_AUX */
	bool lnc;				/* hybrid: Lion Cove constraints */
	enum krn since;
};

static const struct intel_model intel_models[] = {
	{ 0x1e, "nehalem", &nhm }, { 0x2c, "westmere-ep", &wsm },
	{ 0x2a, "sandybridge", &snb }, { 0x3e, "ivybridge-x", &ivb },
	{ 0x3f, "haswell-x", &hsw }, { 0x4f, "broadwell-x", &bdw },
	{ 0x55, "skylake-x", &skl }, { 0x6a, "icelake-x", &icl },
	{ 0x8f, "sapphirerapids-x", &spr }, { 0xcf, "emeraldrapids-x", &spr },
	{ 0xad, "graniterapids-x", &gnr, .since = K6_12 },
	{ 0xbe, "alderlake-n", &grt },
	{ 0xaf, "sierraforest", &grt, .since = K6_12 },
	{ 0x97, "alderlake", NULL, &gnr, &grt, .core_aux = true },
	{ 0xb7, "raptorlake", NULL, &gnr, &grt, .core_aux = true },
	{ 0xaa, "meteorlake", NULL, &gnr, &grt, .since = K6_12 },
	{ 0xbd, "lunarlake", NULL, &gnr, &grt, .lnc = true, .since = K6_12 },
};

/* Set @m up as kernel @k does on the Intel family 6 @model. */
void machine_intel(struct machine *m, enum krn k, u8 model)
{
	const struct intel_model *im = NULL;
	unsigned int i;
	int c;

	memset(m, 0, sizeof(*m));
	m->vendor = REFCNT_PMU_INTEL;
	m->family = 6;
	m->model = model;
	m->nr_cpus = MAX_CPUS;
	for (i = 0; i < ARRAY_SIZE(intel_models); i++)
		if (intel_models[i].model == model)
			im = &intel_models[i];
	m->nr_pmus = 1;
	m->pmu[0] = generic;
	m->name = im ? im->name : "unknown";
	if (!im || k < im->since)
		return;
	if (im->cpu) {
		m->pmu[0] = *im->cpu;
		return;
	}
	/* Hybrid: CPUs 0-7 P-cores, 8-15 E-cores (init_hw_perf_events()). */
	m->nr_pmus = 2;
	m->pmu[0] = *im->core;
	m->pmu[0].name = "cpu_core";
	m->pmu[0].mem_loads_aux = im->core_aux;
	if (im->lnc)
		m->pmu[0].pebs = lnc_pebs;
	m->pmu[1] = *im->atom;
	m->pmu[1].name = "cpu_atom";
	m->pmu[1].type = TYPE_ATOM;
	for (c = MAX_CPUS / 2; c < MAX_CPUS; c++)
		m->cpu_pmu[c] = 1;
}

/* Set @m up as an AMD (or Hygon) CPU whose IBS reports @ibs_caps. */
void machine_amd(struct machine *m, const char *name, u8 family, u8 model,
		 u32 ibs_caps)
{
	memset(m, 0, sizeof(*m));
	m->name = name;
	m->vendor = REFCNT_PMU_AMD;
	m->family = family;
	m->model = model;
	m->nr_cpus = MAX_CPUS;
	m->ibs_caps = ibs_caps;
}

static struct verdict refuse(int err, const char *rule)
{
	return (struct verdict){ .err = err, .rule = rule };
}

static bool any_exclude(const struct perf_event_attr *a)
{
	/* kernel/events/core.c event_has_any_exclude_flag() */
	return a->exclude_idle || a->exclude_user || a->exclude_kernel ||
	       a->exclude_hv || a->exclude_guest || a->exclude_host;
}

static const struct pebs_c *pebs_find(const struct intel_pmu *p, u64 config)
{
	const struct pebs_c *c;

	for (c = p->pebs; c && c->config; c++)
		if ((config & (c->event_only ? 0xff : 0xffff)) == c->config)
			return c;
	return NULL;
}

static bool ldlat_reg(const struct intel_pmu *p, u64 config)
{
	const u16 *c;

	for (c = p->ldlat; c && *c; c++)
		if ((config & 0xffff) == *c)
			return true;
	return false;
}

/* The core PMU perf_init_event() reaches for @a on @cpu (-1: any). */
static const struct intel_pmu *intel_route(const struct machine *m,
					   const struct perf_event_attr *a,
					   int cpu)
{
	int i;

	for (i = 0; i < m->nr_pmus; i++) {
		/* arch/x86/events/core.c x86_pmu_event_init(): the type. */
		if (a->type != m->pmu[i].type)
			continue;
		/* ... and on hybrid parts, the CPU (supported_cpus). */
		if (cpu >= 0 && m->nr_pmus > 1 && m->cpu_pmu[cpu] != i)
			continue;
		return &m->pmu[i];
	}
	return NULL;
}

static struct verdict intel_create(enum krn k, const struct machine *m,
				   const struct perf_event_attr *a, int cpu)
{
	const struct intel_pmu *p = intel_route(m, a, cpu);
	const struct pebs_c *c;
	struct verdict v = { .err = 0 };
	u64 large;

	if (!p)
		return refuse(-ENOENT, "kernel/events/core.c perf_init_event(), arch/x86/events/core.c x86_pmu_event_init(): no core PMU of this type serves the CPU");
	v.pmu = p->name;
	if (a->precise_ip > p->max_precise)
		return refuse(-EOPNOTSUPP, "arch/x86/events/core.c x86_pmu_hw_config(): precise_ip above x86_pmu_max_precise()");
	if (a->precise_ip && !a->sample_period && !a->freq)
		return refuse(-EINVAL, "arch/x86/events/core.c x86_pmu_hw_config(): PEBS needs a sampling event");
	if (a->sample_period && !a->freq && a->sample_period < p->min_period)
		return refuse(-EINVAL, "arch/x86/events/core.c x86_pmu_hw_config(): limit_period() raises the period (nhm_/hsw_limit_period())");
	if (ldlat_reg(p, a->config) && (a->config1 & ~0xffffULL))
		return refuse(-EINVAL, "arch/x86/events/core.c x86_pmu_extra_regs(): config1 beyond the LDLAT register's valid_mask 0xffff");
	/* arch/x86/events/intel/core.c intel_pmu_hw_config() */
	if (a->precise_ip && !(a->freq || (a->wakeup_events && !a->watermark))) {
		v.auto_reload = true;
		large = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ADDR |
			PERF_SAMPLE_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_STREAM_ID |
			PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_IDENTIFIER |
			PERF_SAMPLE_TRANSACTION | PERF_SAMPLE_PHYS_ADDR |
			PERF_SAMPLE_REGS_INTR | PERF_SAMPLE_REGS_USER |
			PERF_SAMPLE_PERIOD | PERF_SAMPLE_CODE_PAGE_SIZE |
			PERF_SAMPLE_WEIGHT_TYPE;	/* LARGE_PEBS_FLAGS */
		if (p->pebs_format >= 3)		/* ds.c intel_ds_init() */
			large |= PERF_SAMPLE_TIME;
		if (p->baseline)
			large |= PERF_SAMPLE_BRANCH_STACK;
		/* newest: && !has_aux_action(event); refcnt sets none. */
		if (!(a->sample_type & ~large) && !a->aux_sample_size)
			v.large_pebs = true;
	}
	if (p->mem_loads_aux && (a->sample_type & PERF_SAMPLE_DATA_SRC) &&
	    (a->config & 0xffff) == 0x01cd)
		return refuse(-ENODATA, "arch/x86/events/intel/core.c intel_pmu_hw_config(): require_mem_loads_aux_event() and no mem-loads-aux leader (a kernel counter has no group)");
	/* ds.c intel_pebs_constraints(): a constraint, or PMU_FL_PEBS_ALL. */
	c = pebs_find(p, a->config);
	v.scheduled = c || p->baseline;
	/* ds.c setup_pebs_*_sample_data(): where the data address is real. */
	if (a->sample_type & PERF_SAMPLE_ADDR)
		v.data_addr = p->baseline ||
			      (c && c->kind != PEBS_UNTAGGED && c->kind != PEBS_ANY);
	/* ds.c get_data_src(): a memory level for loads with a latency. */
	if (a->sample_type & PERF_SAMPLE_DATA_SRC)
		v.data_src = c && (c->kind == PEBS_LDLAT ||
				   c->kind == PEBS_LAT_HYBRID);
	return v;
}

/* get_ibs_caps() bits and IbsOpCtl fields (arch/x86/include/asm/perf_event.h). */
#define IBS_CAPS_OPCNT		(1U << 4)
#define IBS_CAPS_OPCNTEXT	(1U << 6)
#define IBS_CAPS_ZEN4		(1U << 11)
#define IBS_OP_CNT_CTL		(1ULL << 19)
#define IBS_OP_MAX_CNT		0xffffULL
#define IBS_OP_MAX_CNT_EXT	(0x7fULL << 20)
#define IBS_OP_L3MISSONLY	(1ULL << 16)

static struct verdict amd_create(enum krn k, const struct machine *m,
				 const struct perf_event_attr *a, bool task)
{
	struct verdict v = { .pmu = "cpu" };
	u64 config = a->config, mask;

	if (!a->precise_ip || !m->ibs_caps)
		return refuse(-EINVAL, "refcnt: not an IBS event (the core PMU would count, without data addresses)");
	/* amd/core.c amd_pmu_hw_config() -> amd/ibs.c forward_event_to_ibs() */
	if (a->precise_ip > 2)
		return refuse(-EOPNOTSUPP, "arch/x86/events/amd/ibs.c forward_event_to_ibs(): precise_ip above 2");
	if (a->type == PERF_TYPE_HARDWARE && a->config == PERF_COUNT_HW_CPU_CYCLES)
		config = 0;
	else if (a->type == PERF_TYPE_RAW && a->config == 0x76)
		config = 0;
	else if (a->type == PERF_TYPE_RAW && a->config == 0xc1)
		config = IBS_OP_CNT_CTL;
	else
		return refuse(-EOPNOTSUPP, "arch/x86/events/amd/ibs.c core_pmu_ibs_config(): no IBS alias for this event");
	v.pmu = "ibs_op";
	v.counts = config & IBS_OP_CNT_CTL ? "ops" : "cycles";
	/* 6.1: perf_ibs_op.pmu.task_ctx_nr = perf_invalid_context. */
	if (task && k == K6_1)
		return refuse(-EINVAL, "kernel/events/core.c find_get_context(): IBS has no task context at 6.1 (perf_invalid_context)");
	/* amd/ibs.c perf_ibs_init() and perf_event_ibs_init()'s config_mask */
	mask = IBS_OP_MAX_CNT;
	if (m->ibs_caps & IBS_CAPS_OPCNT)
		mask |= IBS_OP_CNT_CTL;
	if (m->ibs_caps & IBS_CAPS_OPCNTEXT)
		mask |= IBS_OP_MAX_CNT_EXT;
	if (m->ibs_caps & IBS_CAPS_ZEN4)
		mask |= IBS_OP_L3MISSONLY;
	if (config & ~mask)
		return refuse(-EINVAL, "arch/x86/events/amd/ibs.c perf_ibs_init(): config outside config_mask (IbsOpCntCtl needs IBS_CAPS_OPCNT)");
	if (k >= K6_12 && a->sample_type & PERF_SAMPLE_BRANCH_STACK)
		return refuse(-EOPNOTSUPP, "arch/x86/events/amd/ibs.c perf_ibs_init(): no branch stack");
	if (k == KNEWEST) {
		if (a->exclude_host || a->exclude_guest || a->exclude_idle)
			return refuse(-EINVAL, "arch/x86/events/amd/ibs.c perf_ibs_init(): exclude_host/guest/idle");
		if (!(a->config2 & 1) && (a->exclude_kernel || a->exclude_user ||
					  a->exclude_hv))
			return refuse(-EINVAL, "arch/x86/events/amd/ibs.c perf_ibs_init(): exclude_{kernel,user,hv} need the software filter (config2:0)");
	}
	if (!a->sample_period && !a->freq)
		return refuse(-EINVAL, "arch/x86/events/amd/ibs.c perf_ibs_init(): no period");
	if (!a->freq && (a->sample_period & 0xf))
		return refuse(-EINVAL, "arch/x86/events/amd/ibs.c perf_ibs_init(): period not a multiple of 16 (IbsOpMaxCnt counts in 16s)");
	/* kernel/events/core.c perf_try_init_event(): PERF_PMU_CAP_NO_EXCLUDE */
	if (k < KNEWEST && any_exclude(a))
		return refuse(-EINVAL, "kernel/events/core.c perf_try_init_event(): IBS has PERF_PMU_CAP_NO_EXCLUDE");
	/* amd/ibs.c perf_ibs_get_offset_max(), perf_ibs_parse_ld_st_data() */
	v.scheduled = true;
	v.data_addr = a->sample_type & PERF_SAMPLE_ADDR;
	v.data_src = a->sample_type & PERF_SAMPLE_DATA_SRC;
	return v;
}

/**
 * kernel_create() - what perf_event_create_kernel_counter() does with @attr
 * @k:		the kernel
 * @m:		the machine
 * @attr:	the attributes
 * @cpu:	the CPU of a CPU event, or -1 with @task
 * @task:	a task event (a counting session's)
 *
 * Return: the verdict.
 */
struct verdict kernel_create(enum krn k, const struct machine *m,
			     const struct perf_event_attr *attr, int cpu,
			     bool task)
{
	if (m->vendor == REFCNT_PMU_AMD)
		return amd_create(k, m, attr, task);
	if (m->vendor == REFCNT_PMU_INTEL)
		return intel_create(k, m, attr, cpu);
	return refuse(-ENOENT, "kernel/events/core.c perf_init_event(): no PMU");
}
