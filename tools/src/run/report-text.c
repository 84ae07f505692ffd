// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: the text report: which feeds counted and what their counts
 * mean, then one section per traced process: its objects by remote
 * references, the hottest pages, and the advice.
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

/* "[lo, hi]": the 95% interval of a sampled count. */
static const char *interval_str(uint64_t refs, char *buf, size_t size)
{
	uint64_t lo, hi;

	refs_interval(refs, &lo, &hi);
	snprintf(buf, size, "[%llu, %llu]", (unsigned long long)lo,
		 (unsigned long long)hi);
	return buf;
}

/* The objects table's heading: one column per counter, or the top three. */
static void object_heading(FILE *f)
{
	char buf[32];
	int c;

	fprintf(f, "\n   %-3s %-26s %-20s %-13s %6s %6s %10s", "#", "object", "where",
		"kind", "size", "pages", "refs");
	if (counts_sampled())
		fprintf(f, " %-23s", "95% interval");
	if (ctr.nr <= 8)
		for (c = 0; c < ctr.nr; c++)
			fprintf(f, " %8s", (snprintf(buf, sizeof(buf), "n%s", ctr.label[c]), buf));
	else
		fprintf(f, " %-24s", "top accessing nodes");
	fprintf(f, " %8s %6s  %-12s %s\n", "lost", "remote", "home", "advice");
}

static void object_row(FILE *f, const struct snapshot *s, int i,
		       const struct region *r)
{
	char buf[256], home[128], nbuf[64], wbuf[64], where[300], kind[64], h[16];
	char refs[32], lost[32];
	int c;

	(void)s;
	snprintf(refs, sizeof(refs), "%s%llu", few_samples(r) ? "~" : "",
		 (unsigned long long)r->total);
	if (r->lost_pages || (r->obj->kind == OBJ_ALLOC && r->obj->freed &&
			      r->obj->end && r->obj->end->flags & TRACK_R_LOST))
		snprintf(lost, sizeof(lost), "%llu", (unsigned long long)r->lost_total);
	else
		snprintf(lost, sizeof(lost), r->counted ? "?" : "-");
	fprintf(f, "   %-3d %-26.26s %-20.20s %-13.13s %6s %6llu %10s", i + 1,
		short_name(r->name, 26, nbuf, sizeof(nbuf)),
		short_name(object_where(r, where, sizeof(where)), 20, wbuf, sizeof(wbuf)),
		object_kind_str(r, kind, sizeof(kind)),
		rt_human(r->obj->size ? r->obj->size : r->end - r->start, h, sizeof(h)),
		(unsigned long long)r->present, refs);
	if (counts_sampled())
		fprintf(f, " %-23s", interval_str(r->total, buf, sizeof(buf)));
	if (ctr.nr <= 8) {
		for (c = 0; c < ctr.nr; c++)
			fprintf(f, " %8llu", (unsigned long long)r->refs[c]);
	} else {
		top_nodes_str(r, buf, sizeof(buf));
		fprintf(f, " %-24s", buf);
	}
	home_str(r, home, sizeof(home));
	fprintf(f, " %8s %5.0f%%  %-12s %s\n", lost,
		pct(remote_refs(r), r->total), *home ? home : "-",
		advice_short(r, buf, sizeof(buf)));
}

/* A sampled object's references by node, each with its 95% interval. */
static void node_intervals(FILE *f, const struct region *r)
{
	char buf[64];
	int c, n = 0;

	if (!counts_sampled())
		return;
	for (c = 0; c < ctr.nr; c++) {
		if (!r->refs[c])
			continue;
		fprintf(f, "%s node %s %llu %s", n++ ? "," : "     by node (95% interval):",
			ctr.label[c], (unsigned long long)r->refs[c],
			interval_str(r->refs[c], buf, sizeof(buf)));
	}
	if (n)
		fprintf(f, "\n");
}

/* Each object with advice: why, who uses it, how to follow it. */
static void object_advice(FILE *f, const struct snapshot *s,
			  struct region *const *order, int n)
{
	char nodes[128], threads[512], where[300], kind[64];
	int i, k = 0;

	fprintf(f, "\n   placement advice:\n");
	for (i = 0; i < n; i++) {
		const struct region *r = order[i];
		const struct objinfo *oi = r->obj;

		if (!strcmp(r->adv.action, "none"))
			continue;
		k++;
		fprintf(f, "   * %s (%s, %s", r->name, object_kind_str(r, kind, sizeof(kind)),
			object_where(r, where, sizeof(where)));
		if (oi->via[0])
			fprintf(f, " via %s", oi->via);
		if (oi->caller[0])
			fprintf(f, ", called from %s", oi->caller);
		fprintf(f, ") [0x%llx-0x%llx]: %s%s -> %s%s.\n",
			(unsigned long long)r->start, (unsigned long long)r->end,
			r->adv.reason,
			few_samples(r) ? " (few samples: a rough figure)" : "",
			!strcmp(r->adv.action, "interleave") ? "interleave it" :
			!strcmp(r->adv.action, "first-touch") ? "first touch from the thread that uses it, node " :
			"move it to node ",
			!strcmp(r->adv.action, "interleave") ? "" :
			(snprintf(nodes, sizeof(nodes), "%d", r->adv.node), nodes));
		users_str(s, r, nodes, sizeof(nodes), threads, sizeof(threads));
		if (threads[0])
			fprintf(f, "     used from %s\n", threads);
		node_intervals(f, r);
		if (r->candidates)
			fprintf(f, "     %llu of its pages have a remote counter above the home counter by more than the differential threshold (%u).\n",
				(unsigned long long)r->candidates,
				info.rcb_diff_threshold);
		fprintf(f, "     how: %s\n", r->adv.hint);
	}
	if (!k)
		fprintf(f, "   none: every object with %ld or more references is used mostly where it is placed (or shared and spread).\n",
			opt.min_refs);
}

static void hot_pages(FILE *f, const struct snapshot *s)
{
	char buf[256], nbuf[64];
	int i, c;

	if (!s->nr_hot)
		return;
	fprintf(f, "\n   hottest pages:\n   %-18s %-26s %5s %9s  %s\n",
		"vaddr", "object", "home", "refs", "by node");
	for (i = 0; i < s->nr_hot; i++) {
		const struct hot *ht = &s->hot[i];
		size_t len = 0;

		buf[0] = '\0';
		for (c = 0; c < ctr.nr && len < sizeof(buf); c++)
			if (ht->refs[c])
				len += snprintf(buf + len, sizeof(buf) - len,
						"%s%s:%u", len ? " " : "",
						ctr.label[c], ht->refs[c]);
		fprintf(f, "   0x%-16llx %-26.26s %5d %9llu  %s",
			(unsigned long long)ht->vaddr,
			short_name(ht->object >= 0 && ht->object < s->nr_o ?
				   s->o[ht->object].name : region_of(s, ht->region),
				   26, nbuf, sizeof(nbuf)),
			ht->home >= 0 && ht->home < ctr.nr_cnodes ?
			ctr.cnode_nid[ht->home] : -1,
			(unsigned long long)ht->total, buf);
		if (ht->paddr)
			fprintf(f, "  (paddr 0x%llx)", (unsigned long long)ht->paddr);
		fprintf(f, "\n");
	}
}

/*
 * Mostly remote, yet nothing to do: say why (those whose advice column
 * says it already aside).
 */
static void remote_notes(FILE *f, struct region *const *order, int n)
{
	int i, c = 0;

	for (i = 0; i < n; i++) {
		const struct region *r = order[i];

		if (strcmp(r->adv.action, "none") || r->adv.why_not ||
		    r->total < (uint64_t)opt.min_refs || 2 * r->local >= r->total)
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
	uint64_t total = 0, local = 0, present = 0, lost = 0, zero = 0;
	char buf[1024];
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
		lost += s->r[i].lost_total;
		zero += s->r[i].zero;
	}
	fprintf(f, "   %llu references (%llu samples) to %llu present hardware pages of %u bytes; local share %.1f%%; ",
		(unsigned long long)total,
		(unsigned long long)(total / (uint64_t)feed_weight()),
		(unsigned long long)present, info.rcb_granularity, pct(local, total));
	if (counts_sampled())
		fprintf(f, "95%% interval %s; ", interval_str(total, buf, sizeof(buf)));
	if (s->lost_known)
		fprintf(f, "lost to pegging %llu (%.2f%% of references delivered)\n",
			(unsigned long long)lost, pct(lost, total + lost));
	else
		fprintf(f, "lost to pegging: unknown (needs the pages' physical addresses: run as root)\n");
	if (zero)
		fprintf(f, "   %llu pages map the kernel's shared zero page (read, never written): its counts are every reader's, so they are left out\n",
			(unsigned long long)zero);
	if (s->denied_pages)
		fprintf(f, "   %llu pages of file or shared mappings were not visible: run as root to count them\n",
			(unsigned long long)s->denied_pages);
	fprintf(f, "   allocations %s\n", track_status(s, buf, sizeof(buf)));
	if (symbol_gaps(s, buf, sizeof(buf))[0])
		fprintf(f, "   symbols missing: %s has no symbol table or debug information (stripped): what its dynamic symbols do not name, variables and frames, is unnamed or named by address\n",
			buf);
}

/* What the placement policies would have made of the same references. */
static void policy_sentence(FILE *f, const struct snapshot *s)
{
	struct pl_result r;

	if (snapshot_policies(s, &r))
		return;
	fprintf(f, "\n   placement policies over its counted pages (refcnt-policy's): ");
	pl_sentence(f, &r);
}

static void text_proc(FILE *f, const struct proc *p)
{
	const struct snapshot *s = p->snap;
	struct region **order;
	int i, n, shown_n;

	proc_heading(f, p);
	if (!s)
		return;
	order = objects_shown(s, &n);
	shown_n = opt.max_objects && n > opt.max_objects ? opt.max_objects : n;
	fprintf(f, "\n   objects by remote references (refs: extended + hardware counts; ~: fewer than %ld samples; lost: references lost to pegging):",
		opt.min_samples);
	object_heading(f);
	for (i = 0; i < shown_n; i++)
		object_row(f, s, i, order[i]);
	if (n > shown_n)
		fprintf(f, "   (%d more objects: --objects=0, --json or --html for all)\n",
			n - shown_n);
	hot_pages(f, s);
	object_advice(f, s, order, n);
	remote_notes(f, order, n);
	policy_sentence(f, s);
	free(order);
}

/* What perf's throttling took from a feed, and how much of its time. */
static void text_throttled(FILE *f, const struct feed_desc *d)
{
	fprintf(f, "     perf throttled its events %llu times during the run (above kernel.perf_event_max_sample_rate): each time it sampled nothing until the next tick, so counts are short by what it missed; a longer period throttles less\n",
		(unsigned long long)d->throttled);
	if (d->throttled_share >= 0)
		fprintf(f, "     throttled: at most %.1f%% of the run (of %s)\n",
			100 * d->throttled_share,
			strstr(d->what, "machine-wide") ?
			"every CPU's time" : "the command's CPU time");
	if (d->throttle_lost > 0)
		fprintf(f, "     lost to throttling: about %lld references, %.1f%% of the feed's (estimated from the rate before each throttle)\n",
			d->throttle_lost,
			100.0 * d->throttle_lost /
			((double)d->delivered * d->weight + d->throttle_lost));
	else if (d->throttle_lost == 0)
		fprintf(f, "     lost to throttling: not estimated (one sample a tick gives no rate: raise kernel.perf_event_max_sample_rate or the period)\n");
}

struct untraced {
	FILE *f;
	int n;
};

static void on_untraced(void *arg, pid_t pid)
{
	struct untraced *u = arg;

	if (find_proc(pid))
		return;
	if (!u->n++)
		fprintf(u->f, "\n   not traced (their allocations were recorded, but refcnt-run did not follow them: --follow-children):");
	fprintf(u->f, " %d", (int)pid);
}

void report_text(FILE *f)
{
	struct untraced u = { f, 0 };
	const struct proc *p;
	int i;

	fprintf(f, "\nrefcnt-run report\n");
	for (i = 0; i < nr_feeds_used; i++) {
		fprintf(f, "   %s %s; %llu samples delivered during the run\n     its counts: %s\n",
			i ? "also counted by" : "counted by",
			feed_used[i].what, (unsigned long long)feed_used[i].delivered,
			feed_used[i].meaning);
		if (feed_used[i].dropped)
			fprintf(f, "     it dropped %llu records during the run (its buffers were full): counts are short by up to %llu references, on pages it cannot tell\n",
				(unsigned long long)feed_used[i].dropped,
				(unsigned long long)feed_used[i].dropped *
				(unsigned long long)feed_used[i].weight);
		if (feed_used[i].throttled)
			text_throttled(f, &feed_used[i]);
	}
	fprintf(f, "   samples behind a count: references / %ld\n", feed_weight());
	if (!feed_weight_known())
		fprintf(f, "   the samples' weight is not known here: no 95%% intervals\n");
	else if (counts_exact())
		fprintf(f, "   every reference counted (weight 1): the counts are exact, no interval\n");
	else
		fprintf(f, "   95%% interval of a count: from its samples n, Poisson (Garwood's exact bounds up to 100 samples, normal above), times %ld; the sampling alone\n",
			feed_weight());
	if (count_done)
		fprintf(f, "   the command's own session: %llu samples, %llu counted, %llu unresolved, %llu dropped\n",
			(unsigned long long)count_stats.samples,
			(unsigned long long)count_stats.delivered,
			(unsigned long long)count_stats.unresolved,
			(unsigned long long)count_stats.dropped);
	for (p = procs; p; p = p->next)
		text_proc(f, p);
	track_tables(on_untraced, &u);
	if (u.n)
		fprintf(f, "\n");
	migrate_report_text(f);
}
