/* SPDX-License-Identifier: Apache-2.0 */
/* The projections of every model (linear.h). */
#include "linear.h"

#include "util.h"

/* Every projection's one GEMM call. B is a weight, loaded on a stream of its own and synchronised
 * (weight_arena.c): no op of the forward's stream writes it (b_static). */
static vg_status linear_gemm(const vgm_linear *L, vg_stream *s, int64_t rows, int64_t n, int64_t k,
                             const void *a, int64_t lda, const void *norm, void *norm_out, const void *w,
                             const void *bias, void *c, vg_dtype dtype_c, const void *residual,
                             vg_activation act, vg_gemm_gate gate, int norm_unit)
{
    const int normed = norm || norm_unit;
    vg_gemm_args g = {.struct_size = sizeof g, .dtype_ab = L->dt, .dtype_c = dtype_c, .m = rows,
                      .n = n, .k = k, .a = a, .lda = lda, .b = w, .ldb = k, .c = c, .ldc = n,
                      .bias = bias, .residual = residual, .ldr = n, .act = act, .alpha = 1.0f,
                      .gate = gate, .norm_w = norm, .norm_eps = normed ? L->eps : 0.0f,
                      .norm_out = normed ? norm_out : NULL, .norm_unit = norm_unit, .b_static = 1};
    return vg_op_gemm(s, &g);
}

vg_status vgm_proj(const vgm_linear *L, vg_stream *s, int64_t rows, int64_t n, int64_t k,
                   const void *a, int64_t lda, const void *norm, void *norm_out, const void *w,
                   const void *bias, void *c, vg_dtype dtype_c, const void *residual,
                   vg_gemm_gate gate)
{
    if (norm && !L->norm_gemm) {
        VGM_TRY(vg_op_rmsnorm(s, L->dt, a, norm, norm_out, rows, k, L->eps));
        a = norm_out, norm = NULL;
    }
    return linear_gemm(L, s, rows, n, k, a, lda, norm, norm_out, w, bias, c, dtype_c, residual,
                       VG_ACT_NONE, gate, 0);
}

vg_status vgm_gemm(const vgm_linear *L, vg_stream *s, int64_t rows, int64_t n, int64_t k,
                   const void *a, const void *w, const void *bias, void *c, vg_dtype dtype_c,
                   const void *residual, vg_activation act)
{
    return linear_gemm(L, s, rows, n, k, a, k, NULL, NULL, w, bias, c, dtype_c, residual, act,
                       VG_GEMM_GATE_NONE, 0);
}

/* The MLP's gate|up GEMM: its norm as vgm_proj's, or without a weight inside the GEMM. */
static vg_status mlp_gate_up(const vgm_linear *L, vg_stream *s, const vgm_mlp *p, int64_t rows, int64_t hidden,
                             int64_t ip, vg_gemm_gate gate)
{
    if (p->norm_unit)
        return linear_gemm(L, s, rows, 2 * ip, hidden, p->x, hidden, NULL, p->norm_out, p->gu_w, p->gu_b,
                           p->gu, L->dt, NULL, VG_ACT_NONE, gate, 1);
    return vgm_proj(L, s, rows, 2 * ip, hidden, p->x, hidden, p->norm, p->norm_out, p->gu_w, p->gu_b, p->gu,
                    L->dt, NULL, gate);
}

vg_status vgm_mlp_silu(const vgm_linear *L, vg_stream *s, const vgm_mlp *p, int64_t rows, int64_t hidden,
                       int64_t ip)
{
    if (p->gated) { /* silu(gate)·up lands in the first half of each gu row */
        VGM_TRY(mlp_gate_up(L, s, p, rows, hidden, ip, VG_GEMM_GATE_SILU));
        return vgm_proj(L, s, rows, hidden, ip, p->gu, 2 * ip, NULL, NULL, p->down_w, p->down_b, p->x,
                        L->dt, p->residual, VG_GEMM_GATE_NONE);
    }
    VGM_TRY(mlp_gate_up(L, s, p, rows, hidden, ip, VG_GEMM_GATE_NONE));
    VGM_TRY(vg_op_silu_mul(s, L->dt, p->gu, 2 * ip, p->mid, ip, rows, ip));
    return vgm_gemm(L, s, rows, hidden, ip, p->mid, p->down_w, p->down_b, p->x, L->dt, p->residual,
                    VG_ACT_NONE);
}
