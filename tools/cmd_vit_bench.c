/* vg vit bench: latency of the vision encoder, eager against graph, per image size; graph
 * memory after a 16-bucket warm-up; the PyTorch peer beside it when its JSON lines are given. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "vg/vg_vit.h"
#include "vg_cli.h"

static const char k_help[] =
    "usage: vg vit bench [--config qwen2.5-vl-7b | --model DIR] [--sizes 224,448,896]\n"
    "           [--iters N] [--mode full|piecewise|full_and_piecewise] [--backend B]\n"
    "           [--dtype bf16|f16|f32] [--peer PEER.jsonl] [--json] [--plot FILE.svg] [--pieces]\n"
    "\n"
    "Sizes are square image sides in pixels (224) or patch counts with a 't' suffix (1024t).\n"
    "For each size: eager and graph latency (median, p10, p90 of --iters runs, device events,\n"
    "from the end of the input upload to the last kernel), capture time, graph memory and\n"
    "achieved TFLOP/s (GEMMs and attention). Then the graph memory of a 16-bucket warm-up.\n"
    "--config builds the model with deterministic synthetic weights (no download);\n"
    "--peer reads the JSON lines of the PyTorch peer measured in the same session and prints\n"
    "it beside vg, with the ratio. --pieces times every piece of the eager runs with device\n"
    "events and prints where the time goes. Defaults: qwen2.5-vl-7b, BF16, 30 iterations,\n"
    "mode full.\n";

#define MAX_SIZES 32

typedef struct row {
    int side; /* pixels, 0 when given as tokens */
    int64_t patches;
    vg_sample_stats eager, graph;
    double capture_ms, flops;
    uint64_t graph_bytes;
    double peer_hf, peer_graph; /* 0 when absent */
} row;

typedef struct bench_args {
    const char *config, *model, *backend, *peer, *plot;
    vg_graph_mode mode;
    vg_dtype dtype;
    int iters, json, nsizes, pieces;
    int64_t side_patches[MAX_SIZES];
    int side_px[MAX_SIZES];
} bench_args;

static int parse_sizes(const char *text, bench_args *a)
{
    for (const char *p = text; *p;) {
        char *end = NULL;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v <= 0 || a->nsizes == MAX_SIZES) return -1;
        int64_t patches_side;
        if (*end == 't') { /* a patch count: the nearest square of even side */
            patches_side = (int64_t)llround(sqrt((double)v) / 2.0) * 2;
            a->side_px[a->nsizes] = 0;
            end++;
        } else {
            if (v % 28) return -1; /* whole merge units of 2 x 14 pixels */
            patches_side = v / 14;
            a->side_px[a->nsizes] = (int)v;
        }
        if (patches_side < 2 || patches_side > 1024) return -1;
        a->side_patches[a->nsizes++] = patches_side;
        if (*end && *end != ',') return -1;
        p = *end ? end + 1 : end;
    }
    return a->nsizes ? 0 : -1;
}

static int parse_args(int argc, char **argv, bench_args *a)
{
    a->config = "qwen2.5-vl-7b";
    a->mode = VG_MODE_FULL;
    a->dtype = VG_DTYPE_BF16;
    a->iters = 30;
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(k, "--json")) a->json = 1;
        else if (!strcmp(k, "--pieces")) a->pieces = 1;
        else if (!v) return vg_cli_fail("vit", "option '%s' needs a value or is unknown", k);
        else if (!strcmp(k, "--config")) a->config = v, a->model = NULL, i++;
        else if (!strcmp(k, "--model")) a->model = v, i++;
        else if (!strcmp(k, "--backend")) a->backend = v, i++;
        else if (!strcmp(k, "--peer")) a->peer = v, i++;
        else if (!strcmp(k, "--plot")) a->plot = v, i++;
        else if (!strcmp(k, "--sizes")) {
            if (parse_sizes(v, a)) return vg_cli_fail("vit", "--sizes wants sides in pixels (multiples of 28) or patch counts with 't', got '%s'", v);
            i++;
        } else if (!strcmp(k, "--iters")) {
            a->iters = (int)strtol(v, &end, 10);
            if (*end || a->iters < 1 || a->iters > 100000) return vg_cli_fail("vit", "--iters wants 1..100000");
            i++;
        } else if (!strcmp(k, "--mode")) {
            if (vg_graph_mode_parse(v, &a->mode) != VG_OK || a->mode == VG_MODE_NONE)
                return vg_cli_fail("vit", "--mode wants piecewise, full or full_and_piecewise");
            i++;
        } else if (!strcmp(k, "--dtype")) {
            a->dtype = !strcmp(v, "bf16") ? VG_DTYPE_BF16 : !strcmp(v, "f16") ? VG_DTYPE_F16
                     : !strcmp(v, "f32") ? VG_DTYPE_F32 : VG_DTYPE_COUNT_;
            if (a->dtype == VG_DTYPE_COUNT_) return vg_cli_fail("vit", "--dtype wants bf16, f16 or f32");
            i++;
        } else return vg_cli_fail("vit", "unknown option '%s' (see vg vit bench --help)", k);
    }
    if (!a->nsizes) parse_sizes("224,448,896", a);
    return 0;
}

/* The peer's JSON lines: {"side": 224, "S": 256, "hf_eager_ms": ..., "torch_blocks_graph_ms": ...} */
static void read_peer(const char *path, row *rows, int n)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "vg vit bench: cannot read the peer file %s: %s\n", path, strerror(errno));
        return;
    }
    char line[4096];
    while (fgets(line, sizeof line, fp)) {
        cJSON *j = cJSON_Parse(line);
        const cJSON *S = cJSON_GetObjectItem(j, "S"), *hf = cJSON_GetObjectItem(j, "hf_eager_ms"),
                    *g = cJSON_GetObjectItem(j, "torch_blocks_graph_ms");
        for (int i = 0; j && cJSON_IsNumber(S) && i < n; i++)
            if ((int64_t)S->valuedouble == rows[i].patches) {
                rows[i].peer_hf = cJSON_IsNumber(hf) ? hf->valuedouble : 0;
                rows[i].peer_graph = cJSON_IsNumber(g) ? g->valuedouble : 0;
            }
        cJSON_Delete(j);
    }
    fclose(fp);
}

/* Time `iters` calls after three warm-up calls (capture, tuning, caches). With piece timing
 * on, warm_pieces receives the per-piece totals after the warm-up, to be subtracted. */
static vg_status time_calls(vg_vit *v, const float *pixels, int64_t patches, const int64_t *grid,
                            int iters, vg_sample_stats *out, double *warm_pieces)
{
    double *x = calloc((size_t)iters, sizeof *x);
    if (!x) return VG_ERR_OUT_OF_MEMORY;
    vg_status st = VG_OK;
    for (int i = -3; i < iters && st == VG_OK; i++) { /* three warm-up calls: capture, caches */
        vg_vit_output o;
        st = vg_vit_encode(v, pixels, VG_DTYPE_F32, patches, 1176, grid, 1, &o);
        if (st != VG_OK) break;
        if (i == -1 && warm_pieces) vg_runner_piece_times(vg_vit_runner(v), warm_pieces, 4096);
        if (i >= 0) x[i] = o.device_ms;
        vg_free(o.embeddings);
    }
    if (st == VG_OK) *out = vg_stats_of(x, (size_t)iters);
    free(x);
    return st;
}

static void svg_plot(const char *path, const row *rows, int n)
{
    FILE *fp = fopen(path, "w");
    if (!fp) {
        fprintf(stderr, "vg vit bench: cannot write %s: %s\n", path, strerror(errno));
        return;
    }
    double xmax = 0, ymax = 0;
    for (int i = 0; i < n; i++) {
        xmax = fmax(xmax, (double)rows[i].patches);
        ymax = fmax(ymax, fmax(rows[i].eager.median, fmax(rows[i].peer_graph, rows[i].graph.median)));
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
        {"vg eager", "#d62728", 0}, {"vg graph", "#1f77b4", 1}, {"torch graph (peer)", "#7f7f7f", 2}};
    for (int l = 0; l < 3; l++) {
        fprintf(fp, "<polyline fill='none' stroke='%s' stroke-width='2' points='", lines[l].color);
        int any = 0;
        for (int i = 0; i < n; i++) {
            double y = lines[l].which == 0 ? rows[i].eager.median : lines[l].which == 1 ? rows[i].graph.median : rows[i].peer_graph;
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
    fclose(fp);
}

static int report(const bench_args *a, vg_runtime *rt, const vg_vit_info *info, row *rows,
                  double warm_mib_before, double warm_mib_after, uint64_t warm_graph_bytes, int warm_graphs)
{
    vg_device_info dev = {.struct_size = sizeof dev};
    vg_runtime_device_info(rt, &dev);
    const char *what = a->model ? a->model : a->config;
    if (a->json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "model", what);
        cJSON_AddStringToObject(root, "backend", vg_runtime_backend_name(rt));
        cJSON_AddStringToObject(root, "device", dev.name);
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
            if (r->peer_graph > 0) {
                cJSON_AddNumberToObject(o, "peer_hf_eager_ms", r->peer_hf);
                cJSON_AddNumberToObject(o, "peer_torch_graph_ms", r->peer_graph);
                cJSON_AddNumberToObject(o, "speedup_vs_torch_graph", r->peer_graph / r->graph.median);
            }
            cJSON_AddItemToArray(arr, o);
        }
        cJSON *w = cJSON_AddObjectToObject(root, "warmup16");
        cJSON_AddNumberToObject(w, "graphs", warm_graphs);
        cJSON_AddNumberToObject(w, "device_mib_used", warm_mib_before - warm_mib_after);
        cJSON_AddNumberToObject(w, "graph_bytes_measured", (double)warm_graph_bytes);
        char *t = cJSON_Print(root);
        if (t) puts(t);
        free(t);
        cJSON_Delete(root);
    } else {
        printf("vg vit bench: %s (%s%s), backend %s (%s), mode %s, %d iterations, device time in ms\n",
               what, vg_dtype_name(info->compute_dtype), a->model ? "" : ", synthetic weights",
               vg_runtime_backend_name(rt), dev.name, vg_graph_mode_name(a->mode), a->iters);
        printf("%6s %7s | %20s | %20s | %8s %8s %7s | %9s %11s %8s\n", "image", "patches",
               "vg eager med (p10-p90)", "vg graph med (p10-p90)", "capture", "graph", "TFLOP/s",
               "HF eager", "torch graph", "speedup");
        for (int i = 0; i < a->nsizes; i++) {
            const row *r = &rows[i];
            char side[16], peer_hf[16] = "-", peer_g[16] = "-", ratio[16] = "-";
            snprintf(side, sizeof side, r->side ? "%d" : "-", r->side);
            if (r->peer_graph > 0) {
                snprintf(peer_hf, sizeof peer_hf, "%.2f", r->peer_hf);
                snprintf(peer_g, sizeof peer_g, "%.2f", r->peer_graph);
                snprintf(ratio, sizeof ratio, "%.2fx", r->peer_graph / r->graph.median);
            }
            printf("%6s %7lld | %6.3f (%5.3f-%5.3f) | %6.3f (%5.3f-%5.3f) | %6.1fms %6.1fMiB %7.0f | %9s %11s %8s\n",
                   side, (long long)r->patches, r->eager.median, r->eager.p10, r->eager.p90, r->graph.median,
                   r->graph.p10, r->graph.p90, r->capture_ms, (double)r->graph_bytes / 1048576.0,
                   r->flops / r->graph.median / 1e9, peer_hf, peer_g, ratio);
        }
        /* The free-memory drop also holds what the warm-up's eager runs loaded on first use
         * (kernel code, GEMM tuning); the runner's own count is taken around each capture. */
        printf("16-bucket warm-up (64..1024 patches): %d graphs; device memory used %.1f MiB in all "
               "(%.2f MiB per graph), of which graphs as measured at capture %.1f MiB; the graphs "
               "share one workspace sized for the largest bucket\n",
               warm_graphs, warm_mib_before - warm_mib_after,
               warm_graphs ? (warm_mib_before - warm_mib_after) / warm_graphs : 0.0,
               (double)warm_graph_bytes / 1048576.0);
    }
    if (a->plot) svg_plot(a->plot, rows, a->nsizes);
    return 0;
}

/* Per-piece device time of the timed eager runs of one size (the warm-up's subtracted),
 * grouped by piece name. */
static void print_pieces(vg_vit *v, int64_t patches, int calls, const double *warm)
{
    vg_runner *r = vg_vit_runner(v);
    int n = vg_runner_piece_times(r, NULL, 0);
    double *ms = calloc((size_t)n, sizeof *ms);
    if (!ms) return;
    vg_runner_piece_times(r, ms, n);
    for (int i = 0; i < n; i++) ms[i] -= warm[i];
    double total = 0;
    for (int i = 0; i < n; i++) total += ms[i] / calls;
    printf("pieces of an eager forward at %lld patches (%d calls): %.3f ms\n", (long long)patches, calls, total);
    for (int i = 0; i < n; i++) { /* the first piece of each name prints its group */
        int64_t arg;
        const char *name = vg_runner_piece_name(r, i, &arg);
        int first = 1;
        for (int j = 0; j < i; j++) first &= strcmp(vg_runner_piece_name(r, j, NULL), name) != 0;
        if (!first) continue;
        double sum = 0, worst = 0;
        int count = 0;
        int64_t worst_arg = 0;
        for (int j = 0; j < n; j++) {
            if (strcmp(vg_runner_piece_name(r, j, &arg), name)) continue;
            sum += ms[j] / calls, count++;
            if (ms[j] / calls > worst) worst = ms[j] / calls, worst_arg = arg;
        }
        printf("  %-14s %3dx %8.3f ms %5.1f%%   slowest: #%lld %.3f ms\n", name, count, sum,
               100 * sum / total, (long long)worst_arg, worst);
    }
    free(ms);
}

static double free_mib(vg_runtime *rt)
{
    vg_device_info d = {.struct_size = sizeof d};
    return vg_runtime_device_info(rt, &d) == VG_OK ? (double)d.mem_free / 1048576.0 : 0;
}

int vg_vit_bench(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (vg_cli_is_help(argv[i])) {
            fputs(k_help, stdout);
            return 0;
        }
    bench_args a;
    memset(&a, 0, sizeof a);
    if (parse_args(argc, argv, &a)) return 1;
    vg_runtime_options ro;
    vg_runtime_options_init(&ro);
    ro.backend = a.backend;
    vg_runtime *rt = NULL;
    if (vg_runtime_open(&ro, &rt) != VG_OK) return vg_cli_fail("vit", "%s", vg_last_error());
    vg_vit_options o;
    vg_vit_options_init(&o);
    o.mode = VG_MODE_NONE;
    o.compute_dtype = a.dtype;
    o.profile_pieces = a.pieces;
    vg_vit *v = NULL;
    vg_status st = a.model ? vg_vit_load(rt, a.model, &o, &v)
                           : vg_vit_create_synthetic(rt, a.config, 1234, a.dtype, &o, &v);
    if (st != VG_OK) {
        vg_runtime_close(rt);
        return vg_cli_fail("vit", "%s", vg_last_error());
    }
    vg_vit_info info;
    vg_vit_get_info(v, &info);
    row rows[MAX_SIZES];
    memset(rows, 0, sizeof rows);
    static double warm_pieces[4096];
    int64_t max_patches = 1024; /* the 16-bucket warm-up encodes 1024 patches */
    for (int i = 0; i < a.nsizes; i++) {
        rows[i].side = a.side_px[i];
        rows[i].patches = a.side_patches[i] * a.side_patches[i];
        if (rows[i].patches > max_patches) max_patches = rows[i].patches;
    }
    if (info.patch_dim != 1176) {
        vg_vit_free(v);
        vg_runtime_close(rt);
        return vg_cli_fail("vit", "the bench feeds 1176-wide patches; this model wants %lld",
                           (long long)info.patch_dim);
    }
    float *pixels = malloc((size_t)max_patches * 1176 * sizeof(float));
    if (!pixels) {
        vg_vit_free(v);
        vg_runtime_close(rt);
        return vg_cli_fail("vit", "out of host memory");
    }
    for (int64_t i = 0; i < max_patches * 1176; i++)
        pixels[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
    /* eager for every size, then graphs captured at exactly the benchmarked sizes */
    for (int i = 0; i < a.nsizes && st == VG_OK; i++) {
        int64_t grid[3] = {1, a.side_patches[i], a.side_patches[i]};
        st = vg_vit_flops(v, grid, 1, &rows[i].flops);
        if (st == VG_OK) st = time_calls(v, pixels, rows[i].patches, grid, a.iters, &rows[i].eager,
                                         a.pieces ? warm_pieces : NULL);
        if (st == VG_OK && a.pieces) print_pieces(v, rows[i].patches, a.iters, warm_pieces);
    }
    o.profile_pieces = 0;
    int64_t sizes[MAX_SIZES];
    for (int i = 0; i < a.nsizes; i++) sizes[i] = rows[i].patches;
    for (int i = 0; i < a.nsizes; i++) /* ascending, unique */
        for (int j = i + 1; j < a.nsizes; j++)
            if (sizes[j] < sizes[i]) { int64_t t = sizes[i]; sizes[i] = sizes[j]; sizes[j] = t; }
    int nsz = 0;
    for (int i = 0; i < a.nsizes; i++) if (!nsz || sizes[i] != sizes[nsz - 1]) sizes[nsz++] = sizes[i];
    o.mode = a.mode;
    o.capture_sizes = sizes;
    o.num_capture_sizes = nsz;
    if (st == VG_OK) st = vg_vit_reconfigure(v, &o);
    for (int i = 0; i < a.nsizes && st == VG_OK; i++) {
        int64_t grid[3] = {1, a.side_patches[i], a.side_patches[i]};
        st = time_calls(v, pixels, rows[i].patches, grid, a.iters, &rows[i].graph, NULL);
        vg_bucket_stats bs[MAX_SIZES + 1];
        int nb = vg_runner_stats(vg_vit_runner(v), bs, MAX_SIZES + 1, NULL);
        for (int b = 0; b < nb; b++)
            if (bs[b].size == rows[i].patches) rows[i].capture_ms = bs[b].capture_ms, rows[i].graph_bytes = bs[b].graph_bytes;
    }
    /* 16 buckets of 64..1024 patches, warmed up at once: what graphs cost beyond the workspace */
    double before = 0, after = 0;
    uint64_t warm_bytes = 0;
    int warm_graphs = 0;
    if (st == VG_OK) {
        int64_t ladder[16];
        for (int i = 0; i < 16; i++) ladder[i] = 64 * (i + 1);
        o.capture_sizes = ladder;
        o.num_capture_sizes = 16;
        o.warmup = 0;
        st = vg_vit_reconfigure(v, &o);
        int64_t grid[3] = {1, 32, 32}; /* size the workspace for the largest bucket first */
        vg_vit_output out;
        if (st == VG_OK) st = vg_vit_encode(v, pixels, VG_DTYPE_F32, 1024, 1176, grid, 1, &out);
        if (st == VG_OK) vg_free(out.embeddings);
        before = free_mib(rt);
        vg_batch_desc like = {.num_tokens = 0};
        if (st == VG_OK) st = vg_runner_warmup(vg_vit_runner(v), &like, NULL, NULL);
        after = free_mib(rt);
        vg_bucket_stats total;
        vg_runner_stats(vg_vit_runner(v), NULL, 0, &total);
        warm_bytes = total.graph_bytes;
        warm_graphs = total.live_graphs;
    }
    if (a.peer) read_peer(a.peer, rows, a.nsizes);
    int rc = st == VG_OK ? report(&a, rt, &info, rows, before, after, warm_bytes, warm_graphs)
                         : vg_cli_fail("vit", "bench: %s", vg_last_error());
    free(pixels);
    vg_vit_free(v);
    vg_runtime_close(rt);
    return rc;
}
