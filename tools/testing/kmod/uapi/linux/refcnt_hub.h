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

/* flags */
#define REFCNT_HUB_MISSES	0x1	/* only references that miss the LLC */

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
 * @pad:		zero
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
	__u32 pad;
	__u16 vcpu_node[REFCNT_HUB_MAX_VCPUS];
};

/* struct refcnt_hub_record.flags */
#define REFCNT_HUB_REC_STORE	0x1	/* a store; else a load */

/**
 * struct refcnt_hub_record - one reported reference
 * @paddr:	guest-physical address referenced
 * @vaddr:	guest-virtual address referenced (the pid is not known)
 * @ip:		guest-virtual address of the instruction that made it
 * @flags:	REFCNT_HUB_REC_*
 * @pad:	zero
 */
struct refcnt_hub_record {
	__u64 paddr;
	__u64 vaddr;
	__u64 ip;
	__u32 flags;
	__u32 pad;
};

/**
 * struct refcnt_hub_ring - the control block at the start of each ring;
 *			    @ring_records records follow at
 *			    REFCNT_HUB_RING_CTRL
 * @head:	producer: records published, free-running
 * @overruns:	producer: records dropped because the ring was full
 * @references:	producer: references seen (muted ones aside), reported
 *		or not
 * @muted:	producer: 1 from the vCPU's mute mark to its unmute mark,
 *		else 0
 * @pad0:	keeps @tail on its own cache line
 * @tail:	consumer: records consumed, free-running
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
	__u64 draining;
	__u64 pad1[6];
};

#endif /* _UAPI_LINUX_REFCNT_HUB_H */
