/* SPDX-License-Identifier: Apache-2.0 */
/* Weights of the vision towers: the list of Qwen2.5-VL's tensors (Qwen3-VL's are in
 * vit3_weights.c), for the weight arena (which checks them against the checkpoint, converts them
 * to the compute dtype and uploads them into one device allocation). */
#include <string.h>

#include "vit_internal.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define NDIM(...) ((int)(sizeof(SHAPE(__VA_ARGS__)) / sizeof(int64_t)))
/* One checkpoint tensor of the given shape, unpadded. */
#define ONE(slot, name, ...) \
    VGM_TRY(vg_arena_one(a, &(slot), name, NDIM(__VA_ARGS__), SHAPE(__VA_ARGS__)))

typedef struct describe_ctx {
    const vit_cfg *c;
    vit_weights *w;
    const char *root; /* "visual." or "model.visual." */
} describe_ctx;

static vg_status describe(vg_arena *a, void *user)
{
    const describe_ctx *x = user;
    const vit_cfg *c = x->c;
    vit_weights *w = x->w;
    if (c->family == VIT_QWEN3) return vit3_weights_describe(a, c, w, x->root);
    int64_t h = c->hidden, I = c->inter, Ip = c->inter_pad, mh = (int64_t)h * c->unit;
    VGM_TRY(vg_arena_prefix(a, "%s", x->root));
    /* Conv3d [hidden, C, T, P, P] with stride = kernel is a GEMM over flattened patches. */
    ONE(w->patch_w, "patch_embed.proj.weight", h, c->in_ch, c->tpatch, c->patch, c->patch);
    for (int i = 0; i < c->depth; i++) {
        vit_block *B = &w->blocks[i];
        VGM_TRY(vg_arena_prefix(a, "%sblocks.%d.", x->root, i));
        ONE(B->norm1, "norm1.weight", h);
        ONE(B->qkv_w, "attn.qkv.weight", 3 * h, h);
        ONE(B->qkv_b, "attn.qkv.bias", 3 * h);
        ONE(B->proj_w, "attn.proj.weight", h, h);
        ONE(B->proj_b, "attn.proj.bias", h);
        ONE(B->norm2, "norm2.weight", h);
        /* gate|up stacked, each padded to inter_pad rows: the MLP input projection is one GEMM */
        VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
                                    .slot = &B->gu_w, .nparts = 2, .ndim = 2, .shape = SHAPE(I, h),
                                    .names = (const char *[]){"mlp.gate_proj.weight",
                                                              "mlp.up_proj.weight"},
                                    .rows_pad = Ip}));
        VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
                                    .slot = &B->gu_b, .nparts = 2, .ndim = 1, .shape = SHAPE(I),
                                    .names = (const char *[]){"mlp.gate_proj.bias",
                                                              "mlp.up_proj.bias"},
                                    .rows_pad = Ip}));
        /* zero columns past inter */
        VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
                                    .slot = &B->down_w, .ndim = 2, .shape = SHAPE(h, I),
                                    .names = (const char *[]){"mlp.down_proj.weight"},
                                    .cols_pad = Ip}));
        ONE(B->down_b, "mlp.down_proj.bias", h);
    }
    VGM_TRY(vg_arena_prefix(a, "%smerger.", x->root));
    ONE(w->ln_q, "ln_q.weight", h);
    ONE(w->m1_w, "mlp.0.weight", mh, mh);
    ONE(w->m1_b, "mlp.0.bias", mh);
    ONE(w->m2_w, "mlp.2.weight", (int64_t)c->out_hidden, mh);
    ONE(w->m2_b, "mlp.2.bias", (int64_t)c->out_hidden);
    return VG_OK;
}

vg_status vit_weights_load(vg_runtime *rt, const vg_ckpt *ck, uint64_t seed, const vit_cfg *cfg,
                           vg_dtype dt, vit_weights *w)
{
    memset(w, 0, sizeof *w);
    /* Hub checkpoints name the tower visual.*, newer exports model.visual.* */
    const char *root = "visual.";
    if (ck && !vg_ckpt_find(ck, "visual.patch_embed.proj.weight", NULL)) {
        if (!vg_ckpt_find(ck, "model.visual.patch_embed.proj.weight", NULL))
            return vg_error_set(VG_ERR_NOT_FOUND, "%s: no vision tower weights (neither "
                                                  "visual.patch_embed.proj.weight nor "
                                                  "model.visual.patch_embed.proj.weight)",
                                vg_ckpt_dir(ck));
        root = "model.visual.";
    }
    describe_ctx x = {.c = cfg, .w = w, .root = root};
    /* the tower's tensors only: a whole vision-language checkpoint holds the decoder's too */
    vg_arena_source src = {.ck = ck, .seed = seed, .dtype = dt, .what = "vit", .owns = root};
    vg_status st = vg_arena_load(rt, &src, describe, &x, &w->mem);
    if (st != VG_OK) vit_weights_free(rt, w);
    return st;
}

void vit_weights_free(vg_runtime *rt, vit_weights *w)
{
    vg_arena_block_free(rt, &w->mem);
    memset(w, 0, sizeof *w);
}
