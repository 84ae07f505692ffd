// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-exporter's text formats on the host, from a made-up snapshot
 * (no module needed): exact samples and labels (a group label, an escaped
 * feed name, an unreadable statistic left out), a HELP and TYPE before
 * every family's samples, counters and only counters ending in _total, no
 * sample twice; OpenMetrics names counter families without _total, has
 * refcnt_node as an info family, and ends with "# EOF"; an unloaded module is refcnt_up 0 and nothing else.
 * TAP on stdout; exit 1 if any check fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omtext.h"

static int nr, failed;

static void ok(int cond, const char *what)
{
	printf("%sok %d %s\n", cond ? "" : "not ", ++nr, what);
	failed |= !cond;
}

static char *render(const struct rs_snap *s, int openmetrics)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f || om_write(f, s, openmetrics))
		exit(2);
	fclose(f);
	return buf;
}

static void fake(struct rs_snap *s, struct rs_node *n, struct rs_counter *c,
		 struct rs_hot *h)
{
	int i;

	memset(s, 0, sizeof(*s));
	memset(n, 0, sizeof(*n));
	s->loaded = 1;
	s->nr_nodes = 1;
	s->nodes = n;
	n->nid = 3;
	n->cnodeid = 2;
	n->info.rcb_sw_sets = 65503;
	for (i = 0; i < RS_NR_STATS; i++)
		n->stats[i] = 100 + i;
	n->stats[RS_SATURATED] = -1;	/* unreadable: left out */
	n->table_bytes = 53400;
	n->nr_counters = 2;
	n->ctr = c;
	n->home = 0;
	snprintf(c[0].label, sizeof(c[0].label), "0-7");
	c[0].refs = 12345;
	c[0].lost = 6;
	snprintf(c[1].label, sizeof(c[1].label), "8-15");
	c[1].refs = 4294967296ULL * 3;	/* above 32 bits */
	n->local = 12345;
	n->remote = c[1].refs;
	n->lost = 6;
	s->nr_feeds = 2;
	snprintf(s->feeds[0].name, sizeof(s->feeds[0].name), "fault");
	snprintf(s->feeds[1].name, sizeof(s->feeds[1].name), "we\"ird");
	s->feeds[1].stats[RS_SAMPLES] = 5;
	s->nr_hot = 1;
	s->hot = h;
	h->nid = 3;
	h->set = 17;
	h->paddr = 0x11000;
	h->refs = 999;
	h->remote = 990;
}

/* Every sample after its family's TYPE; _total exactly on counters. */
static int well_formed(char *text, int openmetrics)
{
	char family[128] = "", type[16] = "", *line, *save = NULL;
	int good = 1;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[128];
		size_t len;

		if (sscanf(line, "# TYPE %127s %15s", family, type) == 2)
			continue;
		if (line[0] == '#')
			continue;
		if (sscanf(line, "%127[a-z_]", name) != 1)
			return 0;
		len = strlen(family);
		if (!strcmp(type, "info")) {
			len = strlen(family);
			good &= openmetrics && !strncmp(name, family, len) &&
				!strcmp(name + len, "_info");
		} else if (!strcmp(type, "counter")) {
			/* 0.0.4: the family is the sample name; OpenMetrics: + _total */
			good &= openmetrics ? !strncmp(name, family, len) &&
					      !strcmp(name + len, "_total") :
					      !strcmp(name, family) &&
					      strlen(name) > 6 &&
					      !strcmp(name + strlen(name) - 6, "_total");
		} else {
			good &= !strcmp(name, family) &&
				!(strlen(name) > 6 && !strcmp(name + strlen(name) - 6, "_total"));
		}
	}
	return good;
}

static int no_duplicates(const char *text)
{
	const char *p, *q;

	for (p = text; *p; p = strchr(p, '\n') + 1) {
		size_t len = strcspn(p, " \n");

		if (*p != '#')
			for (q = strchr(p, '\n') + 1; *q; q = strchr(q, '\n') + 1)
				if (!strncmp(p, q, len) && q[len] == ' ')
					return 0;
	}
	return 1;
}

/*
 * omtext_test: the checks, TAP. omtext_test --print [--openmetrics]: the
 * made-up snapshot's text, for other parsers (promtool, prometheus_client).
 */
int main(int argc, char **argv)
{
	struct rs_counter c[2];
	struct rs_node n;
	struct rs_hot h;
	struct rs_snap s;
	char *t;

	fake(&s, &n, c, &h);
	if (argc > 1 && !strcmp(argv[1], "--print")) {
		t = render(&s, argc > 2 && !strcmp(argv[2], "--openmetrics"));
		fputs(t, stdout);
		free(t);
		return 0;
	}
	printf("1..18\n");
	t = render(&s, 0);
	ok(strstr(t, "\nrefcnt_up 1\n") != NULL, "refcnt_up 1");
	ok(strstr(t, "\nrefcnt_references_total{node=\"3\",from_node=\"0-7\"} 12345\n") != NULL,
	   "references by node and accessing group");
	ok(strstr(t, "\nrefcnt_references_total{node=\"3\",from_node=\"8-15\"} 12884901888\n") != NULL,
	   "64-bit sums");
	ok(strstr(t, "\nrefcnt_lost_references_total{node=\"3\",from_node=\"0-7\"} 6\n") != NULL,
	   "lost by node and accessing group");
	ok(strstr(t, "\nrefcnt_node_references_total{node=\"3\"} 100\n") != NULL &&
	   strstr(t, "\nrefcnt_node_overflowed_total{node=\"3\"} 108\n") != NULL &&
	   strstr(t, "\nrefcnt_node_defer_full_total{node=\"3\"} 110\n") != NULL,
	   "node statistics");
	ok(strstr(t, "refcnt_node_saturated_total{") == NULL &&
	   strstr(t, "# TYPE refcnt_node_saturated_total counter\n") != NULL,
	   "an unreadable statistic has no sample");
	ok(strstr(t, "\nrefcnt_node_table_bytes{node=\"3\"} 53400\n") != NULL &&
	   strstr(t, "\nrefcnt_node_info{node=\"3\",cnodeid=\"2\"} 1\n") != NULL,
	   "table bytes and node info");
	ok(strstr(t, "\nrefcnt_feed_samples_total{feed=\"we\\\"ird\"} 5\n") != NULL,
	   "label values escaped");
	ok(strstr(t, "\nrefcnt_hot_set_references{rank=\"1\"} 999\n") != NULL &&
	   strstr(t, "\nrefcnt_hot_set_remote_references{rank=\"1\"} 990\n") != NULL &&
	   strstr(t, "\nrefcnt_hot_set_node{rank=\"1\"} 3\n") != NULL &&
	   strstr(t, "\nrefcnt_hot_set_index{rank=\"1\"} 17\n") != NULL &&
	   strstr(t, "\nrefcnt_hot_set_paddr{rank=\"1\"} 69632\n") != NULL,
	   "hottest sets, by rank only");
	ok(strstr(t, "# EOF") == NULL, "no # EOF in the 0.0.4 format");
	ok(no_duplicates(t), "no sample twice");
	ok(well_formed(t, 0), "0.0.4: TYPE before samples, _total on counters only");
	free(t);

	t = render(&s, 1);
	ok(strstr(t, "# TYPE refcnt_references counter\n") != NULL &&
	   strstr(t, "\nrefcnt_references_total{node=\"3\",from_node=\"0-7\"} 12345\n") != NULL,
	   "OpenMetrics counter family without _total");
	ok(strlen(t) > 6 && !strcmp(t + strlen(t) - 6, "# EOF\n"), "OpenMetrics ends with # EOF");
	ok(strstr(t, "# TYPE refcnt_node info\n") != NULL &&
	   strstr(t, "\nrefcnt_node_info{node=\"3\",cnodeid=\"2\"} 1\n") != NULL,
	   "OpenMetrics info family refcnt_node");
	ok(well_formed(t, 1), "OpenMetrics: TYPE before samples");
	free(t);

	memset(&s, 0, sizeof(s));
	t = render(&s, 0);
	ok(!strcmp(t, "# HELP refcnt_up 1 when the refcnt module is loaded and its devices were read, 0 otherwise.\n"
		      "# TYPE refcnt_up gauge\nrefcnt_up 0\n"), "not loaded: refcnt_up 0 only");
	free(t);
	t = render(&s, 1);
	ok(strstr(t, "refcnt_up 0\n# EOF\n") != NULL, "not loaded, OpenMetrics");
	free(t);
	return failed;
}
