// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt-track.so: mappings and libnuma's allocators. mmap() of the
 * threshold or more is an object (anonymous, or of a file); a smaller
 * anonymous one folds into its site like a small malloc(). munmap() ends
 * the object that starts where it starts; mremap() moves it. libnuma's
 * numa_alloc_*() are objects of their own kind (with the node asked for),
 * and the mmap() they make inside is not recorded twice. glibc's malloc
 * maps its large chunks with an internal mmap that no one can interpose:
 * those are malloc()'s objects. mbind() on an object records that its
 * placement was asked for.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "track.h"

#define RA()	((uintptr_t)__builtin_return_address(0))

static size_t page_round(size_t len)
{
	size_t psz = 4096;

	return (len + psz - 1) & ~(psz - 1);
}

TRACK_API void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		     off_t off)
{
	void *p;

	if (!real.mmap) {
		track_init();
		if (!real.mmap)
			return (void *)syscall(SYS_mmap, addr, len, prot, flags,
					       fd, off);
	}
	p = real.mmap(addr, len, prot, flags, fd, off);
	if (p == MAP_FAILED || !track_on() || track_from_allocator(RA()))
		return p;
	track_count(TRACK_CALL_MMAP);
	if (len >= T.threshold)
		track_large(p, len, page_round(len),
			    flags & MAP_ANONYMOUS ? TRACK_MMAP : TRACK_MMAP_FILE, -1);
	else if (flags & MAP_ANONYMOUS)
		track_small(p, len, TRACK_MMAP, RA());
	return p;
}

TRACK_API void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
		       off_t off) __attribute__((alias("mmap")));

TRACK_API int munmap(void *p, size_t len)
{
	if (!real.munmap) {
		track_init();
		if (!real.munmap)
			return (int)syscall(SYS_munmap, p, len);
	}
	if (T.h && !track_busy && !track_from_allocator(RA())) {
		track_count(TRACK_CALL_MUNMAP);
		if (track_maybe_large(p))
			track_release(p, len, 0);
	}
	return real.munmap(p, len);
}

TRACK_API void *mremap(void *old, size_t old_len, size_t len, int flags, ...)
{
	void *want = NULL, *p;
	va_list ap;

	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		want = va_arg(ap, void *);
		va_end(ap);
	}
	if (!real.mremap) {
		track_init();
		if (!real.mremap)
			return (void *)syscall(SYS_mremap, old, old_len, len,
					       flags, want);
	}
	p = real.mremap(old, old_len, len, flags, want);
	if (p != MAP_FAILED && T.h && !track_busy && !track_from_allocator(RA())) {
		track_count(TRACK_CALL_MREMAP);
		if (track_maybe_large(old))
			track_moved(old, p, page_round(len));
	}
	return p;
}

/* ------------------------------------------------------------ libnuma */

struct bitmask;

/* libnuma's own function name, found the first time it is called. */
#define NUMA_REAL(type, name, args)					\
	static type (*fn) args;						\
	if (!fn) {							\
		track_busy++;						\
		*(void **)&fn = dlsym(RTLD_NEXT, name);			\
		track_busy--;						\
		if (!fn) {						\
			errno = ENOSYS;					\
			return 0;					\
		}							\
	}

/* Record numa_alloc_*()'s p of size bytes, kind, asked for node. */
static void note_numa(void *p, size_t size, enum track_kind kind, int node,
		      uintptr_t ra)
{
	if (!p || !track_on())
		return;
	track_count(TRACK_CALL_NUMA_ALLOC);
	if (size >= T.threshold)
		track_large(p, size, page_round(size), kind, node);
	else
		track_small(p, size, kind, ra);
}

TRACK_API void *numa_alloc_onnode(size_t size, int node)
{
	void *p;

	NUMA_REAL(void *, "numa_alloc_onnode", (size_t, int));
	track_busy++;
	p = fn(size, node);
	track_busy--;
	note_numa(p, size, TRACK_NUMA_ONNODE, node, RA());
	return p;
}

TRACK_API void *numa_alloc_interleaved(size_t size)
{
	void *p;

	NUMA_REAL(void *, "numa_alloc_interleaved", (size_t));
	track_busy++;
	p = fn(size);
	track_busy--;
	note_numa(p, size, TRACK_NUMA_INTERLEAVED, -1, RA());
	return p;
}

TRACK_API void *numa_alloc_interleaved_subset(size_t size, struct bitmask *mask)
{
	void *p;

	NUMA_REAL(void *, "numa_alloc_interleaved_subset", (size_t, struct bitmask *));
	track_busy++;
	p = fn(size, mask);
	track_busy--;
	note_numa(p, size, TRACK_NUMA_INTERLEAVED, -1, RA());
	return p;
}

TRACK_API void *numa_alloc_local(size_t size)
{
	void *p;

	NUMA_REAL(void *, "numa_alloc_local", (size_t));
	track_busy++;
	p = fn(size);
	track_busy--;
	note_numa(p, size, TRACK_NUMA_LOCAL, -1, RA());
	return p;
}

TRACK_API void *numa_alloc(size_t size)
{
	void *p;

	NUMA_REAL(void *, "numa_alloc", (size_t));
	track_busy++;
	p = fn(size);
	track_busy--;
	note_numa(p, size, TRACK_NUMA_LOCAL, -1, RA());
	return p;
}

TRACK_API void *numa_realloc(void *old, size_t old_size, size_t size)
{
	void *p;

	NUMA_REAL(void *, "numa_realloc", (void *, size_t, size_t));
	if (old && T.h && !track_busy && track_maybe_large(old))
		track_release(old, 0, TRACK_O_REALLOCED);
	track_busy++;
	p = fn(old, old_size, size);
	track_busy--;
	note_numa(p, size, TRACK_NUMA_LOCAL, -1, RA());
	return p;
}

TRACK_API void numa_free(void *p, size_t size)
{
	static void (*fn)(void *, size_t);

	if (!fn) {
		track_busy++;
		*(void **)&fn = dlsym(RTLD_NEXT, "numa_free");
		track_busy--;
		if (!fn)
			return;
	}
	if (p && T.h && !track_busy) {
		track_count(TRACK_CALL_NUMA_FREE);
		if (track_maybe_large(p))
			track_release(p, size, 0);
	}
	track_busy++;
	fn(p, size);
	track_busy--;
}

/*
 * mbind() on an object: its placement was asked for, not left to the first
 * touch (refcnt-run advises it apart). The node is the first of the mask.
 */
TRACK_API long mbind(void *start, unsigned long len, int mode,
		     const unsigned long *nmask, unsigned long maxnode,
		     unsigned int flags)
{
	static long (*fn)(void *, unsigned long, int, const unsigned long *,
			  unsigned long, unsigned int);
	unsigned long i;
	long rc;
	int node = -1;

	if (!fn) {
		track_busy++;
		*(void **)&fn = dlsym(RTLD_NEXT, "mbind");
		track_busy--;
		if (!fn)
			return syscall(SYS_mbind, start, len, mode, nmask, maxnode,
				       flags);
	}
	rc = fn(start, len, mode, nmask, maxnode, flags);
	if (rc || !T.h || track_busy || !track_maybe_large(start))
		return rc;
	for (i = 0; nmask && i < maxnode && node < 0; i++)
		if (nmask[i / (8 * sizeof(long))] & (1UL << (i % (8 * sizeof(long)))))
			node = (int)i;
	track_placed(start, node);
	return rc;
}
