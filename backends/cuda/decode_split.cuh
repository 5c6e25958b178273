/* SPDX-License-Identifier: Apache-2.0 */
/* What the two split decode-attention kernels share: ops_lm.cu's CUDA-core kernel (both
 * vendors) and decode_tc.cu's tensor-core one (NVIDIA). A block (of PD_THREADS threads where
 * the slices merge through memory: the merge's; decode_tc.cu's whole form, which has no such
 * merge, has more) takes one query row, the query heads of one KV head (at most PD_GMAX) and one
 * of `nsplit` slices of the row's context; with nsplit > 1 it leaves its slice's unnormalised
 * output, running max (base 2, in scaled units) and sum in the partials (the stream's GEMM
 * workspace), and the last block of the (row, head group) to finish, counted in a counter of the
 * stream's that it puts back to zero (so graphs replay it), merges the slices into the output
 * (pd_join). */
#ifndef VG_CUDA_DECODE_SPLIT_CUH
#define VG_CUDA_DECODE_SPLIT_CUH

#include "kernels.cuh"

#define PD_THREADS 128
#define PD_WARPS (PD_THREADS / 32)
#define PD_GMAX 8       /* query heads of one KV group per block */
#define PD_MAX_SPLIT 256
#define PD_MERGE 4      /* the merge: outputs per thread at a time */
#define PD_MERGE_S 8    /* the merge: slices per batch of loads */

/* The sequence owning a query row: its index, its first query row and the first position of its
 * new tokens (its context length less its query rows). */
struct pd_seq {
    int seq, lo, new0;
};

/* The sequence owning `row` and the last position it attends to (-1: padding, or nothing to
 * attend to), clamped to what the block table can hold. */
__device__ __forceinline__ int64_t pd_last(int row, const int32_t *context_lens,
                                           const int32_t *query_start, int num_seqs, int max_blocks,
                                           int block_size, pd_seq *sq)
{
    *sq = {0, 0, 0};
    /* decode: row r is sequence r's only row, found with three independent loads (its context
     * length read before the check says it is row r's: one memory round trip, not two) */
    int32_t lo = row < num_seqs ? query_start[row] : 0, hi = row < num_seqs ? query_start[row + 1] : 0;
    int32_t len = row < num_seqs ? context_lens[row] : 0;
    int seq = row;
    if (!(row < num_seqs && lo <= row && row < hi)) {
        if (row < query_start[0] || row >= query_start[num_seqs]) return -1;
        seq = vgk_segment_of(query_start, num_seqs, row);
        lo = query_start[seq], hi = query_start[seq + 1], len = context_lens[seq];
    }
    int64_t last = (int64_t)len - (hi - lo) + (row - lo);
    int64_t reach = (int64_t)max_blocks * block_size;
    *sq = {seq, lo, len - (hi - lo)};
    return last < reach ? last : reach - 1;
}

/* Block `split`'s slice [*p0, *p1) of query row `row`'s context (empty when *p0 >= *p1) and the
 * row's sequence: the row's positions cut into nsplit equal slices as the kernel runs. */
__device__ __forceinline__ void pd_slice_range(int row, const int32_t *context_lens, const int32_t *query_start,
                                               int num_seqs, int max_blocks, int block_size, int nsplit,
                                               int split, pd_seq *sq, int64_t *p0, int64_t *p1)
{
    const int64_t npos = pd_last(row, context_lens, query_start, num_seqs, max_blocks, block_size, sq) + 1;
    const int64_t chunk = (npos + nsplit - 1) / nsplit;
    *p0 = (int64_t)split * chunk;
    *p1 = *p0 + chunk < npos ? *p0 + chunk : npos;
}

/* Where the partials of (row, head, slice) live: nsplit·D floats of output per (row, head), then
 * (max, sum) pairs. */
struct pd_parts {
    float *acc, *ml;
    int nsplit;
};

/* The merge's shared memory. */
struct pd_merge_smem {
    float wm[PD_GMAX][PD_MAX_SPLIT], wl[PD_GMAX][PD_MAX_SPLIT]; /* the slices' max, sum */
    float inv[PD_GMAX];
    int last_block;
};

/* The last block of a (row, head group): each head's output is the slices' outputs, each
 * weighted by 2^(its max - the overall max), over the same weighting of their sums. Slices that
 * held no position (max -inf) count for nothing; a row with none is zeros. The partials are
 * read from L2 (other blocks wrote them), every thread's loads in flight together: a chain of
 * dependent loads would cost a round trip each. */
template <typename T>
__device__ void pd_merge(pd_merge_smem &sm, const pd_parts &pt, T *orow, int64_t row, int heads, int h0,
                         int nh, int D)
{
    const int nsplit = pt.nsplit, tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int64_t rh0 = row * heads + h0;
    for (int i = tid; i < nh * nsplit; i += PD_THREADS) {
        int g = i / nsplit, s = i - g * nsplit;
        const float *ml = pt.ml + 2 * ((rh0 + g) * nsplit + s);
        sm.wm[g][s] = vgc_load_coherent(ml);
        sm.wl[g][s] = vgc_load_coherent(ml + 1);
    }
    __syncthreads();
    for (int g = warp; g < nh; g += PD_WARPS) { /* a warp per head: the weights and 1 / sum */
        float m = -INFINITY;
        for (int s = lane; s < nsplit; s += 32) m = fmaxf(m, sm.wm[g][s]);
        m = vgk_warp_max(m);
        float l = 0.0f;
        for (int s = lane; s < nsplit; s += 32) {
            float ms = sm.wm[g][s], w = ms > -INFINITY ? exp2f(ms - m) : 0.0f;
            sm.wm[g][s] = w;
            l += w * sm.wl[g][s];
        }
        l = vgk_warp_sum(l);
        if (lane == 0) sm.inv[g] = l > 0.0f ? 1.0f / l : 0.0f;
    }
    __syncthreads();
    /* each thread PD_MERGE outputs at a time, their slices PD_MERGE_S at a time: every load of a
     * batch unconditional (indices clamped, weights selected), so all are in flight together */
    const int nout = nh * D;
    for (int i0 = 0; i0 < nout; i0 += PD_MERGE * PD_THREADS) {
        const float *src[PD_MERGE];
        int gk[PD_MERGE];
        float v[PD_MERGE];
#pragma unroll
        for (int k = 0; k < PD_MERGE; k++) {
            int i = i0 + tid + k * PD_THREADS;
            i = i < nout ? i : nout - 1;
            gk[k] = i / D;
            src[k] = pt.acc + (rh0 + gk[k]) * nsplit * D + (i - gk[k] * D);
            v[k] = 0.0f;
        }
        for (int s0 = 0; s0 < nsplit; s0 += PD_MERGE_S) {
            float x[PD_MERGE_S][PD_MERGE];
#pragma unroll
            for (int u = 0; u < PD_MERGE_S; u++) {
                const int sc = s0 + u < nsplit ? s0 + u : nsplit - 1;
#pragma unroll
                for (int k = 0; k < PD_MERGE; k++) x[u][k] = vgc_load_coherent(src[k] + (int64_t)sc * D);
            }
#pragma unroll
            for (int u = 0; u < PD_MERGE_S; u++) {
                const int sc = s0 + u < nsplit ? s0 + u : nsplit - 1;
#pragma unroll
                for (int k = 0; k < PD_MERGE; k++) { /* an empty slice left no output (maybe NaN bits) */
                    const float w = s0 + u < nsplit ? sm.wm[gk[k]][sc] : 0.0f;
                    v[k] += w != 0.0f ? x[u][k] * w : 0.0f;
                }
            }
        }
#pragma unroll
        for (int k = 0; k < PD_MERGE; k++) {
            const int i = i0 + tid + k * PD_THREADS;
            if (i < nout) orow[i] = vgk_from_f<T>(v[k] * sm.inv[gk[k]]);
        }
    }
}


/* After a block of a split call left its partials (or marked its slice empty): the last block of
 * the (row, head group), grid y, to finish merges the slices. */
template <typename T>
__device__ void pd_join(pd_merge_smem &sm, const pd_parts &pt, unsigned *counters, T *orow, int64_t row,
                        int heads, int h0, int nh, int D)
{
    unsigned *counter = counters + row * gridDim.y + blockIdx.y;
    __threadfence(); /* this block's partials are visible before the count says so */
    __syncthreads();
    if (threadIdx.x == 0) sm.last_block = atomicAdd(counter, 1u) == (unsigned)pt.nsplit - 1;
    __syncthreads();
    if (!sm.last_block) return;
    __threadfence();
    pd_merge(sm, pt, orow, row, heads, h0, nh, D);
    if (threadIdx.x == 0) *counter = 0; /* ready for the next launch */
}

/* A block whose slice holds no position: with one slice its row (padding, or one with nothing
 * to attend to) is zeros; otherwise the slice gets a max of -inf, so the merge gives it no
 * weight, and the merge may be this block's. */
template <typename T>
__device__ void pd_empty_slice(pd_merge_smem &sm, const pd_parts &pt, unsigned *counters, T *orow, int64_t row,
                               int heads, int h0, int nh, int D, int split)
{
    if (pt.nsplit == 1) {
        for (int i = threadIdx.x; i < nh * D; i += blockDim.x) orow[i] = vgk_from_f<T>(0.0f);
        return;
    }
    if ((int)threadIdx.x < nh) {
        const int64_t at = 2 * ((row * heads + h0 + threadIdx.x) * pt.nsplit + split);
        pt.ml[at] = -INFINITY;
        pt.ml[at + 1] = 0.0f;
    }
    pd_join(sm, pt, counters, orow, row, heads, h0, nh, D);
}

#endif
