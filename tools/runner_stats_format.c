/* SPDX-License-Identifier: Apache-2.0 */
#include "runner_stats_format.h"

#include <stdlib.h>

/* Every row and the total; NULL when out of memory. */
static vg_bucket_stats *snapshot(vg_runner *r, vg_bucket_stats *total, int *rows)
{
    *rows = vg_runner_stats(r, NULL, 0, NULL);
    vg_bucket_stats *s = calloc((size_t)*rows + 1, sizeof *s);
    if (s) *rows = vg_runner_stats(r, s, *rows, total);
    return s;
}

int vg_stats_print(FILE *fp, vg_runner *r)
{
    vg_bucket_stats total, *s;
    int rows;
    if (!(s = snapshot(r, &total, &rows))) return 1;
    fprintf(fp, "mode %s\n%8s %8s %8s %8s %8s %8s %8s %8s %10s %11s %12s\n",
            vg_graph_mode_name(vg_runner_mode(r)), "bucket", "hits", "replays", "eager",
            "captures", "updates", "failed", "evicted", "waste %", "capture ms", "graph bytes");
    for (int i = 0; i <= rows; i++) {
        const vg_bucket_stats *x = i < rows ? &s[i] : &total;
        if (i < rows && !x->hits && !x->captures) continue;
        char name[24];
        if (i == rows) snprintf(name, sizeof name, "total");
        else if (x->size < 0) snprintf(name, sizeof name, ">max");
        else snprintf(name, sizeof name, "%lld", (long long)x->size);
        uint64_t tokens = x->real_tokens + x->padded_tokens;
        fprintf(fp, "%8s %8llu %8llu %8llu %8llu %8llu %8llu %8llu %10.1f %11.2f %12llu\n", name,
                (unsigned long long)x->hits, (unsigned long long)x->replays,
                (unsigned long long)x->eager_runs, (unsigned long long)x->captures,
                (unsigned long long)x->updates, (unsigned long long)x->capture_failures,
                (unsigned long long)x->evictions,
                tokens ? 100.0 * (double)x->padded_tokens / (double)tokens : 0.0, x->capture_ms,
                (unsigned long long)x->graph_bytes);
    }
    free(s);
    return 0;
}

static cJSON *row_json(const vg_bucket_stats *x, int with_bucket)
{
    cJSON *o = cJSON_CreateObject();
    if (with_bucket && x->size < 0) cJSON_AddStringToObject(o, "bucket", "above_max");
    else if (with_bucket) cJSON_AddNumberToObject(o, "bucket", (double)x->size);
    cJSON_AddNumberToObject(o, "hits", (double)x->hits);
    cJSON_AddNumberToObject(o, "replays", (double)x->replays);
    cJSON_AddNumberToObject(o, "eager_runs", (double)x->eager_runs);
    cJSON_AddNumberToObject(o, "captures", (double)x->captures);
    cJSON_AddNumberToObject(o, "updates", (double)x->updates);
    cJSON_AddNumberToObject(o, "capture_failures", (double)x->capture_failures);
    cJSON_AddNumberToObject(o, "evictions", (double)x->evictions);
    cJSON_AddNumberToObject(o, "real_tokens", (double)x->real_tokens);
    cJSON_AddNumberToObject(o, "padded_tokens", (double)x->padded_tokens);
    cJSON_AddNumberToObject(o, "capture_ms", x->capture_ms);
    cJSON_AddNumberToObject(o, "graph_bytes", (double)x->graph_bytes);
    cJSON_AddNumberToObject(o, "live_graphs", x->live_graphs);
    return o;
}

cJSON *vg_stats_json(vg_runner *r)
{
    vg_bucket_stats total, *s;
    int rows;
    if (!(s = snapshot(r, &total, &rows))) return NULL;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "mode", vg_graph_mode_name(vg_runner_mode(r)));
    cJSON *arr = cJSON_AddArrayToObject(root, "buckets");
    for (int i = 0; i < rows; i++) cJSON_AddItemToArray(arr, row_json(&s[i], 1));
    cJSON_AddItemToObject(root, "total", row_json(&total, 0));
    free(s);
    return root;
}
