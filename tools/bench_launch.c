/* SPDX-License-Identifier: Apache-2.0 */
/* vg bench launch: N small kernels enqueued eagerly against the same N replayed as one graph. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "stats.h"
#include "vg/vg_device.h"
#include "vg_cli.h"

typedef struct bench {
    vg_runtime *rt;
    vg_stream *s;
    vg_event *e0, *e1;
    float *x, *y;
    int kernels, elems;
} bench;

#define TRY(expr)                                                                               \
    do {                                                                                        \
        if ((expr) != VG_OK) return vg_cli_fail("bench launch", "%s: %s", #expr, vg_last_error()); \
    } while (0)

static int enqueue_all(bench *B)
{
    for (int i = 0; i < B->kernels; i++)
        TRY(vg_op_axpby(B->s, (size_t)B->elems, 0.999f, B->x, 0.5f, B->y));
    return 0;
}

/* One timed repetition: device ms between events and host ms spent enqueueing. */
static int timed(bench *B, vg_graph_exec *exec, double *dev_ms, double *host_ms)
{
    TRY(vg_event_record(B->e0, B->s));
    double t0 = vg_now_ms();
    if (exec) TRY(vg_graph_exec_launch(exec, B->s));
    else if (enqueue_all(B)) return 1;
    *host_ms = vg_now_ms() - t0;
    TRY(vg_event_record(B->e1, B->s));
    TRY(vg_event_sync(B->e1));
    float ms = 0;
    TRY(vg_event_elapsed_ms(B->e0, B->e1, &ms));
    *dev_ms = ms;
    return 0;
}

typedef struct result {
    vg_sample_stats eager, eager_host, graph, graph_host;
    double capture_ms, inst_ms;
    int graphs;
} result;

static int print(const bench *B, int iters, int json, const result *r)
{
    double k = B->kernels / 1000.0; /* ms per run -> µs per kernel */
    vg_device_info info = {.struct_size = sizeof info};
    vg_runtime_device_info(B->rt, &info);
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "bench", "launch");
        cJSON_AddStringToObject(o, "backend", vg_runtime_backend_name(B->rt));
        cJSON_AddStringToObject(o, "device", info.name);
        cJSON_AddNumberToObject(o, "kernels", B->kernels);
        cJSON_AddNumberToObject(o, "iters", iters);
        cJSON_AddNumberToObject(o, "eager_us_per_kernel_median", r->eager.median / k);
        cJSON_AddNumberToObject(o, "eager_us_per_kernel_p10", r->eager.p10 / k);
        cJSON_AddNumberToObject(o, "eager_us_per_kernel_p90", r->eager.p90 / k);
        cJSON_AddNumberToObject(o, "eager_host_enqueue_us_per_kernel", r->eager_host.median / k);
        if (r->graphs) {
            cJSON_AddNumberToObject(o, "graph_us_per_kernel_median", r->graph.median / k);
            cJSON_AddNumberToObject(o, "graph_us_per_kernel_p10", r->graph.p10 / k);
            cJSON_AddNumberToObject(o, "graph_us_per_kernel_p90", r->graph.p90 / k);
            cJSON_AddNumberToObject(o, "graph_host_launch_us", r->graph_host.median * 1000.0);
            cJSON_AddNumberToObject(o, "capture_ms", r->capture_ms);
            cJSON_AddNumberToObject(o, "instantiate_ms", r->inst_ms);
            cJSON_AddNumberToObject(o, "speedup", r->eager.median / r->graph.median);
        }
        return vg_cli_print_json(o, 0);
    }
    printf("backend %s (%s): %d kernels of %d floats, %d iterations\n",
           vg_runtime_backend_name(B->rt), info.name, B->kernels, B->elems, iters);
    printf("%-22s %10s %10s %10s   (device time, us per kernel)\n", "", "median", "p10", "p90");
    printf("%-22s %10.3f %10.3f %10.3f   host enqueue %.3f us/kernel\n", "eager launches",
           r->eager.median / k, r->eager.p10 / k, r->eager.p90 / k, r->eager_host.median / k);
    if (!r->graphs) {
        printf("graph replay: not supported by this backend\n");
        return 0;
    }
    printf("%-22s %10.3f %10.3f %10.3f   host launch %.1f us/graph\n", "graph replay",
           r->graph.median / k, r->graph.p10 / k, r->graph.p90 / k, r->graph_host.median * 1000.0);
    printf("eager / graph: %.2fx\ncapture: %.3f ms, instantiate (+upload): %.3f ms\n",
           r->eager.median / r->graph.median, r->capture_ms, r->inst_ms);
    return 0;
}

static int run(bench *B, int iters, int json)
{
    double *dev_e = calloc((size_t)iters, sizeof(double)), *host_e = calloc((size_t)iters, sizeof(double));
    double *dev_g = calloc((size_t)iters, sizeof(double)), *host_g = calloc((size_t)iters, sizeof(double));
    int rc = 1;
    vg_graph_exec *exec = NULL;
    vg_graph *graph = NULL;
    result r = {.graphs = (vg_runtime_caps(B->rt) & VG_CAP_GRAPH) != 0};
    double d, h;
    if (!dev_e || !host_e || !dev_g || !host_g) {
        vg_cli_fail("bench launch", "out of memory");
        goto out;
    }
    for (int w = 0; w < 5; w++) /* warm-up: module load, first-touch */
        if (timed(B, NULL, &d, &h)) goto out;
    for (int i = 0; i < iters; i++)
        if (timed(B, NULL, &dev_e[i], &host_e[i])) goto out;
    if (r.graphs) {
        double t0 = vg_now_ms();
        if (vg_graph_capture_begin(B->s) != VG_OK) {
            vg_cli_fail("bench launch", "capture failed: %s", vg_last_error());
            goto out;
        }
        int failed = enqueue_all(B); /* prints why */
        vg_status end = vg_graph_capture_end(B->s, &graph);
        if (failed) goto out;
        if (end != VG_OK) {
            vg_cli_fail("bench launch", "capture failed: %s", vg_last_error());
            goto out;
        }
        double t1 = vg_now_ms();
        if (vg_graph_instantiate(graph, &exec) != VG_OK) {
            vg_cli_fail("bench launch", "instantiate failed: %s", vg_last_error());
            goto out;
        }
        r.capture_ms = t1 - t0;
        r.inst_ms = vg_now_ms() - t1;
        for (int w = 0; w < 5; w++)
            if (timed(B, exec, &d, &h)) goto out;
        for (int i = 0; i < iters; i++)
            if (timed(B, exec, &dev_g[i], &host_g[i])) goto out;
        r.graph = vg_stats_of(dev_g, (size_t)iters);
        r.graph_host = vg_stats_of(host_g, (size_t)iters);
    }
    r.eager = vg_stats_of(dev_e, (size_t)iters);
    r.eager_host = vg_stats_of(host_e, (size_t)iters);
    rc = print(B, iters, json, &r);
out:
    vg_graph_exec_destroy(exec);
    vg_graph_destroy(graph);
    free(dev_e), free(host_e), free(dev_g), free(host_g);
    return rc;
}

int vg_bench_launch(vg_runtime *rt, int kernels, int elems, int iters, int json)
{
    bench B = {.rt = rt, .kernels = kernels, .elems = elems};
    size_t bytes = (size_t)elems * sizeof(float);
    int rc = 1;
    if (!(vg_runtime_op_support(rt, VG_OP_AXPBY, NULL) & VG_OP_SUPPORTED)) {
        vg_cli_fail("bench launch", "backend '%s' has no axpby op", vg_runtime_backend_name(rt));
    } else if (vg_stream_create(rt, &B.s) != VG_OK || vg_event_create(rt, &B.e0) != VG_OK ||
               vg_event_create(rt, &B.e1) != VG_OK || vg_mem_alloc(rt, bytes, (void **)&B.x) != VG_OK ||
               vg_mem_alloc(rt, bytes, (void **)&B.y) != VG_OK || vg_mem_set(B.s, B.x, 0, bytes) != VG_OK ||
               vg_mem_set(B.s, B.y, 0, bytes) != VG_OK) {
        vg_cli_fail("bench launch", "setup failed: %s", vg_last_error());
    } else {
        rc = run(&B, iters, json);
    }
    vg_mem_free(rt, B.x);
    vg_mem_free(rt, B.y);
    vg_event_destroy(B.e0);
    vg_event_destroy(B.e1);
    vg_stream_destroy(B.s);
    return rc;
}
