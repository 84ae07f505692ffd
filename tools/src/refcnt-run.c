// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: run a command, placed like numactl(8) would place it, make
 * sure its memory references are sampled while it runs, and when it exits
 * (before its memory is gone) report per memory region where the
 * references came from, the hottest pages, and placement advice.
 *
 * The exit is caught with ptrace: PTRACE_SEIZE with PTRACE_O_TRACEEXIT
 * (and TRACECLONE for threads, TRACEFORK/TRACEVFORK with
 * --follow-children). At the PTRACE_EVENT_EXIT stop of the thread that
 * ends the process, its mm still exists: /proc/TID/maps and
 * RCB_RANGE_QUERY (extended + hardware counters) are read then, and the
 * thread is let go. Threads share the mm, so one query covers them all.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <numa.h>
#include <numaif.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "heatmap.h"
#include "rtools.h"

#ifndef MPOL_F_NUMA_BALANCING
#define MPOL_F_NUMA_BALANCING	(1 << 13)
#endif

/* Exit codes of refcnt-run itself (otherwise: the command's status). */
#define RUN_EXIT_NOMODULE	121
#define RUN_EXIT_PERM		122
#define RUN_EXIT_FAIL		125
#define RUN_EXIT_NOEXEC		126
#define RUN_EXIT_NOTFOUND	127

#define FAULT_PERIOD	"/sys/module/refcnt/parameters/fault_period"
#define NUMA_BALANCING	"/proc/sys/kernel/numa_balancing"

/* Entries per range query. */
#define QUERY_CHUNK	4096

/* ------------------------------------------------------------ options */

static struct {
	struct bitmask *cpunodes, *membind, *interleave;
	int preferred;
	long period;		/* -1: 1 if the feed is off */
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
} opt = { .preferred = -1, .period = -1, .top = 10, .min_share = 0.6,
	  .min_refs = 16, .width = 1000, .height = 700 };

/* ------------------------------------------------------- counters/nodes */

static struct refcnt_node *qnode;	/* any node: the query is global */
static struct rcb_info info;
static struct rt_counters ctr;
static int *node_has_mem;		/* by cnodeid */
static int *node_has_cpu;		/* by cnodeid */

/* ------------------------------------------------------------ labels */

struct label {
	uint64_t start, end;
	char name[64];
};
static struct label *labels;
static int nr_labels;

/* ------------------------------------------------------------ reports */

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

static struct proc *procs;
static struct task *tasks;
static pid_t main_pid;
static struct timespec t_start, t_end;

/* ------------------------------------------------------------ helpers */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	if (opt.quiet)
		return;
	va_start(ap, fmt);
	rt_verr(fmt, ap);
	va_end(ap);
}

static void *xcalloc(size_t n, size_t s)
{
	void *p = calloc(n ? n : 1, s ? s : 1);

	if (!p) {
		rt_err("out of memory");
		exit(RUN_EXIT_FAIL);
	}
	return p;
}

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), err;
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, val, strlen(val));
	err = errno;
	close(fd);
	errno = err;
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

static int cnode_of_nid(int nid)
{
	int i;

	for (i = 0; i < ctr.nr_cnodes; i++)
		if (ctr.cnode_nid[i] == nid)
			return i;
	return -1;
}

/* The node a counter's references come from: one with CPUs in a group. */
static int counter_nid(int c)
{
	int first = c * ctr.nodes_per_counter, i;

	for (i = first; i < first + ctr.nodes_per_counter && i < ctr.nr_cnodes; i++)
		if (node_has_cpu[i])
			return ctr.cnode_nid[i];
	return first < ctr.nr_cnodes ? ctr.cnode_nid[first] : -1;
}

/* The node with memory nearest to nid (nid itself if it has memory). */
static int nearest_mem_nid(int nid)
{
	int best = -1, bestd = INT_MAX, i, c = cnode_of_nid(nid);

	if (c >= 0 && node_has_mem[c])
		return nid;
	for (i = 0; i < ctr.nr_cnodes; i++) {
		int d;

		if (!node_has_mem[i])
			continue;
		d = rt_distance(nid, ctr.cnode_nid[i]);
		if (d < 0)
			d = INT_MAX - 1;
		if (d < bestd) {
			bestd = d;
			best = ctr.cnode_nid[i];
		}
	}
	return best;
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

/* ------------------------------------------------------------ labels */

static int cmp_label(const void *a, const void *b)
{
	const struct label *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

/*
 * Lines "NAME START-END" or "array NAME START-END ..." (demo-workload's
 * output); anything else is skipped.
 */
static void load_labels(void)
{
	char line[1024];
	FILE *f;
	int cap = 0;

	nr_labels = 0;
	if (!opt.labels)
		return;
	f = fopen(opt.labels, "r");
	if (!f) {
		rt_err("--labels %s: %s (regions keep their /proc/PID/maps names)",
		       opt.labels, strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char *tok[4] = { NULL }, *save = NULL, *p;
		uint64_t s, e;
		int n = 0, k;

		for (p = strtok_r(line, " \t\n", &save); p && n < 4;
		     p = strtok_r(NULL, " \t\n", &save))
			tok[n++] = p;
		k = (n >= 3 && !strcmp(tok[0], "array")) ? 1 : 0;
		if (n < k + 2 || rt_parse_range(tok[k + 1], &s, &e))
			continue;
		if (nr_labels == cap) {
			cap = cap ? 2 * cap : 16;
			labels = realloc(labels, cap * sizeof(*labels));
			if (!labels) {
				rt_err("out of memory");
				exit(RUN_EXIT_FAIL);
			}
		}
		labels[nr_labels].start = s;
		labels[nr_labels].end = e;
		snprintf(labels[nr_labels].name, sizeof(labels[0].name), "%s",
			 tok[k]);
		nr_labels++;
	}
	fclose(f);
	qsort(labels, nr_labels, sizeof(*labels), cmp_label);
}

/* ------------------------------------------------------------ snapshot */

static void free_snapshot(struct snapshot *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < s->nr; i++)
		free(s->r[i].home_pages);
	free(s->r);
	free(s->hot);
	free(s);
}

static struct region *add_region(struct snapshot *s, int *cap, uint64_t start,
				 uint64_t end, const char *name,
				 const char *mapping, const char *kind,
				 const char *perms, int labelled)
{
	struct region *r;

	if (s->nr == *cap) {
		*cap = *cap ? 2 * *cap : 64;
		s->r = realloc(s->r, *cap * sizeof(*s->r));
		if (!s->r) {
			rt_err("out of memory");
			exit(RUN_EXIT_FAIL);
		}
	}
	r = &s->r[s->nr++];
	memset(r, 0, sizeof(*r));
	r->start = start;
	r->end = end;
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->mapping, sizeof(r->mapping), "%s", mapping);
	r->kind = kind;
	snprintf(r->perms, sizeof(r->perms), "%s", perms);
	r->labelled = labelled;
	r->home_pages = xcalloc(ctr.nr_cnodes, sizeof(uint64_t));
	return r;
}

/* Split a VMA at the labels that overlap it. */
static void add_vma(struct snapshot *s, int *cap, uint64_t start, uint64_t end,
		    const char *mapping, const char *kind, const char *perms)
{
	uint64_t at = start;
	int i;

	for (i = 0; i < nr_labels && at < end; i++) {
		uint64_t ls = labels[i].start, le = labels[i].end;

		if (le <= at || ls >= end)
			continue;
		if (ls > at)
			add_region(s, cap, at, ls, mapping, mapping, kind, perms, 0);
		if (ls < at)
			ls = at;
		if (le > end)
			le = end;
		add_region(s, cap, ls, le, labels[i].name, mapping, kind, perms, 1);
		at = le;
	}
	if (at < end)
		add_region(s, cap, at, end, mapping, mapping, kind, perms, 0);
}

static void keep_hot(struct snapshot *s, const struct rcb_page_counters *e,
		     const struct rcb_page_counters *hw, uint64_t vaddr,
		     uint64_t total, int region)
{
	struct hot *h;
	int i, c;

	if (opt.top <= 0 || !total)
		return;
	if (s->nr_hot == opt.top && s->hot[s->nr_hot - 1].total >= total)
		return;
	i = s->nr_hot < opt.top ? s->nr_hot++ : s->nr_hot - 1;
	/* Insertion: the list stays sorted, largest first. */
	while (i > 0 && s->hot[i - 1].total < total) {
		s->hot[i] = s->hot[i - 1];
		i--;
	}
	h = &s->hot[i];
	h->vaddr = vaddr;
	h->paddr = e->paddr;
	h->page_size = e->page_size;
	h->total = total;
	h->region = region;
	h->home = e->cnodeid;
	for (c = 0; c < ctr.nr; c++)
		h->refs[c] = e->refcnt[c] + hw->refcnt[c];
}

/* Add the entries of one query chunk to region r. */
static void account(struct snapshot *s, int ri, uint64_t vaddr,
		    const struct rcb_page_counters *ext,
		    const struct rcb_page_counters *hw, size_t n)
{
	struct region *r = &s->r[ri];
	uint64_t gran = info.rcb_granularity;
	size_t i;
	int c;

	for (i = 0; i < n; i++, vaddr += gran) {
		const struct rcb_page_counters *e = &ext[i];
		uint64_t total = 0, homec, maxremote = 0;
		int home_ctr;

		if (vaddr + gran <= r->start || vaddr >= r->end)
			continue;
		if (!(e->flags & RCB_PAGE_PRESENT))
			continue;
		r->present++;
		if (e->flags & RCB_PAGE_DENIED) {
			r->denied++;
			continue;
		}
		if (e->flags & RCB_PAGE_UNCOUNTED || e->cnodeid < 0 ||
		    e->cnodeid >= ctr.nr_cnodes) {
			r->uncounted++;
			continue;
		}
		r->counted++;
		r->home_pages[e->cnodeid]++;
		home_ctr = e->cnodeid / ctr.nodes_per_counter;
		for (c = 0; c < ctr.nr; c++) {
			uint64_t v = (uint64_t)e->refcnt[c] + hw[i].refcnt[c];

			r->refs[c] += v;
			total += v;
			if (c != home_ctr && v > maxremote)
				maxremote = v;
		}
		homec = (uint64_t)e->refcnt[home_ctr] + hw[i].refcnt[home_ctr];
		r->total += total;
		r->local += homec;
		if (maxremote > homec + info.rcb_diff_threshold)
			r->candidates++;
		keep_hot(s, e, &hw[i], vaddr, total, ri);
	}
}

static struct rcb_page_counters *qext, *qhw;

/* Query [a, b) of tid into the regions from ri on. */
static int query_run(struct snapshot *s, int ri, pid_t tid, uint64_t a,
		     uint64_t b)
{
	uint64_t gran = info.rcb_granularity;

	a -= a % gran;
	while (a < b) {
		uint64_t len = b - a;
		size_t n1, n2;

		if (len > (uint64_t)QUERY_CHUNK * gran)
			len = (uint64_t)QUERY_CHUNK * gran;
		if (refcnt_node_range_query(qnode, tid, a, len, RCB_RANGE_EXTENDED,
					    qext, QUERY_CHUNK, &n1) ||
		    refcnt_node_range_query(qnode, tid, a, len, 0, qhw,
					    QUERY_CHUNK, &n2))
			return -1;
		if (n2 < n1)
			n1 = n2;
		account(s, ri, a, qext, qhw, n1);
		a += len;
	}
	return 0;
}

/*
 * Query region ri, only where /proc/TID/pagemap says pages are present
 * (a reservation of terabytes costs nothing then).
 */
static int query_region(struct snapshot *s, int ri, pid_t tid, int pagemap)
{
	const uint64_t psz = info.rcb_base_page_size ? info.rcb_base_page_size :
			     (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t gran = info.rcb_granularity, step = gran > psz ? gran : psz;
	struct region *r = &s->r[ri];
	uint64_t pm[512], a, run_a = 0, run_b = 0;
	int in_run = 0;

	r->pages = (r->end - r->start + gran - 1) / gran;
	if (pagemap < 0)
		return query_run(s, ri, tid, r->start, r->end);
	for (a = r->start - r->start % psz; a < r->end;) {
		size_t n = (r->end - a + psz - 1) / psz, i;
		ssize_t got;

		if (n > 512)
			n = 512;
		got = pread(pagemap, pm, n * 8, (off_t)(a / psz * 8));
		if (got <= 0)
			return query_run(s, ri, tid, a > r->start ? a : r->start,
					 r->end);
		n = got / 8;
		for (i = 0; i < n; i++, a += psz) {
			int present = (pm[i] >> 63) & 1;

			if (present && !in_run) {
				run_a = a - a % step;
				if (run_a < r->start)
					run_a = r->start;
				in_run = 1;
			}
			if (present)
				run_b = a + psz;
			/* Close a run at a gap of more than 16 base pages. */
			if (!present && in_run && a >= run_b + 16 * psz) {
				if (query_run(s, ri, tid, run_a,
					      run_b < r->end ? run_b : r->end))
					return -1;
				in_run = 0;
			}
		}
	}
	if (in_run && query_run(s, ri, tid, run_a, run_b < r->end ? run_b : r->end))
		return -1;
	return 0;
}

static const char *vma_kind(const char *path, int *skip)
{
	*skip = 0;
	if (!*path)
		return "anon";
	if (!strcmp(path, "[heap]"))
		return "heap";
	if (!strncmp(path, "[stack", 6))
		return "stack";
	if (!strncmp(path, "[anon", 5))
		return "anon";
	if (!strcmp(path, "[vsyscall]") || !strcmp(path, "[vvar]")) {
		*skip = 1;
		return "special";
	}
	if (path[0] == '[')
		return "special";
	return "file";
}

/* Read the maps and counters of tid's process. NULL if it cannot. */
static struct snapshot *take_snapshot(pid_t tid)
{
	struct snapshot *s = xcalloc(1, sizeof(*s));
	char path[64], line[4096 + 256];
	int cap = 0, pagemap, i, failed = 0, err = 0;
	FILE *f;

	s->tid = tid;
	s->hot = xcalloc(opt.top > 0 ? opt.top : 1, sizeof(*s->hot));
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)tid);
	f = fopen(path, "r");
	if (!f) {
		rt_err("%s: %s: cannot read the memory map at exit", path,
		       strerror(errno));
		free_snapshot(s);
		return NULL;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end;
		char perms[8] = "", mapping[4096 + 64] = "";
		const char *kind;
		int skip, pos = 0;

		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %n", &start, &end,
			   perms, &pos) < 3)
			continue;
		if (pos > 0) {
			size_t l;

			snprintf(mapping, sizeof(mapping), "%s", line + pos);
			l = strlen(mapping);
			while (l && (mapping[l - 1] == '\n' || mapping[l - 1] == ' '))
				mapping[--l] = '\0';
		}
		kind = vma_kind(mapping, &skip);
		if (skip)
			continue;
		/* Guard pages and PROT_NONE reservations hold nothing. */
		if (!strncmp(perms, "---", 3))
			continue;
		add_vma(s, &cap, start, end, *mapping ? mapping : "[anon]", kind,
			perms);
	}
	fclose(f);
	if (!s->nr) {
		rt_err("%s: no memory regions at exit", path);
		free_snapshot(s);
		return NULL;
	}

	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)tid);
	pagemap = open(path, O_RDONLY | O_CLOEXEC);
	for (i = 0; i < s->nr; i++) {
		if (query_region(s, i, tid, pagemap)) {
			failed++;
			err = errno;
			if (err == EPERM || err == ESRCH || err == ENOTTY)
				break;
		}
		s->denied_pages += s->r[i].denied;
	}
	if (pagemap >= 0)
		close(pagemap);
	if (failed) {
		if (err == EPERM)
			rt_err("RCB_RANGE_QUERY of pid %d: operation not permitted: reading another process's counters needs CAP_SYS_PTRACE (run as root)",
			       (int)tid);
		else if (err == ESRCH)
			rt_err("RCB_RANGE_QUERY of pid %d: its memory was already gone (killed by SIGKILL?)",
			       (int)tid);
		else
			rt_err("RCB_RANGE_QUERY of pid %d failed for %d region%s: %s",
			       (int)tid, failed, failed == 1 ? "" : "s",
			       strerror(err));
		if (err == EPERM || err == ESRCH || err == ENOTTY) {
			free_snapshot(s);
			return NULL;
		}
	}
	s->queried_ok = 1;
	return s;
}

/* ------------------------------------------------------------ advice */

static void nodes_str(const int *nids, int n, char *buf, size_t size)
{
	size_t len = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < n && len < size; i++)
		len += snprintf(buf + len, size - len, "%s%d", i ? "," : "", nids[i]);
}

/* Majority home node (nid) of a region's counted pages, -1 if none. */
static int main_home(const struct region *r, uint64_t *pages)
{
	uint64_t best = 0;
	int i, nid = -1;

	for (i = 0; i < ctr.nr_cnodes; i++)
		if (r->home_pages[i] > best) {
			best = r->home_pages[i];
			nid = ctr.cnode_nid[i];
		}
	if (pages)
		*pages = best;
	return nid;
}

static void home_str(const struct region *r, char *buf, size_t size)
{
	size_t len = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < ctr.nr_cnodes && len < size; i++)
		if (r->home_pages[i])
			len += snprintf(buf + len, size - len, "%s%d:%.0f%%",
					len ? " " : "", ctr.cnode_nid[i],
					pct(r->home_pages[i], r->counted));
}

static void advise(struct region *r)
{
	struct advice *a = &r->adv;
	uint64_t best_refs = 0, on_target, home_pages;
	int best = -1, c, target, user, home;
	char nbuf[256];

	memset(a, 0, sizeof(*a));
	a->action = "none";
	a->node = -1;
	if (!r->counted) {
		snprintf(a->reason, sizeof(a->reason), "%s",
			 r->denied ? "its pages are not visible to this user (run as root)" :
			 "no pages present at exit");
		return;
	}
	if (r->total < (uint64_t)opt.min_refs) {
		snprintf(a->reason, sizeof(a->reason),
			 "too few references (%llu < %ld) to judge",
			 (unsigned long long)r->total, opt.min_refs);
		return;
	}
	for (c = 0; c < ctr.nr; c++)
		if (r->refs[c] > best_refs) {
			best_refs = r->refs[c];
			best = c;
		}
	home = main_home(r, &home_pages);
	user = counter_nid(best);
	target = nearest_mem_nid(user);

	if ((double)best_refs >= opt.min_share * (double)r->total) {
		int tc = cnode_of_nid(target);

		on_target = tc >= 0 ? r->home_pages[tc] : 0;
		/* Differential threshold: remote beyond local by more than it. */
		if (2 * on_target < r->counted &&
		    best_refs > r->local + info.rcb_diff_threshold && target >= 0) {
			a->action = "move";
			a->node = target;
			a->nodes[a->nr_nodes++] = target;
			snprintf(a->reason, sizeof(a->reason),
				 "%.0f%% of its %llu references come from node %s, but %.0f%% of its pages are on node %d",
				 pct(best_refs, r->total),
				 (unsigned long long)r->total, ctr.label[best],
				 pct(home_pages, r->counted), home);
			if (target != user)
				snprintf(a->reason + strlen(a->reason),
					 sizeof(a->reason) - strlen(a->reason),
					 "; node %d has no memory, node %d is the nearest with memory",
					 user, target);
			snprintf(a->hint, sizeof(a->hint),
				 "mbind(0x%llx, %llu, MPOL_BIND, {%d}, MPOL_MF_MOVE) or numa_tonode_memory() on it; for the whole program: numactl --membind=%d",
				 (unsigned long long)r->start,
				 (unsigned long long)(r->end - r->start), target,
				 target);
			return;
		}
		if (target != user)
			snprintf(a->reason, sizeof(a->reason),
				 "%.0f%% of its references come from node %s, which has no memory; its pages are on the nearest node with memory (%d)",
				 pct(best_refs, r->total), ctr.label[best], target);
		else
			snprintf(a->reason, sizeof(a->reason),
				 "well placed: %.0f%% of its references come from node %s, where %.0f%% of its pages are",
				 pct(best_refs, r->total), ctr.label[best],
				 pct(on_target, r->counted));
		return;
	}

	/* Shared by several nodes: interleave if its pages sit on one. */
	for (c = 0; c < ctr.nr; c++) {
		int nid;

		if ((double)r->refs[c] < 0.15 * (double)r->total)
			continue;
		nid = nearest_mem_nid(counter_nid(c));
		if (nid >= 0 && a->nr_nodes < RCB_MAX_COUNTERS) {
			int k, dup = 0;

			for (k = 0; k < a->nr_nodes; k++)
				dup |= a->nodes[k] == nid;
			if (!dup)
				a->nodes[a->nr_nodes++] = nid;
		}
	}
	nodes_str(a->nodes, a->nr_nodes, nbuf, sizeof(nbuf));
	if (a->nr_nodes >= 2 && 4 * home_pages >= 3 * r->counted &&
	    2 * r->local < r->total) {
		a->action = "interleave";
		snprintf(a->reason, sizeof(a->reason),
			 "shared: nodes %s each make 15%% or more of its %llu references, but %.0f%% of its pages are on node %d (local share %.0f%%)",
			 nbuf, (unsigned long long)r->total,
			 pct(home_pages, r->counted), home,
			 pct(r->local, r->total));
		snprintf(a->hint, sizeof(a->hint),
			 "mbind(0x%llx, %llu, MPOL_INTERLEAVE, {%s}, MPOL_MF_MOVE) or numa_interleave_memory() on it; for the whole program: numactl --interleave=%s",
			 (unsigned long long)r->start,
			 (unsigned long long)(r->end - r->start), nbuf, nbuf);
		return;
	}
	a->nr_nodes = 0;
	snprintf(a->reason, sizeof(a->reason),
		 "shared by several nodes, pages spread (local share %.0f%%)",
		 pct(r->local, r->total));
}

/* ------------------------------------------------------------ output */

static int cmp_region_refs(const void *a, const void *b)
{
	const struct region *x = *(struct region *const *)a;
	const struct region *y = *(struct region *const *)b;

	return (x->total < y->total) - (x->total > y->total);
}

static const char *region_of(const struct snapshot *s, int i)
{
	return i >= 0 && i < s->nr ? s->r[i].name : "?";
}

/* name cut to width characters, keeping its end ("~ols/demo-workload"). */
static const char *short_name(const char *name, int width, char *buf,
			      size_t size)
{
	size_t n = strlen(name);

	if ((int)n <= width || width < 4)
		return name;
	snprintf(buf, size, "~%s", name + n - (width - 1));
	return buf;
}

static int shown(const struct region *r)
{
	return opt.all || r->total || r->labelled;
}

static void status_str(int st, char *buf, size_t size)
{
	if (WIFEXITED(st))
		snprintf(buf, size, "exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, size, "was killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(buf, size, "ended");
}

static void text_proc(FILE *f, const struct proc *p)
{
	const struct snapshot *s = p->snap;
	struct region **order;
	char buf[256], h[16];
	uint64_t total = 0, local = 0, present = 0, hidden = 0;
	int i, c, n, many = ctr.nr > 8;

	status_str(p->status, buf, sizeof(buf));
	fprintf(f, "\n== pid %d: %s\n   %s", (int)p->tgid, p->cmd, buf);
	if (p->is_main)
		fprintf(f, " after %.2f s",
			(t_end.tv_sec - t_start.tv_sec) +
			(t_end.tv_nsec - t_start.tv_nsec) / 1e9);
	fprintf(f, "\n");
	if (!s) {
		fprintf(f, "   no counters: its memory could not be read at exit (see the messages above)\n");
		return;
	}
	order = xcalloc(s->nr, sizeof(*order));
	for (i = n = 0; i < s->nr; i++) {
		total += s->r[i].total;
		local += s->r[i].local;
		present += s->r[i].present;
		if (shown(&s->r[i]))
			order[n++] = &s->r[i];
		else
			hidden++;
	}
	fprintf(f, "   %llu references to %llu present hardware pages of %u bytes; local share %.1f%%\n",
		(unsigned long long)total, (unsigned long long)present,
		info.rcb_granularity, pct(local, total));
	if (s->denied_pages)
		fprintf(f, "   %llu pages of file or shared mappings were not visible: run as root to count them\n",
			(unsigned long long)s->denied_pages);
	qsort(order, n, sizeof(*order), cmp_region_refs);

	fprintf(f, "\n   %-24s %-14s %7s %7s %9s", "region", "start", "size",
		"present", "refs");
	if (!many)
		for (c = 0; c < ctr.nr; c++)
			fprintf(f, " %7s", (snprintf(buf, sizeof(buf), "n%s", ctr.label[c]), buf));
	else
		fprintf(f, " %-24s", "top accessing nodes");
	fprintf(f, " %6s  %-12s %s\n", "local", "home", "advice");
	for (i = 0; i < n; i++) {
		const struct region *r = order[i];
		char home[128], nbuf[64];

		fprintf(f, "   %-24.24s 0x%-12llx %7s %7llu %9llu",
			short_name(r->name, 24, nbuf, sizeof(nbuf)),
			(unsigned long long)r->start,
			rt_human(r->end - r->start, h, sizeof(h)),
			(unsigned long long)r->present,
			(unsigned long long)r->total);
		if (!many) {
			for (c = 0; c < ctr.nr; c++)
				fprintf(f, " %7llu", (unsigned long long)r->refs[c]);
		} else {
			int k, used[RCB_MAX_COUNTERS] = { 0 };
			size_t len = 0;

			buf[0] = '\0';
			for (k = 0; k < 3; k++) {
				int b = -1;

				for (c = 0; c < ctr.nr; c++)
					if (!used[c] && r->refs[c] &&
					    (b < 0 || r->refs[c] > r->refs[b]))
						b = c;
				if (b < 0)
					break;
				used[b] = 1;
				len += snprintf(buf + len, sizeof(buf) - len,
						"%s%s:%.0f%%", k ? " " : "",
						ctr.label[b], pct(r->refs[b], r->total));
			}
			fprintf(f, " %-24s", buf);
		}
		home_str(r, home, sizeof(home));
		fprintf(f, " %5.0f%%  %-12s %s", pct(r->local, r->total),
			*home ? home : "-", r->adv.action);
		if (!strcmp(r->adv.action, "move"))
			fprintf(f, " to node %d", r->adv.node);
		else if (!strcmp(r->adv.action, "interleave")) {
			nodes_str(r->adv.nodes, r->adv.nr_nodes, buf, sizeof(buf));
			fprintf(f, " over %s", buf);
		}
		fprintf(f, "\n");
	}
	if (hidden)
		fprintf(f, "   (%llu more regions without references; --all shows them)\n",
			(unsigned long long)hidden);

	if (s->nr_hot) {
		fprintf(f, "\n   hottest pages:\n   %-18s %-24s %5s %9s  %s\n",
			"vaddr", "region", "home", "refs", "by node");
		for (i = 0; i < s->nr_hot; i++) {
			const struct hot *ht = &s->hot[i];
			char nbuf[64];
			size_t len = 0;

			buf[0] = '\0';
			for (c = 0; c < ctr.nr && len < sizeof(buf); c++)
				if (ht->refs[c])
					len += snprintf(buf + len, sizeof(buf) - len,
							"%s%s:%u", len ? " " : "",
							ctr.label[c], ht->refs[c]);
			fprintf(f, "   0x%-16llx %-24.24s %5d %9llu  %s",
				(unsigned long long)ht->vaddr,
				short_name(region_of(s, ht->region), 24, nbuf,
					   sizeof(nbuf)),
				ht->home >= 0 && ht->home < ctr.nr_cnodes ?
				ctr.cnode_nid[ht->home] : -1,
				(unsigned long long)ht->total, buf);
			if (ht->paddr)
				fprintf(f, "  (paddr 0x%llx)", (unsigned long long)ht->paddr);
			fprintf(f, "\n");
		}
	}

	fprintf(f, "\n   placement advice:\n");
	c = 0;
	for (i = 0; i < n; i++) {
		const struct region *r = order[i];

		if (!strcmp(r->adv.action, "none"))
			continue;
		c++;
		fprintf(f, "   * %s [0x%llx-0x%llx, %s]: %s %s.\n", r->name,
			(unsigned long long)r->start, (unsigned long long)r->end,
			r->mapping, r->adv.reason,
			!strcmp(r->adv.action, "move") ?
			(snprintf(buf, sizeof(buf), "-> move it to node %d", r->adv.node), buf) :
			"-> interleave it");
		if (r->candidates)
			fprintf(f, "     %llu of its pages have a remote counter above the home counter by more than the differential threshold (%u).\n",
				(unsigned long long)r->candidates,
				info.rcb_diff_threshold);
		fprintf(f, "     how: %s\n", r->adv.hint);
	}
	if (!c)
		fprintf(f, "   none: every region with %ld or more references is used mostly where it is placed (or shared and spread).\n",
			opt.min_refs);
	/* Mostly remote, yet nothing to do: say why. */
	for (i = 0, c = 0; i < n; i++) {
		const struct region *r = order[i];

		if (strcmp(r->adv.action, "none") || r->total < (uint64_t)opt.min_refs ||
		    2 * r->local >= r->total)
			continue;
		if (!c++)
			fprintf(f, "\n   notes (mostly remote references, no move advised):\n");
		fprintf(f, "   - %s: %s.\n", r->name, r->adv.reason);
	}
	free(order);
}

static void json_region(FILE *f, const struct region *r)
{
	char buf[64];
	int c, i, first;

	fprintf(f, "{\"name\": ");
	rt_json_str(f, r->name);
	fprintf(f, ", \"label\": ");
	if (r->labelled)
		rt_json_str(f, r->name);
	else
		fprintf(f, "null");
	fprintf(f, ", \"mapping\": ");
	rt_json_str(f, r->mapping);
	fprintf(f, ", \"kind\": \"%s\", \"perms\": \"%s\", \"start\": %llu, \"end\": %llu, \"range\": \"0x%llx-0x%llx\", \"size\": %llu, \"pages\": %llu, \"pages_present\": %llu, \"pages_counted\": %llu, \"pages_denied\": %llu, \"pages_uncounted\": %llu, \"refs\": %llu, \"refs_by_node\": {",
		r->kind, r->perms, (unsigned long long)r->start,
		(unsigned long long)r->end, (unsigned long long)r->start,
		(unsigned long long)r->end,
		(unsigned long long)(r->end - r->start),
		(unsigned long long)r->pages, (unsigned long long)r->present,
		(unsigned long long)r->counted, (unsigned long long)r->denied,
		(unsigned long long)r->uncounted, (unsigned long long)r->total);
	for (c = first = 0; c < ctr.nr; c++) {
		if (!r->refs[c])
			continue;
		fprintf(f, "%s\"%s\": %llu", first++ ? ", " : "", ctr.label[c],
			(unsigned long long)r->refs[c]);
	}
	fprintf(f, "}, \"local_refs\": %llu, \"local_share\": ",
		(unsigned long long)r->local);
	if (r->total)
		fprintf(f, "%.4f", (double)r->local / (double)r->total);
	else
		fprintf(f, "null");
	fprintf(f, ", \"home_nodes\": {");
	for (i = first = 0; i < ctr.nr_cnodes; i++)
		if (r->home_pages[i])
			fprintf(f, "%s\"%d\": %llu", first++ ? ", " : "",
				ctr.cnode_nid[i], (unsigned long long)r->home_pages[i]);
	fprintf(f, "}, \"migration_candidates\": %llu, \"advice\": {\"action\": \"%s\", \"node\": ",
		(unsigned long long)r->candidates, r->adv.action);
	if (r->adv.node >= 0)
		fprintf(f, "%d", r->adv.node);
	else
		fprintf(f, "null");
	fprintf(f, ", \"nodes\": [");
	for (i = 0; i < r->adv.nr_nodes; i++)
		fprintf(f, "%s%d", i ? ", " : "", r->adv.nodes[i]);
	fprintf(f, "], \"reason\": ");
	rt_json_str(f, r->adv.reason);
	fprintf(f, ", \"hint\": ");
	if (r->adv.hint[0])
		rt_json_str(f, r->adv.hint);
	else
		fprintf(f, "null");
	(void)buf;
	fprintf(f, "}}");
}

static void json_regions(FILE *f, const struct snapshot *s, const char *indent)
{
	int i, first = 0;

	fprintf(f, "[");
	for (i = 0; s && i < s->nr; i++) {
		if (!shown(&s->r[i]))
			continue;
		fprintf(f, "%s\n%s  ", first++ ? "," : "", indent);
		json_region(f, &s->r[i]);
	}
	fprintf(f, "%s]", first ? "\n" : "");
	(void)indent;
}

static void json_status(FILE *f, int st)
{
	if (WIFEXITED(st))
		fprintf(f, "{\"exited\": %d}", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		fprintf(f, "{\"signal\": %d}", WTERMSIG(st));
	else
		fprintf(f, "null");
}

static void json_hot(FILE *f, const struct snapshot *s)
{
	int i, c, first;

	fprintf(f, "[");
	for (i = 0; s && i < s->nr_hot; i++) {
		const struct hot *h = &s->hot[i];

		fprintf(f, "%s\n    {\"vaddr\": %llu, \"region\": ", i ? "," : "",
			(unsigned long long)h->vaddr);
		rt_json_str(f, region_of(s, h->region));
		fprintf(f, ", \"home_node\": %d, \"paddr\": %llu, \"page_size\": %llu, \"refs\": %llu, \"refs_by_node\": {",
			h->home >= 0 && h->home < ctr.nr_cnodes ?
			ctr.cnode_nid[h->home] : -1,
			(unsigned long long)h->paddr,
			(unsigned long long)h->page_size,
			(unsigned long long)h->total);
		for (c = first = 0; c < ctr.nr; c++)
			if (h->refs[c])
				fprintf(f, "%s\"%s\": %u", first++ ? ", " : "",
					ctr.label[c], h->refs[c]);
		fprintf(f, "}}");
	}
	fprintf(f, "%s]", s && s->nr_hot ? "\n  " : "");
}

static void report_json(FILE *f, char **argv, int exit_code, long period,
			long old_period)
{
	struct proc *p, *m = NULL;
	int i, first;

	for (p = procs; p; p = p->next)
		if (p->is_main)
			m = p;
	fprintf(f, "{\n  \"command\": [");
	for (i = 0; argv[i]; i++) {
		fprintf(f, "%s", i ? ", " : "");
		rt_json_str(f, argv[i]);
	}
	fprintf(f, "],\n  \"pid\": %d,\n  \"status\": ", (int)main_pid);
	json_status(f, m ? m->status : 0);
	fprintf(f, ",\n  \"exit_code\": %d,\n  \"seconds\": %.3f,\n", exit_code,
		(t_end.tv_sec - t_start.tv_sec) + (t_end.tv_nsec - t_start.tv_nsec) / 1e9);
	fprintf(f, "  \"counters\": {\"source\": \"extended+hardware\", \"granularity\": %u, \"nodes_per_counter\": %d, \"diff_threshold\": %u, \"labels\": [",
		info.rcb_granularity, ctr.nodes_per_counter, info.rcb_diff_threshold);
	for (i = 0; i < ctr.nr; i++)
		fprintf(f, "%s\"%s\"", i ? ", " : "", ctr.label[i]);
	fprintf(f, "]},\n  \"feeds\": {\"fault_period\": %ld, \"fault_period_before\": %ld, \"hinting\": %s},\n",
		period, old_period, opt.hinting ? "true" : "false");
	fprintf(f, "  \"snapshot\": %s,\n", m && m->snap ? "true" : "false");
	fprintf(f, "  \"regions\": ");
	json_regions(f, m ? m->snap : NULL, "  ");
	fprintf(f, ",\n  \"hottest_pages\": ");
	json_hot(f, m ? m->snap : NULL);
	fprintf(f, ",\n  \"processes\": [");
	for (p = procs, first = 0; p; p = p->next) {
		fprintf(f, "%s\n   {\"pid\": %d, \"command\": ", first++ ? "," : "",
			(int)p->tgid);
		rt_json_str(f, p->cmd);
		fprintf(f, ", \"main\": %s, \"status\": ", p->is_main ? "true" : "false");
		json_status(f, p->status);
		fprintf(f, ", \"snapshot\": %s, \"regions\": ", p->snap ? "true" : "false");
		json_regions(f, p->snap, "    ");
		fprintf(f, "}");
	}
	fprintf(f, "\n  ]\n}\n");
}

static void report_heatmap(const struct proc *m)
{
	const struct snapshot *s = m ? m->snap : NULL;
	struct rt_heatmap hm;
	struct region **order;
	char title[600], note[200];
	int i, c, n = 0, maxrows;

	if (!s) {
		rt_err("--heatmap %s: no counters were read, no heatmap", opt.heatmap);
		return;
	}
	order = xcalloc(s->nr, sizeof(*order));
	for (i = 0; i < s->nr; i++)
		if (s->r[i].total || s->r[i].labelled)
			order[n++] = &s->r[i];
	qsort(order, n, sizeof(*order), cmp_region_refs);
	maxrows = (opt.height - 80) / 12;
	if (n > maxrows)
		n = maxrows > 1 ? maxrows : 1;
	if (!n) {
		rt_err("--heatmap %s: no region has references", opt.heatmap);
		free(order);
		return;
	}
	if (rt_heatmap_alloc(&hm, &ctr, n)) {
		rt_err("out of memory");
		exit(RUN_EXIT_FAIL);
	}
	for (c = 0; c < ctr.nr_cnodes; c++) {
		hm.group_name[c] = xcalloc(1, 24);
		snprintf(hm.group_name[c], 24, "on node %d", ctr.cnode_nid[c]);
	}
	for (i = 0; i < n; i++) {
		const struct region *r = order[i];
		double *v = hm.v + (size_t)i * ctr.nr;
		char h[16];
		int home = main_home(r, NULL), hc = cnode_of_nid(home);

		hm.row_label[i] = xcalloc(1, 64);
		snprintf(hm.row_label[i], 64, "%.28s %s", r->name,
			 rt_human(r->end - r->start, h, sizeof(h)));
		hm.row_group[i] = hc;
		for (c = 0; c < ctr.nr; c++)
			v[c] = (double)r->refs[c];
		if (hc >= 0)
			hm.mark[(size_t)i * ctr.nr +
				hc / ctr.nodes_per_counter] = 1;
	}
	snprintf(title, sizeof(title), "refcnt-run: references by region and accessing node: %.400s (pid %d)",
		 m->cmd, (int)m->tgid);
	snprintf(note, sizeof(note), "colour: references (log scale); outlined cell and left band: the node holding most of the region's pages");
	hm.title = title;
	hm.ylabel = "region (by references)";
	hm.note = note;
	if (!rt_heatmap_write(&hm, opt.heatmap, opt.width, opt.height))
		say("heatmap written to %s (%dx%d)", opt.heatmap, opt.width,
		    opt.height);
	rt_heatmap_free(&hm);
	free(order);
}

/* ------------------------------------------------------------ tracing */

static struct task *find_task(pid_t tid)
{
	struct task *t;

	for (t = tasks; t; t = t->next)
		if (t->tid == tid)
			return t;
	return NULL;
}

static struct proc *find_proc(pid_t tgid)
{
	struct proc *p;

	for (p = procs; p; p = p->next)
		if (p->tgid == tgid)
			return p;
	return NULL;
}

static void proc_cmdline(pid_t pid, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, size - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		snprintf(buf, size, "?");
		return;
	}
	buf[n] = '\0';
	for (i = 0; i < n - 1; i++)
		if (!buf[i])
			buf[i] = ' ';
}

static struct proc *add_proc(pid_t tgid, int is_main)
{
	struct proc *p = xcalloc(1, sizeof(*p)), **pp;

	p->tgid = tgid;
	p->is_main = is_main;
	for (pp = &procs; *pp; pp = &(*pp)->next)
		;
	*pp = p;
	return p;
}

static struct task *add_task(pid_t tid, pid_t tgid)
{
	struct task *t = xcalloc(1, sizeof(*t));

	t->tid = tid;
	t->tgid = tgid;
	t->next = tasks;
	tasks = t;
	return t;
}

static void del_task(pid_t tid)
{
	struct task **tp, *t;

	for (tp = &tasks; *tp; tp = &(*tp)->next)
		if ((*tp)->tid == tid) {
			t = *tp;
			*tp = t->next;
			free(t);
			return;
		}
}

static pid_t tgid_of(pid_t tid)
{
	char path[64], line[256];
	pid_t tgid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

/* PF_EXITING in /proc/TGID/task/TID/stat's flags: in do_exit(). */
#define PF_EXITING_FLAG	0x00000004

static int task_exiting(pid_t tgid, pid_t tid)
{
	char path[96], buf[1024], *p;
	unsigned int flags = 0;
	struct task *t = find_task(tid);
	FILE *f;

	if (t && t->exiting)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)tgid, (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 1;	/* gone */
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	p = p ? strrchr(buf, ')') : NULL;
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %u", &flags) != 1)
		return 0;
	return !!(flags & PF_EXITING_FLAG);
}

/*
 * Does tid's exit end its process? Not when another thread lives on: one
 * that is neither dead, nor exiting (stopped at its own exit, or in
 * do_exit()), nor has a SIGKILL pending (exit_group and fatal signals give
 * every other thread one). That is one thread leaving, pthread_exit().
 */
static int exit_ends_process(pid_t tid, pid_t tgid)
{
	char path[96], line[256];
	struct dirent *de;
	int ends = 1;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)tid);
	d = opendir(path);
	if (!d)
		return 1;
	while ((de = readdir(d)) && ends) {
		pid_t other = atoi(de->d_name);
		unsigned long long pnd = 0;
		char state = '?';
		FILE *f;

		if (other <= 0 || other == tid)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status",
			 (int)tgid, (int)other);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			sscanf(line, "State: %c", &state);
			sscanf(line, "SigPnd: %llx", &pnd);
		}
		fclose(f);
		if (state == 'Z' || state == 'X' || (pnd & (1ULL << (SIGKILL - 1))) ||
		    task_exiting(tgid, other))
			continue;
		ends = 0;
	}
	closedir(d);
	return ends;
}

static void on_exit_stop(pid_t tid)
{
	struct task *t = find_task(tid);
	pid_t tgid = t ? t->tgid : tgid_of(tid);
	struct proc *p = find_proc(tgid);
	struct snapshot *s;

	if (t)
		t->exiting = 1;
	if (!p || !exit_ends_process(tid, tgid))
		return;
	proc_cmdline(tid, p->cmd, sizeof(p->cmd));
	load_labels();	/* written by the command while it ran */
	s = take_snapshot(tid);
	if (s) {
		free_snapshot(p->snap);
		p->snap = s;
	}
}

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static long ptrace_options(void)
{
	long o = PTRACE_O_TRACEEXIT | PTRACE_O_TRACECLONE |
		 PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL;

	if (opt.follow)
		o |= PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK;
	return o;
}

/* Run the ptrace loop until every traced task is gone. */
static void trace_loop(void)
{
	for (;;) {
		unsigned long msg;
		struct task *t;
		int st, ev, sig;
		pid_t tid;

		tid = waitpid(-1, &st, __WALL);
		if (tid < 0) {
			if (errno == EINTR) {
				if (got_signal)
					kill(main_pid, got_signal);
				got_signal = 0;
				continue;
			}
			break;	/* ECHILD: all gone */
		}
		t = find_task(tid);
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			struct proc *p = t ? find_proc(t->tgid) : NULL;

			if (p && tid == p->tgid) {
				p->exited = 1;
				p->status = st;
				if (p->is_main)
					clock_gettime(CLOCK_MONOTONIC, &t_end);
			}
			del_task(tid);
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		ev = (unsigned int)st >> 16;
		sig = WSTOPSIG(st);
		if (!t) {
			/* A new task whose first stop came before its parent's event. */
			pid_t tgid = tgid_of(tid);

			t = add_task(tid, tgid);
			if (tgid != tid || find_proc(tgid)) {
				if (!find_proc(tgid))
					add_proc(tgid, 0);
			} else if (opt.follow) {
				add_proc(tgid, 0);
			}
		}
		switch (ev) {
		case PTRACE_EVENT_EXIT:
			on_exit_stop(tid);
			ptrace(PTRACE_CONT, tid, 0, 0);
			break;
		case PTRACE_EVENT_CLONE:
		case PTRACE_EVENT_FORK:
		case PTRACE_EVENT_VFORK:
			if (!ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) &&
			    !find_task((pid_t)msg)) {
				pid_t child = (pid_t)msg;

				if (ev == PTRACE_EVENT_CLONE && tgid_of(child) == t->tgid) {
					add_task(child, t->tgid);
				} else {
					add_task(child, child);
					if (!find_proc(child))
						add_proc(child, 0);
				}
			}
			ptrace(PTRACE_CONT, tid, 0, 0);
			break;
		case PTRACE_EVENT_EXEC:
			/* A thread other than the leader exec'ed: it is the leader now. */
			if (!ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) &&
			    (pid_t)msg != tid)
				del_task((pid_t)msg);
			ptrace(PTRACE_CONT, tid, 0, 0);
			break;
		case PTRACE_EVENT_STOP:
			if (!t->seen_stop) {
				/* The first stop of an auto-attached task. */
				t->seen_stop = 1;
				if (!find_proc(t->tgid)) {
					ptrace(PTRACE_DETACH, tid, 0, 0);
					del_task(tid);
					break;
				}
				ptrace(PTRACE_CONT, tid, 0, 0);
			} else if (sig == SIGSTOP || sig == SIGTSTP ||
				   sig == SIGTTIN || sig == SIGTTOU) {
				ptrace(PTRACE_LISTEN, tid, 0, 0);	/* group-stop */
			} else {
				ptrace(PTRACE_CONT, tid, 0, 0);
			}
			break;
		default:
			t->seen_stop = 1;
			/* Signal-delivery-stop: deliver it. */
			ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig);
			break;
		}
	}
}

/* ------------------------------------------------------------ child */

struct child_err {
	int stage;	/* 1: NUMA placement, 2: exec */
	int err;
};

static int set_policy_child(void)
{
	if (opt.cpunodes && numa_run_on_node_mask(opt.cpunodes))
		return -1;
	if (opt.hinting) {
		struct bitmask *m = opt.membind ? opt.membind : numa_get_mems_allowed();

		if (set_mempolicy(MPOL_BIND | MPOL_F_NUMA_BALANCING, m->maskp,
				  m->size + 1))
			return -1;
		return 0;
	}
	if (opt.membind) {
		errno = 0;
		numa_set_membind(opt.membind);
		if (errno == EINVAL)
			return -1;
	}
	if (opt.interleave)
		numa_set_interleave_mask(opt.interleave);
	if (opt.preferred >= 0)
		numa_set_preferred(opt.preferred);
	return 0;
}

static void child(char **argv, int sync_fd, int err_fd)
{
	struct child_err ce = { 0 };
	char c;

	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	/* Wait until the parent has seized us. */
	if (read(sync_fd, &c, 1) != 1)
		_exit(RUN_EXIT_FAIL);
	close(sync_fd);
	if (set_policy_child()) {
		ce.stage = 1;
		ce.err = errno;
		if (write(err_fd, &ce, sizeof(ce)) < 0)
			_exit(RUN_EXIT_FAIL);
		_exit(RUN_EXIT_FAIL);
	}
	execvp(argv[0], argv);
	ce.stage = 2;
	ce.err = errno;
	if (write(err_fd, &ce, sizeof(ce)) < 0)
		_exit(RUN_EXIT_FAIL);
	_exit(errno == ENOENT ? RUN_EXIT_NOTFOUND : RUN_EXIT_NOEXEC);
}

/* ------------------------------------------------------------ setup */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: refcnt-run [OPTIONS] [--] COMMAND [ARGS...]\n"
		"\n"
		"Run COMMAND, sample its memory references with refcnt while it runs,\n"
		"and when it exits report per memory region (heap, stack, anonymous,\n"
		"each file mapping) the references by accessing node, the local share,\n"
		"the hottest pages and placement advice. The report goes to stderr\n"
		"(or --output FILE); COMMAND keeps its stdout.\n"
		"\n"
		"Placement (as numactl; NODES like 0,2-3 or all):\n"
		"  -N, --cpunodebind=NODES   run on the CPUs of NODES\n"
		"  -m, --membind=NODES       allocate memory only on NODES\n"
		"  -p, --preferred=NODE      prefer memory on NODE\n"
		"  -i, --interleave=NODES    interleave memory over NODES\n"
		"Sampling:\n"
		"      --period=N            page-fault feed period for the run (default:\n"
		"                            1 if the feed is off; 0: leave it alone); the\n"
		"                            previous value is restored at the end\n"
		"      --hinting             NUMA-balancing hinting faults while it runs\n"
		"                            (numa_balancing=1 for the run, COMMAND under\n"
		"                            MPOL_BIND|MPOL_F_NUMA_BALANCING over the\n"
		"                            --membind nodes or all; Linux 5.12+). Pages\n"
		"                            may still move between the bound nodes:\n"
		"                            bind one node for none\n"
		"      --reset               zero every counter first (root; all users')\n"
		"Report:\n"
		"  -f, --follow-children     trace forked children too, one report each\n"
		"  -l, --labels=FILE         name address ranges: lines \"NAME START-END\"\n"
		"                            or \"array NAME START-END ...\", read at exit\n"
		"  -j, --json                JSON instead of text\n"
		"  -o, --output=FILE         write the report to FILE\n"
		"  -t, --top=N               hottest pages to list (default 10)\n"
		"  -a, --all                 also regions without references\n"
		"      --min-share=PCT       advise a move when one node makes PCT%% of a\n"
		"                            region's references (default 60)\n"
		"      --min-refs=N          no advice below N references (default 16)\n"
		"      --heatmap=FILE        regions x accessing node picture (.svg/.png)\n"
		"      --width=W --height=H  its size in pixels (default 1000x700)\n"
		"  -q, --quiet               no progress messages\n"
		"  -h, --help                this text\n"
		"\n"
		"Exit status: COMMAND's (128+N if killed by signal N); 121 refcnt module\n"
		"not loaded, 122 permission denied, 125 other refcnt-run error or usage,\n"
		"126 COMMAND cannot be executed, 127 COMMAND not found.\n");
}

static struct bitmask *parse_nodes(const char *s, const char *what)
{
	struct bitmask *m = numa_parse_nodestring(s);

	if (!m) {
		rt_err("%s=%s: not a list of online nodes", what, s);
		exit(RUN_EXIT_FAIL);
	}
	return m;
}

static int setup_counters(void)
{
	int *nids, n, i, rc;

	n = rt_node_ids(&nids);
	if (n < 0)
		return -n == RT_EXIT_NOMODULE ? RUN_EXIT_NOMODULE : RUN_EXIT_FAIL;
	rc = rt_node_open(nids[0], &qnode, &info);
	free(nids);
	if (rc)
		return rc == RT_EXIT_NOMODULE ? RUN_EXIT_NOMODULE :
		       rc == RT_EXIT_PERM ? RUN_EXIT_PERM : RUN_EXIT_FAIL;
	if (rt_counters_init(&ctr, &info))
		return RUN_EXIT_FAIL;
	node_has_mem = xcalloc(ctr.nr_cnodes, sizeof(int));
	node_has_cpu = xcalloc(ctr.nr_cnodes, sizeof(int));
	for (i = 0; i < ctr.nr_cnodes; i++) {
		char path[64];

		snprintf(path, sizeof(path), REFCNT_DEV_DIR "/node%d",
			 ctr.cnode_nid[i]);
		node_has_mem[i] = access(path, F_OK) == 0;
		node_has_cpu[i] = refcnt_nid_cpus(ctr.cnode_nid[i], NULL, 0) > 0;
	}
	qext = xcalloc(QUERY_CHUNK, sizeof(*qext));
	qhw = xcalloc(QUERY_CHUNK, sizeof(*qhw));
	return 0;
}

/* May we read another process's counters? EPERM without CAP_SYS_PTRACE. */
static int check_query_permission(void)
{
	struct rcb_page_counters e[2];
	size_t nr;

	if (!refcnt_node_range_query(qnode, 1, 0x10000, 1, 0, e, 2, &nr) ||
	    errno != EPERM)
		return 0;
	rt_err("reading another process's counters (RCB_RANGE_QUERY) needs CAP_SYS_PTRACE: run refcnt-run as root");
	return RUN_EXIT_PERM;
}

static int reset_counters(void)
{
	int *nids, n, i;

	n = rt_node_ids(&nids);
	for (i = 0; i < n; i++) {
		struct refcnt_node *nd = refcnt_node_open(nids[i], 0);

		if (!nd || ioctl(refcnt_node_fd(nd), RCB_RESET)) {
			int rc = rt_node_error(errno, "--reset: RCB_RESET on ",
					       nids[i]);

			refcnt_node_close(nd);
			free(nids);
			return rc == RT_EXIT_PERM ? RUN_EXIT_PERM : RUN_EXIT_FAIL;
		}
		refcnt_node_close(nd);
	}
	free(nids);
	return 0;
}

static long old_period = -1, new_period = -1, old_nb = -1;

static void restore_feeds(void)
{
	char buf[32];

	if (old_period >= 0 && new_period != old_period) {
		snprintf(buf, sizeof(buf), "%ld", old_period);
		if (write_file(FAULT_PERIOD, buf))
			rt_err("could not restore %s to %ld: %s", FAULT_PERIOD,
			       old_period, strerror(errno));
	}
	if (old_nb >= 0) {
		snprintf(buf, sizeof(buf), "%ld", old_nb);
		if (write_file(NUMA_BALANCING, buf))
			rt_err("could not restore %s to %ld: %s", NUMA_BALANCING,
			       old_nb, strerror(errno));
	}
}

static int setup_feeds(void)
{
	char buf[32];

	old_period = rt_read_ll(FAULT_PERIOD, -1);
	if (old_period < 0) {
		rt_err("%s: cannot read it (module too old?)", FAULT_PERIOD);
		return RUN_EXIT_FAIL;
	}
	new_period = opt.period < 0 ? (old_period ? old_period : 1) :
		     opt.period ? opt.period : old_period;
	if (new_period != old_period) {
		snprintf(buf, sizeof(buf), "%ld", new_period);
		if (write_file(FAULT_PERIOD, buf)) {
			int err = errno;

			rt_err("cannot turn the page-fault feed on (%s=%ld): %s%s",
			       FAULT_PERIOD, new_period, strerror(err),
			       err == EACCES || err == EPERM ? ": run as root, or have root set it" : "");
			new_period = old_period;
			return err == EACCES || err == EPERM ? RUN_EXIT_PERM : RUN_EXIT_FAIL;
		}
		say("page-fault feed: sampling every %ld%s fault for the run (was %s)",
		    new_period, new_period == 1 ? "st" : "th",
		    old_period ? "on" : "off");
	} else if (!old_period) {
		say("warning: the page-fault feed is off (--period 0): only other feeds count");
	}
	if (opt.hinting) {
		long nb = rt_read_ll(NUMA_BALANCING, -1);

		if (nb < 0) {
			rt_err("--hinting: %s: this kernel has no NUMA balancing", NUMA_BALANCING);
			return RUN_EXIT_FAIL;
		}
		if (!(nb & 1)) {
			snprintf(buf, sizeof(buf), "%ld", nb | 1);
			if (write_file(NUMA_BALANCING, buf)) {
				int err = errno;

				rt_err("--hinting: cannot write %s: %s", NUMA_BALANCING,
				       strerror(err));
				return err == EACCES || err == EPERM ? RUN_EXIT_PERM : RUN_EXIT_FAIL;
			}
			old_nb = nb;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	enum { O_PERIOD = 256, O_HINTING, O_RESET, O_MINSHARE, O_MINREFS,
	       O_HEATMAP, O_WIDTH, O_HEIGHT };
	static const struct option opts[] = {
		{ "cpunodebind", required_argument, NULL, 'N' },
		{ "membind", required_argument, NULL, 'm' },
		{ "preferred", required_argument, NULL, 'p' },
		{ "interleave", required_argument, NULL, 'i' },
		{ "period", required_argument, NULL, O_PERIOD },
		{ "hinting", no_argument, NULL, O_HINTING },
		{ "reset", no_argument, NULL, O_RESET },
		{ "follow-children", no_argument, NULL, 'f' },
		{ "labels", required_argument, NULL, 'l' },
		{ "json", no_argument, NULL, 'j' },
		{ "output", required_argument, NULL, 'o' },
		{ "top", required_argument, NULL, 't' },
		{ "all", no_argument, NULL, 'a' },
		{ "min-share", required_argument, NULL, O_MINSHARE },
		{ "min-refs", required_argument, NULL, O_MINREFS },
		{ "heatmap", required_argument, NULL, O_HEATMAP },
		{ "width", required_argument, NULL, O_WIDTH },
		{ "height", required_argument, NULL, O_HEIGHT },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int sync_pipe[2], err_pipe[2], c, rc, exit_code;
	struct child_err ce;
	struct sigaction sa;
	struct proc *m;
	FILE *out = stderr;
	ssize_t n;
	char *end;
	long v;

	rt_prog = "refcnt-run";
	while ((c = getopt_long(argc, argv, "+N:m:p:i:fl:jo:t:aqh", opts, NULL)) != -1) {
		switch (c) {
		case 'N':
			opt.cpunodes = parse_nodes(optarg, "--cpunodebind");
			break;
		case 'm':
			opt.membind = parse_nodes(optarg, "--membind");
			break;
		case 'i':
			opt.interleave = parse_nodes(optarg, "--interleave");
			break;
		case 'p':
			v = strtol(optarg, &end, 10);
			if (*end || v < 0 || v > numa_max_node()) {
				rt_err("--preferred=%s: not a node", optarg);
				return RUN_EXIT_FAIL;
			}
			opt.preferred = v;
			break;
		case O_PERIOD:
			v = strtol(optarg, &end, 0);
			if (*end || v < 0 || v > INT_MAX) {
				rt_err("--period=%s: not a number >= 0", optarg);
				return RUN_EXIT_FAIL;
			}
			opt.period = v;
			break;
		case O_HINTING:
			opt.hinting = 1;
			break;
		case O_RESET:
			opt.reset = 1;
			break;
		case 'f':
			opt.follow = 1;
			break;
		case 'l':
			opt.labels = optarg;
			break;
		case 'j':
			opt.json = 1;
			break;
		case 'o':
			opt.output = optarg;
			break;
		case 't':
			v = strtol(optarg, &end, 0);
			if (*end || v < 0 || v > 10000) {
				rt_err("--top=%s: not a number 0..10000", optarg);
				return RUN_EXIT_FAIL;
			}
			opt.top = v;
			break;
		case 'a':
			opt.all = 1;
			break;
		case O_MINSHARE:
			opt.min_share = strtod(optarg, &end) / 100;
			if (*end || opt.min_share <= 0.5 || opt.min_share > 1) {
				rt_err("--min-share=%s: a percentage above 50 and at most 100", optarg);
				return RUN_EXIT_FAIL;
			}
			break;
		case O_MINREFS:
			opt.min_refs = strtol(optarg, &end, 0);
			if (*end || opt.min_refs < 0) {
				rt_err("--min-refs=%s: not a number >= 0", optarg);
				return RUN_EXIT_FAIL;
			}
			break;
		case O_HEATMAP:
			opt.heatmap = optarg;
			break;
		case O_WIDTH:
		case O_HEIGHT:
			v = strtol(optarg, &end, 0);
			if (*end || v < 64 || v > 16384) {
				rt_err("%s=%s: 64..16384 pixels",
				       c == O_WIDTH ? "--width" : "--height", optarg);
				return RUN_EXIT_FAIL;
			}
			if (c == O_WIDTH)
				opt.width = v;
			else
				opt.height = v;
			break;
		case 'q':
			opt.quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return RUN_EXIT_FAIL;
		}
	}
	if (optind >= argc) {
		rt_err("no command to run (refcnt-run [OPTIONS] -- COMMAND [ARGS...])");
		usage(stderr);
		return RUN_EXIT_FAIL;
	}
	if (opt.hinting && (opt.preferred >= 0 || opt.interleave)) {
		rt_err("--hinting binds memory (MPOL_BIND): it does not go with --preferred or --interleave");
		return RUN_EXIT_FAIL;
	}
	if (opt.heatmap && !rt_heatmap_name_ok(opt.heatmap)) {
		rt_err("--heatmap=%s: the name must end in .svg or .png",
		       opt.heatmap);
		return RUN_EXIT_FAIL;
	}
	if (opt.output) {
		out = fopen(opt.output, "w");
		if (!out) {
			rt_err("--output=%s: %s", opt.output, strerror(errno));
			return RUN_EXIT_FAIL;
		}
	}

	rc = setup_counters();
	if (!rc)
		rc = check_query_permission();
	if (!rc && opt.reset)
		rc = reset_counters();
	if (rc)
		return rc;
	if (geteuid() != 0)
		say("not root: file and shared mappings will not be counted (RCB_PAGE_DENIED)");
	rc = setup_feeds();
	if (rc) {
		restore_feeds();
		return rc;
	}

	if (pipe2(sync_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC)) {
		rt_err("pipe: %s", strerror(errno));
		restore_feeds();
		return RUN_EXIT_FAIL;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: waitpid sees EINTR */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* The terminal sends these to COMMAND too; we wait for its exit. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);

	clock_gettime(CLOCK_MONOTONIC, &t_start);
	main_pid = fork();
	if (main_pid < 0) {
		rt_err("fork: %s", strerror(errno));
		restore_feeds();
		return RUN_EXIT_FAIL;
	}
	if (main_pid == 0) {
		close(sync_pipe[1]);
		close(err_pipe[0]);
		child(argv + optind, sync_pipe[0], err_pipe[1]);
	}
	close(sync_pipe[0]);
	close(err_pipe[1]);
	if (ptrace(PTRACE_SEIZE, main_pid, 0, (void *)ptrace_options())) {
		int err = errno;

		kill(main_pid, SIGKILL);
		waitpid(main_pid, NULL, 0);
		restore_feeds();
		rt_err("cannot trace the command (PTRACE_SEIZE): %s%s", strerror(err),
		       err == EPERM ? ": ptrace is not allowed here (CAP_SYS_PTRACE, /proc/sys/kernel/yama/ptrace_scope, seccomp)" : "");
		return err == EPERM ? RUN_EXIT_PERM : RUN_EXIT_FAIL;
	}
	add_task(main_pid, main_pid);
	add_proc(main_pid, 1)->cmd[0] = '\0';
	find_task(main_pid)->seen_stop = 1;
	snprintf(find_proc(main_pid)->cmd, sizeof(procs->cmd), "%s", argv[optind]);
	if (write(sync_pipe[1], "g", 1) != 1) {
		rt_err("cannot start the command: %s", strerror(errno));
		kill(main_pid, SIGKILL);
	}
	close(sync_pipe[1]);
	n = read(err_pipe[0], &ce, sizeof(ce));
	close(err_pipe[0]);
	if (n != (ssize_t)sizeof(ce))
		ce.stage = 0;	/* exec worked */
	else
		opt.quiet = 1;	/* nothing to report: no progress noise */
	if (!ce.stage)
		say("running %s (pid %d)", argv[optind], (int)main_pid);

	trace_loop();
	clock_gettime(CLOCK_MONOTONIC, &t_end);
	restore_feeds();

	m = find_proc(main_pid);
	if (ce.stage == 2) {
		rt_err("%s: %s%s", argv[optind], ce.err == ENOENT ?
		       "command not found" : strerror(ce.err),
		       ce.err == ENOENT && !strchr(argv[optind], '/') ? " (not in PATH)" : "");
		return ce.err == ENOENT ? RUN_EXIT_NOTFOUND : RUN_EXIT_NOEXEC;
	}
	if (ce.stage == 1) {
		rt_err("cannot place the command as asked: %s%s", strerror(ce.err),
		       opt.hinting && ce.err == EINVAL ?
		       " (--hinting needs MPOL_F_NUMA_BALANCING: Linux 5.12 or later)" : "");
		return RUN_EXIT_FAIL;
	}
	if (WIFSIGNALED(m->status))
		exit_code = 128 + WTERMSIG(m->status);
	else
		exit_code = WEXITSTATUS(m->status);

	{
		struct proc *p;
		int i;

		for (p = procs; p; p = p->next)
			for (i = 0; p->snap && i < p->snap->nr; i++)
				advise(&p->snap->r[i]);
	}
	if (opt.json) {
		report_json(out, argv + optind, exit_code, new_period, old_period);
	} else {
		struct proc *p;

		fprintf(out, "\nrefcnt-run report: references sampled by the page-fault feed (every %ld%s fault)%s; counters are extended + hardware, by accessing node\n",
			new_period, new_period == 1 ? "st" : "th",
			opt.hinting ? " with NUMA-balancing hinting faults" : "");
		for (p = procs; p; p = p->next)
			text_proc(out, p);
	}
	if (opt.heatmap)
		report_heatmap(m);
	if (out != stderr && fclose(out)) {
		rt_err("--output=%s: %s", opt.output, strerror(errno));
		return RUN_EXIT_FAIL;
	}
	return exit_code;
}
