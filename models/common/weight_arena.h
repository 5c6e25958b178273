/* SPDX-License-Identifier: Apache-2.0 */
/* The weight arena: every weight of a model in one device allocation.
 *
 * A model describes its tensors in a `describe` callback; vg_arena_load runs it twice:
 *
 *   1. plan: every tensor is checked against the checkpoint (present, exact shape, dtype F32,
 *      BF16 or F16; errors name the file and the tensor) and the sizes are added up, each
 *      tensor 256-byte aligned. Nothing is allocated, so a bad checkpoint fails before any
 *      device memory is taken.
 *   2. place: one device allocation for the total and one host staging buffer (vg_host_alloc,
 *      at most about 64 MiB, reused), then each tensor is converted to the arena's dtype,
 *      laid out with its padding and uploaded, and its device address written to its slot.
 *
 * describe must make the same calls in both passes: it may branch on the model's config, never
 * on which pass runs (a mismatch is caught and reported as VG_ERR_INTERNAL).
 *
 * Values come from a checkpoint, or, without one, are deterministic synthetic values from a
 * seed (uniform with standard deviation 0.02, one stream per full tensor name), for benchmarks.
 *
 * A tensor may stack several checkpoint tensors along the first dimension (gate|up of an MLP,
 * q|k|v of attention, whose parts may have different row counts) and pad each part's rows and
 * columns with zeros (rows_pad, cols_pad), e.g. to round an intermediate size up for aligned
 * GEMMs. Aliases such as a tied lm_head are the model's business: describe embed_tokens once
 * and copy the pointer after loading.
 *
 * A decoder layer, for instance:
 *
 *     VGM_TRY(vg_arena_prefix(a, "model.layers.%d.", i));
 *     VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
 *         .slot = &L->qkv_w, .nparts = 3,
 *         .names = (const char *[]){"self_attn.q_proj.weight", "self_attn.k_proj.weight",
 *                                   "self_attn.v_proj.weight"},
 *         .part_rows = (const int64_t[]){nq * hd, nkv * hd, nkv * hd},
 *         .ndim = 2, .shape = (const int64_t[]){0, hidden}}));
 *     VGM_TRY(vg_arena_one(a, &L->input_norm, "input_layernorm.weight", 1,
 *                          (const int64_t[]){hidden}));
 */
#ifndef VG_MODELS_WEIGHT_ARENA_H
#define VG_MODELS_WEIGHT_ARENA_H

#include "checkpoint.h"
#include "util.h"
#include "vg/vg_device.h"

typedef struct vg_arena vg_arena;

/* Where the values come from, and what they become on the device. */
typedef struct vg_arena_source {
    const vg_ckpt *ck;  /* NULL: synthetic values from seed */
    uint64_t seed;
    vg_dtype dtype;     /* every tensor's device dtype: F32, BF16 or F16 */
    const char *prefix; /* the initial name prefix (vg_arena_prefix), NULL for "" */
    const char *what;   /* the model, for messages: "vit" */
    /* The checkpoint tensors the model accounts for: every one whose name starts with this
     * ("" for all) must be described (or skipped, vg_arena_skip), else the load fails naming
     * them, before anything is allocated: weights config.json does not mention (a layer beyond
     * num_hidden_layers) mean config.json and the weights disagree. NULL: not checked. */
    const char *owns;
} vg_arena_source;

/* What vg_arena_load allocated: free it with vg_arena_block_free. */
typedef struct vg_arena_block {
    void *base;   /* the device allocation (NULL when there were no tensors) */
    size_t bytes;
    int tensors;  /* device tensors placed */
} vg_arena_block;

/* The model's description of its tensors: vg_arena_prefix, vg_arena_add and vg_arena_one
 * calls, in the same order on every call. `model` is vg_arena_load's. */
typedef vg_status (*vg_arena_describe_fn)(vg_arena *a, void *model);

vg_status vg_arena_load(vg_runtime *rt, const vg_arena_source *src, vg_arena_describe_fn describe,
                        void *model, vg_arena_block *out);
void vg_arena_block_free(vg_runtime *rt, vg_arena_block *b);

/* ---- inside describe ----------------------------------------------------------------------- */

/* One device tensor: nparts checkpoint tensors stacked along their first dimension. Part p is
 * the tensor prefix + names[p], of shape [rows_p, shape[1], ..., shape[ndim-1]], rows_p being
 * part_rows[p] when part_rows is given, else shape[0]. On the device, part p is a row-major
 * matrix of max(rows_p, rows_pad) rows of max(cols, cols_pad) elements, cols being
 * shape[1]·...·shape[ndim-1] (1 for a vector); the parts follow one another, and padding is
 * zero. */
typedef struct vg_arena_spec {
    void **slot;               /* receives the device address (in the place pass) */
    const char *const *names;  /* nparts names, after the current prefix */
    int nparts;                /* 0 counts as 1 */
    int ndim;                  /* of each part: 1..VG_ST_MAX_DIMS */
    const int64_t *shape;      /* each part's shape; dimensions >= 1 (shape[0] is unused where
                                  part_rows is given) */
    const int64_t *part_rows;  /* optional: the row count of each part */
    int64_t rows_pad;          /* each part has at least this many rows (0: no padding) */
    int64_t cols_pad;          /* each row has at least this many elements (0: no padding) */
    /* Slices (tensor parallelism: each rank loads its share). Part p loads checkpoint rows
     * [part_row0[p], part_row0[p] + part_take[p]) where part_row0 is given (part_take then
     * required; a take of 0 leaves a part of rows_pad zero rows); with col_take > 0, each row
     * loads only columns [col0, col0 + col_take). The device layout is that of the slice, padded
     * as above; shape and part_rows still describe the whole checkpoint tensor, which is checked
     * whole. Synthetic values are those of the whole tensor at the same positions. */
    const int64_t *part_row0;
    const int64_t *part_take;
    int64_t col0, col_take;
    /* Optional: a vector (prefix + col_scale) of the whole tensor's column count, checked and
     * accounted for like a tensor of its own: column j of every part is multiplied by element j,
     * in fp32 before the conversion (an RMSNorm's weight folded into the projection after it:
     * rmsnorm(x, w)·Wᵀ = (x/rms(x))·(W·diag(w))ᵀ). A product that is not finite in the arena's
     * dtype fails the load, naming both tensors. */
    const char *col_scale;
} vg_arena_spec;

vg_status vg_arena_add(vg_arena *a, const vg_arena_spec *spec);
/* One checkpoint tensor, unpadded. */
vg_status vg_arena_one(vg_arena *a, void **slot, const char *name, int ndim, const int64_t *shape);
/* One checkpoint tensor with zero rows up to rows_pad and zero columns up to cols_pad (0: none). */
vg_status vg_arena_padded(vg_arena *a, void **slot, const char *name, int ndim,
                          const int64_t *shape, int64_t rows_pad, int64_t cols_pad);

/* A tensor list's shorthands: a shape literal, its rank, and one unpadded tensor (vg_arena_one)
 * on the arena `a` in scope, returning its status when it is not VG_OK. */
#define VGM_SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define VGM_NDIM(...) ((int)(sizeof(VGM_SHAPE(__VA_ARGS__)) / sizeof(int64_t)))
#define VGM_ONE(slot, name, ...)                                                                 \
    VGM_TRY(vg_arena_one(a, &(slot), name, VGM_NDIM(__VA_ARGS__), VGM_SHAPE(__VA_ARGS__)))

/* A checkpoint tensor (prefix + name) the model accounts for without loading it, such as a
 * tied lm_head: absent or present, either is fine. */
vg_status vg_arena_skip(vg_arena *a, const char *name);

/* Set the prefix of the names that follow ("visual.blocks.3."); printf-style. */
vg_status vg_arena_prefix(vg_arena *a, const char *fmt, ...) VG_PRINTF(2, 3);
/* The checkpoint tensor prefix + name, NULL when absent or when the values are synthetic: for
 * optional tensors (a model may ask, but must decide the same way in both passes, as it will). */
const vg_st_tensor *vg_arena_find(const vg_arena *a, const char *name);
/* The arena's device dtype and whether its values are synthetic. */
vg_dtype vg_arena_dtype(const vg_arena *a);
int vg_arena_synthetic(const vg_arena *a);

#endif
