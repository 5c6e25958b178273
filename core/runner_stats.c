/* SPDX-License-Identifier: Apache-2.0 */
/* Runner statistics: counters per bucket, plus the row of calls above the threshold. Counters
 * only: formatting them is the caller's business (the vg command prints tables and JSON). */
#include <stdlib.h>
#include <string.h>

#include "runner_internal.h"

vg_status vg_stats_init(runner_stats *st, const int64_t *sizes, int nsizes)
{
    st->nrows = nsizes + 1;
    st->rows = calloc((size_t)st->nrows, sizeof *st->rows);
    if (!st->rows) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_runner_create: out of memory");
    for (int i = 0; i < nsizes; i++) st->rows[i].size = sizes[i];
    st->rows[nsizes].size = -1;
    pthread_mutex_init(&st->lock, NULL);
    return VG_OK;
}

void vg_stats_free(runner_stats *st)
{
    if (!st->rows) return;
    pthread_mutex_destroy(&st->lock);
    free(st->rows);
    st->rows = NULL;
}

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

void vg_stats_add(runner_stats *st, int row, const vg_bucket_stats *d)
{
    pthread_mutex_lock(&st->lock);
    accumulate(&st->rows[row], d, 1);
    pthread_mutex_unlock(&st->lock);
}

void vg_stats_graphs(runner_stats *st, int row, int64_t bytes, int live)
{
    pthread_mutex_lock(&st->lock);
    st->rows[row].graph_bytes = (uint64_t)((int64_t)st->rows[row].graph_bytes + bytes);
    st->rows[row].live_graphs += live;
    pthread_mutex_unlock(&st->lock);
}

int vg_stats_read(runner_stats *st, vg_bucket_stats *out, int max, vg_bucket_stats *total)
{
    pthread_mutex_lock(&st->lock);
    for (int i = 0; out && i < st->nrows && i < max; i++) out[i] = st->rows[i];
    if (total) {
        memset(total, 0, sizeof *total);
        for (int i = 0; i < st->nrows; i++) accumulate(total, &st->rows[i], 0);
    }
    pthread_mutex_unlock(&st->lock);
    return st->nrows;
}
