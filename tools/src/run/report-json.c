// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: the --json report (its keys are refcnt-run(1)'s JSON
 * OUTPUT): the feeds, then the main process's objects and regions, the
 * references by home and accessing node, the hottest pages, and every
 * traced process with its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "run.h"

static void json_str_or_null(FILE *f, const char *s)
{
	if (s && *s)
		rt_json_str(f, s);
	else
		fprintf(f, "null");
}

/* {"0": n, ...}: a counter-indexed array, zero entries left out. */
static void json_by_counter(FILE *f, const uint64_t *v)
{
	int c, first = 0;

	fprintf(f, "{");
	for (c = 0; c < ctr.nr; c++)
		if (v[c])
			fprintf(f, "%s\"%s\": %llu", first++ ? ", " : "",
				ctr.label[c], (unsigned long long)v[c]);
	fprintf(f, "}");
}

/*
 * [lo, hi]: the 95% interval of a count (the count twice when exact);
 * null when the feed's weight is not known.
 */
static void json_interval(FILE *f, uint64_t refs)
{
	uint64_t lo, hi;

	if (!feed_weight_known()) {
		fprintf(f, "null");
		return;
	}
	refs_interval(refs, &lo, &hi);
	fprintf(f, "[%llu, %llu]", (unsigned long long)lo, (unsigned long long)hi);
}

/* {"0": [lo, hi], ...}: json_by_counter()'s entries as intervals. */
static void json_interval_by_counter(FILE *f, const uint64_t *v)
{
	int c, first = 0;

	if (!feed_weight_known()) {
		fprintf(f, "null");
		return;
	}
	fprintf(f, "{");
	for (c = 0; c < ctr.nr; c++) {
		if (!v[c])
			continue;
		fprintf(f, "%s\"%s\": ", first++ ? ", " : "", ctr.label[c]);
		json_interval(f, v[c]);
	}
	fprintf(f, "}");
}

static void json_home(FILE *f, const struct region *r)
{
	int i, first = 0;

	fprintf(f, "{");
	for (i = 0; i < ctr.nr_cnodes; i++)
		if (r->home_pages[i])
			fprintf(f, "%s\"%d\": %llu", first++ ? ", " : "",
				ctr.cnode_nid[i], (unsigned long long)r->home_pages[i]);
	fprintf(f, "}");
}

static void json_advice(FILE *f, const struct region *r)
{
	int i;

	fprintf(f, "{\"action\": \"%s\", \"node\": ", r->adv.action);
	if (r->adv.node >= 0)
		fprintf(f, "%d", r->adv.node);
	else
		fprintf(f, "null");
	fprintf(f, ", \"nodes\": [");
	for (i = 0; i < r->adv.nr_nodes; i++)
		fprintf(f, "%s%d", i ? ", " : "", r->adv.nodes[i]);
	fprintf(f, "], \"reason\": ");
	rt_json_str(f, r->adv.reason);
	fprintf(f, ", \"hint\": ");
	json_str_or_null(f, r->adv.hint);
	fprintf(f, ", \"why_not\": ");
	json_str_or_null(f, r->adv.why_not);
	fprintf(f, "}");
}

static void json_region(FILE *f, const struct region *r)
{
	fprintf(f, "{\"name\": ");
	rt_json_str(f, r->name);
	fprintf(f, ", \"label\": ");
	if (r->labelled)
		rt_json_str(f, r->name);
	else
		fprintf(f, "null");
	fprintf(f, ", \"mapping\": ");
	rt_json_str(f, r->mapping);
	fprintf(f, ", \"kind\": \"%s\", \"perms\": \"%s\", \"start\": %llu, \"end\": %llu, \"range\": \"0x%llx-0x%llx\", \"size\": %llu, \"pages\": %llu, \"pages_present\": %llu, \"pages_counted\": %llu, \"pages_zero\": %llu, \"pages_denied\": %llu, \"pages_uncounted\": %llu, \"refs\": %llu, \"refs_by_node\": ",
		r->kind, r->perms, (unsigned long long)r->start,
		(unsigned long long)r->end, (unsigned long long)r->start,
		(unsigned long long)r->end,
		(unsigned long long)(r->end - r->start),
		(unsigned long long)r->pages, (unsigned long long)r->present,
		(unsigned long long)r->counted, (unsigned long long)r->zero,
		(unsigned long long)r->denied,
		(unsigned long long)r->uncounted, (unsigned long long)r->total);
	json_by_counter(f, r->refs);
	fprintf(f, ", \"local_refs\": %llu, \"local_share\": ",
		(unsigned long long)r->local);
	if (r->total)
		fprintf(f, "%.4f", (double)r->local / (double)r->total);
	else
		fprintf(f, "null");
	fprintf(f, ", \"home_nodes\": ");
	json_home(f, r);
	fprintf(f, ", \"lost\": ");
	if (r->lost_pages)
		fprintf(f, "%llu", (unsigned long long)r->lost_total);
	else
		fprintf(f, "null");
	fprintf(f, ", \"migration_candidates\": %llu, \"advice\": ",
		(unsigned long long)r->candidates);
	json_advice(f, r);
	fprintf(f, "}");
}

static void json_frame(FILE *f, const struct sym_loc *l)
{
	fprintf(f, "{\"function\": ");
	rt_json_str(f, l->func);
	fprintf(f, ", \"file\": ");
	json_str_or_null(f, l->file);
	fprintf(f, ", \"line\": ");
	if (l->line)
		fprintf(f, "%d", l->line);
	else
		fprintf(f, "null");
	fprintf(f, ", \"module\": ");
	json_str_or_null(f, l->module);
	fprintf(f, ", \"address\": %llu, \"inlined\": %s}",
		(unsigned long long)l->pc, l->inlined ? "true" : "false");
}

/* Who uses it: nodes with 15% or more, and their threads. */
static void json_users(FILE *f, const struct snapshot *s, const struct region *r)
{
	int c, i, first = 0, nf = 0;

	fprintf(f, ", \"used_by_nodes\": [");
	for (c = 0; c < ctr.nr && r->total; c++)
		if ((double)r->refs[c] >= 0.15 * (double)r->total)
			fprintf(f, "%s\"%s\"", nf++ ? ", " : "", ctr.label[c]);
	fprintf(f, "], \"threads\": [");
	for (c = 0; c < ctr.nr && r->total; c++) {
		if ((double)r->refs[c] < 0.15 * (double)r->total)
			continue;
		for (i = 0; i < s->nr_threads; i++) {
			const struct thread_info *th = &s->threads[i];

			if (th->node != counter_nid(c))
				continue;
			fprintf(f, "%s{\"tid\": %d, \"comm\": ", first++ ? ", " : "",
				(int)th->tid);
			rt_json_str(f, th->comm);
			fprintf(f, ", \"node\": %d}", th->node);
		}
	}
	fprintf(f, "]");
}

static uint64_t reading_total(const struct track_reading *t)
{
	uint64_t n = 0;
	int c;

	for (c = 0; c < ctr.nr && c < TRACK_COUNTERS; c++)
		n += t->refs[c];
	return n;
}

static void json_object_origin(FILE *f, const struct region *r)
{
	const struct objinfo *oi = r->obj;
	int i;

	fprintf(f, ", \"function\": ");
	json_str_or_null(f, oi->func);
	fprintf(f, ", \"file\": ");
	json_str_or_null(f, oi->file);
	fprintf(f, ", \"line\": ");
	if (oi->line)
		fprintf(f, "%d", oi->line);
	else
		fprintf(f, "null");
	fprintf(f, ", \"via\": ");
	json_str_or_null(f, oi->via);
	fprintf(f, ", \"caller\": ");
	json_str_or_null(f, oi->caller);
	fprintf(f, ", \"module\": ");
	json_str_or_null(f, oi->module);
	fprintf(f, ", \"section\": ");
	json_str_or_null(f, oi->section);
	fprintf(f, ", \"stack\": [");
	for (i = 0; i < oi->nr_stack; i++) {
		fprintf(f, "%s", i ? ", " : "");
		json_frame(f, &oi->stack[i]);
	}
	fprintf(f, "]");
	if (oi->kind == OBJ_ALLOC) {
		fprintf(f, ", \"allocated_by\": {\"tid\": %d, \"node\": ", oi->tid);
		if (oi->alloc_node >= 0)
			fprintf(f, "%d}", oi->alloc_node);
		else
			fprintf(f, "null}");
		fprintf(f, ", \"placed\": %s, \"node_asked\": ",
			oi->placed ? "true" : "false");
		if (oi->arg_node >= 0)
			fprintf(f, "%d", oi->arg_node);
		else
			fprintf(f, "null");
		fprintf(f, ", \"nth\": %d, \"of\": %d, \"seconds_allocated\": %.6f, \"freed\": %s, \"seconds_freed\": ",
			oi->nth, oi->of, oi->t_alloc, oi->freed ? "true" : "false");
		if (oi->freed)
			fprintf(f, "%.6f", oi->t_free);
		else
			fprintf(f, "null");
		fprintf(f, ", \"freed_by_realloc\": %s", oi->realloced ? "true" : "false");
		/* What its pages had counted before it (reused memory), taken off. */
		fprintf(f, ", \"before\": ");
		if (oi->base)
			fprintf(f, "{\"pages_present\": %llu, \"refs\": %llu}",
				(unsigned long long)oi->base->pages_present,
				(unsigned long long)reading_total(oi->base));
		else
			fprintf(f, "null");
	}
	if (oi->kind == OBJ_SITE)
		fprintf(f, ", \"calls\": %llu", (unsigned long long)oi->calls);
}

static void json_object(FILE *f, const struct snapshot *s, const struct region *r)
{
	const struct objinfo *oi = r->obj;
	int lost = r->lost_pages > 0;

	fprintf(f, "{\"name\": ");
	rt_json_str(f, r->name);
	fprintf(f, ", \"kind\": \"%s\", \"alloc\": ", obj_kind_name(oi->kind));
	json_str_or_null(f, oi->alloc);
	json_object_origin(f, r);
	fprintf(f, ", \"mapping\": ");
	json_str_or_null(f, r->mapping);
	fprintf(f, ", \"start\": %llu, \"end\": %llu, \"range\": \"0x%llx-0x%llx\", \"size\": %llu, \"pages\": %llu, \"pages_present\": %llu, \"pages_counted\": %llu, \"pages_zero\": %llu, \"pages_shared\": %llu, \"refs\": %llu, \"refs_by_node\": ",
		(unsigned long long)r->start, (unsigned long long)r->end,
		(unsigned long long)r->start, (unsigned long long)r->end,
		(unsigned long long)(oi->size ? oi->size : r->end - r->start),
		(unsigned long long)r->pages, (unsigned long long)r->present,
		(unsigned long long)r->counted, (unsigned long long)r->zero,
		(unsigned long long)oi->pages_shared, (unsigned long long)r->total);
	json_by_counter(f, r->refs);
	fprintf(f, ", \"local_refs\": %llu, \"remote_refs\": %llu, \"remote_share\": ",
		(unsigned long long)r->local, (unsigned long long)remote_refs(r));
	if (r->total)
		fprintf(f, "%.4f", (double)remote_refs(r) / (double)r->total);
	else
		fprintf(f, "null");
	fprintf(f, ", \"lost\": ");
	if (lost)
		fprintf(f, "%llu, \"lost_by_node\": ", (unsigned long long)r->lost_total);
	else
		fprintf(f, "null, \"lost_by_node\": null");
	if (lost)
		json_by_counter(f, r->lost);
	fprintf(f, ", \"samples\": %llu, \"few_samples\": %s, \"refs_interval\": ",
		(unsigned long long)samples_of(r), few_samples(r) ? "true" : "false");
	json_interval(f, r->total);
	fprintf(f, ", \"refs_by_node_interval\": ");
	json_interval_by_counter(f, r->refs);
	fprintf(f, ", \"home_nodes\": ");
	json_home(f, r);
	json_users(f, s, r);
	fprintf(f, ", \"migration_candidates\": %llu, \"advice\": ",
		(unsigned long long)r->candidates);
	json_advice(f, r);
	fprintf(f, "}");
}

static void json_objects(FILE *f, const struct snapshot *s, const char *indent)
{
	struct region **order;
	int i, n = 0;

	fprintf(f, "[");
	if (!s) {
		fprintf(f, "]");
		return;
	}
	order = objects_shown(s, &n);
	for (i = 0; i < n; i++) {
		fprintf(f, "%s\n%s  ", i ? "," : "", indent);
		json_object(f, s, order[i]);
	}
	fprintf(f, "%s]", n ? "\n" : "");
	if (n)
		fprintf(f, "%s", "");
	free(order);
}

/* References by home node (rows) and accessing counter (columns). */
static void json_matrix(FILE *f, const struct snapshot *s)
{
	int h, c;

	fprintf(f, "{\"home_nodes\": [");
	for (h = 0; h < ctr.nr_cnodes; h++)
		fprintf(f, "%s%d", h ? ", " : "", ctr.cnode_nid[h]);
	fprintf(f, "], \"accessing\": [");
	for (c = 0; c < ctr.nr; c++)
		fprintf(f, "%s\"%s\"", c ? ", " : "", ctr.label[c]);
	fprintf(f, "], \"refs\": [");
	for (h = 0; h < ctr.nr_cnodes; h++) {
		fprintf(f, "%s[", h ? ", " : "");
		for (c = 0; c < ctr.nr; c++)
			fprintf(f, "%s%llu", c ? ", " : "",
				(unsigned long long)(s ? s->matrix[(size_t)h * ctr.nr + c] : 0));
		fprintf(f, "]");
	}
	fprintf(f, "]}");
}

static void json_tracking(FILE *f, const struct snapshot *s)
{
	char buf[1024];
	int i, n;

	fprintf(f, "{\"executable\": ");
	json_str_or_null(f, s ? s->exe : NULL);
	fprintf(f, ", \"tracked\": %s, \"status\": ", s && s->track ? "true" : "false");
	rt_json_str(f, s ? track_status(s, buf, sizeof(buf)) : "no snapshot");
	fprintf(f, ", \"static\": %s, \"threshold\": %llu",
		s && s->exe_static == 1 ? "true" : "false",
		(unsigned long long)opt.track_threshold);
	if (s && s->track)
		fprintf(f, ", \"sites\": %u, \"objects\": %u, \"readings\": %u, \"counters_read\": %s, \"dropped\": %llu",
			s->track->nr_sites, s->track->nr_objs, s->track->nr_reads,
			s->track->h.flags & TRACK_F_COUNTERS ? "true" : "false",
			(unsigned long long)(s->track->h.dropped_sites +
					     s->track->h.dropped_objs +
					     s->track->h.dropped_reads +
					     s->track->h.dropped_pages));
	fprintf(f, ", \"own_memory\": [");
	for (i = 0, n = 0; s && i < s->nr_o; i++) {
		const struct region *r = &s->o[i];

		if (!r->obj->own_memory)
			continue;
		fprintf(f, "%s{\"start\": %llu, \"end\": %llu, \"size\": %llu, \"pages_present\": %llu}",
			n++ ? ", " : "", (unsigned long long)r->start,
			(unsigned long long)r->end,
			(unsigned long long)(r->end - r->start),
			(unsigned long long)r->present);
	}
	fprintf(f, "], \"symbols_missing\": ");
	if (s && symbol_gaps(s, buf, sizeof(buf))[0])
		rt_json_str(f, buf);
	else
		fprintf(f, "null");
	fprintf(f, "}");
}

static void json_feeds_used(FILE *f)
{
	int i;

	fprintf(f, ", \"weight\": %ld, \"weight_known\": %s, \"exact\": %s, \"confidence\": 0.95, \"used\": [",
		feed_weight(), feed_weight_known() ? "true" : "false",
		counts_exact() ? "true" : "false");
	for (i = 0; i < nr_feeds_used; i++) {
		fprintf(f, "%s{\"name\": \"%s\", \"weight\": %ld, \"samples\": %llu, \"dropped\": %llu, \"throttled\": %llu",
			i ? ", " : "", feed_used[i].name, feed_used[i].weight,
			(unsigned long long)feed_used[i].delivered,
			(unsigned long long)feed_used[i].dropped,
			(unsigned long long)feed_used[i].throttled);
		if (feed_used[i].throttled_share >= 0)
			fprintf(f, ", \"throttled_share\": %.6f",
				feed_used[i].throttled_share);
		else
			fprintf(f, ", \"throttled_share\": null");
		if (feed_used[i].throttle_lost >= 0)
			fprintf(f, ", \"throttle_lost\": %lld",
				feed_used[i].throttle_lost);
		else
			fprintf(f, ", \"throttle_lost\": null");
		fprintf(f, ", \"what\": ");
		rt_json_str(f, feed_used[i].what);
		fprintf(f, ", \"meaning\": ");
		rt_json_str(f, feed_used[i].meaning);
		fprintf(f, "}");
	}
	fprintf(f, "]");
}

static void json_regions(FILE *f, const struct snapshot *s, const char *indent)
{
	int i, first = 0;

	fprintf(f, "[");
	for (i = 0; s && i < s->nr; i++) {
		if (!shown(&s->r[i]))
			continue;
		fprintf(f, "%s\n%s  ", first++ ? "," : "", indent);
		json_region(f, &s->r[i]);
	}
	fprintf(f, "%s]", first ? "\n" : "");
	(void)indent;
}

static void json_status(FILE *f, int st)
{
	if (WIFEXITED(st))
		fprintf(f, "{\"exited\": %d}", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		fprintf(f, "{\"signal\": %d}", WTERMSIG(st));
	else
		fprintf(f, "null");
}

static void json_hot(FILE *f, const struct snapshot *s)
{
	int i, c, first;

	fprintf(f, "[");
	for (i = 0; s && i < s->nr_hot; i++) {
		const struct hot *h = &s->hot[i];

		fprintf(f, "%s\n    {\"vaddr\": %llu, \"region\": ", i ? "," : "",
			(unsigned long long)h->vaddr);
		rt_json_str(f, region_of(s, h->region));
		fprintf(f, ", \"object\": ");
		rt_json_str(f, h->object >= 0 && h->object < s->nr_o ?
			    s->o[h->object].name : "?");
		fprintf(f, ", \"home_node\": %d, \"paddr\": %llu, \"page_size\": %llu, \"refs\": %llu, \"refs_by_node\": {",
			h->home >= 0 && h->home < ctr.nr_cnodes ?
			ctr.cnode_nid[h->home] : -1,
			(unsigned long long)h->paddr,
			(unsigned long long)h->page_size,
			(unsigned long long)h->total);
		for (c = first = 0; c < ctr.nr; c++)
			if (h->refs[c])
				fprintf(f, "%s\"%s\": %u", first++ ? ", " : "",
					ctr.label[c], h->refs[c]);
		fprintf(f, "}}");
	}
	fprintf(f, "%s]", s && s->nr_hot ? "\n  " : "");
}

static int untraced_first;

/* A process that wrote a table but was not traced (no --follow-children). */
static void json_untraced(void *arg, pid_t pid)
{
	if (find_proc(pid))
		return;
	fprintf(arg, "%s%d", untraced_first ? "" : ", ", (int)pid);
	untraced_first = 0;
}

void report_json(FILE *f, char **argv, int exit_code, long period,
			long old_period)
{
	struct proc *p, *m = NULL;
	int i, first;

	for (p = procs; p; p = p->next)
		if (p->is_main)
			m = p;
	fprintf(f, "{\n  \"command\": [");
	for (i = 0; argv[i]; i++) {
		fprintf(f, "%s", i ? ", " : "");
		rt_json_str(f, argv[i]);
	}
	fprintf(f, "],\n  \"pid\": %d,\n  \"status\": ", (int)main_pid);
	json_status(f, m ? m->status : 0);
	fprintf(f, ",\n  \"exit_code\": %d,\n  \"seconds\": %.3f,\n", exit_code,
		(t_end.tv_sec - t_start.tv_sec) + (t_end.tv_nsec - t_start.tv_nsec) / 1e9);
	fprintf(f, "  \"counters\": {\"source\": \"extended+hardware\", \"granularity\": %u, \"nodes_per_counter\": %d, \"diff_threshold\": %u, \"labels\": [",
		info.rcb_granularity, ctr.nodes_per_counter, info.rcb_diff_threshold);
	for (i = 0; i < ctr.nr; i++)
		fprintf(f, "%s\"%s\"", i ? ", " : "", ctr.label[i]);
	fprintf(f, "]},\n  \"feeds\": {\"fault_period\": %ld, \"fault_period_before\": %ld, \"hinting\": %s, \"scope\": \"%s\"",
		period, old_period, opt.hinting ? "true" : "false",
		opt.machine_wide || !period ? "machine" : "process");
	if (count_done)
		fprintf(f, ", \"samples\": %llu, \"delivered\": %llu, \"unresolved\": %llu, \"dropped\": %llu",
			(unsigned long long)count_stats.samples,
			(unsigned long long)count_stats.delivered,
			(unsigned long long)count_stats.unresolved,
			(unsigned long long)count_stats.dropped);
	json_feeds_used(f);
	fprintf(f, "},\n");
	fprintf(f, "  \"snapshot\": %s,\n", m && m->snap ? "true" : "false");
	fprintf(f, "  \"min_samples\": %ld,\n  \"lost_known\": %s,\n  \"tracking\": ",
		opt.min_samples, m && m->snap && m->snap->lost_known ? "true" : "false");
	json_tracking(f, m ? m->snap : NULL);
	fprintf(f, ",\n  \"node_matrix\": ");
	json_matrix(f, m ? m->snap : NULL);
	fprintf(f, ",\n  \"objects\": ");
	json_objects(f, m ? m->snap : NULL, "  ");
	fprintf(f, ",\n  \"regions\": ");
	json_regions(f, m ? m->snap : NULL, "  ");
	fprintf(f, ",\n  \"hottest_pages\": ");
	json_hot(f, m ? m->snap : NULL);
	fprintf(f, ",\n  \"processes\": [");
	for (p = procs, first = 0; p; p = p->next) {
		fprintf(f, "%s\n   {\"pid\": %d, \"command\": ", first++ ? "," : "",
			(int)p->tgid);
		rt_json_str(f, p->cmd);
		fprintf(f, ", \"main\": %s, \"status\": ", p->is_main ? "true" : "false");
		json_status(f, p->status);
		fprintf(f, ", \"snapshot\": %s, \"tracking\": ", p->snap ? "true" : "false");
		json_tracking(f, p->snap);
		fprintf(f, ", \"objects\": ");
		json_objects(f, p->snap, "    ");
		fprintf(f, ", \"regions\": ");
		json_regions(f, p->snap, "    ");
		fprintf(f, "}");
	}
	fprintf(f, "\n  ],\n  \"untraced_pids\": [");
	untraced_first = 1;
	track_tables(json_untraced, f);
	fprintf(f, "]");
	migrate_report_json(f);
	fprintf(f, "\n}\n");
}
