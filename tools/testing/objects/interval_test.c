// SPDX-License-Identifier: GPL-2.0
/*
 * The tools' 95% intervals of sampled counts on the host (make
 * interval-check): rt_poisson95() against Garwood's bounds, computed
 * apart from the incomplete gamma function (Poisson sums, bisected), and
 * rt_count95() as refcnt-run's reports and refcnt-compare --period use it
 * (tools/src/rinterval.c).
 */
#include <math.h>

#include "rinterval.h"
#include "kselftest_harness.h"

/* Garwood's 95% bounds: n, lower, upper (six decimals). */
static const double garwood[][3] = {
	{ 0, 0, 3.688879 },
	{ 1, 0.025318, 5.571643 },
	{ 2, 0.242209, 7.224688 },
	{ 5, 1.623486, 11.668332 },
	{ 10, 4.795389, 18.390356 },
	{ 20, 12.216520, 30.888378 },
	{ 50, 37.110964, 65.918767 },
	{ 100, 81.363991, 121.626794 },
	/* Above 100, the normal approximation: within 0.01. */
	{ 101, 82.266159, 122.724156 },
	{ 200, 173.240883, 229.721982 },
	{ 1000, 938.973018, 1063.952136 },
};

TEST(garwood_bounds)
{
	size_t i;

	for (i = 0; i < sizeof(garwood) / sizeof(garwood[0]); i++) {
		double lo, hi, tol = garwood[i][0] > 100 ? 1e-2 : 1e-6;

		rt_poisson95((uint64_t)garwood[i][0], &lo, &hi);
		EXPECT_LE(fabs(lo - garwood[i][1]), tol)
			TH_LOG("n=%g: lower %.6f, Garwood's %.6f", garwood[i][0],
			       lo, garwood[i][1]);
		EXPECT_LE(fabs(hi - garwood[i][2]), tol)
			TH_LOG("n=%g: upper %.6f, Garwood's %.6f", garwood[i][0],
			       hi, garwood[i][2]);
	}
}

/* The brief's three, to three decimals as the tables print them. */
TEST(known_values)
{
	double lo, hi;

	rt_poisson95(0, &lo, &hi);
	EXPECT_EQ(0, lo);
	EXPECT_EQ(3689, lround(hi * 1000));
	rt_poisson95(1, &lo, &hi);
	EXPECT_EQ(253, lround(lo * 1e4));
	EXPECT_EQ(5572, lround(hi * 1000));
	rt_poisson95(10, &lo, &hi);
	EXPECT_EQ(4795, lround(lo * 1000));
	EXPECT_EQ(1839, lround(hi * 100));
}

/*
 * Both bounds rise with n, across the switch to the approximation too,
 * and hold n and n + 1 (a count between n and n + 1 samples' worth).
 */
TEST(monotonic)
{
	double plo = -1, phi = 0, lo, hi;
	uint64_t n;

	for (n = 0; n <= 5000; n += n < 300 ? 1 : 97) {
		rt_poisson95(n, &lo, &hi);
		ASSERT_LT(plo, lo) TH_LOG("n=%llu: lower %.6f after %.6f",
					  (unsigned long long)n, lo, plo);
		ASSERT_LT(phi, hi);
		ASSERT_LE(lo, (double)n);
		ASSERT_GT(hi, (double)n + 1);
		if (!n)
			lo = -0.5;	/* 0 and then above it */
		plo = lo;
		phi = hi;
	}
}

TEST(counts)
{
	uint64_t lo, hi;

	/* Period 1: every reference counted, no interval. */
	rt_count95(12345, 1, &lo, &hi);
	EXPECT_EQ(12345UL, lo);
	EXPECT_EQ(12345UL, hi);
	rt_count95(0, 0, &lo, &hi);
	EXPECT_EQ(0UL, lo);
	EXPECT_EQ(0UL, hi);
	/* 10 samples of 64: 64 * [4.795389, 18.390356]. */
	rt_count95(640, 64, &lo, &hi);
	EXPECT_EQ(306UL, lo);
	EXPECT_EQ(1177UL, hi);
	/* Not a multiple of the period: still 10 samples. */
	rt_count95(650, 64, &lo, &hi);
	EXPECT_EQ(306UL, lo);
	EXPECT_EQ(1177UL, hi);
	/* No sample at period 1000: up to 3,689 references unseen. */
	rt_count95(0, 1000, &lo, &hi);
	EXPECT_EQ(0UL, lo);
	EXPECT_EQ(3689UL, hi);
	/* One sample of 10,000. */
	rt_count95(10000, 10000, &lo, &hi);
	EXPECT_EQ(253UL, lo);
	EXPECT_EQ(55717UL, hi);
}

TEST_HARNESS_MAIN
