/* SPDX-License-Identifier: Apache-2.0 */
/* pixel_values on the host: converted to the compute dtype in one pass that also refuses
 * non-finite values (NaN, ±infinity, or a value the compute dtype cannot hold), which would
 * otherwise turn every embedding of their image into NaN without a word.
 *
 * The check looks at each converted element's exponent bits (all ones: NaN or infinity), OR-ed
 * into a flag so that the loops stay branch-free: over blocks of 16 elements for the copies and
 * the BF16 conversions, which the compiler vectorises that way, over the whole input for the
 * F16 conversions, which branch anyway. Only on failure is the input looked at again, to name
 * the first bad row and column. */
#include <math.h>
#include <string.h>

#include "vg/vg_half.h"
#include "vit_common.h"

#define BLOCK 16
#define INLINE static inline __attribute__((always_inline))
#define EXP32 0x7f800000u
#define EXP_BF16 0x7f80u
#define EXP_F16 0x7c00u

static float load(const void *src, vg_dtype dt, size_t i)
{
    if (dt == VG_DTYPE_F32) return ((const float *)src)[i];
    uint16_t h = ((const uint16_t *)src)[i];
    return dt == VG_DTYPE_BF16 ? vg_bf16_to_f32(h) : vg_f16_to_f32(h);
}

/* The first bad element at or after `from`, named in the message. */
static vg_status refuse(const void *src, vg_dtype from, vg_dtype to, size_t from_i, size_t n,
                        int64_t cols)
{
    size_t i = from_i;
    float v = 0, o = 0;
    for (; i < n; i++) {
        v = load(src, from, i);
        o = to == VG_DTYPE_F32    ? v
            : to == VG_DTYPE_BF16 ? vg_bf16_to_f32(vg_f32_to_bf16(v))
                                  : vg_f16_to_f32(vg_f32_to_f16(v));
        if (!isfinite(o)) break;
    }
    long long row = (long long)(i / (size_t)cols), col = (long long)(i % (size_t)cols);
    if (isnan(v))
        return vg_error_set(VG_ERR_INVALID_ARG, "vit: pixel_values row %lld, column %lld is NaN: "
                                                "refusing non-finite input", row, col);
    if (isinf(v))
        return vg_error_set(VG_ERR_INVALID_ARG, "vit: pixel_values row %lld, column %lld is %s: "
                                                "refusing non-finite input", row, col,
                            v > 0 ? "+infinity" : "-infinity");
    return vg_error_set(VG_ERR_INVALID_ARG, "vit: pixel_values row %lld, column %lld holds %g, "
                                            "beyond the range of %s (the compute dtype): refusing "
                                            "non-finite input", row, col, (double)v,
                        vg_dtype_name(to));
}

/* Same dtype: a copy that ORs the exponent test of every element. */
INLINE size_t copy32(const uint32_t *restrict s, uint32_t *restrict d, size_t n)
{
    size_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK) {
        uint32_t bad = 0;
        for (int k = 0; k < BLOCK; k++) {
            uint32_t u = s[i + k];
            d[i + k] = u;
            bad |= (u & EXP32) == EXP32;
        }
        if (bad) return i;
    }
    for (; i < n; i++) {
        d[i] = s[i];
        if ((s[i] & EXP32) == EXP32) return i - i % BLOCK;
    }
    return n;
}

INLINE size_t copy16(const uint16_t *restrict s, uint16_t *restrict d, size_t n, uint16_t exp)
{
    size_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK) {
        uint16_t bad = 0;
        for (int k = 0; k < BLOCK; k++) {
            uint16_t u = s[i + k];
            d[i + k] = u;
            bad |= (uint16_t)((u & exp) == exp);
        }
        if (bad) return i;
    }
    for (; i < n; i++) {
        d[i] = s[i];
        if ((s[i] & exp) == exp) return i - i % BLOCK;
    }
    return n;
}

/* F32 -> BF16 and BF16 -> F32 are a few integer operations: blocked like the copies. The
 * converted BF16's exponent catches NaN, infinity and overflow; widening is exact, so there
 * the source's exponent tells. */
INLINE size_t f32_to_bf16(const float *restrict s, uint16_t *restrict d, size_t n)
{
    size_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK) {
        uint16_t bad = 0;
        for (int k = 0; k < BLOCK; k++) {
            uint16_t o = vg_f32_to_bf16(s[i + k]);
            d[i + k] = o;
            bad |= (uint16_t)((o & EXP_BF16) == EXP_BF16);
        }
        if (bad) return i;
    }
    for (; i < n; i++) {
        uint16_t o = vg_f32_to_bf16(s[i]);
        d[i] = o;
        if ((o & EXP_BF16) == EXP_BF16) return i - i % BLOCK;
    }
    return n;
}

INLINE size_t bf16_to_f32(const uint16_t *restrict s, float *restrict d, size_t n)
{
    size_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK) {
        uint16_t bad = 0;
        for (int k = 0; k < BLOCK; k++) {
            uint16_t h = s[i + k];
            d[i + k] = vg_bf16_to_f32(h);
            bad |= (uint16_t)((h & EXP_BF16) == EXP_BF16);
        }
        if (bad) return i;
    }
    for (; i < n; i++) {
        d[i] = vg_bf16_to_f32(s[i]);
        if ((s[i] & EXP_BF16) == EXP_BF16) return i - i % BLOCK;
    }
    return n;
}

/* Conversions through F16 branch on every element: plain loops (blocking them only grows the
 * code), the OR taken over the whole input; refuse() finds the first bad element. */
static size_t f32_to_f16(const float *restrict s, uint16_t *restrict d, size_t n)
{
    uint16_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint16_t o = vg_f32_to_f16(s[i]);
        d[i] = o;
        bad |= (uint16_t)((o & EXP_F16) == EXP_F16);
    }
    return bad ? 0 : n;
}

static size_t f16_to_f32(const uint16_t *restrict s, float *restrict d, size_t n)
{
    uint16_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        d[i] = vg_f16_to_f32(s[i]);
        bad |= (uint16_t)((s[i] & EXP_F16) == EXP_F16);
    }
    return bad ? 0 : n;
}

/* Between the half formats, through F32; the result's exponent tells. */
static size_t half_to_half(const uint16_t *restrict s, uint16_t *restrict d, size_t n, int to_bf16)
{
    const uint16_t exp = to_bf16 ? EXP_BF16 : EXP_F16;
    uint16_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint16_t o = to_bf16 ? vg_f32_to_bf16(vg_f16_to_f32(s[i]))
                             : vg_f32_to_f16(vg_bf16_to_f32(s[i]));
        d[i] = o;
        bad |= (uint16_t)((o & exp) == exp);
    }
    return bad ? 0 : n;
}

vg_status vit_convert_pixels(const void *src, vg_dtype from, void *dst, vg_dtype to, int64_t rows,
                             int64_t cols)
{
    size_t n = (size_t)rows * (size_t)cols, bad;
    int bf16 = to == VG_DTYPE_BF16;
    if (from == to && to == VG_DTYPE_F32)
        bad = copy32(src, dst, n);
    else if (from == to) /* constant masks: each call is its own loop */
        bad = bf16 ? copy16(src, dst, n, EXP_BF16) : copy16(src, dst, n, EXP_F16);
    else if (from == VG_DTYPE_F32)
        bad = bf16 ? f32_to_bf16(src, dst, n) : f32_to_f16(src, dst, n);
    else if (to == VG_DTYPE_F32)
        bad = from == VG_DTYPE_BF16 ? bf16_to_f32(src, dst, n) : f16_to_f32(src, dst, n);
    else
        bad = half_to_half(src, dst, n, bf16);
    return bad < n ? refuse(src, from, to, bad, n, cols) : VG_OK;
}
