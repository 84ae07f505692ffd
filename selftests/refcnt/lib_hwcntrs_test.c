// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt selftests: a program written only against <refcnt/hwcntrs.h>,
 * as a refcnt(5) program ported from IRIX would be (the include changed,
 * the /proc open + ioctl(PIOC...) replaced by refcnt_pioctl_sized(), or
 * refcnt_pioctl() where the module's granularity allows it).
 *
 * The refcnt(5) types have their documented shape; PIOCGETSN0REFCNTRS and
 * PIOCGETSN0EXTREFCNTRS fill one sn0_refcnt_buf_t per hardware page, the
 * written pages with their paddr, page size and home cnodeid, the others
 * with cnodeid -1; after injecting references (root), the extended
 * counters equal the node's mmap'ed table, found the IRIX way (open the
 * node's device, RCB_INFO_GET, RCB_SLOT_GET into rcb_num_slots entries,
 * mmap rcb_len bytes, set from the slots); a 64 MiB range (many library
 * chunks) is converted entry for entry; bad commands and arguments fail
 * like ioctl(2). refcnt_pioctl(), which cannot know the buffer's size,
 * works at 4 KB hardware pages and above and refuses (EOVERFLOW) below,
 * where a refcnt(5)-sized buffer would overflow; refcnt_pioctl_sized()
 * refuses a buffer one byte short (E2BIG); at the loaded granularity and,
 * reloading the module (REFCNT_KO), at granularity=256.
 *
 * A module without RCB_RANGE_QUERY (ENOTTY) fails: it is built from the
 * same tree.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <refcnt/hwcntrs.h>

/* The 6.1 harness (and its TEST()) leaves parameters unused. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

#define PAGES		16
#define BIG		(64UL << 20)

static long pagesz(void)
{
	return sysconf(_SC_PAGESIZE);
}

/* Entries for [vaddr, vaddr + len) with hardware pages of gran bytes. */
static long entries(caddr_t vaddr, long len, long gran)
{
	unsigned long v = (unsigned long)vaddr;

	return (long)((v + len - (v - v % gran) + gran - 1) / gran);
}

/* The refcnt(5) view of a node: its device, rcb_info, slots, table. */
struct irix_node {
	int fd;
	rcb_info_t info;
	rcb_slot_t *slots;
	refcnt_t *table;
};

/* Open the device whose rcb_cnodeid is cnodeid. 0 or -1. */
static int irix_open(cnodeid_t cnodeid, struct irix_node *n)
{
	struct dirent *de;
	DIR *d = opendir("/dev/refcnt");
	char path[300];

	if (!d)
		return -1;
	n->fd = -1;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "node", 4))
			continue;
		snprintf(path, sizeof(path), "/dev/refcnt/%s", de->d_name);
		n->fd = open(path, O_RDONLY);
		if (n->fd < 0)
			continue;
		if (!ioctl(n->fd, RCB_INFO_GET, &n->info) &&
		    (cnodeid_t)n->info.rcb_cnodeid == cnodeid)
			break;
		close(n->fd);
		n->fd = -1;
	}
	closedir(d);
	if (n->fd < 0)
		return -1;
	n->slots = calloc(n->info.rcb_num_slots, sizeof(rcb_slot_t));
	if (!n->slots || ioctl(n->fd, RCB_SLOT_GET, n->slots))
		return -1;
	n->table = mmap(NULL, n->info.rcb_len, PROT_READ, MAP_SHARED, n->fd, 0);
	return n->table == MAP_FAILED ? -1 : 0;
}

static void irix_close(struct irix_node *n)
{
	munmap(n->table, n->info.rcb_len);
	free(n->slots);
	close(n->fd);
}

/* The counters of paddr's set in the table, or NULL. */
static const refcnt_t *irix_set(const struct irix_node *n, __uint64_t paddr)
{
	__uint64_t before = 0;
	unsigned int i;

	for (i = 0; i < n->info.rcb_num_slots; i++) {
		const rcb_slot_t *s = &n->slots[i];

		if (paddr >= s->base && paddr < s->base + s->size)
			return n->table + (before + paddr - s->base) /
				n->info.rcb_granularity *
				n->info.rcb_sw_counters_per_set;
		before += s->size;
	}
	return NULL;
}

/* Granularity, from any node. */
static long granularity(void)
{
	struct irix_node n;
	cnodeid_t c;

	for (c = 0; c < 4096; c++)
		if (!irix_open(c, &n)) {
			long g = n.info.rcb_granularity;

			irix_close(&n);
			return g;
		}
	return -1;
}

TEST(types)
{
	sn0_refcnt_buf_t b;
	sn0_refcnt_args_t a;

	EXPECT_EQ(64, SN0_REFCNT_MAX_COUNTERS);
	EXPECT_EQ(4U, sizeof(refcnt_t));
	EXPECT_EQ(SN0_REFCNT_MAX_COUNTERS, (int)(sizeof(b.refcnt_set.refcnt) /
						 sizeof(b.refcnt_set.refcnt[0])));
	EXPECT_EQ(8U, sizeof(b.refcnt_set.flags));
	EXPECT_EQ(8U, sizeof(b.paddr));
	EXPECT_EQ(8U, sizeof(b.page_size));
	EXPECT_EQ(0U, offsetof(sn0_refcnt_buf_t, refcnt_set));
	EXPECT_EQ(sizeof(caddr_t), sizeof(a.vaddr));
	EXPECT_EQ(sizeof(long), sizeof(a.len));
	EXPECT_EQ(sizeof(void *), sizeof(a.buf));
	EXPECT_NE(PIOCGETSN0REFCNTRS, PIOCGETSN0EXTREFCNTRS);
	EXPECT_EQ(sizeof(struct rcb_info), sizeof(rcb_info_t));
	EXPECT_EQ(16U, sizeof(rcb_slot_t));
	b.cnodeid = -1;
	EXPECT_EQ(-1, b.cnodeid);
}

TEST(hardware_and_extended_counters)
{
	long pg = pagesz(), gran = granularity(), n, i;
	sn0_refcnt_buf_t *hw, *ext;
	sn0_refcnt_args_t args;
	char *mem;

	ASSERT_LT(0, gran) TH_LOG("no refcnt device");
	mem = mmap(NULL, PAGES * pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	madvise(mem, PAGES * pg, MADV_NOHUGEPAGE);
	memset(mem, 3, PAGES / 2 * pg);	/* the first half only */
	n = entries(mem, PAGES * pg, gran);
	hw = calloc(n, sizeof(*hw));
	ext = calloc(n, sizeof(*ext));
	ASSERT_TRUE(hw && ext);

	args.vaddr = mem;
	args.len = PAGES * pg;
	args.buf = hw;
	ASSERT_EQ(0, refcnt_pioctl_sized(getpid(), PIOCGETSN0REFCNTRS, &args,
					 n * sizeof(*hw)))
		TH_LOG("%s", strerror(errno));
	args.buf = ext;
	ASSERT_EQ(0, refcnt_pioctl_sized(0, PIOCGETSN0EXTREFCNTRS, &args,
					 n * sizeof(*ext)));
	for (i = 0; i < n; i++) {
		int written = i * gran < PAGES / 2 * pg;

		EXPECT_EQ(written, !!(ext[i].refcnt_set.flags & RCB_PAGE_PRESENT))
			TH_LOG("entry %ld", i);
		if (written) {
			EXPECT_LE(0, ext[i].cnodeid);
			EXPECT_EQ(hw[i].cnodeid, ext[i].cnodeid);
			EXPECT_EQ((__uint64_t)pg, ext[i].page_size);
			if (!geteuid())
				EXPECT_NE(0ULL, (unsigned long long)ext[i].paddr);
			EXPECT_EQ(hw[i].paddr, ext[i].paddr);
		} else {
			EXPECT_EQ(-1, ext[i].cnodeid);
			EXPECT_EQ(0ULL, (unsigned long long)ext[i].page_size);
			EXPECT_EQ(0ULL, (unsigned long long)ext[i].paddr);
		}
	}
	free(hw);
	free(ext);
	munmap(mem, PAGES * pg);
}

/* The refcnt(5) mmap interface against PIOCGETSN0EXTREFCNTRS. */
TEST(extended_counters_equal_the_mapped_table)
{
	long pg = pagesz(), gran = granularity(), n, i;
	sn0_refcnt_args_t args;
	sn0_refcnt_buf_t *buf;
	char *mem;

	if (geteuid())
		SKIP(return, "physical addresses and RCB_INJECT need root");
	ASSERT_LT(0, gran);
	mem = mmap(NULL, PAGES * pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	madvise(mem, PAGES * pg, MADV_NOHUGEPAGE);
	memset(mem, 5, PAGES * pg);
	n = entries(mem, PAGES * pg, gran);
	buf = calloc(n, sizeof(*buf));
	ASSERT_NE(NULL, buf);
	args.vaddr = mem;
	args.len = PAGES * pg;
	args.buf = buf;
	ASSERT_EQ(0, refcnt_pioctl_sized(0, PIOCGETSN0EXTREFCNTRS, &args,
					 n * sizeof(*buf)));

	/* Fold known counts into every page's set. */
	for (i = 0; i < n; i++) {
		struct irix_node node;
		struct rcb_ref ref;
		struct rcb_inject in = {
			.refs = (unsigned long)&ref,
			.nr_refs = 1,
			.flags = RCB_INJECT_SYNC,
		};

		ASSERT_EQ(0, irix_open(buf[i].cnodeid, &node));
		ref.paddr = buf[i].paddr;
		ref.src_cnodeid = (unsigned int)i % node.info.rcb_num_cnodes;
		ref.count = node.info.rcb_abs_threshold + (unsigned int)i;
		ASSERT_EQ(0, ioctl(node.fd, RCB_INJECT, &in)) TH_LOG("%s", strerror(errno));
		irix_close(&node);
	}

	ASSERT_EQ(0, refcnt_pioctl_sized(0, PIOCGETSN0EXTREFCNTRS, &args,
					 n * sizeof(*buf)));
	for (i = 0; i < n; i++) {
		struct irix_node node;
		const refcnt_t *set;
		unsigned int c;
		unsigned long sum = 0;

		ASSERT_EQ(0, irix_open(buf[i].cnodeid, &node));
		set = irix_set(&node, buf[i].paddr);
		ASSERT_NE(NULL, set) TH_LOG("entry %ld paddr 0x%llx", i,
					    (unsigned long long)buf[i].paddr);
		for (c = 0; c < node.info.rcb_sw_counters_per_set; c++) {
			EXPECT_EQ(set[c], buf[i].refcnt_set.refcnt[c])
				TH_LOG("entry %ld counter %u", i, c);
			sum += set[c];
		}
		EXPECT_LE(node.info.rcb_abs_threshold, sum);
		irix_close(&node);
	}
	free(buf);
	munmap(mem, PAGES * pg);
}

/* 64 MiB, every 16th base page written: many chunks, entry for entry. */
TEST(large_range)
{
	long pg = pagesz(), gran = granularity(), n, i, bad = 0;
	sn0_refcnt_args_t args;
	sn0_refcnt_buf_t *buf;
	char *mem;

	ASSERT_LT(0, gran);
	mem = mmap(NULL, BIG, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	madvise(mem, BIG, MADV_NOHUGEPAGE);
	for (i = 0; i < (long)(BIG / pg); i += 16)
		mem[i * pg] = 1;
	/* Unaligned at both ends. */
	args.vaddr = mem + 1;
	args.len = BIG - 2;
	n = entries(args.vaddr, args.len, gran);
	EXPECT_EQ((long)(BIG / gran), n);
	buf = malloc((n + 1) * sizeof(*buf));
	ASSERT_NE(NULL, buf);
	memset(&buf[n], 0x5a, sizeof(buf[n]));
	args.buf = buf;
	ASSERT_EQ(0, refcnt_pioctl_sized(0, PIOCGETSN0REFCNTRS, &args,
					 n * sizeof(*buf)))
		TH_LOG("%s", strerror(errno));
	for (i = 0; i < n; i++) {
		long page = i * gran / pg;
		int want = !(page % 16);	/* a hardware page by its first base page */
		int got = !!(buf[i].refcnt_set.flags & RCB_PAGE_PRESENT);

		if (want != got || (got && buf[i].cnodeid < 0) ||
		    (!got && buf[i].cnodeid != -1)) {
			if (bad++ < 5)
				TH_LOG("entry %ld: present %d cnodeid %d", i, got,
				       buf[i].cnodeid);
		}
	}
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0x5a, ((unsigned char *)&buf[n])[0]);
	EXPECT_EQ(0x5a, ((unsigned char *)&buf[n])[sizeof(buf[n]) - 1]);
	free(buf);
	munmap(mem, BIG);
}

TEST(errors_like_ioctl)
{
	sn0_refcnt_buf_t b[4];
	sn0_refcnt_args_t args;
	static char page[4096];

	args.vaddr = page;
	args.len = 1;
	args.buf = b;
	/* The module is built from this tree: ENOTTY here is a failure. */
	ASSERT_EQ(0, refcnt_pioctl_sized(0, PIOCGETSN0REFCNTRS, &args, sizeof(b)))
		TH_LOG("%s", strerror(errno));
	errno = 0;
	EXPECT_EQ(-1, refcnt_pioctl(0, 0x7171, &args));
	EXPECT_EQ(ENOTTY, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_pioctl(0, PIOCGETSN0REFCNTRS, NULL));
	EXPECT_EQ(EFAULT, errno);
	args.buf = NULL;
	errno = 0;
	EXPECT_EQ(-1, refcnt_pioctl(0, PIOCGETSN0REFCNTRS, &args));
	EXPECT_EQ(EFAULT, errno);
	args.buf = b;
	args.len = 0;
	errno = 0;
	EXPECT_EQ(-1, refcnt_pioctl(0, PIOCGETSN0EXTREFCNTRS, &args));
	EXPECT_EQ(EINVAL, errno);
	args.len = -1;
	errno = 0;
	EXPECT_EQ(-1, refcnt_pioctl(0, PIOCGETSN0EXTREFCNTRS, &args));
	EXPECT_EQ(EINVAL, errno);
	args.len = 8192;
	args.vaddr = (caddr_t)-4096L;
	errno = 0;
	EXPECT_EQ(-1, refcnt_pioctl(0, PIOCGETSN0EXTREFCNTRS, &args));
	EXPECT_EQ(EINVAL, errno);
	args.vaddr = page;
	args.len = 1;
	errno = 0;
	EXPECT_EQ(-1, refcnt_pioctl(-1, PIOCGETSN0EXTREFCNTRS, &args));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, refcnt_pioctl_sized(getpid(), PIOCGETSN0EXTREFCNTRS, &args,
					 sizeof(b)));
	errno = 0;
	EXPECT_EQ(-1, refcnt_pioctl_sized(0, 0x7171, &args, sizeof(b)));
	EXPECT_EQ(ENOTTY, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_pioctl_sized(0, PIOCGETSN0REFCNTRS, NULL, sizeof(b)));
	EXPECT_EQ(EFAULT, errno);
}

/*
 * The buffer a refcnt(5) program allocates holds one entry per 4 KB page.
 * At granularity gran refcnt_pioctl() either fills exactly the entries
 * refcnt_pioctl_sized() does, or (below 4 KB) refuses with EOVERFLOW and
 * writes nothing; refcnt_pioctl_sized() refuses one byte short (E2BIG).
 */
static void check_buffer_sizes(struct __test_metadata *_metadata, long gran)
{
	long pg = pagesz(), n, i;
	sn0_refcnt_buf_t *sized, *plain;
	sn0_refcnt_args_t args;
	char *mem;

	mem = mmap(NULL, PAGES * pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	madvise(mem, PAGES * pg, MADV_NOHUGEPAGE);
	memset(mem, 7, PAGES * pg);
	args.vaddr = mem + 100;
	args.len = PAGES * pg - 200;
	n = entries(args.vaddr, args.len, gran);
	sized = calloc(n + 1, sizeof(*sized));
	plain = calloc(n + 1, sizeof(*plain));
	ASSERT_TRUE(sized && plain);
	memset(plain, 0x5a, (n + 1) * sizeof(*plain));
	memset(sized, 0x5a, (n + 1) * sizeof(*sized));

	args.buf = sized;
	errno = 0;
	EXPECT_EQ(-1, refcnt_pioctl_sized(0, PIOCGETSN0EXTREFCNTRS, &args,
					  n * sizeof(*sized) - 1));
	EXPECT_EQ(E2BIG, errno);
	EXPECT_EQ(0x5a5a, (unsigned short)sized[0].cnodeid);
	ASSERT_EQ(0, refcnt_pioctl_sized(0, PIOCGETSN0EXTREFCNTRS, &args,
					 n * sizeof(*sized)))
		TH_LOG("%s", strerror(errno));
	for (i = 0; i < n; i++)
		EXPECT_LE(0, sized[i].cnodeid) TH_LOG("entry %ld", i);
	EXPECT_EQ(0x5a5a, (unsigned short)sized[n].cnodeid);

	args.buf = plain;
	if (gran < 4096) {
		errno = 0;
		EXPECT_EQ(-1, refcnt_pioctl(0, PIOCGETSN0EXTREFCNTRS, &args));
		EXPECT_EQ(EOVERFLOW, errno);
		EXPECT_EQ(0x5a5a, (unsigned short)plain[0].cnodeid);
	} else {
		ASSERT_EQ(0, refcnt_pioctl(0, PIOCGETSN0EXTREFCNTRS, &args))
			TH_LOG("%s", strerror(errno));
		for (i = 0; i < n; i++) {
			EXPECT_EQ(sized[i].cnodeid, plain[i].cnodeid);
			EXPECT_EQ(sized[i].paddr, plain[i].paddr);
			EXPECT_EQ(sized[i].page_size, plain[i].page_size);
			EXPECT_EQ(sized[i].refcnt_set.flags, plain[i].refcnt_set.flags);
		}
		EXPECT_EQ(0x5a5a, (unsigned short)plain[n].cnodeid);
	}
	TH_LOG("granularity %ld: %ld entries", gran, n);
	free(sized);
	free(plain);
	munmap(mem, PAGES * pg);
}

TEST(buffer_size_at_this_granularity)
{
	long gran = granularity();

	ASSERT_LT(0, gran);
	check_buffer_sizes(_metadata, gran);
}

/*
 * The same below 4 KB: reload the module with granularity=256 (REFCNT_KO,
 * as lifecycle_test does; the guests set it), then back to the defaults.
 */
static const char *ko_path(void)
{
	const char *ko = getenv("REFCNT_KO");

	return ko && *ko && !access(ko, R_OK) ? ko : NULL;
}

/*
 * refcnt_helpers.c's, not its header (this test uses hwcntrs.h alone):
 * the test rig's feed modules are unloaded before refcnt.ko.
 */
int rc_unload_retry(void);
int rc_load(const char *params);

/* Unload (retrying while references go away) and load with params. */
static int module_reload(const char *params)
{
	int ret, i;

	ret = rc_unload_retry();
	if (ret)
		return ret;
	ret = rc_load(params);
	for (i = 0; !ret && i < 100 && granularity() < 0; i++)
		usleep(20000);	/* the device nodes */
	return ret;
}

FIXTURE(reloaded) {
	bool reloaded;
};

FIXTURE_SETUP(reloaded)
{
	self->reloaded = false;
}

FIXTURE_TEARDOWN(reloaded)
{
	if (self->reloaded)
		EXPECT_EQ(0, module_reload(""))
			TH_LOG("could not reload refcnt.ko with default parameters");
}

TEST_F(reloaded, at_granularity_256)
{
	long gran = granularity();
	int ret;

	if (!ko_path())
		SKIP(return, "REFCNT_KO does not name refcnt.ko: no reload");
	ASSERT_LT(0, gran);
	if (gran != 4096)
		SKIP(return, "loaded with granularity %ld, not reloaded", gran);
	self->reloaded = true;
	ret = module_reload("granularity=256");
	ASSERT_EQ(0, ret) TH_LOG("granularity=256: %s", strerror(-ret));
	ASSERT_EQ(256, granularity());
	check_buffer_sizes(_metadata, 256);
}

TEST_HARNESS_MAIN
