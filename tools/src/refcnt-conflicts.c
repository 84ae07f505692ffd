// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-conflicts: cache set conflicts per set and per variable from a
 * trace, after MACPO's set cache conflict analysis (PerfExpert): every
 * access of the trace goes through a set-associative LRU cache of the
 * given geometry (one per thread, per node or one for all) and is a hit,
 * a cold, capacity or conflict miss (tools/src/trace/cachesim.h); per set
 * its reuse distances, per variable (a region file or nm -S) its misses.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachesim.h"
#include "regions.h"
#include "rtools.h"
#include "trace-read.h"
#include "trace-tool.h"

/* Reuse distance buckets: 0, 1, 2-3, 4-7, ... 128-255, beyond, cold. */
#define NB_LOG		9
#define B_BEYOND	NB_LOG
#define B_COLD		(NB_LOG + 1)
#define NB		(NB_LOG + 2)

enum share { BY_THREAD, BY_NODE, BY_ALL };

static struct {
	const char *cache, *regions, *map;
	int share, share_set, json, top, physical, progress;
	unsigned int depth;
} opt = { .cache = "l1", .top = 10, .physical = -1, .progress = 1 };

struct stats {
	uint64_t acc, cls[CS_NR_CLASSES];
	uint64_t rd[NB];
};

static struct cs_geometry geo;
static struct stats total, *sets, *vars, other_var, *inst;
static struct cs_cache *caches;
static int nr_caches;
static struct regions rs;
static struct u64map set_var;	/* (set << 24 | var + 1) -> conflicts */
static int thread_node[TR_MAX_THREADS];

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: refcnt-conflicts [OPTIONS] TRACE...\n"
		"\n"
		"Cache set conflicts after MACPO: every access of the traces goes\n"
		"through a set-associative LRU cache and is a hit, a cold, capacity\n"
		"or conflict miss; per set the reuse distances and misses, per\n"
		"variable (--regions) the misses and the sets they conflict in.\n"
		"TRACE: refcnt trace files or PREFIX (refcnt-vm --trace), or valgrind\n"
		"lackey output (--tool=lackey --trace-mem=yes).\n"
		"\n"
		"  -c, --cache GEOM       SIZE:LINE:WAYS (32K:64:8), or a preset: l1\n"
		"                         (32K:64:8, MACPO's 512-line L1; the default)\n"
		"                         or llc (4M:64:16, the truth plugin's LLC model\n"
		"                         as the rig runs it)\n"
		"  -s, --shared-by WHO    thread, node or all: one cache per thread\n"
		"                         (default for l1), per node (default for llc;\n"
		"                         the nodes of the traces or --map) or one\n"
		"  -m, --map T=N,...      the node of threads (default: each trace's)\n"
		"  -r, --regions FILE     name the variables: lines NAME START END,\n"
		"                         NAME START+LEN, or nm -S output\n"
		"  -p, --physical         index the cache by physical address (the\n"
		"                         default for llc when the traces have them)\n"
		"  -v, --virtual          by virtual address (the default for l1)\n"
		"  -d, --depth N          reuse distances told apart up to N lines of\n"
		"                         a set (default 4 x ways, at most 256)\n"
		"  -t, --top N            sets and variables listed (default 10)\n"
		"  -j, --json             JSON instead of text\n"
		"  -P, --progress         a progress line on standard error, also when\n"
		"                         it is not a terminal\n"
		"  -h, --help             this text\n"
		"\n"
		"Exit status: 0 ok, 1 a trace is malformed or unreadable, 2 usage.\n");
}

static int bucket(int dist)
{
	int b = 0;

	if (dist < 0)
		return B_BEYOND;
	while (dist) {
		b++;
		dist >>= 1;
	}
	return b < NB_LOG ? b : NB_LOG - 1;
}

static const char *bucket_name(int b)
{
	static const char *const n[NB] = { "0", "1", "2-3", "4-7", "8-15",
		"16-31", "32-63", "64-127", "128-255", "beyond", "cold" };

	return n[b];
}

static int cache_of(const struct tr_event *e, const struct tr_set *s)
{
	int node;

	if (opt.share == BY_ALL)
		return 0;
	if (opt.share == BY_THREAD)
		return e->thread;
	node = thread_node[e->thread];
	(void)s;
	return node < 0 ? 0 : node + 1;
}

static void count(struct stats *st, enum cs_class c, int b)
{
	st->acc++;
	st->cls[c]++;
	st->rd[b]++;
}

static int setup(struct tr_set *s)
{
	int t, max_node = 0;

	for (t = 0; t < tr_set_threads(s); t++) {
		if (thread_node[t] == -2)
			thread_node[t] = tr_set_header(s, t)->node;
		if (thread_node[t] > max_node)
			max_node = thread_node[t];
	}
	/* By node: cache k is node k - 1's (0: threads of no known node). */
	nr_caches = opt.share == BY_ALL ? 1 :
		    opt.share == BY_THREAD ? tr_set_threads(s) : max_node + 2;
	if (opt.physical && !tr_set_has(s, TR_HAS_PHYS)) {
		rt_err("--physical: the traces have no physical addresses");
		return -1;
	}
	caches = calloc(nr_caches, sizeof(*caches));
	inst = calloc(nr_caches, sizeof(*inst));
	sets = calloc(geo.sets, sizeof(*sets));
	vars = calloc(rs.n + 1, sizeof(*vars));
	if (!caches || !inst || !sets || !vars || u64map_init(&set_var, 1024)) {
		rt_err("out of memory");
		return -1;
	}
	return 0;
}

static int simulate(struct tr_set *s)
{
	struct tr_event e;
	int r;

	while ((r = tr_set_next(s, &e)) > 0) {
		struct cs_cache *c;
		uint64_t addr = opt.physical ? e.paddr : e.vaddr;
		unsigned int set;
		enum cs_class cl;
		int ci, dist, v, b;

		if (e.kind != TR_EV_MEM || addr == TR_NO_PADDR)
			continue;
		ci = cache_of(&e, s);
		c = &caches[ci];
		if (!c->stack && cs_init(c, &geo, opt.depth, 1)) {
			rt_err("out of memory for cache %d", ci);
			return -1;
		}
		cl = cs_access(c, addr, &set, &dist);
		b = cl == CS_COLD ? B_COLD : bucket(dist);
		v = rs.n ? regions_find(&rs, e.vaddr) : -1;
		count(&total, cl, b);
		count(&sets[set], cl, b);
		count(&inst[ci], cl, b);
		count(v >= 0 ? &vars[v] : &other_var, cl, b);
		if (cl == CS_CONFLICT) {
			uint64_t *n = u64map_put(&set_var, (uint64_t)set << 24 | (v + 1), NULL);

			if (!n) {
				rt_err("out of memory");
				return -1;
			}
			(*n)++;
		}
	}
	return r;
}

/* ------------------------------------------------------------ output */

static int cmp_conflicts_set(const void *a, const void *b)
{
	const struct stats *x = &sets[*(const unsigned int *)a];
	const struct stats *y = &sets[*(const unsigned int *)b];

	if (x->cls[CS_CONFLICT] != y->cls[CS_CONFLICT])
		return x->cls[CS_CONFLICT] < y->cls[CS_CONFLICT] ? 1 : -1;
	return *(const unsigned int *)a < *(const unsigned int *)b ? -1 : 1;
}

static int cmp_conflicts_var(const void *a, const void *b)
{
	const struct stats *x = &vars[*(const int *)a], *y = &vars[*(const int *)b];

	if (x->cls[CS_CONFLICT] != y->cls[CS_CONFLICT])
		return x->cls[CS_CONFLICT] < y->cls[CS_CONFLICT] ? 1 : -1;
	if (x->acc != y->acc)
		return x->acc < y->acc ? 1 : -1;
	return *(const int *)a - *(const int *)b;
}

static const char *var_name(int v)
{
	return v < 0 ? "(other)" : rs.r[v].name;
}

/* The variables with conflicts in set, most first, into buf. */
static int set_vars(unsigned int set, int *vv, uint64_t *nn, int max)
{
	int n = 0, v, i, j;

	for (v = -1; v < rs.n; v++) {
		uint64_t *c = u64map_get(&set_var, (uint64_t)set << 24 | (v + 1));

		if (!c || !*c)
			continue;
		for (i = 0; i < n && nn[i] >= *c; i++)
			;
		if (i >= max)
			continue;
		for (j = (n < max ? n : max - 1); j > i; j--) {
			vv[j] = vv[j - 1];
			nn[j] = nn[j - 1];
		}
		vv[i] = v;
		nn[i] = *c;
		if (n < max)
			n++;
	}
	return n;
}

static void text_stats(const char *name, const struct stats *st)
{
	printf("  %-20s %10" PRIu64 " %10" PRIu64 " %8" PRIu64 " %9" PRIu64 " %9" PRIu64 "\n",
	       name, st->acc, st->cls[CS_HIT], st->cls[CS_COLD],
	       st->cls[CS_CAPACITY], st->cls[CS_CONFLICT]);
}

static const char *share_name(void)
{
	return opt.share == BY_ALL ? "all" : opt.share == BY_THREAD ? "thread" : "node";
}

static void report_text(unsigned int *order, int *vorder)
{
	unsigned int i;
	int k, b, v;

	printf("cache %" PRIu64 " bytes, %u-byte lines, %u ways, %u sets (%u lines); one per %s (%d), %s addresses\n",
	       geo.size, geo.line, geo.ways, geo.sets, geo.sets * geo.ways,
	       share_name(), nr_caches, opt.physical ? "physical" : "virtual");
	printf("accesses %" PRIu64 ": hits %" PRIu64 " (%.1f%%), cold %" PRIu64
	       ", capacity %" PRIu64 ", conflict %" PRIu64 " misses\n",
	       total.acc, total.cls[CS_HIT], tt_pct(total.cls[CS_HIT], total.acc),
	       total.cls[CS_COLD], total.cls[CS_CAPACITY], total.cls[CS_CONFLICT]);
	printf("reuse distance in the set:");
	for (b = 0; b < NB; b++)
		printf(" %s:%" PRIu64, bucket_name(b), total.rd[b]);
	printf("\n\n  %-20s %10s %10s %8s %9s %9s\n", "per " , "accesses", "hits",
	       "cold", "capacity", "conflict");
	for (k = 0; k < nr_caches; k++) {
		char name[32];

		if (!inst[k].acc)
			continue;
		snprintf(name, sizeof(name), "%s %d", share_name(),
			 opt.share == BY_NODE ? k - 1 : k);
		text_stats(name, &inst[k]);
	}
	printf("\ntop sets by conflict misses (set_num num_conflicts [variables]):\n");
	for (i = 0; i < geo.sets && (int)i < opt.top; i++) {
		const struct stats *st = &sets[order[i]];
		int vv[4], n;
		uint64_t nn[4];

		if (!st->cls[CS_CONFLICT])
			break;
		printf("  set %u: %" PRIu64 " conflicts of %" PRIu64 " accesses (hits %" PRIu64
		       ", cold %" PRIu64 ", capacity %" PRIu64 "); reuse",
		       order[i], st->cls[CS_CONFLICT], st->acc, st->cls[CS_HIT],
		       st->cls[CS_COLD], st->cls[CS_CAPACITY]);
		for (b = 0; b < NB; b++)
			if (st->rd[b])
				printf(" %s:%" PRIu64, bucket_name(b), st->rd[b]);
		n = set_vars(order[i], vv, nn, 4);
		printf("; [");
		for (k = 0; k < n; k++)
			printf("%s%s %" PRIu64, k ? ", " : "", var_name(vv[k]), nn[k]);
		printf("]\n");
	}
	if (i == 0)
		printf("  none\n");
	if (!rs.n)
		return;
	printf("\nvariables by conflict misses:\n  %-20s %10s %10s %8s %9s %9s\n",
	       "variable", "accesses", "hits", "cold", "capacity", "conflict");
	for (v = 0; v < rs.n && v < opt.top; v++)
		if (vars[vorder[v]].acc)
			text_stats(var_name(vorder[v]), &vars[vorder[v]]);
	if (other_var.acc)
		text_stats("(other)", &other_var);
}

static void json_stats(const struct stats *st)
{
	int b;

	printf("\"accesses\": %" PRIu64 ", \"hits\": %" PRIu64 ", \"cold\": %" PRIu64
	       ", \"capacity\": %" PRIu64 ", \"conflict\": %" PRIu64 ", \"reuse\": {",
	       st->acc, st->cls[CS_HIT], st->cls[CS_COLD], st->cls[CS_CAPACITY],
	       st->cls[CS_CONFLICT]);
	for (b = 0; b < NB; b++)
		printf("%s\"%s\": %" PRIu64, b ? ", " : "", bucket_name(b), st->rd[b]);
	printf("}");
}

static void report_json(int *vorder)
{
	unsigned int i;
	int k, v, first = 1;

	printf("{\"cache\": {\"size\": %" PRIu64 ", \"line\": %u, \"ways\": %u, \"sets\": %u, "
	       "\"shared_by\": \"%s\", \"caches\": %d, \"addresses\": \"%s\"},\n \"total\": {",
	       geo.size, geo.line, geo.ways, geo.sets, share_name(), nr_caches,
	       opt.physical ? "physical" : "virtual");
	json_stats(&total);
	printf("},\n \"caches\": [");
	for (k = 0; k < nr_caches; k++) {
		printf("%s\n  {\"%s\": %d, ", k ? "," : "", share_name(),
		       opt.share == BY_NODE ? k - 1 : k);
		json_stats(&inst[k]);
		printf("}");
	}
	printf("\n ],\n \"sets\": [");
	for (i = 0; i < geo.sets; i++) {
		int vv[8], n;
		uint64_t nn[8];

		if (!sets[i].acc)
			continue;
		printf("%s\n  {\"set\": %u, ", first ? "" : ",", i);
		json_stats(&sets[i]);
		n = set_vars(i, vv, nn, 8);
		printf(", \"conflicts_by_variable\": {");
		for (k = 0; k < n; k++) {
			printf("%s", k ? ", " : "");
			rt_json_str(stdout, var_name(vv[k]));
			printf(": %" PRIu64, nn[k]);
		}
		printf("}}");
		first = 0;
	}
	printf("\n ],\n \"variables\": [");
	for (v = 0; v < rs.n; v++) {
		printf("%s\n  {\"name\": ", v ? "," : "");
		rt_json_str(stdout, var_name(vorder[v]));
		printf(", \"start\": %" PRIu64 ", \"end\": %" PRIu64 ", ",
		       rs.r[vorder[v]].start, rs.r[vorder[v]].end);
		json_stats(&vars[vorder[v]]);
		printf("}");
	}
	printf("%s\n  {\"name\": \"(other)\", ", rs.n ? "," : "");
	json_stats(&other_var);
	printf("}\n ]}\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "cache", required_argument, NULL, 'c' },
		{ "shared-by", required_argument, NULL, 's' },
		{ "map", required_argument, NULL, 'm' },
		{ "regions", required_argument, NULL, 'r' },
		{ "physical", no_argument, NULL, 'p' },
		{ "virtual", no_argument, NULL, 'v' },
		{ "depth", required_argument, NULL, 'd' },
		{ "top", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "progress", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	unsigned int *order;
	struct tr_set *s;
	int o, r, i, *vorder;
	uint64_t v;

	rt_prog = "refcnt-conflicts";
	while ((o = getopt_long(argc, argv, "c:s:m:r:pvd:t:jPh", lo, NULL)) != -1) {
		switch (o) {
		case 'c': opt.cache = optarg; break;
		case 's':
			opt.share_set = 1;
			if (!strcmp(optarg, "thread"))
				opt.share = BY_THREAD;
			else if (!strcmp(optarg, "node"))
				opt.share = BY_NODE;
			else if (!strcmp(optarg, "all"))
				opt.share = BY_ALL;
			else {
				rt_err("--shared-by %s: want thread, node or all", optarg);
				return RT_EXIT_USAGE;
			}
			break;
		case 'm': opt.map = optarg; break;
		case 'r': opt.regions = optarg; break;
		case 'p': opt.physical = 1; break;
		case 'v': opt.physical = 0; break;
		case 'd': case 't':
			if (rt_parse_u64(optarg, &v) || !v || v > 1u << 20) {
				rt_err("-%c %s: want a positive number", o, optarg);
				return RT_EXIT_USAGE;
			}
			if (o == 'd')
				opt.depth = (unsigned int)v;
			else
				opt.top = (int)v;
			break;
		case 'j': opt.json = 1; break;
		case 'P': opt.progress = 2; break;
		case 'h': usage(stdout); return RT_EXIT_OK;
		default: usage(stderr); return RT_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		rt_err("no TRACE given");
		usage(stderr);
		return RT_EXIT_USAGE;
	}
	if (cs_parse(opt.cache, &geo)) {
		rt_err("--cache %s: want SIZE:LINE:WAYS (a power-of-two number of sets), l1 or llc",
		       opt.cache);
		return RT_EXIT_USAGE;
	}
	if (!opt.share_set)
		opt.share = strcmp(opt.cache, "llc") ? BY_THREAD : BY_NODE;
	if (!opt.depth)
		opt.depth = geo.ways * 4 > 256 ? (geo.ways > 256 ? geo.ways : 256) : geo.ways * 4;
	if (opt.regions && regions_read(&rs, opt.regions))
		return RT_EXIT_FAIL;
	s = tr_set_open(rt_prog, argv + optind, argc - optind);
	if (!s)
		return RT_EXIT_FAIL;
	tr_set_progress(s, opt.progress);
	for (i = 0; i < TR_MAX_THREADS; i++)
		thread_node[i] = -2;
	if (opt.map && tt_parse_map(opt.map, thread_node, tr_set_threads(s)))
		return RT_EXIT_USAGE;
	if (opt.physical < 0)
		opt.physical = !strcmp(opt.cache, "llc") && tr_set_has(s, TR_HAS_PHYS);
	if (setup(s))
		return RT_EXIT_FAIL;
	r = simulate(s);
	tr_set_close(s);
	if (r)
		return RT_EXIT_FAIL;
	order = calloc(geo.sets, sizeof(*order));
	vorder = calloc(rs.n + 1, sizeof(*vorder));
	if (!order || !vorder)
		return RT_EXIT_FAIL;
	for (i = 0; i < (int)geo.sets; i++)
		order[i] = i;
	for (i = 0; i < rs.n; i++)
		vorder[i] = i;
	qsort(order, geo.sets, sizeof(*order), cmp_conflicts_set);
	qsort(vorder, rs.n, sizeof(*vorder), cmp_conflicts_var);
	if (opt.json)
		report_json(vorder);
	else
		report_text(order, vorder);
	if (fflush(stdout)) {
		rt_err("cannot write the standard output: %s", strerror(errno));
		return RT_EXIT_FAIL;
	}
	return RT_EXIT_OK;
}
