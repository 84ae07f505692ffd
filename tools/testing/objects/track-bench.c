// SPDX-License-Identifier: GPL-2.0
/*
 * track-bench: the workloads of refcnt-run's benchmarks (objects-bench,
 * make bench), run with and without librefcnt-track.so preloaded.
 *
 *   track-bench calls N SIZE     N malloc(SIZE) + free() pairs: CPU ns a pair
 *   track-bench trees DEPTH N    binary trees (the Benchmarks Game's): N
 *                                rounds of building and freeing a tree of
 *                                2^DEPTH nodes, malloc-heavy: CPU seconds
 *   track-bench objects N SIZE   N allocations of SIZE bytes from 100 call
 *                                sites (each with its own stack), touched,
 *                                then the process stops itself (SIGSTOP)
 *                                for objects-bench to read
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU time of the process: less at the mercy of a busy machine than wall time. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct node {
	struct node *l, *r;
};

static struct node *build(int depth)
{
	struct node *n = malloc(sizeof(*n));

	if (!n)
		exit(1);
	n->l = depth ? build(depth - 1) : NULL;
	n->r = depth ? build(depth - 1) : NULL;
	return n;
}

static long check(struct node *n)
{
	long c = 1 + (n->l ? check(n->l) + check(n->r) : 0);

	free(n);
	return c;
}

#define SITE(n) \
	__attribute__((noinline)) static void *site##n(size_t s) \
	{ void *p = malloc(s); __asm__ volatile("" ::: "memory"); return p; }
SITE(0)
SITE(1)
SITE(2)
SITE(3)
SITE(4)
SITE(5)
SITE(6)
SITE(7)
SITE(8)
SITE(9)
SITE(10)
SITE(11)
SITE(12)
SITE(13)
SITE(14)
SITE(15)
SITE(16)
SITE(17)
SITE(18)
SITE(19)
SITE(20)
SITE(21)
SITE(22)
SITE(23)
SITE(24)
SITE(25)
SITE(26)
SITE(27)
SITE(28)
SITE(29)
SITE(30)
SITE(31)
SITE(32)
SITE(33)
SITE(34)
SITE(35)
SITE(36)
SITE(37)
SITE(38)
SITE(39)
SITE(40)
SITE(41)
SITE(42)
SITE(43)
SITE(44)
SITE(45)
SITE(46)
SITE(47)
SITE(48)
SITE(49)
SITE(50)
SITE(51)
SITE(52)
SITE(53)
SITE(54)
SITE(55)
SITE(56)
SITE(57)
SITE(58)
SITE(59)
SITE(60)
SITE(61)
SITE(62)
SITE(63)
SITE(64)
SITE(65)
SITE(66)
SITE(67)
SITE(68)
SITE(69)
SITE(70)
SITE(71)
SITE(72)
SITE(73)
SITE(74)
SITE(75)
SITE(76)
SITE(77)
SITE(78)
SITE(79)
SITE(80)
SITE(81)
SITE(82)
SITE(83)
SITE(84)
SITE(85)
SITE(86)
SITE(87)
SITE(88)
SITE(89)
SITE(90)
SITE(91)
SITE(92)
SITE(93)
SITE(94)
SITE(95)
SITE(96)
SITE(97)
SITE(98)
SITE(99)

static void *(*const sites[100])(size_t) = { site0, site1, site2, site3, site4, site5, site6, site7, site8, site9, site10, site11, site12, site13, site14, site15, site16, site17, site18, site19, site20, site21, site22, site23, site24, site25, site26, site27, site28, site29, site30, site31, site32, site33, site34, site35, site36, site37, site38, site39, site40, site41, site42, site43, site44, site45, site46, site47, site48, site49, site50, site51, site52, site53, site54, site55, site56, site57, site58, site59, site60, site61, site62, site63, site64, site65, site66, site67, site68, site69, site70, site71, site72, site73, site74, site75, site76, site77, site78, site79, site80, site81, site82, site83, site84, site85, site86, site87, site88, site89, site90, site91, site92, site93, site94, site95, site96, site97, site98, site99 };

int main(int argc, char **argv)
{
	volatile uintptr_t sink = 0;
	double t0;
	long i, n;

	if (argc < 4) {
		fprintf(stderr, "usage: track-bench calls N SIZE | trees DEPTH N | objects N SIZE\n");
		return 2;
	}
	n = atol(argv[2]);
	t0 = now();
	if (!strcmp(argv[1], "calls")) {
		size_t size = strtoul(argv[3], NULL, 0);

		for (i = 0; i < n; i++) {
			void *p = malloc(size);

			sink += (uintptr_t)p;
			free(p);
		}
		printf("%.1f ns per malloc+free of %zu bytes\n",
		       (now() - t0) * 1e9 / n, size);
	} else if (!strcmp(argv[1], "trees")) {
		long rounds = atol(argv[3]), total = 0;

		for (i = 0; i < rounds; i++)
			total += check(build((int)n));
		printf("%.3f s for %ld nodes\n", now() - t0, total);
	} else if (!strcmp(argv[1], "objects")) {
		size_t size = strtoul(argv[3], NULL, 0);

		for (i = 0; i < n; i++) {
			char *p = sites[i % 100](size);

			if (!p)
				return 1;
			memset(p, 1, size);
		}
		printf("%ld objects\n", n);
		fflush(stdout);
		raise(SIGSTOP);
	}
	return sink == 1;
}
