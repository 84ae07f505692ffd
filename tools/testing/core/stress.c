// SPDX-License-Identifier: GPL-2.0
/*
 * stress: conservation of references under every concurrent user of the
 * core at once. Built three ways (plain, ThreadSanitizer, AddressSanitizer
 * with UndefinedBehaviorSanitizer) by tools/testing/core/Makefile.
 *
 * Threads deliver references (one of them as if in NMI, where a missing
 * counter page drops the reference, one as injection does: its pages made
 * first by refcnt_node_prepare(), which sleeps outside RCU while resets
 * free pages) while others sync, reset, change thresholds and read the
 * tables and event queues, and the worker thread runs the irq_work and
 * fold work as they are raised. At the end, for
 * every node, with held = extended + hardware + lost + discarded +
 * overflowed:
 *
 *   references = held
 *   delivered = references + refs_dropped
 *
 * exactly: refs_dropped holds the references that found no hardware
 * counter page in NMI with the deferral ring full (the others wait there
 * for the irq_work), overflowed the lost references that
 * found no lost-count page (Documentation/admin-guide.rst, statistics).
 *
 * Usage: stress [--seconds N] [--threads N]    exit 0 when conserved
 */
#include <getopt.h>
#include <unistd.h>
#include <uapi/linux/refcnt.h>

#include "machine.h"

#define MiB		(1ULL << 20)
#define NR_NODES	4
#define HOT_SETS	1024	/* few sets: references collide with folds */

static const struct core_spec spec = {
	.nr_online = 5,
	.nr_ranges = 5,
	.ram = {
		{ 0, 4 * MiB, 0 }, { 4 * MiB, 8 * MiB, 1 },
		{ 8 * MiB, 12 * MiB, 0 }, { 16 * MiB, 20 * MiB, 2 },
		{ 20 * MiB, 24 * MiB, 3 },
	},
	.abs_threshold = 64,
	.diff_threshold = 20,
	.event_queue_len = 64,
};

static volatile int stop;

static u64 rnd(u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct referrer {
	pthread_t t;
	u64 seed;
	bool nmi;
	bool inject;
	u64 delivered[NR_NODES];
};

/* As RCB_INJECT delivers: the pages first, where it may sleep. */
static void inject_one(struct refcnt_node *node, u64 set, u64 x)
{
	unsigned int src = (x >> 40) % 5;
	u32 count = 2 + (x >> 32) % 200;

	if (!refcnt_node_prepare(node, set, src, count))
		abort();
	refcnt_node_reference(node, set, src, count, NULL);
}

static void *referrer_main(void *arg)
{
	struct referrer *r = arg;
	struct refcnt_ctx ctx = { .pid = 1 };

	shim_in_nmi = r->nmi;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		u64 x = rnd(&r->seed);
		unsigned int nid = x % NR_NODES;
		struct refcnt_node *node = core_nodes[nid];
		u64 set = (x >> 8) % HOT_SETS;
		/* Mostly single references; now and then enough to peg. */
		u32 count = (x >> 24) % 64 ? 1 + (x >> 32) % 8 : 3000;

		if (r->inject) {
			inject_one(node, set, x);
			r->delivered[nid] += 2 + (x >> 32) % 200;
			continue;
		}
		ctx.vaddr = x;
		if (!refcnt_reference(refcnt_set_paddr(node, set), (x >> 40) % 5,
				      count, (x >> 48) % 2 ? &ctx : NULL))
			abort();
		r->delivered[nid] += count;
	}
	return NULL;
}

static void *syncer_main(void *arg)
{
	u64 seed = 7;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		refcnt_node_sync(core_nodes[rnd(&seed) % NR_NODES]);
	return NULL;
}

static void *resetter_main(void *arg)
{
	u64 seed = 11;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		if (refcnt_node_reset(core_nodes[rnd(&seed) % NR_NODES]))
			abort();
		usleep(3000);
	}
	return NULL;
}

static void *tuner_main(void *arg)
{
	u64 seed = 13;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		u64 x = rnd(&seed);

		if (refcnt_node_set_thresholds(core_nodes[x % NR_NODES],
					       1 + (x >> 8) % 200,
					       (x >> 16) % 50))
			abort();
		usleep(500);
	}
	return NULL;
}

static void *reader_main(void *arg)
{
	static u32 hw[64 * 5], ext[64 * 5], lost[64 * 5];
	struct rcb_event ev[16];
	struct refcnt_stats st;
	u64 seed = 17;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		u64 x = rnd(&seed);
		struct refcnt_node *node = core_nodes[x % NR_NODES];

		refcnt_node_read_sets(node, (x >> 8) % (HOT_SETS - 64), 64,
				      hw, ext, lost);
		core_events_read(node, ev, ARRAY_SIZE(ev));
		refcnt_node_stats(node, &st);
		refcnt_node_table_bytes(node);
	}
	return NULL;
}

/* Everything delivered is somewhere; returns false and says so if not. */
static bool conserved(unsigned int nid, u64 delivered)
{
	struct core_totals t;
	u64 held;

	shim_run_pending();
	refcnt_node_sync(core_nodes[nid]);
	core_totals(core_nodes[nid], &t);
	held = t.hw + t.ext + t.lost + t.st.discarded + t.st.overflowed;
	printf("# node %u: delivered %llu = references %llu + dropped %llu; held %llu (hw %llu ext %llu lost %llu discarded %llu overflowed %llu); folds %llu pegged %llu migrations %llu\n",
	       nid, (unsigned long long)delivered,
	       (unsigned long long)t.st.references,
	       (unsigned long long)t.st.refs_dropped, (unsigned long long)held,
	       (unsigned long long)t.hw, (unsigned long long)t.ext,
	       (unsigned long long)t.lost, (unsigned long long)t.st.discarded,
	       (unsigned long long)t.st.overflowed,
	       (unsigned long long)t.st.folds, (unsigned long long)t.st.pegged,
	       (unsigned long long)t.st.migrations);
	return t.st.references == held &&
	       delivered == t.st.references + t.st.refs_dropped;
}

/*
 * Referrers (the last one "from NMI", the one before it injecting) and the
 * others, for @seconds.
 */
static struct referrer *stress_run(unsigned int nr, unsigned int seconds)
{
	void *(*others[])(void *) = { syncer_main, resetter_main, tuner_main,
				      reader_main };
	pthread_t other[ARRAY_SIZE(others)];
	struct referrer *r = calloc(nr + 1, sizeof(*r));
	unsigned int i;

	if (!r)
		return NULL;
	for (i = 0; i <= nr; i++) {
		r[i].seed = 0x9e3779b97f4a7c15ULL * (i + 1);
		r[i].nmi = i == nr;
		r[i].inject = i == nr - 1 && nr > 1;
		pthread_create(&r[i].t, NULL, referrer_main, &r[i]);
	}
	for (i = 0; i < ARRAY_SIZE(others); i++)
		pthread_create(&other[i], NULL, others[i], NULL);
	sleep(seconds);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i <= nr; i++)
		pthread_join(r[i].t, NULL);
	for (i = 0; i < ARRAY_SIZE(others); i++)
		pthread_join(other[i], NULL);
	return r;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	unsigned int seconds = 4, nr = 3, i, n;
	struct referrer *r;
	bool ok = true;
	int c;

	while ((c = getopt_long(argc, argv, "s:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': seconds = atoi(optarg); break;
		case 't': nr = atoi(optarg); break;
		default:
			printf("usage: %s [--seconds N] [--threads N]\n", argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (nr < 1 || nr > 64) {
		fprintf(stderr, "stress: --threads from 1 to 64\n");
		return 2;
	}
	if (core_boot(&spec)) {
		fprintf(stderr, "stress: cannot boot the fake machine\n");
		return 1;
	}
	shim_worker_start();
	r = stress_run(nr, seconds);
	shim_worker_stop();
	for (n = 0; r && n < NR_NODES; n++) {
		u64 delivered = 0;

		for (i = 0; i <= nr; i++)
			delivered += r[i].delivered[n];
		if (!conserved(n, delivered))
			ok = false;
	}
	printf("%s conservation under %u referrers%s + 1 NMI referrer, sync, reset, thresholds, readers, %us\n",
	       ok && r ? "ok" : "not ok", nr, nr > 1 ? " (one injecting)" : "",
	       seconds);
	free(r);
	core_halt();
	return ok && r ? 0 : 1;
}
