// SPDX-License-Identifier: GPL-2.0
/*
 * The truth over time: a thread of the plugin writes the counts of every
 * (accessing node, home node) pair so far, every series_ms milliseconds
 * (series.h). The vCPUs count into rows of their own, without a lock;
 * the writer reads them as they are, 64-bit loads that cannot tear.
 *
 *   # refcnt-truth series: nodes 0 1 2, pairs acc>home, refs and llc misses
 *   t window marks r0>0 r0>1 ... m0>0 m0>1 ...
 *   0.250 1 3 12345 678 ...
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "series.h"

#define PFX	"refcnt-truth: "

int series_on;
static const char *path;
static uint64_t period_ms = 250;
static FILE *out;
static int nr_v, nr_n;
static size_t stride;		/* a row's counters, whole cache lines */
static int nid_of[128];
static int *vnode;
static uint64_t *rows;		/* nr_v rows of 2 * nr_n */
static const volatile int *win;
static const volatile uint64_t *nmarks;
static pthread_t thread;
static volatile int stopping;
static struct timespec t0;

int series_parse_opt(const char *key, const char *v)
{
	char *end;

	if (!strcmp(key, "series")) {
		path = v;
		series_on = 1;
		return 0;
	}
	if (strcmp(key, "series_ms"))
		return 1;
	errno = 0;
	period_ms = strtoull(v, &end, 10);
	if (errno || *end || end == v || period_ms < 10 || period_ms > 60000) {
		fprintf(stderr, PFX "option series_ms=%s: want 10 to 60000 ms\n", v);
		return -1;
	}
	return 0;
}

uint64_t *series_row(unsigned int vi)
{
	return &rows[vi * stride];
}

static uint64_t sum[2 * 128 * 128];

static void write_line(void)
{
	struct timespec t;
	int i, a, h;

	memset(sum, 0, sizeof(uint64_t) * 2 * nr_n * nr_n);
	for (i = 0; i < nr_v; i++) {
		const uint64_t *r = series_row(i);

		if (vnode[i] < 0)
			continue;
		for (h = 0; h < nr_n; h++) {
			sum[2 * (vnode[i] * nr_n + h)] += r[2 * h];
			sum[2 * (vnode[i] * nr_n + h) + 1] += r[2 * h + 1];
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t);
	fprintf(out, "%.3f %d %" PRIu64, (t.tv_sec - t0.tv_sec) +
		(t.tv_nsec - t0.tv_nsec) / 1e9, *win ? 1 : 0, *nmarks);
	for (i = 0; i < 2; i++)
		for (a = 0; a < nr_n; a++)
			for (h = 0; h < nr_n; h++)
				fprintf(out, " %" PRIu64, sum[2 * (a * nr_n + h) + i]);
	fputc('\n', out);
	fflush(out);
}

static void *writer(void *arg)
{
	struct timespec ts = { period_ms / 1000, (period_ms % 1000) * 1000000L };

	(void)arg;
	while (!stopping) {
		nanosleep(&ts, NULL);
		write_line();
	}
	return NULL;
}

int series_install(int nr_vcpus, const int *vn, const int *online,
		   int nr_online, const volatile int *window,
		   const volatile uint64_t *marks)
{
	int i, a, h;

	if (nr_online > 128) {
		fprintf(stderr, PFX "series: at most 128 nodes\n");
		return -1;
	}
	nr_n = nr_online;
	stride = (2 * nr_online + 7) & ~7;
	rows = aligned_alloc(64, nr_vcpus * stride * sizeof(uint64_t));
	vnode = calloc(nr_vcpus, sizeof(int));
	if (!rows || !vnode) {
		fprintf(stderr, PFX "series: out of memory\n");
		return -1;
	}
	memset(rows, 0, nr_vcpus * stride * sizeof(uint64_t));
	memcpy(vnode, vn, sizeof(int) * nr_vcpus);
	out = fopen(path, "w");
	if (!out) {
		fprintf(stderr, PFX "cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	nr_v = nr_vcpus;
	memcpy(nid_of, online, sizeof(int) * nr_online);
	win = window;
	nmarks = marks;
	fprintf(out, "# refcnt-truth series: every %" PRIu64 " ms; nodes", period_ms);
	for (i = 0; i < nr_n; i++)
		fprintf(out, " %d", nid_of[i]);
	fprintf(out, "\n# t window marks");
	for (i = 0; i < 2; i++)
		for (a = 0; a < nr_n; a++)
			for (h = 0; h < nr_n; h++)
				fprintf(out, " %c%d>%d", i ? 'm' : 'r', nid_of[a], nid_of[h]);
	fputc('\n', out);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (pthread_create(&thread, NULL, writer, NULL)) {
		fprintf(stderr, PFX "series: cannot start its thread\n");
		return -1;
	}
	return 0;
}

int series_close(void)
{
	if (!out)
		return 0;
	stopping = 1;
	pthread_join(thread, NULL);
	write_line();
	if (fclose(out)) {
		fprintf(stderr, PFX "cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	out = NULL;
	return 0;
}
