/* Vision-transformer kernels of the op table: rmsnorm, 2-D rotary, silu·mul, convert.
 * Attention lives in attention.cu. Every kernel accumulates in fp32. */
#include "kernels.cuh"

/* One warp per row: no block barriers; statistics in fp32 with warp shuffles. */
template <typename T>
__global__ void k_rmsnorm(const T *x, const T *w, T *out, int rows, int cols, float eps)
{
    int lane = threadIdx.x % 32;
    for (int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; r < rows;
         r += gridDim.x * (blockDim.x / 32)) {
        const T *xr = x + (int64_t)r * cols;
        T *orow = out + (int64_t)r * cols;
        float ss = 0.0f;
        for (int c = lane; c < cols; c += 32) {
            float v = vgk_to_f(xr[c]);
            ss += v * v;
        }
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        float inv = rsqrtf(ss / (float)cols + eps);
        for (int c = lane; c < cols; c += 32) orow[c] = vgk_from_f<T>(vgk_to_f(w[c]) * (vgk_to_f(xr[c]) * inv));
    }
}

vg_status vgc_op_rmsnorm(vg_bk_device *, vg_bk_stream *s, vg_dtype t, const void *x, const void *w,
                         void *out, int64_t rows, int64_t cols, float eps)
{
    if (!s || rows < 0 || cols <= 0 || rows > 0x7fffffff || cols > 0x7fffffff || (rows && (!x || !w || !out)))
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": rmsnorm: bad argument");
    if (!rows) return VG_OK;
    unsigned blocks = (unsigned)((rows + 7) / 8 < 65535 * 4 ? (rows + 7) / 8 : 65535 * 4);
    VGK_FLOAT_DISPATCH(t, T, k_rmsnorm<T><<<blocks, 256, 0, s->s>>>(
                                 (const T *)x, (const T *)w, (T *)out, (int)rows, (int)cols, eps));
    VGC_CHECK_LAUNCH("rmsnorm");
    return VG_OK;
}

/* One thread per (row, i < half): the angle's sine and cosine are computed once and applied to
 * the pair (i, i + half) of every head slice of the row. */
template <typename T>
__global__ void k_rotary_2d(T *x, int64_t ld, int rows, int heads, int head_dim, const int32_t *pos,
                            float log2_theta)
{
    int half = head_dim / 2, quarter = head_dim / 4;
    int64_t total = (int64_t)rows * half;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        int r = (int)(t / half), i = (int)(t - (int64_t)r * half);
        int j = i < quarter ? i : i - quarter;
        float p = (float)pos[2 * r + (i < quarter ? 0 : 1)];
        float sn, c;
        sincosf(p * exp2f(-log2_theta * (float)(2 * j) / (float)half), &sn, &c);
        T *base = x + (int64_t)r * ld + i;
        for (int h = 0; h < heads; h++, base += head_dim) {
            float x0 = vgk_to_f(base[0]), x1 = vgk_to_f(base[half]);
            base[0] = vgk_from_f<T>(x0 * c - x1 * sn);
            base[half] = vgk_from_f<T>(x1 * c + x0 * sn);
        }
    }
}

vg_status vgc_op_rotary_2d(vg_bk_device *, vg_bk_stream *s, vg_dtype t, void *x, int64_t ld,
                           int64_t rows, int heads, int head_dim, const int32_t *pos, float theta)
{
    if (!s || rows < 0 || rows > 0x7fffffff || heads <= 0 || head_dim <= 0 || head_dim % 4 ||
        ld < (int64_t)heads * head_dim || theta <= 0.0f || (rows && (!x || !pos)))
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": rotary_2d: bad argument (head_dim "
                                           "must be a multiple of 4)");
    if (!rows) return VG_OK;
    size_t total = (size_t)rows * (size_t)(head_dim / 2);
    VGK_FLOAT_DISPATCH(t, T, k_rotary_2d<T><<<vgk_blocks(total), 256, 0, s->s>>>(
                                 (T *)x, ld, (int)rows, heads, head_dim, pos, log2f(theta)));
    VGC_CHECK_LAUNCH("rotary_2d");
    return VG_OK;
}

/* Rows across blocks, columns across threads: no per-element division. */
template <typename T>
__global__ void k_silu_mul(const T *in, int64_t ld_in, T *out, int64_t ld_out, int rows, int cols)
{
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *g = in + (int64_t)r * ld_in, *u = g + cols;
        T *o = out + (int64_t)r * ld_out;
        for (int c = threadIdx.x; c < cols; c += blockDim.x) {
            float gv = vgk_to_f(g[c]);
            o[c] = vgk_from_f<T>(gv / (1.0f + __expf(-gv)) * vgk_to_f(u[c]));
        }
    }
}

vg_status vgc_op_silu_mul(vg_bk_device *, vg_bk_stream *s, vg_dtype t, const void *in,
                          int64_t ld_in, void *out, int64_t ld_out, int64_t rows, int64_t cols)
{
    if (!s || rows < 0 || cols <= 0 || rows > 0x7fffffff || cols > 0x7fffffff || ld_in < 2 * cols ||
        ld_out < cols || (rows && (!in || !out)))
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": silu_mul: bad argument");
    if (!rows) return VG_OK;
    unsigned blocks = (unsigned)(rows < 65535 * 8 ? rows : 65535 * 8);
    VGK_FLOAT_DISPATCH(t, T, k_silu_mul<T><<<blocks, 256, 0, s->s>>>(
                                 (const T *)in, ld_in, (T *)out, ld_out, (int)rows, (int)cols));
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
