/* SPDX-License-Identifier: Apache-2.0 */
/* Decoder-LM kernels of the op table (version 4): rotary, rmsnorm_heads, kv_store,
 * paged_attention, argmax. Straightforward first versions, correct for every shape the catalogue
 * allows, not tuned: one block or warp per row or head, fp32 accumulation. The core has validated
 * every call (vg_ops.h); what lives in device memory (positions, slots, block tables, lengths,
 * query starts) is read when the kernel runs, so one capture serves any contents, and values no
 * op could follow (a query row beyond its table, say) are clamped or skipped, as kunlun_stub does. */
#include "kernels.cuh"

/* 32-lane groups (vendor.h: wave64 runs them as two halves). */
__device__ __forceinline__ float vgk_warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float vgk_warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

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

/* A block per row (grid-stride); its threads over (head, i < half). */
template <typename T>
__global__ void k_rotary(T *x, int64_t ld, int rows, int heads, int head_dim, const int32_t *pos,
                         float log2_theta)
{
    vgk_grid_sync();
    int half = head_dim / 2, per_row = heads * half;
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        float p = (float)pos[r];
        for (int t = threadIdx.x; t < per_row; t += blockDim.x) {
            int h = t / half, i = t - h * half;
            float c, sn;
            sincosf(p * exp2f(-log2_theta * (float)(2 * i) / (float)head_dim), &sn, &c);
            T *base = x + (int64_t)r * ld + (int64_t)h * head_dim;
            float x0 = vgk_to_f(base[i]), x1 = vgk_to_f(base[i + half]);
            base[i] = vgk_from_f<T>(x0 * c - x1 * sn);
            base[i + half] = vgk_from_f<T>(x1 * c + x0 * sn);
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

/* ---- paged_attention ---------------------------------------------------------------------------- */

#define PA_THREADS 128
#define PA_MAX_DIMS (VG_ATTENTION_MAX_HEAD_DIM / PA_THREADS) /* output dims per thread */

/* A block per (query row, head). The context is walked in tiles of PA_THREADS positions: each
 * thread scores one position of the tile (a whole dot product), the block takes the tile's max
 * and sum for an online softmax in fp32, then each thread accumulates its output dimensions over
 * the tile. Rows outside every sequence are written as zeros. */
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

vg_status vgc_op_paged_attention(vg_bk_device *, vg_bk_stream *s, vg_dtype t, const void *q,
                                 int64_t ld_q, void *out, int64_t ld_out, int64_t rows,
                                 const void *k_cache, const void *v_cache,
                                 const int32_t *block_tables, int max_blocks,
                                 const int32_t *context_lens, const int32_t *query_start,
                                 int num_seqs, int heads, int kv_heads, int head_dim,
                                 int block_size, float scale)
{
    if (!rows) return VG_OK;
    if (heads > 65535)
        return VGC_ERR(VG_ERR_UNSUPPORTED, VG_VENDOR_NAME ": paged_attention: heads %d > 65535",
                       heads);
    dim3 grid((unsigned)rows, (unsigned)heads);
    VGK_FLOAT_DISPATCH(t, T, vgc_launch(s, k_paged_attention<T>, grid, PA_THREADS, 0, (const T *)q,
                                        ld_q, (T *)out, ld_out, (int)rows, (const T *)k_cache,
                                        (const T *)v_cache, block_tables, max_blocks,
                                        context_lens, query_start, num_seqs, heads, kv_heads,
                                        head_dim, block_size, scale));
    VGC_CHECK_LAUNCH("paged_attention");
    return VG_OK;
}

/* ---- argmax --------------------------------------------------------------------------------------- */

#define AM_THREADS 256

/* (value, index) of the better of two candidates: the larger value, on a tie the smaller index. */
__device__ __forceinline__ void am_pick(float &v, int &i, float v2, int i2)
{
    if (v2 > v || (v2 == v && i2 < i)) v = v2, i = i2;
}

/* A block per row (grid-stride): each thread scans a strided share of the columns (keeping the
 * first maximum it sees), then the block reduces the candidates. */
template <typename T>
__global__ void __launch_bounds__(AM_THREADS)
k_argmax(const T *x, int64_t ld, int rows, int cols, int32_t *out)
{
    vgk_grid_sync();
    __shared__ float red_v[AM_THREADS / 32];
    __shared__ int red_i[AM_THREADS / 32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + (int64_t)r * ld;
        float best = -INFINITY;
        int at = 0x7fffffff;
        for (int c = threadIdx.x; c < cols; c += AM_THREADS) {
            float v = vgk_to_f(xr[c]);
            if (v > best || at == 0x7fffffff) best = v, at = c; /* the first column counts even at -inf */
        }
        for (int o = 16; o > 0; o >>= 1)
            am_pick(best, at, __shfl_xor_sync(0xffffffffu, best, o), __shfl_xor_sync(0xffffffffu, at, o));
        __syncthreads(); /* the previous row's reduction is read */
        if (lane == 0) red_v[warp] = best, red_i[warp] = at;
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int w = 1; w < AM_THREADS / 32; w++) am_pick(best, at, red_v[w], red_i[w]);
            out[r] = at;
        }
    }
}

vg_status vgc_op_argmax(vg_bk_device *, vg_bk_stream *s, vg_dtype t, const void *x, int64_t ld,
                        int64_t rows, int64_t cols, int32_t *out)
{
    if (!rows) return VG_OK;
    VGK_FLOAT_DISPATCH(t, T, vgc_launch(s, k_argmax<T>, rows_grid(rows), AM_THREADS, 0,
                                        (const T *)x, ld, (int)rows, (int)cols, out));
    VGC_CHECK_LAUNCH("argmax");
    return VG_OK;
}
