/* SPDX-License-Identifier: Apache-2.0 */
/* vg vit bench: latency of the vision encoder, eager against graph, per image size; graph
 * memory after a 16-bucket warm-up; the PyTorch peer beside it when its JSON lines are given.
 * Inputs and the plot's directory are checked before anything is measured. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "cli_output.h"
#include "cli_progress.h"
#include "vg_cli.h"
#include "vit_bench.h"

static const char k_help[] =
    "usage: vg vit bench [--config qwen2.5-vl-7b | --model DIR] [--sizes 224,448,896]\n"
    "           [--iters N] [--mode full|piecewise|full_and_piecewise] [--backend B]\n"
    "           [--dtype bf16|f16|f32] [--peer PEER.jsonl] [--json] [--plot FILE.svg] [--pieces]\n"
    "           [--quiet]\n"
    "\n"
    "Sizes are square image sides in pixels, multiples of 28 (224), or patch counts with a 't'\n"
    "suffix (1024t). For each size: eager and graph latency (median, p10, p90 of --iters runs,\n"
    "device events, from the end of the input upload to the last kernel), capture time, graph\n"
    "memory and achieved TFLOP/s (GEMMs and attention). Then the graph memory of a 16-bucket\n"
    "warm-up.\n"
    "  --config NAME  a model with deterministic synthetic weights (no download): qwen2.5-vl-7b,\n"
    "                 qwen2.5-vl-3b, qwen2.5-vl-tiny, qwen3-vl-8b or qwen3-vl-tiny (16-pixel\n"
    "                 patches: give its sizes as patch counts, 256t,1024t,4096t)\n"
    "  --model DIR    a Hugging Face model directory instead\n"
    "  --iters N      timed runs per size and path, 1..100000\n"
    "  --peer FILE    the JSON lines of the PyTorch peer (tools/peer/peer_vit_torch.py) measured in\n"
    "                 the same session, printed beside vg with the ratio\n"
    "  --pieces       time every piece of the eager runs with device events: where the time goes\n"
    "  --json         print the results as one JSON document\n"
    "  --plot FILE    write an SVG plot of latency against patches\n"
    "  --quiet        no progress on stderr (shown only when stderr is a terminal)\n"
    "Defaults: qwen2.5-vl-7b, BF16, 30 iterations, mode full, sizes 224,448,896.\n"
    "Exit status: 0, or 1 when a run, an input or an output failed.\n";

#define MAX_PIECES 4096 /* pieces of a forward whose device time --pieces records */

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
    a->iters = 30;
    const vg_opt opts[] = {
        {"--config", VG_OPT_STRING, &a->config, 0, 0, "qwen2.5-vl-7b, qwen2.5-vl-3b or qwen2.5-vl-tiny"},
        {"--model", VG_OPT_STRING, &a->model, 0, 0, "a model directory"},
        {"--sizes", VG_OPT_STRING, &a->sizes, 0, 0, "sides in pixels (multiples of 28) or patch counts with 't', separated by commas"},
        {"--iters", VG_OPT_INT, &a->iters, 1, 100000, NULL},
        {"--mode", VG_OPT_STRING, &a->mode_name, 0, 0, "piecewise, full or full_and_piecewise"},
        {"--backend", VG_OPT_STRING, &a->backend, 0, 0, "a backend name or the path of a plugin .so"},
        {"--dtype", VG_OPT_STRING, &a->dtype_name, 0, 0, "bf16, f16 or f32"},
        {"--peer", VG_OPT_STRING, &a->peer, 0, 0, "the peer's JSON lines file"},
        {"--plot", VG_OPT_STRING, &a->plot, 0, 0, "an SVG file to write"},
        {"--json", VG_OPT_FLAG, &a->json, 0, 0, NULL},
        {"--pieces", VG_OPT_FLAG, &a->pieces, 0, 0, NULL},
        {"--quiet", VG_OPT_FLAG, &a->quiet, 0, 0, NULL},
    };
    int rc = vg_opt_parse("vit bench", k_help, opts, (int)(sizeof opts / sizeof opts[0]), argc, argv, 2);
    if (rc) return rc;
    if (a->config && a->model) return vg_cli_usage("vit bench", "give --config or --model, not both");
    if (!a->model && !a->config) a->config = "qwen2.5-vl-7b";
    a->mode = VG_MODE_FULL;
    if (a->mode_name && (vg_graph_mode_parse(a->mode_name, &a->mode) != VG_OK || a->mode == VG_MODE_NONE))
        return vg_cli_usage("vit bench", "--mode wants piecewise, full or full_and_piecewise, got '%s'",
                            a->mode_name);
    const char *d = a->dtype_name ? a->dtype_name : "bf16";
    a->dtype = !strcmp(d, "bf16") ? VG_DTYPE_BF16 : !strcmp(d, "f16") ? VG_DTYPE_F16
             : !strcmp(d, "f32") ? VG_DTYPE_F32 : VG_DTYPE_COUNT_;
    if (a->dtype == VG_DTYPE_COUNT_)
        return vg_cli_usage("vit bench", "--dtype wants bf16, f16 or f32, got '%s'", d);
    if (parse_sizes(a->sizes ? a->sizes : "224,448,896", a))
        return vg_cli_usage("vit bench", "--sizes wants up to %d sides in pixels (multiples of 28, "
                            "28..14336) or patch counts with 't' (4t..1048576t), separated by commas, "
                            "got '%s'", MAX_SIZES, a->sizes);
    return 0;
}

typedef struct timing {
    vg_vit *v;
    const float *pixels;
    vg_progress *progress;
    char what[96];
} timing;

/* Time `iters` calls after three warm-up calls (capture, tuning, caches). With piece timing
 * on, warm_pieces receives the per-piece totals after the warm-up, to be subtracted. */
static vg_status time_calls(timing *t, int64_t side, int iters, vg_sample_stats *out,
                            double *warm_pieces)
{
    int64_t grid[3] = {1, side, side};
    double *x = calloc((size_t)iters, sizeof *x);
    if (!x) return VG_ERR_OUT_OF_MEMORY;
    vg_vit_info info;
    vg_status st = vg_vit_get_info(t->v, &info);
    for (int i = -3; i < iters && st == VG_OK; i++) {
        vg_progress_show(t->progress, t->what, i + 3, iters + 3);
        vg_vit_output o;
        st = vg_vit_encode(t->v, t->pixels, VG_DTYPE_F32, side * side, info.patch_dim, grid, 1, &o);
        if (st != VG_OK) break;
        if (i == -1 && warm_pieces) vg_runner_piece_times(vg_vit_runner(t->v), warm_pieces, MAX_PIECES);
        if (i >= 0) x[i] = o.device_ms;
        vg_free(o.embeddings);
    }
    vg_progress_show(t->progress, t->what, iters + 3, iters + 3);
    if (st == VG_OK) *out = vg_stats_of(x, (size_t)iters);
    free(x);
    return st;
}

/* Per-piece device time of the timed eager runs of one size (the warm-up's subtracted),
 * grouped by piece name. */
static void collect_pieces(vg_vit *v, row *r, int calls, const double *warm)
{
    vg_runner *run = vg_vit_runner(v);
    int n = vg_runner_piece_times(run, NULL, 0);
    if (n > MAX_PIECES) n = MAX_PIECES;
    double *ms = calloc((size_t)n + 1, sizeof *ms);
    if (!ms) return;
    vg_runner_piece_times(run, ms, n);
    for (int i = 0; i < n; i++) {
        int64_t arg;
        const char *name = vg_runner_piece_name(run, i, &arg);
        double per_call = (ms[i] - warm[i]) / calls;
        int g = 0;
        while (g < r->ngroups && strcmp(r->groups[g].name, name)) g++;
        if (g == MAX_PIECE_GROUPS) continue;
        piece_group *p = &r->groups[g];
        if (g == r->ngroups) snprintf(p->name, sizeof p->name, "%s", name), r->ngroups++;
        p->count++, p->ms += per_call, r->pieces_ms += per_call;
        if (per_call > p->worst_ms) p->worst_ms = per_call, p->worst_arg = arg;
    }
    free(ms);
}

static double free_mib(vg_runtime *rt)
{
    vg_device_info d = {.struct_size = sizeof d};
    return vg_runtime_device_info(rt, &d) == VG_OK ? (double)d.mem_free / 1048576.0 : 0;
}

/* 16 buckets of 64..1024 patches, warmed up at once: what graphs cost beyond the workspace. */
static vg_status warmup16_run(vg_vit *v, vg_vit_options *o, vg_runtime *rt, const float *pixels,
                              vg_progress *progress, warmup16 *w)
{
    int64_t ladder[16];
    for (int i = 0; i < 16; i++) ladder[i] = 64 * (i + 1);
    o->capture_sizes = ladder;
    o->num_capture_sizes = 16;
    o->warmup = 0;
    vg_status st = vg_vit_reconfigure(v, o);
    int64_t grid[3] = {1, 32, 32}; /* size the workspace for the largest bucket first */
    vg_vit_output out;
    vg_vit_info info;
    if (st == VG_OK) st = vg_vit_get_info(v, &info);
    if (st == VG_OK) st = vg_vit_encode(v, pixels, VG_DTYPE_F32, 1024, info.patch_dim, grid, 1, &out);
    if (st == VG_OK) vg_free(out.embeddings);
    w->mib_before = free_mib(rt);
    vg_batch_desc like = {.num_tokens = 0};
    if (st == VG_OK) st = vg_runner_warmup(vg_vit_runner(v), &like, vg_progress_warmup, progress);
    w->mib_after = free_mib(rt);
    vg_bucket_stats total;
    vg_runner_stats(vg_vit_runner(v), NULL, 0, &total);
    w->graph_bytes = total.graph_bytes;
    w->graphs = total.live_graphs;
    return st;
}

/* Eager for every size, then graphs captured at exactly the benchmarked sizes, then the
 * 16-bucket warm-up. */
static vg_status measure(const bench_args *a, vg_runtime *rt, vg_vit *v, vg_vit_options *o,
                         const float *pixels, row *rows, warmup16 *w)
{
    static double warm_pieces[MAX_PIECES];
    vg_progress progress;
    vg_progress_start(&progress, a->quiet);
    timing t = {v, pixels, &progress, ""};
    vg_status st = VG_OK;
    for (int i = 0; i < a->nsizes && st == VG_OK; i++) {
        int64_t grid[3] = {1, a->side_patches[i], a->side_patches[i]};
        snprintf(t.what, sizeof t.what, "vit bench: eager, %lld patches (size %d/%d), call",
                 (long long)rows[i].patches, i + 1, a->nsizes);
        st = vg_vit_flops(v, grid, 1, &rows[i].flops);
        if (st == VG_OK) st = time_calls(&t, a->side_patches[i], a->iters, &rows[i].eager,
                                         a->pieces ? warm_pieces : NULL);
        if (st == VG_OK && a->pieces) collect_pieces(v, &rows[i], a->iters, warm_pieces);
    }
    int64_t sizes[MAX_SIZES];
    int nsz = 0;
    for (int i = 0; i < a->nsizes; i++) sizes[i] = rows[i].patches;
    for (int i = 0; i < a->nsizes; i++) /* ascending, unique */
        for (int j = i + 1; j < a->nsizes; j++)
            if (sizes[j] < sizes[i]) { int64_t s = sizes[i]; sizes[i] = sizes[j]; sizes[j] = s; }
    for (int i = 0; i < a->nsizes; i++) if (!nsz || sizes[i] != sizes[nsz - 1]) sizes[nsz++] = sizes[i];
    o->profile_pieces = 0;
    o->mode = a->mode;
    o->capture_sizes = sizes;
    o->num_capture_sizes = nsz;
    if (st == VG_OK) st = vg_vit_reconfigure(v, o);
    for (int i = 0; i < a->nsizes && st == VG_OK; i++) {
        snprintf(t.what, sizeof t.what, "vit bench: graph, %lld patches (size %d/%d), call",
                 (long long)rows[i].patches, i + 1, a->nsizes);
        st = time_calls(&t, a->side_patches[i], a->iters, &rows[i].graph, NULL);
        vg_bucket_stats bs[MAX_SIZES + 1];
        int nb = vg_runner_stats(vg_vit_runner(v), bs, MAX_SIZES + 1, NULL);
        for (int b = 0; b < nb; b++)
            if (bs[b].size == rows[i].patches) rows[i].capture_ms = bs[b].capture_ms, rows[i].graph_bytes = bs[b].graph_bytes;
    }
    if (st == VG_OK) st = warmup16_run(v, o, rt, pixels, &progress, w);
    vg_progress_end(&progress);
    return st;
}

/* Inputs and outputs, before anything is measured. */
static int check_files(const bench_args *a, row *rows)
{
    if (a->plot && vg_out_check("vit bench", a->plot)) return 1;
    if (!a->peer) return 0;
    peer_row peer[MAX_PEER];
    int n = vit_bench_read_peer(a->peer, peer, MAX_PEER);
    if (n < 0) return 1;
    for (int p = 0; p < n; p++)
        for (int i = 0; i < a->nsizes; i++)
            if (peer[p].patches == rows[i].patches)
                rows[i].peer_hf = peer[p].hf_ms, rows[i].peer_graph = peer[p].graph_ms;
    return 0;
}

static int run(const bench_args *a, vg_runtime *rt, row *rows)
{
    vg_vit_options o;
    vg_vit_options_init(&o);
    o.mode = VG_MODE_NONE;
    o.compute_dtype = a->dtype;
    o.profile_pieces = a->pieces;
    vg_vit *v = NULL;
    vg_status st = a->model ? vg_vit_load(rt, a->model, &o, &v)
                            : vg_vit_create_synthetic(rt, a->config, 1234, a->dtype, &o, &v);
    if (st != VG_OK) return vg_cli_fail("vit bench", "%s", vg_last_error());
    vg_vit_info info;
    vg_vit_get_info(v, &info);
    int64_t max_patches = 1024; /* the 16-bucket warm-up encodes 1024 patches */
    for (int i = 0; i < a->nsizes; i++) max_patches = rows[i].patches > max_patches ? rows[i].patches : max_patches;
    float *pixels = malloc((size_t)max_patches * (size_t)info.patch_dim * sizeof(float));
    int rc = 1;
    if (!pixels) {
        vg_cli_fail("vit bench", "out of host memory");
    } else {
        for (int64_t i = 0; i < max_patches * info.patch_dim; i++)
            pixels[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
        warmup16 w = {0};
        if (measure(a, rt, v, &o, pixels, rows, &w) != VG_OK)
            vg_cli_fail("vit bench", "%s", vg_last_error());
        else
            rc = vit_bench_report(a, rt, &info, rows, &w);
    }
    free(pixels);
    vg_vit_free(v);
    return rc;
}

int vg_cmd_vit_bench(int argc, char **argv)
{
    bench_args a;
    memset(&a, 0, sizeof a);
    int prc = parse_args(argc, argv, &a);
    if (prc) return prc == VG_OPT_HELP ? 0 : prc;
    row rows[MAX_SIZES];
    memset(rows, 0, sizeof rows);
    for (int i = 0; i < a.nsizes; i++) {
        rows[i].side = a.side_px[i];
        rows[i].patches = a.side_patches[i] * a.side_patches[i];
    }
    if (check_files(&a, rows)) return 1;
    vg_runtime_options ro;
    vg_runtime_options_init(&ro);
    ro.backend = a.backend;
    vg_runtime *rt = NULL;
    if (vg_runtime_open(&ro, &rt) != VG_OK) return vg_cli_fail("vit bench", "%s", vg_last_error());
    int rc = run(&a, rt, rows);
    vg_runtime_close(rt);
    return rc;
}
