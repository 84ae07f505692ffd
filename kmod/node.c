// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: the counter hardware of one node, and what RCB_INFO_GET says of it.
 */
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/slab.h>
#include <uapi/linux/refcnt.h>

#include "refcnt.h"

/* "rcnt": the pseudo file system that owns the nodes' shared mappings. */
#define REFCNT_FS_MAGIC		0x72636e74

static struct vfsmount *refcnt_mnt;

static int refcnt_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, REFCNT_FS_MAGIC) ? 0 : -ENOMEM;
}

/*
 * No .owner: the internal mount must not pin the module, it lives exactly
 * from load to unload.
 */
static struct file_system_type refcnt_fs_type = {
	.name = "refcnt",
	.init_fs_context = refcnt_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

/**
 * refcnt_fs_init() - mount the pseudo file system for the nodes' inodes
 *
 * Every open file of a node shares one address space, so that installing a
 * table page can zap the zero-page mappings of every process at once.
 *
 * Return: 0 or a negative errno.
 */
int refcnt_fs_init(void)
{
	refcnt_mnt = kern_mount(&refcnt_fs_type);
	return PTR_ERR_OR_ZERO(refcnt_mnt);
}

void refcnt_fs_exit(void)
{
	kern_unmount(refcnt_mnt);
}

/**
 * refcnt_node_create() - build the counter hardware of a node with memory
 * @nid:	Linux node id
 *
 * Return: the node, or an ERR_PTR.
 */
struct refcnt_node *refcnt_node_create(int nid)
{
	struct refcnt_node *node;
	size_t len;
	int err;

	node = kzalloc_node(sizeof(*node), GFP_KERNEL, nid);
	if (!node)
		return ERR_PTR(-ENOMEM);
	node->nid = nid;
	node->cnodeid = refcnt_topo.nid_to_cnode[nid];

	err = refcnt_slots_discover(node, refcnt_cfg.granularity);
	if (err)
		goto free_node;

	err = -EOVERFLOW;
	if (check_mul_overflow((size_t)node->nr_sets,
			       refcnt_topo.counters_per_set * sizeof(u32), &len))
		goto free_slots;
	err = refcnt_table_init(&node->table, nid, len);
	if (err)
		goto free_slots;

	node->inode = alloc_anon_inode(refcnt_mnt->mnt_sb);
	if (IS_ERR(node->inode)) {
		err = PTR_ERR(node->inode);
		goto free_table;
	}
	node->table.mapping = node->inode->i_mapping;
	return node;

free_table:
	refcnt_table_destroy(&node->table);
free_slots:
	kfree(node->slots);
free_node:
	kfree(node);
	return ERR_PTR(err);
}

/**
 * refcnt_node_destroy() - free a node no file or mapping refers to any more
 * @node:	node from refcnt_node_create()
 */
void refcnt_node_destroy(struct refcnt_node *node)
{
	iput(node->inode);
	refcnt_table_destroy(&node->table);
	kfree(node->slots);
	kfree(node);
}

/**
 * refcnt_node_info() - describe a node's counters in refcnt(5) terms
 * @node:	the node
 * @info:	filled in completely, reserved fields zeroed
 */
void refcnt_node_info(const struct refcnt_node *node, struct rcb_info *info)
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
	info->rcb_diff_threshold = READ_ONCE(refcnt_cfg.diff_threshold);
	info->rcb_abs_threshold = READ_ONCE(refcnt_cfg.abs_threshold);
	info->rcb_num_slots = node->nr_slots;
	info->rcb_nodeid = node->nid;
	info->rcb_num_cnodes = refcnt_topo.nr_cnodes;
	info->rcb_hw_counter_bits = refcnt_topo.hw_bits;
	info->rcb_nodes_per_counter = refcnt_topo.nodes_per_counter;
}
