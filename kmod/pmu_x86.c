// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: what the PEBS/IBS feed needs to know of an x86 CPU, for the
 * planners (pmu.h: pmu_intel.c, pmu_amd.c), and the registers of a sample
 * that no NMI delivered. Built on x86 only (refcnt-$(CONFIG_X86) in
 * Kbuild); elsewhere refcnt.h and feed.h stub it.
 */
#include <linux/err.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/ptrace.h>
#include <linux/string.h>
#include <asm/perf_event.h>
#include <asm/processor.h>
#include <asm/segment.h>
#include <uapi/linux/refcnt.h>

#include "compat.h"
#include "refcnt.h"
#include "feed.h"

/*
 * The name and perf type of the core PMU perf picks for @cpu: a disabled
 * cycles event on it, released at once.
 */
static int refcnt_pmu_probe(unsigned int cpu, u32 *type, char *name,
			    size_t len)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_HARDWARE,
		.config = PERF_COUNT_HW_CPU_CYCLES,
		.disabled = 1,
	};
	struct perf_event *ev;

	ev = perf_event_create_kernel_counter(&attr, cpu, NULL, NULL, NULL);
	if (IS_ERR(ev))
		return PTR_ERR(ev);
	*type = ev->pmu->type;
	strscpy(name, ev->pmu->name, len);
	perf_event_release_kernel(ev);
	return 0;
}

/**
 * refcnt_pmu_caps() - what this CPU vendor's samples tell beyond addresses
 *
 * Return: RCB_FEED_LOADS | RCB_FEED_STORES: PEBS samples loads and stores
 * with events of their own, IBS (the AMD and Hygon op sampling) says in
 * its data source which an op was; 0 for a vendor without such a PMU.
 */
u32 refcnt_pmu_caps(void)
{
	switch (boot_cpu_data.x86_vendor) {
	case X86_VENDOR_INTEL:
	case X86_VENDOR_AMD:
	case X86_VENDOR_HYGON:
		return RCB_FEED_LOADS | RCB_FEED_STORES;
	default:
		return 0;
	}
}

/**
 * struct refcnt_pmu_core - a hybrid CPU's core PMU, as a probe found it
 * @gen:	refcnt_pmu_cpu_changed() calls for the CPU when it was found
 * @valid:	found, while @gen is the CPU's
 * @type:	its perf type
 * @name:	its name, "cpu_core" or "cpu_atom"
 */
struct refcnt_pmu_core {
	unsigned int gen;
	bool valid;
	u32 type;
	char name[16];
};

/* Per CPU, under refcnt_pmu_cores_lock; the generations are the CPUs'. */
static DEFINE_PER_CPU(struct refcnt_pmu_core, refcnt_pmu_cores);
static DEFINE_PER_CPU(unsigned int, refcnt_pmu_cpu_gen);
static DEFINE_MUTEX(refcnt_pmu_cores_lock);

/**
 * refcnt_pmu_cpu_changed() - a CPU came online or goes offline
 * @cpu:	the CPU
 *
 * From the CPU hotplug callbacks, which cannot make the probe's event
 * (they hold the hotplug lock for write): what was found for @cpu is
 * forgotten, and found again at its next use.
 */
void refcnt_pmu_cpu_changed(unsigned int cpu)
{
	unsigned int *gen = per_cpu_ptr(&refcnt_pmu_cpu_gen, cpu);

	WRITE_ONCE(*gen, *gen + 1);
}

/*
 * The core PMU perf picks for @cpu, into @d. Only hybrid parts have more
 * than one (X86_FEATURE_HYBRID_CPU, so named at 6.1 and 6.12): elsewhere
 * refcnt_pmu_core_default() knows it without a probe. A hybrid CPU's is
 * probed once and kept until it goes offline: a probe makes and frees a
 * perf event, and with no other x86 event alive the DS/PEBS buffers with
 * it, a TLB-flush IPI to every CPU each.
 */
static int refcnt_pmu_core_of(unsigned int cpu, struct refcnt_pmu_cpu *d,
			      char *name, size_t len)
{
	struct refcnt_pmu_core *c = per_cpu_ptr(&refcnt_pmu_cores, cpu);
	unsigned int gen;
	int err = 0;

	if (refcnt_pmu_core_default(boot_cpu_has(X86_FEATURE_HYBRID_CPU), d))
		return 0;
	mutex_lock(&refcnt_pmu_cores_lock);
	gen = READ_ONCE(*per_cpu_ptr(&refcnt_pmu_cpu_gen, cpu));
	if (!c->valid || c->gen != gen) {
		c->valid = false;
		err = refcnt_pmu_probe(cpu, &c->type, c->name,
				       sizeof(c->name));
		c->gen = gen;
		c->valid = !err;
	}
	if (!err) {
		d->pmu_type = c->type;
		strscpy(name, c->name, len);
	}
	mutex_unlock(&refcnt_pmu_cores_lock);
	return err;
}

/**
 * refcnt_pmu_describe() - an online CPU as the PMU planners know it
 * @cpu:	the CPU
 * @d:		filled in; @d->pmu points at @name, or at a constant "cpu"
 * @name:	room for the name of its core PMU (Intel)
 * @len:	bytes of @name
 *
 * Intel: the vendor, family and model, and the core PMU perf picks for
 * the CPU ("cpu"; on hybrid parts "cpu_core" or "cpu_atom", from a probe
 * event made once per CPU: refcnt_pmu_core_of()). AMD and Hygon: the
 * IBS capabilities. Called with no lock the sample path takes; the probe
 * may sleep.
 *
 * Return: 0, or perf's errno for the probe (a hybrid part in a guest
 * without a PMU: -ENOENT).
 */
int refcnt_pmu_describe(unsigned int cpu, struct refcnt_pmu_cpu *d,
			char *name, size_t len)
{
	*d = (struct refcnt_pmu_cpu){
		.family = boot_cpu_data.x86,
		.model = boot_cpu_data.x86_model,
		.kver = refcnt_kernel_version(),
		.pmu = name,
	};
	name[0] = '\0';
	/* The test rig's PMU, where the machine has none (pmu_test.c). */
	if (!refcnt_pmu_test_describe(cpu, d, name, len))
		return 0;
	switch (boot_cpu_data.x86_vendor) {
	case X86_VENDOR_INTEL:
		d->vendor = REFCNT_PMU_INTEL;
		return refcnt_pmu_core_of(cpu, d, name, len);
	case X86_VENDOR_AMD:
	case X86_VENDOR_HYGON:
		d->vendor = REFCNT_PMU_AMD;
		d->ibs_caps = get_ibs_caps();
		return 0;
	default:
		return 0;
	}
}

/**
 * refcnt_pmu_regs() - registers for a sample that comes from a record
 * @regs:	filled in
 * @ip:		the sampled instruction
 * @user:	whether it ran in user mode
 *
 * For samples that no NMI delivered (the test module's synthetic ones, a
 * module emulating a PMU): what refcnt_pmu_sample() reads, user_mode()
 * and the IP, which are the record's: exact, as PERF_EFLAGS_EXACT says
 * (a caller emulating an IBS op whose RIP is invalid clears it).
 */
void refcnt_pmu_regs(struct pt_regs *regs, u64 ip, bool user)
{
	memset(regs, 0, sizeof(*regs));
	regs->ip = ip;
	regs->cs = user ? __USER_CS : __KERNEL_CS;
	regs->flags = PERF_EFLAGS_EXACT;
}
EXPORT_SYMBOL_NS_GPL(refcnt_pmu_regs, REFCNT_NS);
