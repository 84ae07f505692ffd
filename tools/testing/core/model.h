/* SPDX-License-Identifier: GPL-2.0 */
/*
 * model.h: refcnt(5)'s counter rules as a small sequential model, written
 * from the manual and Documentation/design.rst, not from kmod/: plain
 * arrays, one reference at a time, interrupts serviced at sync. The
 * fuzzer (fuzz.c) runs the same operations through it and the real core.
 */
#ifndef _CORE_MODEL_H
#define _CORE_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <uapi/linux/refcnt.h>

#define M_MAX_NODES	70
#define M_MAX_RANGES	16
#define M_MAX_EVENTS	4096
#define M_FOLD_LOG	64	/* entries of a node's inline fold log */
#define M_DEFER_LEN	32	/* deliveries an NMI defers, per CPU */

struct m_range {
	uint64_t start, end;	/* bytes, multiples of the granularity */
	int nid;
	uint64_t first_set;	/* of its node */
};

/*
 * The module's lossy context cache: one slot per 64 sets, a power of
 * two from 64 to M_CTX_SLOTS (kmod/node.c's refcnt_ctx_slots()).
 */
#define M_CTX_SLOTS	1024

/* What a feed knows of a reference: struct refcnt_ctx, for the model. */
struct m_ctx {
	int32_t pid;
	uint64_t vaddr;
};

struct m_stats {
	uint64_t references, pegged, saturated, folds, migrations,
		 events_dropped, refs_dropped, refs_deferred, defer_full,
		 discarded, overflowed;
};

struct m_node {
	bool present;
	unsigned int cnode, home;
	uint64_t nr_sets;
	uint32_t *hw, *ext, *lost;	/* nr_sets * cps */
	bool *hw_page, *ext_page, *lost_page;	/* per 1024 counters: allocated? */
	bool *fold_p, *peg_p, *mig_p, *pegged, *migrated;	/* per set */
	bool *owed;	/* per set: a MIGRATE record a full queue refused */
	uint64_t nr_owed;
	struct { uint64_t set, vaddr; int32_t pid; } ctx[M_CTX_SLOTS];
	uint32_t ctx_mask;
	uint32_t abs, diff;
	/* Deliveries NMIs found no counter page for, counted at sync. */
	struct { uint64_t set; unsigned int src; uint32_t count; bool has_ctx;
		 struct m_ctx ctx; } defer[M_DEFER_LEN];
	unsigned int nr_defer;
	/* FOLD events of folds made inline, queued first at sync. */
	struct { uint64_t set; unsigned int counter; uint32_t count, nr; }
		log[M_FOLD_LOG];
	unsigned int nr_log;
	uint64_t log_dropped;
	struct m_stats st;
	uint64_t seq;
	/* Events of the current sync, as read(2) will return them. */
	struct rcb_event ev[M_MAX_EVENTS];
	unsigned int nr_ev, queued;
	uint64_t dropped, first_dropped;
};

struct model {
	unsigned int nr_cnodes, cps, shift;
	uint32_t hw_max, gran, qlen;
	bool prealloc;
	unsigned int nr_ranges;
	struct m_range r[M_MAX_RANGES];
	struct m_node n[M_MAX_NODES];
};

void m_boot(struct model *m, unsigned int nr_online, bool premium,
	    uint32_t gran, uint32_t abs, uint32_t diff, uint32_t qlen,
	    bool prealloc);
void m_halt(struct model *m);
bool m_reference(struct model *m, uint64_t paddr, unsigned int src,
		 uint32_t count, const struct m_ctx *ctx, bool nmi);
uint64_t m_set_paddr(const struct model *m, int nid, uint64_t set);
void m_sync(struct model *m);		/* every node; fills its ev[] */
void m_fold_sets(struct model *m, int nid, uint64_t first, uint64_t nr);
void m_events_read(struct model *m);	/* after the records were compared */
void m_reset(struct model *m, int nid);
int m_thresholds(struct model *m, int nid, uint32_t abs, uint32_t diff);

#endif
