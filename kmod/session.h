/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt: a counting session (RCB_COUNT_START), what its files share:
 * session.c makes it and runs its perf-event feeds, session_totals.c
 * filters its samples by range and keeps its totals, session_device.c
 * gives it the records of device feeds.
 */
#ifndef _REFCNT_SESSION_H
#define _REFCNT_SESSION_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <uapi/linux/refcnt.h>

#include "feed.h"

/* The feeds of perf events a session can run, as struct rcb_count names. */
#define REFCNT_SESSION_FEEDS	2
/* Most device feeds one session holds. */
#define REFCNT_SESSION_DEVICES	4

struct refcnt_session;

/**
 * struct refcnt_session_target - the context of a session's event
 * @t:		its feed and stream; no ranges, the session filters
 *		(session_totals.c)
 * @session:	the session
 * @yields:	its samples are dropped while the machine-wide feed of the
 *		same PMU runs (refcnt_pmu_yielded())
 */
struct refcnt_session_target {
	struct refcnt_feed_target t;
	struct refcnt_session *session;
	bool yields;
};

/**
 * struct refcnt_session_feed - one feed a session runs
 * @feed:	the feed, whose operations make the events and take their
 *		samples
 * @period:	events per sample, 0 when the session does not run it; as
 *		the feed's prepare() took it
 * @prepared:	the feed's prepare() succeeded: finish() is owed
 * @held:	@feed is a module's emulated PMU, held: refcnt_feed_put()
 *		is owed
 * @yields:	the session's caller lacks CAP_SYS_ADMIN and @feed is the
 *		PEBS/IBS feed: the machine-wide feed takes the PMU over
 * @setup:	what it made
 * @targets:	the contexts of event k of every thread
 */
struct refcnt_session_feed {
	struct refcnt_feed *feed;
	unsigned int period;
	bool prepared;
	bool held;
	bool yields;
	void *setup;
	struct refcnt_session_target targets[REFCNT_FEED_TASK_EVENTS];
};

/* The words of one entry of a session's totals, before the nodes'. */
enum refcnt_total {
	REFCNT_T_REFERENCES,
	REFCNT_T_LOADS,
	REFCNT_T_STORES,
	REFCNT_T_LOCAL,
	REFCNT_T_REMOTE,
	REFCNT_T_LOST,
	REFCNT_T_SAMPLES,
	REFCNT_T_NODES,
};

/**
 * struct refcnt_session - one counting session, the file's data
 * @kref:	the file's, and one per span of a device feed naming it:
 *		the last put frees it (never in NMI or the scheduler)
 * @samples:	samples its feeds took (that reached its filters)
 * @delivered:	of them, counted
 * @unresolved:	of them, whose page was not found or is counted by no node
 * @outside:	of them, outside its ranges: dropped
 * @dropped:	records of its device feeds made while its threads ran
 *		that reach no total: the device could not make them, or
 *		the thread's span did not fit in the CPU's ring
 * @throttled:	times perf throttled one of its events (the samples
 *		left of that tick are lost)
 * @feeds:	the feeds of perf events it may run
 * @events:	@nr_events perf events, those of the process's threads (and
 *		the device feeds' scheduling events); perf owns the ones
 *		inherited from them
 * @nr_events:	entries of @events in use
 * @mine:	the first of them on the calling thread, if it counts it
 * @devices:	the device feeds it holds (RCB_COUNT_DEVICES)
 * @nr_devices:	entries of @devices
 * @nr_data:	data ranges, the first entries of @ranges
 * @nr_instr:	instruction ranges, after them
 * @words:	u64 words of one entry of @totals
 * @totals:	per CPU, 1 + @nr_data + @nr_instr entries of @words: the
 *		session's, each data range's, each instruction range's
 * @charged:	the user it counts against (session_limit.c), or
 *		INVALID_UID
 * @pinned:	it holds the fault events' static-key pins
 * @ranges:	the ranges
 */
struct refcnt_session {
	struct kref kref;
	atomic64_t samples;
	atomic64_t delivered;
	atomic64_t unresolved;
	atomic64_t outside;
	atomic64_t dropped;
	atomic64_t throttled;
	struct refcnt_session_feed feeds[REFCNT_SESSION_FEEDS];
	struct perf_event **events;
	unsigned int nr_events;
	struct perf_event *mine;
	struct refcnt_feed *devices[REFCNT_SESSION_DEVICES];
	unsigned int nr_devices;
	unsigned int nr_data;
	unsigned int nr_instr;
	unsigned int words;
	u64 __percpu *totals;
	kuid_t charged;
	bool pinned;
	struct rcb_count_range ranges[];
};

/* session.c */
void refcnt_session_put(struct refcnt_session *s);

/* session_totals.c */
int refcnt_session_totals_alloc(struct refcnt_session *s);
void refcnt_session_totals_free(struct refcnt_session *s);
bool refcnt_session_match(const struct refcnt_session *s,
			  const struct refcnt_sample *x, u64 *data,
			  u64 *instr);
void refcnt_session_account(struct refcnt_session *s,
			    const struct refcnt_sample *x, u64 data, u64 instr,
			    bool counted, const struct refcnt_outcome *out);
long refcnt_session_read(struct refcnt_session *s, void __user *argp);

/* session_device.c */
int refcnt_feed_spans_alloc(struct refcnt_feed *feed);
void refcnt_feed_spans_free(struct refcnt_feed *feed);
int refcnt_session_devices_init(void);
void refcnt_session_devices_exit(void);
int refcnt_session_hold(struct refcnt_session *s);
void refcnt_session_release_devices(struct refcnt_session *s);
void refcnt_session_sync(struct refcnt_session *s);
int refcnt_session_sched_attr(struct perf_event_attr *attr);
void refcnt_session_sched_overflow(struct perf_event *event,
				   struct perf_sample_data *data,
				   struct pt_regs *regs);

#endif /* _REFCNT_SESSION_H */
