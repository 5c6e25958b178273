/* SPDX-License-Identifier: Apache-2.0 */
/* The tensors of a Qwen2.5-VL tower, for the weight arena (vit_weights.c). */
#include "vit_common.h"

vg_status vit25_weights_describe(vg_arena *a, const vit_cfg *c, vit_weights *w, const char *root)
{
    int64_t h = c->hidden, I = c->inter, Ip = c->inter_pad, mh = (int64_t)h * c->unit;
    VGM_TRY(vg_arena_prefix(a, "%s", root));
    /* Conv3d [hidden, C, T, P, P] with stride = kernel is a GEMM over flattened patches. */
    VGM_ONE(w->patch_w, "patch_embed.proj.weight", h, c->in_ch, c->tpatch, c->patch, c->patch);
    for (int i = 0; i < c->depth; i++) {
        vit_block *B = &w->blocks[i];
        VGM_TRY(vg_arena_prefix(a, "%sblocks.%d.", root, i));
        VGM_ONE(B->norm1, "norm1.weight", h);
        VGM_TRY(vit_weights_attention(a, B, h));
        if (!w->norm2_folded) VGM_ONE(B->norm2, "norm2.weight", h);
        /* gate|up stacked, each padded to inter_pad rows: the MLP input projection is one GEMM
         * (its columns times norm2's weight where folded) */
        VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
                                    .slot = &B->gu_w, .nparts = 2, .ndim = 2,
                                    .shape = VGM_SHAPE(I, h),
                                    .names = (const char *[]){"mlp.gate_proj.weight",
                                                              "mlp.up_proj.weight"},
                                    .rows_pad = Ip,
                                    .col_scale = w->norm2_folded ? "norm2.weight" : NULL}));
        VGM_TRY(vg_arena_add(a, &(vg_arena_spec){
                                    .slot = &B->gu_b, .nparts = 2, .ndim = 1, .shape = VGM_SHAPE(I),
                                    .names = (const char *[]){"mlp.gate_proj.bias",
                                                              "mlp.up_proj.bias"},
                                    .rows_pad = Ip}));
        /* zero columns past inter */
        VGM_TRY(vg_arena_padded(a, &B->down_w, "mlp.down_proj.weight", 2, VGM_SHAPE(h, I), 0, Ip));
        VGM_ONE(B->down_b, "mlp.down_proj.bias", h);
    }
    VGM_TRY(vg_arena_prefix(a, "%smerger.", root));
    VGM_ONE(w->ln_q, "ln_q.weight", h);
    VGM_ONE(w->m1_w, "mlp.0.weight", mh, mh);
    VGM_ONE(w->m1_b, "mlp.0.bias", mh);
    VGM_ONE(w->m2_w, "mlp.2.weight", (int64_t)c->out_hidden, mh);
    VGM_ONE(w->m2_b, "mlp.2.bias", (int64_t)c->out_hidden);
    return VG_OK;
}

