/* Tensor-core attention for BF16 and F16 (mma.sync m16n8k16, fp32 accumulation), the
 * flash-attention-2 scheme: a block of 4 warps owns 64 query rows of one head, each warp 16 of
 * them; key/value tiles of 64 rows are staged in shared memory, two stages deep with cp.async so
 * the next tile loads while this one is used; scores and the output stay in registers, with an
 * online softmax. Segment bounds come from cu_seqlens in device memory and
 * are applied per row as a mask, so one launch serves any segmentation (window or full). */
#include "kernels.cuh"

#include <stdint.h>

#define TC_BQ 64
#define TC_BK 64
#define TC_WARPS 4
#define TC_PAD 8 /* elements of padding per shared row: conflict-free ldmatrix */

template <typename T> struct mma_type;
template <> struct mma_type<vg_bf16> { static constexpr bool bf16 = true; };
template <> struct mma_type<vg_f16> { static constexpr bool bf16 = false; };

template <typename T>
__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], const uint32_t b[2])
{
    if (mma_type<T>::bf16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

__device__ __forceinline__ void ldmatrix_x2(uint32_t r[2], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(smem_addr(p)));
}

__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t r[2], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(smem_addr(p)));
}

template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi)
{
    T l = vgk_from_f<T>(lo), h = vgk_from_f<T>(hi);
    return (uint32_t)(*(uint16_t *)&l) | ((uint32_t)(*(uint16_t *)&h) << 16);
}


/* Start copying `nrows` rows of HD elements into a shared tile of stride LDS with cp.async
 * (16-byte vectors), zero-filling rows past nrows and columns past HD up to HDP. */
template <typename T, int HD, int HDP, int LDS, int ROWS>
__device__ __forceinline__ void load_tile_async(T *dst, const T *src, int64_t ld, int nrows)
{
    constexpr int VPR = HDP / 8;
    for (int i = threadIdx.x; i < ROWS * VPR; i += TC_WARPS * 32) {
        int r = i / VPR, v = i % VPR;
        bool in = r < nrows && v * 8 < HD;
        const T *g = in ? src + (int64_t)r * ld + v * 8 : src; /* any valid address when empty */
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst + r * LDS + v * 8)),
                     "l"(g), "r"(in ? 16 : 0));
    }
    asm volatile("cp.async.commit_group;\n" ::);
}

template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

/* Copy `nrows` rows of HD elements (16-byte vectors) from global into a shared tile of
 * stride LDS, zero-filling rows past nrows and columns past HD up to HDP. */
template <typename T, int HD, int HDP, int LDS, int ROWS>
__device__ __forceinline__ void load_tile(T *dst, const T *src, int64_t ld, int nrows)
{
    constexpr int VPR = HDP / 8; /* 16-byte vectors per padded row */
    for (int i = threadIdx.x; i < ROWS * VPR; i += TC_WARPS * 32) {
        int r = i / VPR, v = i % VPR;
        uint4 x = make_uint4(0, 0, 0, 0);
        if (r < nrows && v * 8 < HD) x = *(const uint4 *)(src + (int64_t)r * ld + v * 8);
        *(uint4 *)(dst + r * LDS + v * 8) = x;
    }
}

template <typename T, int HD>
__global__ void __launch_bounds__(TC_WARPS * 32)
k_attention_tc(const T *qkv, int64_t ld_qkv, T *out, int64_t ld_out, int rows, int heads,
               const int32_t *cu, int nseg, float scale_log2)
{
    constexpr int HDP = (HD + 15) / 16 * 16; /* head dim padded to the mma k-step */
    constexpr int LDS = HDP + TC_PAD;
    constexpr int KS = HDP / 16; /* k-steps of Q·Kᵀ */
    constexpr int NT = HDP / 8;  /* n-tiles of the output */
    extern __shared__ __align__(16) unsigned char smem_raw[];
    /* Q, then two stages of [K tile, V tile] */
    T *qs = (T *)smem_raw, *stages = qs + TC_BQ * LDS;

    const int h = blockIdx.y, hidden = heads * HD, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = blockIdx.x * TC_BQ, last = min(row0 + TC_BQ, rows) - 1;
    const int kbeg = cu[vgk_segment_of(cu, nseg, row0)];
    const int kend = cu[vgk_segment_of(cu, nseg, last) + 1];

    /* this thread's two rows (lane/4 and lane/4 + 8 of its warp's 16) and their segments */
    int r_lo[2], r_hi[2];
    for (int i = 0; i < 2; i++) {
        int r = row0 + warp * 16 + lane / 4 + 8 * i;
        if (r < rows) {
            int sg = vgk_segment_of(cu, nseg, r);
            r_lo[i] = cu[sg], r_hi[i] = cu[sg + 1];
        } else {
            r_lo[i] = r_hi[i] = 0; /* no keys: the row is never written */
        }
    }

    load_tile<T, HD, HDP, LDS, TC_BQ>(qs, qkv + (int64_t)row0 * ld_qkv + h * HD, ld_qkv, last - row0 + 1);
    __syncthreads();
    uint32_t qf[KS][4];
    for (int k = 0; k < KS; k++)
        ldmatrix_x4(qf[k], qs + (warp * 16 + lane % 16) * LDS + k * 16 + (lane / 16) * 8);

    float o[NT][4];
    for (int n = 0; n < NT; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

    auto issue = [&](int k0, int stage) {
        const T *base = qkv + (int64_t)k0 * ld_qkv + h * HD;
        int nk = min(TC_BK, kend - k0);
        T *kdst = stages + stage * 2 * TC_BK * LDS;
        load_tile_async<T, HD, HDP, LDS, TC_BK>(kdst, base + hidden, ld_qkv, nk);
        load_tile_async<T, HD, HDP, LDS, TC_BK>(kdst + TC_BK * LDS, base + 2 * hidden, ld_qkv, nk);
    };
    if (kbeg < kend) issue(kbeg, 0);
    for (int k0 = kbeg, stage = 0; k0 < kend; k0 += TC_BK, stage ^= 1) {
        if (k0 + TC_BK < kend) { /* prefetch the next tile into the other stage */
            issue(k0 + TC_BK, stage ^ 1);
            cp_async_wait<2>(); /* this tile's two groups are done; the next two may fly */
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        const T *ks = stages + stage * 2 * TC_BK * LDS, *vs = ks + TC_BK * LDS;

        float s[TC_BK / 8][4];
        for (int n = 0; n < TC_BK / 8; n++) {
            s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
            for (int k = 0; k < KS; k++) {
                uint32_t b[2];
                /* Kᵀ as the col-major B operand: rows of K are its columns */
                ldmatrix_x2(b, ks + (n * 8 + lane % 8) * LDS + k * 16 + ((lane / 8) % 2) * 8);
                mma16816<T>(s[n], qf[k], b);
            }
        }
        /* mask keys outside each row's segment, then the online softmax in base 2 */
        float mx[2] = {-INFINITY, -INFINITY};
        for (int n = 0; n < TC_BK / 8; n++)
            for (int e = 0; e < 4; e++) {
                int i = e / 2, key = k0 + n * 8 + (lane % 4) * 2 + (e % 2);
                float v = key >= r_lo[i] && key < r_hi[i] ? s[n][e] * scale_log2 : -INFINITY;
                s[n][e] = v;
                mx[i] = fmaxf(mx[i], v);
            }
        float corr[2];
        for (int i = 0; i < 2; i++) {
            mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
            mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
            float mn = fmaxf(m[i], mx[i]);
            /* a row with no key yet keeps m = -inf: nothing to rescale, nothing to add */
            corr[i] = mn == -INFINITY ? 1.0f : exp2f(m[i] - mn);
            m[i] = mn;
            l[i] *= corr[i];
        }
        for (int n = 0; n < NT; n++) {
            o[n][0] *= corr[0], o[n][1] *= corr[0];
            o[n][2] *= corr[1], o[n][3] *= corr[1];
        }
        uint32_t pf[TC_BK / 16][4];
        for (int n = 0; n < TC_BK / 8; n++) {
            float p[4];
            for (int e = 0; e < 4; e++) {
                int i = e / 2;
                p[e] = m[i] == -INFINITY ? 0.0f : exp2f(s[n][e] - m[i]);
                l[i] += p[e];
            }
            /* the accumulator layout of two n-tiles is the A layout of one k-step */
            pf[n / 2][(n % 2) * 2 + 0] = pack2<T>(p[0], p[1]);
            pf[n / 2][(n % 2) * 2 + 1] = pack2<T>(p[2], p[3]);
        }
        for (int k = 0; k < TC_BK / 16; k++) {
            uint32_t a[4] = {pf[k][0], pf[k][1], pf[k][2], pf[k][3]};
            for (int n = 0; n < NT; n++) {
                uint32_t b[2];
                /* V [key][d] is the row-major B operand: load it transposed */
                ldmatrix_x2_trans(b, vs + (k * 16 + (lane % 16)) * LDS + n * 8);
                mma16816<T>(o[n], a, b);
            }
        }
        __syncthreads(); /* this stage is refilled two tiles from now */
    }
    for (int i = 0; i < 2; i++) { /* each quad of lanes holds partial sums of a row */
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
    }
    for (int i = 0; i < 2; i++) {
        int r = row0 + warp * 16 + lane / 4 + 8 * i;
        if (r >= rows) continue;
        float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
        T *dst = out + (int64_t)r * ld_out + h * HD;
        for (int n = 0; n < NT; n++) {
            int d = n * 8 + (lane % 4) * 2;
            if (d < HD) *(uint32_t *)(dst + d) = pack2<T>(o[n][2 * i] * inv, o[n][2 * i + 1] * inv);
        }
    }
}

template <typename T, int HD>
static size_t tc_smem_bytes()
{
    constexpr int HDP = (HD + 15) / 16 * 16;
    return (size_t)(TC_BQ + 4 * TC_BK) * (HDP + TC_PAD) * sizeof(T); /* Q, two K/V stages */
}

/* Raise the dynamic shared memory limit once per instantiation, at device open (never
 * during a capture). */
template <typename T, int HD>
static cudaError_t tc_prepare_one()
{
    return cudaFuncSetAttribute(k_attention_tc<T, HD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)tc_smem_bytes<T, HD>());
}

#define TC_HEAD_DIMS(X) X(32) X(64) X(72) X(80) X(96) X(128)

vg_status vgc_attention_tc_prepare(void)
{
#define PREP(D)                                                                  \
    VGC_CHECK((tc_prepare_one<vg_bf16, D>()));                                   \
    VGC_CHECK((tc_prepare_one<vg_f16, D>()));
    TC_HEAD_DIMS(PREP)
#undef PREP
    return VG_OK;
}

/* Returns VG_ERR_UNSUPPORTED (without an error message) when the shape is not covered. */
vg_status vgc_attention_tc(vg_bk_stream *s, vg_dtype t, const void *qkv, int64_t ld_qkv, void *out,
                           int64_t ld_out, int rows, int heads, int hd, const int32_t *cu, int nseg,
                           float scale)
{
    if ((t != VG_DTYPE_BF16 && t != VG_DTYPE_F16) || ld_qkv % 8 || ld_out % 2 ||
        ((uintptr_t)qkv % 16) || ((uintptr_t)out % 4))
        return VG_ERR_UNSUPPORTED;
    dim3 grid((unsigned)((rows + TC_BQ - 1) / TC_BQ), (unsigned)heads);
    const float scale_log2 = scale * 1.4426950408889634f;
#define TC_CASE(D)                                                                                     \
    case D:                                                                                            \
        if (t == VG_DTYPE_BF16)                                                                        \
            k_attention_tc<vg_bf16, D><<<grid, TC_WARPS * 32, tc_smem_bytes<vg_bf16, D>(), s->s>>>(    \
                (const vg_bf16 *)qkv, ld_qkv, (vg_bf16 *)out, ld_out, rows, heads, cu, nseg, scale_log2); \
        else                                                                                           \
            k_attention_tc<vg_f16, D><<<grid, TC_WARPS * 32, tc_smem_bytes<vg_f16, D>(), s->s>>>(      \
                (const vg_f16 *)qkv, ld_qkv, (vg_f16 *)out, ld_out, rows, heads, cu, nseg, scale_log2);   \
        break;
    switch (hd) {
        TC_HEAD_DIMS(TC_CASE)
    default:
        return VG_ERR_UNSUPPORTED;
    }
#undef TC_CASE
    VGC_CHECK_LAUNCH("attention_tc");
    return VG_OK;
}
