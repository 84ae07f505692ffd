// SPDX-License-Identifier: GPL-2.0
/* A placement table from a trace set (policy-trace.h). */
#include <stdlib.h>
#include <string.h>

#include "policy-trace.h"
#include "rtools.h"
#include "trace-tool.h"

static long page_of(struct pt_build *b, uint64_t key)
{
	int added;
	uint64_t *v = u64map_put(&b->pages, key, &added);
	long i;

	if (!v)
		return -1;
	if (!added)
		return (long)*v;
	i = pl_add(&b->t, key & ~PT_CODE_KEY);
	if (i < 0)
		return -1;
	b->t.pages[i].threads_known = 1;
	b->t.pages[i].code = !!(key & PT_CODE_KEY);
	*v = (uint64_t)i;
	return i;
}

int pt_threads(struct pt_build *b, struct tr_set *s, const char *map)
{
	int t;

	for (t = 0; t < TR_MAX_THREADS; t++)
		b->thread_node[t] = -2;
	if (map && tt_parse_map(map, b->thread_node, tr_set_threads(s)))
		return -1;
	for (t = 0; t < tr_set_threads(s); t++) {
		if (b->thread_node[t] == -2)
			b->thread_node[t] = tr_set_header(s, t)->node;
		if (b->thread_node[t] >= PT_MAX_NID) {
			rt_err("thread %d (%s): node %d; node ids below %d only", t,
			       tr_set_path(s, t), b->thread_node[t], PT_MAX_NID);
			return -1;
		}
	}
	return 0;
}

/* The node of an event's thread; a thread with events needs one. */
int pt_node(struct pt_build *b, struct tr_set *s, int t)
{
	if (b->thread_node[t] >= 0)
		return b->thread_node[t];
	rt_err("thread %d (%s) has no node: give it with --map %d=NODE", t,
	       tr_set_path(s, t), t);
	return -1;
}

/* One access (or code block) of thread t from node n to the page key. */
static int account(struct pt_build *b, const struct tr_event *e, uint64_t key,
		   int node, uint64_t refs)
{
	long i = page_of(b, key);
	struct pl_page *pg;

	if (i < 0) {
		rt_err("out of memory");
		return -1;
	}
	pg = &b->t.pages[i];
	if (pg->first == PL_UNKNOWN) {
		pg->first = node;
		pg->owner = e->thread;
	} else if (pg->owner != e->thread) {
		pg->owner = PL_UNKNOWN;
	}
	if (e->kind == TR_EV_MEM && e->node >= 0 && e->node < PT_MAX_NID) {
		pg->home = e->node;
		b->homes[e->node] = 1;
	}
	b->t.refs[i * b->t.nr_cols + node] += refs;
	return 0;
}

int pt_read(struct pt_build *b, struct tr_set *s)
{
	int cols[PT_MAX_NID], r, c;
	struct tr_event e;

	for (c = 0; c < PT_MAX_NID; c++)
		cols[c] = c;
	if (pl_init(&b->t, PT_MAX_NID, cols) || u64map_init(&b->pages, 4096)) {
		rt_err("out of memory");
		return -1;
	}
	b->phys = tr_set_has(s, TR_HAS_PHYS);
	while ((r = tr_set_next(s, &e)) > 0) {
		int node = pt_node(b, s, e.thread);
		uint64_t key;

		if (node < 0)
			return -1;
		if (e.kind == TR_EV_CODE) {
			if (b->use_llc)
				continue;
			if (account(b, &e, PT_CODE_KEY | e.vaddr >> TR_PAGE_SHIFT, node, e.insns))
				return -1;
			continue;
		}
		if (e.kind != TR_EV_MEM)
			continue;
		if (b->phys && e.page_kind != TR_PAGE_RAM)
			continue;
		key = pt_key(b, &e);
		if (b->use_llc) {
			struct cs_cache *llc = &b->llc[node];
			unsigned int set;
			int dist;

			if (!llc->stack && cs_init(llc, &b->g, 0, 0)) {
				rt_err("out of memory for the LLC model");
				return -1;
			}
			if (cs_access(llc, b->phys ? e.paddr : e.vaddr, &set, &dist) == CS_HIT) {
				/* a hit still touches the page first */
				if (!u64map_get(&b->pages, key) &&
				    account(b, &e, key, node, 0))
					return -1;
				continue;
			}
		}
		if (account(b, &e, key, node, 1))
			return -1;
	}
	return r ? -1 : 0;
}

long pt_find(const struct pt_build *b, uint64_t key)
{
	const uint64_t *v = u64map_get(&b->pages, key);

	return v ? (long)*v : -1;
}

void pt_free(struct pt_build *b)
{
	int n;

	pl_free(&b->t);
	u64map_free(&b->pages);
	for (n = 0; n < PT_MAX_NID; n++)
		if (b->llc[n].stack)
			cs_free(&b->llc[n]);
}
