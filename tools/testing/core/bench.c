// SPDX-License-Identifier: GPL-2.0
/*
 * bench: refcnt_reference() at native speed, against a bare atomic
 * increment loop over a table of the same size (the hardware counters'
 * size), like the test module (tools/testing/kmod/refcnt_test.c) does in
 * the guests: the same odd stride over the sets, one reference each. On
 * one thread, and on N threads each over its own sets (distinct cache
 * lines: scaling, not contention).
 * Each figure is the best of --repeat runs. A benchmark: it prints goals,
 * it asserts nothing.
 *
 * Usage: bench [--refs N] [--repeat R] [--threads T]
 *        bench --only entry|atomic --threads T [--refs N]  (for perf stat)
 */
#include <getopt.h>
#include <sys/mman.h>
#include <unistd.h>
#include <uapi/linux/refcnt.h>

#include "machine.h"

#define GiB		(1ULL << 30)
#define STRIDE		4099		/* refcnt_test.c's REFCNT_TEST_STRIDE */

static const struct core_spec spec = {
	.nr_online = 4,
	.nr_ranges = 4,
	.ram = {
		{ 0, 1 * GiB, 0 }, { 1 * GiB, 2 * GiB, 1 },
		{ 2 * GiB, 3 * GiB, 2 }, { 3 * GiB, 4 * GiB, 3 },
	},
	.prealloc = true,	/* no allocation in the timed loops */
};

static u64 bench_sets;	/* sets visited: all of node 0, or --sets */

struct job {
	pthread_t t;
	bool entry;
	unsigned int src;
	u64 first, sets, nr;	/* sets [first, first + sets) of node 0 */
	u32 *table;
	pthread_barrier_t *go;
};

static void *job_main(void *arg)
{
	struct job *j = arg;
	unsigned int cps = refcnt_topo.counters_per_set;
	unsigned int shift = refcnt_cfg.granularity_shift;
	u64 base = core_nodes[0]->slots[0].base, i, idx = 0;

	pthread_barrier_wait(j->go);
	if (j->entry) {
		for (i = 0; i < j->nr; i++) {
			refcnt_reference(base + ((j->first + idx) << shift),
					 j->src, 1, NULL);
			idx += STRIDE;
			if (idx >= j->sets)
				idx %= j->sets;
		}
	} else {
		for (i = 0; i < j->nr; i++) {
			__atomic_fetch_add(&j->table[(j->first + idx) * cps + j->src],
					   1, __ATOMIC_RELAXED);
			idx += STRIDE;
			if (idx >= j->sets)
				idx %= j->sets;
		}
	}
	return NULL;
}

/* References per second of one run on @nr threads. */
static double run(bool entry, unsigned int nr, u64 refs, u32 *table)
{
	u64 sets = bench_sets, t0, t;
	struct job j[64];
	pthread_barrier_t go;
	unsigned int i;

	pthread_barrier_init(&go, NULL, nr + 1);
	for (i = 0; i < nr; i++) {
		j[i] = (struct job){
			.entry = entry, .src = i % refcnt_topo.nr_cnodes,
			.first = sets / nr * i, .sets = sets / nr, .nr = refs,
			.table = table, .go = &go,
		};
		pthread_create(&j[i].t, NULL, job_main, &j[i]);
	}
	pthread_barrier_wait(&go);
	t0 = ktime_get_ns();
	for (i = 0; i < nr; i++)
		pthread_join(j[i].t, NULL);
	t = ktime_get_ns() - t0;
	pthread_barrier_destroy(&go);
	/* Keep the interrupts' work out of the next run's time. */
	shim_run_pending();
	return (double)refs * nr * 1e9 / t;
}

/* Best of @repeat runs each, alternated: both see the same machine load. */
static void best(unsigned int nr, u64 refs, unsigned int repeat, u32 *table,
		 double *entry, double *atomic)
{
	*entry = *atomic = 0;
	while (repeat--) {
		double e = run(true, nr, refs, table);
		double a = run(false, nr, refs, table);

		*entry = e > *entry ? e : *entry;
		*atomic = a > *atomic ? a : *atomic;
	}
}

static struct {
	u64 refs;
	unsigned int repeat, threads;
	const char *only;	/* "entry" or "atomic": one run, no table */
} opt = { .refs = 20000000, .repeat = 5 };

/* The options into opt and bench_sets: -1 to go on, else the exit status. */
static int parse_options(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "refs", required_argument, NULL, 'n' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "threads", required_argument, NULL, 't' },
		{ "only", required_argument, NULL, 'o' },
		{ "sets", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int c;

	opt.threads = ncpu < 1 ? 1 : ncpu > 64 ? 64 : ncpu;
	while ((c = getopt_long(argc, argv, "n:r:t:o:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': opt.refs = strtoull(optarg, NULL, 0); break;
		case 'r': opt.repeat = atoi(optarg); break;
		case 't': opt.threads = atoi(optarg); break;
		case 'o': opt.only = optarg; break;
		case 's': bench_sets = strtoull(optarg, NULL, 0); break;
		default:
			printf("usage: %s [--refs N] [--repeat R] [--threads T] [--sets S] [--only entry|atomic]\n",
			       argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (!opt.refs || !opt.repeat || opt.threads < 1 || opt.threads > 64 ||
	    (opt.only && strcmp(opt.only, "entry") &&
	     strcmp(opt.only, "atomic"))) {
		fprintf(stderr, "bench: bad arguments (--help)\n");
		return 2;
	}
	return -1;
}

/* The table: one row on one thread, one on every thread. */
static void print_table(u32 *table)
{
	unsigned int rows[2] = { 1, opt.threads }, k;

	printf("native core (tools/testing/core): node 0 of 4, %llu sets x %u counters, stride %d, best of %u, %llu refs per thread\n",
	       (unsigned long long)bench_sets, refcnt_topo.counters_per_set,
	       STRIDE, opt.repeat, (unsigned long long)opt.refs);
	printf("%-10s %16s %16s %8s\n", "threads", "entry refs/s",
	       "atomic refs/s", "ratio");
	for (k = 0; k < 2; k++) {
		double e, a;

		if (k && rows[1] == 1)
			break;
		/* Warm both tables (page faults, caches) first. */
		run(true, rows[k], opt.refs / 4, table);
		run(false, rows[k], opt.refs / 4, table);
		best(rows[k], opt.refs, opt.repeat, table, &e, &a);
		printf("%-10u %16.0f %16.0f %8.2f\n", rows[k], e, a, e / a);
	}
	printf("goal: ratio >= 0.50 on one thread; the %u-thread rows scale with threads (distinct sets)\n",
	       rows[1]);
}

int main(int argc, char **argv)
{
	int rc = parse_options(argc, argv);
	u64 words;
	u32 *table;

	if (rc >= 0)
		return rc;
	/* Counter pages and the atomic table alike on huge pages. */
	if (shim_direct_map(64ULL << 20)) {
		fprintf(stderr, "bench: cannot map 64 MiB for counter pages\n");
		return 1;
	}
	if (core_boot(&spec)) {
		fprintf(stderr, "bench: cannot boot the fake machine\n");
		return 1;
	}
	shim_worker_start();
	if (!bench_sets || bench_sets > core_nodes[0]->nr_sets)
		bench_sets = core_nodes[0]->nr_sets;
	words = core_nodes[0]->nr_sets * refcnt_topo.counters_per_set;
	table = aligned_alloc(2 << 20, ALIGN(words * sizeof(*table), 2 << 20));
	madvise(table, words * sizeof(*table), MADV_HUGEPAGE);
	memset(table, 0, words * sizeof(*table));
	if (opt.only)
		run(!strcmp(opt.only, "entry"), opt.threads, opt.refs, table);
	else
		print_table(table);
	shim_worker_stop();
	free(table);
	core_halt();
	return 0;
}
