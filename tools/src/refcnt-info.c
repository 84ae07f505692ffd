// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-info: the topology(1) of refcnt. For every node with counters:
 * its cnodeid, counter sets, slots and thresholds, as RCB_INFO_GET and
 * RCB_SLOT_QUERY report them, plus the module's feeds and table memory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/refcnt.h>

static int json;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: refcnt-info [--json] [--help]\n"
		"Show every node's reference counter buffer: cnodeid, sets,\n"
		"counters per set, counter width, thresholds, slots, and the\n"
		"module's feeds and table memory.\n"
		"Exit status: 0 ok, 1 module not loaded or no permission, 2 usage.\n");
}

static long read_sysfs(const char *path)
{
	char buf[64];
	long v = -1;
	FILE *f = fopen(path, "r");

	if (f && fgets(buf, sizeof(buf), f))
		v = strtol(buf, NULL, 0);
	if (f)
		fclose(f);
	return v;
}

static int node_ids(int *ids, int max)
{
	DIR *d = opendir("/dev/refcnt");
	struct dirent *de;
	int n = 0, i, j;

	if (!d)
		return -1;
	while ((de = readdir(d)) && n < max)
		if (!strncmp(de->d_name, "node", 4))
			ids[n++] = atoi(de->d_name + 4);
	closedir(d);
	for (i = 1; i < n; i++)	/* few nodes: insertion sort */
		for (j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
			int t = ids[j];

			ids[j] = ids[j - 1];
			ids[j - 1] = t;
		}
	return n;
}

static int show_node(int nid, int first)
{
	struct rcb_slot_query q = { 0 };
	struct rcb_slot *slots;
	struct rcb_info info;
	char path[64];
	unsigned int i;
	long bytes;
	int fd;

	snprintf(path, sizeof(path), "/dev/refcnt/node%d", nid);
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "refcnt-info: %s: %s%s\n", path, strerror(errno),
			errno == EACCES ? " (the devices are root's, or the refcnt group's)" : "");
		return -1;
	}
	if (ioctl(fd, RCB_INFO_GET, &info) || ioctl(fd, RCB_SLOT_QUERY, &q)) {
		fprintf(stderr, "refcnt-info: %s: %s\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	slots = calloc(q.num_slots, sizeof(*slots));
	q.slots = (unsigned long)slots;
	if (!slots || ioctl(fd, RCB_SLOT_QUERY, &q)) {
		fprintf(stderr, "refcnt-info: %s: %s\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	snprintf(path, sizeof(path),
		 "/sys/class/misc/refcnt-node%d/stats/table_bytes", nid);
	bytes = read_sysfs(path);

	if (json) {
		printf("%s    {\"node\": %d, \"cnodeid\": %u, \"len\": %llu, \"sets\": %llu, "
		       "\"counters_per_set\": %u, \"nodes_per_counter\": %u, "
		       "\"counter_size\": %u, \"base_pages\": %llu, \"base_page_size\": %u, "
		       "\"base_paddr\": %llu, \"granularity\": %u, \"hw_counter_bits\": %u, "
		       "\"hw_counter_max\": %u, \"abs_threshold\": %u, "
		       "\"diff_threshold\": %u, \"table_bytes\": %ld, \"slots\": [",
		       first ? "" : ",\n", nid, info.rcb_cnodeid,
		       (unsigned long long)info.rcb_len,
		       (unsigned long long)info.rcb_sw_sets,
		       info.rcb_sw_counters_per_set, info.rcb_nodes_per_counter,
		       info.rcb_sw_counter_size,
		       (unsigned long long)info.rcb_base_pages,
		       info.rcb_base_page_size,
		       (unsigned long long)info.rcb_base_paddr,
		       info.rcb_granularity, info.rcb_hw_counter_bits,
		       info.rcb_hw_counter_max, info.rcb_abs_threshold,
		       info.rcb_diff_threshold, bytes);
		for (i = 0; i < q.num_slots; i++)
			printf("%s{\"base\": %llu, \"size\": %llu}", i ? ", " : "",
			       (unsigned long long)slots[i].base,
			       (unsigned long long)slots[i].size);
		printf("]}");
	} else {
		printf("node %d  cnodeid %u  %llu MiB in %u slot%s\n", nid,
		       info.rcb_cnodeid,
		       (unsigned long long)info.rcb_base_pages *
		       info.rcb_base_page_size >> 20,
		       info.rcb_num_slots, info.rcb_num_slots == 1 ? "" : "s");
		printf("  sets %llu of %u bytes, %u counters per set (%u node%s each), buffer %llu bytes\n",
		       (unsigned long long)info.rcb_sw_sets, info.rcb_granularity,
		       info.rcb_sw_counters_per_set, info.rcb_nodes_per_counter,
		       info.rcb_nodes_per_counter == 1 ? "" : "s",
		       (unsigned long long)info.rcb_len);
		printf("  hardware counters %u bits (max %u), absolute threshold %u, differential %u%s\n",
		       info.rcb_hw_counter_bits, info.rcb_hw_counter_max,
		       info.rcb_abs_threshold, info.rcb_diff_threshold,
		       info.rcb_diff_threshold ? "" : " (off)");
		printf("  table memory in use %ld bytes\n", bytes);
		for (i = 0; i < q.num_slots; i++)
			printf("  slot %u  0x%012llx-0x%012llx  %llu MiB\n", i,
			       (unsigned long long)slots[i].base,
			       (unsigned long long)(slots[i].base + slots[i].size),
			       (unsigned long long)slots[i].size >> 20);
	}
	free(slots);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ids[1024], n, i, c, err = 0;
	long fault, pebs;

	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	n = node_ids(ids, 1024);
	if (n <= 0) {
		fprintf(stderr, "refcnt-info: no /dev/refcnt/node*: is the refcnt module loaded? (modprobe refcnt)\n");
		return 1;
	}
	fault = read_sysfs("/sys/module/refcnt/parameters/fault_period");
	pebs = read_sysfs("/sys/module/refcnt/parameters/pebs_period");
	if (json)
		printf("{\"fault_period\": %ld, \"pebs_period\": %ld, \"nodes\": [\n",
		       fault, pebs);
	else
		printf("feeds: page faults %s (period %ld), PEBS/IBS %s (period %ld)\n",
		       fault > 0 ? "on" : "off", fault, pebs > 0 ? "on" : "off", pebs);
	for (i = 0; i < n; i++)
		err |= show_node(ids[i], i == 0);
	if (json)
		printf("\n]}\n");
	return err ? 1 : 0;
}
