/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the refcnt counter selftests (refcnt_counters.c): one node
 * device with its slots, exact injection, reading sets, thresholds, the
 * sysfs statistics, the event queue, and reloading the module with other
 * parameters.
 *
 * Include after nothing else (it includes refcnt_helpers.h, which pulls in
 * kselftest_harness.h).
 */
#ifndef REFCNT_COUNTERS_H
#define REFCNT_COUNTERS_H

#include "refcnt_helpers.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#define RC_STATSDIR	"/sys/class/misc/refcnt-node%d/stats"
#define RC_EVENT_SIZE	72
#define RC_DEF_QUEUE_LEN 4096UL

_Static_assert(sizeof(struct rcb_event) == RC_EVENT_SIZE,
	       "struct rcb_event is 72 bytes");

/* One node device, opened O_RDONLY | O_NONBLOCK, with its slots. */
struct rc_dev {
	int nid;
	int fd;
	struct rcb_info info;
	unsigned int nslots;
	struct rcb_slot *slots;
	uint64_t *first;	/* first set of each slot */
	unsigned int cps;	/* counters per set */
	unsigned int npc;	/* cnodeids per counter */
};

int rcd_open(struct rc_dev *d, int nid);	/* 0 or -errno */
void rcd_close(struct rc_dev *d);
/* Open/close leaving default thresholds, no counts, no events: 0 or -errno. */
int rcd_open_clean(struct rc_dev *d, int nid);
int rcd_close_clean(struct rc_dev *d);
uint64_t rcd_set_paddr(const struct rc_dev *d, uint64_t set);
int64_t rcd_paddr_set(const struct rc_dev *d, uint64_t paddr);	/* -1: none */
unsigned int rcd_counter(const struct rc_dev *d, unsigned int cnode);
unsigned int rcd_last_cnode(const struct rc_dev *d, unsigned int c);
uint64_t rcd_mid_set(const struct rc_dev *d, uint64_t k);

/* The ioctls: 0 or -errno. */
int rc_inject(int fd, const struct rcb_ref *refs, uint32_t nr, uint32_t flags);
int rc_inject_pegging(int fd, uint64_t paddr, uint32_t src_cnodeid,
		      uint32_t lost);
int rc_inject1(int fd, uint64_t paddr, uint32_t src, uint32_t count,
	       uint32_t flags);
int rc_read_sets(int fd, uint64_t first, uint64_t nr,
		 uint32_t *hw, uint32_t *ext, uint32_t *lost);

struct rc_set {
	uint32_t hw[RCB_MAX_COUNTERS];
	uint32_t ext[RCB_MAX_COUNTERS];
	uint32_t lost[RCB_MAX_COUNTERS];
};

int rcd_read_set(const struct rc_dev *d, uint64_t set, struct rc_set *s);
int rc_thresholds(int fd, uint32_t abs, uint32_t diff);
int rc_sync(int fd);
int rc_reset(int fd);
void rcd_default_thresholds(const struct rc_dev *d, uint32_t *abs,
			    uint32_t *diff);
int rcd_restore_thresholds(const struct rc_dev *d);

/* The sysfs statistics of a node. */
struct rc_stats {
	uint64_t references, pegged, saturated, folds, migrations;
	uint64_t events_dropped, refs_dropped, discarded, table_bytes;
	uint64_t overflowed;	/* lost counts that did not fit in 32 bits */
	uint64_t offlined;	/* counts dropped with memory gone offline */
};

int rc_stat(int nid, const char *name, uint64_t *v);
int rc_stats_read(int nid, struct rc_stats *s);

/* Events of a non-blocking fd: how many read, or -errno. */
int rc_events(int fd, struct rcb_event *ev, int max);
int rc_drain(int fd);
const char *rc_event_name(uint32_t type);

/* The module with other parameters: 0 or -errno. */
bool rc_module_default(void);
int rc_reload(const char *params);
int rc_ensure_default(void);

/* Misc. */
uint64_t rc_now_ns(void);
uint64_t rc_rand(uint64_t *s);		/* xorshift64* */
int rc_mem_nodes(struct rc_nodes *mem);

/*
 * Long work made longer, whatever the machine's speed: RC_HOGS threads
 * spinning on a CPU at normal priority (rc_hog_start()) leave a
 * SCHED_IDLE thread there (rc_idle()) a tick of it now and then, so that
 * a call it makes takes tens of times its time, mostly preempted in the
 * kernel. Started once the call is under way (the test watching it from
 * that CPU preempts it at once), they slow what is left of it. The test
 * runs beside it in step, when the host stops the CPU as when the guest
 * does.
 */
#define RC_HOGS		2

struct rc_hog {
	pthread_t th[RC_HOGS];
	int cpu, spinning;
	volatile bool stop;
};

int rc_two_cpus(int *first, int *last);	/* of our affinity; -ENODEV: one */
int rc_pin(int cpu);			/* the calling thread: 0 or -errno */
int rc_idle(pid_t tid);			/* SCHED_IDLE (0: us): 0 or -errno */
int rc_hog_start(struct rc_hog *h, int cpu);
void rc_hog_stop(struct rc_hog *h);
struct rcb_ref *rcd_spread_refs(const struct rc_dev *d, uint32_t nr);
int rc_references_past(int nid, uint64_t than, int secs, uint64_t *now);

#endif /* REFCNT_COUNTERS_H */
