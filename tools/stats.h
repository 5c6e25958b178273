/* SPDX-License-Identifier: Apache-2.0 */
/* Order statistics for benchmark samples. */
#ifndef VG_TOOLS_STATS_H
#define VG_TOOLS_STATS_H

#include <stddef.h>

typedef struct vg_sample_stats {
    double median, p10, p90, min, max;
} vg_sample_stats;

/* Sorts `x` in place. n must be at least 1. */
vg_sample_stats vg_stats_of(double *x, size_t n);
/* The q-quantile (0..1) of n >= 1 sorted samples, by linear interpolation between closest
 * ranks (numpy's default), as vg_stats_of computes its own. */
double vg_stats_quantile(const double *sorted, size_t n, double q);
/* Monotonic wall clock in milliseconds. */
double vg_now_ms(void);

#endif
