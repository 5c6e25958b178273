/* SPDX-License-Identifier: Apache-2.0 */
/* The synthetic model of the runner tests: see synth_model.h. */
#include <math.h>
#include <stdlib.h>

#include "synth_model.h"
#include "test_util.h"

const int64_t k_sizes[4] = {8, 16, 32, 64};


typedef struct inputs {
    const float *x;       /* [n, C] */
    const int32_t *perm;  /* [n], a permutation of 0..n-1 */
    const float *bias;    /* [num_requests, C] */
} inputs;

static const float *x_buffer(model *m, vg_runner *r)
{
    return m->x_in_use ? m->x_in_use : vg_runner_buffer(r, BUF_X);
}

static vg_status piece_mix(void *mp, vg_runner *r, const vg_piece *pc, const vg_batch_desc *d,
                         vg_stream *s)
{
    model *m = mp;
    (void)pc;
    vg_gemm_args a = {.struct_size = sizeof a, .dtype_ab = VG_DTYPE_F32, .dtype_c = VG_DTYPE_F32,
                      .m = d->num_tokens, .n = C, .k = C, .a = x_buffer(m, r), .lda = C,
                      .b = m->w, .ldb = C, .c = vg_runner_buffer(r, BUF_Y), .ldc = C,
                      .act = VG_ACT_SILU, .alpha = 1.0f};
    return vg_op_gemm(s, &a);
}

static vg_status piece_bias(void *mp, vg_runner *r, const vg_piece *pc, const vg_batch_desc *d,
                         vg_stream *s)
{
    (void)mp;
    (void)pc;
    return vg_op_axpby(s, (size_t)d->num_requests * C, 1.0f, vg_runner_buffer(r, BUF_BIAS), 1.0f,
                       vg_runner_buffer(r, BUF_Y));
}

static vg_status piece_permute(void *mp, vg_runner *r, const vg_piece *pc, const vg_batch_desc *d,
                         vg_stream *s)
{
    model *m = mp;
    (void)pc;
    if (vg_stream_is_capturing(s)) m->captured_gathers++;
    else m->eager_gathers++;
    return vg_op_gather_rows(s, VG_DTYPE_F32, vg_runner_buffer(r, BUF_T), vg_runner_buffer(r, BUF_Y),
                             vg_runner_buffer(r, BUF_IDX), d->num_tokens, C);
}

static vg_status piece_chain(void *mp, vg_runner *r, const vg_piece *pc, const vg_batch_desc *d,
                         vg_stream *s)
{
    model *m = mp;
    (void)pc;
    return vg_op_axpby(s, (size_t)d->num_tokens * C, 0.25f, x_buffer(m, r), 0.75f,
                       vg_runner_buffer(r, BUF_T));
}

static vg_status model_reserve(void *mp, vg_runner *r, const vg_batch_desc *d)
{
    (void)mp;
    size_t n = (size_t)d->num_tokens;
    vg_status st = vg_runner_buffer_reserve(r, BUF_X, n * C * 4);
    if (st == VG_OK) st = vg_runner_buffer_reserve(r, BUF_Y, n * C * 4);
    if (st == VG_OK) st = vg_runner_buffer_reserve(r, BUF_T, n * C * 4);
    if (st == VG_OK) st = vg_runner_buffer_reserve(r, BUF_IDX, n * 4);
    /* deliberately sized by the request count, so that more requests grow it */
    if (st == VG_OK) st = vg_runner_buffer_reserve(r, BUF_BIAS, (size_t)(d->num_requests + 1) * C * 4);
    return st;
}

static vg_status model_prepare(void *mp, vg_runner *r, const vg_batch_desc *real,
                               const vg_batch_desc *padded, vg_stream *s, const void *in)
{
    (void)mp;
    const inputs *x = in;
    if (!x) { /* warm-up: zeros, the identity permutation, no bias */
        size_t p = (size_t)padded->num_tokens;
        int32_t ident[MAX_SIZE * 2];
        for (size_t i = 0; i < p; i++) ident[i] = (int32_t)i;
        vg_status st = vg_mem_set(s, vg_runner_buffer(r, BUF_X), 0, p * C * 4);
        if (st == VG_OK) st = vg_mem_copy_h2d(s, vg_runner_buffer(r, BUF_IDX), ident, p * 4);
        if (st == VG_OK) st = vg_mem_set(s, vg_runner_buffer(r, BUF_BIAS), 0,
                                                 vg_runner_buffer_size(r, BUF_BIAS));
        if (st == VG_OK) st = vg_stream_sync(s);
        (void)real;
        return st;
    }
    size_t n = (size_t)real->num_tokens, p = (size_t)padded->num_tokens;
    char *X = vg_runner_buffer(r, BUF_X);
    int32_t *idx = vg_runner_buffer(r, BUF_IDX);
    vg_status st = vg_mem_copy_h2d(s, X, x->x, n * C * 4);
    if (st == VG_OK && p > n) st = vg_mem_set(s, X + n * C * 4, 0, (p - n) * C * 4);
    if (st == VG_OK) st = vg_mem_copy_h2d(s, idx, x->perm, n * 4);
    /* padding rows map onto themselves: they never touch real rows */
    int32_t pad_idx[MAX_SIZE * 2];
    for (size_t i = n; i < p; i++) pad_idx[i - n] = (int32_t)i;
    if (st == VG_OK && p > n) st = vg_mem_copy_h2d(s, idx + n, pad_idx, (p - n) * 4);
    if (st == VG_OK)
        st = vg_mem_copy_h2d(s, vg_runner_buffer(r, BUF_BIAS), x->bias,
                            (size_t)real->num_requests * C * 4);
    if (st == VG_OK) st = vg_stream_sync(s); /* the host inputs are the caller's */
    return st;
}

static int model_addresses(void *mp, vg_runner *r, const void **out, int max)
{
    model *m = mp;
    if (max < 1) return 0;
    out[0] = x_buffer(m, r);
    return 1;
}

void model_init(model *m, vg_runtime *rt)
{
    memset(m, 0, sizeof *m);
    m->rt = rt;
    VG_CHECK(vg_mem_alloc(rt, C * C * 4, (void **)&m->w));
    float w[C * C];
    for (int i = 0; i < C * C; i++) w[i] = (float)((i * 37) % 17 - 8) / 16.0f;
    vg_stream *s;
    VG_CHECK(vg_stream_create(rt, &s));
    VG_CHECK(vg_mem_copy_h2d(s, m->w, w, sizeof w));
    VG_CHECK(vg_stream_sync(s));
    VG_CHECK(vg_stream_destroy(s));
    int k = 0;
    static const vg_op_id gemm[] = {VG_OP_GEMM}, axpby[] = {VG_OP_AXPBY}, gather[] = {VG_OP_GATHER_ROWS};
    m->pieces[k++] = (vg_piece){"mix", piece_mix, 0, gemm, 1, NULL, 0};
    m->pieces[k++] = (vg_piece){"bias", piece_bias, 0, axpby, 1, NULL, 0};
    m->pieces[k++] = (vg_piece){"permute", piece_permute, VG_PIECE_SPLITTING, gather, 1, NULL, 0};
    for (int i = 0; i < CHAIN; i++)
        m->pieces[k++] = (vg_piece){"chain", piece_chain, 0, axpby, 1, NULL, i};
    m->iface = (vg_model_iface){.struct_size = sizeof(vg_model_iface), .model = m,
                                .pieces = m->pieces, .num_pieces = k,
                                .reserve = model_reserve, .prepare = model_prepare,
                                .addresses = model_addresses};
}

void model_fini(model *m) { VG_CHECK(vg_mem_free(m->rt, m->w)); }

vg_runner *make_runner(model *m, vg_graph_mode mode, uint64_t budget, int debug)
{
    vg_runner_options o;
    vg_runner_options_init(&o);
    o.mode = mode;
    o.capture_sizes = k_sizes;
    o.num_capture_sizes = 4;
    o.graph_memory_budget = budget;
    o.debug_addresses = debug;
    vg_runner *r = NULL;
    VG_CHECK(vg_runner_create(m->rt, &m->iface, &o, &r));
    return r;
}

/* ---- a call: random inputs, run, read T back --------------------------------------------- */


unsigned next_rand(unsigned *seed) { return *seed = *seed * 1103515245u + 12345u, (*seed >> 8); }

void make_call(call *c, int64_t n, int32_t requests, unsigned *seed)
{
    c->n = n;
    c->requests = requests;
    for (int64_t i = 0; i < n * C; i++) c->x[i] = (float)(next_rand(seed) % 2000) / 1000.0f - 1.0f;
    for (int32_t i = 0; i < requests * C; i++) c->bias[i] = (float)(next_rand(seed) % 100) / 100.0f;
    for (int64_t i = 0; i < n; i++) c->perm[i] = (int32_t)i;
    for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates: a new segmentation each call */
        int64_t j = next_rand(seed) % (unsigned)(i + 1);
        int32_t t = c->perm[i];
        c->perm[i] = c->perm[j];
        c->perm[j] = t;
    }
}

vg_status run_call(vg_runner *r, model *m, const call *c, float *out, vg_run_info *info)
{
    vg_batch_desc d = {.num_tokens = c->n, .num_requests = c->requests};
    inputs in = {c->x, c->perm, c->bias};
    vg_status st = vg_runner_run(r, &d, &in, info);
    if (st != VG_OK) return st;
    (void)m;
    st = vg_mem_copy_d2h(vg_runner_stream(r), out, vg_runner_buffer(r, BUF_T), (size_t)c->n * C * 4);
    if (st == VG_OK) st = vg_stream_sync(vg_runner_stream(r));
    return st;
}

/* Graph and eager runs use the same kernels, but a GEMM over the padded rows may round
 * differently from one over the real rows (BLAS blocking depends on M): agree within 1e-6 of
 * the largest magnitude. NaN never passes. */
void assert_same(const float *a, const float *b, size_t n)
{
    double ref = 1e-30;
    for (size_t i = 0; i < n; i++) ref = fmax(ref, fabs((double)b[i]));
    for (size_t i = 0; i < n; i++) {
        int ok = !isnan(a[i]) && !isnan(b[i]) && fabs((double)a[i] - (double)b[i]) <= 1e-6 * ref;
        if (!ok) print_message("element %zu: %.9g vs %.9g\n", i, a[i], b[i]);
        assert_true(ok);
    }
}

