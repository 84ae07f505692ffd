// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: /dev/refcnt/nodeN, the refcnt(5) interface to one node's counters:
 * the device, open, read(2) of the event queue and poll. mmap() is in
 * dev_mmap.c, the ioctls in ioctl.c.
 */
#include <linux/capability.h>
#include <linux/compat.h>
#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/user_namespace.h>
#include <uapi/linux/refcnt.h>

#include "refcnt.h"

/* Records copied out per lock hold: bounds the lock time. */
#define REFCNT_READ_BATCH	8

/**
 * struct refcnt_dev - the device of one node
 * @misc:	misc device; its nodename puts it at /dev/refcnt/nodeN
 * @lock:	protects @node
 * @node:	the node's current layout, NULL until the device is given
 *		one and once it is removed; the layout's owner (layout.c)
 *		holds its reference
 * @ref:	holders: the registration and every open file, which uses
 *		@inode's address space until it is released
 * @inode:	anonymous inode whose address space all open files share
 * @name:	"refcnt-nodeN", the name in /sys/class/misc
 * @nodename:	"refcnt/nodeN", the path under /dev
 */
struct refcnt_dev {
	struct miscdevice misc;
	spinlock_t lock;	/* protects node */
	struct refcnt_node *node;
	struct kref ref;
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
	/* Under misc_mtx: the device is registered, so @dev is alive. */
	spin_lock(&dev->lock);
	rf->node = dev->node;
	if (rf->node) {
		refcnt_node_get(rf->node);
		kref_get(&dev->ref);
	}
	spin_unlock(&dev->lock);
	if (!rf->node) {
		kfree(rf);
		return -ENODEV;
	}
	rf->dev = dev;
	rf->reported_slots = -1;
	/* What the reader may see is the opener's, as for pagemap. */
	rf->admin = file_ns_capable(file, &init_user_ns, CAP_SYS_ADMIN);
	rf->pid_ns = get_pid_ns(task_active_pid_ns(current));
	rf->tgid = get_pid(task_tgid(current));
	file->private_data = rf;
	/* All files of the node share one mapping (see dev_mmap.c). */
	file->f_mapping = dev->inode->i_mapping;
	return stream_open(inode, file);
}

static void refcnt_dev_free(struct kref *ref)
{
	struct refcnt_dev *dev = container_of(ref, struct refcnt_dev, ref);

	iput(dev->inode);
	kfree(dev);
}

/* The file keeps the layout it opened, and its node, until it goes. */
static int refcnt_release(struct inode *inode, struct file *file)
{
	struct refcnt_file *rf = file->private_data;

	put_pid(rf->tgid);
	put_pid_ns(rf->pid_ns);
	refcnt_node_put(rf->node);
	kref_put(&rf->dev->ref, refcnt_dev_free);
	kfree(rf);
	return 0;
}

/* A retired layout's queue ends with its RCB_EVENT_LAYOUT record. */
static bool refcnt_read_done(struct refcnt_node *node)
{
	return READ_ONCE(node->retired) && !refcnt_events_ready(&node->events);
}

/*
 * Wait for a record; another reader may take it first. 1: none will come
 * (end of file).
 */
static int refcnt_read_wait(struct refcnt_node *node, bool nonblock)
{
	struct refcnt_events *ev = &node->events;

	while (!refcnt_events_ready(ev)) {
		if (refcnt_read_done(node))
			return 1;
		if (nonblock)
			return -EAGAIN;
		if (wait_event_interruptible(ev->wait, refcnt_events_ready(ev) ||
					     READ_ONCE(node->retired)))
			return -ERESTARTSYS;
	}
	return 0;
}

/*
 * What the file's reader may see of record @e: no more than pagemap
 * would show the opener. Without CAP_SYS_ADMIN no physical address, nor
 * the virtual address of another process. The pid (the initial
 * namespace's) in the opener's pid namespace: 0 where it has none there,
 * or the process is gone. RCB_EVENT_F_CONTEXT stays while either is told.
 */
static void refcnt_read_filter(const struct refcnt_file *rf,
			       struct rcb_event *e)
{
	struct pid *pid;
	bool own;

	if (!rf->admin)
		e->paddr = 0;
	if (!(e->flags & RCB_EVENT_F_CONTEXT) ||
	    (rf->admin && rf->pid_ns == &init_pid_ns))
		return;
	rcu_read_lock();
	pid = find_pid_ns(e->pid, &init_pid_ns);
	own = pid && pid == rf->tgid;
	e->pid = pid ? pid_nr_ns(pid, rf->pid_ns) : 0;
	rcu_read_unlock();
	if (!rf->admin && !own)
		e->vaddr = 0;
	if (!e->pid && !e->vaddr)
		e->flags &= ~RCB_EVENT_F_CONTEXT;
}

/**
 * refcnt_event_format() - RCB_EVENT_FORMAT: the records the file returns
 * @rf:		the open file
 * @argp:	user pointer to struct rcb_event_format
 *
 * Return: 0, -EFAULT, or -EINVAL for a version this module does not
 * write or a non-zero input that must be zero.
 */
long refcnt_event_format(struct refcnt_file *rf, void __user *argp)
{
	struct rcb_event_format f;

	if (copy_from_user(&f, argp, sizeof(f)))
		return -EFAULT;
	if (f.version > RCB_EVENT_VERSION || f.size || f.reserved)
		return -EINVAL;
	WRITE_ONCE(rf->event_version, f.version ? RCB_EVENT_VERSION : 0);
	f.version = rf->event_version;
	f.size = f.version ? sizeof(struct rcb_event_record) :
			     sizeof(struct rcb_event);
	return copy_to_user(argp, &f, sizeof(f)) ? -EFAULT : 0;
}

/*
 * Queued records are struct rcb_event; the sized record has them whole,
 * and the LAYOUT record's generation all 64 bits, which the file's
 * (retired) layout tells.
 */
static void refcnt_event_record(const struct refcnt_file *rf,
				const struct rcb_event *e,
				struct rcb_event_record *r)
{
	*r = (struct rcb_event_record){
		.size = sizeof(*r),
		.version = RCB_EVENT_VERSION,
		.type = e->type,
		.flags = e->flags,
		.set = e->set,
		.paddr = e->paddr,
		.count = e->count,
		.home_count = e->home_count,
		.home_cnodeid = e->home_cnodeid,
		.src_cnodeid = e->src_cnodeid,
		.counter = e->counter,
		.pid = e->pid,
		.vaddr = e->vaddr,
		.seq = e->seq,
		.time_ns = e->time_ns,
	};
	if (e->type == RCB_EVENT_LAYOUT)
		r->count = refcnt_node_next_generation(rf->node);
}

/* @n records to @buf in the format @version; -EFAULT for a bad buffer. */
static int refcnt_read_copy(const struct refcnt_file *rf, u32 version,
			    char __user *buf, const struct rcb_event *batch,
			    unsigned int n)
{
	struct rcb_event_record r;
	unsigned int i;

	if (!version)
		return copy_to_user(buf, batch, n * sizeof(*batch)) ? -EFAULT : 0;
	for (i = 0; i < n; i++) {
		refcnt_event_record(rf, &batch[i], &r);
		if (copy_to_user(buf + i * sizeof(r), &r, sizeof(r)))
			return -EFAULT;
	}
	return 0;
}

/*
 * Whole records of format @version through @batch (at least one fits in
 * @count); a LOST record first if any were dropped.
 */
static ssize_t refcnt_read_batches(struct file *file, char __user *buf,
				   size_t count, u32 version,
				   struct rcb_event *batch)
{
	struct refcnt_file *rf = file->private_data;
	struct refcnt_events *ev = &rf->node->events;
	size_t size = version ? sizeof(struct rcb_event_record) :
				sizeof(struct rcb_event);
	size_t want = count / size, done = 0;
	unsigned int n, i;
	int err;

	while (!done) {
		err = refcnt_read_wait(rf->node, file->f_flags & O_NONBLOCK);
		if (err)
			return err < 0 ? err : 0;
		while (done < want) {
			n = refcnt_events_take(ev, batch,
					       min_t(size_t, want - done,
						     REFCNT_READ_BATCH));
			if (!n)
				break;
			for (i = 0; i < n; i++)
				refcnt_read_filter(rf, &batch[i]);
			/* Records taken but not copied are gone: a bad buffer. */
			if (refcnt_read_copy(rf, version, buf + done * size,
					     batch, n))
				return done ? done * size : -EFAULT;
			done += n;
		}
	}
	/* Room made for a MIGRATE record the full queue refused. */
	if (refcnt_events_room_wanted(ev))
		queue_delayed_work(system_unbound_wq, &rf->node->fold_work, 0);
	return done * size;
}

static ssize_t refcnt_read(struct file *file, char __user *buf,
			   size_t count, loff_t *ppos)
{
	struct refcnt_file *rf = file->private_data;
	/* Read once: RCB_EVENT_FORMAT may change it meanwhile. */
	u32 version = READ_ONCE(rf->event_version);
	struct rcb_event *batch;
	ssize_t ret;

	if (count < (version ? sizeof(struct rcb_event_record) : sizeof(*batch)))
		return -EINVAL;
	/* Off the stack: the batch is over half a kilobyte. */
	batch = kmalloc_array(REFCNT_READ_BATCH, sizeof(*batch), GFP_KERNEL);
	if (!batch)
		return -ENOMEM;
	ret = refcnt_read_batches(file, buf, count, version, batch);
	kfree(batch);
	return ret;
}

static __poll_t refcnt_poll(struct file *file, poll_table *wait)
{
	struct refcnt_file *rf = file->private_data;

	poll_wait(file, &rf->node->events.wait, wait);
	if (refcnt_events_ready(&rf->node->events))
		return EPOLLIN | EPOLLRDNORM;
	return refcnt_read_done(rf->node) ? EPOLLHUP : 0;
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
 * refcnt_dev_add() - create /dev/refcnt/nodeN, closed
 * @nid:	the node
 *
 * Until refcnt_dev_set_node() gives it a layout, open() fails with
 * ENODEV and the statistics files read ENODEV: a device made while the
 * module loads can be removed again with no file open.
 *
 * Return: the device or an ERR_PTR.
 */
struct refcnt_dev *refcnt_dev_add(int nid)
{
	struct refcnt_dev *dev;
	int err;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return ERR_PTR(-ENOMEM);
	spin_lock_init(&dev->lock);
	kref_init(&dev->ref);
	dev->inode = refcnt_fs_inode();
	err = PTR_ERR_OR_ZERO(dev->inode);
	if (err)
		goto free_dev;
	snprintf(dev->name, sizeof(dev->name), "refcnt-node%d", nid);
	snprintf(dev->nodename, sizeof(dev->nodename), "refcnt/node%d", nid);
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
	iput(dev->inode);
free_dev:
	kfree(dev);
	return ERR_PTR(err);
}

/**
 * refcnt_dev_set_node() - give a device its node's layout, or a new one
 * @dev:	device from refcnt_dev_add()
 * @node:	the layout, published in the slot index; it replaces the
 *		device's, if any; the caller keeps its reference, and the
 *		old layout's until this returns
 *
 * Files opened from now on get @node; those open keep theirs. Both
 * layouts zap the same address space when they install a page, which
 * only makes the files of the other refault their own page.
 */
void refcnt_dev_set_node(struct refcnt_dev *dev, struct refcnt_node *node)
{
	refcnt_table_set_mapping(&node->table, dev->inode->i_mapping);
	spin_lock(&dev->lock);
	dev->node = node;
	spin_unlock(&dev->lock);
}

/**
 * refcnt_dev_remove() - remove a node's device
 * @dev:	device from refcnt_dev_add()
 *
 * /dev/refcnt/nodeN goes now; files still open keep working on their
 * layout, and the device's memory goes with the last of them. The node's
 * interrupt service may still run, and no longer zaps the mapping.
 */
void refcnt_dev_remove(struct refcnt_dev *dev)
{
	struct refcnt_node *node;

	misc_deregister(&dev->misc);
	spin_lock(&dev->lock);
	node = dev->node;
	dev->node = NULL;
	spin_unlock(&dev->lock);
	if (node)
		refcnt_table_set_mapping(&node->table, NULL);
	kref_put(&dev->ref, refcnt_dev_free);
}

/**
 * refcnt_dev_node_get() - the current layout of a device, for sysfs
 * @d:		the misc device's struct device
 *
 * Return: the node with a reference taken (refcnt_node_put()), or NULL
 * once the device is being removed.
 */
struct refcnt_node *refcnt_dev_node_get(struct device *d)
{
	struct miscdevice *misc = dev_get_drvdata(d);
	struct refcnt_dev *dev = container_of(misc, struct refcnt_dev, misc);
	struct refcnt_node *node;

	spin_lock(&dev->lock);
	node = dev->node;
	if (node)
		refcnt_node_get(node);
	spin_unlock(&dev->lock);
	return node;
}
