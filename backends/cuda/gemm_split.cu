/* SPDX-License-Identifier: Apache-2.0 */
/* gemm_split.cuh's launch. A warp a row, as rmsnorm's kernel (ops_vit.cu): a lane adds its
 * vectors' partials, bias and residual, stores C, and sums the squares of the rounded values;
 * the first SN_NB vectors of each lane stay in registers for the norm, later ones are read back
 * (this lane wrote them). At decode shapes (16-64 rows of 896-1024) a row is at most 4 vectors a
 * lane: the whole pass is one round trip for the partials. */
#include "gemm_split.cuh"
#include "kernels.cuh"

#define SN_NB 4

/* Vector c0 of row r: the partials, bias and residual added, rounded to T, stored in C. */
template <typename T, int VEC>
__device__ __forceinline__ vgk_vec<T, VEC> sn_sum(const float *parts, int nsplit, size_t plane, int r, int cols,
                                                  int c0, const T *bias, const T *res, int64_t ldr, T *c)
{
    typedef vgk_vec<float, VEC> F;
    typedef vgk_vec<T, VEC> V;
    float x[VEC];
    const F p0 = ((const F *)(parts + (size_t)r * cols))[c0];
#pragma unroll
    for (int e = 0; e < VEC; e++) x[e] = p0.v[e];
    for (int s = 1; s < nsplit; s++) {
        const F p = ((const F *)(parts + s * plane + (size_t)r * cols))[c0];
#pragma unroll
        for (int e = 0; e < VEC; e++) x[e] += p.v[e];
    }
    if (bias) {
        const V b = ((const V *)bias)[c0];
#pragma unroll
        for (int e = 0; e < VEC; e++) x[e] += vgk_to_f(b.v[e]);
    }
    if (res) { /* read before C's store below: res may be C */
        const V q = ((const V *)(res + (int64_t)r * ldr))[c0];
#pragma unroll
        for (int e = 0; e < VEC; e++) x[e] += vgk_to_f(q.v[e]);
    }
    V o;
#pragma unroll
    for (int e = 0; e < VEC; e++) o.v[e] = vgk_from_f<T>(x[e]);
    ((V *)(c + (int64_t)r * cols))[c0] = o;
    return o;
}

template <typename T, int VEC>
__device__ __forceinline__ void sn_square(const vgk_vec<T, VEC> &o, float &ss)
{
#pragma unroll
    for (int e = 0; e < VEC; e++) {
        const float v = vgk_to_f(o.v[e]);
        ss += v * v;
    }
}

template <typename T, int VEC>
__device__ __forceinline__ void sn_norm(const vgk_vec<T, VEC> &x, const T *w, T *out, int r, int cols, int c0,
                                        float inv)
{
    typedef vgk_vec<T, VEC> V;
    const V g = ((const V *)w)[c0];
    V o;
#pragma unroll
    for (int e = 0; e < VEC; e++) o.v[e] = vgk_from_f<T>(vgk_to_f(g.v[e]) * (vgk_to_f(x.v[e]) * inv));
    ((V *)(out + (int64_t)r * cols))[c0] = o;
}

template <typename T, int VEC>
__global__ void k_split_norm(const float *parts, int nsplit, int rows, int cols, const T *bias, const T *res,
                             int64_t ldr, T *c, const T *w, T *out, float eps)
{
    vgk_grid_sync();
    typedef vgk_vec<T, VEC> V;
    const int lane = threadIdx.x % 32, nv = cols / VEC;
    const size_t plane = (size_t)rows * cols;
    for (int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; r < rows; r += gridDim.x * (blockDim.x / 32)) {
        V keep[SN_NB];
        float ss = 0.0f;
#pragma unroll
        for (int u = 0; u < SN_NB; u++) {
            const int c0 = lane + 32 * u;
            if (c0 < nv) {
                keep[u] = sn_sum<T, VEC>(parts, nsplit, plane, r, cols, c0, bias, res, ldr, c);
                sn_square<T, VEC>(keep[u], ss);
            }
        }
        for (int c0 = lane + 32 * SN_NB; c0 < nv; c0 += 32)
            sn_square<T, VEC>(sn_sum<T, VEC>(parts, nsplit, plane, r, cols, c0, bias, res, ldr, c), ss);
        if (!w) continue;
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        const float inv = rsqrtf(ss / (float)cols + eps);
#pragma unroll
        for (int u = 0; u < SN_NB; u++)
            if (lane + 32 * u < nv) sn_norm<T, VEC>(keep[u], w, out, r, cols, lane + 32 * u, inv);
        for (int c0 = lane + 32 * SN_NB; c0 < nv; c0 += 32)
            sn_norm<T, VEC>(((const V *)(c + (int64_t)r * cols))[c0], w, out, r, cols, c0, inv);
    }
}

template <typename T, int VEC>
static void sn_launch(vg_bk_stream *s, const vg_gemm_args *a, const float *parts, int nsplit)
{
    const unsigned blocks = (unsigned)((a->m + 7) / 8 < 65535 * 4 ? (a->m + 7) / 8 : 65535 * 4);
    vgc_launch(s, k_split_norm<T, VEC>, blocks, 256, 0, parts, nsplit, (int)a->m, (int)a->n, (const T *)a->bias,
               (const T *)a->residual, a->residual ? a->ldr : (int64_t)0, (T *)a->c, (const T *)a->c_norm_w,
               (T *)a->c_norm_out, a->norm_eps);
}

vg_status vgc_split_norm(vg_bk_stream *s, const vg_gemm_args *a, const float *parts, int nsplit)
{
    const size_t esz = a->dtype_c == VG_DTYPE_F32 ? 4 : 2, vecn = 16 / esz;
    const uintptr_t addr = (uintptr_t)a->c | (uintptr_t)a->bias | (uintptr_t)a->residual | (uintptr_t)a->c_norm_w |
                           (uintptr_t)a->c_norm_out | (uintptr_t)(a->residual ? a->ldr * (int64_t)esz : 0);
    const bool vec = a->n % (int64_t)vecn == 0 && addr % 16 == 0;
    if (vec && a->dtype_c == VG_DTYPE_F32) sn_launch<float, 4>(s, a, parts, nsplit);
    else if (vec && a->dtype_c == VG_DTYPE_BF16) sn_launch<vgc_bf16, 8>(s, a, parts, nsplit);
    else if (vec) sn_launch<vgc_f16, 8>(s, a, parts, nsplit);
    else VGK_FLOAT_DISPATCH(a->dtype_c, T, sn_launch<T, 1>(s, a, parts, nsplit));
    VGC_CHECK_LAUNCH("gemm split-K sum and rmsnorm");
    return VG_OK;
}
