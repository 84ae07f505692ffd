// SPDX-License-Identifier: GPL-2.0
/*
 * trace-pattern: the guest half of the trace test (trace-check). Two
 * threads, one pinned to a CPU of node A, one to a CPU of node B, make a
 * known number of loads and stores of known sizes and register kinds on
 * page X (bound to A) and page Y (bound to B), with markers between:
 *
 *   main (on A):  start (marker 4 0)                       ... stop (3 0)
 *   thread a (A): marker 0 101; K stores of 8 bytes at X; K loads of 4 at
 *                 X+8; K float loads of 8 at X+16 (movsd); marker 1 102
 *                 (stop this vCPU); K loads at X+24, not traced; marker 2
 *                 103 (resume); K stores of 1 byte at Y
 *   thread b (B): K loads of 8 at X; K stores of 2 at Y+32; marker 0 201
 *
 * Thread b starts after thread a has ended, so the order of every record
 * is known. Prints "trace-pattern: X VADDR PADDR Y VADDR PADDR K A B ns NS",
 * NS the window's duration (tools/testing/trace/trace-bench times it).
 */
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "truth-mark.h"

static long k = 1000;
static char *x, *y;
static int node_a, node_b;

static void die(const char *what)
{
	fprintf(stderr, "trace-pattern: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void pin(int node)
{
	struct bitmask *cpus = numa_allocate_cpumask();
	unsigned int c;
	cpu_set_t set;

	if (numa_node_to_cpus(node, cpus))
		die("numa_node_to_cpus");
	for (c = 0; c < cpus->size; c++)
		if (numa_bitmask_isbitset(cpus, c))
			break;
	if (c == cpus->size) {
		fprintf(stderr, "trace-pattern: node %d has no CPU\n", node);
		exit(1);
	}
	CPU_ZERO(&set);
	CPU_SET(c, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

static char *page_on(int node)
{
	unsigned long mask = 1UL << node;
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	if (madvise(p, 4096, MADV_NOHUGEPAGE) ||
	    mbind(p, 4096, MPOL_BIND, &mask, sizeof(mask) * 8, 0) || mlock(p, 4096))
		die("mbind/mlock");
	return p;
}

static uint64_t paddr_of(void *va)
{
	int pm = open("/proc/self/pagemap", O_RDONLY);
	uint64_t e;

	if (pm < 0 || pread(pm, &e, 8, (uintptr_t)va / 4096 * 8) != 8)
		die("/proc/self/pagemap");
	close(pm);
	return (e & ((1ULL << 55) - 1)) * 4096;
}

/* Each access one instruction; the loop counter stays in a register. */
static void *thread_a(void *arg)
{
	long i, v = 0;
	double d;

	(void)arg;
	pin(node_a);
	TRUTH_MARKER(0, 101);
	for (i = 0; i < k; i++)
		__asm__ volatile("movq %1, (%0)" :: "r"(x), "r"(i) : "memory");
	for (i = 0; i < k; i++)
		__asm__ volatile("movl 8(%1), %k0" : "=r"(v) : "r"(x) : "memory");
	for (i = 0; i < k; i++)
		__asm__ volatile("movsd 16(%1), %0" : "=x"(d) : "r"(x) : "memory");
	TRUTH_MARKER(1, 102);
	for (i = 0; i < k; i++)
		__asm__ volatile("movq 24(%1), %0" : "=r"(v) : "r"(x) : "memory");
	TRUTH_MARKER(2, 103);
	for (i = 0; i < k; i++)
		__asm__ volatile("movb %b1, (%0)" :: "r"(y), "r"(i) : "memory");
	return NULL;
}

static void *thread_b(void *arg)
{
	long i, v;

	(void)arg;
	pin(node_b);
	for (i = 0; i < k; i++)
		__asm__ volatile("movq (%1), %0" : "=r"(v) : "r"(x) : "memory");
	for (i = 0; i < k; i++)
		__asm__ volatile("movw %w1, 32(%0)" :: "r"(y), "r"(i) : "memory");
	TRUTH_MARKER(0, 201);
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	uint64_t t0;
	pthread_t t;

	if (argc != 4 || numa_available() < 0) {
		fprintf(stderr, "usage: trace-pattern K NODE_A NODE_B\n");
		return 2;
	}
	k = atol(argv[1]);
	node_a = atoi(argv[2]);
	node_b = atoi(argv[3]);
	pin(node_a);
	x = page_on(node_a);
	y = page_on(node_b);
	memset(x, 0, 4096);
	memset(y, 0, 4096);
	t0 = now_ns();
	truth_mark_start();
	if (pthread_create(&t, NULL, thread_a, NULL) || pthread_join(t, NULL))
		die("thread a");
	if (pthread_create(&t, NULL, thread_b, NULL) || pthread_join(t, NULL))
		die("thread b");
	truth_mark_stop();
	t0 = now_ns() - t0;
	printf("trace-pattern: X 0x%llx 0x%llx Y 0x%llx 0x%llx %ld %d %d ns %llu\n",
	       (unsigned long long)(uintptr_t)x, (unsigned long long)paddr_of(x),
	       (unsigned long long)(uintptr_t)y, (unsigned long long)paddr_of(y),
	       k, node_a, node_b, (unsigned long long)t0);
	return 0;
}
