// SPDX-License-Identifier: GPL-2.0
/*
 * placement-workloads: NUMA workloads for `make placement`, each with a
 * known access pattern, that measure their own remote-reference share
 * over time from where their pages are (move_pages(2) queries).
 *
 *   misplaced  each worker (one per node with CPUs) writes its own array,
 *              placed on another node with memory than its own
 *   phase      one array, placed on worker 0's node and written by worker 0
 *              for the first third of the run, then by worker 1 only
 *   shared     one array, pages spread over the nodes with memory, written
 *              by every worker alike: a placement policy should leave it
 *              (no page moved more than once)
 *   tier       one hot array on a node without CPUs (a memory tier),
 *              written by worker 0 only
 *
 * phase and shared need two nodes with CPUs, misplaced and tier one; all
 * need two nodes with memory.
 *
 * Every pass writes 8 lines of every page a worker uses, so every page of
 * an array is used alike, and the share of references that are remote is
 * the share of (worker, page) pairs whose page is not on the worker's
 * node (for a worker on a node without memory: the nearest with memory).
 * Arrays are separate 4 KiB-page mappings (MADV_NOHUGEPAGE), placed with
 * move_pages(2) after the first touch so that no memory policy binds them.
 *
 * With -n the arrays are placed naturally instead: first touched from the
 * node of their first user, and left there (first touch).
 *
 * Output: "sample T REMOTE" lines every -i ms, then one line
 *   result workload=W remote_end=R moves=M pages_moved=P moved_twice=Q
 *          shared_moved_twice=S t90=T timeline=r1,r2,... pages_per_s=F
 * (pages_per_s: the program's own figure, page passes its workers made
 * per second; under TCG a measure of work done, not of memory speed).
 * (t90: seconds from the start, or from the phase change, until at most
 * 10% of references are remote; -1 if never; moves are the node changes
 * the samples saw).
 */
#include <errno.h>
#include <getopt.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define MAX_W		16
#define MAX_A		(MAX_W + 1)
#define PAGE		4096UL

struct array {
	volatile uint64_t *p;
	size_t pages;
	int *node, *changes;	/* last node seen, node changes seen */
	int shared;
};

static struct array arr[MAX_A];
static int nr_arr;
static int cpu_nodes[MAX_W], nw;
static int mem_nodes[64], nm;
static int local_of[MAX_W];	/* the node with memory local to worker i */
static int users[MAX_W][MAX_A];	/* worker i uses array j now */
static volatile int stop;
static int natural;		/* -n: first touch, no placement */
static uint64_t passes[MAX_W];	/* pages written, per worker */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void die(const char *what)
{
	fprintf(stderr, "placement-workloads: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int nearest_mem(int nid)
{
	int i, best = mem_nodes[0], bd = 1 << 30;

	for (i = 0; i < nm; i++) {
		int d = mem_nodes[i] == nid ? 0 : numa_distance(nid, mem_nodes[i]);

		if (d < bd) {
			bd = d;
			best = mem_nodes[i];
		}
	}
	return best;
}

static void find_nodes(void)
{
	struct bitmask *cpus = numa_allocate_cpumask();
	int n;

	for (n = 0; n <= numa_max_node(); n++) {
		long long fr;

		if (!numa_bitmask_isbitset(numa_nodes_ptr, n))
			continue;
		if (numa_node_size64(n, &fr) > 0 && nm < 64)
			mem_nodes[nm++] = n;
		if (!numa_node_to_cpus(n, cpus) && numa_bitmask_weight(cpus) &&
		    nw < MAX_W)
			cpu_nodes[nw++] = n;
	}
	for (n = 0; n < nw; n++)
		local_of[n] = nearest_mem(cpu_nodes[n]);
}

/* Put every page of a on node (or spread over the memory nodes: -1). */
static void place(struct array *a, int node)
{
	void **pages = calloc(a->pages, sizeof(void *));
	int *to = calloc(a->pages, sizeof(int)), *st = calloc(a->pages, sizeof(int));
	size_t i;

	for (i = 0; i < a->pages; i++) {
		pages[i] = (char *)a->p + i * PAGE;
		to[i] = node >= 0 ? node : mem_nodes[i % nm];
	}
	if (numa_move_pages(0, a->pages, pages, to, st, MPOL_MF_MOVE) < 0)
		die("move_pages");
	for (i = 0; i < a->pages; i++)
		a->node[i] = st[i];
	free(pages);
	free(to);
	free(st);
}

/* Where every page of a is now, into a->node. */
static void where(struct array *a)
{
	void **pages = calloc(a->pages, sizeof(void *));
	size_t i;

	for (i = 0; i < a->pages; i++)
		pages[i] = (char *)a->p + i * PAGE;
	if (numa_move_pages(0, a->pages, pages, NULL, a->node, 0) < 0)
		die("move_pages query");
	free(pages);
}

/*
 * A new array of mb MiB: placed on node (-1: spread over the memory
 * nodes), or with -n first touched from worker toucher's node.
 */
static struct array *new_array(size_t mb, int node, int shared, int toucher)
{
	struct array *a = &arr[nr_arr++];
	size_t len = mb << 20, i;

	a->p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a->p == MAP_FAILED)
		die("mmap");
	madvise((void *)a->p, len, MADV_NOHUGEPAGE);
	a->pages = len / PAGE;
	a->node = calloc(a->pages, sizeof(int));
	a->changes = calloc(a->pages, sizeof(int));
	a->shared = shared;
	if (natural) {
		numa_run_on_node(cpu_nodes[toucher]);
		for (i = 0; i < a->pages; i++)
			a->p[i * PAGE / 8] = 1;
		numa_run_on_node(-1);
		where(a);
		return a;
	}
	for (i = 0; i < a->pages; i++)
		a->p[i * PAGE / 8] = 1;
	place(a, node);
	return a;
}

static void *work(void *arg)
{
	int w = (int)(intptr_t)arg, j;
	size_t i, l;

	numa_run_on_node(cpu_nodes[w]);
	while (!stop) {
		int any = 0;

		for (j = 0; j < nr_arr; j++) {
			struct array *a = &arr[j];

			if (!users[w][j])
				continue;
			any = 1;
			for (i = 0; i < a->pages; i++)
				for (l = 0; l < 8; l++)
					a->p[i * PAGE / 8 + l * 64]++;
			__atomic_add_fetch(&passes[w], a->pages, __ATOMIC_RELAXED);
		}
		if (!any)
			usleep(1000);
	}
	return NULL;
}

/* Query every page's node; the remote share of the current pattern. */
static double sample(void)
{
	uint64_t remote = 0, total = 0;
	int j, w;

	pthread_mutex_lock(&lock);
	for (j = 0; j < nr_arr; j++) {
		struct array *a = &arr[j];
		void **pages = calloc(a->pages, sizeof(void *));
		int *st = calloc(a->pages, sizeof(int));
		size_t i;

		for (i = 0; i < a->pages; i++)
			pages[i] = (char *)a->p + i * PAGE;
		if (numa_move_pages(0, a->pages, pages, NULL, st, 0) < 0)
			die("move_pages query");
		for (i = 0; i < a->pages; i++) {
			if (st[i] >= 0 && st[i] != a->node[i]) {
				a->changes[i]++;
				a->node[i] = st[i];
			}
			for (w = 0; w < nw; w++)
				if (users[w][j]) {
					total++;
					remote += a->node[i] != local_of[w];
				}
		}
		free(pages);
		free(st);
	}
	pthread_mutex_unlock(&lock);
	return total ? (double)remote / total : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: placement-workloads -w misplaced|phase|shared|tier [-n] [-t SECONDS] [-i MS] [-s MB]\n");
}

int main(int argc, char **argv)
{
	const char *wl = NULL;
	double secs = 20, t0, t_ref, t90 = -1, r = 0, tl[8];
	int ms = 500, mb = 4, c, w, j, nr_tl = 0, phase = 0, need;
	long moves = 0, pages_moved = 0, twice = 0, shared_twice = 0;
	uint64_t done_pages = 0;
	pthread_t tid[MAX_W];

	while ((c = getopt(argc, argv, "w:nt:i:s:h")) != -1) {
		switch (c) {
		case 'n': natural = 1; break;
		case 'w': wl = optarg; break;
		case 't': secs = atof(optarg); break;
		case 'i': ms = atoi(optarg); break;
		case 's': mb = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!wl || numa_available() < 0 || secs <= 0 || ms <= 0 || mb <= 0) {
		usage(stderr);
		return 2;
	}
	prctl(PR_SET_NAME, "placement-work");
	find_nodes();
	/* phase and shared need two workers; misplaced and tier run with
	 * one (make placement's one-vCPU guest on the instruction clock).
	 */
	need = !strcmp(wl, "phase") || !strcmp(wl, "shared") ? 2 : 1;
	if (nw < need || nm < 2) {
		fprintf(stderr, "placement-workloads: %s needs %d node%s with CPUs and 2 with memory\n",
			wl, need, need > 1 ? "s" : "");
		return 4;
	}
	if (!strcmp(wl, "misplaced")) {
		for (w = 0; w < nw; w++) {
			int k, to = mem_nodes[0];

			for (k = 0; k < nm; k++)	/* the next memory node */
				if (mem_nodes[k] == local_of[w])
					to = mem_nodes[(k + 1) % nm];
			new_array(mb, to, 0, w);
			users[w][w] = 1;
		}
	} else if (!strcmp(wl, "phase")) {
		new_array(mb, local_of[0], 0, 0);
		users[0][0] = 1;
		phase = 1;
	} else if (!strcmp(wl, "shared")) {
		new_array(mb, -1, 1, 0);
		for (w = 0; w < nw; w++)
			users[w][0] = 1;
	} else if (!strcmp(wl, "tier")) {
		int k, cpuless = -1;

		for (k = 0; k < nm; k++) {
			struct bitmask *cpus = numa_allocate_cpumask();

			if (!numa_node_to_cpus(mem_nodes[k], cpus) &&
			    !numa_bitmask_weight(cpus))
				cpuless = mem_nodes[k];
		}
		if (cpuless < 0) {
			fprintf(stderr, "placement-workloads: tier needs a node with memory and no CPUs\n");
			return 4;
		}
		new_array(mb, cpuless, 0, 0);
		users[0][0] = 1;
	} else {
		usage(stderr);
		return 2;
	}
	t0 = t_ref = now_s();
	for (w = 0; w < nw; w++)
		pthread_create(&tid[w], NULL, work, (void *)(intptr_t)w);
	while (now_s() - t0 < secs) {
		usleep(ms * 1000);
		if (phase == 1 && now_s() - t0 >= secs / 3) {
			pthread_mutex_lock(&lock);
			users[0][0] = 0;
			users[1][0] = 1;
			pthread_mutex_unlock(&lock);
			phase = 2;
			t_ref = now_s();
			t90 = -1;
		}
		r = sample();
		printf("sample %.2f %.4f\n", now_s() - t0, r);
		fflush(stdout);
		if (t90 < 0 && r <= 0.10 && phase != 1)
			t90 = now_s() - t_ref;
		if (nr_tl < 8 && now_s() - t0 >= secs * (nr_tl + 1) / 8)
			tl[nr_tl++] = r;
	}
	stop = 1;
	for (w = 0; w < nw; w++)
		pthread_join(tid[w], NULL);
	for (j = 0; j < nr_arr; j++) {
		size_t i;

		for (i = 0; i < arr[j].pages; i++) {
			moves += arr[j].changes[i];
			pages_moved += arr[j].changes[i] > 0;
			twice += arr[j].changes[i] > 1;
			shared_twice += arr[j].shared && arr[j].changes[i] > 1;
		}
	}
	for (w = 0; w < nw; w++)
		done_pages += passes[w];
	printf("result workload=%s remote_end=%.3f moves=%ld pages_moved=%ld moved_twice=%ld shared_moved_twice=%ld t90=%.1f timeline=",
	       wl, r, moves, pages_moved, twice, shared_twice, t90);
	for (j = 0; j < nr_tl; j++)
		printf("%s%.2f", j ? "," : "", tl[j]);
	printf(" pages_per_s=%.0f\n", done_pages / (now_s() - t0));
	return 0;
}
