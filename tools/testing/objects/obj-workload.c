// SPDX-License-Identifier: GPL-2.0
/*
 * obj-workload: the program refcnt-run's object tests run (objects-check):
 * named static arrays, allocations from three call sites (one through a
 * helper function, one calloc, one mmap), one of them placed badly on
 * purpose, and one freed before the exit.
 *
 *   grid, table       static arrays (.bss, .data), written by main(), read
 *                     by every worker
 *   field             a static array in .bss past grid, so that it starts
 *                     beyond the program's last file-backed page (in the
 *                     anonymous mapping the loader adds for .bss), read by
 *                     every worker: named with its file:line all the same
 *   make_lookup()     a 4 MiB table (posix_memalign) read by every worker and
 *                     never written: its pages all map the kernel's zero page
 *   make_buffer()     malloc through a helper: "buffer", read by every worker
 *   calloc in main()  "counts", written by every worker
 *   place_badly()     mmap'ed (a memfd's pages, written first on node BAD),
 *                     used only by the worker on node HOT: the misplaced one
 *   make_scratch()    malloc'ed, written by the worker on HOT, freed before
 *                     the exit: its counts are those up to the free
 *
 * One worker is pinned to each node with CPUs. The HOT worker makes the
 * misplaced array: it writes a memfd's pages under a policy that binds
 * them to BAD, then maps them (MAP_POPULATE), so that they are present
 * when mmap() returns and the tracker reads their counters then: what
 * they counted before (their previous owners, their zeroing) is not the
 * array's. With --exact (the hub feed at period 1 and the truth plugin's
 * window), every hub ring is drained before that mmap(), and the window
 * opens after it: the HOT worker alone then loads each page K times, in
 * batches between syncs of its CPU's ring, so that refcnt's counts of the
 * array (references and lost ones, less those at its mmap()) can equal
 * the truth's. -P FILE writes the pages' physical addresses
 * ("misplaced 0xPADDR").
 *
 * --fork-exec: the process forks a child that execs this program with
 * --child (one 2 MiB malloc, touched): refcnt-run traces it only with
 * --follow-children. -L N leaves N threads waiting when main() returns
 * (exit_group() with threads alive). The lines "// line:NAME" mark the lines the test
 * expects the objects to be named after.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../truth/truth-mark.h"

#define KIB		1024UL
#define MIB		(1024 * KIB)
#define MAX_NODES	64
#define HUB_SYNC	"/sys/kernel/refcnt/hub_sync"

/* GCC lays .bss out in reverse: field after grid (check-objects.py checks). */
double field[128 * 1024];		// line:field
double grid[256 * 1024];		// line:grid
long table[64 * 1024] = { 1 };		// line:table

static size_t page;
static char *buffer, *scratch;
static const uint32_t *lookup;
static uint64_t *counts;
static volatile char *misplaced;
static size_t misplaced_len = MIB;	/* --misplaced KIB */
static int hot = -1, bad = -1, exact, loads = 1000;
static double seconds = 0.5;
static const char *pagemap_out;
static volatile int stop;

static void die(const char *what)
{
	fprintf(stderr, "obj-workload: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Helper: the call site the report names through it. */
__attribute__((noinline)) static char *make_buffer(size_t len)
{
	char *p = malloc(len);			// line:make_buffer

	if (!p)
		die("malloc");
	memset(p, 1, len);
	return p;
}

/*
 * Read, never written: each of its pages maps the kernel's zero page.
 * Whole 2 MiB pages of its own (a neighbour's write would fault in a real
 * THP over part of it), the first half kept in base pages: the base zero
 * page and, where THP is on, the huge one.
 */
__attribute__((noinline)) static const uint32_t *make_lookup(size_t len)
{
	void *p;

	errno = posix_memalign(&p, 2 * MIB, len);	// line:lookup
	if (errno || madvise(p, len / 2, MADV_NOHUGEPAGE))
		die("posix_memalign");
	return p;
}

__attribute__((noinline)) static char *make_scratch(size_t len)
{
	char *p = malloc(len);			// line:make_scratch

	if (!p)
		die("malloc");
	return p;
}

static void sync_rings(const char *which)
{
	int fd;

	if (!exact)
		return;
	fd = open(HUB_SYNC, O_WRONLY);
	if (fd < 0 || write(fd, which, strlen(which)) != (ssize_t)strlen(which))
		die(HUB_SYNC);
	close(fd);
}

/* This CPU's hub ring into the counters. */
static void hub_sync(void)
{
	sync_rings("cpu");
}

/* Every ring emptied, quiet for a moment, then emptied again. */
static void settle(void)
{
	sync_rings("1");
	usleep(100 * 1000);
	sync_rings("1");
}

/*
 * The misplaced array: a memfd's pages written under a policy binding
 * them to node, then mapped already present (see the top).
 */
__attribute__((noinline)) static volatile char *place_badly(size_t len, int node)
{
	unsigned long mask[MAX_NODES / (8 * sizeof(long))] = { 0 };
	char buf[4096];
	size_t o;
	void *p;
	int fd;

	mask[node / (8 * sizeof(long))] |= 1UL << (node % (8 * sizeof(long)));
	fd = (int)syscall(SYS_memfd_create, "misplaced", 0);
	if (fd < 0 || ftruncate(fd, (off_t)len))
		die("memfd");
	if (set_mempolicy(MPOL_BIND, mask, MAX_NODES))
		die("set_mempolicy");
	memset(buf, 1, sizeof(buf));
	for (o = 0; o < len; o += sizeof(buf))
		if (pwrite(fd, buf, sizeof(buf), (off_t)o) != (ssize_t)sizeof(buf))
			die("pwrite");
	set_mempolicy(MPOL_DEFAULT, NULL, 0);
	settle();
	p = mmap(NULL, len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);	// line:place_badly
	if (p == MAP_FAILED)
		die("mmap");
	close(fd);
	return p;
}

/*
 * `loads` loads of each misplaced page, in batches that fit a hub ring
 * (128Ki records) with room to spare, inside the truth window.
 */
static void use_misplaced(void)
{
	size_t npages = misplaced_len / page, i, j;
	int k;

	misplaced = place_badly(misplaced_len, bad);
	hub_sync();
	if (exact)
		truth_mark_start();
	for (i = 0; i < npages; i += 32) {
		for (j = i; j < i + 32 && j < npages; j++)
			for (k = 0; k < loads; k++)
				(void)misplaced[j * page];
		hub_sync();
	}
	if (exact)
		truth_mark_stop();
}

struct worker {
	pthread_t tid;
	int node;
	uint64_t sum;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	size_t i;

	if (numa_run_on_node(w->node))
		die("numa_run_on_node");
	if (w->node == hot) {
		use_misplaced();
		scratch = make_scratch(MIB);
		memset(scratch, 2, MIB);
	}
	while (!stop) {
		for (i = 0; i < sizeof(grid) / sizeof(grid[0]); i += 64)
			w->sum += (uint64_t)grid[i];
		for (i = 0; i < sizeof(table) / sizeof(table[0]); i += 64)
			w->sum += (uint64_t)table[i];
		for (i = 0; i < sizeof(field) / sizeof(field[0]); i += 64)
			w->sum += (uint64_t)field[i];
		for (i = 0; i < 4 * MIB / sizeof(*lookup); i += 1024)
			w->sum += *(volatile const uint32_t *)&lookup[i];
		for (i = 0; i < 4 * MIB; i += 512)
			w->sum += (uint64_t)buffer[i];
		for (i = 0; i < 2 * MIB / sizeof(*counts); i += 64)
			counts[i]++;
	}
	return NULL;
}

/* "misplaced 0xPADDR" for each page of it (root). */
static void write_pagemap(void)
{
	FILE *f = fopen(pagemap_out, "w");
	int fd = open("/proc/self/pagemap", O_RDONLY);
	size_t o;

	if (!f || fd < 0)
		die(pagemap_out);
	for (o = 0; o < misplaced_len; o += page) {
		uint64_t e, va = (uintptr_t)misplaced + o;

		if (pread(fd, &e, 8, va / page * 8) != 8)
			die("pagemap");
		if ((e >> 63) && (e & ((1ULL << 55) - 1)))
			fprintf(f, "misplaced 0x%llx\n",
				(unsigned long long)(e & ((1ULL << 55) - 1)) * page);
	}
	close(fd);
	if (fclose(f))
		die(pagemap_out);
}

/* Nodes with CPUs and memory: hot the last, bad another. */
static int choose_nodes(int *cpu_nodes, int *nc)
{
	struct bitmask *cpus = numa_allocate_cpumask();
	int i, withmem[MAX_NODES], nm = 0;
	long long free_b;

	*nc = 0;
	for (i = 0; i <= numa_max_node() && i < MAX_NODES; i++) {
		int has_cpu, has_mem;

		if (!numa_bitmask_isbitset(numa_nodes_ptr, i))
			continue;
		has_cpu = !numa_node_to_cpus(i, cpus) && numa_bitmask_weight(cpus) > 0;
		has_mem = numa_node_size64(i, &free_b) > 0;
		if (has_cpu)
			cpu_nodes[(*nc)++] = i;
		if (has_cpu && has_mem)
			withmem[nm++] = i;
	}
	numa_free_cpumask(cpus);
	if (hot < 0 && nm)
		hot = withmem[nm - 1];
	if (bad < 0 && nm > 1)
		bad = withmem[0];
	if (hot < 0 || bad < 0) {
		fprintf(stderr, "obj-workload: needs two nodes with CPUs and memory\n");
		return -1;
	}
	return 0;
}

/*
 * Not inlined, so that the allocation's return address is in child_main;
 * its pages written through a volatile pointer, so that the compiler
 * cannot drop the stores to memory nothing reads again.
 */
__attribute__((noinline)) static int child_main(void)
{
	volatile char *p = malloc(2 * MIB);	// line:child
	size_t o;

	if (!p)
		die("malloc");
	for (o = 0; o < 2 * MIB; o += page)
		p[o] = 3;
	printf("obj-workload child: pid %d\n", (int)getpid());
	return 0;
}

static int fork_exec(const char *self)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (!pid) {
		execl(self, self, "--child", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		return 1;
	return 0;
}

static int run_workers(void)
{
	struct worker w[MAX_NODES];
	int cpu_nodes[MAX_NODES], nc, i;
	struct timespec ts;

	if (choose_nodes(cpu_nodes, &nc))
		return 1;
	buffer = make_buffer(4 * MIB);
	lookup = make_lookup(4 * MIB);
	counts = calloc(2 * MIB / sizeof(*counts), sizeof(*counts));	// line:calloc
	if (!counts)
		die("calloc");
	printf("obj-workload: pid %d, misplaced on node %d, used from node %d\n",
	       (int)getpid(), bad, hot);
	fflush(stdout);
	for (i = 0; i < nc; i++) {
		w[i].node = cpu_nodes[i];
		w[i].sum = 0;
		if (pthread_create(&w[i].tid, NULL, work, &w[i]))
			die("pthread_create");
	}
	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
	stop = 1;
	for (i = 0; i < nc; i++)
		pthread_join(w[i].tid, NULL);
	/* Its references into the counters before the tracker reads them. */
	settle();
	free(scratch);
	if (pagemap_out)
		write_pagemap();
	return 0;
}

/* A thread that waits until the process ends. */
static void *park(void *arg)
{
	for (;;)
		pause();
	return arg;
}

/*
 * Threads left waiting when main() returns: exit() then ends the process
 * with them alive (exit_group()), as a server's idle threads are, and
 * their exit stops race the main thread's in refcnt-run.
 */
static void leave_threads(int n)
{
	pthread_t t;

	while (n-- > 0)
		if (pthread_create(&t, NULL, park, NULL))
			die("pthread_create");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "exact", no_argument, NULL, 'x' },
		{ "seconds", required_argument, NULL, 's' },
		{ "loads", required_argument, NULL, 'k' },
		{ "hot", required_argument, NULL, 'H' },
		{ "bad", required_argument, NULL, 'B' },
		{ "pagemap", required_argument, NULL, 'P' },
		{ "fork-exec", no_argument, NULL, 'f' },
		{ "misplaced", required_argument, NULL, 'm' },
		{ "child", no_argument, NULL, 'c' },
		{ "leave-threads", required_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 },
	};
	int c, forkexec = 0, left = 0, rc;

	page = sysconf(_SC_PAGESIZE);
	while ((c = getopt_long(argc, argv, "xs:k:H:B:P:fcm:L:", opts, NULL)) != -1) {
		switch (c) {
		case 'x': exact = 1; break;
		case 's': seconds = atof(optarg); break;
		case 'k': loads = atoi(optarg); break;
		case 'H': hot = atoi(optarg); break;
		case 'B': bad = atoi(optarg); break;
		case 'P': pagemap_out = optarg; break;
		case 'f': forkexec = 1; break;
		case 'm': misplaced_len = strtoul(optarg, NULL, 0) * KIB; break;
		case 'c': return child_main();
		case 'L': left = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: obj-workload [--exact] [-s SECONDS] [-k LOADS] [-H NODE] [-B NODE] [-P FILE] [-m KIB] [--fork-exec] [-L THREADS]\n");
			return 2;
		}
	}
	if (numa_available() < 0) {
		fprintf(stderr, "obj-workload: no NUMA\n");
		return 1;
	}
	/* Written, so that their pages are their own (not the zero page). */
	for (c = 0; c < (int)(sizeof(grid) / sizeof(grid[0])); c++)
		grid[c] = 1;
	for (c = 0; c < (int)(sizeof(field) / sizeof(field[0])); c++)
		field[c] = 1;
	table[1] = 1;
	rc = run_workers();
	if (!rc && forkexec)
		rc = fork_exec("/proc/self/exe");
	leave_threads(left);
	printf("obj-workload: done\n");
	return rc;
}
