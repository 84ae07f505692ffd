/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * refcnt_test: the test module's interface, /dev/refcnt-test.
 *
 * Test hooks, never product ABI: refcnt_test.ko is built and loaded only
 * by the test rig (tools/testing/kmod/), and nothing here is installed.
 * It drives refcnt.ko through its exported feed interface (kmod/feed.h).
 * Every ioctl needs CAP_SYS_ADMIN (EPERM otherwise); the same rules as
 * uapi/linux/refcnt.h: fixed-width fields, must-be-zero fields checked.
 */
#ifndef _UAPI_LINUX_REFCNT_TEST_H
#define _UAPI_LINUX_REFCNT_TEST_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* refcnt.h's magic: the numbers from 0x80 on are the test module's. */
#define REFCNT_TEST_IOC_MAGIC	'Y'

/* Most references one REFCNT_TEST_BENCH call delivers. */
#define REFCNT_TEST_BENCH_MAX	(1ULL << 32)

/**
 * struct refcnt_test_bench - argument of REFCNT_TEST_BENCH
 * @paddr:	first byte of the physical range to reference: a slot of a
 *		node (RCB_SLOT_QUERY), a multiple of @granularity
 * @nr_sets:	hardware pages of the range, at least 1
 * @table_sets:	sets of the node (rcb_sw_sets): the bare loop's table has
 *		@table_sets * @counters_per_set counters, as the node has
 * @nr_refs:	in: references to deliver on the calling CPU,
 *		1..REFCNT_TEST_BENCH_MAX (EINTR if the caller is killed
 *		meanwhile)
 * @entry_ns:	out: ns they took through refcnt_reference()
 * @atomic_ns:	out: ns the same number of bare atomic increments took
 *		over the table
 * @granularity: bytes of a hardware page (rcb_granularity), a power of two
 * @counters_per_set: rcb_sw_counters_per_set, 1..64
 * @flags:	must be zero
 * @pad:	must be zero
 *
 * Both loops visit the same sequence of hardware pages of the range, one
 * reference each, from the calling CPU's node (ENODEV: a node that came
 * online after refcnt.ko was loaded has no counter). The references stay
 * in the counters, like any others.
 */
struct refcnt_test_bench {
	__u64 paddr;
	__u64 nr_sets;
	__u64 table_sets;
	__u64 nr_refs;
	__u64 entry_ns;
	__u64 atomic_ns;
	__u32 granularity;
	__u32 counters_per_set;
	__u32 flags;
	__u32 pad;
};

/**
 * struct refcnt_test_sample - a synthetic precise memory sample
 * @vaddr:	data address the sample reports
 * @paddr:	physical data address, or 0 when the PMU gave none: it is
 *		then found from @vaddr in the caller's page tables
 * @src_cnodeid: cnodeid of the CPU that took the sample
 * @weight:	sampling period: references the sample stands for
 */
struct refcnt_test_sample {
	__u64 vaddr;
	__u64 paddr;
	__u32 src_cnodeid;
	__u32 weight;
};

/* Most samples in one REFCNT_TEST_SAMPLES call. */
#define REFCNT_TEST_SAMPLES_MAX	65536

/**
 * struct refcnt_test_samples - argument of REFCNT_TEST_SAMPLES
 * @samples:	user pointer to struct refcnt_test_sample entries
 * @nr_samples:	entries, 1..REFCNT_TEST_SAMPLES_MAX
 * @flags:	REFCNT_TEST_SAMPLES_*: how the PMU gave them, and how they come
 * @delivered:	out: samples that reached a counter
 * @pad:	must be zero
 *
 * Each sample goes through refcnt_pmu_sample(), the code the PEBS/IBS
 * overflow handler runs, as the test module's feed "test" (statistics in
 * /sys/kernel/refcnt/test_*), in the caller's context: the no-allocation
 * path of NMI is tested in user space (tools/testing/core). All samples
 * are checked first: a bad cnodeid anywhere is EINVAL, nothing delivered.
 * By default they are user-mode loads of every-load PEBS, exact, with
 * their data address; @flags makes them otherwise, for all of them.
 * With REFCNT_TEST_SAMPLES_NMI each comes in an NMI the CPU sends
 * itself, as a PMU overflow comes (x86; elsewhere EOPNOTSUPP;
 * ETIMEDOUT if no NMI came), and with REFCNT_TEST_SAMPLES_IRQS_OFF too
 * (at most REFCNT_TEST_SAMPLES_IRQS_OFF_MAX samples) all under
 * local_irq_save(): every NMI before any interrupt, the irq_work they
 * raise after the last.
 */
struct refcnt_test_samples {
	__u64 samples;
	__u32 nr_samples;
	__u32 flags;
	__u32 delivered;
	__u32 pad;
};

/* IBS ops (REFCNT_PMU_OPS' stream), not PEBS loads. */
#define REFCNT_TEST_SAMPLES_OPS		(1U << 0)
/*
 * Registers without PERF_EFLAGS_EXACT: IBS's invalid RIP, PEBS at 1
 * (x86; elsewhere EOPNOTSUPP: no such flag).
 */
#define REFCNT_TEST_SAMPLES_INEXACT	(1U << 1)
/* The registers' mode is the kernel's (the NMI's CS, for an inexact op). */
#define REFCNT_TEST_SAMPLES_KERNEL	(1U << 2)
/*
 * vaddr goes into perf_sample_data.addr without PERF_SAMPLE_ADDR (a PMU
 * that gave no data address, over a stale stack), and each sample's
 * vaddr comes back as refcnt_pmu_sample_describe() reads it.
 */
#define REFCNT_TEST_SAMPLES_STALE_ADDR	(1U << 3)
/* Each from an NMI the CPU sends itself. */
#define REFCNT_TEST_SAMPLES_NMI		(1U << 4)
/* With NMI: no interrupt between them. */
#define REFCNT_TEST_SAMPLES_IRQS_OFF	(1U << 5)
#define REFCNT_TEST_SAMPLES_FLAGS	0x3fU
#define REFCNT_TEST_SAMPLES_IRQS_OFF_MAX	256

/* struct refcnt_test_record.flags */
#define REFCNT_TEST_REC_LOAD	(1U << 0)	/* a load */
#define REFCNT_TEST_REC_STORE	(1U << 1)	/* a store; neither: not told */
#define REFCNT_TEST_REC_FLAGS	(REFCNT_TEST_REC_LOAD | REFCNT_TEST_REC_STORE)

/**
 * struct refcnt_test_record - a synthetic record of the device feed "test"
 * @vaddr:	data address referenced, in the caller's address space
 * @ip:		address of the instruction that made it
 * @src_cnodeid: cnodeid it came from
 * @weight:	references it stands for, at least 1
 * @flags:	REFCNT_TEST_REC_*
 * @pad:	must be zero
 */
struct refcnt_test_record {
	__u64 vaddr;
	__u64 ip;
	__u32 src_cnodeid;
	__u32 weight;
	__u32 flags;
	__u32 pad;
};

/* Deliver them to the counters machine-wide too, not only to sessions. */
#define REFCNT_TEST_RECORDS_MACHINE	(1U << 0)
/* The device could not make them: counted by its lost(), none delivered. */
#define REFCNT_TEST_RECORDS_LOST	(1U << 1)

/**
 * struct refcnt_test_records - argument of REFCNT_TEST_RECORDS
 * @records:	user pointer to struct refcnt_test_record entries
 * @nr_records:	entries, 1..REFCNT_TEST_SAMPLES_MAX
 * @flags:	0, REFCNT_TEST_RECORDS_MACHINE or REFCNT_TEST_RECORDS_LOST
 * @counted:	out: records whose page was found (in the caller's page
 *		tables, without faulting it in)
 * @pad:	must be zero
 *
 * Each record goes through refcnt_feed_record() as one of the test
 * module's device feed "test", made by the calling thread on the CPU it
 * runs on: a counting session counting that thread with
 * RCB_COUNT_DEVICES gets it, through the same spans as the hub's records,
 * so that sessions' data and instruction ranges and their totals are
 * tested exactly, with records of any kind. Checked whole first: a bad
 * cnodeid, weight or flag anywhere is EINVAL, nothing delivered.
 */
struct refcnt_test_records {
	__u64 records;
	__u32 nr_records;
	__u32 flags;
	__u32 counted;
	__u32 pad;
};

/**
 * struct refcnt_test_generation - argument of REFCNT_TEST_GENERATION
 * @fd:		an open file of a node device (/dev/refcnt/nodeN)
 * @pad:	must be zero
 * @generation:	the rcb_generation the file's layout is to have
 *
 * Four billion memory hotplug events would take years: this gives a
 * layout a generation past 2^32 at once, so that the next hotplug of its
 * node tells the one after (RCB_EVENT_LAYOUT) in full. Only that layout
 * changes: the node's next one is numbered as if nothing happened.
 */
struct refcnt_test_generation {
	__s32 fd;
	__u32 pad;
	__u64 generation;
};

/* Time refcnt_reference() against bare atomic increments. */
#define REFCNT_TEST_BENCH	_IOWR(REFCNT_TEST_IOC_MAGIC, 0x80, \
				      struct refcnt_test_bench)
/* Deliver synthetic PEBS/IBS samples through the overflow handler's code. */
#define REFCNT_TEST_SAMPLES	_IOWR(REFCNT_TEST_IOC_MAGIC, 0x81, \
				      struct refcnt_test_samples)
/* Deliver synthetic device records of the calling thread, for sessions. */
#define REFCNT_TEST_RECORDS	_IOWR(REFCNT_TEST_IOC_MAGIC, 0x82, \
				      struct refcnt_test_records)
/* Set the layout generation of an open node device file's layout. */
#define REFCNT_TEST_GENERATION	_IOW(REFCNT_TEST_IOC_MAGIC, 0x83, \
				     struct refcnt_test_generation)

#endif /* _UAPI_LINUX_REFCNT_TEST_H */
