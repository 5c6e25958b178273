/* SPDX-License-Identifier: Apache-2.0 */
/* vg: the op catalogue. Each op is described by what it computes, never by the model it came
 * from; models compose them. Shared by the core device API (vg_device.h), which validates every
 * call against the preconditions written here, and by the plugin ABI, whose op table
 * implements them.
 *
 * Conventions for every op:
 *   - matrices are row-major; a leading dimension (ld*) is the distance between rows in
 *     elements and is at least the row's width;
 *   - "float dtype" means F32, BF16 or F16; arithmetic is at least fp32;
 *   - every device pointer is aligned to its element size;
 *   - a row count of 0 is a valid no-op;
 *   - the row-wise ops (rmsnorm, rotary_2d, attention, silu_mul, attention_rotary, layernorm,
 *     gather_weighted) take fewer than 2^31 rows and columns (kernels index them with int), as
 *     gemm takes m, n, k;
 *   - index and position arrays are I32 in device memory.
 * The core checks these preconditions once, before a backend sees the call (docs/plugin-abi.md,
 * "Op catalogue"); a backend may rely on them. */
#ifndef VG_OPS_H
#define VG_OPS_H

#include "vg_op_list.h"
#include "vg_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Op identifiers, from the one list of ops (vg_op_list.h). Append only: the values are part of
 * the plugin ABI. There is no limit on their number: support and capturability are queried per
 * op (vg_runtime_op_support). */
#define VG_OP_ENUM_(ID, value, name, member, dtypes) VG_OP_##ID = value,
typedef enum vg_op_id {
    VG_OP_LIST(VG_OP_ENUM_)
    VG_OP_COUNT_
} vg_op_id;
#undef VG_OP_ENUM_

/* What a device offers for one op (vg_runtime_op_support). */
#define VG_OP_SUPPORTED (1u << 0)  /* the backend implements the op */
#define VG_OP_CAPTURABLE (1u << 1) /* the op may be enqueued while a stream captures a graph */

/* Bit (1 << vg_dtype) for each dtype a float op accepts. */
#define VG_DTYPE_BIT(t) (1u << (unsigned)(t))
#define VG_DTYPES_FLOAT (VG_DTYPE_BIT(VG_DTYPE_F32) | VG_DTYPE_BIT(VG_DTYPE_BF16) | VG_DTYPE_BIT(VG_DTYPE_F16))
#define VG_DTYPES_ALL ((1u << VG_DTYPE_COUNT_) - 1u)

typedef enum vg_activation {
    VG_ACT_NONE = 0,
    VG_ACT_GELU_ERF = 1,  /* 0.5·x·(1 + erf(x/√2)) */
    VG_ACT_GELU_TANH = 2, /* tanh approximation */
    VG_ACT_SILU = 3,      /* x·sigmoid(x) */
    VG_ACT_QUICK_GELU = 4 /* x·sigmoid(1.702·x) */
} vg_activation;

/* ---- the catalogue ------------------------------------------------------------------------ *
 *
 * fill          dst[0..count) = value converted to dtype (F32, BF16, F16, I32, I64, U8).
 *
 * axpby         y[i] = alpha·x[i] + beta·y[i] over n F32 elements; x may equal y.
 *
 * gemm          C[m,n] = act(alpha · A[m,k] · B[n,k]ᵀ + bias[n]) + residual[m,n]  (vg_gemm_args)
 *               B is in the Linear-weight layout [out, in]. A, B and bias share dtype_ab; C and
 *               residual share dtype_c (float dtypes). m, n, k >= 1 and below 2^31; lda, ldb >= k,
 *               ldc, ldr >= n. residual may alias c only when act is VG_ACT_NONE.
 *               With gate = VG_GEMM_GATE_SILU (op VG_OP_GEMM_SILU_GATE, op table version 6): the
 *               product P = alpha·A·Bᵀ + bias has n = 2·h columns, a gate half and an up half
 *               (a gate|up projection), and C[r, j] = silu(P[r, j]) · P[r, h + j] for j < h:
 *               the GEMM and silu_mul in one call. Columns h..n-1 of each C row are scratch the
 *               device may overwrite (ldc >= n still), so a device may compute it as gemm then
 *               silu_mul in place, P rounded to dtype_c in between; a fused kernel rounds once.
 *               n even, act VG_ACT_NONE, no residual.
 *               With norm_w set (op VG_OP_GEMM_RMSNORM_A, op table version 6): A stands for
 *               rmsnorm(A, norm_w, norm_eps) (rmsnorm below, over its k columns): the rmsnorm
 *               before a projection and the projection in one call. A is contiguous (lda == k);
 *               norm_out is [m, k] of dtype_ab where a device that normalises in a separate
 *               pass writes the normalised rows (a fused kernel leaves it as it was: its contents
 *               are unspecified after the call); it may equal a (then A is overwritten so), and
 *               overlaps nothing else. A fused kernel may round w ⊙ x to dtype_ab and apply the
 *               row's 1/rms to the sums; a separate pass rounds the normalised rows once.
 *               With norm_unit = 1 instead (op VG_OP_GEMM_RMSNORM_A_UNIT, op table version 9;
 *               norm_w NULL): A stands for A / sqrt(mean(A²) + norm_eps), the rmsnorm without a
 *               weight, for a caller that folded the norm's weight into B's columns
 *               (rmsnorm(x, w)·Bᵀ = (x/rms(x))·(B·diag(w))ᵀ). A, norm_eps and norm_out as with
 *               norm_w. The factor being one per row of A, a device may apply it to the row's
 *               sums, before the bias and the gate: with the gate, a cuBLAS-like GEMM of A as it
 *               is and then silu_mul scaling both halves, the norm costing no launch of its own.
 *               With b_static = 1 (op table version 11) the caller promises that no op of this
 *               stream writes B, as with a model's weights uploaded before (on another stream,
 *               synchronised): a device may then read B before the op before this one has
 *               finished (a GEMM streaming its weights while the previous kernel ends). 0 (the
 *               default) promises nothing: B may be the previous op's output. A hint: a device
 *               may ignore it, and the result depends on it only by rounding (a device may run
 *               another kernel with it).
 *
 * gather_rows   dst[r, :] = src[idx[r], :] for r < rows, rows of `cols` elements of any dtype.
 *               dst must not alias src. Each idx[r] must lie in the rows of src (the caller's
 *               bug otherwise: the device cannot check it without a synchronisation).
 *
 * rmsnorm       out[r, :] = w ⊙ x[r, :] / sqrt(mean(x[r, :]²) + eps); statistics in fp32.
 *               x, w and out share a float dtype; out may equal x. cols >= 1, eps >= 0.
 *
 * rotary_2d     Rotary position embedding with two position axes, split-half layout, in place.
 *               For each row r and each of the first `heads` head-sized slices of row r
 *               (row stride ld >= heads·head_dim), with half = head_dim/2, quarter = head_dim/4:
 *               element i < half rotates with element i + half by the angle p·θ^(-2j/half),
 *               where (p, j) = (pos[r, 0], i) for i < quarter and (pos[r, 1], i - quarter)
 *               otherwise. head_dim is a multiple of 4; theta > 0; pos is I32 [rows, 2].
 *
 * attention     Non-causal softmax attention within segments. qkv rows hold q, k and v of
 *               `heads` heads ([rows, 3·heads·head_dim], row stride ld_qkv); out is
 *               [rows, heads·head_dim] (row stride ld_out). cu_seqlens is I32
 *               [num_segments + 1], ascending from 0 to rows; a row attends to the rows of its
 *               own segment. Empty segments are allowed, so one capture can serve any
 *               segmentation of up to num_segments. Softmax in fp32, scores scaled by `scale`.
 *               head_dim in [1, VG_ATTENTION_MAX_HEAD_DIM] (a backend may compile fewer and
 *               answer VG_ERR_UNSUPPORTED naming those it has); heads >= 1; num_segments >= 1;
 *               ld_qkv >= 3·heads·head_dim, ld_out >= heads·head_dim.
 *
 * silu_mul      out[r, c] = silu(in[r, c]) · in[r, cols + c]: the two halves of one row.
 *               ld_in >= 2·cols, ld_out >= cols.
 *
 * convert       dst[i] = src[i] converted between float dtypes (round to nearest even).
 *               In place only between dtypes of equal size.
 *
 * rotary        Rotary position embedding with one position axis, split-half ("rotate half")
 *               layout, in place on the first `heads` head-sized slices of each row (row stride
 *               ld >= heads·head_dim): with half = head_dim/2, element i < half rotates with
 *               element i + half by the angle pos[r]·θ^(-2i/head_dim). head_dim even; theta > 0;
 *               pos is I32 [rows].
 *
 * rmsnorm_heads RMSNorm over each head-sized slice, in place: for each row r and head h < heads,
 *               x[r, h·head_dim + c] = w[c] · x[..] / sqrt(mean over c of x² + eps). w is
 *               [head_dim]; row stride ld >= heads·head_dim.
 *
 * kv_store      Write new keys and values into a paged cache. The cache holds blocks of
 *               block_size token slots; k_cache and v_cache are [num_slots, kv_heads·head_dim]
 *               (slot = block·block_size + offset). Row r of k (stride ld_k) and v (stride
 *               ld_v), kv_heads·head_dim elements each, goes to slot slots[r]; a negative slot
 *               writes nothing (padding rows). slots is I32 [rows] in device memory.
 *
 * paged_attention
 *               Causal attention of new query rows over a paged cache (keys and values of every
 *               sequence's history and its new tokens, already stored by kv_store). q rows hold
 *               `heads` heads (stride ld_q); out rows likewise (stride ld_out). Sequence s owns
 *               query rows query_start[s] .. query_start[s+1]-1 (I32 [num_seqs + 1], ascending,
 *               ending at or below rows; rows past the last sequence are padding and are written
 *               as zeros) and context_lens[s] cache positions (I32 [num_seqs]); its query row j of
 *               n is position context_lens[s] - n + j and attends to positions up to it. Position
 *               p lives in slot block_tables[s·max_blocks + p / block_size]·block_size +
 *               p % block_size. Grouped-query: query head h reads KV head h / (heads / kv_heads).
 *               heads a multiple of kv_heads; head_dim a multiple of 8 up to 256; block_size >= 1;
 *               softmax in fp32 scaled by `scale`.
 *
 * argmax        out[r] = the smallest c with x[r, c] maximal over c < cols (row stride ld): I32.
 *               NaNs are never maximal, except that a NaN in column 0 answers 0: what a
 *               sequential scan from column 0 with a strict comparison answers.
 *
 * attention_rotary
 *               attention over q and k rotated as rotary_2d rotates them (pos, theta), in one
 *               pass: equal to rotary_2d on the q and k slices followed by attention, but qkv is
 *               only read. Worth it when segments are short; for long segments a backend may
 *               re-rotate each key many times, so callers prefer the two ops there. The
 *               preconditions of both: head_dim a multiple of 4, theta > 0, pos I32 [rows, 2].
 *
 * layernorm     out[r, c] = (x[r, c] - mean_r) / sqrt(var_r + eps) · w[c] + b[c] over contiguous
 *               rows of `cols` elements, where mean_r and var_r are the mean and the population
 *               variance (divided by cols) of row r; statistics in fp32, the variance taken
 *               around the mean (not as E[x²] - mean², which cancels for rows far from zero).
 *               x, w, b and out share a float dtype; b may be NULL (no bias); out may equal x
 *               (no other overlap). cols >= 1, eps >= 0.
 *
 * gather_weighted
 *               dst[r, c] = Σ_{t < taps} w[r·taps + t] · src[idx[r·taps + t], c] for r < rows,
 *               c < cols: each output row a weighted sum of `taps` rows of a table src of
 *               src_rows contiguous rows of `cols` elements (bilinear or any separable
 *               resampling of a grid of rows, an embedding bag). src and dst share a float
 *               dtype; idx is I32 [rows, taps] and w is F32 [rows, taps], both in device memory
 *               and read when the op runs, so one capture serves any indices and weights. The
 *               products are summed in fp32 in the order of t, then rounded once to the dtype.
 *               An index outside [0, src_rows) contributes nothing (the device cannot refuse it
 *               without a synchronisation). dst must not overlap src, idx or w.
 *               taps in [1, VG_GATHER_MAX_TAPS]; src_rows >= 1; cols >= 1.
 *
 * rotary_kv_store
 *               The step between a decoder's qkv projection and its paged attention, in one op.
 *               Row r of qkv (stride ld >= (heads + 2·kv_heads)·head_dim) holds `heads` query
 *               heads, then kv_heads key heads, then kv_heads value heads. Equal to, in order:
 *               rmsnorm_heads on the query heads with q_norm and on the key heads with k_norm
 *               (only when q_norm and k_norm are given: both or neither; eps as rmsnorm_heads;
 *               the normalised values rounded to dtype as that op leaves them), rotary on the
 *               heads + kv_heads query and key heads (pos I32 [rows], theta), then kv_store of
 *               the rotated keys and the values into k_cache and v_cache at slots[r] (a negative
 *               slot writes nothing). The query and key heads of qkv are left normalised and
 *               rotated, the value heads untouched. head_dim even; heads, kv_heads >= 1;
 *               eps >= 0; theta > 0. The caches must not overlap qkv.
 *
 * rotary_paged_attention
 *               rotary_kv_store followed by paged_attention with q = qkv (ld_q = ld), in one op
 *               (vg_rotary_paged_args): the step between a decoder's qkv projection and its
 *               attention output, where a device can rotate each new key in the kernel that reads
 *               it instead of in a launch of its own. The preconditions of both ops, and more:
 *               num_slots >= 1 (the caches' extent), and neither out nor qkv overlaps a cache or
 *               the other (the core checks these); every row of a sequence is a new token whose
 *               slot is where block_tables puts its position (query row j of sequence s, of n, at
 *               position context_lens[s] - n + j, goes to that position's slot), so a device may
 *               take the new keys and values from qkv instead of reading them back from the
 *               cache; and no row's slot (padding rows' included) holds a position of the history
 *               any row reads, its own included. These two live in device memory: the core cannot
 *               check them, and where they are broken the results are undefined. The caches hold the new keys and values afterwards, as rotary_kv_store leaves
 *               them; qkv's query and key heads are left either untouched or as rotary_kv_store
 *               leaves them (the device's choice), its value heads untouched.
 *               With norm_x (op VG_OP_ROTARY_PAGED_ATTENTION_NORM_X, op table version 10), qkv holds
 *               the projection of rows that were not normalised, for a caller that folded the
 *               weight of the rmsnorm before its projection into the projection's columns
 *               (rmsnorm(x, w)·Wᵀ + b = s·(x·(W·diag(w))ᵀ) + b, s = 1/rms(x)): the op first takes
 *               each row r of qkv, all its (heads + 2·kv_heads)·head_dim columns, as
 *               qkv[r]·s_r + qkv_bias (in fp32, rounded to dtype; qkv_bias optional), with
 *               s_r = 1/sqrt(mean(norm_x[r, 0 .. norm_x_cols)²) + norm_x_eps), and then does the
 *               above with those rows. norm_x [rows, ld_norm_x] of dtype; norm_x_cols >= 1;
 *               ld_norm_x >= norm_x_cols; norm_x_eps >= 0; qkv_bias [(heads + 2·kv_heads)·head_dim]
 *               of dtype, only with norm_x. Neither overlaps qkv, out or a cache. qkv's query and
 *               key heads are left untouched or as rotary_kv_store leaves the scaled rows' heads,
 *               its value heads untouched.
 *               With tables_static = 1 (op table version 12) the caller promises that the op
 *               just before this one on the stream writes none of block_tables, context_lens,
 *               query_start, pos, slots, q_norm, k_norm, norm_x, qkv_bias, nor a cache entry of
 *               a position before the rows' new tokens: as in a decode step whose op before this
 *               one is the qkv projection (which only reads norm_x), the tables written before
 *               it (uploaded, or advanced by lm_advance a step earlier). A device may then read
 *               those before that op has finished (a kernel looking up its pages and streaming
 *               the cache while the projection ends), but still after every op before it; qkv
 *               may be that op's output. 0 (the default) promises nothing. A hint: a device may
 *               ignore it, and the result depends on it only by rounding (a device that times
 *               its kernels per shape may choose another one with it).
 *
 * lm_advance    one step of a greedy generation loop, over `rows` sequences (vg_lm_advance_args;
 *               every array is I32 in device memory unless said otherwise, read when the op
 *               runs, so one capture serves every step of a device-side loop). state holds
 *               [step, more, done[rows], count[rows]]. For each row r with done[r] == 0:
 *               t = next[r]; out[r·ld_out + count[r]] = t; with logits_out (F32), the F32 row
 *               logits[r·vocab ..] is copied to logits_out[(r·ld_out + count[r])·vocab ..];
 *               count[r] += 1; done[r] = 1 when t is one of eos[0 .. num_eos), count[r] reaches
 *               limit[r] or ld_out, or the next position has no block in the table; otherwise
 *               row r's next step advances: tokens[r] = t, pos[r] += 1, ctx[r] += 1 and
 *               slots[r] = block_tables[r·max_blocks + pos[r]/block_size]·block_size +
 *               pos[r] % block_size. A row that is done is left as it was (its next step repeats
 *               its last one, which writes the same KV entries again). Then step += 1 and
 *               more = 1 while some row is not done, else 0. rows >= 1, ld_out >= 1,
 *               block_size >= 1, max_blocks >= 1, num_eos >= 0, vocab >= 1 with logits_out.
 */

/* What gemm does with the two halves of its output (op table version 6). */
typedef enum vg_gemm_gate {
    VG_GEMM_GATE_NONE = 0,
    VG_GEMM_GATE_SILU = 1 /* C = silu(first half) · second half (see gemm above) */
} vg_gemm_gate;

/* Arguments of gemm (a struct: it has too many to pass by position). */
typedef struct vg_gemm_args {
    uint32_t struct_size; /* sizeof(vg_gemm_args) */
    vg_dtype dtype_ab;
    vg_dtype dtype_c;
    int64_t m, n, k;
    const void *a;
    int64_t lda;
    const void *b;
    int64_t ldb;
    void *c;
    int64_t ldc;
    const void *bias;     /* optional */
    const void *residual; /* optional */
    int64_t ldr;
    vg_activation act;
    float alpha;
    /* appended in op table version 6: set struct_size to sizeof(vg_gemm_args) to use it; a
     * caller built against an older header (a smaller struct_size) gets VG_GEMM_GATE_NONE */
    vg_gemm_gate gate;
    const void *norm_w; /* optional: [k] of dtype_ab; A is rmsnorm'd with it (see gemm) */
    float norm_eps;     /* >= 0 */
    void *norm_out;     /* with norm_w or norm_unit: [m, k] of dtype_ab, scratch the device may write */
    /* appended in op table version 9 (a smaller struct_size: 0) */
    int32_t norm_unit; /* 1: A is rmsnorm'd without a weight (norm_w NULL; see gemm) */
    /* appended in op table version 11 (a smaller struct_size: 0). norm_unit ended in padding
     * that callers built against versions 9 and 10 pass uninitialised within their struct_size:
     * the member after it takes those bytes, and nothing reads it. */
    int32_t unused_v9_tail;
    int32_t b_static; /* 1: no op of this stream writes B (weights loaded before; see gemm) */
} vg_gemm_args;

/* Arguments of lm_advance (vg_ops.h, above). Members are only appended; struct_size is the
 * caller's sizeof, at least VG_LM_ADVANCE_ARGS_SIZE_7 (the core zero-extends what a newer header
 * adds). */
typedef struct vg_lm_advance_args {
    uint32_t struct_size; /* sizeof(vg_lm_advance_args) */
    int32_t rows, num_eos, block_size, max_blocks;
    int64_t ld_out;
    int64_t vocab;                /* columns of logits, with logits_out */
    const int32_t *next;          /* [rows] the step's greedy token per row */
    const int32_t *eos;           /* [num_eos] */
    const int32_t *limit;         /* [rows] tokens each row may produce */
    const int32_t *block_tables;  /* [rows, max_blocks] */
    int32_t *tokens, *pos, *slots, *ctx; /* [rows] the next step's metadata, advanced in place */
    int32_t *state;               /* [2 + 2·rows] */
    int32_t *out;                 /* [rows, ld_out] */
    const float *logits;          /* [rows, vocab], with logits_out */
    float *logits_out;            /* optional: [rows, ld_out, vocab] */
} vg_lm_advance_args;
#define VG_LM_ADVANCE_ARGS_SIZE_7 (offsetof(vg_lm_advance_args, logits_out) + sizeof(float *))

/* Arguments of rotary_paged_attention (vg_ops.h, above; op table version 8): rotary_kv_store's,
 * then paged_attention's without q. Members are only appended; struct_size is the caller's
 * sizeof, at least VG_ROTARY_PAGED_ARGS_SIZE_8 (the core zero-extends what a newer header adds). */
typedef struct vg_rotary_paged_args {
    uint32_t struct_size; /* sizeof(vg_rotary_paged_args) */
    vg_dtype dtype;
    void *qkv;            /* [rows, ld]: heads query heads, kv_heads key heads, kv_heads value heads */
    int64_t ld, rows;
    int32_t heads, kv_heads, head_dim;
    float eps;                   /* the q / k norms' */
    const void *q_norm, *k_norm; /* optional, both or neither: [head_dim] */
    const int32_t *pos;          /* [rows] */
    float theta;
    float scale;                 /* the softmax's */
    void *k_cache, *v_cache;     /* [num_slots, kv_heads·head_dim] */
    int64_t num_slots;           /* the caches' extent (>= 1): what out and qkv must not overlap */
    const int32_t *slots;        /* [rows], each < num_slots */
    void *out;                   /* [rows, ld_out] */
    int64_t ld_out;
    const int32_t *block_tables; /* [num_seqs, max_blocks] */
    const int32_t *context_lens; /* [num_seqs] */
    const int32_t *query_start;  /* [num_seqs + 1] */
    int32_t max_blocks, num_seqs, block_size;
    /* appended in op table version 10 (a smaller struct_size: none): the norm the caller folded
     * into the projection that wrote qkv (see rotary_paged_attention above) */
    const void *norm_x;          /* optional: [rows, ld_norm_x], the rows the projection read */
    int64_t ld_norm_x, norm_x_cols;
    float norm_x_eps;
    const void *qkv_bias;        /* optional, with norm_x: [(heads + 2·kv_heads)·head_dim] */
    /* appended in op table version 12 (a smaller struct_size: 0) */
    int32_t tables_static; /* 1: the op before this one writes none of this call's inputs but qkv (see above) */
    int32_t unused_v12_tail; /* the padding after tables_static, which callers may leave uninitialised:
                              * never read, so that a later member has a defined place after it */
} vg_rotary_paged_args;
#define VG_ROTARY_PAGED_ARGS_SIZE_8 (offsetof(vg_rotary_paged_args, block_size) + sizeof(int32_t))

/* The highest head_dim attention accepts. */
#define VG_ATTENTION_MAX_HEAD_DIM 256

/* The most taps gather_weighted takes per output row (bicubic resampling needs 16). */
#define VG_GATHER_MAX_TAPS 64

#ifdef __cplusplus
}
#endif
#endif /* VG_OPS_H */
