/* SPDX-License-Identifier: Apache-2.0 */
/* Double-precision references of the op catalogue: see reference_ops.h. */
#include "reference_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vg/vg_half.h"

#define FLOATS (VG_DTYPE_BIT(VG_DTYPE_F32) | VG_DTYPE_BIT(VG_DTYPE_BF16) | VG_DTYPE_BIT(VG_DTYPE_F16))
#define ALL (FLOATS | VG_DTYPE_BIT(VG_DTYPE_I32) | VG_DTYPE_BIT(VG_DTYPE_I64) | VG_DTYPE_BIT(VG_DTYPE_U8))

uint32_t ref_catalogue_dtypes(vg_op_id op)
{
    switch (op) {
    case VG_OP_FILL: return ALL;
    case VG_OP_AXPBY: return VG_DTYPE_BIT(VG_DTYPE_F32);
    case VG_OP_GATHER_ROWS: return ALL;
    case VG_OP_GEMM:
    case VG_OP_GEMM_SILU_GATE:
    case VG_OP_GEMM_RMSNORM_A:
    case VG_OP_GEMM_RMSNORM_A_UNIT:
    case VG_OP_RMSNORM:
    case VG_OP_ROTARY_2D:
    case VG_OP_ATTENTION:
    case VG_OP_SILU_MUL:
    case VG_OP_CONVERT:
    case VG_OP_ATTENTION_ROTARY:
    case VG_OP_ROTARY:
    case VG_OP_RMSNORM_HEADS:
    case VG_OP_KV_STORE:
    case VG_OP_PAGED_ATTENTION:
    case VG_OP_ARGMAX:
    case VG_OP_LAYERNORM:
    case VG_OP_GATHER_WEIGHTED:
    case VG_OP_ROTARY_KV_STORE:
    case VG_OP_ROTARY_PAGED_ATTENTION:
    case VG_OP_ROTARY_PAGED_ATTENTION_NORM_X: return FLOATS;
    case VG_OP_LM_ADVANCE: return VG_DTYPE_BIT(VG_DTYPE_I32);
    default: return 0;
    }
}

double ref_round(vg_dtype t, double v)
{
    switch (t) {
    case VG_DTYPE_F32: return (double)(float)v;
    case VG_DTYPE_BF16: return vg_bf16_to_f32(vg_f32_to_bf16((float)v));
    case VG_DTYPE_F16: return vg_f16_to_f32(vg_f32_to_f16((float)v));
    default: return v;
    }
}

double ref_activation(vg_activation act, double x)
{
    switch (act) {
    case VG_ACT_GELU_ERF: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case VG_ACT_GELU_TANH:
        return 0.5 * x * (1.0 + tanh(0.79788456080286536 * (x + 0.044715 * x * x * x))); /* √(2/π) */
    case VG_ACT_SILU: return x / (1.0 + exp(-x));
    case VG_ACT_QUICK_GELU: return x / (1.0 + exp(-1.702 * x));
    default: return x;
    }
}

void ref_axpby(size_t n, double alpha, const double *x, double beta, double *y)
{
    for (size_t i = 0; i < n; i++) y[i] = alpha * x[i] + beta * y[i];
}

void ref_gemm(int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t lda,
              const double *b, int64_t ldb, const double *bias, const double *residual,
              int64_t ldr, vg_activation act, double *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t l = 0; l < k; l++) acc += a[i * lda + l] * b[j * ldb + l];
            double v = ref_activation(act, alpha * acc + (bias ? bias[j] : 0.0));
            if (residual) v += residual[i * ldr + j];
            c[i * ldc + j] = v;
        }
}

void ref_gather_rows(double *dst, const double *src, const int32_t *idx, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++)
        memcpy(dst + r * cols, src + (int64_t)idx[r] * cols, (size_t)cols * sizeof(double));
}

void ref_rmsnorm(const double *x, const double *w, double *out, int64_t rows, int64_t cols, double eps)
{
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0;
        for (int64_t c = 0; c < cols; c++) ss += x[r * cols + c] * x[r * cols + c];
        double inv = 1.0 / sqrt(ss / (double)cols + eps);
        for (int64_t c = 0; c < cols; c++) out[r * cols + c] = w[c] * (x[r * cols + c] * inv);
    }
}

/* The rotary angle of element i < half of a head in a row at position (ph, pw). */
static double rotary_angle(int i, int head_dim, int32_t ph, int32_t pw, double theta)
{
    int half = head_dim / 2, quarter = head_dim / 4;
    int j = i < quarter ? i : i - quarter;
    return (double)(i < quarter ? ph : pw) * pow(theta, -2.0 * j / half);
}

static void rotate_slice(double *h, int head_dim, int32_t ph, int32_t pw, double theta)
{
    int half = head_dim / 2;
    for (int i = 0; i < half; i++) {
        double a = rotary_angle(i, head_dim, ph, pw, theta);
        double x0 = h[i], x1 = h[i + half];
        h[i] = x0 * cos(a) - x1 * sin(a);
        h[i + half] = x1 * cos(a) + x0 * sin(a);
    }
}

void ref_rotary_2d(double *x, int64_t ld, int64_t rows, int heads, int head_dim,
                   const int32_t *pos, double theta)
{
    for (int64_t r = 0; r < rows; r++)
        for (int h = 0; h < heads; h++)
            rotate_slice(x + r * ld + (int64_t)h * head_dim, head_dim, pos[2 * r], pos[2 * r + 1], theta);
}

void ref_attention(const double *qkv, int64_t ld_qkv, double *out, int64_t ld_out, int64_t rows,
                   int heads, int head_dim, const int32_t *cu, int num_segments, double scale,
                   const int32_t *pos, double theta)
{
    int64_t hidden = (int64_t)heads * head_dim;
    /* q and k, rotated when asked, in a dense copy: [rows, 2 · hidden] */
    double *qk = malloc((size_t)(rows ? rows : 1) * 2 * (size_t)hidden * sizeof(double));
    double *p = malloc((size_t)(rows ? rows : 1) * sizeof(double));
    if (!qk || !p) abort();
    for (int64_t r = 0; r < rows; r++) {
        memcpy(qk + r * 2 * hidden, qkv + r * ld_qkv, (size_t)(2 * hidden) * sizeof(double));
        if (pos)
            for (int h = 0; h < 2 * heads; h++)
                rotate_slice(qk + r * 2 * hidden + (int64_t)h * head_dim, head_dim, pos[2 * r],
                             pos[2 * r + 1], theta);
    }
    for (int sgi = 0; sgi < num_segments; sgi++)
        for (int h = 0; h < heads; h++)
            for (int64_t i = cu[sgi]; i < cu[sgi + 1]; i++) {
                const double *q = qk + i * 2 * hidden + (int64_t)h * head_dim;
                double mx = -INFINITY, sum = 0;
                for (int64_t j = cu[sgi]; j < cu[sgi + 1]; j++) {
                    const double *kk = qk + j * 2 * hidden + hidden + (int64_t)h * head_dim;
                    double d = 0;
                    for (int e = 0; e < head_dim; e++) d += q[e] * kk[e];
                    p[j] = d * scale;
                    mx = fmax(mx, p[j]);
                }
                for (int64_t j = cu[sgi]; j < cu[sgi + 1]; j++) sum += p[j] = exp(p[j] - mx);
                for (int e = 0; e < head_dim; e++) {
                    double acc = 0;
                    for (int64_t j = cu[sgi]; j < cu[sgi + 1]; j++)
                        acc += p[j] * qkv[j * ld_qkv + 2 * hidden + (int64_t)h * head_dim + e];
                    out[i * ld_out + (int64_t)h * head_dim + e] = acc / sum;
                }
            }
    free(qk);
    free(p);
}

void ref_silu_mul(const double *in, int64_t ld_in, double *out, int64_t ld_out, int64_t rows,
                  int64_t cols)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            double g = in[r * ld_in + c], u = in[r * ld_in + cols + c];
            out[r * ld_out + c] = g / (1.0 + exp(-g)) * u;
        }
}

/* ---- op table version 4 ------------------------------------------------------------------------ */

void ref_rotary(double *x, int64_t ld, int64_t rows, int heads, int head_dim, const int32_t *pos,
                double theta)
{
    int half = head_dim / 2;
    for (int64_t r = 0; r < rows; r++)
        for (int h = 0; h < heads; h++) {
            double *s = x + r * ld + (int64_t)h * head_dim;
            for (int i = 0; i < half; i++) {
                double a = (double)pos[r] * pow(theta, -2.0 * i / head_dim);
                double x0 = s[i], x1 = s[i + half];
                s[i] = x0 * cos(a) - x1 * sin(a);
                s[i + half] = x1 * cos(a) + x0 * sin(a);
            }
        }
}

void ref_rmsnorm_heads(double *x, int64_t ld, int64_t rows, int heads, int head_dim,
                       const double *w, double eps)
{
    for (int64_t r = 0; r < rows; r++)
        for (int h = 0; h < heads; h++) {
            double *s = x + r * ld + (int64_t)h * head_dim, ss = 0;
            for (int c = 0; c < head_dim; c++) ss += s[c] * s[c];
            double inv = 1.0 / sqrt(ss / head_dim + eps);
            for (int c = 0; c < head_dim; c++) s[c] = w[c] * (s[c] * inv);
        }
}

void ref_kv_store(const double *k, int64_t ld_k, const double *v, int64_t ld_v, double *k_cache,
                  double *v_cache, const int32_t *slots, int64_t rows, int64_t width)
{
    for (int64_t r = 0; r < rows; r++) {
        if (slots[r] < 0) continue;
        memcpy(k_cache + (int64_t)slots[r] * width, k + r * ld_k, (size_t)width * sizeof(double));
        memcpy(v_cache + (int64_t)slots[r] * width, v + r * ld_v, (size_t)width * sizeof(double));
    }
}

void ref_paged_attention(const double *q, int64_t ld_q, double *out, int64_t ld_out, int64_t rows,
                         const double *k_cache, const double *v_cache,
                         const int32_t *block_tables, int max_blocks, const int32_t *context_lens,
                         const int32_t *query_start, int num_seqs, int heads, int kv_heads,
                         int head_dim, int block_size, double scale)
{
    int64_t hidden = (int64_t)heads * head_dim, cache_ld = (int64_t)kv_heads * head_dim;
    int group = heads / kv_heads;
    for (int64_t r = query_start[num_seqs]; r < rows; r++) /* padding */
        for (int64_t e = 0; e < hidden; e++) out[r * ld_out + e] = 0;
    for (int s = 0; s < num_seqs; s++) {
        int64_t n = query_start[s + 1] - query_start[s], ctx = context_lens[s];
        int64_t np = ctx > 0 ? ctx : 1;
        double *p = malloc((size_t)np * sizeof(double));
        int64_t *slot = malloc((size_t)np * sizeof(int64_t));
        if (!p || !slot) abort();
        for (int64_t t = 0; t < ctx; t++)
            slot[t] = (int64_t)block_tables[(int64_t)s * max_blocks + t / block_size] * block_size +
                      t % block_size;
        for (int64_t j = 0; j < n; j++) {
            int64_t row = query_start[s] + j, last = ctx - n + j;
            for (int h = 0; h < heads; h++) {
                const double *qq = q + row * ld_q + (int64_t)h * head_dim;
                int64_t ko = (int64_t)(h / group) * head_dim;
                double mx = -INFINITY, sum = 0;
                for (int64_t t = 0; t <= last; t++) {
                    const double *kk = k_cache + slot[t] * cache_ld + ko;
                    double d = 0;
                    for (int e = 0; e < head_dim; e++) d += qq[e] * kk[e];
                    p[t] = d * scale;
                    mx = fmax(mx, p[t]);
                }
                for (int64_t t = 0; t <= last; t++) sum += p[t] = exp(p[t] - mx);
                for (int e = 0; e < head_dim; e++) {
                    double acc = 0;
                    for (int64_t t = 0; t <= last; t++) acc += p[t] * v_cache[slot[t] * cache_ld + ko + e];
                    out[row * ld_out + (int64_t)h * head_dim + e] = last >= 0 ? acc / sum : 0;
                }
            }
        }
        free(p);
        free(slot);
    }
}

void ref_argmax(const double *x, int64_t ld, int64_t rows, int64_t cols, int32_t *out)
{
    for (int64_t r = 0; r < rows; r++) {
        int64_t at = 0;
        for (int64_t c = 1; c < cols; c++)
            if (x[r * ld + c] > x[r * ld + at]) at = c;
        out[r] = (int32_t)at;
    }
}

void ref_layernorm(const double *x, const double *w, const double *b, double *out, int64_t rows,
                   int64_t cols, double eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * cols;
        double mean = 0, var = 0;
        for (int64_t c = 0; c < cols; c++) mean += xr[c];
        mean /= (double)cols;
        for (int64_t c = 0; c < cols; c++) var += (xr[c] - mean) * (xr[c] - mean);
        double inv = 1.0 / sqrt(var / (double)cols + eps);
        for (int64_t c = 0; c < cols; c++) /* xr may be out: element c is read, then written */
            out[r * cols + c] = (xr[c] - mean) * inv * w[c] + (b ? b[c] : 0.0);
    }
}

void ref_gather_weighted(double *dst, const double *src, int64_t src_rows, const int32_t *idx,
                         const double *w, int64_t rows, int64_t cols, int taps)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            double acc = 0;
            for (int t = 0; t < taps; t++) {
                int32_t i = idx[r * taps + t];
                if (i >= 0 && i < src_rows) acc += w[r * taps + t] * src[(int64_t)i * cols + c];
            }
            dst[r * cols + c] = acc;
        }
}

/* ---- op table version 6 ------------------------------------------------------------------------ */

void ref_rotary_kv_store(vg_dtype t, double *qkv, int64_t ld, int64_t rows, int heads,
                         int kv_heads, int head_dim, const double *q_norm, const double *k_norm,
                         double eps, const int32_t *pos, double theta, double *k_cache,
                         double *v_cache, const int32_t *slots)
{
    int64_t width = (int64_t)kv_heads * head_dim, qw = (int64_t)heads * head_dim;
    if (q_norm) {
        ref_rmsnorm_heads(qkv, ld, rows, heads, head_dim, q_norm, eps);
        ref_rmsnorm_heads(qkv + qw, ld, rows, kv_heads, head_dim, k_norm, eps);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < qw + width; c++) qkv[r * ld + c] = ref_round(t, qkv[r * ld + c]);
    }
    ref_rotary(qkv, ld, rows, heads + kv_heads, head_dim, pos, theta);
    ref_kv_store(qkv + qw, ld, qkv + qw + width, ld, k_cache, v_cache, slots, rows, width);
}

double ref_gemm_silu_gate(int64_t m, int64_t n, int64_t k, double alpha, const double *a,
                          int64_t lda, const double *b, int64_t ldb, const double *bias, double *c,
                          int64_t ldc)
{
    double *p = malloc((size_t)(m * n) * sizeof *p), most = 0;
    if (!p) abort();
    ref_gemm(m, n, k, alpha, a, lda, b, ldb, bias, NULL, 0, VG_ACT_NONE, p, n);
    for (int64_t i = 0; i < m * n; i++) most = fmax(most, fabs(p[i]));
    int64_t h = n / 2;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < h; j++)
            c[i * ldc + j] = ref_activation(VG_ACT_SILU, p[i * n + j]) * p[i * n + h + j];
    free(p);
    return most;
}

void ref_norm_x_fold(vg_dtype t, double *qkv, int64_t ld, int64_t rows, int64_t cols, const double *norm_x,
                     int64_t ld_norm_x, int64_t norm_x_cols, double eps, const double *bias)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *x = norm_x + r * ld_norm_x;
        double ss = 0;
        for (int64_t c = 0; c < norm_x_cols; c++) ss += x[c] * x[c];
        const float s = (float)(1.0 / sqrt(ss / (double)norm_x_cols + eps));
        for (int64_t c = 0; c < cols; c++) {
            const float v = (float)qkv[r * ld + c] * s + (bias ? (float)bias[c] : 0.0f);
            qkv[r * ld + c] = ref_round(t, v);
        }
    }
}
