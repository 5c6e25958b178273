/* SPDX-License-Identifier: Apache-2.0 */
/* Weights of the Qwen3-VL vision tower, for the weight arena: the patch embedding (with bias),
 * the learned position table, the blocks (LayerNorms with biases, qkv, proj, the two-layer MLP),
 * the merger and the deepstack mergers. The MLP's intermediate size is padded to inter_pad with
 * zero rows (fc1) and zero columns (fc2): exact, since the activations vg computes map 0 to 0. */
#include "vit_common.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define NDIM(...) ((int)(sizeof(SHAPE(__VA_ARGS__)) / sizeof(int64_t)))
#define ONE(slot, name, ...) \
    VGM_TRY(vg_arena_one(a, &(slot), name, NDIM(__VA_ARGS__), SHAPE(__VA_ARGS__)))

/* A merger under the current prefix; its LayerNorm spans norm_cols (hidden before the shuffle,
 * merge²·hidden after it). */
static vg_status merger(vg_arena *a, vit3_merger *m, int64_t norm_cols, int64_t mh, int64_t out)
{
    ONE(m->norm_w, "norm.weight", norm_cols);
    ONE(m->norm_b, "norm.bias", norm_cols);
    ONE(m->fc1_w, "linear_fc1.weight", mh, mh);
    ONE(m->fc1_b, "linear_fc1.bias", mh);
    ONE(m->fc2_w, "linear_fc2.weight", out, mh);
    ONE(m->fc2_b, "linear_fc2.bias", out);
    return VG_OK;
}

vg_status vit3_weights_describe(vg_arena *a, const vit_cfg *c, vit_weights *w, const char *root)
{
    int64_t h = c->hidden, I = c->inter, Ip = c->inter_pad, mh = (int64_t)h * c->unit;
    VGM_TRY(vg_arena_prefix(a, "%s", root));
    /* Conv3d [hidden, C, T, P, P] with stride = kernel is a GEMM over flattened patches */
    ONE(w->patch_w, "patch_embed.proj.weight", h, c->in_ch, c->tpatch, c->patch, c->patch);
    ONE(w->patch_b, "patch_embed.proj.bias", h);
    ONE(w->pos_embed, "pos_embed.weight", (int64_t)c->num_pos, h);
    for (int i = 0; i < c->depth; i++) {
        vit_block *B = &w->blocks[i];
        VGM_TRY(vg_arena_prefix(a, "%sblocks.%d.", root, i));
        ONE(B->norm1, "norm1.weight", h);
        ONE(B->norm1_b, "norm1.bias", h);
        ONE(B->qkv_w, "attn.qkv.weight", 3 * h, h);
        ONE(B->qkv_b, "attn.qkv.bias", 3 * h);
        ONE(B->proj_w, "attn.proj.weight", h, h);
        ONE(B->proj_b, "attn.proj.bias", h);
        ONE(B->norm2, "norm2.weight", h);
        ONE(B->norm2_b, "norm2.bias", h);
        VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
                                    .slot = &B->gu_w, .ndim = 2, .shape = SHAPE(I, h),
                                    .names = (const char *[]){"mlp.linear_fc1.weight"},
                                    .rows_pad = Ip}));
        VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
                                    .slot = &B->gu_b, .ndim = 1, .shape = SHAPE(I),
                                    .names = (const char *[]){"mlp.linear_fc1.bias"},
                                    .rows_pad = Ip}));
        VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
                                    .slot = &B->down_w, .ndim = 2, .shape = SHAPE(h, I),
                                    .names = (const char *[]){"mlp.linear_fc2.weight"},
                                    .cols_pad = Ip}));
        ONE(B->down_b, "mlp.linear_fc2.bias", h);
    }
    VGM_TRY(vg_arena_prefix(a, "%smerger.", root));
    VGM_TRY(merger(a, &w->merger, h, mh, c->out_hidden));
    for (int k = 0; k < c->num_deepstack; k++) {
        VGM_TRY(vg_arena_prefix(a, "%sdeepstack_merger_list.%d.", root, k));
        VGM_TRY(merger(a, &w->deepstack[k], mh, mh, c->out_hidden));
    }
    return VG_OK;
}
