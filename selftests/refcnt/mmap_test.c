// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt selftests: mmap of the extended counter buffer.
 *
 * Read-only mappings (shared or private, whole or partial) of a node
 * just reset read zeros; writable mappings are refused (EPERM from the module, EACCES from the
 * kernel for a shared mapping of a read-only fd, EACCES from mprotect);
 * offsets and lengths beyond rcb_len give EINVAL; mappings survive close
 * and fork and can be unmapped piecewise, and no module reference leaks.
 */
#include "refcnt_helpers.h"

/* The nodes with memory, their rcb_info, the module parameters. */
struct map_env {
	struct rc_nodes mem;
	struct rc_params params;
	struct rcb_info info[RC_MAX_NODES];
	size_t pg;
};

/*
 * Fill e and reset every node: the tests read zeros, whatever the tests
 * before them counted.
 */
static void map_env_init(struct __test_metadata *_metadata, struct map_env *e)
{
	int i;

	ASSERT_TRUE(rc_module_loaded()) TH_LOG("refcnt.ko is not loaded");
	ASSERT_EQ(0, rc_node_list("has_memory", &e->mem));
	ASSERT_LT(0, e->mem.n);
	ASSERT_EQ(0, rc_read_params(&e->params));
	e->pg = rc_page_size();
	for (i = 0; i < e->mem.n; i++) {
		int fd = rc_open_node(e->mem.id[i], O_RDONLY);

		ASSERT_LE(0, fd) TH_LOG("node%d: %s", e->mem.id[i], strerror(errno));
		ASSERT_EQ(0, ioctl(fd, RCB_INFO_GET, &e->info[i]));
		ASSERT_LT(0ULL, e->info[i].rcb_len);
		close(fd);
		ASSERT_EQ(0, rc_reset_node(e->mem.id[i])) TH_LOG("node%d", e->mem.id[i]);
	}
}

/* Module references: 0 when no file of the module is open or mapped. */
static int module_refcnt(void)
{
	char buf[32];

	if (rc_read_file(RC_MODDIR "/refcnt", buf, sizeof(buf)) < 0)
		return -1;
	return atoi(buf);
}

static size_t maplen(const struct map_env *e, int i)
{
	return rc_round_up(e->info[i].rcb_len, e->pg);
}

/* mmap() that returns NULL on failure (errno kept). */
static void *map_node(int fd, size_t len, int prot, int flags, off_t off)
{
	void *p = mmap(NULL, len, prot, flags, fd, off);

	return p == MAP_FAILED ? NULL : p;
}

FIXTURE(map) {
	struct map_env e;
};

FIXTURE_SETUP(map)
{
	map_env_init(_metadata, &self->e);
}

FIXTURE_TEARDOWN(map)
{
}

/* ================================= read-only mappings, per fd and flags */

FIXTURE(map_read) {
	struct map_env e;
};

FIXTURE_VARIANT(map_read) {
	int oflags;
	int mflags;
};

FIXTURE_VARIANT_ADD(map_read, rdonly_shared) {
	.oflags = O_RDONLY, .mflags = MAP_SHARED,
};

FIXTURE_VARIANT_ADD(map_read, rdonly_private) {
	.oflags = O_RDONLY, .mflags = MAP_PRIVATE,
};

/* An O_RDWR fd may be mapped read-only. */
FIXTURE_VARIANT_ADD(map_read, rdwr_shared) {
	.oflags = O_RDWR, .mflags = MAP_SHARED,
};

FIXTURE_VARIANT_ADD(map_read, rdwr_private) {
	.oflags = O_RDWR, .mflags = MAP_PRIVATE,
};

FIXTURE_SETUP(map_read)
{
	map_env_init(_metadata, &self->e);
}

FIXTURE_TEARDOWN(map_read)
{
}

/* Map every node read-only: all bytes read zero. */
TEST_F(map_read, zero)
{
	const struct map_env *e = &self->e;
	int i;

	for (i = 0; i < e->mem.n; i++) {
		int node = e->mem.id[i];
		size_t len = e->info[i].rcb_len;
		char *p;
		int fd;

		fd = rc_open_node(node, variant->oflags);
		ASSERT_LE(0, fd) TH_LOG("node%d: %s", node, strerror(errno));
		p = map_node(fd, len, PROT_READ, variant->mflags, 0);
		ASSERT_TRUE(p != NULL) TH_LOG("node%d: mmap %zu bytes: %s",
					      node, len, strerror(errno));
		EXPECT_TRUE(rc_all_zero(p, len)) TH_LOG("node%d", node);
		/* The rest of the last page must not leak anything either. */
		EXPECT_TRUE(rc_all_zero(p + len, maplen(e, i) - len))
			TH_LOG("node%d: bytes past rcb_len are not zero", node);
		EXPECT_EQ(0, munmap(p, len));
		close(fd);
	}
	EXPECT_EQ(0, module_refcnt());
}

/* mprotect(PROT_READ|PROT_WRITE) of a read-only mapping: EACCES, still mapped. */
TEST_F(map_read, mprotect_write_eacces)
{
	const struct map_env *e = &self->e;
	int i;

	for (i = 0; i < e->mem.n; i++) {
		int node = e->mem.id[i];
		size_t len = e->info[i].rcb_len;
		char *p;
		int fd;

		fd = rc_open_node(node, variant->oflags);
		ASSERT_LE(0, fd);
		p = map_node(fd, len, PROT_READ, variant->mflags, 0);
		ASSERT_TRUE(p != NULL) TH_LOG("node%d: %s", node, strerror(errno));
		close(fd);
		errno = 0;
		EXPECT_EQ(-1, mprotect(p, len, PROT_READ | PROT_WRITE))
			TH_LOG("node%d: mprotect succeeded", node);
		EXPECT_EQ(EACCES, errno) TH_LOG("node%d: %s", node, strerror(errno));
		errno = 0;
		EXPECT_EQ(-1, mprotect(p, e->pg, PROT_WRITE))
			TH_LOG("node%d: mprotect succeeded", node);
		EXPECT_EQ(EACCES, errno) TH_LOG("node%d: %s", node, strerror(errno));
		EXPECT_TRUE(rc_all_zero(p, len)) TH_LOG("node%d", node);
		EXPECT_EQ(0, munmap(p, len));
	}
	EXPECT_EQ(0, module_refcnt());
}

/* ======================================= writable mappings: all refused */

FIXTURE(map_write) {
	struct map_env e;
};

FIXTURE_VARIANT(map_write) {
	int oflags;
	int prot;
	int mflags;
	int err;
};

/* O_RDWR fd: any PROT_WRITE mapping, shared or private, is the module's EPERM. */
FIXTURE_VARIANT_ADD(map_write, rdwr_shared_w) {
	.oflags = O_RDWR, .prot = PROT_WRITE, .mflags = MAP_SHARED, .err = EPERM,
};

FIXTURE_VARIANT_ADD(map_write, rdwr_shared_rw) {
	.oflags = O_RDWR, .prot = PROT_READ | PROT_WRITE, .mflags = MAP_SHARED,
	.err = EPERM,
};

FIXTURE_VARIANT_ADD(map_write, rdwr_private_w) {
	.oflags = O_RDWR, .prot = PROT_WRITE, .mflags = MAP_PRIVATE, .err = EPERM,
};

FIXTURE_VARIANT_ADD(map_write, rdwr_private_rw) {
	.oflags = O_RDWR, .prot = PROT_READ | PROT_WRITE, .mflags = MAP_PRIVATE,
	.err = EPERM,
};

/* O_RDONLY fd: MAP_SHARED|PROT_WRITE is the kernel's EACCES. */
FIXTURE_VARIANT_ADD(map_write, rdonly_shared_rw) {
	.oflags = O_RDONLY, .prot = PROT_READ | PROT_WRITE, .mflags = MAP_SHARED,
	.err = EACCES,
};

/* O_RDONLY fd: MAP_PRIVATE|PROT_WRITE passes the kernel; the module says EPERM. */
FIXTURE_VARIANT_ADD(map_write, rdonly_private_rw) {
	.oflags = O_RDONLY, .prot = PROT_READ | PROT_WRITE, .mflags = MAP_PRIVATE,
	.err = EPERM,
};

FIXTURE_SETUP(map_write)
{
	map_env_init(_metadata, &self->e);
}

FIXTURE_TEARDOWN(map_write)
{
}

TEST_F(map_write, refused)
{
	const struct map_env *e = &self->e;
	int i;

	for (i = 0; i < e->mem.n; i++) {
		int node = e->mem.id[i];
		size_t len = e->info[i].rcb_len;
		void *p;
		int fd;

		fd = rc_open_node(node, variant->oflags);
		ASSERT_LE(0, fd) TH_LOG("node%d: %s", node, strerror(errno));
		errno = 0;
		p = map_node(fd, len, variant->prot, variant->mflags, 0);
		EXPECT_TRUE(p == NULL) TH_LOG("node%d: mapped", node);
		EXPECT_EQ(variant->err, errno) TH_LOG("node%d: %s", node, strerror(errno));
		if (p)
			munmap(p, len);
		close(fd);
	}
	EXPECT_EQ(0, module_refcnt());
}

/* ========================================= offsets, lengths, lifetimes */

/* Partial mappings at page-aligned offsets: second page, last page, middle. */
TEST_F(map, partial_at_offset)
{
	int i, tested = 0;

	for (i = 0; i < self->e.mem.n; i++) {
		int node = self->e.mem.id[i];
		size_t len = maplen(&self->e, i), pages = len / self->e.pg;
		char *p;
		int fd;

		if (pages < 2)
			continue;
		tested++;
		fd = rc_open_node(node, O_RDONLY);
		ASSERT_LE(0, fd);

		p = map_node(fd, self->e.pg, PROT_READ, MAP_SHARED, self->e.pg);
		ASSERT_TRUE(p != NULL) TH_LOG("node%d: %s", node, strerror(errno));
		EXPECT_TRUE(rc_all_zero(p, self->e.pg));
		EXPECT_EQ(0, munmap(p, self->e.pg));

		p = map_node(fd, self->e.pg, PROT_READ, MAP_SHARED, len - self->e.pg);
		ASSERT_TRUE(p != NULL) TH_LOG("node%d: %s", node, strerror(errno));
		EXPECT_TRUE(rc_all_zero(p, self->e.pg));
		EXPECT_EQ(0, munmap(p, self->e.pg));

		/* From the second page to the end. */
		p = map_node(fd, len - self->e.pg, PROT_READ, MAP_PRIVATE, self->e.pg);
		ASSERT_TRUE(p != NULL) TH_LOG("node%d: %s", node, strerror(errno));
		EXPECT_TRUE(rc_all_zero(p, len - self->e.pg));
		EXPECT_EQ(0, munmap(p, len - self->e.pg));
		close(fd);
	}
	EXPECT_EQ(0, module_refcnt());
	if (!tested)
		SKIP(return, "every node's buffer fits in one page");
}

/* Offsets at or beyond rcb_len (rounded to a page): EINVAL. */
TEST_F(map, offset_beyond_len_einval)
{
	int i;

	for (i = 0; i < self->e.mem.n; i++) {
		int node = self->e.mem.id[i];
		size_t len = maplen(&self->e, i);
		const off_t offs[] = {
			(off_t)len, (off_t)(len + self->e.pg),
			(off_t)(len * 2), (off_t)1 << 30,
		};
		unsigned int k;
		int fd;

		fd = rc_open_node(node, O_RDONLY);
		ASSERT_LE(0, fd);
		for (k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
			void *p;

			if ((size_t)offs[k] < len)
				continue;
			errno = 0;
			p = map_node(fd, self->e.pg, PROT_READ, MAP_SHARED, offs[k]);
			EXPECT_TRUE(p == NULL)
				TH_LOG("node%d: offset 0x%llx mapped", node,
				       (unsigned long long)offs[k]);
			EXPECT_EQ(EINVAL, errno)
				TH_LOG("node%d: offset 0x%llx: %s", node,
				       (unsigned long long)offs[k], strerror(errno));
			if (p)
				munmap(p, self->e.pg);
		}
		close(fd);
	}
	EXPECT_EQ(0, module_refcnt());
}

/* offset + length beyond rcb_len rounded up to a page: EINVAL. */
TEST_F(map, length_beyond_len_einval)
{
	int i;

	for (i = 0; i < self->e.mem.n; i++) {
		int node = self->e.mem.id[i];
		size_t len = maplen(&self->e, i);
		void *p;
		int fd;

		fd = rc_open_node(node, O_RDONLY);
		ASSERT_LE(0, fd);

		errno = 0;
		p = map_node(fd, len + self->e.pg, PROT_READ, MAP_SHARED, 0);
		EXPECT_TRUE(p == NULL) TH_LOG("node%d: one page too long mapped", node);
		EXPECT_EQ(EINVAL, errno) TH_LOG("node%d: %s", node, strerror(errno));
		if (p)
			munmap(p, len + self->e.pg);

		errno = 0;
		p = map_node(fd, 2 * self->e.pg, PROT_READ, MAP_PRIVATE,
			     len - self->e.pg);
		EXPECT_TRUE(p == NULL) TH_LOG("node%d: last page + 1 mapped", node);
		EXPECT_EQ(EINVAL, errno) TH_LOG("node%d: %s", node, strerror(errno));
		if (p)
			munmap(p, 2 * self->e.pg);

		/* Exactly the rounded length is fine. */
		p = map_node(fd, len, PROT_READ, MAP_SHARED, 0);
		EXPECT_TRUE(p != NULL) TH_LOG("node%d: %s", node, strerror(errno));
		if (p)
			munmap(p, len);
		close(fd);
	}
	EXPECT_EQ(0, module_refcnt());
}

/* A mapping outlives its fd. */
TEST_F(map, survives_close)
{
	int i;

	for (i = 0; i < self->e.mem.n; i++) {
		int node = self->e.mem.id[i];
		size_t len = self->e.info[i].rcb_len;
		char *p;
		int fd;

		fd = rc_open_node(node, O_RDONLY);
		ASSERT_LE(0, fd);
		p = map_node(fd, len, PROT_READ, MAP_SHARED, 0);
		ASSERT_TRUE(p != NULL) TH_LOG("node%d: %s", node, strerror(errno));
		ASSERT_EQ(0, close(fd));
		EXPECT_LT(0, module_refcnt()) TH_LOG("mapping holds no module reference");
		EXPECT_TRUE(rc_all_zero(p, len)) TH_LOG("node%d", node);
		EXPECT_EQ(0, munmap(p, len));
	}
	EXPECT_EQ(0, module_refcnt());
}

/* A forked child sees the same zeros; the parent keeps its mapping. */
TEST_F(map, fork_child_reads)
{
	int i;

	for (i = 0; i < self->e.mem.n; i++) {
		int node = self->e.mem.id[i];
		size_t len = self->e.info[i].rcb_len;
		int fd, status;
		char *p, *q;
		pid_t pid;

		fd = rc_open_node(node, O_RDONLY);
		ASSERT_LE(0, fd);
		p = map_node(fd, len, PROT_READ, MAP_SHARED, 0);
		ASSERT_TRUE(p != NULL) TH_LOG("node%d: %s", node, strerror(errno));
		q = map_node(fd, len, PROT_READ, MAP_PRIVATE, 0);
		ASSERT_TRUE(q != NULL) TH_LOG("node%d: %s", node, strerror(errno));
		close(fd);
		/* Touch the parent's pages before the fork. */
		EXPECT_TRUE(rc_all_zero(p, self->e.pg < len ? self->e.pg : len));
		pid = rc_fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			if (!rc_all_zero(p, len))
				_exit(1);
			if (!rc_all_zero(q, len))
				_exit(2);
			if (munmap(p, len) || munmap(q, len))
				_exit(3);
			_exit(0);
		}
		status = rc_wait(pid);
		ASSERT_EQ(0, status) TH_LOG("node%d: child status %d", node, status);
		EXPECT_TRUE(rc_all_zero(p, len)) TH_LOG("node%d", node);
		EXPECT_TRUE(rc_all_zero(q, len)) TH_LOG("node%d", node);
		EXPECT_EQ(0, munmap(p, len));
		EXPECT_EQ(0, munmap(q, len));
	}
	EXPECT_EQ(0, module_refcnt());
}

/* munmap in pieces: the first page, a middle page, then the rest. */
TEST_F(map, munmap_in_pieces)
{
	int i, tested = 0;

	for (i = 0; i < self->e.mem.n; i++) {
		int node = self->e.mem.id[i];
		size_t len = maplen(&self->e, i), pages = len / self->e.pg;
		char *p;
		int fd;

		if (pages < 2)
			continue;
		tested++;
		fd = rc_open_node(node, O_RDONLY);
		ASSERT_LE(0, fd);
		p = map_node(fd, len, PROT_READ, MAP_SHARED, 0);
		ASSERT_TRUE(p != NULL) TH_LOG("node%d: %s", node, strerror(errno));
		close(fd);
		EXPECT_TRUE(rc_all_zero(p, len));
		ASSERT_EQ(0, munmap(p, self->e.pg));
		EXPECT_TRUE(rc_all_zero(p + self->e.pg, len - self->e.pg));
		if (pages >= 3) {
			size_t mid = pages / 2 * self->e.pg;

			ASSERT_EQ(0, munmap(p + mid, self->e.pg));
			EXPECT_TRUE(rc_all_zero(p + self->e.pg, mid - self->e.pg));
			EXPECT_TRUE(rc_all_zero(p + mid + self->e.pg,
						len - mid - self->e.pg));
		}
		EXPECT_LT(0, module_refcnt());
		EXPECT_EQ(0, munmap(p + self->e.pg, len - self->e.pg));
	}
	EXPECT_EQ(0, module_refcnt()) TH_LOG("module reference leaked by split mappings");
	if (!tested)
		SKIP(return, "every node's buffer fits in one page");
}

/* PFN of the shared zero page: what a read fault on private anon memory maps. */
static uint64_t zero_pfn(int pm, size_t pg)
{
	volatile char *a;
	uint64_t ent = 0;

	a = mmap(NULL, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED)
		return 0;
	(void)a[0];
	if (pread(pm, &ent, 8, (uintptr_t)a / pg * 8) != 8 || !(ent >> 63))
		ent = 0;
	munmap((void *)a, pg);
	return ent & ((1ULL << 55) - 1);
}

/* A "Node N <key> <value> kB" line of the node's meminfo, or -1. */
static long long node_meminfo_kb(int node, const char *key)
{
	char path[96], mi[8192], *f;

	snprintf(path, sizeof(path), RC_SYSNODE "/node%d/meminfo", node);
	if (rc_read_file(path, mi, sizeof(mi)) <= 0)
		return -1;
	f = strstr(mi, key);
	return f ? strtoll(f + strlen(key), NULL, 10) : -1;
}

/*
 * The counter buffer lives in the node's own memory (its slots), except
 * for pages still backed by the kernel's shared zero page.
 *
 * Like every node-local allocation in Linux, the module's may fall back to
 * another node when its own is nearly full (32M nodes of the 72-node guest
 * that also hold a CPU's per-CPU data and the boot files). Nodes with less
 * than a quarter of their memory free are reported, not asserted.
 */
TEST_F(map, buffer_on_own_node)
{
	static struct rcb_slot s[RC_MAX_SLOTS];
	size_t zero = 0, own = 0;
	int i, pm, checked = 0;
	uint64_t zpfn;

	if (self->e.params.granularity != self->e.pg)
		SKIP(return, "slots are rounded to %lu, not exact RAM",
		     self->e.params.granularity);
	pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, pm) TH_LOG("%s", strerror(errno));
	zpfn = zero_pfn(pm, self->e.pg);
	ASSERT_NE(0ULL, zpfn) TH_LOG("cannot find the zero page's PFN: not root?");
	for (i = 0; i < self->e.mem.n; i++) {
		int node = self->e.mem.id[i];
		size_t len = maplen(&self->e, i), k, bad = 0;
		long long total, freekb;
		bool tight;
		int fd, n;
		char *p;

		total = node_meminfo_kb(node, "MemTotal:");
		freekb = node_meminfo_kb(node, "MemFree:");
		ASSERT_LT(0, total) TH_LOG("node%d meminfo", node);
		tight = freekb * 4 < total;

		fd = rc_open_node(node, O_RDONLY);
		ASSERT_LE(0, fd);
		n = rc_query_slots(fd, s, RC_MAX_SLOTS);
		ASSERT_LT(0, n);
		p = map_node(fd, len, PROT_READ, MAP_SHARED, 0);
		ASSERT_TRUE(p != NULL) TH_LOG("node%d: %s", node, strerror(errno));
		close(fd);
		EXPECT_TRUE(rc_all_zero(p, len));	/* fault every page in */
		for (k = 0; k < len / self->e.pg; k++) {
			uint64_t ent, pa;
			off_t off = ((uintptr_t)p / self->e.pg + k) * 8;
			bool in = false;
			int j;

			ASSERT_EQ(8, pread(pm, &ent, 8, off));
			if (!(ent >> 63)) {
				/* VM_PFNMAP mappings are holes to pagemap. */
				munmap(p, len);
				close(pm);
				SKIP(return, "node%d: mapping not visible in pagemap (VM_PFNMAP?)",
				     node);
			}
			if ((ent & ((1ULL << 55) - 1)) == zpfn) {
				zero++;
				continue;
			}
			own++;
			pa = (ent & ((1ULL << 55) - 1)) * self->e.pg;
			for (j = 0; j < n; j++)
				if (s[j].base <= pa && pa < s[j].base + s[j].size)
					in = true;
			if (!in && bad++ < 3)
				TH_LOG("node%d: buffer page %zu at 0x%llx is not in the node",
				       node, k, (unsigned long long)pa);
		}
		munmap(p, len);
		if (tight) {
			if (bad)
				TH_LOG("node%d: %zu pages elsewhere, not asserted: only %lld of %lld kB free",
				       node, bad, freekb, total);
			continue;
		}
		checked++;
		EXPECT_EQ(0U, bad)
			TH_LOG("node%d: %lld of %lld kB free", node, freekb, total);
	}
	close(pm);
	TH_LOG("%zu buffer pages, %zu kernel zero pages; %d of %d nodes checked",
	       own, zero, checked, self->e.mem.n);
	if (!checked)
		SKIP(return, "every node has less than a quarter of its memory free");
}

TEST_HARNESS_MAIN
