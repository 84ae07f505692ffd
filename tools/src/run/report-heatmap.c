// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: --heatmap, objects x accessing node.
 */
#include <stdio.h>
#include <stdlib.h>

#include "heatmap.h"
#include "run.h"

/* Rows of hm from the n objects of order, grouped by their home node. */
static void fill_rows(struct rt_heatmap *hm, struct region **order, int n)
{
	int i, c;

	for (c = 0; c < ctr.nr_cnodes; c++) {
		hm->group_name[c] = xcalloc(1, 24);
		snprintf(hm->group_name[c], 24, "on node %d", ctr.cnode_nid[c]);
	}
	for (i = 0; i < n; i++) {
		const struct region *r = order[i];
		double *v = hm->v + (size_t)i * ctr.nr;
		char h[16];
		int home = main_home(r, NULL), hc = cnode_of_nid(home);

		hm->row_label[i] = xcalloc(1, 64);
		snprintf(hm->row_label[i], 64, "%.28s %s", r->name,
			 rt_human(r->obj && r->obj->size ? r->obj->size :
				  r->end - r->start, h, sizeof(h)));
		hm->row_group[i] = hc;
		for (c = 0; c < ctr.nr; c++)
			v[c] = (double)r->refs[c];
		if (hc >= 0)
			hm->mark[(size_t)i * ctr.nr +
				 hc / ctr.nodes_per_counter] = 1;
	}
}

void report_heatmap(const struct proc *m)
{
	const struct snapshot *s = m ? m->snap : NULL;
	struct rt_heatmap hm;
	struct region **order;
	char title[600], note[200];
	int n = 0, maxrows;

	if (!s) {
		rt_err("--heatmap %s: no counters were read, no heatmap", opt.heatmap);
		return;
	}
	order = objects_shown(s, &n);
	qsort(order, n, sizeof(*order), cmp_region_refs);
	maxrows = (opt.height - 80) / 12;
	if (n > maxrows)
		n = maxrows > 1 ? maxrows : 1;
	if (!n || !order[0]->total) {
		rt_err("--heatmap %s: no object has references", opt.heatmap);
		free(order);
		return;
	}
	if (rt_heatmap_alloc(&hm, &ctr, n)) {
		rt_err("out of memory");
		exit(RT_EXIT_RUN_FAIL);
	}
	fill_rows(&hm, order, n);
	snprintf(title, sizeof(title), "refcnt-run: references by object and accessing node: %.400s (pid %d)",
		 m->cmd, (int)m->tgid);
	snprintf(note, sizeof(note), "colour: references (log scale); outlined cell and left band: the node holding most of the object's pages");
	hm.title = title;
	hm.ylabel = "object (by references)";
	hm.note = note;
	if (!rt_heatmap_write(&hm, opt.heatmap, opt.width, opt.height))
		say("heatmap written to %s (%dx%d)", opt.heatmap, opt.width,
		    opt.height);
	rt_heatmap_free(&hm);
	free(order);
}
