/* SPDX-License-Identifier: Apache-2.0 */
/* opencl ops of op table version 5, for vision towers with LayerNorm and a learned position
 * table resampled per image: layernorm and gather_weighted. Launch geometry and arguments only;
 * the arithmetic is in kernels/norm.cl and kernels/elementwise.cl. */
#include "ocl_internal.h"

/* One work-group per row (kernels/norm.cl); b absent binds the dummy buffer, the kernel told by
 * has_b. */
vg_status ocl_op_layernorm(vg_bk_device *dev, vg_bk_stream *s, vg_dtype t, const void *x,
                           const void *w, const void *b, void *out, int64_t rows, int64_t cols,
                           float eps)
{
    (void)dev;
    size_t global[2] = {OCL_WG_REDUCE, (size_t)rows}, local[2] = {OCL_WG_REDUCE, 1};
    ocl_arg a[] = {OA_I32(t), OA_PTR(x), OA_PTR(w), OA_I32(b != NULL), OA_PTR(b), OA_PTR(out),
                   OA_I32(cols), OA_F32(eps)};
    return ocl_launch(s, OCL_K_layer_norm, "layernorm", 2, global, local, 8, a);
}

/* One work-item per output element (kernels/elementwise.cl). */
vg_status ocl_op_gather_weighted(vg_bk_device *dev, vg_bk_stream *s, vg_dtype t, void *dst,
                                 const void *src, int64_t src_rows, const int32_t *idx,
                                 const float *w, int64_t rows, int64_t cols, int taps)
{
    (void)dev;
    size_t global[2] = {(size_t)cols, (size_t)rows}, local[2] = {OCL_WG, 1};
    ocl_arg a[] = {OA_I32(t), OA_PTR(dst), OA_PTR(src), OA_I32(src_rows), OA_PTR(idx), OA_PTR(w),
                   OA_I32(rows), OA_I32(cols), OA_I32(taps)};
    return ocl_launch(s, OCL_K_gather_weighted, "gather_weighted", 2, global, local, 9, a);
}
