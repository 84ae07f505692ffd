/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Page placement policies compared offline, after CDAT's (Abandah 1996,
 * 5.1) without its coherence simulator: for a table of pages, each with
 * its references by accessing node, the share of references that would
 * be local under each policy. The table comes from a trace or from the
 * counters (refcnt-policy), or from any caller that has per-page counts
 * by node: refcnt-run can fill one from its snapshot and print
 * pl_sentence() after a run. policy.c.
 */
#ifndef REFCNT_POLICY_H
#define REFCNT_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum pl_policy {
	PL_NOW,		/* where the pages are now (the trace's or counters' home) */
	PL_FIRST_TOUCH,	/* on the node of the first reference (1Touch) */
	PL_RR1,		/* interleaved round robin over the memory nodes */
	PL_RR2,		/* RR1 with code pages replicated on every node */
	PL_ORACLE,	/* code replicated, private pages local, shared RR */
	PL_MAJORITY,	/* each page on the node that references it most */
	PL_NR
};

/* "now", "first-touch", "rr1", "rr2", "oracle", "majority". */
const char *pl_name(enum pl_policy p);
/* A name (or "as-placed" for now) to a policy: 0 or -1. */
int pl_parse(const char *s, enum pl_policy *p);

#define PL_UNKNOWN	(-1)

/**
 * struct pl_page - a page and what is known of it
 * @key:	the page number the round robin policies interleave by
 * @first:	column of the node of its first reference, PL_UNKNOWN
 * @owner:	the only thread that referenced it, PL_UNKNOWN when shared
 *		or not known (then private means one accessing node)
 * @threads_known: @owner is meaningful (traces)
 * @code:	a code page (replicated by rr2 and oracle)
 * @home:	column of the node it is on now, PL_UNKNOWN
 */
struct pl_page {
	uint64_t key;
	int first, owner, threads_known, code, home;
};

/**
 * struct pl_table - pages x accessing nodes
 * @nr_cols:	accessing nodes (columns)
 * @col_nid:	node id of each column
 * @pages:	the pages, @nr_pages of them
 * @refs:	references of page i from column c: refs[i * nr_cols + c]
 */
struct pl_table {
	int nr_cols;
	int *col_nid;
	size_t nr_pages, cap;
	struct pl_page *pages;
	uint64_t *refs;
};

/* An empty table over nr_cols nodes (col_nid copied): 0 or -1. */
int pl_init(struct pl_table *t, int nr_cols, const int *col_nid);
/* A new page, its counts zero: its index, or -1 (no memory). */
long pl_add(struct pl_table *t, uint64_t key);
void pl_free(struct pl_table *t);
/* The column of node nid, or PL_UNKNOWN. */
int pl_col(const struct pl_table *t, int nid);

/**
 * struct pl_result - one comparison
 * @total:	references of the table
 * @local:	of them local under each policy
 * @valid:	whether the policy could be evaluated (first touch needs the
 *		first references, now the homes)
 * @pages, @shared_pages, @code_pages: what the table held
 * @now_unknown: references to pages whose node is not known, counted
 *		remote under now (which is not evaluated when no page's is)
 */
struct pl_result {
	int with_code;		/* code pages were compared too */
	uint64_t total, local[PL_NR];
	int valid[PL_NR];
	uint64_t pages, shared_pages, code_pages, now_unknown;
};

/*
 * The node (column) each policy puts page i on, or PL_UNKNOWN, or -2 for
 * replicated. mem: the columns of the nodes with memory (nr_mem >= 1);
 * a page placed on a node without memory goes to fallback[column]
 * (a column with memory; NULL: the first of mem).
 */
int pl_place(const struct pl_table *t, size_t i, enum pl_policy p,
	     const int *mem, int nr_mem, const int *fallback);
/*
 * Compare the policies over the table's data pages, and with code its
 * code pages too (whose node now is not known: now is not evaluated).
 */
void pl_compare(const struct pl_table *t, const int *mem, int nr_mem,
		const int *fallback, int code, struct pl_result *r);

/* The table as text rows and as a JSON object. */
void pl_print_text(FILE *f, const struct pl_result *r);
void pl_print_json(FILE *f, const struct pl_result *r);
/*
 * One sentence for a run's report: "interleaving (rr1) would make 52% of
 * references remote, first touch 12%, oracle placement 9%, the best static
 * placement 5%; now 61%".
 */
void pl_sentence(FILE *f, const struct pl_result *r);

#endif /* REFCNT_POLICY_H */
