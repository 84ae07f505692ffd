// SPDX-License-Identifier: GPL-2.0
/*
 * conflict-arrays: MACPO's controlled trace as a program. Two arrays,
 * array_a and array_b, of 8 rows of 4 KiB each; every round reads the
 * first byte of each row of array_a, then of array_b. All 16 lines map to
 * set 0 of a 32 KiB, 8-way, 64-byte-line cache (64 sets, 4 KiB apart), so
 * in that cache (refcnt-conflicts --cache l1) every access after the first
 * round is a conflict miss: 8 x (ROUNDS - 1) per array, and 8 cold misses
 * each. With "pad", array_b's reads are 64 bytes further, in set 1: no
 * conflict, every access after the first round hits.
 *
 *   conflict-arrays [ROUNDS [pad]]     (default 10 rounds)
 *
 * Its trace: under valgrind --tool=lackey --trace-mem=yes, or in a guest
 * with refcnt-vm --trace (it marks its loop with the truth window's marks
 * when built for x86-64 with -DTRUTH_MARKS and tools/testing/truth/ in
 * the path: the marks are x86 NOPs, and the guests are x86).
 * The variables: nm -S conflict-arrays, for refcnt-conflicts --regions.
 */
#include <stdlib.h>
#include <string.h>

#if defined(TRUTH_MARKS) && defined(__x86_64__)
#include "truth-mark.h"
#else
#define truth_mark_start()	do { } while (0)
#define truth_mark_stop()	do { } while (0)
#endif

/* One 1-byte load, as the trace shows it (a plain volatile read elsewhere). */
#ifdef __x86_64__
#define load_byte(p)							\
	do {								\
		char v_;						\
		__asm__ volatile("movb (%1), %0" : "=r"(v_)		\
				 : "r"(p) : "memory");			\
	} while (0)
#else
#define load_byte(p)	((void)*(volatile const char *)(p))
#endif

#define ROWS	8
#define ROW	4096

char array_a[ROWS * ROW] __attribute__((aligned(ROW)));
char array_b[ROWS * ROW] __attribute__((aligned(ROW)));

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 10, r;
	int pad = argc > 2 && !strcmp(argv[2], "pad") ? 64 : 0, i;

	truth_mark_start();
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < ROWS; i++)
			load_byte(array_a + i * ROW);
		for (i = 0; i < ROWS; i++)
			load_byte(array_b + i * ROW + pad);
	}
	truth_mark_stop();
	return 0;
}
