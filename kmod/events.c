// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: a node's bounded queue of event records, and the fold log in
 * front of it.
 *
 * Only the interrupt service (process context) queues records, so a
 * spinlock is enough. A full queue drops the new record, never blocks;
 * the reader then first gets an RCB_EVENT_LOST record saying how many.
 * A record the service must not lose (MIGRATE) is offered instead: a
 * record of the same set still queued is updated in place (coalesced), a
 * full queue refuses it without a trace, the service keeps it owed, and
 * the reader that next makes room is told to run the service again.
 * Folds made on the reference path, in any context, leave their events
 * in the node's fold log, a small lock-free ring the service empties
 * into the queue first.
 */
#include <linux/minmax.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/wait.h>
#include <uapi/linux/refcnt.h>

#include "core.h"

/**
 * refcnt_events_init() - set up an empty event queue
 * @ev:		the queue
 * @nid:	node whose memory backs it
 * @size:	capacity in records, a power of two
 *
 * The ring itself comes with the first record.
 */
void refcnt_events_init(struct refcnt_events *ev, int nid, u32 size)
{
	spin_lock_init(&ev->lock);
	init_waitqueue_head(&ev->wait);
	ev->size = size;
	ev->nid = nid;
}

/**
 * refcnt_events_trim() - free the ring while nothing is queued
 * @ev:		the queue
 *
 * After a reset the node costs what an idle one does; the next event
 * makes the ring again.
 */
void refcnt_events_trim(struct refcnt_events *ev)
{
	struct rcb_event *ring = NULL;

	spin_lock(&ev->lock);
	if (ev->head == ev->tail && !ev->dropped) {
		ring = ev->ring;
		ev->ring = NULL;
		ev->chain = NULL;
	}
	spin_unlock(&ev->lock);
	kvfree(ring);
}

/**
 * refcnt_events_destroy() - free a queue nobody reads or fills any more
 * @ev:		the queue
 */
void refcnt_events_destroy(struct refcnt_events *ev)
{
	kvfree(ev->ring);
	ev->ring = NULL;
	ev->chain = NULL;
}

/* A record, and its three words of the chains of offered records. */
#define REFCNT_EVENT_BYTES	(sizeof(struct rcb_event) + 3 * sizeof(u32))

/*
 * The ring is made on first use, in process context (the interrupt
 * service), outside the lock: a new one unless it exists already...
 */
static struct rcb_event *refcnt_events_ring_new(struct refcnt_events *ev)
{
	if (READ_ONCE(ev->ring))
		return NULL;
	return kvzalloc_node(array_size(ev->size, REFCNT_EVENT_BYTES),
			     GFP_KERNEL, ev->nid);
}

/* ...and installed under @ev->lock unless another caller was first. */
static void refcnt_events_ring_install(struct refcnt_events *ev,
				       struct rcb_event **ring)
{
	if (!ev->ring && *ring) {
		ev->ring = *ring;
		ev->chain = (u32 *)(*ring + ev->size);
		*ring = NULL;
	}
}

/*
 * The chains of offered records, by set, in queue order: a record is
 * added at its chain's end when queued and taken from its start when
 * read, since the queue's oldest record is its chain's oldest. So the
 * index is exact and costs 12 bytes a record, whatever the node's size.
 */
static u32 *refcnt_chain_first(struct refcnt_events *ev, u64 set)
{
	return &ev->chain[set & (ev->size - 1)];
}

static u32 *refcnt_chain_last(struct refcnt_events *ev, u64 set)
{
	return &ev->chain[ev->size + (set & (ev->size - 1))];
}

static u32 *refcnt_chain_next(struct refcnt_events *ev, u32 slot)
{
	return &ev->chain[2 * ev->size + slot];
}

static void refcnt_chain_add(struct refcnt_events *ev, u64 set, u32 slot)
{
	u32 *last = refcnt_chain_last(ev, set);

	*refcnt_chain_next(ev, slot) = 0;
	if (*last)
		*refcnt_chain_next(ev, *last - 1) = slot + 1;
	else
		*refcnt_chain_first(ev, set) = slot + 1;
	*last = slot + 1;
}

/*
 * The record at @slot, the oldest queued, is read: off its chain, if it
 * was offered, and then it is its chain's first.
 */
static void refcnt_chain_del(struct refcnt_events *ev, u64 set, u32 slot)
{
	u32 *first = refcnt_chain_first(ev, set);

	if (*first != slot + 1)
		return;
	*first = *refcnt_chain_next(ev, slot);
	if (!*first)
		*refcnt_chain_last(ev, set) = 0;
}

/* The offered record of @set still queued, or NULL. */
static struct rcb_event *refcnt_chain_find(struct refcnt_events *ev, u64 set)
{
	u32 at;

	for (at = *refcnt_chain_first(ev, set); at;
	     at = *refcnt_chain_next(ev, at - 1))
		if (ev->ring[at - 1].set == set)
			return &ev->ring[at - 1];
	return NULL;
}

/*
 * Queue @rec if there is room; else drop it, or with !@drop refuse it.
 * An offered record (!@drop) of a set that has one queued updates that
 * one instead, which keeps its seq and time.
 */
static bool refcnt_events_put(struct refcnt_events *ev, struct rcb_event *rec,
			      bool drop)
{
	struct rcb_event *ring = NULL, *old;
	bool queued = false;
	u32 slot;

	ring = refcnt_events_ring_new(ev);
	rec->time_ns = ktime_get_ns();
	spin_lock(&ev->lock);
	refcnt_events_ring_install(ev, &ring);
	old = !drop && ev->ring ? refcnt_chain_find(ev, rec->set) : NULL;
	if (old) {
		rec->seq = old->seq;
		rec->time_ns = old->time_ns;
		*old = *rec;
		spin_unlock(&ev->lock);
		kvfree(ring);
		return true;
	}
	if (ev->ring && ev->head - ev->tail < ev->size) {
		rec->seq = ev->seq++;
		slot = ev->head & (ev->size - 1);
		ev->ring[slot] = *rec;
		if (!drop)
			refcnt_chain_add(ev, rec->set, slot);
		/* refcnt_events_ready() reads these without the lock */
		WRITE_ONCE(ev->head, ev->head + 1);
		queued = true;
	} else if (drop) {
		rec->seq = ev->seq++;
		if (!ev->dropped)
			ev->first_dropped = rec->seq;
		WRITE_ONCE(ev->dropped, ev->dropped + 1);
	} else {
		/* Under the lock: the reader that makes room sees it. */
		ev->room_wanted = true;
	}
	spin_unlock(&ev->lock);
	kvfree(ring);	/* another caller made it first */
	if (queued)
		wake_up_interruptible(&ev->wait);
	return queued;
}

/**
 * refcnt_events_queue() - queue a record, stamping its seq and time
 * @ev:		the queue
 * @rec:	the record
 *
 * Return: false if the queue was full and the record was dropped.
 */
bool refcnt_events_queue(struct refcnt_events *ev, struct rcb_event *rec)
{
	return refcnt_events_put(ev, rec, true);
}

/**
 * refcnt_events_offer() - queue a record the caller will not lose
 * @ev:		the queue
 * @rec:	the record; its seq and time are stamped if it is queued
 *
 * One offered record per set at most waits in the queue: if the set of
 * @rec has one that no reader has taken yet, @rec replaces it there,
 * with the seq and time it had (coalesced), and takes no room. Else a
 * full queue refuses it: it takes no seq and no drop is counted, the
 * caller keeps it owed and offers it again once a reader has made room
 * (refcnt_events_room_wanted()).
 *
 * Return: false if the queue was full and refused it.
 */
bool refcnt_events_offer(struct refcnt_events *ev, struct rcb_event *rec)
{
	return refcnt_events_put(ev, rec, false);
}

/**
 * refcnt_events_room_wanted() - did a full queue refuse a record?
 * @ev:		the queue
 *
 * For the reader, after refcnt_events_take(): true, once, when a record
 * was refused (refcnt_events_offer()) and there is room now; its owner
 * is to be told. A refusal after this call finds the queue full again,
 * so the reader that next takes a record sees it.
 *
 * Return: true if the owner of a refused record should offer it again.
 */
bool refcnt_events_room_wanted(struct refcnt_events *ev)
{
	bool wanted;

	spin_lock(&ev->lock);
	wanted = ev->room_wanted && ev->head - ev->tail < ev->size;
	if (wanted)
		ev->room_wanted = false;
	spin_unlock(&ev->lock);
	return wanted;
}

/**
 * refcnt_events_queue_alike() - queue @nr records alike but for their seq
 * @ev:		the queue
 * @rec:	the record; its seq and time are stamped
 * @nr:		how many
 *
 * What room there is takes them, in one section under the lock and one
 * wake-up; the rest are dropped, as the queue drops a record it has no
 * room for. For the folds of one big delivery.
 *
 * Return: the records dropped.
 */
u64 refcnt_events_queue_alike(struct refcnt_events *ev, struct rcb_event *rec,
			      u64 nr)
{
	struct rcb_event *ring = NULL;
	u64 room, n = 0;

	if (!nr)
		return 0;
	ring = refcnt_events_ring_new(ev);
	rec->time_ns = ktime_get_ns();
	spin_lock(&ev->lock);
	refcnt_events_ring_install(ev, &ring);
	room = ev->ring ? ev->size - (ev->head - ev->tail) : 0;
	for (; n < nr && n < room; n++) {
		rec->seq = ev->seq++;
		ev->ring[(ev->head + n) & (ev->size - 1)] = *rec;
	}
	/* refcnt_events_ready() reads these without the lock */
	WRITE_ONCE(ev->head, ev->head + n);
	if (n < nr) {
		if (!ev->dropped)
			ev->first_dropped = ev->seq;
		ev->seq += nr - n;
		WRITE_ONCE(ev->dropped, ev->dropped + nr - n);
	}
	spin_unlock(&ev->lock);
	kvfree(ring);
	wake_up_interruptible(&ev->wait);
	return nr - n;
}

/**
 * refcnt_events_drop() - count events dropped before they were queued
 * @ev:		the queue
 * @n:		events
 *
 * They take their sequence numbers, as a record the full queue refused
 * does, and the reader gets a LOST record for them.
 */
void refcnt_events_drop(struct refcnt_events *ev, u64 n)
{
	if (!n)
		return;
	spin_lock(&ev->lock);
	if (!ev->dropped)
		ev->first_dropped = ev->seq;
	ev->seq += n;
	WRITE_ONCE(ev->dropped, ev->dropped + n);
	spin_unlock(&ev->lock);
	wake_up_interruptible(&ev->wait);
}

/**
 * refcnt_fold_log_add() - log the FOLD events of a fold made inline
 * @log:	the node's fold log
 * @set:	the set folded
 * @counter:	the counter the events name
 * @count:	the count they report
 * @nr:		how many
 *
 * Any context, NMI included: the entry is reserved with a cmpxchg of the
 * head, filled, then marked ready (release). The caller then raises the
 * node's irq_work, so the service runs after the entry is ready. A full
 * log drops the events and counts them.
 *
 * Return: false if they were dropped.
 */
bool refcnt_fold_log_add(struct refcnt_fold_log *log, u64 set, u32 counter,
			 u32 count, u32 nr)
{
	int head = atomic_read(&log->head);
	struct refcnt_fold_entry *e;

	do {
		/* Pairs with the release of the tail: that entry is free. */
		if ((u32)head - smp_load_acquire(&log->tail) >= REFCNT_FOLD_LOG) {
			atomic64_add(nr, &log->dropped);
			return false;
		}
	} while (!atomic_try_cmpxchg(&log->head, &head, head + 1));
	e = &log->entry[(u32)head % REFCNT_FOLD_LOG];
	e->set = set;
	e->counter = counter;
	e->count = count;
	e->nr = nr;
	/* The fields before the flag that says they are written */
	smp_store_release(&e->ready, 1);
	return true;
}

/**
 * refcnt_fold_log_take() - take the oldest entry of the fold log
 * @log:	the node's fold log
 * @out:	the entry
 *
 * The one consumer: called with the node's fold_lock held. Stops at an
 * entry reserved but not yet ready: its writer raises the irq_work once
 * it is, and the service runs again.
 *
 * Return: false when there is none ready.
 */
bool refcnt_fold_log_take(struct refcnt_fold_log *log,
			  struct refcnt_fold_entry *out)
{
	struct refcnt_fold_entry *e = &log->entry[log->tail % REFCNT_FOLD_LOG];

	if (log->tail == (u32)atomic_read(&log->head) ||
	    /* Pairs with the writer's release: the fields are written */
	    !smp_load_acquire(&e->ready))
		return false;
	*out = *e;
	WRITE_ONCE(e->ready, 0);
	/* The entry is free for a writer once it sees the new tail. */
	smp_store_release(&log->tail, log->tail + 1);
	return true;
}

/**
 * refcnt_events_ready() - is there anything to read?
 * @ev:		the queue
 *
 * Lockless, for poll() and wait conditions.
 *
 * Return: true if a record, or a LOST record, is waiting.
 */
bool refcnt_events_ready(struct refcnt_events *ev)
{
	return READ_ONCE(ev->head) != READ_ONCE(ev->tail) ||
	       READ_ONCE(ev->dropped);
}

/**
 * refcnt_events_take() - take records off the queue
 * @ev:		the queue
 * @out:	room for @max records
 * @max:	records wanted
 *
 * A LOST record comes first if any were dropped since the last one. The
 * records taken are gone from the queue. Takes the queue's spinlock.
 *
 * Return: records stored in @out, 0 when the queue is empty.
 */
unsigned int refcnt_events_take(struct refcnt_events *ev,
				struct rcb_event *out, unsigned int max)
{
	unsigned int n = 0;

	spin_lock(&ev->lock);
	if (ev->dropped && max) {
		memset(&out[0], 0, sizeof(out[0]));
		out[0].type = RCB_EVENT_LOST;
		out[0].count = min_t(u64, ev->dropped, U32_MAX);
		out[0].seq = ev->first_dropped;
		out[0].time_ns = ktime_get_ns();
		WRITE_ONCE(ev->dropped, ev->dropped - out[0].count);
		ev->first_dropped += out[0].count;
		n++;
	}
	while (n < max && ev->tail != ev->head) {
		u32 slot = ev->tail & (ev->size - 1);

		out[n++] = ev->ring[slot];
		refcnt_chain_del(ev, ev->ring[slot].set, slot);
		WRITE_ONCE(ev->tail, ev->tail + 1);
	}
	spin_unlock(&ev->lock);
	return n;
}
