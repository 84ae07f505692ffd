/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcntd's engine: the migration policy the counters drive, shared by
 * refcntd(8) and refcnt-run --migrate (built once into librefcntd.a).
 *
 *   config.c  the configuration file (refcntd.conf(5)) and its checks
 *   policy.c  which migration events become moves: thresholds, target
 *             node, freeze and melt, rate limit, processes opted in
 *   events.c  the node devices: thresholds, poll(2) and read(2) of
 *             struct rcb_event, dispatch of each event
 *   countscan.c  the counter scan: the served processes' pages ranked by
 *             their counts since the last look, the worst moved
 *   move.c    the move itself: checks, move_pages(2), refusals by reason
 *   stats.c   statistics, the stats file, log lines
 *
 * Functions return 0 or a negative errno, the cause already logged.
 */
#ifndef REFCNTD_H
#define REFCNTD_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <refcnt/refcnt.h>

#define RD_MAX_LIST	64

/* The configuration: refcntd.conf(5) describes every field. */
struct rd_config {
	uint32_t diff_threshold;	/* remote - home to act; 0: any */
	uint32_t abs_threshold;		/* remote count to act; 0: any */
	uint32_t promote_threshold;	/* remote count, page on a CPU-less node */
	uint32_t fold_threshold;	/* nodes' absolute threshold; 0: leave */
	int set_thresholds;		/* write diff_threshold to the nodes */
	double rate_pages;		/* pages/s, 0: unlimited */
	double rate_mb;			/* MB/s, 0: unlimited */
	uint32_t freeze_ms;		/* no move of a page again within */
	uint32_t melt_events;		/* events from one node melt a freeze */
	uint64_t min_free_mb;		/* a target keeps this much free */
	int fallback;			/* RD_FALLBACK_*: the first choice refused */
	int all;			/* every process, else the lists below */
	pid_t root_pid;			/* >0: it and its descendants too */
	int nr_pids, nr_trees, nr_comms, nr_cgroups;
	pid_t pids[RD_MAX_LIST];
	pid_t trees[RD_MAX_LIST];	/* these and their descendants */
	char comms[RD_MAX_LIST][16];
	char cgroups[RD_MAX_LIST][256];
	int dry_run;
	int log_moves;
	char stats_file[256];
	uint32_t stats_interval;	/* s between stats file writes, 0: never */
	uint32_t scan_ms;		/* soft-dirty scan of opted-in processes */
	uint32_t count_scan_ms;		/* counter scan; 0: off */
	uint32_t thread_hint_pages;	/* the scan says when threads should move */
	int events;			/* act on the nodes' migration events */
	uint32_t rmap_ms;		/* reverse map rebuilt on a miss, at most */
	uint32_t rmap_cpu_pct;		/* of a CPU its builds may take; 0: any */
	char feed[16];			/* auto, pebs, hinting, faults, hub, none */
	uint32_t feed_period;		/* its period; 0: the feed's default */
};

/*
 * When the node nearest the references has no room or is outside the
 * process's cpuset: the nearest one that has room and is inside, or none.
 */
enum { RD_FALLBACK_NEAREST, RD_FALLBACK_NONE };

/* Why a move was refused: the order of the statistics. */
enum rd_refusal {
	RD_REF_NO_CONTEXT,	/* the event names no process */
	RD_REF_NOT_OPTED_IN,	/* the process is not one we act on */
	RD_REF_GONE,		/* the process exited */
	RD_REF_NOT_PERMITTED,	/* move_pages(2): EPERM / EACCES on the pid */
	RD_REF_MLOCKED,		/* in an mlock()ed mapping */
	RD_REF_SHARED,		/* mapped by other processes too */
	RD_REF_PINNED,		/* pinned or busy: migration failed */
	RD_REF_NOT_PRESENT,	/* no longer mapped, or the zero page */
	RD_REF_STALE,		/* no longer at the event's physical page */
	RD_REF_NO_MEMORY,	/* no node near the users has free memory */
	RD_REF_NOT_ALLOWED,	/* the node is not in the process's cpuset */
	RD_REF_ERROR,		/* any other error */
	RD_REF_NR,
};

extern const char *const rd_refusal_names[RD_REF_NR];

/* Counts of what happened to the migration events. */
struct rd_stats {
	uint64_t events;	/* migration events read */
	uint64_t lost;		/* fold/peg records dropped (RCB_EVENT_LOST) */
	uint64_t below;		/* below refcntd's own thresholds */
	uint64_t moved;		/* pages moved */
	uint64_t moved_bytes;
	uint64_t dry_run;	/* moves dry-run only logged */
	uint64_t rate_limited;
	uint64_t frozen;	/* a frozen page not moved */
	uint64_t melted;	/* freezes melted early */
	uint64_t refused[RD_REF_NR];
	uint64_t scans;		/* soft-dirty scans done */
	uint64_t rmapped;	/* events without context named by the rmap */
	uint64_t rmap_rebuilds;	/* reverse map rebuilt on a miss */
	uint64_t rmap_ns;	/* time the builds took */
	uint64_t over_time;	/* past the thresholds on the counts over time */
	uint64_t frames_folded;	/* moved pages' old frames folded */
	uint64_t count_scans;	/* counter scans done */
	uint64_t count_scan_pages;	/* pages' counts they read */
	uint64_t count_scan_candidates;	/* pages they found remote-led */
	uint64_t thread_hints;	/* scans that found a thread's move better */
};

/* One page moved (or, dry-run, that would have been). */
struct rd_move {
	uint64_t time_ns;	/* CLOCK_MONOTONIC */
	pid_t pid;
	uint64_t vaddr;		/* the page's first address */
	uint64_t size;		/* bytes: base page, THP or hugetlb page */
	int from_nid, to_nid;
	uint32_t remote, home;	/* the event's counts */
	int dry_run;
};

struct rd_engine;

/* What the user of the engine learns as it runs. */
struct rd_hooks {
	void (*moved)(const struct rd_move *m, void *arg);
	void *arg;
};

/* config.c */
void rd_config_defaults(struct rd_config *c);
/* Parse path into c (defaults first); -EINVAL: "path:line: why" logged. */
int rd_config_load(struct rd_config *c, const char *path);
/* Set one key; -EINVAL with the reason in why. */
int rd_config_set(struct rd_config *c, const char *key, const char *val,
		  char *why, size_t size);
int rd_config_check(const struct rd_config *c, char *why, size_t size);

/* feed = auto: the PEBS/IBS period (make accuracy's choice). */
#define RD_PEBS_PERIOD	10000
/* The feed counting while refcntd runs: "" before rd_feed_start(). */
extern const char *rd_feed_name;
/* Turn on the feed of c->feed (logged); 0 or a negative errno. */
int rd_feed_start(const struct rd_config *c);
/* Turn off what rd_feed_start() turned on. */
void rd_feed_stop(void);

/* events.c: open every node, set thresholds; -ENODEV, -EACCES, ... */
int rd_engine_open(struct rd_engine **e, const struct rd_config *c,
		   const struct rd_hooks *hooks);
/* Wait up to timeout_ms for events (ppoll with sigmask) and act on them. */
int rd_engine_run_once(struct rd_engine *e, int timeout_ms,
		       const sigset_t *sigmask);
/* Take a new configuration (SIGHUP); thresholds follow. */
int rd_engine_reconfig(struct rd_engine *e, const struct rd_config *c);
/* Opt one more process in (refcnt-run --migrate: the traced ones). */
int rd_engine_add_pid(struct rd_engine *e, pid_t pid);
/* Restore the thresholds found at open, close the devices. */
void rd_engine_close(struct rd_engine *e);
const struct rd_stats *rd_engine_stats(const struct rd_engine *e);
int rd_engine_nr_nodes(const struct rd_engine *e);

/* stats.c */
void rd_stats_print(FILE *f, const struct rd_stats *s, int json);
/* Write the stats file (atomically: a temporary file renamed). */
int rd_stats_write(const char *path, const struct rd_stats *s);
/* A log line: "<N>" priority prefix when stderr goes to the journal. */
void rd_log(int prio, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
extern int rd_quiet;	/* info lines off (refcnt-run --migrate) */
extern int rd_verbose;	/* debug lines: every refusal */

uint64_t rd_now_ns(void);

#endif /* REFCNTD_H */
