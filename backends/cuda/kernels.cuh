/* SPDX-License-Identifier: Apache-2.0 */
/* Device-side helpers shared by the kernel files: dtype conversion and activations. */
#ifndef VG_CUDA_KERNELS_CUH
#define VG_CUDA_KERNELS_CUH

#include "common.cuh"

__device__ __forceinline__ float vgk_to_f(float x) { return x; }
__device__ __forceinline__ float vgk_to_f(vgc_bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float vgk_to_f(vgc_f16 x) { return __half2float(x); }

template <typename T> __device__ __forceinline__ T vgk_from_f(float x);
template <> __device__ __forceinline__ float vgk_from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ vgc_bf16 vgk_from_f<vgc_bf16>(float x) { return __float2bfloat16(x); }
template <> __device__ __forceinline__ vgc_f16 vgk_from_f<vgc_f16>(float x) { return __float2half(x); }

__device__ __forceinline__ float vgk_activate(vg_activation act, float x)
{
    switch (act) {
    case VG_ACT_GELU_ERF: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case VG_ACT_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case VG_ACT_SILU: return x / (1.0f + __expf(-x));
    case VG_ACT_QUICK_GELU: return x / (1.0f + __expf(-1.702f * x));
    default: return x;
    }
}

/* Index of the segment holding `row` in an ascending cu_seqlens of nseg + 1 entries: the last
 * s with cu[s] <= row, so empty segments are skipped. Shared by both attention kernels. */
__device__ __forceinline__ int vgk_segment_of(const int32_t *cu, int nseg, int row)
{
    int lo = 0, hi = nseg - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (cu[mid] <= row) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* The 2-D rotary (rotary_2d's contract): element i < half of a head turns by its position (h
 * in the first quarter of the head, w in the second) times the frequency θ^(-2j/half), where j
 * is i's index within its quarter. */
__device__ __forceinline__ float vgk_rotary_freq(int i, int half, float log2_theta)
{
    int quarter = half / 2, j = i < quarter ? i : i - quarter;
    return exp2f(-log2_theta * (float)(2 * j) / (float)half);
}

__device__ __forceinline__ float vgk_rotary_angle(const int32_t *pos, int64_t r, int i, int half,
                                                  float log2_theta)
{
    return (float)pos[2 * r + (i < half / 2 ? 0 : 1)] * vgk_rotary_freq(i, half, log2_theta);
}

/* rotary_kv_store's rotation (vg_ops.h) of pair (j, j + head_dim/2) of a head at position p: the
 * angle's cosine and sine. */
__device__ __forceinline__ void vgk_rotary_cs(int j, int head_dim, float p, float log2_theta, float *c, float *s)
{
    sincosf(p * exp2f(-log2_theta * (float)(2 * j) / (float)head_dim), s, c);
}

/* One pair of a query or key head as rotary_kv_store leaves it: normalised by inv with the norm's
 * weights (w0, w1) where `norm` (rounded to T, as rmsnorm_heads leaves it), then rotated by the
 * angle of cosine c and sine s; x0 and x1 in, rounded results out. Shared by rotary_kv_store's
 * kernel and the tensor-core decode kernel that does its work in place. */
template <typename T>
__device__ __forceinline__ void vgk_norm_rotate(T &x0t, T &x1t, bool norm, float w0, float w1, float inv, float c,
                                                float s)
{
    float x0 = vgk_to_f(x0t), x1 = vgk_to_f(x1t);
    if (norm) {
        x0 = vgk_to_f(vgk_from_f<T>(w0 * (x0 * inv)));
        x1 = vgk_to_f(vgk_from_f<T>(w1 * (x1 * inv)));
    }
    x0t = vgk_from_f<T>(x0 * c - x1 * s);
    x1t = vgk_from_f<T>(x1 * c + x0 * s);
}

/* First statement of every kernel (see vgc_launch): wait until the kernel before this one on the
 * stream has completed and its writes are visible, then allow the next kernel to be scheduled
 * (it waits the same way). A no-op before sm_90, on HIP, and without a programmatic launch
 * (vgc_pdl_wait_release, vendor.h). */
__device__ __forceinline__ void vgk_grid_sync() { vgc_pdl_wait_release(); }

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

/* rmsnorm_heads' 1/rms of one head from a warp's lanes' sums of squares (lane l's over the
 * elements l, l + 32, ... in that order, as the kernels that must agree bit for bit take them). */
__device__ __forceinline__ float vgk_head_inv_rms(float ss, int head_dim, float eps)
{
    return rsqrtf(vgk_warp_sum(ss) / (float)head_dim + eps);
}

/* An element of a row scaled by norm_x's factor s with its bias b added, rounded to T: the rows
 * rotary_paged_attention works on (vg_ops.h). */
template <typename T> __device__ __forceinline__ T vgk_row_scaled(T v, float s, float b)
{
    return vgk_from_f<T>(vgk_to_f(v) * s + b);
}

/* Grid size for a grid-stride loop over n items with 256-thread blocks. */
static inline unsigned vgk_blocks(size_t n)
{
    size_t b = (n + 255) / 256;
    return (unsigned)(b < 1 ? 1 : b > 65535u * 8 ? 65535u * 8 : b);
}

/* Run `body` with T bound to the C++ type of a floating vg_dtype. */
#define VGK_FLOAT_DISPATCH(dtype, T, ...)                             \
    switch (dtype) {                                                  \
    case VG_DTYPE_F32: { typedef float T; __VA_ARGS__; } break;      \
    case VG_DTYPE_BF16: { typedef vgc_bf16 T; __VA_ARGS__; } break;   \
    case VG_DTYPE_F16: { typedef vgc_f16 T; __VA_ARGS__; } break;     \
    default: break;                                                   \
    }

#endif
