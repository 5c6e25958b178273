/* SPDX-License-Identifier: Apache-2.0 */
/* opencl ops of op table version 4, for decoder language models: kv_store, paged_attention and
 * argmax (rotary and rmsnorm_heads share their kernels with rotary_2d and rmsnorm, in
 * ocl_ops_nn.c), and version 6's rotary_kv_store. The arithmetic is in kernels/paged.cl and
 * kernels/argmax.cl. */
#include "ocl_internal.h"

vg_status ocl_op_kv_store(vg_bk_device *dev, vg_bk_stream *s, vg_dtype t, const void *k,
                          int64_t ld_k, const void *v, int64_t ld_v, void *k_cache, void *v_cache,
                          const int32_t *slots, int64_t rows, int kv_heads, int head_dim)
{
    (void)dev;
    int64_t width = (int64_t)kv_heads * head_dim;
    size_t global[2] = {(size_t)width, (size_t)rows}, local[2] = {OCL_WG, 1};
    ocl_arg a[] = {OA_I32(ocl_dtype_size(t)), OA_PTR(k), OA_I64(ld_k), OA_PTR(v), OA_I64(ld_v),
                   OA_PTR(k_cache), OA_PTR(v_cache), OA_PTR(slots), OA_I32(rows), OA_I32(width)};
    return ocl_launch(s, OCL_K_kv_store, "kv_store", 2, global, local, 10, a);
}

/* One work-group per (head slice, row) over the query, key and value slices (kernels/paged.cl). */
vg_status ocl_op_rotary_kv_store(vg_bk_device *dev, vg_bk_stream *s, vg_dtype t, void *qkv,
                                 int64_t ld, int64_t rows, int heads, int kv_heads, int head_dim,
                                 const void *q_norm, const void *k_norm, float eps,
                                 const int32_t *pos, float theta, void *k_cache, void *v_cache,
                                 const int32_t *slots)
{
    (void)dev;
    size_t global[2] = {(size_t)OCL_WG_REDUCE * (size_t)(heads + 2 * kv_heads), (size_t)rows};
    size_t local[2] = {OCL_WG_REDUCE, 1};
    ocl_arg a[] = {OA_I32(t), OA_PTR(qkv), OA_I64(ld), OA_I32(heads), OA_I32(kv_heads),
                   OA_I32(head_dim), OA_I32(q_norm != NULL), OA_PTR(q_norm), OA_PTR(k_norm),
                   OA_F32(eps), OA_PTR(pos), OA_F32(theta), OA_PTR(k_cache), OA_PTR(v_cache),
                   OA_PTR(slots)};
    return ocl_launch(s, OCL_K_rotary_kv_store, "rotary_kv_store", 2, global, local,
                      (int)(sizeof a / sizeof a[0]), a);
}

vg_status ocl_op_paged_attention(vg_bk_device *dev, vg_bk_stream *s, vg_dtype t, const void *q,
                                 int64_t ld_q, void *out, int64_t ld_out, int64_t rows,
                                 const void *k_cache, const void *v_cache,
                                 const int32_t *block_tables, int max_blocks,
                                 const int32_t *context_lens, const int32_t *query_start,
                                 int num_seqs, int heads, int kv_heads, int head_dim,
                                 int block_size, float scale)
{
    (void)dev;
    size_t global[2] = {(size_t)rows, (size_t)heads}, local[2] = {OCL_WG_ATTN, 1};
    ocl_arg a[] = {OA_I32(t), OA_PTR(q), OA_I64(ld_q), OA_PTR(out), OA_I64(ld_out), OA_I32(rows),
                   OA_PTR(k_cache), OA_PTR(v_cache), OA_PTR(block_tables), OA_I32(max_blocks),
                   OA_PTR(context_lens), OA_PTR(query_start), OA_I32(num_seqs), OA_I32(heads),
                   OA_I32(kv_heads), OA_I32(head_dim), OA_I32(block_size), OA_F32(scale)};
    return ocl_launch(s, OCL_K_paged_attention, "paged_attention", 2, global, local,
                      (int)(sizeof a / sizeof a[0]), a);
}

/* One work-group per row (kernels/argmax.cl). */
vg_status ocl_op_argmax(vg_bk_device *dev, vg_bk_stream *s, vg_dtype t, const void *x, int64_t ld,
                        int64_t rows, int64_t cols, int32_t *out)
{
    (void)dev;
    size_t global[2] = {OCL_WG_REDUCE, (size_t)rows}, local[2] = {OCL_WG_REDUCE, 1};
    ocl_arg a[] = {OA_I32(t), OA_PTR(x), OA_I64(ld), OA_I64(cols), OA_PTR(out)};
    return ocl_launch(s, OCL_K_argmax, "argmax", 2, global, local, 5, a);
}
