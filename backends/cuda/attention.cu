/* SPDX-License-Identifier: Apache-2.0 */
/* Segment-local (varlen) non-causal attention with an online softmax (flash-style), fp32
 * accumulation. Segment bounds come from cu_seqlens in device memory at execution time, so one
 * captured launch serves every segmentation of its rows.
 *
 * One block covers BQ consecutive query rows of one head; each thread owns one query row, its
 * q and its output accumulator in registers (HD is a template constant so they stay there). The
 * compiled head dims run kernels of exactly their size; any other head_dim up to ATT_HD_ANY runs
 * the kernel of that size with the head's columns past head_dim masked (every multiple of 8 from
 * 32 to 128, which vision towers use, and the rest).
 * The block walks key tiles of BK rows staged in shared memory over the union of its rows'
 * segments; each thread masks keys outside its own segment. With ROPE, q and k are rotated as
 * rotary_2d would (attention_rotary) while they are loaded. */
#include "kernels.cuh"

#define ATT_BQ 64
#define ATT_BK 32
#define ATT_HD_ANY 128 /* the bound of the masked kernel */


/* HD: the head dim (EXACT) or a bound of it (hd_rt <= HD: columns past hd_rt are masked). */
template <typename T, int HD, bool ROPE, bool EXACT>
__global__ void __launch_bounds__(ATT_BQ)
k_attention(const T *qkv, int64_t ld_qkv, T *out, int64_t ld_out, int rows, int heads,
            const int32_t *cu, int nseg, float scale, const int32_t *pos, float log2_theta, int hd_rt)
{
    vgk_grid_sync();
    const int hd = EXACT ? HD : hd_rt, HALF = hd / 2;
    __shared__ float ks[ATT_BK][HD];
    __shared__ float vs[ATT_BK][HD];
    const int h = blockIdx.y, hidden = heads * hd;
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
        q[d] = active && (EXACT || d < hd) ? vgk_to_f(qkv[(int64_t)row * ld_qkv + h * hd + d]) : 0.0f;
        acc[d] = 0.0f;
    }
    if (ROPE && active)
#pragma unroll
        for (int i = 0; i < HD / 2; i++) {
            if (!EXACT && i >= HALF) continue; /* (not break: the loop stays unrollable) */
            float c, sn, x0 = q[i], x1 = q[i + HALF];
            sincosf(vgk_rotary_angle(pos, row, i, HALF, log2_theta), &sn, &c);
            q[i] = x0 * c - x1 * sn;
            q[i + HALF] = x1 * c + x0 * sn;
        }
#pragma unroll
    for (int d = 0; d < HD; d++) q[d] *= scale;
    for (int k0 = kbeg; k0 < kend; k0 += ATT_BK) {
        int nk = min(ATT_BK, kend - k0);
        __syncthreads();
        for (int t = threadIdx.x; t < ATT_BK * HD; t += ATT_BQ) {
            int j = t / HD, d = t % HD;
            float kv = 0.0f, vv = 0.0f;
            if (j < nk && (EXACT || d < hd)) {
                const T *src = qkv + (int64_t)(k0 + j) * ld_qkv + h * hd + d;
                kv = vgk_to_f(src[hidden]);
                vv = vgk_to_f(src[2 * hidden]);
                if (ROPE) { /* the partner element of d's rotation pair, and their angle */
                    int i = d < HALF ? d : d - HALF;
                    float other = vgk_to_f(src[hidden + (d < HALF ? HALF : -HALF)]), c, sn;
                    sincosf(vgk_rotary_angle(pos, k0 + j, i, HALF, log2_theta), &sn, &c);
                    kv = d < HALF ? kv * c - other * sn : kv * c + other * sn;
                }
            }
            ks[j][d] = kv; /* masked columns hold zeros: they add nothing to a dot product */
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
    for (int d = 0; d < HD; d++)
        if (EXACT || d < hd) out[(int64_t)row * ld_out + h * hd + d] = vgk_from_f<T>(acc[d] * inv);
}

template <typename T, bool ROPE>
static vg_status launch(vg_bk_stream *s, const vgc_attention_call *c)
{
    dim3 grid((unsigned)((c->rows + ATT_BQ - 1) / ATT_BQ), (unsigned)c->heads);
    const float log2_theta = ROPE ? log2f(c->theta) : 0.0f;
#define ATT_CASE(D)                                                                              \
    case D:                                                                                      \
        vgc_launch(s, k_attention<T, D, ROPE, true>, grid, ATT_BQ, 0, (const T *)c->qkv,         \
                   c->ld_qkv, (T *)c->out, c->ld_out, c->rows, c->heads, c->cu, c->nseg,         \
                   c->scale, c->pos, log2_theta, D);                                             \
        break;
    switch (c->hd) {
        ATT_CASE(32)
        ATT_CASE(64)
        ATT_CASE(72)
        ATT_CASE(80)
        ATT_CASE(96)
        ATT_CASE(128)
    default:
        if (c->hd > ATT_HD_ANY || (ROPE && c->hd % 4))
            return VGC_ERR(VG_ERR_UNSUPPORTED, VG_VENDOR_NAME ": attention: head_dim %d not compiled "
                                               "(every head_dim up to %d is)", c->hd, ATT_HD_ANY);
        vgc_launch(s, k_attention<T, ATT_HD_ANY, ROPE, false>, grid, ATT_BQ, 0, (const T *)c->qkv,
                   c->ld_qkv, (T *)c->out, c->ld_out, c->rows, c->heads, c->cu, c->nseg, c->scale,
                   c->pos, log2_theta, c->hd);
    }
#undef ATT_CASE
    VGC_CHECK_LAUNCH("attention");
    return VG_OK;
}

template <bool ROPE>
static vg_status dispatch(vg_bk_stream *s, const vgc_attention_call *c)
{
    switch (c->t) {
    case VG_DTYPE_F32: return launch<float, ROPE>(s, c);
    case VG_DTYPE_BF16: return launch<vgc_bf16, ROPE>(s, c);
    case VG_DTYPE_F16: return launch<vgc_f16, ROPE>(s, c);
    default: return VGC_ERR(VG_ERR_UNSUPPORTED, VG_VENDOR_NAME ": attention: no kernel for dtype %d", (int)c->t);
    }
}

/* The tensor-core kernel when it covers the call (on Hopper the wgmma one, for calls without
 * rotation), else the portable one. */
static vg_status run(vg_bk_stream *s, const vgc_attention_call *c)
{
    if (!c->rows) return VG_OK;
    if (!s->dev->simple_attention) {
        vg_status st = c->pos ? VG_ERR_UNSUPPORTED : vgc_attention_wg(s, c);
        if (st == VG_ERR_UNSUPPORTED) st = vgc_attention_tc(s, c);
        if (st != VG_ERR_UNSUPPORTED) return st;
    }
    return c->pos ? dispatch<true>(s, c) : dispatch<false>(s, c);
}

/* What the kernels cannot do although the catalogue allows it (the core has checked the rest,
 * rows below 2^31 included): heads span the grid's y dimension. */
static vg_status limits_ok(const char *name, int64_t rows, int heads)
{
    if (heads > 65535)
        return VGC_ERR(VG_ERR_UNSUPPORTED, VG_VENDOR_NAME ": %s: %lld rows of %d heads: at most "
                       "65535 heads", name, (long long)rows, heads);
    return VG_OK;
}

vg_status vgc_op_attention(vg_bk_device *, vg_bk_stream *s, vg_dtype t, const void *qkv,
                           int64_t ld_qkv, void *out, int64_t ld_out, int64_t rows, int heads,
                           int head_dim, const int32_t *cu, int nseg, float scale)
{
    vg_status st = limits_ok("attention", rows, heads);
    if (st != VG_OK) return st;
    vgc_attention_call c = {t, qkv, ld_qkv, out, ld_out, (int)rows, heads, head_dim, cu, nseg, scale, NULL, 0.0f};
    return run(s, &c);
}

vg_status vgc_op_attention_rotary(vg_bk_device *, vg_bk_stream *s, vg_dtype t, const void *qkv,
                                  int64_t ld_qkv, void *out, int64_t ld_out, int64_t rows, int heads,
                                  int head_dim, const int32_t *cu, int nseg, float scale,
                                  const int32_t *pos, float theta)
{
    vg_status st = limits_ok("attention_rotary", rows, heads);
    if (st != VG_OK) return st;
    vgc_attention_call c = {t, qkv, ld_qkv, out, ld_out, (int)rows, heads, head_dim, cu, nseg, scale, pos, theta};
    return run(s, &c);
}
