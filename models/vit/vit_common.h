/* SPDX-License-Identifier: Apache-2.0 */
/* The vision towers of Qwen2.5-VL and Qwen3-VL: shared definitions of the files of models/vit.
 * The two towers are peers: both use what the vit_* files share (loading, the runner and its
 * buffers, per-call device data, the encode path) and each has its own config members, tensors,
 * per-call layout and pieces (vit25_* for Qwen2.5-VL's, vit3_* for Qwen3-VL's), which the shared
 * code reaches through the tower's vit_tower table alone. Backend-agnostic: written on the public
 * headers alone, every kernel reached through the core device API (vg_device.h). */
#ifndef VG_VIT_COMMON_H
#define VG_VIT_COMMON_H

#include "../common/checkpoint.h"
#include "../common/config_json.h"
#include "../common/linear.h"
#include "../common/model_base.h"
#include "../common/util.h"
#include "../common/weight_arena.h"
#include "vg/vg_device.h"
#include "vg/vg_vit.h"

#define VIT_MAX_DEPTH 256
#define VIT_MAX_CAPTURE_SIZES 256
/* Taps per patch of the resampled position table (bilinear: 2 x 2). */
#define VIT3_TAPS 4

typedef enum vit_family {
    VIT_QWEN2_5 = 0, /* RMSNorm, gated SiLU MLP, window attention, one merger */
    VIT_QWEN3 = 1    /* LayerNorm, GELU MLP, learned position table, deepstack mergers */
} vit_family;

typedef struct vit_cfg {
    vit_family family;
    int depth, hidden, heads, head_dim, inter, out_hidden;
    int inter_pad; /* inter rounded up to 16: zero rows and columns, exact, aligned GEMMs */
    int patch, tpatch, merge, in_ch, window;
    int unit;      /* tokens per merge unit: merge² */
    int win_units; /* window side in merge units */
    int64_t patch_dim;
    float eps, theta;
    unsigned char fullatt[VIT_MAX_DEPTH];
    /* Qwen3-VL */
    vg_activation act;         /* the blocks' MLP activation (hidden_act) */
    int num_pos, pos_side;     /* the learned position table: num_pos = pos_side² rows */
    int num_deepstack;         /* deepstack mergers */
    int deepstack_block[VIT_MAX_DEPTH]; /* the block each one follows, in config order */
} vit_cfg;

/* Parse and validate config.json's vision_config, picking the family from model_type, then the
 * members both towers share, then the tower's own; errors name config.json and the member. */
vg_status vit_config_parse(const cJSON *root, const char *dir, vit_cfg *cfg);
/* vit25_config.c, vit3_config.c: each tower's own members of vision_config (v), after the
 * family was picked and the shared members parsed. */
vg_status vit25_config_parse(const cJSON *v, const char *where, vit_cfg *cfg);
vg_status vit3_config_parse(const cJSON *v, const char *where, vit_cfg *cfg);
/* The name of a family's model_type ("qwen2_5_vl", "qwen3_vl"). */
const char *vit_family_name(vit_family f);

typedef struct vit_block {
    void *norm1, *qkv_w, *qkv_b, *proj_w, *proj_b, *norm2, *gu_w, *gu_b, *down_w, *down_b;
    /* Qwen3-VL: LayerNorm biases; the MLP is fc1 (in gu_w, gu_b: [inter_pad, hidden]), the
     * activation, fc2 (in down_w, down_b) */
    void *norm1_b, *norm2_b;
} vit_block;

/* A Qwen3-VL patch merger: LayerNorm (over hidden, or over merge²·hidden after the shuffle for
 * the deepstack ones), fc1, GELU, fc2. */
typedef struct vit3_merger {
    void *norm_w, *norm_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
} vit3_merger;

typedef struct vit_weights {
    vg_arena_block mem; /* one device allocation for everything below */
    /* Qwen2.5-VL: norm2's weight folded into gu_w's columns (blocks' norm2 NULL), the MLP's GEMM
     * normalising without one (gemm_rmsnorm_a_unit) */
    int norm2_folded;
    void *patch_w;
    vit_block blocks[VIT_MAX_DEPTH];
    void *ln_q, *m1_w, *m1_b, *m2_w, *m2_b;
    /* Qwen3-VL */
    void *patch_b, *pos_embed;
    vit3_merger merger, deepstack[VIT_MAX_DEPTH];
} vit_weights;

struct vit_tower;

/* Upload the weights of `ck` in dtype dt through the weight arena, or, when ck is NULL,
 * deterministic synthetic weights (from `seed`) for benchmarks: the tensors the tower describes.
 * Qwen2.5-VL: gate_proj and up_proj are stacked into one [2·inter_pad, hidden] weight so the MLP
 * input projection is one GEMM; with fold_norm2, multiplied by norm2's weight (w->norm2_folded).
 * The padding rows and columns are zero. */
vg_status vit_weights_load(vg_runtime *rt, const struct vit_tower *t, const vg_ckpt *ck,
                           uint64_t seed, const vit_cfg *cfg, vg_dtype dt, int fold_norm2,
                           vit_weights *w);
void vit_weights_free(vg_runtime *rt, vit_weights *w);
/* The attention tensors both towers' blocks have, under the current prefix: qkv and proj, with
 * biases. */
vg_status vit_weights_attention(vg_arena *a, vit_block *B, int64_t h);
/* vit25_weights.c, vit3_weights.c: the tensors of each tower under `root` ("visual." or
 * "model.visual."), for the weight arena. */
vg_status vit25_weights_describe(vg_arena *a, const vit_cfg *c, vit_weights *w, const char *root);
vg_status vit3_weights_describe(vg_arena *a, const vit_cfg *c, vit_weights *w, const char *root);

/* ---- per-call layout: what the host computes from grid_thw ------------------------------- */

/* Sizes of the int32 metadata block for `padded` tokens. Qwen2.5-VL: positions, the window
 * permutation and its inverse, full and window segments. Qwen3-VL: positions, full segments,
 * and the position table's taps (indices, then their F32 weights) of every patch; win, rev and
 * cu_win are empty. */
typedef struct vit_meta_layout {
    int64_t tokens, units;
    int cap;            /* segment capacity: units + 2 */
    size_t pos, win, rev, cu_full, cu_win, tap_idx, tap_w, total; /* offsets in int32 elements */
} vit_meta_layout;

vit_meta_layout vit_meta_layout_for(const vit_cfg *cfg, int64_t padded_tokens);
/* Close a cu_seqlens array of n segments: the padding segment, then empty segments up to the
 * capacity. */
void vit_cu_finish(int32_t *cu, int n, int64_t real, const vit_meta_layout *l);
/* vit25_layout.c, vit3_layout.c: fill `meta` (layout l) for grids whose tokens total
 * real_tokens; padding units map to themselves and form their own attention segment (Qwen3-VL:
 * their taps weigh nothing). */
void vit25_meta_fill(const vit_cfg *cfg, const int64_t *grid, int64_t n, int64_t real_tokens,
                     const vit_meta_layout *l, int32_t *meta);
void vit3_meta_fill(const vit_cfg *cfg, const int64_t *grid, int64_t n, int64_t real_tokens,
                    const vit_meta_layout *l, int32_t *meta);
/* The taps of the position table for the patch at (row, col) of an h x w grid: the table's
 * pos_side x pos_side grid resampled bilinearly with the corners aligned, as Hugging Face
 * transformers computes it (in fp32, clamped at the border). */
void vit3_pos_taps(int pos_side, int64_t h, int64_t w, int64_t row, int64_t col,
                   int32_t idx[VIT3_TAPS], float wt[VIT3_TAPS]);

/* FLOPs of attention (QKᵀ and PV) over the full and window segments of these grids. */
double vit_attention_flops(const vit_cfg *cfg, const int64_t *grid, int64_t n);

/* Validate grid_thw alone; the patch count in *tokens. */
vg_status vit_grid_tokens(const vit_cfg *cfg, const int64_t *grid, int64_t n, int64_t *tokens);
/* Validate pixel_values / grid_thw against the config; returns the token count in *tokens. */
vg_status vit_validate_input(const vit_cfg *cfg, int64_t rows, int64_t cols, const int64_t *grid,
                             int64_t n, int64_t *tokens);

/* vit_input.c: pixel_values [rows, cols] (F32, BF16 or F16) into dst in the compute dtype, in
 * one pass that refuses a non-finite result (NaN or infinite input, or a value the compute
 * dtype cannot hold) with VG_ERR_INVALID_ARG naming its row and column. */
vg_status vit_convert_pixels(const void *src, vg_dtype from, void *dst, vg_dtype to, int64_t rows,
                             int64_t cols);

/* ---- the model ---------------------------------------------------------------------------- */

/* The runner's buffers. Qwen3-VL uses VB_H0 for the resampled position rows, VB_GU for the MLP's
 * fc1 output, leaves VB_M and VB_MERGE2 empty, and keeps its outputs in VB_OUT one after another:
 * the merger's [units, out_hidden], then each deepstack feature's. */
enum vit_buffer {
    VB_PIX, VB_H0, VB_H, VB_N, VB_QKV, VB_ATT, VB_GU, VB_M, VB_MERGE1, VB_MERGE2, VB_OUT, VB_META,
    VB_COUNT_
};

/* What a tower brings: its config members, its tensors, its per-call layout and its pieces. The
 * shared code calls a tower through this table only; vit_tower_of (vit_config.c, beside the
 * model_type names) is the one place that knows both. */
typedef struct vit_tower {
    const char *name; /* for messages: "Qwen2.5-VL", "Qwen3-VL" */
    vg_status (*config_parse)(const cJSON *v, const char *where, vit_cfg *cfg);
    vg_status (*weights_describe)(vg_arena *a, const vit_cfg *c, vit_weights *w, const char *root);
    void (*meta_fill)(const vit_cfg *cfg, const int64_t *grid, int64_t n, int64_t real_tokens,
                      const vit_meta_layout *l, int32_t *meta);
    /* m->pieces and m->iface (reserve and prepare: vit_reserve, vit_prepare) */
    vg_status (*pieces_init)(vg_vit *m);
} vit_tower;

extern const vit_tower vit25_tower, vit3_tower; /* vit25_forward.c, vit3_forward.c */
const vit_tower *vit_tower_of(vit_family f);

struct vg_vit {
    vg_runtime *rt;
    const vit_tower *tower;
    vit_cfg cfg;
    vg_dtype dt;
    char model_type[32];
    vit_weights w;
    vg_runner *runner;
    vg_piece *pieces;
    vg_model_iface iface;
    int fused_rotary;    /* the device has attention_rotary for dt: window blocks use it */
    int gated_gu;        /* the device has gemm_silu_gate for dt: the MLP's silu·mul is in it */
    vgm_linear lin;      /* the projections' dtype, eps and RMSNorm fusion (gemm_rmsnorm_a) */
    vg_op_id ops_in[3], ops_out[3]; /* Qwen2.5-VL: the ops of attn_in and attn_out_mlp */
    void *stage;         /* host staging (vg_host_alloc): pixels in, embeddings out */
    size_t stage_bytes;
    void *meta_stage;    /* host staging of the per-call metadata (prepare) */
    size_t meta_bytes;
    vg_event *ev0, *ev1;
    vg_vit_options opts; /* as given, for rebuilding the runner */
    int64_t sizes[VIT_MAX_CAPTURE_SIZES]; /* a copy of opts.capture_sizes */
    int device_input;    /* vg_vit_encode_device is calling vg_vit_encode: pixels are device memory */
};

/* The inputs of one call, as vg_runner_run hands them to prepare: the pixels already converted
 * to the compute dtype (in m->stage), so a refused input never reaches the runner. */
typedef struct vit_call {
    const void *pixels; /* real rows x patch_dim in the compute dtype; NULL: zeros */
    const int64_t *grid;
    int64_t n;
    const void *device_pixels; /* vg_vit_encode_device: the caller's device memory instead */
    vg_dtype device_dtype;
} vit_call;

/* vit_common.c: what both towers' pieces use. Refuse (VG_ERR_UNSUPPORTED, naming the tower)
 * when the device lacks one of `needed` for the compute dtype (vgm_has_op). */
vg_status vit_require_ops(const vg_vit *m, const vg_op_id *needed, size_t n);
/* The runner callbacks (the runner's buffers; the per-call upload of pixels and metadata). */
vg_status vit_reserve(void *model, vg_runner *r, const vg_batch_desc *padded);
vg_status vit_prepare(void *model, vg_runner *r, const vg_batch_desc *real,
                      const vg_batch_desc *padded, vg_stream *s, const void *inputs);
/* An int32 array inside VB_META, at an offset of vit_meta_layout. */
int32_t *vit_meta_at(vg_runner *r, size_t offset);
/* The 2-D rotary of q and k in VB_QKV, at the positions of layout l (VB_META). */
vg_status vit_rotary_qk(const vg_vit *m, vg_runner *r, vg_stream *s, const vit_meta_layout *l);
/* m->pieces for n pieces and m->iface over them, with the shared callbacks. */
vg_status vit_pieces_alloc(vg_vit *m, int n);

#endif
