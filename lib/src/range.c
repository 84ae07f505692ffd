// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librefcnt: the range query (RCB_RANGE_QUERY) and chunked walks of a
 * range.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "internal.h"

int refcnt__entries(uint64_t vaddr, uint64_t len, uint64_t gran, size_t *nr)
{
	uint64_t h, span, n;

	if (!len || !gran || vaddr + len < vaddr)
		return refcnt__err(EINVAL);
	h = vaddr - vaddr % gran;
	span = vaddr + len - h;
	n = span / gran + (span % gran != 0);
	if (n > SIZE_MAX)
		return refcnt__err(EOVERFLOW);
	*nr = (size_t)n;
	return 0;
}

/*
 * RCB_RANGE_QUERY as the first struct rcb_range_query numbered it, before
 * reserved[2]: a module older than that knows only this command (ENOTTY
 * for the sized one), and every later module takes it too (abi.rst).
 */
#define REFCNT_RANGE_QUERY_VER0	_IOC(_IOC_DIR(RCB_RANGE_QUERY),		\
				     _IOC_TYPE(RCB_RANGE_QUERY),	\
				     _IOC_NR(RCB_RANGE_QUERY),		\
				     RCB_RANGE_QUERY_SIZE_VER0)

/*
 * Set once the module answered the 48-byte command after refusing the
 * sized one: there is one module per machine, and a newer one loaded
 * later takes the 48-byte command as well, so the process keeps it.
 */
static int refcnt_query_ver0;

int refcnt__query(int fd, pid_t pid, uint64_t vaddr, uint64_t len,
		  unsigned int flags, void *out, size_t cap, size_t *nr)
{
	struct rcb_range_query q = {
		.vaddr = vaddr,
		.len = len,
		.buf = (uintptr_t)out,
		.buf_entries = cap,
		.pid = pid,
		.flags = flags,
	};
	int ret;

	if (!__atomic_load_n(&refcnt_query_ver0, __ATOMIC_RELAXED)) {
		ret = ioctl(fd, RCB_RANGE_QUERY, &q);
		if (!ret || errno != ENOTTY)
			goto out;
	}
	/* Nothing this library asks for lies past the first 48 bytes. */
	ret = ioctl(fd, REFCNT_RANGE_QUERY_VER0, &q);
	if (!ret || errno != ENOTTY)
		__atomic_store_n(&refcnt_query_ver0, 1, __ATOMIC_RELAXED);
out:
	if (ret)
		return -1;
	*nr = (size_t)q.nr_entries;
	return 0;
}

/*
 * The query on an open device, with *nr set to the entries needed on
 * E2BIG; gran 0: read it from the device then. out holds cap entries of
 * the form flags ask for.
 */
static int refcnt_query_fd(int fd, uint64_t gran, pid_t pid, uint64_t vaddr,
			   uint64_t len, unsigned int flags, void *out,
			   size_t cap, size_t *nr)
{
	struct rcb_info info;
	size_t need;
	int err;

	if (!nr)
		return refcnt__err(EFAULT);
	if (!refcnt__query(fd, pid, vaddr, len, flags, out, cap, nr))
		return 0;
	err = errno;
	if (err == E2BIG && !gran && !refcnt__info(fd, &info))
		gran = info.rcb_granularity;
	if (err == E2BIG && !refcnt__entries(vaddr, len, gran, &need))
		*nr = need;
	return refcnt__err(err);
}

/* The query through a handle. */
static int refcnt_query_node(struct refcnt_node *node, pid_t pid,
			     uint64_t vaddr, uint64_t len, unsigned int flags,
			     void *out, size_t cap, size_t *nr)
{
	if (!node)
		return refcnt__err(EINVAL);
	return refcnt_query_fd(node->fd, node->info.rcb_granularity, pid,
			       vaddr, len, flags, out, cap, nr);
}

/* The query through a node device opened for the call. */
static int refcnt_query_any(pid_t pid, uint64_t vaddr, uint64_t len,
			    unsigned int flags, void *out, size_t cap,
			    size_t *nr)
{
	int fd, ret, err;

	if (!nr)
		return refcnt__err(EFAULT);
	fd = refcnt__open_any();
	if (fd < 0)
		return -1;
	ret = refcnt_query_fd(fd, 0, pid, vaddr, len, flags, out, cap, nr);
	err = errno;
	close(fd);
	errno = err;
	return ret;
}

REFCNT_API int refcnt_node_range_query(struct refcnt_node *node, pid_t pid,
				       uint64_t vaddr, uint64_t len,
				       unsigned int flags,
				       struct rcb_page_counters *out,
				       size_t cap, size_t *nr)
{
	if (flags & RCB_RANGE_PACKED)
		return refcnt__err(EINVAL);
	return refcnt_query_node(node, pid, vaddr, len, flags, out, cap, nr);
}

REFCNT_API int refcnt_range_query(pid_t pid, uint64_t vaddr, uint64_t len,
				  unsigned int flags,
				  struct rcb_page_counters *out, size_t cap,
				  size_t *nr)
{
	if (flags & RCB_RANGE_PACKED)
		return refcnt__err(EINVAL);
	return refcnt_query_any(pid, vaddr, len, flags, out, cap, nr);
}

REFCNT_API int refcnt_node_range_query_packed(struct refcnt_node *node,
					      pid_t pid, uint64_t vaddr,
					      uint64_t len, unsigned int flags,
					      void *out, size_t cap, size_t *nr)
{
	return refcnt_query_node(node, pid, vaddr, len,
				 flags | RCB_RANGE_PACKED, out, cap, nr);
}

REFCNT_API int refcnt_range_query_packed(pid_t pid, uint64_t vaddr,
					 uint64_t len, unsigned int flags,
					 void *out, size_t cap, size_t *nr)
{
	return refcnt_query_any(pid, vaddr, len, flags | RCB_RANGE_PACKED,
				out, cap, nr);
}

REFCNT_API int refcnt_range_entries(uint64_t vaddr, uint64_t len, size_t *nr)
{
	struct rcb_info info;
	int fd, ret, err;

	if (!nr)
		return refcnt__err(EFAULT);
	fd = refcnt__open_any();
	if (fd < 0)
		return -1;
	ret = refcnt__info(fd, &info);
	if (!ret)
		ret = refcnt__entries(vaddr, len, info.rcb_granularity, nr);
	err = errno;
	close(fd);
	errno = err;
	return ret;
}

int refcnt__walk(int fd, uint64_t gran, pid_t pid, uint64_t vaddr,
		 uint64_t len, unsigned int flags, refcnt__walk_fn fn,
		 void *arg)
{
	bool both = flags & REFCNT__WALK_BOTH;
	struct rcb_page_counters *buf, *hw = NULL;
	uint64_t end, h, cur;
	size_t total, done = 0;
	int ret = 0;

	if (refcnt__entries(vaddr, len, gran, &total))
		return -1;
	flags &= ~REFCNT__WALK_BOTH;
	if (both)
		flags |= RCB_RANGE_EXTENDED;
	buf = malloc((both ? 2 : 1) * REFCNT__CHUNK * sizeof(*buf));
	if (!buf)
		return refcnt__err(ENOMEM);
	if (both)
		hw = buf + REFCNT__CHUNK;

	end = vaddr + len;
	h = vaddr - vaddr % gran;
	cur = vaddr;
	while (done < total && !ret) {
		size_t n = total - done < REFCNT__CHUNK ? total - done :
			   REFCNT__CHUNK;
		uint64_t chunk_end = end - h <= n * gran ? end : h + n * gran;
		size_t got = 0, got_hw = 0;

		ret = refcnt__query(fd, pid, cur, chunk_end - cur, flags, buf,
				    n, &got);
		if (!ret && both)
			ret = refcnt__query(fd, pid, cur, chunk_end - cur,
					    flags & ~RCB_RANGE_EXTENDED, hw, n,
					    &got_hw);
		if (!ret && (got != n || (both && got_hw != n)))
			ret = refcnt__err(EIO);
		if (!ret)
			ret = fn(arg, done, buf, hw, n);
		done += n;
		h += n * gran;
		cur = h;
	}
	if (ret) {
		int err = errno;

		free(buf);
		errno = err;
		return -1;
	}
	free(buf);
	return 0;
}
