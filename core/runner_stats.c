/* Runner statistics: per bucket, plus the row of calls above the threshold; text and JSON. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner_internal.h"

/* The counters of s added into t (not graph_bytes and live_graphs when counters_only). */
static void accumulate(vg_bucket_stats *t, const vg_bucket_stats *s, int counters_only)
{
    t->hits += s->hits;
    t->captures += s->captures;
    t->replays += s->replays;
    t->eager_runs += s->eager_runs;
    t->updates += s->updates;
    t->capture_failures += s->capture_failures;
    t->evictions += s->evictions;
    t->real_tokens += s->real_tokens;
    t->padded_tokens += s->padded_tokens;
    t->capture_ms += s->capture_ms;
    if (counters_only) return;
    t->graph_bytes += s->graph_bytes;
    t->live_graphs += s->live_graphs;
}

void vg_runner_stats_add(vg_runner *r, int bucket, const vg_bucket_stats *d)
{
    int row = bucket < 0 ? r->nsizes : bucket;
    pthread_mutex_lock(&r->stats_lock);
    accumulate(&r->stats[row], d, 1);
    pthread_mutex_unlock(&r->stats_lock);
}

void vg_runner_stats_graphs(vg_runner *r, int bucket, int64_t bytes, int live)
{
    int row = bucket < 0 ? r->nsizes : bucket;
    pthread_mutex_lock(&r->stats_lock);
    r->stats[row].graph_bytes = (uint64_t)((int64_t)r->stats[row].graph_bytes + bytes);
    r->stats[row].live_graphs += live;
    pthread_mutex_unlock(&r->stats_lock);
}


int vg_runner_stats(vg_runner *r, vg_bucket_stats *out, int max, vg_bucket_stats *total)
{
    if (!r) return 0;
    int rows = r->nsizes + 1;
    pthread_mutex_lock(&r->stats_lock);
    if (out)
        for (int i = 0; i < rows && i < max; i++) out[i] = r->stats[i];
    if (total) {
        memset(total, 0, sizeof *total);
        total->size = 0;
        for (int i = 0; i < rows; i++) accumulate(total, &r->stats[i], 0);
    }
    pthread_mutex_unlock(&r->stats_lock);
    return rows;
}

static vg_bucket_stats *snapshot(vg_runner *r, vg_bucket_stats *total, int *rows)
{
    *rows = r->nsizes + 1;
    vg_bucket_stats *s = calloc((size_t)*rows, sizeof *s);
    if (s) vg_runner_stats(r, s, *rows, total);
    return s;
}

vg_status vg_runner_stats_text(vg_runner *r, char **out)
{
    if (!r || !out) return vg_set_error(VG_ERR_INVALID_ARG, "vg_runner_stats_text: NULL");
    vg_bucket_stats total;
    int rows;
    vg_bucket_stats *s = snapshot(r, &total, &rows);
    size_t cap = 256 + (size_t)(rows + 2) * 160;
    char *buf = malloc(cap);
    if (!s || !buf) {
        free(s);
        free(buf);
        return vg_set_error(VG_ERR_OUT_OF_MEMORY, "vg_runner_stats_text: out of memory");
    }
    size_t len = 0;
#define OUT(...) len += (size_t)snprintf(buf + len, cap - len, __VA_ARGS__)
    OUT("mode %s\n%8s %8s %8s %8s %8s %8s %8s %8s %10s %11s %12s\n", vg_graph_mode_name(r->mode),
        "bucket", "hits", "replays", "eager", "captures", "updates", "failed", "evicted",
        "waste %", "capture ms", "graph bytes");
    for (int i = 0; i <= rows; i++) {
        const vg_bucket_stats *x = i < rows ? &s[i] : &total;
        if (i < rows && !x->hits && !x->captures) continue;
        char name[24];
        if (i == rows) snprintf(name, sizeof name, "total");
        else if (x->size < 0) snprintf(name, sizeof name, ">max");
        else snprintf(name, sizeof name, "%lld", (long long)x->size);
        double waste = x->real_tokens + x->padded_tokens
                           ? 100.0 * (double)x->padded_tokens / (double)(x->real_tokens + x->padded_tokens)
                           : 0.0;
        OUT("%8s %8llu %8llu %8llu %8llu %8llu %8llu %8llu %10.1f %11.2f %12llu\n", name,
            (unsigned long long)x->hits, (unsigned long long)x->replays,
            (unsigned long long)x->eager_runs, (unsigned long long)x->captures,
            (unsigned long long)x->updates, (unsigned long long)x->capture_failures,
            (unsigned long long)x->evictions, waste, x->capture_ms,
            (unsigned long long)x->graph_bytes);
    }
#undef OUT
    free(s);
    *out = buf;
    return VG_OK;
}

static cJSON *row_json(const vg_bucket_stats *x)
{
    cJSON *o = cJSON_CreateObject();
    if (x->size < 0) cJSON_AddStringToObject(o, "bucket", "above_max");
    else cJSON_AddNumberToObject(o, "bucket", (double)x->size);
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

vg_status vg_runner_stats_json(vg_runner *r, char **out)
{
    if (!r || !out) return vg_set_error(VG_ERR_INVALID_ARG, "vg_runner_stats_json: NULL");
    vg_bucket_stats total;
    int rows;
    vg_bucket_stats *s = snapshot(r, &total, &rows);
    cJSON *root = cJSON_CreateObject();
    if (!s || !root) {
        free(s);
        cJSON_Delete(root);
        return vg_set_error(VG_ERR_OUT_OF_MEMORY, "vg_runner_stats_json: out of memory");
    }
    cJSON_AddStringToObject(root, "mode", vg_graph_mode_name(r->mode));
    cJSON *arr = cJSON_AddArrayToObject(root, "buckets");
    for (int i = 0; i < rows; i++) cJSON_AddItemToArray(arr, row_json(&s[i]));
    cJSON *t = row_json(&total);
    cJSON_DeleteItemFromObject(t, "bucket");
    cJSON_AddItemToObject(root, "total", t);
    *out = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    free(s);
    return *out ? VG_OK : vg_set_error(VG_ERR_OUT_OF_MEMORY, "vg_runner_stats_json: out of memory");
}

void vg_free(void *p) { free(p); }
