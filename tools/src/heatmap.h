/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Heatmaps of counts (rows x accessing node) as SVG or PNG images, for
 * the refcnt tools that draw (refcnt-run, refcnt-dump); heatmap.c.
 */
#ifndef REFCNT_HEATMAP_H
#define REFCNT_HEATMAP_H

#include "rtools.h"

/**
 * struct rt_heatmap - a grid of counts and how to label it
 * @rows, @cols:	grid size; cell (r, c) is v[r * cols + c]
 * @v:			counts, >= 0
 * @row_label:		rows labels (NULL entries: none)
 * @col_label:		column labels
 * @row_group:		a group per row, drawn as a coloured band with its
 *			name and separators (e.g. the home node), or NULL;
 *			-1: none
 * @group_name:		names of the groups (indexed by row_group)
 * @nr_groups:		entries of group_name
 * @mark:		cells to outline (e.g. the row's home node), rows *
 *			cols booleans, or NULL
 * @title, @xlabel, @ylabel: texts
 * @unit:		what the colour counts ("references")
 * @note:		one line under the legend, or NULL
 */
struct rt_heatmap {
	int rows, cols;
	double *v;
	char **row_label;
	char **col_label;
	int *row_group;
	char **group_name;
	int nr_groups;
	unsigned char *mark;
	const char *title, *xlabel, *ylabel, *unit, *note;
};

/* Arrays of rows x the counters of c, columns named: 0, or -1 (no memory). */
int rt_heatmap_alloc(struct rt_heatmap *hm, const struct rt_counters *c,
		     int rows);
/* Free what rt_heatmap_alloc() took and the row and group names in it. */
void rt_heatmap_free(struct rt_heatmap *hm);

/* Whether path ends in .svg or .png (any case): a name it can write. */
int rt_heatmap_name_ok(const char *path);

/*
 * Write the heatmap to path as an SVG or PNG image (by the name's
 * extension, .svg or .png) of exactly width x height pixels. 0, or -1
 * with the cause printed.
 */
int rt_heatmap_write(const struct rt_heatmap *hm, const char *path,
		     int width, int height);

/**
 * struct rt_bars - a bar chart of values over equal steps (a histogram
 *		    of events over time, refcnt-tdist)
 * @n:		bars
 * @v:		their heights, >= 0
 * @x0, @xstep:	where the first bar starts and each bar's width, in the
 *		x axis' unit
 * @title, @xlabel, @ylabel: texts (NULL: none)
 */
struct rt_bars {
	int n;
	const double *v;
	double x0, xstep;
	const char *title, *xlabel, *ylabel;
};

/* Write the chart as SVG or PNG (by path's extension), like the heatmaps. */
int rt_bars_write(const struct rt_bars *b, const char *path, int width,
		  int height);

#endif /* REFCNT_HEATMAP_H */
