// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt_testpmu: a PMU inside perf core, fed by the emulator, for the
 * test rig only.
 *
 * refcnt's PEBS/IBS feed (kmod/feed_pmu.c) is a perf user: perf core
 * schedules its events, rotates them when the counters are too few,
 * throttles them and keeps their enabled and running times. In the rig's
 * guests no x86 PMU exists, and the emulated PMU's samples (the hub
 * device, refcnt_hub.ko) used to reach refcnt.ko beside perf. This module
 * is a PMU driver as the x86 ones are, whose "hardware" is those samples:
 *
 *  - registered with perf_pmu_register() as "refcnt_testpmu", on
 *    perf_hw_context (free where no x86 PMU registered, as in the rig's
 *    guests; perf core warns at a second registration in one boot, so
 *    the module is loaded once per boot);
 *  - REFCNT_TESTPMU_COUNTERS counters per CPU: add() refuses another
 *    event with -EAGAIN, and perf core rotates;
 *  - an event counts one kind of the hub's records (attr.config:
 *    REFCNT_TESTPMU_LOADS, _STORES, _OPS), each standing for its weight
 *    events (the device's period); it overflows every sample_period of
 *    them, as a counter would;
 *  - refcnt_hub.ko hands each emulated sample to this module (its PMU
 *    sink, refcnt_hub_sink.h) with the Linux CPU of its ring; the module
 *    queues it per CPU and sends that CPU an NMI (an NMI IPI to its own
 *    mask, as arch/x86/kernel/nmi_selftest.c does: the self shorthand with
 *    NMI delivery is illegal per Intel's SDM). The NMI_LOCAL handler
 *    recognises its own NMI by a per-CPU pending flag (every NMI_LOCAL
 *    handler sees every NMI), and delivers the queued samples through
 *    perf_event_overflow(), stopping an event perf throttled (nonzero
 *    return) until perf core starts it again at the next tick, and
 *    reports its time with perf_sample_event_took(), as x86's handlers do;
 *  - a task's event (a counting session's) takes the records of its
 *    process only (the pid the hub stamps), and only while perf has it on
 *    a counter: while its task runs on the CPU the NMI comes to, as when
 *    the task itself drains its CPU's ring (hub_sync "cpu");
 *  - samples carry addr, data_src and weight with sample_flags as the 6.1
 *    x86 drivers set them (ds.c, ibs.c), regs with the sampled IP and
 *    PERF_EFLAGS_EXACT; and, unlike PEBS, phys_addr and the pid
 *    (PERF_SAMPLE_TID) with every sample that has an address: the NMI
 *    runs in no sampled task, whose page tables the handler would read.
 *
 * The samples come in bursts, a drain pass of a ring at a time (what the
 * vCPU did since the last pass, about a tick): perf's per-tick throttle
 * sees the rate per tick as a real PMU's would, give or take a tick.
 * Paced (/sys/kernel/refcnt_testpmu/pace_us, 0 by default), each NMI
 * takes one queued record and an hrtimer sends an NMI every that many
 * microseconds or a little more, so that samples come spread over time
 * at a known rate,
 * as a PMU's do: what a test of throttling's loss, or of
 * multiplexing, which are per tick and per rotation, needs.
 *
 * perf_event_overflow() and perf_sample_event_took() are not exported by
 * Debian's 6.1 and 6.12: the module is built only against the kernels the
 * rig builds (debug at 6.1, pmu-6.12), whose patch exports them
 * (tools/testing/debug-kernel/patches/); Kbuild leaves it out elsewhere.
 *
 * A module found by name: refcnt.ko never links to it. refcnt finds it by
 * a raw event of config REFCNT_TESTPMU_PROBE (where no x86 PMU takes raw
 * events, perf core offers one to every PMU) and the PMU's name.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpuhotplug.h>
#include <linux/hrtimer.h>
#include <linux/cpumask.h>
#include <linux/irq_work.h>
#include <linux/kobject.h>
#include <linux/module.h>
#include <linux/nmi.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>
#include <asm/apic.h>
#include <asm/nmi.h>
#include <asm/perf_event.h>
#include <asm/segment.h>

#include "compat.h"
#include "refcnt_hub_sink.h"

/* attr.config: which records an event counts (the hub's kinds). */
#define REFCNT_TESTPMU_LOADS	REFCNT_HUB_REC_LOAD
#define REFCNT_TESTPMU_STORES	REFCNT_HUB_REC_STORE
#define REFCNT_TESTPMU_OPS	REFCNT_HUB_REC_OP
/* A raw event's config that finds this PMU (kmod/pmu_test.c). */
#define REFCNT_TESTPMU_PROBE	0x7e57c0de00000000ULL

#define REFCNT_TESTPMU_COUNTERS	2
/*
 * Samples queued per CPU (768 KiB); a power of two. A drain pass brings
 * up to 8192 records of a ring at once, and the NMIs take them 32 at a
 * time: with 4096 a pass overflowed the queue.
 */
#define REFCNT_TESTPMU_QUEUE	16384
/* Queued samples between two NMIs the producer sends. */
#define REFCNT_TESTPMU_KICK	1024
/*
 * Samples one NMI delivers at most: a real PMU's NMI brings one sample,
 * or a few PEBS records; under KASAN and TCG a thousand took 100 ms.
 * The rest goes in the next NMI, which an irq_work sends.
 */
#define REFCNT_TESTPMU_BATCH	32

/* One emulated sample, as the hub's record said. */
struct refcnt_testpmu_sample {
	u64 addr;
	u64 phys_addr;
	u64 ip;
	u64 data_src;
	u32 weight;
	u32 pid;
	u16 kind;
	u16 flags;
};

/**
 * struct refcnt_testpmu_cpu - one CPU's counters and queue
 * @ev:		the events on the counters; written by add() and del()
 *		(interrupts off), read by the NMI
 * @lock:	the producers' (drains of the hub's rings)
 * @head:	samples queued, free-running; producers, under @lock
 * @tail:	samples taken, free-running; the NMI only
 * @pending:	an NMI is on its way to take them
 * @more:	sends the next NMI when one left samples in the queue (an
 *		NMI must not send an IPI: it may have interrupted one)
 * @paced:	paced: the pace timer runs
 * @pace:	paced: sends the next NMI
 * @cpu:	the CPU
 * @q:		the queue
 */
struct refcnt_testpmu_cpu {
	struct perf_event *ev[REFCNT_TESTPMU_COUNTERS];
	raw_spinlock_t lock;
	u64 head;
	u64 tail;
	int pending;
	struct irq_work more;
	int paced;
	struct hrtimer pace;
	int cpu;
	struct refcnt_testpmu_sample q[REFCNT_TESTPMU_QUEUE];
};

/* Per possible CPU: the queues are too big for per-CPU memory. */
static struct refcnt_testpmu_cpu **refcnt_testpmu_cpus;

/* Paced delivery: microseconds between two NMIs of one record; 0: off. */
static unsigned int refcnt_testpmu_pace_us;

/*
 * Statistics (/sys/kernel/refcnt_testpmu/stats), per CPU: what came, what
 * overflowed, what was lost and why. Each CPU adds to its own. u64s only,
 * in the order of refcnt_testpmu_stat_names[].
 */
struct refcnt_testpmu_stats {
	u64 records;	/* samples the hub handed in */
	u64 full;	/* dropped: the CPU's queue was full */
	u64 offline;	/* dropped: the CPU was offline */
	u64 nmis;	/* NMIs of ours */
	u64 counted;	/* samples counted by a started event */
	u64 stopped;	/* samples an event of their kind missed: stopped */
	u64 overflows;	/* perf_event_overflow() calls */
	u64 throttled;	/* of which perf throttled the event */
};

static DEFINE_PER_CPU(struct refcnt_testpmu_stats, refcnt_testpmu_stats);

static struct pmu refcnt_testpmu;

static int refcnt_testpmu_event_init(struct perf_event *event)
{
	u64 config = event->attr.config;

	if (event->attr.type == PERF_TYPE_RAW &&
	    config == REFCNT_TESTPMU_PROBE)
		return 0;
	if (event->attr.type != refcnt_testpmu.type)
		return -ENOENT;
	if (config < REFCNT_TESTPMU_LOADS || config > REFCNT_TESTPMU_OPS)
		return -EINVAL;
	/* A counter of fixed period, as the precise events refcnt uses. */
	if (event->attr.freq || has_branch_stack(event))
		return -EOPNOTSUPP;
	return 0;
}

/* start() and stop(): the counter counts or not; perf core calls both. */
static void refcnt_testpmu_start(struct perf_event *event, int flags)
{
	WRITE_ONCE(event->hw.state, 0);
}

static void refcnt_testpmu_stop(struct perf_event *event, int flags)
{
	/* The count is always up to date: the NMI adds to it. */
	WRITE_ONCE(event->hw.state, PERF_HES_STOPPED | PERF_HES_UPTODATE);
}

/* A free counter, or -EAGAIN: perf core multiplexes. */
static int refcnt_testpmu_add(struct perf_event *event, int flags)
{
	struct refcnt_testpmu_cpu *c = refcnt_testpmu_cpus[smp_processor_id()];
	int i;

	for (i = 0; i < REFCNT_TESTPMU_COUNTERS; i++) {
		if (c->ev[i])
			continue;
		event->hw.idx = i;
		event->hw.state = PERF_HES_STOPPED | PERF_HES_UPTODATE;
		WRITE_ONCE(c->ev[i], event);
		if (flags & PERF_EF_START)
			refcnt_testpmu_start(event, PERF_EF_RELOAD);
		perf_event_update_userpage(event);
		return 0;
	}
	return -EAGAIN;
}

static void refcnt_testpmu_del(struct perf_event *event, int flags)
{
	struct refcnt_testpmu_cpu *c = refcnt_testpmu_cpus[smp_processor_id()];

	refcnt_testpmu_stop(event, PERF_EF_UPDATE);
	WRITE_ONCE(c->ev[event->hw.idx], NULL);
	event->hw.idx = -1;
	perf_event_update_userpage(event);
}

static void refcnt_testpmu_read(struct perf_event *event)
{
}

static struct pmu refcnt_testpmu = {
	.module = THIS_MODULE,
	.task_ctx_nr = perf_hw_context,
	.event_init = refcnt_testpmu_event_init,
	.add = refcnt_testpmu_add,
	.del = refcnt_testpmu_del,
	.start = refcnt_testpmu_start,
	.stop = refcnt_testpmu_stop,
	.read = refcnt_testpmu_read,
};

/* The sample data and registers an x86 driver would give (file comment). */
static void refcnt_testpmu_data(struct perf_event *event,
				const struct refcnt_testpmu_sample *s,
				struct perf_sample_data *data,
				struct pt_regs *regs)
{
	u64 type = event->attr.sample_type;

	perf_sample_data_init(data, 0, event->hw.last_period);
	if (type & PERF_SAMPLE_DATA_SRC) {
		data->data_src.val = s->data_src;
		data->sample_flags |= PERF_SAMPLE_DATA_SRC;
	}
	if (type & PERF_SAMPLE_WEIGHT_TYPE) {
		/* The hub has no latency to give. */
		data->weight.full = 0;
		data->sample_flags |= PERF_SAMPLE_WEIGHT_TYPE;
	}
	if (s->flags & REFCNT_HUB_F_ADDR) {
		data->addr = s->addr;
		data->phys_addr = s->phys_addr;
		data->sample_flags |= PERF_SAMPLE_ADDR | PERF_SAMPLE_PHYS_ADDR;
	}
	if (s->pid) {
		data->tid_entry.pid = s->pid;
		data->tid_entry.tid = s->pid;
		data->sample_flags |= PERF_SAMPLE_TID;
	}
	regs->ip = s->ip;
	regs->cs = s->flags & REFCNT_HUB_F_USER ? __USER_CS : __KERNEL_CS;
	regs->flags |= PERF_EFLAGS_EXACT;
}

/* One sample, to the events of its kind on this CPU's counters. */
static void refcnt_testpmu_deliver(struct refcnt_testpmu_cpu *c,
				   const struct refcnt_testpmu_sample *s,
				   struct pt_regs *nmi_regs)
{
	struct refcnt_testpmu_stats *st = this_cpu_ptr(&refcnt_testpmu_stats);
	bool user = s->flags & REFCNT_HUB_F_USER;
	struct perf_sample_data data;
	struct pt_regs regs;
	int i;

	for (i = 0; i < REFCNT_TESTPMU_COUNTERS; i++) {
		struct perf_event *event = READ_ONCE(c->ev[i]);
		struct hw_perf_event *hwc;

		if (!event || event->attr.config != s->kind)
			continue;
		hwc = &event->hw;
		if (READ_ONCE(hwc->state) & PERF_HES_STOPPED) {
			st->stopped++;
			continue;
		}
		if ((user && event->attr.exclude_user) ||
		    (!user && event->attr.exclude_kernel))
			continue;
		/* A task's event: its process's records only. */
		if (hwc->target && s->pid != task_tgid_nr(hwc->target))
			continue;
		st->counted++;
		local64_add(s->weight, &event->count);
		if (!is_sampling_event(event) ||
		    local64_sub_return(s->weight, &hwc->period_left) > 0)
			continue;
		/* The counter wrapped: one sample, the next period begins. */
		local64_set(&hwc->period_left, hwc->sample_period);
		hwc->last_period = hwc->sample_period;
		regs = *nmi_regs;
		refcnt_testpmu_data(event, s, &data, &regs);
		st->overflows++;
		if (perf_event_overflow(event, &data, &regs)) {
			st->throttled++;
			refcnt_testpmu_stop(event, 0);
		}
	}
}

/* The NMI_LOCAL handler: ours when this CPU's pending flag is up. */
static int refcnt_testpmu_nmi(unsigned int cmd, struct pt_regs *regs)
{
	struct refcnt_testpmu_cpu *c = refcnt_testpmu_cpus[smp_processor_id()];
	u64 t0, tail, head;
	bool paced;

	/* Before reading head: a sample queued after this gets its NMI. */
	if (!xchg(&c->pending, 0))
		return NMI_DONE;
	t0 = sched_clock();
	this_cpu_inc(refcnt_testpmu_stats.nmis);
	/* Pairs with the producer's release: the samples are written. */
	head = smp_load_acquire(&c->head);
	/* Paced: one record, and the pace timer sends the next NMI. */
	paced = READ_ONCE(c->paced);
	if (head - c->tail > (paced ? 1 : REFCNT_TESTPMU_BATCH)) {
		head = c->tail + (paced ? 1 : REFCNT_TESTPMU_BATCH);
		if (!paced)
			irq_work_queue(&c->more);
	}
	for (tail = c->tail; tail != head; tail++)
		refcnt_testpmu_deliver(c, &c->q[tail % REFCNT_TESTPMU_QUEUE],
				       regs);
	/* The slots are free again for the producers. */
	smp_store_release(&c->tail, tail);
	perf_sample_event_took(sched_clock() - t0);
	return NMI_HANDLED;
}

/* Send @cpu the NMI that delivers its queue, unless one is on its way. */
static void refcnt_testpmu_nmi_send(struct refcnt_testpmu_cpu *c)
{
	if (READ_ONCE(c->head) == READ_ONCE(c->tail) || !cpu_online(c->cpu))
		return;
	if (cmpxchg(&c->pending, 0, 1))
		return;
	refcnt_send_nmi_ipi(c->cpu);
}

/* Paced: the pace timer, unless it runs. */
static void refcnt_testpmu_pace_start(struct refcnt_testpmu_cpu *c,
				      unsigned int us)
{
	if (cmpxchg(&c->paced, 0, 1))
		return;
	hrtimer_start(&c->pace, us * NSEC_PER_USEC, HRTIMER_MODE_REL);
}

/*
 * Paced: an NMI a pace after the timer's last firing, whatever the NMIs
 * take (a sampled record costs more than one its stopped event misses:
 * a pace from each NMI's end would sample slower than it misses), and
 * never sooner (a timer TCG fires late must not fire the next at once,
 * as a grid's would: two samples close together make a rate far above
 * the pace), while the queue has records; a record queued after the
 * last look starts it again.
 */
static enum hrtimer_restart refcnt_testpmu_pace_fire(struct hrtimer *t)
{
	struct refcnt_testpmu_cpu *c = container_of(t, struct refcnt_testpmu_cpu,
						    pace);
	unsigned int us = READ_ONCE(refcnt_testpmu_pace_us);

	if (!us)
		WRITE_ONCE(c->paced, 0);
	refcnt_testpmu_nmi_send(c);
	if (!us)
		return HRTIMER_NORESTART;
	if (READ_ONCE(c->head) == READ_ONCE(c->tail)) {
		WRITE_ONCE(c->paced, 0);
		smp_mb();	/* paced off before the producers' head is read */
		if (READ_ONCE(c->head) == READ_ONCE(c->tail) ||
		    cmpxchg(&c->paced, 0, 1))
			return HRTIMER_NORESTART;
	}
	hrtimer_set_expires(t, ktime_add_us(ktime_get(), us));
	return HRTIMER_RESTART;
}

static void refcnt_testpmu_kick(int cpu)
{
	struct refcnt_testpmu_cpu *c = refcnt_testpmu_cpus[cpu];
	unsigned int us = READ_ONCE(refcnt_testpmu_pace_us);

	if (!us) {
		refcnt_testpmu_nmi_send(c);
		return;
	}
	if (READ_ONCE(c->head) != READ_ONCE(c->tail) && cpu_online(cpu))
		refcnt_testpmu_pace_start(c, us);
}

/* An NMI left samples: the next one, from this CPU's irq_work. */
static void refcnt_testpmu_more(struct irq_work *work)
{
	refcnt_testpmu_nmi_send(container_of(work, struct refcnt_testpmu_cpu,
					     more));
}

/* The hub's sink: queue a record of CPU @cpu's ring. */
static void refcnt_testpmu_sample(int cpu, const struct refcnt_hub_record *r)
{
	struct refcnt_testpmu_stats *st = this_cpu_ptr(&refcnt_testpmu_stats);
	struct refcnt_testpmu_cpu *c;
	struct refcnt_testpmu_sample *s;
	unsigned long flags;
	u64 used;

	st->records++;
	if (cpu >= nr_cpu_ids || !cpu_online(cpu)) {
		st->offline++;
		return;
	}
	c = refcnt_testpmu_cpus[cpu];
	raw_spin_lock_irqsave(&c->lock, flags);
	/* Pairs with the NMI's release: the slots it took are free. */
	used = c->head - smp_load_acquire(&c->tail);
	if (used >= REFCNT_TESTPMU_QUEUE) {
		raw_spin_unlock_irqrestore(&c->lock, flags);
		st->full++;
		refcnt_testpmu_kick(cpu);
		return;
	}
	s = &c->q[c->head % REFCNT_TESTPMU_QUEUE];
	*s = (struct refcnt_testpmu_sample){
		.addr = READ_ONCE(r->vaddr),
		.phys_addr = READ_ONCE(r->paddr),
		.ip = READ_ONCE(r->ip),
		.data_src = READ_ONCE(r->data_src),
		.weight = READ_ONCE(r->weight),
		.pid = READ_ONCE(r->pid),
		.kind = READ_ONCE(r->kind),
		.flags = READ_ONCE(r->flags),
	};
	/* The sample is written before the NMI can see it. */
	smp_store_release(&c->head, c->head + 1);
	raw_spin_unlock_irqrestore(&c->lock, flags);
	/* Deliver along, not all at the end of the pass. */
	if (!((used + 1) % REFCNT_TESTPMU_KICK))
		refcnt_testpmu_kick(cpu);
}

static const struct refcnt_hub_pmu_sink refcnt_testpmu_sink = {
	.sample = refcnt_testpmu_sample,
	.flush = refcnt_testpmu_kick,
};

/* The statistics' names, in the order of struct refcnt_testpmu_stats. */
static const char *const refcnt_testpmu_stat_names[] = {
	"records", "full", "offline", "nmis", "counted", "stopped",
	"overflows", "throttled",
};

static_assert(sizeof(struct refcnt_testpmu_stats) ==
	      ARRAY_SIZE(refcnt_testpmu_stat_names) * sizeof(u64));

/* /sys/kernel/refcnt_testpmu/stats: one "name value" line each. */
static ssize_t stats_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	ssize_t len = 0;
	u64 queued = 0;
	unsigned int i;
	int cpu;

	for (i = 0; i < ARRAY_SIZE(refcnt_testpmu_stat_names); i++) {
		u64 sum = 0;

		for_each_possible_cpu(cpu) {
			const u64 *v = (const u64 *)
				per_cpu_ptr(&refcnt_testpmu_stats, cpu);

			sum += READ_ONCE(v[i]);
		}
		len += sysfs_emit_at(buf, len, "%s %llu\n",
				     refcnt_testpmu_stat_names[i], sum);
	}
	/* Not a count: what waits in the queues now (paced, for a while). */
	for_each_possible_cpu(cpu) {
		const struct refcnt_testpmu_cpu *c = refcnt_testpmu_cpus[cpu];

		queued += READ_ONCE(c->head) - READ_ONCE(c->tail);
	}
	return len + sysfs_emit_at(buf, len, "queued %llu\n", queued);
}

static struct kobj_attribute stats_attr = __ATTR_RO(stats);

/* /sys/kernel/refcnt_testpmu/pace_us: paced delivery (file comment). */
static ssize_t pace_us_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(refcnt_testpmu_pace_us));
}

static ssize_t pace_us_store(struct kobject *kobj, struct kobj_attribute *attr,
			     const char *buf, size_t count)
{
	unsigned int us;
	int err = kstrtouint(buf, 0, &us);

	if (err)
		return err;
	/* A second at most: a test's pace, not a way to stall the queue. */
	if (us > USEC_PER_SEC)
		return -ERANGE;
	WRITE_ONCE(refcnt_testpmu_pace_us, us);
	return count;
}

static struct kobj_attribute pace_us_attr = __ATTR_RW(pace_us);

static struct attribute *refcnt_testpmu_attrs[] = {
	&stats_attr.attr,
	&pace_us_attr.attr,
	NULL
};

static const struct attribute_group refcnt_testpmu_group = {
	.attrs = refcnt_testpmu_attrs,
};

static struct kobject *refcnt_testpmu_kobj;
static enum cpuhp_state refcnt_testpmu_cpuhp;

/*
 * A CPU back online: an NMI sent while it went offline never came, and
 * its pending flag would keep every later one from being sent.
 */
static int refcnt_testpmu_online(unsigned int cpu)
{
	WRITE_ONCE(refcnt_testpmu_cpus[cpu]->pending, 0);
	WRITE_ONCE(refcnt_testpmu_cpus[cpu]->paced, 0);
	refcnt_testpmu_kick(cpu);
	return 0;
}

static void refcnt_testpmu_free(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		kvfree(refcnt_testpmu_cpus[cpu]);
	kfree(refcnt_testpmu_cpus);
}

static int refcnt_testpmu_alloc(void)
{
	int cpu;

	refcnt_testpmu_cpus = kcalloc(nr_cpu_ids, sizeof(*refcnt_testpmu_cpus),
				      GFP_KERNEL);
	if (!refcnt_testpmu_cpus)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		struct refcnt_testpmu_cpu *c;

		c = kvzalloc_node(sizeof(*c), GFP_KERNEL, cpu_to_node(cpu));
		if (!c) {
			refcnt_testpmu_free();
			return -ENOMEM;
		}
		raw_spin_lock_init(&c->lock);
		init_irq_work(&c->more, refcnt_testpmu_more);
		hrtimer_init(&c->pace, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
		c->pace.function = refcnt_testpmu_pace_fire;
		c->cpu = cpu;
		refcnt_testpmu_cpus[cpu] = c;
	}
	return 0;
}

static int __init refcnt_testpmu_init(void)
{
	int err;

	err = refcnt_testpmu_alloc();
	if (err)
		return err;
	err = register_nmi_handler(NMI_LOCAL, refcnt_testpmu_nmi, 0,
				   "refcnt_testpmu");
	if (err)
		goto free;
	err = perf_pmu_register(&refcnt_testpmu, "refcnt_testpmu", -1);
	if (err)
		goto nmi;
	refcnt_testpmu_kobj = kobject_create_and_add("refcnt_testpmu",
						     kernel_kobj);
	if (!refcnt_testpmu_kobj) {
		err = -ENOMEM;
		goto pmu;
	}
	err = sysfs_create_group(refcnt_testpmu_kobj, &refcnt_testpmu_group);
	if (err)
		goto kobj;
	err = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN,
					"refcnt_testpmu:online",
					refcnt_testpmu_online, NULL);
	if (err < 0)
		goto kobj;
	refcnt_testpmu_cpuhp = err;
	err = refcnt_hub_pmu_sink_set(&refcnt_testpmu_sink);
	if (err)
		goto cpuhp;
	pr_info("registered PMU refcnt_testpmu (type %d), %d counters per CPU\n",
		refcnt_testpmu.type, REFCNT_TESTPMU_COUNTERS);
	return 0;
cpuhp:
	cpuhp_remove_state_nocalls(refcnt_testpmu_cpuhp);
kobj:
	kobject_put(refcnt_testpmu_kobj);
pmu:
	perf_pmu_unregister(&refcnt_testpmu);
nmi:
	unregister_nmi_handler(NMI_LOCAL, "refcnt_testpmu");
free:
	refcnt_testpmu_free();
	return err;
}

static void __exit refcnt_testpmu_exit(void)
{
	int cpu;

	refcnt_hub_pmu_sink_clear(&refcnt_testpmu_sink);
	/* What is queued goes out at once, not paced. */
	WRITE_ONCE(refcnt_testpmu_pace_us, 0);
	cpuhp_remove_state_nocalls(refcnt_testpmu_cpuhp);
	kobject_put(refcnt_testpmu_kobj);
	/* No event is left (each holds the module): no more samples. */
	perf_pmu_unregister(&refcnt_testpmu);
	/*
	 * What the sink queued last is delivered, NMI after NMI, before the
	 * handler goes (an offline CPU's never is: its NMI does not come).
	 */
	for_each_possible_cpu(cpu) {
		struct refcnt_testpmu_cpu *c = refcnt_testpmu_cpus[cpu];

		while (cpu_online(cpu) &&
		       (READ_ONCE(c->pending) || irq_work_is_busy(&c->more) ||
			hrtimer_active(&c->pace) ||
			READ_ONCE(c->head) != READ_ONCE(c->tail)))
			cpu_relax();
		hrtimer_cancel(&c->pace);
		irq_work_sync(&c->more);
	}
	unregister_nmi_handler(NMI_LOCAL, "refcnt_testpmu");
	refcnt_testpmu_free();
}

module_init(refcnt_testpmu_init);
module_exit(refcnt_testpmu_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("refcnt test rig: a test PMU inside perf core, fed by the emulated PMU");
