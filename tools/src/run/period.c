// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: the PEBS/IBS session's safe minimum period. perf core lets
 * an event take DIV_ROUND_UP(kernel.perf_event_max_sample_rate, HZ)
 * samples a tick and stops it for the rest of the tick after
 * (throttling), losing what it would have sampled; perf also lowers that
 * rate by itself when its NMIs take too long. Every load and store, and
 * IBS's ops (memory-side or not: IBS filters after sampling), can come
 * once a cycle; Intel's memory-side events (pebs_ldlat, or L3 misses
 * with pebs_memside) once in a hundred at most for the programs the
 * admin guide gives a period of 1,000 for. At the CPU's top clock a
 * period below clock x that share / rate can be throttled: the safe
 * minimum. The module cannot read the rate (it is not exported), user
 * space can: a period asked for below the minimum is refused, the default
 * is raised to it, each with one line.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "run.h"

#define MAX_SAMPLE_RATE	"/proc/sys/kernel/perf_event_max_sample_rate"
#define CPU_MAX_FREQ	"/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"
#define PEBS_PARAMS	"/sys/module/refcnt/parameters/"

/* The CPUs' top clock in Hz: cpufreq's, else /proc/cpuinfo's; 0 unknown. */
static double cpu_max_hz(void)
{
	long long khz = rt_read_ll(CPU_MAX_FREQ, -1);
	double mhz, max = 0;
	char line[256];
	FILE *f;

	if (khz > 0)
		return khz * 1e3;
	f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "cpu MHz : %lf", &mhz) == 1 && mhz > max)
			max = mhz;
	fclose(f);
	return max * 1e6;
}

/* Whether the CPUs are Intel's (/proc/cpuinfo's vendor_id). */
static int cpu_is_intel(void)
{
	char line[256];
	int intel = 0;
	FILE *f = fopen("/proc/cpuinfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "vendor_id", 9)) {
			intel = strstr(line, "GenuineIntel") != NULL;
			break;
		}
	fclose(f);
	return intel;
}

/* Events of the feed's PMU event a cycle, at most (see above). */
static double events_per_cycle(void)
{
	char buf[8] = "";
	int memside = !rt_read_line(PEBS_PARAMS "pebs_memside", buf, sizeof(buf)) &&
		      buf[0] == 'Y';

	if (cpu_is_intel() && (memside || rt_read_ll(PEBS_PARAMS "pebs_ldlat", 0) > 0))
		return 0.01;
	return 1;
}

long pebs_safe_min_period(long *rate, double *hz)
{
	*rate = rt_read_ll(MAX_SAMPLE_RATE, -1);
	*hz = cpu_max_hz();
	if (*rate <= 0 || *hz <= 0)
		return 0;
	return (long)ceil(*hz * events_per_cycle() / *rate);
}

int pebs_period_check(void)
{
	double hz;
	long rate, min = pebs_safe_min_period(&rate, &hz);

	if (!min || opt.pebs_period >= min)
		return 0;
	if (opt.pebs_period_set) {
		rt_err("--pebs-period=%ld is below the safe minimum %ld: perf throttles an event past %ld samples/s (kernel.perf_event_max_sample_rate) and at %.2f GHz the feed's event could make %.0f; use a longer period or raise the rate",
		       opt.pebs_period, min, rate, hz / 1e9,
		       hz * events_per_cycle() / opt.pebs_period);
		return -EINVAL;
	}
	say("PEBS/IBS period %ld instead of %ld: the safe minimum at %ld samples/s (kernel.perf_event_max_sample_rate) and %.2f GHz",
	    min, opt.pebs_period, rate, hz / 1e9);
	opt.pebs_period = min;
	return 0;
}
