// SPDX-License-Identifier: GPL-2.0
/* Page placement policies compared offline (policy.h). */
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define PL_REPLICATED	(-2)

static const char *const names[PL_NR] = {
	"now", "first-touch", "rr1", "rr2", "oracle", "majority",
};

const char *pl_name(enum pl_policy p)
{
	return p < PL_NR ? names[p] : "?";
}

int pl_parse(const char *s, enum pl_policy *p)
{
	int i;

	if (!strcmp(s, "as-placed") || !strcmp(s, "as-traced")) {
		*p = PL_NOW;
		return 0;
	}
	for (i = 0; i < PL_NR; i++)
		if (!strcmp(s, names[i])) {
			*p = i;
			return 0;
		}
	return -1;
}

int pl_init(struct pl_table *t, int nr_cols, const int *col_nid)
{
	memset(t, 0, sizeof(*t));
	t->nr_cols = nr_cols;
	t->col_nid = malloc(nr_cols * sizeof(int));
	if (!t->col_nid)
		return -1;
	memcpy(t->col_nid, col_nid, nr_cols * sizeof(int));
	return 0;
}

long pl_add(struct pl_table *t, uint64_t key)
{
	if (t->nr_pages == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		struct pl_page *p = realloc(t->pages, cap * sizeof(*p));
		uint64_t *r;

		if (!p)
			return -1;
		t->pages = p;
		r = realloc(t->refs, cap * t->nr_cols * sizeof(*r));
		if (!r)
			return -1;
		t->refs = r;
		t->cap = cap;
	}
	memset(&t->pages[t->nr_pages], 0, sizeof(t->pages[0]));
	t->pages[t->nr_pages].key = key;
	t->pages[t->nr_pages].first = PL_UNKNOWN;
	t->pages[t->nr_pages].owner = PL_UNKNOWN;
	t->pages[t->nr_pages].home = PL_UNKNOWN;
	memset(t->refs + t->nr_pages * t->nr_cols, 0, t->nr_cols * sizeof(uint64_t));
	return (long)t->nr_pages++;
}

void pl_free(struct pl_table *t)
{
	free(t->col_nid);
	free(t->pages);
	free(t->refs);
	memset(t, 0, sizeof(*t));
}

int pl_col(const struct pl_table *t, int nid)
{
	int c;

	for (c = 0; c < t->nr_cols; c++)
		if (t->col_nid[c] == nid)
			return c;
	return PL_UNKNOWN;
}

static int has_memory(int col, const int *mem, int nr_mem)
{
	int i;

	for (i = 0; i < nr_mem; i++)
		if (mem[i] == col)
			return 1;
	return 0;
}

static int on_memory(int col, const int *mem, int nr_mem, const int *fallback)
{
	if (col < 0 || has_memory(col, mem, nr_mem))
		return col;
	return fallback ? fallback[col] : mem[0];
}

/* The only column with references, or PL_UNKNOWN. */
static int only_col(const struct pl_table *t, size_t i)
{
	const uint64_t *r = t->refs + i * t->nr_cols;
	int c, only = PL_UNKNOWN;

	for (c = 0; c < t->nr_cols; c++) {
		if (!r[c])
			continue;
		if (only != PL_UNKNOWN)
			return PL_UNKNOWN;
		only = c;
	}
	return only;
}

static int is_private(const struct pl_table *t, size_t i, int *col)
{
	const struct pl_page *pg = &t->pages[i];

	*col = only_col(t, i);
	if (pg->threads_known)
		return pg->owner != PL_UNKNOWN && *col != PL_UNKNOWN;
	return *col != PL_UNKNOWN;
}

int pl_place(const struct pl_table *t, size_t i, enum pl_policy p,
	     const int *mem, int nr_mem, const int *fallback)
{
	const struct pl_page *pg = &t->pages[i];
	const uint64_t *r = t->refs + i * t->nr_cols;
	int col, k, best;

	switch (p) {
	case PL_NOW:
		return pg->home;
	case PL_FIRST_TOUCH:
		return on_memory(pg->first, mem, nr_mem, fallback);
	case PL_RR2:
		if (pg->code)
			return PL_REPLICATED;
		/* fall through */
	case PL_RR1:
		return mem[pg->key % nr_mem];
	case PL_ORACLE:
		if (pg->code)
			return PL_REPLICATED;
		if (is_private(t, i, &col))
			return on_memory(col, mem, nr_mem, fallback);
		return mem[pg->key % nr_mem];
	case PL_MAJORITY:
		best = mem[0];
		for (k = 1; k < nr_mem; k++)
			if (r[mem[k]] > r[best])
				best = mem[k];
		return best;
	default:
		return PL_UNKNOWN;
	}
}

void pl_compare(const struct pl_table *t, const int *mem, int nr_mem,
		const int *fallback, int code, struct pl_result *res)
{
	int known = 0, p, c;
	size_t i;

	memset(res, 0, sizeof(*res));
	res->with_code = code;
	for (p = 0; p < PL_NR; p++)
		res->valid[p] = nr_mem > 0;
	for (i = 0; i < t->nr_pages && nr_mem > 0; i++) {
		const uint64_t *r = t->refs + i * t->nr_cols;
		uint64_t sum = 0;

		for (c = 0; c < t->nr_cols; c++)
			sum += r[c];
		if (!sum || (t->pages[i].code && !code))
			continue;
		res->total += sum;
		res->pages++;
		res->code_pages += t->pages[i].code;
		if (only_col(t, i) == PL_UNKNOWN ||
		    (t->pages[i].threads_known && t->pages[i].owner == PL_UNKNOWN))
			res->shared_pages++;
		for (p = 0; p < PL_NR; p++) {
			int n = pl_place(t, i, p, mem, nr_mem, fallback);

			if (n == PL_REPLICATED) {
				res->local[p] += sum;
			} else if (n >= 0) {
				res->local[p] += r[n];
				known |= p == PL_NOW;
			} else if (p == PL_NOW) {
				res->now_unknown += sum;
			} else {
				res->valid[p] = 0;
			}
		}
	}
	/* now: not where no page's node is known, nor with code pages */
	if (!known || res->code_pages)
		res->valid[PL_NOW] = 0;
}

void pl_print_text(FILE *f, const struct pl_result *r)
{
	int p;

	if (r->valid[PL_NOW] && r->now_unknown)
		fprintf(f, "(now: %llu references to pages whose node is not known count remote)\n",
			(unsigned long long)r->now_unknown);
	fprintf(f, "%-12s %14s %14s %8s %8s\n", "policy", "local", "remote",
		"local%", "remote%");
	for (p = 0; p < PL_NR; p++) {
		if (!r->valid[p]) {
			fprintf(f, "%-12s %14s %14s %8s %8s\n", pl_name(p), "-", "-", "-", "-");
			continue;
		}
		fprintf(f, "%-12s %14llu %14llu %7.1f%% %7.1f%%\n", pl_name(p),
			(unsigned long long)r->local[p],
			(unsigned long long)(r->total - r->local[p]),
			r->total ? 100.0 * r->local[p] / r->total : 0,
			r->total ? 100.0 * (r->total - r->local[p]) / r->total : 0);
	}
}

void pl_print_json(FILE *f, const struct pl_result *r)
{
	int p;

	fprintf(f, "{\"with_code\": %s, \"references\": %llu, \"pages\": %llu, \"shared_pages\": %llu, "
		"\"code_pages\": %llu, \"now_unknown\": %llu, \"policies\": {",
		r->with_code ? "true" : "false",
		(unsigned long long)r->total, (unsigned long long)r->pages,
		(unsigned long long)r->shared_pages, (unsigned long long)r->code_pages,
		(unsigned long long)r->now_unknown);
	for (p = 0; p < PL_NR; p++) {
		fprintf(f, "%s\"%s\": ", p ? ", " : "", pl_name(p));
		if (!r->valid[p])
			fprintf(f, "null");
		else
			fprintf(f, "{\"local\": %llu, \"remote\": %llu, \"local_pct\": %.2f}",
				(unsigned long long)r->local[p],
				(unsigned long long)(r->total - r->local[p]),
				r->total ? 100.0 * r->local[p] / r->total : 0);
	}
	fprintf(f, "}}");
}

static double remote_pct(const struct pl_result *r, int p)
{
	return r->total ? 100.0 * (r->total - r->local[p]) / r->total : 0;
}

void pl_sentence(FILE *f, const struct pl_result *r)
{
	fprintf(f, "interleaving (rr1) would make %.0f%% of references remote",
		remote_pct(r, PL_RR1));
	if (r->valid[PL_FIRST_TOUCH])
		fprintf(f, ", first touch %.0f%%", remote_pct(r, PL_FIRST_TOUCH));
	fprintf(f, ", oracle placement %.0f%%, the best static placement %.0f%%",
		remote_pct(r, PL_ORACLE), remote_pct(r, PL_MAJORITY));
	if (r->valid[PL_NOW])
		fprintf(f, "; now %.0f%%", remote_pct(r, PL_NOW));
	fprintf(f, "\n");
}
