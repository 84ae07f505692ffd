/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt: the core, the emulated counter hardware of each node.
 *
 * Layering (after mm/damon): the core (topology.c, slots.c, sparse.c,
 * table.c, node.c, counter.c, fold.c, events.c, retire.c) knows nothing
 * of its users: no files, ioctls, sysfs or user memory, only this header.
 * The feeds (feed.h) and the user interface (refcnt.h) call it through
 * the functions below. They may read the fields of a node that are fixed
 * once it is created (nid, cnodeid, home_counter, slots, nr_slots,
 * nr_sets, base_pages, table.len) and pass its parts (events, table) to
 * the functions that take them; nothing else of a node is theirs to touch.
 */
#ifndef _REFCNT_CORE_H
#define _REFCNT_CORE_H

#include <linux/irq_work.h>
#include <linux/kref.h>
#include <linux/mm.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/nodemask.h>
#include <linux/percpu.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "reference.h"
#include "sparse.h"

struct address_space;
struct rcb_event;

/**
 * struct refcnt_topology - the machine as the counters see it
 * @nr_cnodes:		online nodes; cnodeids are 0..nr_cnodes-1
 * @counters_per_set:	counters in one set (one per cnodeid, or per group)
 * @nodes_per_counter:	cnodeids counted by one counter (1, or 8 above 64)
 * @counter_shift:	log2(@nodes_per_counter): cnodeid >> it = counter
 * @hw_bits:		width of a hardware counter, 11 or 19
 * @hw_max:		maximum count of a hardware counter, 2^hw_bits - 1
 * @nid_to_cnode:	cnodeid of each online Linux node id, -1 otherwise
 * @cnode_to_nid:	Linux node id of each cnodeid
 *
 * cnodeids number the nodes online at load densely in node-id order, so
 * sparse node ids and CPU-less or memory-less nodes all have a place. The
 * topology is fixed at load time: a node that comes online later (a CXL
 * memory expander) has no cnodeid (-1) and no counter; its memory is
 * counted, references from its CPUs are not.
 */
struct refcnt_topology {
	unsigned int nr_cnodes;
	unsigned int counters_per_set;
	unsigned int nodes_per_counter;
	unsigned int counter_shift;
	unsigned int hw_bits;
	u32 hw_max;
	int nid_to_cnode[MAX_NUMNODES];
	int cnode_to_nid[MAX_NUMNODES];
};

struct refcnt_node;

/**
 * struct refcnt_slot - a contiguous physical range of a node's memory
 * @base:	physical address, a multiple of the granularity
 * @size:	bytes, a multiple of the granularity
 * @first_set:	index of the set that counts @base
 * @node:	the node the slot belongs to
 */
struct refcnt_slot {
	u64 base;
	u64 size;
	u64 first_set;
	struct refcnt_node *node;
};

/**
 * struct refcnt_table - a node's extended counters and their mappings
 * @counters:	the extended counters, set-major
 * @len:	bytes of the counter buffer (sets * counters_per_set * 4)
 * @zero_page:	read-only page of zeros mapped where @counters has no page
 * @map_lock:	orders mmap faults against page installation, so that no
 *		mapping keeps @zero_page where a real page now exists
 * @mapping:	address space the node's counters are mapped through, to
 *		zap @zero_page mappings when a page is installed; NULL
 *		while nothing maps them (refcnt_table_set_mapping())
 * @zap:	bit 0: a page was installed where map_lock could not be
 *		taken (refcnt_table_counter_atomic()); the interrupt
 *		service zaps the mappings (refcnt_table_zap())
 */
struct refcnt_table {
	struct refcnt_sparse counters;
	size_t len;
	struct page *zero_page;
	struct rw_semaphore map_lock;
	struct address_space *mapping;
	unsigned long zap;
};

/**
 * struct refcnt_stats - per-CPU statistics of a node, summed when read
 * @references:	references delivered to the node's hardware counters
 * @pegged:	references lost because a hardware counter was pegged
 * @saturated:	references lost because an extended counter was at 2^32-1
 * @folds:	sets folded by threshold interrupts
 * @migrations:	migration events raised by the differential threshold
 * @events_dropped: events lost because the event queue was full
 * @refs_dropped: references that never reached a counter: its page could
 *		not be allocated (out of memory), or an NMI found it missing
 *		and the deferral ring was full (@defer_full)
 * @refs_deferred: references an NMI found no counter page for, kept in
 *		the deferral ring and counted from the irq_work
 * @defer_full:	references dropped because the deferral ring of the CPU
 *		was full; a part of @refs_dropped
 * @discarded:	counts removed by resets (hardware, extended and lost)
 * @overflowed:	lost references no lost count could hold: it was at
 *		2^32-1, or its page could not be allocated
 * @offlined:	counts dropped with memory that went offline (hardware,
 *		extended and lost). references = extended + hardware + lost
 *		+ discarded + overflowed + offlined, exactly
 *
 * The one list of them: every field is a u64 that sums as one
 * (refcnt_stats_add()), and sysfs.c names each.
 */
struct refcnt_stats {
	u64 references;
	u64 pegged;
	u64 saturated;
	u64 folds;
	u64 migrations;
	u64 events_dropped;
	u64 refs_dropped;
	u64 refs_deferred;
	u64 defer_full;
	u64 discarded;
	u64 overflowed;
	u64 offlined;
};

/* Statistics in struct refcnt_stats. */
#define REFCNT_NR_STATS		(sizeof(struct refcnt_stats) / sizeof(u64))

/*
 * Event contexts remembered per node, indexed by set; a lossy cache. A
 * raise's context must outlive the raises of other sets until the fold
 * work reads it, which lags most when the feed is busiest: one slot per
 * 64 sets, a power of two from 64 to 1,024 (64 slots left a fifth of the
 * events of make placement's PEBS runs on 512 MiB nodes unnamed).
 */
#define REFCNT_CTX_MIN		64
#define REFCNT_CTX_MAX		1024

/**
 * struct refcnt_ctx_slot - the context of the last reference to raise
 *			    something for a set, in refcnt_node.ctx
 * @set:	the set, or U64_MAX for none
 * @vaddr:	virtual address referenced
 * @pid:	its process
 */
struct refcnt_ctx_slot {
	u64 set;
	u64 vaddr;
	pid_t pid;
};

/**
 * struct refcnt_events - a node's bounded queue of event records
 * @lock:	protects everything below
 * @ring:	records, @size of them; allocated with the first record, so
 *		a node nobody watches costs nothing here
 * @size:	capacity, a power of two
 * @nid:	node the ring's memory comes from
 * @head:	records queued so far
 * @tail:	records read so far
 * @seq:	events raised so far, dropped ones included
 * @dropped:	events dropped since the reader last saw a LOST record
 * @first_dropped: seq of the first of them; a LOST record carries it
 * @room_wanted: a full queue refused an offered record: the reader that
 *		makes room says so (refcnt_events_room_wanted())
 * @chain:	where the offered (MIGRATE) records still queued are, by
 *		set: per bucket (set modulo @size) the first and the last
 *		ring slot of a chain in queue order, then per ring slot the
 *		next; slots stored plus one, 0 ends a chain. Made with the ring
 * @wait:	readers waiting for a record; the interface waits here
 */
struct refcnt_events {
	spinlock_t lock;	/* protects the fields below */
	struct rcb_event *ring;
	u32 *chain;
	u32 size;
	int nid;
	u64 head;
	u64 tail;
	u64 seq;
	u64 dropped;
	u64 first_dropped;
	bool room_wanted;
	wait_queue_head_t wait;
};

/*
 * Entries of a node's deferral ring, per CPU. An NMI defers a delivery
 * whose counter page is missing; the irq_work, which an NMI raises and
 * which runs as soon as the CPU takes interrupts again, replays them: so
 * a CPU fills its ring only with more NMIs to cold pages in a row than
 * this before its next interrupt.
 */
#define REFCNT_DEFER_LEN	32

/**
 * struct refcnt_deferred - a delivery an NMI could not count, in a ring
 * @set:	the set
 * @vaddr:	the context's virtual address, if @has_ctx
 * @pid:	the context's process, if @has_ctx
 * @count:	references
 * @src_cnode:	cnodeid they come from
 * @has_ctx:	the feed gave a context
 */
struct refcnt_deferred {
	u64 set;
	u64 vaddr;
	pid_t pid;
	u32 count;
	u32 src_cnode;
	bool has_ctx;
};

/**
 * struct refcnt_defer_ring - deliveries an NMI deferred, one CPU's
 * @head:	entries written so far, free-running; only this CPU's NMIs
 *		write it
 * @tail:	entries replayed so far, free-running; written by the one
 *		replaying, who holds @busy
 * @busy:	bit 0: a context (irq_work or sync, any CPU) is replaying
 * @entry:	the ring
 *
 * One producer (NMIs do not nest), one consumer at a time: lock-free, so
 * an NMI never waits.
 */
struct refcnt_defer_ring {
	u32 head;
	u32 tail;
	unsigned long busy;
	struct refcnt_deferred entry[REFCNT_DEFER_LEN];
};

/* Entries of a node's inline fold log. */
#define REFCNT_FOLD_LOG		64

/**
 * struct refcnt_fold_entry - FOLD events of folds made on the reference path
 * @set:	the set folded
 * @counter:	the counter each event names
 * @count:	the count each event reports
 * @nr:		events (folds) the entry stands for
 * @ready:	written whole: the interrupt service may take it
 */
struct refcnt_fold_entry {
	u64 set;
	u32 counter;
	u32 count;
	u32 nr;
	u32 ready;
};

/**
 * struct refcnt_fold_log - FOLD events raised where no lock may be taken
 * @head:	entries reserved so far, free-running
 * @tail:	entries the interrupt service took, free-running
 * @dropped:	events dropped because the log was full
 * @entry:	the entries, a ring
 *
 * Many producers (any context, NMI included: reserve with a cmpxchg of
 * @head, fill, then set @ready), one consumer (the interrupt service,
 * under fold_lock). See refcnt_fold_log_add().
 */
struct refcnt_fold_log {
	atomic_t head;
	u32 tail;
	atomic64_t dropped;
	struct refcnt_fold_entry entry[REFCNT_FOLD_LOG];
};

/**
 * struct refcnt_node - the counter hardware of one node with memory
 * @nid:		Linux node id
 * @cnodeid:		compact node id
 * @home_counter:	index of the counter that counts this node itself
 * @slots:		the node's physical ranges, ascending and disjoint
 * @nr_slots:		entries in @slots
 * @nr_sets:		counter sets, one per hardware page of the slots
 * @base_pages:		PAGE_SIZE pages of RAM in the node
 * @abs_threshold:	count at which a hardware counter raises a fold
 * @diff_threshold:	remote-over-home excess that raises a migration
 *			event, 0 when off
 * @hw:			hardware counters, set-major like @table
 * @lost:		references lost to pegging or saturation, per counter
 * @table:		extended counters
 * @fold_pending:	per set: a threshold interrupt is raised, not yet run
 * @peg_pending:	per set: a peg event is to be queued
 * @migrate_pending:	per set: a migration event is to be queued
 * @pegged:		per set: pegged since its last fold
 * @migrated:		per set: migration raised since its last fold
 * @migrate_owed:	per set: a MIGRATE record the full queue refused, to
 *			be offered again first when the service runs
 * @nr_owed:		bits set in @migrate_owed; under @fold_lock
 * @attention:		per word of the bitmaps above: some bit may be set
 * @nr_attention:	bits in @attention
 * @ctx:		contexts of the references that raised events, by set
 * @ctx_mask:		entries of @ctx less one (a power of two less one)
 * @fold_lock:		serialises interrupt service, resets and readers of
 *			hardware counters against each other
 * @irq_work:		raised from any context, NMI included
 * @fold_work:		the deferred interrupt service; queued by @irq_work,
 *			and by itself, later, to retry a fold that found no
 *			memory (it never raises @irq_work)
 * @fold_backoff:	jiffies before that retry: 0 while folds find
 *			memory, doubled at each failure up to a bound;
 *			under @fold_lock
 * @held:		refcnt_node_hold()s in force: the work leaves raised
 *			interrupts pending
 * @service_held:	the work found the node held (under fold_lock)
 * @events:		event queue for readers of the device
 * @fold_log:		FOLD events of folds made on the reference path, for
 *			the interrupt service to queue
 * @stats:		statistics
 * @defer:		per CPU, deliveries an NMI found no counter page for;
 *			the irq_work replays them (defer.c)
 * @defer_pending:	bit 0: some CPU's @defer ring may hold entries
 * @fixed_bytes:	bytes of the tables that do not depend on use
 * @ref:		holders: the layout (while the node is current) and
 *			every open file of it
 * @generation:		layout generation of the node id: 0 for the layout
 *			of the load, one more at each change
 * @retired:		a newer layout replaced this one (refcnt_node_retire());
 *			it counts nothing more. Set after its last event
 * @inherited:		statistics of the earlier layouts of the node id
 */
struct refcnt_node {
	int nid;
	int cnodeid;
	unsigned int home_counter;
	struct refcnt_slot *slots;
	unsigned int nr_slots;
	u64 nr_sets;
	u64 base_pages;
	u32 abs_threshold;
	u32 diff_threshold;
	struct refcnt_sparse hw;
	struct refcnt_sparse lost;
	struct refcnt_table table;
	unsigned long *fold_pending;
	unsigned long *peg_pending;
	unsigned long *migrate_pending;
	unsigned long *pegged;
	unsigned long *migrated;
	unsigned long *migrate_owed;
	u64 nr_owed;
	unsigned long *attention;
	unsigned long nr_attention;
	struct refcnt_ctx_slot *ctx;	/* ctx_mask + 1 */
	u32 ctx_mask;
	struct mutex fold_lock;	/* interrupt service, resets, set reads */
	struct irq_work irq_work;
	struct delayed_work fold_work;
	unsigned long fold_backoff;
	atomic_t held;
	bool service_held;
	struct refcnt_events events;
	struct refcnt_fold_log fold_log;
	struct refcnt_stats __percpu *stats;
	struct refcnt_defer_ring __percpu *defer;
	unsigned long defer_pending;
	size_t fixed_bytes;
	struct kref ref;
	u64 generation;
	bool retired;
	struct refcnt_stats inherited;
};

/**
 * struct refcnt_config - load-time settings of the emulated hardware
 * @granularity:	bytes of a hardware page
 * @granularity_shift:	log2(@granularity)
 * @abs_threshold:	initial absolute threshold of every node
 * @diff_threshold:	initial differential threshold, 0 when off
 * @event_queue_len:	records in each node's event queue
 * @prealloc:		allocate every counter page at load, none later
 */
struct refcnt_config {
	u32 granularity;
	unsigned int granularity_shift;
	u32 abs_threshold;
	u32 diff_threshold;
	u32 event_queue_len;
	bool prealloc;
};

extern struct refcnt_topology refcnt_topo;
extern struct refcnt_config refcnt_cfg;

/* topology.c */
void refcnt_topology_init(struct refcnt_topology *topo, bool premium);

/* slots.c */
extern struct rw_semaphore refcnt_layout_rwsem;
int refcnt_slots_discover(struct refcnt_node *node, u32 granularity);
int refcnt_slots_changed(int nid, const struct refcnt_node *node,
			 u32 granularity);
int refcnt_slots_index(struct refcnt_node **nodes, unsigned int nr_nodes);
void refcnt_slots_index_free(void);
const struct refcnt_slot *refcnt_slot_lookup(u64 paddr);
u64 refcnt_set_paddr(const struct refcnt_node *node, u64 set);
u64 refcnt_paddr_set(const struct refcnt_node *node, u64 paddr);
const struct refcnt_slot *refcnt_slot_lookup_run(u64 paddr, unsigned int *hint,
						 u64 *end);

/**
 * refcnt_sat_add() - add to a 32-bit count that saturates, never wraps
 * @word:	the count, updated atomically (any context)
 * @v:		what to add
 *
 * Return: what did not fit.
 */
static inline u32 refcnt_sat_add(u32 *word, u32 v)
{
	u32 old = READ_ONCE(*word);

	while (!try_cmpxchg(word, &old, old > U32_MAX - v ? U32_MAX : old + v))
		;
	return old > U32_MAX - v ? v - (U32_MAX - old) : 0;
}

/**
 * refcnt_lost_add() - add references to a counter's lost count
 * @node:	the node
 * @lost:	the lost count, or NULL when its page could not be had
 * @n:		references lost
 *
 * What the saturating count cannot hold goes to the 'overflowed'
 * statistic, and so does all of @n without a count: these references
 * reached a counter and are in 'references' already, so 'refs_dropped'
 * (references that never reached one) is no place for them. Any context.
 */
static inline void refcnt_lost_add(struct refcnt_node *node, u32 *lost, u32 n)
{
	this_cpu_add(node->stats->overflowed, lost ? refcnt_sat_add(lost, n) : n);
}

/**
 * refcnt_set_first() - the index of a set's first counter
 * @set:	the set, in its node
 *
 * A node's counter arrays (hardware, extended, lost) hold its sets one
 * after the other, counters_per_set counters each. Of a number of sets,
 * it is also their number of counters.
 *
 * Return: @set * counters_per_set.
 */
static inline u64 refcnt_set_first(u64 set)
{
	return set * refcnt_topo.counters_per_set;
}

/**
 * refcnt_home_count() - the hardware count of a set's home counter
 * @node:	the node
 * @first:	index of the set's first counter
 *
 * A node that came online after the load has no cnodeid, so no home
 * counter (every counter is remote): its home count is 0.
 *
 * Return: the count.
 */
static inline u32 refcnt_home_count(struct refcnt_node *node, u64 first)
{
	if (node->home_counter >= refcnt_topo.counters_per_set)
		return 0;
	return refcnt_sparse_read(&node->hw, first + node->home_counter);
}

/**
 * refcnt_slot_set() - the set that counts a physical address of a slot
 * @slot:	the slot
 * @paddr:	physical address inside @slot
 *
 * Return: the set's index in its node.
 */
static inline u64 refcnt_slot_set(const struct refcnt_slot *slot, u64 paddr)
{
	return slot->first_set +
	       ((paddr - slot->base) >> refcnt_cfg.granularity_shift);
}

/* table.c */
int refcnt_table_init(struct refcnt_table *table, int nid, size_t len);
void refcnt_table_destroy(struct refcnt_table *table);
u32 *refcnt_table_counter(struct refcnt_table *table, u64 idx);
u32 *refcnt_table_counter_atomic(struct refcnt_table *table, u64 idx);
void refcnt_table_zap(struct refcnt_table *table);
unsigned long refcnt_table_detach(struct refcnt_table *table,
				  struct page **scratch);
int refcnt_table_populate(struct refcnt_table *table);
int refcnt_table_populate_but(struct refcnt_table *table,
			      const unsigned long *skip);
void refcnt_table_set_mapping(struct refcnt_table *table,
			      struct address_space *mapping);
unsigned long refcnt_table_pages(const struct refcnt_table *table);
struct page *refcnt_table_map_begin(struct refcnt_table *table,
				    unsigned long pgoff);
void refcnt_table_map_end(struct refcnt_table *table);

/* node.c */
struct refcnt_node *refcnt_node_create(int nid, u64 generation,
				       const struct refcnt_stats *inherited,
				       const struct refcnt_node *prev);
int refcnt_node_populate(struct refcnt_node *node);
void refcnt_node_get(struct refcnt_node *node);
void refcnt_node_put(struct refcnt_node *node);
size_t refcnt_node_table_bytes(const struct refcnt_node *node);
void refcnt_node_stats(const struct refcnt_node *node,
		       struct refcnt_stats *sum);
void refcnt_stats_add(struct refcnt_stats *to, const struct refcnt_stats *s);
struct refcnt_sparse *refcnt_node_counters(struct refcnt_node *node,
					   bool extended);

/* counter.c: the entry point every feed calls (reference.h) */
void refcnt_node_reference(struct refcnt_node *node, u64 set,
			   unsigned int src_cnode, u32 count,
			   const struct refcnt_ctx *ctx);
bool refcnt_node_prepare(struct refcnt_node *node, u64 set,
			 unsigned int src_cnode, u32 count);
u32 *refcnt_counter_word(struct refcnt_node *node, struct refcnt_sparse *sp,
			 u64 idx);

/* defer.c: what an NMI cannot count yet, counted from the irq_work */
bool refcnt_defer(struct refcnt_node *node, u64 set, unsigned int src_cnode,
		  u32 count, const struct refcnt_ctx *ctx);
void refcnt_defer_replay(struct refcnt_node *node);
size_t refcnt_defer_bytes(void);

/* fold.c: the threshold interrupt and what else runs in its context */
void refcnt_raise(struct refcnt_node *node, unsigned long *pending, u64 set);
void refcnt_irq_work(struct irq_work *work);
void refcnt_fold_work(struct work_struct *work);
void refcnt_node_stop(struct refcnt_node *node);
void refcnt_node_sync(struct refcnt_node *node);
void refcnt_node_fold_sets(struct refcnt_node *node, u64 first, u64 nr);
void refcnt_node_hold(struct refcnt_node *node);
void refcnt_node_unhold(struct refcnt_node *node);
u32 *refcnt_fold_inline(struct refcnt_node *node, u64 set, u64 idx,
			u32 *mine);
void refcnt_fold_more(struct refcnt_node *node, u64 set, u64 idx, u32 *ext,
		      u32 nr, u32 thr);
int refcnt_node_reset(struct refcnt_node *node);
int refcnt_node_set_thresholds(struct refcnt_node *node, u32 abs, u32 diff);
void refcnt_node_thresholds(const struct refcnt_node *node, u32 *abs,
			    u32 *diff);
void refcnt_node_read_sets(struct refcnt_node *node, u64 first, u64 nr,
			   u32 *hw, u32 *ext, u32 *lost);

/* retire.c: a layout replaced when memory comes or goes */
void refcnt_node_retire(struct refcnt_node *old, struct refcnt_node *succ,
			struct refcnt_stats *carry);
void refcnt_pages_kept(const struct refcnt_node *old,
		       const struct refcnt_node *succ,
		       void (*fn)(unsigned long p, unsigned long q, void *arg),
		       void *arg);

/*
 * The rcb_generation of the layout that replaces @old, which its queue's
 * RCB_EVENT_LAYOUT record tells: struct rcb_event holds its low 32 bits,
 * so read() takes the 64 of struct rcb_event_record from here.
 */
static inline u64 refcnt_node_next_generation(const struct refcnt_node *old)
{
	return old->generation + 1;
}

/* events.c */
void refcnt_events_init(struct refcnt_events *ev, int nid, u32 size);
void refcnt_events_destroy(struct refcnt_events *ev);
bool refcnt_events_queue(struct refcnt_events *ev, struct rcb_event *rec);
bool refcnt_events_offer(struct refcnt_events *ev, struct rcb_event *rec);
bool refcnt_events_room_wanted(struct refcnt_events *ev);
u64 refcnt_events_queue_alike(struct refcnt_events *ev, struct rcb_event *rec,
			      u64 nr);
void refcnt_events_drop(struct refcnt_events *ev, u64 n);
bool refcnt_fold_log_add(struct refcnt_fold_log *log, u64 set, u32 counter,
			 u32 count, u32 nr);
bool refcnt_fold_log_take(struct refcnt_fold_log *log,
			  struct refcnt_fold_entry *out);
bool refcnt_events_ready(struct refcnt_events *ev);
unsigned int refcnt_events_take(struct refcnt_events *ev,
				struct rcb_event *out, unsigned int max);
void refcnt_events_trim(struct refcnt_events *ev);

#endif /* _REFCNT_CORE_H */
