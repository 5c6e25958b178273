/* SPDX-License-Identifier: Apache-2.0 */
/* Randomised conformance, in the spirit of ggml's test-backend-ops: every op of the catalogue the
 * device supports, with shapes, leading dimensions, pointer offsets and dtypes drawn per case,
 * checked against the double-precision references of reference_ops.c, through the core device
 * API. A share of the cases is captured once and replayed on new input contents.
 *
 *   VG_BACKEND              the backend (as everywhere)
 *   VG_CONFORMANCE_SEED     the seed (default below; always printed)
 *   VG_CONFORMANCE_CASES    how many cases (default 200)
 *   VG_CONFORMANCE_ONLY     run only the case of this index (what a failure tells you to set)
 *   VG_CONFORMANCE_OPS      run only the cases of these ops (comma-separated names); the other
 *                           cases are skipped, so every case keeps its index and its op
 *   VG_REQUIRE_DEVICE=1     a backend without a device is a failure, not a skip
 *
 * Case i draws from its own generator, seeded from (seed, i), and case i of a backend always tests
 * the same op: a failure reproduces with VG_CONFORMANCE_SEED and VG_CONFORMANCE_ONLY alone.
 * Every buffer sits at a random element offset inside a larger allocation; the bytes the op must
 * not write (stride gaps, the space around each buffer, every input) must come back bit for
 * bit. A failure that leaves the device unusable (VG_ERR_DEVICE: a kernel fault) ends the run.
 * Exit status: 0 pass, 1 failure, 77 no device (SKIP). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reference_ops.h"
#include "vg/vg_device.h"
#include "vg/vg_half.h"

#define SKIP_CODE 77
#define DEFAULT_SEED 20261122ull
#define DEFAULT_CASES 200
#define MAX_BUFS 8

/* ---- a small, seedable generator (splitmix64) ------------------------------------------------- */

typedef struct rng { uint64_t s; } rng;

static uint64_t rnext(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int64_t rint_in(rng *r, int64_t lo, int64_t hi) /* inclusive */
{
    return lo + (int64_t)(rnext(r) % (uint64_t)(hi - lo + 1));
}
static double runif(rng *r, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(rnext(r) >> 11) * (1.0 / 9007199254740992.0));
}
static int rchance(rng *r, double p) { return runif(r, 0, 1) < p; }

/* ---- buffers ----------------------------------------------------------------------------------- */

typedef struct buf {
    const char *name;
    vg_dtype t;          /* dtype uploaded (and read by the op) */
    vg_dtype tout;       /* dtype the op leaves in it (differs only for convert in place) */
    size_t off, n, cap;  /* op region [off, off + n) of an allocation of cap elements */
    unsigned char *raw0; /* the bytes uploaded */
    double *h;           /* raw0 decoded as t: what the reference reads */
    double *want;        /* output buffer: the expected contents, as tout */
    unsigned char *mask; /* output buffer: 1 where the op writes, 2 its scratch (any contents) */
    void *base, *d;      /* device allocation, and the pointer the op gets */
} buf;

typedef struct tcase {
    int index;
    vg_op_id op;
    vg_dtype t, t2; /* t2: gemm's dtype_c, convert's destination */
    int graph;
    char shape[512];
    int nb, out;    /* number of buffers; index of the one the op writes */
    buf b[MAX_BUFS];
    int64_t m, n, k, lda, ldb, ldc, ldr, rows, cols, ld, ld2, count;
    int heads, hd, nseg, bias, res, inplace; /* res: 0 none, 1 separate, 2 aliasing c */
    int gate;                                     /* gemm's norms of A: gated */
    int kv_heads, block_size, max_blocks, nslots; /* kv_store, paged_attention */
    int src_rows, taps;                           /* gather_weighted */
    int64_t ldx, xcols, xbias; /* rotary_paged_attention's norm_x: its stride and width, where the
                                * bias starts in its buffer (0: none) */
    double xeps;
    vg_activation act;
    double alpha, beta, value, eps, theta, scale;
    double term_scale; /* set by reference() where the result may cancel: the terms' magnitude */
} tcase;

typedef struct suite {
    vg_runtime *rt;
    vg_stream *s;
    uint64_t seed;
    int graphs;
    int verified[VG_OP_COUNT_], replayed[VG_OP_COUNT_], skipped[VG_OP_COUNT_];
} suite;

static suite S;

static size_t esize(vg_dtype t) { return vg_dtype_size(t); }

static void encode(vg_dtype t, double v, unsigned char *p)
{
    switch (t) {
    case VG_DTYPE_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case VG_DTYPE_BF16: { uint16_t h = vg_f32_to_bf16((float)v); memcpy(p, &h, 2); break; }
    case VG_DTYPE_F16: { uint16_t h = vg_f32_to_f16((float)v); memcpy(p, &h, 2); break; }
    case VG_DTYPE_I32: { int32_t i = (int32_t)v; memcpy(p, &i, 4); break; }
    case VG_DTYPE_I64: { int64_t i = (int64_t)v; memcpy(p, &i, 8); break; }
    default: *p = (unsigned char)v; break;
    }
}

static double decode(vg_dtype t, const unsigned char *p)
{
    switch (t) {
    case VG_DTYPE_F32: { float f; memcpy(&f, p, 4); return f; }
    case VG_DTYPE_BF16: { uint16_t h; memcpy(&h, p, 2); return vg_bf16_to_f32(h); }
    case VG_DTYPE_F16: { uint16_t h; memcpy(&h, p, 2); return vg_f16_to_f32(h); }
    case VG_DTYPE_I32: { int32_t i; memcpy(&i, p, 4); return i; }
    case VG_DTYPE_I64: { int64_t i; memcpy(&i, p, 8); return (double)i; }
    default: return *p;
    }
}

static int is_float(vg_dtype t) { return t == VG_DTYPE_F32 || t == VG_DTYPE_BF16 || t == VG_DTYPE_F16; }

/* Add a buffer of n elements at a random offset, with a random guard after it. */
static buf *add_buf(tcase *c, rng *r, const char *name, vg_dtype t, size_t n)
{
    buf *b = &c->b[c->nb++];
    memset(b, 0, sizeof *b);
    b->name = name;
    b->t = b->tout = t;
    b->n = n;
    b->off = (size_t)rint_in(r, 0, 7);
    b->cap = b->off + n + (size_t)rint_in(r, 0, 5);
    if (b->cap == 0) b->cap = 1;
    return b;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "conformance_random: out of host memory\n");
        exit(1);
    }
    return p;
}

/* A value of t: floats uniform in [-1, 1] (rounded to t), integers over their range. */
static double random_value(rng *r, vg_dtype t)
{
    switch (t) {
    case VG_DTYPE_I32: return (double)rint_in(r, -2000000000, 2000000000);
    case VG_DTYPE_I64: return (double)rint_in(r, -(1ll << 52), 1ll << 52);
    case VG_DTYPE_U8: return (double)rint_in(r, 0, 255);
    default: return ref_round(t, runif(r, -1.0, 1.0));
    }
}

static void fill_random(buf *b, rng *r)
{
    for (size_t i = 0; i < b->cap; i++) b->h[i] = random_value(r, b->t);
}

/* Index-like I32 contents: every element of the allocation in [lo, hi]. */
static void fill_ints(buf *b, rng *r, int64_t lo, int64_t hi)
{
    for (size_t i = 0; i < b->cap; i++) b->h[i] = (double)rint_in(r, lo, hi);
}

/* ---- the ops: shapes, contents, enqueue, reference ------------------------------------------------ */

static vg_dtype pick_dtype(rng *r, vg_op_id op)
{
    uint32_t have = 0;
    vg_runtime_op_support(S.rt, op, &have);
    have &= ref_catalogue_dtypes(op);
    if (!have) have = ref_catalogue_dtypes(op);
    vg_dtype list[VG_DTYPE_COUNT_];
    int n = 0;
    for (int t = 0; t < VG_DTYPE_COUNT_; t++)
        if (have & VG_DTYPE_BIT(t)) list[n++] = (vg_dtype)t;
    return list[rint_in(r, 0, n - 1)];
}

static int64_t pad(rng *r) { return rchance(r, 0.5) ? 0 : rint_in(r, 1, 9); }
/* GEMM cases shaped as real models pass them (aligned: every extent along memory and every row
 * stride a multiple of 8 elements, every buffer 16-byte aligned), for which the vendor libraries
 * pick other (vectorised, TMA) algorithms than for the odd shapes the other cases mostly have. */
static int64_t up8(int64_t v, int aligned) { return aligned ? (v + 7) / 8 * 8 : v; }
static int64_t pad8(rng *r, int aligned) { return aligned ? 8 * rint_in(r, 0, 1) : pad(r); }
static void align_bufs(tcase *c, int aligned)
{
    for (int i = 0; aligned && i < c->nb; i++) c->b[i].off = 0;
}

static int64_t small_rows(rng *r, int64_t hi) { return rchance(r, 0.05) ? 0 : rint_in(r, 1, hi); }

/* A paged batch's shape (paged_attention, rotary_paged_attention): heads (with lib_shaped, the
 * group sizes and head_dims of common checkpoints), block size, sequences, rows (a query row per
 * sequence or more), table width and the blocks (a few no table needs): their count. */
static int paged_shape(tcase *c, rng *r, int lib_shaped)
{
    static const int groups[] = {1, 2, 3, 4, 6, 7, 8};
    c->kv_heads = (int)rint_in(r, 1, 4);
    c->heads = c->kv_heads * (lib_shaped ? groups[rint_in(r, 0, 6)] : (int)rint_in(r, 1, 4));
    c->hd = lib_shaped ? (rchance(r, 0.5) ? 64 : 128)
                       : 8 * (rchance(r, 0.5) ? (int)rint_in(r, 1, 32) : (int)(2 * rint_in(r, 1, 8)));
    c->block_size = rchance(r, 0.5) ? (int)rint_in(r, 1, 9) : rchance(r, 0.5) ? 16 : 32;
    c->nseg = (int)rint_in(r, 1, 5); /* num_seqs */
    c->rows = c->nseg + rint_in(r, 0, rchance(r, 0.3) ? 40 : 4);
    int64_t ctx_max = c->rows + rint_in(r, 0, rchance(r, 0.2) ? 400 : 60);
    c->max_blocks = (int)((ctx_max + c->block_size - 1) / c->block_size) + (int)rint_in(r, 0, 2);
    const int nblocks = c->nseg * c->max_blocks + (int)rint_in(r, 0, 4);
    c->nslots = nblocks * c->block_size;
    return nblocks;
}

static const char *act_name(vg_activation a)
{
    static const char *const n[] = {"none", "gelu_erf", "gelu_tanh", "silu", "quick_gelu"};
    return (unsigned)a < 5 ? n[a] : "?";
}

/* Draw the op's parameters and declare its buffers. */
static void generate(tcase *c, rng *r)
{
    c->t = pick_dtype(r, c->op);
    c->t2 = c->t;
    switch (c->op) {
    case VG_OP_FILL:
        c->count = rchance(r, 0.05) ? 0 : rint_in(r, 1, 4100);
        c->value = is_float(c->t) ? ref_round(c->t, (float)runif(r, -100, 100)) : random_value(r, c->t);
        add_buf(c, r, "dst", c->t, (size_t)c->count);
        c->out = 0;
        snprintf(c->shape, sizeof c->shape, "count=%lld value=%.17g", (long long)c->count, c->value);
        break;
    case VG_OP_AXPBY:
        c->count = rchance(r, 0.05) ? 0 : rint_in(r, 1, 5000);
        c->alpha = (float)runif(r, -2, 2), c->beta = (float)runif(r, -2, 2);
        c->inplace = rchance(r, 0.25);
        if (!c->inplace) add_buf(c, r, "x", VG_DTYPE_F32, (size_t)c->count);
        add_buf(c, r, "y", VG_DTYPE_F32, (size_t)c->count);
        c->out = c->nb - 1;
        snprintf(c->shape, sizeof c->shape, "n=%lld alpha=%.9g beta=%.9g%s", (long long)c->count,
                 c->alpha, c->beta, c->inplace ? " x=y" : "");
        break;
    case VG_OP_GEMM: {
        const int aligned = rchance(r, 0.3);
        c->t2 = pick_dtype(r, c->op);
        c->m = rchance(r, 0.1) ? rint_in(r, 161, 400) : rint_in(r, 1, 160);
        c->n = up8(rchance(r, 0.1) ? rint_in(r, 161, 520) : rint_in(r, 1, 160), aligned);
        c->k = up8(rchance(r, 0.1) ? rint_in(r, 257, 1100) : rint_in(r, 1, 256), aligned);
        c->lda = c->k + pad8(r, aligned), c->ldb = c->k + pad8(r, aligned), c->ldc = c->n + pad8(r, aligned);
        c->act = (vg_activation)rint_in(r, 0, 4);
        c->bias = rchance(r, 0.5);
        c->res = (int)rint_in(r, 0, 2);
        if (c->res == 2 && c->act != VG_ACT_NONE) c->res = 1; /* aliasing needs no activation */
        c->ldr = c->res == 2 ? c->ldc : c->n + pad8(r, aligned);
        c->alpha = rchance(r, 0.3) ? 1.0 : (float)runif(r, 0.25, 2.0);
        add_buf(c, r, "a", c->t, (size_t)((c->m - 1) * c->lda + c->k));
        add_buf(c, r, "b", c->t, (size_t)((c->n - 1) * c->ldb + c->k));
        add_buf(c, r, "c", c->t2, (size_t)((c->m - 1) * c->ldc + c->n));
        c->out = 2;
        if (c->bias) add_buf(c, r, "bias", c->t, (size_t)c->n);
        if (c->res == 1) add_buf(c, r, "residual", c->t2, (size_t)((c->m - 1) * c->ldr + c->n));
        align_bufs(c, aligned);
        snprintf(c->shape, sizeof c->shape,
                 "dtype_c=%s m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldc=%lld act=%s alpha=%.9g "
                 "bias=%d residual=%s ldr=%lld", vg_dtype_name(c->t2), (long long)c->m,
                 (long long)c->n, (long long)c->k, (long long)c->lda, (long long)c->ldb,
                 (long long)c->ldc, act_name(c->act), c->alpha, c->bias,
                 c->res == 0 ? "none" : c->res == 1 ? "separate" : "aliasing c", (long long)c->ldr);
        break;
    }
    case VG_OP_GEMM_SILU_GATE: { /* decode-like m mostly; k a multiple of 8 mostly (skinny kernels) */
        const int aligned = rchance(r, 0.3);
        int64_t h = up8(rchance(r, 0.1) ? rint_in(r, 161, 400) : rint_in(r, 1, 160), aligned);
        c->t2 = pick_dtype(r, c->op);
        c->m = rchance(r, 0.2) ? rint_in(r, 65, 200) : rint_in(r, 1, 64);
        c->n = 2 * h;
        c->k = up8(rchance(r, 0.7) ? 8 * rint_in(r, 1, 140) : rint_in(r, 1, 300), aligned);
        c->lda = c->k + (rchance(r, 0.5) ? 0 : 8 * rint_in(r, 1, 3)), c->ldb = c->k + pad8(r, aligned);
        c->ldc = c->n + pad8(r, aligned);
        c->bias = rchance(r, 0.5);
        c->alpha = rchance(r, 0.5) ? 1.0 : (float)runif(r, 0.25, 2.0);
        add_buf(c, r, "a", c->t, (size_t)((c->m - 1) * c->lda + c->k));
        add_buf(c, r, "b", c->t, (size_t)((c->n - 1) * c->ldb + c->k));
        add_buf(c, r, "c", c->t2, (size_t)((c->m - 1) * c->ldc + c->n));
        c->out = 2;
        if (c->bias) add_buf(c, r, "bias", c->t, (size_t)c->n);
        align_bufs(c, aligned);
        snprintf(c->shape, sizeof c->shape,
                 "gate=silu dtype_c=%s m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldc=%lld alpha=%.9g "
                 "bias=%d", vg_dtype_name(c->t2), (long long)c->m, (long long)c->n, (long long)c->k,
                 (long long)c->lda, (long long)c->ldb, (long long)c->ldc, c->alpha, c->bias);
        break;
    }
    case VG_OP_GEMM_RMSNORM_A:        /* C = rmsnorm(A)·Bᵀ (+ bias, act, residual) or gated; */
    case VG_OP_GEMM_RMSNORM_A_UNIT: { /* norm_out after C; _UNIT: without a weight */
        const int aligned = rchance(r, 0.3), unit = c->op == VG_OP_GEMM_RMSNORM_A_UNIT;
        c->t2 = pick_dtype(r, c->op);
        /* a unit norm's own path is the gated one (where the device gates) */
        c->gate = (vg_runtime_op_support(S.rt, VG_OP_GEMM_SILU_GATE, NULL) & VG_OP_SUPPORTED) &&
                  rchance(r, unit ? 0.6 : 0.3);
        c->m = rchance(r, 0.2) ? rint_in(r, 65, 200) : rint_in(r, 1, 64);
        c->n = up8(rchance(r, 0.1) ? rint_in(r, 161, 520) : rint_in(r, 1, 160), aligned);
        if (c->gate) c->n *= 2;
        c->k = up8(rchance(r, 0.7) ? 8 * rint_in(r, 1, 140) : rint_in(r, 1, 300), aligned);
        c->lda = c->k, c->ldb = c->k + pad8(r, aligned), c->ldc = c->n + pad8(r, aligned);
        c->act = c->gate ? VG_ACT_NONE : (vg_activation)rint_in(r, 0, 4);
        c->bias = rchance(r, 0.5);
        c->res = c->gate ? 0 : (int)rint_in(r, 0, 2);
        if (c->res == 2 && c->act != VG_ACT_NONE) c->res = 1;
        c->ldr = c->res == 2 ? c->ldc : c->n + pad8(r, aligned);
        c->alpha = rchance(r, 0.5) ? 1.0 : (float)runif(r, 0.25, 2.0);
        c->eps = rchance(r, 0.5) ? 1e-6 : 1e-5;
        /* norm_out: m·k elements of dtype_ab after C, 16-byte aligned, counted in C's elements */
        size_t es_c = esize(c->t2), cn = (size_t)((c->m - 1) * c->ldc + c->n);
        size_t at = ((cn * es_c + 15) / 16) * 16 / es_c;
        c->count = (int64_t)at;
        add_buf(c, r, "a", c->t, (size_t)((c->m - 1) * c->lda + c->k));
        add_buf(c, r, "b", c->t, (size_t)((c->n - 1) * c->ldb + c->k));
        add_buf(c, r, "c,norm_out", c->t2, at + ((size_t)(c->m * c->k) * esize(c->t) + es_c - 1) / es_c);
        c->b[2].off = 0; /* norm_out's alignment is counted from the allocation */
        c->b[2].cap = c->b[2].n;
        c->out = 2;
        if (!unit) add_buf(c, r, "norm_w", c->t, (size_t)c->k);
        if (c->bias) add_buf(c, r, "bias", c->t, (size_t)c->n);
        if (c->res == 1) add_buf(c, r, "residual", c->t2, (size_t)((c->m - 1) * c->ldr + c->n));
        align_bufs(c, aligned);
        snprintf(c->shape, sizeof c->shape,
                 "norm%s%s dtype_c=%s m=%lld n=%lld k=%lld ldb=%lld ldc=%lld act=%s alpha=%.9g eps=%g "
                 "bias=%d residual=%s ldr=%lld", unit ? " (unit)" : "", c->gate ? " gate=silu" : "",
                 vg_dtype_name(c->t2), (long long)c->m,
                 (long long)c->n, (long long)c->k, (long long)c->ldb, (long long)c->ldc,
                 act_name(c->act), c->alpha, c->eps, c->bias,
                 c->res == 0 ? "none" : c->res == 1 ? "separate" : "aliasing c", (long long)c->ldr);
        break;
    }
    case VG_OP_GATHER_ROWS: {
        int64_t src_rows = rint_in(r, 1, 100);
        c->rows = small_rows(r, 120), c->cols = rint_in(r, 1, 200);
        c->ld = src_rows; /* remembered for the index range */
        add_buf(c, r, "src", c->t, (size_t)(src_rows * c->cols));
        add_buf(c, r, "idx", VG_DTYPE_I32, (size_t)c->rows);
        add_buf(c, r, "dst", c->t, (size_t)(c->rows * c->cols));
        c->out = 2;
        snprintf(c->shape, sizeof c->shape, "src_rows=%lld rows=%lld cols=%lld", (long long)src_rows,
                 (long long)c->rows, (long long)c->cols);
        break;
    }
    case VG_OP_RMSNORM:
        c->rows = small_rows(r, 64), c->cols = rint_in(r, 1, 320);
        c->eps = (float)(rchance(r, 0.2) ? 0.5 : rchance(r, 0.5) ? 1e-6 : 1e-5);
        c->inplace = rchance(r, 0.3);
        add_buf(c, r, "x", c->t, (size_t)(c->rows * c->cols));
        add_buf(c, r, "w", c->t, (size_t)c->cols);
        if (!c->inplace) add_buf(c, r, "out", c->t, (size_t)(c->rows * c->cols));
        c->out = c->inplace ? 0 : 2;
        snprintf(c->shape, sizeof c->shape, "rows=%lld cols=%lld eps=%g%s", (long long)c->rows,
                 (long long)c->cols, c->eps, c->inplace ? " out=x" : "");
        break;
    case VG_OP_ROTARY_2D:
        c->rows = small_rows(r, 48), c->heads = (int)rint_in(r, 1, 4), c->hd = 4 * (int)rint_in(r, 1, 32);
        c->ld = (int64_t)c->heads * c->hd + pad(r);
        c->theta = rchance(r, 0.6) ? 10000.0 : rchance(r, 0.5) ? 500.0 : 1.0;
        add_buf(c, r, "x", c->t, (size_t)(c->rows ? (c->rows - 1) * c->ld + (int64_t)c->heads * c->hd : 0));
        add_buf(c, r, "pos", VG_DTYPE_I32, (size_t)(2 * c->rows));
        c->out = 0;
        snprintf(c->shape, sizeof c->shape, "rows=%lld heads=%d head_dim=%d ld=%lld theta=%g",
                 (long long)c->rows, c->heads, c->hd, (long long)c->ld, c->theta);
        break;
    case VG_OP_ATTENTION:
    case VG_OP_ATTENTION_ROTARY: {
        static const int common[] = {16, 32, 64, 72, 80, 96, 128};
        int rot = c->op == VG_OP_ATTENTION_ROTARY;
        int big = rchance(r, 0.12); /* several key and query tiles of a GPU kernel */
        c->rows = big ? rint_in(r, 97, 600) : small_rows(r, 96), c->heads = (int)rint_in(r, 1, 4);
        c->hd = rchance(r, 0.5) || big ? common[rint_in(r, 0, 6)] : (int)rint_in(r, 1, VG_ATTENTION_MAX_HEAD_DIM);
        if (rot) c->hd = (c->hd + 3) / 4 * 4;
        int64_t hidden = (int64_t)c->heads * c->hd;
        c->ld = 3 * hidden + pad(r), c->ld2 = hidden + pad(r);
        c->nseg = (int)rint_in(r, 1, 8);
        c->scale = (float)(runif(r, 0.5, 2.0) / sqrt((double)c->hd));
        c->theta = rchance(r, 0.7) ? 10000.0 : 100.0;
        add_buf(c, r, "qkv", c->t, (size_t)(c->rows ? (c->rows - 1) * c->ld + 3 * hidden : 0));
        add_buf(c, r, "cu_seqlens", VG_DTYPE_I32, (size_t)c->nseg + 1);
        add_buf(c, r, "out", c->t, (size_t)(c->rows ? (c->rows - 1) * c->ld2 + hidden : 0));
        c->out = 2;
        if (rot) add_buf(c, r, "pos", VG_DTYPE_I32, (size_t)(2 * c->rows));
        snprintf(c->shape, sizeof c->shape,
                 "rows=%lld heads=%d head_dim=%d ld_qkv=%lld ld_out=%lld num_segments=%d scale=%.9g%s",
                 (long long)c->rows, c->heads, c->hd, (long long)c->ld, (long long)c->ld2, c->nseg,
                 c->scale, rot ? (c->theta > 1000 ? " theta=10000" : " theta=100") : "");
        break;
    }
    case VG_OP_SILU_MUL:
        c->rows = small_rows(r, 64), c->cols = rint_in(r, 1, 300);
        c->ld = 2 * c->cols + pad(r), c->ld2 = c->cols + pad(r);
        add_buf(c, r, "in", c->t, (size_t)(c->rows ? (c->rows - 1) * c->ld + 2 * c->cols : 0));
        add_buf(c, r, "out", c->t, (size_t)(c->rows ? (c->rows - 1) * c->ld2 + c->cols : 0));
        c->out = 1;
        snprintf(c->shape, sizeof c->shape, "rows=%lld cols=%lld ld_in=%lld ld_out=%lld",
                 (long long)c->rows, (long long)c->cols, (long long)c->ld, (long long)c->ld2);
        break;
    case VG_OP_CONVERT:
        c->t2 = pick_dtype(r, c->op);
        c->count = rchance(r, 0.05) ? 0 : rint_in(r, 1, 3000);
        c->inplace = esize(c->t) == esize(c->t2) && rchance(r, 0.3);
        add_buf(c, r, "src", c->t, (size_t)c->count);
        if (c->inplace) {
            c->b[0].tout = c->t2;
            c->out = 0;
        } else {
            add_buf(c, r, "dst", c->t2, (size_t)c->count);
            c->out = 1;
        }
        snprintf(c->shape, sizeof c->shape, "to %s count=%lld%s", vg_dtype_name(c->t2),
                 (long long)c->count, c->inplace ? " in place" : "");
        break;
    case VG_OP_ROTARY:
        c->rows = small_rows(r, 48), c->heads = (int)rint_in(r, 1, 6), c->hd = 2 * (int)rint_in(r, 1, 64);
        c->ld = (int64_t)c->heads * c->hd + pad(r);
        c->theta = rchance(r, 0.6) ? 10000.0 : rchance(r, 0.5) ? 1000000.0 : 10.0;
        add_buf(c, r, "x", c->t, (size_t)(c->rows ? (c->rows - 1) * c->ld + (int64_t)c->heads * c->hd : 0));
        add_buf(c, r, "pos", VG_DTYPE_I32, (size_t)c->rows);
        c->out = 0;
        snprintf(c->shape, sizeof c->shape, "rows=%lld heads=%d head_dim=%d ld=%lld theta=%g",
                 (long long)c->rows, c->heads, c->hd, (long long)c->ld, c->theta);
        break;
    case VG_OP_RMSNORM_HEADS:
        c->rows = small_rows(r, 48), c->heads = (int)rint_in(r, 1, 8), c->hd = (int)rint_in(r, 1, 256);
        c->ld = (int64_t)c->heads * c->hd + pad(r);
        c->eps = (float)(rchance(r, 0.2) ? 0.5 : rchance(r, 0.5) ? 1e-6 : 1e-5);
        add_buf(c, r, "x", c->t, (size_t)(c->rows ? (c->rows - 1) * c->ld + (int64_t)c->heads * c->hd : 0));
        add_buf(c, r, "w", c->t, (size_t)c->hd);
        c->out = 0;
        snprintf(c->shape, sizeof c->shape, "rows=%lld heads=%d head_dim=%d ld=%lld eps=%g",
                 (long long)c->rows, c->heads, c->hd, (long long)c->ld, c->eps);
        break;
    case VG_OP_KV_STORE: {
        c->rows = small_rows(r, 40), c->kv_heads = (int)rint_in(r, 1, 4);
        c->hd = rchance(r, 0.5) ? 8 * (int)rint_in(r, 1, 32) : (int)rint_in(r, 1, 130);
        int64_t width = (int64_t)c->kv_heads * c->hd;
        c->ld = width + pad(r), c->ld2 = width + pad(r);
        c->nslots = (int)c->rows + (int)rint_in(r, 1, 40);
        add_buf(c, r, "k", c->t, (size_t)(c->rows ? (c->rows - 1) * c->ld + width : 0));
        add_buf(c, r, "v", c->t, (size_t)(c->rows ? (c->rows - 1) * c->ld2 + width : 0));
        add_buf(c, r, "slots", VG_DTYPE_I32, (size_t)c->rows);
        add_buf(c, r, "k_cache,v_cache", c->t, (size_t)(2 * (int64_t)c->nslots * width));
        c->out = 3;
        snprintf(c->shape, sizeof c->shape, "rows=%lld kv_heads=%d head_dim=%d ld_k=%lld ld_v=%lld "
                 "slots=%d (v_cache follows k_cache)", (long long)c->rows, c->kv_heads, c->hd,
                 (long long)c->ld, (long long)c->ld2, c->nslots);
        break;
    }
    case VG_OP_ROTARY_KV_STORE: { /* one allocation: qkv rows, then k_cache, then v_cache */
        c->rows = small_rows(r, 40), c->kv_heads = (int)rint_in(r, 1, 4);
        c->heads = c->kv_heads * (int)rint_in(r, 1, 8); /* groups of 1 to 8 query heads: 3 and 7 too */
        c->hd = rchance(r, 0.5) ? 8 * (int)rint_in(r, 1, 32) : 2 * (int)rint_in(r, 1, 65);
        c->ld = (int64_t)(c->heads + 2 * c->kv_heads) * c->hd + pad(r);
        c->nslots = (int)c->rows + (int)rint_in(r, 1, 40);
        c->bias = rchance(r, 0.5); /* q/k norms (Qwen3) */
        c->eps = rchance(r, 0.5) ? 1e-6 : 1e-5;
        c->theta = rchance(r, 0.6) ? 10000.0 : 1000000.0;
        int64_t width = (int64_t)c->kv_heads * c->hd;
        int64_t qkvn = c->rows ? (c->rows - 1) * c->ld + (int64_t)(c->heads + 2 * c->kv_heads) * c->hd : 0;
        c->count = qkvn; /* where the caches start */
        add_buf(c, r, "qkv,k_cache,v_cache", c->t, (size_t)(qkvn + 2 * (int64_t)c->nslots * width));
        add_buf(c, r, "pos", VG_DTYPE_I32, (size_t)c->rows);
        add_buf(c, r, "slots", VG_DTYPE_I32, (size_t)c->rows);
        add_buf(c, r, "q_norm,k_norm", c->t, (size_t)(2 * c->hd));
        c->out = 0;
        snprintf(c->shape, sizeof c->shape, "rows=%lld heads=%d kv_heads=%d head_dim=%d ld=%lld "
                 "slots=%d norms=%s eps=%g theta=%g (the caches follow qkv)", (long long)c->rows,
                 c->heads, c->kv_heads, c->hd, (long long)c->ld, c->nslots, c->bias ? "yes" : "no",
                 c->eps, c->theta);
        break;
    }
    case VG_OP_PAGED_ATTENTION: {
        /* a third shaped as decoders are (group sizes and head_dims of common checkpoints, packed
         * outputs, aligned buffers): what a backend's kernel library may take */
        const int lib_shaped = rchance(r, 0.35);
        const int nblocks = paged_shape(c, r, lib_shaped);
        int64_t hidden = (int64_t)c->heads * c->hd, width = (int64_t)c->kv_heads * c->hd;
        c->ld = hidden + pad(r), c->ld2 = hidden + pad(r);
        c->scale = (float)(runif(r, 0.5, 2.0) / sqrt((double)c->hd));
        if (rchance(r, 0.1)) c->scale = -c->scale; /* a kernel's running maximum must be of scaled scores */
        if (lib_shaped) c->ld = hidden + 8 * rint_in(r, 0, 2), c->ld2 = hidden;
        add_buf(c, r, "q", c->t, (size_t)((c->rows - 1) * c->ld + hidden));
        add_buf(c, r, "k_cache", c->t, (size_t)((int64_t)c->nslots * width));
        add_buf(c, r, "v_cache", c->t, (size_t)((int64_t)c->nslots * width));
        add_buf(c, r, "block_tables", VG_DTYPE_I32, (size_t)c->nseg * (size_t)c->max_blocks);
        add_buf(c, r, "context_lens", VG_DTYPE_I32, (size_t)c->nseg);
        add_buf(c, r, "query_start", VG_DTYPE_I32, (size_t)c->nseg + 1);
        add_buf(c, r, "out", c->t, (size_t)((c->rows - 1) * c->ld2 + hidden));
        c->out = 6;
        if (lib_shaped)
            for (int i = 0; i < 7; i++) c->b[i].off = 0; /* every buffer at its allocation's start */
        snprintf(c->shape, sizeof c->shape, "rows=%lld num_seqs=%d heads=%d kv_heads=%d head_dim=%d "
                 "block_size=%d max_blocks=%d blocks=%d ld_q=%lld ld_out=%lld scale=%.9g",
                 (long long)c->rows, c->nseg, c->heads, c->kv_heads, c->hd, c->block_size,
                 c->max_blocks, nblocks, (long long)c->ld, (long long)c->ld2, c->scale);
        break;
    }
    case VG_OP_ROTARY_PAGED_ATTENTION:
    case VG_OP_ROTARY_PAGED_ATTENTION_NORM_X: {
        /* one allocation: qkv rows, out rows, k_cache, v_cache; half the cases shaped as decoders
         * are (aligned regions, common group sizes and head_dims): what a fused kernel may take;
         * with norm_x (op table version 10) one more: its rows, then the bias (or none) */
        const int lib_shaped = rchance(r, 0.5);
        (void)paged_shape(c, r, lib_shaped);
        int64_t hidden = (int64_t)c->heads * c->hd, width = (int64_t)c->kv_heads * c->hd;
        c->ld = (int64_t)(c->heads + 2 * c->kv_heads) * c->hd + (lib_shaped ? 8 * rint_in(r, 0, 1) : pad(r));
        c->ld2 = lib_shaped ? hidden : hidden + pad(r);
        c->scale = (float)(runif(r, 0.5, 2.0) / sqrt((double)c->hd));
        if (rchance(r, 0.1)) c->scale = -c->scale;
        c->bias = rchance(r, 0.5); /* q/k norms (Qwen3) */
        c->eps = rchance(r, 0.5) ? 1e-6 : 1e-5;
        c->theta = rchance(r, 0.6) ? 10000.0 : 1000000.0;
        /* where out (count) and the caches (cols) start: 16-byte aligned when lib_shaped */
        c->count = up8((c->rows - 1) * c->ld + (int64_t)(c->heads + 2 * c->kv_heads) * c->hd, lib_shaped);
        c->cols = up8(c->count + (c->rows - 1) * c->ld2 + hidden, lib_shaped);
        add_buf(c, r, "qkv,out,k_cache,v_cache", c->t, (size_t)(c->cols + 2 * (int64_t)c->nslots * width));
        add_buf(c, r, "pos", VG_DTYPE_I32, (size_t)c->rows);
        add_buf(c, r, "slots", VG_DTYPE_I32, (size_t)c->rows);
        add_buf(c, r, "q_norm,k_norm", c->t, (size_t)(2 * c->hd));
        add_buf(c, r, "block_tables", VG_DTYPE_I32, (size_t)c->nseg * (size_t)c->max_blocks);
        add_buf(c, r, "context_lens", VG_DTYPE_I32, (size_t)c->nseg);
        add_buf(c, r, "query_start", VG_DTYPE_I32, (size_t)c->nseg + 1);
        char folded[160] = "";
        if (c->op == VG_OP_ROTARY_PAGED_ATTENTION_NORM_X) { /* mostly a model's hidden size */
            c->xcols = up8(rchance(r, 0.6) ? 8 * rint_in(r, 1, 160) : rint_in(r, 1, 1300), lib_shaped);
            c->ldx = c->xcols + (lib_shaped ? 8 * rint_in(r, 0, 1) : pad(r));
            c->xeps = (float)(rchance(r, 0.2) ? 0.5 : rchance(r, 0.5) ? 1e-6 : 1e-5);
            const int64_t xn = (c->rows - 1) * c->ldx + c->xcols;
            c->xbias = rchance(r, 0.5) ? up8(xn + pad(r), lib_shaped) : 0;
            add_buf(c, r, c->xbias ? "norm_x,qkv_bias" : "norm_x", c->t,
                    (size_t)(c->xbias ? c->xbias + (int64_t)(c->heads + 2 * c->kv_heads) * c->hd : xn));
            snprintf(folded, sizeof folded, " norm_x_cols=%lld ld_norm_x=%lld norm_x_eps=%g qkv_bias=%s",
                     (long long)c->xcols, (long long)c->ldx, c->xeps, c->xbias ? "yes" : "no");
        }
        c->out = 0;
        align_bufs(c, lib_shaped);
        snprintf(c->shape, sizeof c->shape, "rows=%lld num_seqs=%d heads=%d kv_heads=%d head_dim=%d "
                 "block_size=%d max_blocks=%d slots=%d ld=%lld ld_out=%lld scale=%.9g norms=%s eps=%g "
                 "theta=%g (out at %lld, the caches at %lld)%s", (long long)c->rows, c->nseg, c->heads,
                 c->kv_heads, c->hd, c->block_size, c->max_blocks, c->nslots, (long long)c->ld,
                 (long long)c->ld2, c->scale, c->bias ? "yes" : "no", c->eps, c->theta, (long long)c->count,
                 (long long)c->cols, folded);
        break;
    }
    case VG_OP_ARGMAX:
        c->rows = small_rows(r, 24);
        c->cols = rchance(r, 0.3) ? rint_in(r, 1000, 40000) : rint_in(r, 1, 300);
        c->ld = c->cols + pad(r);
        add_buf(c, r, "x", c->t, (size_t)(c->rows ? (c->rows - 1) * c->ld + c->cols : 0));
        add_buf(c, r, "out", VG_DTYPE_I32, (size_t)c->rows);
        c->out = 1;
        snprintf(c->shape, sizeof c->shape, "rows=%lld cols=%lld ld=%lld", (long long)c->rows,
                 (long long)c->cols, (long long)c->ld);
        break;
    case VG_OP_LAYERNORM:
        c->rows = small_rows(r, 64);
        c->cols = rchance(r, 0.15) ? rint_in(r, 1000, 6000) : rint_in(r, 1, 320);
        c->eps = (float)(rchance(r, 0.2) ? 0.5 : rchance(r, 0.5) ? 1e-6 : 1e-5);
        c->bias = rchance(r, 0.7);
        c->inplace = rchance(r, 0.3);
        add_buf(c, r, "x", c->t, (size_t)(c->rows * c->cols));
        add_buf(c, r, "w", c->t, (size_t)c->cols);
        if (c->bias) add_buf(c, r, "b", c->t, (size_t)c->cols);
        if (!c->inplace) add_buf(c, r, "out", c->t, (size_t)(c->rows * c->cols));
        c->out = c->inplace ? 0 : c->nb - 1;
        snprintf(c->shape, sizeof c->shape, "rows=%lld cols=%lld eps=%g bias=%d%s", (long long)c->rows,
                 (long long)c->cols, c->eps, c->bias, c->inplace ? " out=x" : "");
        break;
    case VG_OP_GATHER_WEIGHTED:
        c->src_rows = (int)rint_in(r, 1, 300);
        c->rows = small_rows(r, 96);
        c->cols = rchance(r, 0.2) ? rint_in(r, 300, 1200) : rint_in(r, 1, 200);
        c->taps = rchance(r, 0.5) ? 4 : (int)rint_in(r, 1, VG_GATHER_MAX_TAPS);
        add_buf(c, r, "src", c->t, (size_t)c->src_rows * (size_t)c->cols);
        add_buf(c, r, "idx", VG_DTYPE_I32, (size_t)(c->rows * c->taps));
        add_buf(c, r, "w", VG_DTYPE_F32, (size_t)(c->rows * c->taps));
        add_buf(c, r, "dst", c->t, (size_t)(c->rows * c->cols));
        c->out = 3;
        snprintf(c->shape, sizeof c->shape, "src_rows=%d rows=%lld cols=%lld taps=%d", c->src_rows,
                 (long long)c->rows, (long long)c->cols, c->taps);
        break;
    default:
        break;
    }
}

/* A random permutation of [0, n) in p. */
static void permutation(rng *r, int32_t *p, int n)
{
    for (int i = 0; i < n; i++) p[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rint_in(r, 0, i);
        int32_t t = p[i];
        p[i] = p[j], p[j] = t;
    }
}

/* A paged batch's rows split among its sequences (query_start), at least one each, the rest
 * padding, and each sequence's context (context_lens) at least its rows, within the table's
 * reach: the rows used. */
static int64_t split_rows(tcase *c, rng *r, buf *qs, buf *cl)
{
    int64_t used = rint_in(r, c->nseg, c->rows), left = used;
    double *q = qs->h + qs->off;
    q[0] = 0;
    for (int s = 0; s < c->nseg; s++) {
        int64_t n = s == c->nseg - 1 ? left : rint_in(r, 1, left - (c->nseg - 1 - s));
        q[s + 1] = q[s] + (double)n;
        left -= n;
        int64_t reach = (int64_t)c->max_blocks * c->block_size;
        cl->h[cl->off + (size_t)s] = (double)(n + rint_in(r, 0, reach - n));
    }
    return used;
}

/* New contents for every buffer (inputs, outputs, gaps and guards alike). */
static void randomise(tcase *c, rng *r)
{
    for (int i = 0; i < c->nb; i++) fill_random(&c->b[i], r);
    switch (c->op) {
    case VG_OP_GATHER_ROWS:
        fill_ints(&c->b[1], r, 0, c->ld - 1);
        break;
    case VG_OP_ROTARY_2D:
        fill_ints(&c->b[1], r, 0, 64);
        break;
    case VG_OP_ATTENTION:
    case VG_OP_ATTENTION_ROTARY: {
        buf *cu = &c->b[1];
        fill_ints(cu, r, 0, c->rows); /* guards included: any value */
        double *v = cu->h + cu->off;
        v[0] = 0, v[c->nseg] = (double)c->rows;
        for (int i = 1; i < c->nseg; i++) v[i] = (double)rint_in(r, 0, c->rows);
        for (int i = 1; i < c->nseg; i++) /* sort the inner bounds; equal ones are empty segments */
            for (int j = i; j > 1 && v[j - 1] > v[j]; j--) {
                double t = v[j];
                v[j] = v[j - 1], v[j - 1] = t;
            }
        if (c->op == VG_OP_ATTENTION_ROTARY) fill_ints(&c->b[3], r, 0, 64);
        break;
    }
    case VG_OP_ROTARY:
        fill_ints(&c->b[1], r, 0, 500);
        break;
    case VG_OP_KV_STORE: /* distinct slots (two rows never write one slot), some negative */
    case VG_OP_ROTARY_KV_STORE: {
        int32_t *perm = xcalloc((size_t)c->nslots, sizeof *perm);
        permutation(r, perm, c->nslots);
        if (c->op == VG_OP_ROTARY_KV_STORE) fill_ints(&c->b[1], r, 0, 500); /* positions */
        buf *sl = &c->b[2];
        fill_ints(sl, r, -5, c->nslots - 1);
        for (int64_t i = 0; i < c->rows; i++)
            sl->h[sl->off + (size_t)i] = rchance(r, 0.2) ? -(double)rint_in(r, 1, 1000) : perm[i];
        free(perm);
        break;
    }
    case VG_OP_PAGED_ATTENTION: {
        buf *bt = &c->b[3], *cl = &c->b[4], *qs = &c->b[5];
        fill_ints(bt, r, 0, c->nslots / c->block_size - 1); /* blocks may be shared (a common prefix) */
        fill_ints(cl, r, 0, 1000);
        fill_ints(qs, r, 0, c->rows);
        split_rows(c, r, qs, cl);
        break;
    }
    case VG_OP_ROTARY_PAGED_ATTENTION:
    case VG_OP_ROTARY_PAGED_ATTENTION_NORM_X: {
        /* rows split among the sequences as for paged_attention; every (sequence, block) its own
         * block, each new token's slot where its table puts its position, padding rows with no
         * slot or one no sequence owns; rotary positions the cache positions or shifted */
        buf *pos = &c->b[1], *sl = &c->b[2], *bt = &c->b[4], *cl = &c->b[5], *qs = &c->b[6];
        const int bs = c->block_size, nblocks = c->nslots / bs, owned = c->nseg * c->max_blocks;
        int32_t *perm = xcalloc((size_t)nblocks, sizeof *perm);
        permutation(r, perm, nblocks);
        fill_ints(bt, r, 0, nblocks - 1);
        for (int i = 0; i < owned; i++) bt->h[bt->off + (size_t)i] = perm[i];
        fill_ints(cl, r, 0, 1000);
        fill_ints(qs, r, 0, c->rows);
        fill_ints(pos, r, 0, 500);
        fill_ints(sl, r, -5, -1);
        const int64_t shift = rchance(r, 0.5) ? 0 : rint_in(r, 1, 500);
        const int64_t used = split_rows(c, r, qs, cl);
        int64_t spare = (int64_t)owned * bs;
        const double *q = qs->h + qs->off;
        for (int sq = 0; sq < c->nseg; sq++) {
            const int64_t n = (int64_t)(q[sq + 1] - q[sq]), ctx = (int64_t)cl->h[cl->off + (size_t)sq];
            for (int64_t j = 0; j < n; j++) {
                int64_t p = ctx - n + j, row = (int64_t)q[sq] + j;
                sl->h[sl->off + (size_t)row] = (double)(perm[sq * c->max_blocks + p / bs] * bs + p % bs);
                pos->h[pos->off + (size_t)row] = (double)(p + shift);
            }
        }
        for (int64_t row = used; row < c->rows; row++) /* padding: a slot of the spare blocks, or none */
            if (spare < (int64_t)c->nslots && rchance(r, 0.3)) {
                int64_t at = spare++;
                sl->h[sl->off + (size_t)row] = (double)(perm[at / bs] * bs + at % bs);
            }
        free(perm);
        /* with norm_x, each row and the projection of it at a scale of its own (2^-3 to 2^3), as
         * hidden states differ: a row scaled with another row's 1/rms shows */
        for (int64_t row = 0; c->op == VG_OP_ROTARY_PAGED_ATTENTION_NORM_X && row < c->rows; row++) {
            const double f = ldexp(1.0, (int)rint_in(r, -3, 3));
            double *x = c->b[7].h + c->b[7].off + (size_t)(row * c->ldx), *qkv = c->b[0].h + c->b[0].off + (size_t)(row * c->ld);
            for (int64_t e = 0; e < c->xcols; e++) x[e] = ref_round(c->t, f * x[e]);
            for (int64_t e = 0; e < (int64_t)(c->heads + 2 * c->kv_heads) * c->hd; e++) qkv[e] = ref_round(c->t, f * qkv[e]);
        }
        break;
    }
    case VG_OP_ARGMAX: /* ties: the largest value a float input holds, more than once in a row */
        for (int64_t row = 0; row < c->rows; row++)
            if (rchance(r, 0.5)) {
                double *x = c->b[0].h + c->b[0].off + (size_t)(row * c->ld);
                x[rint_in(r, 0, c->cols - 1)] = 1.0;
                x[rint_in(r, 0, c->cols - 1)] = 1.0;
            }
        break;
    case VG_OP_GATHER_WEIGHTED: /* mostly inside the table, some indices just outside it */
        fill_ints(&c->b[1], r, -2, c->src_rows + 1);
        break;
    case VG_OP_CONVERT: { /* a wide range, and values F16 stores as subnormals */
        buf *src = &c->b[0];
        for (size_t i = 0; i < src->cap; i++) {
            double v = runif(r, -1, 1) * (rchance(r, 0.2) ? 1e-5 : rchance(r, 0.5) ? 3000.0 : 1.0);
            src->h[i] = ref_round(src->t, v);
        }
        break;
    }
    default:
        break;
    }
    for (int i = 0; i < c->nb; i++) {
        buf *b = &c->b[i];
        for (size_t j = 0; j < b->cap; j++) encode(b->t, b->h[j], b->raw0 + j * esize(b->t));
    }
}

static int32_t *ints_of(const buf *b)
{
    int32_t *p = xcalloc(b->n, sizeof *p);
    for (size_t i = 0; i < b->n; i++) p[i] = (int32_t)b->h[b->off + i];
    return p;
}

static void mark_rows(buf *o, int64_t rows, int64_t ld, int64_t width)
{
    for (int64_t r = 0; r < rows; r++)
        memset(o->mask + o->off + (size_t)(r * ld), 1, (size_t)width);
}

/* A gated gemm's expected output (gemm_silu_gate's contract, on A as given): the gate half written,
 * the up half scratch the device may overwrite. The error follows the product P's (rounded to
 * dtype_c by a device that gates in a second pass): |δ| <= δP·(|up| + |silu(gate)|), so the scale
 * is max|P|². */
static void gated_reference(tcase *c, buf *o, const double *a, int64_t lda, const double *bias, double *w)
{
    double most = ref_gemm_silu_gate(c->m, c->n, c->k, c->alpha, a, lda, c->b[1].h + c->b[1].off, c->ldb, bias, w,
                                     c->ldc);
    c->term_scale = most * most;
    mark_rows(o, c->m, c->ldc, c->n / 2);
    for (int64_t i = 0; i < c->m; i++)
        memset(o->mask + o->off + (size_t)(i * c->ldc + c->n / 2), 2, (size_t)(c->n / 2));
}

/* The expected contents of the output buffer, and where the op writes. */
static void reference(tcase *c)
{
    buf *o = &c->b[c->out];
    /* unmasked elements are compared as bytes; the starting values matter only to in-place ops */
    for (size_t i = 0; i < o->cap; i++) o->want[i] = o->h[i];
    memset(o->mask, 0, o->cap);
    double *w = o->want + o->off;
    const buf *b = c->b;
    switch (c->op) {
    case VG_OP_FILL:
        for (int64_t i = 0; i < c->count; i++) w[i] = c->value;
        mark_rows(o, 1, 0, c->count);
        break;
    case VG_OP_AXPBY: {
        /* x = y with alpha close to -beta cancels: the device's rounding is relative to the terms */
        const double *x = c->inplace ? w : b[0].h + b[0].off;
        double mx = 0, my = 0;
        for (int64_t i = 0; i < c->count; i++) mx = fmax(mx, fabs(x[i])), my = fmax(my, fabs(w[i]));
        c->term_scale = fabs(c->alpha) * mx + fabs(c->beta) * my;
        ref_axpby((size_t)c->count, c->alpha, x, c->beta, w);
        mark_rows(o, 1, 0, c->count);
        break;
    }
    case VG_OP_GEMM: {
        const double *bias = c->bias ? b[3].h + b[3].off : NULL;
        const double *res = c->res == 2 ? w : c->res == 1 ? b[c->nb - 1].h + b[c->nb - 1].off : NULL;
        ref_gemm(c->m, c->n, c->k, c->alpha, b[0].h + b[0].off, c->lda, b[1].h + b[1].off, c->ldb,
                 bias, res, c->ldr, c->act, w, c->ldc);
        mark_rows(o, c->m, c->ldc, c->n);
        break;
    }
    case VG_OP_GEMM_SILU_GATE:
        gated_reference(c, o, b[0].h + b[0].off, c->lda, c->bias ? b[3].h + b[3].off : NULL, w);
        break;
    case VG_OP_GEMM_RMSNORM_A:
    case VG_OP_GEMM_RMSNORM_A_UNIT: {
        const int unit = c->op == VG_OP_GEMM_RMSNORM_A_UNIT;
        double *an = xcalloc((size_t)(c->m * c->k), sizeof *an), *ones = xcalloc((size_t)c->k, sizeof *ones);
        for (int64_t i = 0; i < c->k; i++) ones[i] = 1.0;
        ref_rmsnorm(b[0].h + b[0].off, unit ? ones : b[3].h + b[3].off, an, c->m, c->k, c->eps);
        const int bi = unit ? 3 : 4;
        const double *bias = c->bias ? b[bi].h + b[bi].off : NULL;
        const double *res = c->res == 2 ? w : c->res == 1 ? b[c->nb - 1].h + b[c->nb - 1].off : NULL;
        if (c->gate) { /* as gemm_silu_gate's, on the normalised A */
            gated_reference(c, o, an, c->k, bias, w);
        } else {
            ref_gemm(c->m, c->n, c->k, c->alpha, an, c->k, b[1].h + b[1].off, c->ldb, bias, res, c->ldr,
                     c->act, w, c->ldc);
            mark_rows(o, c->m, c->ldc, c->n);
        }
        free(an);
        free(ones);
        memset(o->mask + c->count, 2, o->cap - (size_t)c->count); /* norm_out: the op's scratch */
        break;
    }
    case VG_OP_GATHER_ROWS: {
        int32_t *idx = ints_of(&b[1]);
        ref_gather_rows(w, b[0].h + b[0].off, idx, c->rows, c->cols);
        mark_rows(o, 1, 0, c->rows * c->cols);
        free(idx);
        break;
    }
    case VG_OP_RMSNORM:
        ref_rmsnorm(c->inplace ? w : b[0].h + b[0].off, b[1].h + b[1].off, w, c->rows, c->cols, c->eps);
        mark_rows(o, 1, 0, c->rows * c->cols);
        break;
    case VG_OP_ROTARY_2D: {
        int32_t *pos = ints_of(&b[1]);
        ref_rotary_2d(w, c->ld, c->rows, c->heads, c->hd, pos, c->theta);
        mark_rows(o, c->rows, c->ld, (int64_t)c->heads * c->hd);
        free(pos);
        break;
    }
    case VG_OP_ATTENTION:
    case VG_OP_ATTENTION_ROTARY: {
        int32_t *cu = ints_of(&b[1]);
        int32_t *pos = c->op == VG_OP_ATTENTION_ROTARY ? ints_of(&b[3]) : NULL;
        ref_attention(b[0].h + b[0].off, c->ld, w, c->ld2, c->rows, c->heads, c->hd, cu, c->nseg,
                      c->scale, pos, c->theta);
        mark_rows(o, c->rows, c->ld2, (int64_t)c->heads * c->hd);
        free(cu);
        free(pos);
        break;
    }
    case VG_OP_SILU_MUL:
        ref_silu_mul(b[0].h + b[0].off, c->ld, w, c->ld2, c->rows, c->cols);
        mark_rows(o, c->rows, c->ld2, c->cols);
        break;
    case VG_OP_CONVERT:
        for (int64_t i = 0; i < c->count; i++) w[i] = ref_round(c->t2, b[0].h[b[0].off + (size_t)i]);
        mark_rows(o, 1, 0, c->count);
        break;
    case VG_OP_ROTARY: {
        int32_t *pos = ints_of(&b[1]);
        ref_rotary(w, c->ld, c->rows, c->heads, c->hd, pos, c->theta);
        mark_rows(o, c->rows, c->ld, (int64_t)c->heads * c->hd);
        free(pos);
        break;
    }
    case VG_OP_RMSNORM_HEADS:
        ref_rmsnorm_heads(w, c->ld, c->rows, c->heads, c->hd, b[1].h + b[1].off, c->eps);
        mark_rows(o, c->rows, c->ld, (int64_t)c->heads * c->hd);
        break;
    case VG_OP_KV_STORE: {
        int32_t *slots = ints_of(&b[2]);
        int64_t width = (int64_t)c->kv_heads * c->hd, half = (int64_t)c->nslots * width;
        ref_kv_store(b[0].h + b[0].off, c->ld, b[1].h + b[1].off, c->ld2, w, w + half, slots,
                     c->rows, width);
        for (int64_t i = 0; i < c->rows; i++)
            if (slots[i] >= 0) {
                memset(o->mask + o->off + (size_t)(slots[i] * width), 1, (size_t)width);
                memset(o->mask + o->off + (size_t)(half + slots[i] * width), 1, (size_t)width);
            }
        free(slots);
        break;
    }
    case VG_OP_ROTARY_KV_STORE: {
        int32_t *pos = ints_of(&b[1]), *slots = ints_of(&b[2]);
        int64_t width = (int64_t)c->kv_heads * c->hd, kc = c->count, vc = kc + (int64_t)c->nslots * width;
        const double *norm = b[3].h + b[3].off;
        ref_rotary_kv_store(c->t, w, c->ld, c->rows, c->heads, c->kv_heads, c->hd,
                            c->bias ? norm : NULL, c->bias ? norm + c->hd : NULL, c->eps, pos,
                            c->theta, w + kc, w + vc, slots);
        mark_rows(o, c->rows, c->ld, (int64_t)(c->heads + c->kv_heads) * c->hd);
        for (int64_t i = 0; i < c->rows; i++)
            if (slots[i] >= 0) {
                memset(o->mask + o->off + (size_t)(kc + slots[i] * width), 1, (size_t)width);
                memset(o->mask + o->off + (size_t)(vc + slots[i] * width), 1, (size_t)width);
            }
        free(pos), free(slots);
        break;
    }
    case VG_OP_PAGED_ATTENTION: {
        int32_t *bt = ints_of(&b[3]), *cl = ints_of(&b[4]), *qs = ints_of(&b[5]);
        ref_paged_attention(b[0].h + b[0].off, c->ld, w, c->ld2, c->rows, b[1].h + b[1].off,
                            b[2].h + b[2].off, bt, c->max_blocks, cl, qs, c->nseg, c->heads,
                            c->kv_heads, c->hd, c->block_size, c->scale);
        mark_rows(o, c->rows, c->ld2, (int64_t)c->heads * c->hd);
        free(bt), free(cl), free(qs);
        break;
    }
    case VG_OP_ROTARY_PAGED_ATTENTION:
    case VG_OP_ROTARY_PAGED_ATTENTION_NORM_X: {
        int32_t *pos = ints_of(&b[1]), *slots = ints_of(&b[2]), *bt = ints_of(&b[4]);
        int32_t *cl = ints_of(&b[5]), *qs = ints_of(&b[6]);
        int64_t width = (int64_t)c->kv_heads * c->hd, kc = c->cols, vc = kc + (int64_t)c->nslots * width;
        const double *norm = b[3].h + b[3].off;
        if (c->op == VG_OP_ROTARY_PAGED_ATTENTION_NORM_X) { /* the rows the op takes: folded (w is qkv) */
            const double *x = b[7].h + b[7].off;
            ref_norm_x_fold(c->t, w, c->ld, c->rows, (int64_t)(c->heads + 2 * c->kv_heads) * c->hd, x, c->ldx,
                            c->xcols, c->xeps, c->xbias ? x + c->xbias : NULL);
        }
        ref_rotary_kv_store(c->t, w, c->ld, c->rows, c->heads, c->kv_heads, c->hd, c->bias ? norm : NULL,
                            c->bias ? norm + c->hd : NULL, c->eps, pos, c->theta, w + kc, w + vc, slots);
        ref_paged_attention(w, c->ld, w + c->count, c->ld2, c->rows, w + kc, w + vc, bt, c->max_blocks, cl, qs,
                            c->nseg, c->heads, c->kv_heads, c->hd, c->block_size, c->scale);
        for (int64_t i = 0; i < c->rows; i++) { /* q and k heads: rotated or not, the device's choice */
            memset(o->mask + o->off + (size_t)(i * c->ld), 2, (size_t)(c->heads + c->kv_heads) * (size_t)c->hd);
            memset(o->mask + o->off + (size_t)(c->count + i * c->ld2), 1, (size_t)c->heads * (size_t)c->hd);
            if (slots[i] >= 0) {
                memset(o->mask + o->off + (size_t)(kc + slots[i] * width), 1, (size_t)width);
                memset(o->mask + o->off + (size_t)(vc + slots[i] * width), 1, (size_t)width);
            }
        }
        free(pos), free(slots), free(bt), free(cl), free(qs);
        break;
    }
    case VG_OP_LAYERNORM:
        ref_layernorm(c->inplace ? w : b[0].h + b[0].off, b[1].h + b[1].off,
                      c->bias ? b[2].h + b[2].off : NULL, w, c->rows, c->cols, c->eps);
        mark_rows(o, 1, 0, c->rows * c->cols);
        break;
    case VG_OP_GATHER_WEIGHTED: {
        int32_t *idx = ints_of(&b[1]);
        ref_gather_weighted(w, b[0].h + b[0].off, c->src_rows, idx, b[2].h + b[2].off, c->rows,
                            c->cols, c->taps);
        mark_rows(o, 1, 0, c->rows * c->cols);
        free(idx);
        break;
    }
    case VG_OP_ARGMAX: {
        int32_t *idx = xcalloc((size_t)c->rows, sizeof *idx);
        ref_argmax(b[0].h + b[0].off, c->ld, c->rows, c->cols, idx);
        for (int64_t i = 0; i < c->rows; i++) w[i] = idx[i];
        mark_rows(o, 1, 0, c->rows);
        free(idx);
        break;
    }
    default:
        break;
    }
}

/* The hints that no op before writes an input (gemm's b_static, op table version 11;
 * rotary_paged_attention's tables_static, version 12) in every other case: B, the tables, positions
 * and caches are uploaded before a case runs, so the promises hold, and a device that reads them
 * early (cuda's panel GEMM, its decode kernel) is checked both ways. */
#define HINT_STATIC(c) ((c)->index & 1)

static vg_status enqueue(const tcase *c)
{
    const buf *b = c->b;
    vg_stream *s = S.s;
    float theta = (float)c->theta;
    switch (c->op) {
    case VG_OP_FILL: return vg_op_fill(s, b[0].d, c->t, (size_t)c->count, c->value);
    case VG_OP_AXPBY:
        /* in place: one buffer is x and y */
        return vg_op_axpby(s, (size_t)c->count, (float)c->alpha, b[0].d, (float)c->beta,
                           b[c->out].d);
    case VG_OP_GEMM: {
        vg_gemm_args a = {.struct_size = sizeof a, .dtype_ab = c->t, .dtype_c = c->t2, .m = c->m,
                          .n = c->n, .k = c->k, .a = b[0].d, .lda = c->lda, .b = b[1].d,
                          .ldb = c->ldb, .c = b[2].d, .ldc = c->ldc,
                          .bias = c->bias ? b[3].d : NULL,
                          .residual = c->res == 2 ? b[2].d : c->res == 1 ? b[c->nb - 1].d : NULL,
                          .ldr = c->ldr, .act = c->act, .alpha = (float)c->alpha, .b_static = HINT_STATIC(c)};
        return vg_op_gemm(s, &a);
    }
    case VG_OP_GEMM_SILU_GATE: {
        vg_gemm_args a = {.struct_size = sizeof a, .dtype_ab = c->t, .dtype_c = c->t2, .m = c->m,
                          .n = c->n, .k = c->k, .a = b[0].d, .lda = c->lda, .b = b[1].d,
                          .ldb = c->ldb, .c = b[2].d, .ldc = c->ldc, .bias = c->bias ? b[3].d : NULL,
                          .act = VG_ACT_NONE, .alpha = (float)c->alpha, .gate = VG_GEMM_GATE_SILU,
                          .b_static = HINT_STATIC(c)};
        return vg_op_gemm(s, &a);
    }
    case VG_OP_GEMM_RMSNORM_A:
    case VG_OP_GEMM_RMSNORM_A_UNIT: {
        const int unit = c->op == VG_OP_GEMM_RMSNORM_A_UNIT, bi = unit ? 3 : 4;
        vg_gemm_args a = {.struct_size = sizeof a, .dtype_ab = c->t, .dtype_c = c->t2, .m = c->m,
                          .n = c->n, .k = c->k, .a = b[0].d, .lda = c->lda, .b = b[1].d,
                          .ldb = c->ldb, .c = b[2].d, .ldc = c->ldc, .bias = c->bias ? b[bi].d : NULL,
                          .residual = c->res == 2 ? b[2].d : c->res == 1 ? b[c->nb - 1].d : NULL,
                          .ldr = c->ldr, .act = c->act, .alpha = (float)c->alpha,
                          .gate = c->gate ? VG_GEMM_GATE_SILU : VG_GEMM_GATE_NONE,
                          .norm_w = unit ? NULL : b[3].d, .norm_eps = (float)c->eps,
                          .norm_out = (char *)b[2].d + (size_t)c->count * esize(c->t2), .norm_unit = unit,
                          .b_static = HINT_STATIC(c)};
        return vg_op_gemm(s, &a);
    }
    case VG_OP_GATHER_ROWS:
        return vg_op_gather_rows(s, c->t, b[2].d, b[0].d, b[1].d, c->rows, c->cols);
    case VG_OP_RMSNORM:
        return vg_op_rmsnorm(s, c->t, b[0].d, b[1].d, c->inplace ? b[0].d : b[2].d, c->rows,
                             c->cols, (float)c->eps);
    case VG_OP_ROTARY_2D:
        return vg_op_rotary_2d(s, c->t, b[0].d, c->ld, c->rows, c->heads, c->hd, b[1].d, theta);
    case VG_OP_ATTENTION:
        return vg_op_attention(s, c->t, b[0].d, c->ld, b[2].d, c->ld2, c->rows, c->heads, c->hd,
                               b[1].d, c->nseg, (float)c->scale);
    case VG_OP_ATTENTION_ROTARY:
        return vg_op_attention_rotary(s, c->t, b[0].d, c->ld, b[2].d, c->ld2, c->rows, c->heads,
                                      c->hd, b[1].d, c->nseg, (float)c->scale, b[3].d, theta);
    case VG_OP_SILU_MUL:
        return vg_op_silu_mul(s, c->t, b[0].d, c->ld, b[1].d, c->ld2, c->rows, c->cols);
    case VG_OP_CONVERT:
        return vg_op_convert(s, c->t, b[0].d, c->t2, b[c->out].d, (size_t)c->count);
    case VG_OP_ROTARY:
        return vg_op_rotary(s, c->t, b[0].d, c->ld, c->rows, c->heads, c->hd, b[1].d, theta);
    case VG_OP_RMSNORM_HEADS:
        return vg_op_rmsnorm_heads(s, c->t, b[0].d, c->ld, c->rows, c->heads, c->hd, b[1].d,
                                   (float)c->eps);
    case VG_OP_KV_STORE: {
        size_t half = (size_t)c->nslots * (size_t)c->kv_heads * (size_t)c->hd * esize(c->t);
        return vg_op_kv_store(s, c->t, b[0].d, c->ld, b[1].d, c->ld2, b[3].d,
                              (char *)b[3].d + half, b[2].d, c->rows, c->kv_heads, c->hd);
    }
    case VG_OP_ROTARY_KV_STORE: {
        char *qkv = b[0].d;
        size_t es = esize(c->t), width = (size_t)c->kv_heads * (size_t)c->hd;
        char *kc = qkv + (size_t)c->count * es, *vc = kc + (size_t)c->nslots * width * es;
        const char *qn = c->bias ? b[3].d : NULL, *kn = c->bias ? (char *)b[3].d + (size_t)c->hd * es : NULL;
        return vg_op_rotary_kv_store(s, c->t, qkv, c->ld, c->rows, c->heads, c->kv_heads, c->hd, qn,
                                     kn, (float)c->eps, b[1].d, theta, kc, vc, b[2].d);
    }
    case VG_OP_PAGED_ATTENTION:
        return vg_op_paged_attention(s, c->t, b[0].d, c->ld, b[6].d, c->ld2, c->rows, b[1].d, b[2].d,
                                     b[3].d, c->max_blocks, b[4].d, b[5].d, c->nseg, c->heads,
                                     c->kv_heads, c->hd, c->block_size, (float)c->scale);
    case VG_OP_ROTARY_PAGED_ATTENTION:
    case VG_OP_ROTARY_PAGED_ATTENTION_NORM_X: {
        char *base = b[0].d;
        size_t es = esize(c->t), width = (size_t)c->kv_heads * (size_t)c->hd;
        vg_rotary_paged_args a = {
            .struct_size = sizeof a, .dtype = c->t, .qkv = base, .ld = c->ld, .rows = c->rows,
            .heads = c->heads, .kv_heads = c->kv_heads, .head_dim = c->hd, .eps = (float)c->eps,
            .q_norm = c->bias ? b[3].d : NULL, .k_norm = c->bias ? (char *)b[3].d + (size_t)c->hd * es : NULL,
            .pos = b[1].d, .theta = theta, .scale = (float)c->scale, .k_cache = base + (size_t)c->cols * es,
            .v_cache = base + ((size_t)c->cols + (size_t)c->nslots * width) * es, .num_slots = c->nslots, .slots = b[2].d,
            .out = base + (size_t)c->count * es, .ld_out = c->ld2, .block_tables = b[4].d,
            .context_lens = b[5].d, .query_start = b[6].d, .max_blocks = c->max_blocks, .num_seqs = c->nseg,
            .block_size = c->block_size, .tables_static = HINT_STATIC(c)};
        if (c->op == VG_OP_ROTARY_PAGED_ATTENTION_NORM_X) {
            a.norm_x = b[7].d, a.ld_norm_x = c->ldx, a.norm_x_cols = c->xcols, a.norm_x_eps = (float)c->xeps;
            a.qkv_bias = c->xbias ? (char *)b[7].d + (size_t)c->xbias * es : NULL;
        }
        return vg_op_rotary_paged_attention(s, &a);
    }
    case VG_OP_ARGMAX:
        return vg_op_argmax(s, c->t, b[0].d, c->ld, c->rows, c->cols, b[1].d);
    case VG_OP_LAYERNORM:
        return vg_op_layernorm(s, c->t, b[0].d, b[1].d, c->bias ? b[2].d : NULL, b[c->out].d,
                               c->rows, c->cols, (float)c->eps);
    case VG_OP_GATHER_WEIGHTED:
        return vg_op_gather_weighted(s, c->t, b[3].d, b[0].d, c->src_rows, b[1].d, b[2].d, c->rows,
                                     c->cols, c->taps);
    default: return VG_ERR_INTERNAL;
    }
}

/* A refusal the catalogue allows a backend: attention head dims it did not compile, and gemm
 * dtype pairs (the per-op dtype set cannot say which pairs a device has). */
static int may_refuse(const tcase *c, vg_status st)
{
    if (st != VG_ERR_UNSUPPORTED) return 0;
    if (c->op == VG_OP_ATTENTION || c->op == VG_OP_ATTENTION_ROTARY) return 1;
    return (c->op == VG_OP_GEMM || c->op == VG_OP_GEMM_SILU_GATE || c->op == VG_OP_GEMM_RMSNORM_A ||
            c->op == VG_OP_GEMM_RMSNORM_A_UNIT) &&
           c->t != c->t2;
}

/* Tolerances: |got - want| <= atol · max|want| + rtol · |want| for each written element. */
static void tolerance(const tcase *c, double *atol, double *rtol)
{
    vg_dtype t = c->b[c->out].tout;
    /* a normalised A is rounded to dtype_ab (by a device that normalises in a pass of its own) */
    if ((c->op == VG_OP_GEMM_RMSNORM_A || c->op == VG_OP_GEMM_RMSNORM_A_UNIT) && c->t != VG_DTYPE_F32) t = c->t;
    *atol = *rtol = 0; /* fill, gather_rows, convert: exact */
    if (c->op == VG_OP_FILL || c->op == VG_OP_GATHER_ROWS || c->op == VG_OP_CONVERT ||
        c->op == VG_OP_KV_STORE || c->op == VG_OP_ARGMAX)
        return;
    if (c->op == VG_OP_AXPBY) {
        *atol = *rtol = 1e-6;
        return;
    }
    const int rpa = c->op == VG_OP_ROTARY_PAGED_ATTENTION || c->op == VG_OP_ROTARY_PAGED_ATTENTION_NORM_X;
    int attention = c->op == VG_OP_ATTENTION || c->op == VG_OP_ATTENTION_ROTARY ||
                    c->op == VG_OP_PAGED_ATTENTION || rpa;
    switch (t) {
    case VG_DTYPE_F32:
        *atol = c->op == VG_OP_ROTARY_2D || c->op == VG_OP_ATTENTION_ROTARY || c->op == VG_OP_ROTARY ||
                        c->op == VG_OP_ROTARY_KV_STORE || rpa
                    ? 1e-4
                    : 2e-5;
        *rtol = 1e-5;
        break;
    case VG_DTYPE_F16: *atol = attention ? 1e-2 : 4e-3, *rtol = 2e-3; break;
    default: *atol = attention ? 2e-2 : 1.6e-2, *rtol = 8e-3; break; /* BF16 */
    }
}

/* ---- running one case ------------------------------------------------------------------------------ */

static int g_failing = -1; /* the case whose header has been printed */

static void describe(const tcase *c, FILE *f)
{
    fprintf(f, "case %d (VG_CONFORMANCE_SEED=%llu VG_CONFORMANCE_ONLY=%d): %s %s %s; %s", c->index,
            (unsigned long long)S.seed, c->index, vg_op_name(c->op), vg_dtype_name(c->t), c->shape,
            c->graph ? "captured, replayed on new contents" : "eager");
    fprintf(f, "; offsets");
    for (int i = 0; i < c->nb; i++) fprintf(f, " %s+%zu", c->b[i].name, c->b[i].off);
    fprintf(f, "\n");
}

static int upload_all(tcase *c)
{
    for (int i = 0; i < c->nb; i++)
        if (vg_mem_copy_h2d(S.s, c->b[i].base, c->b[i].raw0, c->b[i].cap * esize(c->b[i].t)) != VG_OK)
            return -1;
    return vg_stream_sync(S.s) == VG_OK ? 0 : -1;
}

/* Before the first line about a failing case: what the case is and how to run it alone. */
static void fail_header(const tcase *c)
{
    if (g_failing == c->index) return;
    g_failing = c->index;
    fprintf(stderr, "FAIL ");
    describe(c, stderr);
}

/* Compare the device's buffers with the expectation; print what differs. Returns 0 when equal. */
static int check(tcase *c, int expect_untouched)
{
    int bad = 0, shown = 0;
    double atol, rtol;
    tolerance(c, &atol, &rtol);
    for (int i = 0; i < c->nb; i++) {
        buf *b = &c->b[i];
        size_t es = esize(b->t), bytes = b->cap * es;
        unsigned char *got = xcalloc(bytes, 1);
        if (vg_mem_copy_d2h(S.s, got, b->base, bytes) != VG_OK || vg_stream_sync(S.s) != VG_OK) {
            fail_header(c);
            fprintf(stderr, "  reading %s back failed: %s\n", b->name, vg_last_error());
            free(got);
            return 1;
        }
        if (i != c->out || expect_untouched) { /* inputs, and anything before a replay: as uploaded */
            if (memcmp(got, b->raw0, bytes) != 0) {
                size_t e = 0;
                while (memcmp(got + e * es, b->raw0 + e * es, es) == 0) e++;
                fail_header(c);
                fprintf(stderr, "  %s was modified%s: element %lld of the op region (%zu of the "
                        "allocation) holds %.9g, uploaded %.9g\n", b->name,
                        expect_untouched ? " before the replay" : " though the op only reads it",
                        (long long)e - (long long)b->off, e, decode(b->t, got + e * es), b->h[e]);
                bad = 1;
            }
            free(got);
            continue;
        }
        double scale = c->term_scale;
        for (size_t e = 0; e < b->cap; e++)
            if (b->mask[e] == 1) scale = fmax(scale, fabs(b->want[e]));
        double worst = 0;
        for (size_t e = 0; e < b->cap; e++) {
            const unsigned char *g = got + e * es;
            int ok;
            double gv = decode(b->tout, g), wv = b->want[e];
            if (b->mask[e] == 2) continue; /* scratch of the op: any contents */
            if (b->mask[e]) {
                double err = fabs(gv - wv);
                ok = !isnan(gv) && !isinf(gv) && err <= atol * scale + rtol * fabs(wv);
                if (scale > 0) worst = fmax(worst, err / scale);
            } else {
                ok = memcmp(g, b->raw0 + e * es, es) == 0;
                wv = b->h[e];
                gv = decode(b->t, g);
            }
            if (!ok) {
                fail_header(c);
                if (shown++ >= 5) {
                } else if (b->mask[e]) {
                    fprintf(stderr, "  %s[%lld]: got %.9g, want %.9g (atol %.3g x max|want| %.3g, "
                            "rtol %.3g)\n", b->name, (long long)e - (long long)b->off, gv, wv,
                            atol, scale, rtol);
                } else {
                    fprintf(stderr, "  %s[%lld]: written, but the op must not touch it: got %.9g, "
                            "uploaded %.9g\n", b->name, (long long)e - (long long)b->off, gv, wv);
                }
                bad = 1;
            }
        }
        if (shown > 5) fprintf(stderr, "  ... %d elements differ in all\n", shown);
        if (bad && scale > 0) fprintf(stderr, "  largest error / max|want|: %.3g\n", worst);
        free(got);
    }
    return bad;
}

static void free_case(tcase *c)
{
    for (int i = 0; i < c->nb; i++) {
        buf *b = &c->b[i];
        if (b->base) vg_mem_free(S.rt, b->base);
        free(b->raw0), free(b->h), free(b->want), free(b->mask);
    }
}

/* Returns 0 pass, 1 failure, 2 refused (allowed), 3 failure that leaves the device unusable. */
static int run_case(tcase *c)
{
    rng r = {S.seed ^ (0xA24BAED4963EE407ull * (uint64_t)(c->index + 1))};
    rnext(&r);
    generate(c, &r);
    uint32_t flags = vg_runtime_op_support(S.rt, c->op, NULL);
    c->graph = S.graphs && (flags & VG_OP_CAPTURABLE) && rchance(&r, 0.3);
    for (int i = 0; i < c->nb; i++) {
        buf *b = &c->b[i];
        b->raw0 = xcalloc(b->cap, esize(b->t));
        b->h = xcalloc(b->cap, sizeof(double));
        if (i == c->out) {
            b->want = xcalloc(b->cap, sizeof(double));
            b->mask = xcalloc(b->cap, 1);
        }
        if (vg_mem_alloc(S.rt, b->cap * esize(b->t), &b->base) != VG_OK) {
            fail_header(c);
            fprintf(stderr, "  allocating %s failed: %s\n", b->name, vg_last_error());
            return 1;
        }
        b->d = (char *)b->base + b->off * esize(b->t);
    }
    randomise(c, &r);
    if (upload_all(c) != 0) {
        fail_header(c);
        fprintf(stderr, "  upload failed: %s\n", vg_last_error());
        return 1;
    }
    vg_status st;
    vg_graph_exec *exec = NULL;
    if (c->graph) {
        vg_graph *g = NULL;
        st = vg_graph_capture_begin(S.s);
        if (st == VG_OK) {
            vg_status est = enqueue(c);
            st = vg_graph_capture_end(S.s, &g);
            if (est != VG_OK) st = est;
        }
        if (st == VG_OK) st = vg_graph_instantiate(g, &exec);
        vg_graph_destroy(g);
        if (st == VG_OK) { /* capture records, runs nothing: every buffer is as uploaded */
            if (check(c, 1)) {
                vg_graph_exec_destroy(exec);
                return 1;
            }
            randomise(c, &r); /* new contents, indices and segment bounds included */
            if (upload_all(c) != 0) st = vg_last_status();
            else st = vg_graph_exec_launch(exec, S.s);
        }
    } else {
        st = enqueue(c);
    }
    if (st == VG_OK) st = vg_stream_sync(S.s);
    if (exec) vg_graph_exec_destroy(exec);
    if (may_refuse(c, st)) return 2;
    if (st != VG_OK) {
        fail_header(c);
        fprintf(stderr, "  %s: %s\n", vg_status_name(st), vg_last_error());
        return st == VG_ERR_DEVICE ? 3 : 1;
    }
    reference(c);
    return check(c, 0);
}

/* `name` is one of the comma-separated names of `list`. */
static int name_listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

static unsigned long long env_ull(const char *name, unsigned long long def)
{
    const char *v = getenv(name);
    if (!v || !*v) return def;
    char *end = NULL;
    unsigned long long x = strtoull(v, &end, 0);
    if (*end) {
        fprintf(stderr, "conformance_random: %s=%s is not a number\n", name, v);
        exit(2);
    }
    return x;
}

int main(void)
{
    S.seed = env_ull("VG_CONFORMANCE_SEED", DEFAULT_SEED);
    int cases = (int)env_ull("VG_CONFORMANCE_CASES", DEFAULT_CASES);
    const char *only_env = getenv("VG_CONFORMANCE_ONLY");
    int only = only_env && *only_env ? (int)env_ull("VG_CONFORMANCE_ONLY", 0) : -1;
    const char *want = getenv("VG_BACKEND"), *req = getenv("VG_REQUIRE_DEVICE");
    const char *only_ops = getenv("VG_CONFORMANCE_OPS");
    vg_status st = vg_runtime_open(NULL, &S.rt);
    if (st == VG_ERR_NO_DEVICE && !(req && strcmp(req, "1") == 0)) {
        printf("SKIP: backend '%s' has no device: %s\n", want ? want : "(auto)", vg_last_error());
        return SKIP_CODE;
    }
    if (st != VG_OK || vg_stream_create(S.rt, &S.s) != VG_OK) {
        fprintf(stderr, "conformance_random: cannot open backend '%s': %s\n", want ? want : "(auto)",
                vg_last_error());
        return 1;
    }
    S.graphs = (vg_runtime_caps(S.rt) & VG_CAP_GRAPH) != 0;
    vg_op_id ops[VG_OP_COUNT_];
    int nops = 0;
    for (int op = 0; op < VG_OP_COUNT_; op++)
        /* lm_advance, a loop's step over seven buffers of state, has its own test
         * (tests/test_loop.c, on every backend) */
        if (op != VG_OP_LM_ADVANCE && (vg_runtime_op_support(S.rt, (vg_op_id)op, NULL) & VG_OP_SUPPORTED))
            ops[nops++] = (vg_op_id)op;
    printf("randomised conformance on '%s': VG_CONFORMANCE_SEED=%llu VG_CONFORMANCE_CASES=%d, %d ops "
           "supported, graphs %s\n", vg_runtime_backend_name(S.rt), (unsigned long long)S.seed,
           cases, nops, S.graphs ? "yes" : "no");
    if (nops == 0) {
        fprintf(stderr, "conformance_random: the device supports no op\n");
        return 1;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int failures = 0, refused = 0;
    int dead = 0;
    for (int i = 0; i < cases && !dead; i++) {
        if (only >= 0 && i != only) continue;
        if (only_ops && *only_ops && !name_listed(only_ops, vg_op_name(ops[i % nops]))) continue;
        tcase *c = xcalloc(1, sizeof *c);
        c->index = i;
        c->op = ops[i % nops];
        int res = run_case(c);
        if (res == 3) {
            fprintf(stderr, "the device is unusable after this failure: the run stops here (rerun "
                    "with VG_CONFORMANCE_ONLY=%d, or VG_CONFORMANCE_OPS without %s, to go on)\n",
                    i, vg_op_name(c->op));
            dead = 1;
        }
        if (res == 1 || res == 3) failures++;
        else if (res == 2) refused++, S.skipped[c->op]++;
        else {
            S.verified[c->op]++;
            S.replayed[c->op] += c->graph;
        }
        if (only >= 0) describe(c, stdout);
        free_case(c);
        free(c);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%-18s %9s %9s %9s\n", "op", "verified", "replayed", "refused");
    for (int i = 0; i < nops; i++) {
        printf("%-18s %9d %9d %9d\n", vg_op_name(ops[i]), S.verified[ops[i]], S.replayed[ops[i]],
               S.skipped[ops[i]]);
        /* every supported op must have been checked at least once when each had a case */
        int selected = !only_ops || !*only_ops || name_listed(only_ops, vg_op_name(ops[i]));
        if (only < 0 && !dead && selected && cases >= nops && S.verified[ops[i]] == 0) {
            fprintf(stderr, "op %s: no case was verified (all %d refused)\n", vg_op_name(ops[i]),
                    S.skipped[ops[i]]);
            failures++;
        }
    }
    printf("%d cases, %d failed, %d refused as the catalogue allows, %.2f s (seed %llu)\n",
           only >= 0 ? 1 : cases, failures, refused,
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),
           (unsigned long long)S.seed);
    vg_stream_destroy(S.s);
    vg_runtime_close(S.rt);
    return failures ? 1 : 0;
}
