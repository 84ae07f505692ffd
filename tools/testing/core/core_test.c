// SPDX-License-Identifier: GPL-2.0
/*
 * core_test: refcnt(5)'s counter rules, checked on the real core files of
 * kmod/ running natively (tools/testing/core/Makefile builds them).
 *
 * Each test boots its own fake machine (machine.c) and delivers exact
 * references; interrupts are run by hand with refcnt_node_sync() and
 * shim_run_pending(), so every count and event is known in advance.
 */
#include <uapi/linux/refcnt.h>

#include "machine.h"
#include "kselftest_harness.h"

#define MiB	(1ULL << 20)

/* Four nodes with memory, node 0 in two slots around node 1, node 4 CPU-only. */
static const struct core_spec four = {
	.nr_online = 5,
	.nr_ranges = 5,
	.ram = {
		{ 0, 16 * MiB, 0 }, { 16 * MiB, 32 * MiB, 1 },
		{ 32 * MiB, 48 * MiB, 0 }, { 64 * MiB, 80 * MiB, 2 },
		{ 80 * MiB, 96 * MiB, 3 },
	},
};

static bool refer(const struct refcnt_node *node, u64 set, unsigned int src,
		  u32 count)
{
	return refcnt_reference(refcnt_set_paddr(node, set), src, count, NULL);
}

static u32 hw_of(struct refcnt_node *n, u64 set, unsigned int c)
{
	return refcnt_sparse_read(&n->hw, set * refcnt_topo.counters_per_set + c);
}

static u32 ext_of(struct refcnt_node *n, u64 set, unsigned int c)
{
	return refcnt_sparse_read(&n->table.counters,
				  set * refcnt_topo.counters_per_set + c);
}

static u32 lost_of(struct refcnt_node *n, u64 set, unsigned int c)
{
	return refcnt_sparse_read(&n->lost, set * refcnt_topo.counters_per_set + c);
}

/* Run the irq_work and fold work, then every interrupt of the node. */
static void sync_node(struct refcnt_node *node)
{
	shim_run_pending();
	refcnt_node_sync(node);
}

/* Events queued now; returns how many were read into @ev. */
static int read_events(struct refcnt_node *node, struct rcb_event *ev, int max)
{
	return core_events_read(node, ev, max);
}

static void check_conservation(struct __test_metadata *_metadata,
			       struct refcnt_node *node)
{
	struct core_totals t;

	core_totals(node, &t);
	ASSERT_EQ(t.st.references, t.hw + t.ext + t.lost + t.st.discarded +
		  t.st.overflowed);
}

FIXTURE(core) {
	struct core_spec spec;
	struct refcnt_node *n0, *n2;
};

FIXTURE_VARIANT(core) {
	bool premium;
	u32 diff;
};

FIXTURE_VARIANT_ADD(core, standard) { .premium = false, .diff = 0 };
FIXTURE_VARIANT_ADD(core, premium_diff) { .premium = true, .diff = 100 };

FIXTURE_SETUP(core)
{
	self->spec = four;
	self->spec.premium = variant->premium;
	self->spec.diff_threshold = variant->diff;
	ASSERT_EQ(0, core_boot(&self->spec));
	self->n0 = core_nodes[0];
	self->n2 = core_nodes[2];
	ASSERT_NE(NULL, self->n0);
}

FIXTURE_TEARDOWN(core)
{
	shim_no_memory = false;
	core_halt();
}

TEST_F(core, topology_and_slots)
{
	ASSERT_EQ(5, refcnt_topo.nr_cnodes);
	ASSERT_EQ(5, refcnt_topo.counters_per_set);
	ASSERT_EQ(variant->premium ? 19 : 11, refcnt_topo.hw_bits);
	ASSERT_EQ(NULL, core_nodes[4]);		/* CPU-only: no counters */
	ASSERT_EQ(2, self->n0->nr_slots);
	ASSERT_EQ(32 * MiB / 4096, self->n0->nr_sets);
	ASSERT_EQ(4096, self->n0->slots[1].first_set);
	ASSERT_EQ(self->n0, refcnt_slot_lookup(32 * MiB)->node);
	ASSERT_EQ(core_nodes[1], refcnt_slot_lookup(16 * MiB)->node);
	ASSERT_EQ(NULL, refcnt_slot_lookup(48 * MiB));	/* a hole */
	ASSERT_EQ(NULL, refcnt_slot_lookup(96 * MiB));
	ASSERT_FALSE(refcnt_reference(50 * MiB, 0, 1, NULL));
	ASSERT_FALSE(refcnt_reference(0, 5, 1, NULL));	/* no cnodeid 5 */
	ASSERT_TRUE(refer(self->n0, 4097, 3, 7));
	ASSERT_EQ(7, hw_of(self->n0, 4097, 3));
}

TEST_F(core, fold_at_absolute_threshold)
{
	u32 abs = self->n0->abs_threshold;
	struct rcb_event ev[4];

	ASSERT_EQ(variant->premium ? 458752 : 1792, abs);
	ASSERT_TRUE(refer(self->n0, 10, 0, abs - 1));
	ASSERT_TRUE(refer(self->n0, 10, 1, 5));
	sync_node(self->n0);
	ASSERT_EQ(abs - 1, hw_of(self->n0, 10, 0));
	ASSERT_EQ(0, read_events(self->n0, ev, 4));

	ASSERT_TRUE(refer(self->n0, 10, 0, 1));
	/* Deferred: the counters stay until the interrupt runs. */
	ASSERT_EQ(abs, hw_of(self->n0, 10, 0));
	sync_node(self->n0);
	ASSERT_EQ(0, hw_of(self->n0, 10, 0));
	ASSERT_EQ(0, hw_of(self->n0, 10, 1));
	ASSERT_EQ(abs, ext_of(self->n0, 10, 0));
	ASSERT_EQ(5, ext_of(self->n0, 10, 1));
	ASSERT_EQ(1, read_events(self->n0, ev, 4));
	ASSERT_EQ(RCB_EVENT_FOLD, ev[0].type);
	ASSERT_EQ(10, ev[0].set);
	ASSERT_EQ(10 * 4096, ev[0].paddr);
	ASSERT_EQ(0, ev[0].counter);
	ASSERT_EQ(abs, ev[0].count);
	check_conservation(_metadata, self->n0);
}

/* Single references past the threshold, faster than the fold: they peg. */
static void refer_singly(const struct refcnt_node *node, u64 set,
			 unsigned int src, u32 n)
{
	while (n--)
		refer(node, set, src, 1);
}

TEST_F(core, peg_then_fold)
{
	u32 max = refcnt_topo.hw_max, abs = self->n2->abs_threshold;
	struct rcb_event ev[4];
	struct core_totals t;

	ASSERT_TRUE(refer(self->n2, 3, 2, abs));
	refer_singly(self->n2, 3, 2, max - abs + 7);
	ASSERT_EQ(max, hw_of(self->n2, 3, 2));
	ASSERT_EQ(7, lost_of(self->n2, 3, 2));
	sync_node(self->n2);
	ASSERT_EQ(2, read_events(self->n2, ev, 4));
	ASSERT_EQ(RCB_EVENT_PEG, ev[0].type);	/* counts before the fold */
	ASSERT_EQ(2, ev[0].counter);
	ASSERT_EQ(7, ev[0].count);
	ASSERT_EQ(RCB_EVENT_FOLD, ev[1].type);
	ASSERT_EQ(max, ev[1].count);
	ASSERT_EQ(max, ext_of(self->n2, 3, 2));
	ASSERT_EQ(7, lost_of(self->n2, 3, 2));	/* lost counts stay */
	core_totals(self->n2, &t);
	ASSERT_EQ(7, t.st.pegged);
	ASSERT_EQ(1, t.st.folds);
	check_conservation(_metadata, self->n2);
}

/*
 * 100,000 references in one delivery: the counter fills to the threshold,
 * the set folds, and so on; nothing is lost, and every fold is counted
 * and reported as a fold of that counter at the threshold.
 */
TEST_F(core, weight_folds_inline)
{
	u32 abs = self->n0->abs_threshold, n = 100000, folds, rest;
	struct rcb_event ev[64];
	struct core_totals t;
	int i, got;

	folds = n > abs ? (n - 1) / abs : 0;
	rest = n - folds * abs;
	ASSERT_TRUE(refer(self->n0, 20, 0, 3));		/* another counter */
	ASSERT_TRUE(refer(self->n0, 20, 1, n));
	/* Folded as they came, before any interrupt service. */
	ASSERT_EQ(folds ? 0 : 3, hw_of(self->n0, 20, 0));
	ASSERT_EQ(folds ? 3 : 0, ext_of(self->n0, 20, 0));
	ASSERT_EQ(rest, hw_of(self->n0, 20, 1));
	ASSERT_EQ(folds * abs, ext_of(self->n0, 20, 1));
	ASSERT_EQ(0, lost_of(self->n0, 20, 1));
	core_totals(self->n0, &t);
	ASSERT_EQ(folds, t.st.folds);
	ASSERT_EQ(0, t.st.pegged);
	ASSERT_EQ(n + 3, t.st.references);
	sync_node(self->n0);
	got = read_events(self->n0, ev, 64);
	/* The inline folds' events come first; a migration may follow. */
	ASSERT_EQ(folds + !!variant->diff, got);
	for (i = 0; i < (int)folds; i++) {
		ASSERT_EQ(RCB_EVENT_FOLD, ev[i].type);
		ASSERT_EQ(20, ev[i].set);
		ASSERT_EQ(1, ev[i].counter);
		ASSERT_EQ(abs, ev[i].count);
		ASSERT_EQ(i, ev[i].seq);
	}
	ASSERT_EQ(rest, hw_of(self->n0, 20, 1));
	check_conservation(_metadata, self->n0);
}

/*
 * A delivery that finds its counter pegged: its first reference is lost,
 * as a single one would be; the interrupt keeps up with the rest.
 */
TEST_F(core, weight_at_the_peg_loses_one)
{
	u32 max = refcnt_topo.hw_max;
	struct rcb_event ev[4];
	struct core_totals t;

	ASSERT_EQ(0, refcnt_node_set_thresholds(self->n0, max, 0));
	ASSERT_TRUE(refer(self->n0, 30, 1, max));	/* raised, pending */
	ASSERT_TRUE(refer(self->n0, 30, 1, 10));
	ASSERT_EQ(1, lost_of(self->n0, 30, 1));
	ASSERT_EQ(max, ext_of(self->n0, 30, 1));
	ASSERT_EQ(9, hw_of(self->n0, 30, 1));
	sync_node(self->n0);
	/* The inline fold served the interrupt: no second fold. */
	ASSERT_EQ(2, read_events(self->n0, ev, 4));
	ASSERT_EQ(RCB_EVENT_FOLD, ev[0].type);
	ASSERT_EQ(max, ev[0].count);
	ASSERT_EQ(RCB_EVENT_PEG, ev[1].type);
	ASSERT_EQ(1, ev[1].count);
	core_totals(self->n0, &t);
	ASSERT_EQ(1, t.st.pegged);
	ASSERT_EQ(1, t.st.folds);
	check_conservation(_metadata, self->n0);
}

/*
 * In NMI no extended page is made: a delivery that must fold where its
 * counter has none folds nothing, keeps what fits below the threshold and
 * defers the rest; the irq_work counts it, making the page, folding as
 * the delivery would have. Nothing is dropped.
 */
TEST_F(core, weight_in_nmi_defers_the_fold)
{
	u32 abs = self->n0->abs_threshold;
	struct core_totals t;

	ASSERT_TRUE(refer(self->n0, 40, 0, 1));	/* the hardware page */
	shim_in_nmi = true;
	ASSERT_TRUE(refer(self->n0, 40, 0, abs + 50));
	shim_in_nmi = false;
	ASSERT_EQ(abs, hw_of(self->n0, 40, 0));
	core_totals(self->n0, &t);
	ASSERT_EQ(0, t.st.refs_dropped);
	ASSERT_EQ(0, t.st.refs_deferred);
	ASSERT_EQ(abs, t.st.references);
	shim_run_pending();		/* the irq_work: 51 more, folding */
	ASSERT_EQ(abs + 1, ext_of(self->n0, 40, 0));
	ASSERT_EQ(50, hw_of(self->n0, 40, 0));
	core_totals(self->n0, &t);
	ASSERT_EQ(0, t.st.refs_dropped);
	ASSERT_EQ(51, t.st.refs_deferred);
	ASSERT_EQ(abs + 51, t.st.references);
	/* The page is there now: the next NMI folds where it stands. */
	shim_in_nmi = true;
	ASSERT_TRUE(refer(self->n0, 40, 0, abs + 50));
	shim_in_nmi = false;
	ASSERT_EQ(2 * abs + 1, ext_of(self->n0, 40, 0));
	ASSERT_EQ(100, hw_of(self->n0, 40, 0));
	sync_node(self->n0);
	core_totals(self->n0, &t);
	ASSERT_EQ(51, t.st.refs_deferred);
	ASSERT_EQ(0, t.st.refs_dropped);
	check_conservation(_metadata, self->n0);
}

/* A full fold log drops the events of inline folds, and says so. */
TEST_F(core, fold_log_overflow)
{
	u32 abs = self->n0->abs_threshold;
	struct rcb_event ev[4];
	struct core_totals t;
	unsigned int i;

	for (i = 0; i < REFCNT_FOLD_LOG + 3; i++)
		ASSERT_TRUE(refer(self->n0, 50 + i, 0, abs + 1));
	sync_node(self->n0);
	ASSERT_EQ(1, read_events(self->n0, ev, 1));
	ASSERT_EQ(RCB_EVENT_LOST, ev[0].type);
	ASSERT_EQ(3, ev[0].count);
	ASSERT_EQ(REFCNT_FOLD_LOG, ev[0].seq);
	ASSERT_EQ(1, read_events(self->n0, ev, 1));
	ASSERT_EQ(RCB_EVENT_FOLD, ev[0].type);
	ASSERT_EQ(50, ev[0].set);
	core_totals(self->n0, &t);
	ASSERT_EQ(REFCNT_FOLD_LOG + 3, t.st.folds);
	ASSERT_EQ(3, t.st.events_dropped);
	check_conservation(_metadata, self->n0);
}

TEST_F(core, differential_threshold)
{
	struct rcb_event ev[4];
	unsigned int home = self->n2->home_counter;

	ASSERT_EQ(2, home);
	if (!variant->diff) {
		/* Off: no remote lead, however large, raises an event. */
		ASSERT_TRUE(refer(self->n2, 8, 0, 1000));
		sync_node(self->n2);
		ASSERT_EQ(0, read_events(self->n2, ev, 4));
		return;
	}
	ASSERT_TRUE(refer(self->n2, 8, 2, 10));
	ASSERT_TRUE(refer(self->n2, 8, 0, 110));	/* 100 ahead: not more */
	sync_node(self->n2);
	ASSERT_EQ(0, read_events(self->n2, ev, 4));
	ASSERT_TRUE(refer(self->n2, 8, 0, 1));
	ASSERT_TRUE(refer(self->n2, 8, 0, 1));		/* raised once */
	sync_node(self->n2);
	ASSERT_EQ(1, read_events(self->n2, ev, 4));
	ASSERT_EQ(RCB_EVENT_MIGRATE, ev[0].type);
	ASSERT_EQ(0, ev[0].counter);
	ASSERT_EQ(112, ev[0].count);
	ASSERT_EQ(10, ev[0].home_count);
	ASSERT_EQ(2, ev[0].home_cnodeid);
	/* No fold since: the set stays migrated, no second event. */
	ASSERT_TRUE(refer(self->n2, 8, 1, 200));
	sync_node(self->n2);
	ASSERT_EQ(0, read_events(self->n2, ev, 4));
}

TEST_F(core, event_context)
{
	struct refcnt_ctx ctx = { .pid = 42, .vaddr = 0x7000 };
	u32 abs = self->n0->abs_threshold;
	struct rcb_event ev[4];

	ASSERT_TRUE(refcnt_reference(refcnt_set_paddr(self->n0, 5), 0, abs, &ctx));
	ASSERT_TRUE(refcnt_reference(refcnt_set_paddr(self->n0, 6), 0, abs, &ctx));
	/* Set 6 raised again without a context: its context is forgotten. */
	ASSERT_TRUE(refcnt_reference(refcnt_set_paddr(self->n0, 6), 0, 1, NULL));
	sync_node(self->n0);
	ASSERT_EQ(2, read_events(self->n0, ev, 4));
	ASSERT_EQ(RCB_EVENT_F_CONTEXT, ev[0].flags);
	ASSERT_EQ(42, ev[0].pid);
	ASSERT_EQ(0x7000, ev[0].vaddr);
	ASSERT_EQ(0, ev[1].flags);
	ASSERT_EQ(0, ev[1].pid);
}

TEST_F(core, reset_discards_and_conserves)
{
	u32 max = refcnt_topo.hw_max;
	struct core_totals t;

	ASSERT_TRUE(refer(self->n0, 1, 0, max + 100));	/* folds inline */
	ASSERT_TRUE(refer(self->n0, 2, 1, 33));
	refer_singly(self->n0, 3, 1, max + 2);		/* pegs */
	sync_node(self->n0);
	ASSERT_TRUE(refer(self->n0, 1, 0, 9));
	ASSERT_EQ(0, refcnt_node_reset(self->n0));
	core_totals(self->n0, &t);
	ASSERT_EQ(0, t.hw + t.ext + t.lost);
	ASSERT_EQ(max + 100 + 33 + max + 2 + 9, t.st.discarded);
	ASSERT_EQ(t.st.references, t.st.discarded);
	ASSERT_EQ(0, atomic_long_read(&self->n0->hw.nr_allocated));
	/* Nothing pending survives a reset; counting starts again. */
	sync_node(self->n0);
	ASSERT_TRUE(refer(self->n0, 1, 0, 4));
	ASSERT_EQ(4, hw_of(self->n0, 1, 0));
	check_conservation(_metadata, self->n0);
}

TEST_F(core, thresholds_checked)
{
	u32 max = refcnt_topo.hw_max;

	ASSERT_EQ(-EINVAL, refcnt_node_set_thresholds(self->n0, 0, 0));
	ASSERT_EQ(-EINVAL, refcnt_node_set_thresholds(self->n0, max + 1, 0));
	ASSERT_EQ(-EINVAL, refcnt_node_set_thresholds(self->n0, 5, max + 1));
	ASSERT_EQ(0, refcnt_node_set_thresholds(self->n0, 5, 3));
	ASSERT_TRUE(refer(self->n0, 0, 0, 4));
	sync_node(self->n0);
	ASSERT_EQ(4, hw_of(self->n0, 0, 0));
	ASSERT_TRUE(refer(self->n0, 0, 0, 1));
	sync_node(self->n0);
	ASSERT_EQ(5, ext_of(self->n0, 0, 0));
}

TEST_F(core, extended_counter_saturates)
{
	u32 *ext = refcnt_table_counter(&self->n0->table, 7 * 5 + 1);
	struct core_totals t;

	ASSERT_NE(NULL, ext);
	*ext = U32_MAX - 10;	/* as if folded for a long time */
	ASSERT_TRUE(refer(self->n0, 7, 1, self->n0->abs_threshold));
	sync_node(self->n0);
	ASSERT_EQ(U32_MAX, ext_of(self->n0, 7, 1));
	ASSERT_EQ(self->n0->abs_threshold - 10, lost_of(self->n0, 7, 1));
	core_totals(self->n0, &t);
	ASSERT_EQ(self->n0->abs_threshold - 10, t.st.saturated);
}

TEST_F(core, event_queue_overflow)
{
	struct rcb_event ev[32];
	unsigned int i;

	ASSERT_EQ(0, refcnt_node_set_thresholds(self->n0, 1, 0));
	for (i = 0; i < 1030; i++)
		ASSERT_TRUE(refer(self->n0, i, 0, 1));
	sync_node(self->n0);
	ASSERT_EQ(1, read_events(self->n0, ev, 1));
	ASSERT_EQ(RCB_EVENT_LOST, ev[0].type);
	ASSERT_EQ(6, ev[0].count);
	ASSERT_EQ(1024, ev[0].seq);
	ASSERT_EQ(2, read_events(self->n0, ev, 2));
	ASSERT_EQ(0, ev[0].seq);
	ASSERT_EQ(1, ev[1].seq);
}

/*
 * A flood: 1100 folds fill the 1024-record queue, then 1500 sets cross
 * the differential threshold. The folds the queue has no room for are
 * dropped (a LOST record says so); the MIGRATE records are not: each set
 * owes one, and the reader learns about every set, exactly once, as it
 * makes room (here each sync stands for the service its read() wakes).
 * A set that crosses again while it owes a record gets no second one: the
 * record made late carries its counts then.
 */
TEST_F(core, migrate_events_are_never_dropped)
{
	static struct rcb_event ev[1100];
	static unsigned int seen[8192];
	unsigned int i, s, expect_seq = 1100;
	struct core_totals t;
	int n;

	ASSERT_EQ(0, refcnt_node_set_thresholds(self->n0, 100, 10));
	for (s = 0; s < 1100; s++)
		ASSERT_TRUE(refer(self->n0, s, 0, 100));	/* home: folds */
	for (s = 2000; s < 3500; s++)
		ASSERT_TRUE(refer(self->n0, s, 1, 20));		/* 20 > 0 + 10 */
	sync_node(self->n0);
	n = read_events(self->n0, ev, 1100);
	ASSERT_EQ(1025, n);
	ASSERT_EQ(RCB_EVENT_LOST, ev[0].type);
	ASSERT_EQ(76, ev[0].count);
	ASSERT_EQ(1024, ev[0].seq);
	for (i = 1; i < 1025; i++) {
		ASSERT_EQ(RCB_EVENT_FOLD, ev[i].type);
		ASSERT_EQ(i - 1, ev[i].set);
	}

	/* A fold of an owed set, dropped from the queue the owed ones fill */
	ASSERT_TRUE(refer(self->n0, 3400, 0, 100));
	sync_node(self->n0);
	n = read_events(self->n0, ev, 1100);
	ASSERT_EQ(1025, n);
	ASSERT_EQ(RCB_EVENT_LOST, ev[0].type);
	ASSERT_EQ(1, ev[0].count);
	ASSERT_EQ(1100 + 1024, ev[0].seq);
	for (i = 1; i < 1025; i++) {
		ASSERT_EQ(RCB_EVENT_MIGRATE, ev[i].type);
		ASSERT_EQ(RCB_EVENT_F_LATE, ev[i].flags);
		ASSERT_EQ(2000 + i - 1, ev[i].set);
		ASSERT_EQ(expect_seq++, ev[i].seq);
		ASSERT_EQ(1, ev[i].counter);
		ASSERT_EQ(20, ev[i].count);
		ASSERT_EQ(0, ev[i].home_count);
		seen[ev[i].set]++;
	}

	/* 3400 folded, crosses again while it owes its record: one record */
	expect_seq++;	/* the dropped fold's */
	ASSERT_TRUE(refer(self->n0, 3400, 1, 30));
	sync_node(self->n0);
	n = read_events(self->n0, ev, 1100);
	ASSERT_EQ(476, n);
	for (i = 0; i < 476; i++) {
		ASSERT_EQ(RCB_EVENT_MIGRATE, ev[i].type);
		ASSERT_EQ(RCB_EVENT_F_LATE, ev[i].flags);
		ASSERT_EQ(3024 + i, ev[i].set);
		ASSERT_EQ(expect_seq++, ev[i].seq);
		ASSERT_EQ(ev[i].set == 3400 ? 30 : 20, ev[i].count);
		seen[ev[i].set]++;
	}
	sync_node(self->n0);
	ASSERT_EQ(0, read_events(self->n0, ev, 1100));

	for (s = 0; s < 8192; s++)
		ASSERT_EQ(s >= 2000 && s < 3500 ? 1 : 0, seen[s]);
	core_totals(self->n0, &t);
	ASSERT_EQ(1501, t.st.migrations);
	ASSERT_EQ(77, t.st.events_dropped);
	check_conservation(_metadata, self->n0);
}

/*
 * A set whose MIGRATE record is still queued, unread, when it crosses the
 * differential again (after a fold) gets no second record: the queued one
 * is updated in place, with the new counts and context but its seq and
 * time. No room is taken and nothing is dropped; every crossing counts in
 * migrations. Once read, the set's next crossing queues a new record.
 */
TEST_F(core, migrate_record_queued_is_updated_in_place)
{
	struct refcnt_ctx ctx = { .pid = 42, .vaddr = 0x7000 };
	struct rcb_event ev[64];
	struct core_totals t;
	u64 time0[10];
	unsigned int s;

	ASSERT_EQ(0, refcnt_node_set_thresholds(self->n0, 100, 10));
	for (s = 0; s < 10; s++)
		ASSERT_TRUE(refer(self->n0, s, 1, 20));		/* crosses */
	sync_node(self->n0);
	for (s = 0; s < 10; s++)
		ASSERT_TRUE(refer(self->n0, s, 1, 80));		/* folds */
	sync_node(self->n0);
	for (s = 0; s < 10; s++)		/* crosses again, queued unread */
		ASSERT_TRUE(refcnt_reference(refcnt_set_paddr(self->n0, s), 2,
					     30, &ctx));
	sync_node(self->n0);
	ASSERT_EQ(20, read_events(self->n0, ev, 64));
	for (s = 0; s < 10; s++) {
		ASSERT_EQ(RCB_EVENT_MIGRATE, ev[s].type);
		ASSERT_EQ(s, ev[s].set);
		ASSERT_EQ(s, ev[s].seq);
		ASSERT_EQ(RCB_EVENT_F_CONTEXT, ev[s].flags);
		ASSERT_EQ(42, ev[s].pid);
		ASSERT_EQ(0x7000, ev[s].vaddr);
		ASSERT_EQ(2, ev[s].counter);
		ASSERT_EQ(30, ev[s].count);
		ASSERT_EQ(0, ev[s].home_count);
		time0[s] = ev[s].time_ns;
		ASSERT_EQ(RCB_EVENT_FOLD, ev[10 + s].type);
		ASSERT_EQ(s, ev[10 + s].set);
		ASSERT_EQ(10 + s, ev[10 + s].seq);
		ASSERT_EQ(100, ev[10 + s].count);
		ASSERT_LE(time0[s], ev[10 + s].time_ns);
	}
	core_totals(self->n0, &t);
	ASSERT_EQ(20, t.st.migrations);
	ASSERT_EQ(0, t.st.events_dropped);

	/* Read: the next crossing is a record of its own. */
	ASSERT_TRUE(refer(self->n0, 3, 2, 70));		/* 3 folds */
	sync_node(self->n0);
	ASSERT_TRUE(refer(self->n0, 3, 1, 25));
	sync_node(self->n0);
	ASSERT_EQ(2, read_events(self->n0, ev, 64));
	ASSERT_EQ(RCB_EVENT_FOLD, ev[0].type);
	ASSERT_EQ(20, ev[0].seq);
	ASSERT_EQ(RCB_EVENT_MIGRATE, ev[1].type);
	ASSERT_EQ(3, ev[1].set);
	ASSERT_EQ(21, ev[1].seq);
	ASSERT_EQ(1, ev[1].counter);
	ASSERT_EQ(25, ev[1].count);
	ASSERT_EQ(0, ev[1].flags);
	check_conservation(_metadata, self->n0);
}

/*
 * The reference path as a PEBS/IBS overflow handler runs it, in NMI
 * (in_nmi() true): where the counter page does not exist yet it allocates
 * nothing; the references wait in the CPU's deferral ring (they reached a
 * node: refcnt_reference() says true), and the irq_work it raised makes
 * the page and counts them. Outside NMI a missing page is allocated and
 * the first reference counts. (The kernel's own NMI is never faked: the
 * sample path's decoding runs in the guests, from the test module.)
 */
TEST_F(core, nmi_defers_without_page)
{
	struct core_totals t;

	shim_in_nmi = true;
	ASSERT_TRUE(refer(self->n0, 100, 0, 100));	/* no page: deferred */
	shim_in_nmi = false;
	core_totals(self->n0, &t);
	ASSERT_EQ(0, t.st.refs_dropped);
	ASSERT_EQ(0, t.st.references);
	ASSERT_EQ(0, hw_of(self->n0, 100, 0) + ext_of(self->n0, 100, 0));
	shim_run_pending();			/* irq_work: page, count */
	core_totals(self->n0, &t);
	ASSERT_EQ(100, t.st.references);
	ASSERT_EQ(100, t.st.refs_deferred);
	ASSERT_EQ(100, hw_of(self->n0, 100, 0));
	shim_in_nmi = true;
	ASSERT_TRUE(refer(self->n0, 100, 0, 30));	/* counted at once */
	shim_in_nmi = false;
	core_totals(self->n0, &t);
	ASSERT_EQ(100, t.st.refs_deferred);
	ASSERT_EQ(130, hw_of(self->n0, 100, 0));

	/* Outside NMI, a missing page is made: counted at once. */
	ASSERT_EQ(0, refcnt_node_reset(self->n0));
	ASSERT_TRUE(refer(self->n0, 100, 0, 40));
	core_totals(self->n0, &t);
	ASSERT_EQ(0, t.st.refs_dropped);
	ASSERT_EQ(100, t.st.refs_deferred);
	ASSERT_EQ(40, hw_of(self->n0, 100, 0));
	check_conservation(_metadata, self->n0);
}

/*
 * More NMIs to cold pages than the deferral ring holds before the
 * irq_work runs: the ring keeps REFCNT_DEFER_LEN deliveries, counted
 * later; each one after is dropped, and counted in refs_dropped and
 * defer_full exactly. Once replayed the ring has room again.
 */
TEST_F(core, nmi_defer_ring_full_counts_the_loss)
{
	const unsigned int extra = 3, n = REFCNT_DEFER_LEN + extra;
	u64 kept = 0, dropped = 0;
	struct core_totals t;
	unsigned int k;

	shim_in_nmi = true;
	for (k = 0; k < n; k++) {	/* 205 sets: a hardware page each */
		ASSERT_TRUE(refer(self->n0, k * 205, 0, 7 + k));
		*(k < REFCNT_DEFER_LEN ? &kept : &dropped) += 7 + k;
	}
	shim_in_nmi = false;
	core_totals(self->n0, &t);
	ASSERT_EQ(0, t.st.references);
	ASSERT_EQ(dropped, t.st.refs_dropped);
	ASSERT_EQ(t.st.refs_dropped, t.st.defer_full);
	sync_node(self->n0);
	for (k = 0; k < n; k++)
		ASSERT_EQ(k < REFCNT_DEFER_LEN ? 7 + k : 0,
			  hw_of(self->n0, k * 205, 0));
	core_totals(self->n0, &t);
	ASSERT_EQ(kept, t.st.references);
	ASSERT_EQ(t.st.references, t.st.refs_deferred);
	shim_in_nmi = true;
	ASSERT_TRUE(refer(self->n0, n * 205, 0, 9));	/* room again */
	shim_in_nmi = false;
	sync_node(self->n0);
	ASSERT_EQ(9, hw_of(self->n0, n * 205, 0));
	core_totals(self->n0, &t);
	ASSERT_EQ(t.st.refs_dropped, t.st.defer_full);
	check_conservation(_metadata, self->n0);
}

/*
 * A PEBS/IBS stream as its overflow handler delivers it, in NMI, over
 * cold memory without prealloc: each sample reaches a set whose counter
 * pages (hardware and extended) do not exist yet, with a weight past the
 * absolute threshold. The irq_work runs between some of the NMIs, as it
 * does on a CPU whose NMIs come faster than its interrupts. Not one
 * reference is dropped: every set holds exactly what was delivered.
 */
TEST_F(core, nmi_stream_over_cold_memory_drops_nothing)
{
	const u32 weight = 10007;
	unsigned int k, sample = 0;
	struct core_totals t;
	u64 total = 0;

	for (k = 0; k < 32; k++) {
		u64 set = (u64)k * 256;	/* a hardware page of its own */
		unsigned int src;

		for (src = 0; src < 2; src++) {
			shim_in_nmi = true;
			ASSERT_TRUE(refer(self->n0, set, src, weight + src));
			shim_in_nmi = false;
			total += weight + src;
			if (++sample % 4 == 0)
				shim_run_pending();
		}
	}
	sync_node(self->n0);
	core_totals(self->n0, &t);
	ASSERT_EQ(0, t.st.refs_dropped);
	for (k = 0; k < 32; k++) {
		u64 set = (u64)k * 256;
		unsigned int src;

		for (src = 0; src < 2; src++) {
			unsigned int c = src >> refcnt_topo.counter_shift;

			ASSERT_EQ(weight + src, hw_of(self->n0, set, c) +
				  ext_of(self->n0, set, c) +
				  lost_of(self->n0, set, c));
		}
	}
	ASSERT_EQ(total, t.st.references);
	ASSERT_EQ(total, t.hw + t.ext + t.lost);
	check_conservation(_metadata, self->n0);
}

/*
 * A fold that finds no memory for an extended counter leaves the count
 * in hardware, the set raised, and retries later, each time later while
 * memory stays short: 10 ms, then twice as long, up to 1 s. Nothing runs
 * before the delay (the work queues itself delayed and never raises the
 * irq_work, which node release waits for first). With memory back, the
 * retry folds and the backoff starts over.
 */
TEST_F(core, fold_retry_backs_off)
{
	u32 abs = self->n0->abs_threshold;
	unsigned long want = 10;
	struct rcb_event ev[4];
	int i;

	ASSERT_TRUE(refer(self->n0, 10, 0, abs));	/* raised */
	shim_no_memory = true;
	ASSERT_EQ(2, shim_run_pending());	/* the irq_work, the service */
	for (i = 0; i < 9; i++) {
		ASSERT_EQ(want, self->n0->fold_work.delay);
		ASSERT_EQ(want, self->n0->fold_backoff);
		ASSERT_EQ(abs, hw_of(self->n0, 10, 0));
		ASSERT_EQ(0, ext_of(self->n0, 10, 0));
		ASSERT_EQ(0, read_events(self->n0, ev, 4));
		ASSERT_EQ(0, shim_run_pending());	/* waits for the delay */
		ASSERT_EQ(1, shim_run_timers());
		ASSERT_EQ(1, shim_run_pending());	/* the retry, in vain */
		want = min(2 * want, 1000UL);
	}
	ASSERT_EQ(1000, want);

	shim_no_memory = false;
	ASSERT_EQ(1, shim_run_timers());
	ASSERT_EQ(1, shim_run_pending());
	ASSERT_EQ(0, hw_of(self->n0, 10, 0));
	ASSERT_EQ(abs, ext_of(self->n0, 10, 0));
	ASSERT_EQ(1, read_events(self->n0, ev, 4));
	ASSERT_EQ(RCB_EVENT_FOLD, ev[0].type);
	ASSERT_EQ(abs, ev[0].count);
	ASSERT_EQ(0, self->n0->fold_backoff);
	ASSERT_EQ(0, shim_run_timers());	/* no retry left */
	check_conservation(_metadata, self->n0);
}

/* More than 64 nodes: one counter per group of 8 cnodeids. */
TEST(grouped_counters)
{
	struct core_spec spec = {
		.nr_online = 70, .nr_ranges = 2,
		.ram = { { 0, 8 * MiB, 0 }, { 8 * MiB, 16 * MiB, 69 } },
	};
	struct refcnt_node *n69;

	ASSERT_EQ(0, core_boot(&spec));
	n69 = core_nodes[69];
	ASSERT_EQ(9, refcnt_topo.counters_per_set);
	ASSERT_EQ(3, refcnt_topo.counter_shift);
	ASSERT_EQ(19, refcnt_topo.hw_bits);
	ASSERT_EQ(8, n69->home_counter);
	ASSERT_TRUE(refer(n69, 1, 9, 2));
	ASSERT_TRUE(refer(n69, 1, 15, 3));
	ASSERT_EQ(5, hw_of(n69, 1, 1));
	ASSERT_FALSE(refer(n69, 1, 70, 3));
	core_halt();
}

/* A granularity above the page size: one set per 64 KiB. */
TEST(coarse_granularity)
{
	struct core_spec spec = {
		.nr_online = 2, .nr_ranges = 2, .granularity = 65536,
		.ram = { { 0, 4 * MiB, 0 }, { 4 * MiB, 8 * MiB, 1 } },
	};

	ASSERT_EQ(0, core_boot(&spec));
	ASSERT_EQ(64, core_nodes[0]->nr_sets);
	ASSERT_TRUE(refcnt_reference(65536 + 4095, 1, 2, NULL));
	ASSERT_TRUE(refcnt_reference(65536 * 2 - 1, 1, 2, NULL));
	ASSERT_EQ(4, hw_of(core_nodes[0], 1, 1));
	core_halt();
}

/* Conservation across layouts: what went offline is in 'offlined'. */
static void check_books(struct __test_metadata *_metadata,
			struct refcnt_node *node)
{
	struct core_totals t;

	core_totals(node, &t);
	ASSERT_EQ(t.st.references, t.hw + t.ext + t.lost + t.st.discarded +
		  t.st.overflowed + t.st.offlined);
}

/* Replace node @nid's layout by one of its RAM now, as layout.c does. */
static struct refcnt_node *relayout(int nid, u32 gen)
{
	struct refcnt_node *old = core_nodes[nid], *succ;

	succ = refcnt_node_create(nid, gen, NULL, old);
	if (IS_ERR(succ))
		return NULL;
	core_nodes[nid] = succ;
	if (refcnt_slots_index(core_nodes, MAX_NUMNODES))
		return NULL;
	if (old)
		refcnt_node_retire(old, succ, NULL);
	return old;
}

/*
 * Memory of node 1 goes offline (its second range), then comes back: the
 * counts of the memory that stays move, hardware folded into extended,
 * lost into lost; those of the memory gone are 'offlined'; the old layout
 * is retired, frozen, and its queue ends with a LAYOUT record.
 */
TEST(layout_change_moves_and_offlines)
{
	struct core_spec spec = {
		.nr_online = 2, .nr_ranges = 3,
		.ram = { { 0, 16 * MiB, 0 }, { 16 * MiB, 32 * MiB, 1 },
			 { 48 * MiB, 64 * MiB, 1 } },
	};
	struct refcnt_node *n1, *old, *old2;
	struct core_totals t;
	struct rcb_event ev[8];
	u64 gone = 4096 + 5;	/* the first set of the second range */
	int n;

	ASSERT_EQ(0, core_boot(&spec));
	n1 = core_nodes[1];
	ASSERT_EQ(8192, n1->nr_sets);
	ASSERT_TRUE(refer(n1, 5, 0, 1792));	/* folds: 1792 extended */
	ASSERT_TRUE(refer(n1, 5, 1, 7));	/* stays hardware */
	ASSERT_TRUE(refer(n1, 6, 1, 1792));	/* raised: singly, it pegs */
	refer_singly(n1, 6, 1, 3000 - 1792);	/* 2047 + 953 lost */
	ASSERT_TRUE(refer(n1, gone, 0, 11));
	ASSERT_TRUE(refer(n1, gone, 1, 2100));
	sync_node(n1);

	/* Offline: the layout has the first range only. An open file: */
	refcnt_node_get(n1);
	shim_machine.nr_ranges = 2;
	old = relayout(1, 1);
	ASSERT_NE(NULL, old);
	refcnt_node_put(old);
	n1 = core_nodes[1];
	ASSERT_EQ(4096, n1->nr_sets);
	ASSERT_EQ(1, n1->generation);
	ASSERT_TRUE(old->retired);
	ASSERT_EQ(1792, ext_of(n1, 5, 0));
	ASSERT_EQ(7, ext_of(n1, 5, 1));
	ASSERT_EQ(0, hw_of(n1, 5, 1));
	ASSERT_EQ(2047, ext_of(n1, 6, 1) + hw_of(n1, 6, 1));
	ASSERT_EQ(953, lost_of(n1, 6, 1));
	core_totals(n1, &t);
	ASSERT_EQ(11 + 2100, t.st.offlined);
	ASSERT_EQ(1792 + 7 + 3000 + 11 + 2100, t.st.references);
	check_books(_metadata, n1);
	/* Nothing counts the memory gone; the old layout is frozen. */
	ASSERT_FALSE(refcnt_reference(refcnt_set_paddr(old, gone), 0, 1, NULL));
	ASSERT_EQ(1792, ext_of(old, 5, 0));
	n = read_events(old, ev, 8);
	ASSERT_LT(0, n);
	ASSERT_EQ(RCB_EVENT_LAYOUT, ev[n - 1].type);
	ASSERT_EQ(1, ev[n - 1].count);
	ASSERT_EQ(4096, ev[n - 1].set);

	/* Online again: counting goes on where it was; the books still hold. */
	shim_machine.nr_ranges = 3;
	old2 = relayout(1, 2);
	ASSERT_NE(NULL, old2);
	n1 = core_nodes[1];
	ASSERT_EQ(8192, n1->nr_sets);
	ASSERT_EQ(0, ext_of(n1, gone, 1));
	ASSERT_TRUE(refer(n1, gone, 1, 5));
	ASSERT_TRUE(refer(n1, 5, 1, 1));
	sync_node(n1);
	ASSERT_EQ(5, hw_of(n1, gone, 1));
	ASSERT_EQ(8, ext_of(n1, 5, 1) + hw_of(n1, 5, 1));
	check_books(_metadata, n1);
	refcnt_node_put(old);
	refcnt_node_put(old2);
	core_halt();
}

/*
 * The same change with no file open on the old layout: the pages of
 * counters whose sets keep their place are handed over as they are
 * (hardware counts stay hardware counts), the memory gone is 'offlined', the
 * books hold; with prealloc=1 the new layout made no page of its own for
 * them, nor has any missing after.
 */
TEST(layout_change_hands_pages_over)
{
	struct core_spec spec = {
		.nr_online = 2, .nr_ranges = 3, .prealloc = true,
		.ram = { { 0, 16 * MiB, 0 }, { 16 * MiB, 32 * MiB, 1 },
			 { 48 * MiB, 64 * MiB, 1 } },
	};
	struct refcnt_node *n1, *old;
	struct core_totals t;
	struct page *hw0, *ext0;
	u64 gone = 4096 + 5;
	u32 hw51, ext51;

	ASSERT_EQ(0, core_boot(&spec));
	n1 = core_nodes[1];
	ASSERT_TRUE(refer(n1, 5, 0, 1792));	/* folds: 1792 extended */
	ASSERT_TRUE(refer(n1, 5, 1, 7));	/* stays hardware */
	ASSERT_TRUE(refer(n1, gone, 1, 2100));
	sync_node(n1);
	hw51 = hw_of(n1, 5, 1);
	ext51 = ext_of(n1, 5, 1);
	ASSERT_EQ(7, hw51 + ext51);
	hw0 = n1->hw.pages[0];
	ext0 = n1->table.counters.pages[0];

	shim_machine.nr_ranges = 2;
	old = relayout(1, 1);
	ASSERT_NE(NULL, old);
	n1 = core_nodes[1];
	ASSERT_EQ(4096, n1->nr_sets);
	ASSERT_EQ(hw0, n1->hw.pages[0]);
	ASSERT_EQ(ext0, n1->table.counters.pages[0]);
	ASSERT_EQ(NULL, old->hw.pages[0]);
	ASSERT_EQ(1792, ext_of(n1, 5, 0));
	ASSERT_EQ(hw51, hw_of(n1, 5, 1));	/* as they were */
	ASSERT_EQ(ext51, ext_of(n1, 5, 1));
	ASSERT_EQ(n1->hw.nr_pages, atomic_long_read(&n1->hw.nr_allocated));
	core_totals(n1, &t);
	ASSERT_EQ(2100, t.st.offlined);
	ASSERT_EQ(1792 + 7 + 2100, t.st.references);
	check_books(_metadata, n1);
	refcnt_node_put(old);
	core_halt();
}

/*
 * A node online only after the load has no cnodeid, so no home counter:
 * every counter is remote against a home count of 0, and nothing reads
 * past the set.
 */
TEST(node_onlined_after_load_has_no_cnodeid)
{
	struct core_spec spec = {
		.nr_online = 2, .nr_ranges = 2,
		.ram = { { 0, 16 * MiB, 0 }, { 16 * MiB, 32 * MiB, 1 } },
		.diff_threshold = 10,
	};
	struct refcnt_node *n2;
	struct rcb_event ev[8];
	int n;

	ASSERT_EQ(0, core_boot(&spec));
	shim_machine.online[2] = true;
	shim_machine.ram[shim_machine.nr_ranges].start = 32 * MiB;
	shim_machine.ram[shim_machine.nr_ranges].end = 48 * MiB;
	shim_machine.ram[shim_machine.nr_ranges].nid = 2;
	shim_machine.nr_ranges++;
	ASSERT_EQ(NULL, relayout(2, 1));	/* no old layout to retire */
	n2 = core_nodes[2];
	ASSERT_EQ(-1, n2->cnodeid);
	ASSERT_LE(refcnt_topo.counters_per_set, n2->home_counter);
	ASSERT_TRUE(refcnt_node_prepare(n2, 3, 1, 50));
	ASSERT_TRUE(refer(n2, 3, 1, 50));
	ASSERT_FALSE(refer(n2, 3, 2, 1));	/* no cnodeid 2 to come from */
	sync_node(n2);
	n = read_events(n2, ev, 8);
	ASSERT_EQ(1, n);
	ASSERT_EQ(RCB_EVENT_MIGRATE, ev[0].type);
	ASSERT_EQ(50, ev[0].count);
	ASSERT_EQ(0, ev[0].home_count);
	ASSERT_EQ(0xffffffffU, ev[0].home_cnodeid);
	check_books(_metadata, n2);
	core_halt();
}

TEST_HARNESS_MAIN
