/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by every kernel of the opencl backend (OpenCL C 1.2, no extension needed).
 *
 * Buffers arrive as (base, byte offset) pairs: the host maps each device address to the cl_mem
 * holding it and the offset inside it (docs/opencl.md). BUF(x) declares the pair; AT(x) is the
 * address. Float tensors are addressed as bytes and read and written through ld()/st(), which
 * convert F32, F16 and BF16 to and from float with integer arithmetic: no cl_khr_fp16 needed,
 * and the rounding (to nearest even) and NaNs match vg_half.h bit for bit. The dtype is a kernel
 * argument; the branch on it is uniform across work-items. Arithmetic is fp32 throughout. */

#define DT_F32 0
#define DT_F16 1
#define DT_BF16 2

#define MAX_HD 256 /* the catalogue's largest head_dim: private arrays of attention kernels */

#define BUF(x) global uchar *x##_base, ulong x##_off
#define AT(x) (x##_base + x##_off)

inline float bf16_to_f32(ushort h) { return as_float((uint)h << 16); }

inline ushort f32_to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}

inline float f16_to_f32(ushort h)
{
    uint sign = (uint)(h & 0x8000u) << 16;
    uint e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) { /* zero or subnormal: m * 2^-24 is exact in float */
        float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    if (e == 31) return as_float(sign | 0x7f800000u | (m << 13));
    return as_float(sign | ((e + 112u) << 23) | (m << 13));
}

inline ushort f32_to_f16(float f)
{
    uint u = as_uint(f);
    uint sign = (u >> 16) & 0x8000u, au = u & 0x7fffffffu;
    if (au > 0x7f800000u) return (ushort)(sign | 0x7e00u);
    if (au >= 0x477ff000u) return (ushort)(sign | 0x7c00u); /* overflow to inf */
    if (au < 0x38800000u) {                                 /* subnormal or zero */
        if (au < 0x33000000u) return (ushort)sign;
        uint man = (au & 0x7fffffu) | 0x800000u;
        uint shift = 126u - (au >> 23); /* 14..24 */
        uint m16 = man >> shift;
        uint rem = man & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
        if (rem > mid || (rem == mid && (m16 & 1u))) m16++;
        return (ushort)(sign | m16);
    }
    uint r = au + 0xfffu + ((au >> 13) & 1u) - ((127u - 15u) << 23);
    return (ushort)(sign | (r >> 13));
}

/* Element i of a float tensor of dtype dt. */
inline float ld(const global uchar *p, int dt, size_t i)
{
    if (dt == DT_BF16) return bf16_to_f32(((const global ushort *)p)[i]);
    if (dt == DT_F16) return f16_to_f32(((const global ushort *)p)[i]);
    return ((const global float *)p)[i];
}

inline void st(global uchar *p, int dt, size_t i, float v)
{
    if (dt == DT_BF16) ((global ushort *)p)[i] = f32_to_bf16(v);
    else if (dt == DT_F16) ((global ushort *)p)[i] = f32_to_f16(v);
    else ((global float *)p)[i] = v;
}

/* Copy element i of `esize` bytes (1, 2, 4 or 8; the pointers are aligned to it). */
inline void copy_elem(global uchar *dst, const global uchar *src, int esize, size_t di, size_t si)
{
    if (esize == 4) ((global uint *)dst)[di] = ((const global uint *)src)[si];
    else if (esize == 2) ((global ushort *)dst)[di] = ((const global ushort *)src)[si];
    else if (esize == 8) ((global ulong *)dst)[di] = ((const global ulong *)src)[si];
    else dst[di] = src[si];
}

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

/* theta^-e, the rotary frequency: in double where the device has it (OpenCL allows pow 16 ulp of
 * error in float, and positions in the thousands multiply it), rounded to float once. */
inline float rotary_inv_freq(float theta, float e)
{
#ifdef cl_khr_fp64
    return (float)(1.0 / pow((double)theta, (double)e));
#else
    return 1.0f / pow(theta, e);
#endif
}
