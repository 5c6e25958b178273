/* SPDX-License-Identifier: Apache-2.0 */
/* The core device API's ops, part 4: op table version 5 (layernorm, gather_weighted), the ops a
 * vision tower with LayerNorm and a learned position table resampled per image needs. Same
 * pattern as ops.c and ops_nn.c: the preconditions of vg_ops.h once, then what the device offers
 * and capture state, then one call into the plugin. */
#include "op_check.h"

vg_status vg_op_layernorm(vg_stream *s, vg_dtype dtype, const void *x, const void *w,
                          const void *b, void *out, int64_t rows, int64_t cols, float eps)
{
    REQUIRE_STREAM("layernorm", s);
    REQUIRE_DTYPE("layernorm", "dtype", dtype, VG_DTYPES_FLOAT, DTYPES_FLOAT_TEXT);
    REQUIRE_RANGE("layernorm", "rows", rows, 0, OP_INT_MAX);
    REQUIRE_RANGE("layernorm", "cols", cols, 1, OP_INT_MAX);
    REQUIRE(eps >= 0.0f, "layernorm: eps %g < 0", (double)eps);
    REQUIRE_PTR("layernorm", "x", x, rows);
    REQUIRE_PTR("layernorm", "w", w, rows);
    REQUIRE_PTR("layernorm", "out", out, rows);
    unsigned es = op_dtype_size(dtype);
    REQUIRE_ALIGNED("layernorm", "x", x, es);
    REQUIRE_ALIGNED("layernorm", "w", w, es);
    REQUIRE_ALIGNED("layernorm", "b", b, es); /* NULL passes: no bias */
    REQUIRE_ALIGNED("layernorm", "out", out, es);
    OP_GATE(s, VG_OP_LAYERNORM, VG_DTYPE_BIT(dtype));
    if (!rows) return VG_OK;
    return OP_CALL(s, layernorm, dtype, x, w, b, out, rows, cols, eps);
}

vg_status vg_op_gather_weighted(vg_stream *s, vg_dtype dtype, void *dst, const void *src,
                                int64_t src_rows, const int32_t *idx, const float *w,
                                int64_t rows, int64_t cols, int taps)
{
    REQUIRE_STREAM("gather_weighted", s);
    REQUIRE_DTYPE("gather_weighted", "dtype", dtype, VG_DTYPES_FLOAT, DTYPES_FLOAT_TEXT);
    REQUIRE_RANGE("gather_weighted", "rows", rows, 0, OP_INT_MAX);
    REQUIRE_RANGE("gather_weighted", "cols", cols, 1, OP_INT_MAX);
    REQUIRE_RANGE("gather_weighted", "src_rows", src_rows, 1, OP_INT_MAX);
    REQUIRE_RANGE("gather_weighted", "taps", taps, 1, VG_GATHER_MAX_TAPS);
    REQUIRE_PTR("gather_weighted", "dst", dst, rows);
    REQUIRE_PTR("gather_weighted", "src", src, rows);
    REQUIRE_PTR("gather_weighted", "idx", idx, rows);
    REQUIRE_PTR("gather_weighted", "w", w, rows);
    REQUIRE(dst != src || !rows, "gather_weighted: dst aliases src (%p)", dst);
    unsigned es = op_dtype_size(dtype);
    REQUIRE_ALIGNED("gather_weighted", "dst", dst, es);
    REQUIRE_ALIGNED("gather_weighted", "src", src, es);
    REQUIRE_ALIGNED("gather_weighted", "idx", idx, 4);
    REQUIRE_ALIGNED("gather_weighted", "w", w, 4);
    OP_GATE(s, VG_OP_GATHER_WEIGHTED, VG_DTYPE_BIT(dtype));
    if (!rows) return VG_OK;
    return OP_CALL(s, gather_weighted, dtype, dst, src, src_rows, idx, w, rows, cols, taps);
}
