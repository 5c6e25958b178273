/* SPDX-License-Identifier: Apache-2.0 */
/* Vision encoders through the graph runner: the vision towers of Qwen2.5-VL and Qwen3-VL (the
 * family is read from the checkpoint's config.json).
 *
 * Inputs are laid out as the Hugging Face image processor produces them: pixel_values
 * [S, in_channels·temporal_patch·patch²] and grid_thw [n, 3] (t, h, w in patches) for any mix
 * of images and videos packed into one call. The output is the merged embeddings
 * [S / spatial_merge², out_hidden_size] in image order, as HF returns them, and for Qwen3-VL the
 * deepstack features of the same shape, one per deepstack merger. */
#ifndef VG_VIT_H
#define VG_VIT_H

#include "vg_runner.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vg_vit vg_vit;

typedef struct vg_vit_options {
    uint32_t struct_size;
    vg_graph_mode mode;            /* default FULL_AND_PIECEWISE */
    const int64_t *capture_sizes;  /* token counts, multiples of spatial_merge²; NULL: the
                                      runner's default ladder */
    int num_capture_sizes;
    int64_t max_capture_size;      /* 0: the largest capture size */
    int warmup;                    /* capture every bucket at load time */
    vg_dtype compute_dtype;        /* VG_DTYPE_COUNT_ (default): the checkpoint's dtype */
    int profile_pieces;            /* time each piece of eager runs (vg_runner_piece_times) */
} vg_vit_options;

typedef struct vg_vit_info {
    char model_type[32];           /* the family: "qwen2_5_vl" or "qwen3_vl" */
    double flops_per_patch_linear; /* GEMM FLOPs per patch (attention excluded) */
    int depth, hidden, heads, head_dim, intermediate, out_hidden;
    int patch, temporal_patch, spatial_merge, in_channels, window_size; /* window: 0 for Qwen3-VL */
    int64_t patch_dim;  /* columns of pixel_values */
    vg_dtype compute_dtype;
    uint64_t weight_bytes; /* device memory of the weights */
    /* Qwen3-VL (0 for Qwen2.5-VL) */
    int num_position_embeddings; /* rows of the learned position table (a square grid) */
    int num_deepstack;           /* deepstack features per call */
} vg_vit_info;

typedef struct vg_vit_output {
    /* [rows, cols] F32 on the host, owned by the caller: vg_free(embeddings) frees it together
     * with the deepstack arrays below (one allocation) */
    float *embeddings;
    int64_t rows, cols;
    vg_run_info run;    /* bucket, graph or eager, launches */
    double device_ms;   /* device time of the forward, from the end of the input upload to the
                           end of the last kernel (events) */
    double total_ms;    /* host wall time of the call, copies included */
    /* Qwen3-VL: the deepstack features, each [rows, cols] F32 like the embeddings, in the order
     * of the blocks they follow (Hugging Face's deepstack_features). deepstack and the arrays it
     * points to live in the embeddings' allocation: never free them apart. 0 and NULL for
     * Qwen2.5-VL. */
    int num_deepstack;
    float **deepstack;
} vg_vit_output;

VG_API void vg_vit_options_init(vg_vit_options *opts);
/* Load a Hugging Face model directory (config.json with vision_config; model.safetensors or
 * shards with model.safetensors.index.json; tensors named visual.* or model.visual.*). */
VG_API vg_status vg_vit_load(vg_runtime *rt, const char *model_dir, const vg_vit_options *opts,
                             vg_vit **out);
/* A model of a named configuration with deterministic synthetic weights, for benchmarks: no
 * files, no download. "qwen2.5-vl-7b" is the 7B model's vision tower (depth 32, hidden 1280,
 * 16 heads, intermediate 3420, out 3584, full attention in blocks 7, 15, 23, 31);
 * "qwen2.5-vl-3b" and "qwen2.5-vl-tiny" (the test fixture's shape) also exist. "qwen3-vl-8b" is
 * Qwen3-VL-8B's tower (depth 27, hidden 1152, 16 heads, intermediate 4304, patch 16, out 4096,
 * 2304 position embeddings, deepstack after blocks 8, 16, 24); "qwen3-vl-tiny" is its test
 * fixture's shape. dtype is the compute dtype (F32, BF16 or F16). */
VG_API vg_status vg_vit_create_synthetic(vg_runtime *rt, const char *config, uint64_t seed,
                                         vg_dtype dtype, const vg_vit_options *opts, vg_vit **out);
/* Change the graph options (mode, capture sizes, threshold, warm-up; compute_dtype is kept):
 * the runner is rebuilt and every graph is dropped. */
VG_API vg_status vg_vit_reconfigure(vg_vit *vit, const vg_vit_options *opts);
/* Floating-point operations of one call for these grids: GEMMs plus attention (QKᵀ and PV over
 * every full and window segment). For achieved-throughput figures. */
VG_API vg_status vg_vit_flops(const vg_vit *vit, const int64_t *grid_thw, int64_t num_grids,
                              double *flops);
VG_API vg_status vg_vit_free(vg_vit *vit);
VG_API vg_status vg_vit_get_info(const vg_vit *vit, vg_vit_info *info);
VG_API vg_runner *vg_vit_runner(vg_vit *vit);

/* Encode one call. pixel_values is F32, BF16 or F16 host memory of rows x cols; grid_thw holds
 * num_grids (t, h, w) triples. Bad shapes return VG_ERR_INVALID_ARG with a message. */
VG_API vg_status vg_vit_encode(vg_vit *vit, const void *pixel_values, vg_dtype pixel_dtype,
                               int64_t rows, int64_t cols, const int64_t *grid_thw,
                               int64_t num_grids, vg_vit_output *out);

/* vg_vit_encode with pixel_values in device memory of the vit's runtime (an imported IPC tensor,
 * vg_ipc.h, say): copied, or converted to the compute dtype, on the device, with no host round
 * trip. The input is not scanned on the host: a NaN or infinite pixel is refused afterwards,
 * from the embeddings it spoils (VG_ERR_INVALID_ARG naming the image). */
VG_API vg_status vg_vit_encode_device(vg_vit *vit, const void *pixel_values, vg_dtype pixel_dtype,
                                      int64_t rows, int64_t cols, const int64_t *grid_thw,
                                      int64_t num_grids, vg_vit_output *out);

#ifdef __cplusplus
}
#endif
#endif
