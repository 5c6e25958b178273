/* SPDX-License-Identifier: Apache-2.0 */
/* Conformance: one suite, run unchanged against every backend that loads (VG_BACKEND picks it),
 * through the core device API (vg_device.h) as applications call it, so the core's checks run
 * on every backend too. A backend that loads but has no device makes the program exit
 * VG_TEST_SKIP. The randomised mode is conformance_random.c. */
#include <math.h>
#include <stdlib.h>

#include "reference_ops.h"
#include "test_util.h"
#include "vg/vg_device.h"
#include "vg/vg_half.h"

typedef struct ctx {
    vg_runtime *rt;
    vg_stream *s;
    int capturing; /* set between cap_begin and cap_end, for the cleanup after a failed test */
} ctx;

static ctx g;

static int has_graphs(void) { return (vg_runtime_caps(g.rt) & VG_CAP_GRAPH) != 0; }
static int supports(vg_op_id op) { return (vg_runtime_op_support(g.rt, op, NULL) & VG_OP_SUPPORTED) != 0; }

static void *dalloc(size_t bytes)
{
    void *p = NULL;
    VG_CHECK(vg_mem_alloc(g.rt, bytes, &p));
    assert_non_null(p);
    return p;
}

static void upload(void *dst, const void *src, size_t bytes)
{
    VG_CHECK(vg_mem_copy_h2d(g.s, dst, src, bytes));
    VG_CHECK(vg_stream_sync(g.s));
}

static void download(void *dst, const void *src, size_t bytes)
{
    VG_CHECK(vg_mem_copy_d2h(g.s, dst, src, bytes));
    VG_CHECK(vg_stream_sync(g.s));
}

static void fill_random(float *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

static void cap_begin(void)
{
    VG_CHECK(vg_graph_capture_begin(g.s));
    g.capturing = 1;
}

static vg_status cap_end(vg_graph **graph)
{
    g.capturing = 0;
    vg_status st = vg_graph_capture_end(g.s, graph);
    assert_false(vg_stream_is_capturing(g.s)); /* ended in every case */
    return st;
}

/* Capture `fn` on the test stream and instantiate it; the graph object is destroyed. */
static vg_graph_exec *capture(void (*fn)(void *), void *arg)
{
    vg_graph *graph = NULL;
    vg_graph_exec *exec = NULL;
    cap_begin();
    fn(arg);
    VG_CHECK(cap_end(&graph));
    VG_CHECK(vg_graph_instantiate(graph, &exec));
    VG_CHECK(vg_graph_destroy(graph));
    return exec;
}

static void test_device_info(void **state)
{
    (void)state;
    vg_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    VG_CHECK(vg_runtime_device_info(g.rt, &info));
    assert_true(strlen(info.name) > 0);
    assert_true(info.mem_total > 0);
    assert_true(info.mem_free <= info.mem_total);
    /* An older, smaller struct is filled only up to its size. */
    vg_device_info old;
    memset(&old, 0xAB, sizeof old);
    old.struct_size = offsetof(vg_device_info, mem_total);
    VG_CHECK(vg_runtime_device_info(g.rt, &old));
    assert_true(strlen(old.name) > 0);
    const unsigned char *bytes = (const unsigned char *)&old;
    for (size_t i = offsetof(vg_device_info, mem_total); i < sizeof old; i++)
        assert_int_equal(bytes[i], 0xAB);
}

/* What the device says it offers is coherent: flags are known bits, a capturable op is supported,
 * nothing is capturable without graphs, and the dtypes are a non-empty part of the catalogue's. */
static void test_op_support_table(void **state)
{
    (void)state;
    int supported = 0;
    for (int op = 0; op < VG_OP_COUNT_; op++) {
        uint32_t dt = 0, f = vg_runtime_op_support(g.rt, (vg_op_id)op, &dt);
        assert_int_equal(f & ~(VG_OP_SUPPORTED | VG_OP_CAPTURABLE), 0);
        assert_int_equal(vg_runtime_op_capturable(g.rt, (vg_op_id)op), (f & VG_OP_CAPTURABLE) != 0);
        if (!(f & VG_OP_SUPPORTED)) {
            assert_int_equal(f, 0);
            continue;
        }
        supported++;
        if (!has_graphs()) assert_int_equal(f & VG_OP_CAPTURABLE, 0);
        if (dt == 0 || (dt & ~ref_catalogue_dtypes((vg_op_id)op)))
            print_message("op %s: dtypes 0x%x, the catalogue allows 0x%x\n", vg_op_name((vg_op_id)op),
                          dt, ref_catalogue_dtypes((vg_op_id)op));
        assert_int_not_equal(dt, 0);
        assert_int_equal(dt & ~ref_catalogue_dtypes((vg_op_id)op), 0);
    }
    assert_true(supported > 0);
    /* ids the core does not know */
    assert_int_equal(vg_runtime_op_support(g.rt, VG_OP_COUNT_, NULL), 0);
    assert_int_equal(vg_runtime_op_support(g.rt, (vg_op_id)64, NULL), 0);
}

static void test_memory_roundtrip(void **state)
{
    (void)state;
    enum { N = 4099 }; /* odd size: no reliance on multiples */
    float src[N], back[N];
    fill_random(src, N, 7);
    void *a = dalloc(N * sizeof(float)), *b = dalloc(N * sizeof(float));
    VG_CHECK(vg_mem_copy_h2d(g.s, a, src, sizeof src));
    VG_CHECK(vg_mem_copy_d2d(g.s, b, a, sizeof src));
    download(back, b, sizeof back);
    assert_memory_equal(src, back, sizeof src);
    VG_CHECK(vg_mem_set(g.s, b, 0, sizeof src));
    download(back, b, sizeof back);
    for (int i = 0; i < N; i++) assert_true(back[i] == 0.0f);
    VG_CHECK(vg_mem_free(g.rt, a));
    VG_CHECK(vg_mem_free(g.rt, b));
}

static void test_pinned_staging(void **state)
{
    (void)state;
    float *h = NULL, back[256];
    VG_CHECK(vg_host_alloc(g.rt, 256 * sizeof(float), (void **)&h));
    fill_random(h, 256, 3);
    void *d = dalloc(sizeof back);
    upload(d, h, sizeof back);
    download(back, d, sizeof back);
    assert_memory_equal(h, back, sizeof back);
    VG_CHECK(vg_mem_free(g.rt, d));
    VG_CHECK(vg_host_free(g.rt, h));
}

static void test_out_of_memory_is_an_error(void **state)
{
    (void)state;
    vg_device_info info = {.struct_size = sizeof info};
    VG_CHECK(vg_runtime_device_info(g.rt, &info));
    void *p = NULL;
    vg_error_clear();
    vg_status st = vg_mem_alloc(g.rt, (size_t)info.mem_total * 4 + (1ull << 30), &p);
    assert_int_equal(st, VG_ERR_OUT_OF_MEMORY);
    assert_null(p);
    assert_true(strlen(vg_last_error()) > 0);
    /* the device still works afterwards */
    void *q = dalloc(1024);
    VG_CHECK(vg_mem_free(g.rt, q));
}

static void test_fill_dtypes(void **state)
{
    (void)state;
    if (!supports(VG_OP_FILL)) skip();
    void *d = dalloc(64 * sizeof(int64_t));
    float f[64];
    uint16_t h[64];
    int32_t i32[64];
    VG_CHECK(vg_op_fill(g.s, d, VG_DTYPE_F32, 64, 1.5));
    download(f, d, sizeof f);
    for (int i = 0; i < 64; i++) assert_true(f[i] == 1.5f);
    VG_CHECK(vg_op_fill(g.s, d, VG_DTYPE_BF16, 64, -2.25));
    download(h, d, sizeof h);
    for (int i = 0; i < 64; i++) assert_true(vg_bf16_to_f32(h[i]) == -2.25f);
    VG_CHECK(vg_op_fill(g.s, d, VG_DTYPE_I32, 64, 42));
    download(i32, d, sizeof i32);
    for (int i = 0; i < 64; i++) assert_int_equal(i32[i], 42);
    VG_CHECK(vg_mem_free(g.rt, d));
}

static void test_events_time(void **state)
{
    (void)state;
    vg_event *e0 = NULL, *e1 = NULL;
    VG_CHECK(vg_event_create(g.rt, &e0));
    VG_CHECK(vg_event_create(g.rt, &e1));
    void *d = dalloc(1 << 20);
    VG_CHECK(vg_event_record(e0, g.s));
    VG_CHECK(vg_mem_set(g.s, d, 1, 1 << 20));
    VG_CHECK(vg_event_record(e1, g.s));
    VG_CHECK(vg_event_sync(e1));
    float ms = -1;
    VG_CHECK(vg_event_elapsed_ms(e0, e1, &ms));
    assert_true(ms >= 0.0f);
    vg_stream *s2 = NULL;
    VG_CHECK(vg_stream_create(g.rt, &s2));
    VG_CHECK(vg_stream_wait_event(s2, e1));
    VG_CHECK(vg_stream_sync(s2));
    VG_CHECK(vg_stream_destroy(s2));
    VG_CHECK(vg_mem_free(g.rt, d));
    VG_CHECK(vg_event_destroy(e0));
    VG_CHECK(vg_event_destroy(e1));
}

/* ---- graphs ---------------------------------------------------------------------------------- */

typedef struct axpby_case {
    size_t n;
    float *x, *y;
    float alpha, beta;
} axpby_case;

static void enqueue_axpby(void *p)
{
    axpby_case *c = p;
    VG_CHECK(vg_op_axpby(g.s, c->n, c->alpha, c->x, c->beta, c->y));
}

static void test_replay_rereads_buffers(void **state)
{
    (void)state;
    if (!has_graphs() || !supports(VG_OP_AXPBY)) skip();
    enum { N = 1000 };
    float hx[N], hy[N], back[N];
    axpby_case c = {N, dalloc(N * 4), dalloc(N * 4), 2.0f, 0.5f};
    fill_random(hx, N, 11);
    fill_random(hy, N, 12);
    upload(c.x, hx, sizeof hx);
    upload(c.y, hy, sizeof hy);
    vg_graph_exec *exec = capture(enqueue_axpby, &c);
    /* capture records without executing */
    download(back, c.y, sizeof back);
    assert_memory_equal(back, hy, sizeof hy);
    /* new contents in the captured buffers are what the replay sees */
    fill_random(hx, N, 21);
    fill_random(hy, N, 22);
    upload(c.x, hx, sizeof hx);
    upload(c.y, hy, sizeof hy);
    VG_CHECK(vg_graph_exec_launch(exec, g.s));
    download(back, c.y, sizeof back);
    for (int i = 0; i < N; i++) assert_float_equal(back[i], 2.0f * hx[i] + 0.5f * hy[i], 1e-6);
    VG_CHECK(vg_graph_exec_destroy(exec));
    VG_CHECK(vg_mem_free(g.rt, c.x));
    VG_CHECK(vg_mem_free(g.rt, c.y));
}

static void test_replay_twice_equals_eager_twice(void **state)
{
    (void)state;
    if (!has_graphs() || !supports(VG_OP_AXPBY)) skip();
    enum { N = 777 };
    float hx[N], hy[N], eager[N], graph[N];
    axpby_case c = {N, dalloc(N * 4), dalloc(N * 4), 1.25f, -0.75f};
    fill_random(hx, N, 5);
    fill_random(hy, N, 6);
    upload(c.x, hx, sizeof hx);
    upload(c.y, hy, sizeof hy);
    enqueue_axpby(&c);
    enqueue_axpby(&c);
    download(eager, c.y, sizeof eager);
    upload(c.y, hy, sizeof hy);
    vg_graph_exec *exec = capture(enqueue_axpby, &c);
    VG_CHECK(vg_graph_exec_launch(exec, g.s));
    VG_CHECK(vg_graph_exec_launch(exec, g.s));
    download(graph, c.y, sizeof graph);
    assert_memory_equal(eager, graph, sizeof eager);
    VG_CHECK(vg_graph_exec_destroy(exec));
    VG_CHECK(vg_mem_free(g.rt, c.x));
    VG_CHECK(vg_mem_free(g.rt, c.y));
}

typedef struct gemm_case {
    vg_gemm_args args;
} gemm_case;

static void enqueue_gemm(void *p)
{
    gemm_case *c = p;
    VG_CHECK(vg_op_gemm(g.s, &c->args));
}

static void gemm_check(vg_dtype dt, float tol)
{
    enum { M = 37, N = 45, K = 70 };
    size_t es = dt == VG_DTYPE_F32 ? 4 : 2;
    float a[M * K], b[N * K], bias[N], res[M * N], out[M * N];
    unsigned char raw[N * K * 4]; /* the largest operand is B */
    gemm_case c;
    memset(&c, 0, sizeof c);
    c.args = (vg_gemm_args){.struct_size = sizeof(vg_gemm_args), .dtype_ab = dt,
                            .dtype_c = VG_DTYPE_F32, .m = M, .n = N, .k = K, .lda = K, .ldb = K,
                            .ldc = N, .ldr = N, .act = VG_ACT_SILU, .alpha = 0.5f};
    void *da = dalloc(M * K * es), *db = dalloc(N * K * es), *dbias = dalloc(N * es);
    float *dc = dalloc(M * N * 4), *dres = dalloc(M * N * 4);
    c.args.a = da, c.args.b = db, c.args.bias = dbias, c.args.c = dc, c.args.residual = dres;
    vg_graph_exec *exec = has_graphs() ? capture(enqueue_gemm, &c) : NULL;
    for (int round = 0; round < 2; round++) { /* the second round changes every input */
        fill_random(a, M * K, 100 + round);
        fill_random(b, N * K, 200 + round);
        fill_random(bias, N, 300 + round);
        fill_random(res, M * N, 400 + round);
        /* round the operands to the storage type so the reference sees what the device sees */
        const float *srcs[3] = {a, b, bias};
        float *dsts[3] = {a, b, bias};
        void *devs[3] = {da, db, dbias};
        size_t counts[3] = {M * K, N * K, N};
        for (int t = 0; t < 3; t++) {
            for (size_t i = 0; i < counts[t]; i++) {
                if (dt == VG_DTYPE_F32) {
                    memcpy(raw + i * 4, &srcs[t][i], 4);
                } else {
                    uint16_t h = dt == VG_DTYPE_BF16 ? vg_f32_to_bf16(srcs[t][i])
                                                     : vg_f32_to_f16(srcs[t][i]);
                    dsts[t][i] = dt == VG_DTYPE_BF16 ? vg_bf16_to_f32(h) : vg_f16_to_f32(h);
                    memcpy(raw + i * 2, &h, 2);
                }
            }
            upload(devs[t], raw, counts[t] * es);
        }
        upload(dres, res, sizeof res);
        if (exec) VG_CHECK(vg_graph_exec_launch(exec, g.s));
        else enqueue_gemm(&c);
        download(out, dc, sizeof out);
        double max_err = 0, max_ref = 0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double acc = 0;
                for (int k = 0; k < K; k++) acc += (double)a[i * K + k] * b[j * K + k];
                double v = 0.5 * acc + bias[j];
                v = v / (1.0 + exp(-v)) + res[i * N + j];
                max_err = fmax(max_err, fabs(v - out[i * N + j]));
                max_ref = fmax(max_ref, fabs(v));
            }
        if (max_err / max_ref > tol) print_message("gemm %d rel err %g\n", dt, max_err / max_ref);
        assert_true(max_err / max_ref <= tol);
    }
    if (exec) VG_CHECK(vg_graph_exec_destroy(exec));
    VG_CHECK(vg_mem_free(g.rt, da));
    VG_CHECK(vg_mem_free(g.rt, db));
    VG_CHECK(vg_mem_free(g.rt, dbias));
    VG_CHECK(vg_mem_free(g.rt, dc));
    VG_CHECK(vg_mem_free(g.rt, dres));
}

static void test_gemm_rejects_activation_with_inplace_residual(void **state)
{
    (void)state;
    if (!supports(VG_OP_GEMM)) skip();
    float *d = dalloc(16 * 16 * 4);
    vg_gemm_args a = {.struct_size = sizeof a, .dtype_ab = VG_DTYPE_F32, .dtype_c = VG_DTYPE_F32,
                      .m = 16, .n = 16, .k = 16, .a = d, .lda = 16, .b = d, .ldb = 16, .c = d,
                      .ldc = 16, .residual = d, .ldr = 16, .act = VG_ACT_GELU_ERF, .alpha = 1};
    /* refused by the core before any backend sees it, so the same on every backend */
    VG_CHECK_FAILS2(vg_op_gemm(g.s, &a), VG_ERR_INVALID_ARG, "gemm", "alias");
    a.act = VG_ACT_NONE; /* an in-place residual without activation is fine */
    VG_CHECK(vg_op_gemm(g.s, &a));
    VG_CHECK(vg_stream_sync(g.s));
    VG_CHECK(vg_mem_free(g.rt, d));
}

static void test_gemm_f32(void **state)
{
    (void)state;
    if (!supports(VG_OP_GEMM)) skip();
    gemm_check(VG_DTYPE_F32, 1e-5f); /* tf32 is not allowed for F32 */
}

static void test_gemm_bf16(void **state)
{
    (void)state;
    if (!supports(VG_OP_GEMM)) skip();
    gemm_check(VG_DTYPE_BF16, 1e-5f); /* operands are rounded on the host: only accumulation differs */
}

typedef struct gather_case {
    float *dst, *src;
    int32_t *idx;
    int64_t rows, cols;
} gather_case;

static void enqueue_gather(void *p)
{
    gather_case *c = p;
    VG_CHECK(vg_op_gather_rows(g.s, VG_DTYPE_F32, c->dst, c->src, c->idx, c->rows, c->cols));
}

static void test_gather_reads_indices_at_replay(void **state)
{
    (void)state;
    if (!supports(VG_OP_GATHER_ROWS)) skip();
    enum { R = 64, C = 80 };
    float src[R * C], out[R * C];
    int32_t idx[R];
    fill_random(src, R * C, 9);
    gather_case c = {dalloc(sizeof out), dalloc(sizeof src), dalloc(sizeof idx), R, C};
    upload(c.src, src, sizeof src);
    vg_graph_exec *exec = has_graphs() ? capture(enqueue_gather, &c) : NULL;
    for (int round = 0; round < 3; round++) {
        for (int r = 0; r < R; r++) idx[r] = (r * (2 * round + 1) + round) % R;
        upload(c.idx, idx, sizeof idx);
        if (exec) VG_CHECK(vg_graph_exec_launch(exec, g.s));
        else enqueue_gather(&c);
        download(out, c.dst, sizeof out);
        for (int r = 0; r < R; r++) assert_memory_equal(out + r * C, src + idx[r] * C, C * 4);
    }
    if (exec) VG_CHECK(vg_graph_exec_destroy(exec));
    VG_CHECK(vg_mem_free(g.rt, c.dst));
    VG_CHECK(vg_mem_free(g.rt, c.src));
    VG_CHECK(vg_mem_free(g.rt, c.idx));
}

static void enqueue_axpby_twice(void *p)
{
    enqueue_axpby(p);
    enqueue_axpby(p);
}

static void test_update(void **state)
{
    (void)state;
    if (!(vg_runtime_caps(g.rt) & VG_CAP_GRAPH_UPDATE) || !supports(VG_OP_AXPBY)) skip();
    enum { N = 300 };
    float hx[N], hy[N], back[N];
    axpby_case c = {N, dalloc(N * 4), dalloc(N * 4), 2.0f, 0.0f};
    fill_random(hx, N, 1);
    upload(c.x, hx, sizeof hx);
    vg_graph_exec *exec = capture(enqueue_axpby, &c);
    /* same topology, new parameters: applied */
    c.alpha = 3.0f;
    vg_graph *graph = NULL;
    cap_begin();
    enqueue_axpby(&c);
    VG_CHECK(cap_end(&graph));
    int applied = -1;
    VG_CHECK(vg_graph_exec_update(exec, graph, &applied));
    assert_int_equal(applied, 1);
    VG_CHECK(vg_graph_destroy(graph));
    memset(hy, 0, sizeof hy);
    upload(c.y, hy, sizeof hy);
    VG_CHECK(vg_graph_exec_launch(exec, g.s));
    download(back, c.y, sizeof back);
    for (int i = 0; i < N; i++) assert_float_equal(back[i], 3.0f * hx[i], 1e-6);
    /* different topology: re-instantiation needed, and the old exec still works */
    cap_begin();
    enqueue_axpby_twice(&c);
    VG_CHECK(cap_end(&graph));
    applied = -1;
    VG_CHECK(vg_graph_exec_update(exec, graph, &applied));
    assert_int_equal(applied, 0);
    VG_CHECK(vg_graph_destroy(graph));
    VG_CHECK(vg_graph_exec_destroy(exec));
    VG_CHECK(vg_mem_free(g.rt, c.x));
    VG_CHECK(vg_mem_free(g.rt, c.y));
}

static void test_failed_capture_recovers(void **state)
{
    (void)state;
    if (!has_graphs() || !supports(VG_OP_AXPBY)) skip();
    enum { N = 128 };
    float hx[N], back[N];
    axpby_case c = {N, dalloc(N * 4), dalloc(N * 4), 1.0f, 0.0f};
    fill_random(hx, N, 77);
    upload(c.x, hx, sizeof hx);
    VG_CHECK(vg_mem_set(g.s, c.y, 0, N * 4));
    VG_CHECK(vg_stream_sync(g.s));
    cap_begin();
    enqueue_axpby(&c);
    /* synchronising a capturing stream is refused, and names what was refused */
    VG_CHECK_FAILS(vg_stream_sync(g.s), VG_ERR_STATE, "captur");
    assert_true(vg_stream_is_capturing(g.s));
    /* the capture ends either way: discarded, or holding exactly the work enqueued before */
    vg_graph *graph = (vg_graph *)0x1;
    vg_error_clear();
    vg_status st = cap_end(&graph);
    if (st == VG_OK) {
        vg_graph_exec *exec = NULL;
        VG_CHECK(vg_graph_instantiate(graph, &exec));
        VG_CHECK(vg_graph_destroy(graph));
        VG_CHECK(vg_graph_exec_launch(exec, g.s));
        download(back, c.y, sizeof back);
        assert_memory_equal(back, hx, sizeof hx); /* y = x once */
        VG_CHECK(vg_graph_exec_destroy(exec));
    } else {
        assert_int_equal(st, VG_ERR_CAPTURE);
        assert_null(graph);
        assert_true(strlen(vg_last_error()) > 0);
        download(back, c.y, sizeof back);
        for (int i = 0; i < N; i++) assert_true(back[i] == 0.0f); /* nothing ran */
    }
    /* the stream is usable: eager work and a new capture both succeed */
    VG_CHECK(vg_mem_set(g.s, c.y, 0, N * 4));
    enqueue_axpby(&c);
    download(back, c.y, sizeof back);
    assert_memory_equal(back, hx, sizeof hx);
    vg_graph_exec *exec = capture(enqueue_axpby, &c);
    VG_CHECK(vg_graph_exec_launch(exec, g.s));
    VG_CHECK(vg_stream_sync(g.s));
    VG_CHECK(vg_graph_exec_destroy(exec));
    VG_CHECK(vg_mem_free(g.rt, c.x));
    VG_CHECK(vg_mem_free(g.rt, c.y));
}

static void test_capture_cycles_return_memory(void **state)
{
    (void)state;
    if (!has_graphs() || !supports(VG_OP_AXPBY)) skip();
    enum { N = 4096 };
    axpby_case c = {N, dalloc(N * 4), dalloc(N * 4), 1.0f, 1.0f};
    VG_CHECK(vg_mem_set(g.s, c.x, 0, N * 4));
    VG_CHECK(vg_mem_set(g.s, c.y, 0, N * 4));
    VG_CHECK(vg_stream_sync(g.s));
    vg_device_info before = {.struct_size = sizeof before}, after = {.struct_size = sizeof after};
    /* one warm cycle first, so lazily created driver state is not counted as a leak */
    vg_graph_exec *exec = capture(enqueue_axpby_twice, &c);
    VG_CHECK(vg_graph_exec_launch(exec, g.s));
    VG_CHECK(vg_stream_sync(g.s));
    VG_CHECK(vg_graph_exec_destroy(exec));
    VG_CHECK(vg_runtime_device_info(g.rt, &before));
    for (int i = 0; i < 1000; i++) {
        exec = capture(enqueue_axpby_twice, &c);
        VG_CHECK(vg_graph_exec_launch(exec, g.s));
        VG_CHECK(vg_graph_exec_destroy(exec));
    }
    VG_CHECK(vg_stream_sync(g.s));
    VG_CHECK(vg_runtime_device_info(g.rt, &after));
    long long lost = (long long)before.mem_free - (long long)after.mem_free;
    if (lost > 0) print_message("device memory lost over 1000 cycles: %lld bytes\n", lost);
    /* allow one allocation granule of driver-side noise, nothing that grows per cycle */
    assert_true(lost <= 2 << 20);
    VG_CHECK(vg_mem_free(g.rt, c.x));
    VG_CHECK(vg_mem_free(g.rt, c.y));
}

static int setup(void **state)
{
    (void)state;
    return vg_stream_create(g.rt, &g.s) == VG_OK ? 0 : -1;
}


/* ---- vision-transformer ops against double-precision references ----------------------------- */

static size_t esize(vg_dtype t) { return t == VG_DTYPE_F32 ? 4 : 2; }

/* Round host floats to `t` in place, and upload them as `t`. */
static void *upload_as(vg_dtype t, float *x, size_t n)
{
    unsigned char *raw = malloc(n * 4);
    assert_non_null(raw);
    for (size_t i = 0; i < n; i++) {
        if (t == VG_DTYPE_F32) {
            memcpy(raw + 4 * i, &x[i], 4);
            continue;
        }
        uint16_t h = t == VG_DTYPE_BF16 ? vg_f32_to_bf16(x[i]) : vg_f32_to_f16(x[i]);
        x[i] = t == VG_DTYPE_BF16 ? vg_bf16_to_f32(h) : vg_f16_to_f32(h);
        memcpy(raw + 2 * i, &h, 2);
    }
    void *d = dalloc(n * esize(t));
    upload(d, raw, n * esize(t));
    free(raw);
    return d;
}

static void download_as(vg_dtype t, float *x, const void *d, size_t n)
{
    unsigned char *raw = malloc(n * 4);
    assert_non_null(raw);
    download(raw, d, n * esize(t));
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        if (t == VG_DTYPE_F32) {
            memcpy(&x[i], raw + 4 * i, 4);
            continue;
        }
        memcpy(&h, raw + 2 * i, 2);
        x[i] = t == VG_DTYPE_BF16 ? vg_bf16_to_f32(h) : vg_f16_to_f32(h);
    }
    free(raw);
}

/* A GEMM with 16-bit operands and output, as models call it: bias, then an activation (which
 * CUDA's cuBLASLt cannot fuse: GELU with erf) or an in-place residual. Shapes that are not
 * multiples of the usual tiles, and a tall one; each replays a captured graph twice on new
 * inputs. */
typedef struct gemm_half_case {
    int m, n, k;
    vg_activation act;
    int inplace; /* residual aliases c */
    float alpha;
} gemm_half_case;

static double act_ref(vg_activation act, double x)
{
    return act == VG_ACT_GELU_ERF ? 0.5 * x * (1.0 + erf(x / sqrt(2.0))) : x;
}

static void gemm_half_check(vg_dtype dt, const gemm_half_case *t, float tol)
{
    const int M = t->m, N = t->n, K = t->k;
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * N * K);
    float *bias = malloc(sizeof(float) * N), *res = malloc(sizeof(float) * M * N);
    float *out = malloc(sizeof(float) * M * N);
    assert_true(a && b && bias && res && out);
    gemm_case c;
    memset(&c, 0, sizeof c);
    fill_random(a, (size_t)M * K, 11);
    fill_random(b, (size_t)N * K, 12);
    fill_random(bias, N, 13);
    void *da = upload_as(dt, a, (size_t)M * K), *db = upload_as(dt, b, (size_t)N * K);
    void *dbias = upload_as(dt, bias, N), *dc = dalloc((size_t)M * N * esize(dt));
    c.args = (vg_gemm_args){.struct_size = sizeof(vg_gemm_args), .dtype_ab = dt, .dtype_c = dt,
                            .m = M, .n = N, .k = K, .a = da, .lda = K, .b = db, .ldb = K, .c = dc,
                            .ldc = N, .bias = dbias, .residual = t->inplace ? dc : NULL, .ldr = N,
                            .act = t->act, .alpha = t->alpha};
    vg_graph_exec *exec = has_graphs() ? capture(enqueue_gemm, &c) : NULL;
    for (int round = 0; round < 2; round++) {
        fill_random(a, (size_t)M * K, 20 + round);
        fill_random(res, (size_t)M * N, 30 + round);
        void *na = upload_as(dt, a, (size_t)M * K), *nr = upload_as(dt, res, (size_t)M * N);
        VG_CHECK(vg_mem_copy_d2d(g.s, da, na, (size_t)M * K * esize(dt)));
        VG_CHECK(vg_mem_copy_d2d(g.s, dc, nr, (size_t)M * N * esize(dt)));
        if (exec) VG_CHECK(vg_graph_exec_launch(exec, g.s));
        else enqueue_gemm(&c);
        download_as(dt, out, dc, (size_t)M * N);
        VG_CHECK(vg_mem_free(g.rt, na));
        VG_CHECK(vg_mem_free(g.rt, nr));
        double max_err = 0, max_ref = 0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double acc = 0;
                for (int k = 0; k < K; k++) acc += (double)a[(size_t)i * K + k] * b[(size_t)j * K + k];
                double v = act_ref(t->act, t->alpha * acc + bias[j]);
                if (t->inplace) v += res[(size_t)i * N + j];
                max_err = fmax(max_err, fabs(v - out[(size_t)i * N + j]));
                max_ref = fmax(max_ref, fabs(v));
            }
        if (max_err / max_ref > tol)
            print_message("gemm %dx%dx%d dtype %d rel err %g\n", M, N, K, dt, max_err / max_ref);
        assert_true(max_err / max_ref <= tol);
    }
    if (exec) VG_CHECK(vg_graph_exec_destroy(exec));
    void *bufs[4] = {da, db, dbias, dc};
    for (int i = 0; i < 4; i++) VG_CHECK(vg_mem_free(g.rt, bufs[i]));
    free(a), free(b), free(bias), free(res), free(out);
}

static const gemm_half_case gemm_half_cases[] = {
    {200, 264, 1000, VG_ACT_NONE, 1, 1.0f},    /* k not a multiple of 64 */
    {70, 136, 136, VG_ACT_GELU_ERF, 0, 0.5f},  /* the merger's epilogue */
    {1100, 128, 192, VG_ACT_NONE, 1, 1.0f},    /* tall: the large tiles */
};

static void test_gemm_half_io(void **state)
{
    (void)state;
    if (!supports(VG_OP_GEMM)) skip();
    for (size_t i = 0; i < sizeof gemm_half_cases / sizeof gemm_half_cases[0]; i++) {
        gemm_half_check(VG_DTYPE_BF16, &gemm_half_cases[i], 1e-2f); /* bf16 output rounding */
        gemm_half_check(VG_DTYPE_F16, &gemm_half_cases[i], 2e-3f);
    }
}

/* max|got - want| / max|want|, failing on NaN */
static void check_close(const char *what, const float *got, const double *want, size_t n, double tol)
{
    double err = 0, ref = 1e-30;
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i])) {
            print_message("%s: NaN at %zu\n", what, i);
            fail();
        }
        err = fmax(err, fabs(got[i] - want[i]));
        ref = fmax(ref, fabs(want[i]));
    }
    if (err / ref > tol) print_message("%s: relative error %.3g > %.3g\n", what, err / ref, tol);
    assert_true(err / ref <= tol);
}

static double tol_for(vg_dtype t) { return t == VG_DTYPE_F32 ? 2e-5 : 2e-2; }

static void rmsnorm_case(vg_dtype t)
{
    enum { R = 37, Ccols = 200 };
    static float x[R * Ccols], w[Ccols], got[R * Ccols];
    static double want[R * Ccols];
    fill_random(x, R * Ccols, 31);
    fill_random(w, Ccols, 32);
    void *dx = upload_as(t, x, R * Ccols), *dw = upload_as(t, w, Ccols), *dout = dalloc(R * Ccols * 4);
    VG_CHECK(vg_op_rmsnorm(g.s, t, dx, dw, dout, R, Ccols, 1e-6f));
    download_as(t, got, dout, R * Ccols);
    for (int r = 0; r < R; r++) {
        double ss = 0;
        for (int c = 0; c < Ccols; c++) ss += (double)x[r * Ccols + c] * x[r * Ccols + c];
        double inv = 1.0 / sqrt(ss / Ccols + 1e-6);
        for (int c = 0; c < Ccols; c++) want[r * Ccols + c] = w[c] * x[r * Ccols + c] * inv;
    }
    check_close("rmsnorm", got, want, R * Ccols, tol_for(t));
    VG_CHECK(vg_op_rmsnorm(g.s, t, dx, dw, dx, R, Ccols, 1e-6f)); /* in place */
    download_as(t, got, dx, R * Ccols);
    check_close("rmsnorm in place", got, want, R * Ccols, tol_for(t));
    VG_CHECK(vg_mem_free(g.rt, dx));
    VG_CHECK(vg_mem_free(g.rt, dw));
    VG_CHECK(vg_mem_free(g.rt, dout));
}

static void test_rmsnorm(void **state)
{
    (void)state;
    if (!supports(VG_OP_RMSNORM)) skip();
    rmsnorm_case(VG_DTYPE_F32);
    rmsnorm_case(VG_DTYPE_BF16);
}

static void rotary_case(vg_dtype t, int heads, int hd)
{
    enum { R = 50 };
    int hidden = heads * hd, ld = 3 * hidden;
    size_t n = (size_t)R * ld;
    float *x = malloc(n * 4), *got = malloc(n * 4);
    double *want = malloc(n * sizeof(double));
    int32_t pos[R * 2];
    assert_true(x && got && want);
    fill_random(x, n, 41);
    for (int r = 0; r < R; r++) pos[2 * r] = (r * 7) % 61, pos[2 * r + 1] = (r * 13) % 57;
    void *dx = upload_as(t, x, n);
    int32_t *dpos = dalloc(sizeof pos);
    upload(dpos, pos, sizeof pos);
    /* q and k are the first 2·heads head slices of a qkv row; v stays as it is */
    VG_CHECK(vg_op_rotary_2d(g.s, t, dx, ld, R, 2 * heads, hd, dpos, 10000.0f));
    download_as(t, got, dx, n);
    int half = hd / 2, quarter = hd / 4;
    for (size_t i = 0; i < n; i++) want[i] = x[i];
    for (int r = 0; r < R; r++)
        for (int h = 0; h < 2 * heads; h++)
            for (int i = 0; i < half; i++) {
                int j = i < quarter ? i : i - quarter;
                double angle = (i < quarter ? pos[2 * r] : pos[2 * r + 1]) * pow(10000.0, -2.0 * j / half);
                size_t b = (size_t)r * ld + (size_t)h * hd;
                double x0 = x[b + i], x1 = x[b + i + half];
                want[b + i] = x0 * cos(angle) - x1 * sin(angle);
                want[b + i + half] = x1 * cos(angle) + x0 * sin(angle);
            }
    check_close("rotary_2d", got, want, n, tol_for(t));
    free(x), free(got), free(want);
    VG_CHECK(vg_mem_free(g.rt, dx));
    VG_CHECK(vg_mem_free(g.rt, dpos));
}

static void test_rotary_2d(void **state)
{
    (void)state;
    if (!supports(VG_OP_ROTARY_2D)) skip();
    rotary_case(VG_DTYPE_F32, 4, 32);
    rotary_case(VG_DTYPE_F32, 2, 80);
    rotary_case(VG_DTYPE_BF16, 2, 80);
    rotary_case(VG_DTYPE_F16, 2, 80);
    rotary_case(VG_DTYPE_BF16, 3, 12); /* half-heads of 6: narrower vectors */
    rotary_case(VG_DTYPE_F32, 2, 20);
}

/* Attention reference for one segmentation, in double. */
static void attention_ref(const float *qkv, int rows, int heads, int hd, const int32_t *cu, int nseg,
                          double *out)
{
    int hidden = heads * hd;
    double *sc = malloc((size_t)rows * sizeof(double));
    assert_non_null(sc);
    for (int sgi = 0; sgi < nseg; sgi++)
        for (int h = 0; h < heads; h++)
            for (int i = cu[sgi]; i < cu[sgi + 1]; i++) {
                double mx = -1e300, sum = 0;
                for (int j = cu[sgi]; j < cu[sgi + 1]; j++) {
                    double d = 0;
                    for (int e = 0; e < hd; e++)
                        d += (double)qkv[(size_t)i * 3 * hidden + h * hd + e] *
                             qkv[(size_t)j * 3 * hidden + hidden + h * hd + e];
                    sc[j] = d / sqrt((double)hd);
                    mx = fmax(mx, sc[j]);
                }
                for (int j = cu[sgi]; j < cu[sgi + 1]; j++) sum += sc[j] = exp(sc[j] - mx);
                for (int e = 0; e < hd; e++) {
                    double acc = 0;
                    for (int j = cu[sgi]; j < cu[sgi + 1]; j++)
                        acc += sc[j] / sum * qkv[(size_t)j * 3 * hidden + 2 * hidden + h * hd + e];
                    out[(size_t)i * hidden + h * hd + e] = acc;
                }
            }
    free(sc);
}

typedef struct attention_call {
    vg_dtype t;
    void *qkv, *out;
    int rows, heads, hd, nseg;
    int32_t *cu;
    int32_t *pos; /* attention_rotary when set */
} attention_call;

static void enqueue_attention(void *p)
{
    attention_call *c = p;
    int hidden = c->heads * c->hd;
    float scale = 1.0f / sqrtf((float)c->hd);
    if (c->pos)
        VG_CHECK(vg_op_attention_rotary(g.s, c->t, c->qkv, 3 * hidden, c->out, hidden,
                                         c->rows, c->heads, c->hd, c->cu, c->nseg, scale, c->pos,
                                         10000.0f));
    else
        VG_CHECK(vg_op_attention(g.s, c->t, c->qkv, 3 * hidden, c->out, hidden, c->rows,
                                  c->heads, c->hd, c->cu, c->nseg, scale));
}

/* The q and k slices of every row of a float qkv, rotated as rotary_2d's contract says. */
static void rotate_qk_ref(float *qkv, int rows, int heads, int hd, const int32_t *pos)
{
    int half = hd / 2, quarter = hd / 4, ld = 3 * heads * hd;
    for (int r = 0; r < rows; r++)
        for (int h = 0; h < 2 * heads; h++)
            for (int i = 0; i < half; i++) {
                int j = i < quarter ? i : i - quarter;
                double angle = (i < quarter ? pos[2 * r] : pos[2 * r + 1]) * pow(10000.0, -2.0 * j / half);
                float *b = qkv + (size_t)r * ld + (size_t)h * hd;
                double x0 = b[i], x1 = b[i + half];
                b[i] = (float)(x0 * cos(angle) - x1 * sin(angle));
                b[i + half] = (float)(x1 * cos(angle) + x0 * sin(angle));
            }
}

/* attention, or attention_rotary when `rotary`: two segmentations (one captured), a replay,
 * and for attention_rotary a check that qkv was only read. */
static void attention_case_for(vg_dtype t, int heads, int hd, int rows, int rotary)
{
    int hidden = heads * hd;
    size_t n = (size_t)rows * 3 * hidden;
    float *qkv = malloc(n * 4), *ref_in = malloc(n * 4), *got = malloc((size_t)rows * hidden * 4);
    double *want = malloc((size_t)rows * hidden * sizeof(double));
    int32_t *pos = malloc((size_t)rows * 2 * sizeof(int32_t));
    assert_true(qkv && ref_in && got && want && pos);
    fill_random(qkv, n, 51);
    attention_call c = {t, upload_as(t, qkv, n), dalloc((size_t)rows * hidden * 4), rows, heads, hd, 8, NULL, NULL};
    /* the reference reads what the device holds: the inputs rounded to t */
    download_as(t, ref_in, c.qkv, n);
    float *sent = NULL;
    if (rotary) {
        for (int r = 0; r < rows; r++) pos[2 * r] = (r * 7) % 61, pos[2 * r + 1] = (r * 13) % 57;
        c.pos = dalloc((size_t)rows * 2 * sizeof(int32_t));
        upload(c.pos, pos, (size_t)rows * 2 * sizeof(int32_t));
        sent = malloc(n * 4);
        assert_non_null(sent);
        memcpy(sent, ref_in, n * 4);
        rotate_qk_ref(ref_in, rows, heads, hd, pos);
    }
    c.cu = dalloc(9 * sizeof(int32_t));
    /* Two segmentations of the same rows, with empty segments: one graph serves both. */
    int32_t segs[2][9] = {{0, 5, 5, rows / 2, rows - 9, rows, rows, rows, rows},
                          {0, rows / 3, rows / 3 + 64 < rows ? rows / 3 + 64 : rows, rows, rows, rows, rows, rows, rows}};
    vg_graph_exec *exec = NULL;
    for (int k = 0; k < 2; k++) {
        upload(c.cu, segs[k], sizeof segs[k]);
        if (k == 0) enqueue_attention(&c);
        else if (has_graphs()) {
            exec = capture(enqueue_attention, &c);
            VG_CHECK(vg_graph_exec_launch(exec, g.s));
        } else enqueue_attention(&c);
        download_as(t, got, c.out, (size_t)rows * hidden);
        attention_ref(ref_in, rows, heads, hd, segs[k], 8, want);
        check_close("attention", got, want, (size_t)rows * hidden, tol_for(t));
    }
    if (exec) { /* replay with the first segmentation again: read at replay, not at capture */
        upload(c.cu, segs[0], sizeof segs[0]);
        VG_CHECK(vg_graph_exec_launch(exec, g.s));
        download_as(t, got, c.out, (size_t)rows * hidden);
        attention_ref(ref_in, rows, heads, hd, segs[0], 8, want);
        check_close("attention replay", got, want, (size_t)rows * hidden, tol_for(t));
        VG_CHECK(vg_graph_exec_destroy(exec));
    }
    if (sent) { /* attention_rotary leaves qkv as it was */
        download_as(t, qkv, c.qkv, n);
        assert_memory_equal(qkv, sent, n * 4);
        free(sent);
        VG_CHECK(vg_mem_free(g.rt, c.pos));
    }
    free(qkv), free(ref_in), free(got), free(want), free(pos);
    VG_CHECK(vg_mem_free(g.rt, c.qkv));
    VG_CHECK(vg_mem_free(g.rt, c.out));
    VG_CHECK(vg_mem_free(g.rt, c.cu));
}

static void attention_case(vg_dtype t, int heads, int hd, int rows)
{
    attention_case_for(t, heads, hd, rows, 0);
}

static void test_attention(void **state)
{
    (void)state;
    if (!supports(VG_OP_ATTENTION)) skip();
    attention_case(VG_DTYPE_F32, 4, 32, 150);
    attention_case(VG_DTYPE_F32, 2, 80, 300);
    attention_case(VG_DTYPE_BF16, 2, 80, 300);
    attention_case(VG_DTYPE_BF16, 3, 64, 97);
    /* segments of hundreds of rows: key tiles wholly inside every row's segment (the unmasked
     * path of the tensor-core kernel) next to partial ones */
    attention_case(VG_DTYPE_BF16, 2, 80, 600);
    attention_case(VG_DTYPE_F16, 2, 72, 600);
    /* the other head dims of the Hopper kernel's P·V shapes */
    attention_case(VG_DTYPE_F16, 1, 96, 200);
    attention_case(VG_DTYPE_BF16, 2, 128, 300);
}

static void test_attention_rotary(void **state)
{
    (void)state;
    if (!supports(VG_OP_ATTENTION_ROTARY)) skip();
    attention_case_for(VG_DTYPE_F32, 4, 32, 150, 1);
    attention_case_for(VG_DTYPE_F32, 2, 80, 300, 1);
    attention_case_for(VG_DTYPE_BF16, 2, 80, 300, 1);
    attention_case_for(VG_DTYPE_BF16, 3, 64, 97, 1);
    attention_case_for(VG_DTYPE_BF16, 2, 80, 600, 1);
    attention_case_for(VG_DTYPE_F16, 2, 72, 600, 1);
}

static void silu_mul_case(vg_dtype t)
{
    enum { R = 33, Cc = 100, LDI = 2 * Cc + 3, LDO = Cc + 1 };
    static float in[R * LDI], got[R * LDO];
    static double want[R * LDO];
    fill_random(in, R * LDI, 61);
    void *din = upload_as(t, in, R * LDI), *dout = dalloc(R * LDO * 4);
    VG_CHECK(vg_mem_set(g.s, dout, 0, R * LDO * esize(t)));
    VG_CHECK(vg_op_silu_mul(g.s, t, din, LDI, dout, LDO, R, Cc));
    download_as(t, got, dout, R * LDO);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < LDO; c++) {
            double a = in[r * LDI + c], b = in[r * LDI + Cc + c];
            want[r * LDO + c] = c < Cc ? a / (1 + exp(-a)) * b : 0.0; /* the stride gap untouched */
        }
    check_close("silu_mul", got, want, R * LDO, tol_for(t));
    VG_CHECK(vg_mem_free(g.rt, din));
    VG_CHECK(vg_mem_free(g.rt, dout));
}

static void test_silu_mul(void **state)
{
    (void)state;
    if (!supports(VG_OP_SILU_MUL)) skip();
    silu_mul_case(VG_DTYPE_F32);
    silu_mul_case(VG_DTYPE_BF16);
}

static void test_convert(void **state)
{
    (void)state;
    if (!supports(VG_OP_CONVERT)) skip();
    enum { N = 1001 };
    static float x[N], got[N];
    static double want[N];
    fill_random(x, N, 71);
    for (int i = 0; i < N; i++) x[i] *= 1000.0f;
    const vg_dtype kinds[] = {VG_DTYPE_BF16, VG_DTYPE_F16};
    for (int k = 0; k < 2; k++) {
        float *dx = dalloc(N * 4);
        upload(dx, x, sizeof x);
        void *dh = dalloc(N * 2);
        float *back = dalloc(N * 4);
        VG_CHECK(vg_op_convert(g.s, VG_DTYPE_F32, dx, kinds[k], dh, N));
        VG_CHECK(vg_op_convert(g.s, kinds[k], dh, VG_DTYPE_F32, back, N));
        download(got, back, sizeof got);
        for (int i = 0; i < N; i++) /* exactly the host's round-to-nearest-even */
            want[i] = kinds[k] == VG_DTYPE_BF16 ? vg_bf16_to_f32(vg_f32_to_bf16(x[i]))
                                                : vg_f16_to_f32(vg_f32_to_f16(x[i]));
        check_close("convert", got, want, N, 0.0);
        VG_CHECK(vg_mem_free(g.rt, dx));
        VG_CHECK(vg_mem_free(g.rt, dh));
        VG_CHECK(vg_mem_free(g.rt, back));
    }
}

/* A test that fails half-way through a capture must not leave the stream capturing. */
static int end_stray_capture(void **state)
{
    (void)state;
    vg_graph *graph = NULL;
    if (g.capturing || vg_stream_is_capturing(g.s)) {
        print_message("a failed test left the stream capturing; capture discarded\n");
        g.capturing = 0;
        if (vg_graph_capture_end(g.s, &graph) == VG_OK) vg_graph_destroy(graph);
    }
    vg_error_clear();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    vg_stream_destroy(g.s);
    return 0;
}

int main(void)
{
    vg_status st = vg_runtime_open(NULL, &g.rt);
    const char *want = getenv("VG_BACKEND");
    /* The GPU suite sets VG_REQUIRE_DEVICE=1: there, a missing device is a failure. */
    const char *req = getenv("VG_REQUIRE_DEVICE");
    if (st == VG_ERR_NO_DEVICE && !(req && strcmp(req, "1") == 0)) {
        printf("SKIP: backend '%s' has no device: %s\n", want ? want : "(auto)", vg_last_error());
        return VG_TEST_SKIP;
    }
    if (st != VG_OK) {
        fprintf(stderr, "conformance: cannot open backend '%s': %s\n", want ? want : "(auto)",
                vg_last_error());
        return 1;
    }
    printf("conformance suite on backend '%s' (%s)\n", vg_runtime_backend_name(g.rt),
           vg_runtime_plugin_path(g.rt));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_device_info, end_stray_capture),
        cmocka_unit_test_teardown(test_op_support_table, end_stray_capture),
        cmocka_unit_test_teardown(test_memory_roundtrip, end_stray_capture),
        cmocka_unit_test_teardown(test_pinned_staging, end_stray_capture),
        cmocka_unit_test_teardown(test_out_of_memory_is_an_error, end_stray_capture),
        cmocka_unit_test_teardown(test_fill_dtypes, end_stray_capture),
        cmocka_unit_test_teardown(test_events_time, end_stray_capture),
        cmocka_unit_test_teardown(test_replay_rereads_buffers, end_stray_capture),
        cmocka_unit_test_teardown(test_replay_twice_equals_eager_twice, end_stray_capture),
        cmocka_unit_test_teardown(test_gemm_f32, end_stray_capture),
        cmocka_unit_test_teardown(test_gemm_bf16, end_stray_capture),
        cmocka_unit_test_teardown(test_gemm_half_io, end_stray_capture),
        cmocka_unit_test_teardown(test_gemm_rejects_activation_with_inplace_residual, end_stray_capture),
        cmocka_unit_test_teardown(test_gather_reads_indices_at_replay, end_stray_capture),
        cmocka_unit_test_teardown(test_update, end_stray_capture),
        cmocka_unit_test_teardown(test_rmsnorm, end_stray_capture),
        cmocka_unit_test_teardown(test_rotary_2d, end_stray_capture),
        cmocka_unit_test_teardown(test_attention, end_stray_capture),
        cmocka_unit_test_teardown(test_attention_rotary, end_stray_capture),
        cmocka_unit_test_teardown(test_silu_mul, end_stray_capture),
        cmocka_unit_test_teardown(test_convert, end_stray_capture),
        cmocka_unit_test_teardown(test_failed_capture_recovers, end_stray_capture),
        cmocka_unit_test_teardown(test_capture_cycles_return_memory, end_stray_capture),
    };
    int failed = cmocka_run_group_tests_name("conformance", tests, setup, teardown);
    vg_runtime_close(g.rt);
    return failed ? 1 : 0;
}
