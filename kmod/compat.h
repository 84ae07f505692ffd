/* SPDX-License-Identifier: GPL-2.0 */
/*
 * refcnt: every difference between the kernels refcnt supports (6.1 to
 * 6.12) lives here, as small wrappers, so the rest never tests versions.
 */
#ifndef _REFCNT_COMPAT_H
#define _REFCNT_COMPAT_H

#include <linux/capability.h>
#include <linux/export.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/perf_event.h>
#include <linux/version.h>

/*
 * The symbol namespace of the feed interface (feed.h), for
 * EXPORT_SYMBOL_NS_GPL() and MODULE_IMPORT_NS(): 6.13 made namespaces
 * string literals; 6.1 to 6.12 stringify a bare name.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
#define REFCNT_NS	"REFCNT"
#else
#define REFCNT_NS	REFCNT
#endif

/*
 * The kernel refcnt runs on, for the PMU planners (pmu.h), which take it
 * as data so that tools/testing/pmu can plan for every kernel.
 */
static inline u32 refcnt_kernel_version(void)
{
	return LINUX_VERSION_CODE;
}

/*
 * Data-source levels later kernels name (6.12's uapi perf_event.h) and
 * 6.1's does not: perf_mem_data_src is ABI, so the numbers hold.
 */
#ifdef PERF_MEM_LVLNUM_MSC
#define REFCNT_PERF_MEM_LVLNUM_L2_MHB	PERF_MEM_LVLNUM_L2_MHB
#define REFCNT_PERF_MEM_LVLNUM_MSC	PERF_MEM_LVLNUM_MSC
#else
#define REFCNT_PERF_MEM_LVLNUM_L2_MHB	0x05	/* L2 miss handling buffer */
#define REFCNT_PERF_MEM_LVLNUM_MSC	0x06	/* memory-side cache */
#endif
#ifdef PERF_MEM_LVLNUM_UNC
#define REFCNT_PERF_MEM_LVLNUM_UNC	PERF_MEM_LVLNUM_UNC
#else
#define REFCNT_PERF_MEM_LVLNUM_UNC	0x08	/* uncached */
#endif

/*
 * hw.interrupts of an event perf throttled: kernel/events/core.c's
 * MAX_INTERRUPTS, private to it, at 6.1 and 6.12. __perf_event_overflow()
 * sets it before it calls the overflow handler, so the handler of the
 * sample that throttles sees it.
 */
#define REFCNT_PERF_MAX_INTERRUPTS	(~0ULL)

/* 6.3 made vma->vm_flags read-only behind vm_flags_{set,clear,mod}(). */
static inline void refcnt_vm_flags_mod(struct vm_area_struct *vma,
				       vm_flags_t set, vm_flags_t clear)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_mod(vma, set, clear);
#else
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
#endif
}

/* 6.5 dropped the vmas argument of get_user_pages_remote(). */
static inline long refcnt_gup_remote(struct mm_struct *mm, unsigned long start,
				     unsigned long nr_pages,
				     unsigned int gup_flags,
				     struct page **pages)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
	return get_user_pages_remote(mm, start, nr_pages, gup_flags, pages,
				     NULL);
#else
	return get_user_pages_remote(mm, start, nr_pages, gup_flags, pages,
				     NULL, NULL);
#endif
}

/*
 * What gup needs to follow a page NUMA balancing made PROT_NONE in an
 * accessible mapping, without a fault. Before 6.6 gup sees a hinting
 * fault to make there unless FOLL_FORCE (6.1's gup_can_follow_protnone());
 * 6.6 left that to callers that ask FOLL_HONOR_NUMA_FAULT (KVM): plain
 * gup follows the page.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 6, 0)
#define REFCNT_FOLL_NUMA_HINTED	0
#else
#define REFCNT_FOLL_NUMA_HINTED	FOLL_FORCE
#endif

/*
 * May the caller have a perf event that counts the kernel or samples
 * physical addresses? The kernel's answer, perf_allow_kernel() (the
 * paranoid level above 1 asks perfmon_capable(); then the LSM hook),
 * where it is exported: 6.12, the first of refcnt's kernels that does;
 * without its attr argument from 6.12.113 (Kbuild tells by the header).
 * 6.1 has it inline, on sysctl_perf_event_paranoid and
 * security_perf_event_open(), neither exported: there CAP_SYS_ADMIN only,
 * what perf_event_open() asks at every level, Debian's 3 included.
 */
static inline int refcnt_perf_allow_kernel(struct perf_event_attr *attr)
{
#if defined(REFCNT_PERF_ALLOW_KERNEL_VOID)
	return perf_allow_kernel();
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
	return perf_allow_kernel(attr);
#else
	return capable(CAP_SYS_ADMIN) ? 0 : -EACCES;
#endif
}

/*
 * May another process reference anonymous page @page, mapped where it is
 * found (so that its folio is stable)? A KSM page, or one mapped more
 * than once: shared since a fork, until a write copies it. 6.12 has
 * folio_likely_mapped_shared() (a large folio mapped once per page is
 * not shared) and no page_mapcount(); 6.1 has page_mapcount(), a
 * PMD-mapped THP's mappings included.
 */
static inline bool refcnt_page_shared(struct page *page)
{
	if (PageKsm(page))
		return true;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
	return folio_likely_mapped_shared(page_folio(page));
#else
	return page_mapcount(page) > 1;
#endif
}

/*
 * An NMI IPI to CPU @cpu's own mask (the rig's test PMU, as
 * arch/x86/kernel/nmi_selftest.c sends one; the caller includes
 * <asm/apic.h>): 6.6 made the APIC's callbacks static calls and stopped
 * exporting apic, whose send_IPI_mask() 6.1 calls.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 6, 0)
#define refcnt_send_nmi_ipi(cpu) \
	__apic_send_IPI_mask(cpumask_of(cpu), NMI_VECTOR)
#else
#define refcnt_send_nmi_ipi(cpu) \
	apic->send_IPI_mask(cpumask_of(cpu), NMI_VECTOR)
#endif

#endif /* _REFCNT_COMPAT_H */
