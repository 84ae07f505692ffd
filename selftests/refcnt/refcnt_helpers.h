/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers for the refcnt selftests: sysfs/procfs parsing of the
 * node topology, the expected rcb_info of a node, module load/unload.
 *
 * Include after nothing else: it pulls in kselftest_harness.h so that the
 * check helpers below can use ASSERT_*() with the caller's _metadata.
 */
#ifndef REFCNT_HELPERS_H
#define REFCNT_HELPERS_H

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/refcnt.h>

/* The 6.1 harness has an unused parameter in its SIGALRM handler. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"

/*
 * Line-buffered stdout: the harness runs each test in a child that ends
 * with _exit(), which drops what a pipe's buffer still holds, and
 * run_tests.sh pipes the output: the figures tests print with
 * ksft_print_msg() would be lost.
 */
static void __attribute__((constructor)) rc_stdout_line_buffered(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
}
#pragma GCC diagnostic pop

#define RC_MAX_NODES	4096
#define RC_MAX_SLOTS	4096
#define RC_MAX_RANGES	4096

#define RC_SYSNODE	"/sys/devices/system/node"
#define RC_SYSMEM	"/sys/devices/system/memory"
#define RC_DEVDIR	"/dev/refcnt"
#define RC_MODDIR	"/sys/module/refcnt"
#define RC_PARAMDIR	RC_MODDIR "/parameters"

#define RC_DEF_GRANULARITY	4096UL

/* ---------------------------------------------------------------- files */

/* Read a small file, strip trailing whitespace. Returns length or -errno. */
static inline int rc_read_file(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	close(fd);
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		n--;
	buf[n] = '\0';
	return n;
}

static inline bool rc_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* ---------------------------------------------------------------- nodes */

struct rc_nodes {
	int n;
	int id[RC_MAX_NODES];
};

/* Parse a kernel node list such as "0-3,5,8-9" (empty string: no node). */
static inline int rc_parse_list(const char *s, struct rc_nodes *out)
{
	out->n = 0;
	while (*s) {
		char *end;
		long a, b;

		a = strtol(s, &end, 10);
		if (end == s || a < 0)
			return -EINVAL;
		b = a;
		s = end;
		if (*s == '-') {
			s++;
			b = strtol(s, &end, 10);
			if (end == s || b < a)
				return -EINVAL;
			s = end;
		}
		for (; a <= b; a++) {
			if (out->n >= RC_MAX_NODES)
				return -E2BIG;
			out->id[out->n++] = (int)a;
		}
		if (*s == ',')
			s++;
		else if (*s)
			return -EINVAL;
	}
	return 0;
}

/* which: "online", "has_memory", "has_cpu", "possible" */
static inline int rc_node_list(const char *which, struct rc_nodes *out)
{
	char path[256], buf[16384];
	int ret;

	snprintf(path, sizeof(path), RC_SYSNODE "/%s", which);
	ret = rc_read_file(path, buf, sizeof(buf));
	if (ret < 0)
		return ret;
	return rc_parse_list(buf, out);
}

static inline int rc_list_index(const struct rc_nodes *l, int id)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (l->id[i] == id)
			return i;
	return -1;
}

static inline bool rc_list_has(const struct rc_nodes *l, int id)
{
	return rc_list_index(l, id) >= 0;
}

static inline void rc_dev_path(char *buf, size_t size, int node)
{
	snprintf(buf, size, RC_DEVDIR "/node%d", node);
}

static inline int rc_open_node(int node, int flags)
{
	char path[64];

	rc_dev_path(path, sizeof(path), node);
	return open(path, flags | O_CLOEXEC);
}

/*
 * RAM pages of a node: the sum of "present" over the node's zones in
 * /proc/zoneinfo. Returns 0 and sets *pages, or -errno.
 */
static inline int rc_node_present_pages(int node, unsigned long long *pages)
{
	char line[512];
	int cur = -1;
	bool seen = false;
	FILE *f;

	*pages = 0;
	f = fopen("/proc/zoneinfo", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;
		int nid;

		if (sscanf(line, "Node %d, zone", &nid) == 1) {
			cur = nid;
			if (nid == node)
				seen = true;
			continue;
		}
		if (cur == node && sscanf(line, " present %llu", &v) == 1)
			*pages += v;
	}
	fclose(f);
	return seen ? 0 : -ENOENT;
}

/* ---------------------------------------------------------- memory blocks */

struct rc_range {
	uint64_t start, end;	/* [start, end) */
};

static inline int rc_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The union of a node's memory blocks as sorted disjoint ranges.
 * Returns the number of ranges or -errno.
 */
static inline int rc_node_block_ranges(int node, struct rc_range *r, int max)
{
	static uint64_t blk[65536];
	char path[256], buf[64];
	unsigned long long bs;
	struct dirent *de;
	int nblk = 0, n = 0, i, ret;
	DIR *d;

	ret = rc_read_file(RC_SYSMEM "/block_size_bytes", buf, sizeof(buf));
	if (ret < 0)
		return ret;
	bs = strtoull(buf, NULL, 16);
	if (!bs)
		return -EINVAL;

	snprintf(path, sizeof(path), RC_SYSNODE "/node%d", node);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		unsigned long long m;
		char *end;

		if (strncmp(de->d_name, "memory", 6) || !isdigit((unsigned char)de->d_name[6]))
			continue;
		m = strtoull(de->d_name + 6, &end, 10);
		if (*end)
			continue;
		if (nblk >= (int)(sizeof(blk) / sizeof(blk[0]))) {
			closedir(d);
			return -E2BIG;
		}
		blk[nblk++] = m;
	}
	closedir(d);
	qsort(blk, nblk, sizeof(blk[0]), rc_cmp_u64);
	for (i = 0; i < nblk; i++) {
		uint64_t s = blk[i] * bs, e = s + bs;

		if (n && r[n - 1].end == s) {
			r[n - 1].end = e;
			continue;
		}
		if (n >= max)
			return -E2BIG;
		r[n].start = s;
		r[n].end = e;
		n++;
	}
	return n;
}

/* ------------------------------------------------------------- params */

struct rc_params {
	unsigned long granularity;
	bool premium;
	unsigned long abs_threshold;
	unsigned long diff_threshold;
};

static const struct rc_params rc_default_params = {
	.granularity = RC_DEF_GRANULARITY,
	.premium = false,
	.abs_threshold = 0,
	.diff_threshold = 0,
};

static inline int rc_read_ulong_param(const char *name, unsigned long *v)
{
	char path[256], buf[64], *end;
	int ret;

	snprintf(path, sizeof(path), RC_PARAMDIR "/%s", name);
	ret = rc_read_file(path, buf, sizeof(buf));
	if (ret < 0)
		return ret;
	errno = 0;
	*v = strtoul(buf, &end, 0);
	if (errno || end == buf || *end)
		return -EINVAL;
	return 0;
}

static inline int rc_read_params(struct rc_params *p)
{
	char buf[16];
	int ret;

	ret = rc_read_ulong_param("granularity", &p->granularity);
	if (!ret)
		ret = rc_read_ulong_param("abs_threshold", &p->abs_threshold);
	if (!ret)
		ret = rc_read_ulong_param("diff_threshold", &p->diff_threshold);
	if (ret)
		return ret;
	ret = rc_read_file(RC_PARAMDIR "/premium", buf, sizeof(buf));
	if (ret < 0)
		return ret;
	if (!strcmp(buf, "Y"))
		p->premium = true;
	else if (!strcmp(buf, "N"))
		p->premium = false;
	else
		return -EINVAL;
	return 0;
}

static inline bool rc_params_equal(const struct rc_params *a,
				   const struct rc_params *b)
{
	return a->granularity == b->granularity && a->premium == b->premium &&
	       a->abs_threshold == b->abs_threshold &&
	       a->diff_threshold == b->diff_threshold;
}

/* ------------------------------------------------------ expected values */

static inline unsigned int rc_hw_bits(unsigned int cnodes, bool premium)
{
	if (cnodes > 16)
		return 19;
	return premium ? 19 : 11;
}

static inline unsigned int rc_hw_max(unsigned int cnodes, bool premium)
{
	return (1U << rc_hw_bits(cnodes, premium)) - 1;
}

/*
 * The fields of rcb_info that follow from the topology and the module
 * parameters alone (everything but the slot-derived ones: rcb_len,
 * rcb_sw_sets, rcb_base_paddr, rcb_num_slots and rcb_base_pages).
 */
static inline void rc_expected_info(const struct rc_nodes *online, int node,
				    const struct rc_params *p,
				    struct rcb_info *e)
{
	unsigned int cn = online->n;
	unsigned int max;

	memset(e, 0, sizeof(*e));
	e->rcb_num_cnodes = cn;
	e->rcb_cnodeid = rc_list_index(online, node);
	e->rcb_nodeid = node;
	if (cn <= RCB_MAX_COUNTERS) {
		e->rcb_sw_counters_per_set = cn;
		e->rcb_nodes_per_counter = 1;
	} else {
		e->rcb_sw_counters_per_set = (cn + 7) / 8;
		e->rcb_nodes_per_counter = 8;
	}
	e->rcb_sw_counter_size = 4;
	e->rcb_base_page_size = sysconf(_SC_PAGESIZE);
	e->rcb_granularity = p->granularity;
	e->rcb_hw_counter_bits = rc_hw_bits(cn, p->premium);
	max = rc_hw_max(cn, p->premium);
	e->rcb_hw_counter_max = max;
	e->rcb_abs_threshold = p->abs_threshold ? p->abs_threshold :
			       (max + 1) - (max + 1) / 8;
	e->rcb_diff_threshold = p->diff_threshold;
}

/* ------------------------------------------------------------- module */

static inline const char *rc_ko_path(void)
{
	const char *ko = getenv("REFCNT_KO");

	if (!ko || !*ko || access(ko, R_OK))
		return NULL;
	return ko;
}

static inline bool rc_module_loaded(void)
{
	return rc_exists(RC_MODDIR "/parameters");
}

/* finit_module(2) the module file with params. 0 or -errno. */
static inline int rc_load(const char *params)
{
	const char *ko = rc_ko_path();
	int fd, ret;

	if (!ko)
		return -ENOENT;
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0);
	ret = ret ? -errno : 0;
	close(fd);
	return ret;
}

/* delete_module("refcnt", O_NONBLOCK). 0 or -errno. */
static inline int rc_unload(void)
{
	return syscall(SYS_delete_module, "refcnt", O_NONBLOCK) ? -errno : 0;
}

/*
 * Leave the module loaded with default parameters. Retries an unload that
 * is refused because a reference is still going away. 0 or -errno.
 */
static inline int rc_restore_default(void)
{
	struct rc_params p;
	int i, ret;

	if (rc_module_loaded() && !rc_read_params(&p) &&
	    rc_params_equal(&p, &rc_default_params))
		return 0;
	if (rc_module_loaded()) {
		for (i = 0; i < 100; i++) {
			ret = rc_unload();
			if (ret != -EWOULDBLOCK && ret != -EBUSY)
				break;
			usleep(50000);
		}
		if (ret && ret != -ENOENT)
			return ret;
	}
	return rc_load("");
}

/* ---------------------------------------------------------------- misc */

static inline bool rc_all_zero(const void *p, size_t len)
{
	const unsigned char *c = p;
	const uint64_t *w;
	size_t i;

	while (len && ((uintptr_t)c & 7)) {
		if (*c++)
			return false;
		len--;
	}
	w = (const uint64_t *)c;
	for (i = 0; i < len / 8; i++)
		if (w[i])
			return false;
	c = (const unsigned char *)(w + len / 8);
	for (i = 0; i < len % 8; i++)
		if (c[i])
			return false;
	return true;
}

static inline uint64_t rc_round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static inline uint64_t rc_round_down(uint64_t v, uint64_t a)
{
	return v / a * a;
}

static inline size_t rc_page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* A pattern that the kernel never writes, for canary entries. */
#define RC_CANARY	0xa5a5a5a5a5a5a5a5ULL

static inline void rc_fill_canary(struct rcb_slot *s, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		s[i].base = s[i].size = RC_CANARY;
}

static inline bool rc_is_canary(const struct rcb_slot *s)
{
	return s->base == RC_CANARY && s->size == RC_CANARY;
}

/* ------------------------------------------------------- shared checks */

/*
 * Slot invariants for node: ascending, disjoint, non-empty, multiples of
 * the granularity, and inside the node's memory blocks (their union
 * rounded outward to the granularity).
 */
static inline void rc_check_slots(struct __test_metadata *_metadata, int node,
				  const struct rcb_slot *s, unsigned int n,
				  uint64_t gran)
{
	static struct rc_range r[RC_MAX_RANGES];
	unsigned int i;
	int nr, j;

	nr = rc_node_block_ranges(node, r, RC_MAX_RANGES);
	ASSERT_LT(0, nr) TH_LOG("node%d: no memory blocks (%d)", node, nr);
	ASSERT_LT(0U, n) TH_LOG("node%d: no slots", node);

	for (i = 0; i < n; i++) {
		bool inside = false;

		EXPECT_LT(0ULL, s[i].size)
			TH_LOG("node%d slot %u is empty", node, i);
		EXPECT_EQ(0ULL, s[i].base % gran)
			TH_LOG("node%d slot %u base 0x%llx not a multiple of %llu",
			       node, i, (unsigned long long)s[i].base,
			       (unsigned long long)gran);
		EXPECT_EQ(0ULL, s[i].size % gran)
			TH_LOG("node%d slot %u size 0x%llx not a multiple of %llu",
			       node, i, (unsigned long long)s[i].size,
			       (unsigned long long)gran);
		EXPECT_LT(s[i].base, s[i].base + s[i].size)
			TH_LOG("node%d slot %u wraps", node, i);
		if (i) {
			EXPECT_LE(s[i - 1].base + s[i - 1].size, s[i].base)
				TH_LOG("node%d slots %u and %u not ascending/disjoint",
				       node, i - 1, i);
		}
		for (j = 0; j < nr; j++) {
			uint64_t lo = rc_round_down(r[j].start, gran);
			uint64_t hi = rc_round_up(r[j].end, gran);

			if (lo <= s[i].base && s[i].base + s[i].size <= hi)
				inside = true;
		}
		EXPECT_TRUE(inside)
			TH_LOG("node%d slot %u [0x%llx, 0x%llx) outside the node's memory blocks",
			       node, i, (unsigned long long)s[i].base,
			       (unsigned long long)(s[i].base + s[i].size));
	}
}

/*
 * Get the slots of an fd with RCB_SLOT_QUERY. Returns the total number of
 * slots (and fills min(total, cap) entries) or -errno.
 */
static inline int rc_query_slots(int fd, struct rcb_slot *s, unsigned int cap)
{
	struct rcb_slot_query q = {
		.slots = (uintptr_t)s,
		.num_slots = cap,
		.flags = 0,
	};

	if (ioctl(fd, RCB_SLOT_QUERY, &q))
		return -errno;
	return (int)q.num_slots;
}

/*
 * Every field of the node's rcb_info against sysfs, procfs and the rules,
 * for the module parameters p. Also checks the slots. Fills *out.
 */
static inline void rc_check_info(struct __test_metadata *_metadata, int node,
				 int fd, const struct rc_params *p,
				 struct rcb_info *out)
{
	static struct rcb_slot s[RC_MAX_SLOTS + 1];
	static struct rc_nodes online;
	unsigned long long pages, sum = 0;
	struct rcb_info e, got;
	unsigned int i;

	ASSERT_EQ(0, rc_node_list("online", &online));
	rc_expected_info(&online, node, p, &e);

	memset(&got, 0xff, sizeof(got));
	ASSERT_EQ(0, ioctl(fd, RCB_INFO_GET, &got))
		TH_LOG("node%d: RCB_INFO_GET: %s", node, strerror(errno));

	EXPECT_EQ(e.rcb_nodeid, got.rcb_nodeid) TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_num_cnodes, got.rcb_num_cnodes) TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_cnodeid, got.rcb_cnodeid) TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_sw_counters_per_set, got.rcb_sw_counters_per_set)
		TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_nodes_per_counter, got.rcb_nodes_per_counter)
		TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_sw_counter_size, got.rcb_sw_counter_size)
		TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_base_page_size, got.rcb_base_page_size)
		TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_granularity, got.rcb_granularity) TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_hw_counter_bits, got.rcb_hw_counter_bits)
		TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_hw_counter_max, got.rcb_hw_counter_max)
		TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_abs_threshold, got.rcb_abs_threshold)
		TH_LOG("node%d", node);
	EXPECT_EQ(e.rcb_diff_threshold, got.rcb_diff_threshold)
		TH_LOG("node%d", node);
	EXPECT_EQ(0U, got.rcb_flags) TH_LOG("node%d", node);
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(0ULL, got.rcb_reserved[i])
			TH_LOG("node%d rcb_reserved[%u]", node, i);
	}

	ASSERT_EQ(0, rc_node_present_pages(node, &pages))
		TH_LOG("node%d: not in /proc/zoneinfo", node);
	EXPECT_EQ(pages, got.rcb_base_pages)
		TH_LOG("node%d: rcb_base_pages vs sum of zone present pages",
		       node);

	/* Slot-derived fields. */
	ASSERT_LT(0U, got.rcb_num_slots) TH_LOG("node%d", node);
	ASSERT_GE((unsigned int)RC_MAX_SLOTS, got.rcb_num_slots) TH_LOG("node%d", node);
	rc_fill_canary(s, got.rcb_num_slots + 1);
	ASSERT_EQ(0, ioctl(fd, RCB_SLOT_GET, s))
		TH_LOG("node%d: RCB_SLOT_GET: %s", node, strerror(errno));
	EXPECT_TRUE(rc_is_canary(&s[got.rcb_num_slots]))
		TH_LOG("node%d: RCB_SLOT_GET wrote past rcb_num_slots", node);
	rc_check_slots(_metadata, node, s, got.rcb_num_slots, got.rcb_granularity);
	for (i = 0; i < got.rcb_num_slots; i++)
		sum += s[i].size;
	EXPECT_EQ(s[0].base, got.rcb_base_paddr) TH_LOG("node%d", node);
	EXPECT_EQ(sum, (unsigned long long)got.rcb_sw_sets * got.rcb_granularity)
		TH_LOG("node%d: sets x granularity vs sum of slot sizes", node);
	EXPECT_EQ((unsigned long long)got.rcb_sw_sets *
		  got.rcb_sw_counters_per_set * 4, got.rcb_len)
		TH_LOG("node%d: rcb_len", node);
	EXPECT_EQ((int)got.rcb_num_slots,
		  rc_query_slots(fd, NULL, 0)) TH_LOG("node%d", node);
	if (out)
		*out = got;
}

#endif /* REFCNT_HELPERS_H */
