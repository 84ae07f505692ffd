// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt selftests: ioctl errors.
 *
 * Unknown commands (wrong number, wrong size, wrong direction, another
 * magic) give ENOTTY; bad user pointers give EFAULT. RCB_RANGE_QUERY, whose
 * struct grew, takes every size from its first on: an older struct is
 * zero-extended, reserved fields and a newer struct's unknown tail must be
 * zero (EINVAL). Built 64-bit and, when possible, -m32
 * (ioctl_errors_test32) for the compat_ioctl path.
 */
#include "refcnt_helpers.h"

#define SPARE	8

FIXTURE(ioctl_err) {
	int node;
	int fd;			/* has done RCB_INFO_GET */
	unsigned int nslots;
	size_t pg;
	char *rw;		/* page 0: read-write */
	char *ro;		/* page 1: read-only */
	char *none;		/* page 2: PROT_NONE */
	char *gone;		/* page 3: unmapped */
};

FIXTURE_SETUP(ioctl_err)
{
	struct rc_nodes mem;
	struct rcb_info info;
	char *p;

	ASSERT_TRUE(rc_module_loaded()) TH_LOG("refcnt.ko is not loaded");
	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	ASSERT_LT(0, mem.n);
	self->node = mem.id[0];
	self->fd = rc_open_node(self->node, O_RDONLY);
	ASSERT_LE(0, self->fd) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, ioctl(self->fd, RCB_INFO_GET, &info));
	self->nslots = info.rcb_num_slots;
	self->pg = rc_page_size();
	ASSERT_GE(self->pg / sizeof(struct rcb_slot), self->nslots + 1);

	p = mmap(NULL, 4 * self->pg, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(p != MAP_FAILED) TH_LOG("mmap: %s", strerror(errno));
	self->rw = p;
	self->ro = p + self->pg;
	self->none = p + 2 * self->pg;
	self->gone = p + 3 * self->pg;
	memset(p, 0, 2 * self->pg);
	ASSERT_EQ(0, mprotect(self->ro, self->pg, PROT_READ));
	ASSERT_EQ(0, mprotect(self->none, self->pg, PROT_NONE));
	ASSERT_EQ(0, munmap(self->gone, self->pg));
}

FIXTURE_TEARDOWN(ioctl_err)
{
	if (self->rw)
		munmap(self->rw, 3 * self->pg);
	if (self->fd > 0)
		close(self->fd);
}

/* Expect ioctl(fd, cmd, arg) == -1 with errno e. */
#define EXPECT_IOCTL_ERR(e, fd, cmd, arg, what) do {			\
	errno = 0;							\
	EXPECT_EQ(-1, ioctl((fd), (cmd), (arg)))			\
		TH_LOG("%s: succeeded", what);				\
	EXPECT_EQ((e), errno)						\
		TH_LOG("%s: errno %d (%s), want %d", what, errno,	\
		       strerror(errno), (e));				\
} while (0)

struct bad_ptr {
	const char *what;
	uint64_t addr;
};

/* Bad addresses that need no mapping of their own. */
static const struct bad_ptr fixed_bad[] = {
	{ "NULL", 0 },
	{ "(void *)1", 1 },
#if UINTPTR_MAX > 0xffffffffUL
	{ "kernel 0xffff888000000000", 0xffff888000000000ULL },
	{ "non-canonical 0x8000000000000000", 0x8000000000000000ULL },
	{ "top page 0xfffffffffffff000", 0xfffffffffffff000ULL },
#else
	{ "above compat TASK_SIZE 0xfffff000", 0xfffff000ULL },
#endif
};

/* The address list for one test: the fixed ones plus this fixture's pages. */
static int bad_ptrs(FIXTURE_DATA(ioctl_err) *self, struct bad_ptr *out,
		    bool output)
{
	int n = 0;
	size_t k;

	for (k = 0; k < sizeof(fixed_bad) / sizeof(fixed_bad[0]); k++)
		out[n++] = fixed_bad[k];
	out[n].what = "unmapped page";
	out[n++].addr = (uintptr_t)self->gone;
	out[n].what = "PROT_NONE page";
	out[n++].addr = (uintptr_t)self->none;
	if (output) {
		out[n].what = "read-only page";
		out[n++].addr = (uintptr_t)self->ro;
	}
	return n;
}

TEST_F(ioctl_err, unknown_commands_enotty)
{
	static const struct {
		const char *what;
		unsigned long cmd;
	} cmds[] = {
		{ "_IO('Y', 0x7f)", _IO('Y', 0x7f) },
		{ "_IO('Y', 0x00)", _IO('Y', 0x00) },
		{ "_IO('Y', 0x01)", _IO('Y', 0x01) },
		{ "_IOR('Y', 0x01, int)", _IOR('Y', 0x01, int) },
		{ "_IOR('Y', 0x01, __u64)", _IOR('Y', 0x01, __u64) },
		{ "_IOW('Y', 0x01, struct rcb_info)", _IOW('Y', 0x01, struct rcb_info) },
		{ "_IOWR('Y', 0x01, struct rcb_info)", _IOWR('Y', 0x01, struct rcb_info) },
		{ "_IOR('Y', 0x02, int)", _IOR('Y', 0x02, int) },
		{ "_IOW('Y', 0x02, struct rcb_slot)", _IOW('Y', 0x02, struct rcb_slot) },
		{ "_IOWR('Y', 0x02, struct rcb_slot)", _IOWR('Y', 0x02, struct rcb_slot) },
		{ "_IOR('Y', 0x03, struct rcb_slot_query)",
		  _IOR('Y', 0x03, struct rcb_slot_query) },
		{ "_IOWR('Y', 0x03, int)", _IOWR('Y', 0x03, int) },
		{ "_IOR('Y', 0x04, struct rcb_info)", _IOR('Y', 0x04, struct rcb_info) },
		{ "_IOR('X', 0x01, struct rcb_info)", _IOR('X', 0x01, struct rcb_info) },
		{ "_IOR('Z', 0x02, struct rcb_slot)", _IOR('Z', 0x02, struct rcb_slot) },
		{ "_IOWR('y', 0x03, struct rcb_slot_query)",
		  _IOWR('y', 0x03, struct rcb_slot_query) },
		{ "0", 0 },
	};
	size_t k;

	for (k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
		memset(self->rw, 0, self->pg);
		EXPECT_IOCTL_ERR(ENOTTY, self->fd, cmds[k].cmd, self->rw,
				 cmds[k].what);
	}
}

/*
 * The commands the uapi header defines: the sweep below leaves them alone
 * (a new command must be added here, or the sweep fails on it).
 */
static const unsigned int abi_cmds[] = {
	RCB_INFO_GET, RCB_SLOT_GET, RCB_SLOT_QUERY, RCB_SETS_READ,
	RCB_SYNC, RCB_RANGE_QUERY, RCB_INJECT, RCB_RESET,
	RCB_THRESHOLDS_SET, RCB_COUNT_START, RCB_FEEDS_GET, RCB_SETS_FOLD,
	RCB_EVENT_FORMAT,
};

/* RCB_RANGE_QUERY with a caller's struct of @size bytes. */
static unsigned int range_query_cmd(unsigned int size)
{
	return _IOC(_IOC_READ | _IOC_WRITE, RCB_IOC_MAGIC,
		    _IOC_NR(RCB_RANGE_QUERY), size);
}

static bool abi_cmd(unsigned int cmd)
{
	size_t k;

	/* RCB_RANGE_QUERY of every size from its first struct's on. */
	if (_IOC_SIZE(cmd) >= RCB_RANGE_QUERY_SIZE_VER0 &&
	    cmd == range_query_cmd(_IOC_SIZE(cmd)))
		return true;
	for (k = 0; k < sizeof(abi_cmds) / sizeof(abi_cmds[0]); k++)
		if (abi_cmds[k] == cmd)
			return true;
	return false;
}

/*
 * The module knows every command of the header it is built with: given a
 * PROT_NONE argument, each one that takes an argument is EFAULT, and the
 * two without one (RCB_SYNC, RCB_RESET) succeed. ENOTTY means a command
 * is missing.
 */
TEST_F(ioctl_err, abi_commands_known)
{
	size_t k;

	for (k = 0; k < sizeof(abi_cmds) / sizeof(abi_cmds[0]); k++) {
		unsigned int cmd = abi_cmds[k];
		char what[32];

		snprintf(what, sizeof(what), "cmd 0x%08x", cmd);
		if (_IOC_DIR(cmd) == _IOC_NONE) {
			EXPECT_EQ(0, ioctl(self->fd, cmd, self->none))
				TH_LOG("%s: %s", what, strerror(errno));
			continue;
		}
		EXPECT_IOCTL_ERR(EFAULT, self->fd, cmd, self->none, what);
	}
}

/* Every other 'Y' command, in all directions and many sizes: ENOTTY. */
TEST_F(ioctl_err, magic_sweep_enotty)
{
	static const unsigned int sizes[] = { 0, 1, 4, 8, 16, 24, 120, 128 };
	static const unsigned int dirs[] = {
		_IOC_NONE, _IOC_READ, _IOC_WRITE, _IOC_READ | _IOC_WRITE,
	};
	unsigned int nr, d, z, bad = 0;

	for (nr = 0; nr < 256; nr++)
		for (d = 0; d < 4; d++)
			for (z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
				unsigned int cmd = _IOC(dirs[d], 'Y', nr, sizes[z]);
				int ret;

				if (abi_cmd(cmd))
					continue;
				memset(self->rw, 0, self->pg);
				errno = 0;
				ret = ioctl(self->fd, cmd, self->rw);
				if (ret != -1 || errno != ENOTTY) {
					if (bad++ < 10)
						TH_LOG("cmd 0x%08x: ret %d errno %d",
						       cmd, ret, errno);
				}
			}
	EXPECT_EQ(0U, bad);
}

TEST_F(ioctl_err, info_get_efault)
{
	struct bad_ptr b[16];
	int n, k;

	n = bad_ptrs(self, b, true);
	for (k = 0; k < n; k++)
		EXPECT_IOCTL_ERR(EFAULT, self->fd, RCB_INFO_GET,
				 (void *)(uintptr_t)b[k].addr, b[k].what);
	/* Straddling into the PROT_NONE page. */
	EXPECT_IOCTL_ERR(EFAULT, self->fd, RCB_INFO_GET,
			 self->none - sizeof(struct rcb_info) / 2,
			 "struct straddling a PROT_NONE page");
}

TEST_F(ioctl_err, slot_get_efault)
{
	struct bad_ptr b[16];
	int n, k;

	n = bad_ptrs(self, b, true);
	for (k = 0; k < n; k++)
		EXPECT_IOCTL_ERR(EFAULT, self->fd, RCB_SLOT_GET,
				 (void *)(uintptr_t)b[k].addr, b[k].what);
	/* The last entry straddles into the PROT_NONE page. */
	EXPECT_IOCTL_ERR(EFAULT, self->fd, RCB_SLOT_GET,
			 self->none - self->nslots * sizeof(struct rcb_slot) + 8,
			 "array straddling a PROT_NONE page");
}

/* A bad pointer to the rcb_slot_query itself. */
TEST_F(ioctl_err, slot_query_struct_efault)
{
	struct rcb_slot_query *q;
	struct bad_ptr b[16];
	int n, k;

	n = bad_ptrs(self, b, false);
	for (k = 0; k < n; k++)
		EXPECT_IOCTL_ERR(EFAULT, self->fd, RCB_SLOT_QUERY,
				 (void *)(uintptr_t)b[k].addr, b[k].what);

	/* Readable but not writable: num_slots cannot be written back. */
	ASSERT_EQ(0, mprotect(self->ro, self->pg, PROT_READ | PROT_WRITE));
	q = (struct rcb_slot_query *)self->ro;
	q->slots = (uintptr_t)self->rw;
	q->num_slots = 1;
	q->flags = 0;
	ASSERT_EQ(0, mprotect(self->ro, self->pg, PROT_READ));
	EXPECT_IOCTL_ERR(EFAULT, self->fd, RCB_SLOT_QUERY, q,
			 "query struct in a read-only page");

	/* Straddling into the PROT_NONE page. */
	EXPECT_IOCTL_ERR(EFAULT, self->fd, RCB_SLOT_QUERY,
			 self->none - sizeof(struct rcb_slot_query) / 2,
			 "query struct straddling a PROT_NONE page");
}

/* A bad .slots with a capacity > 0. */
TEST_F(ioctl_err, slot_query_slots_efault)
{
	static const uint64_t wide[] = {
		0xffff888000000000ULL, 0x8000000000000000ULL,
		0xfffffffffffff000ULL, 0x100000000ULL,
	};
	struct rcb_slot_query q;
	struct bad_ptr b[16];
	char what[80];
	size_t k;
	int n;

	n = bad_ptrs(self, b, true);
	for (k = 0; k < (size_t)n; k++) {
		q.slots = b[k].addr;
		q.num_slots = self->nslots;
		q.flags = 0;
		snprintf(what, sizeof(what), "slots = %s", b[k].what);
		EXPECT_IOCTL_ERR(EFAULT, self->fd, RCB_SLOT_QUERY, &q, what);
	}
	/* 64-bit values in the __u64 field, whatever the caller's bitness. */
	for (k = 0; k < sizeof(wide) / sizeof(wide[0]); k++) {
		q.slots = wide[k];
		q.num_slots = 1;
		q.flags = 0;
		snprintf(what, sizeof(what), "slots = 0x%llx",
			 (unsigned long long)wide[k]);
		EXPECT_IOCTL_ERR(EFAULT, self->fd, RCB_SLOT_QUERY, &q, what);
	}
	/* The array straddles into the PROT_NONE page. */
	q.slots = (uintptr_t)(self->none - self->nslots * sizeof(struct rcb_slot) + 8);
	q.num_slots = self->nslots;
	q.flags = 0;
	EXPECT_IOCTL_ERR(EFAULT, self->fd, RCB_SLOT_QUERY, &q,
			 "slots straddling a PROT_NONE page");
}

/* The fd keeps working after all of the above. */
TEST_F(ioctl_err, fd_still_works)
{
	struct rcb_info info;

	EXPECT_IOCTL_ERR(EFAULT, self->fd, RCB_INFO_GET, NULL, "NULL");
	EXPECT_IOCTL_ERR(ENOTTY, self->fd, _IO('Y', 0x7f), NULL, "_IO('Y', 0x7f)");
	ASSERT_EQ(0, ioctl(self->fd, RCB_INFO_GET, &info));
	EXPECT_EQ((unsigned int)self->node, info.rcb_nodeid);
	EXPECT_EQ(self->nslots, info.rcb_num_slots);
	ASSERT_EQ(0, ioctl(self->fd, RCB_SLOT_GET, self->rw));
}

/* Where range_query_in() puts the entry. */
#define RQ_ENTRY	256

/*
 * A query of one page of the caller's memory in @buf, zero up to its
 * entry at RQ_ENTRY: past any struct size tried.
 */
static struct rcb_range_query *range_query_in(char *buf, const char *page)
{
	struct rcb_range_query *q = (void *)buf;

	memset(buf, 0, RQ_ENTRY + sizeof(struct rcb_page_counters));
	q->vaddr = (uintptr_t)page;
	q->len = 1;
	q->buf = (uintptr_t)(buf + RQ_ENTRY);
	q->buf_entries = 1;
	return q;
}

/* The size of the first struct rcb_range_query: an old binary's. */
TEST_F(ioctl_err, range_query_old_size)
{
	size_t old = RCB_RANGE_QUERY_SIZE_VER0;
	struct rcb_range_query *q;
	char *buf = self->rw + 512;

	ASSERT_EQ(48U, old);
	ASSERT_EQ(64U, sizeof(*q));
	q = range_query_in(buf, self->rw);
	/* Past the old struct, where the new one's reserved fields are. */
	q->reserved[0] = 0x5a5a5a5a5a5a5a5aULL;
	q->reserved[1] = 0x5a5a5a5a5a5a5a5aULL;
	ASSERT_EQ(0, ioctl(self->fd, range_query_cmd(old), q))
		TH_LOG("old size: %s", strerror(errno));
	EXPECT_EQ(1ULL, q->nr_entries);
	/* Written back: the old struct only. */
	EXPECT_EQ(0x5a5a5a5a5a5a5a5aULL, q->reserved[0]);
	EXPECT_EQ(0x5a5a5a5a5a5a5a5aULL, q->reserved[1]);
	/* Below the first struct's size there is no such command. */
	EXPECT_IOCTL_ERR(ENOTTY, self->fd, range_query_cmd(old - 8), q,
			 "size 40");
}

TEST_F(ioctl_err, range_query_reserved_einval)
{
	struct rcb_range_query *q;
	char *buf = self->rw + 512;
	int k;

	q = range_query_in(buf, self->rw);
	ASSERT_EQ(0, ioctl(self->fd, RCB_RANGE_QUERY, q))
		TH_LOG("%s", strerror(errno));
	EXPECT_EQ(1ULL, q->nr_entries);
	EXPECT_EQ(0ULL, q->reserved[0]);
	EXPECT_EQ(0ULL, q->reserved[1]);
	for (k = 0; k < 2; k++) {
		q = range_query_in(buf, self->rw);
		q->reserved[k] = 1ULL << 63;
		EXPECT_IOCTL_ERR(EINVAL, self->fd, RCB_RANGE_QUERY, q,
				 k ? "reserved[1]" : "reserved[0]");
		EXPECT_EQ(0ULL, q->nr_entries);
	}
}

/*
 * A newer binary's larger struct: a zero tail is what it would be on
 * its own module, a field set there is one this module does not know
 * (EINVAL, not E2BIG, which says the range needs more entries).
 */
TEST_F(ioctl_err, range_query_larger_size)
{
	size_t big = sizeof(struct rcb_range_query) + 24;
	struct rcb_range_query *q;
	char *buf = self->rw + 512;
	size_t k;

	q = range_query_in(buf, self->rw);
	ASSERT_EQ(0, ioctl(self->fd, range_query_cmd(big), q))
		TH_LOG("larger size, zero tail: %s", strerror(errno));
	EXPECT_EQ(1ULL, q->nr_entries);
	for (k = sizeof(*q); k < big; k += 8) {
		char what[32];

		q = range_query_in(buf, self->rw);
		buf[k + 7] = 1;
		snprintf(what, sizeof(what), "byte %zu of %zu", k + 7, big);
		EXPECT_IOCTL_ERR(EINVAL, self->fd, range_query_cmd(big), q,
				 what);
		EXPECT_EQ(0ULL, q->nr_entries);
	}
	/* The tail must be readable, as the struct must. */
	ASSERT_EQ(0, mprotect(self->ro, self->pg, PROT_READ | PROT_WRITE));
	q = (void *)(self->none - sizeof(*q));
	memset(q, 0, sizeof(*q));
	q->vaddr = (uintptr_t)self->rw;
	q->len = 1;
	q->buf = (uintptr_t)(buf + RQ_ENTRY);
	q->buf_entries = 1;
	ASSERT_EQ(0, mprotect(self->ro, self->pg, PROT_READ));
	EXPECT_IOCTL_ERR(EFAULT, self->fd, range_query_cmd(big), q,
			 "tail in a PROT_NONE page");
}

TEST_HARNESS_MAIN
