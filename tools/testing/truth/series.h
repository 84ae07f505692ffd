/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The truth over time (series=FILE): every series_ms of host time, one
 * line of the references counted so far, as a matrix of accessing node x
 * home node, all references and those that missed the LLC model. The
 * counts only grow while the truth's window is open, so a program's run
 * between a start and a stop mark is the difference of two lines, and
 * its remote share over time the differences of the lines in between.
 * Under TCG the guest's clock follows the host's, so host time is guest
 * time. See Documentation/testing.rst, "The truth over time".
 */
#ifndef SERIES_H
#define SERIES_H

#include <stdint.h>

extern int series_on;

/* series= and series_ms=: 1 not ours, 0 taken, -1 bad value. */
int series_parse_opt(const char *key, const char *v);
/*
 * Make the rows and start the writer thread. @vnode: each vCPU's cnodeid
 * (-1: none); @online: node ids by cnodeid; @window, @marks: the truth's
 * window flag and its count of start marks, read as they are.
 */
int series_install(int nr_vcpus, const int *vnode, const int *online,
		   int nr_online, const volatile int *window,
		   const volatile uint64_t *marks);
/* vCPU @vi's row: two counters (refs, misses) per home cnodeid. */
uint64_t *series_row(unsigned int vi);
/* One reference of a vCPU (its @row) to a page of node @home (cnodeid). */
static inline void series_ref(uint64_t *row, int home, int miss)
{
	row[2 * home]++;
	if (miss > 0)
		row[2 * home + 1]++;
}
/* The last line and close (atexit). 0 or -1. */
int series_close(void);

#endif
