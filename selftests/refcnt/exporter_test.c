// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-exporter against the module, with exact values:
 *
 *  - after references injected into every node from every cnodeid, each
 *    node's statistics equal its sysfs files, and each
 *    refcnt_references_total{node,from_node} and lost count equals the sum
 *    of that counter over the node's table read with RCB_SETS_READ; the
 *    hottest set is the table's;
 *  - references injected between two runs show as exactly that increase;
 *  - served over HTTP, it survives the module being unloaded (refcnt_up 0,
 *    no node metrics; it holds no device open, so the unload works) and
 *    loaded again (values back);
 *  - HTTP's edges: HEAD (headers, no body), an unknown path (404),
 *    another method (405), an oversize request head (431);
 *  - the textfile is only ever seen whole, by a reader racing its writes;
 *  - bad input (unknown option, unwritable textfile directory, port in
 *    use): one line on stderr, the exit status of its man page.
 *
 * The exporter is looked for in $REFCNT_TOOLS, ./tools, ../tools and
 * /refcnt/tools; without it every test is skipped.
 */
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "refcnt_helpers.h"
#include "refcnt_counters.h"

#define TMP		"/tmp/refcnt-exporter-test"
#define PORT		19465
#define CHUNK		4096

static char exporter[PATH_MAX];

static int find_exporter(void)
{
	static const char *const dirs[] = { "./tools", "../tools", "/refcnt/tools" };
	const char *env = getenv("REFCNT_TOOLS");
	unsigned int i;

	if (env) {
		snprintf(exporter, sizeof(exporter), "%s/refcnt-exporter", env);
		if (!access(exporter, X_OK))
			return 0;
	}
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(exporter, sizeof(exporter), "%s/refcnt-exporter", dirs[i]);
		if (!access(exporter, X_OK))
			return 0;
	}
	return -1;
}

/* Start the exporter with args (NULL-ended), stdout/stderr to files. */
static pid_t start(const char *const *args, const char *out, const char *err,
		   int uid)
{
	char *argv[16];
	pid_t pid;
	int i, fd;

	argv[0] = exporter;
	for (i = 0; args[i] && i < 14; i++)
		argv[i + 1] = (char *)args[i];
	argv[i + 1] = NULL;
	pid = rc_fork();
	if (pid)
		return pid;
	fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0)
		dup2(fd, 1);
	fd = open(err ? err : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0)
		dup2(fd, 2);
	if (uid >= 0 && (setgid(uid) || setuid(uid)))
		_exit(99);
	execv(argv[0], argv);
	_exit(98);
}

/* Run it to the end: its exit status. */
static int run(const char *const *args, const char *out, const char *err, int uid)
{
	return rc_wait(start(args, out, err, uid));
}

static char *slurp(const char *path)
{
	char *buf = malloc(1 << 22);
	int fd = open(path, O_RDONLY), n = 0, r;

	if (!buf || fd < 0) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((r = read(fd, buf + n, (1 << 22) - 1 - n)) > 0)
		n += r;
	close(fd);
	buf[n] = '\0';
	return buf;
}

/* The value of the sample whose name and labels are exactly key; -1 if none. */
static long long sample(const char *text, const char *key)
{
	size_t len = strlen(key);
	const char *p = text;

	while ((p = strstr(p, key))) {
		if ((p == text || p[-1] == '\n') && p[len] == ' ')
			return strtoll(p + len + 1, NULL, 10);
		p += len;
	}
	return -1;
}

/* Lines of text on stderr file path. */
static int lines(const char *path)
{
	char *s = slurp(path), *p;
	int n = 0;

	for (p = s; p && *p; p++)
		n += *p == '\n';
	free(s);
	return n;
}

struct node_sums {
	int nid;
	unsigned int cps, npc;
	uint64_t refs[RCB_MAX_COUNTERS], lost[RCB_MAX_COUNTERS];
	uint64_t hottest, hottest_set;	/* the first set with the most */
};

/* A node's table summed per counter through RCB_SETS_READ. */
static int table_sums(int nid, struct node_sums *t)
{
	uint32_t *hw, *ext, *lost;
	struct rcb_info in;
	uint64_t set, cnt, i;
	unsigned int c;
	int fd, rc = -1;

	memset(t, 0, sizeof(*t));
	t->nid = nid;
	fd = rc_open_node(nid, O_RDONLY);
	if (fd < 0 || ioctl(fd, RCB_INFO_GET, &in))
		return -1;
	t->cps = in.rcb_sw_counters_per_set;
	t->npc = in.rcb_nodes_per_counter ? in.rcb_nodes_per_counter : 1;
	hw = calloc(CHUNK * t->cps, 4);
	ext = calloc(CHUNK * t->cps, 4);
	lost = calloc(CHUNK * t->cps, 4);
	for (set = 0; hw && ext && lost && set < in.rcb_sw_sets; set += cnt) {
		struct rcb_sets_read r = { 0 };

		cnt = in.rcb_sw_sets - set < CHUNK ? in.rcb_sw_sets - set : CHUNK;
		r.first_set = set;
		r.nr_sets = cnt;
		r.hw = (uintptr_t)hw;
		r.ext = (uintptr_t)ext;
		r.lost = (uintptr_t)lost;
		if (ioctl(fd, RCB_SETS_READ, &r))
			goto out;
		for (i = 0; i < cnt; i++) {
			uint64_t s = 0;

			for (c = 0; c < t->cps; c++) {
				uint64_t v = (uint64_t)ext[i * t->cps + c] +
					     hw[i * t->cps + c];

				t->refs[c] += v;
				t->lost[c] += lost[i * t->cps + c];
				s += v;
			}
			if (s > t->hottest) {
				t->hottest = s;
				t->hottest_set = set + i;
			}
		}
	}
	rc = hw && ext && lost ? 0 : -1;
out:
	free(hw);
	free(ext);
	free(lost);
	close(fd);
	return rc;
}

/* The from_node label of counter c: "nid", or "first-last" for a group. */
static void from_label(const struct rc_nodes *cnodes, unsigned int npc,
		       unsigned int c, char *buf, size_t size)
{
	int first = c * npc, last = first + npc - 1;

	if (last >= cnodes->n)
		last = cnodes->n - 1;
	if (first == last)
		snprintf(buf, size, "%d", cnodes->id[first]);
	else
		snprintf(buf, size, "%d-%d", cnodes->id[first], cnodes->id[last]);
}

/* Node fd's first slot into *slot: 0, or -1. */
static int first_slot(int fd, struct rcb_slot *slot)
{
	static struct rcb_slot slots[RC_MAX_SLOTS];

	if (rc_query_slots(fd, slots, RC_MAX_SLOTS) < 1 || !slots[0].size)
		return -1;
	*slot = slots[0];
	return 0;
}

/* References to node nid's first slot from every cnodeid. */
static int inject_all(int nid, int cnodes, unsigned int base)
{
	struct rcb_ref refs[RC_MAX_NODES];
	struct rcb_slot slot;
	struct rcb_inject inj = { 0 };
	int fd, c, rc;

	fd = rc_open_node(nid, O_RDONLY);
	if (fd < 0)
		return -1;
	if (first_slot(fd, &slot)) {
		close(fd);
		return -1;
	}
	for (c = 0; c < cnodes && c < RC_MAX_NODES; c++) {
		refs[c].paddr = slot.base + (uint64_t)c * RC_DEF_GRANULARITY;
		refs[c].src_cnodeid = c;
		refs[c].count = base + 7 * c;
	}
	inj.refs = (uintptr_t)refs;
	inj.nr_refs = c;
	inj.flags = RCB_INJECT_SYNC;
	rc = ioctl(fd, RCB_INJECT, &inj);
	close(fd);
	return rc;
}

FIXTURE(exporter) {
	struct rc_nodes online, cnodes, devs;
};

FIXTURE_SETUP(exporter)
{
	int i, fd;

	if (find_exporter())
		RC_SETUP_SKIP("no refcnt-exporter (make tools; copy build/tools next to the selftests, or set REFCNT_TOOLS)");
	ASSERT_TRUE(rc_module_loaded()) TH_LOG("refcnt.ko is not loaded");
	/*
	 * The values compared are read at two moments: nothing may count
	 * in between, so no feed stays on from a test that stopped early.
	 */
	fd = open("/sys/module/refcnt/parameters/fault_period", O_WRONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(2, write(fd, "0\n", 2));
	close(fd);
	mkdir(TMP, 0755);
	ASSERT_EQ(0, rc_node_list("online", &self->online));
	ASSERT_EQ(0, rc_cnode_list(&self->cnodes));
	self->devs.n = 0;
	for (i = 0; i < self->online.n; i++) {
		char path[64];

		rc_dev_path(path, sizeof(path), self->online.id[i]);
		if (rc_exists(path))
			self->devs.id[self->devs.n++] = self->online.id[i];
	}
	ASSERT_GT(self->devs.n, 0);
}

FIXTURE_TEARDOWN(exporter)
{
}

/* Every node's statistics as its sysfs files give them. */
static void check_stats(struct __test_metadata *_metadata, const char *text,
			int nid)
{
	static const char *const stats[] = {
		"references", "pegged", "saturated", "folds", "migrations",
		"events_dropped", "refs_dropped", "discarded", "overflowed",
		"refs_deferred", "defer_full",
	};
	char key[160], path[160];
	unsigned int k;
	uint64_t v;

	for (k = 0; k < sizeof(stats) / sizeof(stats[0]); k++) {
		snprintf(path, sizeof(path), "/sys/class/misc/refcnt-node%d/stats/%s",
			 nid, stats[k]);
		ASSERT_EQ(0, rc_read_u64(path, &v));
		snprintf(key, sizeof(key), "refcnt_node_%s_total{node=\"%d\"}",
			 stats[k], nid);
		EXPECT_EQ((long long)v, sample(text, key)) TH_LOG("%s", key);
	}
	snprintf(path, sizeof(path), "/sys/class/misc/refcnt-node%d/stats/table_bytes",
		 nid);
	ASSERT_EQ(0, rc_read_u64(path, &v));
	snprintf(key, sizeof(key), "refcnt_node_table_bytes{node=\"%d\"}", nid);
	EXPECT_EQ((long long)v, sample(text, key));
}

/* Per accessing node, local and remote: the table's sums. */
static void check_table(struct __test_metadata *_metadata, const char *text,
			const struct rc_nodes *cnodes, const struct node_sums *t,
			int cnodeid)
{
	uint64_t local = 0, remote = 0;
	char key[160], from[32];
	unsigned int c;

	for (c = 0; c < t->cps; c++) {
		from_label(cnodes, t->npc, c, from, sizeof(from));
		snprintf(key, sizeof(key),
			 "refcnt_references_total{node=\"%d\",from_node=\"%s\"}",
			 t->nid, from);
		EXPECT_EQ((long long)t->refs[c], sample(text, key)) TH_LOG("%s", key);
		snprintf(key, sizeof(key),
			 "refcnt_lost_references_total{node=\"%d\",from_node=\"%s\"}",
			 t->nid, from);
		EXPECT_EQ((long long)t->lost[c], sample(text, key)) TH_LOG("%s", key);
		*(c == cnodeid / t->npc ? &local : &remote) += t->refs[c];
	}
	snprintf(key, sizeof(key), "refcnt_node_local_references_total{node=\"%d\"}",
		 t->nid);
	EXPECT_EQ((long long)local, sample(text, key));
	snprintf(key, sizeof(key), "refcnt_node_remote_references_total{node=\"%d\"}",
		 t->nid);
	EXPECT_EQ((long long)remote, sample(text, key));
}

TEST_F_TIMEOUT(exporter, values_equal_module, 300)
{
	const char *args[] = { "--hot", "3", NULL };
	uint64_t hottest = 0;
	struct node_sums t;
	char *text, key[64];
	long long hottest_nid = -1;
	uint64_t hottest_set = 0;
	int i;

	for (i = 0; i < self->devs.n; i++)
		ASSERT_EQ(0, inject_all(self->devs.id[i], self->cnodes.n, 100 + i));
	ASSERT_EQ(0, run(args, TMP "/out", TMP "/err", -1));
	text = slurp(TMP "/out");
	ASSERT_NE(NULL, text);
	EXPECT_EQ(1, sample(text, "refcnt_up"));
	for (i = 0; i < self->devs.n; i++) {
		int nid = self->devs.id[i];

		check_stats(_metadata, text, nid);
		ASSERT_EQ(0, table_sums(nid, &t));
		check_table(_metadata, text, &self->cnodes, &t,
			    rc_list_index(&self->cnodes, nid));
		if (t.hottest > hottest) {
			hottest = t.hottest;
			hottest_nid = nid;
			hottest_set = t.hottest_set;
		}
	}
	snprintf(key, sizeof(key), "refcnt_feed_samples_total{feed=\"fault\"}");
	EXPECT_EQ((long long)rc_feed_stat("fault_samples"), sample(text, key));
	EXPECT_EQ((long long)hottest, sample(text, "refcnt_hot_set_references{rank=\"1\"}"));
	EXPECT_EQ(hottest_nid, sample(text, "refcnt_hot_set_node{rank=\"1\"}"));
	EXPECT_EQ((long long)hottest_set, sample(text, "refcnt_hot_set_index{rank=\"1\"}"));
	EXPECT_EQ(NULL, strstr(text, "rank=\"4\""));
	free(text);
}

/* The sample key of text, or -1 if missing. */
static long long value_of(const char *path, const char *key)
{
	char *text = slurp(path);
	long long v = text ? sample(text, key) : -1;

	free(text);
	return v;
}

/*
 * 1000 references to one set (below the hardware maximum) and 1000 more
 * than the maximum to another (pegged: 1000 single references after the
 * counter reached its maximum are lost) from the last cnodeid.
 */
TEST_F_TIMEOUT(exporter, injected_references_are_the_increase, 300)
{
	const char *args[] = { NULL };
	int nid = self->devs.id[self->devs.n - 1], k = self->cnodes.n - 1;
	unsigned int npc = self->cnodes.n > RCB_MAX_COUNTERS ? RCB_NODES_PER_GROUP : 1;
	char key[160], lkey[160], nkey[96], from[32];
	long long r0, r1, l0, l1, n0, n1;
	struct rcb_inject inj = { 0 };
	struct rcb_ref ref[2];
	struct rcb_slot slot;
	struct rcb_info info;
	int fd;

	from_label(&self->cnodes, npc, k / npc, from, sizeof(from));
	snprintf(key, sizeof(key),
		 "refcnt_references_total{node=\"%d\",from_node=\"%s\"}", nid, from);
	snprintf(lkey, sizeof(lkey),
		 "refcnt_lost_references_total{node=\"%d\",from_node=\"%s\"}", nid, from);
	snprintf(nkey, sizeof(nkey), "refcnt_node_references_total{node=\"%d\"}", nid);

	fd = rc_open_node(nid, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, RCB_INFO_GET, &info));
	ASSERT_EQ(0, first_slot(fd, &slot));
	ref[0].paddr = slot.base + slot.size / 2;
	ref[1].paddr = ref[0].paddr + info.rcb_granularity;
	ref[0].src_cnodeid = ref[1].src_cnodeid = k;
	ref[0].count = 1000;
	/* More than a hardware counter holds, faster than the fold: pegs. */
	ref[1].count = info.rcb_hw_counter_max + 1000;
	inj.refs = (uintptr_t)ref;
	inj.flags = RCB_INJECT_SYNC;

	ASSERT_EQ(0, run(args, TMP "/a", NULL, -1));
	inj.nr_refs = 1;
	ASSERT_EQ(0, ioctl(fd, RCB_INJECT, &inj));
	ASSERT_EQ(0, run(args, TMP "/b", NULL, -1));
	ASSERT_EQ(0, rc_inject_pegging(fd, ref[1].paddr, k, 1000));
	ASSERT_EQ(0, run(args, TMP "/c", NULL, -1));
	close(fd);

	r0 = value_of(TMP "/a", key);
	r1 = value_of(TMP "/b", key);
	n0 = value_of(TMP "/a", nkey);
	n1 = value_of(TMP "/b", nkey);
	ASSERT_GE(r0, 0);
	EXPECT_EQ(1000, r1 - r0) TH_LOG("%s", key);
	EXPECT_EQ(1000, n1 - n0) TH_LOG("%s", nkey);
	/* Pegged: what the counters missed is in the lost counts. */
	l0 = value_of(TMP "/b", lkey);
	l1 = value_of(TMP "/c", lkey);
	r0 = r1;
	r1 = value_of(TMP "/c", key);
	n0 = n1;
	n1 = value_of(TMP "/c", nkey);
	EXPECT_GT(l1 - l0, 0) TH_LOG("%s", lkey);
	EXPECT_EQ((long long)ref[1].count, (r1 - r0) + (l1 - l0));
	EXPECT_EQ((long long)ref[1].count, n1 - n0);
}

/* Bring the loopback interface up: the guest may have it down. */
static void loopback_up(void)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	if (s < 0)
		return;
	strcpy(ifr.ifr_name, "lo");
	if (!ioctl(s, SIOCGIFFLAGS, &ifr)) {
		ifr.ifr_flags |= IFF_UP;
		ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	close(s);
}

/* Send req to the exporter on port: the whole response, or NULL. */
static char *http_port(int port, const char *req, size_t len)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	char *buf = malloc(1 << 22);
	int s, n = 0, r, tries;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (tries = 0; buf && tries < 100; tries++) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (s >= 0 && !connect(s, (struct sockaddr *)&a, sizeof(a))) {
			if (write(s, req, len) == (ssize_t)len)
				while ((r = read(s, buf + n, (1 << 22) - 1 - n)) > 0)
					n += r;
			close(s);
			buf[n] = '\0';
			return buf;
		}
		if (s >= 0)
			close(s);
		usleep(100000);
	}
	free(buf);
	return NULL;
}

/* GET /metrics from the exporter on port: the whole response, or NULL. */
static char *scrape_port(int port)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

	return http_port(port, req, sizeof(req) - 1);
}

/* Wait until something listens on port (no request: no snapshot). */
static int wait_listening(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s, i, rc = -1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (i = 0; i < 100 && rc; i++) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0)
			return -1;
		rc = connect(s, (struct sockaddr *)&a, sizeof(a));
		close(s);
		if (rc)
			usleep(100000);
	}
	return rc;
}

static char *scrape(void)
{
	return scrape_port(PORT);
}

TEST_F_TIMEOUT(exporter, serves_through_unload_and_reload, 300)
{
	char listen[32], nkey[96], *text;
	const char *args[] = { "--listen", listen, NULL };
	int nid = self->devs.id[0];
	pid_t pid;

	if (!rc_ko_path())
		SKIP(return, "no REFCNT_KO: cannot reload the module");
	loopback_up();
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", PORT);
	snprintf(nkey, sizeof(nkey), "refcnt_node_references_total{node=\"%d\"}", nid);
	pid = start(args, NULL, TMP "/serve.err", -1);
	text = scrape();
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "HTTP/1.1 200 OK\r\n"));
	EXPECT_NE(NULL, strstr(text, "text/plain; version=0.0.4"));
	EXPECT_NE(NULL, strstr(text, "\nrefcnt_up 1\n"));
	EXPECT_NE(NULL, strstr(text, nkey));
	free(text);

	/* The exporter holds nothing open: the module unloads. */
	ASSERT_EQ(0, rc_unload_retry());
	text = scrape();
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "\nrefcnt_up 0\n"));
	EXPECT_EQ(NULL, strstr(text, "{node="));
	free(text);

	ASSERT_EQ(0, rc_load(""));
	text = scrape();
	ASSERT_NE(NULL, text);
	EXPECT_NE(NULL, strstr(text, "\nrefcnt_up 1\n"));
	EXPECT_NE(NULL, strstr(text, nkey));
	free(text);

	kill(pid, SIGTERM);
	EXPECT_EQ(0, rc_wait(pid));
}

/* A reader racing the textfile writes sees whole files only. */
TEST_F_TIMEOUT(exporter, textfile_never_half_written, 300)
{
	const char *args[] = { "--textfile", TMP "/tf", "--interval", "1", NULL };
	struct timeval t0, t;
	int reads = 0, whole = 0, i;
	pid_t pid;

	mkdir(TMP "/tf", 0755);
	unlink(TMP "/tf/refcnt.prom");
	pid = start(args, NULL, NULL, -1);
	/* The first write: a whole pass over every table (slow in TCG). */
	for (i = 0; i < 1200 && access(TMP "/tf/refcnt.prom", F_OK); i++)
		usleep(100000);
	ASSERT_EQ(0, access(TMP "/tf/refcnt.prom", F_OK));
	gettimeofday(&t0, NULL);
	do {
		char *text = slurp(TMP "/tf/refcnt.prom");

		if (text && *text) {
			size_t len = strlen(text);

			reads++;
			whole += len > 1 && text[len - 1] == '\n' &&
				 strstr(text, "refcnt_up 1\n") &&
				 strstr(text, "# TYPE refcnt_hot_set_remote_references gauge\n");
		}
		free(text);
		gettimeofday(&t, NULL);
	} while (t.tv_sec - t0.tv_sec < 3);
	kill(pid, SIGTERM);
	EXPECT_EQ(0, rc_wait(pid));
	EXPECT_GT(reads, 0);
	EXPECT_EQ(reads, whole);
}

/* The body of a response: what follows the blank line, or NULL. */
static const char *body_of(const char *resp)
{
	const char *p = strstr(resp, "\r\n\r\n");

	return p ? p + 4 : NULL;
}

/*
 * HTTP's edges: a HEAD has the GET's headers and no body, an unknown
 * path is 404, another method 405 with Allow, a request head larger than
 * the server takes 431; the exporter serves on after each.
 */
TEST_F_TIMEOUT(exporter, http_edges, 300)
{
	static const char head[] = "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	static const char unknown[] = "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	static const char post[] = "POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
				   "Content-Length: 3\r\n\r\nx=1";
	char listen[32], *big, *resp;
	const char *args[] = { "--listen", listen, NULL };
	size_t n = 0;
	pid_t pid;

	loopback_up();
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", PORT + 2);
	pid = start(args, NULL, NULL, -1);
	ASSERT_EQ(0, wait_listening(PORT + 2));

	resp = http_port(PORT + 2, head, sizeof(head) - 1);
	ASSERT_NE(NULL, resp);
	EXPECT_EQ(0, strncmp(resp, "HTTP/1.1 200 OK\r\n", 17)) TH_LOG("%.80s", resp);
	EXPECT_NE(NULL, strstr(resp, "text/plain; version=0.0.4"));
	EXPECT_NE(NULL, strstr(resp, "Content-Length: "));
	ASSERT_NE(NULL, body_of(resp));
	EXPECT_STREQ("", body_of(resp));
	free(resp);

	resp = http_port(PORT + 2, unknown, sizeof(unknown) - 1);
	ASSERT_NE(NULL, resp);
	EXPECT_EQ(0, strncmp(resp, "HTTP/1.1 404 Not Found\r\n", 24)) TH_LOG("%.80s", resp);
	EXPECT_STREQ("not found; try /metrics\n", body_of(resp) ? body_of(resp) : "");
	free(resp);

	resp = http_port(PORT + 2, post, sizeof(post) - 1);
	ASSERT_NE(NULL, resp);
	EXPECT_EQ(0, strncmp(resp, "HTTP/1.1 405 Method Not Allowed\r\n", 33)) TH_LOG("%.80s", resp);
	EXPECT_NE(NULL, strstr(resp, "\r\nAllow: GET, HEAD\r\n"));
	free(resp);

	/* A 64 KiB header line: more than a request head may take. */
	big = malloc(70000);
	ASSERT_NE(NULL, big);
	n = sprintf(big, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ");
	memset(big + n, 'a', 65536);
	n += 65536;
	n += sprintf(big + n, "\r\nConnection: close\r\n\r\n");
	resp = http_port(PORT + 2, big, n);
	free(big);
	ASSERT_NE(NULL, resp);
	EXPECT_EQ(0, strncmp(resp, "HTTP/1.1 431 ", 13)) TH_LOG("%.80s", resp);
	free(resp);

	resp = scrape_port(PORT + 2);
	ASSERT_NE(NULL, resp);
	EXPECT_EQ(0, strncmp(resp, "HTTP/1.1 200 OK\r\n", 17)) TH_LOG("%.80s", resp);
	EXPECT_NE(NULL, strstr(resp, "\nrefcnt_up 1\n"));
	free(resp);
	kill(pid, SIGTERM);
	EXPECT_EQ(0, rc_wait(pid));
}

TEST_F(exporter, bad_input_one_line)
{
	const char *unknown[] = { "--no-such-option", NULL };
	const char *textfile[] = { "--textfile", TMP "/ro", "--once", NULL };
	char listen[32];
	const char *serve[] = { "--listen", listen, NULL };
	const char *again[] = { "--listen", listen, "--once", NULL };
	char *err;
	pid_t pid;

	EXPECT_EQ(2, run(unknown, NULL, TMP "/e1", -1));
	EXPECT_EQ(1, lines(TMP "/e1"));

	mkdir(TMP "/ro", 0755);
	chmod(TMP "/ro", 0555);
	EXPECT_EQ(1, run(textfile, NULL, TMP "/e2", 65534));
	EXPECT_EQ(1, lines(TMP "/e2"));
	err = slurp(TMP "/e2");
	EXPECT_NE(NULL, strstr(err, "cannot write there"));
	free(err);

	loopback_up();
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", PORT + 1);
	pid = start(serve, NULL, NULL, -1);
	ASSERT_EQ(0, wait_listening(PORT + 1));
	EXPECT_EQ(1, run(again, NULL, TMP "/e3", -1));
	EXPECT_EQ(1, lines(TMP "/e3"));
	err = slurp(TMP "/e3");
	EXPECT_NE(NULL, strstr(err, "in use"));
	free(err);
	kill(pid, SIGTERM);
	rc_wait(pid);
}

TEST_HARNESS_MAIN
