// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the test rig's PMU, a "test" vendor beside PEBS and IBS.
 *
 * The rig's debug kernel exports perf_event_overflow(), so that a module
 * of the rig (tools/testing/kmod/refcnt_testpmu.c) is a PMU inside perf
 * core, "refcnt_testpmu", whose samples are the emulator's: perf core
 * schedules, rotates and throttles its events as a real PMU's. refcnt
 * programs it through the same planner path as cpu and ibs_op, so that
 * what perf core does to the PEBS/IBS feed's events is tested.
 *
 * It is found at run time by name, never linked to: where no x86 PMU is
 * registered (the rig's guests) perf core offers a raw event to every PMU,
 * and the test PMU takes one of config REFCNT_PMU_TEST_PROBE. Machines
 * with a PMU of their own never make that event.
 *
 * The planner is a pure function, as the others (pmu.h): tools/testing/
 * pmu compiles it in user space.
 */
#include <linux/errno.h>
#include <linux/perf_event.h>
#include <linux/string.h>

#include "pmu.h"

/* The test PMU's event configs: the hub's record kinds it counts. */
#define REFCNT_PMU_TEST_LOADS	1
#define REFCNT_PMU_TEST_STORES	2

static void refcnt_test_attr(struct perf_event_attr *attr, u32 type,
			     u64 config, u32 period)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = type;
	attr->config = config;
	attr->sample_period = period;
	attr->sample_type = PERF_SAMPLE_ADDR | PERF_SAMPLE_PHYS_ADDR |
			    PERF_SAMPLE_DATA_SRC;
	attr->precise_ip = 1;
	attr->exclude_kernel = 1;
	attr->wakeup_events = 1;
}

/**
 * refcnt_test_plan() - the test PMU's events for one CPU
 * @cpu:	the CPU; @cpu->pmu_type is the test PMU's perf type
 * @p:		what the user asked; @p->ldlat is Intel's and ignored
 * @plan:	filled in
 * @why:	on error, the reason
 *
 * Loads and stores, as PEBS: the emulator's PEBS mode (hub-pmu pebs)
 * makes both kinds of records. Any period.
 *
 * Return: 0, or -EOPNOTSUPP without the test PMU.
 */
int refcnt_test_plan(const struct refcnt_pmu_cpu *cpu,
		     const struct refcnt_pmu_params *p,
		     struct refcnt_pmu_plan *plan, const char **why)
{
	static const u64 configs[] = {
		REFCNT_PMU_TEST_LOADS, REFCNT_PMU_TEST_STORES,
	};
	static const u8 ops[] = { REFCNT_PMU_LOADS, REFCNT_PMU_STORES };
	unsigned int i;

	if (!cpu->pmu_type) {
		*why = "no test PMU";
		return -EOPNOTSUPP;
	}
	for (i = 0; i < 2; i++) {
		struct refcnt_pmu_event *ev = &plan->ev[plan->nr++];

		refcnt_test_attr(&ev->attr, cpu->pmu_type, configs[i],
				 p->period);
		ev->stream.op = ops[i];
		if (p->memside)
			ev->stream.flags = REFCNT_PMU_MEMSIDE;
	}
	return 0;
}

#ifdef __KERNEL__
#include <linux/err.h>
#include <asm/cpufeature.h>
#include <asm/perf_event.h>

#include "compat.h"
#include "refcnt.h"

/**
 * refcnt_pmu_test_describe() - the test PMU, if it serves @cpu
 * @cpu:	an online CPU
 * @d:		filled in when it does
 * @name:	room for the PMU's name
 * @len:	bytes of @name
 *
 * Only where the machine has no PMU of its own (no x86 core PMU, no IBS):
 * elsewhere the raw probe event would be the core PMU's.
 *
 * Return: 0 when the test PMU serves @cpu, else -ENOENT.
 */
int refcnt_pmu_test_describe(unsigned int cpu, struct refcnt_pmu_cpu *d,
			     char *name, size_t len)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_RAW,
		.config = REFCNT_PMU_TEST_PROBE,
		.disabled = 1,
	};
	struct x86_pmu_capability cap;
	struct perf_event *ev;
	int err = -ENOENT;

	/* perf_get_x86_pmu_capability() warns on hybrid parts. */
	if (boot_cpu_has(X86_FEATURE_HYBRID_CPU) || get_ibs_caps())
		return -ENOENT;
	perf_get_x86_pmu_capability(&cap);
	if (cap.num_counters_gp)
		return -ENOENT;
	ev = perf_event_create_kernel_counter(&attr, cpu, NULL, NULL, NULL);
	if (IS_ERR(ev))
		return -ENOENT;
	if (!strcmp(ev->pmu->name, REFCNT_PMU_TEST_NAME)) {
		*d = (struct refcnt_pmu_cpu){
			.vendor = REFCNT_PMU_TEST,
			.pmu_type = ev->pmu->type,
			.pmu = name,
			.kver = refcnt_kernel_version(),
		};
		strscpy(name, ev->pmu->name, len);
		err = 0;
	}
	perf_event_release_kernel(ev);
	return err;
}
#endif
