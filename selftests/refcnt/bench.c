// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt bench: references per second through the reference entry point,
 * against a bare atomic-increment loop over a table of the same size
 * (the test module's REFCNT_TEST_BENCH, /dev/refcnt-test, loaded from
 * REFCNT_TEST_KO if need be), on one CPU and on every online CPU at once.
 *
 *   bench [-n NR_REFS] [-r REPEAT] [NODE...]
 *
 * For each node device (default: all), as root:
 *   1 CPU:    the calling thread pinned to one CPU (the node's first CPU
 *             if it has one, else the first online CPU) times the node's
 *             largest slot.
 *   all CPUs: one thread pinned to each online CPU does the same at the
 *             same time; rate = total references / the slowest thread's
 *             time, for the entry point and the bare loop alike.
 * Each figure is the best of REPEAT runs (default 3): emulated guests on a
 * shared host are noisy. The ratio is entry-point rate / bare-atomic rate
 * (goal: >= 0.5 on one CPU). The node's counters are reset afterwards.
 *
 * The table is framed by "=== refcnt bench ===" and "=== end ===" lines so
 * that tools/testing/refcnt-bench can pick it out of a guest's console.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <linux/refcnt.h>
#include <linux/refcnt_test.h>

#define MAX_CPUS	1024

struct worker {
	int fd;
	int cpu;
	const struct refcnt_test_bench *arg;
	pthread_barrier_t *start;
	struct refcnt_test_bench b;
	int err;
};

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

static int bench(int fd, const struct refcnt_test_bench *arg,
		 struct refcnt_test_bench *b)
{
	*b = *arg;
	return ioctl(fd, REFCNT_TEST_BENCH, b) ? -errno : 0;
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;

	w->err = pin(w->cpu);
	pthread_barrier_wait(w->start);
	if (!w->err)
		w->err = bench(w->fd, w->arg, &w->b);
	return NULL;
}

/* The test module's device, loaded from REFCNT_TEST_KO if need be. */
static int test_open(void)
{
	const char *ko = getenv("REFCNT_TEST_KO");
	int fd = open("/dev/refcnt-test", O_RDWR | O_CLOEXEC), kfd, i;

	if (fd >= 0 || errno != ENOENT || !ko)
		return fd;
	kfd = open(ko, O_RDONLY | O_CLOEXEC);
	if (kfd < 0)
		return -1;
	if (syscall(SYS_finit_module, kfd, "", 0) && errno != EEXIST) {
		close(kfd);
		return -1;
	}
	close(kfd);
	for (i = 0; i < 100 && fd < 0; i++) {
		usleep(10000);
		fd = open("/dev/refcnt-test", O_RDWR | O_CLOEXEC);
	}
	return fd;
}

/* The benchmark of node @fd's largest slot: 0 or -errno. */
static int bench_arg(int fd, uint64_t nr, struct refcnt_test_bench *b)
{
	struct rcb_slot slots[64];
	struct rcb_slot_query q = { .slots = (uintptr_t)slots, .num_slots = 64 };
	struct rcb_info info;
	unsigned int i, big = 0;

	if (ioctl(fd, RCB_INFO_GET, &info) || ioctl(fd, RCB_SLOT_QUERY, &q))
		return -errno;
	for (i = 1; i < q.num_slots && i < 64; i++)
		if (slots[i].size > slots[big].size)
			big = i;
	memset(b, 0, sizeof(*b));
	b->paddr = slots[big].base;
	b->nr_sets = slots[big].size / info.rcb_granularity;
	b->table_sets = info.rcb_sw_sets;
	b->nr_refs = nr;
	b->granularity = info.rcb_granularity;
	b->counters_per_set = info.rcb_sw_counters_per_set;
	return 0;
}

/* Online CPUs we may run on, ascending. */
static int online_cpus(int *cpus)
{
	cpu_set_t set;
	int i, n = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -errno;
	for (i = 0; i < CPU_SETSIZE && n < MAX_CPUS; i++)
		if (CPU_ISSET(i, &set))
			cpus[n++] = i;
	return n;
}

/* First CPU of a node, or -1 if it has none. */
static int node_first_cpu(int nid)
{
	char path[128], buf[256];
	FILE *f;
	int cpu = -1;

	snprintf(path, sizeof(path),
		 "/sys/devices/system/node/node%d/cpulist", nid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f) && buf[0] >= '0' && buf[0] <= '9')
		cpu = atoi(buf);
	fclose(f);
	return cpu;
}

static int node_ids(int *ids, int max)
{
	char buf[4096], *s = buf;
	FILE *f = fopen("/sys/devices/system/node/has_memory", "re");
	int n = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	while (*s && *s != '\n' && n < max) {
		char *end;
		long a = strtol(s, &end, 10), b = a;

		if (end == s)
			return -EINVAL;
		s = end;
		if (*s == '-')
			b = strtol(s + 1, &s, 10);
		for (; a <= b && n < max; a++)
			ids[n++] = a;
		if (*s == ',')
			s++;
	}
	return n;
}

static double mrate(uint64_t refs, uint64_t ns)
{
	return ns ? refs * 1e3 / ns : 0;
}

static void row(int nid, int ncpu, uint64_t refs, uint64_t entry_ns,
		uint64_t atomic_ns)
{
	printf("%5d %5d %14.2f %15.2f %7.2f\n", nid, ncpu,
	       mrate(refs, entry_ns), mrate(refs, atomic_ns),
	       entry_ns ? (double)atomic_ns / entry_ns : 0);
}

static int run_node(int tfd, int nid, uint64_t nr, int repeat, const int *cpus,
		    int ncpus)
{
	struct worker *w = calloc(ncpus, sizeof(*w));
	pthread_t *t = calloc(ncpus, sizeof(*t));
	uint64_t e1 = UINT64_MAX, a1 = UINT64_MAX;
	uint64_t eall = UINT64_MAX, aall = UINT64_MAX;
	struct refcnt_test_bench arg, b;
	pthread_barrier_t start;
	char path[64];
	int fd, cpu, i, r, err = 0;

	if (!w || !t)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/dev/refcnt/node%d", nid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "bench: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	if (ioctl(fd, RCB_RESET)) {
		err = -errno;
		fprintf(stderr, "bench: node%d: RCB_RESET: %s\n", nid, strerror(errno));
		goto out;
	}
	err = bench_arg(fd, nr, &arg);
	if (err) {
		fprintf(stderr, "bench: node%d: its slots: %s\n", nid, strerror(-err));
		goto out;
	}
	cpu = cpus[0];
	for (i = 0; i < ncpus; i++)
		if (cpus[i] == node_first_cpu(nid))
			cpu = cpus[i];
	pthread_barrier_init(&start, NULL, ncpus);

	for (r = 0; r < repeat && !err; r++) {
		uint64_t emax = 0, amax = 0;

		/* One CPU. */
		err = pin(cpu);
		if (!err)
			err = bench(tfd, &arg, &b);
		if (err) {
			fprintf(stderr, "bench: node%d: REFCNT_TEST_BENCH on CPU %d: %s\n",
				nid, cpu, strerror(-err));
			break;
		}
		if (b.entry_ns < e1)
			e1 = b.entry_ns;
		if (b.atomic_ns < a1)
			a1 = b.atomic_ns;

		/* Every CPU at once. */
		for (i = 0; i < ncpus; i++) {
			w[i] = (struct worker){ .fd = tfd, .cpu = cpus[i],
						.arg = &arg, .start = &start };
			if (pthread_create(&t[i], NULL, worker_fn, &w[i])) {
				fprintf(stderr, "bench: cannot start threads\n");
				exit(1);
			}
		}
		for (i = 0; i < ncpus; i++) {
			pthread_join(t[i], NULL);
			if (w[i].err && !err) {
				err = w[i].err;
				fprintf(stderr, "bench: node%d: REFCNT_TEST_BENCH on CPU %d: %s\n",
					nid, w[i].cpu, strerror(-err));
			}
			if (w[i].b.entry_ns > emax)
				emax = w[i].b.entry_ns;
			if (w[i].b.atomic_ns > amax)
				amax = w[i].b.atomic_ns;
		}
		if (emax < eall)
			eall = emax;
		if (amax < aall)
			aall = amax;
	}
	pthread_barrier_destroy(&start);
	if (!err) {
		row(nid, 1, nr, e1, a1);
		row(nid, ncpus, nr * ncpus, eall, aall);
	}
out:
	if (ioctl(fd, RCB_RESET) && !err)
		err = -errno;
	close(fd);
	free(w);
	free(t);
	return err;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench [-n NR_REFS] [-r REPEAT] [NODE...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static int cpus[MAX_CPUS], nodes[4096];
	uint64_t nr = 2000000;
	int ncpus, nnodes, i, opt, repeat = 3, ret = 0, tfd;
	struct utsname u;

	while ((opt = getopt(argc, argv, "n:r:h")) != -1) {
		switch (opt) {
		case 'n':
			nr = strtoull(optarg, NULL, 0);
			if (!nr)
				usage();
			break;
		case 'r':
			repeat = atoi(optarg);
			if (repeat < 1)
				usage();
			break;
		default:
			usage();
		}
	}
	tfd = test_open();
	if (tfd < 0) {
		fprintf(stderr, "bench: /dev/refcnt-test: %s (the test module: set REFCNT_TEST_KO)\n",
			strerror(errno));
		return 1;
	}
	ncpus = online_cpus(cpus);
	if (ncpus <= 0) {
		fprintf(stderr, "bench: no CPU to run on\n");
		return 1;
	}
	if (optind < argc) {
		nnodes = 0;
		for (i = optind; i < argc && nnodes < 4096; i++)
			nodes[nnodes++] = atoi(argv[i]);
	} else {
		nnodes = node_ids(nodes, 4096);
		if (nnodes <= 0) {
			fprintf(stderr, "bench: no node with memory\n");
			return 1;
		}
	}
	uname(&u);
	printf("=== refcnt bench ===\n");
	printf("# Linux %s %s, %d online CPUs, %llu references per CPU per run, best of %d\n",
	       u.release, u.machine, ncpus, (unsigned long long)nr, repeat);
	printf("# Mref/s = millions of references per second; ratio = entry / atomic\n");
	printf("%5s %5s %14s %15s %7s\n", "node", "cpus", "entry Mref/s",
	       "atomic Mref/s", "ratio");
	fflush(stdout);
	for (i = 0; i < nnodes; i++) {
		int err = run_node(tfd, nodes[i], nr, repeat, cpus, ncpus);

		fflush(stdout);
		if (err)
			ret = 1;
	}
	printf("=== end ===\n");
	return ret;
}
