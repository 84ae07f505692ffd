// SPDX-License-Identifier: GPL-2.0
/*
 * truth-mark start|stop|dump: open or close the refcnt-truth plugin's
 * counting window from a guest shell script (refcnt-vm --truth-window);
 * dump also writes the counts so far to the host's FILE.N and zeroes them.
 */
#include <stdio.h>
#include <string.h>

#include "truth-mark.h"

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
	fprintf(stderr, "usage: truth-mark start|stop|dump\n");
	return 2;
}
