/* SPDX-License-Identifier: Apache-2.0 */
/* The opencl backend's own behaviour, beyond the conformance suites every backend runs:
 *   - a chain of dependent ops (with a memset and a device copy, which a capture records as
 *     kernels) captured once into a cl_khr_command_buffer and replayed on new input contents, on
 *     its own stream, on another stream, and twice back to back, equal bit for bit to eager runs;
 *     and the same in several threads at once, each capturing on its own stream;
 *   - each recorded launch keeps its own arguments, whatever the kernel is given later;
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
#include <pthread.h>
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
    float *x_in, *x, *w, *bias, *h, *g, *norm_w, *out;
} chain;

/* The chain's helpers run in several threads at once, where cmocka's assertions cannot: a failure
 * prints the call and its message and makes the helper return nonzero. */
#define TRY(expr)                                                                              \
    do {                                                                                       \
        vg_status st_ = (expr);                                                                \
        if (st_ != VG_OK) {                                                                    \
            fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #expr,               \
                    vg_status_name(st_), vg_last_error());                                      \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

/* x = x_in (device copy); out = 0 (memset); h = x·wᵀ + bias; g = silu(h[:, :N]) · h[:, N:];
 * out = rmsnorm(g) */
static int chain_enqueue(const chain *c, vg_stream *s)
{
    TRY(vg_mem_copy_d2d(s, c->x, c->x_in, M * K * sizeof(float)));
    TRY(vg_mem_set(s, c->out, 0, M * N * sizeof(float)));
    vg_gemm_args a = {.struct_size = sizeof a, .dtype_ab = VG_DTYPE_F32, .dtype_c = VG_DTYPE_F32,
                      .m = M, .n = 2 * N, .k = K, .a = c->x, .lda = K, .b = c->w, .ldb = K,
                      .c = c->h, .ldc = 2 * N, .bias = c->bias, .act = VG_ACT_NONE, .alpha = 1.0f};
    TRY(vg_op_gemm(s, &a));
    TRY(vg_op_silu_mul(s, VG_DTYPE_F32, c->h, 2 * N, c->g, N, M, N));
    TRY(vg_op_rmsnorm(s, VG_DTYPE_F32, c->g, c->norm_w, c->out, M, N, 1e-6f));
    return 0;
}

static int upload_random(vg_stream *s, void *dst, size_t n, unsigned seed)
{
    float *x = malloc(n * sizeof(float));
    if (!x) return 1;
    fill_random(x, n, seed);
    vg_status st = vg_mem_copy_h2d(s, dst, x, n * sizeof(float));
    if (st == VG_OK) st = vg_stream_sync(s);
    free(x);
    TRY(st);
    return 0;
}

static int chain_result(const chain *c, vg_stream *s, float *out)
{
    TRY(vg_mem_copy_d2h(s, out, c->out, M * N * sizeof(float)));
    TRY(vg_stream_sync(s));
    return 0;
}

static int chain_new(chain *c, vg_stream *s, unsigned seed)
{
    memset(c, 0, sizeof *c);
    const size_t n[8] = {M * K, M * K, 2 * N * K, 2 * N, M * 2 * N, M * N, N, M * N};
    float **bufs[8] = {&c->x_in, &c->x, &c->w, &c->bias, &c->h, &c->g, &c->norm_w, &c->out};
    for (int i = 0; i < 8; i++) TRY(vg_mem_alloc(g_rt, n[i] * sizeof(float), (void **)bufs[i]));
    return upload_random(s, c->w, n[2], seed + 1) || upload_random(s, c->bias, n[3], seed + 2) ||
           upload_random(s, c->norm_w, n[6], seed + 3) || upload_random(s, c->x_in, n[0], seed + 4);
}

static void chain_free(chain *c)
{
    float *bufs[] = {c->x_in, c->x, c->w, c->bias, c->h, c->g, c->norm_w, c->out};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) vg_mem_free(g_rt, bufs[i]);
}

/* Capture the chain on s, then for `rounds` new inputs: an eager run, and the replay (on s2 every
 * other round, twice in a row once), which must agree bit for bit; then a second executable of
 * the same graph. Nonzero on a failure (printed). */
static int chain_rounds(const chain *c, vg_stream *s, vg_stream *s2, unsigned seed, int rounds,
                        float *eager, float *replay)
{
    vg_graph *graph = NULL;
    vg_graph_exec *exec = NULL, *exec2 = NULL;
    TRY(vg_graph_capture_begin(s));
    if (chain_enqueue(c, s)) return 1;
    TRY(vg_graph_capture_end(s, &graph));
    TRY(vg_graph_instantiate(graph, &exec));
    int bad = 0;
    for (int k = 0; k < rounds && !bad; k++) {
        if (upload_random(s, c->x_in, M * K, seed + 20 + (unsigned)k) || chain_enqueue(c, s) ||
            chain_result(c, s, eager))
            return 1;
        float lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < M * N; i++) lo = fminf(lo, eager[i]), hi = fmaxf(hi, eager[i]);
        TRY(hi > lo ? VG_OK : VG_ERR_INTERNAL); /* a real result, not zeros */
        TRY(vg_mem_set(s, c->out, 0xff, M * N * 4)); /* NaN: a replay that skips shows */
        vg_stream *on = k % 2 ? s2 : s;
        TRY(vg_stream_sync(s));
        TRY(vg_graph_exec_launch(exec, on));
        if (k == 2) TRY(vg_graph_exec_launch(exec, on));
        if (chain_result(c, on, replay)) return 1;
        bad = memcmp(eager, replay, M * N * 4) != 0;
    }
    if (!bad) {
        TRY(vg_graph_instantiate(graph, &exec2));
        TRY(vg_mem_set(s, c->out, 0xff, M * N * 4));
        TRY(vg_graph_exec_launch(exec2, s));
        if (chain_result(c, s, replay)) return 1;
        bad = memcmp(eager, replay, M * N * 4) != 0;
    }
    if (bad) fprintf(stderr, "chain (seed %u): the replay differs from the eager run\n", seed);
    TRY(vg_graph_exec_destroy(exec2));
    TRY(vg_graph_exec_destroy(exec));
    TRY(vg_graph_destroy(graph));
    return bad;
}

static int chain_check(unsigned seed, int rounds)
{
    vg_stream *s = NULL, *s2 = NULL;
    TRY(vg_stream_create(g_rt, &s));
    TRY(vg_stream_create(g_rt, &s2));
    chain c = {0};
    float *eager = malloc(M * N * 4), *replay = malloc(M * N * 4);
    int bad = !eager || !replay || chain_new(&c, s, seed) ||
              chain_rounds(&c, s, s2, seed, rounds, eager, replay);
    chain_free(&c);
    free(eager), free(replay);
    vg_stream_destroy(s2);
    vg_stream_destroy(s);
    return bad;
}

static void test_chain_replays_new_inputs(void **state)
{
    (void)state;
    if (!(vg_runtime_caps(g_rt) & VG_CAP_GRAPH)) skip();
    assert_int_equal(chain_check(10, 4), 0);
}

/* Capture is thread-local and kernel objects are per stream: threads capturing at once on
 * streams of one device do not meet. */
enum { THREADS = 4 };

static void *chain_thread(void *arg)
{
    return chain_check((unsigned)(uintptr_t)arg, 3) ? arg : NULL;
}

static void test_threads_capture_at_once(void **state)
{
    (void)state;
    if (!(vg_runtime_caps(g_rt) & VG_CAP_GRAPH)) skip();
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, chain_thread, (void *)(100 * (i + 1))), 0);
    int failed = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r = NULL;
        pthread_join(t[i], &r);
        failed += r != NULL;
    }
    assert_int_equal(failed, 0);
}

/* Each recorded launch keeps the arguments it was recorded with, whatever the same kernel is
 * given afterwards (PoCL 3.1 reads a command's arguments when it is enqueued: a kernel object
 * shared with later launches would replay theirs). */
static void test_recorded_arguments_are_kept(void **state)
{
    (void)state;
    if (!(vg_runtime_caps(g_rt) & VG_CAP_GRAPH)) skip();
    vg_stream *s = NULL;
    VG_CHECK(vg_stream_create(g_rt, &s));
    enum { n = 300 };
    float *d = dalloc(g_rt, 3 * n * 4), back[3 * n];
    VG_CHECK(vg_mem_set(s, d, 0, 3 * n * 4));
    vg_graph *graph = NULL;
    vg_graph_exec *exec = NULL;
    VG_CHECK(vg_graph_capture_begin(s));
    VG_CHECK(vg_op_fill(s, d, VG_DTYPE_F32, n, 1.0));         /* one kernel, recorded twice */
    VG_CHECK(vg_op_fill(s, d + n, VG_DTYPE_F32, n, 2.0));
    VG_CHECK(vg_graph_capture_end(s, &graph));
    VG_CHECK(vg_graph_instantiate(graph, &exec));
    VG_CHECK(vg_op_fill(s, d + 2 * n, VG_DTYPE_F32, n, 3.0)); /* the same kernel, eagerly */
    for (int k = 0; k < 2; k++) {
        VG_CHECK(vg_graph_exec_launch(exec, s));
        VG_CHECK(vg_mem_copy_d2h(s, back, d, sizeof back));
        VG_CHECK(vg_stream_sync(s));
        for (int i = 0; i < 3 * n; i++) assert_true(back[i] == (float)(1 + i / n));
        VG_CHECK(vg_mem_set(s, d, 0, 2 * n * 4));
    }
    VG_CHECK(vg_graph_exec_destroy(exec));
    VG_CHECK(vg_graph_destroy(graph));
    VG_CHECK(vg_mem_free(g_rt, d));
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
    /* an index past the devices: said so, with the devices there are; vg info's probe, which
     * opens every device by index, finds the default device missing too */
    setenv("VG_OPENCL_DEVICE", "99", 1);
    VG_CHECK_FAILS_ALL(vg_runtime_open(&o, &rt), VG_ERR_NO_DEVICE, "VG_OPENCL_DEVICE=99",
                       "device 99 does not exist", "present: 0: ");
    static vg_probe_report rep;
    rep.struct_size = sizeof rep;
    assert_int_equal(vg_backend_probe("opencl", &rep), VG_ERR_NO_DEVICE);
    assert_non_null(strstr(rep.error, "the default device: opencl: VG_OPENCL_DEVICE=99"));
    assert_int_equal(rep.device_status[0], VG_OK);
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
        cmocka_unit_test(test_threads_capture_at_once),
        cmocka_unit_test(test_recorded_arguments_are_kept),
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
