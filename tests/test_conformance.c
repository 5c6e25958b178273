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
#include "vg/vg_native.h"

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

/* Streams come and go (a runner makes its own, and a backend may hand a destroyed stream's native
 * stream to the next one: cuda does). Each new stream is idle and not capturing, even after one
 * was destroyed mid-capture; two live streams never share a native stream; more streams than a
 * backend keeps come and go at once; a graph captured on a destroyed stream replays on a later
 * one; and the work of every stream is its own. Native handles are asked for only in the last
 * rounds: cuda never hands a stream whose handle went out to another owner. */
static void test_streams_come_and_go(void **state)
{
    (void)state;
    if (!supports(VG_OP_AXPBY)) skip();
    enum { N = 256, ROUNDS = 12, MANY = 10 };
    float hx[N], back[N];
    fill_random(hx, N, 5); /* multiples of 2^-15: every product and sum below is exact */
    float *x = dalloc(N * 4), *y = dalloc(N * 4);
    upload(x, hx, sizeof hx);
    vg_graph_exec *exec = NULL; /* captured on a stream destroyed before it replays */
    for (int r = 0; r < ROUNDS; r++) {
        vg_stream *t = NULL, *u = NULL;
        VG_CHECK(vg_stream_create(g.rt, &t));
        VG_CHECK(vg_stream_create(g.rt, &u));
        if (r >= ROUNDS - 2) {
            void *nt = NULL, *nu = NULL;
            if (vg_stream_native(t, &nt) == VG_OK && vg_stream_native(u, &nu) == VG_OK) assert_true(nt != nu);
            vg_error_clear();
        }
        /* y = (r + 1)·x on t, then read back through u after t's work is done */
        VG_CHECK(vg_mem_set(t, y, 0, N * 4));
        VG_CHECK(vg_op_axpby(t, N, (float)(r + 1), x, 0.0f, y));
        VG_CHECK(vg_stream_sync(t));
        VG_CHECK(vg_mem_copy_d2h(u, back, y, sizeof back));
        VG_CHECK(vg_stream_sync(u));
        for (int i = 0; i < N; i++) assert_true(back[i] == (float)(r + 1) * hx[i]);
        if (has_graphs() && r == 3) { /* this stream's graph outlives it */
            vg_graph *graph = NULL;
            VG_CHECK(vg_graph_capture_begin(t));
            VG_CHECK(vg_op_axpby(t, N, 1.0f, x, 1.0f, y));
            VG_CHECK(vg_graph_capture_end(t, &graph));
            VG_CHECK(vg_graph_instantiate(graph, &exec));
            VG_CHECK(vg_graph_destroy(graph));
        }
        if (has_graphs() && r % 3 == 1) { /* u destroyed while capturing: the capture is discarded */
            VG_CHECK(vg_graph_capture_begin(u));
            VG_CHECK(vg_op_axpby(u, N, 100.0f, x, 0.0f, y));
            /* another stream's destroy waits for its work: refused while u captures, t stays */
            VG_CHECK_FAILS(vg_stream_destroy(t), VG_ERR_CAPTURE, "vg_stream_destroy");
            VG_CHECK(vg_stream_destroy(u));
            u = NULL;
            VG_CHECK(vg_mem_copy_d2h(t, back, y, sizeof back)); /* t works; what u recorded never ran */
            VG_CHECK(vg_stream_sync(t));
            for (int i = 0; i < N; i++) assert_true(back[i] == (float)(r + 1) * hx[i]);
        }
        VG_CHECK(vg_stream_destroy(t));
        VG_CHECK(vg_stream_destroy(u));
        if (r == 5) { /* more streams at once than a backend keeps, each with work of its own */
            vg_stream *many[MANY];
            for (int k = 0; k < MANY; k++) {
                VG_CHECK(vg_stream_create(g.rt, &many[k]));
                VG_CHECK(vg_mem_set(many[k], y, 0, N * 4));
            }
            for (int k = 0; k < MANY; k++) VG_CHECK(vg_stream_destroy(many[k]));
            VG_CHECK(vg_mem_copy_h2d(g.s, y, back, sizeof back)); /* y = 6x again */
            VG_CHECK(vg_stream_sync(g.s));
        }
        if (exec && r == 5) { /* y = 6x from round 5; one replay adds x */
            vg_stream *v = NULL;
            VG_CHECK(vg_stream_create(g.rt, &v));
            VG_CHECK(vg_graph_exec_launch(exec, v));
            VG_CHECK(vg_mem_copy_d2h(v, back, y, sizeof back));
            VG_CHECK(vg_stream_sync(v));
            for (int i = 0; i < N; i++) assert_true(back[i] == hx[i] + 6.0f * hx[i]);
            VG_CHECK(vg_stream_destroy(v));
        }
    }
    download(back, y, sizeof back);
    for (int i = 0; i < N; i++) assert_true(back[i] == (float)ROUNDS * hx[i]);
    VG_CHECK(vg_graph_exec_destroy(exec));
    VG_CHECK(vg_mem_free(g.rt, x));
    VG_CHECK(vg_mem_free(g.rt, y));
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

/* A float array as the double array the references of reference_ops.h take (free it). */
static double *to_double(const float *x, size_t n)
{
    double *d = malloc((n ? n : 1) * sizeof(double));
    assert_non_null(d);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

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
                double v = ref_activation(t->act, t->alpha * acc + bias[j]);
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

/* GEMMs shaped like decoding: a few rows of activations against a long weight (k a multiple of
 * 8, as a backend's weight-streaming kernel wants it), n small (split along k) or not a multiple
 * of 16, F32 logits, a bias, activations, an in-place residual. Each replays one capture three
 * times on new inputs: kernels that count their blocks in device memory must leave the counts as
 * they found them. (VG_CUDA_GEMM=skinny runs them all through CUDA's skinny kernel.) */
typedef struct gemm_decode_case {
    int m, n, k;
    int f32_out, bias, inplace;
    vg_activation act;
} gemm_decode_case;

static void gemm_decode_check(vg_dtype dt, const gemm_decode_case *t)
{
    const int M = t->m, N = t->n, K = t->k;
    vg_dtype dc_t = t->f32_out ? VG_DTYPE_F32 : dt;
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * N * K);
    float *bias = malloc(sizeof(float) * N), *res = malloc(sizeof(float) * M * N);
    float *out = malloc(sizeof(float) * M * N);
    double *want = malloc(sizeof(double) * M * N), *da_ = malloc(sizeof(double) * M * K);
    double *db_ = malloc(sizeof(double) * N * K), *dbias_ = malloc(sizeof(double) * N);
    double *dres_ = malloc(sizeof(double) * M * N);
    assert_true(a && b && bias && res && out && want && da_ && db_ && dbias_ && dres_);
    fill_random(b, (size_t)N * K, 41);
    fill_random(bias, N, 42);
    fill_random(a, (size_t)M * K, 43);
    void *da = upload_as(dt, a, (size_t)M * K), *db = upload_as(dt, b, (size_t)N * K);
    void *dbias = upload_as(dt, bias, N), *dc = dalloc((size_t)M * N * esize(dc_t));
    void *dres = t->inplace ? dc : NULL;
    gemm_case c;
    memset(&c, 0, sizeof c);
    c.args = (vg_gemm_args){.struct_size = sizeof(vg_gemm_args), .dtype_ab = dt, .dtype_c = dc_t,
                            .m = M, .n = N, .k = K, .a = da, .lda = K, .b = db, .ldb = K, .c = dc,
                            .ldc = N, .bias = t->bias ? dbias : NULL, .residual = dres, .ldr = N,
                            .act = t->act, .alpha = 1.0f};
    vg_graph_exec *exec = has_graphs() ? capture(enqueue_gemm, &c) : NULL;
    for (int i = 0; i < N * K; i++) db_[i] = b[i];
    for (int j = 0; j < N; j++) dbias_[j] = bias[j];
    for (int round = 0; round < 3; round++) {
        fill_random(a, (size_t)M * K, 50 + round);
        fill_random(res, (size_t)M * N, 60 + round);
        void *na = upload_as(dt, a, (size_t)M * K), *nr = upload_as(dc_t, res, (size_t)M * N);
        VG_CHECK(vg_mem_copy_d2d(g.s, da, na, (size_t)M * K * esize(dt)));
        VG_CHECK(vg_mem_copy_d2d(g.s, dc, nr, (size_t)M * N * esize(dc_t)));
        if (exec) VG_CHECK(vg_graph_exec_launch(exec, g.s));
        else enqueue_gemm(&c);
        download_as(dc_t, out, dc, (size_t)M * N);
        VG_CHECK(vg_mem_free(g.rt, na));
        VG_CHECK(vg_mem_free(g.rt, nr));
        for (int i = 0; i < M * K; i++) da_[i] = a[i];
        for (int i = 0; i < M * N; i++) dres_[i] = res[i];
        ref_gemm(M, N, K, 1.0, da_, K, db_, K, t->bias ? dbias_ : NULL, t->inplace ? dres_ : NULL, N,
                 t->act, want, N);
        char what[96];
        snprintf(what, sizeof what, "gemm %s->%s m=%d n=%d k=%d round %d", vg_dtype_name(dt),
                 vg_dtype_name(dc_t), M, N, K, round);
        check_close(what, out, want, (size_t)M * N,
                    dc_t == VG_DTYPE_F32 ? 1e-4 : dc_t == VG_DTYPE_BF16 ? 1e-2 : 2e-3);
    }
    if (exec) VG_CHECK(vg_graph_exec_destroy(exec));
    void *bufs[4] = {da, db, dbias, dc};
    for (int i = 0; i < 4; i++) VG_CHECK(vg_mem_free(g.rt, bufs[i]));
    free(a), free(b), free(bias), free(res), free(out);
    free(want), free(da_), free(db_), free(dbias_), free(dres_);
}

static const gemm_decode_case gemm_decode_cases[] = {
    /* m    n     k    f32 bias inplace act */
    {1, 301, 896, 0, 1, 0, VG_ACT_NONE},     /* a qkv projection: bias, n not a multiple of 16 */
    {3, 45, 4864, 0, 0, 1, VG_ACT_NONE},     /* a down projection: long k, few columns */
    {16, 200, 512, 1, 0, 0, VG_ACT_NONE},    /* logits in F32 */
    {33, 77, 1000, 0, 1, 0, VG_ACT_GELU_ERF},
    {64, 64, 2048, 0, 0, 0, VG_ACT_SILU},
    {9, 16, 8, 1, 1, 1, VG_ACT_NONE},        /* the shortest k */
    /* extents and strides multiples of 8, as the models' projections have them */
    {24, 1152, 896, 0, 1, 0, VG_ACT_NONE},   /* a qkv projection: bias */
    {64, 896, 2432, 0, 0, 1, VG_ACT_NONE},   /* a down projection: the residual in place */
};

static void test_gemm_decode_shapes(void **state)
{
    (void)state;
    if (!supports(VG_OP_GEMM)) skip();
    for (size_t i = 0; i < sizeof gemm_decode_cases / sizeof gemm_decode_cases[0]; i++) {
        gemm_decode_check(VG_DTYPE_BF16, &gemm_decode_cases[i]);
        gemm_decode_check(VG_DTYPE_F16, &gemm_decode_cases[i]);
    }
}

/* gemm whose B the op just before it wrote, without the b_static hint (op table version 11): a
 * device must not read B before that op has finished (cuda's panel GEMM copies a static B ahead
 * of its grid dependency wait). B first holds other values, then a fill on the stream gives it
 * 0.5 (then 0.25), then the GEMM runs at once; A's values are multiples of 1/8 and the sums exact
 * in F32. */
static void test_gemm_b_written_before(void **state)
{
    (void)state;
    if (!supports(VG_OP_GEMM) || !supports(VG_OP_FILL)) skip();
    uint32_t dtypes = 0;
    vg_runtime_op_support(g.rt, VG_OP_GEMM, &dtypes);
    const vg_dtype dt = dtypes & VG_DTYPE_BIT(VG_DTYPE_BF16) ? VG_DTYPE_BF16 : VG_DTYPE_F32;
    static const int rows[] = {1, 16, 40};
    const int N = 1024, K = 1032; /* a long fill; k past a multiple of 32 */
    float *a = malloc((size_t)64 * K * 4), *b = malloc((size_t)N * K * 4), *out = malloc((size_t)64 * N * 4);
    assert_true(a && b && out);
    for (size_t i = 0; i < (size_t)N * K; i++) b[i] = (float)((int)(i % 13) - 6);
    for (int t = 0; t < (int)(sizeof rows / sizeof rows[0]); t++) {
        const int M = rows[t];
        for (size_t i = 0; i < (size_t)M * K; i++) a[i] = (float)((int)((i * 7) % 17) - 8) / 8.0f;
        void *da = upload_as(dt, a, (size_t)M * K), *db = upload_as(dt, b, (size_t)N * K);
        void *dc = dalloc((size_t)M * N * 4);
        vg_gemm_args args = {.struct_size = sizeof args, .dtype_ab = dt, .dtype_c = VG_DTYPE_F32, .m = M, .n = N,
                             .k = K, .a = da, .lda = K, .b = db, .ldb = K, .c = dc, .ldc = N, .act = VG_ACT_NONE,
                             .alpha = 1.0f, .b_static = 0};
        /* twice: the first call of a shape may be timed by a tuner, which waits for the fill */
        for (int round = 0; round < 2; round++) {
            const double v = round ? 0.25 : 0.5;
            VG_CHECK(vg_op_fill(g.s, db, dt, (size_t)N * K, v));
            VG_CHECK(vg_op_gemm(g.s, &args));
            download_as(VG_DTYPE_F32, out, dc, (size_t)M * N);
            for (int i = 0; i < M; i++) {
                double want = 0;
                for (int k = 0; k < K; k++) want += v * a[(size_t)i * K + k];
                for (int j = 0; j < N; j++) {
                    if (out[(size_t)i * N + j] != (float)want)
                        print_message("gemm after a fill of B with %g, m=%d: C[%d,%d] = %.9g, want %.9g\n", v, M,
                                      i, j, (double)out[(size_t)i * N + j], want);
                    assert_true(out[(size_t)i * N + j] == (float)want);
                }
            }
        }
        void *bufs[3] = {da, db, dc};
        for (int i = 0; i < 3; i++) VG_CHECK(vg_mem_free(g.rt, bufs[i]));
    }
    free(a), free(b), free(out);
}

/* gemm with a gate (op table version 6: C = silu(gate half) · up half of the product), at decode
 * shapes: split along k (long k, few outputs), an odd half, m past 64, F32 output, a bias; each
 * captured once and replayed on new activations, against the reference and against the GEMM and
 * silu_mul run separately on the same device. The error bound follows the product's: max|P|². */
typedef struct gate_case {
    int m, h, k, f32_out, bias;
} gate_case;

static void gemm_silu_gate_check(vg_dtype dt, const gate_case *t)
{
    const int M = t->m, N = 2 * t->h, H = t->h, K = t->k, LDC = N + 3;
    vg_dtype dc_t = t->f32_out ? VG_DTYPE_F32 : dt;
    size_t na = (size_t)M * K, nb = (size_t)N * K, nc = (size_t)M * LDC;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *bias = malloc((size_t)N * 4);
    float *out = malloc(nc * 4), *sep = malloc((size_t)M * H * 4);
    double *want = malloc(nc * sizeof(double)), *da_ = malloc(na * sizeof(double));
    double *db_ = malloc(nb * sizeof(double)), *dbias_ = malloc((size_t)N * sizeof(double));
    assert_true(a && b && bias && out && sep && want && da_ && db_ && dbias_);
    fill_random(b, nb, 141);
    fill_random(bias, (size_t)N, 142);
    fill_random(a, na, 143);
    void *da = upload_as(dt, a, na), *db = upload_as(dt, b, nb), *dbias = upload_as(dt, bias, (size_t)N);
    void *dc = dalloc(nc * esize(dc_t)), *dp = dalloc((size_t)M * N * esize(dc_t));
    void *dm = dalloc((size_t)M * H * esize(dc_t));
    gemm_case c;
    memset(&c, 0, sizeof c);
    c.args = (vg_gemm_args){.struct_size = sizeof(vg_gemm_args), .dtype_ab = dt, .dtype_c = dc_t,
                            .m = M, .n = N, .k = K, .a = da, .lda = K, .b = db, .ldb = K, .c = dc,
                            .ldc = LDC, .bias = t->bias ? dbias : NULL, .act = VG_ACT_NONE,
                            .alpha = 1.0f, .gate = VG_GEMM_GATE_SILU};
    vg_graph_exec *exec = has_graphs() ? capture(enqueue_gemm, &c) : NULL;
    for (size_t i = 0; i < nb; i++) db_[i] = b[i];
    for (int j = 0; j < N; j++) dbias_[j] = bias[j];
    for (int round = 0; round < 3; round++) {
        fill_random(a, na, 150 + round);
        void *nw = upload_as(dt, a, na);
        VG_CHECK(vg_mem_copy_d2d(g.s, da, nw, na * esize(dt)));
        if (exec) VG_CHECK(vg_graph_exec_launch(exec, g.s));
        else enqueue_gemm(&c);
        download_as(dc_t, out, dc, nc);
        /* the two ops it replaces, on the same device */
        vg_gemm_args plain = c.args;
        plain.gate = VG_GEMM_GATE_NONE, plain.c = dp, plain.ldc = N;
        VG_CHECK(vg_op_gemm(g.s, &plain));
        VG_CHECK(vg_op_silu_mul(g.s, dc_t, dp, N, dm, H, M, H));
        download_as(dc_t, sep, dm, (size_t)M * H);
        VG_CHECK(vg_mem_free(g.rt, nw));
        for (size_t i = 0; i < na; i++) da_[i] = a[i];
        double most = ref_gemm_silu_gate(M, N, K, 1.0, da_, K, db_, K, t->bias ? dbias_ : NULL, want, LDC);
        double scale = most * most, err = 0, err_sep = 0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < H; j++) {
                double w = want[(size_t)i * LDC + j], gv = out[(size_t)i * LDC + j];
                assert_false(isnan(gv));
                err = fmax(err, fabs(gv - w));
                err_sep = fmax(err_sep, fabs(gv - sep[(size_t)i * H + j]));
            }
        double tol = (dc_t == VG_DTYPE_F32 ? 1e-4 : dc_t == VG_DTYPE_BF16 ? 1.6e-2 : 4e-3) * scale;
        if (err > tol || err_sep > tol)
            print_message("gemm gate %s->%s m=%d h=%d k=%d round %d: error %.3g, against the separate "
                          "ops %.3g, bound %.3g\n", vg_dtype_name(dt), vg_dtype_name(dc_t), M, H, K,
                          round, err, err_sep, tol);
        assert_true(err <= tol && err_sep <= tol);
    }
    if (exec) VG_CHECK(vg_graph_exec_destroy(exec));
    void *bufs[6] = {da, db, dbias, dc, dp, dm};
    for (int i = 0; i < 6; i++) VG_CHECK(vg_mem_free(g.rt, bufs[i]));
    free(a), free(b), free(bias), free(out), free(sep), free(want), free(da_), free(db_), free(dbias_);
}

static void test_gemm_silu_gate(void **state)
{
    (void)state;
    if (!supports(VG_OP_GEMM_SILU_GATE)) skip();
    static const gate_case cases[] = {
        /* m   h     k    f32 bias */
        {1, 304, 4096, 0, 0},  /* few outputs, long k: split along k */
        {1, 1216, 896, 0, 0},  /* a gate|up projection */
        {3, 37, 512, 0, 1},    /* an odd half, a bias per half */
        {16, 160, 264, 1, 0},  /* F32 output */
        {64, 96, 1024, 0, 1},
        {70, 40, 128, 0, 0},   /* past the decode kernels' rows */
        {9, 8, 8, 0, 1},       /* the shortest k */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gemm_silu_gate_check(VG_DTYPE_BF16, &cases[i]);
        gemm_silu_gate_check(VG_DTYPE_F16, &cases[i]);
    }
    gemm_silu_gate_check(VG_DTYPE_F32, &cases[2]);
}

/* gemm with a norm of A (op table version 6: the rmsnorm before a projection inside it; with
 * `unit`, version 9's norm without a weight), at decode shapes and past them, with and without a
 * gate, F32 logits, a residual, a bias: captured once and replayed on new activations, against the
 * reference (rmsnorm then gemm) and against the rmsnorm and gemm ops run separately on the same
 * device (with a weight of ones for `unit`). Row i of A is scaled by 2^(i mod 6): the norm
 * undoes it, so a device that applies one row's 1/rms to another row's sums fails. */
typedef struct norm_case {
    int m, n, k, f32_out, gate, residual, bias;
} norm_case;

static void gemm_rmsnorm_a_check(vg_dtype dt, const norm_case *t, int unit)
{
    const int M = t->m, N = t->n, K = t->k, H = t->gate ? N / 2 : N;
    vg_dtype dc_t = t->f32_out ? VG_DTYPE_F32 : dt;
    size_t na = (size_t)M * K, nb = (size_t)N * K, nc = (size_t)M * N;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *w = malloc((size_t)K * 4), *res = malloc(nc * 4);
    float *out = malloc(nc * 4), *sep = malloc(nc * 4), *bias = malloc((size_t)N * 4);
    double *dbias_ = malloc((size_t)N * sizeof(double));
    double *want = malloc(nc * sizeof(double)), *da_ = malloc(na * sizeof(double));
    double *an = malloc(na * sizeof(double)), *db_ = malloc(nb * sizeof(double));
    double *dw_ = malloc((size_t)K * sizeof(double)), *dres_ = malloc(nc * sizeof(double));
    assert_true(a && b && w && res && out && sep && want && da_ && an && db_ && dw_ && dres_);
    fill_random(b, nb, 241);
    fill_random(w, (size_t)K, 242);
    if (unit)
        for (int i = 0; i < K; i++) w[i] = 1.0f;
    fill_random(a, na, 243);
    fill_random(res, nc, 244);
    fill_random(bias, (size_t)N, 245);
    for (int i = 0; i < N; i++) dbias_[i] = bias[i];
    void *da = upload_as(dt, a, na), *db = upload_as(dt, b, nb), *dw = upload_as(dt, w, (size_t)K);
    void *dbias = t->bias ? upload_as(dt, bias, (size_t)N) : NULL;
    void *dres = t->residual ? upload_as(dc_t, res, nc) : NULL;
    void *dc = dalloc(nc * esize(dc_t)), *dn = dalloc(na * esize(dt)), *dn2 = dalloc(na * esize(dt));
    void *ds = dalloc(nc * esize(dc_t));
    gemm_case c;
    memset(&c, 0, sizeof c);
    c.args = (vg_gemm_args){.struct_size = sizeof(vg_gemm_args), .dtype_ab = dt, .dtype_c = dc_t,
                            .m = M, .n = N, .k = K, .a = da, .lda = K, .b = db, .ldb = K, .c = dc,
                            .ldc = N, .bias = dbias, .residual = dres, .ldr = N, .act = VG_ACT_NONE,
                            .alpha = 1.0f, .gate = t->gate ? VG_GEMM_GATE_SILU : VG_GEMM_GATE_NONE,
                            .norm_w = unit ? NULL : dw, .norm_eps = 1e-6f, .norm_out = dn,
                            .norm_unit = unit};
    vg_graph_exec *exec = has_graphs() ? capture(enqueue_gemm, &c) : NULL;
    for (size_t i = 0; i < nb; i++) db_[i] = b[i];
    for (int i = 0; i < K; i++) dw_[i] = w[i];
    for (size_t i = 0; i < nc; i++) dres_[i] = res[i];
    for (int round = 0; round < 3; round++) {
        fill_random(a, na, 250 + round);
        for (int i = 0; i < M; i++)
            for (int j = 0; j < K; j++) a[(size_t)i * K + j] *= (float)(1 << (i % 6));
        void *nw = upload_as(dt, a, na);
        VG_CHECK(vg_mem_copy_d2d(g.s, da, nw, na * esize(dt)));
        if (exec) VG_CHECK(vg_graph_exec_launch(exec, g.s));
        else enqueue_gemm(&c);
        download_as(dc_t, out, dc, nc);
        /* the ops it replaces, on the same device */
        VG_CHECK(vg_op_rmsnorm(g.s, dt, da, dw, dn2, M, K, 1e-6f));
        vg_gemm_args plain = c.args;
        plain.a = dn2, plain.norm_w = NULL, plain.norm_out = NULL, plain.norm_unit = 0, plain.c = ds;
        VG_CHECK(vg_op_gemm(g.s, &plain));
        download_as(dc_t, sep, ds, nc);
        VG_CHECK(vg_mem_free(g.rt, nw));
        for (size_t i = 0; i < na; i++) da_[i] = a[i];
        ref_rmsnorm(da_, dw_, an, M, K, 1e-6);
        double scale = 0, err = 0, err_sep = 0;
        if (t->gate) {
            double most = ref_gemm_silu_gate(M, N, K, 1.0, an, K, db_, K, t->bias ? dbias_ : NULL, want, N);
            scale = most * most;
        } else {
            ref_gemm(M, N, K, 1.0, an, K, db_, K, t->bias ? dbias_ : NULL, t->residual ? dres_ : NULL, N,
                     VG_ACT_NONE, want, N);
        }
        for (int i = 0; i < M; i++)
            for (int j = 0; j < H; j++) {
                size_t e = (size_t)i * N + j;
                assert_false(isnan(out[e]));
                scale = fmax(scale, fabs(want[e]));
                err = fmax(err, fabs(out[e] - want[e]));
                err_sep = fmax(err_sep, fabs(out[e] - sep[e]));
            }
        double tol = (dc_t == VG_DTYPE_F32 && dt == VG_DTYPE_F32 ? 1e-4 : dt == VG_DTYPE_F16 ? 4e-3 : 1.6e-2) * scale;
        if (err > tol || err_sep > tol)
            print_message("gemm norm%s %s->%s m=%d n=%d k=%d gate %d round %d: error %.3g, against "
                          "the separate ops %.3g, bound %.3g\n", unit ? " (unit)" : "", vg_dtype_name(dt),
                          vg_dtype_name(dc_t), M, N, K, t->gate, round, err, err_sep, tol);
        assert_true(err <= tol && err_sep <= tol);
    }
    if (exec) VG_CHECK(vg_graph_exec_destroy(exec));
    void *bufs[9] = {da, db, dw, dres, dc, dn, dn2, ds, dbias};
    for (int i = 0; i < 9; i++)
        if (bufs[i]) VG_CHECK(vg_mem_free(g.rt, bufs[i]));
    free(a), free(b), free(w), free(res), free(out), free(sep), free(bias), free(dbias_);
    free(want), free(da_), free(an), free(db_), free(dw_), free(dres_);
}

static const norm_case k_norm_cases[] = {
    /* m    n     k   f32 gate res bias */
    {1, 1152, 896, 0, 0, 0, 1},  /* a qkv projection after the input norm (Qwen2's bias) */
    {1, 2432, 896, 0, 1, 0, 0},  /* gate|up after the post-attention norm, gated */
    {1, 600, 896, 1, 0, 0, 0},   /* logits in F32 after the final norm */
    {5, 74, 4096, 0, 1, 0, 1},   /* long k (split along it), an odd half, a bias per half */
    {16, 96, 264, 0, 0, 1, 0},   /* a residual */
    {64, 128, 512, 0, 0, 0, 0},
    {70, 48, 128, 0, 0, 0, 0},   /* past the decode kernels' rows */
    {16, 1216, 896, 0, 1, 0, 0}, /* gated at 16 and 64 rows, where cuBLASLt may take them and a */
    {64, 640, 1024, 0, 1, 0, 0}, /* unit norm is then the silu_mul's after it */
    {300, 512, 640, 0, 1, 0, 1}, /* more rows than an H100's multiprocessors, a bias: a vision MLP */
    {33, 56, 200, 1, 1, 0, 0},   /* gated into F32 (no deferred unit norm there) */
};

static void norm_cases_run(int unit)
{
    for (size_t i = 0; i < sizeof k_norm_cases / sizeof k_norm_cases[0]; i++) {
        if (k_norm_cases[i].gate && !supports(VG_OP_GEMM_SILU_GATE)) continue;
        gemm_rmsnorm_a_check(VG_DTYPE_BF16, &k_norm_cases[i], unit);
        gemm_rmsnorm_a_check(VG_DTYPE_F16, &k_norm_cases[i], unit);
    }
    gemm_rmsnorm_a_check(VG_DTYPE_F32, &k_norm_cases[4], unit);
    if (supports(VG_OP_GEMM_SILU_GATE)) gemm_rmsnorm_a_check(VG_DTYPE_F32, &k_norm_cases[1], unit);
}

static void test_gemm_rmsnorm_a(void **state)
{
    (void)state;
    if (!supports(VG_OP_GEMM_RMSNORM_A)) skip();
    norm_cases_run(0);
}

static void test_gemm_rmsnorm_a_unit(void **state)
{
    (void)state;
    if (!supports(VG_OP_GEMM_RMSNORM_A_UNIT)) skip();
    norm_cases_run(1);
}

/* A normed gemm of one shape called with A, then the norm's weight, one element past a 16-byte
 * boundary, after a call with both aligned: a device that keeps a plan per shape must not run a
 * kernel chosen for the aligned call (a cuda plan keyed by norm_out's alignment once ran vg's
 * 16-byte loads on them). Each against the rmsnorm and gemm ops run separately. */
static void test_gemm_rmsnorm_a_unaligned(void **state)
{
    (void)state;
    if (!supports(VG_OP_GEMM_RMSNORM_A)) skip();
    uint32_t dtypes = 0;
    vg_runtime_op_support(g.rt, VG_OP_GEMM_RMSNORM_A, &dtypes);
    const vg_dtype dt = dtypes & VG_DTYPE_BIT(VG_DTYPE_BF16) ? VG_DTYPE_BF16 : VG_DTYPE_F32;
    static const int rows[] = {1, 16};
    const int N = 896, K = 896;
    const size_t nb = (size_t)N * K;
    float *a = malloc(((size_t)16 * K + 1) * 4), *b = malloc(nb * 4), *w = malloc(((size_t)K + 1) * 4);
    float *out = malloc((size_t)16 * N * 4), *sep = malloc((size_t)16 * N * 4);
    assert_true(a && b && w && out && sep);
    fill_random(b, nb, 261);
    fill_random(w, (size_t)K + 1, 262);
    void *db = upload_as(dt, b, nb), *dw = upload_as(dt, w, (size_t)K + 1);
    for (int t = 0; t < (int)(sizeof rows / sizeof rows[0]); t++) {
        const int M = rows[t];
        const size_t na = (size_t)M * K, nc = (size_t)M * N;
        fill_random(a, na + 1, 263);
        void *da = upload_as(dt, a, na + 1), *dn = dalloc(na * esize(dt)), *dn2 = dalloc(na * esize(dt));
        void *dc = dalloc(nc * 4), *ds = dalloc(nc * 4);
        /* round 0 aligned, 1: A one element on, 2: the weight one element on */
        for (int round = 0; round < 3; round++) {
            const char *pa = (const char *)da + (round == 1 ? esize(dt) : 0);
            const char *pw = (const char *)dw + (round == 2 ? esize(dt) : 0);
            vg_gemm_args args = {.struct_size = sizeof args, .dtype_ab = dt, .dtype_c = VG_DTYPE_F32, .m = M,
                                 .n = N, .k = K, .a = pa, .lda = K, .b = db, .ldb = K, .c = dc, .ldc = N,
                                 .act = VG_ACT_NONE, .alpha = 1.0f, .norm_w = pw, .norm_eps = 1e-6f,
                                 .norm_out = dn, .b_static = 1};
            VG_CHECK(vg_op_gemm(g.s, &args));
            download_as(VG_DTYPE_F32, out, dc, nc);
            VG_CHECK(vg_op_rmsnorm(g.s, dt, pa, pw, dn2, M, K, 1e-6f));
            vg_gemm_args plain = args;
            plain.a = dn2, plain.norm_w = NULL, plain.norm_out = NULL, plain.c = ds;
            VG_CHECK(vg_op_gemm(g.s, &plain));
            download_as(VG_DTYPE_F32, sep, ds, nc);
            double scale = 0, err = 0;
            for (size_t e = 0; e < nc; e++) {
                assert_false(isnan(out[e]));
                scale = fmax(scale, fabs(sep[e]));
                err = fmax(err, fabs(out[e] - sep[e]));
            }
            const double tol = (dt == VG_DTYPE_F32 ? 1e-4 : 1.6e-2) * scale;
            if (err > tol)
                print_message("gemm norm %s m=%d, round %d (A or the weight unaligned): error %.3g against "
                              "the separate ops, bound %.3g\n", vg_dtype_name(dt), M, round, err, tol);
            assert_true(err <= tol);
        }
        void *bufs[5] = {da, dn, dn2, dc, ds};
        for (int i = 0; i < 5; i++) VG_CHECK(vg_mem_free(g.rt, bufs[i]));
    }
    VG_CHECK(vg_mem_free(g.rt, db));
    VG_CHECK(vg_mem_free(g.rt, dw));
    free(a), free(b), free(w), free(out), free(sep);
}

/* max|got - want| / max|want|, failing on NaN */

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
    double *xd = to_double(x, R * Ccols), *wd = to_double(w, Ccols);
    ref_rmsnorm(xd, wd, want, R, Ccols, 1e-6);
    free(xd), free(wd);
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
    int32_t pos[R * 2];
    assert_true(x && got);
    fill_random(x, n, 41);
    for (int r = 0; r < R; r++) pos[2 * r] = (r * 7) % 61, pos[2 * r + 1] = (r * 13) % 57;
    void *dx = upload_as(t, x, n);
    int32_t *dpos = dalloc(sizeof pos);
    upload(dpos, pos, sizeof pos);
    /* q and k are the first 2·heads head slices of a qkv row; v stays as it is */
    VG_CHECK(vg_op_rotary_2d(g.s, t, dx, ld, R, 2 * heads, hd, dpos, 10000.0f));
    download_as(t, got, dx, n);
    double *want = to_double(x, n);
    ref_rotary_2d(want, ld, R, 2 * heads, hd, pos, 10000.0);
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
    }
    double *ref_d = to_double(ref_in, n);
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
        ref_attention(ref_d, 3 * hidden, want, hidden, rows, heads, hd, segs[k], 8,
                      1.0 / sqrt((double)hd), rotary ? pos : NULL, 10000.0);
        check_close("attention", got, want, (size_t)rows * hidden, tol_for(t));
    }
    if (exec) { /* replay with the first segmentation again: read at replay, not at capture */
        upload(c.cu, segs[0], sizeof segs[0]);
        VG_CHECK(vg_graph_exec_launch(exec, g.s));
        download_as(t, got, c.out, (size_t)rows * hidden);
        ref_attention(ref_d, 3 * hidden, want, hidden, rows, heads, hd, segs[0], 8,
                      1.0 / sqrt((double)hd), rotary ? pos : NULL, 10000.0);
        check_close("attention replay", got, want, (size_t)rows * hidden, tol_for(t));
        VG_CHECK(vg_graph_exec_destroy(exec));
    }
    if (sent) { /* attention_rotary leaves qkv as it was */
        download_as(t, qkv, c.qkv, n);
        assert_memory_equal(qkv, sent, n * 4);
        free(sent);
        VG_CHECK(vg_mem_free(g.rt, c.pos));
    }
    free(qkv), free(ref_in), free(ref_d), free(got), free(want), free(pos);
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
    double *ind = to_double(in, R * LDI);
    memset(want, 0, sizeof want); /* the stride gap untouched */
    ref_silu_mul(ind, LDI, want, LDO, R, Cc);
    free(ind);
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

/* ---- op table version 4: the decoder-LM ops ---------------------------------------------------- */

/* rotary on the first `heads` slices of rows with a stride gap (ld > heads·head_dim): the gap and
 * the slices past `heads` stay as they were. Positions reach past a thousand. */
static void rotary1_case(vg_dtype t, int heads, int hd, int extra_heads, int rows)
{
    int64_t ld = (int64_t)(heads + extra_heads) * hd + 3;
    size_t n = (size_t)rows * (size_t)ld;
    float *x = malloc(n * 4), *got = malloc(n * 4);
    int32_t *pos = malloc((size_t)rows * sizeof(int32_t));
    assert_true(x && got && pos);
    fill_random(x, n, 71 + (unsigned)hd);
    for (int r = 0; r < rows; r++) pos[r] = (r * 131) % 1500;
    void *dx = upload_as(t, x, n);
    int32_t *dpos = dalloc((size_t)rows * sizeof(int32_t));
    upload(dpos, pos, (size_t)rows * sizeof(int32_t));
    VG_CHECK(vg_op_rotary(g.s, t, dx, ld, rows, heads, hd, dpos, 10000.0f));
    download_as(t, got, dx, n);
    double *want = to_double(x, n);
    ref_rotary(want, ld, rows, heads, hd, pos, 10000.0);
    /* fp32 angles of positions near 1500 carry ~1e-4 of absolute error */
    check_close("rotary", got, want, n, t == VG_DTYPE_F32 ? 3e-4 : 2e-2);
    free(x), free(got), free(pos), free(want);
    VG_CHECK(vg_mem_free(g.rt, dx));
    VG_CHECK(vg_mem_free(g.rt, dpos));
}

static void test_rotary(void **state)
{
    (void)state;
    if (!supports(VG_OP_ROTARY)) skip();
    rotary1_case(VG_DTYPE_F32, 4, 16, 2, 37);
    rotary1_case(VG_DTYPE_F32, 3, 48, 0, 20);
    rotary1_case(VG_DTYPE_F32, 1, 6, 1, 9); /* head_dim even, not a multiple of 4 */
    rotary1_case(VG_DTYPE_BF16, 2, 128, 1, 17);
    rotary1_case(VG_DTYPE_F16, 5, 64, 0, 11);
}

static void rmsnorm_heads_case(vg_dtype t, int heads, int hd, int extra, int rows)
{
    int64_t ld = (int64_t)heads * hd + extra;
    size_t n = (size_t)rows * (size_t)ld;
    float *x = malloc(n * 4), *w = malloc((size_t)hd * 4), *got = malloc(n * 4);
    assert_true(x && w && got);
    fill_random(x, n, 81);
    fill_random(w, (size_t)hd, 82);
    void *dx = upload_as(t, x, n), *dw = upload_as(t, w, (size_t)hd);
    VG_CHECK(vg_op_rmsnorm_heads(g.s, t, dx, ld, rows, heads, hd, dw, 1e-6f));
    download_as(t, got, dx, n);
    double *want = to_double(x, n), *wd = to_double(w, (size_t)hd);
    ref_rmsnorm_heads(want, ld, rows, heads, hd, wd, 1e-6);
    check_close("rmsnorm_heads", got, want, n, tol_for(t));
    free(x), free(w), free(got), free(want), free(wd);
    VG_CHECK(vg_mem_free(g.rt, dx));
    VG_CHECK(vg_mem_free(g.rt, dw));
}

static void test_rmsnorm_heads(void **state)
{
    (void)state;
    if (!supports(VG_OP_RMSNORM_HEADS)) skip();
    rmsnorm_heads_case(VG_DTYPE_F32, 4, 16, 0, 13);
    rmsnorm_heads_case(VG_DTYPE_F32, 2, 48, 5, 7);
    rmsnorm_heads_case(VG_DTYPE_BF16, 8, 128, 16, 5);
    rmsnorm_heads_case(VG_DTYPE_F16, 1, 7, 1, 30);
}

/* kv_store: k and v are slices of one qkv-like row (ld_k = ld_v > width), slots cross block
 * boundaries in any order, negative slots write nothing; captured once, replayed with other slots
 * (read at replay). The caches must hold exactly the bytes sent. */
static void kv_store_case(vg_dtype t, int kv_heads, int hd)
{
    enum { ROWSK = 13, SLOTS = 64 };
    int64_t width = (int64_t)kv_heads * hd, ld = 3 * width + 2;
    size_t nin = (size_t)ROWSK * (size_t)ld, ncache = (size_t)SLOTS * (size_t)width;
    float *in = malloc(nin * 4), *kc = malloc(ncache * 4), *vc = malloc(ncache * 4);
    float *got = malloc(ncache * 4);
    assert_true(in && kc && vc && got);
    fill_random(in, nin, 91);
    fill_random(kc, ncache, 92);
    fill_random(vc, ncache, 93);
    void *din = upload_as(t, in, nin), *dk = upload_as(t, kc, ncache), *dv = upload_as(t, vc, ncache);
    const void *kp = (const char *)din + (size_t)width * esize(t);
    const void *vp = (const char *)din + 2 * (size_t)width * esize(t);
    int32_t slots[2][ROWSK] = {{15, 16, 17, -1, 0, 63, 31, 32, -1, 47, 48, 5, 6},
                               {-1, -1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, -7}};
    int32_t *ds = dalloc(sizeof slots[0]);
    double *kw = to_double(kc, ncache), *vw = to_double(vc, ncache), *ind = to_double(in, nin);
    vg_graph_exec *exec = NULL;
    for (int k = 0; k < 2; k++) {
        upload(ds, slots[k], sizeof slots[k]);
        if (k == 1 && has_graphs()) {
            vg_graph *graph = NULL;
            upload(ds, slots[0], sizeof slots[0]); /* captured with the first slots... */
            cap_begin();
            VG_CHECK(vg_op_kv_store(g.s, t, kp, ld, vp, ld, dk, dv, ds, ROWSK, kv_heads, hd));
            VG_CHECK(cap_end(&graph));
            VG_CHECK(vg_graph_instantiate(graph, &exec));
            VG_CHECK(vg_graph_destroy(graph));
            upload(ds, slots[1], sizeof slots[1]); /* ...replayed with the second */
            VG_CHECK(vg_graph_exec_launch(exec, g.s));
        } else {
            VG_CHECK(vg_op_kv_store(g.s, t, kp, ld, vp, ld, dk, dv, ds, ROWSK, kv_heads, hd));
        }
        ref_kv_store(ind + width, ld, ind + 2 * width, ld, kw, vw, slots[k], ROWSK, width);
        download_as(t, got, dk, ncache);
        for (size_t i = 0; i < ncache; i++) assert_true(got[i] == (float)kw[i]);
        download_as(t, got, dv, ncache);
        for (size_t i = 0; i < ncache; i++) assert_true(got[i] == (float)vw[i]);
    }
    if (exec) VG_CHECK(vg_graph_exec_destroy(exec));
    free(in), free(kc), free(vc), free(got), free(kw), free(vw), free(ind);
    void *bufs[4] = {din, dk, dv, ds};
    for (int i = 0; i < 4; i++) VG_CHECK(vg_mem_free(g.rt, bufs[i]));
}

static void test_kv_store(void **state)
{
    (void)state;
    if (!supports(VG_OP_KV_STORE)) skip();
    kv_store_case(VG_DTYPE_F32, 1, 16);
    kv_store_case(VG_DTYPE_F32, 2, 48);
    kv_store_case(VG_DTYPE_BF16, 4, 64);
    kv_store_case(VG_DTYPE_F16, 1, 128);
}

/* rotary_kv_store against the ops it replaces, run separately on the same device, and against the
 * reference: qkv rows with a stride gap, padding rows (negative slots), positions past a thousand,
 * with and without q/k norms; captured once and replayed with other positions and slots where the
 * device has graphs. The caches' untouched slots must keep their bytes. */
static void rotary_kv_store_case(vg_dtype t, int heads, int kv_heads, int hd, int norms, int rows)
{
    enum { SLOTS = 48 };
    int64_t width = (int64_t)kv_heads * hd, qw = (int64_t)heads * hd;
    int64_t ld = qw + 2 * width + 5;
    size_t n = (size_t)rows * (size_t)ld, nc = (size_t)SLOTS * (size_t)width, es = esize(t);
    float *x = malloc(n * 4), *w = malloc((size_t)(2 * hd) * 4), *cache = malloc(nc * 4);
    float *got = malloc(n * 4), *sep = malloc(n * 4), *gotc = malloc(nc * 4), *sepc = malloc(nc * 4);
    int32_t *pos = malloc((size_t)rows * 4), *slots = malloc((size_t)rows * 4);
    assert_true(x && w && cache && got && sep && gotc && sepc && pos && slots);
    fill_random(x, n, 101 + (unsigned)hd);
    fill_random(w, (size_t)(2 * hd), 102);
    fill_random(cache, nc, 103);
    void *dw = upload_as(t, w, (size_t)(2 * hd));
    void *dkc = upload_as(t, cache, nc), *dvc = upload_as(t, cache, nc);
    int32_t *dpos = dalloc((size_t)rows * 4), *dslots = dalloc((size_t)rows * 4);
    const void *qn = norms ? dw : NULL, *kn = norms ? (char *)dw + (size_t)hd * es : NULL;
    vg_graph_exec *exec = NULL;
    for (int pass = 0; pass < 2; pass++) {
        for (int r = 0; r < rows; r++) {
            pos[r] = (r * 137 + pass * 611) % 1700;
            slots[r] = r % 5 == 3 ? -1 : (r * 7 + pass * 11) % SLOTS; /* distinct: rows < SLOTS */
        }
        /* the reference starts from the caches as they are (the first pass's stores) */
        download_as(t, gotc, dkc, nc);
        double *kw = to_double(gotc, nc);
        download_as(t, gotc, dvc, nc);
        double *vw = to_double(gotc, nc);
        void *dx = upload_as(t, x, n), *fx = upload_as(t, x, n);
        upload(dpos, pos, (size_t)rows * 4);
        upload(dslots, slots, (size_t)rows * 4);
        /* the separate ops on dx and a copy of the caches... */
        void *sk = dalloc(nc * es), *sv = dalloc(nc * es);
        VG_CHECK(vg_mem_copy_d2d(g.s, sk, dkc, nc * es));
        VG_CHECK(vg_mem_copy_d2d(g.s, sv, dvc, nc * es));
        char *k = (char *)dx + (size_t)qw * es, *v = k + (size_t)width * es;
        if (norms) {
            VG_CHECK(vg_op_rmsnorm_heads(g.s, t, dx, ld, rows, heads, hd, qn, 1e-6f));
            VG_CHECK(vg_op_rmsnorm_heads(g.s, t, k, ld, rows, kv_heads, hd, kn, 1e-6f));
        }
        VG_CHECK(vg_op_rotary(g.s, t, dx, ld, rows, heads + kv_heads, hd, dpos, 1e6f));
        VG_CHECK(vg_op_kv_store(g.s, t, k, ld, v, ld, sk, sv, dslots, rows, kv_heads, hd));
        /* ...and the fused op on fx and the caches (captured on the second pass, where it can be) */
        if (pass == 1 && has_graphs()) {
            vg_graph *graph = NULL;
            cap_begin();
            VG_CHECK(vg_op_rotary_kv_store(g.s, t, fx, ld, rows, heads, kv_heads, hd, qn, kn, 1e-6f,
                                           dpos, 1e6f, dkc, dvc, dslots));
            VG_CHECK(cap_end(&graph));
            VG_CHECK(vg_graph_instantiate(graph, &exec));
            VG_CHECK(vg_graph_destroy(graph));
            VG_CHECK(vg_graph_exec_launch(exec, g.s));
        } else {
            VG_CHECK(vg_op_rotary_kv_store(g.s, t, fx, ld, rows, heads, kv_heads, hd, qn, kn, 1e-6f,
                                           dpos, 1e6f, dkc, dvc, dslots));
        }
        download_as(t, got, fx, n);
        download_as(t, sep, dx, n);
        double *want = to_double(x, n), *wd = to_double(w, (size_t)(2 * hd));
        ref_rotary_kv_store(t, want, ld, rows, heads, kv_heads, hd, norms ? wd : NULL,
                            norms ? wd + hd : NULL, 1e-6, pos, 1e6, kw, vw, slots);
        double tol = t == VG_DTYPE_F32 ? 3e-4 : 2e-2; /* fp32 angles of positions near 1700 */
        float agree = t == VG_DTYPE_F32 ? 1e-5f : 2e-2f; /* fused and separate: one rounding apart */
        check_close("rotary_kv_store: qkv", got, want, n, tol);
        check_close("rotary_kv_store: the separate ops' qkv", sep, want, n, tol);
        for (size_t i = 0; i < n; i++) assert_true(fabsf(got[i] - sep[i]) <= agree * (1.0f + fabsf(sep[i])));
        void *caches[2][2] = {{dkc, sk}, {dvc, sv}};
        double *cw[2] = {kw, vw};
        for (int c = 0; c < 2; c++) {
            download_as(t, gotc, caches[c][0], nc);
            download_as(t, sepc, caches[c][1], nc);
            check_close("rotary_kv_store: cache", gotc, cw[c], nc, tol);
            for (size_t i = 0; i < nc; i++) assert_true(fabsf(gotc[i] - sepc[i]) <= agree * (1.0f + fabsf(sepc[i])));
            for (int sl = 0; sl < SLOTS; sl++) { /* slots no row names keep their bytes */
                int named = 0;
                for (int r = 0; r < rows; r++) named |= slots[r] == sl;
                for (int64_t e = 0; !named && e < width; e++)
                    assert_true(gotc[sl * width + e] == (float)cw[c][sl * width + e]);
            }
        }
        free(want), free(wd), free(kw), free(vw);
        void *tmp[4] = {dx, fx, sk, sv};
        for (int i = 0; i < 4; i++) VG_CHECK(vg_mem_free(g.rt, tmp[i]));
    }
    if (exec) VG_CHECK(vg_graph_exec_destroy(exec));
    free(x), free(w), free(cache), free(got), free(sep), free(gotc), free(sepc), free(pos), free(slots);
    void *bufs[5] = {dw, dkc, dvc, dpos, dslots};
    for (int i = 0; i < 5; i++) VG_CHECK(vg_mem_free(g.rt, bufs[i]));
}

static void test_rotary_kv_store(void **state)
{
    (void)state;
    if (!supports(VG_OP_ROTARY_KV_STORE)) skip();
    rotary_kv_store_case(VG_DTYPE_F32, 14, 2, 64, 0, 9);  /* Qwen2.5-0.5B's heads: groups of 7 */
    rotary_kv_store_case(VG_DTYPE_F32, 6, 2, 48, 1, 13);  /* groups of 3, head_dim 48 */
    rotary_kv_store_case(VG_DTYPE_BF16, 16, 8, 128, 1, 5); /* Qwen3-0.6B's */
    rotary_kv_store_case(VG_DTYPE_BF16, 7, 1, 64, 0, 1);
    rotary_kv_store_case(VG_DTYPE_F16, 3, 3, 6, 1, 21);    /* head_dim not a multiple of 4 */
}

/* A batch as a decoder runs it: sequences with long histories decoding one token, a prefill
 * chunk, a sequence whose context fits in part of one block, padding rows at the end. Blocks are
 * scattered through the cache (a permutation), contexts cross block boundaries, and the cache
 * slots no sequence owns hold values that would show if read. */
enum { PAGED_MAX_SEQS = 64 }; /* a decode batch of 64 sequences */
typedef struct paged_case {
    int num_seqs;
    int ctx[PAGED_MAX_SEQS], newq[PAGED_MAX_SEQS];
    int pad_rows, heads, kv_heads, hd, block_size;
    int tight; /* out rows packed (ld_out = heads·head_dim), as a decoder has them: the shape the
                * cuda backend's kernel library takes (VG_CUDA_DECODE=flashinfer forces it) */
} paged_case;

typedef struct paged_call {
    vg_dtype t;
    const void *q, *kc, *vc;
    void *out;
    int64_t ld_q, ld_out, rows;
    const int32_t *bt, *cl, *qs;
    int max_blocks;
    const paged_case *pc;
    float scale;
} paged_call;

static void enqueue_paged(void *arg)
{
    const paged_call *c = arg;
    VG_CHECK(vg_op_paged_attention(g.s, c->t, c->q, c->ld_q, c->out, c->ld_out, c->rows, c->kc, c->vc,
                                   c->bt, c->max_blocks, c->cl, c->qs, c->pc->num_seqs, c->pc->heads,
                                   c->pc->kv_heads, c->pc->hd, c->pc->block_size, c->scale));
}

/* A paged_case's batch: query starts, context lengths, table width (a spare entry: tables are
 * wider than needed), rows with the padding, blocks (three no sequence owns) and the block tables,
 * entry i block (i·stride + 3) mod nblocks for a stride coprime to nblocks: a permutation, so the
 * blocks are scattered and no two entries share one. */
typedef struct paged_batch {
    int32_t qs[PAGED_MAX_SEQS + 1], cl[PAGED_MAX_SEQS];
    int maxb, rows, nblocks, nslots;
    int32_t *bt; /* [num_seqs · maxb], malloc'ed */
} paged_batch;

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

static void paged_batch_make(const paged_case *pc, paged_batch *b)
{
    memset(b, 0, sizeof *b);
    b->maxb = 1;
    for (int s = 0; s < pc->num_seqs; s++) {
        b->qs[s + 1] = b->qs[s] + pc->newq[s];
        b->cl[s] = pc->ctx[s];
        int nb = (pc->ctx[s] + pc->block_size - 1) / pc->block_size;
        if (nb + 1 > b->maxb) b->maxb = nb + 1;
    }
    b->rows = b->qs[pc->num_seqs] + pc->pad_rows;
    b->nblocks = pc->num_seqs * b->maxb + 3, b->nslots = b->nblocks * pc->block_size;
    b->bt = malloc((size_t)pc->num_seqs * (size_t)b->maxb * sizeof(int32_t));
    assert_non_null(b->bt);
    int stride = 7;
    while (gcd(stride, b->nblocks) != 1) stride += 2;
    for (int i = 0; i < pc->num_seqs * b->maxb; i++) b->bt[i] = (int32_t)(((int64_t)i * stride + 3) % b->nblocks);
}

static void paged_case_run(vg_dtype t, const paged_case *pc)
{
    int hidden = pc->heads * pc->hd, width = pc->kv_heads * pc->hd, bs = pc->block_size;
    paged_batch pb;
    paged_batch_make(pc, &pb);
    int32_t *qs = pb.qs, *cl = pb.cl, *bt = pb.bt;
    const int maxb = pb.maxb, rows = pb.rows, nslots = pb.nslots;
    int64_t ld_q = hidden + 8, ld_out = pc->tight ? hidden : hidden + 4;
    size_t nq = (size_t)rows * (size_t)ld_q, nout = (size_t)rows * (size_t)ld_out;
    size_t ncache = (size_t)nslots * (size_t)width;
    float *q = malloc(nq * 4), *kc = malloc(ncache * 4), *vc = malloc(ncache * 4), *got = malloc(nout * 4);
    float *out0 = malloc(nout * 4);
    assert_true(q && kc && vc && got && out0);
    fill_random(q, nq, 101);
    fill_random(kc, ncache, 102);
    fill_random(vc, ncache, 103);
    for (size_t i = 0; i < nout; i++) out0[i] = 7.0f; /* padding rows must become zeros, gaps stay */
    void *dq = upload_as(t, q, nq), *dk = upload_as(t, kc, ncache), *dv = upload_as(t, vc, ncache);
    void *dout = upload_as(t, out0, nout);
    int32_t *dbt = dalloc((size_t)pc->num_seqs * (size_t)maxb * sizeof(int32_t));
    int32_t *dcl = dalloc(sizeof pb.cl), *dqs = dalloc(sizeof pb.qs);
    upload(dbt, bt, (size_t)pc->num_seqs * (size_t)maxb * sizeof(int32_t));
    upload(dcl, cl, sizeof pb.cl);
    upload(dqs, qs, sizeof pb.qs);
    paged_call c = {t, dq, dk, dv, dout, ld_q, ld_out, rows, dbt, dcl, dqs, maxb, pc,
                    (float)(1.0 / sqrt((double)pc->hd))};
    double *qd = to_double(q, nq), *kd = to_double(kc, ncache), *vd = to_double(vc, ncache);
    double *want = to_double(out0, nout);
    ref_paged_attention(qd, ld_q, want, ld_out, rows, kd, vd, bt, maxb, cl, qs, pc->num_seqs,
                        pc->heads, pc->kv_heads, pc->hd, bs, c.scale);
    vg_graph_exec *exec = has_graphs() ? capture(enqueue_paged, &c) : NULL;
    if (exec) {
        VG_CHECK(vg_graph_exec_launch(exec, g.s));
    } else {
        enqueue_paged(&c);
    }
    download_as(t, got, dout, nout);
    char what[96];
    snprintf(what, sizeof what, "paged_attention %s heads %d/%d head_dim %d block %d",
             vg_dtype_name(t), pc->heads, pc->kv_heads, pc->hd, bs);
    check_close(what, got, want, nout, t == VG_DTYPE_F32 ? 1e-5 : 2e-2);
    for (int r = qs[pc->num_seqs]; r < rows; r++)
        for (int e = 0; e < hidden; e++) assert_true(got[(size_t)r * ld_out + e] == 0.0f);
    if (exec) { /* one more token for every sequence: new lengths are read at replay */
        for (int s = 0; s < pc->num_seqs; s++) cl[s] += 1;
        upload(dcl, cl, sizeof pb.cl);
        VG_CHECK(vg_graph_exec_launch(exec, g.s));
        download_as(t, got, dout, nout);
        ref_paged_attention(qd, ld_q, want, ld_out, rows, kd, vd, bt, maxb, cl, qs, pc->num_seqs,
                            pc->heads, pc->kv_heads, pc->hd, bs, c.scale);
        check_close(what, got, want, nout, t == VG_DTYPE_F32 ? 1e-5 : 2e-2);
        VG_CHECK(vg_graph_exec_destroy(exec));
    }
    free(bt), free(q), free(kc), free(vc), free(got), free(out0), free(qd), free(kd), free(vd), free(want);
    void *bufs[7] = {dq, dk, dv, dout, dbt, dcl, dqs};
    for (int i = 0; i < 7; i++) VG_CHECK(vg_mem_free(g.rt, bufs[i]));
}

static const paged_case paged_cases[] = {
    /* seqs  contexts           new tokens    pad heads kv hd  block */
    {3, {37, 1, 70, 0}, {1, 1, 5, 0}, 2, 4, 1, 16, 16, 0},   /* one KV head (multi-query) */
    {2, {16, 33, 0, 0}, {16, 2, 0, 0}, 0, 4, 2, 48, 16, 0},  /* a whole block of prefill; GQA 2 */
    {4, {5, 200, 9, 64}, {5, 1, 3, 1}, 3, 2, 2, 64, 5, 0},   /* block size 5: boundaries everywhere */
    {1, {300, 0, 0, 0}, {1, 0, 0, 0}, 1, 8, 2, 128, 32, 0},  /* a long decode */
    {2, {3, 40, 0, 0}, {3, 1, 0, 0}, 0, 2, 1, 256, 16, 0},   /* the largest head_dim */
    /* packed outputs, as a decoder has them */
    {3, {37, 1, 570, 0}, {1, 1, 1, 0}, 2, 14, 2, 64, 16, 1},  /* Qwen2.5-0.5B's heads: group 7 */
    {4, {5, 200, 9, 64}, {5, 1, 3, 1}, 3, 16, 8, 128, 5, 1},  /* Qwen3-0.6B's: group 2, prefill too */
    {2, {160, 1000, 0, 0}, {150, 1, 0, 0}, 1, 8, 2, 128, 16, 1}, /* many rows: no split-KV */
    {1, {3000, 0, 0, 0}, {1, 0, 0, 0}, 0, 28, 4, 128, 16, 1}, /* a long decode, group 7 */
    {2, {16, 33, 0, 0}, {16, 2, 0, 0}, 0, 4, 2, 48, 16, 1},   /* head_dim 48: vg's kernel only */
};

static void test_paged_attention(void **state)
{
    (void)state;
    if (!supports(VG_OP_PAGED_ATTENTION)) skip();
    for (size_t i = 0; i < sizeof paged_cases / sizeof paged_cases[0]; i++) {
        paged_case_run(VG_DTYPE_F32, &paged_cases[i]);
        paged_case_run(VG_DTYPE_BF16, &paged_cases[i]);
    }
    paged_case_run(VG_DTYPE_F16, &paged_cases[2]);
}

/* rotary_paged_attention on a paged_case's batch: qkv rows unrotated (with a stride gap), each new
 * token's slot where the table puts its position, padding rows with slot -1; against the
 * reference (rotary_kv_store, then paged_attention on the rotated rows) and against the two ops
 * run separately on the same device. Captured where the device has graphs. A device without the
 * fused op runs it as the two ops (the core's fallback): the same checks hold. */
typedef struct rpa_call {
    vg_rotary_paged_args a;
    /* with TABLES_WRITTEN: a.block_tables written just before the op as the argmax of each row of
     * bt_onehot [bt_rows, bt_cols] (F32) */
    const float *bt_onehot;
    int64_t bt_rows, bt_cols;
    /* with QKV_WRITTEN: a.qkv written just before the op by this GEMM (m = 0: none) */
    vg_gemm_args qkv_gemm;
} rpa_call;

static void enqueue_rpa(void *arg)
{
    rpa_call *c = arg;
    if (c->bt_onehot)
        VG_CHECK(vg_op_argmax(g.s, VG_DTYPE_F32, c->bt_onehot, c->bt_cols, c->bt_rows, c->bt_cols,
                              (int32_t *)c->a.block_tables));
    if (c->qkv_gemm.m) VG_CHECK(vg_op_gemm(g.s, &c->qkv_gemm));
    VG_CHECK(vg_op_rotary_paged_attention(g.s, &c->a));
}

/* How a rotary_paged_case_run call's tables reach the device: uploaded before the op, with the
 * tables_static hint (op table version 12) or without; or written by the op just before it,
 * without the hint, over a table that names other blocks: a device must not read them early then.
 * That op is an argmax over rows of 65536 columns, each entry of the table the column of its row's
 * one 1: a kernel that may release the next one as it starts (cuda's do) and writes only when it
 * has read its row, 256 KiB, so that an early read would find the wrong table. (With rows of 8192
 * columns, a decode kernel of cuda's that read the tables early without the hint passed: each
 * entry was written before that kernel's reads.) With QKV_WRITTEN the tables are uploaded and the
 * hint given, and what the op just before writes is qkv, over rows that hold other values, as a
 * model's projection does: a device may read the tables early then, but not qkv. That op is a GEMM
 * whose B is the identity beside zeros, k long enough that B takes ~32 MiB, run once eagerly before
 * (the tuner's run). cuda's own GEMMs release the next kernel as they start and write C as they
 * end, cuBLASLt's release it as they end: an early read shows where the GEMM is cuda's own, which
 * VG_CUDA_GEMM=skinny or panel forces (the GPU suite runs this suite so) and the tuner chose for the
 * 16-row cases on an H100 (the panel kernel's tie), not for the 1-row ones. A scratch build whose
 * decode kernel copied the queries before its grid wait failed it there all three ways. */
typedef enum rpa_tables { TABLES_UPLOADED, TABLES_STATIC, TABLES_WRITTEN, QKV_WRITTEN } rpa_tables;

/* The rmsnorm a caller folded into the qkv projection (norm_x, op table version 10): norm_x's
 * width, row stride and eps, and whether the projection has a bias. */
typedef struct norm_fold {
    int cols, ld;
    float eps;
    int bias;
} norm_fold;

/* A power of two per row, 1 to 32: the rows of norm_x, and the projection of each, differ in scale
 * as a model's hidden states do, so a row scaled with another row's 1/rms shows (and the scaled
 * rows are of one magnitude, which the tolerances relative to the largest value need). */
static float row_scale(int r) { return (float)(1 << (r % 6)); }

/* With fold, the op takes qkv rows of unnormalised hidden states (each row at its row_scale) with
 * norm_x: the reference and the two ops separately take them folded on the host (ref_norm_x_fold). */
static void rotary_paged_case_run_as(vg_dtype t, const paged_case *pc, int norms, const norm_fold *fold,
                                     rpa_tables tables)
{
    const int hd = pc->hd, bs = pc->block_size, width = pc->kv_heads * hd, hidden = pc->heads * hd;
    paged_batch pb;
    paged_batch_make(pc, &pb);
    int32_t *qs = pb.qs, *cl = pb.cl, *bt = pb.bt;
    const int maxb = pb.maxb, rows = pb.rows, nslots = pb.nslots;
    const int64_t ld = hidden + 2 * width + 8, ld_out = pc->tight ? hidden : hidden + 4;
    size_t n = (size_t)rows * (size_t)ld, nout = (size_t)rows * (size_t)ld_out, nc = (size_t)nslots * (size_t)width;
    int32_t *pos = malloc((size_t)rows * 4), *slots = malloc((size_t)rows * 4);
    float *x = malloc(n * 4), *w = malloc((size_t)(2 * hd) * 4), *kc = malloc(nc * 4), *vc = malloc(nc * 4);
    float *out0 = malloc(nout * 4), *got = malloc(nout * 4), *sep = malloc(nout * 4), *gotc = malloc(nc * 4);
    assert_true(pos && slots && x && w && kc && vc && out0 && got && sep && gotc);
    for (int r = 0; r < rows; r++) pos[r] = 0, slots[r] = -1; /* padding */
    for (int sq = 0; sq < pc->num_seqs; sq++)
        for (int j = 0; j < pc->newq[sq]; j++) { /* the new tokens at the end of their contexts */
            const int p = cl[sq] - pc->newq[sq] + j, r = qs[sq] + j;
            pos[r] = p;
            slots[r] = bt[sq * maxb + p / bs] * bs + p % bs;
        }
    fill_random(x, n, 201 + (unsigned)hd);
    fill_random(w, (size_t)(2 * hd), 202);
    fill_random(kc, nc, 203);
    fill_random(vc, nc, 204);
    for (size_t i = 0; i < nout; i++) out0[i] = 7.0f;
    const size_t es = esize(t), nnx = fold ? (size_t)rows * (size_t)fold->ld : 0, nb = (size_t)(hidden + 2 * width);
    float *nx = NULL, *bias = NULL;
    void *dnx = NULL, *dbias = NULL;
    if (fold) {
        nx = malloc(nnx * 4), bias = malloc(nb * 4);
        assert_true(nx && bias);
        fill_random(nx, nnx, 205);
        fill_random(bias, nb, 206);
        for (int r = 0; r < rows; r++) {
            for (int64_t e = 0; e < ld; e++) x[(size_t)r * (size_t)ld + (size_t)e] *= row_scale(r);
            for (int e = 0; e < fold->ld; e++) nx[(size_t)r * (size_t)fold->ld + (size_t)e] *= row_scale(r);
        }
        dnx = upload_as(t, nx, nnx);
        if (fold->bias) dbias = upload_as(t, bias, nb);
    }
    void *dw = upload_as(t, w, (size_t)(2 * hd));
    void *dx = upload_as(t, x, n), *dk = upload_as(t, kc, nc), *dv = upload_as(t, vc, nc), *dout = upload_as(t, out0, nout);
    /* the rows the reference and the two ops take: qkv, or with norm_x qkv folded */
    double *xd = to_double(x, n);
    float *xs = x;
    if (fold) {
        double *nxd = to_double(nx, nnx), *bd = to_double(bias, nb);
        ref_norm_x_fold(t, xd, ld, rows, (int64_t)nb, nxd, fold->ld, fold->cols, fold->eps, fold->bias ? bd : NULL);
        xs = malloc(n * 4);
        assert_non_null(xs);
        for (size_t i = 0; i < n; i++) xs[i] = (float)xd[i];
        free(nxd), free(bd);
    }
    void *sx = upload_as(t, xs, n), *sk = upload_as(t, kc, nc), *sv = upload_as(t, vc, nc), *sout = upload_as(t, out0, nout);
    const size_t bt_bytes = (size_t)pc->num_seqs * (size_t)maxb * 4;
    int32_t *dbt = dalloc(bt_bytes), *dcl = dalloc(sizeof pb.cl), *dqs = dalloc(sizeof pb.qs);
    int32_t *dpos = dalloc((size_t)rows * 4), *dslots = dalloc((size_t)rows * 4);
    const int64_t bt_rows = (int64_t)pc->num_seqs * maxb, bt_cols = 65536;
    float *dbt_onehot = NULL;
    if (tables == TABLES_WRITTEN) {
        assert_true(pb.nblocks <= bt_cols);
        float *onehot = calloc((size_t)bt_rows * (size_t)bt_cols, 4);
        int32_t *wrong = malloc(bt_bytes);
        assert_true(onehot && wrong);
        for (int64_t i = 0; i < bt_rows; i++) {
            onehot[(size_t)i * (size_t)bt_cols + (size_t)bt[i]] = 1.0f;
            wrong[i] = (bt[i] + 1) % pb.nblocks;
        }
        dbt_onehot = dalloc((size_t)bt_rows * (size_t)bt_cols * 4);
        upload(dbt_onehot, onehot, (size_t)bt_rows * (size_t)bt_cols * 4);
        upload(dbt, wrong, bt_bytes);
        free(onehot), free(wrong);
    } else {
        upload(dbt, bt, bt_bytes);
    }
    upload(dcl, cl, sizeof pb.cl);
    upload(dqs, qs, sizeof pb.qs);
    upload(dpos, pos, (size_t)rows * 4);
    upload(dslots, slots, (size_t)rows * 4);
    const void *qn = norms ? dw : NULL, *kn = norms ? (char *)dw + (size_t)hd * es : NULL;
    const float scale = (float)(1.0 / sqrt((double)hd)), theta = 1e6f;
    rpa_call c = {.a = {.struct_size = sizeof c.a, .dtype = t, .qkv = dx, .ld = ld, .rows = rows, .heads = pc->heads,
                   .kv_heads = pc->kv_heads, .head_dim = hd, .eps = 1e-6f, .q_norm = qn, .k_norm = kn,
                   .pos = dpos, .theta = theta, .scale = scale, .k_cache = dk, .v_cache = dv, .num_slots = nslots, .slots = dslots,
                   .out = dout, .ld_out = ld_out, .block_tables = dbt, .context_lens = dcl, .query_start = dqs,
                   .max_blocks = maxb, .num_seqs = pc->num_seqs, .block_size = bs,
                   .tables_static = tables == TABLES_STATIC || tables == QKV_WRITTEN}};
    if (tables == TABLES_WRITTEN) c.bt_onehot = dbt_onehot, c.bt_rows = bt_rows, c.bt_cols = bt_cols;
    if (fold) {
        c.a.norm_x = dnx, c.a.ld_norm_x = fold->ld, c.a.norm_x_cols = fold->cols, c.a.norm_x_eps = fold->eps;
        c.a.qkv_bias = dbias;
    }
    float *orig = malloc(n * 4); /* qkv as the device holds it before the op */
    assert_non_null(orig);
    download_as(t, orig, dx, n);
    /* with QKV_WRITTEN, the GEMM's A: [qkv's rows | random], B: [I | 0], and the decoy rows */
    void *dga = NULL, *dgb = NULL, *ddecoy = NULL;
    if (tables == QKV_WRITTEN) {
        const size_t b_elems = (size_t)1 << 24, cols = b_elems / nb > nb ? b_elems / nb : nb; /* B: ~32 MiB */
        const int64_t kk = (int64_t)(cols + 63) / 64 * 64;
        float *ga = malloc((size_t)rows * (size_t)kk * 4), *gb = calloc(nb * (size_t)kk, 4), *decoy = malloc(n * 4);
        assert_true(ga && gb && decoy);
        fill_random(ga, (size_t)rows * (size_t)kk, 207);
        for (int r = 0; r < rows; r++) memcpy(ga + (size_t)r * (size_t)kk, orig + (size_t)r * (size_t)ld, nb * 4);
        for (size_t j = 0; j < nb; j++) gb[j * (size_t)kk + j] = 1.0f;
        fill_random(decoy, n, 208);
        for (int r = 0; r < rows; r++) /* the columns past qkv's are not the GEMM's: as they were */
            memcpy(decoy + (size_t)r * (size_t)ld + nb, orig + (size_t)r * (size_t)ld + nb, ((size_t)ld - nb) * 4);
        dga = upload_as(t, ga, (size_t)rows * (size_t)kk), dgb = upload_as(t, gb, nb * (size_t)kk);
        ddecoy = upload_as(t, decoy, n);
        c.qkv_gemm = (vg_gemm_args){.struct_size = sizeof c.qkv_gemm, .dtype_ab = t, .dtype_c = t, .m = rows,
                                    .n = (int64_t)nb, .k = kk, .a = dga, .lda = kk, .b = dgb, .ldb = kk, .c = dx,
                                    .ldc = ld, .alpha = 1.0f, .b_static = 1};
        /* once eagerly, as vg's runner runs a key before it captures it, so that a device may tune
         * the GEMM (cuda times its own kernels beside cuBLASLt's); then the decoy rows in qkv */
        VG_CHECK(vg_op_gemm(g.s, &c.qkv_gemm));
        VG_CHECK(vg_mem_copy_d2d(g.s, dx, ddecoy, n * es));
        VG_CHECK(vg_stream_sync(g.s));
        free(ga), free(gb), free(decoy);
    }
    const int graph = has_graphs() && (!fold || vg_runtime_op_capturable(g.rt, VG_OP_ROTARY_PAGED_ATTENTION_NORM_X));
    vg_graph_exec *exec = graph ? capture(enqueue_rpa, &c) : NULL;
    if (exec) {
        VG_CHECK(vg_graph_exec_launch(exec, g.s));
        VG_CHECK(vg_graph_exec_destroy(exec));
    } else {
        enqueue_rpa(&c);
    }
    /* the two ops, separately, on copies */
    VG_CHECK(vg_op_rotary_kv_store(g.s, t, sx, ld, rows, pc->heads, pc->kv_heads, hd, qn, kn, 1e-6f, dpos, theta,
                                   sk, sv, dslots));
    VG_CHECK(vg_op_paged_attention(g.s, t, sx, ld, sout, ld_out, rows, sk, sv, dbt, maxb, dcl, dqs, pc->num_seqs,
                                   pc->heads, pc->kv_heads, hd, bs, scale));
    double *wd = to_double(w, (size_t)(2 * hd)), *kd = to_double(kc, nc);
    double *vd = to_double(vc, nc), *want = to_double(out0, nout);
    ref_rotary_kv_store(t, xd, ld, rows, pc->heads, pc->kv_heads, hd, norms ? wd : NULL, norms ? wd + hd : NULL,
                        1e-6, pos, theta, kd, vd, slots);
    ref_paged_attention(xd, ld, want, ld_out, rows, kd, vd, bt, maxb, cl, qs, pc->num_seqs, pc->heads,
                        pc->kv_heads, hd, bs, scale);
    char what[192], folded[64] = "";
    if (fold)
        snprintf(folded, sizeof folded, " norm_x %d cols ld %d eps %g%s", fold->cols, fold->ld, (double)fold->eps,
                 fold->bias ? " qkv_bias" : "");
    static const char *const how[] = {"", " tables_static", " table written just before",
                                      " tables_static, qkv written just before"};
    snprintf(what, sizeof what, "rotary_paged_attention %s heads %d/%d head_dim %d block %d rows %d%s%s%s",
             vg_dtype_name(t), pc->heads, pc->kv_heads, hd, bs, rows, norms ? " q/k norms" : "", folded,
             how[tables]);
    const double tol = t == VG_DTYPE_F32 ? 3e-4 : 2e-2;
    download_as(t, got, dout, nout);
    download_as(t, sep, sout, nout);
    check_close(what, got, want, nout, tol);
    check_close(what, sep, want, nout, tol);
    for (int r = qs[pc->num_seqs]; r < rows; r++)
        for (int e = 0; e < hidden; e++) assert_true(got[(size_t)r * ld_out + e] == 0.0f);
    /* qkv afterwards: each query and key element as it was or as the separate ops left it, the
     * value heads untouched; with norm_x the separate ops' rows were folded on the host, whose
     * 1/rms may round differently from the device's: close to theirs */
    float *after = malloc(n * 4), *sepx = malloc(n * 4);
    assert_true(after && sepx);
    download_as(t, after, dx, n);
    download_as(t, sepx, sx, n);
    double qk_max = 0;
    for (int r = 0; r < rows; r++)
        for (int e = 0; e < hidden + width; e++) qk_max = fmax(qk_max, fabs(sepx[(size_t)r * (size_t)ld + (size_t)e]));
    for (int r = 0; r < rows; r++)
        for (int e = 0; e < hidden + 2 * width; e++) {
            const size_t i = (size_t)r * (size_t)ld + (size_t)e;
            const int as_sep = fold ? fabs(after[i] - sepx[i]) <= tol * qk_max : after[i] == sepx[i];
            if (!(after[i] == orig[i] || (e < hidden + width && as_sep)))
                print_message("%s: qkv[%d, %d] is %g: neither %g as it was nor %g\n", what, r, e, (double)after[i],
                              (double)orig[i], (double)sepx[i]);
            assert_true(after[i] == orig[i] || (e < hidden + width && as_sep));
        }
    free(after), free(sepx), free(orig);
    void *caches[2] = {dk, dv};
    double *cw[2] = {kd, vd};
    for (int k = 0; k < 2; k++) { /* the new entries stored, the other slots as they were */
        download_as(t, gotc, caches[k], nc);
        check_close(what, gotc, cw[k], nc, tol);
    }
    free(pb.bt), free(pos), free(slots), free(x), free(w), free(kc), free(vc), free(out0), free(got), free(sep), free(gotc);
    free(xd), free(wd), free(kd), free(vd), free(want);
    void *bufs[14] = {dw, dx, dk, dv, dout, sx, sk, sv, sout, dbt, dcl, dqs, dpos, dslots};
    for (int i = 0; i < 14; i++) VG_CHECK(vg_mem_free(g.rt, bufs[i]));
    if (fold) {
        free(nx), free(bias), free(xs);
        VG_CHECK(vg_mem_free(g.rt, dnx));
        if (dbias) VG_CHECK(vg_mem_free(g.rt, dbias));
    }
    if (dbt_onehot) VG_CHECK(vg_mem_free(g.rt, dbt_onehot));
    if (dga) VG_CHECK(vg_mem_free(g.rt, dga));
    if (dgb) VG_CHECK(vg_mem_free(g.rt, dgb));
    if (ddecoy) VG_CHECK(vg_mem_free(g.rt, ddecoy));
}

static void rotary_paged_case_run(vg_dtype t, const paged_case *pc, int norms, const norm_fold *fold)
{
    rotary_paged_case_run_as(t, pc, norms, fold, TABLES_UPLOADED);
}

static void test_rotary_paged_attention(void **state)
{
    (void)state;
    if (!supports(VG_OP_ROTARY_KV_STORE) || !supports(VG_OP_PAGED_ATTENTION)) skip();
    for (size_t i = 0; i < sizeof paged_cases / sizeof paged_cases[0]; i++) {
        if (paged_cases[i].hd % 2) continue; /* rotary pairs */
        rotary_paged_case_run(VG_DTYPE_BF16, &paged_cases[i], (int)(i % 2), NULL);
        rotary_paged_case_run(VG_DTYPE_F32, &paged_cases[i], (int)((i + 1) % 2), NULL);
    }
    rotary_paged_case_run(VG_DTYPE_F16, &paged_cases[6], 1, NULL);
    rotary_paged_case_run(VG_DTYPE_F16, &paged_cases[5], 0, NULL);
}

/* A decode batch: `seqs` sequences decoding one token each after history/2 to history positions,
 * packed outputs, blocks of 16. */
static paged_case decode_batch(int heads, int kv_heads, int hd, int seqs, int history)
{
    paged_case pc = {.num_seqs = seqs, .heads = heads, .kv_heads = kv_heads, .hd = hd, .block_size = 16, .tight = 1};
    for (int s = 0; s < seqs; s++) pc.ctx[s] = history / 2 + (s * 37) % (history / 2 + 1), pc.newq[s] = 1;
    return pc;
}

/* rotary_paged_attention with norm_x (op table version 10) where the device offers it (OpenCL does
 * not: skipped). norm_x as models have it (Qwen2.5-0.5B's hidden 896 with a qkv bias,
 * Qwen3-0.6B's 1024 without), with a width that is not a multiple of 8, a row stride past it, and
 * an eps that counts; each with q/k norms and without. */
static void test_rotary_paged_attention_norm_x(void **state)
{
    (void)state;
    if (!supports(VG_OP_ROTARY_PAGED_ATTENTION_NORM_X) || !supports(VG_OP_ROTARY_KV_STORE) ||
        !supports(VG_OP_PAGED_ATTENTION))
        skip();
    static const norm_fold folds[] = {
        {896, 896, 1e-6f, 1}, {1024, 1024, 1e-6f, 0}, {901, 904, 1e-6f, 1}, {64, 72, 1e-6f, 0}, {13, 21, 0.25f, 1},
    };
    /* decode at 1, 16 and 64 rows with Qwen2.5-0.5B's heads (14/2, head_dim 64) and Qwen3-0.6B's
     * (16/8, 128); the widest caches with shorter histories */
    static const int heads[2][3] = {{14, 2, 64}, {16, 8, 128}}, seqs[3] = {1, 16, 64};
    for (int k = 0; k < 6; k++) {
        const int *h = heads[k / 3], sq = seqs[k % 3];
        const paged_case pc = decode_batch(h[0], h[1], h[2], sq, h[2] == 128 && sq == 64 ? 120 : 400);
        rotary_paged_case_run(VG_DTYPE_BF16, &pc, k % 2, &folds[k % 5]);
        rotary_paged_case_run(VG_DTYPE_F32, &pc, (k + 1) % 2, &folds[(k + 2) % 5]);
    }
    /* chunks of new tokens (prefill), past 64 rows in all (a device's decode kernel may stop there)
     * and within them, with padding rows */
    static const paged_case chunks[] = {
        /* seqs  contexts            new tokens   pad heads kv hd  block */
        {3, {170, 90, 300}, {50, 20, 1}, 2, 14, 2, 64, 16, 1},   /* 71 new rows */
        {2, {160, 300}, {60, 12}, 1, 16, 8, 128, 16, 1},         /* 72 */
        {4, {5, 200, 9, 64}, {5, 1, 3, 1}, 3, 16, 8, 128, 5, 0}, /* 10, block size 5, a stride gap in out */
    };
    for (int k = 0; k < 3; k++) {
        rotary_paged_case_run(VG_DTYPE_BF16, &chunks[k], k % 2, &folds[(k + 4) % 5]);
        rotary_paged_case_run(VG_DTYPE_F32, &chunks[k], (k + 1) % 2, &folds[(k + 1) % 5]);
        rotary_paged_case_run(VG_DTYPE_F16, &chunks[k], k % 2, &folds[(k + 2) % 5]);
    }
}

/* rotary_paged_attention's tables_static hint (op table version 12) at decode shapes of both
 * models, with and without norm_x: with the hint, the tables uploaded before, and (BF16 only: the
 * GEMM's identity is exact there, and cuda's decode kernel reads early for BF16 and F16 alike) qkv
 * written by the op just before (a device that read the queries early would attend with the wrong
 * ones); without it, the block table written by the op just before, over one that names other
 * blocks (a device that read it early, as cuda's decode kernel does with the hint, would attend to
 * the wrong keys). */
static void test_rotary_paged_attention_tables(void **state)
{
    (void)state;
    if (!supports(VG_OP_ROTARY_KV_STORE) || !supports(VG_OP_PAGED_ATTENTION)) skip();
    const int nx = supports(VG_OP_ROTARY_PAGED_ATTENTION_NORM_X);
    static const norm_fold fold = {896, 896, 1e-6f, 1};
    static const int heads[2][3] = {{14, 2, 64}, {16, 8, 128}}, seqs[2] = {1, 16};
    for (int k = 0; k < 4; k++) {
        const int *h = heads[k / 2];
        const paged_case pc = decode_batch(h[0], h[1], h[2], seqs[k % 2], 300);
        for (int tables = TABLES_STATIC; tables <= TABLES_WRITTEN; tables++) {
            if (tables == TABLES_WRITTEN && !supports(VG_OP_ARGMAX)) continue; /* its writer */
            rotary_paged_case_run_as(VG_DTYPE_BF16, &pc, h[2] == 128, nx ? &fold : NULL, (rpa_tables)tables);
            rotary_paged_case_run_as(VG_DTYPE_F32, &pc, k % 2, NULL, (rpa_tables)tables);
        }
        if (supports(VG_OP_GEMM)) /* its writer */
            rotary_paged_case_run_as(VG_DTYPE_BF16, &pc, h[2] == 128, nx && k % 2 ? &fold : NULL, QKV_WRITTEN);
    }
}

/* argmax over vocabularies that are not multiples of 64, with ties (the smallest index wins),
 * the maximum in the first and the last column, a constant row, all-negative rows, and NaNs (the
 * answer is ref_argmax's sequential scan: a NaN never wins, except that one in column 0 makes the
 * answer 0). */
static void argmax_case(vg_dtype t, int rows, int cols, int64_t ld)
{
    size_t n = (size_t)rows * (size_t)ld;
    float *x = malloc(n * 4);
    int32_t *got = malloc((size_t)rows * 4), *want = malloc((size_t)rows * 4);
    assert_true(x && got && want);
    fill_random(x, n, 111 + (unsigned)cols);
    for (int r = 0; r < rows; r++) {
        float *row = x + (size_t)r * ld;
        switch (r % 9) {
        case 0: row[cols / 3] = 5.0f, row[cols - 1] = 5.0f; break; /* a tie */
        case 1: row[cols - 1] = 9.0f; break;                       /* the last column */
        case 2: row[0] = 9.0f; break;                              /* the first column */
        case 3: for (int c = 0; c < cols; c++) row[c] = 0.25f; break; /* all equal: 0 */
        case 4: for (int c = 0; c < cols; c++) row[c] = -2.0f - row[c]; break; /* all negative */
        case 5: row[(r * 37) % cols] = 3.0f, row[(r * 53) % cols] = 3.0f; break; /* a tie anywhere */
        case 6: row[0] = NAN; break; /* the answer is 0 */
        case 7: for (int c = 0; c < cols; c++) row[c] = NAN; break; /* all NaN: 0 */
        default: /* NaNs in every fifth column, the maximum among the others */
            for (int c = 1; c < cols; c += 5) row[c] = NAN;
            row[(r * 29) % cols] = 7.0f;
            break;
        }
        /* beyond cols in the stride gap: larger than anything, never to be chosen */
        for (int64_t c = cols; c < ld; c++) row[c] = 100.0f;
    }
    void *dx = upload_as(t, x, n); /* x now holds the values rounded to t: ties stay ties */
    int32_t *dout = dalloc((size_t)rows * 4);
    VG_CHECK(vg_op_argmax(g.s, t, dx, ld, rows, cols, dout));
    download(got, dout, (size_t)rows * 4);
    double *xd = to_double(x, n);
    ref_argmax(xd, ld, rows, cols, want);
    for (int r = 0; r < rows; r++) {
        if (got[r] != want[r])
            print_message("argmax %s cols %d row %d: got %d, want %d\n", vg_dtype_name(t), cols, r,
                          got[r], want[r]);
        assert_int_equal(got[r], want[r]);
    }
    free(x), free(got), free(want), free(xd);
    VG_CHECK(vg_mem_free(g.rt, dx));
    VG_CHECK(vg_mem_free(g.rt, dout));
}

/* layernorm: rows far from zero (the variance must be taken around the mean), with and without
 * bias, in place, and row lengths that take each of a GPU kernel's paths (a warp per row, a block
 * per row, rows too long for registers, and rows of an odd length). */
static void layernorm_case(vg_dtype t, int rows, int cols, int bias, float offset)
{
    size_t n = (size_t)rows * (size_t)cols;
    float *x = malloc(n * 4), *w = malloc((size_t)cols * 4), *b = malloc((size_t)cols * 4);
    float *got = malloc(n * 4);
    assert_true(x && w && b && got);
    fill_random(x, n, 91);
    for (size_t i = 0; i < n; i++) x[i] += offset;
    fill_random(w, (size_t)cols, 92);
    fill_random(b, (size_t)cols, 93);
    void *dx = upload_as(t, x, n), *dw = upload_as(t, w, (size_t)cols);
    void *db = bias ? upload_as(t, b, (size_t)cols) : NULL, *dout = dalloc(n * esize(t));
    VG_CHECK(vg_op_layernorm(g.s, t, dx, dw, db, dout, rows, cols, 1e-6f));
    download_as(t, got, dout, n);
    double *xd = to_double(x, n), *wd = to_double(w, (size_t)cols), *bd = to_double(b, (size_t)cols);
    double *want = malloc(n * sizeof(double));
    assert_non_null(want);
    ref_layernorm(xd, wd, bias ? bd : NULL, want, rows, cols, 1e-6);
    char what[96];
    snprintf(what, sizeof what, "layernorm %s %dx%d bias %d offset %g", vg_dtype_name(t), rows, cols,
             bias, (double)offset);
    check_close(what, got, want, n, tol_for(t));
    VG_CHECK(vg_op_layernorm(g.s, t, dx, dw, db, dx, rows, cols, 1e-6f)); /* in place */
    download_as(t, got, dx, n);
    check_close(what, got, want, n, tol_for(t));
    free(x), free(w), free(b), free(got), free(xd), free(wd), free(bd), free(want);
    VG_CHECK(vg_mem_free(g.rt, dx));
    VG_CHECK(vg_mem_free(g.rt, dw));
    VG_CHECK(vg_mem_free(g.rt, db));
    VG_CHECK(vg_mem_free(g.rt, dout));
}

static void test_layernorm(void **state)
{
    (void)state;
    if (!supports(VG_OP_LAYERNORM)) skip();
    layernorm_case(VG_DTYPE_F32, 37, 200, 1, 0.0f);
    layernorm_case(VG_DTYPE_F32, 9, 1152, 1, 100.0f);
    layernorm_case(VG_DTYPE_F32, 5, 4608, 0, 3.0f);
    layernorm_case(VG_DTYPE_F32, 3, 10000, 1, 0.0f);
    layernorm_case(VG_DTYPE_F32, 11, 7, 1, 0.0f);
    layernorm_case(VG_DTYPE_BF16, 17, 1152, 1, 0.0f);
    layernorm_case(VG_DTYPE_BF16, 4, 4608, 1, 0.0f);
    layernorm_case(VG_DTYPE_F16, 6, 20000, 1, 0.0f);
    layernorm_case(VG_DTYPE_F16, 13, 96, 0, 0.0f);
    layernorm_case(VG_DTYPE_BF16, 2, 1, 1, 0.0f); /* one column: (x - mean) is 0, out = b */
}

typedef struct gw_case {
    vg_dtype t;
    void *dst, *src;
    int32_t *idx;
    float *w;
    int src_rows, rows, cols, taps;
} gw_case;

static void enqueue_gw(void *p)
{
    gw_case *c = p;
    VG_CHECK(vg_op_gather_weighted(g.s, c->t, c->dst, c->src, c->src_rows, c->idx, c->w, c->rows,
                                   c->cols, c->taps));
}

/* gather_weighted: indices anywhere in the table (and some outside it, which must contribute
 * nothing), any weights; captured once and replayed on new indices and weights, which are read
 * when the op runs. */
static void gather_weighted_case(vg_dtype t, int src_rows, int rows, int cols, int taps)
{
    size_t ns = (size_t)src_rows * (size_t)cols, nd = (size_t)rows * (size_t)cols;
    size_t nt = (size_t)rows * (size_t)taps;
    float *src = malloc(ns * 4), *got = malloc(nd * 4), *w = malloc(nt * 4);
    int32_t *idx = malloc(nt * 4);
    double *wd = malloc(nt * sizeof(double)), *want = malloc(nd * sizeof(double));
    assert_true(src && got && w && idx && wd && want);
    fill_random(src, ns, 101);
    gw_case c = {t, dalloc(nd * esize(t)), upload_as(t, src, ns), dalloc(nt * 4), dalloc(nt * 4),
                 src_rows, rows, cols, taps};
    double *srcd = to_double(src, ns);
    vg_graph_exec *exec = has_graphs() ? capture(enqueue_gw, &c) : NULL;
    for (int round = 0; round < 3; round++) {
        unsigned seed = 7u + (unsigned)round;
        for (size_t i = 0; i < nt; i++) {
            seed = seed * 1664525u + 1013904223u;
            idx[i] = (int32_t)((seed >> 8) % (unsigned)src_rows);
            if (i % 7 == 3) idx[i] = (i % 2) ? src_rows : -1 - (int32_t)round; /* outside */
            w[i] = (float)((seed >> 4) & 0xfff) / 4096.0f - 0.25f;
            wd[i] = w[i];
        }
        upload(c.idx, idx, nt * 4);
        upload(c.w, w, nt * 4);
        if (exec) VG_CHECK(vg_graph_exec_launch(exec, g.s));
        else enqueue_gw(&c);
        download_as(t, got, c.dst, nd);
        ref_gather_weighted(want, srcd, src_rows, idx, wd, rows, cols, taps);
        char what[96];
        snprintf(what, sizeof what, "gather_weighted %s %d of %d rows x %d, %d taps, round %d",
                 vg_dtype_name(t), rows, src_rows, cols, taps, round);
        check_close(what, got, want, nd, tol_for(t));
    }
    if (exec) VG_CHECK(vg_graph_exec_destroy(exec));
    free(src), free(got), free(w), free(idx), free(wd), free(want), free(srcd);
    VG_CHECK(vg_mem_free(g.rt, c.dst));
    VG_CHECK(vg_mem_free(g.rt, c.src));
    VG_CHECK(vg_mem_free(g.rt, c.idx));
    VG_CHECK(vg_mem_free(g.rt, c.w));
}

static void test_gather_weighted(void **state)
{
    (void)state;
    if (!supports(VG_OP_GATHER_WEIGHTED)) skip();
    gather_weighted_case(VG_DTYPE_F32, 256, 50, 128, 4); /* a 16 x 16 grid, bilinear */
    gather_weighted_case(VG_DTYPE_BF16, 2304, 33, 1152, 4);
    gather_weighted_case(VG_DTYPE_F16, 40, 9, 96, 16);
    gather_weighted_case(VG_DTYPE_F32, 10, 21, 7, 1);    /* odd rows: no vectors */
    gather_weighted_case(VG_DTYPE_BF16, 300, 5, 24, VG_GATHER_MAX_TAPS);
}

static void test_argmax(void **state)
{
    (void)state;
    if (!supports(VG_OP_ARGMAX)) skip();
    argmax_case(VG_DTYPE_F32, 12, 1000, 1003);
    argmax_case(VG_DTYPE_F32, 7, 151936, 151936); /* a real vocabulary */
    argmax_case(VG_DTYPE_BF16, 13, 32001, 32010);
    argmax_case(VG_DTYPE_F16, 6, 97, 97);
    argmax_case(VG_DTYPE_F32, 3, 1, 1);
    argmax_case(VG_DTYPE_BF16, 6, 65, 70);
    /* rows whose stride holds whole 16-byte vectors (GPU kernels load those), the columns not
     * a multiple of a vector, decode's row counts over a vocabulary */
    argmax_case(VG_DTYPE_BF16, 64, 151937, 151944);
    argmax_case(VG_DTYPE_F16, 16, 4099, 4104);
    argmax_case(VG_DTYPE_F32, 1, 151935, 151936);
    argmax_case(VG_DTYPE_BF16, 5, 7, 8);
    argmax_case(VG_DTYPE_BF16, 9, 1003, 1008); /* rows a slice each on GPUs, vectors and a tail */
    argmax_case(VG_DTYPE_F32, 300, 5003, 5004); /* rows that fill a GPU: a slice each */
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
        cmocka_unit_test_teardown(test_gemm_decode_shapes, end_stray_capture),
        cmocka_unit_test_teardown(test_gemm_b_written_before, end_stray_capture),
        cmocka_unit_test_teardown(test_gemm_silu_gate, end_stray_capture),
        cmocka_unit_test_teardown(test_gemm_rmsnorm_a, end_stray_capture),
        cmocka_unit_test_teardown(test_gemm_rmsnorm_a_unit, end_stray_capture),
        cmocka_unit_test_teardown(test_gemm_rmsnorm_a_unaligned, end_stray_capture),
        cmocka_unit_test_teardown(test_gemm_rejects_activation_with_inplace_residual, end_stray_capture),
        cmocka_unit_test_teardown(test_gather_reads_indices_at_replay, end_stray_capture),
        cmocka_unit_test_teardown(test_update, end_stray_capture),
        cmocka_unit_test_teardown(test_rmsnorm, end_stray_capture),
        cmocka_unit_test_teardown(test_rotary_2d, end_stray_capture),
        cmocka_unit_test_teardown(test_attention, end_stray_capture),
        cmocka_unit_test_teardown(test_attention_rotary, end_stray_capture),
        cmocka_unit_test_teardown(test_silu_mul, end_stray_capture),
        cmocka_unit_test_teardown(test_convert, end_stray_capture),
        cmocka_unit_test_teardown(test_rotary, end_stray_capture),
        cmocka_unit_test_teardown(test_rmsnorm_heads, end_stray_capture),
        cmocka_unit_test_teardown(test_kv_store, end_stray_capture),
        cmocka_unit_test_teardown(test_rotary_kv_store, end_stray_capture),
        cmocka_unit_test_teardown(test_rotary_paged_attention, end_stray_capture),
        cmocka_unit_test_teardown(test_rotary_paged_attention_norm_x, end_stray_capture),
        cmocka_unit_test_teardown(test_rotary_paged_attention_tables, end_stray_capture),
        cmocka_unit_test_teardown(test_paged_attention, end_stray_capture),
        cmocka_unit_test_teardown(test_argmax, end_stray_capture),
        cmocka_unit_test_teardown(test_layernorm, end_stray_capture),
        cmocka_unit_test_teardown(test_gather_weighted, end_stray_capture),
        cmocka_unit_test_teardown(test_failed_capture_recovers, end_stray_capture),
        cmocka_unit_test_teardown(test_streams_come_and_go, end_stray_capture),
        cmocka_unit_test_teardown(test_capture_cycles_return_memory, end_stray_capture),
    };
    int failed = cmocka_run_group_tests_name("conformance", tests, setup, teardown);
    vg_runtime_close(g.rt);
    return failed ? 1 : 0;
}
