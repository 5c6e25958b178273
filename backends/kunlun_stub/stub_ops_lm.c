/* SPDX-License-Identifier: Apache-2.0 */
/* kunlun_stub: CPU versions of the decoder-LM ops (op table version 4: rotary, rmsnorm_heads,
 * kv_store, paged_attention, argmax; version 6: rotary_kv_store, the first three in one). Plain loops with fp32 accumulation, submitted through
 * stub_submit so they run eagerly or are recorded into a graph. The core has validated every call
 * against the catalogue (vg_ops.h); what lives in device memory (positions, slots, block tables,
 * context lengths, query starts) is read when the op runs, and a malformed value there is
 * clamped or skipped, never followed out of bounds of what the op can know. */
#include <math.h>
#include <string.h>

#include "stub_internal.h"
#include "stub_kernels.h"

/* ---- rotary ---------------------------------------------------------------------------------- */

typedef struct rotary1_args {
    vg_dtype dtype;
    void *x;
    int64_t ld, rows;
    int heads, head_dim;
    const int32_t *pos;
    float theta;
} rotary1_args;

static void run_rotary1(vg_bk_stream *s, const void *p)
{
    (void)s;
    const rotary1_args *a = p;
    int half = a->head_dim / 2;
    for (int64_t r = 0; r < a->rows; r++) {
        for (int i = 0; i < half; i++) { /* the angle depends on the row and i, not the head */
            float inv_freq = 1.0f / powf(a->theta, (float)(2 * i) / (float)a->head_dim);
            float angle = (float)a->pos[r] * inv_freq;
            float c = (float)cos((double)angle), sn = (float)sin((double)angle);
            rotate_heads(a->x, a->dtype, (size_t)(r * a->ld), a->heads, a->head_dim, i, c, sn);
        }
    }
}

vg_status stub_op_rotary(vg_bk_device *dev, vg_bk_stream *s, vg_dtype dtype, void *x, int64_t ld,
                         int64_t rows, int heads, int head_dim, const int32_t *pos, float theta)
{
    (void)dev;
    rotary1_args a = {dtype, x, ld, rows, heads, head_dim, pos, theta};
    return stub_submit(s, VG_OP_ROTARY, "rotary", run_rotary1, &a, sizeof a);
}

/* ---- rmsnorm_heads ---------------------------------------------------------------------------- */

typedef struct rmsnorm_heads_args {
    vg_dtype dtype;
    void *x;
    int64_t ld, rows;
    int heads, head_dim;
    const void *w;
    float eps;
} rmsnorm_heads_args;

static void run_rmsnorm_heads(vg_bk_stream *s, const void *p)
{
    (void)s;
    const rmsnorm_heads_args *a = p;
    for (int64_t r = 0; r < a->rows; r++)
        for (int h = 0; h < a->heads; h++) {
            size_t base = (size_t)(r * a->ld) + (size_t)h * (size_t)a->head_dim;
            float ss = 0.0f;
            for (int c = 0; c < a->head_dim; c++) {
                float v = load_f(a->x, a->dtype, base + (size_t)c);
                ss += v * v;
            }
            float inv = 1.0f / sqrtf(ss / (float)a->head_dim + a->eps);
            for (int c = 0; c < a->head_dim; c++) {
                float v = load_f(a->x, a->dtype, base + (size_t)c) * inv;
                store_f(a->x, a->dtype, base + (size_t)c, load_f(a->w, a->dtype, (size_t)c) * v);
            }
        }
}

vg_status stub_op_rmsnorm_heads(vg_bk_device *dev, vg_bk_stream *s, vg_dtype dtype, void *x,
                                int64_t ld, int64_t rows, int heads, int head_dim, const void *w,
                                float eps)
{
    (void)dev;
    rmsnorm_heads_args a = {dtype, x, ld, rows, heads, head_dim, w, eps};
    return stub_submit(s, VG_OP_RMSNORM_HEADS, "rmsnorm_heads", run_rmsnorm_heads, &a, sizeof a);
}

/* ---- kv_store --------------------------------------------------------------------------------- */

typedef struct kv_store_args {
    size_t esz;
    const void *k, *v;
    int64_t ld_k, ld_v;
    void *k_cache, *v_cache;
    const int32_t *slots;
    int64_t rows, width;
} kv_store_args;

static void run_kv_store(vg_bk_stream *s, const void *p)
{
    (void)s;
    const kv_store_args *a = p;
    size_t row_bytes = (size_t)a->width * a->esz;
    for (int64_t r = 0; r < a->rows; r++) {
        int32_t slot = a->slots[r];
        if (slot < 0) continue; /* a padding row */
        size_t dst = (size_t)slot * row_bytes;
        memcpy((char *)a->k_cache + dst, (const char *)a->k + (size_t)(r * a->ld_k) * a->esz, row_bytes);
        memcpy((char *)a->v_cache + dst, (const char *)a->v + (size_t)(r * a->ld_v) * a->esz, row_bytes);
    }
}

vg_status stub_op_kv_store(vg_bk_device *dev, vg_bk_stream *s, vg_dtype dtype, const void *k,
                           int64_t ld_k, const void *v, int64_t ld_v, void *k_cache, void *v_cache,
                           const int32_t *slots, int64_t rows, int kv_heads, int head_dim)
{
    (void)dev;
    kv_store_args a = {dtype_size(dtype), k, v, ld_k, ld_v, k_cache, v_cache, slots, rows,
                       (int64_t)kv_heads * head_dim};
    return stub_submit(s, VG_OP_KV_STORE, "kv_store", run_kv_store, &a, sizeof a);
}

/* ---- rotary_kv_store: the three above as one submitted op, in their order ------------------------ */

typedef struct rotary_kv_store_args {
    vg_dtype dtype;
    void *qkv;
    int64_t ld, rows;
    int heads, kv_heads, head_dim;
    float eps, theta;
    const void *q_norm, *k_norm;
    const int32_t *pos, *slots;
    void *k_cache, *v_cache;
} rotary_kv_store_args;

static void run_rotary_kv_store(vg_bk_stream *s, const void *p)
{
    const rotary_kv_store_args *a = p;
    size_t es = dtype_size(a->dtype);
    char *k = (char *)a->qkv + (size_t)a->heads * (size_t)a->head_dim * es;
    char *v = k + (size_t)a->kv_heads * (size_t)a->head_dim * es;
    if (a->q_norm) {
        rmsnorm_heads_args qn = {a->dtype, a->qkv, a->ld, a->rows, a->heads, a->head_dim, a->q_norm, a->eps};
        rmsnorm_heads_args kn = {a->dtype, k, a->ld, a->rows, a->kv_heads, a->head_dim, a->k_norm, a->eps};
        run_rmsnorm_heads(s, &qn);
        run_rmsnorm_heads(s, &kn);
    }
    rotary1_args rot = {a->dtype, a->qkv, a->ld, a->rows, a->heads + a->kv_heads, a->head_dim, a->pos, a->theta};
    run_rotary1(s, &rot);
    kv_store_args kv = {es, k, v, a->ld, a->ld, a->k_cache, a->v_cache, a->slots, a->rows,
                        (int64_t)a->kv_heads * a->head_dim};
    run_kv_store(s, &kv);
}

vg_status stub_op_rotary_kv_store(vg_bk_device *dev, vg_bk_stream *s, vg_dtype dtype, void *qkv,
                                  int64_t ld, int64_t rows, int heads, int kv_heads, int head_dim,
                                  const void *q_norm, const void *k_norm, float eps,
                                  const int32_t *pos, float theta, void *k_cache, void *v_cache,
                                  const int32_t *slots)
{
    (void)dev;
    rotary_kv_store_args a = {dtype, qkv, ld, rows, heads, kv_heads, head_dim, eps, theta,
                              q_norm, k_norm, pos, slots, k_cache, v_cache};
    return stub_submit(s, VG_OP_ROTARY_KV_STORE, "rotary_kv_store", run_rotary_kv_store, &a, sizeof a);
}

/* ---- paged_attention -------------------------------------------------------------------------- */

typedef struct paged_args {
    vg_dtype dtype;
    const void *q;
    int64_t ld_q;
    void *out;
    int64_t ld_out, rows;
    const void *k_cache, *v_cache;
    const int32_t *block_tables;
    int max_blocks;
    const int32_t *context_lens, *query_start;
    int num_seqs, heads, kv_heads, head_dim, block_size;
    float scale;
} paged_args;

static void zero_row(const paged_args *a, int64_t r)
{
    for (int64_t c = 0; c < (int64_t)a->heads * a->head_dim; c++)
        store_f(a->out, a->dtype, (size_t)(r * a->ld_out + c), 0.0f);
}

static int64_t clamp_row(int64_t v, int64_t rows)
{
    return v < 0 ? 0 : v > rows ? rows : v;
}

static void run_paged_attention(vg_bk_stream *s, const void *p)
{
    (void)s;
    const paged_args *a = p;
    int group = a->heads / a->kv_heads, hd = a->head_dim;
    size_t cache_ld = (size_t)a->kv_heads * (size_t)hd;
    int64_t first = clamp_row(a->query_start[0], a->rows);
    int64_t last = clamp_row(a->query_start[a->num_seqs], a->rows);
    for (int64_t r = 0; r < first; r++) zero_row(a, r);
    for (int64_t r = last > first ? last : first; r < a->rows; r++) zero_row(a, r); /* padding */
    float acc[VG_ATTENTION_MAX_HEAD_DIM];
    for (int sq = 0; sq < a->num_seqs; sq++) {
        int64_t lo = clamp_row(a->query_start[sq], a->rows);
        int64_t hi = clamp_row(a->query_start[sq + 1], a->rows);
        int64_t n = hi - lo, ctx = a->context_lens[sq];
        const int32_t *table = a->block_tables + (size_t)sq * (size_t)a->max_blocks;
        int64_t reach = (int64_t)a->max_blocks * a->block_size; /* positions the table can hold */
        for (int64_t j = 0; j < n; j++) {
            int64_t row = lo + j, last_pos = ctx - n + j;
            if (last_pos >= reach) last_pos = reach - 1;
            for (int h = 0; h < a->heads; h++) {
                size_t qo = (size_t)(row * a->ld_q) + (size_t)h * (size_t)hd;
                size_t ko = (size_t)(h / group) * (size_t)hd;
                float mx = -INFINITY, sum = 0.0f;
                memset(acc, 0, (size_t)hd * sizeof(float));
                for (int64_t pos = 0; pos <= last_pos; pos++) { /* online softmax, fp32 */
                    size_t slot = (size_t)table[pos / a->block_size] * (size_t)a->block_size +
                                  (size_t)(pos % a->block_size);
                    size_t kv = slot * cache_ld + ko;
                    float dot = 0.0f;
                    for (int d = 0; d < hd; d++)
                        dot += load_f(a->q, a->dtype, qo + (size_t)d) *
                               load_f(a->k_cache, a->dtype, kv + (size_t)d);
                    float sc = dot * a->scale;
                    float m2 = sc > mx ? sc : mx;
                    float corr = expf(mx - m2), pe = expf(sc - m2);
                    sum = sum * corr + pe;
                    for (int d = 0; d < hd; d++)
                        acc[d] = acc[d] * corr + pe * load_f(a->v_cache, a->dtype, kv + (size_t)d);
                    mx = m2;
                }
                float inv = sum > 0.0f ? 1.0f / sum : 0.0f; /* no position: zeros */
                for (int d = 0; d < hd; d++)
                    store_f(a->out, a->dtype, (size_t)(row * a->ld_out) + (size_t)h * (size_t)hd + (size_t)d,
                            acc[d] * inv);
            }
        }
    }
}

vg_status stub_op_paged_attention(vg_bk_device *dev, vg_bk_stream *s, vg_dtype dtype, const void *q,
                                  int64_t ld_q, void *out, int64_t ld_out, int64_t rows,
                                  const void *k_cache, const void *v_cache,
                                  const int32_t *block_tables, int max_blocks,
                                  const int32_t *context_lens, const int32_t *query_start,
                                  int num_seqs, int heads, int kv_heads, int head_dim,
                                  int block_size, float scale)
{
    (void)dev;
    paged_args a = {dtype, q, ld_q, out, ld_out, rows, k_cache, v_cache, block_tables, max_blocks,
                    context_lens, query_start, num_seqs, heads, kv_heads, head_dim, block_size,
                    scale};
    return stub_submit(s, VG_OP_PAGED_ATTENTION, "paged_attention", run_paged_attention, &a,
                       sizeof a);
}

/* ---- rotary_paged_attention (op table version 8) ------------------------------------------------ */

/* norm_x (op table version 10): row r's query and key heads become qkv[r]·s_r + qkv_bias in place
 * (s_r = 1/rms(norm_x[r])), rounded to the dtype; the value heads are left, their scaled rows
 * written into the cache after the store (norm_x_values). */
static float norm_x_scale(const vg_rotary_paged_args *a, int64_t r)
{
    const size_t base = (size_t)r * (size_t)a->ld_norm_x;
    float ss = 0.0f;
    for (int64_t c = 0; c < a->norm_x_cols; c++) {
        float v = load_f(a->norm_x, a->dtype, base + (size_t)c);
        ss += v * v;
    }
    return 1.0f / sqrtf(ss / (float)a->norm_x_cols + a->norm_x_eps);
}

static float norm_x_value(const vg_rotary_paged_args *a, int64_t r, int64_t c, float sr)
{
    const float v = load_f(a->qkv, a->dtype, (size_t)r * (size_t)a->ld + (size_t)c) * sr;
    return a->qkv_bias ? v + load_f(a->qkv_bias, a->dtype, (size_t)c) : v;
}

static void norm_x_queries_keys(const vg_rotary_paged_args *a)
{
    const int64_t qk = (int64_t)(a->heads + a->kv_heads) * a->head_dim;
    for (int64_t r = 0; r < a->rows; r++) {
        const float sr = norm_x_scale(a, r);
        for (int64_t c = 0; c < qk; c++)
            store_f(a->qkv, a->dtype, (size_t)r * (size_t)a->ld + (size_t)c, norm_x_value(a, r, c, sr));
    }
}

static void norm_x_values(const vg_rotary_paged_args *a)
{
    const int64_t width = (int64_t)a->kv_heads * a->head_dim, v0 = (int64_t)(a->heads + a->kv_heads) * a->head_dim;
    for (int64_t r = 0; r < a->rows; r++) {
        if (a->slots[r] < 0) continue;
        const float sr = norm_x_scale(a, r);
        for (int64_t c = 0; c < width; c++)
            store_f(a->v_cache, a->dtype, (size_t)a->slots[r] * (size_t)width + (size_t)c, norm_x_value(a, r, v0 + c, sr));
    }
}

/* One command: the two ops' work in order (a host has nothing to gain from fusing them; what a
 * vendor's device gains is saving the launch between them and the round trip of the keys). */
static void run_rotary_paged_attention(vg_bk_stream *s, const void *p)
{
    const vg_rotary_paged_args *a = p;
    const rotary_kv_store_args rk = {a->dtype, a->qkv, a->ld, a->rows, a->heads, a->kv_heads, a->head_dim,
                                     a->eps, a->theta, a->q_norm, a->k_norm, a->pos, a->slots, a->k_cache,
                                     a->v_cache};
    const paged_args pa = {a->dtype, a->qkv, a->ld, a->out, a->ld_out, a->rows, a->k_cache, a->v_cache,
                           a->block_tables, a->max_blocks, a->context_lens, a->query_start, a->num_seqs,
                           a->heads, a->kv_heads, a->head_dim, a->block_size, a->scale};
    if (a->norm_x) norm_x_queries_keys(a);
    run_rotary_kv_store(s, &rk);
    if (a->norm_x) norm_x_values(a);
    run_paged_attention(s, &pa);
}

vg_status stub_op_rotary_paged_attention(vg_bk_device *dev, vg_bk_stream *s, const vg_rotary_paged_args *a)
{
    (void)dev;
    _Static_assert(sizeof *a <= STUB_CMD_ARGS, "rotary_paged_attention's arguments fit a command");
    /* the op whose capture capability applies: with norm_x, version 10's */
    return stub_submit(s, a->norm_x ? VG_OP_ROTARY_PAGED_ATTENTION_NORM_X : VG_OP_ROTARY_PAGED_ATTENTION,
                       "rotary_paged_attention", run_rotary_paged_attention, a, sizeof *a);
}

/* ---- argmax ------------------------------------------------------------------------------------ */

typedef struct argmax_args {
    vg_dtype dtype;
    const void *x;
    int64_t ld, rows, cols;
    int32_t *out;
} argmax_args;

static void run_argmax(vg_bk_stream *s, const void *p)
{
    (void)s;
    const argmax_args *a = p;
    for (int64_t r = 0; r < a->rows; r++) {
        size_t base = (size_t)(r * a->ld);
        float best = load_f(a->x, a->dtype, base);
        int64_t at = 0;
        for (int64_t c = 1; c < a->cols; c++) {
            float v = load_f(a->x, a->dtype, base + (size_t)c);
            if (v > best) best = v, at = c; /* strictly greater: ties keep the smallest c */
        }
        a->out[r] = (int32_t)at;
    }
}

vg_status stub_op_argmax(vg_bk_device *dev, vg_bk_stream *s, vg_dtype dtype, const void *x,
                         int64_t ld, int64_t rows, int64_t cols, int32_t *out)
{
    (void)dev;
    argmax_args a = {dtype, x, ld, rows, cols, out};
    return stub_submit(s, VG_OP_ARGMAX, "argmax", run_argmax, &a, sizeof a);
}
