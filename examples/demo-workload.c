// SPDX-License-Identifier: GPL-2.0
/*
 * demo-workload: a small NUMA program with one array placed badly on
 * purpose, for refcnt-run's report and the heatmaps to show.
 *
 * One worker thread (or -t N) is pinned to each node that has CPUs. The
 * arrays, each in its own mapping (guard pages keep the kernel from
 * merging neighbours, so /proc/PID/maps shows one region per array):
 *
 *   shared_interleaved  interleaved over the nodes with memory; read by
 *                       every worker (good placement for shared data)
 *   shared_serial       first touched by the main thread, so all on its
 *                       node; read by every worker (the classic serial
 *                       initialisation mistake: it should be interleaved)
 *   private_nN          first touched by the worker(s) on node N and used
 *                       only by them (local, as it should be)
 *   misplaced           numa_alloc_onnode() on node B, whose CPUs never
 *                       touch it, while the workers of node H hammer it:
 *                       it belongs on node H
 *
 * The start prints "array NAME 0xSTART-0xEND ..." for every array (and
 * writes the same lines to --labels FILE), so a report by address can be
 * matched to the arrays; refcnt-run --labels FILE names them itself.
 *
 * The arrays stay mapped until exit, so that refcnt-run, which reads the
 * counters when the process exits, still finds them. Huge pages are
 * disabled on them (MADV_NOHUGEPAGE): one fault would map 2 MiB and the
 * sampled fault would count one hardware page only.
 *
 * NUMA balancing (on by default on NUMA machines) makes the kernel take
 * hinting faults while the program runs, which refcnt's fault feed
 * samples. The misplaced array is re-bound with MPOL_F_NUMA_BALANCING
 * (Linux 5.12+) so that it takes hinting faults too yet stays on node B;
 * older kernels only count its first touches.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MPOL_F_NUMA_BALANCING
#define MPOL_F_NUMA_BALANCING	(1 << 13)
#endif

#define MAX_NODES	1024
#define LINE		64

struct array {
	char name[32];
	volatile uint64_t *p;
	size_t len;
	char how[160];
};

struct worker {
	pthread_t tid;
	int idx;			/* among all workers */
	int node;
	int hot;			/* hammers the misplaced array: its index
					 * among those that do, from 1 */
	struct array *priv;
	unsigned long passes;
	uint64_t sum;
};

static volatile int stop;
static struct array shared_i, shared_s, misplaced;
static size_t page;
static int nr_workers, nr_hot;
/* Workers fault their pages in one at a time: concurrent page faults are
 * slow in emulated guests with more vCPUs than host cores. */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t started;

static void die(const char *what)
{
	fprintf(stderr, "demo-workload: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* len bytes between two PROT_NONE guard pages, no huge pages. */
static void *alloc_guarded(size_t len)
{
	char *p = mmap(NULL, len + 2 * page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	if (mprotect(p, page, PROT_NONE) ||
	    mprotect(p + page + len, page, PROT_NONE))
		die("mprotect");
	madvise(p + page, len, MADV_NOHUGEPAGE);
	return p + page;
}

static void touch(volatile uint64_t *p, size_t len, uint64_t v)
{
	size_t i;

	for (i = 0; i < len / sizeof(*p); i += LINE / sizeof(*p))
		p[i] += v;
}

static uint64_t readall(volatile uint64_t *p, size_t len)
{
	uint64_t s = 0;
	size_t i;

	for (i = 0; i < len / sizeof(*p); i += LINE / sizeof(*p))
		s += p[i];
	return s;
}

/* Slice i of n of an array, page aligned. */
static void touch_slice(struct array *a, int i, int n)
{
	size_t pages = a->len / page;
	size_t first = pages * i / n, last = pages * (i + 1) / n;

	touch((volatile uint64_t *)((char *)a->p + first * page),
	      (last - first) * page, 1);
}

static void *work(void *arg)
{
	struct worker *w = arg;

	if (numa_run_on_node(w->node))
		fprintf(stderr, "demo-workload: cannot run on node %d: %s\n",
			w->node, strerror(errno));
	pthread_mutex_lock(&init_lock);
	/* The owner touches its private array first: local placement. */
	touch(w->priv->p, w->priv->len, 1);
	/* Every worker initialises its slice of shared_interleaved, ... */
	touch_slice(&shared_i, w->idx, nr_workers);
	/* ... and the hot ones theirs of misplaced (which stays on node B). */
	if (w->hot)
		touch_slice(&misplaced, w->hot - 1, nr_hot);
	pthread_mutex_unlock(&init_lock);
	pthread_barrier_wait(&started);
	while (!stop) {
		touch(w->priv->p, w->priv->len, 1);
		w->sum += readall(shared_i.p, shared_i.len);
		w->sum += readall(shared_s.p, shared_s.len);
		if (w->hot) {
			int k;

			for (k = 0; k < 4; k++)
				touch(misplaced.p, misplaced.len, k);
		}
		w->passes++;
	}
	return NULL;
}

static void print_array(FILE *f, const struct array *a)
{
	fprintf(f, "array %s 0x%lx-0x%lx %s\n", a->name, (unsigned long)a->p,
		(unsigned long)a->p + a->len, a->how);
}

/* "NAME 0xPADDR" for each present page of a (the truth's row names). */
static void write_pagemap(FILE *f, const struct array *a)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	size_t o;

	if (fd < 0)
		die("/proc/self/pagemap");
	for (o = 0; o < a->len; o += page) {
		uint64_t e, va = (uintptr_t)a->p + o;

		if (pread(fd, &e, 8, va / page * 8) != 8)
			die("pread /proc/self/pagemap");
		if ((e >> 63) && (e & ((1ULL << 55) - 1)))
			fprintf(f, "%s 0x%llx\n", a->name,
				(unsigned long long)(e & ((1ULL << 55) - 1)) * page);
	}
	close(fd);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: demo-workload [-s SECONDS] [-k KIB] [-t THREADS] [-l FILE] [-P FILE]\n"
		"\n"
		"Threads pinned to every node with CPUs share some arrays and own\n"
		"others; the array \"misplaced\" is put on purpose on a node whose CPUs\n"
		"never touch it while another node's threads hammer it. Run it under\n"
		"refcnt-run to see which array is badly placed and where it belongs.\n"
		"\n"
		"  -s, --seconds S     run for S seconds (default 3)\n"
		"  -k, --kib KIB       size of each array in KiB (default 2048)\n"
		"  -t, --threads N     worker threads per node with CPUs (default 1)\n"
		"  -l, --labels FILE   also write the \"array NAME START-END\" lines to\n"
		"                      FILE (for refcnt-run --labels FILE)\n"
		"  -P, --pagemap FILE  at the end write \"NAME 0xPADDR\" for every page of\n"
		"                      every array (root; for refcnt-compare --regions)\n"
		"  -h, --help          this text\n");
}

static struct {
	double seconds;
	size_t len;		/* of each array, bytes */
	int threads;		/* per node with CPUs */
	const char *labels;
	const char *pagemap;	/* -P: where to write each page's paddr */
} opt = { .seconds = 3, .len = 2048 * 1024, .threads = 1 };

static int cpu_nodes[MAX_NODES], mem_nodes[MAX_NODES], nc, nm;
static int hot = -1, bad = -1;	/* the misplaced array's user and home */

/* The options into opt: -1 to go on, else the exit status. */
static int parse_options(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "kib", required_argument, NULL, 'k' },
		{ "threads", required_argument, NULL, 't' },
		{ "labels", required_argument, NULL, 'l' },
		{ "pagemap", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	size_t kib = 2048;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "s:k:t:l:P:h", opts, NULL)) != -1) {
		if (c == 's') {
			opt.seconds = strtod(optarg, &end);
			if (*end || opt.seconds <= 0 || opt.seconds > 3600)
				goto bad_arg;
		} else if (c == 'k') {
			kib = strtoul(optarg, &end, 0);
			if (*end || kib < 4 || kib > (1UL << 24))
				goto bad_arg;
		} else if (c == 't') {
			opt.threads = strtol(optarg, &end, 0);
			if (*end || opt.threads < 1 || opt.threads > 64)
				goto bad_arg;
		} else if (c == 'l') {
			opt.labels = optarg;
		} else if (c == 'P') {
			opt.pagemap = optarg;
		} else {
			usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "demo-workload: unexpected argument '%s'\n",
			argv[optind]);
		return 2;
	}
	page = sysconf(_SC_PAGESIZE);
	opt.len = (kib * 1024 + page - 1) / page * page;
	return -1;

bad_arg:
	fprintf(stderr, "demo-workload: bad value '%s' for -%c\n", optarg, c);
	usage(stderr);
	return 2;
}

/* Nodes with CPUs and nodes with memory: 0, or -1 if either is none. */
static int find_nodes(void)
{
	struct bitmask *cpus = numa_allocate_cpumask();
	int i, maxnode = numa_max_node();
	long long free_b;

	for (i = 0; i <= maxnode && i < MAX_NODES; i++) {
		if (!numa_bitmask_isbitset(numa_nodes_ptr, i))
			continue;
		if (!numa_node_to_cpus(i, cpus) &&
		    numa_bitmask_weight(cpus) > 0)
			cpu_nodes[nc++] = i;
		if (numa_node_size64(i, &free_b) > 0)
			mem_nodes[nm++] = i;
	}
	numa_free_cpumask(cpus);
	if (!nc || !nm) {
		fprintf(stderr, "demo-workload: no node with CPUs or none with memory\n");
		return -1;
	}
	return 0;
}

static int has_memory(int node)
{
	int j;

	for (j = 0; j < nm; j++)
		if (mem_nodes[j] == node)
			return 1;
	return 0;
}

/*
 * Hot: the last node with CPUs and memory. Bad: another memory node, one
 * with CPUs if there is one (whose CPUs will not touch it).
 */
static void choose_hot_and_bad(void)
{
	int i, j;

	for (i = nc - 1; i >= 0 && hot < 0; i--)
		if (has_memory(cpu_nodes[i]))
			hot = cpu_nodes[i];
	if (hot < 0)
		hot = cpu_nodes[nc - 1];
	for (i = 0; i < nc && bad < 0; i++)
		if (has_memory(cpu_nodes[i]) && cpu_nodes[i] != hot)
			bad = cpu_nodes[i];
	for (j = 0; j < nm && bad < 0; j++)
		if (mem_nodes[j] != hot)
			bad = mem_nodes[j];
	if (bad < 0)
		bad = hot;
}

static void print_nodes(void)
{
	int i;

	printf("demo-workload: pid %d; nodes with CPUs:", (int)getpid());
	for (i = 0; i < nc; i++)
		printf(" %d", cpu_nodes[i]);
	printf("; with memory:");
	for (i = 0; i < nm; i++)
		printf(" %d", mem_nodes[i]);
	printf("; %d thread%s per node, %.1f s, %zu KiB per array\n",
	       opt.threads, opt.threads == 1 ? "" : "s", opt.seconds,
	       opt.len / 1024);
}

/* shared_interleaved, shared_serial (the main thread initialises it). */
static void make_shared_arrays(void)
{
	snprintf(shared_i.name, sizeof(shared_i.name), "shared_interleaved");
	shared_i.len = opt.len;
	shared_i.p = numa_alloc_interleaved(opt.len);
	if (!shared_i.p)
		die("numa_alloc_interleaved");
	madvise((void *)shared_i.p, opt.len, MADV_NOHUGEPAGE);
	snprintf(shared_i.how, sizeof(shared_i.how),
		 "interleaved over the nodes with memory, initialised in parallel; read by all threads");

	snprintf(shared_s.name, sizeof(shared_s.name), "shared_serial");
	shared_s.len = opt.len;
	shared_s.p = alloc_guarded(opt.len);
	touch(shared_s.p, opt.len, 1);
	snprintf(shared_s.how, sizeof(shared_s.how),
		 "first touched by the main thread on node %d; read by all threads",
		 cpu_nodes[0]);
}

/* misplaced: on node bad, used only by node hot's workers. */
static void make_misplaced(void)
{
	/* Keep it on node bad, but let NUMA balancing sample it. */
	unsigned long mask[MAX_NODES / (8 * sizeof(long))] = { 0 };

	snprintf(misplaced.name, sizeof(misplaced.name), "misplaced");
	misplaced.len = opt.len;
	misplaced.p = numa_alloc_onnode(opt.len, bad);
	if (!misplaced.p)
		die("numa_alloc_onnode");
	madvise((void *)misplaced.p, opt.len, MADV_NOHUGEPAGE);
	mask[bad / (8 * sizeof(long))] |= 1UL << (bad % (8 * sizeof(long)));
	mbind((void *)misplaced.p, opt.len, MPOL_BIND | MPOL_F_NUMA_BALANCING,
	      mask, MAX_NODES, 0);	/* EINVAL before 5.12: fine */
	snprintf(misplaced.how, sizeof(misplaced.how),
		 "placed on node %d (numa_alloc_onnode), used only by the thread%s on node %d%s",
		 bad, opt.threads == 1 ? "" : "s", hot,
		 bad != hot ? "  <-- badly placed on purpose" : "");
}

/* The workers (nr_workers of them) and their private arrays. */
static struct worker *make_workers(void)
{
	const int threads = opt.threads;
	struct worker *w;
	struct array *a;
	int i;

	nr_workers = nc * threads;
	w = calloc(nr_workers, sizeof(*w));
	a = calloc(nr_workers, sizeof(*a));
	if (!w || !a)
		die("calloc");
	for (i = 0; i < nr_workers; i++, a++) {
		w[i].idx = i;
		w[i].node = cpu_nodes[i / threads];
		w[i].hot = w[i].node == hot ? ++nr_hot : 0;
		w[i].priv = a;
		if (threads == 1)
			snprintf(a->name, sizeof(a->name), "private_n%d", w[i].node);
		else
			snprintf(a->name, sizeof(a->name), "private_n%d_t%d",
				 w[i].node, i % threads);
		a->len = opt.len;
		a->p = alloc_guarded(opt.len);
		snprintf(a->how, sizeof(a->how),
			 "first touched by its thread on node %d, used only by it",
			 w[i].node);
	}
	return w;
}

static void print_arrays(FILE *f, const struct worker *w)
{
	int i;

	print_array(f, &shared_i);
	print_array(f, &shared_s);
	for (i = 0; i < nr_workers; i++)
		print_array(f, w[i].priv);
	print_array(f, &misplaced);
}

/* The arrays on stdout and in --labels FILE, and what to expect. */
static void announce(const struct worker *w)
{
	FILE *lf = NULL;

	if (opt.labels) {
		lf = fopen(opt.labels, "w");
		if (!lf)
			die(opt.labels);
	}
	print_arrays(stdout, w);
	if (lf) {
		print_arrays(lf, w);
		if (fclose(lf))
			die(opt.labels);
	}
	if (bad != hot)
		printf("demo-workload: expect the report to advise moving \"misplaced\" from node %d to node %d\n",
		       bad, hot);
	else
		printf("demo-workload: one node with memory: nothing can be misplaced here\n");
	fflush(stdout);
}

/* Start the workers, let them run opt.seconds, stop them: 0, or 1. */
static int run_workers(struct worker *w)
{
	struct timespec ts;
	int i;

	pthread_barrier_init(&started, NULL, nr_workers + 1);
	for (i = 0; i < nr_workers; i++)
		if (pthread_create(&w[i].tid, NULL, work, &w[i])) {
			fprintf(stderr, "demo-workload: pthread_create failed\n");
			return 1;
		}
	/* The clock starts once every worker has faulted its pages in. */
	pthread_barrier_wait(&started);
	ts.tv_sec = (time_t)opt.seconds;
	ts.tv_nsec = (long)((opt.seconds - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	stop = 1;
	for (i = 0; i < nr_workers; i++)
		pthread_join(w[i].tid, NULL);
	for (i = 0; i < nr_workers; i++)
		printf("demo-workload: thread on node %d: %lu passes%s\n",
		       w[i].node, w[i].passes,
		       w[i].hot ? " (hammered misplaced)" : "");
	return 0;
}

/* -P: every array's pages with their physical addresses, for refcnt-compare. */
static void write_pagemaps(const struct worker *w)
{
	FILE *pf = fopen(opt.pagemap, "w");
	int i;

	if (!pf)
		die(opt.pagemap);
	write_pagemap(pf, &shared_i);
	write_pagemap(pf, &shared_s);
	for (i = 0; i < nr_workers; i++)
		write_pagemap(pf, w[i].priv);
	write_pagemap(pf, &misplaced);
	if (fclose(pf))
		die(opt.pagemap);
}

int main(int argc, char **argv)
{
	struct worker *w;
	int rc;

	rc = parse_options(argc, argv);
	if (rc >= 0)
		return rc;
	if (numa_available() < 0) {
		fprintf(stderr, "demo-workload: no NUMA support in this kernel (numa_available)\n");
		return 1;
	}
	if (find_nodes())
		return 1;
	choose_hot_and_bad();
	/* The main thread runs where the first node's workers run. */
	numa_run_on_node(cpu_nodes[0]);
	print_nodes();
	make_shared_arrays();
	make_misplaced();
	w = make_workers();
	announce(w);
	rc = run_workers(w);
	if (!rc && opt.pagemap)
		write_pagemaps(w);
	/* No numa_free(): the arrays must still be mapped at exit. */
	return rc;
}
