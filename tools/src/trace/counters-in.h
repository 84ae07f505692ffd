/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The counters as the analyses read them, set by set: from the module
 * (every node's table through librefcnt, after RCB_SYNC: extended +
 * hardware counts, as refcnt-dump reads them) or from a table in the
 * layout of refcnt-dump --csv (a saved dump, or the refcnt-truth plugin's
 * truth). counters-in.c.
 */
#ifndef REFCNT_COUNTERS_IN_H
#define REFCNT_COUNTERS_IN_H

#include <stdint.h>
#include <stdio.h>

#define CI_MAX_COLS	64

struct ci_set {
	uint64_t paddr;		/* of the set's hardware page */
	int home;		/* node id of its memory */
	uint64_t refs[CI_MAX_COLS];	/* by counter (accessing node) */
	uint64_t lost;
};

struct ci_reader {
	int nr_cols;
	int col_nid[CI_MAX_COLS];	/* first node id a counter counts */
	char col_label[CI_MAX_COLS][24];
	uint64_t granularity;
	const char *what;		/* the file, or "the module" */
	/* csv */
	FILE *f;
	unsigned long line;
	int f_paddr, f_node, f_col[CI_MAX_COLS], f_lost;
	/* live */
	int nr_nodes, cur;
	int *nids;
	void *nodes;
	uint64_t set, nr_sets;
	uint32_t *hw, *ext, *lost;
	uint64_t chunk_first, chunk_n;
};

/* Where the counters come from: the options --counters, --node, --csv, --granularity. */
struct ci_source {
	int counters;		/* the module's */
	int node;		/* with counters: only this node's memory, or -1 */
	const char *csv;	/* a refcnt-dump --csv table */
	uint64_t granularity;	/* the table's hardware page size, 0: 4096 */
};

/* The getopt_long entries of those options (short c, n, C, g). */
#define CI_LONG_OPTIONS							\
	{ "counters", no_argument, NULL, 'c' },				\
	{ "node", required_argument, NULL, 'n' },			\
	{ "csv", required_argument, NULL, 'C' },			\
	{ "granularity", required_argument, NULL, 'g' }

/*
 * Option o (with its argument) if it is one of them: 1 taken, 0 not one,
 * -1 a bad value (printed).
 */
int ci_option(struct ci_source *src, int o, const char *arg);
/* Whether a source was given: 1, 0, or -1 when both (printed). */
int ci_given(const struct ci_source *src);
/* Open the source: 0, or -1 or a negative errno (printed). */
int ci_open(struct ci_reader *r, const struct ci_source *src);

/* A refcnt-dump --csv table ("-": standard input): 0, or -1 printed. */
int ci_open_csv(struct ci_reader *r, const char *path, uint64_t granularity);
/*
 * Every node of the module (only nid if >= 0): 0, or a negative errno as
 * rt_dev_error() gives it (printed).
 */
int ci_open_live(struct ci_reader *r, int nid);
/* The next set with references or lost ones: 1, 0 at the end, -1 printed. */
int ci_next(struct ci_reader *r, struct ci_set *s);
void ci_close(struct ci_reader *r);

#endif /* REFCNT_COUNTERS_IN_H */
