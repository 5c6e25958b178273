/* SPDX-License-Identifier: Apache-2.0 */
/* The projections of every model: a GEMM of row-major, contiguous operands, optionally with the
 * RMSNorm of its A operand and the SiLU gate of a gate|up projection folded in where the device
 * offers gemm_rmsnorm_a and gemm_silu_gate (one kernel instead of two or three). Not installed. */
#ifndef VG_MODELS_LINEAR_H
#define VG_MODELS_LINEAR_H

#include "vg/vg_device.h"

/* What a model's projections share: the compute dtype of A and W, the RMSNorm epsilon, and
 * whether the device normalises A inside the GEMM (vg_op_gemm with norm_w). */
typedef struct vgm_linear {
    vg_dtype dt;
    float eps;
    int norm_gemm;
} vgm_linear;

/* C = act(A·Wᵀ + bias) + residual: rows x n of dtype_c, A rows x k (lda = k), W n x k. */
vg_status vgm_gemm(const vgm_linear *L, vg_stream *s, int64_t rows, int64_t n, int64_t k,
                   const void *a, const void *w, const void *bias, void *c, vg_dtype dtype_c,
                   const void *residual, vg_activation act);

/* C = A·Wᵀ (+ bias) (+ residual); with `norm`, A is first rmsnorm'd with it (inside the GEMM
 * where L->norm_gemm, else an rmsnorm op into norm_out, which the GEMM then reads; A must then be
 * contiguous, lda = k); with gate = VG_GEMM_GATE_SILU, C gets silu(gate half)·up half in the first
 * n/2 columns of each row (the device must have gemm_silu_gate). */
vg_status vgm_proj(const vgm_linear *L, vg_stream *s, int64_t rows, int64_t n, int64_t k,
                   const void *a, int64_t lda, const void *norm, void *norm_out, const void *w,
                   const void *bias, void *c, vg_dtype dtype_c, const void *residual,
                   vg_gemm_gate gate);

/* The SiLU-gated MLP of a block: x = down(silu(gate)·up of rmsnorm(x, norm)) + residual, with
 * gate|up stacked in gu_w (2·ip rows, each half padded to ip) and the result written over x.
 * norm_unit (norm NULL): the norm's weight is folded into gu_w's columns, and the GEMM normalises
 * x without one (the device must have gemm_rmsnorm_a_unit).
 * `gated`: the device gates inside the GEMM (gemm_silu_gate) and the product stays in gu; else
 * silu_mul writes it to mid (rows x ip). Buffers: norm_out rows x hidden (where the norm is not
 * folded into the GEMM), gu rows x 2·ip. residual may be x itself, or NULL. */
typedef struct vgm_mlp {
    int gated;
    void *x;
    const void *norm;
    int norm_unit;
    void *norm_out;
    const void *gu_w, *gu_b;
    void *gu, *mid;
    const void *down_w, *down_b;
    const void *residual;
} vgm_mlp;
vg_status vgm_mlp_silu(const vgm_linear *L, vg_stream *s, const vgm_mlp *p, int64_t rows, int64_t hidden,
                       int64_t ip);

#endif
