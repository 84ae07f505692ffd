// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-policy: page placement policies compared offline, after CDAT
 * (Abandah 1996, 5.1) without its coherence simulator: from a trace, or
 * from the counters, the share of references (or of a modelled LLC's
 * misses) that would be local under first touch, round robin (RR1), round
 * robin with code replicated (RR2), the Oracle policy, the best static
 * placement, and as the pages are placed now. tools/src/trace/policy.c
 * holds the policies.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cachesim.h"
#include "counters-in.h"
#include "policy.h"
#include "policy-trace.h"
#include "rtools.h"
#include "trace-read.h"
#include "trace-tool.h"
#include "u64map.h"


static struct {
	const char *map, *mem, *csv, *llc;
	int json, progress;
	struct ci_source src;
} opt = { .src.node = -1, .progress = 1 };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: refcnt-policy [OPTIONS] TRACE...\n"
		"       refcnt-policy [OPTIONS] --counters | --csv TABLE.csv\n"
		"\n"
		"Page placement policies compared offline (CDAT's policies, without a\n"
		"coherence simulator): the share of references that would be local\n"
		"under each, for the pages of the traces (refcnt-vm --trace, lackey) or\n"
		"of the counters:\n"
		"  now          where the pages are (the traces' physical pages' nodes;\n"
		"               the counters' home nodes)\n"
		"  first-touch  on the node of the first reference (traces only)\n"
		"  rr1          round robin over the memory nodes, by page number\n"
		"  rr2          rr1 with code pages replicated (traces with code records)\n"
		"  oracle       code replicated, private pages local, shared rr1\n"
		"  majority     each page on the node that references it most (the\n"
		"               best static placement)\n"
		"\n"
		"  -m, --map T=N,...      the node of threads (default: each trace's)\n"
		"  -M, --mem-nodes LIST   the nodes with memory pages may go to (default:\n"
		"                         the nodes of the traced pages, or of the\n"
		"                         counters; else the threads' nodes); a page\n"
		"                         placed on a node without memory goes to the\n"
		"                         first of them\n"
		"  -l, --llc SIZE[:WAYS]  count only the references that miss a per-node\n"
		"                         LLC (64-byte lines, LRU; default 16 ways), as\n"
		"                         the truth plugin's model (traces; code is not\n"
		"                         modelled)\n"
		"  -c, --counters         the module's counters (every node, or --node)\n"
		"  -n, --node NID         with --counters: node NID's memory only\n"
		"      --csv FILE         a refcnt-dump --csv table (or a truth table)\n"
		"  -g, --granularity B    the table's hardware page size (default 4096)\n"
		"  -j, --json             JSON instead of text\n"
		"  -P, --progress         a progress line on standard error, also when\n"
		"                         it is not a terminal\n"
		"  -h, --help             this text\n"
		"\n"
		"Exit status: 0 ok, 1 malformed or unreadable input, 2 usage,\n"
		"3 module not loaded, 4 permission denied.\n");
}

static int from_traces(struct pt_build *b, char **names, int n)
{
	struct tr_set *s = tr_set_open(rt_prog, names, n);
	int rc;

	if (!s)
		return -1;
	tr_set_progress(s, opt.progress);
	b->use_llc = !!opt.llc;
	rc = pt_threads(b, s, opt.map) || pt_read(b, s) ? -1 : 0;
	tr_set_close(s);
	return rc;
}

static int from_counters(struct pt_build *b)
{
	struct ci_reader r;
	struct ci_set cs;
	int rc, c;

	rc = ci_open(&r, &opt.src);
	if (rc)
		return rc < 0 ? rc : -1;
	if (pl_init(&b->t, r.nr_cols, r.col_nid))
		return -ENOMEM;
	while ((rc = ci_next(&r, &cs)) > 0) {
		long i = pl_add(&b->t, cs.paddr / r.granularity);

		if (i < 0)
			return -ENOMEM;
		b->t.pages[i].home = pl_col(&b->t, cs.home);
		if (b->t.pages[i].home >= 0)
			b->homes[b->t.pages[i].home] = 1;
		for (c = 0; c < r.nr_cols; c++)
			b->t.refs[i * r.nr_cols + c] = cs.refs[c];
	}
	ci_close(&r);
	return rc ? -1 : 0;
}

/* The memory nodes' columns: --mem-nodes, the homes seen, or the threads'. */
static int mem_cols(struct pt_build *b, int **mem)
{
	int *nids, n, i, k = 0, c;

	*mem = calloc(b->t.nr_cols, sizeof(int));
	if (!*mem)
		return -1;
	if (opt.mem) {
		n = tt_parse_nodes("--mem-nodes", opt.mem, &nids);
		if (n < 0)
			return -1;
		for (i = 0; i < n; i++) {
			c = pl_col(&b->t, nids[i]);
			if (c < 0) {
				rt_err("--mem-nodes: node %d is not one of the counters' nodes", nids[i]);
				return -1;
			}
			(*mem)[k++] = c;
		}
		free(nids);
		return k;
	}
	for (c = 0; c < b->t.nr_cols && c < PT_MAX_NID; c++)
		if (b->homes[c])
			(*mem)[k++] = c;
	if (k)
		return k;
	for (i = 0; i < TR_MAX_THREADS; i++)
		if (b->thread_node[i] >= 0 && b->thread_node[i] < b->t.nr_cols)
			b->homes[b->thread_node[i]] = 1;
	for (c = 0; c < b->t.nr_cols && c < PT_MAX_NID; c++)
		if (b->homes[c])
			(*mem)[k++] = c;
	if (!k)
		rt_err("no memory node: give --mem-nodes");
	return k ? k : -1;
}

static void report(struct pt_build *b, const int *mem, int nr_mem,
		   const struct pl_result *res, const struct pl_result *code)
{
	const char *what = opt.llc ? "LLC misses" : "references";
	int i;

	if (opt.json) {
		printf("{\"source\": \"%s\", \"llc\": ", ci_given(&opt.src) ? "counters" : "trace");
		if (opt.llc)
			printf("{\"size\": %" PRIu64 ", \"ways\": %u}", b->g.size, b->g.ways);
		else
			printf("null");
		printf(", \"memory_nodes\": [");
		for (i = 0; i < nr_mem; i++)
			printf("%s%d", i ? ", " : "", b->t.col_nid[mem[i]]);
		printf("], \"result\": ");
		pl_print_json(stdout, res);
		printf(", \"with_code\": ");
		if (code->code_pages)
			pl_print_json(stdout, code);
		else
			printf("null");
		printf("}\n");
		return;
	}
	printf("data %s %" PRIu64 " on %" PRIu64 " pages (%" PRIu64 " shared); memory on nodes",
	       what, res->total, res->pages, res->shared_pages);
	for (i = 0; i < nr_mem; i++)
		printf("%s%d", i ? "," : " ", b->t.col_nid[mem[i]]);
	printf("\n\n");
	pl_print_text(stdout, res);
	if (code->code_pages) {
		printf("\nwith the instructions: %" PRIu64 " references on %" PRIu64
		       " pages (%" PRIu64 " of code, replicated by rr2 and oracle)\n\n",
		       code->total, code->pages, code->code_pages);
		pl_print_text(stdout, code);
	}
	printf("\n");
	pl_sentence(stdout, res);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "map", required_argument, NULL, 'm' },
		{ "mem-nodes", required_argument, NULL, 'M' },
		{ "llc", required_argument, NULL, 'l' },
		CI_LONG_OPTIONS,
		{ "json", no_argument, NULL, 'j' },
		{ "progress", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	static struct pt_build b;
	struct pl_result res, code;
	int o, rc, nr_mem, *mem, counters;

	rt_prog = "refcnt-policy";
	while ((o = getopt_long(argc, argv, "m:M:l:cn:g:jPh", lo, NULL)) != -1) {
		switch (o) {
		case 'm': opt.map = optarg; break;
		case 'M': opt.mem = optarg; break;
		case 'l': opt.llc = optarg; break;
		case 'c': case 'n': case 'C': case 'g':
			if (ci_option(&opt.src, o, optarg) < 0)
				return RT_EXIT_USAGE;
			break;
		case 'j': opt.json = 1; break;
		case 'P': opt.progress = 2; break;
		case 'h': usage(stdout); return RT_EXIT_OK;
		default: usage(stderr); return RT_EXIT_USAGE;
		}
	}
	counters = ci_given(&opt.src);
	if (counters < 0)
		return RT_EXIT_USAGE;
	if (counters && optind < argc)
		return rt_exit_code(rt_unexpected_arg(argv[optind], usage));
	if (!counters && optind >= argc) {
		rt_err("no TRACE, --counters or --csv given");
		usage(stderr);
		return RT_EXIT_USAGE;
	}
	if (opt.llc) {
		char g[64];

		snprintf(g, sizeof(g), strchr(opt.llc, ':') ? "%.40s" : "%.40s:16", opt.llc);
		/* SIZE:WAYS -> SIZE:64:WAYS */
		{
			char *c = strchr(g, ':'), buf[80];

			snprintf(buf, sizeof(buf), "%.*s:64%s", (int)(c - g), g, c);
			if (cs_parse(buf, &b.g)) {
				rt_err("--llc %s: want SIZE[:WAYS] (a power-of-two number of 64-byte-line sets)",
				       opt.llc);
				return RT_EXIT_USAGE;
			}
		}
		if (counters) {
			rt_err("--llc: for traces only (the counters count every reference)");
			return RT_EXIT_USAGE;
		}
	}
	if (counters)
		rc = from_counters(&b);
	else
		rc = from_traces(&b, argv + optind, argc - optind);

	if (rc)
		return rc < 0 && rc != -1 ? rt_exit_code(rc) : RT_EXIT_FAIL;
	nr_mem = mem_cols(&b, &mem);
	if (nr_mem < 0)
		return RT_EXIT_USAGE;
	pl_compare(&b.t, mem, nr_mem, NULL, 0, &res);
	pl_compare(&b.t, mem, nr_mem, NULL, 1, &code);
	report(&b, mem, nr_mem, &res, &code);
	if (fflush(stdout)) {
		rt_err("cannot write the standard output: %s", strerror(errno));
		return RT_EXIT_FAIL;
	}
	return RT_EXIT_OK;
}
