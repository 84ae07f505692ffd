// SPDX-License-Identifier: GPL-2.0
/*
 * Shared helpers of the refcnt selftests: sysfs/procfs parsing of the node
 * topology, the module parameters and the expected rcb_info of a node,
 * module load/unload. Linked into every test program.
 */
#define REFCNT_HELPERS_IMPL
#include "refcnt_helpers.h"

#include <pthread.h>
#include <sys/prctl.h>

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

/* ---------------------------------------------------------------- files */

/* Read a small file, strip trailing whitespace. Returns length or -errno. */
int rc_read_file(const char *path, char *buf, size_t size)
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

/*
 * A file holding one unsigned decimal, as sysfs prints module parameters
 * and statistics; anything else after it is -EINVAL.
 */
int rc_read_u64(const char *path, uint64_t *v)
{
	char buf[64], *end;
	int ret;

	ret = rc_read_file(path, buf, sizeof(buf));
	if (ret < 0)
		return ret;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	if (errno || end == buf || *end)
		return -EINVAL;
	return 0;
}

/* A feed statistic in /sys/kernel/refcnt/, or 0 if it cannot be read. */
uint64_t rc_feed_stat(const char *name)
{
	char path[128];
	uint64_t v;

	snprintf(path, sizeof(path), RC_FEEDDIR "/%s", name);
	return rc_read_u64(path, &v) ? 0 : v;
}

bool rc_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* Lines of the kernel log that contain @s (a fixed string), or -1. */
int rc_dmesg_count(const char *s)
{
	char cmd[256], buf[32] = "";
	FILE *f;

	snprintf(cmd, sizeof(cmd), "dmesg | grep -cF -- '%s'", s);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	pclose(f);
	return atoi(buf);
}

/* ---------------------------------------------------------------- nodes */

/* Parse a kernel node list such as "0-3,5,8-9" (empty string: no node). */
int rc_parse_list(const char *s, struct rc_nodes *out)
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
int rc_node_list(const char *which, struct rc_nodes *out)
{
	char path[256], buf[16384];
	int ret;

	snprintf(path, sizeof(path), RC_SYSNODE "/%s", which);
	ret = rc_read_file(path, buf, sizeof(buf));
	if (ret < 0)
		return ret;
	return rc_parse_list(buf, out);
}

/*
 * The module's numbering: the i-th node of /sys/kernel/refcnt/cnodes has
 * cnodeid i. It is fixed at load, while the online list follows hotplug,
 * so tests that name cnodeids take it from here.
 */
int rc_cnode_list(struct rc_nodes *out)
{
	char buf[16384];
	int ret;

	ret = rc_read_file("/sys/kernel/refcnt/cnodes", buf, sizeof(buf));
	if (ret < 0)
		return ret;
	return rc_parse_list(buf, out);
}

int rc_list_index(const struct rc_nodes *l, int id)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (l->id[i] == id)
			return i;
	return -1;
}

bool rc_list_has(const struct rc_nodes *l, int id)
{
	return rc_list_index(l, id) >= 0;
}

void rc_dev_path(char *buf, size_t size, int node)
{
	snprintf(buf, size, RC_DEVDIR "/node%d", node);
}

int rc_open_node(int node, int flags)
{
	char path[64];

	rc_dev_path(path, sizeof(path), node);
	return open(path, flags | O_CLOEXEC);
}

/*
 * RAM pages of a node: the sum of "present" over the node's zones in
 * /proc/zoneinfo. Returns 0 and sets *pages, or -errno.
 */
int rc_node_present_pages(int node, unsigned long long *pages)
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

int rc_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The union of a node's memory blocks as sorted disjoint ranges.
 * Returns the number of ranges or -errno.
 */
int rc_node_block_ranges(int node, struct rc_range *r, int max)
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

const struct rc_params rc_default_params = {
	.granularity = RC_DEF_GRANULARITY,
	.premium = false,
	.abs_threshold = 0,
	.diff_threshold = 0,
};

int rc_read_ulong_param(const char *name, unsigned long *v)
{
	char path[256];
	uint64_t u;
	int ret;

	snprintf(path, sizeof(path), RC_PARAMDIR "/%s", name);
	ret = rc_read_u64(path, &u);
	if (ret)
		return ret;
	/* The -m32 builds: a parameter wider than their unsigned long. */
	if (u > ULONG_MAX)
		return -ERANGE;
	*v = (unsigned long)u;
	return 0;
}

int rc_read_params(struct rc_params *p)
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

bool rc_params_equal(const struct rc_params *a,
				   const struct rc_params *b)
{
	return a->granularity == b->granularity && a->premium == b->premium &&
	       a->abs_threshold == b->abs_threshold &&
	       a->diff_threshold == b->diff_threshold;
}

/* ------------------------------------------------------ expected values */

unsigned int rc_hw_bits(unsigned int cnodes, bool premium)
{
	if (cnodes > 16)
		return 19;
	return premium ? 19 : 11;
}

unsigned int rc_hw_max(unsigned int cnodes, bool premium)
{
	return (1U << rc_hw_bits(cnodes, premium)) - 1;
}

/*
 * The fields of rcb_info that follow from the topology and the module
 * parameters alone (everything but the slot-derived ones: rcb_len,
 * rcb_sw_sets, rcb_base_paddr, rcb_num_slots and rcb_base_pages).
 */
void rc_expected_info(const struct rc_nodes *cnodes, int node,
				    const struct rc_params *p,
				    struct rcb_info *e)
{
	unsigned int cn = cnodes->n;
	unsigned int max;

	memset(e, 0, sizeof(*e));
	e->rcb_num_cnodes = cn;
	/* -1, not in the list, is RCB_NO_CNODE: a node added since the load. */
	e->rcb_cnodeid = rc_list_index(cnodes, node);
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

const char *rc_ko_path(void)
{
	const char *ko = getenv("REFCNT_KO");

	if (!ko || !*ko || access(ko, R_OK))
		return NULL;
	return ko;
}

bool rc_module_loaded(void)
{
	return rc_exists(RC_MODDIR "/parameters");
}

/* finit_module(2) a module file with params. 0 or -errno. */
static int rc_finit(const char *ko, const char *params)
{
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

/* refcnt.ko (REFCNT_KO) with params. 0 or -errno. */
int rc_load(const char *params)
{
	return rc_finit(rc_ko_path(), params);
}

/* The module whose path environment variable env names, with params. */
int rc_load_module(const char *env, const char *params)
{
	const char *ko = getenv(env);

	return rc_finit(ko && *ko ? ko : NULL, params);
}

/*
 * delete_module("refcnt", O_NONBLOCK), the rig's feed modules first.
 * 0 or -errno.
 */
int rc_unload(void)
{
	static const char *const feeds[] = {
		"refcnt_testpmu", "refcnt_hub", "refcnt_test",
	};
	unsigned int i;

	for (i = 0; i < sizeof(feeds) / sizeof(feeds[0]); i++)
		if (syscall(SYS_delete_module, feeds[i], O_NONBLOCK) &&
		    errno != ENOENT)
			return -errno;
	return syscall(SYS_delete_module, "refcnt", O_NONBLOCK) ? -errno : 0;
}

int rc_test_open(void)
{
	int fd, ret, i;

	fd = open(RC_TEST_DEV, O_RDWR | O_CLOEXEC);
	if (fd >= 0 || errno != ENOENT)
		return fd >= 0 ? fd : -errno;
	ret = rc_load_module("REFCNT_TEST_KO", "");
	if (ret && ret != -EEXIST)
		return ret;
	for (i = 0; i < 100; i++) {
		fd = open(RC_TEST_DEV, O_RDWR | O_CLOEXEC);
		if (fd >= 0 || errno != ENOENT)
			break;
		usleep(10000);	/* the device node */
	}
	return fd >= 0 ? fd : -errno;
}

/*
 * Unload the module, retrying for up to 10 s while it is refused because
 * a reference is still going away (a file or mapping being released).
 * 0 when the module is not loaded afterwards, or -errno.
 */
int rc_unload_retry(void)
{
	int i, ret = 0;

	for (i = 0; i < 200; i++) {
		ret = rc_unload();
		if (ret != -EWOULDBLOCK && ret != -EBUSY)
			break;
		usleep(50000);
	}
	return ret == -ENOENT ? 0 : ret;
}

/* Leave the module loaded with default parameters. 0 or -errno. */
int rc_restore_default(void)
{
	struct rc_params p;
	int ret;

	if (rc_module_loaded() && !rc_read_params(&p) &&
	    rc_params_equal(&p, &rc_default_params))
		return 0;
	ret = rc_unload_retry();
	return ret ? ret : rc_load("");
}

/* Write a string to a file (sysfs, procfs) in one write. 0 or -errno. */
int rc_write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		ret = -errno;
	close(fd);
	return ret;
}

/* ---------------------------------------------------------------- misc */

int rc_knob_set(struct rc_knob *k, const char *path, const char *val)
{
	k->path = path;
	if (!k->saved && rc_read_file(path, k->old, sizeof(k->old)) >= 0)
		k->saved = true;
	return rc_write_file(path, val);
}

void rc_knob_restore(struct rc_knob *k)
{
	if (k->saved) {
		rc_knob_set(k, k->path, k->old);
		k->saved = false;
	}
}

static void *rc_park(void *arg)
{
	pause();
	return arg;
}

pid_t rc_park_thread(void)
{
	struct dirent *de;
	pthread_t t;
	pid_t tid = 0;
	DIR *d;
	int err;

	err = pthread_create(&t, NULL, rc_park, NULL);
	if (err)
		return -err;
	/* The newest task of ours: the highest thread id in /proc/self/task. */
	d = opendir("/proc/self/task");
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (atoi(de->d_name) > tid)
			tid = atoi(de->d_name);
	closedir(d);
	return tid == getpid() ? -ESRCH : tid;
}

/* The last thread of rc_fork_main_exited()'s child. */
static void *rc_last_thread(void *arg)
{
	int *fd = arg;
	char c;

	_exit(read(*fd, &c, 1) == 1 ? 0 : 3);
	return NULL;
}

/* The state letter of thread tid of pid, from its stat ('?' if gone). */
static char rc_thread_state(pid_t pid, pid_t tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

pid_t rc_fork_main_exited(void *mem, size_t len, int *release)
{
	static int to_child[2];
	pthread_t th;
	pid_t child;
	int i;

	if (pipe(to_child))
		return -1;
	child = rc_fork();
	if (child < 0)
		return -1;
	if (!child) {
		close(to_child[1]);
		memset(mem, 7, len);
		if (pthread_create(&th, NULL, rc_last_thread, &to_child[0]))
			_exit(2);
		pthread_exit(NULL);
	}
	close(to_child[0]);
	*release = to_child[1];
	for (i = 0; i < 1000 && rc_thread_state(child, child) != 'Z'; i++)
		usleep(10000);
	if (rc_thread_state(child, child) == 'Z')
		return child;
	close(*release);
	rc_wait(child);
	return -1;
}

bool rc_all_zero(const void *p, size_t len)
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

uint64_t rc_round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

uint64_t rc_round_down(uint64_t v, uint64_t a)
{
	return v / a * a;
}

size_t rc_page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

void rc_fill_canary(struct rcb_slot *s, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		s[i].base = s[i].size = RC_CANARY;
}

bool rc_is_canary(const struct rcb_slot *s)
{
	return s->base == RC_CANARY && s->size == RC_CANARY;
}

/*
 * Get the slots of an fd with RCB_SLOT_QUERY. Returns the total number of
 * slots (and fills min(total, cap) entries) or -errno.
 */
int rc_query_slots(int fd, struct rcb_slot *s, unsigned int cap)
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


/* RCB_RESET a node through a file of its own (root). 0 or -errno. */
int rc_reset_node(int node)
{
	int fd = rc_open_node(node, O_RDONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, RCB_RESET))
		ret = -errno;
	close(fd);
	return ret;
}

int rc_drain_events(int node)
{
	struct rcb_event ev[64];
	int fd = rc_open_node(node, O_RDONLY | O_NONBLOCK), ret = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	do
		n = read(fd, ev, sizeof(ev));
	while (n > 0);
	if (n < 0 && errno != EAGAIN)
		ret = -errno;
	close(fd);
	return ret;
}

/* ------------------------------------------------------------- children */

pid_t rc_fork(void)
{
	pid_t parent = getpid(), pid;

	/* What stdio holds is printed once, by the parent. */
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid)
		return pid;
	/* setresuid() later clears this: such a child is waited for at once. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(127);
	return 0;
}

int rc_wait(pid_t pid)
{
	int status;
	pid_t r;

	if (pid <= 0)
		return -1;
	do
		r = waitpid(pid, &status, 0);
	while (r < 0 && errno == EINTR);
	if (r != pid)
		return -1;
	if (WIFSIGNALED(status))
		return RC_KILLED(WTERMSIG(status));
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
