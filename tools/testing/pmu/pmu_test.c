// SPDX-License-Identifier: GPL-2.0
/*
 * pmu_test: the attributes refcnt's PEBS/IBS feed programs, built by the
 * very code of kmod/pmu_intel.c and kmod/pmu_amd.c, against the rules of
 * every kernel refcnt supports (rules.c), for every vendor and CPU
 * generation; and the sample code of kmod/pmu.c (memory-side data
 * sources, what counts, weights). Each test also runs the feed's old
 * attributes through the same rules and expects them refused: the rules
 * are what would have caught them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kselftest_harness.h"

#include "compat.h"
#include "pmu.h"
#include "rules.h"

#define DS(a, s)	PERF_MEM_S(a, s)
#define LVLNUM(x)	((u64)(x) << PERF_MEM_LVLNUM_SHIFT)

/*
 * Whether an Intel model is a hybrid part (X86_FEATURE_HYBRID_CPU): the
 * newest kernel gives it two core PMUs.
 */
static bool intel_is_hybrid(u8 model)
{
	struct machine n;

	machine_intel(&n, KNEWEST, model);
	return n.nr_pmus > 1;
}

/*
 * CPU @cpu of @m, as kmod/pmu_x86.c describes it on kernel @k: its core
 * PMU from refcnt_pmu_core_default(), or on a hybrid part from a probe
 * (the PMU the kernel gives the CPU).
 */
static void describe(enum krn k, const struct machine *m, int cpu,
		     struct refcnt_pmu_cpu *d)
{
	const struct intel_pmu *p = &m->pmu[m->cpu_pmu[cpu]];

	*d = (struct refcnt_pmu_cpu){
		.vendor = m->vendor, .family = m->family, .model = m->model,
		.kver = krn_version[k], .ibs_caps = m->ibs_caps,
	};
	if (m->vendor == REFCNT_PMU_INTEL &&
	    !refcnt_pmu_core_default(intel_is_hybrid(m->model), d)) {
		d->pmu = p->name;
		d->pmu_type = p->type;
	}
}

/* What must hold of a verdict on an event refcnt makes: NULL, or what not. */
static const char *verdict_bad(const struct machine *m, const struct verdict *v,
			       const struct refcnt_pmu_stream *s)
{
	if (v->err)
		return v->rule;
	if (v->large_pebs)
		return "intel/core.c intel_pmu_hw_config(): LARGE_PEBS: the drain gives all records of a buffer but the last to perf_event_output()";
	if (v->auto_reload)
		return "intel/core.c intel_pmu_hw_config(): AUTO_RELOAD: several records per PMI, all but the last to perf_event_output()";
	if (!v->scheduled)
		return "intel/ds.c intel_pebs_constraints(): no PEBS constraint, the event never gets a counter";
	if (!v->data_addr)
		return "samples without a data address";
	if (s->flags & REFCNT_PMU_MEMSIDE && !v->data_src)
		return "memory-side mode on samples without a data source";
	if (m->vendor == REFCNT_PMU_AMD && strcmp(v->counts, "ops"))
		return "amd/ibs.c core_pmu_ibs_config(): IBS counting cycles: a period of N cycles is not N references";
	return NULL;
}

/* An event of a plan on @cpu (or a task's), its fallback if refused. */
static const char *event_bad(enum krn k, const struct machine *m,
			     const struct refcnt_pmu_event *e, int cpu,
			     bool task, struct verdict *v)
{
	*v = kernel_create(k, m, &e->attr, task ? -1 : cpu, task);
	if (v->err == -EINVAL && e->has_fallback)
		*v = kernel_create(k, m, &e->fallback, task ? -1 : cpu, task);
	return verdict_bad(m, v, &e->stream);
}

/*
 * Plan every core PMU of @m as the feed does and check each event.
 * Return: the planners' error for the first PMU that refused (0 when
 * every PMU had a plan), *@events the events checked; a violated rule
 * is a test failure.
 */
static int plan_machine(struct __test_metadata *_metadata, enum krn k,
			const struct machine *m, const struct refcnt_pmu_params *p,
			bool task, int *events)
{
	struct refcnt_pmu_plan plan;
	struct refcnt_pmu_cpu d;
	const char *why, *bad;
	struct verdict v;
	int i, cpu, err, first = 0;
	unsigned int e;

	*events = 0;
	for (i = 0; i < (m->vendor == REFCNT_PMU_INTEL ? m->nr_pmus : 1); i++) {
		for (cpu = 0; m->cpu_pmu[cpu] != i; cpu++)
			;
		describe(k, m, cpu, &d);
		err = refcnt_pmu_plan(&d, p, &plan, &why);
		if (err) {
			EXPECT_NE(NULL, why);
			first = first ?: err;
			continue;
		}
		for (e = 0; e < plan.nr; e++) {
			bad = event_bad(k, m, &plan.ev[e], cpu, task, &v);
			if (bad)
				TH_LOG("%s %s on %s, event %u config %#llx: %s",
				       m->name, krn_name[k], d.pmu ?: "ibs", e,
				       (unsigned long long)plan.ev[e].attr.config,
				       bad);
			EXPECT_EQ(NULL, bad);
		}
		*events += plan.nr;
	}
	return first;
}

static const u8 intel_models[] = {
	0x1e, 0x2c, 0x2a, 0x3e, 0x3f, 0x4f, 0x55, 0x6a, 0x8f, 0xcf, 0xad,
	0xbe, 0xaf, 0x97, 0xb7, 0xaa, 0xbd,
};

/* Models whose only load event with a data address is the load-latency one. */
static bool intel_ldlat_only(u8 model)
{
	return model == 0x1e || model == 0x2c || model == 0x2a || model == 0x3e;
}

/* Models a kernel first knows at 6.12 (intel_pmu_init()'s switch). */
static bool intel_new_in_6_12(u8 model)
{
	return model == 0xad || model == 0xaf || model == 0xaa || model == 0xbd;
}

/*
 * Every Intel generation on every kernel, every mode: every loads, a
 * latency threshold, memory-side. Each event the kernel takes, as a CPU
 * event and as a task event; none turns on large PEBS or auto-reload;
 * each has a PEBS constraint and a data address; memory-side streams have
 * a data source. A kernel that does not know the model gets no plan.
 */
TEST(intel_every_generation_every_kernel)
{
	const struct refcnt_pmu_params modes[] = {
		{ .period = 10007, .ldlat = 0 },
		{ .period = 10007, .ldlat = 30 },
		{ .period = 10007, .ldlat = 128, .memside = true },
	};
	struct machine m;
	unsigned int i, j, checked = 0;
	int k, err, events;

	for (k = 0; k < NR_KRN; k++) {
		for (i = 0; i < ARRAY_SIZE(intel_models); i++) {
			machine_intel(&m, k, intel_models[i]);
			for (j = 0; j < ARRAY_SIZE(modes); j++) {
				err = plan_machine(_metadata, k, &m, &modes[j],
						   false, &events);
				if (k == K6_1 && intel_new_in_6_12(m.model)) {
					EXPECT_EQ(-EOPNOTSUPP, err);
					continue;
				}
				if (!modes[j].ldlat && intel_ldlat_only(m.model)) {
					EXPECT_EQ(-EINVAL, err);
					continue;
				}
				EXPECT_EQ(0, err);
				EXPECT_LT(0, events);
				plan_machine(_metadata, k, &m, &modes[j], true,
					     &events);
				checked += events;
			}
		}
	}
	TH_LOG("%u Intel events checked against %d kernels' rules", checked,
	       NR_KRN);
}

/*
 * The probe rule: a part that is not hybrid gets its core PMU without a
 * probe, and it is the one every kernel registers, "cpu" of type
 * PERF_TYPE_RAW (init_hw_perf_events()); a hybrid part is probed.
 */
TEST(intel_probe_only_hybrid)
{
	struct refcnt_pmu_cpu d;
	struct machine m;
	unsigned int i;
	int k, hybrid = 0;

	for (k = 0; k < NR_KRN; k++)
		for (i = 0; i < ARRAY_SIZE(intel_models); i++) {
			machine_intel(&m, k, intel_models[i]);
			memset(&d, 0, sizeof(d));
			if (!refcnt_pmu_core_default(intel_is_hybrid(m.model), &d)) {
				hybrid++;
				continue;
			}
			if (m.nr_pmus != 1)
				TH_LOG("%s %s", m.name, krn_name[k]);
			ASSERT_EQ(1, m.nr_pmus);
			EXPECT_STREQ(m.pmu[0].name, d.pmu);
			EXPECT_EQ(m.pmu[0].type, d.pmu_type);
			EXPECT_EQ((u32)PERF_TYPE_RAW, d.pmu_type);
		}
	/* Alder Lake, Raptor Lake, Meteor Lake, Lunar Lake, on 3 kernels. */
	EXPECT_EQ(4 * NR_KRN, hybrid);
}

/* The exact attributes of one generation, as the report lists them. */
TEST(intel_skylake_attributes)
{
	struct refcnt_pmu_params p = { .period = 10007, .ldlat = 30 };
	struct refcnt_pmu_plan plan;
	struct refcnt_pmu_cpu d;
	struct machine m;
	const char *why;

	machine_intel(&m, K6_12, 0x55);
	describe(K6_12, &m, 0, &d);
	ASSERT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
	ASSERT_EQ(2U, plan.nr);
	EXPECT_EQ(PERF_TYPE_RAW, plan.ev[0].attr.type);
	EXPECT_EQ(0x01cdULL, plan.ev[0].attr.config);
	EXPECT_EQ(30ULL, plan.ev[0].attr.config1);
	EXPECT_EQ(PERF_SAMPLE_ADDR | PERF_SAMPLE_DATA_SRC,
		  plan.ev[0].attr.sample_type);
	EXPECT_EQ(1, (int)plan.ev[0].attr.precise_ip);
	EXPECT_EQ(1, (int)plan.ev[0].attr.exclude_kernel);
	EXPECT_EQ(1, (int)plan.ev[0].attr.exclude_guest);
	EXPECT_EQ(1U, plan.ev[0].attr.wakeup_events);
	EXPECT_EQ(0, (int)plan.ev[0].attr.freq);
	EXPECT_EQ(10007ULL, plan.ev[0].attr.sample_period);
	EXPECT_EQ(REFCNT_PMU_LOADS, plan.ev[0].stream.op);
	EXPECT_EQ(0x82d0ULL, plan.ev[1].attr.config);
	EXPECT_EQ(PERF_SAMPLE_ADDR, plan.ev[1].attr.sample_type);
	EXPECT_EQ(REFCNT_PMU_STORES, plan.ev[1].stream.op);
	/* Every load: MEM_INST_RETIRED.ALL_LOADS, no threshold. */
	p.ldlat = 0;
	ASSERT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_EQ(0x81d0ULL, plan.ev[0].attr.config);
	EXPECT_EQ(0ULL, plan.ev[0].attr.config1);
	EXPECT_EQ(PERF_SAMPLE_ADDR, plan.ev[0].attr.sample_type);
	/*
	 * Memory-side: every load that missed the L3, MEM_LOAD_RETIRED.L3_MISS,
	 * no threshold, no data source to test, no stores.
	 */
	p.ldlat = 0;
	p.memside = true;
	ASSERT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
	ASSERT_EQ(1U, plan.nr);
	EXPECT_EQ(0x20d1ULL, plan.ev[0].attr.config);
	EXPECT_EQ(0ULL, plan.ev[0].attr.config1);
	EXPECT_EQ(PERF_SAMPLE_ADDR, plan.ev[0].attr.sample_type);
	EXPECT_EQ(REFCNT_PMU_LOADS, plan.ev[0].stream.op);
	EXPECT_EQ(0, plan.ev[0].stream.flags);
	EXPECT_EQ(NULL, plan.note);
	/* A threshold has nothing to filter there: the note says so. */
	p.ldlat = 128;
	ASSERT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_EQ(0x20d1ULL, plan.ev[0].attr.config);
	EXPECT_NE(NULL, plan.note);
}

/*
 * Memory-side mode on every Intel generation and kernel: where the core
 * has MEM_LOAD_RETIRED.L3_MISS with a data address (Haswell on, the
 * P-cores), that event alone, which each kernel's rules take as a PEBS
 * DataLA load; elsewhere (Nehalem to Ivy Bridge, the E-cores) the
 * load-latency event, which needs pebs_ldlat.
 */
TEST(intel_memside_on_l3_miss)
{
	const struct refcnt_pmu_params p = { .period = 10007, .memside = true };
	struct refcnt_pmu_plan plan;
	struct refcnt_pmu_cpu d;
	struct machine m;
	const char *why;
	unsigned int i, l3 = 0, other = 0;
	int k, cpu, pmu, err, events;

	for (k = 0; k < NR_KRN; k++)
		for (i = 0; i < ARRAY_SIZE(intel_models); i++) {
			machine_intel(&m, k, intel_models[i]);
			for (pmu = 0; pmu < m.nr_pmus; pmu++) {
				for (cpu = 0; m.cpu_pmu[cpu] != pmu; cpu++)
					;
				describe(k, &m, cpu, &d);
				err = refcnt_pmu_plan(&d, &p, &plan, &why);
				if (err) {
					EXPECT_NE(NULL, why);
					other++;
					continue;
				}
				ASSERT_EQ(1U, plan.nr);
				EXPECT_EQ(0x20d1ULL, plan.ev[0].attr.config)
					TH_LOG("%s %s %s", m.name, krn_name[k],
					       m.pmu[pmu].name);
				EXPECT_EQ(0, plan.ev[0].stream.flags);
				l3++;
			}
			/* The rules take each plan, as a CPU and a task event. */
			err = plan_machine(_metadata, k, &m, &p, false, &events);
			if (!err)
				plan_machine(_metadata, k, &m, &p, true, &events);
		}
	TH_LOG("%u core PMUs sample L3 misses, %u need pebs_ldlat or have no events",
	       l3, other);
	/* Every model of the table from Haswell on, on each kernel that knows it. */
	EXPECT_LT(0U, l3);
	EXPECT_LT(0U, other);
}

/*
 * The feed's attributes before this change, which the rules must refuse:
 * Intel MEM_INST_RETIRED.ALL_LOADS with wakeup_events 0 turned on large
 * PEBS; a mem-loads event with a data source on Sapphire Rapids needs
 * the aux leader a kernel counter cannot have.
 */
TEST(intel_rules_catch_the_old_attributes)
{
	struct refcnt_pmu_event old = {
		.attr = {
			.size = sizeof(struct perf_event_attr),
			.type = PERF_TYPE_RAW, .config = 0x81d0,
			.precise_ip = 2, .exclude_kernel = 1,
			.sample_type = PERF_SAMPLE_ADDR | PERF_SAMPLE_PHYS_ADDR,
			.sample_period = 10007,
		},
		.stream = { REFCNT_PMU_LOADS, 0 },
	};
	const u8 models[] = { 0x3f, 0x4f, 0x55, 0x6a, 0x8f };
	struct verdict v;
	struct machine m;
	unsigned int i;
	int k;

	for (k = 0; k < NR_KRN; k++) {
		for (i = 0; i < ARRAY_SIZE(models); i++) {
			machine_intel(&m, k, models[i]);
			EXPECT_NE(NULL, event_bad(k, &m, &old, 0, false, &v));
			EXPECT_TRUE(v.large_pebs);
		}
	}
	old.attr.config = 0x01cd;
	old.attr.config1 = 30;
	old.attr.wakeup_events = 1;
	old.attr.sample_type = PERF_SAMPLE_ADDR | PERF_SAMPLE_DATA_SRC;
	machine_intel(&m, K6_12, 0x8f);
	EXPECT_NE(NULL, event_bad(K6_12, &m, &old, 0, false, &v));
	EXPECT_EQ(-ENODATA, v.err);
	/* Alder Lake's P-cores need it, its E-cores do not. */
	machine_intel(&m, K6_1, 0x97);
	EXPECT_EQ(-ENODATA, kernel_create(K6_1, &m, &old.attr, 0, false).err);
	old.attr.type = 8;
	old.attr.config = 0x05d0;
	EXPECT_EQ(0, kernel_create(K6_1, &m, &old.attr, 8, false).err);
}

/*
 * Where the kernel wants the mem-loads-aux leader, the load-latency
 * event asks for no data source (the kernel would refuse a kernel
 * counter with -ENODATA). Memory-side mode no longer needs it there:
 * MEM_LOAD_RETIRED.L3_MISS needs neither the leader nor a data source.
 */
TEST(intel_mem_loads_aux)
{
	struct refcnt_pmu_params p = { .period = 1000, .ldlat = 128 };
	struct refcnt_pmu_plan plan;
	struct refcnt_pmu_cpu d;
	struct machine m;
	const char *why;

	machine_intel(&m, K6_12, 0x8f);
	describe(K6_12, &m, 0, &d);
	ASSERT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_EQ(0x01cdULL, plan.ev[0].attr.config);
	EXPECT_EQ(0ULL, plan.ev[0].attr.sample_type & PERF_SAMPLE_DATA_SRC);
	EXPECT_EQ(0, plan.ev[0].stream.flags);
	p.memside = true;
	ASSERT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
	ASSERT_EQ(1U, plan.nr);
	EXPECT_EQ(0x20d1ULL, plan.ev[0].attr.config);
	EXPECT_EQ(0ULL, plan.ev[0].attr.sample_type & PERF_SAMPLE_DATA_SRC);
	/* Granite Rapids' kernel (6.12) does not set PMU_FL_MEM_LOADS_AUX. */
	p.memside = false;
	machine_intel(&m, K6_12, 0xad);
	describe(K6_12, &m, 0, &d);
	ASSERT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_EQ(PERF_SAMPLE_DATA_SRC,
		  plan.ev[0].attr.sample_type & PERF_SAMPLE_DATA_SRC);
}

/*
 * Hybrid parts: each core PMU has its own plan, with its own perf type;
 * a P-core's raw event does not reach the E-cores (perf_init_event()
 * -ENOENT), which is why the feed plans per CPU. A core PMU the table
 * does not know is skipped, not fatal.
 */
TEST(intel_hybrid)
{
	struct refcnt_pmu_params p = { .period = 10007, .ldlat = 64 };
	struct refcnt_pmu_plan core, atom, other;
	struct refcnt_pmu_cpu d;
	struct machine m;
	const char *why;
	struct verdict v;

	machine_intel(&m, K6_1, 0x97);
	describe(K6_1, &m, 0, &d);
	ASSERT_EQ(0, refcnt_pmu_plan(&d, &p, &core, &why));
	describe(K6_1, &m, 15, &d);
	ASSERT_EQ(0, refcnt_pmu_plan(&d, &p, &atom, &why));
	EXPECT_EQ(PERF_TYPE_RAW, core.ev[0].attr.type);
	EXPECT_EQ(0x01cdULL, core.ev[0].attr.config);
	EXPECT_EQ(0x02cdULL, core.ev[1].attr.config);
	EXPECT_EQ(8U, atom.ev[0].attr.type);
	EXPECT_EQ(0x05d0ULL, atom.ev[0].attr.config);
	EXPECT_EQ(0x06d0ULL, atom.ev[1].attr.config);
	EXPECT_EQ(NULL, event_bad(K6_1, &m, &core.ev[0], 0, false, &v));
	EXPECT_STREQ("cpu_core", v.pmu);
	EXPECT_EQ(NULL, event_bad(K6_1, &m, &atom.ev[0], 15, false, &v));
	EXPECT_STREQ("cpu_atom", v.pmu);
	EXPECT_EQ(-ENOENT, kernel_create(K6_1, &m, &core.ev[0].attr, 15,
					 false).err);
	/* A third kind of core, unknown here: skipped, with a reason. */
	d.pmu = "cpu_lowpower";
	d.pmu_type = 9;
	EXPECT_EQ(-EOPNOTSUPP, refcnt_pmu_plan(&d, &p, &other, &why));
	EXPECT_NE(NULL, why);
}

/*
 * Periods and thresholds the PMU refuses, and unknown CPUs: each refusal
 * with the reason the feed prints, its one line in dmesg.
 */
TEST(intel_bad_input)
{
	struct refcnt_pmu_params p = { .period = 31, .ldlat = 30 };
	struct refcnt_pmu_plan plan;
	struct refcnt_pmu_cpu d;
	struct machine m;
	const char *why;

	/* Haswell's hsw_limit_period(): 32 at least. */
	machine_intel(&m, K6_1, 0x3f);
	describe(K6_1, &m, 0, &d);
	EXPECT_EQ(-EINVAL, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_NE(NULL, why);
	EXPECT_NE(NULL, strstr(why, "32"));
	p.period = 32;
	EXPECT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
	/* Skylake takes 1; not more than 2^31 - 1. */
	machine_intel(&m, K6_1, 0x55);
	describe(K6_1, &m, 0, &d);
	p.period = 1;
	EXPECT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
	p.period = 0x80000000U;
	EXPECT_EQ(-EINVAL, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_NE(NULL, why);
	p.period = 0x7fffffff;
	EXPECT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
	/* The SDM's threshold: 3 to 65535 cycles, or 0 for every load. */
	p.ldlat = 2;
	EXPECT_EQ(-EINVAL, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_NE(NULL, why);
	EXPECT_EQ(-EINVAL, refcnt_pmu_ldlat_check(1));
	EXPECT_EQ(-EINVAL, refcnt_pmu_ldlat_check(65536));
	EXPECT_EQ(0, refcnt_pmu_ldlat_check(3));
	EXPECT_EQ(0, refcnt_pmu_ldlat_check(65535));
	EXPECT_EQ(0, refcnt_pmu_ldlat_check(0));
	/*
	 * Memory-side on a core without MEM_LOAD_RETIRED.L3_MISS (Alder
	 * Lake N's Gracemont) needs the load-latency event's data source.
	 */
	machine_intel(&m, K6_1, 0xbe);
	describe(K6_1, &m, 0, &d);
	p.ldlat = 0;
	p.memside = true;
	EXPECT_EQ(-EINVAL, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_NE(NULL, why);
	p.ldlat = 30;
	EXPECT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_EQ(REFCNT_PMU_MEMSIDE, plan.ev[0].stream.flags);
	p.ldlat = 0;
	/* Every load needs a DataLA event: Sandy Bridge has none. */
	machine_intel(&m, K6_1, 0x2a);
	describe(K6_1, &m, 0, &d);
	p.memside = false;
	EXPECT_EQ(-EINVAL, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_NE(NULL, why);
	/* Models and families the table does not know. */
	d.model = 0x9d;
	EXPECT_EQ(-EOPNOTSUPP, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_NE(NULL, why);
	d.family = 0x13;
	d.model = 0x01;
	EXPECT_EQ(-EOPNOTSUPP, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_NE(NULL, why);
	/* A model 6.1 does not know is generic there: no events. */
	machine_intel(&m, K6_1, 0xad);
	describe(K6_1, &m, 0, &d);
	p.ldlat = 30;
	EXPECT_EQ(-EOPNOTSUPP, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_NE(NULL, why);
	/* An unknown vendor. */
	d.vendor = REFCNT_PMU_UNKNOWN;
	EXPECT_EQ(-EOPNOTSUPP, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_NE(NULL, why);
}

/* get_ibs_caps() of some generations (cpuid 0x8000001b). */
#define CAPS_FAM10H	0x7		/* IBS_CAPS_DEFAULT: no op counting */
#define CAPS_ZEN2	0x3ff
#define CAPS_ZEN4	0xfff

/*
 * IBS on every kernel: 6.1 and 6.12 refuse any exclude flag
 * (PERF_PMU_CAP_NO_EXCLUDE), so the plan's first choice (the software
 * filter) fails there with -EINVAL and the fallback, no exclude flag,
 * is taken; the newest kernel takes the first. Ops are counted.
 */
TEST(amd_every_kernel)
{
	struct refcnt_pmu_params p = { .period = 10000 };
	const u32 caps[] = { CAPS_ZEN2, CAPS_ZEN4 };
	struct refcnt_pmu_plan plan;
	struct refcnt_pmu_cpu d;
	struct machine m;
	unsigned int i;
	struct verdict v;
	const char *why;
	int k, events;

	for (k = 0; k < NR_KRN; k++) {
		for (i = 0; i < ARRAY_SIZE(caps); i++) {
			machine_amd(&m, "zen", 0x19, 0x01, caps[i]);
			p.memside = i;
			EXPECT_EQ(0, plan_machine(_metadata, k, &m, &p, false,
						  &events));
			EXPECT_EQ(1, events);
			describe(k, &m, 0, &d);
			ASSERT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
			v = kernel_create(k, &m, &plan.ev[0].attr, 0, false);
			EXPECT_EQ(k == KNEWEST ? 0 : -EINVAL, v.err);
			EXPECT_EQ(NULL, event_bad(k, &m, &plan.ev[0], 0, false,
						  &v));
			EXPECT_STREQ("ibs_op", v.pmu);
			EXPECT_STREQ("ops", v.counts);
		}
	}
	EXPECT_EQ(PERF_TYPE_RAW, plan.ev[0].attr.type);
	EXPECT_EQ(0xc1ULL, plan.ev[0].attr.config);
	EXPECT_EQ(PERF_SAMPLE_ADDR | PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_DATA_SRC,
		  plan.ev[0].attr.sample_type);
	EXPECT_EQ(1, (int)plan.ev[0].attr.exclude_kernel);
	EXPECT_EQ(1ULL, plan.ev[0].attr.config2);
	EXPECT_EQ(0, (int)plan.ev[0].fallback.exclude_kernel);
	EXPECT_EQ(0ULL, plan.ev[0].fallback.config2);
	EXPECT_EQ(REFCNT_PMU_OPS, plan.ev[0].stream.op);
	EXPECT_EQ(REFCNT_PMU_MEMSIDE, plan.ev[0].stream.flags);
}

/*
 * A counting session's task event: 6.1's IBS has no task context (the
 * session gets EOPNOTSUPP), 6.12's has.
 */
TEST(amd_session)
{
	struct refcnt_pmu_params p = { .period = 4096 };
	struct refcnt_pmu_plan plan;
	struct refcnt_pmu_cpu d;
	struct machine m;
	const char *why;
	int events;

	machine_amd(&m, "zen4", 0x19, 0x11, CAPS_ZEN4);
	EXPECT_EQ(0, plan_machine(_metadata, K6_12, &m, &p, true, &events));
	EXPECT_EQ(0, plan_machine(_metadata, KNEWEST, &m, &p, true, &events));
	describe(K6_1, &m, 0, &d);
	ASSERT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_EQ(-EINVAL, kernel_create(K6_1, &m, &plan.ev[0].fallback, -1,
					 true).err);
}

/*
 * The feed's IBS attributes before this change: precise cycles with
 * exclude_kernel, period 10007. Every kernel but the newest refuses the
 * exclude flag; the period's low bits are refused everywhere; and the
 * alias counts cycles, so a weight of N was not N references.
 */
TEST(amd_rules_catch_the_old_attributes)
{
	struct refcnt_pmu_event old = {
		.attr = {
			.size = sizeof(struct perf_event_attr),
			.type = PERF_TYPE_HARDWARE,
			.config = PERF_COUNT_HW_CPU_CYCLES,
			.precise_ip = 2, .exclude_kernel = 1,
			.sample_type = PERF_SAMPLE_ADDR | PERF_SAMPLE_PHYS_ADDR,
			.sample_period = 10007,
		},
		.stream = { REFCNT_PMU_LOADS, 0 },
	};
	struct verdict v;
	struct machine m;
	int k;

	machine_amd(&m, "zen3", 0x19, 0x01, CAPS_ZEN2);
	for (k = 0; k < NR_KRN; k++) {
		EXPECT_NE(NULL, event_bad(k, &m, &old, 0, false, &v));
		EXPECT_EQ(-EINVAL, v.err);
	}
	old.attr.sample_period = 10000;
	for (k = 0; k < KNEWEST; k++) {
		EXPECT_NE(NULL, event_bad(k, &m, &old, 0, false, &v));
		EXPECT_NE(NULL, strstr(v.rule, "NO_EXCLUDE"));
	}
	old.attr.exclude_kernel = 0;
	EXPECT_NE(NULL, event_bad(K6_12, &m, &old, 0, false, &v));
	EXPECT_STREQ("cycles", v.counts);
}

/* IBS periods are rounded to 16s and reported; no op counting, no feed. */
TEST(amd_bad_input)
{
	struct refcnt_pmu_params p = { .period = 10007 };
	struct refcnt_pmu_plan plan;
	struct refcnt_pmu_cpu d;
	struct machine m;
	const char *why;

	machine_amd(&m, "zen2", 0x17, 0x31, CAPS_ZEN2);
	describe(K6_1, &m, 0, &d);
	ASSERT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_EQ(10000U, plan.period);
	EXPECT_EQ(10000ULL, plan.ev[0].attr.sample_period);
	EXPECT_NE(NULL, plan.note);
	p.period = 5;
	ASSERT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_EQ(16U, plan.period);
	p.period = 4096;
	ASSERT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_EQ(4096U, plan.period);
	EXPECT_EQ(NULL, plan.note);
	/* pebs_ldlat is Intel's: IBS ignores it. */
	p.ldlat = 2;
	EXPECT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
	d.ibs_caps = CAPS_FAM10H;
	EXPECT_EQ(-EOPNOTSUPP, refcnt_pmu_plan(&d, &p, &plan, &why));
	d.ibs_caps = 0;
	EXPECT_EQ(-EOPNOTSUPP, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_NE(NULL, why);
}

/*
 * The test rig's PMU (kmod/pmu_test.c): loads (config 1) and stores
 * (config 2) on its perf type, any period, the stream's memory-side flag
 * from the settings; without its type, none.
 */
TEST(test_vendor)
{
	struct refcnt_pmu_params p = { .period = 10007, .memside = true };
	struct refcnt_pmu_cpu d = { .vendor = REFCNT_PMU_TEST, .pmu_type = 9 };
	struct refcnt_pmu_plan plan;
	const char *why;
	unsigned int i;

	ASSERT_EQ(0, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_EQ(10007U, plan.period);
	EXPECT_EQ(NULL, plan.note);
	ASSERT_EQ(2U, plan.nr);
	for (i = 0; i < 2; i++) {
		const struct perf_event_attr *a = &plan.ev[i].attr;

		EXPECT_EQ(9U, a->type);
		EXPECT_EQ(i + 1ULL, a->config);
		EXPECT_EQ(10007ULL, a->sample_period);
		EXPECT_EQ((unsigned long long)(PERF_SAMPLE_ADDR |
					       PERF_SAMPLE_PHYS_ADDR |
					       PERF_SAMPLE_DATA_SRC),
			  a->sample_type);
		EXPECT_TRUE(!!a->exclude_kernel);
		EXPECT_FALSE(plan.ev[i].has_fallback);
		EXPECT_EQ(REFCNT_PMU_MEMSIDE, plan.ev[i].stream.flags);
	}
	EXPECT_EQ(REFCNT_PMU_LOADS, plan.ev[0].stream.op);
	EXPECT_EQ(REFCNT_PMU_STORES, plan.ev[1].stream.op);
	d.pmu_type = 0;
	EXPECT_EQ(-EOPNOTSUPP, refcnt_pmu_plan(&d, &p, &plan, &why));
	EXPECT_NE(NULL, why);
}

/*
 * Memory-side data sources, as 6.1 and 6.12 encode them: Intel's
 * pebs_data_source[] (ds.c, and its Skylake, Crestmont, Lion Cove
 * variants) and IBS's perf_ibs_get_mem_lvl() (ibs.c).
 */
TEST(memside_data_sources)
{
	const u64 lh = DS(OP, LOAD) | DS(LVL, HIT);
	const struct { u64 src; bool memside; const char *what; } t[] = {
		{ lh | DS(LVL, L1) | LVLNUM(PERF_MEM_LVLNUM_L1), false, "intel L1" },
		{ lh | DS(LVL, LFB) | LVLNUM(PERF_MEM_LVLNUM_LFB), false, "intel LFB" },
		{ lh | DS(LVL, L2) | LVLNUM(PERF_MEM_LVLNUM_L2), false, "intel L2" },
		{ lh | DS(LVL, L3) | LVLNUM(PERF_MEM_LVLNUM_L3), false, "intel L3 hit" },
		{ lh | DS(LVL, L3) | LVLNUM(PERF_MEM_LVLNUM_L3) | DS(SNOOP, HITM), false, "intel L3 hitm" },
		{ DS(OP, LOAD) | DS(LVL, MISS) | LVLNUM(PERF_MEM_LVLNUM_L3), true, "intel unknown L3 miss" },
		{ lh | DS(LVL, REM_CCE1) | DS(REMOTE, REMOTE) | LVLNUM(PERF_MEM_LVLNUM_L3), true, "intel remote cache" },
		{ lh | DS(LVL, LOC_RAM) | LVLNUM(PERF_MEM_LVLNUM_RAM), true, "intel local DRAM" },
		{ lh | DS(LVL, REM_RAM1) | DS(REMOTE, REMOTE) | LVLNUM(PERF_MEM_LVLNUM_L3), true, "intel remote DRAM (snb)" },
		{ lh | LVLNUM(PERF_MEM_LVLNUM_RAM) | DS(REMOTE, REMOTE), true, "intel remote DRAM (skl)" },
		{ lh | LVLNUM(PERF_MEM_LVLNUM_PMEM), true, "intel PMEM" },
		{ lh | LVLNUM(PERF_MEM_LVLNUM_L4), true, "intel L4 eDRAM" },
		{ lh | LVLNUM(PERF_MEM_LVLNUM_ANY_CACHE) | DS(REMOTE, REMOTE), true, "intel remote forward" },
		{ lh | DS(LVL, IO) | LVLNUM(PERF_MEM_LVLNUM_NA), false, "intel I/O" },
		{ lh | DS(LVL, UNC) | LVLNUM(PERF_MEM_LVLNUM_NA), false, "intel uncached" },
		{ lh | LVLNUM(REFCNT_PERF_MEM_LVLNUM_MSC), true, "lion cove memory-side cache" },
		{ lh | LVLNUM(REFCNT_PERF_MEM_LVLNUM_L2_MHB), false, "lion cove L2 MHB" },
		{ DS(OP, LOAD) | DS(LVL, MISS) | DS(LVL, L3) | LVLNUM(PERF_MEM_LVLNUM_L3), true, "lion cove L3 miss" },
		{ DS(OP, LOAD) | DS(LVL, L1) | DS(LVL, HIT), false, "ibs 6.1 L1" },
		{ DS(OP, LOAD) | DS(LVL, L3) | DS(LVL, HIT), false, "ibs 6.1 zen4 L3" },
		{ DS(OP, LOAD) | DS(LVL, L3) | DS(LVL, REM_CCE1) | DS(LVL, HIT), false, "ibs 6.1 local cache" },
		{ DS(OP, LOAD) | DS(LVL, REM_CCE1) | DS(LVL, HIT), true, "ibs 6.1 near CCX" },
		{ DS(OP, LOAD) | DS(LVL, REM_CCE2) | DS(LVL, HIT), true, "ibs 6.1 far CCX" },
		{ DS(OP, LOAD) | DS(LVL, LOC_RAM) | DS(LVL, HIT), true, "ibs 6.1 DRAM" },
		{ DS(OP, LOAD) | DS(LVL, REM_RAM1) | DS(LVL, HIT), true, "ibs 6.1 remote DRAM" },
		{ DS(OP, LOAD) | LVLNUM(PERF_MEM_LVLNUM_CXL), true, "ibs CXL" },
		{ DS(OP, LOAD) | DS(LVL, LFB) | DS(LVL, HIT), false, "ibs MAB" },
		{ DS(OP, LOAD) | DS(LVL, NA), false, "ibs n/a" },
		{ lh | DS(LVL, L3) | DS(LVL, REM_CCE1) | LVLNUM(PERF_MEM_LVLNUM_ANY_CACHE) | DS(HOPS, 0), false, "ibs 6.12 local cache" },
		{ lh | DS(LVL, REM_CCE1) | LVLNUM(PERF_MEM_LVLNUM_ANY_CACHE) | DS(REMOTE, REMOTE) | DS(HOPS, 0), true, "ibs 6.12 near CCX" },
		{ lh | DS(LVL, REM_RAM1) | LVLNUM(PERF_MEM_LVLNUM_RAM) | DS(REMOTE, REMOTE) | DS(HOPS, 1), true, "ibs 6.12 remote DRAM" },
		{ DS(OP, STORE) | DS(LVL, MISS) | DS(LVL, L1) | LVLNUM(PERF_MEM_LVLNUM_L1), false, "store missing L1" },
		{ DS(OP, NA) | DS(LVL, NA) | LVLNUM(PERF_MEM_LVLNUM_NA), false, "nothing" },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		if (refcnt_pmu_memside(t[i].src) != t[i].memside)
			TH_LOG("%s: %#llx", t[i].what, (unsigned long long)t[i].src);
		EXPECT_EQ(t[i].memside, refcnt_pmu_memside(t[i].src));
	}
}

/* What counts of a sample, before its page is looked up. */
TEST(classify)
{
	const struct refcnt_pmu_stream all = { REFCNT_PMU_OPS, 0 };
	const struct refcnt_pmu_stream mem = { REFCNT_PMU_LOADS,
					       REFCNT_PMU_MEMSIDE };
	const struct rcb_count_range r[] = { { 0x10000, 0x1000 } };
	const u64 a = PERF_SAMPLE_ADDR, pa = PERF_SAMPLE_PHYS_ADDR,
		  src = PERF_SAMPLE_DATA_SRC;
	const u64 dram = DS(OP, LOAD) | DS(LVL, HIT) | DS(LVL, LOC_RAM);
	const u64 l1 = DS(OP, LOAD) | DS(LVL, HIT) | DS(LVL, L1);

	EXPECT_EQ(REFCNT_SAMPLE_COUNTED, refcnt_pmu_classify(&all, true, true, a, 0x10, 0, NULL, 0));
	EXPECT_EQ(REFCNT_SAMPLE_KERNEL, refcnt_pmu_classify(&all, false, true, a, 0x10, 0, NULL, 0));
	EXPECT_EQ(REFCNT_SAMPLE_NOADDR, refcnt_pmu_classify(&all, true, true, 0, 0, 0, NULL, 0));
	EXPECT_EQ(REFCNT_SAMPLE_NOADDR, refcnt_pmu_classify(&all, true, true, a, 0, 0, NULL, 0));
	EXPECT_EQ(REFCNT_SAMPLE_COUNTED, refcnt_pmu_classify(&all, true, true, pa, 0, 0, NULL, 0));
	EXPECT_EQ(REFCNT_SAMPLE_COUNTED, refcnt_pmu_classify(&mem, true, true, a | src, 0x10, dram, NULL, 0));
	EXPECT_EQ(REFCNT_SAMPLE_CACHED, refcnt_pmu_classify(&mem, true, true, a | src, 0x10, l1, NULL, 0));
	EXPECT_EQ(REFCNT_SAMPLE_CACHED, refcnt_pmu_classify(&mem, true, true, a, 0x10, dram, NULL, 0));
	EXPECT_EQ(REFCNT_SAMPLE_COUNTED, refcnt_pmu_classify(&all, true, true, a, 0x10fff, 0, r, 1));
	EXPECT_EQ(REFCNT_SAMPLE_OUTSIDE, refcnt_pmu_classify(&all, true, true, a, 0x11000, 0, r, 1));
	EXPECT_EQ(REFCNT_SAMPLE_OUTSIDE, refcnt_pmu_classify(&all, true, true, pa, 0, 0, r, 1));
	/* Kernel mode goes first: nothing else is looked at. */
	EXPECT_EQ(REFCNT_SAMPLE_KERNEL, refcnt_pmu_classify(&mem, false, true, 0, 0, 0, r, 1));
	/*
	 * An IBS op without PERF_EFLAGS_EXACT (an invalid RIP) has the NMI's
	 * registers: neither user nor kernel mode is the op's. A PEBS load's
	 * registers are the record's, exact or not (precise_ip 1).
	 */
	EXPECT_EQ(REFCNT_SAMPLE_INEXACT, refcnt_pmu_classify(&all, true, false, a, 0x10, 0, NULL, 0));
	EXPECT_EQ(REFCNT_SAMPLE_INEXACT, refcnt_pmu_classify(&all, false, false, a, 0x10, 0, NULL, 0));
	EXPECT_EQ(REFCNT_SAMPLE_COUNTED, refcnt_pmu_classify(&mem, true, false, a | src, 0x10, dram, NULL, 0));
	EXPECT_EQ(REFCNT_SAMPLE_KERNEL, refcnt_pmu_classify(&mem, false, false, a | src, 0x10, dram, NULL, 0));
}

/* One sample's weight, for an event whose times were @e0/@r0 before. */
static u64 scale_from(u64 period, u64 e0, u64 r0, u64 e, u64 r, bool *capped)
{
	struct refcnt_pmu_mux m = { .enabled = e0, .running = r0 };

	return refcnt_pmu_scale(period, &m, e, r, capped);
}

/* Weights: the period, scaled when the PMU multiplexed the event. */
TEST(scale)
{
	bool c;

	EXPECT_EQ(10007ULL, scale_from(10007, 0, 0, 0, 0, &c));
	EXPECT_FALSE(c);
	EXPECT_EQ(10007ULL, scale_from(10007, 0, 0, 5000, 5000, &c));
	EXPECT_EQ(20014ULL, scale_from(10007, 0, 0, 2000000, 1000000, &c));
	EXPECT_FALSE(c);
	EXPECT_EQ(15010ULL, scale_from(10007, 0, 0, 3000, 2000, &c));
	EXPECT_EQ((u64)U32_MAX, scale_from(1ULL << 33, 0, 0, 1, 1, &c));
	/* Times that went back (none should): no round, no scaling. */
	EXPECT_EQ(10007ULL, scale_from(10007, 5000, 5000, 4000, 1000, &c));
	EXPECT_FALSE(c);
}

/*
 * A throttle's loss: 10 samples 100 us apart, throttled at the tenth, in
 * a 4 ms tick; the next sample comes 3.1 ms later (the restart at the
 * next tick, one interval before it): 30 lost, said at that sample. A
 * next sample long after (the CPU idled) counts the rest of the tick
 * only; one sample a tick gives no rate.
 */
TEST(tick_lost)
{
	struct refcnt_pmu_tick t = { 0 };
	const u64 us = 1000, tick = 4000 * us;
	int i;

	for (i = 0; i < 9; i++)
		EXPECT_EQ(0ULL, refcnt_pmu_tick_lost(&t, 7, 1000 * us + i * 100 * us,
						     false, tick));
	EXPECT_EQ(0ULL, refcnt_pmu_tick_lost(&t, 7, 1900 * us, true, tick));
	EXPECT_EQ(30ULL, refcnt_pmu_tick_lost(&t, 8, 5000 * us, false, tick));
	/* Restarted early (a tick that came late caught up): less lost. */
	for (i = 1; i < 9; i++)
		refcnt_pmu_tick_lost(&t, 8, 5000 * us + i * 100 * us, false, tick);
	EXPECT_EQ(0ULL, refcnt_pmu_tick_lost(&t, 8, 5900 * us, true, tick));
	EXPECT_EQ(9ULL, refcnt_pmu_tick_lost(&t, 9, 6900 * us, false, tick));
	/* Throttled again; the next sample a second later: the tick's rest. */
	for (i = 1; i < 9; i++)
		refcnt_pmu_tick_lost(&t, 9, 6900 * us + i * 100 * us, false, tick);
	EXPECT_EQ(0ULL, refcnt_pmu_tick_lost(&t, 9, 7800 * us, true, tick));
	EXPECT_EQ(30ULL, refcnt_pmu_tick_lost(&t, 10, 1007800 * us, false, tick));
	/* Its first sample throttles: no rate, nothing said after. */
	EXPECT_EQ(0ULL, refcnt_pmu_tick_lost(&t, 11, 1100000 * us, true, tick));
	EXPECT_EQ(0ULL, refcnt_pmu_tick_lost(&t, 12, 1104000 * us, false, tick));
	/* Two at one instant: no rate. */
	EXPECT_EQ(0ULL, refcnt_pmu_tick_lost(&t, 13, 1200000 * us, false, tick));
	EXPECT_EQ(0ULL, refcnt_pmu_tick_lost(&t, 13, 1200000 * us, true, tick));
	EXPECT_EQ(0ULL, refcnt_pmu_tick_lost(&t, 14, 1204000 * us, false, tick));
}

/*
 * The factor is that of the event's last round, not of its life: an
 * hour alone, then 650 s at half the time is 2 (lifetime: 1.08, 10835).
 */
TEST(scale_last_round)
{
	const u64 s = 1000000000ULL;
	bool c;

	EXPECT_EQ(20014ULL, scale_from(10007, 3600 * s, 3600 * s,
				       4250 * s, 3925 * s, &c));
	EXPECT_FALSE(c);
}

/*
 * Starved an hour, then scheduled: lifetime scaling gave U32_MAX (a
 * factor of 3.6 million); the cap gives 16 periods, and says so.
 */
TEST(scale_starved_is_capped)
{
	const u64 s = 1000000000ULL;
	bool c;

	EXPECT_EQ(160112ULL, scale_from(10007, 0, 0, 3600 * s + 1000000,
					1000000, &c));
	EXPECT_TRUE(c);
	/* Enabled and never run in the round: capped too. */
	EXPECT_EQ(160112ULL, scale_from(10007, 10, 10, 5000, 10, &c));
	EXPECT_TRUE(c);
	/* The cap's edge: 15.99 is not capped, 16 is. */
	EXPECT_EQ(160011ULL, scale_from(10007, 0, 0, 1599, 100, &c));
	EXPECT_FALSE(c);
	EXPECT_EQ(160112ULL, scale_from(10007, 0, 0, 1600, 100, &c));
	EXPECT_TRUE(c);
	/* 16 periods past U32_MAX stay U32_MAX. */
	EXPECT_EQ((u64)U32_MAX, scale_from(1ULL << 29, 0, 0, 1ULL << 40, 1, &c));
	EXPECT_TRUE(c);
}

/*
 * perf updates the times only as it schedules the event: the samples of
 * one slice see the same times, and each gets the factor of the round
 * that ended as the slice began, not 1 for "no change since".
 */
TEST(scale_holds_through_a_slice)
{
	struct refcnt_pmu_mux m = {};
	bool c;

	/* Round one: alone. */
	EXPECT_EQ(100ULL, refcnt_pmu_scale(100, &m, 4000, 4000, &c));
	EXPECT_EQ(100ULL, refcnt_pmu_scale(100, &m, 4000, 4000, &c));
	/* Then on 4 ms, off 8 ms: 3, for every sample of the next slice. */
	EXPECT_EQ(300ULL, refcnt_pmu_scale(100, &m, 16000, 8000, &c));
	EXPECT_EQ(300ULL, refcnt_pmu_scale(100, &m, 16000, 8000, &c));
	EXPECT_EQ(300ULL, refcnt_pmu_scale(100, &m, 16000, 8000, &c));
	/* On 4, off 4: 2. */
	EXPECT_EQ(200ULL, refcnt_pmu_scale(100, &m, 24000, 12000, &c));
	EXPECT_FALSE(c);
	EXPECT_EQ(24000ULL, m.enabled);
	EXPECT_EQ(12000ULL, m.running);
}

TEST_HARNESS_MAIN
