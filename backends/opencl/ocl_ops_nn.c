/* SPDX-License-Identifier: Apache-2.0 */
/* opencl ops of op table versions 2 and 3 (rmsnorm, rotary_2d, attention, silu_mul, convert,
 * attention_rotary): launch geometry and arguments; the arithmetic is in kernels/. */
#include "ocl_internal.h"

/* rmsnorm and rmsnorm_heads: one work-group per (row, slice) (kernels/norm.cl) */
static vg_status rms_norm(vg_bk_stream *s, const char *op, vg_dtype t, const void *x, int64_t ldx,
                          void *out, int64_t ldo, const void *w, int64_t rows, int heads,
                          int64_t hd, float eps)
{
    size_t global[2] = {(size_t)OCL_WG_REDUCE * (size_t)heads, (size_t)rows};
    size_t local[2] = {OCL_WG_REDUCE, 1};
    ocl_arg a[] = {OA_I32(t), OA_PTR(x), OA_I64(ldx), OA_PTR(out), OA_I64(ldo), OA_PTR(w),
                   OA_I32(heads), OA_I32(hd), OA_F32(eps)};
    return ocl_launch(s, OCL_K_rms_norm, op, 2, global, local, 9, a);
}

vg_status ocl_op_rmsnorm(vg_bk_device *dev, vg_bk_stream *s, vg_dtype t, const void *x,
                         const void *w, void *out, int64_t rows, int64_t cols, float eps)
{
    (void)dev;
    return rms_norm(s, "rmsnorm", t, x, cols, out, cols, w, rows, 1, cols, eps);
}

vg_status ocl_op_rmsnorm_heads(vg_bk_device *dev, vg_bk_stream *s, vg_dtype t, void *x, int64_t ld,
                               int64_t rows, int heads, int head_dim, const void *w, float eps)
{
    (void)dev;
    return rms_norm(s, "rmsnorm_heads", t, x, ld, x, ld, w, rows, heads, head_dim, eps);
}

/* rotary (axes 1) and rotary_2d (axes 2): one work-item per (row, pair) (kernels/rotary.cl) */
static vg_status rotary(vg_bk_stream *s, const char *op, vg_dtype t, void *x, int64_t ld,
                        int64_t rows, int heads, int hd, const int32_t *pos, float theta, int axes)
{
    size_t global = (size_t)rows * (size_t)(hd / 2), local = OCL_WG;
    ocl_arg a[] = {OA_I32(t), OA_PTR(x), OA_I64(ld), OA_I32(rows), OA_I32(heads), OA_I32(hd),
                   OA_PTR(pos), OA_F32(theta), OA_I32(axes)};
    return ocl_launch(s, OCL_K_rotary, op, 1, &global, &local, 9, a);
}

vg_status ocl_op_rotary_2d(vg_bk_device *dev, vg_bk_stream *s, vg_dtype t, void *x, int64_t ld,
                           int64_t rows, int heads, int head_dim, const int32_t *pos, float theta)
{
    (void)dev;
    return rotary(s, "rotary_2d", t, x, ld, rows, heads, head_dim, pos, theta, 2);
}

vg_status ocl_op_rotary(vg_bk_device *dev, vg_bk_stream *s, vg_dtype t, void *x, int64_t ld,
                        int64_t rows, int heads, int head_dim, const int32_t *pos, float theta)
{
    (void)dev;
    return rotary(s, "rotary", t, x, ld, rows, heads, head_dim, pos, theta, 1);
}

/* attention and attention_rotary: a group of query rows per head, key tiles in local memory
 * (kernels/attention.cl) */
static vg_status attention(vg_bk_device *dev, vg_bk_stream *s, const char *op, vg_dtype t,
                           const void *qkv, int64_t ld_qkv, void *out, int64_t ld_out, int64_t rows,
                           int heads, int hd, const int32_t *cu, int nseg, float scale,
                           const int32_t *pos, float theta)
{
    size_t per_key = 2 * (size_t)hd * sizeof(float); /* a key and a value row */
    size_t room = dev->local_mem > OCL_ATTN_LOCAL_FIXED ? dev->local_mem - OCL_ATTN_LOCAL_FIXED : 0;
    size_t tk = room / per_key < OCL_ATTN_TK ? room / per_key : OCL_ATTN_TK;
    if (tk == 0)
        return OCL_ERR(VG_ERR_UNSUPPORTED, "opencl: %s: head_dim %d needs %zu bytes of local memory, "
                                           "%s has %llu", op, hd, per_key + OCL_ATTN_LOCAL_FIXED,
                       dev->name, (unsigned long long)dev->local_mem);
    size_t global[2] = {(size_t)rows, (size_t)heads}, local[2] = {OCL_WG_ATTN, 1};
    ocl_arg a[] = {OA_I32(t), OA_PTR(qkv), OA_I64(ld_qkv), OA_PTR(out), OA_I64(ld_out),
                   OA_I32(rows), OA_I32(heads), OA_I32(hd), OA_PTR(cu), OA_I32(nseg),
                   OA_F32(scale), OA_I32(pos != NULL), OA_PTR(pos), OA_F32(theta),
                   OA_LOCAL(tk * per_key), OA_I32(tk)};
    return ocl_launch(s, OCL_K_attention, op, 2, global, local, (int)(sizeof a / sizeof a[0]), a);
}

vg_status ocl_op_attention(vg_bk_device *dev, vg_bk_stream *s, vg_dtype t, const void *qkv,
                           int64_t ld_qkv, void *out, int64_t ld_out, int64_t rows, int heads,
                           int head_dim, const int32_t *cu, int nseg, float scale)
{
    return attention(dev, s, "attention", t, qkv, ld_qkv, out, ld_out, rows, heads, head_dim, cu, nseg,
                     scale, NULL, 0.0f);
}

vg_status ocl_op_attention_rotary(vg_bk_device *dev, vg_bk_stream *s, vg_dtype t, const void *qkv,
                                  int64_t ld_qkv, void *out, int64_t ld_out, int64_t rows,
                                  int heads, int head_dim, const int32_t *cu, int nseg, float scale,
                                  const int32_t *pos, float theta)
{
    return attention(dev, s, "attention_rotary", t, qkv, ld_qkv, out, ld_out, rows, heads, head_dim, cu,
                     nseg, scale, pos, theta);
}

vg_status ocl_op_silu_mul(vg_bk_device *dev, vg_bk_stream *s, vg_dtype t, const void *in,
                          int64_t ld_in, void *out, int64_t ld_out, int64_t rows, int64_t cols)
{
    (void)dev;
    size_t global[2] = {(size_t)cols, (size_t)rows}, local[2] = {OCL_WG, 1};
    ocl_arg a[] = {OA_I32(t), OA_PTR(in), OA_I64(ld_in), OA_PTR(out), OA_I64(ld_out), OA_I32(rows),
                   OA_I32(cols)};
    return ocl_launch(s, OCL_K_silu_mul, "silu_mul", 2, global, local, 7, a);
}

vg_status ocl_op_convert(vg_bk_device *dev, vg_bk_stream *s, vg_dtype from, const void *src,
                         vg_dtype to, void *dst, size_t count)
{
    (void)dev;
    size_t global = count, local = OCL_WG;
    ocl_arg a[] = {OA_I32(from), OA_PTR(src), OA_I32(to), OA_PTR(dst), OA_I64(count)};
    return ocl_launch(s, OCL_K_convert, "convert", 1, &global, &local, 5, a);
}
