/* SPDX-License-Identifier: Apache-2.0 */
#include "stats.h"

#include <stdlib.h>
#include <time.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double vg_stats_quantile(const double *s, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    return s[lo] + (s[hi] - s[lo]) * (pos - (double)lo);
}

vg_sample_stats vg_stats_of(double *x, size_t n)
{
    qsort(x, n, sizeof *x, cmp_double);
    vg_sample_stats r = {vg_stats_quantile(x, n, 0.5), vg_stats_quantile(x, n, 0.1),
                         vg_stats_quantile(x, n, 0.9), x[0], x[n - 1]};
    return r;
}

double vg_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
