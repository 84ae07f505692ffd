// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: placement advice per region: move it to the node that uses
 * it, interleave it over the nodes that share it, or leave it.
 */
#include <stdio.h>
#include <string.h>

#include "run.h"

void nodes_str(const int *nids, int n, char *buf, size_t size)
{
	size_t len = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < n && len < size; i++)
		len += snprintf(buf + len, size - len, "%s%d", i ? "," : "", nids[i]);
}

/* Majority home node (nid) of a region's counted pages, -1 if none. */
int main_home(const struct region *r, uint64_t *pages)
{
	uint64_t best = 0;
	int i, nid = -1;

	for (i = 0; i < ctr.nr_cnodes; i++)
		if (r->home_pages[i] > best) {
			best = r->home_pages[i];
			nid = ctr.cnode_nid[i];
		}
	if (pages)
		*pages = best;
	return nid;
}

void home_str(const struct region *r, char *buf, size_t size)
{
	size_t len = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < ctr.nr_cnodes && len < size; i++)
		if (r->home_pages[i])
			len += snprintf(buf + len, size - len, "%s%d:%.0f%%",
					len ? " " : "", ctr.cnode_nid[i],
					pct(r->home_pages[i], r->counted));
}

/* Nothing to judge: say why (no pages, never written). */
static int no_judgement(const struct region *r, struct advice *a)
{
	if (!r->counted && r->zero) {
		a->why_not = WHY_ZERO;
		snprintf(a->reason, sizeof(a->reason),
			 "never written: its %llu pages map the kernel's shared zero page, whose references are every reader's, not its own",
			 (unsigned long long)r->zero);
		return 1;
	}
	if (!r->counted) {
		snprintf(a->reason, sizeof(a->reason), "%s",
			 r->denied ? "its pages are not visible to this user (run as root)" :
			 "no pages present at exit");
		return 1;
	}
	return 0;
}

static int too_few(const struct region *r, struct advice *a)
{
	if (r->total < (uint64_t)opt.min_refs) {
		snprintf(a->reason, sizeof(a->reason),
			 "too few references (%llu < %ld) to judge",
			 (unsigned long long)r->total, opt.min_refs);
		return 1;
	}
	return 0;
}

/* The counter with most of r's references into *refs; -1 if none. */
static int busiest_counter(const struct region *r, uint64_t *refs)
{
	int best = -1, c;

	*refs = 0;
	for (c = 0; c < ctr.nr; c++)
		if (r->refs[c] > *refs) {
			*refs = r->refs[c];
			best = c;
		}
	return best;
}

/*
 * One counter (best, best_refs) makes opt.min_share of the references:
 * move r to the nearest node with memory (target) of the node it counts
 * (user), unless most of its pages are there already.
 */
static void advise_one_user(struct region *r, int best, uint64_t best_refs)
{
	struct advice *a = &r->adv;
	int user = counter_nid(best), target = nearest_mem_nid(user);
	int tc = cnode_of_nid(target), home;
	uint64_t on_target = tc >= 0 ? r->home_pages[tc] : 0, home_pages;

	home = main_home(r, &home_pages);
	/* Differential threshold: remote beyond local by more than it. */
	if (2 * on_target < r->counted &&
	    best_refs > r->local + info.rcb_diff_threshold && target >= 0) {
		a->action = "move";
		a->node = target;
		a->nodes[a->nr_nodes++] = target;
		snprintf(a->reason, sizeof(a->reason),
			 "%.0f%% of its %llu references come from node %s, but %.0f%% of its pages are on node %d",
			 pct(best_refs, r->total),
			 (unsigned long long)r->total, ctr.label[best],
			 pct(home_pages, r->counted), home);
		if (target != user)
			snprintf(a->reason + strlen(a->reason),
				 sizeof(a->reason) - strlen(a->reason),
				 "; node %d has no memory, node %d is the nearest with memory",
				 user, target);
		snprintf(a->hint, sizeof(a->hint),
			 "mbind(0x%llx, %llu, MPOL_BIND, {%d}, MPOL_MF_MOVE) or numa_tonode_memory() on it; for the whole program: numactl --membind=%d",
			 (unsigned long long)r->start,
			 (unsigned long long)(r->end - r->start), target,
			 target);
	} else if (target != user) {
		snprintf(a->reason, sizeof(a->reason),
			 "%.0f%% of its references come from node %s, which has no memory; its pages are on the nearest node with memory (%d)",
			 pct(best_refs, r->total), ctr.label[best], target);
	} else {
		snprintf(a->reason, sizeof(a->reason),
			 "well placed: %.0f%% of its references come from node %s, where %.0f%% of its pages are",
			 pct(best_refs, r->total), ctr.label[best],
			 pct(on_target, r->counted));
	}
}

/* The nodes with memory nearest to each counter with 15% or more. */
static void sharing_nodes(const struct region *r, struct advice *a)
{
	int c, k, nid, dup;

	for (c = 0; c < ctr.nr; c++) {
		if ((double)r->refs[c] < 0.15 * (double)r->total)
			continue;
		nid = nearest_mem_nid(counter_nid(c));
		if (nid < 0 || a->nr_nodes >= RCB_MAX_COUNTERS)
			continue;
		for (k = dup = 0; k < a->nr_nodes; k++)
			dup |= a->nodes[k] == nid;
		if (!dup)
			a->nodes[a->nr_nodes++] = nid;
	}
}

/* Shared by several nodes: interleave if its pages sit on one. */
static void advise_shared(struct region *r)
{
	struct advice *a = &r->adv;
	uint64_t home_pages;
	int home = main_home(r, &home_pages);
	char nbuf[256];

	sharing_nodes(r, a);
	nodes_str(a->nodes, a->nr_nodes, nbuf, sizeof(nbuf));
	if (a->nr_nodes >= 2 && 4 * home_pages >= 3 * r->counted &&
	    2 * r->local < r->total) {
		a->action = "interleave";
		snprintf(a->reason, sizeof(a->reason),
			 "shared: nodes %s each make 15%% or more of its %llu references, but %.0f%% of its pages are on node %d (local share %.0f%%)",
			 nbuf, (unsigned long long)r->total,
			 pct(home_pages, r->counted), home,
			 pct(r->local, r->total));
		snprintf(a->hint, sizeof(a->hint),
			 "mbind(0x%llx, %llu, MPOL_INTERLEAVE, {%s}, MPOL_MF_MOVE) or numa_interleave_memory() on it; for the whole program: numactl --interleave=%s",
			 (unsigned long long)r->start,
			 (unsigned long long)(r->end - r->start), nbuf, nbuf);
		return;
	}
	a->nr_nodes = 0;
	snprintf(a->reason, sizeof(a->reason),
		 "shared by several nodes, pages spread (local share %.0f%%)",
		 pct(r->local, r->total));
}

/*
 * Nothing to place: a file's code or read-only data (the page cache's,
 * shared with every process that maps the file: a library's text), or a
 * negligible share of the process's references. Say why.
 */
static int not_worth_it(const struct region *r, uint64_t proc_total,
			struct advice *a)
{
	if (r->kind && !strcmp(r->kind, "file") && r->perms[1] != 'w' &&
	    r->perms[3] == 'p' && (!r->obj || r->obj->kind == OBJ_MAPPING)) {
		a->why_not = WHY_FILE;
		snprintf(a->reason, sizeof(a->reason),
			 "%s of a file: its pages are the page cache's, shared with every process that maps the file",
			 r->perms[2] == 'x' ? "code" : "read-only data");
		return 1;
	}
	if ((double)r->total < NEGLIGIBLE_SHARE * (double)proc_total) {
		a->why_not = WHY_NEGLIGIBLE;
		snprintf(a->reason, sizeof(a->reason),
			 "negligible: %.2f%% of the process's %llu references (under %.0f%%)",
			 pct(r->total, proc_total), (unsigned long long)proc_total,
			 100 * NEGLIGIBLE_SHARE);
		return 1;
	}
	return 0;
}

void advise(struct region *r, uint64_t proc_total)
{
	uint64_t best_refs;
	int best;

	memset(&r->adv, 0, sizeof(r->adv));
	r->adv.action = "none";
	r->adv.node = -1;
	if (no_judgement(r, &r->adv) || not_worth_it(r, proc_total, &r->adv) ||
	    too_few(r, &r->adv))
		return;
	best = busiest_counter(r, &best_refs);
	if ((double)best_refs >= opt.min_share * (double)r->total)
		advise_one_user(r, best, best_refs);
	else
		advise_shared(r);
}

/*
 * An object: advise() as for a region, and one more case. A tracked
 * allocation whose pages are on the node its allocating thread ran on,
 * while its references come from elsewhere, was most likely placed by
 * that thread's first touch: initialise it from the thread that uses it.
 */
void advise_object(struct region *r, uint64_t proc_total)
{
	const struct objinfo *oi = r->obj;
	struct advice *a = &r->adv;
	size_t len;

	if (oi && oi->kind == OBJ_TRACKER) {
		memset(a, 0, sizeof(*a));
		a->action = "none";
		a->node = -1;
		a->why_not = WHY_TRACKER;
		snprintf(a->reason, sizeof(a->reason),
			 "librefcnt-track.so's own memory, not the program's");
		return;
	}
	advise(r, proc_total);
	if (strcmp(a->action, "move") || !oi || oi->kind != OBJ_ALLOC ||
	    oi->alloc_node < 0 || oi->placed ||
	    main_home(r, NULL) != oi->alloc_node)
		return;
	a->action = "first-touch";
	len = strlen(a->reason);
	snprintf(a->reason + len, sizeof(a->reason) - len,
		 "; thread %d allocated it on node %d, where its first touch most likely placed it",
		 oi->tid, oi->alloc_node);
	snprintf(a->hint, sizeof(a->hint),
		 "first touch from the thread that uses it: initialise it in the thread(s) on node %d (a page goes to the node of the thread that first writes it), or move it: mbind(0x%llx, %llu, MPOL_BIND, {%d}, MPOL_MF_MOVE)",
		 a->node, (unsigned long long)r->start,
		 (unsigned long long)(r->end - r->start), a->node);
}
