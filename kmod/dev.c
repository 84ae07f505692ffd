// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: /dev/refcnt/nodeN, the refcnt(5) interface to one node's counters:
 * the device, open, read(2) of the event queue and poll. mmap() is in
 * dev_mmap.c, the ioctls in ioctl.c.
 */
#include <linux/compat.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <uapi/linux/refcnt.h>

#include "refcnt.h"

/* Records copied out per lock hold: bounds the stack and lock time. */
#define REFCNT_READ_BATCH	8

/**
 * struct refcnt_dev - the device of one node
 * @misc:	misc device; its nodename puts it at /dev/refcnt/nodeN
 * @node:	the node's counter hardware
 * @inode:	anonymous inode whose address space all open files share
 * @name:	"refcnt-nodeN", the name in /sys/class/misc
 * @nodename:	"refcnt/nodeN", the path under /dev
 */
struct refcnt_dev {
	struct miscdevice misc;
	struct refcnt_node *node;
	struct inode *inode;
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
	/* All files of the node share one mapping (see dev_mmap.c). */
	file->f_mapping = dev->inode->i_mapping;
	return stream_open(inode, file);
}

static int refcnt_release(struct inode *inode, struct file *file)
{
	kfree(file->private_data);
	return 0;
}

/* Wait for a record; another reader may take it first. */
static int refcnt_read_wait(struct refcnt_events *ev, bool nonblock)
{
	while (!refcnt_events_ready(ev)) {
		if (nonblock)
			return -EAGAIN;
		if (wait_event_interruptible(ev->wait, refcnt_events_ready(ev)))
			return -ERESTARTSYS;
	}
	return 0;
}

/* Whole records; a LOST record first if any were dropped. */
static ssize_t refcnt_read(struct file *file, char __user *buf,
			   size_t count, loff_t *ppos)
{
	struct refcnt_file *rf = file->private_data;
	struct refcnt_events *ev = &rf->node->events;
	struct rcb_event batch[REFCNT_READ_BATCH];
	size_t want = count / sizeof(batch[0]), done = 0;
	unsigned int n;
	int err;

	if (!want)
		return -EINVAL;
	while (!done) {
		err = refcnt_read_wait(ev, file->f_flags & O_NONBLOCK);
		if (err)
			return err;
		while (done < want) {
			n = refcnt_events_take(ev, batch,
					       min_t(size_t, want - done,
						     ARRAY_SIZE(batch)));
			if (!n)
				break;
			/* Records taken but not copied are gone: a bad buffer. */
			if (copy_to_user(buf + done * sizeof(batch[0]), batch,
					 n * sizeof(batch[0])))
				return done ? done * sizeof(batch[0]) : -EFAULT;
			done += n;
		}
	}
	return done * sizeof(batch[0]);
}

static __poll_t refcnt_poll(struct file *file, poll_table *wait)
{
	struct refcnt_file *rf = file->private_data;

	poll_wait(file, &rf->node->events.wait, wait);
	return refcnt_events_ready(&rf->node->events) ? EPOLLIN | EPOLLRDNORM : 0;
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
	dev->inode = refcnt_fs_inode();
	err = PTR_ERR_OR_ZERO(dev->inode);
	if (err)
		goto free_dev;
	refcnt_table_set_mapping(&node->table, dev->inode->i_mapping);
	snprintf(dev->name, sizeof(dev->name), "refcnt-node%d", node->nid);
	snprintf(dev->nodename, sizeof(dev->nodename), "refcnt/node%d",
		 node->nid);
	dev->misc.minor = MISC_DYNAMIC_MINOR;
	dev->misc.name = dev->name;
	dev->misc.nodename = dev->nodename;
	dev->misc.fops = &refcnt_fops;
	/* Root only: the counters are a side channel (security.rst). */
	dev->misc.mode = 0440;
	dev->misc.groups = refcnt_dev_groups;

	err = misc_register(&dev->misc);
	if (err)
		goto put_inode;
	return dev;

put_inode:
	refcnt_table_set_mapping(&node->table, NULL);
	iput(dev->inode);
free_dev:
	kfree(dev);
	return ERR_PTR(err);
}

/**
 * refcnt_dev_remove() - remove a node's device
 * @dev:	device from refcnt_dev_add()
 *
 * No file can be open: each holds a module reference. The node's
 * interrupt service may still run, and no longer zaps the gone mapping.
 */
void refcnt_dev_remove(struct refcnt_dev *dev)
{
	misc_deregister(&dev->misc);
	refcnt_table_set_mapping(&dev->node->table, NULL);
	iput(dev->inode);
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
