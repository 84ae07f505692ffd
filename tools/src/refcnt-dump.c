// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-dump: the counter tables, all or a physical range, as CSV or
 * JSON (one line per counter set), and heatmaps: physical address ranges x
 * accessing node, colour = references, as SVG or PNG.
 *
 * Counts are read with RCB_SETS_READ: references a set's counters show =
 * extended + hardware counter (the mmap'ed table has the extended ones
 * only, which lag by up to the hardware maximum); references lost to
 * pegging are given apart.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heatmap.h"
#include "rtools.h"

/* Sets per RCB_SETS_READ. */
#define CHUNK	16384

static struct {
	int format;		/* 'c' CSV, 'j' JSON, 0 none */
	int all;
	int split;
	int node;		/* -1: all */
	int has_range;
	uint64_t start, end;
	const char *output;
	const char *heatmap;
	int width, height, rows;
	int skip_empty;
} opt = { .node = -1, .width = 1000, .height = 700, .rows = 48 };

struct node {
	int nid;
	struct refcnt_node *h;
	struct rcb_info info;
	struct rcb_slot *slots;
	int nr_slots;
	uint64_t first, last;		/* selected sets [first, last) */
	uint64_t *set_total;		/* heatmap: references per set */
	uint64_t *set_refs;		/* heatmap: per set and counter */
};

static struct rt_counters ctr;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: refcnt-dump [--csv | --json] [OPTIONS]\n"
		"       refcnt-dump --heatmap FILE.svg|FILE.png [OPTIONS]\n"
		"\n"
		"Dump the reference counter tables, one line per counter set (set, paddr,\n"
		"node, cnodeid, references, references by accessing node, lost), and/or\n"
		"draw a heatmap of physical address ranges x accessing node.\n"
		"References = extended + hardware counter; sets without any are left\n"
		"out unless --all.\n"
		"\n"
		"  -c, --csv              CSV (the default without --heatmap)\n"
		"  -j, --json             JSON\n"
		"  -r, --range START-END  only this physical range (also START+LEN;\n"
		"                         numbers in hex with 0x or with K, M, G)\n"
		"  -n, --node N           only node N's table\n"
		"  -a, --all              also sets without references\n"
		"  -s, --split            also the extended, hardware and lost counts of\n"
		"                         every counter\n"
		"  -o, --output FILE      write the dump to FILE (default stdout)\n"
		"  -H, --heatmap FILE     draw a heatmap into FILE (.svg or .png)\n"
		"      --rows N           address ranges in the heatmap (default 48)\n"
		"      --width W          heatmap width in pixels (default 1000)\n"
		"      --height H         heatmap height in pixels (default 700)\n"
		"  -e, --skip-empty       leave address ranges without references out of\n"
		"                         the heatmap (and make them finer)\n"
		"  -h, --help             this text\n"
		"\n"
		"Exit status: 0 ok, 1 error, 2 usage, 3 refcnt module not loaded,\n"
		"4 permission denied.\n");
}

static uint64_t set_paddr(const struct node *n, uint64_t set)
{
	return rt_set_paddr(n->slots, n->nr_slots, n->info.rcb_granularity,
			    set);
}

/* Sets of [start, end) in node n: [*first, *last) (may be empty). */
static void range_sets(const struct node *n, uint64_t start, uint64_t end,
		       uint64_t *first, uint64_t *last)
{
	uint64_t gran = n->info.rcb_granularity, base = 0;
	int i, found = 0;

	*first = *last = 0;
	for (i = 0; i < n->nr_slots; i++) {
		const struct rcb_slot *s = &n->slots[i];
		uint64_t sets = s->size / gran, a, b;

		if (start < s->base + s->size && end > s->base) {
			a = start > s->base ? (start - s->base) / gran : 0;
			b = end < s->base + s->size ?
			    (end - s->base + gran - 1) / gran : sets;
			if (!found)
				*first = base + a;
			*last = base + b;
			found = 1;
		}
		base += sets;
	}
}

static void csv_header(FILE *f)
{
	int c;

	fprintf(f, "set,paddr,node,cnodeid,refs");
	for (c = 0; c < ctr.nr; c++)
		fprintf(f, ",n%s", ctr.label[c]);
	fprintf(f, ",lost");
	if (opt.split) {
		for (c = 0; c < ctr.nr; c++)
			fprintf(f, ",ext_n%s", ctr.label[c]);
		for (c = 0; c < ctr.nr; c++)
			fprintf(f, ",hw_n%s", ctr.label[c]);
		for (c = 0; c < ctr.nr; c++)
			fprintf(f, ",lost_n%s", ctr.label[c]);
	}
	fprintf(f, "\n");
}

static void json_array(FILE *f, const char *key, const uint32_t *v, int n,
		       const uint32_t *plus)
{
	int c;

	fprintf(f, ", \"%s\": [", key);
	for (c = 0; c < n; c++)
		fprintf(f, "%s%llu", c ? ", " : "",
			(unsigned long long)v[c] + (plus ? plus[c] : 0));
	fprintf(f, "]");
}

/* The counts of one set, hw, ext and lost by counter, as read. */
struct set_counts {
	uint64_t set;
	const uint32_t *h, *e, *l;
	uint64_t refs, lost;
};

static void csv_set(FILE *f, const struct node *n, const struct set_counts *sc)
{
	const int cps = n->info.rcb_sw_counters_per_set;
	int c;

	fprintf(f, "%llu,0x%llx,%d,%u,%llu", (unsigned long long)sc->set,
		(unsigned long long)set_paddr(n, sc->set), n->nid,
		n->info.rcb_cnodeid, (unsigned long long)sc->refs);
	for (c = 0; c < cps; c++)
		fprintf(f, ",%llu", (unsigned long long)sc->h[c] + sc->e[c]);
	fprintf(f, ",%llu", (unsigned long long)sc->lost);
	if (opt.split) {
		for (c = 0; c < cps; c++)
			fprintf(f, ",%u", sc->e[c]);
		for (c = 0; c < cps; c++)
			fprintf(f, ",%u", sc->h[c]);
		for (c = 0; c < cps; c++)
			fprintf(f, ",%u", sc->l[c]);
	}
	fprintf(f, "\n");
}

static void json_set(FILE *f, const struct node *n, const struct set_counts *sc,
		     int first)
{
	const int cps = n->info.rcb_sw_counters_per_set;

	fprintf(f, "%s\n      {\"set\": %llu, \"paddr\": %llu, \"refs\": %llu",
		first ? "" : ",", (unsigned long long)sc->set,
		(unsigned long long)set_paddr(n, sc->set),
		(unsigned long long)sc->refs);
	json_array(f, "by_node", sc->h, cps, sc->e);
	fprintf(f, ", \"lost\": %llu", (unsigned long long)sc->lost);
	if (opt.split) {
		json_array(f, "ext", sc->e, cps, NULL);
		json_array(f, "hw", sc->h, cps, NULL);
		json_array(f, "lost_by_node", sc->l, cps, NULL);
	}
	fprintf(f, "}");
}

/* Sum a set's counts; keep them for the heatmap when it is drawn. */
static void count_set(struct node *n, struct set_counts *sc)
{
	const int cps = n->info.rcb_sw_counters_per_set;
	const uint64_t k = sc->set - n->first;
	int c;

	sc->refs = sc->lost = 0;
	for (c = 0; c < cps; c++) {
		sc->refs += (uint64_t)sc->h[c] + sc->e[c];
		sc->lost += sc->l[c];
	}
	if (!n->set_total)
		return;
	n->set_total[k] = sc->refs;
	for (c = 0; c < cps; c++)
		n->set_refs[k * cps + c] = (uint64_t)sc->h[c] + sc->e[c];
}

/* Read node n's selected sets: dump them and fill the heatmap arrays. */
static int dump_node(FILE *f, struct node *n, int *first_json)
{
	const int cps = n->info.rcb_sw_counters_per_set;
	uint32_t *hw, *ext, *lost;
	struct set_counts sc;
	uint64_t set, cnt, i;
	int first_set_json = 1, rc = 0;

	hw = calloc((size_t)CHUNK * cps, sizeof(uint32_t));
	ext = calloc((size_t)CHUNK * cps, sizeof(uint32_t));
	lost = calloc((size_t)CHUNK * cps, sizeof(uint32_t));
	if (!hw || !ext || !lost) {
		rt_err("out of memory");
		return -ENOMEM;
	}
	if (f && opt.format == 'j')
		fprintf(f, "%s    {\"node\": %d, \"cnodeid\": %u, \"granularity\": %u, \"sets\": [",
			*first_json ? "" : ",\n", n->nid, n->info.rcb_cnodeid,
			n->info.rcb_granularity);
	*first_json = 0;
	for (set = n->first; set < n->last && !rc; set += CHUNK) {
		cnt = n->last - set < CHUNK ? n->last - set : CHUNK;
		if (refcnt_node_read_sets(n->h, set, cnt, hw, ext, lost)) {
			rc = rt_node_error(errno, "RCB_SETS_READ on ", n->nid);
			break;
		}
		for (i = 0; i < cnt; i++) {
			sc.set = set + i;
			sc.h = hw + i * cps;
			sc.e = ext + i * cps;
			sc.l = lost + i * cps;
			count_set(n, &sc);
			if (!f || (!opt.all && !sc.refs && !sc.lost))
				continue;
			if (opt.format == 'c')
				csv_set(f, n, &sc);
			else
				json_set(f, n, &sc, first_set_json);
			first_set_json = 0;
		}
	}
	if (!rc && f && opt.format == 'j')
		fprintf(f, "%s]}", first_set_json ? "" : "\n    ");
	free(hw);
	free(ext);
	free(lost);
	return rc;
}

/* ------------------------------------------------------------ heatmap */

struct bin {
	struct node *n;
	uint64_t first, last;	/* sets, relative to n->first */
	uint64_t refs;
};

/* Bins of bin_sets sets in every node; only non-empty ones if skip. */
static int make_bins(struct node *nodes, int nr, uint64_t bin_sets, int skip,
		     struct bin *out, int cap)
{
	int j, k = 0;

	for (j = 0; j < nr; j++) {
		struct node *n = &nodes[j];
		uint64_t sets = n->last - n->first, a;

		for (a = 0; a < sets; a += bin_sets) {
			uint64_t b = a + bin_sets < sets ? a + bin_sets : sets, s;
			uint64_t refs = 0;

			for (s = a; s < b; s++)
				refs += n->set_total[s];
			if (skip && !refs)
				continue;
			if (out && k < cap) {
				out[k].n = n;
				out[k].first = a;
				out[k].last = b;
				out[k].refs = refs;
			}
			k++;
		}
	}
	return k;
}

/*
 * The finest power-of-two bins (in sets) that fit in --rows rows, and
 * into *nb how many rows they make; a row never spans two nodes, so there
 * is at least one per node. 0 sets (*nb 0) when there is nothing to draw.
 */
static uint64_t choose_bins(struct node *nodes, int nr, int *nb)
{
	uint64_t total_sets = 0, bin_sets = 1, max_sets = 0;
	int j;

	*nb = 0;
	for (j = 0; j < nr; j++) {
		total_sets += nodes[j].last - nodes[j].first;
		if (nodes[j].last - nodes[j].first > max_sets)
			max_sets = nodes[j].last - nodes[j].first;
	}
	if (!total_sets) {
		rt_err("--heatmap: no counter sets in the selected range");
		return 0;
	}
	while (bin_sets < max_sets &&
	       make_bins(nodes, nr, bin_sets, opt.skip_empty, NULL, 0) > opt.rows)
		bin_sets *= 2;
	*nb = make_bins(nodes, nr, bin_sets, opt.skip_empty, NULL, 0);
	if (*nb > opt.rows)
		fprintf(stderr, "refcnt-dump: %d rows, not %d: one row per node at least\n",
			*nb, opt.rows);
	if (!*nb)
		rt_err("--heatmap: no references in the selected range (drop --skip-empty to draw it anyway)");
	return bin_sets;
}

/* One row per bin: its first address, its node, references by counter. */
static void fill_heatmap(struct rt_heatmap *hm, const struct bin *bins, int nb)
{
	int r, c;

	for (c = 0; c < ctr.nr_cnodes; c++) {
		char *name = malloc(24);

		if (name)
			snprintf(name, 24, "node %d", ctr.cnode_nid[c]);
		hm->group_name[c] = name;
	}
	for (r = 0; r < nb; r++) {
		struct node *n = bins[r].n;
		int cps = n->info.rcb_sw_counters_per_set;
		double *v = hm->v + (size_t)r * ctr.nr;
		char *label = malloc(32);
		uint64_t s;

		if (label)
			snprintf(label, 32, "0x%llx",
				 (unsigned long long)set_paddr(n, n->first + bins[r].first));
		hm->row_label[r] = label;
		hm->row_group[r] = (int)n->info.rcb_cnodeid;
		for (s = bins[r].first; s < bins[r].last; s++)
			for (c = 0; c < cps && c < ctr.nr; c++)
				v[c] += (double)n->set_refs[s * cps + c];
		c = (int)n->info.rcb_cnodeid / ctr.nodes_per_counter;
		if (c < ctr.nr)
			hm->mark[(size_t)r * ctr.nr + c] = 1;
	}
}

static int draw_heatmap(struct node *nodes, int nr)
{
	uint64_t gran = nodes[0].info.rcb_granularity, bin_sets;
	char title[256], note[256], h1[16];
	struct rt_heatmap hm;
	struct bin *bins;
	int nb, err;

	bin_sets = choose_bins(nodes, nr, &nb);
	if (!nb)
		return -1;
	bins = calloc(nb, sizeof(*bins));
	if (!bins || rt_heatmap_alloc(&hm, &ctr, nb)) {
		rt_err("out of memory");
		return -ENOMEM;
	}
	make_bins(nodes, nr, bin_sets, opt.skip_empty, bins, nb);
	fill_heatmap(&hm, bins, nb);
	snprintf(title, sizeof(title),
		 "refcnt: references by physical address (%s per row) and accessing node",
		 rt_human(bin_sets * gran, h1, sizeof(h1)));
	snprintf(note, sizeof(note),
		 "colour: extended + hardware counts (log scale); outlined: the home node's own references%s",
		 opt.skip_empty ? "; ranges without references left out" : "");
	hm.title = title;
	hm.ylabel = "physical address";
	hm.note = note;
	err = rt_heatmap_write(&hm, opt.heatmap, opt.width, opt.height);
	rt_heatmap_free(&hm);
	free(bins);
	if (err)
		return -1;
	fprintf(stderr, "refcnt-dump: heatmap written to %s (%dx%d, %d rows of %s)\n",
		opt.heatmap, opt.width, opt.height, nb,
		rt_human(bin_sets * gran, h1, sizeof(h1)));
	return 0;
}

enum { O_ROWS = 256, O_WIDTH, O_HEIGHT };

/* --rows, --width, --height: 0, or RT_EXIT_USAGE with the cause printed. */
static int parse_size(int c, const char *arg)
{
	char *end;
	long v;

	v = strtol(arg, &end, 10);
	if (*end || v < (c == O_ROWS ? 1 : 64) ||
	    v > (c == O_ROWS ? 4096 : 16384)) {
		rt_err("%s %s: %s", c == O_ROWS ? "--rows" :
		       c == O_WIDTH ? "--width" : "--height", arg,
		       c == O_ROWS ? "1..4096" : "64..16384 pixels");
		return RT_EXIT_USAGE;
	}
	*(c == O_ROWS ? &opt.rows : c == O_WIDTH ? &opt.width : &opt.height) = v;
	return 0;
}

/* One option into opt: 0, or RT_EXIT_USAGE with the cause printed. */
static int parse_option(int c, const char *arg)
{
	switch (c) {
	case 'c':
	case 'j':
		opt.format = c;
		return 0;
	case 'r':
		if (rt_parse_range(arg, &opt.start, &opt.end)) {
			rt_err("--range %s: not START-END or START+LEN with START < END",
			       arg);
			return RT_EXIT_USAGE;
		}
		opt.has_range = 1;
		return 0;
	case 'n':
		return rt_exit_code(rt_parse_node(arg, &opt.node));
	case 'a':
		opt.all = 1;
		return 0;
	case 's':
		opt.split = 1;
		return 0;
	case 'o':
		opt.output = arg;
		return 0;
	case 'H':
		opt.heatmap = arg;
		return 0;
	case 'e':
		opt.skip_empty = 1;
		return 0;
	case O_ROWS:
	case O_WIDTH:
	case O_HEIGHT:
		return parse_size(c, arg);
	default:
		usage(stderr);
		return RT_EXIT_USAGE;
	}
}

/* The options into opt: 0 to go on, -1 after --help, or an exit code. */
static int parse_options(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "csv", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "range", required_argument, NULL, 'r' },
		{ "node", required_argument, NULL, 'n' },
		{ "all", no_argument, NULL, 'a' },
		{ "split", no_argument, NULL, 's' },
		{ "output", required_argument, NULL, 'o' },
		{ "heatmap", required_argument, NULL, 'H' },
		{ "rows", required_argument, NULL, O_ROWS },
		{ "width", required_argument, NULL, O_WIDTH },
		{ "height", required_argument, NULL, O_HEIGHT },
		{ "skip-empty", no_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;

	while ((c = getopt_long(argc, argv, "cjr:n:aso:H:eh", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return -1;
		}
		rc = parse_option(c, optarg);
		if (rc)
			return rc;
	}
	if (optind < argc)
		return rt_exit_code(rt_unexpected_arg(argv[optind], usage));
	if (opt.heatmap) {
		if (!rt_heatmap_name_ok(opt.heatmap)) {
			rt_err("--heatmap %s: the name must end in .svg or .png",
			       opt.heatmap);
			return RT_EXIT_USAGE;
		}
	} else if (!opt.format) {
		opt.format = 'c';
	}
	return 0;
}

/* Open node n, its slots, the selected sets, room for the heatmap. */
static int open_node(struct node *n)
{
	int rc = rt_node_open(n->nid, &n->h, &n->info);
	uint64_t sets;

	if (rc)
		return rc;
	n->nr_slots = refcnt_node_slots(n->h, NULL, 0);
	n->slots = calloc(n->nr_slots > 0 ? n->nr_slots : 1, sizeof(*n->slots));
	if (!n->slots) {
		rt_err("out of memory");
		return -ENOMEM;
	}
	refcnt_node_slots(n->h, n->slots, n->nr_slots);
	if (opt.has_range)
		range_sets(n, opt.start, opt.end, &n->first, &n->last);
	else
		n->last = n->info.rcb_sw_sets;
	if (!opt.heatmap || n->last <= n->first)
		return 0;
	sets = n->last - n->first;
	n->set_total = calloc(sets, sizeof(uint64_t));
	n->set_refs = calloc(sets * n->info.rcb_sw_counters_per_set,
			     sizeof(uint64_t));
	if (!n->set_total || !n->set_refs) {
		rt_err("out of memory for the heatmap of node %d (use --range)",
		       n->nid);
		return -ENOMEM;
	}
	return 0;
}

/* The nodes to dump into *nodes: how many, or a negative errno. */
static int open_nodes(struct node **nodes)
{
	int *nids, nr, j, rc;

	nr = rt_select_nodes(opt.node, &nids);
	if (nr < 0)
		return nr;
	*nodes = calloc(nr, sizeof(**nodes));
	if (!*nodes) {
		rt_err("out of memory");
		return -ENOMEM;
	}
	for (j = 0; j < nr; j++) {
		(*nodes)[j].nid = nids[j];
		rc = open_node(&(*nodes)[j]);
		if (rc)
			return rc;
	}
	rc = rt_counters_init(&ctr, &(*nodes)[0].info);
	return rc ? rc : nr;
}

/* --output or stdout, with the CSV header or JSON opening: NULL if not. */
static FILE *open_dump(void)
{
	FILE *out = stdout;
	int c;

	if (opt.output) {
		out = fopen(opt.output, "w");
		if (!out) {
			rt_err("--output %s: %s", opt.output, strerror(errno));
			return NULL;
		}
	}
	if (opt.format == 'c') {
		csv_header(out);
		return out;
	}
	fprintf(out, "{\"counters\": [");
	for (c = 0; c < ctr.nr; c++)
		fprintf(out, "%s\"%s\"", c ? ", " : "", ctr.label[c]);
	fprintf(out, "], \"nodes_per_counter\": %d, \"refs\": \"extended + hardware\",\n  \"nodes\": [\n",
		ctr.nodes_per_counter);
	return out;
}

/* Dump every node (and read what the heatmap needs): 0, or an exit code. */
static int dump(struct node *nodes, int nr)
{
	int j, rc = 0, first_json = 1;
	FILE *out = NULL;

	if (opt.format) {
		out = open_dump();
		if (!out)
			return RT_EXIT_FAIL;
	}
	for (j = 0; j < nr && !rc; j++)
		rc = dump_node(out, &nodes[j], &first_json);
	if (out && opt.format == 'j')
		fprintf(out, "\n  ]\n}\n");
	if (out && (fflush(out) || (out != stdout && fclose(out)))) {
		rt_err("%s: %s", opt.output ? opt.output : "stdout", strerror(errno));
		return RT_EXIT_FAIL;
	}
	return rt_exit_code(rc);
}

int main(int argc, char **argv)
{
	struct node *nodes;
	int nr, j, rc;

	rt_prog = "refcnt-dump";
	rc = parse_options(argc, argv);
	if (rc)
		return rc < 0 ? RT_EXIT_OK : rc;
	nr = open_nodes(&nodes);
	if (nr < 0)
		return rt_exit_code(nr);
	rc = dump(nodes, nr);
	if (rc)
		return rc;
	if (opt.heatmap)
		rc = rt_exit_code(draw_heatmap(nodes, nr));
	for (j = 0; j < nr; j++)
		refcnt_node_close(nodes[j].h);
	return rc;
}
