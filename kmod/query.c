// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: RCB_RANGE_QUERY, the counters of a virtual range of a process
 * (refcnt(5) PIOCGETSN0REFCNTRS and PIOCGETSN0EXTREFCNTRS).
 *
 * One entry per hardware page of the range, in two phases per chunk:
 *  - probe: under the target's mmap lock, find the pages mapped, without
 *    faulting any in (gup-fast for the caller's own pages, FOLL_NOFAULT
 *    gup otherwise), whole VMA runs at a time and holes in one step;
 *  - write: with the lock dropped (writing to the caller may fault, and
 *    the caller may be the target), look up each page's set and write the
 *    entries with one user-access section per batch. Entries are staged
 *    as struct rcb_page_set, which RCB_RANGE_PACKED copies out as they
 *    are; the full form adds the zeros of the counters the machine does
 *    not have, straight to user memory. The slot found for one page is
 *    tried first for the next: the pages of a range lie in few slots.
 */
#include <linux/capability.h>
#include <linux/hugetlb.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/pid.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <uapi/linux/refcnt.h>

#include "compat.h"
#include "refcnt.h"

/* Base pages (or hardware pages above PAGE_SIZE) probed per lock hold. */
#define REFCNT_QUERY_PROBES	512
/* Entries staged before they are written out. */
#define REFCNT_QUERY_BATCH	64

/*
 * FOLL_FORCE: look at pages NUMA balancing made PROT_NONE too; we only
 * read what is mapped, never fault.
 */
#define REFCNT_QUERY_GUP	(FOLL_NOFAULT | FOLL_FORCE)

/**
 * struct refcnt_probe - what one probed page of the range is mapped to
 * @page:	the page, or NULL when not present
 * @flags:	RCB_PAGE_* known from the VMA and the page
 * @shift:	log2 of the bytes of the page mapping it (hugetlb, THP)
 */
struct refcnt_probe {
	struct page *page;
	u32 flags;
	u8 shift;
};

/**
 * struct refcnt_query - one RCB_RANGE_QUERY in progress
 * @mm:		the target's address space
 * @own:	@mm is the caller's: gup-fast works on it
 * @admin:	the caller has CAP_SYS_ADMIN (paddr, shared memory)
 * @extended:	report extended counters, else hardware ones
 * @packed:	write struct rcb_page_set entries, else rcb_page_counters
 * @slot_hint:	for refcnt_slot_lookup_near()
 * @probes:	REFCNT_QUERY_PROBES probed pages
 * @pages:	page references held for @probes, released per chunk
 * @nr_pages:	entries of @pages in use
 * @stride:	bytes of a staged entry, RCB_PAGE_SET_SIZE(counters per set)
 * @staged:	REFCNT_QUERY_BATCH entries waiting to be written, as
 *		struct rcb_page_set whatever the form asked
 * @nr_staged:	entries of @staged in use
 * @ubuf:	where the next entry goes in the caller's buffer
 */
struct refcnt_query {
	struct mm_struct *mm;
	bool own;
	bool admin;
	bool extended;
	bool packed;
	unsigned int slot_hint;
	struct refcnt_probe *probes;
	struct page **pages;
	unsigned int nr_pages;
	unsigned int stride;
	u8 *staged;
	unsigned int nr_staged;
	u8 __user *ubuf;
};

/* What the VMA says of every page of a run in it. */
static u32 refcnt_vma_flags(struct vm_area_struct *vma, bool admin)
{
	u32 flags = RCB_PAGE_PRESENT;

	if (is_vm_hugetlb_page(vma))
		flags |= RCB_PAGE_HUGETLB;
	/* Shared and file pages would show other processes' references. */
	if (!admin && (!vma_is_anonymous(vma) || (vma->vm_flags & VM_SHARED)))
		flags |= RCB_PAGE_DENIED;
	return flags;
}

/* Take references on up to @nr present pages from @addr; 0 if none. */
static long refcnt_probe_get(struct refcnt_query *q, u64 addr,
			     unsigned int nr, struct page **pages)
{
	long got;

	if (q->own) {
		/* Lockless and batched; it stops at PROT_NONE and the like. */
		got = get_user_pages_fast_only(addr, nr, 0, pages);
		if (got > 0)
			return got;
	}
	/*
	 * The whole run, not one page: NUMA balancing makes 256 MiB at a
	 * time PROT_NONE, and a call per page of that was 3x slower.
	 */
	got = refcnt_gup_remote(q->mm, addr, nr, REFCNT_QUERY_GUP, pages);
	return max_t(long, got, 0);
}

/*
 * Probe @n pages at @addr, @step apart (PAGE_SIZE, or the granularity
 * when hardware pages are larger: their first base page stands for them).
 */
static void refcnt_probe(struct refcnt_query *q, u64 addr, unsigned int n,
			 u64 step)
{
	unsigned int i = 0;

	mmap_read_lock(q->mm);
	while (i < n) {
		u64 a = addr + (u64)i * step, next;
		struct vm_area_struct *vma = find_vma(q->mm, a);
		unsigned int run, j;
		u8 vma_shift;
		u32 flags;
		long got;

		if (!vma || vma->vm_start > a) {
			/* A hole, up to the next VMA: nothing present. */
			next = vma ? vma->vm_start : U64_MAX;
			do {
				q->probes[i++].page = NULL;
			} while (i < n && addr + (u64)i * step < next);
			continue;
		}
		run = 1;
		if (step == PAGE_SIZE)
			run = min_t(u64, n - i, (vma->vm_end - a) >> PAGE_SHIFT);
		got = refcnt_probe_get(q, a, run, q->pages + q->nr_pages);
		if (!got) {
			q->probes[i++].page = NULL;
			continue;
		}
		flags = refcnt_vma_flags(vma, q->admin);
		vma_shift = ilog2(vma_kernel_pagesize(vma));
		for (j = 0; j < got; j++) {
			struct refcnt_probe *p = &q->probes[i + j];
			struct folio *folio;

			p->page = q->pages[q->nr_pages + j];
			p->flags = flags;
			p->shift = vma_shift;
			if (flags & RCB_PAGE_HUGETLB)
				continue;
			folio = page_folio(p->page);
			if (folio_test_large(folio)) {
				p->flags |= RCB_PAGE_THP;
				p->shift = PAGE_SHIFT + folio_order(folio);
			}
		}
		q->nr_pages += got;
		i += got;
	}
	mmap_read_unlock(q->mm);
}

/* Stage the counters of the set that counts @paddr; false when none does. */
static bool refcnt_stage_counters(struct refcnt_query *q, u32 *out, u64 paddr)
{
	const struct refcnt_slot *slot;
	unsigned int c, cps = refcnt_topo.counters_per_set;
	struct refcnt_sparse *sp;
	u32 *word;
	u64 first;

	slot = refcnt_slot_lookup_near(paddr, &q->slot_hint);
	if (!slot) {
		memset(out, 0, cps * sizeof(*out));
		return false;
	}
	first = (slot->first_set + ((paddr - slot->base) >>
				    refcnt_cfg.granularity_shift)) * cps;
	sp = q->extended ? &slot->node->table.counters : &slot->node->hw;
	/* A reset frees counter pages only after an RCU-sched grace period. */
	rcu_read_lock_sched();
	word = refcnt_sparse_word(sp, first);
	if (first % (PAGE_SIZE / 4) + cps <= PAGE_SIZE / 4) {
		/* The whole set in one page of the array (the usual case). */
		for (c = 0; c < cps; c++)
			out[c] = word ? READ_ONCE(word[c]) : 0;
	} else {
		for (c = 0; c < cps; c++)
			out[c] = refcnt_sparse_read(sp, first + c);
	}
	rcu_read_unlock_sched();
	return true;
}

/* The staged entries as they are: struct rcb_page_set, 8 bytes a store. */
static int refcnt_flush_packed(struct refcnt_query *q)
{
	const u64 *w = (const u64 *)q->staged;
	u64 __user *u = (u64 __user *)q->ubuf;
	size_t i, n = q->nr_staged * q->stride / sizeof(u64);

	if (!user_access_begin(u, n * sizeof(u64)))
		return -EFAULT;
	for (i = 0; i < n; i++)
		unsafe_put_user(w[i], &u[i], efault);
	user_access_end();
	q->ubuf = (u8 __user *)(u + n);
	q->nr_staged = 0;
	return 0;
efault:
	user_access_end();
	return -EFAULT;
}

/* The staged entries as struct rcb_page_counters, all 288 bytes of each. */
static int refcnt_flush(struct refcnt_query *q)
{
	unsigned int pairs = DIV_ROUND_UP(refcnt_topo.counters_per_set, 2);
	struct rcb_page_counters __user *u = (void __user *)q->ubuf;
	unsigned int i, c;

	if (!q->nr_staged)
		return 0;
	if (q->packed)
		return refcnt_flush_packed(q);
	if (!user_access_begin(u, q->nr_staged * sizeof(*u)))
		return -EFAULT;
	for (i = 0; i < q->nr_staged; i++, u++) {
		const struct rcb_page_set *e =
			(const void *)(q->staged + i * q->stride);
		/* Counters by pairs (refcnt[] is 8-aligned in both forms). */
		const u64 *cnt = (const u64 *)e->refcnt;
		u64 __user *ucnt = (u64 __user *)u->refcnt;

		for (c = 0; c < pairs; c++)
			unsafe_put_user(cnt[c], &ucnt[c], efault);
		for (; c < RCB_MAX_COUNTERS / 2; c++)
			unsafe_put_user(0ULL, &ucnt[c], efault);
		unsafe_put_user((u64)e->flags, &u->flags, efault);
		unsafe_put_user(e->paddr, &u->paddr, efault);
		unsafe_put_user(e->page_shift ? 1ULL << e->page_shift : 0,
				&u->page_size, efault);
		unsafe_put_user((s32)e->cnodeid, &u->cnodeid, efault);
		unsafe_put_user(0U, &u->pad, efault);
	}
	user_access_end();
	q->ubuf = (u8 __user *)u;
	q->nr_staged = 0;
	return 0;
efault:
	user_access_end();
	return -EFAULT;
}

/* Stage the entry of the hardware page at @offset into probed page @p. */
static int refcnt_stage(struct refcnt_query *q, const struct refcnt_probe *p,
			u64 offset)
{
	struct rcb_page_set *e = (void *)(q->staged + q->nr_staged * q->stride);
	unsigned int cps = refcnt_topo.counters_per_set;
	u32 flags = 0;
	u64 paddr;

	e->paddr = 0;
	e->cnodeid = -1;
	e->page_shift = 0;
	e->pad = 0;
	if (cps % 2)
		e->refcnt[cps] = 0;
	if (p->page) {
		flags = p->flags;
		e->page_shift = p->shift;
	}
	if (p->page && !(flags & RCB_PAGE_DENIED)) {
		paddr = PFN_PHYS(page_to_pfn(p->page)) + offset;
		paddr = round_down(paddr, refcnt_cfg.granularity);
		e->cnodeid = refcnt_topo.nid_to_cnode[page_to_nid(p->page)];
		if (!refcnt_stage_counters(q, e->refcnt, paddr))
			flags |= RCB_PAGE_UNCOUNTED;
		if (q->admin)
			e->paddr = paddr;
	} else {
		memset(e->refcnt, 0, cps * sizeof(e->refcnt[0]));
	}
	e->flags = flags;
	if (++q->nr_staged < REFCNT_QUERY_BATCH)
		return 0;
	return refcnt_flush(q);
}

/* Probe the pages under hardware pages [*h, end) and write their entries. */
static int refcnt_query_chunk(struct refcnt_query *q, u64 *h, u64 end)
{
	u64 gran = refcnt_cfg.granularity, base = round_down(*h, PAGE_SIZE);
	u64 step = max_t(u64, gran, PAGE_SIZE);
	unsigned int n, i;
	int err = 0;

	n = min_t(u64, REFCNT_QUERY_PROBES, DIV_ROUND_UP(end - base, step));
	q->nr_pages = 0;
	refcnt_probe(q, base, n, step);

	for (i = 0; i < n && !err; i++) {
		u64 page_start = base + i * step;
		u64 page_end = min(page_start + step, end);

		for (; *h < page_end && !err; *h += gran)
			err = refcnt_stage(q, &q->probes[i],
					   gran < PAGE_SIZE ? *h - page_start : 0);
	}
	if (!err)
		err = refcnt_flush(q);
	release_pages(q->pages, q->nr_pages);
	return err;
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

static int refcnt_query_alloc(struct refcnt_query *q)
{
	q->stride = RCB_PAGE_SET_SIZE(refcnt_topo.counters_per_set);
	q->probes = kvcalloc(REFCNT_QUERY_PROBES, sizeof(*q->probes),
			     GFP_KERNEL);
	q->pages = kvcalloc(REFCNT_QUERY_PROBES, sizeof(*q->pages), GFP_KERNEL);
	q->staged = kvmalloc_array(REFCNT_QUERY_BATCH, q->stride, GFP_KERNEL);
	return q->probes && q->pages && q->staged ? 0 : -ENOMEM;
}

static void refcnt_query_free(struct refcnt_query *q)
{
	kvfree(q->staged);
	kvfree(q->pages);
	kvfree(q->probes);
}

/**
 * refcnt_range_query() - RCB_RANGE_QUERY
 * @rq:		the query, checked here; nr_entries is set
 *
 * Return: 0 or a negative errno (see uapi/linux/refcnt.h).
 */
int refcnt_range_query(struct rcb_range_query *rq)
{
	struct refcnt_query q = {
		.ubuf = u64_to_user_ptr(rq->buf),
		.extended = rq->flags & RCB_RANGE_EXTENDED,
		.packed = rq->flags & RCB_RANGE_PACKED,
		.admin = capable(CAP_SYS_ADMIN),
	};
	struct task_struct *task;
	u64 h, end, needed;
	int err;

	if (rq->flags & ~RCB_RANGE_FLAGS || !rq->len)
		return -EINVAL;
	if (check_add_overflow(rq->vaddr, rq->len, &end) || end > TASK_SIZE_MAX)
		return -EINVAL;
	h = round_down(rq->vaddr, refcnt_cfg.granularity);
	needed = DIV_ROUND_UP(end - h, refcnt_cfg.granularity);
	if (needed > rq->buf_entries) {
		rq->nr_entries = needed;	/* tell the caller what it takes */
		return -E2BIG;
	}

	task = refcnt_query_task(rq->pid);
	if (IS_ERR(task))
		return PTR_ERR(task);
	q.mm = get_task_mm(task);
	put_task_struct(task);
	if (!q.mm)
		return -ESRCH;
	q.own = q.mm == current->mm;

	err = refcnt_query_alloc(&q);
	rq->nr_entries = 0;
	while (!err && h < end) {
		u64 before = h;

		err = refcnt_query_chunk(&q, &h, end);
		rq->nr_entries += (h - before) / refcnt_cfg.granularity;
		if (!err && fatal_signal_pending(current))
			err = -EINTR;
		cond_resched();
	}
	refcnt_query_free(&q);
	mmput(q.mm);
	return err;
}
