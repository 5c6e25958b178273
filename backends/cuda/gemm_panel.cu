/* SPDX-License-Identifier: Apache-2.0 */
/* The panel GEMM: vg's decode GEMM for 9 to 64 rows of activations, C[m,n] = act(alpha·A·Bᵀ +
 * bias) + residual (or the gated product, or A rmsnorm'd on load, as the skinny kernel does).
 *
 * Why a second kernel: the skinny kernel's block owns 16 weight rows and its warps split k, so
 * every block reads all of A's rows for its k range from L2; at 64 rows that is four bytes of
 * activations for each byte of weights, and its registers hold eight activation tiles. Here a
 * block of 4 warps owns 64 weight rows (16 a warp) and walks k in stages: each stage's activation
 * tile is copied once into shared memory (cp.async) and read by all four warps, a quarter of the
 * skinny kernel's traffic at 64 rows; each lane's weights go to shared memory too, in a slot only
 * that lane reads back, so the pipeline's depth costs no registers. A stage is four 32-wide k
 * chunks, shared out among 2 or 4 warps for each 16 rows (WK), so an SM has 8 or 16 warps to hide
 * the tensor cores' and shared memory's latency (with one warp a scheduler, each stage's chain of
 * loads and mma.sync steps ran end to end). Six or eight stages are in flight. Before the kernel
 * waits for the one before it, it requests the weights of all but one stage: copied into shared
 * memory where the caller said no op of the stream writes B (vg_gemm_args.b_static: a model's
 * weights), under a programmatic launch while the previous kernel finishes; prefetched into L2
 * otherwise, as B may be that kernel's output. Where the weight rows are too few blocks to
 * fill the GPU, the blocks of a cluster split k and add each other's sums through distributed
 * shared memory. */
#include <cooperative_groups.h>

#include "cluster.cuh"
#include "cp_async.cuh"
#include "gemm_own.cuh"
#include "gemm_skinny.cuh"

#define PN_WARPS 4 /* warps along the weight rows */
#define PN_ROWS (16 * PN_WARPS) /* weight rows (output columns) per block */
#define PN_CHUNKS 4 /* 32-wide k chunks a stage */
#define PN_AROW (PN_CHUNKS * 64 + 64)

/* A stage in shared memory: the activation tile, 8·MT rows of PN_CHUNKS·64 bytes each padded by 64
 * (rows 2i and 2i + 1 fall in different halves of the banks, as one 16-byte load phase reads
 * them), then each row tile's weights, 1 KB a chunk: [chunk][row g or g + 8][lane] of 16 bytes. */
__host__ __device__ constexpr int pn_stage_bytes(int mt) { return 8 * mt * PN_AROW + PN_WARPS * PN_CHUNKS * 1024; }
/* Stages in flight: 8, or 6 where 64 rows of activations make a stage large (216 KiB, 221,184
 * bytes, of sm_90's 227 KiB). A block's stream of weights waits on memory's latency with nothing
 * else to do, so the bytes in flight set its rate. */
__host__ __device__ constexpr int pn_stages(int mt) { return mt == 8 ? 6 : 8; }

/* WK: warps sharing a row tile's chunks (warp w: row tile w % PN_WARPS, chunks w / PN_WARPS + i·WK). */
template <typename T, typename TC, int MT, int WK>
__global__ void __launch_bounds__(32 * PN_WARPS * WK)
k_gemm_panel(const T *A, int64_t lda, const T *B, int64_t ldb, TC *C, int64_t ldc, const T *bias,
             const TC *res, int64_t ldr, int m, int n, int k, float alpha, vg_activation act, int half,
             int normed, const T *norm_w, float norm_eps, int b_early)
{
    constexpr int THREADS = 32 * PN_WARPS * WK, stage = pn_stage_bytes(MT), PN_STAGES = pn_stages(MT);
    extern __shared__ __align__(16) unsigned char pn_smem[];
    __shared__ float inv_row[8 * MT]; /* normed: each row's 1/rms */
    const int warp = threadIdx.x / 32, wn = warp % PN_WARPS, wk = warp / PN_WARPS;
    const int lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4, ksplit = (int)gridDim.y;
    /* this warp's 16 weight rows: gated, 8 gate rows and their 8 up rows (vg_ops.h's halves) */
    const int tile = (int)blockIdx.x * PN_WARPS + wn, o0 = tile * 8, r0 = tile * 16;
    auto wrow = [&](int r) { return half ? (r < 8 ? o0 + r : half + o0 + r - 8) : r0 + r; };
    auto wvalid = [&](int r) { return half ? o0 + (r & 7) < half : r0 + r < n; };
    const bool v0 = wvalid(g), v1 = wvalid(g + 8);
    const T *w0 = B + (int64_t)(v0 ? wrow(g) : 0) * ldb + tq * 8;
    const T *w1 = B + (int64_t)(v1 ? wrow(g + 8) : 0) * ldb + tq * 8;
    /* this block's chunks [c0, c1); the stage past c1 or k is zero-filled, so it adds nothing */
    const int nchunks = (k + 31) / 32, per = (nchunks + ksplit - 1) / ksplit;
    const int c0 = (int)blockIdx.y * per, c1 = c0 + per < nchunks ? c0 + per : nchunks;
    const int nstages = c1 > c0 ? (c1 - c0 + PN_CHUNKS - 1) / PN_CHUNKS : 0;

    auto load_weights = [&](int st) { /* the chunks this warp computes */
        unsigned char *buf = pn_smem + (st % PN_STAGES) * stage + 8 * MT * PN_AROW + wn * PN_CHUNKS * 1024;
#pragma unroll
        for (int c = wk; c < PN_CHUNKS; c += WK) {
            const int ch = c0 + st * PN_CHUNKS + c;
            const bool in = ch < c1 && ch * 32 + tq * 8 < k;
            cp_async16(buf + (c * 64 + lane) * 16, in && v0 ? w0 + ch * 32 : B, in && v0 ? 16 : 0);
            cp_async16(buf + (c * 64 + 32 + lane) * 16, in && v1 ? w1 + ch * 32 : B, in && v1 ? 16 : 0);
        }
    };
    auto prefetch_weights = [&](int st) { /* into L2, a lane a row's 64 bytes */
#pragma unroll
        for (int c = wk; c < PN_CHUNKS; c += WK) {
            const int ch = c0 + st * PN_CHUNKS + c;
            if (tq != 0 || ch >= c1) continue;
            if (v0) sk_prefetch_l2(w0 + ch * 32);
            if (v1) sk_prefetch_l2(w1 + ch * 32);
        }
    };
    auto load_acts = [&](int st) {
        unsigned char *buf = pn_smem + (st % PN_STAGES) * stage;
        constexpr int per_row = PN_CHUNKS * 4, pieces = 8 * MT * per_row; /* 16-byte pieces */
        const int kb = (c0 + st * PN_CHUNKS) * 32;
#pragma unroll
        for (int p = threadIdx.x; p < pieces; p += THREADS) {
            const int row = p / per_row, q = p % per_row, kk = kb + q * 8;
            const bool in = row < m && kk < c1 * 32 && kk < k;
            cp_async16(buf + row * PN_AROW + q * 16, in ? A + (int64_t)row * lda + kk : A, in ? 16 : 0);
        }
    };

    /* a model's weights do not depend on the previous kernel: requested before waiting for it */
    for (int st = 0; st < PN_STAGES - 1 && st < nstages; st++) {
        if (b_early) load_weights(st);
        else prefetch_weights(st);
    }
    vgk_grid_sync(); /* the activations (and residual, and maybe B) come from the previous kernel */
    for (int st = 0; st < PN_STAGES - 1; st++) { /* a group a stage, empty or not (the first also
                                                   * holds the early weights) */
        if (st < nstages) {
            if (!b_early) load_weights(st);
            load_acts(st);
        }
        cp_async_commit();
    }
    if (normed) sk_rows_inv_rms<T>(A, lda, m, k, norm_eps, inv_row, warp, PN_WARPS * WK, lane);

    float acc[MT][4];
#pragma unroll
    for (int j = 0; j < MT; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    for (int st = 0; st < nstages; st++) {
        cp_async_wait<PN_STAGES - 2>(); /* this thread's copies of stage st are done */
        __syncthreads();          /* everyone's are, and stage st - 1's buffer is free again */
        if (st + PN_STAGES - 1 < nstages) {
            load_weights(st + PN_STAGES - 1);
            load_acts(st + PN_STAGES - 1);
        }
        cp_async_commit();
        const unsigned char *buf = pn_smem + (st % PN_STAGES) * stage;
        const uint4 *wl = reinterpret_cast<const uint4 *>(buf + 8 * MT * PN_AROW + wn * PN_CHUNKS * 1024);
#pragma unroll
        for (int c = wk; c < PN_CHUNKS; c += WK) {
            const uint4 a0 = wl[c * 64 + lane], a1 = wl[c * 64 + 32 + lane];
            uint4 nv = make_uint4(0, 0, 0, 0);
            if (norm_w) {
                const int kk = (c0 + st * PN_CHUNKS + c) * 32 + tq * 8;
                nv = __ldg(reinterpret_cast<const uint4 *>(norm_w + (kk < k ? kk : 0)));
            }
#pragma unroll
            for (int j = 0; j < MT; j++) {
                uint4 xv = *reinterpret_cast<const uint4 *>(buf + (8 * j + g) * PN_AROW + c * 64 + tq * 16);
                if (norm_w) xv = sk_scale<T>(xv, nv);
                sk_mma<T>(acc[j], a0.x, a1.x, a0.y, a1.y, xv.x, xv.y);
                sk_mma<T>(acc[j], a0.z, a1.z, a0.w, a1.w, xv.z, xv.w);
            }
        }
    }
    cp_async_wait<0>();
    __syncthreads(); /* the stages are free: their bytes hold the sums now */

    /* accumulator of tile j: (weight row g, rows 8j + 2tq and +1) and (weight row g + 8, the same);
     * the WK warps of a row tile add theirs into red[0] */
    float(*red)[8 * MT][PN_ROWS + 1] = reinterpret_cast<float(*)[8 * MT][PN_ROWS + 1]>(pn_smem);
#pragma unroll
    for (int j = 0; j < MT; j++) {
        red[wk][8 * j + 2 * tq][16 * wn + g] = acc[j][0];
        red[wk][8 * j + 2 * tq + 1][16 * wn + g] = acc[j][1];
        red[wk][8 * j + 2 * tq][16 * wn + g + 8] = acc[j][2];
        red[wk][8 * j + 2 * tq + 1][16 * wn + g + 8] = acc[j][3];
    }
    __syncthreads();
    for (int e = threadIdx.x; e < m * PN_ROWS; e += THREADS) {
        const int tok = e / PN_ROWS, r = e % PN_ROWS;
        float v = red[0][tok][r];
#pragma unroll
        for (int w = 1; w < WK; w++) v += red[w][tok][r];
        red[0][tok][r] = v; /* (tok, r) is this thread's alone */
    }
    __syncthreads();
    /* the epilogue: with a split, block b of the cluster takes outputs b·THREADS + t, ..., adding
     * the blocks' sums in rank order; the last cluster barrier keeps every block's shared memory
     * until the others have read it */
    int nb = 1, first = (int)threadIdx.x;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    if (ksplit > 1) {
        cg::this_cluster().sync();
        nb = (int)cg::this_cluster().num_blocks();
        first += (int)cg::this_cluster().block_rank() * THREADS;
    }
#endif
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 900
    if (ksplit > 1) __trap(); /* never launched: vgc_panel_cluster_max allows splits only for sm_90 code */
#endif
    auto sum = [&](int tok, int r) {
        float v = red[0][tok][r];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        if (nb > 1) {
            float part[VGC_CLUSTER_MAX];
            v = 0.0f;
#pragma unroll
            for (int b = 0; b < VGC_CLUSTER_MAX; b++) /* all loads issued before the first add */
                part[b] = b < nb ? *cooperative_groups::this_cluster().map_shared_rank(&red[0][tok][r], b) : 0.0f;
#pragma unroll
            for (int b = 0; b < VGC_CLUSTER_MAX; b++) v += part[b];
        }
#endif
        return v;
    };
    const int step = nb * THREADS;
    if (half) {
        for (int e = first; e < m * 8 * PN_WARPS; e += step) { /* 8 gated outputs a row tile */
            const int tok = e / (8 * PN_WARPS), q = e % (8 * PN_WARPS), col = (int)blockIdx.x * 8 * PN_WARPS + q;
            if (col >= half) continue;
            const int rg = 16 * (q / 8) + q % 8;
            const float sc = normed ? inv_row[tok] : 1.0f;
            sk_store_gated(C, ldc, bias, half, tok, col, sum(tok, rg) * sc, sum(tok, rg + 8) * sc, alpha);
        }
    } else {
        for (int e = first; e < m * PN_ROWS; e += step) {
            const int tok = e / PN_ROWS, r = e % PN_ROWS, col = (int)blockIdx.x * PN_ROWS + r;
            if (col >= n) continue;
            sk_store(C, ldc, bias, res, ldr, tok, col, normed ? sum(tok, r) * inv_row[tok] : sum(tok, r), alpha, act);
        }
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (ksplit > 1) cg::this_cluster().sync();
#endif
}

vgc_skinny_cfg vgc_panel_cfg(const vg_gemm_args *a, int ksplit, int wk, int cluster_max)
{
    vgc_skinny_cfg c = {ksplit, 0, 0, wk};
    const int64_t nchunks = (a->k + 31) / 32;
    if ((wk != 2 && wk != 4) || a->m < VGC_PANEL_MIN_M || a->m > VGC_SKINNY_MAX_M || ksplit < 1 ||
        ksplit > cluster_max || nchunks < ksplit)
        c.ksplit = 0;
    return c;
}

int vgc_panel_split(const vg_gemm_args *a, int sms, int cluster_max)
{
    const int64_t per = a->gate == VG_GEMM_GATE_SILU ? PN_ROWS / 2 : PN_ROWS;
    const int64_t outs = a->gate == VG_GEMM_GATE_SILU ? a->n / 2 : a->n;
    const int64_t groups = (outs + per - 1) / per, nchunks = (a->k + 31) / 32;
    int ks = 1;
    while (ks * 2 <= cluster_max && groups * ks * 2 <= (int64_t)sms && ks * 2 <= nchunks) ks *= 2;
    return ks;
}

/* Each instantiation's shared memory: its stages, which also hold the WK warps' sums at the end. */
template <int MT, int WK> constexpr size_t pn_smem_bytes()
{
    static_assert(sizeof(float) * WK * 8 * MT * (PN_ROWS + 1) <= (size_t)pn_stages(MT) * pn_stage_bytes(MT),
                  "the sums fit in the stages");
    return (size_t)pn_stages(MT) * pn_stage_bytes(MT);
}

template <typename T, typename TC> static cudaError_t pn_allow_smem()
{
    cudaError_t e = cudaSuccess;
#define PN_ALLOW(MT, WK)                                                                                        \
    if (e == cudaSuccess)                                                                                       \
        e = cudaFuncSetAttribute(k_gemm_panel<T, TC, MT, WK>, cudaFuncAttributeMaxDynamicSharedMemorySize,      \
                                 (int)pn_smem_bytes<MT, WK>());
    PN_ALLOW(2, 2) PN_ALLOW(4, 2) PN_ALLOW(8, 2) PN_ALLOW(2, 4) PN_ALLOW(4, 4) PN_ALLOW(8, 4)
#undef PN_ALLOW
    return e;
}

int vgc_panel_init(const vg_bk_device *dev)
{
    const size_t most = pn_smem_bytes<8, 4>() + sizeof(float) * 64; /* with its static inv_row */
    cudaError_t e = (size_t)dev->prop.sharedMemPerBlockOptin < most ? cudaErrorInvalidValue : cudaSuccess;
    if (e == cudaSuccess) e = pn_allow_smem<vgc_bf16, vgc_bf16>();
    if (e == cudaSuccess) e = pn_allow_smem<vgc_bf16, float>();
    if (e == cudaSuccess) e = pn_allow_smem<vgc_f16, vgc_f16>();
    if (e == cudaSuccess) e = pn_allow_smem<vgc_f16, float>();
    if (e == cudaSuccess) return 1;
    (void)cudaGetLastError();
    vgc_host->log(VG_LOG_DEBUG, "cuda: the panel GEMM is not used: a block may have %zu bytes of shared memory, "
                  "it takes %zu", (size_t)dev->prop.sharedMemPerBlockOptin, most);
    return 0;
}

int vgc_panel_cluster_max(const vg_bk_device *dev)
{
    return vgc_cluster_max(dev, k_gemm_panel<vgc_bf16, vgc_bf16, 8, 4>, 32 * PN_WARPS * 4, pn_smem_bytes<8, 4>(), 1);
}

template <typename T, typename TC, int MT, int WK>
static void pn_launch(vg_bk_stream *s, const vg_gemm_args *a, int ksplit)
{
    const int half = a->gate == VG_GEMM_GATE_SILU ? (int)(a->n / 2) : 0;
    const unsigned groups = (unsigned)(half ? (half + PN_ROWS / 2 - 1) / (PN_ROWS / 2) : (a->n + PN_ROWS - 1) / PN_ROWS);
    const dim3 grid(groups, (unsigned)ksplit);
    const int threads = 32 * PN_WARPS * WK;
#define PN_ARGS (const T *)a->a, a->lda, (const T *)a->b, a->ldb, (TC *)a->c, a->ldc, (const T *)a->bias, \
                (const TC *)a->residual, a->ldr, (int)a->m, (int)a->n, (int)a->k, a->alpha, a->act, half, \
                (int)vgc_gemm_normed(a), (const T *)a->norm_w, a->norm_eps, vgc_gemm_b_static(a)
    if (ksplit > 1)
        vgc_launch_cluster(s, k_gemm_panel<T, TC, MT, WK>, grid, dim3(1, (unsigned)ksplit), threads,
                           pn_smem_bytes<MT, WK>(), PN_ARGS);
    else
        vgc_launch(s, k_gemm_panel<T, TC, MT, WK>, grid, threads, pn_smem_bytes<MT, WK>(), PN_ARGS);
#undef PN_ARGS
}

template <typename T, typename TC, int WK> static void pn_rows(vg_bk_stream *s, const vg_gemm_args *a, int ksplit)
{
    if (a->m <= 16) pn_launch<T, TC, 2, WK>(s, a, ksplit);
    else if (a->m <= 32) pn_launch<T, TC, 4, WK>(s, a, ksplit);
    else pn_launch<T, TC, 8, WK>(s, a, ksplit);
}

template <typename T, typename TC> static void pn_dispatch(vg_bk_stream *s, const vg_gemm_args *a, vgc_skinny_cfg c)
{
    if (c.panel == 4) pn_rows<T, TC, 4>(s, a, c.ksplit);
    else pn_rows<T, TC, 2>(s, a, c.ksplit);
}

vg_status vgc_gemm_panel(vg_bk_stream *s, const vg_gemm_args *a, vgc_skinny_cfg c)
{
    if (c.ksplit < 1 || a->m < VGC_PANEL_MIN_M || a->m > VGC_SKINNY_MAX_M || (c.panel != 2 && c.panel != 4))
        return VGC_ERR(VG_ERR_INVALID_ARG, "cuda: gemm panel: no configuration for m=%lld (split %d, %d warps a "
                       "row tile)", (long long)a->m, c.ksplit, c.panel);
    if (a->dtype_ab == VG_DTYPE_BF16) {
        if (a->dtype_c == VG_DTYPE_F32) pn_dispatch<vgc_bf16, float>(s, a, c);
        else pn_dispatch<vgc_bf16, vgc_bf16>(s, a, c);
    } else {
        if (a->dtype_c == VG_DTYPE_F32) pn_dispatch<vgc_f16, float>(s, a, c);
        else pn_dispatch<vgc_f16, vgc_f16>(s, a, c);
    }
    VGC_CHECK_LAUNCH("gemm (panel)");
    return VG_OK;
}
