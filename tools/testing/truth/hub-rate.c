// SPDX-License-Identifier: GPL-2.0
/*
 * hub-rate: the guest half of the hub device's benchmark (make bench).
 *
 *   hub-rate
 *
 * With the hub feed on, makes loads at a steady rate, from 1000 a second
 * up by about 3x a step, for a second each: every millisecond a burst of
 * rate/1000 loads spread over 64 pages, then sleep. For each rate it
 * prints the references the feed delivered a second and the records the
 * device dropped (overruns):
 *
 *   hub-rate: rate R delivered D overruns O
 *
 * tools/testing/hub-bench reports the highest rate without overrun.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static uint64_t stat(const char *name)
{
	char path[128];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/refcnt/hub_%s", name);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%llu", &v) != 1)
		v = 0;
	if (f)
		fclose(f);
	return v;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(void)
{
	static const long rates[] = { 1000, 3000, 10000, 30000, 100000, 300000,
				      1000000, 3000000 };
	char *p = mmap(NULL, 64 << 12, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	unsigned int r;

	if (p == MAP_FAILED)
		return 1;
	for (r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
		uint64_t o0 = stat("overruns"), d0 = stat("references");
		long burst = rates[r] / 1000, i;
		double t0 = now(), t;
		struct timespec slice;

		for (t = t0; t - t0 < 1.0; ) {
			for (i = 0; i < burst; i++) {
				long x;

				__asm__ volatile("mov (%1,%2), %0" : "=r"(x)
						 : "r"(p), "r"((i & 63) << 12));
			}
			t = now();
			slice.tv_sec = 0;
			slice.tv_nsec = 1000000 - (long)((t - t0) * 1e9) % 1000000;
			nanosleep(&slice, NULL);
			t = now();
		}
		printf("hub-rate: rate %ld delivered %.0f overruns %llu\n", rates[r],
		       (stat("references") - d0) / (now() - t0),
		       (unsigned long long)(stat("overruns") - o0));
		fflush(stdout);
	}
	printf("hub-rate: records %llu references %llu\n",
	       (unsigned long long)stat("samples"),
	       (unsigned long long)stat("references"));
	return 0;
}
