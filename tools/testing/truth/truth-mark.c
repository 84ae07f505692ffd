// SPDX-License-Identifier: GPL-2.0
/*
 * truth-mark start|stop: open or close the refcnt-truth plugin's counting
 * window from a guest shell script (refcnt-vm --truth-window).
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
	fprintf(stderr, "usage: truth-mark start|stop\n");
	return 2;
}
