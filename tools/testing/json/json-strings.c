// SPDX-License-Identifier: GPL-2.0
/*
 * The tools' JSON string writer (rt_json_str, tools/src/rjson.c) on each
 * argument, one JSON value a line: check-json-strings feeds it names with
 * invalid UTF-8, quotes, backslashes and control characters and parses
 * the lines with python3's json module (make json-check).
 */
#include <stdio.h>

#include "rtools.h"

int main(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		rt_json_str(stdout, argv[i]);
		putchar('\n');
	}
	return ferror(stdout) ? 1 : 0;
}
