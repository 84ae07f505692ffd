// SPDX-License-Identifier: GPL-2.0
/*
 * The refcnt component of PAPI (papi/components/refcnt), through PAPI's
 * own API, in a guest where a session's feed is exact: the hub device at
 * period 1 (refcnt-vm --hub=1; tools/testing/papi-check). Built by make
 * papi against libpapi.a with the component, not by make selftests.
 *
 *  - the component is enabled, and papi's native events are the ones it
 *    documents, one per node;
 *  - PAPI_set_opt(PAPI_DATA_ADDRESS) rounds out to hardware pages with
 *    the offsets refcnt_data_range() computes, PAPI_INSTR_ADDRESS is
 *    exact;
 *  - the counts of a range equal the work done in it, and those of a
 *    librefcnt session counting beside it; the calling thread alone, or
 *    the process;
 *  - each error a PAPI user expects: PAPI_EISRUN, PAPI_EINVAL,
 *    PAPI_ENOSUPP (the fault feed does not tell loads from stores),
 *    PAPI_EPERM (another process's thread without CAP_SYS_PTRACE), and
 *    the component disabled, saying why, for a user who may not open
 *    the devices.
 */
#include "lib_helpers.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <linux/capability.h>

#include <papi.h>

#define PT_INTS		4096		/* the work: 4 pages of ints */
/*
 * Seconds a test may take: under TCG at period 1 a session's first
 * records wait for the hub to drain what its ring held before.
 */
#define PT_TIMEOUT	600

FIXTURE(papi) {
	int cidx;
	int es;
	int codes[8];
	uint64_t gran;
};

static int pt_code(const char *ev)
{
	char name[PAPI_MAX_STR_LEN];
	int code;

	snprintf(name, sizeof(name), "refcnt:::%s", ev);
	if (PAPI_event_name_to_code(name, &code) != PAPI_OK)
		return -1;
	return code;
}

FIXTURE_SETUP(papi)
{
	static const char *const ev[] = {
		"references", "loads", "stores", "local", "remote", "lost",
	};
	const PAPI_component_info_t *ci;
	struct refcnt_node *n;
	struct rcb_info info;
	int nid, i;

	ASSERT_EQ((int)PAPI_VER_CURRENT, PAPI_library_init(PAPI_VER_CURRENT));
	self->cidx = PAPI_get_component_index("refcnt");
	ASSERT_LE(0, self->cidx);
	ci = PAPI_get_component_info(self->cidx);
	ASSERT_NE(NULL, ci);
	ASSERT_EQ(0, ci->disabled) TH_LOG("disabled: %s", ci->disabled_reason);
	for (i = 0; i < 6; i++) {
		self->codes[i] = pt_code(ev[i]);
		ASSERT_LE(0, self->codes[i]) TH_LOG("no refcnt:::%s", ev[i]);
	}
	ASSERT_LT(0, refcnt_nodes(&nid, 1));
	n = refcnt_node_open(nid, 0);
	ASSERT_NE(NULL, n);
	ASSERT_EQ(0, refcnt_node_info(n, &info));
	self->gran = info.rcb_granularity;
	refcnt_node_close(n);
	self->es = PAPI_NULL;
	ASSERT_EQ(PAPI_OK, PAPI_create_eventset(&self->es));
	ASSERT_EQ(PAPI_OK, PAPI_assign_eventset_component(self->es, self->cidx));
}

FIXTURE_TEARDOWN(papi)
{
	PAPI_cleanup_eventset(self->es);
	PAPI_destroy_eventset(&self->es);
	PAPI_shutdown();
}

static int pt_range(int es, int option, uintptr_t start, uintptr_t end,
		    int *start_off, int *end_off)
{
	PAPI_option_t opt;
	int ret;

	memset(&opt, 0, sizeof(opt));
	opt.addr.eventset = es;
	opt.addr.start = (vptr_t)start;
	opt.addr.end = (vptr_t)end;
	opt.addr.start_off = -1;
	opt.addr.end_off = -1;
	ret = PAPI_set_opt(option, &opt);
	if (start_off)
		*start_off = opt.addr.start_off;
	if (end_off)
		*end_off = opt.addr.end_off;
	return ret;
}

/* Stores then loads every int: PT_INTS of each. */
static void __attribute__((noinline)) pt_work(volatile int *a)
{
	int i, s = 0;

	for (i = 0; i < PT_INTS; i++)
		a[i] = i;
	for (i = 0; i < PT_INTS; i++)
		s += a[i];
	__asm__ volatile("" : : "r"(s));
}

/* The native events: the fixed ones and one per node, each described. */
TEST_F_TIMEOUT(papi, native_events, PT_TIMEOUT)
{
	PAPI_event_info_t info;
	int code = PAPI_NATIVE_MASK, seen = 0, nodes = 0, c, nr_nodes;
	char want[PAPI_MAX_STR_LEN];

	nr_nodes = refcnt_num_cnodes();
	ASSERT_EQ(PAPI_OK, PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST,
					       self->cidx));
	do {
		ASSERT_EQ(PAPI_OK, PAPI_get_event_info(code, &info));
		ASSERT_NE(0U, strlen(info.long_descr)) TH_LOG("%s", info.symbol);
		ASSERT_EQ(0, strncmp(info.symbol, "refcnt:::", 9));
		if (!strncmp(info.symbol + 9, "node", 4))
			nodes++;
		seen++;
	} while (PAPI_enum_cmp_event(&code, PAPI_ENUM_EVENTS,
				     self->cidx) == PAPI_OK);
	EXPECT_EQ(6 + nr_nodes, seen);
	EXPECT_EQ(nr_nodes, nodes);
	for (c = 0; c < nr_nodes; c++) {
		snprintf(want, sizeof(want), "refcnt:::node%d",
			 refcnt_cnode_to_nid(c));
		EXPECT_EQ(PAPI_OK, PAPI_event_name_to_code(want, &code))
			TH_LOG("%s", want);
	}
}

/* Data ranges round out to hardware pages, as refcnt_data_range() does. */
TEST_F_TIMEOUT(papi, data_offsets, PT_TIMEOUT)
{
	static const uint64_t cuts[][2] = {
		{ 0, 4096 }, { 16, 65552 }, { 0x18cc, 0x118cc }, { 4095, 4097 },
		{ 8, 16 }, { 100, 8192 },
	};
	char *buf = lh_alloc(32 * rc_page_size(), true);
	struct refcnt_data_range dr;
	unsigned int i;
	int so, eo;

	ASSERT_NE(NULL, buf);
	for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		uintptr_t s = (uintptr_t)buf + cuts[i][0];
		uintptr_t e = (uintptr_t)buf + cuts[i][1];

		ASSERT_EQ(PAPI_OK, pt_range(self->es, PAPI_DATA_ADDRESS, s, e,
					    &so, &eo));
		ASSERT_EQ(0, refcnt_data_range(0, s, e, 0, &dr));
		EXPECT_EQ(s % self->gran, (uint64_t)so);
		EXPECT_EQ(dr.start_off, (uint64_t)so);
		EXPECT_EQ(dr.end_off, (uint64_t)eo);
		EXPECT_EQ(0U, (e + eo) % self->gran);
	}
	/* Both 0 lift the restriction; offsets 0. */
	ASSERT_EQ(PAPI_OK, pt_range(self->es, PAPI_DATA_ADDRESS, 0, 0, &so, &eo));
	EXPECT_EQ(0, so);
	EXPECT_EQ(0, eo);
}

/* Instruction ranges are exact: offsets 0 whatever the alignment. */
TEST_F_TIMEOUT(papi, instr_offsets, PT_TIMEOUT)
{
	uintptr_t f = (uintptr_t)pt_work;
	int so, eo;

	ASSERT_EQ(PAPI_OK, pt_range(self->es, PAPI_INSTR_ADDRESS, f + 3,
				    f + 29, &so, &eo));
	EXPECT_EQ(0, so);
	EXPECT_EQ(0, eo);
}

/*
 * The counts of a data range: the work's stores and loads, exactly (the
 * hub at period 1 sees every reference), the same as a librefcnt session
 * on the same range counting around it; local + remote + lost and the
 * per-node events add up to the references.
 */
TEST_F_TIMEOUT(papi, counts_equal_librefcnt, PT_TIMEOUT)
{
	size_t len = PT_INTS * sizeof(int);
	char *buf = lh_alloc(len, true);
	struct rcb_count_range r = { (uintptr_t)buf, len };
	struct refcnt_count_attr a = {
		.flags = RCB_COUNT_DEVICES | RCB_COUNT_THREAD,
		.data_ranges = &r, .nr_data_ranges = 1,
	};
	struct rcb_count_totals t;
	long long v[6 + RCB_MAX_COUNTERS], nodes = 0;
	int i, nr_nodes = refcnt_num_cnodes(), code, fd;
	char name[PAPI_MAX_STR_LEN];

	ASSERT_NE(NULL, buf);
	for (i = 0; i < 6; i++)
		ASSERT_EQ(PAPI_OK, PAPI_add_event(self->es, self->codes[i]));
	for (i = 0; i < nr_nodes; i++) {
		snprintf(name, sizeof(name), "refcnt:::node%d",
			 refcnt_cnode_to_nid(i));
		ASSERT_EQ(PAPI_OK, PAPI_event_name_to_code(name, &code));
		ASSERT_EQ(PAPI_OK, PAPI_add_event(self->es, code));
	}
	ASSERT_EQ(PAPI_OK, pt_range(self->es, PAPI_DATA_ADDRESS, r.start,
				    r.start + len, NULL, NULL));
	fd = refcnt_count_open(&a);
	ASSERT_LE(0, fd) TH_LOG("refcnt_count_open: %s", strerror(errno));
	ASSERT_EQ(PAPI_OK, PAPI_start(self->es));
	pt_work((int *)buf);
	ASSERT_EQ(PAPI_OK, PAPI_stop(self->es, v));
	ASSERT_EQ(1 + 1, refcnt_count_read(fd, &t, 1));
	refcnt_count_stop(fd);

	EXPECT_EQ(PT_INTS, v[2]);		/* stores */
	EXPECT_EQ(PT_INTS, v[1]);		/* loads */
	EXPECT_EQ(2 * PT_INTS, v[0]);		/* references */
	EXPECT_EQ(v[0], v[3] + v[4] + v[5]);	/* local + remote + lost */
	for (i = 0; i < nr_nodes; i++)
		nodes += v[6 + i];
	EXPECT_EQ(v[0], nodes);
	EXPECT_EQ((long long)t.references, v[0]);
	EXPECT_EQ((long long)t.loads, v[1]);
	EXPECT_EQ((long long)t.stores, v[2]);
	for (i = 0; i < nr_nodes; i++)
		EXPECT_EQ((long long)t.nodes[i], v[6 + i]);
	/*
	 * Both sessions count each reference into the same counters: the
	 * second to take one may find its counter pegged by the first, so
	 * how the references split into local, remote and lost depends on
	 * the order the drain gives them to the two; their sum does not.
	 */
	EXPECT_EQ((long long)(t.local + t.remote + t.lost), v[3] + v[4] + v[5]);
}

/* The same work in another thread: PAPI_GRN_THR does not see it. */
static void *pt_thread(void *arg)
{
	pt_work(arg);
	return NULL;
}

static long long pt_count_thread_work(int es, int *buf)
{
	long long v = -1;
	pthread_t th;

	if (PAPI_start(es) != PAPI_OK)
		return -2;
	if (pthread_create(&th, NULL, pt_thread, buf) ||
	    pthread_join(th, NULL))
		return -3;
	if (PAPI_stop(es, &v) != PAPI_OK)
		return -4;
	return v;
}

TEST_F_TIMEOUT(papi, thread_or_process, PT_TIMEOUT)
{
	size_t len = PT_INTS * sizeof(int);
	char *buf = lh_alloc(len, true);
	PAPI_option_t opt;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(PAPI_OK, PAPI_add_event(self->es, self->codes[0]));
	ASSERT_EQ(PAPI_OK, pt_range(self->es, PAPI_DATA_ADDRESS,
				    (uintptr_t)buf, (uintptr_t)buf + len,
				    NULL, NULL));
	EXPECT_EQ(0, pt_count_thread_work(self->es, (int *)buf));
	memset(&opt, 0, sizeof(opt));
	opt.granularity.eventset = self->es;
	opt.granularity.granularity = PAPI_GRN_PROC;
	ASSERT_EQ(PAPI_OK, PAPI_set_opt(PAPI_GRANUL, &opt));
	EXPECT_EQ(2 * PT_INTS, pt_count_thread_work(self->es, (int *)buf));
}

/* PAPI_reset() and PAPI_read() while running. */
TEST_F_TIMEOUT(papi, read_reset, PT_TIMEOUT)
{
	size_t len = PT_INTS * sizeof(int);
	char *buf = lh_alloc(len, true);
	long long v;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(PAPI_OK, PAPI_add_event(self->es, self->codes[2]));
	ASSERT_EQ(PAPI_OK, pt_range(self->es, PAPI_DATA_ADDRESS,
				    (uintptr_t)buf, (uintptr_t)buf + len,
				    NULL, NULL));
	ASSERT_EQ(PAPI_OK, PAPI_start(self->es));
	pt_work((int *)buf);
	ASSERT_EQ(PAPI_OK, PAPI_read(self->es, &v));
	EXPECT_EQ(PT_INTS, v);
	ASSERT_EQ(PAPI_OK, PAPI_reset(self->es));
	ASSERT_EQ(PAPI_OK, PAPI_read(self->es, &v));
	EXPECT_EQ(0, v);
	pt_work((int *)buf);
	ASSERT_EQ(PAPI_OK, PAPI_stop(self->es, &v));
	EXPECT_EQ(PT_INTS, v);
}

/* An instruction range counts its own code's references only. */
TEST_F_TIMEOUT(papi, instr_range_counts, PT_TIMEOUT)
{
	size_t len = PT_INTS * sizeof(int);
	char *buf = lh_alloc(len, true);
	uintptr_t f = (uintptr_t)pt_work;
	long long v[3];
	int i;

	ASSERT_NE(NULL, buf);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(PAPI_OK, PAPI_add_event(self->es, self->codes[i]));
	ASSERT_EQ(PAPI_OK, pt_range(self->es, PAPI_DATA_ADDRESS,
				    (uintptr_t)buf, (uintptr_t)buf + len,
				    NULL, NULL));
	/* Not pt_work's code: nothing of the range. */
	ASSERT_EQ(PAPI_OK, pt_range(self->es, PAPI_INSTR_ADDRESS,
				    (uintptr_t)pt_thread,
				    (uintptr_t)pt_thread + 1, NULL, NULL));
	ASSERT_EQ(PAPI_OK, PAPI_start(self->es));
	pt_work((int *)buf);
	ASSERT_EQ(PAPI_OK, PAPI_stop(self->es, v));
	EXPECT_EQ(0, v[0]);
	/* pt_work's first byte to the next function's: all of it. */
	ASSERT_EQ(PAPI_OK, pt_range(self->es, PAPI_INSTR_ADDRESS, f, f + 4096,
				    NULL, NULL));
	ASSERT_EQ(PAPI_OK, PAPI_start(self->es));
	pt_work((int *)buf);
	ASSERT_EQ(PAPI_OK, PAPI_stop(self->es, v));
	EXPECT_EQ(2 * PT_INTS, v[0]);
	EXPECT_EQ(PT_INTS, v[1]);
	EXPECT_EQ(PT_INTS, v[2]);
}

TEST_F_TIMEOUT(papi, error_eisrun, PT_TIMEOUT)
{
	ASSERT_EQ(PAPI_OK, PAPI_add_event(self->es, self->codes[0]));
	ASSERT_EQ(PAPI_OK, PAPI_start(self->es));
	EXPECT_EQ(PAPI_EISRUN, pt_range(self->es, PAPI_DATA_ADDRESS, 4096,
					8192, NULL, NULL));
	EXPECT_EQ(PAPI_EISRUN, pt_range(self->es, PAPI_INSTR_ADDRESS, 4096,
					8192, NULL, NULL));
	EXPECT_EQ(PAPI_OK, PAPI_stop(self->es, NULL));
}

TEST_F_TIMEOUT(papi, error_einval, PT_TIMEOUT)
{
	EXPECT_EQ(PAPI_EINVAL, pt_range(self->es, PAPI_DATA_ADDRESS, 8192,
					4096, NULL, NULL));
	EXPECT_EQ(PAPI_EINVAL, pt_range(self->es, PAPI_DATA_ADDRESS, 8192,
					8192, NULL, NULL));
	EXPECT_EQ(PAPI_EINVAL, pt_range(self->es, PAPI_INSTR_ADDRESS, 8192,
					4096, NULL, NULL));
	EXPECT_EQ(PAPI_EINVAL, pt_range(self->es, PAPI_INSTR_ADDRESS, 8192,
					8192, NULL, NULL));
	/* Beyond the user address space: refused when the session starts. */
	ASSERT_EQ(PAPI_OK, PAPI_add_event(self->es, self->codes[0]));
	ASSERT_EQ(PAPI_OK, pt_range(self->es, PAPI_DATA_ADDRESS,
				    UINTPTR_MAX - 8191, UINTPTR_MAX - 4095,
				    NULL, NULL));
	EXPECT_EQ(PAPI_EINVAL, PAPI_start(self->es));
}

/*
 * The tests in a child of their own: PAPI initialised there, as another
 * user or feed. Each child's PAPI_library_init() opens a session, which
 * first drains what the hub's rings hold (PAPI's own start-up, at period
 * 1): the same timeout as the fixture's.
 */
FIXTURE(papi_child) {
	int unused;
};

FIXTURE_SETUP(papi_child)
{
}

FIXTURE_TEARDOWN(papi_child)
{
}

/* In a child: the fault feed does not tell loads from stores. */
TEST_F_TIMEOUT(papi_child, enosupp_fault_feed, PT_TIMEOUT)
{
	pid_t pid = rc_fork();

	ASSERT_LE(0, pid);
	if (!pid) {
		int es = PAPI_NULL, code, ok = 1;

		setenv("PAPI_REFCNT_FEED", "fault", 1);
		if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT ||
		    PAPI_create_eventset(&es) != PAPI_OK)
			_exit(2);
		code = pt_code("loads");
		ok &= code >= 0 && PAPI_add_event(es, code) == PAPI_ENOSUPP;
		code = pt_code("stores");
		ok &= code >= 0 && PAPI_add_event(es, code) == PAPI_ENOSUPP;
		code = pt_code("references");
		ok &= code >= 0 && PAPI_add_event(es, code) == PAPI_OK;
		_exit(ok ? 0 : 1);
	}
	EXPECT_EQ(0, rc_wait(pid));
}

/* Drop CAP_SYS_PTRACE from the effective set (the harness runs as root). */
static int pt_drop_ptrace(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[CAP_SYS_PTRACE / 32].effective &= ~(1U << (CAP_SYS_PTRACE % 32));
	return syscall(SYS_capset, &h, d) ? -1 : 0;
}

/* Another process's thread without CAP_SYS_PTRACE: PAPI_EPERM. */
TEST_F_TIMEOUT(papi_child, eperm_attach, PT_TIMEOUT)
{
	pid_t pid = rc_fork();

	ASSERT_LE(0, pid);
	if (!pid) {
		int es = PAPI_NULL, code;

		if (pt_drop_ptrace() ||
		    PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT ||
		    PAPI_create_eventset(&es) != PAPI_OK)
			_exit(2);
		code = pt_code("references");
		if (code < 0 || PAPI_add_event(es, code) != PAPI_OK ||
		    PAPI_attach(es, 1) != PAPI_OK)
			_exit(3);
		_exit(PAPI_start(es) == PAPI_EPERM ? 0 : 1);
	}
	EXPECT_EQ(0, rc_wait(pid));
}

/* A user who may not open the devices: disabled, saying why. */
TEST_F_TIMEOUT(papi_child, disabled_eperm, PT_TIMEOUT)
{
	pid_t pid = rc_fork();

	ASSERT_LE(0, pid);
	if (!pid) {
		const PAPI_component_info_t *ci;
		int cidx;

		if (setgid(65534) || setuid(65534) ||
		    PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT)
			_exit(2);
		cidx = PAPI_get_component_index("refcnt");
		ci = cidx < 0 ? NULL : PAPI_get_component_info(cidx);
		if (!ci)
			_exit(3);
		printf("# disabled: %s\n", ci->disabled_reason);
		_exit(ci->disabled == PAPI_EPERM &&
		      strstr(ci->disabled_reason, "Permission denied") ? 0 : 1);
	}
	EXPECT_EQ(0, rc_wait(pid));
}

TEST_HARNESS_MAIN
