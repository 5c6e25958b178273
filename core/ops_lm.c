/* SPDX-License-Identifier: Apache-2.0 */
/* The core device API's ops, part 3: op table version 4, the ops of a decoder language model
 * with a paged KV cache (rotary, rmsnorm_heads, kv_store, paged_attention, argmax), version 6's
 * rotary_kv_store (the three between qkv and attention in one) and version 8's
 * rotary_paged_attention (that and paged_attention in one, or the two where the backend has no
 * fused kernel). Same pattern
 * as ops.c and ops_nn.c: the preconditions of vg_ops.h once, then what the device offers and
 * capture state, then one call into the plugin. */
#include <math.h>

#include "op_check.h"

vg_status vg_op_rotary(vg_stream *s, vg_dtype dtype, void *x, int64_t ld, int64_t rows,
                       int heads, int head_dim, const int32_t *pos, float theta)
{
    vg_status st = vg_op_check_rotary("rotary", s, dtype, x, ld, rows, heads, head_dim, pos,
                                      theta, 2, "even number");
    if (st != VG_OK) return st;
    OP_GATE(s, VG_OP_ROTARY, VG_DTYPE_BIT(dtype));
    if (!rows) return VG_OK;
    return OP_CALL(s, rotary, dtype, x, ld, rows, heads, head_dim, pos, theta);
}

vg_status vg_op_rmsnorm_heads(vg_stream *s, vg_dtype dtype, void *x, int64_t ld, int64_t rows,
                              int heads, int head_dim, const void *w, float eps)
{
    REQUIRE_STREAM("rmsnorm_heads", s);
    REQUIRE_DTYPE("rmsnorm_heads", "dtype", dtype, VG_DTYPES_FLOAT, DTYPES_FLOAT_TEXT);
    REQUIRE_RANGE("rmsnorm_heads", "rows", rows, 0, OP_INT_MAX);
    REQUIRE(heads >= 1, "rmsnorm_heads: heads %d < 1", heads);
    REQUIRE(head_dim >= 1, "rmsnorm_heads: head_dim %d < 1", head_dim);
    REQUIRE_GE("rmsnorm_heads", "ld", ld, "heads*head_dim", (int64_t)heads * head_dim);
    REQUIRE(eps >= 0.0f, "rmsnorm_heads: eps %g < 0", (double)eps);
    REQUIRE_PTR("rmsnorm_heads", "x", x, rows);
    REQUIRE_PTR("rmsnorm_heads", "w", w, rows);
    unsigned es = op_dtype_size(dtype);
    REQUIRE_ALIGNED("rmsnorm_heads", "x", x, es);
    REQUIRE_ALIGNED("rmsnorm_heads", "w", w, es);
    OP_GATE(s, VG_OP_RMSNORM_HEADS, VG_DTYPE_BIT(dtype));
    if (!rows) return VG_OK;
    return OP_CALL(s, rmsnorm_heads, dtype, x, ld, rows, heads, head_dim, w, eps);
}

vg_status vg_op_kv_store(vg_stream *s, vg_dtype dtype, const void *k, int64_t ld_k, const void *v,
                         int64_t ld_v, void *k_cache, void *v_cache, const int32_t *slots,
                         int64_t rows, int kv_heads, int head_dim)
{
    REQUIRE_STREAM("kv_store", s);
    REQUIRE_DTYPE("kv_store", "dtype", dtype, VG_DTYPES_FLOAT, DTYPES_FLOAT_TEXT);
    REQUIRE_RANGE("kv_store", "rows", rows, 0, OP_INT_MAX);
    REQUIRE(kv_heads >= 1, "kv_store: kv_heads %d < 1", kv_heads);
    REQUIRE(head_dim >= 1, "kv_store: head_dim %d < 1", head_dim);
    int64_t width = (int64_t)kv_heads * head_dim;
    REQUIRE_GE("kv_store", "ld_k", ld_k, "kv_heads*head_dim", width);
    REQUIRE_GE("kv_store", "ld_v", ld_v, "kv_heads*head_dim", width);
    REQUIRE_PTR("kv_store", "k", k, rows);
    REQUIRE_PTR("kv_store", "v", v, rows);
    REQUIRE_PTR("kv_store", "k_cache", k_cache, rows);
    REQUIRE_PTR("kv_store", "v_cache", v_cache, rows);
    REQUIRE_PTR("kv_store", "slots", slots, rows);
    unsigned es = op_dtype_size(dtype);
    REQUIRE_ALIGNED("kv_store", "k", k, es);
    REQUIRE_ALIGNED("kv_store", "v", v, es);
    REQUIRE_ALIGNED("kv_store", "k_cache", k_cache, es);
    REQUIRE_ALIGNED("kv_store", "v_cache", v_cache, es);
    REQUIRE_ALIGNED("kv_store", "slots", slots, 4);
    OP_GATE(s, VG_OP_KV_STORE, VG_DTYPE_BIT(dtype));
    if (!rows) return VG_OK;
    return OP_CALL(s, kv_store, dtype, k, ld_k, v, ld_v, k_cache, v_cache, slots, rows, kv_heads,
                   head_dim);
}

/* paged_attention's preconditions (vg_ops.h), for it and for rotary_paged_attention. */
static vg_status paged_attention_check(const vg_stream *s, vg_dtype dtype, const void *q, int64_t ld_q,
                                       const void *out, int64_t ld_out, int64_t rows, const void *k_cache,
                                       const void *v_cache, const int32_t *block_tables, int max_blocks,
                                       const int32_t *context_lens, const int32_t *query_start,
                                       int num_seqs, int heads, int kv_heads, int head_dim, int block_size)
{
    REQUIRE_STREAM("paged_attention", s);
    REQUIRE_DTYPE("paged_attention", "dtype", dtype, VG_DTYPES_FLOAT, DTYPES_FLOAT_TEXT);
    REQUIRE_RANGE("paged_attention", "rows", rows, 0, OP_INT_MAX);
    REQUIRE(num_seqs >= 1, "paged_attention: num_seqs %d < 1", num_seqs);
    REQUIRE(max_blocks >= 1, "paged_attention: max_blocks %d < 1", max_blocks);
    REQUIRE(block_size >= 1, "paged_attention: block_size %d < 1", block_size);
    REQUIRE(heads >= 1, "paged_attention: heads %d < 1", heads);
    REQUIRE(kv_heads >= 1, "paged_attention: kv_heads %d < 1", kv_heads);
    REQUIRE(heads % kv_heads == 0, "paged_attention: heads %d is not a multiple of kv_heads %d",
            heads, kv_heads);
    REQUIRE(head_dim >= 8 && head_dim <= VG_ATTENTION_MAX_HEAD_DIM && head_dim % 8 == 0,
            "paged_attention: head_dim %d is not a multiple of 8 in [8, %d]", head_dim,
            VG_ATTENTION_MAX_HEAD_DIM);
    int64_t hidden = (int64_t)heads * head_dim;
    REQUIRE_GE("paged_attention", "ld_q", ld_q, "heads*head_dim", hidden);
    REQUIRE_GE("paged_attention", "ld_out", ld_out, "heads*head_dim", hidden);
    REQUIRE_PTR("paged_attention", "q", q, rows);
    REQUIRE_PTR("paged_attention", "out", out, rows);
    REQUIRE_PTR("paged_attention", "k_cache", k_cache, rows);
    REQUIRE_PTR("paged_attention", "v_cache", v_cache, rows);
    REQUIRE_PTR("paged_attention", "block_tables", block_tables, rows);
    REQUIRE_PTR("paged_attention", "context_lens", context_lens, rows);
    REQUIRE_PTR("paged_attention", "query_start", query_start, rows);
    unsigned es = op_dtype_size(dtype);
    REQUIRE_ALIGNED("paged_attention", "q", q, es);
    REQUIRE_ALIGNED("paged_attention", "out", out, es);
    REQUIRE_ALIGNED("paged_attention", "k_cache", k_cache, es);
    REQUIRE_ALIGNED("paged_attention", "v_cache", v_cache, es);
    REQUIRE_ALIGNED("paged_attention", "block_tables", block_tables, 4);
    REQUIRE_ALIGNED("paged_attention", "context_lens", context_lens, 4);
    REQUIRE_ALIGNED("paged_attention", "query_start", query_start, 4);
    return VG_OK;
}

vg_status vg_op_paged_attention(vg_stream *s, vg_dtype dtype, const void *q, int64_t ld_q,
                                void *out, int64_t ld_out, int64_t rows, const void *k_cache,
                                const void *v_cache, const int32_t *block_tables, int max_blocks,
                                const int32_t *context_lens, const int32_t *query_start,
                                int num_seqs, int heads, int kv_heads, int head_dim,
                                int block_size, float scale)
{
    vg_status st = paged_attention_check(s, dtype, q, ld_q, out, ld_out, rows, k_cache, v_cache, block_tables,
                                         max_blocks, context_lens, query_start, num_seqs, heads, kv_heads,
                                         head_dim, block_size);
    if (st != VG_OK) return st;
    OP_GATE(s, VG_OP_PAGED_ATTENTION, VG_DTYPE_BIT(dtype));
    if (!rows) return VG_OK;
    return OP_CALL(s, paged_attention, dtype, q, ld_q, out, ld_out, rows, k_cache, v_cache,
                   block_tables, max_blocks, context_lens, query_start, num_seqs, heads, kv_heads,
                   head_dim, block_size, scale);
}

vg_status vg_op_argmax(vg_stream *s, vg_dtype dtype, const void *x, int64_t ld, int64_t rows,
                       int64_t cols, int32_t *out)
{
    REQUIRE_STREAM("argmax", s);
    REQUIRE_DTYPE("argmax", "dtype", dtype, VG_DTYPES_FLOAT, DTYPES_FLOAT_TEXT);
    REQUIRE_RANGE("argmax", "rows", rows, 0, OP_INT_MAX);
    REQUIRE_RANGE("argmax", "cols", cols, 1, OP_INT_MAX);
    REQUIRE_GE("argmax", "ld", ld, "cols", cols);
    REQUIRE_PTR("argmax", "x", x, rows);
    REQUIRE_PTR("argmax", "out", out, rows);
    REQUIRE_ALIGNED("argmax", "x", x, op_dtype_size(dtype));
    REQUIRE_ALIGNED("argmax", "out", out, 4);
    OP_GATE(s, VG_OP_ARGMAX, VG_DTYPE_BIT(dtype));
    if (!rows) return VG_OK;
    return OP_CALL(s, argmax, dtype, x, ld, rows, cols, out);
}

/* ---- op table version 6 ---------------------------------------------------------------------- */

/* Bytes from the start of rows x (stride ld) to the end of its last row of `width` elements. */
static size_t rows_span(int64_t rows, int64_t ld, int64_t width, size_t es)
{
    return ((size_t)(rows - 1) * (size_t)ld + (size_t)width) * es;
}

/* [a, a + a_bytes) and [b, b + b_bytes) share no byte. */
static int disjoint(const void *a, size_t a_bytes, const void *b, size_t b_bytes)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x + a_bytes <= y || y + b_bytes <= x;
}

#define OP "rotary_kv_store"
/* rotary_kv_store's preconditions (vg_ops.h), for it and for rotary_paged_attention. */
static vg_status rotary_kv_store_check(const vg_stream *s, vg_dtype dtype, const void *qkv, int64_t ld,
                                       int64_t rows, int heads, int kv_heads, int head_dim,
                                       const void *q_norm, const void *k_norm, float eps, const int32_t *pos,
                                       float theta, const void *k_cache, const void *v_cache,
                                       const int32_t *slots)
{
    REQUIRE_STREAM(OP, s);
    REQUIRE_PTR(OP, "qkv", qkv, rows);
    REQUIRE(kv_heads >= 1 && kv_heads <= OP_INT_MAX / 4,
            "rotary_kv_store: kv_heads %d is not in [1, 2^29]", kv_heads);
    REQUIRE(heads >= 1 && heads <= OP_INT_MAX - 2 * (int64_t)kv_heads,
            "rotary_kv_store: heads %d is not in [1, 2^31 - 1 - 2*kv_heads]", heads);
    /* the rotary part's checks, over the query and key heads */
    vg_status st = vg_op_check_rotary(OP, s, dtype, qkv, ld, rows, heads + kv_heads, head_dim, pos,
                                      theta, 2, "even number");
    if (st != VG_OK) return st;
    int64_t width = (int64_t)kv_heads * head_dim;
    REQUIRE_GE(OP, "ld", ld, "(heads+2*kv_heads)*head_dim", (int64_t)(heads + 2 * kv_heads) * head_dim);
    REQUIRE(!q_norm == !k_norm, "rotary_kv_store: q_norm and k_norm go together (both or neither)");
    REQUIRE(eps >= 0.0f, "rotary_kv_store: eps %g < 0", (double)eps);
    REQUIRE_PTR(OP, "k_cache", k_cache, rows);
    REQUIRE_PTR(OP, "v_cache", v_cache, rows);
    REQUIRE_PTR(OP, "slots", slots, rows);
    unsigned es = op_dtype_size(dtype);
    REQUIRE_ALIGNED(OP, "q_norm", q_norm, es);
    REQUIRE_ALIGNED(OP, "k_norm", k_norm, es);
    REQUIRE_ALIGNED(OP, "k_cache", k_cache, es);
    REQUIRE_ALIGNED(OP, "v_cache", v_cache, es);
    REQUIRE_ALIGNED(OP, "slots", slots, 4);
    if (rows) { /* the caches' extent is not known; their first slot's row must not be in qkv */
        size_t qkv_bytes = rows_span(rows, ld, (int64_t)(heads + 2 * kv_heads) * head_dim, es);
        REQUIRE(disjoint(qkv, qkv_bytes, k_cache, (size_t)width * es) &&
                    disjoint(qkv, qkv_bytes, v_cache, (size_t)width * es),
                "rotary_kv_store: a cache overlaps qkv");
    }
    return VG_OK;
}

vg_status vg_op_rotary_kv_store(vg_stream *s, vg_dtype dtype, void *qkv, int64_t ld, int64_t rows,
                                int heads, int kv_heads, int head_dim, const void *q_norm,
                                const void *k_norm, float eps, const int32_t *pos, float theta,
                                void *k_cache, void *v_cache, const int32_t *slots)
{
    vg_status st = rotary_kv_store_check(s, dtype, qkv, ld, rows, heads, kv_heads, head_dim, q_norm, k_norm,
                                         eps, pos, theta, k_cache, v_cache, slots);
    if (st != VG_OK) return st;
    OP_GATE(s, VG_OP_ROTARY_KV_STORE, VG_DTYPE_BIT(dtype));
    if (!rows) return VG_OK;
    return OP_CALL(s, rotary_kv_store, dtype, qkv, ld, rows, heads, kv_heads, head_dim, q_norm,
                   k_norm, eps, pos, theta, k_cache, v_cache, slots);
}
#undef OP

/* ---- op table version 8 ---------------------------------------------------------------------- */

#define OP "rotary_paged_attention"
/* The bytes rotary_paged_attention writes (out, the caches) or may rewrite in place (qkv's query
 * and key heads): what the rows it only reads must stay apart from. */
typedef struct paged_spans {
    size_t qkv, out, cache;
} paged_spans;

static int apart_from_written(const vg_rotary_paged_args *a, const paged_spans *w, const void *p, size_t bytes)
{
    return disjoint(p, bytes, a->qkv, w->qkv) && disjoint(p, bytes, a->out, w->out) &&
           disjoint(p, bytes, a->k_cache, w->cache) && disjoint(p, bytes, a->v_cache, w->cache);
}

/* norm_x and qkv_bias (op table version 10; vg_ops.h); most: the elements a span may reach, w:
 * the written spans (NULL without rows: nothing to overlap). */
static vg_status norm_x_check(const vg_rotary_paged_args *a, int64_t most, const paged_spans *w)
{
    if (!a->norm_x) {
        REQUIRE(!a->qkv_bias, OP ": qkv_bias is given without norm_x (it goes with the folded norm)");
        return VG_OK;
    }
    const size_t es = op_dtype_size(a->dtype);
    REQUIRE_RANGE(OP, "norm_x_cols", a->norm_x_cols, 1, OP_INT_MAX);
    REQUIRE_GE(OP, "ld_norm_x", a->ld_norm_x, "norm_x_cols", a->norm_x_cols);
    REQUIRE(a->ld_norm_x <= most / (a->rows ? a->rows : 1), OP ": ld_norm_x %lld spans more than the address space",
            (long long)a->ld_norm_x);
    REQUIRE(a->norm_x_eps >= 0.0f && isfinite(a->norm_x_eps), OP ": norm_x_eps %g is not finite and >= 0",
            (double)a->norm_x_eps);
    REQUIRE_ALIGNED(OP, "norm_x", a->norm_x, es);
    REQUIRE_ALIGNED(OP, "qkv_bias", a->qkv_bias, es);
    if (!w) return VG_OK;
    const size_t bias_bytes = (size_t)(a->heads + 2 * (int64_t)a->kv_heads) * (size_t)a->head_dim * es;
    REQUIRE(apart_from_written(a, w, a->norm_x, rows_span(a->rows, a->ld_norm_x, a->norm_x_cols, es)),
            OP ": norm_x overlaps qkv, out or a cache");
    REQUIRE(!a->qkv_bias || apart_from_written(a, w, a->qkv_bias, bias_bytes), OP ": qkv_bias overlaps qkv, out or a cache");
    return VG_OK;
}

vg_status vg_op_rotary_paged_attention(vg_stream *s, const vg_rotary_paged_args *args)
{
    REQUIRE_STREAM(OP, s);
    REQUIRE(args, OP ": args is NULL");
    REQUIRE(args->struct_size >= VG_ROTARY_PAGED_ARGS_SIZE_8, OP ": args.struct_size %u < %zu", args->struct_size,
            (size_t)VG_ROTARY_PAGED_ARGS_SIZE_8);
    vg_rotary_paged_args full;
    op_args_whole(&full, sizeof full, args);
    full.unused_v12_tail = 0; /* the caller's padding: never passed on */
    const vg_rotary_paged_args *a = &full;
    vg_status st = rotary_kv_store_check(s, a->dtype, a->qkv, a->ld, a->rows, a->heads, a->kv_heads, a->head_dim,
                                         a->q_norm, a->k_norm, a->eps, a->pos, a->theta, a->k_cache,
                                         a->v_cache, a->slots);
    if (st != VG_OK) return st;
    st = paged_attention_check(s, a->dtype, a->qkv, a->ld, a->out, a->ld_out, a->rows, a->k_cache, a->v_cache,
                               a->block_tables, a->max_blocks, a->context_lens, a->query_start, a->num_seqs,
                               a->heads, a->kv_heads, a->head_dim, a->block_size);
    if (st != VG_OK) return st;
    const size_t es = op_dtype_size(a->dtype);
    const int64_t width = (int64_t)a->kv_heads * a->head_dim, hidden = (int64_t)a->heads * a->head_dim;
    const int64_t most = (int64_t)(SIZE_MAX / 4 / es); /* elements a span may reach: no size_t wraps */
    REQUIRE(a->num_slots >= 1 && a->num_slots <= most / width, OP ": num_slots %lld is not in [1, %lld]",
            (long long)a->num_slots, (long long)(most / width));
    REQUIRE(a->ld <= most / (a->rows ? a->rows : 1) && a->ld_out <= most / (a->rows ? a->rows : 1),
            OP ": ld %lld or ld_out %lld spans more than the address space", (long long)a->ld,
            (long long)a->ld_out);
    paged_spans w = {0, 0, 0};
    if (a->rows) { /* out is written while qkv and the caches are read; qkv and the caches apart */
        w = (paged_spans){rows_span(a->rows, a->ld, hidden + 2 * width, es), rows_span(a->rows, a->ld_out, hidden, es),
                          (size_t)a->num_slots * (size_t)width * es};
        REQUIRE(disjoint(a->out, w.out, a->qkv, w.qkv) && disjoint(a->out, w.out, a->k_cache, w.cache) &&
                    disjoint(a->out, w.out, a->v_cache, w.cache),
                OP ": out overlaps qkv or a cache");
        REQUIRE(disjoint(a->qkv, w.qkv, a->k_cache, w.cache) && disjoint(a->qkv, w.qkv, a->v_cache, w.cache),
                OP ": a cache overlaps qkv");
    }
    st = norm_x_check(a, most, a->rows ? &w : NULL);
    if (st != VG_OK) return st;
    REQUIRE(a->tables_static == 0 || a->tables_static == 1, OP ": tables_static %d is neither 0 nor 1",
            (int)a->tables_static);
    const uint32_t bit = VG_DTYPE_BIT(a->dtype);
    if (a->norm_x) { /* only the fused op knows norm_x: never its two ops */
        OP_GATE(s, VG_OP_ROTARY_PAGED_ATTENTION_NORM_X, bit);
        if (!a->rows) return VG_OK;
        return OP_CALL(s, rotary_paged_attention, a);
    }
    /* the device's fused op where it has one (and can capture it, when capturing) ... */
    const uint32_t need = VG_OP_SUPPORTED | (s->capturing ? VG_OP_CAPTURABLE : 0u);
    const vg_op_entry *e = &s->rt->op[VG_OP_ROTARY_PAGED_ATTENTION];
    if ((e->flags & need) == need && (bit & e->dtypes)) {
        if (!a->rows) return VG_OK;
        return OP_CALL(s, rotary_paged_attention, a);
    }
    /* ... else its two ops, both offered before the first runs (a refusal leaves nothing changed):
     * where the device has no fused op the refusal is theirs (what they lack, capture or a dtype),
     * where it has one it is this op's (it cannot be captured, nor can they) */
    st = vg_op_gate(s, VG_OP_ROTARY_KV_STORE, bit);
    if (st == VG_OK) st = vg_op_gate(s, VG_OP_PAGED_ATTENTION, bit);
    if (st != VG_OK) return (e->flags & VG_OP_SUPPORTED) ? vg_op_refuse(s, VG_OP_ROTARY_PAGED_ATTENTION, bit) : st;
    if (!a->rows) return VG_OK;
    st = OP_CALL(s, rotary_kv_store, a->dtype, a->qkv, a->ld, a->rows, a->heads, a->kv_heads, a->head_dim, a->q_norm,
                 a->k_norm, a->eps, a->pos, a->theta, a->k_cache, a->v_cache, a->slots);
    if (st != VG_OK) return st;
    return OP_CALL(s, paged_attention, a->dtype, a->qkv, a->ld, a->out, a->ld_out, a->rows, a->k_cache, a->v_cache,
                   a->block_tables, a->max_blocks, a->context_lens, a->query_start, a->num_seqs, a->heads,
                   a->kv_heads, a->head_dim, a->block_size, a->scale);
}
#undef OP
