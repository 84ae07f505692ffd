// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt selftests: the counters under concurrency.
 *
 * Four threads inject millions of references (random sets of up to four
 * nodes, random source cnodeids, counts 1..3000 -- times 256 with 19-bit
 * counters -- so that sets fold and counters peg all the time) while another thread runs RCB_SYNC, reads the
 * mapped tables and the event queues. Afterwards, for every set and
 * counter: ext + hw + lost == injected, exactly; the mapped tables equal
 * RCB_SETS_READ. With resets racing too, the node totals still add up:
 * references == ext + hw + lost + discarded, and no reference is dropped.
 * And injection against resets in a loop: the same totals, and no kernel
 * report.
 *
 * Runtime is bounded (a few seconds of injection) for slow TCG guests.
 */
#include "refcnt_counters.h"
#include "harness_filter.h"

#define U64(x)		((unsigned long long)(x))
#define MAX_DEVS	4
#define POOL		128	/* sets per node the injectors use */
#define BATCH		32
#define NR_INJECTORS	4
#define MIN_BATCHES	24	/* per thread: 4 x 24 x 32 x 1500 = 4.6M refs */
#define MAX_BATCHES	2000
#define RUN_NS		2500000000ULL

struct stress {
	struct rc_dev d[MAX_DEVS];
	int ndev;
	uint64_t pool[MAX_DEVS][POOL];
	uint32_t *map[MAX_DEVS];
	struct rc_stats s0[MAX_DEVS];
	volatile int stop;
	bool resets;
	uint64_t deadline;
	uint32_t scale;		/* 1 for 11-bit counters, 256 for 19-bit */
};

struct injector {
	struct stress *st;
	int id;
	uint64_t *want;		/* [dev][POOL][cps] */
	uint64_t refs, batches;
	int err;
};

struct reader {
	struct stress *st;
	uint64_t iters, syncs, records, full_sums, regressions;
	uint64_t resets, migrate_odd, fold_zero, sink;
	uint32_t diff;
	int err;
};

static size_t want_idx(const struct stress *st, int dev, int k, unsigned int c)
{
	return ((size_t)dev * POOL + k) * st->d[0].cps + c;
}

static void *inject_thread(void *arg)
{
	struct injector *in = arg;
	struct stress *st = in->st;
	uint64_t seed = 0x9e3779b97f4a7c15ULL * (in->id + 1);
	unsigned int ncn = st->d[0].info.rcb_num_cnodes;
	uint32_t scale = st->scale;
	struct rcb_ref refs[BATCH];

	while (in->batches < MAX_BATCHES &&
	       (in->batches < MIN_BATCHES || rc_now_ns() < st->deadline)) {
		int i, ret;

		for (i = 0; i < BATCH; i++) {
			int dev = rc_rand(&seed) % st->ndev;
			int k = rc_rand(&seed) % POOL;
			unsigned int src = rc_rand(&seed) % ncn;
			uint32_t cnt = (1 + rc_rand(&seed) % 3000) * scale;
			const struct rc_dev *d = &st->d[dev];

			refs[i].paddr = rcd_set_paddr(d, st->pool[dev][k]) +
					rc_rand(&seed) % d->info.rcb_granularity;
			refs[i].src_cnodeid = src;
			refs[i].count = cnt;
			in->want[want_idx(st, dev, k, rcd_counter(d, src))] += cnt;
			in->refs += cnt;
		}
		ret = rc_inject(st->d[in->id % st->ndev].fd, refs, BATCH,
				rc_rand(&seed) % 8 ? 0 : RCB_INJECT_SYNC);
		if (ret) {
			in->err = ret;
			break;
		}
		in->batches++;
	}
	return NULL;
}

/* RCB_SYNC, read the mappings (extended counters never go down without a
 * reset), drain the events, and reset now and then if asked to. */
static void *read_thread(void *arg)
{
	struct reader *r = arg;
	struct stress *st = r->st;
	uint32_t *last[MAX_DEVS];
	uint64_t seed = 42, next_reset = rc_now_ns();
	unsigned int cps = st->d[0].cps;
	int dev;

	for (dev = 0; dev < st->ndev; dev++) {
		last[dev] = calloc(POOL * cps, sizeof(uint32_t));
		if (!last[dev]) {
			r->err = -ENOMEM;
			return NULL;
		}
	}
	while (!st->stop) {
		struct rcb_event ev[64];
		const struct rc_dev *d;
		int k, n, i;
		unsigned int c;

		dev = r->iters % st->ndev;
		d = &st->d[dev];
		if (r->iters % 2 == 0) {
			if (rc_sync(d->fd)) {
				r->err = -errno;
				break;
			}
			r->syncs++;
		}
		for (k = 0; k < POOL; k++) {
			const uint32_t *m = st->map[dev] + st->pool[dev][k] * cps;

			for (c = 0; c < cps; c++) {
				uint32_t v = m[c];

				if (!st->resets && v < last[dev][k * cps + c])
					r->regressions++;
				last[dev][k * cps + c] = v;
			}
		}
		if (r->iters % 16 == 0) {
			uint64_t i2, sum = 0, nwords = d->info.rcb_sw_sets * cps;

			for (i2 = 0; i2 < nwords; i2++)
				sum += st->map[dev][i2];
			r->full_sums++;
			r->sink += sum;
		}
		n = rc_events(d->fd, ev, 64);
		if (n < 0) {
			r->err = n;
			break;
		}
		for (i = 0; i < n; i++) {
			if (ev[i].type == RCB_EVENT_MIGRATE &&
			    ev[i].count <= (uint64_t)ev[i].home_count + r->diff)
				r->migrate_odd++;
			if (ev[i].type == RCB_EVENT_FOLD && !ev[i].count)
				r->fold_zero++;
		}
		r->records += n;
		if (st->resets && rc_now_ns() >= next_reset) {
			if (rc_reset(st->d[rc_rand(&seed) % st->ndev].fd)) {
				r->err = -errno;
				break;
			}
			r->resets++;
			next_reset = rc_now_ns() + 20000000 + rc_rand(&seed) % 30000000;
		}
		r->iters++;
	}
	for (dev = 0; dev < st->ndev; dev++)
		free(last[dev]);
	return NULL;
}

FIXTURE(stress) {
	struct stress st;
};

FIXTURE_SETUP(stress)
{
	struct stress *st = &self->st;
	struct rc_nodes mem;
	int i, k;

	for (i = 0; i < MAX_DEVS; i++)
		st->d[i].fd = -1;
	if (rc_ko_path()) {
		ASSERT_EQ(0, rc_ensure_default());
	}
	ASSERT_TRUE(rc_module_loaded()) TH_LOG("refcnt.ko is not loaded");
	ASSERT_EQ(0, rc_mem_nodes(&mem));
	st->ndev = mem.n < MAX_DEVS ? mem.n : MAX_DEVS;
	for (i = 0; i < st->ndev; i++) {
		struct rc_dev *d = &st->d[i];
		uint64_t sets, start;

		ASSERT_EQ(0, rcd_open_clean(d, mem.id[i]));
		sets = d->info.rcb_sw_sets;
		ASSERT_LE((uint64_t)POOL, sets);
		/* Spread over the table: a stride coprime to nothing small. */
		start = (i * 977) % sets;
		for (k = 0; k < POOL; k++)
			st->pool[i][k] = (start + (uint64_t)k * (sets / POOL)) % sets;
		st->map[i] = mmap(NULL, d->info.rcb_len, PROT_READ, MAP_SHARED,
				  d->fd, 0);
		ASSERT_TRUE(st->map[i] != MAP_FAILED);
		ASSERT_EQ(0, rc_stats_read(d->nid, &st->s0[i]));
	}
	st->scale = (st->d[0].info.rcb_hw_counter_max + 1) / 2048;
}

FIXTURE_TEARDOWN(stress)
{
	struct stress *st = &self->st;
	int i;

	for (i = 0; i < st->ndev; i++) {
		if (st->map[i] && st->map[i] != MAP_FAILED)
			munmap(st->map[i], st->d[i].info.rcb_len);
		EXPECT_EQ(0, rcd_close_clean(&st->d[i]));
	}
}

/* Run the injectors and the reader; sum what the injectors delivered. */
static void run(struct __test_metadata *_metadata, struct stress *st,
		uint64_t *want, struct reader *r)
{
	struct injector in[NR_INJECTORS];
	size_t nwant = (size_t)st->ndev * POOL * st->d[0].cps, j;
	pthread_t ti[NR_INJECTORS], tr;
	uint64_t refs = 0, batches = 0, t0 = rc_now_ns();
	int i;

	memset(in, 0, sizeof(in));
	st->stop = 0;
	st->deadline = t0 + RUN_NS;
	r->st = st;
	ASSERT_EQ(0, pthread_create(&tr, NULL, read_thread, r));
	for (i = 0; i < NR_INJECTORS; i++) {
		in[i].st = st;
		in[i].id = i;
		in[i].want = calloc(nwant, sizeof(uint64_t));
		ASSERT_TRUE(in[i].want != NULL);
		ASSERT_EQ(0, pthread_create(&ti[i], NULL, inject_thread, &in[i]));
	}
	for (i = 0; i < NR_INJECTORS; i++)
		pthread_join(ti[i], NULL);
	st->stop = 1;
	pthread_join(tr, NULL);
	for (i = 0; i < NR_INJECTORS; i++) {
		EXPECT_EQ(0, in[i].err) TH_LOG("injector %d: %s", i,
					       strerror(-in[i].err));
		for (j = 0; j < nwant; j++)
			want[j] += in[i].want[j];
		refs += in[i].refs;
		batches += in[i].batches;
		free(in[i].want);
	}
	EXPECT_EQ(0, r->err) TH_LOG("reader: %s", strerror(-r->err));
	TH_LOG("%d nodes, counts 1..3000 x %u, %llu references in %llu batches of %d in %.2f s; reader: %llu rounds, %llu RCB_SYNC, %llu full mmap sums, %llu records, %llu resets",
	       st->ndev, st->scale, U64(refs), U64(batches), BATCH,
	       (rc_now_ns() - t0) / 1e9, U64(r->iters), U64(r->syncs),
	       U64(r->full_sums), U64(r->records), U64(r->resets));
	EXPECT_LE(1000000ULL, refs) TH_LOG("not millions of references");
	if (r->migrate_odd || r->fold_zero)
		TH_LOG("note: %llu MIGRATE records with count <= home_count + diff, %llu FOLD records with count 0",
		       U64(r->migrate_odd), U64(r->fold_zero));
}

/* All counts of one node, after RCB_SYNC. */
struct node_counts {
	uint32_t *hw, *ext, *lost;
	uint64_t nwords, sum_hw, sum_ext, sum_lost;
};

static void read_node(struct __test_metadata *_metadata,
		      const struct rc_dev *d, struct node_counts *n)
{
	uint64_t i;

	n->nwords = d->info.rcb_sw_sets * d->cps;
	n->hw = malloc(n->nwords * 4);
	n->ext = malloc(n->nwords * 4);
	n->lost = malloc(n->nwords * 4);
	ASSERT_TRUE(n->hw && n->ext && n->lost);
	ASSERT_EQ(0, rc_sync(d->fd));
	ASSERT_EQ(0, rc_read_sets(d->fd, 0, d->info.rcb_sw_sets, n->hw, n->ext,
				  n->lost));
	n->sum_hw = n->sum_ext = n->sum_lost = 0;
	for (i = 0; i < n->nwords; i++) {
		n->sum_hw += n->hw[i];
		n->sum_ext += n->ext[i];
		n->sum_lost += n->lost[i];
	}
}

static void free_node(struct node_counts *n)
{
	free(n->hw);
	free(n->ext);
	free(n->lost);
}

/*
 * No resets: every counter of every set adds up exactly, untouched sets
 * stay zero, the mappings equal RCB_SETS_READ, and the mapped extended
 * counters never went down while the injectors ran.
 */
TEST_F_TIMEOUT(stress, invariant_under_concurrency, 300)
{
	struct stress *st = &self->st;
	unsigned int cps = st->d[0].cps;
	struct reader r = { 0 };
	uint64_t *want;
	int dev, k;

	/* A differential threshold too, for migration events. */
	for (dev = 0; dev < st->ndev; dev++)
		ASSERT_EQ(0, rc_thresholds(st->d[dev].fd,
					   st->d[dev].info.rcb_abs_threshold, 200));
	r.diff = 200;
	want = calloc((size_t)st->ndev * POOL * cps, sizeof(uint64_t));
	ASSERT_TRUE(want != NULL);
	run(_metadata, st, want, &r);
	EXPECT_EQ(0ULL, r.regressions) TH_LOG("a mapped extended counter went down");

	for (dev = 0; dev < st->ndev; dev++) {
		const struct rc_dev *d = &st->d[dev];
		uint64_t total = 0, msum = 0, i, bad = 0;
		struct node_counts n;
		struct rc_stats s;
		char *touched;

		read_node(_metadata, d, &n);
		touched = calloc(d->info.rcb_sw_sets, 1);
		ASSERT_TRUE(touched != NULL);
		for (k = 0; k < POOL; k++) {
			uint64_t set = st->pool[dev][k];
			unsigned int c;

			touched[set] = 1;
			for (c = 0; c < cps; c++) {
				uint64_t w = want[want_idx(st, dev, k, c)];
				uint64_t x = set * cps + c;
				uint64_t got = (uint64_t)n.ext[x] + n.hw[x] +
					       n.lost[x];

				total += w;
				if (got != w && bad++ < 5) {
					EXPECT_EQ(w, got)
						TH_LOG("node%d set %llu counter %u: ext %u hw %u lost %u",
						       d->nid, U64(set), c, n.ext[x],
						       n.hw[x], n.lost[x]);
				}
				EXPECT_GT(d->info.rcb_abs_threshold, n.hw[x]);
			}
		}
		EXPECT_EQ(0ULL, bad) TH_LOG("node%d: counters that do not add up",
					    d->nid);
		for (i = 0; i < n.nwords; i++) {
			if (!touched[i / cps] &&
			    (n.hw[i] || n.ext[i] || n.lost[i]) && bad++ < 5) {
				EXPECT_EQ(0U, n.hw[i] | n.ext[i] | n.lost[i])
					TH_LOG("node%d word %llu: counts in a set nobody referenced",
					       d->nid, U64(i));
			}
			msum += st->map[dev][i];
		}
		EXPECT_EQ(0, memcmp(st->map[dev], n.ext, n.nwords * 4))
			TH_LOG("node%d: mapped table differs from RCB_SETS_READ",
			       d->nid);
		EXPECT_EQ(n.sum_ext, msum);
		ASSERT_EQ(0, rc_stats_read(d->nid, &s));
		EXPECT_EQ(st->s0[dev].references + total, s.references)
			TH_LOG("node%d", d->nid);
		EXPECT_EQ(total, n.sum_ext + n.sum_hw + n.sum_lost);
		EXPECT_EQ(s.pegged - st->s0[dev].pegged +
			  s.saturated - st->s0[dev].saturated, n.sum_lost);
		EXPECT_EQ(st->s0[dev].refs_dropped, s.refs_dropped);
		TH_LOG("node%d: %llu references, %llu folds, %llu pegged, %llu migrations, %llu events dropped",
		       d->nid, U64(total), U64(s.folds - st->s0[dev].folds),
		       U64(s.pegged - st->s0[dev].pegged),
		       U64(s.migrations - st->s0[dev].migrations),
		       U64(s.events_dropped - st->s0[dev].events_dropped));
		free(touched);
		free_node(&n);
	}
	free(want);
}

/*
 * Resets race with injection, folds and readers: per node, what was
 * delivered is what the counters hold plus what resets discarded:
 * references == ext + hw + lost + discarded. Nothing is dropped; a final
 * reset gives back every table page and leaves the mapping all zero.
 */
TEST_F_TIMEOUT(stress, totals_with_concurrent_resets, 300)
{
	struct stress *st = &self->st;
	unsigned int cps = st->d[0].cps;
	struct reader r = { 0 };
	uint64_t *want;
	int dev, k;

	st->resets = true;
	want = calloc((size_t)st->ndev * POOL * cps, sizeof(uint64_t));
	ASSERT_TRUE(want != NULL);
	run(_metadata, st, want, &r);
	EXPECT_LT(0ULL, r.resets);

	for (dev = 0; dev < st->ndev; dev++) {
		const struct rc_dev *d = &st->d[dev];
		struct node_counts n;
		struct rc_stats s, s2;
		uint64_t total = 0;
		unsigned int c;

		for (k = 0; k < POOL; k++)
			for (c = 0; c < cps; c++)
				total += want[want_idx(st, dev, k, c)];
		read_node(_metadata, d, &n);
		ASSERT_EQ(0, rc_stats_read(d->nid, &s));
		EXPECT_EQ(st->s0[dev].references + total, s.references)
			TH_LOG("node%d", d->nid);
		EXPECT_EQ(s.references - st->s0[dev].references,
			  n.sum_ext + n.sum_hw + n.sum_lost +
			  s.discarded - st->s0[dev].discarded +
			  s.overflowed - st->s0[dev].overflowed)
			TH_LOG("node%d: ext %llu hw %llu lost %llu discarded %llu",
			       d->nid, U64(n.sum_ext), U64(n.sum_hw),
			       U64(n.sum_lost),
			       U64(s.discarded - st->s0[dev].discarded));
		EXPECT_EQ(st->s0[dev].refs_dropped, s.refs_dropped)
			TH_LOG("node%d: references dropped", d->nid);
		free_node(&n);

		ASSERT_EQ(0, rc_reset(d->fd));
		ASSERT_EQ(0, rc_stats_read(d->nid, &s2));
		EXPECT_EQ(st->s0[dev].table_bytes, s2.table_bytes)
			TH_LOG("node%d: table pages left after the last reset",
			       d->nid);
		EXPECT_TRUE(rc_all_zero(st->map[dev], d->info.rcb_len))
			TH_LOG("node%d: mapping not zero after reset", d->nid);
		TH_LOG("node%d: %llu references, %llu discarded by resets",
		       d->nid, U64(total),
		       U64(s2.discarded - st->s0[dev].discarded));
	}
	free(want);
}

/*
 * Injection against resets in a loop: entries of two references each
 * (their delivery reads the counter it prepared) to a set in every page of
 * counters, so that injection keeps finding pages a reset is taking away.
 * Per node: references == ext + hw + lost + discarded + overflowed, none
 * dropped, and no kernel report (a use after free shows under KASAN).
 * For RACE_SECONDS, or $REFCNT_RACE_SECONDS: the window is narrow, and
 * the debug kernel under TCG makes few resets a second.
 */
#define RACE_INJECTORS	6
#define RACE_BATCH	256
#define RACE_SECONDS	3	/* $REFCNT_RACE_SECONDS overrides */

struct race {
	struct stress *st;
	uint64_t seed, refs[MAX_DEVS], calls;
	int err;
};

static void *race_inject(void *arg)
{
	struct race *r = arg;
	struct stress *st = r->st;
	unsigned int ncn = st->d[0].info.rcb_num_cnodes;
	struct rcb_ref refs[RACE_BATCH];

	while (!st->stop) {
		int dev = rc_rand(&r->seed) % st->ndev, i;
		const struct rc_dev *d = &st->d[dev];
		/* One set per page of counters: RCB_WORDS / cps sets apart. */
		uint64_t stride = 1024 / d->cps ?: 1;
		uint64_t pages = (d->info.rcb_sw_sets + stride - 1) / stride;

		for (i = 0; i < RACE_BATCH; i++) {
			uint64_t set = (rc_rand(&r->seed) % pages) * stride;

			refs[i].paddr = rcd_set_paddr(d, set);
			refs[i].src_cnodeid = rc_rand(&r->seed) % ncn;
			refs[i].count = 2;
		}
		r->err = rc_inject(d->fd, refs, RACE_BATCH, 0);
		if (r->err)
			break;
		r->refs[dev] += 2 * RACE_BATCH;
		r->calls++;
	}
	return NULL;
}

static void *race_reset(void *arg)
{
	struct race *r = arg;
	struct stress *st = r->st;

	while (!st->stop) {
		r->err = rc_reset(st->d[r->calls++ % st->ndev].fd);
		if (r->err)
			break;
	}
	return NULL;
}

TEST_F_TIMEOUT(stress, inject_races_reset, 300)
{
	struct stress *st = &self->st;
	struct race in[RACE_INJECTORS], rs = { .st = st };
	pthread_t ti[RACE_INJECTORS], tr;
	int reports = rc_dmesg_count("BUG:"), dev, i;
	const char *env = getenv("REFCNT_RACE_SECONDS");
	unsigned int secs = env ? atoi(env) : RACE_SECONDS;
	uint64_t calls = 0;

	memset(in, 0, sizeof(in));
	st->stop = 0;
	ASSERT_EQ(0, pthread_create(&tr, NULL, race_reset, &rs));
	for (i = 0; i < RACE_INJECTORS; i++) {
		in[i].st = st;
		in[i].seed = 0x9e3779b97f4a7c15ULL * (i + 7);
		ASSERT_EQ(0, pthread_create(&ti[i], NULL, race_inject, &in[i]));
	}
	sleep(secs);
	st->stop = 1;
	for (i = 0; i < RACE_INJECTORS; i++) {
		pthread_join(ti[i], NULL);
		EXPECT_EQ(0, in[i].err) TH_LOG("injector %d: %s", i,
					       strerror(-in[i].err));
		calls += in[i].calls;
	}
	pthread_join(tr, NULL);
	EXPECT_EQ(0, rs.err) TH_LOG("resets: %s", strerror(-rs.err));
	TH_LOG("%llu injections of %d entries against %llu resets",
	       U64(calls), RACE_BATCH, U64(rs.calls));
	EXPECT_LT(0ULL, rs.calls);

	for (dev = 0; dev < st->ndev; dev++) {
		const struct rc_dev *d = &st->d[dev];
		uint64_t total = 0;
		struct node_counts n;
		struct rc_stats s;

		for (i = 0; i < RACE_INJECTORS; i++)
			total += in[i].refs[dev];
		read_node(_metadata, d, &n);
		ASSERT_EQ(0, rc_stats_read(d->nid, &s));
		EXPECT_EQ(st->s0[dev].references + total, s.references)
			TH_LOG("node%d", d->nid);
		EXPECT_EQ(total, n.sum_ext + n.sum_hw + n.sum_lost +
			  s.discarded - st->s0[dev].discarded +
			  s.overflowed - st->s0[dev].overflowed)
			TH_LOG("node%d: ext %llu hw %llu lost %llu discarded %llu",
			       d->nid, U64(n.sum_ext), U64(n.sum_hw),
			       U64(n.sum_lost),
			       U64(s.discarded - st->s0[dev].discarded));
		EXPECT_EQ(st->s0[dev].refs_dropped, s.refs_dropped)
			TH_LOG("node%d: references dropped", d->nid);
		free_node(&n);
	}
	EXPECT_EQ(reports, rc_dmesg_count("BUG:"))
		TH_LOG("a kernel report while injection raced resets");
}

/*
 * A reset waits for its grace period with no lock held (Documentation/
 * design.rst, "Reset and RCU"): RCB_SETS_READ of one set in a loop
 * beside RCB_RESET in a loop, for RESET_READ_NS. A grace period is long
 * beside the read of a set, so many reads run wholly within the first
 * half of a reset: several in the median reset. A reset that held
 * fold_lock across its grace periods let at most one through there (one
 * that came before the reset took the lock); the others waited for it
 * to end.
 */
#define RESET_READ_NS	2000000000ULL
#define RESET_MAX	4096
#define RESET_READS	(1 << 20)

struct reset_reads {
	int fd, cpu;
	volatile int stop;
	uint64_t seq;		/* odd while a reset runs: reset seq / 2 */
	uint64_t start[RESET_MAX], end[RESET_MAX];
	int err;
};

static void *reset_loop(void *arg)
{
	struct reset_reads *rr = arg;
	uint64_t i;

	rr->err = rc_pin(rr->cpu);
	for (i = 0; !rr->err && i < RESET_MAX && !rr->stop; i++) {
		rr->start[i] = rc_now_ns();
		__atomic_add_fetch(&rr->seq, 1, __ATOMIC_SEQ_CST);
		rr->err = rc_reset(rr->fd);
		__atomic_add_fetch(&rr->seq, 1, __ATOMIC_SEQ_CST);
		rr->end[i] = rc_now_ns();
		if (rr->err)
			break;
	}
	return NULL;
}

TEST_F_TIMEOUT(stress, reads_go_on_during_reset, 120)
{
	struct stress *st = &self->st;
	struct reset_reads *rr = calloc(1, sizeof(*rr));
	uint64_t *done = calloc(RESET_READS, 2 * sizeof(uint64_t));
	uint32_t hw[RCB_MAX_COUNTERS], ext[RCB_MAX_COUNTERS];
	uint32_t lost[RCB_MAX_COUNTERS];
	uint64_t reads = 0, within = 0, early = 0, resets, ns = 0, end, i;
	uint64_t *per;
	pthread_t th;
	int cpu;

	ASSERT_TRUE(rr && done);
	/* Apart: neither thread's time is in the other's. */
	if (rc_two_cpus(&cpu, &rr->cpu))
		SKIP(return, "one CPU");
	ASSERT_EQ(0, rc_pin(cpu));
	rr->fd = st->d[0].fd;
	ASSERT_EQ(0, pthread_create(&th, NULL, reset_loop, rr));
	end = rc_now_ns() + RESET_READ_NS;
	while (rc_now_ns() < end && within < RESET_READS) {
		uint64_t s0 = __atomic_load_n(&rr->seq, __ATOMIC_SEQ_CST);

		ASSERT_EQ(0, rc_read_sets(rr->fd, 0, 1, hw, ext, lost));
		reads++;
		/* Begun and ended within reset s0 / 2: when it ended. */
		if (s0 & 1 && s0 == __atomic_load_n(&rr->seq, __ATOMIC_SEQ_CST)) {
			done[2 * within] = s0 / 2;
			done[2 * within++ + 1] = rc_now_ns();
		}
	}
	rr->stop = 1;
	pthread_join(th, NULL);
	ASSERT_EQ(0, rr->err) TH_LOG("RCB_RESET: %s", strerror(-rr->err));
	resets = rr->seq / 2;
	ASSERT_LT(0ULL, resets);
	per = calloc(resets, sizeof(*per));
	ASSERT_NE(NULL, per);
	for (i = 0; i < resets; i++)
		ns += rr->end[i] - rr->start[i];
	for (i = 0; i < within; i++) {
		uint64_t r = done[2 * i];

		if (done[2 * i + 1] - rr->start[r] <
		    (rr->end[r] - rr->start[r]) / 2) {
			per[r]++;
			early++;
		}
	}
	/* The median: the guest's CPUs are threads of a busy host. */
	qsort(per, resets, sizeof(*per), rc_cmp_u64);
	TH_LOG("%llu resets of %.2f ms on average; %llu reads of a set, %llu wholly within a reset, %llu in its first half: %llu in the median reset's",
	       U64(resets), ns / 1e6 / resets, U64(reads), U64(within),
	       U64(early), U64(per[resets / 2]));
	EXPECT_LE(4ULL, per[resets / 2])
		TH_LOG("reads waited for the resets' grace periods");
	free(per);
	free(done);
	free(rr);
}

/*
 * A fatal signal ends an RCB_INJECT batch between its rounds
 * (Documentation/design.rst, "Long operations"). A child's batch of
 * RCB_INJECT_MAX single references, SCHED_IDLE on our CPU (so that it
 * stands still while we look), is killed once the node's references
 * move: when the child is gone, the node has counted a round or so
 * more, fewer references than the batch has entries. A batch that
 * looked for the signal only at its end counted them all.
 */
TEST_F_TIMEOUT(stress, inject_killed_between_rounds, 300)
{
	struct stress *st = &self->st;
	const struct rc_dev *d = &st->d[0];
	uint32_t nr = RCB_INJECT_MAX;
	uint64_t base, seen, end, t0, t1, t2;
	struct rcb_ref *refs;
	int cpu0, cpu, status;
	pid_t pid;

	/* The last CPU; ours too: a host that stops it stops all of us. */
	rc_two_cpus(&cpu0, &cpu);
	refs = rcd_spread_refs(d, nr);
	ASSERT_NE(NULL, refs);
	/* Its counter pages made: the batch's time is the same each run. */
	ASSERT_EQ(0, rc_inject(d->fd, refs, nr, 0));
	ASSERT_EQ(0, rc_pin(cpu));
	ASSERT_EQ(0, rc_stat(d->nid, "references", &base));
	t0 = rc_now_ns();
	/* Our CPU, what we leave of it: none while we look and kill. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(rc_idle(0) ? 2 : rc_inject(d->fd, refs, nr, 0) ? 3 : 0);
	EXPECT_EQ(0, rc_references_past(d->nid, base, 120, &seen));
	t1 = rc_now_ns();
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	t2 = rc_now_ns();
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		TH_LOG("child status %#x", status);
	ASSERT_EQ(0, rc_stat(d->nid, "references", &end));
	TH_LOG("node%d: batch of %u delivering after %.0f ms (%llu counted), killed: gone %.0f ms later with %llu counted",
	       d->nid, nr, (t1 - t0) / 1e6, U64(seen - base),
	       (t2 - t1) / 1e6, U64(end - base));
	EXPECT_GT(base + nr, end)
		TH_LOG("the batch went on to its end after the signal");
	free(refs);
}

RC_HARNESS_MAIN
