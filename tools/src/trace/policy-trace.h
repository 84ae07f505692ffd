/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A placement table (policy.h) from a trace set: a page per physical page
 * (traces with physical pages) or per virtual page, and a code page per
 * virtual page of instructions; each with its references by the node of
 * the thread that made them (the traces' nodes, or a --map), its first
 * reference, its threads and its node now. Shared by refcnt-policy and
 * refcnt-replay. policy-trace.c.
 */
#ifndef REFCNT_POLICY_TRACE_H
#define REFCNT_POLICY_TRACE_H

#include "cachesim.h"
#include "policy.h"
#include "trace-read.h"
#include "u64map.h"

#define PT_MAX_NID	64		/* node ids of a table's columns */
#define PT_CODE_KEY	(1ull << 63)	/* code pages' keys */

struct pt_build {
	struct pl_table t;		/* columns: node ids 0..PT_MAX_NID-1 */
	struct u64map pages;		/* key -> page index */
	int thread_node[TR_MAX_THREADS];	/* -1: unknown */
	int homes[PT_MAX_NID];		/* 1: a traced page is on the node */
	int phys;			/* keys are physical pages */
	int use_llc;			/* count only misses of a per-node LLC */
	struct cs_geometry g;		/* its geometry */
	struct cs_cache llc[PT_MAX_NID];
};

/*
 * The threads' nodes: each trace's, or map ("T=N,...", may be NULL).
 * 0 or -1 (printed).
 */
int pt_threads(struct pt_build *b, struct tr_set *s, const char *map);
/* The node of thread t, which made a reference: >= 0, or -1 (printed). */
int pt_node(struct pt_build *b, struct tr_set *s, int t);
/* The key of a memory access's page (its physical page with b->phys). */
static inline uint64_t pt_key(const struct pt_build *b, const struct tr_event *e)
{
	return (b->phys ? e->paddr : e->vaddr) >> TR_PAGE_SHIFT;
}
/*
 * Read the whole set into b->t (pt_threads() first; b->use_llc and b->g
 * set as wanted): 0, or -1 (printed).
 */
int pt_read(struct pt_build *b, struct tr_set *s);
/* The index of the page of key in b->t, or -1. */
long pt_find(const struct pt_build *b, uint64_t key);
void pt_free(struct pt_build *b);

#endif /* REFCNT_POLICY_TRACE_H */
