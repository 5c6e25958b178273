/* SPDX-License-Identifier: Apache-2.0 */
/* Paged decode attention on the tensor cores (mma.sync m16n8k16, fp32 accumulation) for BF16 and
 * F16 with head_dim 64 or 128 and up to PD_GMAX query heads per KV head: vg's own kernel for the
 * calls that fit it; ops_lm.cu's CUDA-core split kernel takes the rest, and every call on HIP.
 *
 * A block takes what a block of the split kernel takes (decode_split.cuh): one query row, the
 * query heads of one KV head, as the 16 rows of one m-tile (rows past the group are zeros), and
 * one slice of the row's context; the same partials and last-block merge join the slices. Inside
 * the block the W warps share only the queries: warp w walks the slice's tiles of 16 positions
 * w, w + W, ... through two shared-memory stages of its own, the next tile's keys and values
 * copied by cp.async while this one is used, so the loop needs no block barrier; each tile's
 * page-table entries are read a tile before its copies are issued, so that read's latency is not
 * paid in the loop. Scores and outputs stay in registers with attention_tc.cuh's online softmax;
 * the warps' states are joined once, at the end, through shared memory. Where the CUDA-core
 * kernel spends a dot product of head_dim per (head, position) on its lanes, here one m16n8k16
 * covers 16 heads, 8 positions and 16 dimensions.
 *
 * The split form has four warps a block (decode_split.cuh's merge runs on the whole block). The
 * whole form (vgc_decode_call.whole: one slice a row), often one block a multiprocessor, has
 * more (dt_whole_warps): a warp of this kernel issues an instruction only every ~5.6 cycles (its
 * chain of dependent ones; ncu, H100), so with four warps a multiprocessor's schedulers idle 80%
 * of the time; eight took Qwen2.5-0.5B's 64 rows from 13.5-14.9 to 12.5 us. Where (row, KV head)
 * pairs are too few to fill the multiprocessors, the whole form cuts a row's context among the
 * blocks of a cluster (sm_90: vgc_decode_call.whole > 1, the slices along grid z): each block
 * joins its warps as the whole form does, and the cluster joins its blocks through distributed
 * shared memory (dt_cluster_join), with no partials in memory, no counter and no last block.
 *
 * With ROPE the kernel is rotary_paged_attention's (vg_ops.h): q, keys and values come unrotated
 * in the qkv rows, and rotary_kv_store's work is done where they are read. The queries are
 * normalised and rotated in shared memory before the first tile; the new tokens' positions
 * (those of the row's sequence from context_len - its query rows on) are copied from qkv instead
 * of the cache, and their keys normalised and rotated in the warp's stage; and the blocks of slice
 * 0 store their row's new key and value in the cache for the calls after this one (no block of
 * this call reads them there). With norm_x (op table version 10) the qkv rows are a projection of
 * rows that were not normalised: the block's threads share the sum of squares of its row's norm
 * input while its first copies fly, and each query, new key and new value is scaled by its row's
 * factor, plus qkv_bias, where it is read; the launch the norm before the projection took is gone. */
#include <limits.h>

#include <type_traits>

#include <cooperative_groups.h>

#include "attention_tc.cuh"
#include "cluster.cuh"
#include "decode_split.cuh"

#define DT_WARPS 4       /* the split form's warps: decode_split.cuh's merge runs on the whole block */
#define DT_STAGES 2      /* a warp's shared-memory stages */
#define DT_TK 16       /* positions per warp tile: the k-step of P·V */
#define DT_PER_SM 3    /* blocks a multiprocessor holds (head_dim 128: shared memory), for the splits */
#define DT_MIN_CHUNK 64 /* positions per slice, at least: a tile for each warp */
/* rows a call with ROPE may have: each row's blocks rotate the new keys of its sequence up to its
 * own position (n²/2 for a sequence of n new rows), so prefill chunks rotate in a launch of their
 * own and a decode batch (a row a sequence) here */
#define DT_ROPE_MAX_ROWS 64

static_assert(DT_WARPS * 32 == PD_THREADS, "the merge of decode_split.cuh runs on the whole block");

/* The whole form's warps (one slice a row: no merge), measured on the H100 (tuner, per call):
 * head_dim 64 at 16 rows 7.7 us with 12, 8.5 with 8; at 64 rows 12.1 with 12, 12.2 with 8, 13.0
 * with 16; head_dim 128 at 16 rows 20.3 us with 12, 21.3 with 8. Twelve take 114 KiB of shared
 * memory with the rotary's at head_dim 64 and 215 KiB at 128 (13 would take 232, over the 227 KiB
 * a block may have on Hopper); eight 78 and 147 KiB. So a device takes twelve where its blocks may
 * have that much, else eight (sm_86 and sm_89 grant 99 KiB: eight at head_dim 64; sm_80 163 KiB:
 * eight at 128), else the split form's four (dt_whole_warps). */
#define DT_WHOLE_MOST 12
#define DT_WHOLE_LESS 8

/* What the kernel with ROPE reads once a block into shared memory: the norms' weights and the
 * cosine and sine of each pair at the row's position; with norm_x, qkv_bias's elements for the
 * block's query heads, then its key and value head (zeros without a bias). */
template <int HD> struct dt_rope_smem {
    float qw[HD], kw[HD], c[HD / 2], s[HD / 2];
    float b[(PD_GMAX + 2) * HD];
    float xss[16]; /* each warp's share of the row's sum of squares (dt_x_share) */
};

template <int HD, int W> struct dt_shape {
    static constexpr int LDS = HD + 8;    /* padded shared row: conflict-free ldmatrix */
    static constexpr int KS = HD / 16;    /* k-steps of Q·Kᵀ */
    static constexpr int NT = HD / 8;     /* n-tiles of the output */
    static constexpr int TILE = DT_TK * LDS; /* elements of one K or V tile */
    static constexpr int JS = HD + 8;        /* the join's row stride: its float2 stores conflict-free */
    static constexpr size_t q_bytes = 16 * LDS * 2;
    static constexpr size_t stage_bytes = (size_t)W * DT_STAGES * 2 /* K, V */ * TILE * 2;
    static constexpr size_t join_bytes = (size_t)W * 16 * (JS + 2) * 4; /* o, m, l */
    /* the cluster form's block state after the join: o [16][HD], m, l */
    static constexpr size_t block_bytes = (size_t)16 * (HD + 2) * 4;
    static constexpr size_t area = stage_bytes > join_bytes + block_bytes ? stage_bytes : join_bytes + block_bytes;
    static constexpr size_t smem = q_bytes + (area > sizeof(pd_merge_smem) ? area : sizeof(pd_merge_smem));
    /* with ROPE, after the rest: dt_rope_smem */
    static constexpr size_t rope_bytes = sizeof(dt_rope_smem<HD>);
};

/* rotary_kv_store's arguments, for the kernel with ROPE; and norm_x's (op table version 10: x null
 * without it), whose rows the kernel scales as it reads them (vgk_row_scaled). */
template <typename T> struct dt_rope {
    const T *q_norm, *k_norm; /* both or neither */
    float eps, log2_theta;
    const int32_t *pos, *slots;
    T *k_cache, *v_cache; /* the caches, written */
    const T *x;           /* norm_x */
    int64_t ld_x;
    int x_cols;
    float x_eps;
    const T *bias; /* qkv_bias, optional with x */
    int tables_static; /* vgc_rotary_tables_static: read the tables before the grid dependency wait */
};

/* The sum of squares of thread t's share of a row of norm_x (cols elements at x; vec: 16-byte
 * vectors, else elements): the vectors (elements) t, t + stride, ..., in that order; `first`, where
 * have_first, is vector t already loaded. With stride W·32, the shares of the block's threads,
 * summed by warps and the warps' in order (dt_x_total), are the row's sum (dt_x_inv_rms_as_block). */
template <typename T>
__device__ __forceinline__ float dt_x_share(const T *x, int cols, bool vec, int t, int stride, uint4 first,
                                            bool have_first)
{
    constexpr int V = 16 / sizeof(T);
    float ss = 0.0f;
    if (!vec) {
        for (int c = t; c < cols; c += stride) ss += vgk_to_f(x[c]) * vgk_to_f(x[c]);
        return ss;
    }
    for (int v = t; v < cols / V; v += stride) {
        const uint4 u = v == t && have_first ? first : *(const uint4 *)(x + (int64_t)v * V);
        const T *e = reinterpret_cast<const T *>(&u);
#pragma unroll
        for (int i = 0; i < V; i++) ss += vgk_to_f(e[i]) * vgk_to_f(e[i]);
    }
    return ss;
}

/* 1/sqrt(mean(x²) + eps) from the W warps' shares (each the warp's sum of its lanes' dt_x_share). */
template <int W> __device__ __forceinline__ float dt_x_total(const float *xss, int cols, float eps)
{
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < W; w++) total += xss[w];
    return rsqrtf(total / (float)cols + eps);
}

/* The factor a block of W warps computes for row x (row_factor in k_decode_tc), by one warp alone:
 * for a new token of another row of the call, so that the key this block uses is the one that row's
 * block stores. */
template <typename T, int W>
__device__ __forceinline__ float dt_x_inv_rms_as_block(const T *x, int cols, float eps)
{
    const int lane = threadIdx.x % 32;
    const bool vec = (uintptr_t)x % 16 == 0 && cols % (16 / (int)sizeof(T)) == 0;
    float total = 0.0f; /* as dt_x_total adds the warps' shares */
    for (int w = 0; w < W; w++) total += vgk_warp_sum(dt_x_share(x, cols, vec, w * 32 + lane, W * 32, uint4{}, false));
    return rsqrtf(total / (float)cols + eps);
}

/* rotary_kv_store's norm and rotation of one head (x, to y: may be x), by one warp, lane l taking
 * the elements l + 32·i: the statistics in the order k_rotary_kv_store (ops_lm.cu) takes them,
 * each pair by vgk_norm_rotate, so the results are that kernel's. w: the norm's weights (null:
 * none); c, s: the angles of the pairs (c null: computed at p); scaled: the head is first its
 * row's scaled by xs with the head's bias xb added, as vgk_row_scaled leaves it. */
template <typename T, int HD>
__device__ __forceinline__ void dt_rope_head(const T *x, T *y, const float *w, float eps, const float *c,
                                             const float *s, float p, float log2_theta, bool scaled, float xs,
                                             const float *xb)
{
    const int lane = threadIdx.x % 32;
    T v[HD / 32];
#pragma unroll
    for (int i = 0; i < HD / 32; i++) v[i] = x[lane + 32 * i];
    if (scaled)
#pragma unroll
        for (int i = 0; i < HD / 32; i++) v[i] = vgk_row_scaled(v[i], xs, xb[lane + 32 * i]);
    float inv = 1.0f;
    if (w) {
        float ss = 0.0f;
#pragma unroll
        for (int i = 0; i < HD / 32; i++) ss += vgk_to_f(v[i]) * vgk_to_f(v[i]);
        inv = vgk_head_inv_rms(ss, HD, eps);
    }
#pragma unroll
    for (int i = 0; i < HD / 64; i++) {
        const int j = lane + 32 * i;
        float cj, sj;
        if (c) cj = c[j], sj = s[j];
        else vgk_rotary_cs(j, HD, p, log2_theta, &cj, &sj);
        vgk_norm_rotate(v[i], v[i + HD / 64], w != nullptr, w ? w[j] : 0.0f, w ? w[j + HD / 2] : 0.0f, inv, cj, sj);
    }
#pragma unroll
    for (int i = 0; i < HD / 32; i++) y[lane + 32 * i] = v[i];
}

/* The cluster form's join, by the nb blocks of a cluster (one row and KV head, slice = rank), once
 * each block has joined its warps into its state (bo [16][HD]: output unnormalised, then bm: max in
 * raw score units, bl: sum): block c of the cluster writes outputs c·W·32 + t, ... reading every
 * block's state through distributed shared memory. A block without positions (max -inf) weighs
 * nothing; a row without any is zeros. */
template <typename T, int HD, int W>
__device__ __forceinline__ void dt_cluster_join(float *bo, float *bm, float *bl, T *orow, int group, float scale_log2,
                                                int nb)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    cg::cluster_group cl = cg::this_cluster();
    cl.sync(); /* every block's state is in its shared memory */
    for (int i = (int)cl.block_rank() * W * 32 + threadIdx.x; i < group * HD; i += nb * W * 32) {
        const int r = i / HD;
        float mx = -INFINITY;
        for (int c = 0; c < nb; c++) mx = fmaxf(mx, cl.map_shared_rank(bm, c)[r]);
        float sum = 0.0f, acc = 0.0f;
        for (int c = 0; c < nb; c++) {
            const float mc = cl.map_shared_rank(bm, c)[r], w = mc == -INFINITY ? 0.0f : ex2((mc - mx) * scale_log2);
            sum += w * cl.map_shared_rank(bl, c)[r];
            acc += w * cl.map_shared_rank(bo, c)[i];
        }
        orow[i] = vgk_from_f<T>(sum > 0.0f ? acc / sum : 0.0f);
    }
    cl.sync(); /* no block leaves while another reads its shared memory */
#else
    __trap(); /* never launched: vgc_decode_tc_prepare allows clusters only for sm_90 code */
#endif
}

template <typename T, int HD, bool ROPE, int W>
__global__ void __launch_bounds__(W * 32)
k_decode_tc(const T *q, int64_t ld_q, T *out, int64_t ld_out, const T *k_cache, const T *v_cache,
            const int32_t *block_tables, int max_blocks, const int32_t *context_lens,
            const int32_t *query_start, int num_seqs, int heads, int kv_heads, int block_size,
            float scale_log2, int nsplit, float *part, unsigned *counters, dt_rope<T> rope)
{
    static_assert(W <= 16, "dt_rope_smem::xss holds one share a warp");
    using S = dt_shape<HD, W>;
    constexpr int LDS = S::LDS, KS = S::KS, NT = S::NT;
    extern __shared__ __align__(16) unsigned char dt_smem[];
    T *qs = (T *)dt_smem;
    unsigned char *area = dt_smem + S::q_bytes; /* the warps' stages, then the join (and the cluster
                                                  * form's block state), then the merge */
    const int row = blockIdx.x, kvh = blockIdx.y, split = blockIdx.z;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int group = heads / kv_heads, h0 = kvh * group;
    const int64_t rows = gridDim.x;
    const pd_parts pt = {part, part ? part + rows * heads * (int64_t)nsplit * HD : nullptr, nsplit};
    T *orow = out + (int64_t)row * ld_out + (int64_t)h0 * HD;
    dt_rope_smem<HD> &rs = *(dt_rope_smem<HD> *)(dt_smem + S::smem);
    /* With the tables_static hint (vg_ops.h) the kernel before this one writes only qkv of what this
     * one reads: the rest (positions, slots, lengths, the first tiles' page-table entries, weights,
     * a vector of norm_x a thread, the cache's entries before the new tokens) is read before the
     * grid dependency wait, and all warps but the last (q_warp) copy their first tile of cache then,
     * while a projection that released this kernel early (vg's panel and skinny GEMMs do) ends. The
     * hint allows that only after every kernel before that one: this backend's kernels release the
     * next only once they have waited for theirs (vgc_pdl_wait_release), and cuBLASLt's only as they
     * end. The last warp waits at once and copies the queries: were every warp to copy its tile
     * first, the queries would wait for the page lookups where nothing ran early (after cuBLASLt: 6%
     * slower calls, H100). Without the hint everything waits. Writes (the output, the new entries,
     * partials) all come after the wait (sync_grid). */
    const bool early = ROPE && rope.tables_static;
    const bool q_warp = !early || warp == W - 1; /* the warps that copy the queries, after the wait */
    if (!early) vgk_grid_sync(); /* any input may come from the previous kernel: positions and slots too */
    auto sync_grid = [&]() {
        if (early) vgk_grid_sync();
    };
    float prow = 0.0f; /* the row's rotary position */
    int32_t slot = -1;  /* and its new entries' slot */
    if (ROPE) prow = (float)rope.pos[row], slot = rope.slots[row]; /* in flight with the slice's loads */
    /* with norm_x, also in flight with them (a decode call's time is its chain of dependent steps):
     * the biases of the group's query heads and of its key and value head (dt_rope_smem::b: zeros
     * without a bias), and this thread's first vector of the row's norm input (dt_x_share) */
    const bool scaled = ROPE && rope.x;
    constexpr int NB = (PD_GMAX + 2) * HD, PER = (NB + W * 32 - 1) / (W * 32);
    float bv[PER];
    const T *xrow = nullptr;
    bool xvec = false;
    uint4 xv = {};
    if (scaled) {
        xrow = rope.x + (int64_t)row * rope.ld_x;
        xvec = (uintptr_t)xrow % 16 == 0 && rope.x_cols % (16 / (int)sizeof(T)) == 0;
        if (xvec && (int)threadIdx.x < rope.x_cols / (16 / (int)sizeof(T)))
            xv = *(const uint4 *)(xrow + (int64_t)threadIdx.x * (16 / sizeof(T)));
#pragma unroll
        for (int u = 0; u < PER; u++) {
            const int i = threadIdx.x + u * W * 32, h = i / HD; /* h: a query head of the group, then k, v */
            const int64_t col = h < PD_GMAX ? (int64_t)(h0 + h) * HD
                                            : (int64_t)(heads + (h - PD_GMAX) * kv_heads + kvh) * HD;
            bv[u] = i < NB && rope.bias && (h >= PD_GMAX || h < group) ? vgk_to_f(rope.bias[col + i % HD]) : 0.0f;
        }
    }
    pd_seq sq;
    int64_t b0, b1;
    pd_slice_range(row, context_lens, query_start, num_seqs, max_blocks, block_size, nsplit, split, &sq, &b0, &b1);
    if (ROPE) /* once for the block, read by the barriers below */
        for (int i = threadIdx.x; i < HD; i += W * 32) {
            rs.qw[i] = rope.q_norm ? vgk_to_f(rope.q_norm[i]) : 0.0f;
            rs.kw[i] = rope.k_norm ? vgk_to_f(rope.k_norm[i]) : 0.0f;
            if (i < HD / 2) vgk_rotary_cs(i, HD, prow, rope.log2_theta, &rs.c[i], &rs.s[i]);
        }
    const int64_t cache_ld = (int64_t)kv_heads * HD, ko = (int64_t)kvh * HD;
    /* with norm_x, once the block's first copies fly (row_factor): the biases into shared memory,
     * and each warp's share of the row's sum of squares; after the barrier that follows it, the
     * row's factor xs (row_total). The row is shared among all the block's threads: summed by each
     * warp alone (every warp loading all of it), Qwen3-0.6B's 28 decode calls at 16 rows, 12 warps
     * a block, took 540 us a step against 510 (H100; the norm's own launch gone, 511 with it) */
    float xs = 1.0f;
    const float *kb = rs.b + PD_GMAX * HD, *vb = kb + HD;
    auto row_factor = [&]() {
        if constexpr (ROPE) {
            if (!scaled) return;
#pragma unroll
            for (int u = 0; u < PER; u++)
                if (threadIdx.x + u * W * 32 < NB) rs.b[threadIdx.x + u * W * 32] = bv[u];
            const float ss = vgk_warp_sum(dt_x_share(xrow, rope.x_cols, xvec, threadIdx.x, W * 32, xv, true));
            if (lane == 0) rs.xss[warp] = ss;
        }
    };
    auto row_total = [&]() {
        if (scaled) xs = dt_x_total<W>(rs.xss, rope.x_cols, rope.x_eps);
    };
    /* with ROPE, by slice 0 once its work is done: the row's new key (warp 0, normalised and rotated)
     * and value (warp 1) to its slot, for the calls after this one */
    auto store_new = [&]() {
        if (!ROPE || split != 0 || warp >= 2 || slot < 0) return;
        const T *src = q + (int64_t)row * ld_q + (int64_t)(heads + warp * kv_heads) * HD + ko;
        T *dst = (warp == 0 ? rope.k_cache : rope.v_cache) + (int64_t)slot * cache_ld + ko;
        if (warp == 0)
            dt_rope_head<T, HD>(src, dst, rope.k_norm ? rs.kw : nullptr, rope.eps, rs.c, rs.s, prow, rope.log2_theta,
                                scaled, xs, kb);
        else
            for (int i = lane; i < HD; i += 32) dst[i] = scaled ? vgk_row_scaled(src[i], xs, vb[i]) : src[i];
    };

    /* the cluster form: a row's context cut among the blocks of a cluster (dt_cluster_join) */
    const bool clustered = W != DT_WARPS && nsplit > 1;
    if (b0 >= b1 && !clustered) { /* a cluster's block without positions still joins the cluster */
        sync_grid();
        row_factor();
        if (ROPE) __syncthreads(); /* the weights, angles, biases and the row's shares */
        row_total();
        store_new();
        pd_empty_slice(*(pd_merge_smem *)area, pt, counters, orow, row, heads, h0, group, HD, split);
        return;
    }
    const int p0 = (int)b0, p1 = (int)b1; /* positions are int: the lengths are */

    T *wst = (T *)area + (size_t)warp * DT_STAGES * 2 * S::TILE; /* this warp's DT_STAGES [K, V] stages */
    const int32_t *table = block_tables + (int64_t)sq.seq * max_blocks;
    /* with ROPE: positions from new0 on are the sequence's new tokens, qkv rows from qs0 on */
    const int qs0 = ROPE ? sq.lo : 0;
    const int new0 = ROPE ? sq.new0 : INT_MAX;
    const int ntiles = (p1 - p0 + DT_TK - 1) / DT_TK;
    const int lr = lane % DT_TK; /* the tile's position whose cache block this lane looks up */
    struct dt_at {
        int32_t blk, off; /* the row's cache block (-1: none to read) and its slot in the block */
    };
    /* the warp's i-th tile (positions p0 + (warp + i·W)·DT_TK on): where this lane's row is; the
     * entry's load is not waited for here, only where issue uses it */
    auto entry = [&](int i) -> dt_at {
        const int pr = p0 + (warp + i * W) * DT_TK + lr;
        if (!(pr < p1 && pr < new0)) return {-1, 0};
        const int b = pr / block_size;
        return {table[b], pr - b * block_size};
    };
    /* the copies of the warp's i-th tile into stage st; a commit group either way (empty past the
     * slice), so that the waits below count tiles */
    auto issue = [&](int i, int st, dt_at at) {
        const int t0 = p0 + (warp + i * W) * DT_TK;
        const int64_t cslot = (int64_t)at.blk * block_size + at.off; /* this lane's row's; valid where it is read */
        if (t0 + DT_TK <= p1 && t0 + DT_TK <= new0 && __all_sync(0xffffffffu, cslot <= INT_MAX)) {
            /* a tile of 16 cache positions (no new token, none past the slice), the common one: lane l
             * copies vector l % VPR of rows l / VPR, + RPI, ..., each row's slot shuffled as 32 bits
             * from the lane that looked it up, its address one multiply-add from the lane's base. In
             * the general form below (a 64-bit shuffle and a select a copy) the copies' issue was ~40%
             * of the kernel's instructions (ncu, H100, Qwen3-0.6B at 16 rows); this one took
             * Qwen2.5-0.5B's whole form at 16 rows from 9.7 to 9.0 us a call (Qwen3's: no change) */
            constexpr int VPR = HD / 8, RPI = 32 / VPR;
            const int v = lane % VPR, r0 = lane / VPR;
            const int ldb = (int)(cache_ld * (int64_t)sizeof(T)); /* vgc_decode_tc_takes: an int */
            const char *ksrc = (const char *)(k_cache + ko + v * 8), *vsrc = (const char *)(v_cache + ko + v * 8);
            const uint32_t kd = smem_addr(wst + st * 2 * S::TILE + r0 * LDS + v * 8), vd = kd + S::TILE * sizeof(T);
#pragma unroll
            for (int j = 0; j < DT_TK / RPI; j++) {
                const int sr = __shfl_sync(0xffffffffu, (int)cslot, r0 + j * RPI);
                cp_async16_to(kd + j * RPI * LDS * sizeof(T), ksrc + (int64_t)sr * ldb);
                cp_async16_to(vd + j * RPI * LDS * sizeof(T), vsrc + (int64_t)sr * ldb);
            }
        } else if (t0 < p1) {
            T *kd = wst + st * 2 * S::TILE, *vd = kd + S::TILE;
            /* lane r finds position t0 + r's key and value; the lanes copying that row's vectors
             * take them by shuffle, so that each copy instruction reads whole 128-byte lines
             * (a lane a row, each reading a few vectors of its own, was 15-40% slower) */
            const int pr = t0 + lr;
            const T *kr = k_cache, *vr = v_cache;
            if (ROPE && pr >= new0 && pr < p1) { /* a new token: its key and value in its qkv row */
                kr = q + (int64_t)(qs0 + pr - new0) * ld_q + (int64_t)heads * HD + ko;
                vr = kr + cache_ld;
            } else if (pr < p1) {
                kr += cslot * cache_ld + ko, vr += cslot * cache_ld + ko;
            }
#pragma unroll
            for (int j = lane; j < DT_TK * (HD / 8); j += 32) {
                const int r = j / (HD / 8), v = j % (HD / 8);
                const bool in = t0 + r < p1;
                const T *ks = (const T *)__shfl_sync(0xffffffffu, (unsigned long long)kr, r) + v * 8;
                const T *vs = (const T *)__shfl_sync(0xffffffffu, (unsigned long long)vr, r) + v * 8;
                cp_async16(kd + r * LDS + v * 8, in ? ks : k_cache, in ? 16 : 0);
                cp_async16(vd + r * LDS + v * 8, in ? vs : v_cache, in ? 16 : 0);
            }
        }
        cp_async_commit();
    };
    const int slice_lo[2] = {p0, p0}, slice_hi[2] = {p1, p1}; /* both of a lane's rows: the slice */
    /* whether the warp's i-th tile reads only the cache (a new token's key and value come from qkv) */
    auto cache_only = [&](int i) {
        const int t0 = p0 + (warp + i * W) * DT_TK;
        return t0 >= p1 || (t0 + DT_TK < p1 ? t0 + DT_TK : p1) <= new0;
    };
    dt_at next; /* where the tile the loop issues next is */
    {
        dt_at first[DT_STAGES - 1];
#pragma unroll
        for (int i = 0; i < DT_STAGES - 1; i++) first[i] = entry(i);
        next = entry(DT_STAGES - 1);
        int pre = 0; /* tiles issued before the grid wait: those reading only the cache, in order */
        if (!q_warp)
            for (; pre < DT_STAGES - 1 && cache_only(pre); pre++) issue(pre, pre, first[pre]);
        sync_grid();
        if (q_warp) { /* the group's queries (consecutive heads of the row), rows past the group zero */
            const T *qr = q + (int64_t)row * ld_q + (int64_t)h0 * HD;
            const int qt = early ? lane : (int)threadIdx.x, qn = early ? 32 : W * 32;
            for (int i = qt; i < 16 * (HD / 8); i += qn) {
                const int r = i / (HD / 8), v = i % (HD / 8);
                cp_async16(qs + r * LDS + v * 8, r < group ? qr + r * HD + v * 8 : qr, r < group ? 16 : 0);
            }
            cp_async_commit();
        }
#pragma unroll
        for (int i = 0; i < DT_STAGES - 1; i++)
            if (i >= pre) issue(i, i, first[i]);
    }
    row_factor();
    cp_async_wait<DT_STAGES - 1>(); /* the queries' group is done (none in the other warps); the first tiles may fly */
    __syncthreads();
    row_total();
    if (ROPE) { /* the group's queries normalised and rotated at the row's position, a warp a head */
        for (int r = warp; r < group; r += W)
            dt_rope_head<T, HD>(qs + r * LDS, qs + r * LDS, rope.q_norm ? rs.qw : nullptr, rope.eps, rs.c, rs.s,
                                prow, rope.log2_theta, scaled, xs, rs.b + r * HD);
        __syncthreads();
    }
    uint32_t qf[KS][4];
#pragma unroll
    for (int k = 0; k < KS; k++) ldmatrix_x4(qf[k], qs + (lane % 16) * LDS + k * 16 + (lane / 16) * 8);

    float o[NT][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < NT; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    for (int i = 0, st = 0; warp + i * W < ntiles; i++, st = st + 1 == DT_STAGES ? 0 : st + 1) {
        const int t0 = p0 + (warp + i * W) * DT_TK;
        { /* the tile DT_STAGES - 1 ahead into the stage the previous tile left, then the entries after it */
            const dt_at at = next;
            next = entry(i + DT_STAGES);
            issue(i + DT_STAGES - 1, st == 0 ? DT_STAGES - 1 : st - 1, at);
        }
        cp_async_wait<DT_STAGES - 1>();
        __syncwarp(); /* every lane's copies of this tile have landed */
        if (ROPE && t0 + DT_TK > new0) { /* the new tokens' keys, as rotary_kv_store leaves them */
            T *kt = wst + st * 2 * S::TILE, *vt = kt + S::TILE;
            for (int r = new0 > t0 ? new0 - t0 : 0; r < DT_TK && t0 + r < p1; r++) {
                const int src = qs0 + t0 + r - new0; /* its qkv row: this row's angles and factor, or its own */
                const float sx = !scaled ? 1.0f
                                 : src == row ? xs
                                              : dt_x_inv_rms_as_block<T, W>(rope.x + (int64_t)src * rope.ld_x, rope.x_cols,
                                                                            rope.x_eps);
                dt_rope_head<T, HD>(kt + r * LDS, kt + r * LDS, rope.k_norm ? rs.kw : nullptr, rope.eps,
                                    src == row ? rs.c : nullptr, rs.s, (float)rope.pos[src], rope.log2_theta, scaled,
                                    sx, kb);
                if (scaled) /* and its value */
                    for (int i = lane; i < HD; i += 32) vt[r * LDS + i] = vgk_row_scaled(vt[r * LDS + i], sx, vb[i]);
            }
            __syncwarp();
        }
        const T *ks = wst + st * 2 * S::TILE, *vs = ks + S::TILE;
        float s[2][4] = {};
#pragma unroll
        for (int k = 0; k < KS; k++) {
            uint32_t b[4]; /* Kᵀ as the col-major B operand of position n-tiles 0 and 1 */
            ldmatrix_x4(b, ks + ((lane / 16) * 8 + lane % 8) * LDS + k * 16 + ((lane / 8) % 2) * 8);
            mma16816<T>(s[0], qf[k], b);
            mma16816<T>(s[1], qf[k], b + 2);
        }
        if (t0 + DT_TK > p1) mask_keys(s, t0, slice_lo, slice_hi); /* the slice's last tile */
        uint32_t pf[1][4];
        float corr[2];
        softmax_scores<T>(s, m, l, pf, corr, scale_log2);
        rescale_rows(o, corr);
#pragma unroll
        for (int np = 0; np < NT / 2; np++) {
            uint32_t b[4]; /* V [position][d] as the B operand, transposed on load */
            ldmatrix_x4_trans(b, vs + (lane % 16) * LDS + np * 16 + (lane / 16) * 8);
            mma16816<T>(o[2 * np], pf[0], b);
            mma16816<T>(o[2 * np + 1], pf[0], b + 2);
        }
        __syncwarp(); /* this stage is refilled by the next iteration's issue */
    }

    store_new();
    /* the join: each warp's output, max (raw score units) and sum of its rows lane / 4 and + 8 */
#pragma unroll
    for (int i = 0; i < 2; i++) {
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
    }
    __syncthreads(); /* every warp is done with its stages */
    constexpr int JS = S::JS;
    float *jo = (float *)area, *jm = jo + W * 16 * JS, *jl = jm + W * 16;
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int i = 0; i < 2; i++)
            *(float2 *)&jo[(warp * 16 + lane / 4 + 8 * i) * JS + n * 8 + (lane % 4) * 2] =
                make_float2(o[n][2 * i], o[n][2 * i + 1]);
    if (lane % 4 == 0)
#pragma unroll
        for (int i = 0; i < 2; i++) jm[warp * 16 + lane / 4 + 8 * i] = m[i], jl[warp * 16 + lane / 4 + 8 * i] = l[i];
    __syncthreads();
    /* the cluster form's block state, after the join's arrays (dt_cluster_join) */
    float *bo = jl + W * 16, *bm = bo + 16 * HD, *bl = bm + 16;
    for (int i = threadIdx.x; i < group * HD; i += W * 32) {
        const int r = i / HD, d = i % HD;
        float mx = -INFINITY;
#pragma unroll
        for (int w = 0; w < W; w++) mx = fmaxf(mx, jm[w * 16 + r]);
        float sum = 0.0f, acc = 0.0f; /* a warp without positions (max -inf) weighs nothing */
#pragma unroll
        for (int w = 0; w < W; w++) {
            const float mw = jm[w * 16 + r], c = mw == -INFINITY ? 0.0f : ex2((mw - mx) * scale_log2);
            sum += c * jl[w * 16 + r];
            acc += c * jo[(w * 16 + r) * JS + d];
        }
        if (clustered) {
            bo[i] = acc;
            if (d == 0) bm[r] = mx, bl[r] = sum;
        } else if (nsplit == 1) {
            orow[r * HD + d] = vgk_from_f<T>(sum > 0.0f ? acc / sum : 0.0f);
        } else { /* the partials as the split kernel leaves them: max in scaled units */
            const int64_t at = ((int64_t)row * heads + h0 + r) * nsplit + split;
            pt.acc[at * HD + d] = acc;
            if (d == 0) pt.ml[2 * at] = mx * scale_log2, pt.ml[2 * at + 1] = sum;
        }
    }
    if constexpr (W != DT_WARPS) {
        if (clustered) dt_cluster_join<T, HD, W>(bo, bm, bl, orow, group, scale_log2, nsplit);
    }
    if constexpr (W == DT_WARPS) { /* only the split form merges slices in memory: more warps come with
                                    * nsplit 1 or a cluster (dt_cluster_join) */
        if (nsplit == 1) return;
        __syncthreads(); /* the join's shared memory becomes the merge's */
        pd_join(*(pd_merge_smem *)area, pt, counters, orow, row, heads, h0, group, HD);
    }
}

/* The dynamic shared memory a launch of the kernel takes. */
template <int HD, int W> static size_t dt_smem(bool rope)
{
    return dt_shape<HD, W>::smem + (rope ? dt_shape<HD, W>::rope_bytes : 0);
}

/* The kernel's shared memory set for W warps, where the device has that much (dt_whole_warps
 * takes the most warps set up so). */
template <typename T, int HD, int W>
static cudaError_t dt_prepare_warps(const vg_bk_device *dev)
{
    if (dt_smem<HD, W>(true) > dev->prop.sharedMemPerBlockOptin) return cudaSuccess;
    cudaError_t e = cudaFuncSetAttribute(k_decode_tc<T, HD, false, W>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)dt_smem<HD, W>(false));
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(k_decode_tc<T, HD, true, W>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)dt_smem<HD, W>(true));
    return e;
}

template <typename T, int HD>
static cudaError_t dt_prepare_one(const vg_bk_device *dev)
{
    cudaError_t e = dt_prepare_warps<T, HD, DT_WARPS>(dev);
    if (e == cudaSuccess) e = dt_prepare_warps<T, HD, DT_WHOLE_LESS>(dev);
    return e == cudaSuccess ? dt_prepare_warps<T, HD, DT_WHOLE_MOST>(dev) : e;
}

/* f(std::integral_constant<int, W>{}) with W the whole form's warps on this device at head_dim HD:
 * the most whose shared memory it grants a block (dt_prepare_warps set those up), else the split
 * form's four. */
template <int HD, typename F> static auto dt_whole_warps(const vg_bk_device *dev, F f)
{
    if (dt_smem<HD, DT_WHOLE_MOST>(true) <= dev->prop.sharedMemPerBlockOptin)
        return f(std::integral_constant<int, DT_WHOLE_MOST>{});
    if (dt_smem<HD, DT_WHOLE_LESS>(true) <= dev->prop.sharedMemPerBlockOptin)
        return f(std::integral_constant<int, DT_WHOLE_LESS>{});
    return f(std::integral_constant<int, DT_WARPS>{});
}

/* The largest cluster of the whole form at head_dim HD the device can place (vgc_cluster_max; 1:
 * none), with its dt_whole_warps. With four (it then runs without clusters: dt_launch_form), what
 * the four-warp kernel could take, which says only whether clusters run. */
template <int HD> static int dt_cluster_fit(const vg_bk_device *dev)
{
    return dt_whole_warps<HD>(dev, [&](auto w) {
        constexpr int W = decltype(w)::value;
        return vgc_cluster_max(dev, k_decode_tc<vgc_bf16, HD, true, W>, W * 32, dt_smem<HD, W>(true), 2);
    });
}

vg_status vgc_decode_tc_prepare(vg_bk_device *dev)
{
    cudaError_t e = dt_prepare_one<vgc_bf16, 64>(dev);
    if (e == cudaSuccess) e = dt_prepare_one<vgc_bf16, 128>(dev);
    if (e == cudaSuccess) e = dt_prepare_one<vgc_f16, 64>(dev);
    if (e == cudaSuccess) e = dt_prepare_one<vgc_f16, 128>(dev);
    VGC_CHECK(e);
    /* the cluster form where the device places its clusters at both head sizes (dt_cluster_join has
     * nothing below sm_90: vgc_cluster_max also asks that the kernel was compiled for it) */
    const int fit64 = dt_cluster_fit<64>(dev), fit128 = dt_cluster_fit<128>(dev);
    dev->decode_cluster_max = fit64 < fit128 ? fit64 : fit128;
    return VG_OK;
}

/* nsplit: the split form's slices (joined through memory); with more warps (the whole form), the
 * blocks of its cluster (1: none) */
template <typename T, int HD, int W>
static void dt_launch(vg_bk_stream *s, const vgc_decode_call *c, int nsplit)
{
    const bool merge = W == DT_WARPS && nsplit > 1; /* partials, and the last block's merge */
    float *part = merge ? (float *)s->gemm_workspace : nullptr;
    unsigned *counters = merge ? s->counters + VGC_COUNTERS_ATTENTION : nullptr;
    dim3 grid((unsigned)c->rows, (unsigned)c->kv_heads, (unsigned)nsplit);
    const vg_rotary_paged_args *a = c->rope;
    const bool nx = a && a->norm_x;
    const dt_rope<T> rope = {a ? (const T *)a->q_norm : nullptr, a ? (const T *)a->k_norm : nullptr,
                             a ? a->eps : 0.0f, a ? log2f(a->theta) : 0.0f, a ? a->pos : nullptr,
                             a ? a->slots : nullptr, a ? (T *)a->k_cache : nullptr, a ? (T *)a->v_cache : nullptr,
                             nx ? (const T *)a->norm_x : nullptr, nx ? a->ld_norm_x : 0, nx ? (int)a->norm_x_cols : 0,
                             nx ? a->norm_x_eps : 0.0f, nx ? (const T *)a->qkv_bias : nullptr,
                             a ? vgc_rotary_tables_static(a) : 0};
#define DT_ARGS (const T *)c->q, c->ld_q, (T *)c->out, c->ld_out, (const T *)c->k_cache, (const T *)c->v_cache, \
                c->block_tables, c->max_blocks, c->context_lens, c->query_start, c->num_seqs, c->heads, c->kv_heads, \
                c->block_size, c->scale * 1.4426950408889634f, nsplit, part, counters, rope
    if (W != DT_WARPS && nsplit > 1) {
        const dim3 cluster(1, 1, (unsigned)nsplit);
        if (a) vgc_launch_cluster(s, k_decode_tc<T, HD, true, W>, grid, cluster, W * 32, dt_smem<HD, W>(true), DT_ARGS);
        else vgc_launch_cluster(s, k_decode_tc<T, HD, false, W>, grid, cluster, W * 32, dt_smem<HD, W>(false), DT_ARGS);
    } else if (a) {
        vgc_launch(s, k_decode_tc<T, HD, true, W>, grid, W * 32, dt_smem<HD, W>(true), DT_ARGS);
    } else {
        vgc_launch(s, k_decode_tc<T, HD, false, W>, grid, W * 32, dt_smem<HD, W>(false), DT_ARGS);
    }
#undef DT_ARGS
}

/* the split form with four warps a block; the whole form with dt_whole_warps (in clusters of
 * c->whole blocks, up to what the device launches; with four, no cluster) */
template <typename T, int HD>
static void dt_launch_form(vg_bk_stream *s, const vgc_decode_call *c, int nsplit)
{
    if (!c->whole) {
        dt_launch<T, HD, DT_WARPS>(s, c, nsplit);
        return;
    }
    const int nb = c->whole < s->dev->decode_cluster_max ? c->whole : s->dev->decode_cluster_max;
    dt_whole_warps<HD>(s->dev, [&](auto w) {
        constexpr int W = decltype(w)::value;
        dt_launch<T, HD, W>(s, c, W != DT_WARPS && nb > 1 ? nb : 1);
    });
}

int vgc_decode_tc_takes(const vg_bk_stream *s, const vgc_decode_call *c)
{
    const int hd = c->head_dim, group = c->heads / c->kv_heads;
    const bool b16 = c->t == VG_DTYPE_BF16 || c->t == VG_DTYPE_F16;
    /* 16-byte copies of the queries, keys and values: their buffers and strides in whole vectors;
     * the softmax tracks maxima of raw scores, which needs scale > 0 (the CUDA-core kernel scales
     * the queries first) */
    const uintptr_t addr = (uintptr_t)c->q | (uintptr_t)c->k_cache | (uintptr_t)c->v_cache;
    if (s->dev->decode_tc_off || !b16 || (hd != 64 && hd != 128) || group > PD_GMAX || addr % 16 ||
        c->ld_q % 8 || !(c->scale > 0.0f) || s->dev->prop.major < 8 || (c->rope && c->rows > DT_ROPE_MAX_ROWS) ||
        (int64_t)c->kv_heads * hd * 2 > INT_MAX) /* a cache row's bytes: an int (the copies' offsets) */
        return 0;
    const size_t smem = hd == 64 ? dt_smem<64, DT_WARPS>(true) : dt_smem<128, DT_WARPS>(true);
    return smem <= s->dev->prop.sharedMemPerBlockOptin; /* else not prepared: see dt_prepare_warps */
}

vg_status vgc_decode_tc(vg_bk_stream *s, const vgc_decode_call *c)
{
    if (!vgc_decode_tc_takes(s, c)) return VG_ERR_UNSUPPORTED;
    const int hd = c->head_dim;
    const int nsplit = c->whole ? 1
                                : vgc_decode_splits(s, c->rows, c->heads, c->kv_heads, 1, hd, c->max_blocks,
                                                    c->block_size, DT_PER_SM, DT_MIN_CHUNK);
    if (hd == 64) {
        if (c->t == VG_DTYPE_BF16) dt_launch_form<vgc_bf16, 64>(s, c, nsplit);
        else dt_launch_form<vgc_f16, 64>(s, c, nsplit);
    } else {
        if (c->t == VG_DTYPE_BF16) dt_launch_form<vgc_bf16, 128>(s, c, nsplit);
        else dt_launch_form<vgc_f16, 128>(s, c, nsplit);
    }
    VGC_CHECK_LAUNCH("paged_attention (tensor cores)");
    return VG_OK;
}
