// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-compare: how close refcnt's counter tables are to the truth.
 *
 * Both inputs are in the layout of `refcnt-dump --csv`: the module's tables
 * at the end of a run, and the references the guest really made, counted
 * by the refcnt-truth QEMU plugin (tools/testing/refcnt-vm --truth).  Rows
 * are joined by physical address.  Prints, overall, per region (--regions)
 * and per node: coverage, attribution, remote share, hot-page precision and
 * recall, rank correlation, and misplacement advice against the truth;
 * with --period, how often the truth falls inside the 95% interval of
 * refcnt's count (as refcnt-run gives it). See refcnt-compare(1).
 *
 * Self-contained on purpose: it reads files only, runs on the host, and
 * needs neither the module nor librefcnt.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rjson.h"
#include "rinterval.h"

#define EXIT_USAGE	2
#define MAX_COLS	64
#define MAX_LINE	8192

static const char *prog = "refcnt-compare";

struct page {
	uint64_t paddr;
	int nid;			/* home node, -1 unknown */
	int region;			/* index in regions, -1 none */
	uint64_t *t, *r;		/* by column: refcnt, truth */
	uint64_t tsum, rsum;
};

static struct {
	char label[MAX_COLS][24];
	int nr;
} cols;

static struct page *pages;
static size_t nr_pages, cap_pages;

static struct region {
	char name[64];
} *regions;
static int nr_regions;

static struct range {
	uint64_t start, end;
	int region;
} *ranges;
static size_t nr_ranges;

static struct {
	int json;
	const char *regions;
	double min_share;
	uint64_t min_refs;
	uint64_t period;		/* --period: 0 none */
} opt = { .min_share = 60, .min_refs = 16 };

static void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: refcnt-compare [OPTIONS] TABLES.csv TRUTH.csv\n"
		"\n"
		"Compare refcnt's counter tables (refcnt-dump --csv at the end of a\n"
		"run) with the truth (refcnt-vm --truth) of the same run, page by page:\n"
		"coverage, attribution, remote share, hot pages, rank correlation and\n"
		"misplacement, overall, per region and per node.\n"
		"\n"
		"  -r, --regions FILE     name physical pages: lines \"NAME 0xPADDR\" or\n"
		"                         \"NAME 0xSTART-0xEND\" (later lines win)\n"
		"  -j, --json             JSON instead of text\n"
		"      --min-share PCT    advice rule, as refcnt-run's (default 60)\n"
		"      --min-refs N       advice rule, as refcnt-run's (default 16)\n"
		"  -p, --period N         the tables' counts are samples of weight N:\n"
		"                         how often the truth falls inside the 95%%\n"
		"                         interval of a page's and a region's count\n"
		"  -h, --help             this text\n"
		"\n"
		"Exit status: 0 ok, 1 error (unreadable or malformed input), 2 usage.\n");
}

/* ------------------------------------------------------------ input */

static int col_of(const char *label)
{
	int i;

	for (i = 0; i < cols.nr; i++)
		if (!strcmp(cols.label[i], label))
			return i;
	if (cols.nr == MAX_COLS)
		return -1;
	snprintf(cols.label[cols.nr], sizeof(cols.label[0]), "%s", label);
	return cols.nr++;
}

static int page_cmp(const void *a, const void *b)
{
	const struct page *x = a, *y = b;

	return x->paddr < y->paddr ? -1 : x->paddr > y->paddr;
}

/* Column layout of one file: index of paddr, node and each counter. */
struct layout {
	int paddr, node, ncol;
	int field[MAX_COLS];		/* field index of counter column i */
	int col[MAX_COLS];		/* our column of it */
};

static int parse_header(char *line, struct layout *l, const char *path)
{
	char *save, *tok;
	int f = 0;

	memset(l, -1, sizeof(*l));
	l->ncol = 0;
	for (tok = strtok_r(line, ",\r\n", &save); tok;
	     tok = strtok_r(NULL, ",\r\n", &save), f++) {
		if (!strcmp(tok, "paddr")) {
			l->paddr = f;
		} else if (!strcmp(tok, "node")) {
			l->node = f;
		} else if (tok[0] == 'n' && tok[1] >= '0' && tok[1] <= '9' &&
			   l->ncol < MAX_COLS) {
			l->field[l->ncol] = f;
			l->col[l->ncol] = col_of(tok + 1);
			if (l->col[l->ncol] < 0) {
				err("%s: more than %d counter columns", path, MAX_COLS);
				return -1;
			}
			l->ncol++;
		}
	}
	if (l->paddr < 0 || l->node < 0 || !l->ncol) {
		err("%s: not a refcnt-dump --csv table (no paddr, node or nN columns in the first line)",
		    path);
		return -1;
	}
	return 0;
}

static struct layout layouts[2];

/* One data line of a file into a new page row (counts in file order). */
static int parse_row(char *line, const struct layout *l, int which,
		     const char *path, unsigned long lineno)
{
	char *field[MAX_COLS + 16], *save, *tok, *end;
	struct page *p;
	int n = 0, i;

	for (tok = strtok_r(line, ",\r\n", &save); tok && n < MAX_COLS + 16;
	     tok = strtok_r(NULL, ",\r\n", &save))
		field[n++] = tok;
	if (n <= l->paddr || n <= l->node || n <= l->field[l->ncol - 1]) {
		err("%s:%lu: too few fields", path, lineno);
		return -1;
	}
	if (nr_pages == cap_pages) {
		cap_pages = cap_pages ? 2 * cap_pages : 4096;
		pages = realloc(pages, cap_pages * sizeof(*pages));
		if (!pages) {
			err("out of memory");
			return -1;
		}
	}
	p = &pages[nr_pages++];
	memset(p, 0, sizeof(*p));
	p->region = which;		/* which file, until merged */
	errno = 0;
	p->paddr = strtoull(field[l->paddr], &end, 0);
	if (errno || *end) {
		err("%s:%lu: bad paddr '%s'", path, lineno, field[l->paddr]);
		return -1;
	}
	p->nid = atoi(field[l->node]);
	p->t = calloc(l->ncol, sizeof(uint64_t));
	if (!p->t) {
		err("out of memory");
		return -1;
	}
	for (i = 0; i < l->ncol; i++) {
		p->t[i] = strtoull(field[l->field[i]], &end, 10);
		if (*end) {
			err("%s:%lu: bad count '%s'", path, lineno, field[l->field[i]]);
			return -1;
		}
	}
	return 0;
}

/* Read one table into pages[]: which = 0 refcnt, 1 truth. */
static int read_table(const char *path, int which)
{
	char line[MAX_LINE];
	unsigned long lineno = 1;
	FILE *f = fopen(path, "r");
	int rc = -1;

	if (!f) {
		err("cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	if (!fgets(line, sizeof(line), f)) {
		err("%s: empty file", path);
		goto out;
	}
	if (parse_header(line, &layouts[which], path))
		goto out;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (parse_row(line, &layouts[which], which, path, lineno))
			goto out;
	}
	rc = 0;
out:
	fclose(f);
	return rc;
}

/*
 * Sort the rows of both files by address and make one page per address,
 * with refcnt's counts in ->t and the truth's in ->r, by our columns.
 */
static int merge(void)
{
	size_t i, o = 0;

	qsort(pages, nr_pages, sizeof(*pages), page_cmp);
	for (i = 0; i < nr_pages; i++) {
		struct page *src = &pages[i], *dst;
		const struct layout *l = &layouts[src->region];
		uint64_t *v = src->t;
		int c;

		if (o && pages[o - 1].paddr == src->paddr) {
			dst = &pages[o - 1];
		} else {
			dst = &pages[o++];
			dst->paddr = src->paddr;
			dst->nid = src->nid;
			dst->t = calloc(2 * cols.nr, sizeof(uint64_t));
			if (!dst->t) {
				err("out of memory");
				return -1;
			}
			dst->r = dst->t + cols.nr;
			dst->tsum = dst->rsum = 0;
		}
		for (c = 0; c < l->ncol; c++) {
			(l == &layouts[1] ? dst->r : dst->t)[l->col[c]] += v[c];
			if (l == &layouts[1])
				dst->rsum += v[c];
			else
				dst->tsum += v[c];
		}
		dst->region = -1;
		free(v);
	}
	nr_pages = o;
	return 0;
}

/* First page at or above paddr. */
static size_t lower_bound(uint64_t paddr)
{
	size_t lo = 0, hi = nr_pages;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (pages[mid].paddr < paddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int region_of(const char *name)
{
	int i;

	for (i = 0; i < nr_regions; i++)
		if (!strcmp(regions[i].name, name))
			return i;
	regions = realloc(regions, (nr_regions + 1) * sizeof(*regions));
	if (!regions)
		return -1;
	snprintf(regions[nr_regions].name, sizeof(regions[0].name), "%s", name);
	return nr_regions++;
}

static int read_regions(const char *path)
{
	char line[512], name[64], range[128];
	unsigned long lineno = 0;
	FILE *f = fopen(path, "r");
	size_t i, j;

	if (!f) {
		err("cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		struct range r;
		char *end, *dash;

		lineno++;
		if (line[0] == '#' || sscanf(line, "%63s %127s", name, range) != 2)
			continue;
		errno = 0;
		r.start = strtoull(range, &end, 0);
		dash = end;
		if (*dash == '-')
			r.end = strtoull(dash + 1, &end, 0);
		else
			r.end = r.start + 1;
		if (errno || *end || r.end <= r.start) {
			err("%s:%lu: '%s' is not 0xPADDR or 0xSTART-0xEND", path,
			    lineno, range);
			fclose(f);
			return -1;
		}
		r.region = region_of(name);
		ranges = realloc(ranges, (nr_ranges + 1) * sizeof(*ranges));
		if (!ranges || r.region < 0) {
			err("out of memory");
			fclose(f);
			return -1;
		}
		ranges[nr_ranges++] = r;
	}
	fclose(f);
	/* Later lines win: every row whose paddr is in [start, end). */
	for (j = 0; j < nr_ranges; j++)
		for (i = lower_bound(ranges[j].start);
		     i < nr_pages && pages[i].paddr < ranges[j].end; i++)
			pages[i].region = ranges[j].region;
	return 0;
}

/* ------------------------------------------------------------ figures */

/* Does the truth's count fall inside the 95% interval of refcnt's? */
static int inside(uint64_t refs, uint64_t truth)
{
	uint64_t lo, hi;

	rt_count95(refs, opt.period, &lo, &hi);
	return truth >= lo && truth <= hi;
}

/* Does counter column c count the page's own (home) node? */
static int is_local(const struct page *p, int c)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%d", p->nid);
	return !strcmp(cols.label[c], buf);
}

/* The column making most of v's references (the first of equals), or -1. */
static int majority(const uint64_t *v)
{
	int c, best = -1;

	for (c = 0; c < cols.nr; c++)
		if (v[c] && (best < 0 || v[c] > v[best]))
			best = c;
	return best;
}

/* Which pages a set of figures is about. */
struct scope {
	int region;			/* -2: any, -3: any named one */
	int nid;			/* home node, -2: any */
};

static int in_scope(const struct page *p, struct scope s)
{
	return (s.region == -2 || p->region == s.region ||
		(s.region == -3 && p->region >= 0)) &&
	       (s.nid == -2 || p->nid == s.nid);
}

struct figs {
	uint64_t tref, rref;		/* references: refcnt, truth */
	uint64_t tpages, rpages;	/* pages with any */
	uint64_t covered, attributed;	/* truth references on such pages */
	uint64_t tremote, rremote;	/* references from another node */
	double rho;			/* rank correlation, NAN: none */
	uint64_t ipages, inside;	/* --period: pages judged, truth inside */
	uint64_t tby[MAX_COLS], rby[MAX_COLS];	/* by accessing column */
	uint64_t tremote_by[MAX_COLS], rremote_by[MAX_COLS];
};

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / b : NAN;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = **(const double **)a, y = **(const double **)b;

	return x < y ? -1 : x > y;
}

/* Ranks of v[0..n) into rank[], ties given their average rank. */
static void ranks(const double *v, double *rank, size_t n)
{
	const double **ix = malloc(n * sizeof(*ix));
	size_t i, j;

	for (i = 0; i < n; i++)
		ix[i] = &v[i];
	qsort(ix, n, sizeof(*ix), dbl_cmp);
	for (i = 0; i < n; i = j) {
		double avg;
		size_t k;

		for (j = i + 1; j < n && *ix[j] == *ix[i]; j++)
			;
		avg = (i + 1 + j) / 2.0;	/* of ranks i + 1 .. j */
		for (k = i; k < j; k++)
			rank[ix[k] - v] = avg;
	}
	free(ix);
}

/* Spearman's rank correlation of x and y (Pearson's of their ranks). */
static double spearman(const double *x, const double *y, size_t n)
{
	double *rx, *ry, mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
	size_t i;

	if (n < 2)
		return NAN;
	rx = malloc(n * sizeof(*rx));
	ry = malloc(n * sizeof(*ry));
	ranks(x, rx, n);
	ranks(y, ry, n);
	for (i = 0; i < n; i++) {
		mx += rx[i] / n;
		my += ry[i] / n;
	}
	for (i = 0; i < n; i++) {
		sxy += (rx[i] - mx) * (ry[i] - my);
		sxx += (rx[i] - mx) * (rx[i] - mx);
		syy += (ry[i] - my) * (ry[i] - my);
	}
	free(rx);
	free(ry);
	return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

static void figures(struct scope s, struct figs *f)
{
	double *x = malloc((nr_pages + 1) * sizeof(*x));
	double *y = malloc((nr_pages + 1) * sizeof(*y));
	size_t i, n = 0;
	int c;

	memset(f, 0, sizeof(*f));
	for (i = 0; i < nr_pages; i++) {
		const struct page *p = &pages[i];

		if (!in_scope(p, s))
			continue;
		f->tref += p->tsum;
		f->rref += p->rsum;
		f->tpages += !!p->tsum;
		f->rpages += !!p->rsum;
		if (p->tsum)
			f->covered += p->rsum;
		if (p->tsum && p->rsum && majority(p->t) == majority(p->r))
			f->attributed += p->rsum;
		if (opt.period && (p->tsum || p->rsum)) {
			f->ipages++;
			f->inside += inside(p->tsum, p->rsum);
		}
		for (c = 0; c < cols.nr; c++) {
			f->tby[c] += p->t[c];
			f->rby[c] += p->r[c];
			if (is_local(p, c))
				continue;
			f->tremote += p->t[c];
			f->rremote += p->r[c];
			f->tremote_by[c] += p->t[c];
			f->rremote_by[c] += p->r[c];
		}
		if (p->rsum) {
			x[n] = (double)p->tsum;
			y[n++] = (double)p->rsum;
		}
	}
	f->rho = spearman(x, y, n);
	free(x);
	free(y);
}

/* ------------------------------------------------------------ hot pages */

static int by_t(const void *a, const void *b)
{
	const struct page *x = *(struct page *const *)a, *y = *(struct page *const *)b;

	if (x->tsum != y->tsum)
		return x->tsum > y->tsum ? -1 : 1;
	return x->paddr < y->paddr ? -1 : x->paddr > y->paddr;
}

static int by_r(const void *a, const void *b)
{
	const struct page *x = *(struct page *const *)a, *y = *(struct page *const *)b;

	if (x->rsum != y->rsum)
		return x->rsum > y->rsum ? -1 : 1;
	return x->paddr < y->paddr ? -1 : x->paddr > y->paddr;
}

struct hot {
	uint64_t k, tk, rk, both;	/* k asked, refcnt's and truth's top, common */
};

/* Precision = both / tk, recall = both / rk (pages with counts only). */
static void hot_pages(uint64_t k, struct hot *h)
{
	struct page **t = malloc((nr_pages + 1) * sizeof(*t));
	struct page **r = malloc((nr_pages + 1) * sizeof(*r));
	size_t i, j;

	for (i = 0; i < nr_pages; i++)
		t[i] = r[i] = &pages[i];
	qsort(t, nr_pages, sizeof(*t), by_t);
	qsort(r, nr_pages, sizeof(*r), by_r);
	memset(h, 0, sizeof(*h));
	h->k = k;
	for (i = 0; i < nr_pages && i < k && t[i]->tsum; i++)
		h->tk++;
	for (i = 0; i < nr_pages && i < k && r[i]->rsum; i++)
		h->rk++;
	for (i = 0; i < h->tk; i++)
		for (j = 0; j < h->rk; j++)
			if (t[i] == r[j]) {
				h->both++;
				break;
			}
	free(t);
	free(r);
}

/* ------------------------------------------------------------ misplacement */

struct place {
	int home;			/* column of the node most pages are on */
	int truth_major, ref_major;	/* column making most references */
	int misplaced;			/* truth: the advice rule on true counts */
	int advised;			/* refcnt-run's rule on refcnt's counts */
};

static void placement(int region, const struct figs *f, struct place *pl)
{
	uint64_t on[MAX_COLS] = { 0 };
	size_t i;
	int c, best = -1;

	for (i = 0; i < nr_pages; i++) {
		if (pages[i].region != region || !(pages[i].tsum + pages[i].rsum))
			continue;
		for (c = 0; c < cols.nr; c++)
			if (is_local(&pages[i], c))
				on[c]++;
	}
	for (c = 0; c < cols.nr; c++)
		if (on[c] && (best < 0 || on[c] > on[best]))
			best = c;
	pl->home = best;
	pl->truth_major = majority(f->rby);
	pl->ref_major = majority(f->tby);
	/* The same rule on the true counts: perfect counts score 100%. */
	pl->misplaced = pl->truth_major >= 0 && pl->truth_major != best &&
			f->rref >= opt.min_refs &&
			100.0 * f->rby[pl->truth_major] >= opt.min_share * f->rref;
	pl->advised = pl->ref_major >= 0 && pl->ref_major != best &&
		      f->tref >= opt.min_refs &&
		      100.0 * f->tby[pl->ref_major] >= opt.min_share * f->tref;
}

/* ------------------------------------------------------------ output */

static void pct(FILE *o, double v)
{
	if (isnan(v))
		fprintf(o, "%8s", "-");
	else
		fprintf(o, "%7.1f%%", 100 * v);
}

static void jnum(FILE *o, const char *key, double v, int comma)
{
	if (isnan(v))
		fprintf(o, "\"%s\": null%s", key, comma ? ", " : "");
	else
		fprintf(o, "\"%s\": %.6g%s", key, v, comma ? ", " : "");
}

static void text_row(FILE *o, const char *what, const struct figs *f)
{
	fprintf(o, "%-24s", what);
	pct(o, ratio(f->covered, f->rref));
	pct(o, ratio(f->attributed, f->rref));
	pct(o, ratio(f->tremote, f->tref));
	pct(o, ratio(f->rremote, f->rref));
	if (isnan(f->rho))
		fprintf(o, "%8s", "-");
	else
		fprintf(o, "%8.3f", f->rho);
	fprintf(o, " %12llu %12llu %8llu %8llu\n", (unsigned long long)f->tref,
		(unsigned long long)f->rref, (unsigned long long)f->tpages,
		(unsigned long long)f->rpages);
}

static void json_figs(FILE *o, const struct figs *f)
{
	fprintf(o, "\"refs\": %llu, \"true_refs\": %llu, \"pages\": %llu, \"true_pages\": %llu, ",
		(unsigned long long)f->tref, (unsigned long long)f->rref,
		(unsigned long long)f->tpages, (unsigned long long)f->rpages);
	jnum(o, "coverage", ratio(f->covered, f->rref), 1);
	jnum(o, "attribution", ratio(f->attributed, f->rref), 1);
	jnum(o, "remote_share", ratio(f->tremote, f->tref), 1);
	jnum(o, "true_remote_share", ratio(f->rremote, f->rref), 1);
	jnum(o, "rank_correlation", f->rho, 0);
	if (!opt.period)
		return;
	fprintf(o, ", \"interval_pages\": %llu, \"interval_inside\": %llu, ",
		(unsigned long long)f->ipages, (unsigned long long)f->inside);
	jnum(o, "interval_coverage", ratio(f->inside, f->ipages), 0);
}

static const char *col_name(int c)
{
	return c >= 0 ? cols.label[c] : "-";
}

/* Everything before the regions, as JSON. */
static void json_head(FILE *o, const struct figs *all, const struct hot *hot)
{
	struct figs f;
	int r, c, first = 1;

	fprintf(o, "{\"overall\": {");
	json_figs(o, all);
	if (nr_regions) {
		figures((struct scope){ -3, -2 }, &f);
		fprintf(o, "},\n \"in_regions\": {");
		json_figs(o, &f);
	}
	fprintf(o, "},\n \"hot_pages\": [");
	for (r = 0; r < 2; r++) {
		fprintf(o, "%s{\"k\": %llu, \"refcnt\": %llu, \"truth\": %llu, \"common\": %llu, ",
			r ? ", " : "", (unsigned long long)hot[r].k,
			(unsigned long long)hot[r].tk, (unsigned long long)hot[r].rk,
			(unsigned long long)hot[r].both);
		jnum(o, "precision", ratio(hot[r].both, hot[r].tk), 1);
		jnum(o, "recall", ratio(hot[r].both, hot[r].rk), 0);
		fprintf(o, "}");
	}
	fprintf(o, "],\n \"accessing_nodes\": [");
	for (c = 0; c < cols.nr; c++) {
		fprintf(o, "%s{\"node\": ", c ? ", " : "");
		rt_json_str(o, cols.label[c]);
		fprintf(o, ", \"refs\": %llu, \"true_refs\": %llu, ",
			(unsigned long long)all->tby[c],
			(unsigned long long)all->rby[c]);
		jnum(o, "remote_share", ratio(all->tremote_by[c], all->tby[c]), 1);
		jnum(o, "true_remote_share", ratio(all->rremote_by[c], all->rby[c]), 0);
		fprintf(o, "}");
	}
	fprintf(o, "],\n \"home_nodes\": [");
	for (c = 0; c < cols.nr; c++) {
		figures((struct scope){ -2, atoi(cols.label[c]) }, &f);
		if (!f.tpages && !f.rpages)
			continue;
		fprintf(o, "%s{\"node\": ", first ? "" : ",\n   ");
		rt_json_str(o, cols.label[c]);
		fprintf(o, ", ");
		json_figs(o, &f);
		fprintf(o, "}");
		first = 0;
	}
	fprintf(o, "],\n \"regions\": [");
}

/* Everything before the regions, as text. */
static void text_head(FILE *o, const struct figs *all)
{
	struct figs f;
	char what[48];
	int c;

	fprintf(o, "%-24s%8s%8s%8s%8s%8s %12s %12s %8s %8s\n", "", "cover",
		"attrib", "remote", "remote", "rank", "refs", "refs", "pages",
		"pages");
	fprintf(o, "%-24s%8s%8s%8s%8s%8s %12s %12s %8s %8s\n", "", "", "",
		"refcnt", "truth", "corr", "refcnt", "truth", "refcnt", "truth");
	text_row(o, "overall", all);
	if (nr_regions) {
		figures((struct scope){ -3, -2 }, &f);
		text_row(o, "in the regions", &f);
	}
	for (c = 0; c < cols.nr; c++) {
		figures((struct scope){ -2, atoi(cols.label[c]) }, &f);
		if (!f.tpages && !f.rpages)
			continue;
		snprintf(what, sizeof(what), "pages on node %s", cols.label[c]);
		text_row(o, what, &f);
	}
}

/* A line per region; adds up the misplacement counts, and the regions
 * whose true references are inside the interval of refcnt's (--period).
 */
static void regions_out(FILE *o, uint64_t *adv, uint64_t *mis, uint64_t *both,
			uint64_t *in)
{
	struct figs f;
	struct place pl;
	char what[80];
	int r;

	for (r = 0; r < nr_regions; r++) {
		figures((struct scope){ r, -2 }, &f);
		placement(r, &f, &pl);
		*adv += pl.advised;
		*mis += pl.misplaced;
		*both += pl.advised && pl.misplaced;
		*in += opt.period && inside(f.tref, f.rref);
		if (!opt.json) {
			snprintf(what, sizeof(what), "region %s", regions[r].name);
			text_row(o, what, &f);
			continue;
		}
		/* The names come from the files: any bytes (rjson.h). */
		fprintf(o, "%s{\"name\": ", r ? ",\n   " : "");
		rt_json_str(o, regions[r].name);
		fprintf(o, ", \"home\": ");
		rt_json_str(o, col_name(pl.home));
		fprintf(o, ", \"true_major\": ");
		rt_json_str(o, col_name(pl.truth_major));
		fprintf(o, ", \"major\": ");
		rt_json_str(o, col_name(pl.ref_major));
		fprintf(o, ", \"misplaced\": %s, \"advised\": %s, ",
			pl.misplaced ? "true" : "false",
			pl.advised ? "true" : "false");
		json_figs(o, &f);
		if (opt.period)
			fprintf(o, ", \"inside\": %s",
				inside(f.tref, f.rref) ? "true" : "false");
		fprintf(o, "}");
	}
}

/* After the regions, as text: remote share by node, hot pages, advice. */
static void text_tail(FILE *o, const struct figs *all, const struct hot *hot,
		      uint64_t adv, uint64_t mis, uint64_t both)
{
	int r, c;

	fprintf(o, "\nremote share by accessing node (refcnt / truth):");
	for (c = 0; c < cols.nr; c++) {
		fprintf(o, "  n%s ", cols.label[c]);
		pct(o, ratio(all->tremote_by[c], all->tby[c]));
		fprintf(o, " /");
		pct(o, ratio(all->rremote_by[c], all->rby[c]));
	}
	fprintf(o, "\n");
	for (r = 0; r < 2; r++) {
		fprintf(o, "hot pages, top %llu: precision", (unsigned long long)hot[r].k);
		pct(o, ratio(hot[r].both, hot[r].tk));
		fprintf(o, ", recall");
		pct(o, ratio(hot[r].both, hot[r].rk));
		fprintf(o, " (%llu in common of %llu / %llu)\n",
			(unsigned long long)hot[r].both,
			(unsigned long long)hot[r].tk, (unsigned long long)hot[r].rk);
	}
	if (!nr_regions)
		return;
	fprintf(o, "misplaced regions: %llu in truth, %llu advised, %llu both: precision",
		(unsigned long long)mis, (unsigned long long)adv,
		(unsigned long long)both);
	pct(o, ratio(both, adv));
	fprintf(o, ", recall");
	pct(o, ratio(both, mis));
	fprintf(o, "\n");
}

/* --period, as text: the interval coverage of pages and regions. */
static void text_intervals(FILE *o, const struct figs *all, uint64_t in)
{
	struct figs f;

	if (!opt.period)
		return;
	fprintf(o, "95%% intervals (period %llu): the truth inside for",
		(unsigned long long)opt.period);
	pct(o, ratio(all->inside, all->ipages));
	fprintf(o, " of %llu pages", (unsigned long long)all->ipages);
	if (nr_regions) {
		figures((struct scope){ -3, -2 }, &f);
		fprintf(o, ",");
		pct(o, ratio(f.inside, f.ipages));
		fprintf(o, " of the regions' %llu, %llu of %d regions",
			(unsigned long long)f.ipages, (unsigned long long)in,
			nr_regions);
	}
	fprintf(o, "\n");
}

static int report(FILE *o)
{
	uint64_t adv = 0, mis = 0, both = 0, in = 0;
	struct figs all;
	struct hot hot[2];

	figures((struct scope){ -2, -2 }, &all);
	hot_pages(100, &hot[0]);
	hot_pages(all.rpages / 100 ? all.rpages / 100 : 1, &hot[1]);
	if (opt.json)
		json_head(o, &all, hot);
	else
		text_head(o, &all);
	regions_out(o, &adv, &mis, &both, &in);
	if (!opt.json) {
		text_tail(o, &all, hot, adv, mis, both);
		text_intervals(o, &all, in);
		return ferror(o) ? -1 : 0;
	}
	fprintf(o, "],\n \"misplacement\": {\"regions\": %d, \"misplaced\": %llu, \"advised\": %llu, \"both\": %llu, ",
		nr_regions, (unsigned long long)mis, (unsigned long long)adv,
		(unsigned long long)both);
	jnum(o, "precision", ratio(both, adv), 1);
	jnum(o, "recall", ratio(both, mis), 0);
	fprintf(o, "}");
	if (opt.period) {
		fprintf(o, ",\n \"intervals\": {\"period\": %llu, \"confidence\": 0.95, \"regions\": %d, \"regions_inside\": %llu, ",
			(unsigned long long)opt.period, nr_regions,
			(unsigned long long)in);
		jnum(o, "region_coverage", ratio(in, nr_regions), 0);
		fprintf(o, "}");
	}
	fprintf(o, "}\n");
	return ferror(o) ? -1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "regions", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "min-share", required_argument, NULL, 'S' },
		{ "min-refs", required_argument, NULL, 'R' },
		{ "period", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char *end;
	int o;

	opterr = 0;	/* one line of ours instead of getopt's */
	while ((o = getopt_long(argc, argv, "r:jp:h", lo, NULL)) != -1) {
		switch (o) {
		case 'r': opt.regions = optarg; break;
		case 'j': opt.json = 1; break;
		case 'S':
			opt.min_share = strtod(optarg, &end);
			if (*end || opt.min_share <= 0 || opt.min_share > 100) {
				err("--min-share: '%s' is not a percentage in (0, 100]", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'R':
			opt.min_refs = strtoull(optarg, &end, 10);
			if (*end || !*optarg) {
				err("--min-refs: '%s' is not a number", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'p':
			opt.period = strtoull(optarg, &end, 10);
			if (*end || !*optarg || !opt.period) {
				err("--period: '%s' is not a period (1 or more)", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h': usage(stdout); return 0;
		default:
			err("unknown option or missing argument '%s' (see --help)",
			    argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		err("need two files, the tables and the truth (see --help)");
		return EXIT_USAGE;
	}
	if (read_table(argv[optind], 0) || read_table(argv[optind + 1], 1))
		return 1;
	if (merge())
		return 1;
	if (opt.regions && read_regions(opt.regions))
		return 1;
	if (report(stdout)) {
		err("cannot write the report: %s", strerror(errno));
		return 1;
	}
	return 0;
}
