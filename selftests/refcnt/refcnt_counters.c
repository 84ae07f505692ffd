// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers of the refcnt counter selftests: one node device with its slots,
 * exact injection, reading sets, thresholds, the sysfs statistics, the
 * event queue, and reloading the module with other parameters.
 */
#define REFCNT_HELPERS_IMPL
#include "refcnt_counters.h"

void rcd_close(struct rc_dev *d)
{
	if (d->fd > 0)
		close(d->fd);
	free(d->slots);
	free(d->first);
	d->slots = NULL;
	d->first = NULL;
	d->fd = -1;
}

/* 0 or -errno. */
int rcd_open(struct rc_dev *d, int nid)
{
	uint64_t sets = 0;
	unsigned int i;
	int n;

	memset(d, 0, sizeof(*d));
	d->nid = nid;
	d->fd = rc_open_node(nid, O_RDONLY | O_NONBLOCK);
	if (d->fd < 0)
		return -errno;
	if (ioctl(d->fd, RCB_INFO_GET, &d->info))
		goto fail;
	n = rc_query_slots(d->fd, NULL, 0);
	if (n <= 0) {
		errno = n ? -n : ENODEV;
		goto fail;
	}
	d->slots = calloc(n, sizeof(*d->slots));
	d->first = calloc(n, sizeof(*d->first));
	if (!d->slots || !d->first)
		goto fail;
	if (rc_query_slots(d->fd, d->slots, n) != n) {
		errno = EIO;
		goto fail;
	}
	d->nslots = n;
	for (i = 0; i < d->nslots; i++) {
		d->first[i] = sets;
		sets += d->slots[i].size / d->info.rcb_granularity;
	}
	if (sets != d->info.rcb_sw_sets) {
		errno = EIO;
		goto fail;
	}
	d->cps = d->info.rcb_sw_counters_per_set;
	d->npc = d->info.rcb_nodes_per_counter;
	return 0;
fail:
	n = -errno;
	rcd_close(d);
	return n;
}

/* Physical address of the hardware page of a set (refcnt(5) slot rule). */
uint64_t rcd_set_paddr(const struct rc_dev *d, uint64_t set)
{
	unsigned int i = d->nslots - 1;

	while (i && d->first[i] > set)
		i--;
	return d->slots[i].base + (set - d->first[i]) * d->info.rcb_granularity;
}

/* Set of a physical address: (earlier slot sizes + offset) / granularity. */
int64_t rcd_paddr_set(const struct rc_dev *d, uint64_t paddr)
{
	uint64_t before = 0;
	unsigned int i;

	for (i = 0; i < d->nslots; i++) {
		if (paddr >= d->slots[i].base &&
		    paddr - d->slots[i].base < d->slots[i].size)
			return (before + paddr - d->slots[i].base) /
			       d->info.rcb_granularity;
		before += d->slots[i].size;
	}
	return -1;
}

unsigned int rcd_counter(const struct rc_dev *d,
				       unsigned int cnode)
{
	return cnode / d->npc;
}

/* The last cnodeid that counter c counts. */
unsigned int rcd_last_cnode(const struct rc_dev *d,
					  unsigned int c)
{
	unsigned int last = (c + 1) * d->npc - 1;

	if (last >= d->info.rcb_num_cnodes)
		last = d->info.rcb_num_cnodes - 1;
	return last;
}

/* A set in the middle of the node's largest slot, plus k. */
uint64_t rcd_mid_set(const struct rc_dev *d, uint64_t k)
{
	unsigned int i, big = 0;
	uint64_t n;

	for (i = 1; i < d->nslots; i++)
		if (d->slots[i].size > d->slots[big].size)
			big = i;
	n = d->slots[big].size / d->info.rcb_granularity;
	return d->first[big] + (n / 4 + k) % n;
}

/* ---------------------------------------------------------------- ioctls */

int rc_inject(int fd, const struct rcb_ref *refs, uint32_t nr,
			    uint32_t flags)
{
	struct rcb_inject in = {
		.refs = (uintptr_t)refs,
		.nr_refs = nr,
		.flags = flags,
	};

	return ioctl(fd, RCB_INJECT, &in) ? -errno : 0;
}

int rc_inject1(int fd, uint64_t paddr, uint32_t src,
			     uint32_t count, uint32_t flags)
{
	struct rcb_ref r = { .paddr = paddr, .src_cnodeid = src, .count = count };

	return rc_inject(fd, &r, 1, flags);
}

int rc_read_sets(int fd, uint64_t first, uint64_t nr,
			       uint32_t *hw, uint32_t *ext, uint32_t *lost)
{
	struct rcb_sets_read r = {
		.first_set = first,
		.nr_sets = nr,
		.hw = (uintptr_t)hw,
		.ext = (uintptr_t)ext,
		.lost = (uintptr_t)lost,
	};

	return ioctl(fd, RCB_SETS_READ, &r) ? -errno : 0;
}

int rcd_read_set(const struct rc_dev *d, uint64_t set,
			       struct rc_set *s)
{
	memset(s, 0xee, sizeof(*s));
	return rc_read_sets(d->fd, set, 1, s->hw, s->ext, s->lost);
}

int rc_thresholds(int fd, uint32_t abs, uint32_t diff)
{
	struct rcb_thresholds t = { .abs_threshold = abs, .diff_threshold = diff };

	return ioctl(fd, RCB_THRESHOLDS_SET, &t) ? -errno : 0;
}

int rc_sync(int fd)
{
	return ioctl(fd, RCB_SYNC) ? -errno : 0;
}

int rc_reset(int fd)
{
	return ioctl(fd, RCB_RESET) ? -errno : 0;
}

/* The node's thresholds as the module parameters make them at load. */
void rcd_default_thresholds(const struct rc_dev *d,
					  uint32_t *abs, uint32_t *diff)
{
	unsigned long a = 0, df = 0;
	uint32_t max = d->info.rcb_hw_counter_max;

	rc_read_ulong_param("abs_threshold", &a);
	rc_read_ulong_param("diff_threshold", &df);
	*abs = a ? a : (max + 1) - (max + 1) / 8;
	*diff = df;
}

int rcd_restore_thresholds(const struct rc_dev *d)
{
	uint32_t abs, diff;

	rcd_default_thresholds(d, &abs, &diff);
	return rc_thresholds(d->fd, abs, diff);
}

/* ------------------------------------------------------------ statistics */

int rc_stat(int nid, const char *name, uint64_t *v)
{
	char path[128];

	snprintf(path, sizeof(path), RC_STATSDIR "/%s", nid, name);
	return rc_read_u64(path, v);
}

int rc_stats_read(int nid, struct rc_stats *s)
{
	return rc_stat(nid, "references", &s->references) ?:
	       rc_stat(nid, "pegged", &s->pegged) ?:
	       rc_stat(nid, "saturated", &s->saturated) ?:
	       rc_stat(nid, "folds", &s->folds) ?:
	       rc_stat(nid, "migrations", &s->migrations) ?:
	       rc_stat(nid, "events_dropped", &s->events_dropped) ?:
	       rc_stat(nid, "refs_dropped", &s->refs_dropped) ?:
	       rc_stat(nid, "discarded", &s->discarded) ?:
	       rc_stat(nid, "overflowed", &s->overflowed) ?:
	       rc_stat(nid, "offlined", &s->offlined) ?:
	       rc_stat(nid, "table_bytes", &s->table_bytes);
}

/* ---------------------------------------------------------------- events */

/*
 * Read every queued record of a non-blocking fd into ev (up to max; the
 * rest are drained and dropped). Returns records read into ev, or -errno
 * for an error other than EAGAIN.
 */
int rc_events(int fd, struct rcb_event *ev, int max)
{
	struct rcb_event buf[64];
	int n = 0;

	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));
		int i;

		if (r < 0)
			return errno == EAGAIN ? n : -errno;
		if (r == 0 || r % RC_EVENT_SIZE)
			return -EIO;
		for (i = 0; i < r / RC_EVENT_SIZE; i++)
			if (n < max)
				ev[n++] = buf[i];
	}
}

/* Read and drop every queued record. Returns how many, or -errno. */
int rc_drain(int fd)
{
	struct rcb_event buf[64];
	int n = 0;

	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));

		if (r < 0)
			return errno == EAGAIN ? n : -errno;
		if (r == 0 || r % RC_EVENT_SIZE)
			return -EIO;
		n += r / RC_EVENT_SIZE;
	}
}

const char *rc_event_name(uint32_t type)
{
	switch (type) {
	case RCB_EVENT_FOLD: return "FOLD";
	case RCB_EVENT_PEG: return "PEG";
	case RCB_EVENT_MIGRATE: return "MIGRATE";
	case RCB_EVENT_LOST: return "LOST";
	case RCB_EVENT_LAYOUT: return "LAYOUT";
	}
	return "?";
}

/* --------------------------------------------------------------- module */

/* Module loaded with every parameter at its default, the queue length too. */
bool rc_module_default(void)
{
	unsigned long qlen;
	struct rc_params p;

	if (!rc_module_loaded() || rc_read_params(&p) ||
	    !rc_params_equal(&p, &rc_default_params) ||
	    rc_read_ulong_param("event_queue_len", &qlen) ||
	    qlen != RC_DEF_QUEUE_LEN)
		return false;
	/* The feeds (when the module has them) are off by default. */
	if (!rc_read_ulong_param("fault_period", &qlen) && qlen)
		return false;
	if (!rc_read_ulong_param("pebs_period", &qlen) && qlen)
		return false;
	return true;
}

/* Unload (retrying while references go away) and load with params. */
int rc_reload(const char *params)
{
	int ret;

	if (!rc_ko_path())
		return -ENOENT;
	ret = rc_unload_retry();
	return ret ? ret : rc_load(params);
}

/* Leave the module loaded with all defaults (event_queue_len included). */
int rc_ensure_default(void)
{
	if (rc_module_default())
		return 0;
	return rc_reload("");
}

/* ------------------------------------------------------------------ misc */

uint64_t rc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* xorshift64*: reproducible per-thread random numbers. */
uint64_t rc_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* The nodes with memory whose device exists, ascending. */
int rc_mem_nodes(struct rc_nodes *mem)
{
	int ret = rc_node_list("has_memory", mem);

	if (ret)
		return ret;
	return mem->n ? 0 : -ENODEV;
}


/*
 * rcd_open() the node, left as a test expects to find it: the default
 * thresholds (re-read into d->info), no counts, no queued event.
 * 0 or -errno.
 */
int rcd_open_clean(struct rc_dev *d, int nid)
{
	int ret = rcd_open(d, nid);

	if (ret)
		return ret;
	ret = rcd_restore_thresholds(d) ?: rc_reset(d->fd);
	if (!ret && rc_drain(d->fd) < 0)
		ret = -EIO;
	if (!ret && ioctl(d->fd, RCB_INFO_GET, &d->info))
		ret = -errno;
	if (ret)
		rcd_close(d);
	return ret;
}

/*
 * Leave the node clean for the next test (default thresholds, no counts,
 * no queued event) and rcd_close() it. 0 or -errno; nothing to do when
 * it is not open.
 */
int rcd_close_clean(struct rc_dev *d)
{
	int ret = 0;

	if (d->fd >= 0) {
		ret = rcd_restore_thresholds(d) ?: rc_reset(d->fd);
		rc_drain(d->fd);
	}
	rcd_close(d);
	return ret;
}

/*
 * Make a counter peg: with the node's absolute threshold at the maximum
 * (as @fd's node has it: restored after), one entry of @max references
 * raises the fold and @lost single references after it in the same batch
 * find the counter at its maximum and are lost. 0, or -errno.
 */
int rc_inject_pegging(int fd, uint64_t paddr, uint32_t src_cnodeid,
		      uint32_t lost)
{
	struct rcb_info info;
	struct rcb_thresholds t = { 0 }, old = { 0 };
	struct rcb_inject in = { .flags = RCB_INJECT_SYNC };
	struct rcb_ref *refs;
	uint32_t i;
	int ret = 0;

	if (ioctl(fd, RCB_INFO_GET, &info))
		return -errno;
	old.abs_threshold = info.rcb_abs_threshold;
	old.diff_threshold = info.rcb_diff_threshold;
	t.abs_threshold = info.rcb_hw_counter_max;
	t.diff_threshold = info.rcb_diff_threshold;
	refs = calloc(lost + 1, sizeof(*refs));
	if (!refs)
		return -ENOMEM;
	for (i = 0; i <= lost; i++)
		refs[i] = (struct rcb_ref){ paddr, src_cnodeid,
					    i ? 1 : info.rcb_hw_counter_max };
	in.refs = (uintptr_t)refs;
	in.nr_refs = lost + 1;
	if (ioctl(fd, RCB_THRESHOLDS_SET, &t) || ioctl(fd, RCB_INJECT, &in))
		ret = -errno;
	if (ioctl(fd, RCB_THRESHOLDS_SET, &old) && !ret)
		ret = -errno;
	free(refs);
	return ret;
}

/* ------------------------------------------------------ a CPU kept busy */

/* The first and last CPU we may run on; -ENODEV if they are one. */
int rc_two_cpus(int *first, int *last)
{
	cpu_set_t set;
	int cpu, n = 0;

	*first = *last = 0;
	if (sched_getaffinity(0, sizeof(set), &set))
		return -errno;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		if (!n++)
			*first = cpu;
		*last = cpu;
	}
	return n >= 2 ? 0 : -ENODEV;
}

int rc_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

int rc_idle(pid_t tid)
{
	struct sched_param p = { 0 };

	/* Linux: policy and priority are a thread's, even in a syscall. */
	return sched_setscheduler(tid, SCHED_IDLE, &p) ? -errno : 0;
}

static void *rc_hog_run(void *arg)
{
	struct rc_hog *h = arg;

	if (rc_pin(h->cpu))
		return NULL;
	__atomic_add_fetch(&h->spinning, 1, __ATOMIC_SEQ_CST);
	while (!h->stop)
		;
	return arg;
}

int rc_hog_start(struct rc_hog *h, int cpu)
{
	int i, err;

	h->cpu = cpu;
	h->stop = false;
	h->spinning = 0;
	for (i = 0; i < RC_HOGS; i++) {
		err = pthread_create(&h->th[i], NULL, rc_hog_run, h);
		if (err) {
			h->stop = true;
			while (i--)
				pthread_join(h->th[i], NULL);
			return -err;
		}
	}
	while (__atomic_load_n(&h->spinning, __ATOMIC_SEQ_CST) < RC_HOGS)
		usleep(1000);
	return 0;
}

void rc_hog_stop(struct rc_hog *h)
{
	int i;

	h->stop = true;
	for (i = 0; i < RC_HOGS; i++)
		pthread_join(h->th[i], NULL);
}

/*
 * @nr entries of one reference each, spread over every page of @d's
 * counters (so that a batch finds them cold after a reset), from every
 * cnodeid. NULL if out of memory.
 */
struct rcb_ref *rcd_spread_refs(const struct rc_dev *d, uint32_t nr)
{
	struct rcb_ref *refs = calloc(nr, sizeof(*refs));
	uint64_t sets = d->info.rcb_sw_sets, r = 0x5eed;
	uint32_t i;

	for (i = 0; refs && i < nr; i++) {
		refs[i].paddr = rcd_set_paddr(d, (i * 977ULL +
						  rc_rand(&r) % 977) % sets);
		refs[i].src_cnodeid = i % d->info.rcb_num_cnodes;
		refs[i].count = 1;
	}
	return refs;
}

/*
 * Wait up to @secs for node @nid's references to pass @than (*@now: the
 * last seen). 0, -ETIMEDOUT, or -EIO if unreadable.
 */
int rc_references_past(int nid, uint64_t than, int secs, uint64_t *now)
{
	uint64_t end = rc_now_ns() + secs * 1000000000ULL;

	do {
		if (rc_stat(nid, "references", now))
			return -EIO;
		if (*now > than)
			return 0;
		/* Short: a SCHED_IDLE caller on our CPU runs meanwhile. */
		usleep(200);
	} while (rc_now_ns() < end);
	return -ETIMEDOUT;
}
