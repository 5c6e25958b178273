/* SPDX-License-Identifier: Apache-2.0 */
/* vg lm bench --tp N: the collectives of one decode step alone, for their share of the step. */
#include <stdlib.h>

#include "tp_launch.h"
#include "vg/vg_device.h"
#include "vg_cli.h"

/* The collectives of one step: an all-reduce of tokens × hidden after o_proj and after down in
 * every layer, then the head's all-gather of seqs × ceil(vocab / n) F32, as lm_forward.c issues
 * them. */
static vg_status enqueue(vg_comm *comm, vg_stream *s, const vg_lm_info *info, vg_dtype dt, void *h,
                         int64_t tokens, void *slice, void *gathered, int64_t slice_count)
{
    vg_status st = VG_OK;
    for (int i = 0; st == VG_OK && i < 2 * info->layers; i++)
        st = vg_comm_all_reduce(comm, s, dt, h, h, tokens * info->hidden);
    return st != VG_OK ? st : vg_comm_all_gather(comm, s, VG_DTYPE_F32, slice, gathered, slice_count);
}

int vg_cli_lm_tp_comm_ms(const char *cmd, vg_runtime *rt, vg_comm *comm, const vg_lm_info *info,
                         vg_dtype dt, int64_t tokens, int64_t seqs, int reps, double *ms)
{
    int n = vg_comm_size(comm);
    int64_t vs = (info->vocab + n - 1) / n, slice_count = seqs * vs;
    size_t hbytes = (size_t)tokens * (size_t)info->hidden * vg_dtype_size(dt);
    void *h = NULL, *slice = NULL, *gathered = NULL;
    vg_stream *s = NULL;
    vg_event *e0 = NULL, *e1 = NULL;
    vg_graph *g = NULL;
    vg_graph_exec *x = NULL;
    int graph = (vg_runtime_caps(rt) & VG_CAP_COMM_CAPTURE) != 0;
    vg_status st = vg_mem_alloc(rt, hbytes, &h);
    if (st == VG_OK) st = vg_mem_alloc(rt, (size_t)slice_count * sizeof(float), &slice);
    if (st == VG_OK) st = vg_mem_alloc(rt, (size_t)n * (size_t)slice_count * sizeof(float), &gathered);
    if (st == VG_OK) st = vg_stream_create(rt, &s);
    if (st == VG_OK) st = vg_mem_set(s, h, 0, hbytes);
    if (st == VG_OK) st = vg_mem_set(s, slice, 0, (size_t)slice_count * sizeof(float));
    if (st == VG_OK) st = vg_event_create(rt, &e0);
    if (st == VG_OK) st = vg_event_create(rt, &e1);
    if (st == VG_OK && graph) { /* as in a FULL graph: captured once, replayed */
        st = vg_graph_capture_begin(s);
        if (st == VG_OK) {
            vg_status cap = enqueue(comm, s, info, dt, h, tokens, slice, gathered, slice_count);
            st = vg_graph_capture_end(s, &g);
            if (cap != VG_OK) st = cap;
        }
        if (st == VG_OK) st = vg_graph_instantiate(g, &x);
    }
    /* one untimed round, then reps timed */
    for (int i = -1; st == VG_OK && i < reps; i++) {
        if (i == 0) st = vg_event_record(e0, s);
        if (st == VG_OK)
            st = graph ? vg_graph_exec_launch(x, s) : enqueue(comm, s, info, dt, h, tokens, slice, gathered, slice_count);
    }
    if (st == VG_OK) st = vg_event_record(e1, s);
    if (st == VG_OK) st = vg_stream_sync(s);
    float total = 0;
    if (st == VG_OK) st = vg_event_elapsed_ms(e0, e1, &total);
    *ms = reps > 0 ? total / reps : 0;
    int rc = st == VG_OK ? 0 : vg_cli_fail(cmd, "timing the collectives of %lld tokens: %s", (long long)tokens,
                                          vg_last_error());
    vg_graph_exec_destroy(x);
    vg_graph_destroy(g);
    vg_event_destroy(e0);
    vg_event_destroy(e1);
    vg_stream_destroy(s);
    if (h) vg_mem_free(rt, h);
    if (slice) vg_mem_free(rt, slice);
    if (gathered) vg_mem_free(rt, gathered);
    return rc;
}
