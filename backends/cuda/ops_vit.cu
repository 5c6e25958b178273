/* Vision-transformer kernels of the op table: rmsnorm, 2-D rotary, silu·mul, convert.
 * Attention lives in attention.cu. Every kernel accumulates in fp32. */
#include "kernels.cuh"

/* Block-wide sum over blockDim.x threads (a multiple of 32, at most 1024). */
__device__ __forceinline__ float block_sum(float v, float *shared32)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) shared32[warp] = v;
    __syncthreads();
    int nwarps = blockDim.x / 32;
    v = lane < nwarps ? shared32[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads(); /* shared32 may be reused by the caller */
    return v;
}

template <typename T>
__global__ void k_rmsnorm(const T *x, const T *w, T *out, int64_t cols, float eps)
{
    __shared__ float part[32];
    const T *xr = x + blockIdx.x * cols;
    T *orow = out + blockIdx.x * cols;
    float ss = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = vgk_to_f(xr[c]);
        ss += v * v;
    }
    float inv = rsqrtf(block_sum(ss, part) / (float)cols + eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
        orow[c] = vgk_from_f<T>(vgk_to_f(w[c]) * (vgk_to_f(xr[c]) * inv));
}

vg_status vgc_op_rmsnorm(vg_bk_device *, vg_bk_stream *s, vg_dtype t, const void *x, const void *w,
                         void *out, int64_t rows, int64_t cols, float eps)
{
    if (!s || rows < 0 || cols <= 0 || rows > 0x7fffffff || (rows && (!x || !w || !out)))
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": rmsnorm: bad argument");
    if (!rows) return VG_OK;
    int threads = cols >= 1024 ? 256 : 128;
    VGK_FLOAT_DISPATCH(t, T, k_rmsnorm<T><<<(unsigned)rows, threads, 0, s->s>>>(
                                 (const T *)x, (const T *)w, (T *)out, cols, eps));
    VGC_CHECK_LAUNCH("rmsnorm");
    return VG_OK;
}

/* One thread per (row, head, i < half): rotates the pair (i, i + half). */
template <typename T>
__global__ void k_rotary_2d(T *x, int64_t ld, int64_t rows, int heads, int head_dim,
                            const int32_t *pos, float log2_theta)
{
    int half = head_dim / 2, quarter = head_dim / 4;
    int64_t total = rows * heads * half;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        int i = (int)(t % half);
        int64_t rh = t / half;
        int h = (int)(rh % heads);
        int64_t r = rh / heads;
        int j = i < quarter ? i : i - quarter;
        float p = (float)pos[2 * r + (i < quarter ? 0 : 1)];
        float inv_freq = exp2f(-log2_theta * (float)(2 * j) / (float)half);
        float sn, c;
        sincosf(p * inv_freq, &sn, &c);
        T *base = x + r * ld + (int64_t)h * head_dim;
        float x0 = vgk_to_f(base[i]), x1 = vgk_to_f(base[i + half]);
        base[i] = vgk_from_f<T>(x0 * c - x1 * sn);
        base[i + half] = vgk_from_f<T>(x1 * c + x0 * sn);
    }
}

vg_status vgc_op_rotary_2d(vg_bk_device *, vg_bk_stream *s, vg_dtype t, void *x, int64_t ld,
                           int64_t rows, int heads, int head_dim, const int32_t *pos, float theta)
{
    if (!s || rows < 0 || heads <= 0 || head_dim <= 0 || head_dim % 4 ||
        ld < (int64_t)heads * head_dim || theta <= 0.0f || (rows && (!x || !pos)))
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": rotary_2d: bad argument (head_dim "
                                           "must be a multiple of 4)");
    if (!rows) return VG_OK;
    size_t total = (size_t)rows * (size_t)heads * (size_t)(head_dim / 2);
    VGK_FLOAT_DISPATCH(t, T, k_rotary_2d<T><<<vgk_blocks(total), 256, 0, s->s>>>(
                                 (T *)x, ld, rows, heads, head_dim, pos, log2f(theta)));
    VGC_CHECK_LAUNCH("rotary_2d");
    return VG_OK;
}

template <typename T>
__global__ void k_silu_mul(const T *in, int64_t ld_in, T *out, int64_t ld_out, int64_t rows,
                           int64_t cols)
{
    int64_t total = rows * cols;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = t / cols, c = t % cols;
        float g = vgk_to_f(in[r * ld_in + c]), u = vgk_to_f(in[r * ld_in + cols + c]);
        out[r * ld_out + c] = vgk_from_f<T>(g / (1.0f + __expf(-g)) * u);
    }
}

vg_status vgc_op_silu_mul(vg_bk_device *, vg_bk_stream *s, vg_dtype t, const void *in,
                          int64_t ld_in, void *out, int64_t ld_out, int64_t rows, int64_t cols)
{
    if (!s || rows < 0 || cols <= 0 || ld_in < 2 * cols || ld_out < cols || (rows && (!in || !out)))
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": silu_mul: bad argument");
    if (!rows) return VG_OK;
    VGK_FLOAT_DISPATCH(t, T, k_silu_mul<T><<<vgk_blocks((size_t)(rows * cols)), 256, 0, s->s>>>(
                                 (const T *)in, ld_in, (T *)out, ld_out, rows, cols));
    VGC_CHECK_LAUNCH("silu_mul");
    return VG_OK;
}

template <typename TI, typename TO>
__global__ void k_convert(const TI *src, TO *dst, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = vgk_from_f<TO>(vgk_to_f(src[i]));
}

vg_status vgc_op_convert(vg_bk_device *, vg_bk_stream *s, vg_dtype from, const void *src,
                         vg_dtype to, void *dst, size_t n)
{
    int okf = from == VG_DTYPE_F32 || from == VG_DTYPE_BF16 || from == VG_DTYPE_F16;
    int okt = to == VG_DTYPE_F32 || to == VG_DTYPE_BF16 || to == VG_DTYPE_F16;
    if (!s || !okf || !okt || (n && (!src || !dst)))
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": convert: bad argument");
    if (src == dst && (from == VG_DTYPE_F32) != (to == VG_DTYPE_F32))
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": convert: in place needs equal sizes");
    if (!n) return VG_OK;
    VGK_FLOAT_DISPATCH(from, TI, VGK_FLOAT_DISPATCH(to, TO,
        k_convert<TI, TO><<<vgk_blocks(n), 256, 0, s->s>>>((const TI *)src, (TO *)dst, n)));
    VGC_CHECK_LAUNCH("convert");
    return VG_OK;
}
