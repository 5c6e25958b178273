/* SPDX-License-Identifier: Apache-2.0 */
/* vg vit bench --stream: a server's view of the vision encoder. Requests of 1-4 images of
 * mixed sizes arrive one after another; each is one vg_vit_encode call with all its images.
 * The runner pads each call to a capture size and replays that size's graph (captured at load,
 * as a server warms up, or on first use with --lazy); calls above the largest capture size run
 * eagerly. Measured per request: device time from events and the call's wall time; at the end,
 * the runner's statistics (captures, padding, graph memory) and the device memory used. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_progress.h"
#include "vg/vg_half.h"
#include "vg_cli.h"
#include "vit_bench.h"

/* The server's capture sizes: every 64 patches to 1024, then 8 steps per doubling to 16384
 * (padding at most 12.5% above 1024, 6% on average). Larger requests (four big images) run
 * eagerly: at 16384 patches a forward takes tens of milliseconds on an H100, next to which the
 * launches a graph saves are noise, and a bigger largest bucket would make every graph's
 * shared workspace bigger. */
static int server_sizes(int64_t *out)
{
    int n = 0;
    for (int64_t s = 64; s <= 1024; s += 64) out[n++] = s;
    for (int64_t base = 1024; base < 16384; base *= 2)
        for (int k = 1; k <= 8; k++) out[n++] = base + k * base / 8;
    return n;
}

static double free_mib(vg_runtime *rt)
{
    vg_device_info d = {.struct_size = sizeof d};
    return vg_runtime_device_info(rt, &d) == VG_OK ? (double)d.mem_free / 1048576.0 : 0;
}

static int64_t request_patches(const stream_request *q, int patch)
{
    int64_t n = 0;
    for (int k = 0; k < q->nimg; k++) n += (q->h[k] / patch) * (q->w[k] / patch);
    return n;
}

/* How many buckets calls of these sizes use: what the warm-up will capture. */
static int buckets_used(const vg_runner *run, const int64_t *rows, int n)
{
    int nb = vg_runner_num_buckets(run), count = 0;
    unsigned char *seen = calloc((size_t)nb + 1, 1);
    for (int i = 0; seen && i < n; i++) {
        int b = vg_runner_bucket_for(run, rows[i]);
        if (b >= 0 && !seen[b]) seen[b] = 1, count++;
    }
    free(seen);
    return count;
}

/* Pixel values in the compute dtype, so that vg_vit_encode only checks and copies them (a
 * server hands the encoder what its image processor made). */
static void *make_pixels(vg_dtype dt, size_t count)
{
    void *p = malloc(count * vg_dtype_size(dt));
    for (size_t i = 0; p && i < count; i++) {
        float x = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
        if (dt == VG_DTYPE_F32) ((float *)p)[i] = x;
        else if (dt == VG_DTYPE_BF16) ((uint16_t *)p)[i] = vg_f32_to_bf16(x);
        else ((uint16_t *)p)[i] = vg_f32_to_f16(x);
    }
    return p;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double quantile_of(double *x, int n, double q)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return vg_stats_quantile(x, (size_t)n, q);
}

typedef struct samples {
    double *dev, *wall, *patches;
} samples;

/* Encode every request in order: 0, or 1 after a message. */
static int serve(const bench_args *a, vg_vit *v, const vg_vit_info *info, const stream_list *l,
                 const void *pixels, samples *s, stream_result *r)
{
    vg_progress progress;
    vg_progress_start(&progress, a->quiet);
    double t0 = vg_now_ms();
    int rc = 0;
    for (int i = 0; i < l->n && !rc; i++) {
        vg_progress_show(&progress, "vit bench: stream, request", i, l->n);
        const stream_request *q = &l->req[i];
        int64_t grid[STREAM_MAX_IMAGES * 3], rows = request_patches(q, info->patch);
        for (int k = 0; k < q->nimg; k++)
            grid[3 * k] = 1, grid[3 * k + 1] = q->h[k] / info->patch, grid[3 * k + 2] = q->w[k] / info->patch;
        vg_vit_output o;
        if (vg_vit_encode(v, pixels, info->compute_dtype, rows, info->patch_dim, grid, q->nimg, &o) != VG_OK) {
            rc = vg_cli_fail("vit bench", "request %d (%d images, %lld patches): %s", i, q->nimg,
                             (long long)rows, vg_last_error());
            break;
        }
        s->dev[i] = o.device_ms;
        s->wall[i] = o.total_ms;
        s->patches[i] = (double)rows;
        r->busy_ms += o.device_ms;
        r->eager_requests += o.run.path == VG_RUN_EAGER;
        r->above += o.run.bucket < 0;
        vg_free(o.embeddings);
    }
    r->wall_ms = vg_now_ms() - t0;
    vg_progress_show(&progress, "vit bench: stream, request", l->n, l->n);
    vg_progress_end(&progress);
    return rc;
}

/* The stream's capture sizes: --capture-sizes, else the server ladder; their count. */
static int stream_caps(const bench_args *a, const int64_t **caps)
{
    static int64_t ladder[MAX_CAPTURE_SIZES];
    *caps = a->ncaps ? a->caps : ladder;
    return a->ncaps ? a->ncaps : server_sizes(ladder);
}

int vit_stream_caps_check(const bench_args *a, const vg_vit_info *info)
{
    const int64_t *caps = NULL;
    const int n = stream_caps(a, &caps), unit = info->spatial_merge * info->spatial_merge;
    for (int i = 0; i < n; i++)
        if (caps[i] % unit)
            return vg_cli_usage("vit bench", "--capture-sizes: %lld is not a multiple of spatial "
                                "merge^2 = %d", (long long)caps[i], unit);
    return 0;
}

/* Capture sizes (checked by vit_stream_caps_check first), warm-up, the stream, statistics: 0, or 1
 * after a message. */
static int measure_stream(const bench_args *a, vg_runtime *rt, vg_vit *v, const vg_vit_info *info,
                          const stream_list *l, const void *pixels, samples *s, stream_result *r)
{
    r->ncaps = stream_caps(a, &r->caps);
    r->lazy = a->lazy;
    vg_vit_options o;
    vg_vit_options_init(&o);
    o.mode = a->mode;
    o.capture_sizes = r->caps;
    o.num_capture_sizes = r->ncaps;
    if (vg_vit_reconfigure(v, &o) != VG_OK) return vg_cli_fail("vit bench", "%s", vg_last_error());
    vg_runner *run = vg_vit_runner(v);
    double mib_before = free_mib(rt);
    vg_bucket_stats warm = {0}, end = {0};
    if (!a->lazy) {
        /* as a server warms what its traffic uses: the buckets of this list's requests only (a
         * few small images need a few small buckets, not all 48 up to 16384 patches) */
        int64_t *rows = malloc((size_t)l->n * sizeof *rows);
        if (!rows) return vg_cli_fail("vit bench", "out of host memory");
        for (int i = 0; i < l->n; i++) rows[i] = request_patches(&l->req[i], info->patch);
        vg_progress progress;
        vg_progress_start(&progress, a->quiet);
        vg_progress_show(&progress, "warm-up: capturing the requests' buckets, bucket", 0,
                         buckets_used(run, rows, l->n));
        double t0 = vg_now_ms();
        vg_batch_desc like = {.num_tokens = 0};
        vg_status st = vg_runner_warmup_for(run, &like, rows, l->n, vg_progress_warmup, &progress);
        vg_progress_end(&progress);
        free(rows);
        if (st != VG_OK) return vg_cli_fail("vit bench", "warm-up: %s", vg_last_error());
        r->warm_ms = vg_now_ms() - t0;
        vg_runner_stats(run, NULL, 0, &warm);
        r->warm_graphs = warm.live_graphs;
        r->captures_load = (int64_t)warm.captures;
    }
    if (serve(a, v, info, l, pixels, s, r)) return 1;
    vg_runner_stats(run, NULL, 0, &end);
    r->mib_used = mib_before - free_mib(rt);
    r->captures_stream = (int64_t)(end.captures - warm.captures);
    r->capture_failures = (int64_t)end.capture_failures;
    r->live_graphs = end.live_graphs;
    r->graph_bytes = end.graph_bytes;
    r->real_rows = end.real_tokens;
    r->padded_rows = end.padded_tokens;
    return 0;
}

int vit_bench_stream(const bench_args *a, vg_runtime *rt, vg_vit *v, const vg_vit_info *info,
                     const stream_list *l, const peer_data *peer)
{
    stream_result r = {.requests = l->n};
    vit_stream_totals(l, info->patch, &r.images, &r.patches);
    for (int i = 0; i < l->n; i++) {
        int64_t p = request_patches(&l->req[i], info->patch);
        if (p > r.max_request) r.max_request = p;
    }
    samples s = {calloc((size_t)l->n, sizeof(double)), calloc((size_t)l->n, sizeof(double)),
                 calloc((size_t)l->n, sizeof(double))};
    void *pixels = make_pixels(info->compute_dtype, (size_t)r.max_request * (size_t)info->patch_dim);
    int rc = 1;
    if (!s.dev || !s.wall || !s.patches || !pixels) {
        vg_cli_fail("vit bench", "out of host memory for %lld patches", (long long)r.max_request);
    } else if (!(rc = measure_stream(a, rt, v, info, l, pixels, &s, &r))) {
        r.mean_ms = r.busy_ms / l->n;
        r.p50_ms = quantile_of(s.dev, l->n, 0.5);
        r.p99_ms = quantile_of(s.dev, l->n, 0.99);
        r.wall_p50_ms = quantile_of(s.wall, l->n, 0.5);
        r.wall_p99_ms = quantile_of(s.wall, l->n, 0.99);
        r.request_p50 = quantile_of(s.patches, l->n, 0.5);
        r.request_p99 = quantile_of(s.patches, l->n, 0.99);
        rc = vit_bench_stream_report(a, rt, info, l, &r, peer);
    }
    free(pixels);
    free(s.dev);
    free(s.wall);
    free(s.patches);
    return rc;
}
