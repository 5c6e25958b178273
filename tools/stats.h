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
/* Monotonic wall clock in milliseconds. */
double vg_now_ms(void);

#endif
