// SPDX-License-Identifier: GPL-2.0
/*
 * refcntd on the emulated PEBS stream, in a guest booted with `refcnt-vm
 * --hub` (tools/testing/hub-check runs it in the hub boot, before
 * hub_test): the hub device samples every PERIOD-th user-mode load and
 * store of every vCPU, as PEBS at make placement's period, and the PMU
 * feed delivers each sample as PERIOD references to the counters of its
 * physical page. The drain runs in a work item, but the device stamps
 * each sample with the pid of the task on its vCPU (refcnt_hub.ko writes
 * it at each context switch), as a PMU's overflow handler knows it from
 * current: the migration events name their process and address.
 *
 * A user process on node A loads from an array placed on node B (bound
 * there, touched, then unbound); a second process does the same with an
 * array of its own, but refcntd does not act on it. Under the module's
 * default 11-bit counters, folding at 1,792, the sample that crosses the
 * differential threshold folds its set before the event is recorded:
 * refcntd must judge those sets on their counts over time.
 *
 *  - moves_misplaced_array: every page of the user's array moves to node
 *    A, exactly those (refcntd's moved count), checked with move_pages(2);
 *    the other process's pages stay on node B (refused: not opted in,
 *    which only an event that names its process can be);
 *  - then the array moved back to node B stays there while frozen: the
 *    events the user's loads keep raising count as frozen, nothing moves;
 *  - hub_feed_names_its_pages: on the hub feed (the device's reference
 *    stream, not its PMU), the events name their process and page
 *    (no_context under 1%) and the array moves.
 *
 * refcntd is looked for in $REFCNT_TOOLS, ./tools and /refcnt/tools.
 * Skips without the hub device, its emulated PMU, refcntd, or two nodes
 * with CPUs and memory counted apart.
 */
#include "refcnt_helpers.h"
#include "harness_filter.h"
#include "hub-map.h"

#include <linux/refcnt_hub.h>
#include <sched.h>
#include <time.h>

#define HUB_PARAM	"/sys/module/refcnt_hub/parameters/enable"
#define MEMSIDE		"/sys/module/refcnt/parameters/pebs_memside"
#define NUMAB		"/proc/sys/kernel/numa_balancing"
#define DIR_		"/tmp/refcntd-pmu-test"
#define CONF		DIR_ "/refcntd.conf"
#define STATS		DIR_ "/stats"
#define ERRF		DIR_ "/stderr"
#define PERIOD		1000	/* make placement's PEBS period */
#define DIFF		1500	/* two samples more than home */
#define PAGES		32	/* the user's array */
#define OTHER		8	/* the array of a process refcntd leaves */
#define MPOL_DEFAULT_	0
#define MPOL_BIND_	2
#define MOVE_MPOL_MF_MOVE (1 << 1)

static char refcntd[PATH_MAX];

static int find_refcntd(void)
{
	static const char *const dirs[] = { "./tools", "../tools", "/refcnt/tools" };
	const char *env = getenv("REFCNT_TOOLS");
	unsigned int i;

	if (env) {
		snprintf(refcntd, sizeof(refcntd), "%s/refcntd", env);
		if (!access(refcntd, X_OK))
			return 0;
	}
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(refcntd, sizeof(refcntd), "%s/refcntd", dirs[i]);
		if (!access(refcntd, X_OK))
			return 0;
	}
	return -1;
}

/*
 * Waits are deadlines on this clock, not counts of sleeps: under TCG on a
 * loaded host a sleep takes longer than it says, and the guest runs
 * several times slower than alone. Each is generous, and none goes past
 * test_end, TEST_END_S after the test started, short of its timeout
 * (300 s): a slow run fails saying where, not killed by the harness.
 */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#define TEST_END_S	280
#define STATS_WAIT_S	60	/* refcntd answers SIGUSR1 within a batch */
#define START_WAIT_S	60
#define MOVE_WAIT_S	120
#define FROZEN_WAIT_S	60
#define PMU_WAIT_S	10	/* the device applies a program */

static double test_end = 1e18;

/* Until t0 + wait seconds, or test_end if sooner. */
static int before(double t0, double wait)
{
	double now = now_s();

	return now < t0 + wait && now < test_end;
}

/* The emulated PMU's control block, as hub_test and hub-pmu write it. */
static uint32_t pmu_program(unsigned char *base, uint32_t refs, uint32_t mode,
			    uint32_t period, uint32_t flags)
{
	struct refcnt_hub_control *c = (void *)(base + REFCNT_HUB_CONTROL);
	uint32_t seq = c->seq + 1;
	double t0 = now_s();

	c->refs = refs;
	c->pmu_mode = mode;
	c->pmu_period = period;
	c->pmu_flags = flags;
	__atomic_store_n(&c->seq, seq, __ATOMIC_RELEASE);
	do {
		if (__atomic_load_n(&c->seq_applied, __ATOMIC_ACQUIRE) == seq)
			return c->pmu_applied;
		usleep(1000);
	} while (now_s() - t0 < PMU_WAIT_S);
	return UINT32_MAX;
}

static void pin_node(int node)
{
	char path[96], buf[256];
	struct rc_nodes cpus;
	cpu_set_t set;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
	if (rc_read_file(path, buf, sizeof(buf)) <= 0 || rc_parse_list(buf, &cpus) ||
	    !cpus.n)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpus.id[0], &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* nid's counter (cnodeids are grouped above 64); *max: the counters' maximum. */
static int cnode_group(int nid, uint32_t *max)
{
	struct rcb_info info;
	int fd = rc_open_node(nid, O_RDONLY), ret = -1;

	if (fd >= 0 && !ioctl(fd, RCB_INFO_GET, &info)) {
		ret = info.rcb_cnodeid / info.rcb_nodes_per_counter;
		*max = info.rcb_hw_counter_max;
	}
	if (fd >= 0)
		close(fd);
	return ret;
}

/*
 * A user: on node a, its pages of [p, p + n pages) first touched on node
 * b, then the binding removed (misplaced, as make placement does); then
 * loads from every line of them until killed. Writes one byte to ready.
 */
static pid_t user(char *p, int n, int a, int b, int ready)
{
	unsigned long mask[RC_MAX_NODES / 64 + 1] = {};
	size_t len = n * rc_page_size();
	pid_t pid = rc_fork();
	long i;

	if (pid)
		return pid;
	pin_node(a);
	mask[b / 64] = 1UL << (b % 64);
	if (syscall(SYS_mbind, p, len, MPOL_BIND_, mask, RC_MAX_NODES + 1, 0))
		_exit(1);
	memset(p, 1, len);
	if (syscall(SYS_mbind, p, len, MPOL_DEFAULT_, NULL, 0, 0))
		_exit(2);
	if (write(ready, "r", 1) != 1)
		_exit(3);
	for (;;)
		for (i = 0; i < (long)len; i += 64) {
			long x;

			__asm__ volatile("mov (%1,%2), %0" : "=r"(x) : "r"(p), "r"(i) : "memory");
		}
}

/* How many of pid's n pages at p are on nid (move_pages(2) query). */
static int pages_on(pid_t pid, char *p, int n, int nid)
{
	void *pages[PAGES];
	int status[PAGES], i, on = 0;

	for (i = 0; i < n; i++)
		pages[i] = p + i * rc_page_size();
	if (syscall(SYS_move_pages, pid, (unsigned long)n, pages, NULL, status, 0))
		return -errno;
	for (i = 0; i < n; i++)
		on += status[i] == nid;
	return on;
}

static int move_all(pid_t pid, char *p, int n, int nid)
{
	void *pages[PAGES];
	int status[PAGES], nodes[PAGES], i;

	for (i = 0; i < n; i++) {
		pages[i] = p + i * rc_page_size();
		nodes[i] = nid;
	}
	if (syscall(SYS_move_pages, pid, (unsigned long)n, pages, nodes, status,
		    MOVE_MPOL_MF_MOVE))
		return -errno;
	return pages_on(pid, p, n, nid);
}

static double stats_worst;	/* slowest answer to SIGUSR1, seconds */

/*
 * The stats file refcntd writes on SIGUSR1 into buf (one JSON object):
 * its size, or -1 when none came within STATS_WAIT_S.
 */
static int stats_now(pid_t rd, char *buf, size_t size)
{
	double t0 = now_s(), took;
	int n = -1;

	unlink(STATS);
	kill(rd, SIGUSR1);
	while (access(STATS, R_OK) && before(t0, STATS_WAIT_S))
		usleep(20000);
	took = now_s() - t0;
	if (took > stats_worst)
		stats_worst = took;
	if (!access(STATS, R_OK))
		n = rc_read_file(STATS, buf, size);
	return n > 0 ? n : -1;
}

/* A number of those stats, or -1. */
static long long stat_key(const char *buf, const char *key)
{
	char pat[64];
	const char *s;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	s = strstr(buf, pat);
	return s ? strtoll(s + strlen(pat), NULL, 10) : -1;
}

static long long stat_of(pid_t rd, const char *key)
{
	char buf[4096];

	return stats_now(rd, buf, sizeof(buf)) > 0 ? stat_key(buf, key) : -1;
}

FIXTURE(refcntd_pmu) {
	struct rc_knob hub, memside, numab;
	unsigned char *base;
	size_t size;
	uint32_t refs;		/* the plain references as found */
	int a, b;		/* the users' node, the array's */
	uint32_t hw_max;	/* 2047: 11-bit counters, which fold per sample */
	char *arr, *other;
	pid_t user, stranger, rd;
};

FIXTURE_SETUP(refcntd_pmu)
{
	struct rc_nodes cpu, mem;
	struct refcnt_hub_header *hdr;
	int i, ga = -1;

	memset(&self->hub, 0, sizeof(self->hub));
	memset(&self->memside, 0, sizeof(self->memside));
	memset(&self->numab, 0, sizeof(self->numab));
	self->base = NULL;
	self->user = self->stranger = self->rd = 0;
	if (find_refcntd())
		RC_SETUP_SKIP("no refcntd (make tools; REFCNT_TOOLS=dir)");
	if (!rc_exists(HUB_PARAM))
		RC_SETUP_SKIP("no hub device (boot with refcnt-vm --hub)");
	self->base = hub_map(1, &self->size);
	ASSERT_NE(NULL, self->base);
	hdr = (void *)self->base;
	self->refs = ((struct refcnt_hub_control *)(self->base + REFCNT_HUB_CONTROL))->refs;
	if (!(hdr->pmu_modes & (1u << REFCNT_HUB_PMU_PEBS)))
		RC_SETUP_SKIP("the hub device emulates no PMU");
	ASSERT_EQ(0, rc_node_list("has_cpu", &cpu));
	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	self->a = self->b = -1;
	for (i = 0; i < mem.n && self->b < 0; i++) {
		if (!rc_list_has(&cpu, mem.id[i]))
			continue;
		if (self->a < 0) {
			self->a = mem.id[i];
			ga = cnode_group(self->a, &self->hw_max);
		} else if (cnode_group(mem.id[i], &self->hw_max) != ga) {
			self->b = mem.id[i];
		}
	}
	if (self->b < 0)
		RC_SETUP_SKIP("needs two nodes with CPUs and memory counted apart");
	/*
	 * Sets left with a raised migration by earlier tests stay silent,
	 * and their records still queued are gone.
	 */
	for (i = 0; i < mem.n; i++) {
		ASSERT_EQ(0, rc_reset_node(mem.id[i]));
		ASSERT_EQ(0, rc_drain_events(mem.id[i]));
	}
	mkdir(DIR_, 0755);
	ASSERT_EQ(0, rc_knob_set(&self->memside, MEMSIDE, "0"));
	ASSERT_EQ(0, rc_knob_set(&self->hub, HUB_PARAM, "1"));
	/* Only refcntd moves pages here: NUMA balancing would move them too. */
	if (rc_exists(NUMAB))
		ASSERT_EQ(0, rc_knob_set(&self->numab, NUMAB, "0"));
	self->arr = mmap(NULL, (PAGES + OTHER) * rc_page_size(),
			 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->arr);
	ASSERT_EQ(0, madvise(self->arr, (PAGES + OTHER) * rc_page_size(),
			     MADV_NOHUGEPAGE));
	self->other = self->arr + PAGES * rc_page_size();
}

FIXTURE_TEARDOWN(refcntd_pmu)
{
	if (self->rd > 0) {
		kill(self->rd, SIGTERM);
		waitpid(self->rd, NULL, 0);
	}
	if (self->user > 0)
		kill(self->user, SIGKILL);
	if (self->stranger > 0)
		kill(self->stranger, SIGKILL);
	/* The PMU off, the plain references as they were. */
	if (self->base)
		pmu_program(self->base, self->refs, REFCNT_HUB_PMU_OFF, 0, 0);
	rc_knob_restore(&self->hub);
	rc_knob_restore(&self->memside);
	rc_knob_restore(&self->numab);
}

static pid_t start_refcntd(pid_t acted_on, int diff)
{
	FILE *f = fopen(CONF, "w");
	pid_t pid;
	int fd, i;

	if (!f)
		return -1;
	/*
	 * The placement's PEBS settings (tools/testing/placement/
	 * refcntd-pmu.conf) but the module's own fold threshold, so that
	 * the crossing sample folds; a freeze longer than the test and no
	 * melt, so that a page moved back stays.
	 */
	fprintf(f, "pids = %d\nfeed = none\ndiff_threshold = %d\n"
		"promote_threshold = %d\nfold_threshold = 0\nfreeze_ms = 600000\n"
		"melt_events = 0\nmin_free_mb = 0\nrmap_ms = 200\nlog_moves = yes\n"
		"stats_file = " STATS "\nstats_interval = 0\n",
		acted_on, diff, diff);
	fclose(f);
	unlink(STATS);
	pid = rc_fork();
	if (!pid) {
		cpu_set_t all;

		/* Any CPU: not the users' (the test's pinning is inherited). */
		CPU_ZERO(&all);
		for (i = 0; i < CPU_SETSIZE; i++)
			CPU_SET(i, &all);
		sched_setaffinity(0, sizeof(all), &all);
		fd = open(ERRF, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 2);
		execl(refcntd, "refcntd", "-c", CONF, (char *)NULL);
		_exit(98);
	}
	/* Started: its statistics written once. */
	for (double t0 = now_s(); access(STATS, R_OK) && before(t0, START_WAIT_S);)
		usleep(100000);
	return pid;
}

/*
 * The rings still hold what every CPU referenced before the device went
 * quiet: the plain references of the whole machine, the kernel's among
 * them, which name no process (up to a ring per CPU, 256Ki records in
 * the hub step's boot with PAPI). Left to the drain, they would count
 * after the setup's reset and raise migrations that name nobody among
 * the users' events. Drain them now, then forget their counts and the
 * events they raised.
 */
static int forget_before(void)
{
	struct rc_nodes mem;
	int i, err;

	err = rc_write_file(RC_FEEDDIR "/hub_sync", "1");
	if (!err)
		err = rc_node_list("has_memory", &mem);
	for (i = 0; !err && i < mem.n; i++) {
		err = rc_reset_node(mem.id[i]);
		if (!err)
			err = rc_drain_events(mem.id[i]);
	}
	return err;
}

static void show_log(void)
{
	char buf[4096];
	int n = rc_read_file(ERRF, buf, sizeof(buf));

	printf("# refcntd's log (first 4 KiB):\n%.*s\n", n > 0 ? n : 0, buf);
}

TEST_F_TIMEOUT(refcntd_pmu, moves_misplaced_array, 300)
{
	long long moved, frozen0, frozen = 0, over, ctx, stranger;
	double t0, start = now_s();
	int ready[2], i, on = 0;
	char buf[4096];
	char c;

	test_end = start + TEST_END_S;
	/* The users' copies of this process's pages on node A, as they are. */
	pin_node(self->a);
	/* Quiet until refcntd watches: neither references nor samples. */
	ASSERT_NE(UINT32_MAX, pmu_program(self->base, 0, REFCNT_HUB_PMU_OFF, 0, 0));
	ASSERT_EQ(0, forget_before());
	ASSERT_EQ(0, pipe(ready));
	self->user = user(self->arr, PAGES, self->a, self->b, ready[1]);
	self->stranger = user(self->other, OTHER, self->a, self->b, ready[1]);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	ASSERT_EQ(1, read(ready[0], &c, 1));
	ASSERT_EQ(PAGES, pages_on(self->user, self->arr, PAGES, self->b));
	ASSERT_EQ(OTHER, pages_on(self->stranger, self->other, OTHER, self->b));
	t0 = now_s();
	self->rd = start_refcntd(self->user, DIFF);
	ASSERT_LT(0, self->rd);
	ASSERT_EQ(0, access(STATS, R_OK)) show_log();
	printf("refcntd-pmu: refcntd started in %.1f s\n", now_s() - t0);
	pin_node(self->b);
	ASSERT_EQ((uint32_t)PERIOD,
		  pmu_program(self->base, 0, REFCNT_HUB_PMU_PEBS, PERIOD,
			      REFCNT_HUB_PMU_STORES | REFCNT_HUB_PMU_EXCLUDE_KERNEL));
	t0 = now_s();
	while (on != PAGES && before(t0, MOVE_WAIT_S)) {
		usleep(250000);
		on = pages_on(self->user, self->arr, PAGES, self->a);
		ASSERT_LE(0, on);
		ASSERT_EQ(0, waitpid(self->rd, NULL, WNOHANG)) show_log();
	}
	printf("refcntd-pmu: %d of %d pages on node %d in %.1f s\n", on, PAGES,
	       self->a, now_s() - t0);
	/* One answer for the three figures: SIGUSR1 while the flood goes on */
	ASSERT_LT(0, stats_now(self->rd, buf, sizeof(buf))) {
		TH_LOG("no stats from refcntd within %d s", STATS_WAIT_S);
		show_log();
	}
	moved = stat_key(buf, "moved");
	over = stat_key(buf, "over_time");
	ctx = stat_key(buf, "no_context");
	stranger = stat_key(buf, "not_opted_in");
	printf("refcntd-pmu: stats in %.1f s: moved %lld, over_time %lld, not_opted_in %lld, no_context %lld, context_from_rmap %lld, events %lld, lost %lld\n",
	       stats_worst, moved, over, stranger, ctx,
	       stat_key(buf, "context_from_rmap"), stat_key(buf, "events"),
	       stat_key(buf, "lost"));
	if (on != PAGES || moved != PAGES)
		show_log();
	/* Exactly the user's array moved, and all of it. */
	ASSERT_EQ(PAGES, on);
	ASSERT_EQ(PAGES, moved);
	/*
	 * 11-bit counters fold as the crossing sample arrives (1,000 +
	 * 1,000 > 1,792): those sets were judged on their counts over time.
	 */
	if (self->hw_max <= 2047)
		ASSERT_LT(0, over);
	/*
	 * Not a process refcntd acts on, and its events say so: they name
	 * it (a lossy context slot taken by another set's raise leaves
	 * some to the reverse map, which knows none of its pages).
	 */
	ASSERT_EQ(OTHER, pages_on(self->stranger, self->other, OTHER, self->b));
	ASSERT_LT(0, stranger);

	/* Moved back: frozen, it stays, however often its users ask. */
	frozen0 = stat_of(self->rd, "frozen");
	ASSERT_LE(0, frozen0) TH_LOG("no stats from refcntd within %d s", STATS_WAIT_S);
	t0 = now_s();
	ASSERT_EQ(PAGES, move_all(self->user, self->arr, PAGES, self->b));
	while (frozen - frozen0 < PAGES && before(t0, FROZEN_WAIT_S)) {
		usleep(250000);
		frozen = stat_of(self->rd, "frozen");
		ASSERT_LE(0, frozen) TH_LOG("no stats from refcntd within %d s",
					    STATS_WAIT_S);
	}
	on = pages_on(self->user, self->arr, PAGES, self->b);
	moved = stat_of(self->rd, "moved");
	printf("refcntd-pmu: moved back to node %d: %lld events frozen in %.1f s, %d pages stay, moved %lld\n",
	       self->b, frozen - frozen0, now_s() - t0, on, moved);
	ASSERT_LT(0, frozen - frozen0);
	ASSERT_EQ(PAGES, on);
	ASSERT_EQ(PAGES, moved);
	/* SIGTERM is answered under the flood too: stopped, exit 0. */
	t0 = now_s();
	kill(self->rd, SIGTERM);
	ASSERT_EQ(self->rd, waitpid(self->rd, &i, 0));
	self->rd = 0;
	ASSERT_EQ(0, i);
	printf("refcntd-pmu: SIGTERM answered in %.1f s, SIGUSR1 in %.1f s at worst; %.0f s in all\n",
	       now_s() - t0, stats_worst, now_s() - start);
}

/*
 * The hub feed names its pages: with the device's reference stream on,
 * every user-mode reference of every process (the kernel's own records
 * name no process, rightly), the migration events refcntd reads carry
 * their process and address, so that refcntd acts on them: events
 * without a context (refcntd's no_context) stay under 1%, and the array
 * moves. At the boot's hub period (hub-check runs it at 1 and at 64),
 * thresholds four records apart.
 */
TEST_F_TIMEOUT(refcntd_pmu, hub_feed_names_its_pages, 300)
{
	long long events, ctx, moved;
	uint64_t period = 0;
	int ready[2], on = 0;
	double t0;
	char buf[4096], ch;

	test_end = now_s() + TEST_END_S;
	ASSERT_EQ(0, rc_read_u64(RC_FEEDDIR "/hub_period", &period));
	ASSERT_LT(0ULL, period);
	pin_node(self->a);
	ASSERT_NE(UINT32_MAX, pmu_program(self->base, REFCNT_HUB_REFS_OFF,
					  REFCNT_HUB_PMU_OFF, 0, 0));
	ASSERT_EQ(0, forget_before());
	ASSERT_EQ(0, pipe(ready));
	self->user = user(self->arr, PAGES, self->a, self->b, ready[1]);
	ASSERT_EQ(1, read(ready[0], &ch, 1));
	ASSERT_EQ(PAGES, pages_on(self->user, self->arr, PAGES, self->b));
	self->rd = start_refcntd(self->user, 4 * (int)period);
	ASSERT_LT(0, self->rd);
	ASSERT_EQ(0, access(STATS, R_OK)) show_log();
	pin_node(self->b);
	ASSERT_NE(UINT32_MAX, pmu_program(self->base, REFCNT_HUB_REFS_USER,
					  REFCNT_HUB_PMU_OFF, 0, 0));
	t0 = now_s();
	while (on != PAGES && before(t0, MOVE_WAIT_S)) {
		usleep(250000);
		on = pages_on(self->user, self->arr, PAGES, self->a);
		ASSERT_LE(0, on);
		ASSERT_EQ(0, waitpid(self->rd, NULL, WNOHANG)) show_log();
	}
	ASSERT_LT(0, stats_now(self->rd, buf, sizeof(buf))) show_log();
	events = stat_key(buf, "events");
	ctx = stat_key(buf, "no_context");
	moved = stat_key(buf, "moved");
	printf("refcntd-pmu: hub feed at period %llu: %d of %d pages on node %d in %.1f s; events %lld, no_context %lld, context_from_rmap %lld, moved %lld\n",
	       (unsigned long long)period, on, PAGES, self->a, now_s() - t0,
	       events, ctx, stat_key(buf, "context_from_rmap"), moved);
	if (on != PAGES)
		show_log();
	EXPECT_LE(PAGES, events);
	EXPECT_LE(0, ctx);
	EXPECT_LT(ctx * 100, events);
	EXPECT_EQ(PAGES, on);
	EXPECT_EQ(PAGES, moved);
}

RC_HARNESS_MAIN
