/* vg bench: measurements on the selected backend (see docs/performance.md for the method).
 *   vg bench launch   replay of an N-kernel graph against N eager launches
 *   vg bench runner   the runner's dispatch overhead, and an N-op forward eager vs graphed */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "vg_cli.h"

static const char k_help[] =
    "usage: vg bench launch [--backend B] [--kernels N] [--iters N] [--elems N] [--json]\n"
    "       vg bench runner [--backend B] [--kernels N] [--iters N] [--launch-us X] [--json]\n"
    "\n"
    "runner: the runner's own cost per call (a replay through vg_runner_run against a raw\n"
    "graph launch of the same work) and an N-op forward run eagerly (mode none) against one\n"
    "graph (mode full). --launch-us sets VG_STUB_LAUNCH_US, the simulated launch cost of\n"
    "kunlun_stub.\n"
    "\n"
    "launch: enqueues N small kernels (axpby over --elems floats) eagerly, and replays the same N\n"
    "kernels captured as one graph; reports device time per kernel (median, p10, p90 over\n"
    "--iters repetitions, from device events), host time to enqueue, and the capture and\n"
    "instantiate times. Defaults: 500 kernels, 200 iterations, 1024 elements.\n";

typedef struct bench {
    vg_runtime *rt;
    const vg_backend_iface *b;
    const vg_op_table *ops;
    vg_bk_device *dev;
    vg_bk_stream *s;
    vg_bk_event *e0, *e1;
    float *x, *y;
    int kernels, elems;
} bench;

#define TRY(expr)                                                                      \
    do {                                                                               \
        vg_status st_ = (expr);                                                        \
        if (st_ != VG_OK) return vg_cli_fail("bench", "%s: %s", #expr, vg_last_error()); \
    } while (0)

static int enqueue_all(bench *B)
{
    for (int i = 0; i < B->kernels; i++)
        TRY(B->ops->axpby(B->dev, B->s, (size_t)B->elems, 0.999f, B->x, 0.5f, B->y));
    return 0;
}

/* One timed repetition: device ms between events and host ms spent enqueueing. */
static int timed(bench *B, vg_bk_exec *exec, double *dev_ms, double *host_ms)
{
    TRY(B->b->event_record(B->dev, B->e0, B->s));
    double t0 = vg_now_ms();
    if (exec) TRY(B->b->exec_launch(B->dev, exec, B->s));
    else if (enqueue_all(B)) return 1;
    *host_ms = vg_now_ms() - t0;
    TRY(B->b->event_record(B->dev, B->e1, B->s));
    TRY(B->b->event_sync(B->dev, B->e1));
    float ms = 0;
    TRY(B->b->event_elapsed_ms(B->dev, B->e0, B->e1, &ms));
    *dev_ms = ms;
    return 0;
}

static int run_launch(bench *B, int iters, int json)
{
    double *dev_e = calloc((size_t)iters, sizeof(double)), *host_e = calloc((size_t)iters, sizeof(double));
    double *dev_g = calloc((size_t)iters, sizeof(double)), *host_g = calloc((size_t)iters, sizeof(double));
    if (!dev_e || !host_e || !dev_g || !host_g) return vg_cli_fail("bench", "out of memory");
    int rc = 1;
    vg_bk_exec *exec = NULL;
    vg_bk_graph *graph = NULL;
    double d, h, capture_ms = 0, inst_ms = 0;
    for (int w = 0; w < 5; w++) /* warm-up: module load, first-touch */
        if (timed(B, NULL, &d, &h)) goto out;
    for (int i = 0; i < iters; i++)
        if (timed(B, NULL, &dev_e[i], &host_e[i])) goto out;
    int graphs = (vg_runtime_caps(B->rt) & VG_CAP_GRAPH) != 0;
    if (graphs) {
        double t0 = vg_now_ms();
        if (B->b->capture_begin(B->dev, B->s) != VG_OK || enqueue_all(B) ||
            B->b->capture_end(B->dev, B->s, &graph) != VG_OK) {
            vg_cli_fail("bench", "capture failed: %s", vg_last_error());
            goto out;
        }
        double t1 = vg_now_ms();
        if (B->b->graph_instantiate(B->dev, graph, &exec) != VG_OK) {
            vg_cli_fail("bench", "instantiate failed: %s", vg_last_error());
            goto out;
        }
        capture_ms = t1 - t0;
        inst_ms = vg_now_ms() - t1;
        for (int w = 0; w < 5; w++)
            if (timed(B, exec, &d, &h)) goto out;
        for (int i = 0; i < iters; i++)
            if (timed(B, exec, &dev_g[i], &host_g[i])) goto out;
    }
    double k = B->kernels / 1000.0; /* ms per run -> µs per kernel */
    vg_sample_stats se = vg_stats_of(dev_e, (size_t)iters), he = vg_stats_of(host_e, (size_t)iters);
    vg_sample_stats sg = {0}, hg = {0};
    if (graphs) sg = vg_stats_of(dev_g, (size_t)iters), hg = vg_stats_of(host_g, (size_t)iters);
    vg_device_info info = {.struct_size = sizeof info};
    vg_runtime_device_info(B->rt, &info);
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "bench", "launch");
        cJSON_AddStringToObject(o, "backend", vg_runtime_backend_name(B->rt));
        cJSON_AddStringToObject(o, "device", info.name);
        cJSON_AddNumberToObject(o, "kernels", B->kernels);
        cJSON_AddNumberToObject(o, "iters", iters);
        cJSON_AddNumberToObject(o, "eager_us_per_kernel_median", se.median / k);
        cJSON_AddNumberToObject(o, "eager_us_per_kernel_p10", se.p10 / k);
        cJSON_AddNumberToObject(o, "eager_us_per_kernel_p90", se.p90 / k);
        cJSON_AddNumberToObject(o, "eager_host_enqueue_us_per_kernel", he.median / k);
        if (graphs) {
            cJSON_AddNumberToObject(o, "graph_us_per_kernel_median", sg.median / k);
            cJSON_AddNumberToObject(o, "graph_us_per_kernel_p10", sg.p10 / k);
            cJSON_AddNumberToObject(o, "graph_us_per_kernel_p90", sg.p90 / k);
            cJSON_AddNumberToObject(o, "graph_host_launch_us", hg.median * 1000.0);
            cJSON_AddNumberToObject(o, "capture_ms", capture_ms);
            cJSON_AddNumberToObject(o, "instantiate_ms", inst_ms);
            cJSON_AddNumberToObject(o, "speedup", se.median / sg.median);
        }
        char *t = cJSON_PrintUnformatted(o);
        if (t) puts(t);
        free(t);
        cJSON_Delete(o);
    } else {
        printf("backend %s (%s): %d kernels of %d floats, %d iterations\n",
               vg_runtime_backend_name(B->rt), info.name, B->kernels, B->elems, iters);
        printf("%-22s %10s %10s %10s   (device time, us per kernel)\n", "", "median", "p10", "p90");
        printf("%-22s %10.3f %10.3f %10.3f   host enqueue %.3f us/kernel\n", "eager launches",
               se.median / k, se.p10 / k, se.p90 / k, he.median / k);
        if (graphs) {
            printf("%-22s %10.3f %10.3f %10.3f   host launch %.1f us/graph\n", "graph replay",
                   sg.median / k, sg.p10 / k, sg.p90 / k, hg.median * 1000.0);
            printf("eager / graph: %.2fx\ncapture: %.3f ms, instantiate (+upload): %.3f ms\n",
                   se.median / sg.median, capture_ms, inst_ms);
        } else {
            printf("graph replay: not supported by this backend\n");
        }
    }
    rc = 0;
out:
    if (exec) B->b->exec_destroy(B->dev, exec);
    if (graph) B->b->graph_destroy(B->dev, graph);
    free(dev_e), free(host_e), free(dev_g), free(host_g);
    return rc;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

int vg_cmd_bench(int argc, char **argv)
{
    if (argc < 2 || vg_cli_is_help(argv[1])) {
        fputs(k_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    int is_runner = strcmp(argv[1], "runner") == 0;
    if (strcmp(argv[1], "launch") != 0 && !is_runner)
        return vg_cli_fail("bench", "unknown benchmark '%s' (see vg bench --help)", argv[1]);
    bench B = {.kernels = 500, .elems = 1024};
    int iters = 200, json = 0;
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (vg_cli_is_help(a)) {
            fputs(k_help, stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--backend") && v) {
            o.backend = v, i++;
        } else if (!strcmp(a, "--kernels") && v && !parse_int(v, 1, 100000, &B.kernels)) {
            i++;
        } else if (!strcmp(a, "--iters") && v && !parse_int(v, 1, 1000000, &iters)) {
            i++;
        } else if (!strcmp(a, "--elems") && v && !parse_int(v, 1, 1 << 28, &B.elems)) {
            i++;
        } else if (!strcmp(a, "--launch-us") && v && strtod(v, NULL) >= 0) {
            setenv("VG_STUB_LAUNCH_US", v, 1), i++;
        } else {
            return vg_cli_fail("bench", "bad or incomplete option '%s' (see vg bench --help)", a);
        }
    }
    if (vg_runtime_open(&o, &B.rt) != VG_OK)
        return vg_cli_fail("bench", "cannot open a backend: %s", vg_last_error());
    if (is_runner) {
        int rc = vg_bench_runner(B.rt, B.kernels, iters, json);
        vg_runtime_close(B.rt);
        return rc;
    }
    B.b = vg_runtime_iface(B.rt);
    B.ops = vg_runtime_ops(B.rt);
    B.dev = vg_runtime_device(B.rt);
    int rc = 1;
    if (!B.ops->axpby) {
        vg_cli_fail("bench", "backend '%s' has no axpby op", vg_runtime_backend_name(B.rt));
    } else if (B.b->stream_create(B.dev, &B.s) != VG_OK || B.b->event_create(B.dev, &B.e0) != VG_OK ||
               B.b->event_create(B.dev, &B.e1) != VG_OK ||
               B.b->mem_alloc(B.dev, (size_t)B.elems * 4, (void **)&B.x) != VG_OK ||
               B.b->mem_alloc(B.dev, (size_t)B.elems * 4, (void **)&B.y) != VG_OK ||
               B.b->memset_async(B.dev, B.s, B.x, 0, (size_t)B.elems * 4) != VG_OK ||
               B.b->memset_async(B.dev, B.s, B.y, 0, (size_t)B.elems * 4) != VG_OK) {
        vg_cli_fail("bench", "setup failed: %s", vg_last_error());
    } else {
        rc = run_launch(&B, iters, json);
    }
    if (B.x) B.b->mem_free(B.dev, B.x);
    if (B.y) B.b->mem_free(B.dev, B.y);
    if (B.e0) B.b->event_destroy(B.dev, B.e0);
    if (B.e1) B.b->event_destroy(B.dev, B.e1);
    if (B.s) B.b->stream_destroy(B.dev, B.s);
    vg_runtime_close(B.rt);
    return rc;
}
