/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * refcnt_hub: the layout of the hub device, the memory-side reference
 * device of refcnt's emulated machine, a part of the test rig and no part
 * of the product. Shared by its producer, the refcnt-truth QEMU plugin on
 * the host (tools/testing/truth/hub-producer.c), and its driver in the
 * guest, refcnt_hub.ko (tools/testing/kmod/refcnt_hub.c): QEMU's
 * ivshmem-plain device exposes a file both map (BAR 2).
 *
 * The region: one header, then one ring per vCPU. Each ring has a single
 * producer (its vCPU's thread in QEMU) and a single consumer (the driver),
 * so no lock is shared between vCPUs. The producer writes a record, then
 * publishes it by advancing @head (release); the consumer reads @head
 * (acquire), the records, then advances @tail. A full ring drops the
 * record and counts it in @overruns: a vCPU never waits for the guest.
 *
 * Everything here is memory the host (and a buggy or hostile producer)
 * can write at any time: the driver copies the header once, checks it,
 * and checks every index and record it reads.
 *
 * The device is also the emulated machine's PMU: the guest programs it
 * through the control block (struct refcnt_hub_control, in the header
 * page), and the producer then writes PEBS- or IBS-shaped samples into
 * the same rings, records of their own kinds. The control block and each
 * ring's @task are the only memory the guest writes and the producer
 * reads, and the producer checks them the same way.
 */
#ifndef _UAPI_LINUX_REFCNT_HUB_H
#define _UAPI_LINUX_REFCNT_HUB_H

#include <linux/types.h>

#define REFCNT_HUB_MAGIC	0x4255484e43524652ULL	/* "RFRCNHUB" */
#define REFCNT_HUB_VERSION	3
#define REFCNT_HUB_MAX_VCPUS	256
#define REFCNT_HUB_NO_NODE	0xffff
/* The header page, and where the first ring starts. */
#define REFCNT_HUB_HEADER_SIZE	4096
/* Bytes of a ring before its records. */
#define REFCNT_HUB_RING_CTRL	128

/* Where the control block is, in the header page. */
#define REFCNT_HUB_CONTROL	2048

/*
 * Header flags. REFCNT_HUB_LLC: the producer models a last-level cache,
 * so the PMU's latency mode works and data sources say hit or miss.
 */
#define REFCNT_HUB_MISSES	0x1	/* only references that miss the LLC */
#define REFCNT_HUB_LLC		0x2

/*
 * The reference stream (struct refcnt_hub_control.refs). USER: the
 * device filters out kernel-mode references, which no counting session
 * takes, so that a ring holds a program's own references for longer.
 */
#define REFCNT_HUB_REFS_OFF	0
#define REFCNT_HUB_REFS_ALL	1
#define REFCNT_HUB_REFS_USER	2

/* The emulated PMU's modes (struct refcnt_hub_control.pmu_mode). */
#define REFCNT_HUB_PMU_OFF	0
#define REFCNT_HUB_PMU_PEBS	1	/* every Nth load (store) retired */
#define REFCNT_HUB_PMU_IBS	2	/* every Nth op retired */

/*
 * Its flags (struct refcnt_hub_control.pmu_flags). LDLAT: PEBS counts
 * only the loads that miss the LLC, as a latency threshold selects
 * (needs REFCNT_HUB_LLC). STORES: PEBS samples every Nth store too.
 * EXCLUDE_KERNEL: PEBS counts user-mode events only; IBS counts all and
 * drops the kernel-mode samples, as the kernel's software filter does.
 */
#define REFCNT_HUB_PMU_LDLAT		0x1
#define REFCNT_HUB_PMU_STORES		0x2
#define REFCNT_HUB_PMU_EXCLUDE_KERNEL	0x4
/* IBS periods are multiples of this: the producer rounds down. */
#define REFCNT_HUB_PMU_IBS_UNIT	16

/* Kinds of records (struct refcnt_hub_record.kind). */
#define REFCNT_HUB_REC_REF	0	/* a reported reference */
#define REFCNT_HUB_REC_LOAD	1	/* emulated PEBS: a load */
#define REFCNT_HUB_REC_STORE	2	/* emulated PEBS: a store */
#define REFCNT_HUB_REC_OP	3	/* emulated IBS: an op */

/*
 * Record flags (struct refcnt_hub_record.flags). PHYS: the hardware gives
 * the physical address (IBS); without it @paddr is the page a handler
 * running in the task would have looked up (PEBS), given for the drain.
 */
#define REFCNT_HUB_F_USER	0x1	/* made in user mode */
#define REFCNT_HUB_F_STORE	0x2	/* the access was a store */
#define REFCNT_HUB_F_ADDR	0x4	/* @vaddr and @paddr are valid */
#define REFCNT_HUB_F_PHYS	0x8
#define REFCNT_HUB_F_MISS	0x10	/* missed the LLC model */

/*
 * The NOPs (nopl disp32(%rax,%rax,1)) the driver runs around a drain
 * pass: "RCHM" mutes its vCPU, "RCHU" unmutes it. The producer does not
 * report the references of a muted vCPU, so draining does not feed the
 * rings it drains, and it says which vCPU is muted in the vCPU's ring
 * (@muted): so the driver finds the ring of the CPU it runs on.
 */
#define REFCNT_HUB_MARK_MUTE	{ 0x0f, 0x1f, 0x84, 0x00, 'R', 'C', 'H', 'M' }
#define REFCNT_HUB_MARK_UNMUTE	{ 0x0f, 0x1f, 0x84, 0x00, 'R', 'C', 'H', 'U' }

/**
 * struct refcnt_hub_header - the first page of the region
 * @magic:		REFCNT_HUB_MAGIC
 * @version:		REFCNT_HUB_VERSION
 * @header_size:	REFCNT_HUB_HEADER_SIZE: offset of ring 0
 * @size:		bytes of the region
 * @nr_rings:		rings, one per vCPU
 * @ring_records:	records per ring, a power of two
 * @ring_stride:	bytes from a ring to the next, a multiple of 4096
 * @record_size:	sizeof(struct refcnt_hub_record)
 * @granularity:	bytes of a hardware page as the producer counts them
 *			(its truth tables); records carry whole addresses
 * @period:		references per record: every @period-th reference of
 *			a vCPU is reported, standing for @period of them
 * @flags:		REFCNT_HUB_*
 * @pmu_modes:		bit N set: the producer emulates PMU mode N
 *			(REFCNT_HUB_PMU_*)
 * @vcpu_node:		NUMA node id of each vCPU (the node its references
 *			come from), REFCNT_HUB_NO_NODE if none: the one
 *			place the driver learns the machine's CPU layout
 */
struct refcnt_hub_header {
	__u64 magic;
	__u32 version;
	__u32 header_size;
	__u64 size;
	__u32 nr_rings;
	__u32 ring_records;
	__u32 ring_stride;
	__u32 record_size;
	__u32 granularity;
	__u32 period;
	__u32 flags;
	__u32 pmu_modes;
	__u16 vcpu_node[REFCNT_HUB_MAX_VCPUS];
};

/**
 * struct refcnt_hub_control - what the guest programs, at
 *			       REFCNT_HUB_CONTROL of the header page
 * @refs:	guest: REFCNT_HUB_REFS_ALL (the default) reports every
 *		@period-th reference (REFCNT_HUB_REC_REF records),
 *		REFCNT_HUB_REFS_USER every @period-th of those made in user
 *		mode, REFCNT_HUB_REFS_OFF none
 * @pmu_mode:	guest: REFCNT_HUB_PMU_*
 * @pmu_period:	guest: events per sample
 * @pmu_flags:	guest: REFCNT_HUB_PMU_LDLAT, _STORES, _EXCLUDE_KERNEL
 * @seq:	guest: bumped after the fields above change (release): each
 *		vCPU takes the new setting at its next reference
 * @seq_applied: producer: the last @seq a vCPU took
 * @pmu_applied: producer: the period in force from @seq_applied on (IBS:
 *		rounded down to a multiple of REFCNT_HUB_PMU_IBS_UNIT),
 *		0 when the PMU is off or the setting was refused
 * @pad:	zero
 * @data_start:	guest: with @data_end not 0, the reference stream
 *		(@refs) reports only references whose data address lies
 *		in [@data_start, @data_end)
 * @data_end:	guest: 0 for any data address
 * @ip_start:	guest: with @ip_end not 0, only references made by an
 *		instruction in [@ip_start, @ip_end)
 * @ip_end:	guest: 0 for any instruction
 *
 * The four filters came after version 3's first producers without a
 * bump: zero, what the producer clears the header page to, is no
 * filter. They let a test make only the records its counting sessions
 * can take (tools/testing/truth/hub-filter.c); the PMU's samples are
 * not filtered.
 */
struct refcnt_hub_control {
	__u32 refs;
	__u32 pmu_mode;
	__u32 pmu_period;
	__u32 pmu_flags;
	__u32 seq;
	__u32 seq_applied;
	__u32 pmu_applied;
	__u32 pad;
	__u64 data_start;
	__u64 data_end;
	__u64 ip_start;
	__u64 ip_end;
};

/**
 * struct refcnt_hub_record - one reported reference, or one PMU sample
 * @paddr:	guest-physical address referenced
 * @vaddr:	guest-virtual address referenced
 * @ip:		address of the instruction that made it
 * @data_src:	samples: union perf_mem_data_src (op; level from the LLC
 *		model, local or remote DRAM from the node map); else 0
 * @weight:	references or events the record stands for: the hub's
 *		period, or the PMU's period in force
 * @kind:	REFCNT_HUB_REC_*
 * @flags:	REFCNT_HUB_F_*
 * @pid:	what the guest wrote in the ring's @task when the record was
 *		made: the task running on the vCPU, 0 if not said
 * @pad:	zero
 */
struct refcnt_hub_record {
	__u64 paddr;
	__u64 vaddr;
	__u64 ip;
	__u64 data_src;
	__u32 weight;
	__u16 kind;
	__u16 flags;
	__u32 pid;
	__u32 pad;
};

/**
 * struct refcnt_hub_ring - the control block at the start of each ring;
 *			    @ring_records records follow at
 *			    REFCNT_HUB_RING_CTRL
 * @head:	producer: records published, free-running
 * @overruns:	producer: records dropped because the ring was full
 * @references:	producer: references of the stream seen (muted ones and
 *		those @refs and the filters leave out aside), reported
 *		or not (@period)
 * @muted:	producer: 1 from the vCPU's mute mark to its unmute mark,
 *		else 0
 * @pad0:	keeps @tail on its own cache line
 * @tail:	consumer: records consumed, free-running
 * @task:	guest: the pid of the task running on the vCPU, stamped on
 *		its records; 0 when the guest does not say
 * @draining:	consumer: 1 while the driver drains the ring continuously
 *		(the feed is on, or counting sessions hold it), else 0: a
 *		producer told to wait for room (hub_wait) waits only then
 * @pad1:	to REFCNT_HUB_RING_CTRL
 */
struct refcnt_hub_ring {
	__u64 head;
	__u64 overruns;
	__u64 references;
	__u64 muted;
	__u64 pad0[4];
	__u64 tail;
	__u64 task;
	__u64 draining;
	__u64 pad1[5];
};

#endif /* _UAPI_LINUX_REFCNT_HUB_H */
