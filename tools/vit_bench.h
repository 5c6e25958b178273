/* SPDX-License-Identifier: Apache-2.0 */
/* vg vit bench: what the run measures (cmd_vit_bench.c per image size, vit_bench_stream.c for a
 * stream of requests), the request lists of the stream (vit_stream_requests.c), what the
 * PyTorch peers measured (vit_bench_peer.c), and how it is reported (vit_bench_report.c). */
#ifndef VG_VIT_BENCH_H
#define VG_VIT_BENCH_H

#include "cli_args.h"
#include "stats.h"
#include "vg/vg_vit.h"

#define MAX_SIZES 32
#define MAX_PIECE_GROUPS 16
#define MAX_PEER 256
#define MAX_PEER_FILES 8
#define MAX_PEER_STREAMS 16
#define STREAM_MAX_IMAGES 16 /* images of one request in a request file */
#define MAX_CAPTURE_SIZES 256 /* as many as the vision encoder keeps */

/* The model family a peer's numbers belong to: the peers build Qwen2.5-VL-7B's and
 * Qwen3-VL-8B's vision towers. */
typedef enum vit_family { VIT_FAMILY_UNKNOWN = 0, VIT_FAMILY_QWEN25, VIT_FAMILY_QWEN3 } vit_family;

const char *vit_family_name(vit_family f);
/* The family of a model, from its model_type ("qwen2_5_vl", "qwen3_vl"...). */
vit_family vit_family_of(const vg_vit_info *info);

typedef struct bench_args {
    const char *config, *model, *backend, *plot, *mode_name, *dtype_name, *sizes;
    const char *peer_paths[MAX_PEER_FILES];
    vg_opt_strings peers;
    vg_graph_mode mode;
    vg_dtype dtype;
    int iters, json, nsizes, pieces, quiet;
    int64_t size_value[MAX_SIZES]; /* as given: pixels, or patches with 't' */
    int size_is_patches[MAX_SIZES];
    /* from size_value once the model's patch size is known */
    int64_t side_patches[MAX_SIZES];
    int side_px[MAX_SIZES];
    /* --stream */
    int stream, lazy, list_only;
    int64_t seed;
    int seed_given;
    const char *requests_file, *stream_from, *capture_sizes, *sides;
    int64_t side_lo, side_hi; /* --sides, pixels; 0: 8 and 48 units of spatial merge x patch */
    int64_t caps[MAX_CAPTURE_SIZES]; /* --capture-sizes, parsed */
    int ncaps;
} bench_args;

/* Device time of the eager runs' pieces, summed over pieces of one name. */
typedef struct piece_group {
    char name[32];
    int count;
    double ms, worst_ms; /* per call */
    int64_t worst_arg;
} piece_group;

typedef struct row {
    int side; /* pixels, 0 when given as tokens */
    int64_t patches;
    vg_sample_stats eager, graph;
    double capture_ms, flops;
    uint64_t graph_bytes;
    /* the peers at this patch count; 0 when absent */
    double peer_hf, peer_graph, peer_padded, peer_compiled;
    piece_group groups[MAX_PIECE_GROUPS];
    int ngroups;
    double pieces_ms; /* an eager forward, summed over its pieces */
} row;

typedef struct warmup16 {
    int graphs;
    double mib_before, mib_after; /* device free memory around the warm-up */
    uint64_t graph_bytes;         /* as the runner measured it at capture */
} warmup16;

/* ---- the peers' JSON lines ----------------------------------------------------------------- */

/* What the peers measured at one patch count of one family, merged over their lines:
 * tools/peer/peer_vit_torch.py (hf_eager_ms, torch_blocks_graph_ms),
 * tools/peer/peer_vit_torch_compiled.py (padded_graph_ms, compiled_graph_ms),
 * tools/peer/peer_vit3_torch.py (hf_eager_ms, torch_graph_ms, compiled_graph_ms).
 * 0: not measured. */
typedef struct peer_size {
    vit_family family;
    int64_t patches;
    double hf_ms, graph_ms, padded_ms, compiled_ms;
} peer_size;

/* One line of tools/peer/peer_vit_stream_torch.py: one method's replay of a request list. */
typedef struct peer_stream {
    char method[32];                  /* "sglang" or "compiled" */
    int64_t requests, images, patches; /* the list it replayed */
    int64_t done;                      /* requests it served (fewer when it stopped early) */
    double requests_per_s, p50_ms, p99_ms, wall_s, graph_mib;
    int64_t captures, eager_requests;
    char note[160];                    /* why it stopped early, or "" */
} peer_stream;

typedef struct peer_data {
    peer_size sizes[MAX_PEER];
    int nsizes;
    peer_stream streams[MAX_PEER_STREAMS];
    int nstreams;
    int size_lines, stream_lines; /* read, those reporting an error included */
} peer_data;

/* Read every peer file (lines of any of the peer scripts, in any order, files concatenated or
 * given one by one): 0, or 1 after printing why one is unusable. */
int vit_bench_read_peers(const char *const *paths, int npaths, peer_data *out);

/* ---- the stream's request list ------------------------------------------------------------- */

typedef struct stream_request {
    int nimg;
    int64_t h[STREAM_MAX_IMAGES], w[STREAM_MAX_IMAGES]; /* pixels */
    int64_t stated_patches; /* a file's "patches", checked; 0 when absent */
    int line;               /* in the file it came from; 0 when generated */
} stream_request;

typedef struct stream_list {
    stream_request *req;
    int n, cap;
    int patch;     /* a file's "patch", checked against the model's; 0 when absent */
    int from_seed; /* generated from `seed`, not read from a file */
    uint64_t seed;
} stream_list;

/* N requests of 1-4 images drawn from `seed` (vit_stream_requests.c documents the spread);
 * sides are multiples of unit_px from lo_units to hi_units of them (the default 8..48 makes
 * 224..1344 pixels for Qwen2.5-VL). 0, or 1 after a message. */
int vit_stream_generate(uint64_t seed, int n, int unit_px, int lo_units, int hi_units,
                        stream_list *out);
/* A request list written by vit_stream_write (or by hand): 0, or 1 after a message naming
 * the file and line. Sides are checked against unit_px later, by vit_stream_check. */
int vit_stream_read(const char *path, stream_list *out);
/* Every side a positive multiple of unit_px: 0, or 1 after a message naming `where`. */
int vit_stream_check(const stream_list *l, const char *where, int unit_px, int patch);
/* One JSON object per line: {"request": 0, "patch": 14, "images": [[448, 672], ...],
 * "patches": 1536}, sides as [height, width] in pixels. 0, or 1 after a message. */
int vit_stream_write(const char *path, const stream_list *l, int patch);
void vit_stream_free(stream_list *l);
/* Totals of the list, as the stream peer reports them for the check that both sides
 * replayed the same list. */
void vit_stream_totals(const stream_list *l, int patch, int64_t *images, int64_t *patches);

/* ---- running and reporting ----------------------------------------------------------------- */

/* What the stream benchmark measured. Latency is device time from events (the end of the
 * input upload to the last kernel), wall time is vg_vit_encode's whole call. */
typedef struct stream_result {
    int requests;
    int64_t images, patches, max_request, above; /* above: requests past the largest capture size */
    double request_p50, request_p99;             /* patches per request */
    const int64_t *caps;
    int ncaps, lazy;
    int warm_graphs;
    double warm_ms;
    double p50_ms, p99_ms, mean_ms, busy_ms;     /* device time per request; busy: the sum */
    double wall_ms, wall_p50_ms, wall_p99_ms;    /* wall: the whole stream, then per call */
    int64_t captures_load, captures_stream, capture_failures, live_graphs, eager_requests;
    uint64_t graph_bytes;                        /* the runner's count, taken at each capture */
    double mib_used;                             /* device free memory lost since before warm-up */
    uint64_t real_rows, padded_rows;
} stream_result;

/* The stream's results (and the peers beside them) on stdout: 0, or 1 after a message. */
int vit_bench_stream_report(const bench_args *a, vg_runtime *rt, const vg_vit_info *info,
                            const stream_list *list, const stream_result *r, const peer_data *peer);

/* Results on stdout, as text or one JSON document; then the plot. 0, or 1 after a message. */
int vit_bench_report(const bench_args *a, vg_runtime *rt, const vg_vit_info *info,
                     const row *rows, const warmup16 *w);
/* The stream's capture sizes (--capture-sizes, else the server ladder) against the model: 0, or 2
 * after a usage message. Before anything is written or measured. */
int vit_stream_caps_check(const bench_args *a, const vg_vit_info *info);
/* The stream benchmark on a loaded model, reported on stdout: 0, or 1 after a message. */
int vit_bench_stream(const bench_args *a, vg_runtime *rt, vg_vit *v, const vg_vit_info *info,
                     const stream_list *list, const peer_data *peer);

#endif
