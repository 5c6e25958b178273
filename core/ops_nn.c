/* SPDX-License-Identifier: Apache-2.0 */
/* The core device API's ops, part 2: the row-wise kernels of a transformer (rmsnorm, rotary_2d,
 * attention, silu_mul, attention_rotary). Same pattern as ops.c: the preconditions of vg_ops.h
 * once, then what the device offers and capture state, then one call into the plugin. */
#include "op_check.h"

vg_status vg_op_rmsnorm(vg_stream *s, vg_dtype dtype, const void *x, const void *w, void *out,
                        int64_t rows, int64_t cols, float eps)
{
    REQUIRE_STREAM("rmsnorm", s);
    REQUIRE_DTYPE("rmsnorm", "dtype", dtype, VG_DTYPES_FLOAT, DTYPES_FLOAT_TEXT);
    REQUIRE_RANGE("rmsnorm", "rows", rows, 0, OP_INT_MAX);
    REQUIRE_RANGE("rmsnorm", "cols", cols, 1, OP_INT_MAX);
    REQUIRE(eps >= 0.0f, "rmsnorm: eps %g < 0", (double)eps);
    REQUIRE_PTR("rmsnorm", "x", x, rows);
    REQUIRE_PTR("rmsnorm", "w", w, rows);
    REQUIRE_PTR("rmsnorm", "out", out, rows);
    unsigned es = op_dtype_size(dtype);
    REQUIRE_ALIGNED("rmsnorm", "x", x, es);
    REQUIRE_ALIGNED("rmsnorm", "w", w, es);
    REQUIRE_ALIGNED("rmsnorm", "out", out, es);
    OP_GATE(s, VG_OP_RMSNORM, VG_DTYPE_BIT(dtype));
    if (!rows) return VG_OK;
    return OP_CALL(s, rmsnorm, dtype, x, w, out, rows, cols, eps);
}

/* The preconditions rotary_2d and rotary share; head_dim must be a positive multiple of
 * `multiple` (`multiple_text` says so in the message). */
vg_status vg_op_check_rotary(const char *op, const vg_stream *s, vg_dtype dtype, const void *x,
                             int64_t ld, int64_t rows, int heads, int head_dim,
                             const int32_t *pos, float theta, int multiple,
                             const char *multiple_text)
{
#define FAIL_IF(cond, ...) \
    do { if (VG_UNLIKELY(cond)) return vg_error_set(VG_ERR_INVALID_ARG, __VA_ARGS__); } while (0)
    FAIL_IF(!s, "%s: stream is NULL", op);
    FAIL_IF(!(vg_dtype_bit(dtype) & VG_DTYPES_FLOAT), "%s: dtype %s is not allowed (" DTYPES_FLOAT_TEXT ")",
            op, vg_op_dtype_text(dtype));
    FAIL_IF(rows < 0 || rows > OP_INT_MAX, "%s: rows %lld is not in [%lld, %lld]", op,
            (long long)rows, 0LL, (long long)OP_INT_MAX);
    FAIL_IF(heads < 1, "%s: heads %d < 1", op, heads);
    FAIL_IF(head_dim < multiple || head_dim % multiple, "%s: head_dim %d is not a positive %s", op,
            head_dim, multiple_text);
    FAIL_IF(ld < (int64_t)heads * head_dim, "%s: ld %lld < heads*head_dim %lld", op, (long long)ld,
            (long long)heads * head_dim);
    FAIL_IF(!(theta > 0.0f), "%s: theta %g is not > 0", op, (double)theta);
    FAIL_IF(!x && rows, "%s: x is NULL", op);
    FAIL_IF(!pos && rows, "%s: pos is NULL", op);
    FAIL_IF((uintptr_t)x & (op_dtype_size(dtype) - 1u), "%s: x %p is not aligned to its %u-byte elements",
            op, x, op_dtype_size(dtype));
    FAIL_IF((uintptr_t)pos & 3u, "%s: pos %p is not aligned to its 4-byte elements", op,
            (const void *)pos);
#undef FAIL_IF
    return VG_OK;
}

vg_status vg_op_rotary_2d(vg_stream *s, vg_dtype dtype, void *x, int64_t ld, int64_t rows,
                          int heads, int head_dim, const int32_t *pos, float theta)
{
    vg_status st = vg_op_check_rotary("rotary_2d", s, dtype, x, ld, rows, heads, head_dim, pos,
                                      theta, 4, "multiple of 4");
    if (st != VG_OK) return st;
    OP_GATE(s, VG_OP_ROTARY_2D, VG_DTYPE_BIT(dtype));
    if (!rows) return VG_OK;
    return OP_CALL(s, rotary_2d, dtype, x, ld, rows, heads, head_dim, pos, theta);
}

/* The preconditions attention and attention_rotary share (rotary: pos != NULL). */
static vg_status attention_check(const char *op, const vg_stream *s, vg_dtype dtype,
                                 const void *qkv, int64_t ld_qkv, const void *out, int64_t ld_out,
                                 int64_t rows, int heads, int head_dim, const int32_t *cu,
                                 int nseg, const int32_t *pos, float theta, int rotary)
{
    REQUIRE(s, "%s: stream is NULL", op);
    REQUIRE(vg_dtype_bit(dtype) & VG_DTYPES_FLOAT, "%s: dtype %s is not allowed (%s)", op,
                vg_op_dtype_text(dtype), DTYPES_FLOAT_TEXT);
    REQUIRE(rows >= 0 && rows <= OP_INT_MAX, "%s: rows %lld is not in [0, %lld]", op,
                (long long)rows, OP_INT_MAX);
    REQUIRE(heads >= 1, "%s: heads %d < 1", op, heads);
    REQUIRE(head_dim >= 1 && head_dim <= VG_ATTENTION_MAX_HEAD_DIM,
                "%s: head_dim %d is not in [1, %d]", op, head_dim, VG_ATTENTION_MAX_HEAD_DIM);
    REQUIRE(nseg >= 1, "%s: num_segments %d < 1", op, nseg);
    int64_t hidden = (int64_t)heads * head_dim;
    REQUIRE(ld_qkv >= 3 * hidden, "%s: ld_qkv %lld < 3*heads*head_dim %lld", op,
                (long long)ld_qkv, (long long)(3 * hidden));
    REQUIRE(ld_out >= hidden, "%s: ld_out %lld < heads*head_dim %lld", op,
                (long long)ld_out, (long long)hidden);
    REQUIRE((qkv && out && cu) || !rows, "%s: %s is NULL", op,
                !qkv ? "qkv" : !out ? "out" : "cu_seqlens");
    if (rotary) {
        REQUIRE(head_dim % 4 == 0, "%s: head_dim %d is not a multiple of 4", op, head_dim);
        REQUIRE(theta > 0.0f, "%s: theta %g is not > 0", op, (double)theta);
        REQUIRE(pos || !rows, "%s: pos is NULL", op);
    }
    uintptr_t es = op_dtype_size(dtype);
    REQUIRE(!((uintptr_t)qkv & (es - 1)) && !((uintptr_t)out & (es - 1)),
                "%s: %s %p is not aligned to its %u-byte elements", op,
                ((uintptr_t)qkv & (es - 1)) ? "qkv" : "out",
                ((uintptr_t)qkv & (es - 1)) ? qkv : out, (unsigned)es);
    REQUIRE(!(((uintptr_t)cu | (uintptr_t)pos) & 3u),
                "%s: %s %p is not aligned to its 4-byte elements", op,
                ((uintptr_t)cu & 3u) ? "cu_seqlens" : "pos",
                ((uintptr_t)cu & 3u) ? (const void *)cu : (const void *)pos);
    return VG_OK;
}

vg_status vg_op_attention(vg_stream *s, vg_dtype dtype, const void *qkv, int64_t ld_qkv,
                          void *out, int64_t ld_out, int64_t rows, int heads, int head_dim,
                          const int32_t *cu_seqlens, int num_segments, float scale)
{
    vg_status st = attention_check("attention", s, dtype, qkv, ld_qkv, out, ld_out, rows, heads,
                                   head_dim, cu_seqlens, num_segments, NULL, 0.0f, 0);
    if (VG_UNLIKELY(st != VG_OK)) return st;
    OP_GATE(s, VG_OP_ATTENTION, VG_DTYPE_BIT(dtype));
    if (!rows) return VG_OK;
    return OP_CALL(s, attention, dtype, qkv, ld_qkv, out, ld_out, rows, heads, head_dim,
                   cu_seqlens, num_segments, scale);
}

vg_status vg_op_attention_rotary(vg_stream *s, vg_dtype dtype, const void *qkv, int64_t ld_qkv,
                                 void *out, int64_t ld_out, int64_t rows, int heads, int head_dim,
                                 const int32_t *cu_seqlens, int num_segments, float scale,
                                 const int32_t *pos, float theta)
{
    vg_status st = attention_check("attention_rotary", s, dtype, qkv, ld_qkv, out, ld_out, rows,
                                   heads, head_dim, cu_seqlens, num_segments, pos, theta, 1);
    if (VG_UNLIKELY(st != VG_OK)) return st;
    OP_GATE(s, VG_OP_ATTENTION_ROTARY, VG_DTYPE_BIT(dtype));
    if (!rows) return VG_OK;
    return OP_CALL(s, attention_rotary, dtype, qkv, ld_qkv, out, ld_out, rows, heads, head_dim,
                   cu_seqlens, num_segments, scale, pos, theta);
}

vg_status vg_op_silu_mul(vg_stream *s, vg_dtype dtype, const void *in, int64_t ld_in, void *out,
                         int64_t ld_out, int64_t rows, int64_t cols)
{
    REQUIRE_STREAM("silu_mul", s);
    REQUIRE_DTYPE("silu_mul", "dtype", dtype, VG_DTYPES_FLOAT, DTYPES_FLOAT_TEXT);
    REQUIRE_RANGE("silu_mul", "rows", rows, 0, OP_INT_MAX);
    REQUIRE_RANGE("silu_mul", "cols", cols, 1, OP_INT_MAX);
    REQUIRE_GE("silu_mul", "ld_in", ld_in, "2*cols", 2 * cols);
    REQUIRE_GE("silu_mul", "ld_out", ld_out, "cols", cols);
    REQUIRE_PTR("silu_mul", "in", in, rows);
    REQUIRE_PTR("silu_mul", "out", out, rows);
    unsigned es = op_dtype_size(dtype);
    REQUIRE_ALIGNED("silu_mul", "in", in, es);
    REQUIRE_ALIGNED("silu_mul", "out", out, es);
    OP_GATE(s, VG_OP_SILU_MUL, VG_DTYPE_BIT(dtype));
    if (!rows) return VG_OK;
    return OP_CALL(s, silu_mul, dtype, in, ld_in, out, ld_out, rows, cols);
}
