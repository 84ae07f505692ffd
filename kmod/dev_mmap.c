// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: mmap() of /dev/refcnt/nodeN, the extended counters read-only.
 *
 * All open files of a node share one address space, that of an inode on
 * an internal pseudo file system, so that installing a table page can zap
 * the zero-page mappings of every process at once (table.c). A fault maps
 * the table's page, or the node's zero page where it has none.
 */
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/mm.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>

#include "compat.h"
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
 * Return: 0 or a negative errno.
 */
int refcnt_fs_init(void)
{
	refcnt_mnt = kern_mount(&refcnt_fs_type);
	return PTR_ERR_OR_ZERO(refcnt_mnt);
}

/**
 * refcnt_fs_exit() - unmount it, once every inode on it is put
 */
void refcnt_fs_exit(void)
{
	kern_unmount(refcnt_mnt);
}

/**
 * refcnt_fs_inode() - a new inode whose address space a node's files share
 *
 * Return: the inode, or an ERR_PTR.
 */
struct inode *refcnt_fs_inode(void)
{
	return alloc_anon_inode(refcnt_mnt->mnt_sb);
}

static vm_fault_t refcnt_vm_fault(struct vm_fault *vmf)
{
	struct refcnt_file *rf = vmf->vma->vm_file->private_data;
	struct refcnt_table *table = &rf->node->table;
	struct page *page;
	vm_fault_t ret;

	if (vmf->pgoff >= refcnt_table_pages(table))
		return VM_FAULT_SIGBUS;
	page = refcnt_table_map_begin(table, vmf->pgoff);
	ret = vmf_insert_page(vmf->vma, vmf->address, page);
	refcnt_table_map_end(table);
	return ret;
}

static const struct vm_operations_struct refcnt_vm_ops = {
	.fault = refcnt_vm_fault,
};

/**
 * refcnt_mmap() - map a node's extended counters, read-only for good
 * @file:	an open file of the node
 * @vma:	the new mapping
 *
 * After kernel/bpf/ringbuf.c: VM_WRITE is refused and VM_MAYWRITE
 * cleared, so mprotect() cannot add it later; the mapping cannot grow
 * past the table, and stays out of core dumps.
 *
 * Return: 0, -EPERM for a writable mapping, -EINVAL past the table.
 */
int refcnt_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct refcnt_file *rf = file->private_data;
	unsigned long pages = vma_pages(vma);
	unsigned long end;

	if (vma->vm_flags & VM_WRITE)
		return -EPERM;
	if (check_add_overflow(vma->vm_pgoff, pages, &end) ||
	    end > refcnt_table_pages(&rf->node->table))
		return -EINVAL;

	refcnt_vm_flags_mod(vma, VM_MIXEDMAP | VM_DONTEXPAND | VM_DONTDUMP,
			    VM_MAYWRITE);
	vma->vm_ops = &refcnt_vm_ops;
	return 0;
}
