// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Host unit tests of librefcnt against the fake module of fake.c: argument
 * checks, chunking, conversions, rounding, and that nothing is printed and
 * no descriptor leaks. Node facts are checked against the host's sysfs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "refcnt/refcnt.h"
#include "refcnt/hwcntrs.h"
#include "fake.h"

extern int fake_dev_missing;

static int failures, checks;

#define CHECK(cond, ...) do {						\
	checks++;							\
	if (!(cond)) {							\
		failures++;						\
		printf("# FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);	\
		printf(__VA_ARGS__);					\
		printf("\n");						\
	}								\
} while (0)

#define CHECK_ERR(call, e) do {						\
	errno = 0;							\
	long long _r = (long long)(call);				\
	CHECK(_r == -1 && errno == (e), "%s = %lld errno %d (%s), want -1 %s", \
	      #call, _r, errno, strerror(errno), #e);			\
} while (0)

#define CHECK_NULL(call, e) do {					\
	errno = 0;							\
	const void *_p = (call);					\
	CHECK(!_p && errno == (e), "%s = %p errno %d (%s), want NULL %s", \
	      #call, _p, errno, strerror(errno), #e);			\
} while (0)

#define NO_LEAK() CHECK(fake_open_fds() == 0, "%d fake fds left open", fake_open_fds())

static void test_nodes(void)
{
	int ids[8];

	fake_reset();
	CHECK(refcnt_nodes(NULL, 0) == 3, "three nodes");
	memset(ids, 0xff, sizeof(ids));
	CHECK(refcnt_nodes(ids, 8) == 3 && ids[0] == 0 && ids[1] == 2 &&
	      ids[2] == 5 && ids[3] == -1, "ids %d %d %d %d", ids[0], ids[1],
	      ids[2], ids[3]);
	memset(ids, 0xff, sizeof(ids));
	CHECK(refcnt_nodes(ids, 1) == 3 && ids[0] == 0 && ids[1] == -1,
	      "cap 1");
	CHECK_ERR(refcnt_nodes(NULL, 1), EFAULT);
	fake_dev_missing = 1;
	CHECK_ERR(refcnt_nodes(ids, 8), ENOENT);
	CHECK_ERR(refcnt_range_entries(0x1000, 1, &(size_t){ 0 }), ENOENT);
	fake_dev_missing = 0;
	NO_LEAK();
}

static void test_open(void)
{
	struct refcnt_node *n;
	struct rcb_info info;
	struct rcb_slot s[4];

	fake_reset();
	CHECK_NULL(refcnt_node_open(-1, 0), EINVAL);
	CHECK_NULL(refcnt_node_open(0, 1), EINVAL);
	CHECK_NULL(refcnt_node_open(1, 0), ENOENT);
	fake_cfg.nodes[0].open_errno = EACCES;
	CHECK_NULL(refcnt_node_open(0, 0), EACCES);
	fake_cfg.nodes[0].open_errno = 0;
	NO_LEAK();

	n = refcnt_node_open(2, 0);
	CHECK(n, "open node 2: %s", strerror(errno));
	if (!n)
		return;
	CHECK(refcnt_node_nid(n) == 2, "nid");
	CHECK(refcnt_node_cnodeid(n) == 1, "cnodeid");
	CHECK(refcnt_node_fd(n) >= 0, "fd");
	CHECK(refcnt_node_info(n, &info) == 0 && info.rcb_nodeid == 2 &&
	      info.rcb_num_slots == 3, "info");
	CHECK_ERR(refcnt_node_info(n, NULL), EFAULT);
	CHECK_ERR(refcnt_node_info(NULL, &info), EINVAL);
	CHECK(refcnt_node_slots(n, NULL, 0) == 3, "slot count");
	memset(s, 0, sizeof(s));
	CHECK(refcnt_node_slots(n, s, 2) == 3 && s[1].base == 0x200000 &&
	      s[2].base == 0, "two slots");
	CHECK_ERR(refcnt_node_slots(n, NULL, 1), EFAULT);
	CHECK(refcnt_node_sync(n) == 0, "sync");
	refcnt_node_close(n);
	refcnt_node_close(NULL);
	CHECK_ERR(refcnt_node_fd(NULL), EINVAL);
	CHECK_ERR(refcnt_node_nid(NULL), EINVAL);
	CHECK_ERR(refcnt_node_sync(NULL), EINVAL);
	NO_LEAK();
}

static void test_locate(void)
{
	struct refcnt_node *n;
	const struct fake_node *fn;
	uint64_t p, gran;
	unsigned int i;

	for (gran = 256; gran <= 65536; gran *= 16) {
		fake_reset();
		fake_cfg.granularity = (uint32_t)gran;
		fn = &fake_cfg.nodes[1];
		n = refcnt_node_open(2, 0);
		CHECK(n, "open");
		if (!n)
			return;
		/* Brute force over [0, 6 MiB) in steps of gran / 2. */
		for (p = 0; p < 0x600000; p += gran / 2) {
			int64_t want = -1, got;
			uint64_t before = 0;

			for (i = 0; i < fn->nr_slots; i++) {
				const struct rcb_slot *s = &fn->slots[i];

				if (p >= s->base && p < s->base + s->size)
					want = (before + p - s->base) / gran;
				before += s->size;
			}
			errno = 0;
			got = refcnt_node_locate(n, p);
			CHECK(got == want && (want >= 0 || errno == ENOENT),
			      "gran %llu paddr 0x%llx: got %lld want %lld",
			      (unsigned long long)gran, (unsigned long long)p,
			      (long long)got, (long long)want);
		}
		CHECK_ERR(refcnt_node_locate(n, UINT64_MAX), ENOENT);
		CHECK_ERR(refcnt_node_locate(NULL, 0), EINVAL);
		refcnt_node_close(n);
	}
	NO_LEAK();
}

static void test_map(void)
{
	struct refcnt_node *n;
	const uint32_t *m, *c;
	struct rcb_info info;
	uint32_t hw[6], ext[6], lost[6];
	size_t len = 0;
	uint64_t s;

	fake_reset();
	n = refcnt_node_open(2, 0);
	CHECK(n, "open");
	if (!n)
		return;
	refcnt_node_info(n, &info);
	m = refcnt_node_map(n, &len);
	CHECK(m && len == info.rcb_len, "map %p len %zu", (void *)m, len);
	CHECK(refcnt_node_map(n, NULL) == m, "same mapping");
	for (s = 0; s < info.rcb_sw_sets; s += 17) {
		c = refcnt_node_set_counters(n, s);
		CHECK(c == m + s * 3 && c[0] == s * 7 && c[2] == s * 7 + 2,
		      "set %llu", (unsigned long long)s);
	}
	CHECK_NULL(refcnt_node_set_counters(n, info.rcb_sw_sets), EINVAL);
	CHECK_NULL(refcnt_node_set_counters(NULL, 0), EINVAL);
	CHECK_NULL(refcnt_node_map(NULL, NULL), EINVAL);
	CHECK(refcnt_node_read_sets(n, 10, 2, hw, ext, lost) == 0 &&
	      hw[0] == 30 && hw[4] == 34 && ext[3] == 77 && lost[5] == 2,
	      "read_sets");
	CHECK(refcnt_node_read_sets(n, 10, 2, NULL, ext, NULL) == 0, "ext only");
	CHECK_ERR(refcnt_node_read_sets(n, info.rcb_sw_sets, 1, hw, NULL, NULL),
		  EINVAL);
	refcnt_node_close(n);
	NO_LEAK();
}

static int check_entry(uint64_t h, int ext, const struct rcb_page_counters *e)
{
	unsigned int c;

	if (e->cnodeid != fake_cnodeid(h) || e->paddr != fake_paddr(h) ||
	    !!(e->flags & RCB_PAGE_PRESENT) != fake_present(h))
		return 0;
	for (c = 0; c < 64; c++)
		if (e->refcnt[c] != fake_count(h, c, ext))
			return 0;
	return 1;
}

/*
 * Node 5's query of the three pages from 0x20000 through a handle, its
 * entries checked: the handle, to close, or NULL.
 */
static struct refcnt_node *node_query_checked(struct rcb_page_counters *e)
{
	struct refcnt_node *n = refcnt_node_open(5, 0);
	size_t nr = 0, i;
	int ok = 1;

	CHECK(n, "open");
	if (!n)
		return NULL;
	CHECK(refcnt_node_range_query(n, 0, 0x20000, 0x3000, 0, e, 40,
				      &nr) == 0 && nr == 3, "node query");
	for (i = 0; i < 3; i++)
		ok &= check_entry(0x20000 + i * 0x1000, 0, &e[i]);
	CHECK(ok, "node query entries");
	return n;
}

static void test_range(void)
{
	struct rcb_page_counters e[40];
	struct refcnt_node *n;
	size_t nr = 0, i;
	int ok = 1;

	fake_reset();
	/* [0x10010, 0x10010 + 0x5000): hardware pages 0x10000..0x15000. */
	CHECK(refcnt_range_entries(0x10010, 0x5000, &nr) == 0 && nr == 6,
	      "entries %zu", nr);
	CHECK(refcnt_range_entries(0x10000, 0x5000, &nr) == 0 && nr == 5, "aligned");
	CHECK(refcnt_range_entries(0x10fff, 1, &nr) == 0 && nr == 1, "one byte");
	CHECK(refcnt_range_entries(0x10fff, 2, &nr) == 0 && nr == 2, "two bytes");
	CHECK_ERR(refcnt_range_entries(0x1000, 0, &nr), EINVAL);
	CHECK_ERR(refcnt_range_entries(UINT64_MAX - 10, 20, &nr), EINVAL);
	CHECK_ERR(refcnt_range_entries(0x1000, 1, NULL), EFAULT);

	CHECK(refcnt_range_query(0, 0x10010, 0x5000, RCB_RANGE_EXTENDED, e, 40,
				 &nr) == 0 && nr == 6, "query nr %zu", nr);
	for (i = 0; i < 6; i++)
		ok &= check_entry(0x10000 + i * 0x1000, 1, &e[i]);
	CHECK(ok, "entries match the fake");
	nr = 0;
	CHECK_ERR(refcnt_range_query(0, 0x10010, 0x5000, 0, e, 5, &nr), E2BIG);
	CHECK(nr == 6, "E2BIG gives the entries needed: %zu", nr);
	CHECK_ERR(refcnt_range_query(0, 0x10010, 0, 0, e, 5, &nr), EINVAL);
	CHECK_ERR(refcnt_range_query(0, 0x10010, 1, 0x80, e, 5, &nr), EINVAL);
	CHECK_ERR(refcnt_range_query(0, 0x10010, 1, 0, e, 5, NULL), EFAULT);
	CHECK_ERR(refcnt_range_query(99999, 0x10010, 1, 0, e, 5, &nr), ESRCH);

	n = node_query_checked(e);
	if (n) {
		nr = 0;
		CHECK_ERR(refcnt_node_range_query(n, 0, 0x20001, 0x3000, 0, e, 3,
						  &nr), E2BIG);
		CHECK(nr == 4, "needed %zu", nr);
		refcnt_node_close(n);
	}
	CHECK_ERR(refcnt_node_range_query(NULL, 0, 0x20000, 1, 0, e, 1, &nr),
		  EINVAL);
	/* A module that has the sized command gets it. */
	CHECK(fake_stats.range_queries_ver0 == 0 &&
	      fake_stats.range_queries_refused == 0,
	      "%lu 48-byte queries, %lu refused",
	      fake_stats.range_queries_ver0, fake_stats.range_queries_refused);
	NO_LEAK();
}

/*
 * A module older than struct rcb_range_query's reserved[2] gives ENOTTY
 * to the sized command: the library asks again with the 48-byte one, and
 * from then on asks only with that, which every module takes. The
 * library remembers it for the process, so main() runs this test last.
 */
static void test_range_old_module(void)
{
	struct rcb_page_counters e[40];
	struct refcnt_node *n;
	size_t nr = 0, i;
	int ok = 1;

	fake_reset();
	fake_cfg.range_query_ver0_only = 1;
	CHECK(refcnt_range_query(0, 0x10010, 0x5000, RCB_RANGE_EXTENDED, e, 40,
				 &nr) == 0 && nr == 6,
	      "query on an old module: nr %zu, %s", nr, strerror(errno));
	for (i = 0; i < 6; i++)
		ok &= check_entry(0x10000 + i * 0x1000, 1, &e[i]);
	CHECK(ok, "entries through the 48-byte command match the fake");
	CHECK(fake_stats.range_queries_refused == 1 &&
	      fake_stats.range_queries_ver0 == 1,
	      "%lu sized queries refused, %lu 48-byte ones (want 1, 1)",
	      fake_stats.range_queries_refused, fake_stats.range_queries_ver0);

	/* Remembered: the 48-byte command at once, its E2BIG as ever. */
	nr = 0;
	CHECK_ERR(refcnt_range_query(0, 0x10010, 0x5000, 0, e, 5, &nr), E2BIG);
	CHECK(nr == 6, "E2BIG gives the entries needed: %zu", nr);
	n = node_query_checked(e);
	if (n)
		refcnt_node_close(n);
	CHECK(fake_stats.range_queries_refused == 1 &&
	      fake_stats.range_queries_ver0 == 3,
	      "%lu sized queries refused, %lu 48-byte ones (want 1, 3)",
	      fake_stats.range_queries_refused, fake_stats.range_queries_ver0);

	/* A newer module (reloaded) takes the 48-byte command too. */
	fake_cfg.range_query_ver0_only = 0;
	CHECK(refcnt_range_query(0, 0x10000, 0x1000, 0, e, 40, &nr) == 0 &&
	      nr == 1 && check_entry(0x10000, 0, &e[0]),
	      "query on a newer module after an old one");
	CHECK(fake_stats.range_queries_ver0 == 4, "%lu 48-byte queries",
	      fake_stats.range_queries_ver0);
	NO_LEAK();
}

/*
 * Packed entries of a machine of cnodes nodes (entries of want_size bytes)
 * against the full ones: 40 hardware pages with every kind of page.
 */
static void range_packed_case(uint32_t cnodes, size_t want_size)
{
	static struct rcb_page_counters full[40];
	static unsigned char buf[41 * RCB_PAGE_SET_SIZE(RCB_MAX_COUNTERS)];
	const uint64_t va = 0x10010, len = 39 * 0x1000;
	struct refcnt_node *n;
	struct rcb_info info;
	unsigned long queries;
	size_t nr = 0, i, size, bad = 0;
	unsigned int cps, c, flags;

	fake_reset();
	fake_cfg.cnodes = cnodes;
	n = refcnt_node_open(0, 0);
	CHECK(n, "open");
	if (!n)
		return;
	CHECK(refcnt_node_info(n, &info) == 0, "info");
	cps = info.rcb_sw_counters_per_set;
	size = RCB_PAGE_SET_SIZE(cps);
	CHECK(size == want_size, "%u nodes: entries of %zu bytes, want %zu",
	      cnodes, size, want_size);

	for (flags = 0; flags <= RCB_RANGE_EXTENDED; flags++) {
		bad = 0;
		CHECK(refcnt_range_query(0, va, len, flags, full, 40, &nr) == 0 &&
		      nr == 40, "full query nr %zu", nr);
		memset(buf, 0xa5, sizeof(buf));
		nr = 0;
		if (flags)
			CHECK(refcnt_range_query_packed(0, va, len, flags, buf, 40,
							&nr) == 0 && nr == 40,
			      "packed query nr %zu: %s", nr, strerror(errno));
		else	/* RCB_RANGE_PACKED may be given. */
			CHECK(refcnt_node_range_query_packed(n, 0, va, len,
							     RCB_RANGE_PACKED, buf,
							     40, &nr) == 0 && nr == 40,
			      "node packed query nr %zu: %s", nr, strerror(errno));
		for (i = 0; i < 40; i++) {
			const struct rcb_page_set *e = refcnt_page_set(buf, i, cps);
			const struct rcb_page_counters *f = &full[i];
			int ok = (const unsigned char *)e == buf + i * size &&
				 e->paddr == f->paddr && e->flags == (uint32_t)f->flags &&
				 e->cnodeid == f->cnodeid && e->pad == 0 &&
				 e->page_shift == (f->page_size ? 12 : 0) &&
				 (cps % 2 == 0 || e->refcnt[cps] == 0);

			for (c = 0; c < cps; c++)
				ok &= e->refcnt[c] == f->refcnt[c];
			if (!ok && bad++ < 3)
				CHECK(0, "%u nodes flags %u: entry %zu differs", cnodes,
				      flags, i);
		}
		for (i = 40 * size; i < sizeof(buf); i++)
			bad += buf[i] != 0xa5;
		CHECK(bad == 0, "%u nodes flags %u: %zu bad entries or bytes past them",
		      cnodes, flags, bad);
	}

	/* One entry short: E2BIG, the count needed, nothing written. */
	memset(buf, 0xa5, sizeof(buf));
	nr = 0;
	CHECK_ERR(refcnt_range_query_packed(0, va, len, 0, buf, 39, &nr), E2BIG);
	CHECK(nr == 40, "E2BIG gives the entries needed: %zu", nr);
	nr = 0;
	CHECK_ERR(refcnt_node_range_query_packed(n, 0, va, len, RCB_RANGE_EXTENDED,
						 buf, 39, &nr), E2BIG);
	CHECK(nr == 40, "node E2BIG gives the entries needed: %zu", nr);
	for (i = 0, bad = 0; i < sizeof(buf); i++)
		bad += buf[i] != 0xa5;
	CHECK(bad == 0, "E2BIG wrote %zu bytes", bad);

	/* The full form refuses RCB_RANGE_PACKED without asking the kernel. */
	queries = fake_stats.range_queries;
	CHECK_ERR(refcnt_range_query(0, va, len, RCB_RANGE_PACKED, full, 40, &nr),
		  EINVAL);
	CHECK_ERR(refcnt_range_query(0, va, len, RCB_RANGE_FLAGS, full, 40, &nr),
		  EINVAL);
	CHECK_ERR(refcnt_node_range_query(n, 0, va, len, RCB_RANGE_PACKED, full,
					  40, &nr), EINVAL);
	CHECK(fake_stats.range_queries == queries, "%lu queries",
	      fake_stats.range_queries - queries);

	CHECK_ERR(refcnt_range_query_packed(0, va, len, 0x80, buf, 40, &nr), EINVAL);
	CHECK_ERR(refcnt_range_query_packed(0, va, 0, 0, buf, 40, &nr), EINVAL);
	CHECK_ERR(refcnt_range_query_packed(0, va, len, 0, buf, 40, NULL), EFAULT);
	CHECK_ERR(refcnt_range_query_packed(99999, va, len, 0, buf, 40, &nr), ESRCH);
	CHECK_ERR(refcnt_node_range_query_packed(n, 0, va, len, 0, buf, 40, NULL),
		  EFAULT);
	CHECK_ERR(refcnt_node_range_query_packed(NULL, 0, va, len, 0, buf, 40, &nr),
		  EINVAL);
	refcnt_node_close(n);
	NO_LEAK();
}

static void test_range_packed(void)
{
	range_packed_case(1, 24);	/* one counter and the pad */
	range_packed_case(2, 24);
	range_packed_case(3, 32);	/* the default, padded */
	range_packed_case(4, 32);
	range_packed_case(64, 272);
	range_packed_case(65, 56);	/* 9 counters of 8 nodes, padded */
}

/* refcnt_pioctl over a large range with hardware pages of gran bytes. */
/* Through refcnt_pioctl_sized() below 4 KB pages, where it is needed. */
static void pioctl_range(uint32_t gran, uint64_t vaddr, long len, int cmd)
{
	size_t n, i, bad = 0;
	sn0_refcnt_buf_t *buf, canary;
	sn0_refcnt_args_t a;
	uint64_t h0 = vaddr - vaddr % gran;

	fake_reset();
	fake_cfg.granularity = gran;
	n = (vaddr + len - h0 + gran - 1) / gran;
	buf = malloc((n + 1) * sizeof(*buf));
	if (!buf) {
		CHECK(0, "malloc");
		return;
	}
	memset(&canary, 0x5a, sizeof(canary));
	buf[n] = canary;
	a.vaddr = (caddr_t)(uintptr_t)vaddr;
	a.len = len;
	a.buf = buf;
	if (gran < 4096)
		CHECK(refcnt_pioctl_sized(getpid(), cmd, &a, n * sizeof(*buf)) == 0,
		      "pioctl_sized: %s", strerror(errno));
	else
		CHECK(refcnt_pioctl(getpid(), cmd, &a) == 0, "pioctl: %s",
		      strerror(errno));
	CHECK(fake_stats.last_pid == 0, "own pid passed as 0");
	for (i = 0; i < n; i++) {
		uint64_t h = h0 + i * gran;
		int ext = cmd == PIOCGETSN0EXTREFCNTRS;
		unsigned int c;
		int ok;

		ok = buf[i].cnodeid == fake_cnodeid(h) &&
		     buf[i].paddr == fake_paddr(h) &&
		     buf[i].page_size == (fake_present(h) ? 4096u : 0u) &&
		     !!(buf[i].refcnt_set.flags & RCB_PAGE_PRESENT) == fake_present(h);
		for (c = 0; c < SN0_REFCNT_MAX_COUNTERS; c++)
			ok &= buf[i].refcnt_set.refcnt[c] == fake_count(h, c, ext);
		if (!ok && bad++ < 3)
			CHECK(0, "gran %u entry %zu (0x%llx) differs", gran, i,
			      (unsigned long long)h);
	}
	CHECK(bad == 0, "%zu of %zu entries differ", bad, n);
	CHECK(!memcmp(&buf[n], &canary, sizeof(canary)),
	      "wrote past the last entry");
	CHECK(fake_stats.max_buf_entries <= 512, "chunk of %llu entries",
	      (unsigned long long)fake_stats.max_buf_entries);
	CHECK(fake_stats.range_queries == (n + 511) / 512,
	      "%lu queries for %zu entries", fake_stats.range_queries, n);
	free(buf);
	NO_LEAK();
}

static void test_pioctl(void)
{
	sn0_refcnt_buf_t b[4];
	sn0_refcnt_args_t a = { (caddr_t)0x10000, 4096, b };

	fake_reset();
	CHECK_ERR(refcnt_pioctl(0, 0, &a), ENOTTY);
	CHECK_ERR(refcnt_pioctl(0, PIOCGETSN0REFCNTRS, NULL), EFAULT);
	a.buf = NULL;
	CHECK_ERR(refcnt_pioctl(0, PIOCGETSN0REFCNTRS, &a), EFAULT);
	a.buf = b;
	a.len = 0;
	CHECK_ERR(refcnt_pioctl(0, PIOCGETSN0REFCNTRS, &a), EINVAL);
	a.len = -4096;
	CHECK_ERR(refcnt_pioctl(0, PIOCGETSN0EXTREFCNTRS, &a), EINVAL);
	a.len = 4096;
	CHECK_ERR(refcnt_pioctl(-2, PIOCGETSN0EXTREFCNTRS, &a), EINVAL);
	CHECK_ERR(refcnt_pioctl(99999, PIOCGETSN0EXTREFCNTRS, &a), ESRCH);
	a.vaddr = (caddr_t)(uintptr_t)(UINT64_MAX - 100);
	CHECK_ERR(refcnt_pioctl(0, PIOCGETSN0EXTREFCNTRS, &a), EINVAL);
	NO_LEAK();

	/* 1 GiB, unaligned both ends. */
	pioctl_range(4096, 0x40000123, (1L << 30) + 77, PIOCGETSN0EXTREFCNTRS);
	pioctl_range(4096, 0x7f0000000000, 4096, PIOCGETSN0REFCNTRS);
	pioctl_range(256, 0x1000010, 3 * 512 * 256, PIOCGETSN0REFCNTRS);
	pioctl_range(16384, 0x2001000, 600 * 16384L, PIOCGETSN0EXTREFCNTRS);
}

/*
 * Below 4 KB hardware pages refcnt_pioctl() refuses (EOVERFLOW): the
 * refcnt(5) program's buffer would overflow. refcnt_pioctl_sized() checks
 * the buffer at any granularity (E2BIG), writing nothing when it refuses.
 */
static void test_pioctl_sized(void)
{
	sn0_refcnt_buf_t b[40];
	sn0_refcnt_args_t a = { (caddr_t)0x10080, 8192, b };
	unsigned int i;

	fake_reset();
	fake_cfg.granularity = 256;
	memset(b, 0x5a, sizeof(b));
	CHECK_ERR(refcnt_pioctl(0, PIOCGETSN0REFCNTRS, &a), EOVERFLOW);
	/* [0x10000, 0x12080): 33 entries of 256 bytes */
	CHECK_ERR(refcnt_pioctl_sized(0, PIOCGETSN0REFCNTRS, &a, 32 * sizeof(b[0])),
		  E2BIG);
	CHECK_ERR(refcnt_pioctl_sized(0, PIOCGETSN0REFCNTRS, &a, 33 * sizeof(b[0]) - 1),
		  E2BIG);
	for (i = 0; i < 40; i++)
		CHECK(b[i].cnodeid == 0x5a5a, "entry %u written on a refusal", i);
	CHECK(fake_stats.range_queries == 0, "queried on a refusal");
	CHECK(refcnt_pioctl_sized(0, PIOCGETSN0EXTREFCNTRS, &a, 33 * sizeof(b[0])) == 0,
	      "exact size: %s", strerror(errno));
	CHECK(b[32].cnodeid == fake_cnodeid(0x12000) && b[33].cnodeid == 0x5a5a,
	      "33 entries written: %d %d", b[32].cnodeid, b[33].cnodeid);
	CHECK_ERR(refcnt_pioctl_sized(0, 0, &a, sizeof(b)), ENOTTY);
	CHECK_ERR(refcnt_pioctl_sized(0, PIOCGETSN0REFCNTRS, NULL, sizeof(b)), EFAULT);
	a.len = 0;
	CHECK_ERR(refcnt_pioctl_sized(0, PIOCGETSN0REFCNTRS, &a, sizeof(b)), EINVAL);
	NO_LEAK();

	/* At 4 KB and above a refcnt(5)-sized buffer is enough. */
	fake_cfg.granularity = 4096;
	a.len = 8192;
	CHECK(refcnt_pioctl(0, PIOCGETSN0REFCNTRS, &a) == 0, "4 KB: %s",
	      strerror(errno));
	CHECK_ERR(refcnt_pioctl_sized(0, PIOCGETSN0REFCNTRS, &a, 2 * sizeof(b[0])),
		  E2BIG);
	CHECK(refcnt_pioctl_sized(0, PIOCGETSN0REFCNTRS, &a, 3 * sizeof(b[0])) == 0,
	      "4 KB sized: %s", strerror(errno));
	NO_LEAK();
}

/* LIBREFCNT_1.0's refcnt_data_range (flags 0: hardware), src/datarange.c. */
int refcnt__data_range_1_0(pid_t pid, uint64_t start, uint64_t end,
			   unsigned int flags, struct refcnt_data_range *out);

/*
 * Data range against the formulas; with paddr_in_slots the fake's physical
 * addresses lie in its nodes' slots, so the lost counts (c in counter c)
 * are read: 0 + 1 + 2 per counted page.
 */
static void data_range_case(uint32_t gran, uint64_t start, uint64_t end,
			    unsigned int flags, int paddr_in_slots)
{
	struct refcnt_data_range dr, want;
	int ext = flags != REFCNT_DATA_HARDWARE && flags != 0x80000000u;
	int hw = flags != REFCNT_DATA_EXTENDED;
	uint64_t h;
	unsigned int c;

	fake_reset();
	fake_cfg.granularity = gran;
	fake_cfg.paddr_in_slots = paddr_in_slots;
	memset(&want, 0, sizeof(want));
	want.covered_start = start / gran * gran;
	want.covered_end = (end + gran - 1) / gran * gran;
	for (h = want.covered_start; h < want.covered_end; h += gran) {
		want.pages++;
		if (!fake_present(h)) {
			want.pages_not_present++;
			continue;
		}
		want.pages_present++;
		if (!fake_paddr(h)) {
			want.pages_denied++;
			continue;
		}
		if (!fake_count(h, 0, 1)) {
			want.pages_uncounted++;
			continue;
		}
		want.pages_counted++;
		for (c = 0; c < 3; c++) {
			if (ext)
				want.totals[c] += fake_count(h, c, 1);
			if (hw)
				want.totals[c] += fake_count(h, c, 0);
		}
	}
	memset(&dr, 0xff, sizeof(dr));
	if (flags == 0x80000000u)	/* a program linked against 1.0, flags 0 */
		CHECK(refcnt__data_range_1_0(0, start, end, 0, &dr) == 0,
		      "data range 1.0: %s", strerror(errno));
	else
		CHECK(refcnt_data_range(0, start, end, flags, &dr) == 0,
		      "data range: %s", strerror(errno));
	CHECK(dr.start == start && dr.end == end, "request");
	CHECK(dr.covered_start == want.covered_start &&
	      dr.covered_end == want.covered_end, "covered [0x%llx, 0x%llx)",
	      (unsigned long long)dr.covered_start,
	      (unsigned long long)dr.covered_end);
	CHECK(dr.start_off == start - want.covered_start &&
	      dr.end_off == want.covered_end - end, "offsets %llu %llu",
	      (unsigned long long)dr.start_off, (unsigned long long)dr.end_off);
	CHECK(start - dr.start_off == dr.covered_start &&
	      end + dr.end_off == dr.covered_end, "PAPI identities");
	CHECK(dr.granularity == gran && dr.nr_counters == 3 &&
	      dr.nodes_per_counter == 1, "shape");
	CHECK(dr.pages == want.pages && dr.pages_present == want.pages_present &&
	      dr.pages_not_present == want.pages_not_present &&
	      dr.pages_denied == want.pages_denied &&
	      dr.pages_uncounted == want.pages_uncounted &&
	      dr.pages_counted == want.pages_counted,
	      "pages %llu/%llu present %llu/%llu counted %llu/%llu",
	      (unsigned long long)dr.pages, (unsigned long long)want.pages,
	      (unsigned long long)dr.pages_present,
	      (unsigned long long)want.pages_present,
	      (unsigned long long)dr.pages_counted,
	      (unsigned long long)want.pages_counted);
	for (c = 0; c < 64; c++)
		CHECK(dr.totals[c] == want.totals[c], "totals[%u] %llu want %llu",
		      c, (unsigned long long)dr.totals[c],
		      (unsigned long long)want.totals[c]);
	CHECK(dr.total == want.totals[0] + want.totals[1] + want.totals[2],
	      "total");
	/* fake_reset(): both feed parameters 0 */
	CHECK(dr.status == (paddr_in_slots ? REFCNT_DATA_LOST_COUNTED : 0u),
	      "status 0x%x", dr.status);
	CHECK(dr.lost == (paddr_in_slots ? 3 * want.pages_counted : 0),
	      "lost %llu, %llu counted pages", (unsigned long long)dr.lost,
	      (unsigned long long)want.pages_counted);
	CHECK(dr.reserved32 == 0, "reserved32");
	for (c = 0; c < 6; c++)
		CHECK(dr.reserved[c] == 0, "reserved");
	NO_LEAK();
}

/* Which feeds were on, read from the module's parameters. */
static void data_range_feeds(unsigned int fault, unsigned int pebs,
			     int missing, uint32_t want)
{
	struct refcnt_data_range dr;

	fake_reset();
	fake_cfg.fault_period = fault;
	fake_cfg.pebs_period = pebs;
	fake_cfg.params_missing = missing;
	CHECK(refcnt_data_range(0, 0x10000, 0x20000, 0, &dr) == 0,
	      "data range: %s", strerror(errno));
	CHECK((dr.status & ~REFCNT_DATA_LOST_COUNTED) == want,
	      "feeds %u %u missing %d: status 0x%x want 0x%x", fault, pebs,
	      missing, dr.status, want);
	NO_LEAK();
}

static void test_data_range(void)
{
	struct refcnt_data_range dr;

	/* flags 0 is REFCNT_DATA_TOTAL; 0x80000000: the 1.0 symbol's 0 */
	data_range_case(4096, 0x10010, 0x10010 + 100 * 4096 + 5, 0, 0);
	data_range_case(4096, 0x10010, 0x10010 + 100 * 4096 + 5, 0, 1);
	data_range_case(4096, 0x10000, 0x10000 + 2000 * 4096, REFCNT_DATA_EXTENDED, 1);
	data_range_case(4096, 0x10fff, 0x11001, REFCNT_DATA_TOTAL, 0);
	data_range_case(4096, 0x10fff, 0x31001, REFCNT_DATA_HARDWARE, 1);
	data_range_case(4096, 0x10fff, 0x31001, 0x80000000u, 0);
	data_range_case(256, 0x100080, 0x100080 + 1500 * 256 - 3, REFCNT_DATA_TOTAL, 1);
	data_range_case(65536, 0x100080, 0x100081, 0, 0);
	data_range_case(65536, 0x100080, 0x100081 + 65536 * 7, REFCNT_DATA_HARDWARE, 1);

	data_range_feeds(0, 0, 0, 0);
	data_range_feeds(64, 0, 0, REFCNT_DATA_FEED_FAULT);
	data_range_feeds(0, 10007, 0, REFCNT_DATA_FEED_PEBS);
	data_range_feeds(1, 1, 0, REFCNT_DATA_FEED_FAULT | REFCNT_DATA_FEED_PEBS);
	data_range_feeds(64, 64, 1, REFCNT_DATA_FEEDS_UNKNOWN);

	fake_reset();
	CHECK_ERR(refcnt_data_range(0, 0x2000, 0x2000, 0, &dr), EINVAL);
	CHECK_ERR(refcnt_data_range(0, 0x3000, 0x2000, 0, &dr), EINVAL);
	CHECK_ERR(refcnt_data_range(0, 0x1000, 0x2000, 0x4, &dr), EINVAL);
	CHECK_ERR(refcnt_data_range(0, 0x1000, 0x2000, REFCNT_DATA_EXTENDED | REFCNT_DATA_TOTAL, &dr),
		  EINVAL);
	CHECK_ERR(refcnt_data_range(0, 0x1000, 0x2000, REFCNT_DATA_HARDWARE | REFCNT_DATA_TOTAL, &dr),
		  EINVAL);
	CHECK_ERR(refcnt_data_range(0, 0x1000, 0x2000, REFCNT_DATA_HARDWARE | REFCNT_DATA_EXTENDED, &dr),
		  EINVAL);
	CHECK_ERR(refcnt_data_range(0, 0x1000, 0x2000, 0, NULL), EFAULT);
	CHECK_ERR(refcnt_data_range(99999, 0x1000, 0x2000, 0, &dr), ESRCH);
	NO_LEAK();
}

/* ---------------------------------------------------------- node facts */

static int read_sys(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && buf[n - 1] == '\n')
		buf[--n] = 0;
	return 0;
}

/* Parse "0-3,5" into ids; count. */
static int parse(const char *s, int *ids, int cap)
{
	int n = 0;

	while (*s) {
		char *e;
		long a = strtol(s, &e, 10), b = a;

		if (*e == '-')
			b = strtol(e + 1, &e, 10);
		for (; a <= b; a++)
			if (n < cap)
				ids[n++] = (int)a;
		s = *e == ',' ? e + 1 : e;
		if (*s && *s != ',' && (*s < '0' || *s > '9'))
			break;
	}
	return n;
}

static void test_numa(void)
{
	static int online[4096], cpus[8192], got[8192];
	char buf[65536], path[128];
	int n, i, j, nc, k, nid_max;

	if (read_sys("/sys/devices/system/node/online", buf, sizeof(buf))) {
		printf("# no /sys/devices/system/node: node facts not checked\n");
		return;
	}
	n = parse(buf, online, 4096);
	nid_max = online[n - 1];
	CHECK(refcnt_num_cnodes() == n, "cnodes");
	for (i = 0; i < n; i++) {
		CHECK(refcnt_cnode_to_nid(i) == online[i], "cnode %d", i);
		CHECK(refcnt_nid_to_cnode(online[i]) == i, "nid %d", online[i]);

		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist",
			 online[i]);
		read_sys(path, buf, sizeof(buf));
		nc = parse(buf, cpus, 8192);
		k = refcnt_nid_cpus(online[i], got, 8192);
		CHECK(k == nc, "node %d: %d cpus, want %d", online[i], k, nc);
		for (j = 0; j < nc && j < k; j++)
			CHECK(got[j] == cpus[j], "cpu %d", j);
		if (nc > 1)
			CHECK(refcnt_nid_cpus(online[i], got, 1) == nc, "cap 1");

		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/distance",
			 online[i]);
		read_sys(path, buf, sizeof(buf));
		{
			char *s = buf;

			for (j = 0; j < n; j++) {
				long d = strtol(s, &s, 10);

				CHECK(refcnt_nid_distance(online[i], online[j]) == d,
				      "distance %d %d", online[i], online[j]);
			}
		}
	}
	CHECK_ERR(refcnt_cnode_to_nid(-1), EINVAL);
	CHECK_ERR(refcnt_cnode_to_nid(n), EINVAL);
	CHECK_ERR(refcnt_nid_to_cnode(-1), EINVAL);
	CHECK_ERR(refcnt_nid_to_cnode(nid_max + 1), ENOENT);
	CHECK_ERR(refcnt_nid_cpus(nid_max + 1, got, 1), ENOENT);
	CHECK_ERR(refcnt_nid_cpus(-5, got, 1), EINVAL);
	CHECK_ERR(refcnt_nid_cpus(online[0], NULL, 1), EFAULT);
	CHECK_ERR(refcnt_nid_distance(online[0], nid_max + 7), ENOENT);
	CHECK_ERR(refcnt_nid_distance(100000, online[0]), ENOENT);
}

/* Counting one process: what reaches RCB_COUNT_START, the session fd. */
static void test_count(void)
{
	struct rcb_count_range r[2] = { { 0x10000, 4096 }, { 0x40000, 8192 } };
	const struct rcb_count *c = &fake_stats.last_count;
	struct rcb_count_stats st;
	struct refcnt_node *n;
	int fd;

	fake_reset();
	fd = refcnt_count_start(1234, RCB_COUNT_CHILDREN, 3, 5, r, 2);
	CHECK(fd > 0, "refcnt_count_start = %d (%s)", fd, strerror(errno));
	CHECK(fake_stats.count_starts == 1, "%lu starts", fake_stats.count_starts);
	CHECK(c->pid == 1234 && c->flags == RCB_COUNT_CHILDREN &&
	      c->fault_period == 3 && c->pebs_period == 5 &&
	      c->ranges == (uintptr_t)r && c->nr_ranges == 2 &&
	      !c->nr_iranges && !c->iranges && !c->reserved[0],
	      "argument as given");
	CHECK(fake_open_fds() == 0, "the device is closed again (%d open)",
	      fake_open_fds());
	memset(&st, 0xa5, sizeof(st));
	CHECK(refcnt_count_stats(fd, &st) == 0, "stats: %s", strerror(errno));
	CHECK(st.samples == FAKE_SESSION_SAMPLES &&
	      st.delivered == FAKE_SESSION_DELIVERED && st.unresolved == 1 &&
	      st.outside == 1 && !st.flags && !st.pad && !st.dropped &&
	      !st.throttled, "stats as reported, the rest zeroed");
	CHECK(refcnt_count_stop(fd) == 0, "stop: %s", strerror(errno));
	CHECK_ERR(refcnt_count_stats(fd, &st), EBADF);
	CHECK_ERR(refcnt_count_stop(fd), EBADF);
	CHECK_ERR(refcnt_count_stats(-1, NULL), EFAULT);

	/* Refused before any ioctl. */
	CHECK_ERR(refcnt_count_start(0, 0, 1, 0, NULL, 1), EINVAL);
	CHECK_ERR(refcnt_node_count_start(NULL, 0, 0, 1, 0, NULL, 0), EINVAL);
	CHECK(fake_stats.count_starts == 1, "%lu starts", fake_stats.count_starts);
	/* The kernel's errors pass through. */
	CHECK_ERR(refcnt_count_start(0, 0, 0, 0, NULL, 0), EINVAL);

	n = refcnt_node_open(fake_cfg.nodes[0].nid, 0);
	CHECK(n != NULL, "open: %s", strerror(errno));
	if (!n)
		return;
	fd = refcnt_node_count_start(n, 0, 0, 1, 0, NULL, 0);
	CHECK(fd > 0 && c->pid == 0 && c->nr_ranges == 0 && c->ranges == 0,
	      "node_count_start = %d", fd);
	CHECK(fake_open_fds() == 1, "the node stays open (%d open)",
	      fake_open_fds());
	CHECK_ERR(refcnt_count_stats(refcnt_node_fd(n), &st), ENOTTY);
	CHECK(refcnt_count_stop(fd) == 0, "stop: %s", strerror(errno));
	refcnt_node_close(n);
}

/* librefcnt 1.3: sessions with instruction ranges and totals; feeds. */
static void test_count_open(void)
{
	struct rcb_count_range d[2] = { { 0x10000, 4096 }, { 0x40000, 8192 } };
	struct rcb_count_range ir[1] = { { 0x401000, 0x80 } };
	const struct rcb_count *c = &fake_stats.last_count;
	struct refcnt_count_attr a = {
		.pid = 77, .flags = RCB_COUNT_THREAD | RCB_COUNT_DEVICES,
		.data_ranges = d, .nr_data_ranges = 2,
		.instr_ranges = ir, .nr_instr_ranges = 1,
	};
	struct rcb_count_totals t[5];
	struct rcb_feed_info f[3];
	int fd, i;

	fake_reset();
	fd = refcnt_count_open(&a);
	CHECK(fd > 0, "refcnt_count_open = %d (%s)", fd, strerror(errno));
	CHECK(c->pid == 77 && c->flags == (RCB_COUNT_THREAD | RCB_COUNT_DEVICES) &&
	      !c->fault_period && !c->pebs_period &&
	      c->ranges == (uintptr_t)d && c->nr_ranges == 2 &&
	      c->iranges == (uintptr_t)ir && c->nr_iranges == 1 &&
	      !c->reserved[0], "argument as given");
	CHECK(fake_open_fds() == 0, "the device is closed again");

	memset(t, 0xa5, sizeof(t));
	CHECK(refcnt_count_read(fd, t, 5) == 4, "read: 4 entries");
	for (i = 0; i < 4; i++)
		CHECK(t[i].references == (uint64_t)i + 1 &&
		      t[i].samples == (uint64_t)i + 1 &&
		      t[i].nodes[1] == 100 * ((uint64_t)i + 1) + 1,
		      "entry %d as the session has it", i);
	CHECK(t[4].references == 0xa5a5a5a5a5a5a5a5ULL, "entry 4 untouched");
	memset(t, 0xa5, sizeof(t));
	CHECK(refcnt_count_read(fd, t, 1) == 4 && t[0].references == 1 &&
	      t[1].references == 0xa5a5a5a5a5a5a5a5ULL, "cap 1: one entry");
	CHECK(refcnt_count_read(fd, NULL, 0) == 4, "cap 0 sizes");
	CHECK_ERR(refcnt_count_read(fd, NULL, 1), EFAULT);
	CHECK(refcnt_count_stop(fd) == 0, "stop: %s", strerror(errno));
	CHECK_ERR(refcnt_count_read(fd, t, 1), EBADF);

	/* Refused before any ioctl. */
	a.nr_instr_ranges = 1;
	a.instr_ranges = NULL;
	CHECK_ERR(refcnt_count_open(&a), EINVAL);
	a.instr_ranges = ir;
	a.reserved[3] = 1;
	CHECK_ERR(refcnt_count_open(&a), EINVAL);
	CHECK_ERR(refcnt_count_open(NULL), EFAULT);
	CHECK_ERR(refcnt_node_count_open(NULL, &a), EINVAL);
	CHECK(fake_stats.count_starts == 1, "%lu starts", fake_stats.count_starts);

	memset(f, 0xa5, sizeof(f));
	CHECK(refcnt_feeds(f, 3) == 2, "two feeds");
	CHECK(!strcmp(f[0].name, "fault") && !strcmp(f[1].name, "hub") &&
	      f[1].period == 64 && (f[1].caps & RCB_FEED_STORES) &&
	      f[2].caps == 0xa5a5a5a5, "feeds as the module has them");
	CHECK(refcnt_feeds(NULL, 0) == 2, "cap 0 sizes");
	CHECK_ERR(refcnt_feeds(NULL, 2), EFAULT);
	CHECK(fake_open_fds() == 0, "no device left open");
}

int main(void)
{
	char errpath[] = "/tmp/refcnt-unit-stderr.XXXXXX";
	struct stat st;
	int errfd, saved;

	setvbuf(stdout, NULL, _IONBF, 0);
	/* Everything the library (or libnuma) prints would land here. */
	errfd = mkstemp(errpath);
	saved = dup(2);
	if (errfd < 0 || saved < 0 || dup2(errfd, 2) < 0) {
		perror("stderr redirection");
		return 2;
	}
	unlink(errpath);

	test_nodes();
	test_open();
	test_locate();
	test_map();
	test_range();
	test_range_packed();
	test_pioctl();
	test_pioctl_sized();
	test_data_range();
	test_numa();
	test_count();
	test_count_open();
	/* Last: the library remembers an old module for the process. */
	test_range_old_module();

	fstat(errfd, &st);
	dup2(saved, 2);
	CHECK(st.st_size == 0, "%lld bytes printed on stderr", (long long)st.st_size);
	printf("%s librefcnt unit tests: %d checks, %d failed\n",
	       failures ? "not ok" : "ok", checks, failures);
	return failures ? 1 : 0;
}
