// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt selftests: load/unload under load, and a load that cannot get its
 * memory. Needs REFCNT_KO (the rig sets it); skips without it.
 *
 * - 100 load/unload cycles (finit_module, delete_module O_NONBLOCK) on
 *   the 4-node topology (once per kernel in make check), 20 elsewhere;
 *   $REFCNT_LIFECYCLE_CYCLES overrides.
 * - Unload attempts while a file is open, a table is mapped, and while the
 *   fault feed (fault_period=1) runs with a process faulting: refused with
 *   EWOULDBLOCK while files or mappings are live; with only the feed live
 *   either refused or done, never a crash (the rig checks the log).
 * - A load that cannot get its memory: prealloc=1 granularity=256 with
 *   free memory taken (hugetlb pages, then locked pages) down to what
 *   the first node's tables need and a little more. That node is built,
 *   a later one refused; finit_module fails with ENOMEM, and MemFree and
 *   the slab totals are back where they were (within a small
 *   tolerance). Two children try to open the devices all along the
 *   load: none may open one, since a file of a failed load would
 *   outlive the module. Seconds under TCG; it runs on the
 *   4-node topology (once per kernel in make check) and skips elsewhere;
 *   REFCNT_ENOMEM_TEST=1 runs it anywhere, =0 skips it.
 * - Loads racing users (load_race): children open the node devices as
 *   fast as they can while the module loads, and on every file they get
 *   list the feeds (RCB_FEEDS_GET: fault and pebs), start a session
 *   (RCB_COUNT_START, fault_period=1), fault pages and check that the
 *   fault feed's statistics in /sys/kernel/refcnt exist and hold the
 *   session's samples: a device that can be opened before the module has
 *   set up what it reaches fails them. Loads with default parameters,
 *   fault_period=1 and prealloc=1 in turn; 9 cycles (half a minute
 *   under TCG) on every topology, $REFCNT_LOAD_RACE_CYCLES overrides.
 *
 * The module is left loaded with default parameters.
 */
#include <signal.h>
#include <stdarg.h>

#include "refcnt_counters.h"
#include "harness_filter.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

#define U64(x)		((unsigned long long)(x))

static int first_node(void)
{
	static struct rc_nodes mem;

	mem.n = 0;
	if (rc_mem_nodes(&mem) || !mem.n)
		return -1;
	return mem.id[0];
}

/* A field of /proc/meminfo in kB, or 0. */
static uint64_t meminfo(const char *field)
{
	char line[256];
	size_t n = strlen(field);
	uint64_t v = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':') {
			v = strtoull(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* kB free: MemFree plus the pages on per-CPU free lists (/proc/zoneinfo). */
static uint64_t free_kb_all(void)
{
	char line[256];
	uint64_t pcp = 0;
	unsigned long n;
	FILE *f = fopen("/proc/zoneinfo", "r");

	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, " count: %lu", &n) == 1)
				pcp += n;
		fclose(f);
	}
	return meminfo("MemFree") + pcp * (getpagesize() / 1024);
}

/* Bytes in all slabs from /proc/slabinfo (num_objs * objsize), or 0. */
static uint64_t slab_bytes(void)
{
	char line[512], name[128];
	unsigned long active, num, size;
	uint64_t total = 0;
	FILE *f = fopen("/proc/slabinfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%127s %lu %lu %lu", name, &active, &num,
			   &size) == 4)
			total += (uint64_t)active * size;
	fclose(f);
	return total;
}

FIXTURE(lstress) {
	int unused;
};

FIXTURE_SETUP(lstress)
{
	if (!rc_ko_path())
		RC_SETUP_SKIP("REFCNT_KO not set");
	ASSERT_EQ(0, rc_restore_default());
}

FIXTURE_TEARDOWN(lstress)
{
	rc_write_file("/proc/sys/vm/nr_hugepages", "0");
	if (rc_ko_path())
		EXPECT_EQ(0, rc_restore_default());
}

TEST_F_TIMEOUT(lstress, load_unload_100_cycles, 600)
{
	const char *env = getenv("REFCNT_LIFECYCLE_CYCLES");
	uint64_t t0 = rc_now_ns();
	struct rc_nodes on;
	char path[64];
	int i, ret, nid, cycles;

	ASSERT_EQ(0, rc_node_list("online", &on));
	cycles = env && *env ? atoi(env) : on.n == 4 ? 100 : 20;
	for (i = 0; i < cycles; i++) {
		ret = rc_unload_retry();
		ASSERT_EQ(0, ret) TH_LOG("cycle %d: unload: %s", i, strerror(-ret));
		ASSERT_FALSE(rc_module_loaded());
		ret = rc_load("");
		ASSERT_EQ(0, ret) TH_LOG("cycle %d: load: %s", i, strerror(-ret));
		nid = first_node();
		ASSERT_LE(0, nid);
		rc_dev_path(path, sizeof(path), nid);
		ASSERT_TRUE(rc_exists(path));
	}
	ksft_print_msg("%d load/unload cycles in %.1f s\n", cycles,
		       (rc_now_ns() - t0) / 1e9);
}

static pid_t start_faulter(void)
{
	pid_t pid = rc_fork();

	if (pid == 0) {
		for (;;) {
			size_t i, len = 32 * 4096;
			volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
						MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p == MAP_FAILED)
				_exit(1);
			for (i = 0; i < len; i += 4096)
				p[i] = 1;
			munmap((void *)p, len);
		}
	}
	return pid;
}

TEST_F_TIMEOUT(lstress, unload_while_busy, 300)
{
	struct rcb_info info;
	pid_t child;
	void *m;
	int fd, i, ret, nid, refused = 0, done = 0;

	nid = first_node();
	ASSERT_LE(0, nid);

	/* an open file */
	fd = rc_open_node(nid, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, RCB_INFO_GET, &info));
	EXPECT_EQ(-EWOULDBLOCK, rc_unload());
	EXPECT_TRUE(rc_module_loaded());

	/* a mapping without the file */
	m = mmap(NULL, info.rcb_len, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, m);
	close(fd);
	EXPECT_EQ(-EWOULDBLOCK, rc_unload());
	EXPECT_EQ(0U, ((volatile uint32_t *)m)[0] * 0);
	munmap(m, info.rcb_len);

	/* the fault feed with a process faulting: refused or safe */
	for (i = 0; i < 10; i++) {
		if (!rc_module_loaded())
			ASSERT_EQ(0, rc_load(""));
		ASSERT_EQ(0, rc_write_file(RC_PARAMDIR "/fault_period", "1"));
		child = start_faulter();
		ASSERT_LE(0, child);
		usleep(100000 + 20000 * i);
		/*
		 * Stopped, not killed, for the unload itself: releasing the
		 * feed's perf events flips a static key in the page-fault
		 * path, and QEMU's multi-threaded TCG does not always honour
		 * text_poke_bp()'s cross-modifying-code protocol against a
		 * CPU faulting through that very site (an unhandled int3 in
		 * do_user_addr_fault, seen once on 6.12). Its samples in
		 * flight are still pending when the unload starts.
		 */
		kill(child, SIGSTOP);
		ret = rc_unload();
		kill(child, SIGCONT);
		if (ret == 0)
			done++;
		else if (ret == -EWOULDBLOCK || ret == -EBUSY)
			refused++;
		else
			EXPECT_EQ(0, ret) TH_LOG("unload under the feed: %s",
						 strerror(-ret));
		usleep(100000);	/* the child keeps faulting either way */
		kill(child, SIGKILL);
		ASSERT_EQ(RC_KILLED(SIGKILL), rc_wait(child))
			TH_LOG("the faulter could not map memory");
		if (rc_module_loaded())
			rc_write_file(RC_PARAMDIR "/fault_period", "0");
	}
	ksft_print_msg("unload with the fault feed live: %d done, %d refused\n",
		       done, refused);
	if (rc_module_loaded())
		ASSERT_EQ(0, rc_unload_retry());
	ASSERT_EQ(0, rc_load(""));
}

/* ------------------------------------------------------------ load_race */

#define RACERS		2
#define RACE_PAGES	16

enum race_phase { RACE_RUN, RACE_PAUSE, RACE_STOP };

/* Shared between the parent and its racing children. */
struct race {
	volatile int phase;
	int light;			/* open, RCB_INFO_GET, close: no more */
	volatile int idle[RACERS];	/* holds no file, waits for RUN */
	volatile unsigned long opened[RACERS], sessions[RACERS];
	char why[RACERS][192];
};

/* A racer's failure: why, in the shared page, then exit with @code. */
static void __attribute__((noreturn, format(printf, 4, 5)))
race_fail(struct race *r, int k, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->why[k], sizeof(r->why[k]), fmt, ap);
	va_end(ap);
	_exit(code);
}

/* The first node device that opens, of those with memory; -1 if none. */
static int race_open(struct race *r, int k, const struct rc_nodes *mem)
{
	int i, fd;

	for (i = 0; i < mem->n; i++) {
		fd = rc_open_node(mem->id[i], O_RDONLY | O_NONBLOCK);
		if (fd >= 0)
			return fd;
		if (errno != ENOENT && errno != ENODEV && errno != ENXIO)
			race_fail(r, k, 10, "open node%d: %s", mem->id[i],
				  strerror(errno));
	}
	return -1;
}

/* RCB_FEEDS_GET lists the module's own feeds, fault and pebs. */
static void race_feeds(struct race *r, int k, int fd)
{
	struct rcb_feed_info fi[16];
	struct rcb_feeds_query q = {
		.feeds = (uintptr_t)fi, .nr_feeds = 16,
	};
	bool fault = false, pebs = false;
	unsigned int i;

	memset(fi, 0, sizeof(fi));
	if (ioctl(fd, RCB_FEEDS_GET, &q))
		race_fail(r, k, 11, "RCB_FEEDS_GET: %s", strerror(errno));
	for (i = 0; i < q.nr_feeds && i < 16; i++) {
		fault |= !strcmp(fi[i].name, "fault");
		pebs |= !strcmp(fi[i].name, "pebs");
	}
	if (!fault || !pebs)
		race_fail(r, k, 12, "RCB_FEEDS_GET on an open device: %u feeds, fault %d, pebs %d",
			  q.nr_feeds, fault, pebs);
}

/*
 * A session of this process on the fault feed, RACE_PAGES faults, then
 * the feed's statistics hold at least what the session took (they count
 * every session's samples and the machine-wide feed's).
 */
static void race_session(struct race *r, int k, int fd)
{
	struct rcb_count c = { .fault_period = 1 };
	struct rcb_count_stats st = { 0 };
	size_t i, len = RACE_PAGES * getpagesize();
	char path[64];
	uint64_t feed;
	volatile char *p;
	int sfd, ret;

	sfd = ioctl(fd, RCB_COUNT_START, &c);
	if (sfd < 0)
		race_fail(r, k, 13, "RCB_COUNT_START: %s", strerror(errno));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		race_fail(r, k, 14, "mmap: %s", strerror(errno));
	for (i = 0; i < len; i += getpagesize())
		p[i] = 1;
	munmap((void *)p, len);
	if (ioctl(sfd, RCB_COUNT_STATS, &st))
		race_fail(r, k, 15, "RCB_COUNT_STATS: %s", strerror(errno));
	snprintf(path, sizeof(path), RC_FEEDDIR "/fault_samples");
	ret = rc_read_u64(path, &feed);
	if (ret)
		race_fail(r, k, 16, "%s while a device is open: %s", path,
			  strerror(-ret));
	if (st.samples < RACE_PAGES || feed < st.samples - st.outside)
		race_fail(r, k, 17, "session: %llu samples (%llu outside) of %d faults; fault feed: %llu samples",
			  U64(st.samples), U64(st.outside), RACE_PAGES,
			  U64(feed));
	close(sfd);
	r->sessions[k]++;
}

/* Open, query, count, close, as fast as it can; idle while paused. */
static void __attribute__((noreturn))
race_child(struct race *r, int k, const struct rc_nodes *mem)
{
	struct rcb_info info;
	char buf[RC_EVENT_SIZE * 4];
	int fd;

	for (;;) {
		if (r->phase != RACE_RUN) {
			r->idle[k] = 1;
			while (r->phase == RACE_PAUSE)
				usleep(200);
			if (r->phase == RACE_STOP)
				_exit(0);
			r->idle[k] = 0;
		}
		fd = race_open(r, k, mem);
		if (fd < 0)
			continue;
		r->opened[k]++;
		if (r->light) {
			if (ioctl(fd, RCB_INFO_GET, &info))
				race_fail(r, k, 18, "RCB_INFO_GET: %s",
					  strerror(errno));
			close(fd);
			continue;
		}
		race_session(r, k, fd);
		race_feeds(r, k, fd);
		if (ioctl(fd, RCB_INFO_GET, &info))
			race_fail(r, k, 18, "RCB_INFO_GET: %s", strerror(errno));
		if (read(fd, buf, sizeof(buf)) < 0 && errno != EAGAIN)
			race_fail(r, k, 19, "read: %s", strerror(errno));
		close(fd);
	}
}

/* The first racer that failed, or -1. */
static int race_failed(const struct race *r)
{
	int k;

	for (k = 0; k < RACERS; k++)
		if (r->why[k][0])
			return k;
	return -1;
}

/* Racers that start paused, in @r (a shared page): 0, or -1. */
static int race_start(struct race **rp, pid_t *child, bool light,
		      const struct rc_nodes *mem)
{
	struct race *r;
	int k;

	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r == MAP_FAILED)
		return -1;
	memset(r, 0, sizeof(*r));
	r->phase = RACE_PAUSE;
	r->light = light;
	*rp = r;
	for (k = 0; k < RACERS; k++) {
		child[k] = rc_fork();
		if (child[k] < 0)
			return -1;
		if (!child[k])
			race_child(r, k, mem);
	}
	return 0;
}

/* Files the racers opened. */
static unsigned long race_opened(const struct race *r)
{
	unsigned long n = 0;
	int k;

	for (k = 0; k < RACERS; k++)
		n += r->opened[k];
	return n;
}

/* Stop the racers between two files: 0, or -1 if one failed or after 20 s. */
static int race_pause(struct race *r)
{
	int k, i;

	r->phase = RACE_PAUSE;
	for (i = 0; i < 20000; i++) {
		if (race_failed(r) >= 0)
			return -1;
		for (k = 0; k < RACERS && r->idle[k]; k++)
			;
		if (k == RACERS)
			return 0;
		usleep(1000);
	}
	return -1;
}

/* The node a prealloc load refused, from the kernel log since @kmsg's seek. */
static int refused_node(int kmsg)
{
	char rec[1024];
	int nid = -1;
	ssize_t n;

	if (kmsg < 0)
		return -1;
	while ((n = read(kmsg, rec, sizeof(rec) - 1)) > 0) {
		const char *p;

		rec[n] = 0;
		p = strstr(rec, "refcnt: node ");
		if (p && strstr(p, "prealloc=1 needs"))
			nid = atoi(p + strlen("refcnt: node "));
	}
	close(kmsg);
	return nid;
}

/* What load_without_memory_enomem reserves, and what it saw. */
struct enomem {
	uint64_t need, first, margin;	/* kB: all tables, node 0's, 1/16 */
	uint64_t pages, left_kb;	/* hugetlb pages; MemAvailable left */
	void *rest;			/* locked pages after the hugetlb ones */
	size_t rest_len;
	uint64_t free0, free1, sunr0, sunr1, slab0, slab1;
	int ret, refused;
};

/* kB of granularity=256 hardware and extended counters, from the default load. */
static int enomem_size(struct enomem *e, int first_nid)
{
	uint64_t total_sets = 0, first_sets = 0;
	struct rcb_info info;
	struct rc_nodes mem;
	unsigned int cps = 1;
	int i, fd;

	if (rc_mem_nodes(&mem) || mem.id[0] != first_nid)
		return -1;
	for (i = 0; i < mem.n; i++) {
		fd = rc_open_node(mem.id[i], O_RDONLY);
		if (fd < 0 || ioctl(fd, RCB_INFO_GET, &info))
			return -1;
		total_sets += info.rcb_sw_sets * (info.rcb_granularity / 256);
		if (!i)
			first_sets = total_sets;
		cps = info.rcb_sw_counters_per_set;
		close(fd);
	}
	e->need = total_sets * cps * 8 / 1024;
	e->first = first_sets * cps * 8 / 1024;
	e->margin = meminfo("MemTotal") / 16;
	return 0;
}

/*
 * Bring MemAvailable down to what node 0's tables and the margin need,
 * and 24 MB: node 0 is built and populated, a later one is refused.
 * Hugetlb pages first, down to 96 MB above that (for the watermarks),
 * then locked base pages, whatever fragmentation left.
 */
static int enomem_reserve(struct enomem *e)
{
	uint64_t leave_kb = e->margin + e->first + 24 * 1024;
	uint64_t free_kb = meminfo("MemFree"), hp_kb = meminfo("Hugepagesize");
	char buf[32];

	e->pages = hp_kb && free_kb > leave_kb + 96 * 1024 ?
		   (free_kb - leave_kb - 96 * 1024) / hp_kb : 0;
	snprintf(buf, sizeof(buf), "%llu", U64(e->pages));
	if (rc_write_file("/proc/sys/vm/nr_hugepages", buf))
		return -1;
	usleep(200000);
	e->left_kb = meminfo("MemAvailable");
	e->rest = NULL;
	e->rest_len = 0;
	if (e->left_kb > leave_kb + 1024) {
		e->rest_len = (e->left_kb - leave_kb) * 1024;
		e->rest = mmap(NULL, e->rest_len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE |
			       MAP_LOCKED, -1, 0);
		if (e->rest == MAP_FAILED) {
			e->rest = NULL;
			return -1;
		}
	}
	e->left_kb = meminfo("MemAvailable");
	return 0;
}

static void enomem_release(struct enomem *e)
{
	if (e->rest)
		munmap(e->rest, e->rest_len);
	e->rest = NULL;
	rc_write_file("/proc/sys/vm/nr_hugepages", "0");
}

/*
 * Free memory and slab before the load; measured, as after it, while
 * the racers are paused: their files' slab churn is not the load's.
 */
static void enomem_before(struct enomem *e)
{
	e->free0 = free_kb_all();
	e->sunr0 = meminfo("SUnreclaim");
	e->slab0 = slab_bytes();
}

/* The prealloc load, and the node it refused. */
static void enomem_load(struct enomem *e)
{
	int kmsg;

	kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (kmsg >= 0)
		lseek(kmsg, 0, SEEK_END);
	e->ret = rc_load("prealloc=1 granularity=256");
	e->refused = refused_node(kmsg);
}

/*
 * Free memory and slab after the failed load. What the unwind freed
 * through RCU comes back a grace period later, and a grace period under
 * TCG on a loaded host can take seconds: measure again, for up to 10 s,
 * while the figures still say "leak". A leak stays and fails.
 */
static void enomem_after(struct enomem *e)
{
	int i;

	for (i = 0; i < 20; i++) {
		usleep(500000);
		e->free1 = free_kb_all();
		e->sunr1 = meminfo("SUnreclaim");
		e->slab1 = slab_bytes();
		if (e->free1 + 2048 >= e->free0 && e->sunr0 + 512 >= e->sunr1 &&
		    (!e->slab0 || !e->slab1 || e->slab0 + 512 * 1024 >= e->slab1))
			break;
	}
	ksft_print_msg("tables need >= %llu kB (node 0: %llu kB), margin %llu kB; %llu hugetlb pages and %llu kB locked: MemAvailable %llu kB; load: %s, node %d refused; MemFree %llu -> %llu kB, SUnreclaim %llu -> %llu kB, slabinfo %llu -> %llu B\n",
		       U64(e->need), U64(e->first), U64(e->margin),
		       U64(e->pages), U64(e->rest_len >> 10), U64(e->left_kb),
		       e->ret ? strerror(-e->ret) : "loaded", e->refused,
		       U64(e->free0), U64(e->free1), U64(e->sunr0),
		       U64(e->sunr1), U64(e->slab0), U64(e->slab1));
}

TEST_F_TIMEOUT(lstress, load_without_memory_enomem, 600)
{
	const char *env = getenv("REFCNT_ENOMEM_TEST");
	int first = first_node(), try, k;
	unsigned long opened = 0;
	struct enomem e = { 0 };
	struct rc_nodes on, mem;
	pid_t racer[RACERS];
	struct race *r;

	/*
	 * Reserving the memory takes about a minute under TCG (hugetlb
	 * pages; a locked populated mapping was slower still): once per
	 * kernel, on the 4-node topology, is enough.
	 */
	ASSERT_EQ(0, rc_node_list("online", &on));
	if (env && *env ? atoi(env) == 0 : on.n != 4)
		SKIP(return, "runs on 4 online nodes or with REFCNT_ENOMEM_TEST=1");
	ASSERT_EQ(0, enomem_size(&e, first));
	ASSERT_EQ(0, rc_unload_retry());
	if (e.need - e.first < 64 * 1024) {
		ASSERT_EQ(0, rc_load(""));
		SKIP(return, "the other nodes' tables (%llu kB) are too small to be refused for want of memory",
		     U64(e.need - e.first));
	}
	/*
	 * Users racing the load open the devices as fast as they can (and
	 * only open them: their memory would upset the reservation). A
	 * load that fails must not have let them: its files would outlive
	 * the module.
	 */
	ASSERT_EQ(0, rc_mem_nodes(&mem));
	ASSERT_EQ(0, race_start(&r, racer, true, &mem));
	/*
	 * Memory freed late by earlier tests can make room during the load
	 * itself; then it loads, and we try again from the reservation. A
	 * refusal that does not work fails every try.
	 */
	for (try = 0; try < 3; try++) {
		ASSERT_EQ(0, enomem_reserve(&e)) enomem_release(&e);
		ASSERT_LT(e.left_kb, e.need + e.margin) {
			TH_LOG("only got MemAvailable down to %llu kB", U64(e.left_kb));
			enomem_release(&e);
		}
		opened = race_opened(r);
		enomem_before(&e);
		r->phase = RACE_RUN;
		enomem_load(&e);
		ASSERT_EQ(0, race_pause(r)) enomem_release(&e);
		opened = race_opened(r) - opened;
		enomem_after(&e);
		if (e.ret == 0)
			rc_unload_retry();
		enomem_release(&e);
		if (e.ret != 0)
			break;
	}
	r->phase = RACE_STOP;
	for (k = 0; k < RACERS; k++)
		EXPECT_EQ(0, rc_wait(racer[k])) TH_LOG("racer: %s", r->why[k]);
	EXPECT_EQ(0UL, opened) TH_LOG("files opened during a load that failed");
	/* The first node was built, populated and unwound. */
	EXPECT_EQ(-ENOMEM, e.ret);
	EXPECT_LE(0, e.refused) TH_LOG("no 'prealloc=1 needs' line in /dev/kmsg");
	EXPECT_NE(first, e.refused);
	EXPECT_FALSE(rc_module_loaded());
	/* Nothing leaked: within 2 MB of free memory, 512 kB of slab. */
	EXPECT_GE(e.free1 + 2048, e.free0);
	EXPECT_GE(e.sunr0 + 512, e.sunr1);
	if (e.slab0 && e.slab1)
		EXPECT_GE(e.slab0 + 512 * 1024, e.slab1);
	ASSERT_EQ(0, rc_load(""));
	ASSERT_TRUE(rc_module_loaded());
}

FIXTURE(load_race) {
	struct race *r;
	pid_t child[RACERS];
};

FIXTURE_SETUP(load_race)
{
	if (!rc_ko_path())
		RC_SETUP_SKIP("REFCNT_KO not set");
	self->r = NULL;
	memset(self->child, 0, sizeof(self->child));
	ASSERT_EQ(0, rc_restore_default());
}

FIXTURE_TEARDOWN(load_race)
{
	int k;

	for (k = 0; k < RACERS; k++)
		if (self->child[k] > 0) {
			kill(self->child[k], SIGKILL);
			rc_wait(self->child[k]);
		}
	if (rc_ko_path())
		EXPECT_EQ(0, rc_restore_default());
}

/*
 * Load and unload while the racers open the devices: each load starts
 * with the racers running, so they get a device as soon as one exists.
 */
TEST_F_TIMEOUT(load_race, devices_only_when_loaded, 600)
{
	static const char *const params[] = { "", "fault_period=1", "prealloc=1" };
	const char *env = getenv("REFCNT_LOAD_RACE_CYCLES");
	unsigned long sessions = 0;
	struct race *r;
	uint64_t t0 = rc_now_ns();
	struct rc_nodes mem;
	int i, k, ret, status, cycles;

	cycles = env && *env ? atoi(env) : 9;
	ASSERT_EQ(0, rc_mem_nodes(&mem));
	ASSERT_LT(0, mem.n);
	ASSERT_EQ(0, race_start(&self->r, self->child, false, &mem));
	r = self->r;
	for (i = 0; i < cycles; i++) {
		const char *p = params[i % 3];

		ret = race_pause(r);
		k = race_failed(r);
		ASSERT_EQ(-1, k) TH_LOG("cycle %d: racer %d: %s", i, k, r->why[k]);
		ASSERT_EQ(0, ret) TH_LOG("cycle %d: racers busy", i);
		ret = rc_unload_retry();
		ASSERT_EQ(0, ret) TH_LOG("cycle %d: unload: %s", i, strerror(-ret));
		r->phase = RACE_RUN;
		ret = rc_load(p);
		ASSERT_EQ(0, ret) TH_LOG("cycle %d: load \"%s\": %s", i, p,
					 strerror(-ret));
		/* Some use of the loaded module too. */
		usleep(20000);
	}
	race_pause(r);
	r->phase = RACE_STOP;
	for (k = 0; k < RACERS; k++) {
		status = rc_wait(self->child[k]);
		self->child[k] = 0;
		EXPECT_EQ(0, status) TH_LOG("racer %d: %s", k, r->why[k]);
		sessions += r->sessions[k];
	}
	ksft_print_msg("%d loads raced by %d openers: %lu files, %lu sessions in %.1f s\n",
		       cycles, RACERS, race_opened(r), sessions,
		       (rc_now_ns() - t0) / 1e9);
	EXPECT_LT(0UL, sessions);
}

RC_HARNESS_MAIN
