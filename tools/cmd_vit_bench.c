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
    "usage: vg vit bench [--config NAME | --model DIR] [--sizes 224,448,896] [--iters N]\n"
    "           [--mode full|piecewise|full_and_piecewise] [--backend B] [--dtype bf16|f16|f32]\n"
    "           [--peer PEER.jsonl ...] [--json] [--plot FILE.svg] [--pieces] [--quiet]\n"
    "       vg vit bench --stream N [--seed S] [--sides LO,HI] [--requests-file FILE]\n"
    "           [--list-only] [--capture-sizes LIST] [--lazy] [--peer STREAM_PEER.jsonl ...]\n"
    "           [--quiet] [model, mode, backend, dtype, --json]\n"
    "       vg vit bench --stream-from FILE [as --stream, without --seed and --sides]\n"
    "\n"
    "Per size: square images of the given sides in pixels (multiples of spatial merge x patch:\n"
    "28 for Qwen2.5-VL, 32 for Qwen3-VL), or patch counts with a 't' suffix (1024t). For each\n"
    "size: eager and graph latency (median, p10, p90 of --iters runs, device events, from the\n"
    "end of the input upload to the last kernel), capture time, graph memory and achieved\n"
    "TFLOP/s (GEMMs and attention). Then the graph memory of a 16-bucket warm-up.\n"
    "  --config NAME  a model with deterministic synthetic weights (no download): qwen2.5-vl-7b,\n"
    "                 qwen2.5-vl-3b, qwen2.5-vl-tiny, qwen3-vl-8b or qwen3-vl-tiny (16-pixel\n"
    "                 patches: give its sizes as patch counts, 256t,1024t,4096t)\n"
    "  --model DIR    a Hugging Face model directory instead\n"
    "  --iters N      timed runs per size and path, 1..100000\n"
    "  --peer FILE    JSON lines of the PyTorch peers measured in the same session, shown beside\n"
    "                 vg with ratios; give it once with the peers' outputs concatenated, or once\n"
    "                 per file (up to 8 files). Per size: tools/peer/peer_vit_torch.py (HF\n"
    "                 eager, SGLang's method: one CUDA graph),\n"
    "                 tools/peer/peer_vit_torch_compiled.py (padded intermediate,\n"
    "                 torch.compile, one CUDA graph), tools/peer/peer_vit3_torch.py (Qwen3-VL:\n"
    "                 all three); lines are matched by patch count and model family.\n"
    "                 With --stream: tools/peer/peer_vit_stream_torch.py on the same request list\n"
    "  --pieces       time every piece of the eager runs with device events: where the time goes\n"
    "  --json         print the results as one JSON document\n"
    "  --plot FILE    write an SVG plot of latency against patches\n"
    "  --quiet        no progress on stderr (shown only when stderr is a terminal)\n"
    "\n"
    "Serving: --stream N encodes N requests one at a time, as a server would: one\n"
    "vg_vit_encode per request with all its images. A request holds 1 to 4 images (50/25/15/10%)\n"
    "whose sides are multiples of 28 from 224 to 1344 (32 from 256 to 1536 for Qwen3-VL): area\n"
    "log-uniform, aspect 4:3, 3:4, 16:9, 9:16, 3:2, 2:3, 1:1, page, 2:1 (docs/performance.md).\n"
    "Reported: requests/s and p50/p99 latency per request (device events, from the end of the\n"
    "input upload to the last kernel; captures inside a call count), wall time, captures at load\n"
    "and during the stream, graph and device memory at the end, the share of padded rows, and\n"
    "the requests above the largest capture size, which run eagerly.\n"
    "  --seed S            the request list's seed, 0..2^53-1 (default 1)\n"
    "  --sides LO,HI       the bounds of the sides in pixels (default 224,1344: 8 and 48 times\n"
    "                      spatial merge x patch)\n"
    "  --requests-file F   write the request list there (JSON lines: {\"request\": 0, \"patch\": 14,\n"
    "                      \"images\": [[height, width], ...], \"patches\": N}) for the peer\n"
    "  --stream-from F     replay a request list from such a file instead of drawing one\n"
    "  --list-only         write the request list (--requests-file) and stop\n"
    "  --capture-sizes L   patch counts to capture, ascending (default: every 64 to 1024, then\n"
    "                      8 steps per doubling to 16384: 48 sizes, at most 12.5% padding above\n"
    "                      1024); larger requests run eagerly\n"
    "  --lazy              no warm-up at load: each bucket is captured when first used (the\n"
    "                      warm-up captures the buckets the request list uses, no others)\n"
    "Defaults: qwen2.5-vl-7b, BF16, mode full; per size 30 iterations, sizes 16, 32 and 64\n"
    "patches a side (224,448,896 for Qwen2.5-VL).\n"
    "Exit status: 0; 1 when a run, an input or an output failed; 2 for a wrong command line.\n";

#define MAX_PIECES 4096 /* pieces of a forward whose device time --pieces records */

/* Sides in pixels or patch counts with 't', checked against the model later (resolve_sizes).
 * Each item starts with a digit: no sign, no space, no empty item (the rule of vg_int_list). */
static int parse_sizes(const char *text, bench_args *a)
{
    for (const char *p = text;;) {
        char *end = NULL;
        errno = 0;
        long long v = *p >= '0' && *p <= '9' ? strtoll(p, &end, 10) : -1;
        if (errno || v <= 0 || v > (1 << 20) || a->nsizes == MAX_SIZES) return -1;
        a->size_is_patches[a->nsizes] = *end == 't';
        if (*end == 't') end++;
        a->size_value[a->nsizes++] = v;
        if (!*end) return 0;
        if (*end != ',') return -1;
        p = end + 1;
    }
}

/* The sizes in patches a side, now that the model's patch and merge sizes are known. A patch
 * count becomes the nearest square whose side is a multiple of the merge size. */
static int resolve_sizes(bench_args *a, const vg_vit_info *info)
{
    int patch = info->patch, merge = info->spatial_merge, unit = patch * merge;
    for (; a->nsizes < 3 && !a->sizes; a->nsizes++) /* the default: 16, 32, 64 patches a side */
        a->size_value[a->nsizes] = (int64_t)patch << (4 + a->nsizes);
    for (int i = 0; i < a->nsizes; i++) {
        int64_t v = a->size_value[i], side;
        if (a->size_is_patches[i]) {
            side = (int64_t)llround(sqrt((double)v) / merge) * merge;
            a->side_px[i] = 0;
        } else {
            if (v % unit)
                return vg_cli_usage("vit bench", "--sizes: %lld pixels is not a multiple of %d "
                                    "(spatial merge %d x patch %d)", (long long)v, unit, merge, patch);
            side = v / patch;
            a->side_px[i] = (int)v;
        }
        if (side < merge || side > 1024)
            return vg_cli_usage("vit bench", "--sizes: %lld%s makes %lld patches a side; %d to 1024 "
                                "are allowed", (long long)v, a->size_is_patches[i] ? "t" : " pixels",
                                (long long)side, merge);
        a->side_patches[i] = side;
    }
    return 0;
}

static int parse_capture_sizes(bench_args *a)
{
    const vg_int_list rule = {1, 1 << 24, 1, MAX_CAPTURE_SIZES, 0};
    char why[96];
    a->ncaps = vg_int_list_parse(a->capture_sizes, &rule, a->caps, NULL, why, sizeof why);
    if (a->ncaps < 0)
        return vg_cli_usage("vit bench", "--capture-sizes wants up to %d patch counts in ascending "
                            "order, separated by commas, got '%s': %s", MAX_CAPTURE_SIZES,
                            a->capture_sizes, why);
    return 0;
}

/* Options of one benchmark given to the other. */
static int check_combination(const bench_args *a)
{
    int streaming = a->stream || a->stream_from;
    if (a->stream && a->stream_from)
        return vg_cli_usage("vit bench", "give --stream N or --stream-from FILE, not both");
    if (streaming) {
        const char *per_size = a->sizes ? "--sizes" : a->iters ? "--iters" : a->pieces ? "--pieces"
                             : a->plot ? "--plot" : NULL;
        if (per_size)
            return vg_cli_usage("vit bench", "%s belongs to the per-size benchmark, not to --stream",
                                per_size);
        if (a->list_only && !a->requests_file)
            return vg_cli_usage("vit bench", "--list-only needs --requests-file FILE");
        if (a->stream_from && (a->seed_given || a->sides))
            return vg_cli_usage("vit bench", "%s draws a request list; --stream-from reads one",
                                a->seed_given ? "--seed" : "--sides");
        return 0;
    }
    const char *stream_only = a->seed_given ? "--seed" : a->requests_file ? "--requests-file"
                            : a->capture_sizes ? "--capture-sizes" : a->lazy ? "--lazy"
                            : a->sides ? "--sides" : a->list_only ? "--list-only" : NULL;
    if (stream_only)
        return vg_cli_usage("vit bench", "%s needs --stream N or --stream-from FILE", stream_only);
    return 0;
}

static int parse_args(int argc, char **argv, bench_args *a)
{
    a->peers = (vg_opt_strings){a->peer_paths, 0, MAX_PEER_FILES};
    a->seed = -1;
    const vg_opt opts[] = {
        {"--config", VG_OPT_STRING, &a->config, 0, 0, "qwen2.5-vl-7b, qwen2.5-vl-3b, qwen2.5-vl-tiny or another synthetic configuration"},
        {"--model", VG_OPT_STRING, &a->model, 0, 0, "a model directory"},
        {"--sizes", VG_OPT_STRING, &a->sizes, 0, 0, "sides in pixels or patch counts with 't', separated by commas"},
        {"--iters", VG_OPT_INT, &a->iters, 1, 100000, NULL},
        {"--mode", VG_OPT_STRING, &a->mode_name, 0, 0, "piecewise, full or full_and_piecewise"},
        {"--backend", VG_OPT_STRING, &a->backend, 0, 0, "a backend name or the path of a plugin .so"},
        {"--dtype", VG_OPT_STRING, &a->dtype_name, 0, 0, "bf16, f16 or f32"},
        {"--peer", VG_OPT_STRINGS, &a->peers, 0, 0, "a peer's JSON lines file"},
        {"--plot", VG_OPT_STRING, &a->plot, 0, 0, "an SVG file to write"},
        {"--json", VG_OPT_FLAG, &a->json, 0, 0, NULL},
        {"--pieces", VG_OPT_FLAG, &a->pieces, 0, 0, NULL},
        {"--quiet", VG_OPT_FLAG, &a->quiet, 0, 0, NULL},
        {"--stream", VG_OPT_INT, &a->stream, 1, 1000000, NULL},
        {"--seed", VG_OPT_I64, &a->seed, 0, 9007199254740991.0, NULL}, /* exact in JSON */
        {"--requests-file", VG_OPT_STRING, &a->requests_file, 0, 0, "a file to write the request list to"},
        {"--stream-from", VG_OPT_STRING, &a->stream_from, 0, 0, "a request list file"},
        {"--capture-sizes", VG_OPT_STRING, &a->capture_sizes, 0, 0, "patch counts, ascending, separated by commas"},
        {"--lazy", VG_OPT_FLAG, &a->lazy, 0, 0, NULL},
        {"--sides", VG_OPT_STRING, &a->sides, 0, 0, "two side lengths in pixels, LO,HI"},
        {"--list-only", VG_OPT_FLAG, &a->list_only, 0, 0, NULL},
    };
    int rc = vg_opt_parse("vit bench", k_help, opts, (int)(sizeof opts / sizeof opts[0]), argc, argv, 2);
    if (rc) return rc;
    a->seed_given = a->seed >= 0;
    if (!a->seed_given) a->seed = 1;
    if ((rc = check_combination(a))) return rc;
    if (!a->iters) a->iters = 30;
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
    if (a->capture_sizes && (rc = parse_capture_sizes(a))) return rc;
    if (a->sides) {
        char *end = NULL, *end2 = NULL;
        a->side_lo = strtoll(a->sides, &end, 10);
        a->side_hi = *end == ',' ? strtoll(end + 1, &end2, 10) : 0;
        if (*end != ',' || end2 == end + 1 || *end2 || a->side_lo < 1 || a->side_hi < a->side_lo ||
            a->side_hi > 14336)
            return vg_cli_usage("vit bench", "--sides wants LO,HI in pixels, 1 <= LO <= HI <= 14336, "
                                "got '%s'", a->sides);
    }
    if (!a->stream && !a->stream_from && a->sizes && parse_sizes(a->sizes, a))
        return vg_cli_usage("vit bench", "--sizes wants up to %d sides in pixels or patch counts "
                            "with 't' (up to 1048576), separated by commas, got '%s'", MAX_SIZES, a->sizes);
    return 0;
}

typedef struct timing {
    vg_vit *v;
    const float *pixels;
    int64_t patch_dim;
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
        st = vg_vit_encode(t->v, t->pixels, VG_DTYPE_F32, side * side, t->patch_dim, grid, 1, &o);
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
                              int64_t patch_dim, vg_progress *progress, warmup16 *w)
{
    int64_t ladder[16];
    for (int i = 0; i < 16; i++) ladder[i] = 64 * (i + 1);
    o->capture_sizes = ladder;
    o->num_capture_sizes = 16;
    o->warmup = 0;
    vg_status st = vg_vit_reconfigure(v, o);
    int64_t grid[3] = {1, 32, 32}; /* size the workspace for the largest bucket first */
    vg_vit_output out;
    if (st == VG_OK) st = vg_vit_encode(v, pixels, VG_DTYPE_F32, 1024, patch_dim, grid, 1, &out);
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
                         const float *pixels, int64_t patch_dim, row *rows, warmup16 *w)
{
    static double warm_pieces[MAX_PIECES];
    vg_progress progress;
    vg_progress_start(&progress, a->quiet);
    timing t = {v, pixels, patch_dim, &progress, ""};
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
    if (st == VG_OK) st = warmup16_run(v, o, rt, pixels, patch_dim, &progress, w);
    vg_progress_end(&progress);
    return st;
}

/* An output that is one of the inputs would replace it: 0, or 2 after a usage message. (--plot and
 * --requests-file never meet: one is the per-size benchmark's, the other the stream's.) */
static int outputs_not_inputs(const bench_args *a)
{
    const char *outs[2][2] = {{"--plot", a->plot}, {"--requests-file", a->requests_file}};
    for (int o = 0; o < 2; o++) {
        if (!outs[o][1]) continue;
        if (vg_out_check_distinct("vit bench", outs[o][0], outs[o][1], "--stream-from", a->stream_from)) return 2;
        for (int p = 0; p < a->peers.count; p++)
            if (vg_out_check_distinct("vit bench", outs[o][0], outs[o][1], "--peer", a->peer_paths[p])) return 2;
    }
    return 0;
}

/* Inputs and outputs, before anything is measured or loaded: 0, or 1 (2 for a usage error) after
 * a message. */
static int check_files(const bench_args *a, peer_data *peer, stream_list *list)
{
    if (outputs_not_inputs(a)) return 2;
    if (a->plot && vg_out_check("vit bench", a->plot)) return 1;
    if (a->requests_file && vg_out_check("vit bench", a->requests_file)) return 1;
    if (vit_bench_read_peers(a->peer_paths, a->peers.count, peer)) return 1;
    int streaming = a->stream || a->stream_from;
    /* a peer that reported errors only is said on stderr and leaves vg's own results */
    if (a->peers.count && streaming && !peer->stream_lines)
        return vg_cli_fail("vit bench", "the peer files hold no stream measurements (lines of "
                                        "tools/peer/peer_vit_stream_torch.py)");
    if (a->peers.count && !streaming && !peer->size_lines)
        return vg_cli_fail("vit bench", "the peer files hold no per-size measurements (lines of "
                                        "tools/peer/peer_vit_torch.py, peer_vit_torch_compiled.py "
                                        "or peer_vit3_torch.py)");
    if (a->stream_from) return vit_stream_read(a->stream_from, list);
    return 0;
}

/* The peers' numbers at the benchmarked sizes, for this model's family: 0, or 1 when the
 * peers measured another family only. */
static int match_peer_sizes(const bench_args *a, const vg_vit_info *info, const peer_data *peer,
                            row *rows)
{
    vit_family fam = vit_family_of(info);
    int ours = 0, other = 0;
    for (int p = 0; p < peer->nsizes; p++) {
        const peer_size *s = &peer->sizes[p];
        if (s->family != fam) {
            other++;
            continue;
        }
        ours++;
        for (int i = 0; i < a->nsizes; i++)
            if (s->patches == rows[i].patches)
                rows[i].peer_hf = s->hf_ms, rows[i].peer_graph = s->graph_ms,
                rows[i].peer_padded = s->padded_ms, rows[i].peer_compiled = s->compiled_ms;
    }
    if (peer->nsizes && !ours)
        return vg_cli_fail("vit bench", "the peer lines are all for %s; this model (%s) is %s",
                           vit_family_name(peer->sizes[0].family), info->model_type,
                           vit_family_name(fam));
    if (other)
        fprintf(stderr, "vg vit bench: %d peer size%s of another model family left out\n", other,
                other == 1 ? "" : "s");
    return 0;
}

/* The stream's request list and capture sizes fit the model, the peers replayed it, and it is
 * written where asked: 0, or 1 (2 for a usage error) after a message. */
static int stream_inputs(const bench_args *a, const vg_vit_info *info, const peer_data *peer,
                         stream_list *list)
{
    int unit = info->patch * info->spatial_merge;
    if (a->sides && (a->side_lo % unit || a->side_hi % unit))
        return vg_cli_usage("vit bench", "--sides: %lld and %lld must be multiples of %d (spatial "
                            "merge x patch)", (long long)a->side_lo, (long long)a->side_hi, unit);
    if (vit_stream_caps_check(a, info)) return 2; /* before the request file is written */
    int lo = a->sides ? (int)(a->side_lo / unit) : 8, hi = a->sides ? (int)(a->side_hi / unit) : 48;
    if (!a->stream_from && vit_stream_generate((uint64_t)a->seed, a->stream, unit, lo, hi, list))
        return 1;
    if (vit_stream_check(list, a->stream_from ? a->stream_from : "--stream", unit, info->patch))
        return 1;
    int64_t images, patches;
    vit_stream_totals(list, info->patch, &images, &patches);
    for (int p = 0; p < peer->nstreams; p++) {
        const peer_stream *s = &peer->streams[p];
        if (s->requests != list->n || s->images != images || s->patches != patches)
            return vg_cli_fail("vit bench", "the stream peer (%s) replayed another request list: %lld "
                               "requests, %lld images, %lld patches; this one has %d, %lld, %lld",
                               s->method, (long long)s->requests, (long long)s->images,
                               (long long)s->patches, list->n, (long long)images, (long long)patches);
    }
    return a->requests_file ? vit_stream_write(a->requests_file, list, info->patch) : 0;
}

static int run_sizes(bench_args *a, vg_runtime *rt, vg_vit *v, vg_vit_options *o,
                     const vg_vit_info *info, const peer_data *peer)
{
    int rc = resolve_sizes(a, info);
    if (rc) return rc;
    row rows[MAX_SIZES];
    memset(rows, 0, sizeof rows);
    int64_t max_patches = 1024; /* the 16-bucket warm-up encodes 1024 patches */
    for (int i = 0; i < a->nsizes; i++) {
        rows[i].side = a->side_px[i];
        rows[i].patches = a->side_patches[i] * a->side_patches[i];
        if (rows[i].patches > max_patches) max_patches = rows[i].patches;
    }
    if (match_peer_sizes(a, info, peer, rows)) return 1;
    size_t count = (size_t)max_patches * (size_t)info->patch_dim;
    float *pixels = malloc(count * sizeof(float));
    if (!pixels) return vg_cli_fail("vit bench", "out of host memory");
    for (size_t i = 0; i < count; i++) pixels[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
    warmup16 w = {0};
    rc = 1;
    if (measure(a, rt, v, o, pixels, info->patch_dim, rows, &w) != VG_OK)
        vg_cli_fail("vit bench", "%s", vg_last_error());
    else
        rc = vit_bench_report(a, rt, info, rows, &w);
    free(pixels);
    return rc;
}

static int run(bench_args *a, vg_runtime *rt, const peer_data *peer, stream_list *list)
{
    vg_vit_options o;
    vg_vit_options_init(&o);
    o.mode = VG_MODE_NONE;
    o.compute_dtype = a->dtype;
    o.profile_pieces = a->pieces;
    vg_vit *v = NULL;
    vg_status st = a->model ? vg_vit_load(rt, a->model, &o, &v)
                            : vg_vit_create_synthetic(rt, a->config, 1234, a->dtype, &o, &v);
    if (st != VG_OK) /* a --config that names no synthetic tower is a wrong command line */
        return !a->model && st == VG_ERR_NOT_FOUND ? vg_cli_usage("vit bench", "%s", vg_last_error())
                                                   : vg_cli_fail("vit bench", "%s", vg_last_error());
    vg_vit_info info;
    vg_vit_get_info(v, &info);
    int rc;
    if (!(a->stream || a->stream_from))
        rc = run_sizes(a, rt, v, &o, &info, peer);
    else if (!(rc = stream_inputs(a, &info, peer, list)) && a->list_only)
        printf("vg vit bench: %d requests written to %s\n", list->n, a->requests_file);
    else if (!rc)
        rc = vit_bench_stream(a, rt, v, &info, list, peer);
    vg_vit_free(v);
    return rc;
}

int vg_cmd_vit_bench(int argc, char **argv)
{
    bench_args a;
    memset(&a, 0, sizeof a);
    int prc = parse_args(argc, argv, &a);
    if (prc) return prc == VG_OPT_HELP ? 0 : prc;
    static peer_data peer; /* large: not on the stack */
    stream_list list = {0};
    int bad = check_files(&a, &peer, &list);
    if (bad) return bad;
    vg_runtime_options ro;
    vg_runtime_options_init(&ro);
    ro.backend = a.backend;
    vg_runtime *rt = NULL;
    int rc = 1;
    if (vg_runtime_open(&ro, &rt) != VG_OK) vg_cli_fail("vit bench", "%s", vg_last_error());
    else rc = run(&a, rt, &peer, &list);
    vg_runtime_close(rt);
    vit_stream_free(&list);
    return rc;
}
