// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt selftests: module load/unload, parameters, and the lifetime of
 * open files and mappings.
 *
 * Needs REFCNT_KO=<path of refcnt.ko> (otherwise every test SKIPs). Each
 * test leaves the module loaded with default parameters, whatever happens.
 */
#include <signal.h>

#include "refcnt_checks.h"

#define MAX_FDS		64
#define MAX_MAPS	64

/* Resources a test holds; teardown drops them before restoring the module. */
struct held {
	int fds[MAX_FDS];
	int nfds;
	struct {
		void *p;
		size_t len;
	} maps[MAX_MAPS];
	int nmaps;
	pid_t child;
};

static void held_fd(struct held *h, int fd)
{
	if (fd >= 0 && h->nfds < MAX_FDS)
		h->fds[h->nfds++] = fd;
}

static void held_close(struct held *h, int fd)
{
	int i;

	for (i = 0; i < h->nfds; i++)
		if (h->fds[i] == fd)
			h->fds[i] = -1;
	close(fd);
}

static void held_map(struct held *h, void *p, size_t len)
{
	if (p != MAP_FAILED && h->nmaps < MAX_MAPS) {
		h->maps[h->nmaps].p = p;
		h->maps[h->nmaps++].len = len;
	}
}

static void held_unmap(struct held *h, void *p)
{
	int i;

	for (i = 0; i < h->nmaps; i++)
		if (h->maps[i].p == p) {
			munmap(p, h->maps[i].len);
			h->maps[i].p = NULL;
		}
}

static void held_release(struct held *h)
{
	int i;

	if (h->child > 0) {
		kill(h->child, SIGKILL);
		waitpid(h->child, NULL, 0);
		h->child = 0;
	}
	for (i = 0; i < h->nmaps; i++)
		if (h->maps[i].p)
			munmap(h->maps[i].p, h->maps[i].len);
	h->nmaps = 0;
	for (i = 0; i < h->nfds; i++)
		if (h->fds[i] >= 0)
			close(h->fds[i]);
	h->nfds = 0;
}

/* Number of /dev/refcnt/nodeN that exist for the nodes in mem. */
static int devices_present(const struct rc_nodes *mem)
{
	int i, n = 0;

	for (i = 0; i < mem->n; i++) {
		char path[64];

		rc_dev_path(path, sizeof(path), mem->id[i]);
		n += rc_exists(path);
	}
	return n;
}

/* Open, RCB_INFO_GET, mmap, read zeros, munmap, close: on every node. */
static void use_every_node(struct __test_metadata *_metadata,
			   const struct rc_nodes *mem)
{
	int i;

	for (i = 0; i < mem->n; i++) {
		struct rcb_info info;
		char *p;
		int fd;

		fd = rc_open_node(mem->id[i], O_RDONLY);
		ASSERT_LE(0, fd) TH_LOG("node%d: %s", mem->id[i], strerror(errno));
		ASSERT_EQ(0, ioctl(fd, RCB_INFO_GET, &info)) {
			close(fd);
		}
		EXPECT_EQ((unsigned int)mem->id[i], info.rcb_nodeid);
		p = mmap(NULL, info.rcb_len, PROT_READ, MAP_SHARED, fd, 0);
		ASSERT_TRUE(p != MAP_FAILED) {
			TH_LOG("node%d: mmap: %s", mem->id[i], strerror(errno));
			close(fd);
		}
		EXPECT_TRUE(rc_all_zero(p, info.rcb_len)) TH_LOG("node%d", mem->id[i]);
		munmap(p, info.rcb_len);
		close(fd);
	}
}

/* Read the kernel log records added since *fd was opened at its end. */
static int kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

/* Count new records; copy the first one's text into first. */
static int kmsg_new_records(int fd, char *first, size_t size)
{
	char rec[8192];
	int n = 0;

	first[0] = '\0';
	for (;;) {
		ssize_t len = read(fd, rec, sizeof(rec) - 1);
		char *msg, *nl;

		if (len < 0) {
			if (errno == EPIPE)	/* overwritten records */
				continue;
			break;
		}
		rec[len] = '\0';
		msg = strchr(rec, ';');
		msg = msg ? msg + 1 : rec;
		nl = strchr(msg, '\n');
		if (nl)
			*nl = '\0';
		if (!n) {
			size_t l = strlen(msg);

			if (l >= size)
				l = size - 1;
			memcpy(first, msg, l);
			first[l] = '\0';
		}
		n++;
	}
	return n;
}

/* ------------------------------------------------------------ lifecycle */

/*
 * What every fixture here starts from: the nodes, whether REFCNT_KO lets
 * it reload the module, and the module loaded with default parameters and
 * no counts (the tests read zeros from the mappings).
 */
struct lc_env {
	struct rc_nodes online;
	struct rc_nodes mem;
	bool have_ko;
};

static void lc_setup(struct __test_metadata *_metadata, struct lc_env *e)
{
	int i;

	e->have_ko = rc_ko_path() != NULL;
	ASSERT_EQ(0, rc_node_list("online", &e->online));
	ASSERT_EQ(0, rc_node_list("has_memory", &e->mem));
	ASSERT_LT(0, e->mem.n);
	if (e->have_ko) {
		ASSERT_EQ(0, rc_restore_default());
	}
	ASSERT_TRUE(rc_module_loaded()) TH_LOG("refcnt.ko is not loaded");
	for (i = 0; i < e->mem.n; i++)
		ASSERT_EQ(0, rc_reset_node(e->mem.id[i])) TH_LOG("node%d", e->mem.id[i]);
}

/* Whatever the test did, the module is left loaded with its defaults. */
static void lc_teardown(struct __test_metadata *_metadata,
			const struct lc_env *e)
{
	if (e->have_ko) {
		EXPECT_EQ(0, rc_restore_default())
			TH_LOG("could not reload refcnt.ko with default parameters");
	}
}

FIXTURE(lifecycle) {
	struct lc_env e;
	struct held h;
};

FIXTURE_SETUP(lifecycle)
{
	lc_setup(_metadata, &self->e);
}

FIXTURE_TEARDOWN(lifecycle)
{
	held_release(&self->h);
	lc_teardown(_metadata, &self->e);
}

#define NEED_KO() do {							\
	if (!self->e.have_ko)						\
		SKIP(return, "REFCNT_KO does not name a readable refcnt.ko"); \
} while (0)

/*
 * The whole buffer of the first node with memory, mapped read-only and
 * held; the file is closed again, so that only the mapping remains.
 */
static char *map_first_node(struct __test_metadata *_metadata,
			    FIXTURE_DATA(lifecycle) *self, struct rcb_info *info)
{
	char *p;
	int fd;

	fd = rc_open_node(self->e.mem.id[0], O_RDONLY);
	ASSERT_LE(0, fd);
	held_fd(&self->h, fd);
	ASSERT_EQ(0, ioctl(fd, RCB_INFO_GET, info));
	p = mmap(NULL, info->rcb_len, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_TRUE(p != MAP_FAILED) TH_LOG("%s", strerror(errno));
	held_map(&self->h, p, info->rcb_len);
	held_close(&self->h, fd);
	return p;
}

/* While a file is open the module cannot go; after close it can. */
TEST_F(lifecycle, unload_busy_while_open)
{
	struct rcb_info info;
	int fd;

	NEED_KO();
	fd = rc_open_node(self->e.mem.id[0], O_RDONLY);
	ASSERT_LE(0, fd);
	held_fd(&self->h, fd);
	/* EWOULDBLOCK, i.e. EAGAIN: in use. */
	EXPECT_EQ(-EWOULDBLOCK, rc_unload());
	EXPECT_TRUE(rc_module_loaded());
	EXPECT_EQ(self->e.mem.n, devices_present(&self->e.mem));
	/* The file still works. */
	EXPECT_EQ(0, ioctl(fd, RCB_INFO_GET, &info));
	held_close(&self->h, fd);
	ASSERT_EQ(0, rc_unload());
	EXPECT_FALSE(rc_module_loaded());
	EXPECT_EQ(0, devices_present(&self->e.mem));
	ASSERT_EQ(0, rc_load(""));
	EXPECT_EQ(self->e.mem.n, devices_present(&self->e.mem));
	use_every_node(_metadata, &self->e.mem);
}

/* A live mapping alone (fd closed) keeps the module; munmap releases it. */
TEST_F(lifecycle, unload_busy_while_mapped)
{
	struct rcb_info info;
	char *p;

	NEED_KO();
	p = map_first_node(_metadata, self, &info);
	EXPECT_EQ(-EWOULDBLOCK, rc_unload());
	EXPECT_TRUE(rc_module_loaded());
	EXPECT_TRUE(rc_all_zero(p, info.rcb_len));
	EXPECT_EQ(-EWOULDBLOCK, rc_unload());

	held_unmap(&self->h, p);
	ASSERT_EQ(0, rc_unload());
	EXPECT_FALSE(rc_module_loaded());
	EXPECT_EQ(0, devices_present(&self->e.mem));
	ASSERT_EQ(0, rc_load(""));
	use_every_node(_metadata, &self->e.mem);
}

/* Part of a mapping left after a partial munmap still holds the module. */
TEST_F(lifecycle, unload_busy_while_part_mapped)
{
	struct rcb_info info;
	size_t pg = rc_page_size(), len;
	char *p;
	int fd;

	NEED_KO();
	fd = rc_open_node(self->e.mem.id[0], O_RDONLY);
	ASSERT_LE(0, fd);
	held_fd(&self->h, fd);
	ASSERT_EQ(0, ioctl(fd, RCB_INFO_GET, &info));
	len = rc_round_up(info.rcb_len, pg);
	if (len < 3 * pg)
		SKIP(return, "buffer of node%d has fewer than 3 pages", self->e.mem.id[0]);
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_TRUE(p != MAP_FAILED) TH_LOG("%s", strerror(errno));
	held_close(&self->h, fd);
	/* Split into three, drop two pieces. */
	ASSERT_EQ(0, munmap(p + pg, pg));
	ASSERT_EQ(0, munmap(p, pg));
	held_map(&self->h, p + 2 * pg, len - 2 * pg);
	EXPECT_EQ(-EWOULDBLOCK, rc_unload());
	EXPECT_TRUE(rc_all_zero(p + 2 * pg, len - 2 * pg));
	held_unmap(&self->h, p + 2 * pg);
	ASSERT_EQ(0, rc_unload());
	ASSERT_EQ(0, rc_load(""));
}

/* A forked child's copy of the mapping keeps the module after the parent's goes. */
TEST_F(lifecycle, unload_busy_while_child_maps)
{
	struct rcb_info info;
	int pipefd[2], status;
	char c = 0, *p;
	pid_t pid;

	NEED_KO();
	p = map_first_node(_metadata, self, &info);
	ASSERT_EQ(0, pipe(pipefd));

	pid = rc_fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(pipefd[1]);
		/* Wait until the parent has tried to unload. */
		if (read(pipefd[0], &c, 1) != 1)
			_exit(1);
		_exit(rc_all_zero(p, info.rcb_len) ? 0 : 2);
	}
	self->h.child = pid;
	close(pipefd[0]);
	held_unmap(&self->h, p);
	EXPECT_EQ(-EWOULDBLOCK, rc_unload());
	EXPECT_TRUE(rc_module_loaded());
	ASSERT_EQ(1, write(pipefd[1], &c, 1));
	close(pipefd[1]);
	status = rc_wait(pid);
	self->h.child = 0;
	ASSERT_EQ(0, status);
	ASSERT_EQ(0, rc_unload());
	ASSERT_EQ(0, rc_load(""));
}

/* Load and unload 20 times, using every node in each cycle. */
TEST_F_TIMEOUT(lifecycle, load_unload_20_cycles, 600)
{
	int cycle;

	NEED_KO();
	for (cycle = 0; cycle < 20; cycle++) {
		int fd;

		ASSERT_EQ(0, rc_unload()) TH_LOG("cycle %d", cycle);
		ASSERT_FALSE(rc_module_loaded()) TH_LOG("cycle %d", cycle);
		ASSERT_EQ(0, devices_present(&self->e.mem))
			TH_LOG("cycle %d: devices left after unload", cycle);
		ASSERT_EQ(0, rc_load("")) TH_LOG("cycle %d", cycle);
		ASSERT_TRUE(rc_module_loaded()) TH_LOG("cycle %d", cycle);
		ASSERT_EQ(self->e.mem.n, devices_present(&self->e.mem))
			TH_LOG("cycle %d: devices missing after load", cycle);
		use_every_node(_metadata, &self->e.mem);
		/* And an unload attempt while a file is open. */
		fd = rc_open_node(self->e.mem.id[cycle % self->e.mem.n], O_RDONLY);
		ASSERT_LE(0, fd);
		held_fd(&self->h, fd);
		EXPECT_EQ(-EWOULDBLOCK, rc_unload()) TH_LOG("cycle %d", cycle);
		held_close(&self->h, fd);
	}
}

/*
 * Unload/load in a loop while a child opens, queries, maps and closes
 * nodes as fast as it can. Whatever the child manages to open must work.
 */
TEST_F_TIMEOUT(lifecycle, unload_races_with_users, 600)
{
	int i, status, unloaded = 0, busy = 0;
	pid_t pid;

	NEED_KO();
	pid = rc_fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		unsigned long n;

		for (n = 0;; n++) {
			int node = self->e.mem.id[n % self->e.mem.n];
			struct rcb_info info;
			char *p;
			int fd;

			fd = rc_open_node(node, O_RDONLY);
			if (fd < 0) {
				if (errno != ENOENT && errno != ENODEV &&
				    errno != ENXIO)
					_exit(10);
				continue;
			}
			if (ioctl(fd, RCB_INFO_GET, &info))
				_exit(11);
			p = mmap(NULL, info.rcb_len, PROT_READ, MAP_SHARED, fd, 0);
			if (p == MAP_FAILED)
				_exit(12);
			if (n & 1)
				close(fd);
			if (!rc_all_zero(p, info.rcb_len < 65536 ? info.rcb_len : 65536))
				_exit(13);
			munmap(p, info.rcb_len);
			if (!(n & 1))
				close(fd);
			/* Leave the parent windows in which it can unload. */
			usleep(2000);
		}
	}
	self->h.child = pid;
	for (i = 0; i < 200 && unloaded < 20; i++) {
		int ret = rc_unload();

		if (ret == -EWOULDBLOCK) {
			busy++;
			usleep(500);
			continue;
		}
		ASSERT_EQ(0, ret) TH_LOG("attempt %d", i);
		unloaded++;
		usleep(1000);
		ASSERT_EQ(0, rc_load("")) TH_LOG("attempt %d", i);
	}
	TH_LOG("%d unloads, %d refused as busy", unloaded, busy);
	/* Still running: whatever it opened worked. */
	kill(pid, SIGKILL);
	status = rc_wait(pid);
	self->h.child = 0;
	ASSERT_EQ(RC_KILLED(SIGKILL), status)
		TH_LOG("child ended by itself: step %d", status);
	EXPECT_LT(0, unloaded);
}

/* ---------------------------------------------------------- bad params */

FIXTURE(bad_params) {
	struct lc_env e;
};

FIXTURE_VARIANT(bad_params) {
	const char *params;	/* NULL: "abs_threshold=<max + 1>" */
	bool premium;		/* for the computed abs_threshold */
};

FIXTURE_VARIANT_ADD(bad_params, granularity_3000) { .params = "granularity=3000" };
FIXTURE_VARIANT_ADD(bad_params, granularity_128) { .params = "granularity=128" };
FIXTURE_VARIANT_ADD(bad_params, granularity_4194304) {
	.params = "granularity=4194304"
};
FIXTURE_VARIANT_ADD(bad_params, granularity_0) { .params = "granularity=0" };
FIXTURE_VARIANT_ADD(bad_params, granularity_257) { .params = "granularity=257" };
FIXTURE_VARIANT_ADD(bad_params, granularity_6144) { .params = "granularity=6144" };
FIXTURE_VARIANT_ADD(bad_params, abs_threshold_max_plus_1) { .params = NULL };
FIXTURE_VARIANT_ADD(bad_params, abs_threshold_max_plus_1_premium) {
	.params = NULL, .premium = true
};
FIXTURE_VARIANT_ADD(bad_params, abs_threshold_4294967295) {
	.params = "abs_threshold=4294967295"
};

FIXTURE_SETUP(bad_params)
{
	lc_setup(_metadata, &self->e);
}

FIXTURE_TEARDOWN(bad_params)
{
	lc_teardown(_metadata, &self->e);
}

/* finit_module fails with EINVAL, leaves no module, no device, one log line. */
TEST_F(bad_params, rejected)
{
	char params[128], first[512];
	int kmsg, lines;

	NEED_KO();
	if (variant->params)
		snprintf(params, sizeof(params), "%s", variant->params);
	else
		snprintf(params, sizeof(params), "%sabs_threshold=%u",
			 variant->premium ? "premium=1 " : "",
			 rc_hw_max(self->e.online.n, variant->premium) + 1);
	ASSERT_EQ(0, rc_unload());
	kmsg = kmsg_open();
	EXPECT_EQ(-EINVAL, rc_load(params)) TH_LOG("params \"%s\"", params);
	EXPECT_FALSE(rc_module_loaded()) TH_LOG("params \"%s\"", params);
	EXPECT_EQ(0, devices_present(&self->e.mem));
	if (kmsg >= 0) {
		lines = kmsg_new_records(kmsg, first, sizeof(first));
		close(kmsg);
		TH_LOG("params \"%s\": kernel log: \"%s\"", params, first);
		EXPECT_EQ(1, lines) TH_LOG("want exactly one kernel log line");
		EXPECT_TRUE(strstr(first, "refcnt") != NULL);
	}
}

/* --------------------------------------------------------- good params */

FIXTURE(good_params) {
	struct lc_env e;
};

FIXTURE_VARIANT(good_params) {
	const char *params;	/* NULL: "abs_threshold=<max>" */
	struct rc_params p;	/* what /sys/module/refcnt/parameters says */
};

FIXTURE_VARIANT_ADD(good_params, defaults) {
	.params = "",
	.p = { .granularity = 4096 },
};
FIXTURE_VARIANT_ADD(good_params, premium_1) {
	.params = "premium=1",
	.p = { .granularity = 4096, .premium = true },
};
FIXTURE_VARIANT_ADD(good_params, premium_0) {
	.params = "premium=0",
	.p = { .granularity = 4096, .premium = false },
};
FIXTURE_VARIANT_ADD(good_params, granularity_65536) {
	.params = "granularity=65536",
	.p = { .granularity = 65536 },
};
FIXTURE_VARIANT_ADD(good_params, granularity_256) {
	.params = "granularity=256",
	.p = { .granularity = 256 },
};
FIXTURE_VARIANT_ADD(good_params, granularity_2097152) {
	.params = "granularity=2097152",
	.p = { .granularity = 2097152 },
};
FIXTURE_VARIANT_ADD(good_params, thresholds_100_5) {
	.params = "abs_threshold=100 diff_threshold=5",
	.p = { .granularity = 4096, .abs_threshold = 100, .diff_threshold = 5 },
};
FIXTURE_VARIANT_ADD(good_params, abs_threshold_max) {
	.params = NULL,
	.p = { .granularity = 4096 },
};
FIXTURE_VARIANT_ADD(good_params, all_set) {
	.params = "granularity=8192 premium=Y abs_threshold=1000 diff_threshold=64",
	.p = { .granularity = 8192, .premium = true, .abs_threshold = 1000,
	       .diff_threshold = 64 },
};

FIXTURE_SETUP(good_params)
{
	lc_setup(_metadata, &self->e);
}

FIXTURE_TEARDOWN(good_params)
{
	lc_teardown(_metadata, &self->e);
}

/* Physical address of @va, from /proc/self/pagemap (root); 0 if none. */
static uint64_t va_to_pa(const void *va)
{
	size_t pg = rc_page_size();
	uint64_t ent = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return 0;
	if (pread(fd, &ent, sizeof(ent),
		  (uintptr_t)va / pg * sizeof(ent)) != sizeof(ent))
		ent = 0;
	close(fd);
	if (!(ent & (1ULL << 63)))
		return 0;
	return (ent & ((1ULL << 55) - 1)) * pg + (uintptr_t)va % pg;
}

/*
 * The range query at the loaded granularity, above, at or below the base
 * page size: one entry per hardware page, each the hardware page holding
 * the first byte of its virtual range, as pagemap says.
 */
static void check_range_query(struct __test_metadata *_metadata, int fd,
			      uint64_t gran)
{
	size_t pg = rc_page_size(), len = 8 * (gran > pg ? gran : pg), i, n;
	struct rcb_page_counters *e;
	struct rcb_range_query q;
	char *map, *mem;

	/* Aligned to the granularity, so that every entry is ours. */
	map = mmap(NULL, len + gran, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	mem = (char *)(((uintptr_t)map + gran - 1) & ~(uintptr_t)(gran - 1));
	ASSERT_EQ(0, madvise(mem, len, MADV_NOHUGEPAGE));
	memset(mem, 1, len);
	n = len / gran;
	e = calloc(n, sizeof(*e));
	ASSERT_NE(NULL, e);
	q = (struct rcb_range_query) {
		.vaddr = (uintptr_t)mem, .len = len, .buf = (uintptr_t)e,
		.buf_entries = n, .flags = RCB_RANGE_EXTENDED,
	};
	ASSERT_EQ(0, ioctl(fd, RCB_RANGE_QUERY, &q)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(n, q.nr_entries);
	for (i = 0; i < n; i++) {
		uint64_t pa = va_to_pa(mem + i * gran);

		ASSERT_NE(0ULL, pa);
		EXPECT_EQ(RCB_PAGE_PRESENT, e[i].flags) TH_LOG("entry %zu", i);
		EXPECT_EQ(pa & ~(gran - 1), e[i].paddr)
			TH_LOG("entry %zu of %zu, granularity %llu", i, n,
			       (unsigned long long)gran);
		EXPECT_EQ(pg, e[i].page_size);
	}
	free(e);
	munmap(map, len + gran);
}

/* The module loads; parameters, every rcb_info field and the slots follow. */
/* A load numbers the nodes online at that moment, in order. */
static void check_cnodes_are_online(struct __test_metadata *_metadata)
{
	struct rc_nodes online, cnodes;
	int i;

	ASSERT_EQ(0, rc_node_list("online", &online));
	ASSERT_EQ(0, rc_cnode_list(&cnodes));
	ASSERT_EQ(online.n, cnodes.n);
	for (i = 0; i < online.n; i++)
		EXPECT_EQ(online.id[i], cnodes.id[i]) TH_LOG("cnodeid %d", i);
}

TEST_F_TIMEOUT(good_params, loaded, 300)
{
	struct rc_params want = variant->p, got;
	char params[128];
	int i;

	NEED_KO();
	if (variant->params) {
		snprintf(params, sizeof(params), "%s", variant->params);
	} else {
		want.abs_threshold = rc_hw_max(self->e.online.n, false);
		snprintf(params, sizeof(params), "abs_threshold=%lu",
			 want.abs_threshold);
	}
	ASSERT_EQ(0, rc_unload());
	ASSERT_EQ(0, rc_load(params)) TH_LOG("params \"%s\"", params);
	ASSERT_EQ(0, rc_read_params(&got));
	check_cnodes_are_online(_metadata);
	EXPECT_EQ(want.granularity, got.granularity);
	EXPECT_EQ(want.premium, got.premium);
	EXPECT_EQ(want.abs_threshold, got.abs_threshold);
	EXPECT_EQ(want.diff_threshold, got.diff_threshold);
	ASSERT_EQ(self->e.mem.n, devices_present(&self->e.mem));

	for (i = 0; i < self->e.mem.n; i++) {
		struct rcb_info info;
		int fd = rc_open_node(self->e.mem.id[i], O_RDONLY);

		ASSERT_LE(0, fd) TH_LOG("node%d: %s", self->e.mem.id[i], strerror(errno));
		rc_check_info(_metadata, self->e.mem.id[i], fd, &want, &info);
		EXPECT_EQ(want.granularity, (unsigned long)info.rcb_granularity);
		if (want.premium || self->e.online.n > 16) {
			EXPECT_EQ(19U, info.rcb_hw_counter_bits);
		} else {
			EXPECT_EQ(11U, info.rcb_hw_counter_bits);
		}
		if (!i)
			check_range_query(_metadata, fd, info.rcb_granularity);
		close(fd);
	}
	use_every_node(_metadata, &self->e.mem);
}

TEST_HARNESS_MAIN
