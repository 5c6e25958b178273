/* SPDX-License-Identifier: Apache-2.0 */
/* Decoder-LM kernels of the op table (version 4): rotary, rmsnorm_heads, kv_store,
 * paged_attention, argmax, version 6's rotary_kv_store (the first three in one launch) and
 * version 8's rotary_paged_attention (that and paged_attention: in one kernel where decode_tc.cu
 * takes the call, else two launches), correct for every shape the catalogue allows, fp32
 * accumulation.
 * paged_attention is split over the context for decode (see k_paged_split; on NVIDIA, decode_tc.cu's
 * tensor-core kernel takes the BF16/F16 shapes it covers, with the same merge); the others are one
 * block or warp per row or head, their loads batched before first use. The core has validated
 * every call (vg_ops.h); what lives in device memory (positions, slots, block tables, lengths,
 * query starts) is read when the kernel runs, so one capture serves any contents, and values no
 * op could follow (a query row beyond its table, say) are clamped or skipped, as kunlun_stub does. */
#include "decode_split.cuh"
#include "decode_tune.cuh"
#include "kernels.cuh"

/* Every thread of the block gets the block's sum (or max); red holds blockDim.x / 32 floats.
 * Every thread must call it; it synchronises twice. */
__device__ __forceinline__ float vgk_block_reduce(float v, float *red, int is_max)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    v = is_max ? vgk_warp_max(v) : vgk_warp_sum(v);
    __syncthreads(); /* red may still be read by a previous reduction */
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float r = red[0];
    for (int w = 1; w < nw; w++) r = is_max ? fmaxf(r, red[w]) : r + red[w];
    return r;
}

/* ---- rotary: one position axis, split half ------------------------------------------------- */

/* A block per row (grid-stride); its threads over (head, i < half), ROT_NB pairs at a time. */
#define ROT_NB 4
template <typename T>
__global__ void k_rotary(T *x, int64_t ld, int rows, int heads, int head_dim, const int32_t *pos,
                         float log2_theta)
{
    vgk_grid_sync();
    int half = head_dim / 2, per_row = heads * half;
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        float p = (float)pos[r];
        T *row = x + (int64_t)r * ld;
        /* ROT_NB pairs at a time, every load issued before the first is used (indices clamped) */
        for (int t0 = threadIdx.x; t0 < per_row; t0 += blockDim.x * ROT_NB) {
            T a0[ROT_NB], a1[ROT_NB];
            int64_t at[ROT_NB];
            int ii[ROT_NB];
#pragma unroll
            for (int k = 0; k < ROT_NB; k++) {
                int t = t0 + (int)blockDim.x * k < per_row ? t0 + (int)blockDim.x * k : per_row - 1;
                int h = t / half;
                ii[k] = t - h * half;
                at[k] = (int64_t)h * head_dim + ii[k];
                a0[k] = row[at[k]], a1[k] = row[at[k] + half];
            }
#pragma unroll
            for (int k = 0; k < ROT_NB; k++) {
                if (t0 + (int)blockDim.x * k < per_row) {
                    float c, sn;
                    sincosf(p * exp2f(-log2_theta * (float)(2 * ii[k]) / (float)head_dim), &sn, &c);
                    float x0 = vgk_to_f(a0[k]), x1 = vgk_to_f(a1[k]);
                    row[at[k]] = vgk_from_f<T>(x0 * c - x1 * sn);
                    row[at[k] + half] = vgk_from_f<T>(x1 * c + x0 * sn);
                }
            }
        }
    }
}

static unsigned rows_grid(int64_t rows)
{
    return (unsigned)(rows < 65535 * 16 ? rows : 65535 * 16);
}

vg_status vgc_op_rotary(vg_bk_device *, vg_bk_stream *s, vg_dtype t, void *x, int64_t ld,
                        int64_t rows, int heads, int head_dim, const int32_t *pos, float theta)
{
    if (!rows) return VG_OK;
    VGK_FLOAT_DISPATCH(t, T, vgc_launch(s, k_rotary<T>, rows_grid(rows), 128, 0, (T *)x, ld,
                                        (int)rows, heads, head_dim, pos, log2f(theta)));
    VGC_CHECK_LAUNCH("rotary");
    return VG_OK;
}

/* ---- rmsnorm_heads ------------------------------------------------------------------------------ */

/* A warp per (row, head), grid-stride; statistics in fp32. */
template <typename T>
__global__ void k_rmsnorm_heads(T *x, int64_t ld, int rows, int heads, int head_dim, const T *w,
                                float eps)
{
    vgk_grid_sync();
    int lane = threadIdx.x % 32;
    int64_t n = (int64_t)rows * heads, wpb = blockDim.x / 32;
    for (int64_t i = blockIdx.x * wpb + threadIdx.x / 32; i < n; i += (int64_t)gridDim.x * wpb) {
        int64_t r = i / heads;
        int h = (int)(i - r * heads);
        T *base = x + r * ld + (int64_t)h * head_dim;
        float ss = 0.0f;
        for (int c = lane; c < head_dim; c += 32) {
            float v = vgk_to_f(base[c]);
            ss += v * v;
        }
        ss = vgk_warp_sum(ss);
        float inv = rsqrtf(ss / (float)head_dim + eps);
        for (int c = lane; c < head_dim; c += 32)
            base[c] = vgk_from_f<T>(vgk_to_f(w[c]) * (vgk_to_f(base[c]) * inv));
    }
}

vg_status vgc_op_rmsnorm_heads(vg_bk_device *, vg_bk_stream *s, vg_dtype t, void *x, int64_t ld,
                               int64_t rows, int heads, int head_dim, const void *w, float eps)
{
    if (!rows) return VG_OK;
    int64_t warps = rows * heads, blocks = (warps + 7) / 8;
    unsigned g = (unsigned)(blocks < 65535 * 16 ? blocks : 65535 * 16);
    VGK_FLOAT_DISPATCH(t, T, vgc_launch(s, k_rmsnorm_heads<T>, g, 256, 0, (T *)x, ld, (int)rows,
                                        heads, head_dim, (const T *)w, eps));
    VGC_CHECK_LAUNCH("rmsnorm_heads");
    return VG_OK;
}

/* ---- kv_store -------------------------------------------------------------------------------------- */

/* A block per row (grid-stride); a negative slot is a padding row and writes nothing. */
template <typename T>
__global__ void k_kv_store(const T *k, int64_t ld_k, const T *v, int64_t ld_v, T *k_cache,
                           T *v_cache, const int32_t *slots, int rows, int width)
{
    vgk_grid_sync();
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        int32_t slot = slots[r];
        if (slot < 0) continue;
        T *kd = k_cache + (int64_t)slot * width, *vd = v_cache + (int64_t)slot * width;
        const T *ks = k + (int64_t)r * ld_k, *vs = v + (int64_t)r * ld_v;
        for (int c = threadIdx.x; c < width; c += blockDim.x) {
            kd[c] = ks[c];
            vd[c] = vs[c];
        }
    }
}

vg_status vgc_op_kv_store(vg_bk_device *, vg_bk_stream *s, vg_dtype t, const void *k, int64_t ld_k,
                          const void *v, int64_t ld_v, void *k_cache, void *v_cache,
                          const int32_t *slots, int64_t rows, int kv_heads, int head_dim)
{
    if (!rows) return VG_OK;
    int64_t width = (int64_t)kv_heads * head_dim;
    if (width > 0x7fffffffLL)
        return VGC_ERR(VG_ERR_UNSUPPORTED, VG_VENDOR_NAME ": kv_store: kv_heads*head_dim %lld "
                       "exceeds 2^31-1", (long long)width);
    VGK_FLOAT_DISPATCH(t, T, vgc_launch(s, k_kv_store<T>, rows_grid(rows), 128, 0, (const T *)k,
                                        ld_k, (const T *)v, ld_v, (T *)k_cache, (T *)v_cache,
                                        slots, (int)rows, (int)width));
    VGC_CHECK_LAUNCH("kv_store");
    return VG_OK;
}

/* ---- rotary_kv_store: q/k norms, rotary and the cache store in one launch ----------------------- */

/* rotary_paged_attention's norm_x and qkv_bias (op table version 10): the rows rotary_kv_store's
 * work takes are qkv[r]·(1/rms(x[r])) + bias (x null: qkv as it is). */
template <typename T> struct rkv_rows {
    const T *x;
    int64_t ld_x;
    int cols;
    float eps;
    const T *bias; /* [(heads + 2·kv_heads)·head_dim], optional */
};

/* 1/sqrt(mean(x²) + eps) of the row x[0 .. cols), by one warp (every lane calls it), lane l summing
 * the 16-byte vectors l, l + 32, ... where the row and cols allow, else the elements l, l + 32, ...
 * (zeros past the row add nothing). The decode kernel shares a row among a block's warps instead
 * (decode_tc.cu, dt_x_share): the two round differently. */
template <typename T>
__device__ __forceinline__ float rkv_row_inv_rms(const T *x, int cols, float eps)
{
    /* loads in batches of B a lane, each predicated rather than behind a loop's bound, so that a
     * batch is one round trip (a row of up to 32·B vectors: one) */
    constexpr int V = 16 / sizeof(T), B = 4;
    const int lane = threadIdx.x % 32;
    float ss = 0.0f;
    if ((uintptr_t)x % 16 == 0 && cols % V == 0) {
        const int n = cols / V;
        for (int v0 = 0; v0 < n; v0 += 32 * B) {
            uint4 u[B];
#pragma unroll
            for (int k = 0; k < B; k++) {
                const int v = v0 + lane + 32 * k;
                u[k] = v < n ? *(const uint4 *)(x + (int64_t)v * V) : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int k = 0; k < B; k++) {
                const T *e = reinterpret_cast<const T *>(&u[k]);
#pragma unroll
                for (int i = 0; i < V; i++) ss += vgk_to_f(e[i]) * vgk_to_f(e[i]);
            }
        }
    } else {
        for (int c0 = 0; c0 < cols; c0 += 32 * B * V) {
            float f[B * V];
#pragma unroll
            for (int k = 0; k < B * V; k++) {
                const int c = c0 + lane + 32 * k;
                f[k] = c < cols ? vgk_to_f(x[c]) : 0.0f;
            }
#pragma unroll
            for (int k = 0; k < B * V; k++) ss += f[k] * f[k];
        }
    }
    return rsqrtf(vgk_warp_sum(ss) / (float)cols + eps);
}

/* A warp per (row, head slice) over the heads + 2·kv_heads slices of a qkv row, grid-stride. A
 * query or key slice: its rmsnorm (w set: statistics by the warp, the result rounded to T as
 * rmsnorm_heads leaves it), then each lane rotates its pairs in place, and a key slice also goes
 * to the cache; a value slice is only copied to the cache. With xr.x every element is first the
 * scaled row's (vgk_row_scaled; the value slice in qkv is left as it was). The branches are per
 * warp. */
template <typename T>
__global__ void k_rotary_kv_store(T *x, int64_t ld, int rows, int heads, int kv_heads, int head_dim,
                                  const T *q_norm, const T *k_norm, float eps, const int32_t *pos,
                                  float log2_theta, T *k_cache, T *v_cache, const int32_t *slots, rkv_rows<T> xr)
{
    vgk_grid_sync();
    const int lane = threadIdx.x % 32, half = head_dim / 2, per_row = heads + 2 * kv_heads;
    const int64_t n = (int64_t)rows * per_row, wpb = blockDim.x / 32, width = (int64_t)kv_heads * head_dim;
    for (int64_t i = blockIdx.x * wpb + threadIdx.x / 32; i < n; i += (int64_t)gridDim.x * wpb) {
        const int64_t r = i / per_row;
        const int h = (int)(i - r * per_row);
        T *base = x + r * ld + (int64_t)h * head_dim;
        const int32_t slot = slots[r];
        if (h >= heads + kv_heads && slot < 0) continue; /* a value slice with nowhere to go */
        const T *xb = xr.bias ? xr.bias + (int64_t)h * head_dim : nullptr;
        const float xs = xr.x ? rkv_row_inv_rms(xr.x + r * xr.ld_x, xr.cols, xr.eps) : 1.0f;
        auto at = [&](int c) { return xr.x ? vgk_row_scaled(base[c], xs, xb ? vgk_to_f(xb[c]) : 0.0f) : base[c]; };
        if (h >= heads + kv_heads) { /* a value slice */
            T *vd = v_cache + (int64_t)slot * width + (int64_t)(h - heads - kv_heads) * head_dim;
            for (int c = lane; c < head_dim; c += 32) vd[c] = at(c);
            continue;
        }
        const T *w = h < heads ? q_norm : k_norm;
        float inv = 1.0f;
        if (w) {
            float ss = 0.0f;
            for (int c = lane; c < head_dim; c += 32) {
                float v = vgk_to_f(at(c));
                ss += v * v;
            }
            inv = vgk_head_inv_rms(ss, head_dim, eps);
        }
        const float p = (float)pos[r];
        T *kd = h >= heads && slot >= 0
                    ? k_cache + (int64_t)slot * width + (int64_t)(h - heads) * head_dim
                    : nullptr;
        for (int j = lane; j < half; j += 32) {
            T y0 = at(j), y1 = at(j + half);
            float c, sn;
            vgk_rotary_cs(j, head_dim, p, log2_theta, &c, &sn);
            vgk_norm_rotate(y0, y1, w != nullptr, w ? vgk_to_f(w[j]) : 0.0f, w ? vgk_to_f(w[j + half]) : 0.0f, inv,
                            c, sn);
            base[j] = y0;
            base[j + half] = y1;
            if (kd) {
                kd[j] = y0;
                kd[j + half] = y1;
            }
        }
    }
}

/* rotary_kv_store's launch; a rotary_paged_attention call's (rp) with its norm_x and qkv_bias */
static vg_status rkv_launch(vg_bk_stream *s, vg_dtype t, void *qkv, int64_t ld, int64_t rows, int heads,
                            int kv_heads, int head_dim, const void *q_norm, const void *k_norm, float eps,
                            const int32_t *pos, float theta, void *k_cache, void *v_cache, const int32_t *slots,
                            const vg_rotary_paged_args *rp)
{
    if (!rows) return VG_OK;
    int64_t warps = rows * (heads + 2 * (int64_t)kv_heads), blocks = (warps + 3) / 4;
    unsigned g = (unsigned)(blocks < 65535 * 16 ? blocks : 65535 * 16);
    const bool nx = rp && rp->norm_x;
    VGK_FLOAT_DISPATCH(t, T,
                       const rkv_rows<T> xr = {nx ? (const T *)rp->norm_x : nullptr, nx ? rp->ld_norm_x : 0,
                                               nx ? (int)rp->norm_x_cols : 0, nx ? rp->norm_x_eps : 0.0f,
                                               nx ? (const T *)rp->qkv_bias : nullptr};
                       vgc_launch(s, k_rotary_kv_store<T>, g, 128, 0, (T *)qkv, ld, (int)rows, heads, kv_heads,
                                  head_dim, (const T *)q_norm, (const T *)k_norm, eps, pos, log2f(theta),
                                  (T *)k_cache, (T *)v_cache, slots, xr));
    VGC_CHECK_LAUNCH("rotary_kv_store");
    return VG_OK;
}

vg_status vgc_op_rotary_kv_store(vg_bk_device *, vg_bk_stream *s, vg_dtype t, void *qkv, int64_t ld,
                                 int64_t rows, int heads, int kv_heads, int head_dim,
                                 const void *q_norm, const void *k_norm, float eps,
                                 const int32_t *pos, float theta, void *k_cache, void *v_cache,
                                 const int32_t *slots)
{
    return rkv_launch(s, t, qkv, ld, rows, heads, kv_heads, head_dim, q_norm, k_norm, eps, pos, theta, k_cache,
                      v_cache, slots, nullptr);
}

/* ---- paged_attention ---------------------------------------------------------------------------- */

#define PA_THREADS 128
#define PA_MAX_DIMS (VG_ATTENTION_MAX_HEAD_DIM / PA_THREADS) /* output dims per thread */

/* The first version, kept for caches the split kernel cannot read with 16-byte loads and for
 * comparison (VG_CUDA_ATTENTION=simple): a block per (query row, head). The context is walked in
 * tiles of PA_THREADS positions: each thread scores one position of the tile (a whole dot
 * product), the block takes the tile's max and sum for an online softmax in fp32, then each
 * thread accumulates its output dimensions over the tile. Rows outside every sequence are
 * written as zeros. */
template <typename T>
__global__ void __launch_bounds__(PA_THREADS)
k_paged_attention(const T *q, int64_t ld_q, T *out, int64_t ld_out, int rows, const T *k_cache,
                  const T *v_cache, const int32_t *block_tables, int max_blocks,
                  const int32_t *context_lens, const int32_t *query_start, int num_seqs,
                  int heads, int kv_heads, int head_dim, int block_size, float scale)
{
    vgk_grid_sync();
    __shared__ float q_s[VG_ATTENTION_MAX_HEAD_DIM];
    __shared__ float p_s[PA_THREADS];
    __shared__ int64_t slot_s[PA_THREADS];
    __shared__ float red[PA_THREADS / 32];
    const int row = blockIdx.x, h = blockIdx.y, tid = threadIdx.x;
    T *o = out + (int64_t)row * ld_out + (int64_t)h * head_dim;
    /* the sequence of this row: the last s with query_start[s] <= row, when row is inside one */
    int64_t last = -1;
    int seq = 0;
    if (row >= query_start[0] && row < query_start[num_seqs]) {
        int lo = 0, hi = num_seqs - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) / 2;
            if (query_start[mid] <= row) lo = mid;
            else hi = mid - 1;
        }
        seq = lo;
        int64_t n = (int64_t)query_start[seq + 1] - query_start[seq];
        last = (int64_t)context_lens[seq] - n + (row - query_start[seq]);
        int64_t reach = (int64_t)max_blocks * block_size; /* positions the table can hold */
        if (last >= reach) last = reach - 1;
    }
    if (last < 0) { /* padding, or a row with no position to attend to */
        for (int d = tid; d < head_dim; d += PA_THREADS) o[d] = vgk_from_f<T>(0.0f);
        return;
    }
    const int64_t cache_ld = (int64_t)kv_heads * head_dim;
    const int64_t ko = (int64_t)(h / (heads / kv_heads)) * head_dim;
    const T *qr = q + (int64_t)row * ld_q + (int64_t)h * head_dim;
    for (int d = tid; d < head_dim; d += PA_THREADS) q_s[d] = vgk_to_f(qr[d]);
    const int32_t *table = block_tables + (int64_t)seq * max_blocks;
    float acc[PA_MAX_DIMS];
#pragma unroll
    for (int e = 0; e < PA_MAX_DIMS; e++) acc[e] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    __syncthreads();
    for (int64_t t0 = 0; t0 <= last; t0 += PA_THREADS) {
        int64_t p = t0 + tid;
        float score = -INFINITY;
        int64_t slot = 0;
        if (p <= last) {
            slot = (int64_t)table[p / block_size] * block_size + p % block_size;
            const T *kr = k_cache + slot * cache_ld + ko;
            float dot = 0.0f;
            for (int d = 0; d < head_dim; d++) dot += q_s[d] * vgk_to_f(kr[d]);
            score = dot * scale;
        }
        float tile_max = vgk_block_reduce(score, red, 1);
        float m_new = fmaxf(m, tile_max); /* finite: position t0 <= last is in the tile */
        float e = p <= last ? expf(score - m_new) : 0.0f;
        p_s[tid] = e;
        slot_s[tid] = slot;
        float tile_sum = vgk_block_reduce(e, red, 0); /* its barriers also publish p_s, slot_s */
        float corr = expf(m - m_new);
        l = l * corr + tile_sum;
        int n_tile = (int)(last - t0 + 1 < PA_THREADS ? last - t0 + 1 : PA_THREADS);
#pragma unroll
        for (int k = 0; k < PA_MAX_DIMS; k++) {
            int d = tid + k * PA_THREADS;
            if (d >= head_dim) break;
            float a = acc[k] * corr;
            for (int j = 0; j < n_tile; j++) a += p_s[j] * vgk_to_f(v_cache[slot_s[j] * cache_ld + ko + d]);
            acc[k] = a;
        }
        m = m_new;
        __syncthreads(); /* p_s and slot_s are rewritten by the next tile */
    }
    float inv = 1.0f / l;
#pragma unroll
    for (int k = 0; k < PA_MAX_DIMS; k++) {
        int d = tid + k * PA_THREADS;
        if (d < head_dim) o[d] = vgk_from_f<T>(acc[k] * inv);
    }
}

/* The split kernel ("flash decoding"). A block takes one query row, up to PD_GMAX query heads of
 * one KV group (grouped-query: the heads share every key and value the block loads) and one of
 * `nsplit` slices of the row's context. The slices are cut from the row's length as the kernel
 * runs (the lengths live in device memory), so one launch shape serves any lengths and a graph
 * captures it once. Keys and values are read with 16-byte loads, NVP lanes per cache row (NVP:
 * head_dim / 8 rounded up to a power of two); the slice is walked in tiles of up to PD_TILE
 * positions with an online softmax in fp32 (base 2: q is pre-scaled by scale·log2 e). With
 * nsplit = 1 the block writes the output; otherwise it writes its unnormalised output, running
 * max and sum to the partials (the stream's GEMM workspace), and the last block of the row and
 * head group to finish (a counter of the stream's, put back to zero by that block, so graphs
 * replay it) merges the slices into the output. */
#define PD_TILE 64      /* positions per tile: two per lane in the softmax step */
#define PD_MIN_CHUNK 32 /* positions per slice, at least, at the table's full reach */
#define PD_PER_SM 3     /* blocks a multiprocessor holds (registers), for the slice count */

/* 8 consecutive elements: one 16-byte load (two for F32); the address is aligned to 8 elements. */
template <typename T> struct alignas(sizeof(T) * 8) pd_vec8 { T v[8]; };

template <typename T>
__device__ __forceinline__ void pd_load8(const T *p, float f[8])
{
    pd_vec8<T> a = *(const pd_vec8<T> *)p;
#pragma unroll
    for (int e = 0; e < 8; e++) f[e] = vgk_to_f(a.v[e]);
}

/* Shared memory of one block. */
struct pd_smem {
    alignas(16) float q[PD_GMAX][VG_ATTENTION_MAX_HEAD_DIM]; /* the heads' queries, pre-scaled */
    float p[PD_GMAX][PD_TILE];                   /* a tile's scores, then their exponentials */
    int64_t slot[PD_TILE];                       /* the tile's cache slots */
    float m[PD_GMAX], l[PD_GMAX], corr[PD_GMAX]; /* running max and sum, this tile's rescale */
    float red[PD_WARPS][VG_ATTENTION_MAX_HEAD_DIM];
    pd_merge_smem merge;
};

/* One slice [p0, p1) of one row for the heads h0 .. h0 + nh - 1 of KV head kvh: the normalised
 * output (nsplit 1) or the partials of slice `split`. A tile is NP passes of PPP positions (each
 * NVP-lane group one position, each lane 8 dimensions); a thread loads the keys and the values
 * of all its positions of the tile at once, so a tile costs one memory round trip, not one per
 * pass. */
template <typename T, int NVP>
__device__ __forceinline__ void
pd_slice(pd_smem &sm, const T *qr, T *orow, const T *k_cache, const T *v_cache, const int32_t *table,
         int kv_heads, int kvh, int h0, int nh, int D, int block_size, float scale_log2, int64_t p0,
         int64_t p1, const pd_parts &pt, int64_t row, int heads, int split)
{
    constexpr int PPP = PD_THREADS / NVP;                 /* positions per pass */
    constexpr int NP = PD_TILE / PPP < 4 ? PD_TILE / PPP : 4; /* passes per tile */
    constexpr int TILE = NP * PPP;
    static_assert(PD_TILE == 64 && TILE <= PD_TILE && NP >= 1, "the softmax step takes two positions per lane");
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int nv = D / 8, dv = tid % NVP, pg = tid / NVP;
    /* the heads' queries: a fixed count of loads, clamped into the row, all in flight together
     * (a loop whose bound is known only at run time issues them one round trip after another) */
    constexpr int QK = PD_GMAX * VG_ATTENTION_MAX_HEAD_DIM / PD_THREADS;
    const int nq = nh * D;
    T qv[QK];
#pragma unroll
    for (int k = 0; k < QK; k++) {
        const int i = tid + k * PD_THREADS;
        qv[k] = qr[i < nq ? i : nq - 1];
    }
#pragma unroll
    for (int k = 0; k < QK; k++) {
        const int i = tid + k * PD_THREADS;
        if (i < PD_GMAX * D) {
            const int g = i / D;
            sm.q[g][i - g * D] = i < nq ? vgk_to_f(qv[k]) * scale_log2 : 0.0f;
        }
    }
    if (tid < PD_GMAX) sm.m[tid] = -INFINITY, sm.l[tid] = 0.0f;
    const int64_t cache_ld = (int64_t)kv_heads * D, ko = (int64_t)kvh * D + dv * 8;
    float acc[PD_GMAX][8];
#pragma unroll
    for (int g = 0; g < PD_GMAX; g++)
#pragma unroll
        for (int e = 0; e < 8; e++) acc[g][e] = 0.0f;

    for (int64_t t0 = p0; t0 < p1; t0 += TILE) {
        const int nt = (int)(p1 - t0 < TILE ? p1 - t0 : TILE);
        if (tid < nt) { /* (the first tile's table reads overlap the query's) */
            int64_t p = t0 + tid;
            sm.slot[tid] = (int64_t)table[p / block_size] * block_size + p % block_size;
        }
        __syncthreads(); /* slots, q, m and l are set; the previous tile's readers of p are done */
        pd_vec8<T> kr[NP], vr[NP];
#pragma unroll
        for (int it = 0; it < NP; it++) {
            const int j = it * PPP + pg;
            if (j < nt && dv < nv) {
                const int64_t at = sm.slot[j] * cache_ld + ko;
                kr[it] = *(const pd_vec8<T> *)(k_cache + at);
                vr[it] = *(const pd_vec8<T> *)(v_cache + at);
            }
        }
        /* scores of every head */
#pragma unroll
        for (int it = 0; it < NP; it++) {
            const int j = it * PPP + pg;
            float dot[PD_GMAX];
#pragma unroll
            for (int g = 0; g < PD_GMAX; g++) dot[g] = 0.0f;
            if (j < nt && dv < nv) {
                float kf[8];
#pragma unroll
                for (int e = 0; e < 8; e++) kf[e] = vgk_to_f(kr[it].v[e]);
#pragma unroll
                for (int g = 0; g < PD_GMAX; g++) {
                    if (g < nh) {
                        const float4 *qq = (const float4 *)&sm.q[g][dv * 8]; /* two 16-byte reads */
                        float4 qa = qq[0], qb = qq[1];
                        dot[g] += qa.x * kf[0] + qa.y * kf[1] + qa.z * kf[2] + qa.w * kf[3] +
                                  qb.x * kf[4] + qb.y * kf[5] + qb.z * kf[6] + qb.w * kf[7];
                    }
                }
            }
#pragma unroll
            for (int g = 0; g < PD_GMAX; g++) { /* uniform loops: the shuffles see every lane */
                if (g < nh) {
#pragma unroll
                    for (int o = NVP / 2; o > 0; o >>= 1) dot[g] += __shfl_xor_sync(0xffffffffu, dot[g], o);
                    if (j < nt && dv == 0) sm.p[g][j] = dot[g];
                }
            }
        }
        __syncthreads();
        /* online softmax: warp w takes heads w, w + PD_WARPS, ... */
        for (int g = warp; g < nh; g += PD_WARPS) {
            float s0 = lane < nt ? sm.p[g][lane] : -INFINITY;
            float s1 = lane + 32 < nt ? sm.p[g][lane + 32] : -INFINITY;
            float m_old = sm.m[g], m_new = fmaxf(m_old, vgk_warp_max(fmaxf(s0, s1)));
            float e0 = lane < nt ? exp2f(s0 - m_new) : 0.0f;
            float e1 = lane + 32 < nt ? exp2f(s1 - m_new) : 0.0f;
            if (lane < nt) sm.p[g][lane] = e0;
            if (lane + 32 < nt) sm.p[g][lane + 32] = e1;
            float sum = vgk_warp_sum(e0 + e1);
            __syncwarp(); /* every lane has read m[g] before lane 0 rewrites it (racecheck sees
                             a barrier here, not in the shuffles) */
            if (lane == 0) {
                float corr = exp2f(m_old - m_new); /* 0 on the first tile (m_old = -inf) */
                sm.corr[g] = corr;
                sm.l[g] = sm.l[g] * corr + sum;
                sm.m[g] = m_new;
            }
        }
        __syncthreads();
        /* values, already in registers */
        if (dv < nv) {
#pragma unroll
            for (int g = 0; g < PD_GMAX; g++) {
                if (g < nh) {
                    float corr = sm.corr[g];
#pragma unroll
                    for (int e = 0; e < 8; e++) acc[g][e] *= corr;
                }
            }
#pragma unroll
            for (int it = 0; it < NP; it++) {
                const int j = it * PPP + pg;
                if (j < nt) {
                    float vf[8];
#pragma unroll
                    for (int e = 0; e < 8; e++) vf[e] = vgk_to_f(vr[it].v[e]);
#pragma unroll
                    for (int g = 0; g < PD_GMAX; g++) {
                        if (g < nh) {
                            float p = sm.p[g][j];
#pragma unroll
                            for (int e = 0; e < 8; e++) acc[g][e] += p * vf[e];
                        }
                    }
                }
            }
        }
    }
    /* combine the position groups: the lanes of a warp that share dv, then the warps */
#pragma unroll
    for (int g = 0; g < PD_GMAX; g++) {
        if (g < nh) {
#pragma unroll
            for (int e = 0; e < 8; e++)
#pragma unroll
                for (int o = NVP; o < 32; o <<= 1) acc[g][e] += __shfl_xor_sync(0xffffffffu, acc[g][e], o);
        }
    }
#pragma unroll
    for (int g = 0; g < PD_GMAX; g++) {
        if (g < nh) {
            __syncthreads(); /* red is free (and l final) */
            if (lane < NVP && dv < nv)
#pragma unroll
                for (int e = 0; e < 8; e++) sm.red[warp][dv * 8 + e] = acc[g][e];
            __syncthreads();
            const int64_t rh = row * heads + h0 + g;
            for (int d = tid; d < D; d += PD_THREADS) {
                float v = 0.0f;
#pragma unroll
                for (int w = 0; w < PD_WARPS; w++) v += sm.red[w][d];
                if (pt.nsplit == 1) orow[(int64_t)g * D + d] = vgk_from_f<T>(v / sm.l[g]);
                else pt.acc[(rh * pt.nsplit + split) * D + d] = v;
            }
            if (pt.nsplit > 1 && tid == 0) {
                pt.ml[2 * (rh * pt.nsplit + split)] = sm.m[g];
                pt.ml[2 * (rh * pt.nsplit + split) + 1] = sm.l[g];
            }
        }
    }
}

/* grid: x = query row, y = KV head · hchunks + head chunk, z = slice. */
template <typename T, int NVP>
__global__ void __launch_bounds__(PD_THREADS, PD_PER_SM)
k_paged_split(const T *q, int64_t ld_q, T *out, int64_t ld_out, const T *k_cache, const T *v_cache,
              const int32_t *block_tables, int max_blocks, const int32_t *context_lens,
              const int32_t *query_start, int num_seqs, int heads, int kv_heads, int head_dim,
              int block_size, float scale_log2, int hchunks, int hpb, int nsplit, float *part,
              unsigned *counters)
{
    vgk_grid_sync();
    __shared__ pd_smem sm;
    const int row = blockIdx.x, D = head_dim, split = blockIdx.z;
    const int group = heads / kv_heads, kvh = (int)blockIdx.y / hchunks, hc = (int)blockIdx.y % hchunks;
    const int h0 = kvh * group + hc * hpb;
    const int nh = group - hc * hpb < hpb ? group - hc * hpb : hpb;
    const int64_t rows = gridDim.x;
    const pd_parts pt = {part, part ? part + rows * heads * (int64_t)nsplit * D : nullptr, nsplit};
    T *orow = out + (int64_t)row * ld_out + (int64_t)h0 * D;

    pd_seq sq;
    int64_t p0, p1;
    pd_slice_range(row, context_lens, query_start, num_seqs, max_blocks, block_size, nsplit, split, &sq, &p0, &p1);
    const int seq = sq.seq;
    if (p0 >= p1) {
        pd_empty_slice(sm.merge, pt, counters, orow, row, heads, h0, nh, D, split);
        return;
    }
    pd_slice<T, NVP>(sm, q + (int64_t)row * ld_q + (int64_t)h0 * D, orow, k_cache, v_cache,
                     block_tables + (int64_t)seq * max_blocks, kv_heads, kvh, h0, nh, D, block_size, scale_log2,
                     p0, p1, pt, row, heads, split);
    if (nsplit > 1) pd_join(sm.merge, pt, counters, orow, row, heads, h0, nh, D);
}

/* Slices per row: when rows are few (decode), as many blocks as one wave over the GPU holds
 * (per_sm blocks fit a multiprocessor: the kernel's __launch_bounds__ or shared memory; a second
 * wave of a few blocks doubled the kernel's time); one when they are many (prefill); at least
 * min_chunk positions each at the table's full reach; the partials must fit the stream's GEMM
 * workspace and the (row, head group) pairs its counters (HIP has neither: one slice). */
int vgc_decode_splits(const vg_bk_stream *s, int64_t rows, int heads, int kv_heads, int hchunks, int head_dim,
                      int max_blocks, int block_size, int per_sm, int min_chunk)
{
    int64_t items = rows * kv_heads * hchunks, target = per_sm * (int64_t)s->dev->prop.multiProcessorCount;
    if (items >= target || !s->counters || items > VGC_COUNTERS - VGC_COUNTERS_ATTENTION) return 1;
    int64_t n = target / items; /* rounded down: one wave */
    int64_t by_len = ((int64_t)max_blocks * block_size + min_chunk - 1) / min_chunk;
    if (n > by_len) n = by_len;
    if (n > PD_MAX_SPLIT) n = PD_MAX_SPLIT;
    size_t per_split = (size_t)rows * (size_t)heads * (size_t)(head_dim + 2) * sizeof(float);
    if (per_split * (size_t)n > s->gemm_workspace_bytes) n = (int64_t)(s->gemm_workspace_bytes / per_split);
    return n < 1 ? 1 : (int)n;
}

/* Query heads per block. A block's work is a chain of dependent steps run by four warps, so when
 * the (row, KV head) pairs are very few (decode at batch 1) a block's length is the kernel's
 * time: down to two heads per block make more, shorter blocks (the heads of a KV group then
 * re-read its keys and values, from L2). Measured on the H100 (docs/performance.md): 10% off a
 * batch-1 step of Qwen2.5-0.5B; fewer heads per block lose from batch 16 on, one head per block
 * everywhere. VG_CUDA_DECODE_HEADS=1..8 fixes the count. */
static int pd_heads_per_block(const vg_bk_stream *s, int64_t rows, int heads, int kv_heads)
{
    const int group = heads / kv_heads;
    int hpb = s->dev->decode_heads ? s->dev->decode_heads : PD_GMAX;
    if (!s->dev->decode_heads)
        while (hpb > 2 && 8 * rows * kv_heads * ((group + hpb - 1) / hpb) < s->dev->prop.multiProcessorCount)
            hpb /= 2;
    return hpb < group ? hpb : (group < PD_GMAX ? group : PD_GMAX);
}

template <typename T, int NVP>
static void pd_launch(vg_bk_stream *s, dim3 grid, const T *q, int64_t ld_q, T *out, int64_t ld_out,
                      const T *kc, const T *vc, const int32_t *bt, int max_blocks, const int32_t *cl,
                      const int32_t *qs, int num_seqs, int heads, int kv_heads, int head_dim,
                      int block_size, float scale_log2, int hchunks, int hpb, int nsplit, float *part,
                      unsigned *counters)
{
    vgc_launch(s, k_paged_split<T, NVP>, grid, PD_THREADS, 0, q, ld_q, out, ld_out, kc, vc, bt,
               max_blocks, cl, qs, num_seqs, heads, kv_heads, head_dim, block_size, scale_log2,
               hchunks, hpb, nsplit, part, counters);
}

template <typename T>
static vg_status pd_run(vg_bk_stream *s, const T *q, int64_t ld_q, T *out, int64_t ld_out,
                        int64_t rows, const T *kc, const T *vc, const int32_t *bt, int max_blocks,
                        const int32_t *cl, const int32_t *qs, int num_seqs, int heads, int kv_heads,
                        int head_dim, int block_size, float scale, int whole)
{
    const int hpb = pd_heads_per_block(s, rows, heads, kv_heads);
    const int hchunks = (heads / kv_heads + hpb - 1) / hpb;
    const int nsplit = whole ? 1
                             : vgc_decode_splits(s, rows, heads, kv_heads, hchunks, head_dim, max_blocks, block_size,
                                                 PD_PER_SM, PD_MIN_CHUNK);
    float *part = nsplit > 1 ? (float *)s->gemm_workspace : nullptr;
    unsigned *counters = nsplit > 1 ? s->counters + VGC_COUNTERS_ATTENTION : nullptr;
    const float scale_log2 = scale * 1.4426950408889634f;
    dim3 grid((unsigned)rows, (unsigned)(kv_heads * hchunks), (unsigned)nsplit);
    const int nv = head_dim / 8;
#define PD_ARGS s, grid, q, ld_q, out, ld_out, kc, vc, bt, max_blocks, cl, qs, num_seqs, heads, kv_heads, \
                head_dim, block_size, scale_log2, hchunks, hpb, nsplit, part, counters
    if (nv <= 2) pd_launch<T, 2>(PD_ARGS);
    else if (nv <= 4) pd_launch<T, 4>(PD_ARGS);
    else if (nv <= 8) pd_launch<T, 8>(PD_ARGS);
    else if (nv <= 16) pd_launch<T, 16>(PD_ARGS);
    else pd_launch<T, 32>(PD_ARGS);
#undef PD_ARGS
    VGC_CHECK_LAUNCH("paged_attention");
    return VG_OK;
}

vg_status vgc_decode_rope_first(vg_bk_stream *s, const vgc_decode_call *c)
{
    const vg_rotary_paged_args *a = c->rope;
    if (!a) return VG_OK;
    return rkv_launch(s, a->dtype, a->qkv, a->ld, a->rows, a->heads, a->kv_heads, a->head_dim, a->q_norm,
                      a->k_norm, a->eps, a->pos, a->theta, a->k_cache, a->v_cache, a->slots, a);
}

/* vg's own kernels for a split-capable call (and the timed choice's candidate against the kernel
 * library): the tensor-core kernel where it takes the shape (with rotary_kv_store's work inside
 * it), else the CUDA-core split kernel (after that work's own launch). */
static vg_status decode_own(vg_bk_stream *s, const vgc_decode_call *c)
{
    vg_status st = vgc_decode_tc(s, c);
    if (st != VG_ERR_UNSUPPORTED) return st;
    if (c->rope) { /* the rotary as a launch of its own, then the plain call (the tensor cores may take it) */
        st = vgc_decode_rope_first(s, c);
        if (st != VG_OK) return st;
        vgc_decode_call plain = *c;
        plain.rope = nullptr;
        return decode_own(s, &plain);
    }
    VGK_FLOAT_DISPATCH(c->t, T, return pd_run<T>(s, (const T *)c->q, c->ld_q, (T *)c->out, c->ld_out, c->rows,
                                                 (const T *)c->k_cache, (const T *)c->v_cache,
                                                 c->block_tables, c->max_blocks, c->context_lens,
                                                 c->query_start, c->num_seqs, c->heads, c->kv_heads,
                                                 c->head_dim, c->block_size, c->scale, c->whole));
    return VG_ERR_INTERNAL;
}

/* paged_attention, or rotary_paged_attention with c->rope: the library or vg's kernels where the
 * split kernels can take the call, as measured, else the first kernel. */
static vg_status paged_run(vg_bk_stream *s, const vgc_decode_call *c)
{
    const vg_dtype t = c->t;
    const int64_t rows = c->rows;
    const int heads = c->heads;
    if (heads > 65535)
        return VGC_ERR(VG_ERR_UNSUPPORTED, VG_VENDOR_NAME ": paged_attention: heads %d > 65535",
                       heads);
    if (rows > 0x7fffffffLL)
        return VGC_ERR(VG_ERR_UNSUPPORTED, VG_VENDOR_NAME ": paged_attention: %lld rows exceed the grid",
                       (long long)rows);
    /* the split kernel reads keys and values 8 elements at a time */
    size_t vec = 8 * (t == VG_DTYPE_F32 ? 4 : 2);
    int split_ok = !s->dev->simple_attention && ((uintptr_t)c->k_cache | (uintptr_t)c->v_cache) % vec == 0;
    if (split_ok) { /* vg's kernel in the form, or the kernel library's where built, that measures faster */
        const int pick = vgc_decode_pick(s, c, decode_own);
        if (pick < 0)
            return VGC_ERR(VG_ERR_DEVICE, VG_VENDOR_NAME ": rotary_paged_attention: qkv could not be restored "
                                          "after timing the kernels");
        return vgc_decode_run_pick(s, c, pick, decode_own);
    }
    vg_status st = vgc_decode_rope_first(s, c);
    if (st != VG_OK) return st;
    dim3 grid((unsigned)rows, (unsigned)heads);
    VGK_FLOAT_DISPATCH(t, T, vgc_launch(s, k_paged_attention<T>, grid, PA_THREADS, 0, (const T *)c->q, c->ld_q,
                                        (T *)c->out, c->ld_out, (int)rows, (const T *)c->k_cache,
                                        (const T *)c->v_cache, c->block_tables, c->max_blocks, c->context_lens,
                                        c->query_start, c->num_seqs, heads, c->kv_heads, c->head_dim,
                                        c->block_size, c->scale));
    VGC_CHECK_LAUNCH("paged_attention");
    return VG_OK;
}

vg_status vgc_op_paged_attention(vg_bk_device *, vg_bk_stream *s, vg_dtype t, const void *q,
                                 int64_t ld_q, void *out, int64_t ld_out, int64_t rows,
                                 const void *k_cache, const void *v_cache,
                                 const int32_t *block_tables, int max_blocks,
                                 const int32_t *context_lens, const int32_t *query_start,
                                 int num_seqs, int heads, int kv_heads, int head_dim,
                                 int block_size, float scale)
{
    if (!rows) return VG_OK;
    const vgc_decode_call c = {t, q, ld_q, out, ld_out, rows, k_cache, v_cache, block_tables,
                               max_blocks, context_lens, query_start, num_seqs, heads, kv_heads,
                               head_dim, block_size, scale, nullptr, 0};
    return paged_run(s, &c);
}

/* ---- rotary_paged_attention (op table version 8) ---------------------------------------------- */

vg_status vgc_op_rotary_paged_attention(vg_bk_device *, vg_bk_stream *s, const vg_rotary_paged_args *a)
{
    const vgc_decode_call c = {a->dtype, a->qkv, a->ld, a->out, a->ld_out, a->rows, a->k_cache, a->v_cache,
                               a->block_tables, a->max_blocks, a->context_lens, a->query_start, a->num_seqs,
                               a->heads, a->kv_heads, a->head_dim, a->block_size, a->scale, a, 0};
    return paged_run(s, &c);
}

/* ---- argmax --------------------------------------------------------------------------------------- */

#define AM_THREADS 256
#define AM_UNROLL 8                                  /* loads of a thread in flight together */
#define AM_MIN_CHUNK (AM_THREADS * AM_UNROLL * 2)    /* columns a block takes at least, split */
#define AM_VUNROLL 4                                 /* 16-byte loads of a thread in flight together */

/* (value, index) of the better of two candidates: the larger value, on a tie the smaller index. */
__device__ __forceinline__ void am_pick(float &v, int &i, float v2, int i2)
{
    if (v2 > v || (v2 == v && i2 < i)) v = v2, i = i2;
}

/* The block's best candidate, in thread 0 (red_*: AM_THREADS / 32 each; every thread calls it). */
__device__ __forceinline__ void am_block_best(float &best, int &at, float *red_v, int *red_i)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int o = 16; o > 0; o >>= 1)
        am_pick(best, at, __shfl_xor_sync(0xffffffffu, best, o), __shfl_xor_sync(0xffffffffu, at, o));
    __syncthreads(); /* the previous use of red_* is read */
    if (lane == 0) red_v[warp] = best, red_i[warp] = at;
    __syncthreads();
    if (threadIdx.x == 0)
        for (int w = 1; w < AM_THREADS / 32; w++) am_pick(best, at, red_v[w], red_i[w]);
}

/* Thread threadIdx.x's share of columns [c0, c1) of row xr, in increasing column order, into its
 * candidate (best, at): the first maximum it sees, the first column counting even at -inf, NaN
 * never (none: at 0x7fffffff, best -inf, which every candidate beats in am_pick). With
 * vec (the row and c0 on 16-byte boundaries) 16-byte vectors, AM_VUNROLL in flight, then the
 * columns past the last whole vector one by one; else elements, AM_UNROLL in flight. The language
 * model's F32 logits, 64 rows of a 152k vocabulary: 24.1 us a call with four-byte loads, 18.1 with
 * vectors (H100, in the step's graph). */
template <typename T>
__device__ __forceinline__ void am_scan(const T *xr, int64_t c0, int64_t c1, bool vec, float &best, int &at)
{
    auto take = [&](float v, int64_t c) {
        if (!isnan(v) && (v > best || at == 0x7fffffff)) best = v, at = (int)c;
    };
    if (c1 <= c0) return; /* an empty slice */
    int64_t tail = c0;
    if (vec) {
        constexpr int V = 16 / sizeof(T);
        const int64_t nv = (c1 - c0) / V;
        const uint4 *xv = (const uint4 *)(xr + c0);
        for (int64_t b = threadIdx.x; b < nv; b += AM_THREADS * AM_VUNROLL) {
            uint4 u[AM_VUNROLL];
#pragma unroll
            for (int k = 0; k < AM_VUNROLL; k++)
                if (b + k * AM_THREADS < nv) u[k] = xv[b + k * AM_THREADS];
#pragma unroll
            for (int k = 0; k < AM_VUNROLL; k++) {
                if (!(b + k * AM_THREADS < nv)) break;
                const T *e = reinterpret_cast<const T *>(&u[k]);
#pragma unroll
                for (int i = 0; i < V; i++) take(vgk_to_f(e[i]), c0 + (b + k * AM_THREADS) * V + i);
            }
        }
        tail = c0 + nv * V;
    }
    for (int64_t c = tail + threadIdx.x; c < c1; c += AM_THREADS * AM_UNROLL) {
        float v[AM_UNROLL];
#pragma unroll
        for (int u = 0; u < AM_UNROLL; u++) {
            const int64_t cu = c + u * AM_THREADS;
            v[u] = cu < c1 ? vgk_to_f(xr[cu]) : -INFINITY;
        }
#pragma unroll
        for (int u = 0; u < AM_UNROLL; u++)
            if (c + u * AM_THREADS < c1) take(v[u], c + u * AM_THREADS);
    }
}

/* The row's answer from its best candidate: a sequential scan with a strict comparison's (the
 * reference's, the other backends'): NaNs never win, except that a NaN in column 0 makes it 0. */
template <typename T> __device__ __forceinline__ int am_answer(const T *xr, int at)
{
    return isnan(vgk_to_f(xr[0])) || at == 0x7fffffff ? 0 : at;
}

/* grid: x = rows (grid-stride), y = the `chunks` slices of a row (with vector loads, each a whole
 * number of vectors but the last). Each thread scans a strided share of its slice (am_scan); the
 * block reduces the candidates. One slice (a row per block): the block
 * writes the row's answer. More (a decode step's few rows over a vocabulary: a block per row
 * would leave the GPU nearly idle, ~30 us for 152k columns on one multiprocessor): each block
 * leaves its candidate in part_*, and the last of the row's blocks to finish (counters[row],
 * zero before and put back to zero, so graphs replay it) reduces them. */
template <typename T>
__global__ void __launch_bounds__(AM_THREADS)
k_argmax(const T *x, int64_t ld, int rows, int cols, int chunks, float *part_v, int *part_i,
         unsigned *counters, int32_t *out)
{
    vgk_grid_sync();
    __shared__ float red_v[AM_THREADS / 32];
    __shared__ int red_i[AM_THREADS / 32];
    __shared__ int last_block;
    /* columns in 64 bits: a row may be up to 2^31 - 1 long, and c + u·AM_THREADS goes past it */
    constexpr int V = 16 / sizeof(T);
    const bool vec = (uintptr_t)x % 16 == 0 && ld % V == 0;
    int64_t span = ((int64_t)cols + chunks - 1) / chunks;
    if (vec) span = (span + V - 1) / V * V; /* slices start on vectors (trailing ones may be empty) */
    const int64_t c0 = (int64_t)blockIdx.y * span, c1 = c0 + span < cols ? c0 + span : cols;
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        float best = -INFINITY;
        int at = 0x7fffffff;
        am_scan(x + (int64_t)r * ld, c0, c1, vec, best, at);
        am_block_best(best, at, red_v, red_i);
        if (chunks == 1) {
            if (threadIdx.x == 0) out[r] = am_answer(x + (int64_t)r * ld, at);
            continue;
        }
        if (threadIdx.x == 0) {
            part_v[(int64_t)r * chunks + blockIdx.y] = best, part_i[(int64_t)r * chunks + blockIdx.y] = at;
            __threadfence(); /* the candidate is visible before the count says so */
            last_block = atomicAdd(&counters[r], 1u) == (unsigned)chunks - 1;
        }
        __syncthreads();
        if (!last_block) continue;
        __threadfence();
        best = -INFINITY, at = 0x7fffffff;
        for (int k = threadIdx.x; k < chunks; k += AM_THREADS) /* slices in column order */
            am_pick(best, at, vgc_load_coherent(part_v + (int64_t)r * chunks + k),
                    vgc_load_coherent(part_i + (int64_t)r * chunks + k));
        am_block_best(best, at, red_v, red_i);
        if (threadIdx.x == 0) out[r] = am_answer(x + (int64_t)r * ld, at), counters[r] = 0; /* ready for the next launch */
    }
}

vg_status vgc_op_argmax(vg_bk_device *, vg_bk_stream *s, vg_dtype t, const void *x, int64_t ld,
                        int64_t rows, int64_t cols, int32_t *out)
{
    if (!rows) return VG_OK;
    /* slices per row: about two blocks per multiprocessor over all rows, each at least
     * AM_MIN_CHUNK columns; one where the rows alone fill the GPU or the counters, the
     * workspace (the candidates) or a graph-replayable count (HIP: none) are lacking */
    int64_t chunks = 1;
    const int64_t target = 2 * (int64_t)s->dev->prop.multiProcessorCount;
    if (s->counters && rows < target && rows <= VGC_COUNTERS - VGC_COUNTERS_ATTENTION) {
        chunks = (target + rows - 1) / rows;
        const int64_t most = (cols + AM_MIN_CHUNK - 1) / AM_MIN_CHUNK;
        if (chunks > most) chunks = most;
        if ((size_t)(rows * chunks) * (sizeof(float) + sizeof(int)) > s->gemm_workspace_bytes) chunks = 1;
    }
    /* the candidates in the workspace; the counters of paged attention's split kernel (both put
     * their words back to zero) */
    float *part_v = chunks > 1 ? (float *)s->gemm_workspace : nullptr;
    int *part_i = chunks > 1 ? (int *)(part_v + rows * chunks) : nullptr;
    unsigned *counters = chunks > 1 ? s->counters + VGC_COUNTERS_ATTENTION : nullptr;
    dim3 grid(rows_grid(rows), (unsigned)chunks);
    VGK_FLOAT_DISPATCH(t, T, vgc_launch(s, k_argmax<T>, grid, AM_THREADS, 0, (const T *)x, ld, (int)rows,
                                        (int)cols, (int)chunks, part_v, part_i, counters, out));
    VGC_CHECK_LAUNCH("argmax");
    return VG_OK;
}
