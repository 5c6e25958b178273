/* SPDX-License-Identifier: Apache-2.0 */
/* Native handles (vg_native.h) on the backend VG_BACKEND names, with the test's own device code
 * (tests/native/): what an engine does when it hands vg its stream and its memory and runs its
 * own kernels inside vg's runner.
 *  - a caller's native stream wrapped as a vg stream runs vg ops and a graph, and outlives it;
 *  - caller-owned device memory registered with vg is used by an op and by a graph, and refused
 *    where it is not this device's;
 *  - a runner whose pieces launch the test's kernel beside vg ops (VG_PIECE_FOREIGN): captured
 *    FULL where the device captures foreign work (CUDA, HIP), downgraded to PIECEWISE elsewhere
 *    (kunlun_stub, OpenCL), equal to eager for several token counts with padding either way;
 *  - the runner's address check (VG_DEBUG_ADDRESSES) covers registered memory.
 * A backend without a device exits 77 (SKIP), unless VG_REQUIRE_DEVICE=1. */
#include <math.h>
#include <stdlib.h>

#include "native/foreign.h"
#include "test_util.h"
#include "vg/vg_runner.h"

static vg_runtime *g_rt;
static const foreign_impl *g_impl;
static foreign_ctx *g_fc;

static void upload(vg_stream *s, void *dst, const float *src, size_t n)
{
    VG_CHECK(vg_mem_copy_h2d(s, dst, src, n * sizeof(float)));
}

static void download(vg_stream *s, float *dst, const void *src, size_t n)
{
    VG_CHECK(vg_mem_copy_d2h(s, dst, src, n * sizeof(float)));
    VG_CHECK(vg_stream_sync(s));
}

/* ---- device ------------------------------------------------------------------------------------ */

static void test_native_device(void **state)
{
    (void)state;
    vg_native_device nd = {.struct_size = sizeof nd};
    VG_CHECK(vg_runtime_native_device(g_rt, &nd));
    const char *backend = vg_runtime_backend_name(g_rt);
    if (strcmp(backend, "kunlun_stub") == 0) assert_int_equal(nd.api, VG_NATIVE_HOST);
    if (strcmp(backend, "opencl") == 0) {
        assert_int_equal(nd.api, VG_NATIVE_OPENCL);
        assert_non_null(nd.device);
        assert_non_null(nd.context);
        assert_non_null(nd.platform);
    }
    if (strcmp(backend, "cuda") == 0) assert_int_equal(nd.api, VG_NATIVE_CUDA);
    assert_true(nd.ordinal >= 0);
    /* the capability is the backend's honest answer */
    int foreign = vg_runtime_foreign_capture(g_rt);
    assert_int_equal(foreign, nd.api == VG_NATIVE_CUDA || nd.api == VG_NATIVE_HIP);
    /* an older caller's struct: only what fits is written */
    vg_native_device small = {.struct_size = offsetof(vg_native_device, ordinal)};
    small.ordinal = -7;
    VG_CHECK(vg_runtime_native_device(g_rt, &small));
    assert_int_equal(small.api, nd.api);
    assert_int_equal(small.ordinal, -7);
    vg_native_device unset = {0};
    VG_CHECK_FAILS(vg_runtime_native_device(g_rt, &unset), VG_ERR_INVALID_ARG, "struct_size");
}

/* ---- streams ----------------------------------------------------------------------------------- */

/* y = 2 x + y (axpby) and fills, eagerly and as a graph, on stream s. */
static void ops_and_graph_on(vg_stream *s)
{
    enum { N = 1000 };
    float *x = NULL, *y = NULL;
    VG_CHECK(vg_mem_alloc(g_rt, N * sizeof(float), (void **)&x));
    VG_CHECK(vg_mem_alloc(g_rt, N * sizeof(float), (void **)&y));
    float hx[N], hy[N];
    for (int i = 0; i < N; i++) hx[i] = (float)i;
    upload(s, x, hx, N);
    VG_CHECK(vg_op_fill(s, y, VG_DTYPE_F32, N, 1.0));
    VG_CHECK(vg_op_axpby(s, N, 2.0f, x, 1.0f, y));
    download(s, hy, y, N);
    for (int i = 0; i < N; i++) assert_float_equal(hy[i], 2.0f * i + 1.0f, 0);
    if (vg_runtime_caps(g_rt) & VG_CAP_GRAPH) {
        vg_graph *g = NULL;
        vg_graph_exec *ge = NULL;
        VG_CHECK(vg_graph_capture_begin(s));
        assert_true(vg_stream_is_capturing(s));
        VG_CHECK(vg_op_fill(s, y, VG_DTYPE_F32, N, 3.0));
        VG_CHECK(vg_op_axpby(s, N, 0.5f, x, 1.0f, y));
        VG_CHECK(vg_graph_capture_end(s, &g));
        VG_CHECK(vg_graph_instantiate(g, &ge));
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < N; i++) hx[i] = (float)(i * (round + 1));
            upload(s, x, hx, N);
            VG_CHECK(vg_graph_exec_launch(ge, s));
            download(s, hy, y, N);
            for (int i = 0; i < N; i++) assert_float_equal(hy[i], 0.5f * hx[i] + 3.0f, 0);
        }
        VG_CHECK(vg_graph_exec_destroy(ge));
        VG_CHECK(vg_graph_destroy(g));
    }
    VG_CHECK(vg_mem_free(g_rt, x));
    VG_CHECK(vg_mem_free(g_rt, y));
}

static void test_wrap_stream(void **state)
{
    (void)state;
    void *native = g_impl->stream_create(g_fc);
    assert_non_null(native);
    vg_stream *w = NULL;
    VG_CHECK(vg_stream_wrap(g_rt, native, &w));
    assert_true(vg_stream_is_wrapped(w));
    assert_ptr_equal(vg_stream_runtime(w), g_rt);
    void *back = NULL;
    VG_CHECK(vg_stream_native(w, &back));
    assert_ptr_equal(back, native);
    ops_and_graph_on(w);
    VG_CHECK(vg_stream_destroy(w));
    /* the caller's stream is alive: wrap it again and use it */
    VG_CHECK(vg_stream_wrap(g_rt, native, &w));
    ops_and_graph_on(w);
    VG_CHECK(vg_stream_destroy(w));
    g_impl->stream_destroy(g_fc, native);
    /* a stream vg owns has a native handle too, and is not wrapped */
    vg_stream *s = NULL;
    VG_CHECK(vg_stream_create(g_rt, &s));
    assert_false(vg_stream_is_wrapped(s));
    VG_CHECK(vg_stream_native(s, &back));
    assert_non_null(back);
    VG_CHECK(vg_stream_destroy(s));
}

static void test_wrap_refusals(void **state)
{
    (void)state;
    vg_stream *w = (vg_stream *)1;
    VG_CHECK_FAILS(vg_stream_wrap(g_rt, NULL, &w), VG_ERR_INVALID_ARG, "native stream is NULL");
    assert_null(w);
    void *bad = g_impl->stream_foreign(g_fc);
    if (bad) {
        const char *why = g_impl->api == VG_NATIVE_OPENCL ? "another context" : "not a live stream";
        VG_CHECK_FAILS(vg_stream_wrap(g_rt, bad, &w), VG_ERR_INVALID_ARG, why);
        assert_null(w);
    }
    VG_CHECK_FAILS(vg_stream_native(NULL, (void **)&w), VG_ERR_INVALID_ARG, "stream is NULL");
}

/* ---- registered memory ------------------------------------------------------------------------- */

static void test_register_memory(void **state)
{
    (void)state;
    enum { N = 512 };
    vg_stream *s = NULL;
    VG_CHECK(vg_stream_create(g_rt, &s));
    void *native = g_impl->mem_alloc(g_fc, N * sizeof(float));
    assert_non_null(native);
    float *reg = NULL, *y = NULL;
    VG_CHECK(vg_mem_register(g_rt, native, N * sizeof(float), (void **)&reg));
    VG_CHECK(vg_mem_alloc(g_rt, N * sizeof(float), (void **)&y));
    vg_native_mem nm = {.struct_size = sizeof nm};
    VG_CHECK(vg_mem_native(g_rt, reg + 10, &nm));
    assert_true(nm.registered);
    if (g_impl->api == VG_NATIVE_HOST || g_impl->api == VG_NATIVE_OPENCL)
        assert_int_equal(nm.bytes, (N - 10) * sizeof(float));
    else /* the driver's allocation may be rounded up; 0 where it cannot tell */
        assert_true(nm.bytes == 0 || nm.bytes >= (N - 10) * sizeof(float));
    if (g_impl->api == VG_NATIVE_OPENCL) { /* the caller's cl_mem, at the element's offset */
        assert_ptr_equal(nm.handle, native);
        assert_int_equal(nm.offset, 10 * sizeof(float));
    } else { /* pointer APIs: the address is the caller's own */
        assert_ptr_equal(reg, native);
        assert_ptr_equal(nm.handle, reg + 10);
    }
    VG_CHECK(vg_mem_native(g_rt, y, &nm));
    assert_false(nm.registered);
    /* an op reads and writes it */
    float h[N], out[N];
    for (int i = 0; i < N; i++) h[i] = (float)(i % 37) - 3.0f;
    upload(s, reg, h, N);
    VG_CHECK(vg_op_fill(s, y, VG_DTYPE_F32, N, 1.0));
    VG_CHECK(vg_op_axpby(s, N, 4.0f, reg, 1.0f, y));
    VG_CHECK(vg_op_axpby(s, N, 1.0f, y, 0.0f, reg)); /* and the registered memory is written */
    download(s, out, reg, N);
    for (int i = 0; i < N; i++) assert_float_equal(out[i], 4.0f * h[i] + 1.0f, 0);
    /* a graph reads it at replay */
    if (vg_runtime_caps(g_rt) & VG_CAP_GRAPH) {
        vg_graph *g = NULL;
        vg_graph_exec *ge = NULL;
        VG_CHECK(vg_graph_capture_begin(s));
        VG_CHECK(vg_op_fill(s, y, VG_DTYPE_F32, N, 0.0));
        VG_CHECK(vg_op_axpby(s, N, -1.0f, reg, 0.0f, y));
        VG_CHECK(vg_graph_capture_end(s, &g));
        VG_CHECK(vg_graph_instantiate(g, &ge));
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < N; i++) h[i] = (float)(i + round * 1000);
            upload(s, reg, h, N);
            VG_CHECK(vg_graph_exec_launch(ge, s));
            download(s, out, y, N);
            for (int i = 0; i < N; i++) assert_float_equal(out[i], -h[i], 0);
        }
        VG_CHECK(vg_graph_exec_destroy(ge));
        VG_CHECK(vg_graph_destroy(g));
    }
    VG_CHECK(vg_mem_unregister(g_rt, reg));
    VG_CHECK_FAILS(vg_mem_unregister(g_rt, reg), VG_ERR_INVALID_ARG,
                   "not an address vg_mem_register returned");
    VG_CHECK(vg_mem_free(g_rt, y));
    g_impl->mem_free(g_fc, native);
    VG_CHECK(vg_stream_destroy(s));
}

static void test_register_refusals(void **state)
{
    (void)state;
    void *out = (void *)1;
    VG_CHECK_FAILS(vg_mem_register(g_rt, NULL, 64, &out), VG_ERR_INVALID_ARG, "is NULL");
    assert_null(out);
    void *native = g_impl->mem_alloc(g_fc, 4096);
    assert_non_null(native);
    VG_CHECK_FAILS(vg_mem_register(g_rt, native, 0, &out), VG_ERR_INVALID_ARG, "bytes is 0");
    if (g_impl->api == VG_NATIVE_OPENCL) {
        VG_CHECK_FAILS(vg_mem_register(g_rt, native, 8192, &out), VG_ERR_INVALID_ARG,
                       "holds only 4096 bytes");
    } else if (g_impl->api == VG_NATIVE_HOST) {
        /* a range running past the end of a vg allocation, and freed memory the stub holds */
        void *d = NULL;
        VG_CHECK(vg_mem_alloc(g_rt, 256, &d));
        VG_CHECK_FAILS(vg_mem_register(g_rt, (char *)d + 128, 256, &out), VG_ERR_INVALID_ARG,
                       "runs past the end of allocation");
        VG_CHECK(vg_mem_register(g_rt, (char *)d + 128, 128, &out)); /* inside: this device's */
        VG_CHECK(vg_mem_unregister(g_rt, out));
        out = NULL;
        VG_CHECK(vg_mem_free(g_rt, d));
    } else if (g_impl->api == VG_NATIVE_CUDA || g_impl->api == VG_NATIVE_HIP) {
        float host[16];
        VG_CHECK_FAILS(vg_mem_register(g_rt, host, sizeof host, &out), VG_ERR_INVALID_ARG,
                       "not device memory");
    }
    assert_null(out);
    VG_CHECK_FAILS(vg_mem_unregister(g_rt, native), VG_ERR_INVALID_ARG, "vg_mem_register");
    g_impl->mem_free(g_fc, native);
}

/* ---- a runner whose pieces launch the test's own kernel ----------------------------------------- */

/* x (input) -> [vg] y = 2x + 1 -> [foreign] z = 3y - 5 -> [vg] out = z + w (w registered memory:
 * an engine's weights). Padding rows of x are zeroed by prepare. */
enum { BUF_X, BUF_Y, BUF_Z, BUF_OUT };
enum { COLS = 8 };

typedef struct engine {
    float *w; /* registered, COLS * MAX_TOKENS floats */
    int foreign_runs;
} engine;

#define MAX_TOKENS 64

static vg_status engine_reserve(void *model, vg_runner *r, const vg_batch_desc *padded)
{
    (void)model;
    size_t bytes = (size_t)padded->num_tokens * COLS * sizeof(float);
    for (int b = BUF_X; b <= BUF_OUT; b++) {
        vg_status st = vg_runner_buffer_reserve(r, b, bytes);
        if (st != VG_OK) return st;
    }
    return VG_OK;
}

static vg_status engine_prepare(void *model, vg_runner *r, const vg_batch_desc *real,
                                const vg_batch_desc *padded, vg_stream *s, const void *inputs)
{
    (void)model;
    size_t n = (size_t)real->num_tokens * COLS, total = (size_t)padded->num_tokens * COLS;
    float *x = vg_runner_buffer(r, BUF_X);
    vg_status st = vg_mem_set(s, x, 0, total * sizeof(float));
    if (st == VG_OK && inputs) st = vg_mem_copy_h2d(s, x, inputs, n * sizeof(float));
    return st;
}

static vg_status piece_first(void *model, vg_runner *r, const vg_piece *p,
                             const vg_batch_desc *padded, vg_stream *s)
{
    (void)model, (void)p;
    size_t n = (size_t)padded->num_tokens * COLS;
    float *y = vg_runner_buffer(r, BUF_Y);
    vg_status st = vg_op_fill(s, y, VG_DTYPE_F32, n, 1.0);
    return st == VG_OK ? vg_op_axpby(s, n, 2.0f, vg_runner_buffer(r, BUF_X), 1.0f, y) : st;
}

static vg_status piece_foreign(void *model, vg_runner *r, const vg_piece *p,
                               const vg_batch_desc *padded, vg_stream *s)
{
    (void)p;
    ((engine *)model)->foreign_runs++;
    return g_impl->scale(g_fc, s, vg_runner_buffer(r, BUF_Y), vg_runner_buffer(r, BUF_Z),
                         (size_t)padded->num_tokens * COLS, 3.0f, -5.0f);
}

static vg_status piece_last(void *model, vg_runner *r, const vg_piece *p,
                            const vg_batch_desc *padded, vg_stream *s)
{
    (void)p;
    size_t n = (size_t)padded->num_tokens * COLS;
    float *out = vg_runner_buffer(r, BUF_OUT);
    vg_status st = vg_mem_copy_d2d(s, out, ((engine *)model)->w, n * sizeof(float));
    return st == VG_OK ? vg_op_axpby(s, n, 1.0f, vg_runner_buffer(r, BUF_Z), 1.0f, out) : st;
}

static int engine_addresses(void *model, vg_runner *r, const void **out, int max)
{
    (void)r;
    if (max < 1) return 0;
    out[0] = ((engine *)model)->w;
    return 1;
}

static const vg_op_id k_axpby_fill[] = {VG_OP_FILL, VG_OP_AXPBY};
static const vg_op_id k_axpby[] = {VG_OP_AXPBY};
static const vg_piece k_pieces[] = {
    {"first", piece_first, 0, k_axpby_fill, 2, NULL, 0},
    {"foreign", piece_foreign, VG_PIECE_FOREIGN, NULL, 0, NULL, 1},
    {"last", piece_last, 0, k_axpby, 1, NULL, 2},
};

static vg_runner *engine_runner(engine *e, vg_graph_mode mode, vg_model_iface *m)
{
    static const int64_t sizes[] = {8, 16, 32, MAX_TOKENS};
    *m = (vg_model_iface){.struct_size = sizeof *m, .model = e, .pieces = k_pieces,
                          .num_pieces = 3, .reserve = engine_reserve, .prepare = engine_prepare,
                          .addresses = engine_addresses};
    vg_runner_options o;
    vg_runner_options_init(&o);
    o.mode = mode;
    o.capture_sizes = sizes;
    o.num_capture_sizes = 4;
    o.debug_addresses = 1;
    vg_runner *r = NULL;
    VG_CHECK(vg_runner_create(g_rt, m, &o, &r));
    return r;
}

static void run_tokens(vg_runner *r, int tokens, float *out, vg_run_info *info)
{
    float in[MAX_TOKENS * COLS] = {0};
    for (int i = 0; i < tokens * COLS; i++) in[i] = (float)((i * 7) % 23) * 0.25f - 2.0f;
    vg_batch_desc d = {.num_tokens = tokens};
    VG_CHECK(vg_runner_run(r, &d, in, info));
    download(vg_runner_stream(r), out, vg_runner_buffer(r, BUF_OUT), (size_t)tokens * COLS);
    for (int i = 0; i < tokens * COLS; i++) {
        float y = 2.0f * in[i] + 1.0f, want = 3.0f * y - 5.0f + (float)(i % 11);
        assert_float_equal(out[i], want, 0);
    }
}

static void test_runner_with_foreign_kernel(void **state)
{
    (void)state;
    int foreign = vg_runtime_foreign_capture(g_rt), graphs = vg_test_graphs(g_rt);
    vg_stream *s = NULL;
    VG_CHECK(vg_stream_create(g_rt, &s));
    void *native = g_impl->mem_alloc(g_fc, MAX_TOKENS * COLS * sizeof(float));
    assert_non_null(native);
    engine e = {0}, eager_e = {0};
    VG_CHECK(vg_mem_register(g_rt, native, MAX_TOKENS * COLS * sizeof(float), (void **)&e.w));
    float w[MAX_TOKENS * COLS];
    for (int i = 0; i < MAX_TOKENS * COLS; i++) w[i] = (float)(i % 11);
    upload(s, e.w, w, MAX_TOKENS * COLS);
    VG_CHECK(vg_stream_sync(s));
    eager_e.w = e.w;
    vg_model_iface m, em;
    vg_runner *r = engine_runner(&e, VG_MODE_FULL, &m);
    vg_runner *eager = engine_runner(&eager_e, VG_MODE_NONE, &em);
    if (graphs)
        assert_int_equal(vg_runner_mode(r), foreign ? VG_MODE_FULL : VG_MODE_PIECEWISE);
    static const int tokens[] = {5, 8, 13, 30, 64, 3, 13};
    for (size_t k = 0; k < sizeof tokens / sizeof tokens[0]; k++) {
        float got[MAX_TOKENS * COLS], want[MAX_TOKENS * COLS];
        vg_run_info info, einfo;
        run_tokens(r, tokens[k], got, &info);
        run_tokens(eager, tokens[k], want, &einfo);
        assert_memory_equal(got, want, sizeof(float) * (size_t)tokens[k] * COLS);
        assert_int_equal(einfo.path, VG_RUN_EAGER);
        assert_true(info.padded_tokens >= tokens[k]);
        if (!graphs) continue;
        if (foreign) { /* the whole forward, the test's kernel included, is one graph */
            assert_int_equal(info.path, VG_RUN_FULL);
            assert_int_equal(info.graph_launches, 1);
            assert_int_equal(info.eager_pieces, 0);
        } else { /* the foreign piece runs eagerly between two graphs */
            assert_int_equal(info.path, VG_RUN_PIECEWISE);
            assert_int_equal(info.graph_launches, 2);
            assert_int_equal(info.eager_pieces, 1);
        }
    }
    /* captured: the test's kernel ran only at the first call of each bucket; not captured: at
     * every call */
    if (graphs && foreign) assert_int_equal(e.foreign_runs, 4);
    if (!foreign || !graphs) assert_int_equal(e.foreign_runs, 7);
    /* the address check covers registered memory: dropped and registered anew, the graphs are
     * refused until the runner is invalidated */
    if (graphs) {
        VG_CHECK(vg_mem_unregister(g_rt, e.w));
        VG_CHECK(vg_mem_register(g_rt, native, MAX_TOKENS * COLS * sizeof(float), (void **)&e.w));
        float in[5 * COLS] = {0};
        vg_batch_desc d = {.num_tokens = 5};
        VG_CHECK_FAILS(vg_runner_run(r, &d, in, NULL), VG_ERR_STATE, "address check failed");
        VG_CHECK(vg_runner_invalidate(r));
        float got[MAX_TOKENS * COLS];
        run_tokens(r, 5, got, NULL);
    }
    VG_CHECK(vg_runner_destroy(r));
    VG_CHECK(vg_runner_destroy(eager));
    VG_CHECK(vg_mem_unregister(g_rt, e.w));
    g_impl->mem_free(g_fc, native);
    VG_CHECK(vg_stream_destroy(s));
}

int main(void)
{
    int rc0 = vg_test_open_runtime(&g_rt);
    if (rc0) return rc0;
    g_impl = foreign_for(g_rt);
    if (!g_impl) {
        printf("SKIP: this build has no device code of its own for backend '%s'\n",
               vg_runtime_backend_name(g_rt));
        vg_runtime_close(g_rt);
        return VG_TEST_SKIP;
    }
    if (g_impl->init(g_rt, &g_fc) != VG_OK) {
        fprintf(stderr, "the test's device code: %s\n", vg_last_error());
        return 1;
    }
    printf("native tests on backend '%s' (foreign work %scaptured)\n", vg_runtime_backend_name(g_rt),
           vg_runtime_foreign_capture(g_rt) ? "" : "not ");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_native_device),
        cmocka_unit_test(test_wrap_stream),
        cmocka_unit_test(test_wrap_refusals),
        cmocka_unit_test(test_register_memory),
        cmocka_unit_test(test_register_refusals),
        cmocka_unit_test(test_runner_with_foreign_kernel),
    };
    int rc = cmocka_run_group_tests_name("native", tests, NULL, NULL);
    g_impl->fini(g_fc);
    vg_runtime_close(g_rt);
    return rc ? 1 : 0;
}
