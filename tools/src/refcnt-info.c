// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-info: the topology(1) of refcnt. Every online node with its
 * cnodeid, CPUs and memory; for every node with counters its rcb_info
 * (RCB_INFO_GET), slots, table memory and statistics; the module's
 * parameters, the feeds and their state, and the node distances.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtools.h"

static const char *const stat_names[] = {
	"references", "pegged", "saturated", "folds", "migrations",
	"events_dropped", "refs_dropped", "discarded", "refs_deferred",
	"defer_full",
};
#define NR_STATS (sizeof(stat_names) / sizeof(stat_names[0]))

static const char *const feed_stats[] = {
	"samples", "delivered", "unresolved", "dropped",
};

static const char *const params[] = {
	"granularity", "premium", "abs_threshold", "diff_threshold",
	"event_queue_len", "fault_period", "pebs_period", "pebs_ldlat",
	"pebs_memside",
};

/*
 * The PEBS/IBS feed's samples it did not count, by reason, those whose
 * multiplexing factor was capped, the ticks perf throttled its events
 * (samples lost uncounted) and the references those lost, estimated; the
 * share of their time its events ran (percent; -1 while off).
 */
static const char *const pebs_stats[] = {
	"kernel", "noaddr", "cached", "inexact", "capped", "throttled",
	"throttle_lost", "running",
};
#define NR_PEBS_STATS (sizeof(pebs_stats) / sizeof(pebs_stats[0]))

/*
 * The hub feed's statistics (/sys/kernel/refcnt/hub_*), while the test
 * rig's refcnt_hub.ko drains the emulator's hub device.
 */
static const char *const hub_stats[] = {
	"period", "samples", "references", "unresolved", "malformed",
	"overruns",
};
#define NR_HUB_STATS (sizeof(hub_stats) / sizeof(hub_stats[0]))
#define NR_PARAMS (sizeof(params) / sizeof(params[0]))

struct node {
	int nid, cnodeid;
	int nr_cpus;
	int *cpus;
	long long mem_total, mem_free;	/* bytes, -1 unknown */
	int has_dev;
	struct rcb_info info;
	int nr_slots;
	struct rcb_slot *slots;
	long long table_bytes;
	long long stats[NR_STATS];
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: refcnt-info [--json] [--node N]\n"
		"\n"
		"Show what refcnt counts: every online node with its cnodeid, CPUs and\n"
		"memory; for every node with counters its rcb_info (sets, counters per\n"
		"set, counter width, thresholds, granularity), slots, table memory and\n"
		"statistics; the module parameters, the feeds and their state, and the\n"
		"node distances.\n"
		"\n"
		"  -j, --json     one JSON object; each node's \"rcb_info\" has the\n"
		"                 struct rcb_info field names and values\n"
		"  -n, --node N   only node N\n"
		"  -h, --help     this text\n"
		"\n"
		"Exit status: 0 ok, 1 error, 2 usage, 3 refcnt module not loaded,\n"
		"4 permission denied (the devices are root's and the refcnt group's).\n");
}

/* "0-3,8" from a sorted list. */
static void cpulist(const int *cpus, int n, char *buf, size_t size)
{
	size_t len = 0;
	int i, j;

	buf[0] = '\0';
	for (i = 0; i < n && len < size; i = j + 1) {
		for (j = i; j + 1 < n && cpus[j + 1] == cpus[j] + 1; j++)
			;
		if (j == i)
			len += snprintf(buf + len, size - len, "%s%d",
					len ? "," : "", cpus[i]);
		else
			len += snprintf(buf + len, size - len, "%s%d-%d",
					len ? "," : "", cpus[i], cpus[j]);
	}
	if (!n)
		snprintf(buf, size, "-");
}

static void node_meminfo(struct node *nd)
{
	char path[96], line[256];
	FILE *f;

	nd->mem_total = nd->mem_free = -1;
	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo",
		 nd->nid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		long long kb;
		char key[64];

		/* "Node 0 MemTotal:       524288 kB" */
		if (sscanf(line, "Node %*d %63[^:]: %lld", key, &kb) != 2)
			continue;
		if (!strcmp(key, "MemTotal"))
			nd->mem_total = kb * 1024;
		else if (!strcmp(key, "MemFree"))
			nd->mem_free = kb * 1024;
	}
	fclose(f);
}

static int node_load(struct node *nd, const int *dev_nids, int nr_dev)
{
	struct refcnt_node *rn;
	char path[128];
	unsigned int i;
	int n, k, rc;

	n = refcnt_nid_cpus(nd->nid, NULL, 0);
	if (n > 0) {
		nd->cpus = calloc(n, sizeof(int));
		if (nd->cpus)
			nd->nr_cpus = refcnt_nid_cpus(nd->nid, nd->cpus, n);
		if (nd->nr_cpus > n)
			nd->nr_cpus = n;
	}
	node_meminfo(nd);
	for (k = 0; k < nr_dev; k++)
		if (dev_nids[k] == nd->nid)
			break;
	if (k == nr_dev)
		return 0;
	rc = rt_node_open(nd->nid, &rn, &nd->info);
	if (rc)
		return rc;
	nd->has_dev = 1;
	n = refcnt_node_slots(rn, NULL, 0);
	nd->slots = calloc(n > 0 ? n : 1, sizeof(*nd->slots));
	if (n > 0 && nd->slots)
		nd->nr_slots = refcnt_node_slots(rn, nd->slots, n);
	if (nd->nr_slots > n)
		nd->nr_slots = n;
	refcnt_node_close(rn);
	snprintf(path, sizeof(path),
		 "/sys/class/misc/refcnt-node%d/stats/table_bytes", nd->nid);
	nd->table_bytes = rt_read_ll(path, -1);
	for (i = 0; i < NR_STATS; i++) {
		snprintf(path, sizeof(path),
			 "/sys/class/misc/refcnt-node%d/stats/%s", nd->nid,
			 stat_names[i]);
		nd->stats[i] = rt_read_ll(path, -1);
	}
	return 0;
}

static long long feed_stat(const char *feed, const char *stat)
{
	char path[96];

	snprintf(path, sizeof(path), "/sys/kernel/refcnt/%s_%s", feed, stat);
	return rt_read_ll(path, -1);
}

/*
 * The samples a second perf lets one event take before it throttles it,
 * -1 if unknown (no perf events).
 */
static long long max_rate(void)
{
	return rt_read_ll("/proc/sys/kernel/perf_event_max_sample_rate", -1);
}

/* A parameter of module mod, -1 if it has none (or is not loaded). */
static long long mod_param(const char *mod, const char *name)
{
	char path[96], buf[32];

	snprintf(path, sizeof(path), "/sys/module/%s/parameters/%s", mod, name);
	if (rt_read_line(path, buf, sizeof(buf)))
		return -1;
	if (buf[0] == 'Y')	/* bool parameters */
		return 1;
	if (buf[0] == 'N')
		return 0;
	return strtoll(buf, NULL, 0);
}

static long long param(const char *name)
{
	return mod_param("refcnt", name);
}

/* The hub feed drains (refcnt_hub.ko loaded with enable=1). */
static bool hub_on(void)
{
	return mod_param("refcnt_hub", "enable") > 0;
}

static void json_info(const struct rcb_info *in)
{
	printf("{\"rcb_len\": %llu, \"rcb_sw_sets\": %llu, "
	       "\"rcb_base_pages\": %llu, \"rcb_base_paddr\": %llu, "
	       "\"rcb_sw_counters_per_set\": %u, \"rcb_sw_counter_size\": %u, "
	       "\"rcb_base_page_size\": %u, \"rcb_cnodeid\": %u, "
	       "\"rcb_granularity\": %u, \"rcb_hw_counter_max\": %u, "
	       "\"rcb_diff_threshold\": %u, \"rcb_abs_threshold\": %u, "
	       "\"rcb_num_slots\": %u, \"rcb_nodeid\": %u, "
	       "\"rcb_num_cnodes\": %u, \"rcb_hw_counter_bits\": %u, "
	       "\"rcb_nodes_per_counter\": %u, \"rcb_flags\": %u}",
	       (unsigned long long)in->rcb_len,
	       (unsigned long long)in->rcb_sw_sets,
	       (unsigned long long)in->rcb_base_pages,
	       (unsigned long long)in->rcb_base_paddr,
	       in->rcb_sw_counters_per_set, in->rcb_sw_counter_size,
	       in->rcb_base_page_size, in->rcb_cnodeid, in->rcb_granularity,
	       in->rcb_hw_counter_max, in->rcb_diff_threshold,
	       in->rcb_abs_threshold, in->rcb_num_slots, in->rcb_nodeid,
	       in->rcb_num_cnodes, in->rcb_hw_counter_bits,
	       in->rcb_nodes_per_counter, in->rcb_flags);
}

/* What each feed's samples carry (RCB_FEEDS_GET); -1 if not known. */
#define MAX_FEEDS	16
static int feed_infos(struct rcb_feed_info *f)
{
	int n = refcnt_feeds(f, MAX_FEEDS);
	int i;

	if (n > MAX_FEEDS)
		n = MAX_FEEDS;
	for (i = 0; i < n; i++)
		f[i].name[sizeof(f[i].name) - 1] = '\0';
	return n;
}

/* "filters": what a counting session can restrict each feed to. */
static void json_filters(void)
{
	struct rcb_feed_info f[MAX_FEEDS];
	int n = feed_infos(f), i;

	printf("  \"filters\": ");
	if (n < 0) {
		printf("null,\n");
		return;
	}
	printf("[");
	for (i = 0; i < n; i++)
		printf("%s{\"feed\": \"%s\", \"present\": %s, \"session\": %s, "
		       "\"data_address\": %s, \"instruction_address\": %s, "
		       "\"loads\": %s, \"stores\": %s}", i ? ", " : "", f[i].name,
		       f[i].state & RCB_FEED_PRESENT ? "true" : "false",
		       f[i].caps & RCB_FEED_SESSION ? "true" : "false",
		       f[i].caps & RCB_FEED_DATA_ADDR ? "true" : "false",
		       f[i].caps & RCB_FEED_INSTR_ADDR ? "true" : "false",
		       f[i].caps & RCB_FEED_LOADS ? "true" : "false",
		       f[i].caps & RCB_FEED_STORES ? "true" : "false");
	printf("],\n");
}

/*
 * What each feed can filter on in a counting session: the refcnt form of
 * papi_native_avail --darr/--iarr on the Itanium 2.
 */
static void text_filters(void)
{
	struct rcb_feed_info f[MAX_FEEDS];
	int n = feed_infos(f), i;

	if (n < 0) {
		printf("filters: unknown (%s)\n", errno == ENOTTY ?
		       "the module has no RCB_FEEDS_GET" : strerror(errno));
		return;
	}
	printf("filters a counting session can apply (PAPI_DATA_ADDRESS, PAPI_INSTR_ADDRESS, loads/stores):\n");
	for (i = 0; i < n; i++) {
		unsigned int c = f[i].caps;

		printf("  %-6s %-8s data address %s, instruction address %s, loads %s, stores %s%s\n",
		       f[i].name, f[i].state & RCB_FEED_PRESENT ? "present" : "absent",
		       c & RCB_FEED_DATA_ADDR ? "yes" : "no",
		       c & RCB_FEED_INSTR_ADDR ? "yes" : "no",
		       c & RCB_FEED_LOADS ? "yes" : "no",
		       c & RCB_FEED_STORES ? "yes" : "no",
		       c & RCB_FEED_SESSION ? "" : " (no sessions)");
	}
}

/* The module's parameters and each feed's state and statistics. */
static void json_module(void)
{
	long long fault = param("fault_period"), pebs = param("pebs_period");
	const char *feeds[2] = { "fault", "pebs" };
	unsigned int i, k;

	printf("{\n  \"module\": {\"loaded\": true, \"parameters\": {");
	for (i = 0; i < NR_PARAMS; i++)
		printf("%s\"%s\": %lld", i ? ", " : "", params[i], param(params[i]));
	printf("}},\n  \"feeds\": {");
	for (i = 0; i < 2; i++) {
		long long period = i ? pebs : fault;

		printf("%s\"%s\": {\"period\": %lld, \"state\": \"%s\"", i ? ", " : "",
		       feeds[i], period, period > 0 ? "on" : "off");
		for (k = 0; k < 4; k++)
			printf(", \"%s\": %lld", feed_stats[k],
			       feed_stat(feeds[i], feed_stats[k]));
		for (k = 0; i && k < NR_PEBS_STATS; k++)
			printf(", \"%s\": %lld", pebs_stats[k],
			       feed_stat("pebs", pebs_stats[k]));
		printf("}");
	}
	printf(", \"hub\": {\"state\": \"%s\"", hub_on() ? "on" : "off");
	for (k = 0; k < NR_HUB_STATS; k++)
		printf(", \"%s\": %lld", hub_stats[k], feed_stat("hub", hub_stats[k]));
	printf("}");
	printf("},\n");
	json_filters();
	printf("  \"numa_balancing\": %lld,\n",
	       rt_read_ll("/proc/sys/kernel/numa_balancing", -1));
}

/* One node's object, without its closing brace when it has a device. */
static void json_node(const struct node *nd)
{
	char buf[1024];
	unsigned int i;
	int c;

	cpulist(nd->cpus, nd->nr_cpus, buf, sizeof(buf));
	printf("    {\"node\": %d, \"cnodeid\": %d, \"cpus\": [", nd->nid,
	       nd->cnodeid);
	for (c = 0; c < nd->nr_cpus; c++)
		printf("%s%d", c ? ", " : "", nd->cpus[c]);
	printf("], \"cpulist\": ");
	rt_json_str(stdout, nd->nr_cpus ? buf : "");
	printf(", \"mem_total\": %lld, \"mem_free\": %lld, \"device\": ",
	       nd->mem_total, nd->mem_free);
	if (!nd->has_dev) {
		printf("null}");
		return;
	}
	printf("\"" REFCNT_DEV_DIR "/node%d\",\n     \"rcb_info\": ", nd->nid);
	json_info(&nd->info);
	printf(",\n     \"slots\": [");
	for (c = 0; c < nd->nr_slots; c++)
		printf("%s{\"base\": %llu, \"size\": %llu}", c ? ", " : "",
		       (unsigned long long)nd->slots[c].base,
		       (unsigned long long)nd->slots[c].size);
	printf("],\n     \"table_bytes\": %lld, \"stats\": {",
	       nd->table_bytes);
	for (i = 0; i < NR_STATS; i++)
		printf("%s\"%s\": %lld", i ? ", " : "", stat_names[i],
		       nd->stats[i]);
	printf("}}");
}

static void show_json(struct node *nodes, int n, int all_nodes)
{
	long long total_table = 0;
	int j, c;

	json_module();
	printf("  \"nr_cnodes\": %d,\n  \"nodes\": [\n", refcnt_num_cnodes());
	for (j = 0; j < n; j++) {
		json_node(&nodes[j]);
		printf("%s\n", j + 1 < n ? "," : "");
		if (nodes[j].has_dev && nodes[j].table_bytes > 0)
			total_table += nodes[j].table_bytes;
	}
	printf("  ],\n  \"table_bytes\": %lld,\n  \"distances\": ", total_table);
	if (!all_nodes) {
		printf("null\n}\n");
		return;
	}
	printf("[");
	for (j = 0; j < n; j++) {
		printf("%s[", j ? ", " : "");
		for (c = 0; c < n; c++)
			printf("%s%d", c ? ", " : "",
			       rt_distance(nodes[j].nid, nodes[c].nid));
		printf("]");
	}
	printf("]\n}\n");
}

/* The first lines: nodes, counters, feeds. */
static void text_summary(const struct node *nodes, int n)
{
	long long fault = param("fault_period"), pebs = param("pebs_period");
	long long nb = rt_read_ll("/proc/sys/kernel/numa_balancing", -1);
	const struct rcb_info *any = NULL;
	int j;

	for (j = 0; j < n && !any; j++)
		if (nodes[j].has_dev)
			any = &nodes[j].info;
	printf("refcnt: %d online node%s (cnodeids 0-%d)", refcnt_num_cnodes(),
	       refcnt_num_cnodes() == 1 ? "" : "s", refcnt_num_cnodes() - 1);
	if (any)
		printf(", %u counter%s per set (%u node%s each), %u-bit hardware counters (max 0x%x), hardware page %u bytes",
		       any->rcb_sw_counters_per_set,
		       any->rcb_sw_counters_per_set == 1 ? "" : "s",
		       any->rcb_nodes_per_counter,
		       any->rcb_nodes_per_counter == 1 ? "" : "s",
		       any->rcb_hw_counter_bits, any->rcb_hw_counter_max,
		       any->rcb_granularity);
	printf("\nfeeds: page faults %s", fault > 0 ? "on" : "off");
	if (fault > 0)
		printf(" (every %lld%s fault; %lld samples, %lld delivered, %lld unresolved, %lld dropped)",
		       fault, fault == 1 ? "st" : "th",
		       feed_stat("fault", "samples"), feed_stat("fault", "delivered"),
		       feed_stat("fault", "unresolved"), feed_stat("fault", "dropped"));
	printf(", PEBS/IBS %s", pebs > 0 ? "on" : "off");
	if (pebs > 0)
		printf(" (period %lld, %s%s; %lld samples, %lld delivered, %lld in kernel mode, %lld without address, %lld cached, %lld without their instruction, %lld scaled at the cap, throttled %lld times, about %lld references lost to it)",
		       pebs, param("pebs_ldlat") > 0 ? "latency-filtered loads" :
		       "every load", param("pebs_memside") > 0 ? ", memory-side" : "",
		       feed_stat("pebs", "samples"), feed_stat("pebs", "delivered"),
		       feed_stat("pebs", "kernel"), feed_stat("pebs", "noaddr"),
		       feed_stat("pebs", "cached"), feed_stat("pebs", "inexact"),
		       feed_stat("pebs", "capped"), feed_stat("pebs", "throttled"),
		       feed_stat("pebs", "throttle_lost"));
	if (pebs > 0 && feed_stat("pebs", "running") >= 0)
		printf(" (its events ran %lld%% of the time they were enabled: perf multiplexes them with other users' events)",
		       feed_stat("pebs", "running"));
	if (pebs > 0 && max_rate() > 0)
		printf(" (perf throttles an event above %lld samples/s: kernel.perf_event_max_sample_rate)",
		       max_rate());
	printf(", hub %s", hub_on() ? "on" : "off");
	if (hub_on())
		printf(" (every %lld%s reference; %lld records, %lld references, %lld unresolved, %lld malformed, %lld overruns)",
		       feed_stat("hub", "period"),
		       feed_stat("hub", "period") == 1 ? "st" : "th",
		       feed_stat("hub", "samples"), feed_stat("hub", "references"),
		       feed_stat("hub", "unresolved"), feed_stat("hub", "malformed"),
		       feed_stat("hub", "overruns"));
	printf("; NUMA balancing %s\n",
	       nb < 0 ? "unknown" : nb == 0 ? "off (hinting faults off)" :
	       "on (hinting faults feed the fault feed)");
	text_filters();
}

/* A line per node: CPUs, memory, device, sets, slots, table size. */
static void text_table(const struct node *nodes, int n)
{
	char buf[1024], h1[16], h2[16];
	int j;

	printf("\n%-5s %-5s %-10s %8s %8s  %-18s %9s %5s %8s\n", "node", "cnode",
	       "cpus", "memory", "free", "device", "sets", "slots", "table");
	for (j = 0; j < n; j++) {
		const struct node *nd = &nodes[j];

		cpulist(nd->cpus, nd->nr_cpus, buf, sizeof(buf));
		printf("%-5d %-5d %-10s %8s %8s  ", nd->nid, nd->cnodeid, buf,
		       nd->mem_total >= 0 ? rt_human(nd->mem_total, h1, sizeof(h1)) : "?",
		       nd->mem_free >= 0 ? rt_human(nd->mem_free, h2, sizeof(h2)) : "?");
		if (!nd->has_dev) {
			printf("%-18s %9s %5s %8s\n", "- (no memory)", "-", "-", "-");
			continue;
		}
		snprintf(buf, sizeof(buf), REFCNT_DEV_DIR "/node%d", nd->nid);
		printf("%-18s %9llu %5u %8s\n", buf,
		       (unsigned long long)nd->info.rcb_sw_sets,
		       nd->info.rcb_num_slots,
		       nd->table_bytes >= 0 ?
		       rt_human(nd->table_bytes, h1, sizeof(h1)) : "?");
	}
}

/* A node's counters in detail: sets, pages, thresholds, slots, stats. */
static void text_node(const struct node *nd)
{
	const struct rcb_info *in = &nd->info;
	unsigned int i;
	char h1[16];
	int c;

	printf("\nnode %d (cnodeid %u)\n", nd->nid, in->rcb_cnodeid);
	printf("  sets %llu, one per %u-byte hardware page; %u counters x %u bytes per set; buffer %llu bytes (%s, mmap)\n",
	       (unsigned long long)in->rcb_sw_sets, in->rcb_granularity,
	       in->rcb_sw_counters_per_set, in->rcb_sw_counter_size,
	       (unsigned long long)in->rcb_len,
	       rt_human(in->rcb_len, h1, sizeof(h1)));
	printf("  base pages %llu of %u bytes from paddr 0x%llx\n",
	       (unsigned long long)in->rcb_base_pages,
	       in->rcb_base_page_size,
	       (unsigned long long)in->rcb_base_paddr);
	printf("  hardware counters %u bits (max 0x%x); absolute threshold %u; differential threshold %u%s\n",
	       in->rcb_hw_counter_bits, in->rcb_hw_counter_max,
	       in->rcb_abs_threshold, in->rcb_diff_threshold,
	       in->rcb_diff_threshold ? "" : " (off)");
	printf("  table memory in use %lld bytes\n", nd->table_bytes);
	for (c = 0; c < nd->nr_slots; c++)
		printf("  slot %d  0x%012llx-0x%012llx  %s\n", c,
		       (unsigned long long)nd->slots[c].base,
		       (unsigned long long)(nd->slots[c].base +
					    nd->slots[c].size),
		       rt_human(nd->slots[c].size, h1, sizeof(h1)));
	printf("  stats:");
	for (i = 0; i < NR_STATS; i++)
		printf(" %s %lld", stat_names[i], nd->stats[i]);
	printf("\n");
}

static void show_text(struct node *nodes, int n, int all_nodes)
{
	long long total_table = 0;
	char h1[16];
	int j, c;

	text_summary(nodes, n);
	text_table(nodes, n);
	for (j = 0; j < n; j++) {
		if (!nodes[j].has_dev)
			continue;
		if (nodes[j].table_bytes > 0)
			total_table += nodes[j].table_bytes;
		text_node(&nodes[j]);
	}
	printf("\ntable memory in use, all nodes: %lld bytes (%s)\n", total_table,
	       rt_human(total_table, h1, sizeof(h1)));
	if (!all_nodes || n < 2)
		return;
	printf("\nnode distances:\nnode ");
	for (c = 0; c < n; c++)
		printf(" %3d", nodes[c].nid);
	printf("\n");
	for (j = 0; j < n; j++) {
		printf("%4d:", nodes[j].nid);
		for (c = 0; c < n; c++)
			printf(" %3d", rt_distance(nodes[j].nid,
							   nodes[c].nid));
		printf("\n");
	}
}

/* The options: 0 to go on, -1 after --help, or an exit code. */
static int parse_options(int argc, char **argv, int *json, int *only)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "node", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "jn:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			*json = 1;
			break;
		case 'n':
			if (rt_parse_node(optarg, only))
				return RT_EXIT_USAGE;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			usage(stderr);
			return RT_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return rt_exit_code(rt_unexpected_arg(argv[optind], usage));
	return 0;
}

/*
 * The online nodes (only node `only` if >= 0) into *nodes: how many, or
 * a negative errno (-EINVAL: no such node), the cause printed.
 */
static int load_nodes(int only, struct node **nodes)
{
	int *dev_nids, nr_dev, nr, j, k = 0, rc;

	nr_dev = rt_node_ids(&dev_nids);
	if (nr_dev < 0)
		return nr_dev;
	nr = refcnt_num_cnodes();
	if (nr <= 0) {
		rt_err("cannot read the online nodes (/sys/devices/system/node/online)");
		return -EIO;
	}
	*nodes = calloc(nr, sizeof(**nodes));
	if (!*nodes) {
		rt_err("out of memory");
		return -ENOMEM;
	}
	for (j = 0; j < nr; j++) {
		int nid = refcnt_cnode_to_nid(j);

		if (nid < 0 || (only >= 0 && nid != only))
			continue;
		(*nodes)[k].nid = nid;
		(*nodes)[k].cnodeid = j;
		rc = node_load(&(*nodes)[k], dev_nids, nr_dev);
		if (rc)
			return rc;
		k++;
	}
	if (!k) {
		rt_err("--node %d: no such online node", only);
		return -EINVAL;
	}
	return k;
}

int main(int argc, char **argv)
{
	int json = 0, only = -1, n, rc;
	struct node *nodes;

	rt_prog = "refcnt-info";
	rc = parse_options(argc, argv, &json, &only);
	if (rc)
		return rc < 0 ? RT_EXIT_OK : rc;
	n = load_nodes(only, &nodes);
	if (n < 0)
		return rt_exit_code(n);
	if (json)
		show_json(nodes, n, only < 0);
	else
		show_text(nodes, n, only < 0);
	return fflush(stdout) ? RT_EXIT_FAIL : RT_EXIT_OK;
}
