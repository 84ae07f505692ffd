// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * A fake refcnt.ko for host unit tests (see fake.h). Linked with
 * -Wl,--wrap=open,--wrap=open64,--wrap=close,--wrap=ioctl,--wrap=opendir.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake.h"

int __real_open(const char *path, int flags, ...);
int __real_open64(const char *path, int flags, ...);
int __real_close(int fd);
int __real_ioctl(int fd, unsigned long req, ...);
DIR *__real_opendir(const char *name);

struct fake_config fake_cfg;
struct fake_stats fake_stats;

#define FAKE_MAX_FDS	64
static struct { int fd; int node; } fake_fds[FAKE_MAX_FDS];
static char fake_dir[64];

static void fake_cleanup_dir(void)
{
	DIR *d;
	struct dirent *de;
	char p[512];

	if (!fake_dir[0])
		return;
	d = __real_opendir(fake_dir);
	if (d) {
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "%s/%s", fake_dir, de->d_name);
			unlink(p);
		}
		closedir(d);
	}
}

static void fake_atexit(void)
{
	fake_cleanup_dir();
	if (fake_dir[0])
		rmdir(fake_dir);
}

void fake_reset(void)
{
	unsigned int i;

	memset(&fake_cfg, 0, sizeof(fake_cfg));
	memset(&fake_stats, 0, sizeof(fake_stats));
	fake_cfg.granularity = 4096;
	fake_cfg.cnodes = 3;
	for (i = 0; i < FAKE_MAX_NODES; i++)
		fake_cfg.nodes[i].nid = -1;
	/* nid 0: one slot; nid 2: three slots with holes; nid 5: CPU-less */
	fake_cfg.nodes[0].nid = 0;
	fake_cfg.nodes[0].nr_slots = 1;
	fake_cfg.nodes[0].slots[0] = (struct rcb_slot){ 0x0, 0x100000 };
	fake_cfg.nodes[1].nid = 2;
	fake_cfg.nodes[1].nr_slots = 3;
	fake_cfg.nodes[1].slots[0] = (struct rcb_slot){ 0x100000, 0x40000 };
	fake_cfg.nodes[1].slots[1] = (struct rcb_slot){ 0x200000, 0x10000 };
	fake_cfg.nodes[1].slots[2] = (struct rcb_slot){ 0x400000, 0x100000 };
	fake_cfg.nodes[2].nid = 5;
	fake_cfg.nodes[2].nr_slots = 1;
	fake_cfg.nodes[2].slots[0] = (struct rcb_slot){ 0x1000000, 0x20000 };
	if (!fake_dir[0]) {
		strcpy(fake_dir, "/tmp/refcnt-fake.XXXXXX");
		if (!mkdtemp(fake_dir)) {
			perror("mkdtemp");
			exit(2);
		}
		atexit(fake_atexit);
	}
}

static int fake_node_index(int nid)
{
	int i;

	for (i = 0; i < FAKE_MAX_NODES; i++)
		if (fake_cfg.nodes[i].nid == nid && nid >= 0)
			return i;
	return -1;
}

static uint64_t fake_node_sets(const struct fake_node *n)
{
	uint64_t s = 0;
	unsigned int i;

	for (i = 0; i < n->nr_slots; i++)
		s += n->slots[i].size / fake_cfg.granularity;
	return s;
}

static unsigned int fake_cps(void)
{
	return fake_cfg.cnodes <= 64 ? fake_cfg.cnodes : (fake_cfg.cnodes + 7) / 8;
}

static uint32_t fake_ext(uint64_t set, unsigned int c)
{
	return (uint32_t)(set * 7 + c);
}

int fake_open_fds(void)
{
	int i, n = 0;

	for (i = 0; i < FAKE_MAX_FDS; i++)
		n += fake_fds[i].fd > 0;
	return n;
}

static int fake_lookup_fd(int fd)
{
	int i;

	for (i = 0; i < FAKE_MAX_FDS; i++)
		if (fake_fds[i].fd == fd && fd > 0)
			return fake_fds[i].node;
	return -1;
}

static int fake_open_dev(const char *path)
{
	const struct fake_node *n;
	long psz = sysconf(_SC_PAGESIZE);
	uint64_t sets, words, i;
	uint32_t *t;
	size_t len;
	char *end;
	int idx, fd, slot;
	long nid;

	nid = strtol(path + strlen("/dev/refcnt/node"), &end, 10);
	idx = *end ? -1 : fake_node_index((int)nid);
	if (idx < 0) {
		errno = ENOENT;
		return -1;
	}
	n = &fake_cfg.nodes[idx];
	if (n->open_errno) {
		errno = n->open_errno;
		return -1;
	}
	fd = memfd_create("fake-refcnt", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	sets = fake_node_sets(n);
	words = sets * fake_cps();
	len = (words * 4 + psz - 1) / psz * psz;
	if (ftruncate(fd, len ? (off_t)len : (off_t)psz)) {
		__real_close(fd);
		return -1;
	}
	t = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (t == MAP_FAILED) {
		__real_close(fd);
		return -1;
	}
	for (i = 0; i < words; i++)
		t[i] = fake_ext(i / fake_cps(), i % fake_cps());
	munmap(t, len);
	for (slot = 0; slot < FAKE_MAX_FDS; slot++)
		if (fake_fds[slot].fd <= 0)
			break;
	if (slot == FAKE_MAX_FDS) {
		__real_close(fd);
		errno = EMFILE;
		return -1;
	}
	fake_fds[slot].fd = fd;
	fake_fds[slot].node = idx;
	fake_stats.opens++;
	return fd;
}

static int fake_err(int e);

/* A module parameter file: a memfd holding the configured value. */
#define FAKE_PARAMS	"/sys/module/refcnt/parameters/"
static int fake_open_param(const char *path)
{
	const char *name = path + strlen(FAKE_PARAMS);
	char buf[32];
	int fd, len;

	if (fake_cfg.params_missing) {
		errno = ENOENT;
		return -1;
	}
	if (!strcmp(name, "fault_period"))
		len = snprintf(buf, sizeof(buf), "%u\n", fake_cfg.fault_period);
	else if (!strcmp(name, "pebs_period"))
		len = snprintf(buf, sizeof(buf), "%u\n", fake_cfg.pebs_period);
	else
		return fake_err(ENOENT);
	fd = memfd_create("fake-param", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, buf, len) != len || lseek(fd, 0, SEEK_SET)) {
		__real_close(fd);
		return fake_err(EIO);
	}
	return fd;
}

int __wrap_open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	if (!strncmp(path, "/dev/refcnt/node", 16))
		return fake_open_dev(path);
	if (!strncmp(path, FAKE_PARAMS, strlen(FAKE_PARAMS)))
		return fake_open_param(path);
	va_start(ap, flags);
	mode = va_arg(ap, mode_t);
	va_end(ap);
	return __real_open(path, flags, mode);
}

int __wrap_open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	if (!strncmp(path, "/dev/refcnt/node", 16))
		return fake_open_dev(path);
	if (!strncmp(path, FAKE_PARAMS, strlen(FAKE_PARAMS)))
		return fake_open_param(path);
	va_start(ap, flags);
	mode = va_arg(ap, mode_t);
	va_end(ap);
	return __real_open64(path, flags, mode);
}

int __wrap_close(int fd)
{
	int i;

	if (fd > 0 && fd == fake_stats.session_fd)
		fake_stats.session_fd = 0;
	for (i = 0; i < FAKE_MAX_FDS; i++)
		if (fake_fds[i].fd == fd && fd > 0)
			fake_fds[i].fd = 0;
	return __real_close(fd);
}

/* /dev/refcnt: a temporary directory with the configured nodes and junk. */
int fake_dev_missing;

DIR *__wrap_opendir(const char *name)
{
	static const char *const junk[] = { "node", "nodeX", "node1a", "other" };
	char p[128];
	unsigned int i;
	int fd;

	if (strcmp(name, "/dev/refcnt"))
		return __real_opendir(name);
	if (fake_dev_missing) {
		errno = ENOENT;
		return NULL;
	}
	fake_cleanup_dir();
	for (i = 0; i < FAKE_MAX_NODES; i++) {
		if (fake_cfg.nodes[i].nid < 0)
			continue;
		snprintf(p, sizeof(p), "%s/node%d", fake_dir, fake_cfg.nodes[i].nid);
		fd = __real_open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		if (fd >= 0)
			__real_close(fd);
	}
	for (i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", fake_dir, junk[i]);
		fd = __real_open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		if (fd >= 0)
			__real_close(fd);
	}
	return __real_opendir(fake_dir);
}

/* ------------------------------------------------------------ formulas */

int fake_present(uint64_t h)
{
	return (h / fake_cfg.granularity) % 5 != 3;
}

static int fake_denied(uint64_t h)
{
	return (h / fake_cfg.granularity) % 11 == 7;
}

static int fake_uncounted(uint64_t h)
{
	return (h / fake_cfg.granularity) % 13 == 5;
}

uint32_t fake_count(uint64_t h, unsigned int c, int extended)
{
	if (!fake_present(h) || fake_denied(h) || fake_uncounted(h) ||
	    c >= fake_cps())
		return 0;
	return (uint32_t)((h / fake_cfg.granularity) * 31 + c * 3 +
			  (extended ? 1000 : 0));
}

uint64_t fake_paddr(uint64_t h)
{
	uint64_t gran = fake_cfg.granularity, page = h / gran;

	if (!fake_present(h) || fake_denied(h))
		return 0;
	if (fake_cfg.paddr_in_slots) {
		const struct rcb_slot *s =
			&fake_cfg.nodes[page % fake_cfg.cnodes].slots[0];

		return s->base + page % (s->size / gran) * gran;
	}
	return 0x100000000ULL + (h / fake_cfg.granularity) * fake_cfg.granularity;
}

int32_t fake_cnodeid(uint64_t h)
{
	if (!fake_present(h) || fake_denied(h))
		return -1;
	return (int32_t)((h / fake_cfg.granularity) % fake_cfg.cnodes);
}

static void fake_entry(uint64_t h, int extended, struct rcb_page_counters *e)
{
	unsigned int c;

	memset(e, 0, sizeof(*e));
	e->cnodeid = fake_cnodeid(h);
	if (!fake_present(h))
		return;
	e->flags = RCB_PAGE_PRESENT;
	e->page_size = 4096;
	if (fake_denied(h)) {
		e->flags |= RCB_PAGE_DENIED;
		return;
	}
	if (fake_uncounted(h))
		e->flags |= RCB_PAGE_UNCOUNTED;
	e->paddr = fake_paddr(h);
	for (c = 0; c < 64; c++)
		e->refcnt[c] = fake_count(h, c, extended);
}

/* The same entry packed, RCB_PAGE_SET_SIZE(fake_cps()) bytes at dst. */
static void fake_entry_packed(uint64_t h, int extended, void *dst)
{
	struct rcb_page_set *p = dst;
	struct rcb_page_counters e;
	unsigned int c;

	fake_entry(h, extended, &e);
	memset(p, 0, RCB_PAGE_SET_SIZE(fake_cps()));
	p->paddr = e.paddr;
	p->flags = (uint32_t)e.flags;
	p->cnodeid = (int16_t)e.cnodeid;
	p->page_shift = e.page_size ? (uint8_t)__builtin_ctzll(e.page_size) : 0;
	for (c = 0; c < fake_cps(); c++)
		p->refcnt[c] = e.refcnt[c];
}

/* -------------------------------------------------------------- ioctls */

static int fake_err(int e)
{
	errno = e;
	return -1;
}

static int fake_range_query(struct rcb_range_query *q)
{
	struct rcb_page_counters *out = (void *)(uintptr_t)q->buf;
	uint64_t gran = fake_cfg.granularity, end, h, need, i;

	fake_stats.range_queries++;
	if (q->buf_entries > fake_stats.max_buf_entries)
		fake_stats.max_buf_entries = q->buf_entries;
	fake_stats.last_pid = q->pid;
	if (q->flags & ~RCB_RANGE_FLAGS || !q->len)
		return fake_err(EINVAL);
	end = q->vaddr + q->len;
	if (end < q->vaddr || end > 0x00007ffffffff000ULL)
		return fake_err(EINVAL);
	h = q->vaddr - q->vaddr % gran;
	need = (end - h + gran - 1) / gran;
	if (need > q->buf_entries)
		return fake_err(E2BIG);
	if (q->pid < 0)
		return fake_err(EINVAL);
	if (q->pid == 99999)
		return fake_err(ESRCH);
	for (i = 0; i < need; i++) {
		int ext = q->flags & RCB_RANGE_EXTENDED;

		if (q->flags & RCB_RANGE_PACKED)
			fake_entry_packed(h + i * gran, ext,
					  (char *)out + i * RCB_PAGE_SET_SIZE(fake_cps()));
		else
			fake_entry(h + i * gran, ext, &out[i]);
	}
	q->nr_entries = need;
	return 0;
}

/* RCB_COUNT_START: record it; a memfd stands for the session. */
static int fake_count_start(const struct rcb_count *c)
{
	fake_stats.count_starts++;
	fake_stats.last_count = *c;
	if (c->flags & ~RCB_COUNT_FLAGS || c->reserved[0] ||
	    (!c->fault_period && !c->pebs_period &&
	     !(c->flags & RCB_COUNT_DEVICES)))
		return fake_err(EINVAL);
	fake_stats.session_fd = memfd_create("fake-session", MFD_CLOEXEC);
	return fake_stats.session_fd;
}

static int fake_count_stats(struct rcb_count_stats *st)
{
	if (st->flags || st->pad || st->dropped || st->throttled)
		return fake_err(EINVAL);
	st->samples = FAKE_SESSION_SAMPLES;
	st->delivered = FAKE_SESSION_DELIVERED;
	st->unresolved = 1;
	st->outside = 1;
	return 0;
}

/*
 * RCB_COUNT_READ: entry i of a session with d data and n instruction
 * ranges holds i + 1 in every field but nodes, where counter c has
 * 100 * (i + 1) + c.
 */
static int fake_count_read(struct rcb_count_read *r)
{
	const struct rcb_count *c = &fake_stats.last_count;
	uint32_t have = 1 + c->nr_ranges + c->nr_iranges, i, k;
	struct rcb_count_totals *t = (void *)(uintptr_t)r->totals;

	if (r->flags || r->reserved[0] || r->reserved[1])
		return fake_err(EINVAL);
	for (i = 0; i < have && i < r->nr_totals; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		t[i].references = t[i].loads = t[i].stores = i + 1;
		t[i].local = t[i].remote = t[i].lost = t[i].samples = i + 1;
		for (k = 0; k < fake_cps(); k++)
			t[i].nodes[k] = 100 * (i + 1) + k;
	}
	r->nr_totals = have;
	return 0;
}

/* RCB_FEEDS_GET: fault and hub. */
static int fake_feeds_get(struct rcb_feeds_query *q)
{
	static const struct rcb_feed_info feeds[] = {
		{ .name = "fault", .caps = RCB_FEED_DATA_ADDR |
		  RCB_FEED_INSTR_ADDR | RCB_FEED_SESSION,
		  .state = RCB_FEED_PRESENT },
		{ .name = "hub", .caps = RCB_FEED_DATA_ADDR |
		  RCB_FEED_INSTR_ADDR | RCB_FEED_LOADS | RCB_FEED_STORES |
		  RCB_FEED_SESSION | RCB_FEED_DEVICE,
		  .state = RCB_FEED_PRESENT | RCB_FEED_ON,
		  .period = 64 },
	};
	struct rcb_feed_info *out = (void *)(uintptr_t)q->feeds;
	uint32_t i;

	if (q->flags || q->reserved)
		return fake_err(EINVAL);
	for (i = 0; i < 2 && i < q->nr_feeds; i++)
		out[i] = feeds[i];
	q->nr_feeds = 2;
	return 0;
}

/*
 * The first RCB_RANGE_QUERY: as the module reads a smaller struct, the
 * fields past its 48 bytes are zero and only 48 bytes are written back.
 */
static int fake_range_query_ver0(void *arg)
{
	struct rcb_range_query q = { 0 };
	int ret;

	fake_stats.range_queries_ver0++;
	memcpy(&q, arg, RCB_RANGE_QUERY_SIZE_VER0);
	ret = fake_range_query(&q);
	memcpy(arg, &q, RCB_RANGE_QUERY_SIZE_VER0);
	return ret;
}

int __wrap_ioctl(int fd, unsigned long req, ...)
{
	const struct fake_node *n;
	va_list ap;
	void *arg;
	int idx;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fd > 0 && fd == fake_stats.session_fd)
		return req == RCB_COUNT_STATS ? fake_count_stats(arg) :
		       req == RCB_COUNT_READ ? fake_count_read(arg) :
					       fake_err(ENOTTY);
	idx = fake_lookup_fd(fd);
	if (idx < 0)
		return __real_ioctl(fd, req, arg);
	n = &fake_cfg.nodes[idx];

	switch (req) {
	case RCB_INFO_GET: {
		struct rcb_info *info = arg;
		uint64_t sets = fake_node_sets(n), bytes = 0;
		unsigned int i;

		for (i = 0; i < n->nr_slots; i++)
			bytes += n->slots[i].size;
		memset(info, 0, sizeof(*info));
		info->rcb_sw_sets = sets;
		info->rcb_sw_counters_per_set = fake_cps();
		info->rcb_len = sets * fake_cps() * 4;
		info->rcb_base_pages = bytes / 4096;
		info->rcb_base_paddr = n->nr_slots ? n->slots[0].base : 0;
		info->rcb_sw_counter_size = 4;
		info->rcb_base_page_size = 4096;
		info->rcb_cnodeid = idx;
		info->rcb_granularity = fake_cfg.granularity;
		info->rcb_hw_counter_max = 0x7ff;
		info->rcb_abs_threshold = 0x700;
		info->rcb_num_slots = n->nr_slots;
		info->rcb_nodeid = n->nid;
		info->rcb_num_cnodes = fake_cfg.cnodes;
		info->rcb_hw_counter_bits = 11;
		info->rcb_nodes_per_counter = fake_cfg.cnodes <= 64 ? 1 : 8;
		return 0;
	}
	case RCB_SLOT_QUERY: {
		struct rcb_slot_query *q = arg;
		struct rcb_slot *s = (void *)(uintptr_t)q->slots;
		unsigned int i;

		if (q->flags)
			return fake_err(EINVAL);
		for (i = 0; i < q->num_slots && i < n->nr_slots; i++)
			s[i] = n->slots[i];
		q->num_slots = n->nr_slots;
		return 0;
	}
	case RCB_SETS_READ: {
		struct rcb_sets_read *r = arg;
		uint32_t *hw = (void *)(uintptr_t)r->hw;
		uint32_t *ext = (void *)(uintptr_t)r->ext;
		uint32_t *lost = (void *)(uintptr_t)r->lost;
		unsigned int cps = fake_cps(), c;
		uint64_t s;

		if (r->flags || r->pad ||
		    r->first_set + r->nr_sets > fake_node_sets(n) ||
		    r->first_set + r->nr_sets < r->first_set)
			return fake_err(EINVAL);
		for (s = 0; s < r->nr_sets; s++)
			for (c = 0; c < cps; c++) {
				uint64_t set = r->first_set + s;

				if (hw)
					hw[s * cps + c] = (uint32_t)(set * 3 + c);
				if (ext)
					ext[s * cps + c] = fake_ext(set, c);
				if (lost)
					lost[s * cps + c] = c;
			}
		return 0;
	}
	case RCB_SYNC:
		return 0;
	case RCB_RANGE_QUERY:
		if (fake_cfg.range_query_ver0_only) {
			fake_stats.range_queries_refused++;
			return fake_err(ENOTTY);
		}
		return fake_range_query(arg);
	case FAKE_RANGE_QUERY_VER0:
		return fake_range_query_ver0(arg);
	case RCB_COUNT_START:
		return fake_count_start(arg);
	case RCB_FEEDS_GET:
		return fake_feeds_get(arg);
	default:
		return fake_err(ENOTTY);
	}
}
