/* Segment-local (varlen) non-causal attention with an online softmax (flash-style), fp32
 * accumulation. Segment bounds come from cu_seqlens in device memory at execution time, so one
 * captured launch serves every segmentation of its rows.
 *
 * One block covers BQ consecutive query rows of one head; each thread owns one query row, its
 * q and its output accumulator in registers (HD is a template constant so they stay there).
 * The block walks key tiles of BK rows staged in shared memory over the union of its rows'
 * segments; each thread masks keys outside its own segment. */
#include "kernels.cuh"

#define ATT_BQ 64
#define ATT_BK 32


template <typename T, int HD>
__global__ void __launch_bounds__(ATT_BQ)
k_attention(const T *qkv, int64_t ld_qkv, T *out, int64_t ld_out, int rows, int heads,
            const int32_t *cu, int nseg, float scale)
{
    __shared__ float ks[ATT_BK][HD];
    __shared__ float vs[ATT_BK][HD];
    const int h = blockIdx.y, hidden = heads * HD;
    const int row0 = blockIdx.x * ATT_BQ, row = row0 + threadIdx.x;
    const int last = min(row0 + ATT_BQ, rows) - 1;
    const bool active = row < rows;
    /* The key range of the whole block: from the first row's segment start to the last's end. */
    int kbeg = cu[vgk_segment_of(cu, nseg, row0)];
    int kend = cu[vgk_segment_of(cu, nseg, last) + 1];
    int lo = 0, hi = 0;
    if (active) {
        int sg = vgk_segment_of(cu, nseg, row);
        lo = cu[sg];
        hi = cu[sg + 1];
    }
    float q[HD], acc[HD];
    float m = -INFINITY, l = 0.0f;
#pragma unroll
    for (int d = 0; d < HD; d++) {
        q[d] = active ? vgk_to_f(qkv[(int64_t)row * ld_qkv + h * HD + d]) * scale : 0.0f;
        acc[d] = 0.0f;
    }
    for (int k0 = kbeg; k0 < kend; k0 += ATT_BK) {
        int nk = min(ATT_BK, kend - k0);
        __syncthreads();
        for (int t = threadIdx.x; t < ATT_BK * HD; t += ATT_BQ) {
            int j = t / HD, d = t % HD;
            float kv = 0.0f, vv = 0.0f;
            if (j < nk) {
                const T *src = qkv + (int64_t)(k0 + j) * ld_qkv + h * HD + d;
                kv = vgk_to_f(src[hidden]);
                vv = vgk_to_f(src[2 * hidden]);
            }
            ks[j][d] = kv;
            vs[j][d] = vv;
        }
        __syncthreads();
        if (!active) continue;
        int jb = max(lo - k0, 0), je = min(hi - k0, nk);
        for (int j = jb; j < je; j++) {
            float sdot = 0.0f;
#pragma unroll
            for (int d = 0; d < HD; d++) sdot += q[d] * ks[j][d];
            if (sdot > m) { /* rescale what was accumulated under the old maximum */
                float c = __expf(m - sdot);
                l *= c;
#pragma unroll
                for (int d = 0; d < HD; d++) acc[d] *= c;
                m = sdot;
            }
            float p = __expf(sdot - m);
            l += p;
#pragma unroll
            for (int d = 0; d < HD; d++) acc[d] += p * vs[j][d];
        }
    }
    if (!active) return;
    float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
    for (int d = 0; d < HD; d++) out[(int64_t)row * ld_out + h * HD + d] = vgk_from_f<T>(acc[d] * inv);
}

template <typename T>
static vg_status launch(vg_bk_stream *s, const void *qkv, int64_t ld_qkv, void *out, int64_t ld_out,
                        int rows, int heads, int hd, const int32_t *cu, int nseg, float scale)
{
    dim3 grid((unsigned)((rows + ATT_BQ - 1) / ATT_BQ), (unsigned)heads);
#define ATT_CASE(D)                                                                              \
    case D:                                                                                      \
        k_attention<T, D><<<grid, ATT_BQ, 0, s->s>>>((const T *)qkv, ld_qkv, (T *)out, ld_out,   \
                                                     rows, heads, cu, nseg, scale);              \
        break;
    switch (hd) {
        ATT_CASE(32)
        ATT_CASE(64)
        ATT_CASE(72)
        ATT_CASE(80)
        ATT_CASE(96)
        ATT_CASE(128)
    default:
        return VGC_ERR(VG_ERR_UNSUPPORTED, VG_VENDOR_NAME ": attention: head_dim %d not compiled "
                                           "(32, 64, 72, 80, 96, 128 are)", hd);
    }
#undef ATT_CASE
    VGC_CHECK_LAUNCH("attention");
    return VG_OK;
}

vg_status vgc_op_attention(vg_bk_device *, vg_bk_stream *s, vg_dtype t, const void *qkv,
                           int64_t ld_qkv, void *out, int64_t ld_out, int64_t rows, int heads,
                           int head_dim, const int32_t *cu, int nseg, float scale)
{
    int64_t hidden = (int64_t)heads * head_dim;
    if (!s || rows < 0 || rows > 0x7fffffff || heads <= 0 || heads > 65535 || head_dim <= 0 ||
        nseg < 1 || ld_qkv < 3 * hidden || ld_out < hidden || (rows && (!qkv || !out || !cu)))
        return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": attention: bad argument");
    if (!rows) return VG_OK;
    if (!s->dev->simple_attention) {
        vg_status st = vgc_attention_tc(s, t, qkv, ld_qkv, out, ld_out, (int)rows, heads, head_dim,
                                        cu, nseg, scale);
        if (st != VG_ERR_UNSUPPORTED) return st;
    }
    switch (t) {
    case VG_DTYPE_F32: return launch<float>(s, qkv, ld_qkv, out, ld_out, (int)rows, heads, head_dim, cu, nseg, scale);
    case VG_DTYPE_BF16: return launch<vg_bf16>(s, qkv, ld_qkv, out, ld_out, (int)rows, heads, head_dim, cu, nseg, scale);
    case VG_DTYPE_F16: return launch<vg_f16>(s, qkv, ld_qkv, out, ld_out, (int)rows, heads, head_dim, cu, nseg, scale);
    default: return VGC_ERR(VG_ERR_INVALID_ARG, VG_VENDOR_NAME ": attention: dtype must be F32, BF16 or F16");
    }
}
