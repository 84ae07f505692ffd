// SPDX-License-Identifier: GPL-2.0
/*
 * The 95% intervals of sampled counts (rinterval.h), for refcnt-run's
 * reports and refcnt-compare --period: libm only, no librefcnt.
 */
#include <math.h>

#include "rinterval.h"

/*
 * The regularized lower incomplete gamma function P(a, x), a > 0: its
 * series below a + 1, Lentz's continued fraction of Q = 1 - P above
 * (Numerical Recipes' gammp).
 */
static double gamma_p(double a, double x)
{
	double lg = lgamma(a), sum, term, b, c, d, h, an;
	int i;

	if (x <= 0)
		return 0;
	if (x < a + 1) {
		term = sum = 1 / a;
		for (i = 1; i < 10000 && fabs(term) > fabs(sum) * 1e-15; i++) {
			term *= x / (a + i);
			sum += term;
		}
		return sum * exp(-x + a * log(x) - lg);
	}
	b = x + 1 - a;
	c = 1 / 1e-300;
	d = 1 / b;
	h = d;
	for (i = 1; i < 10000; i++) {
		an = -i * (i - a);
		b += 2;
		d = an * d + b;
		d = fabs(d) < 1e-300 ? 1e-300 : d;
		c = b + an / c;
		c = fabs(c) < 1e-300 ? 1e-300 : c;
		d = 1 / d;
		h *= d * c;
		if (fabs(d * c - 1) < 1e-15)
			break;
	}
	return 1 - exp(-x + a * log(x) - lg) * h;
}

/* The x at which P(a, x) = p, by bisection (P rises with x). */
static double gamma_p_inv(double a, double p)
{
	double lo = 0, hi = a + 20 * sqrt(a) + 20, mid;
	int i;

	for (i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
		mid = (lo + hi) / 2;
		if (gamma_p(a, mid) < p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

#define POISSON_EXACT_MAX	100
#define Z975			1.959963984540054

/*
 * Garwood: the lower bound L has P(X >= n | L) = 2.5%, which is
 * P(n, L); the upper U has P(X <= n | U) = 2.5%, which is
 * 1 - P(n + 1, U). Exact bounds are kept once computed: the tools ask
 * for the same small n over and over (a page, an object).
 */
void rt_poisson95(uint64_t n, double *lo, double *hi)
{
	static double tab[POISSON_EXACT_MAX + 1][2];
	static char known[POISSON_EXACT_MAX + 1];
	double m, m1;

	if (n <= POISSON_EXACT_MAX) {
		if (!known[n]) {
			tab[n][0] = n ? gamma_p_inv((double)n, 0.025) : 0;
			tab[n][1] = gamma_p_inv((double)n + 1, 0.975);
			known[n] = 1;
		}
		*lo = tab[n][0];
		*hi = tab[n][1];
		return;
	}
	/* Chi-square's cube root is close to normal (Wilson-Hilferty). */
	m = (double)n;
	m1 = m + 1;
	*lo = m * pow(1 - 1 / (9 * m) - Z975 / (3 * sqrt(m)), 3);
	*hi = m1 * pow(1 - 1 / (9 * m1) + Z975 / (3 * sqrt(m1)), 3);
}

void rt_count95(uint64_t refs, uint64_t period, uint64_t *lo, uint64_t *hi)
{
	double l, h;

	if (period <= 1) {
		*lo = *hi = refs;
		return;
	}
	rt_poisson95(refs / period, &l, &h);
	*lo = (uint64_t)floor(l * (double)period);
	*hi = (uint64_t)ceil(h * (double)period);
}
