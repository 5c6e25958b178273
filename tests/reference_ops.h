/* SPDX-License-Identifier: Apache-2.0 */
/* Double-precision host references for the op catalogue (vg_ops.h), written from its text and
 * from nothing a backend does. Every array is a double array laid out exactly as the device
 * buffer (row strides in elements); outputs are written only where the op writes, so whatever
 * the caller left elsewhere (stride gaps) is what an untouched buffer must still hold. */
#ifndef VG_TEST_REFERENCE_OPS_H
#define VG_TEST_REFERENCE_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "vg/vg_ops.h"

/* VG_DTYPE_BIT set of the dtypes the catalogue allows for op (0 for an unknown op). */
uint32_t ref_catalogue_dtypes(vg_op_id op);

/* A value as the device stores it in dtype (round to nearest even for BF16 and F16). */
double ref_round(vg_dtype t, double v);

double ref_activation(vg_activation act, double x);

void ref_axpby(size_t n, double alpha, const double *x, double beta, double *y);

/* c[i, j] = act(alpha · Σ a[i, k] b[j, k] + bias[j]) + residual[i, j]; bias and residual may be
 * NULL; residual may equal c (read before written, element by element). */
void ref_gemm(int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
              const double *b, int64_t ldb, const double *bias, const double *residual,
              int64_t ldr, vg_activation act, double *c, int64_t ldc);

void ref_gather_rows(double *dst, const double *src, const int32_t *idx, int64_t rows, int64_t cols);

void ref_rmsnorm(const double *x, const double *w, double *out, int64_t rows, int64_t cols, double eps);

/* In place on x (row stride ld): the first `heads` slices of head_dim elements of each row. */
void ref_rotary_2d(double *x, int64_t ld, int64_t rows, int heads, int head_dim,
                   const int32_t *pos, double theta);

/* attention, or attention_rotary when pos is not NULL (qkv is not modified). */
void ref_attention(const double *qkv, int64_t ld_qkv, double *out, int64_t ld_out, int64_t rows,
                   int heads, int head_dim, const int32_t *cu_seqlens, int num_segments,
                   double scale, const int32_t *pos, double theta);

void ref_silu_mul(const double *in, int64_t ld_in, double *out, int64_t ld_out, int64_t rows,
                  int64_t cols);

/* ---- op table version 4 ---- */

/* rotary: one position per row, split-half, in place on the first `heads` slices of each row. */
void ref_rotary(double *x, int64_t ld, int64_t rows, int heads, int head_dim, const int32_t *pos,
                double theta);

/* rmsnorm_heads: in place, over each head-sized slice, with w[head_dim]. */
void ref_rmsnorm_heads(double *x, int64_t ld, int64_t rows, int heads, int head_dim,
                       const double *w, double eps);

/* kv_store: caches are [slots, width]; a negative slot writes nothing. */
void ref_kv_store(const double *k, int64_t ld_k, const double *v, int64_t ld_v, double *k_cache,
                  double *v_cache, const int32_t *slots, int64_t rows, int64_t width);

/* paged_attention: out rows of every sequence, zeros for the padding rows past the last one. */
void ref_paged_attention(const double *q, int64_t ld_q, double *out, int64_t ld_out, int64_t rows,
                         const double *k_cache, const double *v_cache,
                         const int32_t *block_tables, int max_blocks, const int32_t *context_lens,
                         const int32_t *query_start, int num_seqs, int heads, int kv_heads,
                         int head_dim, int block_size, double scale);

/* argmax: the smallest column holding the row's maximum. */
void ref_argmax(const double *x, int64_t ld, int64_t rows, int64_t cols, int32_t *out);

/* ---- op table version 5 ---- */

/* layernorm over contiguous rows; b may be NULL; out may equal x. */
void ref_layernorm(const double *x, const double *w, const double *b, double *out, int64_t rows,
                   int64_t cols, double eps);

/* gather_weighted: dst[r, :] = Σ_t w[r, t] · src[idx[r, t], :]; an index outside [0, src_rows)
 * contributes nothing. */
void ref_gather_weighted(double *dst, const double *src, int64_t src_rows, const int32_t *idx,
                         const double *w, int64_t rows, int64_t cols, int taps);

/* ---- op table version 6 ---- */

/* rotary_kv_store: rmsnorm_heads of the query and key heads (q_norm and k_norm, or neither: NULL)
 * with the normalised values rounded to `t`, rotary over both, then kv_store of the keys and the
 * values; qkv rows of heads + 2·kv_heads slices. */
void ref_rotary_kv_store(vg_dtype t, double *qkv, int64_t ld, int64_t rows, int heads,
                         int kv_heads, int head_dim, const double *q_norm, const double *k_norm,
                         double eps, const int32_t *pos, double theta, double *k_cache,
                         double *v_cache, const int32_t *slots);

/* gemm with gate = VG_GEMM_GATE_SILU: P = alpha·A·Bᵀ + bias over n = 2·h columns, then
 * c[i, j] = silu(P[i, j]) · P[i, h + j] for j < h (P unrounded). Returns max |P|. */
double ref_gemm_silu_gate(int64_t m, int64_t n, int64_t k, double alpha, const double *a,
                          int64_t lda, const double *b, int64_t ldb, const double *bias, double *c,
                          int64_t ldc);

/* ---- op table version 10 ---- */

/* rotary_paged_attention's norm_x: in place, the first `cols` columns of each row of qkv as the op
 * takes them, qkv[r]·s_r + bias (bias may be NULL) with s_r = 1/sqrt(mean(norm_x[r, 0 ..
 * norm_x_cols)²) + eps), in fp32, rounded to `t`. */
void ref_norm_x_fold(vg_dtype t, double *qkv, int64_t ld, int64_t rows, int64_t cols, const double *norm_x,
                     int64_t ld_norm_x, int64_t norm_x_cols, double eps, const double *bias);

#endif
