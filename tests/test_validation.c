/* SPDX-License-Identifier: Apache-2.0 */
/* The core device API's checks (vg_device.h, "validated once"), on kunlun_stub: for every op, a
 * call breaking each class of precondition of vg_ops.h (NULL, dtype, shape, leading dimension,
 * alignment, aliasing, op-specific limits) is refused with the right status and a message that
 * names the op and the offending value, and nothing is enqueued; the same calls within the rules
 * pass. Then capture state: an op the device cannot capture (VG_STUB_CAPS=nocapture:<op>) is
 * refused on a capturing stream with VG_ERR_STATE naming it, the capture still ends, and
 * synchronising a capturing stream is refused. */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#include "test_util.h"
#include "vg/vg_device.h"
#include "vg/vg_half.h"
#include "vg/vg_ipc.h"
#include "vg/vg_native.h"

enum { BYTES = 1 << 16, ROWS = 4, HEADS = 2, HD = 16, HIDDEN = HEADS * HD };
#define OP_COLS_TOO_MANY (1LL << 31)

typedef struct fixture {
    vg_runtime *rt;
    vg_stream *s;
    char *a, *b, *c; /* device buffers of BYTES, zeroed */
    int32_t *idx, *cu, *pos;
} fixture;

static fixture g;

static vg_runtime *open_stub(void)
{
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    o.backend = "kunlun_stub";
    vg_runtime *rt = NULL;
    VG_CHECK(vg_runtime_open(&o, &rt));
    return rt;
}

static void fixture_open(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->rt = open_stub();
    VG_CHECK(vg_stream_create(f->rt, &f->s));
    char **bufs[3] = {&f->a, &f->b, &f->c};
    for (int i = 0; i < 3; i++) {
        VG_CHECK(vg_mem_alloc(f->rt, BYTES, (void **)bufs[i]));
        VG_CHECK(vg_mem_set(f->s, *bufs[i], 0, BYTES));
    }
    const int32_t cu[2] = {0, ROWS};
    VG_CHECK(vg_mem_alloc(f->rt, 256, (void **)&f->idx));
    VG_CHECK(vg_mem_alloc(f->rt, 256, (void **)&f->cu));
    VG_CHECK(vg_mem_alloc(f->rt, 256, (void **)&f->pos));
    VG_CHECK(vg_mem_set(f->s, f->idx, 0, 256));
    VG_CHECK(vg_mem_set(f->s, f->pos, 0, 256));
    VG_CHECK(vg_mem_copy_h2d(f->s, f->cu, cu, sizeof cu));
    VG_CHECK(vg_stream_sync(f->s));
}

static void fixture_close(fixture *f)
{
    void *p[6] = {f->a, f->b, f->c, f->idx, f->cu, f->pos};
    for (int i = 0; i < 6; i++) VG_CHECK(vg_mem_free(f->rt, p[i]));
    VG_CHECK(vg_stream_destroy(f->s));
    VG_CHECK(vg_runtime_close(f->rt));
}

/* The first `bytes` of a buffer are still zero: a refused call enqueued nothing. */
static void assert_zero(const void *d, size_t bytes)
{
    unsigned char host[4096];
    assert_true(bytes <= sizeof host);
    VG_CHECK(vg_mem_copy_d2h(g.s, host, d, bytes));
    VG_CHECK(vg_stream_sync(g.s));
    for (size_t i = 0; i < bytes; i++) {
        if (host[i]) print_message("byte %zu is %d: a refused call wrote\n", i, host[i]);
        assert_int_equal(host[i], 0);
    }
}

/* ---- one valid call per op: the base each violation changes in one way --------------------------- */

static vg_gemm_args gemm_args(void)
{
    vg_gemm_args a = {.struct_size = sizeof a, .dtype_ab = VG_DTYPE_F32, .dtype_c = VG_DTYPE_F32,
                      .m = 8, .n = 8, .k = 8, .a = g.a, .lda = 8, .b = g.b, .ldb = 8, .c = g.c,
                      .ldc = 8, .act = VG_ACT_NONE, .alpha = 1.0f};
    return a;
}

/* A valid rotary_paged_attention: qkv rows of 2 + 2·1 heads in c, every row to slot 0 of the caches
 * (a, and b's second half), one sequence of ROWS new tokens in block 0, out in b's first half. */
static vg_rotary_paged_args rotary_paged_args(void)
{
    vg_rotary_paged_args a = {
        .struct_size = sizeof a, .dtype = VG_DTYPE_F32, .qkv = g.c, .ld = 2 * HIDDEN, .rows = ROWS,
        .heads = HEADS, .kv_heads = 1, .head_dim = HD, .eps = 1e-6f, .q_norm = g.b, .k_norm = g.b,
        .pos = g.pos, .theta = 1e4f, .scale = 0.25f, .k_cache = g.a, .v_cache = g.b + BYTES / 2,
        .num_slots = 16, .slots = g.idx, .out = g.b + 256, .ld_out = HIDDEN, .block_tables = g.idx, .context_lens = g.cu + 1,
        .query_start = g.cu, .max_blocks = 1, .num_seqs = 1, .block_size = ROWS};
    return a;
}

/* The same with the folded norm (op table version 10): norm_x [ROWS, 8] and qkv_bias in the
 * second quarter of a, past the key cache (all zeros: eps keeps the scale finite). */
static vg_rotary_paged_args rotary_paged_norm_x_args(void)
{
    vg_rotary_paged_args a = rotary_paged_args();
    a.norm_x = g.a + BYTES / 4, a.ld_norm_x = 8, a.norm_x_cols = 8, a.norm_x_eps = 1e-6f;
    a.qkv_bias = g.a + BYTES / 4 + 1024;
    return a;
}

static vg_status valid_call(vg_stream *s, vg_op_id op)
{
    vg_gemm_args ga = gemm_args();
    switch (op) {
    case VG_OP_FILL: return vg_op_fill(s, g.c, VG_DTYPE_F32, 16, 0.0);
    case VG_OP_AXPBY: return vg_op_axpby(s, 16, 1.0f, (const float *)g.a, 1.0f, (float *)g.c);
    case VG_OP_GEMM: return vg_op_gemm(s, &ga);
    case VG_OP_GATHER_ROWS: return vg_op_gather_rows(s, VG_DTYPE_F32, g.c, g.a, g.idx, ROWS, 8);
    case VG_OP_RMSNORM: return vg_op_rmsnorm(s, VG_DTYPE_F32, g.a, g.b, g.c, ROWS, 8, 1e-6f);
    case VG_OP_ROTARY_2D:
        return vg_op_rotary_2d(s, VG_DTYPE_F32, g.c, 3 * HIDDEN, ROWS, 2 * HEADS, HD, g.pos, 1e4f);
    case VG_OP_ATTENTION:
        return vg_op_attention(s, VG_DTYPE_F32, g.a, 3 * HIDDEN, g.c, HIDDEN, ROWS, HEADS, HD, g.cu,
                               1, 0.25f);
    case VG_OP_SILU_MUL: return vg_op_silu_mul(s, VG_DTYPE_F32, g.a, 16, g.c, 8, ROWS, 8);
    case VG_OP_CONVERT: return vg_op_convert(s, VG_DTYPE_F32, g.a, VG_DTYPE_BF16, g.c, 16);
    case VG_OP_ATTENTION_ROTARY:
        return vg_op_attention_rotary(s, VG_DTYPE_F32, g.a, 3 * HIDDEN, g.c, HIDDEN, ROWS, HEADS, HD,
                                      g.cu, 1, 0.25f, g.pos, 1e4f);
    case VG_OP_ROTARY: return vg_op_rotary(s, VG_DTYPE_F32, g.c, HIDDEN, ROWS, HEADS, HD, g.pos, 1e4f);
    case VG_OP_RMSNORM_HEADS:
        return vg_op_rmsnorm_heads(s, VG_DTYPE_F32, g.c, HIDDEN, ROWS, HEADS, HD, g.b, 1e-6f);
    case VG_OP_KV_STORE: /* every row to slot 0 (idx is zeros) */
        return vg_op_kv_store(s, VG_DTYPE_F32, g.a, HIDDEN, g.b, HIDDEN, g.c, g.c + BYTES / 2, g.idx,
                              ROWS, HEADS, HD);
    case VG_OP_PAGED_ATTENTION: /* one sequence of ROWS new tokens in block 0 of ROWS slots */
        return vg_op_paged_attention(s, VG_DTYPE_F32, g.a, HIDDEN, g.c, HIDDEN, ROWS, g.a, g.b, g.idx,
                                     1, g.cu + 1, g.cu, 1, HEADS, 1, HD, ROWS, 0.25f);
    case VG_OP_ARGMAX: return vg_op_argmax(s, VG_DTYPE_F32, g.a, 8, ROWS, 8, (int32_t *)g.c);
    case VG_OP_LAYERNORM: return vg_op_layernorm(s, VG_DTYPE_F32, g.a, g.b, g.b, g.c, ROWS, 8, 1e-6f);
    case VG_OP_GATHER_WEIGHTED: /* 4 taps of row 0 (idx is zeros) of a 4-row table */
        return vg_op_gather_weighted(s, VG_DTYPE_F32, g.c, g.a, 4, g.idx, (const float *)g.b, ROWS, 8, 4);
    case VG_OP_GEMM_SILU_GATE:
        ga.gate = VG_GEMM_GATE_SILU;
        return vg_op_gemm(s, &ga);
    case VG_OP_GEMM_RMSNORM_A: /* A normalised into the second half of a */
        ga.norm_w = g.b, ga.norm_eps = 1e-6f, ga.norm_out = g.a + BYTES / 2;
        return vg_op_gemm(s, &ga);
    case VG_OP_GEMM_RMSNORM_A_UNIT: /* the same without a weight */
        ga.norm_unit = 1, ga.norm_eps = 1e-6f, ga.norm_out = g.a + BYTES / 2;
        return vg_op_gemm(s, &ga);
    case VG_OP_ROTARY_KV_STORE: /* qkv rows of 2 + 2·1 heads in c; every row to slot 0 of a and b */
        return vg_op_rotary_kv_store(s, VG_DTYPE_F32, g.c, 2 * HIDDEN, ROWS, HEADS, 1, HD, g.b, g.b,
                                     1e-6f, g.pos, 1e4f, g.a, g.b + BYTES / 2, g.idx);
    case VG_OP_ROTARY_PAGED_ATTENTION: { /* rotary_kv_store's call above, then attention into b */
        vg_rotary_paged_args ra = rotary_paged_args();
        return vg_op_rotary_paged_attention(s, &ra);
    }
    case VG_OP_ROTARY_PAGED_ATTENTION_NORM_X: {
        vg_rotary_paged_args ra = rotary_paged_norm_x_args();
        return vg_op_rotary_paged_attention(s, &ra);
    }
    case VG_OP_LM_ADVANCE: { /* one row, done at once (its limit is 0): token and state into c */
        int32_t *c = (int32_t *)g.c;
        vg_lm_advance_args la = {.struct_size = sizeof la, .rows = 1, .block_size = 16, .max_blocks = 1,
                                 .ld_out = 4, .next = g.idx, .limit = g.idx, .block_tables = g.idx,
                                 .tokens = c, .pos = c + 1, .slots = c + 2, .ctx = c + 3, .state = c + 4,
                                 .out = c + 8};
        return vg_op_lm_advance(s, &la);
    }
    default: return VG_ERR_INTERNAL;
    }
}

static int setup(void **state)
{
    (void)state;
    fixture_open(&g);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fixture_close(&g);
    return 0;
}

static void test_valid_calls_pass(void **state)
{
    (void)state;
    for (int op = 0; op < VG_OP_COUNT_; op++) {
        vg_error_clear();
        vg_status st = valid_call(g.s, (vg_op_id)op);
        if (st != VG_OK) print_message("%s: %s\n", vg_op_name((vg_op_id)op), vg_last_error());
        assert_int_equal(st, VG_OK);
    }
    VG_CHECK(vg_stream_sync(g.s));
    VG_CHECK(vg_mem_set(g.s, g.c, 0, BYTES));
    VG_CHECK(vg_stream_sync(g.s));
}

static void test_no_stream(void **state)
{
    (void)state;
    for (int op = 0; op < VG_OP_COUNT_; op++) /* an option of an op is a call of the op's vg_op_* */
        VG_CHECK_FAILS(valid_call(NULL, (vg_op_id)op), VG_ERR_INVALID_ARG,
                       op == VG_OP_GEMM_SILU_GATE || op == VG_OP_GEMM_RMSNORM_A ||
                               op == VG_OP_GEMM_RMSNORM_A_UNIT
                           ? "gemm"
                       : op == VG_OP_ROTARY_PAGED_ATTENTION_NORM_X ? "rotary_paged_attention"
                                                                   : vg_op_name((vg_op_id)op));
}

/* ---- op by op ------------------------------------------------------------------------------------------ */

static void test_fill(void **state)
{
    (void)state;
    VG_CHECK_FAILS_ALL(vg_op_fill(g.s, NULL, VG_DTYPE_F32, 16, 1.0), VG_ERR_INVALID_ARG, "fill", "NULL");
    VG_CHECK_FAILS_ALL(vg_op_fill(g.s, g.c, (vg_dtype)99, 16, 1.0), VG_ERR_INVALID_ARG, "fill", "99");
    VG_CHECK_FAILS_ALL(vg_op_fill(g.s, g.c + 2, VG_DTYPE_F32, 16, 1.0), VG_ERR_INVALID_ARG, "fill", "align");
    VG_CHECK_FAILS_ALL(vg_op_fill(g.s, g.c + 4, VG_DTYPE_I64, 16, 1.0), VG_ERR_INVALID_ARG, "fill", "align");
    VG_CHECK_FAILS_ALL(vg_op_fill(g.s, g.c + 1, VG_DTYPE_BF16, 16, 1.0), VG_ERR_INVALID_ARG, "fill", "align");
    assert_zero(g.c, 256);
    /* within the rules: an odd byte for U8, an 8-byte boundary for I64, nothing to fill */
    VG_CHECK(vg_op_fill(g.s, g.c + 1, VG_DTYPE_U8, 3, 7.0));
    VG_CHECK(vg_op_fill(g.s, g.c + 8, VG_DTYPE_I64, 2, 7.0));
    VG_CHECK(vg_op_fill(g.s, g.c, VG_DTYPE_F32, 0, 7.0));
    VG_CHECK(vg_mem_set(g.s, g.c, 0, 64));
    VG_CHECK(vg_stream_sync(g.s));
}

static void test_axpby(void **state)
{
    (void)state;
    float *x = (float *)g.a, *y = (float *)g.c;
    VG_CHECK_FAILS_ALL(vg_op_axpby(g.s, 16, 1.0f, NULL, 1.0f, y), VG_ERR_INVALID_ARG, "axpby", "NULL");
    VG_CHECK_FAILS_ALL(vg_op_axpby(g.s, 16, 1.0f, x, 1.0f, NULL), VG_ERR_INVALID_ARG, "axpby", "NULL");
    VG_CHECK_FAILS_ALL(vg_op_axpby(g.s, 16, 1.0f, (const float *)(g.a + 2), 1.0f, y),
                       VG_ERR_INVALID_ARG, "axpby", "align");
    VG_CHECK_FAILS_ALL(vg_op_axpby(g.s, 16, 1.0f, x, 1.0f, (float *)(g.c + 1)), VG_ERR_INVALID_ARG,
                       "axpby", "align");
    VG_CHECK(vg_op_axpby(g.s, 16, 2.0f, y, 0.5f, y)); /* x may equal y */
    VG_CHECK(vg_stream_sync(g.s));
}

static void test_gemm(void **state)
{
    (void)state;
    vg_gemm_args a;
    VG_CHECK_FAILS_ALL(vg_op_gemm(g.s, NULL), VG_ERR_INVALID_ARG, "gemm", "NULL");
#define GEMM_FAILS(field_change, ...)                                                     \
    do {                                                                                  \
        a = gemm_args();                                                                  \
        field_change;                                                                     \
        VG_CHECK_FAILS_ALL(vg_op_gemm(g.s, &a), VG_ERR_INVALID_ARG, "gemm", __VA_ARGS__); \
    } while (0)
    GEMM_FAILS(a.struct_size = 8, "struct_size");
    GEMM_FAILS(a.a = NULL, "NULL");
    GEMM_FAILS(a.b = NULL, "NULL");
    GEMM_FAILS(a.c = NULL, "NULL");
    GEMM_FAILS(a.dtype_ab = VG_DTYPE_I32, "I32");
    GEMM_FAILS(a.dtype_c = VG_DTYPE_U8, "U8");
    GEMM_FAILS(a.dtype_ab = (vg_dtype)99, "99");
    GEMM_FAILS(a.m = -3, "-3");
    GEMM_FAILS(a.n = 0, "n");
    GEMM_FAILS(a.k = 0, "k");
    GEMM_FAILS(a.m = 1ll << 31, "2147483648");
    GEMM_FAILS((a.k = 40, a.lda = 37, a.ldb = 40), "lda", "37");
    GEMM_FAILS((a.k = 40, a.lda = 40, a.ldb = 38), "ldb", "38");
    GEMM_FAILS((a.n = 30, a.ldc = 29), "ldc", "29");
    GEMM_FAILS((a.n = 30, a.ldc = 30, a.residual = g.b, a.ldr = 28), "ldr", "28");
    GEMM_FAILS(a.a = g.a + 2, "align");
    GEMM_FAILS(a.bias = g.b + 1, "align");
    GEMM_FAILS((a.dtype_c = VG_DTYPE_BF16, a.c = g.c + 1), "align");
    GEMM_FAILS((a.residual = g.b + 2, a.ldr = 8), "align");
    GEMM_FAILS(a.act = (vg_activation)99, "99");
    /* an activation with the residual aliasing c: the residual would be added after act */
    GEMM_FAILS((a.residual = a.c, a.ldr = a.ldc, a.act = VG_ACT_GELU_ERF), "alias");
    GEMM_FAILS((a.residual = a.c, a.ldr = a.ldc, a.act = VG_ACT_SILU), "alias");
    /* the gate (op table version 6): a known gate, n even, no activation, no residual */
    GEMM_FAILS(a.gate = (vg_gemm_gate)7, "gate", "7");
    GEMM_FAILS((a.gate = VG_GEMM_GATE_SILU, a.n = 7), "gate", "even", "7");
    GEMM_FAILS((a.gate = VG_GEMM_GATE_SILU, a.act = VG_ACT_SILU), "gate", "activation");
    GEMM_FAILS((a.gate = VG_GEMM_GATE_SILU, a.residual = g.b, a.ldr = 8), "gate", "residual");
    /* the norm of A (op table version 6): scratch for it, a contiguous A, eps >= 0, alignment */
    GEMM_FAILS(a.norm_w = g.b, "norm_w", "norm_out");
    GEMM_FAILS((a.norm_w = g.b, a.norm_out = g.c + 4096, a.lda = 9), "norm_w", "contiguous", "9");
    GEMM_FAILS((a.norm_w = g.b, a.norm_out = g.c + 4096, a.norm_eps = -1.0f), "norm_eps");
    GEMM_FAILS((a.norm_w = g.b + 2, a.norm_out = g.c + 4096), "norm_w", "align");
    GEMM_FAILS((a.norm_w = g.b, a.norm_out = g.c + 4098), "norm_out", "align");
    /* without a weight (op table version 9): 0 or 1, not with norm_w, and as norm_w otherwise */
    GEMM_FAILS((a.norm_unit = 2, a.norm_out = g.c + 4096), "norm_unit", "2");
    GEMM_FAILS((a.norm_unit = 1, a.norm_w = g.b, a.norm_out = g.c + 4096), "norm_w", "norm_unit", "exclude");
    /* the hint that no op of the stream writes B (op table version 11): 0 or 1 */
    GEMM_FAILS(a.b_static = 2, "b_static", "2");
    GEMM_FAILS(a.b_static = -1, "b_static", "-1");
    GEMM_FAILS(a.norm_unit = 1, "norm_unit", "norm_out");
    GEMM_FAILS((a.norm_unit = 1, a.norm_out = g.c + 4096, a.lda = 9), "norm_unit", "contiguous", "9");
    GEMM_FAILS((a.norm_unit = 1, a.norm_out = g.c + 4096, a.norm_eps = -1.0f), "norm_eps");
    GEMM_FAILS((a.norm_unit = 1, a.norm_out = g.c + 4098), "norm_out", "align");
#undef GEMM_FAILS
    assert_zero(g.c, 1024);
    a = gemm_args(); /* in place without activation is fine, and so is ldr past n */
    a.residual = a.c;
    a.ldr = a.ldc;
    VG_CHECK(vg_op_gemm(g.s, &a));
    a = gemm_args();
    a.residual = g.b, a.ldr = 20, a.lda = 9, a.act = VG_ACT_QUICK_GELU;
    VG_CHECK(vg_op_gemm(g.s, &a));
    /* a caller built against op table version 5's struct (no gate field) is still served */
    a = gemm_args();
    a.struct_size = (uint32_t)(offsetof(vg_gemm_args, alpha) + sizeof(float));
    a.gate = (vg_gemm_gate)7; /* past its struct_size: never read */
    VG_CHECK(vg_op_gemm(g.s, &a));
    /* one built against version 9 or 10: its struct_size covers norm_unit's tail padding, which it
     * may leave uninitialised; b_static (version 11) lies past it */
    a = gemm_args();
    a.struct_size = (uint32_t)offsetof(vg_gemm_args, b_static);
    a.unused_v9_tail = 0x7f7f7f7f, a.b_static = 7;
    VG_CHECK(vg_op_gemm(g.s, &a));
    VG_CHECK(vg_mem_set(g.s, g.c, 0, BYTES));
    VG_CHECK(vg_stream_sync(g.s));
}

static void test_gather_rows(void **state)
{
    (void)state;
    VG_CHECK_FAILS_ALL(vg_op_gather_rows(g.s, VG_DTYPE_F32, NULL, g.a, g.idx, ROWS, 8),
                       VG_ERR_INVALID_ARG, "gather_rows", "NULL");
    VG_CHECK_FAILS_ALL(vg_op_gather_rows(g.s, VG_DTYPE_F32, g.c, NULL, g.idx, ROWS, 8),
                       VG_ERR_INVALID_ARG, "gather_rows", "NULL");
    VG_CHECK_FAILS_ALL(vg_op_gather_rows(g.s, VG_DTYPE_F32, g.c, g.a, NULL, ROWS, 8),
                       VG_ERR_INVALID_ARG, "gather_rows", "NULL");
    VG_CHECK_FAILS_ALL(vg_op_gather_rows(g.s, (vg_dtype)99, g.c, g.a, g.idx, ROWS, 8),
                       VG_ERR_INVALID_ARG, "gather_rows", "99");
    VG_CHECK_FAILS_ALL(vg_op_gather_rows(g.s, VG_DTYPE_F32, g.c, g.a, g.idx, -7, 8),
                       VG_ERR_INVALID_ARG, "gather_rows", "-7");
    VG_CHECK_FAILS_ALL(vg_op_gather_rows(g.s, VG_DTYPE_F32, g.c, g.a, g.idx, ROWS, -9),
                       VG_ERR_INVALID_ARG, "gather_rows", "-9");
    VG_CHECK_FAILS_ALL(vg_op_gather_rows(g.s, VG_DTYPE_F32, g.a, g.a, g.idx, ROWS, 8),
                       VG_ERR_INVALID_ARG, "gather_rows", "alias");
    VG_CHECK_FAILS_ALL(vg_op_gather_rows(g.s, VG_DTYPE_F32, g.c, g.a, (const int32_t *)(g.b + 2), ROWS, 8),
                       VG_ERR_INVALID_ARG, "gather_rows", "align");
    VG_CHECK_FAILS_ALL(vg_op_gather_rows(g.s, VG_DTYPE_I64, g.c + 4, g.a, g.idx, ROWS, 8),
                       VG_ERR_INVALID_ARG, "gather_rows", "align");
    assert_zero(g.c, 512);
    VG_CHECK(vg_op_gather_rows(g.s, VG_DTYPE_U8, g.c + 3, g.a + 1, g.idx, ROWS, 5)); /* any dtype */
    VG_CHECK(vg_op_gather_rows(g.s, VG_DTYPE_F32, g.c, g.a, g.idx, 0, 8));         /* no rows */
    VG_CHECK(vg_stream_sync(g.s));
}

static void test_rmsnorm(void **state)
{
    (void)state;
    VG_CHECK_FAILS_ALL(vg_op_rmsnorm(g.s, VG_DTYPE_F32, NULL, g.b, g.c, ROWS, 8, 1e-6f),
                       VG_ERR_INVALID_ARG, "rmsnorm", "NULL");
    VG_CHECK_FAILS_ALL(vg_op_rmsnorm(g.s, VG_DTYPE_F32, g.a, NULL, g.c, ROWS, 8, 1e-6f),
                       VG_ERR_INVALID_ARG, "rmsnorm", "NULL");
    VG_CHECK_FAILS_ALL(vg_op_rmsnorm(g.s, VG_DTYPE_F32, g.a, g.b, NULL, ROWS, 8, 1e-6f),
                       VG_ERR_INVALID_ARG, "rmsnorm", "NULL");
    VG_CHECK_FAILS_ALL(vg_op_rmsnorm(g.s, VG_DTYPE_I32, g.a, g.b, g.c, ROWS, 8, 1e-6f),
                       VG_ERR_INVALID_ARG, "rmsnorm", "I32");
    VG_CHECK_FAILS_ALL(vg_op_rmsnorm(g.s, VG_DTYPE_F32, g.a, g.b, g.c, ROWS, 0, 1e-6f),
                       VG_ERR_INVALID_ARG, "rmsnorm", "cols");
    VG_CHECK_FAILS_ALL(vg_op_rmsnorm(g.s, VG_DTYPE_F32, g.a, g.b, g.c, -5, 8, 1e-6f),
                       VG_ERR_INVALID_ARG, "rmsnorm", "-5");
    VG_CHECK_FAILS_ALL(vg_op_rmsnorm(g.s, VG_DTYPE_F32, g.a, g.b, g.c, ROWS, 8, -0.5f),
                       VG_ERR_INVALID_ARG, "rmsnorm", "eps");
    VG_CHECK_FAILS_ALL(vg_op_rmsnorm(g.s, VG_DTYPE_BF16, g.a, g.b + 1, g.c, ROWS, 8, 1e-6f),
                       VG_ERR_INVALID_ARG, "rmsnorm", "align");
    assert_zero(g.c, 256);
    VG_CHECK(vg_op_rmsnorm(g.s, VG_DTYPE_F32, g.c, g.b, g.c, ROWS, 8, 1e-6f)); /* out = x */
    VG_CHECK(vg_op_rmsnorm(g.s, VG_DTYPE_F32, g.a, g.b, g.c, 0, 8, 0.0f));    /* eps 0, no rows */
    VG_CHECK(vg_stream_sync(g.s));
}

static void test_rotary_2d(void **state)
{
    (void)state;
    int64_t ld = 3 * HIDDEN;
#define ROT(x, ld_, heads, hd, pos, theta) vg_op_rotary_2d(g.s, VG_DTYPE_F32, x, ld_, ROWS, heads, hd, pos, theta)
    VG_CHECK_FAILS_ALL(ROT(NULL, ld, HEADS, HD, g.pos, 1e4f), VG_ERR_INVALID_ARG, "rotary_2d", "NULL");
    VG_CHECK_FAILS_ALL(ROT(g.c, ld, HEADS, HD, NULL, 1e4f), VG_ERR_INVALID_ARG, "rotary_2d", "NULL");
    VG_CHECK_FAILS_ALL(ROT(g.c, ld, HEADS, 18, g.pos, 1e4f), VG_ERR_INVALID_ARG, "rotary_2d", "head_dim", "18");
    VG_CHECK_FAILS_ALL(ROT(g.c, ld, HEADS, 0, g.pos, 1e4f), VG_ERR_INVALID_ARG, "rotary_2d", "head_dim");
    VG_CHECK_FAILS_ALL(ROT(g.c, ld, 0, HD, g.pos, 1e4f), VG_ERR_INVALID_ARG, "rotary_2d", "heads");
    VG_CHECK_FAILS_ALL(ROT(g.c, 47, 3, HD, g.pos, 1e4f), VG_ERR_INVALID_ARG, "rotary_2d", "ld", "47");
    VG_CHECK_FAILS_ALL(ROT(g.c, ld, HEADS, HD, g.pos, -2.0f), VG_ERR_INVALID_ARG, "rotary_2d", "theta");
    VG_CHECK_FAILS_ALL(ROT(g.c, ld, HEADS, HD, g.pos, 0.0f), VG_ERR_INVALID_ARG, "rotary_2d", "theta");
    VG_CHECK_FAILS_ALL(ROT(g.c, ld, HEADS, HD, (const int32_t *)(g.b + 2), 1e4f), VG_ERR_INVALID_ARG,
                       "rotary_2d", "align");
    VG_CHECK_FAILS_ALL(ROT(g.c + 2, ld, HEADS, HD, g.pos, 1e4f), VG_ERR_INVALID_ARG, "rotary_2d", "align");
#undef ROT
    VG_CHECK_FAILS_ALL(vg_op_rotary_2d(g.s, VG_DTYPE_U8, g.c, ld, ROWS, HEADS, HD, g.pos, 1e4f),
                       VG_ERR_INVALID_ARG, "rotary_2d", "U8");
    VG_CHECK(vg_op_rotary_2d(g.s, VG_DTYPE_F32, g.c, 48, ROWS, 3, HD, g.pos, 1e4f)); /* ld = heads·hd */
    VG_CHECK(vg_stream_sync(g.s));
}

/* attention and attention_rotary share every check but the rotary ones */
static vg_status attn(vg_op_id op, vg_dtype t, const void *qkv, int64_t ld_qkv, void *out,
                      int64_t ld_out, int64_t rows, int heads, int hd, const int32_t *cu, int nseg,
                      const int32_t *pos, float theta)
{
    if (op == VG_OP_ATTENTION)
        return vg_op_attention(g.s, t, qkv, ld_qkv, out, ld_out, rows, heads, hd, cu, nseg, 0.25f);
    return vg_op_attention_rotary(g.s, t, qkv, ld_qkv, out, ld_out, rows, heads, hd, cu, nseg,
                                  0.25f, pos, theta);
}

static void attention_checks(vg_op_id op)
{
    const char *name = vg_op_name(op);
    const vg_dtype F = VG_DTYPE_F32;
    const int64_t L = 3 * HIDDEN;
    VG_CHECK_FAILS_ALL(attn(op, F, NULL, L, g.c, HIDDEN, ROWS, HEADS, HD, g.cu, 1, g.pos, 1e4f),
                       VG_ERR_INVALID_ARG, name, "NULL");
    VG_CHECK_FAILS_ALL(attn(op, F, g.a, L, NULL, HIDDEN, ROWS, HEADS, HD, g.cu, 1, g.pos, 1e4f),
                       VG_ERR_INVALID_ARG, name, "NULL");
    VG_CHECK_FAILS_ALL(attn(op, F, g.a, L, g.c, HIDDEN, ROWS, HEADS, HD, NULL, 1, g.pos, 1e4f),
                       VG_ERR_INVALID_ARG, name, "NULL");
    VG_CHECK_FAILS_ALL(attn(op, VG_DTYPE_I32, g.a, L, g.c, HIDDEN, ROWS, HEADS, HD, g.cu, 1, g.pos, 1e4f),
                       VG_ERR_INVALID_ARG, name, "I32");
    VG_CHECK_FAILS_ALL(attn(op, F, g.a, L, g.c, HIDDEN, ROWS, HEADS, 0, g.cu, 1, g.pos, 1e4f),
                       VG_ERR_INVALID_ARG, name, "head_dim");
    VG_CHECK_FAILS_ALL(attn(op, F, g.a, 3 * 300, g.c, 300, ROWS, 1, 300, g.cu, 1, g.pos, 1e4f),
                       VG_ERR_INVALID_ARG, name, "head_dim", "300");
    VG_CHECK_FAILS_ALL(attn(op, F, g.a, 3 * 260, g.c, 260, ROWS, 1, 260, g.cu, 1, g.pos, 1e4f),
                       VG_ERR_INVALID_ARG, name, "head_dim", "260");
    VG_CHECK_FAILS_ALL(attn(op, F, g.a, L, g.c, HIDDEN, ROWS, 0, HD, g.cu, 1, g.pos, 1e4f),
                       VG_ERR_INVALID_ARG, name, "heads");
    VG_CHECK_FAILS_ALL(attn(op, F, g.a, L, g.c, HIDDEN, ROWS, HEADS, HD, g.cu, 0, g.pos, 1e4f),
                       VG_ERR_INVALID_ARG, name, "num_segments");
    VG_CHECK_FAILS_ALL(attn(op, F, g.a, 95, g.c, HIDDEN, ROWS, HEADS, HD, g.cu, 1, g.pos, 1e4f),
                       VG_ERR_INVALID_ARG, name, "ld_qkv", "95");
    VG_CHECK_FAILS_ALL(attn(op, F, g.a, L, g.c, 31, ROWS, HEADS, HD, g.cu, 1, g.pos, 1e4f),
                       VG_ERR_INVALID_ARG, name, "ld_out", "31");
    VG_CHECK_FAILS_ALL(attn(op, F, g.a, L, g.c, HIDDEN, -2, HEADS, HD, g.cu, 1, g.pos, 1e4f),
                       VG_ERR_INVALID_ARG, name, "-2");
    VG_CHECK_FAILS_ALL(attn(op, F, g.a, L, g.c, HIDDEN, ROWS, HEADS, HD, (const int32_t *)(g.b + 1), 1,
                            g.pos, 1e4f), VG_ERR_INVALID_ARG, name, "align");
    VG_CHECK_FAILS_ALL(attn(op, VG_DTYPE_BF16, g.a + 1, L, g.c, HIDDEN, ROWS, HEADS, HD, g.cu, 1, g.pos,
                            1e4f), VG_ERR_INVALID_ARG, name, "align");
    if (op == VG_OP_ATTENTION_ROTARY) {
        VG_CHECK_FAILS_ALL(attn(op, F, g.a, 3 * 3 * 18, g.c, 3 * 18, ROWS, 3, 18, g.cu, 1, g.pos, 1e4f),
                           VG_ERR_INVALID_ARG, name, "head_dim", "18");
        VG_CHECK_FAILS_ALL(attn(op, F, g.a, L, g.c, HIDDEN, ROWS, HEADS, HD, g.cu, 1, NULL, 1e4f),
                           VG_ERR_INVALID_ARG, name, "NULL");
        VG_CHECK_FAILS_ALL(attn(op, F, g.a, L, g.c, HIDDEN, ROWS, HEADS, HD, g.cu, 1, g.pos, -1.0f),
                           VG_ERR_INVALID_ARG, name, "theta");
    }
    assert_zero(g.c, 1024);
    /* within the rules: head_dim 1 and 256 (attention; rotary needs multiples of 4), no rows */
    if (op == VG_OP_ATTENTION) {
        VG_CHECK(attn(op, F, g.a, 3, g.c, 1, ROWS, 1, 1, g.cu, 1, NULL, 0));
        VG_CHECK(attn(op, F, g.a, 3 * 256, g.c, 256, ROWS, 1, 256, g.cu, 1, NULL, 0));
    } else {
        VG_CHECK(attn(op, F, g.a, 3 * 4, g.c, 4, ROWS, 1, 4, g.cu, 1, g.pos, 1e4f));
        VG_CHECK(attn(op, F, g.a, 3 * 256, g.c, 256, ROWS, 1, 256, g.cu, 1, g.pos, 1e4f));
    }
    VG_CHECK(vg_mem_set(g.s, g.c, 0, BYTES));
    VG_CHECK(vg_stream_sync(g.s));
}

static void test_attention(void **state) { (void)state; attention_checks(VG_OP_ATTENTION); }
static void test_attention_rotary(void **state) { (void)state; attention_checks(VG_OP_ATTENTION_ROTARY); }

static void test_silu_mul(void **state)
{
    (void)state;
    const vg_dtype F = VG_DTYPE_F32;
    VG_CHECK_FAILS_ALL(vg_op_silu_mul(g.s, F, NULL, 100, g.c, 50, ROWS, 50), VG_ERR_INVALID_ARG, "silu_mul", "NULL");
    VG_CHECK_FAILS_ALL(vg_op_silu_mul(g.s, F, g.a, 100, NULL, 50, ROWS, 50), VG_ERR_INVALID_ARG, "silu_mul", "NULL");
    VG_CHECK_FAILS_ALL(vg_op_silu_mul(g.s, F, g.a, 99, g.c, 50, ROWS, 50), VG_ERR_INVALID_ARG,
                       "silu_mul", "ld_in", "99");
    VG_CHECK_FAILS_ALL(vg_op_silu_mul(g.s, F, g.a, 100, g.c, 49, ROWS, 50), VG_ERR_INVALID_ARG,
                       "silu_mul", "ld_out", "49");
    VG_CHECK_FAILS_ALL(vg_op_silu_mul(g.s, F, g.a, 100, g.c, 50, ROWS, 0), VG_ERR_INVALID_ARG, "silu_mul", "cols");
    VG_CHECK_FAILS_ALL(vg_op_silu_mul(g.s, VG_DTYPE_I64, g.a, 100, g.c, 50, ROWS, 50), VG_ERR_INVALID_ARG,
                       "silu_mul", "I64");
    VG_CHECK_FAILS_ALL(vg_op_silu_mul(g.s, VG_DTYPE_F16, g.a, 100, g.c + 1, 50, ROWS, 50), VG_ERR_INVALID_ARG,
                       "silu_mul", "align");
    assert_zero(g.c, 1024);
    VG_CHECK(vg_op_silu_mul(g.s, F, g.a, 100, g.c, 50, ROWS, 50));
    VG_CHECK(vg_mem_set(g.s, g.c, 0, BYTES));
    VG_CHECK(vg_stream_sync(g.s));
}

static void test_convert(void **state)
{
    (void)state;
    const vg_dtype F = VG_DTYPE_F32, B = VG_DTYPE_BF16, H = VG_DTYPE_F16;
    VG_CHECK_FAILS_ALL(vg_op_convert(g.s, F, NULL, B, g.c, 16), VG_ERR_INVALID_ARG, "convert", "NULL");
    VG_CHECK_FAILS_ALL(vg_op_convert(g.s, F, g.a, B, NULL, 16), VG_ERR_INVALID_ARG, "convert", "NULL");
    VG_CHECK_FAILS_ALL(vg_op_convert(g.s, VG_DTYPE_I32, g.a, B, g.c, 16), VG_ERR_INVALID_ARG, "convert", "I32");
    VG_CHECK_FAILS_ALL(vg_op_convert(g.s, F, g.a, VG_DTYPE_U8, g.c, 16), VG_ERR_INVALID_ARG, "convert", "U8");
    /* in place between sizes that differ: every element would overwrite the next one's source */
    VG_CHECK_FAILS_ALL(vg_op_convert(g.s, F, g.c, B, g.c, 16), VG_ERR_INVALID_ARG, "convert", "in place");
    VG_CHECK_FAILS_ALL(vg_op_convert(g.s, H, g.c, F, g.c, 16), VG_ERR_INVALID_ARG, "convert", "in place");
    VG_CHECK_FAILS_ALL(vg_op_convert(g.s, F, g.a + 2, B, g.c, 16), VG_ERR_INVALID_ARG, "convert", "align");
    VG_CHECK_FAILS_ALL(vg_op_convert(g.s, F, g.a, H, g.c + 1, 16), VG_ERR_INVALID_ARG, "convert", "align");
    assert_zero(g.c, 256);
    VG_CHECK(vg_op_convert(g.s, B, g.c, H, g.c, 16)); /* in place, equal sizes */
    VG_CHECK(vg_op_convert(g.s, F, g.a, F, g.c, 0));
    VG_CHECK(vg_stream_sync(g.s));
}

static void test_rotary(void **state)
{
    (void)state;
#define ROT(x, ld_, heads, hd, pos, theta) vg_op_rotary(g.s, VG_DTYPE_F32, x, ld_, ROWS, heads, hd, pos, theta)
    VG_CHECK_FAILS_ALL(ROT(NULL, HIDDEN, HEADS, HD, g.pos, 1e4f), VG_ERR_INVALID_ARG, "rotary", "x is NULL");
    VG_CHECK_FAILS_ALL(ROT(g.c, HIDDEN, HEADS, HD, NULL, 1e4f), VG_ERR_INVALID_ARG, "rotary", "pos is NULL");
    VG_CHECK_FAILS_ALL(ROT(g.c, HIDDEN, HEADS, 15, g.pos, 1e4f), VG_ERR_INVALID_ARG, "rotary", "head_dim", "15");
    VG_CHECK_FAILS_ALL(ROT(g.c, HIDDEN, HEADS, 0, g.pos, 1e4f), VG_ERR_INVALID_ARG, "rotary", "head_dim");
    VG_CHECK_FAILS_ALL(ROT(g.c, HIDDEN, 0, HD, g.pos, 1e4f), VG_ERR_INVALID_ARG, "rotary", "heads");
    VG_CHECK_FAILS_ALL(ROT(g.c, 31, HEADS, HD, g.pos, 1e4f), VG_ERR_INVALID_ARG, "rotary", "ld", "31");
    VG_CHECK_FAILS_ALL(ROT(g.c, HIDDEN, HEADS, HD, g.pos, 0.0f), VG_ERR_INVALID_ARG, "rotary", "theta");
    VG_CHECK_FAILS_ALL(ROT(g.c, HIDDEN, HEADS, HD, (const int32_t *)(g.b + 2), 1e4f), VG_ERR_INVALID_ARG,
                       "rotary", "pos", "align");
    VG_CHECK_FAILS_ALL(ROT(g.c + 2, HIDDEN, HEADS, HD, g.pos, 1e4f), VG_ERR_INVALID_ARG, "rotary", "x", "align");
#undef ROT
    VG_CHECK_FAILS_ALL(vg_op_rotary(g.s, VG_DTYPE_I32, g.c, HIDDEN, ROWS, HEADS, HD, g.pos, 1e4f),
                       VG_ERR_INVALID_ARG, "rotary", "I32");
    VG_CHECK_FAILS_ALL(vg_op_rotary(g.s, VG_DTYPE_F32, g.c, HIDDEN, -1, HEADS, HD, g.pos, 1e4f),
                       VG_ERR_INVALID_ARG, "rotary", "rows", "-1");
    assert_zero(g.c, 256);
    VG_CHECK(vg_op_rotary(g.s, VG_DTYPE_F32, g.c, 6, ROWS, 1, 6, g.pos, 1e4f)); /* head_dim 6: even is enough */
    VG_CHECK(vg_op_rotary(g.s, VG_DTYPE_F32, NULL, HIDDEN, 0, HEADS, HD, NULL, 1e4f)); /* no rows */
    VG_CHECK(vg_stream_sync(g.s));
    VG_CHECK(vg_mem_set(g.s, g.c, 0, BYTES)); /* the valid calls wrote; the next test starts from zeros */
    VG_CHECK(vg_stream_sync(g.s));
}

static void test_rmsnorm_heads(void **state)
{
    (void)state;
#define RMH(x, ld_, heads, hd, w, eps) vg_op_rmsnorm_heads(g.s, VG_DTYPE_F32, x, ld_, ROWS, heads, hd, w, eps)
    VG_CHECK_FAILS_ALL(RMH(NULL, HIDDEN, HEADS, HD, g.b, 1e-6f), VG_ERR_INVALID_ARG, "rmsnorm_heads", "x is NULL");
    VG_CHECK_FAILS_ALL(RMH(g.c, HIDDEN, HEADS, HD, NULL, 1e-6f), VG_ERR_INVALID_ARG, "rmsnorm_heads", "w is NULL");
    VG_CHECK_FAILS_ALL(RMH(g.c, HIDDEN, 0, HD, g.b, 1e-6f), VG_ERR_INVALID_ARG, "rmsnorm_heads", "heads", "0");
    VG_CHECK_FAILS_ALL(RMH(g.c, HIDDEN, HEADS, 0, g.b, 1e-6f), VG_ERR_INVALID_ARG, "rmsnorm_heads", "head_dim", "0");
    VG_CHECK_FAILS_ALL(RMH(g.c, 20, HEADS, HD, g.b, 1e-6f), VG_ERR_INVALID_ARG, "rmsnorm_heads", "ld", "20", "32");
    VG_CHECK_FAILS_ALL(RMH(g.c, HIDDEN, HEADS, HD, g.b, -1.0f), VG_ERR_INVALID_ARG, "rmsnorm_heads", "eps");
    VG_CHECK_FAILS_ALL(RMH(g.c + 2, HIDDEN, HEADS, HD, g.b, 1e-6f), VG_ERR_INVALID_ARG, "rmsnorm_heads", "x", "align");
    VG_CHECK_FAILS_ALL(RMH(g.c, HIDDEN, HEADS, HD, g.b + 1, 1e-6f), VG_ERR_INVALID_ARG, "rmsnorm_heads", "w", "align");
#undef RMH
    VG_CHECK_FAILS_ALL(vg_op_rmsnorm_heads(g.s, VG_DTYPE_I64, g.c, HIDDEN, ROWS, HEADS, HD, g.b, 0.0f),
                       VG_ERR_INVALID_ARG, "rmsnorm_heads", "I64");
    assert_zero(g.c, 256);
    VG_CHECK(vg_op_rmsnorm_heads(g.s, VG_DTYPE_BF16, g.c, 7, ROWS, 1, 7, g.b, 1e-6f)); /* any head_dim */
    VG_CHECK(vg_stream_sync(g.s));
    VG_CHECK(vg_mem_set(g.s, g.c, 0, BYTES)); /* the valid calls wrote; the next test starts from zeros */
    VG_CHECK(vg_stream_sync(g.s));
}

static void test_kv_store(void **state)
{
    (void)state;
    char *kc = g.c, *vc = g.c + BYTES / 2;
#define KVS(k, ldk, v, ldv, kc_, vc_, slots, kvh, hd) \
    vg_op_kv_store(g.s, VG_DTYPE_F32, k, ldk, v, ldv, kc_, vc_, slots, ROWS, kvh, hd)
    VG_CHECK_FAILS_ALL(KVS(NULL, HIDDEN, g.b, HIDDEN, kc, vc, g.idx, HEADS, HD), VG_ERR_INVALID_ARG, "kv_store", "k is NULL");
    VG_CHECK_FAILS_ALL(KVS(g.a, HIDDEN, NULL, HIDDEN, kc, vc, g.idx, HEADS, HD), VG_ERR_INVALID_ARG, "kv_store", "v is NULL");
    VG_CHECK_FAILS_ALL(KVS(g.a, HIDDEN, g.b, HIDDEN, NULL, vc, g.idx, HEADS, HD), VG_ERR_INVALID_ARG, "kv_store", "k_cache is NULL");
    VG_CHECK_FAILS_ALL(KVS(g.a, HIDDEN, g.b, HIDDEN, kc, NULL, g.idx, HEADS, HD), VG_ERR_INVALID_ARG, "kv_store", "v_cache is NULL");
    VG_CHECK_FAILS_ALL(KVS(g.a, HIDDEN, g.b, HIDDEN, kc, vc, NULL, HEADS, HD), VG_ERR_INVALID_ARG, "kv_store", "slots is NULL");
    VG_CHECK_FAILS_ALL(KVS(g.a, HIDDEN, g.b, HIDDEN, kc, vc, g.idx, 0, HD), VG_ERR_INVALID_ARG, "kv_store", "kv_heads", "0");
    VG_CHECK_FAILS_ALL(KVS(g.a, HIDDEN, g.b, HIDDEN, kc, vc, g.idx, HEADS, -3), VG_ERR_INVALID_ARG, "kv_store", "head_dim", "-3");
    VG_CHECK_FAILS_ALL(KVS(g.a, 31, g.b, HIDDEN, kc, vc, g.idx, HEADS, HD), VG_ERR_INVALID_ARG, "kv_store", "ld_k", "31");
    VG_CHECK_FAILS_ALL(KVS(g.a, HIDDEN, g.b, 30, kc, vc, g.idx, HEADS, HD), VG_ERR_INVALID_ARG, "kv_store", "ld_v", "30");
    VG_CHECK_FAILS_ALL(KVS(g.a + 2, HIDDEN, g.b, HIDDEN, kc, vc, g.idx, HEADS, HD), VG_ERR_INVALID_ARG, "kv_store", "k ", "align");
    VG_CHECK_FAILS_ALL(KVS(g.a, HIDDEN, g.b, HIDDEN, kc, vc + 2, g.idx, HEADS, HD), VG_ERR_INVALID_ARG, "kv_store", "v_cache", "align");
    VG_CHECK_FAILS_ALL(KVS(g.a, HIDDEN, g.b, HIDDEN, kc, vc, (const int32_t *)(g.b + 2), HEADS, HD), VG_ERR_INVALID_ARG,
                       "kv_store", "slots", "align");
#undef KVS
    VG_CHECK_FAILS_ALL(vg_op_kv_store(g.s, VG_DTYPE_U8, g.a, HIDDEN, g.b, HIDDEN, kc, vc, g.idx, ROWS, HEADS, HD),
                       VG_ERR_INVALID_ARG, "kv_store", "U8");
    assert_zero(g.c, 256);
    VG_CHECK(vg_op_kv_store(g.s, VG_DTYPE_F16, g.a, HIDDEN, g.b, HIDDEN, kc, vc, g.idx, 0, HEADS, HD));
    VG_CHECK(vg_stream_sync(g.s));
}

static void test_rotary_paged_attention(void **state)
{
    (void)state;
    const char *op = "rotary_paged_attention";
    VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(g.s, NULL), VG_ERR_INVALID_ARG, op, "args is NULL");
    VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(NULL, NULL), VG_ERR_INVALID_ARG, op, "stream is NULL");
    vg_rotary_paged_args a = rotary_paged_args();
    a.struct_size = 8;
    VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(g.s, &a), VG_ERR_INVALID_ARG, op, "struct_size", "8");
    /* each of the two ops' checks, then the op's own */
    a = rotary_paged_args(), a.pos = NULL;
    VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(g.s, &a), VG_ERR_INVALID_ARG, "rotary_kv_store", "pos is NULL");
    a = rotary_paged_args(), a.k_norm = NULL;
    VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(g.s, &a), VG_ERR_INVALID_ARG, "q_norm and k_norm");
    a = rotary_paged_args(), a.num_seqs = 0;
    VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(g.s, &a), VG_ERR_INVALID_ARG, "paged_attention", "num_seqs", "0");
    a = rotary_paged_args(), a.heads = 3;
    VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(g.s, &a), VG_ERR_INVALID_ARG, "ld");
    a = rotary_paged_args(), a.ld_out = HIDDEN - 1;
    VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(g.s, &a), VG_ERR_INVALID_ARG, "paged_attention", "ld_out");
    a = rotary_paged_args(), a.out = g.c + 8;
    VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(g.s, &a), VG_ERR_INVALID_ARG, op, "out overlaps");
    a = rotary_paged_args(), a.out = (char *)a.k_cache;
    VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(g.s, &a), VG_ERR_INVALID_ARG, op, "out overlaps");
    a = rotary_paged_args(), a.out = g.b + BYTES / 2 + 15 * HD * 4; /* the cache's last slot */
    VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(g.s, &a), VG_ERR_INVALID_ARG, op, "out overlaps");
    a = rotary_paged_args(), a.num_slots = 0;
    VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(g.s, &a), VG_ERR_INVALID_ARG, op, "num_slots", "0");
    a = rotary_paged_args(), a.k_cache = g.c + 2 * HIDDEN * 4 * (ROWS - 1); /* the last qkv row */
    VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(g.s, &a), VG_ERR_INVALID_ARG, "overlaps qkv");
    a = rotary_paged_args(), a.qkv = g.c + 4096, a.k_cache = g.c, a.num_slots = 65; /* slot 64 reaches qkv */
    VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(g.s, &a), VG_ERR_INVALID_ARG, op, "a cache overlaps qkv");
    a = rotary_paged_args(), a.dtype = VG_DTYPE_I32;
    VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(g.s, &a), VG_ERR_INVALID_ARG, "I32");
    assert_zero(g.c, 256);
    /* within the rules: no rows */
    a = rotary_paged_args(), a.rows = 0;
    VG_CHECK(vg_op_rotary_paged_attention(g.s, &a));
    VG_CHECK(vg_stream_sync(g.s));
}

/* The folded norm (op table version 10): each field of norm_x and qkv_bias checked, naming it; a
 * refused call runs nothing (the bias of ones would reach out and the value cache); a caller
 * built against version 8's struct has neither; right beside qkv and a cache they are fine. */
static void test_rotary_paged_attention_norm_x(void **state)
{
    (void)state;
    const char *op = "rotary_paged_attention";
    char *x = g.a + BYTES / 4, *bias = x + 1024, *out = g.b + 256, *vc = g.b + BYTES / 2;
    const size_t out_bytes = ROWS * HIDDEN * 4, x_bytes = ROWS * 8 * 4, cache_bytes = 16 * HD * 4;
    VG_CHECK(vg_op_fill(g.s, bias, VG_DTYPE_F32, (HEADS + 2) * HD, 1.0));
    vg_rotary_paged_args a;
#define NORM_X_FAILS(field_change, ...)                                                          \
    do {                                                                                         \
        a = rotary_paged_norm_x_args();                                                          \
        field_change;                                                                            \
        VG_CHECK_FAILS_ALL(vg_op_rotary_paged_attention(g.s, &a), VG_ERR_INVALID_ARG, op, __VA_ARGS__); \
    } while (0)
    NORM_X_FAILS(a.norm_x = NULL, "qkv_bias", "without norm_x");
    NORM_X_FAILS(a.norm_x_cols = 0, "norm_x_cols", "0");
    NORM_X_FAILS(a.norm_x_cols = -8, "norm_x_cols", "-8");
    NORM_X_FAILS((a.norm_x_cols = OP_COLS_TOO_MANY, a.ld_norm_x = OP_COLS_TOO_MANY), "norm_x_cols", "2147483648");
    NORM_X_FAILS(a.ld_norm_x = 7, "ld_norm_x", "7", "norm_x_cols");
    NORM_X_FAILS(a.ld_norm_x = 1LL << 60, "ld_norm_x", "address space");
    NORM_X_FAILS(a.norm_x_eps = -1.0f, "norm_x_eps", "-1");
    NORM_X_FAILS(a.norm_x_eps = NAN, "norm_x_eps", "nan");
    NORM_X_FAILS(a.norm_x_eps = INFINITY, "norm_x_eps", "inf");
    NORM_X_FAILS(a.norm_x = x + 2, "norm_x", "align");
    NORM_X_FAILS(a.qkv_bias = bias + 2, "qkv_bias", "align");
    NORM_X_FAILS((a.dtype = VG_DTYPE_BF16, a.norm_x = x + 1), "norm_x", "align");
    /* overlaps, most by one element: qkv's last, out's first, the key cache's last, the value
     * cache's first; the bias inside qkv, on out's last, on the value cache's first */
    NORM_X_FAILS(a.norm_x = g.c + 2 * HIDDEN * 4 * ROWS - 4, "norm_x overlaps");
    NORM_X_FAILS(a.norm_x = out - x_bytes + 4, "norm_x overlaps");
    NORM_X_FAILS(a.norm_x = g.a + cache_bytes - 4, "norm_x overlaps");
    NORM_X_FAILS(a.norm_x = vc - x_bytes + 4, "norm_x overlaps");
    NORM_X_FAILS(a.qkv_bias = g.c + 512, "qkv_bias overlaps");
    NORM_X_FAILS(a.qkv_bias = out + out_bytes - 4, "qkv_bias overlaps");
    NORM_X_FAILS(a.qkv_bias = vc, "qkv_bias overlaps");
    /* the hint that the op before writes no table (op table version 12): 0 or 1 */
    NORM_X_FAILS(a.tables_static = 2, "tables_static", "2");
    NORM_X_FAILS((a.norm_x = NULL, a.qkv_bias = NULL, a.tables_static = -1), "tables_static", "-1");
#undef NORM_X_FAILS
    assert_zero(out, out_bytes);
    assert_zero(vc, cache_bytes);
    /* within the rules: no rows (nothing to overlap); version 8's struct, whose size ends before
     * norm_x (neither read: the bias is not applied); norm_x right after qkv and the bias right
     * after the value cache (it runs: row 0, which reads only its own position, gets the bias as
     * its value, the projection being zeros) */
    a = rotary_paged_norm_x_args(), a.rows = 0, a.norm_x = g.c;
    VG_CHECK(vg_op_rotary_paged_attention(g.s, &a));
    a = rotary_paged_norm_x_args(), a.struct_size = (uint32_t)VG_ROTARY_PAGED_ARGS_SIZE_8, a.norm_x_cols = 0;
    a.tables_static = 7; /* past version 8's struct_size too: never read */
    VG_CHECK(vg_op_rotary_paged_attention(g.s, &a));
    assert_zero(out, out_bytes);
    a = rotary_paged_norm_x_args(), a.norm_x = g.c + 2 * HIDDEN * 4 * ROWS, a.qkv_bias = vc + cache_bytes;
    VG_CHECK(vg_mem_copy_d2d(g.s, vc + cache_bytes, bias, (HEADS + 2) * HD * 4));
    VG_CHECK(vg_op_rotary_paged_attention(g.s, &a));
    float got[HIDDEN];
    VG_CHECK(vg_mem_copy_d2h(g.s, got, out, sizeof got));
    VG_CHECK(vg_stream_sync(g.s));
    for (int i = 0; i < HIDDEN; i++) assert_true(got[i] == 1.0f);
    /* the other tests find the buffers as the fixture left them: zeros */
    VG_CHECK(vg_mem_set(g.s, g.a, 0, BYTES));
    VG_CHECK(vg_mem_set(g.s, g.b, 0, BYTES));
    VG_CHECK(vg_mem_set(g.s, g.c, 0, BYTES));
    VG_CHECK(vg_stream_sync(g.s));
}

static void test_rotary_kv_store(void **state)
{
    (void)state;
    char *kc = g.a, *vc = g.b + BYTES / 2;
    const int64_t ld = 2 * HIDDEN; /* HEADS query heads, one key and one value head */
#define RKS(x, ld_, h, kvh, hd, qn, kn, eps, pos, th, kc_, vc_, slots) \
    vg_op_rotary_kv_store(g.s, VG_DTYPE_F32, x, ld_, ROWS, h, kvh, hd, qn, kn, eps, pos, th, kc_, vc_, slots)
    VG_CHECK_FAILS_ALL(RKS(NULL, ld, HEADS, 1, HD, g.b, g.b, 1e-6f, g.pos, 1e4f, kc, vc, g.idx), VG_ERR_INVALID_ARG, "rotary_kv_store", "qkv is NULL");
    VG_CHECK_FAILS_ALL(RKS(g.c, ld, HEADS, 1, HD, g.b, g.b, 1e-6f, NULL, 1e4f, kc, vc, g.idx), VG_ERR_INVALID_ARG, "rotary_kv_store", "pos is NULL");
    VG_CHECK_FAILS_ALL(RKS(g.c, ld, HEADS, 1, HD, g.b, g.b, 1e-6f, g.pos, 1e4f, NULL, vc, g.idx), VG_ERR_INVALID_ARG, "rotary_kv_store", "k_cache is NULL");
    VG_CHECK_FAILS_ALL(RKS(g.c, ld, HEADS, 1, HD, g.b, g.b, 1e-6f, g.pos, 1e4f, kc, NULL, g.idx), VG_ERR_INVALID_ARG, "rotary_kv_store", "v_cache is NULL");
    VG_CHECK_FAILS_ALL(RKS(g.c, ld, HEADS, 1, HD, g.b, g.b, 1e-6f, g.pos, 1e4f, kc, vc, NULL), VG_ERR_INVALID_ARG, "rotary_kv_store", "slots is NULL");
    VG_CHECK_FAILS_ALL(RKS(g.c, ld, HEADS, 1, HD, g.b, NULL, 1e-6f, g.pos, 1e4f, kc, vc, g.idx), VG_ERR_INVALID_ARG, "rotary_kv_store", "q_norm and k_norm");
    VG_CHECK_FAILS_ALL(RKS(g.c, ld, 0, 1, HD, g.b, g.b, 1e-6f, g.pos, 1e4f, kc, vc, g.idx), VG_ERR_INVALID_ARG, "rotary_kv_store", "heads", "0");
    VG_CHECK_FAILS_ALL(RKS(g.c, ld, HEADS, 0, HD, g.b, g.b, 1e-6f, g.pos, 1e4f, kc, vc, g.idx), VG_ERR_INVALID_ARG, "rotary_kv_store", "kv_heads", "0");
    VG_CHECK_FAILS_ALL(RKS(g.c, ld, HEADS, 1, 15, g.b, g.b, 1e-6f, g.pos, 1e4f, kc, vc, g.idx), VG_ERR_INVALID_ARG, "rotary_kv_store", "head_dim", "15");
    VG_CHECK_FAILS_ALL(RKS(g.c, ld - 1, HEADS, 1, HD, g.b, g.b, 1e-6f, g.pos, 1e4f, kc, vc, g.idx), VG_ERR_INVALID_ARG, "rotary_kv_store", "ld", "63");
    VG_CHECK_FAILS_ALL(RKS(g.c, ld, HEADS, 1, HD, g.b, g.b, -1.0f, g.pos, 1e4f, kc, vc, g.idx), VG_ERR_INVALID_ARG, "rotary_kv_store", "eps");
    VG_CHECK_FAILS_ALL(RKS(g.c, ld, HEADS, 1, HD, g.b, g.b, 1e-6f, g.pos, 0.0f, kc, vc, g.idx), VG_ERR_INVALID_ARG, "rotary_kv_store", "theta");
    VG_CHECK_FAILS_ALL(RKS(g.c, ld, HEADS, 1, HD, g.b + 2, g.b, 1e-6f, g.pos, 1e4f, kc, vc, g.idx), VG_ERR_INVALID_ARG, "rotary_kv_store", "q_norm", "align");
    VG_CHECK_FAILS_ALL(RKS(g.c, ld, HEADS, 1, HD, g.b, g.b, 1e-6f, g.pos, 1e4f, kc + 2, vc, g.idx), VG_ERR_INVALID_ARG, "rotary_kv_store", "k_cache", "align");
    VG_CHECK_FAILS_ALL(RKS(g.c, ld, HEADS, 1, HD, g.b, g.b, 1e-6f, g.pos, 1e4f, kc, vc, (const int32_t *)(g.b + 2)), VG_ERR_INVALID_ARG, "rotary_kv_store", "slots", "align");
    VG_CHECK_FAILS_ALL(RKS(g.c, ld, HEADS, 1, HD, g.b, g.b, 1e-6f, g.pos, 1e4f, g.c + 4 * HIDDEN, vc, g.idx), VG_ERR_INVALID_ARG, "rotary_kv_store", "overlaps qkv");
#undef RKS
    VG_CHECK_FAILS_ALL(vg_op_rotary_kv_store(g.s, VG_DTYPE_I32, g.c, ld, ROWS, HEADS, 1, HD, NULL, NULL, 0.0f, g.pos, 1e4f, kc, vc, g.idx),
                       VG_ERR_INVALID_ARG, "rotary_kv_store", "I32");
    assert_zero(g.c, 256);
    /* within the rules: without norms, and no rows */
    VG_CHECK(vg_op_rotary_kv_store(g.s, VG_DTYPE_BF16, g.c, ld, ROWS, HEADS, 1, HD, NULL, NULL, 0.0f, g.pos, 1e4f, kc, vc, g.idx));
    VG_CHECK(vg_op_rotary_kv_store(g.s, VG_DTYPE_F16, g.c, ld, 0, HEADS, 1, HD, NULL, NULL, 0.0f, g.pos, 1e4f, kc, vc, g.idx));
    VG_CHECK(vg_stream_sync(g.s));
    VG_CHECK(vg_mem_set(g.s, g.c, 0, BYTES)); /* the valid calls wrote; the next test starts from zeros */
    VG_CHECK(vg_mem_set(g.s, g.a, 0, BYTES));
    VG_CHECK(vg_mem_set(g.s, g.b, 0, BYTES));
    VG_CHECK(vg_stream_sync(g.s));
}

static void test_paged_attention(void **state)
{
    (void)state;
    const int32_t *bt = g.idx, *cl = g.cu + 1, *qs = g.cu;
#define PA(q, ldq, out, ldo, kc, vc, bt_, mb, cl_, qs_, ns, h, kvh, hd, bs)                              \
    vg_op_paged_attention(g.s, VG_DTYPE_F32, q, ldq, out, ldo, ROWS, kc, vc, bt_, mb, cl_, qs_, ns, h, kvh, \
                          hd, bs, 0.25f)
    VG_CHECK_FAILS_ALL(PA(NULL, HIDDEN, g.c, HIDDEN, g.a, g.b, bt, 1, cl, qs, 1, HEADS, 1, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "q is NULL");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, NULL, HIDDEN, g.a, g.b, bt, 1, cl, qs, 1, HEADS, 1, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "out is NULL");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, g.c, HIDDEN, NULL, g.b, bt, 1, cl, qs, 1, HEADS, 1, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "k_cache is NULL");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, g.c, HIDDEN, g.a, NULL, bt, 1, cl, qs, 1, HEADS, 1, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "v_cache is NULL");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, g.c, HIDDEN, g.a, g.b, NULL, 1, cl, qs, 1, HEADS, 1, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "block_tables is NULL");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, g.c, HIDDEN, g.a, g.b, bt, 1, NULL, qs, 1, HEADS, 1, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "context_lens is NULL");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, g.c, HIDDEN, g.a, g.b, bt, 1, cl, NULL, 1, HEADS, 1, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "query_start is NULL");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, g.c, HIDDEN, g.a, g.b, bt, 1, cl, qs, 0, HEADS, 1, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "num_seqs", "0");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, g.c, HIDDEN, g.a, g.b, bt, 0, cl, qs, 1, HEADS, 1, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "max_blocks", "0");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, g.c, HIDDEN, g.a, g.b, bt, 1, cl, qs, 1, HEADS, 1, HD, 0),
                       VG_ERR_INVALID_ARG, "paged_attention", "block_size", "0");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, g.c, HIDDEN, g.a, g.b, bt, 1, cl, qs, 1, 0, 1, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "heads", "0");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, g.c, HIDDEN, g.a, g.b, bt, 1, cl, qs, 1, HEADS, 0, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "kv_heads", "0");
    VG_CHECK_FAILS_ALL(PA(g.a, 3 * HD, g.c, 3 * HD, g.a, g.b, bt, 1, cl, qs, 1, 3, 2, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "heads 3", "kv_heads 2");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, g.c, HIDDEN, g.a, g.b, bt, 1, cl, qs, 1, HEADS, 1, 12, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "head_dim", "12");
    VG_CHECK_FAILS_ALL(PA(g.a, 1024, g.c, 1024, g.a, g.b, bt, 1, cl, qs, 1, 1, 1, 264, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "head_dim", "264");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, g.c, HIDDEN, g.a, g.b, bt, 1, cl, qs, 1, HEADS, 1, 0, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "head_dim", "0");
    VG_CHECK_FAILS_ALL(PA(g.a, 31, g.c, HIDDEN, g.a, g.b, bt, 1, cl, qs, 1, HEADS, 1, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "ld_q", "31");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, g.c, 16, g.a, g.b, bt, 1, cl, qs, 1, HEADS, 1, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "ld_out", "16");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, g.c + 2, HIDDEN, g.a, g.b, bt, 1, cl, qs, 1, HEADS, 1, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "out", "align");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, g.c, HIDDEN, g.a, g.b + 2, bt, 1, cl, qs, 1, HEADS, 1, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "v_cache", "align");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, g.c, HIDDEN, g.a, g.b, (const int32_t *)(g.b + 2), 1, cl, qs, 1, HEADS, 1, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "block_tables", "align");
    VG_CHECK_FAILS_ALL(PA(g.a, HIDDEN, g.c, HIDDEN, g.a, g.b, bt, 1, cl, (const int32_t *)(g.b + 2), 1, HEADS, 1, HD, ROWS),
                       VG_ERR_INVALID_ARG, "paged_attention", "query_start", "align");
#undef PA
    VG_CHECK_FAILS_ALL(vg_op_paged_attention(g.s, VG_DTYPE_I32, g.a, HIDDEN, g.c, HIDDEN, ROWS, g.a, g.b, bt, 1,
                                             cl, qs, 1, HEADS, 1, HD, ROWS, 0.25f),
                       VG_ERR_INVALID_ARG, "paged_attention", "I32");
    assert_zero(g.c, 256);
    /* grouped-query with 8 query heads over 2 KV heads, head_dim 256 */
    VG_CHECK(vg_op_paged_attention(g.s, VG_DTYPE_BF16, g.a, 2048, g.c, 2048, ROWS, g.a, g.b, bt, 1, cl, qs, 1,
                                   8, 2, 256, ROWS, 0.25f));
    VG_CHECK(vg_op_paged_attention(g.s, VG_DTYPE_F32, NULL, HIDDEN, NULL, HIDDEN, 0, NULL, NULL, NULL, 1, NULL,
                                   NULL, 1, HEADS, 1, HD, ROWS, 0.25f)); /* no rows */
    VG_CHECK(vg_stream_sync(g.s));
    VG_CHECK(vg_mem_set(g.s, g.c, 0, BYTES)); /* the valid calls wrote; the next test starts from zeros */
    VG_CHECK(vg_stream_sync(g.s));
}

static void test_argmax(void **state)
{
    (void)state;
    int32_t *out = (int32_t *)g.c;
    VG_CHECK_FAILS_ALL(vg_op_argmax(g.s, VG_DTYPE_F32, NULL, 8, ROWS, 8, out), VG_ERR_INVALID_ARG, "argmax", "x is NULL");
    VG_CHECK_FAILS_ALL(vg_op_argmax(g.s, VG_DTYPE_F32, g.a, 8, ROWS, 8, NULL), VG_ERR_INVALID_ARG, "argmax", "out is NULL");
    VG_CHECK_FAILS_ALL(vg_op_argmax(g.s, VG_DTYPE_F32, g.a, 8, ROWS, 0, out), VG_ERR_INVALID_ARG, "argmax", "cols", "0");
    VG_CHECK_FAILS_ALL(vg_op_argmax(g.s, VG_DTYPE_F32, g.a, 7, ROWS, 8, out), VG_ERR_INVALID_ARG, "argmax", "ld", "7");
    VG_CHECK_FAILS_ALL(vg_op_argmax(g.s, VG_DTYPE_F32, g.a, 8, -2, 8, out), VG_ERR_INVALID_ARG, "argmax", "rows", "-2");
    VG_CHECK_FAILS_ALL(vg_op_argmax(g.s, VG_DTYPE_I32, g.a, 8, ROWS, 8, out), VG_ERR_INVALID_ARG, "argmax", "I32");
    VG_CHECK_FAILS_ALL(vg_op_argmax(g.s, VG_DTYPE_F32, g.a + 2, 8, ROWS, 8, out), VG_ERR_INVALID_ARG, "argmax", "x", "align");
    VG_CHECK_FAILS_ALL(vg_op_argmax(g.s, VG_DTYPE_BF16, g.a, 8, ROWS, 8, (int32_t *)(g.c + 2)), VG_ERR_INVALID_ARG,
                       "argmax", "out", "align");
    VG_CHECK_FAILS_ALL(vg_op_argmax(g.s, VG_DTYPE_F32, g.a, 8, ROWS, OP_COLS_TOO_MANY, out), VG_ERR_INVALID_ARG,
                       "argmax", "cols");
    assert_zero(g.c, 256);
    VG_CHECK(vg_op_argmax(g.s, VG_DTYPE_F16, g.a + 2, 8, ROWS, 5, out)); /* F16: 2-byte alignment is enough */
    VG_CHECK(vg_stream_sync(g.s));
    VG_CHECK(vg_mem_set(g.s, g.c, 0, BYTES)); /* the valid calls wrote; the next test starts from zeros */
    VG_CHECK(vg_stream_sync(g.s));
}

static void test_layernorm(void **state)
{
    (void)state;
#define LN(t, x, w, b, out, rows, cols, eps) vg_op_layernorm(g.s, t, x, w, b, out, rows, cols, eps)
    VG_CHECK_FAILS_ALL(LN(VG_DTYPE_F32, NULL, g.b, g.b, g.c, ROWS, 8, 1e-6f), VG_ERR_INVALID_ARG, "layernorm", "x is NULL");
    VG_CHECK_FAILS_ALL(LN(VG_DTYPE_F32, g.a, NULL, g.b, g.c, ROWS, 8, 1e-6f), VG_ERR_INVALID_ARG, "layernorm", "w is NULL");
    VG_CHECK_FAILS_ALL(LN(VG_DTYPE_F32, g.a, g.b, g.b, NULL, ROWS, 8, 1e-6f), VG_ERR_INVALID_ARG, "layernorm", "out is NULL");
    VG_CHECK_FAILS_ALL(LN(VG_DTYPE_I32, g.a, g.b, g.b, g.c, ROWS, 8, 1e-6f), VG_ERR_INVALID_ARG, "layernorm", "I32");
    VG_CHECK_FAILS_ALL(LN(VG_DTYPE_F32, g.a, g.b, g.b, g.c, ROWS, 0, 1e-6f), VG_ERR_INVALID_ARG, "layernorm", "cols", "0");
    VG_CHECK_FAILS_ALL(LN(VG_DTYPE_F32, g.a, g.b, g.b, g.c, -3, 8, 1e-6f), VG_ERR_INVALID_ARG, "layernorm", "rows", "-3");
    VG_CHECK_FAILS_ALL(LN(VG_DTYPE_F32, g.a, g.b, g.b, g.c, ROWS, OP_COLS_TOO_MANY, 1e-6f), VG_ERR_INVALID_ARG,
                       "layernorm", "cols");
    VG_CHECK_FAILS_ALL(LN(VG_DTYPE_F32, g.a, g.b, g.b, g.c, ROWS, 8, -1.0f), VG_ERR_INVALID_ARG, "layernorm", "eps");
    VG_CHECK_FAILS_ALL(LN(VG_DTYPE_F32, g.a + 2, g.b, g.b, g.c, ROWS, 8, 1e-6f), VG_ERR_INVALID_ARG, "layernorm", "x", "align");
    VG_CHECK_FAILS_ALL(LN(VG_DTYPE_F32, g.a, g.b + 2, g.b, g.c, ROWS, 8, 1e-6f), VG_ERR_INVALID_ARG, "layernorm", "w", "align");
    VG_CHECK_FAILS_ALL(LN(VG_DTYPE_BF16, g.a, g.b, g.b + 1, g.c, ROWS, 8, 1e-6f), VG_ERR_INVALID_ARG, "layernorm", "b", "align");
    VG_CHECK_FAILS_ALL(LN(VG_DTYPE_F32, g.a, g.b, g.b, g.c + 2, ROWS, 8, 1e-6f), VG_ERR_INVALID_ARG, "layernorm", "out", "align");
    assert_zero(g.c, 256);
    /* within the rules: no bias, in place, F16 at 2-byte alignment, no rows (NULL pointers) */
    VG_CHECK(LN(VG_DTYPE_F32, g.a, g.b, NULL, g.c, ROWS, 8, 0.0f));
    VG_CHECK(LN(VG_DTYPE_F32, g.c, g.b, g.b, g.c, ROWS, 8, 1e-6f));
    VG_CHECK(LN(VG_DTYPE_F16, g.a + 2, g.b + 2, g.b + 2, g.c + 2, ROWS, 5, 1e-5f));
    VG_CHECK(LN(VG_DTYPE_F32, NULL, NULL, NULL, NULL, 0, 8, 1e-6f));
#undef LN
    VG_CHECK(vg_stream_sync(g.s));
    VG_CHECK(vg_mem_set(g.s, g.c, 0, BYTES)); /* the valid calls wrote; the next test starts from zeros */
    VG_CHECK(vg_stream_sync(g.s));
}

static void test_gather_weighted(void **state)
{
    (void)state;
    const float *w = (const float *)g.b;
#define GW(t, dst, src, src_rows, idx, w_, rows, cols, taps) \
    vg_op_gather_weighted(g.s, t, dst, src, src_rows, idx, w_, rows, cols, taps)
    VG_CHECK_FAILS_ALL(GW(VG_DTYPE_F32, NULL, g.a, 4, g.idx, w, ROWS, 8, 4), VG_ERR_INVALID_ARG, "gather_weighted", "dst is NULL");
    VG_CHECK_FAILS_ALL(GW(VG_DTYPE_F32, g.c, NULL, 4, g.idx, w, ROWS, 8, 4), VG_ERR_INVALID_ARG, "gather_weighted", "src is NULL");
    VG_CHECK_FAILS_ALL(GW(VG_DTYPE_F32, g.c, g.a, 4, NULL, w, ROWS, 8, 4), VG_ERR_INVALID_ARG, "gather_weighted", "idx is NULL");
    VG_CHECK_FAILS_ALL(GW(VG_DTYPE_F32, g.c, g.a, 4, g.idx, NULL, ROWS, 8, 4), VG_ERR_INVALID_ARG, "gather_weighted", "w is NULL");
    VG_CHECK_FAILS_ALL(GW(VG_DTYPE_I64, g.c, g.a, 4, g.idx, w, ROWS, 8, 4), VG_ERR_INVALID_ARG, "gather_weighted", "I64");
    VG_CHECK_FAILS_ALL(GW(VG_DTYPE_F32, g.c, g.a, 4, g.idx, w, ROWS, 8, 0), VG_ERR_INVALID_ARG, "gather_weighted", "taps", "0");
    VG_CHECK_FAILS_ALL(GW(VG_DTYPE_F32, g.c, g.a, 4, g.idx, w, ROWS, 8, VG_GATHER_MAX_TAPS + 1), VG_ERR_INVALID_ARG,
                       "gather_weighted", "taps", "65");
    VG_CHECK_FAILS_ALL(GW(VG_DTYPE_F32, g.c, g.a, 0, g.idx, w, ROWS, 8, 4), VG_ERR_INVALID_ARG, "gather_weighted", "src_rows", "0");
    VG_CHECK_FAILS_ALL(GW(VG_DTYPE_F32, g.c, g.a, 4, g.idx, w, ROWS, 0, 4), VG_ERR_INVALID_ARG, "gather_weighted", "cols", "0");
    VG_CHECK_FAILS_ALL(GW(VG_DTYPE_F32, g.c, g.a, 4, g.idx, w, -1, 8, 4), VG_ERR_INVALID_ARG, "gather_weighted", "rows", "-1");
    VG_CHECK_FAILS_ALL(GW(VG_DTYPE_F32, g.c, g.a, 4, g.idx, w, ROWS, OP_COLS_TOO_MANY, 4), VG_ERR_INVALID_ARG,
                       "gather_weighted", "cols");
    VG_CHECK_FAILS_ALL(GW(VG_DTYPE_F32, g.a, g.a, 4, g.idx, w, ROWS, 8, 4), VG_ERR_INVALID_ARG, "gather_weighted", "alias");
    VG_CHECK_FAILS_ALL(GW(VG_DTYPE_F32, g.c + 2, g.a, 4, g.idx, w, ROWS, 8, 4), VG_ERR_INVALID_ARG, "gather_weighted", "dst", "align");
    VG_CHECK_FAILS_ALL(GW(VG_DTYPE_F32, g.c, g.a + 2, 4, g.idx, w, ROWS, 8, 4), VG_ERR_INVALID_ARG, "gather_weighted", "src", "align");
    VG_CHECK_FAILS_ALL(GW(VG_DTYPE_F32, g.c, g.a, 4, (const int32_t *)(g.b + 2), w, ROWS, 8, 4), VG_ERR_INVALID_ARG,
                       "gather_weighted", "idx", "align");
    VG_CHECK_FAILS_ALL(GW(VG_DTYPE_BF16, g.c, g.a, 4, g.idx, (const float *)(g.b + 2), ROWS, 8, 4), VG_ERR_INVALID_ARG,
                       "gather_weighted", "w", "align");
    assert_zero(g.c, 256);
    /* within the rules: BF16 at 2-byte alignment, one tap, the most taps, no rows */
    VG_CHECK(GW(VG_DTYPE_BF16, g.c + 2, g.a + 2, 3, g.idx, w, ROWS, 5, 1));
    VG_CHECK(GW(VG_DTYPE_F32, g.c, g.a, 1, g.idx, w, 1, 8, VG_GATHER_MAX_TAPS));
    VG_CHECK(GW(VG_DTYPE_F32, NULL, NULL, 1, NULL, NULL, 0, 8, 4));
#undef GW
    VG_CHECK(vg_stream_sync(g.s));
    VG_CHECK(vg_mem_set(g.s, g.c, 0, BYTES));
    VG_CHECK(vg_stream_sync(g.s));
}

/* The op must be offered: vg_runtime_op_support answers for every op, and says what the stub has. */
static void test_support_table(void **state)
{
    (void)state;
    for (int op = 0; op < VG_OP_COUNT_; op++)
        assert_int_equal(vg_runtime_op_support(g.rt, (vg_op_id)op, NULL), VG_OP_SUPPORTED | VG_OP_CAPTURABLE);
}

/* ---- capture state ---------------------------------------------------------------------------------- */

static void test_sync_during_capture_refused(void **state)
{
    (void)state;
    VG_CHECK(vg_graph_capture_begin(g.s));
    VG_CHECK_FAILS(vg_stream_sync(g.s), VG_ERR_STATE, "captur");
    assert_true(vg_stream_is_capturing(g.s));
    vg_graph *graph = NULL;
    vg_status st = vg_graph_capture_end(g.s, &graph);
    assert_false(vg_stream_is_capturing(g.s));
    if (st == VG_OK) VG_CHECK(vg_graph_destroy(graph));
    else assert_null(graph);
    VG_CHECK(vg_stream_sync(g.s)); /* and fine again afterwards */
}

/* Another thread allocates and frees while this one captures: the rule is thread-local. */
static void *alloc_elsewhere(void *arg)
{
    void *p = NULL;
    vg_status st = vg_mem_alloc((vg_runtime *)arg, 64, &p);
    if (st == VG_OK) st = vg_mem_free((vg_runtime *)arg, p);
    return (void *)(intptr_t)st;
}

/* The core's capture rule, the same for every backend (vg_capture_forbid): while this thread
 * captures, allocating, freeing and synchronising another stream or an event are refused with
 * VG_ERR_CAPTURE naming the call, and invalidate the capture, whose end fails naming the first;
 * other threads are not restricted; afterwards all of them work again. */
static void test_unsafe_calls_during_capture_refused(void **state)
{
    (void)state;
    vg_stream *other = NULL;
    vg_event *e = NULL;
    void *p = NULL;
    VG_CHECK(vg_stream_create(g.rt, &other));
    VG_CHECK(vg_event_create(g.rt, &e));
    VG_CHECK(vg_mem_alloc(g.rt, 64, &p));
    const char *what[] = {"vg_mem_alloc", "vg_mem_free", "vg_stream_sync", "vg_event_sync"};
    for (int k = 0; k < 4; k++) {
        VG_CHECK(vg_graph_capture_begin(g.s));
        VG_CHECK(valid_call(g.s, VG_OP_FILL));
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, alloc_elsewhere, g.rt), 0);
        void *tst = NULL;
        assert_int_equal(pthread_join(t, &tst), 0);
        assert_int_equal((intptr_t)tst, VG_OK);
        void *q = (void *)0x1;
        VG_CHECK_FAILS_ALL(k == 0   ? vg_mem_alloc(g.rt, 64, &q)
                           : k == 1 ? vg_mem_free(g.rt, p)
                           : k == 2 ? vg_stream_sync(other)
                                    : vg_event_sync(e),
                           VG_ERR_CAPTURE, what[k], "invalidated");
        if (k == 0) assert_null(q);
        VG_CHECK_FAILS(vg_mem_alloc(g.rt, 64, &q), VG_ERR_CAPTURE, "vg_mem_alloc");
        assert_true(vg_stream_is_capturing(g.s));
        vg_graph *graph = (vg_graph *)0x1;
        VG_CHECK_FAILS_ALL(vg_graph_capture_end(g.s, &graph), VG_ERR_CAPTURE, "invalidated", what[k]);
        assert_null(graph);
        assert_false(vg_stream_is_capturing(g.s));
    }
    VG_CHECK(vg_mem_free(g.rt, p)); /* the refused free freed nothing */
    VG_CHECK(vg_mem_alloc(g.rt, 64, &p));
    VG_CHECK(vg_stream_sync(other));
    VG_CHECK(vg_event_sync(e));
    vg_graph *graph = NULL;
    VG_CHECK(vg_graph_capture_begin(g.s)); /* a new capture is valid */
    VG_CHECK(valid_call(g.s, VG_OP_FILL));
    VG_CHECK(vg_graph_capture_end(g.s, &graph));
    VG_CHECK(vg_graph_destroy(graph));
    VG_CHECK(vg_mem_free(g.rt, p));
    VG_CHECK(vg_event_destroy(e));
    VG_CHECK(vg_stream_destroy(other));
}

/* The rest of the rule, also the core's for every backend: registering native memory, creating
 * an IPC pool and importing one are refused and invalidate the capture the same way (where the
 * backend has them), and a thread captures one stream at a time: a second begin is refused and
 * leaves the first capture valid. */
static void test_more_calls_during_capture_refused(void **state)
{
    (void)state;
    vg_stream *other = NULL;
    vg_graph *graph = NULL;
    VG_CHECK(vg_stream_create(g.rt, &other));
    VG_CHECK(vg_graph_capture_begin(g.s));
    VG_CHECK_FAILS(vg_graph_capture_begin(other), VG_ERR_STATE, "another stream");
    assert_false(vg_stream_is_capturing(other));
    VG_CHECK(valid_call(g.s, VG_OP_FILL));
    VG_CHECK(vg_graph_capture_end(g.s, &graph));
    VG_CHECK(vg_graph_destroy(graph));
    VG_CHECK(vg_graph_capture_begin(other)); /* this thread captures nothing now */
    VG_CHECK(valid_call(other, VG_OP_FILL));
    VG_CHECK(vg_graph_capture_end(other, &graph));
    VG_CHECK(vg_graph_destroy(graph));

    const uint32_t caps = vg_runtime_caps(g.rt);
    vg_ipc_pool *pool = NULL;
    vg_ipc_desc desc;
    void *at = NULL;
    const int64_t shape[1] = {16};
    if (caps & VG_CAP_IPC) {
        VG_CHECK(vg_ipc_pool_create(g.rt, 4096, &pool));
        VG_CHECK(vg_ipc_pool_alloc(pool, VG_DTYPE_F32, 1, shape, &desc, &at));
    }
    float host[16];
    const char *what[] = {"vg_mem_register", "vg_mem_unregister", "vg_ipc_pool_create", "vg_ipc_import"};
    const uint32_t need[] = {VG_CAP_NATIVE, VG_CAP_NATIVE, VG_CAP_IPC, VG_CAP_IPC};
    int checked = 0;
    for (int k = 0; k < 4; k++) {
        if (!(caps & need[k])) continue;
        VG_CHECK(vg_graph_capture_begin(g.s));
        VG_CHECK(valid_call(g.s, VG_OP_FILL));
        void *out = (void *)0x1;
        vg_ipc_pool *p2 = (vg_ipc_pool *)0x1;
        vg_ipc_tensor t;
        VG_CHECK_FAILS_ALL(k == 0   ? vg_mem_register(g.rt, host, sizeof host, &out)
                           : k == 1 ? vg_mem_unregister(g.rt, host)
                           : k == 2 ? vg_ipc_pool_create(g.rt, 4096, &p2)
                                    : vg_ipc_import(g.rt, &desc, &t),
                           VG_ERR_CAPTURE, what[k], "invalidated");
        if (k == 0) assert_null(out);
        if (k == 2) assert_null(p2);
        if (k == 3) assert_null(t.ptr);
        VG_CHECK_FAILS_ALL(vg_graph_capture_end(g.s, &graph), VG_ERR_CAPTURE, "invalidated", what[k]);
        checked++;
    }
    printf("registration and IPC during capture: %d of 4 calls checked (the others need a "
           "capability backend '%s' lacks)\n", checked, vg_runtime_backend_name(g.rt));
    if (pool) VG_CHECK(vg_ipc_pool_destroy(pool));
    VG_CHECK(vg_stream_destroy(other));
}

static void test_capture_begin_end_state(void **state)
{
    (void)state;
    vg_graph *graph = (vg_graph *)0x1;
    VG_CHECK_FAILS(vg_graph_capture_end(g.s, &graph), VG_ERR_STATE, "captur");
    assert_null(graph);
    VG_CHECK(vg_graph_capture_begin(g.s));
    VG_CHECK_FAILS(vg_graph_capture_begin(g.s), VG_ERR_STATE, "captur");
    assert_true(vg_stream_is_capturing(g.s)); /* the first capture goes on */
    VG_CHECK(valid_call(g.s, VG_OP_FILL));
    VG_CHECK(vg_graph_capture_end(g.s, &graph));
    assert_false(vg_stream_is_capturing(g.s));
    VG_CHECK(vg_graph_destroy(graph));
}

/* With every op made uncapturable, each vg_op_* refuses on a capturing stream, naming its op:
 * each op's entry point checks capture state, not just some of them. */
static void test_each_op_checks_capture_state(void **state)
{
    (void)state;
    char spec[1024] = ""; /* every op's name: more than 512 bytes since op table version 10 */
    for (int op = 0; op < VG_OP_COUNT_; op++)
        snprintf(spec + strlen(spec), sizeof spec - strlen(spec), "%snocapture:%s", op ? "," : "",
                 vg_op_name((vg_op_id)op));
    setenv("VG_STUB_CAPS", spec, 1);
    fixture saved = g;
    fixture_open(&g);
    unsetenv("VG_STUB_CAPS");
    for (int op = 0; op < VG_OP_COUNT_; op++) {
        assert_int_equal(vg_runtime_op_support(g.rt, (vg_op_id)op, NULL), VG_OP_SUPPORTED);
        assert_int_equal(vg_runtime_op_capturable(g.rt, (vg_op_id)op), 0);
        VG_CHECK(vg_graph_capture_begin(g.s));
        VG_CHECK_FAILS_ALL(valid_call(g.s, (vg_op_id)op), VG_ERR_STATE, vg_op_name((vg_op_id)op), "captur");
        assert_true(vg_stream_is_capturing(g.s));
        vg_graph *graph = NULL;
        vg_status st = vg_graph_capture_end(g.s, &graph);
        assert_false(vg_stream_is_capturing(g.s));
        if (st == VG_OK) VG_CHECK(vg_graph_destroy(graph));
        VG_CHECK(valid_call(g.s, (vg_op_id)op)); /* eagerly it runs */
        VG_CHECK(vg_stream_sync(g.s));
    }
    fixture_close(&g);
    g = saved;
}

/* One uncapturable op in a capture: refused, and nothing of it recorded; the capture ends; the
 * graph (when the core keeps it) replays what was recorded before and after; eager use works. */
static void test_uncapturable_op_refused(void **state)
{
    (void)state;
    setenv("VG_STUB_CAPS", "nocapture:gather_rows", 1);
    fixture saved = g;
    fixture_open(&g);
    unsetenv("VG_STUB_CAPS");
    uint32_t dt = 0;
    assert_int_equal(vg_runtime_op_support(g.rt, VG_OP_GATHER_ROWS, &dt), VG_OP_SUPPORTED);
    assert_int_not_equal(dt, 0);
    assert_int_equal(vg_runtime_op_support(g.rt, VG_OP_FILL, NULL), VG_OP_SUPPORTED | VG_OP_CAPTURABLE);
    float src[ROWS * 8], back[ROWS * 8];
    for (int i = 0; i < ROWS * 8; i++) src[i] = (float)(i + 1);
    VG_CHECK(vg_mem_copy_h2d(g.s, g.a, src, sizeof src));
    VG_CHECK(vg_stream_sync(g.s));
    VG_CHECK(vg_graph_capture_begin(g.s));
    VG_CHECK(vg_op_fill(g.s, g.b, VG_DTYPE_F32, 4, 3.0));
    VG_CHECK_FAILS_ALL(vg_op_gather_rows(g.s, VG_DTYPE_F32, g.c, g.a, g.idx, ROWS, 8), VG_ERR_STATE,
                       "gather_rows", "captur");
    assert_true(vg_stream_is_capturing(g.s));
    vg_status after = vg_op_fill(g.s, g.b + 16, VG_DTYPE_F32, 4, 5.0);
    vg_graph *graph = (vg_graph *)0x1;
    vg_status st = vg_graph_capture_end(g.s, &graph);
    assert_false(vg_stream_is_capturing(g.s));
    assert_zero(g.c, sizeof back); /* the refused gather did not run eagerly either */
    assert_zero(g.b, 32);          /* and the capture ran nothing */
    if (st == VG_OK) {
        VG_CHECK(after);
        vg_graph_exec *x = NULL;
        VG_CHECK(vg_graph_instantiate(graph, &x));
        VG_CHECK(vg_graph_destroy(graph));
        VG_CHECK(vg_graph_exec_launch(x, g.s));
        VG_CHECK(vg_mem_copy_d2h(g.s, back, g.b, 8 * sizeof(float)));
        VG_CHECK(vg_stream_sync(g.s));
        for (int i = 0; i < 8; i++) assert_true(back[i] == (i < 4 ? 3.0f : 5.0f));
        VG_CHECK(vg_graph_exec_destroy(x));
    } else {
        assert_null(graph);
        assert_true(strlen(vg_last_error()) > 0);
    }
    assert_zero(g.c, sizeof back);
    /* eagerly the op is fine */
    VG_CHECK(vg_op_gather_rows(g.s, VG_DTYPE_F32, g.c, g.a, g.idx, ROWS, 8));
    VG_CHECK(vg_mem_copy_d2h(g.s, back, g.c, sizeof back));
    VG_CHECK(vg_stream_sync(g.s));
    for (int i = 0; i < ROWS * 8; i++) assert_true(back[i] == src[i % 8]); /* every index is 0 */
    fixture_close(&g);
    g = saved;
}

static void test_no_graphs(void **state)
{
    (void)state;
    setenv("VG_STUB_CAPS", "nograph", 1);
    fixture saved = g;
    fixture_open(&g);
    unsetenv("VG_STUB_CAPS");
    assert_int_equal(vg_runtime_caps(g.rt) & VG_CAP_GRAPH, 0);
    for (int op = 0; op < VG_OP_COUNT_; op++)
        assert_int_equal(vg_runtime_op_support(g.rt, (vg_op_id)op, NULL), VG_OP_SUPPORTED);
    VG_CHECK_FAILS(vg_graph_capture_begin(g.s), VG_ERR_UNSUPPORTED, "graph");
    assert_false(vg_stream_is_capturing(g.s));
    VG_CHECK(valid_call(g.s, VG_OP_AXPBY));
    VG_CHECK(vg_stream_sync(g.s));
    fixture_close(&g);
    g = saved;
}

/* rotary_paged_attention_norm_x is an option of rotary_paged_attention: where the device does not
 * offer op 21, or cannot capture it, op 23 is not offered, or not capturable, whatever the device
 * says of it (both share one member). */
static void test_norm_x_follows_its_op(void **state)
{
    (void)state;
    static const char *const caps[2] = {"noop:rotary_paged_attention", "nocapture:rotary_paged_attention"};
    for (int i = 0; i < 2; i++) {
        setenv("VG_STUB_CAPS", caps[i], 1);
        fixture saved = g;
        fixture_open(&g);
        unsetenv("VG_STUB_CAPS");
        const uint32_t f = vg_runtime_op_support(g.rt, VG_OP_ROTARY_PAGED_ATTENTION_NORM_X, NULL);
        assert_int_equal(f, i == 0 ? 0u : VG_OP_SUPPORTED);
        assert_int_equal(vg_runtime_op_support(g.rt, VG_OP_ROTARY_PAGED_ATTENTION, NULL), f);
        fixture_close(&g);
        g = saved;
    }
}

static char g_warned[1024];
static void keep_warning(vg_log_level level, const char *msg, void *user)
{
    (void)user;
    if (level == VG_LOG_WARN && strstr(msg, "VG_STUB_CAPS")) snprintf(g_warned, sizeof g_warned, "%s", msg);
}

/* A VG_STUB_CAPS longer than the stub reads is refused whole, with a warning that says so: not cut
 * where its buffer ends and acted on in part (its first token here would take the graphs away). */
static void test_caps_too_long_refused(void **state)
{
    (void)state;
    const size_t n = 5000;
    char *spec = malloc(n + 1);
    assert_non_null(spec);
    memcpy(spec, "nograph", 7);
    for (size_t i = 7; i < n; i++) spec[i] = i % 16 ? 'x' : ',';
    spec[n] = '\0';
    setenv("VG_STUB_CAPS", spec, 1);
    free(spec);
    g_warned[0] = '\0';
    vg_log_set_callback(keep_warning, NULL);
    fixture saved = g;
    fixture_open(&g);
    vg_log_set_callback(NULL, NULL);
    unsetenv("VG_STUB_CAPS");
    assert_int_not_equal(vg_runtime_caps(g.rt) & VG_CAP_GRAPH, 0);
    assert_non_null(strstr(g_warned, "longer than"));
    assert_non_null(strstr(g_warned, "ignored"));
    fixture_close(&g);
    g = saved;
}

static void test_no_update(void **state)
{
    (void)state;
    setenv("VG_STUB_CAPS", "noupdate", 1);
    fixture saved = g;
    fixture_open(&g);
    unsetenv("VG_STUB_CAPS");
    vg_graph *g1 = NULL, *g2 = NULL;
    vg_graph_exec *x = NULL;
    VG_CHECK(vg_graph_capture_begin(g.s));
    VG_CHECK(valid_call(g.s, VG_OP_FILL));
    VG_CHECK(vg_graph_capture_end(g.s, &g1));
    VG_CHECK(vg_graph_instantiate(g1, &x));
    VG_CHECK(vg_graph_capture_begin(g.s));
    VG_CHECK(valid_call(g.s, VG_OP_FILL));
    VG_CHECK(vg_graph_capture_end(g.s, &g2));
    int applied = -1;
    VG_CHECK_FAILS(vg_graph_exec_update(x, g2, &applied), VG_ERR_UNSUPPORTED, "update");
    VG_CHECK(vg_graph_exec_launch(x, g.s)); /* the exec is unchanged and still replays */
    VG_CHECK(vg_stream_sync(g.s));
    VG_CHECK(vg_graph_exec_destroy(x));
    VG_CHECK(vg_graph_destroy(g1));
    VG_CHECK(vg_graph_destroy(g2));
    fixture_close(&g);
    g = saved;
}

static void test_null_handles(void **state)
{
    (void)state;
    void *p = (void *)0x1;
    VG_CHECK_FAILS(vg_mem_alloc(NULL, 16, &p), VG_ERR_INVALID_ARG, "");
    VG_CHECK_FAILS(vg_mem_alloc(g.rt, 16, NULL), VG_ERR_INVALID_ARG, "");
    VG_CHECK_FAILS(vg_mem_copy_h2d(NULL, g.a, &p, 8), VG_ERR_INVALID_ARG, "");
    VG_CHECK_FAILS(vg_mem_copy_h2d(g.s, NULL, &p, 8), VG_ERR_INVALID_ARG, "");
    VG_CHECK_FAILS(vg_stream_sync(NULL), VG_ERR_INVALID_ARG, "");
    VG_CHECK_FAILS(vg_graph_capture_begin(NULL), VG_ERR_INVALID_ARG, "");
    VG_CHECK_FAILS(vg_graph_exec_launch(NULL, g.s), VG_ERR_INVALID_ARG, "");
    VG_CHECK(vg_mem_free(g.rt, NULL));
    VG_CHECK(vg_stream_destroy(NULL));
    VG_CHECK(vg_event_destroy(NULL));
    VG_CHECK(vg_graph_destroy(NULL));
    VG_CHECK(vg_graph_exec_destroy(NULL));
    VG_CHECK(vg_mem_copy_h2d(g.s, g.a, NULL, 0)); /* nothing to copy */
    assert_ptr_equal(vg_stream_runtime(g.s), g.rt);
    assert_false(vg_stream_is_capturing(g.s));
}

static int clear(void **state)
{
    (void)state;
    unsetenv("VG_STUB_CAPS");
    vg_error_clear();
    return 0;
}

int main(void)
{
    unsetenv("VG_BACKEND_PATH");
    unsetenv("VG_STUB_CAPS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_valid_calls_pass, clear),
        cmocka_unit_test_setup(test_support_table, clear),
        cmocka_unit_test_setup(test_no_stream, clear),
        cmocka_unit_test_setup(test_null_handles, clear),
        cmocka_unit_test_setup(test_fill, clear),
        cmocka_unit_test_setup(test_axpby, clear),
        cmocka_unit_test_setup(test_gemm, clear),
        cmocka_unit_test_setup(test_gather_rows, clear),
        cmocka_unit_test_setup(test_rmsnorm, clear),
        cmocka_unit_test_setup(test_rotary_2d, clear),
        cmocka_unit_test_setup(test_attention, clear),
        cmocka_unit_test_setup(test_attention_rotary, clear),
        cmocka_unit_test_setup(test_silu_mul, clear),
        cmocka_unit_test_setup(test_convert, clear),
        cmocka_unit_test_setup(test_rotary, clear),
        cmocka_unit_test_setup(test_rmsnorm_heads, clear),
        cmocka_unit_test_setup(test_kv_store, clear),
        cmocka_unit_test_setup(test_paged_attention, clear),
        cmocka_unit_test_setup(test_argmax, clear),
        cmocka_unit_test_setup(test_layernorm, clear),
        cmocka_unit_test_setup(test_gather_weighted, clear),
        cmocka_unit_test_setup(test_rotary_kv_store, clear),
        cmocka_unit_test_setup(test_rotary_paged_attention, clear),
        cmocka_unit_test_setup(test_rotary_paged_attention_norm_x, clear),
        cmocka_unit_test_setup(test_sync_during_capture_refused, clear),
        cmocka_unit_test_setup(test_unsafe_calls_during_capture_refused, clear),
        cmocka_unit_test_setup(test_more_calls_during_capture_refused, clear),
        cmocka_unit_test_setup(test_capture_begin_end_state, clear),
        cmocka_unit_test_setup(test_each_op_checks_capture_state, clear),
        cmocka_unit_test_setup(test_uncapturable_op_refused, clear),
        cmocka_unit_test_setup(test_no_graphs, clear),
        cmocka_unit_test_setup(test_no_update, clear),
        cmocka_unit_test_setup(test_caps_too_long_refused, clear),
        cmocka_unit_test_setup(test_norm_x_follows_its_op, clear),
    };
    return cmocka_run_group_tests_name("validation", tests, setup, teardown);
}
