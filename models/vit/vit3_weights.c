/* SPDX-License-Identifier: Apache-2.0 */
/* Weights of the Qwen3-VL vision tower, for the weight arena: the patch embedding (with bias),
 * the learned position table, the blocks (LayerNorms with biases, qkv, proj, the two-layer MLP),
 * the merger and the deepstack mergers. The MLP's intermediate size is padded to inter_pad with
 * zero rows (fc1) and zero columns (fc2): exact, since the activations vg computes map 0 to 0. */
#include "vit_common.h"

/* A merger under the current prefix; its LayerNorm spans norm_cols (hidden before the shuffle,
 * merge²·hidden after it). */
static vg_status merger(vg_arena *a, vit3_merger *m, int64_t norm_cols, int64_t mh, int64_t out)
{
    VGM_ONE(m->norm_w, "norm.weight", norm_cols);
    VGM_ONE(m->norm_b, "norm.bias", norm_cols);
    VGM_ONE(m->fc1_w, "linear_fc1.weight", mh, mh);
    VGM_ONE(m->fc1_b, "linear_fc1.bias", mh);
    VGM_ONE(m->fc2_w, "linear_fc2.weight", out, mh);
    VGM_ONE(m->fc2_b, "linear_fc2.bias", out);
    return VG_OK;
}

vg_status vit3_weights_describe(vg_arena *a, const vit_cfg *c, vit_weights *w, const char *root)
{
    int64_t h = c->hidden, I = c->inter, Ip = c->inter_pad, mh = (int64_t)h * c->unit;
    VGM_TRY(vg_arena_prefix(a, "%s", root));
    /* Conv3d [hidden, C, T, P, P] with stride = kernel is a GEMM over flattened patches */
    VGM_ONE(w->patch_w, "patch_embed.proj.weight", h, c->in_ch, c->tpatch, c->patch, c->patch);
    VGM_ONE(w->patch_b, "patch_embed.proj.bias", h);
    VGM_ONE(w->pos_embed, "pos_embed.weight", (int64_t)c->num_pos, h);
    for (int i = 0; i < c->depth; i++) {
        vit_block *B = &w->blocks[i];
        VGM_TRY(vg_arena_prefix(a, "%sblocks.%d.", root, i));
        VGM_ONE(B->norm1, "norm1.weight", h);
        VGM_ONE(B->norm1_b, "norm1.bias", h);
        VGM_TRY(vit_weights_attention(a, B, h));
        VGM_ONE(B->norm2, "norm2.weight", h);
        VGM_ONE(B->norm2_b, "norm2.bias", h);
        VGM_TRY(vg_arena_padded(a, &B->gu_w, "mlp.linear_fc1.weight", 2, VGM_SHAPE(I, h), Ip, 0));
        VGM_TRY(vg_arena_padded(a, &B->gu_b, "mlp.linear_fc1.bias", 1, VGM_SHAPE(I), Ip, 0));
        VGM_TRY(vg_arena_padded(a, &B->down_w, "mlp.linear_fc2.weight", 2, VGM_SHAPE(h, I), 0, Ip));
        VGM_ONE(B->down_b, "mlp.linear_fc2.bias", h);
    }
    VGM_TRY(vg_arena_prefix(a, "%smerger.", root));
    VGM_TRY(merger(a, &w->merger, h, mh, c->out_hidden));
    for (int k = 0; k < c->num_deepstack; k++) {
        VGM_TRY(vg_arena_prefix(a, "%sdeepstack_merger_list.%d.", root, k));
        VGM_TRY(merger(a, &w->deepstack[k], mh, mh, c->out_hidden));
    }
    return VG_OK;
}
