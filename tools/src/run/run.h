/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt-run's parts (tools/src/run/): the options, what a snapshot of a
 * process holds, and what each part offers the others and main().
 *
 *   nodes.c     node devices, counters, reset, query permission
 *   feeds.c     which feed counts (the hub, PEBS/IBS, hinting or other
 *               page faults; the command's own or the machine's), NUMA
 *               balancing for the run, and what the feeds did
 *   labels.c    --labels
 *   track.c     the allocation tracker (librefcnt-track.so): preload,
 *               the tables it writes
 *   symbols.c   names from the program's files (libdwfl): variables,
 *               functions, file:line
 *   objects.c   the objects of a process: variables, allocations and
 *               their sites, stacks, mappings; which owns each page
 *   lost.c      references lost to pegging, by page (through the sets)
 *   snapshot.c  regions, objects and counters of a process at its exit
 *   advice.c    placement advice per region and per object
 *   names.c     an object's name and where it comes from, resolved after
 *               the run
 *   report-text.c, report-json.c, report-heatmap.c, report-html.c
 *               the reports, each drawn from the snapshots (procs) after
 *               the run; an analysis of a run (refcnt-policy's comparison
 *               of placement policies, say) joins them as one more
 *               report_*() called from report() in refcnt-run.c
 *   report-objects.c  what the reports say alike about objects
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
#include "track/track-table.h"
#include "trace/policy.h"

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
	const char *feed;	/* --feed: auto, hub, pebs, hinting, faults */
	long pebs_period;	/* --pebs-period */
	int pebs_period_set;	/* given, not the default */
	int no_track;
	uint64_t track_threshold;
	const char *html;
	const char *json_output;	/* also the JSON report, into this file */
	long max_objects;	/* objects the text report lists */
	long min_samples;	/* fewer: the figures are flagged */
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

/* ------------------------------------------------------------ period.c */

/*
 * The PEBS/IBS period below which perf may throttle the feed's event at
 * its peak (once a cycle; Intel's memory-side events once in a hundred):
 * from the CPUs' top clock and kernel.perf_event_max_sample_rate (*@hz,
 * *@rate); 0 when either is unknown.
 */
long pebs_safe_min_period(long *rate, double *hz);
/*
 * The command's session period against it: refused (-EINVAL, said) when
 * --pebs-period asked for less, the default raised to it (said).
 */
int pebs_period_check(void);

/* ------------------------------------------------------------ feeds.c */

extern long old_period, new_period;
/* The command's own PEBS/IBS period, 0 when it has none. */
extern long new_pebs;
/* The command's own session (RCB_COUNT_START), -1 when machine-wide. */
extern int count_fd;
/* Its statistics, read when the run ends (count_done set). */
extern struct rcb_count_stats count_stats;
extern int count_done;

int setup_feeds(void);
void restore_feeds(void);
/* The machine-wide feeds' statistics at the end of the run. */
void feeds_end(void);
/* What counted, for the reports. */
struct feed_desc {
	const char *name;	/* "hub", "pebs", "hinting", "faults", "none" */
	char what[512];		/* which feed, its period, scope */
	char meaning[512];	/* what a count means */
	long weight;		/* references one sample stands for */
	int weight_unknown;	/* not known here: weight says 1 */
	uint64_t delivered;	/* samples that reached a counter in the run */
	/* Records a device feed could not make in the run (buffers full). */
	uint64_t dropped;
	/* Times perf throttled the feed's events in the run (PEBS/IBS). */
	uint64_t throttled;
	/*
	 * At most that share of the time the feed sampled (the command's
	 * CPU time, or every CPU's for a machine-wide feed) sampled
	 * nothing: throttled / HZ over it; -1 not known.
	 */
	double throttled_share;
	/*
	 * References the throttles lost, as the module estimates them from
	 * the rate before each (machine-wide feed only); -1 not known.
	 */
	long long throttle_lost;
};
extern struct feed_desc feed_used[4];
extern int nr_feeds_used;
/* The weight that turns a count into samples (the main feed's), >= 1. */
long feed_weight(void);
/* Is that weight known (not for the hub's emulated PMU)? */
int feed_weight_known(void);
/* Does the command run bound (MPOL_BIND | MPOL_F_NUMA_BALANCING)? */
int hinting_binds(void);
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

/* ------------------------------------------------------------ track.c */

/* A process's table, read at its exit. */
struct track_data {
	struct track_header h;
	struct track_site *sites;
	uint32_t nr_sites;
	struct track_obj *objs;
	uint32_t nr_objs;
	struct track_reading *reads;
	uint32_t nr_reads;
	uint64_t *leaf_keys;	/* (address >> TRACK_LEAF_SHIFT) + 1 */
	uint32_t *leaves;	/* TRACK_LEAF_PAGES site + 1 entries each */
	uint32_t nr_leaves;
};

extern const char *track_off_why;
int track_setup(char **argv);
void track_child_env(void);
int track_enabled(void);
struct track_data *track_read(pid_t pid);
void track_free(struct track_data *t);
const struct track_reading *track_reading_of(const struct track_data *t,
					     uint32_t idx1);
/* cb(arg, pid) for every process that wrote a table. */
void track_tables(void (*cb)(void *arg, pid_t pid), void *arg);
void track_cleanup(void);
int track_is_table(const char *path);
const char *track_kind_name(uint32_t kind);
/* 1 statically linked, 0 dynamically, -1 not an ELF file we can read. */
int elf_is_static(const char *path);

/* ---------------------------------------------------------- symbols.c */

struct syms;
struct sym_var {
	uint64_t addr, size;
	const char *name, *module, *section;
	int local;
};
struct sym_loc {
	uint64_t pc, offset;	/* offset in its module */
	char func[160];		/* innermost (inlined) function, or module+0x.. */
	char symbol[160];	/* the ELF symbol, "" if none */
	char file[256];
	char module[128];	/* base name */
	int line;
	int inlined;
};
struct sym_module_info {
	const char *path;
	int elf, has_symtab, has_dwarf, nsyms;
};

/* The modules of a process from its maps text (saved at exit). */
struct syms *syms_open(const char *maps, size_t len);
void syms_close(struct syms *sy);
void syms_each_variable(struct syms *sy,
			void (*cb)(void *arg, const struct sym_var *v), void *arg);
void syms_each_module(struct syms *sy,
		      void (*cb)(void *arg, const struct sym_module_info *mi),
		      void *arg);
/* A code address (a return address: the call is before it). 0 if named. */
int syms_pc(struct syms *sy, uint64_t pc, int is_return, struct sym_loc *out);
/* The declaration of module's variable at addr from DWARF: 0, or -1. */
int syms_var_decl(struct syms *sy, const char *module, uint64_t addr,
		  char *file, size_t size, int *line);

/* --------------------------------------------------------- snapshot.c */

struct advice {
	const char *action;	/* "move", "interleave", "none" */
	int node;		/* move: target nid */
	int nodes[RCB_MAX_COUNTERS];	/* interleave: nids */
	int nr_nodes;
	char reason[1024];
	char hint[1024];
	/* Why none, in a few words, where that is no question of placement. */
	const char *why_not;
};

enum obj_kind {
	OBJ_LABEL,		/* --labels */
	OBJ_ALLOC,		/* a large allocation or mapping (tracked) */
	OBJ_VARIABLE,		/* .data or .bss of a module */
	OBJ_SITE,		/* small allocations folded by call site */
	OBJ_STACK,		/* a thread's stack */
	OBJ_MAPPING,		/* the rest of a memory region */
	OBJ_TRACKER,		/* the tracker's own table */
};

/* What an object is, beside its counts (struct region.obj). */
struct objinfo {
	enum obj_kind kind;
	const char *alloc;	/* OBJ_ALLOC, OBJ_SITE: "malloc", "mmap", ... */
	uint64_t size;		/* bytes asked for, or the variable's size */
	uint64_t calls;		/* OBJ_SITE: small allocations folded */
	int seq;		/* OBJ_ALLOC: index in its table; OBJ_SITE: site */
	int nth, of;		/* the nth of `of` allocations of its site */
	int tid;		/* OBJ_ALLOC: the allocating thread; OBJ_STACK: its thread */
	int alloc_node;		/* the allocating thread's node, -1 unknown */
	int arg_node;		/* numa_alloc_onnode()'s or mbind()'s node, or -1 */
	int placed;		/* its placement was asked for (mbind, libnuma) */
	int freed, realloced, partial, inherited;
	double t_alloc, t_free;	/* seconds after the tracker started */
	const struct track_reading *base, *end;
	uint64_t var_addr;	/* OBJ_VARIABLE */
	const char *module;	/* OBJ_VARIABLE: its module's path */
	char section[24];
	int region;		/* OBJ_MAPPING, OBJ_TRACKER: the region */
	int own_memory;		/* OBJ_TRACKER: an anonymous mapping of its own */
	uint64_t pages_shared;	/* pages it owns that hold others' bytes too */
	/* Resolved after the run (names.c). */
	int resolved;
	char func[160];		/* allocation: the first frame past wrappers */
	char file[256];
	int line;
	char via[160];		/* wrappers left out: "alloc_guarded" */
	char caller[200];	/* the frame above: "main (t.c:40)" */
	struct sym_loc *stack;
	int nr_stack;
};

struct region {
	uint64_t start, end;
	char name[256];
	char mapping[256];
	const char *kind;
	char perms[8];
	int labelled;
	uint64_t pages, present, denied, uncounted, counted;
	uint64_t zero;		/* present, mapping the shared zero page: not counted */
	uint64_t refs[RCB_MAX_COUNTERS];
	uint64_t total, local;
	uint64_t *home_pages;	/* by cnodeid */
	uint64_t candidates;	/* a remote counter above home + diff */
	uint64_t lost[RCB_MAX_COUNTERS];	/* references lost to pegging */
	uint64_t lost_total;
	uint64_t lost_pages;	/* counted pages whose lost counts were read */
	struct advice adv;
	struct objinfo *obj;	/* objects only */
	int mapobj;		/* regions only: their mapping object */
};

struct hot {
	uint64_t vaddr, paddr, page_size, total;
	int region;
	int object;
	int home;		/* cnodeid */
	uint32_t refs[RCB_MAX_COUNTERS];
};

/* Pages [start, end) belong to object obj (objects.c). */
struct owner_run {
	uint64_t start, end;
	int obj;
};

/* A page whose lost counts are read after the queries (lost.c). */
struct lost_page {
	uint64_t paddr;
	int cnodeid;
	int region, object;
};

/* A thread of the process, as last seen. */
struct thread_info {
	pid_t tid;
	char comm[20];
	int cpu, node;
	uint64_t sp;
};

struct snapshot {
	struct region *r;
	int nr;
	struct region *o;	/* objects */
	int nr_o;
	struct owner_run *runs;
	size_t nr_runs;
	struct hot *hot;
	int nr_hot;
	pid_t tid;
	int queried_ok;
	uint64_t denied_pages;
	char *maps;		/* /proc/TID/maps at exit */
	size_t maps_len;
	char exe[4096];
	int exe_static;		/* 1 static, 0 dynamic, -1 unknown */
	struct syms *syms;
	struct track_data *track;
	struct thread_info *threads;
	int nr_threads;
	uint64_t *matrix;	/* references: home cnodeid x counter */
	struct lost_page *lostq;
	size_t nr_lostq, cap_lostq;
	int lost_known;		/* lost counts could be read (paddr, devices) */
	struct pl_table pl;	/* pages x counters, for the policies' sentence */
	int pl_ok;		/* pl holds every counted page */
};

/*
 * The snapshot of tid's process at its exit, or NULL. threads[] (malloc'ed)
 * becomes the snapshot's: freed with it, or here when there is none.
 */
struct snapshot *take_snapshot(pid_t tid, pid_t tgid,
				struct thread_info *threads, int nr_threads);
/* Its first half: maps, symbols, the tracker's table, objects; no counts. */
struct snapshot *snapshot_objects(pid_t tid, pid_t tgid,
				   struct thread_info *threads, int nr_threads);
void free_snapshot(struct snapshot *s);
/* qsort() order of region pointers: most references first. */
int cmp_region_refs(const void *a, const void *b);
const char *region_of(const struct snapshot *s, int i);
/* Whether a report lists the region (--all: every one). */
int shown(const struct region *r);
/* Add one page's counts to r. */
struct page_counts {
	uint64_t refs[RCB_MAX_COUNTERS];
	uint64_t total, local;
	int cnodeid;
	int present, denied, uncounted;
	int candidate;
};
void add_page(struct region *r, const struct page_counts *pc);
uint64_t remote_refs(const struct region *r);
/* qsort() order of region pointers: most remote references first. */
int cmp_region_remote(const void *a, const void *b);
/*
 * The placement policies compared over the counted pages (policy.c), as
 * refcnt-policy does: 0, or -1 when there is nothing to compare.
 */
int snapshot_policies(const struct snapshot *s, struct pl_result *r);

/* ---------------------------------------------------------- objects.c */

/* The objects of s and which owns each page: before the queries. */
void objects_build(struct snapshot *s, pid_t tid);
/* The object owning the page at vaddr of region ri. */
int object_of(struct snapshot *s, int ri, uint64_t vaddr);
/* After the queries: freed objects' counts, the readings subtracted. */
void objects_finish(struct snapshot *s);
const char *obj_kind_name(enum obj_kind k);

/* ------------------------------------------------------------- lost.c */

void lost_queue(struct snapshot *s, uint64_t paddr, int cnodeid, int region,
		int object);
void lost_read(struct snapshot *s);

/* ------------------------------------------------------------ names.c */

/* Name every object of s worth showing (from its syms). */
void names_resolve(struct snapshot *s);
/* The threads of s on node nid: "1234 worker, 1235" into buf. */
void threads_on_node(const struct snapshot *s, int nid, char *buf, size_t size);

/* ----------------------------------------------------------- advice.c */

/*
 * Regions and objects of a process whose pages counted proc_total
 * references: nothing to advise for a file's code or read-only data, nor
 * under NEGLIGIBLE_SHARE of proc_total.
 */
void advise(struct region *r, uint64_t proc_total);
/* Objects: advise() and first touch; none for the tracker's own memory. */
void advise_object(struct region *r, uint64_t proc_total);
#define NEGLIGIBLE_SHARE	0.01
#define WHY_ZERO		"never written (zero page)"
#define WHY_FILE		"shared file pages"
#define WHY_NEGLIGIBLE		"negligible share"
#define WHY_TRACKER		"the tracker's own"
/* The references counted in s's pages. */
uint64_t snapshot_refs(const struct snapshot *s);
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
	struct thread_info *gone;	/* threads that left before the end */
	int nr_gone, cap_gone;
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
void report_html(const char *path, char **argv, int exit_code);
/* Is object r listed (with references, labelled, or a tracked allocation)? */
int object_shown(const struct region *r);
/* Objects a report lists, most remote references first; *n of them. */
struct region **objects_shown(const struct snapshot *s, int *n);
/* Samples behind r's count (references / the feed's weight). */
uint64_t samples_of(const struct region *r);
/* Fewer than --min-samples: its figures are flagged. */
int few_samples(const struct region *r);
/* Every reference counted (the main feed's weight is 1): no intervals. */
int counts_exact(void);
/* Sampled with a known weight above 1: the counts have intervals. */
int counts_sampled(void);
/* The 95% interval of a count of refs references (rt_count95()). */
void refs_interval(uint64_t refs, uint64_t *lo, uint64_t *hi);
const char *object_kind_str(const struct region *r, char *buf, size_t size);
/* "file.c:12", "libfoo.so .bss", or the mapping. */
const char *object_where(const struct region *r, char *buf, size_t size);
/* "move to 1", "interleave 0,1", "first touch 1", "-". */
const char *advice_short(const struct region *r, char *buf, size_t size);
/* Nodes with 15% or more of r's references, and their threads. */
void users_str(const struct snapshot *s, const struct region *r, char *nodes,
	       size_t nsize, char *threads, size_t tsize);
/* What the tracker recorded for s's process, or why not. */
const char *track_status(const struct snapshot *s, char *buf, size_t size);
/* The tracker's own mappings in s: how many, and their pages present. */
int tracker_memory(const struct snapshot *s, uint64_t *present);
/* The program's files without any symbols (stripped), or "". */
const char *symbol_gaps(const struct snapshot *s, char *buf, size_t size);

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
