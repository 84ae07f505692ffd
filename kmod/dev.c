// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: /dev/refcnt/nodeN, the refcnt(5) interface to one node's counters.
 */
#include <linux/compat.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <uapi/linux/refcnt.h>

#include "compat.h"
#include "refcnt.h"

/**
 * struct refcnt_dev - the device of one node
 * @misc:	misc device; its nodename puts it at /dev/refcnt/nodeN
 * @node:	the node's counter hardware
 * @name:	"refcnt-nodeN", the name in /sys/class/misc
 * @nodename:	"refcnt/nodeN", the path under /dev
 */
struct refcnt_dev {
	struct miscdevice misc;
	struct refcnt_node *node;
	char name[32];
	char nodename[32];
};

/**
 * struct refcnt_file - one open file of a node device
 * @node:		the node
 * @reported_slots:	rcb_num_slots as last told to this file by
 *			RCB_INFO_GET, or -1: RCB_SLOT_GET never writes more
 */
struct refcnt_file {
	struct refcnt_node *node;
	int reported_slots;
};

static int refcnt_open(struct inode *inode, struct file *file)
{
	struct refcnt_dev *dev = container_of(file->private_data,
					      struct refcnt_dev, misc);
	struct refcnt_file *rf;

	rf = kzalloc(sizeof(*rf), GFP_KERNEL);
	if (!rf)
		return -ENOMEM;
	rf->node = dev->node;
	rf->reported_slots = -1;
	file->private_data = rf;
	/* All files of the node share one mapping (see refcnt_fs_init()). */
	file->f_mapping = dev->node->inode->i_mapping;
	return stream_open(inode, file);
}

static int refcnt_release(struct inode *inode, struct file *file)
{
	kfree(file->private_data);
	return 0;
}

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

static long refcnt_ioctl(struct file *file, unsigned int cmd,
			 unsigned long arg)
{
	struct refcnt_file *rf = file->private_data;
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case RCB_INFO_GET:
		return refcnt_info_get(rf, argp);
	case RCB_SLOT_GET:
		return refcnt_slot_get(rf, argp);
	case RCB_SLOT_QUERY:
		return refcnt_slot_query(rf, argp);
	default:
		return -ENOTTY;
	}
}

static vm_fault_t refcnt_vm_fault(struct vm_fault *vmf)
{
	struct refcnt_file *rf = vmf->vma->vm_file->private_data;

	return refcnt_table_fault(&rf->node->table, vmf);
}

static const struct vm_operations_struct refcnt_vm_ops = {
	.fault = refcnt_vm_fault,
};

/* The extended counters, read-only (after kernel/bpf/ringbuf.c). */
static int refcnt_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct refcnt_file *rf = file->private_data;
	unsigned long pages = vma_pages(vma);
	unsigned long end;

	if (vma->vm_flags & VM_WRITE)
		return -EPERM;
	if (check_add_overflow(vma->vm_pgoff, pages, &end) ||
	    end > rf->node->table.nr_pages)
		return -EINVAL;

	refcnt_vm_flags_mod(vma, VM_MIXEDMAP | VM_DONTEXPAND | VM_DONTDUMP,
			    VM_MAYWRITE);
	vma->vm_ops = &refcnt_vm_ops;
	return 0;
}

static const struct file_operations refcnt_fops = {
	.owner = THIS_MODULE,
	.open = refcnt_open,
	.release = refcnt_release,
	.unlocked_ioctl = refcnt_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = refcnt_mmap,
};

/**
 * refcnt_dev_add() - create /dev/refcnt/nodeN for a node
 * @node:	the node; must outlive the device
 *
 * Return: the device or an ERR_PTR.
 */
struct refcnt_dev *refcnt_dev_add(struct refcnt_node *node)
{
	struct refcnt_dev *dev;
	int err;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return ERR_PTR(-ENOMEM);
	dev->node = node;
	snprintf(dev->name, sizeof(dev->name), "refcnt-node%d", node->nid);
	snprintf(dev->nodename, sizeof(dev->nodename), "refcnt/node%d",
		 node->nid);
	dev->misc.minor = MISC_DYNAMIC_MINOR;
	dev->misc.name = dev->name;
	dev->misc.nodename = dev->nodename;
	dev->misc.fops = &refcnt_fops;
	/* Root only: the counters are a side channel (Documentation/). */
	dev->misc.mode = 0440;

	err = misc_register(&dev->misc);
	if (err) {
		kfree(dev);
		return ERR_PTR(err);
	}
	return dev;
}

/**
 * refcnt_dev_remove() - remove a node's device
 * @dev:	device from refcnt_dev_add()
 *
 * No file can be open: each holds a module reference.
 */
void refcnt_dev_remove(struct refcnt_dev *dev)
{
	misc_deregister(&dev->misc);
	kfree(dev);
}
