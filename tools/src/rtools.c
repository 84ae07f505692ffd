// SPDX-License-Identifier: GPL-2.0
/*
 * Shared code of the refcnt command-line tools: errors, node and counter
 * naming, parsing. The heatmap writer is in heatmap.c.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rtools.h"

const char *rt_prog = "refcnt";

void rt_verr(const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", rt_prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void rt_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rt_verr(fmt, ap);
	va_end(ap);
}

int rt_exit_code(int err)
{
	switch (err) {
	case 0:
		return RT_EXIT_OK;
	case -ENODEV:
		return RT_EXIT_NOMODULE;
	case -EACCES:
		return RT_EXIT_PERM;
	case -EINVAL:
		return RT_EXIT_USAGE;
	default:
		return RT_EXIT_FAIL;
	}
}

int rt_run_exit_code(int err)
{
	switch (rt_exit_code(err)) {
	case RT_EXIT_OK:
		return RT_EXIT_OK;
	case RT_EXIT_NOMODULE:
		return RT_EXIT_RUN_NOMODULE;
	case RT_EXIT_PERM:
		return RT_EXIT_RUN_PERM;
	default:
		return RT_EXIT_RUN_FAIL;
	}
}

int rt_unexpected_arg(const char *arg, void (*usage)(FILE *f))
{
	rt_err("unexpected argument '%s'", arg);
	usage(stderr);
	return -EINVAL;
}

int rt_parse_node(const char *s, int *nid)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < 0 || v > INT_MAX) {
		rt_err("--node %s: not a node number", s);
		return -EINVAL;
	}
	*nid = v;
	return 0;
}

static int rt_module_loaded(void)
{
	return access("/sys/module/refcnt", F_OK) == 0;
}

int rt_dev_error(int err, const char *what)
{
	switch (err) {
	case ENOENT:
	case ENODEV:
	case ENXIO:
		if (!rt_module_loaded()) {
			rt_err("%s: the refcnt module is not loaded (modprobe refcnt, or insmod refcnt.ko)",
			       what);
			return -ENODEV;
		}
		rt_err("%s: %s (the module is loaded: is devtmpfs or udev providing /dev/refcnt?)",
		       what, strerror(err));
		return -ENODEV;
	case EACCES:
		rt_err("%s: permission denied: the devices are readable by root and the refcnt group (udev rule); run as root or join the group",
		       what);
		return -EACCES;
	case EPERM:
		rt_err("%s: operation not permitted: this needs root (CAP_SYS_ADMIN or CAP_SYS_PTRACE)",
		       what);
		return -EACCES;
	case ENOTTY:
		rt_err("%s: the loaded refcnt module does not know this request (older module?)",
		       what);
		return -EIO;
	default:
		rt_err("%s: %s", what, strerror(err));
		return -EIO;
	}
}

int rt_node_error(int err, const char *op, int nid)
{
	char what[128];

	snprintf(what, sizeof(what), "%s" REFCNT_DEV_DIR "/node%d", op, nid);
	return rt_dev_error(err, what);
}

int rt_node_ids(int **nids)
{
	int n, m;

	n = refcnt_nodes(NULL, 0);
	if (n < 0)
		return rt_dev_error(errno, REFCNT_DEV_DIR);
	if (n == 0) {
		if (!rt_module_loaded()) {
			rt_err("no node devices in " REFCNT_DEV_DIR ": the refcnt module is not loaded (modprobe refcnt)");
			return -ENODEV;
		}
		rt_err("no node devices in " REFCNT_DEV_DIR " although the module is loaded");
		return -EIO;
	}
	*nids = calloc(n, sizeof(**nids));
	if (!*nids) {
		rt_err("out of memory");
		return -ENOMEM;
	}
	m = refcnt_nodes(*nids, n);
	if (m < n)
		n = m;
	return n;
}

int rt_select_nodes(int only, int **nids)
{
	int n = rt_node_ids(nids), i;

	if (n < 0 || only < 0)
		return n;
	for (i = 0; i < n; i++)
		if ((*nids)[i] == only) {
			(*nids)[0] = only;
			return 1;
		}
	free(*nids);
	*nids = NULL;
	rt_err("--node %d: no such node with counters (see refcnt-info)", only);
	return -EINVAL;
}

int rt_node_open(int nid, struct refcnt_node **h, struct rcb_info *info)
{
	int err;

	*h = refcnt_node_open(nid, 0);
	if (!*h)
		return rt_node_error(errno, "", nid);
	if (refcnt_node_info(*h, info)) {
		err = errno;
		refcnt_node_close(*h);
		*h = NULL;
		return rt_node_error(err, "", nid);
	}
	return 0;
}

uint64_t rt_set_paddr(const struct rcb_slot *slots, int nr, uint64_t gran,
		      uint64_t set)
{
	int i;

	for (i = 0; i < nr; i++) {
		uint64_t sets = slots[i].size / gran;

		if (set < sets)
			return slots[i].base + set * gran;
		set -= sets;
	}
	return 0;
}

int rt_read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	if (!fgets(buf, size, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

long long rt_read_ll(const char *path, long long def)
{
	char buf[64], *end;
	long long v;

	if (rt_read_line(path, buf, sizeof(buf)))
		return def;
	errno = 0;
	v = strtoll(buf, &end, 0);
	if (errno || end == buf)
		return def;
	return v;
}

int rt_counters_init(struct rt_counters *c, const struct rcb_info *info)
{
	int i, n;

	memset(c, 0, sizeof(*c));
	c->nr = info->rcb_sw_counters_per_set;
	c->nodes_per_counter = info->rcb_nodes_per_counter ?
			       (int)info->rcb_nodes_per_counter : 1;
	n = info->rcb_num_cnodes ? (int)info->rcb_num_cnodes :
				   refcnt_num_cnodes();
	if (n <= 0 || c->nr <= 0 || c->nr > RCB_MAX_COUNTERS) {
		rt_err("cannot learn the nodes: %s", strerror(EIO));
		return -1;
	}
	c->nr_cnodes = n;
	c->cnode_nid = calloc(n, sizeof(*c->cnode_nid));
	c->label = calloc(c->nr, sizeof(*c->label));
	if (!c->cnode_nid || !c->label) {
		rt_counters_free(c);
		rt_err("cannot learn the nodes: %s", strerror(ENOMEM));
		return -1;
	}
	for (i = 0; i < n; i++) {
		c->cnode_nid[i] = refcnt_cnode_to_nid(i);
		if (c->cnode_nid[i] < 0)
			c->cnode_nid[i] = i;
	}
	for (i = 0; i < c->nr; i++) {
		int first = i * c->nodes_per_counter;
		int last = first + c->nodes_per_counter - 1;

		if (last >= n)
			last = n - 1;
		if (first >= n)
			snprintf(c->label[i], sizeof(c->label[i]), "-");
		else if (first == last)
			snprintf(c->label[i], sizeof(c->label[i]), "%d",
				 c->cnode_nid[first]);
		else
			snprintf(c->label[i], sizeof(c->label[i]), "%d-%d",
				 c->cnode_nid[first], c->cnode_nid[last]);
	}
	return 0;
}

void rt_counters_free(struct rt_counters *c)
{
	free(c->cnode_nid);
	free(c->label);
	c->cnode_nid = NULL;
	c->label = NULL;
}

int rt_counter_of_nid(const struct rt_counters *c, int nid)
{
	int i;

	for (i = 0; i < c->nr_cnodes; i++)
		if (c->cnode_nid[i] == nid)
			return i / c->nodes_per_counter;
	return -1;
}

/* Online node ids, ascending (the columns of the distance files). */
static int *rt_online;
static int rt_nr_online = -1;
static int **rt_dist_rows;	/* by index in rt_online, loaded on demand */

static void rt_load_online(void)
{
	char buf[4096], *p = buf;
	int cap = 0;

	rt_nr_online = 0;
	if (rt_read_line("/sys/devices/system/node/online", buf, sizeof(buf)))
		return;
	while (*p) {
		long a = strtol(p, &p, 10), b = a, i;

		if (*p == '-')
			b = strtol(p + 1, &p, 10);
		for (i = a; i <= b; i++) {
			if (rt_nr_online == cap) {
				int *t;

				cap = cap ? 2 * cap : 64;
				t = realloc(rt_online, cap * sizeof(int));
				if (!t)
					return;
				rt_online = t;
			}
			rt_online[rt_nr_online++] = (int)i;
		}
		if (*p != ',')
			break;
		p++;
	}
	rt_dist_rows = calloc(rt_nr_online ? rt_nr_online : 1, sizeof(*rt_dist_rows));
	if (!rt_dist_rows)
		rt_nr_online = 0;
}

static int rt_online_index(int nid)
{
	int i;

	for (i = 0; i < rt_nr_online; i++)
		if (rt_online[i] == nid)
			return i;
	return -1;
}

int rt_distance(int from, int to)
{
	int fi, ti;

	if (rt_nr_online < 0)
		rt_load_online();
	fi = rt_online_index(from);
	ti = rt_online_index(to);
	if (fi < 0 || ti < 0)
		return -1;
	if (!rt_dist_rows[fi]) {
		char path[96], *buf, *p;
		int *row = calloc(rt_nr_online, sizeof(int)), i;
		size_t size = 16 * (size_t)rt_nr_online + 64;

		buf = malloc(size);
		if (!row || !buf) {
			free(row);
			free(buf);
			return refcnt_nid_distance(from, to);
		}
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/distance",
			 from);
		if (rt_read_line(path, buf, size)) {
			free(row);
			free(buf);
			return refcnt_nid_distance(from, to);
		}
		for (p = buf, i = 0; i < rt_nr_online; i++)
			row[i] = (int)strtol(p, &p, 10);
		free(buf);
		rt_dist_rows[fi] = row;
	}
	return rt_dist_rows[fi][ti];
}

int rt_parse_u64(const char *s, uint64_t *v)
{
	unsigned long long x;
	char *end;
	int shift = 0;

	if (!s || !*s || *s == '-' || isspace((unsigned char)*s))
		return -1;
	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	switch (toupper((unsigned char)*end)) {
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	case 'T': shift = 40; end++; break;
	}
	if (shift && (*end == 'B' || *end == 'b'))
		end++;
	if (*end)
		return -1;
	if (shift && x > (UINT64_MAX >> shift))
		return -1;
	*v = (uint64_t)x << shift;
	return 0;
}

int rt_parse_range(const char *s, uint64_t *start, uint64_t *end)
{
	char buf[128], *sep;
	uint64_t a, b;
	int plus;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	sep = strchr(buf, '+');
	plus = sep != NULL;
	if (!sep)
		sep = strchr(buf, '-');
	if (!sep)
		return -1;
	*sep = '\0';
	if (rt_parse_u64(buf, &a) || rt_parse_u64(sep + 1, &b))
		return -1;
	if (plus) {
		if (b > UINT64_MAX - a)
			return -1;
		b += a;
	}
	if (b <= a)
		return -1;
	*start = a;
	*end = b;
	return 0;
}

const char *rt_human(uint64_t bytes, char *buf, size_t size)
{
	static const char units[] = "BKMGTP";
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%lluB", (unsigned long long)bytes);
	else if (v == floor(v) || v >= 100)
		snprintf(buf, size, "%.0f%c", v, units[u]);
	else
		snprintf(buf, size, "%.1f%c", v, units[u]);
	return buf;
}
