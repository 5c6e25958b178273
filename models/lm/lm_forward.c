/* SPDX-License-Identifier: Apache-2.0 */
/* The forward pass of a Qwen2 / Qwen3 decoder as runner pieces.
 *
 *   embed            gather the embedding rows of the step's tokens
 *   layer i: in      rmsnorm, qkv GEMM (+bias, Qwen2) (the two as one GEMM where the device
 *                    normalises A: gemm_rmsnorm_a), per-head rmsnorm of q and k (Qwen3),
 *                    rotary on q and k, kv_store of k and v into the paged cache (the last
 *                    three as one rotary_kv_store where the device has it)
 *   layer i: attn    paged attention (the splitting piece: graph-safe for uniform steps only);
 *                    where the device has rotary_paged_attention, the attention does the
 *                    rotary and the store too, and layer i: in ends with the qkv GEMM; where
 *                    it also has its norm_x (not in F16), the input norm's weight is in qkv's
 *                    columns, layer i: in is the qkv GEMM of the residual rows alone, and the
 *                    attention scales each qkv row by its norm's 1/rms and adds the bias
 *   layer i: out     o-proj GEMM + residual, rmsnorm, gate|up GEMM, silu·mul, down GEMM +
 *                    residual (the rmsnorm and silu·mul inside the gate|up GEMM where the device
 *                    has gemm_rmsnorm_a and gemm_silu_gate)
 *   head             gather the last new token of each sequence, final rmsnorm, lm_head GEMM
 *                    into F32 logits (the two as one where the device has it), argmax
 *
 * Tensor parallelism over n ranks (vg_lm_options.comm; docs/tensor-parallel.md): each rank holds
 * its heads, its gate|up columns and its o / down rows (m->cfg is its share), so attn_in and
 * attention run unchanged on fewer heads. The o and down GEMMs of rank 0 add the residual as
 * always; the other ranks' write their partial product alone into the same buffer, and one
 * in-place all-reduce of the hidden rows sums them: h + Σ partials, no extra op. The head
 * computes this rank's vs = ceil(vocab / n) vocabulary rows into LB_SLICE, all-gathers the
 * slices rank-major ([n][rows][vs] in LB_GATHER), reorders them with gather_rows (the table at
 * LB_META's head_idx, written by prepare: dst row t·n + r = src row r·rows + t, each row vs
 * floats) into
 * LB_LOGITS [rows][n·vs], and takes the argmax of the first vocab columns (the padding rows of
 * the last slice never win). The collectives sit inside the pieces, so graphs record them where
 * the device captures collectives (VG_CAP_COMM_CAPTURE), else those pieces run eagerly. Every
 * rank runs the same pieces in the same order: the runner's choices (bucket, graph or eager)
 * depend on the batch alone, and the ranks run the same batches.
 *
 * Buffers are runner buffers sized for the padded token count T and S = min(T, max_seqs)
 * sequence slots; per-step data (tokens, positions, slots, query starts, context lengths,
 * block tables) sits in LB_META, uploaded by prepare. Padding tokens write no KV entry
 * (slot -1) and padding sequences own no query rows, so they cannot disturb real ones. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/linear.h"
#include "../common/model_base.h"
#include "lm_internal.h"

#define BUF VGM_BUF
#define TRY VGM_TRY

static size_t es(const vg_lm *m) { return vg_dtype_size(m->dt); }

/* The projections of models/common/linear.h, with this model's dtype, eps and fusions. */
#define LIN(m) (&(vgm_linear){.dt = (m)->dt, .eps = (m)->cfg.eps, .norm_gemm = (m)->norm_gemm})
#define proj(m, ...) vgm_proj(LIN(m), __VA_ARGS__)
#define gemm(m, s, rows, n, k, a, w, bias, c, dtype_c, residual) \
    vgm_gemm(LIN(m), s, rows, n, k, a, w, bias, c, dtype_c, residual, VG_ACT_NONE)

void lm_meta_layout_of(const vg_lm *m, int64_t tokens, lm_meta_layout *l)
{
    lm_meta_layout_for(tokens, m->kv.max_seqs, m->kv.max_blocks, m->tp.size, l);
}

static int32_t *meta_at(vg_runner *r, size_t offset) { return (int32_t *)BUF(LB_META) + offset; }

static vg_status piece_embed(void *mp, vg_runner *r, const vg_piece *p, const vg_batch_desc *d,
                             vg_stream *s)
{
    vg_lm *m = mp;
    (void)p;
    lm_meta_layout l;
    lm_meta_layout_of(m, d->num_tokens, &l);
    return vg_op_gather_rows(s, m->dt, BUF(LB_H), m->w.embed, meta_at(r, l.tok), d->num_tokens,
                             m->cfg.hidden);
}

static vg_status piece_attn_in(void *mp, vg_runner *r, const vg_piece *p, const vg_batch_desc *d,
                               vg_stream *s)
{
    vg_lm *m = mp;
    const lm_cfg *c = &m->cfg;
    const lm_layer *L = &m->w.layers[p->arg];
    int64_t T = d->num_tokens, W = lm_qkv_width(c), qw = lm_q_width(c), kvw = lm_kv_width(c);
    lm_meta_layout l;
    lm_meta_layout_of(m, T, &l);
    char *qkv = BUF(LB_QKV), *k = qkv + (size_t)qw * es(m), *v = k + (size_t)kvw * es(m);
    if (m->fold_in) /* the rows as they are: the attention applies the norm's 1/rms and the bias */
        return gemm(m, s, T, W, c->hidden, BUF(LB_H), L->qkv_w, NULL, qkv, m->dt, NULL);
    TRY(proj(m, s, T, W, c->hidden, BUF(LB_H), c->hidden, L->in_norm, BUF(LB_N), L->qkv_w, L->qkv_b,
             qkv, m->dt, NULL, VG_GEMM_GATE_NONE));
    if (m->fused_attn) return VG_OK; /* the attention piece rotates and stores */
    if (m->fused_qkv)
        return vg_op_rotary_kv_store(s, m->dt, qkv, W, T, c->heads, c->kv_heads, c->head_dim,
                                     c->qk_norm ? L->q_norm : NULL, c->qk_norm ? L->k_norm : NULL,
                                     c->eps, meta_at(r, l.pos), c->theta, lm_k_cache(m, (int)p->arg),
                                     lm_v_cache(m, (int)p->arg), meta_at(r, l.slots));
    if (c->qk_norm) {
        TRY(vg_op_rmsnorm_heads(s, m->dt, qkv, W, T, c->heads, c->head_dim, L->q_norm, c->eps));
        TRY(vg_op_rmsnorm_heads(s, m->dt, k, W, T, c->kv_heads, c->head_dim, L->k_norm, c->eps));
    }
    /* q's and k's heads are adjacent in a qkv row: one rotary over both */
    TRY(vg_op_rotary(s, m->dt, qkv, W, T, c->heads + c->kv_heads, c->head_dim, meta_at(r, l.pos),
                     c->theta));
    return vg_op_kv_store(s, m->dt, k, W, v, W, lm_k_cache(m, (int)p->arg), lm_v_cache(m, (int)p->arg),
                          meta_at(r, l.slots), T, c->kv_heads, c->head_dim);
}

static vg_status piece_attention(void *mp, vg_runner *r, const vg_piece *p, const vg_batch_desc *d,
                                 vg_stream *s)
{
    vg_lm *m = mp;
    const lm_cfg *c = &m->cfg;
    int64_t T = d->num_tokens;
    lm_meta_layout l;
    lm_meta_layout_of(m, T, &l);
    if (m->fused_attn) {
        /* tables_static: the op before this one is attn_in's qkv projection, which writes only qkv;
         * the tables and positions are written before it (uploaded at the start of the step, or by
         * lm_advance at the end of the step before), the cache's history by earlier steps, and
         * norm_x (LB_H) by the op before the projection */
        const lm_layer *L = &m->w.layers[p->arg];
        const vg_rotary_paged_args a = {
            .struct_size = sizeof a, .dtype = m->dt, .qkv = BUF(LB_QKV), .ld = lm_qkv_width(c), .rows = T,
            .heads = c->heads, .kv_heads = c->kv_heads, .head_dim = c->head_dim, .eps = c->eps,
            .q_norm = c->qk_norm ? L->q_norm : NULL, .k_norm = c->qk_norm ? L->k_norm : NULL,
            .pos = meta_at(r, l.pos), .theta = c->theta, .scale = 1.0f / sqrtf((float)c->head_dim),
            .k_cache = lm_k_cache(m, (int)p->arg), .v_cache = lm_v_cache(m, (int)p->arg),
            .num_slots = m->kv.num_blocks * m->kv.block_size, .slots = meta_at(r, l.slots), .out = BUF(LB_ATT), .ld_out = lm_q_width(c),
            .block_tables = meta_at(r, l.btab), .context_lens = meta_at(r, l.ctx),
            .query_start = meta_at(r, l.qstart), .max_blocks = l.max_blocks, .num_seqs = l.seqs,
            .block_size = m->kv.block_size, .norm_x = m->fold_in ? BUF(LB_H) : NULL, .ld_norm_x = c->hidden,
            .norm_x_cols = c->hidden, .norm_x_eps = c->eps, .qkv_bias = m->fold_in ? L->qkv_b : NULL,
            .tables_static = 1};
        return vg_op_rotary_paged_attention(s, &a);
    }
    return vg_op_paged_attention(s, m->dt, BUF(LB_QKV), lm_qkv_width(c), BUF(LB_ATT), lm_q_width(c),
                                 T, lm_k_cache(m, (int)p->arg), lm_v_cache(m, (int)p->arg),
                                 meta_at(r, l.btab), l.max_blocks, meta_at(r, l.ctx),
                                 meta_at(r, l.qstart), l.seqs, c->heads, c->kv_heads, c->head_dim,
                                 m->kv.block_size, 1.0f / sqrtf((float)c->head_dim));
}

/* The residual a row-split GEMM adds: LB_H on rank 0 (and without tensor parallelism), none on
 * the others, whose partial products the all-reduce then adds to it. */
static const void *tp_residual(const vg_lm *m, vg_runner *r)
{
    return m->tp.rank == 0 ? BUF(LB_H) : NULL;
}

/* Under tensor parallelism: sum the ranks' LB_H in place (T hidden rows). */
static vg_status tp_all_reduce(const vg_lm *m, vg_runner *r, vg_stream *s, int64_t T)
{
    if (m->tp.size < 2) return VG_OK;
    return vg_comm_all_reduce(m->comm, s, m->dt, BUF(LB_H), BUF(LB_H), T * m->cfg.hidden);
}

static vg_status piece_attn_out(void *mp, vg_runner *r, const vg_piece *p, const vg_batch_desc *d,
                                vg_stream *s)
{
    vg_lm *m = mp;
    const lm_cfg *c = &m->cfg;
    const lm_layer *L = &m->w.layers[p->arg];
    int64_t T = d->num_tokens, Ip = c->inter_pad;
    TRY(gemm(m, s, T, c->hidden, lm_q_width(c), BUF(LB_ATT), L->o_w, NULL, BUF(LB_H), m->dt,
             tp_residual(m, r)));
    TRY(tp_all_reduce(m, r, s, T));
    const vgm_mlp mlp = {.gated = m->gated_gu, .x = BUF(LB_H), .norm = L->post_norm,
                         .norm_unit = m->fold_norm, .norm_out = BUF(LB_N),
                         .gu_w = L->gu_w, .gu = BUF(LB_GU), .mid = BUF(LB_M), .down_w = L->down_w,
                         .residual = tp_residual(m, r)};
    TRY(vgm_mlp_silu(LIN(m), s, &mlp, T, c->hidden, Ip));
    return tp_all_reduce(m, r, s, T);
}

static vg_status piece_head(void *mp, vg_runner *r, const vg_piece *p, const vg_batch_desc *d,
                            vg_stream *s)
{
    vg_lm *m = mp;
    (void)p;
    const lm_cfg *c = &m->cfg;
    lm_meta_layout l;
    lm_meta_layout_of(m, d->num_tokens, &l);
    /* uniform steps (graphed): every sequence slot of the bucket; mixed steps (this piece runs
     * eagerly then, see head_graph_safe): only the step's sequences, so a long prefill does
     * not multiply the lm_head GEMM by its padded token count */
    int64_t rows = d->uniform ? l.seqs : m->head_rows;
    TRY(vg_op_gather_rows(s, m->dt, BUF(LB_LAST), BUF(LB_H), meta_at(r, l.last), rows, c->hidden));
    if (m->tp.size < 2) {
        TRY(proj(m, s, rows, c->vocab, c->hidden, BUF(LB_LAST), c->hidden, m->w.final_norm,
                 BUF(LB_LAST), m->w.lm_head, NULL, BUF(LB_LOGITS), VG_DTYPE_F32, NULL,
                 VG_GEMM_GATE_NONE));
        return vg_op_argmax(s, VG_DTYPE_F32, BUF(LB_LOGITS), c->vocab, rows, c->vocab, BUF(LB_ARGMAX));
    }
    int64_t n = m->tp.size, vs = m->tp.vs;
    TRY(proj(m, s, rows, vs, c->hidden, BUF(LB_LAST), c->hidden, m->w.final_norm, BUF(LB_LAST),
             m->w.lm_head, NULL, BUF(LB_SLICE), VG_DTYPE_F32, NULL, VG_GEMM_GATE_NONE));
    TRY(vg_comm_all_gather(m->comm, s, VG_DTYPE_F32, BUF(LB_SLICE), BUF(LB_GATHER), rows * vs));
    TRY(vg_op_gather_rows(s, VG_DTYPE_F32, BUF(LB_LOGITS), BUF(LB_GATHER), meta_at(r, l.head_idx), rows * n, vs));
    return vg_op_argmax(s, VG_DTYPE_F32, BUF(LB_LOGITS), n * vs, rows, c->vocab, BUF(LB_ARGMAX));
}

/* A piece with collectives: capturable where the device captures them. */
static int tp_graph_safe(void *mp, const vg_batch_desc *d)
{
    const vg_lm *m = mp;
    (void)d;
    return m->tp.size < 2 || m->comm_capture;
}

/* The head of a mixed step sizes its GEMM by the step's sequence count (host data): eager. */
static int head_graph_safe(void *mp, const vg_batch_desc *d)
{
    return d->uniform != 0 && tp_graph_safe(mp, d);
}

/* Paged attention reads per-sequence lengths: its launch shape is fixed by the buffers, but
 * only uniform steps (one query row per sequence) are captured whole. */
static int attention_graph_safe(void *mp, const vg_batch_desc *d)
{
    (void)mp;
    return d->uniform != 0;
}

static const vg_op_id k_ops_embed[] = {VG_OP_GATHER_ROWS};

#define OPS(list) .ops_used = (list), .num_ops_used = (int)VGM_ARRAY_LEN(list)
#define OPS_N(list, n) .ops_used = (list), .num_ops_used = (n)

static int lm_addresses(void *mp, vg_runner *r, const void **out, int max);

vg_status lm_pieces_init(vg_lm *m)
{
    const lm_cfg *c = &m->cfg;
    static const vg_op_id needed[] = {VG_OP_GEMM, VG_OP_GATHER_ROWS, VG_OP_RMSNORM, VG_OP_SILU_MUL,
                                      VG_OP_ROTARY, VG_OP_KV_STORE, VG_OP_PAGED_ATTENTION};
    TRY(vgm_require_ops(m->rt, needed, VGM_ARRAY_LEN(needed), m->dt, "lm", "the language model"));
    if (c->qk_norm && !vgm_has_op(m->rt, VG_OP_RMSNORM_HEADS, m->dt))
        return vg_error_set(VG_ERR_UNSUPPORTED, "lm: backend '%s' has no rmsnorm_heads for %s (Qwen3)",
                            vg_runtime_backend_name(m->rt), vg_dtype_name(m->dt));
    if (!vgm_has_op(m->rt, VG_OP_ARGMAX, VG_DTYPE_F32))
        return vg_error_set(VG_ERR_UNSUPPORTED, "lm: backend '%s' has no argmax for F32",
                            vg_runtime_backend_name(m->rt));
    /* op table version 6's fusions, where the device has them */
    m->fused_qkv = vgm_has_op(m->rt, VG_OP_ROTARY_KV_STORE, m->dt);
    m->gated_gu = vgm_has_op(m->rt, VG_OP_GEMM_SILU_GATE, m->dt);
    m->norm_gemm = vgm_has_op(m->rt, VG_OP_GEMM_RMSNORM_A, m->dt);
    /* and version 8's: the new tokens' rotary and store inside the attention */
    m->fused_attn = vgm_has_op(m->rt, VG_OP_ROTARY_PAGED_ATTENTION, m->dt);
    m->op_attention = m->fold_in      ? VG_OP_ROTARY_PAGED_ATTENTION_NORM_X
                      : m->fused_attn ? VG_OP_ROTARY_PAGED_ATTENTION
                                      : VG_OP_PAGED_ATTENTION;
    vg_op_id norm = m->norm_gemm ? VG_OP_GEMM_RMSNORM_A : VG_OP_RMSNORM;
    int a = 0, b = 0, h = 0;
    m->ops_in[a++] = VG_OP_GEMM;
    if (!m->fold_in) m->ops_in[a++] = norm;
    if (m->fused_attn) {
        /* the attention piece's op does the rotary and the store */
    } else if (m->fused_qkv) {
        m->ops_in[a++] = VG_OP_ROTARY_KV_STORE;
    } else {
        m->ops_in[a++] = VG_OP_ROTARY, m->ops_in[a++] = VG_OP_KV_STORE;
        if (c->qk_norm) m->ops_in[a++] = VG_OP_RMSNORM_HEADS;
    }
    m->ops_out[b++] = VG_OP_GEMM, m->ops_out[b++] = m->fold_norm ? VG_OP_GEMM_RMSNORM_A_UNIT : norm;
    m->ops_out[b++] = m->gated_gu ? VG_OP_GEMM_SILU_GATE : VG_OP_SILU_MUL;
    m->ops_head[h++] = VG_OP_GATHER_ROWS, m->ops_head[h++] = norm, m->ops_head[h++] = VG_OP_GEMM;
    m->ops_head[h++] = VG_OP_ARGMAX;
    m->nops_in = a, m->nops_out = b, m->nops_head = h;
    int n = 2 + 3 * c->layers;
    m->pieces = calloc((size_t)n, sizeof *m->pieces);
    if (!m->pieces) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "lm: out of memory");
    int k = 0;
    m->pieces[k++] = (vg_piece){.name = "embed", .run = piece_embed, OPS(k_ops_embed)};
    for (int i = 0; i < c->layers; i++) {
        m->pieces[k++] = (vg_piece){.name = "attn_in", .run = piece_attn_in, .arg = i,
                                    OPS_N(m->ops_in, m->nops_in)};
        m->pieces[k++] = (vg_piece){.name = "attention", .run = piece_attention,
                                    .flags = VG_PIECE_SPLITTING, .arg = i,
                                    .graph_safe = attention_graph_safe, OPS_N(&m->op_attention, 1)};
        m->pieces[k++] = (vg_piece){.name = "attn_out_mlp", .run = piece_attn_out, .arg = i,
                                    .graph_safe = tp_graph_safe, OPS_N(m->ops_out, m->nops_out)};
    }
    m->pieces[k++] = (vg_piece){.name = "head", .run = piece_head, .graph_safe = head_graph_safe,
                                OPS_N(m->ops_head, m->nops_head)};
    m->iface = (vg_model_iface){.struct_size = sizeof(vg_model_iface), .model = m,
                                .pieces = m->pieces, .num_pieces = n, .reserve = lm_reserve,
                                .prepare = lm_prepare, .addresses = lm_addresses};
    return VG_OK;
}

/* For the address check (VG_DEBUG_ADDRESSES=1): what the pieces read besides runner buffers. */
static int lm_addresses(void *mp, vg_runner *r, const void **out, int max)
{
    vg_lm *m = mp;
    (void)r;
    const void *a[2] = {m->w.mem.base, m->kv_mem};
    int n = 0;
    for (; n < 2 && n < max; n++) out[n] = a[n];
    return n;
}

vg_status lm_reserve(void *mp, vg_runner *r, const vg_batch_desc *d)
{
    vg_lm *m = mp;
    const lm_cfg *c = &m->cfg;
    size_t T = (size_t)d->num_tokens, e = es(m), h = (size_t)c->hidden, Ip = (size_t)c->inter_pad;
    lm_meta_layout l;
    lm_meta_layout_of(m, d->num_tokens, &l);
    size_t S = (size_t)l.seqs, n = (size_t)m->tp.size, vs = (size_t)m->tp.vs;
    int tp = m->tp.size > 1;
    const size_t bytes[LB_COUNT_] = {
        [LB_META] = l.total * sizeof(int32_t),
        [LB_H] = T * h * e,
        [LB_N] = T * h * e,
        [LB_QKV] = T * (size_t)lm_qkv_width(c) * e,
        [LB_ATT] = T * (size_t)lm_q_width(c) * e,
        [LB_GU] = 2 * T * Ip * e,
        [LB_M] = m->gated_gu ? 0 : T * Ip * e, /* the gated GEMM leaves the product in LB_GU */
        [LB_LAST] = S * h * e,
        [LB_LOGITS] = S * (size_t)lm_logits_ld(m) * sizeof(float),
        [LB_ARGMAX] = S * sizeof(int32_t),
        [LB_SLICE] = tp ? S * vs * sizeof(float) : 0,
        [LB_GATHER] = tp ? n * S * vs * sizeof(float) : 0,
    };
    for (int i = 0; i < LB_COUNT_; i++) TRY(vg_runner_buffer_reserve(r, i, bytes[i]));
    return VG_OK;
}

vg_status lm_prepare(void *mp, vg_runner *r, const vg_batch_desc *real, const vg_batch_desc *padded,
                     vg_stream *s, const void *inputs)
{
    vg_lm *m = mp;
    (void)real;
    const lm_plan *p = inputs; /* NULL at warm-up: an all-padding call */
    lm_meta_layout l;
    lm_meta_layout_of(m, padded->num_tokens, &l);
    /* warm-up prepares bucket after bucket without waiting: the previous upload may still
     * read the staging (vg_lm_step waits for its step, so steps never need this) */
    if (!p) TRY(vg_stream_sync(s));
    TRY(vgm_stage_reserve(m->rt, &m->meta_stage, &m->meta_bytes, l.total * sizeof(int32_t)));
    size_t up = lm_meta_fill(&m->kv, p, &l, m->meta_stage);
    m->head_rows = p ? p->num_seqs : l.seqs;
    int64_t hrows = padded->uniform || !p ? l.seqs : p->num_seqs, n = m->tp.size;
    if (n > 1) { /* under tensor parallelism: dst row t·n + q of LB_LOGITS is row t of rank q's slice */
        int32_t *idx = (int32_t *)m->meta_stage + l.head_idx;
        for (int64_t t = 0; t < hrows; t++)
            for (int64_t q = 0; q < n; q++) idx[t * n + q] = (int32_t)(q * hrows + t);
    }
    return vg_mem_copy_h2d(s, BUF(LB_META), m->meta_stage, up * sizeof(int32_t));
}
