/* SPDX-License-Identifier: Apache-2.0 */
/* vg vit bench's results: a text table or one JSON document on stdout, and the SVG plot. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli_output.h"
#include "vg_cli.h"
#include "vit_bench.h"

static void svg_plot(FILE *fp, const row *rows, int n)
{
    double xmax = 0, ymax = 0;
    for (int i = 0; i < n; i++) {
        xmax = fmax(xmax, (double)rows[i].patches);
        ymax = fmax(ymax, fmax(rows[i].eager.median, fmax(rows[i].peer_graph, rows[i].graph.median)));
        ymax = fmax(ymax, rows[i].peer_compiled);
    }
    const double W = 640, H = 400, L = 60, B = 50, R = 150, T = 30;
#define PX(x) (L + (x) / xmax * (W - L - R))
#define PY(y) (H - B - (y) / (ymax * 1.05) * (H - B - T))
    fprintf(fp, "<svg xmlns='http://www.w3.org/2000/svg' width='%g' height='%g' font-family='sans-serif' font-size='12'>\n", W, H);
    fprintf(fp, "<rect width='100%%' height='100%%' fill='white'/>\n");
    fprintf(fp, "<line x1='%g' y1='%g' x2='%g' y2='%g' stroke='black'/>\n", L, H - B, W - R, H - B);
    fprintf(fp, "<line x1='%g' y1='%g' x2='%g' y2='%g' stroke='black'/>\n", L, H - B, L, T);
    for (int k = 0; k <= 4; k++) {
        double y = ymax * 1.05 * k / 4, x = xmax * k / 4;
        fprintf(fp, "<text x='%g' y='%g' text-anchor='end'>%.1f</text>\n", L - 6, PY(y) + 4, y);
        fprintf(fp, "<text x='%g' y='%g' text-anchor='middle'>%.0f</text>\n", PX(x), H - B + 18, x);
    }
    fprintf(fp, "<text x='%g' y='%g' text-anchor='middle'>patches per image</text>\n", (L + W - R) / 2, H - 10);
    fprintf(fp, "<text x='14' y='%g' transform='rotate(-90 14 %g)' text-anchor='middle'>latency (ms)</text>\n", (H - B + T) / 2, (H - B + T) / 2);
    struct { const char *name, *color; int which; } lines[] = {
        {"vg eager", "#d62728", 0}, {"vg graph", "#1f77b4", 1}, {"torch graph (peer)", "#7f7f7f", 2},
        {"torch compiled graph (peer)", "#2ca02c", 3}};
    for (int l = 0; l < 4; l++) {
        fprintf(fp, "<polyline fill='none' stroke='%s' stroke-width='2' points='", lines[l].color);
        int any = 0;
        for (int i = 0; i < n; i++) {
            const double ys[4] = {rows[i].eager.median, rows[i].graph.median, rows[i].peer_graph,
                                 rows[i].peer_compiled};
            double y = ys[lines[l].which];
            if (y <= 0) continue;
            fprintf(fp, "%g,%g ", PX((double)rows[i].patches), PY(y));
            any = 1;
        }
        fprintf(fp, "'/>\n");
        if (any)
            fprintf(fp, "<text x='%g' y='%g' fill='%s'>%s</text>\n", W - R + 10, T + 20.0 * (l + 1), lines[l].color, lines[l].name);
    }
    fprintf(fp, "</svg>\n");
#undef PX
#undef PY
}

static cJSON *pieces_json(const row *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "forward_ms", r->pieces_ms);
    cJSON *arr = cJSON_AddArrayToObject(o, "groups");
    for (int g = 0; g < r->ngroups; g++) {
        const piece_group *p = &r->groups[g];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "piece", p->name);
        cJSON_AddNumberToObject(j, "count", p->count);
        cJSON_AddNumberToObject(j, "ms", p->ms);
        cJSON_AddNumberToObject(j, "slowest_arg", (double)p->worst_arg);
        cJSON_AddNumberToObject(j, "slowest_ms", p->worst_ms);
        cJSON_AddItemToArray(arr, j);
    }
    return o;
}

static int report_json(const bench_args *a, vg_runtime *rt, const vg_device_info *dev,
                       const vg_vit_info *info, const row *rows, const warmup16 *w)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", a->model ? a->model : a->config);
    cJSON_AddStringToObject(root, "backend", vg_runtime_backend_name(rt));
    cJSON_AddStringToObject(root, "device", dev->name);
    cJSON_AddStringToObject(root, "mode", vg_graph_mode_name(a->mode));
    cJSON_AddStringToObject(root, "dtype", vg_dtype_name(info->compute_dtype));
    cJSON_AddNumberToObject(root, "iters", a->iters);
    cJSON *arr = cJSON_AddArrayToObject(root, "sizes");
    for (int i = 0; i < a->nsizes; i++) {
        const row *r = &rows[i];
        cJSON *o = cJSON_CreateObject();
        if (r->side) cJSON_AddNumberToObject(o, "side", r->side);
        cJSON_AddNumberToObject(o, "patches", (double)r->patches);
        cJSON_AddNumberToObject(o, "eager_ms", r->eager.median);
        cJSON_AddNumberToObject(o, "eager_p10_ms", r->eager.p10);
        cJSON_AddNumberToObject(o, "eager_p90_ms", r->eager.p90);
        cJSON_AddNumberToObject(o, "graph_ms", r->graph.median);
        cJSON_AddNumberToObject(o, "graph_p10_ms", r->graph.p10);
        cJSON_AddNumberToObject(o, "graph_p90_ms", r->graph.p90);
        cJSON_AddNumberToObject(o, "capture_ms", r->capture_ms);
        cJSON_AddNumberToObject(o, "graph_bytes", (double)r->graph_bytes);
        cJSON_AddNumberToObject(o, "tflops", r->flops / r->graph.median / 1e9);
        if (r->peer_hf > 0) cJSON_AddNumberToObject(o, "peer_hf_eager_ms", r->peer_hf);
        if (r->peer_graph > 0) {
            cJSON_AddNumberToObject(o, "peer_torch_graph_ms", r->peer_graph);
            cJSON_AddNumberToObject(o, "speedup_vs_torch_graph", r->peer_graph / r->graph.median);
        }
        if (r->peer_padded > 0) cJSON_AddNumberToObject(o, "peer_padded_graph_ms", r->peer_padded);
        if (r->peer_compiled > 0) {
            cJSON_AddNumberToObject(o, "peer_compiled_graph_ms", r->peer_compiled);
            cJSON_AddNumberToObject(o, "speedup_vs_compiled", r->peer_compiled / r->graph.median);
        }
        if (a->pieces) cJSON_AddItemToObject(o, "pieces", pieces_json(r));
        cJSON_AddItemToArray(arr, o);
    }
    cJSON *wj = cJSON_AddObjectToObject(root, "warmup16");
    cJSON_AddNumberToObject(wj, "graphs", w->graphs);
    cJSON_AddNumberToObject(wj, "device_mib_used", w->mib_before - w->mib_after);
    cJSON_AddNumberToObject(wj, "graph_bytes_measured", (double)w->graph_bytes);
    return vg_cli_print_json(root, 1);
}

static void print_pieces(const row *r, int calls)
{
    printf("pieces of an eager forward at %lld patches (%d calls): %.3f ms\n", (long long)r->patches,
           calls, r->pieces_ms);
    for (int g = 0; g < r->ngroups; g++) {
        const piece_group *p = &r->groups[g];
        printf("  %-14s %3dx %8.3f ms %5.1f%%   slowest: #%lld %.3f ms\n", p->name, p->count, p->ms,
               100 * p->ms / r->pieces_ms, (long long)p->worst_arg, p->worst_ms);
    }
}

/* A peer's cell: the value, or "-" when that peer did not measure this size. */
static void cell(char *buf, size_t cap, const char *fmt, double have, double value)
{
    if (have > 0) snprintf(buf, cap, fmt, value);
    else snprintf(buf, cap, "-");
}

static void report_text(const bench_args *a, vg_runtime *rt, const vg_device_info *dev,
                        const vg_vit_info *info, const row *rows, const warmup16 *w)
{
    for (int i = 0; a->pieces && i < a->nsizes; i++) print_pieces(&rows[i], a->iters);
    printf("vg vit bench: %s (%s%s), backend %s (%s), mode %s, %d iterations, device time in ms\n",
           a->model ? a->model : a->config, vg_dtype_name(info->compute_dtype),
           a->model ? "" : ", synthetic weights", vg_runtime_backend_name(rt), dev->name,
           vg_graph_mode_name(a->mode), a->iters);
    printf("%6s %7s | %20s | %20s | %8s %8s %7s | %8s %11s %6s | %7s %8s %6s\n", "image",
           "patches", "vg eager med (p10-p90)", "vg graph med (p10-p90)", "capture", "graph",
           "TFLOP/s", "HF eager", "torch graph", "vg x", "padded", "compiled", "vg x");
    for (int i = 0; i < a->nsizes; i++) {
        const row *r = &rows[i];
        char side[16], hf[16], g[16], gx[16], pad[16], comp[16], cx[16];
        snprintf(side, sizeof side, r->side ? "%d" : "-", r->side);
        cell(hf, sizeof hf, "%.2f", r->peer_hf, r->peer_hf);
        cell(g, sizeof g, "%.2f", r->peer_graph, r->peer_graph);
        cell(gx, sizeof gx, "%.2fx", r->peer_graph, r->peer_graph / r->graph.median);
        cell(pad, sizeof pad, "%.2f", r->peer_padded, r->peer_padded);
        cell(comp, sizeof comp, "%.2f", r->peer_compiled, r->peer_compiled);
        cell(cx, sizeof cx, "%.2fx", r->peer_compiled, r->peer_compiled / r->graph.median);
        printf("%6s %7lld | %6.3f (%5.3f-%5.3f) | %6.3f (%5.3f-%5.3f) | %6.1fms %6.1fMiB %7.0f | "
               "%8s %11s %6s | %7s %8s %6s\n",
               side, (long long)r->patches, r->eager.median, r->eager.p10, r->eager.p90, r->graph.median,
               r->graph.p10, r->graph.p90, r->capture_ms, (double)r->graph_bytes / 1048576.0,
               r->flops / r->graph.median / 1e9, hf, g, gx, pad, comp, cx);
    }
    int any_peer = 0;
    for (int i = 0; i < a->nsizes; i++) any_peer |= rows[i].peer_hf > 0 || rows[i].peer_graph > 0 || rows[i].peer_compiled > 0;
    if (any_peer)
        printf("peers (PyTorch, same session): HF eager; torch graph = SGLang's method (blocks and "
               "merger in one CUDA graph); padded = intermediate padded, one CUDA graph; compiled = "
               "padded + torch.compile, one CUDA graph; vg x = the peer's time over vg's graph\n");
    /* The free-memory drop also holds what the warm-up's eager runs loaded on first use
     * (kernel code, GEMM tuning); the runner's own count is taken around each capture. */
    double used = w->mib_before - w->mib_after;
    printf("16-bucket warm-up (64..1024 patches): %d graphs; device memory used %.1f MiB in all "
           "(%.2f MiB per graph), of which graphs as measured at capture %.1f MiB; the graphs "
           "share one workspace sized for the largest bucket\n",
           w->graphs, used, w->graphs ? used / w->graphs : 0.0, (double)w->graph_bytes / 1048576.0);
}

int vit_bench_report(const bench_args *a, vg_runtime *rt, const vg_vit_info *info,
                     const row *rows, const warmup16 *w)
{
    vg_device_info dev = {.struct_size = sizeof dev};
    vg_runtime_device_info(rt, &dev);
    int rc = 0;
    if (a->json) rc = report_json(a, rt, &dev, info, rows, w);
    else report_text(a, rt, &dev, info, rows, w);
    if (a->plot) {
        vg_out out;
        if (vg_out_open(&out, "vit bench", a->plot)) return 1;
        svg_plot(out.fp, rows, a->nsizes);
        if (vg_out_commit(&out)) return 1;
    }
    return rc;
}
