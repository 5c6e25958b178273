/* SPDX-License-Identifier: Apache-2.0 */
/* vg bench runner: what the runner itself costs, and what graphs save on a 500-op forward.
 * The model is a chain of N axpby ops over a small buffer, one piece per op. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "vg/vg_runner.h"
#include "vg_cli.h"

enum { BUF_X, BUF_Y };

static const vg_op_id k_ops_used[] = {VG_OP_AXPBY};

typedef struct chain {
    int elems;
} chain;

static vg_status piece_axpby(void *m, vg_runner *r, const vg_piece *p, const vg_batch_desc *d,
                             vg_stream *s)
{
    chain *c = m;
    (void)p, (void)d;
    return vg_op_axpby(s, (size_t)c->elems, 0.5f, vg_runner_buffer(r, BUF_X), 0.5f,
                       vg_runner_buffer(r, BUF_Y));
}

static vg_status chain_reserve(void *m, vg_runner *r, const vg_batch_desc *d)
{
    chain *c = m;
    (void)d;
    vg_status st = vg_runner_buffer_reserve(r, BUF_X, (size_t)c->elems * 4);
    return st == VG_OK ? vg_runner_buffer_reserve(r, BUF_Y, (size_t)c->elems * 4) : st;
}

static vg_status chain_prepare(void *m, vg_runner *r, const vg_batch_desc *real,
                               const vg_batch_desc *padded, vg_stream *s, const void *in)
{
    (void)m, (void)r, (void)real, (void)padded, (void)s, (void)in;
    return VG_OK; /* inputs stay on the device: this measures dispatch, not copies */
}

typedef struct setup {
    vg_runtime *rt;
    chain c;
    vg_piece *pieces;
    vg_model_iface iface;
} setup;

static vg_status make_runner(setup *S, vg_graph_mode mode, vg_runner **out)
{
    static const int64_t sizes[] = {64};
    vg_runner_options o;
    vg_runner_options_init(&o);
    o.mode = mode;
    o.capture_sizes = sizes;
    o.num_capture_sizes = 1;
    return vg_runner_create(S->rt, &S->iface, &o, out);
}

/* Median host µs per vg_runner_run, over `calls` calls in `reps` timed blocks. */
static vg_status time_runs(vg_runner *r, int calls, int reps, vg_sample_stats *st)
{
    vg_batch_desc d = {.num_tokens = 64};
    double *x = calloc((size_t)reps, sizeof *x);
    if (!x) return VG_ERR_OUT_OF_MEMORY;
    vg_status s = VG_OK;
    for (int i = 0; i < 3 && s == VG_OK; i++) s = vg_runner_run(r, &d, NULL, NULL); /* capture */
    for (int k = 0; k < reps && s == VG_OK; k++) {
        double t0 = vg_now_ms();
        for (int i = 0; i < calls && s == VG_OK; i++) s = vg_runner_run(r, &d, NULL, NULL);
        x[k] = (vg_now_ms() - t0) * 1000.0 / calls;
    }
    if (s == VG_OK) *st = vg_stats_of(x, (size_t)reps);
    free(x);
    return s;
}

/* Median host µs per raw launch of the same FULL graph, captured by hand. */
static vg_status time_raw(setup *S, vg_runner *r, int calls, int reps, vg_sample_stats *st)
{
    vg_stream *s = vg_runner_stream(r);
    vg_graph *g = NULL;
    vg_graph_exec *x = NULL;
    vg_batch_desc d = {.num_tokens = 64};
    vg_status e = vg_graph_capture_begin(s);
    if (e == VG_OK) {
        for (int i = 0; e == VG_OK && i < S->iface.num_pieces; i++) e = piece_axpby(&S->c, r, &S->pieces[i], &d, s);
        vg_status end = vg_graph_capture_end(s, &g); /* ends the capture in every case */
        if (e == VG_OK) e = end;
    }
    if (e == VG_OK) e = vg_graph_instantiate(g, &x);
    double *t = calloc((size_t)reps, sizeof *t);
    for (int k = 0; e == VG_OK && t && k < reps; k++) {
        double t0 = vg_now_ms();
        for (int i = 0; i < calls && e == VG_OK; i++) e = vg_graph_exec_launch(x, s);
        t[k] = (vg_now_ms() - t0) * 1000.0 / calls;
    }
    if (e == VG_OK && t) *st = vg_stats_of(t, (size_t)reps);
    free(t);
    vg_graph_exec_destroy(x);
    vg_graph_destroy(g);
    return t ? e : VG_ERR_OUT_OF_MEMORY;
}

/* Median ms per forward (host wall clock, synchronised), eager or graphed. */
static vg_status time_forward(vg_runner *r, int iters, vg_sample_stats *st)
{
    vg_batch_desc d = {.num_tokens = 64};
    double *x = calloc((size_t)iters, sizeof *x);
    if (!x) return VG_ERR_OUT_OF_MEMORY;
    vg_status s = vg_runner_run(r, &d, NULL, NULL);
    if (s == VG_OK) s = vg_stream_sync(vg_runner_stream(r));
    for (int k = 0; k < iters && s == VG_OK; k++) {
        double t0 = vg_now_ms();
        s = vg_runner_run(r, &d, NULL, NULL);
        if (s == VG_OK) s = vg_stream_sync(vg_runner_stream(r));
        x[k] = vg_now_ms() - t0;
    }
    if (s == VG_OK) *st = vg_stats_of(x, (size_t)iters);
    free(x);
    return s;
}

int vg_bench_runner(vg_runtime *rt, int ops, int iters, int json)
{
    setup S = {.rt = rt};
    S.c = (chain){256};
    if (!(vg_runtime_op_support(rt, VG_OP_AXPBY, NULL) & VG_OP_SUPPORTED))
        return vg_cli_fail("bench runner", "backend '%s' has no axpby op", vg_runtime_backend_name(rt));
    S.pieces = calloc((size_t)ops, sizeof *S.pieces);
    if (!S.pieces) return vg_cli_fail("bench runner", "out of memory");
    for (int i = 0; i < ops; i++)
        S.pieces[i] = (vg_piece){"axpby", piece_axpby, 0, k_ops_used, 1, NULL, i};
    S.iface = (vg_model_iface){.struct_size = sizeof(vg_model_iface), .model = &S.c,
                               .pieces = S.pieces, .num_pieces = ops, .reserve = chain_reserve,
                               .prepare = chain_prepare};
    int rc = 1;
    vg_runner *graph = NULL, *eager = NULL, *one = NULL;
    vg_sample_stats run1 = {0}, raw1 = {0}, fe = {0}, fg = {0};
    setup S1 = S;
    S1.iface.num_pieces = 1;
    /* dispatch overhead: a one-op model, runner replay against a raw launch of the same graph */
    if (make_runner(&S1, VG_MODE_FULL, &one) != VG_OK || time_runs(one, 20000, 21, &run1) != VG_OK ||
        time_raw(&S1, one, 20000, 21, &raw1) != VG_OK ||
        make_runner(&S, VG_MODE_FULL, &graph) != VG_OK || make_runner(&S, VG_MODE_NONE, &eager) != VG_OK ||
        time_forward(eager, iters, &fe) != VG_OK || time_forward(graph, iters, &fg) != VG_OK) {
        vg_cli_fail("bench runner", "%s", vg_last_error());
        goto out;
    }
    double overhead = run1.median - raw1.median;
    rc = 0;
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "bench", "runner");
        cJSON_AddStringToObject(o, "backend", vg_runtime_backend_name(rt));
        cJSON_AddNumberToObject(o, "dispatch_overhead_us", overhead);
        cJSON_AddNumberToObject(o, "runner_call_us", run1.median);
        cJSON_AddNumberToObject(o, "raw_launch_us", raw1.median);
        cJSON_AddNumberToObject(o, "ops", ops);
        cJSON_AddNumberToObject(o, "eager_forward_ms_median", fe.median);
        cJSON_AddNumberToObject(o, "eager_forward_ms_p10", fe.p10);
        cJSON_AddNumberToObject(o, "eager_forward_ms_p90", fe.p90);
        cJSON_AddNumberToObject(o, "graph_forward_ms_median", fg.median);
        cJSON_AddNumberToObject(o, "graph_forward_ms_p10", fg.p10);
        cJSON_AddNumberToObject(o, "graph_forward_ms_p90", fg.p90);
        cJSON_AddNumberToObject(o, "speedup", fe.median / fg.median);
        rc = vg_cli_print_json(o, 0);
    } else {
        printf("backend %s\n", vg_runtime_backend_name(rt));
        printf("dispatch overhead: %.3f us per call (runner replay %.3f us, raw graph launch %.3f us;"
               " medians of 21 x 20000 calls)\n", overhead, run1.median, raw1.median);
        printf("%d-op forward     %10s %10s %10s   (ms, host wall clock, synchronised)\n", ops,
               "median", "p10", "p90");
        printf("  eager (none)     %10.3f %10.3f %10.3f\n", fe.median, fe.p10, fe.p90);
        printf("  graph (full)     %10.3f %10.3f %10.3f\n", fg.median, fg.p10, fg.p90);
        printf("  eager / graph: %.2fx\n", fe.median / fg.median);
    }
out:
    vg_runner_destroy(one);
    vg_runner_destroy(graph);
    vg_runner_destroy(eager);
    free(S.pieces);
    return rc;
}
