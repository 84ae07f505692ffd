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
 * @rcb_cnodeid:	compact node id of this node
 * @rcb_granularity:	bytes of a hardware page: the memory one set counts
 * @rcb_hw_counter_max:	maximum count of a hardware counter (width mask)
 * @rcb_diff_threshold:	differential (migration) threshold, 0 when off
 * @rcb_abs_threshold:	absolute threshold that raises the fold interrupt
 * @rcb_num_slots:	contiguous physical memory ranges ("slots") of the node
 * @rcb_nodeid:		Linux node id of this node (refcnt extension)
 * @rcb_num_cnodes:	online nodes, i.e. cnodeids 0..rcb_num_cnodes-1
 * @rcb_hw_counter_bits: width of a hardware counter, 11 or 19
 * @rcb_nodes_per_counter: cnodeids counted by one counter, 1 or 8
 * @rcb_flags:		reserved, 0
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
	__u64 rcb_reserved[4];
};

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

/* Fill a struct rcb_info. */
#define RCB_INFO_GET	_IOR(RCB_IOC_MAGIC, 0x01, struct rcb_info)
/*
 * refcnt(5) form: fill an array of struct rcb_slot. The kernel writes at
 * most the rcb_num_slots that RCB_INFO_GET last reported on this open file
 * (EINVAL if it never did), so an array sized from that report is safe.
 */
#define RCB_SLOT_GET	_IOR(RCB_IOC_MAGIC, 0x02, struct rcb_slot)
/* Sized form of RCB_SLOT_GET, for new code. */
#define RCB_SLOT_QUERY	_IOWR(RCB_IOC_MAGIC, 0x03, struct rcb_slot_query)

#endif /* _UAPI_LINUX_REFCNT_H */
