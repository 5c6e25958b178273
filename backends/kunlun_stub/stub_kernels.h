/* SPDX-License-Identifier: Apache-2.0 */
/* Host-side element helpers shared by the kernel files of kunlun_stub. */
#ifndef STUB_KERNELS_H
#define STUB_KERNELS_H

#include <math.h>

#include "vg/vg_backend.h"
#include "vg/vg_half.h"

static inline size_t dtype_size(vg_dtype t)
{
    switch (t) {
    case VG_DTYPE_F32: case VG_DTYPE_I32: return 4;
    case VG_DTYPE_F16: case VG_DTYPE_BF16: return 2;
    case VG_DTYPE_I64: return 8;
    case VG_DTYPE_U8: return 1;
    default: return 0;
    }
}

static inline float load_f(const void *p, vg_dtype t, size_t i)
{
    switch (t) {
    case VG_DTYPE_BF16: return vg_bf16_to_f32(((const uint16_t *)p)[i]);
    case VG_DTYPE_F16: return vg_f16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

static inline void store_f(void *p, vg_dtype t, size_t i, float v)
{
    switch (t) {
    case VG_DTYPE_BF16: ((uint16_t *)p)[i] = vg_f32_to_bf16(v); break;
    case VG_DTYPE_F16: ((uint16_t *)p)[i] = vg_f32_to_f16(v); break;
    default: ((float *)p)[i] = v; break;
    }
}

static inline float activate(vg_activation act, float x)
{
    switch (act) {
    case VG_ACT_GELU_ERF: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case VG_ACT_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case VG_ACT_SILU: return x / (1.0f + expf(-x));
    case VG_ACT_QUICK_GELU: return x / (1.0f + expf(-1.702f * x));
    default: return x;
    }
}

/* Rotate element i with element i + half of each of the `heads` head slices of one row (row
 * offset `base` in elements) by the angle whose cosine and sine are c and sn: the inner step of
 * every split-half rotary. */
static inline void rotate_heads(void *x, vg_dtype t, size_t base, int heads, int head_dim, int i,
                                float c, float sn)
{
    size_t half = (size_t)head_dim / 2;
    for (int h = 0; h < heads; h++) {
        size_t at = base + (size_t)h * (size_t)head_dim + (size_t)i;
        float x0 = load_f(x, t, at), x1 = load_f(x, t, at + half);
        store_f(x, t, at, x0 * c - x1 * sn);
        store_f(x, t, at + half, x1 * c + x0 * sn);
    }
}

#endif
