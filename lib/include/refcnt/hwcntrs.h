/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * IRIX <sys/SN/hwcntrs.h> compatibility for refcnt(5) programs.
 *
 * A program written against refcnt(5) ports by including this header
 * instead of <sys/SN/hwcntrs.h> and replacing
 *
 *	sprintf(path, "/proc/%05d", pid);
 *	fd = open(path, O_RDONLY);
 *	ioctl(fd, PIOCGETSN0REFCNTRS, &args);
 *
 * by refcnt_pioctl(pid, PIOCGETSN0REFCNTRS, &args), or better by
 * refcnt_pioctl_sized(), which also takes the size of args.buf and so
 * works below 4 KB hardware pages (see below). The mmap interface is
 * the same as on IRIX: open /dev/refcnt/nodeN (in place of
 * /hw/module/M/slot/nS/node/refcnt), ioctl(fd, RCB_INFO_GET, &rcbinfo),
 * ioctl(fd, RCB_SLOT_GET, slots) and mmap(2) the rcb_len bytes read-only.
 * See refcnt_pioctl(3).
 */
#ifndef REFCNT_HWCNTRS_H
#define REFCNT_HWCNTRS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The library's own copy of the module's uapi header, installed as
 * <refcnt/linux/refcnt.h>: <linux/refcnt.h> belongs to the distribution's
 * kernel headers once the module is merged.
 */
#include <refcnt/linux/refcnt.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * glibc declares __uint64_t always and caddr_t unless a strict standard
 * mode hides it (then __daddr_t_defined is not set). Other C libraries may
 * declare neither.
 */
#if defined(__GLIBC__)
# ifndef __daddr_t_defined
typedef char *caddr_t;
# endif
#else
typedef uint64_t __uint64_t;
# if !defined(_GNU_SOURCE) && !defined(_BSD_SOURCE) && !defined(_DEFAULT_SOURCE)
typedef char *caddr_t;
# endif
#endif

/* Compact node id: dense number of an online node (numa(5)). */
typedef short cnodeid_t;

/* One counter of a set. */
typedef uint32_t refcnt_t;

#define SN0_REFCNT_MAX_COUNTERS	64

/* The counter set of one hardware page. */
typedef struct sn0_refcnt_set {
	refcnt_t refcnt[SN0_REFCNT_MAX_COUNTERS];
	/* refcnt extension: RCB_PAGE_* (0: page not present) */
	__uint64_t flags;
} sn0_refcnt_set_t;

/* One hardware page of the range: its counters and where it lives. */
typedef struct sn0_refcnt_buf {
	sn0_refcnt_set_t refcnt_set;
	__uint64_t paddr;	/* 0 without CAP_SYS_ADMIN or not present */
	__uint64_t page_size;	/* size of the page mapping it; 0: not present */
	cnodeid_t cnodeid;	/* home node; -1 when not present */
} sn0_refcnt_buf_t;

/* Argument of PIOCGETSN0REFCNTRS and PIOCGETSN0EXTREFCNTRS. */
typedef struct sn0_refcnt_args {
	caddr_t vaddr;		/* start of the virtual range */
	long len;		/* bytes of the range, > 0 */
	sn0_refcnt_buf_t *buf;	/* one entry per hardware page of the range */
} sn0_refcnt_args_t;

typedef struct rcb_info rcb_info_t;
typedef struct rcb_slot rcb_slot_t;

/*
 * refcnt_pioctl() commands. Library-defined values (not IRIX's numbers):
 * hardware counters, and software extended counters.
 */
#define PIOCGETSN0REFCNTRS	(('q' << 8) | 0xa0)
#define PIOCGETSN0EXTREFCNTRS	(('q' << 8) | 0xa1)

/*
 * The IRIX /proc ioctl for process pid (0 or getpid(): the caller; another
 * process needs CAP_SYS_PTRACE). args->buf must hold one sn0_refcnt_buf_t
 * per hardware page of [args->vaddr rounded down to the hardware page
 * size, args->vaddr + args->len). Returns 0, or -1 with errno as ioctl(2):
 * ENOTTY for an unknown cmd, EFAULT for a NULL args or buf, EINVAL for a
 * bad range, ENOENT when no refcnt device exists, the kernel's errors.
 *
 * refcnt_pioctl() cannot know the size of args->buf: it fails with
 * EOVERFLOW, writing nothing, when the module's hardware pages are smaller
 * than refcnt(5)'s 4 KB, since a buffer sized for 4 KB pages would
 * overflow. refcnt_pioctl_sized() takes bufsize, the bytes of args->buf,
 * works at any granularity and fails with E2BIG, writing nothing, when
 * the range has more entries than bufsize holds (refcnt_range_entries()
 * tells how many).
 */
int refcnt_pioctl(pid_t pid, int cmd, sn0_refcnt_args_t *args);
int refcnt_pioctl_sized(pid_t pid, int cmd, sn0_refcnt_args_t *args,
			size_t bufsize);

#ifdef __cplusplus
}
#endif

#endif /* REFCNT_HWCNTRS_H */
