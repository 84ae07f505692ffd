// SPDX-License-Identifier: GPL-2.0
/*
 * model.c: the sequential model of refcnt(5)'s counters (see model.h).
 *
 * The rules, as Documentation/design.rst and abi.rst state them:
 * - a reference from cnode s to a set adds to counter s >> shift; the
 *   hardware counter pegs at hw_max, the excess is lost (and counted in
 *   the saturating 32-bit lost count of that counter);
 * - a delivery of N references is N references one by one, the first as
 *   the counter finds it, and the threshold interrupt keeping up with the
 *   rest: whenever the counter is at or above the absolute threshold and
 *   references of the delivery remain, the whole set folds there and then
 *   (an inline fold: events and statistics as for any fold, the interrupt
 *   raised for the set is served, the peg and migration marks cleared).
 *   Inline folds queue their FOLD events in a fold log of M_FOLD_LOG
 *   entries, the first fold of a delivery one entry, its later folds (all
 *   alike: the counter, the threshold) one entry together; a full log
 *   drops the events. In NMI an inline fold needs the counter's extended
 *   page to exist: otherwise the rest of the delivery is deferred, and
 *   other counters of the set without one stay in hardware, still raised;
 * - reaching the absolute threshold raises the fold of the whole set;
 *   a remote counter more than diff ahead of the home counter raises one
 *   migration event until the next fold; the first peg since a fold
 *   raises one peg event;
 * - at sync, first the MIGRATE records a full queue refused (owed, in set
 *   order, flagged LATE, with the counts then), then the fold log's events
 *   in order (then the dropped ones), then per 64 sets: peg events,
 *   migration events, then folds; a
 *   fold adds every hardware counter to its extended counter (saturating
 *   at 2^32-1, the excess lost) and zeroes it, and reports the largest;
 * - in NMI no counter page is made: a delivery whose hardware counter
 *   has no page is deferred, up to M_DEFER_LEN of them, the next dropped
 *   (refs_dropped, defer_full); at the next sync, first, the deferred ones
 *   are delivered again in their order outside NMI (refs_deferred), and a
 *   reset keeps them; lost references whose lost count has no page are
 *   dropped;
 * - a full queue drops a FOLD or PEG record (it takes a seq), but refuses
 *   a MIGRATE record: the set owes one, takes no seq, and a set that owes
 *   one raises no second record; (a set whose MIGRATE record is still
 *   queued has it updated in place: the fuzzer reads every record at each
 *   sync, and one service queues at most one record per set, so that
 *   never happens here; core_test checks it)
 * - a reset discards every count and everything pending, but for the
 *   deliveries NMIs deferred: counted after it.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define WORDS_PER_PAGE	1024

void m_boot(struct model *m, unsigned int nr_online, bool premium,
	    uint32_t gran, uint32_t abs, uint32_t diff, uint32_t qlen,
	    bool prealloc)
{
	unsigned int i, cnode = 0;
	int nid;

	m->nr_cnodes = nr_online;
	m->cps = nr_online <= 64 ? nr_online : (nr_online + 7) / 8;
	m->shift = nr_online <= 64 ? 0 : 3;
	m->hw_max = nr_online > 16 || premium ? 0x7ffff : 0x7ff;
	m->gran = gran;
	m->qlen = qlen;
	m->prealloc = prealloc;
	if (!abs)
		abs = (m->hw_max + 1) - (m->hw_max + 1) / 8;
	for (nid = 0; nid < (int)nr_online; nid++) {
		struct m_node *n = &m->n[nid];
		uint64_t words, pages;

		n->cnode = cnode++;
		n->home = n->cnode >> m->shift;
		n->nr_sets = 0;
		for (i = 0; i < m->nr_ranges; i++) {
			if (m->r[i].nid != nid)
				continue;
			m->r[i].first_set = n->nr_sets;
			n->nr_sets += (m->r[i].end - m->r[i].start) / gran;
		}
		n->present = n->nr_sets > 0;
		words = n->nr_sets * m->cps;
		pages = (words + WORDS_PER_PAGE - 1) / WORDS_PER_PAGE;
		n->hw = calloc(words + 1, 4);
		n->ext = calloc(words + 1, 4);
		n->lost = calloc(words + 1, 4);
		n->hw_page = calloc(pages + 1, 1);
		n->ext_page = calloc(pages + 1, 1);
		n->lost_page = calloc(pages + 1, 1);
		memset(n->hw_page, prealloc, pages);
		memset(n->ext_page, prealloc, pages);
		n->fold_p = calloc(n->nr_sets + 1, 1);
		n->peg_p = calloc(n->nr_sets + 1, 1);
		n->mig_p = calloc(n->nr_sets + 1, 1);
		n->pegged = calloc(n->nr_sets + 1, 1);
		n->migrated = calloc(n->nr_sets + 1, 1);
		n->owed = calloc(n->nr_sets + 1, 1);
		n->nr_owed = 0;
		for (n->ctx_mask = 64; n->ctx_mask < M_CTX_SLOTS &&
		     (uint64_t)n->ctx_mask * 64 < n->nr_sets;)
			n->ctx_mask <<= 1;
		n->ctx_mask--;
		for (i = 0; i < M_CTX_SLOTS; i++)
			n->ctx[i].set = UINT64_MAX;
		n->abs = abs;
		n->diff = diff;
	}
}

void m_halt(struct model *m)
{
	unsigned int nid;

	for (nid = 0; nid < m->nr_cnodes; nid++) {
		struct m_node *n = &m->n[nid];

		free(n->hw); free(n->ext); free(n->lost);
		free(n->hw_page); free(n->ext_page); free(n->lost_page);
		free(n->fold_p); free(n->peg_p); free(n->mig_p);
		free(n->pegged); free(n->migrated); free(n->owed);
	}
	memset(m, 0, sizeof(*m));
}

uint64_t m_set_paddr(const struct model *m, int nid, uint64_t set)
{
	unsigned int i;

	for (i = 0; i < m->nr_ranges; i++) {
		const struct m_range *r = &m->r[i];

		if (r->nid == nid && set >= r->first_set &&
		    set < r->first_set + (r->end - r->start) / m->gran)
			return r->start + (set - r->first_set) * m->gran;
	}
	return UINT64_MAX;
}

/* Add to a saturating 32-bit count; returns what did not fit. */
static uint32_t sat_add(uint32_t *c, uint32_t v)
{
	uint64_t sum = (uint64_t)*c + v;

	*c = sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
	return sum > UINT32_MAX ? (uint32_t)(sum - UINT32_MAX) : 0;
}

static void lost_add(struct m_node *n, uint64_t idx, uint32_t v, bool nmi)
{
	if (!n->lost_page[idx / WORDS_PER_PAGE]) {
		if (nmi) {
			/* Counted in references already: overflowed. */
			n->st.overflowed += v;
			return;
		}
		n->lost_page[idx / WORDS_PER_PAGE] = true;
	}
	n->st.overflowed += sat_add(&n->lost[idx], v);
}

static void mark(struct m_node *n, bool *bit, bool *pending, uint64_t set)
{
	(void)n;
	if (!bit[set])
		bit[set] = pending[set] = true;
}

/* Would counter c at @now raise a migration event? */
static bool migrating_at(struct model *m, struct m_node *n, uint64_t set,
			 unsigned int c, uint32_t now)
{
	uint32_t home = n->hw[set * m->cps + n->home];

	return n->diff && c != n->home && now > home && now - home > n->diff;
}

static bool migrating(struct model *m, struct m_node *n, uint64_t set,
		      unsigned int c)
{
	return migrating_at(m, n, set, c, n->hw[set * m->cps + c]);
}

/* An entry of the fold log, or @nr events dropped when it is full. */
static void log_folds(struct m_node *n, uint64_t set, unsigned int c,
		      uint32_t count, uint32_t nr)
{
	if (n->nr_log == M_FOLD_LOG) {
		n->log_dropped += nr;
		return;
	}
	n->log[n->nr_log].set = set;
	n->log[n->nr_log].counter = c;
	n->log[n->nr_log].count = count;
	n->log[n->nr_log].nr = nr;
	n->nr_log++;
}

/* Make the extended page of a counter, if allowed here. */
static bool ext_page(struct m_node *n, uint64_t idx, bool nmi)
{
	if (!n->ext_page[idx / WORDS_PER_PAGE]) {
		if (nmi)
			return false;
		n->ext_page[idx / WORDS_PER_PAGE] = true;
	}
	return true;
}

static void extend(struct m_node *n, uint64_t idx, uint32_t v, bool nmi)
{
	uint32_t over = sat_add(&n->ext[idx], v);

	if (over) {
		lost_add(n, idx, over, nmi);
		n->st.saturated += over;
	}
}

/*
 * The inline fold of a delivery's counter c: false (nothing folded) when
 * c's extended page cannot be had. Its FOLD event takes a log entry.
 */
static bool fold_inline(struct model *m, struct m_node *n, uint64_t set,
			unsigned int c, bool nmi)
{
	unsigned int k, t = 0;
	uint32_t most = 0;
	bool left = false;

	if (!ext_page(n, set * m->cps + c, nmi))
		return false;
	n->fold_p[set] = false;
	for (k = 0; k < m->cps; k++) {
		uint64_t idx = set * m->cps + k;
		uint32_t v = n->hw[idx];

		if (!v)
			continue;
		if (!ext_page(n, idx, nmi)) {
			left = true;
			continue;
		}
		n->hw[idx] = 0;
		extend(n, idx, v, nmi);
		if (v > most) {
			most = v;
			t = k;
		}
	}
	n->pegged[set] = n->migrated[set] = false;
	if (left)
		n->fold_p[set] = true;
	if (most) {
		n->st.folds++;
		log_folds(n, set, t, most, 1);
	}
	return true;
}

/*
 * A delivery an NMI cannot count for want of a page: kept for the next
 * sync while there is room (the fuzzer's NMIs all come from one CPU),
 * else dropped.
 */
static void defer(struct m_node *n, uint64_t set, unsigned int src,
		  uint32_t count, const struct m_ctx *ctx)
{
	if (n->nr_defer == M_DEFER_LEN) {
		n->st.refs_dropped += count;
		n->st.defer_full += count;
		return;
	}
	n->defer[n->nr_defer].set = set;
	n->defer[n->nr_defer].src = src;
	n->defer[n->nr_defer].count = count;
	n->defer[n->nr_defer].has_ctx = ctx;
	if (ctx)
		n->defer[n->nr_defer].ctx = *ctx;
	n->nr_defer++;
}

static void node_reference(struct model *m, struct m_node *n, uint64_t set,
			   unsigned int src, uint32_t count,
			   const struct m_ctx *ctx, bool nmi)
{
	unsigned int c = src >> m->shift;
	uint64_t idx = set * m->cps + c;
	uint32_t left = count, lost = 0, take;
	bool migrate = false, tried = false;

	if (!count)
		return;
	if (!n->hw_page[idx / WORDS_PER_PAGE]) {
		if (nmi) {
			defer(n, set, src, count, ctx);
			return;
		}
		n->hw_page[idx / WORDS_PER_PAGE] = true;
	}
	/* The first reference meets the counter as it is. */
	if (n->hw[idx] < m->hw_max)
		n->hw[idx]++;
	else
		lost = 1;
	left--;
	if (lost) {
		lost_add(n, idx, lost, nmi);
		n->st.pegged += lost;
		mark(n, n->pegged, n->peg_p, set);
	}
	if (migrating(m, n, set, c)) {
		migrate = true;
		mark(n, n->migrated, n->mig_p, set);
	}
	/* The rest, one by one, with the interrupt keeping up. */
	while (left) {
		if (n->hw[idx] >= n->abs) {
			tried = true;
			if (!fold_inline(m, n, set, c, nmi))
				break;
			if (left > n->abs) {
				/*
				 * Counted all at once: (left - 1) / abs times
				 * the counter fills to abs and the set folds,
				 * its other counters empty (or stuck without a
				 * page, raised already); one log entry.
				 */
				uint32_t k = (left - 1) / n->abs;

				if (migrating_at(m, n, set, c, n->abs)) {
					migrate = true;
					mark(n, n->migrated, n->mig_p, set);
				}
				extend(n, idx, k * n->abs, nmi);
				n->st.folds += k;
				log_folds(n, set, c, n->abs, k);
				n->pegged[set] = n->migrated[set] = false;
				left -= k * n->abs;
			}
		}
		take = n->abs - n->hw[idx] < left ? n->abs - n->hw[idx] : left;
		n->hw[idx] += take;
		left -= take;
		if (migrating(m, n, set, c)) {
			migrate = true;
			mark(n, n->migrated, n->mig_p, set);
		}
	}
	n->st.references += count - left;
	if (left && nmi)
		defer(n, set, c << m->shift, left, ctx);
	else
		n->st.refs_dropped += left;
	if (n->hw[idx] >= n->abs)
		n->fold_p[set] = true;
	if (!lost && n->hw[idx] < n->abs && !migrate && !tried)
		return;
	if (ctx) {
		n->ctx[set & n->ctx_mask].set = set;
		n->ctx[set & n->ctx_mask].pid = ctx->pid;
		n->ctx[set & n->ctx_mask].vaddr = ctx->vaddr;
	} else if (n->ctx[set & n->ctx_mask].set == set) {
		n->ctx[set & n->ctx_mask].set = UINT64_MAX;
	}
}

bool m_reference(struct model *m, uint64_t paddr, unsigned int src,
		 uint32_t count, const struct m_ctx *ctx, bool nmi)
{
	unsigned int i;

	for (i = 0; i < m->nr_ranges; i++) {
		const struct m_range *r = &m->r[i];

		if (paddr < r->start || paddr >= r->end)
			continue;
		if (src >= m->nr_cnodes)
			return false;
		node_reference(m, &m->n[r->nid],
			       r->first_set + (paddr - r->start) / m->gran,
			       src, count, ctx, nmi);
		return true;
	}
	return false;
}

static void queue(struct model *m, struct m_node *n, struct rcb_event *ev)
{
	ev->seq = n->seq++;
	if (n->queued < m->qlen) {
		n->ev[n->queued++] = *ev;
		return;
	}
	if (!n->dropped)
		n->first_dropped = ev->seq;
	n->dropped++;
	n->st.events_dropped++;
}

/* Events dropped before they were queued: they take sequence numbers. */
static void drop_events(struct m_node *n, uint64_t nr)
{
	if (!nr)
		return;
	if (!n->dropped)
		n->first_dropped = n->seq;
	n->seq += nr;
	n->dropped += nr;
	n->st.events_dropped += nr;
}

static bool event(struct model *m, struct m_node *n, int nid, uint64_t set,
		  uint32_t type, unsigned int counter, uint32_t count,
		  bool late)
{
	struct rcb_event ev = {
		.type = type, .set = set, .paddr = m_set_paddr(m, nid, set),
		.home_cnodeid = n->cnode, .counter = counter,
		.src_cnodeid = counter << m->shift, .count = count,
	};

	if (n->ctx[set & n->ctx_mask].set == set) {
		ev.flags = RCB_EVENT_F_CONTEXT;
		ev.pid = n->ctx[set & n->ctx_mask].pid;
		ev.vaddr = n->ctx[set & n->ctx_mask].vaddr;
	}
	if (type == RCB_EVENT_MIGRATE) {
		unsigned int k;

		ev.home_count = n->hw[set * m->cps + n->home];
		ev.flags |= late ? RCB_EVENT_F_LATE : 0;
		/* The set's record still unread takes it, seq and all. */
		for (k = 0; k < n->queued; k++)
			if (n->ev[k].type == RCB_EVENT_MIGRATE &&
			    n->ev[k].set == set) {
				ev.seq = n->ev[k].seq;
				n->ev[k] = ev;
				return true;
			}
		if (n->queued == m->qlen) {
			/* Refused: owed, no seq, no drop */
			n->owed[set] = true;
			n->nr_owed++;
			return false;
		}
	}
	queue(m, n, &ev);
	return true;
}

/* The counter with the largest value (the first such), among @skip's others. */
static unsigned int top(const struct model *m, const uint32_t *v,
			uint64_t set, int skip, uint32_t *most)
{
	unsigned int c, t = 0;

	*most = 0;
	for (c = 0; c < m->cps; c++) {
		if ((int)c != skip && v[set * m->cps + c] > *most) {
			*most = v[set * m->cps + c];
			t = c;
		}
	}
	return t;
}

static void fold(struct model *m, struct m_node *n, int nid, uint64_t set)
{
	unsigned int c, t = 0;
	uint32_t most = 0;

	for (c = 0; c < m->cps; c++) {
		uint64_t idx = set * m->cps + c;
		uint32_t v = n->hw[idx];

		if (!v)
			continue;
		n->hw[idx] = 0;
		n->ext_page[idx / WORDS_PER_PAGE] = true;
		extend(n, idx, v, false);
		if (v > most) {
			most = v;
			t = c;
		}
	}
	n->pegged[set] = n->migrated[set] = false;
	if (!most)
		return;
	n->st.folds++;
	event(m, n, nid, set, RCB_EVENT_FOLD, t, most, false);
}

/* Queue @nr alike FOLD events; once the queue refuses one, drop the rest. */
static void fold_events(struct model *m, struct m_node *n, int nid,
			uint64_t set, unsigned int c, uint32_t count,
			uint64_t nr)
{
	while (nr && n->queued < m->qlen) {
		event(m, n, nid, set, RCB_EVENT_FOLD, c, count, false);
		nr--;
	}
	drop_events(n, nr);
}

/* The remote counter with the largest count; the first remote one if 0. */
static unsigned int remote_top(const struct model *m, const struct m_node *n,
			       uint64_t set, uint32_t *most)
{
	unsigned int t = top(m, n->hw, set, n->home, most);

	if (!*most && t == n->home)
		t = n->home ? 0 : 1;
	return t;
}

/* The owed MIGRATE records, in set order, until the queue refuses one. */
static void service_owed(struct model *m, struct m_node *n, int nid)
{
	uint64_t s;
	unsigned int t;
	uint32_t most;

	for (s = 0; s < n->nr_sets && n->nr_owed; s++) {
		if (!n->owed[s])
			continue;
		n->owed[s] = false;
		n->nr_owed--;
		t = remote_top(m, n, s, &most);
		if (!event(m, n, nid, s, RCB_EVENT_MIGRATE, t, most, true))
			return;	/* owed again */
		if (n->mig_p[s]) {
			/* A crossing since: in these counts, one record */
			n->mig_p[s] = false;
			n->st.migrations++;
		}
	}
}

static void service(struct model *m, struct m_node *n, int nid)
{
	uint64_t w, s, end;
	unsigned int t, i;
	uint32_t most;

	service_owed(m, n, nid);

	for (i = 0; i < n->nr_log; i++)
		fold_events(m, n, nid, n->log[i].set, n->log[i].counter,
			    n->log[i].count, n->log[i].nr);
	n->nr_log = 0;
	drop_events(n, n->log_dropped);
	n->log_dropped = 0;

	for (w = 0; w < n->nr_sets; w += 64) {
		end = w + 64 < n->nr_sets ? w + 64 : n->nr_sets;
		for (s = w; s < end; s++) {
			if (!n->peg_p[s])
				continue;
			n->peg_p[s] = false;
			t = top(m, n->lost, s, -1, &most);
			event(m, n, nid, s, RCB_EVENT_PEG, t, most, false);
		}
		for (s = w; s < end; s++) {
			if (!n->mig_p[s])
				continue;
			n->mig_p[s] = false;
			n->st.migrations++;
			if (n->owed[s])
				continue;	/* one owed record stands for it */
			t = remote_top(m, n, s, &most);
			event(m, n, nid, s, RCB_EVENT_MIGRATE, t, most, false);
		}
		for (s = w; s < end; s++) {
			if (!n->fold_p[s])
				continue;
			n->fold_p[s] = false;
			fold(m, n, nid, s);
		}
	}
}

static void sync_node(struct model *m, struct m_node *n, int nid)
{
	unsigned int i;

	/* The irq_work counts what NMIs deferred, in their order. */
	for (i = 0; i < n->nr_defer; i++) {
		n->st.refs_deferred += n->defer[i].count;
		node_reference(m, n, n->defer[i].set, n->defer[i].src,
			       n->defer[i].count,
			       n->defer[i].has_ctx ? &n->defer[i].ctx : NULL,
			       false);
	}
	n->nr_defer = 0;
	service(m, n, nid);
	n->nr_ev = n->queued;
}

void m_sync(struct model *m)
{
	unsigned int nid;

	for (nid = 0; nid < m->nr_cnodes; nid++)
		if (m->n[nid].present)
			sync_node(m, &m->n[nid], nid);
}

/*
 * RCB_SETS_FOLD: the node's pending interrupts, then each set folded.
 * What NMIs deferred is counted by the irq_work, at the next sync.
 */
void m_fold_sets(struct model *m, int nid, uint64_t first, uint64_t nr)
{
	struct m_node *n = &m->n[nid];
	uint64_t s;

	service(m, n, nid);
	for (s = first; s < first + nr; s++)
		fold(m, n, nid, s);
	n->nr_ev = n->queued;
}

/* The records were read: every queue is empty. */
void m_events_read(struct model *m)
{
	unsigned int nid;

	for (nid = 0; nid < m->nr_cnodes; nid++) {
		m->n[nid].nr_ev = m->n[nid].queued = 0;
		m->n[nid].dropped = 0;
	}
}

void m_reset(struct model *m, int nid)
{
	struct m_node *n = &m->n[nid];
	uint64_t words = n->nr_sets * m->cps, i;
	uint64_t pages = (words + WORDS_PER_PAGE - 1) / WORDS_PER_PAGE;

	for (i = 0; i < words; i++)
		n->st.discarded += (uint64_t)n->hw[i] + n->ext[i] + n->lost[i];
	memset(n->hw, 0, words * 4);
	memset(n->ext, 0, words * 4);
	memset(n->lost, 0, words * 4);
	memset(n->hw_page, m->prealloc, pages);
	memset(n->ext_page, m->prealloc, pages);
	memset(n->lost_page, 0, pages);
	n->nr_log = 0;
	n->log_dropped = 0;
	memset(n->fold_p, 0, n->nr_sets);
	memset(n->peg_p, 0, n->nr_sets);
	memset(n->mig_p, 0, n->nr_sets);
	memset(n->pegged, 0, n->nr_sets);
	memset(n->migrated, 0, n->nr_sets);
	memset(n->owed, 0, n->nr_sets);
	n->nr_owed = 0;
	for (i = 0; i < M_CTX_SLOTS; i++)
		n->ctx[i].set = UINT64_MAX;
}

int m_thresholds(struct model *m, int nid, uint32_t abs, uint32_t diff)
{
	if (!abs || abs > m->hw_max || diff > m->hw_max)
		return -22;
	m->n[nid].abs = abs;
	m->n[nid].diff = diff;
	return 0;
}
