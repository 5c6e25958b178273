/* SPDX-License-Identifier: Apache-2.0 */
/* kunlun_stub kernels: CPU versions of the op table. GEMM goes through OpenBLAS (cblas).
 *
 * The core validates every op call against the catalogue (vg_ops.h) before it reaches a member:
 * pointers, dtypes, shapes, leading dimensions and aliasing are right by the time an op_* below
 * runs, so the members only package their arguments and submit them. What they still refuse is
 * their own: a scratch buffer that cannot be reserved. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "stub_internal.h"
#include "stub_kernels.h"

/* ---- fill -------------------------------------------------------------------------------- */

typedef struct fill_args {
    void *dst;
    vg_dtype dtype;
    size_t count;
    double value;
} fill_args;

static void run_fill(vg_bk_stream *s, const void *p)
{
    (void)s;
    const fill_args *a = p;
    for (size_t i = 0; i < a->count; i++) {
        switch (a->dtype) {
        case VG_DTYPE_I32: ((int32_t *)a->dst)[i] = (int32_t)a->value; break;
        case VG_DTYPE_I64: ((int64_t *)a->dst)[i] = (int64_t)a->value; break;
        case VG_DTYPE_U8: ((uint8_t *)a->dst)[i] = (uint8_t)a->value; break;
        default: store_f(a->dst, a->dtype, i, (float)a->value); break;
        }
    }
}

static vg_status op_fill(vg_bk_device *dev, vg_bk_stream *s, void *dst, vg_dtype dtype,
                         size_t count, double value)
{
    (void)dev;
    fill_args a = {dst, dtype, count, value};
    return stub_submit(s, VG_OP_FILL, "fill", run_fill, &a, sizeof a);
}

/* ---- axpby ------------------------------------------------------------------------------- */

typedef struct axpby_args {
    size_t n;
    float alpha, beta;
    const float *x;
    float *y;
} axpby_args;

static void run_axpby(vg_bk_stream *s, const void *p)
{
    (void)s;
    const axpby_args *a = p;
    for (size_t i = 0; i < a->n; i++) a->y[i] = a->alpha * a->x[i] + a->beta * a->y[i];
}

static vg_status op_axpby(vg_bk_device *dev, vg_bk_stream *s, size_t n, float alpha,
                          const float *x, float beta, float *y)
{
    (void)dev;
    axpby_args a = {n, alpha, beta, x, y};
    return stub_submit(s, VG_OP_AXPBY, "axpby", run_axpby, &a, sizeof a);
}

/* ---- gemm -------------------------------------------------------------------------------- */

static void run_gemm(vg_bk_stream *s, const void *p)
{
    const vg_gemm_args *g = p;
    size_t m = (size_t)g->m, n = (size_t)g->n, k = (size_t)g->k;
    size_t need = m * n + (g->dtype_ab == VG_DTYPE_F32 ? 0 : (m + n) * k);
    float *acc = stub_scratch(s, need);
    if (!acc) { /* cannot happen after the enqueue-time reservation; keep the output defined */
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) store_f(g->c, g->dtype_c, i * g->ldc + j, NAN);
        return;
    }
    const float *A = g->a, *B = g->b;
    size_t lda = (size_t)g->lda, ldb = (size_t)g->ldb;
    if (g->dtype_ab != VG_DTYPE_F32) { /* widen half inputs once, then one SGEMM */
        float *a32 = acc + m * n, *b32 = a32 + m * k;
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < k; j++) a32[i * k + j] = load_f(g->a, g->dtype_ab, i * lda + j);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < k; j++) b32[i * k + j] = load_f(g->b, g->dtype_ab, i * ldb + j);
        A = a32, B = b32, lda = k, ldb = k;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)k, g->alpha, A,
                (int)lda, B, (int)ldb, 0.0f, acc, (int)n);
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++) {
            float v = acc[i * n + j];
            if (g->bias) v += load_f(g->bias, g->dtype_ab, j);
            v = activate(g->act, v);
            if (g->residual) v += load_f(g->residual, g->dtype_c, i * (size_t)g->ldr + j);
            store_f(g->c, g->dtype_c, i * (size_t)g->ldc + j, v);
        }
    }
    if (g->gate == VG_GEMM_GATE_SILU) /* silu_mul in place over the stored halves, as the ops in turn */
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n / 2; j++) {
                size_t at = i * (size_t)g->ldc + j;
                float gv = load_f(g->c, g->dtype_c, at), uv = load_f(g->c, g->dtype_c, at + n / 2);
                store_f(g->c, g->dtype_c, at, activate(VG_ACT_SILU, gv) * uv);
            }
}

static vg_status op_gemm(vg_bk_device *dev, vg_bk_stream *s, const vg_gemm_args *args)
{
    vg_gemm_args normed;
    const vg_gemm_args *g = args;
    if (args->norm_w || args->norm_unit) { /* the rmsnorm into norm_out (a NULL weight: unit),
                                             * then the GEMM on it, as the ops in turn */
        vg_status st = stub_op_rmsnorm(dev, s, args->dtype_ab, args->a, args->norm_w, args->norm_out,
                                       args->m, args->k, args->norm_eps);
        if (st != VG_OK) return st;
        normed = *args;
        normed.a = args->norm_out, normed.norm_w = NULL, normed.norm_unit = 0;
        g = &normed;
    }
    /* Reserve the scratch now so the run cannot fail later (it may be inside a graph). */
    size_t need = (size_t)g->m * (size_t)g->n +
                  (g->dtype_ab == VG_DTYPE_F32 ? 0 : ((size_t)g->m + (size_t)g->n) * (size_t)g->k);
    if (!stub_scratch(s, need))
        return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: gemm: no scratch for %zu floats", need);
    return stub_submit(s, VG_OP_GEMM, "gemm", run_gemm, g, sizeof *g);
}

/* ---- gather_rows --------------------------------------------------------------------------- */

typedef struct gather_args {
    void *dst;
    const void *src;
    const int32_t *idx;
    int64_t rows, cols;
    size_t elem;
} gather_args;

static void run_gather(vg_bk_stream *s, const void *p)
{
    (void)s;
    const gather_args *a = p;
    size_t row_bytes = (size_t)a->cols * a->elem;
    for (int64_t r = 0; r < a->rows; r++)
        memcpy((char *)a->dst + (size_t)r * row_bytes,
               (const char *)a->src + (size_t)a->idx[r] * row_bytes, row_bytes);
}

static vg_status op_gather_rows(vg_bk_device *dev, vg_bk_stream *s, vg_dtype dtype, void *dst,
                                const void *src, const int32_t *idx, int64_t rows, int64_t cols)
{
    (void)dev;
    gather_args a = {dst, src, idx, rows, cols, dtype_size(dtype)};
    return stub_submit(s, VG_OP_GATHER_ROWS, "gather_rows", run_gather, &a, sizeof a);
}

const vg_op_table stub_ops = {
    .version = VG_OP_TABLE_VERSION,
    .struct_size = sizeof(vg_op_table),
    .fill = op_fill,
    .axpby = op_axpby,
    .gemm = op_gemm,
    .gather_rows = op_gather_rows,
    .rmsnorm = stub_op_rmsnorm,
    .rotary_2d = stub_op_rotary_2d,
    .attention = stub_op_attention,
    .silu_mul = stub_op_silu_mul,
    .convert = stub_op_convert,
    .attention_rotary = stub_op_attention_rotary,
    .rotary = stub_op_rotary,
    .rmsnorm_heads = stub_op_rmsnorm_heads,
    .kv_store = stub_op_kv_store,
    .paged_attention = stub_op_paged_attention,
    .argmax = stub_op_argmax,
    .layernorm = stub_op_layernorm,
    .gather_weighted = stub_op_gather_weighted,
    .rotary_kv_store = stub_op_rotary_kv_store,
    .lm_advance = stub_op_lm_advance,
    .rotary_paged_attention = stub_op_rotary_paged_attention,
};
