// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librefcnt: refcnt_pioctl(), the IRIX PIOCGETSN0REFCNTRS and
 * PIOCGETSN0EXTREFCNTRS /proc ioctls over RCB_RANGE_QUERY.
 */
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "refcnt/hwcntrs.h"

_Static_assert(SN0_REFCNT_MAX_COUNTERS == RCB_MAX_COUNTERS,
	       "IRIX and kernel counter set sizes differ");

/* Convert a chunk of entries into the caller's sn0_refcnt_buf_t array. */
static int refcnt_pioctl_chunk(void *arg, size_t first,
			       const struct rcb_page_counters *e,
			       const struct rcb_page_counters *hw, size_t n)
{
	sn0_refcnt_buf_t *b = (sn0_refcnt_buf_t *)arg + first;
	size_t i;

	(void)hw;
	for (i = 0; i < n; i++, b++, e++) {
		memset(b, 0, sizeof(*b));
		memcpy(b->refcnt_set.refcnt, e->refcnt,
		       sizeof(b->refcnt_set.refcnt));
		b->refcnt_set.flags = e->flags;
		b->paddr = e->paddr;
		b->page_size = e->page_size;
		b->cnodeid = (cnodeid_t)e->cnodeid;
	}
	return 0;
}

/*
 * refcnt(5) programs size their buffer for 4 KB hardware pages: below that
 * granularity the range has more entries than such a buffer holds.
 */
#define REFCNT_PIOCTL_IRIX_PAGE	4096

/*
 * Check the range against the buffer: bufsize bytes, or with sized false
 * a buffer of refcnt(5)'s size, which only a granularity of at least 4 KB
 * is sure not to overflow. 0 or -1/errno.
 */
static int refcnt_pioctl_fits(const sn0_refcnt_args_t *args, uint64_t gran,
			      bool sized, size_t bufsize)
{
	size_t need;

	if (refcnt__entries((uintptr_t)args->vaddr, (uint64_t)args->len, gran,
			    &need))
		return -1;
	if (!sized)
		return gran < REFCNT_PIOCTL_IRIX_PAGE ? refcnt__err(EOVERFLOW) : 0;
	if (need > bufsize / sizeof(sn0_refcnt_buf_t))
		return refcnt__err(E2BIG);
	return 0;
}

static int refcnt_pioctl_common(pid_t pid, int cmd, sn0_refcnt_args_t *args,
				bool sized, size_t bufsize)
{
	struct rcb_info info;
	unsigned int flags;
	int fd, ret, err;

	switch (cmd) {
	case PIOCGETSN0REFCNTRS:
		flags = 0;
		break;
	case PIOCGETSN0EXTREFCNTRS:
		flags = RCB_RANGE_EXTENDED;
		break;
	default:
		return refcnt__err(ENOTTY);
	}
	if (!args || !args->buf)
		return refcnt__err(EFAULT);
	if (args->len <= 0 || pid < 0)
		return refcnt__err(EINVAL);
	if (pid == getpid())
		pid = 0;

	fd = refcnt__open_any();
	if (fd < 0)
		return -1;
	ret = refcnt__info(fd, &info);
	if (!ret)
		ret = refcnt_pioctl_fits(args, info.rcb_granularity, sized,
					 bufsize);
	if (!ret)
		ret = refcnt__walk(fd, info.rcb_granularity, pid,
				   (uintptr_t)args->vaddr,
				   (uint64_t)args->len, flags,
				   refcnt_pioctl_chunk, args->buf);
	err = errno;
	close(fd);
	errno = err;
	return ret ? -1 : 0;
}

REFCNT_API int refcnt_pioctl(pid_t pid, int cmd, sn0_refcnt_args_t *args)
{
	return refcnt_pioctl_common(pid, cmd, args, false, 0);
}

REFCNT_API int refcnt_pioctl_sized(pid_t pid, int cmd, sn0_refcnt_args_t *args,
				   size_t bufsize)
{
	return refcnt_pioctl_common(pid, cmd, args, true, bufsize);
}
