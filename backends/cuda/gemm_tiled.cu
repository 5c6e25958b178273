/* SPDX-License-Identifier: Apache-2.0 */
/* A portable GEMM kernel: C[m,n] = act(alpha·A[m,k]·B[n,k]ᵀ + bias) + residual, fp32
 * accumulation, 64x64 output tiles of 256 threads (4x4 outputs each), 16-deep k slices staged
 * in shared memory. No tensor cores and no vendor library: it is the GEMM of the hip backend
 * when no hipBLAS(Lt) is available (Debian's ROCm has none), and the CUDA backend runs it under
 * VG_CUDA_GEMM=tiled, which is how the GPU suite verifies it on real hardware. */
#include "kernels.cuh"

#define TG_BM 64
#define TG_BN 64
#define TG_BK 16

template <typename TA, typename TC>
__global__ void __launch_bounds__(256)
k_gemm_tiled(const TA *A, int64_t lda, const TA *B, int64_t ldb, TC *C, int64_t ldc, const TA *bias,
             const TC *res, int64_t ldr, int m, int n, int k, float alpha, vg_activation act)
{
    vgk_grid_sync();
    __shared__ float as[TG_BK][TG_BM + 1]; /* transposed: as[kk][row] */
    __shared__ float bs[TG_BK][TG_BN + 1];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int row0 = blockIdx.y * TG_BM, col0 = blockIdx.x * TG_BN;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < k; k0 += TG_BK) {
        /* 64 rows x 16 k of A and of B: 1024 elements each, 4 per thread */
        for (int i = threadIdx.x; i < TG_BM * TG_BK; i += 256) {
            int r = i / TG_BK, kk = i % TG_BK;
            int gr = row0 + r, gc = col0 + r, gk = k0 + kk;
            as[kk][r] = gr < m && gk < k ? vgk_to_f(A[(int64_t)gr * lda + gk]) : 0.0f;
            bs[kk][r] = gc < n && gk < k ? vgk_to_f(B[(int64_t)gc * ldb + gk]) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TG_BK; kk++) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; i++) a[i] = as[kk][ty + 16 * i], b[i] = bs[kk][tx + 16 * i];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; i++) {
        int r = row0 + ty + 16 * i;
        if (r >= m) continue;
        for (int j = 0; j < 4; j++) {
            int c = col0 + tx + 16 * j;
            if (c >= n) continue;
            float v = alpha * acc[i][j];
            if (bias) v += vgk_to_f(bias[c]);
            v = vgk_activate(act, v);
            if (res) v += vgk_to_f(res[(int64_t)r * ldr + c]); /* read before the write below */
            C[(int64_t)r * ldc + c] = vgk_from_f<TC>(v);
        }
    }
}

vg_status vgc_gemm_tiled(vg_bk_stream *s, const vg_gemm_args *args)
{
    vg_gemm_args normed;
    const vg_gemm_args *a = args;
    vg_status st = vgc_gemm_norm_before(s, args, &normed, &a);
    if (st != VG_OK) return st;
    /* a deferred norm's bias comes after its factor, in vgc_gemm_gate_after */
    const void *bias = vgc_gemm_norm_deferred(a) ? NULL : a->bias;
    dim3 grid((unsigned)((a->n + TG_BN - 1) / TG_BN), (unsigned)((a->m + TG_BM - 1) / TG_BM));
    VGK_FLOAT_DISPATCH(a->dtype_ab, TA, VGK_FLOAT_DISPATCH(a->dtype_c, TC,
        vgc_launch(s, k_gemm_tiled<TA, TC>, grid, 256, 0, (const TA *)a->a, a->lda, (const TA *)a->b,
            a->ldb, (TC *)a->c, a->ldc, (const TA *)bias, (const TC *)a->residual, a->ldr,
            (int)a->m, (int)a->n, (int)a->k, a->alpha, a->act)));
    VGC_CHECK_LAUNCH("gemm_tiled");
    return vgc_gemm_gate_after(s, a);
}

vg_status vgc_gemm_norm_before(vg_bk_stream *s, const vg_gemm_args *a, vg_gemm_args *normed,
                               const vg_gemm_args **out)
{
    *out = a;
    if (!vgc_gemm_normed(a) || vgc_gemm_norm_deferred(a)) return VG_OK;
    /* norm_w NULL (norm_unit): the kernel's unit weight */
    vg_status st = vgc_op_rmsnorm(s->dev, s, a->dtype_ab, a->a, a->norm_w, a->norm_out, a->m, a->k,
                                  a->norm_eps);
    if (st != VG_OK) return st;
    *normed = *a;
    normed->a = a->norm_out, normed->norm_w = NULL, normed->norm_unit = 0;
    *out = normed;
    return VG_OK;
}

vg_status vgc_gemm_gate_after(vg_bk_stream *s, const vg_gemm_args *a)
{
    if (a->gate != VG_GEMM_GATE_SILU) return VG_OK;
    /* in place: each thread of silu_mul reads its gate and up elements before it writes */
    const int deferred = vgc_gemm_norm_deferred(a);
    return vgc_silu_mul_scaled(s, a->dtype_c, a->c, a->ldc, a->c, a->ldc, a->m, a->n / 2,
                               deferred ? a->a : NULL, a->k, a->norm_eps, deferred ? a->bias : NULL);
}
