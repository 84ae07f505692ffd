// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt_test: the test module, hooks the tests and benchmarks need that
 * are no part of refcnt.ko (uapi/linux/refcnt_test.h, /dev/refcnt-test).
 *
 * It drives refcnt.ko through its exported feed interface (kmod/feed.h)
 * only: REFCNT_TEST_BENCH times refcnt_reference() against bare atomic
 * increments; REFCNT_TEST_SAMPLES runs synthetic precise memory samples
 * through refcnt_pmu_sample(), the code of the PEBS/IBS overflow handler,
 * as its own feed "test", so that machines without a PMU test that code
 * (and its parameter pmu_probes counts refcnt.ko's core-PMU probes
 * through a kprobe),
 * with REFCNT_TEST_SAMPLES_NMI from a real NMI the CPU sends itself, as
 * a PMU overflow arrives;
 * REFCNT_TEST_RECORDS makes the feed a device feed's records of the
 * calling thread, for counting sessions' ranges and totals;
 * REFCNT_TEST_GENERATION sets a layout's generation past 2^32, which
 * reaches into refcnt.ko's structures (refcnt.h): no interface of its
 * own should exist for that.
 * Built and loaded by the test rig only (Documentation/testing.rst).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/kprobes.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/major.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <uapi/linux/refcnt.h>
#include <uapi/linux/refcnt_test.h>
#ifdef CONFIG_X86_LOCAL_APIC
#include <asm/apic.h>
#include <asm/nmi.h>
#endif

#include "compat.h"
#include "feed.h"
#include "refcnt.h"

/* An odd stride spreads the references over the range's pages. */
#define REFCNT_TEST_STRIDE	4099
#define REFCNT_TEST_CHUNK	65536

/* Each CPU's stream of synthetic records: its length is the position. */
static DEFINE_PER_CPU(u64, refcnt_test_pos);
/* The records each CPU "could not make" (REFCNT_TEST_RECORDS_LOST). */
static DEFINE_PER_CPU(u64, refcnt_test_nr_lost);

static u64 refcnt_test_position(struct refcnt_feed *feed, unsigned int cpu)
{
	return READ_ONCE(*per_cpu_ptr(&refcnt_test_pos, cpu));
}

static u64 refcnt_test_lost(struct refcnt_feed *feed, unsigned int cpu)
{
	return READ_ONCE(*per_cpu_ptr(&refcnt_test_nr_lost, cpu));
}

static int refcnt_test_hold(struct refcnt_feed *feed, bool on)
{
	return 0;
}

/* Records are delivered as they are made: nothing is pending. */
static void refcnt_test_sync(struct refcnt_feed *feed)
{
}

static u32 refcnt_test_period(struct refcnt_feed *feed, bool *on)
{
	*on = false;
	return 1;
}

static const struct refcnt_device_ops refcnt_test_ops = {
	.position = refcnt_test_position,
	.lost = refcnt_test_lost,
	.hold = refcnt_test_hold,
	.sync = refcnt_test_sync,
	.period = refcnt_test_period,
};

/*
 * The feed the synthetic samples and records come from: statistics
 * test_*; a device feed whose records tell everything.
 */
static struct refcnt_feed refcnt_test_feed = {
	.name = "test",
	.device = &refcnt_test_ops,
	.owner = THIS_MODULE,
	.caps = RCB_FEED_DATA_ADDR | RCB_FEED_INSTR_ADDR | RCB_FEED_LOADS |
		RCB_FEED_STORES,
	.precise = true,
};

/*
 * The set after @idx of @nr_sets; between chunks of the loops, let others
 * run, and let a killed caller go (then @i is past the end).
 */
static u64 refcnt_test_next(u64 idx, u64 nr_sets, u64 *i)
{
	idx += REFCNT_TEST_STRIDE;
	if (idx >= nr_sets)
		idx %= nr_sets;
	if (!(++*i % REFCNT_TEST_CHUNK)) {
		cond_resched();
		if (fatal_signal_pending(current))
			*i = U64_MAX;
	}
	return idx;
}

static u64 refcnt_test_entry(const struct refcnt_test_bench *b,
			     unsigned int src, u64 nr)
{
	unsigned int shift = ilog2(b->granularity);
	u64 idx = 0, i = 0, t0 = ktime_get_ns();

	while (i < nr) {
		refcnt_reference(b->paddr + (idx << shift), src, 1, NULL);
		idx = refcnt_test_next(idx, b->nr_sets, &i);
	}
	return ktime_get_ns() - t0;
}

/* One counter per set, as the entry point touches: the source's own. */
static u64 refcnt_test_atomic(const struct refcnt_test_bench *b,
			      atomic_t *table, unsigned int src, u64 nr)
{
	unsigned int cps = b->counters_per_set, counter = src % cps;
	u64 idx = 0, i = 0, t0 = ktime_get_ns();

	while (i < nr) {
		atomic_inc(&table[idx * cps + counter]);
		idx = refcnt_test_next(idx, b->nr_sets, &i);
	}
	return ktime_get_ns() - t0;
}

static int refcnt_test_bench_check(const struct refcnt_test_bench *b)
{
	if (b->flags || b->pad || !b->nr_refs ||
	    b->nr_refs > REFCNT_TEST_BENCH_MAX || !b->nr_sets ||
	    b->table_sets < b->nr_sets || !is_power_of_2(b->granularity) ||
	    !b->counters_per_set || b->counters_per_set > RCB_MAX_COUNTERS ||
	    b->paddr % b->granularity)
		return -EINVAL;
	return 0;
}

/* REFCNT_TEST_BENCH: both loops, warmed first, on the calling CPU. */
static long refcnt_test_bench(void __user *argp)
{
	unsigned int src = refcnt_this_cnode();
	struct refcnt_test_bench b;
	atomic_t *table;
	size_t bytes;
	int err;

	if (copy_from_user(&b, argp, sizeof(b)))
		return -EFAULT;
	err = refcnt_test_bench_check(&b);
	if (err)
		return err;
	if (src >= refcnt_nr_cnodes())
		return -ENODEV;
	if (check_mul_overflow((size_t)b.table_sets,
			       b.counters_per_set * sizeof(atomic_t), &bytes))
		return -ENOMEM;
	table = kvzalloc(bytes, GFP_KERNEL);
	if (!table)
		return -ENOMEM;
	/* Warm both: counter pages exist, the bare table is faulted in. */
	refcnt_test_entry(&b, src, min(b.nr_refs, b.nr_sets));
	refcnt_test_atomic(&b, table, src, min(b.nr_refs, b.nr_sets));
	b.entry_ns = refcnt_test_entry(&b, src, b.nr_refs);
	b.atomic_ns = refcnt_test_atomic(&b, table, src, b.nr_refs);
	kvfree(table);
	if (fatal_signal_pending(current))
		return -EINTR;
	return copy_to_user(argp, &b, sizeof(b)) ? -EFAULT : 0;
}

/*
 * One synthetic sample, as the PMU's overflow handler would hand it: by
 * default a user-mode load of every-load PEBS, exact, its data address
 * given; @flags (REFCNT_TEST_SAMPLES_*) says otherwise. With
 * REFCNT_TEST_SAMPLES_STALE_ADDR, @s->vaddr is set to the data address
 * a session would filter the sample on.
 */
static bool refcnt_test_sample(struct refcnt_test_sample *s, u32 flags)
{
	const struct refcnt_pmu_stream *st =
		refcnt_pmu_stream(flags & REFCNT_TEST_SAMPLES_OPS ?
				  REFCNT_PMU_OPS : REFCNT_PMU_LOADS);
	struct perf_sample_data data;
	struct refcnt_sample x;
	struct pt_regs regs;
	bool counted;

	perf_sample_data_init(&data, 0, s->weight);
	data.addr = s->vaddr;
	if (!(flags & REFCNT_TEST_SAMPLES_STALE_ADDR))
		data.sample_flags |= PERF_SAMPLE_ADDR;
	if (s->paddr) {
		data.phys_addr = s->paddr;
		data.sample_flags |= PERF_SAMPLE_PHYS_ADDR;
	}
	refcnt_pmu_regs(&regs, 0, !(flags & REFCNT_TEST_SAMPLES_KERNEL));
#ifdef PERF_EFLAGS_EXACT
	if (flags & REFCNT_TEST_SAMPLES_INEXACT)
		regs.flags &= ~PERF_EFLAGS_EXACT;
#endif
	if (flags & REFCNT_TEST_SAMPLES_STALE_ADDR) {
		refcnt_pmu_sample_describe(st, &data, &regs, &x);
		s->vaddr = x.vaddr;
	}
	counted = refcnt_feed_pmu_sample(&refcnt_test_feed, st, &data, &regs,
					 s->src_cnodeid, s->weight) ==
		  REFCNT_SAMPLE_COUNTED;
	return counted;
}

#ifdef CONFIG_X86_LOCAL_APIC
/* The sample this CPU's next NMI delivers, NULL once it did; its flags. */
static DEFINE_PER_CPU(struct refcnt_test_sample *, refcnt_test_nmi_sample);
static DEFINE_PER_CPU(u32, refcnt_test_nmi_flags);
static DEFINE_PER_CPU(bool, refcnt_test_nmi_counted);

/*
 * NMI_LOCAL: every local NMI comes here; ours are those with a sample
 * waiting on this CPU (as nmi_selftest.c tells its own).
 */
static int refcnt_test_nmi(unsigned int type, struct pt_regs *regs)
{
	struct refcnt_test_sample *s;

	s = this_cpu_read(refcnt_test_nmi_sample);
	if (!s)
		return NMI_DONE;
	this_cpu_write(refcnt_test_nmi_counted,
		       refcnt_test_sample(s, this_cpu_read(refcnt_test_nmi_flags)));
	/* The result before the sign that the waiter may read it. */
	barrier();
	this_cpu_write(refcnt_test_nmi_sample, NULL);
	return NMI_HANDLED;
}

/**
 * refcnt_test_sample_nmi() - deliver a sample from an NMI of this CPU
 * @s:		the sample
 * @flags:	REFCNT_TEST_SAMPLES_*
 * @counted:	set to whether it reached a counter
 *
 * An NMI IPI to this CPU's own mask (the self shorthand may not carry an
 * NMI), with interrupts on: the irq_work the NMI raises runs before the
 * next sample, as on a CPU whose samples come slower than its
 * interrupts. Preemption off, so the NMI is this CPU's.
 *
 * Return: 0, or -ETIMEDOUT when no NMI came within a second.
 */
static int refcnt_test_sample_nmi(struct refcnt_test_sample *s, u32 flags,
				  bool *counted)
{
	u64 end = ktime_get_ns() + NSEC_PER_SEC;
	int cpu = get_cpu(), err = 0;

	this_cpu_write(refcnt_test_nmi_counted, false);
	this_cpu_write(refcnt_test_nmi_flags, flags);
	this_cpu_write(refcnt_test_nmi_sample, s);
	apic->send_IPI_mask(cpumask_of(cpu), NMI_VECTOR);
	while (READ_ONCE(*this_cpu_ptr(&refcnt_test_nmi_sample))) {
		if (ktime_get_ns() > end) {
			this_cpu_write(refcnt_test_nmi_sample, NULL);
			err = -ETIMEDOUT;
			break;
		}
		cpu_relax();
	}
	*counted = this_cpu_read(refcnt_test_nmi_counted);
	put_cpu();
	return err;
}

static int refcnt_test_nmi_init(void)
{
	return register_nmi_handler(NMI_LOCAL, refcnt_test_nmi, 0,
				    "refcnt_test");
}

static void refcnt_test_nmi_exit(void)
{
	unregister_nmi_handler(NMI_LOCAL, "refcnt_test");
}
#else
static int refcnt_test_sample_nmi(struct refcnt_test_sample *s, u32 flags,
				  bool *counted)
{
	return -EOPNOTSUPP;
}

static int refcnt_test_nmi_init(void)
{
	return 0;
}

static void refcnt_test_nmi_exit(void)
{
}
#endif

/*
 * Deliver the samples, in the caller's context or each from an NMI;
 * with REFCNT_TEST_SAMPLES_IRQS_OFF all NMIs come before any interrupt.
 */
static int refcnt_test_deliver(struct refcnt_test_sample *s, u32 nr,
			       u32 flags, u32 *delivered)
{
	bool irqs_off = flags & REFCNT_TEST_SAMPLES_IRQS_OFF, counted;
	unsigned long irqflags = 0;
	int err = 0;
	u32 i;

	*delivered = 0;
	if (irqs_off)
		local_irq_save(irqflags);
	for (i = 0; i < nr && !err; i++) {
		if (!(flags & REFCNT_TEST_SAMPLES_NMI)) {
			*delivered += refcnt_test_sample(&s[i], flags);
			continue;
		}
		err = refcnt_test_sample_nmi(&s[i], flags, &counted);
		*delivered += counted && !err;
		if (!irqs_off)
			cond_resched();
	}
	if (irqs_off)
		local_irq_restore(irqflags);
	return err;
}

/* REFCNT_TEST_SAMPLES: checked whole first, like RCB_INJECT. */
static long refcnt_test_samples(void __user *argp)
{
	struct refcnt_test_samples f;
	struct refcnt_test_sample *s;
	long err = -EFAULT;
	u32 i;

	if (copy_from_user(&f, argp, sizeof(f)))
		return -EFAULT;
	if ((f.flags & ~REFCNT_TEST_SAMPLES_FLAGS) || f.pad || !f.nr_samples ||
	    f.nr_samples > REFCNT_TEST_SAMPLES_MAX)
		return -EINVAL;
	/* Interrupts off for a bounded time, and only around NMIs. */
	if (f.flags & REFCNT_TEST_SAMPLES_IRQS_OFF &&
	    (!(f.flags & REFCNT_TEST_SAMPLES_NMI) ||
	     f.nr_samples > REFCNT_TEST_SAMPLES_IRQS_OFF_MAX))
		return -EINVAL;
#ifndef PERF_EFLAGS_EXACT
	/* Only x86's registers say whether they are the sample's. */
	if (f.flags & REFCNT_TEST_SAMPLES_INEXACT)
		return -EOPNOTSUPP;
#endif
	s = kvmalloc_array(f.nr_samples, sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	if (copy_from_user(s, u64_to_user_ptr(f.samples),
			   array_size(f.nr_samples, sizeof(*s))))
		goto out;
	err = -EINVAL;
	for (i = 0; i < f.nr_samples; i++)
		if (s[i].src_cnodeid >= refcnt_nr_cnodes())
			goto out;
	err = refcnt_test_deliver(s, f.nr_samples, f.flags, &f.delivered);
	if (!err && (f.flags & REFCNT_TEST_SAMPLES_STALE_ADDR) &&
	    copy_to_user(u64_to_user_ptr(f.samples), s,
			 array_size(f.nr_samples, sizeof(*s))))
		err = -EFAULT;
	if (!err && copy_to_user(argp, &f, sizeof(f)))
		err = -EFAULT;
out:
	kvfree(s);
	return err;
}

/*
 * One synthetic record, made now by this thread on this CPU: the next
 * position of the CPU's stream, interrupts off so that the thread's span
 * there cannot open or close meanwhile. Its page is the caller's.
 */
static bool refcnt_test_record(const struct refcnt_test_record *t,
			       bool machine)
{
	struct refcnt_record r = {
		.s = {
			.vaddr = t->vaddr, .ip = t->ip, .weight = t->weight,
			.src_cnode = t->src_cnodeid,
			.kind = t->flags & REFCNT_TEST_REC_LOAD ?
				REFCNT_SAMPLE_LOAD :
				t->flags & REFCNT_TEST_REC_STORE ?
				REFCNT_SAMPLE_STORE : 0,
		},
	};
	struct page *page;
	unsigned long flags;
	bool found;

	found = get_user_pages_fast(t->vaddr & PAGE_MASK, 1, 0, &page) == 1;
	if (found) {
		r.paddr = PFN_PHYS(page_to_pfn(page)) + (t->vaddr & ~PAGE_MASK);
		put_page(page);
	}
	local_irq_save(flags);
	r.cpu = smp_processor_id();
	r.pos = __this_cpu_inc_return(refcnt_test_pos) - 1;
	refcnt_feed_record(&refcnt_test_feed, &r, machine);
	local_irq_restore(flags);
	return found;
}

/* REFCNT_TEST_RECORDS: checked whole first. */
static long refcnt_test_records(void __user *argp)
{
	struct refcnt_test_records f;
	struct refcnt_test_record *t;
	long err = -EFAULT;
	u32 i;

	if (copy_from_user(&f, argp, sizeof(f)))
		return -EFAULT;
	if (f.flags & ~(REFCNT_TEST_RECORDS_MACHINE | REFCNT_TEST_RECORDS_LOST) ||
	    f.pad ||
	    !f.nr_records || f.nr_records > REFCNT_TEST_SAMPLES_MAX)
		return -EINVAL;
	t = kvmalloc_array(f.nr_records, sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	if (copy_from_user(t, u64_to_user_ptr(f.records),
			   array_size(f.nr_records, sizeof(*t))))
		goto out;
	err = -EINVAL;
	for (i = 0; i < f.nr_records; i++)
		if (t[i].src_cnodeid >= refcnt_nr_cnodes() || !t[i].weight ||
		    t[i].flags & ~REFCNT_TEST_REC_FLAGS || t[i].pad)
			goto out;
	f.counted = 0;
	if (f.flags & REFCNT_TEST_RECORDS_LOST) {
		/* As a device whose buffer is full: none is made. */
		this_cpu_add(refcnt_test_nr_lost, f.nr_records);
		err = copy_to_user(argp, &f, sizeof(f)) ? -EFAULT : 0;
		goto out;
	}
	for (i = 0; i < f.nr_records; i++)
		f.counted += refcnt_test_record(&t[i], f.flags &
						REFCNT_TEST_RECORDS_MACHINE);
	err = copy_to_user(argp, &f, sizeof(f)) ? -EFAULT : 0;
out:
	kvfree(t);
	return err;
}

/* A node device's file: a misc device of refcnt.ko (sessions are not). */
static bool refcnt_test_node_file(struct file *file)
{
	struct inode *inode = file_inode(file);

	return S_ISCHR(inode->i_mode) && imajor(inode) == MISC_MAJOR &&
	       file->f_op->owner &&
	       !strcmp(module_name(file->f_op->owner), "refcnt");
}

/* REFCNT_TEST_GENERATION */
static long refcnt_test_generation(void __user *argp)
{
	struct refcnt_test_generation g;
	struct refcnt_file *rf;
	struct file *file;
	long err = -EINVAL;

	if (copy_from_user(&g, argp, sizeof(g)))
		return -EFAULT;
	if (g.pad)
		return -EINVAL;
	file = fget(g.fd);
	if (!file)
		return -EBADF;
	if (refcnt_test_node_file(file)) {
		rf = file->private_data;
		WRITE_ONCE(rf->node->generation, g.generation);
		err = 0;
	}
	fput(file);
	return err;
}

static long refcnt_test_ioctl(struct file *file, unsigned int cmd,
			      unsigned long arg)
{
	void __user *argp = (void __user *)arg;

	if (cmd != REFCNT_TEST_BENCH && cmd != REFCNT_TEST_SAMPLES &&
	    cmd != REFCNT_TEST_RECORDS && cmd != REFCNT_TEST_GENERATION)
		return -ENOTTY;
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	switch (cmd) {
	case REFCNT_TEST_BENCH:
		return refcnt_test_bench(argp);
	case REFCNT_TEST_SAMPLES:
		return refcnt_test_samples(argp);
	case REFCNT_TEST_GENERATION:
		return refcnt_test_generation(argp);
	default:
		return refcnt_test_records(argp);
	}
}

static const struct file_operations refcnt_test_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = refcnt_test_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice refcnt_test_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "refcnt-test",
	.fops = &refcnt_test_fops,
	.mode = 0600,
};

/*
 * pmu_probes: the perf events refcnt.ko has made to learn which core PMU
 * serves a CPU (pmu_x86.c), for the test that starting the PMU feed
 * makes none; read-only. Counted by a kprobe on the kernel's
 * perf_event_create_kernel_counter(), so that refcnt.ko keeps no count
 * for the tests: a probe is a disabled cycles event with no overflow
 * handler, which no feed makes.
 */
static atomic64_t refcnt_test_nr_probes = ATOMIC64_INIT(0);

#ifdef CONFIG_KPROBES
static int refcnt_test_probe_seen(struct kprobe *kp, struct pt_regs *regs)
{
	const struct perf_event_attr *attr =
		(void *)regs_get_kernel_argument(regs, 0);

	if (!regs_get_kernel_argument(regs, 3) &&
	    attr->type == PERF_TYPE_HARDWARE &&
	    attr->config == PERF_COUNT_HW_CPU_CYCLES && attr->disabled)
		atomic64_inc(&refcnt_test_nr_probes);
	return 0;
}

static struct kprobe refcnt_test_probe_kp = {
	.symbol_name = "perf_event_create_kernel_counter",
	.pre_handler = refcnt_test_probe_seen,
};

static bool refcnt_test_probe_counting;

static void refcnt_test_probes_init(void)
{
	int err = register_kprobe(&refcnt_test_probe_kp);

	if (err)
		pr_info("no kprobe on perf_event_create_kernel_counter (%d): pmu_probes unreadable\n",
			err);
	refcnt_test_probe_counting = !err;
}

static void refcnt_test_probes_exit(void)
{
	if (refcnt_test_probe_counting)
		unregister_kprobe(&refcnt_test_probe_kp);
}
#else
static const bool refcnt_test_probe_counting;
static void refcnt_test_probes_init(void) { }
static void refcnt_test_probes_exit(void) { }
#endif

static int refcnt_test_probes_get(char *buf, const struct kernel_param *kp)
{
	if (!refcnt_test_probe_counting)
		return -EOPNOTSUPP;
	return sysfs_emit(buf, "%lld\n", atomic64_read(&refcnt_test_nr_probes));
}

static const struct kernel_param_ops refcnt_test_probes_ops = {
	.get = refcnt_test_probes_get,
};

module_param_cb(pmu_probes, &refcnt_test_probes_ops, NULL, 0444);
MODULE_PARM_DESC(pmu_probes, "perf events refcnt.ko made to find a CPU's core PMU");

static int __init refcnt_test_init(void)
{
	int err;

	err = refcnt_feed_register(&refcnt_test_feed);
	if (err)
		return err;
	err = refcnt_test_nmi_init();
	if (err)
		goto feed;
	err = misc_register(&refcnt_test_dev);
	if (!err) {
		refcnt_test_probes_init();
		return 0;
	}
	refcnt_test_nmi_exit();
feed:
	refcnt_feed_unregister(&refcnt_test_feed);
	return err;
}

static void __exit refcnt_test_exit(void)
{
	refcnt_test_probes_exit();
	misc_deregister(&refcnt_test_dev);
	refcnt_test_nmi_exit();
	refcnt_feed_unregister(&refcnt_test_feed);
}

module_init(refcnt_test_init);
module_exit(refcnt_test_exit);

MODULE_DESCRIPTION("refcnt test hooks: reference-path benchmark, synthetic PMU samples");
MODULE_AUTHOR("refcnt developers");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(REFCNT_NS);
