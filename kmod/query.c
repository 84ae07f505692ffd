// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt: RCB_RANGE_QUERY, the counters of a virtual range of a process
 * (refcnt(5) PIOCGETSN0REFCNTRS and PIOCGETSN0EXTREFCNTRS).
 *
 * One entry per hardware page of the range, in two phases per chunk:
 *  - probe: under the target's mmap lock, read its page tables with
 *    hmm_range_fault(), which takes no page reference and faults nothing
 *    in; its results are used under the lock the query's interval
 *    notifier takes, so the pages seen stay mapped meanwhile: each
 *    page's frame and node are read then (or under gup's reference),
 *    never after, when the page may be offline. gup with FOLL_NOFAULT
 *    does the rest: the pages the walk does not call valid though mapped
 *    (NUMA balancing's PROT_NONE), PROT_NONE mappings, and chunks whose
 *    walk an invalidation disturbed; FOLL_FORCE only where gup needs it
 *    (refcnt_gup_flags()). VM_IO | VM_PFNMAP mappings read as empty;
 *  - write: with the lock dropped (writing to the caller may fault, and
 *    the caller may be the target), look up each page's set and write the
 *    entries with one user-access section per batch. Entries are staged
 *    as struct rcb_page_set, which RCB_RANGE_PACKED copies out as they
 *    are; the full form adds the zeros of the counters the machine does
 *    not have, straight to user memory. Pages physically in a row take
 *    their sets in a row: a run skips the slot and counter page lookups.
 *
 * Like /proc/pid/pagemap, the query reports what the page tables said
 * while it read them; it does not retry when they change after.
 */
#include <linux/capability.h>
#include <linux/hmm.h>
#include <linux/hugetlb.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
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

/**
 * struct refcnt_probe - what one probed page of the range is mapped to
 * @pfn:	page frame number of the page, when @flags is not 0
 * @nid:	its node, read while the page could not go (mapped under the
 *		notifier lock, or referenced by gup): once the lock is
 *		dropped, offlining may poison its struct page and hot-remove
 *		unmap it
 * @flags:	RCB_PAGE_* known from the VMA and the mapping; 0 when the
 *		page is not present
 * @shift:	log2 of the bytes of the page mapping it (hugetlb, THP)
 * @gup:	the walk saw an entry it does not call valid: gup reads it
 */
struct refcnt_probe {
	unsigned long pfn;
	int nid;
	u32 flags;
	u8 shift;
	bool gup;
};

/**
 * struct refcnt_query - one RCB_RANGE_QUERY in progress
 * @mm:		the target's address space
 * @notifier:	interval notifier over the range, for hmm_range_fault()
 * @notifier_lock: taken by @notifier's invalidations; held while the
 *		results of a walk are used
 * @walk:	@notifier is inserted: page tables are read by
 *		hmm_range_fault(), else by gup
 * @admin:	the caller has CAP_SYS_ADMIN (paddr, shared memory)
 * @extended:	report extended counters, else hardware ones
 * @packed:	write struct rcb_page_set entries, else rcb_page_counters
 * @slot_hint:	for refcnt_slot_lookup_run()
 * @run_paddr:	the hardware page after the last one staged
 * @run_word:	the counters of its set, if @run_sets (NULL: all 0)
 * @run_sets:	sets from @run_word on that @run_slot counts, in the same
 *		page of its counter array: pages physically in a row
 *		skip the lookup
 * @run_slot:	the slot of the last hardware page staged
 * @probes:	REFCNT_QUERY_PROBES probed pages
 * @pfns:	REFCNT_QUERY_PROBES hmm_range_fault() results
 * @pages:	page references held for pages gup found, released per chunk
 * @nr_pages:	entries of @pages in use
 * @stride:	bytes of a staged entry, RCB_PAGE_SET_SIZE(counters per set)
 * @staged:	REFCNT_QUERY_BATCH entries waiting to be written, as
 *		struct rcb_page_set whatever the form asked
 * @nr_staged:	entries of @staged in use
 * @ubuf:	where the next entry goes in the caller's buffer
 */
struct refcnt_query {
	struct mm_struct *mm;
	struct mmu_interval_notifier notifier;
	/* Invalidations wait on it while a walk's pages are looked at. */
	spinlock_t notifier_lock;
	bool walk;
	bool admin;
	bool extended;
	bool packed;
	unsigned int slot_hint;
	u64 run_paddr;
	const u32 *run_word;
	u64 run_sets;
	const struct refcnt_slot *run_slot;
	struct refcnt_probe *probes;
	unsigned long *pfns;
	struct page **pages;
	unsigned int nr_pages;
	unsigned int stride;
	u8 *staged;
	unsigned int nr_staged;
	u8 __user *ubuf;
};

/*
 * An invalidation of the range: pages the last walk saw may be going.
 * It waits for a chunk whose walk it did not disturb to be done with its
 * pages, and makes the others fall back to gup.
 */
static bool refcnt_query_invalidate(struct mmu_interval_notifier *sub,
				    const struct mmu_notifier_range *range,
				    unsigned long cur_seq)
{
	struct refcnt_query *q = container_of(sub, struct refcnt_query,
					      notifier);

	spin_lock(&q->notifier_lock);
	mmu_interval_set_seq(sub, cur_seq);
	spin_unlock(&q->notifier_lock);
	return true;
}

static const struct mmu_interval_notifier_ops refcnt_query_notifier_ops = {
	.invalidate = refcnt_query_invalidate,
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

/*
 * Read the page tables of @nr base pages at @addr into @q->pfns, taking
 * no page reference and faulting nothing in. False if an invalidation
 * got in the way: gup does the work then. @seq is for
 * mmu_interval_read_retry().
 */
static bool refcnt_probe_walk(struct refcnt_query *q, u64 addr,
			      unsigned int nr, unsigned long *seq)
{
	struct hmm_range range = {
		.notifier = &q->notifier,
		.start = addr,
		.end = addr + (u64)nr * PAGE_SIZE,
		.hmm_pfns = q->pfns,
	};

	if (!q->walk)
		return false;
	range.notifier_seq = mmu_interval_read_begin(&q->notifier);
	*seq = range.notifier_seq;
	return !hmm_range_fault(&range);
}

/* The mappings hmm_range_fault() reads; it reports the others as errors. */
static bool refcnt_vma_walked(struct vm_area_struct *vma)
{
	return (vma->vm_flags & VM_READ) &&
	       !(vma->vm_flags & (VM_IO | VM_PFNMAP));
}

/* Mappings of no struct page: neither the walk nor gup reads them. */
static bool refcnt_vma_unread(struct vm_area_struct *vma)
{
	return vma->vm_flags & (VM_IO | VM_PFNMAP);
}

/*
 * Page @p is @page, of @folio: a huge page if the folio is large. gup
 * holds a reference on it.
 */
static void refcnt_probe_set(struct refcnt_probe *p, struct page *page,
			     u32 flags, u8 shift, struct folio *folio)
{
	p->pfn = page_to_pfn(page);
	p->nid = page_to_nid(page);
	p->flags = flags;
	p->shift = shift;
	if (!(flags & RCB_PAGE_HUGETLB) && folio_test_large(folio)) {
		p->flags |= RCB_PAGE_THP;
		p->shift = PAGE_SHIFT + folio_order(folio);
	}
}

/*
 * Without CAP_SYS_ADMIN, an anonymous page another process may reference
 * too (KSM, or shared since a fork) is denied as shared mappings are: its
 * counters hold the other's references. @page is mapped or held.
 */
static void refcnt_probe_deny_shared(const struct refcnt_query *q,
				     struct refcnt_probe *p, struct page *page)
{
	if (!q->admin && !(p->flags & RCB_PAGE_DENIED) &&
	    refcnt_page_shared(page))
		p->flags |= RCB_PAGE_DENIED;
}

/*
 * gup's flags for @vma. FOLL_NOFAULT: the query reads what is mapped
 * and faults nothing in. FOLL_FORCE (never with FOLL_WRITE: it reads)
 * only where gup refuses a mapped page without it: in a mapping without
 * VM_READ (mprotect(PROT_NONE); pagemap shows its pages, so does the
 * query), and for @hinted pages, those NUMA balancing may have made
 * PROT_NONE, on kernels whose gup follows them only then (compat.h).
 */
static unsigned int refcnt_gup_flags(struct vm_area_struct *vma, bool hinted)
{
	if (!(vma->vm_flags & VM_READ))
		return FOLL_NOFAULT | FOLL_FORCE;
	return FOLL_NOFAULT | (hinted ? REFCNT_FOLL_NUMA_HINTED : 0);
}

/*
 * Probe with gup @nr base pages at @addr of @vma, into @out: for the
 * mappings the walk does not read, and when it could not run (then
 * every page may be @hinted). gup takes a reference on each page found,
 * dropped at the end of the chunk.
 */
static void refcnt_probe_gup(struct refcnt_query *q,
			     struct vm_area_struct *vma, u64 addr,
			     unsigned int nr, bool hinted,
			     struct refcnt_probe *out)
{
	unsigned int gup_flags = refcnt_gup_flags(vma, hinted);
	u32 flags = refcnt_vma_flags(vma, q->admin);
	u8 vma_shift = ilog2(vma_kernel_pagesize(vma));
	unsigned int i = 0, j;
	long got;

	while (i < nr) {
		/* The whole run per call: a call per page was 3x slower. */
		got = refcnt_gup_remote(q->mm, addr + (u64)i * PAGE_SIZE,
					nr - i, gup_flags,
					q->pages + q->nr_pages);
		if (got <= 0) {
			out[i++].flags = 0;
			continue;
		}
		for (j = 0; j < got; j++) {
			struct page *page = q->pages[q->nr_pages + j];

			refcnt_probe_set(&out[i + j], page, flags, vma_shift,
					 page_folio(page));
			refcnt_probe_deny_shared(q, &out[i + j], page);
		}
		q->nr_pages += got;
		i += got;
	}
}

/*
 * The walk's results for the @nr pages of @vma from page @i of the
 * window, into @out. The size of a page is that of the mapping the walk
 * saw (a PMD-mapped THP, a hugetlb page). Frames are read only from
 * entries with HMM_PFN_VALID, as Documentation/mm/hmm.rst has them. An
 * entry without it that is neither 0 (nothing mapped) nor an error is a
 * page mapped but inaccessible (NUMA balancing's PROT_NONE), which gup
 * reads (refcnt_gup_flags()): @gup says so, and refcnt_probe_pages()
 * asks it.
 * Not in hugetlb mappings, which NUMA balancing leaves alone (an entry
 * not present there is a page migrating). Under @q->notifier_lock with
 * the sequence unchanged since the walk: whatever the walk saw mapped
 * is still mapped, so its pages cannot go while we look at them.
 */
static void refcnt_probe_frames(struct refcnt_query *q,
				struct vm_area_struct *vma, unsigned int i,
				unsigned int nr, struct refcnt_probe *out)
{
	u32 flags = refcnt_vma_flags(vma, q->admin);
	u8 vma_shift = ilog2(vma_kernel_pagesize(vma));
	unsigned int j;

	for (j = 0; j < nr; j++) {
		unsigned long hmm_pfn = q->pfns[i + j];
		unsigned int order = hmm_pfn_to_map_order(hmm_pfn);
		struct refcnt_probe *p = &out[j];

		p->flags = 0;
		p->gup = false;
		if (hmm_pfn & HMM_PFN_VALID) {
			struct page *page = hmm_pfn_to_page(hmm_pfn);

			p->pfn = page_to_pfn(page);
			p->nid = page_to_nid(page);
			p->flags = flags;
			p->shift = vma_shift;
			if (!(flags & RCB_PAGE_HUGETLB) && order) {
				p->flags |= RCB_PAGE_THP;
				p->shift += order;
			}
			refcnt_probe_deny_shared(q, p, page);
		} else if (hmm_pfn && !(hmm_pfn & HMM_PFN_ERROR) &&
			   !(flags & RCB_PAGE_HUGETLB)) {
			p->gup = true;
		}
	}
}

/* gup the runs of the @nr probes at @addr that the walk left to it. */
static void refcnt_probe_gup_left(struct refcnt_query *q,
				  struct vm_area_struct *vma, u64 addr,
				  unsigned int nr, struct refcnt_probe *out)
{
	unsigned int i = 0, run;

	while (i < nr) {
		if (!out[i].gup) {
			i++;
			continue;
		}
		for (run = 1; i + run < nr && out[i + run].gup; run++)
			;
		refcnt_probe_gup(q, vma, addr + (u64)i * PAGE_SIZE, run,
				 true, out + i);
		i += run;
	}
}

/* The VMA under page @i of the window at @addr, NULL in a hole; @run set. */
static struct vm_area_struct *refcnt_probe_vma(struct refcnt_query *q,
					       u64 addr, unsigned int i,
					       unsigned int nr,
					       unsigned int *run)
{
	u64 a = addr + (u64)i * PAGE_SIZE;
	struct vm_area_struct *vma = find_vma(q->mm, a);

	if (!vma || vma->vm_start > a) {
		/* A hole, up to the next VMA. */
		*run = min_t(u64, nr - i,
			     ((vma ? vma->vm_start : TASK_SIZE_MAX) - a) >>
			     PAGE_SHIFT);
		*run = max(*run, 1U);
		return NULL;
	}
	*run = min_t(u64, nr - i, (vma->vm_end - a) >> PAGE_SHIFT);
	return vma;
}

/*
 * Probe @nr base pages at @addr into @out: the page tables as one walk,
 * then gup (which may sleep, so after the notifier lock) for the
 * mappings the walk does not read, or all if the walk could not run.
 */
static void refcnt_probe_pages(struct refcnt_query *q, u64 addr,
			       unsigned int nr, struct refcnt_probe *out)
{
	struct vm_area_struct *vma;
	unsigned int i, j, run;
	unsigned long seq;
	bool walked = refcnt_probe_walk(q, addr, nr, &seq);

	if (walked) {
		spin_lock(&q->notifier_lock);
		walked = !mmu_interval_read_retry(&q->notifier, seq);
		for (i = 0; walked && i < nr; i += run) {
			vma = refcnt_probe_vma(q, addr, i, nr, &run);
			if (vma && refcnt_vma_walked(vma))
				refcnt_probe_frames(q, vma, i, run, out + i);
		}
		spin_unlock(&q->notifier_lock);
	}
	for (i = 0; i < nr; i += run) {
		vma = refcnt_probe_vma(q, addr, i, nr, &run);
		if (!vma || refcnt_vma_unread(vma)) {
			for (j = 0; j < run; j++)
				out[i + j].flags = 0;
		} else if (!walked || !refcnt_vma_walked(vma)) {
			refcnt_probe_gup(q, vma, addr + (u64)i * PAGE_SIZE, run,
					 !walked, out + i);
		} else {
			refcnt_probe_gup_left(q, vma, addr + (u64)i * PAGE_SIZE,
					      run, out + i);
		}
	}
}

/*
 * Probe @n pages at @addr, @step apart (PAGE_SIZE, or the granularity
 * when hardware pages are larger: their first base page stands for them).
 */
static void refcnt_probe(struct refcnt_query *q, u64 addr, unsigned int n,
			 u64 step)
{
	unsigned int i;

	mmap_read_lock(q->mm);
	if (step == PAGE_SIZE)
		refcnt_probe_pages(q, addr, n, q->probes);
	else
		for (i = 0; i < n; i++)
			refcnt_probe_pages(q, addr + i * step, 1,
					   &q->probes[i]);
	mmap_read_unlock(q->mm);
}

/*
 * Stage the counters of the set that counts @paddr; NULL when none does.
 * Under rcu_read_lock(): a reset frees counter pages only after a
 * grace period, and the run keeps a pointer into one.
 */
static const struct refcnt_slot *
refcnt_stage_counters(struct refcnt_query *q, u32 *out, u64 paddr)
{
	unsigned int c, cps = refcnt_topo.counters_per_set;
	const u32 *word;

	if (paddr != q->run_paddr || !q->run_sets) {
		unsigned int shift = refcnt_cfg.granularity_shift;
		const struct refcnt_slot *slot;
		struct refcnt_sparse *sp;
		u64 first, end, in_page;

		q->run_sets = 0;
		slot = refcnt_slot_lookup_run(paddr, &q->slot_hint, &end);
		if (!slot) {
			memset(out, 0, cps * sizeof(*out));
			return NULL;
		}
		first = refcnt_set_first(refcnt_slot_set(slot, paddr));
		sp = refcnt_node_counters(slot->node, q->extended);
		in_page = (REFCNT_WORDS_PER_PAGE - first % REFCNT_WORDS_PER_PAGE) / cps;
		if (!in_page) {
			/* The set spans two pages of the array. */
			for (c = 0; c < cps; c++)
				out[c] = refcnt_sparse_read(sp, first + c);
			return slot;
		}
		q->run_slot = slot;
		q->run_paddr = paddr;
		q->run_word = refcnt_sparse_word(sp, first);
		q->run_sets = min(in_page, (end - paddr) >> shift);
	}
	word = q->run_word;
	for (c = 0; c < cps; c++)
		out[c] = word ? READ_ONCE(word[c]) : 0;
	q->run_word = word ? word + cps : NULL;
	q->run_paddr += refcnt_cfg.granularity;
	q->run_sets--;
	return q->run_slot;
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
static void refcnt_stage(struct refcnt_query *q, const struct refcnt_probe *p,
			 u64 offset)
{
	struct rcb_page_set *e = (void *)(q->staged + q->nr_staged * q->stride);
	unsigned int cps = refcnt_topo.counters_per_set;
	const struct refcnt_slot *slot;
	u32 flags = p->flags;
	s16 cnodeid = -1;
	u64 paddr = 0;

	if (cps % 2)
		e->refcnt[cps] = 0;
	if (flags && !(flags & RCB_PAGE_DENIED)) {
		paddr = round_down(PFN_PHYS(p->pfn) + offset,
				   refcnt_cfg.granularity);
		slot = refcnt_stage_counters(q, e->refcnt, paddr);
		if (slot) {
			/* A slot is memory of its node: no struct page read. */
			cnodeid = slot->node->cnodeid;
		} else {
			flags |= RCB_PAGE_UNCOUNTED;
			/* Its page may be offline now: the node read before. */
			cnodeid = refcnt_topo.nid_to_cnode[p->nid];
		}
		if (!q->admin)
			paddr = 0;
	} else {
		memset(e->refcnt, 0, cps * sizeof(e->refcnt[0]));
	}
	/* The header as one assignment, which the compiler merges. */
	*e = (struct rcb_page_set) {
		.paddr = paddr,
		.flags = flags,
		.cnodeid = cnodeid,
		.page_shift = flags ? p->shift : 0,
	};
	q->nr_staged++;
}

/* Probe the pages under hardware pages [*h, end) and write their entries. */
static int refcnt_query_chunk(struct refcnt_query *q, u64 *h, u64 end)
{
	u64 gran = refcnt_cfg.granularity, hw = *h;
	u64 base = round_down(hw, PAGE_SIZE), step = max_t(u64, gran, PAGE_SIZE);
	unsigned int n, i;
	int err = 0;

	n = min_t(u64, REFCNT_QUERY_PROBES, DIV_ROUND_UP(end - base, step));
	q->nr_pages = 0;
	refcnt_probe(q, base, n, step);

	q->run_sets = 0;
	rcu_read_lock();
	for (i = 0; i < n && !err; i++) {
		u64 page_start = base + i * step;
		u64 page_end = min(page_start + step, end);

		for (; hw < page_end && !err; hw += gran) {
			refcnt_stage(q, &q->probes[i],
				     gran < PAGE_SIZE ? hw - page_start : 0);
			if (q->nr_staged < REFCNT_QUERY_BATCH)
				continue;
			/* Writing to the caller may fault: not under RCU. */
			rcu_read_unlock();
			err = refcnt_flush(q);
			rcu_read_lock();
			q->run_sets = 0;
		}
	}
	rcu_read_unlock();
	if (!err)
		err = refcnt_flush(q);
	if (q->nr_pages)
		release_pages(q->pages, q->nr_pages);
	*h = hw;
	return err;
}

/* The mm of the process to query (target.c says which). */
static struct mm_struct *refcnt_query_mm(pid_t pid)
{
	struct task_struct *task;
	struct mm_struct *mm;

	task = refcnt_target_get(pid, &mm);
	if (IS_ERR(task))
		return ERR_CAST(task);
	put_task_struct(task);
	return mm;
}

static int refcnt_query_alloc(struct refcnt_query *q)
{
	q->stride = RCB_PAGE_SET_SIZE(refcnt_topo.counters_per_set);
	q->probes = kvcalloc(REFCNT_QUERY_PROBES, sizeof(*q->probes),
			     GFP_KERNEL);
	q->pfns = kvcalloc(REFCNT_QUERY_PROBES, sizeof(*q->pfns), GFP_KERNEL);
	q->pages = kvcalloc(REFCNT_QUERY_PROBES, sizeof(*q->pages), GFP_KERNEL);
	q->staged = kvmalloc_array(REFCNT_QUERY_BATCH, q->stride, GFP_KERNEL);
	return q->probes && q->pfns && q->pages && q->staged ? 0 : -ENOMEM;
}

static void refcnt_query_free(struct refcnt_query *q)
{
	kvfree(q->staged);
	kvfree(q->pages);
	kvfree(q->pfns);
	kvfree(q->probes);
}

/* Query [@h, @end) of @q->mm, chunk by chunk, for @rq. */
static int refcnt_query_run(struct refcnt_query *q, struct rcb_range_query *rq,
			    u64 h, u64 end)
{
	int err;

	/*
	 * hmm_range_fault() needs an interval notifier. Inserting the first
	 * one in an mm allocates its notifier state, for the mm's lifetime
	 * (design.rst); without it, gup does all the work, taking a
	 * reference per page.
	 */
	spin_lock_init(&q->notifier_lock);
	q->walk = !mmu_interval_notifier_insert(&q->notifier, q->mm,
						round_down(h, PAGE_SIZE),
						PAGE_ALIGN(end) -
						round_down(h, PAGE_SIZE),
						&refcnt_query_notifier_ops);

	err = refcnt_query_alloc(q);
	rq->nr_entries = 0;
	while (!err && h < end) {
		u64 before = h;

		err = refcnt_query_chunk(q, &h, end);
		rq->nr_entries += (h - before) / refcnt_cfg.granularity;
		if (!err && fatal_signal_pending(current))
			err = -EINTR;
		cond_resched();
	}
	refcnt_query_free(q);
	if (q->walk)
		mmu_interval_notifier_remove(&q->notifier);
	return err;
}

/**
 * refcnt_range_query() - RCB_RANGE_QUERY
 * @rq:		the query, checked here; nr_entries is set
 *
 * Return: 0 or a negative errno (see uapi/linux/refcnt.h).
 */
int refcnt_range_query(struct rcb_range_query *rq)
{
	struct refcnt_query *q;
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

	/* Not on the stack: its notifier alone is over 100 bytes. */
	q = kzalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return -ENOMEM;
	q->ubuf = u64_to_user_ptr(rq->buf);
	q->extended = rq->flags & RCB_RANGE_EXTENDED;
	q->packed = rq->flags & RCB_RANGE_PACKED;
	q->admin = capable(CAP_SYS_ADMIN);
	q->mm = refcnt_query_mm(rq->pid);
	err = PTR_ERR_OR_ZERO(q->mm);
	if (!err) {
		err = refcnt_query_run(q, rq, h, end);
		mmput(q->mm);
	}
	kfree(q);
	return err;
}
