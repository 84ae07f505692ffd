// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: every node's current layout and device, and memory hotplug.
 *
 * At load, every node with memory online gets a layout (core: node.c);
 * the devices come last, once everything they reach is set up, and go
 * first at unload (refcnt_layout_devices_init(), _exit()). A memory
 * notifier follows memory coming online and going offline: once a block
 * is online (MEM_ONLINE) or offline (MEM_OFFLINE), each node whose
 * online memory no longer matches its slots gets a new layout, published
 * in the slot index before the old one is retired (retire.c). Only the
 * block's node is looked at, and the old layout hands its counter pages
 * over: a block costs about the block, not the node or the machine. A
 * node that gains its first memory gets its device; one that loses all
 * of it loses its device, whose files keep their layout until they are
 * closed. See Documentation/admin-guide.rst.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/err.h>
#include <linux/memory.h>
#include <linux/mm.h>
#include <linux/nodemask.h>
#include <linux/notifier.h>
#include <linux/rwsem.h>
#include <linux/slab.h>

#include "compat.h"
#include "refcnt.h"
#include "feed.h"

/* Everything below changes with refcnt_layout_rwsem held for writing. */
static struct refcnt_node *refcnt_nodes[MAX_NUMNODES];
static struct refcnt_dev *refcnt_devs[MAX_NUMNODES];
/* Layout generation of each node id, and what its last layout counted. */
static u64 refcnt_generations[MAX_NUMNODES];
static struct refcnt_stats *refcnt_carry[MAX_NUMNODES];
/* Nodes whose layout could not follow a change: retried at each one. */
static nodemask_t refcnt_layout_stale;
/* The layouts are built: the notifier may change them. */
static bool refcnt_layout_live;
/* The module is up: nodes have devices (refcnt_layout_devices_init()). */
static bool refcnt_layout_devices;

/* A device for a node's first layout; the node works without one. */
static void refcnt_layout_dev_add(int nid)
{
	struct refcnt_dev *dev = refcnt_dev_add(nid);

	if (IS_ERR(dev)) {
		pr_err("node %d: cannot create /dev/refcnt/node%d (%ld)\n",
		       nid, nid, PTR_ERR(dev));
		return;
	}
	refcnt_dev_set_node(dev, refcnt_nodes[nid]);
	refcnt_devs[nid] = dev;
}

/* A new layout for @nid: NULL when it has no memory online (-ENODEV). */
static struct refcnt_node *refcnt_layout_build(int nid)
{
	struct refcnt_node *node;

	node = refcnt_node_create(nid, refcnt_generations[nid] + 1,
				  refcnt_nodes[nid] ? NULL : refcnt_carry[nid],
				  refcnt_nodes[nid]);
	if (PTR_ERR(node) == -ENODEV)
		return NULL;
	return node;
}

/* What a node's last layout counted, for its next one. */
static void refcnt_layout_carry(int nid, struct refcnt_node *old,
				struct refcnt_node *succ)
{
	struct refcnt_stats *carry = refcnt_carry[nid];

	if (!carry && !succ)
		carry = kzalloc(sizeof(*carry), GFP_KERNEL);
	refcnt_carry[nid] = carry;
	/* No memory to remember it in: the statistics restart. */
	if (!carry && !succ)
		pr_warn("node %d: statistics of its memory lost\n", nid);
	refcnt_node_retire(old, succ, carry);
}

/* Replace the layout of @nid with one of its online memory now. */
static int refcnt_layout_change(int nid)
{
	struct refcnt_node *old = refcnt_nodes[nid], *succ;
	int err;

	succ = refcnt_layout_build(nid);
	if (IS_ERR(succ))
		return PTR_ERR(succ);
	refcnt_nodes[nid] = succ;
	/* From its return on, no feed reaches the old layout. */
	err = refcnt_slots_index(refcnt_nodes, MAX_NUMNODES);
	if (err) {
		/*
		 * Never published nor opened: nothing else holds it. (The
		 * debug kernel's fail-nth fails this allocation of a few
		 * slots: hotplug_test's failed_layout_change_leaves_no_orphan.)
		 */
		refcnt_nodes[nid] = old;
		refcnt_node_put(succ);
		return err;
	}
	refcnt_generations[nid]++;
	/* Published: files opened from now on get it, not the old one. */
	if (succ && refcnt_devs[nid])
		refcnt_dev_set_node(refcnt_devs[nid], succ);
	if (old) {
		refcnt_layout_carry(nid, old, succ);
		if (!succ && refcnt_devs[nid]) {
			refcnt_dev_remove(refcnt_devs[nid]);
			refcnt_devs[nid] = NULL;
		}
		refcnt_table_set_mapping(&old->table, NULL);
		refcnt_node_put(old);
		/* The pages @old did not hand over, when a file kept it. */
		if (succ && refcnt_cfg.prealloc && refcnt_node_populate(succ))
			pr_warn("node %d: prealloc=1: some counter pages are made on first use\n",
				nid);
	}
	if (succ && !refcnt_devs[nid] && refcnt_layout_devices)
		refcnt_layout_dev_add(nid);
	return 0;
}

/* Follow @nid's memory if its slots no longer match what is online. */
static void refcnt_layout_follow(int nid)
{
	int err;

	err = refcnt_slots_changed(nid, refcnt_nodes[nid],
				   refcnt_cfg.granularity);
	if (err > 0)
		err = refcnt_layout_change(nid);
	if (err) {
		pr_err("node %d: cannot follow its memory (%d); its layout stays\n",
		       nid, err);
		node_set(nid, refcnt_layout_stale);
	} else {
		node_clear(nid, refcnt_layout_stale);
	}
}

/* Does @nid's layout count any of [@start, @end)? */
static bool refcnt_layout_holds(int nid, u64 start, u64 end)
{
	const struct refcnt_node *node = refcnt_nodes[nid];
	unsigned int i;

	for (i = 0; node && i < node->nr_slots; i++)
		if (start < node->slots[i].base + node->slots[i].size &&
		    node->slots[i].base < end)
			return true;
	return false;
}

/*
 * Only the node of the block changes: an online block's page frames say
 * which (a block is in one zone, so one node); an offline one's must not
 * be read, and the layout that counted it says. A node that could not
 * follow an earlier change is looked at again each time.
 */
static void refcnt_layout_block(unsigned long action,
				const struct memory_notify *mn)
{
	u64 start = PFN_PHYS(mn->start_pfn);
	u64 end = PFN_PHYS(mn->start_pfn + mn->nr_pages);
	int online = action == MEM_ONLINE ? pfn_to_nid(mn->start_pfn) : -1;
	int nid;

	/*
	 * Node by node, not through a nodemask_t on the stack (128 bytes
	 * with 1,024 nodes) above the retirement's folds: following one
	 * node changes only its own bit of refcnt_layout_stale.
	 */
	for (nid = 0; nid < MAX_NUMNODES; nid++)
		if (node_isset(nid, refcnt_layout_stale) || nid == online ||
		    (online < 0 && refcnt_layout_holds(nid, start, end)))
			refcnt_layout_follow(nid);
}

static int refcnt_memory_callback(struct notifier_block *nb,
				  unsigned long action, void *arg)
{
	/* Online: count it from now. Offline: its counts are dropped now. */
	if (action != MEM_ONLINE && action != MEM_OFFLINE)
		return NOTIFY_OK;
	down_write(&refcnt_layout_rwsem);
	if (refcnt_layout_live)
		refcnt_layout_block(action, arg);
	up_write(&refcnt_layout_rwsem);
	return NOTIFY_OK;
}

static struct notifier_block refcnt_memory_nb = {
	.notifier_call = refcnt_memory_callback,
};

/* Every device goes. With refcnt_layout_rwsem held for writing. */
static void refcnt_layout_devs_remove(void)
{
	int nid;

	refcnt_layout_devices = false;
	for (nid = 0; nid < MAX_NUMNODES; nid++) {
		if (refcnt_devs[nid])
			refcnt_dev_remove(refcnt_devs[nid]);
		refcnt_devs[nid] = NULL;
	}
}

/* With refcnt_layout_rwsem held for writing. */
static void refcnt_layout_teardown(void)
{
	int nid;

	refcnt_layout_live = false;
	refcnt_layout_devs_remove();
	refcnt_slots_index_free();
	for (nid = 0; nid < MAX_NUMNODES; nid++) {
		refcnt_node_put(refcnt_nodes[nid]);
		refcnt_nodes[nid] = NULL;
		kfree(refcnt_carry[nid]);
		refcnt_carry[nid] = NULL;
		refcnt_generations[nid] = 0;
	}
	nodes_clear(refcnt_layout_stale);
}

/* Every node with memory online, then the index. */
static int refcnt_layout_load(void)
{
	int nid;

	for_each_node_state(nid, N_MEMORY) {
		struct refcnt_node *node = refcnt_node_create(nid, 0, NULL, NULL);

		if (PTR_ERR(node) == -ENODEV)
			continue;	/* its memory is offline */
		if (IS_ERR(node)) {
			pr_err("node %d: cannot set up its counters (%ld)\n",
			       nid, PTR_ERR(node));
			return PTR_ERR(node);
		}
		refcnt_nodes[nid] = node;
	}
	return refcnt_slots_index(refcnt_nodes, MAX_NUMNODES);
}

/**
 * refcnt_sync() - run every pending threshold interrupt of every node now
 *
 * What RCB_SYNC does for one node, for all: once it returns, the
 * references delivered before are folded where their counters reached
 * the threshold, and their events are queued. Process context.
 */
void refcnt_sync(void)
{
	int nid;

	down_read(&refcnt_layout_rwsem);
	for (nid = 0; nid < MAX_NUMNODES; nid++)
		if (refcnt_nodes[nid])
			refcnt_node_sync(refcnt_nodes[nid]);
	up_read(&refcnt_layout_rwsem);
}
EXPORT_SYMBOL_NS_GPL(refcnt_sync, REFCNT_NS);

/**
 * refcnt_layout_init() - build every node's layout, and follow memory
 * hotplug from then on
 *
 * Context: module load. The notifier is registered first, so that memory
 * coming or going while the module loads is either seen by the load or
 * looked at once it is done. No device yet: refcnt_layout_devices_init().
 * Return: 0 or a negative errno (nothing is left behind).
 */
int refcnt_layout_init(void)
{
	int err;

	err = register_memory_notifier(&refcnt_memory_nb);
	if (err)
		return err;
	down_write(&refcnt_layout_rwsem);
	err = refcnt_layout_load();
	if (err)
		refcnt_layout_teardown();
	else
		refcnt_layout_live = true;
	up_write(&refcnt_layout_rwsem);
	if (err)
		unregister_memory_notifier(&refcnt_memory_nb);
	return err;
}

/**
 * refcnt_layout_devices_init() - every node's device, the load's last step
 *
 * Context: module load, once the feeds are registered. The devices are
 * made closed, and given their layouts once all exist: when one cannot
 * be made, the others go again before any file could open them, so a
 * failed load leaves no file behind. Nodes that gain memory from now on
 * get theirs as the notifier builds their layouts.
 * Return: 0 or a negative errno (no device is left).
 */
int refcnt_layout_devices_init(void)
{
	int nid, err = 0;

	down_write(&refcnt_layout_rwsem);
	for (nid = 0; nid < MAX_NUMNODES; nid++) {
		struct refcnt_dev *dev;

		if (!refcnt_nodes[nid])
			continue;
		dev = refcnt_dev_add(nid);
		if (IS_ERR(dev)) {
			pr_err("node %d: cannot create /dev/refcnt/node%d (%ld)\n",
			       nid, nid, PTR_ERR(dev));
			err = PTR_ERR(dev);
			break;
		}
		refcnt_devs[nid] = dev;
	}
	if (err) {
		refcnt_layout_devs_remove();
	} else {
		for (nid = 0; nid < MAX_NUMNODES; nid++)
			if (refcnt_devs[nid])
				refcnt_dev_set_node(refcnt_devs[nid],
						    refcnt_nodes[nid]);
		refcnt_layout_devices = true;
	}
	up_write(&refcnt_layout_rwsem);
	return err;
}

/**
 * refcnt_layout_devices_exit() - remove every device, the unload's first step
 *
 * Context: module unload, with no file open (each holds the module).
 */
void refcnt_layout_devices_exit(void)
{
	down_write(&refcnt_layout_rwsem);
	refcnt_layout_devs_remove();
	up_write(&refcnt_layout_rwsem);
}

/**
 * refcnt_layout_exit() - stop following memory, remove the nodes
 *
 * After the devices went and the feeds stopped. Unregistering waits for
 * a notifier call in progress, so memory hotplug during unload finds
 * either the whole module or none of it.
 */
void refcnt_layout_exit(void)
{
	unregister_memory_notifier(&refcnt_memory_nb);
	down_write(&refcnt_layout_rwsem);
	refcnt_layout_teardown();
	up_write(&refcnt_layout_rwsem);
}
