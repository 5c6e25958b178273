/* SPDX-License-Identifier: Apache-2.0 */
/* gemm_split.cuh's launch. A warp a row, as rmsnorm's kernel (ops_vit.cu): a lane adds its
 * vectors' partials, bias and residual, stores C, and sums the squares of the rounded values;
 * the first SN_NB vectors of each lane stay in registers for the norm, later ones are read back
 * (this lane wrote them). At decode shapes (16-64 rows of 896-1024) a row is at most SN_NB
 * vectors a lane, and the pass costs one round trip (the partials, the residual and the norm's
 * weights together), provided the loads issue together: a first version that loaded each slice's partials
 * behind a branch on the slice count (and a vector's after the previous vector's store) waited
 * for each load in turn and took 6-7 us a call at 16 rows (H100, a kernel trace of the step). */
#include "gemm_split.cuh"
#include "kernels.cuh"

#define SN_NB 4        /* vectors a lane takes at once, and keeps in registers between C and its norm */

/* The sums of vector c0 of row r: its NS partials, bias and residual added in fp32. Loads only,
 * with no branch between them and their first use (a load's use waits for it, and a branch
 * between loads keeps the next from issuing before the previous one's use): the row's loads are
 * in flight together. */
template <typename T, int VEC, int NS>
__device__ __forceinline__ void sn_load(float *x, const float *parts, size_t plane, int r, int cols, int c0,
                                        const T *bias, const T *res, int64_t ldr)
{
    typedef vgk_vec<float, VEC> F;
    typedef vgk_vec<T, VEC> V;
    V b, q;
    if (bias) b = ((const V *)bias)[c0];
    if (res) q = ((const V *)(res + (int64_t)r * ldr))[c0];
    F p[NS];
#pragma unroll
    for (int s = 0; s < NS; s++) p[s] = ((const F *)(parts + s * plane + (size_t)r * cols))[c0];
#pragma unroll
    for (int e = 0; e < VEC; e++) {
        float v = p[0].v[e];
#pragma unroll
        for (int s = 1; s < NS; s++) v += p[s].v[e];
        if (bias) v += vgk_to_f(b.v[e]);
        if (res) v += vgk_to_f(q.v[e]);
        x[e] = v;
    }
}

template <typename T, int VEC, int NS>
__global__ void k_split_norm(const float *parts, int rows, int cols, const T *bias, const T *res, int64_t ldr, T *c,
                             const T *w, T *out, float eps)
{
    vgk_grid_sync();
    typedef vgk_vec<T, VEC> V;
    const int lane = threadIdx.x % 32, nv = cols / VEC;
    const size_t plane = (size_t)rows * cols;
    for (int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; r < rows; r += gridDim.x * (blockDim.x / 32)) {
        V *crow = (V *)(c + (int64_t)r * cols), *orow = (V *)(out + (int64_t)r * cols);
        const V *wv = (const V *)w;
        V keep[SN_NB], g[SN_NB];
        if (w) /* the norm's first weights, in flight with the partials (indices clamped into the row) */
#pragma unroll
            for (int u = 0; u < SN_NB; u++) g[u] = wv[lane + 32 * u < nv ? lane + 32 * u : nv - 1];
        float ss = 0.0f;
        /* batches of SN_NB vectors a lane, in the row's order (rmsnorm's order of the squares); a
         * batch's loads (indices clamped into the row) all before its stores, which may alias them */
        for (int b0 = lane; b0 < nv; b0 += 32 * SN_NB) {
            float x[SN_NB][VEC];
#pragma unroll
            for (int u = 0; u < SN_NB; u++) {
                const int cu = b0 + 32 * u < nv ? b0 + 32 * u : nv - 1;
                sn_load<T, VEC, NS>(x[u], parts, plane, r, cols, cu, bias, res, ldr);
            }
#pragma unroll
            for (int u = 0; u < SN_NB; u++) {
                if (b0 + 32 * u >= nv) break;
                V o;
#pragma unroll
                for (int e = 0; e < VEC; e++) {
                    o.v[e] = vgk_from_f<T>(x[u][e]);
                    const float v = vgk_to_f(o.v[e]);
                    ss += v * v;
                }
                crow[b0 + 32 * u] = o;
                if (b0 == lane) keep[u] = o; /* the first batch stays for the norm */
            }
        }
        if (!w) continue;
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        const float inv = rsqrtf(ss / (float)cols + eps);
#pragma unroll
        for (int u = 0; u < SN_NB; u++) {
            if (lane + 32 * u >= nv) break;
            V o;
#pragma unroll
            for (int e = 0; e < VEC; e++) o.v[e] = vgk_from_f<T>(vgk_to_f(g[u].v[e]) * (vgk_to_f(keep[u].v[e]) * inv));
            orow[lane + 32 * u] = o;
        }
        for (int c0 = lane + 32 * SN_NB; c0 < nv; c0 += 32) { /* later batches: read back (this lane wrote them) */
            const V xv = crow[c0], gv = wv[c0];
            V o;
#pragma unroll
            for (int e = 0; e < VEC; e++) o.v[e] = vgk_from_f<T>(vgk_to_f(gv.v[e]) * (vgk_to_f(xv.v[e]) * inv));
            orow[c0] = o;
        }
    }
}

template <typename T, int VEC, int NS>
static void sn_launch(vg_bk_stream *s, const vg_gemm_args *a, const float *parts)
{
    /* a warp a block: the rows of a decode step over as many multiprocessors (8 rows a block, as
     * rmsnorm's kernel, left 2 of them to read 16 rows' partials: 3.4-3.7 us at 16 rows, H100) */
    const unsigned blocks = (unsigned)(a->m < 65535 * 8 ? a->m : 65535 * 8);
    vgc_launch(s, k_split_norm<T, VEC, NS>, blocks, 32, 0, parts, (int)a->m, (int)a->n, (const T *)a->bias,
               (const T *)a->residual, a->residual ? a->ldr : (int64_t)0, (T *)a->c, (const T *)a->c_norm_w,
               (T *)a->c_norm_out, a->norm_eps);
}

/* The slice count as a template argument (vgc_split_norm's counts: gemm.cu's k_splits). */
template <typename T, int VEC>
static bool sn_launch_split(vg_bk_stream *s, const vg_gemm_args *a, const float *parts, int nsplit)
{
    switch (nsplit) {
    case 2: sn_launch<T, VEC, 2>(s, a, parts); return true;
    case 3: sn_launch<T, VEC, 3>(s, a, parts); return true;
    case 4: sn_launch<T, VEC, 4>(s, a, parts); return true;
    case 6: sn_launch<T, VEC, 6>(s, a, parts); return true;
    case 8: sn_launch<T, VEC, 8>(s, a, parts); return true;
    default: return false;
    }
}

vg_status vgc_split_norm(vg_bk_stream *s, const vg_gemm_args *a, const float *parts, int nsplit)
{
    const size_t esz = a->dtype_c == VG_DTYPE_F32 ? 4 : 2, vecn = 16 / esz;
    const uintptr_t addr = (uintptr_t)a->c | (uintptr_t)a->bias | (uintptr_t)a->residual | (uintptr_t)a->c_norm_w |
                           (uintptr_t)a->c_norm_out | (uintptr_t)(a->residual ? a->ldr * (int64_t)esz : 0);
    const bool vec = a->n % (int64_t)vecn == 0 && addr % 16 == 0;
    bool known = false;
    if (vec && a->dtype_c == VG_DTYPE_F32) known = sn_launch_split<float, 4>(s, a, parts, nsplit);
    else if (vec && a->dtype_c == VG_DTYPE_BF16) known = sn_launch_split<vgc_bf16, 8>(s, a, parts, nsplit);
    else if (vec) known = sn_launch_split<vgc_f16, 8>(s, a, parts, nsplit);
    else VGK_FLOAT_DISPATCH(a->dtype_c, T, known = sn_launch_split<T, 1>(s, a, parts, nsplit));
    if (!known) return VGC_ERR(VG_ERR_INTERNAL, "cuda: gemm split into %d slices: no such kernel", nsplit);
    VGC_CHECK_LAUNCH("gemm split-K sum and rmsnorm");
    return VG_OK;
}
