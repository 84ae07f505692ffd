// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt_hub: the driver of the hub device, the memory-side reference
 * device of refcnt's emulated machine; a feed of refcnt.ko, and a part of
 * the test rig, not of the product.
 *
 * In refcnt's QEMU guests the emulator is the hardware: the refcnt-truth
 * plugin sees every guest reference and writes it into per-vCPU rings in
 * memory the guest sees as an ivshmem-plain PCI device (the layout is
 * uapi/linux/refcnt_hub.h). This PCI driver binds that device when its
 * header says so (a foreign ivshmem device is left alone) and drains the
 * rings NAPI-like: a pass takes at most a budget of records per ring, a
 * work item makes passes up to a bound or until the rings are empty,
 * requeues at once while a ring has more and polls every jiffy once they
 * are empty. The records go to refcnt.ko as the device feed "hub"
 * (kmod/feed.h), from their vCPU's node as the header gives it; the
 * emulated PMU's samples in the same rings go as the feed "hubpmu",
 * through the PMU feed's own sample code (refcnt_pmu_sample()). The
 * device stamps each record with the pid in its vCPU's ring, which this
 * driver writes at every context switch (the sched_switch tracepoint):
 * the work item that drains runs in no sampled task, and a record names
 * the process whose reference it is as a real PMU's handler would.
 *
 * A pass adds up the records of a ring (one vCPU, so one node) that fall
 * in one hardware page: each page's sum goes to refcnt.ko as one delivery
 * (refcnt_feed_references()), weighted by the device's period times the
 * records. A pass brings in a burst what the vCPU did over milliseconds;
 * as one delivery it folds as it crosses the threshold instead of pegging
 * (Documentation/design.rst, "Weighted references"), and the drain makes
 * one call per page instead of one per record. The sums are machine-wide
 * counting, while the feed is on (enable=1).
 *
 * Counting sessions (RCB_COUNT_DEVICES) get the records themselves
 * (refcnt_feed_record()), each with the position it has in its vCPU's
 * ring: a session takes those of the threads it counts, found by the
 * positions of the rings when those threads came on and went off each
 * CPU, and filters them by data and instruction address. The driver
 * drains while the feed is on or a session holds it.
 *
 * The region is memory the host can write at any time: the header is
 * copied and checked once at probe, every index is read once and checked
 * against the ring, a bad one is counted (malformed) and the ring left
 * for the next pass, and a record's address is only ever looked up.
 *
 * A ring is drained between the hub's mute and unmute marks (the header
 * says why), with preemption off so that nothing else runs muted; it is
 * on again between rings.
 *
 * Counting sessions (RCB_COUNT_START with pebs_period) run on the
 * emulated PMU as they would on a real one: with no PMU of its own in the
 * guest, refcnt.ko gives a session the task events of the feed that
 * emulates one ("hubpmu", refcnt_feed.emulates_pmu), and those are perf
 * events of a PMU this module registers ("refcnt_hub"). perf schedules
 * them with their thread and gives them to the threads it creates, as
 * it does PEBS events; while one is scheduled on a CPU, its thread's pid
 * is in that CPU's ring (@task), so the device stamps it on the samples
 * it makes there. The drain gives a sample to the events of the pid it
 * carries, of its kind, through their overflow handler (the session's,
 * with its ranges); while sessions hold the emulated PMU, samples of no
 * such event are dropped, as the PMU would not have taken them, and
 * nothing goes to the machine-wide "hubpmu" delivery: the PMU is the
 * sessions' or the machine's, never both (kmod/feed_pmu.c).
 *
 * A PMU sink (refcnt_hub_sink.h: the test PMU of refcnt_testpmu.ko, in
 * the kernels that export perf_event_overflow()) takes the emulated
 * PMU's records instead, each with its ring's Linux CPU, while it is set:
 * then they reach refcnt.ko through perf core, not "hubpmu".
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hash.h>
#include <linux/io.h>
#include <linux/kobject.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/perf_event.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/tracepoint.h>
#include <linux/workqueue.h>
#include <uapi/linux/refcnt_hub.h>

#include "compat.h"
#include "feed.h"
#include "refcnt_hub_sink.h"

/*
 * Records per ring and pass, and passes per run of the work item. The
 * room a pass makes in the ring of the CPU it runs on goes first to
 * whatever that CPU references next: the worker's way out of the work
 * item, or the switch to the program it preempted when the pass outlasted
 * its time slice (under TCG on 72 nodes, every pass), about a thousand
 * records either way. With 1024 a pass, a program busy on the draining
 * CPU got 14% of its ring; with 8192, 64%. The budget still bounds the
 * time a ring keeps its CPU: the device exists only in TCG guests, where
 * 8192 records of a ring take tens of milliseconds.
 */
#define REFCNT_HUB_BUDGET	8192
#define REFCNT_HUB_PASSES	8
/* Records between two publications of the tail within a pass. */
#define REFCNT_HUB_TAIL_EVERY	256

/*
 * Hardware pages a pass adds up at once: a direct-mapped table; a page
 * that finds its slot taken delivers what the slot held first.
 */
#define REFCNT_HUB_SUMS		256

/**
 * struct refcnt_hub_sum - the records of one pass to one hardware page
 * @page:	paddr >> granularity shift, plus 1; 0 when the slot is free
 * @paddr:	the first record's address
 * @vaddr:	its virtual address, for the event context
 * @pid:	its task, as the guest said it
 * @records:	records added up
 */
struct refcnt_hub_sum {
	u64 page;
	u64 paddr;
	u64 vaddr;
	pid_t pid;
	u32 records;
};

/**
 * struct refcnt_hub_rx - the driver's side of one ring
 * @ctrl:	the ring's control block in the region
 * @rec:	its records
 * @tail:	records consumed: ours, never read back from the region
 * @overruns:	the producer's count of drops when we bound the device
 * @cnode:	cnodeid of the ring's vCPU, or -1: the ring is not drained
 * @cpu:	the Linux CPU the ring's vCPU is, or -1 when not known
 */
struct refcnt_hub_rx {
	struct refcnt_hub_ring *ctrl;
	struct refcnt_hub_record *rec;
	u64 tail;
	u64 overruns;
	int cnode;
	int cpu;
};

/**
 * struct refcnt_hub - the bound hub device
 * @pdev:	its PCI device
 * @hdr:	the header as checked at probe; the region's copy is never
 *		read again
 * @drain_lock:	one consumer per ring: the work or a sync
 * @work:	the drain passes
 * @running:	the feed is on: passes requeue themselves
 * @sync_machine: a sync of hub_sync drains: its records count
 *		machine-wide even with the feed off (under drain_lock)
 * @ring_of_cpu: the ring of each Linux CPU, -1 for none (nr_cpu_ids)
 * @granularity_shift: refcnt.ko's hardware page, which the sums add up
 * @sum:	a pass's sums per hardware page (under drain_lock)
 * @rx:		one per ring
 */
struct refcnt_hub {
	struct pci_dev *pdev;
	struct refcnt_hub_header hdr;
	struct mutex drain_lock;	/* the rings' one consumer */
	struct delayed_work work;
	bool running;
	bool sync_machine;
	int *ring_of_cpu;
	unsigned int granularity_shift;
	struct refcnt_hub_sum sum[REFCNT_HUB_SUMS];
	struct refcnt_hub_rx rx[];
};

/*
 * Counts of the drain beyond the feed's own statistics (hub_samples,
 * hub_delivered, hub_unresolved, in records); only the drain adds, under
 * drain_lock.
 */
static struct {
	u64 references, malformed;
} refcnt_hub_stats;

/* The bound device; RCU: the scheduler reads its rings' positions. */
static struct refcnt_hub __rcu *refcnt_hub_dev;
/* Serialises binding, unbinding and turning the feed on and off. */
static DEFINE_MUTEX(refcnt_hub_lock);
static unsigned int enable;
/* Sessions hold the feed: drain, for them, even with enable=0. */
static bool refcnt_hub_held;
static bool refcnt_hub_ready;

static const struct attribute_group refcnt_hub_group;
static const struct refcnt_device_ops refcnt_hub_ops;

static struct refcnt_feed refcnt_hub_feed = {
	.name = "hub",
	.group = &refcnt_hub_group,
	.device = &refcnt_hub_ops,
	.owner = THIS_MODULE,
	.caps = RCB_FEED_DATA_ADDR | RCB_FEED_INSTR_ADDR | RCB_FEED_LOADS |
		RCB_FEED_STORES,
};

/* The device, under refcnt_hub_lock. */
static struct refcnt_hub *refcnt_hub_get(void)
{
	return rcu_dereference_protected(refcnt_hub_dev,
					 lockdep_is_held(&refcnt_hub_lock));
}

static const struct refcnt_feed_ops refcnt_hub_pmu_ops;

/*
 * The emulated PMU's samples (PEBS-like and IBS-like records of the same
 * rings), a feed of their own: statistics hubpmu_*, with the precise
 * ones (kernel, noaddr, cached); and the events of counting sessions on
 * the emulated PMU (no machine-wide events: the drain delivers those).
 */
static struct refcnt_feed refcnt_hub_pmu_feed = {
	.name = "hubpmu",
	.ops = &refcnt_hub_pmu_ops,
	.nr_events = 1,
	.nr_task_events = 3,
	.precise = true,
	.emulates_pmu = true,
	.owner = THIS_MODULE,
};

/*
 * Counting sessions on the emulated PMU (prepared, not finished): while
 * there is one, its samples go to the sessions' events only.
 */
static atomic_t refcnt_hub_sessions = ATOMIC_INIT(0);

/**
 * struct refcnt_hub_event - one perf event of the "refcnt_hub" PMU
 * @node:	in refcnt_hub_events
 * @event:	the event (a session's, or inherited from one)
 * @pid:	its thread's pid, which the device stamps on its samples
 */
struct refcnt_hub_event {
	struct list_head node;
	struct perf_event *event;
	pid_t pid;
};

/* The events of the "refcnt_hub" PMU, and the drain's walk of them. */
static LIST_HEAD(refcnt_hub_events);
static DEFINE_SPINLOCK(refcnt_hub_events_lock);

/*
 * Each CPU's ring, found at probe (refcnt_hub_map_cpus()); NULL for
 * none. Read by the PMU's add() and del(), with interrupts off.
 */
static DEFINE_PER_CPU(struct refcnt_hub_ring *, refcnt_hub_cpu_ring);
/* Events of the "refcnt_hub" PMU scheduled on each CPU. */
static DEFINE_PER_CPU(unsigned int, refcnt_hub_cpu_active);

/*
 * The cnodeid of the sample the drain gives to an event's overflow
 * handler (under drain_lock), for the feed's sample().
 */
static unsigned int refcnt_hub_sample_cnode;

/* The producer does not report this vCPU's references in between. */
static __always_inline void refcnt_hub_mute(void)
{
	asm volatile(".byte 0x0f, 0x1f, 0x84, 0x00, 0x52, 0x43, 0x48, 0x4d" ::: "memory");
}

static __always_inline void refcnt_hub_unmute(void)
{
	asm volatile(".byte 0x0f, 0x1f, 0x84, 0x00, 0x52, 0x43, 0x48, 0x55" ::: "memory");
}

/* Deliver a page's sum as one delivery. */
static void refcnt_hub_deliver(struct refcnt_hub *h, struct refcnt_hub_sum *s,
			       int cnode)
{
	struct refcnt_ctx ctx = { .pid = s->pid, .vaddr = s->vaddr };
	u64 count = (u64)s->records * h->hdr.period;

	if (refcnt_feed_references(&refcnt_hub_feed, s->paddr, cnode, count,
				   s->records, &ctx))
		refcnt_hub_stats.references += count;
	s->page = 0;
}

/* Add a record to its page's sum. */
static void refcnt_hub_add(struct refcnt_hub *h, int cnode, u64 paddr,
			   u64 vaddr, pid_t pid)
{
	u64 page = (paddr >> h->granularity_shift) + 1;
	struct refcnt_hub_sum *s = &h->sum[hash_64(page, ilog2(REFCNT_HUB_SUMS))];

	if (s->page == page && s->records < U32_MAX) {
		s->records++;
		/* A process's reference names the page, not the kernel's. */
		if (!s->pid && pid) {
			s->pid = pid;
			s->vaddr = vaddr;
		}
		return;
	}
	if (s->page)
		refcnt_hub_deliver(h, s, cnode);
	*s = (struct refcnt_hub_sum){ .page = page, .paddr = paddr,
				      .vaddr = vaddr, .pid = pid,
				      .records = 1 };
}

/* Deliver every sum of the pass. */
static void refcnt_hub_flush(struct refcnt_hub *h, int cnode)
{
	unsigned int i;

	for (i = 0; i < REFCNT_HUB_SUMS; i++)
		if (h->sum[i].page)
			refcnt_hub_deliver(h, &h->sum[i], cnode);
}

/*
 * A sample of the emulated PMU while sessions hold it: to the events of
 * its kind of the thread the device stamped on it, through their
 * overflow handlers, as a real PMU's overflow would (without perf's
 * throttling: a drain brings in a burst what the vCPU did over time).
 */
static void refcnt_hub_session_sample(int cnode, u16 kind, u32 pid,
				      struct perf_sample_data *data,
				      struct pt_regs *regs)
{
	struct refcnt_hub_event *e;
	unsigned long flags;

	if (!pid)
		return;
	refcnt_hub_sample_cnode = cnode;
	spin_lock_irqsave(&refcnt_hub_events_lock, flags);
	list_for_each_entry(e, &refcnt_hub_events, node) {
		perf_overflow_handler_t handler;

		if (e->pid != pid || e->event->attr.config != kind)
			continue;
		handler = READ_ONCE(e->event->overflow_handler);
		handler(e->event, data, regs);
	}
	spin_unlock_irqrestore(&refcnt_hub_events_lock, flags);
}

/*
 * One sample of the emulated PMU, into the code the PMU feed's overflow
 * handler runs (refcnt_pmu_sample(), with pebs_memside's stream), with
 * the sample data and registers the hardware would give. The physical
 * address goes with every sample that has a data address: the handler
 * would look it up in the sampled task's page tables, which a drain in a
 * work item does not run in; the device computed it at the access.
 */
static void refcnt_hub_pmu_sample(int cnode,
				  const struct refcnt_hub_record *r)
{
	static const enum refcnt_pmu_op ops[] = {
		[REFCNT_HUB_REC_LOAD] = REFCNT_PMU_LOADS,
		[REFCNT_HUB_REC_STORE] = REFCNT_PMU_STORES,
		[REFCNT_HUB_REC_OP] = REFCNT_PMU_OPS,
	};
	u16 kind = READ_ONCE(r->kind), flags = READ_ONCE(r->flags);
	struct perf_sample_data data;
	struct pt_regs regs;
	u32 weight = READ_ONCE(r->weight);

	if (kind >= ARRAY_SIZE(ops)) {
		/* No such record: a bad producer's. */
		refcnt_hub_stats.malformed++;
		return;
	}
	if (!weight || cnode < 0)
		return;
	perf_sample_data_init(&data, 0, weight);
	if (flags & REFCNT_HUB_F_ADDR) {
		data.addr = READ_ONCE(r->vaddr);
		data.phys_addr = READ_ONCE(r->paddr);
		data.sample_flags |= PERF_SAMPLE_ADDR | PERF_SAMPLE_PHYS_ADDR;
	}
	data.data_src.val = READ_ONCE(r->data_src);
	data.sample_flags |= PERF_SAMPLE_DATA_SRC;
	refcnt_pmu_regs(&regs, READ_ONCE(r->ip), flags & REFCNT_HUB_F_USER);
	if (atomic_read(&refcnt_hub_sessions)) {
		refcnt_hub_session_sample(cnode, kind, READ_ONCE(r->pid),
					  &data, &regs);
		return;
	}
	/* Whose it was: the drain runs in none of the sampled tasks. */
	data.tid_entry.pid = READ_ONCE(r->pid);
	data.tid_entry.tid = data.tid_entry.pid;
	if (data.tid_entry.pid)
		data.sample_flags |= PERF_SAMPLE_TID;
	refcnt_feed_pmu_sample(&refcnt_hub_pmu_feed,
			       refcnt_pmu_stream(ops[kind]), &data, &regs,
			       cnode, weight);
}

/* The PMU sink, while a module has set one. */
static const struct refcnt_hub_pmu_sink __rcu *refcnt_hub_sink;
static DEFINE_MUTEX(refcnt_hub_sink_lock);

/**
 * refcnt_hub_pmu_sink_set() - hand the emulated PMU's records to @sink
 * @sink:	the taker, until refcnt_hub_pmu_sink_clear()
 *
 * Return: 0, or -EBUSY when another sink is set.
 */
int refcnt_hub_pmu_sink_set(const struct refcnt_hub_pmu_sink *sink)
{
	int err = 0;

	mutex_lock(&refcnt_hub_sink_lock);
	if (rcu_access_pointer(refcnt_hub_sink))
		err = -EBUSY;
	else
		rcu_assign_pointer(refcnt_hub_sink, sink);
	mutex_unlock(&refcnt_hub_sink_lock);
	return err;
}
EXPORT_SYMBOL_GPL(refcnt_hub_pmu_sink_set);

/**
 * refcnt_hub_pmu_sink_clear() - the records go to "hubpmu" again
 * @sink:	as set
 *
 * Returns once no drain calls @sink any more.
 */
void refcnt_hub_pmu_sink_clear(const struct refcnt_hub_pmu_sink *sink)
{
	mutex_lock(&refcnt_hub_sink_lock);
	if (rcu_access_pointer(refcnt_hub_sink) == sink)
		RCU_INIT_POINTER(refcnt_hub_sink, NULL);
	mutex_unlock(&refcnt_hub_sink_lock);
	synchronize_rcu();
}
EXPORT_SYMBOL_GPL(refcnt_hub_pmu_sink_clear);

/* A sample of the emulated PMU: to the sink, or to "hubpmu". */
static void refcnt_hub_pmu_record(const struct refcnt_hub_pmu_sink *sink,
				  const struct refcnt_hub_rx *rx,
				  const struct refcnt_hub_record *r)
{
	if (!sink)
		refcnt_hub_pmu_sample(rx->cnode, r);
	else if (rx->cpu >= 0 && rx->cnode >= 0)
		sink->sample(rx->cpu, r);
}

/*
 * Take up to @budget records of @rx, or up to @stop if it is nearer.
 * Returns the records left before @stop, or 0 when the head is bad.
 */
static u64 refcnt_hub_drain_ring(struct refcnt_hub *h, struct refcnt_hub_rx *rx,
				 u64 budget, u64 stop)
{
	u32 mask = h->hdr.ring_records - 1;
	struct refcnt_record rec = {
		.cpu = rx->cpu < 0 ? U32_MAX : rx->cpu,
		.s = { .weight = h->hdr.period, .src_cnode = rx->cnode },
	};
	bool machine = READ_ONCE(enable) || h->sync_machine;
	const struct refcnt_hub_pmu_sink *sink;
	u64 head, n, i;

	/* Pairs with the producer's release: the records below are written. */
	head = smp_load_acquire(&rx->ctrl->head);
	if (stop == U64_MAX)
		stop = head;
	if (head - rx->tail > h->hdr.ring_records ||
	    stop - rx->tail > head - rx->tail) {
		refcnt_hub_stats.malformed++;
		return 0;
	}
	n = min(stop - rx->tail, budget);
	rcu_read_lock();
	sink = rcu_dereference(refcnt_hub_sink);
	for (i = 0; i < n; i++) {
		const struct refcnt_hub_record *r = &rx->rec[(rx->tail + i) & mask];

		/* Samples of the emulated PMU: not the hub's references. */
		if (READ_ONCE(r->kind) != REFCNT_HUB_REC_REF) {
			refcnt_hub_pmu_record(sink, rx, r);
			continue;
		}
		rec.pos = rx->tail + i;
		rec.paddr = READ_ONCE(r->paddr);
		rec.s.vaddr = READ_ONCE(r->vaddr);
		rec.s.ip = READ_ONCE(r->ip);
		rec.s.kind = READ_ONCE(r->flags) & REFCNT_HUB_F_STORE ?
			     REFCNT_SAMPLE_STORE : REFCNT_SAMPLE_LOAD;
		/* A kernel-mode reference is no process's page to move. */
		if (machine)
			refcnt_hub_add(h, rx->cnode, rec.paddr, rec.s.vaddr,
				       READ_ONCE(r->flags) & REFCNT_HUB_F_USER ?
				       READ_ONCE(r->pid) : 0);
		refcnt_feed_record(&refcnt_hub_feed, &rec, false);
		if ((i + 1) % REFCNT_HUB_TAIL_EVERY)
			continue;
		/* These are read: a producer waiting for room sees it come. */
		smp_store_release(&rx->ctrl->tail, rx->tail + i + 1);
	}
	if (sink && rx->cpu >= 0)
		sink->flush(rx->cpu);
	rcu_read_unlock();
	refcnt_hub_flush(h, rx->cnode);
	rx->tail += n;
	if (rx->cpu >= 0)
		refcnt_feed_consumed(&refcnt_hub_feed, rx->cpu, rx->tail);
	/* The records are read: the producer may write their slots again. */
	smp_store_release(&rx->ctrl->tail, rx->tail);
	return stop - rx->tail;
}

/*
 * One pass over the rings, each muted on its own with preemption off,
 * which is on again between rings: true if one has records left.
 */
static bool refcnt_hub_pass(struct refcnt_hub *h)
{
	bool more = false;
	u32 i;

	for (i = 0; i < h->hdr.nr_rings; i++) {
		if (h->rx[i].cnode < 0)
			continue;
		preempt_disable();
		refcnt_hub_mute();
		if (refcnt_hub_drain_ring(h, &h->rx[i], REFCNT_HUB_BUDGET,
					  U64_MAX))
			more = true;
		refcnt_hub_unmute();
		preempt_enable();
	}
	return more;
}

static void refcnt_hub_work(struct work_struct *work)
{
	struct refcnt_hub *h = container_of(to_delayed_work(work),
					    struct refcnt_hub, work);
	unsigned int pass;
	bool more = true;

	mutex_lock(&h->drain_lock);
	for (pass = 0; more && pass < REFCNT_HUB_PASSES; pass++) {
		more = refcnt_hub_pass(h);
		cond_resched();
	}
	mutex_unlock(&h->drain_lock);
	if (READ_ONCE(h->running))
		queue_delayed_work(system_unbound_wq, &h->work, more ? 0 : 1);
}

/*
 * The ring of the vCPU we run on, muted: the producer marks it (the
 * ring's @muted), and only the one consumer (under drain_lock) is ever
 * muted. -1 when that is not one ring (host garbage).
 */
static int refcnt_hub_own_ring(struct refcnt_hub *h)
{
	int mine = -1;
	u32 i;

	for (i = 0; i < h->hdr.nr_rings; i++) {
		if (!READ_ONCE(h->rx[i].ctrl->muted))
			continue;
		if (mine >= 0)
			return -1;
		mine = i;
	}
	return mine;
}

/*
 * Drain every ring up to the head it has now, or with @this_cpu only the
 * ring of the CPU we run on (what a program pinned here did), then run
 * every threshold interrupt that set off (refcnt_sync()): what the CPUs
 * did before is counted after. Muted throughout, migration off, so that
 * neither the drain nor the interrupt service fills the rings it empties;
 * whatever else runs here meanwhile is not reported either: a sync is for
 * tests and benchmarks. With @machine (hub_sync) the records count
 * machine-wide even with the feed off; else (a session's sync) only while
 * it is on. Called with refcnt_hub_lock held.
 */
static void refcnt_hub_sync(struct refcnt_hub *h, bool this_cpu,
			    bool machine)
{
	u64 *stop = kcalloc(h->hdr.nr_rings, sizeof(*stop), GFP_KERNEL);
	bool more = true;
	int mine = -1;
	u32 i;

	if (!stop)
		return;
	mutex_lock(&h->drain_lock);
	h->sync_machine = machine;
	migrate_disable();
	refcnt_hub_mute();
	if (this_cpu) {
		mine = refcnt_hub_own_ring(h);
		if (mine < 0) {
			/* Not knowing ours, drain them all. */
			refcnt_hub_stats.malformed++;
			this_cpu = false;
		}
	}
	for (i = 0; i < h->hdr.nr_rings; i++)
		stop[i] = this_cpu && i != mine ? h->rx[i].tail :
			  /* acquire, as refcnt_hub_drain_ring() does */
			  smp_load_acquire(&h->rx[i].ctrl->head);
	while (more) {
		more = false;
		for (i = 0; i < h->hdr.nr_rings; i++)
			if (h->rx[i].cnode >= 0 &&
			    refcnt_hub_drain_ring(h, &h->rx[i], REFCNT_HUB_BUDGET,
						  stop[i]))
				more = true;
		cond_resched();
	}
	refcnt_sync();
	refcnt_hub_unmute();
	migrate_enable();
	h->sync_machine = false;
	mutex_unlock(&h->drain_lock);
	kfree(stop);
}

/*
 * Drain while the feed is on machine-wide or sessions hold it, else stop.
 * Called with refcnt_hub_lock held.
 */
static void refcnt_hub_run(struct refcnt_hub *h)
{
	bool want = enable || refcnt_hub_held;
	u32 i;

	if (want && !h->running) {
		h->running = true;
		queue_delayed_work(system_unbound_wq, &h->work, 0);
	} else if (!want && h->running) {
		WRITE_ONCE(h->running, false);
		cancel_delayed_work_sync(&h->work);
	}
	/* A producer that may wait for room (hub_wait) waits only now. */
	for (i = 0; i < h->hdr.nr_rings; i++)
		WRITE_ONCE(h->rx[i].ctrl->draining, want);
}

/* Called with refcnt_hub_lock held. */
static int refcnt_hub_start(void)
{
	struct refcnt_hub *h = refcnt_hub_get();

	if (!h) {
		pr_warn("hub feed: no hub device (an ivshmem-plain PCI device with a refcnt hub header: refcnt-vm --hub)\n");
		return -ENODEV;
	}
	enable = 1;
	refcnt_hub_run(h);
	return 0;
}

/* enable=0: sessions may still hold it. Called with refcnt_hub_lock held. */
static void refcnt_hub_off(void)
{
	enable = 0;
	if (refcnt_hub_get())
		refcnt_hub_run(refcnt_hub_get());
}

static int refcnt_hub_enable_set(const char *val, const struct kernel_param *kp)
{
	bool on;
	int err;

	err = kstrtobool(val, &on);
	if (err)
		return err;
	mutex_lock(&refcnt_hub_lock);
	if (!refcnt_hub_ready)
		enable = on;	/* at load: started once the driver is up */
	else if (on)
		err = refcnt_hub_start();
	else
		refcnt_hub_off();
	mutex_unlock(&refcnt_hub_lock);
	return err;
}

static const struct kernel_param_ops refcnt_hub_enable_ops = {
	.set = refcnt_hub_enable_set,
	.get = param_get_uint,
};

module_param_cb(enable, &refcnt_hub_enable_ops, &enable, 0644);
MODULE_PARM_DESC(enable,
		 "1 drains the hub device (refcnt-vm --hub) into refcnt's counters (default 0: off)");

/* An event of the "refcnt_hub" PMU is gone: no drain reaches it again. */
static void refcnt_hub_event_destroy(struct perf_event *event)
{
	struct refcnt_hub_event *e = event->pmu_private;
	unsigned long flags;

	spin_lock_irqsave(&refcnt_hub_events_lock, flags);
	list_del(&e->node);
	spin_unlock_irqrestore(&refcnt_hub_events_lock, flags);
	kfree(e);
}

/*
 * A session's event of one kind of sample (config: REFCNT_HUB_REC_LOAD,
 * _STORE or _OP) on a thread, or one perf inherits from it. Only events
 * made in the kernel with a handler's context (refcnt.ko's sessions'):
 * the drain calls their handlers, which a perf_event_open() event has
 * not, from a work item.
 */
static int refcnt_hub_event_init(struct perf_event *event)
{
	struct refcnt_hub_event *e;
	unsigned long flags;

	if (event->attr.type != event->pmu->type)
		return -ENOENT;
	if (!(event->attach_state & PERF_ATTACH_TASK) || !event->hw.target ||
	    !event->overflow_handler_context ||
	    event->attr.config < REFCNT_HUB_REC_LOAD ||
	    event->attr.config > REFCNT_HUB_REC_OP)
		return -EINVAL;
	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	e->event = event;
	e->pid = task_pid_nr(event->hw.target);
	event->pmu_private = e;
	event->destroy = refcnt_hub_event_destroy;
	spin_lock_irqsave(&refcnt_hub_events_lock, flags);
	list_add_tail(&e->node, &refcnt_hub_events);
	spin_unlock_irqrestore(&refcnt_hub_events_lock, flags);
	return 0;
}

/*
 * The event's thread runs on this CPU from now on: the device stamps its
 * pid on this CPU's samples (all of the thread's events say the same).
 */
static int refcnt_hub_event_add(struct perf_event *event, int flags)
{
	struct refcnt_hub_ring *ring = this_cpu_read(refcnt_hub_cpu_ring);
	struct refcnt_hub_event *e = event->pmu_private;

	this_cpu_inc(refcnt_hub_cpu_active);
	if (ring)
		WRITE_ONCE(ring->task, e->pid);
	event->hw.state = flags & PERF_EF_START ? 0 : PERF_HES_STOPPED;
	return 0;
}

/*
 * Whose the machine's samples and records are, as a PMU's overflow
 * handler knows from current: at each context switch the task switched
 * to goes in this CPU's ring (@task), its process's pid, 0 for a kernel
 * thread. Not while counting sessions hold the emulated PMU: their
 * events stamp their own thread (add() and del()), and a CPU with none
 * scheduled says nobody's. A stamp that races a session's start lasts
 * until that CPU's next switch.
 */
static void refcnt_hub_sched_switch(void *data, bool preempt,
				    struct task_struct *prev,
				    struct task_struct *next,
				    unsigned int prev_state)
{
	struct refcnt_hub_ring *ring = this_cpu_read(refcnt_hub_cpu_ring);

	if (ring && !atomic_read(&refcnt_hub_sessions) &&
	    !this_cpu_read(refcnt_hub_cpu_active))
		WRITE_ONCE(ring->task, next->mm ? task_tgid_nr(next) : 0);
}

static struct tracepoint *refcnt_hub_switch_tp;

static void refcnt_hub_find_switch(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_switch"))
		refcnt_hub_switch_tp = tp;
}

/* The sched_switch tracepoint's probe, or a warning that pids are 0. */
static void refcnt_hub_stamp_tasks(void)
{
	for_each_kernel_tracepoint(refcnt_hub_find_switch, NULL);
	if (!refcnt_hub_switch_tp ||
	    tracepoint_probe_register(refcnt_hub_switch_tp,
				      (void *)refcnt_hub_sched_switch, NULL)) {
		refcnt_hub_switch_tp = NULL;
		pr_warn("no sched_switch tracepoint: the machine's samples name no process\n");
	}
}

static void refcnt_hub_unstamp_tasks(void)
{
	if (!refcnt_hub_switch_tp)
		return;
	tracepoint_probe_unregister(refcnt_hub_switch_tp,
				    (void *)refcnt_hub_sched_switch, NULL);
	/* No probe runs on past here. */
	tracepoint_synchronize_unregister();
}

/* Every CPU's ring says nobody's; rings mapped (refcnt_hub_get()). */
static void refcnt_hub_clear_tasks(void)
{
	struct refcnt_hub_ring *ring;
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		ring = per_cpu(refcnt_hub_cpu_ring, cpu);
		if (ring)
			WRITE_ONCE(ring->task, 0);
	}
}

/* The thread's last event here is off: nobody's samples. */
static void refcnt_hub_event_del(struct perf_event *event, int flags)
{
	struct refcnt_hub_ring *ring = this_cpu_read(refcnt_hub_cpu_ring);

	if (!this_cpu_dec_return(refcnt_hub_cpu_active) && ring)
		WRITE_ONCE(ring->task, 0);
	event->hw.state = PERF_HES_STOPPED;
}

static void refcnt_hub_event_start(struct perf_event *event, int flags)
{
	event->hw.state = 0;
}

static void refcnt_hub_event_stop(struct perf_event *event, int flags)
{
	event->hw.state = PERF_HES_STOPPED;
}

/* No count to read: the events only sample. */
static void refcnt_hub_event_read(struct perf_event *event)
{
}

/*
 * The emulated PMU as perf sees it. A software context: its events are
 * always scheduled with their thread (add() cannot fail).
 */
static struct pmu refcnt_hub_perf_pmu = {
	.module = THIS_MODULE,
	.task_ctx_nr = perf_sw_context,
	.event_init = refcnt_hub_event_init,
	.add = refcnt_hub_event_add,
	.del = refcnt_hub_event_del,
	.start = refcnt_hub_event_start,
	.stop = refcnt_hub_event_stop,
	.read = refcnt_hub_event_read,
};

/*
 * The feed's prepare(): counting sessions only, with a device bound.
 * The period is the device's, which the rig programs (struct
 * refcnt_hub_control); a sample's weight says it.
 */
static int refcnt_hub_pmu_prepare(struct refcnt_feed *feed, bool task,
				  unsigned int *period, void **setup)
{
	int err = 0;

	if (!task)
		return -EOPNOTSUPP;
	mutex_lock(&refcnt_hub_lock);
	if (refcnt_hub_get()) {
		/* The first session: the machine's stamps are nobody's now. */
		if (atomic_inc_return(&refcnt_hub_sessions) == 1)
			refcnt_hub_clear_tasks();
		/* Not NULL: attr() describes the events of a session. */
		*setup = &refcnt_hub_perf_pmu;
	} else {
		err = -EOPNOTSUPP;
	}
	mutex_unlock(&refcnt_hub_lock);
	return err;
}

static void refcnt_hub_pmu_finish(struct refcnt_feed *feed, bool task,
				  void *setup)
{
	atomic_dec(&refcnt_hub_sessions);
}

/*
 * The feed's attr(): a session's thread gets an event of each kind of
 * sample, each with the stream a real PMU's event of that kind has. No
 * description for refcnt_perf_access() (@setup NULL): sessions check
 * their caller with the PEBS/IBS feed's, as on every machine.
 */
static int refcnt_hub_pmu_attr(struct refcnt_feed *feed, void *setup,
			       int cpu, unsigned int k,
			       struct refcnt_feed_event *ev)
{
	static const enum refcnt_pmu_op ops[] = {
		REFCNT_PMU_LOADS, REFCNT_PMU_STORES, REFCNT_PMU_OPS,
	};

	if (cpu >= 0 || !setup || k >= ARRAY_SIZE(ops))
		return REFCNT_FEED_NO_EVENT;
	memset(ev, 0, sizeof(*ev));
	ev->attr.type = refcnt_hub_perf_pmu.type;
	ev->attr.size = sizeof(ev->attr);
	ev->attr.config = REFCNT_HUB_REC_LOAD + k;
	ev->stream = refcnt_pmu_stream(ops[k]);
	return 0;
}

/* The feed's sample(): from the drain, for the record's node. */
static enum refcnt_sample_outcome
refcnt_hub_pmu_op_sample(struct refcnt_feed_target *t,
			 struct perf_event *event,
			 struct perf_sample_data *data, struct pt_regs *regs,
			 struct refcnt_outcome *out)
{
	return refcnt_pmu_sample(t->stream, t->ranges, t->nr_ranges, data,
				 regs, refcnt_hub_sample_cnode, data->period,
				 out);
}

/*
 * The feed's describe(): what a real PMU's sample would say (weight: the
 * device's period), from the record's node, not the draining CPU's.
 */
static void refcnt_hub_pmu_describe(const struct refcnt_feed_target *t,
				    struct perf_event *event,
				    struct perf_sample_data *data,
				    struct pt_regs *regs,
				    struct refcnt_sample *s)
{
	refcnt_pmu_sample_describe(t->stream, data, regs, s);
	s->src_cnode = refcnt_hub_sample_cnode;
}

static const struct refcnt_feed_ops refcnt_hub_pmu_ops = {
	.prepare = refcnt_hub_pmu_prepare,
	.finish = refcnt_hub_pmu_finish,
	.attr = refcnt_hub_pmu_attr,
	.sample = refcnt_hub_pmu_op_sample,
	.describe = refcnt_hub_pmu_describe,
};

/*
 * Each CPU's ring (refcnt_hub_map_cpus() found them) for the PMU's add()
 * and del(): as the device is published, so that a second device's
 * probe changes nothing.
 */
static void refcnt_hub_set_cpu_rings(struct refcnt_hub *h)
{
	unsigned int cpu;
	int ring;

	for_each_online_cpu(cpu) {
		ring = h->ring_of_cpu[cpu];
		per_cpu(refcnt_hub_cpu_ring, cpu) = ring < 0 ? NULL :
						    h->rx[ring].ctrl;
		if (ring < 0)
			dev_warn(&h->pdev->dev, "CPU %u: no ring marked muted: its samples are nobody's\n",
				 cpu);
	}
}

/*
 * No CPU's ring any more: add() and del() still running (interrupts
 * off) are waited for by the synchronize_rcu() of remove.
 */
static void refcnt_hub_unmap_cpus(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		per_cpu(refcnt_hub_cpu_ring, cpu) = NULL;
}

/* The header copied at probe: 0, -ENODEV if not a hub's, -EINVAL if bad. */
static int refcnt_hub_check(const struct refcnt_hub_header *hdr, u64 len)
{
	u64 ring_bytes;

	if (hdr->magic != REFCNT_HUB_MAGIC)
		return -ENODEV;
	if (hdr->version != REFCNT_HUB_VERSION ||
	    hdr->header_size != REFCNT_HUB_HEADER_SIZE ||
	    hdr->record_size != sizeof(struct refcnt_hub_record) ||
	    hdr->size > len || !hdr->nr_rings ||
	    hdr->nr_rings > REFCNT_HUB_MAX_VCPUS ||
	    hdr->ring_records < 16 || !is_power_of_2(hdr->ring_records) ||
	    !hdr->period ||
	    hdr->flags & ~(REFCNT_HUB_MISSES | REFCNT_HUB_LLC) ||
	    hdr->ring_stride % 4096)
		return -EINVAL;
	ring_bytes = REFCNT_HUB_RING_CTRL +
		     (u64)hdr->ring_records * sizeof(struct refcnt_hub_record);
	if (hdr->ring_stride < ring_bytes ||
	    REFCNT_HUB_HEADER_SIZE + (u64)hdr->nr_rings * hdr->ring_stride >
	    hdr->size)
		return -EINVAL;
	return 0;
}

/*
 * Each ring's place and source: its vCPU's node as the header says, and
 * that node's cnodeid; rings of vCPUs of no counted node stay idle.
 */
static void refcnt_hub_rings(struct refcnt_hub *h, void *base)
{
	u32 i;

	for (i = 0; i < h->hdr.nr_rings; i++) {
		struct refcnt_hub_rx *rx = &h->rx[i];
		char *r = base + REFCNT_HUB_HEADER_SIZE +
			  (u64)i * h->hdr.ring_stride;

		rx->ctrl = (struct refcnt_hub_ring *)r;
		rx->rec = (struct refcnt_hub_record *)(r + REFCNT_HUB_RING_CTRL);
		/* What the producer published before we came is not ours. */
		rx->tail = READ_ONCE(rx->ctrl->head);
		rx->overruns = READ_ONCE(rx->ctrl->overruns);
		WRITE_ONCE(rx->ctrl->task, 0);
		/* Pairs with the producer's acquire of the tail. */
		smp_store_release(&rx->ctrl->tail, rx->tail);
		rx->cnode = refcnt_nid_cnode(h->hdr.vcpu_node[i]);
		rx->cpu = -1;
	}
}

/* On a CPU, muted for an instant: the ring the producer marks is its. */
static long refcnt_hub_find_ring(void *arg)
{
	struct refcnt_hub *h = arg;
	int ring;

	preempt_disable();
	refcnt_hub_mute();
	ring = refcnt_hub_own_ring(h);
	refcnt_hub_unmute();
	preempt_enable();
	return ring;
}

/*
 * Which ring is which CPU's, found on each CPU: a counted thread's
 * records are positions in the ring of the CPU it runs on. The rig's
 * CPUs are all online from boot.
 */
static int refcnt_hub_map_cpus(struct refcnt_hub *h)
{
	unsigned int cpu;
	long ring;

	h->ring_of_cpu = devm_kcalloc(&h->pdev->dev, nr_cpu_ids,
				      sizeof(*h->ring_of_cpu), GFP_KERNEL);
	if (!h->ring_of_cpu)
		return -ENOMEM;
	for (cpu = 0; cpu < nr_cpu_ids; cpu++)
		h->ring_of_cpu[cpu] = -1;
	mutex_lock(&h->drain_lock);
	for_each_online_cpu(cpu) {
		ring = work_on_cpu(cpu, refcnt_hub_find_ring, h);
		if (ring < 0 || ring >= h->hdr.nr_rings || h->rx[ring].cpu >= 0)
			continue;
		h->ring_of_cpu[cpu] = ring;
		h->rx[ring].cpu = cpu;
	}
	mutex_unlock(&h->drain_lock);
	return 0;
}

static int refcnt_hub_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct refcnt_hub_header hdr;
	struct refcnt_hub *h;
	u64 len;
	void *base;
	int err;

	err = pcim_enable_device(pdev);
	if (err)
		return err;
	len = pci_resource_len(pdev, 2);
	if (len < REFCNT_HUB_HEADER_SIZE)
		return -ENODEV;
	base = devm_memremap(&pdev->dev, pci_resource_start(pdev, 2), len,
			     MEMREMAP_WB);
	if (IS_ERR(base))
		return PTR_ERR(base);
	memcpy(&hdr, base, sizeof(hdr));
	err = refcnt_hub_check(&hdr, len);
	if (err == -ENODEV) {
		/* Someone else's shared memory: leave it, and it, alone. */
		devm_memunmap(&pdev->dev, base);
		return err;
	}
	if (err) {
		dev_warn(&pdev->dev, "hub device with a bad header (version %u, %u rings of %u records): refused\n",
			 hdr.version, hdr.nr_rings, hdr.ring_records);
		return err;
	}
	h = devm_kzalloc(&pdev->dev, struct_size(h, rx, hdr.nr_rings),
			 GFP_KERNEL);
	if (!h)
		return -ENOMEM;
	h->pdev = pdev;
	h->hdr = hdr;
	h->granularity_shift = refcnt_granularity_shift();
	mutex_init(&h->drain_lock);
	INIT_DELAYED_WORK(&h->work, refcnt_hub_work);
	refcnt_hub_rings(h, base);
	err = refcnt_hub_map_cpus(h);
	if (err)
		return err;
	mutex_lock(&refcnt_hub_lock);
	if (refcnt_hub_get()) {
		mutex_unlock(&refcnt_hub_lock);
		dev_warn(&pdev->dev, "a second hub device: only one is drained\n");
		return -EBUSY;
	}
	refcnt_hub_set_cpu_rings(h);
	rcu_assign_pointer(refcnt_hub_dev, h);
	if (refcnt_hub_held)
		refcnt_hub_run(h);
	mutex_unlock(&refcnt_hub_lock);
	pci_set_drvdata(pdev, h);
	dev_info(&pdev->dev, "hub device: %u rings of %u records, period %u%s\n",
		 hdr.nr_rings, hdr.ring_records, hdr.period,
		 hdr.flags & REFCNT_HUB_MISSES ? ", LLC misses only" : "");
	return 0;
}

static void refcnt_hub_remove(struct pci_dev *pdev)
{
	struct refcnt_hub *h = pci_get_drvdata(pdev);

	mutex_lock(&refcnt_hub_lock);
	enable = 0;
	refcnt_hub_held = false;
	refcnt_hub_run(h);
	refcnt_hub_unmap_cpus();
	RCU_INIT_POINTER(refcnt_hub_dev, NULL);
	mutex_unlock(&refcnt_hub_lock);
	/*
	 * The scheduler may be reading its rings' positions, or writing the
	 * pid of a thread with events of the PMU into one.
	 */
	synchronize_rcu();
}

/*
 * Any ivshmem device: probe claims only those with a hub header. No
 * MODULE_DEVICE_TABLE: the rig loads the module, nothing autoloads it.
 */
static const struct pci_device_id refcnt_hub_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1110) },
	{ }
};

static struct pci_driver refcnt_hub_driver = {
	.name = "refcnt-hub",
	.id_table = refcnt_hub_ids,
	.probe = refcnt_hub_probe,
	.remove = refcnt_hub_remove,
};

/*
 * The producer's drops since the device was bound, as it says (the host
 * counts them too); host garbage can make this any number.
 */
static u64 refcnt_hub_overruns(void)
{
	u64 sum = 0;
	u32 i;

	struct refcnt_hub *h;

	mutex_lock(&refcnt_hub_lock);
	h = refcnt_hub_get();
	for (i = 0; h && i < h->hdr.nr_rings; i++)
		sum += READ_ONCE(h->rx[i].ctrl->overruns) - h->rx[i].overruns;
	mutex_unlock(&refcnt_hub_lock);
	return sum;
}

#define REFCNT_HUB_STAT(stat)						\
static ssize_t hub_##stat##_show(struct kobject *kobj,			\
				 struct kobj_attribute *attr, char *buf) \
{									\
	return sysfs_emit(buf, "%llu\n", READ_ONCE(refcnt_hub_stats.stat)); \
}									\
static struct kobj_attribute hub_##stat##_attr = __ATTR_RO(hub_##stat)

REFCNT_HUB_STAT(references);
REFCNT_HUB_STAT(malformed);

static ssize_t hub_overruns_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", refcnt_hub_overruns());
}

static struct kobj_attribute hub_overruns_attr = __ATTR_RO(hub_overruns);

static ssize_t hub_period_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	u32 period;

	mutex_lock(&refcnt_hub_lock);
	period = refcnt_hub_get() ? refcnt_hub_get()->hdr.period : 0;
	mutex_unlock(&refcnt_hub_lock);
	return sysfs_emit(buf, "%u\n", period);
}

static struct kobj_attribute hub_period_attr = __ATTR_RO(hub_period);

/*
 * One line per drained ring: vCPU, node, head, tail, producer's counts;
 * then its Linux CPU (-1: none found), the pid its records are stamped
 * with now and the events of the PMU scheduled there, to tell why
 * records name no process.
 */
static ssize_t hub_rings_show(struct kobject *kobj, struct kobj_attribute *attr,
			      char *buf)
{
	struct refcnt_hub *h;
	ssize_t len = 0;
	u32 i;

	mutex_lock(&refcnt_hub_lock);
	h = refcnt_hub_get();
	for (i = 0; h && i < h->hdr.nr_rings; i++) {
		const struct refcnt_hub_rx *rx = &h->rx[i];

		if (rx->cnode < 0)
			continue;
		len += sysfs_emit_at(buf, len,
				     "vcpu %u node %u head %llu tail %llu references %llu overruns %llu cpu %d task %llu active %u\n",
				     i, h->hdr.vcpu_node[i],
				     READ_ONCE(rx->ctrl->head), READ_ONCE(rx->tail),
				     READ_ONCE(rx->ctrl->references),
				     READ_ONCE(rx->ctrl->overruns), rx->cpu,
				     (u64)READ_ONCE(rx->ctrl->task),
				     rx->cpu < 0 ? 0 :
				     READ_ONCE(per_cpu(refcnt_hub_cpu_active,
						       rx->cpu)));
	}
	mutex_unlock(&refcnt_hub_lock);
	return len;
}

static struct kobj_attribute hub_rings_attr = __ATTR_RO(hub_rings);

/*
 * "1": drain what every vCPU reported so far, then return; "cpu": only
 * what this CPU's vCPU did. Also with the feed off, so that a test can
 * drain exactly when it wants.
 */
static ssize_t hub_sync_store(struct kobject *kobj, struct kobj_attribute *attr,
			      const char *buf, size_t count)
{
	int err = 0;

	mutex_lock(&refcnt_hub_lock);
	if (refcnt_hub_get())
		refcnt_hub_sync(refcnt_hub_get(), sysfs_streq(buf, "cpu"),
				true);
	else
		err = -ENODEV;
	mutex_unlock(&refcnt_hub_lock);
	return err ?: count;
}

static struct kobj_attribute hub_sync_attr = __ATTR_WO(hub_sync);

static struct attribute *refcnt_hub_attrs[] = {
	&hub_references_attr.attr,
	&hub_malformed_attr.attr,
	&hub_overruns_attr.attr,
	&hub_period_attr.attr,
	&hub_sync_attr.attr,
	&hub_rings_attr.attr,
	NULL,
};

/* Beside the feed's statistics, in /sys/kernel/refcnt. */
static const struct attribute_group refcnt_hub_group = {
	.attrs = refcnt_hub_attrs,
};

/* The position of CPU @cpu's ring: records its vCPU published so far. */
static u64 refcnt_hub_position(struct refcnt_feed *feed, unsigned int cpu)
{
	struct refcnt_hub *h = rcu_dereference_sched(refcnt_hub_dev);
	int ring;

	if (!h || cpu >= nr_cpu_ids)
		return 0;
	ring = h->ring_of_cpu[cpu];
	return ring < 0 ? 0 : READ_ONCE(h->rx[ring].ctrl->head);
}

/* Records CPU @cpu's vCPU could not publish so far: its ring was full. */
static u64 refcnt_hub_lost(struct refcnt_feed *feed, unsigned int cpu)
{
	struct refcnt_hub *h = rcu_dereference_sched(refcnt_hub_dev);
	int ring;

	if (!h || cpu >= nr_cpu_ids)
		return 0;
	ring = h->ring_of_cpu[cpu];
	return ring < 0 ? 0 : READ_ONCE(h->rx[ring].ctrl->overruns);
}

/* Sessions hold the feed: drain for them, machine-wide or not. */
static int refcnt_hub_hold(struct refcnt_feed *feed, bool on)
{
	struct refcnt_hub *h;
	int err = 0;

	mutex_lock(&refcnt_hub_lock);
	h = refcnt_hub_get();
	if (on && !h) {
		err = -ENODEV;
	} else {
		refcnt_hub_held = on;
		if (h)
			refcnt_hub_run(h);
	}
	mutex_unlock(&refcnt_hub_lock);
	return err;
}

/* A session is read: every record so far delivered. */
static void refcnt_hub_feed_sync(struct refcnt_feed *feed)
{
	mutex_lock(&refcnt_hub_lock);
	if (refcnt_hub_get())
		refcnt_hub_sync(refcnt_hub_get(), false, false);
	mutex_unlock(&refcnt_hub_lock);
}

static u32 refcnt_hub_period(struct refcnt_feed *feed, bool *on)
{
	struct refcnt_hub *h;
	u32 period;

	rcu_read_lock();
	h = rcu_dereference(refcnt_hub_dev);
	period = h ? h->hdr.period : 0;
	rcu_read_unlock();
	*on = period && READ_ONCE(enable);
	return period;
}

static const struct refcnt_device_ops refcnt_hub_ops = {
	.position = refcnt_hub_position,
	.lost = refcnt_hub_lost,
	.hold = refcnt_hub_hold,
	.sync = refcnt_hub_feed_sync,
	.period = refcnt_hub_period,
};

/*
 * The feed first (the drain delivers to it), then the driver, which binds
 * a hub device if there is one; the feed starts if asked at load
 * (enable=1), which without a device is refused with one line in dmesg.
 */
static int __init refcnt_hub_init(void)
{
	int err;

	err = perf_pmu_register(&refcnt_hub_perf_pmu, "refcnt_hub", -1);
	if (err)
		return err;
	err = refcnt_feed_register(&refcnt_hub_feed);
	if (err)
		goto out_perf;
	err = refcnt_feed_register(&refcnt_hub_pmu_feed);
	if (err)
		goto out_hub;
	refcnt_hub_stamp_tasks();
	err = pci_register_driver(&refcnt_hub_driver);
	if (err)
		goto out_stamp;
	mutex_lock(&refcnt_hub_lock);
	refcnt_hub_ready = true;
	if (enable && refcnt_hub_start())
		enable = 0;
	mutex_unlock(&refcnt_hub_lock);
	return 0;

out_stamp:
	refcnt_hub_unstamp_tasks();
	refcnt_feed_unregister(&refcnt_hub_pmu_feed);
out_hub:
	refcnt_feed_unregister(&refcnt_hub_feed);
out_perf:
	perf_pmu_unregister(&refcnt_hub_perf_pmu);
	return err;
}

/* The driver first: once unbound, nothing delivers to the feed. */
static void __exit refcnt_hub_exit(void)
{
	mutex_lock(&refcnt_hub_lock);
	refcnt_hub_ready = false;
	mutex_unlock(&refcnt_hub_lock);
	pci_unregister_driver(&refcnt_hub_driver);
	refcnt_hub_unstamp_tasks();
	refcnt_feed_unregister(&refcnt_hub_pmu_feed);
	refcnt_feed_unregister(&refcnt_hub_feed);
	perf_pmu_unregister(&refcnt_hub_perf_pmu);
}

module_init(refcnt_hub_init);
module_exit(refcnt_hub_exit);

MODULE_DESCRIPTION("refcnt hub feed: the emulator's memory-side reference device");
MODULE_AUTHOR("refcnt developers");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(REFCNT_NS);
