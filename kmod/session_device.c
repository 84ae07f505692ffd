// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: counting sessions and device feeds (RCB_COUNT_DEVICES).
 *
 * A device feed (the hub of the QEMU guests: a memory-side device that
 * sees every reference) delivers records long after they were made, from
 * a drain that runs anywhere: it cannot tell which task made one. But each
 * CPU's records are a stream, in the order that CPU made them, and the
 * feed can say how long a CPU's stream is now (its position). So a
 * session gives each thread it counts one more perf event, of a PMU of
 * our own that counts nothing: perf adds it as the thread comes on a CPU
 * and deletes it as the thread goes off, and there we note the position
 * of each device feed's stream for that CPU. The records between the two
 * positions (a span) are the thread's. The drain delivers each record
 * (refcnt_feed_record()) to the sessions whose spans on its CPU hold it.
 *
 * The spans of one feed and CPU are a ring: the PMU's callbacks on that
 * CPU (interrupts off) produce them, the feed's drain of that CPU's
 * stream (one at a time) consumes them, each span holding a reference on
 * its session until the drain has passed its end.
 *
 * Nothing is lost unsaid: the records of a thread whose span found the
 * ring full, and those the device could not make while it ran (its own
 * buffer full: the feed's lost()), count in the session's @dropped.
 *
 * Why a PMU and not preempt notifiers (which a module may use): they are
 * not inherited by the threads a session follows, and a module has no
 * exported hook at fork or exit to give them theirs or take them back
 * (Documentation/design.rst, "Device feeds in a session").
 */
#include <linux/cpumask.h>
#include <linux/kref.h>
#include <linux/mm.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "compat.h"
#include "refcnt.h"
#include "session.h"

/* Spans a CPU keeps for a feed: enough for a thousand switches a drain. */
#define REFCNT_SPANS		1024
#define REFCNT_SPAN_OPEN	U64_MAX
#define REFCNT_SPAN_NONE	U32_MAX

/**
 * struct refcnt_span - a counted thread's time on a CPU, in records
 * @start:	position of the CPU's stream when the thread came on
 * @end:	when it went off; REFCNT_SPAN_OPEN while it runs
 * @s:		its session, referenced
 */
struct refcnt_span {
	u64 start;
	u64 end;
	struct refcnt_session *s;
};

/**
 * struct refcnt_spans - the spans of one device feed on one CPU
 * @head:	spans made, free-running (the CPU's PMU callbacks)
 * @tail:	spans retired (the drain)
 * @span:	the ring
 */
struct refcnt_spans {
	u32 head;
	u32 tail;
	struct refcnt_span span[REFCNT_SPANS];
};

/**
 * struct refcnt_sched_note - what one scheduling event noted as its
 *			      thread came on a CPU, per device feed
 * @idx:	its span in the feed's ring, or REFCNT_SPAN_NONE: the ring
 *		was full
 * @start:	without a span, the stream's position then
 * @lost:	the device's lost() then
 */
struct refcnt_sched_note {
	u32 idx[REFCNT_SESSION_DEVICES];
	u64 start[REFCNT_SESSION_DEVICES];
	u64 lost[REFCNT_SESSION_DEVICES];
};

static struct pmu refcnt_sched_pmu;

/**
 * refcnt_session_sched_overflow() - the scheduling events' handler
 * @event:	never: the events do not sample
 * @data:	unused
 * @regs:	unused
 *
 * Also what tells our PMU that refcnt.ko made the event (perf sets the
 * handler before the PMU sees the event), not a perf_event_open() of
 * user space.
 */
void refcnt_session_sched_overflow(struct perf_event *event,
				   struct perf_sample_data *data,
				   struct pt_regs *regs)
{
}

static void refcnt_sched_destroy(struct perf_event *event)
{
	kfree(event->pmu_private);
}

static int refcnt_sched_init(struct perf_event *event)
{
	struct refcnt_sched_note *note;
	unsigned int i;

	if (event->attr.type != refcnt_sched_pmu.type)
		return -ENOENT;
	if (event->overflow_handler != refcnt_session_sched_overflow ||
	    is_sampling_event(event) || event->cpu != -1)
		return -EINVAL;
	/* Made by RCB_COUNT_START, for its caller. */
	note = kmalloc(sizeof(*note), GFP_KERNEL_ACCOUNT);
	if (!note)
		return -ENOMEM;
	for (i = 0; i < REFCNT_SESSION_DEVICES; i++)
		note->idx[i] = REFCNT_SPAN_NONE;
	event->pmu_private = note;
	event->destroy = refcnt_sched_destroy;
	return 0;
}

/* The records device @feed could not make on @cpu so far, if it says. */
static u64 refcnt_device_lost(struct refcnt_feed *feed, unsigned int cpu)
{
	return feed->device->lost ? feed->device->lost(feed, cpu) : 0;
}

/* The thread came on this CPU: a span opens in each feed's ring. */
static int refcnt_sched_add(struct perf_event *event, int flags)
{
	struct refcnt_session *s = event->overflow_handler_context;
	struct refcnt_sched_note *note = event->pmu_private;
	unsigned int cpu = smp_processor_id(), i;

	for (i = 0; i < s->nr_devices; i++) {
		struct refcnt_feed *feed = s->devices[i];
		struct refcnt_spans *sp = per_cpu_ptr(feed->spans, cpu);
		struct refcnt_span *span;
		u32 head = sp->head;

		note->idx[i] = REFCNT_SPAN_NONE;
		note->lost[i] = refcnt_device_lost(feed, cpu);
		if (head - READ_ONCE(sp->tail) >= REFCNT_SPANS) {
			/* No span: del() counts the records as dropped. */
			note->start[i] = feed->device->position(feed, cpu);
			continue;
		}
		span = &sp->span[head % REFCNT_SPANS];
		span->start = feed->device->position(feed, cpu);
		span->end = REFCNT_SPAN_OPEN;
		kref_get(&s->kref);
		span->s = s;
		/* The span is whole before the drain sees it. */
		smp_store_release(&sp->head, head + 1);
		note->idx[i] = head;
	}
	return 0;
}

/* The thread goes off this CPU: its spans close. */
static void refcnt_sched_del(struct perf_event *event, int flags)
{
	struct refcnt_session *s = event->overflow_handler_context;
	struct refcnt_sched_note *note = event->pmu_private;
	unsigned int cpu = smp_processor_id(), i;

	for (i = 0; i < s->nr_devices; i++) {
		struct refcnt_feed *feed = s->devices[i];
		struct refcnt_spans *sp = per_cpu_ptr(feed->spans, cpu);
		u64 pos = feed->device->position(feed, cpu);
		u64 dropped = refcnt_device_lost(feed, cpu) - note->lost[i];

		if (note->idx[i] == REFCNT_SPAN_NONE)
			dropped += pos - note->start[i];
		else
			/* Pairs with the drain's acquire: the span is whole. */
			smp_store_release(&sp->span[note->idx[i] % REFCNT_SPANS].end,
					  pos);
		if (dropped)
			atomic64_add(dropped, &s->dropped);
		note->idx[i] = REFCNT_SPAN_NONE;
	}
}

static void refcnt_sched_start(struct perf_event *event, int flags)
{
}

static void refcnt_sched_stop(struct perf_event *event, int flags)
{
}

static void refcnt_sched_read(struct perf_event *event)
{
}

static struct pmu refcnt_sched_pmu = {
	.module = THIS_MODULE,
	.task_ctx_nr = perf_sw_context,
	.capabilities = PERF_PMU_CAP_NO_INTERRUPT,
	.event_init = refcnt_sched_init,
	.add = refcnt_sched_add,
	.del = refcnt_sched_del,
	.start = refcnt_sched_start,
	.stop = refcnt_sched_stop,
	.read = refcnt_sched_read,
};

/**
 * refcnt_session_sched_attr() - the attributes of a scheduling event
 * @attr:	filled in
 *
 * Return: 0.
 */
int refcnt_session_sched_attr(struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = refcnt_sched_pmu.type;
	return 0;
}

/* Retire the spans that end at or before @pos: the drain is past them. */
static void refcnt_spans_retire(struct refcnt_spans *sp, u64 pos)
{
	/* Pairs with the CPU's releases: the spans up to head are made. */
	u32 head = smp_load_acquire(&sp->head), tail = sp->tail;

	while (tail != head) {
		struct refcnt_span *span = &sp->span[tail % REFCNT_SPANS];
		/* Pairs with the release that closed it. */
		u64 end = smp_load_acquire(&span->end);

		if (end == REFCNT_SPAN_OPEN || end > pos)
			break;
		refcnt_session_put(span->s);
		tail++;
	}
	/* The slots are free: the CPU may make spans in them again. */
	smp_store_release(&sp->tail, tail);
}

/* A record of a thread the session counts. */
static void refcnt_session_record(struct refcnt_session *s,
				  const struct refcnt_record *r)
{
	struct refcnt_outcome out;
	u64 data, instr;
	bool counted;

	atomic64_inc(&s->samples);
	if (!refcnt_session_match(s, &r->s, &data, &instr)) {
		atomic64_inc(&s->outside);
		return;
	}
	counted = refcnt_reference_outcome(r->paddr, r->s.src_cnode,
					   r->s.weight, NULL, &out);
	refcnt_session_account(s, &r->s, data, instr, counted, &out);
}

/* Give a record to the sessions whose spans on its CPU hold it. */
static void refcnt_spans_deliver(struct refcnt_feed *feed,
				 const struct refcnt_record *r)
{
	struct refcnt_spans *sp = per_cpu_ptr(feed->spans, r->cpu);
	u32 head, i;

	refcnt_spans_retire(sp, r->pos);
	/* Pairs with the CPU's releases: the spans up to head are made. */
	head = smp_load_acquire(&sp->head);
	for (i = sp->tail; i != head; i++) {
		const struct refcnt_span *span = &sp->span[i % REFCNT_SPANS];

		if (span->start > r->pos)
			continue;
		/* Pairs with the release that closes it. */
		if (r->pos < smp_load_acquire(&span->end))
			refcnt_session_record(span->s, r);
	}
}

/**
 * refcnt_feed_record() - a device feed delivers one record
 * @feed:	the feed, registered with device operations
 * @r:		the record: its CPU, its position in that CPU's stream, the
 *		physical address, and what else it says
 * @machine:	deliver it to the counters as the feed's, machine-wide (one
 *		sample in the feed's statistics), besides the sessions
 *
 * Records of one CPU come in the order of their positions, from one
 * caller at a time (the feed's drain of that CPU's stream). A record of a
 * thread a session counts goes to the session, if it passes its ranges;
 * kernel-mode records (an instruction in the kernel) are no session's.
 * Any context but NMI.
 *
 * Return: true if the machine-wide delivery reached a counter.
 */
bool refcnt_feed_record(struct refcnt_feed *feed,
			const struct refcnt_record *r, bool machine)
{
	struct refcnt_ctx ctx = { .vaddr = r->s.vaddr };
	bool counted = false;

	if (machine)
		counted = refcnt_feed_count(feed,
					    refcnt_reference(r->paddr,
							     r->s.src_cnode,
							     r->s.weight, &ctx));
	if (feed->spans && r->cpu < nr_cpu_ids &&
	    (!r->s.ip || r->s.ip < TASK_SIZE_MAX))
		refcnt_spans_deliver(feed, r);
	return counted;
}
EXPORT_SYMBOL_NS_GPL(refcnt_feed_record, REFCNT_NS);

/**
 * refcnt_feed_consumed() - a device feed's drain is past a position
 * @feed:	the feed
 * @cpu:	the CPU whose stream it drained
 * @pos:	the records of @cpu it has delivered
 *
 * Retires the spans that ended before: a CPU whose counted threads made
 * no records keeps room for new spans. The same caller as
 * refcnt_feed_record() for that CPU.
 */
void refcnt_feed_consumed(struct refcnt_feed *feed, unsigned int cpu, u64 pos)
{
	if (feed->spans && cpu < nr_cpu_ids)
		refcnt_spans_retire(per_cpu_ptr(feed->spans, cpu), pos);
}
EXPORT_SYMBOL_NS_GPL(refcnt_feed_consumed, REFCNT_NS);

/**
 * refcnt_feed_spans_alloc() - the span rings of a device feed
 * @feed:	the feed, being registered
 *
 * Return: 0 or -ENOMEM.
 */
int refcnt_feed_spans_alloc(struct refcnt_feed *feed)
{
	feed->spans = alloc_percpu(struct refcnt_spans);
	return feed->spans ? 0 : -ENOMEM;
}

/**
 * refcnt_feed_spans_free() - drop what the span rings still hold
 * @feed:	the feed, unregistered: no session holds it, so no span
 *		is made any more
 */
void refcnt_feed_spans_free(struct refcnt_feed *feed)
{
	int cpu;

	if (!feed->spans)
		return;
	for_each_possible_cpu(cpu)
		refcnt_spans_retire(per_cpu_ptr(feed->spans, cpu), U64_MAX - 1);
	free_percpu(feed->spans);
	feed->spans = NULL;
}

/**
 * refcnt_session_sync() - the session's device feeds deliver what they have
 * @s:		the session
 *
 * Process context: a feed's sync may sleep.
 */
void refcnt_session_sync(struct refcnt_session *s)
{
	unsigned int i;

	for (i = 0; i < s->nr_devices; i++)
		s->devices[i]->device->sync(s->devices[i]);
}

/**
 * refcnt_session_devices_init() - the scheduling events' PMU, at load
 *
 * Return: 0 or a negative errno.
 */
int refcnt_session_devices_init(void)
{
	return perf_pmu_register(&refcnt_sched_pmu, "refcnt_session", -1);
}

void refcnt_session_devices_exit(void)
{
	perf_pmu_unregister(&refcnt_sched_pmu);
}
