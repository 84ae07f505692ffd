// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt selftests: the privilege model of Documentation/security.rst.
 *
 * Each test runs in its own process (the harness forks) and drops to
 * nobody (uid/gid 65534, no supplementary groups, no capabilities) with
 * setresgid()/setresuid(). Files that nobody could not open (the devices
 * are 0440 root:root) are opened as root first, as a member of the udev
 * rule's group would open them. Each refusal is checked with its exact
 * errno, and each call the model allows is checked to still work.
 */
#include <grp.h>
#include <sys/prctl.h>

#include "refcnt_counters.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

#define NOBODY		65534

static void drop_to_nobody(struct __test_metadata *_metadata)
{
	ASSERT_EQ(0, setgroups(0, NULL));
	ASSERT_EQ(0, setresgid(NOBODY, NOBODY, NOBODY));
	ASSERT_EQ(0, setresuid(NOBODY, NOBODY, NOBODY));
	ASSERT_EQ(NOBODY, (int)geteuid());
}

static int first_mem_node(struct __test_metadata *_metadata)
{
	static struct rc_nodes mem;

	mem.n = 0;
	EXPECT_EQ(0, rc_mem_nodes(&mem));
	return mem.n ? mem.id[0] : -1;
}

/* One range query of [p, p + len) of pid; fills e. 0 or -errno. */
static int query(int fd, void *p, size_t len, pid_t pid,
		 struct rcb_page_counters *e, size_t ne, uint64_t *nr)
{
	struct rcb_range_query q = {
		.vaddr = (uintptr_t)p,
		.len = len,
		.buf = (uintptr_t)e,
		.buf_entries = ne,
		.pid = pid,
		.flags = RCB_RANGE_EXTENDED,
	};
	int ret = ioctl(fd, RCB_RANGE_QUERY, &q) ? -errno : 0;

	if (nr)
		*nr = q.nr_entries;
	return ret;
}

TEST(devices_root_only)
{
	struct rc_nodes mem;
	struct stat st;
	char path[64];
	int i, fd;

	ASSERT_EQ(0, rc_mem_nodes(&mem));
	for (i = 0; i < mem.n; i++) {
		rc_dev_path(path, sizeof(path), mem.id[i]);
		ASSERT_EQ(0, stat(path, &st));
		EXPECT_EQ(0440U, st.st_mode & 07777);
		EXPECT_EQ(0U, st.st_uid);
		EXPECT_EQ(0U, st.st_gid);
	}
	drop_to_nobody(_metadata);
	for (i = 0; i < mem.n; i++) {
		rc_dev_path(path, sizeof(path), mem.id[i]);
		fd = open(path, O_RDONLY);
		EXPECT_EQ(-1, fd);
		EXPECT_EQ(EACCES, errno) {
			TH_LOG("open %s as nobody: %s", path, strerror(errno));
		}
		if (fd >= 0)
			close(fd);
	}
}

TEST(admin_ioctls_eperm_reads_work)
{
	struct rc_dev d;
	struct rc_set s;
	struct rcb_ref ref;
	struct rcb_inject in = { .refs = (uintptr_t)&ref, .nr_refs = 1 };
	struct rcb_thresholds th;
	struct rcb_sets_fold fold = { .nr_sets = 1 };
	struct rcb_info info;
	struct rcb_slot slots[64];
	struct rcb_slot_query sq = { .slots = (uintptr_t)slots, .num_slots = 64 };
	struct rcb_event ev;
	uint64_t set, paddr;
	unsigned int c;
	void *m;
	int nid = first_mem_node(_metadata);

	ASSERT_LE(0, nid);
	ASSERT_EQ(0, rcd_open(&d, nid));
	set = rcd_mid_set(&d, 7);
	paddr = rcd_set_paddr(&d, set);
	fold.first_set = set;
	c = rcd_counter(&d, d.info.rcb_cnodeid);
	/* As root: a known count in one set. */
	ASSERT_EQ(0, rc_reset(d.fd));
	ASSERT_EQ(0, rc_inject1(d.fd, paddr, d.info.rcb_cnodeid, 5, RCB_INJECT_SYNC));

	ref = (struct rcb_ref){ .paddr = paddr, .src_cnodeid = 0, .count = 3 };
	th = (struct rcb_thresholds){ .abs_threshold = 1, .diff_threshold = 0 };

	drop_to_nobody(_metadata);
	errno = 0;
	EXPECT_EQ(-1, ioctl(d.fd, RCB_INJECT, &in));
	EXPECT_EQ(EPERM, errno);
	errno = 0;
	EXPECT_EQ(-1, ioctl(d.fd, RCB_RESET));
	EXPECT_EQ(EPERM, errno);
	errno = 0;
	EXPECT_EQ(-1, ioctl(d.fd, RCB_THRESHOLDS_SET, &th));
	EXPECT_EQ(EPERM, errno);
	errno = 0;
	EXPECT_EQ(-1, ioctl(d.fd, RCB_SETS_FOLD, &fold));
	EXPECT_EQ(EPERM, errno);
	/* Checked before the argument is read. */
	errno = 0;
	EXPECT_EQ(-1, ioctl(d.fd, RCB_INJECT, NULL));
	EXPECT_EQ(EPERM, errno);

	/* What an open file allows still works, and nothing changed. */
	EXPECT_EQ(0, ioctl(d.fd, RCB_INFO_GET, &info));
	EXPECT_EQ(d.info.rcb_abs_threshold, info.rcb_abs_threshold);
	EXPECT_EQ(0, ioctl(d.fd, RCB_SLOT_GET, slots));
	EXPECT_EQ(0, ioctl(d.fd, RCB_SLOT_QUERY, &sq));
	EXPECT_EQ(d.nslots, sq.num_slots);
	EXPECT_EQ(0, rc_sync(d.fd));
	EXPECT_EQ(0, rcd_read_set(&d, set, &s));
	EXPECT_EQ(5U, s.ext[c] + s.hw[c] + s.lost[c]);
	EXPECT_EQ(5U, s.hw[c]);		/* not folded */
	m = mmap(NULL, d.info.rcb_len, PROT_READ, MAP_SHARED, d.fd, 0);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(s.ext[c], ((uint32_t *)m)[set * d.cps + c]);
	munmap(m, d.info.rcb_len);
	/* the event queue is readable: drain it (O_NONBLOCK file) */
	while (read(d.fd, &ev, sizeof(ev)) == sizeof(ev))
		;
	EXPECT_EQ(EAGAIN, errno);
	rcd_close(&d);
}

TEST(fault_period_root_only)
{
	const char *p = RC_PARAMDIR "/fault_period";
	struct stat st;
	int fd;

	ASSERT_EQ(0, stat(p, &st));
	EXPECT_EQ(0644U, st.st_mode & 0777);
	drop_to_nobody(_metadata);
	fd = open(p, O_WRONLY);
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(EACCES, errno);
	if (fd >= 0)
		close(fd);
	/* still readable */
	fd = open(p, O_RDONLY);
	EXPECT_LE(0, fd);
	if (fd >= 0)
		close(fd);
}

static void *touch(size_t len, int flags, int fd)
{
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, fd, 0);
	size_t i;

	if (p == MAP_FAILED)
		return NULL;
	for (i = 0; i < len; i += 4096)
		p[i] = 1;
	return p;
}

TEST(range_query_as_nobody)
{
	struct rcb_page_counters e[16];
	uint64_t nr = 0;
	uint8_t *priv, *shared, *file;
	char tmpl[] = "/tmp/refcnt-priv-XXXXXX";
	size_t i, k;
	pid_t sib;
	int fd, tfd, nid = first_mem_node(_metadata);

	ASSERT_LE(0, nid);
	fd = rc_open_node(nid, O_RDONLY);
	ASSERT_LE(0, fd);
	tfd = mkstemp(tmpl);
	ASSERT_LE(0, tfd);
	ASSERT_EQ(0, ftruncate(tfd, 4096));
	ASSERT_EQ(0, fchown(tfd, NOBODY, NOBODY));
	unlink(tmpl);

	drop_to_nobody(_metadata);
	priv = touch(4096, MAP_PRIVATE | MAP_ANONYMOUS, -1);
	shared = touch(4096, MAP_SHARED | MAP_ANONYMOUS, -1);
	file = touch(4096, MAP_SHARED, tfd);
	ASSERT_NE(NULL, priv);
	ASSERT_NE(NULL, shared);
	ASSERT_NE(NULL, file);

	/* own private anonymous memory: shown, without a physical address */
	memset(e, 0xee, sizeof(e));
	ASSERT_EQ(0, query(fd, priv, 4096, 0, e, 16, &nr));
	ASSERT_LE(1ULL, nr);
	for (k = 0; k < nr; k++) {
		EXPECT_EQ(RCB_PAGE_PRESENT, e[k].flags & ~(uint64_t)RCB_PAGE_THP);
		EXPECT_EQ(0ULL, e[k].paddr);
		EXPECT_LE(0, e[k].cnodeid);
	}
	/* the same with our own pid */
	ASSERT_EQ(0, query(fd, priv, 4096, getpid(), e, 16, &nr));
	EXPECT_EQ(RCB_PAGE_PRESENT, e[0].flags & ~(uint64_t)RCB_PAGE_THP);

	/* shared anonymous and shared file pages: denied, zero counters */
	for (i = 0; i < 2; i++) {
		memset(e, 0xee, sizeof(e));
		ASSERT_EQ(0, query(fd, i ? file : shared, 4096, 0, e, 16, &nr));
		ASSERT_LE(1ULL, nr);
		for (k = 0; k < nr; k++) {
			EXPECT_EQ(RCB_PAGE_PRESENT | RCB_PAGE_DENIED, e[k].flags) {
				TH_LOG("%s mapping: flags 0x%llx", i ? "file" :
				       "shared", (unsigned long long)e[k].flags);
			}
			EXPECT_EQ(0ULL, e[k].paddr);
			EXPECT_EQ(-1, e[k].cnodeid);
			EXPECT_TRUE(rc_all_zero(e[k].refcnt, sizeof(e[k].refcnt)));
		}
	}

	/* another process, even of the same user: EPERM */
	sib = rc_fork();
	ASSERT_LE(0, sib);
	if (sib == 0) {
		pause();
		_exit(1);
	}
	errno = 0;
	EXPECT_EQ(-EPERM, query(fd, priv, 4096, sib, e, 16, NULL));
	EXPECT_EQ(-EPERM, query(fd, priv, 4096, getppid(), e, 16, NULL));
	EXPECT_EQ(-EPERM, query(fd, priv, 4096, 1, e, 16, NULL));
	kill(sib, SIGKILL);
	ASSERT_EQ(RC_KILLED(SIGKILL), rc_wait(sib));
	close(tfd);
	close(fd);
}

TEST(range_query_as_root)
{
	struct rcb_page_counters e[16];
	uint64_t nr = 0;
	uint8_t *priv, *shared;
	int p2c[2], c2p[2];
	uintptr_t addr;
	pid_t child;
	int fd, nid = first_mem_node(_metadata);

	ASSERT_LE(0, nid);
	fd = rc_open_node(nid, O_RDONLY);
	ASSERT_LE(0, fd);
	priv = touch(4096, MAP_PRIVATE | MAP_ANONYMOUS, -1);
	shared = touch(4096, MAP_SHARED | MAP_ANONYMOUS, -1);
	ASSERT_NE(NULL, priv);
	ASSERT_NE(NULL, shared);

	ASSERT_EQ(0, query(fd, priv, 4096, 0, e, 16, &nr));
	EXPECT_NE(0ULL, e[0].flags & RCB_PAGE_PRESENT);
	EXPECT_NE(0ULL, e[0].paddr);
	ASSERT_EQ(0, query(fd, shared, 4096, 0, e, 16, &nr));
	EXPECT_EQ(RCB_PAGE_PRESENT, e[0].flags & ~(uint64_t)RCB_PAGE_THP);
	EXPECT_NE(0ULL, e[0].paddr);

	/* another process: its private page, as root */
	ASSERT_EQ(0, pipe(p2c));
	ASSERT_EQ(0, pipe(c2p));
	child = rc_fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		uint8_t *q = touch(4096, MAP_PRIVATE | MAP_ANONYMOUS, -1);
		char c;

		close(p2c[1]);
		addr = (uintptr_t)q;
		if (write(c2p[1], &addr, sizeof(addr)) != sizeof(addr))
			_exit(1);
		if (read(p2c[0], &c, 1) != 1)
			_exit(2);
		_exit(0);
	}
	close(c2p[1]);
	close(p2c[0]);
	ASSERT_EQ((ssize_t)sizeof(addr), read(c2p[0], &addr, sizeof(addr)))
		TH_LOG("child status %d", rc_wait(child));
	ASSERT_NE(0UL, addr);
	memset(e, 0, sizeof(e));
	EXPECT_EQ(0, query(fd, (void *)addr, 4096, child, e, 16, &nr));
	EXPECT_NE(0ULL, e[0].flags & RCB_PAGE_PRESENT);
	EXPECT_NE(0ULL, e[0].paddr);
	ASSERT_EQ(1, write(p2c[1], "x", 1));
	ASSERT_EQ(0, rc_wait(child));
	close(c2p[0]);
	close(p2c[1]);
	close(fd);
}

TEST_HARNESS_MAIN
