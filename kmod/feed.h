/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt: the feed interface, what makes counters move.
 *
 * A feed turns what it observes into references by physical address. The
 * feeds of refcnt.ko (feed_fault.c, feed_pmu.c) and feed modules apart
 * from it (tools/testing/kmod/: the hub device's driver, the test module)
 * use this interface alike; refcnt.ko exports it to GPL modules in the
 * REFCNT symbol namespace: MODULE_IMPORT_NS(REFCNT_NS) (compat.h).
 *
 * A feed registers a struct refcnt_feed: a name, statistics the registry
 * keeps per CPU and shows in /sys/kernel/refcnt/<name>_{samples,delivered,
 * unresolved} (and _{kernel,noaddr,cached,inexact,capped} for precise
 * samples), sysfs
 * files of its own, and, for a feed of perf events, its operations. It
 * then delivers references one of four ways:
 *  - by physical address: refcnt_feed_reference(), or several samples of
 *    one page at once, refcnt_feed_references();
 *  - as a device feed's record of what a task did, by physical address
 *    with the record's position in its CPU's stream, so that counting
 *    sessions get the records of the tasks they count:
 *    refcnt_feed_record();
 *  - as a PMU sample (perf_sample_data and pt_regs), through the code a
 *    real PMU's overflow handler runs: refcnt_feed_pmu_sample();
 *  - as perf events the registry makes per CPU (and follows CPU hotplug
 *    with) and counting sessions per task, every period events, whose
 *    overflow handlers call the feed's sample operation (which may end
 *    in refcnt_pmu_sample()).
 */
#ifndef _REFCNT_FEED_H
#define _REFCNT_FEED_H

#include <linux/cpumask.h>
#include <linux/kobject.h>
#include <linux/list.h>
#include <linux/percpu.h>
#include <linux/string.h>
#include <linux/perf_event.h>
#include <linux/sysfs.h>
#include <linux/topology.h>
#include <linux/types.h>
#include <uapi/linux/refcnt.h>

#include "compat.h"
#include "pmu.h"
#include "reference.h"

struct refcnt_feed;
struct refcnt_spans;

/* In an overflow handler: this sample made perf throttle @event. */
static inline bool refcnt_perf_throttling(const struct perf_event *event)
{
	return READ_ONCE(event->hw.interrupts) == REFCNT_PERF_MAX_INTERRUPTS;
}

/* struct refcnt_sample.kind: what the reference was, when the feed knows. */
#define REFCNT_SAMPLE_LOAD	1
#define REFCNT_SAMPLE_STORE	2

/**
 * struct refcnt_sample - what a feed knows of one sample, for sessions
 * @vaddr:	data address referenced (user), 0 when not known
 * @ip:		address of the instruction that made it, 0 when not known
 * @weight:	references it stands for
 * @src_cnode:	cnodeid it came from
 * @kind:	REFCNT_SAMPLE_LOAD or _STORE; 0 when the feed cannot tell
 */
struct refcnt_sample {
	u64 vaddr;
	u64 ip;
	u32 weight;
	u16 src_cnode;
	u8 kind;
};

/**
 * struct refcnt_feed_stats - what a feed did with its samples, in samples
 * @samples:	samples taken (those outside a counting session's ranges
 *		aside: the session counts them)
 * @delivered:	samples that reached a counter
 * @unresolved:	samples whose page could not be found or is counted by
 *		no node
 * @kernel:	precise samples taken in kernel mode, not counted
 * @noaddr:	precise samples of ops without a data address (IBS)
 * @cached:	precise samples a cache satisfied, in memory-side mode
 * @inexact:	precise samples the PMU could not tie to their instruction
 *		(IBS: an invalid RIP), so not to a mode: not counted
 * @capped:	precise samples delivered or unresolved whose multiplexing
 *		factor hit REFCNT_PMU_SCALE_MAX (pmu.h): already in
 *		@delivered or @unresolved
 */
struct refcnt_feed_stats {
	u64 samples;
	u64 delivered;
	u64 unresolved;
	u64 kernel;
	u64 noaddr;
	u64 cached;
	u64 inexact;
	u64 capped;
};

/* attr(): no event @k here (with @k 0: none at all, the CPU is skipped). */
#define REFCNT_FEED_NO_EVENT	1

/* Most perf events a feed makes per task (of a counting session). */
#define REFCNT_FEED_TASK_EVENTS	8

/**
 * struct refcnt_feed_event - one perf event of a feed, as attr() gives it
 * @attr:	its attributes, sample period aside
 * @fallback:	with @has_fallback, the attributes to make the event with
 *		when perf refuses @attr with -EINVAL (a kernel without a
 *		filter @attr asks for)
 * @has_fallback: whether @fallback is set
 * @stream:	the feed's own, handed back with every sample of the event
 *		(struct refcnt_feed_target): what the event samples and how
 *		its samples are read; NULL for none
 */
struct refcnt_feed_event {
	struct perf_event_attr attr;
	struct perf_event_attr fallback;
	bool has_fallback;
	const void *stream;
};

/**
 * struct refcnt_feed_target - where the samples of one perf event go, the
 * context of its overflow handler
 * @feed:	the feed
 * @stream:	the event's stream (struct refcnt_feed_event)
 * @ranges:	a counting session's address ranges, NULL for the machine
 * @nr_ranges:	entries of @ranges; 0 counts every address
 * @mux:	a PMU event's multiplexing as its samples saw it, zeroed
 *		when the event is made (feed_pmu.c, refcnt_pmu_scale())
 * @tick:	a PMU event's samples in its current tick, for what a
 *		throttle loses (refcnt_pmu_tick_lost()); zeroed likewise
 */
struct refcnt_feed_target {
	struct refcnt_feed *feed;
	const void *stream;
	const struct rcb_count_range *ranges;
	unsigned int nr_ranges;
	struct refcnt_pmu_mux mux;
	struct refcnt_pmu_tick tick;
};

/**
 * struct refcnt_device_ops - the operations of a device feed
 * @position:	records the stream of CPU @cpu has made so far: called on
 *		@cpu, interrupts off, as a counted task comes on it or goes
 *		off it; the records in between are the task's
 * @hold:	the feed must deliver records (refcnt_feed_record()) from
 *		now on, @on, or may stop, !@on: counted as sessions come and
 *		go; 0, or a negative errno (-ENODEV: no device now)
 * @sync:	deliver every record made so far before returning: a
 *		session is read
 * @period:	the device's period (references per record), 0 when there
 *		is no device; *@on: delivering machine-wide now
 * @lost:	optional: records the stream of CPU @cpu could not make so
 *		far (the device's buffer was full), free-running; called
 *		where @position is. A session counts those made while its
 *		tasks ran as dropped (RCB_COUNT_STATS)
 *
 * A device feed delivers by itself, at a period of its own (the device's),
 * what a memory-side device observed, record by record, in one stream per
 * CPU: it cannot tell which task made a reference, but the records are in
 * the order the CPU made them, so the positions where counted tasks came
 * on and went off a CPU tell (session_device.c).
 */
struct refcnt_device_ops {
	u64 (*position)(struct refcnt_feed *feed, unsigned int cpu);
	int (*hold)(struct refcnt_feed *feed, bool on);
	void (*sync)(struct refcnt_feed *feed);
	u32 (*period)(struct refcnt_feed *feed, bool *on);
	u64 (*lost)(struct refcnt_feed *feed, unsigned int cpu);
};

/**
 * struct refcnt_feed_ops - the operations of a feed of perf events
 * @prepare:	optional: before a start of the machine-wide events (@task
 *		false) or a counting session's (@task true), check what
 *		was asked and take what the events need (a PMU's
 *		ownership, the settings of this start) into *@setup, which
 *		attr() and finish() get; may round *@period to what the PMU
 *		takes. A negative errno refuses the start
 * @finish:	optional: after those events are released, or when the
 *		start failed after prepare(): give back what prepare() took
 * @attr:	describe event @k (0..) of CPU @cpu (-1: of a task, on any
 *		CPU), as prepared in @setup, into @ev; 0,
 *		REFCNT_FEED_NO_EVENT when there is no event @k there (no
 *		event at all: the CPU is left out), or a negative errno.
 *		With @setup NULL and @cpu -1 (no prepare(): for
 *		refcnt_perf_access(), before the target is looked up),
 *		what decides who may have a task's event @k
 *		(exclude_kernel, sample_type) as on every machine, even
 *		one without such events: 0 or REFCNT_FEED_NO_EVENT
 * @sample:	take one sample of an event, from its overflow handler (NMI
 *		for a PMU), with the event's target: what became of it. The
 *		registry counts it in the feed's statistics. @out, when not
 *		NULL (a session's event), gets the page's home and the
 *		references lost. It may update @t->mux, the only part of
 *		@t a sample changes
 * @describe:	fill in what a session filters the sample on and counts it
 *		as (@s: data and instruction address, kind, weight), before
 *		it is delivered
 * @start_error: optional: the errno to give for @err, which perf, attr()
 *		or prepare() gave when events were made, and in *@why what
 *		the one line in dmesg says (NULL: the feed's @unsupported
 *		for -EOPNOTSUPP, else "cannot start"); a PMU feed maps
 *		perf's several ways of saying "no such PMU" to -EOPNOTSUPP
 *		here, and nowhere else
 */
struct refcnt_feed_ops {
	int (*prepare)(struct refcnt_feed *feed, bool task,
		       unsigned int *period, void **setup);
	void (*finish)(struct refcnt_feed *feed, bool task, void *setup);
	int (*attr)(struct refcnt_feed *feed, void *setup, int cpu,
		    unsigned int k, struct refcnt_feed_event *ev);
	enum refcnt_sample_outcome (*sample)(struct refcnt_feed_target *t,
					     struct perf_event *event,
					     struct perf_sample_data *data,
					     struct pt_regs *regs,
					     struct refcnt_outcome *out);
	void (*describe)(const struct refcnt_feed_target *t,
			 struct perf_event *event,
			 struct perf_sample_data *data, struct pt_regs *regs,
			 struct refcnt_sample *s);
	int (*start_error)(struct refcnt_feed *feed, int err,
			   const char **why);
};

/* Longest feed name: sysfs file names are <name>_<statistic>. */
#define REFCNT_FEED_NAME_MAX	15

/* The statistics files of a feed, and its CPU lists. */
#define REFCNT_FEED_FILES	11

/**
 * struct refcnt_feed_attr - one statistics file of a feed, the registry's
 * @kattr:	the file
 * @feed:	its feed
 * @name:	"<feed>_<statistic>"
 */
struct refcnt_feed_attr {
	struct kobj_attribute kattr;
	struct refcnt_feed *feed;
	char name[REFCNT_FEED_NAME_MAX + 16];
};

/**
 * struct refcnt_feed - one feed of references
 * @name:	its name, at most REFCNT_FEED_NAME_MAX characters: "fault",
 *		"pebs", "hub"
 * @ops:	for a feed of perf events, its operations; NULL for a feed
 *		that delivers by itself
 * @device:	for a device feed, its operations (refcnt_feed_record())
 * @owner:	for a device feed or one that @emulates_pmu, its module: a
 *		session holding the feed or running its events holds the
 *		module
 * @caps:	what its samples carry, RCB_FEED_* of uapi/linux/refcnt.h
 *		(data and instruction address, loads, stores), and
 *		RCB_FEED_SESSION for a feed of perf events that counting
 *		sessions run by a period of struct rcb_count (refcnt.ko's
 *		own: session.c names them); the registry adds
 *		RCB_FEED_SESSION and RCB_FEED_DEVICE for a device feed
 * @nr_events:	with @ops, the perf events per CPU, at most
 * @nr_task_events: with @ops, the perf events per task of a counting
 *		session, at most REFCNT_FEED_TASK_EVENTS; 0: @nr_events
 * @precise:	its samples are precise memory samples: it has the
 *		statistics kernel, noaddr, cached, inexact and capped too
 * @emulates_pmu: with @ops, the feed is a PMU a module emulates (the
 *		test rig's hub device): counting sessions run its task
 *		events for their pebs_period where the machine has no
 *		precise memory-sampling PMU of its own (session.c)
 * @unsupported: with @ops, what dmesg says when the machine cannot run
 *		the feed (it failed to start with -EOPNOTSUPP and
 *		@start_error gave no reason), or NULL
 * @group:	sysfs files of the feed's own, put beside its statistics in
 *		/sys/kernel/refcnt (names start with the feed's), or NULL
 * @period:	registry: events per sample while on, 0 when off; before
 *		registration, the period to start with
 * @setup:	registry: what @ops->prepare() made for the running events
 * @events:	registry: @nr_events perf events per CPU while on,
 *		CPU-major
 * @targets:	registry: their overflow handlers' contexts, alike
 * @cpus:	registry: the CPUs that have their events
 * @skipped:	registry: online CPUs left out: no such events there
 * @stats:	registry: the statistics, per CPU: every path adds to its own
 *		CPU's only (one instruction on x86, NMI-safe)
 * @registered: registry: registered, and not being unregistered
 * @list:	registry: in the list of registered feeds
 * @attrs:	registry: the statistics files, and <name>_cpus and
 *		<name>_skipped with @ops
 * @attr_ptrs:	registry: @attrs for @stats_group, NULL-terminated
 * @stats_group: registry: @attrs in /sys/kernel/refcnt
 * @spans:	registry: for a device feed, per CPU, when counted tasks
 *		ran there (session_device.c)
 * @holds:	registry: sessions that hold a device feed
 * @present:	registry: a feed of perf events: 1 when the machine can
 *		make its events, 0 when it cannot, -1 before the first look
 *
 * The feed's module owns it; the fields from @period on are the
 * registry's.
 */
struct refcnt_feed {
	const char *name;
	const struct refcnt_feed_ops *ops;
	const struct refcnt_device_ops *device;
	struct module *owner;
	u32 caps;
	unsigned int nr_events;
	unsigned int nr_task_events;
	bool precise;
	bool emulates_pmu;
	const char *unsupported;
	const struct attribute_group *group;

	unsigned int period;
	void *setup;
	struct perf_event **events;
	struct refcnt_feed_target *targets;
	cpumask_t cpus;
	cpumask_t skipped;
	struct refcnt_feed_stats __percpu *stats;
	bool registered;
	struct list_head list;
	struct refcnt_feed_attr attrs[REFCNT_FEED_FILES];
	struct attribute *attr_ptrs[REFCNT_FEED_FILES + 1];
	struct attribute_group stats_group;
	struct refcnt_spans __percpu *spans;
	unsigned int holds;
	int present;
};

int refcnt_feed_register(struct refcnt_feed *feed);
void refcnt_feed_unregister(struct refcnt_feed *feed);

bool refcnt_feed_reference(struct refcnt_feed *feed, u64 paddr,
			   unsigned int src_cnode, u32 weight,
			   const struct refcnt_ctx *ctx);
bool refcnt_feed_references(struct refcnt_feed *feed, u64 paddr,
			    unsigned int src_cnode, u64 count, u32 samples,
			    const struct refcnt_ctx *ctx);
enum refcnt_sample_outcome
refcnt_feed_pmu_sample(struct refcnt_feed *feed,
		       const struct refcnt_pmu_stream *s,
		       struct perf_sample_data *data, struct pt_regs *regs,
		       unsigned int src_cnode, u64 weight);
enum refcnt_sample_outcome
refcnt_pmu_sample(const struct refcnt_pmu_stream *s,
		  const struct rcb_count_range *ranges, unsigned int nr_ranges,
		  struct perf_sample_data *data, struct pt_regs *regs,
		  unsigned int src_cnode, u64 weight, struct refcnt_outcome *out);
void refcnt_pmu_sample_describe(const struct refcnt_pmu_stream *st,
				struct perf_sample_data *data,
				struct pt_regs *regs, struct refcnt_sample *s);
const struct refcnt_pmu_stream *refcnt_pmu_stream(enum refcnt_pmu_op op);
#ifdef CONFIG_X86
void refcnt_pmu_regs(struct pt_regs *regs, u64 ip, bool user);
#else
/* No PMU refcnt knows elsewhere: registers as zeroed as they come. */
static inline void refcnt_pmu_regs(struct pt_regs *regs, u64 ip, bool user)
{
	memset(regs, 0, sizeof(*regs));
}
#endif

/**
 * struct refcnt_record - one record of a device feed
 * @cpu:	the CPU whose stream it is in
 * @pos:	its position there: records of @cpu before it
 * @paddr:	physical address referenced
 * @s:		the rest of what it says
 */
struct refcnt_record {
	unsigned int cpu;
	u64 pos;
	u64 paddr;
	struct refcnt_sample s;
};

bool refcnt_feed_record(struct refcnt_feed *feed,
			const struct refcnt_record *r, bool machine);
void refcnt_feed_consumed(struct refcnt_feed *feed, unsigned int cpu,
			  u64 pos);

int refcnt_nid_cnode(int nid);
unsigned int refcnt_nr_cnodes(void);
unsigned int refcnt_granularity_shift(void);
void refcnt_sync(void);

/**
 * refcnt_this_cnode() - cnodeid of the CPU we run on
 *
 * Context: any, NMI included.
 * Return: the cnodeid of this CPU's node; not below refcnt_nr_cnodes()
 * (so refused by the entry points) for a node that came online after
 * refcnt.ko was loaded.
 */
static inline unsigned int refcnt_this_cnode(void)
{
	return refcnt_nid_cnode(numa_node_id());
}

#endif /* _REFCNT_FEED_H */
