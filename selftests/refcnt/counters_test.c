// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt selftests: the simulated counter hardware, through exact injection.
 *
 * Where injected references land (the set of a physical address, the
 * counter of a cnodeid, groups of 8 above 64 nodes), who may inject, that a
 * bad batch applies nothing, folds at the absolute threshold, pegging and
 * its losses, 11- and 19-bit counters, extended saturation at 2^32-1, the
 * differential (migration) event, ext + hw + lost == injected, the mmap
 * view against the statistics, table memory, the argument checks of
 * RCB_SETS_READ and RCB_THRESHOLDS_SET, and a whole node's RCB_SETS_FOLD
 * ended by SIGKILL.
 *
 * Every test starts from RCB_RESET and default thresholds, and leaves them
 * so. Tests that reload the module (premium=1) need REFCNT_KO; they leave
 * the module loaded with default parameters.
 */
#include <grp.h>
#include <sys/resource.h>

#include "refcnt_counters.h"

/* ------------------------------------------------------------ helpers */

#define U64(x)	((unsigned long long)(x))

/* Expected counts of one set; NULL arrays mean all zero. */
static void check_set(struct __test_metadata *_metadata,
		      const struct rc_dev *d, uint64_t set,
		      const uint32_t *hw, const uint32_t *ext,
		      const uint32_t *lost)
{
	struct rc_set s;
	unsigned int c;

	ASSERT_EQ(0, rcd_read_set(d, set, &s))
		TH_LOG("node%d set %llu: RCB_SETS_READ: %s", d->nid, U64(set),
		       strerror(errno));
	for (c = 0; c < d->cps; c++) {
		EXPECT_EQ(hw ? hw[c] : 0U, s.hw[c])
			TH_LOG("node%d set %llu counter %u: hw", d->nid, U64(set), c);
		EXPECT_EQ(ext ? ext[c] : 0U, s.ext[c])
			TH_LOG("node%d set %llu counter %u: ext", d->nid, U64(set), c);
		EXPECT_EQ(lost ? lost[c] : 0U, s.lost[c])
			TH_LOG("node%d set %llu counter %u: lost", d->nid, U64(set), c);
	}
}

/* One counter set to v in an otherwise zero array. */
static const uint32_t *one(uint32_t *buf, unsigned int c, uint32_t v)
{
	memset(buf, 0, RCB_MAX_COUNTERS * sizeof(*buf));
	buf[c] = v;
	return buf;
}

/* Every field of an event record raised by injected references. */
static void check_event(struct __test_metadata *_metadata,
			const struct rc_dev *d, const struct rcb_event *e,
			uint32_t type, uint64_t set, unsigned int counter,
			uint32_t count, uint32_t home_count)
{
	EXPECT_EQ(type, e->type)
		TH_LOG("event type %s, expected %s", rc_event_name(e->type),
		       rc_event_name(type));
	EXPECT_EQ(0U, e->flags) TH_LOG("%s set %llu: flags (no context was known)",
				       rc_event_name(type), U64(set));
	EXPECT_EQ(set, e->set) TH_LOG("%s: set", rc_event_name(type));
	EXPECT_EQ(rcd_set_paddr(d, set), e->paddr)
		TH_LOG("%s set %llu: paddr is the hardware page base",
		       rc_event_name(type), U64(set));
	EXPECT_EQ(d->info.rcb_cnodeid, e->home_cnodeid)
		TH_LOG("%s: home_cnodeid", rc_event_name(type));
	EXPECT_EQ(counter, e->counter) TH_LOG("%s: counter", rc_event_name(type));
	EXPECT_EQ(counter * d->npc, e->src_cnodeid)
		TH_LOG("%s: src_cnodeid is the counter's first cnodeid",
		       rc_event_name(type));
	EXPECT_EQ(count, e->count) TH_LOG("%s: count", rc_event_name(type));
	EXPECT_EQ(home_count, e->home_count)
		TH_LOG("%s: home_count", rc_event_name(type));
	EXPECT_EQ(0, e->pid) TH_LOG("%s: pid", rc_event_name(type));
	EXPECT_EQ(0ULL, e->vaddr) TH_LOG("%s: vaddr", rc_event_name(type));
}

/*
 * Inject @first references to (@paddr, @src), then @singles more one entry
 * each, in one synchronous batch: nothing is serviced before its end, so
 * single references that find the counter raised and at its maximum peg.
 */
static int inject_then_singly(int fd, uint64_t paddr, uint32_t src,
			      uint32_t first, uint32_t singles)
{
	struct rcb_ref *refs = calloc(singles + 1, sizeof(*refs));
	uint32_t i;
	int ret;

	if (!refs)
		return -ENOMEM;
	for (i = 0; i <= singles; i++)
		refs[i] = (struct rcb_ref){ paddr, src, i ? 1 : first };
	ret = rc_inject(fd, refs, singles + 1, RCB_INJECT_SYNC);
	free(refs);
	return ret;
}

static void log_events(struct __test_metadata *_metadata,
		       const struct rcb_event *ev, int n)
{
	int i;

	for (i = 0; i < n; i++)
		TH_LOG("event %d: %s seq %llu set %llu counter %u count %u home_count %u flags %u",
		       i, rc_event_name(ev[i].type), U64(ev[i].seq),
		       U64(ev[i].set), ev[i].counter, ev[i].count,
		       ev[i].home_count, ev[i].flags);
}

/* ------------------------------------------------------------ fixture */

FIXTURE(counters) {
	struct rc_dev d;
	struct rc_nodes mem;
	struct rc_stats s0;
	uint32_t abs, diff, max;
};

FIXTURE_SETUP(counters)
{
	int ret;

	self->d.fd = -1;
	if (rc_ko_path()) {
		ASSERT_EQ(0, rc_ensure_default());
	}
	ASSERT_TRUE(rc_module_loaded()) TH_LOG("refcnt.ko is not loaded");
	ASSERT_EQ(0, rc_mem_nodes(&self->mem));
	ret = rcd_open_clean(&self->d, self->mem.id[0]);
	ASSERT_EQ(0, ret) TH_LOG("node%d: %s", self->mem.id[0], strerror(-ret));
	self->abs = self->d.info.rcb_abs_threshold;
	self->diff = self->d.info.rcb_diff_threshold;
	self->max = self->d.info.rcb_hw_counter_max;
	ASSERT_EQ(0, rc_stats_read(self->d.nid, &self->s0));
}

FIXTURE_TEARDOWN(counters)
{
	EXPECT_EQ(0, rcd_close_clean(&self->d));
}

/* ------------------------------------------------------ where it lands */

/*
 * Addresses at the start, inside, and at the end of every slot land in
 * set (size of earlier slots + offset) / granularity, and nowhere else.
 */
TEST_F(counters, set_of_paddr_every_slot)
{
	const struct rc_dev *d = &self->d;
	uint64_t gran = d->info.rcb_granularity, total = 0, sum = 0, before = 0;
	uint64_t nwords = d->info.rcb_sw_sets * d->cps, i;
	unsigned int s, k, nslots = d->nslots < 64 ? d->nslots : 64;
	uint32_t *hw;

	for (s = 0; s < nslots; s++) {
		const struct rcb_slot *sl = &d->slots[s];
		uint64_t offs[] = { 0, gran - 1, sl->size / 2, sl->size - gran,
				    sl->size - 1 };

		for (k = 0; k < 5; k++) {
			uint64_t set = (before + offs[k]) / gran;
			unsigned int src = (s + k) % d->info.rcb_num_cnodes;
			unsigned int c = rcd_counter(d, src);
			struct rc_set got;
			uint32_t prev;

			ASSERT_EQ(0, rcd_read_set(d, set, &got));
			prev = got.hw[c];
			ASSERT_EQ(0, rc_inject1(d->fd, sl->base + offs[k], src,
						k + 1, RCB_INJECT_SYNC))
				TH_LOG("slot %u offset 0x%llx: %s", s,
				       U64(offs[k]), strerror(errno));
			ASSERT_EQ(0, rcd_read_set(d, set, &got));
			EXPECT_EQ(prev + k + 1, got.hw[c])
				TH_LOG("slot %u [0x%llx+0x%llx) offset 0x%llx: expected in set %llu counter %u",
				       s, U64(sl->base), U64(sl->size),
				       U64(offs[k]), U64(set), c);
			total += k + 1;
		}
		before += sl->size;
	}

	/* Nothing anywhere else. */
	hw = malloc(nwords * sizeof(*hw));
	ASSERT_TRUE(hw != NULL);
	ASSERT_EQ(0, rc_read_sets(d->fd, 0, d->info.rcb_sw_sets, hw, NULL, NULL));
	for (i = 0; i < nwords; i++)
		sum += hw[i];
	free(hw);
	EXPECT_EQ(total, sum);
}

/* Counter of a cnodeid is cnodeid / rcb_nodes_per_counter, for every one. */
TEST_F(counters, counter_of_every_cnode)
{
	const struct rc_dev *d = &self->d;
	unsigned int n = d->info.rcb_num_cnodes, s, c;
	uint64_t set = rcd_mid_set(d, 3);
	uint32_t want[RCB_MAX_COUNTERS] = { 0 };
	struct rcb_ref *refs = calloc(n, sizeof(*refs));

	ASSERT_TRUE(refs != NULL);
	for (s = 0; s < n; s++) {
		refs[s].paddr = rcd_set_paddr(d, set) +
				(8 * s) % d->info.rcb_granularity;
		refs[s].src_cnodeid = s;
		refs[s].count = s + 1;
		want[s / d->npc] += s + 1;
	}
	for (c = 0; c < d->cps; c++)
		ASSERT_GT(self->abs, want[c]) TH_LOG("test needs no fold");
	ASSERT_EQ(0, rc_inject(d->fd, refs, n, RCB_INJECT_SYNC));
	free(refs);
	check_set(_metadata, d, set, want, NULL, NULL);
}

/* 72 nodes: cnodeids 0-7 count in counter 0, 64-71 in counter 8. */
TEST_F(counters, groups_of_8_above_64_nodes)
{
	const struct rc_dev *d = &self->d;
	uint64_t a = rcd_mid_set(d, 5), b = rcd_mid_set(d, 6);
	struct rcb_ref refs[16];
	uint32_t want[RCB_MAX_COUNTERS];
	unsigned int i;

	if (d->info.rcb_num_cnodes < 65)
		SKIP(return, "%u nodes: needs more than 64", d->info.rcb_num_cnodes);
	EXPECT_EQ(8U, d->npc);
	EXPECT_EQ((d->info.rcb_num_cnodes + 7) / 8, d->cps);
	EXPECT_EQ(19U, d->info.rcb_hw_counter_bits);
	for (i = 0; i < 8; i++) {
		refs[i] = (struct rcb_ref){ rcd_set_paddr(d, a), i, 100 + i };
		refs[8 + i] = (struct rcb_ref){ rcd_set_paddr(d, b), 64 + i,
						200 + i };
	}
	ASSERT_EQ(0, rc_inject(d->fd, refs, 16, RCB_INJECT_SYNC));
	check_set(_metadata, d, a, one(want, 0, 8 * 100 + 28), NULL, NULL);
	check_set(_metadata, d, b, one(want, 8, 8 * 200 + 28), NULL, NULL);
}

/* Injection through one node's device reaches the node owning the address. */
TEST_F(counters, inject_routes_by_paddr)
{
	struct rc_dev other = { .fd = -1 };
	struct rc_stats a, b0, b;
	uint32_t want[RCB_MAX_COUNTERS];
	uint64_t set;

	if (self->mem.n < 2)
		SKIP(return, "one node with memory");
	ASSERT_EQ(0, rcd_open(&other, self->mem.id[1]));
	ASSERT_EQ(0, rc_reset(other.fd));
	ASSERT_EQ(0, rc_stats_read(other.nid, &b0));
	set = rcd_mid_set(&other, 7);
	ASSERT_EQ(0, rc_inject1(self->d.fd, rcd_set_paddr(&other, set), 0, 77,
				RCB_INJECT_SYNC));
	check_set(_metadata, &other, set, one(want, 0, 77), NULL, NULL);
	ASSERT_EQ(0, rc_stats_read(self->d.nid, &a));
	ASSERT_EQ(0, rc_stats_read(other.nid, &b));
	EXPECT_EQ(self->s0.references, a.references);
	EXPECT_EQ(b0.references + 77, b.references);
	EXPECT_EQ(0, rc_reset(other.fd));
	rcd_close(&other);
}

/* ------------------------------------------------------------- privilege */

/* Drop to nobody keeping an fd opened as root; check each ioctl. */
static int unprivileged_child(const struct rc_dev *d, uint64_t paddr)
{
	struct rcb_thresholds t = { .abs_threshold = 100 };
	struct rcb_ref r = { .paddr = paddr, .count = 1 };
	struct rcb_inject in = { .refs = (uintptr_t)&r, .nr_refs = 1 };
	struct rcb_event ev[4];
	struct rcb_info info;
	uint32_t hw[RCB_MAX_COUNTERS];
	ssize_t n;

	if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
	    setresuid(65534, 65534, 65534)) {
		fprintf(stderr, "# cannot drop privileges: %s\n", strerror(errno));
		return 1;
	}
	if (geteuid() != 65534)
		return 2;
	errno = 0;
	if (ioctl(d->fd, RCB_INJECT, &in) != -1 || errno != EPERM) {
		fprintf(stderr, "# RCB_INJECT: %s\n", strerror(errno));
		return 3;
	}
	if (ioctl(d->fd, RCB_RESET) != -1 || errno != EPERM) {
		fprintf(stderr, "# RCB_RESET: %s\n", strerror(errno));
		return 4;
	}
	if (ioctl(d->fd, RCB_THRESHOLDS_SET, &t) != -1 || errno != EPERM) {
		fprintf(stderr, "# RCB_THRESHOLDS_SET: %s\n", strerror(errno));
		return 5;
	}
	if (ioctl(d->fd, RCB_INFO_GET, &info)) {
		fprintf(stderr, "# RCB_INFO_GET: %s\n", strerror(errno));
		return 7;
	}
	if (ioctl(d->fd, RCB_SYNC)) {
		fprintf(stderr, "# RCB_SYNC: %s\n", strerror(errno));
		return 8;
	}
	if (rc_read_sets(d->fd, rcd_paddr_set(d, paddr), 1, hw, NULL, NULL)) {
		fprintf(stderr, "# RCB_SETS_READ: %s\n", strerror(errno));
		return 9;
	}
	if (hw[0] != 0)
		return 10;
	n = read(d->fd, ev, sizeof(ev));
	if (n != RC_EVENT_SIZE || ev[0].type != RCB_EVENT_FOLD) {
		fprintf(stderr, "# read: %zd %s\n", n, strerror(errno));
		return 11;
	}
	return 0;
}

/*
 * The device is 0440 root: open as root, drop every privilege, use the
 * inherited fd. Changing or timing the counters is EPERM; reading them,
 * RCB_SYNC, RCB_INFO_GET and read() of events work.
 */
TEST_F(counters, unprivileged_inherited_fd)
{
	const struct rc_dev *d = &self->d;
	uint64_t set = rcd_mid_set(d, 11);
	struct rc_stats s;
	int status;
	pid_t pid;

	if (geteuid() != 0)
		SKIP(return, "must run as root");
	/* One event for the child to read. */
	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, set), 0, self->abs,
				RCB_INJECT_SYNC));
	set = rcd_mid_set(d, 12);
	pid = rc_fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(unprivileged_child(d, rcd_set_paddr(d, set)));
	status = rc_wait(pid);
	ASSERT_EQ(0, status)
		TH_LOG("unprivileged check %d failed (3-6: expected EPERM, 7-11: expected to work, %d + signal)",
		       status, RC_KILLED(0));
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(self->s0.references + self->abs, s.references);
}

/* ------------------------------------------------------ batch and args */

/* Every slot of every node with memory, sorted, to find a real hole. */
static int all_slots(const struct rc_nodes *mem, struct rcb_slot *out, int max)
{
	int i, n = 0;

	for (i = 0; i < mem->n; i++) {
		int fd = rc_open_node(mem->id[i], O_RDONLY), got;

		if (fd < 0)
			return -errno;
		got = rc_query_slots(fd, out + n, max - n);
		close(fd);
		if (got < 0 || got > max - n)
			return -E2BIG;
		n += got;
	}
	qsort(out, n, sizeof(*out), rc_cmp_u64);	/* by base */
	return n;
}

/* An address in no node's slot: between two slots if there is a gap. */
static uint64_t hole_paddr(const struct rc_nodes *mem, uint64_t gran)
{
	static struct rcb_slot s[RC_MAX_SLOTS];
	int n = all_slots(mem, s, RC_MAX_SLOTS), i;

	for (i = 1; i < n; i++)
		if (s[i - 1].base + s[i - 1].size + gran <= s[i].base)
			return s[i - 1].base + s[i - 1].size;
	return n > 0 ? s[n - 1].base + s[n - 1].size : 0;
}

/*
 * One bad entry (address outside every slot, a hole between slots, a
 * cnodeid not online) anywhere in a batch: EINVAL and nothing counts, not
 * even the entries before it, no fold, no page of table.
 */
TEST_F(counters, bad_entry_applies_nothing)
{
	const struct rc_dev *d = &self->d;
	uint64_t hole = hole_paddr(&self->mem, d->info.rcb_granularity);
	uint64_t a = rcd_mid_set(d, 20), b = rcd_mid_set(d, 21),
		 c = rcd_mid_set(d, 22);
	struct {
		const char *what;
		uint64_t paddr;
		uint32_t src;
	} bad[] = {
		{ "paddr 0xffffffffff000", 0xffffffffff000ULL, 0 },
		{ "paddr in a hole", hole, 0 },
		{ "paddr ~0", ~0ULL, 0 },
		{ "src_cnodeid == rcb_num_cnodes", rcd_set_paddr(d, a),
		  d->info.rcb_num_cnodes },
		{ "src_cnodeid 0xffffffff", rcd_set_paddr(d, a), 0xffffffffU },
	};
	unsigned int k, pos;

	TH_LOG("hole at 0x%llx", U64(hole));
	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		for (pos = 0; pos < 4; pos++) {
			struct rcb_ref good[3] = {
				{ rcd_set_paddr(d, a), 0, self->abs },
				{ rcd_set_paddr(d, b), d->info.rcb_num_cnodes - 1,
				  self->max + 5 },
				{ rcd_set_paddr(d, c), 0, 1 },
			};
			struct rcb_ref refs[4];
			struct rc_stats s;
			unsigned int i, j = 0;

			for (i = 0; i < 4; i++) {
				if (i == pos)
					refs[i] = (struct rcb_ref){ bad[k].paddr,
								    bad[k].src, 1 };
				else
					refs[i] = good[j++];
			}
			EXPECT_EQ(-EINVAL, rc_inject(d->fd, refs, 4, RCB_INJECT_SYNC))
				TH_LOG("%s at entry %u", bad[k].what, pos);
			EXPECT_EQ(-EINVAL, rc_inject(d->fd, refs, 4, 0))
				TH_LOG("%s at entry %u, no SYNC", bad[k].what, pos);
			ASSERT_EQ(0, rc_sync(d->fd));
			check_set(_metadata, d, a, NULL, NULL, NULL);
			check_set(_metadata, d, b, NULL, NULL, NULL);
			check_set(_metadata, d, c, NULL, NULL, NULL);
			ASSERT_EQ(0, rc_stats_read(d->nid, &s));
			EXPECT_EQ(self->s0.references, s.references)
				TH_LOG("%s at entry %u", bad[k].what, pos);
			EXPECT_EQ(self->s0.folds, s.folds);
			EXPECT_EQ(self->s0.pegged, s.pegged);
			EXPECT_EQ(self->s0.table_bytes, s.table_bytes)
				TH_LOG("%s at entry %u: counter pages were made",
				       bad[k].what, pos);
			EXPECT_EQ(0, rc_drain(d->fd)) TH_LOG("an event was raised");
		}
	}
}

/* Flags, entry count and pointers of RCB_INJECT. */
TEST_F(counters, inject_arguments)
{
	const struct rc_dev *d = &self->d;
	uint64_t set = rcd_mid_set(d, 30), pg = rc_page_size(), i;
	struct rcb_ref r = { rcd_set_paddr(d, set), 0, 1 };
	struct rcb_ref *many;
	struct rc_stats s;
	char *map;

	EXPECT_EQ(-EINVAL, rc_inject(d->fd, &r, 1, 2));
	EXPECT_EQ(-EINVAL, rc_inject(d->fd, &r, 1, 0x80000000U));
	EXPECT_EQ(-EINVAL, rc_inject(d->fd, &r, 1, RCB_INJECT_SYNC | 4));
	EXPECT_EQ(-EINVAL, rc_inject(d->fd, &r, 0, 0));
	EXPECT_EQ(-EINVAL, rc_inject(d->fd, &r, RCB_INJECT_MAX + 1, 0));
	EXPECT_EQ(-EINVAL, rc_inject(d->fd, &r, 0xffffffffU, 0));
	EXPECT_EQ(-EFAULT, rc_inject(d->fd, NULL, 1, 0));
	EXPECT_EQ(-EFAULT, rc_inject(d->fd, (void *)(uintptr_t)8, 1, 0));
	errno = 0;
	EXPECT_EQ(-1, ioctl(d->fd, RCB_INJECT, NULL));
	EXPECT_EQ(EFAULT, errno);

	/* The array runs into an inaccessible page: EFAULT, nothing counted. */
	map = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(map != MAP_FAILED);
	ASSERT_EQ(0, mprotect(map + pg, pg, PROT_NONE));
	many = (struct rcb_ref *)(map + pg) - 2;
	many[0] = r;
	many[1] = r;
	EXPECT_EQ(-EFAULT, rc_inject(d->fd, many, 3, RCB_INJECT_SYNC));
	EXPECT_EQ(0, rc_inject(d->fd, many, 2, RCB_INJECT_SYNC));
	munmap(map, 2 * pg);
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(self->s0.references + 2, s.references);

	/* Exactly RCB_INJECT_MAX entries is fine. */
	many = calloc(RCB_INJECT_MAX, sizeof(*many));
	ASSERT_TRUE(many != NULL);
	for (i = 0; i < RCB_INJECT_MAX; i++) {
		many[i].paddr = rcd_set_paddr(d, i % d->info.rcb_sw_sets);
		many[i].src_cnodeid = i % d->info.rcb_num_cnodes;
		many[i].count = 1;
	}
	EXPECT_EQ(0, rc_inject(d->fd, many, RCB_INJECT_MAX, RCB_INJECT_SYNC));
	free(many);
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(self->s0.references + 2 + RCB_INJECT_MAX, s.references);
	EXPECT_EQ(self->s0.refs_dropped, s.refs_dropped);
}

/* count 0 entries are accepted and count nothing. */
TEST_F(counters, zero_count_entry)
{
	const struct rc_dev *d = &self->d;
	uint64_t set = rcd_mid_set(d, 31);
	struct rc_stats s;

	EXPECT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, set), 0, 0,
				RCB_INJECT_SYNC));
	check_set(_metadata, d, set, NULL, NULL, NULL);
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(self->s0.references, s.references);
}

/* -------------------------------------------------------------- folding */

/*
 * A fold reports the counter that reached the threshold: check that the
 * record of a fold of set 0 carries no context either (injection knows no
 * pid or address).
 */
TEST_F(counters, fold_event_of_set_0)
{
	const struct rc_dev *d = &self->d;
	uint32_t want[RCB_MAX_COUNTERS];
	struct rcb_event ev[8];
	int n;

	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, 0), 0, self->abs,
				RCB_INJECT_SYNC));
	check_set(_metadata, d, 0, NULL, one(want, 0, self->abs), NULL);
	n = rc_events(d->fd, ev, 8);
	ASSERT_EQ(1, n);
	check_event(_metadata, d, &ev[0], RCB_EVENT_FOLD, 0, 0, self->abs, 0);
}

/* The whole set folds: every counter, not only the one at the threshold. */
TEST_F(counters, fold_whole_set)
{
	const struct rc_dev *d = &self->d;
	uint64_t set = rcd_mid_set(d, 40);
	uint32_t ext[RCB_MAX_COUNTERS] = { 0 };
	struct rcb_ref refs[RCB_MAX_COUNTERS];
	unsigned int c, top = d->cps - 1;
	struct rcb_event ev[8];
	struct rc_stats s;
	int n;

	if (d->cps < 2)
		SKIP(return, "one counter per set");
	/* The others first, so that no fold can come before them. */
	for (c = 0; c < d->cps; c++) {
		refs[c].paddr = rcd_set_paddr(d, set);
		refs[c].src_cnodeid = c * d->npc;
		refs[c].count = c == top ? self->abs : 10 + c;
		ext[c] = refs[c].count;
	}
	ASSERT_EQ(0, rc_inject(d->fd, refs, d->cps, RCB_INJECT_SYNC));
	check_set(_metadata, d, set, NULL, ext, NULL);
	n = rc_events(d->fd, ev, 8);
	ASSERT_EQ(1, n) log_events(_metadata, ev, n);
	check_event(_metadata, d, &ev[0], RCB_EVENT_FOLD, set, top, self->abs, 0);
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(self->s0.folds + 1, s.folds);
}

/* abs - 1 then 1 more: the second crossing folds at exactly abs. */
TEST_F(counters, fold_in_two_steps)
{
	const struct rc_dev *d = &self->d;
	uint64_t set = rcd_mid_set(d, 41);
	uint32_t want[RCB_MAX_COUNTERS];
	unsigned int src = d->info.rcb_cnodeid;
	unsigned int c = rcd_counter(d, src);
	struct rcb_event ev[4];

	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, set), src,
				self->abs - 1, RCB_INJECT_SYNC));
	check_set(_metadata, d, set, one(want, c, self->abs - 1), NULL, NULL);
	EXPECT_EQ(0, rc_events(d->fd, ev, 4));
	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, set), src, 1,
				RCB_INJECT_SYNC));
	check_set(_metadata, d, set, NULL, one(want, c, self->abs), NULL);
	ASSERT_EQ(1, rc_events(d->fd, ev, 4));
	check_event(_metadata, d, &ev[0], RCB_EVENT_FOLD, set, c, self->abs, 0);
}

/* Many entries of one batch adding up to abs fold once, at abs. */
TEST_F(counters, fold_from_many_entries)
{
	const struct rc_dev *d = &self->d;
	uint64_t set = rcd_mid_set(d, 42);
	unsigned int c = d->cps - 1, i, n = 16;
	uint32_t want[RCB_MAX_COUNTERS], left = self->abs;
	struct rcb_ref refs[16];
	struct rcb_event ev[4];

	for (i = 0; i < n; i++) {
		uint32_t part = i == n - 1 ? left : self->abs / n;

		refs[i].paddr = rcd_set_paddr(d, set) + i;
		refs[i].src_cnodeid = c * d->npc + i % d->npc;
		if (refs[i].src_cnodeid >= d->info.rcb_num_cnodes)
			refs[i].src_cnodeid = c * d->npc;
		refs[i].count = part;
		left -= part;
	}
	ASSERT_EQ(0, rc_inject(d->fd, refs, n, RCB_INJECT_SYNC));
	check_set(_metadata, d, set, NULL, one(want, c, self->abs), NULL);
	ASSERT_EQ(1, rc_events(d->fd, ev, 4));
	check_event(_metadata, d, &ev[0], RCB_EVENT_FOLD, set, c, self->abs, 0);
}

/* abs_threshold 1: every reference folds. */
TEST_F(counters, abs_threshold_one)
{
	const struct rc_dev *d = &self->d;
	uint64_t set = rcd_mid_set(d, 43);
	uint32_t want[RCB_MAX_COUNTERS];
	struct rcb_event ev[4];

	ASSERT_EQ(0, rc_thresholds(d->fd, 1, 0));
	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, set), 0, 1,
				RCB_INJECT_SYNC));
	check_set(_metadata, d, set, NULL, one(want, 0, 1), NULL);
	ASSERT_EQ(1, rc_events(d->fd, ev, 4));
	check_event(_metadata, d, &ev[0], RCB_EVENT_FOLD, set, 0, 1, 0);
}

/*
 * Peg events report the references lost in the counter so far (since the
 * reset), not only since the last fold; a second peg after a fold raises a
 * new PEG event. With the threshold at the maximum, one entry brings the
 * counter there and single references after it in the same batch peg.
 */
TEST_F(counters, peg_again_after_fold)
{
	const struct rc_dev *d = &self->d;
	uint64_t set = rcd_mid_set(d, 44);
	uint32_t ext[RCB_MAX_COUNTERS], lost[RCB_MAX_COUNTERS];
	struct rcb_event ev[8];
	struct rc_stats s;
	int n;

	ASSERT_EQ(0, rc_thresholds(d->fd, self->max, 0));
	ASSERT_EQ(0, inject_then_singly(d->fd, rcd_set_paddr(d, set), 0,
					self->max, 100));
	ASSERT_EQ(0, inject_then_singly(d->fd, rcd_set_paddr(d, set), 0,
					self->max, 50));
	one(ext, 0, 2 * self->max);
	check_set(_metadata, d, set, NULL, ext, one(lost, 0, 150));
	n = rc_events(d->fd, ev, 8);
	ASSERT_EQ(4, n) log_events(_metadata, ev, n);
	check_event(_metadata, d, &ev[0], RCB_EVENT_PEG, set, 0, 100, 0);
	check_event(_metadata, d, &ev[1], RCB_EVENT_FOLD, set, 0, self->max, 0);
	check_event(_metadata, d, &ev[2], RCB_EVENT_PEG, set, 0, 150, 0);
	check_event(_metadata, d, &ev[3], RCB_EVENT_FOLD, set, 0, self->max, 0);
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(self->s0.pegged + 150, s.pegged);
	EXPECT_EQ(self->s0.folds + 2, s.folds);
}

/*
 * Lost references are a 32-bit count per counter like the extended
 * counters: they must saturate at 0xffffffff, never wrap to a small number.
 * Three entries of 0xffffffff fold as they go (a weight never pegs) until
 * the extended counter saturates; what it cannot take, 2 * 0xffffffff
 * less what stays in hardware, is lost: more than the lost count holds.
 */
TEST_F(counters, lost_never_wraps)
{
	const struct rc_dev *d = &self->d;
	uint64_t set = rcd_mid_set(d, 45), lost_true;
	struct rc_set got;
	struct rc_stats s;
	int i;

	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, set), 0,
					0xffffffffU, RCB_INJECT_SYNC));
	ASSERT_EQ(0, rcd_read_set(d, set, &got));
	EXPECT_EQ(0xffffffffU, got.ext[0]);
	EXPECT_GT(self->abs, got.hw[0]);
	lost_true = 2 * 0xffffffffULL - got.hw[0];
	EXPECT_EQ(0xffffffffU, got.lost[0])
		TH_LOG("%llu references lost; the 32-bit count reads %u (%s)",
		       U64(lost_true), got.lost[0],
		       got.lost[0] == (uint32_t)lost_true ? "wrapped" : "?");
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(self->s0.saturated + lost_true, s.saturated);
	EXPECT_EQ(self->s0.overflowed + lost_true - 0xffffffffULL, s.overflowed);
	EXPECT_EQ(self->s0.pegged, s.pegged);
	EXPECT_EQ(self->s0.references + 3 * 0xffffffffULL, s.references);
}

/* ---------------------------------------------------------- differential */

/* A cnodeid that counts in a counter other than the node's own. */
static unsigned int remote_cnode(const struct rc_dev *d)
{
	unsigned int home = rcd_counter(d, d->info.rcb_cnodeid);

	return rcd_last_cnode(d, (home + 1) % d->cps);
}

/*
 * Differential threshold D: D references from a remote node to a set with
 * no home references raise nothing, D + 1 raise one MIGRATE event with
 * the remote count, the home count, the remote counter and its first
 * cnodeid; more raise no second event before the set folds.
 */
TEST_F(counters, migrate_event)
{
	const struct rc_dev *d = &self->d;
	uint64_t x = rcd_mid_set(d, 50), y = rcd_mid_set(d, 51);
	unsigned int r, rc;
	uint32_t D = 100;
	struct rcb_event ev[8];
	struct rc_stats s;
	int n;

	if (d->cps < 2)
		SKIP(return, "one counter per set: no remote node");
	r = remote_cnode(d);
	rc = rcd_counter(d, r);
	ASSERT_EQ(0, rc_thresholds(d->fd, self->max, D));

	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, x), r, D,
				RCB_INJECT_SYNC));
	n = rc_events(d->fd, ev, 8);
	EXPECT_EQ(0, n) log_events(_metadata, ev, n);
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(self->s0.migrations, s.migrations);

	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, y), r, D + 1,
				RCB_INJECT_SYNC));
	n = rc_events(d->fd, ev, 8);
	ASSERT_EQ(1, n) log_events(_metadata, ev, n);
	check_event(_metadata, d, &ev[0], RCB_EVENT_MIGRATE, y, rc, D + 1, 0);
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(self->s0.migrations + 1, s.migrations);

	/* Once per set until it folds. */
	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, y), r, 50,
				RCB_INJECT_SYNC));
	n = rc_events(d->fd, ev, 8);
	EXPECT_EQ(0, n) log_events(_metadata, ev, n);
	/* Fold it from the home node (home references never migrate). */
	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, y), d->info.rcb_cnodeid,
				self->max, RCB_INJECT_SYNC));
	n = rc_events(d->fd, ev, 8);
	ASSERT_EQ(1, n) log_events(_metadata, ev, n);
	check_event(_metadata, d, &ev[0], RCB_EVENT_FOLD, y,
		    rcd_counter(d, d->info.rcb_cnodeid), self->max, 0);
	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, y), r, D + 1,
				RCB_INJECT_SYNC));
	n = rc_events(d->fd, ev, 8);
	ASSERT_EQ(1, n) log_events(_metadata, ev, n);
	check_event(_metadata, d, &ev[0], RCB_EVENT_MIGRATE, y, rc, D + 1, 0);
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(self->s0.migrations + 2, s.migrations);
}

/* With home references H: H + D remote raise nothing, H + D + 1 do. */
TEST_F(counters, migrate_against_home_count)
{
	const struct rc_dev *d = &self->d;
	uint64_t z = rcd_mid_set(d, 52);
	unsigned int r, home = d->info.rcb_cnodeid;
	uint32_t D = 30, H = 500;
	struct rcb_event ev[8];
	int n;

	if (d->cps < 2)
		SKIP(return, "one counter per set: no remote node");
	r = remote_cnode(d);
	ASSERT_EQ(0, rc_thresholds(d->fd, self->max, D));
	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, z), home, H,
				RCB_INJECT_SYNC));
	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, z), r, H + D,
				RCB_INJECT_SYNC));
	n = rc_events(d->fd, ev, 8);
	EXPECT_EQ(0, n) log_events(_metadata, ev, n);
	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, z), r, 1,
				RCB_INJECT_SYNC));
	n = rc_events(d->fd, ev, 8);
	ASSERT_EQ(1, n) log_events(_metadata, ev, n);
	check_event(_metadata, d, &ev[0], RCB_EVENT_MIGRATE, z,
		    rcd_counter(d, r), H + D + 1, H);
}

static int sets_fold(int fd, uint64_t first, uint64_t nr)
{
	struct rcb_sets_fold f = { .first_set = first, .nr_sets = nr };

	return ioctl(fd, RCB_SETS_FOLD, &f) ? -errno : 0;
}

/*
 * RCB_SETS_FOLD folds a set below the threshold: its counts go to the
 * extended counters (one FOLD record), nothing else's, and the set raises
 * a migration event again, on the counts since (a daemon's moved page's
 * old frame: the next page there is judged on its own references).
 */
TEST_F(counters, sets_fold_rearms_migration)
{
	const struct rc_dev *d = &self->d;
	uint64_t y = rcd_mid_set(d, 55), n0 = rcd_mid_set(d, 56);
	unsigned int r, rc;
	uint32_t D = 100;
	struct rcb_event ev[8];
	struct rc_set st;
	int n;

	if (d->cps < 2)
		SKIP(return, "one counter per set: no remote node");
	r = remote_cnode(d);
	rc = rcd_counter(d, r);
	ASSERT_EQ(0, rc_thresholds(d->fd, self->max, D));
	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, n0), r, 7,
				RCB_INJECT_SYNC));
	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, y), r, D + 1,
				RCB_INJECT_SYNC));
	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, y), r, 50,
				RCB_INJECT_SYNC));
	n = rc_events(d->fd, ev, 8);
	ASSERT_EQ(1, n) log_events(_metadata, ev, n);
	check_event(_metadata, d, &ev[0], RCB_EVENT_MIGRATE, y, rc, D + 1, 0);

	ASSERT_EQ(0, sets_fold(d->fd, y, 1));
	n = rc_events(d->fd, ev, 8);
	ASSERT_EQ(1, n) log_events(_metadata, ev, n);
	check_event(_metadata, d, &ev[0], RCB_EVENT_FOLD, y, rc, D + 51, 0);
	ASSERT_EQ(0, rcd_read_set(d, y, &st));
	EXPECT_EQ(0U, st.hw[rc]);
	EXPECT_EQ(D + 51, st.ext[rc]);
	ASSERT_EQ(0, rcd_read_set(d, n0, &st));
	EXPECT_EQ(7U, st.hw[rc]);	/* the set next to it: as it was */

	/* D references since the fold raise nothing, D + 1 raise it again. */
	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, y), r, D,
				RCB_INJECT_SYNC));
	n = rc_events(d->fd, ev, 8);
	EXPECT_EQ(0, n) log_events(_metadata, ev, n);
	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, y), r, 1,
				RCB_INJECT_SYNC));
	n = rc_events(d->fd, ev, 8);
	ASSERT_EQ(1, n) log_events(_metadata, ev, n);
	check_event(_metadata, d, &ev[0], RCB_EVENT_MIGRATE, y, rc, D + 1, 0);

	/* Nothing to fold: no record. No sets: nothing at all. */
	ASSERT_EQ(0, sets_fold(d->fd, n0 + 1, 1));
	ASSERT_EQ(0, sets_fold(d->fd, n0, 0));
	n = rc_events(d->fd, ev, 8);
	EXPECT_EQ(0, n) log_events(_metadata, ev, n);
}

TEST_F(counters, sets_fold_bad_args)
{
	const struct rc_dev *d = &self->d;
	uint64_t sets = d->info.rcb_sw_sets;
	struct rcb_sets_fold f = { .nr_sets = 1, .flags = 1 };

	EXPECT_EQ(-1, ioctl(d->fd, RCB_SETS_FOLD, &f));
	EXPECT_EQ(EINVAL, errno);
	f = (struct rcb_sets_fold){ .nr_sets = 1, .pad = 1 };
	EXPECT_EQ(-1, ioctl(d->fd, RCB_SETS_FOLD, &f));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EINVAL, sets_fold(d->fd, sets - 1, 2));
	EXPECT_EQ(-EINVAL, sets_fold(d->fd, 1, UINT64_MAX));
	EXPECT_EQ(-EINVAL, sets_fold(d->fd, sets + 1, 0));
	EXPECT_EQ(0, sets_fold(d->fd, sets - 1, 1));
	EXPECT_EQ(-1, ioctl(d->fd, RCB_SETS_FOLD, NULL));
	EXPECT_EQ(EFAULT, errno);
}

/* diff 0 is off; references from the home counter's group never migrate. */
TEST_F(counters, no_migrate_when_off_or_home)
{
	const struct rc_dev *d = &self->d;
	uint64_t x = rcd_mid_set(d, 53), y = rcd_mid_set(d, 54);
	unsigned int home = rcd_counter(d, d->info.rcb_cnodeid);
	unsigned int other_in_home = home * d->npc;
	struct rcb_event ev[8];
	struct rc_stats s;
	int n;

	if (d->cps < 2)
		SKIP(return, "one counter per set: no remote node");
	ASSERT_EQ(0, rc_thresholds(d->fd, self->max, 0));
	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, x), remote_cnode(d),
				self->max - 1, RCB_INJECT_SYNC));
	if (other_in_home == d->info.rcb_cnodeid)
		other_in_home = rcd_last_cnode(d, home);
	ASSERT_EQ(0, rc_thresholds(d->fd, self->max, 1));
	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, y), other_in_home,
				self->max - 1, RCB_INJECT_SYNC));
	n = rc_events(d->fd, ev, 8);
	EXPECT_EQ(0, n) log_events(_metadata, ev, n);
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(self->s0.migrations, s.migrations);
}

/* ------------------------------------------------------------ invariant */

/*
 * Random batches with a low threshold (many folds), counts above the
 * maximum (pegs) and a differential threshold: after RCB_SYNC every
 * counter has ext + hw + lost == injected exactly, and hw < abs.
 */
TEST_F_TIMEOUT(counters, invariant_single_thread, 120)
{
	const struct rc_dev *d = &self->d;
	enum { NSETS = 16, ROUNDS = 300 };
	uint64_t want[NSETS][RCB_MAX_COUNTERS] = { { 0 } };
	uint64_t sets[NSETS], total = 0, lost_sum = 0, seed = 0x5eed1234;
	uint32_t abs = 37;
	struct rcb_ref refs[64];
	struct rc_stats s;
	unsigned int i, r, c;

	for (i = 0; i < NSETS; i++)
		sets[i] = rcd_mid_set(d, 100 + 37 * i);
	ASSERT_EQ(0, rc_thresholds(d->fd, abs, 5));
	for (r = 0; r < ROUNDS; r++) {
		unsigned int n = 1 + rc_rand(&seed) % 64;

		for (i = 0; i < n; i++) {
			unsigned int k = rc_rand(&seed) % NSETS;
			unsigned int src = rc_rand(&seed) % d->info.rcb_num_cnodes;
			uint32_t cnt = rc_rand(&seed) % 4 ?
				       1 + rc_rand(&seed) % 40 :
				       1 + rc_rand(&seed) % (2 * self->max);

			refs[i] = (struct rcb_ref){ rcd_set_paddr(d, sets[k]) +
						    rc_rand(&seed) % d->info.rcb_granularity,
						    src, cnt };
			want[k][rcd_counter(d, src)] += cnt;
			total += cnt;
		}
		ASSERT_EQ(0, rc_inject(d->fd, refs, n,
				       rc_rand(&seed) % 2 ? RCB_INJECT_SYNC : 0));
		if (!(r % 50))
			rc_drain(d->fd);
	}
	ASSERT_EQ(0, rc_sync(d->fd));
	for (i = 0; i < NSETS; i++) {
		struct rc_set got;

		ASSERT_EQ(0, rcd_read_set(d, sets[i], &got));
		for (c = 0; c < d->cps; c++) {
			EXPECT_EQ(want[i][c], (uint64_t)got.ext[c] + got.hw[c] +
					      got.lost[c])
				TH_LOG("set %llu counter %u: ext %u hw %u lost %u",
				       U64(sets[i]), c, got.ext[c], got.hw[c],
				       got.lost[c]);
			EXPECT_GT(abs, got.hw[c])
				TH_LOG("set %llu counter %u: hw at or above abs after RCB_SYNC",
				       U64(sets[i]), c);
			lost_sum += got.lost[c];
		}
	}
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(self->s0.references + total, s.references);
	EXPECT_EQ(self->s0.pegged + lost_sum, s.pegged);
	EXPECT_EQ(self->s0.saturated, s.saturated);
	EXPECT_EQ(self->s0.refs_dropped, s.refs_dropped);
	EXPECT_LT(self->s0.folds, s.folds);
}

/* ------------------------------------------------------- mmap and stats */

/*
 * No pegs (one entry per counter per batch, counts <= max - abs + 1, SYNC):
 * the mapped table equals RCB_SETS_READ's extended counters word for word,
 * and its sum is the references counted minus what is still in hardware.
 */
TEST_F_TIMEOUT(counters, mmap_equals_stats, 120)
{
	const struct rc_dev *d = &self->d;
	enum { NSETS = 64, ROUNDS = 100 };
	uint64_t nwords = d->info.rcb_sw_sets * d->cps, i, seed = 0xabcdef;
	uint64_t msum = 0, hwsum = 0, esum = 0;
	uint32_t *map, *hw, *ext, cmax = self->max - self->abs + 1;
	struct rcb_ref refs[NSETS];
	struct rc_stats s;
	unsigned int r, k;

	map = mmap(NULL, d->info.rcb_len, PROT_READ, MAP_SHARED, d->fd, 0);
	ASSERT_TRUE(map != MAP_FAILED);
	for (r = 0; r < ROUNDS; r++) {
		for (k = 0; k < NSETS; k++) {
			uint64_t set = (k * 7919 + 13) % d->info.rcb_sw_sets;

			refs[k].paddr = rcd_set_paddr(d, set);
			refs[k].src_cnodeid = rc_rand(&seed) % d->info.rcb_num_cnodes;
			refs[k].count = 1 + rc_rand(&seed) % cmax;
		}
		/* Sets distinct only if the node has enough of them. */
		ASSERT_EQ(0, rc_inject(d->fd, refs,
				       d->info.rcb_sw_sets < NSETS ? 1 : NSETS,
				       RCB_INJECT_SYNC));
	}
	ASSERT_EQ(0, rc_sync(d->fd));
	hw = malloc(nwords * 4);
	ext = malloc(nwords * 4);
	ASSERT_TRUE(hw != NULL);
	ASSERT_TRUE(ext != NULL);
	ASSERT_EQ(0, rc_read_sets(d->fd, 0, d->info.rcb_sw_sets, hw, ext, NULL));
	for (i = 0; i < nwords; i++) {
		msum += map[i];
		hwsum += hw[i];
		esum += ext[i];
	}
	EXPECT_EQ(0, memcmp(map, ext, nwords * 4))
		TH_LOG("mapped table differs from RCB_SETS_READ ext");
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(self->s0.pegged, s.pegged);
	EXPECT_EQ(esum, msum);
	EXPECT_EQ(s.references - self->s0.references - hwsum, msum);
	EXPECT_LT(0ULL, msum) TH_LOG("no fold happened");
	TH_LOG("references %llu, mapped sum %llu, in hardware %llu, folds %llu",
	       U64(s.references - self->s0.references), U64(msum), U64(hwsum),
	       U64(s.folds - self->s0.folds));
	free(hw);
	free(ext);
	munmap(map, d->info.rcb_len);
}

/* ---------------------------------------------------------- table memory */

/*
 * An idle node's tables cost under 0.1% of its memory; counters grow the
 * tables a page at a time (hardware, then extended at the fold, then lost
 * at a peg); a reset gives every page back.
 */
TEST_F(counters, table_memory)
{
	const struct rc_dev *d = &self->d;
	uint64_t pg = rc_page_size(), wpp = pg / 4;
	uint64_t words = d->info.rcb_sw_sets * d->cps;
	uint64_t pages = (words + wpp - 1) / wpp, mem;
	uint64_t base = self->s0.table_bytes, n, k;
	unsigned int home = d->info.rcb_cnodeid, hc = rcd_counter(d, home);
	struct rcb_ref *refs;
	struct rc_stats s;

	mem = (uint64_t)d->info.rcb_base_pages * d->info.rcb_base_page_size;
	ASSERT_GT(mem, base);

	refs = calloc(64, sizeof(*refs));
	ASSERT_TRUE(refs != NULL);
	for (k = 0, n = 0; k < 64 && k < pages; k++) {
		/* The first set whose home word is in table page p. */
		uint64_t p = k * pages / (pages < 64 ? pages : 64);
		uint64_t set = (p * wpp + d->cps - 1) / d->cps;

		if (set >= d->info.rcb_sw_sets ||
		    (set * d->cps + hc) / wpp != p)
			continue;
		refs[n++] = (struct rcb_ref){ rcd_set_paddr(d, set), home, 1 };
	}
	ASSERT_LT(0ULL, U64(n));
	ASSERT_EQ(0, rc_inject(d->fd, refs, n, RCB_INJECT_SYNC));
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(base + n * pg, s.table_bytes) TH_LOG("%llu hardware pages", U64(n));

	/* The fold makes the extended pages. */
	for (k = 0; k < n; k++)
		refs[k].count = self->abs - 1;
	ASSERT_EQ(0, rc_inject(d->fd, refs, n, RCB_INJECT_SYNC));
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(base + 2 * n * pg, s.table_bytes) TH_LOG("+ extended pages");

	/* A peg makes the lost pages: max, then one more singly. */
	ASSERT_EQ(0, rc_thresholds(d->fd, self->max, 0));
	refs = realloc(refs, 2 * n * sizeof(*refs));
	ASSERT_TRUE(refs != NULL);
	for (k = 0; k < n; k++) {
		refs[k].count = self->max;
		refs[n + k] = refs[k];
		refs[n + k].count = 1;
	}
	ASSERT_EQ(0, rc_inject(d->fd, refs, 2 * n, RCB_INJECT_SYNC));
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(base + 3 * n * pg, s.table_bytes) TH_LOG("+ lost pages");
	free(refs);

	ASSERT_EQ(0, rc_reset(d->fd));
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(base, s.table_bytes) TH_LOG("after RCB_RESET");
}

/* A node's stats/defer_bytes: the NMI deferral rings' share of table_bytes. */
static uint64_t defer_bytes(int nid)
{
	char path[128], buf[32];

	snprintf(path, sizeof(path), "/sys/class/misc/refcnt-node%d/stats/defer_bytes", nid);
	if (rc_read_file(path, buf, sizeof(buf)) <= 0)
		return UINT64_MAX;
	return strtoull(buf, NULL, 10);
}

/*
 * Idle tables (after RCB_RESET) cost under 0.1% of each node's memory, and
 * under 0.1% of the machine's memory all together, but for the NMI
 * deferral rings, a fixed cost per possible CPU (stats/defer_bytes, part
 * of table_bytes), which a 32 MiB node of the 72-node guest with its 72
 * CPUs cannot carry within 0.1%.
 */
TEST_F(counters, table_memory_idle)
{
	uint64_t mem = 0, bytes = 0, rings;
	int i;

	for (i = 0; i < self->mem.n; i++) {
		struct rc_dev d = { .fd = -1 };
		struct rc_stats s;
		uint64_t m;

		ASSERT_EQ(0, rcd_open(&d, self->mem.id[i]));
		/* Read what earlier tests left queued: a reset then frees the ring. */
		ASSERT_LE(0, rc_drain(d.fd));
		ASSERT_EQ(0, rc_reset(d.fd));
		ASSERT_EQ(0, rc_stats_read(d.nid, &s));
		rings = defer_bytes(d.nid);
		ASSERT_GT(s.table_bytes, rings) TH_LOG("node%d: defer_bytes %llu",
						      d.nid, U64(rings));
		s.table_bytes -= rings;
		m = (uint64_t)d.info.rcb_base_pages * d.info.rcb_base_page_size;
		if (i < 4 || s.table_bytes >= m / 1000)
			TH_LOG("node%d: %llu bytes of memory, %llu sets, idle tables %llu bytes (%.3f%%), deferral rings %llu bytes more",
			       d.nid, U64(m), U64(d.info.rcb_sw_sets),
			       U64(s.table_bytes), 100.0 * s.table_bytes / m,
			       U64(rings));
		EXPECT_GT(m / 1000, s.table_bytes)
			TH_LOG("node%d: idle tables cost 0.1%% of its memory or more",
			       d.nid);
		mem += m;
		bytes += s.table_bytes;
		rcd_close(&d);
	}
	TH_LOG("%d nodes: %llu bytes of memory, idle tables %llu bytes (%.3f%%)",
	       self->mem.n, U64(mem), U64(bytes), 100.0 * bytes / mem);
	EXPECT_GT(mem / 1000, bytes) TH_LOG("machine: 0.1%% or more");
}

/* ---------------------------------------------------------- RCB_SETS_READ */

TEST_F(counters, sets_read_arguments)
{
	const struct rc_dev *d = &self->d;
	uint64_t sets = d->info.rcb_sw_sets, pg = rc_page_size();
	uint32_t buf[RCB_MAX_COUNTERS * 4];
	struct rcb_sets_read r;
	char *map;

	EXPECT_EQ(-EINVAL, rc_read_sets(d->fd, sets, 1, buf, NULL, NULL));
	EXPECT_EQ(-EINVAL, rc_read_sets(d->fd, 0, sets + 1, NULL, NULL, NULL));
	EXPECT_EQ(-EINVAL, rc_read_sets(d->fd, sets + 1, 0, NULL, NULL, NULL));
	EXPECT_EQ(-EINVAL, rc_read_sets(d->fd, ~0ULL, 2, buf, NULL, NULL));
	EXPECT_EQ(-EINVAL, rc_read_sets(d->fd, 1, ~0ULL, buf, NULL, NULL));
	EXPECT_EQ(-EINVAL, rc_read_sets(d->fd, sets - 1, 2, buf, NULL, NULL));
	EXPECT_EQ(0, rc_read_sets(d->fd, sets - 1, 1, buf, buf, buf));
	EXPECT_EQ(0, rc_read_sets(d->fd, sets, 0, buf, NULL, NULL));
	EXPECT_EQ(0, rc_read_sets(d->fd, 0, sets, NULL, NULL, NULL));

	memset(&r, 0, sizeof(r));
	r.nr_sets = 1;
	r.hw = (uintptr_t)buf;
	r.flags = 1;
	errno = 0;
	EXPECT_EQ(-1, ioctl(d->fd, RCB_SETS_READ, &r));
	EXPECT_EQ(EINVAL, errno);
	r.flags = 0x80000000U;
	EXPECT_EQ(-1, ioctl(d->fd, RCB_SETS_READ, &r));
	EXPECT_EQ(EINVAL, errno);
	r.flags = 0;
	r.pad = 1;
	errno = 0;
	EXPECT_EQ(-1, ioctl(d->fd, RCB_SETS_READ, &r));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, ioctl(d->fd, RCB_SETS_READ, NULL));
	EXPECT_EQ(EFAULT, errno);

	EXPECT_EQ(-EFAULT, rc_read_sets(d->fd, 0, 1, (void *)8, NULL, NULL));
	EXPECT_EQ(-EFAULT, rc_read_sets(d->fd, 0, 1, NULL, (void *)8, NULL));
	EXPECT_EQ(-EFAULT, rc_read_sets(d->fd, 0, 1, NULL, NULL, (void *)8));
	EXPECT_EQ(-EFAULT, rc_read_sets(d->fd, 0, 1, buf, buf, (void *)8));

	/* A buffer one counter too short for two sets. */
	map = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(map != MAP_FAILED);
	ASSERT_EQ(0, mprotect(map + pg, pg, PROT_NONE));
	EXPECT_EQ(-EFAULT, rc_read_sets(d->fd, 0, 2, NULL,
					(uint32_t *)(map + pg) - (2 * d->cps - 1),
					NULL));
	EXPECT_EQ(0, rc_read_sets(d->fd, 0, 2, NULL,
				  (uint32_t *)(map + pg) - 2 * d->cps, NULL));
	/* Read-only buffer: EFAULT. */
	ASSERT_EQ(0, mprotect(map, pg, PROT_READ));
	EXPECT_EQ(-EFAULT, rc_read_sets(d->fd, 0, 1, (uint32_t *)map, NULL, NULL));
	munmap(map, 2 * pg);
}

/*
 * A range read writes exactly nr_sets * counters_per_set words per array,
 * each at its place, across the kernel's internal rounds.
 */
TEST_F(counters, sets_read_range)
{
	const struct rc_dev *d = &self->d;
	uint64_t nr = 3000, first, i, marks[3];
	uint32_t *hw;
	unsigned int c = d->cps - 1, k;

	if (d->info.rcb_sw_sets < nr + 10)
		nr = d->info.rcb_sw_sets - 10;
	first = d->info.rcb_sw_sets - nr - 5;
	marks[0] = first;
	marks[1] = first + nr / 2 + 1;
	marks[2] = first + nr - 1;
	for (k = 0; k < 3; k++)
		ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, marks[k]),
					rcd_last_cnode(d, c), 10 + k, 0));
	hw = malloc((nr * d->cps + 16) * 4);
	ASSERT_TRUE(hw != NULL);
	for (i = 0; i < nr * d->cps + 16; i++)
		hw[i] = 0xdeadbeef;
	ASSERT_EQ(0, rc_read_sets(d->fd, first, nr, hw, NULL, NULL));
	for (i = 0; i < nr * d->cps; i++) {
		uint32_t want = 0;

		for (k = 0; k < 3; k++)
			if (i == (marks[k] - first) * d->cps + c)
				want = 10 + k;
		if (hw[i] != want) {
			EXPECT_EQ(want, hw[i]) TH_LOG("word %llu", U64(i));
			break;
		}
	}
	for (; i < nr * d->cps + 16; i++)
		EXPECT_EQ(0xdeadbeefU, hw[i]) TH_LOG("written past the range");
	free(hw);
}

/* ------------------------------------------------------ RCB_THRESHOLDS_SET */

TEST_F(counters, thresholds_set)
{
	const struct rc_dev *d = &self->d;
	struct rcb_thresholds t;
	struct rcb_info info;
	int i;

	EXPECT_EQ(-EINVAL, rc_thresholds(d->fd, 0, 0));
	EXPECT_EQ(-EINVAL, rc_thresholds(d->fd, self->max + 1, 0));
	EXPECT_EQ(-EINVAL, rc_thresholds(d->fd, 0xffffffffU, 0));
	EXPECT_EQ(-EINVAL, rc_thresholds(d->fd, 10, self->max + 1));
	EXPECT_EQ(-EINVAL, rc_thresholds(d->fd, 10, 0xffffffffU));
	memset(&t, 0, sizeof(t));
	t.abs_threshold = 10;
	t.flags = 1;
	errno = 0;
	EXPECT_EQ(-1, ioctl(d->fd, RCB_THRESHOLDS_SET, &t));
	EXPECT_EQ(EINVAL, errno);
	t.flags = 0;
	t.pad = 1;
	errno = 0;
	EXPECT_EQ(-1, ioctl(d->fd, RCB_THRESHOLDS_SET, &t));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, ioctl(d->fd, RCB_THRESHOLDS_SET, NULL));
	EXPECT_EQ(EFAULT, errno);

	/* Failed calls changed nothing. */
	ASSERT_EQ(0, ioctl(d->fd, RCB_INFO_GET, &info));
	EXPECT_EQ(self->abs, info.rcb_abs_threshold);
	EXPECT_EQ(self->diff, info.rcb_diff_threshold);

	ASSERT_EQ(0, rc_thresholds(d->fd, self->max, self->max));
	ASSERT_EQ(0, ioctl(d->fd, RCB_INFO_GET, &info));
	EXPECT_EQ(self->max, info.rcb_abs_threshold);
	EXPECT_EQ(self->max, info.rcb_diff_threshold);
	ASSERT_EQ(0, rc_thresholds(d->fd, 1, 0));
	ASSERT_EQ(0, ioctl(d->fd, RCB_INFO_GET, &info));
	EXPECT_EQ(1U, info.rcb_abs_threshold);
	EXPECT_EQ(0U, info.rcb_diff_threshold);
	ASSERT_EQ(0, rc_thresholds(d->fd, 123, 45));

	/* Per node; and a reset keeps them. */
	for (i = 1; i < self->mem.n; i++) {
		struct rc_dev o = { .fd = -1 };

		ASSERT_EQ(0, rcd_open(&o, self->mem.id[i]));
		EXPECT_EQ(self->abs, o.info.rcb_abs_threshold)
			TH_LOG("node%d changed with node%d", o.nid, d->nid);
		EXPECT_EQ(self->diff, o.info.rcb_diff_threshold);
		rcd_close(&o);
	}
	ASSERT_EQ(0, rc_reset(d->fd));
	ASSERT_EQ(0, ioctl(d->fd, RCB_INFO_GET, &info));
	EXPECT_EQ(123U, info.rcb_abs_threshold);
	EXPECT_EQ(45U, info.rcb_diff_threshold);
}

/* ================================================ long work, killed */

/*
 * RCB_SETS_FOLD over a whole node is long at granularity=256 (four sets
 * per base page: millions on a 512 MB node). A fatal signal ends it
 * between batches: the folding process dies in a small part of the time
 * the whole fold takes, and the node's locks are free for the next call.
 * Needs REFCNT_KO to load with granularity=256.
 */
FIXTURE(bignode) {
	struct rc_dev d;
	bool skip;
};

FIXTURE_SETUP(bignode)
{
	struct rc_nodes mem;

	self->d.fd = -1;
	if (!rc_ko_path()) {
		self->skip = true;
		return;
	}
	ASSERT_EQ(0, rc_reload("granularity=256"));
	ASSERT_EQ(0, rc_mem_nodes(&mem));
	ASSERT_EQ(0, rcd_open_clean(&self->d, mem.id[0]));
}

FIXTURE_TEARDOWN(bignode)
{
	if (self->skip)
		return;
	EXPECT_EQ(0, rcd_close_clean(&self->d));
	EXPECT_EQ(0, rc_ensure_default());
}

TEST_F_TIMEOUT(bignode, sets_fold_killed, 300)
{
	const struct rc_dev *d = &self->d;
	uint64_t sets = d->info.rcb_sw_sets, t0, full, dead;
	int p[2], status;
	char c;
	pid_t pid;

	if (self->skip)
		SKIP(return, "no REFCNT_KO to load with granularity=256");
	t0 = rc_now_ns();
	ASSERT_EQ(0, sets_fold(d->fd, 0, sets));
	full = rc_now_ns() - t0;
	TH_LOG("node%d: %llu sets folded in %.3f s", d->nid, U64(sets),
	       full / 1e9);

	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(p[0]);
		if (write(p[1], "x", 1) != 1)
			_exit(2);
		_exit(sets_fold(d->fd, 0, sets) ? 3 : 0);
	}
	close(p[1]);
	ASSERT_EQ(1, read(p[0], &c, 1));
	close(p[0]);
	/* Well into the fold: a tenth of its time. */
	usleep(full / 10000);
	t0 = rc_now_ns();
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	dead = rc_now_ns() - t0;
	ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		TH_LOG("status %#x: the fold ended before the signal", status);
	TH_LOG("killed %.3f s into the fold, dead %.3f s later",
	       full / 1e10, dead / 1e9);
	EXPECT_GT(full / 4, dead)
		TH_LOG("the fold ran on after SIGKILL");
	/* What it held is free: the whole fold again. */
	EXPECT_EQ(0, sets_fold(d->fd, 0, sets));
}

/* =================================================== 11 and 19 bits */

/*
 * Fold at the threshold, nothing below it, and a peg, with the module's
 * standard (11-bit unless more than 16 nodes) and premium (19-bit) SIMMs.
 */
FIXTURE(width) {
	struct rc_dev d;
	struct rc_stats s0;
	uint32_t abs, max;
	bool skip, reloaded;
	char why[128];
};

FIXTURE_VARIANT(width) {
	const char *params;
	bool premium;
};

FIXTURE_VARIANT_ADD(width, standard) { .params = "", .premium = false };
FIXTURE_VARIANT_ADD(width, premium) { .params = "premium=1", .premium = true };

FIXTURE_SETUP(width)
{
	struct rc_nodes mem;

	self->d.fd = -1;
	if (variant->premium || !rc_module_default()) {
		if (!rc_ko_path()) {
			self->skip = true;
			snprintf(self->why, sizeof(self->why),
				 "REFCNT_KO needed to load with \"%s\"",
				 variant->params);
			return;
		}
		ASSERT_EQ(0, rc_reload(variant->params))
			TH_LOG("load with \"%s\"", variant->params);
		self->reloaded = variant->premium;
	}
	ASSERT_EQ(0, rc_mem_nodes(&mem));
	ASSERT_EQ(0, rcd_open_clean(&self->d, mem.id[0]));
	self->abs = self->d.info.rcb_abs_threshold;
	self->max = self->d.info.rcb_hw_counter_max;
	ASSERT_EQ(0, rc_stats_read(self->d.nid, &self->s0));
}

FIXTURE_TEARDOWN(width)
{
	EXPECT_EQ(0, rcd_close_clean(&self->d));
	if (self->reloaded) {
		EXPECT_EQ(0, rc_ensure_default());
	}
}

#define WIDTH_SKIP() do {					\
	if (self->skip)						\
		SKIP(return, "%s", self->why);			\
} while (0)

TEST_F(width, counter_width)
{
	const struct rcb_info *i = &self->d.info;
	unsigned int bits;

	WIDTH_SKIP();
	bits = rc_hw_bits(i->rcb_num_cnodes, variant->premium);
	EXPECT_EQ(bits, i->rcb_hw_counter_bits);
	EXPECT_EQ((1U << bits) - 1, i->rcb_hw_counter_max);
	EXPECT_EQ((1U << bits) - (1U << bits) / 8, i->rcb_abs_threshold);
	if (bits == 11) {
		EXPECT_EQ(2047U, i->rcb_hw_counter_max);
		EXPECT_EQ(1792U, i->rcb_abs_threshold);
	} else {
		EXPECT_EQ(524287U, i->rcb_hw_counter_max);
		EXPECT_EQ(458752U, i->rcb_abs_threshold);
	}
}

/*
 * abs_threshold references from one cnodeid to one set: ext == abs, every
 * hw 0, no loss, one FOLD record with every field; for the first, the
 * node's own and the last counter.
 */
TEST_F(width, fold_at_threshold)
{
	const struct rc_dev *d = &self->d;
	unsigned int pick[3] = { 0, rcd_counter(d, d->info.rcb_cnodeid),
				 d->cps - 1 }, k;
	uint32_t want[RCB_MAX_COUNTERS];
	struct rc_stats s;

	WIDTH_SKIP();
	for (k = 0; k < 3; k++) {
		uint64_t set = rcd_mid_set(d, 60 + k);
		unsigned int c = pick[k], src = rcd_last_cnode(d, c);
		struct rcb_event ev[4];
		int n;

		ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, set) + k * 64,
					src, self->abs, RCB_INJECT_SYNC));
		check_set(_metadata, d, set, NULL, one(want, c, self->abs), NULL);
		n = rc_events(d->fd, ev, 4);
		ASSERT_EQ(1, n) log_events(_metadata, ev, n);
		check_event(_metadata, d, &ev[0], RCB_EVENT_FOLD, set, c,
			    self->abs, 0);
	}
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(self->s0.folds + 3, s.folds);
	EXPECT_EQ(self->s0.references + 3ULL * self->abs, s.references);
	EXPECT_EQ(self->s0.pegged, s.pegged);
}

/* abs_threshold - 1: all in hardware, no fold, no event. */
TEST_F(width, below_threshold)
{
	const struct rc_dev *d = &self->d;
	uint64_t set = rcd_mid_set(d, 70);
	unsigned int c = d->cps - 1;
	uint32_t want[RCB_MAX_COUNTERS];
	struct rcb_event ev[4];
	struct rc_stats s;

	WIDTH_SKIP();
	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, set), c * d->npc,
				self->abs - 1, RCB_INJECT_SYNC));
	ASSERT_EQ(0, rc_sync(d->fd));
	check_set(_metadata, d, set, one(want, c, self->abs - 1), NULL, NULL);
	EXPECT_EQ(0, rc_events(d->fd, ev, 4));
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(self->s0.folds, s.folds);
}

/*
 * Threshold at the maximum, one entry of max and 100 single references in
 * the same batch: the counter pegs before the interrupt can come, 100 are
 * lost, then it folds max. A PEG record (count 100) comes before the FOLD
 * record.
 */
TEST_F(width, peg_at_max)
{
	const struct rc_dev *d = &self->d;
	uint64_t set = rcd_mid_set(d, 71);
	unsigned int c = rcd_counter(d, d->info.rcb_cnodeid);
	uint32_t ext[RCB_MAX_COUNTERS], lost[RCB_MAX_COUNTERS];
	struct rcb_event ev[8];
	struct rc_stats s;
	int n;

	WIDTH_SKIP();
	ASSERT_EQ(0, rc_thresholds(d->fd, self->max, 0));
	ASSERT_EQ(0, inject_then_singly(d->fd, rcd_set_paddr(d, set),
					d->info.rcb_cnodeid, self->max, 100));
	check_set(_metadata, d, set, NULL, one(ext, c, self->max),
		  one(lost, c, 100));
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(self->s0.pegged + 100, s.pegged);
	EXPECT_EQ(self->s0.references + self->max + 100, s.references);
	EXPECT_EQ(self->s0.folds + 1, s.folds);
	n = rc_events(d->fd, ev, 8);
	ASSERT_EQ(2, n) log_events(_metadata, ev, n);
	check_event(_metadata, d, &ev[0], RCB_EVENT_PEG, set, c, 100, 0);
	check_event(_metadata, d, &ev[1], RCB_EVENT_FOLD, set, c, self->max, 0);
	EXPECT_EQ(ev[0].seq + 1, ev[1].seq);
}

/*
 * One delivery of n references behaves like n references the threshold
 * interrupt keeps up with: the counter fills to the threshold, the set
 * folds, and so on; the rest stays in hardware. Nothing is lost.
 */
static void check_weight(struct __test_metadata *_metadata,
			 const struct rc_dev *d, const struct rc_stats *s0,
			 uint32_t abs, uint64_t set, uint32_t n)
{
	uint32_t folds = n > abs ? (n - 1) / abs : 0, rest = n - folds * abs;
	uint32_t ext[RCB_MAX_COUNTERS], hw[RCB_MAX_COUNTERS];
	struct rc_stats s;

	ASSERT_EQ(0, rc_inject1(d->fd, rcd_set_paddr(d, set), 0, n,
				RCB_INJECT_SYNC));
	/* What ends at the threshold is folded by the interrupt service. */
	if (rest == abs) {
		folds++;
		rest = 0;
	}
	check_set(_metadata, d, set, one(hw, 0, rest),
		  one(ext, 0, folds * abs), NULL);
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(s0->references + n, s.references);
	EXPECT_EQ(s0->folds + folds, s.folds);
	EXPECT_EQ(s0->pegged, s.pegged);
	EXPECT_EQ(s0->refs_dropped, s.refs_dropped);
}

/*
 * 100,000 references in one entry: with 11-bit counters 55 folds of 1792
 * and 1440 left in hardware, 55 FOLD records, lost 0; with 19-bit ones,
 * all in hardware.
 */
TEST_F(width, weight_folds)
{
	const struct rc_dev *d = &self->d;
	uint64_t set = rcd_mid_set(d, 72);
	struct rcb_event ev[64];
	int n, i;

	WIDTH_SKIP();
	check_weight(_metadata, d, &self->s0, self->abs, set, 100000);
	if (self->abs == 1792) {
		uint32_t ext[RCB_MAX_COUNTERS], hw[RCB_MAX_COUNTERS];

		check_set(_metadata, d, set, one(hw, 0, 1440),
			  one(ext, 0, 55 * 1792), NULL);
	}
	n = rc_events(d->fd, ev, 64);
	ASSERT_EQ(self->abs < 100000 ? (int)((100000 - 1) / self->abs) : 0, n)
		log_events(_metadata, ev, n);
	for (i = 0; i < n; i++)
		check_event(_metadata, d, &ev[i], RCB_EVENT_FOLD, set, 0,
			    self->abs, 0);
}

/* A single entry of 0xffffffff: every reference counted, none lost. */
TEST_F(width, weight_huge_count)
{
	WIDTH_SKIP();
	check_weight(_metadata, &self->d, &self->s0, self->abs,
		     rcd_mid_set(&self->d, 73), 0xffffffffU);
	rc_drain(self->d.fd);
}

/* ================================================ extended saturation */

/*
 * With 19-bit counters and abs = max, each RCB_INJECT_SYNC of max to every
 * counter of a set folds max into each extended counter; after 8194 of them
 * every extended counter stays at 0xffffffff and the excess is lost and
 * counted as saturated (never wrapped). 11-bit machines are reloaded with
 * premium=1 (2^32 / 2047 folds would take too long).
 */
FIXTURE(saturation) {
	struct rc_dev d;
	bool skip, reloaded;
};

FIXTURE_SETUP(saturation)
{
	struct rc_nodes mem;

	self->d.fd = -1;
	if (rc_ko_path()) {
		ASSERT_EQ(0, rc_ensure_default());
	}
	ASSERT_EQ(0, rc_mem_nodes(&mem));
	ASSERT_EQ(0, rcd_open_clean(&self->d, mem.id[0]));
	if (self->d.info.rcb_hw_counter_bits == 11) {
		rcd_close(&self->d);
		if (!rc_ko_path()) {
			self->skip = true;
			return;
		}
		ASSERT_EQ(0, rc_reload("premium=1"));
		self->reloaded = true;
		ASSERT_EQ(0, rcd_open_clean(&self->d, mem.id[0]));
	}
	ASSERT_EQ(19U, self->d.info.rcb_hw_counter_bits);
}

FIXTURE_TEARDOWN(saturation)
{
	EXPECT_EQ(0, rcd_close_clean(&self->d));
	if (self->reloaded) {
		EXPECT_EQ(0, rc_ensure_default());
	}
}

TEST_F_TIMEOUT(saturation, ext_saturates, 300)
{
	const struct rc_dev *d = &self->d;
	uint32_t max = d->info.rcb_hw_counter_max;
	uint64_t set = rcd_mid_set(d, 80), total, calls, i, t0;
	uint32_t ext[RCB_MAX_COUNTERS], lost[RCB_MAX_COUNTERS];
	struct rcb_ref refs[RCB_MAX_COUNTERS];
	struct rc_stats s0, s;
	unsigned int c;
	uint32_t *map;

	if (self->skip)
		SKIP(return, "11-bit counters and no REFCNT_KO to load premium=1");
	ASSERT_EQ(0, rc_thresholds(d->fd, max, 0));
	ASSERT_EQ(0, rc_stats_read(d->nid, &s0));
	for (c = 0; c < d->cps; c++)
		refs[c] = (struct rcb_ref){ rcd_set_paddr(d, set),
					    rcd_last_cnode(d, c), max };
	calls = 0xffffffffULL / max + 2;
	t0 = rc_now_ns();
	for (i = 0; i < calls; i++) {
		ASSERT_EQ(0, rc_inject(d->fd, refs, d->cps, RCB_INJECT_SYNC))
			TH_LOG("call %llu", U64(i));
		if (!(i % 1024))
			rc_drain(d->fd);
	}
	TH_LOG("%llu folds of %u counters in %.1f s", U64(calls), d->cps,
	       (rc_now_ns() - t0) / 1e9);
	total = calls * max;
	for (c = 0; c < d->cps; c++) {
		ext[c] = 0xffffffffU;
		lost[c] = total - 0xffffffffULL;
	}
	check_set(_metadata, d, set, NULL, ext, lost);
	ASSERT_EQ(0, rc_stats_read(d->nid, &s));
	EXPECT_EQ(s0.saturated + d->cps * (total - 0xffffffffULL), s.saturated);
	EXPECT_EQ(s0.pegged, s.pegged);
	/* A fold may run between the entries of a call: then two. */
	EXPECT_LE(s0.folds + calls, s.folds);
	EXPECT_EQ(s0.references + d->cps * total, s.references);

	map = mmap(NULL, d->info.rcb_len, PROT_READ, MAP_SHARED, d->fd, 0);
	ASSERT_TRUE(map != MAP_FAILED);
	for (c = 0; c < d->cps; c++)
		EXPECT_EQ(0xffffffffU, map[set * d->cps + c]);
	munmap(map, d->info.rcb_len);

	/* Saturated stays saturated. */
	ASSERT_EQ(0, rc_inject(d->fd, refs, d->cps, RCB_INJECT_SYNC));
	for (c = 0; c < d->cps; c++)
		lost[c] += max;
	check_set(_metadata, d, set, NULL, ext, lost);
}

TEST_HARNESS_MAIN
