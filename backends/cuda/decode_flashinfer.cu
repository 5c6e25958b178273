/* SPDX-License-Identifier: Apache-2.0 */
/* Paged decode attention through FlashInfer's batch decode kernel (attention/decode.cuh), for
 * BF16 with head_dim 64 or 128 and the group sizes instantiated below. Built only when the
 * configure found FlashInfer's headers (scripts/fetch-kernel-libs.sh, VG_KERNEL_LIBS).
 *
 * Layout: vg's cache is [slot, kv_head, dim] with slot = block·block_size + offset, which is
 * FlashInfer's NHD page layout with page = block; keys and values are separate arrays, as
 * FlashInfer allows. Its page table (CSR: indptr, indices, last_page_len per request) is read
 * here through vg's block tables as they are (fi_paged_kv): each query row becomes one
 * FlashInfer request starting at its sequence's table row, with its own causal length, so
 * prefill-shaped calls are correct too (each row reads its keys, where vg's kernel shares them
 * between a sequence's rows: the measured choice decides).
 *
 * The plan: FlashInfer splits long contexts over blocks (split-KV) and merges the parts in a
 * second kernel; its host-side planner needs the lengths on the host, which a replayed graph
 * does not have. Here the number of blocks is fixed on the host (rows·nsplit: enough to fill
 * the GPU once) and a one-block kernel (k_fi_plan) computes on the device, from the lengths of
 * this launch, the chunk size (one for all rows, as FlashInfer wants), each block's request and
 * tile, and the merge's indptr, into the stream's GEMM workspace. So the three kernels replay in
 * a graph at any lengths, as SGLang's fixed-size plan buffers do with a host plan per step.
 * Without splits (one block per row and KV head) there is no plan and no merge: the decode
 * kernel computes each row's first page and length from vg's lengths itself (fi_rows), one
 * kernel per call. Rows with nothing to attend to (padding) come out as zeros: without splits
 * their blocks run with no positions, whose empty states FlashInfer merges without NaN and
 * outputs as zeros (state.cuh, DefaultAttention's OutputTransform); with splits they get no
 * block and the merge writes their zeros.
 *
 * No C++ exception leaves this file: each entry catches and returns a vg_status. */
#include <flashinfer/attention/cascade.cuh>
#include <flashinfer/attention/decode.cuh>
#include <flashinfer/attention/default_decode_params.cuh>
#include <flashinfer/attention/variants.cuh>

#include <cub/block/block_scan.cuh>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "decode_lib.cuh"
#include "kernels.cuh"

#ifndef VG_FLASHINFER_VERSION
#define VG_FLASHINFER_VERSION "unknown"
#endif
const char vgc_decode_lib_name[] = "FlashInfer " VG_FLASHINFER_VERSION;

namespace fi = flashinfer;
typedef __nv_bfloat16 fi_t;
typedef fi::paged_kv_t<fi_t, int32_t> fi_kv_base;
typedef fi::BatchDecodeParams<fi_t, fi_t, fi_t, int32_t> fi_params_base;
typedef fi::DefaultAttention</*custom mask*/ false, /*sliding window*/ false, /*soft cap*/ false,
                             /*alibi*/ false> fi_variant;

/* Query row r's sequence and the positions it attends to (0 .. last), as vg's kernel computes
 * them (decode_split.cuh, pd_last): sequence s owns rows query_start[s] .. query_start[s+1]-1, its row
 * j of n ends at context_lens[s] - n + j, clamped to the table's reach; rows outside every
 * sequence (padding) attend to nothing and read sequence 0's table. A decode row (one row per
 * sequence) is its own sequence, found without a search. With splits the plan kernel computes
 * them once into first and len, which the decode kernel then reads (one load after its block's
 * row, where computing them costs two more dependent loads: ~1 us a call, measured). */
struct fi_rows {
    const int32_t *context_lens, *query_start;
    int32_t num_seqs, rows, max_blocks, block_size;
    const int32_t *first, *len_at; /* [rows + 1], [rows]: the plan's, or NULL (computed) */
    __device__ __forceinline__ int seq(int r) const
    {
        if (r >= rows || r < query_start[0] || r >= query_start[num_seqs]) return -1;
        if (r < num_seqs && query_start[r] == r && query_start[r + 1] == r + 1) return r;
        return vgk_segment_of(query_start, num_seqs, r);
    }
    __device__ __forceinline__ int len(int r) const
    {
        if (len_at) return len_at[r];
        const int s = seq(r);
        if (s < 0) return 0;
        const int64_t n = (int64_t)query_start[s + 1] - query_start[s];
        const int64_t last = (int64_t)context_lens[s] - n + (r - query_start[s]);
        const int64_t reach = (int64_t)max_blocks * block_size;
        const int64_t l = last < reach ? last + 1 : reach;
        return l > 0 ? (int)l : 0;
    }
};

/* FlashInfer's page table read straight from vg's block tables, with no table of its own: request
 * r (query row r) starts at page indptr[r] = seq(r)·max_blocks of indices = block_tables (a row's
 * pages are its sequence's table row, shared by the sequence's rows; indptr[rows] is the table's
 * end, FlashInfer's bound), and its length is computed from vg's lengths instead of CSR
 * differences. The kernel is a template over its parameters and reads the page table through
 * these members (get_length, indptr, page_size, the offsets), which hide the base's. */
struct fi_row_pages {
    fi_rows at;
    __device__ __forceinline__ int32_t operator[](uint32_t r) const
    {
        if (at.first) return at.first[r];
        const int s = (int)r < at.rows ? at.seq((int)r) : at.num_seqs;
        return (s < 0 ? 0 : s) * at.max_blocks;
    }
};
struct fi_paged_kv : fi_kv_base {
    fi_row_pages indptr;
    __device__ __forceinline__ uint32_t get_length(uint32_t b) const { return (uint32_t)indptr.at.len((int)b); }
};

/* The split plan's per-block arrays as the kernel reads them (params.request_indices[b],
 * kv_tile_indices[b], *kv_chunk_size_ptr): from the plan with splits; without (nsplit 1) block b
 * is row b, its only tile, and no plan is computed or read. */
struct fi_plan_ref {
    const int32_t *at;
    int32_t nsplit, identity;
    __device__ __forceinline__ uint32_t operator[](uint32_t b) const { return nsplit > 1 ? at[b] : identity ? b : 0; }
    __device__ __forceinline__ uint32_t operator*() const { return nsplit > 1 ? *at : 0; }
};
struct fi_params : fi_params_base {
    fi_paged_kv paged_kv;
    fi_plan_ref request_indices, kv_tile_indices, kv_chunk_size_ptr;
    __device__ __forceinline__ int32_t get_kv_len(int32_t b) const { return (int32_t)paged_kv.get_length(b); }
};


#define FI_MAX_ROWS 1024 /* the plan kernel is one block: one thread per query row */
#define FI_MIN_CHUNK 32  /* positions per split, at least */
#define FI_MAX_SPLIT 64

/* The plan in the workspace, every array sized for rows query rows and rows·nsplit blocks. */
struct fi_plan {
    fi_t *tmp_v;       /* [blocks, heads, head_dim] partial outputs (split only) */
    float *tmp_s;      /* [blocks, heads] their log-sum-exps */
    int32_t *first;    /* [rows + 1] each request's first page in the block tables (fi_rows) */
    int32_t *len;      /* [rows] each request's positions */
    int32_t *o_indptr; /* [rows + 1] each request's first block, for the merge */
    int32_t *request;  /* [blocks] each block's request */
    int32_t *tile;     /* [blocks] each block's chunk within its request */
    int32_t *chunk;    /* [1] positions per chunk */
    bool *valid;       /* [blocks] whether the block has work */
    size_t bytes;
};

static size_t fi_align(size_t n) { return (n + 255) & ~(size_t)255; }

static fi_plan fi_layout(void *ws, const vgc_decode_call *c, int nsplit)
{
    const size_t rows = (size_t)c->rows, blocks = rows * (size_t)nsplit;
    fi_plan p;
    char *at = (char *)ws;
    size_t off = 0;
#define FI_TAKE(field, type, n) (p.field = (type *)(at ? at + off : nullptr), off += fi_align((n) * sizeof(type)))
    FI_TAKE(tmp_v, fi_t, nsplit > 1 ? blocks * c->heads * c->head_dim : 0);
    FI_TAKE(tmp_s, float, nsplit > 1 ? blocks * c->heads : 0);
    const size_t split = nsplit > 1; /* the plan's arrays: with splits only */
    FI_TAKE(first, int32_t, split * (rows + 1));
    FI_TAKE(len, int32_t, split * rows);
    FI_TAKE(o_indptr, int32_t, split * (rows + 1));
    FI_TAKE(request, int32_t, split * blocks);
    FI_TAKE(tile, int32_t, split * blocks);
    FI_TAKE(chunk, int32_t, split);
    FI_TAKE(valid, bool, split * blocks);
#undef FI_TAKE
    p.bytes = off;
    return p;
}

/* Splits per query row: enough blocks (with the KV heads) for about four per multiprocessor,
 * none when the rows alone fill the GPU, at least FI_MIN_CHUNK positions each at the table's
 * full reach. The measured choice also tries half, twice and none. */
static int fi_splits(const vg_bk_stream *s, const vgc_decode_call *c)
{
    const int64_t items = c->rows * c->kv_heads, target = 4 * (int64_t)s->dev->prop.multiProcessorCount;
    if (items >= target / 2) return 1;
    int64_t n = (target + items - 1) / items;
    const int64_t by_len = ((int64_t)c->max_blocks * c->block_size + FI_MIN_CHUNK - 1) / FI_MIN_CHUNK;
    if (n > by_len) n = by_len;
    if (n > FI_MAX_SPLIT) n = FI_MAX_SPLIT;
    return n < 1 ? 1 : (int)n;
}

/* The split plan (see the file's comment), for nsplit > 1: each row's first page and length (rs
 * computes them: its first and len_at are NULL), one chunk size for all rows from the longest,
 * each row's chunks, the merge's offsets and each block's row and chunk; blocks past
 * the last chunk are masked off, and rows with no positions get no block (the merge writes their
 * zeros). One thread per row: every step is a load or two and a scan, no loop over pages. */
template <int THREADS>
__global__ void __launch_bounds__(THREADS) k_fi_plan(fi_plan p, fi_rows rs, int nsplit)
{
    typedef cub::BlockScan<int, THREADS> scan_t;
    __shared__ typename scan_t::TempStorage scan_tmp;
    __shared__ int o_s[THREADS + 1];
    __shared__ int max_len;
    const int r = threadIdx.x, rows = rs.rows;
    if (r == 0) max_len = 0;
    const int len = rs.len(r);
    if (r < rows) p.first[r] = rs.seq(r) < 0 ? 0 : rs.seq(r) * rs.max_blocks, p.len[r] = len;
    if (r == 0) p.first[rows] = rs.num_seqs * rs.max_blocks; /* the table's end, FlashInfer's bound */
    __syncthreads();
    if (len) atomicMax(&max_len, len);
    __syncthreads();
    const int chunk = max((max_len + nsplit - 1) / nsplit, FI_MIN_CHUNK);
    const int chunks = r < rows ? (len + chunk - 1) / chunk : 0;
    int chunk0, total;
    scan_t(scan_tmp).ExclusiveSum(chunks, chunk0, total);
    if (r < rows) p.o_indptr[r] = chunk0, o_s[r] = chunk0;
    if (r == 0) *p.chunk = chunk, p.o_indptr[rows] = total, o_s[rows] = total;
    __syncthreads();
    /* each block's request and chunk */
    for (int b = r; b < rows * nsplit; b += THREADS) {
        if (b >= total) {
            p.request[b] = 0, p.tile[b] = 0, p.valid[b] = false;
            continue;
        }
        int lo = 0, hi = rows - 1; /* the last row whose first block is at or before b */
        while (lo < hi) {
            const int mid = (lo + hi + 1) / 2;
            if (o_s[mid] <= b) lo = mid;
            else hi = mid - 1;
        }
        p.request[b] = lo, p.tile[b] = b - o_s[lo], p.valid[b] = true;
    }
}

/* The kernel's shapes tried: FlashInfer's own (128 threads, 2 stages of cp.async in flight: the
 * block reads bdy·bdz positions per stage, 14 for Qwen2.5's group of 7 with head_dim 64) and a
 * deeper one (256 threads and 4 stages: 4× the bytes in flight per block) for calls whose blocks
 * are few (one per (row, KV head) without splits, about one per multiprocessor), where the decode
 * waits on memory latency, not bandwidth. Which one runs is measured per shape, like the splits
 * (H100, 2026-11-25, without splits: Qwen2.5-0.5B at batch 64 20.1 us a call in FlashInfer's
 * shape, 16.2 us in this one; Qwen3-0.6B at batch 16 21.3 and 15.7 us. 512 threads and 4 stages
 * won no shape and was dropped). */
#define FI_VARIANTS 2
static constexpr uint32_t fi_variant_threads[FI_VARIANTS] = {128, 256};
static constexpr uint32_t fi_variant_stages[FI_VARIANTS] = {2, 4};
static const char *const fi_variant_name[FI_VARIANTS] = {"", " deep"};

/* A pick packs the split count (1..FI_MAX_SPLIT) and the kernel's variant; 0 is vg's kernel. */
static int fi_pick(int nsplit, int variant) { return nsplit + 256 * variant; }
static int fi_pick_splits(int pick) { return pick % 256; }
static int fi_pick_variant(int pick) { return pick / 256; }

/* FlashInfer's launch (BatchDecodeWithPagedKVCacheDispatched) for one group size, without its
 * dispatch over every group size (which lacks 7, Qwen2.5's 14/2, and would compile all). */
template <uint32_t HEAD_DIM, uint32_t GROUP, uint32_t THREADS, uint32_t STAGES>
static cudaError_t fi_run(fi_params params, const fi_plan &p, int nsplit, int rows, cudaStream_t st)
{
    constexpr uint32_t vec_size = 16 / sizeof(fi_t) > HEAD_DIM / 32 ? 16 / sizeof(fi_t) : HEAD_DIM / 32;
    constexpr uint32_t bdx = HEAD_DIM / vec_size, bdy = GROUP;
    constexpr uint32_t num_threads = THREADS > bdx * bdy ? THREADS : bdx * bdy;
    constexpr uint32_t bdz = num_threads / (bdx * bdy);
    constexpr uint32_t tile = GROUP == 1 ? 4 : 1;
    constexpr uint32_t stages = STAGES <= bdx ? STAGES : bdx; /* the kernel's bound */
    const uint32_t smem = (uint32_t)std::max(2 * stages * tile * bdy * bdz * HEAD_DIM * sizeof(fi_t),
                                             bdz * bdy * HEAD_DIM * sizeof(float)) +
                          (uint32_t)std::max(tile * num_threads * sizeof(fi_t *), 2 * bdy * bdz * sizeof(float));
    auto kernel = fi::BatchDecodeWithPagedKVCacheKernel<fi::PosEncodingMode::kNone, stages, tile, vec_size, bdx,
                                                        bdy, bdz, fi_variant, fi_params>;
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return e;
    fi_t *o = params.o;
    params.padded_batch_size = (uint32_t)(rows * nsplit);
    params.partition_kv = nsplit > 1;
    if (nsplit > 1) params.o = p.tmp_v, params.lse = p.tmp_s;
    kernel<<<dim3(params.padded_batch_size, params.paged_kv.num_heads), dim3(bdx, bdy, bdz), smem, st>>>(params);
    if ((e = cudaGetLastError()) != cudaSuccess || nsplit == 1) return e;

    /* the merge (VariableLengthMergeStates for this head_dim only) */
    constexpr uint32_t mbdx = HEAD_DIM / vec_size, mbdy = 128 / mbdx, mstages = 4;
    const uint32_t msmem = mstages * mbdy * HEAD_DIM * sizeof(fi_t) + 128 * sizeof(float);
    auto merge = fi::PersistentVariableLengthMergeStatesKernel<vec_size, mbdx, mbdy, mstages, fi_t, fi_t, int32_t>;
    if ((e = cudaFuncSetAttribute(merge, cudaFuncAttributeMaxDynamicSharedMemorySize, msmem)) != cudaSuccess) return e;
    int per_sm = 0, sms = 0, dev = 0;
    if ((e = cudaGetDevice(&dev)) != cudaSuccess ||
        (e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess ||
        (e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, merge, 128, msmem)) != cudaSuccess)
        return e;
    const uint32_t heads = params.num_qo_heads, work = (uint32_t)rows * heads;
    per_sm = std::min<int>(per_sm, (int)((work + sms - 1) / sms));
    merge<<<dim3((unsigned)(sms * std::max(per_sm, 1))), dim3(mbdx, mbdy), msmem, st>>>(
        p.tmp_v, p.tmp_s, p.o_indptr, o, nullptr, (uint32_t)rows, nullptr, heads);
    return cudaGetLastError();
}

/* The group sizes compiled (each is a kernel per head_dim: compile time): 2, 4, 6, 7, 8 cover
 * Qwen2.5 (7, 6 and 8 across sizes) and Qwen3 / Llama (2, 4, 8). */
#define FI_GROUPS(X) X(2) X(4) X(6) X(7) X(8)

static int fi_group_ok(int g)
{
#define FI_IS(G) if (g == G) return 1;
    FI_GROUPS(FI_IS)
#undef FI_IS
    return 0;
}

template <uint32_t HEAD_DIM>
static cudaError_t fi_dispatch(const fi_params &params, const fi_plan &p, int nsplit, int variant, int rows,
                               int group, cudaStream_t st)
{
#define FI_RUN(G, V) fi_run<HEAD_DIM, G, fi_variant_threads[V], fi_variant_stages[V]>(params, p, nsplit, rows, st)
#define FI_CASE(G)                                                                                          \
    if (group == G) return variant ? FI_RUN(G, 1) : FI_RUN(G, 0);
    FI_GROUPS(FI_CASE)
#undef FI_CASE
#undef FI_RUN
    return cudaErrorInvalidValue;
}

int vgc_decode_lib_takes(const vg_bk_stream *s, const vgc_decode_call *c)
{
    const size_t vec = 16;
    if (c->t != VG_DTYPE_BF16 || (c->head_dim != 64 && c->head_dim != 128) || c->kv_heads < 1 ||
        c->heads % c->kv_heads || !fi_group_ok(c->heads / c->kv_heads))
        return 0;
    if (c->rows < 1 || c->rows > FI_MAX_ROWS || c->ld_out != (int64_t)c->heads * c->head_dim ||
        c->ld_q > INT32_MAX || (c->ld_q * sizeof(fi_t)) % vec ||
        ((uintptr_t)c->q | (uintptr_t)c->out | (uintptr_t)c->k_cache | (uintptr_t)c->v_cache) % vec)
        return 0;
    /* FlashInfer holds a page's size and a row's first position in the tables in 32 bits */
    const int64_t width = (int64_t)c->kv_heads * c->head_dim;
    if (width * c->block_size > INT32_MAX || (int64_t)c->num_seqs * c->max_blocks * c->block_size > INT32_MAX)
        return 0;
    return s->gemm_workspace && fi_layout(nullptr, c, fi_splits(s, c)).bytes <= s->gemm_workspace_bytes;
}

vg_status vgc_decode_lib_run(vg_bk_stream *s, const vgc_decode_call *c, int pick)
{
    const vg_status st = vgc_decode_rope_first(s, c); /* the library's kernels take q rotated */
    if (st != VG_OK) return st;
    try {
        const int rows = (int)c->rows, nsplit = fi_pick_splits(pick), variant = fi_pick_variant(pick);
        if (nsplit < 1 || nsplit > FI_MAX_SPLIT || variant >= FI_VARIANTS)
            return VGC_ERR(VG_ERR_INVALID_ARG, "cuda: paged_attention: FlashInfer pick %d is not one", pick);
        const fi_plan p = fi_layout(s->gemm_workspace, c, nsplit);
        fi_rows rs = {c->context_lens, c->query_start, c->num_seqs, rows, c->max_blocks, c->block_size,
                      nullptr, nullptr};
        if (nsplit > 1) { /* without splits the decode kernel alone: no plan */
            auto plan = rows <= 128 ? k_fi_plan<128> : k_fi_plan<FI_MAX_ROWS>; /* small batches: a short scan */
            plan<<<1, rows <= 128 ? 128 : FI_MAX_ROWS, 0, s->s>>>(p, rs, nsplit);
            VGC_CHECK_LAUNCH("paged_attention (FlashInfer plan)");
            rs.first = p.first, rs.len_at = p.len; /* the decode reads what the plan computed */
        }
        fi_params params;
        static_cast<fi_kv_base &>(params.paged_kv) =
            fi_kv_base((uint32_t)c->kv_heads, (uint32_t)c->block_size, (uint32_t)c->head_dim, (uint32_t)rows,
                       fi::QKVLayout::kNHD, (fi_t *)c->k_cache, (fi_t *)c->v_cache,
                       (int32_t *)c->block_tables, /*indptr: fi_paged_kv's*/ nullptr, /*last_page_len*/ nullptr);
        params.paged_kv.indptr.at = rs;
        params.q = (fi_t *)c->q;
        params.o = (fi_t *)c->out;
        params.num_qo_heads = (uint32_t)c->heads;
        params.q_stride_n = (int32_t)c->ld_q;
        params.q_stride_h = (int32_t)c->head_dim;
        params.window_left = -1;
        params.sm_scale = c->scale;
        params.rope_rcp_scale = params.rope_rcp_theta = 1.0f; /* no rotary here */
        params.request_indices = {p.request, nsplit, 1};
        params.kv_tile_indices = {p.tile, nsplit, 0};
        params.kv_chunk_size_ptr = {p.chunk, nsplit, 0};
        params.o_indptr = p.o_indptr;
        params.block_valid_mask = nsplit > 1 ? p.valid : nullptr;
        const int group = c->heads / c->kv_heads;
        cudaError_t e = c->head_dim == 64 ? fi_dispatch<64>(params, p, nsplit, variant, rows, group, s->s)
                                          : fi_dispatch<128>(params, p, nsplit, variant, rows, group, s->s);
        if (e != cudaSuccess) return vgc_fail(e, "FlashInfer batch decode", __FILE__, __LINE__);
        return VG_OK;
    } catch (const std::exception &ex) {
        return VGC_ERR(VG_ERR_DEVICE, "cuda: paged_attention: FlashInfer: %s", ex.what());
    } catch (...) {
        return VGC_ERR(VG_ERR_DEVICE, "cuda: paged_attention: FlashInfer failed");
    }
}

/* ---- the library's side of the measured choice (decode_tune.cu) --------------------------------- */

int vgc_decode_lib_candidates(const vg_bk_stream *s, const vgc_decode_call *c, int *picks, int max)
{
    const int n = fi_splits(s, c);
    /* the default split count, half and twice that, and none; the deeper variant at the default
     * split count and none */
    const int cand[] = {fi_pick(n, 0),
                        n > 1 ? fi_pick((n + 1) / 2, 0) : 0,
                        2 * n <= FI_MAX_SPLIT ? fi_pick(2 * n, 0) : 0,
                        n > 1 ? fi_pick(1, 0) : 0,
                        fi_pick(n, 1),
                        n > 1 ? fi_pick(1, 1) : 0};
    int k = 0;
    for (int i = 0; i < (int)(sizeof cand / sizeof cand[0]) && k < max; i++) {
        int dup = 0;
        for (int j = 0; j < k; j++) dup |= picks[j] == cand[i];
        if (cand[i] && !dup && fi_layout(nullptr, c, fi_pick_splits(cand[i])).bytes <= s->gemm_workspace_bytes)
            picks[k++] = cand[i];
    }
    return k;
}

int vgc_decode_lib_forced(const vg_bk_stream *s, const vgc_decode_call *c, int deep, int whole)
{
    return fi_pick(whole ? 1 : fi_splits(s, c), deep ? 1 : 0);
}

int vgc_decode_lib_label(int pick, char *buf, size_t n)
{
    return snprintf(buf, n, "%d splits%s", fi_pick_splits(pick), fi_variant_name[fi_pick_variant(pick) % FI_VARIANTS]);
}
