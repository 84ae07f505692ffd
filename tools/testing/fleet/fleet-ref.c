// SPDX-License-Identifier: GPL-2.0
/*
 * fleet-ref: the fleet tests' independent view of the module, through the
 * raw ioctls only (not librefcnt, not the exporters' code), so that what
 * pmdarefcnt and refcnt-exporter report can be compared with it exactly.
 *
 *   fleet-ref inject NID FROM_NID COUNT
 *	deliver COUNT references to the first sets of node NID from node
 *	FROM_NID (RCB_INJECT, synchronous), at most CHUNK per set and call,
 *	so that no hardware counter pegs and nothing is lost
 *   fleet-ref watch FILE SECONDS FAMILIES
 *	read FILE as fast as possible for SECONDS: every read must be a
 *	complete exposition (FAMILIES "# TYPE" lines, "refcnt_up 1", a final
 *	newline) and every version of it (inode) must keep its content (a
 *	rename per write, never a rewrite in place); prints the reads, the
 *	bad ones and the versions seen, and fails on a bad read or fewer
 *	than 3 versions
 *   fleet-ref view
 *	the module's statistics (sysfs) and table sums as exposition lines in
 *	refcnt-exporter's names, "name{labels} value", unsorted
 *   fleet-ref sums
 *	one line per node device and counter: "NID FROM_NID REFS LOST",
 *	REFS = extended + hardware over all sets, read with RCB_SETS_READ
 *	after RCB_SYNC
 *
 * Exit status: 0, 1 on an error (one line on stderr naming it), 2 usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/refcnt.h>

/* Below the fold threshold (7/8 of 2047) plus one round: never pegs. */
#define CHUNK	250
#define MAX_NODES	1024

static int cnode_nid[MAX_NODES];
static int nr_cnodes;

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "fleet-ref: %s %s: %s\n", what, arg, strerror(errno));
	exit(1);
}

/* cnodeids are the online nodes in Linux node id order. */
static void read_online(void)
{
	FILE *f = fopen("/sys/devices/system/node/online", "r");
	int a, b, n;
	char sep;

	if (!f)
		die("open", "/sys/devices/system/node/online");
	while ((n = fscanf(f, "%d", &a)) == 1) {
		b = a;
		sep = (char)fgetc(f);
		if (sep == '-') {
			if (fscanf(f, "%d", &b) != 1)
				break;
			sep = (char)fgetc(f);
		}
		for (; a <= b && nr_cnodes < MAX_NODES; a++)
			cnode_nid[nr_cnodes++] = a;
		if (sep != ',')
			break;
	}
	fclose(f);
}

static int nid_cnode(int nid)
{
	int i;

	for (i = 0; i < nr_cnodes; i++)
		if (cnode_nid[i] == nid)
			return i;
	errno = EINVAL;
	die("no online node", "");
	return -1;
}

static int open_node(int nid, struct rcb_info *info)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/dev/refcnt/node%d", nid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		die("open", path);
	if (ioctl(fd, RCB_INFO_GET, info))
		die("RCB_INFO_GET on", path);
	return fd;
}

static int inject(int nid, int from, unsigned long long count)
{
	struct rcb_ref refs[64];
	struct rcb_info info;
	struct rcb_slot *slots, slot;
	struct rcb_inject in = { .refs = (uintptr_t)refs, .flags = RCB_INJECT_SYNC };
	int fd = open_node(nid, &info), src = nid_cnode(from);
	unsigned int n;

	/* RCB_SLOT_GET writes every slot RCB_INFO_GET reported. */
	slots = calloc(info.rcb_num_slots ? info.rcb_num_slots : 1, sizeof(*slots));
	if (!slots || ioctl(fd, RCB_SLOT_GET, slots))
		die("RCB_SLOT_GET", "");
	/* The last slot: the first may start at physical address 0. */
	slot = slots[info.rcb_num_slots - 1];
	free(slots);
	if (slot.size < 64ULL * info.rcb_granularity) {
		errno = ENOSPC;
		die("slot too small on node", "");
	}
	while (count) {
		/* One round: up to 64 sets, CHUNK each. */
		for (n = 0; n < 64 && count; n++) {
			refs[n].paddr = slot.base + (uint64_t)n * info.rcb_granularity;
			refs[n].src_cnodeid = (uint32_t)src;
			refs[n].count = count > CHUNK ? CHUNK : (uint32_t)count;
			count -= refs[n].count;
		}
		in.nr_refs = n;
		if (ioctl(fd, RCB_INJECT, &in))
			die("RCB_INJECT", "");
	}
	close(fd);
	return 0;
}

/* Per counter of node nid: references (extended + hardware) and lost. */
static void node_sums(int nid, unsigned long long *refs, unsigned long long *lo,
		      int *nr_counters, int *nodes_per_counter)
{
	struct rcb_info info;
	struct rcb_sets_read rd = { 0 };
	int fd = open_node(nid, &info);
	uint64_t per = info.rcb_sw_counters_per_set, n = info.rcb_sw_sets, c;
	uint32_t *hw = calloc(n * per, 4), *ext = calloc(n * per, 4), *lost = calloc(n * per, 4);
	uint64_t s;

	if (!hw || !ext || !lost)
		die("calloc", "");
	if (ioctl(fd, RCB_SYNC))
		die("RCB_SYNC", "");
	rd.nr_sets = n;
	rd.hw = (uintptr_t)hw;
	rd.ext = (uintptr_t)ext;
	rd.lost = (uintptr_t)lost;
	if (ioctl(fd, RCB_SETS_READ, &rd))
		die("RCB_SETS_READ", "");
	for (c = 0; c < per; c++)
		refs[c] = lo[c] = 0;
	for (s = 0; s < n; s++)
		for (c = 0; c < per; c++) {
			refs[c] += (unsigned long long)hw[s * per + c] + ext[s * per + c];
			lo[c] += lost[s * per + c];
		}
	free(hw);
	free(ext);
	free(lost);
	close(fd);
	*nr_counters = (int)per;
	*nodes_per_counter = (int)info.rcb_nodes_per_counter;
}

static void sums_node(int nid)
{
	unsigned long long refs[RCB_MAX_COUNTERS], lo[RCB_MAX_COUNTERS];
	int per, npc, c;

	node_sums(nid, refs, lo, &per, &npc);
	for (c = 0; c < per; c++)
		printf("%d %d %llu %llu\n", nid, cnode_nid[c * npc], refs[c], lo[c]);
}

static unsigned long long read_u64(const char *path)
{
	unsigned long long v;
	FILE *f = fopen(path, "r");

	if (!f || fscanf(f, "%llu", &v) != 1)
		die("read", path);
	fclose(f);
	return v;
}

static const char *const stats[] = {
	"references", "pegged", "saturated", "folds", "migrations",
	"events_dropped", "refs_dropped", "discarded", "overflowed",
	"refs_deferred", "defer_full",
};

static void view_node(int nid)
{
	unsigned long long refs[RCB_MAX_COUNTERS], lo[RCB_MAX_COUNTERS];
	unsigned long long local = 0, remote = 0, lost = 0;
	int per, npc, c;
	char path[128];
	size_t i;

	node_sums(nid, refs, lo, &per, &npc);
	for (i = 0; i < sizeof(stats) / sizeof(stats[0]); i++) {
		snprintf(path, sizeof(path), "/sys/class/misc/refcnt-node%d/stats/%s", nid, stats[i]);
		printf("refcnt_node_%s_total{node=\"%d\"} %llu\n", stats[i], nid, read_u64(path));
	}
	snprintf(path, sizeof(path), "/sys/class/misc/refcnt-node%d/stats/table_bytes", nid);
	printf("refcnt_node_table_bytes{node=\"%d\"} %llu\n", nid, read_u64(path));
	for (c = 0; c < per; c++) {
		int from = cnode_nid[c * npc];

		printf("refcnt_references_total{node=\"%d\",from_node=\"%d\"} %llu\n", nid, from, refs[c]);
		printf("refcnt_lost_references_total{node=\"%d\",from_node=\"%d\"} %llu\n", nid, from, lo[c]);
		if (from == nid)
			local += refs[c];
		else
			remote += refs[c];
		lost += lo[c];
	}
	printf("refcnt_node_local_references_total{node=\"%d\"} %llu\n", nid, local);
	printf("refcnt_node_remote_references_total{node=\"%d\"} %llu\n", nid, remote);
	printf("refcnt_node_lost_references_total{node=\"%d\"} %llu\n", nid, lost);
}

/* The feeds: every /sys/kernel/refcnt/<feed>_samples. */
static void view_feeds(void)
{
	static const char *const fs[] = { "samples", "delivered", "unresolved" };
	DIR *d = opendir("/sys/kernel/refcnt");
	struct dirent *e;
	char feed[64], path[160];
	size_t len, i;

	if (!d)
		die("opendir", "/sys/kernel/refcnt");
	while ((e = readdir(d)) != NULL) {
		len = strlen(e->d_name);
		if (len <= 8 || len - 8 >= sizeof(feed) || strcmp(e->d_name + len - 8, "_samples"))
			continue;
		memcpy(feed, e->d_name, len - 8);
		feed[len - 8] = 0;
		for (i = 0; i < 3; i++) {
			snprintf(path, sizeof(path), "/sys/kernel/refcnt/%s_%s", feed, fs[i]);
			printf("refcnt_feed_%s_total{feed=\"%s\"} %llu\n", fs[i], feed, read_u64(path));
		}
	}
	closedir(d);
}

static int view(void)
{
	char path[64];
	int nid;

	for (nid = 0; nid < MAX_NODES; nid++) {
		snprintf(path, sizeof(path), "/dev/refcnt/node%d", nid);
		if (access(path, F_OK) == 0)
			view_node(nid);
	}
	view_feeds();
	return 0;
}

static int sums(void)
{
	char path[64];
	int nid;

	for (nid = 0; nid < MAX_NODES; nid++) {
		snprintf(path, sizeof(path), "/dev/refcnt/node%d", nid);
		if (access(path, F_OK) == 0)
			sums_node(nid);
	}
	return 0;
}

/* FNV-1a: enough to tell two versions of a file apart. */
static uint64_t hash(const char *p, size_t n)
{
	uint64_t h = 14695981039346656037ULL;

	while (n--)
		h = (h ^ (unsigned char)*p++) * 1099511628211ULL;
	return h;
}

static int complete(const char *buf, size_t len, int families)
{
	const char *p = buf;
	int types = 0;

	if (!len || buf[len - 1] != '\n' || !strstr(buf, "\nrefcnt_up 1\n"))
		return 0;
	while ((p = strstr(p, "# TYPE ")) != NULL) {
		types++;
		p++;
	}
	return types == families;
}

static size_t read_all(int fd, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t r;

	while (len < size - 1 && (r = pread(fd, buf + len, size - 1 - len, (off_t)len)) > 0)
		len += (size_t)r;
	buf[len] = 0;
	return len;
}

/*
 * Each read is checked complete; the file read before stays open one more
 * round and is read again: with a rename per write nothing ever changes an
 * open version (its inode cannot be reused while open), with a rewrite in
 * place it does.  A version is a change of content between reads.
 */
static int watch(const char *path, int seconds, int families)
{
	static char buf[1 << 20], again[1 << 20];
	unsigned long reads = 0, bad = 0, versions = 0;
	uint64_t h, last_h = 0, prev_h = 0;
	time_t end = time(NULL) + seconds;
	int fd, prev = -1;
	size_t len;

	while (time(NULL) < end) {
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		len = read_all(fd, buf, sizeof(buf));
		reads++;
		h = hash(buf, len);
		if (!complete(buf, len, families)) {
			if (!bad)
				fprintf(stderr, "fleet-ref: incomplete read of %zu bytes:\n%s\n", len, buf);
			bad++;
		}
		if (prev >= 0) {
			size_t n = read_all(prev, again, sizeof(again));

			if (hash(again, n) != prev_h) {
				if (!bad)
					fprintf(stderr, "fleet-ref: a version changed after it was read\n");
				bad++;
			}
			close(prev);
		}
		prev = fd;
		prev_h = h;
		versions += reads == 1 || h != last_h;
		last_h = h;
	}
	if (prev >= 0)
		close(prev);
	printf("%lu reads, %lu incomplete or rewritten in place, %lu versions\n",
	       reads, bad, versions);
	return bad || versions < 3;
}

int main(int argc, char **argv)
{
	read_online();
	if (argc == 5 && !strcmp(argv[1], "inject"))
		return inject(atoi(argv[2]), atoi(argv[3]), strtoull(argv[4], NULL, 0));
	if (argc == 5 && !strcmp(argv[1], "watch"))
		return watch(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc == 2 && !strcmp(argv[1], "view"))
		return view();
	if (argc == 2 && !strcmp(argv[1], "sums"))
		return sums();
	fprintf(stderr, "usage: fleet-ref inject NID FROM_NID COUNT | sums | view | watch FILE SECONDS FAMILIES\n");
	return 2;
}
