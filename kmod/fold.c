// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the threshold interrupt, and the other deferred work of a node.
 *
 * The reference path only sets per-set bits (fold, peg, migration) and
 * raises an irq_work, which is NMI-safe; the irq_work queues fold_work.
 * fold_work is the interrupt service: in process context, under the
 * node's fold_lock, it queues peg and migration events and folds whole
 * sets: every hardware counter of the set is added to its extended
 * counter (saturating at 2^32-1) and reset to 0. A fold that finds no
 * memory for an extended counter leaves the count in hardware and the
 * set raised, and the service runs again later, backing off while memory
 * stays short; it never raises the irq_work itself.
 *
 * A delivery of many references that crosses the absolute threshold is
 * folded where it is made (refcnt_fold_inline(), refcnt_fold_more()):
 * those references came one by one with the interrupt keeping up. Such
 * folds take no lock: a hardware count moves to its extended counter
 * with xchg, so each count is folded by exactly one of the two, and
 * extended counters are only ever added to atomically. Their FOLD events
 * wait in the node's fold log for the service to queue them.
 */
#include <linux/bitmap.h>
#include <linux/jiffies.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <uapi/linux/refcnt.h>

#include "core.h"

/* Retrying folds that found no memory: after 10 ms, doubling to 1 s. */
#define REFCNT_FOLD_RETRY_MIN_MS	10
#define REFCNT_FOLD_RETRY_MAX_MS	1000

/**
 * refcnt_raise() - raise an interrupt for a set
 * @node:	the node
 * @pending:	bitmap to mark @set in, or NULL if the caller did
 * @set:	the set
 *
 * Any context, NMI included.
 */
void refcnt_raise(struct refcnt_node *node, unsigned long *pending, u64 set)
{
	if (pending)
		set_bit(set, pending);
	set_bit(set / BITS_PER_LONG, node->attention);
	irq_work_queue(&node->irq_work);
}

/**
 * refcnt_irq_work() - the first half of the threshold interrupt
 * @work:	the node's irq_work, raised from any context, NMI included
 *
 * Hard interrupt context, soon after the raise, on the raising CPU:
 * counts what NMIs deferred for want of a counter page (allocation is
 * allowed here), and queues the interrupt service, refcnt_fold_work().
 */
void refcnt_irq_work(struct irq_work *work)
{
	struct refcnt_node *node = container_of(work, struct refcnt_node,
						irq_work);

	refcnt_defer_replay(node);
	/* Not sooner than a retry already waiting: memory is short then. */
	queue_delayed_work(system_unbound_wq, &node->fold_work, 0);
}

static void refcnt_event_init(const struct refcnt_node *node, u64 set,
			      u32 type, struct rcb_event *ev)
{
	const struct refcnt_ctx_slot *slot = &node->ctx[set & node->ctx_mask];

	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->set = set;
	ev->paddr = refcnt_set_paddr(node, set);
	ev->home_cnodeid = node->cnodeid;

	/* A lossy cache written locklessly: trust it only if stable. */
	if (READ_ONCE(slot->set) == set) {
		/* Fields after the set; pairs with refcnt_ctx_note() */
		smp_rmb();
		ev->pid = READ_ONCE(slot->pid);
		ev->vaddr = READ_ONCE(slot->vaddr);
		/* The set again after the fields: unchanged means consistent */
		smp_rmb();
		if (READ_ONCE(slot->set) == set) {
			ev->flags |= RCB_EVENT_F_CONTEXT;
		} else {
			ev->pid = 0;
			ev->vaddr = 0;
		}
	}
}

static void refcnt_event_counter(struct rcb_event *ev, unsigned int counter,
				 u32 count)
{
	ev->counter = counter;
	ev->src_cnodeid = counter << refcnt_topo.counter_shift;
	ev->count = count;
}

static void refcnt_queue(struct refcnt_node *node, struct rcb_event *ev)
{
	if (!refcnt_events_queue(&node->events, ev))
		this_cpu_inc(node->stats->events_dropped);
}

/*
 * The makers of records are noinline_for_stack: each holds a 72-byte
 * struct rcb_event that, inlined, would add up in refcnt_service()'s
 * frame, under every fold's call chain.
 */

/* The first references of a set lost to a pegged counter since its fold. */
static noinline_for_stack void
refcnt_peg_event(struct refcnt_node *node, u64 set)
{
	u64 first = refcnt_set_first(set);
	unsigned int c, top = 0;
	u32 most = 0;
	struct rcb_event ev;

	for (c = 0; c < refcnt_topo.counters_per_set; c++) {
		u32 lost = refcnt_sparse_read(&node->lost, first + c);

		if (lost > most) {
			most = lost;
			top = c;
		}
	}
	refcnt_event_init(node, set, RCB_EVENT_PEG, &ev);
	refcnt_event_counter(&ev, top, most);
	refcnt_queue(node, &ev);
}

/* A set's MIGRATE record, with its hardware counts as they are now. */
static void refcnt_migrate_record(struct refcnt_node *node, u64 set,
				  struct rcb_event *ev)
{
	u64 first = refcnt_set_first(set);
	unsigned int c, top = U32_MAX;
	u32 most = 0;

	for (c = 0; c < refcnt_topo.counters_per_set; c++) {
		u32 v = refcnt_sparse_read(&node->hw, first + c);

		/* The first remote counter when all are 0 (after a fold) */
		if (c != node->home_counter && (v > most || top == U32_MAX)) {
			most = v;
			top = c;
		}
	}
	refcnt_event_init(node, set, RCB_EVENT_MIGRATE, ev);
	refcnt_event_counter(ev, top, most);
	ev->home_count = refcnt_home_count(node, first);
}

/*
 * A remote counter ahead of the home counter by the differential. The
 * record is never dropped: a full queue leaves it owed, and one owed
 * record per set stands for every later crossing until it is queued.
 */
static noinline_for_stack void
refcnt_migrate_event(struct refcnt_node *node, u64 set)
{
	struct rcb_event ev;

	this_cpu_inc(node->stats->migrations);
	if (test_bit(set, node->migrate_owed))
		return;
	refcnt_migrate_record(node, set, &ev);
	if (!refcnt_events_offer(&node->events, &ev)) {
		set_bit(set, node->migrate_owed);
		node->nr_owed++;
	}
}

/*
 * The MIGRATE records a full queue refused, first, in set order, made
 * now: until the queue refuses one again. A crossing the set raised since
 * is in the counts now: this record stands for it too.
 */
static noinline_for_stack void
refcnt_service_owed(struct refcnt_node *node)
{
	struct rcb_event ev;
	unsigned long set;

	if (!node->nr_owed)
		return;
	for_each_set_bit(set, node->migrate_owed, node->nr_sets) {
		refcnt_migrate_record(node, set, &ev);
		ev.flags |= RCB_EVENT_F_LATE;
		if (!refcnt_events_offer(&node->events, &ev))
			return;
		clear_bit(set, node->migrate_owed);
		if (test_and_clear_bit(set, node->migrate_pending))
			this_cpu_inc(node->stats->migrations);
		if (!--node->nr_owed)
			return;
		cond_resched();
	}
}

/*
 * Add @v to an extended counter; what does not fit is lost. Atomic: the
 * reference path folds into extended counters too. Any context: the lost
 * count's page is only made where allocation is allowed.
 */
static void refcnt_extend(struct refcnt_node *node, u32 *ext, u64 idx, u32 v)
{
	u32 over = refcnt_sat_add(ext, v);

	if (unlikely(over)) {
		refcnt_lost_add(node, refcnt_counter_word(node, &node->lost,
							  idx), over);
		this_cpu_add(node->stats->saturated, over);
	}
}

/* A set's FOLD record: @top held @most. */
static noinline_for_stack void
refcnt_fold_event(struct refcnt_node *node, u64 set, unsigned int top,
		  u32 most)
{
	struct rcb_event ev;

	refcnt_event_init(node, set, RCB_EVENT_FOLD, &ev);
	refcnt_event_counter(&ev, top, most);
	refcnt_queue(node, &ev);
}

/*
 * The threshold interrupt proper: fold the complete set. False when a
 * counter found no memory: it stays in hardware, the set stays raised.
 */
static bool refcnt_fold_set(struct refcnt_node *node, u64 set)
{
	u64 first = refcnt_set_first(set);
	unsigned int c, top = 0;
	bool folded = true;
	u32 most = 0;

	for (c = 0; c < refcnt_topo.counters_per_set; c++) {
		u32 *hw = refcnt_sparse_word(&node->hw, first + c);
		u32 *ext, v;

		if (!hw || !READ_ONCE(*hw))
			continue;
		ext = refcnt_table_counter(&node->table, first + c);
		if (!ext) {
			/* No memory: leave it in hardware for the retry. */
			folded = false;
			continue;
		}
		v = xchg(hw, 0);
		refcnt_extend(node, ext, first + c, v);
		if (v > most) {
			most = v;
			top = c;
		}
	}
	if (!folded) {
		/* Raised again, without the irq_work: the retry finds it. */
		set_bit(set, node->fold_pending);
		set_bit(set / BITS_PER_LONG, node->attention);
	}
	clear_bit(set, node->pegged);
	clear_bit(set, node->migrated);
	/* Raised by a reference that raced a fold or a reset: nothing left. */
	if (!most)
		return folded;
	this_cpu_inc(node->stats->folds);
	refcnt_fold_event(node, set, top, most);
	return folded;
}

/*
 * Queue an entry's FOLD events, alike, at once: the whole folds of a big
 * delivery may stand for millions; what the queue has no room for is
 * dropped.
 */
static noinline_for_stack void
refcnt_fold_entry_events(struct refcnt_node *node,
			 const struct refcnt_fold_entry *e)
{
	struct rcb_event ev;

	refcnt_event_init(node, e->set, RCB_EVENT_FOLD, &ev);
	refcnt_event_counter(&ev, e->counter, e->count);
	this_cpu_add(node->stats->events_dropped,
		     refcnt_events_queue_alike(&node->events, &ev, e->nr));
}

/* The events of the folds made on the reference path, in their order. */
static void refcnt_service_fold_log(struct refcnt_node *node)
{
	struct refcnt_fold_entry e;
	u64 dropped;

	while (refcnt_fold_log_take(&node->fold_log, &e)) {
		refcnt_fold_entry_events(node, &e);
		cond_resched();
	}
	dropped = atomic64_xchg(&node->fold_log.dropped, 0);
	if (dropped) {
		refcnt_events_drop(&node->events, dropped);
		this_cpu_add(node->stats->events_dropped, dropped);
	}
}

/* An extended counter where the reference path stands: no page made in NMI. */
static u32 *refcnt_ext_word(struct refcnt_node *node, u64 idx)
{
	u32 *word = refcnt_sparse_word(&node->table.counters, idx);

	if (likely(word) || in_nmi())
		return word;
	return refcnt_table_counter_atomic(&node->table, idx);
}

/**
 * refcnt_fold_inline() - fold a set on the reference path
 * @node:	the node
 * @set:	the set, whose counter @idx is at or above the threshold
 * @idx:	index of the counter that reached it
 * @mine:	that counter, as the caller found it: after a reset took its
 *		page out of the array, the page it counts in until the
 *		grace period ends
 *
 * The threshold interrupt keeping up with a delivery: the whole set is
 * folded now, as the interrupt service would, and the interrupt raised
 * for it is served. Any context, NMI included, no lock: each count moves
 * with xchg, so it is folded here or by the service, never both. A
 * counter whose extended page cannot be had here (in NMI) stays in
 * hardware and the set stays raised. The FOLD event goes to the fold log;
 * the caller raises the irq_work that queues it.
 *
 * Return: @idx's extended counter, or NULL if it cannot be had: nothing
 * was folded.
 */
u32 *refcnt_fold_inline(struct refcnt_node *node, u64 set, u64 idx,
			u32 *mine)
{
	u64 first = refcnt_set_first(set);
	u32 *ours = refcnt_ext_word(node, idx);
	unsigned int c, top = 0;
	bool left = false;
	u32 most = 0;

	if (!ours)
		return NULL;
	clear_bit(set, node->fold_pending);
	for (c = 0; c < refcnt_topo.counters_per_set; c++) {
		u32 *hw = first + c == idx ? mine :
			  refcnt_sparse_word(&node->hw, first + c);
		u32 *ext, v;

		if (!hw || !READ_ONCE(*hw))
			continue;
		ext = refcnt_ext_word(node, first + c);
		if (!ext) {
			left = true;
			continue;
		}
		v = xchg(hw, 0);
		refcnt_extend(node, ext, first + c, v);
		if (v > most) {
			most = v;
			top = c;
		}
	}
	clear_bit(set, node->pegged);
	clear_bit(set, node->migrated);
	if (left)
		refcnt_raise(node, node->fold_pending, set);
	if (most) {
		this_cpu_inc(node->stats->folds);
		refcnt_fold_log_add(&node->fold_log, set, top, most, 1);
	}
	return ours;
}

/**
 * refcnt_fold_more() - whole folds of one counter, on the reference path
 * @node:	the node
 * @set:	the set, just folded by refcnt_fold_inline()
 * @idx:	index of the counter
 * @ext:	its extended counter, as refcnt_fold_inline() returned it
 * @nr:		folds: @nr times the counter goes from 0 to @thr and folds
 * @thr:	the absolute threshold
 *
 * The rest of a big delivery, @nr * @thr references, without going
 * through the hardware counter: the set's other counters were just
 * folded, so each of these folds would fold this counter alone. They
 * raise what its counts raise (a migration event; the home counter is
 * what it is now) and share one entry of the fold log.
 */
void refcnt_fold_more(struct refcnt_node *node, u64 set, u64 idx, u32 *ext,
		      u32 nr, u32 thr)
{
	u64 first = refcnt_set_first(set);
	u32 diff = READ_ONCE(node->diff_threshold);
	unsigned int counter = idx - first;

	refcnt_extend(node, ext, idx, nr * thr);
	if (diff && counter != node->home_counter) {
		u32 home = refcnt_home_count(node, first);

		if (thr > home && thr - home > diff &&
		    !test_and_set_bit(set, node->migrated))
			refcnt_raise(node, node->migrate_pending, set);
	}
	clear_bit(set, node->pegged);
	clear_bit(set, node->migrated);
	this_cpu_add(node->stats->folds, nr);
	refcnt_fold_log_add(&node->fold_log, set, counter, thr, nr);
}

/*
 * Service every raised interrupt of the node. Called with fold_lock.
 * False when a fold found no memory and must be retried.
 */
static bool refcnt_service(struct refcnt_node *node)
{
	bool folded = true;
	unsigned long w;

	lockdep_assert_held(&node->fold_lock);
	refcnt_table_zap(&node->table);
	refcnt_service_owed(node);
	refcnt_service_fold_log(node);
	for_each_set_bit(w, node->attention, node->nr_attention) {
		unsigned long peg, migrate, fold, b;
		u64 base = (u64)w * BITS_PER_LONG;

		clear_bit(w, node->attention);
		/* Events first: they report the counts before the fold. */
		peg = xchg(&node->peg_pending[w], 0);
		migrate = xchg(&node->migrate_pending[w], 0);
		for_each_set_bit(b, &peg, BITS_PER_LONG)
			refcnt_peg_event(node, base + b);
		for_each_set_bit(b, &migrate, BITS_PER_LONG)
			refcnt_migrate_event(node, base + b);

		/* Clear the pending bits first: a new crossing raises anew. */
		fold = xchg(&node->fold_pending[w], 0);
		for_each_set_bit(b, &fold, BITS_PER_LONG)
			if (!refcnt_fold_set(node, base + b))
				folded = false;
		cond_resched();
	}
	return folded;
}

/*
 * A fold found no memory: run the service again later, each time later
 * while memory stays short, so that a machine out of memory is not kept
 * busier still by folds that cannot succeed. Called with fold_lock.
 */
static void refcnt_fold_retry(struct refcnt_node *node)
{
	node->fold_backoff = clamp(node->fold_backoff * 2,
				   msecs_to_jiffies(REFCNT_FOLD_RETRY_MIN_MS),
				   msecs_to_jiffies(REFCNT_FOLD_RETRY_MAX_MS));
	queue_delayed_work(system_unbound_wq, &node->fold_work,
			   node->fold_backoff);
}

/* The service, and its retry while folds find no memory. With fold_lock. */
static void refcnt_service_retry(struct refcnt_node *node)
{
	if (refcnt_service(node))
		node->fold_backoff = 0;
	else
		refcnt_fold_retry(node);
}

/**
 * refcnt_node_sync() - run every pending interrupt of a node now
 * @node:	the node
 *
 * Process context: counts what NMIs deferred, then, under the node's
 * fold_lock, queues the peg and migration events raised and folds the
 * sets raised. A set whose fold found no memory stays raised, and the
 * service is retried later.
 */
void refcnt_node_sync(struct refcnt_node *node)
{
	refcnt_defer_replay(node);
	mutex_lock(&node->fold_lock);
	refcnt_service_retry(node);
	mutex_unlock(&node->fold_lock);
}

/**
 * refcnt_node_fold_sets() - run the threshold interrupt of sets now
 * @node:	the node
 * @first:	the first set
 * @nr:		sets, @first + @nr <= @node->nr_sets
 *
 * What the threshold interrupt does to each set, whatever its counts:
 * the hardware counts go to the extended counters (a FOLD record if
 * there were any), and the set may peg and raise a migration event
 * again. The node's pending interrupts run first, so that their records
 * report the counts before. A fold that finds no memory leaves its set
 * raised, and the service is retried later: nothing is lost.
 * Process context.
 */
void refcnt_node_fold_sets(struct refcnt_node *node, u64 first, u64 nr)
{
	bool folded;
	u64 set;

	mutex_lock(&node->fold_lock);
	folded = refcnt_service(node);
	for (set = first; set < first + nr; set++) {
		if (!refcnt_fold_set(node, set))
			folded = false;
		cond_resched();
	}
	if (folded)
		node->fold_backoff = 0;
	else
		refcnt_fold_retry(node);
	mutex_unlock(&node->fold_lock);
}

/**
 * refcnt_fold_work() - the interrupt service of a node, deferred
 * @work:	the node's fold_work
 *
 * While the node is held (refcnt_node_hold()) it only says it ran, and
 * refcnt_node_unhold() queues it again.
 */
void refcnt_fold_work(struct work_struct *work)
{
	struct refcnt_node *node = container_of(to_delayed_work(work),
						struct refcnt_node, fold_work);

	mutex_lock(&node->fold_lock);
	if (atomic_read(&node->held))
		node->service_held = true;
	else
		refcnt_service_retry(node);
	mutex_unlock(&node->fold_lock);
}

/**
 * refcnt_node_stop() - wait for a node's interrupt service, and stop it
 * @node:	a node no feed can reach any more (it is in no slot index, and
 *		a grace period has passed) and nothing else will sync
 *
 * Only the reference path raises the irq_work, so once no feed reaches
 * the node and irq_work_sync() has returned, nothing can queue the work
 * but the work itself, retrying a fold: cancel_delayed_work_sync() stops
 * that too. In this order, neither can run after we return.
 */
void refcnt_node_stop(struct refcnt_node *node)
{
	irq_work_sync(&node->irq_work);
	cancel_delayed_work_sync(&node->fold_work);
}

/**
 * refcnt_node_hold() - keep the deferred interrupt service from running
 * @node:	the node
 *
 * Until refcnt_node_unhold(), raised interrupts stay pending (the
 * reference path still folds inline): the references delivered meanwhile
 * all come before any deferred fold, as those of one RCB_INJECT batch do.
 * Waits for a service already running. refcnt_node_sync() still services.
 * Process context.
 */
void refcnt_node_hold(struct refcnt_node *node)
{
	atomic_inc(&node->held);
	mutex_lock(&node->fold_lock);
	mutex_unlock(&node->fold_lock);
}

/**
 * refcnt_node_unhold() - end a refcnt_node_hold()
 * @node:	the node
 *
 * The service runs soon after for what was raised meanwhile.
 */
void refcnt_node_unhold(struct refcnt_node *node)
{
	bool again;

	if (!atomic_dec_and_test(&node->held))
		return;
	/* Under fold_lock: a work item that saw the hold has said so. */
	mutex_lock(&node->fold_lock);
	again = node->service_held;
	node->service_held = false;
	mutex_unlock(&node->fold_lock);
	if (again)
		queue_delayed_work(system_unbound_wq, &node->fold_work, 0);
}

/**
 * refcnt_node_reset() - zero every counter of a node and free its pages
 * @node:	the node
 *
 * Pending interrupts are dropped with the counts. What was removed is
 * added to the node's "discarded" statistic, so that references delivered
 * = extended + hardware + lost + discarded holds across resets.
 *
 * The pages are taken out under fold_lock (and the table's under
 * map_lock), and summed and freed after one grace period with neither
 * held: the interrupt service, readers of sets and mmap faults wait for
 * no grace period. Process context.
 *
 * Return: 0, or -ENOMEM (nothing was reset).
 */
int refcnt_node_reset(struct refcnt_node *node)
{
	struct refcnt_fold_entry e;
	struct page **scratch;
	unsigned long n;
	unsigned int i;
	u64 sum;

	/* hw, lost and the table have as many pages each. */
	scratch = kvmalloc_array(node->hw.nr_pages, 3 * sizeof(*scratch),
				 GFP_KERNEL);
	if (!scratch)
		return -ENOMEM;

	mutex_lock(&node->fold_lock);
	/* attention first: a set raised meanwhile keeps a way to be seen. */
	bitmap_zero(node->attention, node->nr_attention);
	bitmap_zero(node->fold_pending, node->nr_sets);
	bitmap_zero(node->peg_pending, node->nr_sets);
	bitmap_zero(node->migrate_pending, node->nr_sets);
	bitmap_zero(node->pegged, node->nr_sets);
	bitmap_zero(node->migrated, node->nr_sets);
	bitmap_zero(node->migrate_owed, node->nr_sets);
	node->nr_owed = 0;
	for (i = 0; i <= node->ctx_mask; i++)
		WRITE_ONCE(node->ctx[i].set, U64_MAX);
	/* Events of inline folds being logged now are kept: they come after. */
	while (refcnt_fold_log_take(&node->fold_log, &e))
		;
	atomic64_set(&node->fold_log.dropped, 0);
	n = refcnt_sparse_detach(&node->hw, scratch);
	n += refcnt_sparse_detach(&node->lost, scratch + n);
	n += refcnt_table_detach(&node->table, scratch + n);
	refcnt_events_trim(&node->events);
	mutex_unlock(&node->fold_lock);

	/*
	 * Counting goes on in new pages meanwhile; what the reference path
	 * still adds to the old ones is in the sum once no one can.
	 */
	synchronize_rcu();
	sum = refcnt_sparse_release(scratch, n);
	this_cpu_add(node->stats->discarded, sum);
	kvfree(scratch);

	/* prealloc: make them again (if memory fails, they come on use). */
	if (refcnt_cfg.prealloc) {
		mutex_lock(&node->fold_lock);
		if (!refcnt_sparse_populate(&node->hw))
			refcnt_table_populate(&node->table);
		mutex_unlock(&node->fold_lock);
	}
	return 0;
}

/**
 * refcnt_node_set_thresholds() - change a node's thresholds
 * @node:	the node
 * @abs:	absolute threshold, 1..hw_max
 * @diff:	differential threshold, 0 (off)..hw_max
 *
 * Return: 0 or -EINVAL.
 */
int refcnt_node_set_thresholds(struct refcnt_node *node, u32 abs, u32 diff)
{
	if (!abs || abs > refcnt_topo.hw_max || diff > refcnt_topo.hw_max)
		return -EINVAL;
	WRITE_ONCE(node->abs_threshold, abs);
	WRITE_ONCE(node->diff_threshold, diff);
	return 0;
}

/**
 * refcnt_node_thresholds() - a node's thresholds as they are now
 * @node:	the node
 * @abs:	the absolute threshold
 * @diff:	the differential threshold, 0 when off
 */
void refcnt_node_thresholds(const struct refcnt_node *node, u32 *abs,
			    u32 *diff)
{
	*abs = READ_ONCE(node->abs_threshold);
	*diff = READ_ONCE(node->diff_threshold);
}

/**
 * refcnt_node_read_sets() - copy the counters of a range of sets
 * @node:	the node
 * @first:	first set
 * @nr:		sets; the caller checked the range
 * @hw:		room for nr * counters_per_set hardware counts, or NULL
 * @ext:	the same for extended counts, or NULL
 * @lost:	the same for lost references, or NULL
 */
void refcnt_node_read_sets(struct refcnt_node *node, u64 first, u64 nr,
			   u32 *hw, u32 *ext, u32 *lost)
{
	u64 i, idx = refcnt_set_first(first);
	u64 n = refcnt_set_first(nr);

	/* Under fold_lock: no counter is half-way through a fold. */
	mutex_lock(&node->fold_lock);
	for (i = 0; i < n; i++) {
		if (hw)
			hw[i] = refcnt_sparse_read(&node->hw, idx + i);
		if (ext)
			ext[i] = refcnt_sparse_read(&node->table.counters,
						    idx + i);
		if (lost)
			lost[i] = refcnt_sparse_read(&node->lost, idx + i);
	}
	mutex_unlock(&node->fold_lock);
}
