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

/* Tell the readers of @old: the layout of its node changed. */
static void refcnt_layout_event(struct refcnt_node *old,
				const struct refcnt_node *succ)
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

/**
 * refcnt_node_retire() - hand a replaced layout's counts to its successor
 * @old:	the layout replaced; no feed reaches it any more (it is in no
 *		slot index, and a grace period has passed)
 * @succ:	the layout of the same node that replaces it, or NULL when
 *		the node has no memory online any more
 * @carry:	without @succ, filled in with @old's statistics, for the
 *		node's next layout to inherit
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
	struct refcnt_stats sum;
	u64 dropped;

	refcnt_node_sync(old);	/* the pending folds first */
	mutex_lock(&old->fold_lock);
	if (succ)
		mutex_lock_nested(&succ->fold_lock, SINGLE_DEPTH_NESTING);
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

	refcnt_node_stats(old, &sum);
	sum.offlined += dropped;
	if (succ)
		refcnt_stats_add(&succ->inherited, &sum);
	else
		*carry = sum;
	refcnt_layout_event(old, succ);
	/* After the record: a reader that finds none left stops there. */
	WRITE_ONCE(old->retired, true);
	wake_up_interruptible(&old->events.wait);
}
