// SPDX-License-Identifier: GPL-2.0
/*
 * truth-exact: the guest half of the refcnt-truth exactness test.
 *
 *   truth-exact [-p PAGES] [-k LOADS] [-c CALLS] [-s ROUNDS] A:B ... | all
 *
 * For each pair, pinned to a CPU of node A, it makes exactly LOADS loads on
 * each of PAGES pages bound to node B (locked, no THP), inside a truth
 * window (the plugin counts nothing else of this program), and prints one
 * line per page ("all": every node with CPUs x every node with memory):
 *
 *   truth-exact: page 0x<paddr from /proc/self/pagemap> from A refs LOADS
 *
 * The host (tools/testing/truth/truth-check) checks that the truth table
 * has exactly LOADS references from node A, and none from another node,
 * on each of those pages.
 *
 * With -s, for each pair, ROUNDS rounds of rep stosb and rep movsq over
 * other pages of node B, and a line per page:
 *
 *   truth-exact: string page 0x<paddr> from A refs N
 *
 * N a reference per cache line each instruction touched, as hardware's
 * fast strings make them (refcnt-truth counts them so).
 *
 * With -c, it then names cost_probe() to the plugin's cost counter
 * (truth-mark cost, cost.c) and calls it CALLS times in a window:
 *
 *   truth-exact: cost CALLS calls of 4 instructions
 *
 * the summary's cost_calls must be CALLS and cost_window 4 * CALLS.
 */
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TRUTH_MARK_RUN
#include "truth-mark.h"

static long page_size;

/* Four instructions, one block: what the cost counter must count. */
void cost_probe(void);
__asm__(".text\n\t.globl cost_probe\n\t.type cost_probe, @function\n"
	"cost_probe:\n\tnop\n\tnop\n\tnop\n\tret\n\t.size cost_probe, .-cost_probe\n");

static int die(const char *what)
{
	fprintf(stderr, "truth-exact: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int pin_to_node(int node)
{
	struct bitmask *cpus = numa_allocate_cpumask();
	cpu_set_t set;
	unsigned int c;

	if (numa_node_to_cpus(node, cpus))
		die("numa_node_to_cpus");
	for (c = 0; c < cpus->size; c++) {
		if (!numa_bitmask_isbitset(cpus, c))
			continue;
		CPU_ZERO(&set);
		CPU_SET(c, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			die("sched_setaffinity");
		return (int)c;
	}
	fprintf(stderr, "truth-exact: node %d has no CPU\n", node);
	exit(1);
}

static uint64_t paddr_of(int pm, void *va)
{
	uint64_t e;

	if (pread(pm, &e, 8, (uintptr_t)va / page_size * 8) != 8)
		die("pread /proc/self/pagemap");
	if (!(e & (1ULL << 63)) || !(e & ((1ULL << 55) - 1))) {
		fprintf(stderr, "truth-exact: page %p not present or no PFN (root?)\n", va);
		exit(1);
	}
	return (e & ((1ULL << 55) - 1)) * page_size;
}

/* Exactly k loads on each page: one mov each, nothing else touches them. */
static void loads(char **pages, int n, long k)
{
	long i;
	int j;

	truth_mark_start();
	for (i = 0; i < k; i++) {
		for (j = 0; j < n; j++) {
			long x;

			__asm__ volatile("mov (%1), %0" : "=r"(x) : "r"(pages[j]));
		}
	}
	truth_mark_stop();
}

/* N pages on node B, locked, no THP, each checked to be there. */
static char **bound_pages(int b, int n)
{
	unsigned long mask = 1UL << b;
	char **pages = calloc(n, sizeof(*pages)), *buf;
	int j, status;

	buf = mmap(NULL, n * page_size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || !pages)
		die("mmap");
	if (madvise(buf, n * page_size, MADV_NOHUGEPAGE))
		die("madvise(MADV_NOHUGEPAGE)");
	if (mbind(buf, n * page_size, MPOL_BIND, &mask, sizeof(mask) * 8, 0))
		die("mbind");
	if (mlock(buf, n * page_size))
		die("mlock");
	for (j = 0; j < n; j++) {
		void *p = buf + j * page_size;

		pages[j] = p;
		if (move_pages(0, 1, &p, NULL, &status, 0) || status != b) {
			fprintf(stderr, "truth-exact: page %d is on node %d, not %d\n",
				j, status, b);
			exit(1);
		}
	}
	return pages;
}

/*
 * ROUNDS rounds of string instructions on N pages of node B from node A:
 * rep stosb over each destination page, then rep movsq from its source
 * page. Hardware's fast strings make a reference a cache line, and so
 * must the truth: a round is 2 x 64 on a destination page, 64 on a
 * source page (4,096-byte pages).
 */
static void strings(int a, int b, int n, long rounds, int pm)
{
	char **src = bound_pages(b, n), **dst = bound_pages(b, n);
	long lines = page_size / 64, r;
	int j;

	pin_to_node(a);
	truth_mark_start();
	for (r = 0; r < rounds; r++) {
		for (j = 0; j < n; j++) {
			void *d = dst[j];
			const void *sp = src[j];
			size_t c = page_size;

			__asm__ volatile("rep stosb" : "+D"(d), "+c"(c)
					 : "a"(0) : "memory");
			d = dst[j];
			c = page_size / 8;
			__asm__ volatile("rep movsq" : "+D"(d), "+S"(sp), "+c"(c)
					 : : "memory");
		}
	}
	truth_mark_stop();
	for (j = 0; j < n; j++) {
		printf("truth-exact: string page 0x%llx from %d refs %ld\n",
		       (unsigned long long)paddr_of(pm, dst[j]), a, 2 * lines * rounds);
		printf("truth-exact: string page 0x%llx from %d refs %ld\n",
		       (unsigned long long)paddr_of(pm, src[j]), a, lines * rounds);
	}
	fflush(stdout);
}

static void run(int a, int b, int n, long k, long rounds, int pm)
{
	char **pages;
	int j, cpu;

	cpu = pin_to_node(a);
	pages = bound_pages(b, n);
	loads(pages, n, k);
	for (j = 0; j < n; j++)
		printf("truth-exact: page 0x%llx from %d refs %ld\n",
		       (unsigned long long)paddr_of(pm, pages[j]), a, k);
	printf("truth-exact: %d pages on node %d, %ld loads each from cpu %d (node %d)\n",
	       n, b, k, cpu, a);
	fflush(stdout);
	if (rounds)
		strings(a, b, n, rounds, pm);
}

/* CALLS calls of cost_probe() in a window, counted as a feed's cost. */
static void cost_calls(long calls)
{
	uintptr_t f = (uintptr_t)cost_probe;
	long i;

	if (f >> 32 || !f) {
		fprintf(stderr, "truth-exact: cost_probe at %#lx, not below 4 GiB\n",
			(unsigned long)f);
		exit(1);
	}
	if (truth_mark_run(TRUTH_COST_USER_SIB, 0) ||
	    truth_mark_run(TRUTH_COST_USER_SIB, (uint32_t)f))
		exit(1);
	truth_mark_start();
	for (i = 0; i < calls; i++)
		cost_probe();
	truth_mark_stop();
	truth_mark_run(TRUTH_COST_USER_SIB, 0);
	printf("truth-exact: cost %ld calls of 4 instructions\n", calls);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int n = 64, o, pm, a, b;
	long k = 1000, calls = 0, rounds = 0;

	page_size = sysconf(_SC_PAGESIZE);
	while ((o = getopt(argc, argv, "p:k:c:s:")) != -1) {
		if (o == 'p')
			n = atoi(optarg);
		else if (o == 'k')
			k = atol(optarg);
		else if (o == 'c')
			calls = atol(optarg);
		else if (o == 's')
			rounds = atol(optarg);
		else
			return 2;
	}
	if (numa_available() < 0 || optind >= argc || n <= 0 || k <= 0 ||
	    calls < 0 || rounds < 0) {
		fprintf(stderr, "usage: truth-exact [-p PAGES] [-k LOADS] [-c CALLS] [-s ROUNDS] A:B ...\n");
		return 2;
	}
	pm = open("/proc/self/pagemap", O_RDONLY);
	if (pm < 0)
		die("open /proc/self/pagemap");
	if (!strcmp(argv[optind], "all")) {
		struct bitmask *cpus = numa_allocate_cpumask();

		for (a = 0; a <= numa_max_node(); a++) {
			if (numa_node_to_cpus(a, cpus) || !numa_bitmask_weight(cpus))
				continue;
			for (b = 0; b <= numa_max_node(); b++)
				if (numa_bitmask_isbitset(numa_all_nodes_ptr, b) &&
				    numa_node_size64(b, NULL) > 0)
					run(a, b, n, k, rounds, pm);
		}
	} else {
		for (; optind < argc; optind++) {
			if (sscanf(argv[optind], "%d:%d", &a, &b) != 2)
				return 2;
			run(a, b, n, k, rounds, pm);
		}
	}
	if (calls)
		cost_calls(calls);
	return 0;
}
