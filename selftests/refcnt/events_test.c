// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt selftests: the event stream of a node device.
 *
 * read() returns whole 72-byte struct rcb_event records; a buffer smaller
 * than one record is EINVAL; O_NONBLOCK with nothing queued is EAGAIN;
 * poll() says POLLIN when records (or a loss) wait; a blocked reader wakes
 * up for a new record. Records carry consecutive seq numbers and
 * CLOCK_MONOTONIC times. The queue is per node and bounded: with
 * event_queue_len=16 (module reloaded, needs REFCNT_KO) extra events are
 * dropped and counted, and the reader first gets one RCB_EVENT_LOST record
 * with their number, then the queued records in order; MIGRATE records are
 * never dropped: a flood of them reaches the reader as it makes room, and
 * a set crossing again while its record waits unread has it updated in
 * place, so a reader gets one record per set. RCB_EVENT_FORMAT makes an
 * open file return sized struct rcb_event_record records instead, which
 * the reader walks by their size.
 */
#include <signal.h>

#include <linux/refcnt_test.h>

#include "refcnt_counters.h"

#define U64(x)	((unsigned long long)(x))

/* Fold set k of the node's middle range: exactly one FOLD record. */
static int fold_one(const struct rc_dev *d, uint64_t k)
{
	return rc_inject1(d->fd, rcd_set_paddr(d, rcd_mid_set(d, k)), 0,
			  d->info.rcb_abs_threshold, RCB_INJECT_SYNC);
}

FIXTURE(events) {
	struct rc_dev d;
	struct rc_nodes mem;
	int bfd;		/* blocking fd of the same node */
};

FIXTURE_SETUP(events)
{
	self->d.fd = -1;
	self->bfd = -1;
	if (rc_ko_path()) {
		ASSERT_EQ(0, rc_ensure_default());
	}
	ASSERT_TRUE(rc_module_loaded()) TH_LOG("refcnt.ko is not loaded");
	ASSERT_EQ(0, rc_mem_nodes(&self->mem));
	ASSERT_EQ(0, rcd_open_clean(&self->d, self->mem.id[0]));
	self->bfd = rc_open_node(self->d.nid, O_RDONLY);
	ASSERT_LE(0, self->bfd);
}

FIXTURE_TEARDOWN(events)
{
	if (self->bfd >= 0)
		close(self->bfd);
	EXPECT_EQ(0, rcd_close_clean(&self->d));
}

/* Whole records only; less than one record is EINVAL. */
TEST_F(events, whole_records)
{
	const struct rc_dev *d = &self->d;
	unsigned char buf[1000];
	struct rcb_event *ev = (struct rcb_event *)buf;
	int k;

	for (k = 0; k < 3; k++)
		ASSERT_EQ(0, fold_one(d, k));
	errno = 0;
	EXPECT_EQ(-1, read(d->fd, buf, 0));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, read(d->fd, buf, 1));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, read(d->fd, buf, RC_EVENT_SIZE - 1));
	EXPECT_EQ(EINVAL, errno);
	/* Failed reads took nothing; 143 bytes hold one record. */
	EXPECT_EQ(RC_EVENT_SIZE, read(d->fd, buf, 2 * RC_EVENT_SIZE - 1));
	EXPECT_EQ((uint32_t)RCB_EVENT_FOLD, ev[0].type);
	EXPECT_EQ(rcd_mid_set(d, 0), ev[0].set);
	EXPECT_EQ(2 * RC_EVENT_SIZE, read(d->fd, buf, sizeof(buf)));
	EXPECT_EQ(rcd_mid_set(d, 1), ev[0].set);
	EXPECT_EQ(rcd_mid_set(d, 2), ev[1].set);
	errno = 0;
	EXPECT_EQ(-1, read(d->fd, buf, sizeof(buf)));
	EXPECT_EQ(EAGAIN, errno);
	/* A small buffer is EINVAL even when nothing is queued. */
	errno = 0;
	EXPECT_EQ(-1, read(d->fd, buf, 8));
	EXPECT_EQ(EINVAL, errno);
}

static int event_format(int fd, uint32_t version, uint64_t reserved,
			struct rcb_event_format *f)
{
	*f = (struct rcb_event_format){
		.version = version, .reserved = reserved,
	};
	return ioctl(fd, RCB_EVENT_FORMAT, f);
}

/*
 * Sized records on the file that asks, 72-byte ones on the others: an
 * old binary's reader is unchanged. The reader walks records by their
 * size, as one built on a later header would skip fields it does not
 * know.
 */
TEST_F(events, sized_records)
{
	const struct rc_dev *d = &self->d;
	struct rcb_event_format f;
	unsigned char buf[1000];
	const struct rcb_event_record *r;
	struct rcb_event old;
	uint64_t seq0 = 0;
	ssize_t n, at;
	int k = 0;

	/* The format must be one this module writes; inputs that must be 0. */
	EXPECT_EQ(-1, event_format(d->fd, RCB_EVENT_VERSION + 1, 0, &f));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, event_format(d->fd, 1, 1, &f));
	EXPECT_EQ(EINVAL, errno);
	f = (struct rcb_event_format){ .version = 1, .size = 104 };
	EXPECT_EQ(-1, ioctl(d->fd, RCB_EVENT_FORMAT, &f));
	EXPECT_EQ(EINVAL, errno);

	ASSERT_EQ(0, fold_one(d, 0));
	ASSERT_EQ(RC_EVENT_SIZE, read(d->fd, &old, sizeof(old)));
	EXPECT_EQ((uint32_t)RCB_EVENT_FOLD, old.type);
	ASSERT_EQ(0, event_format(d->fd, 1, 0, &f)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(1U, f.version);
	EXPECT_EQ(104U, f.size);
	EXPECT_EQ((size_t)RCB_EVENT_RECORD_SIZE_VER1,
		  sizeof(struct rcb_event_record));

	for (k = 1; k <= 3; k++)
		ASSERT_EQ(0, fold_one(d, k));
	/* A buffer smaller than one record is EINVAL, a 72-byte one too. */
	errno = 0;
	EXPECT_EQ(-1, read(d->fd, buf, RC_EVENT_SIZE));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, read(d->fd, buf, f.size - 1));
	EXPECT_EQ(EINVAL, errno);
	n = read(d->fd, buf, sizeof(buf));
	ASSERT_EQ(3 * (ssize_t)f.size, n);
	k = 1;
	for (at = 0; at < n; at += r->size, k++) {
		r = (const void *)(buf + at);
		ASSERT_LE((uint32_t)RCB_EVENT_RECORD_SIZE_VER1, r->size);
		EXPECT_EQ(1U, r->version);
		EXPECT_EQ((uint32_t)RCB_EVENT_FOLD, r->type);
		EXPECT_EQ(rcd_mid_set(d, k), r->set);
		EXPECT_EQ((uint64_t)d->info.rcb_abs_threshold, r->count);
		EXPECT_EQ(0ULL, r->home_count);
		EXPECT_EQ(d->info.rcb_cnodeid, r->home_cnodeid);
		EXPECT_EQ(0U, r->src_cnodeid);
		EXPECT_EQ(old.seq + k, r->seq);
		EXPECT_LE(old.time_ns, r->time_ns);
		EXPECT_EQ(0ULL, r->reserved[0]);
		EXPECT_EQ(0ULL, r->reserved[1]);
		seq0 = r->seq;
	}
	EXPECT_EQ(4, k);

	/* The format is the open file's: another one still reads 72 bytes. */
	ASSERT_EQ(0, fold_one(d, 4));
	ASSERT_EQ(RC_EVENT_SIZE, read(self->bfd, buf, sizeof(buf)));
	EXPECT_EQ(seq0 + 1, ((struct rcb_event *)buf)->seq);
	/* And back: version 0 is struct rcb_event. */
	ASSERT_EQ(0, event_format(d->fd, 0, 0, &f));
	EXPECT_EQ(0U, f.version);
	EXPECT_EQ((uint32_t)RC_EVENT_SIZE, f.size);
	ASSERT_EQ(0, fold_one(d, 5));
	ASSERT_EQ(RC_EVENT_SIZE, read(d->fd, buf, sizeof(buf)));
	EXPECT_EQ(seq0 + 2, ((struct rcb_event *)buf)->seq);
}

TEST_F(events, nonblock_eagain)
{
	struct rcb_event ev;

	errno = 0;
	EXPECT_EQ(-1, read(self->d.fd, &ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
}

TEST_F(events, poll_ready)
{
	const struct rc_dev *d = &self->d;
	struct pollfd p = { .fd = d->fd, .events = POLLIN | POLLRDNORM };

	EXPECT_EQ(0, poll(&p, 1, 0));
	ASSERT_EQ(0, fold_one(d, 10));
	EXPECT_EQ(1, poll(&p, 1, 0));
	EXPECT_EQ(POLLIN | POLLRDNORM, p.revents);
	p.fd = self->bfd;
	EXPECT_EQ(1, poll(&p, 1, 0)) TH_LOG("another fd of the node");
	EXPECT_EQ(1, rc_drain(d->fd));
	EXPECT_EQ(0, poll(&p, 1, 0));
	p.fd = d->fd;
	EXPECT_EQ(0, poll(&p, 1, 0));
}

struct later {
	const struct rc_dev *d;
	unsigned int delay_ms;
	uint64_t k;
	int err;
};

static void *fold_later(void *arg)
{
	struct later *l = arg;

	usleep(l->delay_ms * 1000);
	l->err = fold_one(l->d, l->k);
	return NULL;
}

/* A poll() waiting for records wakes up when one is queued. */
TEST_F(events, poll_wakes_up)
{
	struct later l = { .d = &self->d, .delay_ms = 300, .k = 11 };
	struct pollfd p = { .fd = self->bfd, .events = POLLIN | POLLRDNORM };
	uint64_t t0 = rc_now_ns(), dt;
	pthread_t t;

	ASSERT_EQ(0, pthread_create(&t, NULL, fold_later, &l));
	EXPECT_EQ(1, poll(&p, 1, 20000));
	dt = rc_now_ns() - t0;
	pthread_join(t, NULL);
	EXPECT_EQ(0, l.err);
	EXPECT_EQ(POLLIN | POLLRDNORM, p.revents);
	EXPECT_GT(15000000000ULL, dt) TH_LOG("woke up only at the timeout");
	EXPECT_EQ(1, rc_drain(self->d.fd));
}

/* A blocking read() waits for a record and returns it. */
TEST_F(events, blocking_read_wakes_up)
{
	struct later l = { .d = &self->d, .delay_ms = 300, .k = 12 };
	struct rcb_event ev[4];
	pthread_t t;
	ssize_t n;

	ASSERT_EQ(0, pthread_create(&t, NULL, fold_later, &l));
	n = read(self->bfd, ev, sizeof(ev));
	pthread_join(t, NULL);
	EXPECT_EQ(0, l.err);
	ASSERT_EQ(RC_EVENT_SIZE, n);
	EXPECT_EQ((uint32_t)RCB_EVENT_FOLD, ev[0].type);
	EXPECT_EQ(rcd_mid_set(&self->d, 12), ev[0].set);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* A signal interrupts a blocked read() (no SA_RESTART): EINTR. */
TEST_F(events, blocking_read_interrupted)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct rcb_event ev;
	pid_t pid;

	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	pid = rc_fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		usleep(300000);
		_exit(kill(getppid(), SIGUSR1) ? 1 : 0);
	}
	errno = 0;
	EXPECT_EQ(-1, read(self->bfd, &ev, sizeof(ev)));
	EXPECT_EQ(EINTR, errno);
	ASSERT_EQ(0, rc_wait(pid));
}

/* Bad buffers: EFAULT. */
TEST_F(events, read_efault)
{
	const struct rc_dev *d = &self->d;
	size_t pg = rc_page_size();
	void *volatile bad = (void *)(uintptr_t)8;
	void *ro;

	ASSERT_EQ(0, fold_one(d, 13));
	errno = 0;
	EXPECT_EQ(-1, read(d->fd, bad, RC_EVENT_SIZE));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(0, fold_one(d, 14));
	ro = mmap(NULL, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(ro != MAP_FAILED);
	errno = 0;
	EXPECT_EQ(-1, read(d->fd, ro, RC_EVENT_SIZE));
	EXPECT_EQ(EFAULT, errno);
	munmap(ro, pg);
	/* The device keeps working. */
	ASSERT_EQ(0, fold_one(d, 15));
	EXPECT_LE(1, rc_drain(d->fd));
}

/* Consecutive seq numbers, CLOCK_MONOTONIC times, in the order raised. */
TEST_F(events, seq_and_time)
{
	const struct rc_dev *d = &self->d;
	struct rcb_event ev[16];
	uint64_t t0, t1;
	int k, n;

	t0 = rc_now_ns();
	for (k = 0; k < 10; k++)
		ASSERT_EQ(0, fold_one(d, 20 + k));
	t1 = rc_now_ns();
	for (n = 0; n < 10; n++)
		ASSERT_EQ(RC_EVENT_SIZE, read(d->fd, &ev[n], RC_EVENT_SIZE));
	for (k = 0; k < 10; k++) {
		EXPECT_EQ(rcd_mid_set(d, 20 + k), ev[k].set);
		EXPECT_LE(t0, ev[k].time_ns);
		EXPECT_GE(t1, ev[k].time_ns);
		if (k) {
			EXPECT_EQ(ev[k - 1].seq + 1, ev[k].seq);
			EXPECT_LE(ev[k - 1].time_ns, ev[k].time_ns);
		}
	}
}

/* One queue per node: shared by the node's open files, not by nodes. */
TEST_F(events, queue_per_node)
{
	const struct rc_dev *d = &self->d;
	struct rc_dev o = { .fd = -1 };
	struct rcb_event ev;

	ASSERT_EQ(0, fold_one(d, 30));
	ASSERT_EQ(RC_EVENT_SIZE, read(self->bfd, &ev, sizeof(ev)));
	errno = 0;
	EXPECT_EQ(-1, read(d->fd, &ev, sizeof(ev))) TH_LOG("read twice");
	EXPECT_EQ(EAGAIN, errno);
	if (self->mem.n < 2)
		SKIP(return, "one node with memory");
	ASSERT_EQ(0, rcd_open(&o, self->mem.id[1]));
	ASSERT_LE(0, rc_drain(o.fd));
	ASSERT_EQ(0, fold_one(d, 31));
	errno = 0;
	EXPECT_EQ(-1, read(o.fd, &ev, sizeof(ev))) TH_LOG("node%d saw node%d's event",
							 o.nid, d->nid);
	EXPECT_EQ(EAGAIN, errno);
	/* Injected through the other node's file, queued on the owner. */
	ASSERT_EQ(0, rc_inject1(o.fd, rcd_set_paddr(d, rcd_mid_set(d, 32)), 0,
				d->info.rcb_abs_threshold, RCB_INJECT_SYNC));
	EXPECT_EQ(0, rc_drain(o.fd));
	EXPECT_EQ(2, rc_drain(d->fd));
	rcd_close(&o);
}

/*
 * Records say who referenced the page only when the feed knew it: a fold
 * raised by a sample (the test module's REFCNT_TEST_SAMPLES, through the
 * PMU feeds' sample code: pid and address known) carries
 * RCB_EVENT_F_CONTEXT with the caller's pid and the sample's address; a
 * later fold of the same set raised by injection (no context) must not
 * carry that stale context, with or without a reset in between.
 */
TEST_F(events, context_only_when_known)
{
	const struct rc_dev *d = &self->d;
	uint64_t set = rcd_mid_set(d, 40);
	uint32_t abs = d->info.rcb_abs_threshold;
	struct refcnt_test_sample smp = {
		.vaddr = 0x7f1234567000ULL + 0x88,
		.paddr = rcd_set_paddr(d, set) + 0x88,
		.src_cnodeid = 0,
		.weight = abs,
	};
	struct refcnt_test_samples f = {
		.samples = (uintptr_t)&smp,
		.nr_samples = 1,
	};
	struct rcb_event ev[4];
	int n, round, tfd = rc_test_open();

	if (tfd == -ENOENT)
		SKIP(return, "no test module (REFCNT_TEST_KO)");
	ASSERT_LE(0, tfd) TH_LOG("%s: %s", RC_TEST_DEV, strerror(-tfd));
	ASSERT_EQ(0, ioctl(tfd, REFCNT_TEST_SAMPLES, &f))
		TH_LOG("REFCNT_TEST_SAMPLES: %s", strerror(errno));
	close(tfd);
	ASSERT_EQ(1U, f.delivered);
	ASSERT_EQ(0, rc_sync(d->fd));
	n = rc_events(d->fd, ev, 4);
	ASSERT_EQ(1, n);
	EXPECT_EQ((uint32_t)RCB_EVENT_FOLD, ev[0].type);
	EXPECT_EQ(set, ev[0].set);
	EXPECT_EQ((uint32_t)RCB_EVENT_F_CONTEXT, ev[0].flags);
	EXPECT_EQ(getpid(), ev[0].pid);
	EXPECT_EQ(smp.vaddr, ev[0].vaddr);

	for (round = 0; round < 2; round++) {
		if (round) {
			ASSERT_EQ(0, rc_reset(d->fd));
			ASSERT_LE(0, rc_drain(d->fd));
		}
		ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, set), 0, abs,
					RCB_INJECT_SYNC));
		n = rc_events(d->fd, ev, 4);
		ASSERT_EQ(1, n);
		EXPECT_EQ(set, ev[0].set);
		EXPECT_EQ(0U, ev[0].flags)
			TH_LOG("%s: injected fold carries context pid %d vaddr 0x%llx",
			       round ? "after RCB_RESET" : "same fold period",
			       ev[0].pid, U64(ev[0].vaddr));
		EXPECT_EQ(0, ev[0].pid);
		EXPECT_EQ(0ULL, ev[0].vaddr);
	}
}

/* ==================================================== queue overflow */

#define SMALL_QUEUE	16

FIXTURE(overflow) {
	struct rc_dev d;
	bool skip;
};

FIXTURE_SETUP(overflow)
{
	struct rc_nodes mem;

	self->d.fd = -1;
	if (!rc_ko_path()) {
		self->skip = true;
		return;
	}
	ASSERT_EQ(0, rc_reload("event_queue_len=16"));
	ASSERT_EQ(0, rc_mem_nodes(&mem));
	ASSERT_EQ(0, rcd_open(&self->d, mem.id[0]));
}

FIXTURE_TEARDOWN(overflow)
{
	rcd_close(&self->d);
	if (!self->skip) {
		EXPECT_EQ(0, rc_ensure_default());
	}
}

/*
 * 100 folds, nothing read, a queue of 16: 84 dropped and counted; the
 * reader gets RCB_EVENT_LOST (count 84) first, then the 16 queued records,
 * seq 0-15, in order. The seq numbers count the dropped events: the next
 * event is number 100.
 */
TEST_F(overflow, lost_record_first)
{
	const struct rc_dev *d = &self->d;
	struct rcb_event ev[128];
	struct rc_stats s;
	uint64_t k;
	int n, i;

	if (self->skip)
		SKIP(return, "REFCNT_KO needed to load with event_queue_len=16");
	for (k = 0; k < 100; k++)
		ASSERT_EQ(0, fold_one(d, k));
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(100ULL - SMALL_QUEUE, s.events_dropped);
	EXPECT_EQ(100ULL, s.folds);

	n = rc_events(d->fd, ev, 128);
	ASSERT_EQ(1 + SMALL_QUEUE, n);
	EXPECT_EQ((uint32_t)RCB_EVENT_LOST, ev[0].type)
		TH_LOG("first record is %s", rc_event_name(ev[0].type));
	EXPECT_EQ(100U - SMALL_QUEUE, ev[0].count);
	EXPECT_EQ(0ULL, ev[0].set);
	EXPECT_EQ(0ULL, ev[0].paddr);
	EXPECT_EQ(0U, ev[0].flags);
	TH_LOG("LOST record seq %llu", U64(ev[0].seq));
	for (i = 0; i < SMALL_QUEUE; i++) {
		EXPECT_EQ((uint32_t)RCB_EVENT_FOLD, ev[1 + i].type);
		EXPECT_EQ((uint64_t)i, ev[1 + i].seq);
		EXPECT_EQ(rcd_mid_set(d, i), ev[1 + i].set);
	}
	ASSERT_EQ(0, rc_events(d->fd, ev, 128));

	ASSERT_EQ(0, fold_one(d, 200));
	ASSERT_EQ(1, rc_events(d->fd, ev, 128));
	EXPECT_EQ((uint32_t)RCB_EVENT_FOLD, ev[0].type);
	EXPECT_EQ(100ULL, ev[0].seq) TH_LOG("seq counts dropped events");
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(100ULL - SMALL_QUEUE, s.events_dropped);
}

/*
 * The LOST record says how many were dropped since the reader last saw
 * one: read it alone, drop 5 more, and the next LOST says 5.
 */
TEST_F(overflow, lost_counts_since_last_report)
{
	const struct rc_dev *d = &self->d;
	struct pollfd p = { .fd = d->fd, .events = POLLIN };
	struct rcb_event ev[64];
	struct rc_stats s;
	uint64_t k;
	int n;

	if (self->skip)
		SKIP(return, "REFCNT_KO needed to load with event_queue_len=16");
	for (k = 0; k < SMALL_QUEUE + 10; k++)
		ASSERT_EQ(0, fold_one(d, k));
	ASSERT_EQ(RC_EVENT_SIZE, read(d->fd, ev, RC_EVENT_SIZE));
	EXPECT_EQ((uint32_t)RCB_EVENT_LOST, ev[0].type);
	EXPECT_EQ(10U, ev[0].count);
	for (k = 0; k < 5; k++)
		ASSERT_EQ(0, fold_one(d, 100 + k));
	EXPECT_EQ(1, poll(&p, 1, 0));
	n = rc_events(d->fd, ev, 64);
	ASSERT_EQ(1 + SMALL_QUEUE, n);
	EXPECT_EQ((uint32_t)RCB_EVENT_LOST, ev[0].type);
	EXPECT_EQ(5U, ev[0].count);
	EXPECT_EQ(0ULL, ev[1].seq);
	EXPECT_EQ((uint64_t)SMALL_QUEUE - 1, ev[SMALL_QUEUE].seq);
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(15ULL, s.events_dropped);
}

/*
 * A flood faster than the reader: one batch folds 40 sets and takes 200
 * others D + 1 past the differential, on a queue of 16. The folds the
 * queue has no room for are dropped (one LOST record, 24); the MIGRATE
 * records are not: each read() that makes room has the module queue the
 * next owed ones (RCB_EVENT_F_LATE), and the reader, only reading and
 * polling, learns about exactly the 200 sets, each once, in set order,
 * with consecutive seq numbers after the folds'.
 */
#define FLOOD_FOLDS	40U
#define FLOOD_SETS	200U

TEST_F(overflow, migrate_flood_reaches_the_reader)
{
	static struct rcb_event ev[FLOOD_SETS + 64];
	static struct rcb_ref refs[FLOOD_FOLDS + FLOOD_SETS];
	const struct rc_dev *d = &self->d;
	struct pollfd p = { .fd = d->fd, .events = POLLIN };
	unsigned int seen[FLOOD_SETS] = { 0 };
	unsigned int home, r, i, got = 0, rounds = 0;
	uint64_t seq, first = rcd_mid_set(d, 200);
	int first_k;
	uint32_t D = 10, abs;
	struct rc_stats s0, s;
	int n, k;

	if (self->skip)
		SKIP(return, "REFCNT_KO needed to load with event_queue_len=16");
	if (d->cps < 2)
		SKIP(return, "one counter per set: no remote node");
	home = rcd_counter(d, d->info.rcb_cnodeid);
	r = rcd_last_cnode(d, (home + 1) % d->cps);
	abs = d->info.rcb_abs_threshold;
	ASSERT_EQ(0, rc_thresholds(d->fd, abs, D));
	ASSERT_EQ(0, rc_stats_read(d->nid, &s0));
	/* Folds in sets below the migrating ones: queued first. */
	for (i = 0; i < FLOOD_FOLDS; i++)
		refs[i] = (struct rcb_ref){ rcd_set_paddr(d, rcd_mid_set(d, i)),
					    d->info.rcb_cnodeid, abs };
	for (i = 0; i < FLOOD_SETS; i++)
		refs[FLOOD_FOLDS + i] = (struct rcb_ref){
			rcd_set_paddr(d, first + i), r, D + 1 };
	ASSERT_EQ(0, rc_inject(d->fd, refs, FLOOD_FOLDS + FLOOD_SETS,
			       RCB_INJECT_SYNC));

	n = read(d->fd, ev, sizeof(ev));
	ASSERT_LE((1 + SMALL_QUEUE) * RC_EVENT_SIZE, n);
	EXPECT_EQ((uint32_t)RCB_EVENT_LOST, ev[0].type);
	EXPECT_EQ((uint32_t)(FLOOD_FOLDS - SMALL_QUEUE), ev[0].count);
	for (i = 1; i <= SMALL_QUEUE; i++)
		EXPECT_EQ((uint32_t)RCB_EVENT_FOLD, ev[i].type);
	/* The MIGRATE records are numbered after all 40 folds */
	seq = ev[1].seq + FLOOD_FOLDS;
	/*
	 * Only read and poll: each read's room brings the next ones. The
	 * service the references raised may run during that first read and
	 * fill the room it makes: then its records are owed ones already.
	 */
	first_k = 1 + SMALL_QUEUE;
	n /= RC_EVENT_SIZE;
	while (got < FLOOD_SETS && rounds++ < 4 * FLOOD_SETS) {
		for (k = first_k; k < n; k++) {
			ASSERT_EQ((uint32_t)RCB_EVENT_MIGRATE, ev[k].type)
				TH_LOG("record %u is %s", got,
				       rc_event_name(ev[k].type));
			ASSERT_EQ(first + got, ev[k].set);
			EXPECT_EQ(RCB_EVENT_F_LATE, ev[k].flags);
			EXPECT_EQ(seq, ev[k].seq);
			EXPECT_EQ(rcd_counter(d, r), ev[k].counter);
			EXPECT_EQ(D + 1, ev[k].count);
			EXPECT_EQ(0U, ev[k].home_count);
			seen[ev[k].set - first]++;
			seq++;
			got++;
		}
		if (got == FLOOD_SETS)
			break;
		ASSERT_EQ(1, poll(&p, 1, 10000))
			TH_LOG("no record for 10 s after %u of %u sets", got,
			       FLOOD_SETS);
		n = rc_events(d->fd, ev, FLOOD_SETS + 64);
		ASSERT_LE(0, n);
		first_k = 0;
	}
	ASSERT_EQ(FLOOD_SETS, got);
	for (i = 0; i < FLOOD_SETS; i++)
		EXPECT_EQ(1U, seen[i]) TH_LOG("set %u", i);
	ASSERT_EQ(0, rc_sync(d->fd));
	ASSERT_EQ(0, rc_events(d->fd, ev, FLOOD_SETS + 64));
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(s0.migrations + FLOOD_SETS, s.migrations);
	EXPECT_EQ(s0.events_dropped + FLOOD_FOLDS - SMALL_QUEUE,
		  s.events_dropped);
	EXPECT_EQ(s0.folds + FLOOD_FOLDS, s.folds);
}

/*
 * Sets that keep crossing faster than the reader reads: 48 sets of one
 * bitmap word cross the differential and fold, four rounds, on a queue
 * of 16, nothing read in between; the last round crosses only. Round one
 * queues 16 MIGRATE records and leaves 32 sets owing one; in later rounds
 * the 16 sets whose record is still queued have it updated in place
 * (coalesced: it keeps its seq, takes no room, drops nothing) and the 32
 * owe theirs still. So the reader gets exactly one record per set, 48,
 * carrying the last round's counts: the 16 coalesced ones as queued, the
 * 32 late ones as it makes room. Only the folds are dropped and counted,
 * and every crossing counts in migrations.
 */
#define COAL_SETS	48U
#define COAL_ROUNDS	4U

TEST_F(overflow, migrate_records_coalesce_per_set)
{
	static struct rcb_event ev[COAL_SETS * COAL_ROUNDS + 64];
	struct rcb_ref refs[COAL_SETS];
	const struct rc_dev *d = &self->d;
	struct pollfd p = { .fd = d->fd, .events = POLLIN };
	unsigned int seen[COAL_SETS] = { 0 };
	unsigned int home, r, i, got = 0, late = 0, rounds = 0;
	uint64_t first, seq0, seq, lost = 0;
	int first_k;
	uint32_t D = 10, abs;
	struct rc_stats s0, s;
	int n, k;

	if (self->skip)
		SKIP(return, "REFCNT_KO needed to load with event_queue_len=16");
	if (d->cps < 2)
		SKIP(return, "one counter per set: no remote node");
	home = rcd_counter(d, d->info.rcb_cnodeid);
	r = rcd_last_cnode(d, (home + 1) % d->cps);
	abs = d->info.rcb_abs_threshold;
	/* One word of the pending bitmaps: its MIGRATE records, then folds */
	first = (rcd_mid_set(d, 0) + 63) & ~63ULL;
	ASSERT_EQ(0, rc_thresholds(d->fd, abs, D));
	ASSERT_EQ(0, rc_stats_read(d->nid, &s0));
	for (k = 0; k < (int)COAL_ROUNDS; k++) {
		for (i = 0; i < COAL_SETS; i++)
			refs[i] = (struct rcb_ref){ rcd_set_paddr(d, first + i), r,
						    k + 1 < (int)COAL_ROUNDS ?
						    abs : D + 1 };
		ASSERT_EQ(0, rc_inject(d->fd, refs, COAL_SETS, RCB_INJECT_SYNC));
	}
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(s0.migrations + COAL_SETS * COAL_ROUNDS, s.migrations);
	EXPECT_EQ(s0.folds + COAL_SETS * (COAL_ROUNDS - 1), s.folds);
	EXPECT_EQ(s0.events_dropped + COAL_SETS * (COAL_ROUNDS - 1),
		  s.events_dropped);

	n = read(d->fd, ev, sizeof(ev));
	ASSERT_LE((1 + SMALL_QUEUE) * RC_EVENT_SIZE, n);
	ASSERT_EQ((uint32_t)RCB_EVENT_LOST, ev[0].type);
	EXPECT_EQ(COAL_SETS * (COAL_ROUNDS - 1), ev[0].count);
	seq0 = ev[1].seq;
	EXPECT_EQ(seq0 + SMALL_QUEUE, ev[0].seq);
	lost = ev[0].count;
	for (i = 0; i < SMALL_QUEUE; i++) {
		ASSERT_EQ((uint32_t)RCB_EVENT_MIGRATE, ev[1 + i].type);
		ASSERT_EQ(first + i, ev[1 + i].set);
		EXPECT_EQ(seq0 + i, ev[1 + i].seq);
		/* The last round's counts, in place: not late */
		EXPECT_EQ(0U, ev[1 + i].flags);
		EXPECT_EQ(rcd_counter(d, r), ev[1 + i].counter);
		EXPECT_EQ(D + 1, ev[1 + i].count);
		EXPECT_EQ(0U, ev[1 + i].home_count);
		seen[i]++;
		got++;
	}
	/*
	 * The owed ones, late, numbered after every dropped fold; the first
	 * may have come in that read (a service the references raised ran
	 * during it).
	 */
	seq = seq0 + SMALL_QUEUE + lost;
	first_k = 1 + SMALL_QUEUE;
	n /= RC_EVENT_SIZE;
	while (got < COAL_SETS && rounds++ < 4 * COAL_SETS) {
		for (k = first_k; k < n; k++) {
			ASSERT_EQ((uint32_t)RCB_EVENT_MIGRATE, ev[k].type)
				TH_LOG("record %u is %s", got,
				       rc_event_name(ev[k].type));
			ASSERT_EQ(first + got, ev[k].set);
			EXPECT_EQ(RCB_EVENT_F_LATE, ev[k].flags);
			EXPECT_EQ(seq++, ev[k].seq);
			EXPECT_EQ(rcd_counter(d, r), ev[k].counter);
			EXPECT_EQ(D + 1, ev[k].count);
			seen[ev[k].set - first]++;
			got++;
			late++;
		}
		if (got == COAL_SETS)
			break;
		ASSERT_EQ(1, poll(&p, 1, 10000))
			TH_LOG("no record for 10 s after %u of %u sets", got,
			       COAL_SETS);
		n = rc_events(d->fd, ev, COAL_SETS * COAL_ROUNDS + 64);
		ASSERT_LE(0, n);
		first_k = 0;
	}
	ASSERT_EQ(COAL_SETS, got);
	EXPECT_EQ(COAL_SETS - SMALL_QUEUE, late);
	for (i = 0; i < COAL_SETS; i++)
		EXPECT_EQ(1U, seen[i]) TH_LOG("set %u", i);
	ASSERT_EQ(0, rc_sync(d->fd));
	ASSERT_EQ(0, rc_events(d->fd, ev, COAL_SETS * COAL_ROUNDS + 64));
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(s0.events_dropped + COAL_SETS * (COAL_ROUNDS - 1),
		  s.events_dropped);
	EXPECT_EQ(s0.migrations + COAL_SETS * COAL_ROUNDS, s.migrations);
}

TEST_HARNESS_MAIN
