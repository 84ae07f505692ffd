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
 * Memory hotplug is not followed (Documentation/admin-guide.rst), but
 * must be safe: memory blocks of a node taken offline and back online
 * RC_MEM_CYCLES times while references are injected into them and
 * elsewhere, the fault feed runs and a reader maps the node's table keep
 * every set (the slots do not change) and the books exact.
 *
 * Needs a CPU besides CPU 0 that can go offline (every make check
 * topology has 2 or more CPUs), and a memory block that can (an idle
 * node's movable pages migrate); SKIPs without.
 */
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include "refcnt_helpers.h"
#include "refcnt_counters.h"

#define SYSCPU		"/sys/devices/system/cpu"
#define RC_FAULTS	512U
#define RC_CYCLES	20
#define RC_MEM_CYCLES	100
#ifndef MADV_NOHUGEPAGE
#define MADV_NOHUGEPAGE	15
#endif

static int write_str(const char *path, const char *val)
{
	int fd, ret = 0;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		ret = -errno;
	close(fd);
	return ret;
}

static int set_period(unsigned long period)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lu\n", period);
	return write_str(RC_PARAMDIR "/fault_period", buf);
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
	return write_str(path, on ? "1\n" : "0\n");
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
};

FIXTURE_SETUP(cpus)
{
	ASSERT_EQ(0, rc_restore_default());
	self->cpu = hotpluggable_cpu();
	if (self->cpu < 0)
		RC_SETUP_SKIP("no CPU besides CPU 0 can go offline");
	ASSERT_EQ(0, rc_read_ulong_param("fault_period", &self->period0));
	ASSERT_EQ(0, set_period(1));
}

FIXTURE_TEARDOWN(cpus)
{
	if (self->cpu < 0)
		return;
	cpu_online(self->cpu, true);
	if (rc_module_loaded())
		set_period(self->period0);
	else
		rc_load("");
}

/* fault_cpus is the online CPUs: the feed follows them. */
static void expect_follows(struct __test_metadata *_metadata)
{
	char online[256], cpus[256];

	read_line(SYSCPU "/online", online, sizeof(online));
	read_line(RC_FEEDDIR "/fault_cpus", cpus, sizeof(cpus));
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
	return write_str(path, on ? "1\n" : "0\n");
}

/* A block of @nid that goes offline now (and is put back), or -1. */
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

		if (sscanf(e->d_name, "memory%d", &b) != 1)
			continue;
		if (!block_online(b, false) && !block_online(b, true))
			block = b;
	}
	closedir(dir);
	return block;
}

static void *mem_cycler(void *arg)
{
	struct mem_ctx *m = arg;

	for (m->cycles = 0; m->cycles < RC_MEM_CYCLES; m->cycles++) {
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
		set_period(self->period0);
		rcd_close_clean(&self->d);
	}
}

TEST_F_TIMEOUT(mem, offline_online_cycles_conserve, 600)
{
	uint64_t base = self->m.block * self->m.block_size, injected = 0;
	uint64_t r = 17, sum, sets0 = self->d.info.rcb_sw_sets;
	pthread_t cyc, flt, map;
	struct rc_stats st;
	struct rcb_ref refs[16];
	int i;

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
			injected += refs[i].count;
		}
		ASSERT_EQ(0, rc_inject(self->d.fd, refs, 16, 0));
	}
	pthread_join(cyc, NULL);
	pthread_join(flt, NULL);
	pthread_join(map, NULL);
	ASSERT_EQ(0, self->m.err) TH_LOG("after %d cycles", self->m.cycles);
	ASSERT_EQ(RC_MEM_CYCLES, self->m.cycles);

	/* The sets are those of the load; the feed quiet, the books exact. */
	ASSERT_EQ(0, ioctl(self->d.fd, RCB_INFO_GET, &self->d.info));
	EXPECT_EQ(sets0, self->d.info.rcb_sw_sets);
	ASSERT_EQ(0, set_period(0));
	ASSERT_EQ(0, rc_sync(self->d.fd));
	ASSERT_EQ(0, rc_stats_read(self->d.nid, &st));
	sum = table_sum(&self->d);
	EXPECT_GE(st.references, injected);
	EXPECT_EQ(st.references, sum + st.discarded + st.overflowed);
	EXPECT_EQ((unsigned long long)self->dropped0,
		  (unsigned long long)st.refs_dropped);
}

TEST_HARNESS_MAIN
