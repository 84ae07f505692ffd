/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt-run's parts (tools/src/run/): the options, what a snapshot of a
 * process holds, and what each part offers the others and main().
 *
 *   nodes.c     node devices, counters, reset, query permission
 *   feeds.c     the page-fault feed (the command's own or the machine's)
 *               and NUMA balancing for the run
 *   labels.c    --labels
 *   snapshot.c  regions and counters of a process at its exit
 *   advice.c    placement advice per region
 *   report-text.c, report-json.c, report-heatmap.c   the reports
 *   trace.c     the ptrace loop: exits, threads, children
 *   child.c     starting the command: fork, seize, placement, exec
 *   util.c      helpers
 */
#ifndef REFCNT_RUN_H
#define REFCNT_RUN_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "rtools.h"

/*
 * The parts return 0, or a negative errno or -1 with the cause printed;
 * main() turns that into an exit code (rt_run_exit_code()). Out of
 * memory, xcalloc() and the like exit with RT_EXIT_RUN_FAIL.
 */

/* The options (refcnt-run.c). */
struct run_opts {
	struct bitmask *cpunodes, *membind, *interleave;
	int preferred;
	long period;		/* -1: the default (see feeds.c) */
	int machine_wide;	/* the module's feed, not the command's own */
	int hinting;
	int reset;
	int follow;
	int json;
	int all;
	int top;
	double min_share;
	long min_refs;
	const char *labels;
	const char *output;
	const char *heatmap;
	int width, height;
	int quiet;
};
extern struct run_opts opt;

/* ------------------------------------------------------------ nodes.c */

extern struct refcnt_node *qnode;	/* any node: the query is global */
extern struct rcb_info info;
extern struct rt_counters ctr;
extern int *node_has_mem;		/* by cnodeid */
extern int *node_has_cpu;		/* by cnodeid */

int setup_counters(void);
int check_query_permission(void);
int reset_counters(void);
int cnode_of_nid(int nid);
int counter_nid(int c);
int nearest_mem_nid(int nid);

/* ------------------------------------------------------------ feeds.c */

extern long old_period, new_period;
/* The command's own session (RCB_COUNT_START), -1 when machine-wide. */
extern int count_fd;
/* Its statistics, read when the run ends (count_done set). */
extern struct rcb_count_stats count_stats;
extern int count_done;

int setup_feeds(void);
void restore_feeds(void);
/* In the command, before exec: its own session's fd, or -1 with errno. */
int count_self(void);
/* The session's statistics, then close it. */
void stop_counting(void);

/* ----------------------------------------------------------- labels.c */

struct label {
	uint64_t start, end;
	char name[64];
};
extern struct label *labels;
extern int nr_labels;

void load_labels(void);

/* --------------------------------------------------------- snapshot.c */

struct advice {
	const char *action;	/* "move", "interleave", "none" */
	int node;		/* move: target nid */
	int nodes[RCB_MAX_COUNTERS];	/* interleave: nids */
	int nr_nodes;
	char reason[1024];
	char hint[1024];
};

struct region {
	uint64_t start, end;
	char name[256];
	char mapping[256];
	const char *kind;
	char perms[8];
	int labelled;
	uint64_t pages, present, denied, uncounted, counted;
	uint64_t refs[RCB_MAX_COUNTERS];
	uint64_t total, local;
	uint64_t *home_pages;	/* by cnodeid */
	uint64_t candidates;	/* a remote counter above home + diff */
	struct advice adv;
};

struct hot {
	uint64_t vaddr, paddr, page_size, total;
	int region;
	int home;		/* cnodeid */
	uint32_t refs[RCB_MAX_COUNTERS];
};

struct snapshot {
	struct region *r;
	int nr;
	struct hot *hot;
	int nr_hot;
	pid_t tid;
	int queried_ok;
	uint64_t denied_pages;
};

struct snapshot *take_snapshot(pid_t tid);
void free_snapshot(struct snapshot *s);
/* qsort() order of region pointers: most references first. */
int cmp_region_refs(const void *a, const void *b);
const char *region_of(const struct snapshot *s, int i);
/* Whether a report lists the region (--all: every one). */
int shown(const struct region *r);

/* ----------------------------------------------------------- advice.c */

void advise(struct region *r);
int main_home(const struct region *r, uint64_t *pages);
void nodes_str(const int *nids, int n, char *buf, size_t size);
void home_str(const struct region *r, char *buf, size_t size);

/* ------------------------------------------------------------ trace.c */

struct proc {
	pid_t tgid;
	char cmd[512];
	int is_main;
	int exited, status;	/* wait status once gone */
	struct snapshot *snap;
	struct proc *next;
};

struct task {
	pid_t tid, tgid;
	int seen_stop;		/* had its first stop (auto-attached) */
	int exiting;		/* stopped at PTRACE_EVENT_EXIT */
	struct task *next;
};

extern struct proc *procs;
extern pid_t main_pid;
extern struct timespec t_start, t_end;

struct proc *find_proc(pid_t tgid);
long ptrace_options(void);
void trace_signals(void);
void trace_command(const char *cmd);
void trace_loop(void);

/* ------------------------------------------------------------ child.c */

struct child_err {
	int stage;	/* 1: NUMA placement, 2: exec, 3: counting */
	int err;
};

int start_command(char **argv, struct child_err *ce);

/* ---------------------------------------------------------- reports */

void report_text(FILE *f);
void report_json(FILE *f, char **argv, int exit_code, long period,
		 long old_period);
void report_heatmap(const struct proc *m);

/* ------------------------------------------------------------ util.c */

void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *xcalloc(size_t n, size_t s);
double pct(uint64_t a, uint64_t b);

/* ---------------------------------------------------------- migrate.c */

extern int migrate_on;
/* --migrate[=FILE]: refcntd's policy from FILE (or its defaults). */
int migrate_option(const char *file);
/* The engine for pid and its descendants, in a thread; 0 or -errno. */
int migrate_start(pid_t pid);
void migrate_stop(void);
void migrate_report_text(FILE *f);
/* ",\n  \"migrate\": {...}" when --migrate. */
void migrate_report_json(FILE *f);

#endif /* REFCNT_RUN_H */
