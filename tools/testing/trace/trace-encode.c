// SPDX-License-Identifier: GPL-2.0
/*
 * trace-encode N COMPRESS FILE: what the plugin's trace writer costs by
 * itself, on the host: N references in the shape of trace-pattern's loop
 * (a global of the program, an array page, now and then a kernel stack
 * page) through the same encoder and output (tools/src/trace/trace-write.c,
 * trace-io.c), a time record every 256 as the plugin writes them. Prints
 * the CPU time per reference in ns (the process's: a loaded host does not
 * inflate it), then the wall-clock time. For tools/testing/trace/trace-bench.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "trace-write.h"

static double now_of(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static double now(void)
{
	return now_of(CLOCK_MONOTONIC);
}

int main(int argc, char **argv)
{
	enum tr_compress c;
	struct tr_writer w;
	unsigned long long n, i;
	double t0, c0, t, cpu;

	if (argc != 4 || tr_compress_parse(argv[2], &c)) {
		fprintf(stderr, "usage: trace-encode N none|zstd|gzip FILE\n");
		return 2;
	}
	n = strtoull(argv[1], NULL, 0);
	if (tr_writer_open(&w, argv[3], c, 0, 0, 1, 0,
			   TR_HAS_PHYS | TR_HAS_TIME, 0)) {
		perror("trace-encode");
		return 1;
	}
	t0 = now();
	c0 = now_of(CLOCK_PROCESS_CPUTIME_ID);
	for (i = 0; i < n; i++) {
		if (!(i % 256)) {
			tr_writer_time(&w, (uint64_t)((now() - t0) * 1e9));
			tr_writer_clock(&w, i * 3);
		}
		if (i % 2)
			tr_writer_mem(&w, 0, 8, 0, 0x509110, 0, 0x20e27, 1);
		else if (i % 64 == 0)
			tr_writer_mem(&w, 1, 8, 0, 0xffffc90000953dc8ull, 0, 0x5bbb, 0);
		else
			tr_writer_mem(&w, i % 4 == 0, 8, 0, 0x7f9dbfd7b000ull + (i % 32) * 8,
				      0, 0x330e, 0);
	}
	if (tr_writer_close(&w, 1, 0)) {
		perror("trace-encode");
		return 1;
	}
	t = now() - t0;
	cpu = now_of(CLOCK_PROCESS_CPUTIME_ID) - c0;
	printf("%.2f %.2f\n", cpu * 1e9 / n, t * 1e9 / n);
	return 0;
}
