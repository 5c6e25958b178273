/* SPDX-License-Identifier: Apache-2.0 */
/* Op table version 5: layernorm and gather_weighted. Both read each input element once: a
 * LayerNorm row is held in registers between its statistics and its output (16-byte vectors
 * where the row allows), and a resampled row is one weighted sum of `taps` table rows per output
 * vector. Statistics and sums in fp32. */
#include "kernels.cuh"

/* V consecutive elements of T, aligned to the whole vector: one wide load or store. */
template <typename T, int V> struct alignas(sizeof(T) * V) vvec { T v[V]; };

/* Sum over the threads of one row: the 32-lane group by shuffles, then, when a row spans
 * several groups (TPR > 32), through shared memory (red holds one slot per group of the block).
 * Every thread of the row gets the total. */
template <int TPR>
__device__ __forceinline__ float row_sum(float v, float *red)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (TPR == 32) return v;
    const int group = threadIdx.x / 32, first = (threadIdx.x / TPR) * (TPR / 32);
    __syncthreads(); /* the slots' previous use is over */
    if (threadIdx.x % 32 == 0) red[group] = v;
    __syncthreads();
    float t = 0.0f;
#pragma unroll
    for (int g = 0; g < TPR / 32; g++) t += red[first + g];
    return t;
}

/* LayerNorm with TPR threads per row; each thread keeps up to K vectors of VEC elements of its
 * row in registers (K = 0: the row does not fit, and is read three times instead). Blocks of
 * 128 threads: 128 / TPR rows per block, rows across the grid. */
template <typename T, int VEC, int K, int TPR>
__global__ void k_layernorm(const T *x, const T *w, const T *b, T *out, int rows, int cols, float eps)
{
    vgk_grid_sync();
    typedef vvec<T, VEC> V;
    __shared__ float red[128 / 32];
    const int lane = threadIdx.x % TPR, nv = cols / VEC, per_block = 128 / TPR;
    const float inv_cols = 1.0f / (float)cols;
    /* every thread of a block runs the same number of iterations (row_sum has barriers) */
    for (int r0 = blockIdx.x * per_block; r0 < rows; r0 += gridDim.x * per_block) {
        const int r = r0 + (int)threadIdx.x / TPR;
        const bool live = r < rows;
        const V *xr = (const V *)(x + (int64_t)(live ? r : 0) * cols);
        V *orow = (V *)(out + (int64_t)(live ? r : 0) * cols);
        float sum = 0.0f, ss = 0.0f, mean;
        if (K > 0) {
            float c[K > 0 ? K : 1][VEC];
#pragma unroll
            for (int k = 0; k < K; k++) {
                int v = lane + k * TPR;
                if (live && v < nv) {
                    V a = xr[v];
#pragma unroll
                    for (int e = 0; e < VEC; e++) c[k][e] = vgk_to_f(a.v[e]), sum += c[k][e];
                }
            }
            mean = row_sum<TPR>(sum, red) * inv_cols;
#pragma unroll
            for (int k = 0; k < K; k++)
                if (live && lane + k * TPR < nv)
#pragma unroll
                    for (int e = 0; e < VEC; e++) {
                        float d = c[k][e] - mean;
                        ss += d * d;
                    }
            const float inv = rsqrtf(row_sum<TPR>(ss, red) * inv_cols + eps);
#pragma unroll
            for (int k = 0; k < K; k++) {
                int v = lane + k * TPR;
                if (!live || v >= nv) continue;
                V g = ((const V *)w)[v], o, bb;
                if (b) bb = ((const V *)b)[v];
#pragma unroll
                for (int e = 0; e < VEC; e++) {
                    float y = (c[k][e] - mean) * inv * vgk_to_f(g.v[e]);
                    if (b) y += vgk_to_f(bb.v[e]);
                    o.v[e] = vgk_from_f<T>(y);
                }
                orow[v] = o;
            }
        } else { /* rows too long for registers: read three times (from L2, mostly) */
            for (int v = lane; live && v < nv; v += TPR) {
                V a = xr[v];
#pragma unroll
                for (int e = 0; e < VEC; e++) sum += vgk_to_f(a.v[e]);
            }
            mean = row_sum<TPR>(sum, red) * inv_cols;
            for (int v = lane; live && v < nv; v += TPR) {
                V a = xr[v];
#pragma unroll
                for (int e = 0; e < VEC; e++) {
                    float d = vgk_to_f(a.v[e]) - mean;
                    ss += d * d;
                }
            }
            const float inv = rsqrtf(row_sum<TPR>(ss, red) * inv_cols + eps);
            for (int v = lane; live && v < nv; v += TPR) {
                V a = xr[v], g = ((const V *)w)[v], o, bb;
                if (b) bb = ((const V *)b)[v];
#pragma unroll
                for (int e = 0; e < VEC; e++) {
                    float y = (vgk_to_f(a.v[e]) - mean) * inv * vgk_to_f(g.v[e]);
                    if (b) y += vgk_to_f(bb.v[e]);
                    o.v[e] = vgk_from_f<T>(y);
                }
                orow[v] = o; /* out may be x: this thread alone reads and writes vector v */
            }
        }
    }
}

template <typename T, int VEC>
static void layernorm_launch(vg_bk_stream *s, const T *x, const T *w, const T *b, T *out, int rows,
                             int cols, float eps)
{
    const int nv = cols / VEC;
    auto grid = [rows](int per_block) {
        int64_t g = ((int64_t)rows + per_block - 1) / per_block;
        return (unsigned)(g < 65535 * 8 ? g : 65535 * 8);
    };
    /* a warp per row while the row fits 32 threads x 8 vectors, else 128 threads per row */
    if (nv <= 32 * 2)
        vgc_launch(s, k_layernorm<T, VEC, 2, 32>, grid(4), 128, 0, x, w, b, out, rows, cols, eps);
    else if (nv <= 32 * 8)
        vgc_launch(s, k_layernorm<T, VEC, 8, 32>, grid(4), 128, 0, x, w, b, out, rows, cols, eps);
    else if (nv <= 128 * 8)
        vgc_launch(s, k_layernorm<T, VEC, 8, 128>, grid(1), 128, 0, x, w, b, out, rows, cols, eps);
    else
        vgc_launch(s, k_layernorm<T, VEC, 0, 128>, grid(1), 128, 0, x, w, b, out, rows, cols, eps);
}

vg_status vgc_op_layernorm(vg_bk_device *, vg_bk_stream *s, vg_dtype t, const void *x,
                           const void *w, const void *b, void *out, int64_t rows, int64_t cols,
                           float eps)
{
    if (!rows) return VG_OK;
    const int elem = t == VG_DTYPE_F32 ? 4 : 2, vecn = 16 / elem;
    const int vec_ok = cols % vecn == 0 &&
                       ((uintptr_t)x | (uintptr_t)w | (uintptr_t)b | (uintptr_t)out) % 16 == 0;
    const int r = (int)rows, c = (int)cols;
    if (vec_ok && t == VG_DTYPE_F32)
        layernorm_launch<float, 4>(s, (const float *)x, (const float *)w, (const float *)b, (float *)out, r, c, eps);
    else if (vec_ok && t == VG_DTYPE_BF16)
        layernorm_launch<vgc_bf16, 8>(s, (const vgc_bf16 *)x, (const vgc_bf16 *)w, (const vgc_bf16 *)b, (vgc_bf16 *)out, r, c, eps);
    else if (vec_ok)
        layernorm_launch<vgc_f16, 8>(s, (const vgc_f16 *)x, (const vgc_f16 *)w, (const vgc_f16 *)b, (vgc_f16 *)out, r, c, eps);
    else
        VGK_FLOAT_DISPATCH(t, T, layernorm_launch<T, 1>(s, (const T *)x, (const T *)w, (const T *)b, (T *)out, r, c, eps));
    VGC_CHECK_LAUNCH("layernorm");
    return VG_OK;
}

/* A warp per output row: the row's taps (index, weight) go to shared memory once, then each lane
 * sums VEC-wide vectors of the tapped rows. An index outside the table gets weight zero and
 * reads row 0 instead, so nothing outside the table is ever touched. The block steps through
 * its rows together (block barriers around the shared taps; HIP has no warp barrier). */
#define GW_WARPS 4
template <typename T, int VEC>
__global__ void k_gather_weighted(T *dst, const T *src, int src_rows, const int32_t *idx,
                                  const float *wt, int rows, int cols, int taps)
{
    vgk_grid_sync();
    typedef vvec<T, VEC> V;
    __shared__ int s_idx[GW_WARPS][VG_GATHER_MAX_TAPS];
    __shared__ float s_w[GW_WARPS][VG_GATHER_MAX_TAPS];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nv = cols / VEC;
    for (int r0 = blockIdx.x * GW_WARPS; r0 < rows; r0 += gridDim.x * GW_WARPS) {
        const int r = r0 + warp;
        const bool live = r < rows;
        __syncthreads(); /* the previous rows' taps are no longer read */
        for (int t = lane; live && t < taps; t += 32) {
            int i = idx[(int64_t)r * taps + t];
            bool in = i >= 0 && i < src_rows;
            s_idx[warp][t] = in ? i : 0;
            s_w[warp][t] = in ? wt[(int64_t)r * taps + t] : 0.0f;
        }
        __syncthreads();
        if (!live) continue;
        V *o = (V *)(dst + (int64_t)r * cols);
        for (int v = lane; v < nv; v += 32) {
            float acc[VEC];
#pragma unroll
            for (int e = 0; e < VEC; e++) acc[e] = 0.0f;
            for (int t = 0; t < taps; t++) {
                const float w = s_w[warp][t];
                V a = ((const V *)(src + (int64_t)s_idx[warp][t] * cols))[v];
#pragma unroll
                for (int e = 0; e < VEC; e++) acc[e] += w * vgk_to_f(a.v[e]);
            }
            V out;
#pragma unroll
            for (int e = 0; e < VEC; e++) out.v[e] = vgk_from_f<T>(acc[e]);
            o[v] = out;
        }
    }
}

vg_status vgc_op_gather_weighted(vg_bk_device *, vg_bk_stream *s, vg_dtype t, void *dst,
                                 const void *src, int64_t src_rows, const int32_t *idx,
                                 const float *w, int64_t rows, int64_t cols, int taps)
{
    if (!rows) return VG_OK;
    const int elem = t == VG_DTYPE_F32 ? 4 : 2, vecn = 16 / elem;
    const int vec_ok = cols % vecn == 0 && ((uintptr_t)dst | (uintptr_t)src) % 16 == 0;
    int64_t g = (rows + GW_WARPS - 1) / GW_WARPS;
    unsigned blocks = (unsigned)(g < 65535 * 8 ? g : 65535 * 8);
    const int sr = (int)src_rows, r = (int)rows, c = (int)cols;
    if (vec_ok && t == VG_DTYPE_F32)
        vgc_launch(s, k_gather_weighted<float, 4>, blocks, 32 * GW_WARPS, 0, (float *)dst, (const float *)src, sr, idx, w, r, c, taps);
    else if (vec_ok && t == VG_DTYPE_BF16)
        vgc_launch(s, k_gather_weighted<vgc_bf16, 8>, blocks, 32 * GW_WARPS, 0, (vgc_bf16 *)dst, (const vgc_bf16 *)src, sr, idx, w, r, c, taps);
    else if (vec_ok)
        vgc_launch(s, k_gather_weighted<vgc_f16, 8>, blocks, 32 * GW_WARPS, 0, (vgc_f16 *)dst, (const vgc_f16 *)src, sr, idx, w, r, c, taps);
    else
        VGK_FLOAT_DISPATCH(t, T, vgc_launch(s, k_gather_weighted<T, 1>, blocks, 32 * GW_WARPS, 0,
                                            (T *)dst, (const T *)src, sr, idx, w, r, c, taps));
    VGC_CHECK_LAUNCH("gather_weighted");
    return VG_OK;
}
