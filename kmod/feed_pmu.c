// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the PEBS/IBS feed, precise memory samples with data addresses.
 *
 * The PMUs themselves are in pmu_intel.c and pmu_amd.c, as plans of
 * attributes; here those plans become kernel counters, per online CPU
 * for the machine-wide feed ("pebs", refcnt_pebs_feed) and per thread for
 * a counting session (count.c), and their samples go through
 * refcnt_pmu_sample(), the one sample path: the emulated PMU of the hub
 * runs its records through it too.
 *
 * A CPU's core PMU is the one perf itself picks for a cycles event on
 * that CPU (on hybrid parts "cpu_core" or "cpu_atom"): a disabled probe
 * event tells its name and perf type, which the raw events then use.
 * IBS needs no probe: the raw event 0xC1 with precise_ip is the kernel's
 * own alias for the ibs_op PMU (forward_event_to_ibs()).
 *
 * Physical addresses: perf fills PERF_SAMPLE_PHYS_ADDR in
 * perf_prepare_sample(), on the output path, which an overflow handler of
 * our own replaces; only IBS reads one from the hardware (IbsDcPhysAd),
 * in its NMI handler. So a PEBS sample, and an IBS sample without a
 * valid physical address, is looked up in the sampled task's page tables
 * with get_user_page_fast_only(), as perf_virt_to_phys() would.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/perf_event.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <asm/perf_event.h>
#include <asm/processor.h>
#include <asm/segment.h>

#include "compat.h"
#include "refcnt.h"
#include "feed.h"

/* refcnt.pebs_ldlat: Intel's load-latency threshold, 0 for every load. */
static unsigned int pebs_ldlat;
/* refcnt.pebs_memside: count only references beyond the caches. */
static bool pebs_memside;
/* What the running machine-wide feed was started with (feed lock). */
static struct refcnt_pmu_params refcnt_pmu_active;
/* Why the feed's last start failed, for its one line in the log. */
static const char *refcnt_pmu_why;

/*
 * The machine-wide feed's events point at their stream here: perf hands
 * the handler a context pointer, and these outlive every event.
 */
static const struct refcnt_pmu_stream refcnt_pmu_streams[3][2] = {
	{ { REFCNT_PMU_LOADS, 0 }, { REFCNT_PMU_LOADS, REFCNT_PMU_MEMSIDE } },
	{ { REFCNT_PMU_STORES, 0 }, { REFCNT_PMU_STORES, REFCNT_PMU_MEMSIDE } },
	{ { REFCNT_PMU_OPS, 0 }, { REFCNT_PMU_OPS, REFCNT_PMU_MEMSIDE } },
};

static void *refcnt_pmu_stream_ctx(const struct refcnt_pmu_stream *s)
{
	/* perf's context is void *; the handler reads it as const. */
	return (void *)&refcnt_pmu_streams[s->op]
					  [!!(s->flags & REFCNT_PMU_MEMSIDE)];
}

/**
 * refcnt_pmu_stream() - how samples of a kind are read with the settings
 * @op:		REFCNT_PMU_LOADS, _STORES or _OPS
 *
 * For an emulated PMU's records: memory-side when pebs_memside is on.
 *
 * Return: the stream, for refcnt_pmu_sample().
 */
const struct refcnt_pmu_stream *refcnt_pmu_stream(enum refcnt_pmu_op op)
{
	if (op > REFCNT_PMU_OPS)
		op = REFCNT_PMU_OPS;
	return &refcnt_pmu_streams[op][READ_ONCE(pebs_memside)];
}

REFCNT_EXPORT(refcnt_pmu_stream);

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

/* @cpu as the planners know it; @name holds its PMU's name. */
static int refcnt_pmu_describe(unsigned int cpu, struct refcnt_pmu_cpu *d,
			       char *name, size_t len)
{
	*d = (struct refcnt_pmu_cpu){
		.family = boot_cpu_data.x86,
		.model = boot_cpu_data.x86_model,
		.kver = refcnt_kernel_version(),
		.pmu = name,
	};
	name[0] = '\0';
	switch (boot_cpu_data.x86_vendor) {
	case X86_VENDOR_INTEL:
		d->vendor = REFCNT_PMU_INTEL;
		return refcnt_pmu_probe(cpu, &d->pmu_type, name, len);
	case X86_VENDOR_AMD:
	case X86_VENDOR_HYGON:
		d->vendor = REFCNT_PMU_AMD;
		d->ibs_caps = get_ibs_caps();
		return 0;
	default:
		return 0;
	}
}

/* The settings the module parameters ask for, with @period. */
static struct refcnt_pmu_params refcnt_pmu_params(u32 period)
{
	return (struct refcnt_pmu_params){
		.period = period,
		.ldlat = READ_ONCE(pebs_ldlat),
		.memside = READ_ONCE(pebs_memside),
	};
}

/*
 * The plans for every distinct core PMU of the online CPUs (one on most
 * machines, two on hybrid parts), into @plans (room for @max), @types
 * their perf types. Return: how many, or an errno: -EINVAL when a PMU
 * refuses @p, -EOPNOTSUPP when no CPU has the events (*@why says why),
 * perf's own when it has no core PMU at all (a guest: -ENOENT).
 */
static int refcnt_pmu_plans(const struct refcnt_pmu_params *p,
			    struct refcnt_pmu_plan *plans, u32 *types,
			    unsigned int max, const char **why)
{
	int err, derr = 0, perr = -EOPNOTSUPP;
	struct refcnt_pmu_cpu d;
	unsigned int cpu, i, n = 0;
	char name[32];

	*why = NULL;
	for_each_online_cpu(cpu) {
		err = refcnt_pmu_describe(cpu, &d, name, sizeof(name));
		if (err) {
			derr = err;
			continue;
		}
		for (i = 0; i < n && types[i] != d.pmu_type; i++)
			;
		if (i < n || n == max)
			continue;
		perr = refcnt_pmu_plan(&d, p, &plans[n], why);
		if (perr == -EINVAL)
			return perr;
		if (!perr)
			types[n++] = d.pmu_type;
	}
	if (n)
		return n;
	return *why || !derr ? perr : derr;
}

/**
 * refcnt_pmu_task_plans() - the plans that sample one process everywhere
 * @period:	its period
 * @plans:	filled in, one per distinct core PMU
 * @max:	room in @plans
 *
 * A task's event counts only on CPUs of its PMU, so a process that may
 * run on both kinds of a hybrid part's cores needs one plan per kind.
 *
 * Return: how many plans, or an errno: -EINVAL for a period or setting
 * the PMU refuses, -EOPNOTSUPP when the machine has no such PMU.
 */
int refcnt_pmu_task_plans(u32 period, struct refcnt_pmu_plan *plans,
			  unsigned int max)
{
	struct refcnt_pmu_params p = refcnt_pmu_params(period);
	u32 types[REFCNT_PMU_MAX_PMUS];
	const char *why;
	int n;

	n = refcnt_pmu_plans(&p, plans, types,
			     min_t(unsigned int, max, REFCNT_PMU_MAX_PMUS),
			     &why);
	/* Without a reason the planners did not refuse: perf did. */
	return n < 0 && !why ? refcnt_pmu_map_err(n, NULL) : n;
}

/* Plans for every core PMU, in memory of their own (they are large). */
static struct refcnt_pmu_plan *refcnt_pmu_plans_alloc(void)
{
	return kcalloc(REFCNT_PMU_MAX_PMUS, sizeof(struct refcnt_pmu_plan),
		       GFP_KERNEL);
}

/**
 * refcnt_pmu_create() - one kernel counter of a plan
 * @e:		the plan's event
 * @cpu:	its CPU, or -1 with @task
 * @task:	its task, or NULL for a CPU event
 * @inherit_thread: for a task event: inherited by new threads only, not
 *		by child processes
 * @overflow:	its overflow handler
 * @context:	the handler's context
 *
 * The preferred attributes first, then, if the kernel refuses them with
 * -EINVAL, the fallback (IBS without the privilege filter).
 *
 * Return: the event, or an ERR_PTR().
 */
struct perf_event *refcnt_pmu_create(const struct refcnt_pmu_event *e,
				     int cpu, struct task_struct *task,
				     bool inherit_thread,
				     perf_overflow_handler_t overflow,
				     void *context)
{
	struct perf_event_attr attr = e->attr;
	struct perf_event *ev;

	if (task) {
		attr.inherit = 1;
		attr.inherit_thread = inherit_thread;
	}
	ev = perf_event_create_kernel_counter(&attr, cpu, task, overflow,
					      context);
	if (!IS_ERR(ev) || PTR_ERR(ev) != -EINVAL || !e->has_fallback)
		return ev;
	attr = e->fallback;
	if (task) {
		attr.inherit = 1;
		attr.inherit_thread = inherit_thread;
	}
	return perf_event_create_kernel_counter(&attr, cpu, task, overflow,
						context);
}

/**
 * refcnt_pmu_regs() - registers for a sample that comes from a record
 * @regs:	filled in
 * @ip:		the sampled instruction
 * @user:	whether it ran in user mode
 *
 * For samples that no NMI delivered (RCB_FEED_SAMPLES, the hub's emulated
 * PMU): only what refcnt_pmu_sample() reads, user_mode() and the IP.
 */
void refcnt_pmu_regs(struct pt_regs *regs, u64 ip, bool user)
{
	memset(regs, 0, sizeof(*regs));
	regs->ip = ip;
	regs->cs = user ? __USER_CS : __KERNEL_CS;
}

REFCNT_EXPORT(refcnt_pmu_regs);

/* The sample's page, and the references it stands for, to the counters. */
static bool refcnt_pmu_deliver(struct perf_sample_data *data,
			       unsigned int cnode, u64 weight)
{
	u64 flags = data->sample_flags;
	struct refcnt_ctx ctx = {};

	weight = min_t(u64, weight, U32_MAX);
	if (flags & PERF_SAMPLE_PHYS_ADDR && data->phys_addr) {
		if (current->mm)
			ctx.pid = task_tgid_nr(current);
		if (flags & PERF_SAMPLE_ADDR)
			ctx.vaddr = data->addr;
		return refcnt_reference(data->phys_addr, cnode, weight, &ctx);
	}
	if (!(flags & PERF_SAMPLE_ADDR) || !current->mm)
		return false;
	return refcnt_feed_user_ref(data->addr, cnode, weight);
}

/**
 * refcnt_pmu_sample() - one precise memory sample, from a PMU or a record
 * @s:		its stream: what its event samples, in which mode
 * @ranges:	a counting session's address ranges, or NULL
 * @nr_ranges:	entries of @ranges; 0 counts every address
 * @data:	the sample: addr, phys_addr and data_src as sample_flags says
 * @regs:	its registers: user_mode() says where it was taken
 * @cnode:	cnodeid of the CPU that took it
 * @weight:	the references it stands for (refcnt_pmu_event_weight())
 *
 * The one path of precise samples: the overflow handlers of the feed and
 * of counting sessions, RCB_FEED_SAMPLES, and the hub's emulated PMU. It
 * drops kernel-mode samples, ops without a data address, and in
 * memory-side mode those a cache satisfied, then delivers @weight
 * references to the sample's page: the physical address when the sample
 * has one, else the data address looked up in the current task's page
 * tables. A caller that does not run in the sampled task (a drain) gives
 * the physical address. NMI-safe; allocates nothing but what the
 * reference path may (GFP_ATOMIC, never in NMI).
 *
 * Return: what became of the sample.
 */
enum refcnt_pmu_outcome
refcnt_pmu_sample(const struct refcnt_pmu_stream *s,
		  const struct rcb_count_range *ranges, unsigned int nr_ranges,
		  struct perf_sample_data *data, struct pt_regs *regs,
		  unsigned int cnode, u64 weight)
{
	enum refcnt_pmu_outcome o;

	o = refcnt_pmu_classify(s, user_mode(regs), data->sample_flags,
				data->addr, data->data_src.val, ranges,
				nr_ranges);
	if (o != REFCNT_PMU_COUNTED)
		return o;
	return refcnt_pmu_deliver(data, cnode, weight) ?
	       REFCNT_PMU_COUNTED : REFCNT_PMU_UNRESOLVED;
}

REFCNT_EXPORT(refcnt_pmu_sample);

/**
 * refcnt_pmu_event_weight() - the references a real event's sample stands for
 * @event:	the event that took it
 * @data:	the sample; its period is the event's
 *
 * The period, scaled by the event's time enabled over time running when
 * the PMU multiplexes it with other events (refcnt_pmu_scale()). The
 * times are those of the last scheduling, read without locks: an NMI
 * may see one updated and not the other, off by one slice.
 *
 * Return: the weight.
 */
u64 refcnt_pmu_event_weight(struct perf_event *event,
			    struct perf_sample_data *data)
{
	return refcnt_pmu_scale(data->period,
				READ_ONCE(event->total_time_enabled),
				READ_ONCE(event->total_time_running));
}

/**
 * refcnt_pmu_account() - count a sample's outcome in a feed's statistics
 * @stats:	the feed's per-CPU statistics
 * @outcome:	what refcnt_pmu_sample() returned
 */
void refcnt_pmu_account(struct refcnt_feed_stats __percpu *stats,
			enum refcnt_pmu_outcome outcome)
{
	this_cpu_inc(stats->samples);
	switch (outcome) {
	case REFCNT_PMU_COUNTED:
		this_cpu_inc(stats->delivered);
		break;
	case REFCNT_PMU_KERNEL:
		this_cpu_inc(stats->kernel);
		break;
	case REFCNT_PMU_NOADDR:
		this_cpu_inc(stats->noaddr);
		break;
	case REFCNT_PMU_CACHED:
		this_cpu_inc(stats->cached);
		break;
	default:
		this_cpu_inc(stats->unresolved);
		break;
	}
}

/* The machine-wide feed's overflow handler, in NMI. */
static void refcnt_pmu_overflow(struct perf_event *event,
				struct perf_sample_data *data,
				struct pt_regs *regs)
{
	const struct refcnt_pmu_stream *s = event->overflow_handler_context;

	refcnt_pmu_account(refcnt_pebs_feed.stats,
			   refcnt_pmu_sample(s, NULL, 0, data, regs,
					     refcnt_feed_cnode(),
					     refcnt_pmu_event_weight(event,
								     data)));
}

/*
 * Who has the PMU: the machine-wide feed or counting sessions, never
 * both. IBS has one op unit per CPU: a session's task event and the
 * feed's CPU event could not both be scheduled (perf_ibs_add() -ENOSPC),
 * and the CPU event, scheduled first, would starve the session. PEBS
 * events would multiplex, and every sample would count twice.
 */
static DEFINE_MUTEX(refcnt_pmu_owner_lock);
static unsigned int refcnt_pmu_sessions;
static bool refcnt_pmu_machine;

/**
 * refcnt_pmu_claim() - take the PMU for the feed or for one more session
 * @session:	true for a counting session, false for the machine-wide feed
 *
 * Return: 0, or -EBUSY when the other kind holds it.
 */
int refcnt_pmu_claim(bool session)
{
	int err = 0;

	mutex_lock(&refcnt_pmu_owner_lock);
	if (session ? refcnt_pmu_machine : refcnt_pmu_sessions > 0)
		err = -EBUSY;
	else if (session)
		refcnt_pmu_sessions++;
	else
		refcnt_pmu_machine = true;
	mutex_unlock(&refcnt_pmu_owner_lock);
	return err;
}

/**
 * refcnt_pmu_unclaim() - give back what refcnt_pmu_claim() took
 * @session:	as given to refcnt_pmu_claim()
 */
void refcnt_pmu_unclaim(bool session)
{
	mutex_lock(&refcnt_pmu_owner_lock);
	if (session)
		refcnt_pmu_sessions--;
	else
		refcnt_pmu_machine = false;
	mutex_unlock(&refcnt_pmu_owner_lock);
}

/**
 * refcnt_pmu_prepare() - the feed's prepare(): settings, PMU ownership
 * @feed:	refcnt_pebs_feed
 * @period:	asked; set to the period the PMU takes
 *
 * Plans every core PMU once with the settings of this start, which the
 * CPUs then get (also those that come online later), and logs a rounded
 * period or a data source the kernel cannot give, once.
 *
 * Return: 0, or an errno that refcnt_pmu_map_err() explains.
 */
int refcnt_pmu_prepare(struct refcnt_feed *feed, unsigned int *period)
{
	struct refcnt_pmu_params p = refcnt_pmu_params(*period);
	struct refcnt_pmu_plan *plans = refcnt_pmu_plans_alloc();
	u32 types[REFCNT_PMU_MAX_PMUS];
	int n, err;

	refcnt_pmu_why = NULL;
	if (!plans)
		return -ENOMEM;
	n = refcnt_pmu_plans(&p, plans, types, REFCNT_PMU_MAX_PMUS,
			     &refcnt_pmu_why);
	err = n < 0 ? n : refcnt_pmu_claim(false);
	if (err == -EBUSY)
		refcnt_pmu_why = "counting sessions use the PMU: close them first";
	if (!err) {
		if (plans[0].note)
			pr_info("%s feed: %s (period %u)\n", feed->name,
				plans[0].note, plans[0].period);
		p.period = plans[0].period;
		refcnt_pmu_active = p;
		*period = p.period;
	}
	kfree(plans);
	return err;
}

/**
 * refcnt_pmu_cpu_start() - the feed's cpu_start(): one CPU's events
 * @feed:	refcnt_pebs_feed
 * @cpu:	an online CPU
 * @period:	the period refcnt_pmu_prepare() settled
 *
 * Return: 0, REFCNT_FEED_SKIP when this CPU's core PMU has no such
 * events, or an errno.
 */
int refcnt_pmu_cpu_start(struct refcnt_feed *feed, unsigned int cpu,
			 unsigned int period)
{
	struct refcnt_pmu_params p = refcnt_pmu_active;
	struct perf_event **slot = &feed->events[cpu * feed->nr_events];
	struct refcnt_pmu_plan plan;
	struct refcnt_pmu_cpu d;
	const char *why = NULL;
	char name[32];
	unsigned int k;
	int err;

	p.period = period;
	err = refcnt_pmu_describe(cpu, &d, name, sizeof(name)) ?:
	      refcnt_pmu_plan(&d, &p, &plan, &why);
	if (err == -EOPNOTSUPP && why)
		return REFCNT_FEED_SKIP;
	if (err) {
		refcnt_pmu_why = why;
		return err;
	}
	for (k = 0; k < plan.nr; k++) {
		struct perf_event *ev;

		ev = refcnt_pmu_create(&plan.ev[k], cpu, NULL, false,
				       refcnt_pmu_overflow,
				       refcnt_pmu_stream_ctx(&plan.ev[k].stream));
		if (IS_ERR(ev))
			return PTR_ERR(ev);
		slot[k] = ev;
	}
	return 0;
}

/**
 * refcnt_pmu_finish() - the feed's finish(): give the PMU back
 * @feed:	refcnt_pebs_feed, its events released
 */
void refcnt_pmu_finish(struct refcnt_feed *feed)
{
	refcnt_pmu_unclaim(false);
}

/**
 * refcnt_pmu_map_err() - what perf's refusal of a PMU event means to users
 * @err:	perf's errno
 * @why:	if not NULL, set to the reason, for a line in the kernel log
 *
 * The one place that reads perf's "no such PMU": a guest has none
 * (-ENOENT), a CPU without PEBS refuses precise_ip (-EOPNOTSUPP), an
 * MSR the hypervisor hides is -ENXIO, a PMU that refuses the attributes
 * is -EINVAL (6.1's IBS has no task context, for instance).
 *
 * Return: -EOPNOTSUPP for those, else @err.
 */
int refcnt_pmu_map_err(int err, const char **why)
{
	const char *w = "cannot program the PMU";

	if (err == -ENOENT || err == -ENODEV || err == -EINVAL ||
	    err == -EOPNOTSUPP || err == -ENXIO) {
		w = "no precise memory-sampling PMU (PEBS/IBS) on this machine";
		err = -EOPNOTSUPP;
	}
	if (why)
		*why = w;
	return err;
}

/**
 * refcnt_pmu_start_err() - the feed's map_err(): a failed start's errno
 * @err:	the errno of the failure
 * @why:	set to the reason, for the one line the feed logs
 *
 * Return: @err when the planners refused (-EINVAL for what was asked,
 * -EOPNOTSUPP for no such events, -EBUSY for sessions holding the PMU),
 * else refcnt_pmu_map_err() of perf's errno.
 */
int refcnt_pmu_start_err(int err, const char **why)
{
	*why = refcnt_pmu_why;
	if (*why)
		return err;
	return refcnt_pmu_map_err(err, why);
}

/*
 * pebs_ldlat and pebs_memside: while the feed runs, checked against every
 * core PMU before they are taken, so that it restarts with them or keeps
 * running as it was; while it is off (and at load), checked when it
 * starts.
 */
static int refcnt_pmu_setting_set(const char *val,
				  const struct kernel_param *kp)
{
	struct refcnt_pmu_params p = refcnt_pmu_params(0);
	u32 types[REFCNT_PMU_MAX_PMUS];
	struct refcnt_pmu_plan *plans;
	unsigned int ldlat = 0;
	bool memside = false;
	const char *why;
	int err;

	if (kp->arg == &pebs_ldlat) {
		err = kstrtouint(val, 0, &ldlat) ?:
		      refcnt_pmu_ldlat_check(ldlat);
		if (err)
			pr_warn("pebs feed: pebs_ldlat must be 0 (every load) or 3 to 65535 cycles\n");
		p.ldlat = ldlat;
	} else {
		err = kstrtobool(val, &memside);
		p.memside = memside;
	}
	if (err)
		return -EINVAL;
	/* A feed that is off checks its settings when it starts. */
	p.period = READ_ONCE(refcnt_pebs_feed.period);
	if (p.period) {
		plans = refcnt_pmu_plans_alloc();
		if (!plans)
			return -ENOMEM;
		err = refcnt_pmu_plans(&p, plans, types, REFCNT_PMU_MAX_PMUS,
				       &why);
		kfree(plans);
		if (err == -EINVAL) {
			pr_warn("pebs feed: %s\n", why);
			return err;
		}
	}
	if (kp->arg == &pebs_ldlat)
		WRITE_ONCE(pebs_ldlat, ldlat);
	else
		WRITE_ONCE(pebs_memside, memside);
	return refcnt_feed_restart(&refcnt_pebs_feed);
}

static const struct kernel_param_ops refcnt_pmu_ldlat_ops = {
	.set = refcnt_pmu_setting_set,
	.get = param_get_uint,
};

static const struct kernel_param_ops refcnt_pmu_memside_ops = {
	.set = refcnt_pmu_setting_set,
	.get = param_get_bool,
};

module_param_cb(pebs_ldlat, &refcnt_pmu_ldlat_ops, &pebs_ldlat, 0644);
MODULE_PARM_DESC(pebs_ldlat,
		 "PEBS feed: load-latency threshold in core cycles, 3 to 65535; 0 samples every load (default 0)");
module_param_cb(pebs_memside, &refcnt_pmu_memside_ops, &pebs_memside,
		0644);
MODULE_PARM_DESC(pebs_memside,
		 "PEBS/IBS feed: count only loads the data source puts beyond the caches (default N)");
