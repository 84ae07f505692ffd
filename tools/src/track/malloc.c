// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt-track.so: the malloc family. A small allocation from the same
 * return address as the thread's last one is counted before the real call,
 * which is then a tail call (track_small_fast()); any other call goes to
 * the real allocator first and what it returned is then recorded: a large
 * allocation (the threshold, REFCNT_TRACK_THRESHOLD) as an object, a small
 * one folded into the site of its return address. free() and realloc()
 * end a large object. Calls made while the tracker itself runs, or before
 * the real functions are known (dlsym allocates), pass through; so do the
 * mmap()s an allocator makes for itself while it serves a call (jemalloc's,
 * for one: that memory holds the allocations, which are recorded), and
 * that keeps the tracker from anything that could allocate while the
 * allocator holds its locks.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "track.h"

#define RA()	((uintptr_t)__builtin_return_address(0))

/* The real allocator's call, with the tracker off for what it calls. */
#define REAL_CALL(expr)	({ track_busy++; __typeof__(expr) r_ = (expr); track_busy--; r_; })

/* Record p, size bytes of kind, allocated from ra. */
static inline __attribute__((always_inline)) void note(void *p, size_t size,
						     enum track_kind kind, uintptr_t ra)
{
	if (!p || !track_on())
		return;
	if (size >= T.threshold) {
		track_count(kind == TRACK_CALLOC ? TRACK_CALL_CALLOC :
			    kind == TRACK_REALLOC ? TRACK_CALL_REALLOC :
			    kind == TRACK_MEMALIGN ? TRACK_CALL_MEMALIGN :
			    TRACK_CALL_MALLOC);
		track_large(p, size, size, kind, -1);
	} else {
		track_small(p, size, kind, ra);
	}
}

/* The real functions, or NULL while dlsym resolves them. */
static inline int ready(void *fn)
{
	if (likely(fn != NULL))
		return 1;
	track_init();
	return 0;
}

/*
 * The wrappers' fast path (track_small_fast()) tail-calls the real
 * function; the rest, the full way, is in these. track_small_fast() never
 * passes before the real functions are known: no return address is
 * counted before the table is there.
 */
static __attribute__((noinline)) void *malloc_full(size_t size, uintptr_t ra)
{
	void *p;

	if (!ready(real.malloc) && !real.malloc)
		return track_boot_alloc(size);
	p = REAL_CALL(real.malloc(size));
	note(p, size, TRACK_MALLOC, ra);
	return p;
}

TRACK_API void *malloc(size_t size)
{
	if (likely(track_small_fast(size, RA())))
		return real.malloc(size);
	return malloc_full(size, RA());
}

static __attribute__((noinline)) void *calloc_full(size_t n, size_t size, uintptr_t ra)
{
	void *p;

	if (!ready(real.calloc) && !real.calloc)
		return track_boot_alloc(n * size);
	p = REAL_CALL(real.calloc(n, size));
	note(p, n * size, TRACK_CALLOC, ra);
	return p;
}

TRACK_API void *calloc(size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	if (likely(track_small_fast(n * size, RA())))
		return real.calloc(n, size);
	return calloc_full(n, size, RA());
}

/*
 * No "tracker at work" mark around the real free() (nor the fast path's
 * malloc()): what an allocator maps or unmaps for itself the mmap family's
 * wrappers pass through by their caller (track_from_allocator()).
 */
static __attribute__((noinline)) void free_full(void *p)
{
	if (!p || track_boot_owns(p))
		return;
	if (!ready(real.free) && !real.free)
		return;		/* nothing real was allocated yet */
	if (track_maybe_large(p) && T.h && !track_busy)
		track_release(p, 0, 0);
	real.free(p);
}

TRACK_API void free(void *p)
{
	if (likely(real.free && !track_maybe_large(p) && !track_boot_owns(p)))
		return real.free(p);
	free_full(p);
}

static __attribute__((noinline)) void *realloc_full(void *old, size_t size, uintptr_t ra)
{
	void *p;

	if (old && track_boot_owns(old)) {
		/* Bootstrap memory: its size is unknown, copy what fits. */
		p = malloc_full(size, ra);
		if (p)
			memcpy(p, old, size < 4096 ? size : 4096);
		return p;
	}
	if (!ready(real.realloc) && !real.realloc)
		return track_boot_alloc(size);
	/* The old object's counters up to now: it may move or be freed. */
	if (old && T.h && !track_busy && track_maybe_large(old))
		track_release(old, 0, TRACK_O_REALLOCED);
	p = REAL_CALL(real.realloc(old, size));
	if (size)
		note(p, size, TRACK_REALLOC, ra);
	return p;
}

TRACK_API void *realloc(void *old, size_t size)
{
	if (likely(size && !(old && (track_boot_owns(old) || track_maybe_large(old))) &&
		   track_small_fast(size, RA())))
		return real.realloc(old, size);
	return realloc_full(old, size, RA());
}
TRACK_API int posix_memalign(void **out, size_t align, size_t size)
{
	int rc;

	if (!ready(real.posix_memalign) && !real.posix_memalign)
		return ENOMEM;
	rc = REAL_CALL(real.posix_memalign(out, align, size));
	if (!rc)
		note(*out, size, TRACK_MEMALIGN, RA());
	return rc;
}

TRACK_API void *aligned_alloc(size_t align, size_t size)
{
	void *p;

	if (!ready(real.aligned_alloc) && !real.aligned_alloc)
		return NULL;
	p = REAL_CALL(real.aligned_alloc(align, size));
	note(p, size, TRACK_MEMALIGN, RA());
	return p;
}

TRACK_API void *memalign(size_t align, size_t size)
{
	void *p;

	if (!ready(real.memalign) && !real.memalign)
		return NULL;
	p = REAL_CALL(real.memalign(align, size));
	note(p, size, TRACK_MEMALIGN, RA());
	return p;
}

TRACK_API void *valloc(size_t size)
{
	void *p;

	if (!ready(real.valloc) && !real.valloc)
		return NULL;
	p = REAL_CALL(real.valloc(size));
	note(p, size, TRACK_MEMALIGN, RA());
	return p;
}

TRACK_API void *pvalloc(size_t size)
{
	void *p;

	if (!ready(real.pvalloc) && !real.pvalloc)
		return NULL;
	p = REAL_CALL(real.pvalloc(size));
	note(p, size, TRACK_MEMALIGN, RA());
	return p;
}
