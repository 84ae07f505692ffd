/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the trace analyses (refcnt-trace, -replay, -sharing, -policy,
 * -tdist, -conflicts) share beyond reading traces: output files written
 * whole or not at all, and small helpers. trace-tool.c.
 */
#ifndef REFCNT_TRACE_TOOL_H
#define REFCNT_TRACE_TOOL_H

#include <stdint.h>
#include <stdio.h>

/*
 * An output file written as PATH.tmp and renamed to PATH by tt_commit()
 * ("-": standard output, written as it comes). NULL with the cause
 * printed.
 */
struct tt_out {
	FILE *f;
	char *path, *tmp;
};
int tt_open(struct tt_out *o, const char *path);
/* Flush, close, rename: 0, or -1 with the cause printed (and PATH.tmp gone). */
int tt_commit(struct tt_out *o);
/* Close and remove PATH.tmp. */
void tt_discard(struct tt_out *o);

/* 100 * a / b, 0 when b is 0. */
double tt_pct(uint64_t a, uint64_t b);

/*
 * A list of node ids "0,1,3" (or ranges "0-3") into a malloc'ed array:
 * how many, or -1 (printed as the option's error).
 */
int tt_parse_nodes(const char *opt, const char *s, int **nids);
/*
 * A thread-to-node map "0=1,1=0,2-3=4": map[thread] = node for the
 * threads named (entries not named keep their value). 0 or -1 (printed).
 */
int tt_parse_map(const char *s, int *map, int nr);

#endif /* REFCNT_TRACE_TOOL_H */
