// SPDX-License-Identifier: GPL-2.0
/*
 * truth-mark start|stop|dump|marker CMD NUM: open or close the
 * refcnt-truth plugin's counting window from a guest shell script
 * (refcnt-vm --truth-window); dump also writes the counts so far to the
 * host's FILE.N and zeroes them; marker is SMAIT's smait_marker(CMD, NUM),
 * a marker record in the traces (refcnt-vm --trace), made by writing the
 * marker's NOP (truth-mark.h) into an executable page and calling it.
 *
 * truth-mark cost [ADDR...]: the kernel functions (addresses from
 * /proc/kallsyms) whose calls the plugin counts as a feed's cost, in
 * place of those named before; none: count nothing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRUTH_MARK_RUN
#include "truth-mark.h"

static int marker(const char *cmd_s, const char *num_s)
{
	char *end1, *end2;
	unsigned long cmd = strtoul(cmd_s, &end1, 0);
	unsigned long long num = strtoull(num_s, &end2, 0);

	if (*end1 || *cmd_s == 0 || cmd > 4 || *end2 || *num_s == 0 ||
	    num > UINT32_MAX) {
		fprintf(stderr, "truth-mark: marker CMD NUM: CMD 0-4, NUM 0-4294967295\n");
		return 2;
	}
	return truth_mark_run(0xe0 + cmd, num) ? 1 : 0;
}

static int cost(int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++) {
		char *end;
		unsigned long long a = strtoull(argv[i], &end, 16);

		if (*end || !*argv[i] || a >> 32 != 0xffffffffULL ||
		    !(uint32_t)a) {
			fprintf(stderr, "truth-mark: cost: %s: not a kernel text address (0xffffffff........)\n",
				argv[i]);
			return 2;
		}
	}
	if (truth_mark_run(TRUTH_COST_SIB, 0))
		return 1;
	for (i = 0; i < argc; i++)
		if (truth_mark_run(TRUTH_COST_SIB,
				   (uint32_t)strtoull(argv[i], NULL, 16)))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "start")) {
		truth_mark_start();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "stop")) {
		truth_mark_stop();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "dump")) {
		truth_mark_dump();
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "marker"))
		return marker(argv[2], argv[3]);
	if (argc >= 2 && !strcmp(argv[1], "cost"))
		return cost(argc - 2, argv + 2);
	fprintf(stderr, "usage: truth-mark start|stop|dump|marker CMD NUM|cost [ADDR...]\n");
	return 2;
}
