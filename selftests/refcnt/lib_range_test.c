// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt selftests: the range query in native form.
 *
 * One entry per hardware page from vaddr rounded down to the granularity;
 * written pages are present with their physical address (root), the base
 * page size and the home cnodeid move_pages(2) reports; untouched pages
 * are reported not present and stay so (mincore). refcnt_range_entries()
 * predicts the count; a short buffer is E2BIG, untouched, with the count
 * needed; bad ranges, flags and pids fail with their errno (a thread id
 * that is not a process's is ESRCH). Another
 * process's memory can be queried by root, also after its main thread
 * exited alone while another thread runs on; a caller without privileges,
 * through a handle opened before dropping them, sees its own memory
 * without physical addresses and is refused others'. The packed form
 * (refcnt_range_query_packed) says what the full one says, in entries of
 * RCB_PAGE_SET_SIZE(rcb_sw_counters_per_set) bytes, writes nothing past
 * them, and has the same E2BIG; the full form refuses RCB_RANGE_PACKED.
 * Pages of PROT_NONE mappings are seen; pages dropped and faulted back
 * during a query are each either absent or present with sane fields.
 *
 * A module without RCB_RANGE_QUERY (ENOTTY) fails: it is built from the
 * same tree.
 */
#include <pthread.h>
#include <sys/prctl.h>

#include "lib_helpers.h"

#define NPAGES	64

FIXTURE(range) {
	size_t pg;
	uint64_t gran;
	unsigned int cps;
	char *mem;
	struct rcb_page_counters *buf;
	size_t cap;
};

FIXTURE_SETUP(range)
{
	struct refcnt_node *node;
	struct rcb_info info;
	int nid;

	LH_ASSERT_RANGE_QUERY();
	self->pg = rc_page_size();
	ASSERT_LT(0, refcnt_nodes(&nid, 1));
	node = refcnt_node_open(nid, 0);
	ASSERT_NE(NULL, node);
	ASSERT_EQ(0, refcnt_node_info(node, &info));
	refcnt_node_close(node);
	self->gran = info.rcb_granularity;
	self->cps = info.rcb_sw_counters_per_set;
	/* Written: the first half. */
	self->mem = lh_alloc(NPAGES * self->pg, false);
	ASSERT_NE(NULL, self->mem);
	memset(self->mem, 1, NPAGES / 2 * self->pg);
	self->cap = NPAGES * self->pg / self->gran + 2;
	self->buf = calloc(self->cap + 1, sizeof(*self->buf));
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN(range)
{
	if (self->mem)
		munmap(self->mem, NPAGES * self->pg);
	free(self->buf);
}

TEST_F(range, present_and_not_present)
{
	size_t nr = 0, i, per_page = self->pg / self->gran ?: 1;
	unsigned char vec[NPAGES];

	ASSERT_EQ(0, refcnt_range_query(0, (uintptr_t)self->mem,
					NPAGES * self->pg, RCB_RANGE_EXTENDED,
					self->buf, self->cap, &nr))
		TH_LOG("%s", strerror(errno));
	ASSERT_EQ(NPAGES * self->pg / self->gran, nr);
	for (i = 0; i < nr; i++) {
		const struct rcb_page_counters *e = &self->buf[i];
		size_t page = i * self->gran / self->pg;
		char *va = self->mem + i * self->gran;

		if (page < NPAGES / 2) {
			int node = lh_page_node(va);

			ASSERT_TRUE(!!(e->flags & RCB_PAGE_PRESENT)) TH_LOG("entry %zu", i);
			EXPECT_EQ(0ULL, e->flags & (RCB_PAGE_DENIED | RCB_PAGE_UNCOUNTED |
						    RCB_PAGE_THP | RCB_PAGE_HUGETLB));
			EXPECT_EQ(self->pg, e->page_size);
			EXPECT_NE(0ULL, e->paddr) TH_LOG("root sees physical addresses");
			EXPECT_EQ(0ULL, e->paddr % self->gran);
			ASSERT_LE(0, node);
			EXPECT_EQ(refcnt_nid_to_cnode(node), e->cnodeid)
				TH_LOG("entry %zu: move_pages says node%d", i, node);
			/* Hardware pages of one base page share it. */
			if (per_page > 1 && i % per_page)
				EXPECT_EQ(self->buf[i - 1].paddr + self->gran, e->paddr);
		} else {
			EXPECT_EQ(0ULL, e->flags) TH_LOG("entry %zu", i);
			EXPECT_EQ(-1, e->cnodeid);
			EXPECT_EQ(0ULL, e->paddr);
			EXPECT_EQ(0ULL, e->page_size);
		}
	}
	/* The query faulted nothing in. */
	ASSERT_EQ(0, mincore(self->mem, NPAGES * self->pg, vec));
	for (i = NPAGES / 2; i < NPAGES; i++)
		EXPECT_EQ(0, vec[i] & 1) TH_LOG("page %zu became resident", i);
}

TEST_F(range, entries_and_rounding)
{
	uint64_t va = (uintptr_t)self->mem;
	size_t nr = 0, want = 0;

	/* One byte before a hardware page boundary and one after. */
	ASSERT_EQ(0, refcnt_range_entries(va + self->gran - 1, 2, &want));
	EXPECT_EQ(2U, want);
	ASSERT_EQ(0, refcnt_range_query(0, va + self->gran - 1, 2, 0, self->buf,
					self->cap, &nr));
	EXPECT_EQ(want, nr);

	ASSERT_EQ(0, refcnt_range_entries(va + 100, 3 * self->gran, &want));
	EXPECT_EQ(4U, want);
	ASSERT_EQ(0, refcnt_range_query(0, va + 100, 3 * self->gran, 0,
					self->buf, self->cap, &nr));
	EXPECT_EQ(want, nr);

	ASSERT_EQ(0, refcnt_range_entries(va, 1, &want));
	EXPECT_EQ(1U, want);
	errno = 0;
	EXPECT_EQ(-1, refcnt_range_entries(va, 0, &want));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_range_entries(UINT64_MAX - 5, 10, &want));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(range, short_buffer_is_e2big_and_untouched)
{
	uint64_t va = (uintptr_t)self->mem;
	size_t need = 0, nr = 0, i;

	ASSERT_EQ(0, refcnt_range_entries(va + 1, 8 * self->pg, &need));
	memset(self->buf, 0xa5, self->cap * sizeof(*self->buf));
	errno = 0;
	EXPECT_EQ(-1, refcnt_range_query(0, va + 1, 8 * self->pg, 0, self->buf,
					 need - 1, &nr));
	EXPECT_EQ(E2BIG, errno);
	EXPECT_EQ(need, nr);
	for (i = 0; i < self->cap; i++)
		ASSERT_EQ(0xa5a5a5a5U, self->buf[i].refcnt[0]) TH_LOG("entry %zu", i);
}

TEST_F(range, bad_arguments)
{
	uint64_t va = (uintptr_t)self->mem;
	size_t nr;
	pid_t gone;

	errno = 0;
	EXPECT_EQ(-1, refcnt_range_query(0, va, 0, 0, self->buf, self->cap, &nr));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_range_query(0, UINT64_MAX - 4095, 8192, 0, self->buf,
					 self->cap, &nr));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_range_query(0, 1ULL << 63, 4096, 0, self->buf,
					 self->cap, &nr));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_range_query(0, va, 4096, ~RCB_RANGE_FLAGS, self->buf,
					 self->cap, &nr));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_range_query(-2, va, 4096, 0, self->buf, self->cap, &nr));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_range_query(0, va, 4096, 0, self->buf, self->cap, NULL));
	EXPECT_EQ(EFAULT, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_range_query(0, va, 4096, 0, (void *)8, self->cap, &nr));
	EXPECT_EQ(EFAULT, errno);

	gone = rc_fork();
	ASSERT_LE(0, gone);
	if (!gone)
		_exit(0);
	ASSERT_EQ(0, rc_wait(gone));
	errno = 0;
	EXPECT_EQ(-1, refcnt_range_query(gone, va, 4096, 0, self->buf, self->cap, &nr));
	EXPECT_EQ(ESRCH, errno);
}

/* Our own pid is the caller, like 0. */
TEST_F(range, own_pid)
{
	size_t nr0 = 0, nr1 = 0, n = 4 * self->pg / self->gran;
	struct rcb_page_counters *b = self->buf + n;

	ASSERT_LE(2 * n, self->cap);
	ASSERT_EQ(0, refcnt_range_query(0, (uintptr_t)self->mem, 4 * self->pg, 0,
					self->buf, n, &nr0));
	ASSERT_EQ(0, refcnt_range_query(getpid(), (uintptr_t)self->mem,
					4 * self->pg, 0, b, n, &nr1));
	EXPECT_EQ(nr0, nr1);
	EXPECT_EQ(0, memcmp(self->buf, b, n * sizeof(*b)));
}

/*
 * A pid names a process by its thread group id, as for RCB_COUNT_START
 * (one rule, kmod/target.c): the id of one of our threads that is not the
 * process's names none, even for root.
 */
TEST_F(range, thread_id_is_not_a_process)
{
	size_t nr = 0, n = self->pg / self->gran;
	pid_t tid = rc_park_thread();

	ASSERT_LT(0, tid);
	errno = 0;
	EXPECT_EQ(-1, refcnt_range_query(tid, (uintptr_t)self->mem, self->pg, 0,
					 self->buf, n, &nr));
	EXPECT_EQ(ESRCH, errno);
	/* The process's own id still names it. */
	EXPECT_EQ(0, refcnt_range_query(getpid(), (uintptr_t)self->mem,
					self->pg, 0, self->buf, n, &nr));
}

/*
 * Pages of a PROT_NONE mapping are still mapped, as are those NUMA
 * balancing makes PROT_NONE: the query sees them, with what it saw before.
 */
TEST_F(range, prot_none_pages_are_seen)
{
	size_t n = NPAGES / 2 * self->pg / self->gran, nr = 0, i;
	struct rcb_page_counters *b = self->buf + n;

	ASSERT_LE(2 * n, self->cap);
	ASSERT_EQ(0, refcnt_range_query(0, (uintptr_t)self->mem,
					NPAGES / 2 * self->pg, 0, self->buf, n,
					&nr));
	ASSERT_EQ(n, nr);
	/* The middle of the written half: three VMAs, one PROT_NONE. */
	ASSERT_EQ(0, mprotect(self->mem + 4 * self->pg, 8 * self->pg,
			      PROT_NONE));
	ASSERT_EQ(0, refcnt_range_query(0, (uintptr_t)self->mem,
					NPAGES / 2 * self->pg, 0, b, n, &nr));
	ASSERT_EQ(n, nr);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(RCB_PAGE_PRESENT, b[i].flags) TH_LOG("entry %zu", i);
		EXPECT_EQ(self->buf[i].paddr, b[i].paddr) TH_LOG("entry %zu", i);
		EXPECT_EQ(self->buf[i].cnodeid, b[i].cnodeid);
		EXPECT_EQ(self->buf[i].page_size, b[i].page_size);
	}
	ASSERT_EQ(0, mprotect(self->mem + 4 * self->pg, 8 * self->pg,
			      PROT_READ | PROT_WRITE));
}

struct lh_churn {
	char *mem;
	size_t len;
	volatile bool stop;
	unsigned long rounds;
};

/* Drop the pages of the range and write them again, until told to stop. */
static void *lh_churn(void *arg)
{
	struct lh_churn *c = arg;

	while (!c->stop) {
		madvise(c->mem, c->len, MADV_DONTNEED);
		memset(c->mem, 2, c->len);
		c->rounds++;
	}
	return NULL;
}

/*
 * Pages that go and come back while the range is read (MADV_DONTNEED
 * needs only the mmap lock for reading, so it runs during the query):
 * each entry is either not present or a page of the right node, the
 * query never fails.
 */
TEST_F(range, pages_come_and_go_during_the_query)
{
	size_t n = NPAGES * self->pg / self->gran, nr, i, present = 0, absent = 0;
	struct lh_churn c = { .mem = self->mem, .len = NPAGES / 2 * self->pg };
	pthread_t thread;
	int round;

	ASSERT_EQ(0, pthread_create(&thread, NULL, lh_churn, &c));
	for (round = 0; round < 300; round++) {
		nr = 0;
		ASSERT_EQ(0, refcnt_range_query(0, (uintptr_t)self->mem,
						NPAGES * self->pg,
						RCB_RANGE_EXTENDED, self->buf,
						self->cap, &nr))
			TH_LOG("round %d: %s", round, strerror(errno));
		ASSERT_EQ(n, nr);
		for (i = 0; i < n; i++) {
			const struct rcb_page_counters *e = &self->buf[i];

			if (!e->flags) {
				ASSERT_EQ(-1, e->cnodeid);
				ASSERT_EQ(0ULL, e->paddr);
				absent++;
				continue;
			}
			ASSERT_EQ(RCB_PAGE_PRESENT, e->flags)
				TH_LOG("round %d entry %zu", round, i);
			ASSERT_LT(i, NPAGES / 2 * self->pg / self->gran);
			ASSERT_LE(0, e->cnodeid);
			ASSERT_NE(0ULL, e->paddr);
			ASSERT_EQ(self->pg, e->page_size);
			present++;
		}
	}
	c.stop = true;
	ASSERT_EQ(0, pthread_join(thread, NULL));
	TH_LOG("%d queries, %zu entries present, %zu not, %lu rounds of churn",
	       round, present, absent, c.rounds);
}

/* Bytes of buf from off on that are not 0xa5. */
static size_t lh_not_a5(const void *buf, size_t off, size_t size)
{
	const unsigned char *b = buf;
	size_t n = 0;

	for (; off < size; off++)
		n += b[off] != 0xa5;
	return n;
}

/* The packed form says what the full one says, field by field. */
TEST_F(range, packed_matches_full)
{
	size_t stride = RCB_PAGE_SET_SIZE(self->cps), size, nr = 0, nr_p = 0;
	size_t nr_n = 0, i;
	struct refcnt_node *node;
	unsigned int c;
	void *packed, *again;
	int nid;

	if (geteuid())
		SKIP(return, "needs root (physical addresses)");
	ASSERT_LT(0U, self->cps);
	ASSERT_GE((unsigned int)RCB_MAX_COUNTERS, self->cps);
	EXPECT_EQ((16 + 4 * self->cps + 7) / 8 * 8, stride);
	/* cap entries and one more, all 0xa5. */
	size = (self->cap + 1) * stride;
	packed = malloc(size);
	again = malloc(size);
	ASSERT_NE(NULL, packed);
	ASSERT_NE(NULL, again);
	memset(packed, 0xa5, size);
	memset(again, 0xa5, size);

	ASSERT_EQ(0, refcnt_range_query(0, (uintptr_t)self->mem,
					NPAGES * self->pg, RCB_RANGE_EXTENDED,
					self->buf, self->cap, &nr))
		TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, refcnt_range_query_packed(0, (uintptr_t)self->mem,
					       NPAGES * self->pg,
					       RCB_RANGE_EXTENDED, packed,
					       self->cap, &nr_p))
		TH_LOG("%s", strerror(errno));
	ASSERT_EQ(NPAGES * self->pg / self->gran, nr);
	ASSERT_EQ(nr, nr_p);
	for (i = 0; i < nr; i++) {
		const struct rcb_page_counters *f = &self->buf[i];
		const struct rcb_page_set *e = refcnt_page_set(packed, i, self->cps);

		ASSERT_EQ((char *)packed + i * stride, (const char *)e);
		EXPECT_EQ((uint32_t)f->flags, e->flags) TH_LOG("entry %zu", i);
		EXPECT_EQ(f->paddr, e->paddr) TH_LOG("entry %zu", i);
		EXPECT_EQ(f->cnodeid, e->cnodeid) TH_LOG("entry %zu", i);
		if (f->page_size) {
			ASSERT_EQ(0ULL, f->page_size & (f->page_size - 1));
			EXPECT_EQ(__builtin_ctzll(f->page_size), e->page_shift)
				TH_LOG("entry %zu: page size %llu", i,
				       LH_U64(f->page_size));
		} else {
			EXPECT_EQ(0, e->page_shift) TH_LOG("entry %zu", i);
		}
		EXPECT_EQ(0, e->pad) TH_LOG("entry %zu", i);
		for (c = 0; c < self->cps; c++)
			EXPECT_EQ(f->refcnt[c], e->refcnt[c])
				TH_LOG("entry %zu counter %u", i, c);
		if (self->cps % 2)
			EXPECT_EQ(0U, e->refcnt[self->cps]) TH_LOG("entry %zu pad", i);
	}
	/* Nothing past the entries written, nor past cap. */
	EXPECT_EQ(0U, lh_not_a5(packed, nr * stride, size));

	/* The same through a handle, RCB_RANGE_PACKED given. */
	ASSERT_LT(0, refcnt_nodes(&nid, 1));
	node = refcnt_node_open(nid, 0);
	ASSERT_NE(NULL, node);
	ASSERT_EQ(0, refcnt_node_range_query_packed(node, 0, (uintptr_t)self->mem,
						    NPAGES * self->pg,
						    RCB_RANGE_EXTENDED |
						    RCB_RANGE_PACKED, again,
						    self->cap, &nr_n))
		TH_LOG("%s", strerror(errno));
	refcnt_node_close(node);
	EXPECT_EQ(nr, nr_n);
	EXPECT_EQ(0, memcmp(packed, again, size));
	free(again);
	free(packed);
}

TEST_F(range, packed_short_buffer_is_e2big_and_untouched)
{
	size_t stride = RCB_PAGE_SET_SIZE(self->cps), size, need = 0, nr = 0;
	uint64_t va = (uintptr_t)self->mem;
	void *packed;

	size = (self->cap + 1) * stride;
	packed = malloc(size);
	ASSERT_NE(NULL, packed);
	memset(packed, 0xa5, size);
	ASSERT_EQ(0, refcnt_range_entries(va + 1, 8 * self->pg, &need));
	ASSERT_EQ(8 * self->pg / self->gran + 1, need);
	errno = 0;
	EXPECT_EQ(-1, refcnt_range_query_packed(0, va + 1, 8 * self->pg, 0,
						packed, need - 1, &nr));
	EXPECT_EQ(E2BIG, errno);
	EXPECT_EQ(need, nr);
	EXPECT_EQ(0U, lh_not_a5(packed, 0, size));
	free(packed);
}

/* The full form's out is struct rcb_page_counters: RCB_RANGE_PACKED is EINVAL. */
TEST_F(range, full_form_refuses_packed)
{
	uint64_t va = (uintptr_t)self->mem;
	struct refcnt_node *node;
	size_t nr = 0;
	int nid;

	memset(self->buf, 0xa5, self->cap * sizeof(*self->buf));
	errno = 0;
	EXPECT_EQ(-1, refcnt_range_query(0, va, self->pg, RCB_RANGE_PACKED,
					 self->buf, self->cap, &nr));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_range_query(0, va, self->pg, RCB_RANGE_FLAGS,
					 self->buf, self->cap, &nr));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_LT(0, refcnt_nodes(&nid, 1));
	node = refcnt_node_open(nid, 0);
	ASSERT_NE(NULL, node);
	errno = 0;
	EXPECT_EQ(-1, refcnt_node_range_query(node, 0, va, self->pg,
					      RCB_RANGE_PACKED, self->buf,
					      self->cap, &nr));
	EXPECT_EQ(EINVAL, errno);
	refcnt_node_close(node);
	EXPECT_EQ(0U, lh_not_a5(self->buf, 0, self->cap * sizeof(*self->buf)));
}

/* Root queries a child's memory. */
TEST_F(range, another_process)
{
	int to_parent[2], to_child[2];
	uint64_t va;
	size_t nr = 0, i, n = 8 * self->pg / self->gran;
	pid_t child;
	char c = 0;

	if (geteuid())
		SKIP(return, "needs root (CAP_SYS_PTRACE)");
	ASSERT_EQ(0, pipe(to_parent));
	ASSERT_EQ(0, pipe(to_child));
	child = rc_fork();
	ASSERT_LE(0, child);
	if (!child) {
		char *m = lh_alloc(8 * self->pg, false);

		close(to_child[1]);
		if (!m)
			_exit(1);
		memset(m, 7, 4 * self->pg);	/* the first four pages */
		va = (uintptr_t)m;
		if (write(to_parent[1], &va, sizeof(va)) != sizeof(va))
			_exit(2);
		if (read(to_child[0], &c, 1) != 1)
			_exit(3);
		_exit(0);
	}
	close(to_parent[1]);
	close(to_child[0]);
	ASSERT_EQ((ssize_t)sizeof(va), read(to_parent[0], &va, sizeof(va)))
		TH_LOG("child status %d", rc_wait(child));
	EXPECT_EQ(0, refcnt_range_query(child, va, 8 * self->pg, 0, self->buf,
					self->cap, &nr)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(n, nr);
	for (i = 0; i < nr; i++)
		EXPECT_EQ(i < n / 2, !!(self->buf[i].flags & RCB_PAGE_PRESENT))
			TH_LOG("entry %zu", i);
	ASSERT_EQ(1, write(to_child[1], &c, 1));
	ASSERT_EQ(0, rc_wait(child));
	close(to_parent[0]);
	close(to_child[1]);
}

/*
 * A process whose main thread has exited alone (pthread_exit(): a zombie
 * until the last thread exits) while another thread runs on in its
 * memory is still named by its thread group id: root queries that memory
 * as before (kmod/target.c looks for a thread with it).
 */
TEST_F(range, main_thread_exited)
{
	size_t nr = 0, i, n = 8 * self->pg / self->gran;
	/* The fixture's unwritten half: the child writes four pages of it. */
	char *mem = self->mem + NPAGES / 2 * self->pg;
	pid_t child;
	int release;
	char c = 0;

	if (geteuid())
		SKIP(return, "needs root (CAP_SYS_PTRACE)");
	child = rc_fork_main_exited(mem, 4 * self->pg, &release);
	ASSERT_LT(0, child);
	EXPECT_EQ(0, refcnt_range_query(child, (uintptr_t)mem, 8 * self->pg, 0,
					self->buf, self->cap, &nr))
		TH_LOG("%s", strerror(errno));
	EXPECT_EQ(n, nr);
	for (i = 0; i < nr; i++)
		EXPECT_EQ(i < n / 2, !!(self->buf[i].flags & RCB_PAGE_PRESENT))
			TH_LOG("entry %zu", i);
	ASSERT_EQ(1, write(release, &c, 1));
	close(release);
	ASSERT_EQ(0, rc_wait(child));
	/* All its threads gone: no process, as in the fixture's setup. */
	errno = 0;
	EXPECT_EQ(-1, refcnt_range_query(child, (uintptr_t)mem, self->pg, 0,
					 self->buf, self->cap, &nr));
	EXPECT_EQ(ESRCH, errno);
}

/* The same query through a handle. */
TEST_F(range, handle_query_is_the_same)
{
	struct refcnt_node *node;
	size_t nr0 = 0, nr1 = 0, n = 4 * self->pg / self->gran;
	struct rcb_page_counters *b = self->buf + n;
	int nid;

	ASSERT_LT(0, refcnt_nodes(&nid, 1));
	node = refcnt_node_open(nid, 0);
	ASSERT_NE(NULL, node);
	ASSERT_EQ(0, refcnt_range_query(0, (uintptr_t)self->mem, 4 * self->pg,
					RCB_RANGE_EXTENDED, self->buf, n, &nr0));
	ASSERT_EQ(0, refcnt_node_range_query(node, 0, (uintptr_t)self->mem,
					     4 * self->pg, RCB_RANGE_EXTENDED,
					     b, n, &nr1));
	EXPECT_EQ(nr0, nr1);
	EXPECT_EQ(0, memcmp(self->buf, b, n * sizeof(*b)));
	errno = 0;
	EXPECT_EQ(-1, refcnt_node_range_query(node, 0, (uintptr_t)self->mem + 1,
					      n * self->gran, 0, b, n, &nr1));
	EXPECT_EQ(E2BIG, errno);
	EXPECT_EQ(n + 1, nr1);
	refcnt_node_close(node);
}

/*
 * A handle opened by root, used after dropping to nobody: own private
 * memory without physical addresses, other processes refused, and no new
 * device can be opened.
 */
TEST_F(range, unprivileged_caller)
{
	struct refcnt_node *node;
	pid_t child;
	int nid, status;

	if (geteuid())
		SKIP(return, "needs root to drop privileges");
	ASSERT_LT(0, refcnt_nodes(&nid, 1));
	node = refcnt_node_open(nid, 0);
	ASSERT_NE(NULL, node);
	child = rc_fork();
	ASSERT_LE(0, child);
	if (!child) {
		size_t nr = 0, i, n = NPAGES / 2 * self->pg / self->gran;
		int bad = 0;

		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(10);
		prctl(PR_SET_DUMPABLE, 1);
		if (refcnt_node_range_query(node, 0, (uintptr_t)self->mem,
					    NPAGES / 2 * self->pg, 0, self->buf,
					    self->cap, &nr))
			_exit(11);
		if (nr != n)
			_exit(12);
		for (i = 0; i < nr; i++) {
			const struct rcb_page_counters *e = &self->buf[i];

			/* Copy-on-write after fork: present, not shared, ours. */
			if (!(e->flags & RCB_PAGE_PRESENT) || e->paddr)
				bad = 1;
			if (!(e->flags & RCB_PAGE_DENIED) && e->cnodeid < 0)
				bad = 1;
		}
		if (bad)
			_exit(13);
		errno = 0;
		if (!refcnt_node_range_query(node, getppid(), (uintptr_t)self->mem,
					     self->pg, 0, self->buf, self->cap, &nr) ||
		    errno != EPERM)
			_exit(14);
		errno = 0;
		if (!refcnt_range_query(0, (uintptr_t)self->mem, self->pg, 0,
					self->buf, self->cap, &nr) || errno != EACCES)
			_exit(15);
		_exit(0);
	}
	status = rc_wait(child);
	refcnt_node_close(node);
	ASSERT_EQ(0, status)
		TH_LOG("child step %d failed (10 setuid, 11 query, 12 count, "
		       "13 entries, 14 other pid not EPERM, 15 open not EACCES, "
		       "%d + signal)", status, RC_KILLED(0));
}

TEST_HARNESS_MAIN
