/* SPDX-License-Identifier: Apache-2.0 */
/* The forward pass of the Qwen2.5-VL vision tower as runner pieces, and its tower table.
 *
 *   embed            patch GEMM (input order), then the window permutation of merge units
 *   block i: in      rmsnorm, qkv GEMM (+bias), 2-D rotary on q and k (the rmsnorm inside the
 *                    GEMM where the device has gemm_rmsnorm_a)
 *   block i: attn    attention over full or window segments (the splitting op)
 *                    (window blocks on a backend with attention_rotary: the rotary happens
 *                    inside attention, since each key of a short segment is loaded once)
 *   block i: out     proj GEMM (+bias, +residual), rmsnorm, gate|up GEMM, silu·mul,
 *                    down GEMM (+bias, +residual) (the rmsnorm and silu·mul inside the gate|up
 *                    GEMM where the device has gemm_rmsnorm_a and gemm_silu_gate)
 *   merger           rmsnorm, [units, 4·hidden] GEMM + GELU, GEMM, un-permute to image order
 *
 * The buffers and the per-call upload are the shared ones (vit_common.c). */
#include <math.h>

#include "vit_common.h"

#define BUF VGM_BUF
#define TRY VGM_TRY

/* Window blocks fuse the rotary into attention when the device can: their segments are short,
 * so the fused kernel loads (and rotates) each key about once. Full blocks keep the two ops. */
static int rotary_in_attention(const vg_vit *m, int block)
{
    return m->fused_rotary && !m->cfg.fullatt[block];
}

static VGM_PIECE(piece_embed)
{
    vg_vit *m = mp;
    (void)p;
    const vit_cfg *c = &m->cfg;
    vit_meta_layout l = vit_meta_layout_for(c, d->num_tokens);
    TRY(vgm_gemm(&m->lin, s, d->num_tokens, c->hidden, c->patch_dim, BUF(VB_PIX), m->w.patch_w,
                 NULL, BUF(VB_H0), m->dt, NULL, VG_ACT_NONE));
    /* window order: unit u of H is unit win[u] of H0 (units of merge² tokens) */
    return vg_op_gather_rows(s, m->dt, BUF(VB_H), BUF(VB_H0), vit_meta_at(r, l.win), l.units,
                             (int64_t)c->hidden * c->unit);
}

static VGM_PIECE(piece_attn_in)
{
    vg_vit *m = mp;
    const vit_cfg *c = &m->cfg;
    const vit_block *B = &m->w.blocks[p->arg];
    vit_meta_layout l = vit_meta_layout_for(c, d->num_tokens);
    TRY(vgm_proj(&m->lin, s, d->num_tokens, 3 * (int64_t)c->hidden, c->hidden, BUF(VB_H), c->hidden,
                 B->norm1, BUF(VB_N), B->qkv_w, B->qkv_b, BUF(VB_QKV), m->dt, NULL,
                 VG_GEMM_GATE_NONE));
    if (rotary_in_attention(m, p->arg)) return VG_OK;
    return vit_rotary_qk(m, r, s, &l);
}

static VGM_PIECE(piece_attention)
{
    vg_vit *m = mp;
    const vit_cfg *c = &m->cfg;
    vit_meta_layout l = vit_meta_layout_for(c, d->num_tokens);
    const int32_t *cu = vit_meta_at(r, c->fullatt[p->arg] ? l.cu_full : l.cu_win);
    const float scale = 1.0f / sqrtf((float)c->head_dim);
    if (rotary_in_attention(m, p->arg))
        return vg_op_attention_rotary(s, m->dt, BUF(VB_QKV), 3 * (int64_t)c->hidden, BUF(VB_ATT),
                                      c->hidden, d->num_tokens, c->heads, c->head_dim, cu, l.cap,
                                      scale, vit_meta_at(r, l.pos), c->theta);
    return vg_op_attention(s, m->dt, BUF(VB_QKV), 3 * (int64_t)c->hidden, BUF(VB_ATT), c->hidden,
                           d->num_tokens, c->heads, c->head_dim, cu, l.cap, scale);
}

static VGM_PIECE(piece_attn_out)
{
    vg_vit *m = mp;
    const vit_cfg *c = &m->cfg;
    const vit_block *B = &m->w.blocks[p->arg];
    int64_t S = d->num_tokens;
    int64_t Ip = c->inter_pad;
    TRY(vgm_gemm(&m->lin, s, S, c->hidden, c->hidden, BUF(VB_ATT), B->proj_w, B->proj_b, BUF(VB_H),
                 m->dt, BUF(VB_H), VG_ACT_NONE));
    const vgm_mlp mlp = {.gated = m->gated_gu, .x = BUF(VB_H), .norm = B->norm2,
                         .norm_unit = m->w.norm2_folded, .norm_out = BUF(VB_N),
                         .gu_w = B->gu_w, .gu_b = B->gu_b, .gu = BUF(VB_GU), .mid = BUF(VB_M),
                         .down_w = B->down_w, .down_b = B->down_b, .residual = BUF(VB_H)};
    return vgm_mlp_silu(&m->lin, s, &mlp, S, c->hidden, Ip);
}

static VGM_PIECE(piece_merger)
{
    vg_vit *m = mp;
    (void)p;
    const vit_cfg *c = &m->cfg;
    vit_meta_layout l = vit_meta_layout_for(c, d->num_tokens);
    int64_t U = l.units, mh = (int64_t)c->hidden * c->unit;
    TRY(vg_op_rmsnorm(s, m->dt, BUF(VB_H), m->w.ln_q, BUF(VB_N), d->num_tokens, c->hidden, c->eps));
    /* [tokens, hidden] viewed as [units, merge²·hidden]: a merge unit's tokens are contiguous */
    TRY(vgm_gemm(&m->lin, s, U, mh, mh, BUF(VB_N), m->w.m1_w, m->w.m1_b, BUF(VB_MERGE1), m->dt, NULL,
                 VG_ACT_GELU_ERF));
    TRY(vgm_gemm(&m->lin, s, U, c->out_hidden, mh, BUF(VB_MERGE1), m->w.m2_w, m->w.m2_b,
                 BUF(VB_MERGE2), m->dt, NULL, VG_ACT_NONE));
    /* back to image order: output unit v is merged unit rev[v] */
    return vg_op_gather_rows(s, m->dt, BUF(VB_OUT), BUF(VB_MERGE2), vit_meta_at(r, l.rev), U,
                             c->out_hidden);
}

/* The ops of each piece (ops_used); attn_in's and attn_out_mlp's depend on the fusions. */
static const vg_op_id k_ops_embed[] = {VG_OP_GEMM, VG_OP_GATHER_ROWS};
static const vg_op_id k_ops_attention[] = {VG_OP_ATTENTION};
static const vg_op_id k_ops_attention_rotary[] = {VG_OP_ATTENTION_ROTARY};
static const vg_op_id k_ops_merger[] = {VG_OP_GEMM, VG_OP_RMSNORM, VG_OP_GATHER_ROWS};

static vg_status pieces_init(vg_vit *m)
{
    const vit_cfg *c = &m->cfg;
    /* the ops every piece needs must exist on this device, for the compute dtype */
    static const vg_op_id needed[] = {VG_OP_GEMM, VG_OP_GATHER_ROWS, VG_OP_RMSNORM,
                                      VG_OP_ROTARY_2D, VG_OP_ATTENTION, VG_OP_SILU_MUL};
    TRY(vit_require_ops(m, needed, VGM_ARRAY_LEN(needed)));
    m->fused_rotary = vgm_has_op(m->rt, VG_OP_ATTENTION_ROTARY, m->dt);
    m->gated_gu = vgm_has_op(m->rt, VG_OP_GEMM_SILU_GATE, m->dt);
    m->lin.norm_gemm = vgm_has_op(m->rt, VG_OP_GEMM_RMSNORM_A, m->dt);
    vg_op_id norm = m->lin.norm_gemm ? VG_OP_GEMM_RMSNORM_A : VG_OP_RMSNORM;
    /* rotary_2d last: a block whose rotary is inside attention leaves it out */
    m->ops_in[0] = VG_OP_GEMM, m->ops_in[1] = norm, m->ops_in[2] = VG_OP_ROTARY_2D;
    m->ops_out[0] = VG_OP_GEMM, m->ops_out[1] = m->w.norm2_folded ? VG_OP_GEMM_RMSNORM_A_UNIT : norm;
    m->ops_out[2] = m->gated_gu ? VG_OP_GEMM_SILU_GATE : VG_OP_SILU_MUL;
    int n = 2 + 3 * c->depth;
    TRY(vit_pieces_alloc(m, n));
    int k = 0;
    m->pieces[k++] = (vg_piece){.name = "embed", .run = piece_embed, VGM_OPS(k_ops_embed)};
    for (int i = 0; i < c->depth; i++) {
        int fused = rotary_in_attention(m, i);
        /* fused: the rotary moves into attention, so attn_in has no rotary_2d */
        m->pieces[k++] = (vg_piece){.name = "attn_in", .run = piece_attn_in, .arg = i,
                                    .ops_used = m->ops_in, .num_ops_used = 3 - fused};
        if (fused)
            m->pieces[k++] = (vg_piece){.name = "attention", .run = piece_attention,
                                        .flags = VG_PIECE_SPLITTING, .arg = i,
                                        VGM_OPS(k_ops_attention_rotary)};
        else
            m->pieces[k++] = (vg_piece){.name = "attention", .run = piece_attention,
                                        .flags = VG_PIECE_SPLITTING, .arg = i,
                                        VGM_OPS(k_ops_attention)};
        m->pieces[k++] = (vg_piece){.name = "attn_out_mlp", .run = piece_attn_out, .arg = i,
                                    .ops_used = m->ops_out, .num_ops_used = 3};
    }
    m->pieces[k++] = (vg_piece){.name = "merger", .run = piece_merger, VGM_OPS(k_ops_merger)};
    return VG_OK;
}

const vit_tower vit25_tower = {.name = "Qwen2.5-VL", .config_parse = vit25_config_parse,
                               .weights_describe = vit25_weights_describe,
                               .meta_fill = vit25_meta_fill, .pieces_init = pieces_init};
