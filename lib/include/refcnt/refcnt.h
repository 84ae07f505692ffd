/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * librefcnt: user-space access to the refcnt emulated Origin 2000 memory
 * reference counters (refcnt.ko, /dev/refcnt/nodeN).
 *
 * Error convention (every function, see refcnt(3)):
 *   - functions returning int return 0, or a count, on success and -1 with
 *     errno set on failure;
 *   - functions returning a pointer return NULL with errno set on failure;
 *   - the library never prints, never exits, and keeps libnuma quiet.
 * Errors of the kernel are passed through unchanged (ENOTTY from a module
 * too old for a command, EPERM, EACCES, E2BIG...).
 *
 * Functions that fill a caller's array of capacity cap return the total
 * number of items and fill min(total, cap) of them: call once with cap 0
 * to size the array.
 *
 * Thread safety: every function may be called from any thread. A struct
 * refcnt_node may be shared between threads, but refcnt_node_close() must
 * not race with other uses of the same handle.
 *
 * Compact node ids (cnodeids) number the online nodes 0..n-1 in Linux node
 * id order. Counters in a set are ordered by cnodeid, or by group of
 * RCB_NODES_PER_GROUP cnodeids above RCB_MAX_COUNTERS nodes.
 */
#ifndef REFCNT_REFCNT_H
#define REFCNT_REFCNT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The library's own copy of the module's uapi header, installed as
 * <refcnt/linux/refcnt.h>: <linux/refcnt.h> belongs to the distribution's
 * kernel headers once the module is merged.
 */
#include <refcnt/linux/refcnt.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REFCNT_VERSION_MAJOR	1
#define REFCNT_VERSION_MINOR	3

/* Directory of the node devices. */
#define REFCNT_DEV_DIR		"/dev/refcnt"

/* ------------------------------------------------------------ nodes */

/* An open node device: /dev/refcnt/nodeN. Opaque. */
struct refcnt_node;

/*
 * Linux node ids that have a refcnt device, ascending. Returns how many
 * there are; fills min(that, cap) entries of nids (which may be NULL when
 * cap is 0).
 */
int refcnt_nodes(int *nids, size_t cap);

/*
 * Open the device of Linux node nid. flags must be 0. Reads the node's
 * rcb_info and slots once; errors of open(2) (ENOENT: no such node or
 * module not loaded, EACCES) are returned as they are.
 */
struct refcnt_node *refcnt_node_open(int nid, int flags);

/* Unmap the table and close the device. NULL is ignored. */
void refcnt_node_close(struct refcnt_node *node);

/* The device's file descriptor (poll(2)/read(2) of its event records). */
int refcnt_node_fd(const struct refcnt_node *node);

/* The Linux node id and the cnodeid of the node. */
int refcnt_node_nid(const struct refcnt_node *node);
int refcnt_node_cnodeid(const struct refcnt_node *node);

/* RCB_INFO_GET now (thresholds may have changed since the open). */
int refcnt_node_info(struct refcnt_node *node, struct rcb_info *info);

/*
 * The node's slots (contiguous physical ranges), as read at open. Returns
 * how many there are; fills min(that, cap) entries.
 */
int refcnt_node_slots(struct refcnt_node *node, struct rcb_slot *slots,
		      size_t cap);

/*
 * Map the node's extended counter table read-only (set-major,
 * rcb_sw_counters_per_set 32-bit counters per set). The mapping belongs to
 * the handle: later calls return the same pointer, refcnt_node_close()
 * unmaps it. *len, when len is not NULL, gets rcb_len (bytes).
 */
const uint32_t *refcnt_node_map(struct refcnt_node *node, size_t *len);

/*
 * The set counting physical address paddr, found through the slots:
 * (size of the earlier slots + offset in its slot) / rcb_granularity.
 * Returns the set index, or -1 with errno ENOENT when no slot of this node
 * holds paddr.
 */
int64_t refcnt_node_locate(struct refcnt_node *node, uint64_t paddr);

/*
 * The rcb_sw_counters_per_set extended counters of a set in the mapped
 * table (mapping it if needed). EINVAL if set is out of range.
 */
const uint32_t *refcnt_node_set_counters(struct refcnt_node *node,
					 uint64_t set);

/*
 * RCB_SETS_READ: hardware, extended and lost counts of sets
 * [first_set, first_set + nr_sets), each array (any may be NULL) holding
 * nr_sets * rcb_sw_counters_per_set counters.
 */
int refcnt_node_read_sets(struct refcnt_node *node, uint64_t first_set,
			  uint64_t nr_sets, uint32_t *hw, uint32_t *ext,
			  uint32_t *lost);

/* RCB_SYNC: run the node's pending threshold interrupts now. */
int refcnt_node_sync(struct refcnt_node *node);

/* ------------------------------------------------------ range query */

/*
 * RCB_RANGE_QUERY: one entry per hardware page of
 * [vaddr rounded down to rcb_granularity, vaddr + len) of process pid
 * (0 or getpid(): the caller; others need CAP_SYS_PTRACE). flags:
 * RCB_RANGE_EXTENDED for the extended counters, 0 for the hardware ones;
 * RCB_RANGE_PACKED fails with EINVAL (out is struct rcb_page_counters:
 * see refcnt_range_query_packed()).
 * out holds cap entries; *nr gets the number written. When out is too
 * small, fails with E2BIG, writes nothing and sets *nr to the number
 * needed. Pages not present are reported (flags without RCB_PAGE_PRESENT,
 * cnodeid -1) and are not faulted in.
 *
 * refcnt_range_query() opens a node device for the call;
 * refcnt_node_range_query() uses an open one (the query is the same on
 * every node's device).
 */
int refcnt_range_query(pid_t pid, uint64_t vaddr, uint64_t len,
		       unsigned int flags, struct rcb_page_counters *out,
		       size_t cap, size_t *nr);
int refcnt_node_range_query(struct refcnt_node *node, pid_t pid,
			    uint64_t vaddr, uint64_t len, unsigned int flags,
			    struct rcb_page_counters *out, size_t cap,
			    size_t *nr);

/*
 * The same query with RCB_RANGE_PACKED: out holds cap struct rcb_page_set
 * entries of RCB_PAGE_SET_SIZE(rcb_sw_counters_per_set) bytes each (see
 * refcnt_node_info()), with only the counters the machine has and
 * page_shift = log2(page size), 0 when not present. flags: 0 or
 * RCB_RANGE_EXTENDED; RCB_RANGE_PACKED is implied and may be given. E2BIG
 * and *nr as for refcnt_range_query().
 */
int refcnt_range_query_packed(pid_t pid, uint64_t vaddr, uint64_t len,
			      unsigned int flags, void *out, size_t cap,
			      size_t *nr);
int refcnt_node_range_query_packed(struct refcnt_node *node, pid_t pid,
				   uint64_t vaddr, uint64_t len,
				   unsigned int flags, void *out, size_t cap,
				   size_t *nr);

/* Entry i of a packed query's buffer, for sets of counters_per_set. */
static inline struct rcb_page_set *refcnt_page_set(void *buf, size_t i,
						   unsigned int counters_per_set)
{
	return (struct rcb_page_set *)((char *)buf +
				       i * RCB_PAGE_SET_SIZE(counters_per_set));
}

/*
 * Entries a range query of [vaddr, vaddr + len) returns, in *nr: the
 * hardware pages from vaddr rounded down to rcb_granularity to vaddr + len.
 * EINVAL for an empty or wrapping range.
 */
int refcnt_range_entries(uint64_t vaddr, uint64_t len, size_t *nr);

/* ------------------------------------------------------- data range */

/*
 * refcnt_data_range() flags: which counters to add up. 0 is
 * REFCNT_DATA_TOTAL, what a PAPI user expects: every reference counted,
 * folded or not (since librefcnt 1.1; 1.0 read the hardware counters only
 * and programs linked against 1.0 keep that).
 */
#define REFCNT_DATA_EXTENDED	RCB_RANGE_EXTENDED  /* extended counters */
#define REFCNT_DATA_TOTAL	(1U << 16)	/* extended + hardware */
#define REFCNT_DATA_HARDWARE	(1U << 17)	/* hardware: cleared at every fold */

/* struct refcnt_data_range.status */
#define REFCNT_DATA_FEED_FAULT	(1U << 0)	/* page-fault feed on */
#define REFCNT_DATA_FEED_PEBS	(1U << 1)	/* PEBS/IBS feed on */
#define REFCNT_DATA_FEEDS_UNKNOWN (1U << 2)	/* feed parameters unreadable */
#define REFCNT_DATA_LOST_COUNTED (1U << 3)	/* @lost is known */

/**
 * struct refcnt_data_range - counts of a data structure, PAPI_DATA_ADDRESS
 * style: what was asked, and what was really measured.
 * @start, @end:	the range asked for, [start, end)
 * @covered_start, @covered_end: the range really measured, rounded out to
 *			hardware pages: covered_start <= start,
 *			end <= covered_end
 * @start_off:		start - covered_start
 * @end_off:		covered_end - end
 * @granularity:	bytes of a hardware page
 * @pages:		hardware pages in the covered range
 * @pages_present:	of them, mapped to memory
 * @pages_not_present:	of them, not mapped (not faulted in by the call)
 * @pages_counted:	present pages whose counters are in @totals
 * @pages_denied:	present pages the caller may not see (RCB_PAGE_DENIED)
 * @pages_uncounted:	present pages no node counts (RCB_PAGE_UNCOUNTED)
 * @nr_counters:	valid entries of @totals (rcb_sw_counters_per_set)
 * @nodes_per_counter:	cnodeids one counter counts (1, or 8 above 64 nodes)
 * @totals:		references to the counted pages, by cnodeid (or
 *			cnodeid group) of the referencing node
 * @total:		sum of @totals
 * @status:		REFCNT_DATA_*: the feeds that were on (none: only
 *			injected references can have counted), and whether
 *			@lost is known (since 1.1)
 * @reserved32:		0
 * @lost:		references to the counted pages lost to pegging (in no
 *			counter), when status has REFCNT_DATA_LOST_COUNTED:
 *			that needs the pages' physical addresses
 *			(CAP_SYS_ADMIN); else 0 (since 1.1)
 * @reserved:		0
 *
 * The caller allocates it: fields are added out of @reserved, so its size
 * never changes.
 */
struct refcnt_data_range {
	uint64_t start;
	uint64_t end;
	uint64_t covered_start;
	uint64_t covered_end;
	uint64_t start_off;
	uint64_t end_off;
	uint64_t granularity;
	uint64_t pages;
	uint64_t pages_present;
	uint64_t pages_not_present;
	uint64_t pages_counted;
	uint64_t pages_denied;
	uint64_t pages_uncounted;
	uint32_t nr_counters;
	uint32_t nodes_per_counter;
	uint64_t totals[RCB_MAX_COUNTERS];
	uint64_t total;
	uint32_t status;
	uint32_t reserved32;
	uint64_t lost;
	uint64_t reserved[6];
};

/*
 * Totals per referencing cnodeid for the data at [start, end) of process
 * pid (as refcnt_range_query()). flags: 0 or REFCNT_DATA_TOTAL (extended
 * + hardware: two queries per chunk, exact once the counters are quiet),
 * REFCNT_DATA_EXTENDED, or REFCNT_DATA_HARDWARE.
 */
int refcnt_data_range(pid_t pid, uint64_t start, uint64_t end,
		      unsigned int flags, struct refcnt_data_range *out);

/* ------------------------------------------- counting one process */

/*
 * Count the references of process pid (0: the caller; another process
 * needs CAP_SYS_PTRACE) through its own feeds instead of the whole
 * machine's (since librefcnt 1.2): RCB_COUNT_START. fault_period and
 * pebs_period as the module parameters (0: that feed off; at least one
 * on); flags 0 or RCB_COUNT_CHILDREN (its children created after the
 * start too); ranges (nr_ranges of them, up to RCB_COUNT_MAX_RANGES;
 * NULL and 0 for the whole address space) restrict counting to samples
 * whose data address lies in one of them. Returns the file descriptor
 * of the counting session (close-on-exec): counting goes on until it is
 * closed (refcnt_count_stop()), by every process that has it.
 *
 * refcnt_count_start() opens a node device for the call;
 * refcnt_node_count_start() uses an open one.
 */
int refcnt_count_start(pid_t pid, unsigned int flags,
		       unsigned int fault_period, unsigned int pebs_period,
		       const struct rcb_count_range *ranges, size_t nr_ranges);
int refcnt_node_count_start(struct refcnt_node *node, pid_t pid,
			    unsigned int flags, unsigned int fault_period,
			    unsigned int pebs_period,
			    const struct rcb_count_range *ranges,
			    size_t nr_ranges);

/* RCB_COUNT_STATS: what the session's feeds did with their samples. */
int refcnt_count_stats(int fd, struct rcb_count_stats *stats);

/* Close the session's file descriptor: counting stops (since 1.2). */
int refcnt_count_stop(int fd);

/**
 * struct refcnt_count_attr - a counting session with totals (since 1.3)
 * @pid:		process to count, 0 the caller; with RCB_COUNT_THREAD
 *			a thread, 0 the calling thread
 * @flags:		RCB_COUNT_CHILDREN, RCB_COUNT_THREAD, RCB_COUNT_DEVICES
 * @fault_period:	page-fault feed, 0 off
 * @pebs_period:	PEBS/IBS feed, 0 off (at least one feed on)
 * @data_ranges:	@nr_data_ranges data-address ranges (NULL and 0: any
 *			data address), up to RCB_COUNT_MAX_RANGES
 * @instr_ranges:	@nr_instr_ranges instruction-address ranges (NULL and
 *			0: any instruction), up to RCB_COUNT_MAX_RANGES
 * @reserved:		0
 *
 * The caller allocates it (zeroed: fields come out of @reserved).
 */
struct refcnt_count_attr {
	pid_t pid;
	unsigned int flags;
	unsigned int fault_period;
	unsigned int pebs_period;
	const struct rcb_count_range *data_ranges;
	size_t nr_data_ranges;
	const struct rcb_count_range *instr_ranges;
	size_t nr_instr_ranges;
	uint64_t reserved[4];
};

/*
 * Start a counting session (RCB_COUNT_START) that keeps totals, restricted
 * to data and instruction ranges: a sample counts when its data address
 * lies in a data range and its instruction in an instruction range (each
 * when there are any). Returns the session's file descriptor; close it
 * with refcnt_count_stop(). refcnt_node_count_open() uses an open node.
 */
int refcnt_count_open(const struct refcnt_count_attr *attr);
int refcnt_node_count_open(struct refcnt_node *node,
			   const struct refcnt_count_attr *attr);

/*
 * RCB_COUNT_READ: the session's totals, then each data range's, then each
 * instruction range's (in the order given), cap entries of totals at
 * most. Returns the entries the session has (1 + data + instruction
 * ranges).
 */
int refcnt_count_read(int fd, struct rcb_count_totals *totals, size_t cap);

/*
 * RCB_FEEDS_GET: the module's feeds and what their samples carry
 * (RCB_FEED_*). Returns how many there are; fills min(that, cap).
 */
int refcnt_feeds(struct rcb_feed_info *feeds, size_t cap);

/* ------------------------------------------------------- node facts */

/*
 * Through libnuma and /sys/devices/system/node. cnodeids are the dense
 * index of the online nodes in node-id order, as the module numbers them.
 */
int refcnt_num_cnodes(void);
int refcnt_cnode_to_nid(int cnodeid);	/* EINVAL when out of range */
int refcnt_nid_to_cnode(int nid);	/* ENOENT when nid is not online */
/*
 * CPUs of node nid, ascending. Returns how many there are (0 for a
 * CPU-less node); fills min(that, cap) entries.
 */
int refcnt_nid_cpus(int nid, int *cpus, size_t cap);
/* ACPI SLIT distance from node from to node to (10: local). */
int refcnt_nid_distance(int from, int to);

#ifdef __cplusplus
}
#endif

#endif /* REFCNT_REFCNT_H */
