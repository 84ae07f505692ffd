/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pmu_shim.h: just enough of the kernel for kmod/pmu*.c in user space.
 *
 * Included ahead of every file (-include); the kernel header names those
 * files use that user space lacks (linux/bits.h, linux/math64.h, ...) are
 * empty forwarders the Makefile makes. <linux/perf_event.h>,
 * <linux/types.h> and <linux/version.h> stay the system's uapi headers:
 * perf_event_attr and perf_mem_data_src are ABI, the same on both sides.
 */
#ifndef _PMU_SHIM_H
#define _PMU_SHIM_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t s64;

#define BIT(n)			(1UL << (n))
#define U32_MAX			((u32)~0U)
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define min_t(t, a, b)		({ t __a = (a); t __b = (b); __a < __b ? __a : __b; })
#define READ_ONCE(x)		(x)

static inline u64 div64_u64(u64 a, u64 b)
{
	return a / b;
}

static inline u64 mul_u64_u64_div_u64(u64 a, u64 b, u64 c)
{
	return (u64)((unsigned __int128)a * b / c);
}

/* What kmod/compat.h's 6.1 branches name (uapi version.h says 6.1). */
typedef unsigned long vm_flags_t;
struct vm_area_struct { vm_flags_t vm_flags; };
struct mm_struct;
struct page;
long get_user_pages_remote(struct mm_struct *mm, unsigned long start,
			   unsigned long nr_pages, unsigned int gup_flags,
			   struct page **pages, struct vm_area_struct **vmas,
			   int *locked);
#define CAP_SYS_ADMIN		21
bool capable(int cap);
bool PageKsm(struct page *page);
int page_mapcount(struct page *page);

#endif /* _PMU_SHIM_H */
