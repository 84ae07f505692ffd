// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt-track.so: large allocations and mappings, the objects of
 * refcnt-run's report. Each gets its call stack and an entry in the table;
 * the live ones are found by address in a private hash table, which a
 * free() consults only when a 64 Ki-bit filter of their addresses says it
 * may hold the pointer (one load for any other free).
 *
 * The counters are physical: a page keeps its counts when it is freed and
 * given to someone else. Where the tracker can read them (a node device
 * opens), it reads an object's pages when it is allocated, if some are
 * present already (memory reused inside the process), and when it is
 * freed: refcnt-run gives the object what its pages counted in between,
 * and the counts of memory freed before the exit are not lost with it.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include <refcnt/refcnt.h>

#include "track.h"

#define LIVE_CAP	(1U << 18)
#define LIVE_FREE	0
#define LIVE_GONE	1		/* a deleted entry, probing goes on */
#define QUERY_CHUNK	512		/* pages per range query */
#define MAX_CNODES	1024

struct live {
	uint64_t start;
	uint32_t obj;
	uint32_t pad;
};

static struct live *live;
uint64_t track_filter[TRACK_FILTER_BITS / 64];
uintptr_t track_large_lo, track_large_hi;
static int lock_word;

static struct refcnt_node *qnode;
static void *ext_buf, *hw_buf;
static struct refcnt_node *by_cnode[MAX_CNODES];
static int lost_tried;

static void lock(void)
{
	while (__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void unlock(void)
{
	__atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE);
}

#define hash_addr track_hash_addr

/* Under the lock. */
static void live_put(uint64_t start, uint32_t obj)
{
	uint32_t i = hash_addr(start) & (LIVE_CAP - 1), p, b;

	for (p = 0; p < LIVE_CAP; p++, i = (i + 1) & (LIVE_CAP - 1))
		if (live[i].start == LIVE_FREE || live[i].start == LIVE_GONE) {
			live[i].start = start;
			live[i].obj = obj;
			if (!track_large_hi || start < track_large_lo)
				__atomic_store_n(&track_large_lo, start, __ATOMIC_RELAXED);
			if (start >= track_large_hi)
				__atomic_store_n(&track_large_hi, start + 1, __ATOMIC_RELAXED);
			b = hash_addr(start) & (TRACK_FILTER_BITS - 1);
			__atomic_fetch_or(&track_filter[b / 64], 1ULL << (b % 64),
					  __ATOMIC_RELAXED);
			return;
		}
}

/* Under the lock: remove start's entry; its object, or -1. */
static int64_t live_take(uint64_t start)
{
	uint32_t i = hash_addr(start) & (LIVE_CAP - 1), p;

	for (p = 0; p < LIVE_CAP && live[i].start != LIVE_FREE;
	     p++, i = (i + 1) & (LIVE_CAP - 1))
		if (live[i].start == start) {
			live[i].start = LIVE_GONE;
			return live[i].obj;
		}
	return -1;
}

void track_objects_init(void)
{
	void *p = real.mmap(NULL, LIVE_CAP * sizeof(struct live),
			    PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	live = p == MAP_FAILED ? NULL : p;
}

/* The node device for range queries, and the layout of the counters. */
void track_readings_init(struct track_header *h)
{
	struct rcb_info info;
	int nids[64], n, i;
	size_t bytes;

	n = refcnt_nodes(nids, 64);
	for (i = 0; i < n && i < 64 && !qnode; i++)
		qnode = refcnt_node_open(nids[i], 0);
	if (!qnode || refcnt_node_info(qnode, &info) ||
	    info.rcb_sw_counters_per_set > TRACK_COUNTERS)
		return;
	bytes = QUERY_CHUNK * RCB_PAGE_SET_SIZE(info.rcb_sw_counters_per_set);
	ext_buf = real.mmap(NULL, 2 * bytes, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ext_buf == MAP_FAILED)
		return;
	hw_buf = (char *)ext_buf + bytes;
	T.nr_counters = info.rcb_sw_counters_per_set;
	T.nodes_per_counter = info.rcb_nodes_per_counter ? info.rcb_nodes_per_counter : 1;
	T.granularity = info.rcb_granularity;
	h->nr_counters = T.nr_counters;
	h->nodes_per_counter = T.nodes_per_counter;
	h->granularity = info.rcb_granularity;
	h->flags |= TRACK_F_COUNTERS;
}

/* The tracker's own mappings into the header: not the program's memory. */
void track_own_memory(struct track_header *h)
{
	int n = 0;

	if (live) {
		h->own[n].start = (uintptr_t)live;
		h->own[n++].len = LIVE_CAP * sizeof(struct live);
	}
	if (ext_buf && ext_buf != MAP_FAILED) {
		h->own[n].start = (uintptr_t)ext_buf;
		h->own[n++].len = 2 * ((uintptr_t)hw_buf - (uintptr_t)ext_buf);
	}
}

/* Every node's device by cnodeid, for the lost counts (root only). */
static void open_nodes(void)
{
	int nids[MAX_CNODES], n, i;

	lost_tried = 1;
	n = refcnt_nodes(nids, MAX_CNODES);
	for (i = 0; i < n && i < MAX_CNODES; i++) {
		struct refcnt_node *nd = refcnt_node_open(nids[i], 0);
		int c = nd ? refcnt_node_cnodeid(nd) : -1;

		if (c >= 0 && c < MAX_CNODES && !by_cnode[c])
			by_cnode[c] = nd;
		else
			refcnt_node_close(nd);
	}
}

/* Internal to a reading: a page's lost count could not be read. */
#define R_NO_LOST	(1U << 31)

/* The references lost to pegging on the set of paddr, added to r. */
static void add_lost(struct track_reading *r, int cnodeid, uint64_t paddr)
{
	uint32_t lost[TRACK_COUNTERS];
	struct refcnt_node *nd;
	int64_t set;
	int c;

	if (!lost_tried)
		open_nodes();
	nd = cnodeid >= 0 && cnodeid < MAX_CNODES ? by_cnode[cnodeid] : NULL;
	set = nd ? refcnt_node_locate(nd, paddr) : -1;
	if (set < 0 || refcnt_node_read_sets(nd, set, 1, NULL, NULL, lost)) {
		r->flags |= R_NO_LOST;
		return;
	}
	for (c = 0; c < T.nr_counters; c++)
		r->lost[c] += lost[c];
}

/* One query chunk's pages into r. */
static void add_pages(struct track_reading *r, size_t n)
{
	size_t i;
	int c;

	for (i = 0; i < n; i++) {
		struct rcb_page_set *e = refcnt_page_set(ext_buf, i, T.nr_counters);
		struct rcb_page_set *hw = refcnt_page_set(hw_buf, i, T.nr_counters);
		int home;

		if (!(e->flags & RCB_PAGE_PRESENT))
			continue;
		r->pages_present++;
		if (e->flags & (RCB_PAGE_DENIED | RCB_PAGE_UNCOUNTED) || e->cnodeid < 0)
			continue;
		r->pages_counted++;
		home = e->cnodeid / T.nodes_per_counter;
		if (home < TRACK_COUNTERS)
			r->home[home]++;
		for (c = 0; c < T.nr_counters; c++) {
			uint64_t v = (uint64_t)e->refcnt[c] + hw->refcnt[c];

			r->refs[c] += v;
			if (c == home)
				r->local += v;
		}
		/* Without CAP_SYS_ADMIN no paddr, so no set, so no lost. */
		if (!e->paddr)
			r->flags |= R_NO_LOST;
		else if (!(r->flags & R_NO_LOST))
			add_lost(r, e->cnodeid, e->paddr);
	}
}

/* Sum the counters of [start, start + len) into r: 0, or -1. */
static int read_counters(uint64_t start, uint64_t len, struct track_reading *r)
{
	uint64_t a = start - start % T.granularity, end = start + len;

	while (a < end) {
		uint64_t chunk = end - a;
		size_t n1, n2;

		if (chunk > QUERY_CHUNK * T.granularity)
			chunk = QUERY_CHUNK * T.granularity;
		if (refcnt_node_range_query_packed(qnode, 0, a, chunk,
						   RCB_RANGE_EXTENDED, ext_buf,
						   QUERY_CHUNK, &n1) ||
		    refcnt_node_range_query_packed(qnode, 0, a, chunk, 0, hw_buf,
						   QUERY_CHUNK, &n2))
			return -1;
		add_pages(r, n1 < n2 ? n1 : n2);
		a += chunk;
	}
	if (r->pages_counted && !(r->flags & R_NO_LOST)) {
		r->flags |= TRACK_R_LOST;
		T.h->flags |= TRACK_F_PADDR;
	}
	r->flags &= ~R_NO_LOST;
	return 0;
}

/* Under the lock: a reading of obj's range; its index + 1, or 0. */
static uint32_t take_reading(uint32_t obj, uint64_t start, uint64_t len,
			     uint32_t flags)
{
	struct track_reading r;
	uint32_t i;

	if (!T.nr_counters)
		return 0;
	memset(&r, 0, sizeof(r));
	r.obj = obj;
	r.flags = flags;
	if (read_counters(start, len, &r) ||
	    (!r.pages_present && !(flags & TRACK_R_END)))
		return 0;
	i = __atomic_fetch_add(&T.h->reads_nr, 1, __ATOMIC_RELAXED);
	if (i >= T.h->reads_cap) {
		__atomic_fetch_add(&T.h->dropped_reads, 1, __ATOMIC_RELAXED);
		return 0;
	}
	T.reads[i] = r;
	return i + 1;
}

void track_large(void *p, size_t size, size_t len, enum track_kind kind,
		 int arg_node)
{
	unsigned int cpu, node;
	struct track_obj *o;
	uint32_t idx;
	int site;

	if (!live)
		return;
	track_busy++;
	site = track_site_stack(kind);
	idx = __atomic_fetch_add(&T.h->objs_nr, 1, __ATOMIC_RELAXED);
	if (idx >= T.h->objs_cap) {
		__atomic_fetch_add(&T.h->dropped_objs, 1, __ATOMIC_RELAXED);
		track_busy--;
		return;
	}
	o = &T.objs[idx];
	o->start = (uintptr_t)p;
	o->size = size;
	o->len = len;
	o->site = site < 0 ? UINT32_MAX : (uint32_t)site;
	o->kind = kind;
	o->tid = track_tid();
	o->node = getcpu(&cpu, &node) ? -1 : (int32_t)node;
	o->arg_node = arg_node;
	o->t_alloc_ns = track_now_ns() - T.h->start_ns;
	lock();
	o->base_read = take_reading(idx, o->start, len, 0);
	live_put(o->start, idx);
	unlock();
	__atomic_fetch_add(&T.h->bytes_large, size, __ATOMIC_RELAXED);
	__atomic_store_n(&o->ready, 1, __ATOMIC_RELEASE);
	track_busy--;
}

int track_release(void *p, size_t len, uint32_t flags)
{
	struct track_obj *o;
	int64_t idx;

	track_busy++;
	lock();
	idx = live ? live_take((uintptr_t)p) : -1;
	if (idx >= 0) {
		o = &T.objs[idx];
		o->end_read = take_reading(idx, o->start, o->len, TRACK_R_END);
		o->t_free_ns = track_now_ns() - T.h->start_ns;
		if (len && len < o->len)
			flags |= TRACK_O_PARTIAL;
		__atomic_fetch_or(&o->flags, TRACK_O_FREED | flags, __ATOMIC_RELAXED);
	}
	unlock();
	track_busy--;
	return (int)idx;
}

void track_moved(void *old, void *p, size_t len)
{
	int64_t idx;

	track_busy++;
	lock();
	idx = live ? live_take((uintptr_t)old) : -1;
	if (idx >= 0) {
		T.objs[idx].start = (uintptr_t)p;
		T.objs[idx].len = len;
		live_put((uintptr_t)p, idx);
	}
	unlock();
	track_busy--;
}

void track_placed(void *p, int node)
{
	int64_t idx;

	track_busy++;
	lock();
	idx = live ? live_take((uintptr_t)p) : -1;
	if (idx >= 0) {
		T.objs[idx].arg_node = node;
		__atomic_fetch_or(&T.objs[idx].flags, TRACK_O_PLACED, __ATOMIC_RELAXED);
		live_put((uintptr_t)p, idx);
	}
	unlock();
	track_busy--;
}
