/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The 95% intervals of sampled counts, shared by refcnt-run (through
 * rtools.h) and refcnt-compare, which links nothing else of the tools.
 */
#ifndef REFCNT_RINTERVAL_H
#define REFCNT_RINTERVAL_H

#include <stdint.h>

/*
 * The 95% confidence interval [*lo, *hi] of the mean of a Poisson count
 * from n events: Garwood's exact interval (the chi-square quantiles,
 * from the regularized incomplete gamma function) for n <= 100, the
 * Wilson-Hilferty normal approximation of those quantiles above. n = 0
 * gives [0, 3.689], n = 1 [0.0253, 5.572], n = 10 [4.795, 18.39].
 */
void rt_poisson95(uint64_t n, double *lo, double *hi);
/*
 * The 95% interval of a sampled count: refs references, each sample
 * standing for period of them (n = refs / period samples), as
 * [floor(period * lo(n)), ceil(period * hi(n))]. Period 1 or less: the
 * feed counted every reference, the interval is [refs, refs].
 */
void rt_count95(uint64_t refs, uint64_t period, uint64_t *lo, uint64_t *hi);

#endif /* REFCNT_RINTERVAL_H */
