/* SPDX-License-Identifier: Apache-2.0 */
/* Weights of the vision towers: the tensors the tower describes (vit25_weights.c,
 * vit3_weights.c), loaded by the weight arena (which checks them against the checkpoint,
 * converts them to the compute dtype and uploads them into one device allocation). */
#include <string.h>

#include "vit_common.h"

typedef struct describe_ctx {
    const vit_tower *t;
    const vit_cfg *c;
    vit_weights *w;
    const char *root; /* "visual." or "model.visual." */
} describe_ctx;

vg_status vit_weights_attention(vg_arena *a, vit_block *B, int64_t h)
{
    VGM_ONE(B->qkv_w, "attn.qkv.weight", 3 * h, h);
    VGM_ONE(B->qkv_b, "attn.qkv.bias", 3 * h);
    VGM_ONE(B->proj_w, "attn.proj.weight", h, h);
    VGM_ONE(B->proj_b, "attn.proj.bias", h);
    return VG_OK;
}

static vg_status describe(vg_arena *a, void *user)
{
    const describe_ctx *x = user;
    return x->t->weights_describe(a, x->c, x->w, x->root);
}

vg_status vit_weights_load(vg_runtime *rt, const vit_tower *t, const vg_ckpt *ck, uint64_t seed,
                           const vit_cfg *cfg, vg_dtype dt, int fold_norm2, vit_weights *w)
{
    memset(w, 0, sizeof *w);
    w->norm2_folded = fold_norm2;
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
    describe_ctx x = {.t = t, .c = cfg, .w = w, .root = root};
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
