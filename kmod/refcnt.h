/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt: the user interface and the module's glue, beside the core.
 *
 * /dev/refcnt/nodeN (dev.c: open, read, poll; dev_mmap.c: the mapping of
 * the extended counters), its ioctls (ioctl.c, query.c, feed_inject.c,
 * session.c), its statistics in sysfs (sysfs.c), the feeds (feed.h: the
 * interface; feed*.c: their registry; sample.c: their delivery;
 * feed_fault.c, feed_pmu.c: refcnt.ko's own) and main.c. Everything here
 * reaches the counters through the core's functions (core.h).
 */
#ifndef _REFCNT_H
#define _REFCNT_H

#include <linux/errno.h>
#include <linux/moduleparam.h>
#include <linux/types.h>
#include <linux/uidgid.h>

#include "core.h"

struct perf_event;
struct perf_event_attr;
struct perf_sample_data;
struct pt_regs;
struct refcnt_feed;
struct refcnt_feed_event;
struct refcnt_feed_target;
struct refcnt_pmu_cpu;

struct attribute_group;
struct device;
struct file;
struct inode;
struct refcnt_file;

/* query.c */
struct rcb_range_query;
int refcnt_range_query(struct rcb_range_query *q);

/* target.c */
struct mm_struct;
struct task_struct;
struct task_struct *refcnt_target_get(pid_t pid, struct mm_struct **mm);
struct task_struct *refcnt_target_thread_get(pid_t tid);

/* perf_access.c */
int refcnt_perf_access(struct perf_event_attr *attr);

/* feed.c, feed_events.c, feed_info.c: the feeds' registry */
int refcnt_feeds_init(const struct attribute_group *group);
void refcnt_feeds_exit(void);
int refcnt_feed_set(struct refcnt_feed *feed, unsigned int period);
int refcnt_feed_restart(struct refcnt_feed *feed);
int refcnt_feed_start_error(struct refcnt_feed *feed, int err,
			    const char **why);
int refcnt_feed_prepare(struct refcnt_feed *feed, bool task,
			unsigned int *period, void **setup);
void refcnt_feed_finish(struct refcnt_feed *feed, bool task, void *setup);
struct refcnt_feed *refcnt_feed_get_emulated_pmu(void);
void refcnt_feed_put(struct refcnt_feed *feed);
/* How a task's event is inherited (refcnt_feed_event_create()). */
#define REFCNT_FEED_INHERIT		0x1	/* by new threads */
#define REFCNT_FEED_INHERIT_CHILDREN	0x2	/* and by child processes */
struct perf_event *refcnt_feed_event_create(struct refcnt_feed_event *ev,
					    unsigned int period, int cpu,
					    struct task_struct *task,
					    unsigned int inherit,
					    void (*overflow)(struct perf_event *,
							     struct perf_sample_data *,
							     struct pt_regs *),
					    void *context);
int refcnt_feeds_hold(struct refcnt_feed **held, unsigned int max);
void refcnt_feeds_release(struct refcnt_feed **held, unsigned int n);
long refcnt_feeds_get(void __user *argp);
extern const struct kernel_param_ops refcnt_feed_period_ops;

/* sample.c: what the feeds deliver */
bool refcnt_feed_user(u64 addr, unsigned int cnode, u64 weight,
		      struct refcnt_outcome *out);
enum refcnt_sample_outcome
refcnt_feed_sample(struct refcnt_feed_target *t, struct perf_event *event,
		   struct perf_sample_data *data, struct pt_regs *regs,
		   struct refcnt_outcome *out);
void refcnt_feed_account(struct refcnt_feed *feed,
			 enum refcnt_sample_outcome o);
bool refcnt_feed_count(struct refcnt_feed *feed, bool counted);

/* feed_fault.c, feed_pmu.c: refcnt.ko's feeds of perf events */
#define REFCNT_FAULT_EVENTS	2
extern struct refcnt_feed refcnt_fault_feed;
extern struct refcnt_feed refcnt_pebs_feed;

/*
 * pmu_x86.c: the CPU as the PMU planners know it (pmu.h); the PMUs they
 * know are x86's, so elsewhere the PEBS/IBS feed finds no such PMU.
 */
#ifdef CONFIG_X86
int refcnt_pmu_describe(unsigned int cpu, struct refcnt_pmu_cpu *d,
			char *name, size_t len);
u32 refcnt_pmu_caps(void);
void refcnt_pmu_cpu_changed(unsigned int cpu);
int refcnt_pmu_test_describe(unsigned int cpu, struct refcnt_pmu_cpu *d,
			     char *name, size_t len);
#else
static inline int refcnt_pmu_describe(unsigned int cpu,
				      struct refcnt_pmu_cpu *d, char *name,
				      size_t len)
{
	return -EOPNOTSUPP;
}

static inline u32 refcnt_pmu_caps(void)
{
	return 0;
}

static inline void refcnt_pmu_cpu_changed(unsigned int cpu)
{
}
#endif

/* feed_inject.c: RCB_INJECT */
long refcnt_inject(void __user *argp);

/* session.c: counting one process (RCB_COUNT_START) */
long refcnt_session_start(void __user *argp);
void refcnt_session_exit(void);

/* session_limit.c: sessions per user */
bool refcnt_session_privileged(void);
int refcnt_session_charge(kuid_t *uid);
void refcnt_session_uncharge(kuid_t uid);

/* feed_pmu.c: the machine-wide PEBS/IBS feed runs over yielding sessions */
bool refcnt_pmu_yielded(void);

/* dev_mmap.c */
int refcnt_fs_init(void);
void refcnt_fs_exit(void);
struct inode *refcnt_fs_inode(void);
int refcnt_mmap(struct file *file, struct vm_area_struct *vma);

/* dev.c, ioctl.c, sysfs.c */
struct refcnt_dev;
struct refcnt_dev *refcnt_dev_add(int nid);
void refcnt_dev_remove(struct refcnt_dev *dev);
void refcnt_dev_set_node(struct refcnt_dev *dev, struct refcnt_node *node);
long refcnt_ioctl(struct file *file, unsigned int cmd, unsigned long arg);
long refcnt_event_format(struct refcnt_file *rf, void __user *argp);
extern const struct attribute_group *refcnt_dev_groups[];
void refcnt_sysfs_init(void);
extern const struct attribute_group refcnt_module_group;
struct refcnt_node *refcnt_dev_node_get(struct device *d);

/* layout.c: the nodes, their devices, and memory hotplug */
int refcnt_layout_init(void);
void refcnt_layout_exit(void);
int refcnt_layout_devices_init(void);
void refcnt_layout_devices_exit(void);

/**
 * struct refcnt_file - one open file of a node device
 * @node:		the node's layout when the file was opened; the
 *			file holds a reference to it
 * @dev:		the device, whose address space the file uses
 * @reported_slots:	rcb_num_slots as last told to this file by
 *			RCB_INFO_GET, or -1: RCB_SLOT_GET never writes more
 * @admin:		the opener had CAP_SYS_ADMIN (file->f_cred, as
 *			pagemap decides): records keep physical addresses
 *			and other processes' virtual ones
 * @pid_ns:		the opener's pid namespace, which records' pids
 *			are told in
 * @tgid:		the opener's process, whose virtual addresses every
 *			reader of the file sees
 * @event_version:	format of the records read() returns: 0 struct
 *			rcb_event, else struct rcb_event_record (set by
 *			RCB_EVENT_FORMAT)
 */
struct refcnt_file {
	struct refcnt_node *node;
	struct refcnt_dev *dev;
	int reported_slots;
	bool admin;
	struct pid_namespace *pid_ns;
	struct pid *tgid;
	u32 event_version;
};

#endif /* _REFCNT_H */
