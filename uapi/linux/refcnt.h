/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * refcnt: emulated Origin 2000 per-page memory reference counters.
 *
 * This header is the whole ABI between refcnt.ko and user space. The names
 * follow refcnt(5). Every structure has the same layout for 32- and 64-bit
 * callers: fixed-width types, pointers carried as __u64, explicit padding.
 * Fields marked "must be zero" are checked; unknown flags give EINVAL.
 *
 * Device: /dev/refcnt/nodeN, one per Linux node N that has memory.
 */
#ifndef _UAPI_LINUX_REFCNT_H
#define _UAPI_LINUX_REFCNT_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* 'Y' is unused in Documentation/userspace-api/ioctl/ioctl-number.rst. */
#define RCB_IOC_MAGIC		'Y'

/* Maximum counters in a set (refcnt(5) SN0_REFCNT_MAX_COUNTERS). */
#define RCB_MAX_COUNTERS	64
/* Above RCB_MAX_COUNTERS nodes, one counter counts this many nodes. */
#define RCB_NODES_PER_GROUP	8

/**
 * struct rcb_info - description of one node's counter buffer
 * @rcb_len:		bytes of the extended counter buffer (the mmap length)
 * @rcb_sw_sets:	counter sets in the buffer, one per hardware page
 * @rcb_base_pages:	base (PAGE_SIZE) pages of RAM in the node's slots
 * @rcb_base_paddr:	base physical address of the node (its first slot)
 * @rcb_sw_counters_per_set: counters in a set: one per cnodeid, or one per
 *			group of RCB_NODES_PER_GROUP cnodeids above
 *			RCB_MAX_COUNTERS nodes
 * @rcb_sw_counter_size: bytes of one extended counter (4)
 * @rcb_base_page_size:	software base page size (PAGE_SIZE)
 * @rcb_cnodeid:	compact node id of this node; RCB_NO_CNODE for a node
 *			that came online after the load (memory hotplug)
 * @rcb_granularity:	bytes of a hardware page: the memory one set counts
 * @rcb_hw_counter_max:	maximum count of a hardware counter (width mask)
 * @rcb_diff_threshold:	differential (migration) threshold, 0 when off
 * @rcb_abs_threshold:	absolute threshold that raises the fold interrupt
 * @rcb_num_slots:	contiguous physical memory ranges ("slots") of the node
 * @rcb_nodeid:		Linux node id of this node (refcnt extension)
 * @rcb_num_cnodes:	nodes online at load, i.e. cnodeids 0..rcb_num_cnodes-1
 * @rcb_hw_counter_bits: width of a hardware counter, 11 or 19
 * @rcb_nodes_per_counter: cnodeids counted by one counter, 1 or 8
 * @rcb_flags:		RCB_INFO_* flags
 * @rcb_generation:	layout generation of the node: 0 for the layout made
 *			at load, one more each time memory of the node comes
 *			online or goes offline (slots, sets, rcb_len change)
 * @rcb_reserved:	reserved, 0
 */
struct rcb_info {
	__u64 rcb_len;
	__u64 rcb_sw_sets;
	__u64 rcb_base_pages;
	__u64 rcb_base_paddr;
	__u32 rcb_sw_counters_per_set;
	__u32 rcb_sw_counter_size;
	__u32 rcb_base_page_size;
	__u32 rcb_cnodeid;
	__u32 rcb_granularity;
	__u32 rcb_hw_counter_max;
	__u32 rcb_diff_threshold;
	__u32 rcb_abs_threshold;
	__u32 rcb_num_slots;
	__u32 rcb_nodeid;
	__u32 rcb_num_cnodes;
	__u32 rcb_hw_counter_bits;
	__u32 rcb_nodes_per_counter;
	__u32 rcb_flags;
	__u64 rcb_generation;
	__u64 rcb_reserved[3];
};

/*
 * rcb_flags: this open file's layout was replaced (memory of the node came
 * or went). The file, its mappings and its slots stay as they were, frozen
 * with their last counts; open the device again for the new layout.
 */
#define RCB_INFO_RETIRED	(1U << 0)

/*
 * rcb_cnodeid (and an event's home_cnodeid) of a node that was not online
 * when the module was loaded: it has no counter in the sets, which are
 * fixed at load; its memory is counted, references from its CPUs are not.
 */
#define RCB_NO_CNODE		0xffffffffU

/**
 * struct rcb_slot - one contiguous physical range of a node
 * @base:	physical address of the slot, a multiple of rcb_granularity
 * @size:	bytes, a multiple of rcb_granularity
 *
 * Slots are ascending and disjoint. The set counting physical address P in
 * slot i is (size of slots 0..i-1 + (P - base of slot i)) / rcb_granularity.
 */
struct rcb_slot {
	__u64 base;
	__u64 size;
};

/**
 * struct rcb_slot_query - argument of RCB_SLOT_QUERY
 * @slots:	user pointer to an array of struct rcb_slot
 * @num_slots:	in: entries the array holds; out: slots of the node. At most
 *		min(in, out) entries are written.
 * @flags:	must be zero
 */
struct rcb_slot_query {
	__u64 slots;
	__u32 num_slots;
	__u32 flags;
};

/**
 * struct rcb_ref - references to deliver, the unit of RCB_INJECT
 * @paddr:	physical address referenced; must lie in a slot of some node
 * @src_cnodeid: cnodeid of the node the references come from
 * @count:	number of references
 */
struct rcb_ref {
	__u64 paddr;
	__u32 src_cnodeid;
	__u32 count;
};

/* Run the threshold interrupts the batch raised before returning. */
#define RCB_INJECT_SYNC		(1U << 0)
#define RCB_INJECT_FLAGS	(RCB_INJECT_SYNC)
/* Most entries in one RCB_INJECT call. */
#define RCB_INJECT_MAX		65536

/**
 * struct rcb_inject - argument of RCB_INJECT
 * @refs:	user pointer to an array of struct rcb_ref
 * @nr_refs:	entries in @refs, 1..RCB_INJECT_MAX
 * @flags:	RCB_INJECT_*
 *
 * All entries are checked before any is delivered: one bad address or
 * cnodeid fails the call with EINVAL and nothing of the batch counts.
 */
struct rcb_inject {
	__u64 refs;
	__u32 nr_refs;
	__u32 flags;
};

/**
 * struct rcb_thresholds - argument of RCB_THRESHOLDS_SET
 * @abs_threshold:	1..rcb_hw_counter_max
 * @diff_threshold:	0 (off)..rcb_hw_counter_max
 * @flags:		must be zero
 * @pad:		must be zero
 */
struct rcb_thresholds {
	__u32 abs_threshold;
	__u32 diff_threshold;
	__u32 flags;
	__u32 pad;
};

/**
 * struct rcb_sets_fold - argument of RCB_SETS_FOLD
 * @first_set:	first set to fold
 * @nr_sets:	sets to fold; first_set + nr_sets <= rcb_sw_sets
 * @flags:	must be zero
 * @pad:	must be zero
 */
struct rcb_sets_fold {
	__u64 first_set;
	__u64 nr_sets;
	__u32 flags;
	__u32 pad;
};

/**
 * struct rcb_sets_read - argument of RCB_SETS_READ
 * @first_set:	first set to read
 * @nr_sets:	sets to read; first_set + nr_sets <= rcb_sw_sets
 * @hw:		user pointer to nr_sets * counters_per_set __u32 for the
 *		hardware counters, or 0
 * @ext:	the same for the extended counters, or 0
 * @lost:	the same for the references lost to pegging, or 0
 * @flags:	must be zero
 * @pad:	must be zero
 *
 * For every counter, references delivered = ext + hw + lost once the
 * pending threshold interrupts have run (RCB_SYNC), until a reset.
 */
struct rcb_sets_read {
	__u64 first_set;
	__u64 nr_sets;
	__u64 hw;
	__u64 ext;
	__u64 lost;
	__u32 flags;
	__u32 pad;
};

/* Event types read(2) returns, one struct rcb_event each. */
enum rcb_event_type {
	RCB_EVENT_FOLD = 1,	/* a threshold interrupt folded a set */
	RCB_EVENT_PEG = 2,	/* first references lost in a set since its fold */
	RCB_EVENT_MIGRATE = 3,	/* remote counter exceeds home by diff_threshold */
	RCB_EVENT_LOST = 4,	/* @count events were dropped: the queue was full */
	/*
	 * The node's layout changed and this file's was retired: @count is
	 * the new rcb_generation (struct rcb_event: its low 32 bits), @set
	 * the sets of the new layout (0: the node has no memory online).
	 * The last record of the file.
	 */
	RCB_EVENT_LAYOUT = 5,
};

/* @pid or @vaddr is told (see struct rcb_event). */
#define RCB_EVENT_F_CONTEXT	(1U << 0)
/*
 * MIGRATE: the queue was full when the set raised it; the record was made
 * later, once a reader made room, with the set's counts then.
 */
#define RCB_EVENT_F_LATE	(1U << 1)

/**
 * struct rcb_event - one record read(2) returns from a node device, in
 *		the file's first record format (version 0, the default)
 * @type:	enum rcb_event_type
 * @flags:	RCB_EVENT_F_*
 * @set:	set index in the node's buffer
 * @paddr:	physical address of the set's hardware page; 0 unless the
 *		file's opener had CAP_SYS_ADMIN
 * @home_cnodeid: cnodeid of the node the page belongs to
 * @src_cnodeid: first cnodeid of the counter concerned: FOLD the counter
 *		that reached the absolute threshold, PEG the pegged
 *		counter, MIGRATE the remote counter
 * @counter:	index of that counter in the set
 * @count:	FOLD: that counter's folded value; PEG: references lost;
 *		MIGRATE: the remote count; LOST: events dropped; LAYOUT: the
 *		low 32 bits of the new generation (struct rcb_event_record
 *		has all 64)
 * @home_count:	MIGRATE: the home counter's count; else 0
 * @pid:	pid of the referencing process in the pid namespace of the
 *		file's opener (0: none there), when RCB_EVENT_F_CONTEXT
 * @vaddr:	virtual address referenced, when RCB_EVENT_F_CONTEXT and
 *		the opener had CAP_SYS_ADMIN or the process is its own
 * @seq:	sequence number of the event in the node, from 0, counting
 *		dropped ones too
 * @time_ns:	CLOCK_MONOTONIC time the event was queued
 *
 * Fixed at 72 bytes for the programs built on it: a file returns these
 * until RCB_EVENT_FORMAT asks for struct rcb_event_record.
 */
struct rcb_event {
	__u32 type;
	__u32 flags;
	__u64 set;
	__u64 paddr;
	__u32 home_cnodeid;
	__u32 src_cnodeid;
	__u32 counter;
	__u32 count;
	__u32 home_count;
	__s32 pid;
	__u64 vaddr;
	__u64 seq;
	__u64 time_ns;
};

/* The version of struct rcb_event_record this header describes. */
#define RCB_EVENT_VERSION	1

/**
 * struct rcb_event_record - one record read(2) returns from a node device,
 *		in the sized format (RCB_EVENT_FORMAT version 1 and later)
 * @size:	bytes of this record: the next one starts @size bytes after
 *		this one's start. At least RCB_EVENT_RECORD_SIZE_VER1; a later
 *		module may append fields, which a reader skips
 * @version:	RCB_EVENT_VERSION of the module that made it: the fields
 *		that version defines are valid, 1 or more
 * @type:	enum rcb_event_type
 * @flags:	RCB_EVENT_F_*
 * @set:	as in struct rcb_event
 * @paddr:	as in struct rcb_event
 * @count:	as in struct rcb_event, with LAYOUT's full 64-bit generation
 * @home_count:	as in struct rcb_event
 * @home_cnodeid: as in struct rcb_event
 * @src_cnodeid: as in struct rcb_event
 * @counter:	as in struct rcb_event
 * @pid:	as in struct rcb_event
 * @vaddr:	as in struct rcb_event
 * @seq:	as in struct rcb_event
 * @time_ns:	as in struct rcb_event
 * @reserved:	written as zero
 */
struct rcb_event_record {
	__u32 size;
	__u32 version;
	__u32 type;
	__u32 flags;
	__u64 set;
	__u64 paddr;
	__u64 count;
	__u64 home_count;
	__u32 home_cnodeid;
	__u32 src_cnodeid;
	__u32 counter;
	__s32 pid;
	__u64 vaddr;
	__u64 seq;
	__u64 time_ns;
	__u64 reserved[2];
};

/* Bytes of a version 1 record: no record read(2) returns is shorter. */
#define RCB_EVENT_RECORD_SIZE_VER1	104

/**
 * struct rcb_event_format - argument of RCB_EVENT_FORMAT
 * @version:	in: 0 for struct rcb_event records (what a file returns
 *		until it asks), 1 for struct rcb_event_record records; out:
 *		the version of the records the file now returns, at least
 *		the one asked for
 * @size:	in: must be zero; out: bytes of each record it now returns
 * @reserved:	must be zero
 */
struct rcb_event_format {
	__u32 version;
	__u32 size;
	__u64 reserved;
};

/* struct rcb_page_counters.flags */
#define RCB_PAGE_PRESENT	(1ULL << 0)	/* mapped; the fields are valid */
#define RCB_PAGE_THP		(1ULL << 1)	/* part of a transparent huge page */
#define RCB_PAGE_HUGETLB	(1ULL << 2)	/* part of a hugetlbfs page */
/* present, but not the caller's to see (see RCB_RANGE_QUERY) */
#define RCB_PAGE_DENIED		(1ULL << 3)
/* present in memory that no node counts (no slot holds it) */
#define RCB_PAGE_UNCOUNTED	(1ULL << 4)

/**
 * struct rcb_page_counters - one hardware page of a virtual range
 * @refcnt:	the set's counters, by cnodeid (or cnodeid group); entries
 *		from rcb_sw_counters_per_set on are 0
 * @flags:	RCB_PAGE_*
 * @paddr:	physical address of the hardware page; 0 unless the caller
 *		has CAP_SYS_ADMIN (as /proc/pid/pagemap)
 * @page_size:	bytes of the page that maps it: PAGE_SIZE, the THP size or
 *		the hugetlb page size
 * @cnodeid:	cnodeid of the page's home node, -1 when not present or
 *		when the node came online after the load
 * @pad:	0
 *
 * The refcnt(5) sn0_refcnt_buf_t, with fixed-width fields.
 */
struct rcb_page_counters {
	__u32 refcnt[RCB_MAX_COUNTERS];
	__u64 flags;
	__u64 paddr;
	__u64 page_size;
	__s32 cnodeid;
	__u32 pad;
};

/**
 * struct rcb_page_set - one hardware page of a virtual range, packed
 * @paddr:	as in struct rcb_page_counters
 * @flags:	RCB_PAGE_*
 * @cnodeid:	as in struct rcb_page_counters
 * @page_shift:	log2 of the page_size of struct rcb_page_counters; 0 when
 *		not present
 * @pad:	0
 * @refcnt:	the set's rcb_sw_counters_per_set counters, then one 0 if
 *		their number is odd
 *
 * The entry of RCB_RANGE_PACKED: only the counters the machine has, so a
 * 4-node query writes 32 bytes per page instead of 288. Entries are
 * RCB_PAGE_SET_SIZE(rcb_sw_counters_per_set) bytes apart.
 */
struct rcb_page_set {
	__u64 paddr;
	__u32 flags;
	__s16 cnodeid;
	__u8 page_shift;
	__u8 pad;
	__u32 refcnt[];
};

/* Bytes of a struct rcb_page_set entry with @n counters (8-byte aligned). */
#define RCB_PAGE_SET_SIZE(n) \
	((sizeof(struct rcb_page_set) + 4 * (__u64)(n) + 7) & ~(__u64)7)

/* Report extended counters (PIOCGETSN0EXTREFCNTRS), else hardware ones. */
#define RCB_RANGE_EXTENDED	(1U << 0)
/* Entries are struct rcb_page_set, else struct rcb_page_counters. */
#define RCB_RANGE_PACKED	(1U << 1)
#define RCB_RANGE_FLAGS		(RCB_RANGE_EXTENDED | RCB_RANGE_PACKED)

/**
 * struct rcb_range_query - argument of RCB_RANGE_QUERY
 * @vaddr:	start of the virtual range
 * @len:	bytes of the range; vaddr + len must not wrap or leave the
 *		user address space
 * @buf:	user pointer to struct rcb_page_counters entries, or with
 *		RCB_RANGE_PACKED to RCB_PAGE_SET_SIZE()-byte struct
 *		rcb_page_set entries
 * @buf_entries: entries @buf holds; at least the number of hardware pages
 *		the range touches, else E2BIG and nothing is written
 * @pid:	process to query, 0 for the caller; another process needs
 *		CAP_SYS_PTRACE
 * @flags:	RCB_RANGE_*
 * @nr_entries:	out: entries written, one per hardware page of
 *		[vaddr rounded down to the granularity, vaddr + len); on
 *		E2BIG, the entries the range needs
 * @reserved:	must be zero
 *
 * The refcnt(5) PIOCGETSN0REFCNTRS / PIOCGETSN0EXTREFCNTRS. Pages not
 * present are reported so and not faulted in. Without CAP_SYS_ADMIN only
 * the target's private anonymous memory that no other process maps is
 * shown (not KSM pages, nor pages shared since a fork); other present
 * pages are RCB_PAGE_DENIED with zero counters, since shared pages would
 * reveal other processes' accesses.
 */
struct rcb_range_query {
	__u64 vaddr;
	__u64 len;
	__u64 buf;
	__u64 buf_entries;
	__s32 pid;
	__u32 flags;
	__u64 nr_entries;
	__u64 reserved[2];
};

/*
 * Bytes of the first struct rcb_range_query, without @reserved: the
 * module takes RCB_RANGE_QUERY with any size from this one on (see
 * RCB_RANGE_QUERY).
 */
#define RCB_RANGE_QUERY_SIZE_VER0	48

/**
 * struct rcb_count_range - a virtual address range to count, for RCB_COUNT_START
 * @start:	first byte of the range
 * @len:	bytes; not 0, and start + len must not wrap or leave the user
 *		address space
 */
struct rcb_count_range {
	__u64 start;
	__u64 len;
};

/* Count the children the process creates after the start, too. */
#define RCB_COUNT_CHILDREN	(1U << 0)
/* @pid is a thread id: count that thread alone (with its children). */
#define RCB_COUNT_THREAD	(1U << 1)
/*
 * The device feeds too (RCB_FEED_DEVICE: a memory-side device that says
 * which task made each reference, as the hub device of the QEMU guests).
 */
#define RCB_COUNT_DEVICES	(1U << 2)
#define RCB_COUNT_FLAGS		(RCB_COUNT_CHILDREN | RCB_COUNT_THREAD | \
				 RCB_COUNT_DEVICES)
/* Most data ranges, and most instruction ranges, of one counting session. */
#define RCB_COUNT_MAX_RANGES	64

/**
 * struct rcb_count - argument of RCB_COUNT_START
 * @pid:	process to count (its thread group id), 0 for the caller;
 *		with RCB_COUNT_THREAD a thread id, 0 for the calling thread;
 *		another process needs CAP_SYS_PTRACE
 * @flags:	RCB_COUNT_*
 * @fault_period: page-fault feed for the process: every Nth fault of each
 *		of its threads counts N references; 0 off
 * @pebs_period: PEBS/IBS feed for the process: one precise sample every
 *		N events (loads and stores, or IBS ops), weighted N, with the
 *		machine-wide feed's settings; 0 off. At least one feed is
 *		on: a period, or RCB_COUNT_DEVICES.
 * @ranges:	user pointer to @nr_ranges struct rcb_count_range, or 0
 * @nr_ranges:	0 (the whole address space) to RCB_COUNT_MAX_RANGES: only
 *		samples whose data address lies in one of the ranges count
 * @nr_iranges:	0 (any instruction) to RCB_COUNT_MAX_RANGES: only samples
 *		made by an instruction that lies in one of the @iranges
 *		count (it was @pad, zero)
 * @iranges:	user pointer to @nr_iranges struct rcb_count_range, or 0
 *		(it was @reserved[0], zero)
 * @reserved:	must be zero
 *
 * Returns a new file descriptor (close-on-exec), the counting session:
 * the feeds run as perf events of the process's threads (those it has
 * and those they create), and of its children with RCB_COUNT_CHILDREN,
 * until the last close of the descriptor. Independent of the machine-wide
 * fault_period: with both on, a sample counts twice. The PMU is either
 * the machine-wide pebs_period's or the sessions': EBUSY for the second.
 * A sample counts when its data address lies in a data range (or there
 * are none) and its instruction in an instruction range (or there are
 * none).
 */
struct rcb_count {
	__s32 pid;
	__u32 flags;
	__u32 fault_period;
	__u32 pebs_period;
	__u64 ranges;
	__u32 nr_ranges;
	__u32 nr_iranges;
	__u64 iranges;
	__u64 reserved[1];
};

/**
 * struct rcb_count_stats - argument of RCB_COUNT_STATS, a session's samples
 * @samples:	samples the session's feeds took
 * @delivered:	of them, reached a counter
 * @unresolved:	of them, whose page could not be found or no node counts
 * @outside:	of them, outside the session's ranges: not delivered
 * @flags:	must be zero
 * @pad:	must be zero
 * @dropped:	must be zero; out: records of its device feeds
 *		(RCB_COUNT_DEVICES) made while its threads ran that it never
 *		got, each standing for the device's period in references: the
 *		device could not make them (its buffer was full), or the
 *		thread came on a CPU more often than the session could follow
 *		before the feed drained. Not in @samples: its totals are short
 *		by up to that many records. 0 from a module before this field
 * @throttled:	must be zero; out: the times perf throttled the session's
 *		events (above kernel.perf_event_max_sample_rate): each
 *		sampled nothing for the rest of a tick, its samples lost
 *		uncounted. 0 from a module before this field
 *
 * samples = delivered + unresolved + outside once the process is quiet.
 */
struct rcb_count_stats {
	__u64 samples;
	__u64 delivered;
	__u64 unresolved;
	__u64 outside;
	__u32 flags;
	__u32 pad;
	__u64 dropped;
	__u64 throttled;
};

/**
 * struct rcb_count_totals - what a counting session counted, in references
 * @references:	references its samples stood for (each weighted by its
 *		period) that passed its ranges
 * @loads:	of them, loads, where the feed tells loads from stores
 * @stores:	of them, stores, where the feed tells loads from stores
 * @local:	of them, made from the node the page is on
 * @remote:	of them, made from another node
 * @lost:	of them, in no counter: the page was not found, no node
 *		counts it, or its counter had pegged
 * @samples:	samples that passed the ranges
 * @reserved:	written as zero
 * @nodes:	@references by accessing node: by counter, as in a set (one
 *		per cnodeid, or per group of RCB_NODES_PER_GROUP cnodeids
 *		above RCB_MAX_COUNTERS nodes); entries from
 *		rcb_sw_counters_per_set on are 0
 *
 * references = loads + stores when the feed knows every sample's kind,
 * and local + remote + lost.
 */
struct rcb_count_totals {
	__u64 references;
	__u64 loads;
	__u64 stores;
	__u64 local;
	__u64 remote;
	__u64 lost;
	__u64 samples;
	__u64 reserved;
	__u64 nodes[RCB_MAX_COUNTERS];
};

/**
 * struct rcb_count_read - argument of RCB_COUNT_READ
 * @totals:	user pointer to @nr_totals struct rcb_count_totals
 * @nr_totals:	in: entries @totals holds; out: the session's entries,
 *		1 + nr_ranges + nr_iranges. min(in, out) are written: the
 *		session's totals, then each data range's, then each
 *		instruction range's
 * @flags:	must be zero
 * @reserved:	must be zero
 *
 * A sample that passes the session's ranges adds to the session's totals,
 * to those of each data range holding its data address and to those of
 * each instruction range holding its instruction.
 */
struct rcb_count_read {
	__u64 totals;
	__u32 nr_totals;
	__u32 flags;
	__u64 reserved[2];
};

/*
 * What a feed's samples carry, and so what a counting session can filter
 * them on and count them as: their data address, the address of the
 * instruction that made the reference; LOADS: its loads are known to be
 * loads (they count in @loads), STORES: the same for stores. A feed that
 * samples loads only has LOADS; one that cannot tell has neither.
 */
#define RCB_FEED_DATA_ADDR	(1U << 0)
#define RCB_FEED_INSTR_ADDR	(1U << 1)
#define RCB_FEED_LOADS		(1U << 2)
#define RCB_FEED_STORES		(1U << 3)
/* A counting session can run it (RCB_COUNT_START). */
#define RCB_FEED_SESSION	(1U << 4)
/*
 * A device feed: it delivers by itself at a period of its own, and a
 * session runs it with RCB_COUNT_DEVICES (else through a period of
 * struct rcb_count named after it).
 */
#define RCB_FEED_DEVICE		(1U << 5)
/* struct rcb_feed_info.state */
#define RCB_FEED_PRESENT	(1U << 0)	/* the machine has it */
#define RCB_FEED_ON		(1U << 1)	/* on machine-wide (period) */

/**
 * struct rcb_feed_info - one feed, as RCB_FEEDS_GET describes it
 * @name:	"fault", "pebs", "hub"...: NUL-terminated
 * @caps:	RCB_FEED_* above (filters: DATA_ADDR, INSTR_ADDR, LOADS,
 *		STORES; SESSION, DEVICE)
 * @state:	RCB_FEED_PRESENT, RCB_FEED_ON
 * @period:	references per sample while on machine-wide, 0 when off;
 *		a device feed's is the device's, whether on or not
 * @reserved32: written as zero
 * @reserved:	written as zero
 */
struct rcb_feed_info {
	char name[16];
	__u32 caps;
	__u32 state;
	__u32 period;
	__u32 reserved32;
	__u64 reserved[2];
};

/**
 * struct rcb_feeds_query - argument of RCB_FEEDS_GET
 * @feeds:	user pointer to struct rcb_feed_info entries
 * @nr_feeds:	in: entries @feeds holds; out: the module's feeds; min(in,
 *		out) are written
 * @flags:	must be zero
 * @reserved:	must be zero
 */
struct rcb_feeds_query {
	__u64 feeds;
	__u32 nr_feeds;
	__u32 flags;
	__u64 reserved;
};

/* Fill a struct rcb_info. */
#define RCB_INFO_GET	_IOR(RCB_IOC_MAGIC, 0x01, struct rcb_info)
/*
 * refcnt(5) form: fill an array of struct rcb_slot. The kernel writes at
 * most the rcb_num_slots that RCB_INFO_GET last reported on this open file
 * (EINVAL if it never did), so an array sized from that report is safe.
 * The argument is an array whose length the caller cannot pass, so the
 * number carries the size of one entry, the record, as refcnt(5)'s
 * programs expect; RCB_SLOT_QUERY is the sized form.
 */
#define RCB_SLOT_GET	_IOR(RCB_IOC_MAGIC, 0x02, struct rcb_slot)
/* Sized form of RCB_SLOT_GET, for new code. */
#define RCB_SLOT_QUERY	_IOWR(RCB_IOC_MAGIC, 0x03, struct rcb_slot_query)
/* Read hardware, extended and lost counts of a range of sets. */
#define RCB_SETS_READ	_IOW(RCB_IOC_MAGIC, 0x04, struct rcb_sets_read)
/* Run every pending threshold interrupt of the node now. */
#define RCB_SYNC	_IO(RCB_IOC_MAGIC, 0x05)
/*
 * Counters of a virtual range of a process (on any node's device). The
 * command's size is the caller's struct rcb_range_query: from
 * RCB_RANGE_QUERY_SIZE_VER0 on, any size works; fields the caller's
 * struct lacks are taken as zero, bytes past the module's must be zero
 * (EINVAL), and the module writes back no more than the caller's size.
 */
#define RCB_RANGE_QUERY	_IOWR(RCB_IOC_MAGIC, 0x06, struct rcb_range_query)
/* The feeds and what their samples carry (on any node's device). */
#define RCB_FEEDS_GET	_IOWR(RCB_IOC_MAGIC, 0x07, struct rcb_feeds_query)
/* The format of the records read(2) returns on this open file. */
#define RCB_EVENT_FORMAT _IOWR(RCB_IOC_MAGIC, 0x08, struct rcb_event_format)

/* CAP_SYS_ADMIN only (EPERM otherwise): */
/* Deliver exact references: replay a trace into the counters. */
#define RCB_INJECT	_IOW(RCB_IOC_MAGIC, 0x10, struct rcb_inject)
/* Zero every counter of the node; pending interrupts are dropped. */
#define RCB_RESET	_IO(RCB_IOC_MAGIC, 0x11)
/* Set the node's absolute and differential thresholds. */
#define RCB_THRESHOLDS_SET _IOW(RCB_IOC_MAGIC, 0x12, struct rcb_thresholds)
/* 0x13 and 0x14 were test hooks before any release: never reused. */
/*
 * Run the threshold interrupt of a range of sets now, as if a counter of
 * each had reached the absolute threshold: e.g. a page's old frame after
 * a daemon moved it, so that the next page there is judged on its own.
 */
#define RCB_SETS_FOLD	_IOW(RCB_IOC_MAGIC, 0x18, struct rcb_sets_fold)

/*
 * Start counting one process: returns the session's file descriptor.
 * Any open file of a node device; perf_event_paranoid as perf applies it
 * (EACCES); another process needs CAP_SYS_PTRACE.
 */
#define RCB_COUNT_START	_IOW(RCB_IOC_MAGIC, 0x15, struct rcb_count)
/* On a session's file descriptor only: its statistics. */
#define RCB_COUNT_STATS	_IOWR(RCB_IOC_MAGIC, 0x16, struct rcb_count_stats)
/* On a session's file descriptor only: its totals, and each range's. */
#define RCB_COUNT_READ	_IOWR(RCB_IOC_MAGIC, 0x17, struct rcb_count_read)

#endif /* _UAPI_LINUX_REFCNT_H */
