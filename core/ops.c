/* SPDX-License-Identifier: Apache-2.0 */
/* The core device API's ops, part 1: fill, axpby, gemm, gather_rows, convert, and the refusal
 * messages every op shares. Each op checks the preconditions of vg_ops.h once (op_check.h),
 * then what the device offers and capture state, then calls the plugin. */
#include <stdio.h>

#include <stddef.h>
#include <string.h>

#include "op_check.h"

const char *vg_op_dtype_text(vg_dtype t)
{
    static _Thread_local char buf[32];
    const char *name = vg_dtype_name(t);
    if (name) return name;
    snprintf(buf, sizeof buf, "dtype %d", (int)t);
    return buf;
}

static void dtype_list(uint32_t bits, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (int t = 0; t < VG_DTYPE_COUNT_; t++) {
        if (!(bits & VG_DTYPE_BIT(t))) continue;
        int n = snprintf(out + len, cap - len, "%s%s", len ? ", " : "", vg_dtype_name((vg_dtype)t));
        if (n > 0 && len + (size_t)n < cap) len += (size_t)n;
    }
    if (!len) snprintf(out, cap, "none");
}

vg_status vg_op_refuse(const vg_stream *s, vg_op_id op, uint32_t dtype_bits)
{
    const vg_runtime *rt = s->rt;
    const vg_op_entry *e = &rt->op[op];
    const char *name = vg_op_name(op);
    if (!(e->flags & VG_OP_SUPPORTED))
        return vg_error_set(VG_ERR_UNSUPPORTED, "op '%s' is not implemented by backend '%s'",
                            name, rt->iface.name);
    if (dtype_bits & ~e->dtypes) {
        uint32_t bad = dtype_bits & ~e->dtypes;
        int t = 0;
        while (!(bad & VG_DTYPE_BIT(t))) t++;
        char accepted[96];
        dtype_list(e->dtypes, accepted, sizeof accepted);
        return vg_error_set(VG_ERR_UNSUPPORTED, "op '%s': dtype %s is not supported by backend "
                                                "'%s' (it accepts %s)", name,
                            vg_dtype_name((vg_dtype)t), rt->iface.name, accepted);
    }
    return vg_error_set(VG_ERR_STATE, "op '%s' cannot be captured on backend '%s' (device %s): "
                                      "run it outside capture", name, rt->iface.name,
                        rt->info.name);
}

vg_status vg_op_fill(vg_stream *s, void *dst, vg_dtype dtype, size_t count, double value)
{
    REQUIRE_STREAM("fill", s);
    REQUIRE_DTYPE("fill", "dtype", dtype, DTYPES_ANY, DTYPES_ANY_TEXT);
    REQUIRE_PTR("fill", "dst", dst, count);
    REQUIRE_ALIGNED("fill", "dst", dst, op_dtype_size(dtype));
    OP_GATE(s, VG_OP_FILL, VG_DTYPE_BIT(dtype));
    if (!count) return VG_OK;
    return OP_CALL(s, fill, dst, dtype, count, value);
}

vg_status vg_op_axpby(vg_stream *s, size_t n, float alpha, const float *x, float beta, float *y)
{
    REQUIRE_STREAM("axpby", s);
    REQUIRE_PTR("axpby", "x", x, n);
    REQUIRE_PTR("axpby", "y", y, n);
    REQUIRE_ALIGNED("axpby", "x", x, 4);
    REQUIRE_ALIGNED("axpby", "y", y, 4);
    OP_GATE(s, VG_OP_AXPBY, VG_DTYPE_BIT(VG_DTYPE_F32));
    if (!n) return VG_OK;
    return OP_CALL(s, axpby, n, alpha, x, beta, y);
}

vg_status vg_op_gemm(vg_stream *s, const vg_gemm_args *args)
{
    REQUIRE_STREAM("gemm", s);
    REQUIRE(args, "gemm: args is NULL");
    /* a caller built against op table version 5's struct (up to alpha) is served: the plugin
     * always gets a full struct, the fields its caller did not know zeroed */
    const uint32_t v5_size = (uint32_t)(offsetof(vg_gemm_args, alpha) + sizeof(float));
    REQUIRE(args->struct_size >= v5_size,
            "gemm: args.struct_size %u < %u (set it to sizeof(vg_gemm_args))", args->struct_size,
            v5_size);
    vg_gemm_args full;
    op_args_whole(&full, sizeof full, args);
    full.unused_v9_tail = 0; /* an older caller's padding: never passed on */
    const vg_gemm_args *g = &full;
    REQUIRE_DTYPE("gemm", "dtype_ab", g->dtype_ab, VG_DTYPES_FLOAT, DTYPES_FLOAT_TEXT);
    REQUIRE_DTYPE("gemm", "dtype_c", g->dtype_c, VG_DTYPES_FLOAT, DTYPES_FLOAT_TEXT);
    REQUIRE(g->a && g->b && g->c, "gemm: %s is NULL", !g->a ? "a" : !g->b ? "b" : "c");
    REQUIRE((unsigned)g->act <= VG_ACT_QUICK_GELU, "gemm: act %d is not a vg_activation",
            (int)g->act);
    REQUIRE((unsigned)g->gate <= VG_GEMM_GATE_SILU, "gemm: gate %d is not a vg_gemm_gate",
            (int)g->gate);
    unsigned eab = op_dtype_size(g->dtype_ab), ec = op_dtype_size(g->dtype_c);
    REQUIRE_ALIGNED("gemm", "a", g->a, eab);
    REQUIRE_ALIGNED("gemm", "b", g->b, eab);
    REQUIRE_ALIGNED("gemm", "bias", g->bias, eab);
    REQUIRE_ALIGNED("gemm", "c", g->c, ec);
    REQUIRE_ALIGNED("gemm", "residual", g->residual, ec);
    REQUIRE_RANGE("gemm", "m", g->m, 1, OP_INT_MAX);
    REQUIRE_RANGE("gemm", "n", g->n, 1, OP_INT_MAX);
    REQUIRE_RANGE("gemm", "k", g->k, 1, OP_INT_MAX);
    REQUIRE_GE("gemm", "lda", g->lda, "k", g->k);
    REQUIRE_GE("gemm", "ldb", g->ldb, "k", g->k);
    REQUIRE_GE("gemm", "ldc", g->ldc, "n", g->n);
    if (g->residual) REQUIRE_GE("gemm", "ldr", g->ldr, "n", g->n);
    REQUIRE(g->residual != g->c || g->act == VG_ACT_NONE,
            "gemm: residual aliases c with activation %d (the residual is added after the "
            "activation: it may alias c only with VG_ACT_NONE)", (int)g->act);
    uint32_t dtypes = VG_DTYPE_BIT(g->dtype_ab) | VG_DTYPE_BIT(g->dtype_c);
    if (g->gate != VG_GEMM_GATE_NONE) {
        REQUIRE(g->n % 2 == 0, "gemm: gate needs an even n (gate and up halves), n is %lld",
                (long long)g->n);
        REQUIRE(g->act == VG_ACT_NONE && !g->residual,
                "gemm: gate takes no activation (act %d) and no residual", (int)g->act);
        OP_GATE(s, VG_OP_GEMM_SILU_GATE, dtypes);
    }
    REQUIRE(g->norm_unit == 0 || g->norm_unit == 1, "gemm: norm_unit %d is neither 0 nor 1",
            (int)g->norm_unit);
    REQUIRE(g->b_static == 0 || g->b_static == 1, "gemm: b_static %d is neither 0 nor 1",
            (int)g->b_static);
    REQUIRE(!(g->norm_w && g->norm_unit),
            "gemm: norm_w and norm_unit exclude each other (a norm with a weight, or without)");
    if (g->norm_w || g->norm_unit) {
        const char *what = g->norm_w ? "norm_w" : "norm_unit";
        REQUIRE(g->norm_out, "gemm: %s needs norm_out (scratch for the normalised rows)", what);
        REQUIRE(g->lda == g->k, "gemm: %s needs a contiguous A (lda %lld, k %lld)", what,
                (long long)g->lda, (long long)g->k);
        REQUIRE(g->norm_eps >= 0.0f, "gemm: norm_eps %g < 0", (double)g->norm_eps);
        REQUIRE_ALIGNED("gemm", "norm_w", g->norm_w, eab);
        REQUIRE_ALIGNED("gemm", "norm_out", g->norm_out, eab);
        OP_GATE(s, g->norm_w ? VG_OP_GEMM_RMSNORM_A : VG_OP_GEMM_RMSNORM_A_UNIT, dtypes);
    }
    OP_GATE(s, VG_OP_GEMM, dtypes);
    return OP_CALL(s, gemm, g);
}

vg_status vg_op_gather_rows(vg_stream *s, vg_dtype dtype, void *dst, const void *src,
                            const int32_t *idx, int64_t rows, int64_t cols)
{
    REQUIRE_STREAM("gather_rows", s);
    REQUIRE_DTYPE("gather_rows", "dtype", dtype, DTYPES_ANY, DTYPES_ANY_TEXT);
    REQUIRE(rows >= 0, "gather_rows: rows %lld < 0", (long long)rows);
    REQUIRE(cols >= 0, "gather_rows: cols %lld < 0", (long long)cols);
    REQUIRE_PTR("gather_rows", "dst", dst, rows);
    REQUIRE_PTR("gather_rows", "src", src, rows);
    REQUIRE_PTR("gather_rows", "idx", idx, rows);
    REQUIRE(dst != src || !rows, "gather_rows: dst aliases src (%p)", dst);
    unsigned es = op_dtype_size(dtype);
    REQUIRE_ALIGNED("gather_rows", "dst", dst, es);
    REQUIRE_ALIGNED("gather_rows", "src", src, es);
    REQUIRE_ALIGNED("gather_rows", "idx", idx, 4);
    OP_GATE(s, VG_OP_GATHER_ROWS, VG_DTYPE_BIT(dtype));
    if (!rows || !cols) return VG_OK;
    return OP_CALL(s, gather_rows, dtype, dst, src, idx, rows, cols);
}

vg_status vg_op_convert(vg_stream *s, vg_dtype src_dtype, const void *src, vg_dtype dst_dtype,
                        void *dst, size_t count)
{
    REQUIRE_STREAM("convert", s);
    REQUIRE_DTYPE("convert", "src_dtype", src_dtype, VG_DTYPES_FLOAT, DTYPES_FLOAT_TEXT);
    REQUIRE_DTYPE("convert", "dst_dtype", dst_dtype, VG_DTYPES_FLOAT, DTYPES_FLOAT_TEXT);
    REQUIRE_PTR("convert", "src", src, count);
    REQUIRE_PTR("convert", "dst", dst, count);
    unsigned ss = op_dtype_size(src_dtype), ds = op_dtype_size(dst_dtype);
    REQUIRE(src != dst || ss == ds || !count,
            "convert: in place (src == dst) from %s to %s: only between dtypes of equal size",
            vg_dtype_name(src_dtype), vg_dtype_name(dst_dtype));
    REQUIRE_ALIGNED("convert", "src", src, ss);
    REQUIRE_ALIGNED("convert", "dst", dst, ds);
    OP_GATE(s, VG_OP_CONVERT, VG_DTYPE_BIT(src_dtype) | VG_DTYPE_BIT(dst_dtype));
    if (!count) return VG_OK;
    return OP_CALL(s, convert, src_dtype, src, dst_dtype, dst, count);
}
