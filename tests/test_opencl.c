/* SPDX-License-Identifier: Apache-2.0 */
/* The opencl backend's own behaviour, beyond the conformance suites every backend runs:
 *   - a chain of dependent ops (with a memset and a device copy, which a capture records as
 *     kernels) captured once into a cl_khr_command_buffer and replayed on new input contents, on
 *     its own stream, on another stream, and twice back to back, equal bit for bit to eager runs;
 *   - what a command buffer cannot hold (host transfers, events) invalidates the capture with a
 *     message, and the stream stays usable;
 *   - device addresses are fake: pointer arithmetic inside an allocation works, anything else is
 *     refused by name;
 *   - a driver without command buffers (VG_OPENCL_COMMAND_BUFFER=0) means no graphs, every op
 *     still runs;
 *   - VG_OPENCL_PLATFORM / VG_OPENCL_DEVICE select the device, or say what exists;
 *   - the program is compiled once per device and process.
 * Run with VG_BACKEND=opencl; exits 77 (SKIP) without an OpenCL device unless VG_REQUIRE_DEVICE=1. */
#include <math.h>
#include <stdlib.h>

#include "test_util.h"
#include "vg/vg_device.h"

static vg_runtime *g_rt;

static void *dalloc(vg_runtime *rt, size_t bytes)
{
    void *p = NULL;
    VG_CHECK(vg_mem_alloc(rt, bytes, &p));
    return p;
}

static void fill_random(float *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

static vg_runtime *open_opencl(void)
{
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    o.backend = "opencl";
    vg_runtime *rt = NULL;
    VG_CHECK(vg_runtime_open(&o, &rt));
    return rt;
}

/* ---- a chain of ops, captured and replayed ---------------------------------------------------- */

enum { M = 37, K = 48, N = 40 };

typedef struct chain {
    vg_runtime *rt;
    float *x_in, *x, *w, *bias, *h, *g, *norm_w, *out;
} chain;

/* x = x_in (device copy); out = 0 (memset); h = x·wᵀ + bias; g = silu(h[:, :N]) · h[:, N:];
 * out = rmsnorm(g) */
static void chain_enqueue(const chain *c, vg_stream *s)
{
    VG_CHECK(vg_mem_copy_d2d(s, c->x, c->x_in, M * K * sizeof(float)));
    VG_CHECK(vg_mem_set(s, c->out, 0, M * N * sizeof(float)));
    vg_gemm_args a = {.struct_size = sizeof a, .dtype_ab = VG_DTYPE_F32, .dtype_c = VG_DTYPE_F32,
                      .m = M, .n = 2 * N, .k = K, .a = c->x, .lda = K, .b = c->w, .ldb = K,
                      .c = c->h, .ldc = 2 * N, .bias = c->bias, .act = VG_ACT_NONE, .alpha = 1.0f};
    VG_CHECK(vg_op_gemm(s, &a));
    VG_CHECK(vg_op_silu_mul(s, VG_DTYPE_F32, c->h, 2 * N, c->g, N, M, N));
    VG_CHECK(vg_op_rmsnorm(s, VG_DTYPE_F32, c->g, c->norm_w, c->out, M, N, 1e-6f));
}

static void chain_upload(const chain *c, vg_stream *s, unsigned seed)
{
    static float x[M * K];
    fill_random(x, M * K, seed);
    VG_CHECK(vg_mem_copy_h2d(s, c->x_in, x, sizeof x));
    VG_CHECK(vg_stream_sync(s));
}

static void chain_result(const chain *c, vg_stream *s, float *out)
{
    VG_CHECK(vg_mem_copy_d2h(s, out, c->out, M * N * sizeof(float)));
    VG_CHECK(vg_stream_sync(s));
}

static void test_chain_replays_new_inputs(void **state)
{
    (void)state;
    if (!(vg_runtime_caps(g_rt) & VG_CAP_GRAPH)) skip();
    vg_stream *s = NULL, *s2 = NULL;
    VG_CHECK(vg_stream_create(g_rt, &s));
    VG_CHECK(vg_stream_create(g_rt, &s2));
    chain c = {g_rt, dalloc(g_rt, M * K * 4), dalloc(g_rt, M * K * 4), dalloc(g_rt, 2 * N * K * 4),
               dalloc(g_rt, 2 * N * 4), dalloc(g_rt, M * 2 * N * 4), dalloc(g_rt, M * N * 4),
               dalloc(g_rt, N * 4), dalloc(g_rt, M * N * 4)};
    static float w[2 * N * K], bias[2 * N], nw[N], eager[M * N], replay[M * N];
    fill_random(w, 2 * N * K, 1);
    fill_random(bias, 2 * N, 2);
    fill_random(nw, N, 3);
    VG_CHECK(vg_mem_copy_h2d(s, c.w, w, sizeof w));
    VG_CHECK(vg_mem_copy_h2d(s, c.bias, bias, sizeof bias));
    VG_CHECK(vg_mem_copy_h2d(s, c.norm_w, nw, sizeof nw));
    chain_upload(&c, s, 10);

    vg_graph *graph = NULL;
    vg_graph_exec *exec = NULL;
    VG_CHECK(vg_graph_capture_begin(s));
    chain_enqueue(&c, s);
    VG_CHECK(vg_graph_capture_end(s, &graph));
    VG_CHECK(vg_graph_instantiate(graph, &exec));
    /* capture ran nothing: out still holds what the allocation held, not the chain's result */
    for (unsigned seed = 20; seed < 24; seed++) {
        chain_upload(&c, s, seed);
        chain_enqueue(&c, s);
        chain_result(&c, s, eager);
        float lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < M * N; i++) lo = fminf(lo, eager[i]), hi = fmaxf(hi, eager[i]);
        assert_true(hi > lo); /* a real result, not zeros */
        VG_CHECK(vg_mem_set(s, c.out, 0xff, M * N * 4)); /* NaN: a replay that skips shows */
        /* replayed on the capturing stream, on another one, and twice in a row */
        vg_stream *on = seed % 2 ? s2 : s;
        VG_CHECK(vg_stream_sync(s));
        VG_CHECK(vg_graph_exec_launch(exec, on));
        if (seed == 22) VG_CHECK(vg_graph_exec_launch(exec, on));
        chain_result(&c, on, replay);
        assert_memory_equal(eager, replay, sizeof eager);
    }
    /* a second executable of the same graph replays the same */
    vg_graph_exec *exec2 = NULL;
    VG_CHECK(vg_graph_instantiate(graph, &exec2));
    VG_CHECK(vg_graph_destroy(graph));
    VG_CHECK(vg_mem_set(s, c.out, 0xff, M * N * 4));
    VG_CHECK(vg_graph_exec_launch(exec2, s));
    chain_result(&c, s, replay);
    assert_memory_equal(eager, replay, sizeof eager);
    VG_CHECK(vg_graph_exec_destroy(exec2));
    VG_CHECK(vg_graph_exec_destroy(exec));
    void *bufs[] = {c.x_in, c.x, c.w, c.bias, c.h, c.g, c.norm_w, c.out};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) VG_CHECK(vg_mem_free(g_rt, bufs[i]));
    VG_CHECK(vg_stream_destroy(s2));
    VG_CHECK(vg_stream_destroy(s));
}

/* ---- what a command buffer cannot hold ----------------------------------------------------------- */

static void test_host_transfer_invalidates_capture(void **state)
{
    (void)state;
    if (!(vg_runtime_caps(g_rt) & VG_CAP_GRAPH)) skip();
    vg_stream *s = NULL;
    VG_CHECK(vg_stream_create(g_rt, &s));
    float host[64] = {0}, back[64];
    float *d = dalloc(g_rt, sizeof host);
    for (int i = 0; i < 64; i++) host[i] = (float)i;
    const char *what[] = {"copy_h2d", "copy_d2h", "event_record"};
    for (int k = 0; k < 3; k++) {
        vg_event *e = NULL;
        VG_CHECK(vg_event_create(g_rt, &e));
        VG_CHECK(vg_graph_capture_begin(s));
        VG_CHECK(vg_op_fill(s, d, VG_DTYPE_F32, 64, 1.0)); /* recorded */
        vg_error_clear();
        vg_status st = k == 0 ? vg_mem_copy_h2d(s, d, host, sizeof host)
                     : k == 1 ? vg_mem_copy_d2h(s, back, d, sizeof back)
                              : vg_event_record(e, s);
        assert_int_equal(st, VG_ERR_CAPTURE);
        assert_non_null(strstr(vg_last_error(), what[k]));
        vg_graph *graph = NULL;
        VG_CHECK_FAILS(vg_graph_capture_end(s, &graph), VG_ERR_CAPTURE, what[k]);
        assert_null(graph);
        VG_CHECK(vg_event_destroy(e));
    }
    assert_non_null(strstr(vg_last_error(), "invalidated"));
    /* the stream works eagerly, and captures again */
    VG_CHECK(vg_mem_copy_h2d(s, d, host, sizeof host));
    VG_CHECK(vg_mem_copy_d2h(s, back, d, sizeof back));
    VG_CHECK(vg_stream_sync(s));
    assert_memory_equal(host, back, sizeof host);
    vg_graph *graph = NULL;
    vg_graph_exec *exec = NULL;
    VG_CHECK(vg_graph_capture_begin(s));
    VG_CHECK(vg_op_fill(s, d, VG_DTYPE_F32, 64, 2.5));
    VG_CHECK(vg_graph_capture_end(s, &graph));
    VG_CHECK(vg_graph_instantiate(graph, &exec));
    VG_CHECK(vg_graph_exec_launch(exec, s));
    VG_CHECK(vg_mem_copy_d2h(s, back, d, sizeof back));
    VG_CHECK(vg_stream_sync(s));
    for (int i = 0; i < 64; i++) assert_true(back[i] == 2.5f);
    VG_CHECK(vg_graph_exec_destroy(exec));
    VG_CHECK(vg_graph_destroy(graph));
    VG_CHECK(vg_mem_free(g_rt, d));
    VG_CHECK(vg_stream_destroy(s));
}

/* ---- fake device addresses ------------------------------------------------------------------------ */

static void test_device_addresses(void **state)
{
    (void)state;
    vg_stream *s = NULL;
    VG_CHECK(vg_stream_create(g_rt, &s));
    enum { n = 1000 };
    float *a = dalloc(g_rt, n * 4), *b = dalloc(g_rt, n * 4), host[n], back[n];
    assert_true(((uintptr_t)a & 255) == 0 && ((uintptr_t)b & 255) == 0);
    assert_true(a + n <= b || b + n <= a); /* distinct ranges */
    for (int i = 0; i < n; i++) host[i] = (float)i;
    VG_CHECK(vg_mem_copy_h2d(s, a, host, sizeof host));
    VG_CHECK(vg_mem_set(s, b, 0, n * 4));
    /* a view in the middle of an allocation: b[100..600) += 2 * a[300..800) */
    VG_CHECK(vg_op_axpby(s, 500, 2.0f, a + 300, 1.0f, b + 100));
    VG_CHECK(vg_mem_copy_d2h(s, back, b, sizeof back));
    VG_CHECK(vg_stream_sync(s));
    for (int i = 0; i < n; i++)
        assert_true(back[i] == (i >= 100 && i < 600 ? 2.0f * (float)(i + 200) : 0.0f));
    /* an address that is not a device allocation, and a copy past an allocation's end */
    VG_CHECK_FAILS_ALL(vg_op_axpby(s, 10, 1.0f, host, 1.0f, b), VG_ERR_INVALID_ARG, "axpby",
                       "not an address inside a live allocation");
    VG_CHECK_FAILS(vg_mem_copy_h2d(s, a + 900, host, 200 * 4), VG_ERR_INVALID_ARG,
                   "run past the end of its allocation");
    VG_CHECK_FAILS(vg_mem_copy_d2d(s, a + 10, a, 100 * 4), VG_ERR_INVALID_ARG, "overlap");
    VG_CHECK_FAILS(vg_mem_free(g_rt, a + 1), VG_ERR_INVALID_ARG, "not a live allocation");
    VG_CHECK(vg_mem_free(g_rt, a));
    VG_CHECK_FAILS(vg_mem_free(g_rt, a), VG_ERR_INVALID_ARG, "not a live allocation");
    VG_CHECK(vg_mem_free(g_rt, b));
    VG_CHECK(vg_stream_destroy(s));
}

/* ---- a driver without command buffers ------------------------------------------------------------ */

static void test_without_command_buffers(void **state)
{
    (void)state;
    setenv("VG_OPENCL_COMMAND_BUFFER", "0", 1);
    vg_runtime *rt = open_opencl();
    unsetenv("VG_OPENCL_COMMAND_BUFFER");
    assert_int_equal(vg_runtime_caps(rt) & VG_CAP_GRAPH, 0);
    vg_device_info info = {.struct_size = sizeof info};
    VG_CHECK(vg_runtime_device_info(rt, &info));
    assert_non_null(strstr(info.name, "command buffers: turned off"));
    for (int op = 0; op < VG_OP_COUNT_; op++) assert_false(vg_runtime_op_capturable(rt, (vg_op_id)op));
    vg_stream *s = NULL;
    VG_CHECK(vg_stream_create(rt, &s));
    VG_CHECK_FAILS(vg_graph_capture_begin(s), VG_ERR_UNSUPPORTED, "no graph support");
    float *d = dalloc(rt, 16 * 4), back[16];
    VG_CHECK(vg_op_fill(s, d, VG_DTYPE_F32, 16, 3.0)); /* ops run eagerly */
    VG_CHECK(vg_mem_copy_d2h(s, back, d, sizeof back));
    VG_CHECK(vg_stream_sync(s));
    for (int i = 0; i < 16; i++) assert_true(back[i] == 3.0f);
    VG_CHECK(vg_mem_free(rt, d));
    VG_CHECK(vg_stream_destroy(s));
    VG_CHECK(vg_runtime_close(rt));
}

/* ---- device selection ------------------------------------------------------------------------------ */

static void test_device_selection(void **state)
{
    (void)state;
    vg_device_info info = {.struct_size = sizeof info};
    VG_CHECK(vg_runtime_device_info(g_rt, &info));
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    o.backend = "opencl";
    vg_runtime *rt = NULL;
    setenv("VG_OPENCL_DEVICE", "no-such-device-anywhere", 1);
    VG_CHECK_FAILS_ALL(vg_runtime_open(&o, &rt), VG_ERR_NO_DEVICE, "VG_OPENCL_DEVICE",
                       "matches no device", "0: ");
    setenv("VG_OPENCL_PLATFORM", "no-such-platform", 1);
    VG_CHECK_FAILS_ALL(vg_runtime_open(&o, &rt), VG_ERR_NO_DEVICE, "VG_OPENCL_PLATFORM",
                       "matches no platform", "0: ");
    /* the device the test runs on, by index within its platform's list and by name */
    setenv("VG_OPENCL_PLATFORM", "0", 1);
    setenv("VG_OPENCL_DEVICE", "0", 1);
    VG_CHECK(vg_runtime_open(&o, &rt));
    VG_CHECK(vg_runtime_close(rt));
    unsetenv("VG_OPENCL_PLATFORM");
    char name[16];
    snprintf(name, sizeof name, "%.8s", info.name); /* part of a name, any case */
    for (char *c = name; *c; c++) *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
    setenv("VG_OPENCL_DEVICE", name, 1);
    VG_CHECK(vg_runtime_open(&o, &rt));
    VG_CHECK(vg_runtime_close(rt));
    unsetenv("VG_OPENCL_DEVICE");
}

/* ---- the program cache ------------------------------------------------------------------------------ */

static int g_built, g_reused;

static void count_builds(vg_log_level level, const char *message, void *user)
{
    (void)level, (void)user;
    if (strstr(message, "opencl: kernels built for")) g_built++;
    if (strstr(message, "opencl: kernels reused for")) g_reused++;
}

static void test_program_built_once(void **state)
{
    (void)state;
    vg_log_level old = vg_log_get_level();
    vg_log_set_level(VG_LOG_DEBUG);
    vg_log_set_callback(count_builds, NULL);
    vg_runtime *rt = open_opencl(); /* g_rt holds the plugin and its program: a second open reuses */
    VG_CHECK(vg_runtime_close(rt));
    vg_log_set_callback(NULL, NULL);
    vg_log_set_level(old);
    assert_int_equal(g_built, 0);
    assert_int_equal(g_reused, 1);
}

int main(void)
{
    const char *req = getenv("VG_REQUIRE_DEVICE");
    vg_runtime_options o;
    vg_runtime_options_init(&o);
    o.backend = "opencl";
    vg_status st = vg_runtime_open(&o, &g_rt);
    if (st == VG_ERR_NO_DEVICE && !(req && strcmp(req, "1") == 0)) {
        printf("SKIP: no OpenCL device: %s\n", vg_last_error());
        return VG_TEST_SKIP;
    }
    if (st != VG_OK) {
        fprintf(stderr, "test_opencl: %s\n", vg_last_error());
        return 1;
    }
    vg_device_info info = {.struct_size = sizeof info};
    vg_runtime_device_info(g_rt, &info);
    printf("opencl backend tests on %s\n", info.name);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_replays_new_inputs),
        cmocka_unit_test(test_host_transfer_invalidates_capture),
        cmocka_unit_test(test_device_addresses),
        cmocka_unit_test(test_without_command_buffers),
        cmocka_unit_test(test_device_selection),
        cmocka_unit_test(test_program_built_once),
    };
    int failed = cmocka_run_group_tests_name("opencl", tests, NULL, NULL);
    vg_runtime_close(g_rt);
    return failed ? 1 : 0;
}
