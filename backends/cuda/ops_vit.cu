/* SPDX-License-Identifier: Apache-2.0 */
/* Vision-transformer kernels of the op table: rmsnorm, 2-D rotary, silu·mul, convert.
 * Attention lives in attention.cu. Every kernel accumulates in fp32. */
#include "kernels.cuh"

/* Up to 16 bytes of T at once: loads and stores of V consecutive elements (aligned to the
 * whole vector, so that they compile to single wide accesses). */
template <typename T, int V> struct alignas(sizeof(T) * V) vec { T v[V]; };

/* One warp per row, 16-byte vectors when the row allows (VEC > 1): no block barriers;
 * statistics in fp32 with warp shuffles. A lane takes its vectors NB at a time, every load of a
 * batch issued before the first is used (indices clamped into the row): a decode step's short
 * rows cost one memory round trip per pass, not one per vector. The first batch stays in
 * registers with its weights, loaded with it, so a row of at most 32·NB vectors (a language
 * model's hidden row: 896 or 1024 BF16) costs one round trip in all, not two. */
#define NORM_NB 4
/* w NULL (gemm's norm_unit through vgc_gemm_norm_before; the op itself requires w): ones */
template <typename T, int VEC>
__device__ __forceinline__ void norm_batch_load(const vec<T, VEC> *xr, const vec<T, VEC> *w, int c0, int nv,
                                                vec<T, VEC> *a, vec<T, VEC> *g)
{
#pragma unroll
    for (int u = 0; u < NORM_NB; u++) {
        const int c = c0 + 32 * u < nv ? c0 + 32 * u : nv - 1;
        a[u] = xr[c];
        if (w) g[u] = w[c];
        else
#pragma unroll
            for (int e = 0; e < VEC; e++) g[u].v[e] = vgk_from_f<T>(1.0f);
    }
}
/* the batch's squares added to ss one by one, in the order of the row */
template <typename T, int VEC>
__device__ __forceinline__ void norm_batch_squares(const vec<T, VEC> *a, int c0, int nv, float &ss)
{
#pragma unroll
    for (int u = 0; u < NORM_NB; u++)
#pragma unroll
        for (int e = 0; e < VEC; e++) {
            const float v = c0 + 32 * u < nv ? vgk_to_f(a[u].v[e]) : 0.0f;
            ss += v * v;
        }
}
template <typename T, int VEC>
__device__ __forceinline__ void norm_batch_store(vec<T, VEC> *orow, const vec<T, VEC> *a, const vec<T, VEC> *g,
                                                 int c0, int nv, float inv)
{
#pragma unroll
    for (int u = 0; u < NORM_NB; u++) {
        if (c0 + 32 * u >= nv) break;
        vec<T, VEC> o;
#pragma unroll
        for (int e = 0; e < VEC; e++) o.v[e] = vgk_from_f<T>(vgk_to_f(g[u].v[e]) * (vgk_to_f(a[u].v[e]) * inv));
        orow[c0 + 32 * u] = o;
    }
}
template <typename T, int VEC>
__global__ void k_rmsnorm(const T *x, const T *w, T *out, int rows, int cols, float eps)
{
    vgk_grid_sync();
    typedef vec<T, VEC> V;
    const V *wv = (const V *)w;
    int lane = threadIdx.x % 32, nv = cols / VEC;
    for (int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; r < rows;
         r += gridDim.x * (blockDim.x / 32)) {
        const V *xr = (const V *)(x + (int64_t)r * cols);
        V *orow = (V *)(out + (int64_t)r * cols);
        V a0[NORM_NB], g0[NORM_NB], a[NORM_NB], g[NORM_NB];
        norm_batch_load(xr, wv, lane, nv, a0, g0); /* nv >= 1: core refuses empty rows */
        float ss = 0.0f;
        norm_batch_squares<T, VEC>(a0, lane, nv, ss);
        for (int c0 = lane + 32 * NORM_NB; c0 < nv; c0 += 32 * NORM_NB) {
            norm_batch_load(xr, wv, c0, nv, a, g);
            norm_batch_squares<T, VEC>(a, c0, nv, ss);
        }
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        const float inv = rsqrtf(ss / (float)cols + eps);
        norm_batch_store<T, VEC>(orow, a0, g0, lane, nv, inv);
        for (int c0 = lane + 32 * NORM_NB; c0 < nv; c0 += 32 * NORM_NB) {
            norm_batch_load(xr, wv, c0, nv, a, g);
            norm_batch_store<T, VEC>(orow, a, g, c0, nv, inv);
        }
    }
}

vg_status vgc_op_rmsnorm(vg_bk_device *, vg_bk_stream *s, vg_dtype t, const void *x, const void *w,
                         void *out, int64_t rows, int64_t cols, float eps)
{
    if (!rows) return VG_OK;
    unsigned blocks = (unsigned)((rows + 7) / 8 < 65535 * 4 ? (rows + 7) / 8 : 65535 * 4);
    int elem = t == VG_DTYPE_F32 ? 4 : 2, vecn = 16 / elem;
    int vec_ok = cols % vecn == 0 && ((uintptr_t)x | (uintptr_t)w | (uintptr_t)out) % 16 == 0;
    if (vec_ok && t == VG_DTYPE_F32)
        vgc_launch(s, k_rmsnorm<float, 4>, blocks, 256, 0, (const float *)x, (const float *)w, (float *)out, (int)rows, (int)cols, eps);
    else if (vec_ok && t == VG_DTYPE_BF16)
        vgc_launch(s, k_rmsnorm<vgc_bf16, 8>, blocks, 256, 0, (const vgc_bf16 *)x, (const vgc_bf16 *)w, (vgc_bf16 *)out, (int)rows, (int)cols, eps);
    else if (vec_ok)
        vgc_launch(s, k_rmsnorm<vgc_f16, 8>, blocks, 256, 0, (const vgc_f16 *)x, (const vgc_f16 *)w, (vgc_f16 *)out, (int)rows, (int)cols, eps);
    else
        VGK_FLOAT_DISPATCH(t, T, vgc_launch(s, k_rmsnorm<T, 1>, blocks, 256, 0,
                                     (const T *)x, (const T *)w, (T *)out, (int)rows, (int)cols, eps));
    VGC_CHECK_LAUNCH("rmsnorm");
    return VG_OK;
}

/* A block per ROT_ROWS rows: their half sine/cosine pairs are computed once into shared
 * memory, then every (row, head, VEC pairs) of the block is rotated with VEC-wide accesses to
 * the first and the second half of the head. */
#define ROT_ROWS 4
template <typename T, int VEC>
__global__ void k_rotary_2d(T *x, int64_t ld, int rows, int heads, int head_dim, const int32_t *pos,
                            float log2_theta)
{
    vgk_grid_sync();
    typedef vec<T, VEC> V;
    extern __shared__ float cs[]; /* per row: [half] cosines, then [half] sines */
    const int half = head_dim / 2, nv = half / VEC;
    const int r0 = blockIdx.x * ROT_ROWS, nr = min(ROT_ROWS, rows - r0);
    for (int t = threadIdx.x; t < nr * half; t += blockDim.x) {
        int rr = t / half, i = t - rr * half;
        float *c = cs + rr * head_dim;
        sincosf(vgk_rotary_angle(pos, r0 + rr, i, half, log2_theta), &c[half + i], &c[i]);
    }
    __syncthreads();
    const int per_row = heads * nv;
    for (int t = threadIdx.x; t < nr * per_row; t += blockDim.x) {
        int rr = t / per_row, rem = t - rr * per_row, h = rem / nv, v = rem - h * nv;
        T *base = x + (int64_t)(r0 + rr) * ld + h * head_dim + v * VEC;
        const float *c = cs + rr * head_dim + v * VEC;
        V a = *(const V *)base, b = *(const V *)(base + half), oa, ob;
#pragma unroll
        for (int e = 0; e < VEC; e++) {
            float x0 = vgk_to_f(a.v[e]), x1 = vgk_to_f(b.v[e]), co = c[e], sn = c[half + e];
            oa.v[e] = vgk_from_f<T>(x0 * co - x1 * sn);
            ob.v[e] = vgk_from_f<T>(x1 * co + x0 * sn);
        }
        *(V *)base = oa;
        *(V *)(base + half) = ob;
    }
}

template <typename T>
static void rotary_launch(vg_bk_stream *s, int vecn, T *x, int64_t ld, int rows, int heads,
                          int head_dim, const int32_t *pos, float log2_theta)
{
    unsigned blocks = (unsigned)((rows + ROT_ROWS - 1) / ROT_ROWS);
    size_t smem = (size_t)ROT_ROWS * head_dim * sizeof(float);
    switch (vecn) {
    case 8: vgc_launch(s, k_rotary_2d<T, 8>, blocks, 256, smem, x, ld, rows, heads, head_dim, pos, log2_theta); break;
    case 4: vgc_launch(s, k_rotary_2d<T, 4>, blocks, 256, smem, x, ld, rows, heads, head_dim, pos, log2_theta); break;
    case 2: vgc_launch(s, k_rotary_2d<T, 2>, blocks, 256, smem, x, ld, rows, heads, head_dim, pos, log2_theta); break;
    default: vgc_launch(s, k_rotary_2d<T, 1>, blocks, 256, smem, x, ld, rows, heads, head_dim, pos, log2_theta); break;
    }
}

vg_status vgc_op_rotary_2d(vg_bk_device *, vg_bk_stream *s, vg_dtype t, void *x, int64_t ld,
                           int64_t rows, int heads, int head_dim, const int32_t *pos, float theta)
{
    if (!rows) return VG_OK;
    /* the widest vector (up to 16 bytes) that every half-head start is aligned to */
    int elem = t == VG_DTYPE_F32 ? 4 : 2, half = head_dim / 2, vecn = 16 / elem;
    while (vecn > 1 && (half % vecn || ld % vecn || (uintptr_t)x % ((uintptr_t)vecn * elem))) vecn /= 2;
    VGK_FLOAT_DISPATCH(t, T, rotary_launch<T>(s, vecn, (T *)x, ld, (int)rows, heads, head_dim, pos, log2f(theta)));
    VGC_CHECK_LAUNCH("rotary_2d");
    return VG_OK;
}

/* 1/sqrt(mean(x²) + eps) of one row of nv vectors, summed by the block: each thread's vectors
 * NB at a time, every load of a batch issued before the first is used, then the warps' sums
 * through red (blockDim.x / 32 floats of shared memory; the caller alternates two, so that one
 * barrier a row suffices). Every thread gets it. */
template <typename T, int VEC, int NB>
__device__ __forceinline__ float block_inv_rms(const vec<T, VEC> *x, int nv, int cols, float eps, float *red)
{
    const int step = (int)blockDim.x;
    float ss = 0.0f;
    for (int c0 = threadIdx.x; c0 - (int)threadIdx.x < nv; c0 += step * NB) {
        vec<T, VEC> a[NB];
#pragma unroll
        for (int u = 0; u < NB; u++) a[u] = x[c0 + step * u < nv ? c0 + step * u : nv - 1];
#pragma unroll
        for (int u = 0; u < NB; u++)
#pragma unroll
            for (int e = 0; e < VEC; e++) {
                const float v = c0 + step * u < nv ? vgk_to_f(a[u].v[e]) : 0.0f;
                ss += v * v;
            }
    }
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = ss;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < step / 32; w++) total += red[w];
    return rsqrtf(total / (float)cols + eps);
}

/* Rows across blocks, columns across threads (VEC at a time): no per-element division. */
template <typename T, int VEC>
__global__ void k_silu_mul(const T *in, int64_t ld_in, T *out, int64_t ld_out, int rows, int cols)
{
    vgk_grid_sync();
    typedef vec<T, VEC> V;
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const V *g = (const V *)(in + (int64_t)r * ld_in), *u = (const V *)(in + (int64_t)r * ld_in + cols);
        V *o = (V *)(out + (int64_t)r * ld_out);
        const int nv = cols / VEC;
        /* NORM_NB vectors at a time, every load issued before the first is used */
        for (int c0 = threadIdx.x; c0 < nv; c0 += blockDim.x * NORM_NB) {
            V gv[NORM_NB], uv[NORM_NB];
#pragma unroll
            for (int k = 0; k < NORM_NB; k++) {
                int c = c0 + (int)blockDim.x * k < nv ? c0 + (int)blockDim.x * k : nv - 1;
                gv[k] = g[c], uv[k] = u[c];
            }
#pragma unroll
            for (int k = 0; k < NORM_NB; k++) {
                if (c0 + (int)blockDim.x * k >= nv) break;
                V ov;
#pragma unroll
                for (int e = 0; e < VEC; e++) {
                    float x = vgk_to_f(gv[k].v[e]);
                    ov.v[e] = vgk_from_f<T>(x / (1.0f + __expf(-x)) * vgk_to_f(uv[k].v[e]));
                }
                o[c0 + (int)blockDim.x * k] = ov;
            }
        }
    }
}

/* silu_mul with each row's halves scaled by its 1/rms of x first (a unit norm the GEMM deferred:
 * vgc_silu_mul_scaled), and with BIAS the GEMM's bias added after that. As k_silu_mul, but every
 * thread takes the first batch (its loads then in flight while the block sums x's row, the
 * barrier in it reached by all). NB vectors a batch: 4 where the rows fit in one wave of a block a
 * multiprocessor (a decode step's 4864-wide row in one round trip); else 2, for four blocks of
 * 256 threads a multiprocessor (at most 64 registers): at 4096 rows (a vision tower's MLP) it streams at
 * the DRAM's rate only with that many rows in flight (two blocks, at 84 registers: 70 us where
 * k_silu_mul took 32, ncu on the H100). */
template <typename T, int VEC, bool BIAS, int NB>
__global__ void __launch_bounds__(256, NB == 2 ? 4 : 1)
k_silu_mul_scaled(const T *in, int64_t ld_in, T *out, int64_t ld_out, int rows, int cols, const T *x, int xcols,
                  float eps, const T *bias)
{
    vgk_grid_sync();
    typedef vec<T, VEC> V;
    __shared__ float red[2][32];
    const int nv = cols / VEC, step = (int)blockDim.x;
    int parity = 0;
    for (int r = blockIdx.x; r < rows; r += gridDim.x, parity ^= 1) {
        const V *g = (const V *)(in + (int64_t)r * ld_in), *u = g + nv;
        const V *bg = (const V *)bias, *bu = bg + nv;
        V *o = (V *)(out + (int64_t)r * ld_out);
        float sc = 0.0f;
        for (int c0 = threadIdx.x, first = 1; first || c0 < nv; c0 += step * NB, first = 0) {
            V gv[NB], uv[NB], gb[BIAS ? NB : 1], ub[BIAS ? NB : 1];
#pragma unroll
            for (int k = 0; k < NB; k++) {
                const int c = c0 + step * k < nv ? c0 + step * k : nv - 1;
                gv[k] = g[c], uv[k] = u[c];
                if (BIAS) gb[k] = bg[c], ub[k] = bu[c];
            }
            if (first)
                sc = block_inv_rms<T, VEC, NB>((const V *)(x + (int64_t)r * xcols), xcols / VEC, xcols, eps,
                                              red[parity]);
#pragma unroll
            for (int k = 0; k < NB; k++) {
                if (c0 + step * k >= nv) break;
                V ov;
#pragma unroll
                for (int e = 0; e < VEC; e++) {
                    float gx = vgk_to_f(gv[k].v[e]) * sc, ux = vgk_to_f(uv[k].v[e]) * sc;
                    if (BIAS) gx += vgk_to_f(gb[k].v[e]), ux += vgk_to_f(ub[k].v[e]);
                    ov.v[e] = vgk_from_f<T>(gx / (1.0f + __expf(-gx)) * ux);
                }
                o[c0 + step * k] = ov;
            }
        }
    }
}

template <typename T, int VEC>
static void silu_mul_launch(vg_bk_stream *s, unsigned blocks, const void *in, int64_t ld_in, void *out,
                            int64_t ld_out, int64_t rows, int64_t cols, const void *x, int64_t xcols, float eps,
                            const void *bias)
{
    if (!x) {
        vgc_launch(s, k_silu_mul<T, VEC>, blocks, 256, 0, (const T *)in, ld_in, (T *)out, ld_out, (int)rows,
                   (int)cols);
        return;
    }
    const bool one_wave = rows <= s->dev->prop.multiProcessorCount;
#define SM_ARGS blocks, 256, 0, (const T *)in, ld_in, (T *)out, ld_out, (int)rows, (int)cols, (const T *)x, \
                (int)xcols, eps, (const T *)bias
    if (bias && one_wave) vgc_launch(s, k_silu_mul_scaled<T, VEC, true, 4>, SM_ARGS);
    else if (bias) vgc_launch(s, k_silu_mul_scaled<T, VEC, true, 2>, SM_ARGS);
    else if (one_wave) vgc_launch(s, k_silu_mul_scaled<T, VEC, false, 4>, SM_ARGS);
    else vgc_launch(s, k_silu_mul_scaled<T, VEC, false, 2>, SM_ARGS);
#undef SM_ARGS
}

vg_status vgc_silu_mul_scaled(vg_bk_stream *s, vg_dtype t, const void *in, int64_t ld_in, void *out,
                              int64_t ld_out, int64_t rows, int64_t cols, const void *x, int64_t xcols,
                              float eps, const void *bias)
{
    if (!rows) return VG_OK;
    unsigned blocks = (unsigned)(rows < 65535 * 8 ? rows : 65535 * 8);
    int elem = t == VG_DTYPE_F32 ? 4 : 2, vecn = 16 / elem;
    int vec_ok = cols % vecn == 0 && ld_in % vecn == 0 && ld_out % vecn == 0 &&
                 ((uintptr_t)in | (uintptr_t)out | (uintptr_t)x | (uintptr_t)bias) % 16 == 0 &&
                 (!x || xcols % vecn == 0);
#define SM_ARGS s, blocks, in, ld_in, out, ld_out, rows, cols, x, xcols, eps, bias
    if (vec_ok && t == VG_DTYPE_F32) silu_mul_launch<float, 4>(SM_ARGS);
    else if (vec_ok && t == VG_DTYPE_BF16) silu_mul_launch<vgc_bf16, 8>(SM_ARGS);
    else if (vec_ok) silu_mul_launch<vgc_f16, 8>(SM_ARGS);
    else VGK_FLOAT_DISPATCH(t, T, silu_mul_launch<T, 1>(SM_ARGS));
#undef SM_ARGS
    VGC_CHECK_LAUNCH("silu_mul");
    return VG_OK;
}

vg_status vgc_op_silu_mul(vg_bk_device *, vg_bk_stream *s, vg_dtype t, const void *in,
                          int64_t ld_in, void *out, int64_t ld_out, int64_t rows, int64_t cols)
{
    return vgc_silu_mul_scaled(s, t, in, ld_in, out, ld_out, rows, cols, NULL, 0, 0.0f, NULL);
}

template <typename TI, typename TO>
__global__ void k_convert(const TI *src, TO *dst, size_t n)
{
    vgk_grid_sync();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = vgk_from_f<TO>(vgk_to_f(src[i]));
}

vg_status vgc_op_convert(vg_bk_device *, vg_bk_stream *s, vg_dtype from, const void *src,
                         vg_dtype to, void *dst, size_t n)
{
    if (!n) return VG_OK;
    VGK_FLOAT_DISPATCH(from, TI, VGK_FLOAT_DISPATCH(to, TO,
        vgc_launch(s, k_convert<TI, TO>, vgk_blocks(n), 256, 0, (const TI *)src, (TO *)dst, n)));
    VGC_CHECK_LAUNCH("convert");
    return VG_OK;
}
