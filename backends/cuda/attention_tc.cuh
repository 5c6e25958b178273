/* SPDX-License-Identifier: Apache-2.0 */
/* What the tensor-core attention kernels share: attention_tc.cu (mma.sync, any GPU since Ampere),
 * attention_wg.cu (wgmma, Hopper) and decode_tc.cu (paged decode, mma.sync). All keep scores and
 * outputs in the accumulator layout of an m16n8 MMA: a warp owns 16 rows of a tile, lane/4 and
 * lane/4 + 8 of them, and in each n-tile of 8 columns the two neighbouring columns (lane%4)·2 and
 * (lane%4)·2 + 1. So the MMA itself, the masking, the online softmax and the output are written
 * once, here, for one 16-row m-tile. */
#ifndef VG_CUDA_ATTENTION_TC_CUH
#define VG_CUDA_ATTENTION_TC_CUH

#include <stdint.h>

#include "cp_async.cuh"
#include "kernels.cuh"

template <typename T> struct mma_type;
template <> struct mma_type<vgc_bf16> { static constexpr bool bf16 = true; };
template <> struct mma_type<vgc_f16> { static constexpr bool bf16 = false; };

template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi)
{
    T l = vgk_from_f<T>(lo), h = vgk_from_f<T>(hi);
    return (uint32_t)(*(uint16_t *)&l) | ((uint32_t)(*(uint16_t *)&h) << 16);
}

/* d += a·b for one m16n8k16 tile (row-major A, column-major B), fp32 accumulation. */
template <typename T>
__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], const uint32_t b[2])
{
    if (mma_type<T>::bf16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

/* Segment of `row` (the last s with cu[s] <= row, as vgk_segment_of), searched by a whole warp:
 * 32 probes per step, so a capacity of n segments costs log32(n) dependent loads, not log2(n).
 * Every lane passes the same row. */
__device__ __forceinline__ int segment_of_warp(const int32_t *cu, int nseg, int row)
{
    const int lane = threadIdx.x % 32;
    int lo = 0, hi = nseg - 1; /* cu[lo] <= row holds throughout */
    while (lo < hi) {
        int step = (hi - lo + 32) / 32, probe = lo + lane * step;
        unsigned ok = __ballot_sync(0xffffffffu, probe <= hi && cu[probe] <= row);
        int k = 31 - __clz(ok); /* the probes are ascending: the last one that fits */
        lo += k * step;
        hi = min(hi, lo + step - 1);
    }
    return lo;
}

/* The key range [lo, hi) of this lane's two rows of the m-tile whose first row is r0, found by
 * a short walk from the block's first segment seg0 (its last is seg1). A row past `rows` gets
 * no keys and is never written. */
__device__ __forceinline__ void row_keys(const int32_t *cu, int seg0, int seg1, int rows, int r0,
                                         int (&lo)[2], int (&hi)[2])
{
#pragma unroll
    for (int i = 0; i < 2; i++) {
        int r = r0 + threadIdx.x % 32 / 4 + 8 * i;
        if (r < rows) {
            int sg = seg0;
            while (sg < seg1 && cu[sg + 1] <= r) sg++;
            lo[i] = cu[sg], hi[i] = cu[sg + 1];
        } else {
            lo[i] = hi[i] = 0;
        }
    }
}

/* Whether every key of the tile [k0, k0 + nk) lies in both rows' ranges (no mask needed). */
__device__ __forceinline__ bool keys_inside(int k0, int nk, const int (&lo)[2], const int (&hi)[2])
{
    return lo[0] <= k0 && k0 + nk <= hi[0] && lo[1] <= k0 && k0 + nk <= hi[1];
}

/* Scores of keys outside a row's range become -inf. */
template <int NB>
__device__ __forceinline__ void mask_keys(float (&s)[NB][4], int k0, const int (&lo)[2], const int (&hi)[2])
{
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int n = 0; n < NB; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int i = e / 2, key = k0 + n * 8 + (lane % 4) * 2 + (e % 2);
            if (key < lo[i] || key >= hi[i]) s[n][e] = -INFINITY;
        }
}

__device__ __forceinline__ float ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* One step of the online softmax, in base 2, for the m-tile's scores s against NB·8 keys:
 * update the running maximum m (raw score units) and sum l, leave p = 2^(s·scale - m·scale) in
 * pf, as the A operand of the P·V MMA (the accumulator layout of two n-tiles is the A layout of
 * one k-step of 16 keys), and in corr the factor by which the output must be rescaled
 * (rescale_rows) before P·V is added to it. */
template <typename T, int NB>
__device__ __forceinline__ void softmax_scores(float (&s)[NB][4], float (&m)[2], float (&l)[2],
                                               uint32_t (&pf)[NB / 2][4], float (&corr)[2], float scale_log2)
{
    static_assert((NB & (NB - 1)) == 0, "the maximum is a tree over a power of two of n-tiles");
    float ms[2];
#pragma unroll
    for (int i = 0; i < 2; i++) {
        float t[NB]; /* a tree, not a chain of dependent maxima */
#pragma unroll
        for (int n = 0; n < NB; n++) t[n] = fmaxf(s[n][2 * i], s[n][2 * i + 1]);
#pragma unroll
        for (int w = NB / 2; w >= 1; w /= 2)
#pragma unroll
            for (int n = 0; n < w; n++) t[n] = fmaxf(t[n], t[n + w]);
        float mx = t[0];
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        float mn = fmaxf(m[i], mx);
        /* a row with no key yet keeps m = -inf: nothing to rescale, every p is 0 */
        corr[i] = m[i] == -INFINITY ? 1.0f : ex2((m[i] - mn) * scale_log2);
        ms[i] = mn == -INFINITY ? 0.0f : mn * scale_log2;
        m[i] = mn;
        l[i] *= corr[i];
    }
#pragma unroll
    for (int n = 0; n < NB; n++) {
        float p[4];
#pragma unroll
        for (int e = 0; e < 4; e++) {
            p[e] = ex2(fmaf(s[n][e], scale_log2, -ms[e / 2]));
            l[e / 2] += p[e];
        }
        pf[n / 2][(n % 2) * 2 + 0] = pack2<T>(p[0], p[1]);
        pf[n / 2][(n % 2) * 2 + 1] = pack2<T>(p[2], p[3]);
    }
}

template <int NT>
__device__ __forceinline__ void rescale_rows(float (&o)[NT][4], const float (&corr)[2])
{
#pragma unroll
    for (int n = 0; n < NT; n++) o[n][0] *= corr[0], o[n][1] *= corr[0], o[n][2] *= corr[1], o[n][3] *= corr[1];
}

/* Write the m-tile's output rows (first row r0) of head h, divided by their sums: the first HD
 * of the NT·8 columns. */
template <typename T, int HD, int NT>
__device__ __forceinline__ void store_rows(T *out, int64_t ld_out, int h, int rows, int r0,
                                           const float (&o)[NT][4], const float (&l)[2])
{
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int i = 0; i < 2; i++) {
        float sum = l[i]; /* each quad of lanes holds partial sums of a row */
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        int r = r0 + lane / 4 + 8 * i;
        if (r >= rows) continue;
        float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
        T *dst = out + (int64_t)r * ld_out + h * HD;
#pragma unroll
        for (int n = 0; n < NT; n++) {
            int d = n * 8 + (lane % 4) * 2;
            if (d < HD) *(uint32_t *)(dst + d) = pack2<T>(o[n][2 * i] * inv, o[n][2 * i + 1] * inv);
        }
    }
}

#endif
