/* SPDX-License-Identifier: Apache-2.0 */
/* What vg's two decode GEMM kernels share (gemm_skinny.cu: a block's warps split k; gemm_panel.cu:
 * they split the weight rows and share the activations through shared memory): the tensor-core
 * step, the epilogues and the rmsnorm of A on load. Both feed mma.sync m16n8k16 the same way: each
 * lane's 8 contiguous k values of a weight row and of an activation row, which the dot product may
 * take as the fragment's k indices {2t, 2t+1, 2t+8, 2t+9} and the next four, A and B agreeing. */
#ifndef VG_CUDA_GEMM_OWN_CUH
#define VG_CUDA_GEMM_OWN_CUH

#include "kernels.cuh"

template <typename T> struct sk_is_bf16;
template <> struct sk_is_bf16<vgc_bf16> { static constexpr bool value = true; };
template <> struct sk_is_bf16<vgc_f16> { static constexpr bool value = false; };

/* d += a·b for one m16n8k16 tile; not volatile, so loads may be scheduled around it. */
template <typename T>
__device__ __forceinline__ void sk_mma(float d[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                       uint32_t b0, uint32_t b1)
{
    if (sk_is_bf16<T>::value)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <typename T, typename TC>
__device__ __forceinline__ void sk_store(TC *C, int64_t ldc, const T *bias, const TC *res, int64_t ldr,
                                         int tok, int col, float v, float alpha, vg_activation act)
{
    v *= alpha;
    if (bias) v += vgk_to_f(bias[col]);
    v = vgk_activate(act, v);
    if (res) v += vgk_to_f(res[(int64_t)tok * ldr + col]); /* read before the write: may alias C */
    C[(int64_t)tok * ldc + col] = vgk_from_f<TC>(v);
}

/* The gated epilogue (vg_ops.h, gemm's gate): silu(gate) · up of one output, each half with its
 * bias; silu as the silu_mul kernel computes it. */
template <typename T, typename TC>
__device__ __forceinline__ void sk_store_gated(TC *C, int64_t ldc, const T *bias, int half, int tok,
                                               int col, float vg, float vu, float alpha)
{
    vg *= alpha, vu *= alpha;
    if (bias) vg += vgk_to_f(bias[col]), vu += vgk_to_f(bias[half + col]);
    C[(int64_t)tok * ldc + col] = vgk_from_f<TC>(vg / (1.0f + __expf(-vg)) * vu);
}

/* Σ x² over the 8 elements of a 16-byte load. */
template <typename T> __device__ __forceinline__ float sk_sumsq(uint4 v)
{
    const T *e = reinterpret_cast<const T *>(&v);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; i++) s += vgk_to_f(e[i]) * vgk_to_f(e[i]);
    return s;
}

/* x ⊙ w over the 8 elements of two 16-byte loads, rounded to T (the norm's weight on load). */
template <typename T> __device__ __forceinline__ uint4 sk_scale(uint4 x, uint4 w)
{
    const T *xe = reinterpret_cast<const T *>(&x), *we = reinterpret_cast<const T *>(&w);
    uint4 r;
    T *re = reinterpret_cast<T *>(&r);
#pragma unroll
    for (int i = 0; i < 8; i++) re[i] = vgk_from_f<T>(vgk_to_f(xe[i]) * vgk_to_f(we[i]));
    return r;
}

/* A weight's line into L2 ahead of its load: safe before the grid dependency wait, as nothing is
 * read back (L2 is where the previous kernel's writes land). */
__device__ __forceinline__ void sk_prefetch_l2(const void *p)
{
    asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p));
}

/* Each of A's m rows' 1/rms over its k columns into inv_row[row], the block's `warps` warps taking
 * rows in turn (lane l sums the 16-byte pieces l, l + 32, ...). */
template <typename T>
__device__ __forceinline__ void sk_rows_inv_rms(const T *A, int64_t lda, int m, int k, float eps, float *inv_row,
                                                int warp, int warps, int lane)
{
    for (int t = warp; t < m; t += warps) {
        const T *row = A + (int64_t)t * lda;
        float ss = 0.0f;
        for (int c = lane * 8; c < k; c += 32 * 8) ss += sk_sumsq<T>(__ldg((const uint4 *)(row + c)));
        ss = vgk_warp_sum(ss);
        if (lane == 0) inv_row[t] = rsqrtf(ss / (float)k + eps);
    }
}

#endif
