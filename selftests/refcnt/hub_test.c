// SPDX-License-Identifier: GPL-2.0
/*
 * The hub feed, in a guest booted with `refcnt-vm --hub` (period 1):
 * every reference of every vCPU comes through the emulated memory-side
 * reference device. Skips without the device. Run by
 * tools/testing/hub-check, which also compares the exact test's counts
 * with the truth plugin's table and writes garbage into the device from
 * the host for the last test.
 *
 *  - exact: K loads on each of P pages of node B from a CPU of node A
 *    make exactly K references from A's counter, none from another, in
 *    ext + hw + lost (every pair; the 72-node machine, a subset)
 *  - real_rates: a hot loop on a remote page at the emulator's rate
 *    folds 11-bit counters (a drain's pass delivers each page's records
 *    as one delivery, which folds instead of pegging: less than 0.1% of
 *    the references is lost), raises fold and migration events in
 *    sequence, and conserves: what the feed delivered is what the nodes
 *    counted, and what each node counted is in its sets
 *  - granularity_256: with 256-byte hardware pages, each 256-byte piece a
 *    program touches has references, each it does not has none
 *  - pmu_stream, pmu_samples: the emulated PMU's samples, as the device
 *    gives them and through the PMU feed's sample code
 *  - pmu_session: counting sessions on the emulated PMU: a pid's and a
 *    range's samples only, exactly
 *  - reload_streaming: load and unload 20 times while the device streams
 *  - unbind_rebind, no_device, foreign_left_alone
 *  - host_garbage (last: it may leave the header broken)
 *
 * `hub_test -t NAME...` runs only the tests named (harness_filter.h).
 */
#include <linux/refcnt_hub.h>

#include "refcnt_counters.h"
#include "harness_filter.h"
#include "hub-map.h"

#include <dirent.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define HUB_DRV		"/sys/bus/pci/drivers/refcnt-hub"
#define HUB_PARAM	"/sys/module/refcnt_hub/parameters/enable"
#define EXACT_K		3000
/* 8 x 3000 records fit a ring with room to spare (64Ki records on 72 nodes). */
#define EXACT_PAGES	8
#define MPOL_BIND_	2

/* The truth plugin's window marks (tools/testing/truth/truth-mark.h). */
static inline void truth_start(void)
{
	__asm__ volatile(".byte 0x0f,0x1f,0x84,0x00,0x52,0x43,0x54,0x53" ::: "memory");
}

/* Stop, and write the window's counts to the truth's FILE.N. */
static inline void truth_dump(void)
{
	__asm__ volatile(".byte 0x0f,0x1f,0x84,0x00,0x52,0x43,0x54,0x44" ::: "memory");
}

static int put(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, v, strlen(v)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * refcnt.ko again with params, then refcnt_hub.ko (REFCNT_HUB_KO), the
 * feed on or off: the driver binds the device at once. 0 or -errno.
 */
static int hub_reload(const char *params, bool on)
{
	int ret = rc_reload(params);

	return ret ?: rc_load_module("REFCNT_HUB_KO", on ? "enable=1" : "enable=0");
}

/* The PCI address of the device the driver has bound, or false. */
static bool hub_bound(char *addr, size_t len)
{
	DIR *d = opendir(HUB_DRV);
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "0000:", 5)) {
			if (addr)
				snprintf(addr, len, "%.40s", e->d_name);
			found = true;
		}
	closedir(d);
	return found;
}

static int hub_sync(void)
{
	return put(RC_FEEDDIR "/hub_sync", "1");
}

/* Only this CPU's ring: what a pinned program did. */
static int hub_sync_cpu(void)
{
	return put(RC_FEEDDIR "/hub_sync", "cpu");
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

static uint64_t paddr_of(const void *va)
{
	uint64_t e = 0;
	int pm = open("/proc/self/pagemap", O_RDONLY);

	if (pm < 0)
		return 0;
	if (pread(pm, &e, 8, (uintptr_t)va / rc_page_size() * 8) != 8)
		e = 0;
	close(pm);
	if (!(e & (1ULL << 63)))
		return 0;
	return (e & ((1ULL << 55) - 1)) * rc_page_size() +
	       (uintptr_t)va % rc_page_size();
}

/* n locked pages of node b, or NULL. */
static char *node_pages(int b, size_t n)
{
	unsigned long mask[RC_MAX_NODES / 64 + 1] = {};
	size_t len = n * rc_page_size();
	char *p;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	mask[b / 64] = 1UL << (b % 64);
	madvise(p, len, MADV_NOHUGEPAGE);
	if (syscall(SYS_mbind, p, len, MPOL_BIND_, mask, RC_MAX_NODES + 1, 0) ||
	    mlock(p, len)) {
		munmap(p, len);
		return NULL;
	}
	return p;
}

/* Every counter of the set holding paddr: ext + hw + lost, after a sync. */
static int set_counts(struct rc_dev *d, uint64_t paddr, uint64_t *c)
{
	int64_t set = rcd_paddr_set(d, paddr);
	struct rc_set s;
	unsigned int k;

	if (set < 0 || rc_sync(d->fd) || rcd_read_set(d, set, &s))
		return -1;
	for (k = 0; k < d->cps; k++)
		c[k] = (uint64_t)s.ext[k] + s.hw[k] + s.lost[k];
	return 0;
}

static uint32_t pmu_program(unsigned char *base, uint32_t refs, uint32_t mode,
			    uint32_t period, uint32_t flags);

/*
 * The plain stream: every reference, no PMU, no range filter. A test
 * killed at its timeout runs no teardown (the harness kills its child),
 * and another program in the boot (refcntd_pmu_test, the PAPI part) may
 * have left the control block set: each test starts from this.
 */
static void hub_control_reset(void)
{
	struct refcnt_hub_control *c;
	unsigned char *base;
	size_t size;

	base = hub_map(1, &size);
	if (!base)
		return;
	c = (void *)(base + REFCNT_HUB_CONTROL);
	c->data_start = c->data_end = c->ip_start = c->ip_end = 0;
	pmu_program(base, 1, REFCNT_HUB_PMU_OFF, 0, 0);
	munmap(base, size);
}

FIXTURE(hub) {
	struct rc_nodes online, cnodes, cpu, mem;
	bool none;
};

/* The harness runs the test after a SKIP in setup: each test checks. */
#define HUB_NEEDED()							\
	do {								\
		if (self->none)						\
			SKIP(return, "no hub device bound (boot with refcnt-vm --hub)"); \
	} while (0)

FIXTURE_SETUP(hub)
{
	self->none = !hub_bound(NULL, 0);
	if (self->none)
		return;
	ASSERT_EQ(0, rc_node_list("online", &self->online));
	ASSERT_EQ(0, rc_cnode_list(&self->cnodes));
	ASSERT_EQ(0, rc_node_list("has_cpu", &self->cpu));
	ASSERT_EQ(0, rc_node_list("has_memory", &self->mem));
	ASSERT_EQ(0, put(HUB_PARAM, "1"));
	hub_control_reset();
}

FIXTURE_TEARDOWN(hub)
{
	size_t size;
	unsigned char *base = self->none ? NULL : hub_map(1, &size);

	/* A test that stopped half-way leaves the device as it found it. */
	if (base) {
		pmu_program(base, 1, REFCNT_HUB_PMU_OFF, 0, 0);
		munmap(base, size);
	}
}

/*
 * K loads on each of n pages, in a truth window of their own (dumped to
 * the truth's FILE.N for pair N): one mov each and no
 * other memory reference (no call, everything in registers), so that the
 * vCPU's ring holds them all.
 */
static void exact_loads(char *p, int n, long k)
{
	long i, j;

	truth_start();
	for (i = 0; i < k; i++)
		for (j = 0; j < n; j++) {
			long x;

			__asm__ volatile("mov (%1,%2), %0" : "=r"(x)
					 : "r"(p), "r"(j << 12));
		}
	truth_dump();
}

/*
 * The overrun count of the calling CPU's ring, read from the device's
 * memory itself: a few loads, where reading hub_rings would make more
 * references than a ring holds. Its ring is its QEMU CPU index, the
 * socket of its slot in refcnt-vm's guests. NULL if unreadable.
 */
static volatile __u64 *own_ring_overruns(void)
{
	static const unsigned char *base;
	static size_t size;
	const struct refcnt_hub_header *h;
	char path[96], buf[64];
	int ring;

	if (!base)
		base = hub_map(0, &size);
	if (!base)
		return NULL;
	h = (const struct refcnt_hub_header *)base;
	snprintf(path, sizeof(path),
		 "/sys/devices/system/cpu/cpu%d/topology/physical_package_id",
		 sched_getcpu());
	if (rc_read_file(path, buf, sizeof(buf)) <= 0)
		return NULL;
	ring = atoi(buf);
	if (ring < 0 || (uint32_t)ring >= h->nr_rings ||
	    REFCNT_HUB_HEADER_SIZE + ((uint64_t)ring + 1) * h->ring_stride > size)
		return NULL;
	return &((struct refcnt_hub_ring *)(base + REFCNT_HUB_HEADER_SIZE +
					    (uint64_t)ring * h->ring_stride))->overruns;
}

/*
 * Sync this CPU's ring until it stays empty for 100 ms (up to 20 times),
 * then once more: on 72 nodes the ring was full again right after one
 * sync (most likely the interrupt service of what it drained, which runs
 * after it, unmuted), and every load was dropped. 0, or -1 on error.
 */
static int exact_settle(volatile __u64 *own)
{
	uint64_t o;
	int k;

	for (k = 0; k < 20; k++) {
		if (hub_sync_cpu())
			return -1;
		o = *own;
		usleep(100 * 1000);
		if (*own == o)
			break;
	}
	return hub_sync_cpu();
}

/* 2 if the window proves nothing: the ring overran, or a page moved. */
static int exact_window_void(int a, int b, char *p, const uint64_t *pa,
			     uint64_t overruns)
{
	int j;

	if (overruns) {
		printf("hub-exact-retry: node %d from %d: this CPU's ring overran (%llu)\n",
		       b, a, (unsigned long long)overruns);
		return 2;
	}
	for (j = 0; j < EXACT_PAGES; j++)
		if (paddr_of(p + j * rc_page_size()) != pa[j]) {
			printf("hub-exact-retry: node %d from %d: page 0x%llx moved\n",
			       b, a, (unsigned long long)pa[j]);
			return 2;
		}
	return 0;
}

/*
 * One pair: pages of node b, loads from a CPU of node a. 0 if exact, 1
 * if not, -1 on error, 2 if the window proves nothing and is tried
 * again: a page moved (mlocked pages may still be compacted, on a
 * nearly full 32 MiB node of the 72-node guest) and its loads were
 * counted on its new page, or this CPU's ring overran, full of the
 * kernel's own references (a 72-node guest's rings hold 64Ki records).
 */
static int exact_pair(struct __test_metadata *_metadata, int a, int b,
		      int cnode_a)
{
	uint64_t before[EXACT_PAGES][RCB_MAX_COUNTERS];
	uint64_t after[EXACT_PAGES][RCB_MAX_COUNTERS], pa[EXACT_PAGES];
	uint64_t o0, r0, u0, own0, own1;
	volatile __u64 *own;
	struct rc_dev d;
	unsigned int k;
	int j, bad = 0;
	char *p;

	pin_node(a);
	p = node_pages(b, EXACT_PAGES);
	if (!p || rcd_open(&d, b)) {
		TH_LOG("node %d: no pages or device", b);
		return -1;
	}
	for (j = 0; j < EXACT_PAGES; j++)
		pa[j] = paddr_of(p + j * rc_page_size());
	if (hub_sync_cpu())
		bad = -1;
	for (j = 0; j < EXACT_PAGES && !bad; j++)
		bad = set_counts(&d, pa[j], before[j]);
	o0 = rc_feed_stat("hub_overruns");
	r0 = rc_feed_stat("hub_references");
	u0 = rc_feed_stat("hub_unresolved");
	/* Empty this vCPU's ring of what reading the counters did. */
	own = own_ring_overruns();
	if (!own || exact_settle(own))
		bad = -1;
	own0 = own ? *own : 0;
	exact_loads(p, EXACT_PAGES, EXACT_K);
	own1 = own ? *own : 0;
	if (hub_sync_cpu())
		bad = -1;
	if (!bad)
		bad = exact_window_void(a, b, p, pa, own1 - own0);
	printf("hub-exact: node %d from %d: %llu references, %llu unresolved, %llu overruns\n",
	       b, a, (unsigned long long)(rc_feed_stat("hub_references") - r0),
	       (unsigned long long)(rc_feed_stat("hub_unresolved") - u0),
	       (unsigned long long)(rc_feed_stat("hub_overruns") - o0));
	for (j = 0; j < EXACT_PAGES && !bad; j++) {
		bad = set_counts(&d, pa[j], after[j]);
		printf("hub-exact: page 0x%llx from %d nodes_per_counter %u counters",
		       (unsigned long long)(pa[j] & ~(rc_page_size() - 1)), a,
		       d.npc);
		for (k = 0; k < d.cps; k++) {
			uint64_t delta = after[j][k] - before[j][k];
			uint64_t want = k == rcd_counter(&d, cnode_a) ? EXACT_K : 0;

			printf(" %llu", (unsigned long long)delta);
			if (delta != want) {
				TH_LOG("page 0x%llx of node %d from node %d: counter %u has %llu, want %llu",
				       (unsigned long long)pa[j], b, a, k,
				       (unsigned long long)delta,
				       (unsigned long long)want);
				bad = 1;
			}
		}
		printf("\n");
	}
	munmap(p, EXACT_PAGES * rc_page_size());
	rcd_close(&d);
	return bad;
}

/* Free memory of @node in KiB, from its meminfo; 0 if unreadable. */
static unsigned long node_free_kb(int node)
{
	char path[96], buf[4096], *p;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo",
		 node);
	if (rc_read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	p = strstr(buf, "MemFree:");
	return p ? strtoul(p + strlen("MemFree:"), NULL, 10) : 0;
}

/*
 * Room for a pair's pages: they are bound to their node and locked, so
 * a node the kernel has filled (the 72-node guest's 32 MiB nodes hold
 * early allocations) would call the OOM killer instead of failing.
 */
#define EXACT_MIN_FREE_KB	4096

/* Every CPU node x memory node; on big machines the first, last and own. */
TEST_F_TIMEOUT(hub, exact, 900)
{
	int i, j, k, r = 0, bad = 0, pairs = 0;

	HUB_NEEDED();

	/*
	 * The driver drains far slower than a vCPU references, and its own
	 * passes reference memory too: with the feed off, only hub_sync
	 * drains, and this vCPU's ring holds what this program does.
	 */
	ASSERT_EQ(0, put(HUB_PARAM, "0"));
	for (i = 0; i < self->cpu.n; i++)
		for (j = 0; j < self->mem.n; j++) {
			int a = self->cpu.id[i], b = self->mem.id[j];

			if (self->cpu.n * self->mem.n > 12 && j &&
			    j != self->mem.n - 1 && a != b)
				continue;
			if (node_free_kb(b) < EXACT_MIN_FREE_KB) {
				printf("hub-exact-skip: node %d from %d: %lu KiB free\n",
				       b, a, node_free_kb(b));
				continue;
			}
			for (k = 0; k < 5; k++) {
				r = exact_pair(_metadata, a, b,
					       rc_list_index(&self->cnodes, a));
				if (r != 2)
					break;
			}
			bad |= r;
			pairs++;
		}
	printf("hub-exact: %d pairs, %d pages each, %d loads per page\n",
	       pairs, EXACT_PAGES, EXACT_K);
	ASSERT_EQ(0, put(HUB_PARAM, "1"));
	ASSERT_LT(0, pairs);
	ASSERT_EQ(0, bad);
}

#define HOT_PAGES	4
#define HOT_SECONDS	2

/* ext + hw + lost over every set of a node, after a sync. */
static uint64_t node_total(struct rc_dev *d)
{
	const uint64_t chunk = 8192;
	uint64_t first, total = 0, i, n, sets = d->info.rcb_sw_sets;
	size_t sz = chunk * d->cps * sizeof(uint32_t);
	uint32_t *hw = malloc(sz), *ext = malloc(sz), *lost = malloc(sz);

	rc_sync(d->fd);
	for (first = 0; hw && ext && lost && first < sets; first += chunk) {
		n = sets - first < chunk ? sets - first : chunk;
		if (rc_read_sets(d->fd, first, n, hw, ext, lost)) {
			total = UINT64_MAX;
			break;
		}
		for (i = 0; i < n * d->cps; i++)
			total += (uint64_t)hw[i] + ext[i] + lost[i];
	}
	free(hw);
	free(ext);
	free(lost);
	return total;
}

struct rates_snap {
	uint64_t delivered, nodes, total[RC_MAX_NODES];
	struct rc_stats st[RC_MAX_NODES];
};

/* With the feed stopped: nothing is in flight. */
static void rates_snap(struct rc_dev *devs, int n, struct rates_snap *s)
{
	int i;

	s->delivered = rc_feed_stat("hub_references");
	s->nodes = 0;
	for (i = 0; i < n; i++) {
		s->total[i] = node_total(&devs[i]);
		rc_stats_read(devs[i].nid, &s->st[i]);
		s->nodes += s->st[i].references + s->st[i].refs_dropped;
	}
}

/* Nothing but the pages in the loop: no call, the stride in a register. */
static void hot_loop(char *p)
{
	const long stride = rc_page_size() / sizeof(long);
	struct timespec t0, t;
	volatile long *q = (volatile long *)p;
	long i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (i = 0; i < 65536; i++)
			q[(i % HOT_PAGES) * stride]++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < HOT_SECONDS);
}

/* The events of node b's device: in sequence, in time, of each kind. */
static void rates_events(struct __test_metadata *_metadata, struct rc_dev *d)
{
	static struct rcb_event ev[4096];
	uint64_t seen[4] = {}, prev_seq = 0, prev_t = 0;
	int n, i, total = 0;

	while ((n = rc_events(d->fd, ev, 4096)) > 0) {
		for (i = 0; i < n; i++, total++) {
			if (total && ev[i].seq != prev_seq + 1)
				TH_LOG("event %d: seq %llu after %llu", total,
				       (unsigned long long)ev[i].seq,
				       (unsigned long long)prev_seq);
			EXPECT_TRUE(!total || ev[i].seq == prev_seq + 1 ||
				    ev[i].type == RCB_EVENT_LOST);
			EXPECT_LE(prev_t, ev[i].time_ns);
			prev_seq = ev[i].seq;
			prev_t = ev[i].time_ns;
			if (ev[i].type < 4)
				seen[ev[i].type]++;
		}
	}
	printf("hub-rates: node %d events %d: folds %llu pegs %llu migrations %llu\n",
	       d->nid, total, (unsigned long long)seen[RCB_EVENT_FOLD],
	       (unsigned long long)seen[RCB_EVENT_PEG],
	       (unsigned long long)seen[RCB_EVENT_MIGRATE]);
	EXPECT_LT(0ULL, (unsigned long long)seen[RCB_EVENT_FOLD]);
	EXPECT_LT(0ULL, (unsigned long long)seen[RCB_EVENT_MIGRATE]);
}

/*
 * The pair of real_rates: a node with CPUs, a and another with memory, b,
 * whose counters differ (above 64 nodes a counter counts a group of
 * cnodeids: b's home counter would count a's references too, and a
 * counter never migrates its own home's page). Sets *db; -1 when none.
 */
static int rates_pair(FIXTURE_DATA(hub) *self, struct rc_dev *devs,
		      struct rc_dev **db)
{
	int i, j, k;

	for (i = 0; i < self->cpu.n; i++)
		for (j = 0; j < self->mem.n; j++) {
			struct rc_dev *d = &devs[j];
			int a = self->cpu.id[i];

			if (d->nid == a)
				continue;
			for (k = 0; k < self->mem.n; k++)
				if (devs[k].nid == a)
					break;
			/* A node without memory has no device: no cnodeid. */
			if (k == self->mem.n ? d->npc > 1 :
			    rcd_counter(d, devs[k].info.rcb_cnodeid) ==
			    rcd_counter(d, d->info.rcb_cnodeid))
				continue;
			*db = d;
			return a;
		}
	return -1;
}

TEST_F_TIMEOUT(hub, real_rates, 300)
{
	static struct rates_snap s0, s1;
	struct rc_dev devs[RC_MAX_NODES], *db = NULL;
	uint64_t lost;
	uint32_t abs, diff;
	int a, b, i;
	bool narrow;
	char *p;

	HUB_NEEDED();

	for (i = 0; i < self->mem.n; i++)
		ASSERT_EQ(0, rcd_open(&devs[i], self->mem.id[i]));
	a = rates_pair(self, devs, &db);
	if (a < 0)
		SKIP(return, "no node with memory counted apart from a CPU's");
	b = db->nid;
	pin_node(a);
	p = node_pages(b, HOT_PAGES);
	ASSERT_NE(NULL, p);
	/*
	 * Fold only a full 11-bit counter: a reference that finds it full,
	 * raised and not yet folded, pegs; but a drain's pass brings each
	 * page's records as one delivery, which folds as it crosses the
	 * threshold, so only the first reference of a delivery can (when
	 * the one before ended exactly at the maximum). A remote counter a
	 * quarter ahead of home migrates. Above 16 nodes the counters have
	 * 19 bits, as the Origin's premium ones, and fold at 255, for a
	 * margin: there (72 nodes) the loop's pages get tens of thousands
	 * of references in 2 s, a tenth of what the drain delivers
	 * (testing.rst).
	 */
	rcd_default_thresholds(db, &abs, &diff);
	narrow = db->info.rcb_hw_counter_max <= 2047;
	abs = narrow ? db->info.rcb_hw_counter_max : 255;
	ASSERT_EQ(0, rc_thresholds(db->fd, abs, (abs + 1) / 4));
	ASSERT_EQ(0, put(HUB_PARAM, "0"));
	rc_drain(db->fd);
	rates_snap(devs, self->mem.n, &s0);
	ASSERT_EQ(0, put(HUB_PARAM, "1"));
	hot_loop(p);
	ASSERT_EQ(0, hub_sync());
	ASSERT_EQ(0, put(HUB_PARAM, "0"));
	rates_snap(devs, self->mem.n, &s1);
	ASSERT_EQ(0, put(HUB_PARAM, "1"));
	i = db - devs;
	lost = s1.st[i].pegged - s0.st[i].pegged;
	printf("hub-rates: %d s of a hot loop on node %d from node %d: %llu references delivered, %llu to node %d, %llu lost to pegging, %llu device overruns so far\n",
	       HOT_SECONDS, b, a,
	       (unsigned long long)(s1.delivered - s0.delivered),
	       (unsigned long long)(s1.st[i].references - s0.st[i].references),
	       b,
	       (unsigned long long)lost,
	       (unsigned long long)rc_feed_stat("hub_overruns"));
	/* Conservation: the feed's references are the nodes', in their sets. */
	EXPECT_EQ(s1.delivered - s0.delivered, s1.nodes - s0.nodes);
	for (i = 0; i < self->mem.n; i++)
		EXPECT_EQ(s1.total[i] - s0.total[i],
			  s1.st[i].references - s0.st[i].references);
	i = db - devs;
	EXPECT_LT(0ULL, (unsigned long long)(s1.st[i].folds - s0.st[i].folds));
	EXPECT_LT(0ULL, (unsigned long long)(s1.st[i].migrations - s0.st[i].migrations));
	/* Folded, not pegged: at most the first reference of a delivery. */
	EXPECT_GE((s1.st[i].references - s0.st[i].references) / 1000, lost);
	rates_events(_metadata, db);
	EXPECT_EQ(0, rcd_restore_thresholds(db));
	for (i = 0; i < self->mem.n; i++)
		rcd_close(&devs[i]);
}

/* The ring of the calling CPU (its QEMU CPU index), or NULL. */
static struct refcnt_hub_ring *own_ring(unsigned char *base, size_t size)
{
	const struct refcnt_hub_header *h = (const void *)base;
	char path[96], buf[64];
	int ring;

	snprintf(path, sizeof(path),
		 "/sys/devices/system/cpu/cpu%d/topology/physical_package_id",
		 sched_getcpu());
	if (rc_read_file(path, buf, sizeof(buf)) <= 0)
		return NULL;
	ring = atoi(buf);
	if (ring < 0 || (uint32_t)ring >= h->nr_rings ||
	    REFCNT_HUB_HEADER_SIZE + ((uint64_t)ring + 1) * h->ring_stride > size)
		return NULL;
	return (struct refcnt_hub_ring *)(base + REFCNT_HUB_HEADER_SIZE +
					  (uint64_t)ring * h->ring_stride);
}

/*
 * Program the emulated PMU and wait until this vCPU took it (its next
 * reference does: the second look, without a system call before it).
 * Returns the period in force, 0 off or refused.
 */
static uint32_t pmu_program(unsigned char *base, uint32_t refs, uint32_t mode,
			    uint32_t period, uint32_t flags)
{
	struct refcnt_hub_control *c = (void *)(base + REFCNT_HUB_CONTROL);
	uint32_t seq = c->seq + 1;
	int k;

	c->refs = refs;
	c->pmu_mode = mode;
	c->pmu_period = period;
	c->pmu_flags = flags;
	__atomic_store_n(&c->seq, seq, __ATOMIC_RELEASE);
	for (k = 0; k < 1000; k++) {
		if (__atomic_load_n(&c->seq_applied, __ATOMIC_ACQUIRE) == seq)
			return c->pmu_applied;
		if (k)
			usleep(1000);
	}
	return UINT32_MAX;
}

/* K loads on each of n pages: one mov each, nothing else in memory. */
static void pmu_loads(char *p, int n, long k)
{
	long i, j;

	for (i = 0; i < k; i++)
		for (j = 0; j < n; j++) {
			long x;

			__asm__ volatile("mov (%1,%2), %0" : "=r"(x)
					 : "r"(p), "r"(j << 12));
		}
}

/*
 * The emulated PMU's samples as the device gives them, read from this
 * vCPU's ring with the hub feed off (nothing drains it): at period 1 the
 * PEBS-like stream has exactly K user-mode load samples on each page of
 * a loop making K loads on each, with the page's physical address, the
 * one instruction that loads from the page, weight 1 and a data source
 * saying load; a
 * kernel read of a page (write() to a pipe) gives kernel-mode samples
 * when kernel events count, none with EXCLUDE_KERNEL; IBS-like periods
 * are rounded down to a multiple of 16.
 */
TEST_F_TIMEOUT(hub, pmu_stream, 300)
{
	uint64_t pa[EXACT_PAGES], per[EXACT_PAGES], ip[EXACT_PAGES];
	uint64_t head0, head1, h;
	uint64_t kernel = 0, other = 0, bad = 0;
	struct refcnt_hub_header *hdr;
	struct refcnt_hub_record *rec;
	struct refcnt_hub_ring *ring;
	unsigned char *base;
	int j, pipefd[2], a, round;
	size_t size;
	char *p;

	HUB_NEEDED();
	base = hub_map(1, &size);
	ASSERT_NE(NULL, base);
	hdr = (void *)base;
	if (!(hdr->pmu_modes & (1u << REFCNT_HUB_PMU_PEBS)))
		SKIP(return, "the device emulates no PMU");
	a = self->cpu.id[0];
	pin_node(a);
	p = node_pages(self->mem.id[0], EXACT_PAGES);
	ASSERT_NE(NULL, p);
	for (j = 0; j < EXACT_PAGES; j++)
		pa[j] = paddr_of(p + j * rc_page_size());
	ASSERT_EQ(0, pipe(pipefd));
	ring = own_ring(base, size);
	ASSERT_NE(NULL, ring);
	rec = (void *)((unsigned char *)ring + REFCNT_HUB_RING_CTRL);
	ASSERT_EQ(0, put(HUB_PARAM, "0"));

	/* IBS-like: periods in sixteens. */
	EXPECT_EQ(10000U, pmu_program(base, 1, REFCNT_HUB_PMU_IBS, 10007, 0));
	EXPECT_EQ(0U, pmu_program(base, 1, REFCNT_HUB_PMU_IBS, 15, 0));
	/*
	 * What the emulated PMU refuses (off, 0): no period, a mode or flag
	 * it does not know, IBS with PEBS's load latency or stores.
	 */
	EXPECT_EQ(0U, pmu_program(base, 1, REFCNT_HUB_PMU_PEBS, 0, 0));
	EXPECT_EQ(0U, pmu_program(base, 1, 7, 64, 0));
	EXPECT_EQ(0U, pmu_program(base, 1, REFCNT_HUB_PMU_PEBS, 64, 0x80));
	EXPECT_EQ(0U, pmu_program(base, 1, REFCNT_HUB_PMU_IBS, 64,
				  REFCNT_HUB_PMU_LDLAT));
	EXPECT_EQ(0U, pmu_program(base, 1, REFCNT_HUB_PMU_IBS, 64,
				  REFCNT_HUB_PMU_STORES));

	for (round = 0; round < 2; round++) {
		uint32_t flags = round ? REFCNT_HUB_PMU_EXCLUDE_KERNEL : 0;

		/*
		 * Only the PMU's records from here, in an empty ring: the
		 * user-mode ones while the sync empties it, the round's
		 * kernel-mode ones only after, with no system call between
		 * (under KASAN and lockdep, the kernel's loads on the way
		 * back from the sync alone filled the ring).
		 */
		ASSERT_EQ(1U, pmu_program(base, 0, REFCNT_HUB_PMU_PEBS, 1,
					  REFCNT_HUB_PMU_EXCLUDE_KERNEL));
		ASSERT_EQ(0, hub_sync_cpu());
		head0 = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
		if (!round)
			ASSERT_EQ(1U, pmu_program(base, 0, REFCNT_HUB_PMU_PEBS, 1, flags));
		pmu_loads(p, EXACT_PAGES, EXACT_K);
		ASSERT_EQ(rc_page_size(), (size_t)write(pipefd[1], p, rc_page_size()));
		head1 = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
		pmu_program(base, 1, REFCNT_HUB_PMU_OFF, 0, 0);
		ASSERT_GE((uint64_t)hdr->ring_records, head1 - head0)
			TH_LOG("the ring overran: %llu records",
			       (unsigned long long)(head1 - head0));

		memset(per, 0, sizeof(per));
		memset(ip, 0, sizeof(ip));
		kernel = other = bad = 0;
		for (h = head0; h < head1; h++) {
			const struct refcnt_hub_record *r =
				&rec[h & (hdr->ring_records - 1)];
			uint64_t off = r->vaddr - (uintptr_t)p;

			if (r->kind != REFCNT_HUB_REC_LOAD ||
			    off >= EXACT_PAGES * rc_page_size()) {
				other++;
				continue;
			}
			if (!(r->flags & REFCNT_HUB_F_USER)) {
				kernel++;
				continue;
			}
			/* A page's loads: one instruction (the loop is unrolled). */
			j = off / rc_page_size();
			per[j]++;
			if (!ip[j])
				ip[j] = r->ip;
			if (r->ip != ip[j] || r->ip >= 1ULL << 47 || r->weight != 1 ||
			    r->paddr != pa[j] + off % rc_page_size() ||
			    !(r->flags & REFCNT_HUB_F_ADDR) ||
			    r->flags & (REFCNT_HUB_F_STORE | REFCNT_HUB_F_PHYS) ||
			    ((r->data_src >> 0) & 0x1f) != 2 /* PERF_MEM_OP_LOAD */)
				bad++;
		}
		printf("hub-pmu: round %d: %llu records, %llu kernel-mode loads on the pages, %llu others\n",
		       round, (unsigned long long)(head1 - head0),
		       (unsigned long long)kernel, (unsigned long long)other);
		for (j = 0; j < EXACT_PAGES; j++)
			EXPECT_EQ((uint64_t)EXACT_K, per[j]) TH_LOG("page %d", j);
		EXPECT_EQ(0ULL, (unsigned long long)bad);
		if (round) {
			EXPECT_EQ(0ULL, (unsigned long long)kernel);
		} else {
			EXPECT_LT(0ULL, (unsigned long long)kernel);
		}
	}
	ASSERT_EQ(0, put(HUB_PARAM, "1"));
	close(pipefd[0]);
	close(pipefd[1]);
	munmap(p, EXACT_PAGES * rc_page_size());
	munmap(base, size);
}

/*
 * The emulated PMU's configurations pmu_samples runs, and what they show.
 * @truth: the truth table the round's counts equal ("all" references,
 * "llc" misses of the LLC model), NULL for none; @llc: needs the model.
 */
static const struct pmu_round {
	const char *name;
	uint32_t mode, period, flags;
	bool memside, llc;
	const char *truth;
} pmu_rounds[] = {
	{ "pebs-all", REFCNT_HUB_PMU_PEBS, 1, 0, false, false, "all" },
	{ "pebs-memside", REFCNT_HUB_PMU_PEBS, 1, 0, true, true, "llc" },
	{ "pebs-ldlat", REFCNT_HUB_PMU_PEBS, 1, REFCNT_HUB_PMU_LDLAT, false, true,
	  "llc" },
	{ "ibs", REFCNT_HUB_PMU_IBS, 16, 0, false, false, NULL },
};

/*
 * K loads on each of n pages, two at a time on one line, each pair a line
 * further into its page than the one before (64 lines a page), in a truth
 * window of its own when @window (dumped to the truth's FILE.N). The
 * second load of a pair hits the LLC model; the first misses in
 * hub-check's model of 16 KiB (16 sets of 16 ways), since each set gets
 * 32 of the 512 lines in turn, and LRU keeps 16.
 */
static void pmu_line_loads(char *p, int n, long k, bool window)
{
	long i, j;

	if (window)
		truth_start();
	for (i = 0; i < k / 2; i++)
		for (j = 0; j < n; j++) {
			long x, y;

			__asm__ volatile("mov (%2,%3), %0\n\tmov (%2,%3), %1"
					 : "=&r"(x), "=r"(y)
					 : "r"(p), "r"((j << 12) + (i % 64) * 64));
		}
	if (window)
		truth_dump();
}

/* What refcnt_pmu_sample() must make of the records of one round. */
struct pmu_expect {
	uint64_t samples, kernel, noaddr, cached, counted, misses;
	uint64_t page[EXACT_PAGES];
};

/* Tally the records [t0, t1) of this vCPU's ring as the PMU feed reads them. */
static void pmu_expect(const struct refcnt_hub_header *hdr,
		       const struct refcnt_hub_record *rec, uint64_t t0,
		       uint64_t t1, const char *p, bool memside,
		       struct pmu_expect *e)
{
	uint64_t h;

	memset(e, 0, sizeof(*e));
	for (h = t0; h < t1; h++) {
		const struct refcnt_hub_record *r =
			&rec[h & (hdr->ring_records - 1)];
		uint64_t off = r->vaddr - (uintptr_t)p;

		if (r->kind == REFCNT_HUB_REC_REF || !r->weight)
			continue;
		e->samples++;
		if (!(r->flags & REFCNT_HUB_F_USER)) {
			e->kernel++;
			continue;
		}
		if (!(r->flags & REFCNT_HUB_F_ADDR)) {
			e->noaddr++;
			continue;
		}
		if (memside && (r->kind == REFCNT_HUB_REC_STORE ||
				(r->flags & REFCNT_HUB_F_STORE) ||
				!(r->flags & REFCNT_HUB_F_MISS))) {
			e->cached++;
			continue;
		}
		e->counted++;
		if (off < EXACT_PAGES * rc_page_size()) {
			e->page[off / rc_page_size()] += r->weight;
			e->misses += !!(r->flags & REFCNT_HUB_F_MISS);
		}
	}
}

/*
 * The emulated PMU's samples through the PMU feed's own sample code
 * (refcnt_hub.ko's "hubpmu" feed calls refcnt_pmu_sample()): with the
 * hub's references off, K loads on each of 8 pages, then a drain of this
 * vCPU's ring. The records drained (from the ring's tail before to its
 * tail after) say exactly what must happen: each page's counter of this
 * node gains the weights of its user-mode samples with an address, and
 * every other counter nothing; kernel-mode samples and ops without an
 * address are counted apart (hubpmu_kernel, hubpmu_noaddr); with
 * pebs_memside only the loads that missed the LLC model count, the
 * others go to hubpmu_cached. At PEBS period 1 each page gets exactly K
 * (what the truth counts, pmu_stream); with LDLAT every sample is a
 * miss; IBS samples every 16th op, ops without an address among them.
 * The PEBS rounds print their pages' counts after a truth window of
 * their own: hub-check compares them with the truth's dump of it, every
 * reference (period 1) or the LLC model's misses (memside, LDLAT).
 */
TEST_F_TIMEOUT(hub, pmu_samples, 300)
{
	static const char *const stat[] = { "samples", "delivered",
		"unresolved", "kernel", "noaddr", "cached" };
	uint64_t before[EXACT_PAGES][RCB_MAX_COUNTERS];
	uint64_t after[EXACT_PAGES][RCB_MAX_COUNTERS], pa[EXACT_PAGES];
	uint64_t s0[6], s1[6], t0, t1, head;
	struct refcnt_hub_header *hdr;
	struct refcnt_hub_record *rec;
	struct refcnt_hub_ring *ring;
	struct pmu_expect e;
	unsigned char *base;
	unsigned int i, k, me;
	char name[32], *p;
	struct rc_dev d;
	int a, b, j;
	size_t size;

	HUB_NEEDED();
	base = hub_map(1, &size);
	ASSERT_NE(NULL, base);
	hdr = (void *)base;
	if (!(hdr->pmu_modes & (1u << REFCNT_HUB_PMU_PEBS)) ||
	    !(hdr->pmu_modes & (1u << REFCNT_HUB_PMU_IBS)))
		SKIP(return, "the device emulates no PMU");
	a = self->cpu.id[0];
	b = self->mem.id[0];
	pin_node(a);
	ASSERT_EQ(0, rcd_open(&d, b));
	me = rcd_counter(&d, rc_list_index(&self->cnodes, a));
	ring = own_ring(base, size);
	ASSERT_NE(NULL, ring);
	rec = (void *)((unsigned char *)ring + REFCNT_HUB_RING_CTRL);
	ASSERT_EQ(0, put(HUB_PARAM, "0"));

	for (i = 0; i < sizeof(pmu_rounds) / sizeof(pmu_rounds[0]); i++) {
		const struct pmu_round *pr = &pmu_rounds[i];

		if (pr->llc && !(hdr->flags & REFCNT_HUB_LLC)) {
			/* Plain refcnt-vm --hub: hub-check gives the model. */
			printf("hub-pmu: %s: not run, the device has no LLC model (refcnt-vm --truth-llc)\n",
			       pr->name);
			continue;
		}
		/*
		 * Pages of their own, made (and zeroed) with the PMU off and
		 * no window open: the zeroing does not reach the LLC model.
		 */
		p = node_pages(b, EXACT_PAGES);
		ASSERT_NE(NULL, p);
		for (j = 0; j < EXACT_PAGES; j++)
			pa[j] = paddr_of(p + j * rc_page_size());
		ASSERT_EQ(0, put("/sys/module/refcnt/parameters/pebs_memside",
				 pr->memside ? "1" : "0"));
		/*
		 * Nothing in the ring while the statistics and counters are
		 * read (at period 1 a read of a file is thousands of kernel
		 * loads): the plain references off, then the PMU on only
		 * around the loads, from the ring's tail t0 to t1.
		 */
		pmu_program(base, 0, REFCNT_HUB_PMU_OFF, 0, 0);
		/* What the ring held (the pages' zeroing, say) goes first. */
		ASSERT_EQ(0, hub_sync_cpu());
		for (j = 0; j < EXACT_PAGES; j++)
			ASSERT_EQ(0, set_counts(&d, pa[j], before[j]));
		for (k = 0; k < 6; k++) {
			snprintf(name, sizeof(name), "hubpmu_%s", stat[k]);
			s0[k] = rc_feed_stat(name);
		}
		ASSERT_EQ(0, hub_sync_cpu());
		t0 = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
		ASSERT_EQ(pr->period, pmu_program(base, 0, pr->mode, pr->period,
						  pr->flags));
		pmu_line_loads(p, EXACT_PAGES, EXACT_K, pr->truth);
		pmu_program(base, 0, REFCNT_HUB_PMU_OFF, 0, 0);
		/* hub-check compares the pages below with this window's dump. */
		if (pr->truth)
			printf("hub-pmu-truth: round %s table %s\n", pr->name,
			       pr->truth);
		head = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
		ASSERT_EQ(0, hub_sync_cpu());
		t1 = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
		for (k = 0; k < 6; k++) {
			snprintf(name, sizeof(name), "hubpmu_%s", stat[k]);
			s1[k] = rc_feed_stat(name) - s0[k];
		}
		/* The records drained are all still in the ring. */
		ASSERT_GE((uint64_t)hdr->ring_records, head - t0)
			TH_LOG("%s: the ring went round: %llu records", pr->name,
			       (unsigned long long)(head - t0));
		ASSERT_EQ(head, t1) TH_LOG("%s: records after the PMU stopped",
					   pr->name);
		pmu_expect(hdr, rec, t0, t1, p, pr->memside, &e);
		printf("hub-pmu: %s: %llu samples, %llu kernel, %llu noaddr, %llu cached, %llu counted (%llu misses on the pages); feed: %llu delivered, %llu unresolved\n",
		       pr->name, (unsigned long long)e.samples,
		       (unsigned long long)e.kernel, (unsigned long long)e.noaddr,
		       (unsigned long long)e.cached, (unsigned long long)e.counted,
		       (unsigned long long)e.misses, (unsigned long long)s1[1],
		       (unsigned long long)s1[2]);
		EXPECT_EQ(e.samples, s1[0]) TH_LOG("%s", pr->name);
		EXPECT_EQ(e.counted, s1[1] + s1[2]) TH_LOG("%s", pr->name);
		EXPECT_EQ(e.kernel, s1[3]) TH_LOG("%s", pr->name);
		EXPECT_EQ(e.noaddr, s1[4]) TH_LOG("%s", pr->name);
		EXPECT_EQ(e.cached, s1[5]) TH_LOG("%s", pr->name);
		for (j = 0; j < EXACT_PAGES; j++) {
			ASSERT_EQ(0, set_counts(&d, pa[j], after[j]));
			if (pr->truth)
				printf("hub-pmu-truth: page 0x%llx from %d nodes_per_counter %u counters",
				       (unsigned long long)(pa[j] & ~(rc_page_size() - 1)),
				       a, d.npc);
			for (k = 0; k < d.cps; k++) {
				EXPECT_EQ(k == me ? e.page[j] : 0,
					  after[j][k] - before[j][k])
					TH_LOG("%s: page %d counter %u", pr->name, j, k);
				if (pr->truth)
					printf(" %llu", (unsigned long long)
					       (after[j][k] - before[j][k]));
			}
			if (pr->truth)
				printf("\n");
		}
		if (!strcmp(pr->name, "pebs-all")) {
			/* Period 1: every user load, K a page, as the truth. */
			for (j = 0; j < EXACT_PAGES; j++)
				EXPECT_EQ((uint64_t)EXACT_K, e.page[j]) TH_LOG("page %d", j);
		} else if (strcmp(pr->name, "ibs")) {
			/*
			 * Memory-side or latency-filtered: only the loads
			 * that missed the LLC model count (weight 1 each);
			 * the pages stay in it, so the hits go to cached.
			 */
			EXPECT_EQ(e.misses, e.page[0] + e.page[1] + e.page[2] +
				  e.page[3] + e.page[4] + e.page[5] + e.page[6] +
				  e.page[7]) TH_LOG("%s", pr->name);
			/*
			 * The first load of a pair misses, nearly always: a
			 * round's pages may be the last round's, freed, and
			 * the first pass over them finds some lines still
			 * in the model. At least K/4 a page: the rounds are
			 * not void. The exact figure is the truth's, which
			 * hub-check compares.
			 */
			EXPECT_LE((uint64_t)EXACT_PAGES * EXACT_K / 4, e.misses)
				TH_LOG("%s", pr->name);
			if (pr->memside)
				EXPECT_LT(0ULL, (unsigned long long)e.cached);
		} else {
			EXPECT_LT(0ULL, (unsigned long long)e.noaddr);
		}
		munmap(p, EXACT_PAGES * rc_page_size());
	}
	pmu_program(base, 1, REFCNT_HUB_PMU_OFF, 0, 0);
	ASSERT_EQ(0, put("/sys/module/refcnt/parameters/pebs_memside", "0"));
	ASSERT_EQ(0, put(HUB_PARAM, "1"));
	rcd_close(&d);
	munmap(base, size);
}

/* A child pinned where we are, blocked until @go says; NULL: forever. */
static pid_t pmu_child(int go, int done, char *q, int n, long k)
{
	pid_t pid = fork();
	char c;

	if (pid)
		return pid;
	if (read(go, &c, 1) == 1 && q) {
		pmu_loads(q, n, k);
		if (write(done, "d", 1) != 1)
			_exit(1);
	}
	_exit(0);
}

static int rc_count_stats(int sfd, struct rcb_count_stats *st)
{
	memset(st, 0, sizeof(*st));
	return ioctl(sfd, RCB_COUNT_STATS, st) ? -errno : 0;
}

/* RCB_COUNT_START on the emulated PMU: the session's fd, or -errno. */
static int pmu_count(struct rc_dev *d, pid_t pid, const struct rcb_count_range *r,
		     uint32_t nr)
{
	struct rcb_count c = {
		.pid = pid, .pebs_period = 1, .ranges = (uintptr_t)r,
		.nr_ranges = nr,
	};
	int ret = ioctl(d->fd, RCB_COUNT_START, &c);

	return ret < 0 ? -errno : ret;
}

/*
 * Counting sessions on the emulated PMU (refcnt_hub.ko's "refcnt_hub"
 * perf PMU, which refcnt.ko gives a session's pebs_period in a guest):
 * the PEBS-like stream at period 1, user loads only, with a session on
 * this process restricted to the first half of 8 pages (and to 2 pages a
 * child loads meanwhile, on this CPU), and a session on a process that
 * sleeps. This process's K loads on each page count exactly K on each
 * page of the range, from this node's counter (hub-check compares them
 * with the truth's window), and nothing on the other half; the child's
 * loads, outside this process, count nowhere though in the range (the
 * PMU is the sessions': no machine-wide delivery); the sleeping
 * process's session takes no sample.
 */
TEST_F_TIMEOUT(hub, pmu_session, 300)
{
	uint64_t before[EXACT_PAGES + 2][RCB_MAX_COUNTERS];
	uint64_t after[EXACT_PAGES + 2][RCB_MAX_COUNTERS];
	uint64_t pa[EXACT_PAGES + 2];
	struct rcb_count_range r[2];
	struct rcb_count_stats st, st2;
	uint64_t t0, head, h, mine = 0, theirs = 0, nobody = 0, other = 0;
	struct refcnt_hub_header *hdr;
	struct refcnt_hub_record *rec;
	struct refcnt_hub_ring *ring;
	int go[2], done[2], idle[2];
	int a, b, j, s1, s2;
	pid_t noisy, sleeper;
	unsigned char *base;
	unsigned int k, me;
	struct rc_dev d;
	char *p, *q, c;
	size_t size;

	HUB_NEEDED();
	base = hub_map(1, &size);
	ASSERT_NE(NULL, base);
	hdr = (void *)base;
	if (!(hdr->pmu_modes & (1u << REFCNT_HUB_PMU_PEBS)))
		SKIP(return, "the device emulates no PMU");
	a = self->cpu.id[0];
	b = self->mem.id[0];
	pin_node(a);
	ASSERT_EQ(0, rcd_open(&d, b));
	me = rcd_counter(&d, rc_list_index(&self->cnodes, a));
	p = node_pages(b, EXACT_PAGES);
	q = node_pages(b, 2);
	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, q);
	for (j = 0; j < EXACT_PAGES + 2; j++)
		pa[j] = paddr_of(j < EXACT_PAGES ? p + j * rc_page_size() :
				 q + (j - EXACT_PAGES) * rc_page_size());
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	ASSERT_EQ(0, pipe(idle));
	noisy = pmu_child(go[0], done[1], q, 2, EXACT_K);
	sleeper = pmu_child(idle[0], -1, NULL, 0, 0);
	ASSERT_LT(0, noisy);
	ASSERT_LT(0, sleeper);
	ASSERT_EQ(0, put(HUB_PARAM, "0"));
	ASSERT_EQ(0, put("/sys/module/refcnt/parameters/pebs_memside", "0"));
	pmu_program(base, 0, REFCNT_HUB_PMU_OFF, 0, 0);

	r[0] = (struct rcb_count_range){ (uintptr_t)p, EXACT_PAGES / 2 * rc_page_size() };
	r[1] = (struct rcb_count_range){ (uintptr_t)q, 2 * rc_page_size() };
	s1 = pmu_count(&d, 0, r, 2);
	ASSERT_LE(0, s1) TH_LOG("RCB_COUNT_START on the emulated PMU: %s",
				strerror(-s1));
	s2 = pmu_count(&d, sleeper, NULL, 0);
	ASSERT_LE(0, s2);
	ASSERT_EQ(0, hub_sync_cpu());
	for (j = 0; j < EXACT_PAGES + 2; j++)
		ASSERT_EQ(0, set_counts(&d, pa[j], before[j]));
	ASSERT_EQ(0, hub_sync_cpu());
	ring = own_ring(base, size);
	ASSERT_NE(NULL, ring);
	rec = (void *)((unsigned char *)ring + REFCNT_HUB_RING_CTRL);
	t0 = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
	ASSERT_EQ(1U, pmu_program(base, 0, REFCNT_HUB_PMU_PEBS, 1,
				  REFCNT_HUB_PMU_EXCLUDE_KERNEL));
	ASSERT_EQ(1, write(go[1], "g", 1));
	pmu_line_loads(p, EXACT_PAGES, EXACT_K, true);
	/* Blocked here, the child finishes its loads on this CPU. */
	ASSERT_EQ(1, read(done[0], &c, 1));
	pmu_program(base, 0, REFCNT_HUB_PMU_OFF, 0, 0);
	printf("hub-pmu-truth: round session table all\n");
	head = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
	ASSERT_EQ(0, hub_sync_cpu());
	/* Whose the samples are, as the device stamped them. */
	ASSERT_GE((uint64_t)hdr->ring_records, head - t0);
	for (h = t0; h < head; h++) {
		const struct refcnt_hub_record *rr =
			&rec[h & (hdr->ring_records - 1)];

		if (rr->kind == REFCNT_HUB_REC_REF)
			continue;
		if (rr->pid == (uint32_t)getpid())
			mine++;
		else if (rr->pid == (uint32_t)noisy)
			theirs++;
		else if (!rr->pid)
			nobody++;
		else
			other++;
	}
	printf("hub-pmu: session: stamped samples: %llu ours, %llu the child's, %llu nobody's, %llu others\n",
	       (unsigned long long)mine, (unsigned long long)theirs,
	       (unsigned long long)nobody, (unsigned long long)other);
	/* The child has no session: its samples are stamped nobody's. */
	EXPECT_EQ(0ULL, (unsigned long long)theirs);
	EXPECT_LE((uint64_t)EXACT_PAGES * EXACT_K, mine);
	EXPECT_LE((uint64_t)2 * EXACT_K, nobody);
	ASSERT_EQ(0, rc_count_stats(s1, &st));
	ASSERT_EQ(0, rc_count_stats(s2, &st2));
	printf("hub-pmu: session: %llu samples, %llu delivered, %llu unresolved, %llu outside; the sleeping process's: %llu samples\n",
	       (unsigned long long)st.samples, (unsigned long long)st.delivered,
	       (unsigned long long)st.unresolved, (unsigned long long)st.outside,
	       (unsigned long long)st2.samples);
	for (j = 0; j < EXACT_PAGES + 2; j++) {
		bool in = j < EXACT_PAGES / 2;

		ASSERT_EQ(0, set_counts(&d, pa[j], after[j]));
		if (in)
			printf("hub-pmu-truth: page 0x%llx from %d nodes_per_counter %u counters",
			       (unsigned long long)(pa[j] & ~(rc_page_size() - 1)),
			       a, d.npc);
		for (k = 0; k < d.cps; k++) {
			EXPECT_EQ(in && k == me ? (uint64_t)EXACT_K : 0,
				  after[j][k] - before[j][k])
				TH_LOG("page %d counter %u", j, k);
			if (in)
				printf(" %llu", (unsigned long long)
				       (after[j][k] - before[j][k]));
		}
		if (in)
			printf("\n");
	}
	EXPECT_EQ((uint64_t)EXACT_PAGES / 2 * EXACT_K, st.delivered);
	EXPECT_EQ(0ULL, (unsigned long long)st.unresolved);
	EXPECT_EQ(st.samples, st.delivered + st.outside);
	/* The other half of the pages, at least: outside the ranges. */
	EXPECT_LE((uint64_t)EXACT_PAGES / 2 * EXACT_K, st.outside);
	EXPECT_EQ(0ULL, (unsigned long long)st2.samples);
	close(s1);
	close(s2);
	kill(sleeper, SIGKILL);
	waitpid(noisy, NULL, 0);
	waitpid(sleeper, NULL, 0);
	ASSERT_EQ(0, put(HUB_PARAM, "1"));
	munmap(p, EXACT_PAGES * rc_page_size());
	munmap(q, 2 * rc_page_size());
	rcd_close(&d);
	munmap(base, size);
}

/* With 256-byte hardware pages: every touched piece counted, no other. */
TEST_F_TIMEOUT(hub, granularity_256, 300)
{
	uint64_t before[16][RCB_MAX_COUNTERS], after[16][RCB_MAX_COUNTERS];
	struct rc_dev d;
	int a = self->cpu.id[0], k, c, ca;
	char *p;

	HUB_NEEDED();
	if (!rc_ko_path() || !getenv("REFCNT_HUB_KO"))
		SKIP(return, "no REFCNT_KO and REFCNT_HUB_KO to reload with granularity=256");
	ASSERT_EQ(0, hub_reload("granularity=256", false));
	pin_node(a);
	p = node_pages(self->mem.id[0], 1);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, rcd_open(&d, self->mem.id[0]));
	ASSERT_EQ(256U, d.info.rcb_granularity);
	ca = rcd_counter(&d, rc_list_index(&self->cnodes, a));
	ASSERT_EQ(0, hub_sync_cpu());
	for (k = 0; k < 16; k++)
		ASSERT_EQ(0, set_counts(&d, paddr_of(p + k * 256), before[k]));
	ASSERT_EQ(0, hub_sync_cpu());
	/* One byte in every other 256-byte piece: structures of one byte. */
	for (k = 0; k < 16; k += 2)
		((volatile char *)p)[k * 256 + 17] = 1;
	ASSERT_EQ(0, hub_sync_cpu());
	for (k = 0; k < 16; k++) {
		ASSERT_EQ(0, set_counts(&d, paddr_of(p + k * 256), after[k]));
		for (c = 0; c < (int)d.cps; c++) {
			uint64_t delta = after[k][c] - before[k][c];

			uint64_t want = c == ca && !(k % 2);

			EXPECT_EQ(want, delta);
		}
	}
	rcd_close(&d);
	munmap(p, rc_page_size());
	ASSERT_EQ(0, hub_reload("", true));
}

/*
 * Load and unload 20 times (or HUB_RELOADS) while the device streams;
 * each load drains. The first records count once the drain's first pass
 * is done, which takes a ring's backlog (the references made while the
 * driver was out): up to 10 s under TCG on a loaded host.
 */
TEST_F_TIMEOUT(hub, reload_streaming, 600)
{
	const char *env = getenv("HUB_RELOADS");
	int i, k, n = env ? atoi(env) : 20;

	HUB_NEEDED();
	if (!rc_ko_path() || !getenv("REFCNT_HUB_KO"))
		SKIP(return, "no REFCNT_KO and REFCNT_HUB_KO to reload");
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, hub_reload("", true));
		for (k = 0; k < 100 && !rc_feed_stat("hub_samples"); k++)
			usleep(100000);
		ASSERT_TRUE(hub_bound(NULL, 0));
		EXPECT_LT(0ULL, (unsigned long long)rc_feed_stat("hub_samples"));
	}
}

/* Unbound: the feed is off and refused, once in dmesg; bound again: on. */
TEST_F_TIMEOUT(hub, unbind_rebind, 120)
{
	char addr[64], buf[16];
	int lines;

	HUB_NEEDED();

	ASSERT_TRUE(hub_bound(addr, sizeof(addr)));
	ASSERT_EQ(0, put(HUB_DRV "/unbind", addr));
	EXPECT_FALSE(hub_bound(NULL, 0));
	ASSERT_LT(0, rc_read_file(HUB_PARAM, buf, sizeof(buf)));
	EXPECT_STREQ("0", buf);
	lines = rc_dmesg_count("hub feed: no hub device");
	EXPECT_EQ(-ENODEV, put(HUB_PARAM, "1"));
	EXPECT_EQ(lines + 1, rc_dmesg_count("hub feed: no hub device"));
	EXPECT_EQ(-ENODEV, put(RC_FEEDDIR "/hub_sync", "1"));
	ASSERT_EQ(0, put(HUB_DRV "/bind", addr));
	ASSERT_TRUE(hub_bound(NULL, 0));
	EXPECT_EQ(0, put(HUB_PARAM, "1"));
	EXPECT_EQ(0, hub_sync());
}

/* Another ivshmem device (refcnt-vm --qemu-arg): not ours, left alone. */
TEST_F_TIMEOUT(hub, foreign_left_alone, 60)
{
	char path[300], buf[32], link[300];
	struct dirent *e;
	int ivshmem = 0, ours = 0, unbound = 0;
	DIR *d = opendir("/sys/bus/pci/devices");

	HUB_NEEDED();

	ASSERT_NE(NULL, d);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/device", e->d_name);
		if (rc_read_file(path, buf, sizeof(buf)) <= 0 || strcmp(buf, "0x1110"))
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", e->d_name);
		if (rc_read_file(path, buf, sizeof(buf)) <= 0 || strcmp(buf, "0x1af4"))
			continue;
		ivshmem++;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", e->d_name);
		memset(link, 0, sizeof(link));
		if (readlink(path, link, sizeof(link) - 1) < 0)
			unbound++;
		else if (strstr(link, "refcnt-hub"))
			ours++;
	}
	closedir(d);
	if (ivshmem < 2)
		SKIP(return, "no foreign ivshmem device in this guest");
	EXPECT_EQ(1, ours);
	EXPECT_EQ(ivshmem - 1, unbound);
}

/*
 * The host writes garbage into the region (tools/testing/hub-check,
 * between the two lines printed here) while the feed drains: no crash,
 * and the bad indices and addresses are counted.
 */
TEST_F_TIMEOUT(hub, host_garbage, 300)
{
	uint64_t m0 = rc_feed_stat("hub_malformed");
	uint64_t u0 = rc_feed_stat("hub_unresolved");
	int i;

	HUB_NEEDED();
	if (!getenv("HUB_GARBLE"))
		SKIP(return, "no host writing garbage (HUB_GARBLE unset)");
	printf("@@hub-garble-start\n");
	fflush(stdout);
	for (i = 0; i < 600; i++) {
		if (rc_feed_stat("hub_malformed") > m0 &&
		    rc_feed_stat("hub_unresolved") > u0)
			break;
		usleep(100000);
	}
	usleep(500000);
	printf("@@hub-garble-stop\n");
	fflush(stdout);
	printf("hub-garbage: %llu malformed, %llu unresolved\n",
	       (unsigned long long)(rc_feed_stat("hub_malformed") - m0),
	       (unsigned long long)(rc_feed_stat("hub_unresolved") - u0));
	EXPECT_LT(m0, rc_feed_stat("hub_malformed"));
	EXPECT_LT(u0, rc_feed_stat("hub_unresolved"));
}

RC_HARNESS_MAIN
