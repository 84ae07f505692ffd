// SPDX-License-Identifier: GPL-2.0
/*
 * testpmu_test: refcnt's PEBS/IBS feed on a PMU inside perf core.
 *
 * The test rig's refcnt_testpmu.ko (tools/testing/kmod/refcnt_testpmu.c)
 * is a PMU perf core schedules, rotates and throttles, fed by the hub
 * device's emulated PEBS samples through a real NMI. It needs a kernel
 * that exports perf_event_overflow(): the rig's debug kernel
 * (REFCNT_TESTPMU_KO is set when the module was built); elsewhere the
 * tests skip. Run in a guest with the hub device (refcnt-vm --hub), as
 * make check's testpmu step does.
 *
 *  - samples: samples arrive through perf core and refcnt counts each
 *    overflow the PMU made, and each throttle, exactly;
 *  - throttled: perf_event_max_sample_rate lowered to HZ (one sample per
 *    tick and event): perf throttles, refcnt counts and says it;
 *  - throttled_loss_matches_truth: the references throttling lost, as
 *    refcnt estimates them, beside those the PMU missed;
 *  - session_counts_its_throttles: a counting session's own throttles,
 *    in RCB_COUNT_STATS;
 *  - refcnt_run_says_throttled: refcnt-run's report says so too, and as
 *    a share of the run;
 *  - refcnt_run_safe_min_period: refcnt-run refuses a period below the
 *    one perf_event_max_sample_rate makes safe, and raises its default;
 *  - nmi_samples_over_cold_memory_not_dropped: samples in NMI for pages
 *    with no counter page yet wait and count (refs_dropped 0 without
 *    prealloc);
 *  - rotation: three events on the PMU's two counters are multiplexed,
 *    each running less than it is enabled;
 *  - machine_feed_says_its_running_share: pebs_running, 100 alone and
 *    less with a third event;
 *  - three_events_on_two_counters_count_the_truth: and a session's
 *    scaled counts, multiplexed so, are the loads it made;
 *  - session_and_machine_feed_exclude: the machine-wide feed and a root
 *    session never share the PMU (EBUSY either way);
 *  - cpu_offline_and_back: CPU 1 taken offline and back while the feed
 *    runs, and its samples count again after.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <linux/refcnt_hub.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "refcnt_helpers.h"
#include "refcnt_counters.h"
#include "harness_filter.h"
#include "hub-map.h"

#define TESTPMU_DIR	"/sys/kernel/refcnt_testpmu"
#define TESTPMU_TYPE	"/sys/bus/event_source/devices/refcnt_testpmu/type"
#define RATE		"/proc/sys/kernel/perf_event_max_sample_rate"
#define PERCENT		"/proc/sys/kernel/perf_cpu_time_max_percent"
#define PEBS_PERIOD	RC_PARAMDIR "/pebs_period"
#define PEBS_LDLAT	RC_PARAMDIR "/pebs_ldlat"
#define PAGES		8
#define LOADS		3000	/* per page and round */
#define PERIOD		64
#define THROTTLE_LINE	"pebs feed: perf throttled its events"

/* One line of /sys/kernel/refcnt_testpmu/stats, 0 if missing. */
static uint64_t testpmu_stat(const char *name)
{
	char buf[1024], *p;
	size_t n = strlen(name);

	if (rc_read_file(TESTPMU_DIR "/stats", buf, sizeof(buf)) < 0)
		return 0;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, n) && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
	return 0;
}

/* The emulated PMU: PEBS-like, every user load and store, or off. */
static int pmu_program(unsigned char *base, uint32_t period)
{
	struct refcnt_hub_control *c = (void *)(base + REFCNT_HUB_CONTROL);
	uint32_t seq = c->seq + 1;
	int k;

	c->refs = 0;
	c->pmu_mode = period ? REFCNT_HUB_PMU_PEBS : REFCNT_HUB_PMU_OFF;
	c->pmu_period = period;
	c->pmu_flags = REFCNT_HUB_PMU_STORES | REFCNT_HUB_PMU_EXCLUDE_KERNEL;
	__atomic_store_n(&c->seq, seq, __ATOMIC_RELEASE);
	for (k = 0; k < 1000; k++) {
		if (__atomic_load_n(&c->seq_applied, __ATOMIC_ACQUIRE) == seq)
			return 0;
		usleep(1000);
	}
	return -1;
}

/* K loads on each of n pages. */
static void loads(char *p, int n, long k)
{
	long i, j;

	for (i = 0; i < k; i++)
		for (j = 0; j < n; j++) {
			long x;

			__asm__ volatile("mov (%1,%2), %0" : "=r"(x)
					 : "r"(p), "r"(j << 12));
		}
}

/* What the hub holds is delivered, and the NMIs it sent are taken. */
static void settle(void)
{
	rc_write_file(RC_FEEDDIR "/hub_sync", "1");
	usleep(200 * 1000);
}

/*
 * ROUNDS rounds of the loads with the emulated PMU on, each delivered,
 * then the PMU off and its last samples taken: 0, or -1 if the device
 * did not take a setting.
 */
static int sampled_loads(unsigned char *base, char *buf, int rounds)
{
	int i;

	if (pmu_program(base, 1))
		return -1;
	for (i = 0; i < rounds; i++) {
		loads(buf, PAGES, LOADS);
		settle();
	}
	if (pmu_program(base, 0))
		return -1;
	settle();
	return 0;
}

FIXTURE(testpmu) {
	unsigned char *base;
	size_t size;
	char *buf;
	struct rc_knob rate, percent, ldlat, pace;
};

FIXTURE_SETUP(testpmu)
{
	cpu_set_t one;
	int err;

	memset(&self->ldlat, 0, sizeof(self->ldlat));
	memset(&self->pace, 0, sizeof(self->pace));
	if (!getenv("REFCNT_TESTPMU_KO"))
		RC_SETUP_SKIP("no refcnt_testpmu.ko: the kernel does not export perf_event_overflow() (the rig's debug kernel does)");
	self->base = hub_map(1, &self->size);
	if (!self->base)
		RC_SETUP_SKIP("no hub device (refcnt-vm --hub)");
	/* Once a boot: perf core warns at a second perf_hw_context PMU. */
	if (!rc_exists(TESTPMU_DIR)) {
		err = rc_load_module("REFCNT_TESTPMU_KO", "");
		ASSERT_EQ(0, err);
	}
	ASSERT_TRUE(rc_exists(TESTPMU_TYPE));
	/* No backlog of the boot's reference stream in the rings. */
	ASSERT_EQ(0, pmu_program(self->base, 0));
	settle();
	/* Every sample on CPU 0's ring, every NMI to CPU 0. */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));
	self->buf = mmap(NULL, PAGES << 12, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, self->buf);
	memset(self->buf, 1, PAGES << 12);
	/* The default rate: the took-too-long logic may have lowered it. */
	ASSERT_EQ(0, rc_knob_set(&self->percent, PERCENT, "25"));
	ASSERT_EQ(0, rc_knob_set(&self->rate, RATE, "100000"));
}

FIXTURE_TEARDOWN(testpmu)
{
	if (self->base)
		pmu_program(self->base, 0);
	rc_write_file(PEBS_PERIOD, "0");
	/* The percent first: at 0 perf refuses a rate. */
	rc_knob_restore(&self->percent);
	rc_knob_restore(&self->rate);
	rc_knob_restore(&self->ldlat);
	rc_knob_restore(&self->pace);
}

struct counts {
	uint64_t records, full, overflows, throttled, stopped;
	uint64_t samples, delivered, pebs_throttled;
};

static void counts(struct counts *c)
{
	c->records = testpmu_stat("records");
	c->full = testpmu_stat("full");
	c->overflows = testpmu_stat("overflows");
	c->throttled = testpmu_stat("throttled");
	c->stopped = testpmu_stat("stopped");
	c->samples = rc_feed_stat("pebs_samples");
	c->delivered = rc_feed_stat("pebs_delivered");
	c->pebs_throttled = rc_feed_stat("pebs_throttled");
}

/* The feed on the test PMU at PERIOD, a loop of loads, the feed off. */
static void run(struct __test_metadata *_metadata,
		FIXTURE_DATA(testpmu) *self, struct counts *d, int rounds)
{
	struct counts a, b;

	ASSERT_EQ(0, rc_write_file(PEBS_PERIOD, "64"));
	counts(&a);
	ASSERT_EQ(0, sampled_loads(self->base, self->buf, rounds));
	ASSERT_EQ(0, rc_write_file(PEBS_PERIOD, "0"));
	counts(&b);
	d->records = b.records - a.records;
	d->full = b.full - a.full;
	d->overflows = b.overflows - a.overflows;
	d->throttled = b.throttled - a.throttled;
	d->stopped = b.stopped - a.stopped;
	d->samples = b.samples - a.samples;
	d->delivered = b.delivered - a.delivered;
	d->pebs_throttled = b.pebs_throttled - a.pebs_throttled;
	printf("# records %llu (queue full: %llu) overflows %llu throttled %llu stopped %llu; pebs: samples %llu delivered %llu throttled %llu\n",
	       (unsigned long long)d->records, (unsigned long long)d->full,
	       (unsigned long long)d->overflows,
	       (unsigned long long)d->throttled, (unsigned long long)d->stopped,
	       (unsigned long long)d->samples, (unsigned long long)d->delivered,
	       (unsigned long long)d->pebs_throttled);
}

/*
 * Every load of the loop is a record the test PMU gets; each overflow of
 * its events is one sample of refcnt's feed, and each throttle perf
 * reports to the driver is one refcnt counts.
 */
TEST_F_TIMEOUT(testpmu, samples, 300)
{
	struct counts d;

	run(_metadata, self, &d, 1);
	EXPECT_LE((uint64_t)PAGES * LOADS, d.records);
	EXPECT_LT(0ULL, d.overflows);
	EXPECT_EQ(d.overflows, d.samples);
	EXPECT_LT(0ULL, d.delivered);
	EXPECT_EQ(d.throttled, d.pebs_throttled);
}

/*
 * The node just reset has no counter page: the first sample of each set
 * arrives in NMI, which cannot allocate one, so it waits in the CPU's
 * deferral ring and irq_work counts it. Nothing is dropped without
 * prealloc=1, and refs_deferred says what waited.
 */
TEST_F_TIMEOUT(testpmu, nmi_samples_over_cold_memory_not_dropped, 300)
{
	uint64_t dropped0, dropped1, deferred0, deferred1;
	struct counts d;

	ASSERT_EQ(0, rc_reset_node(0));
	ASSERT_EQ(0, rc_stat(0, "refs_dropped", &dropped0));
	ASSERT_EQ(0, rc_stat(0, "refs_deferred", &deferred0));
	run(_metadata, self, &d, 1);
	ASSERT_EQ(0, rc_stat(0, "refs_dropped", &dropped1));
	ASSERT_EQ(0, rc_stat(0, "refs_deferred", &deferred1));
	printf("# node 0: refs_deferred +%llu, refs_dropped +%llu\n",
	       (unsigned long long)(deferred1 - deferred0),
	       (unsigned long long)(dropped1 - dropped0));
	EXPECT_EQ(d.overflows, d.samples);
	EXPECT_LT(deferred0, deferred1);
	EXPECT_EQ(dropped0, dropped1);
}

/*
 * What refcnt-info --json (./tools, as make check's guests have it) says
 * the PEBS/IBS feed's throttled count is; -1 without the tool or the
 * field.
 */
static long long info_throttled(void)
{
	char buf[65536], *p;
	size_t n;
	FILE *f;

	if (access("tools/refcnt-info", X_OK))
		return -1;
	f = popen("tools/refcnt-info --json 2>/dev/null", "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	pclose(f);
	buf[n] = '\0';
	p = strstr(buf, "\"pebs\": {");
	p = p ? strstr(p, "\"throttled\": ") : NULL;
	return p ? strtoll(p + strlen("\"throttled\": "), NULL, 10) : -1;
}

/*
 * At a rate of HZ samples a second perf allows one sample per tick and
 * event (DIV_ROUND_UP(rate, HZ) = 1): every overflow throttles its event
 * (the first of a tick reaches the limit), which then misses the rest of
 * the tick's samples; refcnt counts each throttle, says it in dmesg, and
 * refcnt-info shows the count.
 */
TEST_F_TIMEOUT(testpmu, throttled, 300)
{
	struct counts d;
	/* Any rate up to HZ (250: the debug kernel's guest.config). */
	ASSERT_EQ(0, rc_write_file(RATE, "250"));
	run(_metadata, self, &d, 3);
	EXPECT_LT(0ULL, d.throttled);
	EXPECT_EQ(d.overflows, d.throttled);
	EXPECT_EQ(d.throttled, d.pebs_throttled);
	EXPECT_EQ(d.overflows, d.samples);
	EXPECT_LT(0ULL, d.stopped);
	EXPECT_LE(1, rc_dmesg_count(THROTTLE_LINE));
	if (access("tools/refcnt-info", X_OK))
		printf("# no tools/refcnt-info: its count not checked\n");
	else
		EXPECT_EQ((long long)rc_feed_stat("pebs_throttled"),
			  info_throttled());
}

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/*
 * The emulated PMU off, what the hub holds handed to the test PMU, and
 * every record it queued delivered (paced, that takes a while): 0, or -1
 * after 60 s. Spinning, not sleeping, meanwhile: a task's event takes
 * records only while its task runs, and an idle CPU has no tick (NO_HZ)
 * to start a throttled event again; a real PMU samples only a running
 * CPU. The emulated PMU is off first, or the spin's own loads would
 * keep the queue full.
 */
static int deliver_all(unsigned char *base)
{
	long long end = now_ms() + 60 * 1000, next;

	if (pmu_program(base, 0))
		return -1;
	rc_write_file(RC_FEEDDIR "/hub_sync", "1");
	while (testpmu_stat("queued")) {
		if (now_ms() > end)
			return -1;
		/* 10 ms on the CPU between two looks. */
		for (next = now_ms() + 10; now_ms() < next;)
			;
	}
	return 0;
}

/*
 * Throttling's loss, estimated against the truth. The test PMU paced: an
 * NMI PACE_US after the last (or a little more), one record each, each
 * record one sample (the device's period is the feed's): 4 samples a tick (HZ 250)
 * against perf's RATE_LOSS / HZ = 2, so each tick the event is throttled
 * at its second sample and misses two. (Slower than a PMU: an NMI of the
 * debug kernel under TCG takes 0.2 ms, and a pace shorter than that would
 * sample slower than it misses.) The PMU counts what it missed while
 * stopped, the truth; refcnt's pebs_throttle_lost estimates it from the
 * event's rate before each throttle and the time to its next sample
 * (the tick's rest at most). Its accuracy cannot be checked here: the
 * emulated timing is not a PMU's. TCG's timers are late when the host is
 * busy, a late tick's hrtimer catches up in a burst, and beside other
 * guests the PMU's own truth went from 19,072 to 45,504 references
 * between runs of this test, the estimate from -46% to +1,087% off it
 * (2026-11-29; -11% and +2% on a quiet host with an earlier, per-tick
 * form of it). So the test asserts that an estimate comes with the
 * throttles, and prints how far it is from the truth.
 */
#define RATE_LOSS	"500"
#define PACE_US		"1000"
TEST_F_TIMEOUT(testpmu, throttled_loss_matches_truth, 300)
{
	uint64_t lost0, stopped0, counted0, lost, truth, counted;
	struct counts a, b;

	ASSERT_EQ(0, rc_knob_set(&self->pace, TESTPMU_DIR "/pace_us", PACE_US));
	ASSERT_EQ(0, rc_write_file(RATE, RATE_LOSS));
	/*
	 * The limit must stay 2 a tick: perf lowers the rate when its NMIs
	 * take long, as under KASAN they do (0: it never does).
	 */
	ASSERT_EQ(0, rc_write_file(PERCENT, "0"));
	ASSERT_EQ(0, rc_write_file(PEBS_PERIOD, "64"));
	counts(&a);
	lost0 = rc_feed_stat("pebs_throttle_lost");
	stopped0 = testpmu_stat("stopped");
	counted0 = testpmu_stat("counted");
	ASSERT_EQ(0, pmu_program(self->base, PERIOD));
	loads(self->buf, PAGES, 20000);
	ASSERT_EQ(0, deliver_all(self->base));
	ASSERT_EQ(0, rc_write_file(PEBS_PERIOD, "0"));
	counts(&b);
	lost = rc_feed_stat("pebs_throttle_lost") - lost0;
	truth = (testpmu_stat("stopped") - stopped0) * PERIOD;
	counted = (testpmu_stat("counted") - counted0) * PERIOD;
	printf("# throttled %llu times; references counted %llu, missed %llu (truth), estimated lost %llu (%+.1f%%)\n",
	       (unsigned long long)(b.pebs_throttled - a.pebs_throttled),
	       (unsigned long long)counted, (unsigned long long)truth,
	       (unsigned long long)lost,
	       truth ? 100.0 * ((double)lost - truth) / truth : 0.0);
	EXPECT_LT(0ULL, b.pebs_throttled - a.pebs_throttled);
	ASSERT_LT(0ULL, truth);
	EXPECT_LT(0ULL, lost);
}

/*
 * A counting session of this thread on the test PMU at one sample a tick:
 * perf throttles its event, and the session counts each throttle in its
 * RCB_COUNT_STATS, as many as the feed's pebs_throttled grew by (no other
 * event samples meanwhile).
 */
TEST_F_TIMEOUT(testpmu, session_counts_its_throttles, 300)
{
	struct rcb_count c = { .pebs_period = PERIOD };
	struct rcb_count_stats st = { 0 };
	uint64_t before;
	int fd = rc_open_node(0, O_RDONLY), sfd;

	ASSERT_LE(0, fd) TH_LOG("node 0's device: %s", strerror(errno));
	ASSERT_EQ(0, rc_write_file(RATE, "250"));
	before = rc_feed_stat("pebs_throttled");
	sfd = ioctl(fd, RCB_COUNT_START, &c);
	ASSERT_LE(0, sfd) TH_LOG("RCB_COUNT_START: %s", strerror(errno));
	ASSERT_EQ(0, sampled_loads(self->base, self->buf, 5));
	ASSERT_EQ(0, ioctl(sfd, RCB_COUNT_STATS, &st));
	if (!st.samples) {
		/*
		 * Seen once in eight runs (make check, 2026-11-29): a window
		 * in which the session's event took no sample at all, cause
		 * not yet known. One window more, said; a session that never
		 * samples still fails.
		 */
		printf("# session: no sample in the first window: one more\n");
		ASSERT_EQ(0, sampled_loads(self->base, self->buf, 5));
		ASSERT_EQ(0, ioctl(sfd, RCB_COUNT_STATS, &st));
	}
	printf("# session: samples %llu delivered %llu throttled %llu; pebs_throttled +%llu\n",
	       (unsigned long long)st.samples, (unsigned long long)st.delivered,
	       (unsigned long long)st.throttled,
	       (unsigned long long)(rc_feed_stat("pebs_throttled") - before));
	EXPECT_LT(0ULL, st.samples);
	EXPECT_LT(0ULL, st.throttled);
	EXPECT_LE(st.throttled, st.samples);
	EXPECT_EQ(rc_feed_stat("pebs_throttled") - before, st.throttled);
	close(sfd);
	close(fd);
}

/* The number after "\"KEY\": " in the PEBS/IBS feed's entry of @path. */
static double report_feed_value(const char *path, const char *key)
{
	char buf[65536], k[64], *p;
	int n = rc_read_file(path, buf, sizeof(buf));

	if (n < 0)
		return -1;
	snprintf(k, sizeof(k), "\"%s\": ", key);
	p = strstr(buf, "{\"name\": \"pebs\"");
	p = p ? strstr(p, k) : NULL;
	return p ? strtod(p + strlen(k), NULL) : -1;
}

/* The first "\"throttled\": N" after the PEBS/IBS feed's name in @path. */
static long long report_throttled(const char *path)
{
	return (long long)report_feed_value(path, "throttled");
}

/*
 * refcnt-run (./tools, as make check's guests have it) says in its report
 * how often perf throttled the PEBS/IBS feed during its run: in the JSON
 * under the feed, with the share of every CPU's time in the run it took
 * at most (1/HZ a throttle), and lines under it in the text.
 */
TEST_F_TIMEOUT(testpmu, refcnt_run_says_throttled, 300)
{
	char txt[65536];
	double share;
	pid_t pid;
	int i, status;

	if (access("tools/refcnt-run", X_OK))
		SKIP(return, "no tools/refcnt-run here");
	ASSERT_EQ(0, rc_write_file(RATE, "250"));
	ASSERT_EQ(0, rc_write_file(PEBS_PERIOD, "64"));
	ASSERT_EQ(0, pmu_program(self->base, 1));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		execl("tools/refcnt-run", "refcnt-run", "-q", "--no-track",
		      "--json-output=/tmp/testpmu-run.json",
		      "-o", "/tmp/testpmu-run.txt", "--", "sleep", "4",
		      (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 3; i++) {
		loads(self->buf, PAGES, LOADS);
		settle();
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, pmu_program(self->base, 0));
	ASSERT_EQ(0, rc_write_file(PEBS_PERIOD, "0"));
	EXPECT_EQ(0, status);
	EXPECT_LT(0, report_throttled("/tmp/testpmu-run.json"));
	share = report_feed_value("/tmp/testpmu-run.json", "throttled_share");
	EXPECT_LT(0, share);
	EXPECT_GE(1, share);
	ASSERT_LT(0, rc_read_file("/tmp/testpmu-run.txt", txt, sizeof(txt)));
	EXPECT_NE(NULL, strstr(txt, "perf throttled its events"));
	EXPECT_NE(NULL, strstr(txt, "throttled: at most "));
}

static int cpu_is_intel(void)
{
	char buf[4096];

	return rc_read_file("/proc/cpuinfo", buf, sizeof(buf)) > 0 &&
	       strstr(buf, "GenuineIntel");
}

/*
 * The safe minimum period as refcnt-run derives it: the CPUs' top clock
 * (cpufreq's, else /proc/cpuinfo's highest "cpu MHz") over @rate samples
 * a second; 0 if the clock is unknown.
 */
static long round_up(double v)
{
	long n = (long)v;

	return n < v ? n + 1 : n;
}

static long safe_min_period(long rate)
{
	uint64_t khz = 0;
	double mhz, max = 0;
	char line[256];
	FILE *f;

	if (!rc_read_u64("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", &khz) &&
	    khz)
		return round_up(khz * 1e3 / rate);
	f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "cpu MHz : %lf", &mhz) == 1 && mhz > max)
			max = mhz;
	fclose(f);
	return round_up(max * 1e6 / rate);
}

/*
 * refcnt-run derives the session's safe minimum period from
 * perf_event_max_sample_rate: a --pebs-period below it is refused with
 * one line (exit 125), and the default (10000) is raised to it, said in
 * one line, the session sampling at that period.
 */
TEST_F_TIMEOUT(testpmu, refcnt_run_safe_min_period, 300)
{
	char err[4096], want[256];
	long min;
	int st;

	if (access("tools/refcnt-run", X_OK))
		SKIP(return, "no tools/refcnt-run here");
	ASSERT_EQ(0, rc_write_file(RATE, "1000"));
	min = safe_min_period(1000);
	ASSERT_LT(10000, min);
	st = system("tools/refcnt-run -q --feed=pebs --pebs-period=64 -o /dev/null -- true 2>/tmp/testpmu-min.err");
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(125, WEXITSTATUS(st));
	ASSERT_LT(0, rc_read_file("/tmp/testpmu-min.err", err, sizeof(err)));
	snprintf(want, sizeof(want),
		 "--pebs-period=64 is below the safe minimum %ld: perf throttles an event past 1000 samples/s",
		 min);
	EXPECT_NE(NULL, strstr(err, want)) TH_LOG("%s", err);
	EXPECT_EQ(NULL, strchr(err, '\n') ? strchr(strchr(err, '\n') + 1, '\n') : NULL)
		TH_LOG("more than one line: %s", err);

	st = system("tools/refcnt-run --feed=pebs --json-output=/tmp/testpmu-min.json -o /dev/null -- true 2>/tmp/testpmu-min.err");
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));
	ASSERT_LT(0, rc_read_file("/tmp/testpmu-min.err", err, sizeof(err)));
	snprintf(want, sizeof(want),
		 "PEBS/IBS period %ld instead of 10000: the safe minimum at 1000 samples/s",
		 min);
	EXPECT_NE(NULL, strstr(err, want)) TH_LOG("%s", err);
	EXPECT_EQ(min, (long)report_feed_value("/tmp/testpmu-min.json", "weight"));

	/*
	 * Intel's memory-side events come once in a hundred cycles at most:
	 * a hundredth of the minimum (an Intel-vendor guest, refcnt-vm
	 * --qemu-arg -cpu --qemu-arg max,vendor=GenuineIntel).
	 */
	if (!cpu_is_intel())
		return;
	ASSERT_EQ(0, rc_knob_set(&self->ldlat, PEBS_LDLAT, "30"));
	min = safe_min_period(100 * 1000L);
	printf("# Intel, pebs_ldlat 30: safe minimum %ld\n", min);
	st = system("tools/refcnt-run --feed=pebs -o /dev/null -- true 2>/tmp/testpmu-min.err");
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));
	ASSERT_LT(0, rc_read_file("/tmp/testpmu-min.err", err, sizeof(err)));
	snprintf(want, sizeof(want), "PEBS/IBS period %ld instead of 10000", min);
	if (min > 10000) {
		EXPECT_NE(NULL, strstr(err, want)) TH_LOG("%s", err);
	} else {
		EXPECT_EQ(NULL, strstr(err, "instead of 10000")) TH_LOG("%s", err);
	}
}

static int open_event_of(uint32_t type, uint64_t config, pid_t pid, int cpu)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = type,
		.config = config,
		.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED |
			       PERF_FORMAT_TOTAL_TIME_RUNNING,
	};

	return syscall(SYS_perf_event_open, &attr, pid, cpu, -1, 0);
}

/* A CPU-wide event of the test PMU on CPU 0. */
static int open_event(uint32_t type, uint64_t config)
{
	return open_event_of(type, config, -1, 0);
}

/*
 * Three events on two counters: add() refuses the third, perf core
 * rotates them (every PERF_CPU_HRTIMER ms), and each runs part of the
 * time it is enabled: no more than two run at once.
 */
TEST_F_TIMEOUT(testpmu, rotation, 300)
{
	uint64_t v[3][3], type = 0, sum = 0, enabled = 0;
	int fd[3], i;

	ASSERT_EQ(0, rc_read_u64(TESTPMU_TYPE, &type));
	for (i = 0; i < 3; i++) {
		fd[i] = open_event(type, 1);
		ASSERT_LE(0, fd[i]);
	}
	ASSERT_EQ(0, sampled_loads(self->base, self->buf, 5));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ((ssize_t)sizeof(v[i]), read(fd[i], v[i], sizeof(v[i])));
		printf("# event %d: count %llu enabled %llu running %llu\n", i,
		       (unsigned long long)v[i][0], (unsigned long long)v[i][1],
		       (unsigned long long)v[i][2]);
		EXPECT_LT(0ULL, v[i][2]);
		EXPECT_LT(v[i][2], v[i][1]);
		sum += v[i][2];
		if (v[i][1] > enabled)
			enabled = v[i][1];
	}
	/* Read one after the other: 1% for the time between the reads. */
	EXPECT_LE(sum, 2 * enabled + enabled / 100);
	EXPECT_LT(0ULL, v[0][0] + v[1][0] + v[2][0]);
	for (i = 0; i < 3; i++)
		close(fd[i]);
}

/*
 * The machine-wide feed says how much of their time its events ran:
 * alone on the PMU's counters, all of it; with a third event on CPU 0's
 * two counters, perf rotates the three there and refcnt's events on CPU 0
 * run part of it (those on the other CPUs all of it), so the share over
 * the feed's life goes below 100 and stays above 50.
 */
TEST_F_TIMEOUT(testpmu, machine_feed_says_its_running_share, 120)
{
	uint64_t type = 0, alone = 0, shared = 0;
	int fd;

	ASSERT_EQ(0, rc_read_u64(TESTPMU_TYPE, &type));
	ASSERT_EQ(0, rc_write_file(PEBS_PERIOD, "64"));
	usleep(500 * 1000);
	ASSERT_EQ(0, rc_read_u64(RC_FEEDDIR "/pebs_running", &alone));
	fd = open_event(type, 1);
	ASSERT_LE(0, fd) TH_LOG("the third event: %s", strerror(errno));
	sleep(2);
	ASSERT_EQ(0, rc_read_u64(RC_FEEDDIR "/pebs_running", &shared));
	close(fd);
	ASSERT_EQ(0, rc_write_file(PEBS_PERIOD, "0"));
	printf("# pebs_running: alone %llu%%, with a third event on CPU 0 %llu%%\n",
	       (unsigned long long)alone, (unsigned long long)shared);
	EXPECT_EQ(100ULL, alone);
	EXPECT_GT(100ULL, shared);
	EXPECT_LT(50ULL, shared);
}

/*
 * A counting session of this thread over the buffer (its loads and
 * stores events), with a third event of this thread if @third, through
 * MUX_LOADS loads a page, the test PMU paced so that samples come spread
 * over many rotations: the session's totals; how long the third ran of
 * its time in @ran.
 */
#define MUX_LOADS	20000
static void mux_session(struct __test_metadata *_metadata,
			FIXTURE_DATA(testpmu) *self, bool third,
			struct rcb_count_totals *t, double *ran)
{
	struct rcb_count_range r = { (uintptr_t)self->buf, PAGES << 12 };
	struct rcb_count c = {
		.pebs_period = PERIOD, .flags = RCB_COUNT_THREAD,
		.ranges = (uintptr_t)&r, .nr_ranges = 1,
	};
	struct rcb_count_totals tt[2];
	struct rcb_count_read rd = { .totals = (uintptr_t)tt, .nr_totals = 2 };
	struct rcb_count_stats st = { 0 };
	int fd = rc_open_node(0, O_RDONLY), sfd, tfd = -1;
	uint64_t type = 0, v[3] = { 0 };

	ASSERT_LE(0, fd) TH_LOG("node 0's device: %s", strerror(errno));
	ASSERT_EQ(0, rc_read_u64(TESTPMU_TYPE, &type));
	sfd = ioctl(fd, RCB_COUNT_START, &c);
	ASSERT_LE(0, sfd) TH_LOG("RCB_COUNT_START: %s", strerror(errno));
	if (third) {
		tfd = open_event_of(type, 1, 0, -1);
		ASSERT_LE(0, tfd) TH_LOG("the third event: %s", strerror(errno));
	}
	ASSERT_EQ(0, pmu_program(self->base, PERIOD));
	loads(self->buf, PAGES, MUX_LOADS);
	ASSERT_EQ(0, deliver_all(self->base));
	ASSERT_EQ(0, ioctl(sfd, RCB_COUNT_STATS, &st));
	ASSERT_EQ(0, ioctl(sfd, RCB_COUNT_READ, &rd));
	if (third)
		ASSERT_EQ((ssize_t)sizeof(v), read(tfd, v, sizeof(v)));
	*t = tt[1];
	*ran = v[1] ? (double)v[2] / v[1] : 1;
	printf("# %s: samples %llu (throttled %llu), in the buffer %llu: %llu references\n",
	       third ? "with a third event" : "alone",
	       (unsigned long long)st.samples, (unsigned long long)st.throttled,
	       (unsigned long long)t->samples,
	       (unsigned long long)t->references);
	if (tfd >= 0)
		close(tfd);
	close(sfd);
	close(fd);
}

/*
 * Three events on the two counters, against the truth: the session's
 * loads event and a third event of this thread share a counter by
 * rotation (PERF_CPU_HRTIMER, 4 ms; a CPU-wide third event would always
 * run: perf schedules a CPU's flexible events before a task's), the
 * session's loads event misses the records that come while it is off,
 * and refcnt scales each sample by its event's last round
 * (refcnt_pmu_scale()). The truth is the same session alone on the
 * counters, which the emulation delivers in the same way: within 25%
 * (about 1,600 samples, a third of the records missed; sampling alone
 * would give 2%, but the factor of one round is exact only on average,
 * and -2% to +15% was seen on 6.1 and 6.12 beside other guests, 6.12's
 * always above). Both are printed against the loads the loop made too.
 */
TEST_F_TIMEOUT(testpmu, three_events_on_two_counters_count_the_truth, 300)
{
	uint64_t loads = (uint64_t)PAGES * MUX_LOADS;
	struct rcb_count_totals alone, mux;
	double ran, ran_alone;

	ASSERT_EQ(0, rc_knob_set(&self->pace, TESTPMU_DIR "/pace_us", "1000"));
	/*
	 * No throttling: perf lowers the rate when its NMIs take long, as
	 * under KASAN they do (0: it never lowers it, and refuses a rate).
	 */
	ASSERT_EQ(0, rc_write_file(RATE, "100000"));
	ASSERT_EQ(0, rc_write_file(PERCENT, "0"));
	mux_session(_metadata, self, false, &alone, &ran_alone);
	mux_session(_metadata, self, true, &mux, &ran);
	printf("# the third event ran %.0f%% of its time; references: alone %llu, multiplexed %llu (%+.1f%%), of %llu loads (%+.1f%%, %+.1f%%)\n",
	       100 * ran, (unsigned long long)alone.references,
	       (unsigned long long)mux.references,
	       100.0 * ((double)mux.references - alone.references) /
	       (alone.references ? alone.references : 1),
	       (unsigned long long)loads,
	       100.0 * ((double)alone.references - loads) / loads,
	       100.0 * ((double)mux.references - loads) / loads);
	/* perf multiplexed: the third event ran part of its time. */
	EXPECT_LT(ran, 0.9);
	ASSERT_LT(0ULL, alone.references);
	EXPECT_LE(mux.references, alone.references + alone.references / 4);
	EXPECT_GE(mux.references, alone.references - alone.references / 4);
}

/* A PEBS/IBS counting session of this process, or -errno. */
static int pebs_session(int fd)
{
	struct rcb_count c = { .pebs_period = PERIOD };
	int sfd = ioctl(fd, RCB_COUNT_START, &c);

	return sfd < 0 ? -errno : sfd;
}

/*
 * The machine-wide feed and a session of a caller with CAP_SYS_ADMIN
 * never share the PMU (abi.rst): a session asked for while pebs_period
 * is on gets EBUSY, and pebs_period cannot be turned on while such a
 * session holds the PMU, until it closes.
 */
TEST_F_TIMEOUT(testpmu, session_and_machine_feed_exclude, 120)
{
	int fd = rc_open_node(0, O_RDONLY), sfd;

	ASSERT_LE(0, fd) TH_LOG("node 0's device: %s", strerror(errno));
	ASSERT_EQ(0, rc_write_file(PEBS_PERIOD, "64"));
	EXPECT_EQ(-EBUSY, pebs_session(fd));
	ASSERT_EQ(0, rc_write_file(PEBS_PERIOD, "0"));
	sfd = pebs_session(fd);
	ASSERT_LE(0, sfd) TH_LOG("RCB_COUNT_START: %s", strerror(-sfd));
	EXPECT_EQ(-EBUSY, rc_write_file(PEBS_PERIOD, "64"));
	close(sfd);
	EXPECT_EQ(0, rc_write_file(PEBS_PERIOD, "64"));
	EXPECT_EQ(0, rc_write_file(PEBS_PERIOD, "0"));
	close(fd);
}

#define CPU1_ONLINE	"/sys/devices/system/cpu/cpu1/online"

static int run_on(int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return sched_setaffinity(0, sizeof(one), &one);
}

/*
 * CPU 1 goes offline and comes back while the machine-wide feed runs:
 * perf core removes its event and refcnt's hotplug callbacks make a new
 * one, so loads on CPU 1 after it are sampled and counted again, every
 * overflow of the PMU one sample of the feed throughout.
 */
TEST_F_TIMEOUT(testpmu, cpu_offline_and_back, 300)
{
	struct counts a, b, c;

	if (access(CPU1_ONLINE, W_OK))
		SKIP(return, "CPU 1 cannot go offline here");
	ASSERT_EQ(0, rc_write_file(PEBS_PERIOD, "64"));
	ASSERT_EQ(0, run_on(1));
	counts(&a);
	ASSERT_EQ(0, sampled_loads(self->base, self->buf, 1));
	ASSERT_EQ(0, run_on(0));
	ASSERT_EQ(0, rc_write_file(CPU1_ONLINE, "0"));
	ASSERT_EQ(0, sampled_loads(self->base, self->buf, 1));
	ASSERT_EQ(0, rc_write_file(CPU1_ONLINE, "1"));
	counts(&b);
	ASSERT_EQ(0, run_on(1));
	ASSERT_EQ(0, sampled_loads(self->base, self->buf, 1));
	ASSERT_EQ(0, run_on(0));
	counts(&c);
	ASSERT_EQ(0, rc_write_file(PEBS_PERIOD, "0"));
	printf("# before and while CPU 1 was off: overflows %llu samples %llu; on CPU 1 after: overflows %llu samples %llu\n",
	       (unsigned long long)(b.overflows - a.overflows),
	       (unsigned long long)(b.samples - a.samples),
	       (unsigned long long)(c.overflows - b.overflows),
	       (unsigned long long)(c.samples - b.samples));
	EXPECT_LT(0ULL, b.samples - a.samples);
	EXPECT_EQ(b.overflows - a.overflows, b.samples - a.samples);
	EXPECT_LT(0ULL, c.samples - b.samples);
	EXPECT_EQ(c.overflows - b.overflows, c.samples - b.samples);
}

RC_HARNESS_MAIN
