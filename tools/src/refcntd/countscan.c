// SPDX-License-Identifier: GPL-2.0
/*
 * refcntd: the counter scan. Migration events say a set passed the
 * module's thresholds once; the counters themselves say, at any time,
 * which pages are used from where. Every count_scan_ms, refcntd reads
 * the counters of the pages of the processes it acts on (the range query,
 * by virtual address: no reverse map needed; the extended counters and
 * the hardware ones not folded into them yet), takes each
 * page's references since its last look, and hands the pages whose
 * remote references pass the thresholds over their home ones to the same
 * policy and moves as events, worst first, so that a batch of pages goes
 * in one move_pages(2) per process. As the Origin's migration did, it
 * acts on the counts, not on a queue that may have dropped them.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Pages per range query: one buffer, reused. */
#define RD_SCAN_CHUNK	512

static uint32_t seen_hash(pid_t pid, uint64_t vaddr)
{
	return ((vaddr >> 12) * 0x9E3779B97F4A7C15ULL ^ (uint64_t)pid) >> 46;
}

/*
 * The page's counts at the last look, and the slot that keeps them: an
 * unknown page starts from zero (its counts since the counters began).
 * The table is lossy: a page it has no room for is judged on all its
 * counts each time, as if never seen.
 */
static struct rd_seen *seen_find(struct rd_engine *e, pid_t pid,
				 uint64_t vaddr, uint64_t paddr,
				 uint32_t *home, uint32_t *remote)
{
	struct rd_seen *free_slot = NULL;
	uint32_t h = seen_hash(pid, vaddr), i;

	*home = *remote = 0;
	for (i = 0; i < RD_SEEN_PROBE; i++) {
		struct rd_seen *s = &e->seen[(h + i) % RD_SEEN_SLOTS];

		if (s->gen && s->pid == pid && s->vaddr == vaddr) {
			/* Another frame now: its counts are not the page's. */
			if (s->paddr == paddr) {
				*home = s->home;
				*remote = s->remote;
			}
			return s;
		}
		/* A slot not refreshed by the last two scans is free. */
		if (!free_slot && (!s->gen || s->gen + 1 < e->seen_gen))
			free_slot = s;
	}
	return free_slot;
}

/* A candidate move: the event the page would have raised. */
struct rd_cand {
	struct rcb_event ev;
	int64_t score;		/* remote - home since the last look */
};

struct rd_cands {
	struct rd_cand *c;
	size_t n, cap;
};

/* A process's present pages this scan, and how many on each cnode. */
struct rd_tally {
	uint32_t present;
	uint32_t *on;		/* by cnodeid */
};

static void cand_add(struct rd_cands *cs, const struct rcb_event *ev,
		     int64_t score)
{
	if (cs->n == cs->cap) {
		size_t cap = cs->cap ? 2 * cs->cap : 1024;
		struct rd_cand *c = realloc(cs->c, cap * sizeof(*c));

		if (!c)
			return;
		cs->c = c;
		cs->cap = cap;
	}
	cs->c[cs->n++] = (struct rd_cand){ *ev, score };
}

/*
 * One page's entries (extended and hardware counts): the busiest remote
 * counter and the home one since the last look, and a candidate if the
 * remote one leads.
 */
static void scan_page(struct rd_engine *e, pid_t pid, uint64_t vaddr,
		      const struct rcb_page_set *ps,
		      const struct rcb_page_set *hw, struct rd_cands *cs,
		      struct rd_tally *t)
{
	unsigned int cps = e->info[0].rcb_sw_counters_per_set;
	unsigned int npc = e->info[0].rcb_nodes_per_counter ?
			   e->info[0].rcb_nodes_per_counter : 1;
	unsigned int home_c = ps->cnodeid / npc, c, best = home_c;
	uint32_t home_then, remote_then, home, remote = 0;
	struct rcb_event ev = { .type = RCB_EVENT_MIGRATE,
				.flags = RCB_EVENT_F_CONTEXT };
	struct rd_seen *s;

	for (c = 0; c < cps; c++) {
		uint32_t n = ps->refcnt[c] + hw->refcnt[c];

		if (c != home_c && n > remote) {
			remote = n;
			best = c;
		}
	}
	home = home_c < cps ? ps->refcnt[home_c] + hw->refcnt[home_c] : 0;
	s = seen_find(e, pid, vaddr, ps->paddr, &home_then, &remote_then);
	if (s)
		*s = (struct rd_seen){ pid, e->seen_gen, vaddr, ps->paddr,
				       home, remote };
	e->st.count_scan_pages++;
	t->present++;
	if (ps->cnodeid >= 0 && ps->cnodeid < e->ctr.nr_cnodes)
		t->on[ps->cnodeid]++;
	/* A counter that went down was reset or folded: start again. */
	if (home < home_then || remote < remote_then)
		home_then = remote_then = 0;
	if (best == home_c || remote - remote_then <= home - home_then)
		return;
	ev.pid = pid;
	ev.vaddr = vaddr;
	ev.paddr = ps->paddr;
	ev.home_cnodeid = ps->cnodeid;
	ev.counter = best;
	ev.src_cnodeid = best * npc;
	ev.count = remote - remote_then;
	ev.home_count = home - home_then;
	cand_add(cs, &ev, (int64_t)ev.count - ev.home_count);
}

/* The private writable anonymous memory of pid, a chunk at a time. */
static void scan_process(struct rd_engine *e, pid_t pid, void *buf,
			 void *hwbuf, struct rd_cands *cs, struct rd_tally *t)
{
	unsigned int cps = e->info[0].rcb_sw_counters_per_set;
	uint64_t gran = e->granularity > 4096 ? e->granularity : 4096;
	char path[64], line[512];
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	maps = fopen(path, "re");
	while (maps && fgets(line, sizeof(line), maps)) {
		uint64_t s, end, a;

		if (!rd_maps_private_anon(line, &s, &end))
			continue;
		/* Chunks of whole hardware pages: none is seen twice. */
		for (a = s & ~(gran - 1); a < end; a += RD_SCAN_CHUNK * gran) {
			uint64_t from = a < s ? s : a;
			uint64_t to = end - a < RD_SCAN_CHUNK * gran ?
				      end : a + RD_SCAN_CHUNK * gran;
			size_t nr = 0, nr_hw = 0, i;

			/*
			 * Extended first: a fold between the two makes a
			 * page's counts look lower once (a fresh start), never
			 * counted twice.
			 */
			if (refcnt_node_range_query_packed(e->node[0], pid, from,
							   to - from,
							   RCB_RANGE_EXTENDED, buf,
							   RD_SCAN_CHUNK, &nr) ||
			    refcnt_node_range_query_packed(e->node[0], pid, from,
							   to - from, 0, hwbuf,
							   RD_SCAN_CHUNK, &nr_hw))
				break;	/* gone, or not ours to read */
			for (i = 0; i < nr && i < nr_hw; i++) {
				struct rcb_page_set *ps = refcnt_page_set(buf, i, cps);
				struct rcb_page_set *hw = refcnt_page_set(hwbuf, i, cps);

				if (ps->flags & RCB_PAGE_PRESENT && ps->paddr == hw->paddr)
					scan_page(e, pid, a + i * gran, ps, hw, cs, t);
			}
		}
	}
	if (maps)
		fclose(maps);
}

static int same_nodes(const struct rcb_event *a, const struct rcb_event *b)
{
	return a->counter == b->counter && a->home_cnodeid == b->home_cnodeid;
}

/* The (users' counter, home) most of cs[first..] share, and how many. */
static size_t main_nodes(const struct rd_cands *cs, size_t first,
			 const struct rcb_event **ev)
{
	size_t i, votes = 0, n = 0;

	/* Boyer-Moore: a majority, if there is one, is the one left. */
	*ev = NULL;
	for (i = first; i < cs->n; i++) {
		if (!votes)
			*ev = &cs->c[i].ev;
		votes += !votes || same_nodes(&cs->c[i].ev, *ev) ? 1 : -1;
	}
	for (i = first; i < cs->n; i++)
		n += same_nodes(&cs->c[i].ev, *ev);
	return n;
}

static int hinted_before(struct rd_engine *e, pid_t pid,
			 const struct rcb_event *ev)
{
	struct rd_hinted h = { pid, (int)ev->counter, (int)ev->home_cnodeid };
	unsigned int i;

	for (i = 0; i < RD_HINTED_SLOTS; i++)
		if (!memcmp(&e->hinted[i], &h, sizeof(h)))
			return 1;
	e->hinted[e->next_hinted++ % RD_HINTED_SLOTS] = h;
	return 0;
}

/*
 * The pages this scan found remote-led in pid are, nine in ten at least,
 * used from one node and on one other node that has CPUs, where nine in
 * ten of all its pages are: its memory follows its threads only if all of
 * it moves, its threads would follow its memory by moving none. Threads
 * are the scheduler's and the administrator's (numactl --cpunodebind,
 * NUMA balancing's task placement), so refcntd says it, once per process
 * and nodes, counts it, and moves the pages as its policy says.
 */
static void thread_hint(struct rd_engine *e, pid_t pid,
			const struct rd_cands *cs, size_t first,
			const struct rd_tally *t)
{
	const struct rcb_event *ev;
	char comm[32] = "?", path[64];
	size_t n = cs->n - first, main_n;
	unsigned int home;

	if (!e->cfg.thread_hint_pages || n < e->cfg.thread_hint_pages)
		return;
	main_n = main_nodes(cs, first, &ev);
	home = ev->home_cnodeid;
	if (main_n < e->cfg.thread_hint_pages || main_n * 10 < n * 9 ||
	    home >= (unsigned int)e->ctr.nr_cnodes || !e->has_cpu[home] ||
	    (uint64_t)t->on[home] * 10 < (uint64_t)t->present * 9)
		return;
	e->st.thread_hints++;
	if (hinted_before(e, pid, ev))
		return;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	rt_read_line(path, comm, sizeof(comm));
	rd_log(5, "pid %d (%s): %zu pages used from node %s are on node %d, with %u of its %u pages: its threads belong there (refcntd moves pages, not threads)",
	       pid, comm, main_n, e->ctr.label[ev->counter],
	       e->ctr.cnode_nid[home], t->on[home], t->present);
}

static int cand_worse(const void *a, const void *b)
{
	const struct rd_cand *x = a, *y = b;

	return (y->score > x->score) - (y->score < x->score);
}

/*
 * One counter scan of the processes acted on: their pages ranked by
 * remote over home references since the last scan, decided on and moved
 * worst first (the rate limit then keeps the worst).
 */
void rd_count_scan(struct rd_engine *e)
{
	unsigned int cps = e->info[0].rcb_sw_counters_per_set;
	struct rd_cands cs = { 0 };
	struct rd_tally t = { 0 };
	struct dirent *de;
	void *buf, *hwbuf;
	DIR *d;
	size_t i;

	buf = malloc(RD_SCAN_CHUNK * RCB_PAGE_SET_SIZE(cps));
	hwbuf = malloc(RD_SCAN_CHUNK * RCB_PAGE_SET_SIZE(cps));
	t.on = calloc(e->ctr.nr_cnodes, sizeof(*t.on));
	d = opendir("/proc");
	if (!buf || !hwbuf || !t.on || !d || !e->seen)
		goto out;
	e->seen_gen++;
	while ((de = readdir(d))) {
		pid_t pid = atoi(de->d_name);
		size_t first = cs.n;

		if (pid <= 0 || pid == getpid() || !rd_policy_opted_in(&e->cfg, pid))
			continue;
		t.present = 0;
		memset(t.on, 0, e->ctr.nr_cnodes * sizeof(*t.on));
		scan_process(e, pid, buf, hwbuf, &cs, &t);
		thread_hint(e, pid, &cs, first, &t);
	}
	e->st.count_scans++;
	e->st.count_scan_candidates += cs.n;
	qsort(cs.c, cs.n, sizeof(*cs.c), cand_worse);
	for (i = 0; i < cs.n; i++)
		rd_decide_act(e, &cs.c[i].ev);
	rd_move_flush(e);
out:
	if (d)
		closedir(d);
	free(buf);
	free(hwbuf);
	free(t.on);
	free(cs.c);
}
