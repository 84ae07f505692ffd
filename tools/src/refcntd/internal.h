/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcntd's engine inside: the state events.c (the event streams),
 * countscan.c (the counter scan), move.c (the moves), rmap.c (the scan
 * and its reverse map), policy.c (the decisions) and util.c share. Each
 * calls only those after it in that list; util.c, none.
 */
#ifndef REFCNTD_INTERNAL_H
#define REFCNTD_INTERNAL_H

#include <poll.h>

#include "refcntd.h"
#include "rtools.h"

/* A page moved lately: frozen until time_ns + freeze_ms. */
struct rd_frozen {
	pid_t pid;
	uint64_t vaddr;
	uint64_t time_ns;	/* of the move; 0: free entry */
	int huge;		/* a huge page: it holds every address of it */
	int melt_nid;		/* node asking for it while frozen */
	uint32_t melt_count;
};

#define RD_FROZEN_SLOTS	(1U << 16)
#define RD_FROZEN_PROBE	16

/* Recent answers, kept a second: /proc reads cost per event. */
struct rd_cached {
	int key;		/* pid, or nid */
	int val;		/* opted in; room on the node */
	uint64_t time_ns;
};

#define RD_CACHE_SLOTS	256
#define RD_CACHE_NS	1000000000ULL

/* A process's cpuset: the nodes its memory may be on (Mems_allowed). */
#define RD_MEMS_WORDS	16		/* nids below 1024 */

struct rd_mems {
	pid_t pid;
	uint64_t time_ns;		/* kept a second, as rd_cached */
	uint32_t turn;			/* the engine's turn it was read in */
	int known;			/* 0: /proc said nothing: any node */
	uint64_t mask[RD_MEMS_WORDS];
};

struct rd_policy {
	double tok_pages, tok_bytes;	/* the rate limit's token buckets */
	uint64_t tok_ns;		/* when they were last filled */
	struct rd_frozen *frozen;	/* RD_FROZEN_SLOTS, open addressing */
	struct rd_cached opted[RD_CACHE_SLOTS], room[RD_CACHE_SLOTS];
	struct rd_cached locked[RD_CACHE_SLOTS];	/* 0: VmLck 0 */
	struct rd_mems mems[RD_CACHE_SLOTS];
	uint32_t turn;			/* rd_engine_run_once's, counted */
};


/* What policy.c decided for a migration event. */
enum rd_verdict {
	RD_MOVE,		/* move to ->to_nid */
	RD_BELOW,		/* below our thresholds, or already home */
	RD_REFUSE,		/* not ours to move: ->why */
	RD_FROZEN,
	RD_RATE_LIMITED,
};

struct rd_decision {
	enum rd_verdict verdict;
	enum rd_refusal why;
	int from_nid, to_nid;
};

/* A move decided and checked, waiting for rd_move_flush(). */
struct rd_pending {
	struct rcb_event ev;
	struct rd_decision d;
	struct rd_move m;
};

#define RD_PEND_MAX	256

/*
 * The drain: records per read(2), reads of one node in a row, and the
 * time one pass over the nodes may take before the stats, the scan and
 * the signals get their turn.
 */
#define RD_BATCH	64
#define RD_DRAIN_READS	16
#define RD_DRAIN_NS	100000000ULL

/*
 * Physical page -> (pid, address) of the opted-in processes, built by the
 * scan from /proc/pid/pagemap: names the page of a migration event whose
 * context the kernel's lossy cache dropped. Entries of an older
 * generation are empty.
 */
struct rd_rmap {
	uint64_t pfn;
	uint64_t vaddr;
	pid_t pid;
	uint32_t gen;
};

#define RD_RMAP_SLOTS	(1U << 18)

/* A page's counts at the counter scan's last look (countscan.c). */
struct rd_seen {
	pid_t pid;
	uint32_t gen;		/* the scan that saw it; 0: free */
	uint64_t vaddr, paddr;
	uint32_t home, remote;	/* home counter, busiest remote one */
};

#define RD_SEEN_SLOTS	(1U << 18)
#define RD_SEEN_PROBE	32

/* A thread hint said (countscan.c): said once per process and nodes. */
struct rd_hinted {
	pid_t pid;
	int from_counter, home_cnodeid;
};

#define RD_HINTED_SLOTS	64

struct rd_engine {
	struct rd_config cfg;
	struct rd_hooks hooks;
	int nr_nodes;			/* node devices */
	struct refcnt_node **node;
	struct rcb_info *info;
	uint32_t *old_diff, *old_abs;	/* thresholds found, restored */
	struct pollfd *pfd;
	int next_node;			/* the drain's first node next time */
	struct rt_counters ctr;		/* cnodeid <-> nid */
	int *has_mem, *has_cpu;		/* by cnodeid */
	uint64_t granularity;
	struct rd_stats st;
	struct rd_policy pol;
	uint64_t last_stats_ns, last_scan_ns;
	struct rd_rmap *rmap;		/* RD_RMAP_SLOTS */
	uint64_t rmap_ns;		/* when it was last built */
	uint64_t rmap_cost_ns;		/* how long that build took */
	struct rd_pending pend[RD_PEND_MAX];
	size_t nr_pend;
	uint32_t rmap_gen, rmap_nr;
	struct rd_seen *seen;		/* RD_SEEN_SLOTS, the counter scan's */
	uint32_t seen_gen;
	uint64_t last_count_scan_ns;
	struct rd_hinted hinted[RD_HINTED_SLOTS];
	unsigned int next_hinted;
};

/* policy.c */
int rd_policy_init(struct rd_policy *p);
void rd_policy_free(struct rd_policy *p);
/* Thresholds, process, target node and freeze: may it move? */
void rd_policy_decide(struct rd_engine *e, const struct rcb_event *ev,
		      struct rd_decision *d);
/* Take size bytes from the rate limit; false when over it. */
int rd_policy_rate_take(struct rd_engine *e, uint64_t size);
/* A page moved: freeze it. */
void rd_policy_moved(struct rd_engine *e, pid_t pid, uint64_t vaddr,
		     uint64_t size);
/* Does the configuration opt pid in? */
int rd_policy_opted_in(const struct rd_config *c, pid_t pid);
int rd_nid_cnode(const struct rd_engine *e, int nid);

/* countscan.c: rank the served processes' pages by their counts, move. */
void rd_count_scan(struct rd_engine *e);

/* move.c */
/* Decide on a migration event (policy.c) and act: move, or count why not. */
void rd_decide_act(struct rd_engine *e, const struct rcb_event *ev);
/* Act on a decision to move: 0 moved (or dry-run), else a refusal. */
void rd_move_page(struct rd_engine *e, const struct rcb_event *ev,
		  struct rd_decision *d);
/* Move what rd_move_page() queued: one move_pages(2) per process. */
void rd_move_flush(struct rd_engine *e);
/* Is [vaddr] in an mlock()ed mapping of pid? 1, 0, or -errno. */
int rd_mlocked(pid_t pid, uint64_t vaddr);

/* rmap.c */
/* The soft-dirty scan: write-protect opted-in processes' pages. */
void rd_scan(struct rd_engine *e);
/* The reverse map's (pid, vaddr) for a physical address: 0, or -1. */
int rd_rmap_find(const struct rd_engine *e, uint64_t paddr, pid_t *pid,
		 uint64_t *vaddr);
/* The same for a set, rebuilding the map on a miss (once per interval). */
int rd_rmap_name(struct rd_engine *e, uint64_t paddr, pid_t *pid,
		 uint64_t *vaddr);

/* util.c (rd_now_ns() is in refcntd.h) */
/* A cached answer for key (a second at most), or -1; and store one. */
int rd_cached(struct rd_cached *c, int key);
int rd_cache(struct rd_cached *c, int key, int val);
/* A /proc/pid/maps line of private writable anonymous memory: 1, range. */
int rd_maps_private_anon(const char *line, uint64_t *start, uint64_t *end);

#endif /* REFCNTD_INTERNAL_H */
