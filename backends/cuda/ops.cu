/* SPDX-License-Identifier: Apache-2.0 */
/* Elementwise and data-movement kernels of the op table. */
#include "kernels.cuh"

template <typename T>
__global__ void k_fill(T *dst, size_t n, T v)
{
    vgk_grid_sync();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = v;
}

static vg_status op_fill(vg_bk_device *, vg_bk_stream *s, void *dst, vg_dtype dt, size_t n, double v)
{
    if (!n) return VG_OK;
    unsigned g = vgk_blocks(n);
    switch (dt) {
    case VG_DTYPE_F32: vgc_launch(s, k_fill<float>, g, 256, 0, (float *)dst, n, (float)v); break;
    case VG_DTYPE_BF16: vgc_launch(s, k_fill<vgc_bf16>, g, 256, 0, (vgc_bf16 *)dst, n, __float2bfloat16((float)v)); break;
    case VG_DTYPE_F16: vgc_launch(s, k_fill<vgc_f16>, g, 256, 0, (vgc_f16 *)dst, n, __float2half((float)v)); break;
    case VG_DTYPE_I32: vgc_launch(s, k_fill<int32_t>, g, 256, 0, (int32_t *)dst, n, (int32_t)v); break;
    case VG_DTYPE_I64: vgc_launch(s, k_fill<int64_t>, g, 256, 0, (int64_t *)dst, n, (int64_t)v); break;
    case VG_DTYPE_U8: vgc_launch(s, k_fill<uint8_t>, g, 256, 0, (uint8_t *)dst, n, (uint8_t)v); break;
    default: return VGC_ERR(VG_ERR_UNSUPPORTED, VG_VENDOR_NAME ": fill: no kernel for dtype %d", (int)dt);
    }
    VGC_CHECK_LAUNCH("fill");
    return VG_OK;
}

__global__ void k_axpby(size_t n, float alpha, const float *x, float beta, float *y)
{
    vgk_grid_sync();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = alpha * x[i] + beta * y[i];
}

static vg_status op_axpby(vg_bk_device *, vg_bk_stream *s, size_t n, float alpha, const float *x,
                          float beta, float *y)
{
    if (!n) return VG_OK;
    vgc_launch(s, k_axpby, vgk_blocks(n), 256, 0, n, alpha, x, beta, y);
    VGC_CHECK_LAUNCH("axpby");
    return VG_OK;
}

/* One warp per output row; each lane moves W-byte words (W = 16 when rows allow it). */
template <typename W>
__global__ void k_gather_rows(char *dst, const char *src, const int32_t *idx, int64_t rows,
                              size_t row_words)
{
    vgk_grid_sync();
    int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    int64_t nwarps = (int64_t)gridDim.x * blockDim.x / 32;
    for (int64_t r = warp; r < rows; r += nwarps) {
        const W *s = (const W *)src + (size_t)idx[r] * row_words;
        W *d = (W *)dst + (size_t)r * row_words;
        for (size_t i = lane; i < row_words; i += 32) d[i] = s[i];
    }
}

static vg_status op_gather_rows(vg_bk_device *, vg_bk_stream *s, vg_dtype dt, void *dst,
                                const void *src, const int32_t *idx, int64_t rows, int64_t cols)
{
    static const size_t sizes[VG_DTYPE_COUNT_] = {4, 2, 2, 4, 8, 1};
    if (!rows || !cols) return VG_OK;
    size_t row_bytes = (size_t)cols * sizes[dt];
    uintptr_t align = (uintptr_t)dst | (uintptr_t)src | row_bytes;
    unsigned blocks = (unsigned)((rows + 7) / 8 < 65535 * 8 ? (rows + 7) / 8 : 65535 * 8);
    if (align % 16 == 0)
        vgc_launch(s, k_gather_rows<uint4>, blocks, 256, 0, (char *)dst, (const char *)src, idx, rows, row_bytes / 16);
    else if (align % 4 == 0)
        vgc_launch(s, k_gather_rows<uint32_t>, blocks, 256, 0, (char *)dst, (const char *)src, idx, rows, row_bytes / 4);
    else if (align % 2 == 0)
        vgc_launch(s, k_gather_rows<uint16_t>, blocks, 256, 0, (char *)dst, (const char *)src, idx, rows, row_bytes / 2);
    else /* U8 rows at odd addresses or of odd length */
        vgc_launch(s, k_gather_rows<uint8_t>, blocks, 256, 0, (char *)dst, (const char *)src, idx, rows, row_bytes);
    VGC_CHECK_LAUNCH("gather_rows");
    return VG_OK;
}

/* c[i, j] = act(c[i, j] + bias[j]) + residual[i, j], for what the GEMM library did not fuse. */
template <typename TC, typename TB>
__global__ void k_epilogue(TC *c, int64_t ldc, const TB *bias, const TC *res, int64_t ldr,
                           int64_t m, int64_t n, vg_activation act)
{
    vgk_grid_sync();
    size_t total = (size_t)m * (size_t)n;
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < total; t += (size_t)gridDim.x * blockDim.x) {
        int64_t i = (int64_t)(t / (size_t)n), j = (int64_t)(t % (size_t)n);
        float v = vgk_to_f(c[i * ldc + j]);
        if (bias) v += vgk_to_f(bias[j]);
        v = vgk_activate(act, v);
        if (res) v += vgk_to_f(res[i * ldr + j]);
        c[i * ldc + j] = vgk_from_f<TC>(v);
    }
}

vg_status vgc_epilogue(vg_bk_stream *s, const vg_gemm_args *a, int add_bias, int add_residual)
{
    if (!(add_bias && a->bias) && !(add_residual && a->residual) && a->act == VG_ACT_NONE) return VG_OK;
    unsigned g = vgk_blocks((size_t)a->m * (size_t)a->n);
    VGK_FLOAT_DISPATCH(a->dtype_c, TC, VGK_FLOAT_DISPATCH(a->dtype_ab, TB,
        vgc_launch(s, k_epilogue<TC, TB>, g, 256, 0, (TC *)a->c, a->ldc,
            add_bias ? (const TB *)a->bias : nullptr, add_residual ? (const TC *)a->residual : nullptr,
            a->ldr, a->m, a->n, a->act)));
    VGC_CHECK_LAUNCH("epilogue");
    return VG_OK;
}

/* Not const: clang's HIP mode would also emit a const global with a constant initializer for
 * the device, where the host functions it points to do not exist. */
vg_op_table vgc_ops = {
    VG_OP_TABLE_VERSION,
    sizeof(vg_op_table),
    op_fill,
    op_axpby,
    vgc_op_gemm,
    op_gather_rows,
    vgc_op_rmsnorm,
    vgc_op_rotary_2d,
    vgc_op_attention,
    vgc_op_silu_mul,
    vgc_op_convert,
    vgc_op_attention_rotary,
    vgc_op_rotary,
    vgc_op_rmsnorm_heads,
    vgc_op_kv_store,
    vgc_op_paged_attention,
    vgc_op_argmax,
    vgc_op_layernorm,
    vgc_op_gather_weighted,
    vgc_op_rotary_kv_store,
    vgc_op_lm_advance,
    vgc_op_rotary_paged_attention,
};
