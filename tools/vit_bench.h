/* SPDX-License-Identifier: Apache-2.0 */
/* vg vit bench: what the run measures (cmd_vit_bench.c), what the PyTorch peer measured
 * (vit_bench_peer.c), and how both are reported (vit_bench_report.c). */
#ifndef VG_VIT_BENCH_H
#define VG_VIT_BENCH_H

#include "stats.h"
#include "vg/vg_vit.h"

#define MAX_SIZES 32
#define MAX_PIECE_GROUPS 16
#define MAX_PEER 256

typedef struct bench_args {
    const char *config, *model, *backend, *peer, *plot, *mode_name, *dtype_name, *sizes;
    vg_graph_mode mode;
    vg_dtype dtype;
    int iters, json, nsizes, pieces, quiet;
    int64_t side_patches[MAX_SIZES];
    int side_px[MAX_SIZES];
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
    double peer_hf, peer_graph; /* 0 when absent */
    piece_group groups[MAX_PIECE_GROUPS];
    int ngroups;
    double pieces_ms; /* an eager forward, summed over its pieces */
} row;

typedef struct warmup16 {
    int graphs;
    double mib_before, mib_after; /* device free memory around the warm-up */
    uint64_t graph_bytes;         /* as the runner measured it at capture */
} warmup16;

/* One line of the peer's JSON lines: {"S": 256, "hf_eager_ms": ..., "torch_blocks_graph_ms": ...} */
typedef struct peer_row {
    int64_t patches;
    double hf_ms, graph_ms;
} peer_row;

/* Read the whole peer file: the number of rows, or -1 after printing why it is unusable. */
int vit_bench_read_peer(const char *path, peer_row *out, int max);
/* Results on stdout, as text or one JSON document; then the plot. 0, or 1 after a message. */
int vit_bench_report(const bench_args *a, vg_runtime *rt, const vg_vit_info *info,
                     const row *rows, const warmup16 *w);

#endif
