// SPDX-License-Identifier: GPL-2.0
/*
 * access-patterns: small NUMA workloads whose access patterns are hard in
 * different ways for a sampled feed, for `make accuracy` (the truth from
 * the emulator scores each feed on each of them).
 *
 *   stream   each worker streams over its own array; the worker of the first
 *            node with CPUs and memory (H) also streams over "stream_misplaced",
 *            bound to another node B
 *   skewed   every worker reads random lines of "skewed_shared" (interleaved)
 *            with a skewed distribution (page i with probability ~ i^-2/3);
 *            H also reads "skewed_misplaced" on B that way
 *   phase    "phase" is first touched and used by H for the first third of
 *            the run, then only by the worker of another node X for the rest:
 *            most references come from X, while its pages stay on H
 *
 * One worker thread is pinned to each node with CPUs.  Arrays are separate
 * mappings without huge pages.  -l FILE writes "array NAME 0xSTART-0xEND"
 * lines (refcnt-run --labels); -P FILE writes "NAME 0xPADDR" for every page
 * of every array at the end (from /proc/self/pagemap, root only), for
 * refcnt-compare --regions.
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

#define MAX_W		64
#define LINE		64

struct array {
	char name[32];
	volatile uint64_t *p;
	size_t len;
};

struct worker {
	pthread_t tid;
	int node;
	int idx;
	struct array own;
	unsigned long passes;
};

static struct array arrays[MAX_W + 4];
static int nr_arrays;
static struct worker w[MAX_W];
static int nw, pattern, H = -1, B = -1, X = -1;
static size_t page;
static volatile int stop, phase2;
static struct array *misplaced, *shared, *phased;

static void die(const char *what)
{
	fprintf(stderr, "access-patterns: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* A mapping of its own, no THP, bound to node (or interleaved if < 0). */
static struct array *new_array(const char *name, size_t len, int node)
{
	struct array *a = &arrays[nr_arrays++];
	unsigned long mask = 0;
	int i;

	snprintf(a->name, sizeof(a->name), "%s", name);
	a->len = len;
	a->p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a->p == MAP_FAILED)
		die("mmap");
	madvise((void *)a->p, len, MADV_NOHUGEPAGE);
	if (node >= 0) {
		mask = 1UL << node;
		if (mbind((void *)a->p, len, MPOL_BIND, &mask, 64, 0))
			die("mbind");
	} else if (node == -1) {
		for (i = 0; i <= numa_max_node(); i++)
			if (numa_node_size64(i, NULL) > 0)
				mask |= 1UL << i;
		if (mbind((void *)a->p, len, MPOL_INTERLEAVE, &mask, 64, 0))
			die("mbind");
	}
	return a;
}

static void touch(struct array *a)
{
	size_t i;

	for (i = 0; i < a->len / 8; i += page / 8)
		a->p[i] = i;
}

static uint64_t stream(struct array *a)
{
	uint64_t s = 0;
	size_t i;

	for (i = 0; i < a->len / 8 && !stop; i += LINE / 8)
		s += a->p[i];
	return s;
}

/* 4096 skewed reads: line index ~ n * u^3, so low pages are the hottest. */
static uint64_t skewed(struct array *a, unsigned int *seed)
{
	size_t lines = a->len / LINE;
	uint64_t s = 0;
	int i;

	for (i = 0; i < 4096; i++) {
		double u = (double)rand_r(seed) / RAND_MAX;

		s += a->p[(size_t)(u * u * u * (lines - 1)) * (LINE / 8)];
	}
	return s;
}

static void *work(void *arg)
{
	struct worker *me = arg;
	unsigned int seed = me->idx + 1;
	volatile uint64_t sink = 0;

	numa_run_on_node(me->node);
	if (pattern == 'p' && me->node == H)
		touch(phased);
	touch(&me->own);
	while (!stop) {
		switch (pattern) {
		case 's':
			sink += stream(&me->own);
			if (me->node == H)
				sink += stream(misplaced);
			break;
		case 'k':
			sink += skewed(shared, &seed);
			if (me->node == H)
				sink += skewed(misplaced, &seed);
			break;
		case 'p':
			sink += stream(&me->own);
			if ((!phase2 && me->node == H) || (phase2 && me->node == X))
				sink += stream(phased);
			break;
		}
		me->passes++;
	}
	return NULL;
}

static void print_array(FILE *f, const struct array *a)
{
	fprintf(f, "array %s 0x%lx-0x%lx\n", a->name, (unsigned long)a->p,
		(unsigned long)a->p + a->len);
}

/* "NAME 0xPADDR" for each present page of each array. */
static void write_pagemap(const char *path)
{
	FILE *f = fopen(path, "w");
	int fd = open("/proc/self/pagemap", O_RDONLY), i;
	size_t o;

	if (!f || fd < 0)
		die(path);
	for (i = 0; i < nr_arrays; i++) {
		for (o = 0; o < arrays[i].len; o += page) {
			uint64_t e, va = (uintptr_t)arrays[i].p + o;

			if (pread(fd, &e, 8, va / page * 8) != 8)
				die("pread /proc/self/pagemap");
			if ((e >> 63) && (e & ((1ULL << 55) - 1)))
				fprintf(f, "%s 0x%llx\n", arrays[i].name,
					(unsigned long long)(e & ((1ULL << 55) - 1)) * page);
		}
	}
	close(fd);
	if (fclose(f))
		die(path);
}

static void pick_nodes(void)
{
	struct bitmask *cpus = numa_allocate_cpumask();
	int n, max = numa_max_node();

	for (n = 0; n <= max && nw < MAX_W; n++) {
		if (numa_node_to_cpus(n, cpus) || !numa_bitmask_weight(cpus))
			continue;
		w[nw].node = n;
		w[nw].idx = nw;
		nw++;
		if (H < 0 && numa_node_size64(n, NULL) > 0)
			H = n;
	}
	if (H < 0)
		H = w[0].node;
	for (n = 0; n < nw; n++)
		if (w[n].node != H && (X < 0 || numa_node_size64(w[n].node, NULL) > 0))
			X = w[n].node;
	/* B: memory, not H; a node without CPUs if there is one. */
	for (n = 0; n <= max; n++) {
		if (n == H || numa_node_size64(n, NULL) <= 0)
			continue;
		if (numa_node_to_cpus(n, cpus) == 0 && !numa_bitmask_weight(cpus)) {
			B = n;
			break;
		}
		if (B < 0)
			B = n;
	}
	if (B < 0)
		B = H;
	if (X < 0)
		X = H;
}

static struct {
	const char *labels, *pagemap;
	double seconds;
	size_t kib;
} opt = { .seconds = 2, .kib = 2048 };

static void usage(FILE *f)
{
	fprintf(f, "Usage: access-patterns -p stream|skewed|phase [-s SECONDS] [-k KIB]\n"
		"                       [-l LABELS] [-P PAGEMAP]\n");
}

/* "stream", "skewed" or "phase" as its pattern letter; 0 if none. */
static int pattern_of(const char *name)
{
	if (!strcmp(name, "stream"))
		return 's';
	if (!strcmp(name, "skewed"))
		return 'k';
	if (!strcmp(name, "phase"))
		return 'p';
	return 0;
}

/* The options into opt and pattern: -1 to go on, else the exit status. */
static int parse_options(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pattern", required_argument, NULL, 'p' },
		{ "seconds", required_argument, NULL, 's' },
		{ "kib", required_argument, NULL, 'k' },
		{ "labels", required_argument, NULL, 'l' },
		{ "pagemap", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char *end = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "p:s:k:l:P:h", opts, NULL)) != -1) {
		if (c == 'p' && !(pattern = pattern_of(optarg)))
			goto bad_arg;
		if (c == 's' && ((opt.seconds = strtod(optarg, &end)) <= 0 ||
				 opt.seconds > 3600 || *end))
			goto bad_arg;
		if (c == 'k' && ((opt.kib = strtoul(optarg, &end, 0)) < 64 ||
				 opt.kib > (1UL << 22) || *end))
			goto bad_arg;
		if (c == 'l')
			opt.labels = optarg;
		if (c == 'P')
			opt.pagemap = optarg;
		if (c == 'h' || c == '?') {
			usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	if (pattern && optind == argc)
		return -1;
	fprintf(stderr, "access-patterns: %s\n", pattern ?
		"unexpected argument" : "-p stream|skewed|phase is required");
	return 2;
bad_arg:
	fprintf(stderr, "access-patterns: bad value '%s' for -%c\n", optarg, c);
	return 2;
}

/* Each worker's own array, and the pattern's arrays. */
static void make_arrays(void)
{
	size_t kib = opt.kib;
	int i;

	for (i = 0; i < nw; i++) {
		char name[32];

		snprintf(name, sizeof(name), "own_n%d", w[i].node);
		w[i].own = *new_array(name, kib * 256, -2);
	}
	if (pattern == 's')
		misplaced = new_array("stream_misplaced", kib * 1024, B);
	if (pattern == 'k') {
		shared = new_array("skewed_shared", kib * 2048, -1);
		misplaced = new_array("skewed_misplaced", kib * 1024, B);
		touch(shared);
	}
	if (pattern == 'p')
		phased = new_array("phase", kib * 1024, -2);
	if (misplaced)
		touch(misplaced);
}

/* The arrays on stdout and in -l FILE. */
static void announce(const char *name)
{
	FILE *f;
	int i;

	printf("access-patterns: %s, workers on %d nodes, H=%d B=%d X=%d\n",
	       name, nw, H, B, X);
	for (i = 0; i < nr_arrays; i++)
		print_array(stdout, &arrays[i]);
	if (opt.labels) {
		f = fopen(opt.labels, "w");
		if (!f)
			die(opt.labels);
		for (i = 0; i < nr_arrays; i++)
			print_array(f, &arrays[i]);
		if (fclose(f))
			die(opt.labels);
	}
	fflush(stdout);
}

static void sleep_for(double seconds)
{
	struct timespec ts;

	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* The workers run a third of the time, phase 2 starts, then the rest. */
static void run_workers(void)
{
	int i;

	for (i = 0; i < nw; i++)
		if (pthread_create(&w[i].tid, NULL, work, &w[i]))
			die("pthread_create");
	sleep_for(opt.seconds / 3);
	phase2 = 1;
	sleep_for(2 * opt.seconds / 3);
	stop = 1;
	for (i = 0; i < nw; i++) {
		pthread_join(w[i].tid, NULL);
		printf("access-patterns: worker on node %d: %lu passes\n",
		       w[i].node, w[i].passes);
	}
}

int main(int argc, char **argv)
{
	const char *names[] = { ['s'] = "stream", ['k'] = "skewed", ['p'] = "phase" };
	int rc = parse_options(argc, argv);

	if (rc >= 0)
		return rc;
	if (numa_available() < 0) {
		fprintf(stderr, "access-patterns: no NUMA support in this kernel (numa_available)\n");
		return 1;
	}
	page = sysconf(_SC_PAGESIZE);
	pick_nodes();
	make_arrays();
	announce(names[pattern]);
	run_workers();
	if (opt.pagemap)
		write_pagemap(opt.pagemap);
	return 0;
}
