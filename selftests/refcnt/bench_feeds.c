// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt bench_feeds: the costs of the queries and the fault feed,
 * each as a ratio measured in the same run:
 *
 *   range query   RCB_RANGE_QUERY over 1 GiB of mapped memory in 4 KiB
 *                 pages, against reading /proc/self/pagemap for the same
 *                 range (goal: the query takes at most 2x the pagemap
 *                 time), full and packed entries, NUMA balancing off
 *   fault feed    a page-fault-heavy loop with fault_period=1 and =16,
 *                 against the module loaded with the feed off (goals:
 *                 at most 5% and 1% slower)
 *   mmap scan     summing a node's whole mapped extended counter table,
 *                 against memcpy of as many bytes (goal: >= 0.8x)
 *
 *   bench_feeds [-m MIB] [-r REPEAT]     (as root, module loaded)
 *
 * The range query and the fault feed figures are the best of 8 x REPEAT
 * trials, whose kinds take turns in a rotating order, so that a noisy
 * host hurts them alike; the table scan is the best of REPEAT runs.
 * Output is framed by "=== refcnt bench feeds ===" and "=== end ===" for
 * tools/testing/refcnt-bench.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/refcnt.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int set_fault_period(const char *v)
{
	int fd = open("/sys/module/refcnt/parameters/fault_period", O_WRONLY);
	int ok;

	if (fd < 0)
		return -1;
	ok = write(fd, v, strlen(v)) == (ssize_t)strlen(v);
	close(fd);
	return ok ? 0 : -1;
}

#define NUMAB "/proc/sys/kernel/numa_balancing"

/* NUMA balancing's mode, "" when unknown. */
static const char *read_numa_balancing(void)
{
	static char v[16];
	int fd = open(NUMAB, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, v, sizeof(v) - 1);

	if (fd >= 0)
		close(fd);
	v[n > 0 ? n : 0] = 0;
	return v;
}

static void write_numa_balancing(const char *v)
{
	int fd = open(NUMAB, O_WRONLY);

	if (fd >= 0) {
		if (write(fd, v, strlen(v)) < 0)
			perror(NUMAB);
		close(fd);
	}
}

static double best_of(int repeat, double (*fn)(void *), void *arg)
{
	double best = 1e30;
	int i;

	for (i = 0; i < repeat; i++) {
		double t = fn(arg);

		if (t < best)
			best = t;
	}
	return best;
}

/* ---- range query vs pagemap ---- */

struct range_arg {
	int fd;
	char *mem;
	size_t len;
	struct rcb_page_counters *e;
	size_t nr;
	unsigned int flags;	/* RCB_RANGE_PACKED or 0, with EXTENDED */
	uint64_t *pm;
	int pagemap;
};

static double time_range_query(void *a)
{
	struct range_arg *r = a;
	struct rcb_range_query q = {
		.vaddr = (uintptr_t)r->mem, .len = r->len,
		.buf = (uintptr_t)r->e, .buf_entries = r->nr,
		.flags = RCB_RANGE_EXTENDED | r->flags,
	};
	double t0 = now();

	if (ioctl(r->fd, RCB_RANGE_QUERY, &q))
		perror("RCB_RANGE_QUERY");
	return now() - t0;
}

static double time_pagemap(void *a)
{
	struct range_arg *r = a;
	size_t pages = r->len / 4096;
	off_t off = (uintptr_t)r->mem / 4096 * sizeof(uint64_t);
	double t0 = now();

	if (pread(r->pagemap, r->pm, pages * sizeof(uint64_t), off) < 0)
		perror("pagemap");
	return now() - t0;
}

/* ---- fault feed overhead ---- */

/* First touches of @len bytes of fresh anonymous memory, in 4 KiB pages. */
static double time_faults(size_t len)
{
	double t0 = now();
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t off;

	if (p == MAP_FAILED)
		return 1e30;
	madvise(p, len, 15 /* MADV_NOHUGEPAGE */);
	for (off = 0; off < len; off += 4096)
		p[off] = 1;
	munmap(p, len);
	return now() - t0;
}

/* ---- mmap scan vs memcpy ---- */

struct scan_arg {
	const uint32_t *map;
	size_t len;
	char *src, *dst;
	uint64_t sum;
};

static double time_scan(void *a)
{
	struct scan_arg *s = a;
	const uint64_t *w = (const uint64_t *)s->map;
	size_t i, n = s->len / sizeof(*w);
	uint64_t sum = 0;
	double t0 = now();

	for (i = 0; i < n; i++)
		sum += w[i];
	s->sum += sum;
	return now() - t0;
}

static double time_memcpy(void *a)
{
	struct scan_arg *s = a;
	double t0 = now();

	memcpy(s->dst, s->src, s->len);
	return now() - t0;
}

/* One reference into every set of the node, folded: a full table. */
static int fill_table(int fd, const struct rcb_info *info)
{
	struct rcb_slot slots[64];
	struct rcb_slot_query sq = { .slots = (uintptr_t)slots, .num_slots = 64 };
	struct rcb_ref *refs = calloc(RCB_INJECT_MAX, sizeof(*refs));
	unsigned int i, n = 0;
	uint64_t a;

	if (!refs || ioctl(fd, RCB_SLOT_QUERY, &sq))
		return -1;
	for (i = 0; i < sq.num_slots && i < 64; i++) {
		for (a = slots[i].base; a < slots[i].base + slots[i].size;
		     a += info->rcb_granularity) {
			refs[n].paddr = a;
			refs[n].src_cnodeid = info->rcb_cnodeid;
			refs[n].count = info->rcb_abs_threshold;
			if (++n == RCB_INJECT_MAX) {
				struct rcb_inject in = { (uintptr_t)refs, n,
							 RCB_INJECT_SYNC };

				if (ioctl(fd, RCB_INJECT, &in))
					return -1;
				n = 0;
			}
		}
	}
	if (n) {
		struct rcb_inject in = { (uintptr_t)refs, n, RCB_INJECT_SYNC };

		if (ioctl(fd, RCB_INJECT, &in))
			return -1;
	}
	free(refs);
	return 0;
}

int main(int argc, char **argv)
{
	size_t mib = 1024;
	int repeat = 3, c;
	struct rcb_info info;
	int fd;

	while ((c = getopt(argc, argv, "m:r:")) != -1) {
		if (c == 'm')
			mib = strtoul(optarg, NULL, 0);
		else if (c == 'r')
			repeat = atoi(optarg);
		else
			return 2;
	}
	fd = open("/dev/refcnt/node0", O_RDONLY);
	if (fd < 0 || ioctl(fd, RCB_INFO_GET, &info)) {
		perror("/dev/refcnt/node0");
		return 1;
	}
	printf("=== refcnt bench feeds ===\n");

	/*
	 * Range query vs pagemap, NUMA balancing off from before the pages
	 * are written: its scanner makes 256 MiB at a time PROT_NONE, which
	 * stays so until touched, and the query reads those pages on
	 * another path, so figures would depend on when it last ran.
	 */
	{
		struct range_arg r = { .fd = fd, .len = mib << 20 };
		double best[3], tq, tk, tp, t;
		const char *numab;
		int i, k;

		numab = read_numa_balancing();
		write_numa_balancing("0");
		r.nr = r.len / info.rcb_granularity;
		r.mem = mmap(NULL, r.len, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		/* 4 KiB pages: one pagemap entry and one query entry each. */
		if (r.mem != MAP_FAILED) {
			madvise(r.mem, r.len, 15 /* MADV_NOHUGEPAGE */);
			memset(r.mem, 1, r.len);
		}
		r.e = malloc(r.nr * sizeof(*r.e));
		r.pm = malloc(r.len / 4096 * sizeof(uint64_t));
		r.pagemap = open("/proc/self/pagemap", O_RDONLY);
		if (r.mem == MAP_FAILED || !r.e || !r.pm || r.pagemap < 0) {
			perror("range setup");
			if (numab[0])
				write_numa_balancing(numab);
			return 1;
		}
		memset(r.e, 0, r.nr * sizeof(*r.e));
		memset(r.pm, 0, r.len / 4096 * sizeof(uint64_t));
		/* Many trials, the three kinds in a rotating order, best of each. */
		for (k = 0; k < 3; k++)
			best[k] = 1e30;
		for (i = 0; i < repeat * 8; i++) {
			for (k = 0; k < 3; k++) {
				int which = (i + k) % 3;

				r.flags = which == 1 ? RCB_RANGE_PACKED : 0;
				t = which == 2 ? time_pagemap(&r) :
						 time_range_query(&r);
				if (t < best[which])
					best[which] = t;
			}
		}
		tq = best[0];
		tk = best[1];
		tp = best[2];
		printf("range query %zu MiB    %8.1f ms   pagemap %8.1f ms   query/pagemap %.2fx (goal <= 2x)\n",
		       mib, tq * 1e3, tp * 1e3, tq / tp);
		printf("  packed (%u B/entry) %8.1f ms   pagemap %8.1f ms   query/pagemap %.2fx (goal <= 2x)\n",
		       (unsigned int)RCB_PAGE_SET_SIZE(info.rcb_sw_counters_per_set),
		       tk * 1e3, tp * 1e3, tk / tp);
		if (numab[0])
			write_numa_balancing(numab);
		munmap(r.mem, r.len);
		free(r.e);
		free(r.pm);
		close(r.pagemap);
	}

	/*
	 * Fault feed overhead: many short trials (one 16 MiB mapping each),
	 * the settings in turn and in a rotating order, best of each: on a
	 * shared host the fastest of many short runs is the one the
	 * neighbours disturbed least. A period no loop reaches shows what
	 * perf's software-event accounting costs a fault by itself.
	 */
	{
		static const char *const setting[] = { "0", "1", "16", "1048576" };
		enum { NSET = sizeof(setting) / sizeof(setting[0]) };
		size_t len = 16 << 20;
		double best[NSET], t;
		int i, k, trials = repeat * 8;

		for (k = 0; k < NSET; k++)
			best[k] = 1e30;
		for (i = 0; i < trials; i++) {
			for (k = 0; k < NSET; k++) {
				int which = (i + k) % NSET;

				if (set_fault_period(setting[which]))
					break;
				/*
				 * Untimed first: starting and stopping the
				 * events patches kernel text (static keys),
				 * which TCG must translate again.
				 */
				time_faults(len);
				t = time_faults(len);
				if (t < best[which])
					best[which] = t;
			}
			if (k < NSET)
				break;
		}
		set_fault_period("0");
		if (best[NSET - 1] < 1e30) {
			printf("faults %zu MiB, best of %d   off %6.1f ms   N=1 %6.1f ms (%+.1f%%, goal <= 5%%)   N=16 %6.1f ms (%+.1f%%, goal <= 1%%)\n",
			       len >> 20, trials, best[0] * 1e3, best[1] * 1e3,
			       (best[1] / best[0] - 1) * 100, best[2] * 1e3,
			       (best[2] / best[0] - 1) * 100);
			printf("  feed on, no sample (N=%s)  %6.1f ms (%+.1f%%: perf's accounting of each fault)\n",
			       setting[3], best[3] * 1e3,
			       (best[3] / best[0] - 1) * 100);
		}
	}

	/* mmap scan vs memcpy. */
	{
		struct scan_arg s = { .len = info.rcb_len & ~7ULL };
		double ts, tm;

		ioctl(fd, RCB_RESET);
		if (fill_table(fd, &info)) {
			perror("fill table");
			return 1;
		}
		s.map = mmap(NULL, info.rcb_len, PROT_READ, MAP_SHARED, fd, 0);
		s.src = malloc(s.len);
		s.dst = malloc(s.len);
		if (s.map == MAP_FAILED || !s.src || !s.dst) {
			perror("scan setup");
			return 1;
		}
		memset(s.src, 1, s.len);
		memset(s.dst, 0, s.len);
		time_scan(&s);	/* fault the mapping in */
		ts = best_of(repeat, time_scan, &s);
		tm = best_of(repeat, time_memcpy, &s);
		printf("table scan %zu KiB     scan %7.2f ms   memcpy %7.2f ms   scan/memcpy speed %.2fx (goal >= 0.8x)\n",
		       s.len >> 10, ts * 1e3, tm * 1e3, tm / ts);
		munmap((void *)s.map, info.rcb_len);
		ioctl(fd, RCB_RESET);
	}
	printf("=== end ===\n");
	return 0;
}
