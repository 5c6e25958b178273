/* SPDX-License-Identifier: Apache-2.0 */
/* The projections of every model (linear.h). */
#include "linear.h"

#include "util.h"

vg_status vgm_proj(const vgm_linear *L, vg_stream *s, int64_t rows, int64_t n, int64_t k,
                   const void *a, int64_t lda, const void *norm, void *norm_out, const void *w,
                   const void *bias, void *c, vg_dtype dtype_c, const void *residual,
                   vg_gemm_gate gate)
{
    if (norm && !L->norm_gemm) {
        VGM_TRY(vg_op_rmsnorm(s, L->dt, a, norm, norm_out, rows, k, L->eps));
        a = norm_out, norm = NULL;
    }
    vg_gemm_args g = {.struct_size = sizeof g, .dtype_ab = L->dt, .dtype_c = dtype_c, .m = rows,
                      .n = n, .k = k, .a = a, .lda = lda, .b = w, .ldb = k, .c = c, .ldc = n,
                      .bias = bias, .residual = residual, .ldr = n, .act = VG_ACT_NONE,
                      .alpha = 1.0f, .gate = gate, .norm_w = norm, .norm_eps = L->eps,
                      .norm_out = norm ? norm_out : NULL};
    return vg_op_gemm(s, &g);
}

vg_status vgm_gemm(const vgm_linear *L, vg_stream *s, int64_t rows, int64_t n, int64_t k,
                   const void *a, const void *w, const void *bias, void *c, vg_dtype dtype_c,
                   const void *residual, vg_activation act)
{
    vg_gemm_args g = {.struct_size = sizeof g, .dtype_ab = L->dt, .dtype_c = dtype_c, .m = rows,
                      .n = n, .k = k, .a = a, .lda = k, .b = w, .ldb = k, .c = c, .ldc = n,
                      .bias = bias, .residual = residual, .ldr = n, .act = act, .alpha = 1.0f};
    return vg_op_gemm(s, &g);
}
