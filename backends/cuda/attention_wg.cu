/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor-core attention on Hopper (sm_90a) for BF16 and F16, warp-specialised as in
 * flash-attention 3: one warp copies, two warpgroups compute.
 *
 * The math is attention_tc.cu's (an online softmax over key tiles of 64, segment bounds from
 * cu_seqlens applied per row; the masking, softmax and output code is shared through
 * attention_tc.cuh), with S = Q·Kᵀ and O += P·V as warpgroup MMAs (wgmma.cuh): Q, K and V are
 * read by the tensor cores straight from shared memory, and each consumer warpgroup overlaps
 * its softmax of one key tile with its MMAs of the neighbouring tiles.
 *
 * What makes it faster than a kernel whose every thread both copies and computes:
 *  - the copies are the copy engine's. A first kernel (k_attention_pack) rewrites q, k and v of
 *    every head into the stream's workspace "chunk-major": plane (which, head, 8-element chunk c
 *    of the head dim) holds that chunk of every row, 16 bytes a row. Then the rows [r, r + 64)
 *    of one chunk are 1 KB of contiguous memory, and a key tile is one bulk copy per chunk, issued
 *    by one thread, at any row r (segments start anywhere). In shared memory a tile lands as
 *    [chunk][row][8 elements], which is wgmma's canonical layout without swizzle: each 8×8 core
 *    matrix is 128 contiguous bytes. The repacking costs one read and one write of q, k and v,
 *    about a twentieth of a full-attention call at 4096 rows;
 *  - barriers are per slot, not per block: the producer waits until a slot is free and counts
 *    its bytes on the slot's "full" barrier; consumers wait for those bytes and release the slot
 *    when the MMAs that read it are done. No consumer waits for another;
 *  - registers go where the work is: the producer warpgroup gives its registers back
 *    (setmaxnreg), so the consumers can hold two score tiles and the output at 240 a thread.
 * Windows (attention_rotary) stay with attention_tc.cu: their blocks see a tile or two of keys. */
#include "wgmma.cuh"

#define WG_BK 64          /* keys per K/V tile */
#define WG_STAGES 3       /* K/V tiles in flight */
#define WG_CONSUMERS 2    /* warpgroups computing, 64 query rows each */
#define WG_BQ (64 * WG_CONSUMERS)
#define WG_THREADS (128 * (WG_CONSUMERS + 1))
#define WG_PACK_ROWS 64   /* rows per block of k_attention_pack */

/* Head dims with a wgmma shape for P·V (wg_rs). */
#define WG_HEAD_DIMS(X) X(64) X(72) X(80) X(96) X(128)

/* 8-element chunks of the head dim padded to 16 (the k of one MMA step). */
__host__ __device__ constexpr int wg_chunks(int hd) { return (hd + 15) / 16 * 2; }

/* Rows of each packed plane: every tile a block may start, at most 64 past the last row a
 * segment reaches, and every Q tile lies inside; the rows past `rows` are zeros. */
static inline int64_t wg_plane_rows(int rows) { return ((int64_t)rows + 63) / 64 * 64 + WG_BK; }

/* Shared memory: the Q tile, then the K slots and the V slots (16-byte aligned), then the
 * barriers: Q full, then full and empty for each K and each V slot. */
template <int HD>
__host__ __device__ constexpr size_t wg_tile_bytes(int rows) { return (size_t)wg_chunks(HD) * rows * 16; }
template <int HD>
__host__ __device__ constexpr size_t wg_smem_bytes()
{
    return wg_tile_bytes<HD>(WG_BQ) + 2 * WG_STAGES * wg_tile_bytes<HD>(WG_BK) + (1 + 4 * WG_STAGES) * 8;
}

/* qkv (rows of [q | k | v], each heads·hd) into the packed planes: plane p = (which·heads + h)·CH
 * + c holds 16 bytes for each of `prows` rows, zeros past `rows` and past the head dim. One
 * block packs 64 rows of one (which, head): consecutive threads write consecutive rows of one
 * plane, and the rows' other chunks, read by the next threads, come from L1. */
template <typename T, int HD>
__global__ void __launch_bounds__(256) k_attention_pack(const T *qkv, int64_t ld_qkv, uint4 *packed,
                                                        int64_t prows, int rows, int heads)
{
    vgk_grid_sync();
    constexpr int CH = wg_chunks(HD);
    const int qh = blockIdx.y, which = qh / heads, h = qh % heads;
    const int64_t r0 = (int64_t)blockIdx.x * WG_PACK_ROWS;
    const T *src = qkv + (int64_t)which * heads * HD + (int64_t)h * HD;
    for (int i = threadIdx.x; i < CH * WG_PACK_ROWS; i += blockDim.x) {
        const int c = i / WG_PACK_ROWS;
        const int64_t r = r0 + i % WG_PACK_ROWS;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (r < rows && c * 8 < HD) v = __ldg((const uint4 *)(src + r * ld_qkv + c * 8));
        packed[((int64_t)qh * CH + c) * prows + r] = v;
    }
}

/* WG_BQ query rows of one head (blockIdx.y). Warpgroup 0 is the producer (one thread issues
 * the copies), warpgroups 1.. are the consumers. */
template <typename T, int HD>
__global__ void __launch_bounds__(WG_THREADS, 1)
k_attention_wg(const uint4 *packed, int64_t prows, T *out, int64_t ld_out, int rows, int heads,
               const int32_t *cu, int nseg, float scale_log2)
{
    vgk_grid_sync();
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) /* elsewhere never launched (vgc_attention_wg_prepare) */
    constexpr int CH = wg_chunks(HD), KS = CH / 2; /* k-steps of Q·Kᵀ */
    constexpr int NB = WG_BK / 8;                   /* n-tiles of 8 keys in a score tile */
    constexpr int NT = HD / 8;                      /* n-tiles of the output */
    constexpr uint32_t QB = wg_tile_bytes<HD>(WG_BQ), TB = wg_tile_bytes<HD>(WG_BK);
    extern __shared__ __align__(128) unsigned char smem[];
    unsigned char *qs = smem, *ks = qs + QB, *vs = ks + WG_STAGES * TB;
    uint64_t *full_q = (uint64_t *)(vs + WG_STAGES * TB), *full_k = full_q + 1, *empty_k = full_k + WG_STAGES,
             *full_v = empty_k + WG_STAGES, *empty_v = full_v + WG_STAGES;

    const int h = blockIdx.y, row0 = blockIdx.x * WG_BQ, last = min(row0 + WG_BQ, rows) - 1;
    if (threadIdx.x == 0) {
        mbar_init(full_q, 1);
        for (int s = 0; s < WG_STAGES; s++) {
            mbar_init(&full_k[s], 1), mbar_init(&full_v[s], 1);
            mbar_init(&empty_k[s], 4 * WG_CONSUMERS), mbar_init(&empty_v[s], 4 * WG_CONSUMERS); /* a warp each */
        }
        mbar_fence_init();
    }
    __syncthreads();
    const int seg0 = segment_of_warp(cu, nseg, row0), seg1 = segment_of_warp(cu, nseg, last);
    const int kbeg = cu[seg0], kend = cu[seg1 + 1];
    const int ntiles = kbeg < kend ? (kend - kbeg + WG_BK - 1) / WG_BK : 0;
    const int wg = threadIdx.x / 128;

    if (wg == 0) { /* the producer */
        regs_release<24>();
        if (threadIdx.x != 0) return;
        const uint4 *pq = packed + (int64_t)h * CH * prows, *pk = pq + (int64_t)heads * CH * prows,
                    *pv = pk + (int64_t)heads * CH * prows;
        mbar_arrive_expect(full_q, QB);
        for (int c = 0; c < CH; c++) bulk_load(qs + c * WG_BQ * 16, pq + c * prows + row0, WG_BQ * 16, full_q);
        for (int j = 0; j < ntiles; j++) {
            const int s = j % WG_STAGES;
            const uint32_t free_parity = ((j / WG_STAGES) & 1) ^ 1;
            const int64_t k0 = kbeg + (int64_t)j * WG_BK;
            mbar_wait(&empty_k[s], free_parity);
            mbar_arrive_expect(&full_k[s], TB);
            for (int c = 0; c < CH; c++) bulk_load(ks + s * TB + c * WG_BK * 16, pk + c * prows + k0, WG_BK * 16, &full_k[s]);
            mbar_wait(&empty_v[s], free_parity);
            mbar_arrive_expect(&full_v[s], TB);
            for (int c = 0; c < CH; c++) bulk_load(vs + s * TB + c * WG_BK * 16, pv + c * prows + k0, WG_BK * 16, &full_v[s]);
        }
        return;
    }

    regs_claim<240>();
    const int cw = wg - 1, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
    const int r0 = row0 + 64 * cw + 16 * warp; /* this warp's 16 rows */
    int r_lo[2], r_hi[2];
    row_keys(cu, seg0, seg1, rows, r0, r_lo, r_hi);
    float sa[NB][4], sb[NB][4], o[NT][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < NB; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) sa[n][e] = sb[n][e] = 0.0f;
#pragma unroll
    for (int n = 0; n < NT; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    float(&of)[NT * 4] = reinterpret_cast<float(&)[NT * 4]>(o);
    /* Chunk-major tiles: core matrices follow each other 16·rows bytes apart along the head dim
     * (a k-step is two chunks) and 128 bytes apart along the rows. */
    const uint64_t dq = wg_desc_kmajor(qs + 64 * cw * 16, WG_BQ * 16, 128);
    auto release = [&](uint64_t *bar) {
        if (lane == 0) mbar_arrive(bar);
    };
    auto scores = [&](float (&sc)[NB][4], int j) { /* wait for K of tile j, issue sc = Q·Kᵀ (uncommitted) */
        mbar_wait(&full_k[j % WG_STAGES], (j / WG_STAGES) & 1);
        const uint64_t dk = wg_desc_kmajor(ks + j % WG_STAGES * TB, WG_BK * 16, 128);
        wg_fence();
#pragma unroll
        for (int k = 0; k < KS; k++)
            wg_ss_n64<T>(reinterpret_cast<float(&)[NB * 4]>(sc), dq + k * (2 * WG_BQ * 16 >> 4),
                         dk + k * (2 * WG_BK * 16 >> 4), k);
    };
    /* The scores of tile j as P in registers (pf), with the factor corr by which the output must
     * be rescaled before its P·V is added: masking, online softmax. */
    auto softmax = [&](float (&sc)[NB][4], int j, uint32_t (&pf)[NB / 2][4], float (&corr)[2]) {
        const int k0 = kbeg + j * WG_BK;
        if (__all_sync(0xffffffffu, keys_inside(k0, WG_BK, r_lo, r_hi))) {
            softmax_scores<T>(sc, m, l, pf, corr, scale_log2); /* reads sc only */
            return;
        }
        float t[NB][4]; /* masked in a copy: sc are a wgmma's accumulators (see step) */
#pragma unroll
        for (int n = 0; n < NB; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) t[n][e] = sc[n][e];
        mask_keys(t, k0, r_lo, r_hi);
        softmax_scores<T>(t, m, l, pf, corr, scale_log2);
    };
    uint32_t pa[NB / 2][4], pb[NB / 2][4];
    float corr[2];
    mbar_wait(full_q, 0);
    if (ntiles > 0) {
        scores(sa, 0);
        wg_commit();
        wg_wait<0>();
        wg_fence_regs(reinterpret_cast<float(&)[NB * 4]>(sa));
        release(&empty_k[0]);
        softmax(sa, 0, pa, corr);
    }

    /* Tile j, its P in pf: the scores of tile j + 1 and this P·V run on the tensor cores while
     * the softmax of tile j + 1 runs, as in flash-attention 3. Nothing a wgmma in flight reads
     * or accumulates into is written meanwhile: the next P goes to the other buffer, and the
     * output is rescaled once its P·V is done (where ptxas cannot prove that, it serialises
     * every wgmma). Every step commits two groups, the first empty for the last tile. */
    auto step = [&](int j, float (&sn)[NB][4], uint32_t (&pf)[NB / 2][4], uint32_t (&pn)[NB / 2][4]) {
        const bool more = j + 1 < ntiles;
        if (more) scores(sn, j + 1);
        wg_commit();
        const int s = j % WG_STAGES;
        mbar_wait(&full_v[s], (j / WG_STAGES) & 1);
        wg_fence();
        const unsigned char *vt = vs + s * TB;
#pragma unroll
        for (int k = 0; k < NB / 2; k++) /* keys [16k, 16k + 16): V MN-major, chunks 16·64 bytes apart */
            wg_rs<T, HD>(of, pf[k], wg_desc_mnmajor(vt + 2 * k * 128, WG_BK * 16, 128), 1);
        wg_commit();
        wg_wait<1>(); /* the scores of tile j + 1 are done; this P·V may still run */
        wg_fence_regs(reinterpret_cast<float(&)[NB * 4]>(sn));
        if (more) {
            release(&empty_k[(j + 1) % WG_STAGES]);
            softmax(sn, j + 1, pn, corr);
        }
        wg_wait<0>();
        wg_fence_regs(of);
        release(&empty_v[s]);
        if (more) rescale_rows(o, corr);
    };
    for (int j = 0; j < ntiles; j += 2) { /* two steps a turn: the buffers swap roles */
        step(j, sb, pa, pb);
        if (j + 1 < ntiles) step(j + 1, sa, pb, pa);
    }
    wg_wait<0>();
    wg_fence_regs(of);
    store_rows<T, HD>(out, ld_out, h, rows, r0, o, l);
#endif
}

template <typename T, int HD>
static void wg_launch(vg_bk_stream *s, const vgc_attention_call *c, uint4 *packed, int64_t prows)
{
    dim3 pack_grid((unsigned)(prows / WG_PACK_ROWS), (unsigned)(3 * c->heads));
    vgc_launch(s, k_attention_pack<T, HD>, pack_grid, 256, 0, (const T *)c->qkv, c->ld_qkv, packed, prows,
               c->rows, c->heads);
    dim3 grid((unsigned)((c->rows + WG_BQ - 1) / WG_BQ), (unsigned)c->heads);
    vgc_launch(s, k_attention_wg<T, HD>, grid, WG_THREADS, wg_smem_bytes<HD>(), (const uint4 *)packed, prows,
               (T *)c->out, c->ld_out, c->rows, c->heads, c->cu, c->nseg, c->scale * 1.4426950408889634f);
}

template <typename T, int HD>
static cudaError_t wg_prepare_one()
{
    return cudaFuncSetAttribute(k_attention_wg<T, HD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)wg_smem_bytes<HD>());
}

/* Whether the loaded binary holds sm_90a code: the kernels above are empty in every other
 * compilation (sm_80, or PTX JIT-compiled for a newer GPU), so this is asked of the GPU. */
__global__ void k_wgmma_compiled(int *flag)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    *flag = 1;
#else
    *flag = 0;
#endif
}

vg_status vgc_attention_wg_prepare(vg_bk_device *dev)
{
    dev->wgmma_attention = 0;
    if (dev->prop.major != 9 || dev->wgmma_attention_off) return VG_OK;
    int *flag = NULL, got = 0;
    VGC_CHECK(cudaMalloc(&flag, sizeof *flag));
    k_wgmma_compiled<<<1, 1>>>(flag);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpy(&got, flag, sizeof got, cudaMemcpyDeviceToHost);
    cudaFree(flag);
    VGC_CHECK(e);
    if (!got) {
        vgc_host->log(VG_LOG_DEBUG, "cuda: no sm_90a code in this build: attention uses mma.sync");
        return VG_OK;
    }
#define PREP(D)                                  \
    VGC_CHECK((wg_prepare_one<vgc_bf16, D>()));   \
    VGC_CHECK((wg_prepare_one<vgc_f16, D>()));
    WG_HEAD_DIMS(PREP)
#undef PREP
    dev->wgmma_attention = 1;
    return VG_OK;
}

/* Returns VG_ERR_UNSUPPORTED (no message) when the call is not covered: not Hopper, a rotary
 * call, a dtype or head dim without a kernel, or packed planes that do not fit the stream's
 * workspace (its 32 MiB hold about 4,300 rows of 16 heads of 80). */
vg_status vgc_attention_wg(vg_bk_stream *s, const vgc_attention_call *c)
{
    if (!s->dev->wgmma_attention || c->pos || (c->t != VG_DTYPE_BF16 && c->t != VG_DTYPE_F16) ||
        c->ld_qkv % 8 || c->ld_out % 2 || !(c->scale > 0.0f) || ((uintptr_t)c->qkv % 16) ||
        ((uintptr_t)c->out % 4))
        return VG_ERR_UNSUPPORTED;
    const int64_t prows = wg_plane_rows(c->rows);
    const size_t need = (size_t)3 * (size_t)c->heads * (size_t)wg_chunks(c->hd) * (size_t)prows * 16;
    if (need > s->gemm_workspace_bytes) {
        vgc_host->log(VG_LOG_DEBUG, "cuda: attention: %lld rows of %d heads need %zu bytes of packed "
                      "q/k/v, more than the workspace's %zu: mma.sync kernel", (long long)c->rows, c->heads,
                      need, s->gemm_workspace_bytes);
        return VG_ERR_UNSUPPORTED;
    }
    uint4 *packed = (uint4 *)s->gemm_workspace;
#define WG_CASE(D)                                                                                    \
    case D:                                                                                           \
        if (c->t == VG_DTYPE_BF16) wg_launch<vgc_bf16, D>(s, c, packed, prows);                       \
        else wg_launch<vgc_f16, D>(s, c, packed, prows);                                              \
        break;
    switch (c->hd) {
        WG_HEAD_DIMS(WG_CASE)
    default:
        return VG_ERR_UNSUPPORTED;
    }
#undef WG_CASE
    VGC_CHECK_LAUNCH("attention_wg");
    return VG_OK;
}
