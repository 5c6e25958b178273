/* SPDX-License-Identifier: Apache-2.0 */
/* opencl ops: fill, axpby, gemm, gather_rows, and the op table. Each member only computes the
 * launch geometry and passes its arguments: the core has validated every call against the
 * catalogue (vg_ops.h), and the kernels (kernels/) hold the arithmetic. */
#include <string.h>

#include "ocl_internal.h"
#include "vg/vg_half.h"

size_t ocl_dtype_size(vg_dtype t)
{
    switch (t) {
    case VG_DTYPE_F32: case VG_DTYPE_I32: return 4;
    case VG_DTYPE_F16: case VG_DTYPE_BF16: return 2;
    case VG_DTYPE_I64: return 8;
    default: return 1;
    }
}

/* ---- fill: the element's bytes are made here, the kernel repeats them -------------------------- */

static vg_status op_fill(vg_bk_device *dev, vg_bk_stream *s, void *dst, vg_dtype dtype,
                         size_t count, double value)
{
    (void)dev;
    uint64_t bits = 0;
    switch (dtype) {
    case VG_DTYPE_F32: {
        float f = (float)value;
        uint32_t u;
        memcpy(&u, &f, 4);
        bits = u;
        break;
    }
    case VG_DTYPE_BF16: bits = vg_f32_to_bf16((float)value); break;
    case VG_DTYPE_F16: bits = vg_f32_to_f16((float)value); break;
    case VG_DTYPE_I32: bits = (uint32_t)(int32_t)value; break;
    case VG_DTYPE_I64: bits = (uint64_t)(int64_t)value; break;
    default: bits = (uint8_t)value; break;
    }
    size_t global = count, local = OCL_WG;
    ocl_arg a[] = {OA_PTR(dst), OA_I64(count), OA_I32(ocl_dtype_size(dtype)), OA_I64(bits)};
    return ocl_launch(s, OCL_K_fill_pattern, "fill", 1, &global, &local, 4, a);
}

static vg_status op_axpby(vg_bk_device *dev, vg_bk_stream *s, size_t n, float alpha,
                          const float *x, float beta, float *y)
{
    (void)dev;
    size_t global = n, local = OCL_WG;
    ocl_arg a[] = {OA_I64(n), OA_F32(alpha), OA_PTR(x), OA_F32(beta), OA_PTR(y)};
    return ocl_launch(s, OCL_K_axpby, "axpby", 1, &global, &local, 5, a);
}

/* One work-group per OCL_GEMM_TILE square of C (kernels/gemm.cl); a norm of A (op table version
 * 6) runs rmsnorm into norm_out before it, a gate silu_mul over C in place after it. */
static vg_status op_gemm(vg_bk_device *dev, vg_bk_stream *s, const vg_gemm_args *args)
{
    vg_gemm_args normed;
    const vg_gemm_args *g = args;
    if (args->norm_w) { /* the rmsnorm into norm_out first (version 6), then the GEMM on it */
        vg_status st = ocl_op_rmsnorm(dev, s, args->dtype_ab, args->a, args->norm_w, args->norm_out,
                                      args->m, args->k, args->norm_eps);
        if (st != VG_OK) return st;
        normed = *args;
        normed.a = args->norm_out, normed.norm_w = NULL;
        g = &normed;
    }
    size_t groups_n = ((size_t)g->n + OCL_GEMM_TILE - 1) / OCL_GEMM_TILE;
    size_t groups_m = ((size_t)g->m + OCL_GEMM_TILE - 1) / OCL_GEMM_TILE;
    size_t global[2] = {groups_n * OCL_GEMM_WG, groups_m * OCL_GEMM_WG};
    size_t local[2] = {OCL_GEMM_WG, OCL_GEMM_WG};
    ocl_arg a[] = {OA_I32(g->dtype_ab), OA_I32(g->dtype_c), OA_I32(g->m), OA_I32(g->n), OA_I32(g->k),
                   OA_PTR(g->a), OA_I64(g->lda), OA_PTR(g->b), OA_I64(g->ldb), OA_PTR(g->c),
                   OA_I64(g->ldc), OA_I32(g->bias != NULL), OA_PTR(g->bias),
                   OA_I32(g->residual != NULL), OA_PTR(g->residual), OA_I64(g->ldr),
                   OA_I32(g->act), OA_F32(g->alpha)};
    vg_status st = ocl_launch(s, OCL_K_gemm, "gemm", 2, global, local, (int)(sizeof a / sizeof a[0]), a);
    if (st != VG_OK || g->gate != VG_GEMM_GATE_SILU) return st;
    /* the gate as a second launch over the stored halves: silu_mul in place is safe (each
     * work-item reads its two elements before it writes the first) */
    return ocl_op_silu_mul(dev, s, g->dtype_c, g->c, g->ldc, g->c, g->ldc, g->m, g->n / 2);
}

static vg_status op_gather_rows(vg_bk_device *dev, vg_bk_stream *s, vg_dtype dtype, void *dst,
                                const void *src, const int32_t *idx, int64_t rows, int64_t cols)
{
    (void)dev;
    size_t global[2] = {(size_t)cols, (size_t)rows}, local[2] = {OCL_WG, 1};
    ocl_arg a[] = {OA_I32(ocl_dtype_size(dtype)), OA_PTR(dst), OA_PTR(src), OA_PTR(idx),
                   OA_I32(rows), OA_I64(cols)};
    return ocl_launch(s, OCL_K_gather_rows, "gather_rows", 2, global, local, 6, a);
}

const vg_op_table ocl_ops = {
    .version = VG_OP_TABLE_VERSION,
    .struct_size = sizeof(vg_op_table),
    .fill = op_fill,
    .axpby = op_axpby,
    .gemm = op_gemm,
    .gather_rows = op_gather_rows,
    .rmsnorm = ocl_op_rmsnorm,
    .rotary_2d = ocl_op_rotary_2d,
    .attention = ocl_op_attention,
    .silu_mul = ocl_op_silu_mul,
    .convert = ocl_op_convert,
    .attention_rotary = ocl_op_attention_rotary,
    .rotary = ocl_op_rotary,
    .rmsnorm_heads = ocl_op_rmsnorm_heads,
    .kv_store = ocl_op_kv_store,
    .paged_attention = ocl_op_paged_attention,
    .argmax = ocl_op_argmax,
    .layernorm = ocl_op_layernorm,
    .gather_weighted = ocl_op_gather_weighted,
    .rotary_kv_store = ocl_op_rotary_kv_store,
};
