/* SPDX-License-Identifier: Apache-2.0 */
/* kunlun_stub: CPU versions of the vision-transformer ops (op table versions 2 and 3). Plain loops
 * with fp32 accumulation: the reference every GPU kernel is tested against. As in stub_ops.c, the
 * core has validated every call against the catalogue (vg_ops.h); the members only submit. */
#include <math.h>
#include <string.h>

#include "stub_internal.h"
#include "stub_kernels.h"

/* ---- rmsnorm ------------------------------------------------------------------------------- */

typedef struct rmsnorm_args {
    vg_dtype dtype;
    const void *x, *w;
    void *out;
    int64_t rows, cols;
    float eps;
} rmsnorm_args;

static void run_rmsnorm(vg_bk_stream *s, const void *p)
{
    (void)s;
    const rmsnorm_args *a = p;
    for (int64_t r = 0; r < a->rows; r++) {
        size_t base = (size_t)(r * a->cols);
        float ss = 0.0f;
        for (int64_t c = 0; c < a->cols; c++) {
            float v = load_f(a->x, a->dtype, base + (size_t)c);
            ss += v * v;
        }
        float inv = 1.0f / sqrtf(ss / (float)a->cols + a->eps);
        for (int64_t c = 0; c < a->cols; c++) {
            float v = load_f(a->x, a->dtype, base + (size_t)c) * inv;
            store_f(a->out, a->dtype, base + (size_t)c, a->w ? load_f(a->w, a->dtype, (size_t)c) * v : v);
        }
    }
}

/* w NULL (gemm's norm_unit, never the op: the core requires w): a weight of ones */
vg_status stub_op_rmsnorm(vg_bk_device *dev, vg_bk_stream *s, vg_dtype dtype, const void *x,
                          const void *w, void *out, int64_t rows, int64_t cols, float eps)
{
    (void)dev;
    rmsnorm_args a = {dtype, x, w, out, rows, cols, eps};
    return stub_submit(s, VG_OP_RMSNORM, "rmsnorm", run_rmsnorm, &a, sizeof a);
}

/* ---- rotary_2d ---------------------------------------------------------------------------- */

typedef struct rotary_args {
    vg_dtype dtype;
    void *x;
    int64_t ld, rows;
    int heads, head_dim;
    const int32_t *pos;
    float theta;
} rotary_args;

/* Cosine and sine of the rotary angle of element i < half of a head of row r. */
static void rotary_cs(const int32_t *pos, int64_t r, int i, int half, float theta, float *c, float *sn)
{
    int quarter = half / 2, j = i < quarter ? i : i - quarter;
    float inv_freq = 1.0f / powf(theta, (float)(2 * j) / (float)half);
    float angle = (float)pos[2 * r + (i < quarter ? 0 : 1)] * inv_freq;
    *c = (float)cos((double)angle);
    *sn = (float)sin((double)angle);
}

static void run_rotary(vg_bk_stream *s, const void *p)
{
    (void)s;
    const rotary_args *a = p;
    int half = a->head_dim / 2;
    for (int64_t r = 0; r < a->rows; r++) {
        for (int i = 0; i < half; i++) { /* the angle depends on the row and i, not the head */
            float c, sn;
            rotary_cs(a->pos, r, i, half, a->theta, &c, &sn);
            rotate_heads(a->x, a->dtype, (size_t)(r * a->ld), a->heads, a->head_dim, i, c, sn);
        }
    }
}

vg_status stub_op_rotary_2d(vg_bk_device *dev, vg_bk_stream *s, vg_dtype dtype, void *x, int64_t ld,
                            int64_t rows, int heads, int head_dim, const int32_t *pos, float theta)
{
    (void)dev;
    rotary_args a = {dtype, x, ld, rows, heads, head_dim, pos, theta};
    return stub_submit(s, VG_OP_ROTARY_2D, "rotary_2d", run_rotary, &a, sizeof a);
}

/* ---- attention ------------------------------------------------------------------------------- */

typedef struct attention_args {
    vg_dtype dtype;
    const void *qkv;
    int64_t ld_qkv;
    void *out;
    int64_t ld_out, rows;
    int heads, head_dim;
    const int32_t *cu;
    int num_segments;
    float scale;
    const int32_t *pos; /* attention_rotary: rotate q and k first; NULL for attention */
    float theta;
} attention_args;

/* Scratch floats: scores of one row, one output row, and for attention_rotary the rotated q
 * and k of every row ([rows, 2·hidden]). */
static size_t attention_scratch(int64_t rows, int heads, int head_dim, int rotary)
{
    size_t n = (size_t)rows + (size_t)head_dim;
    return rotary ? n + (size_t)rows * 2 * (size_t)heads * (size_t)head_dim : n;
}

/* rot[r, :] = the q and k slices of row r of qkv, rotated as rotary_2d would, in fp32. */
static void rotate_qk(const attention_args *a, float *rot)
{
    int half = a->head_dim / 2;
    size_t width = 2 * (size_t)a->heads * (size_t)a->head_dim;
    for (int64_t r = 0; r < a->rows; r++)
        for (int i = 0; i < half; i++) { /* the angle depends on the row and i, not the head */
            float c, sn;
            rotary_cs(a->pos, r, i, half, a->theta, &c, &sn);
            for (int h = 0; h < 2 * a->heads; h++) {
                size_t src = (size_t)(r * a->ld_qkv) + (size_t)h * (size_t)a->head_dim;
                float *dst = rot + (size_t)r * width + (size_t)h * (size_t)a->head_dim;
                float x0 = load_f(a->qkv, a->dtype, src + (size_t)i);
                float x1 = load_f(a->qkv, a->dtype, src + (size_t)(i + half));
                dst[i] = x0 * c - x1 * sn;
                dst[i + half] = x1 * c + x0 * sn;
            }
        }
}

static void run_attention(vg_bk_stream *s, const void *p)
{
    const attention_args *a = p;
    size_t hidden = (size_t)a->heads * (size_t)a->head_dim;
    float *scores = stub_scratch(s, attention_scratch(a->rows, a->heads, a->head_dim, a->pos != NULL));
    if (!scores) return; /* reserved at enqueue; cannot happen */
    float *acc = scores + a->rows, *rot = a->pos ? acc + a->head_dim : NULL;
    if (rot) rotate_qk(a, rot);
    for (int seg = 0; seg < a->num_segments; seg++) {
        int64_t lo = a->cu[seg], hi = a->cu[seg + 1];
        if (lo < 0) lo = 0;
        if (hi > a->rows) hi = a->rows; /* malformed bounds are clamped, never followed */
        for (int h = 0; h < a->heads; h++) {
            size_t qo = (size_t)h * (size_t)a->head_dim, ko = hidden + qo, vo = 2 * hidden + qo;
            for (int64_t i = lo; i < hi; i++) {
                size_t qrow = (size_t)(i * a->ld_qkv);
                float mx = -INFINITY;
                for (int64_t j = lo; j < hi; j++) {
                    size_t krow = (size_t)(j * a->ld_qkv);
                    float dot = 0.0f;
                    if (rot) {
                        const float *q = rot + (size_t)i * 2 * hidden + qo, *k = rot + (size_t)j * 2 * hidden + ko;
                        for (int d = 0; d < a->head_dim; d++) dot += q[d] * k[d];
                    } else {
                        for (int d = 0; d < a->head_dim; d++)
                            dot += load_f(a->qkv, a->dtype, qrow + qo + (size_t)d) *
                                   load_f(a->qkv, a->dtype, krow + ko + (size_t)d);
                    }
                    scores[j - lo] = dot * a->scale;
                    if (scores[j - lo] > mx) mx = scores[j - lo];
                }
                float sum = 0.0f;
                for (int64_t j = lo; j < hi; j++) sum += scores[j - lo] = expf(scores[j - lo] - mx);
                memset(acc, 0, (size_t)a->head_dim * sizeof(float));
                for (int64_t j = lo; j < hi; j++) {
                    size_t vrow = (size_t)(j * a->ld_qkv);
                    float pj = scores[j - lo] / sum;
                    for (int d = 0; d < a->head_dim; d++)
                        acc[d] += pj * load_f(a->qkv, a->dtype, vrow + vo + (size_t)d);
                }
                for (int d = 0; d < a->head_dim; d++)
                    store_f(a->out, a->dtype, (size_t)(i * a->ld_out) + qo + (size_t)d, acc[d]);
            }
        }
    }
}

static vg_status submit_attention(vg_bk_stream *s, const attention_args *a, vg_op_id op,
                                  const char *name)
{
    /* Reserve the scratch now so the run cannot fail later (it may be inside a graph). */
    if (!stub_scratch(s, attention_scratch(a->rows, a->heads, a->head_dim, a->pos != NULL)))
        return STUB_ERR(VG_ERR_OUT_OF_MEMORY, "kunlun_stub: %s: no scratch", name);
    return stub_submit(s, op, name, run_attention, a, sizeof *a);
}

vg_status stub_op_attention(vg_bk_device *dev, vg_bk_stream *s, vg_dtype dtype, const void *qkv,
                            int64_t ld_qkv, void *out, int64_t ld_out, int64_t rows, int heads,
                            int head_dim, const int32_t *cu, int num_segments, float scale)
{
    attention_args a = {dtype, qkv, ld_qkv, out, ld_out, rows, heads, head_dim, cu, num_segments,
                        scale, NULL, 0.0f};
    (void)dev;
    return submit_attention(s, &a, VG_OP_ATTENTION, "attention");
}

vg_status stub_op_attention_rotary(vg_bk_device *dev, vg_bk_stream *s, vg_dtype dtype,
                                   const void *qkv, int64_t ld_qkv, void *out, int64_t ld_out,
                                   int64_t rows, int heads, int head_dim, const int32_t *cu,
                                   int num_segments, float scale, const int32_t *pos, float theta)
{
    attention_args a = {dtype, qkv, ld_qkv, out, ld_out, rows, heads, head_dim, cu, num_segments,
                        scale, pos, theta};
    (void)dev;
    return submit_attention(s, &a, VG_OP_ATTENTION_ROTARY, "attention_rotary");
}

/* ---- silu_mul -------------------------------------------------------------------------------- */

typedef struct silu_mul_args {
    vg_dtype dtype;
    const void *in;
    int64_t ld_in;
    void *out;
    int64_t ld_out, rows, cols;
} silu_mul_args;

static void run_silu_mul(vg_bk_stream *s, const void *p)
{
    (void)s;
    const silu_mul_args *a = p;
    for (int64_t r = 0; r < a->rows; r++)
        for (int64_t c = 0; c < a->cols; c++) {
            float g = load_f(a->in, a->dtype, (size_t)(r * a->ld_in + c));
            float u = load_f(a->in, a->dtype, (size_t)(r * a->ld_in + a->cols + c));
            store_f(a->out, a->dtype, (size_t)(r * a->ld_out + c), g / (1.0f + expf(-g)) * u);
        }
}

vg_status stub_op_silu_mul(vg_bk_device *dev, vg_bk_stream *s, vg_dtype dtype, const void *in,
                           int64_t ld_in, void *out, int64_t ld_out, int64_t rows, int64_t cols)
{
    (void)dev;
    silu_mul_args a = {dtype, in, ld_in, out, ld_out, rows, cols};
    return stub_submit(s, VG_OP_SILU_MUL, "silu_mul", run_silu_mul, &a, sizeof a);
}

/* ---- convert ----------------------------------------------------------------------------------- */

typedef struct convert_args {
    vg_dtype from, to;
    const void *src;
    void *dst;
    size_t count;
} convert_args;

static void run_convert(vg_bk_stream *s, const void *p)
{
    (void)s;
    const convert_args *a = p;
    for (size_t i = 0; i < a->count; i++) store_f(a->dst, a->to, i, load_f(a->src, a->from, i));
}

vg_status stub_op_convert(vg_bk_device *dev, vg_bk_stream *s, vg_dtype from, const void *src,
                          vg_dtype to, void *dst, size_t count)
{
    (void)dev;
    convert_args a = {from, to, src, dst, count};
    return stub_submit(s, VG_OP_CONVERT, "convert", run_convert, &a, sizeof a);
}
