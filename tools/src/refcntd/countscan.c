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
		      const struct rcb_page_set *hw, struct rd_cands *cs)
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
			 void *hwbuf, struct rd_cands *cs)
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
					scan_page(e, pid, a + i * gran, ps, hw, cs);
			}
		}
	}
	if (maps)
		fclose(maps);
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
	struct dirent *de;
	void *buf, *hwbuf;
	DIR *d;
	size_t i;

	buf = malloc(RD_SCAN_CHUNK * RCB_PAGE_SET_SIZE(cps));
	hwbuf = malloc(RD_SCAN_CHUNK * RCB_PAGE_SET_SIZE(cps));
	d = opendir("/proc");
	if (!buf || !hwbuf || !d || !e->seen)
		goto out;
	e->seen_gen++;
	while ((de = readdir(d))) {
		pid_t pid = atoi(de->d_name);

		if (pid > 0 && pid != getpid() && rd_policy_opted_in(&e->cfg, pid))
			scan_process(e, pid, buf, hwbuf, &cs);
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
	free(cs.c);
}
