// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: the text report, one section per traced process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "run.h"

static const char *short_name(const char *name, int width, char *buf,
			      size_t size)
{
	size_t n = strlen(name);

	if ((int)n <= width || width < 4)
		return name;
	snprintf(buf, size, "~%s", name + n - (width - 1));
	return buf;
}

static void status_str(int st, char *buf, size_t size)
{
	if (WIFEXITED(st))
		snprintf(buf, size, "exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, size, "was killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(buf, size, "ended");
}

/* "3:60% 0:30% 1:10%": the three counters with most of r's references. */
static void top_nodes_str(const struct region *r, char *buf, size_t size)
{
	int k, c, used[RCB_MAX_COUNTERS] = { 0 };
	size_t len = 0;

	buf[0] = '\0';
	for (k = 0; k < 3; k++) {
		int b = -1;

		for (c = 0; c < ctr.nr; c++)
			if (!used[c] && r->refs[c] &&
			    (b < 0 || r->refs[c] > r->refs[b]))
				b = c;
		if (b < 0)
			break;
		used[b] = 1;
		len += snprintf(buf + len, size - len, "%s%s:%.0f%%",
				k ? " " : "", ctr.label[b], pct(r->refs[b], r->total));
	}
}

/* The region table's heading: one column per counter, or the top three. */
static void region_heading(FILE *f)
{
	char buf[32];
	int c;

	fprintf(f, "\n   %-24s %-14s %7s %7s %9s", "region", "start", "size",
		"present", "refs");
	if (ctr.nr <= 8)
		for (c = 0; c < ctr.nr; c++)
			fprintf(f, " %7s", (snprintf(buf, sizeof(buf), "n%s", ctr.label[c]), buf));
	else
		fprintf(f, " %-24s", "top accessing nodes");
	fprintf(f, " %6s  %-12s %s\n", "local", "home", "advice");
}

static void region_row(FILE *f, const struct region *r)
{
	char buf[256], home[128], nbuf[64], h[16];
	int c;

	fprintf(f, "   %-24.24s 0x%-12llx %7s %7llu %9llu",
		short_name(r->name, 24, nbuf, sizeof(nbuf)),
		(unsigned long long)r->start,
		rt_human(r->end - r->start, h, sizeof(h)),
		(unsigned long long)r->present,
		(unsigned long long)r->total);
	if (ctr.nr <= 8) {
		for (c = 0; c < ctr.nr; c++)
			fprintf(f, " %7llu", (unsigned long long)r->refs[c]);
	} else {
		top_nodes_str(r, buf, sizeof(buf));
		fprintf(f, " %-24s", buf);
	}
	home_str(r, home, sizeof(home));
	fprintf(f, " %5.0f%%  %-12s %s", pct(r->local, r->total),
		*home ? home : "-", r->adv.action);
	if (!strcmp(r->adv.action, "move"))
		fprintf(f, " to node %d", r->adv.node);
	else if (!strcmp(r->adv.action, "interleave")) {
		nodes_str(r->adv.nodes, r->adv.nr_nodes, buf, sizeof(buf));
		fprintf(f, " over %s", buf);
	}
	fprintf(f, "\n");
}

static void hot_pages(FILE *f, const struct snapshot *s)
{
	char buf[256], nbuf[64];
	int i, c;

	if (!s->nr_hot)
		return;
	fprintf(f, "\n   hottest pages:\n   %-18s %-24s %5s %9s  %s\n",
		"vaddr", "region", "home", "refs", "by node");
	for (i = 0; i < s->nr_hot; i++) {
		const struct hot *ht = &s->hot[i];
		size_t len = 0;

		buf[0] = '\0';
		for (c = 0; c < ctr.nr && len < sizeof(buf); c++)
			if (ht->refs[c])
				len += snprintf(buf + len, sizeof(buf) - len,
						"%s%s:%u", len ? " " : "",
						ctr.label[c], ht->refs[c]);
		fprintf(f, "   0x%-16llx %-24.24s %5d %9llu  %s",
			(unsigned long long)ht->vaddr,
			short_name(region_of(s, ht->region), 24, nbuf,
				   sizeof(nbuf)),
			ht->home >= 0 && ht->home < ctr.nr_cnodes ?
			ctr.cnode_nid[ht->home] : -1,
			(unsigned long long)ht->total, buf);
		if (ht->paddr)
			fprintf(f, "  (paddr 0x%llx)", (unsigned long long)ht->paddr);
		fprintf(f, "\n");
	}
}

/* The regions with a move or interleave advice, and how to follow it. */
static void advice_list(FILE *f, struct region *const *order, int n)
{
	char buf[64];
	int i, c = 0;

	fprintf(f, "\n   placement advice:\n");
	for (i = 0; i < n; i++) {
		const struct region *r = order[i];

		if (!strcmp(r->adv.action, "none"))
			continue;
		c++;
		fprintf(f, "   * %s [0x%llx-0x%llx, %s]: %s %s.\n", r->name,
			(unsigned long long)r->start, (unsigned long long)r->end,
			r->mapping, r->adv.reason,
			!strcmp(r->adv.action, "move") ?
			(snprintf(buf, sizeof(buf), "-> move it to node %d", r->adv.node), buf) :
			"-> interleave it");
		if (r->candidates)
			fprintf(f, "     %llu of its pages have a remote counter above the home counter by more than the differential threshold (%u).\n",
				(unsigned long long)r->candidates,
				info.rcb_diff_threshold);
		fprintf(f, "     how: %s\n", r->adv.hint);
	}
	if (!c)
		fprintf(f, "   none: every region with %ld or more references is used mostly where it is placed (or shared and spread).\n",
			opt.min_refs);
}

/* Mostly remote, yet nothing to do: say why. */
static void remote_notes(FILE *f, struct region *const *order, int n)
{
	int i, c = 0;

	for (i = 0; i < n; i++) {
		const struct region *r = order[i];

		if (strcmp(r->adv.action, "none") || r->total < (uint64_t)opt.min_refs ||
		    2 * r->local >= r->total)
			continue;
		if (!c++)
			fprintf(f, "\n   notes (mostly remote references, no move advised):\n");
		fprintf(f, "   - %s: %s.\n", r->name, r->adv.reason);
	}
}

/* The process's exit and, when counters were read, the totals. */
static void proc_heading(FILE *f, const struct proc *p)
{
	const struct snapshot *s = p->snap;
	uint64_t total = 0, local = 0, present = 0;
	char buf[256];
	int i;

	status_str(p->status, buf, sizeof(buf));
	fprintf(f, "\n== pid %d: %s\n   %s", (int)p->tgid, p->cmd, buf);
	if (p->is_main)
		fprintf(f, " after %.2f s",
			(t_end.tv_sec - t_start.tv_sec) +
			(t_end.tv_nsec - t_start.tv_nsec) / 1e9);
	fprintf(f, "\n");
	if (!s) {
		fprintf(f, "   no counters: its memory could not be read at exit (see the messages above)\n");
		return;
	}
	for (i = 0; i < s->nr; i++) {
		total += s->r[i].total;
		local += s->r[i].local;
		present += s->r[i].present;
	}
	fprintf(f, "   %llu references to %llu present hardware pages of %u bytes; local share %.1f%%\n",
		(unsigned long long)total, (unsigned long long)present,
		info.rcb_granularity, pct(local, total));
	if (s->denied_pages)
		fprintf(f, "   %llu pages of file or shared mappings were not visible: run as root to count them\n",
			(unsigned long long)s->denied_pages);
}

static void text_proc(FILE *f, const struct proc *p)
{
	const struct snapshot *s = p->snap;
	struct region **order;
	int i, n = 0;

	proc_heading(f, p);
	if (!s)
		return;
	order = xcalloc(s->nr, sizeof(*order));
	for (i = 0; i < s->nr; i++)
		if (shown(&s->r[i]))
			order[n++] = &s->r[i];
	qsort(order, n, sizeof(*order), cmp_region_refs);
	region_heading(f);
	for (i = 0; i < n; i++)
		region_row(f, order[i]);
	if (s->nr > n)
		fprintf(f, "   (%llu more regions without references; --all shows them)\n",
			(unsigned long long)(s->nr - n));
	hot_pages(f, s);
	advice_list(f, order, n);
	remote_notes(f, order, n);
	free(order);
}

void report_text(FILE *f)
{
	const struct proc *p;

	fprintf(f, "\nrefcnt-run report: references sampled by the %s page-fault feed (every %ld%s fault)%s; counters are extended + hardware, by accessing node\n",
		opt.machine_wide || !new_period ? "machine-wide" : "command's own",
		opt.machine_wide || !new_period ? old_period : new_period,
		(opt.machine_wide || !new_period ? old_period : new_period) == 1 ?
		"st" : "th",
		opt.hinting ? " with NUMA-balancing hinting faults" : "");
	if (count_done)
		fprintf(f, "   its own feed: %llu samples, %llu counted, %llu unresolved\n",
			(unsigned long long)count_stats.samples,
			(unsigned long long)count_stats.delivered,
			(unsigned long long)count_stats.unresolved);
	for (p = procs; p; p = p->next)
		text_proc(f, p);
	migrate_report_text(f);
}
