// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: --labels, names for address ranges written by the command.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

struct label *labels;
int nr_labels;

static int cmp_label(const void *a, const void *b)
{
	const struct label *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

/*
 * Lines "NAME START-END" or "array NAME START-END ..." (demo-workload's
 * output); anything else is skipped.
 */
void load_labels(void)
{
	char line[1024];
	FILE *f;
	int cap = 0;

	nr_labels = 0;
	if (!opt.labels)
		return;
	f = fopen(opt.labels, "r");
	if (!f) {
		rt_err("--labels %s: %s (regions keep their /proc/PID/maps names)",
		       opt.labels, strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char *tok[4] = { NULL }, *save = NULL, *p;
		uint64_t s, e;
		int n = 0, k;

		for (p = strtok_r(line, " \t\n", &save); p && n < 4;
		     p = strtok_r(NULL, " \t\n", &save))
			tok[n++] = p;
		k = (n >= 3 && !strcmp(tok[0], "array")) ? 1 : 0;
		if (n < k + 2 || rt_parse_range(tok[k + 1], &s, &e))
			continue;
		if (nr_labels == cap) {
			cap = cap ? 2 * cap : 16;
			labels = realloc(labels, cap * sizeof(*labels));
			if (!labels) {
				rt_err("out of memory");
				exit(RT_EXIT_RUN_FAIL);
			}
		}
		labels[nr_labels].start = s;
		labels[nr_labels].end = e;
		snprintf(labels[nr_labels].name, sizeof(labels[0].name), "%s",
			 tok[k]);
		nr_labels++;
	}
	fclose(f);
	qsort(labels, nr_labels, sizeof(*labels), cmp_label);
}
