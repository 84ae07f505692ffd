// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: the references lost to pegging, beside every count. The
 * range query gives a page's hardware and extended counters, not its lost
 * ones: those are read by set (RCB_SETS_READ) on the page's node, found
 * from its physical address (refcnt_node_locate()). The pages are queued
 * while the counters are read, then sorted by node and set and read in
 * runs of neighbouring sets. Physical addresses need CAP_SYS_ADMIN:
 * without them, lost counts are unknown (and the reports say so).
 */
#include <stdlib.h>
#include <string.h>

#include "run.h"

/* Sets per RCB_SETS_READ. */
#define SETS_CHUNK	1024

void lost_queue(struct snapshot *s, uint64_t paddr, int cnodeid, int region,
		int object)
{
	if (s->nr_lostq == s->cap_lostq) {
		s->cap_lostq = s->cap_lostq ? 2 * s->cap_lostq : 4096;
		s->lostq = realloc(s->lostq, s->cap_lostq * sizeof(*s->lostq));
		if (!s->lostq) {
			rt_err("out of memory");
			exit(RT_EXIT_RUN_FAIL);
		}
	}
	s->lostq[s->nr_lostq++] = (struct lost_page){ paddr, cnodeid, region, object };
}

struct located {
	int64_t set;
	size_t q;		/* index in the queue */
};

static int cmp_located(const void *a, const void *b)
{
	const struct located *x = a, *y = b;

	return (x->set > y->set) - (x->set < y->set);
}

static void add_lost(struct region *r, const uint32_t *lost)
{
	int c;

	for (c = 0; c < ctr.nr; c++) {
		r->lost[c] += lost[c];
		r->lost_total += lost[c];
	}
	r->lost_pages++;
}

/* The queued pages of one node: located, sorted, read in runs. */
static int read_node(struct snapshot *s, struct refcnt_node *nd, int cnodeid)
{
	struct located *lp = xcalloc(s->nr_lostq, sizeof(*lp));
	uint32_t *lost = xcalloc((size_t)SETS_CHUNK * ctr.nr, sizeof(uint32_t));
	size_t n = 0, i, j;
	int rc = 0;

	for (i = 0; i < s->nr_lostq; i++) {
		int64_t set;

		if (s->lostq[i].cnodeid != cnodeid)
			continue;
		set = refcnt_node_locate(nd, s->lostq[i].paddr);
		if (set >= 0)
			lp[n++] = (struct located){ set, i };
	}
	qsort(lp, n, sizeof(*lp), cmp_located);
	for (i = 0; i < n && !rc; i = j) {
		int64_t first = lp[i].set;

		for (j = i; j < n && lp[j].set < first + SETS_CHUNK; j++)
			;
		if (refcnt_node_read_sets(nd, first, lp[j - 1].set - first + 1,
					  NULL, NULL, lost)) {
			rc = -1;
			break;
		}
		for (; i < j; i++) {
			const struct lost_page *q = &s->lostq[lp[i].q];
			const uint32_t *l = lost + (size_t)(lp[i].set - first) * ctr.nr;

			add_lost(&s->r[q->region], l);
			if (q->object >= 0)
				add_lost(&s->o[q->object], l);
		}
		j = i;
	}
	free(lp);
	free(lost);
	return rc;
}

void lost_read(struct snapshot *s)
{
	int c, ok = 1;

	if (!s->nr_lostq || info.rcb_sw_counters_per_set != (uint32_t)ctr.nr)
		return;
	for (c = 0; c < ctr.nr_cnodes && ok; c++) {
		struct refcnt_node *nd;

		if (!node_has_mem[c])
			continue;
		nd = refcnt_node_open(ctr.cnode_nid[c], 0);
		if (!nd || read_node(s, nd, c))
			ok = 0;
		refcnt_node_close(nd);
	}
	s->lost_known = ok;
	free(s->lostq);
	s->lostq = NULL;
	s->nr_lostq = s->cap_lostq = 0;
}
