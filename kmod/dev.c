// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: /dev/refcnt/nodeN, the refcnt(5) interface to one node's counters.
 */
#include <linux/compat.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/poll.h>
#include <linux/slab.h>

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

static ssize_t refcnt_read(struct file *file, char __user *buf,
			   size_t count, loff_t *ppos)
{
	struct refcnt_file *rf = file->private_data;

	return refcnt_events_read(&rf->node->events, buf, count,
				  file->f_flags & O_NONBLOCK);
}

static __poll_t refcnt_poll(struct file *file, poll_table *wait)
{
	struct refcnt_file *rf = file->private_data;

	poll_wait(file, &rf->node->events.wait, wait);
	return refcnt_events_ready(&rf->node->events) ? EPOLLIN | EPOLLRDNORM : 0;
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
	    end > rf->node->table.counters.nr_pages)
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
	.read = refcnt_read,
	.poll = refcnt_poll,
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
	dev->misc.groups = refcnt_dev_groups;

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

/**
 * refcnt_dev_node() - the node of a device, for its sysfs attributes
 * @d:		the misc device's struct device
 *
 * Return: the node.
 */
struct refcnt_node *refcnt_dev_node(struct device *d)
{
	struct miscdevice *misc = dev_get_drvdata(d);

	return container_of(misc, struct refcnt_dev, misc)->node;
}
