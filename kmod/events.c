// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: a node's bounded queue of event records.
 *
 * Only the interrupt service (process context) queues records, so a
 * spinlock is enough. A full queue drops the new record, never blocks;
 * the reader then first gets an RCB_EVENT_LOST record saying how many.
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
	struct rcb_event *ring = NULL;
	bool queued = false;

	/* Process context (the interrupt service): the ring may be made here. */
	if (!READ_ONCE(ev->ring))
		ring = kvzalloc_node(array_size(ev->size, sizeof(*ring)),
				     GFP_KERNEL, ev->nid);
	rec->time_ns = ktime_get_ns();
	spin_lock(&ev->lock);
	if (!ev->ring && ring) {
		ev->ring = ring;
		ring = NULL;
	}
	rec->seq = ev->seq++;
	if (ev->ring && ev->head - ev->tail < ev->size) {
		ev->ring[ev->head & (ev->size - 1)] = *rec;
		/* refcnt_events_ready() reads these without the lock */
		WRITE_ONCE(ev->head, ev->head + 1);
		queued = true;
	} else {
		if (!ev->dropped)
			ev->first_dropped = rec->seq;
		WRITE_ONCE(ev->dropped, ev->dropped + 1);
	}
	spin_unlock(&ev->lock);
	kvfree(ring);	/* another caller made it first */
	if (queued)
		wake_up_interruptible(&ev->wait);
	return queued;
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
		out[n++] = ev->ring[ev->tail & (ev->size - 1)];
		WRITE_ONCE(ev->tail, ev->tail + 1);
	}
	spin_unlock(&ev->lock);
	return n;
}
