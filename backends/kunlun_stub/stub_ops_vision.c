/* SPDX-License-Identifier: Apache-2.0 */
/* kunlun_stub: CPU versions of op table version 5 (layernorm, gather_weighted). Plain loops
 * (LayerNorm's statistics in double, weighted sums in fp32), submitted through stub_submit so they
 * run eagerly or are recorded into a graph. The core has validated every call against the catalogue (vg_ops.h); indices and
 * weights live in device memory and are read when the op runs: an index outside the table
 * contributes nothing, as the catalogue says. */
#include <math.h>

#include "stub_internal.h"
#include "stub_kernels.h"

/* ---- layernorm --------------------------------------------------------------------------------- */

typedef struct layernorm_args {
    vg_dtype dtype;
    const void *x, *w, *b;
    void *out;
    int64_t rows, cols;
    float eps;
} layernorm_args;

static void run_layernorm(vg_bk_stream *s, const void *p)
{
    (void)s;
    const layernorm_args *a = p;
    for (int64_t r = 0; r < a->rows; r++) {
        size_t base = (size_t)(r * a->cols);
        /* sequential sums: in double, so that a long row loses nothing (a GPU's tree of fp32
         * partial sums does as well) */
        double sum = 0.0;
        for (int64_t c = 0; c < a->cols; c++) sum += load_f(a->x, a->dtype, base + (size_t)c);
        float mean = (float)(sum / (double)a->cols);
        double ss = 0.0;
        for (int64_t c = 0; c < a->cols; c++) {
            float d = load_f(a->x, a->dtype, base + (size_t)c) - mean;
            ss += (double)d * d;
        }
        float inv = (float)(1.0 / sqrt(ss / (double)a->cols + a->eps));
        /* out may be x: each element is read before it is written */
        for (int64_t c = 0; c < a->cols; c++) {
            float v = (load_f(a->x, a->dtype, base + (size_t)c) - mean) * inv;
            v *= load_f(a->w, a->dtype, (size_t)c);
            if (a->b) v += load_f(a->b, a->dtype, (size_t)c);
            store_f(a->out, a->dtype, base + (size_t)c, v);
        }
    }
}

vg_status stub_op_layernorm(vg_bk_device *dev, vg_bk_stream *s, vg_dtype dtype, const void *x,
                            const void *w, const void *b, void *out, int64_t rows, int64_t cols,
                            float eps)
{
    (void)dev;
    layernorm_args a = {dtype, x, w, b, out, rows, cols, eps};
    return stub_submit(s, VG_OP_LAYERNORM, "layernorm", run_layernorm, &a, sizeof a);
}

/* ---- gather_weighted --------------------------------------------------------------------------- */

typedef struct gather_weighted_args {
    vg_dtype dtype;
    void *dst;
    const void *src;
    int64_t src_rows;
    const int32_t *idx;
    const float *w;
    int64_t rows, cols;
    int taps;
} gather_weighted_args;

static void run_gather_weighted(vg_bk_stream *s, const void *p)
{
    (void)s;
    const gather_weighted_args *a = p;
    for (int64_t r = 0; r < a->rows; r++) {
        const int32_t *idx = a->idx + r * a->taps;
        const float *w = a->w + r * a->taps;
        size_t out = (size_t)(r * a->cols);
        for (int64_t c = 0; c < a->cols; c++) {
            float acc = 0.0f;
            for (int t = 0; t < a->taps; t++)
                if (idx[t] >= 0 && idx[t] < a->src_rows)
                    acc += w[t] * load_f(a->src, a->dtype, (size_t)idx[t] * (size_t)a->cols + (size_t)c);
            store_f(a->dst, a->dtype, out + (size_t)c, acc);
        }
    }
}

vg_status stub_op_gather_weighted(vg_bk_device *dev, vg_bk_stream *s, vg_dtype dtype, void *dst,
                                  const void *src, int64_t src_rows, const int32_t *idx,
                                  const float *w, int64_t rows, int64_t cols, int taps)
{
    (void)dev;
    gather_weighted_args a = {dtype, dst, src, src_rows, idx, w, rows, cols, taps};
    return stub_submit(s, VG_OP_GATHER_WEIGHTED, "gather_weighted", run_gather_weighted, &a,
                       sizeof a);
}
