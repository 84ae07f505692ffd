// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: RCB_RANGE_QUERY, the counters of a virtual range of a process
 * (refcnt(5) PIOCGETSN0REFCNTRS and PIOCGETSN0EXTREFCNTRS).
 *
 * One entry per hardware page of the range. Pages are looked up without
 * faulting them in (FOLL_NOFAULT), a chunk at a time under the target's
 * mmap lock; entries are written after the lock is dropped, since copying
 * to the caller may fault (and the caller may be the target).
 */
#include <linux/capability.h>
#include <linux/hugetlb.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <uapi/linux/refcnt.h>

#include "compat.h"
#include "refcnt.h"

/* Base pages looked up per hold of the mmap lock. */
#define REFCNT_QUERY_CHUNK	64

/*
 * FOLL_FORCE: look at pages NUMA balancing made PROT_NONE too; we only
 * read what is mapped, never fault.
 */
#define REFCNT_QUERY_GUP	(FOLL_NOFAULT | FOLL_FORCE)

/**
 * struct refcnt_probe - what one base page of the range is mapped to
 * @page:	the page, or NULL when not present
 * @size:	bytes of the page mapping it (hugetlb or THP size)
 * @flags:	RCB_PAGE_* known from the VMA and the page
 */
struct refcnt_probe {
	struct page *page;
	u64 size;
	u64 flags;
};

static void refcnt_probe_vma(struct vm_area_struct *vma, bool admin,
			     struct refcnt_probe *p)
{
	struct folio *folio = page_folio(p->page);

	p->flags = RCB_PAGE_PRESENT;
	p->size = PAGE_SIZE;
	if (is_vm_hugetlb_page(vma)) {
		p->flags |= RCB_PAGE_HUGETLB;
		p->size = vma_kernel_pagesize(vma);
	} else if (folio_test_large(folio)) {
		p->flags |= RCB_PAGE_THP;
		p->size = folio_size(folio);
	}
	/* Shared and file pages would show other processes' references. */
	if (!admin && (!vma_is_anonymous(vma) || (vma->vm_flags & VM_SHARED)))
		p->flags |= RCB_PAGE_DENIED;
}

/* Look up @n base pages from @addr; returns how many were probed. */
static unsigned int refcnt_probe_chunk(struct mm_struct *mm, u64 addr,
				       unsigned int n, bool admin,
				       struct refcnt_probe *probes,
				       struct page **pages)
{
	unsigned int i = 0;

	mmap_read_lock(mm);
	while (i < n) {
		struct vm_area_struct *vma = vma_lookup(mm, addr);
		unsigned int run, j;
		long got;

		if (!vma) {
			probes[i].page = NULL;
			i++;
			addr += PAGE_SIZE;
			continue;
		}
		run = min_t(u64, n - i, (vma->vm_end - addr) >> PAGE_SHIFT);
		got = refcnt_gup_remote(mm, addr, run, REFCNT_QUERY_GUP, pages);
		if (got <= 0) {
			/* The first page is not present: skip just it. */
			probes[i].page = NULL;
			i++;
			addr += PAGE_SIZE;
			continue;
		}
		for (j = 0; j < got; j++) {
			probes[i + j].page = pages[j];
			refcnt_probe_vma(vma, admin, &probes[i + j]);
		}
		i += got;
		addr += (u64)got << PAGE_SHIFT;
	}
	mmap_read_unlock(mm);
	return n;
}

/* The counters of the set that counts @paddr. */
static void refcnt_fill_counters(struct rcb_page_counters *e, u64 paddr,
				 bool extended)
{
	const struct refcnt_slot *slot = refcnt_slot_lookup(paddr);
	struct refcnt_sparse *sp;
	unsigned int c;
	u64 first;

	if (!slot) {
		e->flags |= RCB_PAGE_UNCOUNTED;
		return;
	}
	first = (slot->first_set + ((paddr - slot->base) >>
				    refcnt_cfg.granularity_shift)) *
		refcnt_topo.counters_per_set;
	sp = extended ? &slot->node->table.counters : &slot->node->hw;
	/* A reset frees counter pages only after an RCU-sched grace period. */
	rcu_read_lock_sched();
	for (c = 0; c < refcnt_topo.counters_per_set; c++)
		e->refcnt[c] = refcnt_sparse_read(sp, first + c);
	rcu_read_unlock_sched();
}

static void refcnt_fill_entry(struct rcb_page_counters *e,
			      const struct refcnt_probe *p, u64 offset,
			      bool admin, bool extended)
{
	u64 paddr;

	memset(e, 0, sizeof(*e));
	e->cnodeid = -1;
	if (!p->page)
		return;
	e->flags = p->flags;
	e->page_size = p->size;
	if (p->flags & RCB_PAGE_DENIED)
		return;
	paddr = PFN_PHYS(page_to_pfn(p->page)) + offset;
	paddr = round_down(paddr, refcnt_cfg.granularity);
	e->cnodeid = refcnt_topo.nid_to_cnode[page_to_nid(p->page)];
	refcnt_fill_counters(e, paddr, extended);
	if (admin)
		e->paddr = paddr;
}

static struct task_struct *refcnt_query_task(pid_t pid)
{
	struct task_struct *task;
	struct pid *task_pid;

	if (!pid || pid == task_tgid_vnr(current)) {
		get_task_struct(current);
		return current;
	}
	if (pid < 0)
		return ERR_PTR(-EINVAL);
	if (!capable(CAP_SYS_PTRACE))
		return ERR_PTR(-EPERM);
	task_pid = find_get_pid(pid);
	task = get_pid_task(task_pid, PIDTYPE_PID);
	put_pid(task_pid);
	return task ?: ERR_PTR(-ESRCH);
}

/* Probe the base pages under hardware pages [h, end) and write entries. */
static int refcnt_query_chunk(struct mm_struct *mm, u64 *h, u64 end,
			      struct rcb_page_counters __user **ubuf,
			      bool admin, bool extended,
			      struct refcnt_probe *probes, struct page **pages)
{
	u64 gran = refcnt_cfg.granularity, base = round_down(*h, PAGE_SIZE);
	u64 step = max_t(u64, gran, PAGE_SIZE);
	unsigned int n = 0, i;
	int err = 0;

	/* Hardware pages above a base page are probed by their first page. */
	if (gran <= PAGE_SIZE) {
		n = min_t(u64, REFCNT_QUERY_CHUNK,
			  DIV_ROUND_UP(end - base, PAGE_SIZE));
		refcnt_probe_chunk(mm, base, n, admin, probes, pages);
	} else {
		for (n = 0; n < REFCNT_QUERY_CHUNK && base + n * step < end; n++)
			refcnt_probe_chunk(mm, base + n * step, 1, admin,
					   &probes[n], pages);
	}

	for (i = 0; i < n; i++) {
		u64 page_end = min(base + i * step + step, end);

		for (; *h < page_end && !err; *h += gran) {
			struct rcb_page_counters e;

			refcnt_fill_entry(&e, &probes[i],
					  gran < PAGE_SIZE ? *h - (base + i * step) : 0,
					  admin, extended);
			if (copy_to_user(*ubuf, &e, sizeof(e)))
				err = -EFAULT;
			(*ubuf)++;
		}
		if (probes[i].page)
			put_page(probes[i].page);
	}
	return err;
}

/**
 * refcnt_range_query() - RCB_RANGE_QUERY
 * @q:		the query, checked here; nr_entries is set
 *
 * Return: 0 or a negative errno (see uapi/linux/refcnt.h).
 */
int refcnt_range_query(struct rcb_range_query *q)
{
	struct rcb_page_counters __user *ubuf = u64_to_user_ptr(q->buf);
	bool extended = q->flags & RCB_RANGE_EXTENDED;
	bool admin = capable(CAP_SYS_ADMIN);
	struct task_struct *task;
	struct refcnt_probe *probes;
	struct page **pages;
	struct mm_struct *mm;
	u64 h, end, needed;
	int err = 0;

	if (q->flags & ~RCB_RANGE_FLAGS || !q->len)
		return -EINVAL;
	if (check_add_overflow(q->vaddr, q->len, &end) || end > TASK_SIZE_MAX)
		return -EINVAL;
	h = round_down(q->vaddr, refcnt_cfg.granularity);
	needed = DIV_ROUND_UP(end - h, refcnt_cfg.granularity);
	if (needed > q->buf_entries) {
		q->nr_entries = needed;	/* tell the caller what it takes */
		return -E2BIG;
	}

	task = refcnt_query_task(q->pid);
	if (IS_ERR(task))
		return PTR_ERR(task);
	mm = get_task_mm(task);
	put_task_struct(task);
	if (!mm)
		return -ESRCH;

	probes = kcalloc(REFCNT_QUERY_CHUNK, sizeof(*probes), GFP_KERNEL);
	pages = kcalloc(REFCNT_QUERY_CHUNK, sizeof(*pages), GFP_KERNEL);
	if (!probes || !pages) {
		err = -ENOMEM;
		goto out;
	}
	q->nr_entries = 0;
	while (h < end && !err) {
		u64 before = h;

		err = refcnt_query_chunk(mm, &h, end, &ubuf, admin, extended,
					 probes, pages);
		q->nr_entries += (h - before) / refcnt_cfg.granularity;
		if (!err && fatal_signal_pending(current))
			err = -EINTR;
		cond_resched();
	}
out:
	kfree(pages);
	kfree(probes);
	mmput(mm);
	return err;
}
