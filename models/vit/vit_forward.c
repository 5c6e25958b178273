/* SPDX-License-Identifier: Apache-2.0 */
/* The forward pass of the Qwen2.5-VL vision tower as runner pieces (Qwen3-VL's are in
 * vit3_forward.c), and the runner callbacks both families share.
 *
 *   embed            patch GEMM (input order), then the window permutation of merge units
 *   block i: in      rmsnorm, qkv GEMM (+bias), 2-D rotary on q and k
 *   block i: attn    attention over full or window segments (the splitting op)
 *                    (window blocks on a backend with attention_rotary: the rotary happens
 *                    inside attention, since each key of a short segment is loaded once)
 *   block i: out     proj GEMM (+bias, +residual), rmsnorm, gate|up GEMM, silu·mul,
 *                    down GEMM (+bias, +residual)
 *   merger           rmsnorm, [units, 4·hidden] GEMM + GELU, GEMM, un-permute to image order
 *
 * Every buffer is a runner buffer sized for the padded token count; per-call data (positions,
 * permutations, segment bounds) sits in VB_META, uploaded by prepare before the graphs run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vit_internal.h"

#define BUF(id) vg_runner_buffer(r, (id))

static size_t es(const vg_vit *m) { return vg_dtype_size(m->dt); }

/* C = act(A·Bᵀ + bias) + residual, row-major, contiguous. */
static vg_status gemm(const vg_vit *m, vg_stream *s, int64_t rows, int64_t n, int64_t k,
                      const void *a, const void *w, const void *bias, void *c, const void *residual,
                      vg_activation act)
{
    vg_gemm_args g = {.struct_size = sizeof g, .dtype_ab = m->dt, .dtype_c = m->dt, .m = rows,
                      .n = n, .k = k, .a = a, .lda = k, .b = w, .ldb = k, .c = c, .ldc = n,
                      .bias = bias, .residual = residual, .ldr = n, .act = act, .alpha = 1.0f};
    return vg_op_gemm(s, &g);
}

#define TRY VGM_TRY

/* Window blocks fuse the rotary into attention when the device can: their segments are short,
 * so the fused kernel loads (and rotates) each key about once. Full blocks keep the two ops. */
static int rotary_in_attention(const vg_vit *m, int block)
{
    return m->fused_rotary && !m->cfg.fullatt[block];
}

/* An int32 array inside VB_META, at an offset of vit_meta_layout. */
static int32_t *meta_at(vg_runner *r, size_t offset) { return (int32_t *)BUF(VB_META) + offset; }

static vg_status piece_embed(void *mp, vg_runner *r, const vg_piece *p, const vg_batch_desc *d,
                             vg_stream *s)
{
    vg_vit *m = mp;
    (void)p;
    const vit_cfg *c = &m->cfg;
    vit_meta_layout l;
    vit_meta_layout_for(c, d->num_tokens, &l);
    TRY(gemm(m, s, d->num_tokens, c->hidden, c->patch_dim, BUF(VB_PIX), m->w.patch_w, NULL,
             BUF(VB_H0), NULL, VG_ACT_NONE));
    /* window order: unit u of H is unit win[u] of H0 (units of merge² tokens) */
    return vg_op_gather_rows(s, m->dt, BUF(VB_H), BUF(VB_H0), meta_at(r, l.win), l.units,
                             (int64_t)c->hidden * c->unit);
}

static vg_status piece_attn_in(void *mp, vg_runner *r, const vg_piece *p, const vg_batch_desc *d,
                               vg_stream *s)
{
    vg_vit *m = mp;
    const vit_cfg *c = &m->cfg;
    const vit_block *B = &m->w.blocks[p->arg];
    vit_meta_layout l;
    vit_meta_layout_for(c, d->num_tokens, &l);
    TRY(vg_op_rmsnorm(s, m->dt, BUF(VB_H), B->norm1, BUF(VB_N), d->num_tokens, c->hidden, c->eps));
    TRY(gemm(m, s, d->num_tokens, 3 * (int64_t)c->hidden, c->hidden, BUF(VB_N), B->qkv_w, B->qkv_b,
             BUF(VB_QKV), NULL, VG_ACT_NONE));
    if (rotary_in_attention(m, p->arg)) return VG_OK;
    /* q and k are the first 2·heads head slices of each qkv row */
    return vg_op_rotary_2d(s, m->dt, BUF(VB_QKV), 3 * (int64_t)c->hidden, d->num_tokens,
                           2 * c->heads, c->head_dim, meta_at(r, l.pos), c->theta);
}

static vg_status piece_attention(void *mp, vg_runner *r, const vg_piece *p, const vg_batch_desc *d,
                                 vg_stream *s)
{
    vg_vit *m = mp;
    const vit_cfg *c = &m->cfg;
    vit_meta_layout l;
    vit_meta_layout_for(c, d->num_tokens, &l);
    const int32_t *cu = meta_at(r, c->fullatt[p->arg] ? l.cu_full : l.cu_win);
    const float scale = 1.0f / sqrtf((float)c->head_dim);
    if (rotary_in_attention(m, p->arg))
        return vg_op_attention_rotary(s, m->dt, BUF(VB_QKV), 3 * (int64_t)c->hidden, BUF(VB_ATT),
                                      c->hidden, d->num_tokens, c->heads, c->head_dim, cu, l.cap,
                                      scale, meta_at(r, l.pos), c->theta);
    return vg_op_attention(s, m->dt, BUF(VB_QKV), 3 * (int64_t)c->hidden, BUF(VB_ATT), c->hidden,
                           d->num_tokens, c->heads, c->head_dim, cu, l.cap, scale);
}

static vg_status piece_attn_out(void *mp, vg_runner *r, const vg_piece *p, const vg_batch_desc *d,
                                vg_stream *s)
{
    vg_vit *m = mp;
    const vit_cfg *c = &m->cfg;
    const vit_block *B = &m->w.blocks[p->arg];
    int64_t S = d->num_tokens;
    TRY(gemm(m, s, S, c->hidden, c->hidden, BUF(VB_ATT), B->proj_w, B->proj_b, BUF(VB_H), BUF(VB_H),
             VG_ACT_NONE));
    TRY(vg_op_rmsnorm(s, m->dt, BUF(VB_H), B->norm2, BUF(VB_N), S, c->hidden, c->eps));
    TRY(gemm(m, s, S, 2 * (int64_t)c->inter_pad, c->hidden, BUF(VB_N), B->gu_w, B->gu_b, BUF(VB_GU),
             NULL, VG_ACT_NONE));
    TRY(vg_op_silu_mul(s, m->dt, BUF(VB_GU), 2 * (int64_t)c->inter_pad, BUF(VB_M), c->inter_pad,
                       S, c->inter_pad));
    return gemm(m, s, S, c->hidden, c->inter_pad, BUF(VB_M), B->down_w, B->down_b, BUF(VB_H),
                BUF(VB_H), VG_ACT_NONE);
}

static vg_status piece_merger(void *mp, vg_runner *r, const vg_piece *p, const vg_batch_desc *d,
                              vg_stream *s)
{
    vg_vit *m = mp;
    (void)p;
    const vit_cfg *c = &m->cfg;
    vit_meta_layout l;
    vit_meta_layout_for(c, d->num_tokens, &l);
    int64_t U = l.units, mh = (int64_t)c->hidden * c->unit;
    TRY(vg_op_rmsnorm(s, m->dt, BUF(VB_H), m->w.ln_q, BUF(VB_N), d->num_tokens, c->hidden, c->eps));
    /* [tokens, hidden] viewed as [units, merge²·hidden]: a merge unit's tokens are contiguous */
    TRY(gemm(m, s, U, mh, mh, BUF(VB_N), m->w.m1_w, m->w.m1_b, BUF(VB_MERGE1), NULL, VG_ACT_GELU_ERF));
    TRY(gemm(m, s, U, c->out_hidden, mh, BUF(VB_MERGE1), m->w.m2_w, m->w.m2_b, BUF(VB_MERGE2), NULL,
             VG_ACT_NONE));
    /* back to image order: output unit v is merged unit rev[v] */
    return vg_op_gather_rows(s, m->dt, BUF(VB_OUT), BUF(VB_MERGE2), meta_at(r, l.rev), U,
                             c->out_hidden);
}

/* The ops of each piece (ops_used). */
static const vg_op_id k_ops_embed[] = {VG_OP_GEMM, VG_OP_GATHER_ROWS};
static const vg_op_id k_ops_attn_in[] = {VG_OP_GEMM, VG_OP_RMSNORM, VG_OP_ROTARY_2D};
static const vg_op_id k_ops_attention[] = {VG_OP_ATTENTION};
static const vg_op_id k_ops_attention_rotary[] = {VG_OP_ATTENTION_ROTARY};
static const vg_op_id k_ops_attn_out[] = {VG_OP_GEMM, VG_OP_RMSNORM, VG_OP_SILU_MUL};
static const vg_op_id k_ops_merger[] = {VG_OP_GEMM, VG_OP_RMSNORM, VG_OP_GATHER_ROWS};

#define OPS(list) .ops_used = (list), .num_ops_used = (int)VGM_ARRAY_LEN(list)

/* 1 when the device implements op for the compute dtype (gather_rows moves bytes of any dtype;
 * an empty dtype set means the device did not say, and the core checks each call anyway). */
int vit_has_op(const vg_vit *m, vg_op_id op)
{
    uint32_t dtypes = 0;
    if (!(vg_runtime_op_support(m->rt, op, &dtypes) & VG_OP_SUPPORTED)) return 0;
    return op == VG_OP_GATHER_ROWS || dtypes == 0 || (dtypes & VG_DTYPE_BIT(m->dt)) != 0;
}

vg_status vit_pieces_init(vg_vit *m)
{
    const vit_cfg *c = &m->cfg;
    if (c->family == VIT_QWEN3) return vit3_pieces_init(m);
    /* the ops every piece needs must exist on this device, for the compute dtype */
    static const vg_op_id needed[] = {VG_OP_GEMM, VG_OP_GATHER_ROWS, VG_OP_RMSNORM,
                                      VG_OP_ROTARY_2D, VG_OP_ATTENTION, VG_OP_SILU_MUL};
    for (size_t i = 0; i < VGM_ARRAY_LEN(needed); i++)
        if (!vit_has_op(m, needed[i]))
            return vg_error_set(VG_ERR_UNSUPPORTED, "vit: backend '%s' has no %s for %s, which the "
                                                    "vision encoder needs",
                                vg_runtime_backend_name(m->rt), vg_op_name(needed[i]),
                                vg_dtype_name(m->dt));
    m->fused_rotary = vit_has_op(m, VG_OP_ATTENTION_ROTARY);
    int n = 2 + 3 * c->depth;
    m->pieces = calloc((size_t)n, sizeof *m->pieces);
    if (!m->pieces) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "vit: out of memory");
    int k = 0;
    m->pieces[k++] = (vg_piece){.name = "embed", .run = piece_embed, OPS(k_ops_embed)};
    for (int i = 0; i < c->depth; i++) {
        int fused = rotary_in_attention(m, i);
        /* fused: the rotary moves into attention, so attn_in has no rotary_2d */
        m->pieces[k++] = (vg_piece){.name = "attn_in", .run = piece_attn_in, .arg = i,
                                    .ops_used = k_ops_attn_in,
                                    .num_ops_used = (int)VGM_ARRAY_LEN(k_ops_attn_in) - fused};
        if (fused)
            m->pieces[k++] = (vg_piece){.name = "attention", .run = piece_attention,
                                        .flags = VG_PIECE_SPLITTING, .arg = i,
                                        OPS(k_ops_attention_rotary)};
        else
            m->pieces[k++] = (vg_piece){.name = "attention", .run = piece_attention,
                                        .flags = VG_PIECE_SPLITTING, .arg = i,
                                        OPS(k_ops_attention)};
        m->pieces[k++] = (vg_piece){.name = "attn_out_mlp", .run = piece_attn_out, .arg = i,
                                    OPS(k_ops_attn_out)};
    }
    m->pieces[k++] = (vg_piece){.name = "merger", .run = piece_merger, OPS(k_ops_merger)};
    m->iface = (vg_model_iface){.struct_size = sizeof(vg_model_iface), .model = m,
                                .pieces = m->pieces, .num_pieces = n, .reserve = vit_reserve,
                                .prepare = vit_prepare};
    return VG_OK;
}

vg_status vit_reserve(void *mp, vg_runner *r, const vg_batch_desc *d)
{
    vg_vit *m = mp;
    const vit_cfg *c = &m->cfg;
    size_t S = (size_t)d->num_tokens, e = es(m), h = (size_t)c->hidden;
    int q3 = c->family == VIT_QWEN3;
    vit_meta_layout l;
    vit_meta_layout_for(c, d->num_tokens, &l);
    size_t out = (size_t)l.units * (size_t)c->out_hidden * e; /* one merged output */
    const size_t bytes[VB_COUNT_] = {
        [VB_PIX] = S * (size_t)c->patch_dim * e, [VB_H0] = S * h * e,   [VB_H] = S * h * e,
        [VB_N] = S * h * e,                      [VB_QKV] = 3 * S * h * e, [VB_ATT] = S * h * e,
        [VB_GU] = (q3 ? 1 : 2) * S * (size_t)c->inter_pad * e,
        [VB_M] = q3 ? 0 : S * (size_t)c->inter_pad * e,
        [VB_MERGE1] = S * h * e,                 [VB_MERGE2] = q3 ? 0 : out,
        [VB_OUT] = (1 + (size_t)c->num_deepstack) * out, [VB_META] = l.total * sizeof(int32_t),
    };
    for (int i = 0; i < VB_COUNT_; i++) TRY(vg_runner_buffer_reserve(r, i, bytes[i]));
    return VG_OK;
}

vg_status vit_stage_reserve(vg_runtime *rt, void **stage, size_t *have, size_t bytes)
{
    if (bytes <= *have) return VG_OK;
    if (*stage) vg_host_free(rt, *stage);
    *stage = NULL;
    *have = 0;
    size_t want = bytes + bytes / 4;
    TRY(vg_host_alloc(rt, want, stage));
    *have = want;
    return VG_OK;
}

vg_status vit_prepare(void *mp, vg_runner *r, const vg_batch_desc *real, const vg_batch_desc *padded,
                      vg_stream *s, const void *inputs)
{
    vg_vit *m = mp;
    const vit_cfg *c = &m->cfg;
    /* warm-up (no inputs): one image of 2 x tokens/2 patches of zero pixels fills the buffers
     * with a valid call */
    int64_t warm_grid[3] = {1, c->merge, padded->num_tokens / c->merge};
    vit_call warm = {.pixels = NULL, .grid = warm_grid, .n = 1};
    const vit_call *call = inputs ? (const vit_call *)inputs : &warm;
    vit_meta_layout l;
    vit_meta_layout_for(c, padded->num_tokens, &l);
    size_t row = (size_t)c->patch_dim * es(m);
    size_t real_bytes = (size_t)real->num_tokens * row, pad_bytes = (size_t)padded->num_tokens * row;
    size_t meta_bytes = l.total * sizeof(int32_t);
    /* Warm-up prepares bucket after bucket without waiting for the device: the previous
     * bucket's upload may still read the staging this one is about to rewrite. (vg_vit_encode
     * waits for its call to finish, so encode never needs this.) */
    if (!inputs) TRY(vg_stream_sync(s));
    TRY(vit_stage_reserve(m->rt, &m->meta_stage, &m->meta_bytes, meta_bytes));
    vit_meta_fill(c, call->grid, call->n, real->num_tokens, &l, m->meta_stage);
    char *pix = BUF(VB_PIX);
    /* the pixels were converted (and checked) into host staging by vg_vit_encode, or are in
     * device memory (vg_vit_encode_device); zero padding rows embed to zero: they cannot disturb
     * real rows, and stay finite */
    if (call->device_pixels)
        TRY(vit_device_pixels(s, call, pix, m->dt, real->num_tokens, c->patch_dim));
    else if (!call->pixels) real_bytes = 0;
    else TRY(vg_mem_copy_h2d(s, pix, call->pixels, real_bytes));
    if (pad_bytes > real_bytes) TRY(vg_mem_set(s, pix + real_bytes, 0, pad_bytes - real_bytes));
    TRY(vg_mem_copy_h2d(s, BUF(VB_META), m->meta_stage, meta_bytes));
    return vg_event_record(m->ev0, s); /* the forward's device time starts here */
}
