/* SPDX-License-Identifier: Apache-2.0 */
/* The forward pass of the Qwen3-VL vision tower as runner pieces, and its tower table.
 *
 *   embed            the learned position table resampled to every patch's place in its image
 *                    (gather_weighted, taps from VB_META), then the patch GEMM with bias, the
 *                    resampled rows added as its residual
 *   block i: in      layernorm, qkv GEMM (+bias), 2-D rotary on q and k
 *   block i: attn    attention within each frame (the splitting op)
 *   block i: out     proj GEMM (+bias, +residual), layernorm, fc1 GEMM (+bias, activation),
 *                    fc2 GEMM (+bias, +residual)
 *   deepstack k      after block deepstack_block[k]: layernorm over each merge unit's
 *                    merge²·hidden values, fc1 GEMM + GELU, fc2 GEMM into its output slot
 *   merger           layernorm over hidden, fc1 GEMM + GELU over merge units, fc2 GEMM
 *
 * Hidden states stay in the input's order (merge units contiguous), so the outputs need no
 * permutation. The buffers and the per-call upload are the shared ones (vit_common.c). */
#include <math.h>

#include "vit_common.h"

#define BUF VGM_BUF
#define TRY VGM_TRY

static VGM_PIECE(piece_embed)
{
    vg_vit *m = mp;
    (void)p;
    const vit_cfg *c = &m->cfg;
    vit_meta_layout l = vit_meta_layout_for(c, d->num_tokens);
    TRY(vg_op_gather_weighted(s, m->dt, BUF(VB_H0), m->w.pos_embed, c->num_pos,
                              vit_meta_at(r, l.tap_idx), (const float *)vit_meta_at(r, l.tap_w),
                              d->num_tokens, c->hidden, VIT3_TAPS));
    return vgm_gemm(&m->lin, s, d->num_tokens, c->hidden, c->patch_dim, BUF(VB_PIX), m->w.patch_w,
                    m->w.patch_b, BUF(VB_H), m->dt, BUF(VB_H0), VG_ACT_NONE);
}

static VGM_PIECE(piece_attn_in)
{
    vg_vit *m = mp;
    const vit_cfg *c = &m->cfg;
    const vit_block *B = &m->w.blocks[p->arg];
    vit_meta_layout l = vit_meta_layout_for(c, d->num_tokens);
    TRY(vg_op_layernorm(s, m->dt, BUF(VB_H), B->norm1, B->norm1_b, BUF(VB_N), d->num_tokens,
                        c->hidden, c->eps));
    TRY(vgm_gemm(&m->lin, s, d->num_tokens, 3 * (int64_t)c->hidden, c->hidden, BUF(VB_N), B->qkv_w,
                 B->qkv_b, BUF(VB_QKV), m->dt, NULL, VG_ACT_NONE));
    return vit_rotary_qk(m, r, s, &l);
}

static VGM_PIECE(piece_attention)
{
    vg_vit *m = mp;
    (void)p;
    const vit_cfg *c = &m->cfg;
    vit_meta_layout l = vit_meta_layout_for(c, d->num_tokens);
    return vg_op_attention(s, m->dt, BUF(VB_QKV), 3 * (int64_t)c->hidden, BUF(VB_ATT), c->hidden,
                           d->num_tokens, c->heads, c->head_dim, vit_meta_at(r, l.cu_full), l.cap,
                           1.0f / sqrtf((float)c->head_dim));
}

static VGM_PIECE(piece_attn_out)
{
    vg_vit *m = mp;
    const vit_cfg *c = &m->cfg;
    const vit_block *B = &m->w.blocks[p->arg];
    int64_t S = d->num_tokens;
    TRY(vgm_gemm(&m->lin, s, S, c->hidden, c->hidden, BUF(VB_ATT), B->proj_w, B->proj_b, BUF(VB_H),
                 m->dt, BUF(VB_H), VG_ACT_NONE));
    TRY(vg_op_layernorm(s, m->dt, BUF(VB_H), B->norm2, B->norm2_b, BUF(VB_N), S, c->hidden, c->eps));
    TRY(vgm_gemm(&m->lin, s, S, c->inter_pad, c->hidden, BUF(VB_N), B->gu_w, B->gu_b, BUF(VB_GU),
                 m->dt, NULL, c->act));
    return vgm_gemm(&m->lin, s, S, c->hidden, c->inter_pad, BUF(VB_GU), B->down_w, B->down_b,
                    BUF(VB_H), m->dt, BUF(VB_H), VG_ACT_NONE);
}

/* fc1 + GELU and fc2 of a merger over the normalised units in VB_N, into output slot `slot` of
 * VB_OUT (0: the merger, 1 + k: the k-th deepstack feature in block order). */
static vg_status merge_mlp(vg_vit *m, vg_runner *r, vg_stream *s, const vit3_merger *g,
                           int64_t units, int slot)
{
    const vit_cfg *c = &m->cfg;
    int64_t mh = (int64_t)c->hidden * c->unit;
    char *out = (char *)BUF(VB_OUT) + (size_t)slot * (size_t)units * (size_t)c->out_hidden * vg_dtype_size(m->dt);
    TRY(vgm_gemm(&m->lin, s, units, mh, mh, BUF(VB_N), g->fc1_w, g->fc1_b, BUF(VB_MERGE1), m->dt,
                 NULL, VG_ACT_GELU_ERF));
    return vgm_gemm(&m->lin, s, units, c->out_hidden, mh, BUF(VB_MERGE1), g->fc2_w, g->fc2_b, out,
                    m->dt, NULL, VG_ACT_NONE);
}

/* The output slot of deepstack merger k: features come out in block order, whatever the order
 * of deepstack_visual_indexes (which says which merger follows which block). */
static int deepstack_slot(const vit_cfg *c, int k)
{
    int slot = 1;
    for (int j = 0; j < c->num_deepstack; j++) slot += c->deepstack_block[j] < c->deepstack_block[k];
    return slot;
}

static VGM_PIECE(piece_deepstack)
{
    vg_vit *m = mp;
    const vit_cfg *c = &m->cfg;
    int k = (int)p->arg;
    const vit3_merger *g = &m->w.deepstack[k];
    int64_t units = d->num_tokens / c->unit, mh = (int64_t)c->hidden * c->unit;
    /* [tokens, hidden] viewed as [units, merge²·hidden]: normalised after the shuffle */
    TRY(vg_op_layernorm(s, m->dt, BUF(VB_H), g->norm_w, g->norm_b, BUF(VB_N), units, mh, c->eps));
    return merge_mlp(m, r, s, g, units, deepstack_slot(c, k));
}

static VGM_PIECE(piece_merger)
{
    vg_vit *m = mp;
    (void)p;
    const vit_cfg *c = &m->cfg;
    const vit3_merger *g = &m->w.merger;
    /* normalised per token, before the shuffle */
    TRY(vg_op_layernorm(s, m->dt, BUF(VB_H), g->norm_w, g->norm_b, BUF(VB_N), d->num_tokens,
                        c->hidden, c->eps));
    return merge_mlp(m, r, s, g, d->num_tokens / c->unit, 0);
}

static const vg_op_id k_ops_embed[] = {VG_OP_GATHER_WEIGHTED, VG_OP_GEMM};
static const vg_op_id k_ops_attn_in[] = {VG_OP_LAYERNORM, VG_OP_GEMM, VG_OP_ROTARY_2D};
static const vg_op_id k_ops_attention[] = {VG_OP_ATTENTION};
static const vg_op_id k_ops_norm_gemm[] = {VG_OP_LAYERNORM, VG_OP_GEMM};

static vg_status pieces_init(vg_vit *m)
{
    const vit_cfg *c = &m->cfg;
    static const vg_op_id needed[] = {VG_OP_GEMM, VG_OP_GATHER_WEIGHTED, VG_OP_LAYERNORM,
                                      VG_OP_ROTARY_2D, VG_OP_ATTENTION};
    TRY(vit_require_ops(m, needed, VGM_ARRAY_LEN(needed)));
    m->fused_rotary = 0; /* every block attends to whole frames: rotary and attention apart */
    int n = 2 + 3 * c->depth + c->num_deepstack;
    TRY(vit_pieces_alloc(m, n));
    int k = 0;
    m->pieces[k++] = (vg_piece){.name = "embed", .run = piece_embed, VGM_OPS(k_ops_embed)};
    for (int i = 0; i < c->depth; i++) {
        m->pieces[k++] = (vg_piece){.name = "attn_in", .run = piece_attn_in, .arg = i,
                                    VGM_OPS(k_ops_attn_in)};
        m->pieces[k++] = (vg_piece){.name = "attention", .run = piece_attention,
                                    .flags = VG_PIECE_SPLITTING, .arg = i, VGM_OPS(k_ops_attention)};
        m->pieces[k++] = (vg_piece){.name = "attn_out_mlp", .run = piece_attn_out, .arg = i,
                                    VGM_OPS(k_ops_norm_gemm)};
        for (int j = 0; j < c->num_deepstack; j++)
            if (c->deepstack_block[j] == i)
                m->pieces[k++] = (vg_piece){.name = "deepstack", .run = piece_deepstack, .arg = j,
                                            VGM_OPS(k_ops_norm_gemm)};
    }
    m->pieces[k++] = (vg_piece){.name = "merger", .run = piece_merger, VGM_OPS(k_ops_norm_gemm)};
    return VG_OK;
}

const vit_tower vit3_tower = {.name = "Qwen3-VL", .config_parse = vit3_config_parse,
                              .weights_describe = vit3_weights_describe,
                              .meta_fill = vit3_meta_fill, .pieces_init = pieces_init};
