/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the librefcnt selftests (lib_*_test.c): memory of our own to
 * query, exact injection, a probe that RCB_RANGE_QUERY works, and a
 * check that nothing reaches stderr.
 *
 * The programs are static, linked with librefcnt.a and libnuma.a.
 */
#ifndef REFCNT_LIB_HELPERS_H
#define REFCNT_LIB_HELPERS_H

#include "refcnt_helpers.h"

#include <numaif.h>
#include <refcnt/refcnt.h>

/* TEST() of the 6.1 harness leaves its variant parameter unused. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

#define LH_U64(x)	((unsigned long long)(x))

/* Anonymous private memory, no THP, each base page written once. */
static inline char *lh_alloc(size_t len, bool touch)
{
	size_t pg = rc_page_size(), i;
	char *p;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_NOHUGEPAGE);
	if (touch)
		for (i = 0; i < len; i += pg)
			p[i] = (char)i | 1;
	return p;
}

/* Node of the page at addr, from move_pages(2); -errno on failure. */
static inline int lh_page_node(const void *addr)
{
	void *pages[1] = { (void *)addr };
	int status = -1;

	if (move_pages(0, 1, pages, NULL, &status, 0))
		return -errno;
	return status;
}

/* RCB_INJECT count references from src_cnodeid to paddr, synchronously. */
static inline int lh_inject(int fd, uint64_t paddr, uint32_t src_cnodeid,
			    uint32_t count)
{
	struct rcb_ref ref = {
		.paddr = paddr,
		.src_cnodeid = src_cnodeid,
		.count = count,
	};
	struct rcb_inject in = {
		.refs = (uintptr_t)&ref,
		.nr_refs = 1,
		.flags = RCB_INJECT_SYNC,
	};

	return ioctl(fd, RCB_INJECT, &in) ? -errno : 0;
}

/*
 * A probe range query of one page of our own memory: 0, or -errno. The
 * module and the tests are built from one tree, so -ENOTTY (no
 * RCB_RANGE_QUERY) is a broken module, not an old one: a failure.
 */
static inline int lh_range_query_works(void)
{
	struct rcb_page_counters e[2];
	static char probe[64];
	size_t nr;

	if (refcnt_range_query(0, (uintptr_t)probe, 1, 0, e, 2, &nr))
		return -errno;
	return 0;
}

#define LH_ASSERT_RANGE_QUERY() do {					\
	int _r = lh_range_query_works();				\
	ASSERT_EQ(0, _r) TH_LOG("probe range query: %s", strerror(-_r)); \
} while (0)

/*
 * Capture stderr into a memfd; lh_stderr_end() restores it and returns
 * the bytes that were written.
 */
struct lh_stderr {
	int saved;
	int mfd;
};

static inline int lh_stderr_begin(struct lh_stderr *s)
{
	fflush(stderr);
	s->mfd = memfd_create("lh-stderr", MFD_CLOEXEC);
	s->saved = dup(2);
	if (s->mfd < 0 || s->saved < 0 || dup2(s->mfd, 2) < 0)
		return -errno;
	return 0;
}

static inline long lh_stderr_end(struct lh_stderr *s)
{
	struct stat st;

	fflush(stderr);
	dup2(s->saved, 2);
	close(s->saved);
	if (fstat(s->mfd, &st))
		st.st_size = -1;
	close(s->mfd);
	return (long)st.st_size;
}

/* The counter of a cnodeid in a set of info's shape. */
static inline unsigned int lh_counter(const struct rcb_info *info,
				      unsigned int cnodeid)
{
	return cnodeid / info->rcb_nodes_per_counter;
}

#endif /* REFCNT_LIB_HELPERS_H */
