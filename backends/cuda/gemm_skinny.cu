/* SPDX-License-Identifier: Apache-2.0 */
/* A weight-streaming GEMM for decoding: C[m,n] = act(alpha·A[m,k]·B[n,k]ᵀ + bias) + residual
 * with m <= 64, where the time is the weight's bytes crossing memory once.
 *
 * The weight rows are the tensor cores' M side and the activation rows their N side
 * (mma.sync m16n8k16, fp32 accumulation): a block of 4 or 8 warps owns 16 output columns
 * (16 weight rows); its warps take turns over 32-wide k chunks, every lane loading 16 contiguous
 * bytes of two weight rows per chunk with no shared-memory staging, several chunks in flight. The dot product does not care in
 * which order k is summed, so each lane's 8 contiguous k values are fed to the fragments as if
 * they were the fragment's k indices {2t, 2t+1, 2t+8, 2t+9} (first mma) and the next four
 * (second mma), with the activations loaded the same way: A and B agree on the permutation.
 * When 16-column groups are too few to fill the GPU (n small, k large), the k range is also
 * split across blocks (split-K): each leaves fp32 partials and the last block of the group to
 * finish (an atomic counter, reset by that block, so graphs replay it) sums them and applies the
 * epilogue; or, on sm_90, the blocks of a group run as one thread-block cluster and each adds its
 * share of the outputs from every block's shared memory (the clustered split: no partials in
 * memory, no counter, no last block). The weights do not depend on the previous kernel: each warp
 * prefetches its chunks into L2 before waiting for that kernel (under a programmatic launch the
 * fetch overlaps it). */
#include <cooperative_groups.h>

#include "cluster.cuh"
#include "gemm_own.cuh"
#include "gemm_skinny.cuh"

#define SK_ROWS 16  /* output columns (weight rows) per block: one mma M tile */
#define SK_CHUNK 32 /* k per warp step: two k16 mmas */

/* Chunks in flight per warp: fewer as the activation tiles take registers. */
template <int MT, int W> struct sk_shape {
    static constexpr int unroll = W == 8 ? 8 : MT <= 2 ? 4 : 2;
};

/* Weights are read once per step: no L1 allocation. */
__device__ __forceinline__ uint4 sk_load_weight(const void *p)
{
    uint4 r;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p));
    return r;
}

/* The clustered split's epilogue (vgc_skinny_cfg.cluster), once each warp's sums are in red: the
 * block adds its warps' into red[0]; then block b of the cluster takes outputs b·32W + t, ...,
 * adding the blocks' red[0] in rank order through distributed shared memory, and applies the
 * epilogue (scaled by the row's 1/rms with a norm). The second cluster barrier keeps every block's
 * shared memory until the others have read it. */
template <typename T, typename TC, int MT, int W>
__device__ __forceinline__ void sk_cluster_epilogue(float (*red)[8 * MT][SK_ROWS + 1], const float *inv_row,
                                                    int items, TC *C, int64_t ldc, const T *bias, const TC *res,
                                                    int64_t ldr, int n, int r0, int o0, int half, bool normed,
                                                    float alpha, vg_activation act)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    cg::cluster_group cl = cg::this_cluster();
    for (int e = threadIdx.x; e < items; e += 32 * W) {
        const int tok = e / SK_ROWS, r = e % SK_ROWS;
        float v = 0.0f;
#pragma unroll
        for (int w = 0; w < W; w++) v += red[w][tok][r];
        red[0][tok][r] = v; /* (tok, r) is this thread's alone */
    }
    cl.sync();
    const int nb = (int)cl.num_blocks(), first = (int)cl.block_rank() * 32 * W + threadIdx.x;
    auto sum = [&](int tok, int r) {
        float v = 0.0f;
        for (int b = 0; b < nb; b++) v += *cl.map_shared_rank(&red[0][tok][r], b);
        return v;
    };
    if (half) {
        for (int e = first; e < items / 2; e += nb * 32 * W) { /* m·8 gated outputs */
            const int tok = e / 8, r = e % 8;
            if (o0 + r >= half) continue;
            const float sc = normed ? inv_row[tok] : 1.0f;
            sk_store_gated(C, ldc, bias, half, tok, o0 + r, sum(tok, r) * sc, sum(tok, r + 8) * sc, alpha);
        }
    } else {
        for (int e = first; e < items; e += nb * 32 * W) {
            const int tok = e / SK_ROWS, r = e % SK_ROWS, col = r0 + r;
            if (col >= n) continue;
            sk_store(C, ldc, bias, res, ldr, tok, col, normed ? sum(tok, r) * inv_row[tok] : sum(tok, r), alpha, act);
        }
    }
    cl.sync();
#else
    __trap(); /* never launched: vgc_skinny_cluster_max allows clusters only for sm_90 code */
#endif
}

/* MT: 8-row tiles of activations (m <= 8·MT); W: warps per block. half > 0: gated (n = 2·half):
 * a block owns 8 outputs, its fragment rows g the gate rows and g + 8 the matching up rows.
 * normed: A is rmsnorm'd (vg_ops.h, gemm's norm_w or norm_unit): every block takes each row's
 * 1/rms over the whole of k first (m <= 64 short rows, from L2), multiplies the activations by
 * norm_w (where there is one) as it loads them, and scales the sums by 1/rms in the epilogue. */
template <typename T, typename TC, int MT, int W>
__global__ void __launch_bounds__(32 * W)
k_gemm_skinny(const T *A, int64_t lda, const T *B, int64_t ldb, TC *C, int64_t ldc, const T *bias,
              const TC *res, int64_t ldr, int m, int n, int k, float alpha, vg_activation act,
              int half, int normed, const T *norm_w, float norm_eps, int ksplit, float *part, unsigned *counters,
              int clustered)
{
    constexpr int SK_WARPS = W, SK_THREADS = 32 * W, UNR = sk_shape<MT, W>::unroll;
    __shared__ float red[SK_WARPS][8 * MT][SK_ROWS + 1];
    __shared__ float inv_row[8 * MT]; /* normed: each row's 1/rms */
    __shared__ int last_block;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4;
    const int r0 = blockIdx.x * SK_ROWS, o0 = blockIdx.x * (SK_ROWS / 2); /* o0: gated outputs */
    const int nchunks = (k + SK_CHUNK - 1) / SK_CHUNK, per = (nchunks + ksplit - 1) / ksplit;
    const int c0 = (int)blockIdx.y * per, c1 = c0 + per < nchunks ? c0 + per : nchunks;
    /* the weight row behind fragment row r (0..15), and whether it exists */
    auto wrow = [&](int r) { return half ? (r < 8 ? o0 + r : half + o0 + r - 8) : r0 + r; };
    auto wvalid = [&](int r) { return half ? o0 + (r & 7) < half : r0 + r < n; };
    const bool row0 = wvalid(g), row1 = wvalid(g + 8);
    /* rows past n and activation rows past m read a valid row (clamped) and are zeroed after;
     * so do lanes whose 8 columns start past k (k < 32): their loads stay inside the row */
    const int tk = tq * 8 < k ? tq * 8 : 0;
    const T *w0 = B + (int64_t)(row0 ? wrow(g) : n - 1) * ldb + tk;
    const T *w1 = B + (int64_t)(row1 ? wrow(g + 8) : n - 1) * ldb + tk;
    const T *x0[MT];
#pragma unroll
    for (int j = 0; j < MT; j++) x0[j] = A + (int64_t)(8 * j + g < m ? 8 * j + g : m - 1) * lda + tk;
    for (int c = c0 + warp; c < c1 && c * SK_CHUNK + tq * 8 < k; c += SK_WARPS) {
        if (row0) sk_prefetch_l2(w0 + c * SK_CHUNK);
        if (row1) sk_prefetch_l2(w1 + c * SK_CHUNK);
    }
    vgk_grid_sync(); /* the activations (and residual) come from the previous kernel */
    if (normed) /* read by the epilogue, after the __syncthreads before the reduction */
        sk_rows_inv_rms<T>(A, lda, m, k, norm_eps, inv_row, warp, SK_WARPS, lane);
    const T *nw = norm_w ? norm_w + tk : nullptr;

    float acc[MT][4];
#pragma unroll
    for (int j = 0; j < MT; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    /* UNR chunks per warp at a time: every load of a batch unconditional (addresses clamped,
     * values selected), all issued before the first mma waits for one */
    for (int c = c0 + warp; c < c1; c += SK_WARPS * UNR) {
        uint4 wa[UNR], wb[UNR], x[UNR][MT], nv[UNR];
#pragma unroll
        for (int u = 0; u < UNR; u++) {
            const int kk = (c + u * SK_WARPS) * SK_CHUNK + tq * 8;
            const int kc = c + u * SK_WARPS < c1 && kk < k ? kk - tq * 8 : 0; /* k is a multiple of 8 */
            wa[u] = sk_load_weight(w0 + kc);
            wb[u] = sk_load_weight(w1 + kc);
#pragma unroll
            for (int j = 0; j < MT; j++) x[u][j] = __ldg((const uint4 *)(x0[j] + kc));
            if (nw) nv[u] = __ldg((const uint4 *)(nw + kc));
        }
#pragma unroll
        for (int u = 0; u < UNR; u++) {
            const bool kin = c + u * SK_WARPS < c1 && (c + u * SK_WARPS) * SK_CHUNK + tq * 8 < k;
            const uint4 a0 = kin && row0 ? wa[u] : zero, a1 = kin && row1 ? wb[u] : zero;
#pragma unroll
            for (int j = 0; j < MT; j++) {
                const uint4 xv = kin && 8 * j + g < m ? (nw ? sk_scale<T>(x[u][j], nv[u]) : x[u][j]) : zero;
                sk_mma<T>(acc[j], a0.x, a1.x, a0.y, a1.y, xv.x, xv.y);
                sk_mma<T>(acc[j], a0.z, a1.z, a0.w, a1.w, xv.z, xv.w);
            }
        }
    }
    /* accumulator of tile j: (column g, rows 8j + 2tq and +1) and (column g + 8, the same rows) */
#pragma unroll
    for (int j = 0; j < MT; j++) {
        red[warp][8 * j + 2 * tq][g] = acc[j][0];
        red[warp][8 * j + 2 * tq + 1][g] = acc[j][1];
        red[warp][8 * j + 2 * tq][g + 8] = acc[j][2];
        red[warp][8 * j + 2 * tq + 1][g + 8] = acc[j][3];
    }
    __syncthreads();
    const int items = m * SK_ROWS; /* m <= 8·MT */
    if (clustered) {
        sk_cluster_epilogue<T, TC, MT, W>(red, inv_row, items, C, ldc, bias, res, ldr, n, r0, o0, half,
                                          normed != 0, alpha, act);
        return;
    }
    if (ksplit == 1 && half) {
        for (int e = threadIdx.x; e < m * 8; e += SK_THREADS) {
            int tok = e / 8, r = e % 8;
            if (o0 + r >= half) continue;
            float vg = 0.0f, vu = 0.0f;
#pragma unroll
            for (int w = 0; w < SK_WARPS; w++) vg += red[w][tok][r], vu += red[w][tok][r + 8];
            const float sc = normed ? inv_row[tok] : 1.0f;
            sk_store_gated(C, ldc, bias, half, tok, o0 + r, vg * sc, vu * sc, alpha);
        }
        return;
    }
    if (ksplit == 1) {
        for (int e = threadIdx.x; e < items; e += SK_THREADS) {
            int tok = e / SK_ROWS, r = e % SK_ROWS, col = r0 + r;
            if (col >= n) continue;
            float v = 0.0f;
#pragma unroll
            for (int w = 0; w < SK_WARPS; w++) v += red[w][tok][r];
            sk_store(C, ldc, bias, res, ldr, tok, col, normed ? v * inv_row[tok] : v, alpha, act);
        }
        return;
    }
    for (int e = threadIdx.x; e < items; e += SK_THREADS) {
        int tok = e / SK_ROWS, r = e % SK_ROWS;
        if (!wvalid(r)) continue;
        float v = 0.0f;
#pragma unroll
        for (int w = 0; w < SK_WARPS; w++) v += red[w][tok][r];
        part[((int64_t)blockIdx.y * m + tok) * n + wrow(r)] = v; /* by weight row */
    }
    __threadfence(); /* the partials are visible before the count says so */
    __syncthreads();
    if (threadIdx.x == 0) last_block = atomicAdd(&counters[blockIdx.x], 1u) == (unsigned)ksplit - 1;
    __syncthreads();
    if (!last_block) return;
    __threadfence();
    if (half) {
        for (int e = threadIdx.x; e < m * 8; e += SK_THREADS) {
            int tok = e / 8, col = o0 + e % 8;
            if (col >= half) continue;
            float vg = 0.0f, vu = 0.0f;
#pragma unroll 8
            for (int s = 0; s < ksplit; s++) {
                const float *ps = &part[((int64_t)s * m + tok) * n];
                vg += __ldcg(ps + col), vu += __ldcg(ps + half + col);
            }
            const float sc = normed ? inv_row[tok] : 1.0f;
            sk_store_gated(C, ldc, bias, half, tok, col, vg * sc, vu * sc, alpha);
        }
    }
    for (int e = threadIdx.x; e < (half ? 0 : items); e += SK_THREADS) {
        int tok = e / SK_ROWS, r = e % SK_ROWS, col = r0 + r;
        if (col >= n) continue;
        float v = 0.0f;
#pragma unroll 8 /* the loads in flight together, not a chain of round trips */
        for (int s = 0; s < ksplit; s++) v += __ldcg(&part[((int64_t)s * m + tok) * n + col]);
        sk_store(C, ldc, bias, res, ldr, tok, col, normed ? v * inv_row[tok] : v, alpha, act);
    }
    if (threadIdx.x == 0) counters[blockIdx.x] = 0; /* ready for the next launch */
}

int vgc_skinny_fits(const vg_gemm_args *a)
{
    int ab16 = a->dtype_ab == VG_DTYPE_BF16 || a->dtype_ab == VG_DTYPE_F16;
    /* k below 2^30: both kernels count k in int, their chunk bounds a few stages past it */
    return ab16 && a->m >= 1 && a->m <= VGC_SKINNY_MAX_M &&
           (a->dtype_c == a->dtype_ab || a->dtype_c == VG_DTYPE_F32) && a->k % 8 == 0 && a->k < (1 << 30) &&
           a->lda % 8 == 0 && a->ldb % 8 == 0 &&
           ((uintptr_t)a->a | (uintptr_t)a->b | (uintptr_t)a->norm_w) % 16 == 0;
}

/* Warps a block has: 8 for a wide configuration, which only one 8-row activation tile takes. */
static int sk_warps(const vg_gemm_args *a, int wide) { return wide && a->m <= 8 ? 8 : 4; }

vgc_skinny_cfg vgc_skinny_split(const vg_gemm_args *a, int sms, double scale, int wide, size_t ws_bytes,
                                int ncounters)
{
    const int warps = sk_warps(a, wide);
    int64_t groups = (a->n + SK_ROWS - 1) / SK_ROWS, chunks = (a->k + SK_CHUNK - 1) / SK_CHUNK;
    int64_t want = (16 * (int64_t)sms / warps + groups - 1) / groups; /* ~16 warps per SM */
    int64_t ks = (int64_t)((double)want * scale + 0.5);
    int64_t most = chunks / (2 * warps); /* two chunks per warp at least */
    if (ks > most) ks = most;
    if (ks > 1 && (groups > ncounters || (size_t)ks * (size_t)a->m * (size_t)a->n * sizeof(float) > ws_bytes))
        ks = 1;
    vgc_skinny_cfg c = {ks < 1 ? 1 : (int)ks, warps == 8, 0};
    return c;
}

vgc_skinny_cfg vgc_skinny_cluster(const vg_gemm_args *a, int nb, int wide)
{
    const int warps = sk_warps(a, wide);
    const int64_t chunks = (a->k + SK_CHUNK - 1) / SK_CHUNK;
    vgc_skinny_cfg c = {nb, warps == 8, 1};
    if (nb < 2 || chunks < (int64_t)nb * warps) c.ksplit = 0; /* a chunk for each warp at least */
    return c;
}

int vgc_skinny_cluster_max(const vg_bk_device *dev)
{
    /* its two largest blocks: 64 rows of activations (the most shared memory, static) and 8 warps */
    const int rows64 = vgc_cluster_max(dev, k_gemm_skinny<vgc_bf16, vgc_bf16, 8, 4>, 4 * 32, 0, 1);
    const int wide = vgc_cluster_max(dev, k_gemm_skinny<vgc_bf16, vgc_bf16, 1, 8>, 8 * 32, 0, 1);
    return rows64 < wide ? rows64 : wide;
}

template <typename T, typename TC, int MT, int W>
static void sk_launch(vg_bk_stream *s, const vg_gemm_args *a, vgc_skinny_cfg c, float *ws, unsigned *counters)
{
    const int ksplit = c.ksplit;
    int half = a->gate == VG_GEMM_GATE_SILU ? (int)(a->n / 2) : 0;
    /* gated: 8 outputs a block, as many blocks as 16 weight rows ungated (n = 2·half) */
    unsigned groups = (unsigned)(half ? (half + SK_ROWS / 2 - 1) / (SK_ROWS / 2) : (a->n + SK_ROWS - 1) / SK_ROWS);
    dim3 grid(groups, (unsigned)ksplit);
#define SK_ARGS (const T *)a->a, a->lda, (const T *)a->b, a->ldb, (TC *)a->c, a->ldc, (const T *)a->bias, \
                (const TC *)a->residual, a->ldr, (int)a->m, (int)a->n, (int)a->k, a->alpha, a->act, half, \
                (int)vgc_gemm_normed(a), (const T *)a->norm_w, a->norm_eps, ksplit
    if (c.cluster && ksplit > 1)
        vgc_launch_cluster(s, k_gemm_skinny<T, TC, MT, W>, grid, dim3(1, (unsigned)ksplit), 32 * W, 0, SK_ARGS,
                           (float *)nullptr, (unsigned *)nullptr, 1);
    else
        vgc_launch(s, k_gemm_skinny<T, TC, MT, W>, grid, 32 * W, 0, SK_ARGS, ws, counters, 0);
#undef SK_ARGS
}

template <typename T, typename TC>
static void sk_dispatch(vg_bk_stream *s, const vg_gemm_args *a, vgc_skinny_cfg c, float *ws, unsigned *counters)
{
    if (a->m <= 8 && c.wide) sk_launch<T, TC, 1, 8>(s, a, c, ws, counters);
    else if (a->m <= 8) sk_launch<T, TC, 1, 4>(s, a, c, ws, counters);
    else if (a->m <= 16) sk_launch<T, TC, 2, 4>(s, a, c, ws, counters);
    else if (a->m <= 32) sk_launch<T, TC, 4, 4>(s, a, c, ws, counters);
    else sk_launch<T, TC, 8, 4>(s, a, c, ws, counters);
}

vg_status vgc_gemm_skinny(vg_bk_stream *s, const vg_gemm_args *a, vgc_skinny_cfg c, float *ws, unsigned *counters)
{
    if (c.panel > 0) return vgc_gemm_panel(s, a, c);
    if (a->dtype_ab == VG_DTYPE_BF16) {
        if (a->dtype_c == VG_DTYPE_F32) sk_dispatch<vgc_bf16, float>(s, a, c, ws, counters);
        else sk_dispatch<vgc_bf16, vgc_bf16>(s, a, c, ws, counters);
    } else {
        if (a->dtype_c == VG_DTYPE_F32) sk_dispatch<vgc_f16, float>(s, a, c, ws, counters);
        else sk_dispatch<vgc_f16, vgc_f16>(s, a, c, ws, counters);
    }
    VGC_CHECK_LAUNCH("gemm (skinny)");
    return VG_OK;
}
