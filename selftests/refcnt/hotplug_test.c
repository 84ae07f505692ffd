// SPDX-License-Identifier: GPL-2.0
/*
 * CPU hotplug and the feeds: the fault feed follows CPUs going
 * offline and coming online. /sys/kernel/refcnt/fault_cpus, the CPUs the
 * feed has events on, must equal the online CPUs while the feed is on
 * (so an offline CPU keeps nothing) and be empty while it is off; a CPU
 * onlined after the feed started is sampled: every fault this process
 * takes pinned to it is a sample (fault_period=1). Unloading and loading
 * the module while a CPU goes on- and offline is safe and leaves the feed
 * on exactly the online CPUs.
 *
 * Memory hotplug is followed (Documentation/admin-guide.rst): a memory
 * block of a node taken offline and back online RC_MEM_CYCLES times
 * ($REFCNT_HOTPLUG_MEM_CYCLES overrides: make check runs fewer) while
 * references are injected into it and elsewhere, the fault feed runs and
 * a reader maps the node's table (a mapping made before the first change)
 * changes the layout twice a cycle (rcb_generation), ends with the sets
 * of the start, and keeps the books exact counting what was dropped with
 * the memory (offlined). A layout whose generation the test module set
 * past 2^32 says so in RCB_INFO_GET, and its RCB_EVENT_LAYOUT record, read
 * sized, tells the next generation in full. A node with memory blocks but none online at
 * load (refcnt-vm --dimm into the 'cxl' topology's empty node) gets its
 * device when they come online, counts its references exactly, and loses
 * the device when they go; a file open meanwhile stays safe on its
 * frozen layout. A layout change failing at any of its allocations
 * (fail-nth, the debug kernel's fault injection) leaves no file on a
 * layout the slot index never published. Unloading while memory comes
 * and goes is safe. A node new since the load (refcnt-vm --hotplug-mem
 * plugs a dimm into a node that was offline) gets a device without a
 * cnodeid and counts exactly.
 *
 * Needs a CPU besides CPU 0 that can go offline (every make check
 * topology has 2 or more CPUs), a memory block that can (an idle node's
 * movable pages migrate) and, for the cxl fixture, a node whose memory is
 * all offline at load; SKIPs without, and without fault injection.
 */
#include <poll.h>
#include <pthread.h>
#include <linux/refcnt_test.h>
#include <linux/userfaultfd.h>
#include <refcnt/refcnt.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "refcnt_helpers.h"
#include "refcnt_counters.h"
#include "harness_filter.h"

#define SYSCPU		"/sys/devices/system/cpu"
#define RC_FAULTS	512U
#define RC_CYCLES	20
#define RC_MEM_CYCLES	100
#ifndef MADV_NOHUGEPAGE
#define MADV_NOHUGEPAGE	15
#endif

static int set_period(unsigned long period)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lu\n", period);
	return rc_write_file(RC_PARAMDIR "/fault_period", buf);
}

/* A sysfs file's first line, without its newline. */
static void read_line(const char *path, char *buf, size_t size)
{
	buf[0] = '\0';
	if (rc_read_file(path, buf, size) < 0)
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

static int cpu_online(int cpu, bool on)
{
	char path[96];

	snprintf(path, sizeof(path), SYSCPU "/cpu%d/online", cpu);
	return rc_write_file(path, on ? "1\n" : "0\n");
}

/* The last CPU above 0 that can go offline, or -1. */
static int hotpluggable_cpu(void)
{
	char path[96];
	int cpu, last = -1;

	for (cpu = 1; cpu < 4096; cpu++) {
		snprintf(path, sizeof(path), SYSCPU "/cpu%d", cpu);
		if (!rc_exists(path))
			break;
		snprintf(path, sizeof(path), SYSCPU "/cpu%d/online", cpu);
		if (!access(path, W_OK))
			last = cpu;
	}
	return last;
}

/*
 * Take RC_FAULTS fresh minor faults pinned to @cpu: the feed's samples
 * must grow by at least as many (fault_period=1; the guest is quiet, so
 * without events on @cpu they would hardly grow).
 */
static int faults_sampled_on(int cpu, uint64_t *faults, uint64_t *samples)
{
	size_t len = RC_FAULTS * rc_page_size(), i;
	struct rusage r0, r1;
	uint64_t s0;
	cpu_set_t set;
	char *p;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -errno;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	/* One fault per page: no THP (6.8+ aligns 2M mappings for it). */
	madvise(p, len, MADV_NOHUGEPAGE);
	/*
	 * Touched here, in user mode: a first touch by getrusage()'s copy
	 * to user would be a fault rusage counts and the feed, which
	 * excludes the kernel, does not sample.
	 */
	memset(&r0, 0, sizeof(r0));
	memset(&r1, 0, sizeof(r1));
	s0 = rc_feed_stat("fault_samples");
	getrusage(RUSAGE_SELF, &r0);
	for (i = 0; i < len; i += rc_page_size())
		p[i] = 1;
	getrusage(RUSAGE_SELF, &r1);
	*samples = rc_feed_stat("fault_samples") - s0;
	*faults = r1.ru_minflt - r0.ru_minflt;
	munmap(p, len);
	CPU_ZERO(&set);
	for (i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	sched_setaffinity(0, sizeof(set), &set);
	return 0;
}

FIXTURE(cpus) {
	int cpu;
	unsigned long period0;
	struct rc_knob numa_balancing;
};

FIXTURE_SETUP(cpus)
{
	ASSERT_EQ(0, rc_restore_default());
	self->cpu = hotpluggable_cpu();
	if (self->cpu < 0)
		RC_SETUP_SKIP("no CPU besides CPU 0 can go offline");
	ASSERT_EQ(0, rc_read_ulong_param("fault_period", &self->period0));
	ASSERT_EQ(0, set_period(1));
	/*
	 * A NUMA hinting fault on getrusage()'s own buffer is a minor fault
	 * taken in kernel mode, which rusage counts and the feed does not.
	 */
	rc_knob_set(&self->numa_balancing, "/proc/sys/kernel/numa_balancing", "0");
}

FIXTURE_TEARDOWN(cpus)
{
	rc_knob_restore(&self->numa_balancing);
	if (self->cpu < 0)
		return;
	cpu_online(self->cpu, true);
	if (rc_module_loaded())
		set_period(self->period0);
	else
		rc_load("");
}

/*
 * fault_cpus is the online CPUs: the feed follows them. It does so from a
 * work item queued by the CPU hotplug callback, so allow it a moment (a
 * debug kernel under TCG takes seconds) before comparing.
 */
static void expect_follows(struct __test_metadata *_metadata)
{
	char online[256], cpus[256];
	int tries;

	for (tries = 0; tries < 200; tries++) {
		read_line(SYSCPU "/online", online, sizeof(online));
		read_line(RC_FEEDDIR "/fault_cpus", cpus, sizeof(cpus));
		if (!strcmp(online, cpus))
			break;
		usleep(50 * 1000);
	}
	EXPECT_STREQ(online, cpus);
}

TEST_F(cpus, offline_leaves_nothing_online_is_sampled)
{
	uint64_t faults, samples;
	struct rc_nodes online;
	char list[256];
	int i;

	expect_follows(_metadata);
	ASSERT_EQ(0, cpu_online(self->cpu, false));
	expect_follows(_metadata);

	/* The CPUs still online keep sampling. */
	read_line(SYSCPU "/online", list, sizeof(list));
	ASSERT_EQ(0, rc_parse_list(list, &online));
	for (i = 0; i < online.n; i++) {
		ASSERT_NE(self->cpu, online.id[i]);
		ASSERT_EQ(0, faults_sampled_on(online.id[i], &faults, &samples));
		EXPECT_GE(faults, RC_FAULTS);
		EXPECT_GE(samples, faults) TH_LOG("cpu %d", online.id[i]);
	}

	/* Back online after the feed started: sampled too. */
	ASSERT_EQ(0, cpu_online(self->cpu, true));
	expect_follows(_metadata);
	ASSERT_EQ(0, faults_sampled_on(self->cpu, &faults, &samples));
	EXPECT_GE(faults, RC_FAULTS);
	EXPECT_GE(samples, faults) TH_LOG("cpu %d after onlining", self->cpu);
}

TEST_F(cpus, feed_restarted_while_offline)
{
	char cpus[256];

	ASSERT_EQ(0, cpu_online(self->cpu, false));
	ASSERT_EQ(0, set_period(0));
	read_line(RC_FEEDDIR "/fault_cpus", cpus, sizeof(cpus));
	EXPECT_STREQ("", cpus);
	ASSERT_EQ(0, set_period(2));
	expect_follows(_metadata);
	ASSERT_EQ(0, cpu_online(self->cpu, true));
	expect_follows(_metadata);

	/* Off: a CPU coming online gets no events. */
	ASSERT_EQ(0, set_period(0));
	ASSERT_EQ(0, cpu_online(self->cpu, false));
	ASSERT_EQ(0, cpu_online(self->cpu, true));
	read_line(RC_FEEDDIR "/fault_cpus", cpus, sizeof(cpus));
	EXPECT_STREQ("", cpus);
}

TEST_F(cpus, cycles_keep_counting)
{
	uint64_t faults, samples;
	int i;

	for (i = 0; i < RC_CYCLES; i++) {
		ASSERT_EQ(0, cpu_online(self->cpu, false));
		ASSERT_EQ(0, cpu_online(self->cpu, true));
	}
	expect_follows(_metadata);
	ASSERT_EQ(0, faults_sampled_on(self->cpu, &faults, &samples));
	EXPECT_GE(samples, faults);
	/* Quiet feed: every sample was delivered or unresolved. */
	ASSERT_EQ(0, set_period(0));
	EXPECT_EQ(rc_feed_stat("fault_samples"),
		  rc_feed_stat("fault_delivered") + rc_feed_stat("fault_unresolved"));
}

static volatile bool toggling;

static void *toggler(void *arg)
{
	int cpu = (int)(long)arg;

	while (toggling) {
		cpu_online(cpu, false);
		cpu_online(cpu, true);
	}
	return NULL;
}

/* Unload and load while a CPU goes on- and offline: both stay safe. */
TEST_F(cpus, unload_during_hotplug)
{
	pthread_t t;
	int i;

	toggling = true;
	ASSERT_EQ(0, pthread_create(&t, NULL, toggler, (void *)(long)self->cpu));
	for (i = 0; i < 5; i++) {
		EXPECT_EQ(0, rc_unload_retry());
		EXPECT_EQ(0, rc_load("fault_period=1"));
	}
	toggling = false;
	pthread_join(t, NULL);
	ASSERT_EQ(0, cpu_online(self->cpu, true));
	expect_follows(_metadata);
	ASSERT_EQ(0, rc_unload_retry());
	ASSERT_EQ(0, rc_load(""));
}

/* ---------------------------------------------------------- memory */

static volatile bool mem_stop;

struct mem_ctx {
	struct rc_dev *d;
	uint64_t block_size;
	int block;		/* a block of the node that can go offline */
	int cycles;		/* offline/online cycles done */
	int err;
};

static int block_online(int block, bool on)
{
	char path[96];

	snprintf(path, sizeof(path), RC_SYSMEM "/memory%d/online", block);
	return rc_write_file(path, on ? "1\n" : "0\n");
}

static bool block_is_online(int block)
{
	char path[96], buf[32];

	snprintf(path, sizeof(path), RC_SYSMEM "/memory%d/online", block);
	read_line(path, buf, sizeof(buf));
	return !strcmp(buf, "1");
}

/* A block of @nid online now that goes offline (and is put back), or -1. */
static int offlinable_block(int nid)
{
	char path[128];
	struct dirent *e;
	int block = -1;
	DIR *dir;

	snprintf(path, sizeof(path), RC_SYSNODE "/node%d", nid);
	dir = opendir(path);
	if (!dir)
		return -1;
	while (block < 0 && (e = readdir(dir))) {
		int b;

		if (sscanf(e->d_name, "memory%d", &b) != 1 || !block_is_online(b))
			continue;
		if (!block_online(b, false) && !block_online(b, true))
			block = b;
	}
	closedir(dir);
	return block;
}

/* The memory cycles to run: RC_MEM_CYCLES unless the environment says. */
static int mem_cycles(void)
{
	const char *env = getenv("REFCNT_HOTPLUG_MEM_CYCLES");

	return env && atoi(env) > 0 ? atoi(env) : RC_MEM_CYCLES;
}

static void *mem_cycler(void *arg)
{
	struct mem_ctx *m = arg;
	int n = mem_cycles();

	for (m->cycles = 0; m->cycles < n; m->cycles++) {
		m->err = block_online(m->block, false);
		if (!m->err)
			m->err = block_online(m->block, true);
		if (m->err)
			break;
	}
	mem_stop = true;
	return NULL;
}

/* Faults pages, wherever they land, for the fault feed. */
static void *mem_faulter(void *arg)
{
	size_t len = 64 * rc_page_size(), i;

	while (!mem_stop) {
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			continue;
		for (i = 0; i < len; i += rc_page_size())
			p[i] = 1;
		munmap(p, len);
	}
	return arg;
}

/* Maps the node's table and reads it, as a user of it would. */
static void *mem_mapper(void *arg)
{
	struct mem_ctx *m = arg;
	uint64_t sink = 0, i;

	while (!mem_stop) {
		volatile uint32_t *t = mmap(NULL, m->d->info.rcb_len, PROT_READ,
					    MAP_SHARED, m->d->fd, 0);

		if (t == MAP_FAILED) {
			m->err = -errno;
			break;
		}
		for (i = 0; i < m->d->info.rcb_len / 4; i += 1024)
			sink += t[i];
		munmap((void *)t, m->d->info.rcb_len);
	}
	return (void *)(uintptr_t)sink;
}

static uint64_t table_sum(struct rc_dev *d)
{
	uint32_t hw[RCB_MAX_COUNTERS * 256], ext[RCB_MAX_COUNTERS * 256];
	uint32_t lost[RCB_MAX_COUNTERS * 256];
	uint64_t first, nr, i, s = 0;

	for (first = 0; first < d->info.rcb_sw_sets; first += nr) {
		nr = d->info.rcb_sw_sets - first;
		if (nr > 256)
			nr = 256;
		if (rc_read_sets(d->fd, first, nr, hw, ext, lost))
			return UINT64_MAX;
		for (i = 0; i < nr * d->cps; i++)
			s += (uint64_t)hw[i] + ext[i] + lost[i];
	}
	return s;
}

FIXTURE(mem) {
	struct rc_dev d;
	struct mem_ctx m;
	unsigned long period0;
	uint64_t dropped0;	/* refs_dropped at setup: earlier tests drop some */
	bool opened;
};

FIXTURE_SETUP(mem)
{
	struct rc_stats st;
	struct rc_nodes mem;
	char buf[64];
	int i, nid;

	ASSERT_EQ(0, rc_restore_default());
	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	/* The last node with a block that can go offline; node 0 last. */
	self->m.block = -1;
	for (i = mem.n - 1; i >= 0 && self->m.block < 0; i--)
		self->m.block = offlinable_block(mem.id[i]);
	if (self->m.block < 0)
		RC_SETUP_SKIP("no memory block can go offline");
	nid = mem.id[i + 1];
	ASSERT_GE(rc_read_file(RC_SYSMEM "/block_size_bytes", buf,
			       sizeof(buf)), 0);
	self->m.block_size = strtoull(buf, NULL, 16);
	ASSERT_EQ(0, rcd_open_clean(&self->d, nid));
	self->opened = true;
	self->m.d = &self->d;
	ASSERT_EQ(0, rc_stats_read(nid, &st));
	self->dropped0 = st.refs_dropped;
	ASSERT_EQ(0, rc_read_ulong_param("fault_period", &self->period0));
	ASSERT_EQ(0, set_period(1));
}

FIXTURE_TEARDOWN(mem)
{
	if (self->m.block >= 0)
		block_online(self->m.block, true);
	if (self->opened) {
		struct rc_dev now;
		int nid = self->d.nid;

		set_period(self->period0);
		/* Its layout was retired: clean the node's current one. */
		rcd_close(&self->d);
		if (!rcd_open(&now, nid))
			rcd_close_clean(&now);
	}
}

TEST_F_TIMEOUT(mem, offline_online_cycles_conserve, 600)
{
	uint64_t base = self->m.block * self->m.block_size, injected = 0;
	uint64_t r = 17, sum, sets0 = self->d.info.rcb_sw_sets, refused = 0;
	uint64_t gen0 = self->d.info.rcb_generation, t0 = rc_now_ns();
	pthread_t cyc, flt, map;
	struct rcb_sets_fold fold = { .nr_sets = 1 };
	struct rc_stats st;
	struct rcb_ref refs[16];
	struct rc_dev now;
	int i, ret;

	mem_stop = false;
	ASSERT_EQ(0, pthread_create(&flt, NULL, mem_faulter, NULL));
	ASSERT_EQ(0, pthread_create(&map, NULL, mem_mapper, &self->m));
	ASSERT_EQ(0, pthread_create(&cyc, NULL, mem_cycler, &self->m));
	while (!mem_stop) {
		/* Half into the block going on- and offline, half anywhere. */
		for (i = 0; i < 16; i++) {
			refs[i].paddr = i & 1 ?
				base + rc_rand(&r) % self->m.block_size :
				rcd_set_paddr(&self->d, rc_rand(&r) %
					      self->d.info.rcb_sw_sets);
			refs[i].src_cnodeid = rc_rand(&r) %
					      self->d.info.rcb_num_cnodes;
			refs[i].count = 1 + rc_rand(&r) % 100;
		}
		/* The block is offline now and then: the batch is refused. */
		ret = rc_inject(self->d.fd, refs, 16, 0);
		if (ret == -EINVAL) {
			refused++;
			continue;
		}
		ASSERT_EQ(0, ret);
		for (i = 0; i < 16; i++)
			injected += refs[i].count;
	}
	pthread_join(cyc, NULL);
	pthread_join(flt, NULL);
	pthread_join(map, NULL);
	ASSERT_EQ(0, self->m.err) TH_LOG("after %d cycles", self->m.cycles);
	ASSERT_EQ(mem_cycles(), self->m.cycles);

	/* The file opened before is retired, its layout frozen. */
	ASSERT_EQ(0, ioctl(self->d.fd, RCB_INFO_GET, &self->d.info));
	EXPECT_EQ(RCB_INFO_RETIRED, self->d.info.rcb_flags);
	EXPECT_EQ(gen0, self->d.info.rcb_generation);
	EXPECT_EQ(-1, ioctl(self->d.fd, RCB_RESET));
	EXPECT_EQ(ESTALE, errno);
	EXPECT_EQ(-1, ioctl(self->d.fd, RCB_SETS_FOLD, &fold));
	EXPECT_EQ(ESTALE, errno);

	/* Two layouts a cycle; the sets of the start; the books exact. */
	ASSERT_EQ(0, set_period(0));
	ASSERT_EQ(0, rcd_open(&now, self->d.nid));
	EXPECT_EQ(0U, now.info.rcb_flags);
	EXPECT_EQ(gen0 + 2 * mem_cycles(), now.info.rcb_generation);
	EXPECT_EQ(sets0, now.info.rcb_sw_sets);
	ASSERT_EQ(0, rc_sync(now.fd));
	ASSERT_EQ(0, rc_stats_read(now.nid, &st));
	sum = table_sum(&now);
	EXPECT_GE(st.references, injected);
	EXPECT_GT(st.offlined, 0ULL);
	EXPECT_EQ(st.references,
		  sum + st.discarded + st.overflowed + st.offlined);
	EXPECT_EQ((unsigned long long)self->dropped0,
		  (unsigned long long)st.refs_dropped);
	printf("# memory: %d offline/online cycles of block %d (node %d): %llu references, %llu in the counters, %llu offlined, %llu discarded, %llu overflowed; %llu injected, %llu batches refused while offline; %.1f s\n",
	       self->m.cycles, self->m.block, now.nid,
	       (unsigned long long)st.references, (unsigned long long)sum,
	       (unsigned long long)st.offlined,
	       (unsigned long long)st.discarded,
	       (unsigned long long)st.overflowed,
	       (unsigned long long)injected, (unsigned long long)refused,
	       (rc_now_ns() - t0) / 1e9);
	rcd_close(&now);
}

/*
 * A range query parked in the middle (its output buffer is a
 * userfaultfd region nobody has filled yet, so writing the entries
 * waits) does not hold memory hotplug off: a block goes offline and
 * online meanwhile, two new layouts, and the query, let go, completes
 * with every page it was asked about.
 */
struct parked_query {
	int fd;
	struct rcb_range_query q;
	int ret;
	volatile bool done;
};

static void *park_query(void *arg)
{
	struct parked_query *pq = arg;

	pq->ret = ioctl(pq->fd, RCB_RANGE_QUERY, &pq->q) ? -errno : 0;
	pq->done = true;
	return NULL;
}

/* One offline/online cycle of the fixture's block, from a thread. */
struct one_cycle {
	struct mem_ctx *m;
	volatile bool done;
};

static void *cycle_block_once(void *arg)
{
	struct one_cycle *c = arg;

	c->m->err = block_online(c->m->block, false);
	if (!c->m->err)
		c->m->err = block_online(c->m->block, true);
	c->done = true;
	return NULL;
}

/* Wait up to @secs for @flag; a hotplug takes seconds under TCG. */
static bool wait_flag(volatile bool *flag, int secs)
{
	int i;

	for (i = 0; i < secs * 10 && !*flag; i++)
		usleep(100000);
	return *flag;
}

/*
 * The generation is 64 bits all the way: four billion hotplug events
 * would take years, so the test module sets it.
 */
TEST_F(mem, generation_past_32_bits)
{
	const uint64_t gen = (1ULL << 32) + 5;
	struct refcnt_test_generation g = { .fd = self->d.fd, .generation = gen };
	struct rcb_event_format f = { .version = 1 };
	const struct rcb_event_record *r;
	struct rcb_info info;
	char buf[16 * 104];
	bool layout = false;
	ssize_t n, at;
	int tfd = rc_test_open();

	if (tfd == -ENOENT)
		SKIP(return, "no test module (REFCNT_TEST_KO)");
	ASSERT_LE(0, tfd) TH_LOG("%s: %s", RC_TEST_DEV, strerror(-tfd));
	ASSERT_EQ(0, ioctl(tfd, REFCNT_TEST_GENERATION, &g))
		TH_LOG("REFCNT_TEST_GENERATION: %s", strerror(errno));
	close(tfd);
	ASSERT_EQ(0, ioctl(self->d.fd, RCB_INFO_GET, &info));
	EXPECT_EQ(gen, info.rcb_generation);
	ASSERT_EQ(0, ioctl(self->d.fd, RCB_EVENT_FORMAT, &f))
		TH_LOG("RCB_EVENT_FORMAT: %s", strerror(errno));

	ASSERT_EQ(0, block_online(self->m.block, false));
	while ((n = read(self->d.fd, buf, sizeof(buf))) > 0)
		for (at = 0; at < n; at += r->size) {
			r = (const void *)(buf + at);
			ASSERT_LE((uint32_t)RCB_EVENT_RECORD_SIZE_VER1, r->size);
			if (r->type != RCB_EVENT_LAYOUT)
				continue;
			layout = true;
			EXPECT_EQ(gen + 1, r->count);
			EXPECT_EQ(self->d.info.rcb_sw_sets - self->m.block_size /
				  self->d.info.rcb_granularity, r->set);
		}
	EXPECT_EQ(0, n) TH_LOG("read: %s", strerror(errno));
	EXPECT_TRUE(layout);
	ASSERT_EQ(0, ioctl(self->d.fd, RCB_INFO_GET, &info));
	EXPECT_EQ(gen, info.rcb_generation);
	EXPECT_EQ(RCB_INFO_RETIRED, info.rcb_flags);
}

TEST_F_TIMEOUT(mem, hotplug_during_parked_query, 600)
{
	size_t pg = rc_page_size(), n = 8, i;
	size_t out_len = n * sizeof(struct rcb_page_counters);
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffdio_zeropage zero = { 0 };
	struct parked_query pq = { .fd = self->d.fd };
	struct rcb_page_counters *e;
	struct uffd_msg msg;
	struct pollfd pfd;
	struct one_cycle cycle = { .m = &self->m };
	struct rc_dev now;
	pthread_t qt, ht;
	bool hotplugged;
	char *p;
	int uffd;

	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		SKIP(return, "no userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_API, &api));
	p = mmap(NULL, n * pg, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	e = mmap(NULL, out_len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_NE(MAP_FAILED, (void *)e);
	madvise(p, n * pg, MADV_NOHUGEPAGE);
	for (i = 0; i < n; i++)
		p[i * pg] = 1;
	reg.range.start = (uintptr_t)e;
	reg.range.len = (out_len + pg - 1) / pg * pg;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg));

	pq.q = (struct rcb_range_query){
		.vaddr = (uintptr_t)p, .len = n * pg, .buf = (uintptr_t)e,
		.buf_entries = n, .flags = RCB_RANGE_EXTENDED,
	};
	ASSERT_EQ(0, pthread_create(&qt, NULL, park_query, &pq));
	/* The query is writing its entries: parked on the first page. */
	pfd = (struct pollfd){ .fd = uffd, .events = POLLIN };
	ASSERT_EQ(1, poll(&pfd, 1, 60000));
	ASSERT_EQ((ssize_t)sizeof(msg), read(uffd, &msg, sizeof(msg)));
	ASSERT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);
	ASSERT_EQ((uintptr_t)e, msg.arg.pagefault.address & ~(uint64_t)(pg - 1));

	/* Memory goes offline and online while it waits. */
	ASSERT_EQ(0, pthread_create(&ht, NULL, cycle_block_once, &cycle));
	hotplugged = wait_flag(&cycle.done, 120);
	EXPECT_TRUE(hotplugged) TH_LOG("memory hotplug waits for the query");
	EXPECT_FALSE(pq.done);

	/* Let the query go (and the hotplug, if it waited for the query). */
	zero.range = reg.range;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_ZEROPAGE, &zero));
	pthread_join(ht, NULL);
	ASSERT_TRUE(wait_flag(&pq.done, 120));
	pthread_join(qt, NULL);
	ASSERT_EQ(0, self->m.err);

	ASSERT_EQ(0, pq.ret);
	ASSERT_EQ(n, pq.q.nr_entries);
	for (i = 0; i < n; i++)
		EXPECT_EQ(RCB_PAGE_PRESENT, e[i].flags) TH_LOG("page %zu", i);
	ASSERT_EQ(0, rcd_open(&now, self->d.nid));
	EXPECT_EQ(self->d.info.rcb_generation + 2, now.info.rcb_generation);
	rcd_close(&now);
	munmap((void *)e, out_len);
	munmap(p, n * pg);
	close(uffd);
}

/*
 * A layout change that fails at any of its allocations leaves no layout
 * behind that a file holds but the slot index never published: the
 * block's offline is walked with fail-nth (the notifier runs in the
 * writer's task), failing its n-th slab allocation for n = 1, 2, ...
 * until it completes without one, while a thread opens the node's device
 * over and over. After each attempt a file opened meanwhile has the
 * published generation (and is current) or an older one (and is
 * retired), the node's device answers, and the block comes back.
 * The last allocation before the new layout is published, the index's,
 * is failed RC_FAILNTH_AGAIN times more: an open lands in the window
 * only now and then (about one attempt in two on the module before
 * 5d97871, whose device got the new layout before the index was built).
 * Needs fault injection (CONFIG_FAILSLAB, its debugfs knobs): the debug
 * kernel has it, Debian's do not (SKIP).
 */
#define RC_FAILNTH		"/proc/thread-self/fail-nth"
#define RC_FAILSLAB		"/sys/kernel/debug/failslab"
#define RC_FAILNTH_MAX		2000
#define RC_FAILNTH_AGAIN	20
#define RC_OPENER_KEEP		32

struct opener {
	int nid;
	uint64_t gen;		/* the published generation before the attempt */
	int fds[RC_OPENER_KEEP];	/* files of another generation */
	int nfds;
	int last;		/* the last file opened on @gen */
	volatile unsigned long opens;
	volatile int err;
	volatile bool stop;
};

static void *opener(void *arg)
{
	struct opener *o = arg;
	struct rcb_info info;
	int fd;

	while (!o->stop) {
		fd = rc_open_node(o->nid, O_RDONLY | O_NONBLOCK);
		if (fd < 0 || ioctl(fd, RCB_INFO_GET, &info)) {
			o->err = -errno;
			if (fd >= 0)
				close(fd);
			break;
		}
		o->opens++;
		if (info.rcb_generation == o->gen) {
			if (o->last >= 0)
				close(o->last);
			o->last = fd;
		} else if (o->nfds < RC_OPENER_KEEP) {
			o->fds[o->nfds++] = fd;
		} else {
			close(fd);
		}
	}
	return NULL;
}

/* Attempts after which a file held a layout never published. */
static int orphaned;

/*
 * A file opened during the change: published and current, or retired.
 * Return: whether its layout was never published.
 */
static bool expect_not_orphan(struct __test_metadata *_metadata, int fd,
			      uint64_t published, int n)
{
	struct rcb_info info;

	memset(&info, 0, sizeof(info));
	EXPECT_EQ(0, ioctl(fd, RCB_INFO_GET, &info))
		TH_LOG("RCB_INFO_GET: %s", strerror(errno));
	EXPECT_LE(info.rcb_generation, published)
		TH_LOG("fail-nth=%d: a file opened during the change holds generation %llu, never published (the node's is %llu)",
		       n, (unsigned long long)info.rcb_generation,
		       (unsigned long long)published);
	EXPECT_EQ(info.rcb_generation < published ? RCB_INFO_RETIRED : 0U,
		  info.rcb_flags)
		TH_LOG("fail-nth=%d: generation %llu (the node's: %llu)", n,
		       (unsigned long long)info.rcb_generation,
		       (unsigned long long)published);
	return info.rcb_generation > published;
}

/*
 * Offline the fixture's block failing the n-th slab allocation of this
 * task, check what files opened meanwhile hold, put the block back.
 * Return: 1 if the fault was injected, 0 if the offline ran without, and
 * in *@kept whether the block went offline but the layout stayed.
 */
static int offline_failing(struct __test_metadata *_metadata,
			   struct mem_ctx *m, int nid, int n, bool *kept)
{
	struct opener o = { .nid = nid, .last = -1 };
	char path[96], left[32] = "";
	struct rc_set set;
	struct rc_dev now;
	pthread_t t;
	int fnfd, ofd, i, injected, err = 0;
	bool orphan = false;

	ASSERT_EQ(0, rcd_open(&now, nid));
	o.gen = now.info.rcb_generation;
	rcd_close(&now);
	snprintf(path, sizeof(path), RC_SYSMEM "/memory%d/online", m->block);
	ofd = open(path, O_WRONLY);
	fnfd = open(RC_FAILNTH, O_RDWR);
	ASSERT_LE(0, ofd);
	ASSERT_LE(0, fnfd);
	ASSERT_EQ(0, pthread_create(&t, NULL, opener, &o));
	while (!o.opens && !o.err)
		sched_yield();
	snprintf(left, sizeof(left), "%d", n);
	ASSERT_EQ((ssize_t)strlen(left), write(fnfd, left, strlen(left)));
	if (pwrite(ofd, "0\n", 2, 0) != 2)
		err = -errno;
	ASSERT_LT(0, pread(fnfd, left, sizeof(left) - 1, 0));
	injected = atoi(left) == 0;
	if (!injected)
		ASSERT_EQ(1, write(fnfd, "0", 1));
	o.stop = true;
	pthread_join(t, NULL);
	close(fnfd);
	close(ofd);
	ASSERT_EQ(0, o.err) TH_LOG("fail-nth=%d: open: %s", n, strerror(-o.err));
	/* Only a fault injected fails it (ENOMEM; EBUSY if migration did). */
	if (err)
		ASSERT_TRUE(injected) TH_LOG("offline: %s", strerror(-err));

	/* The device answers with the published layout. */
	ASSERT_EQ(0, rcd_open(&now, nid)) TH_LOG("fail-nth=%d", n);
	EXPECT_EQ(0U, now.info.rcb_flags);
	EXPECT_EQ(0, rcd_read_set(&now, 0, &set));
	*kept = !block_is_online(m->block) &&
		now.info.rcb_generation == o.gen;
	for (i = 0; i < o.nfds; i++) {
		orphan |= expect_not_orphan(_metadata, o.fds[i],
					    now.info.rcb_generation, n);
		close(o.fds[i]);
	}
	if (o.last >= 0) {
		orphan |= expect_not_orphan(_metadata, o.last,
					    now.info.rcb_generation, n);
		close(o.last);
	}
	orphaned += orphan;
	rcd_close(&now);
	if (!block_is_online(m->block))
		ASSERT_EQ(0, block_online(m->block, true));
	return injected;
}

TEST_F_TIMEOUT(mem, failed_layout_change_leaves_no_orphan, 600)
{
	struct rc_knob wait = { 0 }, verbose = { 0 }, console = { 0 };
	int n, i, last_kept = 0, nkept = 0, again = 0;
	uint64_t t0 = rc_now_ns();
	bool kept;

	if (!rc_exists(RC_FAILNTH))
		SKIP(return, "no fault injection (CONFIG_FAULT_INJECTION): no %s",
		     RC_FAILNTH);
	if (!rc_exists(RC_FAILSLAB "/ignore-gfp-wait"))
		SKIP(return, "no %s (CONFIG_FAILSLAB, CONFIG_FAULT_INJECTION_DEBUG_FS)",
		     RC_FAILSLAB);
	/*
	 * GFP_KERNEL allocations too. A notice for each failure, no stack
	 * dump, on the console: written there by the failing task, it holds
	 * the change where it failed long enough for an open to land there.
	 */
	ASSERT_EQ(0, rc_knob_set(&wait, RC_FAILSLAB "/ignore-gfp-wait", "N"));
	ASSERT_EQ(0, rc_knob_set(&verbose, RC_FAILSLAB "/verbose", "1"));
	ASSERT_EQ(0, rc_knob_set(&console, "/proc/sys/kernel/printk", "7"));

	for (n = 1; n <= RC_FAILNTH_MAX; n++) {
		if (!offline_failing(_metadata, &self->m, self->d.nid, n, &kept))
			break;
		if (kept) {
			last_kept = n;
			nkept++;
		}
	}
	EXPECT_GE(RC_FAILNTH_MAX, n);
	/* The walk reached the layout change's allocations. */
	ASSERT_LT(0, last_kept);
	/* The same allocation, unless the kernel's own vary in number. */
	for (i = 0; i < RC_FAILNTH_AGAIN; i++) {
		ASSERT_EQ(1, offline_failing(_metadata, &self->m, self->d.nid,
					     last_kept, &kept));
		again += kept;
	}
	rc_knob_restore(&console);
	rc_knob_restore(&verbose);
	rc_knob_restore(&wait);
	printf("# fail-nth over the offline of block %d (node %d): %d allocations failed in turn, %d of them kept the layout, the last (%d) failed %d times more (%d kept it); %d attempts left a file on an unpublished layout; %.1f s\n",
	       self->m.block, self->d.nid, n - 1, nkept, last_kept,
	       RC_FAILNTH_AGAIN, again, orphaned, (rc_now_ns() - t0) / 1e9);
}

/* ------------------------------------------------------------- cxl */

#define RC_CXL_MAX_BLOCKS	64
#define RC_HOTPLUG_MEM	"/etc/refcnt-vm/hotplug-mem"

/* Memory blocks of @nid, or -errno; *@online: how many are online. */
static int node_blocks(int nid, int *blocks, int max, int *online)
{
	char path[128];
	struct dirent *e;
	DIR *dir;
	int n = 0, b;

	snprintf(path, sizeof(path), RC_SYSNODE "/node%d", nid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	*online = 0;
	while ((e = readdir(dir)) && n < max) {
		if (sscanf(e->d_name, "memory%d", &b) != 1)
			continue;
		blocks[n++] = b;
		*online += block_is_online(b);
	}
	closedir(dir);
	return n;
}

/* Online (as movable: it can always go offline again) or offline all. */
static int blocks_state(const int *blocks, int n, bool on)
{
	char path[96];
	int i, err;

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), RC_SYSMEM "/memory%d/state",
			 blocks[i]);
		err = rc_write_file(path, on ? "online_movable\n" : "offline\n");
		if (err)
			return err;
	}
	return 0;
}

FIXTURE(cxl) {
	int nid, cnodeid, nblocks;
	int blocks[RC_CXL_MAX_BLOCKS];
	uint64_t block_size;
};

/* A possible node with memory blocks, none online: plugged, not onlined. */
FIXTURE_SETUP(cxl)
{
	struct rc_nodes possible, on;
	char buf[64];
	int i, online = 0;

	self->nid = -1;
	ASSERT_EQ(0, rc_restore_default());
	ASSERT_EQ(0, rc_node_list("possible", &possible));
	ASSERT_EQ(0, rc_node_list("online", &on));
	for (i = 0; i < possible.n && self->nid < 0; i++) {
		self->nblocks = node_blocks(possible.id[i], self->blocks,
					    RC_CXL_MAX_BLOCKS, &online);
		if (self->nblocks > 0 && !online) {
			self->nid = possible.id[i];
			/* Online at load (it is now): its place among them. */
			self->cnodeid = rc_list_index(&on, self->nid);
		}
	}
	if (self->nid < 0)
		RC_SETUP_SKIP("no node with memory blocks all offline (refcnt-vm --topology hotplug --dimm 1:256M)");
	ASSERT_GE(rc_read_file(RC_SYSMEM "/block_size_bytes", buf,
			       sizeof(buf)), 0);
	self->block_size = strtoull(buf, NULL, 16);
}

FIXTURE_TEARDOWN(cxl)
{
	if (self->nid >= 0)
		blocks_state(self->blocks, self->nblocks, false);
	if (!rc_module_loaded())
		rc_load("");
}

/* Exact references from every cnodeid into the node's first sets. */
static uint64_t inject_each_cnode(struct __test_metadata *_metadata,
				  struct rc_dev *d)
{
	struct rc_set set;
	uint64_t total = 0;
	unsigned int c;

	for (c = 0; c < d->info.rcb_num_cnodes; c++) {
		ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, c), c, 100 + c,
					RCB_INJECT_SYNC));
		total += 100 + c;
	}
	for (c = 0; c < d->info.rcb_num_cnodes; c++) {
		ASSERT_EQ(0, rcd_read_set(d, c, &set));
		EXPECT_EQ(100 + c, set.hw[rcd_counter(d, c)] +
				   set.ext[rcd_counter(d, c)]);
	}
	return total;
}

TEST_F(cxl, node_gains_memory_after_load)
{
	char path[64];
	struct rc_dev d0, d;
	struct rc_stats st;
	struct rcb_event ev;
	struct rcb_info info;
	struct pollfd pfd;
	volatile uint32_t *t0, *t;
	uint64_t total, sum;
	bool layout = false;
	uint32_t seen;

	rc_dev_path(path, sizeof(path), self->nid);
	ASSERT_FALSE(rc_exists(path));
	/* A mapping made before the change, of a node that keeps its memory. */
	ASSERT_EQ(0, rcd_open(&d0, 0));
	t0 = mmap(NULL, d0.info.rcb_len, PROT_READ, MAP_SHARED, d0.fd, 0);
	ASSERT_NE(MAP_FAILED, (void *)t0);
	seen = t0[0];

	/*
	 * Online: a device, and a layout a block: the node's first since the
	 * load, then one more for each block after the first.
	 */
	ASSERT_EQ(0, blocks_state(self->blocks, self->nblocks, true));
	ASSERT_TRUE(rc_exists(path));
	ASSERT_EQ(0, rcd_open_clean(&d, self->nid));
	EXPECT_EQ((uint64_t)self->nblocks, d.info.rcb_generation);
	EXPECT_EQ(0U, d.info.rcb_flags);
	EXPECT_EQ(self->cnodeid < 0 ? RCB_NO_CNODE : (unsigned int)self->cnodeid,
		  d.info.rcb_cnodeid);
	EXPECT_EQ(self->nblocks * self->block_size / d.info.rcb_granularity,
		  d.info.rcb_sw_sets);
	EXPECT_EQ(self->nblocks * self->block_size / rc_page_size(),
		  d.info.rcb_base_pages);
	total = inject_each_cnode(_metadata, &d);
	ASSERT_EQ(0, rc_stats_read(self->nid, &st));
	EXPECT_EQ(total, st.references);
	t = mmap(NULL, d.info.rcb_len, PROT_READ, MAP_SHARED, d.fd, 0);
	ASSERT_NE(MAP_FAILED, (void *)t);

	/* Node 0's layout did not change, and its mapping still reads. */
	EXPECT_EQ(seen, t0[0]);
	ASSERT_EQ(0, ioctl(d0.fd, RCB_INFO_GET, &info));
	EXPECT_EQ(d0.info.rcb_generation, info.rcb_generation);
	EXPECT_EQ(0U, info.rcb_flags);

	/* Offline: the device goes; the open file keeps its frozen layout. */
	ASSERT_EQ(0, blocks_state(self->blocks, self->nblocks, false));
	EXPECT_FALSE(rc_exists(path));
	ASSERT_EQ(0, ioctl(d.fd, RCB_INFO_GET, &info));
	EXPECT_EQ(RCB_INFO_RETIRED, info.rcb_flags);
	EXPECT_EQ((uint64_t)self->nblocks, info.rcb_generation);
	EXPECT_EQ(-1, ioctl(d.fd, RCB_RESET));
	EXPECT_EQ(ESTALE, errno);
	sum = 0;
	for (uint64_t i = 0; i < d.info.rcb_num_cnodes * d.cps; i++)
		sum += t[i];
	EXPECT_GE(total, sum);	/* what was folded, still mapped */
	while (read(d.fd, &ev, sizeof(ev)) == sizeof(ev))
		if (ev.type == RCB_EVENT_LAYOUT) {
			layout = true;
			/* The layout after the first block went offline. */
			EXPECT_EQ(self->nblocks + 1U, ev.count);
			EXPECT_EQ((self->nblocks - 1) * self->block_size /
				  d.info.rcb_granularity, ev.set);
		}
	EXPECT_TRUE(layout);
	EXPECT_EQ(0, read(d.fd, &ev, sizeof(ev)));	/* end of file */
	pfd.fd = d.fd;
	pfd.events = POLLIN;
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_TRUE(pfd.revents & POLLHUP);
	munmap((void *)t, d.info.rcb_len);
	rcd_close(&d);

	/* Online again: the books carried over exactly. */
	ASSERT_EQ(0, blocks_state(self->blocks, self->nblocks, true));
	ASSERT_EQ(0, rcd_open(&d, self->nid));
	EXPECT_EQ(3ULL * self->nblocks, d.info.rcb_generation);
	ASSERT_EQ(0, rc_stats_read(self->nid, &st));
	EXPECT_EQ(total, st.references);
	EXPECT_EQ(total, st.offlined);
	EXPECT_EQ(0ULL, table_sum(&d));
	total += inject_each_cnode(_metadata, &d);
	ASSERT_EQ(0, rc_stats_read(self->nid, &st));
	EXPECT_EQ(st.references, table_sum(&d) + st.discarded +
				 st.overflowed + st.offlined);
	printf("# cxl: node %d (cnodeid %d) onlined after load: %d blocks, %llu sets, %llu references, %llu offlined\n",
	       self->nid, self->cnodeid, self->nblocks,
	       (unsigned long long)d.info.rcb_sw_sets,
	       (unsigned long long)st.references,
	       (unsigned long long)st.offlined);
	rcd_close(&d);
	EXPECT_EQ(seen, t0[0]);
	munmap((void *)t0, d0.info.rcb_len);
	rcd_close(&d0);
}

static int bind_to(void *addr, size_t len, int node)
{
	unsigned long mask[16] = { 0 };

	mask[node / 64] = 1UL << (node % 64);
	return syscall(SYS_mbind, addr, len, 2 /* MPOL_BIND */, mask, 1024, 0);
}

static int page_node(void *addr)
{
	int status = -1;
	void *pages[1] = { addr };

	if (syscall(SYS_move_pages, 0, 1, pages, NULL, &status, 0))
		return -errno;
	return status;
}

/*
 * The fault feed counts memory onlined after the load: RC_FAULTS pages
 * bound to the node, each a sample (fault_period=1) of a page there.
 */
TEST_F(cxl, fault_feed_counts_onlined_memory)
{
	size_t len = RC_FAULTS * rc_page_size(), i;
	unsigned long period0;
	struct rc_stats s0, s1;
	char *p;

	ASSERT_EQ(0, blocks_state(self->blocks, self->nblocks, true));
	ASSERT_EQ(0, rc_stats_read(self->nid, &s0));
	ASSERT_EQ(0, rc_read_ulong_param("fault_period", &period0));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	madvise(p, len, MADV_NOHUGEPAGE);
	ASSERT_EQ(0, bind_to(p, len, self->nid));
	ASSERT_EQ(0, set_period(1));
	for (i = 0; i < len; i += rc_page_size())
		p[i] = 1;
	ASSERT_EQ(0, set_period(period0));
	ASSERT_EQ(0, rc_stats_read(self->nid, &s1));
	for (i = 0; i < len; i += rc_page_size())
		ASSERT_EQ(self->nid, page_node(p + i));
	EXPECT_GE(s1.references - s0.references, (uint64_t)RC_FAULTS);
	munmap(p, len);
}

static volatile bool mem_toggling;

static void *mem_toggler(void *arg)
{
	struct _test_data_cxl *self = arg;

	while (mem_toggling) {
		blocks_state(self->blocks, self->nblocks, true);
		blocks_state(self->blocks, self->nblocks, false);
	}
	return NULL;
}

/* Unload and load while the node's memory comes and goes: both safe. */
TEST_F(cxl, unload_during_memory_hotplug)
{
	struct rc_nodes mem;
	char path[64];
	pthread_t th;
	int i;

	mem_toggling = true;
	ASSERT_EQ(0, pthread_create(&th, NULL, mem_toggler, self));
	for (i = 0; i < 5; i++) {
		EXPECT_EQ(0, rc_unload_retry());
		EXPECT_EQ(0, rc_load(""));
	}
	mem_toggling = false;
	pthread_join(th, NULL);

	/* The devices are those of the nodes with memory online now. */
	ASSERT_EQ(0, blocks_state(self->blocks, self->nblocks, true));
	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	ASSERT_TRUE(rc_list_has(&mem, self->nid));
	rc_dev_path(path, sizeof(path), self->nid);
	EXPECT_TRUE(rc_exists(path));
	ASSERT_EQ(0, rc_unload_retry());
	ASSERT_EQ(0, rc_load(""));
	EXPECT_TRUE(rc_exists(path));
	ASSERT_EQ(0, blocks_state(self->blocks, self->nblocks, false));
	EXPECT_FALSE(rc_exists(path));
}

/* Offline @blocks one by one, last first: milliseconds a block. */
static double offline_ms_per_block(const int *blocks, int n)
{
	uint64_t t0 = rc_now_ns();
	int i;

	for (i = n - 1; i >= 0; i--)
		if (blocks_state(&blocks[i], 1, false))
			return -1;
	return (rc_now_ns() - t0) / 1e6 / n;
}

/*
 * Offlining a node block by block costs each block what the block is,
 * not what the node is (Documentation/design.rst, "Memory hotplug").
 * The dimm node's blocks (make check: refcnt-vm --dimm 1:1G, 8 blocks;
 * check-long: 2G, 16) go offline one by one, RC_SCALE_RUNS times: the
 * time of its first two blocks (a node of all of them) against that of
 * the block that leaves one (a node of two), the least of the runs (what
 * other work on the machine adds is gone from it), first with the module
 * unloaded, then loaded with prealloc=1, so that each layout has all its
 * counter pages, as a busy node has: the module's share of a block's time
 * is the difference. Work in proportion to the node at each block (a
 * layout rebuilt with all its counter pages, its counts moved one by one)
 * makes the share of the large node's blocks grow with its size over the
 * small one's; in proportion to the block, it stays about the same. The
 * bound, 3 times and 20 ms (or 10% of the kernel's own time a block, if
 * more), leaves room for what TCG adds.
 */
#define RC_SCALE_RUNS	3

struct scale_run {
	double small, large;	/* ms a block, the least seen */
};

/* Offline @block: the least time so far in *@least. */
static int offline_timed(int block, double *least)
{
	double t = offline_ms_per_block(&block, 1);

	if (t < 0)
		return -1;
	if (*least < 0 || t < *least)
		*least = t;
	return 0;
}

static int scale_run(struct _test_data_cxl *self, struct scale_run *r)
{
	int n = self->nblocks, i;

	r->small = r->large = -1;
	for (i = 0; i < RC_SCALE_RUNS; i++) {
		if (blocks_state(self->blocks, n, true) ||
		    offline_timed(self->blocks[n - 1], &r->large) ||
		    offline_timed(self->blocks[n - 2], &r->large) ||
		    blocks_state(self->blocks + 2, n - 4, false) ||
		    offline_timed(self->blocks[1], &r->small) ||
		    blocks_state(self->blocks, 1, false))
			return -1;
	}
	return 0;
}

TEST_F_TIMEOUT(cxl, offline_block_by_block_linear, 600)
{
	struct scale_run bare, mod;
	double small, large;

	if (self->nblocks < 8)
		SKIP(return, "a node of %d blocks: needs 8 (refcnt-vm --dimm 1:1G; make check-long)",
		     self->nblocks);
	ASSERT_EQ(0, rc_unload_retry());
	ASSERT_EQ(0, scale_run(self, &bare));
	ASSERT_EQ(0, rc_load("prealloc=1"));
	ASSERT_EQ(0, scale_run(self, &mod));
	ASSERT_EQ(0, rc_unload_retry());
	ASSERT_EQ(0, rc_load(""));
	small = mod.small - bare.small;
	large = mod.large - bare.large;
	printf("# offline block by block: a node of 2 blocks %.1f ms a block (%.1f without the module), of %d blocks %.1f ms (%.1f): the module's share %.1f and %.1f ms\n",
	       mod.small, bare.small, self->nblocks, mod.large, bare.large,
	       small, large);
	EXPECT_LE(large, 3 * (small > 0 ? small : 0) +
			 (bare.large > 200 ? bare.large / 10 : 20));
}

/* Offline the blocks given, from a thread. */
struct blocks_off {
	const int *blocks;
	int n;
	int err;
	volatile bool done;
};

static void *blocks_offline(void *arg)
{
	struct blocks_off *o = arg;

	o->err = blocks_state(o->blocks, o->n, false);
	o->done = true;
	return NULL;
}

/* A range query of RC_PARK_PAGES pages parked on its first write. */
#define RC_PARK_PAGES	128

struct park {
	struct parked_query pq;
	struct rcb_page_counters *e;
	size_t out_len;
	pthread_t qt;
	int uffd;
};

/*
 * Query the pages at @p from @fd, parked (userfaultfd) on its first
 * write to the caller: after 64 entries (a batch), before the others.
 * Return: 0, or -1 if there is no userfaultfd (skip).
 */
static int park_start(struct __test_metadata *_metadata, struct park *pk,
		      int fd, char *p)
{
	size_t pg = rc_page_size(), n = RC_PARK_PAGES;
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffd_msg msg;
	struct pollfd pfd;

	pk->uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (pk->uffd < 0)
		return -1;
	EXPECT_EQ(0, ioctl(pk->uffd, UFFDIO_API, &api));
	pk->out_len = n * sizeof(struct rcb_page_counters);
	pk->e = mmap(NULL, pk->out_len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT_NE(MAP_FAILED, (void *)pk->e);
	reg.range.start = (uintptr_t)pk->e;
	reg.range.len = (pk->out_len + pg - 1) / pg * pg;
	EXPECT_EQ(0, ioctl(pk->uffd, UFFDIO_REGISTER, &reg));
	pk->pq.fd = fd;
	pk->pq.q = (struct rcb_range_query){
		.vaddr = (uintptr_t)p, .len = n * pg, .buf = (uintptr_t)pk->e,
		.buf_entries = n, .flags = RCB_RANGE_EXTENDED,
	};
	EXPECT_EQ(0, pthread_create(&pk->qt, NULL, park_query, &pk->pq));
	pfd = (struct pollfd){ .fd = pk->uffd, .events = POLLIN };
	EXPECT_EQ(1, poll(&pfd, 1, 60000));
	EXPECT_EQ((ssize_t)sizeof(msg), read(pk->uffd, &msg, sizeof(msg)));
	EXPECT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);
	return 0;
}

/*
 * Let the query go; every entry must say where its walk saw the page:
 * present, on @cnodeid.
 */
static void park_finish(struct __test_metadata *_metadata, struct park *pk,
			int cnodeid)
{
	size_t pg = rc_page_size(), i, bad = 0, uncounted = 0;
	struct uffdio_zeropage zero = { 0 };
	struct rcb_page_counters *e = pk->e;

	zero.range.start = (uintptr_t)e;
	zero.range.len = (pk->out_len + pg - 1) / pg * pg;
	ASSERT_EQ(0, ioctl(pk->uffd, UFFDIO_ZEROPAGE, &zero));
	ASSERT_TRUE(wait_flag(&pk->pq.done, 120));
	pthread_join(pk->qt, NULL);
	ASSERT_EQ(0, pk->pq.ret);
	ASSERT_EQ((uint64_t)RC_PARK_PAGES, pk->pq.q.nr_entries);
	for (i = 0; i < RC_PARK_PAGES; i++) {
		uncounted += !!(e[i].flags & RCB_PAGE_UNCOUNTED);
		if ((e[i].flags & RCB_PAGE_PRESENT) && e[i].cnodeid == cnodeid)
			continue;
		if (bad++ < 4)
			TH_LOG("page %zu: flags %#llx, cnodeid %d", i,
			       (unsigned long long)e[i].flags, e[i].cnodeid);
	}
	EXPECT_EQ(0U, bad) TH_LOG("pages not present on cnodeid %d", cnodeid);
	/* Those staged after the offline: their sets went with the memory. */
	printf("# %zu of %d entries written after their memory went\n",
	       uncounted, RC_PARK_PAGES);
	munmap((void *)e, pk->out_len);
	close(pk->uffd);
}

/* RC_PARK_PAGES pages bound to @nid, each touched and there. */
static char *pages_on(struct __test_metadata *_metadata, int nid)
{
	size_t pg = rc_page_size(), len = RC_PARK_PAGES * pg, i;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	EXPECT_NE(MAP_FAILED, p);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_NOHUGEPAGE);
	EXPECT_EQ(0, bind_to(p, len, nid));
	for (i = 0; i < len; i += pg)
		p[i] = 1;
	for (i = 0; i < len; i += pg)
		EXPECT_EQ(nid, page_node(p + i));
	return p;
}

/* The blocks' offline, from a thread, while the query is parked. */
static void offline_parked(struct __test_metadata *_metadata,
			   const int *blocks, int n)
{
	struct blocks_off off = { .blocks = blocks, .n = n };
	pthread_t ot;
	bool offlined;

	ASSERT_EQ(0, pthread_create(&ot, NULL, blocks_offline, &off));
	offlined = wait_flag(&off.done, 120);
	EXPECT_TRUE(offlined) TH_LOG("offline waits for the parked query");
	if (offlined)
		pthread_join(ot, NULL);
	EXPECT_EQ(0, off.err);
}

/*
 * A range query whose pages go offline between its walk and its entries:
 * the query parked (userfaultfd) on its first write, after 64 entries,
 * while offlining migrates the pages away and takes the node's blocks
 * out, poisoning their struct pages (CONFIG_DEBUG_VM). The other entries
 * still say where the walk saw each page: present, on the node's
 * cnodeid. A node read from the struct page after the walk is the
 * poison's (-1 here).
 */
TEST_F_TIMEOUT(cxl, query_parked_over_offline, 300)
{
	struct rc_nodes mem;
	struct park pk = {};
	int fd;
	char *p;

	ASSERT_EQ(0, blocks_state(self->blocks, self->nblocks, true));
	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	fd = rc_open_node(mem.id[0], O_RDONLY);
	ASSERT_LE(0, fd);
	p = pages_on(_metadata, self->nid);
	ASSERT_NE(NULL, p);
	if (park_start(_metadata, &pk, fd, p))
		SKIP(return, "no userfaultfd: %s", strerror(errno));
	offline_parked(_metadata, self->blocks, self->nblocks);
	EXPECT_NE(self->nid, page_node(p));
	park_finish(_metadata, &pk, self->cnodeid);
	munmap(p, RC_PARK_PAGES * rc_page_size());
	close(fd);
}

/* Ask the host (refcnt-vm --hotplug-mem): its reply's ID in @id. */
static int host_request(const char *req, char *id, size_t len)
{
	char cmd[256], reply[128] = "";
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "refcnt-vm-hotplug %s 2>&1", req);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	if (!fgets(reply, sizeof(reply), f))
		reply[0] = 0;
	st = pclose(f);
	reply[strcspn(reply, "\n")] = 0;
	printf("# %s: %s\n", req, reply);
	if (st || strncmp(reply, "ok ", 3))
		return -EIO;
	snprintf(id, len, "%.60s", reply + 3);
	return 0;
}

/* Whether /proc/iomem has System RAM at physical address @addr. */
static bool iomem_ram_at(uint64_t addr)
{
	unsigned long long start, end;
	char line[160];
	bool ram = false;
	FILE *f = fopen("/proc/iomem", "r");

	if (!f)
		return false;
	while (!ram && fgets(line, sizeof(line), f))
		ram = sscanf(line, "%llx-%llx", &start, &end) == 2 &&
		      strstr(line, "System RAM") && addr >= start &&
		      addr <= end;
	fclose(f);
	return ram;
}

/* Blocks of @nid not in @old (@n_old of them) into @blocks. */
static int new_blocks(int nid, const int *old, int n_old, int *blocks)
{
	int all[RC_CXL_MAX_BLOCKS], n, i, j, k = 0, online;

	n = node_blocks(nid, all, RC_CXL_MAX_BLOCKS, &online);
	for (i = 0; i < n; i++) {
		for (j = 0; j < n_old && old[j] != all[i]; j++)
			;
		if (j == n_old)
			blocks[k++] = all[i];
	}
	return k;
}

/*
 * The same, but the memory is then removed (a dimm plugged into the
 * node at run time, offlined and unplugged while the query is parked):
 * the struct pages of the walk's frames are unmapped, and a query that
 * read one after its walk faults in the kernel.
 */
TEST_F_TIMEOUT(cxl, query_parked_over_hot_remove, 300)
{
	int blocks[RC_CXL_MAX_BLOCKS], nblocks = 0, i, fd;
	char req[96], id[64];
	uint64_t addr;
	struct rc_nodes mem;
	struct park pk = {};
	char *p;

	if (!rc_exists(RC_HOTPLUG_MEM))
		SKIP(return, "no run-time memory hotplug (refcnt-vm --hotplug-mem)");
	snprintf(req, sizeof(req), "dimm %d 128", self->nid);
	ASSERT_EQ(0, host_request(req, id, sizeof(id)));
	for (i = 0; i < 300 && nblocks <= 0; i++) {
		nblocks = new_blocks(self->nid, self->blocks, self->nblocks,
				     blocks);
		if (nblocks <= 0)
			usleep(100000);
	}
	ASSERT_LT(0, nblocks);
	ASSERT_EQ(0, blocks_state(blocks, nblocks, true));
	ASSERT_EQ(0, rc_node_list("has_memory", &mem));
	fd = rc_open_node(mem.id[0], O_RDONLY);
	ASSERT_LE(0, fd);
	p = pages_on(_metadata, self->nid);
	ASSERT_NE(NULL, p);
	if (park_start(_metadata, &pk, fd, p))
		SKIP(return, "no userfaultfd: %s", strerror(errno));
	offline_parked(_metadata, blocks, nblocks);
	addr = blocks[0] * self->block_size;
	ASSERT_TRUE(iomem_ram_at(addr));
	snprintf(req, sizeof(req), "unplug %s", id);
	EXPECT_EQ(0, host_request(req, id, sizeof(id)));
	/*
	 * The guest's ACPI handler removes the memory: its blocks go, then
	 * its struct pages and its resource.
	 */
	for (i = 0; i < 600 && iomem_ram_at(addr); i++)
		usleep(100000);
	EXPECT_FALSE(iomem_ram_at(addr)) TH_LOG("the dimm's memory is still there");
	EXPECT_EQ(0, new_blocks(self->nid, self->blocks, self->nblocks,
				blocks));
	park_finish(_metadata, &pk, self->cnodeid);
	munmap(p, RC_PARK_PAGES * rc_page_size());
	close(fd);
}

/*
 * Memory hotplug comes in between the rounds of an RCB_INJECT batch
 * (Documentation/design.rst, "Long operations"). A batch of
 * RCB_INJECT_MAX entries into node 0 is made to take seconds once it
 * delivers (its thread SCHED_IDLE on a CPU then kept busy:
 * rc_hog_start()), and a block of the dimm node goes offline: it returns
 * while node 0's references are still short of the batch's, its
 * down_write having waited for one round at most. A batch that held the
 * layout rwsem from its first entry to its last kept the offline waiting
 * until all had counted.
 */
struct slow_inject {
	int fd;
	const struct rcb_ref *refs;
	uint32_t nr;
	int ret;
};

static void *slow_inject_run(void *arg)
{
	struct slow_inject *s = arg;

	s->ret = rc_idle(0) ?: rc_inject(s->fd, s->refs, s->nr, 0);
	return NULL;
}

TEST_F_TIMEOUT(cxl, offline_between_inject_rounds, 300)
{
	struct slow_inject s = { .nr = RCB_INJECT_MAX };
	uint64_t base, seen, at, end, t0, t1, t2;
	struct rcb_ref *refs;
	struct rc_hog hog;
	struct rc_dev d0;
	int cpu0, cpu;
	pthread_t th;

	/* The last CPU; ours too: a host that stops it stops all of us. */
	rc_two_cpus(&cpu0, &cpu);
	ASSERT_EQ(0, rcd_open_clean(&d0, 0));
	refs = rcd_spread_refs(&d0, s.nr);
	ASSERT_NE(NULL, refs);
	/* Its counter pages made: the batch's time is the same each run. */
	ASSERT_EQ(0, rc_inject(d0.fd, refs, s.nr, 0));
	/* Online, to go offline: the shorter, and not the first (longer). */
	ASSERT_EQ(0, blocks_state(self->blocks, 1, true));
	ASSERT_EQ(0, blocks_state(self->blocks, 1, false));
	ASSERT_EQ(0, blocks_state(self->blocks, 1, true));
	ASSERT_EQ(0, rc_pin(cpu));
	ASSERT_EQ(0, rc_stat(0, "references", &base));
	s.fd = d0.fd;
	s.refs = refs;
	t0 = rc_now_ns();
	/* Our CPU, and what we leave of it until it delivers; then little. */
	ASSERT_EQ(0, pthread_create(&th, NULL, slow_inject_run, &s));
	EXPECT_EQ(0, rc_references_past(0, base, 120, &seen));
	ASSERT_EQ(0, rc_hog_start(&hog, cpu));
	t1 = rc_now_ns();
	EXPECT_EQ(0, blocks_state(self->blocks, 1, false));
	t2 = rc_now_ns();
	EXPECT_EQ(0, rc_stat(0, "references", &at));
	rc_hog_stop(&hog);
	pthread_join(th, NULL);
	ASSERT_EQ(0, s.ret) TH_LOG("RCB_INJECT: %s", strerror(-s.ret));
	ASSERT_EQ(0, rc_stat(0, "references", &end));
	EXPECT_EQ(base + s.nr, end);
	TH_LOG("batch of %u delivering after %.0f ms (%llu counted); the offline took %.0f ms, %llu entries still to count when it returned",
	       s.nr, (t1 - t0) / 1e6, (unsigned long long)(seen - base),
	       (t2 - t1) / 1e6, (unsigned long long)(base + s.nr - at));
	EXPECT_GT(base + s.nr, at)
		TH_LOG("the offline waited for the whole batch");
	EXPECT_EQ(0, rcd_close_clean(&d0));
	free(refs);
}

/* ------------------------------------------------------------ late */

/*
 * A node new since the load: possible, not online when the module
 * loaded, given memory at run time by the host (refcnt-vm --hotplug-mem:
 * the guest asks with refcnt-vm-hotplug). It has no cnodeid.
 */
FIXTURE(late) {
	int nid;
};

FIXTURE_SETUP(late)
{
	struct rc_nodes possible, on;
	int i;

	self->nid = -1;
	if (!rc_exists(RC_HOTPLUG_MEM))
		RC_SETUP_SKIP("no run-time memory hotplug (refcnt-vm --hotplug-mem)");
	ASSERT_EQ(0, rc_restore_default());
	ASSERT_EQ(0, rc_node_list("possible", &possible));
	ASSERT_EQ(0, rc_node_list("online", &on));
	for (i = possible.n - 1; i >= 0 && self->nid < 0; i--)
		if (!rc_list_has(&on, possible.id[i]))
			self->nid = possible.id[i];
	if (self->nid < 0)
		RC_SETUP_SKIP("every possible node is online");
}

FIXTURE_TEARDOWN(late)
{
}

TEST_F_TIMEOUT(late, node_new_since_load, 300)
{
	int blocks[RC_CXL_MAX_BLOCKS], nblocks = 0, online, i;
	char cmd[160], path[64];
	struct rc_set set;
	struct rc_stats st;
	struct rc_dev d;
	unsigned int c;
	uint64_t total = 0;

	/* Its reply as a TAP comment: a bare "ok ..." would count as a test. */
	snprintf(cmd, sizeof(cmd),
		 "r=$(refcnt-vm-hotplug dimm %d 128 2>&1); s=$?; echo \"# $r\"; exit $s",
		 self->nid);
	ASSERT_EQ(0, system(cmd));
	/* The guest's ACPI handler adds the dimm's memory: wait for it. */
	for (i = 0; i < 300 && nblocks <= 0; i++) {
		nblocks = node_blocks(self->nid, blocks, RC_CXL_MAX_BLOCKS,
				      &online);
		if (nblocks <= 0)
			usleep(100000);
	}
	ASSERT_LT(0, nblocks);
	ASSERT_EQ(0, blocks_state(blocks, nblocks, true));
	rc_dev_path(path, sizeof(path), self->nid);
	ASSERT_TRUE(rc_exists(path));
	ASSERT_EQ(0, rcd_open_clean(&d, self->nid));
	EXPECT_EQ(RCB_NO_CNODE, d.info.rcb_cnodeid);
	EXPECT_EQ((uint64_t)nblocks, d.info.rcb_generation);
	EXPECT_EQ(0U, d.info.rcb_flags);

	/* librefcnt numbers the nodes as the module does, not as online. */
	EXPECT_EQ((int)d.info.rcb_num_cnodes, refcnt_num_cnodes());
	errno = 0;
	EXPECT_EQ(-1, refcnt_nid_to_cnode(self->nid));
	EXPECT_EQ(ENOENT, errno);
	errno = 0;
	EXPECT_EQ(-1, refcnt_cnode_to_nid(d.info.rcb_num_cnodes));
	EXPECT_EQ(EINVAL, errno);
	for (c = 0; c < d.info.rcb_num_cnodes; c++)
		EXPECT_EQ((int)c, refcnt_nid_to_cnode(refcnt_cnode_to_nid(c)));

	/* Its memory counts references from every node of the load. */
	for (c = 0; c < d.info.rcb_num_cnodes; c++) {
		ASSERT_EQ(0, rc_inject1(d.fd, rcd_set_paddr(&d, c), c, 300 + c,
					RCB_INJECT_SYNC));
		total += 300 + c;
	}
	for (c = 0; c < d.info.rcb_num_cnodes; c++) {
		ASSERT_EQ(0, rcd_read_set(&d, c, &set));
		EXPECT_EQ(300 + c, set.hw[rcd_counter(&d, c)] +
				   set.ext[rcd_counter(&d, c)]);
	}
	/* There is no cnodeid of its own to come from. */
	EXPECT_EQ(-EINVAL, rc_inject1(d.fd, rcd_set_paddr(&d, 0),
				      d.info.rcb_num_cnodes, 1, 0));
	ASSERT_EQ(0, rc_stats_read(self->nid, &st));
	EXPECT_EQ(total, st.references);
	printf("# late: node %d new since the load: %d blocks, %llu sets, no cnodeid, %llu references\n",
	       self->nid, nblocks, (unsigned long long)d.info.rcb_sw_sets,
	       (unsigned long long)st.references);
	rcd_close_clean(&d);

	ASSERT_EQ(0, blocks_state(blocks, nblocks, false));
	EXPECT_FALSE(rc_exists(path));
}

RC_HARNESS_MAIN
