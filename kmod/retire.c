// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: retiring a layout, when memory comes or goes.
 *
 * A node's layout (its slots, sets and tables) is fixed once built. When
 * the node's online memory changes, a new layout is built and published
 * in its place, and the old one is retired here: the counts of memory
 * still online move to the sets of the new layout that count the same
 * hardware pages; those of memory gone offline are dropped, into the
 * 'offlined' statistic, so that the books stay exact. The old layout
 * itself is left as it was, frozen, for the files still open on it, and
 * its event queue tells their readers (RCB_EVENT_LAYOUT).
 */
#include <linux/bitmap.h>
#include <linux/irq_work.h>
#include <linux/kref.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/wait.h>
#include <uapi/linux/refcnt.h>

#include "core.h"

/*
 * Move one counter's counts into @succ: the hardware count is folded into
 * the extended one there, as a fold would. With @succ's fold_lock held.
 */
static void refcnt_move_counter(struct refcnt_node *succ, u64 idx, u32 hw,
				u32 ext, u32 lost)
{
	u32 *word = refcnt_table_counter(&succ->table, idx);
	u32 excess;

	if (!word) {
		/* No memory: no counter can hold them. */
		this_cpu_add(succ->stats->overflowed, (u64)hw + ext + lost);
		return;
	}
	excess = refcnt_sat_add(word, ext) + refcnt_sat_add(word, hw);
	if (excess)
		this_cpu_add(succ->stats->saturated, excess);
	if (excess || lost)
		refcnt_lost_add(succ, refcnt_sparse_get(&succ->lost, idx,
							GFP_KERNEL),
				excess + lost);
}

/* Move the counts of one page of counters; returns what was dropped. */
static u64 refcnt_move_page(struct refcnt_node *old, struct refcnt_node *succ,
			    u64 first)
{
	unsigned int cps = refcnt_topo.counters_per_set;
	u64 idx, end, set = U64_MAX, to = U64_MAX, dropped = 0;

	end = min_t(u64, first + REFCNT_WORDS_PER_PAGE, old->hw.nr_words);
	for (idx = first; idx < end; idx++) {
		u32 hw = refcnt_sparse_read(&old->hw, idx);
		u32 ext = refcnt_sparse_read(&old->table.counters, idx);
		u32 lost = refcnt_sparse_read(&old->lost, idx);

		if (!hw && !ext && !lost)
			continue;
		if (idx / cps != set) {
			set = idx / cps;
			to = succ ? refcnt_paddr_set(succ,
						     refcnt_set_paddr(old, set)) :
				    U64_MAX;
		}
		if (to == U64_MAX)
			dropped += (u64)hw + ext + lost;
		else
			refcnt_move_counter(succ,
					    refcnt_set_first(to) + idx % cps,
					    hw, ext, lost);
	}
	return dropped;
}

/**
 * refcnt_pages_kept() - the pages of counters a new layout can take over
 * @old:	a node's layout
 * @succ:	the one that replaces it
 * @fn:		called with each page index of @old (the same in its three
 *		arrays: hardware, extended and lost counters) whose counters
 *		all count, in @succ, the same hardware pages in the same
 *		order, and the index of the page of @succ that holds them
 * @arg:	for @fn
 *
 * A memory block coming or going shifts the sets after it by a whole
 * number of pages of counters (a block's sets are a multiple of the words
 * in a page up to a granularity of 128 KiB with 128 MiB blocks), so all
 * but a few pages at the edges of the block keep their counters as they
 * are. Costs the slots of both, times the pages kept.
 */
void refcnt_pages_kept(const struct refcnt_node *old,
		       const struct refcnt_node *succ,
		       void (*fn)(unsigned long p, unsigned long q, void *arg),
		       void *arg)
{
	unsigned int cps = refcnt_topo.counters_per_set, i, j;
	unsigned int shift = refcnt_cfg.granularity_shift;

	for (i = 0; i < old->nr_slots; i++) {
		const struct refcnt_slot *a = &old->slots[i];

		for (j = 0; j < succ->nr_slots; j++) {
			const struct refcnt_slot *b = &succ->slots[j];
			u64 lo = max(a->base, b->base);
			u64 hi = min(a->base + a->size, b->base + b->size);
			u64 from, to, end, p;

			if (lo >= hi)
				continue;
			/* Words of the run in @old, where they are in @succ. */
			from = (a->first_set + ((lo - a->base) >> shift)) * cps;
			to = (b->first_set + ((lo - b->base) >> shift)) * cps;
			end = from + ((hi - lo) >> shift) * cps;
			if (from % REFCNT_WORDS_PER_PAGE !=
			    to % REFCNT_WORDS_PER_PAGE)
				continue;
			for (p = DIV_ROUND_UP_ULL(from, REFCNT_WORDS_PER_PAGE);
			     (p + 1) * REFCNT_WORDS_PER_PAGE <= end; p++)
				fn(p, (p * REFCNT_WORDS_PER_PAGE - from + to) /
				      REFCNT_WORDS_PER_PAGE, arg);
		}
	}
}

/* Page @p of @from becomes page @q of @to, unless @to has one there. */
static void refcnt_adopt(struct refcnt_sparse *from, unsigned long p,
			 struct refcnt_sparse *to, unsigned long q)
{
	struct page *page = from->pages[p];

	if (!page || cmpxchg(&to->pages[q], NULL, page))
		return;		/* nothing, or counted word by word */
	WRITE_ONCE(from->pages[p], NULL);
	atomic_long_dec(&from->nr_allocated);
	atomic_long_inc(&to->nr_allocated);
}

struct refcnt_adoption {
	struct refcnt_node *old, *succ;
};

static void refcnt_adopt_page(unsigned long p, unsigned long q, void *arg)
{
	struct refcnt_adoption *a = arg;

	refcnt_adopt(&a->old->hw, p, &a->succ->hw, q);
	refcnt_adopt(&a->old->lost, p, &a->succ->lost, q);
	refcnt_adopt(&a->old->table.counters, p, &a->succ->table.counters, q);
}

/*
 * Hand @succ the pages whose counters it keeps as they are: their
 * hardware, extended and lost counts stay what they were, and nothing
 * reads or copies them. Only when nothing but the layout holds @old: a
 * file open on it must keep seeing its counts, frozen (abi.rst). The
 * table pages @succ gets replace its zero page where files of it may map
 * that: they fault again. With both fold_locks held.
 */
static void refcnt_adopt_pages(struct refcnt_node *old,
			       struct refcnt_node *succ)
{
	struct refcnt_adoption a = { .old = old, .succ = succ };

	down_write(&succ->table.map_lock);
	refcnt_pages_kept(old, succ, refcnt_adopt_page, &a);
	if (succ->table.mapping)
		unmap_mapping_range(succ->table.mapping, 0, 0, 1);
	up_write(&succ->table.map_lock);
}

/* Every counter of @old with a count; returns what was dropped. */
static u64 refcnt_move_counts(struct refcnt_node *old,
			      struct refcnt_node *succ)
{
	unsigned long p;
	u64 dropped = 0;

	for (p = 0; p < old->hw.nr_pages; p++) {
		if (!READ_ONCE(old->hw.pages[p]) &&
		    !READ_ONCE(old->table.counters.pages[p]) &&
		    !READ_ONCE(old->lost.pages[p]))
			continue;
		dropped += refcnt_move_page(old, succ,
					    (u64)p * REFCNT_WORDS_PER_PAGE);
		cond_resched();
	}
	return dropped;
}

/*
 * Tell the readers of @old: the layout of its node changed. Not inlined:
 * its record would sit in refcnt_node_retire()'s frame, above the folds
 * refcnt_node_sync() runs.
 */
static noinline_for_stack void
refcnt_layout_event(struct refcnt_node *old, const struct refcnt_node *succ)
{
	struct rcb_event ev = {
		.type = RCB_EVENT_LAYOUT,
		.home_cnodeid = old->cnodeid,
		.set = succ ? succ->nr_sets : 0,
		.count = (u32)refcnt_node_next_generation(old),
	};

	if (!refcnt_events_queue(&old->events, &ev))
		this_cpu_inc(old->stats->events_dropped);
}

/*
 * @old's statistics, @dropped added to 'offlined', to @succ's inherited
 * ones or into @carry (if any). Not inlined, for its sum, as above.
 */
static noinline_for_stack void refcnt_retire_stats(struct refcnt_node *old,
						   struct refcnt_node *succ,
						   struct refcnt_stats *carry,
						   u64 dropped)
{
	struct refcnt_stats sum;

	refcnt_node_stats(old, &sum);
	sum.offlined += dropped;
	if (succ)
		refcnt_stats_add(&succ->inherited, &sum);
	else if (carry)
		*carry = sum;
}

/*
 * Move @old's counts to @succ (or drop them) under both fold_locks;
 * returns what was dropped. Not inlined: its locals (the counter pages
 * looked at) would sit in refcnt_node_retire()'s frame, above the folds
 * refcnt_node_sync() runs.
 */
static noinline_for_stack u64 refcnt_move_all(struct refcnt_node *old,
					      struct refcnt_node *succ)
{
	u64 dropped;

	mutex_lock(&old->fold_lock);
	if (succ)
		mutex_lock_nested(&succ->fold_lock, SINGLE_DEPTH_NESTING);
	/* The caller's is the last reference: no file, no injection. */
	if (succ && kref_read(&old->ref) == 1)
		refcnt_adopt_pages(old, succ);
	/* What stays in @old: the edges of the change, or all it counts. */
	dropped = refcnt_move_counts(old, succ);
	/*
	 * Its counts moved: a fold of @old still raised (one that found no
	 * memory, waiting for its retry) must not fold them again there,
	 * nor queue an event after the last.
	 */
	bitmap_zero(old->attention, old->nr_attention);
	bitmap_zero(old->migrate_owed, old->nr_sets);
	old->nr_owed = 0;
	if (succ)
		mutex_unlock(&succ->fold_lock);
	mutex_unlock(&old->fold_lock);
	return dropped;
}

/**
 * refcnt_node_retire() - hand a replaced layout's counts to its successor
 * @old:	the layout replaced; no feed reaches it any more (it is in no
 *		slot index, and a grace period has passed)
 * @succ:	the layout of the same node that replaces it, or NULL when
 *		the node has no memory online any more
 * @carry:	without @succ, filled in with @old's statistics, for the
 *		node's next layout to inherit; NULL drops them
 *
 * Process context. Counts of hardware pages @succ still counts move to
 * it; the others are dropped and added to 'offlined', so that @succ (or
 * @carry) keeps references = extended + hardware + lost + discarded +
 * overflowed + offlined. @old is marked retired and otherwise left as it
 * is: the files open on it see its last counts.
 */
void refcnt_node_retire(struct refcnt_node *old, struct refcnt_node *succ,
			struct refcnt_stats *carry)
{
	u64 dropped;

	/* What NMIs deferred, and the pending folds, first. */
	irq_work_sync(&old->irq_work);
	refcnt_node_sync(old);
	dropped = refcnt_move_all(old, succ);
	refcnt_retire_stats(old, succ, carry, dropped);
	refcnt_layout_event(old, succ);
	/* After the record: a reader that finds none left stops there. */
	WRITE_ONCE(old->retired, true);
	wake_up_interruptible(&old->events.wait);
}
