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
 *   fleet-ref sums
 *	one line per node device and counter: "NID FROM_NID REFS LOST",
 *	REFS = extended + hardware over all sets, read with RCB_SETS_READ
 *	after RCB_SYNC
 *
 * Exit status: 0, 1 on an error (one line on stderr naming it), 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
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

static void sums_node(int nid)
{
	struct rcb_info info;
	struct rcb_sets_read rd = { 0 };
	int fd = open_node(nid, &info);
	uint64_t per = info.rcb_sw_counters_per_set, n = info.rcb_sw_sets, c;
	uint32_t *hw = calloc(n * per, 4), *ext = calloc(n * per, 4), *lost = calloc(n * per, 4);
	unsigned long long refs[RCB_MAX_COUNTERS] = { 0 }, lo[RCB_MAX_COUNTERS] = { 0 };
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
	for (s = 0; s < n; s++)
		for (c = 0; c < per; c++) {
			refs[c] += (unsigned long long)hw[s * per + c] + ext[s * per + c];
			lo[c] += lost[s * per + c];
		}
	for (c = 0; c < per; c++)
		printf("%d %d %llu %llu\n", nid,
		       cnode_nid[c * info.rcb_nodes_per_counter], refs[c], lo[c]);
	free(hw);
	free(ext);
	free(lost);
	close(fd);
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

int main(int argc, char **argv)
{
	read_online();
	if (argc == 5 && !strcmp(argv[1], "inject"))
		return inject(atoi(argv[2]), atoi(argv[3]), strtoull(argv[4], NULL, 0));
	if (argc == 2 && !strcmp(argv[1], "sums"))
		return sums();
	fprintf(stderr, "usage: fleet-ref inject NID FROM_NID COUNT | fleet-ref sums\n");
	return 2;
}
