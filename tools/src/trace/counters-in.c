// SPDX-License-Identifier: GPL-2.0
/* The counters, set by set, from the module or a refcnt-dump --csv table. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "counters-in.h"
#include "rtools.h"

#define CHUNK	4096

struct live_node {
	struct refcnt_node *h;
	struct rcb_info info;
	struct rcb_slot *slots;
	int nr_slots;
};

/* ------------------------------------------------------------ csv */

static int csv_header(struct ci_reader *r, char *line)
{
	char *save, *tok;
	int f = 0;

	r->f_paddr = r->f_node = r->f_lost = -1;
	for (tok = strtok_r(line, ",\r\n", &save); tok;
	     tok = strtok_r(NULL, ",\r\n", &save), f++) {
		if (!strcmp(tok, "paddr"))
			r->f_paddr = f;
		else if (!strcmp(tok, "node"))
			r->f_node = f;
		else if (!strcmp(tok, "lost"))
			r->f_lost = f;
		else if (tok[0] == 'n' && tok[1] >= '0' && tok[1] <= '9') {
			if (r->nr_cols == CI_MAX_COLS) {
				rt_err("%s: more than %d counter columns", r->what, CI_MAX_COLS);
				return -1;
			}
			r->f_col[r->nr_cols] = f;
			r->col_nid[r->nr_cols] = atoi(tok + 1);
			snprintf(r->col_label[r->nr_cols], sizeof(r->col_label[0]), "%s", tok + 1);
			r->nr_cols++;
		}
	}
	if (r->f_paddr < 0 || r->f_node < 0 || !r->nr_cols) {
		rt_err("%s: line 1: not a refcnt-dump --csv header (no paddr, node or nN columns)",
		       r->what);
		return -1;
	}
	return 0;
}

int ci_open_csv(struct ci_reader *r, const char *path, uint64_t granularity)
{
	char line[8192];

	memset(r, 0, sizeof(*r));
	r->what = path;
	r->granularity = granularity ? granularity : 4096;
	r->f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	if (!r->f) {
		rt_err("%s: %s", path, strerror(errno));
		return -1;
	}
	if (!fgets(line, sizeof(line), r->f)) {
		rt_err("%s: empty: not a refcnt-dump --csv table", path);
		return -1;
	}
	r->line = 1;
	return csv_header(r, line);
}

static int csv_next(struct ci_reader *r, struct ci_set *s)
{
	char line[8192], *save, *tok, *end;
	int f = 0, c, got = 0;

	if (!fgets(line, sizeof(line), r->f))
		return 0;
	r->line++;
	memset(s, 0, sizeof(*s));
	for (tok = strtok_r(line, ",\r\n", &save); tok;
	     tok = strtok_r(NULL, ",\r\n", &save), f++) {
		unsigned long long v;

		errno = 0;
		v = strtoull(tok, &end, 0);
		if (*end || errno) {
			if (f == r->f_paddr || f == r->f_node || f == r->f_lost)
				goto bad;
			for (c = 0; c < r->nr_cols; c++)
				if (f == r->f_col[c])
					goto bad;
			continue;
		}
		if (f == r->f_paddr) {
			s->paddr = v;
			got++;
		} else if (f == r->f_node) {
			s->home = (int)v;
			got++;
		} else if (f == r->f_lost) {
			s->lost = v;
		}
		for (c = 0; c < r->nr_cols; c++)
			if (f == r->f_col[c]) {
				s->refs[c] = v;
				got++;
			}
	}
	if (got == 2 + r->nr_cols)
		return 1;
bad:
	rt_err("%s: line %lu: not a row of the table (numbers for paddr, node and every counter)",
	       r->what, r->line);
	return -1;
}

/* ------------------------------------------------------------ live */

int ci_open_live(struct ci_reader *r, int nid)
{
	struct live_node *ln;
	struct rt_counters ctr;
	int i, n, err;

	memset(r, 0, sizeof(*r));
	r->what = "the module";
	n = rt_select_nodes(nid, &r->nids);
	if (n < 0)
		return n;
	r->nr_nodes = n;
	ln = calloc(n, sizeof(*ln));
	r->nodes = ln;
	if (!ln)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		err = rt_node_open(r->nids[i], &ln[i].h, &ln[i].info);
		if (err)
			return err;
		if (refcnt_node_sync(ln[i].h))
			return rt_node_error(errno, "RCB_SYNC on ", r->nids[i]);
		ln[i].nr_slots = refcnt_node_slots(ln[i].h, NULL, 0);
		ln[i].slots = calloc(ln[i].nr_slots + 1, sizeof(*ln[i].slots));
		if (!ln[i].slots)
			return -ENOMEM;
		refcnt_node_slots(ln[i].h, ln[i].slots, ln[i].nr_slots);
	}
	if (rt_counters_init(&ctr, &ln[0].info))
		return -EIO;
	r->nr_cols = ctr.nr > CI_MAX_COLS ? CI_MAX_COLS : ctr.nr;
	for (i = 0; i < r->nr_cols; i++) {
		r->col_nid[i] = ctr.cnode_nid[i * ctr.nodes_per_counter];
		snprintf(r->col_label[i], sizeof(r->col_label[0]), "%s", ctr.label[i]);
	}
	rt_counters_free(&ctr);
	r->granularity = ln[0].info.rcb_granularity;
	r->hw = calloc((size_t)CHUNK * r->nr_cols, sizeof(uint32_t));
	r->ext = calloc((size_t)CHUNK * r->nr_cols, sizeof(uint32_t));
	r->lost = calloc((size_t)CHUNK * r->nr_cols, sizeof(uint32_t));
	if (!r->hw || !r->ext || !r->lost)
		return -ENOMEM;
	r->nr_sets = ln[0].info.rcb_sw_sets;
	return 0;
}

static int live_next(struct ci_reader *r, struct ci_set *s)
{
	struct live_node *ln = r->nodes;

	while (r->cur < r->nr_nodes) {
		struct live_node *n = &ln[r->cur];
		const int cps = n->info.rcb_sw_counters_per_set;
		uint64_t k, lost = 0, sum = 0;
		int c;

		if (r->set >= n->info.rcb_sw_sets) {
			r->cur++;
			r->set = r->chunk_n = 0;
			continue;
		}
		if (r->set >= r->chunk_first + r->chunk_n || !r->chunk_n) {
			r->chunk_first = r->set;
			r->chunk_n = n->info.rcb_sw_sets - r->set < CHUNK ?
				     n->info.rcb_sw_sets - r->set : CHUNK;
			if (refcnt_node_read_sets(n->h, r->chunk_first, r->chunk_n,
						  r->hw, r->ext, r->lost))
				return rt_node_error(errno, "RCB_SETS_READ on ",
						     r->nids[r->cur]) ? -1 : -1;
		}
		k = r->set - r->chunk_first;
		memset(s, 0, sizeof(*s));
		for (c = 0; c < cps && c < CI_MAX_COLS; c++) {
			s->refs[c] = (uint64_t)r->hw[k * cps + c] + r->ext[k * cps + c];
			sum += s->refs[c];
			lost += r->lost[k * cps + c];
		}
		s->lost = lost;
		s->home = r->nids[r->cur];
		s->paddr = rt_set_paddr(n->slots, n->nr_slots, n->info.rcb_granularity,
					r->set);
		r->set++;
		if (sum || lost)
			return 1;
	}
	return 0;
}

int ci_next(struct ci_reader *r, struct ci_set *s)
{
	return r->f ? csv_next(r, s) : live_next(r, s);
}

void ci_close(struct ci_reader *r)
{
	struct live_node *ln = r->nodes;
	int i;

	if (r->f && r->f != stdin)
		fclose(r->f);
	for (i = 0; ln && i < r->nr_nodes; i++) {
		refcnt_node_close(ln[i].h);
		free(ln[i].slots);
	}
	free(ln);
	free(r->nids);
	free(r->hw);
	free(r->ext);
	free(r->lost);
	memset(r, 0, sizeof(*r));
}

int ci_option(struct ci_source *src, int o, const char *arg)
{
	switch (o) {
	case 'c':
		src->counters = 1;
		return 1;
	case 'n':
		return rt_parse_node(arg, &src->node) ? -1 : 1;
	case 'C':
		src->csv = arg;
		return 1;
	case 'g':
		if (rt_parse_u64(arg, &src->granularity) || src->granularity < 256 ||
		    (src->granularity & (src->granularity - 1))) {
			rt_err("--granularity %s: want a power of two from 256", arg);
			return -1;
		}
		return 1;
	}
	return 0;
}

int ci_given(const struct ci_source *src)
{
	if (src->counters && src->csv) {
		rt_err("--counters and --csv: one source");
		return -1;
	}
	return src->counters || src->csv;
}

int ci_open(struct ci_reader *r, const struct ci_source *src)
{
	return src->csv ? ci_open_csv(r, src->csv, src->granularity) :
			  ci_open_live(r, src->node);
}
