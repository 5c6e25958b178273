/* SPDX-License-Identifier: Apache-2.0 */
/* The graph runner's statistics (vg_runner_stats) as the vg command shows them: a text table,
 * or a JSON object inside the command's one document. */
#ifndef VG_RUNNER_STATS_FORMAT_H
#define VG_RUNNER_STATS_FORMAT_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "vg/vg_runner.h"

/* One row per bucket that was used, the row of calls above the threshold, and the total.
 * 0, or 1 when out of memory. */
int vg_stats_print(FILE *fp, vg_runner *r);
/* {"mode": ..., "buckets": [...], "total": {...}}; NULL when out of memory. */
cJSON *vg_stats_json(vg_runner *r);

#endif
