/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor-core attention for BF16 and F16 (mma.sync m16n8k16, fp32 accumulation), the
 * flash-attention-2 scheme: a block of 4 warps owns 64 or 128 query rows of one head, each warp
 * 16 or 32 of them; key/value tiles of 64 rows are staged in shared memory, two stages deep with
 * cp.async so the next tile loads while this one is used (one stage for attention_rotary's
 * short segments, see tc_stages); scores and the output stay in
 * registers, with an online softmax. Segment bounds come from cu_seqlens in device memory and
 * are applied per row as a mask (skipped for tiles inside every row's segment), so one launch
 * serves any segmentation (window or full). With ROPE (attention_rotary), the Q tile and each
 * K tile are rotated in shared memory once they land, before any fragment is read. */
#include "attention_tc.cuh"

#define TC_BK 64
#define TC_WARPS 4
#define TC_PAD 8 /* elements of padding per shared row: conflict-free ldmatrix */
#define TC_MT2_MAX_HD 80 /* 32 rows per warp fit the registers up to this head dim */

/* Start copying `nrows` rows of HD elements into a shared tile of stride LDS with cp.async
 * (16-byte vectors), zero-filling rows past nrows and columns past HD up to HDP. */
template <typename T, int HD, int HDP, int LDS, int ROWS>
__device__ __forceinline__ void load_tile_async(T *dst, const T *src, int64_t ld, int nrows)
{
    constexpr int VPR = HDP / 8;
#pragma unroll 4
    for (int i = threadIdx.x; i < ROWS * VPR; i += TC_WARPS * 32) {
        int r = i / VPR, v = i % VPR;
        bool in = r < nrows && v * 8 < HD;
        const T *g = in ? src + (int64_t)r * ld + v * 8 : src; /* any valid address when empty */
        cp_async16(dst + r * LDS + v * 8, g, in ? 16 : 0);
    }
    cp_async_commit();
}

/* Start copying the (h, w) positions of rows [row0, row0 + nrows) into shared memory with
 * 4-byte cp.async (zero past nrows), in the commit group of the tile they belong to. */
template <int ROWS>
__device__ __forceinline__ void load_pos_async(int32_t *dst, const int32_t *pos, int row0, int nrows)
{
    for (int i = threadIdx.x; i < 2 * ROWS; i += TC_WARPS * 32) {
        bool in = i / 2 < nrows;
        const int32_t *g = in ? pos + 2 * (int64_t)row0 + i : pos;
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst + i)), "l"(g),
                     "r"(in ? 4 : 0));
    }
}

/* Rotate rows [0, nrows) of NT shared tiles that hold the same rows (so share positions), as
 * rotary_2d would, from the rows' positions (tpos, [nrows, 2]) and the head's inverse
 * frequencies (invf, [HD/2]), both in shared memory. Each thread takes V neighbouring elements
 * of the first half of a head and their V partners in the second half, read and written as one
 * vector each; V = 4 when groups of four never straddle a quarter of the head (HD a multiple of
 * 16), else 2 (HD a multiple of 8). The sines and cosines are computed once for all NT tiles;
 * each angle is reduced to [-π, π] before the fast sine and cosine. */
template <typename T, int HD, int LDS, int NT>
__device__ __forceinline__ void rotate_tiles(T *const (&tiles)[NT], int nrows, const int32_t *tpos,
                                             const float *invf)
{
    static_assert(HD % 8 == 0, "pairs of elements must not straddle a quarter of the head");
    constexpr int HALF = HD / 2, V = HD % 16 == 0 ? 4 : 2, GROUPS = HALF / V;
    struct alignas(V * sizeof(T)) vec { T e[V]; };
    for (int t = threadIdx.x; t < nrows * GROUPS; t += TC_WARPS * 32) {
        int r = t / GROUPS, i = (t - r * GROUPS) * V;
        float p = (float)tpos[2 * r + (i < HALF / 2 ? 0 : 1)], c[V], sn[V];
#pragma unroll
        for (int e = 0; e < V; e++) {
            float a = p * invf[i + e];
            float k = rintf(a * 0.15915494309189535f);
            a = fmaf(k, 1.7484555e-7f, fmaf(-k, 6.2831855f, a)); /* a - 2πk, 2π in two parts */
            __sincosf(a, &sn[e], &c[e]);
        }
#pragma unroll
        for (int n = 0; n < NT; n++) {
            vec *lo = (vec *)(tiles[n] + r * LDS + i), *hi = (vec *)(tiles[n] + r * LDS + i + HALF);
            vec x0 = *lo, x1 = *hi;
#pragma unroll
            for (int e = 0; e < V; e++) {
                float a0 = vgk_to_f(x0.e[e]), a1 = vgk_to_f(x1.e[e]);
                x0.e[e] = vgk_from_f<T>(a0 * c[e] - a1 * sn[e]);
                x1.e[e] = vgk_from_f<T>(a1 * c[e] + a0 * sn[e]);
            }
            *lo = x0;
            *hi = x1;
        }
    }
}

/* K/V stages. attention_rotary serves short segments (windows: a 64-row block mostly needs a
 * single K/V tile), and there occupancy matters more than prefetching the next tile: with one
 * stage and at most 128 registers its 64-row blocks fit four per multiprocessor instead of
 * three, so the ViT's 1024 window blocks at 4096 patches take two rounds instead of three. */
template <int MT, bool ROPE>
__host__ __device__ constexpr int tc_stages() { return ROPE && MT == 1 ? 1 : 2; }

/* Shared memory of the kernel: the tiles (tc_tile_bytes), then with ROPE the inverse
 * frequencies and the positions of the Q tile and of each K stage. */
template <typename T, int HD, int MT, bool ROPE>
__host__ __device__ constexpr size_t tc_tile_bytes()
{
    constexpr int LDS = (HD + 15) / 16 * 16 + TC_PAD, BQ = TC_WARPS * 16 * MT, STAGE_ROWS = 2 * TC_BK;
    constexpr int rows = BQ >= STAGE_ROWS ? BQ + STAGE_ROWS : BQ + tc_stages<MT, ROPE>() * STAGE_ROWS;
    return (size_t)rows * LDS * sizeof(T);
}

template <typename T, int HD, int MT, bool ROPE>
__host__ __device__ constexpr size_t tc_smem_bytes()
{
    constexpr int BQ = TC_WARPS * 16 * MT;
    return tc_tile_bytes<T, HD, MT, ROPE>() +
           (ROPE ? (size_t)(HD / 2 + 2 * BQ + 2 * tc_stages<MT, ROPE>() * TC_BK) * 4 : 0);
}

/* MT m-tiles of 16 rows per warp: a block owns BQ = 64·MT query rows of one head. With MT = 2
 * every K and V fragment read from shared memory feeds two MMAs, and the Q tile's shared memory
 * (then 128 rows, one K/V stage) is reused as the second stage once Q sits in registers. */
template <typename T, int HD, int MT, bool ROPE>
__global__ void __launch_bounds__(TC_WARPS * 32, tc_stages<MT, ROPE>() == 1 ? 4 : 1)
k_attention_tc(const T *qkv, int64_t ld_qkv, T *out, int64_t ld_out, int rows, int heads,
               const int32_t *cu, int nseg, float scale_log2, const int32_t *pos, float log2_theta)
{
    vgk_grid_sync();
    constexpr int BQ = TC_WARPS * 16 * MT;
    constexpr int HDP = (HD + 15) / 16 * 16; /* head dim padded to the mma k-step */
    constexpr int LDS = HDP + TC_PAD;
    constexpr int KS = HDP / 16; /* k-steps of Q·Kᵀ */
    constexpr int NT = HDP / 8;  /* n-tiles of the output (even: HDP is a multiple of 16) */
    constexpr int NB = TC_BK / 8; /* key n-tiles of a K tile */
    constexpr int STAGE = 2 * TC_BK * LDS; /* elements of one [K tile, V tile] stage */
    constexpr bool REUSE_Q = BQ * LDS >= STAGE;
    constexpr int STAGES = tc_stages<MT, ROPE>();
    extern __shared__ __align__(16) unsigned char smem_raw[];
    /* Q, then stage 0; stage 1 after it, or in Q's place once Q is in registers */
    T *qs = (T *)smem_raw, *stage0 = qs + BQ * LDS;
    T *stage1 = STAGES == 1 ? stage0 : REUSE_Q ? qs : stage0 + STAGE;
    /* with ROPE: inverse frequencies, Q positions, K positions of each stage */
    float *invf = (float *)(smem_raw + tc_tile_bytes<T, HD, MT, ROPE>());
    int32_t *qpos = (int32_t *)(invf + HD / 2), *kpos = qpos + 2 * BQ;

    const int h = blockIdx.y, hidden = heads * HD, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = blockIdx.x * BQ, last = min(row0 + BQ, rows) - 1, nq = last - row0 + 1;
    /* Q first: it needs no segment bounds */
    if (ROPE) load_pos_async<BQ>(qpos, pos, row0, nq);
    load_tile_async<T, HD, HDP, LDS, BQ>(qs, qkv + (int64_t)row0 * ld_qkv + h * HD, ld_qkv, nq);
    if (ROPE)
        for (int i = threadIdx.x; i < HD / 2; i += TC_WARPS * 32) invf[i] = vgk_rotary_freq(i, HD / 2, log2_theta);
    const int seg0 = segment_of_warp(cu, nseg, row0), seg1 = segment_of_warp(cu, nseg, last);
    const int kbeg = cu[seg0], kend = cu[seg1 + 1];

    auto issue = [&](int k0, int st) {
        const T *base = qkv + (int64_t)k0 * ld_qkv + h * HD;
        int nk = min(TC_BK, kend - k0);
        T *dst = st ? stage1 : stage0;
        if (ROPE) load_pos_async<TC_BK>(kpos + st * 2 * TC_BK, pos, k0, nk);
        load_tile_async<T, HD, HDP, LDS, TC_BK>(dst, base + hidden, ld_qkv, nk);
        load_tile_async<T, HD, HDP, LDS, TC_BK>(dst + TC_BK * LDS, base + 2 * hidden, ld_qkv, nk);
    };
    if (kbeg < kend) issue(kbeg, 0);

    /* the key ranges of this thread's rows in each of its warp's m-tiles */
    int r_lo[MT][2], r_hi[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) row_keys(cu, seg0, seg1, rows, row0 + warp * 16 * MT + mt * 16, r_lo[mt], r_hi[mt]);

    /* With one stage, a first key tile that holds exactly the Q tile's rows (a window aligned
     * to the block) is rotated together with Q, sharing the sines and cosines. */
    const bool diag = ROPE && STAGES == 1 && kbeg == row0 && min(TC_BK, kend - kbeg) == nq;
    if (kbeg < kend && !diag) cp_async_wait<2>(); /* Q's group is done; the first K/V may fly */
    else cp_async_wait<0>();
    __syncthreads();
    if (ROPE) {
        if (diag) {
            T *const both[2] = {qs, stage0};
            rotate_tiles<T, HD, LDS, 2>(both, nq, qpos, invf);
        } else {
            T *const q[1] = {qs};
            rotate_tiles<T, HD, LDS, 1>(q, nq, qpos, invf);
        }
        __syncthreads();
    }
    uint32_t qf[MT][KS][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int k = 0; k < KS; k++)
            ldmatrix_x4(qf[mt][k], qs + (warp * 16 * MT + mt * 16 + lane % 16) * LDS + k * 16 + (lane / 16) * 8);
    if (REUSE_Q) __syncthreads(); /* Q's shared memory becomes stage 1 */

    float o[MT][NT][4];
    float m[MT][2], l[MT][2]; /* running maximum (raw score units) and sum of each row */
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int n = 0; n < NT; n++) o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.0f;
        m[mt][0] = m[mt][1] = -INFINITY;
        l[mt][0] = l[mt][1] = 0.0f;
    }

    for (int k0 = kbeg, stage = 0; k0 < kend; k0 += TC_BK, stage = STAGES == 2 ? stage ^ 1 : 0) {
        if (STAGES == 2 && k0 + TC_BK < kend) { /* prefetch the next tile into the other stage */
            issue(k0 + TC_BK, stage ^ 1);
            cp_async_wait<2>(); /* this tile's two groups are done; the next two may fly */
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        T *ks = stage ? stage1 : stage0;
        const T *vs = ks + TC_BK * LDS;
        if (ROPE && !(diag && k0 == kbeg)) {
            T *const k[1] = {ks};
            rotate_tiles<T, HD, LDS, 1>(k, min(TC_BK, kend - k0), kpos + stage * 2 * TC_BK, invf);
            __syncthreads();
        }

        float s[MT][NB][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int n = 0; n < NB; n++) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.0f;
#pragma unroll
        for (int np = 0; np < NB / 2; np++)
#pragma unroll
            for (int k = 0; k < KS; k++) {
                uint32_t b[4]; /* Kᵀ as the col-major B operand of key n-tiles 2np and 2np+1 */
                ldmatrix_x4(b, ks + (np * 16 + (lane / 16) * 8 + lane % 8) * LDS + k * 16 + ((lane / 8) % 2) * 8);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    mma16816<T>(s[mt][2 * np], qf[mt][k], b);
                    mma16816<T>(s[mt][2 * np + 1], qf[mt][k], b + 2);
                }
            }
        /* Keys outside a row's segment are masked; a warp whose rows all cover the whole tile
         * (the interior of a long segment) skips the test. */
        bool inside = true;
#pragma unroll
        for (int mt = 0; mt < MT; mt++) inside &= keys_inside(k0, TC_BK, r_lo[mt], r_hi[mt]);
        if (!__all_sync(0xffffffffu, inside))
#pragma unroll
            for (int mt = 0; mt < MT; mt++) mask_keys(s[mt], k0, r_lo[mt], r_hi[mt]);
        /* the online softmax, then P·V */
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            uint32_t pf[NB / 2][4];
            float corr[2];
            softmax_scores<T>(s[mt], m[mt], l[mt], pf, corr, scale_log2);
            rescale_rows(o[mt], corr);
#pragma unroll
            for (int k = 0; k < NB / 2; k++)
#pragma unroll
                for (int np = 0; np < NT / 2; np++) {
                    uint32_t b[4]; /* V [key][d] as the row-major B operand, transposed on load */
                    ldmatrix_x4_trans(b, vs + (k * 16 + lane % 16) * LDS + np * 16 + (lane / 16) * 8);
                    mma16816<T>(o[mt][2 * np], pf[k], b);
                    mma16816<T>(o[mt][2 * np + 1], pf[k], b + 2);
                }
        }
        __syncthreads(); /* this stage is refilled two tiles from now (with one stage: now) */
        if (STAGES == 1 && k0 + TC_BK < kend) issue(k0 + TC_BK, 0);
    }
#pragma unroll
    for (int mt = 0; mt < MT; mt++) store_rows<T, HD>(out, ld_out, h, rows, row0 + warp * 16 * MT + mt * 16, o[mt], l[mt]);
}

/* Raise the dynamic shared memory limit once per instantiation, at device open (never
 * during a capture). */
template <typename T, int HD, bool ROPE>
static cudaError_t tc_prepare_one()
{
    cudaError_t e = cudaFuncSetAttribute(k_attention_tc<T, HD, 1, ROPE>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)tc_smem_bytes<T, HD, 1, ROPE>());
    if constexpr (HD <= TC_MT2_MAX_HD)
        if (e == cudaSuccess)
            e = cudaFuncSetAttribute(k_attention_tc<T, HD, 2, ROPE>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)tc_smem_bytes<T, HD, 2, ROPE>());
    return e;
}

template <typename T, int HD, bool ROPE>
static void tc_launch(vg_bk_stream *s, int mt, const vgc_attention_call *c)
{
    const float scale_log2 = c->scale * 1.4426950408889634f, log2_theta = ROPE ? log2f(c->theta) : 0.0f;
    if constexpr (HD <= TC_MT2_MAX_HD) {
        if (mt == 2) {
            dim3 grid((unsigned)((c->rows + 127) / 128), (unsigned)c->heads);
            vgc_launch(s, k_attention_tc<T, HD, 2, ROPE>, grid, TC_WARPS * 32, tc_smem_bytes<T, HD, 2, ROPE>(),
                (const T *)c->qkv, c->ld_qkv, (T *)c->out, c->ld_out, c->rows, c->heads, c->cu,
                c->nseg, scale_log2, c->pos, log2_theta);
            return;
        }
    }
    dim3 grid((unsigned)((c->rows + 63) / 64), (unsigned)c->heads);
    vgc_launch(s, k_attention_tc<T, HD, 1, ROPE>, grid, TC_WARPS * 32, tc_smem_bytes<T, HD, 1, ROPE>(),
        (const T *)c->qkv, c->ld_qkv, (T *)c->out, c->ld_out, c->rows, c->heads, c->cu, c->nseg,
        scale_log2, c->pos, log2_theta);
}

template <typename T, int HD>
static void tc_launch_any(vg_bk_stream *s, int mt, const vgc_attention_call *c)
{
    if (c->pos) tc_launch<T, HD, true>(s, mt, c);
    else tc_launch<T, HD, false>(s, mt, c);
}

#define TC_HEAD_DIMS(X) X(32) X(64) X(72) X(80) X(96) X(128)

vg_status vgc_attention_tc_prepare(void)
{
#define PREP(D)                                                                  \
    VGC_CHECK((tc_prepare_one<vgc_bf16, D, false>()));                            \
    VGC_CHECK((tc_prepare_one<vgc_f16, D, false>()));                             \
    VGC_CHECK((tc_prepare_one<vgc_bf16, D, true>()));                             \
    VGC_CHECK((tc_prepare_one<vgc_f16, D, true>()));
    TC_HEAD_DIMS(PREP)
#undef PREP
    return VG_OK;
}

/* Rows per block: 128 (MT = 2) when that still gives every multiprocessor two blocks,
 * else 64, so small calls keep the GPU busy. attention_rotary (pos set) is the op for short
 * segments (vg_backend.h), and there 64 rows always win: a block has few keys to amortise its
 * loads over, so what counts is how many blocks hide each other's load latency (the ViT's
 * window blocks at 4096 patches on the H100: 37 µs with 128 rows, two blocks per
 * multiprocessor; 30 µs with 64 rows and one stage, four). VG_CUDA_ATTENTION_ROWS=64|128
 * forces one (128 only up to TC_MT2_MAX_HD). */
static int tc_mtiles(const vg_bk_device *dev, int rows, int heads, int hd, int short_segments)
{
    if (hd > TC_MT2_MAX_HD) return 1;
    if (dev->attention_rows) return dev->attention_rows / 64;
    if (short_segments) return 1;
    long blocks128 = (long)(rows / 128) * heads;
    return blocks128 >= 2L * dev->prop.multiProcessorCount ? 2 : 1;
}

/* Returns VG_ERR_UNSUPPORTED (without an error message) when the shape is not covered. */
vg_status vgc_attention_tc(vg_bk_stream *s, const vgc_attention_call *c)
{
    /* the softmax tracks maxima of raw scores, which needs scale > 0 */
    if ((c->t != VG_DTYPE_BF16 && c->t != VG_DTYPE_F16) || c->ld_qkv % 8 || c->ld_out % 2 ||
        !(c->scale > 0.0f) || ((uintptr_t)c->qkv % 16) || ((uintptr_t)c->out % 4))
        return VG_ERR_UNSUPPORTED;
    const int mt = tc_mtiles(s->dev, c->rows, c->heads, c->hd, c->pos != NULL);
#define TC_CASE(D)                                                                                 \
    case D:                                                                                        \
        if (c->t == VG_DTYPE_BF16) tc_launch_any<vgc_bf16, D>(s, mt, c);                            \
        else tc_launch_any<vgc_f16, D>(s, mt, c);                                                   \
        break;
    switch (c->hd) {
        TC_HEAD_DIMS(TC_CASE)
    default:
        return VG_ERR_UNSUPPORTED;
    }
#undef TC_CASE
    VGC_CHECK_LAUNCH("attention_tc");
    return VG_OK;
}
