// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: --html FILE, the report as one self-contained page. The
 * page (tools/src/run/report.html, built into refcnt-run as a string) has
 * its style and script inline and the JSON report embedded where it says
 * @@REFCNT_DATA@@; its script draws everything from that JSON: a sortable
 * table of the objects, the node x node matrix of references, a bar per
 * object. Nothing is loaded from anywhere: it works offline.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "report-html.h"	/* report_html_template, generated */

#define MARK "@@REFCNT_DATA@@"

/* JSON inside <script>: "<" only occurs in strings, where \u003c is it. */
static void put_escaped(FILE *f, const char *s, size_t len)
{
	const char *end = s + len, *lt;

	while (s < end) {
		lt = memchr(s, '<', end - s);
		fwrite(s, 1, (lt ? lt : end) - s, f);
		if (!lt)
			break;
		fputs("\\u003c", f);
		s = lt + 1;
	}
}

void report_html(const char *path, char **argv, int exit_code)
{
	const char *mark = strstr(report_html_template, MARK);
	char *json = NULL;
	size_t len = 0;
	FILE *m, *f;

	m = open_memstream(&json, &len);
	if (!m || !mark) {
		rt_err("--html %s: out of memory", path);
		return;
	}
	report_json(m, argv, exit_code, new_period, old_period);
	fclose(m);
	f = fopen(path, "w");
	if (!f) {
		rt_err("--html=%s: %s", path, strerror(errno));
		free(json);
		return;
	}
	fwrite(report_html_template, 1, mark - report_html_template, f);
	put_escaped(f, json, len);
	fputs(mark + strlen(MARK), f);
	if (fclose(f))
		rt_err("--html=%s: %s", path, strerror(errno));
	else
		say("HTML report written to %s", path);
	free(json);
}
