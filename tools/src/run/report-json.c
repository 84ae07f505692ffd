// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: the --json report.
 */
#include <stdio.h>
#include <sys/wait.h>

#include "run.h"

static void json_region(FILE *f, const struct region *r)
{
	char buf[64];
	int c, i, first;

	fprintf(f, "{\"name\": ");
	rt_json_str(f, r->name);
	fprintf(f, ", \"label\": ");
	if (r->labelled)
		rt_json_str(f, r->name);
	else
		fprintf(f, "null");
	fprintf(f, ", \"mapping\": ");
	rt_json_str(f, r->mapping);
	fprintf(f, ", \"kind\": \"%s\", \"perms\": \"%s\", \"start\": %llu, \"end\": %llu, \"range\": \"0x%llx-0x%llx\", \"size\": %llu, \"pages\": %llu, \"pages_present\": %llu, \"pages_counted\": %llu, \"pages_denied\": %llu, \"pages_uncounted\": %llu, \"refs\": %llu, \"refs_by_node\": {",
		r->kind, r->perms, (unsigned long long)r->start,
		(unsigned long long)r->end, (unsigned long long)r->start,
		(unsigned long long)r->end,
		(unsigned long long)(r->end - r->start),
		(unsigned long long)r->pages, (unsigned long long)r->present,
		(unsigned long long)r->counted, (unsigned long long)r->denied,
		(unsigned long long)r->uncounted, (unsigned long long)r->total);
	for (c = first = 0; c < ctr.nr; c++) {
		if (!r->refs[c])
			continue;
		fprintf(f, "%s\"%s\": %llu", first++ ? ", " : "", ctr.label[c],
			(unsigned long long)r->refs[c]);
	}
	fprintf(f, "}, \"local_refs\": %llu, \"local_share\": ",
		(unsigned long long)r->local);
	if (r->total)
		fprintf(f, "%.4f", (double)r->local / (double)r->total);
	else
		fprintf(f, "null");
	fprintf(f, ", \"home_nodes\": {");
	for (i = first = 0; i < ctr.nr_cnodes; i++)
		if (r->home_pages[i])
			fprintf(f, "%s\"%d\": %llu", first++ ? ", " : "",
				ctr.cnode_nid[i], (unsigned long long)r->home_pages[i]);
	fprintf(f, "}, \"migration_candidates\": %llu, \"advice\": {\"action\": \"%s\", \"node\": ",
		(unsigned long long)r->candidates, r->adv.action);
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
	if (r->adv.hint[0])
		rt_json_str(f, r->adv.hint);
	else
		fprintf(f, "null");
	(void)buf;
	fprintf(f, "}}");
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
		fprintf(f, ", \"samples\": %llu, \"delivered\": %llu, \"unresolved\": %llu",
			(unsigned long long)count_stats.samples,
			(unsigned long long)count_stats.delivered,
			(unsigned long long)count_stats.unresolved);
	fprintf(f, "},\n");
	fprintf(f, "  \"snapshot\": %s,\n", m && m->snap ? "true" : "false");
	fprintf(f, "  \"regions\": ");
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
		fprintf(f, ", \"snapshot\": %s, \"regions\": ", p->snap ? "true" : "false");
		json_regions(f, p->snap, "    ");
		fprintf(f, "}");
	}
	fprintf(f, "\n  ]");
	migrate_report_json(f);
	fprintf(f, "\n}\n");
}
