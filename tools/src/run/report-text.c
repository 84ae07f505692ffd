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

static void text_proc(FILE *f, const struct proc *p)
{
	const struct snapshot *s = p->snap;
	struct region **order;
	char buf[256], h[16];
	uint64_t total = 0, local = 0, present = 0, hidden = 0;
	int i, c, n, many = ctr.nr > 8;

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
	order = xcalloc(s->nr, sizeof(*order));
	for (i = n = 0; i < s->nr; i++) {
		total += s->r[i].total;
		local += s->r[i].local;
		present += s->r[i].present;
		if (shown(&s->r[i]))
			order[n++] = &s->r[i];
		else
			hidden++;
	}
	fprintf(f, "   %llu references to %llu present hardware pages of %u bytes; local share %.1f%%\n",
		(unsigned long long)total, (unsigned long long)present,
		info.rcb_granularity, pct(local, total));
	if (s->denied_pages)
		fprintf(f, "   %llu pages of file or shared mappings were not visible: run as root to count them\n",
			(unsigned long long)s->denied_pages);
	qsort(order, n, sizeof(*order), cmp_region_refs);

	fprintf(f, "\n   %-24s %-14s %7s %7s %9s", "region", "start", "size",
		"present", "refs");
	if (!many)
		for (c = 0; c < ctr.nr; c++)
			fprintf(f, " %7s", (snprintf(buf, sizeof(buf), "n%s", ctr.label[c]), buf));
	else
		fprintf(f, " %-24s", "top accessing nodes");
	fprintf(f, " %6s  %-12s %s\n", "local", "home", "advice");
	for (i = 0; i < n; i++) {
		const struct region *r = order[i];
		char home[128], nbuf[64];

		fprintf(f, "   %-24.24s 0x%-12llx %7s %7llu %9llu",
			short_name(r->name, 24, nbuf, sizeof(nbuf)),
			(unsigned long long)r->start,
			rt_human(r->end - r->start, h, sizeof(h)),
			(unsigned long long)r->present,
			(unsigned long long)r->total);
		if (!many) {
			for (c = 0; c < ctr.nr; c++)
				fprintf(f, " %7llu", (unsigned long long)r->refs[c]);
		} else {
			int k, used[RCB_MAX_COUNTERS] = { 0 };
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
				len += snprintf(buf + len, sizeof(buf) - len,
						"%s%s:%.0f%%", k ? " " : "",
						ctr.label[b], pct(r->refs[b], r->total));
			}
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
	if (hidden)
		fprintf(f, "   (%llu more regions without references; --all shows them)\n",
			(unsigned long long)hidden);

	if (s->nr_hot) {
		fprintf(f, "\n   hottest pages:\n   %-18s %-24s %5s %9s  %s\n",
			"vaddr", "region", "home", "refs", "by node");
		for (i = 0; i < s->nr_hot; i++) {
			const struct hot *ht = &s->hot[i];
			char nbuf[64];
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

	fprintf(f, "\n   placement advice:\n");
	c = 0;
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
	/* Mostly remote, yet nothing to do: say why. */
	for (i = 0, c = 0; i < n; i++) {
		const struct region *r = order[i];

		if (strcmp(r->adv.action, "none") || r->total < (uint64_t)opt.min_refs ||
		    2 * r->local >= r->total)
			continue;
		if (!c++)
			fprintf(f, "\n   notes (mostly remote references, no move advised):\n");
		fprintf(f, "   - %s: %s.\n", r->name, r->adv.reason);
	}
	free(order);
}

void report_text(FILE *f)
{
	const struct proc *p;

	fprintf(f, "\nrefcnt-run report: references sampled by the page-fault feed (every %ld%s fault)%s; counters are extended + hardware, by accessing node\n",
		new_period, new_period == 1 ? "st" : "th",
		opt.hinting ? " with NUMA-balancing hinting faults" : "");
	for (p = procs; p; p = p->next)
		text_proc(f, p);
}
