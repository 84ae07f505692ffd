// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the ioctls of /dev/refcnt/nodeN (uapi/linux/refcnt.h).
 *
 * Rules (Documentation/process/botching-up-ioctls.rst): exact command
 * numbers (a wrong size is ENOTTY), flags and padding must be zero, bad
 * pointers EFAULT, bad values EINVAL, nothing in dmesg.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/perf_event.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <uapi/linux/refcnt.h>

#include "refcnt.h"

/* Sets per RCB_SETS_READ round: bounds the kernel buffers. */
#define REFCNT_READ_WORDS	4096

static long refcnt_info_get(struct refcnt_file *rf, void __user *argp)
{
	struct rcb_info info;

	refcnt_node_info(rf->node, &info);
	if (copy_to_user(argp, &info, sizeof(info)))
		return -EFAULT;
	WRITE_ONCE(rf->reported_slots, info.rcb_num_slots);
	return 0;
}

static int refcnt_copy_slots(const struct refcnt_node *node,
			     struct rcb_slot __user *uslots, unsigned int count)
{
	unsigned int i;

	for (i = 0; i < count; i++) {
		struct rcb_slot slot = {
			.base = node->slots[i].base,
			.size = node->slots[i].size,
		};

		if (copy_to_user(&uslots[i], &slot, sizeof(slot)))
			return -EFAULT;
	}
	return 0;
}

static long refcnt_slot_get(struct refcnt_file *rf, void __user *argp)
{
	int reported = READ_ONCE(rf->reported_slots);

	if (reported < 0)
		return -EINVAL;
	return refcnt_copy_slots(rf->node, argp,
				 min_t(unsigned int, reported,
				       rf->node->nr_slots));
}

static long refcnt_slot_query(struct refcnt_file *rf, void __user *argp)
{
	struct rcb_slot_query q;
	int err;

	if (copy_from_user(&q, argp, sizeof(q)))
		return -EFAULT;
	if (q.flags)
		return -EINVAL;
	err = refcnt_copy_slots(rf->node, u64_to_user_ptr(q.slots),
				min(q.num_slots, rf->node->nr_slots));
	if (err)
		return err;
	q.num_slots = rf->node->nr_slots;
	if (copy_to_user(argp, &q, sizeof(q)))
		return -EFAULT;
	return 0;
}

static int refcnt_put_words(u64 uptr, u64 offset, const u32 *words, u64 n)
{
	if (!uptr)
		return 0;
	if (copy_to_user(u64_to_user_ptr(uptr + offset * sizeof(u32)), words,
			 n * sizeof(u32)))
		return -EFAULT;
	return 0;
}

static long refcnt_sets_read(struct refcnt_file *rf, void __user *argp)
{
	unsigned int cps = refcnt_topo.counters_per_set;
	struct refcnt_node *node = rf->node;
	u64 per_round = max(REFCNT_READ_WORDS / cps, 1U), done = 0, end;
	struct rcb_sets_read r;
	u32 *buf;
	long err = 0;

	if (copy_from_user(&r, argp, sizeof(r)))
		return -EFAULT;
	if (r.flags || r.pad)
		return -EINVAL;
	if (check_add_overflow(r.first_set, r.nr_sets, &end) ||
	    end > node->nr_sets)
		return -EINVAL;

	buf = kvmalloc_array(3 * per_round * cps, sizeof(u32), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	while (done < r.nr_sets && !err) {
		u64 n = min(per_round, r.nr_sets - done);
		u32 *hw = buf, *ext = buf + per_round * cps;
		u32 *lost = ext + per_round * cps;

		refcnt_node_read_sets(node, r.first_set + done, n,
				      r.hw ? hw : NULL, r.ext ? ext : NULL,
				      r.lost ? lost : NULL);
		err = refcnt_put_words(r.hw, done * cps, hw, n * cps) ?:
		      refcnt_put_words(r.ext, done * cps, ext, n * cps) ?:
		      refcnt_put_words(r.lost, done * cps, lost, n * cps);
		done += n;
		if (fatal_signal_pending(current))
			err = -EINTR;
	}
	kvfree(buf);
	return err;
}

/* Check every entry before any counts: a bad one fails the whole batch. */
static long refcnt_inject(struct refcnt_file *rf, void __user *argp)
{
	const struct refcnt_slot **slots;
	struct rcb_inject in;
	struct rcb_ref *refs;
	long err = 0;
	u32 i;

	if (copy_from_user(&in, argp, sizeof(in)))
		return -EFAULT;
	if (in.flags & ~RCB_INJECT_FLAGS || !in.nr_refs ||
	    in.nr_refs > RCB_INJECT_MAX)
		return -EINVAL;

	refs = kvmalloc_array(in.nr_refs, sizeof(*refs), GFP_KERNEL);
	slots = kvmalloc_array(in.nr_refs, sizeof(*slots), GFP_KERNEL);
	if (!refs || !slots) {
		err = -ENOMEM;
		goto out;
	}
	if (copy_from_user(refs, u64_to_user_ptr(in.refs),
			   array_size(in.nr_refs, sizeof(*refs)))) {
		err = -EFAULT;
		goto out;
	}
	for (i = 0; i < in.nr_refs; i++) {
		slots[i] = refcnt_slot_lookup(refs[i].paddr);
		if (!slots[i] || refs[i].src_cnodeid >= refcnt_topo.nr_cnodes) {
			err = -EINVAL;
			goto out;
		}
	}
	for (i = 0; i < in.nr_refs; i++) {
		const struct refcnt_slot *s = slots[i];
		u64 set = s->first_set + ((refs[i].paddr - s->base) >>
					  refcnt_cfg.granularity_shift);

		if (!refs[i].count)
			continue;
		/* Exact: make the counter pages here, where we may sleep. */
		if (!refcnt_node_prepare(s->node, set, refs[i].src_cnodeid)) {
			err = -ENOMEM;
			goto out;
		}
		refcnt_node_reference(s->node, set, refs[i].src_cnodeid,
				      refs[i].count, NULL);
		if (!(i % 1024))
			cond_resched();
	}
	if (in.flags & RCB_INJECT_SYNC)
		for (i = 0; i < in.nr_refs; i++)
			if (i == 0 || slots[i]->node != slots[i - 1]->node)
				refcnt_node_sync(slots[i]->node);
out:
	kvfree(slots);
	kvfree(refs);
	return err;
}

static long refcnt_thresholds_set(struct refcnt_file *rf, void __user *argp)
{
	struct rcb_thresholds t;

	if (copy_from_user(&t, argp, sizeof(t)))
		return -EFAULT;
	if (t.flags || t.pad)
		return -EINVAL;
	return refcnt_node_set_thresholds(rf->node, t.abs_threshold,
					  t.diff_threshold);
}

static long refcnt_bench_ioctl(struct refcnt_file *rf, void __user *argp)
{
	struct rcb_bench b;
	int err;

	if (copy_from_user(&b, argp, sizeof(b)))
		return -EFAULT;
	if (b.flags || b.pad || !b.nr_refs || b.nr_refs > RCB_BENCH_MAX)
		return -EINVAL;
	err = refcnt_bench(rf->node, b.nr_refs, &b.entry_ns, &b.atomic_ns);
	if (err)
		return err;
	if (copy_to_user(argp, &b, sizeof(b)))
		return -EFAULT;
	return 0;
}

static long refcnt_range_query_ioctl(void __user *argp)
{
	struct rcb_range_query q;
	int err;

	if (copy_from_user(&q, argp, sizeof(q)))
		return -EFAULT;
	err = refcnt_range_query(&q);
	if (err && err != -E2BIG)
		return err;
	/* E2BIG too: nr_entries then says how many entries the range needs. */
	if (copy_to_user(argp, &q, sizeof(q)))
		return -EFAULT;
	return err;
}

/*
 * Synthetic PEBS/IBS samples, through the NMI handler's own code. Checked
 * whole first, like RCB_INJECT: a bad entry delivers nothing.
 */
static long refcnt_feed_samples(void __user *argp)
{
	struct rcb_feed_samples f;
	struct rcb_sample *s;
	long err = 0;
	u32 i;

	if (copy_from_user(&f, argp, sizeof(f)))
		return -EFAULT;
	if (f.flags || f.pad || !f.nr_samples || f.nr_samples > RCB_INJECT_MAX)
		return -EINVAL;
	s = kvmalloc_array(f.nr_samples, sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	if (copy_from_user(s, u64_to_user_ptr(f.samples),
			   array_size(f.nr_samples, sizeof(*s)))) {
		err = -EFAULT;
		goto out;
	}
	for (i = 0; i < f.nr_samples; i++) {
		if (s[i].src_cnodeid >= refcnt_topo.nr_cnodes) {
			err = -EINVAL;
			goto out;
		}
	}
	f.delivered = 0;
	for (i = 0; i < f.nr_samples; i++) {
		struct perf_sample_data data;

		perf_sample_data_init(&data, s[i].vaddr, s[i].weight);
		if (s[i].paddr) {
			data.phys_addr = s[i].paddr;
			data.sample_flags |= PERF_SAMPLE_PHYS_ADDR;
		}
		f.delivered += refcnt_pebs_sample(&data, s[i].src_cnodeid);
	}
	if (copy_to_user(argp, &f, sizeof(f)))
		err = -EFAULT;
out:
	kvfree(s);
	return err;
}

/* The commands that change counters or time the hardware. */
static bool refcnt_cmd_privileged(unsigned int cmd)
{
	return cmd == RCB_INJECT || cmd == RCB_RESET ||
	       cmd == RCB_THRESHOLDS_SET || cmd == RCB_BENCH ||
	       cmd == RCB_FEED_SAMPLES;
}

long refcnt_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct refcnt_file *rf = file->private_data;
	void __user *argp = (void __user *)arg;

	if (refcnt_cmd_privileged(cmd) && !capable(CAP_SYS_ADMIN))
		return -EPERM;

	switch (cmd) {
	case RCB_INFO_GET:
		return refcnt_info_get(rf, argp);
	case RCB_SLOT_GET:
		return refcnt_slot_get(rf, argp);
	case RCB_SLOT_QUERY:
		return refcnt_slot_query(rf, argp);
	case RCB_SETS_READ:
		return refcnt_sets_read(rf, argp);
	case RCB_SYNC:
		refcnt_node_sync(rf->node);
		return 0;
	case RCB_RANGE_QUERY:
		return refcnt_range_query_ioctl(argp);
	case RCB_INJECT:
		return refcnt_inject(rf, argp);
	case RCB_RESET:
		return refcnt_node_reset(rf->node);
	case RCB_THRESHOLDS_SET:
		return refcnt_thresholds_set(rf, argp);
	case RCB_BENCH:
		return refcnt_bench_ioctl(rf, argp);
	case RCB_FEED_SAMPLES:
		return refcnt_feed_samples(argp);
	default:
		return -ENOTTY;
	}
}
