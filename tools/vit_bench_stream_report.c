/* SPDX-License-Identifier: Apache-2.0 */
/* vg vit bench --stream's results: a text report or one JSON document on stdout, with the
 * stream peers' replays of the same request list beside vg's and the ratios. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "vg_cli.h"
#include "vit_bench.h"

static const char *peer_method_name(const char *method)
{
    if (!strcmp(method, "sglang")) return "torch, SGLang's method (graph per exact patch count)";
    if (!strcmp(method, "compiled")) return "torch, padded + compiled, graph per exact patch count";
    return method;
}

static double padded_share(const stream_result *r)
{
    uint64_t rows = r->real_rows + r->padded_rows;
    return rows ? (double)r->padded_rows / (double)rows : 0;
}

static int report_json(const bench_args *a, vg_runtime *rt, const vg_device_info *dev,
                       const vg_vit_info *info, const stream_list *l, const stream_result *r,
                       const peer_data *peer)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", a->model ? a->model : a->config);
    cJSON_AddStringToObject(root, "backend", vg_runtime_backend_name(rt));
    cJSON_AddStringToObject(root, "device", dev->name);
    cJSON_AddStringToObject(root, "mode", vg_graph_mode_name(a->mode));
    cJSON_AddStringToObject(root, "dtype", vg_dtype_name(info->compute_dtype));
    cJSON *s = cJSON_AddObjectToObject(root, "stream");
    cJSON_AddNumberToObject(s, "requests", r->requests);
    cJSON_AddNumberToObject(s, "images", (double)r->images);
    cJSON_AddNumberToObject(s, "patches", (double)r->patches);
    if (l->from_seed) cJSON_AddNumberToObject(s, "seed", (double)l->seed);
    else cJSON_AddStringToObject(s, "stream_from", a->stream_from);
    if (a->requests_file) cJSON_AddStringToObject(s, "requests_file", a->requests_file);
    cJSON_AddNumberToObject(s, "request_patches_p50", r->request_p50);
    cJSON_AddNumberToObject(s, "request_patches_p99", r->request_p99);
    cJSON_AddNumberToObject(s, "request_patches_max", (double)r->max_request);
    cJSON *caps = cJSON_AddArrayToObject(s, "capture_sizes");
    for (int i = 0; i < r->ncaps; i++) cJSON_AddItemToArray(caps, cJSON_CreateNumber((double)r->caps[i]));
    cJSON_AddNumberToObject(s, "max_capture_size", (double)r->caps[r->ncaps - 1]);
    cJSON_AddNumberToObject(s, "requests_above_max_capture", (double)r->above);
    cJSON_AddBoolToObject(s, "warmup", !r->lazy);
    cJSON_AddNumberToObject(s, "warmup_ms", r->warm_ms);
    cJSON_AddNumberToObject(s, "requests_per_s", r->requests / (r->busy_ms / 1000.0));
    cJSON_AddNumberToObject(s, "p50_ms", r->p50_ms);
    cJSON_AddNumberToObject(s, "p99_ms", r->p99_ms);
    cJSON_AddNumberToObject(s, "mean_ms", r->mean_ms);
    cJSON_AddNumberToObject(s, "wall_s", r->wall_ms / 1000.0);
    cJSON_AddNumberToObject(s, "wall_requests_per_s", r->requests / (r->wall_ms / 1000.0));
    cJSON_AddNumberToObject(s, "wall_p50_ms", r->wall_p50_ms);
    cJSON_AddNumberToObject(s, "wall_p99_ms", r->wall_p99_ms);
    cJSON_AddNumberToObject(s, "captures_at_load", (double)r->captures_load);
    cJSON_AddNumberToObject(s, "captures", (double)r->captures_stream);
    cJSON_AddNumberToObject(s, "capture_failures", (double)r->capture_failures);
    cJSON_AddNumberToObject(s, "eager_requests", (double)r->eager_requests);
    cJSON_AddNumberToObject(s, "live_graphs", (double)r->live_graphs);
    cJSON_AddNumberToObject(s, "graph_bytes", (double)r->graph_bytes);
    cJSON_AddNumberToObject(s, "device_mib_used", r->mib_used);
    cJSON_AddNumberToObject(s, "real_rows", (double)r->real_rows);
    cJSON_AddNumberToObject(s, "padded_rows", (double)r->padded_rows);
    cJSON_AddNumberToObject(s, "padded_row_share", padded_share(r));
    cJSON *peers = cJSON_AddArrayToObject(root, "peers");
    double rps = r->requests / (r->busy_ms / 1000.0);
    for (int i = 0; i < peer->nstreams; i++) {
        const peer_stream *p = &peer->streams[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "method", p->method);
        cJSON_AddNumberToObject(o, "done", (double)p->done);
        cJSON_AddNumberToObject(o, "requests_per_s", p->requests_per_s);
        cJSON_AddNumberToObject(o, "p50_ms", p->p50_ms);
        cJSON_AddNumberToObject(o, "p99_ms", p->p99_ms);
        cJSON_AddNumberToObject(o, "captures", (double)p->captures);
        if (p->graph_mib >= 0) cJSON_AddNumberToObject(o, "graph_mib", p->graph_mib);
        if (p->done == p->requests) {
            cJSON_AddNumberToObject(o, "vg_requests_per_s_ratio", rps / p->requests_per_s);
            cJSON_AddNumberToObject(o, "vg_p99_ratio", p->p99_ms / r->p99_ms);
        }
        if (p->note[0]) cJSON_AddStringToObject(o, "note", p->note);
        cJSON_AddItemToArray(peers, o);
    }
    return vg_cli_print_json(root, 1);
}

static void report_peers(const stream_result *r, const peer_data *peer)
{
    double rps = r->requests / (r->busy_ms / 1000.0);
    printf("\n%-56s %10s %9s %9s %8s %10s | %9s %9s\n", "same request list", "requests/s",
           "p50 ms", "p99 ms", "captures", "memory MiB", "vg req/s", "vg p99");
    printf("%-56s %10.2f %9.2f %9.2f %8lld %10.1f |\n", "vg (graph buckets)", rps, r->p50_ms,
           r->p99_ms, (long long)(r->captures_load + r->captures_stream), r->mib_used);
    for (int i = 0; i < peer->nstreams; i++) {
        const peer_stream *p = &peer->streams[i];
        char mib[32] = "-", rr[32] = "-", pr[32] = "-";
        if (p->graph_mib >= 0) snprintf(mib, sizeof mib, "%.1f", p->graph_mib);
        if (p->done == p->requests) { /* ratios only over the whole list */
            snprintf(rr, sizeof rr, "%.2fx", rps / p->requests_per_s);
            snprintf(pr, sizeof pr, "%.2fx", p->p99_ms / r->p99_ms);
        }
        printf("%-56s %10.2f %9.2f %9.2f %8lld %10s | %9s %9s\n", peer_method_name(p->method),
               p->requests_per_s, p->p50_ms, p->p99_ms, (long long)p->captures, mib, rr, pr);
        if (p->done < p->requests)
            printf("  %s served %lld of %lld requests (%s): no ratio\n", p->method,
                   (long long)p->done, (long long)p->requests, p->note[0] ? p->note : "stopped early");
        else if (p->note[0])
            printf("  %s: %s\n", p->method, p->note);
    }
    printf("vg req/s: vg's requests/s over the peer's; vg p99: the peer's p99 over vg's (above 1: "
           "vg ahead). Memory: vg's device memory used since before its warm-up; the peer's\n"
           "torch.cuda.memory_reserved() growth over the stream (graph pools and cached blocks).\n");
}

static void report_text(const bench_args *a, vg_runtime *rt, const vg_device_info *dev,
                        const vg_vit_info *info, const stream_list *l, const stream_result *r,
                        const peer_data *peer)
{
    char gb[32];
    printf("vg vit bench --stream: %s (%s%s), backend %s (%s), mode %s\n",
           a->model ? a->model : a->config, vg_dtype_name(info->compute_dtype),
           a->model ? "" : ", synthetic weights", vg_runtime_backend_name(rt), dev->name,
           vg_graph_mode_name(a->mode));
    if (l->from_seed) printf("requests: %d drawn from seed %llu", r->requests, (unsigned long long)l->seed);
    else printf("requests: %d read from %s", r->requests, a->stream_from);
    if (a->requests_file) printf(", written to %s", a->requests_file);
    printf("; %lld images, %lld patches; per request %.0f (median), %.0f (p99), %lld (max) patches\n",
           (long long)r->images, (long long)r->patches, r->request_p50, r->request_p99,
           (long long)r->max_request);
    int64_t top = r->caps[r->ncaps - 1];
    printf("capture sizes: %d, %lld..%lld patches%s; requests above %lld patches run eagerly: "
           "%lld of %d\n", r->ncaps, (long long)r->caps[0], (long long)top,
           a->ncaps ? " (--capture-sizes)" : " (every 64 to 1024, then 8 per doubling)",
           (long long)top, (long long)r->above, r->requests);
    if (r->lazy)
        printf("no warm-up (--lazy): a bucket's first call runs eagerly and is captured; later "
               "calls replay\n");
    else
        printf("warm-up at load, of the buckets the requests use: %d graphs captured in %.2f s\n",
               r->warm_graphs, r->warm_ms / 1000.0);
    printf("per request, device time (events from the end of the input upload to the last "
           "kernel; captures inside a call included):\n");
    printf("  %.2f requests/s, p50 %.3f ms, p99 %.3f ms, mean %.3f ms\n",
           r->requests / (r->busy_ms / 1000.0), r->p50_ms, r->p99_ms, r->mean_ms);
    printf("  wall: %.2f s for the stream (%.2f requests/s), p50 %.3f ms, p99 %.3f ms per "
           "vg_vit_encode call (host checks and copies included)\n", r->wall_ms / 1000.0,
           r->requests / (r->wall_ms / 1000.0), r->wall_p50_ms, r->wall_p99_ms);
    printf("captures during the stream: %lld (failed: %lld); requests run eagerly: %lld; graphs at "
           "the end: %lld, %s as measured at capture; device memory used since before the "
           "warm-up: %.1f MiB\n", (long long)r->captures_stream, (long long)r->capture_failures,
           (long long)r->eager_requests, (long long)r->live_graphs,
           vg_cli_bytes(r->graph_bytes, gb, sizeof gb), r->mib_used);
    printf("padded rows: %.2f%% of the rows computed (%llu of %llu)\n", 100 * padded_share(r),
           (unsigned long long)r->padded_rows, (unsigned long long)(r->real_rows + r->padded_rows));
    if (peer->nstreams) report_peers(r, peer);
}

int vit_bench_stream_report(const bench_args *a, vg_runtime *rt, const vg_vit_info *info,
                            const stream_list *l, const stream_result *r, const peer_data *peer)
{
    vg_device_info dev = {.struct_size = sizeof dev};
    vg_runtime_device_info(rt, &dev);
    if (a->json) return report_json(a, rt, &dev, info, l, r, peer);
    report_text(a, rt, &dev, info, l, r, peer);
    return 0;
}
