// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the ioctls of /dev/refcnt/nodeN (uapi/linux/refcnt.h).
 *
 * Rules (Documentation/process/botching-up-ioctls.rst): exact command
 * numbers (a wrong size is ENOTTY) but for a struct that grew, whose
 * command takes every size from its first on; flags, padding and
 * reserved fields must be zero, bad pointers EFAULT, bad values EINVAL,
 * nothing in dmesg.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <uapi/linux/refcnt.h>

#include "refcnt.h"

/* Sets per RCB_SETS_READ round: bounds the kernel buffers. */
#define REFCNT_READ_WORDS	4096
/*
 * Sets per RCB_SETS_FOLD round, in counters: the locks are dropped and a
 * fatal signal is seen between rounds (a fraction of a millisecond each).
 */
#define REFCNT_FOLD_WORDS	16384

/* A node's counters in refcnt(5) terms; reserved fields zeroed. */
static void refcnt_info_fill(const struct refcnt_node *node,
			     struct rcb_info *info)
{
	memset(info, 0, sizeof(*info));
	info->rcb_len = node->table.len;
	info->rcb_sw_sets = node->nr_sets;
	info->rcb_base_pages = node->base_pages;
	info->rcb_base_paddr = node->slots[0].base;
	info->rcb_sw_counters_per_set = refcnt_topo.counters_per_set;
	info->rcb_sw_counter_size = sizeof(u32);
	info->rcb_base_page_size = PAGE_SIZE;
	info->rcb_cnodeid = node->cnodeid;
	info->rcb_granularity = refcnt_cfg.granularity;
	info->rcb_hw_counter_max = refcnt_topo.hw_max;
	refcnt_node_thresholds(node, &info->rcb_abs_threshold,
			       &info->rcb_diff_threshold);
	info->rcb_num_slots = node->nr_slots;
	info->rcb_nodeid = node->nid;
	info->rcb_num_cnodes = refcnt_topo.nr_cnodes;
	info->rcb_hw_counter_bits = refcnt_topo.hw_bits;
	info->rcb_nodes_per_counter = refcnt_topo.nodes_per_counter;
	info->rcb_generation = node->generation;
	if (READ_ONCE(node->retired))
		info->rcb_flags |= RCB_INFO_RETIRED;
}

static long refcnt_info_get(struct refcnt_file *rf, void __user *argp)
{
	struct rcb_info info;

	refcnt_info_fill(rf->node, &info);
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

static noinline_for_stack long
refcnt_slot_query(struct refcnt_file *rf, void __user *argp)
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

/* Sets [@first, @first + @nr) of @node: all of them exist. */
static bool refcnt_sets_in_node(const struct refcnt_node *node, u64 first,
				u64 nr)
{
	u64 end;

	return !check_add_overflow(first, nr, &end) && end <= node->nr_sets;
}

static noinline_for_stack long
refcnt_sets_read(struct refcnt_file *rf, void __user *argp)
{
	unsigned int cps = refcnt_topo.counters_per_set;
	struct refcnt_node *node = rf->node;
	u64 per_round = max(REFCNT_READ_WORDS / cps, 1U), done = 0;
	struct rcb_sets_read r;
	u32 *buf;
	long err = 0;

	if (copy_from_user(&r, argp, sizeof(r)))
		return -EFAULT;
	if (r.flags || r.pad ||
	    !refcnt_sets_in_node(node, r.first_set, r.nr_sets))
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

static int refcnt_thresholds_get(struct rcb_thresholds *t, void __user *argp)
{
	if (copy_from_user(t, argp, sizeof(*t)))
		return -EFAULT;
	return t->flags || t->pad ? -EINVAL : 0;
}

/*
 * The size of the caller's struct rcb_range_query if @cmd is
 * RCB_RANGE_QUERY of any size from the first struct's on, else 0.
 */
static unsigned int refcnt_range_query_size(unsigned int cmd)
{
	if ((cmd & ~IOCSIZE_MASK) != (RCB_RANGE_QUERY & ~IOCSIZE_MASK) ||
	    _IOC_SIZE(cmd) < RCB_RANGE_QUERY_SIZE_VER0)
		return 0;
	return _IOC_SIZE(cmd);
}

/*
 * An older caller's struct is zero-extended; a newer one's fields past
 * ours must be zero: EINVAL, as for a reserved field, since E2BIG means
 * here that the range needs more entries.
 */
static noinline_for_stack long
refcnt_range_query_ioctl(void __user *argp, unsigned int usize)
{
	struct rcb_range_query q;
	int err;

	err = copy_struct_from_user(&q, sizeof(q), argp, usize);
	if (err)
		return err == -E2BIG ? -EINVAL : err;
	if (q.reserved[0] || q.reserved[1])
		return -EINVAL;
	err = refcnt_range_query(&q);
	if (err && err != -E2BIG)
		return err;
	/* E2BIG too: nr_entries then says how many entries the range needs. */
	if (copy_to_user(argp, &q, min_t(size_t, usize, sizeof(q))))
		return -EFAULT;
	return err;
}

static int refcnt_sets_fold_get(const struct refcnt_node *node,
				struct rcb_sets_fold *f, void __user *argp)
{
	if (copy_from_user(f, argp, sizeof(*f)))
		return -EFAULT;
	if (f->flags || f->pad ||
	    !refcnt_sets_in_node(node, f->first_set, f->nr_sets))
		return -EINVAL;
	return 0;
}

/* The commands that change counters. */
static bool refcnt_cmd_privileged(unsigned int cmd)
{
	return cmd == RCB_INJECT || cmd == RCB_RESET ||
	       cmd == RCB_THRESHOLDS_SET || cmd == RCB_SETS_FOLD;
}

/*
 * RCB_SETS_FOLD in rounds, each with the layout fixed and under fold_lock,
 * and neither held in between: memory hotplug, the interrupt service and
 * readers wait for one round at most, and a fatal signal stops the fold
 * (-EINTR; the rounds before it are done). A layout retired meanwhile
 * stops it too (-ESTALE): its counts moved with the sets folded so far.
 */
static long refcnt_sets_fold(struct refcnt_node *node,
			     const struct rcb_sets_fold *f)
{
	u64 per_round = max(REFCNT_FOLD_WORDS / refcnt_topo.counters_per_set,
			    1U), done = 0;
	long ret = 0;

	/* One round at least: no sets still runs the pending interrupts. */
	do {
		u64 n = min(per_round, f->nr_sets - done);

		down_read(&refcnt_layout_rwsem);
		if (READ_ONCE(node->retired))
			ret = -ESTALE;
		else
			refcnt_node_fold_sets(node, f->first_set + done, n);
		up_read(&refcnt_layout_rwsem);
		if (ret)
			return ret;
		done += n;
		if (done < f->nr_sets && fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	} while (done < f->nr_sets);
	return 0;
}

/*
 * RCB_RESET, RCB_THRESHOLDS_SET and RCB_SETS_FOLD on the file's layout,
 * which must not be retired meanwhile (its counts would be moved, then
 * changed): they run with the layout fixed, and fail with -ESTALE on a
 * retired one. The argument is read before: no user memory is touched
 * with the rwsem held.
 */
static noinline_for_stack long
refcnt_ioctl_change(struct refcnt_file *rf, unsigned int cmd, void __user *argp)
{
	struct rcb_thresholds t = {};
	struct rcb_sets_fold f = {};
	long ret = 0;

	if (cmd == RCB_THRESHOLDS_SET)
		ret = refcnt_thresholds_get(&t, argp);
	else if (cmd == RCB_SETS_FOLD)
		ret = refcnt_sets_fold_get(rf->node, &f, argp);
	if (ret)
		return ret;
	if (cmd == RCB_SETS_FOLD)
		return refcnt_sets_fold(rf->node, &f);
	down_read(&refcnt_layout_rwsem);
	if (READ_ONCE(rf->node->retired))
		ret = -ESTALE;
	else if (cmd == RCB_RESET)
		ret = refcnt_node_reset(rf->node);
	else
		ret = refcnt_node_set_thresholds(rf->node, t.abs_threshold,
						 t.diff_threshold);
	up_read(&refcnt_layout_rwsem);
	return ret;
}

/*
 * The handlers with arguments on the stack are noinline_for_stack: inlined
 * here, their frames added up in refcnt_ioctl()'s, above every command's
 * calls (RCB_INJECT's folds the deepest).
 */
static long refcnt_ioctl_cmd(struct refcnt_file *rf, unsigned int cmd,
			     void __user *argp)
{
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
	case RCB_EVENT_FORMAT:
		return refcnt_event_format(rf, argp);
	case RCB_INJECT:
		return refcnt_inject(argp);
	case RCB_RESET:
	case RCB_THRESHOLDS_SET:
	case RCB_SETS_FOLD:
		return refcnt_ioctl_change(rf, cmd, argp);
	case RCB_COUNT_START:
		return refcnt_session_start(argp);
	case RCB_FEEDS_GET:
		return refcnt_feeds_get(argp);
	default:
		return -ENOTTY;
	}
}

/**
 * refcnt_ioctl() - the ioctls of a node device
 * @file:	an open file of the node
 * @cmd:	the command, exactly as uapi/linux/refcnt.h numbers it
 * @arg:	user pointer to its argument
 *
 * The commands that change counters need CAP_SYS_ADMIN at the time of
 * the call. Those that change a node's counters or settings fail with
 * -ESTALE on a file whose layout was retired. refcnt_layout_rwsem is held
 * only where a command needs the layout fixed (those, and injection):
 * the file's own layout never changes, the range query looks slots up
 * under RCU, so a long query does not hold off memory hotplug.
 *
 * RCB_RANGE_QUERY takes the size of the caller's struct (uapi header).
 *
 * Return: 0 or a positive count as the command says, or a negative errno;
 * -ENOTTY for an unknown command.
 */
long refcnt_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct refcnt_file *rf = file->private_data;

	unsigned int usize = refcnt_range_query_size(cmd);

	if (usize)
		return refcnt_range_query_ioctl((void __user *)arg, usize);
	if (refcnt_cmd_privileged(cmd) && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	return refcnt_ioctl_cmd(rf, cmd, (void __user *)arg);
}
