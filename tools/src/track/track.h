/* SPDX-License-Identifier: GPL-2.0 */
/*
 * librefcnt-track.so, the allocation tracker refcnt-run preloads into its
 * command: its parts and what they share.
 *
 *   state.c    what the parts share: the real functions, the table, the
 *              bootstrap heap, clock and thread id
 *   init.c     start-up, the real functions (dlsym RTLD_NEXT), the table
 *              file, fork
 *   malloc.c   malloc, calloc, realloc, free and the aligned allocators
 *   mmap.c     mmap, munmap, mremap and libnuma's numa_alloc_* / numa_free
 *   sites.c    call sites: the return address of a small allocation, the
 *              call stack of a large one (glibc's backtrace())
 *   small.c    the small allocations' fast path: a per-thread cache of
 *              the last site and of the counts not yet added to it
 *   objects.c  large allocations and mappings: the objects, the live ones
 *              by address, and the readings of their counters
 *   pages.c    the page map: which site last allocated on each base page
 *
 * The fast path (a small allocation from the same return address as the
 * thread's last one, TRACK_SAMPLE_BYTES not yet reached), inlined into the
 * wrappers before the real call, costs a compare and three adds in
 * thread-local memory and lets the wrapper tail-call the real allocator;
 * the other small allocations (one every TRACK_SAMPLE_BYTES of a site, and
 * every change of return address) mark their pages in the page map and add
 * the thread's counts to their site with two atomic adds; a new return
 * address costs a hash probe. A large allocation takes
 * its call stack and, where the counters can be read, reads them
 * (objects.c).
 */
#ifndef REFCNT_TRACK_H
#define REFCNT_TRACK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "track-table.h"

#define TRACK_API	__attribute__((visibility("default")))
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

/* The functions the tracker stands in front of. */
struct track_real {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	int (*munmap)(void *, size_t);
	void *(*mremap)(void *, size_t, size_t, int, ...);
};

extern struct track_real real;

/* The table and what the tracker knows of the machine. */
struct track_state {
	struct track_header *h;		/* NULL: not recording (pass-through) */
	size_t size;
	struct track_site *sites;
	uint32_t *index;
	struct track_obj *objs;
	struct track_reading *reads;
	uint64_t *keys;
	uint32_t *leaves;
	uint64_t threshold;
	int nr_counters;		/* 0: the counters cannot be read */
	int nodes_per_counter;
	uint64_t granularity;
	uintptr_t alloc_lo, alloc_hi;	/* the real malloc()'s code */
};

extern struct track_state T;

/*
 * Set while the tracker itself runs (or calls something that allocates:
 * dlsym, backtrace, librefcnt): allocations then pass straight through.
 */
extern __thread int track_busy __attribute__((tls_model("initial-exec")));

/* init.c */
void track_init(void);		/* idempotent, early callers included */

/* state.c */
void *track_boot_alloc(size_t size);
void track_tid_forget(void);
#define TRACK_BOOT_SIZE	(256 * 1024)
extern char track_boot_heap[TRACK_BOOT_SIZE];

static inline int track_boot_owns(const void *p)
{
	return (uintptr_t)p - (uintptr_t)track_boot_heap < TRACK_BOOT_SIZE;
}
uint64_t track_now_ns(void);
pid_t track_tid(void);

static inline int track_on(void)
{
	return T.h && !track_busy;
}

static inline void track_count(enum track_call c)
{
	if (T.h)
		__atomic_fetch_add(&T.h->calls[c], 1, __ATOMIC_RELAXED);
}

/* sites.c */
/* Site of small allocations called from ra (index), or -1 if full. */
int track_site_small(uintptr_t ra, enum track_kind kind);
/* Site of a large allocation: the caller's call stack; -1 if full. */
int track_site_stack(enum track_kind kind);
/* Load what taking a stack needs (libgcc_s), at start-up. */
void track_stack_prime(void);
/* The executable segment holding addr: [*lo, *hi), or 0, 0. */
void track_text_of(uintptr_t addr, uintptr_t *lo, uintptr_t *hi);

/*
 * Was the mmap family called by the real allocator (jemalloc's own mmap()
 * serving a malloc())? Passed through then: that memory holds
 * allocations that are recorded, and the allocator may hold its locks.
 */
static inline int track_from_allocator(uintptr_t ra)
{
	return ra >= T.alloc_lo && ra < T.alloc_hi;
}

/* pages.c */
void track_pages_mark(const void *p, size_t size, int site);
/* The calling thread's last leaf: its key and its entries. */
extern __thread uint64_t track_last_key __attribute__((tls_model("initial-exec")));
extern __thread uint32_t *track_last_leaf __attribute__((tls_model("initial-exec")));

/* small.c */
/*
 * The calling thread's last site of small allocations: its return
 * address, its site, the calls and bytes not yet added to it, the last
 * page marked for it (0 while none is, or the site is -1), and the bytes
 * (plus one a call) before the tracker looks at one of its allocations in
 * full again.
 */
struct track_tcache {
	uintptr_t ra;
	int site;
	uint32_t calls;
	uint64_t bytes;
	uintptr_t page;		/* its address; 0: none */
	int64_t left;
	int keyed;
};

extern __thread struct track_tcache track_tc __attribute__((tls_model("initial-exec")));

/*
 * A small allocation of size bytes from ra counted, before the real call:
 * 1 if that is all it needs (the same return address as the thread's
 * last one, and less than TRACK_SAMPLE_BYTES since the last allocation
 * looked at in full: the caller then tail-calls the real allocator), 0 if
 * it needs track_small() or track_large() after the real call. Large
 * allocations never pass: left is at most the threshold.
 */
static inline int track_small_fast(size_t size, uintptr_t ra)
{
	struct track_tcache *c = &track_tc;

	if (likely(c->ra == ra && (int64_t)(c->left -= (int64_t)size + 1) > 0)) {
		c->calls++;
		c->bytes += size;
		return 1;
	}
	return 0;
}

/*
 * A small allocation of size bytes at p from ra, in full: its site (a
 * hash probe when the return address is new), the thread's counts added
 * to the site, and the pages it lies on marked for the site.
 */
void track_small(void *p, size_t size, enum track_kind kind, uintptr_t ra);
/* The calling thread's counts not yet added to their site, added. */
void track_small_flush(void);
void track_small_init(void);

/* objects.c */
void track_large(void *p, size_t size, size_t len, enum track_kind kind,
		 int arg_node);
/*
 * A free, munmap (of len bytes, 0: all) or realloc of p: the end of the
 * object starting there, if there is one, with flags (TRACK_O_*) added.
 * Its index, or -1.
 */
int track_release(void *p, size_t len, uint32_t flags);
/* mremap moved or resized a mapping: the object follows it. */
void track_moved(void *old, void *p, size_t len);
/* mbind() on the object starting at p: placed on purpose, on node. */
void track_placed(void *p, int node);
#define TRACK_FILTER_BITS	(1U << 14)	/* 2 KiB: it stays in the L1 cache */
extern uint64_t track_filter[TRACK_FILTER_BITS / 64];

static inline uint32_t track_hash_addr(uint64_t a)
{
	a ^= a >> 31;
	a *= 0x9e3779b97f4a7c15ULL;
	return (uint32_t)(a >> 32);
}

/*
 * The start addresses of the large objects live so far lie in
 * [track_large_lo, track_large_hi) (0, 0: none yet; it never shrinks).
 */
extern uintptr_t track_large_lo, track_large_hi;

/*
 * May p be a live large object? Two loads and a compare for a pointer out
 * of the range of large objects' starts (a heap's small allocations,
 * mostly), one more load for any other pointer.
 */
static inline int track_maybe_large(const void *p)
{
	uintptr_t lo = __atomic_load_n(&track_large_lo, __ATOMIC_RELAXED);
	uintptr_t hi = __atomic_load_n(&track_large_hi, __ATOMIC_RELAXED);
	uint32_t b;

	if ((uintptr_t)p - lo >= hi - lo)
		return 0;
	b = track_hash_addr((uintptr_t)p) & (TRACK_FILTER_BITS - 1);
	return (__atomic_load_n(&track_filter[b / 64], __ATOMIC_RELAXED) >> (b % 64)) & 1;
}
void track_objects_init(void);
void track_readings_init(struct track_header *h);
void track_own_memory(struct track_header *h);

#endif /* REFCNT_TRACK_H */
