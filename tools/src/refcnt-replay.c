// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-replay: deliver a trace's references into the counters through
 * RCB_INJECT, the replay interface of refcnt(5)'s emulation, honouring
 * its rules: references go in trace order, from the node of the thread
 * that made them, to the page a placement policy gives (as traced, first
 * touch, round robin, Oracle...), and no call gives a counter more than
 * its hardware counter can take before the threshold interrupt folds it
 * (rcb_hw_counter_max - rcb_abs_threshold + 1), so nothing pegs and the
 * counters afterwards are exactly what the trace implies: --csv writes
 * that table, in refcnt-dump --csv's layout, which a dump after the
 * replay must equal.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "policy-trace.h"
#include "rtools.h"
#include "trace-read.h"
#include "trace-tool.h"
#include "u64map.h"

#define MAX_NODES	64

static struct {
	const char *map, *mem, *csv, *ram, *online;
	enum pl_policy place;
	int place_set, dry_run, reset, json, progress;
	uint64_t granularity;
} opt = { .progress = 1 };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: refcnt-replay [OPTIONS] TRACE...\n"
		"\n"
		"Deliver the references of traces (refcnt-vm --trace, lackey) into the\n"
		"counters with RCB_INJECT, in trace order, from the node of each\n"
		"thread, to the pages a placement policy gives, never more per call\n"
		"than a hardware counter takes before its fold: the counters then hold\n"
		"exactly what the trace implies (--csv writes it).\n"
		"\n"
		"  -p, --place POLICY     as-traced (the traces' physical pages; the\n"
		"                         default when they have them), first-touch,\n"
		"                         rr1, rr2, oracle or majority (see\n"
		"                         refcnt-policy(1)): pages go to frames of the\n"
		"                         nodes' slots, in order of first reference\n"
		"  -m, --map T=N,...      the node of threads (default: each trace's)\n"
		"  -M, --mem-nodes LIST   nodes pages may be placed on (default: every\n"
		"                         node with memory)\n"
		"  -r, --reset            RCB_RESET every node first\n"
		"  -o, --csv FILE         write the table the counters hold afterwards\n"
		"                         (refcnt-dump --csv's layout; - for stdout)\n"
		"  -n, --dry-run          inject nothing; with --csv, the table alone\n"
		"      --ram NID:MiB,...  for a dry run without the module: the nodes'\n"
		"                         memory from address 0 in this order (as\n"
		"                         refcnt-vm lays it out)\n"
		"      --online LIST      for a dry run without the module: the node ids\n"
		"                         online, the counters' order (default: those\n"
		"                         of --ram and the threads)\n"
		"  -g, --granularity B    for a dry run without the module (default 4096)\n"
		"  -j, --json             the summary as JSON\n"
		"  -P, --progress         a progress line on standard error, also when\n"
		"                         it is not a terminal\n"
		"  -h, --help             this text\n"
		"\n"
		"Exit status: 0 ok, 1 malformed trace or failure, 2 usage, 3 module not\n"
		"loaded, 4 permission denied (RCB_INJECT needs CAP_SYS_ADMIN).\n");
}

/* ------------------------------------------------------------ layout */

struct lnode {
	int nid, cnode;
	struct rcb_slot *slots;
	int nr_slots;
	uint64_t sets, budget;	/* sets; references a counter takes per call */
	uint64_t next_frame;	/* frames handed out by the policies */
	struct refcnt_node *h;
};

static struct lnode nodes[MAX_NODES];
static int nr_nodes;			/* nodes with memory */
static int online[MAX_NODES], nr_online;	/* node id of each cnodeid */
static int nodes_per_counter = 1, nr_counters;
static uint64_t gran = 4096;
static int inject_fd = -1;

static int cnode_of(int nid)
{
	int c;

	for (c = 0; c < nr_online; c++)
		if (online[c] == nid)
			return c;
	return -1;
}

static struct lnode *lnode_of(int nid)
{
	int i;

	for (i = 0; i < nr_nodes; i++)
		if (nodes[i].nid == nid)
			return &nodes[i];
	return NULL;
}

static int layout_live(void)
{
	int *nids, n, i, err;

	n = rt_node_ids(&nids);
	if (n < 0)
		return n;
	if (n > MAX_NODES) {
		rt_err("%d nodes: at most %d", n, MAX_NODES);
		return -EINVAL;
	}
	nr_online = refcnt_num_cnodes();
	if (nr_online <= 0 || nr_online > MAX_NODES) {
		rt_err("cannot read the online nodes: %s", strerror(errno));
		return -EIO;
	}
	for (i = 0; i < nr_online; i++)
		online[i] = refcnt_cnode_to_nid(i);
	for (i = 0; i < n; i++) {
		struct lnode *l = &nodes[nr_nodes++];
		struct rcb_info info;

		err = rt_node_open(nids[i], &l->h, &info);
		if (err)
			return err;
		l->nid = nids[i];
		l->cnode = info.rcb_cnodeid == RCB_NO_CNODE ? -1 : (int)info.rcb_cnodeid;
		l->nr_slots = refcnt_node_slots(l->h, NULL, 0);
		l->slots = calloc(l->nr_slots + 1, sizeof(*l->slots));
		if (!l->slots)
			return -ENOMEM;
		refcnt_node_slots(l->h, l->slots, l->nr_slots);
		l->sets = info.rcb_sw_sets;
		l->budget = info.rcb_hw_counter_max - info.rcb_abs_threshold + 1;
		gran = info.rcb_granularity;
		nodes_per_counter = info.rcb_nodes_per_counter;
		nr_counters = info.rcb_sw_counters_per_set;
	}
	free(nids);
	if (!opt.dry_run) {
		inject_fd = refcnt_node_fd(nodes[0].h);
		if (opt.reset)
			for (i = 0; i < nr_nodes; i++)
				if (ioctl(refcnt_node_fd(nodes[i].h), RCB_RESET))
					return rt_node_error(errno, "RCB_RESET on ", nodes[i].nid);
	}
	return 0;
}

/* --ram NID:MiB,... and --online: the layout refcnt-vm gives a guest. */
static int layout_offline(struct pt_build *b, int threads)
{
	char buf[1024], *save, *tok;
	uint64_t base = 0;
	int i, t, *v, n;

	if (!opt.ram) {
		rt_err("no /dev/refcnt devices: a dry run without the module needs --ram");
		return -ENODEV;
	}
	snprintf(buf, sizeof(buf), "%s", opt.ram);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct lnode *l;
		uint64_t mb;
		char *c = strchr(tok, ':');

		if (!c || nr_nodes == MAX_NODES || rt_parse_u64(c + 1, &mb) || !mb) {
			rt_err("--ram %s: want NID:MiB,...", opt.ram);
			return -EINVAL;
		}
		*c = 0;
		l = &nodes[nr_nodes++];
		l->nid = atoi(tok);
		l->slots = calloc(1, sizeof(*l->slots));
		if (!l->slots)
			return -ENOMEM;
		l->nr_slots = 1;
		l->slots[0].base = base;
		l->slots[0].size = mb << 20;
		base += mb << 20;
		l->sets = (mb << 20) / gran;
		l->budget = 256;	/* 11-bit counters, threshold 1792 */
	}
	if (opt.online) {
		n = tt_parse_nodes("--online", opt.online, &v);
		if (n < 0 || n > MAX_NODES)
			return -EINVAL;
		memcpy(online, v, n * sizeof(int));
		nr_online = n;
		free(v);
	} else {
		int seen[4096] = { 0 };

		for (i = 0; i < nr_nodes; i++)
			seen[nodes[i].nid] = 1;
		for (t = 0; t < threads; t++)
			if (b->thread_node[t] >= 0 && b->thread_node[t] < 4096)
				seen[b->thread_node[t]] = 1;
		for (i = 0; i < 4096 && nr_online < MAX_NODES; i++)
			if (seen[i])
				online[nr_online++] = i;
	}
	for (i = 0; i < nr_nodes; i++)
		nodes[i].cnode = cnode_of(nodes[i].nid);
	nr_counters = nr_online;
	return 0;
}

/* The node and set of paddr: 0, or -1 when no slot holds it. */
static int locate(uint64_t paddr, struct lnode **ln, uint64_t *set)
{
	int i, k;

	for (i = 0; i < nr_nodes; i++) {
		uint64_t before = 0;

		for (k = 0; k < nodes[i].nr_slots; k++) {
			const struct rcb_slot *s = &nodes[i].slots[k];

			if (paddr >= s->base && paddr < s->base + s->size) {
				*ln = &nodes[i];
				*set = (before + paddr - s->base) / gran;
				return 0;
			}
			before += s->size;
		}
	}
	return -1;
}

/* The next free 4 KiB frame of node l, for a placed page. */
static int frame_on(struct lnode *l, uint64_t *paddr)
{
	uint64_t off = l->next_frame++ << TR_PAGE_SHIFT;
	int k;

	for (k = 0; k < l->nr_slots; k++) {
		if (off < l->slots[k].size) {
			*paddr = l->slots[k].base + off;
			return 0;
		}
		off -= l->slots[k].size;
	}
	rt_err("node %d has no frame left for the placed pages", l->nid);
	return -1;
}

/* ------------------------------------------------------------ delivery */

static struct rcb_ref batch[RCB_INJECT_MAX];
static unsigned int nr_batch;
static struct u64map used;		/* (set paddr | counter) -> this call's refs */
static struct u64map table;		/* set paddr -> row of expected */
static uint64_t *expected;		/* rows x nr_counters */
static struct {
	uint64_t paddr;
	int nid;
} *rows;
static size_t nr_rows, cap_rows;
static struct u64map placed;		/* page key -> paddr of the frame */
static struct {
	uint64_t refs, calls, entries, skipped_io, outside, no_cnode, pages;
} st;

static int flush(void)
{
	struct rcb_inject in = {
		.refs = (uintptr_t)batch, .nr_refs = nr_batch, .flags = RCB_INJECT_SYNC,
	};

	if (!nr_batch)
		return 0;
	if (!opt.dry_run && ioctl(inject_fd, RCB_INJECT, &in)) {
		int e = errno;

		rt_err("RCB_INJECT of %u entries (the first: 0x%llx from cnodeid %u): %s",
		       nr_batch, (unsigned long long)batch[0].paddr,
		       batch[0].src_cnodeid, strerror(e));
		return e == EPERM || e == EACCES ? -EACCES : -EIO;
	}
	st.calls++;
	st.entries += nr_batch;
	nr_batch = 0;
	used.n = 0;
	memset(used.keys, 0, used.cap * sizeof(*used.keys));
	return 0;
}

static long row_of(uint64_t set_paddr, int nid)
{
	int added;
	uint64_t *v = u64map_put(&table, set_paddr, &added);

	if (!v)
		return -1;
	if (!added)
		return (long)*v;
	if (nr_rows == cap_rows) {
		size_t cap = cap_rows ? 2 * cap_rows : 4096;
		void *r = realloc(rows, cap * sizeof(*rows));
		uint64_t *e = realloc(expected, cap * nr_counters * sizeof(*e));

		if (!r || !e)
			return -1;
		rows = r;
		expected = e;
		cap_rows = cap;
	}
	rows[nr_rows].paddr = set_paddr;
	rows[nr_rows].nid = nid;
	memset(expected + nr_rows * nr_counters, 0, nr_counters * sizeof(*expected));
	*v = nr_rows;
	return (long)nr_rows++;
}

/* One reference to paddr from node nid. */
static int deliver(uint64_t paddr, int nid)
{
	struct lnode *l;
	uint64_t set, set_paddr, *u;
	int cnode = cnode_of(nid), ctr, rc;
	long row;

	if (cnode < 0) {
		st.no_cnode++;
		return 0;
	}
	if (locate(paddr, &l, &set)) {
		st.outside++;
		return 0;
	}
	ctr = cnode / nodes_per_counter;
	set_paddr = paddr / gran * gran;
	u = u64map_put(&used, set_paddr | ctr, NULL);
	if (!u)
		return -ENOMEM;
	if (*u >= l->budget || nr_batch == RCB_INJECT_MAX) {
		rc = flush();
		if (rc)
			return rc;
		u = u64map_put(&used, set_paddr | ctr, NULL);
	}
	(*u)++;
	if (nr_batch && batch[nr_batch - 1].paddr == set_paddr &&
	    batch[nr_batch - 1].src_cnodeid == (uint32_t)cnode) {
		batch[nr_batch - 1].count++;
	} else {
		batch[nr_batch].paddr = set_paddr;
		batch[nr_batch].src_cnodeid = cnode;
		batch[nr_batch].count = 1;
		nr_batch++;
	}
	row = row_of(set_paddr, l->nid);
	if (row < 0)
		return -ENOMEM;
	expected[row * nr_counters + ctr]++;
	st.refs++;
	return 0;
}

/* The physical address a reference goes to under the policy, or 0 (skip). */
static int where(struct pt_build *b, const struct tr_event *e, int node,
		 const int *mem, int nr_mem, uint64_t *paddr)
{
	uint64_t key = pt_key(b, e), *v;
	int added, col;
	long i;

	if (opt.place == PL_NOW) {
		*paddr = e->paddr;
		return 0;
	}
	v = u64map_put(&placed, key, &added);
	if (!v)
		return -ENOMEM;
	if (added) {
		if (opt.place == PL_FIRST_TOUCH) {
			int k, ok = 0;

			/* A node without memory: the first memory node. */
			for (k = 0; k < nr_mem; k++)
				ok |= mem[k] == node;
			col = ok ? node : mem[0];
		} else {
			i = pt_find(b, key);
			col = i < 0 ? mem[0] : pl_place(&b->t, i, opt.place, mem, nr_mem, NULL);
			if (col < 0)	/* replicated code: data pages never are */
				col = mem[0];
		}
		if (frame_on(lnode_of(col), v))
			return -ENOSPC;
		st.pages++;
	}
	*paddr = *v | (e->vaddr & ((1u << TR_PAGE_SHIFT) - 1));
	return 0;
}

static int replay(struct pt_build *b, char **names, int n, const int *mem,
		  int nr_mem)
{
	struct tr_event e;
	struct tr_set *s;
	int r, rc = 0;

	s = tr_set_open(rt_prog, names, n);
	if (!s)
		return -1;
	tr_set_progress(s, opt.progress);
	if (pt_threads(b, s, opt.map))
		return -EINVAL;
	while (!rc && (r = tr_set_next(s, &e)) > 0) {
		uint64_t paddr;
		int node;

		if (e.kind != TR_EV_MEM)
			continue;
		if (b->phys && e.page_kind != TR_PAGE_RAM) {
			st.skipped_io++;
			continue;
		}
		node = pt_node(b, s, e.thread);
		if (node < 0) {
			rc = -EINVAL;
			break;
		}
		rc = where(b, &e, node, mem, nr_mem, &paddr);
		if (!rc)
			rc = deliver(paddr, node);
	}
	tr_set_close(s);
	if (rc)
		return rc;
	if (r)
		return -1;
	return flush();
}

/* ------------------------------------------------------------ output */

static int cmp_row(const void *a, const void *b)
{
	const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	if (rows[x].nid != rows[y].nid)
		return rows[x].nid < rows[y].nid ? -1 : 1;
	return rows[x].paddr < rows[y].paddr ? -1 : rows[x].paddr > rows[y].paddr;
}

static int write_csv(void)
{
	struct tt_out o;
	uint64_t *order, i;
	int c;

	if (tt_open(&o, opt.csv))
		return -1;
	order = calloc(nr_rows + 1, sizeof(*order));
	if (!order) {
		tt_discard(&o);
		return -1;
	}
	for (i = 0; i < nr_rows; i++)
		order[i] = i;
	qsort(order, nr_rows, sizeof(*order), cmp_row);
	fprintf(o.f, "set,paddr,node,cnodeid,refs");
	for (c = 0; c < nr_counters; c++) {
		if (nodes_per_counter == 1)
			fprintf(o.f, ",n%d", online[c]);
		else
			fprintf(o.f, ",n%d-%d", online[c * nodes_per_counter],
				online[(c + 1) * nodes_per_counter - 1 < nr_online ?
				       (c + 1) * nodes_per_counter - 1 : nr_online - 1]);
	}
	fprintf(o.f, ",lost\n");
	for (i = 0; i < nr_rows; i++) {
		uint64_t k = order[i], set, sum = 0;
		const uint64_t *e = expected + k * nr_counters;
		struct lnode *l;

		locate(rows[k].paddr, &l, &set);
		for (c = 0; c < nr_counters; c++)
			sum += e[c];
		fprintf(o.f, "%" PRIu64 ",0x%" PRIx64 ",%d,%d,%" PRIu64, set,
			rows[k].paddr, l->nid, l->cnode, sum);
		for (c = 0; c < nr_counters; c++)
			fprintf(o.f, ",%" PRIu64, e[c]);
		fprintf(o.f, ",0\n");
	}
	free(order);
	return tt_commit(&o);
}

static void summary(void)
{
	/* The table on standard output: the summary goes to standard error. */
	FILE *f = opt.csv && !strcmp(opt.csv, "-") ? stderr : stdout;

	if (opt.json) {
		fprintf(f, "{\"place\": \"%s\", \"dry_run\": %s, \"references\": %" PRIu64
		       ", \"calls\": %" PRIu64 ", \"entries\": %" PRIu64 ", \"sets\": %zu"
		       ", \"placed_pages\": %" PRIu64 ", \"skipped_not_ram\": %" PRIu64
		       ", \"outside_slots\": %" PRIu64 ", \"from_nodes_without_cnodeid\": %" PRIu64 "}\n",
		       opt.place == PL_NOW ? "as-traced" : pl_name(opt.place),
		       opt.dry_run ? "true" : "false", st.refs, st.calls, st.entries,
		       nr_rows, st.pages, st.skipped_io, st.outside, st.no_cnode);
		return;
	}
	fprintf(f, "refcnt-replay: %" PRIu64 " references %s %zu sets in %" PRIu64
	       " calls (%" PRIu64 " entries), placed %s",
	       st.refs, opt.dry_run ? "for" : "delivered to", nr_rows, st.calls,
	       st.entries, opt.place == PL_NOW ? "as traced" : pl_name(opt.place));
	if (st.pages)
		fprintf(f, " on %" PRIu64 " pages", st.pages);
	fprintf(f, "\n");
	if (st.skipped_io || st.outside || st.no_cnode)
		fprintf(f, "refcnt-replay: not delivered: %" PRIu64 " to MMIO or RAM of no node, %"
		       PRIu64 " outside every slot, %" PRIu64 " from nodes without a cnodeid\n",
		       st.skipped_io, st.outside, st.no_cnode);
}

static int run(char **names, int n)
{
	static struct pt_build b;
	int *mem, nr_mem = 0, i, rc, *v;
	struct tr_set *s;

	rc = access("/dev/refcnt", F_OK) == 0 ? layout_live() :
	     (opt.dry_run ? 0 : (rt_err("no /dev/refcnt: is the refcnt module loaded?"), -ENODEV));
	if (rc)
		return rc;
	/* The policies that look at whole pages read the traces first. */
	s = tr_set_open(rt_prog, names, n);
	if (!s)
		return -1;
	if (pt_threads(&b, s, opt.map))
		return -EINVAL;
	b.phys = tr_set_has(s, TR_HAS_PHYS);
	if (!opt.place_set)
		opt.place = b.phys ? PL_NOW : PL_FIRST_TOUCH;
	if (opt.place == PL_NOW && !b.phys) {
		rt_err("--place as-traced: the traces have no physical pages; choose a policy");
		return -EINVAL;
	}
	if (opt.place == PL_ORACLE || opt.place == PL_MAJORITY || opt.place == PL_RR2 ||
	    opt.place == PL_RR1) {
		tr_set_progress(s, opt.progress);
		if (pt_read(&b, s))
			return -1;
	}
	tr_set_close(s);
	if (!nr_nodes && (rc = layout_offline(&b, TR_MAX_THREADS)))
		return rc;
	mem = calloc(MAX_NODES, sizeof(int));
	if (!mem || u64map_init(&used, 4096) || u64map_init(&table, 4096) ||
	    u64map_init(&placed, 4096))
		return -ENOMEM;
	if (opt.mem) {
		nr_mem = tt_parse_nodes("--mem-nodes", opt.mem, &v);
		if (nr_mem < 0)
			return -EINVAL;
		for (i = 0; i < nr_mem; i++)
			if (!lnode_of(v[i])) {
				rt_err("--mem-nodes: node %d has no memory", v[i]);
				return -EINVAL;
			}
		memcpy(mem, v, nr_mem * sizeof(int));
		free(v);
	} else {
		for (i = 0; i < nr_nodes; i++)
			mem[nr_mem++] = nodes[i].nid;
	}
	rc = replay(&b, names, n, mem, nr_mem);
	if (rc)
		return rc;
	if (opt.csv && write_csv())
		return -1;
	summary();
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "place", required_argument, NULL, 'p' },
		{ "map", required_argument, NULL, 'm' },
		{ "mem-nodes", required_argument, NULL, 'M' },
		{ "reset", no_argument, NULL, 'r' },
		{ "csv", required_argument, NULL, 'o' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "ram", required_argument, NULL, 'R' },
		{ "online", required_argument, NULL, 'O' },
		{ "granularity", required_argument, NULL, 'g' },
		{ "json", no_argument, NULL, 'j' },
		{ "progress", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int o, rc;

	rt_prog = "refcnt-replay";
	while ((o = getopt_long(argc, argv, "p:m:M:ro:ng:jPh", lo, NULL)) != -1) {
		switch (o) {
		case 'p':
			if (pl_parse(optarg, &opt.place)) {
				rt_err("--place %s: want as-traced, first-touch, rr1, rr2, oracle or majority",
				       optarg);
				return RT_EXIT_USAGE;
			}
			opt.place_set = 1;
			break;
		case 'm': opt.map = optarg; break;
		case 'M': opt.mem = optarg; break;
		case 'r': opt.reset = 1; break;
		case 'o': opt.csv = optarg; break;
		case 'n': opt.dry_run = 1; break;
		case 'R': opt.ram = optarg; break;
		case 'O': opt.online = optarg; break;
		case 'g':
			if (rt_parse_u64(optarg, &gran) || gran < 256 || (gran & (gran - 1))) {
				rt_err("--granularity %s: want a power of two from 256", optarg);
				return RT_EXIT_USAGE;
			}
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
	if (opt.dry_run && opt.reset) {
		rt_err("--dry-run and --reset: a dry run changes nothing");
		return RT_EXIT_USAGE;
	}
	rc = run(argv + optind, argc - optind);
	if (rc == -1)
		return RT_EXIT_FAIL;
	if (!rc && fflush(stdout)) {
		rt_err("cannot write the standard output: %s", strerror(errno));
		return RT_EXIT_FAIL;
	}
	return rt_exit_code(rc);
}
