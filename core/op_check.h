/* SPDX-License-Identifier: Apache-2.0 */
/* The checks every vg_op_* applies (ops.c, ops_nn.c): the catalogue's preconditions, then what
 * the device offers, then capture state, then one call into the plugin. Each check is a compare
 * or two; a message is formatted only when a check fails. */
#ifndef VG_OP_CHECK_H
#define VG_OP_CHECK_H

#include <stdint.h>
#include <string.h>

#include "vg_internal.h"

#define OP_INT_MAX 0x7fffffffLL /* rows and columns the kernels index with int */

/* A caller's versioned arguments (struct_size their first member, checked against the oldest
 * size served) as this core's whole struct: the members the caller's header did not have zeroed
 * and struct_size the whole size, so the plugin may read every member of its header. */
static inline void op_args_whole(void *whole, size_t whole_size, const void *args)
{
    const uint32_t given = *(const uint32_t *)args;
    memset(whole, 0, whole_size);
    memcpy(whole, args, given < whole_size ? given : whole_size);
    *(uint32_t *)whole = (uint32_t)whole_size;
}
#define DTYPES_ANY ((1u << VG_DTYPE_COUNT_) - 1u)
#define DTYPES_ANY_TEXT "F32, F16, BF16, I32, I64 or U8"
#define DTYPES_FLOAT_TEXT "F32, BF16 or F16"

/* A precondition of the catalogue: VG_ERR_INVALID_ARG with a message naming the op and value. */

#define REQUIRE_STREAM(op, s) REQUIRE(s, op ": stream is NULL")
/* A pointer that must be set when the op has work (n > 0). */
#define REQUIRE_PTR(op, name, p, n) REQUIRE((p) || !(n), op ": " name " is NULL")
#define REQUIRE_ALIGNED(op, name, p, esz)                                                    \
    REQUIRE(!((uintptr_t)(p) & ((uintptr_t)(esz) - 1u)),                                     \
            op ": " name " %p is not aligned to its %u-byte elements", (const void *)(p),    \
            (unsigned)(esz))
#define REQUIRE_DTYPE(op, name, t, mask, allowed)                                            \
    REQUIRE(vg_dtype_bit(t) & (mask), op ": " name " %s is not allowed (" allowed ")",       \
            vg_op_dtype_text(t))
/* lo <= v <= hi, for int64 values. */
#define REQUIRE_RANGE(op, name, v, lo, hi)                                                   \
    REQUIRE((int64_t)(v) >= (lo) && (int64_t)(v) <= (hi),                                    \
            op ": " name " %lld is not in [%lld, %lld]", (long long)(v), (long long)(lo),    \
            (long long)(hi))
/* a >= b, as in "gemm: lda 10 < k 16". */
#define REQUIRE_GE(op, a_name, a, b_name, b)                                                 \
    REQUIRE((int64_t)(a) >= (int64_t)(b), op ": " a_name " %lld < " b_name " %lld",          \
            (long long)(a), (long long)(b))

/* What the device offers for `op` and capture state; `dtype_bits` is the VG_DTYPE_BIT set the
 * call uses. On failure vg_op_refuse says which check failed. */
vg_status vg_op_refuse(const vg_stream *s, vg_op_id op, uint32_t dtype_bits);
static inline vg_status vg_op_gate(const vg_stream *s, vg_op_id op, uint32_t dtype_bits)
{
    const vg_op_entry *e = &s->rt->op[op];
    uint32_t need = VG_OP_SUPPORTED | (s->capturing ? VG_OP_CAPTURABLE : 0u);
    if (VG_UNLIKELY((e->flags & need) != need || (dtype_bits & ~e->dtypes)))
        return vg_op_refuse(s, op, dtype_bits);
    return VG_OK;
}
#define OP_GATE(s, op, dtype_bits)                                                           \
    do {                                                                                     \
        vg_status gate_st_ = vg_op_gate((s), (op), (dtype_bits));                            \
        if (VG_UNLIKELY(gate_st_ != VG_OK)) return gate_st_;                                 \
    } while (0)

/* The plugin's member; non-NULL once the gate passed (VG_OP_SUPPORTED implies it). */
#define OP_CALL(s, member, ...) ((s)->rt->ops.member((s)->rt->dev, (s)->bk, __VA_ARGS__))

static inline unsigned op_dtype_size(vg_dtype t)
{
    static const unsigned char sizes[VG_DTYPE_COUNT_] = {4, 2, 2, 4, 8, 1};
    return (unsigned)t < VG_DTYPE_COUNT_ ? sizes[t] : 1u;
}

/* "BF16", or "dtype 17" for a value that is not one (a static buffer: failure paths only). */
const char *vg_op_dtype_text(vg_dtype t);

/* ops_nn.c: the preconditions of rotary_2d and rotary (ops_lm.c), which differ only in the
 * multiple head_dim must be. */
vg_status vg_op_check_rotary(const char *op, const vg_stream *s, vg_dtype dtype, const void *x,
                             int64_t ld, int64_t rows, int heads, int head_dim,
                             const int32_t *pos, float theta, int multiple,
                             const char *multiple_text);

#endif
